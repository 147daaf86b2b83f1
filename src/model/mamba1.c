/* The Mamba-1 selective-scan mixer (transformers' MambaMixer / FalconMambaMixer, their torch path) in place of
 * attention: in_proj of the normed input into x [I] and the gate z [I]; a causal depthwise convolution of
 * conv_kernel taps over each channel of x (tap j reading the input L - 1 - j steps back; before a row's first token
 * its conv state, or zeros when the row starts its sequence), its bias, SiLU; x_proj into dt [R], B and C [N]
 * (FalconMamba: each RMS-normed without weights, Jamba: with them; eps mamba_bcdt_eps); dt = softplus(dt_proj dt +
 * bias) [I]; per channel i, A = -exp(A_log[i]) [N], and per token state = state * exp(dt A) + (dt B) x,   y = state . C
 * + D x   (state [I, N]), the recurrence transformers' sequential scan runs; then y * silu(z) and out_proj. Zamba's
 * mixer (ZambaMambaMixer, mamba_heads > 0) splits the channels into mamba_heads heads of P = I / heads, each with its
 * own x_proj [X, P] and dt_proj [P, R] (so its own dt, B and C), and its in_proj rows alternate x and z per channel.
 * The conv state (kvc_layer_cache.state [L - 1, I], the row's last L - 1 x inputs, oldest first) and the ssm state
 * (.recurrent [I, N]) are read and rewritten by every step. Each output element is one fixed-order sum on one thread
 * (channels in parallel, each one's tokens in order), whatever the step's rows or chunks: a sequence's bits do not
 * depend on how it was split into steps or batched. Under tensor parallelism a rank holds I / tp channels (of x, z,
 * the conv, dt, A, D and both states): x_proj's partial dt | B | C is summed over the ranks, out_proj's with the
 * layer's (one head only: Zamba has no shard rule). */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/act.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"

/* The mixer's widths: I channels, R dt rank, N state, L taps, X = R + 2 N the x_proj rows of a head, nh heads of P
 * channels (Mamba, Jamba: one of I). */
typedef struct dims {
    int64_t I, R, N, L, X, nh, P;
} dims;

static dims dims_of(const kvc_model_config *c) {
    dims d = {.I = c->mamba_inner, .R = c->mamba_dt_rank, .N = c->mamba_d_state, .L = c->conv_kernel};
    d.X = d.R + 2 * d.N, d.nh = c->mamba_heads > 0 ? c->mamba_heads : 1, d.P = d.I / d.nh;
    return d;
}

int64_t kvci_mamba1_scratch(const kvc_model_config *c, int64_t tokens) {
    const dims d = dims_of(c);
    /* conv out, x_proj out, dt's input, dt, y; a row's ssm and conv states for a step without caches; A */
    return tokens * (3 * d.I + d.nh * (d.X + d.R)) + 2 * d.I * d.N + (d.L - 1) * d.I;
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* v [n] times rsqrt(mean(v^2) + eps) in place, then times w [n] (Jamba's) when not NULL (FalconMamba's: none). */
static void rms_norm(float *v, int64_t n, float eps, const float *w) {
    float ss = 0.0f;
    for (int64_t i = 0; i < n; i++) ss += v[i] * v[i];
    const float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int64_t i = 0; i < n; i++) v[i] = w ? w[i] * (v[i] * r) : v[i] * r;
}

/* x_proj's output xp [T, X] (dt | B | C; T: every head's tokens), normed in place when mamba_bcdt_norm; dt's input
 * copied to dtr [T, R]. */
static void split_xproj(const kvc_model_config *c, const dims *d, const kvc_layer_weights *w, int64_t T, float *xp,
                        float *dtr) {
    const float eps = (float)c->mamba_bcdt_eps;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++) {
        float *row = xp + t * d->X;
        if (c->mamba_bcdt_norm) {
            rms_norm(row, d->R, eps, w->ssm_dt_norm);
            rms_norm(row + d->R, d->N, eps, w->ssm_b_norm);
            rms_norm(row + d->R + d->N, d->N, eps, w->ssm_c_norm);
        }
        memcpy(dtr + t * d->R, row, (size_t)d->R * sizeof(float));
    }
}

/* The scan of the row of n tokens from q0 in a step of T: xc [T, I] (x after the conv), dt [nh, T, P] (before
 * softplus, bias added), xp [nh, T, X] (B at column R, C at R + N), z of in [T, 2 I] (column I), A [I, N] =
 * -exp(A_log), ssm [I, N] (fresh: zeros); y [T, I] = (state . C + D x) silu(z). Channels in parallel, each one's
 * tokens in order. */
static void scan_row(const dims *d, const kvc_layer_weights *w, const float *in, const float *xc, const float *dt,
                     const float *xp, const float *A, int64_t T, int64_t q0, int64_t n, float *ssm, bool fresh,
                     float *y) {
    const int64_t I = d->I, N = d->N, P = d->P;
    if (fresh) memset(ssm, 0, (size_t)(I * N) * sizeof(float));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < I; i++) {
        const int64_t h = i / P;
        float *s = ssm + i * N;
        const float *Ai = A + i * N, Di = w->ssm_d[i];
        const float *dti = dt + h * T * P + (i - h * P), *xph = xp + h * T * d->X + d->R;
        for (int64_t t = q0; t < q0 + n; t++) {
            const float delta = kvci_softplus(dti[t * P]), x = xc[t * I + i];
            const float *B = xph + t * d->X, *C = B + N;
            float acc = 0.0f;
            for (int64_t k = 0; k < N; k++) {
                s[k] = expf(Ai[k] * delta) * s[k] + (delta * B[k]) * x;
                acc += s[k] * C[k];
            }
            y[t * I + i] = (acc + x * Di) * silu(in[t * 2 * I + I + i]);
        }
    }
}

