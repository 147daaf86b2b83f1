/* Internal: the request-level manager's state, shared by its files. */
#ifndef KVC_CACHE_MANAGER_INTERNAL_H
#define KVC_CACHE_MANAGER_INTERNAL_H

#include "cache/manager_type.h"
#include "base/request_table.h"

struct kvc_manager {
    const kvc_model_cache_info *ci;
    int64_t max_model_len;
    int32_t n_managers;
    kvc_single_manager managers[KVC_MAX_MANAGERS]; /* in group (first-seen) order */
    kvc_request_table requests;
    kvc_req_blocks *tables; /* [max_requests, n_managers] per request slot */
    int32_t *layer_order;   /* [n_layer_infos] layer infos by ascending layer_idx */
    uint64_t last_generation; /* generations handed to request entries so far */
    bool prefix_caching;
    uint64_t prefix_salt;
    kvc_prefix_stats stats;   /* queries, hits, query and hit tokens (evictions and
                               * cached blocks are read from the managers) */
};

/* Prefix caching (manager_prefix.c): the hit of exactly `len` tokens for the
 * query in every selected key, leaving each key's hit in its scratch; the
 * largest length every key accepts when `exact` is false. */
int64_t kvci_manager_hit_length(kvc_manager *m, const kvc_prefix_query *q, int64_t len, uint64_t key_mask);

/* A cache salt as bytes and a length: a pointer and len > 0, or NULL and 0
 * (none); else KVC_EINVAL naming request rid (find_prefix when < 0) and `what`. */
kvc_status kvci_manager_check_salt(const void *salt, int64_t len, int64_t rid, const char *what);

/* The n_managers tables of a request slot. */
kvc_req_blocks *kvci_manager_request_tables(const kvc_manager *m, int32_t slot);

#endif
