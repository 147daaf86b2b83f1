/* JetMoE's mixture of attention heads (JetMoeAttention with JetMoeMoA): a router [E, H] picks each token's K
 * experts (the k largest logits, their softmax); expert e's query projection [nKV D, H] gives slot j's queries of
 * nKV heads, the keys and values [nKV, D] are shared (kv_proj), RoPE on both. transformers lays the heads out
 * slot-major (head j nKV + g reads KV head g); here head g K + j, the GQA order of kvci_attn_core, holds the same
 * query. Slot j's output [nKV D] (its heads g K + j) passes its expert's output projection [H, nKV D], times the
 * slot's weight, summed over the slots in expert order, plus the bias bo [H]. */
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"

/* Expert e's slots (token t, slot j with sel[t K + j] == e) into ws->tok (t K + j) and ws->tokw (their weights),
 * each slot's input row into ws->xg: the token's row of x [T, W] (map), or its slot's heads of att [T, nKV K, D]
 * (reduce: width nKV D); returns their count. */
static int64_t gather_slots(kvc_model_workspace *ws, const float *x, int64_t T, int64_t K, int64_t W, int32_t e,
                            bool heads, int64_t nKV, int64_t D) {
    int64_t n = 0;
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < K; j++) {
            if (ws->sel[t * K + j] != e) continue;
            ws->tok[n] = (int32_t)(t * K + j), ws->tokw[n] = ws->selw[t * K + j];
            for (int64_t g = 0; heads && g < nKV; g++)
                memcpy(ws->xg + n * W + g * D, x + ((t * nKV + g) * K + j) * D, (size_t)D * sizeof(float));
            if (!heads) memcpy(ws->xg + n * W, x + t * W, (size_t)W * sizeof(float));
            n++;
        }
    return n;
}

kvc_status kvci_attn_moa(const kvc_fwd_step *s, int64_t l) {
    const kvc_model *m = s->m;
    const kvc_model_config *c = &m->cfg;
    const kvc_layer_weights *w = &m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, E = c->n_routed_experts, K = c->experts_per_tok;
    const int64_t nKV = c->num_kv_heads, nH = nKV * K, D = c->head_dim, Q = nKV * D;
    float *q = ws->q, *k = ws->k, *v = ws->v;                          /* [T, nH, D], [T, nKV, D], [T, nKV, D] */
    KVC_TRY(kvci_linear(ws->xn, T, &w->moa_router, NULL, ws->router)); /* [T, E] */
    for (int64_t t = 0; t < T; t++) kvci_top_k_softmax(ws->router + t * E, E, K, ws->sel + t * K, ws->selw + t * K);
    for (int32_t e = 0; e < (int32_t)E; e++) { /* the queries: slot (t, j)'s heads g K + j */
        const int64_t n = gather_slots(ws, ws->xn, T, K, H, e, false, nKV, D);
        if (n == 0) continue;
        const kvc_wmat in = kvci_wmat_at(&w->moa_in, e);
        KVC_TRY(kvci_linear(ws->xg, n, &in, NULL, ws->yg)); /* [n, nKV D] */
        for (int64_t i = 0; i < n; i++) {
            const int64_t t = ws->tok[i] / K, j = ws->tok[i] % K;
            for (int64_t g = 0; g < nKV; g++)
                memcpy(q + ((t * nKV + g) * K + j) * D, ws->yg + i * Q + g * D, (size_t)D * sizeof(float));
        }
    }
    const kvc_wmat *kv[2] = {&w->wk, &w->wv};
    const float *no_bias[2] = {NULL, NULL};
    float *kv_out[2] = {k, v};
    KVC_TRY(kvci_linear_shared(ws->xn, T, 2, kv, no_bias, kv_out));
    for (int64_t t = 0; t < T; t++) {
        kvci_fwd_norm_rope_token(s, t, q + t * nH * D, nH, D, NULL, NULL, true);
        kvci_fwd_norm_rope_token(s, t, k + t * Q, nKV, D, NULL, NULL, true);
    }
    kvc_attn_call call = {.layer = l,
                          .q = q,
                          .k = k,
                          .v = v,
                          .nH = nH,
                          .nKV = nKV,
                          .D = D,
                          .Dv = D,
                          .scale = kvc_model_attn_scale(c),
                          .out = ws->att};
    KVC_TRY(kvci_attn_core(s, &call));
    memset(ws->acc, 0, (size_t)(T * H) * sizeof(float));
    for (int32_t e = 0; e < (int32_t)E; e++) { /* each slot's heads through its expert's output projection */
        const int64_t n = gather_slots(ws, ws->att, T, K, Q, e, true, nKV, D);
        if (n == 0) continue;
        const kvc_wmat out = kvci_wmat_at(&w->moa_out, e);
        KVC_TRY(kvci_linear(ws->xg, n, &out, NULL, ws->yg)); /* [n, H] */
        for (int64_t i = 0; i < n; i++) {
            float *dst = ws->acc + (ws->tok[i] / K) * H;
            for (int64_t j = 0; j < H; j++) dst[j] += ws->tokw[i] * ws->yg[i * H + j];
        }
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < H; j++) ws->proj[t * H + j] = ws->acc[t * H + j] + w->bo[j];
    return KVC_OK;
}