/* Zamba's in_proj rows x_0, z_0, x_1, z_1, ...: in [T, 2 I] rearranged to x | z in place, through tmp [T, 2 I]. */
static void split_interleaved(float *in, int64_t T, int64_t I, float *tmp) {
    memcpy(tmp, in, (size_t)(T * 2 * I) * sizeof(float));
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < I; i++) {
            in[t * 2 * I + i] = tmp[t * 2 * I + 2 * i];
            in[t * 2 * I + I + i] = tmp[t * 2 * I + 2 * i + 1];
        }
}

/* x_proj and dt_proj, head by head: xc [T, I] into xp [nh, T, X] and dt [nh, T, P] (through dtr [nh, T, R]); a head
 * of several reads its channels gathered into xh [T, P]. */
static kvc_status project_heads(const kvc_fwd_step *s, const dims *d, const kvc_layer_weights *w, const float *xc,
                                float *xh, float *xp, float *dtr, float *dt) {
    const int64_t T = s->T, I = d->I, P = d->P;
    for (int64_t h = 0; h < d->nh; h++) {
        const float *x = xc;
        if (d->nh > 1) {
            for (int64_t t = 0; t < T; t++) memcpy(xh + t * P, xc + t * I + h * P, (size_t)P * sizeof(float));
            x = xh;
        }
        const kvc_wmat xw = kvci_wmat_at(&w->ssm_x_proj, h);
        KVC_TRY(kvci_linear(x, T, &xw, NULL, xp + h * T * d->X));
    }
    /* tensor parallelism (one head): each rank's x_proj reads its channels only; dt | B | C is the sum over ranks */
    if (s->m->tp.reduce) KVC_TRY(s->m->tp.reduce(s->m->tp.user, xp, T * d->X));
    split_xproj(&s->m->cfg, d, w, d->nh * T, xp, dtr);
    for (int64_t h = 0; h < d->nh; h++) {
        const kvc_wmat dw = kvci_wmat_at(&w->ssm_dt_proj, h);
        KVC_TRY(kvci_linear(dtr + h * T * d->R, T, &dw, w->ssm_dt_bias + h * P, dt + h * T * P));
    }
    return KVC_OK;
}

kvc_status kvci_mamba1_mixer(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const kvc_step_metadata *md = s->md;
    const dims d = dims_of(c);
    const int64_t T = s->T;
    float *in = ws->fused;                                                 /* [T, 2 I]: x | z */
    float *xc = ws->mamba, *xp = xc + T * d.I, *dtr = xp + d.nh * T * d.X; /* [T, I], [nh, T, X], [nh, T, R] */
    float *dt = dtr + d.nh * T * d.R, *y = dt + T * d.I,
          *own = y + T * d.I;                     /* [nh, T, P], [T, I], [I, N] + [L - 1, I] */
    float *A = own + d.I * d.N + (d.L - 1) * d.I; /* [I, N]: -exp(A_log), once per call */
    double t0 = kvci_sp_begin();
    KVC_TRY(kvci_linear(ws->xn, T, &w->conv_in, w->conv_in_b, in));
    if (c->mamba_heads > 0) split_interleaved(in, T, d.I, dt); /* dt and y: 2 T I floats, free until dt_proj */
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    const kvc_layer_cache *lc = s->a->caches ? &s->a->caches->layers[l] : NULL;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) { /* the conv of every row, its state carried */
        float *cs = own + d.I * d.N;           /* no caches: the row's own state, from zeros */
        if (lc) KVC_TRY(kvci_row_state(s, lc, &lc->state, l, r, &cs));
        const int64_t n = md->cu_seq_lens_q[r] - q0;
        kvci_causal_conv(in + q0 * 2 * d.I, 2 * d.I, n, d.I, w->conv_w, d.L, w->conv_b, cs, md->seq_lens_kv[r] == n,
                         xc + q0 * d.I);
        q0 += n;
    }
    for (int64_t i = 0; i < T * d.I; i++) xc[i] = silu(xc[i]);
    KVC_TRY(project_heads(s, &d, w, xc, y, xp, dtr, dt)); /* y: a head's gathered channels until the scan */
    for (int64_t i = 0; i < d.I * d.N; i++) A[i] = -expf(w->ssm_a_log[i]);
    q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        float *ss = own; /* no caches: the row's own state, from zeros */
        if (lc) KVC_TRY(kvci_row_state(s, lc, &lc->recurrent, l, r, &ss));
        const int64_t n = md->cu_seq_lens_q[r] - q0;
        scan_row(&d, w, in, xc, dt, xp, A, T, q0, n, ss, md->seq_lens_kv[r] == n, y);
        q0 += n;
    }
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(y, T, &w->ssm_out, w->ssm_out_b, ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
