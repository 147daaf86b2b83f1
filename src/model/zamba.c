/* Zamba's and Zamba2's layers, as transformers 5.25's Zamba(2)MambaDecoderLayer and Zamba(2)HybridLayer compute
 * them: every layer's mixer (Zamba: Mamba-1, mamba1.c; Zamba2: Mamba2, mamba2.c) reads its input_layernorm of h and
 * adds into h; a hybrid layer first runs the shared block of its use site i (block i % num_mem_blocks, its weights in
 * the block's first site's struct):
 *   x = RMSNorm_2H([h | e])            (e: the step's embeddings, kept by layer 0 before any residual add)
 *   q, k, v = W x (+ B_i A_i x each under shared_attn_adapter), RoPE unless layer_nope, attention over the site's
 *   own K/V (the layer's cache) at scale (head_dim / 2)^-1/2, o_proj
 *   y = RMSNorm_H(o);  g | u = W_gu y (+ B_i A_i y: Zamba2's adapter);  S = down(act(g) * u)
 * and the mixer then reads RMSNorm(h + linear(S)) instead of RMSNorm(h); its residual stays h. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"
#include "ops/write_internal.h"

/* The scratch: emb [T, H], x [T, 2H], lo [T, r] (an adapter's A x), ad [T, W] (its B lo), W the widest output
 * (Zamba: no adapters, r = W = 0). */
typedef struct scratch {
    float *emb, *x, *lo, *ad;
} scratch;

static int64_t ad_width(const kvc_model_config *c) {
    const int64_t nq = c->num_heads * c->head_dim, nk = c->num_kv_heads * c->head_dim;
    return kvci_max64(kvci_max64(2 * c->hidden_size, 2 * c->intermediate_size), kvci_max64(nq, nk));
}

int64_t kvci_zamba_scratch(const kvc_model_config *c, int64_t tokens) {
    return tokens * (3 * c->hidden_size + (c->adapter_rank > 0 ? c->adapter_rank + ad_width(c) : 0));
}

static scratch scratch_of(const kvc_fwd_step *s) {
    const kvc_model_config *c = &s->m->cfg;
    const int64_t Tm = s->ws->max_tokens, H = c->hidden_size;
    scratch x = {.emb = s->ws->zamba};
    x.x = x.emb + Tm * H, x.lo = x.x + Tm * 2 * H, x.ad = x.lo + Tm * c->adapter_rank;
    return x;
}

/* y [T, n] += B (A x): adapter j of the use site w over x [T, in]. */
static kvc_status add_adapter(const kvc_layer_weights *w, int j, const float *x, int64_t T, const scratch *sc,
                              float *y) {
    KVC_TRY(kvci_linear(x, T, &w->zamba_ad_a[j], NULL, sc->lo));
    KVC_TRY(kvci_linear(sc->lo, T, &w->zamba_ad_b[j], NULL, sc->ad));
    const int64_t n = T * w->zamba_ad_b[j].rows;
    for (int64_t i = 0; i < n; i++) y[i] += sc->ad[i];
    return KVC_OK;
}

