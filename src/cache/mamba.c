/* Mamba (fixed-size recurrent state): one state block per request after its
 * prefill, 1 + next_n from its first decode on (KM 4.5). */
#include "base/internal.h"
#include "cache/manager_type.h"

static kvc_status mamba_validate_entry(const kvc_cache_entry *e, int32_t layer_idx) {
    if (!e->is_state)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: attn_type Mamba needs a state entry (is_state with shape)",
                         layer_idx, e->name);
    if (e->block_size != 1)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: block_size %lld of a Mamba entry must be 1", layer_idx,
                         e->name, (long long)e->block_size);
    if (e->n_shape < 1 || e->n_shape > KVC_MAX_DIMS)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: shape must have 1 to %d values (has %d)", layer_idx, e->name,
                         KVC_MAX_DIMS, e->n_shape);
    for (int32_t i = 0; i < e->n_shape; i++)
        if (e->shape[i] <= 0)
            return kvci_fail(KVC_EINVAL, "layer %d, cache %s: shape[%d] %lld must be positive", layer_idx, e->name, i,
                             (long long)e->shape[i]);
    if (e->next_n < 0 || e->next_n > KVC_MAX_NEXT_N)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: next_n %lld must be in [0, " KVC_STR(KVC_MAX_NEXT_N) "]",
                         layer_idx, e->name, (long long)e->next_n);
    if (e->allocator != KVC_ALLOC_HBM)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: a Mamba entry must use the HBM allocator", layer_idx,
                         e->name);
    return KVC_OK;
}

/* Under prefix caching, a request whose state block was kept as the
 * snapshot of the state at a snapshot position moves to a fresh block before
 * computing past it (the snapshot stays cached; the step copies it). */
static bool mamba_moves_off_snapshot(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens) {
    return m->caching && t->len > 0 && kvci_prefix_index_has(&m->index, t->ids[0]) &&
           num_tokens > t->n_hashed * m->index.block_tokens;
}

static int64_t mamba_blocks_needed(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens) {
    int64_t target = t->len == 0 ? 1 : 1 + m->group.next_n;
    return kvci_max64(0, target - t->len) + (mamba_moves_off_snapshot(m, t, num_tokens) ? 1 : 0);
}

static void mamba_grow(kvc_single_manager *m, kvc_req_blocks *t, int64_t n, int64_t num_tokens) {
    if (mamba_moves_off_snapshot(m, t, num_tokens)) {
        int32_t fresh;
        kvci_single_manager_take(m, 1, &fresh);
        if (t->state_source != KVC_NULL_BLOCK) kvci_single_manager_give(m, &t->state_source, 1);
        t->state_source = t->ids[0]; /* the table's hold moves to the copy source */
        t->ids[0] = fresh;
        n--;
    }
    kvci_single_manager_append(m, t, n);
}

/* A state can be reused only where a snapshot of exactly that prefix was
 * kept: the largest snapshot position L <= max_len that is cached. */
static int64_t mamba_hit_length(kvc_single_manager *m, const kvc_prefix_query *q, int64_t max_len) {
    int64_t interval = m->index.block_tokens;
    for (int64_t k = max_len / interval; k > 0; k--) {
        int32_t id = kvci_prefix_lookup(m, q, k - 1);
        if (id >= 0) {
            m->hit_ids[0] = id;
            m->n_hit = 1;
            return k * interval;
        }
    }
    m->n_hit = 0;
    return 0;
}

/* The copy source is no longer needed once a step is computed; at a
 * snapshot position the request's state block is indexed as the snapshot
 * of the prefix computed so far. A report short of the last allocation (a
 * step reported after the next one was scheduled, or part of a step) says
 * nothing of the state block, which that allocation's step writes in
 * place, nor frees the copy source it reads: the report covering it does. */
static void mamba_cache_computed(kvc_single_manager *m, kvc_req_blocks *t, const int32_t *tokens, int64_t computed) {
    if (computed < t->scheduled) return;
    if (t->state_source != KVC_NULL_BLOCK) {
        kvci_single_manager_give(m, &t->state_source, 1);
        t->state_source = KVC_NULL_BLOCK;
    }
    int64_t interval = m->index.block_tokens;
    kvc_hash128 parent = t->chain;
    bool advanced = false;
    for (; (t->n_hashed + 1) * interval <= computed; t->n_hashed++, advanced = true) {
        parent = t->chain;
        t->chain = kvci_prefix_block_hash(&m->index, parent, tokens + t->n_hashed * interval);
    }
    if (advanced && computed == t->n_hashed * interval && t->len > 0 && !kvci_prefix_index_has(&m->index, t->ids[0]))
        kvci_single_manager_index(m, t->ids[0], t->chain, parent, tokens + (t->n_hashed - 1) * interval);
}

static int64_t mamba_fixed_blocks(const kvc_cache_group *g, int64_t concurrency, int64_t next_n) {
    (void)g;
    return concurrency * (1 + next_n) + 1;
}

static int64_t mamba_max_table_len(const kvc_cache_group *g, int64_t max_model_len) {
    (void)max_model_len;
    return 1 + g->next_n;
}

/* A prefill reads the one state block, a decode step 1 + next_n of them. */
static int64_t mamba_step_width(const kvc_cache_group *g, int64_t max_model_len, bool is_prefill) {
    (void)max_model_len;
    return is_prefill ? 1 : 1 + g->next_n;
}

static bool mamba_has_slot_mapping(const kvc_cache_group *g) {
    (void)g;
    return false; /* states are addressed by block, not by token slot */
}

static int64_t mamba_worst_blocks(const kvc_cache_group *g, int64_t positions) {
    (void)positions;
    return 1 + g->next_n;
}

/* INV-MB-1: 1 state block after a prefill, 1 + next_n from the first decode. */
static kvc_status mamba_check_table(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t rid) {
    if (t->len == 0 || t->len == 1 || t->len == 1 + m->group.next_n) return KVC_OK;
    return kvci_fail(KVC_EINTERNAL, "%s: INV-MB-1 request %lld holds %lld state blocks (1 or %lld expected)",
                     m->group.key, (long long)rid, (long long)t->len, (long long)(1 + m->group.next_n));
}

const kvc_manager_type kvc_mamba_type = {
    .attn_type = KVC_ATTN_MAMBA,
    .name = "Mamba",
    .fixed_size = true,
    .reserves_decode = false, /* fixed-size pool */
    .state_hits = true,       /* the snapshot is the copy source; the table gets a fresh block */
    .null_prefix = false,
    .validate_entry = mamba_validate_entry,
    .blocks_needed = mamba_blocks_needed,
    .fixed_blocks = mamba_fixed_blocks,
    .max_table_len = mamba_max_table_len,
    .step_width = mamba_step_width,
    .has_slot_mapping = mamba_has_slot_mapping,
    .worst_blocks = mamba_worst_blocks,
    .check_table = mamba_check_table,
    .grow = mamba_grow,
    .hit_length = mamba_hit_length,
    .cache_computed = mamba_cache_computed,
};
