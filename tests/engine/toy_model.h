/* A toy model for the engine tests that really uses its caches, so stale or
 * mis-addressed KV changes its output. Every token's K and V (TOY_D floats
 * each, a hash of token id, position, layer and k/v) are written through the
 * step's slot mapping (managed) or legacy index (self-managed); then each
 * row's logits are a hash of the exact bits of every key and value it can
 * see, read back through its block table (layer 0: FullAttention, positions
 * 0..kv_pos; optional layer 1: SlidingWindow, the last `window` positions) or
 * its legacy cache row. toy_reference_* computes the same logits densely from
 * a token history, without any cache. */
#ifndef KVC_TESTS_ENGINE_TOY_MODEL_H
#define KVC_TESTS_ENGINE_TOY_MODEL_H

#include <string.h>

#include "kvc_test_util.h"

#define TOY_D        4
#define TOY_FULL_KEY "full"
#define TOY_SWA_KEY  "swa"

typedef struct toy_model {
    int64_t vocab;
    int32_t n_layers; /* 1: full attention; 2: + a sliding-window layer */
    int64_t window;
    kvc_cache_entry entries[2][2]; /* [layer][k, v] */
    kvc_layer_cache_info layers[2];
    kvc_model_cache_info ci;
    float *cache[2][2];                /* managed: [num_blocks, bs, 1, TOY_D] per layer and k/v */
    kvc_engine_legacy_cache legacy[2]; /* self-managed: k, v of layer 0 */
    float *legacy_data[2];             /* [max_num_seqs, cache_seq_len, TOY_D] */
    int64_t legacy_shape[2][3];
    struct toy_legacy_user {
        struct toy_model *m;
        int32_t kv;
    } legacy_user[2]; /* setter user data per legacy cache */
    int64_t forward_calls;
    int64_t fail_at_call; /* > 0: that forward call returns KVC_ERANGE */
} toy_model;

static inline uint64_t toy_mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* K (kv 0) or V (kv 1) channel d of a token: a 24-bit fraction (exact in f32). */
static inline float toy_embed(int32_t id, int64_t pos, int32_t layer, int32_t kv, int32_t d) {
    uint64_t h = toy_mix(toy_mix(toy_mix((uint64_t)id, (uint64_t)pos), (uint64_t)(layer * 2 + kv)), (uint64_t)d);
    return (float)(h >> 40) * 0x1.0p-24f;
}

static inline uint64_t toy_absorb(uint64_t h, const float *kv /* [TOY_D] */) {
    for (int32_t d = 0; d < TOY_D; d++) {
        uint32_t bits;
        memcpy(&bits, &kv[d], sizeof bits);
        h = toy_mix(h, bits);
    }
    return h;
}

static inline void toy_logits(uint64_t h, int64_t vocab, float *out /* [vocab] */) {
    for (int64_t v = 0; v < vocab; v++) out[v] = (float)(toy_mix(h, (uint64_t)v) >> 40) * 0x1.0p-24f * 8.0f;
}

static inline int64_t toy_window_start(const toy_model *m, int32_t layer, int64_t last) {
    return layer == 0 || last - m->window + 1 < 0 ? 0 : last - m->window + 1;
}

static inline void toy_setter(void *user, const kvc_tensor *t) { *(float **)user = (float *)t->data; }

static inline kvc_cache_entry toy_entry(toy_model *m, int32_t layer, int32_t kv, int64_t block_size) {
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "%s", kv == 0 ? "k_cache" : "v_cache");
    e.attn_type = layer == 0 ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW;
    snprintf(e.manager_key, sizeof e.manager_key, "%s", layer == 0 ? TOY_FULL_KEY : TOY_SWA_KEY);
    e.num_head = 1;
    e.n_dims = 1;
    e.dim[0] = TOY_D;
    e.dtype = KVC_DTYPE_F32;
    e.block_size = block_size;
    e.sliding_window = layer == 0 ? 0 : m->window;
    e.tensor_setter = toy_setter;
    e.setter_user = &m->cache[layer][kv];
    return e;
}

