/* The request-level manager's prefix caching: the hybrid hit (a fixed point
 * over the keys' hit rules), indexing computed blocks, statistics and
 * clearing (docs/prefix-caching.md). */
#include <stdio.h>

#include "base/internal.h"
#include "cache/manager_internal.h"

int64_t kvci_manager_hit_length(kvc_manager *m, const kvc_prefix_query *q, int64_t len, uint64_t key_mask) {
    for (int32_t g = 0; g < m->n_managers; g++) m->managers[g].n_chain = 0;
    /* Position-table keys propose, state keys accept or lower, until a
     * round lowers nothing; each rule returns the largest length it accepts
     * up to its input, so this ends at the largest length all keys accept,
     * and in the last round every key left its hit for that length. */
    for (int64_t before = -1; len > 0 && len != before;) {
        before = len;
        for (int pass = 0; pass < 2; pass++) {
            for (int32_t g = 0; g < m->n_managers && len > 0; g++) {
                kvc_single_manager *sm = &m->managers[g];
                if (!(key_mask >> g & 1u) || sm->type->state_hits != (pass == 1)) continue;
                len = sm->type->hit_length(sm, q, len);
            }
        }
    }
    return len;
}

kvc_status kvci_manager_check_salt(const void *salt, int64_t len, int64_t rid, const char *what) {
    if (len >= 0 && (len == 0) == (salt == NULL)) return KVC_OK;
    char who[48] = "kvc_manager_find_prefix";
    if (rid >= 0) snprintf(who, sizeof who, "request %lld", (long long)rid);
    return kvci_fail(KVC_EINVAL,
                     "%s: %s: %s with length %lld (a salt is a pointer and a length > 0, or NULL and 0 "
                     "for none)",
                     who, what, salt == NULL ? "NULL" : "a pointer", (long long)len);
}

