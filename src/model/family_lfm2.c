/* LFM2's runtime keys (Lfm2Config, transformers 5): short-convolution layers beside GQA attention with
 * per-head q/k RMSNorm, a SwiGLU MLP whose width block_auto_adjust_ff_dim may shrink, norm_eps, tied
 * embeddings by default; LFM2-MoE's and LFM3's additions. Its kinds and state shapes (family_hybrid.c) are the
 * planner's too. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* Lfm2MLP's width: with block_auto_adjust_ff_dim (true when absent) int(2 I / 3), then, unless
 * block_ffn_dim_multiplier is null (1.0 when absent), int(multiplier x that) rounded up to a multiple of
 * block_multiple_of (256 when absent), as transformers computes it (Python floats are doubles). */
static kvc_status mlp_width(const kvc_json_obj *c, int64_t *I) {
    bool adjust = true;
    KVC_TRY(kvci_family_opt_bool(c, "block_auto_adjust_ff_dim", true, &adjust));
    if (!adjust) return KVC_OK;
    double mult = 1.0;
    int64_t multiple = 256;
    /* a positive number, 0 when given null (transformers' None: no multiplier, no rounding) */
    KVC_TRY(kvci_family_softcap(c, "block_ffn_dim_multiplier", 1.0, &mult));
    KVC_TRY(kvci_family_opt_int(c, "block_multiple_of", 256, 1, KVC_HP_MAX_WIDTH, &multiple));
    int64_t w = (int64_t)(2.0 * (double)*I / 3.0);
    if (mult > 0.0) {
        const double scaled = mult * (double)w;
        if (scaled > (double)KVC_HP_MAX_WIDTH)
            return kvci_fail(KVC_EINVAL, "%s: block_ffn_dim_multiplier %g makes the MLP %g wide (at most %lld)", c->doc,
                             mult, scaled, (long long)KVC_HP_MAX_WIDTH);
        w = (int64_t)scaled;
        w = multiple * ((w + multiple - 1) / multiple);
    }
    if (w < 1 || w > KVC_HP_MAX_WIDTH)
        return kvci_fail(KVC_EINVAL, "%s: the MLP width after block_auto_adjust_ff_dim is %lld, outside [1, %lld]",
                         c->doc, (long long)w, (long long)KVC_HP_MAX_WIDTH);
    *I = w;
    return KVC_OK;
}

/* transformers' decoder layer is a convolution for "conv" only and attention for any other entry: the state
 * kinds the family reader maps linear_attention and mamba to are refused by name rather than run as either.
 * LFM3's model builds a mask for "conv", "full_attention" and "sliding_attention" only (any other fails there). */
static kvc_status check_layer_types(const kvc_json_obj *c, bool lfm3) {
    const cJSON *lt = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(c, "layer_types", KVC_HP_MAX_LAYERS, &lt, &have));
    int64_t i = 0;
    for (const cJSON *e = have ? lt->child : NULL; e != NULL; e = e->next, i++) {
        const char *t = cJSON_IsString(e) ? e->valuestring : NULL;
        if (t != NULL && (strcmp(t, "linear_attention") == 0 || strcmp(t, "mamba") == 0))
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_types[%lld] \"%s\" in an lfm2 model: the runtime runs \"conv\" and "
                             "\"full_attention\" layers only",
                             c->doc, (long long)i, t);
        if (lfm3 && (t == NULL || (strcmp(t, "conv") != 0 && strcmp(t, "full_attention") != 0 &&
                                   strcmp(t, "sliding_attention") != 0)))
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_types[%lld] in an lfm3 model must be \"conv\", \"full_attention\" or "
                             "\"sliding_attention\"",
                             c->doc, (long long)i);
    }
    return KVC_OK;
}

/* LFM3's rotary embedding reads rope_parameters[t] for each attention layer type t among layer_types (Lfm3Config's
 * rule when absent): a flat dict, or one without such an entry, fails there and is refused here by name (no dict:
 * the class's ropes, hparams.c). */
static kvc_status check_lfm3_ropes(const kvc_hparams *hp, int64_t n_layers) {
    if (hp->rope_source == NULL) return KVC_OK;
    if (!hp->rope_per_layer_type)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s of an lfm3 model must hold one rope per attention layer type "
                         "(full_attention, sliding_attention)",
                         hp->cfg.doc, hp->rope_source);
    bool used[2] = {n_layers > 2, n_layers > 4}; /* full (layer 2), sliding (layer 4) under the class's rule */
    const cJSON *lt = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(&hp->cfg, "layer_types", KVC_HP_MAX_LAYERS, &lt, &have));
    if (have) used[0] = used[1] = false;
    for (const cJSON *e = have ? lt->child : NULL; e != NULL; e = e->next) {
        used[0] |= strcmp(e->valuestring, "full_attention") == 0; /* strings: check_layer_types */
        used[1] |= strcmp(e->valuestring, "sliding_attention") == 0;
    }
    const cJSON *dict = cJSON_GetObjectItemCaseSensitive(hp->cfg.obj, hp->rope_source);
    static const char *const names[2] = {"full_attention", "sliding_attention"};
    for (int i = 0; i < 2; i++)
        if (used[i] && cJSON_GetObjectItemCaseSensitive(dict, names[i]) == NULL)
            return kvci_fail(KVC_EINVAL, "%s: %s has no %s entry (the lfm3 model's %s layers read it)", hp->cfg.doc,
                             hp->rope_source, names[i], names[i]);
    return KVC_OK;
}

