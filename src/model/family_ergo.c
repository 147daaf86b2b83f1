/* Ergo (Amazon-FMR/Ergo, ErgoForCausalLM; model_type ergo; run by the dense family): q, k, v fused in one projection
 * (attention.wqkv in its checkpoints: ckpt_names.c), per-head q/k RMSNorms, RoPE on adjacent pairs on the sliding
 * layers only (the full ones are NoPE, their logits times global_attention_scale when set), head_dim hidden_size /
 * num_attention_heads; sandwich norms, each sub-layer's output joining the residual stream through its per-dimension
 * gate (residual_gates); the first num_dense_blocks (1) layers (or mlp_layer_types' "dense") an ungated relu2 MLP of
 * first_dense_intermediate_size, the others num_experts_per_tok (8) of num_experts (256) ungated relu2 experts of
 * moe_intermediate_size chosen by sigmoid scores plus the router bias, weighted by their scores over their sum +
 * 1e-20 times moe_routed_scaling_factor (8^1/2): DeepSeek-V3's router with one group; each expert's output and the
 * shared relu2 MLP's (shared_intermediate_size) through an RMSNorm of its own (expert_norms). Layers: full every
 * global_attention_every_n_layers (4) when no layer_types, the others sliding over sliding_window (512, or
 * local_attention_window); rms_norm_eps 1e-12; never tied (ErgoForCausalLM ties nothing). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

/* The kinds of ErgoConfig's layer_types when absent: layer i full when (i + 1) % every == 0. */
kvc_status kvci_family_ergo_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    int64_t every = 4;
    KVC_TRY(kvci_family_opt_int(&ctx->hp->cfg, "global_attention_every_n_layers", 4, 1, KVC_HP_MAX_LAYERS, &every));
    return kvci_family_every_nth_full(ctx, every, kinds);
}

kvc_status kvci_family_parse_ergo(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts[KVC_HP_ALIASES] = {"num_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, positive = {0.0, KVC_HP_MAX_FACTOR, true};
    if (cfg->hidden_size % cfg->num_heads != 0)
        return kvci_fail(KVC_EINVAL, "%s: ergo hidden_size %lld is not a multiple of num_attention_heads %lld", c->doc,
                         (long long)cfg->hidden_size, (long long)cfg->num_heads);
    cfg->head_dim = cfg->hidden_size / cfg->num_heads; /* ErgoAttention reads no head_dim key */
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    cfg->qk_norm = cfg->sandwich_norms = cfg->residual_gates = cfg->expert_norms = true;
    cfg->rope_form = KVC_ROPE_PAIRS, cfg->mlp_act = KVC_MLP_RELU2, cfg->mlp_plain = true;
    cfg->tie_word_embeddings = false;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-12, eps, &cfg->rms_norm_eps));
    if (!cJSON_IsNull(kvci_json_find(c, "global_attention_scale")))
        KVC_TRY(kvci_family_opt_num(c, "global_attention_scale", 0.0, positive, &cfg->global_attention_scale));
    KVC_TRY(
        kvci_family_opt_int(c, "first_dense_intermediate_size", 32768, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    KVC_TRY(kvci_family_expert_counts(c, experts, 256, top_k, 8, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 4096, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "shared_intermediate_size", 8192, 1, KVC_HP_MAX_WIDTH,
                                &cfg->shared_expert_intermediate_size));
    cfg->n_shared_experts = 1;
    KVC_TRY(
        kvci_family_opt_num(c, "moe_routed_scaling_factor", 2.8284271247461903, positive, &cfg->routed_scaling_factor));
    cfg->n_group = cfg->topk_group = 1, cfg->norm_topk_prob = true;
    KVC_TRY(kvci_family_opt_int(c, "num_dense_blocks", 1, 0, cfg->num_layers, &cfg->first_k_dense_replace));
    KVC_TRY(kvci_family_mlp_layer_types(c, cfg));
    kvc_layer_kind kinds[KVC_MODEL_MAX_LAYERS]; /* the sliding layers rotate, the full ones do not */
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, kinds));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = kinds[l] != KVC_LK_SLIDING;
    return KVC_OK;
}
