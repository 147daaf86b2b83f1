/* The single-type manager: the operations every attention type shares
 * (KM 4.2), parameterised by the type's vtable. */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h"

kvc_status kvci_single_manager_init(kvc_single_manager *m, const kvc_cache_group *g, int64_t num_blocks,
                                    int64_t max_model_len, int64_t hash_tokens, kvc_block_pool *shared) {
    const kvc_manager_type *type = kvci_manager_type_find(g->attn_type);
    KVC_ASSERT(type != NULL);
    *m = (kvc_single_manager){
        .type = type, .group = *g, .max_model_len = max_model_len, .pool = shared, .owns_pool = shared == NULL};
    m->max_table = kvci_type_max_table_len(type, g, max_model_len);
    kvc_status st = shared == NULL ? kvc_block_pool_create(num_blocks, &m->pool) : KVC_OK;
    if (st != KVC_OK) return kvci_fail(st, "manager %s: %s", g->key, kvc_last_error());
    /* A call moves at most the real blocks of one table: distinct blocks of the pool. */
    int64_t scratch = kvci_max64(kvci_min64(m->max_table, num_blocks), 1);
    m->scratch = kvci_malloc((size_t)scratch * sizeof *m->scratch);
    if (m->scratch == NULL) {
        kvci_single_manager_release(m);
        return kvci_fail(KVC_ENOMEM, "manager %s: cannot allocate a scratch of %lld block ids", g->key,
                         (long long)scratch);
    }
    if (hash_tokens <= 0) return KVC_OK;
    m->caching = true;
    st = kvci_prefix_index_init(&m->index, num_blocks, hash_tokens);
    if (st != KVC_OK) {
        kvci_single_manager_release(m);
        return kvci_fail(st, "manager %s: %s", g->key, kvc_last_error());
    }
    return KVC_OK;
}

void kvci_single_manager_release(kvc_single_manager *m) {
    if (m->owns_pool) kvc_block_pool_destroy(m->pool);
    kvci_free(m->scratch);
    kvci_prefix_index_release(&m->index);
    kvci_free(m->chain);
    kvci_free(m->hit_ids);
    kvci_free(m->poison);
    m->poison = NULL;
    m->pool = NULL;
    m->scratch = m->hit_ids = NULL;
    m->chain = NULL;
    m->query_cap = 0;
}

/* Capacity for len entries: at least double the old one, at most max. */
static int64_t grown_cap(int64_t cap, int64_t len, int64_t max) {
    return kvci_min64(kvci_max64(len, kvci_max64(2 * cap, 4)), max);
}

kvc_status kvci_req_blocks_reserve(const kvc_single_manager *m, kvc_req_blocks *t, int64_t len) {
    KVC_ASSERT(len <= m->max_table);
    if (len <= t->cap) return KVC_OK;
    int64_t cap = grown_cap(t->cap, len, m->max_table);
    if (!KVCI_RESIZE(t->ids, cap))
        return kvci_fail(KVC_ENOMEM, "manager %s: cannot allocate a block table of %lld entries", m->group.key,
                         (long long)cap);
    t->cap = cap;
    return KVC_OK;
}

kvc_status kvci_single_manager_reserve_query(kvc_single_manager *m, int64_t len) {
    if (!m->caching) return KVC_OK;
    int64_t n = kvci_max64(len / m->index.block_tokens, 1); /* chain hashes and hit entries of len tokens */
    if (n <= m->query_cap) return KVC_OK;
    int64_t cap = grown_cap(m->query_cap, n, INT64_MAX);
    if (!KVCI_RESIZE(m->chain, cap) || !KVCI_RESIZE(m->hit_ids, cap))
        return kvci_fail(KVC_ENOMEM, "manager %s: cannot allocate the prefix-cache scratch for a prompt of %lld blocks",
                         m->group.key, (long long)cap);
    m->query_cap = cap;
    return KVC_OK;
}

int64_t kvci_positions_blocks_needed(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens) {
    return kvci_max64(0, kvci_cdiv(num_tokens, m->group.block_size) - t->len);
}

int64_t kvci_span_worst_blocks(const kvc_cache_group *g, int64_t span, int64_t positions) {
    return kvci_min64(kvci_cdiv(positions, g->block_size), kvci_cdiv(span, g->block_size) + 1);
}

int64_t kvci_span_fixed_blocks(const kvc_cache_group *g, int64_t span, int64_t concurrency, int64_t next_n) {
    int64_t per_request = kvci_cdiv(span + 2 * next_n, g->block_size);
    return concurrency * (per_request + 1) + 1;
}

void kvci_single_manager_give(kvc_single_manager *m, const int32_t *ids, int64_t n) {
    kvc_status st =
        m->caching ? kvci_block_pool_give_uncached_first(m->pool, ids, n) : kvc_block_pool_give(m->pool, ids, n);
    KVC_ASSERT(st == KVC_OK);
    (void)st;
}

