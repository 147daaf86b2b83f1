/* Feed-forward sub-layers: dense SwiGLU (MF 1.6), the GptOss router and
 * clamped-SwiGLU experts (MF 3.3-3.4), the DeepseekV3 grouped sigmoid router
 * with routed and shared experts (MF 4.5), DeepseekV2's grouped softmax one, the softmax router of Qwen3-MoE,
 * Qwen2-MoE, Mixtral and OLMoE, Granite MoE's (GptOss's) and Llama 4's sigmoid router (its scores scaling the
 * experts' inputs, a shared expert beside) ERNIE 4.5 MoE's bias-corrected softmax one and Phi-3.5-MoE's SparseMixer
 * over the same SwiGLU experts. Experts run over the tokens
 * routed to them (gathered rows, one GEMM per expert); each token's expert outputs
 * are summed in expert-index order. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "ops/write_internal.h"
#include "model/step_profile.h"

#define DS_MAX_GROUPS 256

kvc_status kvci_swiglu_mlp(kvc_mlp_act act, const float *x, int64_t n, const kvc_wmat *g, const float *bg,
                           const kvc_wmat *u, const float *bu, const kvc_wmat *d, const float *bd, float *ga, float *gb,
                           float *out) {
    const int64_t I = g->rows;
    const kvc_wmat *w[2] = {g, u};
    const float *b[2] = {bg, bu};
    float *y[2] = {ga, gb};
    double t0 = kvci_sp_begin();
    KVC_TRY(kvci_linear_shared(x, n, 2, w, b, y));
    kvci_sp_end(KVC_SP_GATE_UP, t0), t0 = kvci_sp_begin();
    kvci_glu(act, ga, gb, n, I, I, ga, I);
    kvci_sp_end(KVC_SP_SWIGLU, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(ga, n, d, bd, out);
    kvci_sp_end(KVC_SP_DOWN, t0);
    return st;
}

kvc_status kvci_plain_mlp(kvc_mlp_act act, const float *const *xielu, const float *x, int64_t n, const kvc_wmat *up,
                          const float *bu, const kvc_wmat *down, const float *bd, float *a, float *out) {
    double t0 = kvci_sp_begin();
    KVC_TRY(kvci_linear(x, n, up, bu, a));
    kvci_sp_end(KVC_SP_GATE_UP, t0), t0 = kvci_sp_begin();
    if (act == KVC_MLP_XIELU)
        kvci_xielu_rows(xielu, a, n, up->rows);
    else
        kvci_act_rows(act, a, n, up->rows);
    kvci_sp_end(KVC_SP_SWIGLU, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(a, n, down, bd, out);
    kvci_sp_end(KVC_SP_DOWN, t0);
    return st;
}

/* Indices of the k largest of v[0..n) into idx (ties: lower index first). */
static void top_k(const float *v, int64_t n, int64_t k, int32_t *idx) {
    for (int64_t j = 0; j < k; j++) {
        int32_t best = -1;
        for (int64_t e = 0; e < n; e++) {
            bool taken = false;
            for (int64_t q = 0; q < j; q++) taken |= idx[q] == (int32_t)e;
            if (!taken && (best < 0 || v[e] > v[best])) best = (int32_t)e;
        }
        idx[j] = best;
    }
}

/* Gathers the tokens that chose expert e (their rows of x [T, H]): ws->tok / ws->tokw, returns their count. */
static int64_t gather(kvc_model_workspace *ws, const float *x, int64_t T, int64_t K, int64_t H, int32_t e) {
    int64_t n = 0;
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < K; j++)
            if (ws->sel[t * K + j] == e) {
                ws->tok[n] = (int32_t)t;
                ws->tokw[n] = ws->selw[t * K + j];
                memcpy(ws->xg + n * H, x + t * H, (size_t)H * sizeof(float));
                n++;
            }
    return n;
}

static void scatter_add(kvc_model_workspace *ws, int64_t n, int64_t H) {
    for (int64_t i = 0; i < n; i++) {
        float *dst = ws->acc + (int64_t)ws->tok[i] * H;
        const float w = ws->tokw[i], *y = ws->yg + i * H;
        for (int64_t j = 0; j < H; j++) dst[j] += w * y[j];
    }
}