kvc_status kvc_manager_find_prefix(kvc_manager *m, const kvc_prompt *prompt, kvc_prefix_hit *out) {
    if (m == NULL || prompt == NULL || out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_manager_find_prefix: manager, prompt and out must not be NULL");
    if (prompt->n_tokens < 0 || (prompt->n_tokens > 0 && prompt->tokens == NULL))
        return kvci_fail(KVC_EINVAL, "kvc_manager_find_prefix: a prompt of %lld tokens needs its token ids",
                         (long long)prompt->n_tokens);
    kvc_status st = kvci_manager_check_salt(prompt->cache_salt, prompt->cache_salt_len, -1, "cache_salt");
    if (st != KVC_OK) return st;
    *out = (kvc_prefix_hit){0};
    if (!m->prefix_caching || prompt->n_tokens < 2) return KVC_OK;
    kvc_prefix_query q = {.tokens = prompt->tokens,
                          .n_tokens = prompt->n_tokens,
                          .seed = kvci_prefix_seed(m->prefix_salt, prompt->cache_salt, prompt->cache_salt_len)};
    /* At least the last prompt token is computed (its logits are needed). */
    int64_t cap = kvci_min64(prompt->n_tokens - 1, m->max_model_len);
    st = kvci_manager_reserve_query(m, cap);
    if (st != KVC_OK) return st;
    int64_t len = kvci_manager_hit_length(m, &q, cap, ((uint64_t)1 << m->n_managers) - 1);
    if (len == 0) return KVC_OK;
    st = kvci_hit_hand_out(m, len, q.seed, &out->handle);
    if (st != KVC_OK) return st;
    out->n_tokens = len;
    for (int32_t g = 0; g < m->n_managers; g++) {
        const kvc_single_manager *sm = &m->managers[g];
        out->n_entries[g] = sm->n_hit;
        for (int64_t i = 0; i < sm->n_hit; i++) out->n_cached[g] += sm->hit_ids[i] != KVC_NULL_BLOCK;
    }
    return KVC_OK;
}

kvc_status kvc_manager_cache_computed(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n_computed) {
    if (m == NULL) return kvci_fail(KVC_EINVAL, "kvc_manager_cache_computed: manager must not be NULL");
    if (n_computed < 0 || (n_computed > 0 && tokens == NULL))
        return kvci_fail(KVC_EINVAL, "kvc_manager_cache_computed: request %lld: %lld computed tokens need their ids",
                         (long long)rid, (long long)n_computed);
    int32_t slot = kvci_request_table_find(&m->requests, rid);
    if (!m->prefix_caching || slot < 0) return KVC_OK;
    kvc_req_blocks *tables = kvci_manager_request_tables(m, slot);
    for (int32_t g = 0; g < m->n_managers; g++) { /* room first: nothing is indexed unless every key has it */
        kvc_status st =
            tables[g].present ? kvci_single_manager_reserve_index(&m->managers[g], &tables[g], n_computed) : KVC_OK;
        if (st != KVC_OK) return st;
    }
    for (int32_t g = 0; g < m->n_managers; g++) {
        kvc_single_manager *sm = &m->managers[g];
        if (tables[g].present) kvci_type_cache_computed(sm, &tables[g], tokens, n_computed);
    }
    return KVC_OK;
}

/* The checks of a per-key query: m and out given, key_index a key of m. */
static kvc_status check_key_query(const kvc_manager *m, const void *out, int32_t key_index, const char *fn) {
    if (m == NULL || out == NULL) return kvci_fail(KVC_EINVAL, "%s: manager and out must not be NULL", fn);
    if (key_index < 0 || key_index >= m->n_managers)
        return kvci_fail(KVC_ERANGE, "%s: key index %d is out of range [0, %d)", fn, key_index, m->n_managers);
    return KVC_OK;
}

kvc_status kvc_manager_state_source(const kvc_manager *m, int64_t rid, int32_t key_index, int32_t *out) {
    kvc_status st = check_key_query(m, out, key_index, "kvc_manager_state_source");
    if (st != KVC_OK) return st;
    int32_t slot = kvci_request_table_find(&m->requests, rid);
    *out = slot >= 0 ? kvci_manager_request_tables(m, slot)[key_index].state_source : KVC_NULL_BLOCK;
    return KVC_OK;
}

kvc_status kvc_manager_prefix_stats(const kvc_manager *m, kvc_prefix_stats *out) {
    if (m == NULL || out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_manager_prefix_stats: manager and out must not be NULL");
    *out = m->stats;
    for (int32_t g = 0; g < m->n_managers; g++) {
        out->evictions += m->managers[g].evictions;
        out->cached_blocks += m->managers[g].index.n_indexed;
    }
    return KVC_OK;
}

int64_t kvc_manager_num_cached_free(const kvc_manager *m, int32_t key_index) {
    if (m == NULL || key_index < 0 || key_index >= m->n_managers) return -1;
    return kvci_block_pool_num_cached_free(m->managers[key_index].pool, key_index);
}

kvc_status kvc_manager_clear_prefix_cache(kvc_manager *m) {
    if (m == NULL) return kvci_fail(KVC_EINVAL, "kvc_manager_clear_prefix_cache: manager must not be NULL");
    for (int32_t g = 0; g < m->n_managers; g++) kvci_single_manager_clear_index(&m->managers[g]);
    kvci_kv_events_record(&m->events, KVC_KV_EVENT_CLEARED, -1, KVC_NULL_BLOCK, 0, (kvc_hash128){0}, (kvc_hash128){0});
    return KVC_OK;
}

kvc_status kvc_manager_block_info(const kvc_manager *m, int32_t key_index, int32_t id, kvc_block_info *out) {
    kvc_status st = check_key_query(m, out, key_index, "kvc_manager_block_info");
    if (st != KVC_OK) return st;
    const kvc_single_manager *sm = &m->managers[key_index];
    if (id < 0 || id >= kvc_block_pool_num_blocks(sm->pool))
        return kvci_fail(KVC_ERANGE, "kvc_manager_block_info: block %d is out of range [0, %lld) of key %s", id,
                         (long long)kvc_block_pool_num_blocks(sm->pool), sm->group.key);
    *out = (kvc_block_info){.ref_count = kvc_block_pool_ref_count(sm->pool, id),
                            .free = kvc_block_pool_is_free(sm->pool, id)};
    if (sm->caching && kvci_prefix_index_has(&sm->index, id)) {
        kvc_hash128 h = sm->index.keys[sm->index.entry_of[id] - 1].hash;
        out->cached = true;
        out->hash_hi = h.high64;
        out->hash_lo = h.low64;
    }
    return KVC_OK;
}
