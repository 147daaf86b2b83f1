/* DiffLlama's differential attention (kvc_model_config.diff_attn) on the GQA kernels. transformers splits the
 * nKV value heads into two halves and gives every query head h (key head h / g, g = nH / nKV) the values of
 * head (h / g) mod nKV/2 and of that head + nKV/2, then subtracts head i + nH/2's pair from head i's. The keys
 * of heads p and p + nKV/2 sit side by side as one head of 2D (the cache holds nKV/2 such heads, as many bytes as
 * nKV of D), their values likewise, and a query of the first half reads [q | 0], one of the second [0 | q]: one
 * standard attention over [T, nH, 2D] gives each query head its softmax times both value heads. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "ops/write_internal.h"

/* The query heads in the order of their pair head: pair head p (of nKV/2) holds the g heads of key head p, then
 * the g of key head p + nKV/2. The original head of position j of that order. */
static int64_t head_of(int64_t j, int64_t g, int64_t half) {
    const int64_t p = j / (2 * g), second = j / g % 2, r = j % g;
    return (p + second * half) * g + r;
}

void kvci_diff_pack(const kvc_fwd_step *s, const float *q, const float *k, const float *v, float *qd, float *kd,
                    float *vd) {
    const kvc_model_config *c = &s->m->cfg;
    const int64_t T = s->T, nH = c->num_heads, nKV = c->num_kv_heads, D = c->head_dim;
    const int64_t half = nKV / 2, g = nH / nKV;
    const size_t row = (size_t)D * sizeof(float);
#pragma omp parallel for schedule(static) if (T > 16)
    for (int64_t t = 0; t < T; t++) {
        for (int64_t j = 0; j < nH; j++) { /* qd [T, nH, 2D]: [q | 0] or [0 | q] */
            const int64_t h = head_of(j, g, half), second = j / g % 2;
            float *o = qd + (t * nH + j) * 2 * D;
            memset(o + (1 - second) * D, 0, row);
            memcpy(o + second * D, q + (t * nH + h) * D, row);
        }
        for (int64_t p = 0; p < half; p++) /* kd, vd [T, nKV/2, 2D]: heads p and p + nKV/2 */
            for (int64_t i = 0; i < 2; i++) {
                memcpy(kd + (t * half + p) * 2 * D + i * D, k + (t * nKV + p + i * half) * D, row);
                memcpy(vd + (t * half + p) * 2 * D + i * D, v + (t * nKV + p + i * half) * D, row);
            }
    }
}

void kvci_diff_combine(const kvc_fwd_step *s, int64_t l, const float *att, float *out) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const int64_t T = s->T, nH = c->num_heads, D = c->head_dim, g = nH / c->num_kv_heads;
    double dot[2] = {0.0, 0.0}; /* lambda_q1 . lambda_k1, lambda_q2 . lambda_k2 */
    for (int64_t i = 0; i < D; i++)
        dot[0] += (double)(w->lambda[0][i] * w->lambda[1][i]), dot[1] += (double)(w->lambda[2][i] * w->lambda[3][i]);
    const double init = 0.8 - 0.6 * exp(-0.3 * (double)l); /* lambda_init, f32 where it meets a tensor */
    const float lambda = expf((float)dot[0]) - expf((float)dot[1]) + (float)init, scale = (float)(1.0 - init);
    const float eps = (float)c->rms_norm_eps;
#pragma omp parallel for schedule(static) if (T > 16)
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < nH / 2; i++) {       /* out [T, nH/2, 2D]: head i's pair minus lambda head i + nH/2's */
            const int64_t a = i / g * 2 * g + i % g; /* head i at its pair order's position, head i + nH/2 at a + g */
            const float *x = att + (t * nH + a) * 2 * D, *y = att + (t * nH + a + g) * 2 * D;
            float *o = out + (t * nH / 2 + i) * 2 * D;
            for (int64_t d = 0; d < 2 * D; d++) o[d] = x[d] - lambda * y[d];
            const double inv = kvci_rms_inv(o, 2 * D, eps); /* the weightless group norm */
            for (int64_t d = 0; d < 2 * D; d++) o[d] = scale * kvci_rms_scaled(o[d], inv, 1.0f);
        }
}
