/* The tensors of each family in one fixed order (MF 2, 3.5, 4.5), the arena
 * that holds them, and the two ways to fill it: safetensors or a seeded
 * pseudo-random generator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/model_internal.h"
#include "model/weights_internal.h"

#define TRY(expr)                                                                                                      \
    do {                                                                                                               \
        kvc_status try_st_ = (expr);                                                                                   \
        if (try_st_ != KVC_OK) return try_st_;                                                                         \
    } while (0)

typedef struct visitor {
    kvc_weight_visit_fn fn;
    void *user;
    const kvc_model *m;
    char prefix[96];
    bool conv1d; /* GPT-2's Conv1D layers: every layer matrix stored [in, out], transposed at load */
} visitor;

/* parts: NULL, or the suffixes (NULL-terminated, at most KVC_WPARTS_MAX) of kvc_wtensor.parts. */
static kvc_status visit_parts(visitor *v, const char *suffix, int32_t ndim, const int64_t *shape, float **vec,
                              kvc_wmat *mat, bool transposed, kvc_winit init, kvc_wsplit split, kvc_wfused fused,
                              const char *const *parts) {
    char name[256], fused_name[256], part_names[KVC_WPARTS_MAX][256];
    const char *part_ptrs[KVC_WPARTS_MAX];
    int32_t n_parts = 0;
    snprintf(name, sizeof name, "%s%s", v->prefix, suffix);
    if (fused.name) snprintf(fused_name, sizeof fused_name, "%s%s", v->prefix, fused.name), fused.name = fused_name;
    for (; parts && parts[n_parts] && n_parts < KVC_WPARTS_MAX; n_parts++) {
        snprintf(part_names[n_parts], sizeof part_names[n_parts], "%s%s", v->prefix, parts[n_parts]);
        part_ptrs[n_parts] = part_names[n_parts];
    }
    const kvc_wtensor t = {.parts = part_ptrs,
                           .n_parts = n_parts,
                           .name = name,
                           .ndim = ndim,
                           .shape = shape,
                           .split = split,
                           .fused = fused,
                           .init = init,
                           .vec = vec,
                           .mat = mat,
                           .transposed = transposed};
    return v->fn(v->user, &t);
}

static kvc_status visit_fused(visitor *v, const char *suffix, int32_t ndim, const int64_t *shape, float **vec,
                              kvc_wmat *mat, bool transposed, kvc_winit init, kvc_wsplit split, kvc_wfused fused) {
    return visit_parts(v, suffix, ndim, shape, vec, mat, transposed, init, split, fused, NULL);
}

static kvc_status visit(visitor *v, const char *suffix, int32_t ndim, const int64_t *shape, float **vec, kvc_wmat *mat,
                        bool transposed, kvc_winit init, kvc_wsplit split) {
    return visit_fused(v, suffix, ndim, shape, vec, mat, transposed, init, split, (kvc_wfused){0});
}

/* ---- which part of a tensor this rank holds (docs/distributed.md) ---------- */

/* Replicated on every rank. */
static const kvc_wsplit WHOLE = {.dim = -1};

/* Split evenly along stored dim `dim`, `local` entries per rank (heads, intermediate columns). */
static kvc_wsplit even(const visitor *v, int32_t dim, int64_t local) {
    const kvc_model_tp *tp = &v->m->tp;
    if (tp->size <= 1) return WHOLE;
    return (kvc_wsplit){.dim = dim, .full = local * tp->size, .start = tp->rank * local};
}

/* Rows of this rank's KV heads, `width` rows a head: split, or replicated when tp exceeds them. */
static kvc_wsplit kv_rows(const visitor *v, int64_t width) {
    const kvc_model *m = v->m;
    if (m->tp.size <= 1) return WHOLE;
    return (kvc_wsplit){.dim = 0,
                        .full = m->full.num_kv_heads * width,
                        .start = kvci_model_shard_kv_head0(&m->full, m->tp.rank, m->tp.size) * width};
}

/* The bias of a row-parallel layer: rank 0 adds it, the others hold zeros. */
static kvc_wsplit rank0_bias(const visitor *v) { return (kvc_wsplit){.dim = -1, .zero = v->m->tp.rank > 0}; }

/* f32 tensors of one or two dims */
static kvc_status v1(visitor *v, const char *suffix, int64_t a, float **slot, kvc_winit init, kvc_wsplit sp) {
    const int64_t s[1] = {a};
    return visit(v, suffix, 1, s, slot, NULL, false, init, sp);
}

static kvc_status v2(visitor *v, const char *suffix, int64_t a, int64_t b, float **slot, kvc_winit init,
                     kvc_wsplit sp) {
    const int64_t s[2] = {a, b};
    return visit(v, suffix, 2, s, slot, NULL, false, init, sp);
}

/* A GEMM operand [rows, cols], which a checkpoint may hold inside `fused` (name NULL: never). */
static kvc_status m2_in(visitor *v, const char *suffix, int64_t rows, int64_t cols, kvc_wmat *w, kvc_wsplit sp,
                        kvc_wfused fused) {
    const bool tr = v->conv1d; /* stored [cols, rows]: sp's dim (of [rows, cols]) is the other one */
    const int64_t s[2] = {tr ? cols : rows, tr ? rows : cols};
    if (tr && sp.dim >= 0) sp.dim = 1 - sp.dim;
    w->count = 1, w->rows = rows, w->cols = cols;
    return visit_fused(v, suffix, 2, s, NULL, w, tr, KVC_WINIT_WEIGHT, sp, fused);
}

static kvc_status m2(visitor *v, const char *suffix, int64_t rows, int64_t cols, kvc_wmat *w, kvc_wsplit sp) {
    return m2_in(v, suffix, rows, cols, w, sp, (kvc_wfused){0});
}

/* Phi-3 keeps q, k, v in one self_attn.qkv_proj and gate, up in one mlp.gate_up_proj (rows in that order,
 * the whole model's sizes), GLM and GLM-4 only gate and up; GPT-2 q, k, v one after the other in attn.c_attn (its
 * Conv1D: along the columns; ckpt_names.c's names). GPT-NeoX, GPT-BigCode and Falcon keep q, k, v (weights and
 * biases) grouped by KV head, [KV heads, heads per KV head + 2, D]: each group's query heads, then its key and its
 * value (GPT-NeoX's and GPT-BigCode's per head [heads, 3, D]; multi_query's one group [q | k | v]; Falcon's
 * new_decoder_architecture; BLOOM's per head); DBRX's and MPT's as Phi-3's in attn.Wqkv, Sarvam-MoE's and Param2-MoE's
 * in attention.query_key_value. The runtime holds them apart (fuse.c joins them back where it can). */
static bool grouped_qkv(const kvc_model_config *c) {
    return strcmp(c->model_type, "gpt_neox") == 0 || strcmp(c->model_type, "gpt_bigcode") == 0 ||
           strcmp(c->model_type, "falcon") == 0 || strcmp(c->model_type, "bloom") == 0 ||
           strcmp(c->model_type, "persimmon") == 0 || strcmp(c->model_type, "gpt_neox_japanese") == 0;
}
/* GPT-2's and GPT-1's (openai-gpt) Conv1D layers, q/k/v fused in c_attn. */
static bool conv1d_layers(const kvc_model_config *c) {
    return strcmp(c->model_type, "gpt2") == 0 || strcmp(c->model_type, "openai-gpt") == 0;
}
static bool fused_qkv(const kvc_model_config *c) {
    return kvci_family_is_phi3(c->model_type) || conv1d_layers(c) || grouped_qkv(c) ||
           strcmp(c->model_type, "dbrx") == 0 || strcmp(c->model_type, "mpt") == 0 ||
           strcmp(c->model_type, "codegen") == 0 || strcmp(c->model_type, "sarvam_moe") == 0 ||
           strcmp(c->model_type, "param2moe") == 0 || strcmp(c->model_type, "ergo") == 0;
}
static bool fused_gate_up(const kvc_model_config *c) {
    return kvci_family_is_phi3(c->model_type) || strcmp(c->model_type, "glm4") == 0 ||
           strcmp(c->model_type, "glm") == 0 || kvci_family_is_modernbert(c->model_type);
}

/* Where part `i` (0 q, 1 k, 2 v) of the attention's `what` ("weight" or "bias") lies in the fused qkv_proj
 * (name NULL: never fused): Phi-3's q, k, v rows one after the other, or grouped: per KV head, g = heads / KV heads
 * query heads (g D rows) then D rows of k and D of v; CodeGen's in 4 model-parallel shards of hidden / 4 = L rows of q,
 * then L of v, then L of k ([4, q | v | k, L]). */
static kvc_wfused qkv_part(const visitor *v, const kvc_model_config *c, int i, const char *what) {
    const int64_t D = c->head_dim, fq = v->m->full.num_heads * D, fkv = v->m->full.num_kv_heads * D;
    if (!fused_qkv(c)) return (kvc_wfused){0};
    const char *name = strcmp(what, "bias") == 0 ? "self_attn.qkv_proj.bias" : "self_attn.qkv_proj.weight";
    const int64_t g = v->m->full.num_heads / v->m->full.num_kv_heads;
    if (grouped_qkv(c))
        return (kvc_wfused){name, fq + 2 * fkv, i == 0 ? 0 : (g + i - 1) * D, i == 0 ? g * D : D, (g + 2) * D};
    if (strcmp(c->model_type, "codegen") == 0) /* mp_num 4; q, k, v all of fq rows (its heads are its KV heads) */
        return (kvc_wfused){name, 3 * fq, (i == 0 ? 0 : i == 1 ? 2 : 1) * (fq / 4), fq / 4, 3 * (fq / 4)};
    return (kvc_wfused){name, fq + 2 * fkv, i == 0 ? 0 : i == 1 ? fq : fq + fkv, 0, 0};
}

/* An f32 vector [a] which a checkpoint may hold inside `fused` (GPT-NeoX's q/k/v biases). */
static kvc_status v1_in(visitor *v, const char *suffix, int64_t a, float **slot, kvc_winit init, kvc_wsplit sp,
                        kvc_wfused fused) {
    const int64_t s[1] = {a};
    return visit_fused(v, suffix, 1, s, slot, NULL, false, init, sp, fused);
}

/* E GEMM operands [rows, cols]; stored [E, cols, rows] when `transposed` (sp's dim counts the stored dims); a
 * checkpoint may hold them inside `fused` [E, fused.rows, cols] (name NULL: never; not transposed). */
static kvc_status m3_in(visitor *v, const char *suffix, int64_t E, int64_t rows, int64_t cols, kvc_wmat *w,
                        bool transposed, kvc_winit init, kvc_wsplit sp, kvc_wfused fused) {
    const int64_t s[3] = {E, transposed ? cols : rows, transposed ? rows : cols};
    w->count = E, w->rows = rows, w->cols = cols;
    return visit_fused(v, suffix, 3, s, NULL, w, transposed, init, sp, fused);
}

static kvc_status m3(visitor *v, const char *suffix, int64_t E, int64_t rows, int64_t cols, kvc_wmat *w,
                     bool transposed, kvc_winit init, kvc_wsplit sp) {
    return m3_in(v, suffix, E, rows, cols, w, transposed, init, sp, (kvc_wfused){0});
}

/* Layer l's GQA attention of its own shape (kvci_layer_shape): q [nH D, H], k [nKV D, H], v [nKV Dv, H],
 * o [H, nH Dv]. */
static kvc_status visit_gqa_attn(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w) {
    const kvci_attn_shape sh = kvci_layer_shape(c, l);
    const int64_t H = c->hidden_size, nH = sh.nH, nKV = sh.nKV, D = sh.D, Dv = sh.Dv;
    const int64_t gq = c->attn_output_gate ? 2 : 1; /* Qwen3-Next, MiniCPM5-MoE: each head's query, then its gate */
    TRY(m2_in(v, "self_attn.q_proj.weight", gq * nH * D, H, &w->wq, even(v, 0, gq * nH * D),
              qkv_part(v, c, 0, "weight")));
    if (c->qkv_bias)
        TRY(v1_in(v, "self_attn.q_proj.bias", gq * nH * D, &w->bq, KVC_WINIT_BIAS, even(v, 0, gq * nH * D),
                  qkv_part(v, c, 0, "bias")));
    TRY(m2_in(v, "self_attn.k_proj.weight", nKV * D, H, &w->wk, kv_rows(v, D), qkv_part(v, c, 1, "weight")));
    if (c->qkv_bias)
        TRY(v1_in(v, "self_attn.k_proj.bias", nKV * D, &w->bk, KVC_WINIT_BIAS, kv_rows(v, D),
                  qkv_part(v, c, 1, "bias")));
    TRY(m2_in(v, "self_attn.v_proj.weight", nKV * Dv, H, &w->wv, kv_rows(v, Dv), qkv_part(v, c, 2, "weight")));
    if (c->qkv_bias)
        TRY(v1_in(v, "self_attn.v_proj.bias", nKV * Dv, &w->bv, KVC_WINIT_BIAS, kv_rows(v, Dv),
                  qkv_part(v, c, 2, "bias")));
    /* LFM2's out_proj, q_layernorm, k_layernorm (LFM3's attention has Qwen3's names) */
    const bool lfm2 = c->family == KVC_FAMILY_LFM2 && strcmp(c->model_type, "lfm3") != 0;
    TRY(m2(v, lfm2 ? "self_attn.out_proj.weight" : "self_attn.o_proj.weight", H, nH * Dv, &w->wo, even(v, 1, nH * Dv)));
    /* GPT-NeoX Japanese: the last layer's attention alone has a bias (its dense_bias) */
    const bool last_bias = strcmp(c->model_type, "gpt_neox_japanese") == 0 && l == c->num_layers - 1;
    if (c->o_bias || last_bias) TRY(v1(v, "self_attn.o_proj.bias", H, &w->bo, KVC_WINIT_BIAS, rank0_bias(v)));
    if (c->attn_gate_proj) TRY(m2(v, "self_attn.gate_proj.weight", nH * D, H, &w->wg, even(v, 0, nH * D)));
    if (c->attn_gate_bias) TRY(v1(v, "self_attn.gate_bias", nH, &w->gate_b, KVC_WINIT_BIAS, even(v, 0, nH)));
    /* LFM3's g_proj, which its checkpoints (and transformers' save) name gate_proj */
    if (c->attn_head_gate) TRY(m2(v, "self_attn.gate_proj.weight", nH, H, &w->wg, even(v, 0, nH)));
    if (lfm2) {
        TRY(v1(v, "self_attn.q_layernorm.weight", D, &w->q_norm, KVC_WINIT_NORM, WHOLE));
        TRY(v1(v, "self_attn.k_layernorm.weight", D, &w->k_norm, KVC_WINIT_NORM, WHOLE));
    } else if (c->qk_norm && c->layer_norm &&
               (strcmp(c->model_type, "persimmon") == 0 ||
                strcmp(c->model_type, "phi") == 0)) { /* one LayerNorm with bias [D] shared by the heads */
        TRY(v1(v, "self_attn.q_layernorm.weight", D, &w->q_norm, KVC_WINIT_NORM, WHOLE));
        TRY(v1(v, "self_attn.q_layernorm.bias", D, &w->q_norm_b, KVC_WINIT_BIAS, WHOLE));
        TRY(v1(v, "self_attn.k_layernorm.weight", D, &w->k_norm, KVC_WINIT_NORM, WHOLE));
        TRY(v1(v, "self_attn.k_layernorm.bias", D, &w->k_norm_b, KVC_WINIT_BIAS, WHOLE));
    } else if (c->qk_norm && c->layer_norm) { /* weights per head [heads, D], split with the heads: Cohere's one tensor,
                                               * StableLM 2's a LayerNorm module per head */
        const bool stablelm = strcmp(c->model_type, "stablelm") == 0;
        TRY(v2(v, stablelm ? "self_attn.q_layernorm.norms.*.weight" : "self_attn.q_norm.weight", nH, D, &w->q_norm,
               KVC_WINIT_NORM, even(v, 0, nH)));
        TRY(v2(v, stablelm ? "self_attn.k_layernorm.norms.*.weight" : "self_attn.k_norm.weight", nKV, D, &w->k_norm,
               KVC_WINIT_NORM, kv_rows(v, 1)));
    } else if (c->qk_norm_whole) { /* OLMo 2's over the whole projection: split with the heads, as q and k */
        TRY(v1(v, "self_attn.q_norm.weight", nH * D, &w->q_norm, KVC_WINIT_NORM, even(v, 0, nH * D)));
        TRY(v1(v, "self_attn.k_norm.weight", nKV * D, &w->k_norm, KVC_WINIT_NORM, kv_rows(v, D)));
    } else if (c->qk_norm) { /* per head [D] */
        TRY(v1(v, "self_attn.q_norm.weight", D, &w->q_norm, KVC_WINIT_NORM, WHOLE));
        TRY(v1(v, "self_attn.k_norm.weight", D, &w->k_norm, KVC_WINIT_NORM, WHOLE));
    }
    if (c->family == KVC_FAMILY_GPT_OSS || (c->attn_sinks && (!c->sinks_sliding_only || c->layer_sliding[l])))
        TRY(v1(v, "self_attn.sinks", nH, &w->sinks, KVC_WINIT_SINK, even(v, 0, nH)));
    static const char *const lambdas[4] = {"self_attn.lambda_q1", "self_attn.lambda_k1", "self_attn.lambda_q2",
                                           "self_attn.lambda_k2"};
    for (int i = 0; c->diff_attn && i < 4; i++) TRY(v1(v, lambdas[i], D, &w->lambda[i], KVC_WINIT_BIAS, WHOLE));
    if (c->sub_norms) TRY(v1(v, "self_attn.attn_sub_norm.weight", nH * Dv, &w->attn_sub_norm, KVC_WINIT_NORM, WHOLE));
    return KVC_OK;
}