void kvci_top_k_softmax(const float *lg, int64_t E, int64_t K, int32_t *sel, float *sw) {
    top_k(lg, E, K, sel);
    float mx = lg[sel[0]], den = 0.0f;
    for (int64_t j = 0; j < K; j++) den += (sw[j] = expf(lg[sel[j]] - mx));
    for (int64_t j = 0; j < K; j++) sw[j] /= den;
}

kvc_status kvci_ffn_gpt_oss(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, E = c->num_experts, K = c->experts_per_tok, I = c->intermediate_size;
    const float lim = (float)c->swiglu_limit, alpha = (float)c->swiglu_alpha;
    KVC_TRY(kvci_linear(ws->xn, T, &w->router_w, w->router_b, ws->router)); /* [T, E] */
    for (int64_t t = 0; t < T; t++) kvci_top_k_softmax(ws->router + t * E, E, K, ws->sel + t * K, ws->selw + t * K);
    memset(ws->acc, 0, (size_t)(T * H) * sizeof(float));
    for (int32_t e = 0; e < (int32_t)E; e++) {
        const int64_t n = gather(ws, ws->xn, T, K, H, e);
        if (n == 0) continue;
        float *u = ws->ff_a; /* [n, 2I] gate/up interleaved */
        float *a = ws->ff_b; /* [n, I] */
        const kvc_wmat gu = kvci_wmat_at(&w->gu, e), dn = kvci_wmat_at(&w->dn, e);
        KVC_TRY(kvci_linear(ws->xg, n, &gu, w->gu_b + (int64_t)e * 2 * I, u));
        for (int64_t i = 0; i < n * I; i++) {
            float g = u[2 * i], up = u[2 * i + 1];
            g = g > lim ? lim : g;
            up = up > lim ? lim : (up < -lim ? -lim : up);
            a[i] = (up + 1.0f) * (g / (1.0f + expf(-alpha * g)));
        }
        KVC_TRY(kvci_linear(a, n, &dn, w->dn_b + (int64_t)e * H, ws->yg));
        scatter_add(ws, n, H);
    }
    memcpy(ws->proj, ws->acc, (size_t)(T * H) * sizeof(float));
    return KVC_OK;
}

/* Keeps the topk_group groups of the largest gscore [n_group] (ties: lower index first): the scores tmp [E] of the
 * other groups' experts become `out` (transformers': -inf for DeepSeek-V3 / GLM-4.5, whose kept experts may score
 * below 0; 0 for DeepSeek-V2's softmax scores). */
static void keep_top_groups(const kvc_model_config *c, const float *gscore, float out, float *tmp) {
    const int64_t G = c->n_group, per = c->n_routed_experts / G;
    int32_t gidx[DS_MAX_GROUPS];
    top_k(gscore, G, c->topk_group, gidx);
    for (int64_t g = 0; g < G; g++) {
        bool keep = false;
        for (int64_t j = 0; j < c->topk_group; j++) keep |= gidx[j] == (int32_t)g;
        if (!keep)
            for (int64_t e = g * per; e < (g + 1) * per; e++) tmp[e] = out;
    }
}

/* MF 4.5 router: sigmoid scores, bias-corrected group selection (the other groups' experts out: -inf; A.X-K2's
 * AXK2TopkRouter sets them to 0), weights from the unbiased scores, renormalised over their sum + 1e-20 (LFM2-MoE's:
 * + 1e-6). */
