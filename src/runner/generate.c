/* The standalone loop: one prefill step over the packed prompts, then
 * lock-step greedy decode steps (RM 10: write at kv_pos, visible kv_pos + 1,
 * static table, linear slots); mode 0 recomputes whole sequences instead. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"
#include "model/model_internal.h"
#include "model/step_profile.h"
#include "runner/runner_internal.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int32_t argmax(const float *v, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return (int32_t)best;
}

/* The metadata of a step of n rows, row b holding q[b] tokens (NULL: 1 each)
 * from position first[b] (NULL: 0 each), built into the runner's arrays by
 * the batch layer's row builder, plus the paged keys (static table, linear
 * slots; the slots themselves are filled by the caller). */
kvc_status kvci_runner_fill_md(kvc_runner *r, int64_t n, bool prefill, const int64_t *first, const int64_t *q) {
    kvc_step_rows rs = {.max_rows = r->batch,
                        .max_tokens = r->max_tokens,
                        .positions = r->positions,
                        .kv_pos = r->kv_pos,
                        .seq_lens_q = r->lens_q,
                        .seq_lens_kv = r->lens_kv,
                        .cu_seq_lens_q = r->cu_q,
                        .cu_seq_lens_kv = r->cu_kv};
    kvc_status st = kvc_step_rows_begin(&rs, prefill);
    for (int64_t b = 0; b < n && st == KVC_OK; b++) {
        const kvc_step_request row = {
            .request_id = b, .computed_tokens = first ? first[b] : 0, .num_new_tokens = q ? q[b] : 1};
        st = kvc_step_rows_add(&rs, &row, 1);
    }
    if (st == KVC_OK) st = kvc_step_rows_to_metadata(&rs, &r->md);
    if (st != KVC_OK || r->caches.kind != KVC_MCACHE_PAGED || r->p.mode == KVC_RUNNER_RECOMPUTE) return st;
    kvc_step_metadata *md = &r->md;
    const kvc_model_config *c = kvc_model_config_of(r->m);
    const kvc_attn_type types[3] = {KVC_ATTN_FULL, KVC_ATTN_SLIDING_WINDOW, KVC_ATTN_CHUNKED_LOCAL};
    bool has[3] = {false, false, false};
    for (int64_t l = 0; l < c->num_layers; l++) has[c->layer_sliding[l] ? 1 : c->layer_chunked[l] ? 2 : 0] = true;
    for (int i = 0; i < 3; i++) {
        if (!has[i]) continue;
        kvc_step_key *k = &md->keys[md->n_keys++];
        k->attn_type = types[i];
        k->key = kvc_attn_type_name(k->attn_type);
        k->block_size = r->lay.block_size;
        k->width = r->lay.blocks_per_seq;
        k->block_table = r->table; /* the same static table for every key (standalone: nothing is released) */
        k->slot_mapping = r->slots;
    }
    if (kvci_model_first_state(c) >= 0) { /* the states: a block per row (state_table), no slots */
        kvc_step_key *k = &md->keys[md->n_keys++];
        *k = (kvc_step_key){.key = kvc_attn_type_name(KVC_ATTN_MAMBA),
                            .attn_type = KVC_ATTN_MAMBA,
                            .block_size = r->lay.block_size,
                            .width = 1,
                            .block_table = r->state_table};
    }
    return KVC_OK;
}

static kvc_status step(kvc_runner *r, int64_t n, float *logits_out /* [n, V] or NULL */, int32_t *next /* [n] */) {
    kvc_forward_args a = {.token_ids = r->ids,
                          .md = &r->md,
                          .caches = r->p.mode == KVC_RUNNER_RECOMPUTE ? NULL : &r->caches,
                          .all_logits = false,
                          .logits = r->logits};
    kvc_status st = kvc_model_forward(r->m, r->ws, &a);
    if (st != KVC_OK) return st;
    const int64_t V = kvc_model_config_of(r->m)->vocab_size;
    const double t0 = kvci_sp_begin();
    for (int64_t b = 0; b < n; b++) next[b] = argmax(r->logits + b * V, V);
    kvci_sp_end(KVC_SP_SAMPLE, t0);
    if (logits_out) memcpy(logits_out, r->logits, (size_t)(n * V) * sizeof(float));
    return KVC_OK;
}

/* Mode 0: every row's whole history, positions 0..len-1, no cache. */
static kvc_status recompute_step(kvc_runner *r, int64_t n, float *logits_out, int32_t *next) {
    int64_t t = 0;
    for (int64_t b = 0; b < n; b++) {
        memcpy(r->ids + t, r->hist + b * r->S, (size_t)r->seq_len[b] * sizeof(int32_t));
        t += r->seq_len[b];
    }
    kvc_status st = kvci_runner_fill_md(r, n, true, NULL, r->seq_len);
    return st != KVC_OK ? st : step(r, n, logits_out, next);
}

static kvc_status prefill(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n, float *logits_out,
                          int32_t *next) {
    kvc_status st = kvci_runner_fill_md(r, n, true, NULL, lens);
    if (st != KVC_OK) return st;
    memcpy(r->ids, ids, (size_t)r->md.n_tokens * sizeof(int32_t));
    if (r->caches.kind == KVC_MCACHE_PAGED) {
        int64_t n_slots = 0;
        st = kvc_static_slots_prefill(&r->lay, lens, n, r->slots, r->max_tokens, &n_slots);
        if (st != KVC_OK) return st;
    }
    return step(r, n, logits_out, next);
}

