/* KV events: what enters and leaves the prefix cache, queued in a ring
 * sized at creation until the caller drains it (docs/prefix-caching.md,
 * "KV events"). */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_internal.h"

void kvci_kv_events_record(kvc_kv_events *ev, kvc_kv_event_type type, int32_t key_index, int32_t id, int64_t n_tokens,
                           kvc_hash128 hash, kvc_hash128 parent) {
    if (ev == NULL || ev->cap == 0) return;
    if (ev->n == ev->cap) {
        ev->lost++;
        return;
    }
    ev->ring[(ev->head + ev->n) % ev->cap] = (kvc_kv_event){.type = (int32_t)type,
                                                            .key_index = key_index,
                                                            .block_id = id,
                                                            .n_tokens = n_tokens,
                                                            .hash_hi = hash.high64,
                                                            .hash_lo = hash.low64,
                                                            .parent_hi = parent.high64,
                                                            .parent_lo = parent.low64};
    ev->n++;
}

kvc_status kvci_kv_events_init(kvc_manager *m, int64_t cap) {
    if (cap < 0 || cap > (1 << 24))
        return kvci_fail(KVC_EINVAL, "kv_event_capacity %lld must be in [0, 2^24]", (long long)cap);
    if (cap > 0 && !m->prefix_caching)
        return kvci_fail(KVC_EINVAL, "kv_event_capacity %lld needs prefix_caching on (events tell what it caches)",
                         (long long)cap);
    if (cap == 0) return KVC_OK;
    m->events.ring = kvci_malloc((size_t)cap * sizeof *m->events.ring);
    if (m->events.ring == NULL)
        return kvci_fail(KVC_ENOMEM, "cannot allocate a queue of %lld KV events", (long long)cap);
    m->events.cap = cap;
    for (int32_t g = 0; g < m->n_managers; g++) m->managers[g].events = &m->events;
    return KVC_OK;
}

kvc_status kvc_manager_drain_kv_events(kvc_manager *m, kvc_kv_event *out, int64_t cap, int64_t *n_out,
                                       int64_t *n_lost) {
    if (m == NULL || n_out == NULL || n_lost == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_manager_drain_kv_events: manager, n_out and n_lost must not be NULL");
    if (cap < 0 || (cap > 0 && out == NULL))
        return kvci_fail(KVC_EINVAL, "kvc_manager_drain_kv_events: out must hold cap %lld events", (long long)cap);
    kvc_kv_events *ev = &m->events;
    int64_t n = kvci_min64(cap, ev->n);
    for (int64_t i = 0; i < n; i++) out[i] = ev->ring[(ev->head + i) % ev->cap];
    if (n > 0) ev->head = (ev->head + n) % ev->cap;
    ev->n -= n;
    *n_out = n;
    *n_lost = ev->lost;
    ev->lost = 0;
    return KVC_OK;
}
