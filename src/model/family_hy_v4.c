/* HY V4 (HYV4ForCausalLM): DeepSeek-V3.2's latent attention with its sparse-attention indexer (MLA caches plus the
 * indexer's keys; HYV4Indexer rotates the LAST qk_rope_head_dim channels of its queries and keys, its key LayerNorm's
 * eps rms_norm_eps), cross-layer top-k sharing (a layer whose indexer_types entry is "shared" reuses the last "full"
 * layer's choice and keeps no indexer keys), learned sinks per head, the attention output times sigmoid(gate_proj x)
 * per head and channel, hyper-connection residual streams (hc_mult, hc_magnitude, hc_eps: hyper_conn.c), and the
 * feed-forward by mlp_layer_types (the dense MLP on layer 0 by default; "sparse": the sigmoid router with its
 * correction bias over every expert (n_group 1), routed experts clamped by swiglu_limit, shared experts of
 * n_shared_experts x moe_intermediate_size). Its layers are all "indexed_attention" (full causal over the latent
 * cache). Not read, as HYV4Config derives or ignores them: num_key_value_heads (set to the heads), head_dim
 * (qk_rope_head_dim), rope_interleave (always pairs), learnable_sink_init (an initial value); the MTP layers'
 * weights (model.mtp_layers.*) are not loaded, as transformers skips them. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* layer_types: "indexed_attention" (HYV4Config's only type) on every layer, else refused by name; absent or null:
 * the config class's, the same. */
static kvc_status hy_v4_layer_list(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given) {
    const kvc_json_obj *c = &ctx->hp->cfg;
    const cJSON *list = NULL;
    bool have = false;
    if (!cJSON_IsNull(kvci_json_find(c, "layer_types")))
        KVC_TRY(kvci_json_array(c, "layer_types", KVC_HP_MAX_LAYERS, &list, &have));
    if (have && cJSON_GetArraySize(list) != ctx->n_layers)
        return kvci_fail(KVC_EINVAL, "%s: layer_types has %d entries but num_hidden_layers is %lld", c->doc,
                         cJSON_GetArraySize(list), (long long)ctx->n_layers);
    const cJSON *e = have ? list->child : NULL;
    for (int64_t i = 0; i < ctx->n_layers; i++, e = have ? e->next : NULL) {
        if (have && !(cJSON_IsString(e) && strcmp(e->valuestring, "indexed_attention") == 0))
            return kvci_fail(KVC_EINVAL, "%s: layer_types[%lld] must be \"indexed_attention\" for hy_v4", c->doc,
                             (long long)i);
        kinds[i] = KVC_LK_FULL;
    }
    *given = true;
    return KVC_OK;
}

kvc_status kvci_hy_v4_indexed(const kvc_hparams *hp, int64_t n_layers, bool *out) {
    const kvc_json_obj *c = &hp->cfg;
    const cJSON *list = NULL;
    bool have = false;
    if (!cJSON_IsNull(kvci_json_find(c, "indexer_types")))
        KVC_TRY(kvci_json_array(c, "indexer_types", KVC_HP_MAX_LAYERS, &list, &have));
    if (have && cJSON_GetArraySize(list) != n_layers)
        return kvci_fail(KVC_EINVAL, "%s: indexer_types has %d entries but num_hidden_layers is %lld", c->doc,
                         cJSON_GetArraySize(list), (long long)n_layers);
    const cJSON *e = have ? list->child : NULL;
    for (int64_t i = 0; i < n_layers; i++, e = have ? e->next : NULL) {
        out[i] = i == 0 || (i - 1) % 4 == 0; /* HYV4Config's: layer 0, then every fourth from layer 1 */
        if (!have) continue;
        const char *s = cJSON_IsString(e) ? e->valuestring : "";
        if (strcmp(s, "full") != 0 && strcmp(s, "shared") != 0)
            return kvci_fail(KVC_EINVAL, "%s: indexer_types[%lld] must be \"full\" or \"shared\"", c->doc,
                             (long long)i);
        out[i] = strcmp(s, "full") == 0;
    }
    if (n_layers > 0 && !out[0]) /* a shared layer reuses an earlier full layer's choice */
        return kvci_fail(KVC_EINVAL, "%s: indexer_types[0] is \"shared\" but no earlier layer is \"full\"", c->doc);
    return KVC_OK;
}

