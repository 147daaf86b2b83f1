/* The prefix index of one manager (see prefix_index.h). */
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include "cache/prefix_index.h"

#include <string.h>

#include "base/internal.h"

kvc_prefix_hash_fn kvc_prefix_hash_override = NULL;

static kvc_hash128 hash_bytes(const void *bytes, size_t n) {
    return kvc_prefix_hash_override != NULL ? kvc_prefix_hash_override(bytes, n) : XXH3_128bits(bytes, n);
}

static int64_t home(const kvc_prefix_index *ix, kvc_hash128 h) { return (int64_t)(h.low64 & (uint64_t)ix->mask); }

/* Bucket holding entry e (which is in the buckets). */
static int64_t bucket_of(const kvc_prefix_index *ix, int64_t e) {
    int64_t b = home(ix, ix->keys[e].hash);
    while (ix->buckets[b] != e) b = (b + 1) & ix->mask;
    return b;
}

/* Entries grow to cap (> ix->cap): the entry arrays are enlarged (contents
 * kept) and the buckets rebuilt for cap entries. On failure the index is
 * unchanged (an enlarged array only holds more than it needs). */
static kvc_status grow(kvc_prefix_index *ix, int64_t cap) {
    int64_t mask = 0;
    bool room =
        KVCI_RESIZE(ix->keys, cap) && KVCI_RESIZE(ix->blocks, cap) && KVCI_RESIZE(ix->tokens, cap * ix->block_tokens);
    int32_t *buckets = room ? kvci_buckets_new(cap, &mask) : NULL;
    if (buckets == NULL)
        return kvci_fail(KVC_ENOMEM, "prefix index: cannot allocate room for %lld blocks of %lld tokens",
                         (long long)cap, (long long)ix->block_tokens);
    kvci_free(ix->buckets);
    ix->buckets = buckets;
    ix->mask = mask;
    ix->cap = cap;
    for (int64_t e = 0; e < ix->n_indexed; e++) {
        int64_t b = home(ix, ix->keys[e].hash);
        while (buckets[b] >= 0) b = (b + 1) & ix->mask;
        buckets[b] = (int32_t)e;
    }
    return KVC_OK;
}

kvc_status kvci_prefix_index_init(kvc_prefix_index *ix, int64_t num_blocks, int64_t block_tokens) {
    *ix = (kvc_prefix_index){.block_tokens = block_tokens, .num_blocks = num_blocks};
    if (block_tokens <= 0 || block_tokens > (1 << 20) || num_blocks <= 0 || num_blocks > INT32_MAX)
        return kvci_fail(KVC_EINVAL,
                         "prefix index: blocks of %lld tokens must hold 1 to 2^20 tokens and the pool 1 "
                         "to 2^31 - 1 blocks (has %lld)",
                         (long long)block_tokens, (long long)num_blocks);
    ix->entry_of = kvci_calloc((size_t)num_blocks, sizeof *ix->entry_of);
    ix->buf = kvci_malloc(sizeof(kvc_hash128) + (size_t)block_tokens * sizeof(int32_t));
    kvc_status st =
        ix->entry_of != NULL && ix->buf != NULL
            ? grow(ix, kvci_min64(num_blocks, 16))
            : kvci_fail(KVC_ENOMEM, "prefix index: cannot allocate it for %lld blocks", (long long)num_blocks);
    if (st != KVC_OK) kvci_prefix_index_release(ix);
    return st;
}

void kvci_prefix_index_release(kvc_prefix_index *ix) {
    kvci_free(ix->entry_of);
    kvci_free(ix->keys);
    kvci_free(ix->blocks);
    kvci_free(ix->tokens);
    kvci_free(ix->buckets);
    kvci_free(ix->buf);
    *ix = (kvc_prefix_index){0};
}

kvc_status kvci_prefix_index_reserve(kvc_prefix_index *ix, int64_t n) {
    int64_t need = kvci_min64(ix->n_indexed + n, ix->num_blocks);
    return need <= ix->cap ? KVC_OK : grow(ix, kvci_min64(kvci_max64(need, 2 * ix->cap), ix->num_blocks));
}

