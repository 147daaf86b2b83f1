/* Requests: adding (with every refusal the engine survives), queries of
 * state and output, and release (which aborts a live request). */
#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"

kvc_engine_request kvc_engine_request_default(void) {
    return (kvc_engine_request){
        .id = -1,
        .prompt = NULL,
        .n_prompt = 0,
        .max_new_tokens = 16,
        .eos_id = -1,
        .priority = 0,
        .cache_salt = NULL,
        .cache_salt_len = 0,
        .arrival_ns = 0,
        .sampling = kvc_sampling_default_params(),
    };
}

static kvc_status check_request(const kvc_engine *e, const kvc_engine_request *r, int64_t now) {
    if (r->id < 0) return kvci_fail(KVC_EINVAL, "request id %lld must be >= 0", (long long)r->id);
    if (r->n_prompt < 1)
        return kvci_fail(KVC_EINVAL, "request %lld: the prompt is empty (n_prompt %lld); at least one token is needed",
                         (long long)r->id, (long long)r->n_prompt);
    if (r->prompt == NULL) return kvci_fail(KVC_EINVAL, "request %lld: prompt is NULL", (long long)r->id);
    if (r->n_prompt > e->p.max_model_len)
        return kvci_fail(KVC_EINVAL, "request %lld: prompt of %lld tokens is longer than max_model_len %lld",
                         (long long)r->id, (long long)r->n_prompt, (long long)e->p.max_model_len);
    for (int64_t i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= e->model.vocab_size)
            return kvci_fail(KVC_EINVAL, "request %lld: prompt token %lld is %d, outside the vocabulary [0, %lld)",
                             (long long)r->id, (long long)i, r->prompt[i], (long long)e->model.vocab_size);
    if (r->max_new_tokens < 1)
        return kvci_fail(KVC_EINVAL, "request %lld: max_new_tokens %lld must be >= 1", (long long)r->id,
                         (long long)r->max_new_tokens);
    if (r->eos_id < -1 || r->eos_id >= e->model.vocab_size)
        return kvci_fail(KVC_EINVAL, "request %lld: eos_id %d must be -1 (none) or in [0, %lld)", (long long)r->id,
                         r->eos_id, (long long)e->model.vocab_size);
    if (r->cache_salt_len < 0 || r->cache_salt_len > KVC_ENGINE_SALT_MAX ||
        (r->cache_salt_len == 0) != (r->cache_salt == NULL))
        return kvci_fail(KVC_EINVAL,
                         "request %lld: cache_salt %s with cache_salt_len %lld: a salt is 1 to %d bytes, "
                         "or NULL and 0 for none",
                         (long long)r->id, r->cache_salt == NULL ? "NULL" : "given", (long long)r->cache_salt_len,
                         KVC_ENGINE_SALT_MAX);
    if (r->arrival_ns < 0 || r->arrival_ns > now)
        return kvci_fail(KVC_EINVAL,
                         "request %lld: arrival_ns %lld must be 0 (now) or a past time of "
                         "kvc_engine_now_ns (now %lld)",
                         (long long)r->id, (long long)r->arrival_ns, (long long)now);
    if (r->n_external_tokens != 0 && (e->p.role != KVC_ENGINE_ROLE_DECODE || r->n_external_tokens < 0 ||
                                      r->n_external_tokens >= r->n_prompt || r->load_external == NULL))
        return kvci_fail(KVC_EINVAL,
                         "request %lld: n_external_tokens %lld needs the DECODE role, a loader and a value in "
                         "[0, n_prompt %lld) (the last prompt token is computed here)",
                         (long long)r->id, (long long)r->n_external_tokens, (long long)r->n_prompt);
    kvc_status st = kvc_sampling_params_check(&r->sampling);
    if (st == KVC_OK) st = kvci_sampling_check_ids(&r->sampling, e->model.vocab_size);
    if (st != KVC_OK) return kvci_fail(st, "request %lld: %s", (long long)r->id, kvc_last_error());
    const kvc_engine_req *held = kvci_engine_find(e, r->id);
    if (held != NULL)
        return kvci_fail(KVC_EINVAL, "request id %lld is already held by the engine (%s); release it first",
                         (long long)r->id, kvc_engine_request_state_name((kvc_engine_request_state)held->state));
    /* positions of its longest run: every token but the last one generated is fed */
    int64_t room = e->p.max_model_len - r->n_prompt + 1;
    int64_t positions = r->n_prompt + kvci_min64(r->max_new_tokens, room) - 1;
    st = kvci_engine_fit_check(e, r->id, kvci_min64(positions, e->p.max_model_len));
    if (st != KVC_OK) return st;
    if (e->table.n_free == 0)
        return kvci_fail(KVC_NO_SPACE, "request %lld: all %lld request slots are held; release finished requests",
                         (long long)r->id, (long long)e->p.max_requests);
    return KVC_OK;
}