/* LFM3 (Lfm3Config; LiquidAI/LFM3-*): LFM2's convolutions (conv_L_cache 7) beside Qwen3's attention (q_proj, k_proj,
 * v_proj, o_proj with attention_bias, q_norm / k_norm per head), full or sliding (sliding_window 256), each layer type
 * its rope (hparams.c: the full layers' proportional); use_attention_gate (true): g_proj, a sigmoid gate per head on
 * the attention's output; use_sandwich_norm (true): post_operator_norm and post_ffn_norm on both sub-layers' outputs;
 * the SwiGLU MLP of intermediate_size as given on every layer (no block_* key). */
static kvc_status parse_lfm3(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    bool bias = false;
    KVC_TRY(check_lfm3_ropes(hp, cfg->num_layers));
    KVC_TRY(kvci_family_opt_int(c, "conv_L_cache", 7, 2, KVC_HP_MAX_DIM, &cfg->conv_kernel));
    KVC_TRY(kvci_family_opt_bool(c, "conv_bias", false, &cfg->conv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    KVC_TRY(kvci_family_opt_bool(c, "use_attention_gate", true, &cfg->attn_head_gate));
    KVC_TRY(kvci_family_opt_bool(c, "use_sandwich_norm", true, &cfg->sandwich_norms));
    cfg->qkv_bias = cfg->o_bias = bias;
    return KVC_OK;
}

/* LFM2-MoE (LiquidAI/LFM2-8B-A1B; Lfm2MoeForCausalLM): LFM2's layers whose feed-forward is, on the first
 * num_dense_layers (2), the SwiGLU MLP of intermediate_size as given (Lfm2MoeMLP reads no block_* key), and on the
 * others a router feed_forward.gate over num_experts (32) SwiGLU experts of moe_intermediate_size (1792): the top
 * num_experts_per_tok (4) of sigmoid(logit) + feed_forward.expert_bias, weighted by their sigmoid scores over their
 * sum + 1e-6 when norm_topk_prob (true), times routed_scaling_factor (1.0): DeepSeek-V3's router with one group
 * (kvci_ffn_deepseek). Refused by name: use_expert_bias false (every released checkpoint sets it; the runtime's
 * router reads the bias), a single expert (the grouped router scores a group by its two best). */
static kvc_status parse_moe(const kvc_json_obj *c, kvc_model_config *cfg) {
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_range scale = {0.0, 3.4e38, true};
    bool bias = true;
    int64_t dense = 2;
    KVC_TRY(kvci_family_opt_bool(c, "use_expert_bias", true, &bias));
    if (!bias) return kvci_fail(KVC_EINVAL, "%s: lfm2_moe with use_expert_bias false is not supported", c->doc);
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 32, top_k, 4, cfg));
    if (cfg->n_routed_experts < 2)
        return kvci_fail(KVC_EINVAL,
                         "%s: lfm2_moe with num_experts 1 is not supported (the runtime's grouped router scores a "
                         "group by its two best experts)",
                         c->doc);
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 1792, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "num_dense_layers", 2, 0, KVC_HP_MAX_LAYERS, &dense));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", 1.0, scale, &cfg->routed_scaling_factor));
    cfg->n_group = cfg->topk_group = 1, cfg->first_k_dense_replace = dense;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = l >= dense;
    return kvci_family_check_grouped_router(cfg, c->doc);
}

kvc_status kvci_family_parse_lfm2(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps_range = {0.0, 1.0, false};
    const bool moe = strcmp(cfg->model_type, "lfm2_moe") == 0, lfm3 = strcmp(cfg->model_type, "lfm3") == 0;
    KVC_TRY(check_layer_types(c, lfm3));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qk_norm = true; /* q_layernorm / k_layernorm: RMSNorm of each head */
    KVC_TRY(kvci_family_opt_num(c, "norm_eps", 1e-5, eps_range, &cfg->rms_norm_eps));
    /* tie_embedding, the hub's earlier key, wins over tie_word_embeddings (true when both are absent) */
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    KVC_TRY(kvci_family_opt_bool(c, "tie_embedding", cfg->tie_word_embeddings, &cfg->tie_word_embeddings));
    if (lfm3) return parse_lfm3(hp, cfg);
    KVC_TRY(kvci_family_opt_int(c, "conv_L_cache", 3, 2, KVC_HP_MAX_DIM, &cfg->conv_kernel));
    KVC_TRY(kvci_family_opt_bool(c, "conv_bias", false, &cfg->conv_bias));
    if (moe) return parse_moe(c, cfg);
    KVC_TRY(
        kvci_family_opt_int(c, "block_ff_dim", cfg->intermediate_size, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    return mlp_width(c, &cfg->intermediate_size);
}

kvc_status kvci_lfm2_operator(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_conv[l] ? kvci_conv_short(s, l) : kvci_attn_gqa(s, l);
}

kvc_status kvci_lfm2_ffn(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_moe[l] ? kvci_ffn_deepseek(s, l, false) : kvci_fwd_dense_mlp(s, l);
}
