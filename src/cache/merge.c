/* Merging a draft model's cache description after the main model's. */
#include <string.h>

#include "base/internal.h"
#include "kvcache/cache.h"

void kvc_model_cache_info_destroy(kvc_model_cache_info *ci) {
    if (ci == NULL) return;
    for (int32_t l = 0; l < ci->n_layer_infos; l++) kvci_free(ci->layer_infos[l].caches);
    kvci_free(ci->layer_infos);
    kvci_free(ci);
}

/* Deep-copies src's layers into dst->layer_infos[first ..], offsetting layer_idx. */
static kvc_status copy_layers(kvc_model_cache_info *dst, int32_t first, const kvc_model_cache_info *src,
                              int32_t idx_offset) {
    for (int32_t l = 0; l < src->n_layer_infos; l++) {
        const kvc_layer_cache_info *from = &src->layer_infos[l];
        if (from->layer_idx > INT32_MAX - idx_offset)
            return kvci_fail(KVC_EINVAL, "merge: draft layer_idx %d + %d overflows", from->layer_idx, idx_offset);
        kvc_layer_cache_info *to = &dst->layer_infos[first + l];
        to->caches = kvci_malloc((size_t)kvci_max64(from->n_caches, 1) * sizeof *to->caches);
        if (to->caches == NULL) return kvci_fail(KVC_ENOMEM, "cannot copy layer %d", from->layer_idx);
        if (from->n_caches > 0) memcpy(to->caches, from->caches, (size_t)from->n_caches * sizeof *to->caches);
        to->n_caches = from->n_caches;
        to->layer_idx = from->layer_idx + idx_offset;
        dst->n_layer_infos++;
    }
    return KVC_OK;
}

static kvc_status check_shape(const kvc_model_cache_info *ci, const char *which) {
    if (ci == NULL) return kvci_fail(KVC_EINVAL, "merge: %s cache info must not be NULL", which);
    if (ci->n_layer_infos < 0 || (ci->n_layer_infos > 0 && ci->layer_infos == NULL))
        return kvci_fail(KVC_EINVAL, "merge: %s cache info has no layer_infos array", which);
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        if (ci->layer_infos[l].n_caches < 0 || (ci->layer_infos[l].n_caches > 0 && ci->layer_infos[l].caches == NULL))
            return kvci_fail(KVC_EINVAL, "merge: %s layer %d has no caches array", which, ci->layer_infos[l].layer_idx);
    return KVC_OK;
}

kvc_status kvc_model_cache_info_merge(const kvc_model_cache_info *main_ci, const kvc_model_cache_info *draft_ci,
                                      kvc_model_cache_info **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "merge: out must not be NULL");
    *out = NULL;
    kvc_status st = check_shape(main_ci, "main");
    if (st == KVC_OK) st = check_shape(draft_ci, "draft");
    if (st != KVC_OK) return st;
    if (main_ci->is_mla_backend != draft_ci->is_mla_backend)
        return kvci_fail(KVC_EINVAL, "merge: is_mla_backend differs (main %s, draft %s)",
                         main_ci->is_mla_backend ? "true" : "false", draft_ci->is_mla_backend ? "true" : "false");
    int32_t n = main_ci->n_layer_infos + draft_ci->n_layer_infos;
    kvc_model_cache_info *ci = kvci_calloc(1, sizeof *ci);
    if (ci != NULL) ci->layer_infos = kvci_calloc((size_t)kvci_max64(n, 1), sizeof *ci->layer_infos);
    if (ci == NULL || ci->layer_infos == NULL) {
        kvci_free(ci);
        return kvci_fail(KVC_ENOMEM, "merge: cannot allocate %d layers", n);
    }
    ci->is_mla_backend = main_ci->is_mla_backend;
    st = copy_layers(ci, 0, main_ci, 0);
    if (st == KVC_OK) st = copy_layers(ci, main_ci->n_layer_infos, draft_ci, main_ci->n_layer_infos);
    /* main's indices may skip layers (cache-less ones are not listed): an offset draft index can meet one */
    for (int32_t d = main_ci->n_layer_infos; st == KVC_OK && d < n; d++)
        for (int32_t l = 0; l < main_ci->n_layer_infos; l++)
            if (ci->layer_infos[d].layer_idx == ci->layer_infos[l].layer_idx) {
                st = kvci_fail(KVC_EINVAL,
                               "merge: draft layer %d becomes layer_idx %d, which the main model already has "
                               "(main's %d layer infos do not number 0 .. %d)",
                               ci->layer_infos[d].layer_idx - main_ci->n_layer_infos, ci->layer_infos[d].layer_idx,
                               main_ci->n_layer_infos, main_ci->n_layer_infos - 1);
                break;
            }
    if (st != KVC_OK) {
        kvc_model_cache_info_destroy(ci);
        return st;
    }
    ci->num_layers = n;
    *out = ci;
    return KVC_OK;
}
