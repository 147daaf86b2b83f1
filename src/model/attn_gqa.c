/* GQA attention of the dense family and GptOss (MF 2, 3.2): projections
 * with optional biases, Qwen3 per-head q/k RMSNorm before RoPE, half-split
 * RoPE (none on SmolLM3's and Llama 4's no-rope layers), Llama 4's L2 q/k norms after RoPE, OLMo's clip_qkv,
 * Ministral 3's, Llama 4's and Beam's query scales, sliding window / chunked local attention / sinks, Qwen3-Next's
 * output gate (AFMoE's from a projection of its own), LFM3's gate per head, o_proj.
 */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"
#include "ops/write_internal.h"

/* q [T, nq], k [T, nk], v [T, nv] = the projections of ws->xn: kvci_linear_shared's, or one GEMM
 * when fused (*fused then holds its rows [q | k | v], split by qkv_rows). */
static kvc_status project_qkv(const kvc_fwd_step *s, const kvc_layer_weights *w, float *q, float *k, float *v,
                              const float **fused) {
    kvc_model_workspace *ws = s->ws;
    *fused = NULL;
    if (!w->wqkv.data) {
        const kvc_wmat *m[3] = {&w->wq, &w->wk, &w->wv};
        const float *b[3] = {w->bq, w->bk, w->bv};
        float *y[3] = {s->m->cfg.attn_output_gate ? ws->fused : q, k, v}; /* gated: split by qkv_rows */
        return kvci_linear_shared(ws->xn, s->T, 3, m, b, y);
    }
    *fused = ws->fused;
    return kvci_linear(ws->xn, s->T, &w->wqkv, NULL, ws->fused);
}

/* A token's queries from its q projection's row src: as they are, or gated (Qwen3-Next: each of the n heads' query
 * [D] then its gate [D]) split into q [n, D] and gate [n, D]. */
static void take_q(const float *src, int64_t n, int64_t D, bool gated, float *q, float *gate) {
    if (!gated) {
        memcpy(q, src, (size_t)(n * D) * sizeof(float));
        return;
    }
    for (int64_t h = 0; h < n; h++) {
        memcpy(q + h * D, src + 2 * h * D, (size_t)D * sizeof(float));
        memcpy(gate + h * D, src + (2 * h + 1) * D, (size_t)D * sizeof(float));
    }
}

/* An output gate's factor: sigmoid(g), or with attn_gate_softplus (Laguna) softplus(g) as torch's (g above 20: g). */
static float gate_of(const kvc_model_config *c, float g) {
    if (c->attn_gate_softplus) return g > 20.0f ? g : log1pf(expf(g));
    return 1.0f / (1.0f + expf(-g));
}

/* Elements from which qkv_rows shares the tokens among the OpenMP threads (a prefill's 512 tokens x
 * 4,096 floats); a decode step's rows stay on the calling thread. */
#define QKV_PARALLEL_ELEMS (1 << 16)

/* Ministral 3's query scale at position pos, as transformers' get_llama_4_attn_scale computes it in f32:
 * 1 + beta * log(1 + floor(pos / L)); Llama 4's own (query_scale_nope), as its attention computes it in f32:
 * log1p(floor((pos + 1) / L)) * beta + 1. */
static float query_scale(const kvc_model_config *c, int64_t pos) {
    if (c->query_scale_nope)
        return log1pf(floorf(((float)pos + 1.0f) / (float)c->query_scale_positions)) * (float)c->query_scale_beta +
               1.0f;
    const float steps = floorf((float)pos / (float)c->query_scale_positions);
    return 1.0f + (float)c->query_scale_beta * logf(1.0f + steps);
}

/* Llama 4's L2 norm of each of n_heads heads (stride floats apart) of a token's q or k: x / sqrt(mean(x^2) +
 * eps), no weight, after RoPE. */
