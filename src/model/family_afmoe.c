/* AFMoE (arcee-ai/Trinity-*, AfmoeForCausalLM; model_type afmoe; run by the dense family): Llama's attention with
 * per-head q/k RMSNorms before RoPE, RoPE on the sliding layers only (the full ones are NoPE: layer_nope), the
 * attention output times sigmoid(self_attn.gate_proj x) before o_proj (attn_gate_proj), q/k/v/o biases by
 * attention_bias (false); sandwich norms (post_attention_layernorm on the attention output, pre_mlp_layernorm /
 * post_mlp_layernorm around the feed-forward: ckpt_names.c); the first num_dense_layers (1) layers a dense SwiGLU MLP
 * of intermediate_size (6144), the others num_experts_per_tok (6) of num_experts (64) SwiGLU experts of
 * moe_intermediate_size (1408) chosen by sigmoid scores plus mlp.expert_bias, weighted by their sigmoid scores over
 * their sum + 1e-20, times route_scale (1), plus num_shared_experts (2) shared experts as one MLP: DeepSeek-V3's router
 * with one group (kvci_ffn_deepseek); with mup_enabled (false) the embeddings times sqrt(hidden_size). Layers: three
 * sliding, then one full (global_attn_every_n_layers 4) over sliding_window 1024 when no layer_types; head_dim 128
 * (null: hidden_size / num_attention_heads), rms_norm_eps 1e-5, untied (AfmoeConfig's). Refused by name: hidden_act
 * other than silu (the experts' activation), null where AfmoeConfig's None breaks transformers' forward. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

/* The keys whose null AfmoeModel cannot run (None in a product, a comparison or a modulo). */
static kvc_status refuse_nulls(const kvc_json_obj *c, bool layer_types) {
    static const char *const KEYS[] = {"num_dense_layers",          "num_experts", "num_experts_per_tok",
                                       "num_shared_experts",        "route_scale", "moe_intermediate_size",
                                       "global_attn_every_n_layers"};
    for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->obj, KEYS[i]);
        const bool read = !(layer_types && strcmp(KEYS[i], "global_attn_every_n_layers") == 0);
        if (read && v != NULL && cJSON_IsNull(v))
            return kvci_fail(KVC_EINVAL, "%s: afmoe %s is null (transformers cannot run it)", c->doc, KEYS[i]);
    }
    return KVC_OK;
}

/* global_attn_every_n_layers (4 when absent): the kinds AfmoeConfig gives a config without layer_types. */
kvc_status kvci_afmoe_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    int64_t every = 4;
    KVC_TRY(kvci_family_opt_int(&ctx->hp->cfg, "global_attn_every_n_layers", 4, 1, KVC_HP_MAX_LAYERS, &every));
    return kvci_family_every_nth_full(ctx, every, kinds);
}

kvc_status kvci_family_parse_afmoe(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, scale = {0.0, KVC_HP_MAX_FACTOR, true};
    const char *act = "silu";
    bool have = false, mup = false;
    KVC_TRY(refuse_nulls(c, !kvci_json_missing(c, "layer_types")));
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "silu") != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_act \"%s\" is not supported (afmoe: silu, its experts' activation)",
                         c->doc, act);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* null: hidden_size / num_attention_heads */
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false;
    cfg->qk_norm = cfg->sandwich_norms = cfg->attn_gate_proj = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_opt_bool(c, "mup_enabled", false, &mup));
    cfg->embed_scale = mup ? (float)sqrt((double)cfg->hidden_size) : 0.0f;
    /* the sliding layers rotate, the full ones do not */
    kvc_layer_kind k[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, k));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = k[l] != KVC_LK_SLIDING;
    /* the feed-forward: DeepSeek-V3's router with one group, renormalised, times route_scale */
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 64, top_k, 6, cfg));
    KVC_TRY(kvci_family_opt_int(c, "num_shared_experts", 2, 0, KVC_HP_MAX_EXPERTS, &cfg->n_shared_experts));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 1408, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "num_dense_layers", 1, 0, KVC_HP_MAX_LAYERS, &cfg->first_k_dense_replace));
    KVC_TRY(kvci_family_opt_num(c, "route_scale", 1.0, scale, &cfg->routed_scaling_factor));
    cfg->n_group = cfg->topk_group = 1, cfg->norm_topk_prob = true;
    cfg->shared_expert_intermediate_size = cfg->n_shared_experts * cfg->moe_intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = l >= cfg->first_k_dense_replace;
    return KVC_OK;
}

/* AFMoE's routing: one group (DeepSeek-V3's router scores a group by its two best experts, which one group never
 * reads: a single expert runs), route_scale in (0, KVC_HP_MAX_FACTOR], top-k within the experts. */
kvc_status kvci_afmoe_check(const kvc_model_config *cfg, const char *doc) {
    if (cfg->n_group != 1 || cfg->topk_group != 1)
        return kvci_fail(KVC_EINVAL, "%s: afmoe routes its experts in one group (n_group %lld, topk_group %lld: 1)",
                         doc, (long long)cfg->n_group, (long long)cfg->topk_group);
    if (!(cfg->routed_scaling_factor > 0.0 && cfg->routed_scaling_factor <= KVC_HP_MAX_FACTOR))
        return kvci_fail(KVC_EINVAL, "%s: route_scale %g outside (0, %g]", doc, cfg->routed_scaling_factor,
                         KVC_HP_MAX_FACTOR);
    if (cfg->first_k_dense_replace < cfg->num_layers &&
        (cfg->experts_per_tok < 1 || cfg->experts_per_tok > cfg->n_routed_experts))
        return kvci_fail(KVC_EINVAL, "%s: num_experts_per_tok %lld must be in [1, num_experts = %lld]", doc,
                         (long long)cfg->experts_per_tok, (long long)cfg->n_routed_experts);
    return KVC_OK;
}
