/* Engine creation and destruction: parameter checks, the initialisation
 * chain of the managed path (validate -> plan -> storage -> manager -> step
 * buffers) or the legacy caches of the self-managed path, and every
 * workspace a step needs, sized once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache/manager_type.h"
#include "engine/engine_internal.h"

kvc_engine_params kvc_engine_default_params(void) {
    kvc_engine_params p;
    memset(&p, 0, sizeof p);
    p.max_num_seqs = 8;
    p.scheduler = KVC_ENGINE_SCHED_BUDGET;
    p.plan = KVC_ENGINE_PLAN_OFFLINE;
    p.reserved_decode_tokens = 64;
    p.step_cost_ratio = 2.0;
    p.min_chunk_tokens = 4;
    p.alignment = KVC_ALIGN_DEFAULT;
    p.pages = KVC_STORAGE_PAGES_HUGE;
    p.shared_pools = true;
#ifdef NDEBUG
    p.check = false;
#else
    p.check = true;
#endif
    return p;
}

#define KVC_ENGINE_MAX_ROWS     ((int64_t)1 << 20)
#define KVC_ENGINE_MAX_REQUESTS ((int64_t)1 << 24)

static kvc_status check_model(const kvc_engine_model *m) {
    if (m == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_create: model is NULL");
    if (m->forward == NULL) return kvci_fail(KVC_EINVAL, "engine model: forward is NULL");
    if (m->vocab_size < 1 || m->vocab_size > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "engine model: vocab_size %lld must be in [1, 2^31)", (long long)m->vocab_size);
    const double costs[3] = {m->cost_token, m->cost_row, m->cost_context};
    for (int i = 0; i < 3; i++)
        if (!(costs[i] >= 0.0) || isinf(costs[i]))
            return kvci_fail(KVC_EINVAL, "engine model: %s %g must be finite and >= 0",
                             (const char *[]){"cost_token", "cost_row", "cost_context"}[i], costs[i]);
    if (m->cache_info != NULL && m->n_legacy_caches != 0)
        return kvci_fail(KVC_EINVAL,
                         "engine model: declares cache info and %d legacy caches; legacy caches are for "
                         "self-managed models (cache_info NULL) only",
                         m->n_legacy_caches);
    return KVC_OK;
}

#define KVC_ENGINE_DEFAULT_BUDGET 2048 /* tokens per step of the BUDGET scheduler (vLLM's online default) */

/* max_num_batched_tokens with 0 replaced by its default (p's other sizes valid). */
static int64_t step_tokens(const kvc_engine_params *p) {
    if (p->max_num_batched_tokens != 0) return p->max_num_batched_tokens;
    int64_t base = p->scheduler == KVC_ENGINE_SCHED_PREFILL_ALONE ? p->max_model_len : KVC_ENGINE_DEFAULT_BUDGET;
    return kvci_max64(base, p->max_num_seqs);
}

