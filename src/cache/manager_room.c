/* How the request-level manager's memory follows use: request slots and
 * their per-key tables grow on demand (doubling), the query scratch with
 * the longest prompt, and kvc_manager_reserve makes room up front for a
 * caller that must not allocate later (the engine). */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_internal.h"

kvc_status kvci_manager_grow_tables(kvc_manager *m) {
    int64_t n = m->requests.n_slots, per = kvci_max64(m->n_managers, 1);
    if (n <= m->n_table_slots) return KVC_OK;
    if (!KVCI_RESIZE(m->tables, n * per))
        return kvci_fail(KVC_ENOMEM, "cannot allocate the block tables of %lld request slots", (long long)n);
    memset(m->tables + m->n_table_slots * per, 0, (size_t)((n - m->n_table_slots) * per) * sizeof *m->tables);
    m->n_table_slots = n;
    return KVC_OK;
}

/* Room for n slots in the request table and the per-slot tables. */
static kvc_status reserve_slots(kvc_manager *m, int64_t n) {
    kvc_status st = kvci_request_table_reserve(&m->requests, n);
    return st == KVC_OK ? kvci_manager_grow_tables(m) : st;
}

kvc_status kvci_manager_insert_request(kvc_manager *m, int64_t rid, int32_t *slot) {
    kvc_status st = reserve_slots(m, m->requests.n_live + 1);
    if (st == KVC_OK) *slot = kvci_request_table_insert(&m->requests, rid);
    return st;
}

kvc_status kvci_manager_reserve_query(kvc_manager *m, int64_t len) {
    for (int32_t g = 0; g < m->n_managers; g++) {
        kvc_status st = kvci_single_manager_reserve_query(&m->managers[g], len);
        if (st != KVC_OK) return st;
    }
    return KVC_OK;
}

kvc_status kvc_manager_reserve(kvc_manager *m, int64_t n_requests, int64_t n_positions) {
    if (m == NULL) return kvci_fail(KVC_EINVAL, "kvc_manager_reserve: manager must not be NULL");
    if (n_requests < 0 || n_requests > m->requests.capacity)
        return kvci_fail(KVC_EINVAL, "kvc_manager_reserve: n_requests %lld must be in [0, max_requests %lld]",
                         (long long)n_requests, (long long)m->requests.capacity);
    if (n_positions < 0 || n_positions > m->max_model_len)
        return kvci_fail(KVC_EINVAL, "kvc_manager_reserve: n_positions %lld must be in [0, max_model_len %lld]",
                         (long long)n_positions, (long long)m->max_model_len);
    kvc_status st = reserve_slots(m, n_requests);
    if (st == KVC_OK) st = kvci_manager_reserve_query(m, n_positions);
    if (st == KVC_OK && m->prefix_caching) st = kvci_hit_reserve(m, n_positions);
    for (int32_t g = 0; g < m->n_managers && st == KVC_OK; g++) {
        kvc_single_manager *sm = &m->managers[g];
        if (sm->caching) st = kvci_prefix_index_reserve(&sm->index, sm->index.num_blocks);
        /* Slots are handed out lowest first, so n_requests live requests hold slots below n_requests. */
        int64_t len = kvci_type_max_table_len(sm->type, &sm->group, n_positions);
        for (int64_t slot = 0; slot < n_requests && st == KVC_OK; slot++)
            st = kvci_req_blocks_reserve(sm, &kvci_manager_request_tables(m, (int32_t)slot)[g], len);
    }
    return st;
}
