/* Internal: live request ids -> request slots, open addressing with linear
 * probing and backward-shift deletion; sized once, never reallocated. One
 * table maps ids for the cache manager and another for the engine (each
 * keeps its per-request data in arrays indexed by the slot). */
#ifndef KVC_BASE_REQUEST_TABLE_H
#define KVC_BASE_REQUEST_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/base.h"

typedef struct kvc_request_table {
    int64_t capacity;  /* slots (live requests at most) */
    int64_t n_live;
    int64_t mask;      /* buckets - 1 (buckets: power of two >= 2 * capacity) */
    int32_t *buckets;  /* [mask + 1] slot index or -1 */
    int64_t *ids;      /* [capacity] request id of each slot */
    int32_t *free_slots; /* [capacity] stack of unused slots */
    int64_t n_free;
} kvc_request_table;

kvc_status kvci_request_table_init(kvc_request_table *t, int64_t capacity);
void kvci_request_table_release(kvc_request_table *t);
/* Slot of a live id, or -1. */
int32_t kvci_request_table_find(const kvc_request_table *t, int64_t id);
/* Inserts an id that is not live; -1 when every slot is taken. */
int32_t kvci_request_table_insert(kvc_request_table *t, int64_t id);
void kvci_request_table_remove(kvc_request_table *t, int64_t id);

#endif
