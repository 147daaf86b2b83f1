/* The request-level manager (KM 5): one single-type manager per group key,
 * two-phase allocate_slots, free, queries. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "cache/manager_internal.h"

kvc_manager_params kvc_manager_default_params(void) {
    const char *poison = getenv("KVC_POISON_BLOCKS");
    return (kvc_manager_params){.max_model_len = 0,
                                .max_requests = 0,
                                .engine_next_n = -1,
                                .prefix_caching = false,
                                .prefix_salt = 0,
                                .state_snapshot_interval = 0,
                                .poison_new_blocks = poison != NULL && strcmp(poison, "1") == 0};
}

/* Every request with a token holds a block of each of its managers, so the
 * largest pool bounds the live requests in practice (capped at 65536). */
static int64_t default_max_requests(const kvc_block_plan *plan) {
    int64_t most = 256;
    for (int32_t g = 0; g < plan->n_groups; g++) most = kvci_max64(most, plan->groups[g].block_num - 1);
    return kvci_min64(most, 65536);
}

static kvc_status check_create_args(const kvc_model_cache_info *ci, const kvc_block_plan *plan,
                                    const kvc_manager_params *p, kvc_manager **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_manager_create: out must not be NULL");
    *out = NULL;
    if (ci == NULL || plan == NULL || p == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_manager_create: cache info, plan and params must not be NULL");
    kvc_status st = kvci_block_plan_check(plan);
    if (st != KVC_OK) return kvci_fail(st, "kvc_manager_create: %s", kvc_last_error());
    if (p->max_model_len <= 0 || p->max_model_len > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "max_model_len %lld must be in [1, 2^31)", (long long)p->max_model_len);
    if (p->max_requests < 0)
        return kvci_fail(KVC_EINVAL, "max_requests %lld must not be negative (0 = default)",
                         (long long)p->max_requests);
    if (p->state_snapshot_interval < 0 || p->state_snapshot_interval > p->max_model_len)
        return kvci_fail(KVC_EINVAL, "state_snapshot_interval %lld must be in [0, max_model_len %lld]",
                         (long long)p->state_snapshot_interval, (long long)p->max_model_len);
    return KVC_OK;
}

static int64_t gcd64(int64_t a, int64_t b) { return b == 0 ? a : gcd64(b, a % b); }

/* Tokens one hashed block covers in each group (0: caching off): the block
 * size of position-table types, the snapshot interval of state types. */
static kvc_status hash_tokens(const kvc_cache_groups *groups, const kvc_manager_params *p, int64_t *out) {
    int64_t lcm = 1;
    bool paged = false;
    for (int32_t g = 0; g < groups->n_groups; g++) {
        const kvc_manager_type *type = kvci_manager_type_find(groups->groups[g].attn_type);
        out[g] = 0;
        if (!p->prefix_caching || type->state_hits) continue;
        out[g] = groups->groups[g].block_size;
        int64_t bs = out[g], next = lcm / gcd64(lcm, bs);
        if (!kvci_mul64(next, bs, &lcm) || lcm > p->max_model_len) lcm = INT64_MAX;
        paged = true;
    }
    for (int32_t g = 0; g < groups->n_groups; g++) {
        const kvc_cache_group *grp = &groups->groups[g];
        if (!p->prefix_caching || !kvci_manager_type_find(grp->attn_type)->state_hits) continue;
        int64_t interval = p->state_snapshot_interval;
        if (interval == 0 && !paged)
            return kvci_fail(KVC_EINVAL,
                             "manager %s: prefix caching of a model without paged keys needs "
                             "state_snapshot_interval",
                             grp->key);
        if (interval == 0 && lcm == INT64_MAX)
            return kvci_fail(KVC_EINVAL,
                             "manager %s: the block sizes' least common multiple exceeds max_model_len "
                             "%lld; set state_snapshot_interval",
                             grp->key, (long long)p->max_model_len);
        if (interval == 0) interval = lcm;
        for (int32_t h = 0; h < groups->n_groups; h++)
            if (out[h] > 0 && interval % out[h] != 0)
                return kvci_fail(KVC_EINVAL,
                                 "state_snapshot_interval %lld is not a multiple of the block size %lld "
                                 "of key %s",
                                 (long long)interval, (long long)out[h], groups->groups[h].key);
        out[g] = interval;
    }
    return KVC_OK;
}

/* Layer infos in ascending layer_idx (stable), for the transfer export. */
static void sort_layers(kvc_manager *m) {
    for (int32_t i = 0; i < m->ci->n_layer_infos; i++) {
        int32_t j = i;
        while (j > 0 && m->ci->layer_infos[m->layer_order[j - 1]].layer_idx > m->ci->layer_infos[i].layer_idx) {
            m->layer_order[j] = m->layer_order[j - 1];
            j--;
        }
        m->layer_order[j] = i;
    }
}

/* The group's entries, for poisoning its blocks' storage. */
static kvc_status collect_poison_entries(const kvc_model_cache_info *ci, kvc_single_manager *sm) {
    sm->poison = kvci_malloc((size_t)kvci_max64(sm->group.n_entries, 1) * sizeof *sm->poison);
    if (sm->poison == NULL) return kvci_fail(KVC_ENOMEM, "manager %s: cannot allocate its entry list", sm->group.key);
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            const kvc_cache_entry *e = &ci->layer_infos[l].caches[c];
            if (e->needs_block && strcmp(kvc_cache_entry_group_key(e), sm->group.key) == 0 &&
                sm->n_poison < sm->group.n_entries)
                sm->poison[sm->n_poison++] = e;
        }
    return KVC_OK;
}