static kvc_status decode(kvc_runner *r, const int32_t *last /* [n] */, int64_t n, float *logits_out, int32_t *next) {
    /* one token per row at kv_pos = tokens cached before this step */
    kvc_status st = kvci_runner_fill_md(r, n, false, r->seq_len, NULL);
    if (st != KVC_OK) return st;
    memcpy(r->ids, last, (size_t)n * sizeof(int32_t));
    if (r->caches.kind == KVC_MCACHE_PAGED) {
        st = kvc_static_slots_decode(&r->lay, r->kv_pos, n, r->slots);
        if (st != KVC_OK) return st;
    }
    return step(r, n, logits_out, next);
}

/* Refuses step i's logits when a row's are not finite (a NaN or Inf from the
 * model leaves nothing to pick; docs/runner.md): row b's last fed token sits
 * at position seq_len[b] - 1 once the step is done. */
static kvc_status check_logits(const kvc_runner *r, int64_t n, int64_t i) {
    const int64_t V = kvc_model_config_of(r->m)->vocab_size;
    for (int64_t b = 0; b < n; b++) {
        const int64_t bad = kvci_first_nonfinite(r->logits + b * V, V);
        if (bad >= 0)
            return kvci_fail(
                KVC_ERANGE, "runner: non-finite logits at step %lld for request %lld (position %lld): logit %lld is %g",
                (long long)i, (long long)b, (long long)(r->seq_len[b] - 1), (long long)bad,
                (double)r->logits[b * V + bad]);
    }
    return KVC_OK;
}

/* forced [n, NT] or NULL: the tokens fed back instead of the picked ones. */
static kvc_status generate(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n, const int32_t *forced,
                           int32_t *tokens, float *logits, kvc_runner_stats *stats) {
    if (!r || !ids || !lens || !tokens) return kvci_fail(KVC_EINVAL, "runner_generate: NULL argument");
    if (n < 1 || n > r->batch)
        return kvci_fail(KVC_EINVAL, "runner_generate: %lld prompts, the runner takes 1..%lld", (long long)n,
                         (long long)r->batch);
    for (int64_t b = 0; b < n; b++)
        if (lens[b] < 1 || lens[b] > r->max_prompt)
            return kvci_fail(KVC_EINVAL, "runner_generate: prompt %lld has %lld tokens, outside [1, %lld]",
                             (long long)b, (long long)lens[b], (long long)r->max_prompt);
    const int64_t NT = r->p.max_new_tokens, V = kvc_model_config_of(r->m)->vocab_size;
    for (int64_t i = 0; forced && i < n * NT; i++)
        if (forced[i] < 0 || forced[i] >= V)
            return kvci_fail(KVC_ERANGE, "runner_generate_forced: forced[%lld] = %d outside the vocabulary [0, %lld)",
                             (long long)i, (int)forced[i], (long long)V);
    int64_t t = 0;
    for (int64_t b = 0; b < n; b++) {
        memcpy(r->hist + b * r->S, ids + t, (size_t)lens[b] * sizeof(int32_t));
        r->seq_len[b] = lens[b];
        t += lens[b];
    }
    kvc_runner_stats s = {0};
    for (int64_t i = 0; i < NT; i++) {
        const double t0 = now_ms();
        float *lo = logits ? logits + i * n * V : NULL;
        kvc_status st;
        if (r->p.mode == KVC_RUNNER_RECOMPUTE) {
            st = recompute_step(r, n, lo, r->chosen);
        } else if (i == 0) {
            st = prefill(r, ids, lens, n, lo, r->chosen);
        } else {
            for (int64_t b = 0; b < n; b++) r->last[b] = (forced ? forced : tokens)[b * NT + i - 1];
            st = decode(r, r->last, n, lo, r->chosen);
            for (int64_t b = 0; b < n; b++) r->seq_len[b]++;
        }
        if (st == KVC_OK) st = check_logits(r, n, i);
        if (st != KVC_OK) return st;
        for (int64_t b = 0; b < n; b++) {
            tokens[b * NT + i] = r->chosen[b];
            if (r->p.mode == KVC_RUNNER_RECOMPUTE && i + 1 < NT)
                r->hist[b * r->S + r->seq_len[b]++] = forced ? forced[b * NT + i] : r->chosen[b];
        }
        const double dt = now_ms() - t0;
        if (i == 0)
            s.prefill_ms = dt;
        else
            s.decode_ms += dt, s.decode_steps++;
    }
    if (stats) *stats = s;
    return KVC_OK;
}

kvc_status kvc_runner_generate(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n, int32_t *tokens,
                               float *logits, kvc_runner_stats *stats) {
    return generate(r, ids, lens, n, NULL, tokens, logits, stats);
}

kvc_status kvc_runner_generate_forced(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n,
                                      const int32_t *forced, int32_t *tokens, float *logits, kvc_runner_stats *stats) {
    if (!forced) return kvci_fail(KVC_EINVAL, "runner_generate_forced: forced must not be NULL");
    return generate(r, ids, lens, n, forced, tokens, logits, stats);
}
