/* Cache storage (KM 7): one aligned host tensor per needs_block entry,
 * the large ones on 2 MiB-aligned mappings advised for huge pages. */
#include <string.h>

#include "base/internal.h"
#include "kvcache/cache.h"

struct kvc_cache_storage {
    int64_t n_tensors;
    void **tensors; /* [n_tensors] */
    size_t *sizes;  /* [n_tensors] bytes of each tensor */
    bool *mapped;   /* [n_tensors] on a kvci_pages_alloc mapping (else kvc_aligned_alloc) */
    int64_t bytes;
    kvc_storage_pages pages;
    int64_t mapped_bytes;  /* sum of kvci_pages_round(sizes[i]) over the mapped tensors */
    int64_t advised_bytes; /* of those, the ones whose advice the kernel accepted */
};

kvc_cache_storage_params kvc_cache_storage_default_params(void) {
    return (kvc_cache_storage_params){.alignment = KVC_ALIGN_DEFAULT, .pages = KVC_STORAGE_PAGES_HUGE};
}

/* One tensor of `bytes` for s, paged as s->pages says; recorded in s. */
static kvc_status allocate_tensor(kvc_cache_storage *s, size_t alignment, int64_t bytes, void **out) {
    bool mapped = s->pages != KVC_STORAGE_PAGES_SYSTEM && bytes >= KVC_HUGE_PAGE_MIN_BYTES, advised = false;
    kvc_status st =
        mapped ? kvci_pages_alloc((size_t)bytes, s->pages == KVC_STORAGE_PAGES_HUGE ? KVCI_PAGES_HUGE : KVCI_PAGES_BASE,
                                  &advised, out)
               : kvc_aligned_alloc(alignment, (size_t)bytes, out);
    if (st != KVC_OK) return st;
    int64_t i = s->n_tensors++;
    s->tensors[i] = *out;
    s->sizes[i] = (size_t)bytes;
    s->mapped[i] = mapped;
    s->bytes += bytes;
    if (mapped) s->mapped_bytes += (int64_t)kvci_pages_round((size_t)bytes);
    if (advised) s->advised_bytes += (int64_t)kvci_pages_round((size_t)bytes);
    return KVC_OK;
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
    bool head_major = e->layout == KVC_BLOCK_BNNBSD;
    t.shape[t.ndim++] = head_major ? e->num_head : s;
    t.shape[t.ndim++] = head_major ? s : e->num_head;
    /* n, s, heads and up to KVC_MAX_DIMS - 3 dims; more dims are flattened into the last one. */
    for (int32_t i = 0; i < e->n_dims; i++) {
        if (t.ndim < KVC_MAX_DIMS)
            t.shape[t.ndim++] = e->dim[i];
        else
            t.shape[KVC_MAX_DIMS - 1] *= e->dim[i];
    }
    return t;
}

