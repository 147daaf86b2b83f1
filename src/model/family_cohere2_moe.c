/* Cohere 2 MoE (Cohere2MoeForCausalLM, model_type cohere2_moe; run by the dense family): Cohere 2's parallel blocks
 * (attention and MLP both read the layer's one input norm; RoPE on adjacent pairs; q/k/v/o biases by
 * attention_bias; the logits times logit_scale, 0.0625; tied by default) whose norms are RMSNorms when rms_norm_eps
 * is set, else LayerNorms without bias (layer_norm_eps, 1e-5). Layers by mlp_layer_types ("dense": the SwiGLU MLP of
 * prefix_dense_intermediate_size, intermediate_size when null; "sparse": num_experts (8) SwiGLU experts of
 * intermediate_size, the top num_experts_per_tok (2) logits weighted by their softmax, or with expert_selection_fn
 * "sigmoid" by their sigmoid renormalised when norm_topk_prob, plus num_shared_experts (0) x intermediate_size of
 * shared MLP summed with them or, shared_expert_combination_strategy "average", averaged). Absent lists follow
 * Cohere2MoeConfig: the first first_k_dense_replace (0) layers dense, their kinds by
 * prefix_dense_sliding_window_pattern (1), the rest by sliding_window_pattern (4): layer i of a run slides unless
 * (i + 1) % pattern == 0. The sliding layers rotate q and k, the full ones do not, except dense layers when
 * prefix_dense_sliding_window_pattern is 1 (Cohere2MoeAttention's force_rope). Defaults are Cohere2MoeConfig's
 * (head_dim 128, window 4096). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

/* The kinds of Cohere2MoeConfig's layer_types when absent. */
kvc_status kvci_family_cohere2_moe_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *c = &ctx->hp->cfg;
    int64_t first = 0, prefix = 1, rest = 4;
    KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", 0, 0, ctx->n_layers, &first));
    KVC_TRY(kvci_family_opt_int(c, "prefix_dense_sliding_window_pattern", 1, 1, KVC_HP_MAX_LAYERS, &prefix));
    KVC_TRY(kvci_family_opt_int(c, "sliding_window_pattern", 4, 1, KVC_HP_MAX_LAYERS, &rest));
    for (int64_t i = 0; i < ctx->n_layers; i++) {
        const int64_t j = i < first ? i : i - first, every = i < first ? prefix : rest;
        kinds[i] = (j + 1) % every != 0 && ctx->window > 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
    }
    return KVC_OK;
}

/* A key whose value is one of two strings (the first when absent), *second set when it is the second. */
static kvc_status either(const kvc_json_obj *c, const char *key, const char *first, const char *second, bool *is2) {
    const char *v = NULL;
    bool have = false;
    KVC_TRY(kvci_json_str(c, key, 64, &v, &have));
    *is2 = have && strcmp(v, second) == 0;
    if (!have || *is2 || strcmp(v, first) == 0) return KVC_OK;
    return kvci_fail(KVC_EINVAL, "%s: %s \"%s\" is not supported (%s or %s)", c->doc, key, v, first, second);
}

kvc_status kvci_family_parse_cohere2_moe(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts[KVC_HP_ALIASES] = {"num_experts", "num_local_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, positive = {0.0, KVC_HP_MAX_FACTOR, true};
    const cJSON *rms = kvci_json_find(c, "rms_norm_eps");
    bool bias = false, have = false, sum = false;
    int64_t shared = 0, dense = cfg->intermediate_size, prefix = 1;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false;
    cfg->parallel_block = true, cfg->rope_form = KVC_ROPE_PAIRS, cfg->layer_norm = rms == NULL || cJSON_IsNull(rms);
    if (cfg->layer_norm)
        KVC_TRY(kvci_family_opt_num(c, "layer_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    else
        KVC_TRY(kvci_json_num(c, "rms_norm_eps", eps, &cfg->rms_norm_eps, &have));
    KVC_TRY(kvci_family_opt_num(c, "logit_scale", 0.0625, positive, &cfg->logit_scale));
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    KVC_TRY(kvci_family_expert_counts(c, experts, 8, top_k, 2, cfg));
    KVC_TRY(kvci_family_opt_int(c, "num_shared_experts", 0, 0, KVC_HP_MAX_EXPERTS, &shared));
    cfg->moe_intermediate_size = cfg->intermediate_size;
    cfg->shared_expert_intermediate_size = shared * cfg->intermediate_size;
    if (!cJSON_IsNull(kvci_json_find(c, "prefix_dense_intermediate_size")))
        KVC_TRY(kvci_family_opt_int(c, "prefix_dense_intermediate_size", dense, 1, KVC_HP_MAX_WIDTH, &dense));
    cfg->intermediate_size = dense;
    KVC_TRY(either(c, "expert_selection_fn", "softmax", "sigmoid", &cfg->moe_route_sigmoid));
    KVC_TRY(either(c, "shared_expert_combination_strategy", "average", "sum", &sum));
    cfg->moe_shared_average = !sum && shared > 0;
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", 0, 0, cfg->num_layers, &cfg->first_k_dense_replace));
    KVC_TRY(kvci_family_mlp_layer_types(c, cfg));
    KVC_TRY(kvci_family_opt_int(c, "prefix_dense_sliding_window_pattern", 1, 1, KVC_HP_MAX_LAYERS, &prefix));
    kvc_layer_kind kinds[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, kinds));
    for (int64_t l = 0; l < cfg->num_layers; l++)
        cfg->layer_nope[l] = kinds[l] != KVC_LK_SLIDING && !(!cfg->layer_moe[l] && prefix == 1);
    return KVC_OK;
}