kvc_hash128 kvci_prefix_seed(uint64_t engine_salt, const void *cache_salt, int64_t cache_salt_len) {
    static const char domain[] = "kvcache prefix seed";
    XXH3_state_t state; /* on the stack: the seed is made once per query, without allocating */
    XXH3_INITSTATE(&state);
    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, domain, sizeof domain);
    XXH3_128bits_update(&state, &engine_salt, sizeof engine_salt);
    if (cache_salt != NULL && cache_salt_len > 0) XXH3_128bits_update(&state, cache_salt, (size_t)cache_salt_len);
    return XXH3_128bits_digest(&state);
}

kvc_hash128 kvci_prefix_block_hash(kvc_prefix_index *ix, kvc_hash128 parent, const int32_t *tokens) {
    size_t n = (size_t)ix->block_tokens * sizeof(int32_t);
    memcpy(ix->buf, &parent, sizeof parent);
    memcpy(ix->buf + sizeof parent, tokens, n);
    return hash_bytes(ix->buf, sizeof parent + n);
}

int32_t kvci_prefix_index_find(const kvc_prefix_index *ix, kvc_hash128 hash, kvc_hash128 parent,
                               const int32_t *tokens) {
    size_t n = (size_t)ix->block_tokens * sizeof(int32_t);
    for (int64_t b = home(ix, hash);; b = (b + 1) & ix->mask) {
        int32_t e = ix->buckets[b];
        if (e < 0) return -1;
        if (kvci_hash128_equal(ix->keys[e].hash, hash))
            return kvci_hash128_equal(ix->keys[e].parent, parent) &&
                           memcmp(kvci_prefix_index_tokens(ix, e), tokens, n) == 0
                       ? ix->blocks[e]
                       : -1;
    }
}

bool kvci_prefix_index_insert(kvc_prefix_index *ix, int32_t id, kvc_hash128 hash, kvc_hash128 parent,
                              const int32_t *tokens) {
    KVC_ASSERT(!kvci_prefix_index_has(ix, id) && ix->n_indexed < ix->cap);
    int64_t b = home(ix, hash);
    for (; ix->buckets[b] >= 0; b = (b + 1) & ix->mask)
        if (kvci_hash128_equal(ix->keys[ix->buckets[b]].hash, hash)) return false;
    int64_t e = ix->n_indexed++;
    ix->buckets[b] = (int32_t)e;
    ix->keys[e] = (kvc_prefix_key){.hash = hash, .parent = parent};
    ix->blocks[e] = id;
    memcpy(ix->tokens + e * ix->block_tokens, tokens, (size_t)ix->block_tokens * sizeof(int32_t));
    ix->entry_of[id] = (int32_t)(e + 1);
    return true;
}

/* Takes entry e out of the buckets. Backward shift: later members of the
 * probe run move into the hole unless their home lies cyclically in (hole, b]. */
static void unlink_entry(kvc_prefix_index *ix, int64_t e) {
    int64_t hole = bucket_of(ix, e);
    for (int64_t b = hole;;) {
        ix->buckets[hole] = -1;
        for (;;) {
            b = (b + 1) & ix->mask;
            if (ix->buckets[b] < 0) return;
            int64_t h = home(ix, ix->keys[ix->buckets[b]].hash);
            bool stays = hole <= b ? (hole < h && h <= b) : (hole < h || h <= b);
            if (!stays) break;
        }
        ix->buckets[hole] = ix->buckets[b];
        hole = b;
    }
}

bool kvci_prefix_index_drop(kvc_prefix_index *ix, int32_t id) {
    if (!kvci_prefix_index_has(ix, id)) return false;
    int64_t e = ix->entry_of[id] - 1, last = ix->n_indexed - 1;
    unlink_entry(ix, e);
    ix->entry_of[id] = 0;
    if (e != last) { /* the last entry fills the gap, so that entries stay packed */
        ix->buckets[bucket_of(ix, last)] = (int32_t)e;
        ix->keys[e] = ix->keys[last];
        ix->blocks[e] = ix->blocks[last];
        memcpy(ix->tokens + e * ix->block_tokens, kvci_prefix_index_tokens(ix, last),
               (size_t)ix->block_tokens * sizeof(int32_t));
        ix->entry_of[ix->blocks[e]] = (int32_t)(e + 1);
    }
    ix->n_indexed--;
    return true;
}

void kvci_prefix_index_clear(kvc_prefix_index *ix) {
    if (ix->entry_of == NULL) return;
    for (int64_t e = 0; e < ix->n_indexed; e++) ix->entry_of[ix->blocks[e]] = 0;
    for (int64_t b = 0; b <= ix->mask; b++) ix->buckets[b] = -1;
    ix->n_indexed = 0;
}
