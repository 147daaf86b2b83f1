/* Gemma 3n's decoder (family_gemma3n.c's runtime), as transformers' Gemma3nTextModel in f32: K = altup_inputs
 * copies of the hidden state S [K, T, H] (AltUp), copy 0 the embedded rows, copy i altup_projections[i - 1] of them
 * at their magnitude. Each layer predicts the copies from a router over the active copy a, runs on the predicted
 * copy a (attention beside LAuReL, the sparse GeGLU MLP, Gemma 4's attention and sandwich norms), corrects every
 * copy by its output and gates the per-layer input into copies 1.. from the corrected copy a. The end merges the
 * copies (copy 0 and the others through altup_unembed_projections, at copy 0's magnitude) by their mean. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "model/model_internal.h"
#include "ops/write_internal.h"

/* erf^-1(y) for |y| < 1 in double: Giles' single-precision polynomial, then two Newton steps on erf. */
static double erfinv(double y) {
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        x = 2.81022636e-08;
        x = 3.43273939e-07 + x * w, x = -3.5233877e-06 + x * w, x = -4.39150654e-06 + x * w;
        x = 0.00021858087 + x * w, x = -0.00125372503 + x * w, x = -0.00417768164 + x * w;
        x = 0.246640727 + x * w, x = 1.50140941 + x * w;
    } else {
        w = sqrt(w) - 3.0;
        x = -0.000200214257;
        x = 0.000100950558 + x * w, x = 0.00134934322 + x * w, x = -0.00367342844 + x * w;
        x = 0.00573950773 + x * w, x = -0.0076224613 + x * w, x = 0.00943887047 + x * w;
        x = 1.00167406 + x * w, x = 2.83297682 + x * w;
    }
    x *= y;
    for (int i = 0; i < 2; i++) x -= (erf(x) - y) / (1.1283791670955126 * exp(-x * x)) /* 2 / sqrt(pi) */;
    return x;
}

float kvci_gemma3n_std_multiplier(float p) {
    const float y = 2.0f * p - 1.0f; /* torch: loc + scale * erfinv(2 p - 1) * sqrt(2), each step in f32 */
    return (float)erfinv((double)y) * (float)sqrt(2.0);
}

/* x [T, H] times sqrt(mean(ref^2)) / sqrt(max(mean(x^2), 1e-5)) per row (ref [T, H]): the copies' magnitudes. */
static void match_magnitude(float *x, const float *ref, int64_t T, int64_t H) {
    for (int64_t t = 0; t < T; t++) {
        float *r = x + t * H;
        const float want = sqrtf((float)(kvci_sum_squares(ref + t * H, H) / (double)H));
        const float have = sqrtf(fmaxf((float)(kvci_sum_squares(r, H) / (double)H), 1e-5f));
        for (int64_t i = 0; i < H; i++) r[i] = r[i] * want / have;
    }
}

kvc_status kvci_gemma3n_streams(const kvc_fwd_step *s) {
    const kvc_model *m = s->m;
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = m->cfg.hidden_size, TH = T * H;
    memcpy(ws->altup, ws->h, (size_t)TH * sizeof(float));
    for (int64_t i = 1; i < m->cfg.altup_inputs; i++) {
        KVC_TRY(kvci_linear(ws->h, T, &m->altup_proj[i - 1], NULL, ws->altup + i * TH));
        match_magnitude(ws->altup + i * TH, ws->h, T, H);
    }
    return KVC_OK;
}

kvc_status kvci_gemma3n_merge(const kvc_fwd_step *s) {
    const kvc_model *m = s->m;
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = m->cfg.hidden_size, TH = T * H, K = m->cfg.altup_inputs;
    memcpy(ws->h, ws->altup, (size_t)TH * sizeof(float));
    for (int64_t i = 1; i < K; i++) {
        KVC_TRY(kvci_linear(ws->altup + i * TH, T, &m->altup_unembed[i - 1], NULL, ws->proj));
        match_magnitude(ws->proj, ws->altup, T, H);
        for (int64_t j = 0; j < TH; j++) ws->h[j] += ws->proj[j];
    }
    for (int64_t j = 0; j < TH; j++) ws->h[j] /= (float)K;
    return KVC_OK;
}

