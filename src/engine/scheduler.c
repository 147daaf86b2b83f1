/* One engine step: pick a prefill batch (FIFO under the token budget, the
 * row cap and admission through allocate_slots) or else a decode batch of
 * every running request (preempting the most recently admitted one when a
 * decode allocation fails), run the model, sample, finish and release. */
#include <string.h>

#include "engine/engine_internal.h"

/* Queues row b = request slot `slot` processing tokens [first, n_tokens). */
static void add_row(kvc_engine *e, int64_t b, int32_t slot, int64_t first) {
    const kvc_engine_req *r = &e->reqs[slot];
    e->rows[b] = (kvc_step_request){.request_id = r->id, .computed_tokens = first, .num_new_tokens = r->n_tokens - first};
    e->row_slots[b] = slot;
    e->row_ids[b] = r->id;
}

/* Gives the blocks of prefill rows [0, n) back and requeues them at the head
 * of the waiting queue in their order. */
static void undo_prefill(kvc_engine *e, int64_t n) {
    for (int64_t b = n - 1; b >= 0; b--) {
        kvc_engine_evict(e, &e->reqs[e->row_slots[b]]);
        kvc_engine_wait_push_front(e, e->row_slots[b]);
    }
}

static kvc_status select_prefill(kvc_engine *e, int64_t *n_rows, int64_t *n_tokens) {
    int64_t n = 0, t = 0;
    while (e->n_waiting > 0 && e->n_running + n < e->p.max_batch) {
        int32_t slot = kvc_engine_wait_at(e, 0);
        kvc_engine_req *r = &e->reqs[slot];
        if (t + r->n_tokens > e->p.max_prefill_tokens) break;
        kvc_status st = kvc_engine_admit(e, r);
        if (st == KVC_NO_SPACE) break; /* strict FIFO: the head waits, nobody overtakes it */
        if (st != KVC_OK) {
            undo_prefill(e, n);
            return st;
        }
        kvc_engine_wait_pop_front(e);
        add_row(e, n, slot, 0);
        memcpy(e->ids + t, r->tokens, (size_t)r->n_tokens * sizeof *e->ids);
        t += r->n_tokens;
        n++;
    }
    *n_rows = n;
    *n_tokens = t;
    return KVC_OK;
}

/* Frees the request's blocks and puts it at the head of the waiting queue;
 * its prompt and generated tokens are prefilled again when it is readmitted. */
static kvc_status preempt(kvc_engine *e, int32_t slot) {
    kvc_engine_req *r = &e->reqs[slot];
    kvc_status st = kvc_engine_evict(e, r);
    if (st != KVC_OK) return st;
    kvc_engine_run_remove(e, slot);
    r->state = KVC_REQ_WAITING;
    r->n_cached = 0;
    r->n_preemptions++;
    kvc_engine_wait_push_front(e, slot);
    e->stats.preemptions++;
    return KVC_OK;
}

static kvc_status select_decode(kvc_engine *e, int64_t *n_rows, int64_t *n_preempted) {
    int64_t n = 0, i = 0;
    while (i < e->n_running) {
        int32_t slot = e->running[i];
        kvc_engine_req *r = &e->reqs[slot];
        kvc_status st = KVC_OK;
        /* RM 2: computed_tokens = computed_len + 1 = n_cached; one new position */
        if (e->managed) st = kvc_manager_allocate_slots(
                           e->mgr, &(kvc_slot_request){.request_id = r->id, .computed_tokens = r->n_cached, .num_new_tokens = 1});
        if (st == KVC_OK) {
            add_row(e, n, slot, r->n_cached);
            e->ids[n++] = r->tokens[r->n_tokens - 1];
            i++;
            continue;
        }
        if (st != KVC_NO_SPACE)
            return st == KVC_CLAMPED ? kvc_fail(KVC_EINTERNAL, "engine: decode of request %lld at position %lld was "
                                                "clamped to max_model_len", (long long)r->id, (long long)r->n_cached)
                                     : st;
        /* the victim is the last admitted, never a row already in this batch */
        int32_t victim = e->running[e->n_running - 1];
        st = preempt(e, victim);
        if (st != KVC_OK) return st;
        (*n_preempted)++;
        if (victim == slot) break;
    }
    *n_rows = n;
    return KVC_OK;
}

static kvc_status run_model(kvc_engine *e, int64_t n, bool is_prefill) {
    kvc_step_metadata md;
    kvc_engine_batch batch;
    memset(&batch, 0, sizeof batch);
    kvc_status st = e->managed ? kvc_step_metadata_build(e->buf, e->rows, n, is_prefill, &md)
                               : kvc_engine_legacy_build(e, e->rows, n, is_prefill, &md, &batch);
    if (st != KVC_OK) return st;
    batch.md = &md;
    batch.request_ids = e->row_ids;
    if (e->p.check) {
        st = kvc_engine_check_step(e, &batch);
        if (st != KVC_OK) return st;
    }
    return e->model.forward(e->model.self, e->ids, &batch, e->logits);
}

