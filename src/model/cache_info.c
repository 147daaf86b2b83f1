/* The cache description a model asks the managers for (KM 2): per attention layer a k/v pair (full form) or nope/rope
 * (MLA latent, one head), and for int8 / fp8 caches their per-slot scales, grouped by attention type, sliding layers
 * with their window, chunked local ones with their chunk; per state layer its states (LFM2's conv, Mamba2's conv and
 * ssm). */
#include <stdio.h>
#include <stdlib.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "model/cache_build.h"
#include "model/family.h"
#include "model/model_internal.h"

static kvc_cache_entry entry(const char *name, const kvc_model_config *c, int64_t l, int64_t heads, int64_t dim,
                             kvc_dtype dt, int64_t block_size) {
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "%s", name);
    e.num_head = heads;
    e.n_dims = 1;
    e.dim[0] = dim;
    e.dtype = dt;
    e.block_size = block_size;
    if (c->layer_sliding[l]) {
        e.attn_type = KVC_ATTN_SLIDING_WINDOW;
        e.sliding_window = c->sliding_window;
    } else if (c->layer_chunked[l]) { /* Llama 4's chunked layers: the blocks before the query's chunk released */
        e.attn_type = KVC_ATTN_CHUNKED_LOCAL;
        e.attention_chunk_size = c->attention_chunk_size;
    }
    return e;
}

/* A state layer's state s (kvci_layer_states: LFM2's conv state, Mamba2's conv and ssm states): one block per
 * sequence of f32 whatever the KV dtype, in the manager's state group (Mamba: allocated at admission, freed with
 * the request). */
static kvc_cache_entry state_entry(const kvci_state_shape *s) {
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "%s", s->name);
    e.attn_type = KVC_ATTN_MAMBA;
    e.is_state = true;
    e.n_shape = s->ndim;
    for (int32_t d = 0; d < s->ndim; d++) e.shape[d] = s->shape[d];
    e.dtype = KVC_DTYPE_F32;
    e.block_size = 1;
    return e;
}

bool kvci_layer_index_keys(const kvc_model_config *c, int64_t l) {
    return c->index_topk > 0 && !c->layer_index_shared[l];
}

int32_t kvci_cache_scale_entries(kvc_dtype kv_dtype, bool latent) {
    const kvc_dtype_traits *t = kvci_dtype_traits(kv_dtype);
    return t != NULL && t->scales == KVC_SCALES_PER_TOKEN ? (latent ? 1 : 2) : 0;
}

/* Fills info li of layer l: its states (from_states, n_states of them) or its K/V entries (and scales). */
static kvc_status fill_layer(const kvc_model_config *c, int64_t l, bool from_states, int32_t n_states,
                             const kvci_state_shape *states, bool latent, kvc_dtype kv_dtype, int64_t block_size,
                             kvc_layer_cache_info *li) {
    const kvc_cache_dims cd = kvci_model_layer_cache_dims(c, l, latent);
    const char *const names[2] = {latent ? "nope_cache" : "k_cache", latent ? "rope_cache" : "v_cache"};
    const int32_t n_scales = kvci_cache_scale_entries(kv_dtype, latent), kv = KVCI_CACHE_KV_ENTRIES;
    const bool none = c->layer_no_mixer[l] || kvci_model_kv_source(c, l) != l; /* an MLP, or KV shared (Gemma 4) */
    const bool index = kvci_layer_index_keys(c, l) && !from_states; /* DeepSeek sparse attention's keys, last */
    const int32_t n = none ? 0 : from_states ? n_states : kv + n_scales + index;
    li->layer_idx = (int32_t)l;
    li->caches = kvci_calloc((size_t)kvci_max64(n, 1), sizeof *li->caches);
    if (!li->caches) return kvci_fail(KVC_ENOMEM, "model cache info: out of memory");
    li->n_caches = n;
    if (n == 0) return KVC_OK;
    if (from_states) {
        for (int32_t i = 0; i < n_states; i++) li->caches[i] = state_entry(&states[i]);
        return KVC_OK;
    }
    const char *const scale_names[2] = {n_scales == 1 ? "scale" : "k_scale", "v_scale"};
    for (int i = 0; i < n_scales; i++)
        li->caches[kv + i] = entry(scale_names[i], c, l, 1, 1, KVC_DTYPE_F32, block_size);
    for (int i = 0; i < kv; i++) li->caches[i] = entry(names[i], c, l, cd.heads[i], cd.dim[i], kv_dtype, block_size);
    if (index) li->caches[n - 1] = entry(KVCI_INDEX_ENTRY, c, l, 1, c->index_head_dim, KVC_DTYPE_F32, block_size);
    return KVC_OK;
}

kvc_status kvci_cache_info_new(const kvc_model_config *c, bool latent, kvc_dtype kv_dtype, int64_t block_size,
                               kvc_model_cache_info **out) {
    *out = NULL;
    kvc_model_cache_info *ci = kvci_calloc(1, sizeof *ci);
    /* a layer keeping K/V and states (Falcon-H1) has two infos of its layer_idx, its attention's first */
    if (ci) ci->layer_infos = kvci_calloc((size_t)(2 * c->num_layers), sizeof *ci->layer_infos);
    if (!ci || !ci->layer_infos) {
        kvci_free(ci);
        return kvci_fail(KVC_ENOMEM, "model cache info: out of memory");
    }
    ci->is_mla_backend = latent;
    for (int64_t l = 0; l < c->num_layers; l++) {
        kvci_state_shape states[KVCI_MAX_LAYER_STATES];
        const int32_t n_states = kvci_layer_states(c, l, states);
        const bool both = n_states > 0 && (c->mamba_parallel_attn || c->layer_shared_block[l]); /* Zamba2's hybrid */
        for (int part = both ? 0 : 1; part < 2; part++) {
            kvc_layer_cache_info *li = &ci->layer_infos[ci->n_layer_infos++];
            const kvc_status st =
                fill_layer(c, l, part == 1 && n_states > 0, n_states, states, latent, kv_dtype, block_size, li);
            if (st != KVC_OK) {
                kvc_model_cache_info_destroy(ci);
                return st;
            }
        }
    }
    ci->num_layers = ci->n_layer_infos; /* as the planner's: the infos (Falcon-H1's layers twice) */
    *out = ci;
    return KVC_OK;
}

kvc_status kvc_model_cache_info_build(const kvc_model *m, bool latent, kvc_dtype kv_dtype, int64_t block_size,
                                      kvc_model_cache_info **out) {
    if (!m || !out) return kvci_fail(KVC_EINVAL, "model_cache_info_build: model and out must not be NULL");
    *out = NULL;
    const kvci_cache_knobs k = {
        .cache = {.block_size = block_size, .kv_dtype = kv_dtype, .kv_layout = KVC_BLOCK_BNBSND},
        .paged = true,
        .latent = latent};
    kvc_status st = kvci_cache_knobs_check(m, &k, "model_cache_info_build", "", "");
    return st != KVC_OK ? st : kvci_cache_info_new(&m->cfg, latent, kv_dtype, block_size, out);
}