static void l2_heads(float *row, int64_t n_heads, int64_t stride, int64_t D, float eps) {
    for (int64_t h = 0; h < n_heads; h++) {
        float *x = row + h * stride;
        const double inv = kvci_rms_inv(x, D, eps);
        for (int64_t i = 0; i < D; i++) x[i] = kvci_rms_scaled(x[i], inv, 1.0f);
    }
}

/* x[n] clamped to [-clip, clip] as torch's clamp_ (NaN stays NaN). */
static void clamp_row(float *x, int64_t n, float clip) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] < -clip ? -clip : x[i] > clip ? clip : x[i];
}

/* Each token's q / k / v rows of layer l split from the fused projection's row (fused not NULL), with
 * `first` v clamped to +-clip_qkv (OLMo, OLMoE; 0: none), then with `norm` its q and k heads normalised (Qwen3's
 * q_norm / k_norm: NULL or both; HunYuan's after RoPE instead), and with `finish` q and k clamped to +-clip_qkv (after
 * their norms, as OLMoE; OLMo has none), rotated (not on a no-rope layer; Llama 4's q and k then L2-normalised) and
 * its queries scaled by
 * position (Ministral 3; Llama 4's no-rope layers): one parallel region over the tokens, each token whole on one
 * thread (the threads never change a bit). */
static void qkv_rows(const kvc_fwd_step *s, int64_t l, const float *fused, float *q, float *k, float *v, bool first,
                     bool norm, bool finish) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const bool rotate = finish && !c->layer_nope[l], clip = c->clip_qkv > 0.0;
    const kvci_attn_shape sh = kvci_layer_shape(c, l); /* the layer's own heads and dims */
    const int64_t T = s->T, nH = sh.nH, nKV = sh.nKV, D = sh.D;
    const bool gated = c->attn_output_gate; /* the q projection [T, 2 nq] in ws->fused when not fused */
    const int64_t gq = gated ? 2 : 1, nq = w->wq.rows / gq, nk = w->wk.rows, nv = w->wv.rows, n = gq * nq + nk + nv;
#pragma omp parallel for schedule(static) if (T > 16 && T * n >= QKV_PARALLEL_ELEMS)
    for (int64_t t = 0; t < T; t++) {
        if (fused) {
            const float *y = fused + t * n;
            take_q(y, nq / D, D, gated, q + t * nq, s->ws->gate + t * nq);
            memcpy(k + t * nk, y + gq * nq, (size_t)nk * sizeof(float));
            memcpy(v + t * nv, y + gq * nq + nk, (size_t)nv * sizeof(float));
        } else if (gated && first) {
            take_q(s->ws->fused + t * 2 * nq, nq / D, D, true, q + t * nq, s->ws->gate + t * nq);
        }
        float *qt = q + t * nq, *kt = k + t * nk; /* [nH, D], [nKV, D] */
        if (first && clip) clamp_row(v + t * nv, nv, (float)c->clip_qkv);
        if (finish && clip) { /* normalised, clamped, then rotated below */
            kvci_fwd_norm_rope_token(s, t, qt, nH, D, norm ? w->q_norm : NULL, w->q_norm_b, false);
            kvci_fwd_norm_rope_token(s, t, kt, nKV, D, norm ? w->k_norm : NULL, w->k_norm_b, false);
            clamp_row(qt, nq, (float)c->clip_qkv), clamp_row(kt, nk, (float)c->clip_qkv);
        }
        const bool normed = norm && !(finish && clip), late = normed && c->qk_norm_after_rope;
        kvci_fwd_norm_rope_token(s, t, qt, nH, D, normed && !late ? w->q_norm : NULL, w->q_norm_b, rotate);
        kvci_fwd_norm_rope_token(s, t, kt, nKV, D, normed && !late ? w->k_norm : NULL, w->k_norm_b, rotate);
        if (late) { /* HunYuan: the heads' norms after RoPE */
            kvci_fwd_norm_rope_token(s, t, qt, nH, D, w->q_norm, w->q_norm_b, false);
            kvci_fwd_norm_rope_token(s, t, kt, nKV, D, w->k_norm, w->k_norm_b, false);
        }
        if (rotate && c->qk_l2_norm) { /* Llama 4: the RoPE layers' q and k, after RoPE */
            l2_heads(qt, nH, D, D, (float)c->rms_norm_eps);
            l2_heads(kt, nKV, D, D, (float)c->rms_norm_eps);
        }
        if (finish && c->query_scale_ssmax && c->layer_nope[l]) { /* Beam's NoPE layers, f32 as transformers */
            const float f = expf(0.1f * log1pf(((float)s->md->positions[t] + 1.0f) / 2048.0f));
            for (int64_t i = 0; i < nH * D; i++) q[t * nH * D + i] *= f;
        }
        if (finish && c->query_scale_beta > 0.0 && (!c->query_scale_nope || c->layer_nope[l])) {
            /* Ministral 3: after RoPE; Llama 4: the NoPE layers only */
            const float f = query_scale(c, s->md->positions[t]);
            for (int64_t i = 0; i < nH * D; i++) q[t * nH * D + i] *= f;
        }
    }
}

