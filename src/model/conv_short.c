/* LFM2's short-convolution layer (Lfm2ShortConv): in_proj of the normed input into B, C, x [T, 3H];
 * Bx = B * x; a causal depthwise convolution over each row's time, tap j of channel c reading the input
 * L - 1 - j steps back (L = conv_kernel; before a row's first token: its conv state, or zeros when the row
 * starts its sequence); y = C * conv; out_proj. The state, the row's last L - 1 inputs per channel, is kept
 * in the layer's cache (kvc_layer_cache.state) and rewritten by every step. Each output element is one
 * fixed-order sum on one thread, whatever the step's rows or chunks: a sequence's bits do not depend on how
 * it was split into steps or batched. */
#include <string.h>

#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"

void kvci_causal_conv(const float *in, int64_t stride, int64_t n, int64_t C, const float *taps, int64_t L,
                      const float *bias, float *st, bool fresh, float *out) {
    const int64_t S = L - 1;
    for (int64_t t = 0; t < n; t++)
        for (int64_t ch = 0; ch < C; ch++) {
            const float *w = taps + ch * L;
            float acc = 0.0f;
            for (int64_t j = 0; j < L; j++) {
                const int64_t src = t - S + j; /* < 0: the state's column S + src */
                const float x = src >= 0 ? in[src * stride + ch] : st && !fresh ? st[(S + src) * C + ch] : 0.0f;
                acc += w[j] * x;
            }
            if (bias) acc += bias[ch];
            out[t * C + ch] = acc;
        }
    if (!st) return;
    if (fresh) memset(st, 0, (size_t)(S * C) * sizeof(float)); /* a new sequence: zeros before its first input */
    const int64_t keep = n < S ? S - n : 0;                    /* old columns that stay, moved to the front */
    memmove(st, st + (S - keep) * C, (size_t)(keep * C) * sizeof(float));
    for (int64_t i = keep; i < S; i++) /* src = n - S + i >= 0: keep > 0 only when n < S */
        memcpy(st + i * C, in + (n - S + i) * stride, (size_t)C * sizeof(float));
}

/* The conv of one row: bcx [n, 3W] (Bx in place of x; W the conv channels, hidden_size or a rank's share), its state
 * st [L - 1, W] (NULL: zeros), outputs y [n, W] = C * conv; then st holds the row's last L - 1 inputs (when the row
 * has a state). */
static void conv_row(const kvc_model_config *c, const kvc_layer_weights *w, float *bcx, int64_t n, float *st,
                     bool fresh, float *y) {
    const int64_t H = kvci_conv_channels(c);
    kvci_causal_conv(bcx + 2 * H, 3 * H, n, H, w->conv_w, c->conv_kernel, w->conv_b, st, fresh, y);
    for (int64_t t = 0; t < n; t++)
        for (int64_t ch = 0; ch < H; ch++) y[t * H + ch] *= bcx[t * 3 * H + H + ch];
}

kvc_status kvci_conv_short(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const kvc_step_metadata *md = s->md;
    const int64_t T = s->T, H = kvci_conv_channels(c); /* the conv channels: hidden_size, or a rank's share */
    float *bcx = ws->fused;                            /* [T, 3H]: B | C | x, x then Bx */
    double t0 = kvci_sp_begin();
    KVC_TRY(kvci_linear(ws->xn, T, &w->conv_in, w->conv_in_b, bcx));
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    for (int64_t t = 0; t < T; t++)
        for (int64_t ch = 0; ch < H; ch++) bcx[t * 3 * H + 2 * H + ch] *= bcx[t * 3 * H + ch];
    const kvc_layer_cache *lc = s->a->caches ? &s->a->caches->layers[l] : NULL;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        float *st = NULL;
        if (lc) KVC_TRY(kvci_row_state(s, lc, &lc->state, l, r, &st));
        const int64_t n = md->cu_seq_lens_q[r] - q0;
        /* y over ws->xn, whose rows the in_proj has read */
        conv_row(c, w, bcx + q0 * 3 * H, n, st, md->seq_lens_kv[r] == n, ws->xn + q0 * H);
        q0 += n;
    }
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(ws->xn, T, &w->wo, w->bo, ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
