/* The cache builder (cache_build.h): the knobs checked once, the entries of
 * every layer from kvci_model_cache_dims and the KV dtype, the
 * kvc_model_caches the forward reads, and the tensors of an owner's own
 * buffer. */
#include <stdio.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "cache/manager_type.h"
#include "kvcache/ops.h"
#include "model/cache_build.h"
#include "model/family.h"
#include "model/model_internal.h"

/* "KVC_BLOCK_BNNDBS (keys in lanes)" and the like, for messages. */
static const char *layout_name(kvc_block_layout l) {
    switch (l) {
    case KVC_BLOCK_BNBSND: return "KVC_BLOCK_BNBSND (token order)";
    case KVC_BLOCK_BNNBSD: return "KVC_BLOCK_BNNBSD (head-major)";
    case KVC_BLOCK_NZ: return "KVC_BLOCK_NZ (tiles)";
    case KVC_BLOCK_BNNDBS: return "KVC_BLOCK_BNNDBS (keys in lanes)";
    default: return "of an unknown kind";
    }
}

kvc_cache_knobs kvc_cache_knobs_default(void) {
    return (kvc_cache_knobs){.block_size = 16, .kv_dtype = KVC_DTYPE_F32, .kv_layout = KVC_BLOCK_BNBSND};
}

kvc_status kvci_cache_knobs_check(const kvc_model *m, const kvci_cache_knobs *k, const char *who, const char *field,
                                  const char *where) {
    const kvc_model_config *c = kvc_model_config_of(m);
    const kvc_cache_knobs *p = &k->cache;
    if (!kvc_model_kv_dtype_ok(p->kv_dtype))
        return kvci_fail(KVC_EINVAL,
                         "%s: %skv_dtype %s (%d) is not a KV cache dtype (f32, f16, bf16, i8, fp8_e4m3, fp8_e5m2, or a "
                         "registered one: kvc_model_kv_dtype_ok)",
                         who, field, kvc_dtype_name(p->kv_dtype), (int)p->kv_dtype);
    const kvc_dtype_traits *dt = kvci_dtype_traits(p->kv_dtype);
    if (dt->block > 1) { /* blocks of channels: whole blocks per head row, channels in order, no rope part */
        if (k->latent || p->kv_layout == KVC_BLOCK_BNNDBS)
            return kvci_fail(KVC_EINVAL,
                             "%s: %skv_dtype %s is stored in blocks of %d channels: %s cannot hold it (full-form "
                             "caches in KVC_BLOCK_BNBSND only)",
                             who, field, dt->name, (int)dt->block,
                             k->latent ? "MLA latent caches (a rope part)" : "KVC_BLOCK_BNNDBS (keys in lanes)");
        for (int64_t l = 0; l < c->num_layers; l++) { /* each layer's own dims (per-layer shapes) */
            const kvc_cache_dims cd = kvci_model_layer_cache_dims(c, l, false);
            for (int i = 0; i < KVCI_CACHE_KV_ENTRIES; i++)
                if (cd.dim[i] % dt->block != 0)
                    return kvci_fail(KVC_EINVAL,
                                     "%s: %skv_dtype %s is stored in blocks of %d channels: cache %s has dim %lld, not "
                                     "a multiple",
                                     who, field, dt->name, (int)dt->block, i ? "v_cache" : "k_cache",
                                     (long long)cd.dim[i]);
        }
    }
    if (k->latent && !kvci_family_get(c->family)->mla)
        return kvci_fail(KVC_EINVAL, "%s: the MLA latent form needs an MLA model; %s is %s", who, c->model_type,
                         kvc_model_family_name(c->family));
    if (k->paged && (p->block_size < 1 || p->block_size > KVC_ATTN_MAX_BLOCK_SIZE))
        return kvci_fail(KVC_EINVAL,
                         "%s: %sblock_size %lld must be in [1, %d] in paged modes (paged attention's limit)", who,
                         field, (long long)p->block_size, KVC_ATTN_MAX_BLOCK_SIZE);
    const bool lanes_ok = p->kv_layout == KVC_BLOCK_BNNDBS && k->paged && !k->latent && c->index_topk == 0;
    if (p->kv_layout != KVC_BLOCK_BNBSND && !lanes_ok)
        return kvci_fail(KVC_EINVAL,
                         "%s: %skv_layout %s is not taken %s: paged full-form caches take KVC_BLOCK_BNBSND or "
                         "KVC_BLOCK_BNNDBS, latent and contiguous caches and DeepSeek sparse attention (index_topk) "
                         "KVC_BLOCK_BNBSND only",
                         who, field, layout_name(p->kv_layout), where);
    return KVC_OK;
}

