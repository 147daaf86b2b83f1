/* Gemma 4's attention and per-layer inputs (family_gemma4.c's runtime): q/k norms before RoPE, each value head
 * RMS-normalised without a weight, the full layers' values from k_proj under attention_k_eq_v, the KV-shared layers
 * (kvci_model_kv_source) attending over their source layer's keys and values (its cache, or without caches the
 * step's rows it kept) and writing none; the per-layer inputs computed once per step and gated into each layer's
 * output, then the layer scalar. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"
#include "ops/write_internal.h"

/* Each of the n heads (D channels, rows T apart by `stride`) of x RMS-normalised without a weight (v_norm). */
static void rms_heads(float *x, int64_t T, int64_t n, int64_t D, int64_t stride, float eps) {
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < n; h++) {
            float *y = x + t * stride + h * D;
            const double inv = kvci_rms_inv(y, D, eps);
            for (int64_t i = 0; i < D; i++) y[i] = kvci_rms_scaled(y[i], inv, 1.0f);
        }
}

/* Whether a later layer reads layer l's keys and values (l a KV-shared layer's source). */
static bool is_source(const kvc_model_config *c, int64_t l) {
    for (int64_t j = c->num_layers - c->kv_shared_layers; j < c->num_layers; j++)
        if (j != l && kvci_model_kv_source(c, j) == l) return true;
    return false;
}

/* The kept rows of a kind (sliding 1, full 0) without caches: k [Tm, kw], then v [Tm, vw]. */
static float *kept(const kvc_model_workspace *ws, bool sliding) {
    return ws->kv_keep + (sliding ? 1 : 0) * ws->max_tokens * (ws->kw + ws->vw);
}

/* q [T, nH, D], k [T, nKV, D], v [T, nKV, D] of layer l (its own shape) from ws->xn: normalised, rotated (not v). */
static kvc_status project(const kvc_fwd_step *s, int64_t l, bool own_kv) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const kvci_attn_shape sh = kvci_layer_shape(c, l);
    const int64_t T = s->T, nH = sh.nH, nKV = sh.nKV, D = sh.D;
    const bool k_as_v = own_kv && w->wv.data == NULL; /* attention_k_eq_v on a full layer */
    const kvc_wmat *m[3] = {&w->wq, &w->wk, &w->wv};
    const float *b[3] = {w->bq, w->bk, w->bv};
    float *y[3] = {ws->q, ws->k, ws->v};
    KVC_TRY(kvci_linear_shared(ws->xn, T, own_kv ? (k_as_v ? 2 : 3) : 1, m, b, y));
    if (k_as_v) memcpy(ws->v, ws->k, (size_t)(T * nKV * D) * sizeof(float));
    for (int64_t t = 0; t < T; t++) {
        kvci_fwd_norm_rope_token(s, t, ws->q + t * nH * D, nH, D, w->q_norm, NULL, true);
        if (own_kv) kvci_fwd_norm_rope_token(s, t, ws->k + t * nKV * D, nKV, D, w->k_norm, NULL, true);
    }
    if (own_kv) rms_heads(ws->v, T, nKV, D, nKV * D, (float)c->rms_norm_eps);
    return KVC_OK;
}

