/* The request-level manager (spec §5): one single-type manager per group key,
 * two-phase allocate_slots, free, queries. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "cache/manager_internal.h"

kvc_manager_params kvc_manager_default_params(void) {
    return (kvc_manager_params){.max_model_len = 0, .max_requests = 0, .engine_next_n = -1};
}

/* Every request with a token holds a block of each of its managers, so the
 * largest pool bounds the live requests in practice (capped at 65536). */
static int64_t default_max_requests(const kvc_block_plan *plan) {
    int64_t most = 256;
    for (int32_t g = 0; g < plan->n_groups; g++) most = kvc_max64(most, plan->groups[g].block_num - 1);
    return kvc_min64(most, 65536);
}

static kvc_status check_create_args(const kvc_model_cache_info *ci, const kvc_block_plan *plan,
                                    const kvc_manager_params *p, kvc_manager **out) {
    if (out == NULL) return kvc_fail(KVC_EINVAL, "kvc_manager_create: out must not be NULL");
    *out = NULL;
    if (ci == NULL || plan == NULL || p == NULL)
        return kvc_fail(KVC_EINVAL, "kvc_manager_create: cache info, plan and params must not be NULL");
    if (p->max_model_len <= 0 || p->max_model_len > INT32_MAX)
        return kvc_fail(KVC_EINVAL, "max_model_len %lld must be in [1, 2^31)", (long long)p->max_model_len);
    if (p->max_requests < 0)
        return kvc_fail(KVC_EINVAL, "max_requests %lld must not be negative (0 = default)", (long long)p->max_requests);
    return KVC_OK;
}

/* Layer infos in ascending layer_idx (stable), for the transfer export. */
static void sort_layers(kvc_manager *m) {
    for (int32_t i = 0; i < m->ci->n_layer_infos; i++) {
        int32_t j = i;
        while (j > 0 && m->ci->layer_infos[m->layer_order[j - 1]].layer_idx > m->ci->layer_infos[i].layer_idx) {
            m->layer_order[j] = m->layer_order[j - 1];
            j--;
        }
        m->layer_order[j] = i;
    }
}

kvc_status kvc_manager_create(const kvc_model_cache_info *ci, const kvc_block_plan *plan,
                              const kvc_manager_params *p, kvc_manager **out) {
    kvc_status st = check_create_args(ci, plan, p, out);
    if (st != KVC_OK) return st;
    st = kvc_validate_cache_info(ci, p->engine_next_n);
    kvc_cache_groups groups;
    if (st == KVC_OK) st = kvc_cache_groups_build(ci, &groups);
    if (st != KVC_OK) return st;
    kvc_manager *m = calloc(1, sizeof *m);
    if (m == NULL) return kvc_fail(KVC_ENOMEM, "cannot allocate the manager");
    m->ci = ci;
    m->max_model_len = p->max_model_len;
    for (int32_t g = 0; g < groups.n_groups && st == KVC_OK; g++) {
        int64_t block_num = 0;
        st = kvc_block_plan_block_num(plan, groups.groups[g].key, &block_num);
        if (st == KVC_OK) st = kvc_single_manager_init(&m->managers[g], &groups.groups[g], block_num, p->max_model_len);
        if (st == KVC_OK) m->n_managers = g + 1;
    }
    int64_t max_requests = p->max_requests > 0 ? p->max_requests : default_max_requests(plan);
    if (st == KVC_OK) st = kvc_request_table_init(&m->requests, max_requests);
    if (st == KVC_OK) {
        m->tables = calloc((size_t)max_requests * (size_t)kvc_max64(m->n_managers, 1), sizeof *m->tables);
        m->layer_order = malloc((size_t)kvc_max64(ci->n_layer_infos, 1) * sizeof *m->layer_order);
        if (m->tables == NULL || m->layer_order == NULL)
            st = kvc_fail(KVC_ENOMEM, "cannot allocate tables for %lld requests", (long long)max_requests);
    }
    if (st != KVC_OK) {
        kvc_manager_destroy(m);
        return st;
    }
    sort_layers(m);
    *out = m;
    return KVC_OK;
}

void kvc_manager_destroy(kvc_manager *m) {
    if (m == NULL) return;
    for (int32_t g = 0; g < m->n_managers; g++) kvc_single_manager_release(&m->managers[g]);
    kvc_request_table_release(&m->requests);
    free(m->tables);
    free(m->layer_order);
    free(m);
}

kvc_req_blocks *kvc_manager_request_tables(const kvc_manager *m, int32_t slot) {
    return &m->tables[(int64_t)slot * m->n_managers];
}