static kvc_status count_entries(const kvc_model_cache_info *ci, const kvc_block_plan *plan, int64_t *n_out) {
    int64_t n = 0;
    for (int32_t l = 0; l < ci->n_layer_infos; l++) {
        const kvc_layer_cache_info *layer = &ci->layer_infos[l];
        for (int32_t c = 0; c < layer->n_caches; c++) {
            const kvc_cache_entry *e = &layer->caches[c];
            if (!e->needs_block) continue;
            if (e->tensor_setter == NULL)
                return kvci_fail(KVC_EINVAL, "layer %d, cache %s: no tensor_setter to receive the tensor",
                                 layer->layer_idx, e->name);
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

kvc_status kvc_cache_storage_allocate(kvc_model_cache_info *ci, const kvc_block_plan *plan,
                                      const kvc_cache_storage_params *p, kvc_cache_storage **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_cache_storage_allocate: out must not be NULL");
    *out = NULL;
    if (plan == NULL || p == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_cache_storage_allocate: %s must not be NULL",
                         plan == NULL ? "plan" : "params");
    if (p->alignment != KVC_ALIGN_DEFAULT && p->alignment != KVC_ALIGN_2MIB)
        return kvci_fail(KVC_EINVAL, "alignment %zu must be KVC_ALIGN_DEFAULT (64) or KVC_ALIGN_2MIB", p->alignment);
    if (p->pages != KVC_STORAGE_PAGES_HUGE && p->pages != KVC_STORAGE_PAGES_SYSTEM &&
        p->pages != KVC_STORAGE_PAGES_BASE)
        return kvci_fail(KVC_EINVAL, "pages %d must be KVC_STORAGE_PAGES_HUGE, _SYSTEM or _BASE", (int)p->pages);
    kvc_status st = kvc_validate_cache_info(ci, -1);
    int64_t n = 0;
    if (st == KVC_OK) st = count_entries(ci, plan, &n);
    if (st != KVC_OK) return st;
    kvc_cache_storage *s = kvci_calloc(1, sizeof *s);
    size_t slots = (size_t)kvci_max64(n, 1);
    if (s != NULL) {
        s->pages = p->pages;
        s->tensors = kvci_calloc(slots, sizeof *s->tensors);
        s->sizes = kvci_calloc(slots, sizeof *s->sizes);
        s->mapped = kvci_calloc(slots, sizeof *s->mapped);
    }
    if (s == NULL || s->tensors == NULL || s->sizes == NULL || s->mapped == NULL) {
        kvc_cache_storage_destroy(s);
        return kvci_fail(KVC_ENOMEM, "cannot allocate the storage record of %lld tensors", (long long)n);
    }
    /* Allocate everything first, hand tensors out only when all succeeded. */
    for (int32_t l = 0; l < ci->n_layer_infos && st == KVC_OK; l++) {
        kvc_layer_cache_info *layer = &ci->layer_infos[l];
        for (int32_t c = 0; c < layer->n_caches && st == KVC_OK; c++) {
            kvc_cache_entry *e = &layer->caches[c];
            if (!e->needs_block) continue;
            int64_t block_num = 0;
            kvc_block_plan_block_num(plan, kvc_cache_entry_group_key(e), &block_num);
            kvc_tensor t = entry_tensor(e, block_num);
            int64_t bytes = 0;
            if (!kvci_mul64(kvc_tensor_numel(&t), (int64_t)kvc_dtype_size(e->dtype), &bytes)) {
                st = kvci_fail(KVC_ENOMEM, "layer %d, cache %s: tensor size overflows", layer->layer_idx, e->name);
                break;
            }
            st = allocate_tensor(s, p->alignment, bytes, &t.data);
            if (st != KVC_OK) {
                st = kvci_fail(st, "layer %d, cache %s: %s", layer->layer_idx, e->name, kvc_last_error());
                break;
            }
            memset(t.data, 0, (size_t)(bytes / block_num)); /* block 0, the null block */
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
            if (e->needs_block) e->tensor_setter(e->setter_user, &e->tensor);
        }
    *out = s;
    return KVC_OK;
}

int64_t kvc_cache_storage_bytes(const kvc_cache_storage *s) { return s != NULL ? s->bytes : 0; }

kvc_status kvc_cache_storage_page_info(const kvc_cache_storage *s, kvc_storage_page_info *out) {
    if (s == NULL || out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_cache_storage_page_info: %s must not be NULL", s == NULL ? "storage" : "out");
    *out =
        (kvc_storage_page_info){.pages = s->pages, .mapped_bytes = s->mapped_bytes, .advised_bytes = s->advised_bytes};
    out->huge_bytes = kvci_pages_huge_resident(NULL, (const void *const *)s->tensors, s->sizes, s->n_tensors);
    return KVC_OK;
}

void kvc_cache_storage_destroy(kvc_cache_storage *s) {
    if (s == NULL) return;
    for (int64_t i = 0; i < s->n_tensors; i++) {
        if (s->mapped[i])
            kvci_pages_free(s->tensors[i], s->sizes[i]);
        else
            kvc_aligned_free(s->tensors[i]);
    }
    kvci_free(s->tensors);
    kvci_free(s->sizes);
    kvci_free(s->mapped);
    kvci_free(s);
}