/* mod [T, K] = tanh(modality_router(router_norm(x) * H^-1)) of rows x [T, H] (ws->xn their scratch). */
static kvc_status route(const kvc_fwd_step *s, const kvc_layer_weights *w, const float *x, float *mod) {
    const kvc_model_config *c = &s->m->cfg;
    const int64_t T = s->T, H = c->hidden_size, K = c->altup_inputs;
    const float inv_h = (float)(1.0 / (double)H);
    kvci_rmsnorm_rows_to(x, T, H, H, w->altup_router_norm, (float)c->rms_norm_eps, s->ws->xn);
    for (int64_t i = 0; i < T * H; i++) s->ws->xn[i] *= inv_h;
    KVC_TRY(kvci_linear(s->ws->xn, T, &w->altup_router, NULL, mod));
    for (int64_t i = 0; i < T * K; i++) mod[i] = tanhf(mod[i]);
    return KVC_OK;
}

/* P[i] = S[i] + sum_p coef[t][i K + p] S[p] with coef = prediction_coefs(route(S[a])) [T, K K]. */
static kvc_status predict(const kvc_fwd_step *s, const kvc_layer_weights *w, const float *S, float *P) {
    const kvc_model_config *c = &s->m->cfg;
    const int64_t T = s->T, H = c->hidden_size, K = c->altup_inputs, TH = T * H;
    float *mod = s->ws->altup_c, *coef = mod + T * K;
    KVC_TRY(route(s, w, S + c->altup_active * TH, mod));
    for (int64_t t = 0; t < T; t++)
        for (int64_t o = 0; o < K * K; o++) {
            float acc = 0.0f;
            for (int64_t j = 0; j < K; j++) acc += mod[t * K + j] * w->altup_pred[o * K + j];
            coef[t * K * K + o] = acc;
        }
    for (int64_t i = 0; i < K; i++)
        for (int64_t t = 0; t < T; t++) {
            const float *cf = coef + t * K * K + i * K;
            float *p = P + i * TH + t * H;
            for (int64_t d = 0; d < H; d++) {
                float acc = 0.0f;
                for (int64_t q = 0; q < K; q++) acc += S[q * TH + t * H + d] * cf[q];
                p[d] = acc + S[i * TH + t * H + d];
            }
        }
    return KVC_OK;
}

/* S[i] = P[i] + (y - P[a]) (correction_coefs(route(y))[i] + 1) for the layer's output y [T, H]. */
static kvc_status correct(const kvc_fwd_step *s, const kvc_layer_weights *w, const float *y, const float *P, float *S) {
    const kvc_model_config *c = &s->m->cfg;
    const int64_t T = s->T, H = c->hidden_size, K = c->altup_inputs, TH = T * H;
    float *mod = s->ws->altup_c, *coef = mod + T * K;
    KVC_TRY(route(s, w, y, mod));
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < K; i++) {
            float acc = 0.0f;
            for (int64_t j = 0; j < K; j++) acc += mod[t * K + j] * w->altup_corr[i * K + j];
            coef[t * K + i] = acc + 1.0f;
        }
    const float *pa = P + c->altup_active * TH;
    for (int64_t i = 0; i < K; i++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t d = 0; d < H; d++) {
                const int64_t e = t * H + d;
                S[i * TH + e] = (y[e] - pa[e]) * coef[t * K + i] + P[i * TH + e];
            }
    return KVC_OK;
}

/* ws->proj [T, H] = down(gelu_tanh(g) * up(xn)), g = gate(xn) less its row's mean + std * Phi^-1(p), at least 0,
 * on a sparse layer (p = layer_act_sparsity[l] > 0), else gate(xn) itself. */
