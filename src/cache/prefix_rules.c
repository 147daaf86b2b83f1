/* Prefix-caching steps shared by the types that keep one block per
 * block_size positions (FullAttention, SlidingWindow): the query's hash
 * chain, the verified lookup, and hashing a request's computed blocks. */
#include "base/internal.h"
#include "cache/manager_type.h"

kvc_hash128 kvci_prefix_chain_at(kvc_single_manager *m, const kvc_prefix_query *q, int64_t i) {
    int64_t bt = m->index.block_tokens;
    KVC_ASSERT(i < m->query_cap && (i + 1) * bt <= q->n_tokens);
    for (; m->n_chain <= i; m->n_chain++) {
        kvc_hash128 parent = m->n_chain == 0 ? q->seed : m->chain[m->n_chain - 1];
        m->chain[m->n_chain] = kvci_prefix_block_hash(&m->index, parent, q->tokens + m->n_chain * bt);
    }
    return m->chain[i];
}

int32_t kvci_prefix_lookup(kvc_single_manager *m, const kvc_prefix_query *q, int64_t i) {
    kvc_hash128 hash = kvci_prefix_chain_at(m, q, i);
    kvc_hash128 parent = i == 0 ? q->seed : m->chain[i - 1];
    return kvci_prefix_index_find(&m->index, hash, parent, q->tokens + i * m->index.block_tokens);
}

void kvci_paged_cache_computed(kvc_single_manager *m, kvc_req_blocks *t, const int32_t *tokens, int64_t computed) {
    int64_t bt = m->index.block_tokens;
    int64_t n_full = kvci_min64(computed / bt, t->len);
    for (; t->n_hashed < n_full; t->n_hashed++) {
        const int32_t *block_tokens = tokens + t->n_hashed * bt;
        kvc_hash128 hash = kvci_prefix_block_hash(&m->index, t->chain, block_tokens);
        int32_t id = t->ids[t->n_hashed];
        if (id != KVC_NULL_BLOCK && !kvci_prefix_index_has(&m->index, id))
            kvci_single_manager_index(m, id, hash, t->chain, block_tokens);
        t->chain = hash;
    }
}

int64_t kvci_windowed_hit_length(kvc_single_manager *m, const kvc_prefix_query *q, int64_t max_len) {
    int64_t bs = m->group.block_size;
    int64_t end = max_len / bs;
    for (int64_t i = end - 1; i >= 0; i--) {
        int32_t id = kvci_prefix_lookup(m, q, i);
        if (id < 0) {
            end = i;
            continue;
        }
        m->hit_ids[i] = id;
        if (i <= kvci_type_skipped_tokens(m, end * bs) / bs) {
            for (int64_t j = 0; j < i; j++) m->hit_ids[j] = KVC_NULL_BLOCK;
            m->n_hit = end;
            return end * bs;
        }
    }
    m->n_hit = 0;
    return 0;
}

void kvci_single_manager_index(kvc_single_manager *m, int32_t id, kvc_hash128 hash, kvc_hash128 parent,
                               const int32_t *tokens) {
    if (!kvci_prefix_index_insert(&m->index, id, hash, parent, tokens)) return;
    kvci_block_pool_mark_cached(m->pool, id, m->key_index);
    kvci_kv_events_record(m->events, KVC_KV_EVENT_STORED, m->key_index, id, m->index.block_tokens, hash, parent);
}

kvc_status kvci_single_manager_reserve_index(kvc_single_manager *m, const kvc_req_blocks *t, int64_t computed) {
    return m->caching
               ? kvci_prefix_index_reserve(&m->index, kvci_max64(computed / m->index.block_tokens - t->n_hashed, 0))
               : KVC_OK;
}

void kvci_single_manager_clear_index(kvc_single_manager *m) {
    if (!m->caching) return;
    for (int64_t e = 0; e < m->index.n_indexed; e++) kvci_block_pool_mark_cached(m->pool, m->index.blocks[e], -1);
    kvci_prefix_index_clear(&m->index);
}