/* Table entries after phase 2 grows view by n blocks (at most: a Mamba
 * move off its snapshot appends nothing). */
static int64_t table_len_after(const kvc_single_manager *sm, const kvc_req_blocks *view, int64_t n) {
    return kvci_min64(view->len + n, sm->max_table);
}

/* What phase 2 starts from in one key: the table (a hit placed in an empty
 * one, null below the leading nulls for `computed` cached tokens), an empty
 * table with those leading nulls; *taken_free = cached free blocks the hit
 * takes out of the queue. */
static kvc_req_blocks start_view(const kvc_single_manager *sm, const kvc_req_blocks *t, const kvc_key_hit *hit,
                                 int64_t computed, int64_t *taken_free) {
    kvc_req_blocks view = t != NULL ? *t : (kvc_req_blocks){0};
    *taken_free = 0;
    if (hit != NULL) {
        int64_t from = kvci_type_leading_nulls(sm, computed);
        view.len = kvci_max64(kvci_single_manager_hit_table_len(sm, hit), from);
        *taken_free = kvci_single_manager_hit_free_blocks(sm, hit, from);
    }
    if (view.len == 0) view.n_null = view.len = kvci_type_leading_nulls(sm, computed);
    return view;
}

/* What key g of a new request takes of its hit (NULL: nothing). A state
 * key's snapshot is not taken when external computed tokens follow the hit:
 * the state after them arrives with them, into the request's own block. */
static const kvc_key_hit *key_hit(const kvc_single_manager *sm, const kvc_pending_hit *hit, int32_t g,
                                  int64_t external) {
    return hit != NULL && !(external > 0 && sm->type->state_hits) ? &hit->keys[g] : NULL;
}

/* The pool of an earlier key planned into pool pool_id (> 0), or NULL: the
 * key gets a pool of its own. */
static kvc_block_pool *shared_pool(const kvc_manager *m, const kvc_block_plan *plan, int32_t pool_id) {
    for (int32_t g = 0; g < m->n_managers && pool_id > 0; g++) {
        const kvc_group_plan *gp = NULL;
        if (kvci_block_plan_group(plan, m->managers[g].group.key, &gp) == KVC_OK && gp->pool_id == pool_id)
            return m->managers[g].pool;
    }
    return NULL;
}

