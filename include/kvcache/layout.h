/* kvcache block layouts: the physical order of the blocks of a paged cache.
 * Below both the cache layer (cache.h: cache descriptions and storage) and
 * the ops layer (ops.h: the cache writes and attention), so that neither
 * depends on the other's header for this one name. Behaviour: docs/ops.md
 * (AO 2.4) and docs/cache.md. */
#ifndef KVCACHE_LAYOUT_H
#define KVCACHE_LAYOUT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Physical layout of the blocks of a paged cache: the one name of each
 * layout, used by cache descriptions, the cache writes and attention.
 * Cache descriptions (kvc_cache_entry.layout, cache.h) take BNBSND, BNNBSD
 * and BNNDBS (attention entries of one dim); NZ is for callers of the ops. */
typedef enum kvc_block_layout {
    KVC_BLOCK_BNBSND = 0, /* block-major: [blocks, block_size, heads, *dim] (attention also reads [.., heads*dim]) */
    KVC_BLOCK_BNNBSD = 1, /* head-major: [blocks, heads, block_size, *dim] */
    KVC_BLOCK_NZ = 2,     /* ops only: logical [blocks, block_size, heads, dim] in tiles [blocks, heads, dim/c0,
                           * block_size, c0] */
    KVC_BLOCK_BNNDBS = 3  /* keys in lanes: [blocks, heads, dim, block_size] (a key's channel d every block_size
                           * elements); attention's block_layout BNNDBS reads K so and V head-major (BNNBSD); other
                           * K/V pairs and strides: kvc_paged_kv (ops.h) */
} kvc_block_layout;

#ifdef __cplusplus
}
#endif

#endif
