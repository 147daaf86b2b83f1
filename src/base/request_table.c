/* Live request ids -> slots (see request_table.h). */
#include "base/request_table.h"

#include <string.h>

#include "base/internal.h"

static uint64_t hash_id(int64_t id) {
    uint64_t x = (uint64_t)id;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* Slots grow to n (> n_slots): the id and free-slot arrays are enlarged
 * (their contents kept), the buckets rebuilt for n slots and the new slots
 * made free. On failure the table is unchanged (an enlarged array only
 * holds more than it needs). */
static kvc_status grow(kvc_request_table *t, int64_t n) {
    int64_t mask = 0;
    int32_t *table = KVCI_RESIZE(t->ids, n) && KVCI_RESIZE(t->free_slots, n) ? kvci_buckets_new(n, &mask) : NULL;
    if (table == NULL) return kvci_fail(KVC_ENOMEM, "cannot allocate a request table of %lld slots", (long long)n);
    for (int64_t b = 0; t->buckets != NULL && b <= t->mask; b++) {
        int32_t slot = t->buckets[b];
        if (slot < 0) continue;
        int64_t to = (int64_t)(hash_id(t->ids[slot]) & (uint64_t)mask);
        while (table[to] >= 0) to = (to + 1) & mask;
        table[to] = slot;
    }
    kvci_free(t->buckets);
    t->buckets = table;
    t->mask = mask;
    /* New slots go under the free ones, lowest nearest the top: slots are
     * handed out lowest first, so live requests stay in the lowest slots. */
    int64_t added = n - t->n_slots;
    memmove(t->free_slots + added, t->free_slots, (size_t)t->n_free * sizeof *t->free_slots);
    for (int64_t i = 0; i < added; i++) {
        t->free_slots[i] = (int32_t)(n - 1 - i);
        t->ids[n - 1 - i] = -1;
    }
    t->n_free += added;
    t->n_slots = n;
    return KVC_OK;
}

kvc_status kvci_request_table_init(kvc_request_table *t, int64_t capacity, int64_t initial) {
    *t = (kvc_request_table){0};
    if (capacity <= 0 || capacity > INT32_MAX / 4)
        return kvci_fail(KVC_EINVAL, "max_requests %lld must be in [1, %d]", (long long)capacity, INT32_MAX / 4);
    KVC_ASSERT(initial >= 1 && initial <= capacity);
    t->capacity = capacity;
    kvc_status st = grow(t, initial);
    if (st != KVC_OK) kvci_request_table_release(t);
    return st;
}

void kvci_request_table_release(kvc_request_table *t) {
    kvci_free(t->buckets);
    kvci_free(t->ids);
    kvci_free(t->free_slots);
    *t = (kvc_request_table){0};
}

kvc_status kvci_request_table_reserve(kvc_request_table *t, int64_t n) {
    if (n <= t->n_slots) return KVC_OK;
    if (n > t->capacity) return KVC_NO_SPACE;
    return grow(t, kvci_min64(kvci_max64(2 * t->n_slots, n), t->capacity));
}

/* Bucket holding id, or the empty bucket where it would go. */
static int64_t probe(const kvc_request_table *t, int64_t id) {
    int64_t b = (int64_t)(hash_id(id) & (uint64_t)t->mask);
    while (t->buckets[b] >= 0 && t->ids[t->buckets[b]] != id) b = (b + 1) & t->mask;
    return b;
}

int32_t kvci_request_table_find(const kvc_request_table *t, int64_t id) { return t->buckets[probe(t, id)]; }

int32_t kvci_request_table_insert(kvc_request_table *t, int64_t id) {
    if (t->n_free == 0) return -1;
    int64_t b = probe(t, id);
    KVC_ASSERT(t->buckets[b] < 0);
    int32_t slot = t->free_slots[--t->n_free];
    t->ids[slot] = id;
    t->buckets[b] = slot;
    t->n_live++;
    return slot;
}

void kvci_request_table_remove(kvc_request_table *t, int64_t id) {
    int64_t hole = probe(t, id);
    int32_t slot = t->buckets[hole];
    if (slot < 0) return;
    t->free_slots[t->n_free++] = slot;
    t->n_live--;
    /* Backward-shift: move later members of the probe run into the hole when
     * their home bucket does not lie strictly between the hole and them. */
    int64_t b = hole;
    for (;;) {
        t->buckets[hole] = -1;
        for (;;) {
            b = (b + 1) & t->mask;
            if (t->buckets[b] < 0) return;
            int64_t home = (int64_t)(hash_id(t->ids[t->buckets[b]]) & (uint64_t)t->mask);
            bool stays = hole <= b ? (hole < home && home <= b) : (hole < home || home <= b);
            if (!stays) break;
        }
        t->buckets[hole] = t->buckets[b];
        hole = b;
    }
}
