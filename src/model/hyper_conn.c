/* HY V4's hyper-connections (transformers' HYV4HyperConnection and HYV4HyperHead, f32): the residual is n = hc_mult
 * streams per token, X [T, n, H] (ws->hc), each the embedding row at first. Before each sub-layer, from the flattened
 * streams x = X_t [n H]: r = (mean(x^2) + rms_norm_eps)^-1/2, mix = (fn x) r [2n], pre = sigmoid(mix[:n] scale[0] +
 * base[:n]) + hc_eps, post = hc_magnitude sigmoid(mix[n:] scale[1] + base[n:]) + hc_eps. The sub-layer reads
 * sum_i pre_i X_i (through its input norm) and its output y joins each stream, X_i += post_i y: no mixing between
 * the streams (DeepSeek-V4's Sinkhorn-balanced comb is not part of it). After the last layer the head collapses the
 * streams the same way with its own fn [n, n H], base [n] and one scale: out = sum_i pre_i X_i. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"

static float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

void kvci_hc_weights(const float *x, int64_t n, int64_t H, const kvc_hc_params *p, float *pre, float *post) {
    const int64_t F = n * H, m = post ? 2 * n : n;
    double ss = 0.0;
    for (int64_t i = 0; i < F; i++) ss += (double)x[i] * x[i];
    const float r = (float)(1.0 / sqrt(ss / (double)F + p->eps));
    for (int64_t j = 0; j < m; j++) {
        double d = 0.0;
        for (int64_t i = 0; i < F; i++) d += (double)p->fn[j * F + i] * x[i];
        const float mix = (float)d * r;
        if (j < n)
            pre[j] = sigmoid(mix * p->scale[0] + p->base[j]) + p->hc_eps;
        else
            post[j - n] = p->magnitude * sigmoid(mix * p->scale[1] + p->base[j]) + p->hc_eps;
    }
}

/* out [H] = sum_i pre_i x_i over the n streams x [n, H]. */
static void collapse(const float *x, const float *pre, int64_t n, int64_t H, float *out) {
    for (int64_t k = 0; k < H; k++) {
        float acc = 0.0f;
        for (int64_t i = 0; i < n; i++) acc += pre[i] * x[i * H + k];
        out[k] = acc;
    }
}

void kvci_hc_begin(const kvc_fwd_step *s) {
    const int64_t n = s->m->cfg.hc_mult, H = s->m->cfg.hidden_size;
    for (int64_t t = 0; t < s->T; t++)
        for (int64_t i = 0; i < n; i++)
            memcpy(s->ws->hc + (t * n + i) * H, s->ws->h + t * H, (size_t)H * sizeof(float));
}

void kvci_hc_pre(const kvc_fwd_step *s, int64_t l, int which) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const int64_t n = c->hc_mult, H = c->hidden_size;
    const kvc_hc_params p = {.fn = w->hc_fn[which],
                             .base = w->hc_base[which],
                             .scale = w->hc_scale[which],
                             .eps = c->rms_norm_eps,
                             .hc_eps = (float)c->hc_eps,
                             .magnitude = (float)c->hc_magnitude};
    for (int64_t t = 0; t < s->T; t++) {
        float *pre = s->ws->hc_w + t * 2 * n;
        kvci_hc_weights(s->ws->hc + t * n * H, n, H, &p, pre, pre + n);
        collapse(s->ws->hc + t * n * H, pre, n, H, s->ws->h + t * H);
    }
}

kvc_status kvci_hc_add(const kvc_fwd_step *s) {
    const kvc_model *m = s->m;
    const int64_t n = m->cfg.hc_mult, H = m->cfg.hidden_size;
    if (m->tp.reduce) KVC_TRY(m->tp.reduce(m->tp.user, s->ws->proj, s->T * H));
    for (int64_t t = 0; t < s->T; t++) {
        const float *post = s->ws->hc_w + t * 2 * n + n, *y = s->ws->proj + t * H;
        for (int64_t i = 0; i < n; i++) {
            float *x = s->ws->hc + (t * n + i) * H;
            for (int64_t k = 0; k < H; k++) x[k] += post[i] * y[k];
        }
    }
    return KVC_OK;
}

void kvci_hc_head(const kvc_fwd_step *s) {
    const kvc_model_config *c = &s->m->cfg;
    const int64_t n = c->hc_mult, H = c->hidden_size;
    const kvc_hc_params p = {.fn = s->m->hc_head_fn,
                             .base = s->m->hc_head_base,
                             .scale = s->m->hc_head_scale,
                             .eps = c->rms_norm_eps,
                             .hc_eps = (float)c->hc_eps};
    for (int64_t t = 0; t < s->T; t++) {
        float *pre = s->ws->hc_w + t * 2 * n;
        kvci_hc_weights(s->ws->hc + t * n * H, n, H, &p, pre, NULL);
        collapse(s->ws->hc + t * n * H, pre, n, H, s->ws->h + t * H);
    }
}