/* OLMo 2's q / k norms under tensor parallelism: a rank holds some heads of each row, so a row's sum of
 * squares is the ranks' sums added (each KV head replicated on r ranks counted once), then each rank
 * scales its part as kvc_rmsnorm_f32 scales the whole row. */
static kvc_status whole_norms_over_ranks(const kvc_fwd_step *s, const kvc_layer_weights *w, float *q, float *k) {
    const kvc_model *m = s->m;
    const int64_t T = s->T, D = m->cfg.head_dim, nq = m->cfg.num_heads * D, nk = m->cfg.num_kv_heads * D;
    const int64_t rep = m->full.num_kv_heads < m->tp.size ? m->tp.size / m->full.num_kv_heads : 1;
    float *ss = s->ws->qk_ss; /* [2T]: q's, then k's */
    for (int64_t t = 0; t < T; t++) {
        ss[t] = (float)kvci_sum_squares(q + t * nq, nq);
        ss[T + t] = (float)kvci_sum_squares(k + t * nk, nk);
    }
    KVC_TRY(m->tp.reduce(m->tp.user, ss, 2 * T));
    const float eps = (float)m->cfg.rms_norm_eps;
    for (int64_t t = 0; t < T; t++) {
        kvci_rmsnorm_by_sum(q + t * nq, w->q_norm, nq, ss[t], m->full.num_heads * D, eps);
        kvci_rmsnorm_by_sum(k + t * nk, w->k_norm, nk, (double)ss[T + t] / (double)rep, m->full.num_kv_heads * D, eps);
    }
    return KVC_OK;
}

