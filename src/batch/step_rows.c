/* The per-row part of a step: validation of the scheduled rows, positions,
 * kv_pos and the direct and cumulative sequence lengths (RM 2-5).
 * kvc_step_rows_begin / _add / _to_metadata are the manager-free builder;
 * kvci_step_rows_fill adds the framework path's repeated-id check. */
#include <string.h>

#include "base/internal.h"
#include "batch/step_internal.h"

/* The caller's capacities and arrays, checked by begin and again by every add (the struct is the
 * caller's: it may have changed them since). */
static kvc_status arrays_check(const char *fn, const kvc_step_rows *r) {
    if (r->max_rows < 0 || r->max_tokens < 0) {
        return kvci_fail(KVC_EINVAL, "%s: max_rows %lld and max_tokens %lld must be >= 0", fn, (long long)r->max_rows,
                         (long long)r->max_tokens);
    }
    if (r->max_tokens > 0 && r->positions == NULL)
        return kvci_fail(KVC_EINVAL, "%s: positions is NULL with max_tokens %lld", fn, (long long)r->max_tokens);
    if (r->max_rows > 0 && (r->kv_pos == NULL || r->seq_lens_q == NULL || r->seq_lens_kv == NULL ||
                            r->cu_seq_lens_q == NULL || r->cu_seq_lens_kv == NULL)) {
        return kvci_fail(KVC_EINVAL,
                         "%s: kv_pos, seq_lens_q, seq_lens_kv, cu_seq_lens_q and cu_seq_lens_kv must not be NULL "
                         "with max_rows %lld",
                         fn, (long long)r->max_rows);
    }
    return KVC_OK;
}

kvc_status kvc_step_rows_begin(kvc_step_rows *r, bool is_prefill) {
    if (r == NULL) return kvci_fail(KVC_EINVAL, "kvc_step_rows_begin: rows object is NULL");
    kvc_status st = arrays_check("kvc_step_rows_begin", r);
    if (st != KVC_OK) return st;
    r->is_prefill = is_prefill;
    r->n_rows = 0;
    r->n_tokens = 0;
    r->prompt_tokens = 0;
    return KVC_OK;
}

/* Checks one row's counts (b numbered from the step's first row);
 * *n_tokens and *kv_total are the running totals before this row and are
 * advanced past it. */
static kvc_status row_check(const kvc_step_rows *rs, const kvc_step_request *r, int64_t b, int64_t *n_tokens,
                            int64_t *kv_total) {
    bool real = r->request_id >= 0;
    if (r->num_new_tokens < 1) {
        return kvci_fail(KVC_EINVAL, "step row %lld (request %lld): num_new_tokens %lld must be >= 1", (long long)b,
                         (long long)r->request_id, (long long)r->num_new_tokens);
    }
    if (r->num_new_tokens > rs->max_tokens - *n_tokens) {
        return kvci_fail(KVC_ERANGE,
                         "step row %lld (request %lld): num_new_tokens %lld brings the step past max_tokens %lld "
                         "(%lld tokens before this row)",
                         (long long)b, (long long)r->request_id, (long long)r->num_new_tokens,
                         (long long)rs->max_tokens, (long long)*n_tokens);
    }
    if (real && r->computed_tokens < 0) {
        return kvci_fail(KVC_EINVAL, "step row %lld (request %lld): computed_tokens %lld must be >= 0", (long long)b,
                         (long long)r->request_id, (long long)r->computed_tokens);
    }
    int64_t visible = real ? r->computed_tokens : 0;
    if (real && visible > INT64_MAX - r->num_new_tokens) {
        return kvci_fail(
            KVC_ERANGE, "step row %lld (request %lld): computed_tokens %lld + num_new_tokens %lld overflows",
            (long long)b, (long long)r->request_id, (long long)r->computed_tokens, (long long)r->num_new_tokens);
    }
    visible = real ? visible + r->num_new_tokens : (rs->is_prefill ? r->num_new_tokens : 1);
    if (visible > INT64_MAX - *kv_total) {
        return kvci_fail(KVC_ERANGE, "step row %lld (request %lld): the cumulative KV length overflows", (long long)b,
                         (long long)r->request_id);
    }
    *n_tokens += r->num_new_tokens;
    *kv_total += visible;
    return KVC_OK;
}

