/* One engine step: the scheduling policy fills the rows, the ids are packed,
 * the checks (when on) run on the batch, the model runs, one token is
 * sampled for every row that fed the last token of its request, latency is
 * recorded and finished requests release their KV at once. */
#include <string.h>
#include <time.h>

#include "engine/engine_internal.h"

int64_t kvc_engine_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Packs each row's tokens and says whether any row is a prompt chunk. */
static bool pack_ids(kvc_engine *e, kvc_engine_step_result *res) {
    int64_t t = 0;
    for (int64_t b = 0; b < e->n_rows; b++) {
        const kvc_step_request *row = &e->rows[b];
        const kvc_engine_req *r = &e->reqs[e->row_slots[b]];
        memcpy(e->ids + t, r->tokens + row->computed_tokens, (size_t)row->num_new_tokens * sizeof *e->ids);
        t += row->num_new_tokens;
        if (row->num_new_tokens == 1 && row->computed_tokens > 0 && row->computed_tokens + 1 == r->n_tokens)
            res->n_decode_rows++;
        else
            res->n_prefill_tokens += row->num_new_tokens;
    }
    return res->n_decode_rows < e->n_rows;
}

static kvc_status run_model(kvc_engine *e, bool is_prefill) {
    kvc_step_metadata md;
    kvc_engine_batch batch;
    memset(&batch, 0, sizeof batch);
    kvc_status st = e->managed ? kvc_step_metadata_build(e->buf, e->rows, e->n_rows, is_prefill, &md)
                               : kvci_engine_legacy_build(e, e->rows, e->n_rows, is_prefill, &md, &batch);
    if (st != KVC_OK) return st;
    batch.md = &md;
    batch.request_ids = e->row_ids;
    if (e->p.check) {
        st = kvci_engine_check_step(e, &e->check_ws, &batch);
        if (st != KVC_OK) return st;
    }
    const int64_t t0 = kvc_engine_now_ns();
    st = e->model.forward(e->model.self, e->ids, &batch, e->logits);
    e->step_forward_ns = kvc_engine_now_ns() - t0;
    return st;
}

static kvc_engine_finish_reason finish_reason(const kvc_engine *e, const kvc_engine_req *r) {
    if (r->eos_id >= 0 && r->tokens[r->n_tokens - 1] == r->eos_id) return KVC_FINISH_EOS;
    if (r->n_tokens - r->n_prompt >= r->max_new_tokens) return KVC_FINISH_MAX_NEW;
    /* the next decode would write position n_tokens - 1 */
    if (r->n_tokens - 1 >= e->p.max_model_len) return KVC_FINISH_MAX_MODEL_LEN;
    return KVC_FINISH_NONE;
}

/* Advances every row's request; a row that fed the request's last token
 * samples the next one; finished requests release their KV. */
static kvc_status finish_rows(kvc_engine *e, int64_t t1, kvc_engine_step_result *res) {
    int64_t vocab = e->model.vocab_size;
    for (int64_t b = 0; b < e->n_rows; b++) {
        int32_t slot = e->row_slots[b];
        kvc_engine_req *r = &e->reqs[slot];
        r->n_cached = e->rows[b].computed_tokens + e->rows[b].num_new_tokens;
        /* what is computed now may be shared from the next step on */
        kvc_status st =
            e->p.prefix_caching ? kvc_manager_cache_computed(e->mgr, r->id, r->tokens, r->n_cached) : KVC_OK;
        if (st != KVC_OK) return st;
        if (r->n_cached < r->n_tokens) continue; /* a chunk in the middle of the tokens: nothing to sample */
        const int32_t tok = kvci_sampler_draw(e->sampler, e->logits + b * vocab, &r->sampling, r->eos_id, r->allowed,
                                              r->tokens, r->n_prompt, r->n_tokens);
        r->allowed = NULL;                                                       /* a mask serves one sampled token */
        const bool prefilled = tok >= 0 && e->p.role == KVC_ENGINE_ROLE_PREFILL; /* its blocks stay for the transfer */
        if (tok >= 0) {
            r->tokens[r->n_tokens] = tok;
            kvci_engine_times_token(e, r, t1);
            r->n_tokens++;
            e->stats.generated_tokens++;
        }
        r->finish = tok < 0 ? KVC_FINISH_NO_ALLOWED_TOKEN : prefilled ? KVC_FINISH_PREFILLED : finish_reason(e, r);
        if (r->finish == KVC_FINISH_NONE) continue;
        e->n_held += prefilled;
        st = prefilled ? KVC_OK : kvci_engine_evict(e, r);
        if (st == KVC_OK && e->p.check && !prefilled) st = kvci_engine_check_released(e, r->id);
        if (st != KVC_OK) return st;
        kvci_engine_run_remove(e, slot);
        r->state = KVC_REQ_FINISHED;
        kvci_engine_times_finish(e, r, t1);
        e->n_finished++;
        e->stats.finished_total++;
        res->n_finished++;
    }
    return KVC_OK;
}

