/* The Mamba2 mixer (transformers' Mamba2Mixer / BambaMixer / GraniteMoeHybridMambaLayer, their torch path) in
 * place of attention: in_proj of the normed input into z [I] (the gate), xBC [I + 2 G N] and dt [nh]; a causal
 * depthwise convolution of conv_kernel taps over each channel of xBC (tap j reading the input L - 1 - j steps
 * back; before a row's first token its conv state, or zeros when the row starts its sequence), its bias, SiLU;
 * x [nh, P] (I = nh P), B and C [G, N] (head h reads group h / (nh / G)); per head dt = softplus(dt + dt_bias)
 * clamped to time_step_limit, A = -exp(A_log), and per token
 *   state = state * exp(dt A) + (dt B) x,   y = state . C + D x   (state [nh, P, N]),
 * the recurrence transformers' one-token decode path runs (its prefill runs the same sums in chunks, the SSD
 * form: the two agree to rounding, about 1e-6 relative); then y * silu(z) RMS-normed in G groups of I / G
 * channels (norm.weight, rms_norm_eps) and out_proj. The conv state (kvc_layer_cache.state [L - 1, I + 2 G N],
 * the row's last L - 1 xBC inputs, oldest first) and the ssm state (.recurrent [nh, P, N]) are read and
 * rewritten by every step. Each output element is one fixed-order sum on one thread, whatever the step's rows
 * or chunks: a sequence's bits do not depend on how it was split into steps or batched. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/act.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"

/* The mixer's widths: I = nh P, the conv channels C = I + 2 G N, the in_proj rows I + C + nh. */
typedef struct dims {
    int64_t nh, P, N, G, I, C, rows, L;
} dims;

static dims dims_of(const kvc_model_config *c) {
    dims d = {.nh = c->mamba_heads, .P = c->mamba_head_dim, .N = c->mamba_d_state, .G = c->mamba_groups};
    d.I = d.nh * d.P, d.C = d.I + 2 * d.G * d.N, d.rows = d.I + d.C + d.nh, d.L = c->conv_kernel;
    return d;
}

int64_t kvci_mamba2_in_width(const kvc_model_config *c) { return dims_of(c).rows; }

int64_t kvci_mamba2_scratch(const kvc_model_config *c, int64_t tokens) {
    const dims d = dims_of(c);
    /* conv out, y, then a row's ssm and conv states for a step without caches */
    return tokens * (d.C + d.I) + d.nh * d.P * d.N + (d.L - 1) * d.C;
}

/* torch's softplus (beta 1, threshold 20): x above 20 as is, else log1p(exp(x)). */
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* The conv of one row's n tokens: in [n, rows] (xBC at column I), st [L - 1, C] its conv state (fresh: zeros),
 * out [n, C] = silu(conv + bias); then st holds the row's last L - 1 inputs. */
static void conv_row(const dims *d, const kvc_layer_weights *w, const float *in, int64_t n, float *st, bool fresh,
                     float *out) {
    kvci_causal_conv(in + d->I, d->rows, n, d->C, w->conv_w, d->L, w->conv_b, st, fresh, out);
    for (int64_t i = 0; i < n * d->C; i++) out[i] = silu(out[i]);
}

/* The scan of one row: xbc [n, C] (x | B | C after the conv), dt of in [n, rows] (column I + C), ssm [nh, P, N]
 * (fresh: zeros); y [n, I]. Heads in parallel, each one's tokens in order. */
static void scan_row(const kvc_model_config *c, const dims *d, const kvc_layer_weights *w, const float *in,
                     const float *xbc, int64_t n, float *ssm, bool fresh, float *y) {
    const int64_t P = d->P, N = d->N, per = d->nh / d->G;
    const float lo = (float)c->mamba_dt_min, hi = (float)c->mamba_dt_max;
    if (fresh) memset(ssm, 0, (size_t)(d->nh * P * N) * sizeof(float));
#pragma omp parallel for schedule(static)
    for (int64_t h = 0; h < d->nh; h++) {
        const float A = -expf(w->ssm_a_log[h]), Dh = w->ssm_d[h];
        float *sh = ssm + h * P * N;
        const int64_t g = h / per;
        for (int64_t t = 0; t < n; t++) {
            float dt = softplus(in[t * d->rows + d->I + d->C + h] + w->ssm_dt_bias[h]);
            dt = fminf(fmaxf(dt, lo), hi);
            const float dA = expf(dt * A);
            const float *x = xbc + t * d->C + h * P, *B = xbc + t * d->C + d->I + g * N;
            const float *Cm = xbc + t * d->C + d->I + d->G * N + g * N;
            for (int64_t p = 0; p < P; p++) {
                float *sp = sh + p * N, acc = 0.0f;
                for (int64_t k = 0; k < N; k++) {
                    sp[k] = sp[k] * dA + (dt * B[k]) * x[p];
                    acc += sp[k] * Cm[k];
                }
                y[t * d->I + h * P + p] = acc + x[p] * Dh;
            }
        }
    }
}

/* yg [n] *= silu(z [n]); returns the sum of squares of the gated yg. */
static float gate_group(float *yg, const float *z, int64_t n) {
    float ss = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        yg[i] *= silu(z[i]);
        ss += yg[i] * yg[i];
    }
    return ss;
}

