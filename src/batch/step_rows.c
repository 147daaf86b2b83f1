/* The per-row part of a step: validation of the scheduled rows, positions,
 * kv_pos and the direct and cumulative sequence lengths (spec sections 2-5). */
#include <string.h>

#include "base/internal.h"
#include "batch/step_internal.h"

/* True when id was already added in this step: an open-addressing set over
 * seen_ids whose buckets count as empty unless stamped with this step's
 * stamp, so it never needs clearing (and never allocates). */
static bool seen_before(kvc_step_buffers *buf, int64_t id) {
    uint64_t h = (uint64_t)id * 0x9e3779b97f4a7c15ULL;
    for (int64_t b = (int64_t)(h >> 32) & buf->seen_mask;; b = (b + 1) & buf->seen_mask) {
        if (buf->seen_stamp[b] != buf->stamp) {
            buf->seen_stamp[b] = buf->stamp;
            buf->seen_ids[b] = id;
            return false;
        }
        if (buf->seen_ids[b] == id) return true;
    }
}

/* Fails naming the first two rows that carry request id `id`. */
static kvc_status fail_duplicate(const kvc_step_request *rows, int64_t n_rows, int64_t id) {
    int64_t first = -1;
    for (int64_t b = 0; b < n_rows; b++) {
        if (rows[b].request_id != id) continue;
        if (first >= 0) {
            return kvc_fail(KVC_EINVAL, "step rows %lld and %lld: request_id %lld is scheduled twice in one step",
                            (long long)first, (long long)b, (long long)id);
        }
        first = b;
    }
    return kvc_fail(KVC_EINTERNAL, "step rows: duplicate request_id %lld not found again", (long long)id);
}

/* Checks one row's counts; *n_tokens and *kv_total are the running totals
 * before this row and are advanced past it. */
static kvc_status row_check(const kvc_step_buffers *buf, const kvc_step_request *r, int64_t b, bool is_prefill,
                            int64_t *n_tokens, int64_t *kv_total) {
    bool real = r->request_id >= 0;
    if (r->num_new_tokens < 1) {
        return kvc_fail(KVC_EINVAL, "step row %lld (request %lld): num_new_tokens %lld must be >= 1", (long long)b,
                        (long long)r->request_id, (long long)r->num_new_tokens);
    }
    if (r->num_new_tokens > buf->max_tokens - *n_tokens) {
        return kvc_fail(KVC_ERANGE,
                        "step row %lld (request %lld): num_new_tokens %lld brings the step past max_tokens %lld "
                        "(%lld tokens before this row)",
                        (long long)b, (long long)r->request_id, (long long)r->num_new_tokens,
                        (long long)buf->max_tokens, (long long)*n_tokens);
    }
    if (real && r->computed_tokens < 0) {
        return kvc_fail(KVC_EINVAL, "step row %lld (request %lld): computed_tokens %lld must be >= 0", (long long)b,
                        (long long)r->request_id, (long long)r->computed_tokens);
    }
    int64_t visible = real ? r->computed_tokens : 0;
    if (real && visible > INT64_MAX - r->num_new_tokens) {
        return kvc_fail(KVC_ERANGE, "step row %lld (request %lld): computed_tokens %lld + num_new_tokens %lld overflows",
                        (long long)b, (long long)r->request_id, (long long)r->computed_tokens,
                        (long long)r->num_new_tokens);
    }
    visible = real ? visible + r->num_new_tokens : (is_prefill ? r->num_new_tokens : 1);
    if (visible > INT64_MAX - *kv_total) {
        return kvc_fail(KVC_ERANGE, "step row %lld (request %lld): the cumulative KV length overflows", (long long)b,
                        (long long)r->request_id);
    }
    *n_tokens += r->num_new_tokens;
    *kv_total += visible;
    return KVC_OK;
}

kvc_status kvc_step_rows_fill(kvc_step_buffers *buf, const kvc_step_request *rows, int64_t n_rows, bool is_prefill,
                              int64_t *n_tokens, int64_t *prompt_tokens) {
    int64_t t = 0, kv_total = 0;
    if (++buf->stamp == 0) { /* the stamp wrapped: forget every old mark */
        memset(buf->seen_stamp, 0, (size_t)(buf->seen_mask + 1) * sizeof *buf->seen_stamp);
        buf->stamp = 1;
    }
    for (int64_t b = 0; b < n_rows; b++) {
        kvc_status st = row_check(buf, &rows[b], b, is_prefill, &t, &kv_total);
        if (st != KVC_OK) return st;
        if (rows[b].request_id >= 0 && seen_before(buf, rows[b].request_id))
            return fail_duplicate(rows, n_rows, rows[b].request_id);
    }

    int64_t cu_q = 0, cu_kv = 0, prompt = 0;
    for (int64_t b = 0; b < n_rows; b++) {
        const kvc_step_request *r = &rows[b];
        bool real = r->request_id >= 0;
        int64_t first = real ? r->computed_tokens : 0;
        for (int64_t i = 0; i < r->num_new_tokens; i++) buf->positions[cu_q + i] = real ? first + i : 0;
        buf->kv_pos[b] = real ? first + r->num_new_tokens - 1 : 0;
        buf->seq_lens_q[b] = r->num_new_tokens;
        /* padding: 1 key in decode (kv_pos 0); in prefill its own packed
         * tokens, so that cu_q == cu_kv holds for the whole prefill (INV-R4) */
        buf->seq_lens_kv[b] = real ? buf->kv_pos[b] + 1 : (is_prefill ? r->num_new_tokens : 1);
        cu_q += buf->seq_lens_q[b];
        cu_kv += buf->seq_lens_kv[b];
        buf->cu_seq_lens_q[b] = cu_q;
        buf->cu_seq_lens_kv[b] = cu_kv;
        if (real && is_prefill) prompt += r->num_new_tokens;
    }
    KVC_ASSERT(cu_q == t && cu_kv == kv_total);
    *n_tokens = t;
    *prompt_tokens = prompt;
    return KVC_OK;
}
