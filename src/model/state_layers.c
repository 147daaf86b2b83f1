/* The state caches of a model's layers (docs/runtime.md, "State layers"): how many a layer keeps per sequence,
 * their cache_info names and shapes, and which kvc_layer_cache tensor holds each. Every owner (cache_info's
 * entries, the runner's buffer, the forward's checks, tests) reads them here, whatever the layer's kind. */
#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/forward_internal.h"
#include "model/model_internal.h"

int32_t kvci_layer_states(const kvc_model_config *c, int64_t l, kvci_state_shape out[KVCI_MAX_LAYER_STATES]) {
    if (c->layer_conv[l]) { /* LFM2's short convolution: the last conv_kernel - 1 inputs of its channels */
        out[0] =
            (kvci_state_shape){.name = "conv_state", .ndim = 2, .shape = {c->conv_kernel - 1, kvci_conv_channels(c)}};
        return 1;
    }
    if (c->layer_gdn[l]) { /* Qwen3-Next's Gated DeltaNet: the last K - 1 inputs of q | k | v, and S per value head */
        const int64_t C = 2 * c->gdn_k_heads * c->gdn_k_dim + c->gdn_v_heads * c->gdn_v_dim;
        out[0] = (kvci_state_shape){.name = "conv_state", .ndim = 2, .shape = {c->gdn_conv_kernel - 1, C}};
        out[1] = (kvci_state_shape){
            .name = "recurrent_state", .ndim = 3, .shape = {c->gdn_v_heads, c->gdn_k_dim, c->gdn_v_dim}};
        return 2;
    }
    if (c->layer_mamba[l]) { /* Mamba2: the last conv_kernel - 1 xBC inputs, and the [nh, P, N] ssm state */
        const int64_t I = c->mamba_heads * c->mamba_head_dim, C = I + 2 * c->mamba_groups * c->mamba_d_state;
        out[0] = (kvci_state_shape){.name = "conv_state", .ndim = 2, .shape = {c->conv_kernel - 1, C}};
        out[1] = (kvci_state_shape){
            .name = "ssm_state", .ndim = 3, .shape = {c->mamba_heads, c->mamba_head_dim, c->mamba_d_state}};
        return 2;
    }
    if (c->layer_lightning[l]) { /* MiniMax's lightning attention: a [D, D] state per head */
        out[0] = (kvci_state_shape){.name = "kv_state", .ndim = 3, .shape = {c->num_heads, c->head_dim, c->head_dim}};
        return 1;
    }
    if (c->family == KVC_FAMILY_RWKV) { /* RWKV-4: each mixer's last input, the WKV num, den and max per channel */
        out[0] = (kvci_state_shape){.name = "shift_state", .ndim = 2, .shape = {2, c->hidden_size}};
        out[1] = (kvci_state_shape){.name = "wkv_state", .ndim = 2, .shape = {3, c->hidden_size}};
        return 2;
    }
    if (c->layer_rglru[l]) { /* RecurrentGemma's recurrent block: the conv's last conv_kernel - 1 inputs, the RG-LRU's s
                              */
        out[0] = (kvci_state_shape){.name = "conv_state", .ndim = 2, .shape = {c->conv_kernel - 1, c->lru_width}};
        out[1] = (kvci_state_shape){.name = "recurrent_state", .ndim = 1, .shape = {c->lru_width}};
        return 2;
    }
    if (c->layer_mamba1[l]) { /* Mamba-1: the last conv_kernel - 1 x inputs, and the [I, N] ssm state */
        out[0] = (kvci_state_shape){.name = "conv_state", .ndim = 2, .shape = {c->conv_kernel - 1, c->mamba_inner}};
        out[1] = (kvci_state_shape){.name = "ssm_state", .ndim = 2, .shape = {c->mamba_inner, c->mamba_d_state}};
        return 2;
    }
    return 0;
}

kvc_tensor *kvci_layer_state_slot(kvc_layer_cache *lc, int32_t i) { return i == 0 ? &lc->state : &lc->recurrent; }

int64_t kvci_layer_state_floats(const kvci_state_shape *s) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->ndim; d++) n *= s->shape[d]; /* each dim below 2^20, at most 3 dims: no overflow */
    return n;
}

bool kvci_model_layer_is_state(const kvc_model_config *c, int64_t l) {
    kvci_state_shape s[KVCI_MAX_LAYER_STATES];
    return kvci_layer_states(c, l, s) > 0;
}

int64_t kvci_model_first_state(const kvc_model_config *c) {
    for (int64_t l = 0; l < c->num_layers; l++)
        if (kvci_model_layer_is_state(c, l)) return l;
    return -1;
}

kvc_status kvci_row_state(const kvc_fwd_step *s, const kvc_layer_cache *lc, const kvc_tensor *t, int64_t l, int64_t r,
                          float **out) {
    *out = NULL;
    const kvc_model_caches *cs = s->a->caches;
    if (!cs) return KVC_OK;
    int64_t per = 1;
    for (int32_t d = 1; d < t->ndim; d++) per *= t->shape[d]; /* checked by the forward: one state's floats */
    const int64_t n = t->shape[0];
    int64_t idx = s->a->cache_rows ? s->a->cache_rows[r] : r;
    if (cs->kind == KVC_MCACHE_PAGED) {
        const char *key = lc->state_key[0] ? lc->state_key : lc->key;
        const kvc_step_key *k = kvc_step_metadata_key(s->md, key);
        if (!k || !k->block_table || k->width < 1)
            return kvci_fail(KVC_EINVAL, "forward: layer %lld (state): the step has no block table of state key \"%s\"",
                             (long long)l, key);
        idx = k->block_table[r * k->width];
    }
    if (idx < 0 || idx >= n)
        return kvci_fail(KVC_ERANGE, "forward: layer %lld (state): row %lld's state %s %lld is outside [0, %lld)",
                         (long long)l, (long long)r, cs->kind == KVC_MCACHE_PAGED ? "block" : "row", (long long)idx,
                         (long long)n);
    *out = (float *)t->data + idx * per;
    return KVC_OK;
}

kvc_status kvci_row_states(const kvc_fwd_step *s, int64_t l, int64_t r, float **conv, float **rec) {
    *conv = *rec = NULL;
    if (!s->a->caches) return KVC_OK;
    const kvc_layer_cache *lc = &s->a->caches->layers[l];
    KVC_TRY(kvci_row_state(s, lc, &lc->state, l, r, conv));
    return kvci_row_state(s, lc, &lc->recurrent, l, r, rec);
}