kvc_status kvc_manager_create(const kvc_model_cache_info *ci, const kvc_block_plan *plan, const kvc_manager_params *p,
                              kvc_manager **out) {
    kvc_status st = check_create_args(ci, plan, p, out);
    if (st != KVC_OK) return st;
    st = kvc_validate_cache_info(ci, p->engine_next_n);
    kvc_cache_groups groups;
    if (st == KVC_OK) st = kvc_cache_groups_build(ci, &groups);
    if (st != KVC_OK) return st;
    kvc_manager *m = kvci_calloc(1, sizeof *m);
    if (m == NULL) return kvci_fail(KVC_ENOMEM, "cannot allocate the manager");
    m->ci = ci;
    m->max_model_len = p->max_model_len;
    m->prefix_caching = p->prefix_caching;
    m->prefix_salt = p->prefix_salt;
    int64_t max_requests = p->max_requests > 0 ? p->max_requests : default_max_requests(plan);
    int64_t tokens_per_hash[KVC_MAX_MANAGERS];
    st = hash_tokens(&groups, p, tokens_per_hash);
    for (int32_t g = 0; g < groups.n_groups && st == KVC_OK; g++) {
        const kvc_group_plan *gp = NULL;
        st = kvci_block_plan_group(plan, groups.groups[g].key, &gp);
        if (st == KVC_OK)
            st = kvci_single_manager_init(&m->managers[g], &groups.groups[g], gp->block_num, p->max_model_len,
                                          tokens_per_hash[g], shared_pool(m, plan, gp->pool_id));
        if (st != KVC_OK) break;
        m->managers[g].peers = m->managers;
        m->managers[g].key_index = g;
        m->n_managers = g + 1;
    }
    for (int32_t g = 0; g < m->n_managers && st == KVC_OK && p->poison_new_blocks; g++)
        st = collect_poison_entries(ci, &m->managers[g]);
    if (st == KVC_OK) st = kvci_kv_events_init(m, p->kv_event_capacity);
    /* Request slots and their tables grow with the live requests, up to max_requests. */
    if (st == KVC_OK) st = kvci_request_table_init(&m->requests, max_requests, kvci_min64(max_requests, 16));
    if (st == KVC_OK) st = kvci_manager_grow_tables(m);
    if (st == KVC_OK) {
        m->layer_order = kvci_malloc((size_t)kvci_max64(ci->n_layer_infos, 1) * sizeof *m->layer_order);
        if (m->layer_order == NULL) st = kvci_fail(KVC_ENOMEM, "cannot allocate the manager's layer order");
    }
    if (st != KVC_OK) {
        kvc_manager_destroy(m);
        return st;
    }
    sort_layers(m);
    *out = m;
    return KVC_OK;
}

void kvc_manager_destroy(kvc_manager *m) {
    if (m == NULL) return;
    for (int32_t g = 0; g < m->n_managers; g++) kvci_single_manager_release(&m->managers[g]);
    kvci_hit_release(m);
    kvci_free(m->events.ring);
    kvci_request_table_release(&m->requests);
    for (int64_t i = 0; i < m->n_table_slots * m->n_managers; i++) kvci_free(m->tables[i].ids);
    kvci_free(m->tables);
    kvci_free(m->layer_order);
    kvci_free(m);
}

kvc_req_blocks *kvci_manager_request_tables(const kvc_manager *m, int32_t slot) {
    return &m->tables[(int64_t)slot * m->n_managers];
}

static kvc_status check_counts(const kvc_slot_request *req) {
    int64_t rid = req->request_id, computed = req->computed_tokens, external = req->num_external_computed_tokens;
    int64_t num_new = req->num_new_tokens, lookahead = req->lookahead_tokens, reserved = req->reserved_tokens;
    if (rid < 0)
        return kvci_fail(KVC_EINVAL, "request id %lld is negative (padding requests are never allocated)",
                         (long long)rid);
    if (computed < 0 || external < 0 || num_new < 0 || lookahead < 0 || reserved < 0)
        return kvci_fail(KVC_EINVAL,
                         "request %lld: token counts must not be negative (computed %lld, external "
                         "computed %lld, new %lld, lookahead %lld, reserved %lld)",
                         (long long)rid, (long long)computed, (long long)external, (long long)num_new,
                         (long long)lookahead, (long long)reserved);
    if (computed > INT64_MAX - external || computed + external > INT64_MAX - num_new ||
        computed + external + num_new > INT64_MAX - lookahead)
        return kvci_fail(KVC_EINVAL, "request %lld: computed + external + new + lookahead tokens overflow",
                         (long long)rid);
    return KVC_OK;
}

/* A prompt given to allocate_slots: well formed, for a new request, and with
 * computed_tokens a hit length it may have. */
