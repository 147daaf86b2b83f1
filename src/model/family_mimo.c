/* MiMo-V2-Flash (XiaomiMiMo/MiMo-V2-Flash, MiMoV2FlashForCausalLM; model_type mimo_v2_flash; run by the dense family):
 * Llama-style GQA whose layers differ (per-layer attention shapes, docs/model.md): the full-attention layers keep
 * num_key_value_heads (4) KV heads, the sliding ones twice as many plus a per-head attention sink each; q and k heads
 * of head_dim (192), values of v_head_dim (128), o_proj [H, heads v_head_dim] without bias, q/k/v biases by
 * attention_bias (false); every value times attention_value_scale (0.707; null: 1) right after v_proj; RoPE
 * half-split over int(head_dim partial_rotary_factor) channels, each layer kind its own rope (rope_parameters per
 * layer type; without them MiMoV2FlashConfig's: theta 5e6 full, 1e4 sliding, factor 0.334 both, a dict without the
 * factor 0.334: hparams.c); no q/k norms. Layers: layer 0 and every sixth (i + 1 divisible by 6) full, the others
 * sliding over sliding_window (129) keys, or sliding_window_size + 1 when that key is given (hparams.c). Feed-forward:
 * mlp_layer_types (layer 0 dense, then sparse), the dense MLP of intermediate_size (16384), the sparse layers
 * DeepSeek-V3's grouped sigmoid router with its correction bias over n_routed_experts (256) experts of
 * moe_intermediate_size (2048), top num_experts_per_tok (8), n_group / topk_group (1), renormalised by norm_topk_prob
 * (true), times routed_scaling_factor (1; null: 1), no shared experts. rms_norm_eps 1e-5, untied. Its MTP layers
 * (model.mtp.*) are not read. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_mimo(const char *mt) { return mt != NULL && strcmp(mt, "mimo_v2_flash") == 0; }

/* MiMoV2FlashConfig's layer_types: layer 0 and every layer i with (i + 1) % 6 == 0 full, the others sliding. */
kvc_status kvci_family_mimo_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    for (int64_t i = 0; i < ctx->n_layers; i++)
        kinds[i] = (i == 0 || (i + 1) % 6 == 0 || ctx->window == 0) ? KVC_LK_FULL : KVC_LK_SLIDING;
    return KVC_OK;
}

/* The planner's per-layer dims: the sliding layers' KV heads doubled, every layer's values v_head_dim wide. */
kvc_status kvci_family_mimo_layer_dims(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, int64_t *head_dim,
                                       int64_t *kv_heads, int64_t *v_head_dim) {
    (void)head_dim;
    int64_t dv = 128;
    KVC_TRY(kvci_family_opt_int(&ctx->hp->cfg, "v_head_dim", 128, 1, KVC_HP_MAX_DIM, &dv));
    for (int64_t i = 0; i < ctx->n_layers; i++) {
        v_head_dim[i] = dv;
        if (kinds[i] == KVC_LK_SLIDING) kv_heads[i] *= 2;
    }
    return KVC_OK;
}

/* A number def when absent and if_null when null (MiMoV2FlashConfig's routed_scaling_factor and its attention's
 * attention_value_scale: 1). */
static kvc_status num_or_null(const kvc_json_obj *c, const char *key, double def, double if_null, double *out) {
    const kvc_json_range r = {0.0, KVC_HP_MAX_FACTOR, true};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->obj, key);
    *out = if_null;
    if (v != NULL && cJSON_IsNull(v)) return KVC_OK;
    return kvci_family_opt_num(c, key, def, r, out);
}

kvc_status kvci_family_parse_mimo(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts_n[KVC_HP_ALIASES] = {"n_routed_experts", "num_local_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    int64_t dv = 128;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_int(c, "v_head_dim", 128, 1, KVC_HP_MAX_DIM, &dv));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->mlp_bias = cfg->qk_norm = false;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(num_or_null(c, "attention_value_scale", 0.707, 1.0, &cfg->attn_value_scale));
    /* the layers: sliding ones with twice the KV heads and a sink per head; every layer's values dv wide */
    kvc_layer_kind k[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, k));
    for (int64_t l = 0; l < cfg->num_layers; l++) {
        cfg->layer_v_head_dim[l] = dv;
        cfg->layer_kv_heads[l] = k[l] == KVC_LK_SLIDING ? 2 * cfg->num_kv_heads : 0;
        if (k[l] == KVC_LK_SLIDING && cfg->num_heads % (2 * cfg->num_kv_heads) != 0)
            return kvci_fail(KVC_EINVAL,
                             "%s: the sliding layers' 2 x num_key_value_heads %lld KV heads do not divide "
                             "num_attention_heads %lld",
                             c->doc, (long long)(2 * cfg->num_kv_heads), (long long)cfg->num_heads);
    }
    cfg->attn_sinks = cfg->sinks_sliding_only = true;
    /* the feed-forward: DeepSeek-V3's router without shared experts */
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 256, top_k, 8, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 2048, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "n_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->n_group));
    KVC_TRY(kvci_family_opt_int(c, "topk_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(num_or_null(c, "routed_scaling_factor", 1.0, 1.0, &cfg->routed_scaling_factor));
    cfg->n_shared_experts = cfg->shared_expert_intermediate_size = 0;
    cfg->first_k_dense_replace = 1; /* mlp_layer_types' default: layer 0 dense */
    return kvci_family_mlp_layer_types(c, cfg);
}
