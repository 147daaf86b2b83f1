/* The two scheduling policies: which requests run in the next step and how
 * many tokens each feeds (docs/scheduler.md). Both fill e->rows through
 * kvci_engine_row_add, allocating every row's blocks before the step runs. */
#include "engine/engine_internal.h"

static kvc_status clamped_decode(const kvc_engine_req *r, kvc_status st) {
    return st == KVC_CLAMPED ? kvci_fail(KVC_EINTERNAL,
                                         "engine: decode of request %lld at position %lld was clamped "
                                         "to max_model_len",
                                         (long long)r->id, (long long)r->n_cached)
                             : st;
}

/* One decode row per running request that has exactly one token left to
 * feed, best first. When its block cannot be allocated, the lowest-priority
 * running request is preempted and the allocation retried; every request
 * already given a row this way is served before the victim. */
static kvc_status schedule_decodes(kvc_engine *e, int64_t *n_preempted) {
    int64_t i = 0;
    while (i < e->n_running) {
        int32_t slot = e->running[i];
        kvc_engine_req *r = &e->reqs[slot];
        if (r->n_tokens - r->n_cached != 1) {
            i++;
            continue;
        }
        int64_t one = 1;
        kvc_status st = kvci_engine_alloc(e, r, &one, false, false);
        if (st == KVC_OK) {
            e->decode_cost += kvci_engine_row_cost(e, r->n_cached, 1);
            kvci_engine_row_add(e, slot, 1, false);
            i++;
            continue;
        }
        if (st != KVC_NO_SPACE) return clamped_decode(r, st);
        int32_t victim = e->running[e->n_running - 1];
        st = kvci_engine_preempt(e, victim);
        if (st != KVC_OK) return st;
        (*n_preempted)++;
    }
    return KVC_OK;
}

/* Tokens of r's next chunk: as many of its remaining tokens as the token
 * budget left, long_prefill_token_threshold and the stall-free limit allow
 * (0: none this step). The limit gives the step's chunks together at most
 * (step_cost_ratio - 1) times the cost of its decode rows, except that the
 * first chunk may always take min_chunk_tokens. With state layers cached, the chunk then ends at the last
 * snapshot position it passes (kvci_engine_align_chunk). */
static int64_t chunk_size(const kvc_engine *e, const kvc_engine_req *r) {
    int64_t n = kvci_min64(r->n_tokens - r->n_cached, e->max_tokens - e->n_row_tokens);
    if (e->p.long_prefill_token_threshold > 0) n = kvci_min64(n, e->p.long_prefill_token_threshold);
    if (e->p.step_cost_ratio == 0.0 || e->decode_cost == 0.0) return kvci_engine_align_chunk(e, r, n);
    const double allowance = (e->p.step_cost_ratio - 1.0) * e->decode_cost - e->chunk_cost;
    const int64_t fit = kvci_engine_tokens_for_cost(e, r->n_cached, n, allowance);
    return kvci_engine_align_chunk(e, r,
                                   e->n_chunks == 0 ? kvci_max64(fit, kvci_min64(n, e->p.min_chunk_tokens)) : fit);
}

static void chunk_add(kvc_engine *e, int32_t slot, int64_t n, bool admitted) {
    e->chunk_cost += kvci_engine_row_cost(e, e->reqs[slot].n_cached, n);
    e->n_chunks++;
    kvci_engine_row_add(e, slot, n, admitted);
}

/* Allocates the next chunk of a running request, *n tokens halved while the
 * pools refuse (a smaller chunk needs fewer blocks); KVC_NO_SPACE when one
 * token does not fit. */
static kvc_status alloc_chunk(kvc_engine *e, kvc_engine_req *r, int64_t *n) {
    for (;;) {
        kvc_status st = kvci_engine_alloc(e, r, n, false, false);
        if (st != KVC_NO_SPACE || *n == 1) return st;
        *n = kvci_cdiv(*n, 2);
    }
}

/* The next chunk of every running request still being prefilled, best
 * first, as large as the pools allow. A chunk that finds no blocks waits (its request keeps what it
 * holds) and ends this pass, unless nothing at all runs in this step: then
 * the lowest-priority running request is preempted and the chunk retried. */
static kvc_status schedule_partials(kvc_engine *e, int64_t *n_preempted) {
    int64_t i = 0;
    while (i < e->n_running && e->n_row_tokens < e->max_tokens && e->n_rows < e->p.max_num_seqs) {
        int32_t slot = e->running[i];
        kvc_engine_req *r = &e->reqs[slot];
        if (r->row_build == e->build) {
            i++;
            continue;
        }
        int64_t n = chunk_size(e, r);
        if (n == 0) return KVC_OK; /* the step's chunk allowance is spent */
        kvc_status st = alloc_chunk(e, r, &n);
        if (st == KVC_OK) {
            chunk_add(e, slot, n, false);
            i++;
            continue;
        }
        if (st != KVC_NO_SPACE) return st;
        if (e->n_rows > 0) return KVC_OK;
        st = kvci_engine_preempt(e, e->running[e->n_running - 1]);
        if (st != KVC_OK) return st;
        (*n_preempted)++;
    }
    return KVC_OK;
}

/* Admits waiting requests best first while rows, tokens and blocks last;
 * the first refusal ends admission (nobody overtakes the head). `whole`:
 * only a prompt that fits the budget left in one piece is admitted. */
static kvc_status admit_waiting(kvc_engine *e, bool whole) {
    while (e->n_waiting > 0 && e->n_running < e->p.max_num_seqs && e->n_row_tokens < e->max_tokens) {
        int32_t slot = e->waiting[0];
        kvc_engine_req *r = &e->reqs[slot];
        kvc_status st = kvci_engine_prefix_hit(e, r); /* the first chunk starts after the cached prefix */
        if (st != KVC_OK) return st;
        int64_t n = whole ? r->n_tokens : chunk_size(e, r);
        if (n == 0 || (whole && e->n_row_tokens + n > e->max_tokens)) {
            r->n_cached = 0; /* waiting requests hold nothing */
            break;
        }
        st = kvci_engine_alloc(e, r, &n, true, !whole);
        if (st == KVC_NO_SPACE) break;
        if (st != KVC_OK) return st;
        kvci_engine_wait_remove(e, slot);
        r->state = KVC_REQ_RUNNING;
        kvci_engine_run_insert(e, slot);
        chunk_add(e, slot, n, true);
    }
    return KVC_OK;
}

kvc_status kvci_engine_schedule_budget(kvc_engine *e, int64_t *n_preempted) {
    kvc_status st = schedule_decodes(e, n_preempted);
    if (st == KVC_OK) st = schedule_partials(e, n_preempted);
    /* a step that had to preempt leaves the waiting queue alone: the blocks
     * it freed go to the requests that already run */
    if (st == KVC_OK && *n_preempted == 0) st = admit_waiting(e, false);
    return st;
}

kvc_status kvci_engine_schedule_prefill_alone(kvc_engine *e, int64_t *n_preempted) {
    kvc_status st = admit_waiting(e, true);
    if (st == KVC_OK && e->n_rows == 0) st = schedule_decodes(e, n_preempted);
    return st;
}
