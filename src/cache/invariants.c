/* kvc_manager_check_invariants: the pool, table and index invariants after any mutating call. */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_internal.h"

#define BROKEN(...) kvci_fail(KVC_EINTERNAL, __VA_ARGS__)

/* INV-P1, INV-P2: the free queue holds distinct real ids, exactly the blocks
 * nobody holds. */
static kvc_status check_pool(const kvc_single_manager *sm, uint8_t *seen /* [num_blocks] */) {
    int64_t num_blocks = kvc_block_pool_num_blocks(sm->pool);
    int64_t n_free = kvc_block_pool_num_free(sm->pool);
    int32_t *queue = kvci_malloc((size_t)kvci_max64(n_free, 1) * sizeof *queue);
    if (queue == NULL) return kvci_fail(KVC_ENOMEM, "invariant check: cannot allocate %lld ids", (long long)n_free);
    int64_t n = 0;
    kvc_block_pool_free_ids(sm->pool, queue, n_free, &n);
    kvc_status st = KVC_OK;
    for (int64_t i = 0; i < n && st == KVC_OK; i++) {
        int32_t id = queue[i];
        if (id <= 0 || id >= num_blocks)
            st = BROKEN("%s: INV-P1/P5 free queue holds id %d (range 1..%lld)", sm->group.key, id,
                        (long long)num_blocks - 1);
        else if (seen[id]++)
            st = BROKEN("%s: INV-P2 block %d is twice in the free queue", sm->group.key, id);
        else if (!kvc_block_pool_is_free(sm->pool, id))
            st = BROKEN("%s: INV-P2 block %d is queued but has holders", sm->group.key, id);
    }
    kvci_free(queue);
    for (int64_t id = 1; id < num_blocks && st == KVC_OK; id++)
        if (!seen[id] && kvc_block_pool_is_free(sm->pool, (int32_t)id))
            st = BROKEN("%s: INV-P2 block %lld has no holder but is not queued", sm->group.key, (long long)id);
    return st;
}

/* Per-type table shape: INV-F1 (no nulls), INV-SW-1 (nulls a prefix),
 * INV-MB-1 (Mamba: 1 or 1 + next_n blocks, no nulls). */
static kvc_status check_table_shape(const kvc_single_manager *sm, const kvc_req_blocks *t, int64_t rid) {
    int64_t len = t->len;
    if (len > t->cap || t->cap > sm->max_table || t->n_null > len)
        return BROKEN("%s: request %lld has %lld table entries (%lld null) in room for %lld, at most %lld",
                      sm->group.key, (long long)rid, (long long)len, (long long)t->n_null, (long long)t->cap,
                      (long long)sm->max_table);
    if (!sm->type->null_prefix && t->n_null != 0)
        return BROKEN("%s: INV-F1/MB-1 request %lld has %lld null entries", sm->group.key, (long long)rid,
                      (long long)t->n_null);
    if (sm->type->check_table != NULL) {
        kvc_status st = sm->type->check_table(sm, t, rid);
        if (st != KVC_OK) return st;
    }
    for (int64_t i = 0; i < len; i++)
        if ((i < t->n_null) != (t->ids[i] == KVC_NULL_BLOCK))
            return BROKEN("%s: INV-SW-1 request %lld: entry %lld is %d with %lld leading nulls", sm->group.key,
                          (long long)rid, (long long)i, t->ids[i], (long long)t->n_null);
    return KVC_OK;
}

/* What the tables of a pool's keys hold, per block of the pool. */
typedef struct pool_holds {
    int32_t *holders; /* [num_blocks] tables and copy sources holding the block */
    int8_t *key;      /* [num_blocks] 1 + the key holding it (a block belongs to one key), 0: none */
} pool_holds;

/* One holder of block id seen in a table (or as a copy source) of key g. */
static kvc_status hold(const kvc_manager *m, int32_t g, pool_holds *ph, int32_t id, int64_t rid) {
    const kvc_single_manager *sm = &m->managers[g];
    if (id <= 0 || id >= kvc_block_pool_num_blocks(sm->pool))
        return BROKEN("%s: INV-P5 request %lld holds block %d", sm->group.key, (long long)rid, id);
    if (ph->key[id] != 0 && ph->key[id] != g + 1)
        return BROKEN("%s: INV-P6 request %lld holds block %d of the shared pool, which key %s holds too",
                      sm->group.key, (long long)rid, id, m->managers[ph->key[id] - 1].group.key);
    ph->key[id] = (int8_t)(g + 1);
    ph->holders[id]++;
    return KVC_OK;
}

/* The tables of key g: shapes, INV-P5 (range), INV-P6 (a block of a shared
 * pool belongs to one key), the entry count; counts their holders into ph. */
static kvc_status check_tables(const kvc_manager *m, int32_t g, pool_holds *ph) {
    const kvc_single_manager *sm = &m->managers[g];
    int64_t entries = 0;
    for (int64_t slot = 0; slot < m->requests.n_slots; slot++) {
        if (kvci_request_table_find(&m->requests, m->requests.ids[slot]) != slot) continue;
        const kvc_req_blocks *t = &kvci_manager_request_tables(m, (int32_t)slot)[g];
        int64_t rid = m->requests.ids[slot];
        if (!t->present) continue;
        entries++;
        kvc_status st = check_table_shape(sm, t, rid);
        for (int64_t i = t->n_null; i < t->len && st == KVC_OK; i++) st = hold(m, g, ph, t->ids[i], rid);
        if (st == KVC_OK && t->state_source != KVC_NULL_BLOCK) st = hold(m, g, ph, t->state_source, rid);
        if (st != KVC_OK) return st;
    }
    if (entries != sm->n_entries)
        return BROKEN("%s: %lld requests have entries, counted %lld", sm->group.key, (long long)entries,
                      (long long)sm->n_entries);
    return KVC_OK;
}