/* Checks p and replaces its 0 = default fields by their values. */
static kvc_status resolve_params(kvc_engine_params *p) {
    if (p->max_model_len < 1 || p->max_model_len >= INT32_MAX)
        return kvci_fail(KVC_EINVAL, "engine: max_model_len %lld must be in [1, 2^31 - 1)",
                         (long long)p->max_model_len);
    if (p->max_num_seqs < 1 || p->max_num_seqs > KVC_ENGINE_MAX_ROWS)
        return kvci_fail(KVC_EINVAL, "engine: max_num_seqs %lld must be in [1, %lld]", (long long)p->max_num_seqs,
                         (long long)KVC_ENGINE_MAX_ROWS);
    if (p->scheduler != KVC_ENGINE_SCHED_BUDGET && p->scheduler != KVC_ENGINE_SCHED_PREFILL_ALONE)
        return kvci_fail(KVC_EINVAL, "engine: scheduler %d is unknown (BUDGET or PREFILL_ALONE)", (int)p->scheduler);
    if (p->max_num_batched_tokens < 0 || p->max_num_batched_tokens >= INT32_MAX)
        return kvci_fail(KVC_EINVAL, "engine: max_num_batched_tokens %lld must be in [0, 2^31 - 1) (0: default)",
                         (long long)p->max_num_batched_tokens);
    p->max_num_batched_tokens = step_tokens(p);
    if (p->max_num_batched_tokens < p->max_num_seqs)
        return kvci_fail(KVC_EINVAL,
                         "engine: max_num_batched_tokens %lld must be >= max_num_seqs %lld (every running "
                         "request's decode token fits one step)",
                         (long long)p->max_num_batched_tokens, (long long)p->max_num_seqs);
    if (p->scheduler == KVC_ENGINE_SCHED_PREFILL_ALONE && p->max_num_batched_tokens < p->max_model_len)
        return kvci_fail(KVC_EINVAL,
                         "engine: the PREFILL_ALONE scheduler needs max_num_batched_tokens %lld >= "
                         "max_model_len %lld (it does not chunk: a preempted request recomputes up to max_model_len "
                         "tokens in one step)",
                         (long long)p->max_num_batched_tokens, (long long)p->max_model_len);
    if (p->long_prefill_token_threshold < 0)
        return kvci_fail(KVC_EINVAL, "engine: long_prefill_token_threshold %lld must be >= 0 (0: no cap)",
                         (long long)p->long_prefill_token_threshold);
    if (!(p->step_cost_ratio == 0.0 || (p->step_cost_ratio >= 1.0 && p->step_cost_ratio <= 1e6)))
        return kvci_fail(KVC_EINVAL, "engine: step_cost_ratio %g must be 0 (off) or in [1, 1e6]", p->step_cost_ratio);
    if (p->step_cost_ratio > 0.0 && (p->min_chunk_tokens < 1 || p->min_chunk_tokens >= INT32_MAX))
        return kvci_fail(KVC_EINVAL,
                         "engine: min_chunk_tokens %lld must be in [1, 2^31 - 1) when step_cost_ratio is on",
                         (long long)p->min_chunk_tokens);
    if (p->max_requests == 0) p->max_requests = 4 * p->max_num_seqs;
    if (p->max_requests < 1 || p->max_requests > KVC_ENGINE_MAX_REQUESTS)
        return kvci_fail(KVC_EINVAL, "engine: max_requests %lld must be in [1, %lld]", (long long)p->max_requests,
                         (long long)KVC_ENGINE_MAX_REQUESTS);
    if (p->plan_concurrency == 0) p->plan_concurrency = p->max_num_seqs;
    if (p->plan != KVC_ENGINE_PLAN_OFFLINE && p->plan != KVC_ENGINE_PLAN_BUDGET)
        return kvci_fail(KVC_EINVAL, "engine: plan %d is unknown (OFFLINE or BUDGET)", (int)p->plan);
    if (p->plan == KVC_ENGINE_PLAN_BUDGET && p->kv_memory_bytes <= 0)
        return kvci_fail(KVC_EINVAL, "engine: BUDGET planning needs kv_memory_bytes > 0 (got %lld)",
                         (long long)p->kv_memory_bytes);
    if (p->reserved_decode_tokens < 0 || p->reserved_decode_tokens > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "engine: reserved_decode_tokens %lld must be in [0, 2^31)",
                         (long long)p->reserved_decode_tokens);
    if (p->prefix_caching && p->scheduler != KVC_ENGINE_SCHED_BUDGET)
        return kvci_fail(KVC_EINVAL, "engine: prefix caching needs the BUDGET scheduler (a hit leaves a prompt to "
                                     "compute from the middle, which the PREFILL_ALONE scheduler never does)");
    if (p->role != KVC_ENGINE_ROLE_BOTH && p->role != KVC_ENGINE_ROLE_PREFILL && p->role != KVC_ENGINE_ROLE_DECODE)
        return kvci_fail(KVC_EINVAL, "engine: role %d is unknown (BOTH, PREFILL or DECODE)", (int)p->role);
    if (p->role != KVC_ENGINE_ROLE_BOTH && p->scheduler != KVC_ENGINE_SCHED_BUDGET)
        return kvci_fail(KVC_EINVAL, "engine: the %s role needs the BUDGET scheduler",
                         p->role == KVC_ENGINE_ROLE_PREFILL ? "PREFILL" : "DECODE");
    if (p->next_n != 0)
        return kvci_fail(KVC_EINVAL, "engine: next_n %lld: speculative decoding is not supported (next_n must be 0)",
                         (long long)p->next_n);
    kvc_status st = kvci_page_policy_check("engine", p->pages, p->alignment);
    if (st != KVC_OK) return st;
    int64_t store = 0;
    if (!kvci_mul64(p->max_requests, p->max_model_len + 1, &store) || store > ((int64_t)1 << 36))
        return kvci_fail(KVC_EINVAL, "engine: max_requests %lld x (max_model_len %lld + 1) tokens is too large",
                         (long long)p->max_requests, (long long)p->max_model_len);
    return KVC_OK;
}

