/* Cache storage (KM 7): one aligned host tensor per needs_block entry,
 * the large ones on 2 MiB-aligned mappings advised for huge pages
 * (cache/page_set.h). */
#include <string.h>

#include "cache/manager_type.h"
#include "cache/page_set.h"

/* One page buffer of a shared pool: entry slot `slot` of pool pool_id,
 * viewed by the slot-th entry of each of the pool's keys. */
typedef struct shared_slot {
    int32_t pool_id, slot;
    int64_t bytes;
    void *data;
} shared_slot;

struct kvc_cache_storage {
    kvci_page_set set; /* the tensors, in entry order (a shared slot once) */
    int64_t bytes;
    shared_slot *slots; /* [n_entries] the shared pools' buffers allocated so far */
    int64_t n_slots;
};

kvc_cache_storage_params kvc_cache_storage_default_params(void) {
    return (kvc_cache_storage_params){.alignment = KVC_ALIGN_DEFAULT, .pages = KVC_STORAGE_PAGES_HUGE};
}

/* Shape of an entry's tensor for n blocks. */
static kvc_tensor entry_tensor(const kvc_cache_entry *e, int64_t n) {
    kvc_tensor t = {.dtype = e->dtype};
    t.shape[t.ndim++] = n;
    if (e->attn_type == KVC_ATTN_MAMBA) {
        for (int32_t i = 0; i < e->n_shape; i++) t.shape[t.ndim++] = e->shape[i];
        return t;
    }
    int64_t s = e->block_size / e->compress_ratio;
    bool head_major = e->layout == KVC_BLOCK_BNNBSD || e->layout == KVC_BLOCK_BNNDBS;
    t.shape[t.ndim++] = head_major ? e->num_head : s;
    if (e->layout != KVC_BLOCK_BNNDBS) t.shape[t.ndim++] = head_major ? s : e->num_head;
    /* n, s, heads and up to KVC_MAX_DIMS - 3 dims; more dims are flattened into the last one. */
    for (int32_t i = 0; i < e->n_dims; i++) {
        if (t.ndim < KVC_MAX_DIMS)
            t.shape[t.ndim++] = e->dim[i];
        else
            t.shape[KVC_MAX_DIMS - 1] *= e->dim[i];
    }
    if (e->layout == KVC_BLOCK_BNNDBS)
        t.shape[t.ndim++] = s; /* keys in lanes, one dim (cache_info.c): [n, heads, dim, s] */
    return t;
}

static kvc_status count_entries(const kvc_model_cache_info *ci, const kvc_block_plan *plan, int64_t *n_out) {
    int64_t n = 0;
    for (int32_t l = 0; l < ci->n_layer_infos; l++) {
        const kvc_layer_cache_info *layer = &ci->layer_infos[l];
        for (int32_t c = 0; c < layer->n_caches; c++) {
            const kvc_cache_entry *e = &layer->caches[c];
            if (!e->needs_block) continue;
            int64_t block_num = 0;
            kvc_status st = kvc_block_plan_block_num(plan, kvc_cache_entry_group_key(e), &block_num);
            if (st != KVC_OK)
                return kvci_fail(st, "layer %d, cache %s: %s", layer->layer_idx, e->name, kvc_last_error());
            n++;
        }
    }
    *n_out = n;
    return KVC_OK;
}

/* Entries of e's key before e (its slot in a shared pool). */
static int32_t key_slot(const kvc_model_cache_info *ci, const kvc_cache_entry *e) {
    int32_t slot = 0;
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            const kvc_cache_entry *o = &ci->layer_infos[l].caches[c];
            if (o == e) return slot;
            slot += o->needs_block && strcmp(kvc_cache_entry_group_key(o), kvc_cache_entry_group_key(e)) == 0;
        }
    return slot;
}

/* The memory of entry e's tensor of `bytes` bytes: its own, or, for a key of
 * a shared pool, the pool's page buffer of e's slot (allocated by the first
 * entry of that slot), whose pages e's must equal. */
static kvc_status entry_memory(kvc_cache_storage *s, const kvc_model_cache_info *ci, const kvc_group_plan *gp,
                               const kvc_cache_entry *e, int64_t bytes, void **data) {
    if (gp->pool_id == 0) return kvci_page_set_alloc(&s->set, (size_t)bytes, false, data);
    int32_t slot = key_slot(ci, e);
    for (int64_t i = 0; i < s->n_slots; i++) {
        const shared_slot *sl = &s->slots[i];
        if (sl->pool_id != gp->pool_id || sl->slot != slot) continue;
        if (sl->bytes != bytes)
            return kvci_fail(KVC_EINVAL, "its pages of %lld bytes are not the %lld-byte pages of slot %d of pool %d",
                             (long long)(bytes / gp->block_num), (long long)(sl->bytes / gp->block_num), slot,
                             gp->pool_id);
        *data = sl->data;
        return KVC_OK;
    }
    kvc_status st = kvci_page_set_alloc(&s->set, (size_t)bytes, false, data);
    if (st == KVC_OK) s->slots[s->n_slots++] = (shared_slot){gp->pool_id, slot, bytes, *data};
    return st;
}