static void deepseek_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                           float *sw, float *tmp /* [E] */) {
    const int64_t E = c->n_routed_experts, G = c->n_group, per = E / G, K = c->experts_per_tok;
    float s[2]; /* top-2 per group */
    float gscore[DS_MAX_GROUPS];
    for (int64_t e = 0; e < E; e++) tmp[e] = 1.0f / (1.0f + expf(-logits[e])) + w->gate_corr[e];
    for (int64_t g = 0; g < G; g++) {
        s[0] = s[1] = -INFINITY;
        for (int64_t e = g * per; e < (g + 1) * per; e++) {
            if (tmp[e] > s[0])
                s[1] = s[0], s[0] = tmp[e];
            else if (tmp[e] > s[1])
                s[1] = tmp[e];
        }
        gscore[g] = s[0] + s[1];
    }
    keep_top_groups(c, gscore, strcmp(c->model_type, "axk2") == 0 ? 0.0f : -INFINITY, tmp);
    top_k(tmp, E, K, sel);
    float sum = 0.0f;
    const float tiny = c->family == KVC_FAMILY_LFM2 ? 1e-6f : 1e-20f;
    for (int64_t j = 0; j < K; j++) sum += (sw[j] = 1.0f / (1.0f + expf(-logits[sel[j]])));
    for (int64_t j = 0; j < K; j++) {
        if (c->norm_topk_prob) sw[j] /= (sum + tiny);
        sw[j] *= (float)c->routed_scaling_factor;
    }
}

/* softmax of the E router logits in f32 (HF's softmax(dim=-1, dtype=float32)) into p [E]. */
static void softmax_probs(const float *logits, int64_t E, float *p) {
    float mx = logits[0], den = 0.0f;
    for (int64_t e = 1; e < E; e++) mx = logits[e] > mx ? logits[e] : mx;
    for (int64_t e = 0; e < E; e++) den += (p[e] = expf(logits[e] - mx));
    for (int64_t e = 0; e < E; e++) p[e] /= den;
}

/* DeepSeek-V2 router (HF DeepseekV2TopkRouter): softmax scores over all E experts; group_limited_greedy keeps the
 * topk_group of n_group groups whose largest score is highest (greedy: parsed as one group, which keeps all); the k
 * largest kept scores, each times routed_scaling_factor, never renormalised. */
static void deepseek_v2_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                              float *sw, float *tmp /* [E] */) {
    (void)w;
    const int64_t E = c->n_routed_experts, G = c->n_group, per = E / G, K = c->experts_per_tok;
    float gscore[DS_MAX_GROUPS];
    softmax_probs(logits, E, tmp);
    for (int64_t g = 0; g < G; g++) {
        gscore[g] = tmp[g * per];
        for (int64_t e = g * per + 1; e < (g + 1) * per; e++) gscore[g] = tmp[e] > gscore[g] ? tmp[e] : gscore[g];
    }
    keep_top_groups(c, gscore, 0.0f, tmp);
    top_k(tmp, E, K, sel);
    for (int64_t j = 0; j < K; j++) sw[j] = tmp[sel[j]] * (float)c->routed_scaling_factor;
}

/* LongCat-Flash's router (HF LongcatFlashTopkRouter): softmax over the E + Z logits (Z zero experts) in f32, the k
 * largest of the scores plus the correction bias, their unbiased scores times routed_scaling_factor (never
 * renormalised). */
static void longcat_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                          float *sw, float *tmp /* [2 (E + Z)] */) {
    const int64_t N = c->n_routed_experts + c->zero_experts, K = c->experts_per_tok;
    softmax_probs(logits, N, tmp);
    for (int64_t e = 0; e < N; e++) tmp[N + e] = tmp[e] + w->gate_corr[e];
    top_k(tmp + N, N, K, sel);
    for (int64_t j = 0; j < K; j++) sw[j] = tmp[sel[j]] * (float)c->routed_scaling_factor;
}

/* Qwen3-MoE / Qwen2-MoE / Mixtral router (HF Qwen3MoeTopKRouter, Qwen2MoeTopKRouter, MixtralTopKRouter): softmax over
 * all E logits in f32, the k largest probabilities (ties: lower index first, as top_k), divided by their sum when
 * norm_topk_prob (Mixtral always). */
static void softmax_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                          float *sw, float *tmp /* [E] */) {
    (void)w;
    const int64_t E = c->n_routed_experts, K = c->experts_per_tok;
    float sum = 0.0f;
    softmax_probs(logits, E, tmp);
    top_k(tmp, E, K, sel);
    for (int64_t j = 0; j < K; j++) sum += (sw[j] = tmp[sel[j]]);
    for (int64_t j = 0; c->norm_topk_prob && j < K; j++) sw[j] /= sum;
}