int64_t kvc_engine_step_tokens(const kvc_engine_params *p) {
    if (p == NULL) return 0;
    kvc_engine_params rp = *p;
    return resolve_params(&rp) == KVC_OK ? rp.max_num_batched_tokens : 0;
}

/* A prompt chunk backs every one of its positions (its keys are computed
 * into cache blocks, and a chunk beside other rows reads its window from
 * the cache), so a pool sized per request (sliding window) must also back
 * one step's chunks: each pool the planner sizes per request gets
 * cdiv(max_num_batched_tokens, bs) + 1 blocks more than its per-request
 * count (vLLM sizes its sliding-window pages from window - 1 +
 * max_num_batched_tokens the same way; a state pool gets the same few
 * blocks: room for prefix caching's copy sources and snapshots). The
 * blocks a chunk leaves behind the window go back at the request's next
 * allocation. */
static kvc_status add_chunk_room(kvc_engine *e, const kvc_model_cache_info *ci) {
    const char *keys[KVC_MAX_MANAGERS];
    int64_t counts[KVC_MAX_MANAGERS];
    for (int32_t g = 0; g < e->plan.n_groups; g++) {
        const kvc_group_plan *gp = &e->plan.groups[g];
        keys[g] = gp->key;
        counts[g] = gp->block_num;
        if (gp->fixed && gp->pool_id == 0) /* a shared pool's window keys draw from it */
            counts[g] += kvci_cdiv(e->p.max_num_batched_tokens, gp->block_size) + 1;
    }
    kvc_block_plan sized;
    kvc_status st = kvc_block_plan_from_counts(ci, keys, counts, e->plan.n_groups, &sized);
    for (int32_t g = 0; g < e->plan.n_groups; g++) sized.groups[g].pool_id = e->plan.groups[g].pool_id;
    if (st == KVC_OK) st = kvc_block_plan_check_pools(&sized);
    if (st == KVC_OK) e->plan = sized;
    return st;
}

/* The engine's model reads its caches only through the tensors its setters
 * receive (the storage's setter is optional for other callers). An entry that
 * already holds a tensor belongs to another live engine (kvc_engine_destroy
 * clears them): a second engine would re-point the model's setters at its own
 * storage, and the first engine's steps would write there, freed with it. */
static kvc_status check_setters(const kvc_model_cache_info *ci) {
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            const kvc_cache_entry *en = &ci->layer_infos[l].caches[c];
            if (en->needs_block && en->tensor_setter == NULL)
                return kvci_fail(KVC_EINVAL,
                                 "layer %d, cache %s: no tensor_setter: the engine's model would never "
                                 "receive the tensor",
                                 ci->layer_infos[l].layer_idx, en->name);
            if (en->needs_block && en->tensor.data != NULL)
                return kvci_fail(KVC_EINVAL,
                                 "layer %d, cache %s already holds a tensor: its cache description serves another "
                                 "engine (one live engine per model or adapter; destroy that engine first)",
                                 ci->layer_infos[l].layer_idx, en->name);
        }
    return KVC_OK;
}

/* The tensors kvc_cache_storage_allocate recorded in the description, which the storage freed. */
static void clear_tensors(kvc_model_cache_info *ci) {
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++)
            memset(&ci->layer_infos[l].caches[c].tensor, 0, sizeof(kvc_tensor));
}