/* A managed toy (cache info with one or two layers). m must not move. */
static inline void toy_init_managed(toy_model *m, int64_t vocab, int32_t n_layers, int64_t block_size, int64_t window) {
    memset(m, 0, sizeof *m);
    m->vocab = vocab;
    m->n_layers = n_layers;
    m->window = window;
    for (int32_t l = 0; l < n_layers; l++) {
        for (int32_t kv = 0; kv < 2; kv++) m->entries[l][kv] = toy_entry(m, l, kv, block_size);
        m->layers[l] = (kvc_layer_cache_info){.layer_idx = l, .n_caches = 2, .caches = m->entries[l]};
    }
    m->ci = (kvc_model_cache_info){.num_layers = n_layers, .n_layer_infos = n_layers, .layer_infos = m->layers};
}

static inline void toy_legacy_setter(void *user, const kvc_tensor *t) {
    const struct toy_legacy_user *u = user;
    u->m->legacy_data[u->kv] = (float *)t->data;
    for (int32_t i = 0; i < 3; i++) u->m->legacy_shape[u->kv][i] = t->shape[i];
}

/* A self-managed toy (one full-attention layer, legacy caches). */
static inline void toy_init_self_managed(toy_model *m, int64_t vocab) {
    memset(m, 0, sizeof *m);
    m->vocab = vocab;
    m->n_layers = 1;
    for (int32_t kv = 0; kv < 2; kv++) {
        kvc_engine_legacy_cache *c = &m->legacy[kv];
        snprintf(c->name, sizeof c->name, "%s", kv == 0 ? "k_cache" : "v_cache");
        c->dtype = KVC_DTYPE_F32;
        c->n_dims = 1;
        c->unit[0] = TOY_D;
        c->tensor_setter = toy_legacy_setter;
        m->legacy_user[kv].m = m;
        m->legacy_user[kv].kv = kv;
        c->setter_user = &m->legacy_user[kv];
    }
}

static inline void toy_write(float *dst /* [TOY_D] */, int32_t id, int64_t pos, int32_t layer, int32_t kv) {
    for (int32_t d = 0; d < TOY_D; d++) dst[d] = toy_embed(id, pos, layer, kv, d);
}

static inline kvc_status toy_forward_managed(toy_model *m, const int32_t *ids, const kvc_engine_batch *batch,
                                             float *logits) {
    const kvc_step_metadata *md = batch->md;
    const kvc_step_key *keys[2];
    for (int32_t l = 0; l < m->n_layers; l++) {
        keys[l] = kvc_step_metadata_key(md, l == 0 ? TOY_FULL_KEY : TOY_SWA_KEY);
        if (keys[l] == NULL || keys[l]->slot_mapping == NULL) return KVC_EINVAL;
        for (int64_t t = 0; t < md->n_tokens; t++)
            for (int32_t kv = 0; kv < 2; kv++)
                toy_write(m->cache[l][kv] + keys[l]->slot_mapping[t] * TOY_D, ids[t], md->positions[t], l, kv);
    }
    for (int64_t b = 0; b < md->n_rows; b++) {
        uint64_t h = 0x1234;
        for (int32_t l = 0; l < m->n_layers; l++) {
            const kvc_step_key *k = keys[l];
            for (int64_t p = toy_window_start(m, l, md->kv_pos[b]); p <= md->kv_pos[b]; p++) {
                int64_t slot =
                    (int64_t)k->block_table[b * k->width + p / k->block_size] * k->block_size + p % k->block_size;
                for (int32_t kv = 0; kv < 2; kv++) h = toy_absorb(h, m->cache[l][kv] + slot * TOY_D);
            }
        }
        toy_logits(h, m->vocab, logits + b * m->vocab);
    }
    return KVC_OK;
}

