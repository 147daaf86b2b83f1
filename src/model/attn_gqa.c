/* GQA attention of the dense family and GptOss (MF 2, 3.2): projections
 * with optional biases, Qwen3 per-head q/k RMSNorm before RoPE, half-split
 * RoPE, sliding window / sinks, o_proj. */
#include "base/internal.h"
#include "model/forward_internal.h"

kvc_status kvci_attn_gqa(const kvc_fwd_step *s, int64_t l) {
    const kvc_model *m = s->m;
    const kvc_model_config *c = &m->cfg;
    const kvc_layer_weights *w = &m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, nH = c->num_heads, nKV = c->num_kv_heads, D = c->head_dim;
    float *q = ws->q; /* [T, nH, D] */
    float *k = ws->k; /* [T, nKV, D] */
    float *v = ws->v; /* [T, nKV, D] */
    KVC_TRY(kvci_linear(ws->xn, T, &w->wq, w->bq, q));
    KVC_TRY(kvci_linear(ws->xn, T, &w->wk, w->bk, k));
    KVC_TRY(kvci_linear(ws->xn, T, &w->wv, w->bv, v));
    const float eps = (float)c->rms_norm_eps;
    if (w->q_norm) {
        kvc_rmsnorm_rows_f32(q, T * nH, D, D, w->q_norm, eps);
        kvc_rmsnorm_rows_f32(k, T * nKV, D, D, w->k_norm, eps);
    }
    kvci_fwd_rope(s, q, nH, D, nH * D, false);
    kvci_fwd_rope(s, k, nKV, D, nKV * D, false);
    kvc_attn_call call = {.layer = l,
                          .q = q,
                          .k = k,
                          .v = v,
                          .nH = nH,
                          .nKV = nKV,
                          .D = D,
                          .Dv = D,
                          .scale = kvc_model_attn_scale(c),
                          .window = c->layer_sliding[l] ? c->sliding_window : 0,
                          .sinks = w->sinks,
                          .out = ws->att};
    kvc_status st = kvci_attn_core(s, &call);
    if (st != KVC_OK) return st;
    return kvci_linear(ws->att, T, &w->wo, w->bo, ws->proj);
}