static kvc_status check_prompt(const kvc_manager *m, const kvc_slot_request *req, bool known) {
    const kvc_prompt *p = req->prompt;
    if (p->n_tokens < 0 || (p->n_tokens > 0 && p->tokens == NULL))
        return kvci_fail(KVC_EINVAL, "request %lld: prompt of %lld tokens without token ids",
                         (long long)req->request_id, (long long)p->n_tokens);
    if (known)
        return kvci_fail(KVC_EINVAL, "request %lld: a prompt is given only with the request's first allocation",
                         (long long)req->request_id);
    if (m->prefix_caching && req->computed_tokens > 0 && req->computed_tokens >= p->n_tokens)
        return kvci_fail(KVC_EINVAL,
                         "request %lld: a hit of %lld tokens must leave a token of the %lld-token prompt "
                         "to compute",
                         (long long)req->request_id, (long long)req->computed_tokens, (long long)p->n_tokens);
    if (req->num_external_computed_tokens > 0 &&
        req->num_external_computed_tokens > p->n_tokens - 1 - req->computed_tokens)
        return kvci_fail(KVC_EINVAL,
                         "request %lld: %lld external computed tokens after %lld computed ones go past "
                         "the last of its %lld-token prompt, which is computed here",
                         (long long)req->request_id, (long long)req->num_external_computed_tokens,
                         (long long)req->computed_tokens, (long long)p->n_tokens);
    return KVC_OK;
}

/* The request's salt and its prompt's: well formed, and the same bytes when
 * both are given. */
static kvc_status check_salts(const kvc_slot_request *req) {
    const kvc_prompt *p = req->prompt;
    kvc_status st = kvci_manager_check_salt(req->cache_salt, req->cache_salt_len, req->request_id, "cache_salt");
    if (st != KVC_OK || p == NULL) return st;
    st = kvci_manager_check_salt(p->cache_salt, p->cache_salt_len, req->request_id, "the prompt's cache_salt");
    if (st != KVC_OK) return st;
    if (req->cache_salt_len > 0 && (p->cache_salt_len != req->cache_salt_len ||
                                    memcmp(p->cache_salt, req->cache_salt, (size_t)p->cache_salt_len) != 0))
        return kvci_fail(KVC_EINVAL,
                         "request %lld: cache_salt (%lld bytes) is not its prompt's salt (%lld bytes); "
                         "give the salt once",
                         (long long)req->request_id, (long long)req->cache_salt_len, (long long)p->cache_salt_len);
    return KVC_OK;
}

/* The seed of the request's hash chains: a new request's from its salt (the
 * prompt's, else its own), a known one's as its first call fixed it, which
 * a salt given again must match. */
static kvc_status request_seed(const kvc_manager *m, const kvc_slot_request *req, const kvc_req_blocks *tables,
                               kvc_hash128 *seed) {
    *seed = (kvc_hash128){0};
    if (!m->prefix_caching) return KVC_OK;
    if (tables == NULL) {
        const kvc_prompt *p = req->cache_salt_len == 0 ? req->prompt : NULL;
        *seed = p != NULL ? kvci_prefix_seed(m->prefix_salt, p->cache_salt, p->cache_salt_len)
                          : kvci_prefix_seed(m->prefix_salt, req->cache_salt, req->cache_salt_len);
        return KVC_OK;
    }
    for (int32_t g = 0; g < m->n_managers; g++) /* a key opened later continues the request's seed */
        if (tables[g].present) *seed = tables[g].seed;
    if (req->cache_salt_len > 0 &&
        !kvci_hash128_equal(*seed, kvci_prefix_seed(m->prefix_salt, req->cache_salt, req->cache_salt_len)))
        return kvci_fail(KVC_EINVAL, "request %lld: cache_salt is not the salt its first allocation fixed",
                         (long long)req->request_id);
    return KVC_OK;
}

/* The prefix hit a new request's allocation takes (NULL: none): the one
 * req->hit names, checked still cached, or, without it, the hit of exactly
 * computed tokens looked up again for the prompt. */
