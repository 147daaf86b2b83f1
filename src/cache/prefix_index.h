/* Internal: the prefix index of one single-type manager. A cached block is
 * found by the chained hash of the tokens it covers (XXH3-128 over the
 * parent's hash and the block's token ids; the first parent is the request's
 * salted seed) and verified before it is returned: it keeps its own token ids
 * and its parent's hash, and a hash match whose tokens or parent differ is a
 * miss. Buckets use open addressing with linear probing and backward-shift
 * deletion. Memory follows the blocks actually indexed: the indexed blocks'
 * keys and token ids are entries packed in [0, n_indexed) of arrays that
 * grow by doubling (kvci_prefix_index_reserve, before inserting); only a
 * zeroed map of 4 bytes per pool block is sized at creation. */
#ifndef KVC_CACHE_PREFIX_INDEX_H
#define KVC_CACHE_PREFIX_INDEX_H

#include <stdbool.h>
#include <stdint.h>
#include <xxhash.h>

#include "kvcache/base.h"

typedef XXH128_hash_t kvc_hash128;

/* What identifies an indexed block, kept together so that a lookup reads
 * one 32-byte record per candidate. */
typedef struct kvc_prefix_key {
    kvc_hash128 hash;   /* the block's chained hash */
    kvc_hash128 parent; /* its parent's hash (the seed for a first block) */
} kvc_prefix_key;

typedef struct kvc_prefix_index {
    int64_t block_tokens; /* tokens one hashed block covers */
    int64_t num_blocks;
    int32_t *entry_of;    /* [num_blocks] 1 + entry of each indexed block, 0 when not indexed (zeroed
                           * at creation: untouched pages cost nothing) */
    int64_t n_indexed;    /* entries in use */
    int64_t cap;          /* entries allocated, <= num_blocks */
    kvc_prefix_key *keys; /* [cap] hash and parent hash of each entry */
    int32_t *blocks;      /* [cap] block id of each entry */
    int32_t *tokens;      /* [cap, block_tokens] token ids of each entry */
    int32_t *buckets;     /* [mask + 1] entry or -1 */
    int64_t mask;         /* buckets - 1, a power of two >= 2 cap */
    uint8_t *buf;         /* [16 + 4 block_tokens] bytes hashed for one block */
} kvc_prefix_index;

/* The block hash: the test build may replace it to force collisions. */
typedef kvc_hash128 (*kvc_prefix_hash_fn)(const void *bytes, size_t n);
extern kvc_prefix_hash_fn kvc_prefix_hash_override; /* NULL: XXH3-128 */

kvc_status kvci_prefix_index_init(kvc_prefix_index *ix, int64_t num_blocks, int64_t block_tokens);
void kvci_prefix_index_release(kvc_prefix_index *ix);
/* Seed of a request's chains: the engine salt and the request's cache salt
 * (cache_salt_len bytes, NUL bytes included; NULL or 0 bytes: none). */
kvc_hash128 kvci_prefix_seed(uint64_t engine_salt, const void *cache_salt, int64_t cache_salt_len);
/* Hash of a block with these token ids (block_tokens of them) after parent. */
kvc_hash128 kvci_prefix_block_hash(kvc_prefix_index *ix, kvc_hash128 parent, const int32_t *tokens);
/* The verified block with this hash, parent and tokens, or -1. */
int32_t kvci_prefix_index_find(const kvc_prefix_index *ix, kvc_hash128 hash, kvc_hash128 parent, const int32_t *tokens);
/* Room for n more entries (the arrays double, up to num_blocks); KVC_ENOMEM
 * leaves the index as it was. */
kvc_status kvci_prefix_index_reserve(kvc_prefix_index *ix, int64_t n);
/* Indexes block id under hash, in room reserved before (false, nothing
 * changed, when the hash is already indexed: the first block computed for a
 * content stays its copy). */
bool kvci_prefix_index_insert(kvc_prefix_index *ix, int32_t id, kvc_hash128 hash, kvc_hash128 parent,
                              const int32_t *tokens);
/* Drops a block from the index (no-op when it is not indexed); true if it was. */
bool kvci_prefix_index_drop(kvc_prefix_index *ix, int32_t id);
/* Drops every block (the arrays keep their size). */
void kvci_prefix_index_clear(kvc_prefix_index *ix);

static inline bool kvci_prefix_index_has(const kvc_prefix_index *ix, int32_t id) {
    return ix->entry_of != NULL && ix->entry_of[id] != 0;
}
/* Token ids of entry e. */
static inline const int32_t *kvci_prefix_index_tokens(const kvc_prefix_index *ix, int64_t e) {
    return ix->tokens + e * ix->block_tokens;
}

static inline bool kvci_hash128_equal(kvc_hash128 a, kvc_hash128 b) { return XXH128_isEqual(a, b) != 0; }

#endif