static inline kvc_status toy_forward_legacy(toy_model *m, const int32_t *ids, const kvc_engine_batch *batch,
                                            float *logits) {
    const kvc_step_metadata *md = batch->md;
    if (md->n_keys != 0 || batch->legacy_index == NULL || batch->cache_rows == NULL) return KVC_EINVAL;
    for (int64_t t = 0; t < md->n_tokens; t++)
        for (int32_t kv = 0; kv < 2; kv++)
            toy_write(m->legacy_data[kv] + batch->legacy_index[t] * TOY_D, ids[t], md->positions[t], 0, kv);
    for (int64_t b = 0; b < md->n_rows; b++) {
        uint64_t h = 0x1234;
        for (int64_t p = 0; p <= md->kv_pos[b]; p++) {
            int64_t at = batch->cache_rows[b] * batch->cache_seq_len + p;
            for (int32_t kv = 0; kv < 2; kv++) h = toy_absorb(h, m->legacy_data[kv] + at * TOY_D);
        }
        toy_logits(h, m->vocab, logits + b * m->vocab);
    }
    return KVC_OK;
}

static inline kvc_status toy_forward(void *self, const int32_t *ids, const kvc_engine_batch *batch, float *logits) {
    toy_model *m = self;
    m->forward_calls++;
    if (m->fail_at_call == m->forward_calls) return KVC_ERANGE; /* an injected failure */
    return batch->md->n_keys > 0 ? toy_forward_managed(m, ids, batch, logits)
                                 : toy_forward_legacy(m, ids, batch, logits);
}

static inline kvc_engine_model toy_engine_model(toy_model *m, bool self_managed) {
    kvc_engine_model em;
    memset(&em, 0, sizeof em);
    em.self = m;
    em.vocab_size = m->vocab;
    em.forward = toy_forward;
    if (self_managed) {
        em.legacy_caches = m->legacy;
        em.n_legacy_caches = 2;
    } else {
        em.cache_info = &m->ci;
    }
    return em;
}

/* Dense reference: the logits after history tokens[0..n) (the step that feeds tokens[n-1]). */
static inline void toy_reference_logits(const toy_model *m, const int32_t *tokens, int64_t n, float *logits) {
    uint64_t h = 0x1234;
    float kv_vals[TOY_D];
    for (int32_t l = 0; l < m->n_layers; l++) {
        for (int64_t p = toy_window_start(m, l, n - 1); p < n; p++) {
            for (int32_t kv = 0; kv < 2; kv++) {
                toy_write(kv_vals, tokens[p], p, l, kv);
                h = toy_absorb(h, kv_vals);
            }
        }
    }
    toy_logits(h, m->vocab, logits);
}

/* Reference generation with the engine's rules (EOS, max_new_tokens,
 * max_model_len) and its sampler; returns the number of generated tokens. */
static inline int64_t toy_reference_generate(const toy_model *m, kvc_sampler *s, const kvc_engine_request *r,
                                             int64_t max_model_len, uint64_t engine_seed, int32_t *hist /* [mml+1] */,
                                             float *logits /* [vocab] */, int32_t *out /* [max_new] */) {
    memcpy(hist, r->prompt, (size_t)r->n_prompt * sizeof *hist);
    int64_t n = r->n_prompt, g = 0;
    kvc_sampling_params sp = r->sampling;
    sp.seed = r->sampling.seed ^ (engine_seed * 0x9e3779b97f4a7c15ULL);
    int32_t stops[KVC_SAMPLING_MAX_STOP_IDS + 1]; /* min_tokens holds back the request's eos_id too */
    if (sp.n_min_tokens_ids > 0) memcpy(stops, sp.min_tokens_ids, (size_t)sp.n_min_tokens_ids * sizeof *stops);
    if (r->eos_id >= 0 && sp.min_tokens > 0) stops[sp.n_min_tokens_ids++] = r->eos_id;
    sp.min_tokens_ids = sp.n_min_tokens_ids > 0 ? stops : NULL;
    for (;;) {
        toy_reference_logits(m, hist, n, logits);
        int32_t tok = -1;
        assert_int_equal(kvc_sampler_sample_tokens(s, logits, &sp, hist, r->n_prompt, n, &tok), KVC_OK);
        hist[n++] = tok;
        out[g++] = tok;
        if ((r->eos_id >= 0 && tok == r->eos_id) || g >= r->max_new_tokens || n - 1 >= max_model_len) return g;
    }
}

#endif /* KVC_TESTS_ENGINE_TOY_MODEL_H */