kvc_status kvci_cache_set_build(const kvc_model *m, const kvci_cache_knobs *k, kvc_model_caches *caches,
                                kvci_cache_set *out) {
    memset(out, 0, sizeof *out);
    memset(caches, 0, sizeof *caches);
    out->knobs = *k;
    out->caches = caches;
    const kvc_model_config *c = kvc_model_config_of(m);
    /* contiguous caches have no blocks: their entries carry block size 1 (only their shapes are read) */
    kvc_status st = kvci_cache_info_new(c, k->latent, k->cache.kv_dtype, k->paged ? k->cache.block_size : 1, &out->ci);
    if (st != KVC_OK) return st;
    kvc_layer_cache *layers = kvci_calloc((size_t)c->num_layers, sizeof *layers);
    if (!layers) {
        kvci_cache_set_release(out);
        return kvci_fail(KVC_ENOMEM, "cache builder: out of memory for %lld layers", (long long)c->num_layers);
    }
    *caches = (kvc_model_caches){.kind = k->paged ? KVC_MCACHE_PAGED : KVC_MCACHE_CONTIGUOUS,
                                 .latent = k->latent,
                                 .block_size = k->paged ? k->cache.block_size : 0,
                                 .layout = k->cache.kv_layout,
                                 .n_layers = (int32_t)c->num_layers,
                                 .layers = layers};
    for (int32_t i = 0; i < out->ci->n_layer_infos; i++) {
        kvc_layer_cache_info *li = &out->ci->layer_infos[i];
        kvc_layer_cache *lc = &layers[li->layer_idx];
        if (li->n_caches == 0) continue;
        const bool second = li->caches[0].is_state && lc->key[0]; /* Falcon-H1's states after its K/V */
        snprintf(second ? lc->state_key : lc->key, KVC_NAME_MAX, "%s", kvc_cache_entry_group_key(&li->caches[0]));
        if (k->cache.kv_layout == KVC_BLOCK_BNNDBS && !li->caches[0].is_state) { /* keys in lanes, values head-major */
            li->caches[0].layout = KVC_BLOCK_BNNDBS;
            li->caches[1].layout = KVC_BLOCK_BNNBSD;
        }
    }
    return KVC_OK;
}

void kvci_cache_set_release(kvci_cache_set *s) {
    kvc_model_cache_info_destroy(s->ci);
    if (s->caches) {
        kvci_free(s->caches->layers);
        memset(s->caches, 0, sizeof *s->caches);
    }
    memset(s, 0, sizeof *s);
}

kvc_tensor *kvci_cache_set_slot(kvci_cache_set *s, int32_t info, int32_t entry) {
    kvc_layer_cache *lc = &s->caches->layers[s->ci->layer_infos[info].layer_idx];
    kvc_tensor *kv[KVCI_CACHE_KV_ENTRIES] = {&lc->k, &lc->v}, *scales[2] = {&lc->k_scales, &lc->v_scales};
    const kvc_cache_entry *e = &s->ci->layer_infos[info].caches[entry];
    if (e->is_state) return kvci_layer_state_slot(lc, entry); /* all states */
    if (strcmp(e->name, KVCI_INDEX_ENTRY) == 0) return &lc->index_k;
    return entry < KVCI_CACHE_KV_ENTRIES ? kv[entry] : scales[entry - KVCI_CACHE_KV_ENTRIES];
}

