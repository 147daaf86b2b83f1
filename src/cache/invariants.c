/* kvc_manager_check_invariants: verification.md §5 after any mutating call. */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_internal.h"

#define BROKEN(...) kvc_fail(KVC_EINTERNAL, __VA_ARGS__)

/* INV-P1, INV-P2: the free queue holds distinct real ids, mirrored by is_free. */
static kvc_status check_pool(const kvc_single_manager *sm, uint8_t *seen /* [num_blocks] */) {
    int64_t num_blocks = kvc_block_pool_num_blocks(sm->pool);
    int64_t n_free = kvc_block_pool_num_free(sm->pool);
    int32_t *queue = kvc_malloc((size_t)kvc_max64(n_free, 1) * sizeof *queue);
    if (queue == NULL) return kvc_fail(KVC_ENOMEM, "invariant check: cannot allocate %lld ids", (long long)n_free);
    int64_t n = 0;
    kvc_block_pool_free_ids(sm->pool, queue, n_free, &n);
    kvc_status st = KVC_OK;
    for (int64_t i = 0; i < n && st == KVC_OK; i++) {
        int32_t id = queue[i];
        if (id <= 0 || id >= num_blocks)
            st = BROKEN("%s: INV-P1/P5 free queue holds id %d (range 1..%lld)", sm->group.key, id, (long long)num_blocks - 1);
        else if (seen[id]++)
            st = BROKEN("%s: INV-P2 block %d is twice in the free queue", sm->group.key, id);
        else if (!kvc_block_pool_is_free(sm->pool, id))
            st = BROKEN("%s: INV-P2 block %d is queued but not marked free", sm->group.key, id);
    }
    kvc_free(queue);
    for (int64_t id = 1; id < num_blocks && st == KVC_OK; id++)
        if (!seen[id] && kvc_block_pool_is_free(sm->pool, (int32_t)id))
            st = BROKEN("%s: INV-P2 block %lld is marked free but not queued", sm->group.key, (long long)id);
    return st;
}

/* Per-type table shape: INV-F1 (no nulls), INV-SW-1 (nulls a prefix: by
 * construction), INV-MB-1 (Mamba: 1 or 1 + next_n blocks, no nulls). */
static kvc_status check_table_shape(const kvc_single_manager *sm, const kvc_req_blocks *t, int64_t rid) {
    int64_t len = kvc_req_blocks_len(t);
    if (len > sm->max_table)
        return BROKEN("%s: request %lld has %lld table entries, more than %lld", sm->group.key, (long long)rid,
                      (long long)len, (long long)sm->max_table);
    if (sm->group.attn_type != KVC_ATTN_SLIDING_WINDOW && t->n_null != 0)
        return BROKEN("%s: INV-F1/MB-1 request %lld has %lld null entries", sm->group.key, (long long)rid,
                      (long long)t->n_null);
    if (sm->group.attn_type == KVC_ATTN_MAMBA && len != 0 && len != 1 && len != 1 + sm->group.next_n)
        return BROKEN("%s: INV-MB-1 request %lld holds %lld state blocks (1 or %lld expected)", sm->group.key,
                      (long long)rid, (long long)len, (long long)(1 + sm->group.next_n));
    return KVC_OK;
}

/* INV-P3 (conservation), INV-P4 (exclusivity), INV-P5 (range) for one manager. */
static kvc_status check_tables(const kvc_manager *m, int32_t g, uint8_t *seen) {
    const kvc_single_manager *sm = &m->managers[g];
    int64_t num_blocks = kvc_block_pool_num_blocks(sm->pool);
    int64_t held = 0, entries = 0;
    for (int64_t slot = 0; slot < m->requests.capacity; slot++) {
        if (kvc_request_table_find(&m->requests, m->requests.ids[slot]) != slot) continue;
        const kvc_req_blocks *t = &kvc_manager_request_tables(m, (int32_t)slot)[g];
        int64_t rid = m->requests.ids[slot];
        if (!t->present) continue;
        entries++;
        kvc_status st = check_table_shape(sm, t, rid);
        if (st != KVC_OK) return st;
        int64_t n = 0;
        for (int32_t id = t->head; id >= 0; id = sm->next[id], n++) {
            if (id == 0 || id >= num_blocks)
                return BROKEN("%s: INV-P5 request %lld holds block %d", sm->group.key, (long long)rid, id);
            if (seen[id]++)
                return BROKEN("%s: INV-P4 block %d is held twice or held while free", sm->group.key, id);
            if (n > t->n_real) break;
        }
        if (n != t->n_real)
            return BROKEN("%s: request %lld links %lld blocks, counts %lld", sm->group.key, (long long)rid,
                          (long long)n, (long long)t->n_real);
        held += n;
    }
    if (entries != sm->n_entries)
        return BROKEN("%s: %lld requests have entries, counted %lld", sm->group.key, (long long)entries,
                      (long long)sm->n_entries);
    if (kvc_block_pool_num_free(sm->pool) + held + 1 != num_blocks)
        return BROKEN("%s: INV-P3 %lld free + %lld held + null != %lld blocks", sm->group.key,
                      (long long)kvc_block_pool_num_free(sm->pool), (long long)held, (long long)num_blocks);
    return KVC_OK;
}

kvc_status kvc_manager_check_invariants(const kvc_manager *m) {
    if (m == NULL) return kvc_fail(KVC_EINVAL, "kvc_manager_check_invariants: manager must not be NULL");
    for (int32_t g = 0; g < m->n_managers; g++) {
        int64_t num_blocks = kvc_block_pool_num_blocks(m->managers[g].pool);
        uint8_t *seen = kvc_calloc((size_t)num_blocks, 1);
        if (seen == NULL) return kvc_fail(KVC_ENOMEM, "invariant check: cannot allocate %lld flags", (long long)num_blocks);
        kvc_status st = check_pool(&m->managers[g], seen);
        if (st == KVC_OK) st = check_tables(m, g, seen);
        kvc_free(seen);
        if (st != KVC_OK) return st;
    }
    return KVC_OK;
}
