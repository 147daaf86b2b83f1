/* The single-type manager: the operations every attention type shares
 * (spec §4.2), parameterised by the type's vtable. */
#include "base/internal.h"
#include "cache/manager_type.h"

kvc_status kvc_single_manager_init(kvc_single_manager *m, const kvc_cache_group *g, int64_t num_blocks,
                                   int64_t max_model_len) {
    const kvc_manager_type *type = kvc_manager_type_find(g->attn_type);
    KVC_ASSERT(type != NULL);
    *m = (kvc_single_manager){.type = type, .group = *g, .max_model_len = max_model_len};
    m->max_table = type->max_table_len(g, max_model_len);
    kvc_status st = kvc_block_pool_create(num_blocks, &m->pool);
    if (st != KVC_OK) return kvc_fail(st, "manager %s: %s", g->key, kvc_last_error());
    m->next = kvc_malloc((size_t)num_blocks * sizeof *m->next);
    m->prev = kvc_malloc((size_t)num_blocks * sizeof *m->prev);
    /* One call never moves more blocks than a table holds or the pool has. */
    m->scratch = kvc_malloc((size_t)kvc_max64(kvc_min64(m->max_table, num_blocks), 1) * sizeof *m->scratch);
    if (m->next == NULL || m->prev == NULL || m->scratch == NULL) {
        kvc_single_manager_release(m);
        return kvc_fail(KVC_ENOMEM, "manager %s: cannot allocate its tables for %lld blocks", g->key,
                        (long long)num_blocks);
    }
    for (int64_t i = 0; i < num_blocks; i++) m->next[i] = m->prev[i] = -1;
    return KVC_OK;
}

void kvc_single_manager_release(kvc_single_manager *m) {
    kvc_block_pool_destroy(m->pool);
    kvc_free(m->next);
    kvc_free(m->prev);
    kvc_free(m->scratch);
    m->pool = NULL;
    m->next = NULL;
    m->prev = NULL;
    m->scratch = NULL;
}

void kvc_default_pre_allocate(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens,
                              int64_t reserved_tokens, int64_t *need, bool *ok) {
    int64_t required = kvc_cdiv(num_tokens, m->group.block_size);
    *need = kvc_max64(0, required - kvc_req_blocks_len(t));
    int64_t reserved = kvc_cdiv(reserved_tokens, m->group.block_size) * m->n_entries;
    *ok = *need <= kvc_block_pool_num_free(m->pool) - reserved;
}

int64_t kvc_no_skipped_tokens(const kvc_single_manager *m, int64_t computed) {
    (void)m;
    (void)computed;
    return 0;
}

int64_t kvc_no_leading_nulls(const kvc_single_manager *m, int64_t num_tokens) {
    (void)m;
    (void)num_tokens;
    return 0;
}

int64_t kvc_positions_table_len(const kvc_cache_group *g, int64_t max_model_len) {
    return kvc_cdiv(max_model_len, g->block_size);
}

void kvc_single_manager_remove_skipped(kvc_single_manager *m, kvc_req_blocks *t, int64_t total_computed) {
    int64_t skipped = m->type->num_skipped_tokens(m, total_computed);
    if (skipped <= 0 || !t->present) return;
    int64_t k = kvc_min64(skipped / m->group.block_size, kvc_req_blocks_len(t));
    int64_t n_release = k - t->n_null; /* real blocks at logical indices n_null .. k-1 */
    if (n_release <= 0) return;
    /* The pool receives them highest logical index first. */
    int32_t id = t->head;
    for (int64_t i = n_release - 1; i >= 0; i--) {
        m->scratch[i] = id;
        int32_t following = m->next[id];
        m->next[id] = -1;
        id = following;
    }
    t->head = id;
    t->n_null += n_release;
    t->n_real -= n_release;
    if (t->n_real == 0) t->tail = -1;
    kvc_status st = kvc_block_pool_give(m->pool, m->scratch, n_release);
    KVC_ASSERT(st == KVC_OK);
    (void)st;
}

void kvc_single_manager_allocate_new(kvc_single_manager *m, kvc_req_blocks *t, int64_t n, int64_t num_tokens,
                                     uint64_t generation) {
    if (!t->present) {
        *t = (kvc_req_blocks){.head = -1, .tail = -1, .present = true, .generation = generation};
        m->n_entries++;
    }
    if (n == 0) return; /* the common decode step inside a block */
    if (kvc_req_blocks_len(t) == 0) t->n_null = m->type->leading_nulls(m, num_tokens);
    KVC_ASSERT(kvc_req_blocks_len(t) + n <= m->max_table);
    kvc_status st = kvc_block_pool_take(m->pool, n, m->scratch);
    KVC_ASSERT(st == KVC_OK);
    (void)st;
    for (int64_t i = 0; i < n; i++) {
        int32_t id = m->scratch[i];
        if (t->tail < 0)
            t->head = id;
        else
            m->next[t->tail] = id;
        m->prev[id] = t->tail;
        t->tail = id;
    }
    t->n_real += n;
}

void kvc_single_manager_free(kvc_single_manager *m, kvc_req_blocks *t) {
    if (!t->present) return;
    int64_t n = 0;
    for (int32_t id = t->head; id >= 0;) {
        int32_t following = m->next[id];
        m->next[id] = -1;
        m->scratch[n++] = id;
        id = following;
    }
    KVC_ASSERT(n == t->n_real);
    kvc_status st = kvc_block_pool_give(m->pool, m->scratch, n);
    KVC_ASSERT(st == KVC_OK);
    (void)st;
    *t = (kvc_req_blocks){.head = -1, .tail = -1, .present = false};
    m->n_entries--;
}

void kvc_single_manager_table(const kvc_single_manager *m, const kvc_req_blocks *t, int32_t *out, int64_t cap) {
    int64_t i = 0;
    for (; i < t->n_null && i < cap; i++) out[i] = KVC_NULL_BLOCK;
    for (int32_t id = t->head; id >= 0 && i < cap; id = m->next[id]) out[i++] = id;
}

void kvc_single_manager_table_tail(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t n, int32_t *out) {
    KVC_ASSERT(n <= t->n_real);
    int32_t id = t->tail;
    for (int64_t i = n - 1; i >= 0; i--, id = m->prev[id]) out[i] = id;
}

kvc_status kvc_validate_attention_entry(const kvc_cache_entry *e, int32_t layer_idx) {
    if (e->num_head <= 0)
        return kvc_fail(KVC_EINVAL, "layer %d, cache %s: num_head %lld must be positive", layer_idx, e->name,
                        (long long)e->num_head);
    if (e->n_dims < 1 || e->n_dims > KVC_MAX_DIMS)
        return kvc_fail(KVC_EINVAL, "layer %d, cache %s: dim must have 1 to %d values (has %d)", layer_idx, e->name,
                        KVC_MAX_DIMS, e->n_dims);
    for (int32_t i = 0; i < e->n_dims; i++)
        if (e->dim[i] <= 0)
            return kvc_fail(KVC_EINVAL, "layer %d, cache %s: dim[%d] %lld must be positive", layer_idx, e->name, i,
                            (long long)e->dim[i]);
    return KVC_OK;
}