static kvc_engine_finish_reason finish_reason(const kvc_engine *e, const kvc_engine_req *r) {
    if (r->eos_id >= 0 && r->tokens[r->n_tokens - 1] == r->eos_id) return KVC_FINISH_EOS;
    if (r->n_tokens - r->n_prompt >= r->max_new_tokens) return KVC_FINISH_MAX_NEW;
    /* the next decode would write position n_tokens - 1 */
    if (r->n_tokens - 1 >= e->p.max_model_len) return KVC_FINISH_MAX_MODEL_LEN;
    return KVC_FINISH_NONE;
}

/* Samples one token per row, advances the bookkeeping, moves prefilled rows
 * to the running list and releases finished requests at once. */
static kvc_status finish_rows(kvc_engine *e, int64_t n, bool is_prefill, kvc_engine_step_result *res) {
    int64_t vocab = e->model.vocab_size;
    for (int64_t b = 0; b < n; b++) {
        int32_t slot = e->row_slots[b];
        kvc_engine_req *r = &e->reqs[slot];
        int32_t tok = 0;
        kvc_status st = kvc_sampler_sample(e->sampler, e->logits + b * vocab, &r->sampling,
                                           (uint64_t)(r->n_tokens - r->n_prompt), &tok);
        if (st != KVC_OK) return st;
        r->n_cached = e->rows[b].computed_tokens + e->rows[b].num_new_tokens;
        r->tokens[r->n_tokens++] = tok;
        if (is_prefill) {
            r->state = KVC_REQ_RUNNING;
            e->running[e->n_running++] = slot;
        }
        r->finish = finish_reason(e, r);
        if (r->finish == KVC_FINISH_NONE) continue;
        st = kvc_engine_evict(e, r);
        if (st != KVC_OK) return st;
        kvc_engine_run_remove(e, slot);
        r->state = KVC_REQ_FINISHED;
        e->n_finished++;
        e->stats.finished_total++;
        res->n_finished++;
    }
    return KVC_OK;
}

static void note_usage(kvc_engine *e) {
    for (int32_t k = 0; k < e->n_keys; k++) {
        int64_t used = kvc_manager_num_blocks(e->mgr, k) - 1 - kvc_manager_num_free(e->mgr, k);
        e->peak_in_use[k] = kvc_max64(e->peak_in_use[k], used);
    }
}

static kvc_status no_progress(const kvc_engine *e) {
    const kvc_engine_req *head = &e->reqs[kvc_engine_wait_at(e, 0)];
    char usage[256] = "";
    if (e->managed) kvc_manager_format_usage(e->mgr, usage, sizeof usage);
    return kvc_fail(KVC_NO_SPACE, "engine: no progress: the head of %lld waiting requests (request %lld, %lld tokens) "
                    "cannot be admitted with %lld of %lld rows running (blocks used %s)", (long long)e->n_waiting,
                    (long long)head->id, (long long)head->n_tokens, (long long)e->n_running,
                    (long long)e->p.max_batch, usage);
}

kvc_status kvc_engine_step(kvc_engine *e, kvc_engine_step_result *res) {
    if (e == NULL || res == NULL) return kvc_fail(KVC_EINVAL, "kvc_engine_step: engine and result must not be NULL");
    memset(res, 0, sizeof *res);
    if (e->n_waiting == 0 && e->n_running == 0) {
        res->idle = true;
        return KVC_OK;
    }
    int64_t n = 0, t = 0;
    kvc_status st = select_prefill(e, &n, &t);
    if (st != KVC_OK) return st;
    res->is_prefill = n > 0;
    if (n == 0 && e->n_running > 0) {
        st = select_decode(e, &n, &res->n_preempted);
        if (st != KVC_OK) return st;
        t = n;
    }
    if (n == 0) return res->n_preempted > 0 ? KVC_OK : no_progress(e);
    note_usage(e);
    st = run_model(e, n, res->is_prefill);
    if (st != KVC_OK) {
        if (res->is_prefill) undo_prefill(e, n);
        return st;
    }
    res->n_rows = n;
    res->n_tokens = t;
    e->stats.steps++;
    if (res->is_prefill) {
        e->stats.prefill_steps++;
        e->stats.prefill_tokens += t;
    } else {
        e->stats.decode_steps++;
        e->stats.decode_tokens += t;
    }
    e->stats.generated_tokens += n;
    st = finish_rows(e, n, res->is_prefill, res);
    if (st == KVC_OK && e->p.check) st = kvc_engine_check(e);
    return st;
}