kvc_status kvc_step_rows_add(kvc_step_rows *rs, const kvc_step_request *rows, int64_t n) {
    if (rs == NULL) return kvci_fail(KVC_EINVAL, "kvc_step_rows_add: rows object is NULL");
    if (n < 0) return kvci_fail(KVC_EINVAL, "kvc_step_rows_add: n %lld must be >= 0", (long long)n);
    if (rows == NULL && n > 0)
        return kvci_fail(KVC_EINVAL, "kvc_step_rows_add: rows is NULL with n %lld", (long long)n);
    kvc_status st = arrays_check("kvc_step_rows_add", rs);
    if (st != KVC_OK) return st;
    /* the rows and tokens so far index the arrays: only what begin and add can have written */
    if (rs->n_rows < 0 || rs->n_rows > rs->max_rows || rs->n_tokens < 0 || rs->n_tokens > rs->max_tokens ||
        rs->prompt_tokens < 0 || rs->prompt_tokens > rs->n_tokens ||
        (rs->n_rows > 0 && rs->cu_seq_lens_kv[rs->n_rows - 1] < 0))
        return kvci_fail(KVC_EINVAL,
                         "kvc_step_rows_add: the step so far (n_rows %lld, n_tokens %lld) is not one begin and add "
                         "wrote (max_rows %lld, max_tokens %lld)",
                         (long long)rs->n_rows, (long long)rs->n_tokens, (long long)rs->max_rows,
                         (long long)rs->max_tokens);
    if (n > rs->max_rows - rs->n_rows) {
        return kvci_fail(KVC_ERANGE, "kvc_step_rows_add: %lld rows after %lld bring the step past max_rows %lld",
                         (long long)n, (long long)rs->n_rows, (long long)rs->max_rows);
    }
    const int64_t b0 = rs->n_rows;
    int64_t t = rs->n_tokens, kv_total = b0 > 0 ? rs->cu_seq_lens_kv[b0 - 1] : 0;
    for (int64_t i = 0; i < n; i++) {
        st = row_check(rs, &rows[i], b0 + i, &t, &kv_total);
        if (st != KVC_OK) return st;
    }

    int64_t cu_q = rs->n_tokens, cu_kv = b0 > 0 ? rs->cu_seq_lens_kv[b0 - 1] : 0, prompt = rs->prompt_tokens;
    for (int64_t i = 0; i < n; i++) {
        const kvc_step_request *r = &rows[i];
        const int64_t b = b0 + i;
        bool real = r->request_id >= 0;
        int64_t first = real ? r->computed_tokens : 0;
        for (int64_t j = 0; j < r->num_new_tokens; j++) rs->positions[cu_q + j] = real ? first + j : 0;
        rs->kv_pos[b] = real ? first + r->num_new_tokens - 1 : 0;
        rs->seq_lens_q[b] = r->num_new_tokens;
        /* padding: 1 key in decode (kv_pos 0); in prefill its own packed
         * tokens, so that cu_q == cu_kv holds for the whole prefill (INV-R4) */
        rs->seq_lens_kv[b] = real ? rs->kv_pos[b] + 1 : (rs->is_prefill ? r->num_new_tokens : 1);
        cu_q += rs->seq_lens_q[b];
        cu_kv += rs->seq_lens_kv[b];
        rs->cu_seq_lens_q[b] = cu_q;
        rs->cu_seq_lens_kv[b] = cu_kv;
        if (real && rs->is_prefill) prompt += r->num_new_tokens;
    }
    KVC_ASSERT(cu_q == t && cu_kv == kv_total);
    rs->n_rows = b0 + n;
    rs->n_tokens = t;
    rs->prompt_tokens = prompt;
    return KVC_OK;
}

kvc_status kvc_step_rows_to_metadata(const kvc_step_rows *r, kvc_step_metadata *md) {
    if (r == NULL || md == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_step_rows_to_metadata: rows and md must not be NULL");
    *md = (kvc_step_metadata){.is_prefill = r->is_prefill,
                              .n_rows = r->n_rows,
                              .n_tokens = r->n_tokens,
                              .prompt_tokens = r->prompt_tokens,
                              .positions = r->positions,
                              .kv_pos = r->kv_pos,
                              .seq_lens_q = r->seq_lens_q,
                              .seq_lens_kv = r->seq_lens_kv,
                              .cu_seq_lens_q = r->cu_seq_lens_q,
                              .cu_seq_lens_kv = r->cu_seq_lens_kv};
    return KVC_OK;
}

/* ---- framework path: the same rows, plus no request id twice ------------- */

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
            return kvci_fail(KVC_EINVAL, "step rows %lld and %lld: request_id %lld is scheduled twice in one step",
                             (long long)first, (long long)b, (long long)id);
        }
        first = b;
    }
    return kvci_fail(KVC_EINTERNAL, "step rows: duplicate request_id %lld not found again", (long long)id);
}

kvc_status kvci_step_rows_fill(kvc_step_buffers *buf, const kvc_step_request *rows, int64_t n_rows, bool is_prefill,
                               kvc_step_metadata *md) {
    kvc_step_rows *rs = &buf->rows;
    kvc_status st = kvc_step_rows_begin(rs, is_prefill);
    if (st != KVC_OK) return st;
    if (++buf->stamp == 0) { /* the stamp wrapped: forget every old mark */
        memset(buf->seen_stamp, 0, (size_t)(buf->seen_mask + 1) * sizeof *buf->seen_stamp);
        buf->stamp = 1;
    }
    /* the first row that repeats an id; the rows up to it are checked first,
     * so a row's own count errors are reported before its repetition */
    int64_t dup = -1;
    for (int64_t b = 0; b < n_rows && dup < 0; b++)
        if (rows[b].request_id >= 0 && seen_before(buf, rows[b].request_id)) dup = b;
    st = kvc_step_rows_add(rs, rows, dup >= 0 ? dup + 1 : n_rows);
    if (st != KVC_OK) return st;
    if (dup >= 0) return fail_duplicate(rows, n_rows, rows[dup].request_id);
    return kvc_step_rows_to_metadata(rs, md);
}