/* The block sizes of ci's entries in order, [the entries of every layer info]; NULL when out of memory. */
static int64_t *block_sizes_save(const kvc_model_cache_info *ci) {
    size_t n = 0;
    for (int32_t l = 0; l < ci->n_layer_infos; l++) n += (size_t)ci->layer_infos[l].n_caches;
    int64_t *bs = kvci_malloc((n > 0 ? n : 1) * sizeof *bs);
    if (bs == NULL) return NULL;
    for (int32_t l = 0, i = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) bs[i++] = ci->layer_infos[l].caches[c].block_size;
    return bs;
}

static void block_sizes_restore(kvc_model_cache_info *ci, const int64_t *bs) {
    for (int32_t l = 0, i = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) ci->layer_infos[l].caches[c].block_size = bs[i++];
}

/* Prefix caching keeps state snapshots every so many tokens: the paged keys' block sizes give that, so a model
 * whose keys are all states (Mamba2) gets 16 tokens (vLLM's default block size; at most max_model_len); 0 (the
 * manager's own rule) for any other. */
static int64_t state_only_snapshot_interval(const kvc_model_cache_info *ci, int64_t max_model_len) {
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++)
            if (!ci->layer_infos[l].caches[c].is_state) return 0;
    return kvci_min64(16, max_model_len);
}

/* *saved_bs: the block sizes of the description before shared_pools grew them (block_sizes_save), for
 * kvc_engine_create to put back when it fails; NULL when nothing was changed. */
static kvc_status managed_create(kvc_engine *e, int64_t **saved_bs) {
    kvc_model_cache_info *ci = e->model.cache_info;
    kvc_status st = kvc_validate_cache_info(ci, e->p.next_n);
    if (st == KVC_OK) st = check_setters(ci);
    /* The planner's block-size rule (kvcache plan applies the same, to the same bound): keys whose bytes per
     * token differ get block sizes with equal pages, so that one pool serves them; the model reads each
     * layer's block size from the tensors its setters receive (kvc_model_caches.block_size 0). */
    if (st == KVC_OK && e->p.shared_pools) {
        *saved_bs = block_sizes_save(ci);
        if (*saved_bs == NULL) return kvci_fail(KVC_ENOMEM, "engine: out of memory saving the block sizes");
        st = kvc_cache_info_unify_pages(ci, kvci_page_unify_bound(ci, e->p.max_model_len), NULL);
    }
    if (st != KVC_OK) return st;
    kvc_plan_params pp = kvc_plan_default_params();
    pp.next_n = e->p.next_n;
    pp.shared_pools = e->p.shared_pools;
    if (e->p.plan == KVC_ENGINE_PLAN_OFFLINE) {
        pp.mode = KVC_PLAN_OFFLINE;
        pp.max_len = e->p.max_model_len;
        pp.max_concurrency = e->p.plan_concurrency;
        pp.free_bytes = -1;
    } else {
        pp.mode = KVC_PLAN_BUDGET;
        pp.kv_memory_bytes = e->p.kv_memory_bytes;
        pp.max_concurrency = e->p.max_num_seqs; /* sizes the fixed-size (window, state) pools */
    }
    st = kvc_plan_blocks(&pp, ci, &e->plan);
    if (st == KVC_OK) st = add_chunk_room(e, ci);
    kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    sp.alignment = e->p.alignment;
    sp.pages = e->p.pages;
    if (st == KVC_OK) st = kvc_cache_storage_allocate(ci, &e->plan, &sp, &e->storage);
    if (st != KVC_OK) return st;
    e->kv_bytes = kvc_cache_storage_bytes(e->storage);
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = e->p.max_model_len;
    mp.max_requests = e->p.max_num_seqs;
    mp.engine_next_n = e->p.next_n;
    mp.prefix_caching = e->p.prefix_caching;
    mp.prefix_salt = e->p.prefix_salt;
    if (mp.prefix_caching) mp.state_snapshot_interval = state_only_snapshot_interval(ci, e->p.max_model_len);
    st = kvc_manager_create(ci, &e->plan, &mp, &e->mgr);
    /* The manager's room up front, so that steps allocate nothing. */
    if (st == KVC_OK) st = kvc_manager_reserve(e->mgr, e->p.max_num_seqs, e->p.max_model_len);
    if (st == KVC_OK) st = kvc_step_buffers_create(e->mgr, e->p.max_num_seqs, e->max_tokens, &e->buf);
    if (st != KVC_OK) return st;
    e->n_keys = kvc_manager_n_keys(e->mgr);
    e->snapshot_interval = kvci_engine_snapshot_interval(e->mgr);
    return KVC_OK;
}

