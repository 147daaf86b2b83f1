/* GLM-5 (model_type glm_moe_dsa, GlmMoeDsaForCausalLM): DeepSeek-V3's MLA (always a q LoRA, RoPE always on
 * interleaved pairs: rope_interleave is not read) and grouped sigmoid router, MoE layers by mlp_layer_types, plus
 * DeepSeek sparse attention: a lightning indexer per "full" layer (indexer_types; "shared" layers reuse the
 * previous full layer's choice) picks the index_topk keys each query attends to. A query at a position below
 * index_topk has at most index_topk keys, all picked, so attention there is dense MLA: the runtime runs that and
 * refuses positions from index_topk on (forward.c; max_position_embeddings is cut to index_topk, so the runner and the
 * engine's default max_model_len stop there first). The indexer's keys are read and checked here; its weights are
 * not loaded. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_glm_dsa(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "glm_moe_dsa") == 0; }

/* The per-layer indexer modes: indexer_types ("full" / "shared"), else index_topk_pattern (a string of F and S),
 * else none given (transformers' schedule from index_topk_freq / index_skip_topk_offset always makes layer 0 full,
 * and shared layers change nothing below index_topk). Refused by name: a wrong length, another value, layer 0
 * shared (transformers' forward fails: it has no top-k to reuse). */
static kvc_status indexer_modes(const kvc_json_obj *c, const kvc_model_config *cfg) {
    const cJSON *types = NULL;
    const char *pattern = NULL;
    bool have_t = false, have_p = false;
    KVC_TRY(kvci_json_array(c, "indexer_types", KVC_HP_MAX_LAYERS, &types, &have_t));
    if (!have_t) KVC_TRY(kvci_json_str(c, "index_topk_pattern", KVC_HP_MAX_LAYERS, &pattern, &have_p));
    if (!have_t && !have_p) return KVC_OK;
    const char *key = have_t ? "indexer_types" : "index_topk_pattern";
    const int64_t n = have_t ? cJSON_GetArraySize(types) : (int64_t)strlen(pattern);
    if (n != cfg->num_layers)
        return kvci_fail(KVC_EINVAL, "%s: %s has %lld entries for %lld layers", c->doc, key, (long long)n,
                         (long long)cfg->num_layers);
    for (int64_t l = 0; l < n; l++) {
        bool full = false, ok = false;
        if (have_t) {
            const cJSON *t = cJSON_GetArrayItem(types, (int)l);
            ok = cJSON_IsString(t) && (strcmp(t->valuestring, "full") == 0 || strcmp(t->valuestring, "shared") == 0);
            full = ok && strcmp(t->valuestring, "full") == 0;
        } else {
            ok = pattern[l] == 'F' || pattern[l] == 'S';
            full = pattern[l] == 'F';
        }
        if (!ok)
            return kvci_fail(KVC_EINVAL, "%s: %s[%lld] must be %s", c->doc, key, (long long)l,
                             have_t ? "\"full\" or \"shared\"" : "F or S");
        if (l == 0 && !full)
            return kvci_fail(KVC_EINVAL, "%s: %s[0] is shared: the first layer has no earlier indexer to reuse", c->doc,
                             key);
    }
    return KVC_OK;
}

kvc_status kvci_family_parse_glm_dsa(const kvc_json_obj *c, kvc_model_config *cfg) {
    int64_t head_dim = 128, heads = 32;
    KVC_TRY(kvci_family_opt_int(c, "index_topk", 2048, 1, INT32_MAX, &cfg->index_topk));
    KVC_TRY(kvci_family_opt_int(c, "index_head_dim", 128, 1, KVC_HP_MAX_DIM, &head_dim));
    KVC_TRY(kvci_family_opt_int(c, "index_n_heads", 32, 1, KVC_HP_MAX_HEADS, &heads));
    /* the positions the runtime runs: the runner's limit and the engine's max_model_len by default */
    if (cfg->max_position_embeddings > cfg->index_topk) cfg->max_position_embeddings = cfg->index_topk;
    if (head_dim < cfg->qk_rope_head_dim) /* the indexer rotates its first qk_rope_head_dim channels */
        return kvci_fail(KVC_EINVAL, "%s: index_head_dim %lld is below qk_rope_head_dim %lld", c->doc,
                         (long long)head_dim, (long long)cfg->qk_rope_head_dim);
    return indexer_modes(c, cfg);
}
