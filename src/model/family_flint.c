/* Flint (RecursiveSI/flint, FlintForCausalLM; run by the dense family): Qwen3-MoE's attention (per-head q/k RMSNorms
 * before RoPE, head_dim 128) with per-head sinks (self_attn.sinks [nH]), its sliding layers rotated and its full
 * layers not (NoPE); without layer_types, full attention on layers 0 and 1, every layer i with i % 4 == 1 and the
 * last, sliding (window 513) elsewhere. The feed-forward: the dense SwiGLU MLP of intermediate_size on
 * mlp_only_layers ([0, 1] when absent) and off decoder_sparse_step, elsewhere num_experts (256) SwiGLU experts of
 * moe_intermediate_size (512), the top num_experts_per_tok (6) by the sigmoid of their router logit, renormalised
 * when norm_topk_prob (true), plus a shared SwiGLU expert of shared_expert_intermediate_size (1024) added without a
 * gate. Defaults are FlintConfig's. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

kvc_status kvci_family_flint_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    for (int64_t i = 0; i < ctx->n_layers; i++) {
        const bool full = i < 2 || i % 4 == 1 || i == ctx->n_layers - 1;
        kinds[i] = !full && ctx->window > 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
    }
    return KVC_OK;
}

kvc_status kvci_family_parse_flint(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    static const char *const experts[KVC_HP_ALIASES] = {"num_experts", "num_local_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    bool bias = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false;
    cfg->qk_norm = cfg->attn_sinks = true;
    KVC_TRY(kvci_family_expert_counts(c, experts, 256, top_k, 6, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 512, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "shared_expert_intermediate_size", 1024, 1, KVC_HP_MAX_WIDTH,
                                &cfg->shared_expert_intermediate_size));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_qwen_moe_layers(c, cfg));
    if (kvci_json_find(c, "mlp_only_layers") == NULL)
        for (int64_t l = 0; l < 2 && l < cfg->num_layers; l++) cfg->layer_moe[l] = false;
    kvc_layer_kind kinds[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, kinds));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = kinds[l] != KVC_LK_SLIDING;
    return KVC_OK;
}