/* Granite MoE's router (GraniteMoeTopKRouter): the k largest logits, their softmax. */
static void granite_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                          float *sw, float *tmp) {
    (void)w, (void)tmp;
    kvci_top_k_softmax(logits, c->n_routed_experts, c->experts_per_tok, sel, sw);
}

/* Llama 4 router (HF Llama4Router) and Flint's (FlintTopKRouter): the k largest logits (ties: lower index first, as
 * top_k), each chosen expert's score the sigmoid of its logit in f32, over the k scores' sum when norm_topk_prob
 * (Flint's); Llama 4's routed_experts scales the expert's input by it (moe_sigmoid_input), not its output. */
static void sigmoid_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                          float *sw, float *tmp /* [E] */) {
    (void)w, (void)tmp;
    float sum = 0.0f;
    top_k(logits, c->n_routed_experts, c->experts_per_tok, sel);
    for (int64_t j = 0; j < c->experts_per_tok; j++) sum += (sw[j] = 1.0f / (1.0f + expf(-logits[sel[j]])));
    for (int64_t j = 0; c->norm_topk_prob && j < c->experts_per_tok; j++) sw[j] /= sum;
}

/* ERNIE 4.5 MoE router (HF Ernie4_5_MoeTopKRouter): softmax over all E logits in f32, the k largest of the
 * probabilities plus the correction bias (gate_corr [E]; ties: lower index first, as top_k), weighted by their
 * unbiased probabilities over max(their sum, moe_norm_min). */
static void ernie_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                        float *sw, float *tmp /* [2E] */) {
    const int64_t E = c->n_routed_experts, K = c->experts_per_tok;
    float *biased = tmp + E, sum = 0.0f;
    softmax_probs(logits, E, tmp);
    for (int64_t e = 0; e < E; e++) biased[e] = tmp[e] + w->gate_corr[e];
    top_k(biased, E, K, sel);
    for (int64_t j = 0; j < K; j++) sum += (sw[j] = tmp[sel[j]]);
    const float den = sum > (float)c->moe_norm_min ? sum : (float)c->moe_norm_min;
    for (int64_t j = 0; j < K; j++) sw[j] /= den;
}

/* Phi-3.5-MoE's router (HF sparsemixer in eval mode): two experts, whatever num_experts_per_tok says. The first is the
 * largest logit's m (ties: lower index first), weighted by its softmax probability among the logits s not masked by
 * (m - s) / max(|s|, m) > 2 router_jitter_noise (f32, the bound an f32); the second the same over the logits without
 * the first expert, m their largest. Never renormalised. */
static void phimoe_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                         float *sw, float *tmp) {
    (void)w, (void)tmp;
    const int64_t E = c->n_routed_experts;
    const float thr = (float)(2.0 * c->router_jitter_noise);
    for (int j = 0; j < 2; j++) {
        int32_t best = -1;
        for (int32_t e = 0; e < (int32_t)E; e++)
            if (!(j == 1 && e == sel[0]) && (best < 0 || logits[e] > logits[best])) best = e;
        const float m = logits[best];
        float den = 0.0f;
        for (int32_t e = 0; e < (int32_t)E; e++) {
            const float a = fabsf(logits[e]), f = a > m ? a : m;
            if (!(j == 1 && e == sel[0]) && !((m - logits[e]) / f > thr)) den += expf(logits[e] - m);
        }
        sel[j] = best, sw[j] = 1.0f / den;
    }
}

/* Kolibri 1's router (HF Kolibri1TopKRouter): the k largest logits plus the correction bias (gate_corr [E]; ties: lower
 * index first, as top_k), weighted by the sigmoids of their logits, divided by their sum when norm_topk_prob. */
static void kolibri_route(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                          float *sw, float *tmp /* [E] */) {
    const int64_t E = c->n_routed_experts, K = c->experts_per_tok;
    float sum = 0.0f;
    for (int64_t e = 0; e < E; e++) tmp[e] = logits[e] + w->gate_corr[e];
    top_k(tmp, E, K, sel);
    for (int64_t j = 0; j < K; j++) sum += (sw[j] = 1.0f / (1.0f + expf(-logits[sel[j]])));
    for (int64_t j = 0; c->norm_topk_prob && j < K; j++) sw[j] /= sum;
}