/* Gemma 4's attention of layer l: q_proj, q_norm and o_proj; k_proj, k_norm and v_proj (none on a full layer with
 * attention_k_eq_v) unless the layer reads another layer's K/V (kvci_model_kv_source); v_norm has no weight. */
static kvc_status visit_gemma4_attn(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w) {
    const kvci_attn_shape sh = kvci_layer_shape(c, l); /* the full layers' own head dim and KV heads */
    const int64_t H = c->hidden_size, nH = sh.nH, nKV = sh.nKV, D = sh.D;
    TRY(m2(v, "self_attn.q_proj.weight", nH * D, H, &w->wq, even(v, 0, nH * D)));
    if (c->qkv_bias) TRY(v1(v, "self_attn.q_proj.bias", nH * D, &w->bq, KVC_WINIT_BIAS, even(v, 0, nH * D)));
    if (kvci_model_kv_source(c, l) == l) {
        TRY(m2(v, "self_attn.k_proj.weight", nKV * D, H, &w->wk, kv_rows(v, D)));
        if (c->qkv_bias) TRY(v1(v, "self_attn.k_proj.bias", nKV * D, &w->bk, KVC_WINIT_BIAS, kv_rows(v, D)));
        if (!c->attn_k_eq_v || c->layer_sliding[l]) {
            TRY(m2(v, "self_attn.v_proj.weight", nKV * D, H, &w->wv, kv_rows(v, D)));
            if (c->qkv_bias) TRY(v1(v, "self_attn.v_proj.bias", nKV * D, &w->bv, KVC_WINIT_BIAS, kv_rows(v, D)));
        }
        TRY(v1(v, "self_attn.k_norm.weight", D, &w->k_norm, KVC_WINIT_NORM, WHOLE));
    }
    TRY(v1(v, "self_attn.q_norm.weight", D, &w->q_norm, KVC_WINIT_NORM, WHOLE));
    TRY(m2(v, "self_attn.o_proj.weight", H, nH * D, &w->wo, even(v, 1, nH * D)));
    if (c->o_bias) TRY(v1(v, "self_attn.o_proj.bias", H, &w->bo, KVC_WINIT_BIAS, rank0_bias(v)));
    return KVC_OK;
}

/* Gemma 4's experts beside the MLP: router.proj [E, H], router.scale [H], router.per_expert_scale [E], the experts
 * (experts.gate_up_proj [E, 2 Im, H], experts.down_proj [E, H, Im] in checkpoints) and the three norms around. */