kvc_status kvc_cache_storage_allocate(kvc_model_cache_info *ci, const kvc_block_plan *plan,
                                      const kvc_cache_storage_params *p, kvc_cache_storage **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_cache_storage_allocate: out must not be NULL");
    *out = NULL;
    if (plan == NULL || p == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_cache_storage_allocate: %s must not be NULL",
                         plan == NULL ? "plan" : "params");
    if (p->alignment != KVC_ALIGN_DEFAULT && p->alignment != KVC_ALIGN_2MIB)
        return kvci_fail(KVC_EINVAL, "alignment %zu must be KVC_ALIGN_DEFAULT (64) or KVC_ALIGN_2MIB", p->alignment);
    kvc_status st = kvci_page_policy_check("cache storage", p->pages, p->alignment);
    if (st == KVC_OK) st = kvc_validate_cache_info(ci, -1);
    int64_t n = 0;
    if (st == KVC_OK) st = count_entries(ci, plan, &n);
    if (st != KVC_OK) return st;
    kvc_block_plan pools = *plan;
    st = kvc_block_plan_check_pools(&pools);
    if (st != KVC_OK) return st;
    kvc_cache_storage *s = kvci_calloc(1, sizeof *s);
    if (s != NULL) s->slots = kvci_malloc((size_t)kvci_max64(n, 1) * sizeof *s->slots);
    if (s == NULL || s->slots == NULL) {
        kvc_cache_storage_destroy(s);
        return kvci_fail(KVC_ENOMEM, "cannot allocate the storage record of %lld tensors", (long long)n);
    }
    st = kvci_page_set_init(&s->set, "cache storage", p->pages, p->alignment, kvci_max64(n, 1));
    if (st != KVC_OK) {
        kvci_free(s->slots);
        kvci_free(s);
        return st;
    }
    /* Allocate everything first, hand tensors out only when all succeeded. */
    for (int32_t l = 0; l < ci->n_layer_infos && st == KVC_OK; l++) {
        kvc_layer_cache_info *layer = &ci->layer_infos[l];
        for (int32_t c = 0; c < layer->n_caches && st == KVC_OK; c++) {
            kvc_cache_entry *e = &layer->caches[c];
            if (!e->needs_block) continue;
            const kvc_group_plan *gp = NULL;
            kvci_block_plan_group(plan, kvc_cache_entry_group_key(e), &gp);
            int64_t block_num = gp->block_num;
            kvc_tensor t = entry_tensor(e, block_num);
            int64_t bytes = 0;
            if (!kvci_mul64(block_num, kvci_entry_block_bytes(e), &bytes)) { /* t is [block_num, ...] */
                st = kvci_fail(KVC_ENOMEM, "layer %d, cache %s: tensor size overflows", layer->layer_idx, e->name);
                break;
            }
            int64_t n_before = s->n_slots;
            st = entry_memory(s, ci, gp, e, bytes, &t.data);
            if (st != KVC_OK) {
                st = kvci_fail(st, "layer %d, cache %s: %s", layer->layer_idx, e->name, kvc_last_error());
                break;
            }
            if (gp->pool_id == 0 || s->n_slots > n_before) s->bytes += bytes; /* a shared slot counts once */
            memset(t.data, 0, (size_t)(bytes / block_num));                   /* block 0, the null block */
            e->tensor = t;
        }
    }
    if (st != KVC_OK) {
        for (int32_t l = 0; l < ci->n_layer_infos; l++)
            for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++)
                if (ci->layer_infos[l].caches[c].needs_block) ci->layer_infos[l].caches[c].tensor = (kvc_tensor){0};
        kvc_cache_storage_destroy(s);
        return st;
    }
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            kvc_cache_entry *e = &ci->layer_infos[l].caches[c];
            if (e->needs_block && e->tensor_setter != NULL) e->tensor_setter(e->setter_user, &e->tensor);
        }
    *out = s;
    return KVC_OK;
}

int64_t kvc_cache_storage_bytes(const kvc_cache_storage *s) { return s != NULL ? s->bytes : 0; }

kvc_status kvc_cache_storage_page_info(const kvc_cache_storage *s, kvc_storage_page_info *out) {
    if (s == NULL || out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_cache_storage_page_info: %s must not be NULL", s == NULL ? "storage" : "out");
    kvci_page_set_info(&s->set, out);
    return KVC_OK;
}

void kvc_cache_storage_destroy(kvc_cache_storage *s) {
    if (s == NULL) return;
    kvci_page_set_release(&s->set);
    kvci_free(s->slots);
    kvci_free(s);
}
