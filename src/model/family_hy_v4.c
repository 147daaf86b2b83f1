/* HY V4 (HYV4ForCausalLM), planned only: DeepSeek-V3.2's latent attention with its sparse-attention indexer
 * (MLA caches plus the indexer's keys), learned sinks, and cross-layer top-k sharing: a layer whose
 * indexer_types entry is "shared" reuses the last "full" layer's choice and keeps no indexer keys. Its layers are
 * all "indexed_attention" (full causal over the latent cache). */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

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

static const kvc_family_alias ALIASES[] = {
    {"hy_v4", "HYV4ForCausalLM", "hy_v4", false},
};

const kvc_family_desc kvc_family_hy_v4 = {
    .id = KVC_FAMILY_HY_V4,
    .name = "hy_v4",
    .aliases = ALIASES,
    .n_aliases = sizeof ALIASES / sizeof ALIASES[0],
    .mla = true,
    .sinks = true,
    .cache_dims = kvci_family_mla_cache_dims,
    .layer_list = hy_v4_layer_list,
};
