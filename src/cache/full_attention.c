/* FullAttention: every position stays backed until the request is freed. */
#include "base/internal.h"
#include "cache/manager_type.h"

/* A hit is the longest run of cached blocks from position 0. */
static int64_t full_hit_length(kvc_single_manager *m, const kvc_prefix_query *q, int64_t max_len) {
    int64_t n = max_len / m->group.block_size, i = 0;
    for (; i < n; i++) {
        int32_t id = kvc_prefix_lookup(m, q, i);
        if (id < 0) break;
        m->hit_ids[i] = id;
    }
    m->n_hit = i;
    return i * m->group.block_size;
}

const kvc_manager_type kvc_full_attention_type = {
    .attn_type = KVC_ATTN_FULL,
    .name = "FullAttention",
    .fixed_size = false,
    .has_slot_mapping = true,
    .state_hits = false,
    .reserves_decode = true,
    .validate_entry = kvc_validate_attention_entry,
    .num_skipped_tokens = kvc_no_skipped_tokens,
    .blocks_needed = kvc_positions_blocks_needed,
    .leading_nulls = kvc_no_leading_nulls,
    .fixed_blocks = NULL,
    .max_table_len = kvc_positions_table_len,
    .grow = kvc_single_manager_append,
    .hit_length = full_hit_length,
    .cache_computed = kvc_paged_cache_computed,
};
