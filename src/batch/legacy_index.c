/* Self-managed mode: flat indices into the legacy contiguous cache
 * [n_cache_rows, cache_seq_len, ...] (RM 9), bounds-checked. */
#include "base/internal.h"
#include "kvcache/batch.h"

static kvc_status geometry_check(const char *fn, int64_t cache_seq_len, int64_t n_cache_rows) {
    if (cache_seq_len < 1 || n_cache_rows < 1) {
        return kvci_fail(KVC_EINVAL, "%s: cache_seq_len %lld and n_cache_rows %lld must be >= 1", fn,
                         (long long)cache_seq_len, (long long)n_cache_rows);
    }
    if (n_cache_rows > INT64_MAX / cache_seq_len) {
        return kvci_fail(KVC_ERANGE, "%s: %lld rows of %lld positions overflow a flat index", fn,
                         (long long)n_cache_rows, (long long)cache_seq_len);
    }
    return KVC_OK;
}

kvc_status kvc_legacy_index_prefill(int64_t request_offset, const int64_t *seq_lens, int64_t n, int64_t cache_seq_len,
                                    int64_t n_cache_rows, int64_t *out, int64_t cap, int64_t *n_out) {
    const char *fn = "kvc_legacy_index_prefill";
    kvc_status st = geometry_check(fn, cache_seq_len, n_cache_rows);
    if (st != KVC_OK) return st;
    if (n_out == NULL || (seq_lens == NULL && n > 0)) return kvci_fail(KVC_EINVAL, "%s: seq_lens or n_out is NULL", fn);
    if (n < 0) return kvci_fail(KVC_EINVAL, "%s: n %lld must be >= 0", fn, (long long)n);
    if (request_offset < 0 || request_offset > n_cache_rows - n) {
        return kvci_fail(KVC_ERANGE, "%s: request_offset %lld + %lld requests exceeds n_cache_rows %lld", fn,
                         (long long)request_offset, (long long)n, (long long)n_cache_rows);
    }
    int64_t total = 0;
    for (int64_t b = 0; b < n; b++) {
        if (seq_lens[b] < 1 || seq_lens[b] > cache_seq_len) {
            return kvci_fail(KVC_ERANGE, "%s: seq_lens[%lld] = %lld, expected 1..cache_seq_len %lld", fn, (long long)b,
                             (long long)seq_lens[b], (long long)cache_seq_len);
        }
        total += seq_lens[b];
    }
    if (total > cap || (total > 0 && out == NULL)) {
        return kvci_fail(KVC_ERANGE, "%s: %lld indices do not fit in cap %lld", fn, (long long)total,
                         (long long)(out == NULL ? 0 : cap));
    }
    int64_t t = 0;
    for (int64_t b = 0; b < n; b++) {
        for (int64_t p = 0; p < seq_lens[b]; p++) out[t++] = (request_offset + b) * cache_seq_len + p;
    }
    *n_out = total;
    return KVC_OK;
}

kvc_status kvc_legacy_index_decode(const int64_t *cache_rows, const int64_t *kv_pos, int64_t n, int64_t cache_seq_len,
                                   int64_t n_cache_rows, int64_t *out) {
    const char *fn = "kvc_legacy_index_decode";
    kvc_status st = geometry_check(fn, cache_seq_len, n_cache_rows);
    if (st != KVC_OK) return st;
    if (n < 0) return kvci_fail(KVC_EINVAL, "%s: n %lld must be >= 0", fn, (long long)n);
    if (n > 0 && (cache_rows == NULL || kv_pos == NULL || out == NULL)) {
        return kvci_fail(KVC_EINVAL, "%s: cache_rows, kv_pos or out is NULL", fn);
    }
    for (int64_t r = 0; r < n; r++) {
        if (cache_rows[r] < 0 || cache_rows[r] >= n_cache_rows) {
            return kvci_fail(KVC_ERANGE, "%s: cache_rows[%lld] = %lld, expected 0..%lld", fn, (long long)r,
                             (long long)cache_rows[r], (long long)(n_cache_rows - 1));
        }
        if (kv_pos[r] < 0 || kv_pos[r] >= cache_seq_len) {
            return kvci_fail(KVC_ERANGE, "%s: kv_pos[%lld] = %lld, expected 0..cache_seq_len-1 = %lld", fn,
                             (long long)r, (long long)kv_pos[r], (long long)(cache_seq_len - 1));
        }
    }
    for (int64_t r = 0; r < n; r++) out[r] = cache_rows[r] * cache_seq_len + kv_pos[r];
    return KVC_OK;
}