kvc_status kvci_attn_gqa(const kvc_fwd_step *s, int64_t l) {
    const kvc_model *m = s->m;
    const kvc_model_config *c = &m->cfg;
    const kvc_layer_weights *w = &m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const kvci_attn_shape sh = kvci_layer_shape(c, l); /* the layer's own heads and dims */
    const int64_t T = s->T, nH = sh.nH;
    int64_t nKV = sh.nKV, D = sh.D, Dv = sh.Dv; /* DiffLlama's pair heads: nKV / 2 of 2D */
    float *q = ws->q;                           /* [T, nH, D] */
    float *k = ws->k;                           /* [T, nKV, D] */
    float *v = ws->v;                           /* [T, nKV, Dv] */
    double t0 = kvci_sp_begin();
    const float *fused = NULL;
    KVC_TRY(project_qkv(s, w, q, k, v, &fused));
    if (c->attn_gate_proj || c->attn_head_gate) /* AFMoE's [T, nH D], LFM3's [T, nH]: of the layer's input */
        KVC_TRY(kvci_linear(ws->xn, T, &w->wg, NULL, ws->gate));
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    /* the fused rows' split is timed with the q/k norms and RoPE */
    if (c->qk_norm_whole && m->tp.reduce != NULL) { /* the norms' sums span the ranks: split, norm, rotate */
        qkv_rows(s, l, fused, q, k, v, true, false, false);
        KVC_TRY(whole_norms_over_ranks(s, w, q, k));
        qkv_rows(s, l, NULL, q, k, v, false, false, true);
    } else {
        qkv_rows(s, l, fused, q, k, v, true, true, true);
    }
    if (c->attn_value_scale > 0.0) { /* MiMo-V2-Flash: the values times attention_value_scale, f32 as transformers */
        const float vs = (float)c->attn_value_scale;
        for (int64_t i = 0; i < T * nKV * Dv; i++) v[i] *= vs;
    }
    if (c->mamba_parallel_attn) { /* Falcon-H1: the keys times key_multiplier (rotated: the same to rounding) */
        const float km = (float)c->key_multiplier;
        for (int64_t i = 0; i < T * nKV * D; i++) k[i] *= km;
    }
    kvci_sp_end(KVC_SP_QK_ROPE, t0), t0 = kvci_sp_begin();
    /* Ergo's full layers: the logits times global_attention_scale (transformers: q and k times its root each) */
    const double layer_scale =
        c->global_attention_scale > 0.0 && !c->layer_sliding[l] ? c->global_attention_scale : 1.0;
    if (c->diff_attn) { /* DiffLlama: the packed pair heads (attn_diff.c) in ws->fused, free after the split */
        float *qd = ws->fused, *kd = qd + T * nH * 2 * D, *vd = kd + T * nKV * D;
        kvci_diff_pack(s, q, k, v, qd, kd, vd);
        q = qd, k = kd, v = vd, nKV /= 2, D *= 2, Dv *= 2;
    }
    kvc_attn_call call = {.layer = l,
                          .q = q,
                          .k = k,
                          .v = v,
                          .nH = nH,
                          .nKV = nKV,
                          .D = D,
                          .Dv = Dv,
                          .scale = kvci_layer_attn_scale(c, l) * layer_scale /
                                   (c->attn_scale_inverse_layer ? (double)(l + 1) : 1.0),
                          .softcap = c->attn_logit_softcapping,
                          .window = c->layer_sliding[l] ? c->sliding_window : 0,
                          .chunk = c->layer_chunked[l] ? c->attention_chunk_size : 0,
                          .sinks = w->sinks,
                          .alibi = m->alibi,
                          .alibi_bf16 = c->alibi_in_scale,
                          .out = ws->att};
    kvc_status st = kvci_attn_core(s, &call); /* times its cache write and its attention */
    t0 = kvci_sp_begin();
    if (st != KVC_OK) return st;
    if (c->attn_output_gate || c->attn_gate_proj) /* the output times sigmoid(gate (+ Beam's bias per head)), f32 */
        for (int64_t i = 0; i < T * nH * Dv; i++)
            ws->att[i] *= gate_of(c, w->gate_b ? ws->gate[i] + w->gate_b[i / Dv % nH] : ws->gate[i]);
    if (c->attn_head_gate) /* LFM3: each head's output times sigmoid of its gate, f32 as transformers */
        for (int64_t i = 0; i < T * nH * Dv; i++) ws->att[i] *= gate_of(c, ws->gate[i / Dv]);
    if (w->attn_sub_norm) /* BitNet: an RMSNorm of the attention output [T, nH Dv] before o_proj */
        kvci_rmsnorm_rows(ws->att, T, nH * Dv, nH * Dv, w->attn_sub_norm, (float)c->rms_norm_eps);
    if (c->diff_attn) kvci_diff_combine(s, l, ws->att, ws->q); /* [T, nH D] */
    st = kvci_linear(c->diff_attn ? ws->q : ws->att, T, &w->wo, w->bo, ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
