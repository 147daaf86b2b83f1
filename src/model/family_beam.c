/* Beam (reflection/Beam-1.0-*, BeamForCausalLM; model_type beam; run by the dense family): Qwen3-MoE's attention
 * (per-head q/k RMSNorms, q/k/v/o biases by attention_bias) with an output gate per channel from a projection of the
 * layer's input plus a bias per head (self_attn.gate_proj, gate_bias: attn_gate_bias), RoPE on the sliding layers
 * (sliding_window 512) and none on the full ones, whose queries are scaled by position instead (scalable softmax,
 * query_scale_ssmax); Gemma 2's sandwich norms, each sub-layer's output joining the residual stream depth-scaled
 * (depth_scaled_residual); mlp_layer_types (the first three dense when absent) of a SwiGLU MLP or DeepSeek-V3's
 * grouped sigmoid router (n_group 8, topk_group 4, the other groups' experts out) over num_experts (256) experts of
 * moe_intermediate_size (2560), num_experts_per_tok (8), renormalised, times routed_scaling_factor (2.5), no shared
 * expert; logits soft-capped by final_logit_softcapping (30; null: none). Layers without layer_types: every sixth
 * full and the last, the others sliding. Refused by name: a rope dict for the full layers or none for the sliding
 * ones (BeamModel reads one per layer type: RoPE, or none and the query scale), n_group or topk_group null (its router
 * always groups), sliding_window null, hidden_act other than silu. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

/* BeamConfig's layer_types when absent: layer i full when (i + 1) % 6 == 0, and the last; the others sliding. */
kvc_status kvci_family_beam_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    KVC_TRY(kvci_family_every_nth_full(ctx, 6, kinds));
    if (ctx->n_layers > 0) kinds[ctx->n_layers - 1] = KVC_LK_FULL;
    return KVC_OK;
}

/* The rope dict per layer type: null for the full layers, an object for the sliding ones (of the kinds present). */
static kvc_status beam_ropes(const kvc_json_obj *c, const kvc_layer_kind *kinds, int64_t n) {
    const cJSON *rp = kvci_json_find(c, "rope_parameters");
    if (rp == NULL) return KVC_OK; /* BeamConfig's: the default rope on the sliding layers, none on the full ones */
    bool full = false, sliding = false;
    for (int64_t l = 0; l < n; l++) full |= kinds[l] != KVC_LK_SLIDING, sliding |= kinds[l] == KVC_LK_SLIDING;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
    if (full && (f == NULL || !cJSON_IsNull(f)))
        return kvci_fail(KVC_EINVAL,
                         "%s: beam rope_parameters.full_attention must be null (its full layers have no RoPE and "
                         "scale their queries instead)",
                         c->doc);
    if (sliding && !cJSON_IsObject(s))
        return kvci_fail(KVC_EINVAL, "%s: beam rope_parameters.sliding_attention must be a rope dict", c->doc);
    return KVC_OK;
}

kvc_status kvci_family_parse_beam(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts[KVC_HP_ALIASES] = {"num_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    const char *act = "silu";
    bool have = false, bias = false;
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "silu") != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_act \"%s\" is not supported (beam: silu)", c->doc, act);
    if (!kvci_json_missing(c, "sliding_window") && kvci_json_find(c, "sliding_window") == NULL) /* null */
        return kvci_fail(KVC_EINVAL, "%s: beam with sliding_window null is not supported (its sliding layers need one)",
                         c->doc);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false;
    cfg->qk_norm = cfg->sandwich_norms = cfg->attn_gate_proj = cfg->attn_gate_bias = true;
    cfg->depth_scaled_residual = cfg->query_scale_ssmax = true;
    KVC_TRY(kvci_family_softcap(c, "final_logit_softcapping", 30.0, &cfg->final_logit_softcapping));
    KVC_TRY(kvci_family_expert_counts(c, experts, 256, top_k, 8, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 2560, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    static const char *const groups[2] = {"n_group", "topk_group"};
    for (int i = 0; i < 2; i++)
        if (!kvci_json_missing(c, groups[i]) && kvci_json_find(c, groups[i]) == NULL)
            return kvci_fail(KVC_EINVAL, "%s: beam %s null is not supported (its router always groups the experts)",
                             c->doc, groups[i]);
    KVC_TRY(kvci_family_opt_int(c, "n_group", 8, 1, KVC_HP_MAX_EXPERTS, &cfg->n_group));
    KVC_TRY(kvci_family_opt_int(c, "topk_group", 4, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", 2.5, positive, &cfg->routed_scaling_factor));
    cfg->n_shared_experts = 0, cfg->shared_expert_intermediate_size = 0;
    cfg->first_k_dense_replace = cfg->num_layers < 3 ? cfg->num_layers : 3; /* when mlp_layer_types is absent */
    KVC_TRY(kvci_family_mlp_layer_types(c, cfg));
    kvc_layer_kind kinds[KVC_MODEL_MAX_LAYERS]; /* the sliding layers rotate, the full ones scale their queries */
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, kinds));
    KVC_TRY(beam_ropes(c, kinds, cfg->num_layers));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = kinds[l] != KVC_LK_SLIDING;
    return KVC_OK;
}
