/* Request bookkeeping: the id -> slot map (open addressing with
 * backward-shift deletion, so it never fills with tombstones), the waiting
 * ring (push at both ends: new requests at the tail, preempted ones at the
 * head) and the running list in admission order. Nothing here allocates. */
#include "engine/engine_internal.h"

static int64_t map_home(const kvc_engine *e, int64_t id) {
    return (int64_t)(((uint64_t)id * 0x9e3779b97f4a7c15ULL) >> 17) & e->map_mask;
}

kvc_engine_req *kvc_engine_find(const kvc_engine *e, int64_t id) {
    if (id < 0) return NULL;
    for (int64_t b = map_home(e, id);; b = (b + 1) & e->map_mask) {
        if (e->map_ids[b] < 0) return NULL;
        if (e->map_ids[b] == id) return &e->reqs[e->map_slots[b]];
    }
}

void kvc_engine_map_put(kvc_engine *e, int64_t id, int32_t slot) {
    int64_t b = map_home(e, id);
    while (e->map_ids[b] >= 0) b = (b + 1) & e->map_mask;
    e->map_ids[b] = id;
    e->map_slots[b] = slot;
}

void kvc_engine_map_remove(kvc_engine *e, int64_t id) {
    int64_t b = map_home(e, id);
    while (e->map_ids[b] != id) {
        KVC_ASSERT(e->map_ids[b] >= 0);
        b = (b + 1) & e->map_mask;
    }
    /* backward shift: move later entries of the probe run into the hole */
    for (int64_t j = (b + 1) & e->map_mask; e->map_ids[j] >= 0; j = (j + 1) & e->map_mask) {
        int64_t home = map_home(e, e->map_ids[j]);
        /* entry j may move to b when b lies cyclically in [home, j) */
        bool movable = b <= j ? (home <= b || home > j) : (home <= b && home > j);
        if (!movable) continue;
        e->map_ids[b] = e->map_ids[j];
        e->map_slots[b] = e->map_slots[j];
        b = j;
    }
    e->map_ids[b] = -1;
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
