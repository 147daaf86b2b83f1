/* Prefix caching of state layers in the engine (docs/runtime.md, "State layers"; docs/prefix-caching.md,
 * "Mamba"). The manager keeps a request's state block as the snapshot of its prefix when a step ends at a
 * multiple of the snapshot interval, moves the request to a fresh block before it computes past it, and hands
 * a prefix hit a fresh block with the snapshot as its copy source. The engine does the rest: its prompt chunks
 * end at snapshot positions where they can (so that snapshots exist), and before the model runs it copies
 * every copy source into the request's own block, in every state tensor of the key (a snapshot is never
 * written: the request resumes from its own copy). */
#include <string.h>

#include "base/dtype_traits.h"
#include "engine/engine_internal.h"

/* The snapshot interval of the manager's state keys (they share it), 0: no state key or caching off. */
int64_t kvci_engine_snapshot_interval(const kvc_manager *m) {
    int64_t s = 0;
    for (int32_t k = 0; k < kvc_manager_n_keys(m); k++) s = kvci_max64(s, kvc_manager_snapshot_interval(m, k));
    return s;
}

int64_t kvci_engine_align_chunk(const kvc_engine *e, const kvc_engine_req *r, int64_t n) {
    const int64_t s = e->snapshot_interval;
    if (s == 0 || n <= 1) return n;
    const int64_t end = r->n_cached + n, aligned = end / s * s;
    return aligned > r->n_cached ? aligned - r->n_cached : n;
}

/* Copies block src into block dst in e's tensor: [blocks, ...] with a block's storage contiguous. */
static void copy_block(const kvc_cache_entry *en, int32_t src, int32_t dst) {
    const kvc_tensor *t = &en->tensor;
    const kvc_dtype_traits *dt = kvci_dtype_traits(t->dtype);
    KVC_ASSERT(t->data != NULL && dt != NULL && src < t->shape[0] && dst < t->shape[0]);
    const size_t bytes = (size_t)(kvc_tensor_numel(t) / t->shape[0] / dt->block) * (size_t)dt->block_bytes;
    memcpy((uint8_t *)t->data + (size_t)dst * bytes, (const uint8_t *)t->data + (size_t)src * bytes, bytes);
}

/* Every state entry of key k (each layer's `state`, and any further state tensor of the layer) in r's block. */
static kvc_status copy_key(const kvc_engine *e, int64_t id, int32_t k, int32_t src) {
    int32_t ids[1 + KVC_MAX_NEXT_N];
    int64_t n = 0;
    kvc_status st = kvc_manager_block_ids(e->mgr, id, k, ids, 1 + KVC_MAX_NEXT_N, &n);
    if (st != KVC_OK) return st;
    if (n < 1 || ids[0] == KVC_NULL_BLOCK)
        return kvci_fail(KVC_EINTERNAL, "engine: request %lld has a state copy source but no state block",
                         (long long)id);
    const char *key = kvc_manager_key(e->mgr, k);
    const kvc_model_cache_info *ci = e->model.cache_info;
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            const kvc_cache_entry *en = &ci->layer_infos[l].caches[c];
            if (en->needs_block && strcmp(kvc_cache_entry_group_key(en), key) == 0) copy_block(en, src, ids[0]);
        }
    return KVC_OK;
}

kvc_status kvci_engine_copy_states(const kvc_engine *e) {
    if (e->snapshot_interval == 0) return KVC_OK;
    for (int64_t b = 0; b < e->n_rows; b++)
        for (int32_t k = 0; k < e->n_keys; k++) {
            int32_t src = KVC_NULL_BLOCK;
            kvc_status st = kvc_manager_state_source(e->mgr, e->row_ids[b], k, &src);
            if (st == KVC_OK && src != KVC_NULL_BLOCK) st = copy_key(e, e->row_ids[b], k, src);
            if (st != KVC_OK) return st;
        }
    return KVC_OK;
}