/* HYV4Config's keys beyond the shared reader's and the MLA sizes (kvci_hparams_read_mla). */
static kvc_status parse_hy_v4(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range pos = {0.0, KVC_HP_MAX_FACTOR, true}, eps = {0.0, 1.0, false};
    KVC_TRY(kvci_family_mla_attention(hp, cfg));
    cfg->num_kv_heads = cfg->num_heads; /* HYV4Config sets num_key_value_heads to the heads */
    if (cfg->q_lora_rank == 0)
        return kvci_fail(KVC_EINVAL, "%s: hy_v4 q_lora_rank null is not supported (its attention always has a q LoRA)",
                         c->doc);
    if (kvci_json_missing(c, "max_position_embeddings")) cfg->max_position_embeddings = 262144; /* the class's */
    /* the indexer */
    KVC_TRY(kvci_family_indexer_sizes(c, cfg, 16));
    cfg->index_rope_last = true, cfg->index_norm_eps = cfg->rms_norm_eps;
    bool full[KVC_MODEL_MAX_LAYERS];
    KVC_TRY(kvci_hy_v4_indexed(hp, cfg->num_layers, full));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_index_shared[l] = !full[l];
    cfg->attn_sinks = true, cfg->attn_gate_proj = true;
    /* hyper-connections */
    KVC_TRY(kvci_family_opt_int(c, "hc_mult", 4, 1, KVC_HP_MAX_STREAMS, &cfg->hc_mult));
    KVC_TRY(kvci_family_opt_num(c, "hc_magnitude", 2.0, (kvc_json_range){0.0, KVC_HP_MAX_FACTOR, false},
                                &cfg->hc_magnitude));
    KVC_TRY(kvci_family_opt_num(c, "hc_eps", 1e-6, eps, &cfg->hc_eps));
    /* the feed-forward: mlp_layer_types, else layer 0 dense */
    cfg->first_k_dense_replace = 1;
    KVC_TRY(kvci_family_mlp_layer_types(c, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 768, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "n_routed_experts", 256, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts));
    KVC_TRY(kvci_family_opt_int(c, "num_local_experts", cfg->n_routed_experts, 1, KVC_HP_MAX_EXPERTS,
                                &cfg->n_routed_experts)); /* its attribute_map's name */
    KVC_TRY(kvci_family_opt_int(c, "n_shared_experts", 1, 0, KVC_HP_MAX_EXPERTS, &cfg->n_shared_experts));
    KVC_TRY(kvci_family_opt_int(c, "num_experts_per_tok", 8, 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_int(c, "n_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->n_group));
    KVC_TRY(kvci_family_opt_int(c, "topk_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", 2.827, pos, &cfg->routed_scaling_factor));
    KVC_TRY(kvci_family_opt_num(c, "swiglu_limit", 10.0, (kvc_json_range){0.0, KVC_HP_MAX_FACTOR, false},
                                &cfg->swiglu_limit));
    if (!(cfg->swiglu_limit > 0.0)) /* its docstring: no clamp; HYV4Experts clamps at it all the same */
        return kvci_fail(KVC_EINVAL, "%s: hy_v4 swiglu_limit %g is not supported (above 0 only)", c->doc,
                         cfg->swiglu_limit);
    cfg->shared_expert_intermediate_size = cfg->n_shared_experts * cfg->moe_intermediate_size;
    return KVC_OK;
}

/* The dense layers (layer_moe false): the dense MLP; the rest: routed and shared experts. */
static kvc_status hy_v4_ffn(const kvc_fwd_step *s, int64_t l) {
    return s->m->layers[l].moe ? kvci_ffn_deepseek(s, l, false) : kvci_fwd_dense_mlp(s, l);
}

static const kvc_family_alias ALIASES[] = {
    {"hy_v4", "HYV4ForCausalLM", "hy_v4", true},
};

const kvc_family_desc kvc_family_hy_v4 = {
    .id = KVC_FAMILY_HY_V4,
    .name = "hy_v4",
    .aliases = ALIASES,
    .n_aliases = sizeof ALIASES / sizeof ALIASES[0],
    .mla = true,
    .sinks = true,
    .rms_norm_eps = 1e-5,
    .parse = parse_hy_v4,
    .check = kvci_family_check_grouped_router,
    .cache_dims = kvci_family_mla_cache_dims,
    .attention = kvci_attn_mla,
    .ffn = hy_v4_ffn,
    .layer_list = hy_v4_layer_list,
};
