/* SlidingWindow (window W = keys a query sees, itself included): the logical
 * table stays aligned with positions, but only blocks inside the window are
 * backed; older ones become the null block (KM 4.4). */
#include "base/internal.h"
#include "cache/manager_type.h"

/* Prefill layout of num_tokens positions: table length, leading nulls, real
 * blocks. Keeps the last W + 1 tokens (the conservative prefill of KM 4.4). */
typedef struct sw_layout {
    int64_t total, first_valid, valid;
} sw_layout;

static sw_layout sw_prefill_layout(int64_t num_tokens, int64_t window, int64_t block_size) {
    if (num_tokens == 0) return (sw_layout){0, 0, 0};
    int64_t last = num_tokens - 1;
    int64_t last_block = last / block_size;
    int64_t first_valid = kvci_max64(0, last - window) / block_size;
    return (sw_layout){kvci_cdiv(num_tokens, block_size), first_valid, last_block - first_valid + 1};
}

static kvc_status sw_validate_entry(const kvc_cache_entry *e, int32_t layer_idx) {
    if (e->sliding_window <= 0 || e->sliding_window > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: sliding_window %lld must be set to a number of keys in [1, 2^31)",
                        layer_idx, e->name, (long long)e->sliding_window);
    return kvci_validate_attention_entry(e, layer_idx);
}

static int64_t sw_skipped_tokens(const kvc_single_manager *m, int64_t computed) {
    return kvci_max64(0, computed - m->group.sliding_window + 1);
}

static int64_t sw_blocks_needed(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens) {
    if (t->len > 0) return kvci_positions_blocks_needed(m, t, num_tokens);
    return sw_prefill_layout(num_tokens, m->group.sliding_window, m->group.block_size).valid;
}

static int64_t sw_leading_nulls(const kvc_single_manager *m, int64_t num_tokens) {
    return sw_prefill_layout(num_tokens, m->group.sliding_window, m->group.block_size).first_valid;
}

/* Real blocks a request holds for `positions` positions: the window's, +1
 * for a window straddling a block boundary (INV-SW-4). */
static int64_t sw_worst_blocks(const kvc_cache_group *g, int64_t positions) {
    return kvci_min64(kvci_cdiv(positions, g->block_size), kvci_cdiv(g->sliding_window, g->block_size) + 1);
}

/* cdiv(W + 2 next_n, bs) per request, +1 for a window straddling a block
 * boundary, +1 for the null block. */
static int64_t sw_fixed_blocks(const kvc_cache_group *g, int64_t concurrency, int64_t next_n) {
    int64_t per_request = kvci_cdiv(g->sliding_window + 2 * next_n, g->block_size);
    return concurrency * (per_request + 1) + 1;
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
    .blocks_needed = sw_blocks_needed,
    .leading_nulls = sw_leading_nulls,
    .fixed_blocks = sw_fixed_blocks,
    .worst_blocks = sw_worst_blocks,
    .hit_length = kvci_windowed_hit_length,
    /* optional slots left to their defaults: table length, step width, slot mapping, grow, cache_computed */
};