typedef void (*route_fn)(const kvc_model_config *c, const kvc_layer_weights *w, const float *logits, int32_t *sel,
                         float *sw, float *tmp);

/* HY V4's routed expert over the n rows of ws->xg into ws->yg: gate clamped above at swiglu_limit, up to [-limit,
 * limit], then down(silu(gate) up) (HYV4Experts; no alpha, no + 1 unlike GptOss). */
static kvc_status clamped_swiglu(const kvc_model_config *c, kvc_model_workspace *ws, int64_t n, const kvc_wmat *g,
                                 const kvc_wmat *u, const kvc_wmat *d) {
    const kvc_wmat *w[2] = {g, u};
    const float *b[2] = {NULL, NULL};
    float *y[2] = {ws->ff_a, ws->ff_b}; /* [n, I] each */
    const float lim = (float)c->swiglu_limit;
    KVC_TRY(kvci_linear_shared(ws->xg, n, 2, w, b, y));
    for (int64_t i = 0; i < n * g->rows; i++) {
        const float gv = fminf(ws->ff_a[i], lim), uv = fmaxf(fminf(ws->ff_b[i], lim), -lim);
        ws->ff_a[i] = gv / (1.0f + expf(-gv)) * uv;
    }
    return kvci_linear(ws->ff_a, n, d, NULL, ws->yg);
}

/* Expert e over the n rows gathered in ws->xg into ws->yg: SwiGLU (HY V4's clamped), or (ex_gate NULL: Nemotron-H's)
 * up, mlp_act, down. */
static kvc_status run_expert(const kvc_model_config *c, const kvc_layer_weights *w, kvc_model_workspace *ws, int32_t e,
                             int64_t n) {
    const kvc_wmat u = kvci_wmat_at(&w->ex_up, e), d = kvci_wmat_at(&w->ex_down, e);
    if (!w->ex_gate.data) return kvci_plain_mlp(c->mlp_act, NULL, ws->xg, n, &u, NULL, &d, NULL, ws->ff_a, ws->yg);
    const kvc_wmat g = kvci_wmat_at(&w->ex_gate, e);
    if (c->swiglu_limit > 0.0) return clamped_swiglu(c, ws, n, &g, &u, &d);
    const kvc_mlp_act act = c->family == KVC_FAMILY_GEMMA4 ? c->mlp_act : KVC_MLP_SILU; /* Gemma 4's GeGLU experts */
    return kvci_swiglu_mlp(act, ws->xg, n, &g, NULL, &u, NULL, &d, NULL, ws->ff_a, ws->ff_b, ws->yg);
}

/* The shared experts of x [T, H] into ws->proj: SwiGLU, or (sh_gate NULL: Nemotron-H's) up, mlp_act, down (Ergo's
 * then through its RMSNorm sh_norm); Qwen2-MoE's
 * scaled by sigmoid(shared_expert_gate x) [T, 1], computed in the router logits' place. */
static kvc_status shared_experts(const kvc_model_config *c, const kvc_layer_weights *w, kvc_model_workspace *ws,
                                 int64_t T) {
    const int64_t H = c->hidden_size;
    if (!w->sh_gate.data) {
        KVC_TRY(kvci_plain_mlp(c->mlp_act, NULL, ws->xn, T, &w->sh_up, w->sh_up_b, &w->sh_down, w->sh_down_b, ws->ff_a,
                               ws->proj));
        if (w->sh_norm) kvci_rmsnorm_rows_threads(ws->proj, T, H, H, w->sh_norm, (float)c->rms_norm_eps, ws->proj);
        return KVC_OK;
    }
    KVC_TRY(kvci_swiglu_mlp(KVC_MLP_SILU, ws->xn, T, &w->sh_gate, w->sh_gate_b, &w->sh_up, w->sh_up_b, &w->sh_down,
                            w->sh_down_b, ws->ff_a, ws->ff_b, ws->proj));
    if (!w->sh_scale.data) return KVC_OK;
    KVC_TRY(kvci_linear(ws->xn, T, &w->sh_scale, NULL, ws->router));
    for (int64_t t = 0; t < T; t++) {
        const float g = 1.0f / (1.0f + expf(-ws->router[t]));
        for (int64_t j = 0; j < H; j++) ws->proj[t * H + j] *= g;
    }
    return KVC_OK;
}