kvc_status kvci_attn_gemma4(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const kvci_attn_shape sh = kvci_layer_shape(c, l); /* a KV-shared layer's is its source's */
    const int64_t T = s->T, nKV = sh.nKV, D = sh.D, src = kvci_model_kv_source(c, l);
    const bool own_kv = src == l, sliding = c->layer_sliding[l];
    double t0 = kvci_sp_begin();
    KVC_TRY(project(s, l, own_kv));
    kvci_sp_end(KVC_SP_QKV, t0);
    kvc_attn_call call = {.layer = src,
                          .q = ws->q,
                          .k = ws->k,
                          .v = ws->v,
                          .nH = sh.nH,
                          .nKV = nKV,
                          .D = D,
                          .Dv = D,
                          .scale = kvci_layer_attn_scale(c, l),
                          .window = sliding ? c->sliding_window : 0,
                          .out = ws->att};
    kvc_status st = KVC_OK;
    if (own_kv) {
        st = kvci_attn_core(s, &call);
        if (st == KVC_OK && !s->a->caches && is_source(c, l)) { /* kept for the layers that read it */
            memcpy(kept(ws, sliding), ws->k, (size_t)(T * nKV * D) * sizeof(float));
            memcpy(kept(ws, sliding) + ws->max_tokens * ws->kw, ws->v, (size_t)(T * nKV * D) * sizeof(float));
        }
    } else if (s->a->caches) { /* the source's cache holds this step's rows already */
        t0 = kvci_sp_begin();
        st = kvci_attn_cached(s, &call);
        kvci_sp_end(KVC_SP_ATTN, t0);
    } else {
        call.k = kept(ws, sliding), call.v = kept(ws, sliding) + ws->max_tokens * ws->kw;
        st = kvci_attn_core(s, &call);
    }
    if (st != KVC_OK) return st;
    t0 = kvci_sp_begin();
    st = kvci_linear(ws->att, T, &w->wo, w->bo, ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}

kvc_status kvci_gemma4_per_layer_inputs(const kvc_model *m, kvc_model_workspace *ws, const int32_t *ids, int64_t T) {
    const kvc_model_config *c = &m->cfg;
    const int64_t H = c->hidden_size, P = c->ple_dim, LP = c->num_layers * P;
    const float tok_scale = sqrtf((float)P), proj_scale = (float)(1.0 / sqrt((double)H));
    const float mix = (float)(1.0 / sqrt(2.0)), eps = (float)c->rms_norm_eps;
    /* ws->ple [T, L P] = RMSNorm(per_layer_model_projection(h) * H^-1/2) per layer, the embeddings scaled by
     * sqrt(H) (ws->h as embedded) */
    KVC_TRY(kvci_linear(ws->h, T, &m->ple_model_proj, NULL, ws->ple));
    for (int64_t i = 0; i < T * LP; i++) ws->ple[i] *= proj_scale;
    kvci_rmsnorm_rows(ws->ple, T * c->num_layers, P, P, m->ple_proj_norm, eps);
    for (int64_t t = 0; t < T; t++) {
        float *row = ws->ple + t * LP, *tok = ws->ple_a;                       /* tok [L P] */
        kvci_wmat_row(&m->ple_embed, ids[t] < c->ple_vocab ? ids[t] : 0, tok); /* Gemma 3n: beyond the table, 0 */
        for (int64_t i = 0; i < LP; i++) row[i] = (row[i] + tok[i] * tok_scale) * mix;
    }
    return KVC_OK;
}

kvc_status kvci_gemma4_layer_tail(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, P = c->ple_dim, LP = c->num_layers * P;
    if (P > 0) { /* h += norm(per_layer_projection(gelu(per_layer_input_gate(h)) * ple[:, l])) */
        KVC_TRY(kvci_linear(ws->h, T, &w->ple_gate, NULL, ws->ple_a));
        kvci_act_rows(c->mlp_act, ws->ple_a, T, P);
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < P; i++) ws->ple_a[t * P + i] *= ws->ple[t * LP + l * P + i];
        KVC_TRY(kvci_linear(ws->ple_a, T, &w->ple_proj, NULL, ws->proj));
        kvci_rmsnorm_rows(ws->proj, T, H, H, w->ple_norm, (float)c->rms_norm_eps);
        for (int64_t i = 0; i < T * H; i++) ws->h[i] += ws->proj[i];
    }
    if (w->scalar != NULL)
        for (int64_t i = 0; i < T * H; i++) ws->h[i] *= w->scalar[0];
    return KVC_OK;
}

kvc_status kvci_gemma4_ffn(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size;
    const float eps = (float)c->rms_norm_eps, root = (float)(1.0 / sqrt((double)H));
    KVC_TRY(kvci_fwd_dense_mlp(s, l));
    if (!c->layer_moe[l]) return KVC_OK;
    /* proj = post_feedforward_layernorm_1(mlp) + post_feedforward_layernorm_2(experts(pre_feedforward_layernorm_2(h)))
     * routed by router.proj(rms(h) * router.scale * H^-1/2); xn (the MLP's input) is free again */
    kvci_rmsnorm_rows(ws->proj, T, H, H, w->mlp_out_norm, eps);
    for (int64_t t = 0; t < T; t++) {
        const float *h = ws->h + t * H;
        float *x = ws->xn + t * H;
        const double inv = kvci_rms_inv(h, H, eps);
        for (int64_t j = 0; j < H; j++) x[j] = kvci_rms_scaled(h[j], inv, 1.0f) * w->router_scale[j] * root;
    }
    KVC_TRY(kvci_linear(ws->xn, T, &w->gate_w, NULL, ws->router));
    kvci_rmsnorm_rows_to(ws->h, T, H, H, w->moe_in_norm, eps, ws->xn);
    KVC_TRY(kvci_ffn_gemma4_experts(s, l, ws->xn));
    kvci_rmsnorm_rows(ws->acc, T, H, H, w->moe_out_norm, eps);
    for (int64_t i = 0; i < T * H; i++) ws->proj[i] += ws->acc[i];
    return KVC_OK;
}
