/* Mamba (fixed-size recurrent state): one state block per request after its
 * prefill, 1 + next_n from its first decode on (spec §4.5). */
#include "base/internal.h"
#include "cache/manager_type.h"

static kvc_status mamba_validate_entry(const kvc_cache_entry *e, int32_t layer_idx) {
    if (!e->is_state)
        return kvc_fail(KVC_EINVAL, "layer %d, cache %s: attn_type Mamba needs a state entry (is_state with shape)",
                        layer_idx, e->name);
    if (e->block_size != 1)
        return kvc_fail(KVC_EINVAL, "layer %d, cache %s: block_size %lld of a Mamba entry must be 1", layer_idx,
                        e->name, (long long)e->block_size);
    if (e->n_shape < 1 || e->n_shape > KVC_MAX_DIMS)
        return kvc_fail(KVC_EINVAL, "layer %d, cache %s: shape must have 1 to %d values (has %d)", layer_idx, e->name,
                        KVC_MAX_DIMS, e->n_shape);
    for (int32_t i = 0; i < e->n_shape; i++)
        if (e->shape[i] <= 0)
            return kvc_fail(KVC_EINVAL, "layer %d, cache %s: shape[%d] %lld must be positive", layer_idx, e->name, i,
                            (long long)e->shape[i]);
    if (e->next_n < 0 || e->next_n > KVC_MAX_NEXT_N)
        return kvc_fail(KVC_EINVAL, "layer %d, cache %s: next_n %lld must be in [0, " KVC_STR(KVC_MAX_NEXT_N) "]", layer_idx, e->name,
                        (long long)e->next_n);
    if (e->allocator != KVC_ALLOC_HBM)
        return kvc_fail(KVC_EINVAL, "layer %d, cache %s: a Mamba entry must use the HBM allocator", layer_idx,
                        e->name);
    return KVC_OK;
}

static void mamba_pre_allocate(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens,
                               int64_t reserved_tokens, int64_t *need, bool *ok) {
    (void)num_tokens;
    (void)reserved_tokens;
    int64_t existing = kvc_req_blocks_len(t);
    int64_t target = existing == 0 ? 1 : 1 + m->group.next_n;
    *need = kvc_max64(0, target - existing);
    *ok = *need <= kvc_block_pool_num_free(m->pool);
}

static int64_t mamba_fixed_blocks(const kvc_cache_group *g, int64_t concurrency, int64_t next_n) {
    (void)g;
    return concurrency * (1 + next_n) + 1;
}

static int64_t mamba_max_table_len(const kvc_cache_group *g, int64_t max_model_len) {
    (void)max_model_len;
    return 1 + g->next_n;
}

const kvc_manager_type kvc_mamba_type = {
    .attn_type = KVC_ATTN_MAMBA,
    .name = "Mamba",
    .fixed_size = true,
    .has_slot_mapping = false,
    .validate_entry = mamba_validate_entry,
    .num_skipped_tokens = kvc_no_skipped_tokens,
    .pre_allocate = mamba_pre_allocate,
    .leading_nulls = kvc_no_leading_nulls,
    .fixed_blocks = mamba_fixed_blocks,
    .max_table_len = mamba_max_table_len,
};
