/* SlidingWindow (window W = keys a query sees, itself included): the logical
 * table stays aligned with positions; an allocation backs every position it
 * asks for (a prefill computes all its blocks, so they can be cached), and
 * the blocks that left the window become the null block at the request's
 * next allocation (KM 4.4; vLLM's SlidingWindowManager). */
#include "base/internal.h"
#include "cache/manager_type.h"

static kvc_status sw_validate_entry(const kvc_cache_entry *e, int32_t layer_idx) {
    if (e->sliding_window <= 0 || e->sliding_window > INT32_MAX)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: sliding_window %lld must be set to a number of keys in [1, 2^31)",
                         layer_idx, e->name, (long long)e->sliding_window);
    return kvci_validate_attention_entry(e, layer_idx);
}

static int64_t sw_skipped_tokens(const kvc_single_manager *m, int64_t computed) {
    return kvci_max64(0, computed - m->group.sliding_window + 1);
}

/* Real blocks a request holds for `positions` positions: the window's, +1
 * for a window straddling a block boundary (INV-SW-4). */
static int64_t sw_worst_blocks(const kvc_cache_group *g, int64_t positions) {
    return kvci_span_worst_blocks(g, g->sliding_window, positions);
}

static int64_t sw_fixed_blocks(const kvc_cache_group *g, int64_t concurrency, int64_t next_n) {
    return kvci_span_fixed_blocks(g, g->sliding_window, concurrency, next_n);
}

const kvc_manager_type kvc_sliding_window_type = {
    .attn_type = KVC_ATTN_SLIDING_WINDOW,
    .name = "SlidingWindow",
    .fixed_size = true,
    .reserves_decode = false, /* fixed-size pool */
    .state_hits = false,
    .null_prefix = true,
    .validate_entry = sw_validate_entry,
    .num_skipped_tokens = sw_skipped_tokens,
    .blocks_needed = kvci_positions_blocks_needed,
    .fixed_blocks = sw_fixed_blocks,
    .worst_blocks = sw_worst_blocks,
    .hit_length = kvci_windowed_hit_length,
    /* optional slots left to their defaults: table length, step width, slot mapping, grow, cache_computed */
};