void kvci_single_manager_take(kvc_single_manager *m, int64_t n, int32_t *out) {
    kvc_status st = kvc_block_pool_take(m->pool, n, out);
    KVC_ASSERT(st == KVC_OK);
    (void)st;
    for (int64_t i = 0; i < n; i++)
        for (int32_t e = 0; e < m->n_poison; e++) kvci_storage_poison_block(m->poison[e], out[i]);
    if (!m->caching) return;
    for (int64_t i = 0; i < n; i++) {
        int32_t owner = kvci_block_pool_cached_by(m->pool, out[i]); /* this key or, in a shared pool, another */
        if (owner < 0) continue;
        kvc_single_manager *o = &m->peers[owner];
        kvc_hash128 hash = o->index.keys[o->index.entry_of[out[i]] - 1].hash;
        kvci_prefix_index_drop(&o->index, out[i]);
        kvci_block_pool_mark_cached(m->pool, out[i], -1);
        kvci_kv_events_record(o->events, KVC_KV_EVENT_REMOVED, owner, out[i], o->index.block_tokens, hash,
                              (kvc_hash128){0});
        o->evictions++;
    }
}

void kvci_single_manager_remove_skipped(kvc_single_manager *m, kvc_req_blocks *t, int64_t total_computed) {
    int64_t skipped = kvci_type_skipped_tokens(m, total_computed);
    if (skipped <= 0 || !t->present) return;
    int64_t k = kvci_min64(skipped / m->group.block_size, t->len);
    int64_t n_release = k - t->n_null; /* real blocks at logical indices n_null .. k-1 */
    if (n_release <= 0) return;
    /* The pool receives them highest logical index first. */
    for (int64_t i = 0; i < n_release; i++) {
        m->scratch[i] = t->ids[k - 1 - i];
        t->ids[k - 1 - i] = KVC_NULL_BLOCK;
    }
    t->n_null = k;
    kvci_single_manager_give(m, m->scratch, n_release);
}

void kvci_single_manager_open(kvc_single_manager *m, kvc_req_blocks *t, uint64_t generation, kvc_hash128 seed) {
    if (t->present) return;
    *t = (kvc_req_blocks){
        .ids = t->ids, .cap = t->cap, .present = true, .generation = generation, .seed = seed, .chain = seed};
    m->n_entries++;
}

kvc_status kvci_key_hit_reserve(const kvc_single_manager *m, kvc_key_hit *h, int64_t n) {
    if (n <= h->cap) return KVC_OK;
    int64_t cap = grown_cap(h->cap, n, INT64_MAX);
    if (!KVCI_RESIZE(h->ids, cap) || !KVCI_RESIZE(h->hashes, cap))
        return kvci_fail(KVC_ENOMEM, "manager %s: cannot allocate room to keep a prefix hit of %lld blocks",
                         m->group.key, (long long)cap);
    h->cap = cap;
    return KVC_OK;
}

void kvci_single_manager_keep_hit(const kvc_single_manager *m, int64_t hit_len, kvc_key_hit *h) {
    KVC_ASSERT(m->n_hit <= h->cap);
    int64_t n_hashed = hit_len / m->index.block_tokens;
    KVC_ASSERT(n_hashed > 0 && n_hashed <= m->n_chain);
    h->end = m->chain[n_hashed - 1];
    for (int64_t i = 0; i < m->n_hit; i++) {
        int32_t id = m->hit_ids[i];
        h->ids[i] = id;
        h->hashes[i] = id != KVC_NULL_BLOCK ? m->index.keys[m->index.entry_of[id] - 1].hash : (kvc_hash128){0};
    }
    h->n = m->n_hit;
}

bool kvci_single_manager_hit_valid(const kvc_single_manager *m, const kvc_key_hit *h) {
    for (int64_t i = 0; i < h->n; i++) {
        int32_t id = h->ids[i];
        if (id == KVC_NULL_BLOCK) continue;
        if (!kvci_prefix_index_has(&m->index, id) ||
            !kvci_hash128_equal(m->index.keys[m->index.entry_of[id] - 1].hash, h->hashes[i]))
            return false;
    }
    return true;
}

