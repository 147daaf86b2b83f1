/* Nemotron-NAS (model_type nemotron-nas, DeciLMForCausalLM: Llama-3.3-Nemotron-Super-49B, Llama-3.1-Nemotron-Ultra,
 * -Nano; planned only) describes each layer in block_configs[i].attention: `no_op` (no attention at all) or
 * `replace_with_linear` (a linear map in its place) keep no cache; any other layer keeps K/V of
 * num_attention_heads / n_heads_in_group heads, its own count. The config has no num_key_value_heads: the model-wide
 * count reported is the first attention layer's. A window_length or num_sink_tokens (attention the plan does not
 * model) is refused by name. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

/* The KV heads of block_configs[i] (0: no attention), read under doc. */
static kvc_status block_kv_heads(const cJSON *item, int64_t i, const char *doc, int64_t heads, int64_t *kv) {
    char path[64];
    snprintf(path, sizeof path, "block_configs[%lld].attention", (long long)i);
    const cJSON *a = cJSON_IsObject(item) ? cJSON_GetObjectItemCaseSensitive(item, "attention") : NULL;
    if (!cJSON_IsObject(a)) return kvci_fail(KVC_EINVAL, "%s: %s is missing or not an object", doc, path);
    const kvc_json_obj o = {.obj = a, .doc = doc, .path = path};
    static const char *const unplanned[] = {"window_length", "num_sink_tokens"};
    for (size_t k = 0; k < sizeof unplanned / sizeof unplanned[0]; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, unplanned[k]);
        if (v != NULL && !cJSON_IsNull(v))
            return kvci_fail(KVC_EINVAL, "%s: %s.%s is not supported (only null: the plan models full attention)", doc,
                             path, unplanned[k]);
    }
    static const char *const none[] = {"no_op", "replace_with_linear"};
    for (size_t k = 0; k < sizeof none / sizeof none[0]; k++) {
        bool on = false, have = false; /* absent or null: false */
        if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(a, none[k]))) continue;
        KVC_TRY(kvci_json_bool(&o, none[k], &on, &have));
        if (on) return *kv = 0, KVC_OK;
    }
    int64_t group = 0;
    KVC_TRY(kvci_json_int(&o, "n_heads_in_group", 1, heads, &group, NULL));
    if (heads % group != 0)
        return kvci_fail(KVC_EINVAL, "%s: %s.n_heads_in_group %lld does not divide num_attention_heads %lld", doc, path,
                         (long long)group, (long long)heads);
    *kv = heads / group;
    return KVC_OK;
}

/* block_configs, one entry per layer: each layer's KV heads into kv[n_layers] (NULL: only checked) and the first
 * attention layer's into *first (0 when no layer has attention). */
static kvc_status read_blocks(const kvc_hparams *hp, int64_t n_layers, int64_t heads, int64_t *kv, int64_t *first) {
    const cJSON *list = NULL;
    KVC_TRY(kvci_json_array(&hp->cfg, "block_configs", KVC_HP_MAX_LAYERS, &list, NULL));
    if (cJSON_GetArraySize(list) != n_layers)
        return kvci_fail(KVC_EINVAL, "%s: block_configs has %d entries for %lld layers", hp->cfg.doc,
                         cJSON_GetArraySize(list), (long long)n_layers);
    *first = 0;
    for (int64_t i = 0; i < n_layers; i++) {
        int64_t n = 0;
        KVC_TRY(block_kv_heads(cJSON_GetArrayItem(list, (int)i), i, hp->cfg.doc, heads, &n));
        if (kv != NULL) kv[i] = n;
        if (*first == 0) *first = n;
    }
    return KVC_OK;
}

bool kvci_plan_has_block_configs(const kvc_hparams *hp) {
    return hp->model_type != NULL && strcmp(hp->model_type, "nemotron-nas") == 0 &&
           kvci_json_find(&hp->cfg, "block_configs") != NULL;
}

kvc_status kvci_plan_block_kv_heads(const kvc_hparams *hp, kvc_model_facts *f) {
    int64_t first = 0;
    KVC_TRY(read_blocks(hp, f->n_layers, f->n_heads, NULL, &first));
    if (first == 0) return kvci_fail(KVC_EINVAL, "%s: block_configs: no layer has attention", hp->cfg.doc);
    f->n_kv_heads = first;
    return KVC_OK;
}

kvc_status kvci_plan_block_configs(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    int64_t first = 0;
    f->layer_head_dim = kvci_calloc((size_t)f->n_layers, sizeof *f->layer_head_dim);
    f->layer_kv_heads = kvci_calloc((size_t)f->n_layers, sizeof *f->layer_kv_heads);
    f->layer_v_head_dim = kvci_calloc((size_t)f->n_layers, sizeof *f->layer_v_head_dim);
    if (f->layer_head_dim == NULL || f->layer_kv_heads == NULL || f->layer_v_head_dim == NULL)
        return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    KVC_TRY(read_blocks(hp, f->n_layers, f->n_heads, f->layer_kv_heads, &first));
    int64_t other = 0;
    for (int64_t i = 0; i < f->n_layers; i++) {
        f->layer_head_dim[i] = f->head_dim;
        if (f->layer_kv_heads[i] == 0) f->kinds[i] = KVC_LK_NONE, f->layer_kv_heads[i] = f->n_kv_heads;
        other += f->kinds[i] != KVC_LK_NONE && f->layer_kv_heads[i] != f->n_kv_heads;
    }
    if (other > 0)
        kvci_plan_warn(plan, "block_configs: %lld attention layers have other KV heads than the first one's %lld",
                       (long long)other, (long long)f->n_kv_heads);
    return KVC_OK;
}
