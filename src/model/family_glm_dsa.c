/* DeepSeek sparse attention's config keys: DeepSeek-V3.2 (deepseek_v32: V3's layers, an indexer on every layer
 * rotating half-split lanes) and GLM-5 (model_type glm_moe_dsa, GlmMoeDsaForCausalLM): DeepSeek-V3's MLA (always a q
 * LoRA, RoPE always on interleaved pairs: rope_interleave is not read) and grouped sigmoid router, MoE layers by
 * mlp_layer_types, plus DeepSeek sparse attention: a lightning indexer per "full" layer (indexer_types; "shared" layers
 * reuse the previous full layer's choice) picks the index_topk keys each query attends to (attn_dsa.c). The indexer's
 * keys are read and checked here. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_glm_dsa(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "glm_moe_dsa") == 0; }

kvc_status kvci_glm_dsa_indexed(const kvc_json_obj *c, int64_t n_layers, bool *full) {
    const cJSON *types = NULL;
    const char *pattern = NULL;
    bool have_t = false, have_p = false;
    const char *key = "indexer_types";
    KVC_TRY(kvci_json_array(c, key, KVC_HP_MAX_LAYERS, &types, &have_t));
    if (!have_t && cJSON_IsArray(kvci_json_find(c, "index_topk_pattern"))) { /* the class takes a list as the types */
        key = "index_topk_pattern";
        KVC_TRY(kvci_json_array(c, key, KVC_HP_MAX_LAYERS, &types, &have_t));
    }
    if (!have_t) KVC_TRY(kvci_json_str(c, "index_topk_pattern", KVC_HP_MAX_LAYERS, &pattern, &have_p));
    if (!have_t && !have_p) { /* GlmMoeDsaConfig's schedule: full where max(l - offset + 1, 0) % freq == 0 */
        int64_t freq = 1, offset = 2;
        KVC_TRY(kvci_family_opt_int(c, "index_topk_freq", 1, INT32_MIN, INT32_MAX, &freq));
        KVC_TRY(kvci_family_opt_int(c, "index_skip_topk_offset", 2, INT32_MIN, INT32_MAX, &offset));
        freq = freq < 1 ? 1 : freq;
        for (int64_t l = 0; l < n_layers; l++) full[l] = (l - offset + 1 > 0 ? l - offset + 1 : 0) % freq == 0;
        return KVC_OK;
    }
    if (!have_t) key = "index_topk_pattern";
    const int64_t n = have_t ? cJSON_GetArraySize(types) : (int64_t)strlen(pattern);
    if (n != n_layers)
        return kvci_fail(KVC_EINVAL, "%s: %s has %lld entries for %lld layers", c->doc, key, (long long)n,
                         (long long)n_layers);
    for (int64_t l = 0; l < n; l++) {
        bool ok = false;
        if (have_t) {
            const cJSON *t = cJSON_GetArrayItem(types, (int)l);
            ok = cJSON_IsString(t) && (strcmp(t->valuestring, "full") == 0 || strcmp(t->valuestring, "shared") == 0);
            full[l] = ok && strcmp(t->valuestring, "full") == 0;
        } else {
            ok = pattern[l] == 'F' || pattern[l] == 'S';
            full[l] = pattern[l] == 'F';
        }
        if (!ok)
            return kvci_fail(KVC_EINVAL, "%s: %s[%lld] must be %s", c->doc, key, (long long)l,
                             have_t ? "\"full\" or \"shared\"" : "F or S");
        if (l == 0 && !full[l])
            return kvci_fail(KVC_EINVAL, "%s: %s[0] is shared: the first layer has no earlier indexer to reuse", c->doc,
                             key);
    }
    return KVC_OK;
}

kvc_status kvci_family_indexer_sizes(const kvc_json_obj *c, kvc_model_config *cfg, int64_t heads_default) {
    KVC_TRY(kvci_family_opt_int(c, "index_topk", 2048, 1, INT32_MAX, &cfg->index_topk));
    KVC_TRY(kvci_family_opt_int(c, "index_head_dim", 128, 1, KVC_HP_MAX_DIM, &cfg->index_head_dim));
    KVC_TRY(kvci_family_opt_int(c, "index_n_heads", heads_default, 1, KVC_HP_MAX_HEADS, &cfg->index_n_heads));
    if (cfg->index_head_dim < cfg->qk_rope_head_dim) /* the indexer rotates its first qk_rope_head_dim channels */
        return kvci_fail(KVC_EINVAL, "%s: index_head_dim %lld is below qk_rope_head_dim %lld", c->doc,
                         (long long)cfg->index_head_dim, (long long)cfg->qk_rope_head_dim);
    return KVC_OK;
}

kvc_status kvci_family_parse_v32_dsa(const kvc_json_obj *c, kvc_model_config *cfg) {
    KVC_TRY(kvci_family_indexer_sizes(c, cfg, 64));
    cfg->index_rope_half = true; /* DeepseekV32Indexer: half-split lanes, unlike its attention's pairs */
    if (kvci_json_missing(c, "max_position_embeddings")) cfg->max_position_embeddings = 163840; /* the class's */
    return KVC_OK; /* every layer runs its indexer (indexer_types is not read) */
}

/* A.X-K2 (skt/A.X-K2, AXK2ForCausalLM): DeepSeek-V3.2's layers (its indexer on every layer, layer_types not read) with
 * AXK2Config's defaults (index_n_heads 16, max_position_embeddings 131072; the layers of AXK1Config), q_gate_proj in
 * place of q_b_proj (a query and an output gate per head, mla_q_gate), gated norms of gated_norm_rank (16), and a
 * router over all experts unless n_group and topk_group are both set (null: none; one alone is refused, as its
 * config class does). */
kvc_status kvci_family_parse_axk2(const kvc_json_obj *c, kvc_model_config *cfg) {
    KVC_TRY(kvci_family_indexer_sizes(c, cfg, 16));
    cfg->index_rope_half = true; /* AXK2Indexer is DeepseekV32Indexer */
    if (kvci_json_missing(c, "max_position_embeddings")) cfg->max_position_embeddings = 131072; /* the class's */
    cfg->mla_q_gate = true;
    KVC_TRY(kvci_family_opt_int(c, "gated_norm_rank", 16, 1, KVC_HP_MAX_WIDTH, &cfg->gated_norm_rank));
    const bool groups = kvci_json_find(c, "n_group") != NULL, top = kvci_json_find(c, "topk_group") != NULL;
    if (groups != top)
        return kvci_fail(KVC_EINVAL, "%s: axk2 %s is set without %s (both or neither, as AXK2Config)", c->doc,
                         groups ? "n_group" : "topk_group", groups ? "topk_group" : "n_group");
    return KVC_OK;
}

kvc_status kvci_family_parse_glm_dsa(const kvc_json_obj *c, kvc_model_config *cfg) {
    KVC_TRY(kvci_family_indexer_sizes(c, cfg, 32));
    cfg->index_rope_half = false; /* GLM-5's indexer rotates interleaved pairs, as its attention */
    if (kvci_json_missing(c, "max_position_embeddings")) cfg->max_position_embeddings = 202752; /* the class's */
    bool full[KVC_MODEL_MAX_LAYERS];
    KVC_TRY(kvci_glm_dsa_indexed(c, cfg->num_layers, full));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_index_shared[l] = !full[l];
    return KVC_OK;
}
