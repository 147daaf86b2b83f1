/* DeepSeek-V4 (DeepseekV4ForCausalLM), planned only: every layer attends to a sliding window of
 * one shared key-value head (K = V) plus, on a compressed layer, one compressed entry per
 * `ratio` positions: compressed sparse attention (CSA, its Lightning Indexer keeps compressed keys
 * of its own and picks index_topk entries) or heavily compressed attention (HCA, all entries).
 * The layer list follows DeepseekV4Config.__post_init__: layer_types, else the legacy
 * compress_ratios (0, 4, 128 per layer), else two HCA layers then HCA and CSA alternating; the
 * ratios come from compress_rates (legacy compress_rate_csa / compress_rate_hca override it). */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

#define RATE_CSA "compressed_sparse_attention"
#define RATE_HCA "heavily_compressed_attention"

/* The config class's defaults: m = 4 for CSA, m' = 128 for HCA; two HCA layers first. */
#define DEFAULT_RATE_CSA  4
#define DEFAULT_RATE_HCA  128
#define DEFAULT_HCA_FIRST 2

/* Tokens per compressed entry of one layer type: compress_rates[type] (its default when the dict is absent or
 * null), then the legacy top-level key when present; 0 when the dict lacks the entry (refused by the caller if a
 * layer of the type needs it). */
static kvc_status rate_of(const kvc_json_obj *c, const char *type, const char *legacy, int64_t dflt, int64_t *out) {
    const cJSON *rates = kvci_json_find(c, "compress_rates");
    bool have = false;
    *out = dflt;
    if (rates != NULL && !cJSON_IsNull(rates)) {
        char path[64];
        kvc_json_obj sub;
        *out = 0;
        KVC_TRY(kvci_json_child(c, "compress_rates", path, sizeof path, &sub, &have));
        KVC_TRY(kvci_json_int(&sub, type, 1, KVC_HP_MAX_DIM, out, &have));
    }
    return kvci_json_int(c, legacy, 1, KVC_HP_MAX_DIM, out, &have);
}

/* Layer i's type (0 window only, 1 CSA, 2 HCA) from the list `field` of strings (layer_types) or of legacy
 * ratios (compress_ratios: 0, 4 or 128, as transformers maps them). */
static kvc_status list_type(const kvc_json_obj *c, const char *field, const cJSON *e, int64_t i, int *type) {
    char where[96];
    snprintf(where, sizeof where, "%s[%lld]", field, (long long)i);
    if (strcmp(field, "layer_types") == 0) {
        const char *s = cJSON_IsString(e) ? e->valuestring : "";
        *type = strcmp(s, "sliding_attention") == 0 ? 0
                : strcmp(s, RATE_CSA) == 0          ? 1
                : strcmp(s, RATE_HCA) == 0          ? 2
                                                    : -1;
        if (*type < 0)
            return kvci_fail(KVC_EINVAL, "%s: %s must be one of sliding_attention, " RATE_CSA ", " RATE_HCA, c->doc,
                             where);
        return KVC_OK;
    }
    int64_t r = 0;
    KVC_TRY(kvci_json_int_value(e, where, 0, DEFAULT_RATE_HCA, &r));
    *type = r == 0 ? 0 : r == DEFAULT_RATE_CSA ? 1 : r == DEFAULT_RATE_HCA ? 2 : -1;
    if (*type < 0)
        return kvci_fail(KVC_EINVAL, "%s: %s is %lld; DeepSeek-V4 knows 0 (window only), 4 (CSA) and 128 (HCA)", c->doc,
                         where, (long long)r);
    return KVC_OK;
}

kvc_status kvci_deepseek_v4_layers(const kvc_hparams *hp, int64_t n_layers, kvc_v4_layer *out) {
    const kvc_json_obj *c = &hp->cfg;
    int64_t rate[3] = {0, 0, 0};
    KVC_TRY(rate_of(c, RATE_CSA, "compress_rate_csa", DEFAULT_RATE_CSA, &rate[1]));
    KVC_TRY(rate_of(c, RATE_HCA, "compress_rate_hca", DEFAULT_RATE_HCA, &rate[2]));
    const cJSON *list = NULL;
    bool have = false;
    const char *field = "layer_types";
    if (!cJSON_IsNull(kvci_json_find(c, field))) KVC_TRY(kvci_json_array(c, field, KVC_HP_MAX_LAYERS, &list, &have));
    if (!have) {
        field = "compress_ratios";
        if (!cJSON_IsNull(kvci_json_find(c, field)))
            KVC_TRY(kvci_json_array(c, field, KVC_HP_MAX_LAYERS + 1, &list, &have));
    }
    /* layer_types must name every layer; compress_ratios may list more (the MTP layer), only the first n count */
    const int64_t n_list = have ? cJSON_GetArraySize(list) : 0;
    if (have && (strcmp(field, "layer_types") == 0 ? n_list != n_layers : n_list < n_layers))
        return kvci_fail(KVC_EINVAL, "%s: %s has %lld entries but num_hidden_layers is %lld", c->doc, field,
                         (long long)n_list, (long long)n_layers);
    const cJSON *e = have ? list->child : NULL;
    for (int64_t i = 0; i < n_layers; i++) {
        int type = i < DEFAULT_HCA_FIRST || (i - DEFAULT_HCA_FIRST) % 2 == 0 ? 2 : 1;
        if (have) {
            KVC_TRY(list_type(c, field, e, i, &type));
            e = e->next;
        }
        if (type > 0 && rate[type] == 0)
            return kvci_fail(KVC_EINVAL, "%s: compress_rates has no entry \"%s\" for layer %lld", c->doc,
                             type == 1 ? RATE_CSA : RATE_HCA, (long long)i);
        out[i] = (kvc_v4_layer){.ratio = rate[type], .indexed = type == 1};
    }
    return KVC_OK;
}

/* Every layer keeps its window (its compressed parts are planned beside it from kvci_deepseek_v4_layers,
 * which reads and checks layer_types or compress_ratios in place of the shared reader). */
static kvc_status v4_layer_list(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given) {
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_SLIDING;
    *given = true;
    return KVC_OK;
}

static const kvc_family_alias ALIASES[] = {
    {"deepseek_v4", "DeepseekV4ForCausalLM", "deepseek_v4", false},
};

const kvc_family_desc kvc_family_deepseek_v4 = {
    .id = KVC_FAMILY_DEEPSEEK_V4,
    .name = "deepseek_v4",
    .aliases = ALIASES,
    .n_aliases = sizeof ALIASES / sizeof ALIASES[0],
    .sinks = true,
    .layer_list = v4_layer_list,
};
