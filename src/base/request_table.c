/* Live request ids -> slots (see request_table.h). */
#include "base/request_table.h"

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

kvc_status kvci_request_table_init(kvc_request_table *t, int64_t capacity) {
    *t = (kvc_request_table){0};
    if (capacity <= 0 || capacity > INT32_MAX / 4)
        return kvci_fail(KVC_EINVAL, "max_requests %lld must be in [1, %d]", (long long)capacity, INT32_MAX / 4);
    int64_t buckets = 1;
    while (buckets < 2 * capacity) buckets *= 2;
    t->capacity = capacity;
    t->mask = buckets - 1;
    t->buckets = kvci_malloc((size_t)buckets * sizeof *t->buckets);
    t->ids = kvci_calloc((size_t)capacity, sizeof *t->ids);
    t->free_slots = kvci_malloc((size_t)capacity * sizeof *t->free_slots);
    if (t->buckets == NULL || t->ids == NULL || t->free_slots == NULL) {
        kvci_request_table_release(t);
        return kvci_fail(KVC_ENOMEM, "cannot allocate a request table of %lld requests", (long long)capacity);
    }
    for (int64_t b = 0; b < buckets; b++) t->buckets[b] = -1;
    for (int64_t s = 0; s < capacity; s++) t->free_slots[s] = (int32_t)(capacity - 1 - s);
    t->n_free = capacity;
    return KVC_OK;
}

void kvci_request_table_release(kvc_request_table *t) {
    kvci_free(t->buckets);
    kvci_free(t->ids);
    kvci_free(t->free_slots);
    *t = (kvc_request_table){0};
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
