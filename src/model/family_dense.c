/* The dense GQA family (MF 2): Llama, Mistral, Qwen2, Qwen3 run; Mixtral,
 * the Qwen MoE models and Phi-3 are planned only. Which projections carry a
 * bias (MF 6.5), Qwen3's q/k norms and the sliding layers of Mistral (every
 * layer) and of Qwen2/Qwen3 with use_sliding_window (from max_window_layers on). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

static kvc_status parse_dense(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const char *mt = cfg->model_type;
    const bool qwen3 = strcmp(mt, "qwen3") == 0, qwen2 = strcmp(mt, "qwen2") == 0;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    bool attn_bias = false, mlp_bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &attn_bias));
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &mlp_bias));
    cfg->qkv_bias = qwen2 ? true : attn_bias;
    cfg->o_bias = qwen2 ? false : attn_bias;
    cfg->mlp_bias = (qwen2 || qwen3) ? false : mlp_bias;
    cfg->qk_norm = qwen3;
    return KVC_OK;
}

/* Qwen2/Qwen3 with use_sliding_window: windows from max_window_layers on;
 * otherwise every layer slides when the config sets a window (Mistral, Phi-3). */
static kvc_status dense_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    int64_t from = 0;
    if (ctx->qwen_rule) {
        bool have = false;
        from = 28;
        KVC_TRY(kvci_json_int(&ctx->hp->cfg, "max_window_layers", 0, KVC_HP_MAX_LAYERS, &from, &have));
        if (!have) kvci_family_warn(ctx, "max_window_layers absent: 28 assumed");
    }
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = ctx->window > 0 && i >= from ? KVC_LK_SLIDING : KVC_LK_FULL;
    return KVC_OK;
}

static const kvc_family_alias ALIASES[] = {
    {"llama", "LlamaForCausalLM", "llama", true},
    {"mistral", "MistralForCausalLM", "mistral", true},
    {"mixtral", "MixtralForCausalLM", "mixtral", false},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", true},
    {"qwen2_moe", "Qwen2MoeForCausalLM", "qwen2_moe", false},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", true},
    {"qwen3_moe", "Qwen3MoeForCausalLM", "qwen3_moe", false},
    {"phi3", "Phi3ForCausalLM", "phi3", false},
};

const kvc_family_desc kvc_family_dense = {
    .id = KVC_FAMILY_DENSE,
    .name = "dense",
    .aliases = ALIASES,
    .n_aliases = sizeof ALIASES / sizeof ALIASES[0],
    .parse = parse_dense,
    .default_kinds = dense_kinds,
};