static kvc_status sparse_mlp(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const float p = c->layer_act_sparsity[l];
    if (!(p > 0.0f)) return kvci_fwd_dense_mlp(s, l);
    const int64_t T = s->T, I = w->w_gate.rows;
    float *g = ws->ff_a, *u = ws->ff_b;
    int64_t ld = I;
    if (w->w_gu.data) { /* fused: rows [T, gate I | up I] */
        KVC_TRY(kvci_linear(ws->xn, T, &w->w_gu, NULL, ws->fused));
        g = ws->fused, u = ws->fused + I, ld = 2 * I;
    } else {
        KVC_TRY(kvci_linear(ws->xn, T, &w->w_gate, NULL, g));
        KVC_TRY(kvci_linear(ws->xn, T, &w->w_up, NULL, u));
    }
    const float mult = kvci_gemma3n_std_multiplier(p);
    for (int64_t t = 0; t < T; t++) {
        float *r = g + t * ld;
        double sum = 0.0, var = 0.0;
        for (int64_t i = 0; i < I; i++) sum += r[i];
        const float mean = (float)(sum / (double)I);
        for (int64_t i = 0; i < I; i++) var += ((double)r[i] - mean) * ((double)r[i] - mean);
        const float cutoff = mean + sqrtf((float)(var / (double)I)) * mult; /* std without Bessel's correction */
        for (int64_t i = 0; i < I; i++) r[i] = fmaxf(r[i] - cutoff, 0.0f);
    }
    kvci_glu(c->mlp_act, g, u, T, I, ld, ws->ff_a, I);
    return kvci_linear(ws->ff_a, T, &w->w_down, w->b_down, ws->proj);
}

/* Copies 1.. += post_per_layer_input_norm(per_layer_projection(gelu_tanh(per_layer_input_gate(x)) * ple[:, l])),
 * x the corrected copy a (times correct_output_scale under altup_correct_scale). */
static kvc_status per_layer_input(const kvc_fwd_step *s, int64_t l, float *S) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, P = c->ple_dim, LP = c->num_layers * P, TH = T * H;
    if (P == 0) return KVC_OK; /* transformers' zero-width block adds zeros */
    const float *x = S + c->altup_active * TH;
    if (c->altup_correct_scale) {
        for (int64_t t = 0; t < T; t++)
            for (int64_t d = 0; d < H; d++) ws->xn[t * H + d] = x[t * H + d] * w->altup_scale[d];
        x = ws->xn;
    }
    KVC_TRY(kvci_linear(x, T, &w->ple_gate, NULL, ws->ple_a));
    kvci_act_rows(c->mlp_act, ws->ple_a, T, P);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < P; i++) ws->ple_a[t * P + i] *= ws->ple[t * LP + l * P + i];
    KVC_TRY(kvci_linear(ws->ple_a, T, &w->ple_proj, NULL, ws->proj));
    kvci_rmsnorm_rows(ws->proj, T, H, H, w->ple_norm, (float)c->rms_norm_eps);
    for (int64_t i = 1; i < c->altup_inputs; i++)
        for (int64_t e = 0; e < TH; e++) S[i * TH + e] += ws->proj[e];
    return KVC_OK;
}

kvc_status kvci_gemma3n_layer(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, TH = T * H, K = c->altup_inputs;
    const float eps = (float)c->rms_norm_eps, root2 = (float)sqrt(2.0);
    float *S = ws->altup, *P = ws->altup + K * TH, *h = ws->h;
    KVC_TRY(predict(s, w, S, P));
    memcpy(h, P + c->altup_active * TH, (size_t)TH * sizeof(float));
    kvci_rmsnorm_rows_threads(h, T, H, H, w->in_norm, eps, ws->xn);
    /* LAuReL: xn + post_laurel_norm(linear_right(linear_left(xn))) */
    KVC_TRY(kvci_linear(ws->xn, T, &w->laurel_left, NULL, ws->laurel_r));
    KVC_TRY(kvci_linear(ws->laurel_r, T, &w->laurel_right, NULL, ws->laurel));
    kvci_rmsnorm_rows(ws->laurel, T, H, H, w->laurel_norm, eps);
    for (int64_t e = 0; e < TH; e++) ws->laurel[e] += ws->xn[e];
    KVC_TRY(kvci_attn_gemma4(s, l));
    kvci_rmsnorm_rows(ws->proj, T, H, H, w->post_norm, eps);
    for (int64_t e = 0; e < TH; e++) h[e] = ((h[e] + ws->proj[e]) + ws->laurel[e]) / root2;
    kvci_rmsnorm_rows_threads(h, T, H, H, w->pre_ff_norm, eps, ws->xn);
    KVC_TRY(sparse_mlp(s, l));
    kvci_rmsnorm_rows(ws->proj, T, H, H, w->post_ff_norm, eps);
    for (int64_t e = 0; e < TH; e++) h[e] += ws->proj[e];
    KVC_TRY(correct(s, w, h, P, S));
    return per_layer_input(s, l, S);
}