/* INV-P3/P4 with sharing: every block's reference count equals the tables
 * (and copy sources) of every key of the pool holding it. */
static kvc_status check_counts(const kvc_single_manager *sm, const int32_t *holders) {
    for (int32_t id = 1; id < kvc_block_pool_num_blocks(sm->pool); id++)
        if (holders[id] != kvc_block_pool_ref_count(sm->pool, id))
            return BROKEN("%s: INV-P3/P4 block %d is held by %d tables but counts %d holders", sm->group.key, id,
                          holders[id], kvc_block_pool_ref_count(sm->pool, id));
    return KVC_OK;
}

/* Every indexed block can be found under its hash and its hash is the hash
 * of its stored parent and tokens; the entries and the block map agree. */
static kvc_status check_index(const kvc_single_manager *sm) {
    if (!sm->caching) return KVC_OK;
    kvc_prefix_index *ix = (kvc_prefix_index *)&sm->index; /* the hash writes only its byte scratch */
    int64_t n = 0, cached_free = 0;
    for (int32_t id = 1; id < ix->num_blocks; id++) n += kvci_prefix_index_has(ix, id);
    for (int64_t e = 0; e < ix->n_indexed; e++) {
        int32_t id = ix->blocks[e];
        if (id <= 0 || id >= ix->num_blocks || ix->entry_of[id] != e + 1)
            return BROKEN("%s: index entry %lld names block %d, which is not mapped to it", sm->group.key, (long long)e,
                          id);
        cached_free += kvc_block_pool_is_free(sm->pool, id);
        const int32_t *tokens = kvci_prefix_index_tokens(ix, e);
        if (!kvci_hash128_equal(kvci_prefix_block_hash(ix, ix->keys[e].parent, tokens), ix->keys[e].hash))
            return BROKEN("%s: indexed block %d does not hash to its key", sm->group.key, id);
        if (kvci_prefix_index_find(ix, ix->keys[e].hash, ix->keys[e].parent, tokens) != id)
            return BROKEN("%s: indexed block %d is not found under its hash", sm->group.key, id);
    }
    int64_t tagged = 0; /* blocks the pool says this key's index holds */
    for (int32_t id = 1; id < ix->num_blocks; id++) {
        bool mine = kvci_block_pool_cached_by(sm->pool, id) == sm->key_index;
        if (mine != kvci_prefix_index_has(ix, id))
            return BROKEN("%s: block %d is %sindexed but the pool names %s", sm->group.key, id, mine ? "not " : "",
                          mine ? "this key" : "another key or none");
        tagged += mine;
    }
    if (n != ix->n_indexed || tagged != n)
        return BROKEN("%s: %lld blocks are indexed, counted %lld", sm->group.key, (long long)n,
                      (long long)ix->n_indexed);
    if (cached_free != kvci_block_pool_num_cached_free(sm->pool, sm->key_index))
        return BROKEN("%s: %lld free blocks are cached, the pool counts %lld", sm->group.key, (long long)cached_free,
                      (long long)kvci_block_pool_num_cached_free(sm->pool, sm->key_index));
    return KVC_OK;
}

kvc_status kvc_manager_check_invariants(const kvc_manager *m) {
    if (m == NULL) return kvci_fail(KVC_EINVAL, "kvc_manager_check_invariants: manager must not be NULL");
    for (int32_t g = 0; g < m->n_managers; g++) {
        const kvc_single_manager *sm = &m->managers[g];
        bool first = true; /* the pool is checked once, from its first key */
        for (int32_t h = 0; h < g && first; h++) first = m->managers[h].pool != sm->pool;
        if (!first) continue;
        int64_t num_blocks = kvc_block_pool_num_blocks(sm->pool);
        uint8_t *seen = kvci_calloc((size_t)num_blocks, 1);
        pool_holds ph = {kvci_calloc((size_t)num_blocks, sizeof *ph.holders), kvci_calloc((size_t)num_blocks, 1)};
        kvc_status st =
            seen != NULL && ph.holders != NULL && ph.key != NULL
                ? check_pool(sm, seen)
                : kvci_fail(KVC_ENOMEM, "invariant check: cannot allocate %lld counters", (long long)num_blocks);
        for (int32_t h = g; h < m->n_managers && st == KVC_OK; h++)
            if (m->managers[h].pool == sm->pool) st = check_tables(m, h, &ph);
        if (st == KVC_OK) st = check_counts(sm, ph.holders);
        for (int32_t h = g; h < m->n_managers && st == KVC_OK; h++)
            if (m->managers[h].pool == sm->pool) st = check_index(&m->managers[h]);
        kvci_free(seen);
        kvci_free(ph.holders);
        kvci_free(ph.key);
        if (st != KVC_OK) return st;
    }
    return KVC_OK;
}