static void note_usage(kvc_engine *e) {
    for (int32_t k = 0; k < e->n_keys; k++) {
        int64_t used = kvc_manager_num_blocks(e->mgr, k) - 1 - kvc_manager_num_free(e->mgr, k);
        e->peak_in_use[k] = kvci_max64(e->peak_in_use[k], used);
    }
}

static kvc_status no_progress(const kvc_engine *e) {
    const kvc_engine_req *head = &e->reqs[e->n_waiting > 0 ? e->waiting[0] : e->running[0]];
    char usage[256] = "";
    if (e->managed) kvc_manager_format_usage(e->mgr, usage, sizeof usage);
    return kvci_fail(KVC_NO_SPACE,
                     "engine: no progress: request %lld (%lld tokens, %lld cached) cannot be scheduled "
                     "with %lld waiting and %lld of %lld rows running (blocks used %s)",
                     (long long)head->id, (long long)head->n_tokens, (long long)head->n_cached, (long long)e->n_waiting,
                     (long long)e->n_running, (long long)e->p.max_num_seqs, usage);
}

/* Refuses the step when the logits a row samples from are not finite (a NaN
 * or Inf from the model leaves nothing to sample; docs/engine.md): checked
 * for every row before any samples, so the step is undone whole. */
static kvc_status check_logits(const kvc_engine *e) {
    const int64_t vocab = e->model.vocab_size;
    for (int64_t b = 0; b < e->n_rows; b++) {
        const kvc_engine_req *r = &e->reqs[e->row_slots[b]];
        if (e->rows[b].computed_tokens + e->rows[b].num_new_tokens < r->n_tokens) continue; /* samples nothing */
        const int64_t bad = kvci_first_nonfinite(e->logits + b * vocab, vocab);
        if (bad >= 0)
            return kvci_fail(
                KVC_ERANGE, "engine: non-finite logits at step %lld for request %lld (position %lld): logit %lld is %g",
                (long long)e->stats.steps, (long long)r->id, (long long)(r->n_tokens - 1), (long long)bad,
                (double)e->logits[b * vocab + bad]);
    }
    return KVC_OK;
}

kvc_status kvc_engine_step(kvc_engine *e, kvc_engine_step_result *res) {
    if (e == NULL || res == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_step: engine and result must not be NULL");
    memset(res, 0, sizeof *res);
    kvc_status st = kvci_engine_log_step(e); /* replicas: the followers replay the lead's log, then step */
    if (st != KVC_OK) return st;
    if (e->n_waiting == 0 && e->n_running == 0) {
        res->idle = true;
        return KVC_OK;
    }
    const int64_t t0 = kvc_engine_now_ns();
    e->n_rows = e->n_row_tokens = e->n_chunks = 0;
    e->decode_cost = e->chunk_cost = 0.0;
    e->build++;
    st = e->p.scheduler == KVC_ENGINE_SCHED_BUDGET ? kvci_engine_schedule_budget(e, &res->n_preempted)
                                                   : kvci_engine_schedule_prefill_alone(e, &res->n_preempted);
    if (st != KVC_OK) {
        kvci_engine_rows_undo(e);
        return st;
    }
    if (e->n_rows == 0) return res->n_preempted > 0 ? KVC_OK : no_progress(e);
    st = e->managed ? kvci_engine_copy_states(e) : KVC_OK; /* states resumed from a snapshot */
    if (st != KVC_OK) {
        kvci_engine_rows_undo(e);
        return st;
    }
    res->is_prefill = pack_ids(e, res);
    note_usage(e);
    const int64_t t_scheduled = kvc_engine_now_ns();
    st = run_model(e, res->is_prefill);
    if (st == KVC_OK) st = check_logits(e);
    if (st != KVC_OK) {
        kvci_engine_rows_undo(e);
        return st;
    }
    const int64_t t_forward = kvc_engine_now_ns();
    res->n_rows = e->n_rows;
    res->n_tokens = e->n_row_tokens;
    kvci_engine_times_scheduled(e, t0);
    e->stats.prefill_steps += res->is_prefill;
    e->stats.decode_steps += res->n_decode_rows > 0;
    e->stats.prefill_tokens += res->n_prefill_tokens;
    e->stats.decode_tokens += res->n_decode_rows;
    st = finish_rows(e, t_forward, res);
    e->stats.schedule_ns += t_scheduled - t0;
    e->stats.forward_ns += e->step_forward_ns;
    e->stats.metadata_ns += t_forward - t_scheduled - e->step_forward_ns; /* the build and, when on, the step check */
    e->stats.sample_ns += kvc_engine_now_ns() - t_forward;
    e->stats.steps++;
    if (st == KVC_OK && e->p.check) st = kvc_engine_check(e);
    return st;
}