/* The block's attention of site w over [h | emb]: ws->proj [T, H]. */
static kvc_status shared_attention(const kvc_fwd_step *s, int64_t l, const kvc_layer_weights *b,
                                   const kvc_layer_weights *w, const scratch *sc) {
    const kvc_model_config *c = &s->m->cfg;
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, nH = c->num_heads, nKV = c->num_kv_heads, D = c->head_dim;
    for (int64_t t = 0; t < T; t++) {
        memcpy(sc->x + t * 2 * H, ws->h + t * H, (size_t)H * sizeof(float));
        memcpy(sc->x + t * 2 * H + H, sc->emb + t * H, (size_t)H * sizeof(float));
    }
    kvci_rmsnorm_rows_threads(sc->x, T, 2 * H, 2 * H, b->post_norm, (float)c->rms_norm_eps, sc->x);
    const kvc_wmat *m[3] = {&b->wq, &b->wk, &b->wv};
    const float *const bias[3] = {NULL, NULL, NULL};
    float *const y[3] = {ws->q, ws->k, ws->v}; /* [T, nH, D], [T, nKV, D] x 2 */
    KVC_TRY(kvci_linear_shared(sc->x, T, 3, m, bias, y));
    for (int j = 0; c->shared_attn_adapter && j < 3; j++) KVC_TRY(add_adapter(w, j, sc->x, T, sc, y[j]));
    if (!c->layer_nope[l]) { /* use_mem_rope */
        kvci_fwd_rope(s, ws->q, nH, D, nH * D);
        kvci_fwd_rope(s, ws->k, nKV, D, nKV * D);
    }
    const kvc_attn_call call = {.layer = l,
                                .q = ws->q,
                                .k = ws->k,
                                .v = ws->v,
                                .nH = nH,
                                .nKV = nKV,
                                .D = D,
                                .Dv = D,
                                .scale = kvc_model_attn_scale(c),
                                .out = ws->att};
    KVC_TRY(kvci_attn_core(s, &call));
    return kvci_linear(ws->att, T, &b->wo, NULL, ws->proj);
}

/* The block's MLP of site w over ws->proj: ws->proj [T, H]. */
static kvc_status shared_mlp(const kvc_fwd_step *s, const kvc_layer_weights *b, const kvc_layer_weights *w,
                             const scratch *sc) {
    const kvc_model_config *c = &s->m->cfg;
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, I = c->intermediate_size;
    float *g = ws->ff_a, *u = ws->ff_b; /* [T, I] each */
    kvci_rmsnorm_rows_threads(ws->proj, T, H, H, b->pre_ff_norm, (float)c->rms_norm_eps, ws->xn);
    const kvc_wmat *m[2] = {&b->w_gate, &b->w_up};
    const float *const bias[2] = {NULL, NULL};
    float *const y[2] = {g, u};
    KVC_TRY(kvci_linear_shared(ws->xn, T, 2, m, bias, y));
    if (c->adapter_rank > 0) { /* Zamba2's site adapter: [T, 2I], gate | up */
        KVC_TRY(kvci_linear(ws->xn, T, &w->zamba_ad_a[3], NULL, sc->lo));
        KVC_TRY(kvci_linear(sc->lo, T, &w->zamba_ad_b[3], NULL, sc->ad));
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < I; i++) {
                g[t * I + i] += sc->ad[t * 2 * I + i];
                u[t * I + i] += sc->ad[t * 2 * I + I + i];
            }
    }
    kvci_act_rows(c->shared_act, g, T, I);
    for (int64_t i = 0; i < T * I; i++) g[i] *= u[i];
    return kvci_linear(g, T, &b->w_down, NULL, ws->proj);
}

static kvc_status mixer(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_mamba1[l] ? kvci_mamba1_mixer(s, l) : kvci_mamba2_mixer(s, l);
}

kvc_status kvci_zamba_layer(const kvc_fwd_step *s, int64_t l) {
    const kvc_model *m = s->m;
    const kvc_model_config *c = &m->cfg;
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size;
    const scratch sc = scratch_of(s);
    if (l == 0) memcpy(sc.emb, ws->h, (size_t)(T * H) * sizeof(float)); /* h is still the embeddings */
    if (!c->layer_shared_block[l]) return mixer(s, l);
    int64_t first = l;
    (void)kvci_zamba_site(c, l, &first);
    const kvc_layer_weights *b = &m->layers[first], *w = &m->layers[l];
    KVC_TRY(shared_attention(s, l, b, w, &sc));
    KVC_TRY(shared_mlp(s, b, w, &sc));
    KVC_TRY(kvci_linear(ws->proj, T, &w->zamba_linear, NULL, ws->xn));
    for (int64_t i = 0; i < T * H; i++) ws->xn[i] += ws->h[i];
    kvci_rmsnorm_rows_threads(ws->xn, T, H, H, w->in_norm, (float)c->rms_norm_eps, ws->xn);
    return mixer(s, l);
}
