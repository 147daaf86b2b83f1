/* GptOss (MF 3.3, 3.4): sliding and full layers alternating (sliding first) unless
 * layer_types says otherwise, per-head sinks, biased projections and a MoE
 * with a clamped SwiGLU. */
#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

static kvc_status parse_gpt_oss(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, true};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    bool attn_bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", true, &attn_bias));
    cfg->qkv_bias = cfg->o_bias = attn_bias;
    KVC_TRY(kvci_family_opt_int(c, "num_local_experts", 128, 1, KVC_HP_MAX_EXPERTS, &cfg->num_experts));
    KVC_TRY(kvci_family_opt_int(c, "num_experts_per_tok", 4, 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_num(c, "swiglu_limit", 7.0, scale, &cfg->swiglu_limit));
    KVC_TRY(kvci_family_opt_num(c, "swiglu_alpha", 1.702, scale, &cfg->swiglu_alpha));
    return KVC_OK;
}

/* Each token takes experts_per_tok of num_experts experts, through a clamped SwiGLU of finite limit and alpha. */
static kvc_status check_gpt_oss(const kvc_model_config *cfg, const char *doc) {
    if (cfg->experts_per_tok < 1 || cfg->experts_per_tok > cfg->num_experts)
        return kvci_fail(KVC_EINVAL, "%s: num_experts_per_tok %lld must be in [1, num_local_experts = %lld]", doc,
                         (long long)cfg->experts_per_tok, (long long)cfg->num_experts);
    if (!(cfg->swiglu_limit > 0.0 && cfg->swiglu_limit <= KVC_HP_MAX_FACTOR) ||
        !(cfg->swiglu_alpha > 0.0 && cfg->swiglu_alpha <= KVC_HP_MAX_FACTOR))
        return kvci_fail(KVC_EINVAL, "%s: swiglu_limit %g and swiglu_alpha %g must be in (0, %g]", doc,
                         cfg->swiglu_limit, cfg->swiglu_alpha, KVC_HP_MAX_FACTOR);
    return KVC_OK;
}

static const kvc_family_alias ALIASES[] = {{"gpt_oss", "GptOssForCausalLM", "gpt_oss", true}};

const kvc_family_desc kvc_family_gpt_oss = {
    .id = KVC_FAMILY_GPT_OSS,
    .name = "gpt_oss",
    .aliases = ALIASES,
    .n_aliases = 1,
    .sinks = true,
    .rms_norm_eps = 1e-5,
    .parse = parse_gpt_oss,
    .check = check_gpt_oss,
    .default_kinds = kvci_family_alternating_kinds,
    .ffn = kvci_ffn_gpt_oss,
};