/* y [T, I] times silu(z) (z of in [T, rows], column 0), RMS-normed in G groups of I / G channels, times the norm
 * weight, in place; Falcon-H1 (mamba_parallel_attn): without mamba_rms_norm gated alone, with mamba_norm_before_gate
 * normed first, then gated. Under tensor parallelism with fewer groups than ranks (each group on span = tp / groups
 * ranks, this rank one group's I channels of span I), a normed group's sum of squares (of y gated, or of y alone
 * when normed before the gate) is its ranks' sums added (ss [T, groups of the whole model], over ws->proj, which
 * out_proj writes next; each rank's sum in its group's column). */
static kvc_status gated_norm(const kvc_fwd_step *s, const dims *d, const kvc_layer_weights *w, const float *in,
                             int64_t T, float *y) {
    const kvc_model *m = s->m;
    const kvc_model_config *c = &m->cfg;
    const bool norm = !c->mamba_parallel_attn || c->mamba_rms_norm;
    const bool gate_first = !norm || !c->mamba_parallel_attn || !c->mamba_norm_before_gate;
    const int64_t gs = d->I / d->G, Gf = m->full.mamba_groups, span = m->tp.size > Gf ? m->tp.size / Gf : 1;
    const float eps = (float)(c->mamba_norm_eps > 0.0 ? c->mamba_norm_eps : c->rms_norm_eps); /* Zamba2: 1e-5 */
    float *ss = s->ws->proj; /* [T, Gf] when span > 1 (Gf < tp <= hidden_size: shard_state.c) */
    if (span > 1 && norm) {
        const int64_t g0 = kvci_shard_mamba_group0(m);
        memset(ss, 0, (size_t)(T * Gf) * sizeof(float));
        for (int64_t t = 0; t < T; t++) {
            float *yt = y + t * d->I, sum = 0.0f;
            if (gate_first) sum = gate_group(yt, in + t * d->rows, d->I);
            for (int64_t i = 0; !gate_first && i < d->I; i++) sum += yt[i] * yt[i];
            ss[t * Gf + g0] = sum;
        }
        KVC_TRY(m->tp.reduce(m->tp.user, ss, T * Gf));
        for (int64_t t = 0; t < T; t++) ss[t] = ss[t * Gf + g0];
    }
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++)
        for (int64_t g = 0; g < d->G; g++) {
            float *yg = y + t * d->I + g * gs;
            const float *z = in + t * d->rows + g * gs;
            float sum = 0.0f;
            if (span > 1 && norm) {
                sum = ss[t];
            } else if (gate_first) {
                sum = gate_group(yg, z, gs);
            } else {
                for (int64_t i = 0; i < gs; i++) sum += yg[i] * yg[i];
            }
            if (!norm) continue;
            const float r = 1.0f / sqrtf(sum / (float)(gs * span) + eps);
            for (int64_t i = 0; i < gs; i++) yg[i] = w->ssm_norm[g * gs + i] * (yg[i] * r);
            for (int64_t i = 0; !gate_first && i < gs; i++) yg[i] *= silu(z[i]);
        }
    return KVC_OK;
}

/* Falcon-H1's in_proj rows [T, rows] times ssm_multipliers: z [I], x [I], B [G N], C [G N], dt [nh]. */
static void mup_rows(const kvc_model_config *c, const dims *d, int64_t T, float *in) {
    const int64_t end[5] = {d->I, 2 * d->I, 2 * d->I + d->G * d->N, 2 * d->I + 2 * d->G * d->N, d->rows};
    float m[5];
    for (int i = 0; i < 5; i++) m[i] = (float)c->ssm_multipliers[i];
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0, part = 0; j < d->rows; j++) {
            while (j >= end[part]) part++;
            in[t * d->rows + j] *= m[part];
        }
}

kvc_status kvci_mamba2_mixer(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const kvc_step_metadata *md = s->md;
    const dims d = dims_of(c);
    const int64_t T = s->T;
    float *in = ws->fused;                                          /* [T, rows]: z | xBC | dt */
    float *xbc = ws->mamba, *y = xbc + T * d.C, *own = y + T * d.I; /* [T, C], [T, I], [nh, P, N] */
    double t0 = kvci_sp_begin();
    KVC_TRY(kvci_linear(ws->xn, T, &w->conv_in, w->conv_in_b, in));
    if (c->mamba_parallel_attn) mup_rows(c, &d, T, in);
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    const kvc_layer_cache *lc = s->a->caches ? &s->a->caches->layers[l] : NULL;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        float *conv = own + d.nh * d.P * d.N, *ssm = own; /* no caches: the row's own states, from zeros */
        if (lc) {
            KVC_TRY(kvci_row_state(s, lc, &lc->state, l, r, &conv));
            KVC_TRY(kvci_row_state(s, lc, &lc->recurrent, l, r, &ssm));
        }
        const int64_t n = md->cu_seq_lens_q[r] - q0;
        const bool fresh = md->seq_lens_kv[r] == n;
        conv_row(&d, w, in + q0 * d.rows, n, conv, fresh, xbc + q0 * d.C);
        scan_row(c, &d, w, in + q0 * d.rows, xbc + q0 * d.C, n, ssm, fresh, y + q0 * d.I);
        q0 += n;
    }
    KVC_TRY(gated_norm(s, &d, w, in, T, y));
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(y, T, &w->ssm_out, w->ssm_out_b, ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
