/* GQA attention of the dense family and GptOss (MF 2, 3.2): projections
 * with optional biases, Qwen3 per-head q/k RMSNorm before RoPE, half-split
 * RoPE (none on SmolLM3's no-rope layers), Ministral 3's query scale, sliding window / sinks, o_proj. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"

/* q [T, nq], k [T, nk], v [T, nv] = the projections of ws->xn: kvci_linear_shared's, or one GEMM
 * when fused (*fused then holds its rows [q | k | v], split by qkv_rows). */
static kvc_status project_qkv(const kvc_fwd_step *s, const kvc_layer_weights *w, float *q, float *k, float *v,
                              const float **fused) {
    kvc_model_workspace *ws = s->ws;
    *fused = NULL;
    if (!w->wqkv.data) {
        const kvc_wmat *m[3] = {&w->wq, &w->wk, &w->wv};
        const float *b[3] = {w->bq, w->bk, w->bv};
        float *y[3] = {q, k, v};
        return kvci_linear_shared(ws->xn, s->T, 3, m, b, y);
    }
    *fused = ws->fused;
    return kvci_linear(ws->xn, s->T, &w->wqkv, NULL, ws->fused);
}

/* Elements from which qkv_rows shares the tokens among the OpenMP threads (a prefill's 512 tokens x
 * 4,096 floats); a decode step's rows stay on the calling thread. */
#define QKV_PARALLEL_ELEMS (1 << 16)

/* Ministral 3's query scale at position pos, as transformers' get_llama_4_attn_scale computes it in f32:
 * 1 + beta * log(1 + floor(pos / L)). */
static float query_scale(const kvc_model_config *c, int64_t pos) {
    const float steps = floorf((float)pos / (float)c->query_scale_positions);
    return 1.0f + (float)c->query_scale_beta * logf(1.0f + steps);
}

/* Each token's q / k / v rows of layer l split from the fused projection's row (fused not NULL), then
 * its q and k heads normalised (Qwen3's q_norm / k_norm: NULL or both) and rotated (not on a no-rope
 * layer): one parallel region over the tokens, each token whole on one thread (the threads never
 * change a bit). */
static void qkv_rows(const kvc_fwd_step *s, int64_t l, const float *fused, float *q, float *k, float *v) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const bool rotate = !c->layer_nope[l];
    const int64_t T = s->T, nH = c->num_heads, nKV = c->num_kv_heads, D = c->head_dim;
    const int64_t nq = w->wq.rows, nk = w->wk.rows, nv = w->wv.rows, n = nq + nk + nv;
#pragma omp parallel for schedule(static) if (T > 16 && T * n >= QKV_PARALLEL_ELEMS)
    for (int64_t t = 0; t < T; t++) {
        if (fused) {
            const float *y = fused + t * n;
            memcpy(q + t * nq, y, (size_t)nq * sizeof(float));
            memcpy(k + t * nk, y + nq, (size_t)nk * sizeof(float));
            memcpy(v + t * nv, y + nq + nk, (size_t)nv * sizeof(float));
        }
        kvci_fwd_norm_rope_token(s, t, q + t * nH * D, nH, D, w->q_norm, rotate);
        kvci_fwd_norm_rope_token(s, t, k + t * nKV * D, nKV, D, w->k_norm, rotate);
        if (c->query_scale_beta > 0.0) { /* Ministral 3: after RoPE */
            const float f = query_scale(c, s->md->positions[t]);
            for (int64_t i = 0; i < nH * D; i++) q[t * nH * D + i] *= f;
        }
    }
}

kvc_status kvci_attn_gqa(const kvc_fwd_step *s, int64_t l) {
    const kvc_model *m = s->m;
    const kvc_model_config *c = &m->cfg;
    const kvc_layer_weights *w = &m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, nH = c->num_heads, nKV = c->num_kv_heads, D = c->head_dim;
    float *q = ws->q; /* [T, nH, D] */
    float *k = ws->k; /* [T, nKV, D] */
    float *v = ws->v; /* [T, nKV, D] */
    double t0 = kvci_sp_begin();
    const float *fused = NULL;
    KVC_TRY(project_qkv(s, w, q, k, v, &fused));
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    qkv_rows(s, l, fused, q, k, v); /* the fused rows' split is timed with the q/k norms and RoPE */
    kvci_sp_end(KVC_SP_QK_ROPE, t0), t0 = kvci_sp_begin();
    kvc_attn_call call = {.layer = l,
                          .q = q,
                          .k = k,
                          .v = v,
                          .nH = nH,
                          .nKV = nKV,
                          .D = D,
                          .Dv = D,
                          .scale = kvc_model_attn_scale(c),
                          .softcap = c->attn_logit_softcapping,
                          .window = c->layer_sliding[l] ? c->sliding_window : 0,
                          .sinks = w->sinks,
                          .out = ws->att};
    kvc_status st = kvci_attn_core(s, &call); /* times its cache write and its attention */
    t0 = kvci_sp_begin();
    if (st != KVC_OK) return st;
    st = kvci_linear(ws->att, T, &w->wo, w->bo, ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
