/* Kimi Delta Attention (Kimi-Linear's KimiDeltaAttention, gdn_kda) in place of attention: Gated DeltaNet's delta
 * rule with a decay per key channel instead of one per head. Of the normed input x: q, k, v [nh d] each (q_proj,
 * k_proj, v_proj), each through its own causal depthwise convolution of K taps (q_conv1d, k_conv1d, v_conv1d; tap j
 * reads the input K - 1 - j steps back) and SiLU; per head h, q and k L2-normalised (x / sqrt(sum x^2 + 1e-6)), q
 * times d^-1/2; the gate g [nh d] = -exp(A_log[h]) softplus(f_b(f_a(x)) + dt_bias) (softplus x above 20); beta =
 * sigmoid(b_proj(x)) [nh]; the state S [d, d] per head, token by token in f32 (kvci_kda_token):
 *     S = diag(exp(g)) S;  delta = beta (v - S^T k);  S = S + k delta^T;  o = S^T q
 * then o RMS-normalised over d (o_norm's weight, eps rms_norm_eps) times sigmoid(g_b(g_a(x))), and o_proj.
 * transformers' torch path runs a prefill by its chunked form and a decode step by this sequential one; the runtime
 * runs the sequential one for every token (as gated_delta.c). The conv state (kvc_layer_cache.state, the last K - 1
 * inputs of q, k and v: three [K - 1, nh d] blocks one after the other) and the recurrent state (.recurrent [nh, d,
 * d]) are read and rewritten by every step with caches. Each head's recurrence runs on one thread. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/act.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"
#include "ops/write_internal.h"

int64_t kvci_kda_floats(const kvc_model_config *c, int64_t Tm) {
    const int64_t nh = c->gdn_v_heads, d = c->gdn_k_dim, V = nh * d;
    /* per token: q, k, v [3 V], their conv outputs [3 V], f_a and g_a [2 d], the decay and the gate [2 V], beta
     * [nh], core [V]; then per head a state [d, d] (no caches), q and k [2 d], the S^T k sums [d] */
    return Tm * (9 * V + 2 * d + nh) + nh * (d * d + 3 * d);
}

void kvci_kda_token(float *S, const float *q, const float *k, const float *v, const float *decay, float beta,
                    int64_t dk, int64_t dv, float *kvm, float *o) {
    for (int64_t e = 0; e < dv; e++) kvm[e] = 0.0f;
    for (int64_t a = 0; a < dk; a++) { /* S = diag(decay) S; kvm = S^T k */
        float *row = S + a * dv;
        for (int64_t e = 0; e < dv; e++) {
            row[e] *= decay[a];
            kvm[e] += row[e] * k[a];
        }
    }
    for (int64_t e = 0; e < dv; e++) kvm[e] = (v[e] - kvm[e]) * beta; /* delta */
    for (int64_t e = 0; e < dv; e++) o[e] = 0.0f;
    for (int64_t a = 0; a < dk; a++) { /* S += k delta^T; o = S^T q */
        float *row = S + a * dv;
        for (int64_t e = 0; e < dv; e++) {
            row[e] += k[a] * kvm[e];
            o[e] += row[e] * q[a];
        }
    }
}

/* The scratch of one step, carved from ws->gdn (kvci_kda_floats). */
typedef struct kda_bufs {
    float *qkv, *xc;     /* [3, Tm, V]: q, k, v projected; then their conv outputs */
    float *fa, *ga;      /* [Tm, d] each */
    float *decay, *gate; /* [Tm, V] each: f_b's output, then exp(g); g_b's output */
    float *beta, *core;  /* [Tm, nh], [Tm, V] */
    float *heads;        /* [nh, d d + 3 d] */
} kda_bufs;

static kda_bufs carve(const kvc_model_config *c, kvc_model_workspace *ws) {
    const int64_t Tm = ws->max_tokens, nh = c->gdn_v_heads, d = c->gdn_k_dim, V = nh * d;
    kda_bufs b = {.qkv = ws->gdn};
    b.xc = b.qkv + 3 * Tm * V;
    b.fa = b.xc + 3 * Tm * V;
    b.ga = b.fa + Tm * d;
    b.decay = b.ga + Tm * d;
    b.gate = b.decay + Tm * V;
    b.beta = b.gate + Tm * V;
    b.core = b.beta + Tm * nh;
    b.heads = b.core + Tm * V;
    return b;
}

/* x [n] times 1 / sqrt(sum x^2 + 1e-6) (transformers' l2norm), then times scale, into y. */
static void l2norm(const float *x, int64_t n, float scale, float *y) {
    const double inv = 1.0 / sqrt(kvci_sum_squares(x, n) + 1e-6);
    for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * inv) * scale;
}

/* Head h of one row's n tokens from t0: the recurrence over its state S [d, d] (zeroed first when fresh), each
 * token's o [d] into core, then the gated norm. scratch: [3 d]. */
