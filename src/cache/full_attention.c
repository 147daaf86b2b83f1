/* FullAttention: every position stays backed until the request is freed. */
#include "base/internal.h"
#include "cache/manager_type.h"

/* A hit is the longest run of cached blocks from position 0. */
static int64_t full_hit_length(kvc_single_manager *m, const kvc_prefix_query *q, int64_t max_len) {
    int64_t n = max_len / m->group.block_size, i = 0;
    for (; i < n; i++) {
        int32_t id = kvci_prefix_lookup(m, q, i);
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
    .reserves_decode = true,
    .state_hits = false,
    .null_prefix = false,
    .validate_entry = kvci_validate_attention_entry,
    .blocks_needed = kvci_positions_blocks_needed,
    .hit_length = full_hit_length,
    /* every optional slot takes its default: all positions stay backed */
};
