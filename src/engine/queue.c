/* Request bookkeeping: lookup by id (the request table of base/), the waiting
 * ring (push at both ends: new requests at the tail, preempted ones at the
 * head) and the running list in admission order. Nothing here allocates. */
#include "engine/engine_internal.h"

kvc_engine_req *kvc_engine_find(const kvc_engine *e, int64_t id) {
    int32_t slot = id >= 0 ? kvc_request_table_find(&e->table, id) : -1;
    return slot >= 0 ? &e->reqs[slot] : NULL;
}

static int64_t wait_index(const kvc_engine *e, int64_t i) { return (e->wait_head + i) % e->p.max_requests; }

void kvc_engine_wait_push_back(kvc_engine *e, int32_t slot) {
    KVC_ASSERT(e->n_waiting < e->p.max_requests);
    e->waiting[wait_index(e, e->n_waiting)] = slot;
    e->n_waiting++;
}

void kvc_engine_wait_push_front(kvc_engine *e, int32_t slot) {
    KVC_ASSERT(e->n_waiting < e->p.max_requests);
    e->wait_head = (e->wait_head + e->p.max_requests - 1) % e->p.max_requests;
    e->waiting[e->wait_head] = slot;
    e->n_waiting++;
}

int32_t kvc_engine_wait_at(const kvc_engine *e, int64_t i) { return e->waiting[wait_index(e, i)]; }

void kvc_engine_wait_pop_front(kvc_engine *e) {
    KVC_ASSERT(e->n_waiting > 0);
    e->wait_head = (e->wait_head + 1) % e->p.max_requests;
    e->n_waiting--;
}

void kvc_engine_wait_remove(kvc_engine *e, int32_t slot) {
    int64_t i = 0;
    while (i < e->n_waiting && kvc_engine_wait_at(e, i) != slot) i++;
    KVC_ASSERT(i < e->n_waiting);
    for (; i + 1 < e->n_waiting; i++) e->waiting[wait_index(e, i)] = e->waiting[wait_index(e, i + 1)];
    e->n_waiting--;
}

void kvc_engine_run_remove(kvc_engine *e, int32_t slot) {
    int64_t i = 0;
    while (i < e->n_running && e->running[i] != slot) i++;
    KVC_ASSERT(i < e->n_running);
    for (; i + 1 < e->n_running; i++) e->running[i] = e->running[i + 1];
    e->n_running--;
}