int64_t kvci_single_manager_hit_mismatch(const kvc_single_manager *m, const kvc_key_hit *h, const kvc_prefix_query *q,
                                         int64_t hit_len) {
    int64_t bt = m->index.block_tokens;
    int64_t first = m->type->state_hits ? hit_len / bt - 1 : 0; /* the prompt block of entry 0 */
    for (int64_t i = 0; i < h->n; i++) {
        if (h->ids[i] == KVC_NULL_BLOCK) continue;
        int64_t b = first + i, e = m->index.entry_of[h->ids[i]] - 1;
        KVC_ASSERT(e >= 0 && (b + 1) * bt <= q->n_tokens);
        bool parent_known = b == 0 || (i > 0 && h->ids[i - 1] != KVC_NULL_BLOCK);
        kvc_hash128 parent = b == 0 ? q->seed : i > 0 ? h->hashes[i - 1] : (kvc_hash128){0};
        if (memcmp(kvci_prefix_index_tokens(&m->index, e), q->tokens + b * bt, (size_t)bt * sizeof *q->tokens) != 0 ||
            (parent_known && !kvci_hash128_equal(m->index.keys[e].parent, parent)))
            return b;
    }
    return -1;
}

int64_t kvci_single_manager_hit_table_len(const kvc_single_manager *m, const kvc_key_hit *h) {
    return m->type->state_hits ? 0 : h->n;
}

int64_t kvci_single_manager_hit_free_blocks(const kvc_single_manager *m, const kvc_key_hit *h, int64_t from) {
    int64_t n = 0;
    for (int64_t i = from; i < h->n; i++) n += kvc_block_pool_is_free(m->pool, h->ids[i]);
    return n;
}

void kvci_single_manager_take_hit(kvc_single_manager *m, kvc_req_blocks *t, const kvc_key_hit *h, int64_t hit_len,
                                  int64_t from) {
    KVC_ASSERT(t->len == 0 && t->state_source == KVC_NULL_BLOCK &&
               (m->type->state_hits || kvci_max64(h->n, from) <= t->cap));
    t->n_hashed = hit_len / m->index.block_tokens;
    t->chain = h->end;
    for (int64_t i = from; i < h->n; i++) {
        int32_t id = h->ids[i];
        if (id != KVC_NULL_BLOCK) {
            kvc_status st = kvc_block_pool_ref(m->pool, id);
            KVC_ASSERT(st == KVC_OK);
            (void)st;
        }
    }
    if (m->type->state_hits) {
        if (h->n > 0) t->state_source = h->ids[0];
        return;
    }
    t->len = kvci_max64(h->n, from);
    for (int64_t i = 0; i < t->len; i++) {
        t->ids[i] = i >= from && i < h->n ? h->ids[i] : KVC_NULL_BLOCK;
        if (t->ids[i] == KVC_NULL_BLOCK) t->n_null = i + 1;
    }
}

void kvci_single_manager_skip_leading(const kvc_single_manager *m, kvc_req_blocks *t, int64_t computed) {
    if (t->len > 0) return;
    t->n_null = t->len = kvci_type_leading_nulls(m, computed);
    KVC_ASSERT(t->len <= t->cap || t->len == 0);
    for (int64_t i = 0; i < t->len; i++) t->ids[i] = KVC_NULL_BLOCK;
}

void kvci_single_manager_append(kvc_single_manager *m, kvc_req_blocks *t, int64_t n) {
    if (n == 0) return; /* the common decode step inside a block */
    KVC_ASSERT(t->len + n <= t->cap);
    kvci_single_manager_take(m, n, t->ids + t->len);
    t->len += n;
}

void kvci_single_manager_free(kvc_single_manager *m, kvc_req_blocks *t) {
    if (!t->present) return;
    int64_t n = kvci_req_blocks_real(t);
    const int32_t *real = n > 0 ? t->ids + t->n_null : NULL; /* an empty table may have no ids yet */
    if (m->caching) {
        /* Tail first: the last blocks of a sequence are evicted before its first. */
        for (int64_t i = 0; i < n; i++) m->scratch[i] = real[n - 1 - i];
        kvci_single_manager_give(m, m->scratch, n);
    } else {
        kvci_single_manager_give(m, real, n);
    }
    if (t->state_source != KVC_NULL_BLOCK) kvci_single_manager_give(m, &t->state_source, 1);
    *t = (kvc_req_blocks){.ids = t->ids, .cap = t->cap};
    m->n_entries--;
}

kvc_status kvci_validate_attention_entry(const kvc_cache_entry *e, int32_t layer_idx) {
    if (e->num_head <= 0)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: num_head %lld must be positive", layer_idx, e->name,
                         (long long)e->num_head);
    if (e->n_dims < 1 || e->n_dims > KVC_MAX_DIMS)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: dim must have 1 to %d values (has %d)", layer_idx, e->name,
                         KVC_MAX_DIMS, e->n_dims);
    for (int32_t i = 0; i < e->n_dims; i++)
        if (e->dim[i] <= 0)
            return kvci_fail(KVC_EINVAL, "layer %d, cache %s: dim[%d] %lld must be positive", layer_idx, e->name, i,
                             (long long)e->dim[i]);
    return KVC_OK;
}