static kvc_status visit_gemma4_moe(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Im = c->moe_intermediate_size;
    w->moe = true;
    TRY(m2(v, "router.proj.weight", E, H, &w->gate_w, WHOLE));
    TRY(v1(v, "router.scale", H, &w->router_scale, KVC_WINIT_NORM, WHOLE));
    TRY(v1(v, "router.per_expert_scale", E, &w->expert_scale, KVC_WINIT_NORM, WHOLE));
    TRY(m3(v, "experts.*.gate_proj.weight", E, Im, H, &w->ex_gate, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(m3(v, "experts.*.up_proj.weight", E, Im, H, &w->ex_up, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(m3(v, "experts.*.down_proj.weight", E, H, Im, &w->ex_down, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(v1(v, "post_feedforward_layernorm_1.weight", H, &w->mlp_out_norm, KVC_WINIT_NORM, WHOLE));
    TRY(v1(v, "pre_feedforward_layernorm_2.weight", H, &w->moe_in_norm, KVC_WINIT_NORM, WHOLE));
    return v1(v, "post_feedforward_layernorm_2.weight", H, &w->moe_out_norm, KVC_WINIT_NORM, WHOLE);
}

/* Gemma 4's per-layer input block and layer scalar of one layer (replicated on every rank). */
static kvc_status visit_gemma4_tail(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, P = c->ple_dim;
    if (P > 0) {
        TRY(m2(v, "per_layer_input_gate.weight", P, H, &w->ple_gate, WHOLE));
        TRY(m2(v, "per_layer_projection.weight", H, P, &w->ple_proj, WHOLE));
        TRY(v1(v, "post_per_layer_input_norm.weight", H, &w->ple_norm, KVC_WINIT_NORM, WHOLE));
    }
    return c->layer_scalar ? v1(v, "layer_scalar", 1, &w->scalar, KVC_WINIT_NORM, WHOLE) : KVC_OK;
}

/* Gemma 3n's AltUp and LAuReL of one layer (K copies, rank R). */
static kvc_status visit_gemma3n(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, K = c->altup_inputs, R = c->laurel_rank;
    TRY(m2(v, "altup.modality_router.weight", K, H, &w->altup_router, WHOLE));
    TRY(v1(v, "altup.router_norm.weight", H, &w->altup_router_norm, KVC_WINIT_NORM, WHOLE));
    TRY(v2(v, "altup.prediction_coefs.weight", K * K, K, &w->altup_pred, KVC_WINIT_WEIGHT, WHOLE));
    TRY(v2(v, "altup.correction_coefs.weight", K, K, &w->altup_corr, KVC_WINIT_WEIGHT, WHOLE));
    TRY(v1(v, "altup.correct_output_scale", H, &w->altup_scale, KVC_WINIT_NORM, WHOLE));
    TRY(m2(v, "laurel.linear_left.weight", R, H, &w->laurel_left, WHOLE));
    TRY(m2(v, "laurel.linear_right.weight", H, R, &w->laurel_right, WHOLE));
    return v1(v, "laurel.post_laurel_norm.weight", H, &w->laurel_norm, KVC_WINIT_NORM, WHOLE);
}

/* DeepSeek sparse attention's lightning indexer on a layer that runs one (whole on every rank). */
static kvc_status visit_indexer(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w) {
    const int64_t Hi = c->index_n_heads, Di = c->index_head_dim;
    if (c->index_topk == 0 || c->layer_index_shared[l]) return KVC_OK;
    TRY(m2(v, "self_attn.indexer.wq_b.weight", Hi * Di, c->q_lora_rank, &w->ix_wq, WHOLE));
    TRY(m2(v, "self_attn.indexer.wk.weight", Di, c->hidden_size, &w->ix_wk, WHOLE));
    TRY(v1(v, "self_attn.indexer.k_norm.weight", Di, &w->ix_knorm, KVC_WINIT_NORM, WHOLE));
    TRY(v1(v, "self_attn.indexer.k_norm.bias", Di, &w->ix_knorm_b, KVC_WINIT_BIAS, WHOLE));
    return m2(v, "self_attn.indexer.weights_proj.weight", Hi, c->hidden_size, &w->ix_wp, WHOLE);
}

static kvc_status visit_mla_attn(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, nH = c->num_heads, dq = c->qk_nope_head_dim + c->qk_rope_head_dim;
    const int64_t rq = c->q_lora_rank, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const int64_t dn = c->qk_nope_head_dim, dv = c->v_head_dim;
    if (rq == 0) {
        TRY(m2(v, "self_attn.q_proj.weight", nH * dq, H, &w->wq, even(v, 0, nH * dq)));
    } else {
        TRY(m2(v, "self_attn.q_a_proj.weight", rq, H, &w->wqa, WHOLE));
        if (c->qkv_bias) TRY(v1(v, "self_attn.q_a_proj.bias", rq, &w->bqa, KVC_WINIT_BIAS, WHOLE));
        TRY(v1(v, "self_attn.q_a_layernorm.weight", rq, &w->qa_norm, KVC_WINIT_NORM, WHOLE));
        if (c->mla_q_gate) /* A.X-K2: per head [query dq | gate dv] */
            TRY(m2(v, "self_attn.q_gate_proj.weight", nH * (dq + dv), 2 * rq, &w->wqg, even(v, 0, nH * (dq + dv))));
        else
            TRY(m2(v, "self_attn.q_b_proj.weight", nH * dq, rq, &w->wqb, even(v, 0, nH * dq)));
    }
    TRY(m2(v, "self_attn.kv_a_proj_with_mqa.weight", rkv + dr, H, &w->wkva, WHOLE));
    if (c->qkv_bias) TRY(v1(v, "self_attn.kv_a_proj_with_mqa.bias", rkv + dr, &w->bkva, KVC_WINIT_BIAS, WHOLE));
    TRY(v1(v, "self_attn.kv_a_layernorm.weight", rkv, &w->kva_norm, KVC_WINIT_NORM, WHOLE));
    TRY(v2(v, "self_attn.kv_b_proj.weight", nH * (dn + dv), rkv, &w->wkvb, KVC_WINIT_WEIGHT,
           even(v, 0, nH * (dn + dv))));
    TRY(m2(v, "self_attn.o_proj.weight", H, nH * dv, &w->wo, even(v, 1, nH * dv)));
    if (c->o_bias) TRY(v1(v, "self_attn.o_proj.bias", H, &w->bo, KVC_WINIT_BIAS, rank0_bias(v)));
    if (c->attn_gate_proj) /* HY V4: the output gate per head [nH dv, H] */
        TRY(m2(v, "self_attn.gate_proj.weight", nH * dv, H, &w->wg, even(v, 0, nH * dv)));
    if (c->attn_sinks) TRY(v1(v, "self_attn.sinks", nH, &w->sinks, KVC_WINIT_SINK, even(v, 0, nH)));
    return visit_indexer(v, c, l, w);
}

/* An ungated MLP of width I: the dense one (sub ""), StarCoder2's c_fc [I, H] (as up, split by rows) and c_proj
 * [H, I] (as down, by columns), or Arcee's up_proj and down_proj of the same shapes; or Nemotron-H's shared experts
 * (sub "shared_experts."); their biases with mlp_bias. */
static kvc_status visit_plain_mlp(visitor *v, const kvc_model_config *c, const char *sub, int64_t I, kvc_wmat *up_w,
                                  float **up_b, kvc_wmat *down_w, float **down_b) {
    const int64_t H = c->hidden_size;
    const bool sc2 = strcmp(c->model_type, "starcoder2") == 0;
    const char *up = sc2 ? "c_fc" : "up_proj", *down = sc2 ? "c_proj" : "down_proj";
    char n[96];
    snprintf(n, sizeof n, "mlp.%s%s.weight", sub, up);
    TRY(m2(v, n, I, H, up_w, even(v, 0, I)));
    snprintf(n, sizeof n, "mlp.%s%s.bias", sub, up);
    if (c->mlp_bias) TRY(v1(v, n, I, up_b, KVC_WINIT_BIAS, even(v, 0, I)));
    snprintf(n, sizeof n, "mlp.%s%s.weight", sub, down);
    TRY(m2(v, n, H, I, down_w, even(v, 1, I)));
    snprintf(n, sizeof n, "mlp.%s%s.bias", sub, down);
    if (c->mlp_bias) TRY(v1(v, n, H, down_b, KVC_WINIT_BIAS, rank0_bias(v)));
    return KVC_OK;
}

/* Apertus's xIELU parameters, per layer: alpha_p, alpha_n [1]; beta, eps []. */
static kvc_status visit_xielu(visitor *v, kvc_layer_weights *w) {
    static const char *const names[4] = {"alpha_p", "alpha_n", "beta", "eps"};
    const int64_t one[1] = {1};
    char n[64];
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, "mlp.act_fn.%s", names[i]);
        TRY(visit(v, n, i < 2 ? 1 : 0, one, &w->xielu[i], NULL, false, KVC_WINIT_BIAS, WHOLE));
    }
    return KVC_OK;
}

/* Nemotron-H's experts (under mixer. in its checkpoints, ckpt_names.c): the router gate [E, H] and its
 * e_score_correction_bias [E], ungated experts up [E, Im, L] / down [E, L, Im] (L: moe_latent_size, else H), the
 * shared MLP, and with a latent size fc1_latent_proj [L, H] / fc2_latent_proj [H, L] (biases with mlp_bias; the
 * second's on rank 0 only, as the experts' partial sums pass it on every rank). */
static kvc_status visit_nemotron_moe(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Im = c->moe_intermediate_size;
    const int64_t L = c->moe_latent_size > 0 ? c->moe_latent_size : H;
    w->moe = true;
    TRY(m2(v, "mlp.gate.weight", E, H, &w->gate_w, WHOLE));
    TRY(v1(v, "mlp.gate.e_score_correction_bias", E, &w->gate_corr, KVC_WINIT_BIAS, WHOLE));
    TRY(m3(v, KVC_DS_EXPERTS_UP, E, Im, L, &w->ex_up, false, KVC_WINIT_WEIGHT, even(v, 1, Im)));
    TRY(m3(v, KVC_DS_EXPERTS_DOWN, E, L, Im, &w->ex_down, false, KVC_WINIT_WEIGHT, even(v, 2, Im)));
    TRY(visit_plain_mlp(v, c, "shared_experts.", c->shared_expert_intermediate_size, &w->sh_up, &w->sh_up_b,
                        &w->sh_down, &w->sh_down_b));
    if (c->moe_latent_size == 0) return KVC_OK;
    TRY(m2(v, "mlp.fc1_latent_proj.weight", L, H, &w->lat_in, WHOLE));
    if (c->mlp_bias) TRY(v1(v, "mlp.fc1_latent_proj.bias", L, &w->lat_in_b, KVC_WINIT_BIAS, WHOLE));
    TRY(m2(v, "mlp.fc2_latent_proj.weight", H, L, &w->lat_out, WHOLE));
    if (c->mlp_bias) TRY(v1(v, "mlp.fc2_latent_proj.bias", H, &w->lat_out_b, KVC_WINIT_BIAS, rank0_bias(v)));
    return KVC_OK;
}

/* Ergo's experts (ckpt_names.c's names): the router [E, H] (stored [H, E]) and its correction bias [E], ungated
 * experts up [E][Im, H] / down [E][H, Im] (stored [E, H, Im] / [E, Im, H]), each expert's output norm [E, H]; the
 * shared MLP (stored [in, out]) and its output norm [H]. */
static kvc_status visit_ergo_moe(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Im = c->moe_intermediate_size;
    w->moe = true;
    v->conv1d = true;
    TRY(m2(v, "mlp.gate.linear.weight", E, H, &w->gate_w, WHOLE));
    TRY(visit_plain_mlp(v, c, "shared_experts.", c->shared_expert_intermediate_size, &w->sh_up, &w->sh_up_b,
                        &w->sh_down, &w->sh_down_b));
    v->conv1d = false;
    TRY(v1(v, "mlp.gate.e_score_correction_bias", E, &w->gate_corr, KVC_WINIT_BIAS, WHOLE));
    TRY(m3(v, "mlp.experts.up_proj", E, Im, H, &w->ex_up, true, KVC_WINIT_WEIGHT, even(v, 2, Im)));
    TRY(m3(v, "mlp.experts.down_proj", E, H, Im, &w->ex_down, true, KVC_WINIT_WEIGHT, even(v, 1, Im)));
    TRY(v2(v, "mlp.experts.post_expert_norm.weight", E, H, &w->ex_norm, KVC_WINIT_NORM, WHOLE));
    return v1(v, "mlp.shared_experts.norm.weight", H, &w->sh_norm, KVC_WINIT_NORM, WHOLE);
}

/* A SwiGLU MLP of width I: the dense one (sub ""), or the shared experts under mlp.{sub} (feed_forward. for Llama 4);
 * their biases with mlp_bias (the shared experts': ERNIE 4.5 MoE's use_bias). */
static kvc_status visit_dense_mlp(visitor *v, const kvc_model_config *c, kvc_layer_weights *w, const char *sub,
                                  int64_t I, kvc_wmat *g, kvc_wmat *u, kvc_wmat *d) {
    const int64_t H = c->hidden_size, fI = v->m->full.intermediate_size; /* the checkpoint's rows (dense MLP) */
    if (c->mlp_plain && !*sub) {
        TRY(visit_plain_mlp(v, c, "", I, &w->w_up, &w->b_up, &w->w_down, &w->b_down));
        return c->mlp_act == KVC_MLP_XIELU ? visit_xielu(v, w) : KVC_OK;
    }
    const char *gu = fused_gate_up(c) && !*sub ? "mlp.gate_up_proj.weight" : NULL;
    const bool lfm2 = c->family == KVC_FAMILY_LFM2; /* feed_forward.w1 (gate), w3 (up), w2 (down) */
    const char *ff = c->family == KVC_FAMILY_LLAMA4 || lfm2 ? "feed_forward." : "mlp.";
    const char *part[3] = {lfm2 ? "w1" : "gate_proj", lfm2 ? "w3" : "up_proj", lfm2 ? "w2" : "down_proj"};
    float **bias[3] = {*sub ? &w->sh_gate_b : &w->b_gate, *sub ? &w->sh_up_b : &w->b_up,
                       *sub ? &w->sh_down_b : &w->b_down};
    char n[96];
    for (int i = 0; i < 3; i++) {
        snprintf(n, sizeof n, "%s%s%s.weight", ff, sub, part[i]);
        if (i < 2)
            TRY(m2_in(v, n, I, H, i ? u : g, even(v, 0, I), (kvc_wfused){gu, 2 * fI, i ? fI : 0, 0, 0}));
        else
            TRY(m2(v, n, H, I, d, even(v, 1, I)));
        snprintf(n, sizeof n, "%s%s%s.bias", ff, sub, part[i]);
        if (c->mlp_bias) TRY(v1(v, n, i < 2 ? I : H, bias[i], KVC_WINIT_BIAS, i < 2 ? even(v, 0, I) : rank0_bias(v)));
    }
    if (c->sub_norms && !*sub) TRY(v1(v, "mlp.ffn_sub_norm.weight", I, &w->ffn_sub_norm, KVC_WINIT_NORM, WHOLE));
    return KVC_OK;
}

/* A MoE block whose experts are stored transposed and fused (weights_internal.h), each split by its intermediate
 * columns: the router [E, H], the experts' virtual names ex[3] (gate, up, down) and the shared experts under `shared`.
 * Llama 4's: feed_forward.router, feed_forward.experts.*, feed_forward.shared_expert.*; Aria's: mlp.router,
 * mlp.experts.* (gate_up_proj [E, H, 2 Im], gate columns first / down_proj [E, Im, H]; the hub's fc1 / fc2 names
 * are ckpt_names.c's), mlp.shared_experts.* (its shared experts as one MLP of their summed width). */
static kvc_status visit_transposed_moe(visitor *v, const kvc_model_config *c, kvc_layer_weights *w, const char *router,
                                       const char *const ex[3], const char *shared) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Im = c->moe_intermediate_size;
    TRY(m2(v, router, E, H, &w->gate_w, WHOLE));
    TRY(m3(v, ex[0], E, Im, H, &w->ex_gate, true, KVC_WINIT_WEIGHT, even(v, 2, Im)));
    TRY(m3(v, ex[1], E, Im, H, &w->ex_up, true, KVC_WINIT_WEIGHT, even(v, 2, Im)));
    TRY(m3(v, ex[2], E, H, Im, &w->ex_down, true, KVC_WINIT_WEIGHT, even(v, 1, Im)));
    return visit_dense_mlp(v, c, w, shared, c->shared_expert_intermediate_size, &w->sh_gate, &w->sh_up, &w->sh_down);
}

/* DBRX's ffn: router.layer [E, H], the experts' gate (w1) and up (v1) rows [E * Im, H] read as [E, Im, H] and their
 * down projections stored transposed in w2 [E * Im, H] (used as x @ w2), each split by its intermediate rows. */
static kvc_status visit_dbrx_moe(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Im = c->moe_intermediate_size;
    TRY(m2(v, "ffn.router.layer.weight", E, H, &w->gate_w, WHOLE));
    TRY(m3(v, "ffn.experts.mlp.w1", E, Im, H, &w->ex_gate, false, KVC_WINIT_WEIGHT, even(v, 1, Im)));
    TRY(m3(v, "ffn.experts.mlp.v1", E, Im, H, &w->ex_up, false, KVC_WINIT_WEIGHT, even(v, 1, Im)));
    return m3(v, "ffn.experts.mlp.w2", E, H, Im, &w->ex_down, true, KVC_WINIT_WEIGHT, even(v, 1, Im));
}

/* LFM2-MoE's feed_forward: the router gate [E, H], its expert_bias [E] (the correction bias) and the experts' hub
 * modules, each split by its intermediate columns. */
static kvc_status visit_lfm2_moe(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Im = c->moe_intermediate_size;
    TRY(m2(v, "feed_forward.gate.weight", E, H, &w->gate_w, WHOLE));
    TRY(v1(v, "feed_forward.expert_bias", E, &w->gate_corr, KVC_WINIT_BIAS, WHOLE));
    TRY(m3(v, KVC_LFM2_EXPERTS_GATE, E, Im, H, &w->ex_gate, false, KVC_WINIT_WEIGHT, even(v, 1, Im)));
    TRY(m3(v, KVC_LFM2_EXPERTS_UP, E, Im, H, &w->ex_up, false, KVC_WINIT_WEIGHT, even(v, 1, Im)));
    return m3(v, KVC_LFM2_EXPERTS_DOWN, E, H, Im, &w->ex_down, false, KVC_WINIT_WEIGHT, even(v, 2, Im));
}

/* A routed MoE block: the router [E, H] and E SwiGLU experts, each split by its intermediate columns. Virtual
 * expert names: the loader reads per-expert modules (or the fused form, weights_internal.h). DeepseekV3's router
 * (DeepSeek-V3, GLM-4.5: n_group set; not DeepSeek-V2's) adds its correction bias and shared experts, ERNIE 4.5 MoE
 * its correction bias [1, E] (moe_statics) and shared experts, Qwen2-MoE a
 * shared expert and its sigmoid gate [1, H]; Mixtral's, Phi-3.5-MoE's, MiniMax's, MiniMax-M2's and Kimi-Linear's hub
 * names are block_sparse_moe.{gate, experts.E.w1 (gate) / w3 (up) / w2 (down)}. */
static kvc_status visit_routed_moe(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Im = c->moe_intermediate_size;
    const bool ds = c->n_group > 0; /* DeepSeek-V3's router */
    const bool mixtral = strcmp(c->model_type, "mixtral") == 0 || strcmp(c->model_type, "phimoe") == 0 ||
                         strcmp(c->model_type, "minimax_m2") == 0 || c->family == KVC_FAMILY_KIMI_LINEAR ||
                         c->family == KVC_FAMILY_MINIMAX;
    const bool ernie = strcmp(c->model_type, "ernie4_5_moe") == 0;
    const bool cohere = strcmp(c->model_type, "cohere2_moe") == 0; /* shared_experts., no gate */
    const bool kolibri = strcmp(c->model_type, "kolibri1") == 0;   /* V3's correction bias and shared experts' names */
    w->moe = true;
    static const char *const llama4[3] = {KVC_LLAMA4_EXPERTS_GATE, KVC_LLAMA4_EXPERTS_UP, KVC_LLAMA4_EXPERTS_DOWN};
    static const char *const aria[3] = {KVC_DS_EXPERTS_GATE, KVC_DS_EXPERTS_UP, KVC_DS_EXPERTS_DOWN};
    if (c->family == KVC_FAMILY_LLAMA4)
        return visit_transposed_moe(v, c, w, "feed_forward.router.weight", llama4, "shared_expert.");
    if (kvci_family_is_aria(c->model_type))
        return visit_transposed_moe(v, c, w, "mlp.router.weight", aria, "shared_experts.");
    if (strcmp(c->model_type, "dbrx") == 0) return visit_dbrx_moe(v, c, w);
    if (c->family == KVC_FAMILY_LFM2) return visit_lfm2_moe(v, c, w);
    const int64_t R = E + c->zero_experts; /* the router's width (LongCat-Flash's zero experts) */
    TRY(m2(v, mixtral ? "block_sparse_moe.gate.weight" : "mlp.gate.weight", R, H, &w->gate_w, WHOLE));
    const kvc_wsplit corr = {.dim = -1, .absent_zero = kvci_family_is_axk1(c)}; /* AXK1's checkpoints: none */
    if ((ds && !kvci_deepseek_v2(c)) || kolibri)
        TRY(v1(v, "mlp.gate.e_score_correction_bias", R, &w->gate_corr, KVC_WINIT_BIAS, corr));
    if (ernie) TRY(v2(v, "mlp.moe_statics.e_score_correction_bias", 1, E, &w->gate_corr, KVC_WINIT_BIAS, WHOLE));
    TRY(m3(v, mixtral ? KVC_MIXTRAL_EXPERTS_GATE : KVC_DS_EXPERTS_GATE, E, Im, H, &w->ex_gate, false, KVC_WINIT_WEIGHT,
           even(v, 1, Im)));
    TRY(m3(v, mixtral ? KVC_MIXTRAL_EXPERTS_UP : KVC_DS_EXPERTS_UP, E, Im, H, &w->ex_up, false, KVC_WINIT_WEIGHT,
           even(v, 1, Im)));
    TRY(m3(v, mixtral ? KVC_MIXTRAL_EXPERTS_DOWN : KVC_DS_EXPERTS_DOWN, E, H, Im, &w->ex_down, false, KVC_WINIT_WEIGHT,
           even(v, 2, Im)));
    const int64_t Ish = c->shared_expert_intermediate_size;
    if (Ish > 0)
        TRY(visit_dense_mlp(v, c, w, ds || ernie || cohere || kolibri ? "shared_experts." : "shared_expert.", Ish,
                            &w->sh_gate, &w->sh_up, &w->sh_down));
    const bool hunyuan = strcmp(c->model_type, "hunyuan_v1_moe") == 0 || /* their shared MLP has no gate */
                         strcmp(c->model_type, "flint") == 0;
    if (Ish > 0 && !ds && !ernie && !hunyuan && !cohere && !kolibri)
        TRY(m2(v, "mlp.shared_expert_gate.weight", 1, H, &w->sh_scale, WHOLE));
    return KVC_OK;
}

/* Granite MoE's block_sparse_moe: the router [E, H] (router.layer), the experts' gate and up rows in input_linear
 * [E, 2 Im, H] (gate first) and down in output_linear [E, H, Im]; Granite MoE Shared's shared_mlp the same as one
 * matrix each (input_linear [2 Ish, H], output_linear [H, Ish]). The gate / up names are the runtime's (a saved
 * copy holds them apart); the loader reads them from the fused tensors. */
/* Granite's shared MLP of width I (fI in the checkpoint): shared_mlp.input_linear [2 fI, H] (gate rows, then up
 * rows) and shared_mlp.output_linear [H, fI], into g, u, d. */
static kvc_status visit_granite_shared(visitor *v, const kvc_model_config *c, int64_t I, int64_t fI, kvc_wmat *g,
                                       kvc_wmat *u, kvc_wmat *d) {
    const int64_t H = c->hidden_size;
    const char *in = "shared_mlp.input_linear.weight";
    TRY(m2_in(v, "shared_mlp.gate_proj.weight", I, H, g, even(v, 0, I), (kvc_wfused){in, 2 * fI, 0, 0, 0}));
    TRY(m2_in(v, "shared_mlp.up_proj.weight", I, H, u, even(v, 0, I), (kvc_wfused){in, 2 * fI, fI, 0, 0}));
    return m2(v, "shared_mlp.output_linear.weight", H, I, d, even(v, 1, I));
}

static kvc_status visit_granite_moe(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Im = c->moe_intermediate_size;
    const int64_t fIm = v->m->full.moe_intermediate_size, Ish = c->shared_expert_intermediate_size;
    const int64_t fIsh = v->m->full.shared_expert_intermediate_size;
    const char *in = "block_sparse_moe.input_linear.weight";
    w->moe = true;
    TRY(m2(v, "block_sparse_moe.router.layer.weight", E, H, &w->gate_w, WHOLE));
    TRY(m3_in(v, "block_sparse_moe.gate_proj.weight", E, Im, H, &w->ex_gate, false, KVC_WINIT_WEIGHT, even(v, 1, Im),
              (kvc_wfused){in, 2 * fIm, 0, 0, 0}));
    TRY(m3_in(v, "block_sparse_moe.up_proj.weight", E, Im, H, &w->ex_up, false, KVC_WINIT_WEIGHT, even(v, 1, Im),
              (kvc_wfused){in, 2 * fIm, fIm, 0, 0}));
    TRY(m3(v, "block_sparse_moe.output_linear.weight", E, H, Im, &w->ex_down, false, KVC_WINIT_WEIGHT, even(v, 2, Im)));
    return Ish == 0 ? KVC_OK : visit_granite_shared(v, c, Ish, fIsh, &w->sh_gate, &w->sh_up, &w->sh_down);
}

/* JetMoE's layer: the attention experts under self_attention.experts (router.layer [E, H], input_linear [E, nKV D, H],
 * output_linear [E, H, nKV D], bias [H]) and kv_proj [2 nKV D, H] (keys, then values); the MLP's router.layer,
 * input_linear [E, 2 I, H] (gate rows first), output_linear [E, H, I] and bias [H] under mlp. Gate / up / k / v names
 * are the runtime's, read from the fused tensors. */
static kvc_status visit_jetmoe_attn(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, Q = c->num_kv_heads * c->head_dim;
    const char *kv = "self_attention.kv_proj.weight";
    TRY(m2(v, "self_attention.experts.router.layer.weight", E, H, &w->moa_router, WHOLE));
    TRY(m3(v, "self_attention.experts.input_linear.weight", E, Q, H, &w->moa_in, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(m3(v, "self_attention.experts.output_linear.weight", E, H, Q, &w->moa_out, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(v1(v, "self_attention.experts.bias", H, &w->bo, KVC_WINIT_BIAS, WHOLE));
    TRY(m2_in(v, "self_attention.k_proj.weight", Q, H, &w->wk, WHOLE, (kvc_wfused){kv, 2 * Q, 0, 0, 0}));
    return m2_in(v, "self_attention.v_proj.weight", Q, H, &w->wv, WHOLE, (kvc_wfused){kv, 2 * Q, Q, 0, 0});
}

static kvc_status visit_jetmoe_mlp(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, E = c->n_routed_experts, I = c->moe_intermediate_size;
    const char *in = "mlp.input_linear.weight";
    w->moe = true;
    TRY(m2(v, "mlp.router.layer.weight", E, H, &w->gate_w, WHOLE));
    TRY(m3_in(v, "mlp.gate_proj.weight", E, I, H, &w->ex_gate, false, KVC_WINIT_WEIGHT, WHOLE,
              (kvc_wfused){in, 2 * I, 0, 0, 0}));
    TRY(m3_in(v, "mlp.up_proj.weight", E, I, H, &w->ex_up, false, KVC_WINIT_WEIGHT, WHOLE,
              (kvc_wfused){in, 2 * I, I, 0, 0}));
    TRY(m3(v, "mlp.output_linear.weight", E, H, I, &w->ex_down, false, KVC_WINIT_WEIGHT, WHOLE));
    return v1(v, "mlp.bias", H, &w->moe_b, KVC_WINIT_BIAS, WHOLE);
}

/* A.X-K2's gate of the norm `norm`: its mlp.fc1 [r, H] and mlp.fc2 [H, r], on every rank whole. */
static kvc_status visit_norm_gate(visitor *v, const kvc_model_config *c, const char *norm, kvc_wmat fc[2]) {
    const int64_t H = c->hidden_size, r = c->gated_norm_rank;
    char n[64];
    snprintf(n, sizeof n, "%s.mlp.fc1.weight", norm);
    TRY(m2(v, n, r, H, &fc[0], WHOLE));
    snprintf(n, sizeof n, "%s.mlp.fc2.weight", norm);
    return m2(v, n, H, r, &fc[1], WHOLE);
}

/* A layer's norms (none for OLMo's weightless LayerNorms). GLM-4 names the sandwich norms after their places:
 * post_self_attn (attention output), post_attention (MLP input), post_mlp (MLP output); Cohere's parallel block
 * has its input norm only. */
static kvc_status visit_layer_norms(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size;
    const bool glm4 = strcmp(c->model_type, "glm4") == 0 || strcmp(c->model_type, "kolibri1") == 0; /* its names */
    /* the sandwich's attention-output, MLP-input and MLP-output norms: Gemma's, GLM-4's, HyperCLOVA X's (Peri-LN) */
    const bool hcx = strcmp(c->model_type, "hyperclovax") == 0, lfm3 = strcmp(c->model_type, "lfm3") == 0;
    const char *attn_out = glm4 ? "post_self_attn_layernorm" : hcx ? "post_norm1" : lfm3 ? "post_operator_norm" : NULL;
    const char *ffn_in = glm4 || hcx ? "post_attention_layernorm.weight"
                         : lfm3      ? "ffn_norm.weight"
                                     : "pre_feedforward_layernorm.weight";
    const char *ffn_out = glm4   ? "post_mlp_layernorm.weight"
                          : hcx  ? "post_norm2.weight"
                          : lfm3 ? "post_ffn_norm.weight"
                                 : "post_feedforward_layernorm.weight";
    /* Falcon's new_decoder_architecture names its two parallel norms ln_attn and ln_mlp */
    const bool falcon2 = c->parallel_mlp_norm && strcmp(c->model_type, "falcon") == 0;
    const bool lfm2 = c->family == KVC_FAMILY_LFM2; /* operator_norm, ffn_norm */
    /* A.X-K2's gated norms keep their RMSNorm as .norm: input_layernorm's always, post_attention_layernorm's on MoE
     * layers */
    const bool gated = c->gated_norm_rank > 0, gated_post = gated && c->layer_moe[l];
    const char *in = falcon2 ? "ln_attn" : lfm2 ? "operator_norm" : gated ? "input_layernorm.norm" : "input_layernorm";
    const char *post = falcon2      ? "ln_mlp"
                       : lfm2       ? "ffn_norm"
                       : gated_post ? "post_attention_layernorm.norm"
                                    : "post_attention_layernorm";
    char n[64];
    if (c->norm_weightless) return KVC_OK;
    if (gated) TRY(visit_norm_gate(v, c, "input_layernorm", w->gn_in));
    if (gated_post) TRY(visit_norm_gate(v, c, "post_attention_layernorm", w->gn_post));
    snprintf(n, sizeof n, "%s.weight", in);
    const bool post_norms = kvci_layer_post_norms(c, l);
    const bool first_none = c->attn_norm_first_none && l == 0; /* ModernBERT's layer 0: no attention norm */
    if (!post_norms && !c->layer_no_mixer[l] && !first_none) TRY(v1(v, n, H, &w->in_norm, KVC_WINIT_NORM, WHOLE));
    snprintf(n, sizeof n, "%s.bias", in);
    if (c->norm_bias && !first_none) TRY(v1(v, n, H, &w->in_norm_b, KVC_WINIT_BIAS, WHOLE));
    /* GPT-NeoX's parallel block has its own; Nemotron-H's layers one norm, their block's */
    const bool mlp_norm = (!c->parallel_block || c->parallel_mlp_norm) && !c->layer_no_ffn[l];
    snprintf(n, sizeof n, "%s.weight", c->sandwich_norms && attn_out ? attn_out : post);
    if (mlp_norm) TRY(v1(v, n, H, &w->post_norm, KVC_WINIT_NORM, WHOLE));
    snprintf(n, sizeof n, "%s.bias", post);
    if (c->norm_bias && mlp_norm) TRY(v1(v, n, H, &w->post_norm_b, KVC_WINIT_BIAS, WHOLE));
    if (c->sandwich_norms) TRY(v1(v, ffn_in, H, &w->pre_ff_norm, KVC_WINIT_NORM, WHOLE));
    if (c->sandwich_norms || post_norms) TRY(v1(v, ffn_out, H, &w->post_ff_norm, KVC_WINIT_NORM, WHOLE));
    /* A.X-K1's norm of the MoE block's output, stored at the layer (its dense layers' copies unused) */
    if (kvci_family_is_axk1(c) && c->layer_moe[l])
        TRY(v1(v, "post_mlp_layernorm.weight", H, &w->post_ff_norm, KVC_WINIT_NORM, WHOLE));
    return KVC_OK;
}

/* LFM2's short convolution: conv.in_proj [3W, H] (B, C, x), the depthwise conv.conv [W, 1, L], conv.out_proj
 * [H, W], each with a bias under conv_bias (W: the rank's conv channels, in_proj's runs of B, C and x, out_proj
 * row-parallel). */
static kvc_status visit_short_conv(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, W = kvci_conv_channels(c), L = c->conv_kernel, taps[3] = {W, 1, L};
    const kvc_wsplit in = kvci_shard_state_runs(v->m, KVCI_RUNS_LFM2_IN);
    TRY(m2(v, "conv.in_proj.weight", 3 * W, H, &w->conv_in, in));
    if (c->conv_bias) TRY(v1(v, "conv.in_proj.bias", 3 * W, &w->conv_in_b, KVC_WINIT_BIAS, in));
    TRY(visit(v, "conv.conv.weight", 3, taps, &w->conv_w, NULL, false, KVC_WINIT_WEIGHT, even(v, 0, W)));
    if (c->conv_bias) TRY(v1(v, "conv.conv.bias", W, &w->conv_b, KVC_WINIT_BIAS, even(v, 0, W)));
    TRY(m2(v, "conv.out_proj.weight", H, W, &w->wo, even(v, 1, W)));
    if (c->conv_bias) TRY(v1(v, "conv.out_proj.bias", H, &w->bo, KVC_WINIT_BIAS, rank0_bias(v)));
    return KVC_OK;
}

/* Qwen3-Next's Gated DeltaNet under linear_attn.: in_proj_qkvz, in_proj_ba (Qwen3.5: in_proj_qkv, _z, _b, _a), conv1d
 * [C, 1, K] (no bias), dt_bias, A_log, the gated norm, out_proj (no biases). A rank: its key heads with their value
 * heads (Qwen3-Next's in_proj rows grouped per key head: one range; q | k | v apart: runs), out_proj row-parallel.
 * OLMo Hybrid's checkpoints hold in_proj_qkv and conv1d in three parts each (kvc_wtensor.parts; ckpt_names.c names
 * the others). */
static kvc_status visit_gated_delta(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    static const char *const proj[] = {"linear_attn.q_proj.weight", "linear_attn.k_proj.weight",
                                       "linear_attn.v_proj.weight", NULL};
    static const char *const conv[] = {"linear_attn.q_conv1d.weight", "linear_attn.k_conv1d.weight",
                                       "linear_attn.v_conv1d.weight", NULL};
    const bool olmo = strcmp(c->model_type, "olmo_hybrid") == 0;
    const int64_t H = c->hidden_size, nk = c->gdn_k_heads, nv = c->gdn_v_heads, dk = c->gdn_k_dim, dv = c->gdn_v_dim;
    const int64_t C = 2 * nk * dk + nv * dv, taps[3] = {C, 1, c->gdn_conv_kernel}, proj_shape[2] = {C, H};
    const kvc_wsplit qkv = kvci_shard_state_runs(v->m, KVCI_RUNS_GDN_QKV);
    if (c->gdn_split_proj) { /* Qwen3.5 */
        w->gdn_qkvz.count = 1, w->gdn_qkvz.rows = C, w->gdn_qkvz.cols = H;
        TRY(visit_parts(v, "linear_attn.in_proj_qkv.weight", 2, proj_shape, NULL, &w->gdn_qkvz, false, KVC_WINIT_WEIGHT,
                        qkv, (kvc_wfused){0}, olmo ? proj : NULL));
        TRY(m2(v, "linear_attn.in_proj_z.weight", nv * dv, H, &w->gdn_z, even(v, 0, nv * dv)));
        TRY(m2(v, "linear_attn.in_proj_b.weight", nv, H, &w->gdn_ba, even(v, 0, nv)));
        TRY(m2(v, "linear_attn.in_proj_a.weight", nv, H, &w->gdn_a, even(v, 0, nv)));
    } else {
        const int64_t rows = 2 * nk * dk + 2 * nv * dv;
        TRY(m2(v, "linear_attn.in_proj_qkvz.weight", rows, H, &w->gdn_qkvz, even(v, 0, rows)));
        TRY(m2(v, "linear_attn.in_proj_ba.weight", 2 * nv, H, &w->gdn_ba, even(v, 0, 2 * nv)));
    }
    TRY(visit_parts(v, "linear_attn.conv1d.weight", 3, taps, &w->gdn_conv, NULL, false, KVC_WINIT_WEIGHT, qkv,
                    (kvc_wfused){0}, olmo ? conv : NULL));
    TRY(v1(v, "linear_attn.dt_bias", nv, &w->gdn_dt_bias, KVC_WINIT_BIAS, even(v, 0, nv)));
    TRY(v1(v, "linear_attn.A_log", nv, &w->gdn_a_log, KVC_WINIT_BIAS, even(v, 0, nv)));
    TRY(v1(v, KVC_GDN_NORM, dv, &w->gdn_norm, KVC_WINIT_NORM, WHOLE));
    return m2(v, "linear_attn.out_proj.weight", H, nv * dv, &w->wo, even(v, 1, nv * dv));
}

/* Kimi Delta Attention (kda.c) under self_attn.: q_proj, k_proj, v_proj [V, H] (V = nh d), their convs
 * q_conv1d, k_conv1d, v_conv1d [V, 1, K] (no bias), f_a_proj and g_a_proj [d, H], f_b_proj and g_b_proj [V, d],
 * b_proj [nh, H], dt_bias [V], A_log [1, 1, nh, 1], o_norm [d], o_proj [H, V] (no biases; tensor parallelism is
 * refused, shard_state.c). */
static kvc_status visit_kda(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, nh = c->gdn_v_heads, d = c->gdn_k_dim, V = nh * d;
    const int64_t taps[3] = {V, 1, c->gdn_conv_kernel}, a_log[4] = {1, 1, nh, 1};
    static const char *const conv[3] = {"self_attn.q_conv1d.weight", "self_attn.k_conv1d.weight",
                                        "self_attn.v_conv1d.weight"};
    TRY(m2(v, "self_attn.q_proj.weight", V, H, &w->wq, WHOLE));
    TRY(m2(v, "self_attn.k_proj.weight", V, H, &w->wk, WHOLE));
    TRY(m2(v, "self_attn.v_proj.weight", V, H, &w->wv, WHOLE));
    for (int i = 0; i < 3; i++) TRY(visit(v, conv[i], 3, taps, &w->kda_conv[i], NULL, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(m2(v, "self_attn.f_a_proj.weight", d, H, &w->kda_fa, WHOLE));
    TRY(m2(v, "self_attn.f_b_proj.weight", V, d, &w->kda_fb, WHOLE));
    TRY(m2(v, "self_attn.g_a_proj.weight", d, H, &w->kda_ga, WHOLE));
    TRY(m2(v, "self_attn.g_b_proj.weight", V, d, &w->kda_gb, WHOLE));
    TRY(m2(v, "self_attn.b_proj.weight", nh, H, &w->gdn_ba, WHOLE));
    TRY(v1(v, "self_attn.dt_bias", V, &w->gdn_dt_bias, KVC_WINIT_BIAS, WHOLE));
    TRY(visit(v, "self_attn.A_log", 4, a_log, &w->gdn_a_log, NULL, false, KVC_WINIT_BIAS, WHOLE));
    TRY(v1(v, "self_attn.o_norm.weight", d, &w->gdn_norm, KVC_WINIT_NORM, WHOLE));
    return m2(v, "self_attn.o_proj.weight", H, V, &w->wo, WHOLE);
}

/* MiniMax's lightning attention (lightning.c) under self_attn.: qkv_proj [3 V, H] (per head its q, k, v rows; V =
 * nH D), output_gate [V, H], norm [V], out_proj [H, V] (no biases; tensor parallelism is refused, shard_state.c). */
static kvc_status visit_lightning(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, V = c->num_heads * c->head_dim;
    TRY(m2(v, "self_attn.qkv_proj.weight", 3 * V, H, &w->wq, WHOLE));
    TRY(m2(v, "self_attn.output_gate.weight", V, H, &w->wg, WHOLE));
    TRY(v1(v, "self_attn.norm.weight", V, &w->gdn_norm, KVC_WINIT_NORM, WHOLE));
    return m2(v, "self_attn.out_proj.weight", H, V, &w->wo, WHOLE);
}

/* RecurrentGemma's recurrent block (rglru.c) under self_attn. (the checkpoint's temporal_block., ckpt_names.c):
 * linear_y, linear_x [W, H] and linear_out [H, W] with biases, the depthwise conv_1d [W, 1, L] with its bias, the
 * RG-LRU's recurrent_param [W], input_gate_weight / recurrent_gate_weight [nH, bw, bw] and their biases [nH, bw]
 * (tensor parallelism is refused, shard_state.c). */
static kvc_status visit_rglru(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, W = c->lru_width, nh = c->num_heads, bw = W / nh;
    const int64_t taps[3] = {W, 1, c->conv_kernel}, gate_w[3] = {nh, bw, bw}, gate_b[2] = {nh, bw};
    TRY(m2(v, "self_attn.linear_y.weight", W, H, &w->rg_y, WHOLE));
    TRY(v1(v, "self_attn.linear_y.bias", W, &w->rg_y_b, KVC_WINIT_BIAS, WHOLE));
    TRY(m2(v, "self_attn.linear_x.weight", W, H, &w->conv_in, WHOLE));
    TRY(v1(v, "self_attn.linear_x.bias", W, &w->conv_in_b, KVC_WINIT_BIAS, WHOLE));
    TRY(visit(v, "self_attn.conv_1d.weight", 3, taps, &w->conv_w, NULL, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(v1(v, "self_attn.conv_1d.bias", W, &w->conv_b, KVC_WINIT_BIAS, WHOLE));
    TRY(v1(v, "self_attn.rg_lru.recurrent_param", W, &w->rg_a_param, KVC_WINIT_BIAS, WHOLE));
    TRY(visit(v, "self_attn.rg_lru.input_gate_weight", 3, gate_w, &w->rg_in_w, NULL, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(visit(v, "self_attn.rg_lru.input_gate_bias", 2, gate_b, &w->rg_in_b, NULL, false, KVC_WINIT_BIAS, WHOLE));
    TRY(visit(v, "self_attn.rg_lru.recurrent_gate_weight", 3, gate_w, &w->rg_a_w, NULL, false, KVC_WINIT_WEIGHT,
              WHOLE));
    TRY(visit(v, "self_attn.rg_lru.recurrent_gate_bias", 2, gate_b, &w->rg_a_b, NULL, false, KVC_WINIT_BIAS, WHOLE));
    TRY(m2(v, "self_attn.linear_out.weight", H, W, &w->wo, WHOLE));
    return v1(v, "self_attn.linear_out.bias", H, &w->bo, KVC_WINIT_BIAS, WHOLE);
}

/* A Mamba2 mixer (mamba2.c): mamba.in_proj [I + C + nh, H], the depthwise mamba.conv1d [C, 1, L], dt_bias,
 * A_log and D [nh], the gated norm mamba.norm [I], mamba.out_proj [H, I]; in_proj / out_proj biases under
 * mamba_proj_bias, the conv's under mamba_conv_bias. A rank: its heads and groups (shard_state.c's runs), out_proj
 * row-parallel. */
static kvc_status visit_mamba2(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, nh = c->mamba_heads, I = nh * c->mamba_head_dim;
    const int64_t C = I + 2 * c->mamba_groups * c->mamba_d_state, taps[3] = {C, 1, c->conv_kernel};
    const kvc_wsplit in = kvci_shard_state_runs(v->m, KVCI_RUNS_MAMBA_IN);
    const kvc_wsplit xbc = kvci_shard_state_runs(v->m, KVCI_RUNS_MAMBA_CONV);
    TRY(m2(v, "mamba.in_proj.weight", I + C + nh, H, &w->conv_in, in));
    if (c->mamba_proj_bias) TRY(v1(v, "mamba.in_proj.bias", I + C + nh, &w->conv_in_b, KVC_WINIT_BIAS, in));
    TRY(visit(v, "mamba.conv1d.weight", 3, taps, &w->conv_w, NULL, false, KVC_WINIT_WEIGHT, xbc));
    if (c->mamba_conv_bias) TRY(v1(v, "mamba.conv1d.bias", C, &w->conv_b, KVC_WINIT_BIAS, xbc));
    TRY(v1(v, "mamba.dt_bias", nh, &w->ssm_dt_bias, KVC_WINIT_BIAS, even(v, 0, nh)));
    TRY(v1(v, "mamba.A_log", nh, &w->ssm_a_log, KVC_WINIT_BIAS, even(v, 0, nh)));
    TRY(v1(v, "mamba.D", nh, &w->ssm_d, KVC_WINIT_NORM, even(v, 0, nh)));
    if (!c->mamba_parallel_attn || c->mamba_rms_norm)
        TRY(v1(v, "mamba.norm.weight", I, &w->ssm_norm, KVC_WINIT_NORM, even(v, 0, I)));
    TRY(m2(v, "mamba.out_proj.weight", H, I, &w->ssm_out, even(v, 1, I)));
    const bool out_bias = c->mamba_parallel_attn ? c->mamba_out_bias : c->mamba_proj_bias;
    if (out_bias) TRY(v1(v, "mamba.out_proj.bias", H, &w->ssm_out_b, KVC_WINIT_BIAS, rank0_bias(v)));
    return KVC_OK;
}

/* The rest of Zamba's Mamba-1 mixer of nh = mamba_heads heads of P channels (no tensor parallelism): per head its
 * x_proj_weight [nh, R + 2 N, P] and dt_proj_weight [nh, P, R], dt_proj_bias and D [nh, P], A_log [nh, P, N]. */
static kvc_status visit_zamba_mixer(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, I = c->mamba_inner, N = c->mamba_d_state, R = c->mamba_dt_rank;
    const int64_t nh = c->mamba_heads, P = I / nh, a_log[3] = {nh, P, N};
    TRY(m3(v, "mamba.x_proj_weight", nh, R + 2 * N, P, &w->ssm_x_proj, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(m3(v, "mamba.dt_proj_weight", nh, P, R, &w->ssm_dt_proj, false, KVC_WINIT_WEIGHT, WHOLE));
    TRY(v2(v, "mamba.dt_proj_bias", nh, P, &w->ssm_dt_bias, KVC_WINIT_BIAS, WHOLE));
    TRY(visit(v, "mamba.A_log", 3, a_log, &w->ssm_a_log, NULL, false, KVC_WINIT_BIAS, WHOLE));
    TRY(v2(v, "mamba.D", nh, P, &w->ssm_d, KVC_WINIT_NORM, WHOLE));
    TRY(m2(v, "mamba.out_proj.weight", H, I, &w->ssm_out, WHOLE));
    if (c->mamba_proj_bias) TRY(v1(v, "mamba.out_proj.bias", H, &w->ssm_out_b, KVC_WINIT_BIAS, WHOLE));
    return KVC_OK;
}

/* A Mamba-1 mixer (mamba1.c): mamba.in_proj [2 I, H] (Zamba's: x and z rows alternating), the depthwise mamba.conv1d
 * [I, 1, L], x_proj [R + 2 N, I], dt_proj [I, R] and its bias [I], A_log [I, N], D [I], out_proj [H, I] (Jamba: the
 * weights of its dt, B and C norms, [R], [N], [N]); in_proj / out_proj biases under mamba_proj_bias, the conv's under
 * mamba_conv_bias. A rank: its channels (I of the config) of in_proj's x and z, the conv, dt_proj, A_log and D; x_proj
 * and out_proj by those input columns (their partial sums added over the ranks), the dt / B / C norms whole, out_proj's
 * bias on rank 0. */
static kvc_status visit_mamba1(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, I = c->mamba_inner, N = c->mamba_d_state, R = c->mamba_dt_rank;
    const int64_t taps[3] = {I, 1, c->conv_kernel};
    const kvc_wsplit in = kvci_shard_state_runs(v->m, KVCI_RUNS_MAMBA1_IN), rows = even(v, 0, I);
    TRY(m2(v, "mamba.in_proj.weight", 2 * I, H, &w->conv_in, in));
    if (c->mamba_proj_bias) TRY(v1(v, "mamba.in_proj.bias", 2 * I, &w->conv_in_b, KVC_WINIT_BIAS, in));
    TRY(visit(v, "mamba.conv1d.weight", 3, taps, &w->conv_w, NULL, false, KVC_WINIT_WEIGHT, rows));
    if (c->mamba_conv_bias) TRY(v1(v, "mamba.conv1d.bias", I, &w->conv_b, KVC_WINIT_BIAS, rows));
    if (c->mamba_heads > 0) return visit_zamba_mixer(v, c, w);
    TRY(m2(v, "mamba.x_proj.weight", R + 2 * N, I, &w->ssm_x_proj, even(v, 1, I)));
    if (strcmp(c->model_type, "jamba") == 0) { /* Jamba's dt / B / C norms have weights */
        TRY(v1(v, "mamba.dt_layernorm.weight", R, &w->ssm_dt_norm, KVC_WINIT_NORM, WHOLE));
        TRY(v1(v, "mamba.b_layernorm.weight", N, &w->ssm_b_norm, KVC_WINIT_NORM, WHOLE));
        TRY(v1(v, "mamba.c_layernorm.weight", N, &w->ssm_c_norm, KVC_WINIT_NORM, WHOLE));
    }
    TRY(m2(v, "mamba.dt_proj.weight", I, R, &w->ssm_dt_proj, rows));
    TRY(v1(v, "mamba.dt_proj.bias", I, &w->ssm_dt_bias, KVC_WINIT_BIAS, rows));
    TRY(v2(v, "mamba.A_log", I, N, &w->ssm_a_log, KVC_WINIT_BIAS, rows));
    TRY(v1(v, "mamba.D", I, &w->ssm_d, KVC_WINIT_NORM, rows));
    TRY(m2(v, "mamba.out_proj.weight", H, I, &w->ssm_out, even(v, 1, I)));
    if (c->mamba_proj_bias) TRY(v1(v, "mamba.out_proj.bias", H, &w->ssm_out_b, KVC_WINIT_BIAS, rank0_bias(v)));
    return KVC_OK;
}

/* RWKV-4's time mixing (rwkv.c) under attention.: time_decay, time_first [H], time_mix_key / _value / _receptance
 * [1, 1, H], key, value, receptance, output [H, H]; no biases, no tensor parallelism (shard_state.c). */
static kvc_status visit_rwkv_time_mix(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, mix[3] = {1, 1, H};
    static const char *const names[3] = {"attention.time_mix_key", "attention.time_mix_value",
                                         "attention.time_mix_receptance"};
    TRY(v1(v, "attention.time_decay", H, &w->rwkv_decay, KVC_WINIT_BIAS, WHOLE));
    TRY(v1(v, "attention.time_first", H, &w->rwkv_first, KVC_WINIT_BIAS, WHOLE));
    for (int j = 0; j < 3; j++) TRY(visit(v, names[j], 3, mix, &w->rwkv_mix[j], NULL, false, KVC_WINIT_NORM, WHOLE));
    TRY(m2(v, "attention.key.weight", H, H, &w->wk, WHOLE));
    TRY(m2(v, "attention.value.weight", H, H, &w->wv, WHOLE));
    TRY(m2(v, "attention.receptance.weight", H, H, &w->wq, WHOLE));
    return m2(v, "attention.output.weight", H, H, &w->wo, WHOLE);
}

/* RWKV-4's channel mixing under feed_forward.: time_mix_key / _receptance [1, 1, H], key [I, H], receptance [H, H],
 * value [H, I]. */
static kvc_status visit_rwkv_channel_mix(visitor *v, const kvc_model_config *c, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, I = c->intermediate_size, mix[3] = {1, 1, H};
    TRY(visit(v, "feed_forward.time_mix_key", 3, mix, &w->rwkv_mix[3], NULL, false, KVC_WINIT_NORM, WHOLE));
    TRY(visit(v, "feed_forward.time_mix_receptance", 3, mix, &w->rwkv_mix[4], NULL, false, KVC_WINIT_NORM, WHOLE));
    TRY(m2(v, "feed_forward.key.weight", I, H, &w->w_up, WHOLE));
    TRY(m2(v, "feed_forward.receptance.weight", H, H, &w->w_gate, WHOLE));
    return m2(v, "feed_forward.value.weight", H, I, &w->w_down, WHOLE);
}

/* Zamba's and Zamba2's layer l: its mixer (Zamba: Mamba-1, Zamba2: Mamba2) and input_layernorm (a hybrid layer's
 * under mamba_decoder.); a hybrid layer's linear [H, H] and Zamba2's adapters of its use site i
 * (linear_{q,k,v}_adapter_list.i under shared_attn_adapter, gate_up_proj_adapter_list.i: .0 [r, in], .1 [out, r]),
 * read, with the shared block itself at its first use site only, from model.layers.F.shared_transformer. (Zamba:
 * shared_transf., gate_proj and up_proj apart) of that first site F (transformers ties the later sites' copies to
 * it). No tensor parallelism (shard_state.c). */
static kvc_status visit_zamba(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size, A = 2 * H, I = c->intermediate_size, r = c->adapter_rank;
    const int64_t nq = c->num_heads * c->head_dim, nk = c->num_kv_heads * c->head_dim;
    const bool hybrid = c->layer_shared_block[l], zamba1 = c->layer_mamba1[l];
    snprintf(v->prefix, sizeof v->prefix, hybrid ? "model.layers.%lld.mamba_decoder." : "model.layers.%lld.",
             (long long)l);
    TRY(v1(v, "input_layernorm.weight", H, &w->in_norm, KVC_WINIT_NORM, WHOLE));
    TRY(zamba1 ? visit_mamba1(v, c, w) : visit_mamba2(v, c, w));
    if (!hybrid) return KVC_OK;
    snprintf(v->prefix, sizeof v->prefix, "model.layers.%lld.", (long long)l);
    TRY(m2(v, "linear.weight", H, H, &w->zamba_linear, WHOLE));
    int64_t first = l;
    const int64_t site = kvci_zamba_site(c, l, &first);
    snprintf(v->prefix, sizeof v->prefix, "model.layers.%lld.%s.", (long long)first,
             zamba1 ? "shared_transf" : "shared_transformer");
    if (first == l) { /* the block, once */
        TRY(v1(v, "input_layernorm.weight", A, &w->post_norm, KVC_WINIT_NORM, WHOLE));
        TRY(m2(v, "self_attn.q_proj.weight", nq, A, &w->wq, WHOLE));
        TRY(m2(v, "self_attn.k_proj.weight", nk, A, &w->wk, WHOLE));
        TRY(m2(v, "self_attn.v_proj.weight", nk, A, &w->wv, WHOLE));
        TRY(m2(v, "self_attn.o_proj.weight", H, nq, &w->wo, WHOLE));
        TRY(v1(v, "pre_ff_layernorm.weight", H, &w->pre_ff_norm, KVC_WINIT_NORM, WHOLE));
        const char *gu = zamba1 ? NULL : "feed_forward.gate_up_proj.weight"; /* Zamba2's fused */
        TRY(m2_in(v, "feed_forward.gate_proj.weight", I, H, &w->w_gate, WHOLE, (kvc_wfused){gu, 2 * I, 0, 0, 0}));
        TRY(m2_in(v, "feed_forward.up_proj.weight", I, H, &w->w_up, WHOLE, (kvc_wfused){gu, 2 * I, I, 0, 0}));
        TRY(m2(v, "feed_forward.down_proj.weight", H, I, &w->w_down, WHOLE));
    }
    static const char *const list[4] = {"self_attn.linear_q_adapter_list", "self_attn.linear_k_adapter_list",
                                        "self_attn.linear_v_adapter_list", "feed_forward.gate_up_proj_adapter_list"};
    const int64_t in[4] = {A, A, A, H}, out[4] = {A, A, A, 2 * I};
    for (int j = c->shared_attn_adapter ? 0 : 3; r > 0 && j < 4; j++) {
        char n[96];
        snprintf(n, sizeof n, "%s.%lld.0.weight", list[j], (long long)site);
        TRY(m2(v, n, r, in[j], &w->zamba_ad_a[j], WHOLE));
        snprintf(n, sizeof n, "%s.%lld.1.weight", list[j], (long long)site);
        TRY(m2(v, n, out[j], r, &w->zamba_ad_b[j], WHOLE));
    }
    return KVC_OK;
}

/* Layer l's attention or the mixer in its place (Falcon-H1: both). */
static kvc_status visit_mixer(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w) {
    if (c->layer_no_mixer[l]) return KVC_OK; /* Nemotron-H: an MLP alone */
    if (c->layer_conv[l]) return visit_short_conv(v, c, w);
    if (c->layer_gdn[l]) return c->gdn_kda ? visit_kda(v, c, w) : visit_gated_delta(v, c, w);
    if (c->layer_mamba1[l]) return visit_mamba1(v, c, w);
    if (c->layer_lightning[l]) return visit_lightning(v, c, w);
    if (c->family == KVC_FAMILY_RWKV) return visit_rwkv_time_mix(v, c, w);
    if (c->layer_rglru[l]) return visit_rglru(v, c, w);
    if (c->attention_experts) return visit_jetmoe_attn(v, c, w);
    if (c->layer_mamba[l]) {
        TRY(visit_mamba2(v, c, w));
        return c->mamba_parallel_attn ? visit_gqa_attn(v, c, l, w) : KVC_OK; /* Falcon-H1: attention beside it */
    }
    if (c->family == KVC_FAMILY_GEMMA4 || c->family == KVC_FAMILY_GEMMA3N) return visit_gemma4_attn(v, c, l, w);
    const bool mla =
        c->family == KVC_FAMILY_DEEPSEEK_V3 || c->family == KVC_FAMILY_KIMI_LINEAR || c->family == KVC_FAMILY_HY_V4;
    return mla ? visit_mla_attn(v, c, l, w) : visit_gqa_attn(v, c, l, w);
}

static kvc_status visit_layer(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w) {
    const int64_t H = c->hidden_size;
    if (c->num_mem_blocks > 0) return visit_zamba(v, c, l, w); /* Zamba(2): its names, its shared block */
    snprintf(v->prefix, sizeof v->prefix, "model.layers.%lld.", (long long)l);
    TRY(visit_layer_norms(v, c, l, w));
    if (c->residual_gates) {
        TRY(v1(v, "attention_residual_gate.weight", H, &w->attn_gate, KVC_WINIT_BIAS, WHOLE));
        TRY(v1(v, "feedforward_residual_gate.weight", H, &w->ffn_gate, KVC_WINIT_BIAS, WHOLE));
    }
    for (int i = 0; i < 2 && c->hc_mult > 0; i++) { /* HY V4's hyper-connections (hyper_conn.c) */
        const int64_t n = c->hc_mult;
        char name[32];
        snprintf(name, sizeof name, "%s.fn", i ? "ffn_hc" : "attn_hc");
        TRY(v2(v, name, 2 * n, n * H, &w->hc_fn[i], KVC_WINIT_WEIGHT, WHOLE));
        snprintf(name, sizeof name, "%s.base", i ? "ffn_hc" : "attn_hc");
        TRY(v1(v, name, 2 * n, &w->hc_base[i], KVC_WINIT_BIAS, WHOLE));
        snprintf(name, sizeof name, "%s.scale", i ? "ffn_hc" : "attn_hc");
        TRY(v1(v, name, 2, &w->hc_scale[i], KVC_WINIT_BIAS, WHOLE));
    }
    TRY(visit_mixer(v, c, l, w));
    if (c->layer_no_ffn[l]) return KVC_OK; /* Nemotron-H: a mixer or attention alone */
    if (c->family == KVC_FAMILY_GPT_OSS) {
        const int64_t E = c->num_experts, I = c->intermediate_size;
        w->moe = true;
        TRY(m2(v, "mlp.router.weight", E, H, &w->router_w, WHOLE));
        TRY(v1(v, "mlp.router.bias", E, &w->router_b, KVC_WINIT_BIAS, WHOLE));
        TRY(m3(v, "mlp.experts.gate_up_proj", E, 2 * I, H, &w->gu, true, KVC_WINIT_GATE_UP, even(v, 2, 2 * I)));
        TRY(v2(v, "mlp.experts.gate_up_proj_bias", E, 2 * I, &w->gu_b, KVC_WINIT_BIAS, even(v, 1, 2 * I)));
        TRY(m3(v, "mlp.experts.down_proj", E, H, I, &w->dn, true, KVC_WINIT_WEIGHT, even(v, 1, I)));
        TRY(v2(v, "mlp.experts.down_proj_bias", E, H, &w->dn_b, KVC_WINIT_BIAS, rank0_bias(v)));
    } else if (c->family == KVC_FAMILY_GEMMA4) {
        const bool wide = c->mlp_double_shared && kvci_model_kv_source(c, l) != l; /* use_double_wide_mlp */
        TRY(visit_dense_mlp(v, c, w, "", (wide ? 2 : 1) * c->intermediate_size, &w->w_gate, &w->w_up, &w->w_down));
        if (c->layer_moe[l]) TRY(visit_gemma4_moe(v, c, w));
    } else if (c->family == KVC_FAMILY_RWKV) {
        TRY(visit_rwkv_channel_mix(v, c, w));
    } else if (c->attention_experts) {
        TRY(visit_jetmoe_mlp(v, c, w));
    } else if (c->layer_moe[l] && strcmp(c->model_type, "ergo") == 0) {
        TRY(visit_ergo_moe(v, c, w));
    } else if (c->layer_moe[l] && strcmp(c->model_type, "nemotron_h") == 0) {
        TRY(visit_nemotron_moe(v, c, w));
    } else if (c->layer_moe[l] && strncmp(c->model_type, "granitemoe", 10) == 0) {
        TRY(visit_granite_moe(v, c, w));
    } else if (c->layer_moe[l]) {
        TRY(visit_routed_moe(v, c, w));
        if (c->moe_shortcut) /* LongCat-Flash: the sub-layer's MLP beside the decoder layer's MoE */
            TRY(visit_dense_mlp(v, c, w, "", c->intermediate_size, &w->w_gate, &w->w_up, &w->w_down));
    } else if (strcmp(c->model_type, "granitemoehybrid") == 0) { /* Granite 4.0-H without experts: its shared MLP */
        TRY(visit_granite_shared(v, c, c->intermediate_size, v->m->full.intermediate_size, &w->w_gate, &w->w_up,
                                 &w->w_down));
    } else {
        TRY(visit_dense_mlp(v, c, w, "", c->intermediate_size, &w->w_gate, &w->w_up, &w->w_down));
    }
    TRY(visit_gemma4_tail(v, c, w));
    return c->family == KVC_FAMILY_GEMMA3N ? visit_gemma3n(v, c, w) : KVC_OK;
}

kvc_status kvci_model_visit_weights(kvc_model *m, kvc_weight_visit_fn fn, void *user) {
    const kvc_model_config *c = &m->cfg;
    visitor v = {.fn = fn, .user = user, .m = m, .prefix = ""};
    const int64_t E = kvci_model_embed_width(c);
    TRY(m2(&v, "model.embed_tokens.weight", kvci_model_input_vocab(c), E, &m->embed, WHOLE));
    if (c->embed_dim > 0) { /* OPT-350m's projections between the embedding's width and hidden_size */
        TRY(m2(&v, "model.project_in.weight", c->hidden_size, E, &m->project_in, WHOLE));
        TRY(m2(&v, "model.project_out.weight", E, c->hidden_size, &m->project_out, WHOLE));
    }
    if (c->embed_norm && !c->norm_weightless) { /* BLOOM's word_embeddings_layernorm */
        TRY(v1(&v, "model.embed_norm.weight", c->hidden_size, &m->embed_norm, KVC_WINIT_NORM, WHOLE));
        if (c->norm_bias) /* BLOOM's and BERT's have one; ModernBERT's by norm_bias */
            TRY(v1(&v, "model.embed_norm.bias", c->hidden_size, &m->embed_norm_b, KVC_WINIT_BIAS, WHOLE));
    }
    if (c->pos_learned && !c->pos_sinusoidal)
        TRY(v2(&v, "model.embed_positions.weight", c->max_position_embeddings + c->pos_offset, c->hidden_size,
               &m->pos_embed, KVC_WINIT_WEIGHT, WHOLE));
    if (c->type_vocab_size > 0) /* BERT's token types (row 0 added) */
        TRY(v2(&v, "model.token_type_embeddings.weight", c->type_vocab_size, c->hidden_size, &m->type_embed,
               KVC_WINIT_WEIGHT, WHOLE));
    if (c->task_type_vocab_size > 0) /* ERNIE's task types (row 0 added) */
        TRY(v2(&v, "model.task_type_embeddings.weight", c->task_type_vocab_size, c->hidden_size, &m->task_embed,
               KVC_WINIT_WEIGHT, WHOLE));
    if (c->ple_dim > 0) { /* Gemma 4's per-layer inputs */
        const int64_t LP = c->num_layers * c->ple_dim;
        TRY(m2(&v, "model.embed_tokens_per_layer.weight", c->ple_vocab, LP, &m->ple_embed, WHOLE));
        TRY(m2(&v, "model.per_layer_model_projection.weight", LP, c->hidden_size, &m->ple_model_proj, WHOLE));
        TRY(v1(&v, "model.per_layer_projection_norm.weight", c->ple_dim, &m->ple_proj_norm, KVC_WINIT_NORM, WHOLE));
    }
    for (int64_t i = 1; c->family == KVC_FAMILY_GEMMA3N && i < c->altup_inputs; i++) { /* Gemma 3n's copies */
        char n[64];
        snprintf(n, sizeof n, "model.altup_projections.%lld.weight", (long long)(i - 1));
        TRY(m2(&v, n, c->hidden_size, c->hidden_size, &m->altup_proj[i - 1], WHOLE));
        snprintf(n, sizeof n, "model.altup_unembed_projections.%lld.weight", (long long)(i - 1));
        TRY(m2(&v, n, c->hidden_size, c->hidden_size, &m->altup_unembed[i - 1], WHOLE));
    }
    v.conv1d = conv1d_layers(c);
    for (int64_t l = 0; l < c->num_layers; l++) TRY(visit_layer(&v, c, l, &m->layers[l]));
    v.conv1d = false, v.prefix[0] = '\0';
    const char *final = c->family == KVC_FAMILY_LFM2 ? "model.embedding_norm.weight" : "model.norm.weight";
    if (strcmp(c->model_type, "bamba") == 0 || strcmp(c->model_type, "falcon_h1") == 0 || c->num_mem_blocks > 0)
        final = "model.final_layernorm.weight";
    if (strcmp(c->model_type, "nemotron_h") == 0 || strcmp(c->model_type, "mamba2") == 0 ||
        (c->family == KVC_FAMILY_JAMBA && strcmp(c->model_type, "jamba") != 0 && c->num_mem_blocks == 0))
        final = "model.norm_f.weight";
    if (c->hc_mult > 0) { /* HY V4's hc_head */
        TRY(v2(&v, "model.hc_head.hc_fn", c->hc_mult, c->hc_mult * c->hidden_size, &m->hc_head_fn, KVC_WINIT_WEIGHT,
               WHOLE));
        TRY(v1(&v, "model.hc_head.hc_base", c->hc_mult, &m->hc_head_base, KVC_WINIT_BIAS, WHOLE));
        TRY(v1(&v, "model.hc_head.hc_scale", 1, &m->hc_head_scale, KVC_WINIT_BIAS, WHOLE));
    }
    const bool final_norm = !c->final_norm_none;
    if (final_norm && !c->norm_weightless) TRY(v1(&v, final, c->hidden_size, &m->final_norm, KVC_WINIT_NORM, WHOLE));
    if (final_norm && c->norm_bias)
        TRY(v1(&v, "model.norm.bias", c->hidden_size, &m->final_norm_b, KVC_WINIT_BIAS, WHOLE));
    if (c->head_transform) { /* BERT's dense + act + LayerNorm before the head */
        TRY(m2(&v, "model.head_dense.weight", c->hidden_size, c->hidden_size, &m->head_dense, WHOLE));
        if (!c->head_dense_unbiased)
            TRY(v1(&v, "model.head_dense.bias", c->hidden_size, &m->head_dense_b, KVC_WINIT_BIAS, WHOLE));
        TRY(v1(&v, "model.head_norm.weight", c->hidden_size, &m->head_norm, KVC_WINIT_NORM, WHOLE));
        if (c->norm_bias) TRY(v1(&v, "model.head_norm.bias", c->hidden_size, &m->head_norm_b, KVC_WINIT_BIAS, WHOLE));
    }
    if (!c->tie_word_embeddings) TRY(m2(&v, "lm_head.weight", c->vocab_size, E, &m->lm_head, WHOLE));
    if (c->head_bias) TRY(v1(&v, "lm_head.bias", c->vocab_size, &m->lm_head_b, KVC_WINIT_BIAS, WHOLE));
    return KVC_OK;
}

/* ---- arena ---------------------------------------------------------------- */

static int64_t numel(const kvc_wtensor *t) {
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* Bytes of a tensor in the arena (a 64-byte multiple). */
static int64_t tensor_bytes(const kvc_wtensor *t) {
    return t->mat ? t->mat->count * kvci_wmat_matrix_bytes(t->mat) : (numel(t) * 4 + 63) / 64 * 64;
}

/* Sums the arena's bytes; refuses a tensor or a total beyond KVC_MODEL_MAX_WEIGHT_BYTES
 * before any product can overflow (every size is at most KVC_MODEL_MAX_DIM). */
static kvc_status count_fn(void *user, const kvc_wtensor *t) {
    int64_t *total = user, n = 1;
    for (int32_t i = 0; i < t->ndim; i++)
        if (!kvci_mul64(n, t->shape[i], &n) || n > KVC_MODEL_MAX_WEIGHT_BYTES / 4)
            return kvci_fail(KVC_EINVAL, "model: tensor \"%s\" needs more than the %lld-byte weight limit", t->name,
                             (long long)KVC_MODEL_MAX_WEIGHT_BYTES);
    *total += tensor_bytes(t);
    if (*total > KVC_MODEL_MAX_WEIGHT_BYTES)
        return kvci_fail(KVC_EINVAL, "model: the weights up to tensor \"%s\" need more than the %lld-byte weight limit",
                         t->name, (long long)KVC_MODEL_MAX_WEIGHT_BYTES);
    return KVC_OK;
}

static kvc_status assign_fn(void *user, const kvc_wtensor *t) {
    char **cur = user;
    if (t->mat)
        t->mat->data = *cur;
    else
        *t->vec = (float *)*cur;
    *cur += tensor_bytes(t);
    return KVC_OK;
}

void kvc_model_destroy(kvc_model *m) {
    if (!m) return;
    kvci_pages_free(m->arena, (size_t)m->arena_bytes);
    kvc_aligned_free(m->derived);
    kvci_free(m->inv_freq);
    kvci_free(m->inv_freq_sliding);
    kvci_free(m->inv_freq_long);
    kvci_free(m->alibi);
    kvci_free(m->pos_freq);
    kvci_free(m);
}

/* Every size of a config is bounded before anything is multiplied with it:
 * required ones in [1, KVC_MODEL_MAX_DIM], optional ones in [0, it]. */
static kvc_status check_sizes(const kvc_model_config *c) {
    const bool mla = kvci_family_get(c->family)->mla, moe = c->family == KVC_FAMILY_GPT_OSS;
    bool routed = false; /* a layer of routed experts: their count, k and width are required */
    for (int64_t l = 0; l < c->num_layers; l++) routed |= c->layer_moe[l];
    const struct {
        const char *name;
        int64_t value, min;
    } sizes[] = {
        {"vocab_size", c->vocab_size, 1},
        {"input_vocab_size", c->input_vocab_size, 0},
        {"hidden_size", c->hidden_size, 1},
        {"intermediate_size", c->intermediate_size, 1},
        {"num_attention_heads", c->num_heads, 1},
        {"num_key_value_heads", c->num_kv_heads, 1},
        {"head_dim", c->head_dim, 2},
        {"num_local_experts", c->num_experts, moe},
        {"num_experts_per_tok", c->experts_per_tok, moe || routed},
        {"q_lora_rank", c->q_lora_rank, 0},
        {"kv_lora_rank", c->kv_lora_rank, mla},
        {"qk_nope_head_dim", c->qk_nope_head_dim, mla},
        {"qk_rope_head_dim", c->qk_rope_head_dim, 0},
        {"v_head_dim", c->v_head_dim, mla},
        {"moe_intermediate_size", c->moe_intermediate_size, routed},
        {"n_routed_experts", c->n_routed_experts, routed},
        {"n_shared_experts", c->n_shared_experts, 0},
        {"shared_expert_intermediate_size", c->shared_expert_intermediate_size, 0},
        {"first_k_dense_replace", c->first_k_dense_replace, 0},
        {"moe_latent_size", c->moe_latent_size, 0},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value < sizes[i].min || sizes[i].value > KVC_MODEL_MAX_DIM)
            return kvci_fail(KVC_EINVAL, "model: %s %lld outside [%lld, %lld]", sizes[i].name,
                             (long long)sizes[i].value, (long long)sizes[i].min, (long long)KVC_MODEL_MAX_DIM);
    return KVC_OK;
}

/* The scales, the ALiBi fields and the short-convolution layers as the config readers set them (a caller's own
 * struct was taken unchecked: a NaN scale made every logit NaN, layer_conv outside LFM2 visited conv weights that
 * the family's attention, reading q/k/v, never had, and a conv_kernel below 2 a state of no inputs). */
/* Gemma 3n's fields: altup_inputs in [1, KVC_GEMMA3N_MAX_ALTUP], altup_active below it, laurel_rank >= 1, each
 * layer_act_sparsity in [0, 1); none of them (0) on another family. */
static kvc_status check_gemma3n(const kvc_model_config *c) {
    bool sparse = false;
    for (int64_t l = 0; l < c->num_layers; l++) {
        if (!(c->layer_act_sparsity[l] >= 0.0f && c->layer_act_sparsity[l] < 1.0f))
            return kvci_fail(KVC_EINVAL, "model: layer_act_sparsity[%lld] %g outside [0, 1)", (long long)l,
                             (double)c->layer_act_sparsity[l]);
        sparse |= c->layer_act_sparsity[l] > 0.0f;
    }
    if (c->family != KVC_FAMILY_GEMMA3N) {
        if (c->altup_inputs != 0 || c->altup_active != 0 || c->laurel_rank != 0 || c->altup_correct_scale || sparse)
            return kvci_fail(KVC_EINVAL, "model: altup_inputs, altup_active, altup_correct_scale, laurel_rank and "
                                         "layer_act_sparsity need family gemma3n");
        return KVC_OK;
    }
    if (c->altup_inputs < 1 || c->altup_inputs > KVC_GEMMA3N_MAX_ALTUP || c->altup_active < 0 ||
        c->altup_active >= c->altup_inputs || c->laurel_rank < 1 || c->laurel_rank > KVC_HP_MAX_WIDTH)
        return kvci_fail(KVC_EINVAL,
                         "model: gemma3n needs altup_inputs in [1, %d], altup_active in [0, altup_inputs) and "
                         "laurel_rank in [1, %lld] (got %lld, %lld, %lld)",
                         KVC_GEMMA3N_MAX_ALTUP, (long long)KVC_HP_MAX_WIDTH, (long long)c->altup_inputs,
                         (long long)c->altup_active, (long long)c->laurel_rank);
    return KVC_OK;
}

static kvc_status check_extras(const kvc_model_config *c) {
    const struct {
        const char *name;
        double value;
    } scales[] = {{"embed_scale", c->embed_scale},
                  {"residual_multiplier", c->residual_multiplier},
                  {"attention_multiplier", c->attention_multiplier},
                  {"logits_scaling", c->logits_scaling},
                  {"alibi_bias_max", c->alibi_bias_max},
                  {"attn_value_scale", c->attn_value_scale}};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
        if (!(scales[i].value >= 0.0 && scales[i].value <= KVC_HP_MAX_FACTOR))
            return kvci_fail(KVC_EINVAL, "model: %s %g outside [0, %g] (0: none)", scales[i].name, scales[i].value,
                             KVC_HP_MAX_FACTOR);
    if (!c->alibi && (c->alibi_in_scale || c->alibi_bias_max > 0.0))
        return kvci_fail(KVC_EINVAL, "model: alibi_in_scale and alibi_bias_max need alibi");
    if (c->input_vocab_size != 0 && (c->input_vocab_size <= c->vocab_size || c->tie_word_embeddings))
        return kvci_fail(KVC_EINVAL,
                         "model: input_vocab_size %lld must exceed vocab_size %lld (0: none), and the head untied",
                         (long long)c->input_vocab_size, (long long)c->vocab_size);
    /* the state mixers, each its family's as the config reader sets them (config.c): another family's forward
     * would run one over weights it never allocated (a division by zero, a heap overrun) */
    const struct {
        const char *name;
        const bool *marks;
        kvc_model_family family, or_family;
    } mixers[] = {{"layer_conv", c->layer_conv, KVC_FAMILY_LFM2, KVC_FAMILY_LFM2},
                  {"layer_gdn", c->layer_gdn, KVC_FAMILY_QWEN3_NEXT, KVC_FAMILY_KIMI_LINEAR},
                  {"layer_mamba", c->layer_mamba, KVC_FAMILY_MAMBA2_HYBRID, KVC_FAMILY_MAMBA2_HYBRID},
                  {"layer_mamba1", c->layer_mamba1, KVC_FAMILY_JAMBA, KVC_FAMILY_JAMBA},
                  {"layer_lightning", c->layer_lightning, KVC_FAMILY_MINIMAX, KVC_FAMILY_MINIMAX},
                  {"layer_rglru", c->layer_rglru, KVC_FAMILY_RECURRENT_GEMMA, KVC_FAMILY_RECURRENT_GEMMA}};
    int64_t conv = 0;
    for (size_t i = 0; i < sizeof mixers / sizeof mixers[0]; i++) {
        int64_t n = 0;
        for (int64_t l = 0; l < c->num_layers; l++) n += mixers[i].marks[l];
        if (n > 0 && c->family != mixers[i].family && c->family != mixers[i].or_family)
            return kvci_fail(KVC_EINVAL, "model: %s marks %lld layers, which the %s family does not run (%s's)",
                             mixers[i].name, (long long)n, kvc_model_family_name(c->family),
                             kvc_model_family_name(mixers[i].family));
        if (i == 0) conv = n;
    }
    if (conv > 0 && (c->conv_kernel < 2 || c->conv_kernel > KVC_HP_MAX_DIM))
        return kvci_fail(KVC_EINVAL, "model: conv_kernel %lld outside [2, %d] (layer_conv marks %lld layers)",
                         (long long)c->conv_kernel, KVC_HP_MAX_DIM, (long long)conv);
    if (c->attn_head_gate && (kvci_family_get(c->family)->mla || c->attn_output_gate))
        return kvci_fail(KVC_EINVAL, "model: attn_head_gate needs GQA attention without attn_output_gate");
    if (c->attn_gate_softplus && !c->attn_head_gate && !c->attn_gate_proj)
        return kvci_fail(KVC_EINVAL, "model: attn_gate_softplus needs attn_head_gate or attn_gate_proj");
    if (c->sinks_sliding_only && !c->attn_sinks)
        return kvci_fail(KVC_EINVAL, "model: sinks_sliding_only needs attn_sinks");
    if (c->mla_q_gate && (c->family != KVC_FAMILY_DEEPSEEK_V3 || c->q_lora_rank < 1))
        return kvci_fail(KVC_EINVAL, "model: mla_q_gate needs the deepseek_v3 family's MLA with a q LoRA");
    if (c->gated_norm_rank < 0 || c->gated_norm_rank > KVC_HP_MAX_WIDTH)
        return kvci_fail(KVC_EINVAL, "model: gated_norm_rank %lld outside [0, %lld]", (long long)c->gated_norm_rank,
                         (long long)KVC_HP_MAX_WIDTH);
    if ((c->v_norm || c->kv_shared_layers != 0 || c->ple_dim != 0) && c->family != KVC_FAMILY_GEMMA4 &&
        c->family != KVC_FAMILY_GEMMA3N)
        return kvci_fail(KVC_EINVAL, "model: v_norm, kv_shared_layers and ple_dim need family gemma4 or gemma3n");
    if ((c->attn_k_eq_v || c->layer_scalar || c->mlp_double_shared) && c->family != KVC_FAMILY_GEMMA4)
        return kvci_fail(KVC_EINVAL, "model: attn_k_eq_v, layer_scalar and mlp_double_shared need family gemma4");
    KVC_TRY(check_gemma3n(c));
    if (c->conv_channels != 0 && c->conv_channels != c->hidden_size) /* a rank's own: set by the shard */
        return kvci_fail(KVC_EINVAL, "model: conv_channels %lld is neither 0 nor hidden_size %lld",
                         (long long)c->conv_channels, (long long)c->hidden_size);
    return KVC_OK;
}

/* Zamba's and Zamba2's fields (num_mem_blocks > 0): theirs only, every layer a mixer (Zamba: Mamba-1, Zamba2:
 * Mamba2) without its own MLP, the hybrid layers marked by layer_shared_block alone, the shared MLP's activation;
 * Zamba2 an adapter_rank and attention adapters only where every head count x head_dim is 2 hidden_size, Zamba one
 * block and no adapters. */
static kvc_status check_zamba(const kvc_model_config *c) {
    bool any = false;
    for (int64_t l = 0; l < c->num_layers; l++) any |= c->layer_shared_block[l];
    if (c->num_mem_blocks == 0 && !any && !c->shared_attn_adapter && c->adapter_rank == 0) return KVC_OK;
    const int64_t A = 2 * c->hidden_size;
    const bool z2 = strcmp(c->model_type, "zamba2") == 0, z1 = strcmp(c->model_type, "zamba") == 0;
    if ((!z1 && !z2) || c->num_mem_blocks < 1 || c->num_mem_blocks > KVC_MODEL_MAX_LAYERS ||
        (z2 && (c->adapter_rank < 1 || c->adapter_rank > KVC_MODEL_MAX_DIM)) ||
        (z1 && (c->adapter_rank != 0 || c->num_mem_blocks != 1 || c->shared_attn_adapter)) ||
        (c->shared_act != KVC_MLP_SILU && c->shared_act != KVC_MLP_GELU && c->shared_act != KVC_MLP_GELU_TANH) ||
        (c->shared_attn_adapter && (c->num_heads * c->head_dim != A || c->num_kv_heads * c->head_dim != A)))
        return kvci_fail(KVC_EINVAL,
                         "model: num_mem_blocks %lld, adapter_rank %lld, shared_act %d, shared_attn_adapter: zamba2's "
                         "and zamba's only, num_mem_blocks in [1, %d] (zamba: 1), adapter_rank >= 1 (zamba: 0), "
                         "shared_act silu, gelu or gelu_tanh, attention adapters (zamba2's) with heads x head_dim 2 "
                         "hidden_size",
                         (long long)c->num_mem_blocks, (long long)c->adapter_rank, (int)c->shared_act,
                         KVC_MODEL_MAX_LAYERS);
    for (int64_t l = 0; l < c->num_layers; l++)
        if (!(z1 ? c->layer_mamba1[l] : c->layer_mamba[l]) || !c->layer_no_ffn[l] || c->layer_no_mixer[l])
            return kvci_fail(KVC_EINVAL,
                             "model: %s layer %lld must be a %s mixer alone (%s, layer_no_ffn), its shared block by "
                             "layer_shared_block",
                             c->model_type, (long long)l, z1 ? "Mamba-1" : "Mamba2",
                             z1 ? "layer_mamba1" : "layer_mamba");
    return KVC_OK;
}

/* The fields beyond the sizes that the forward reads, as the config reader bounds them (a caller's
 * own struct in kvc_model_create_random has not been through it), then the family's own rules. */
static kvc_status check_fields(const kvc_model_config *c) {
    if (memchr(c->model_type, '\0', sizeof c->model_type) == NULL)
        return kvci_fail(KVC_EINVAL, "model: model_type is not NUL-terminated within its %zu bytes",
                         sizeof c->model_type);
    if (!(c->rms_norm_eps >= 0.0 && c->rms_norm_eps <= 1.0))
        return kvci_fail(KVC_EINVAL, "model: rms_norm_eps %g outside [0, 1]", c->rms_norm_eps);
    if (!(c->mla_q_scale >= 0.0 && c->mla_q_scale <= KVC_HP_MAX_FACTOR && c->mla_kv_scale >= 0.0 &&
          c->mla_kv_scale <= KVC_HP_MAX_FACTOR))
        return kvci_fail(KVC_EINVAL, "model: mla_q_scale %g / mla_kv_scale %g outside [0, %g]", c->mla_q_scale,
                         c->mla_kv_scale, KVC_HP_MAX_FACTOR);
    if (c->zero_experts < 0 || c->zero_experts > KVC_HP_MAX_EXPERTS ||
        ((c->zero_experts > 0 || c->moe_shortcut) && c->family != KVC_FAMILY_DEEPSEEK_V3))
        return kvci_fail(KVC_EINVAL, "model: zero_experts %lld / moe_shortcut need family deepseek_v3 (longcat_flash)",
                         (long long)c->zero_experts);
    if (c->max_position_embeddings < 1 || c->max_position_embeddings > KVC_HP_MAX_POSITIONS)
        return kvci_fail(KVC_EINVAL, "model: max_position_embeddings %lld outside [1, %lld]",
                         (long long)c->max_position_embeddings, (long long)KVC_HP_MAX_POSITIONS);
    bool any_sliding = false;
    for (int64_t l = 0; l < c->num_layers; l++) any_sliding |= c->layer_sliding[l];
    if (c->sliding_window < 0 || c->sliding_window > KVC_HP_MAX_POSITIONS || (any_sliding && c->sliding_window < 1))
        return kvci_fail(KVC_EINVAL, "model: sliding_window %lld outside [%d, %lld]%s", (long long)c->sliding_window,
                         any_sliding ? 1 : 0, (long long)KVC_HP_MAX_POSITIONS,
                         any_sliding ? " (layer_sliding marks sliding layers)" : "");
    const double prf = c->rope.partial_rotary_factor;
    const int64_t rot = kvci_model_rot_dim(c);
    if (!(prf >= 0.0 && prf <= 1.0) || rot < 2 || rot % 2 != 0)
        return kvci_fail(KVC_EINVAL,
                         "model: rope.partial_rotary_factor %g must be in [0, 1] (0: 1) and give an even rotary "
                         "width >= 2 (got %lld)",
                         prf, (long long)rot);
    const double caps[2] = {c->attn_logit_softcapping, c->final_logit_softcapping};
    for (int i = 0; i < 2; i++)
        if (!(caps[i] >= 0.0 && caps[i] <= KVC_HP_MAX_FACTOR))
            return kvci_fail(KVC_EINVAL, "model: %s %g outside [0, %g] (0: none)",
                             i ? "final_logit_softcapping" : "attn_logit_softcapping", caps[i], KVC_HP_MAX_FACTOR);
    const kvc_family_desc *fam = kvci_family_get(c->family);
    if (c->parallel_block && (c->post_norms || c->sandwich_norms))
        return kvci_fail(KVC_EINVAL,
                         "model: parallel_block takes the input norm only (no post_norms or sandwich_norms)");
    if (c->parallel_mlp_norm && !c->parallel_block)
        return kvci_fail(KVC_EINVAL, "model: parallel_mlp_norm needs parallel_block");
    if (c->pos_sinusoid_ctrl && (!c->pos_sinusoidal || c->pos_offset != 0 || c->pos_zero_row != -1))
        return kvci_fail(KVC_EINVAL, "model: pos_sinusoid_ctrl needs pos_sinusoidal, pos_offset 0 and pos_zero_row -1");
    if (c->pos_sinusoidal && (!c->pos_learned || (c->hidden_size < 4 && !c->pos_sinusoid_ctrl) || c->pos_zero_row < -1))
        return kvci_fail(
            KVC_EINVAL,
            "model: pos_sinusoidal needs pos_learned, hidden_size >= 4 (got %lld; any with pos_sinusoid_ctrl) and "
            "pos_zero_row >= -1 "
            "(got %lld)",
            (long long)c->hidden_size, (long long)c->pos_zero_row);
    if (c->pos_offset < 0 || c->pos_offset > KVC_HP_MAX_POSITIONS || (c->pos_offset > 0 && !c->pos_learned))
        return kvci_fail(KVC_EINVAL, "model: pos_offset %lld must be in [0, %lld], and 0 without pos_learned",
                         (long long)c->pos_offset, (long long)KVC_HP_MAX_POSITIONS);
    if (c->norm_bias && (!c->layer_norm || c->post_norms || c->sandwich_norms))
        return kvci_fail(KVC_EINVAL, "model: norm_bias needs layer_norm in pre-norm blocks (no post_norms or "
                                     "sandwich_norms)");
    if (!(c->query_scale_beta >= 0.0 && c->query_scale_beta <= KVC_HP_MAX_FACTOR) ||
        (c->query_scale_beta > 0.0 && (c->query_scale_positions < 1 || fam->mla)))
        return kvci_fail(KVC_EINVAL,
                         "model: query_scale_beta %g must be in [0, %g] and, when > 0, query_scale_positions %lld "
                         ">= 1 outside MLA",
                         c->query_scale_beta, KVC_HP_MAX_FACTOR, (long long)c->query_scale_positions);
    const bool one_block = (c->family == KVC_FAMILY_MAMBA2_HYBRID &&
                            (strcmp(c->model_type, "nemotron_h") == 0 || strcmp(c->model_type, "mamba2") == 0 ||
                             strcmp(c->model_type, "zamba2") == 0)) ||
                           (c->family == KVC_FAMILY_JAMBA && strcmp(c->model_type, "jamba") != 0);
    const bool ergo = c->family == KVC_FAMILY_DENSE && strcmp(c->model_type, "ergo") == 0;
    if (c->mlp_plain && (c->family != KVC_FAMILY_DENSE || c->shared_expert_intermediate_size > 0) && !one_block &&
        !ergo)
        return kvci_fail(KVC_EINVAL, "model: mlp_plain is the dense family's dense MLP only (or nemotron_h's, ergo's)");
    if ((c->residual_gates || c->expert_norms) && !ergo)
        return kvci_fail(KVC_EINVAL, "model: residual_gates and expert_norms are ergo's only");
    if (!(c->global_attention_scale >= 0.0 && c->global_attention_scale <= KVC_HP_MAX_FACTOR))
        return kvci_fail(KVC_EINVAL, "model: global_attention_scale %g must be in [0, %g]", c->global_attention_scale,
                         KVC_HP_MAX_FACTOR);
    TRY(check_zamba(c));
    if (c->rwkv_rescale_every != 0 && c->family != KVC_FAMILY_RWKV)
        return kvci_fail(KVC_EINVAL, "model: rwkv_rescale_every is rwkv's only");
    if (c->moe_latent_size > 0 && (!one_block || strcmp(c->model_type, "nemotron_h") != 0))
        return kvci_fail(KVC_EINVAL, "model: moe_latent_size is nemotron_h's only");
    const bool mllama = kvci_family_is_mllama(c->model_type); /* a layer skipped whole: both set, nothing else */
    int64_t run = 0;                                          /* layers not skipped */
    for (int64_t l = 0; l < c->num_layers; l++) {
        const bool skipped = mllama && c->layer_no_mixer[l] && c->layer_no_ffn[l];
        run += !skipped;
        if ((c->layer_no_mixer[l] || c->layer_no_ffn[l]) && !skipped &&
            (!one_block || (c->layer_no_mixer[l] && (c->layer_no_ffn[l] || c->layer_mamba[l]))))
            return kvci_fail(KVC_EINVAL,
                             "model: layer %lld: layer_no_mixer / layer_no_ffn are nemotron_h's and mamba2's, one of "
                             "them a layer (layer_no_mixer: a dense MLP, no Mamba2), or both mllama's (a layer "
                             "skipped)",
                             (long long)l);
    }
    if (run == 0) return kvci_fail(KVC_EINVAL, "model: every layer of %s is skipped", c->model_type);
    if (c->norm_after_add && (!c->layer_norm || c->post_norms || c->sandwich_norms || c->parallel_block))
        return kvci_fail(KVC_EINVAL, "model: norm_after_add needs layer_norm in sequential blocks (no post_norms, "
                                     "sandwich_norms or parallel_block)");
    if (c->embed_dim < 0 || c->embed_dim > KVC_MODEL_MAX_DIM)
        return kvci_fail(KVC_EINVAL, "model: embed_dim %lld outside [0, %lld] (0: hidden_size)",
                         (long long)c->embed_dim, (long long)KVC_MODEL_MAX_DIM);
    if (c->type_vocab_size < 0 || c->type_vocab_size > KVC_HP_MAX_VOCAB || c->task_type_vocab_size < 0 ||
        c->task_type_vocab_size > KVC_HP_MAX_VOCAB)
        return kvci_fail(KVC_EINVAL, "model: type_vocab_size %lld and task_type_vocab_size %lld must be in [0, %lld]",
                         (long long)c->type_vocab_size, (long long)c->task_type_vocab_size,
                         (long long)KVC_HP_MAX_VOCAB);
    if (c->head_transform && ((unsigned)c->head_act > KVC_MLP_RELU || !c->layer_norm))
        return kvci_fail(KVC_EINVAL, "model: head_transform needs layer_norm and head_act in [0, %d] (got %d)",
                         (int)KVC_MLP_RELU, (int)c->head_act);
    if (c->norm_weightless && (c->norm_bias || c->post_norms || c->sandwich_norms || c->gemma_norms))
        return kvci_fail(KVC_EINVAL, "model: norm_weightless needs pre-norm blocks without norm_bias (no post_norms, "
                                     "sandwich_norms or gemma_norms)");
    if (c->rope_reversed &&
        (c->rope.type == KVC_ROPE_LONGROPE || c->rope_form != KVC_ROPE_HALF || fam->mla || any_sliding))
        return kvci_fail(KVC_EINVAL, "model: rope_reversed needs one half-split RoPE (no longrope, no sliding layers) "
                                     "outside MLA");
    const bool hy_v4 = c->family == KVC_FAMILY_HY_V4;
    if (c->attn_gate_proj && (c->attn_output_gate || c->attn_head_gate || (fam->mla && (!hy_v4 || c->mla_q_gate)) ||
                              c->family == KVC_FAMILY_LFM2))
        return kvci_fail(
            KVC_EINVAL, "model: attn_gate_proj needs GQA attention without attn_output_gate or attn_head_gate, outside "
                        "MLA (but hy_v4's) and LFM2");
    if (c->hc_mult < 0 || c->hc_mult > KVC_HP_MAX_STREAMS || (c->hc_mult > 0 && !hy_v4))
        return kvci_fail(KVC_EINVAL, "model: hc_mult %lld outside [0, %d], or set outside family hy_v4",
                         (long long)c->hc_mult, KVC_HP_MAX_STREAMS);
    if (!(c->hc_eps >= 0.0 && c->hc_eps <= 1.0 && c->hc_magnitude >= 0.0 && c->hc_magnitude <= KVC_HP_MAX_FACTOR))
        return kvci_fail(KVC_EINVAL, "model: hc_eps %g outside [0, 1] or hc_magnitude %g outside [0, %g]", c->hc_eps,
                         c->hc_magnitude, KVC_HP_MAX_FACTOR);
    if (!(c->index_norm_eps >= 0.0 && c->index_norm_eps <= 1.0))
        return kvci_fail(KVC_EINVAL, "model: index_norm_eps %g outside [0, 1]", c->index_norm_eps);
    if (!(c->swiglu_limit >= 0.0 && c->swiglu_limit <= KVC_HP_MAX_FACTOR))
        return kvci_fail(KVC_EINVAL, "model: swiglu_limit %g outside [0, %g]", c->swiglu_limit, KVC_HP_MAX_FACTOR);
    if (c->qk_norm_after_rope && (!c->qk_norm || c->qk_norm_whole || c->layer_norm || c->clip_qkv > 0.0 || fam->mla))
        return kvci_fail(KVC_EINVAL, "model: qk_norm_after_rope needs per-head RMS q/k norms (qk_norm, not whole, "
                                     "no layer_norm, no clip_qkv) outside MLA");
    if (!(c->router_jitter_noise >= 0.0 && c->router_jitter_noise <= 1.0))
        return kvci_fail(KVC_EINVAL, "model: router_jitter_noise %g outside [0, 1]", c->router_jitter_noise);
    if (!(c->moe_norm_min >= 0.0 && c->moe_norm_min <= 1.0))
        return kvci_fail(KVC_EINVAL, "model: moe_norm_min %g outside [0, 1]", c->moe_norm_min);
    if (!(c->clip_qkv >= 0.0 && c->clip_qkv <= 3.4e38) || (c->clip_qkv > 0.0 && fam->mla))
        return kvci_fail(KVC_EINVAL, "model: clip_qkv %g must be in [0, 3.4e38] (0: none) outside MLA", c->clip_qkv);
    if ((unsigned)c->mlp_act > KVC_MLP_XIELU ||
        (c->mlp_act >= KVC_MLP_RELU2 && c->mlp_act != KVC_MLP_GELU && c->mlp_act != KVC_MLP_RELU2 && !c->mlp_plain))
        return kvci_fail(
            KVC_EINVAL,
            "model: mlp_act %d must be %d (silu), %d (gelu_tanh), %d (relu2), %d (gelu) or, with mlp_plain, "
            "%d (relu) or %d (xielu)",
            (int)c->mlp_act, (int)KVC_MLP_SILU, (int)KVC_MLP_GELU_TANH, (int)KVC_MLP_RELU2, (int)KVC_MLP_GELU,
            (int)KVC_MLP_RELU, (int)KVC_MLP_XIELU);
    if ((unsigned)c->rope_form > KVC_ROPE_PAIRS || (c->rope_form == KVC_ROPE_INTERLEAVED && !fam->mla))
        return kvci_fail(KVC_EINVAL,
                         "model: rope_form %d must be %d (half-split), %d (pairs) or, in an MLA family, %d "
                         "(DeepSeek's interleaved)",
                         (int)c->rope_form, (int)KVC_ROPE_HALF, (int)KVC_ROPE_PAIRS, (int)KVC_ROPE_INTERLEAVED);
    TRY(check_extras(c));
    return fam->check ? fam->check(c, "model") : KVC_OK;
}

/* The sliding layers' rope frequencies, when the config gives them a rope of their own (theta 0, as a
 * hand-made config leaves it, gives none) whose frequencies or attention factor differ from the full
 * layers'; otherwise inv_freq_sliding stays NULL and every layer reads the full layers' tables. */
static kvc_status sliding_rope(kvc_model *m) {
    const int64_t half = m->rot_dim_sliding / 2;
    const bool own_width = m->rot_dim_sliding != m->rot_dim; /* per-layer shapes: a table of their width */
    bool any = false;
    for (int64_t l = 0; l < m->cfg.num_layers; l++) any |= m->cfg.layer_sliding[l];
    if (!any || (m->cfg.rope_sliding.theta == 0.0 && !own_width)) return KVC_OK;
    float *f = kvci_calloc((size_t)(half + 1), sizeof(float)), a = 0.0f;
    if (!f) return kvci_fail(KVC_ENOMEM, "model: out of memory");
    const kvc_rope_config *r = m->cfg.rope_sliding.theta != 0.0 ? &m->cfg.rope_sliding : &m->cfg.rope;
    kvc_status st = kvc_rope_frequencies(r, m->rot_dim_sliding, f, &a);
    if (st != KVC_OK ||
        (!own_width && memcmp(f, m->inv_freq, (size_t)half * sizeof(float)) == 0 && a == m->rope_attn_factor)) {
        kvci_free(f);
        return st;
    }
    m->inv_freq_sliding = f, m->rope_attn_factor_sliding = a;
    return KVC_OK;
}

kvc_status kvci_model_alloc(const kvc_model_config *cfg, const kvc_model_tp *tp, kvc_weight_visit_fn check,
                            void *check_user, kvc_model **out) {
    *out = NULL;
    if (cfg->num_layers < 1 || cfg->num_layers > KVC_MODEL_MAX_LAYERS)
        return kvci_fail(KVC_EINVAL, "model: num_layers %lld outside [1, %d]", (long long)cfg->num_layers,
                         KVC_MODEL_MAX_LAYERS);
    if (!kvci_family_runs(cfg->family))
        return kvci_fail(KVC_EINVAL, "model: family %d (%s) is not one the runtime runs", (int)cfg->family,
                         kvc_model_family_name(cfg->family));
    TRY(check_sizes(cfg));
    TRY(check_fields(cfg));
    TRY(kvci_layer_shapes_check(cfg, "model"));
    if (fused_qkv(cfg) && !kvci_layer_shapes_uniform(cfg)) /* one fused q | k | v tensor of the model's widths */
        return kvci_fail(KVC_EINVAL, "model: per-layer attention shapes are not supported for %s (a fused qkv_proj)",
                         cfg->model_type);
    if (cfg->num_heads % cfg->num_kv_heads != 0 || cfg->head_dim % 2)
        return kvci_fail(KVC_EINVAL,
                         "model: num_heads %lld must be a multiple of num_kv_heads %lld, head_dim %lld even",
                         (long long)cfg->num_heads, (long long)cfg->num_kv_heads, (long long)cfg->head_dim);
    if (kvci_family_get(cfg->family)->mla &&
        (cfg->qk_rope_head_dim != cfg->head_dim || cfg->num_kv_heads != cfg->num_heads))
        return kvci_fail(KVC_EINVAL, "model: %s needs head_dim == qk_rope_head_dim and num_kv_heads == num_heads",
                         cfg->model_type);
    if (cfg->family != KVC_FAMILY_GPT_OSS && cfg->n_routed_experts > 0 &&
        cfg->experts_per_tok > cfg->n_routed_experts + cfg->zero_experts)
        return kvci_fail(KVC_EINVAL, "model: %s needs num_experts_per_tok %lld <= n_routed_experts %lld + zero_experts",
                         cfg->model_type, (long long)cfg->experts_per_tok, (long long)cfg->n_routed_experts);
    const kvc_model_tp one = {.rank = 0, .size = 1};
    if (!tp) tp = &one;
    if (tp->rank < 0 || tp->rank >= tp->size)
        return kvci_fail(KVC_EINVAL, "model: tensor-parallel rank %lld outside [0, %lld)", (long long)tp->rank,
                         (long long)tp->size);
    kvc_model_config local;
    TRY(kvci_model_shard_config(cfg, tp->size, &local));
    kvc_model *m = kvci_calloc(1, sizeof *m);
    if (!m) return kvci_fail(KVC_ENOMEM, "model: out of memory");
    m->cfg = local, m->full = *cfg, m->tp = *tp;
    m->rot_dim = kvci_kind_rot_dim(cfg, false), m->rot_dim_sliding = kvci_kind_rot_dim(cfg, true);
    m->inv_freq = kvci_calloc((size_t)(m->rot_dim / 2 + 1), sizeof(float));
    if (cfg->rope.type == KVC_ROPE_LONGROPE)
        m->inv_freq_long = kvci_calloc((size_t)(m->rot_dim / 2 + 1), sizeof(float));
    int64_t n = 0;
    kvc_status st = m->inv_freq && (m->inv_freq_long || cfg->rope.type != KVC_ROPE_LONGROPE)
                        ? KVC_OK
                        : kvci_fail(KVC_ENOMEM, "model: out of memory");
    if (st == KVC_OK && check) st = kvci_model_visit_weights(m, check, check_user); /* shapes, dtypes */
    if (st == KVC_OK) st = kvci_model_visit_weights(m, count_fn, &n);
    /* 2 MiB pages where the kernel gives them quickly (decode streams every weight once a step); where
     * clearing them on first touch is slow (a VM: 15 s for 1.5 GB), 4 KiB pages (alloc.c's probe) */
    bool advised;
    if (st == KVC_OK && kvci_pages_alloc((size_t)n, KVCI_PAGES_PROBED, &advised, &m->arena) != KVC_OK)
        st = kvci_fail(KVC_ENOMEM, "model: out of memory for %lld bytes of weights", (long long)n);
    if (st == KVC_OK) {
        m->arena_bytes = n;
        char *cur = m->arena;
        st = kvci_model_visit_weights(m, assign_fn, &cur);
        if (cfg->tie_word_embeddings) m->lm_head = m->embed;
    }
    if (st == KVC_OK) st = kvc_rope_frequencies(&m->cfg.rope, m->rot_dim, m->inv_freq, &m->rope_attn_factor);
    for (int64_t i = 0; st == KVC_OK && cfg->rope_reversed && i < m->rot_dim / 2; i++) /* NanoChat: by -angle */
        m->inv_freq[i] = -m->inv_freq[i];
    if (st == KVC_OK && cfg->gdn_kda) /* Kimi-Linear's MLA is NoPE: every angle 0, each rotation the identity */
        memset(m->inv_freq, 0, (size_t)(m->rot_dim / 2 + 1) * sizeof(float));
    float a_long = 0.0f; /* the same A as the short factors' */
    if (st == KVC_OK && m->inv_freq_long)
        st = kvc_rope_frequencies_long(&m->cfg.rope, m->rot_dim, m->inv_freq_long, &a_long);
    if (st == KVC_OK) st = sliding_rope(m);
    if (st == KVC_OK && cfg->alibi) { /* the whole model's slopes, this rank's heads kept */
        float *all = kvci_calloc((size_t)cfg->num_heads, sizeof(float));
        m->alibi = kvci_calloc((size_t)m->cfg.num_heads, sizeof(float));
        if (all && m->alibi) {
            kvci_model_alibi_slopes(cfg, all);
            memcpy(m->alibi, all + tp->rank * m->cfg.num_heads, (size_t)m->cfg.num_heads * sizeof(float));
        } else {
            st = kvci_fail(KVC_ENOMEM, "model: out of memory");
        }
        kvci_free(all);
    }
    if (st == KVC_OK && cfg->pos_sinusoidal) {
        m->pos_freq = kvci_calloc((size_t)((cfg->hidden_size + 1) / 2), sizeof(float));
        if (m->pos_freq && cfg->pos_sinusoid_ctrl)
            kvci_model_sinusoid_freqs_ctrl(cfg->hidden_size, m->pos_freq);
        else if (m->pos_freq)
            kvci_model_sinusoid_freqs(cfg->hidden_size, m->pos_freq);
        else
            st = kvci_fail(KVC_ENOMEM, "model: out of memory");
    }
    if (st != KVC_OK) {
        kvc_model_destroy(m);
        return st;
    }
    *out = m;
    return KVC_OK;
}

const kvc_model_config *kvc_model_config_of(const kvc_model *m) { return m ? &m->cfg : NULL; }

/* ---- random initialisation ------------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double gauss(uint64_t *s) {
    const double u1 = ((double)(splitmix(s) >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (double)(splitmix(s) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static kvc_status random_fn(void *user, const kvc_wtensor *t) {
    uint64_t s = *(const uint64_t *)user;
    for (const char *p = t->name; *p; p++) s = (s ^ (uint64_t)(unsigned char)*p) * 0x100000001B3ull; /* FNV per name */
    const int64_t n = numel(t), *shape = t->shape;
    /* fan-in: the last dim of an [out, in] Linear; the middle dim of [E, in, out] expert tensors; the first of a
     * Conv1D's [in, out]; 1 for a scalar (Apertus's xIELU beta and eps: shape[-1] was read) */
    const int64_t fan_in = t->ndim == 0                                        ? 1
                           : (t->ndim == 3 && strstr(t->name, "gate_up_proj")) ? shape[1]
                           : (t->ndim == 2 && t->transposed)                   ? shape[0]
                                                                               : shape[t->ndim - 1];
    double mean = 0.0, std;
    switch (t->init) {
    case KVC_WINIT_NORM: mean = 1.0, std = 0.1; break;
    case KVC_WINIT_BIAS: std = 0.05; break;
    case KVC_WINIT_SINK: std = 1.0; break;
    case KVC_WINIT_GATE_UP: std = 0.6; break;
    default: std = strcmp(t->name, "model.embed_tokens.weight") == 0 ? 1.0 : 1.0 / sqrt((double)fan_in); break;
    }
    float *d = t->mat ? kvci_malloc((size_t)n * sizeof(float)) : *t->vec;
    if (!d) return kvci_fail(KVC_ENOMEM, "model: out of memory for tensor \"%s\"", t->name);
    for (int64_t i = 0; i < n; i++) d[i] = (float)(mean + std * gauss(&s));
    if (t->mat) {
        kvci_wmat_fill(t->mat, d, t->transposed);
        kvci_free(d);
    }
    return KVC_OK;
}

static kvc_status set_dtype_fn(void *user, const kvc_wtensor *t) {
    if (t->mat) t->mat->dtype = kvci_wmat_dtype_for(*(const kvc_wmat_dtype *)user, KVC_WMAT_F32, t->name);
    return KVC_OK;
}

kvc_status kvci_model_create_random_as(const kvc_model_config *cfg, uint64_t seed, kvc_wmat_dtype wdtype,
                                       kvc_model **out) {
    if (!cfg || !out) return kvci_fail(KVC_EINVAL, "model_create_random: cfg and out must not be NULL");
    *out = NULL;
    if (wdtype < KVC_WMAT_CHECKPOINT || wdtype >= KVC_WMAT_COUNT)
        return kvci_fail(KVC_EINVAL, "model_create_random: weight dtype %d is not one of kvc_wmat_dtype", (int)wdtype);
    kvc_model *m = NULL;
    TRY(kvci_model_alloc(cfg, NULL, set_dtype_fn, &wdtype, &m));
    kvc_status st = kvci_model_visit_weights(m, random_fn, &seed);
    if (st == KVC_OK) st = kvci_model_prepare(m);
    if (st != KVC_OK) {
        kvc_model_destroy(m);
        return st;
    }
    *out = m;
    return KVC_OK;
}

kvc_status kvc_model_create_random(const kvc_model_config *cfg, uint64_t seed, kvc_model **out) {
    return kvci_model_create_random_as(cfg, seed, KVC_WMAT_F32, out);
}
