/* Laguna (poolside/laguna-*, LagunaForCausalLM; model_type laguna; run by the dense family): GQA whose query heads
 * differ per layer (num_attention_heads_per_layer: per-layer attention shapes, docs/model.md) over
 * num_key_value_heads (8) KV heads of head_dim (128), per-head q/k RMSNorms before RoPE, q/k/v/o biases by
 * attention_bias (false), and the attention output times softplus(self_attn.g_proj x) before o_proj: one gate per
 * head (gating true or "per-head", the default; attn_head_gate) or per channel (false or "per-element";
 * attn_gate_proj), attn_gate_softplus. RoPE half-split over each kind's share of the head (rope_parameters per layer
 * type; without them LagunaConfig's: theta 5e5 over half of each full layer's head, 1e4 over all of each sliding
 * one's; a dict without the factor: 1), the sliding layers' width their own (layer_rot_dim). Layers: layer_types,
 * else every layer full; sliding ones over sliding_window (512). Feed-forward: mlp_layer_types (layer 0 dense, the
 * rest sparse), the dense MLP of intermediate_size (8192); the sparse layers num_experts_per_tok (8) of num_experts
 * (256) SwiGLU experts of moe_intermediate_size (512) chosen by sigmoid scores plus mlp.gate.e_score_correction_bias,
 * weighted by their sigmoid scores renormalised, times moe_routed_scaling_factor (1), plus a shared expert of
 * shared_expert_intermediate_size (512): DeepSeek-V3's router with one group. rms_norm_eps 1e-6, untied. Refused by
 * name: moe_router_logit_softcapping other than 0, moe_apply_router_weight_on_input true (transformers refuses it),
 * a gating string other than the two, num_attention_heads_per_layer of another length. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/model_internal.h"

bool kvci_family_is_laguna(const char *mt) { return mt != NULL && strcmp(mt, "laguna") == 0; }

/* gating: true / "per-head" (one gate per head), false / "per-element" (one per channel). */
static kvc_status read_gating(const kvc_json_obj *c, bool *per_head) {
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(c->obj, "gating");
    *per_head = true;
    if (g == NULL || cJSON_IsTrue(g)) return KVC_OK;
    if (cJSON_IsFalse(g)) return *per_head = false, KVC_OK;
    if (cJSON_IsString(g) && (strcmp(g->valuestring, "per-head") == 0 || strcmp(g->valuestring, "per-element") == 0))
        return *per_head = strcmp(g->valuestring, "per-head") == 0, KVC_OK;
    return kvci_fail(KVC_EINVAL, "%s: gating must be true, false, \"per-head\" or \"per-element\"", c->doc);
}

/* num_attention_heads_per_layer: one count per layer (absent or null: every layer num_attention_heads). */
static kvc_status heads_per_layer(const kvc_json_obj *c, kvc_model_config *cfg) {
    const cJSON *a = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(c, "num_attention_heads_per_layer", KVC_HP_MAX_LAYERS, &a, &have));
    if (!have || a == NULL) return KVC_OK;
    if (cJSON_GetArraySize(a) != cfg->num_layers)
        return kvci_fail(KVC_EINVAL, "%s: num_attention_heads_per_layer has %d entries for %lld layers", c->doc,
                         cJSON_GetArraySize(a), (long long)cfg->num_layers);
    for (int64_t l = 0; l < cfg->num_layers; l++) {
        char where[64];
        snprintf(where, sizeof where, "num_attention_heads_per_layer[%lld]", (long long)l);
        int64_t n = 0;
        KVC_TRY(kvci_json_int_value(cJSON_GetArrayItem(a, (int)l), where, 1, KVC_HP_MAX_HEADS, &n));
        if (n % cfg->num_kv_heads != 0)
            return kvci_fail(KVC_EINVAL, "%s: %s %lld is not a multiple of num_key_value_heads %lld", c->doc, where,
                             (long long)n, (long long)cfg->num_kv_heads);
        cfg->layer_heads[l] = n != cfg->num_heads ? n : 0;
    }
    return KVC_OK;
}

kvc_status kvci_family_parse_laguna(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, scale = {0.0, KVC_HP_MAX_FACTOR, true};
    const kvc_json_range any = {-KVC_HP_MAX_FACTOR, KVC_HP_MAX_FACTOR, false};
    bool per_head = true, on_input = false;
    double softcap = 0.0;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false, cfg->qk_norm = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    KVC_TRY(read_gating(c, &per_head));
    cfg->attn_head_gate = per_head, cfg->attn_gate_proj = !per_head, cfg->attn_gate_softplus = true;
    KVC_TRY(heads_per_layer(c, cfg));
    /* the sliding layers rotate their own share of the head */
    const int64_t rot_s = kvci_rope_share_width(&cfg->rope_sliding, cfg->head_dim);
    kvc_layer_kind k[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, k));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_rot_dim[l] = k[l] == KVC_LK_SLIDING ? rot_s : 0;
    /* the feed-forward */
    KVC_TRY(kvci_family_opt_num(c, "moe_router_logit_softcapping", 0.0, any, &softcap));
    if (softcap != 0.0)
        return kvci_fail(KVC_EINVAL, "%s: moe_router_logit_softcapping %g is not supported (0: none)", c->doc, softcap);
    KVC_TRY(kvci_family_opt_bool(c, "moe_apply_router_weight_on_input", false, &on_input));
    if (on_input)
        return kvci_fail(KVC_EINVAL,
                         "%s: moe_apply_router_weight_on_input true is not supported (transformers refuses it too)",
                         c->doc);
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 256, top_k, 8, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 512, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "shared_expert_intermediate_size", 512, 0, KVC_HP_MAX_WIDTH,
                                &cfg->shared_expert_intermediate_size));
    KVC_TRY(kvci_family_opt_num(c, "moe_routed_scaling_factor", 1.0, scale, &cfg->routed_scaling_factor));
    cfg->n_group = cfg->topk_group = 1, cfg->norm_topk_prob = true;
    cfg->n_shared_experts = cfg->shared_expert_intermediate_size > 0 ? 1 : 0;
    cfg->first_k_dense_replace = 1; /* mlp_layer_types' default: layer 0 dense */
    return kvci_family_mlp_layer_types(c, cfg);
}
