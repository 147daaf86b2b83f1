/* RWKV-4's mixers (transformers' RwkvSelfAttention and RwkvFeedForward, their CPU recurrence) in place of attention
 * and the MLP. Both read the normed input x [T, H] (ws->xn) and its token shift: the previous token's x of the same row
 * (before the row's first token the layer's shift state, zeros when the row starts its sequence), mixed per channel
 * as x m + prev (1 - m). Time mixing: k = key(mix_k), v = value(mix_v), r = sigmoid(receptance(mix_r)) [H] each; per
 * channel the WKV recurrence over a numerator, denominator and running maximum (kvci_rwkv_wkv_token); out = output(r
 * wkv). Channel mixing: out = sigmoid(receptance(mix_r)) value(relu(key(mix_k))^2). With rwkv_rescale_every N, layer
 * l's outputs are divided by 2^(l / N), as transformers divides output.weight and value.weight in eval mode (by a
 * power of two: the same bits). The states (kvc_layer_cache.state [2, H]: the last x of each mixer, .recurrent [3, H]:
 * num, den, max) are read and rewritten by every step with caches. Each channel's recurrence runs in token order on
 * one thread, whatever the step's rows or chunks. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"

/* transformers' initial running maximum (RwkvModel's state[4] -= 1e30): exp of it minus any finite key is 0 */
#define RWKV_MAX0 (-1e30f)

int64_t kvci_rwkv_scratch(const kvc_model_config *c, int64_t tokens) {
    const int64_t H = c->hidden_size, I = c->intermediate_size;
    /* 3 mixed inputs [T, H]; k, v, r, wkv [T, H] or the channel mix's k [T, I] and r [T, H]; a row's own states */
    return tokens * (3 * H + kvci_max64(4 * H, I + H)) + 5 * H;
}

void kvci_rwkv_wkv_token(float *st, int64_t H, int64_t i, float decay, float first, float k, float v, float *out) {
    float *num = st + i, *den = st + H + i, *mx = st + 2 * H + i;
    const float ww = first + k, p = fmaxf(*mx, ww);
    float e1 = expf(*mx - p), e2 = expf(ww - p);
    *out = (e1 * *num + e2 * v) / (e1 * *den + e2);
    const float wd = *mx + decay, q = fmaxf(wd, k);
    e1 = expf(wd - q), e2 = expf(k - q);
    *num = e1 * *num + e2 * v;
    *den = e1 * *den + e2;
    *mx = q;
}

/* out[n][H] (n mixes) = x m + prev (1 - m) for the row of tokens [q0, q0 + n) of x [T, H]; shift [H]: the token
 * before q0 (fresh: zeros), rewritten with the row's last x. */
static void token_shift(const float *x, int64_t q0, int64_t n, int64_t H, float *shift, bool fresh,
                        const float *const *mix, int n_mix, float *const *out) {
    if (fresh) memset(shift, 0, (size_t)H * sizeof(float));
#pragma omp parallel for schedule(static) if (n * H >= (1 << 14))
    for (int64_t t = q0; t < q0 + n; t++) {
        const float *cur = x + t * H, *prev = t == q0 ? shift : cur - H;
        for (int j = 0; j < n_mix; j++)
            for (int64_t i = 0; i < H; i++) out[j][t * H + i] = cur[i] * mix[j][i] + prev[i] * (1.0f - mix[j][i]);
    }
    memcpy(shift, x + (q0 + n - 1) * H, (size_t)H * sizeof(float));
}

/* 2^-(l / N) of layer l (1: no rescaling). */
static float layer_scale(const kvc_model_config *c, int64_t l) {
    return c->rwkv_rescale_every > 0 ? ldexpf(1.0f, -(int)(l / c->rwkv_rescale_every)) : 1.0f;
}

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

