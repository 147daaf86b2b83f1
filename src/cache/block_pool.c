/* Block pool: a reference count per block and the free queue as a doubly
 * linked list through two id arrays, so that take (from the head), give (to
 * the tail; to the head for a block no prefix index holds when the manager
 * caches), and taking a block out of the middle (a prefix-cache hit on a
 * cached free block) are O(1) per id and nothing allocates after creation.
 * Id 0 is the null block: never counted, never queued. Several manager keys
 * may share one pool (one id space, one free queue): a block is then held by
 * the key that took it, and a cached block carries the key whose prefix index
 * holds it, so that the key taking it for new data can tell that key. */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h"

struct kvc_block_pool {
    int64_t num_blocks;
    int32_t *count;  /* [num_blocks] holders of each block; 0 <=> queued (null block: always 0, never queued) */
    int32_t *after;  /* [num_blocks] next id towards the tail of the free queue, -1 at the tail */
    int32_t *before; /* [num_blocks] next id towards the head, -1 at the head */
    int32_t head;    /* first free id (taken next), -1 when empty */
    int32_t tail;    /* last free id, -1 when empty */
    int64_t n_free;
    uint8_t *cached;                         /* [num_blocks] 1 + the key whose prefix index holds the block, 0: none */
    int64_t n_cached_free[KVC_MAX_MANAGERS]; /* queued blocks cached by each key */
};

/* A queued block entering (+1) or leaving (-1) the queue, counted for the key caching it. */
static void count_cached_free(kvc_block_pool *pool, int32_t id, int64_t delta) {
    if (pool->cached[id] > 0) pool->n_cached_free[pool->cached[id] - 1] += delta;
}

/* Links id between b and a (-1: the head or the tail end). */
static void queue_link(kvc_block_pool *pool, int32_t id, int32_t b, int32_t a) {
    pool->before[id] = b;
    pool->after[id] = a;
    if (b >= 0)
        pool->after[b] = id;
    else
        pool->head = id;
    if (a >= 0)
        pool->before[a] = id;
    else
        pool->tail = id;
    pool->n_free++;
}

static void queue_unlink(kvc_block_pool *pool, int32_t id) {
    int32_t a = pool->after[id], b = pool->before[id];
    if (b >= 0)
        pool->after[b] = a;
    else
        pool->head = a;
    if (a >= 0)
        pool->before[a] = b;
    else
        pool->tail = b;
    pool->after[id] = pool->before[id] = -1;
    pool->n_free--;
}

kvc_status kvc_block_pool_create(int64_t num_blocks, kvc_block_pool **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_block_pool_create: out must not be NULL");
    *out = NULL;
    if (num_blocks <= 0 || num_blocks > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "num_blocks %lld must be in [1, %d]", (long long)num_blocks, INT32_MAX);
    kvc_block_pool *pool = kvci_calloc(1, sizeof *pool);
    int32_t *count = kvci_calloc((size_t)num_blocks, sizeof *count);
    int32_t *after = kvci_malloc((size_t)num_blocks * sizeof *after);
    int32_t *before = kvci_malloc((size_t)num_blocks * sizeof *before);
    uint8_t *cached = kvci_calloc((size_t)num_blocks, 1);
    if (pool == NULL || count == NULL || after == NULL || before == NULL || cached == NULL) {
        kvci_free(pool);
        kvci_free(count);
        kvci_free(after);
        kvci_free(before);
        kvci_free(cached);
        return kvci_fail(KVC_ENOMEM, "cannot allocate a pool of %lld blocks", (long long)num_blocks);
    }
    *pool = (kvc_block_pool){.num_blocks = num_blocks,
                             .count = count,
                             .after = after,
                             .before = before,
                             .head = -1,
                             .tail = -1,
                             .cached = cached};
    after[KVC_NULL_BLOCK] = before[KVC_NULL_BLOCK] = -1;
    for (int64_t id = 1; id < num_blocks; id++) queue_link(pool, (int32_t)id, pool->tail, -1);
    *out = pool;
    return KVC_OK;
}

void kvc_block_pool_destroy(kvc_block_pool *pool) {
    if (pool == NULL) return;
    kvci_free(pool->count);
    kvci_free(pool->after);
    kvci_free(pool->before);
    kvci_free(pool->cached);
    kvci_free(pool);
}

int64_t kvc_block_pool_num_blocks(const kvc_block_pool *pool) { return pool != NULL ? pool->num_blocks : 0; }

int64_t kvc_block_pool_num_free(const kvc_block_pool *pool) { return pool != NULL ? pool->n_free : 0; }

bool kvc_block_pool_is_free(const kvc_block_pool *pool, int32_t id) {
    return pool != NULL && id > 0 && id < pool->num_blocks && pool->count[id] == 0;
}

int32_t kvc_block_pool_ref_count(const kvc_block_pool *pool, int32_t id) {
    return pool != NULL && id > 0 && id < pool->num_blocks ? pool->count[id] : 0;
}

kvc_status kvc_block_pool_take(kvc_block_pool *pool, int64_t n, int32_t *out) {
    if (pool == NULL) return kvci_fail(KVC_EINVAL, "kvc_block_pool_take: pool must not be NULL");
    if (n < 0) return kvci_fail(KVC_EINVAL, "kvc_block_pool_take: n %lld must not be negative", (long long)n);
    if (n > pool->n_free) return KVC_NO_SPACE;
    if (n > 0 && out == NULL) return kvci_fail(KVC_EINVAL, "kvc_block_pool_take: out must not be NULL");
    for (int64_t i = 0; i < n; i++) {
        int32_t id = pool->head;
        queue_unlink(pool, id);
        pool->count[id] = 1;
        count_cached_free(pool, id, -1);
        out[i] = id;
    }
    return KVC_OK;
}

