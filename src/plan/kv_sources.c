/* Kolibri 1.1 (Kolibri1_1Config, transformers 5.25): kv_source_layers names, for each layer, the layer whose keys and
 * values it attends to. A layer that reads another's has no key / value projections and keeps no cache (its
 * attention does not update transformers' DynamicCache); the others keep their own. Absent, the class derives it: of
 * the indexed_attention layers, the 2nd, 3rd and 10th read the 1st's, the 7th to 9th the 6th's (at most 10 such
 * layers; more need the key). The class's rules are checked: a sliding layer reads its own, a reader reads an
 * earlier layer of its kind that keeps its own. */
#include <stdio.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

/* Kolibri1_1Config's sources when kv_source_layers is absent, into src [n]. */
static kvc_status default_sources(const kvc_hparams *hp, const kvc_model_facts *f, int64_t *src) {
    static const int64_t of_indexed[10] = {0, 0, 0, 3, 4, 5, 5, 5, 5, 0}; /* per indexed layer: which it reads */
    int64_t indexed[10], n = 0;
    for (int64_t i = 0; i < f->n_layers; i++) {
        src[i] = i;
        if (f->kinds[i] != KVC_LK_FULL) continue;
        if (n == 10)
            return kvci_fail(KVC_EINVAL,
                             "%s: kv_source_layers is absent and Kolibri1_1Config's default covers 10 "
                             "indexed_attention layers, not more: set it",
                             hp->cfg.doc);
        indexed[n++] = i;
    }
    for (int64_t j = 0; j < n; j++) src[indexed[j]] = indexed[of_indexed[j]];
    return KVC_OK;
}

kvc_status kvci_plan_kv_sources(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    const kvc_json_obj *c = &hp->cfg;
    const cJSON *list = NULL;
    bool have = false;
    int64_t *src = kvci_calloc((size_t)f->n_layers, sizeof *src);
    if (src == NULL) return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    kvc_status st = kvci_json_array(c, "kv_source_layers", KVC_HP_MAX_LAYERS, &list, &have);
    if (st == KVC_OK && !have) st = default_sources(hp, f, src);
    if (st == KVC_OK && have && cJSON_GetArraySize(list) != f->n_layers)
        st = kvci_fail(KVC_EINVAL, "%s: kv_source_layers has %d entries for %lld layers", c->doc,
                       cJSON_GetArraySize(list), (long long)f->n_layers);
    for (int64_t i = 0; st == KVC_OK && have && i < f->n_layers; i++) {
        char where[64];
        snprintf(where, sizeof where, "%s: kv_source_layers[%lld]", c->doc, (long long)i);
        st = kvci_json_int_value(cJSON_GetArrayItem(list, (int)i), where, 0, i, &src[i]);
    }
    int64_t readers = 0;
    for (int64_t i = 0; st == KVC_OK && i < f->n_layers; i++) {
        const int64_t s = src[i];
        if (s != i && (src[s] != s || f->kinds[s] != f->kinds[i] || f->kinds[i] != KVC_LK_FULL))
            st = kvci_fail(KVC_EINVAL,
                           "%s: kv_source_layers[%lld] is %lld: an indexed_attention layer reads an earlier "
                           "indexed_attention layer that keeps its own keys and values (sliding layers their own)",
                           c->doc, (long long)i, (long long)s);
        readers += s != i;
    }
    for (int64_t i = 0; st == KVC_OK && i < f->n_layers; i++)
        if (src[i] != i) f->kinds[i] = KVC_LK_NONE;
    if (st == KVC_OK) f->kv_shared_layers += readers;
    if (st == KVC_OK && readers > 0)
        kvci_plan_warn(plan,
                       "kv_source_layers: %lld layers read the keys and values of an earlier layer and are planned "
                       "without caches of their own (not listed below)",
                       (long long)readers);
    kvci_free(src);
    return st;
}
