/* Block pool: a FIFO ring of free ids plus a bitmap mirroring it, so that
 * membership, take and give are O(1) per id and nothing allocates after
 * creation. Id 0 is the null block and never enters the ring. */
#include <string.h>

#include "base/internal.h"
#include "kvcache/cache.h"

struct kvc_block_pool {
    int64_t num_blocks;
    int32_t *ring;       /* [num_blocks] free ids, ring[head .. head+count) mod num_blocks */
    int64_t head;
    int64_t count;
    uint64_t *free_bits; /* [cdiv(num_blocks, 64)] bit id set <=> id in the ring */
};

static bool bit_get(const uint64_t *bits, int32_t id) { return (bits[id >> 6] >> (id & 63)) & 1u; }
static void bit_set(uint64_t *bits, int32_t id) { bits[id >> 6] |= (uint64_t)1 << (id & 63); }
static void bit_clear(uint64_t *bits, int32_t id) { bits[id >> 6] &= ~((uint64_t)1 << (id & 63)); }

kvc_status kvc_block_pool_create(int64_t num_blocks, kvc_block_pool **out) {
    if (out == NULL) return kvc_fail(KVC_EINVAL, "kvc_block_pool_create: out must not be NULL");
    *out = NULL;
    if (num_blocks <= 0 || num_blocks > INT32_MAX)
        return kvc_fail(KVC_EINVAL, "num_blocks %lld must be in [1, %d]", (long long)num_blocks, INT32_MAX);
    kvc_block_pool *pool = kvc_calloc(1, sizeof *pool);
    int32_t *ring = kvc_malloc((size_t)num_blocks * sizeof *ring);
    uint64_t *bits = kvc_calloc((size_t)kvc_cdiv(num_blocks, 64), sizeof *bits);
    if (pool == NULL || ring == NULL || bits == NULL) {
        kvc_free(pool);
        kvc_free(ring);
        kvc_free(bits);
        return kvc_fail(KVC_ENOMEM, "cannot allocate a pool of %lld blocks", (long long)num_blocks);
    }
    pool->num_blocks = num_blocks;
    pool->ring = ring;
    pool->free_bits = bits;
    for (int64_t id = 1; id < num_blocks; id++) {
        ring[id - 1] = (int32_t)id;
        bit_set(bits, (int32_t)id);
    }
    pool->count = num_blocks - 1;
    *out = pool;
    return KVC_OK;
}

void kvc_block_pool_destroy(kvc_block_pool *pool) {
    if (pool == NULL) return;
    kvc_free(pool->ring);
    kvc_free(pool->free_bits);
    kvc_free(pool);
}

int64_t kvc_block_pool_num_blocks(const kvc_block_pool *pool) { return pool != NULL ? pool->num_blocks : 0; }

int64_t kvc_block_pool_num_free(const kvc_block_pool *pool) { return pool != NULL ? pool->count : 0; }

bool kvc_block_pool_is_free(const kvc_block_pool *pool, int32_t id) {
    return pool != NULL && id > 0 && id < pool->num_blocks && bit_get(pool->free_bits, id);
}

kvc_status kvc_block_pool_take(kvc_block_pool *pool, int64_t n, int32_t *out) {
    if (pool == NULL) return kvc_fail(KVC_EINVAL, "kvc_block_pool_take: pool must not be NULL");
    if (n < 0) return kvc_fail(KVC_EINVAL, "kvc_block_pool_take: n %lld must not be negative", (long long)n);
    if (n > pool->count) return KVC_NO_SPACE;
    if (n > 0 && out == NULL) return kvc_fail(KVC_EINVAL, "kvc_block_pool_take: out must not be NULL");
    for (int64_t i = 0; i < n; i++) {
        int32_t id = pool->ring[pool->head];
        pool->head = pool->head + 1 == pool->num_blocks ? 0 : pool->head + 1;
        bit_clear(pool->free_bits, id);
        out[i] = id;
    }
    pool->count -= n;
    return KVC_OK;
}

/* Undoes the marks check_give_list set for ids[0..n). */
static void unmark(kvc_block_pool *pool, const int32_t *ids, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (ids[i] != KVC_NULL_BLOCK) bit_clear(pool->free_bits, ids[i]);
}

kvc_status kvc_block_pool_give(kvc_block_pool *pool, const int32_t *ids, int64_t n) {
    if (pool == NULL) return kvc_fail(KVC_EINVAL, "kvc_block_pool_give: pool must not be NULL");
    if (n < 0) return kvc_fail(KVC_EINVAL, "kvc_block_pool_give: n %lld must not be negative", (long long)n);
    if (n > 0 && ids == NULL) return kvc_fail(KVC_EINVAL, "kvc_block_pool_give: ids must not be NULL");
    /* Pass 1: check every id, marking as we go so that a duplicate inside the
     * list is seen as "already free"; undo the marks on failure. */
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= pool->num_blocks) {
            unmark(pool, ids, i);
            return kvc_fail(KVC_ERANGE, "block %d (entry %lld) is out of range [0, %lld)", id, (long long)i,
                            (long long)pool->num_blocks);
        }
        if (id == KVC_NULL_BLOCK) continue;
        if (bit_get(pool->free_bits, id)) {
            unmark(pool, ids, i);
            return kvc_fail(KVC_EDOUBLEFREE, "block %d (entry %lld) is already free", id, (long long)i);
        }
        bit_set(pool->free_bits, id);
    }
    /* Pass 2: append in list order. */
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] == KVC_NULL_BLOCK) continue;
        int64_t tail = pool->head + pool->count;
        if (tail >= pool->num_blocks) tail -= pool->num_blocks;
        pool->ring[tail] = ids[i];
        pool->count++;
    }
    KVC_ASSERT(pool->count <= pool->num_blocks - 1);
    return KVC_OK;
}

kvc_status kvc_block_pool_free_ids(const kvc_block_pool *pool, int32_t *out, int64_t cap, int64_t *n_out) {
    if (pool == NULL || n_out == NULL) return kvc_fail(KVC_EINVAL, "kvc_block_pool_free_ids: pool and n_out must not be NULL");
    if (cap > 0 && out == NULL) return kvc_fail(KVC_EINVAL, "kvc_block_pool_free_ids: out must not be NULL when cap > 0");
    int64_t idx = pool->head;
    for (int64_t i = 0; i < pool->count && i < cap; i++) {
        out[i] = pool->ring[idx];
        idx = idx + 1 == pool->num_blocks ? 0 : idx + 1;
    }
    *n_out = pool->count;
    return KVC_OK;
}