kvc_status kvc_block_pool_ref(kvc_block_pool *pool, int32_t id) {
    if (pool == NULL) return kvci_fail(KVC_EINVAL, "kvc_block_pool_ref: pool must not be NULL");
    if (id <= 0 || id >= pool->num_blocks)
        return kvci_fail(KVC_ERANGE, "kvc_block_pool_ref: block %d is out of range [1, %lld)", id,
                         (long long)pool->num_blocks);
    if (pool->count[id] == INT32_MAX)
        return kvci_fail(KVC_ERANGE, "kvc_block_pool_ref: block %d already has %d holders", id, INT32_MAX);
    if (pool->count[id] == 0) {
        queue_unlink(pool, id);
        count_cached_free(pool, id, -1);
    }
    pool->count[id]++;
    return KVC_OK;
}

/* Gives back the references that the check of kvc_block_pool_give dropped
 * from ids[0..n). */
static void restore_counts(kvc_block_pool *pool, const int32_t *ids, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (ids[i] != KVC_NULL_BLOCK) pool->count[ids[i]]++;
}

/* A block nobody holds any more and that is not queued yet. */
static bool released(const kvc_block_pool *pool, int32_t id) {
    return id != KVC_NULL_BLOCK && pool->count[id] == 0 && pool->before[id] < 0 && pool->head != id;
}

static kvc_status give(kvc_block_pool *pool, const int32_t *ids, int64_t n, bool uncached_first) {
    if (pool == NULL) return kvci_fail(KVC_EINVAL, "kvc_block_pool_give: pool must not be NULL");
    if (n < 0) return kvci_fail(KVC_EINVAL, "kvc_block_pool_give: n %lld must not be negative", (long long)n);
    if (n > 0 && ids == NULL) return kvci_fail(KVC_EINVAL, "kvc_block_pool_give: ids must not be NULL");
    /* Pass 1: drop one reference per listed id, so that an id listed more
     * often than it is held is seen going below 0; undo on failure. */
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= pool->num_blocks) {
            restore_counts(pool, ids, i);
            return kvci_fail(KVC_ERANGE, "block %d (entry %lld) is out of range [0, %lld)", id, (long long)i,
                             (long long)pool->num_blocks);
        }
        if (id == KVC_NULL_BLOCK) continue;
        if (pool->count[id] == 0) {
            restore_counts(pool, ids, i);
            return kvci_fail(KVC_EDOUBLEFREE, "block %d (entry %lld) is already free", id, (long long)i);
        }
        pool->count[id]--;
    }
    /* Pass 2: blocks nobody holds any more join the tail in list order; with
     * uncached_first, those no prefix index holds (they can never be hit) go
     * to the head instead, still in list order (ids[i] before ids[j > i]),
     * so that they are taken before any cached block. */
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (released(pool, id) && !(uncached_first && pool->cached[id] == 0)) {
            queue_link(pool, id, pool->tail, -1);
            count_cached_free(pool, id, 1);
        }
    }
    for (int64_t i = n - 1; uncached_first && i >= 0; i--)
        if (released(pool, ids[i]) && pool->cached[ids[i]] == 0) queue_link(pool, ids[i], -1, pool->head);
    KVC_ASSERT(pool->n_free <= pool->num_blocks - 1);
    return KVC_OK;
}

kvc_status kvc_block_pool_give(kvc_block_pool *pool, const int32_t *ids, int64_t n) {
    return give(pool, ids, n, false);
}

kvc_status kvci_block_pool_give_uncached_first(kvc_block_pool *pool, const int32_t *ids, int64_t n) {
    return give(pool, ids, n, true);
}

kvc_status kvc_block_pool_free_ids(const kvc_block_pool *pool, int32_t *out, int64_t cap, int64_t *n_out) {
    if (pool == NULL || n_out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_block_pool_free_ids: pool and n_out must not be NULL");
    if (cap < 0 || (cap > 0 && out == NULL))
        return kvci_fail(KVC_EINVAL, "kvc_block_pool_free_ids: cap %lld must be >= 0, with out not NULL when > 0",
                         (long long)cap);
    int64_t i = 0;
    for (int32_t id = pool->head; id >= 0 && i < cap; id = pool->after[id]) out[i++] = id;
    *n_out = pool->n_free;
    return KVC_OK;
}

void kvci_block_pool_mark_cached(kvc_block_pool *pool, int32_t id, int32_t key_index) {
    KVC_ASSERT(id > 0 && id < pool->num_blocks && key_index >= -1 && key_index < KVC_MAX_MANAGERS);
    bool queued = pool->count[id] == 0;
    if (queued) count_cached_free(pool, id, -1);
    pool->cached[id] = (uint8_t)(key_index + 1);
    if (queued) count_cached_free(pool, id, 1);
}

int32_t kvci_block_pool_cached_by(const kvc_block_pool *pool, int32_t id) { return (int32_t)pool->cached[id] - 1; }

int64_t kvci_block_pool_num_cached_free(const kvc_block_pool *pool, int32_t key_index) {
    return pool->n_cached_free[key_index];
}
