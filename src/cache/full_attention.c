/* FullAttention: every position stays backed until the request is freed. */
#include "base/internal.h"
#include "cache/manager_type.h"

const kvc_manager_type kvc_full_attention_type = {
    .attn_type = KVC_ATTN_FULL,
    .name = "FullAttention",
    .fixed_size = false,
    .has_slot_mapping = true,
    .validate_entry = kvc_validate_attention_entry,
    .num_skipped_tokens = kvc_no_skipped_tokens,
    .pre_allocate = kvc_default_pre_allocate,
    .leading_nulls = kvc_no_leading_nulls,
    .fixed_blocks = NULL,
    .max_table_len = kvc_positions_table_len,
};
