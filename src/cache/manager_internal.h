/* Internal: the request-level manager's state, shared by its files. */
#ifndef KVC_CACHE_MANAGER_INTERNAL_H
#define KVC_CACHE_MANAGER_INTERNAL_H

#include "cache/manager_type.h"
#include "base/request_table.h"

/* A prefix hit find_prefix handed out (kvc_prefix_hit.handle), kept until
 * an allocation takes it or KVC_PENDING_HITS later queries reuse its slot. */
typedef struct kvc_pending_hit {
    uint64_t handle;  /* 0: none */
    kvc_hash128 seed; /* the salted seed of the prompt it was found for */
    int64_t n_tokens;
    kvc_key_hit keys[KVC_MAX_MANAGERS];
} kvc_pending_hit;

#define KVC_PENDING_HITS 8

struct kvc_manager {
    const kvc_model_cache_info *ci;
    int64_t max_model_len;
    int32_t n_managers;
    kvc_single_manager managers[KVC_MAX_MANAGERS]; /* in group (first-seen) order */
    kvc_request_table requests;
    kvc_req_blocks *tables; /* [n_table_slots, n_managers] per request slot (grows with the request table) */
    int64_t n_table_slots;
    int32_t *layer_order;     /* [n_layer_infos] layer infos by ascending layer_idx */
    uint64_t last_generation; /* generations handed to request entries so far */
    bool prefix_caching;
    uint64_t prefix_salt;
    kvc_pending_hit hits[KVC_PENDING_HITS]; /* handle h lives in hits[h % KVC_PENDING_HITS] */
    uint64_t last_handle;                   /* handles given out so far */
    kvc_pending_hit requery;                /* a hit looked up again for an allocation without a handle */
    kvc_kv_events events;                   /* KV events (cap 0: off) */
    kvc_prefix_stats stats;                 /* queries, hits, query and hit tokens (evictions and
                                             * cached blocks are read from the managers) */
};

/* Prefix caching (manager_prefix.c): the hit of exactly `len` tokens for the
 * query in every selected key, leaving each key's hit in its scratch; the
 * largest length every key accepts when `exact` is false. */
int64_t kvci_manager_hit_length(kvc_manager *m, const kvc_prefix_query *q, int64_t len, uint64_t key_mask);

/* Hit handles (prefix_hits.c). Keeps every key's last hit_length result
 * (of n_tokens tokens, for the prompt seeded by seed) in dst. */
kvc_status kvci_hit_keep(kvc_manager *m, kvc_pending_hit *dst, int64_t n_tokens, kvc_hash128 seed, uint64_t key_mask);
/* Room in every pending hit for hits of up to n_positions tokens. */
kvc_status kvci_hit_reserve(kvc_manager *m, int64_t n_positions);
/* Keeps the hit in the next ring slot; *handle names it. */
kvc_status kvci_hit_hand_out(kvc_manager *m, int64_t n_tokens, kvc_hash128 seed, uint64_t *handle);
/* The pending hit `hit` names, checked for request rid's allocation with
 * prompt q: still kept, found for the same salt, still cached in every key
 * of key_mask and holding q's tokens (kvci_single_manager_hit_mismatch);
 * else NULL and KVC_EINVAL naming what is wrong. */
const kvc_pending_hit *kvci_hit_claim(const kvc_manager *m, const kvc_prefix_hit *hit, const kvc_prefix_query *q,
                                      uint64_t key_mask, int64_t rid);
/* Forgets the hit after an allocation took it (no-op for the requery slot). */
void kvci_hit_forget(kvc_manager *m, const kvc_pending_hit *h);
void kvci_hit_release(kvc_manager *m);

/* KV events (kv_events.c): a queue of cap events (0: off; needs prefix
 * caching), wired to every key's manager. */
kvc_status kvci_kv_events_init(kvc_manager *m, int64_t cap);

/* A cache salt as bytes and a length: a pointer and len > 0, or NULL and 0
 * (none); else KVC_EINVAL naming request rid (find_prefix when < 0) and `what`. */
kvc_status kvci_manager_check_salt(const void *salt, int64_t len, int64_t rid, const char *what);

/* Room that follows use (manager_room.c). The per-slot tables grow to the
 * request table's slots (new ones empty). */
kvc_status kvci_manager_grow_tables(kvc_manager *m);
/* Inserts the new request rid into a slot, growing the slots if every one is
 * taken (KVC_NO_SPACE, no message, when max_requests are live). */
kvc_status kvci_manager_insert_request(kvc_manager *m, int64_t rid, int32_t *slot);
/* Room in every key's query scratch for a hit of up to len tokens (before
 * kvci_manager_hit_length); KVC_ENOMEM changes nothing that is read. */
kvc_status kvci_manager_reserve_query(kvc_manager *m, int64_t len);

/* The n_managers tables of a request slot. */
kvc_req_blocks *kvci_manager_request_tables(const kvc_manager *m, int32_t slot);

#endif