/* user: the kvc_tensor slot of one entry */
static void record_tensor(void *user, const kvc_tensor *t) { *(kvc_tensor *)user = *t; }

void kvci_cache_set_wire_setters(kvci_cache_set *s) {
    for (int32_t i = 0; i < s->ci->n_layer_infos; i++)
        for (int32_t c = 0; c < s->ci->layer_infos[i].n_caches; c++) {
            s->ci->layer_infos[i].caches[c].tensor_setter = record_tensor;
            s->ci->layer_infos[i].caches[c].setter_user = kvci_cache_set_slot(s, i, c);
        }
}

/* Bytes of one entry per cache slot: its heads' rows (the cache manager's row bytes, through the dtype table). */
static bool entry_slot_bytes(const kvc_cache_entry *e, int64_t *out) {
    return kvci_entry_row_bytes(e, out) && kvci_mul64(*out, e->num_head, out);
}

bool kvci_cache_set_bytes(const kvci_cache_set *s, int64_t slots, int64_t *out) {
    int64_t per_slot = 0;
    for (int32_t i = 0; i < s->ci->n_layer_infos; i++)
        for (int32_t c = 0; c < s->ci->layer_infos[i].n_caches; c++) {
            int64_t bytes = 0;
            if (s->ci->layer_infos[i].caches[c].is_state) continue; /* per sequence, not per slot */
            if (!entry_slot_bytes(&s->ci->layer_infos[i].caches[c], &bytes) || !kvci_add64(per_slot, bytes, &per_slot))
                return false;
        }
    return kvci_mul64(per_slot, slots, out);
}

/* The shape of entry c (of heads x dim elements per slot) over n0 x n1 slots (kvci_cache_set_carve). */
static void carve_shape(const kvci_cache_knobs *k, int32_t c, int64_t heads, int64_t dim, int64_t n0, int64_t n1,
                        kvc_tensor *t) {
    t->shape[0] = n0;
    if (c < 0) { /* indexer keys: as a latent cache */
        t->ndim = k->paged ? 4 : 3, t->shape[1] = n1, t->shape[2] = k->paged ? 1 : dim, t->shape[3] = dim;
    } else if (c >= KVCI_CACHE_KV_ENTRIES) { /* the scale entries (kvci_cache_scale_entries): one per slot */
        t->ndim = 2, t->shape[1] = n1;
    } else if (k->paged && k->cache.kv_layout == KVC_BLOCK_BNNDBS) { /* k [NB, heads, dim, bs], v [.., bs, dim] */
        t->ndim = 4, t->shape[1] = heads;
        t->shape[2] = c ? n1 : dim, t->shape[3] = c ? dim : n1;
    } else if (k->paged) {
        t->ndim = 4, t->shape[1] = n1, t->shape[2] = heads, t->shape[3] = dim;
    } else {
        t->ndim = 3, t->shape[1] = n1, t->shape[2] = heads * dim;
    }
}

void kvci_cache_set_carve(kvci_cache_set *s, void *mem, int64_t n0, int64_t n1) {
    char *cur = mem;
    for (int32_t i = 0; i < s->ci->n_layer_infos; i++)
        for (int32_t c = 0; c < s->ci->layer_infos[i].n_caches; c++) {
            const kvc_cache_entry *e = &s->ci->layer_infos[i].caches[c];
            if (e->is_state) continue; /* the owner's, a state per sequence */
            kvc_tensor *t = kvci_cache_set_slot(s, i, c);
            *t = (kvc_tensor){.data = cur, .dtype = e->dtype};
            const bool index = t == &s->caches->layers[s->ci->layer_infos[i].layer_idx].index_k;
            carve_shape(&s->knobs, index ? -1 : c, e->num_head, kvc_cache_entry_dim_numel(e), n0, n1, t);
            int64_t bytes = 0; /* mem holds kvci_cache_set_bytes(s, n0 * n1): no overflow */
            entry_slot_bytes(e, &bytes);
            cur += (size_t)(n0 * n1 * bytes);
        }
}