static kvc_status alloc_requests(kvc_engine *e) {
    size_t n = (size_t)e->p.max_requests, rows = (size_t)e->p.max_num_seqs, len = (size_t)e->p.max_model_len + 1;
    kvc_status st = kvci_request_table_init(&e->table, e->p.max_requests, e->p.max_requests);
    if (st != KVC_OK) return st;
    e->reqs = kvci_calloc(n, sizeof *e->reqs);
    e->token_store = kvci_malloc(n * len * sizeof *e->token_store);
    e->time_store = kvci_malloc(2 * n * len * sizeof *e->time_store);
    e->bias_store = kvci_malloc(n * KVC_SAMPLING_MAX_LOGIT_BIAS * sizeof *e->bias_store);
    e->stop_store = kvci_malloc(n * KVC_SAMPLING_MAX_STOP_IDS * sizeof *e->stop_store);
    e->mask_words = (e->model.vocab_size + 31) / 32;
    e->mask_store = kvci_malloc(n * (size_t)e->mask_words * sizeof *e->mask_store);
    e->waiting = kvci_malloc(n * sizeof *e->waiting);
    e->running = kvci_malloc(rows * sizeof *e->running);
    e->rows = kvci_malloc(rows * sizeof *e->rows);
    e->row_slots = kvci_malloc(rows * sizeof *e->row_slots);
    e->row_ids = kvci_malloc(rows * sizeof *e->row_ids);
    e->row_admitted = kvci_malloc(rows * sizeof *e->row_admitted);
    e->ids = kvci_malloc((size_t)e->max_tokens * sizeof *e->ids);
    e->logits = kvci_malloc(rows * (size_t)e->model.vocab_size * sizeof *e->logits);
    if (!e->reqs || !e->token_store || !e->time_store || !e->bias_store || !e->stop_store || !e->mask_store ||
        !e->waiting || !e->running || !e->rows || !e->row_slots || !e->row_ids || !e->row_admitted || !e->ids ||
        !e->logits)
        return kvci_fail(KVC_ENOMEM, "engine: out of host memory for %lld request slots of %lld tokens",
                         (long long)e->p.max_requests, (long long)e->p.max_model_len + 1);
    for (size_t i = 0; i < n; i++) {
        e->reqs[i].state = KVC_SLOT_UNUSED;
        e->reqs[i].tokens = e->token_store + i * len;
        e->reqs[i].token_step = e->time_store + i * len;
        e->reqs[i].token_ns = e->time_store + (n + i) * len;
        e->reqs[i].logit_bias = e->bias_store + i * KVC_SAMPLING_MAX_LOGIT_BIAS;
        e->reqs[i].min_tokens_ids = e->stop_store + i * KVC_SAMPLING_MAX_STOP_IDS;
        e->reqs[i].allowed_store = e->mask_store + i * (size_t)e->mask_words;
    }
    return kvc_sampler_create(e->model.vocab_size, &e->sampler);
}

