/* Where a running request's KV lives: blocks of the manager (managed mode)
 * or one legacy cache row (self-managed mode). Allocation for a chunk or a
 * decode token, eviction and the "does it fit alone" check done when a
 * request is added. Checks are the callers' business. */
#include "engine/engine_internal.h"

static kvc_status allocate(kvc_engine *e, const kvc_engine_req *r, int64_t computed, int64_t n_new, bool admit,
                           const kvc_prompt *prompt, int64_t external) {
    /* the hit the admission's query handed out (with its prompt only) */
    const kvc_prefix_hit hit = {.n_tokens = computed, .handle = r->hit_handle};
    /* a first chunk keeps the decode reserve of every live request free */
    return kvc_manager_allocate_slots(e->mgr,
                                      &(kvc_slot_request){.request_id = r->id,
                                                          .computed_tokens = computed,
                                                          .num_new_tokens = n_new,
                                                          .lookahead_tokens = e->p.next_n,
                                                          .reserved_tokens = admit ? e->p.reserved_decode_tokens : 0,
                                                          .prompt = prompt,
                                                          .hit = prompt != NULL && computed > 0 ? &hit : NULL,
                                                          .num_external_computed_tokens = external});
}

/* The request's tokens and salt as a prompt of the manager. */
static kvc_prompt request_prompt(const kvc_engine_req *r) {
    return (kvc_prompt){.tokens = r->tokens,
                        .n_tokens = r->n_tokens,
                        .cache_salt = r->cache_salt_len > 0 ? r->cache_salt : NULL,
                        .cache_salt_len = r->cache_salt_len};
}

kvc_status kvci_engine_prefix_hit(kvc_engine *e, kvc_engine_req *r) {
    r->n_cached = 0;
    r->hit_handle = 0;
    if (!e->p.prefix_caching || !e->managed) return KVC_OK;
    const kvc_prompt prompt = request_prompt(r);
    kvc_prefix_hit hit = {.n_tokens = 0};
    kvc_status st = kvc_manager_find_prefix(e->mgr, &prompt, &hit);
    if (st == KVC_OK) r->n_cached = hit.n_tokens, r->hit_handle = hit.handle;
    return st;
}

/* Admission after kvci_engine_prefix_hit (r->n_cached = the hit). The
 * first allocation backs every position of the chunk (a sliding-window key
 * too, from the window of the hit on), as a chunk that runs beside other
 * rows reads the window of each of its tokens from the cache; the chunk
 * halves while the pools refuse (`halve`). A refusal changes nothing, so the
 * hit stays valid for the next try. */
static kvc_status admit_blocks(kvc_engine *e, kvc_engine_req *r, int64_t *n_new, bool halve) {
    const kvc_prompt prompt = request_prompt(r);
    const int64_t hit = r->n_cached;
    /* DECODE role: the prompt tokens after the hit whose KV the loader writes (external computed tokens) */
    const int64_t external = kvci_max64(r->n_external - hit, 0);
    const kvc_prompt *first = e->p.prefix_caching || external > 0 ? &prompt : NULL;
    int64_t n = kvci_min64(*n_new, r->n_tokens - hit - external);
    kvc_status st = allocate(e, r, hit, n, true, first, external);
    while (st == KVC_NO_SPACE && halve && n > 1) {
        n = kvci_cdiv(n, 2);
        st = allocate(e, r, hit, n, true, first, external);
    }
    if (st == KVC_OK && external > 0) {
        st = r->load_external(r->load_user, e->mgr, r->id, hit, r->n_external);
        if (st != KVC_OK) kvc_manager_free(e->mgr, r->id), r->n_external = 0; /* computed here from now on */
    }
    if (st != KVC_OK) {
        if (st == KVC_CLAMPED) kvc_manager_free(e->mgr, r->id);
        r->n_cached = 0;
        return st;
    }
    e->stats.prefix_hit_tokens += hit;
    if (e->p.prefix_caching) e->stats.prefix_query_tokens += r->n_tokens;
    r->n_prefix_hit = hit;
    r->n_cached = hit + external; /* the chunk starts after the loaded tokens */
    r->n_external = 0;            /* loaded once: a preempted request recomputes them */
    *n_new = n;
    return KVC_OK;
}

kvc_status kvci_engine_alloc(kvc_engine *e, kvc_engine_req *r, int64_t *n_new, bool admit, bool halve) {
    if (!e->managed) {
        if (!admit) return KVC_OK; /* a legacy row holds max_model_len positions */
        if (e->legacy.n_free_rows == 0) return KVC_NO_SPACE;
        r->cache_row = e->legacy.free_rows[--e->legacy.n_free_rows];
        return KVC_OK;
    }
    kvc_status st = admit ? admit_blocks(e, r, n_new, halve) : allocate(e, r, r->n_cached, *n_new, false, NULL, 0);
    if (st != KVC_CLAMPED) return st;
    return kvci_fail(KVC_EINTERNAL, "engine: request %lld: positions %lld .. %lld were clamped to max_model_len %lld",
                     (long long)r->id, (long long)r->n_cached, (long long)(r->n_cached + *n_new - 1),
                     (long long)e->p.max_model_len);
}

kvc_status kvci_engine_evict(kvc_engine *e, kvc_engine_req *r) {
    if (!e->managed) {
        if (r->cache_row >= 0) e->legacy.free_rows[e->legacy.n_free_rows++] = r->cache_row;
        r->cache_row = -1;
        return KVC_OK;
    }
    return kvc_manager_free(e->mgr, r->id);
}

kvc_status kvci_engine_fit_check(const kvc_engine *e, int64_t id, int64_t positions) {
    if (!e->managed) return KVC_OK; /* legacy rows hold max_model_len positions */
    for (int32_t k = 0; k < e->n_keys; k++) {
        int64_t need = 0; /* blocks of k's pool: every key drawing from it */
        for (int32_t j = 0; j < e->n_keys; j++)
            if (j == k || (e->plan.groups[k].pool_id > 0 && e->plan.groups[j].pool_id == e->plan.groups[k].pool_id))
                need += kvc_manager_worst_blocks(e->mgr, j, positions);
        int64_t usable = kvc_manager_num_blocks(e->mgr, k) - 1;
        if (need > usable)
            return kvci_fail(KVC_ENOMEM,
                             "request %lld: its longest run (%lld positions) needs %lld blocks of the pool of manager "
                             "%s (block_size %lld) but it holds %lld usable blocks (raise the KV budget)",
                             (long long)id, (long long)positions, (long long)need, kvc_manager_key(e->mgr, k),
                             (long long)kvc_manager_block_size(e->mgr, k), (long long)usable);
    }
    return KVC_OK;
}