kvc_status kvc_engine_add_request(kvc_engine *e, const kvc_engine_request *r) {
    if (e == NULL || r == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_engine_add_request: engine and request must not be NULL");
    const int64_t now = kvc_engine_now_ns();
    kvc_status st = check_request(e, r, now);
    if (st == KVC_OK) st = kvci_engine_log_add(e, r); /* replicas: the add goes to the followers too */
    if (st != KVC_OK) return st;
    int32_t slot = kvci_request_table_insert(&e->table, r->id);
    kvc_engine_req *q = &e->reqs[slot];
    int32_t *tokens = q->tokens;
    int64_t *token_step = q->token_step, *token_ns = q->token_ns;
    kvc_logit_bias *logit_bias = q->logit_bias;
    int32_t *min_tokens_ids = q->min_tokens_ids;
    uint32_t *allowed_store = q->allowed_store;
    memset(q, 0, sizeof *q); /* allowed NULL: no mask until kvc_engine_set_allowed_tokens */
    q->tokens = tokens;
    q->token_step = token_step;
    q->token_ns = token_ns;
    q->logit_bias = logit_bias;
    q->min_tokens_ids = min_tokens_ids;
    q->allowed_store = allowed_store;
    q->id = r->id;
    q->priority = r->priority;
    q->cache_salt_len = r->cache_salt_len;
    if (r->cache_salt_len > 0) memcpy(q->cache_salt, r->cache_salt, (size_t)r->cache_salt_len);
    q->arrival = e->next_arrival++;
    q->state = KVC_REQ_WAITING;
    q->finish = KVC_FINISH_NONE;
    q->n_prompt = r->n_prompt;
    q->n_tokens = r->n_prompt;
    q->max_new_tokens = r->max_new_tokens;
    q->eos_id = r->eos_id;
    q->sampling = r->sampling;
    q->sampling.seed = r->sampling.seed ^ (e->p.seed * 0x9e3779b97f4a7c15ULL);
    if (r->sampling.n_logit_bias > 0) { /* the caller's arrays are copied: the request's own */
        memcpy(q->logit_bias, r->sampling.logit_bias, (size_t)r->sampling.n_logit_bias * sizeof *q->logit_bias);
        q->sampling.logit_bias = q->logit_bias;
    }
    if (r->sampling.n_min_tokens_ids > 0) {
        memcpy(q->min_tokens_ids, r->sampling.min_tokens_ids,
               (size_t)r->sampling.n_min_tokens_ids * sizeof *q->min_tokens_ids);
        q->sampling.min_tokens_ids = q->min_tokens_ids;
    }
    q->cache_row = -1;
    q->n_external = r->n_external_tokens;
    q->load_external = r->load_external;
    q->load_user = r->load_user;
    memcpy(q->tokens, r->prompt, (size_t)r->n_prompt * sizeof *r->prompt);
    kvci_engine_times_arrive(e, q, r->arrival_ns > 0 ? r->arrival_ns : now);
    kvci_engine_wait_insert(e, slot);
    return KVC_OK;
}

static kvc_status lookup(const kvc_engine *e, int64_t id, const char *what, kvc_engine_req **out) {
    if (e == NULL) return kvci_fail(KVC_EINVAL, "%s: engine is NULL", what);
    *out = kvci_engine_find(e, id);
    if (*out == NULL) return kvci_fail(KVC_EINVAL, "%s: request %lld is not held by the engine", what, (long long)id);
    return KVC_OK;
}

kvc_status kvc_engine_request_get(const kvc_engine *e, int64_t id, kvc_engine_request_info *out) {
    kvc_engine_req *r = NULL;
    kvc_status st = lookup(e, id, "kvc_engine_request_get", &r);
    if (st != KVC_OK) return st;
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_request_get: out is NULL");
    *out = (kvc_engine_request_info){
        .state = (kvc_engine_request_state)r->state,
        .finish = r->finish,
        .n_prompt = r->n_prompt,
        .n_generated = r->n_tokens - r->n_prompt,
        .n_cached = r->n_cached,
        .n_preemptions = r->n_preemptions,
        .priority = r->priority,
        .n_prefix_hit = r->n_prefix_hit,
    };
    return KVC_OK;
}

kvc_status kvc_engine_request_output(const kvc_engine *e, int64_t id, int32_t *out, int64_t cap, int64_t *n_out) {
    kvc_engine_req *r = NULL;
    kvc_status st = lookup(e, id, "kvc_engine_request_output", &r);
    if (st != KVC_OK) return st;
    if (n_out == NULL || cap < 0 || (cap > 0 && out == NULL))
        return kvci_fail(KVC_EINVAL, "kvc_engine_request_output: n_out and (with cap %lld > 0) out are required",
                         (long long)cap);
    int64_t n = r->n_tokens - r->n_prompt;
    if (cap > 0) memcpy(out, r->tokens + r->n_prompt, (size_t)kvci_min64(n, cap) * sizeof *out);
    *n_out = n;
    return KVC_OK;
}

kvc_status kvc_engine_set_allowed_tokens(kvc_engine *e, int64_t id, const uint32_t *bitmask, int64_t n_words) {
    kvc_engine_req *r = NULL;
    kvc_status st = lookup(e, id, "kvc_engine_set_allowed_tokens", &r);
    if (st != KVC_OK) return st;
    if (bitmask == NULL) {
        st = kvci_engine_log_mask(e, id, NULL, 0);
        if (st == KVC_OK) r->allowed = NULL;
        return st;
    }
    if (n_words != e->mask_words)
        return kvci_fail(
            KVC_EINVAL, "kvc_engine_set_allowed_tokens: request %lld: n_words %lld must be cdiv(vocab %lld, 32) = %lld",
            (long long)id, (long long)n_words, (long long)e->model.vocab_size, (long long)e->mask_words);
    if (r->state == KVC_REQ_FINISHED)
        return kvci_fail(KVC_EINVAL, "kvc_engine_set_allowed_tokens: request %lld has finished (%s)", (long long)id,
                         kvc_engine_finish_reason_name(r->finish));
    const int64_t tail = e->model.vocab_size % 32; /* bits of the last word past the vocabulary must be clear */
    if (tail != 0 && (bitmask[n_words - 1] >> tail) != 0)
        return kvci_fail(KVC_EINVAL,
                         "kvc_engine_set_allowed_tokens: request %lld: bitmask[%lld] allows tokens at or past "
                         "the vocabulary size %lld",
                         (long long)id, (long long)n_words - 1, (long long)e->model.vocab_size);
    st = kvci_engine_log_mask(e, id, bitmask, n_words);
    if (st != KVC_OK) return st;
    memcpy(r->allowed_store, bitmask, (size_t)n_words * sizeof *bitmask);
    r->allowed = r->allowed_store;
    return KVC_OK;
}

/* Forgets a held request (kvc_engine_request_release's change). */
static kvc_status release(kvc_engine *e, kvc_engine_req *r) {
    const int64_t id = r->id;
    kvc_status st = KVC_OK;
    int32_t slot = kvci_engine_slot_of(e, r);
    switch (r->state) {
    case KVC_REQ_WAITING: kvci_engine_wait_remove(e, slot); break;
    case KVC_REQ_RUNNING:
        st = kvci_engine_evict(e, r);
        if (st == KVC_OK && e->p.check) st = kvci_engine_check_released(e, id);
        if (st != KVC_OK) return st;
        kvci_engine_run_remove(e, slot);
        break;
    default:
        if (r->finish == KVC_FINISH_PREFILLED) { /* the blocks it kept for the transfer */
            st = kvci_engine_evict(e, r);
            if (st == KVC_OK && e->p.check) st = kvci_engine_check_released(e, id);
            if (st != KVC_OK) return st;
            e->n_held--;
        }
        e->n_finished--;
        break;
    }
    kvci_request_table_remove(&e->table, id);
    r->state = KVC_SLOT_UNUSED;
    r->id = -1;
    return KVC_OK;
}

kvc_status kvc_engine_request_release(kvc_engine *e, int64_t id) {
    kvc_engine_req *r = NULL;
    kvc_status st = lookup(e, id, "kvc_engine_request_release", &r);
    int64_t mark = 0;
    if (st == KVC_OK) st = kvci_engine_log_release(e, id, &mark);
    if (st != KVC_OK) return st;
    st = release(e, r);
    if (st != KVC_OK) kvci_engine_log_rewind(e, mark); /* the release did not happen */
    return st;
}
