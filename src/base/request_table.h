/* Internal: live request ids -> request slots, open addressing with linear
 * probing and backward-shift deletion. The slots grow with use: a table
 * starts with `initial` slots and kvci_request_table_reserve doubles them,
 * up to `capacity`, when every allocated slot is taken. One table maps ids
 * for the cache manager (growing) and another for the engine (all slots at
 * creation); each keeps its per-request data in arrays indexed by the slot. */
#ifndef KVC_BASE_REQUEST_TABLE_H
#define KVC_BASE_REQUEST_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/base.h"

typedef struct kvc_request_table {
    int64_t capacity; /* most live requests (the slots never grow past it) */
    int64_t n_slots;  /* slots allocated so far, <= capacity */
    int64_t n_live;
    int64_t mask;        /* buckets - 1 (buckets: power of two >= 2 * n_slots) */
    int32_t *buckets;    /* [mask + 1] slot index or -1 */
    int64_t *ids;        /* [n_slots] request id of each slot */
    int32_t *free_slots; /* [n_slots] stack of unused slots */
    int64_t n_free;      /* unused allocated slots */
} kvc_request_table;

/* capacity in [1, INT32_MAX / 4]; initial slots in [1, capacity]. */
kvc_status kvci_request_table_init(kvc_request_table *t, int64_t capacity, int64_t initial);
void kvci_request_table_release(kvc_request_table *t);
/* Makes sure n slots are allocated (n_live + 1: an insert finds a free
 * one): KVC_OK, KVC_NO_SPACE (n > capacity; no message) or KVC_ENOMEM
 * (growing failed; the table is unchanged). */
kvc_status kvci_request_table_reserve(kvc_request_table *t, int64_t n);
/* Slot of a live id, or -1. */
int32_t kvci_request_table_find(const kvc_request_table *t, int64_t id);
/* Inserts an id that is not live; -1 when every allocated slot is taken. */
int32_t kvci_request_table_insert(kvc_request_table *t, int64_t id);
void kvci_request_table_remove(kvc_request_table *t, int64_t id);

#endif