kvc_status kvc_engine_create(const kvc_engine_model *model, const kvc_engine_params *p, kvc_engine **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_create: out is NULL");
    *out = NULL;
    if (p == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_create: params are NULL");
    kvc_status st = check_model(model);
    if (st != KVC_OK) return st;
    kvc_engine_params rp = *p;
    st = resolve_params(&rp);
    if (st != KVC_OK) return st;
    if (rp.role != KVC_ENGINE_ROLE_BOTH && model->cache_info == NULL)
        return kvci_fail(KVC_EINVAL,
                         "engine: the %s role moves KV blocks and needs a managed model (cache info); "
                         "this model is self-managed",
                         rp.role == KVC_ENGINE_ROLE_PREFILL ? "PREFILL" : "DECODE");
    kvc_engine *e = kvci_calloc(1, sizeof *e);
    if (e == NULL) return kvci_fail(KVC_ENOMEM, "kvc_engine_create: out of host memory");
    e->model = *model;
    st = kvci_engine_adapter_claim(model, &e->adapter_claimed);
    if (st != KVC_OK) {
        kvci_free(e);
        return st;
    }
    e->p = rp;
    e->max_tokens = rp.max_num_batched_tokens;
    const bool costed = model->cost_token > 0.0 || model->cost_row > 0.0 || model->cost_context > 0.0;
    e->cost_token = costed ? model->cost_token : 1.0;
    e->managed = model->cache_info != NULL;
    int64_t *saved_bs = NULL;
    st = e->managed ? managed_create(e, &saved_bs) : kvci_engine_legacy_create(e);
    if (st == KVC_OK) st = alloc_requests(e);
    if (st == KVC_OK && e->p.check) st = kvci_engine_check_alloc(e, &e->check_ws);
    if (st == KVC_OK) st = kvci_engine_log_create(e); /* last: only a whole lead sends its end when destroyed */
    if (st != KVC_OK) {
        kvc_engine_destroy(e);
        if (saved_bs != NULL) block_sizes_restore(model->cache_info, saved_bs); /* the description as it came */
    }
    kvci_free(saved_bs);
    if (st != KVC_OK) return st;
    *out = e;
    return KVC_OK;
}

void kvc_engine_destroy(kvc_engine *e) {
    if (e == NULL) return;
    kvci_engine_log_destroy(e);
    kvc_step_buffers_destroy(e->buf);
    kvc_manager_destroy(e->mgr);
    if (e->storage != NULL) clear_tensors(e->model.cache_info);
    kvc_cache_storage_destroy(e->storage);
    kvci_engine_legacy_destroy(e);
    kvc_sampler_destroy(e->sampler);
    kvci_free(e->reqs);
    kvci_free(e->token_store);
    kvci_free(e->time_store);
    kvci_free(e->bias_store);
    kvci_free(e->stop_store);
    kvci_free(e->mask_store);
    kvci_request_table_release(&e->table);
    kvci_free(e->waiting);
    kvci_free(e->running);
    kvci_free(e->rows);
    kvci_free(e->row_slots);
    kvci_free(e->row_ids);
    kvci_free(e->row_admitted);
    kvci_free(e->ids);
    kvci_free(e->logits);
    kvci_engine_check_free(&e->check_ws);
    if (e->adapter_claimed) kvci_engine_adapter_unclaim(&e->model);
    kvci_free(e);
}

kvc_status kvc_engine_page_info(const kvc_engine *e, kvc_storage_page_info *out) {
    if (e == NULL || out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_engine_page_info: %s must not be NULL", e == NULL ? "engine" : "out");
    if (e->managed) return kvc_cache_storage_page_info(e->storage, out);
    kvci_page_set_info(&e->legacy.set, out);
    return KVC_OK;
}

const kvc_manager *kvc_engine_manager(const kvc_engine *e) { return e != NULL ? e->mgr : NULL; }

const kvc_engine_params *kvc_engine_params_of(const kvc_engine *e) { return e != NULL ? &e->p : NULL; }

kvc_status kvc_engine_get_stats(const kvc_engine *e, kvc_engine_stats *out) {
    if (e == NULL || out == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_get_stats: engine and out must not be NULL");
    *out = e->stats;
    out->n_waiting = e->n_waiting;
    out->n_running = e->n_running;
    out->n_finished = e->n_finished;
    out->n_free_slots = e->table.n_free;
    out->n_keys = e->n_keys;
    out->kv_bytes = e->kv_bytes;
    out->free_cache_rows = e->managed ? 0 : e->legacy.n_free_rows;
    for (int32_t k = 0; k < e->n_keys; k++) {
        out->num_blocks[k] = kvc_manager_num_blocks(e->mgr, k);
        out->blocks_in_use[k] = out->num_blocks[k] - 1 - kvc_manager_num_free(e->mgr, k);
        out->peak_blocks_in_use[k] = e->peak_in_use[k];
    }
    return KVC_OK;
}
