/* Latency records of every request (arrival, first scheduled, each token,
 * finish; in steps and monotonic nanoseconds) and their queries. */
#include <string.h>

#include "engine/engine_internal.h"

void kvci_engine_times_arrive(kvc_engine *e, kvc_engine_req *r, int64_t arrival_ns) {
    r->times = (kvc_engine_request_times){
        .arrival_step = e->stats.steps,
        .first_scheduled_step = -1,
        .first_token_step = -1,
        .finish_step = -1,
        .arrival_ns = arrival_ns,
        .first_scheduled_ns = -1,
        .first_token_ns = -1,
        .finish_ns = -1,
    };
}

void kvci_engine_times_scheduled(kvc_engine *e, int64_t t0) {
    for (int64_t b = 0; b < e->n_rows; b++) {
        kvc_engine_req *r = &e->reqs[e->row_slots[b]];
        if (r->times.first_scheduled_step >= 0) continue;
        r->times.first_scheduled_step = e->stats.steps;
        r->times.first_scheduled_ns = t0;
    }
}

void kvci_engine_times_token(kvc_engine *e, kvc_engine_req *r, int64_t t1) {
    r->token_step[r->n_tokens] = e->stats.steps;
    r->token_ns[r->n_tokens] = t1;
    if (r->times.first_token_step >= 0) return;
    r->times.first_token_step = e->stats.steps;
    r->times.first_token_ns = t1;
}

void kvci_engine_times_finish(kvc_engine *e, kvc_engine_req *r, int64_t t1) {
    r->times.finish_step = e->stats.steps;
    r->times.finish_ns = t1;
}

kvc_status kvc_engine_request_times_get(const kvc_engine *e, int64_t id, kvc_engine_request_times *out) {
    if (e == NULL || out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_engine_request_times_get: engine and out must not be NULL");
    const kvc_engine_req *r = kvci_engine_find(e, id);
    if (r == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_engine_request_times_get: request %lld is not held by the engine",
                         (long long)id);
    *out = r->times;
    return KVC_OK;
}

kvc_status kvc_engine_request_token_times(const kvc_engine *e, int64_t id, int64_t *steps, int64_t *ns, int64_t cap,
                                          int64_t *n_out) {
    if (e == NULL || n_out == NULL || cap < 0)
        return kvci_fail(KVC_EINVAL,
                         "kvc_engine_request_token_times: engine and n_out are required and cap %lld must "
                         "be >= 0",
                         (long long)cap);
    const kvc_engine_req *r = kvci_engine_find(e, id);
    if (r == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_engine_request_token_times: request %lld is not held by the engine",
                         (long long)id);
    int64_t n = r->n_tokens - r->n_prompt, k = kvci_min64(n, cap);
    if (steps != NULL) memcpy(steps, r->token_step + r->n_prompt, (size_t)k * sizeof *steps);
    if (ns != NULL) memcpy(ns, r->token_ns + r->n_prompt, (size_t)k * sizeof *ns);
    *n_out = n;
    return KVC_OK;
}