kvc_status kvci_rwkv_time_mix(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const kvc_step_metadata *md = s->md;
    const int64_t T = s->T, H = c->hidden_size;
    float *mk = s->ws->mamba, *mv = mk + T * H, *mr = mv + T * H;          /* [T, H] each */
    float *k = mr + T * H, *v = k + T * H, *r = v + T * H, *y = r + T * H; /* [T, H] each */
    float *own = s->ws->mamba + kvci_rwkv_scratch(c, T) - 5 * H;           /* [2, H] + [3, H] */
    double t0 = kvci_sp_begin();
    int64_t q0 = 0;
    for (int64_t r0 = 0; r0 < md->n_rows; r0++) { /* the token shift of every row, its state carried */
        float *shift = NULL, *wkv = NULL;
        KVC_TRY(kvci_row_states(s, l, r0, &shift, &wkv));
        if (!shift) shift = own;
        const int64_t n = md->cu_seq_lens_q[r0] - q0;
        const float *mix[3] = {w->rwkv_mix[0], w->rwkv_mix[1], w->rwkv_mix[2]};
        float *const out[3] = {mk, mv, mr};
        token_shift(s->ws->xn, q0, n, H, shift, md->seq_lens_kv[r0] == n, mix, 3, out);
        q0 += n;
    }
    const kvc_wmat *mats[3] = {&w->wk, &w->wv, &w->wq};
    const float *ins[3] = {mk, mv, mr};
    float *outs[3] = {k, v, r};
    for (int j = 0; j < 3; j++) KVC_TRY(kvci_linear(ins[j], T, mats[j], NULL, outs[j]));
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    q0 = 0;
    for (int64_t r0 = 0; r0 < md->n_rows; r0++) {
        float *shift = NULL, *wkv = NULL;
        KVC_TRY(kvci_row_states(s, l, r0, &shift, &wkv));
        if (!wkv) wkv = own + 2 * H;
        const int64_t n = md->cu_seq_lens_q[r0] - q0;
        const bool fresh = md->seq_lens_kv[r0] == n; /* always so without caches (the forward's check) */
#pragma omp parallel for schedule(static) if (n * H >= (1 << 12))
        for (int64_t i = 0; i < H; i++) {
            const float decay = -expf(w->rwkv_decay[i]), first = w->rwkv_first[i];
            if (fresh) wkv[i] = wkv[H + i] = 0.0f, wkv[2 * H + i] = RWKV_MAX0;
            for (int64_t t = q0; t < q0 + n; t++)
                kvci_rwkv_wkv_token(wkv, H, i, decay, first, k[t * H + i], v[t * H + i], &y[t * H + i]);
        }
        q0 += n;
    }
    for (int64_t i = 0; i < T * H; i++) y[i] *= sigmoid(r[i]);
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(y, T, &w->wo, NULL, s->ws->proj);
    const float scale = layer_scale(c, l);
    if (scale != 1.0f)
        for (int64_t i = 0; i < T * H; i++) s->ws->proj[i] *= scale;
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}

kvc_status kvci_rwkv_channel_mix(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const kvc_step_metadata *md = s->md;
    const int64_t T = s->T, H = c->hidden_size, I = c->intermediate_size;
    float *mk = s->ws->mamba, *mr = mk + T * H, *k = mr + T * H, *r = k + T * I; /* [T, H], [T, H], [T, I], [T, H] */
    float *own = s->ws->mamba + kvci_rwkv_scratch(c, T) - 5 * H;
    int64_t q0 = 0;
    for (int64_t r0 = 0; r0 < md->n_rows; r0++) {
        float *shift = NULL, *wkv = NULL;
        KVC_TRY(kvci_row_states(s, l, r0, &shift, &wkv));
        shift = shift ? shift + H : own + H; /* the channel mix's row of the shift state */
        const int64_t n = md->cu_seq_lens_q[r0] - q0;
        const float *mix[2] = {w->rwkv_mix[3], w->rwkv_mix[4]};
        float *const out[2] = {mk, mr};
        token_shift(s->ws->xn, q0, n, H, shift, md->seq_lens_kv[r0] == n, mix, 2, out);
        q0 += n;
    }
    KVC_TRY(kvci_linear(mk, T, &w->w_up, NULL, k));
    for (int64_t i = 0; i < T * I; i++) k[i] = k[i] > 0.0f ? k[i] * k[i] : 0.0f;
    KVC_TRY(kvci_linear(mr, T, &w->w_gate, NULL, r));
    KVC_TRY(kvci_linear(k, T, &w->w_down, NULL, s->ws->proj));
    const float scale = layer_scale(c, l);
    for (int64_t i = 0; i < T * H; i++) s->ws->proj[i] = sigmoid(r[i]) * s->ws->proj[i] * scale;
    return KVC_OK;
}