static kvc_status check_counts(int64_t rid, int64_t computed, int64_t num_new, int64_t lookahead, int64_t reserved) {
    if (rid < 0)
        return kvc_fail(KVC_EINVAL, "request id %lld is negative (padding requests are never allocated)",
                        (long long)rid);
    if (computed < 0 || num_new < 0 || lookahead < 0 || reserved < 0)
        return kvc_fail(KVC_EINVAL, "request %lld: token counts must not be negative (computed %lld, new %lld, "
                        "lookahead %lld, reserved %lld)", (long long)rid, (long long)computed, (long long)num_new,
                        (long long)lookahead, (long long)reserved);
    if (computed > INT64_MAX - num_new || computed + num_new > INT64_MAX - lookahead)
        return kvc_fail(KVC_EINVAL, "request %lld: computed + new + lookahead tokens overflow", (long long)rid);
    return KVC_OK;
}

kvc_status kvc_manager_allocate_slots(kvc_manager *m, const kvc_slot_request *req) {
    if (m == NULL || req == NULL)
        return kvc_fail(KVC_EINVAL, "kvc_manager_allocate_slots: manager and request must not be NULL");
    int64_t rid = req->request_id, computed = req->computed_tokens, num_new = req->num_new_tokens;
    int64_t lookahead = req->lookahead_tokens, reserved = req->reserved_tokens;
    kvc_status st = check_counts(rid, computed, num_new, lookahead, reserved);
    if (st != KVC_OK) return st;
    uint64_t key_mask = ~req->skip_keys & (((uint64_t)1 << m->n_managers) - 1); /* n_managers <= 16 */
    int64_t wanted = computed + num_new + lookahead;
    int64_t need_slot = kvc_min64(wanted, m->max_model_len);
    int64_t total_computed = kvc_min64(computed, m->max_model_len);
    int32_t slot = kvc_request_table_find(&m->requests, rid);
    kvc_req_blocks *tables = slot >= 0 ? kvc_manager_request_tables(m, slot) : NULL;
    const kvc_req_blocks absent = {.head = -1, .tail = -1};
    int64_t need[KVC_MAX_MANAGERS]; /* written for every selected manager before it is read */

    /* Phase 1: release what left a window, then check every manager. */
    for (int32_t g = 0; g < m->n_managers; g++) {
        if (!(key_mask >> g & 1u)) continue;
        kvc_single_manager *sm = &m->managers[g];
        if (tables != NULL) kvc_single_manager_remove_skipped(sm, &tables[g], total_computed);
        bool ok = false;
        sm->type->pre_allocate(sm, tables != NULL ? &tables[g] : &absent, need_slot, reserved, &need[g], &ok);
        if (!ok) {
            kvc_log(KVC_LOG_DEBUG, "request %lld not admitted by %s: needs %lld blocks, %lld free", (long long)rid,
                    sm->group.key, (long long)need[g], (long long)kvc_block_pool_num_free(sm->pool));
            return KVC_NO_SPACE;
        }
    }
    if (key_mask == 0) return wanted > m->max_model_len ? KVC_CLAMPED : KVC_OK; /* nothing selected */
    if (tables == NULL) {
        slot = kvc_request_table_insert(&m->requests, rid);
        if (slot < 0) {
            kvc_log(KVC_LOG_WARN, "request %lld not admitted: %lld requests are live already", (long long)rid,
                    (long long)m->requests.capacity);
            return KVC_NO_SPACE;
        }
        tables = kvc_manager_request_tables(m, slot);
        for (int32_t g = 0; g < m->n_managers; g++) tables[g] = (kvc_req_blocks){.head = -1, .tail = -1};
    }
    /* Phase 2: commit (cannot fail: each pool was checked above). */
    for (int32_t g = 0; g < m->n_managers; g++)
        if (key_mask >> g & 1u)
            kvc_single_manager_allocate_new(&m->managers[g], &tables[g], need[g], need_slot, ++m->last_generation);
    return wanted > m->max_model_len ? KVC_CLAMPED : KVC_OK;
}

kvc_status kvc_manager_free(kvc_manager *m, int64_t rid) {
    if (m == NULL) return kvc_fail(KVC_EINVAL, "kvc_manager_free: manager must not be NULL");
    int32_t slot = kvc_request_table_find(&m->requests, rid);
    if (slot < 0) return KVC_OK;
    kvc_req_blocks *tables = kvc_manager_request_tables(m, slot);
    for (int32_t g = 0; g < m->n_managers; g++) kvc_single_manager_free(&m->managers[g], &tables[g]);
    kvc_request_table_remove(&m->requests, rid);
    return KVC_OK;
}
