/* RecurrentGemma's recurrent block (RecurrentGemmaRecurrentBlock; layer_rglru) in place of attention. Of the normed
 * input x [T, H], W = lru_width, nH blocks of bw = W / nH channels for the gates:
 *     y = linear_y x, u = linear_x x                      [T, W] each (with biases)
 *     u = conv(u)                                         causal depthwise, conv_kernel taps and a bias
 *     gi = sigmoid(u_blk Wi[h] + bi[h]), ga = sigmoid(u_blk Wa[h] + ba[h])   per block h: u_blk [bw] times [bw, bw]
 *     log a = -8 ga softplus(recurrent_param);  a = exp(log a)
 *     s = a s + sqrt(1 - exp(2 log a)) (gi u)             at position 0: s = gi u (the reset, no normalisation)
 *     out = linear_out(s * gelu_tanh(y))
 * in f32 as transformers' float32 run. The states (kvc_layer_cache.state: the conv's last conv_kernel - 1 inputs
 * [K - 1, W]; .recurrent: s [W]) are read and rewritten by every step with caches. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/act.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"

int64_t kvci_rglru_floats(const kvc_model_config *c, int64_t Tm) {
    bool any = false;
    for (int64_t l = 0; l < c->num_layers; l++) any |= c->layer_rglru[l];
    if (!any) return 1;
    return Tm * 5 * c->lru_width + 2 * c->lru_width; /* y, u, conv, gi, ga [Tm, W]; -8 softplus(param), s [W] */
}

void kvci_rglru_token(const float *u, const float *gi, const float *ga, const float *neg8_sp, int64_t W, bool reset,
                      float *s, float *out) {
    for (int64_t j = 0; j < W; j++) {
        const float rg = 1.0f / (1.0f + expf(-ga[j])), ig = 1.0f / (1.0f + expf(-gi[j]));
        const float log_a = neg8_sp[j] * rg;
        const float x = u[j] * ig;
        s[j] = reset ? x : expf(log_a) * s[j] + x * sqrtf(1.0f - expf(2.0f * log_a));
        out[j] = s[j];
    }
}

/* Both gates' pre-activations of n tokens u [n, W]: per block h, g[t, h bw + j] = b[h, j] + sum_i u[t, h bw + i]
 * w[h, i, j] (transformers' baddbmm: the block's row times its [bw, bw] weight, not transposed). */
static void block_gates(const float *u, int64_t n, int64_t W, int64_t nh, const float *w, const float *b, float *g) {
    const int64_t bw = W / nh;
#pragma omp parallel for schedule(static) if (n * W * bw >= (1 << 16))
    for (int64_t t = 0; t < n; t++)
        for (int64_t h = 0; h < nh; h++) {
            float *o = g + t * W + h * bw;
            const float *x = u + t * W + h * bw, *wh = w + h * bw * bw;
            memcpy(o, b + h * bw, (size_t)bw * sizeof(float));
            for (int64_t i = 0; i < bw; i++)
                for (int64_t j = 0; j < bw; j++) o[j] += x[i] * wh[i * bw + j];
        }
}

kvc_status kvci_rglru(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const kvc_step_metadata *md = s->md;
    const int64_t T = s->T, Tm = s->ws->max_tokens, W = c->lru_width;
    float *y = s->ws->gdn, *u = y + Tm * W, *cv = u + Tm * W, *gi = cv + Tm * W, *ga = gi + Tm * W;
    float *neg8_sp = ga + Tm * W, *own = neg8_sp + W;
    double t0 = kvci_sp_begin();
    const kvc_wmat *mats[2] = {&w->rg_y, &w->conv_in};
    const float *bias[2] = {w->rg_y_b, w->conv_in_b};
    float *outs[2] = {y, u};
    KVC_TRY(kvci_linear_shared(s->ws->xn, T, 2, mats, bias, outs));
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    for (int64_t j = 0; j < W; j++) neg8_sp[j] = -8.0f * kvci_softplus(w->rg_a_param[j]);
    const kvc_layer_cache *lc = s->a->caches ? &s->a->caches->layers[l] : NULL;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        float *conv = NULL, *st = NULL;
        if (lc) KVC_TRY(kvci_row_states(s, l, r, &conv, &st));
        const int64_t n = md->cu_seq_lens_q[r] - q0;
        const bool fresh = md->seq_lens_kv[r] == n; /* the row starts its sequence in this step */
        kvci_causal_conv(u + q0 * W, W, n, W, w->conv_w, c->conv_kernel, w->conv_b, conv, fresh, cv + q0 * W);
        block_gates(cv + q0 * W, n, W, c->num_heads, w->rg_in_w, w->rg_in_b, gi + q0 * W);
        block_gates(cv + q0 * W, n, W, c->num_heads, w->rg_a_w, w->rg_a_b, ga + q0 * W);
        float *h = st ? st : own;
        if (!st || fresh) memset(h, 0, (size_t)W * sizeof(float));
        for (int64_t t = q0; t < q0 + n; t++)
            kvci_rglru_token(cv + t * W, gi + t * W, ga + t * W, neg8_sp, W, md->positions[t] == 0, h, cv + t * W);
        q0 += n;
    }
    for (int64_t i = 0; i < T * W; i++) cv[i] = kvci_gelu_mul(y[i], cv[i]);
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(cv, T, &w->wo, w->bo, s->ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