static void head_row(const kvc_model_config *c, const kvc_layer_weights *w, const kda_bufs *b, int64_t Tm, int64_t t0,
                     int64_t n, int64_t h, float *S, bool fresh, float *scratch) {
    const int64_t d = c->gdn_k_dim, V = c->gdn_v_heads * d;
    const float eps = (float)c->rms_norm_eps, scale = (float)(1.0 / sqrt((double)d));
    float *q = scratch, *k = scratch + d, *kvm = scratch + 2 * d;
    if (fresh) memset(S, 0, (size_t)(d * d) * sizeof(float));
    for (int64_t t = t0; t < t0 + n; t++) {
        const int64_t at = t * V + h * d;
        l2norm(b->xc + at, d, scale, q);
        l2norm(b->xc + Tm * V + at, d, 1.0f, k);
        float *o = b->core + at;
        kvci_kda_token(S, q, k, b->xc + 2 * Tm * V + at, b->decay + at, b->beta[t * c->gdn_v_heads + h], d, d, kvm, o);
        const double inv = kvci_rms_inv(o, d, eps); /* the gated norm: w * norm(o) * sigmoid(gate) */
        const float *gate = b->gate + at;
        for (int64_t e = 0; e < d; e++)
            o[e] = kvci_rms_scaled(o[e], inv, w->gdn_norm[e]) * (1.0f / (1.0f + expf(-gate[e])));
    }
}

/* The per-channel decay exp(-exp(A_log[h]) softplus(f + dt_bias)) of T tokens, in place over f [T, V]; beta =
 * sigmoid(b) in place over [T, nh]. */
static void gates(const kvc_model_config *c, const kvc_layer_weights *w, int64_t T, float *f, float *beta) {
    const int64_t nh = c->gdn_v_heads, d = c->gdn_k_dim, V = nh * d;
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < V; i++) {
            const float rate = expf(w->gdn_a_log[i / d]);
            f[t * V + i] = expf(-rate * kvci_softplus(f[t * V + i] + w->gdn_dt_bias[i]));
        }
    for (int64_t i = 0; i < T * nh; i++) beta[i] = 1.0f / (1.0f + expf(-beta[i]));
}

/* Work (state elements times tokens) from which the heads share the OpenMP threads (as gated_delta.c). */
#define KDA_PARALLEL_WORK (1 << 16)

kvc_status kvci_kda(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const kvc_step_metadata *md = s->md;
    const int64_t T = s->T, Tm = s->ws->max_tokens, nh = c->gdn_v_heads, d = c->gdn_k_dim, V = nh * d;
    const int64_t K = c->gdn_conv_kernel;
    const kda_bufs b = carve(c, s->ws);
    double t0 = kvci_sp_begin();
    const kvc_wmat *mats[6] = {&w->wq, &w->wk, &w->wv, &w->kda_fa, &w->kda_ga, &w->gdn_ba};
    const float *bias[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    float *outs[6] = {b.qkv, b.qkv + Tm * V, b.qkv + 2 * Tm * V, b.fa, b.ga, b.beta};
    KVC_TRY(kvci_linear_shared(s->ws->xn, T, 6, mats, bias, outs));
    KVC_TRY(kvci_linear(b.fa, T, &w->kda_fb, NULL, b.decay));
    KVC_TRY(kvci_linear(b.ga, T, &w->kda_gb, NULL, b.gate));
    gates(c, w, T, b.decay, b.beta);
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    const int64_t per_head = d * d + 3 * d;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        float *conv_st = NULL, *rec = NULL;
        KVC_TRY(kvci_row_states(s, l, r, &conv_st, &rec));
        const int64_t n = md->cu_seq_lens_q[r] - q0;
        const bool fresh = md->seq_lens_kv[r] == n; /* the row starts its sequence in this step */
        for (int64_t p = 0; p < 3; p++) {           /* q, k, v: each its conv, its block of the state, then SiLU */
            float *y = b.xc + p * Tm * V + q0 * V;
            kvci_causal_conv(b.qkv + p * Tm * V + q0 * V, V, n, V, w->kda_conv[p], K, NULL,
                             conv_st ? conv_st + p * (K - 1) * V : NULL, fresh, y);
            for (int64_t i = 0; i < n * V; i++) y[i] = kvci_silu_mul(y[i], 1.0f);
        }
#pragma omp parallel for schedule(static) if (nh > 1 && n * nh * d * d >= KDA_PARALLEL_WORK)
        for (int64_t h = 0; h < nh; h++) {
            float *hs = b.heads + h * per_head; /* S (no caches), then the head's scratch */
            head_row(c, w, &b, Tm, q0, n, h, rec ? rec + h * d * d : hs, fresh || !rec, hs + d * d);
        }
        q0 += n;
    }
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(b.core, T, &w->wo, NULL, s->ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
