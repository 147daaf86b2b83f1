/* MiniMax-M3 (minimax_m3_vl, its text model, and the remote-code minimax_m3; planned only): the layers that run a
 * sparse Lightning Indexer (layer_types "minimax_m3_sparse", else sparse_attention_config.sparse_attention_freq 1, as
 * MiniMaxM3VLTextConfig reads it; neither: no indexer) keep one indexer key per token beside their K/V, index_head_dim
 * wide (else sparse_attention_config.sparse_index_dim, else 128), in the model's dtype as transformers'
 * MiniMaxM3VLSparseCacheLayer keeps it (idx_keys [batch, 1, tokens, index_head_dim]). */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

bool kvci_plan_is_minimax_m3(const char *model_type) {
    static const char *const TYPES[] = {"minimax_m3_vl", "minimax_m3_vl_text", "minimax_m3"};
    return kvci_name_listed(model_type, TYPES, sizeof TYPES / sizeof TYPES[0]);
}

/* The indexed layers into f->index_layers, from layer_types or sparse_attention_freq (*any: one is given). */
static kvc_status indexed_layers(const kvc_hparams *hp, const kvc_json_obj *sparse, kvc_model_facts *f, bool *any) {
    const cJSON *list = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(&hp->cfg, "layer_types", KVC_HP_MAX_LAYERS, &list, &have));
    const bool by_type = have;
    if (!have && sparse->obj != NULL)
        KVC_TRY(kvci_json_array(sparse, "sparse_attention_freq", KVC_HP_MAX_LAYERS, &list, &have));
    *any = have;
    if (!have) return KVC_OK;
    if (cJSON_GetArraySize(list) != f->n_layers) /* layer_types' count is checked with the kinds */
        return kvci_fail(KVC_EINVAL, "%s: %s.sparse_attention_freq has %d entries for %lld layers", hp->cfg.doc,
                         sparse->path, cJSON_GetArraySize(list), (long long)f->n_layers);
    for (int64_t i = 0; i < f->n_layers; i++) {
        const cJSON *e = cJSON_GetArrayItem(list, (int)i);
        if (by_type) {
            f->index_layers[i] = strcmp(e->valuestring, "minimax_m3_sparse") == 0;
            continue;
        }
        char where[96];
        int64_t on = 0;
        snprintf(where, sizeof where, "%s: %s.sparse_attention_freq[%lld]", hp->cfg.doc, sparse->path, (long long)i);
        KVC_TRY(kvci_json_int_value(e, where, 0, 1, &on));
        f->index_layers[i] = on == 1;
    }
    return KVC_OK;
}

kvc_status kvci_plan_minimax_m3_index(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    char path[64];
    kvc_json_obj sparse = {0};
    bool have = false, any = false;
    KVC_TRY(kvci_json_child(&hp->cfg, "sparse_attention_config", path, sizeof path, &sparse, &have));
    if (!have) sparse.obj = NULL;
    f->index_layers = kvci_calloc((size_t)f->n_layers, sizeof *f->index_layers);
    if (f->index_layers == NULL)
        return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    KVC_TRY(indexed_layers(hp, &sparse, f, &any));
    int64_t n = 0;
    for (int64_t i = 0; i < f->n_layers; i++) n += f->index_layers[i];
    if (n == 0) return KVC_OK;
    int64_t dim = 128;
    KVC_TRY(kvci_json_int(&hp->cfg, "index_head_dim", 1, KVC_HP_MAX_DIM, &dim, &have));
    if (!have && sparse.obj != NULL)
        KVC_TRY(kvci_json_int(&sparse, "sparse_index_dim", 1, KVC_HP_MAX_DIM, &dim, &have));
    f->index_head_dim = dim, f->index_form = KVCI_INDEX_KV_DTYPE;
    kvci_plan_warn(
        plan,
        "sparse attention: %lld of the %lld layers run a Lightning Indexer and keep its keys "
        "(indexer_k_cache, %lld channels per token in the KV dtype); the operator parameters below are dense "
        "attention's",
        (long long)n, (long long)f->n_layers, (long long)dim);
    return KVC_OK;
}