/* A routed MoE layer: router logits [T, E] (gate_w), each token's k experts and weights by `route`,
 * the experts over their gathered tokens, summed per token in expert-index order (Nemotron-H's latent
 * projections: the experts read fc1_latent_proj x [T, L] and their sum [T, L] passes fc2_latent_proj), plus the
 * shared experts when the layer has them (DeepseekV3, Granite MoE Shared, Nemotron-H, Qwen2-MoE). */
static kvc_status routed_experts(const kvc_fwd_step *s, int64_t l, route_fn route) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, E = c->n_routed_experts, K = c->experts_per_tok;
    const int64_t R = E + c->zero_experts;                         /* the router's width */
    const int64_t W = w->lat_in.data ? w->lat_in.rows : H;         /* the experts' width */
    KVC_TRY(kvci_linear(ws->xn, T, &w->gate_w, NULL, ws->router)); /* [T, R] */
    for (int64_t t = 0; t < T; t++) route(c, w, ws->router + t * R, ws->sel + t * K, ws->selw + t * K, ws->route_tmp);
    if (w->lat_in.data) KVC_TRY(kvci_linear(ws->xn, T, &w->lat_in, w->lat_in_b, ws->lat));
    const float *x = w->lat_in.data ? ws->lat : ws->xn; /* [T, W] */
    memset(ws->acc, 0, (size_t)(T * W) * sizeof(float));
    for (int32_t e = 0; e < (int32_t)E; e++) {
        const int64_t n = gather(ws, x, T, K, W, e);
        if (n == 0) continue;
        for (int64_t i = 0; c->moe_sigmoid_input && i < n; i++) { /* Llama 4: the input times the score */
            for (int64_t j = 0; j < W; j++) ws->xg[i * W + j] *= ws->tokw[i];
            ws->tokw[i] = 1.0f;
        }
        KVC_TRY(run_expert(c, w, ws, e, n));
        if (w->ex_norm) /* Ergo: the expert's own RMSNorm of its output [n, W], before its routing weight */
            kvci_rmsnorm_rows_threads(ws->yg, n, W, W, w->ex_norm + e * W, (float)c->rms_norm_eps, ws->yg);
        scatter_add(ws, n, W);
    }
    /* zero experts: the input times their summed weight (once: tensor-parallel ranks' outputs are summed) */
    for (int64_t t = 0; R > E && s->m->tp.rank == 0 && t < T; t++) {
        float z = 0.0f;
        for (int64_t j = 0; j < K; j++) z += ws->sel[t * K + j] >= E ? ws->selw[t * K + j] : 0.0f;
        for (int64_t j = 0; z != 0.0f && j < W; j++) ws->acc[t * W + j] += x[t * W + j] * z;
    }
    const float *routed = ws->acc; /* [T, H] */
    if (w->lat_out.data) {
        KVC_TRY(kvci_linear(ws->acc, T, &w->lat_out, w->lat_out_b, ws->xg));
        routed = ws->xg;
    }
    if (!w->sh_up.data) {
        memcpy(ws->proj, routed, (size_t)(T * H) * sizeof(float));
        return KVC_OK;
    }
    KVC_TRY(shared_experts(c, w, ws, T));
    for (int64_t i = 0; i < T * H; i++) ws->proj[i] += routed[i];
    for (int64_t i = 0; c->moe_shared_average && i < T * H; i++) ws->proj[i] *= 0.5f; /* (routed + shared) / 2 */
    return KVC_OK;
}

