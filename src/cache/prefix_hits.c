/* Hit handles: find_prefix hands its hit out as a value (kvc_prefix_hit)
 * whose handle names the blocks it found, kept here; allocate_slots takes
 * them after checking that each is still indexed under the hash it was
 * found by and holds the allocating prompt's tokens (a hit found for another
 * prompt is refused), so nothing is hashed again between the two calls. A small ring
 * holds the last KVC_PENDING_HITS hits: a caller that queries more often
 * than it allocates gets a stale-hit refusal and queries again. */
#include "base/internal.h"
#include "cache/manager_internal.h"

kvc_status kvci_hit_keep(kvc_manager *m, kvc_pending_hit *dst, int64_t n_tokens, kvc_hash128 seed, uint64_t key_mask) {
    for (int32_t g = 0; g < m->n_managers; g++) { /* room first: a failure keeps dst as it was */
        kvc_status st =
            key_mask >> g & 1u ? kvci_key_hit_reserve(&m->managers[g], &dst->keys[g], m->managers[g].n_hit) : KVC_OK;
        if (st != KVC_OK) return st;
    }
    dst->handle = 0;
    dst->seed = seed;
    dst->n_tokens = n_tokens;
    for (int32_t g = 0; g < m->n_managers; g++) {
        dst->keys[g].n = 0;
        if (key_mask >> g & 1u) kvci_single_manager_keep_hit(&m->managers[g], n_tokens, &dst->keys[g]);
    }
    return KVC_OK;
}

kvc_status kvci_hit_reserve(kvc_manager *m, int64_t n_positions) {
    for (int i = 0; i <= KVC_PENDING_HITS; i++) {
        kvc_pending_hit *h = i < KVC_PENDING_HITS ? &m->hits[i] : &m->requery;
        for (int32_t g = 0; g < m->n_managers; g++) {
            const kvc_single_manager *sm = &m->managers[g];
            int64_t n = sm->caching ? kvci_max64(n_positions / sm->index.block_tokens, 1) : 0;
            kvc_status st = kvci_key_hit_reserve(sm, &h->keys[g], n);
            if (st != KVC_OK) return st;
        }
    }
    return KVC_OK;
}

kvc_status kvci_hit_hand_out(kvc_manager *m, int64_t n_tokens, kvc_hash128 seed, uint64_t *handle) {
    uint64_t next = m->last_handle + 1;
    kvc_pending_hit *dst = &m->hits[next % KVC_PENDING_HITS];
    kvc_status st = kvci_hit_keep(m, dst, n_tokens, seed, ((uint64_t)1 << m->n_managers) - 1);
    if (st != KVC_OK) return st;
    dst->handle = m->last_handle = next;
    *handle = next;
    return KVC_OK;
}

const kvc_pending_hit *kvci_hit_claim(const kvc_manager *m, const kvc_prefix_hit *hit, const kvc_prefix_query *q,
                                      uint64_t key_mask, int64_t rid) {
    const kvc_pending_hit *h = hit->handle != 0 ? &m->hits[hit->handle % KVC_PENDING_HITS] : NULL;
    if (h == NULL || h->handle != hit->handle || h->n_tokens != hit->n_tokens) {
        kvci_fail(KVC_EINVAL,
                  "request %lld: hit handle %llu of %lld tokens is not a hit find_prefix handed out, or was "
                  "taken or replaced by %d later queries (a stale hit: query again)",
                  (long long)rid, (unsigned long long)hit->handle, (long long)hit->n_tokens, KVC_PENDING_HITS);
        return NULL;
    }
    if (!kvci_hash128_equal(h->seed, q->seed)) {
        kvci_fail(KVC_EINVAL, "request %lld: hit %llu was found under another cache salt than the request's",
                  (long long)rid, (unsigned long long)hit->handle);
        return NULL;
    }
    for (int32_t g = 0; g < m->n_managers; g++)
        if (key_mask >> g & 1u && !kvci_single_manager_hit_valid(&m->managers[g], &h->keys[g])) {
            kvci_fail(KVC_EINVAL,
                      "request %lld: blocks of hit %llu in key %s were evicted since the query (a stale hit: "
                      "query again)",
                      (long long)rid, (unsigned long long)hit->handle, m->managers[g].group.key);
            return NULL;
        }
    for (int32_t g = 0; g < m->n_managers; g++) {
        int64_t b =
            key_mask >> g & 1u ? kvci_single_manager_hit_mismatch(&m->managers[g], &h->keys[g], q, h->n_tokens) : -1;
        if (b >= 0) {
            kvci_fail(KVC_EINVAL,
                      "request %lld: hit %llu was found for another prompt (block %lld of key %s holds other "
                      "tokens than this prompt's there)",
                      (long long)rid, (unsigned long long)hit->handle, (long long)b, m->managers[g].group.key);
            return NULL;
        }
    }
    return h;
}

void kvci_hit_forget(kvc_manager *m, const kvc_pending_hit *h) {
    if (h != &m->requery) m->hits[h->handle % KVC_PENDING_HITS].handle = 0;
}

/* Frees one pending hit's arrays. */
static void release_one(kvc_pending_hit *h) {
    for (int32_t g = 0; g < KVC_MAX_MANAGERS; g++) {
        kvci_free(h->keys[g].ids);
        kvci_free(h->keys[g].hashes);
    }
}

void kvci_hit_release(kvc_manager *m) {
    for (int i = 0; i < KVC_PENDING_HITS; i++) release_one(&m->hits[i]);
    release_one(&m->requery);
}