static kvc_status claim_hit(kvc_manager *m, const kvc_slot_request *req, const kvc_prefix_query *q, int64_t computed,
                            uint64_t key_mask, const kvc_pending_hit **out) {
    *out = NULL;
    if (req->hit != NULL && (req->prompt == NULL || req->hit->n_tokens != req->computed_tokens))
        return kvci_fail(KVC_EINVAL,
                         "request %lld: a hit (%lld tokens) is passed with the request's prompt and "
                         "computed_tokens = its n_tokens (computed_tokens %lld, %s prompt)",
                         (long long)req->request_id, (long long)req->hit->n_tokens, (long long)req->computed_tokens,
                         req->prompt != NULL ? "a" : "no");
    if (!m->prefix_caching || req->prompt == NULL || computed == 0) return KVC_OK;
    if (req->hit != NULL) {
        *out = kvci_hit_claim(m, req->hit, q, key_mask, req->request_id);
        return *out != NULL ? KVC_OK : KVC_EINVAL;
    }
    kvc_status st = kvci_manager_reserve_query(m, computed);
    if (st != KVC_OK) return st;
    if (kvci_manager_hit_length(m, q, computed, key_mask) != computed)
        return kvci_fail(KVC_EINVAL,
                         "request %lld: %lld computed tokens are not a cached prefix of its prompt (a "
                         "stale hit: query again)",
                         (long long)req->request_id, (long long)computed);
    st = kvci_hit_keep(m, &m->requery, computed, q->seed, key_mask);
    *out = &m->requery;
    return st;
}