kvc_status kvci_ffn_deepseek(const kvc_fwd_step *s, int64_t l, bool v2) {
    const kvc_model_config *c = &s->m->cfg;
    if (c->n_group > DS_MAX_GROUPS)
        return kvci_fail(KVC_EINVAL, "forward: n_group %lld above %d", (long long)c->n_group, DS_MAX_GROUPS);
    return routed_experts(s, l, v2 ? deepseek_v2_route : deepseek_route);
}

/* LongCat-Flash's sub-layer l MLP (dense) into ws->proj: on an even sub-layer with experts the MoE of the same input
 * is held in ws->shortcut, on the odd one after it added to the MLP's output. */
kvc_status kvci_ffn_longcat(const kvc_fwd_step *s, int64_t l) {
    kvc_model_workspace *ws = s->ws;
    const int64_t n = s->T * s->m->cfg.hidden_size;
    if (s->m->layers[l].moe) {
        KVC_TRY(routed_experts(s, l, longcat_route));
        memcpy(ws->shortcut, ws->proj, (size_t)n * sizeof(float));
    }
    KVC_TRY(kvci_fwd_dense_mlp(s, l));
    for (int64_t i = 0; l % 2 == 1 && s->m->layers[l - 1].moe && i < n; i++) ws->proj[i] += ws->shortcut[i];
    return KVC_OK;
}

kvc_status kvci_ffn_softmax_moe(const kvc_fwd_step *s, int64_t l) { return routed_experts(s, l, softmax_route); }

kvc_status kvci_ffn_granite_moe(const kvc_fwd_step *s, int64_t l) { return routed_experts(s, l, granite_route); }
kvc_status kvci_ffn_jetmoe(const kvc_fwd_step *s, int64_t l) {
    const int64_t H = s->m->cfg.hidden_size;
    const float *b = s->m->layers[l].moe_b; /* [H] */
    KVC_TRY(routed_experts(s, l, granite_route));
    for (int64_t t = 0; t < s->T; t++)
        for (int64_t j = 0; j < H; j++) s->ws->proj[t * H + j] += b[j];
    return KVC_OK;
}
kvc_status kvci_ffn_sigmoid_moe(const kvc_fwd_step *s, int64_t l) { return routed_experts(s, l, sigmoid_route); }
kvc_status kvci_ffn_ernie_moe(const kvc_fwd_step *s, int64_t l) { return routed_experts(s, l, ernie_route); }
kvc_status kvci_ffn_phimoe(const kvc_fwd_step *s, int64_t l) { return routed_experts(s, l, phimoe_route); }
kvc_status kvci_ffn_kolibri(const kvc_fwd_step *s, int64_t l) { return routed_experts(s, l, kolibri_route); }

/* Gemma 4's router (Gemma4TextRouter) over ws->router's logits [T, E] of the residual stream: the softmax of all E in
 * f32, the k largest (ties: lower index first), divided by their sum, each times its per_expert_scale. Then the
 * experts (GeGLU) over x [T, H] (pre_feedforward_layernorm_2 of the stream) into ws->acc [T, H], summed per token in
 * expert-index order. */
kvc_status kvci_ffn_gemma4_experts(const kvc_fwd_step *s, int64_t l, const float *x) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, E = c->n_routed_experts, K = c->experts_per_tok;
    for (int64_t t = 0; t < T; t++) {
        int32_t *sel = ws->sel + t * K;
        float *sw = ws->selw + t * K, sum = 0.0f;
        softmax_probs(ws->router + t * E, E, ws->route_tmp);
        top_k(ws->route_tmp, E, K, sel);
        for (int64_t j = 0; j < K; j++) sum += (sw[j] = ws->route_tmp[sel[j]]);
        for (int64_t j = 0; j < K; j++) sw[j] = sw[j] / sum * w->expert_scale[sel[j]];
    }
    memset(ws->acc, 0, (size_t)(T * H) * sizeof(float));
    for (int32_t e = 0; e < (int32_t)E; e++) {
        const int64_t n = gather(ws, x, T, K, H, e);
        if (n == 0) continue;
        KVC_TRY(run_expert(c, w, ws, e, n));
        scatter_add(ws, n, H);
    }
    return KVC_OK;
}
