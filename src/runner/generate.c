/* The standalone loop: one prefill step over the packed prompts, then
 * lock-step greedy decode steps (RM 10: write at kv_pos, visible kv_pos + 1,
 * static table, linear slots); mode 0 recomputes whole sequences instead. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"
#include "runner/runner_internal.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int32_t argmax(const float *v, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return (int32_t)best;
}

/* Lengths, prefix sums and the paged keys of a step whose rows hold q[b]
 * tokens ending at position kv[b] - 1. Positions and slots are filled by the caller. */
static void fill_md(kvc_runner *r, int64_t n, bool prefill)
{
    kvc_step_metadata *md = &r->md;
    memset(md, 0, sizeof *md);
    md->is_prefill = prefill;
    md->n_rows = n;
    int64_t cq = 0, ckv = 0;
    for (int64_t b = 0; b < n; b++) {
        cq += r->lens_q[b];
        ckv += r->lens_kv[b];
        r->cu_q[b] = cq;
        r->cu_kv[b] = ckv;
        r->kv_pos[b] = r->lens_kv[b] - 1;
    }
    md->n_tokens = cq;
    md->prompt_tokens = prefill ? cq : 0;
    md->positions = r->positions;
    md->kv_pos = r->kv_pos;
    md->seq_lens_q = r->lens_q;
    md->seq_lens_kv = r->lens_kv;
    md->cu_seq_lens_q = r->cu_q;
    md->cu_seq_lens_kv = r->cu_kv;
    if (r->caches.kind != KVC_MCACHE_PAGED || r->p.mode == KVC_RUNNER_RECOMPUTE) return;
    const kvc_model_config *c = kvc_model_config_of(r->m);
    bool has[2] = {false, false};
    for (int64_t l = 0; l < c->num_layers; l++) has[c->layer_sliding[l] ? 1 : 0] = true;
    for (int i = 0; i < 2; i++) {
        if (!has[i]) continue;
        kvc_step_key *k = &md->keys[md->n_keys++];
        k->attn_type = i ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_FULL;
        k->key = kvc_attn_type_name(k->attn_type);
        k->block_size = r->lay.block_size;
        k->width = r->lay.blocks_per_seq;
        k->block_table = r->table; /* the same static table for both keys (standalone: nothing is released) */
        k->slot_mapping = r->slots;
    }
}

static kvc_status step(kvc_runner *r, int64_t n, float *logits_out /* [n, V] or NULL */, int32_t *next /* [n] */)
{
    kvc_forward_args a = {.token_ids = r->ids,
                          .md = &r->md,
                          .caches = r->p.mode == KVC_RUNNER_RECOMPUTE ? NULL : &r->caches,
                          .all_logits = false,
                          .logits = r->logits};
    kvc_status st = kvc_model_forward(r->m, r->ws, &a);
    if (st != KVC_OK) return st;
    const int64_t V = kvc_model_config_of(r->m)->vocab_size;
    for (int64_t b = 0; b < n; b++) next[b] = argmax(r->logits + b * V, V);
    if (logits_out) memcpy(logits_out, r->logits, (size_t)(n * V) * sizeof(float));
    return KVC_OK;
}

/* Mode 0: every row's whole history, positions 0..len-1, no cache. */
static kvc_status recompute_step(kvc_runner *r, int64_t n, float *logits_out, int32_t *next)
{
    int64_t t = 0;
    for (int64_t b = 0; b < n; b++) {
        const int64_t len = r->seq_len[b];
        memcpy(r->ids + t, r->hist + b * r->S, (size_t)len * sizeof(int32_t));
        for (int64_t p = 0; p < len; p++) r->positions[t + p] = p;
        r->lens_q[b] = r->lens_kv[b] = len;
        t += len;
    }
    fill_md(r, n, true);
    return step(r, n, logits_out, next);
}

static kvc_status prefill(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n, float *logits_out,
                          int32_t *next)
{
    int64_t t = 0;
    for (int64_t b = 0; b < n; b++) {
        for (int64_t p = 0; p < lens[b]; p++) r->positions[t + p] = p;
        r->lens_q[b] = r->lens_kv[b] = lens[b];
        t += lens[b];
    }
    memcpy(r->ids, ids, (size_t)t * sizeof(int32_t));
    fill_md(r, n, true);
    if (r->caches.kind == KVC_MCACHE_PAGED) {
        int64_t n_slots = 0;
        kvc_status st = kvc_static_slots_prefill(&r->lay, lens, n, r->slots, r->max_tokens, &n_slots);
        if (st != KVC_OK) return st;
    }
    return step(r, n, logits_out, next);
}

static kvc_status decode(kvc_runner *r, const int32_t *last /* [n] */, int64_t n, float *logits_out, int32_t *next)
{
    for (int64_t b = 0; b < n; b++) {
        r->ids[b] = last[b];
        r->positions[b] = r->seq_len[b]; /* kv_pos: tokens cached before this step */
        r->lens_q[b] = 1;
        r->lens_kv[b] = r->seq_len[b] + 1;
    }
    fill_md(r, n, false);
    if (r->caches.kind == KVC_MCACHE_PAGED) {
        kvc_status st = kvc_static_slots_decode(&r->lay, r->kv_pos, n, r->slots);
        if (st != KVC_OK) return st;
    }
    return step(r, n, logits_out, next);
}

kvc_status kvc_runner_generate(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n, int32_t *tokens,
                               float *logits, kvc_runner_stats *stats)
{
    if (!r || !ids || !lens || !tokens) return kvc_fail(KVC_EINVAL, "runner_generate: NULL argument");
    if (n < 1 || n > r->batch)
        return kvc_fail(KVC_EINVAL, "runner_generate: %lld prompts, the runner takes 1..%lld", (long long)n,
                        (long long)r->batch);
    for (int64_t b = 0; b < n; b++)
        if (lens[b] < 1 || lens[b] > r->max_prompt)
            return kvc_fail(KVC_EINVAL, "runner_generate: prompt %lld has %lld tokens, outside [1, %lld]", (long long)b,
                            (long long)lens[b], (long long)r->max_prompt);
    const int64_t NT = r->p.max_new_tokens, V = kvc_model_config_of(r->m)->vocab_size;
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
            for (int64_t b = 0; b < n; b++) r->last[b] = tokens[b * NT + i - 1];
            st = decode(r, r->last, n, lo, r->chosen);
            for (int64_t b = 0; b < n; b++) r->seq_len[b]++;
        }
        if (st != KVC_OK) return st;
        for (int64_t b = 0; b < n; b++) {
            tokens[b * NT + i] = r->chosen[b];
            if (r->p.mode == KVC_RUNNER_RECOMPUTE && i + 1 < NT) r->hist[b * r->S + r->seq_len[b]++] = r->chosen[b];
        }
        const double dt = now_ms() - t0;
        if (i == 0) s.prefill_ms = dt;
        else s.decode_ms += dt, s.decode_steps++;
    }
    if (stats) *stats = s;
    return KVC_OK;
}
