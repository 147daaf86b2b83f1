/* ChunkedLocal (chunk C; Llama 4's local layers): a query at position p sees
 * the keys [floor(p / C) * C, p], its own chunk up to itself. The table stays
 * aligned with positions like SlidingWindow's; an allocation backs every
 * position it asks for, and once `computed` tokens are cached the blocks
 * wholly before the chunk of the next query (position `computed`) become the
 * null block (vLLM's ChunkedLocalAttentionManager). C need not be a multiple
 * of the block size: a block straddling the chunk start stays real. */
#include "base/internal.h"
#include "cache/manager_type.h"

static kvc_status cl_validate_entry(const kvc_cache_entry *e, int32_t layer_idx) {
    if (e->attention_chunk_size <= 0 || e->attention_chunk_size > INT32_MAX)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: attention_chunk_size %lld must be set to a number of positions in "
                         "[1, 2^31)",
                         layer_idx, e->name, (long long)e->attention_chunk_size);
    return kvci_validate_attention_entry(e, layer_idx);
}

/* The positions before the chunk start of the next query. */
static int64_t cl_skipped_tokens(const kvc_single_manager *m, int64_t computed) {
    int64_t c = m->group.attention_chunk_size;
    return computed / c * c;
}

/* A request holds at most one chunk of C positions (+1 block when the chunk
 * straddles a block boundary). */
static int64_t cl_worst_blocks(const kvc_cache_group *g, int64_t positions) {
    return kvci_span_worst_blocks(g, g->attention_chunk_size, positions);
}

static int64_t cl_fixed_blocks(const kvc_cache_group *g, int64_t concurrency, int64_t next_n) {
    return kvci_span_fixed_blocks(g, g->attention_chunk_size, concurrency, next_n);
}

const kvc_manager_type kvc_chunked_local_type = {
    .attn_type = KVC_ATTN_CHUNKED_LOCAL,
    .name = "ChunkedLocal",
    .fixed_size = true,
    .reserves_decode = false, /* fixed-size pool */
    .state_hits = false,
    .null_prefix = true,
    .validate_entry = cl_validate_entry,
    .num_skipped_tokens = cl_skipped_tokens,
    .blocks_needed = kvci_positions_blocks_needed,
    .fixed_blocks = cl_fixed_blocks,
    .worst_blocks = cl_worst_blocks,
    /* a hit of L keeps real the blocks from floor(floor(L / C) * C / bs) on: rounding down keeps the block
     * that straddles the chunk start, so any block size is safe */
    .hit_length = kvci_windowed_hit_length,
    /* optional slots left to their defaults: table length, step width, slot mapping, grow, cache_computed */
};
