/* The prefix index of one manager (see prefix_index.h). */
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include "cache/prefix_index.h"

#include <string.h>

#include "base/internal.h"

kvc_prefix_hash_fn kvc_prefix_hash_override = NULL;

static kvc_hash128 hash_bytes(const void *bytes, size_t n) {
    return kvc_prefix_hash_override != NULL ? kvc_prefix_hash_override(bytes, n) : XXH3_128bits(bytes, n);
}

kvc_status kvci_prefix_index_init(kvc_prefix_index *ix, int64_t num_blocks, int64_t block_tokens) {
    *ix = (kvc_prefix_index){.block_tokens = block_tokens, .num_blocks = num_blocks};
    int64_t token_count = 0;
    if (block_tokens <= 0 || block_tokens > (1 << 20) || !kvci_mul64(num_blocks, block_tokens, &token_count) ||
        token_count > ((int64_t)1 << 34))
        return kvci_fail(KVC_EINVAL, "prefix index: %lld blocks of %lld tokens are too many to keep token ids for",
                        (long long)num_blocks, (long long)block_tokens);
    int64_t buckets = 2;
    while (buckets < 2 * num_blocks) buckets *= 2;
    ix->mask = buckets - 1;
    ix->keys = kvci_malloc((size_t)num_blocks * sizeof *ix->keys);
    ix->tokens = kvci_malloc((size_t)token_count * sizeof *ix->tokens);
    ix->indexed = kvci_calloc((size_t)num_blocks, 1);
    ix->buckets = kvci_malloc((size_t)buckets * sizeof *ix->buckets);
    ix->buf = kvci_malloc(sizeof(kvc_hash128) + (size_t)block_tokens * sizeof(int32_t));
    if (ix->keys == NULL || ix->tokens == NULL || ix->indexed == NULL || ix->buckets == NULL ||
        ix->buf == NULL) {
        kvci_prefix_index_release(ix);
        return kvci_fail(KVC_ENOMEM, "prefix index: cannot allocate it for %lld blocks of %lld tokens",
                        (long long)num_blocks, (long long)block_tokens);
    }
    for (int64_t b = 0; b < buckets; b++) ix->buckets[b] = -1;
    return KVC_OK;
}

void kvci_prefix_index_release(kvc_prefix_index *ix) {
    kvci_free(ix->keys);
    kvci_free(ix->tokens);
    kvci_free(ix->indexed);
    kvci_free(ix->buckets);
    kvci_free(ix->buf);
    *ix = (kvc_prefix_index){0};
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

static int64_t home(const kvc_prefix_index *ix, kvc_hash128 h) { return (int64_t)(h.low64 & (uint64_t)ix->mask); }

int32_t kvci_prefix_index_find(const kvc_prefix_index *ix, kvc_hash128 hash, kvc_hash128 parent, const int32_t *tokens) {
    size_t n = (size_t)ix->block_tokens * sizeof(int32_t);
    for (int64_t b = home(ix, hash);; b = (b + 1) & ix->mask) {
        int32_t id = ix->buckets[b];
        if (id < 0) return -1;
        if (kvci_hash128_equal(ix->keys[id].hash, hash))
            return kvci_hash128_equal(ix->keys[id].parent, parent) &&
                           memcmp(ix->tokens + (int64_t)id * ix->block_tokens, tokens, n) == 0
                       ? id
                       : -1;
    }
}

bool kvci_prefix_index_insert(kvc_prefix_index *ix, int32_t id, kvc_hash128 hash, kvc_hash128 parent,
                             const int32_t *tokens) {
    KVC_ASSERT(!ix->indexed[id]);
    int64_t b = home(ix, hash);
    for (; ix->buckets[b] >= 0; b = (b + 1) & ix->mask)
        if (kvci_hash128_equal(ix->keys[ix->buckets[b]].hash, hash)) return false;
    ix->buckets[b] = id;
    ix->keys[id].hash = hash;
    ix->keys[id].parent = parent;
    memcpy(ix->tokens + (int64_t)id * ix->block_tokens, tokens, (size_t)ix->block_tokens * sizeof(int32_t));
    ix->indexed[id] = 1;
    ix->n_indexed++;
    return true;
}

bool kvci_prefix_index_drop(kvc_prefix_index *ix, int32_t id) {
    if (ix->indexed == NULL || !ix->indexed[id]) return false;
    int64_t hole = home(ix, ix->keys[id].hash);
    while (ix->buckets[hole] != id) hole = (hole + 1) & ix->mask;
    ix->indexed[id] = 0;
    ix->n_indexed--;
    /* Backward shift: later members of the probe run move into the hole
     * unless their home lies cyclically in (hole, b]. */
    for (int64_t b = hole;;) {
        ix->buckets[hole] = -1;
        for (;;) {
            b = (b + 1) & ix->mask;
            if (ix->buckets[b] < 0) return true;
            int64_t h = home(ix, ix->keys[ix->buckets[b]].hash);
            bool stays = hole <= b ? (hole < h && h <= b) : (hole < h || h <= b);
            if (!stays) break;
        }
        ix->buckets[hole] = ix->buckets[b];
        hole = b;
    }
}

void kvci_prefix_index_clear(kvc_prefix_index *ix) {
    if (ix->indexed == NULL) return;
    for (int64_t b = 0; b <= ix->mask; b++) ix->buckets[b] = -1;
    memset(ix->indexed, 0, (size_t)ix->num_blocks);
    ix->n_indexed = 0;
}