kvc_status kvc_manager_allocate_slots(kvc_manager *m, const kvc_slot_request *req) {
    if (m == NULL || req == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_manager_allocate_slots: manager and request must not be NULL");
    kvc_status st = check_counts(req);
    if (st != KVC_OK) return st;
    int64_t rid = req->request_id, computed = req->computed_tokens, external = req->num_external_computed_tokens;
    uint64_t key_mask = ~req->skip_keys & (((uint64_t)1 << m->n_managers) - 1); /* n_managers <= 16 */
    int64_t wanted = computed + external + req->num_new_tokens + req->lookahead_tokens;
    int64_t need_slot = kvci_min64(wanted, m->max_model_len);
    int64_t local_computed = kvci_min64(computed, m->max_model_len); /* the prefix hit's tokens */
    int64_t total_computed = kvci_min64(computed + external, m->max_model_len);
    int32_t slot = kvci_request_table_find(&m->requests, rid);
    kvc_req_blocks *tables = slot >= 0 ? kvci_manager_request_tables(m, slot) : NULL;
    if (external > 0 && req->prompt == NULL)
        return kvci_fail(KVC_EINVAL,
                         "request %lld: %lld external computed tokens need the prompt (they "
                         "are its tokens after the hit, given with its first allocation)",
                         (long long)rid, (long long)external);
    if (req->prompt != NULL && (st = check_prompt(m, req, tables != NULL)) != KVC_OK) return st;
    kvc_prefix_query q = {0};
    if ((st = check_salts(req)) != KVC_OK || (st = request_seed(m, req, tables, &q.seed)) != KVC_OK) return st;
    if (req->prompt != NULL) q.tokens = req->prompt->tokens, q.n_tokens = req->prompt->n_tokens;
    const kvc_pending_hit *hit = NULL;
    if ((st = claim_hit(m, req, &q, local_computed, key_mask, &hit)) != KVC_OK) return st;
    int64_t need[KVC_MAX_MANAGERS];      /* written for every selected manager before it is read */
    int64_t table_len[KVC_MAX_MANAGERS]; /* table entries after phase 2 (at most) */

    /* Room in a known request's tables first, so that failing to grow them
     * changes nothing: phase 1's release nulls entries but keeps each
     * table's length, which is all the room depends on. */
    for (int32_t g = 0; g < m->n_managers && tables != NULL; g++) {
        const kvc_single_manager *sm = &m->managers[g];
        if (!(key_mask >> g & 1u)) continue;
        int64_t unused = 0;
        kvc_req_blocks view = start_view(sm, &tables[g], NULL, total_computed, &unused);
        st = kvci_req_blocks_reserve(sm, &tables[g],
                                     table_len_after(sm, &view, sm->type->blocks_needed(sm, &view, need_slot)));
        if (st != KVC_OK) return st;
    }

    /* Phase 1: release what left a window, then check every pool for the
     * blocks all its selected keys take (a shared pool serves several). */
    int64_t demand[KVC_MAX_MANAGERS] = {0}; /* by the first key of each pool */
    for (int32_t g = 0; g < m->n_managers; g++) {
        if (!(key_mask >> g & 1u)) continue;
        kvc_single_manager *sm = &m->managers[g];
        if (tables != NULL) kvci_single_manager_remove_skipped(sm, &tables[g], total_computed);
        int64_t taken_free = 0; /* cached free blocks the hit takes out of the queue */
        kvc_req_blocks view = start_view(sm, tables != NULL ? &tables[g] : NULL, key_hit(sm, hit, g, external),
                                         total_computed, &taken_free);
        need[g] = sm->type->blocks_needed(sm, &view, need_slot);
        table_len[g] = table_len_after(sm, &view, need[g]);
        int64_t reserve =
            sm->type->reserves_decode ? kvci_cdiv(req->reserved_tokens, sm->group.block_size) * sm->n_entries : 0;
        demand[kvc_manager_pool_key(m, g)] += need[g] + taken_free + reserve;
    }
    for (int32_t g = 0; g < m->n_managers; g++) {
        const kvc_single_manager *sm = &m->managers[g];
        if (kvc_manager_pool_key(m, g) == g && demand[g] > kvc_block_pool_num_free(sm->pool)) {
            kvci_log(KVC_LOG_DEBUG, "request %lld not admitted by the pool of %s: needs %lld blocks, %lld free",
                     (long long)rid, sm->group.key, (long long)demand[g], (long long)kvc_block_pool_num_free(sm->pool));
            return KVC_NO_SPACE;
        }
    }
    if (key_mask == 0) return wanted > m->max_model_len ? KVC_CLAMPED : KVC_OK; /* nothing selected */
    bool opened = tables == NULL;
    if (opened) {
        st = kvci_manager_insert_request(m, rid, &slot);
        if (st == KVC_NO_SPACE)
            kvci_log(KVC_LOG_WARN, "request %lld not admitted: %lld requests are live already", (long long)rid,
                     (long long)m->requests.capacity);
        if (st != KVC_OK) return st;
        tables = kvci_manager_request_tables(m, slot);
    }
    for (int32_t g = 0; g < m->n_managers && st == KVC_OK; g++)
        if (key_mask >> g & 1u) st = kvci_req_blocks_reserve(&m->managers[g], &tables[g], table_len[g]);
    if (st != KVC_OK) {
        if (opened) kvci_request_table_remove(&m->requests, rid);
        return st;
    }
    if (opened) {
        if (req->prompt != NULL && m->prefix_caching) {
            m->stats.queries++;
            m->stats.query_tokens += req->prompt->n_tokens;
            m->stats.hits += hit != NULL;
            m->stats.hit_tokens += hit != NULL ? local_computed : 0;
        }
    }
    /* Phase 2: commit (cannot fail: each pool was checked above). Every
     * key takes its hit before any key takes fresh blocks, which in a shared
     * pool could otherwise be a cached free block another key's hit names. */
    for (int32_t g = 0; g < m->n_managers; g++) {
        if (!(key_mask >> g & 1u)) continue;
        kvc_single_manager *sm = &m->managers[g];
        kvci_single_manager_open(sm, &tables[g], ++m->last_generation, q.seed);
        const kvc_key_hit *kh = key_hit(sm, hit, g, external);
        if (kh != NULL)
            kvci_single_manager_take_hit(sm, &tables[g], kh, local_computed,
                                         kvci_type_leading_nulls(sm, total_computed));
        kvci_single_manager_skip_leading(sm, &tables[g], total_computed);
        tables[g].scheduled = kvci_min64(computed + external + req->num_new_tokens, m->max_model_len);
    }
    for (int32_t g = 0; g < m->n_managers; g++)
        if (key_mask >> g & 1u) kvci_type_grow(&m->managers[g], &tables[g], need[g], need_slot);
    if (hit != NULL) kvci_hit_forget(m, hit);
    return wanted > m->max_model_len ? KVC_CLAMPED : KVC_OK;
}

kvc_status kvc_manager_free(kvc_manager *m, int64_t rid) {
    if (m == NULL) return kvci_fail(KVC_EINVAL, "kvc_manager_free: manager must not be NULL");
    int32_t slot = kvci_request_table_find(&m->requests, rid);
    if (slot < 0) return KVC_OK;
    kvc_req_blocks *tables = kvci_manager_request_tables(m, slot);
    for (int32_t g = 0; g < m->n_managers; g++) kvci_single_manager_free(&m->managers[g], &tables[g]);
    kvci_request_table_remove(&m->requests, rid);
    return KVC_OK;
}
