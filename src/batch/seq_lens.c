/* Direct and cumulative sequence-length arrays per attention layout
 * (RM 5) and the standalone prefill/decode forms (RM 10). */
#include "base/internal.h"
#include "kvcache/batch.h"

static bool layout_is_packed(kvc_seq_layout layout) {
    return layout == KVC_SEQ_LAYOUT_TND || layout == KVC_SEQ_LAYOUT_NTD_TND || layout == KVC_SEQ_LAYOUT_TND_NTD;
}

kvc_status kvc_seq_layout_forms(kvc_seq_layout layout, bool kv_paged, kvc_len_form *q_form, kvc_len_form *kv_form) {
    if ((int)layout < 0 || layout >= KVC_SEQ_LAYOUT_COUNT) {
        return kvci_fail(KVC_EINVAL, "sequence lengths: layout %d is not a kvc_seq_layout", (int)layout);
    }
    if (q_form == NULL || kv_form == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_seq_layout_forms: q_form or kv_form is NULL");
    bool packed = layout_is_packed(layout);
    *q_form = packed ? KVC_LEN_CUMULATIVE : KVC_LEN_DIRECT;
    *kv_form = packed && !kv_paged ? KVC_LEN_CUMULATIVE : KVC_LEN_DIRECT;
    return KVC_OK;
}

/* Writes in[0..n) to out in the given form; refuses negative entries. */
static kvc_status lens_write(const char *what, kvc_len_form form, const int64_t *in, int64_t n, int64_t *out) {
    int64_t sum = 0;
    for (int64_t b = 0; b < n; b++) {
        if (in[b] < 0) {
            return kvci_fail(KVC_EINVAL, "sequence lengths: %s[%lld] = %lld must be >= 0", what, (long long)b,
                             (long long)in[b]);
        }
        if (in[b] > INT64_MAX - sum) {
            return kvci_fail(KVC_ERANGE, "sequence lengths: prefix sum of %s overflows at row %lld", what,
                             (long long)b);
        }
        sum += in[b];
        out[b] = form == KVC_LEN_CUMULATIVE ? sum : in[b];
    }
    return KVC_OK;
}

kvc_status kvc_seq_lens_fill(kvc_seq_layout layout, bool kv_paged, const int64_t *q_lens, const int64_t *kv_lens,
                             int64_t n, int64_t *q_out, int64_t *kv_out) {
    kvc_len_form qf = KVC_LEN_DIRECT, kvf = KVC_LEN_DIRECT;
    kvc_status st = kvc_seq_layout_forms(layout, kv_paged, &qf, &kvf);
    if (st != KVC_OK) return st;
    if (n < 0) return kvci_fail(KVC_EINVAL, "kvc_seq_lens_fill: n %lld must be >= 0", (long long)n);
    if (n > 0 && (q_lens == NULL || kv_lens == NULL || q_out == NULL || kv_out == NULL)) {
        return kvci_fail(KVC_EINVAL, "kvc_seq_lens_fill: NULL array with n %lld", (long long)n);
    }
    st = lens_write("q_lens", qf, q_lens, n, q_out);
    if (st != KVC_OK) return st;
    return lens_write("kv_lens", kvf, kv_lens, n, kv_out);
}

kvc_status kvc_seq_lens_prefill(kvc_seq_layout layout, bool kv_paged, const int64_t *seq_lens, int64_t n,
                                int64_t *q_out, int64_t *kv_out) {
    for (int64_t b = 0; seq_lens != NULL && b < n; b++) {
        if (seq_lens[b] < 1) {
            return kvci_fail(KVC_EINVAL, "kvc_seq_lens_prefill: seq_lens[%lld] = %lld must be >= 1", (long long)b,
                             (long long)seq_lens[b]);
        }
    }
    return kvc_seq_lens_fill(layout, kv_paged, seq_lens, seq_lens, n, q_out, kv_out);
}

kvc_status kvc_seq_lens_decode(kvc_seq_layout layout, const int64_t *kv_pos, int64_t q_len, int64_t n, int64_t *q_out,
                               int64_t *kv_out) {
    kvc_len_form qf = KVC_LEN_DIRECT, kvf = KVC_LEN_DIRECT;
    kvc_status st = kvc_seq_layout_forms(layout, true, &qf, &kvf);
    if (st != KVC_OK) return st;
    if (n < 0) return kvci_fail(KVC_EINVAL, "kvc_seq_lens_decode: n %lld must be >= 0", (long long)n);
    if (n > 0 && (kv_pos == NULL || q_out == NULL || kv_out == NULL)) {
        return kvci_fail(KVC_EINVAL, "kvc_seq_lens_decode: NULL array with n %lld", (long long)n);
    }
    if (q_len < 1) return kvci_fail(KVC_EINVAL, "kvc_seq_lens_decode: q_len %lld must be >= 1", (long long)q_len);
    if (n > 0 && q_len > INT64_MAX / n) {
        return kvci_fail(KVC_ERANGE, "kvc_seq_lens_decode: %lld rows of q_len %lld overflow", (long long)n,
                         (long long)q_len);
    }
    for (int64_t b = 0; b < n; b++) {
        if (kv_pos[b] < 0 || kv_pos[b] == INT64_MAX) {
            return kvci_fail(KVC_EINVAL, "kvc_seq_lens_decode: kv_pos[%lld] = %lld must be in [0, INT64_MAX)",
                             (long long)b, (long long)kv_pos[b]);
        }
    }
    for (int64_t b = 0; b < n; b++) {
        q_out[b] = qf == KVC_LEN_CUMULATIVE ? q_len * (b + 1) : q_len;
        kv_out[b] = kv_pos[b] + 1; /* read through the block table / padded cache: direct */
    }
    KVC_ASSERT(kvf == KVC_LEN_DIRECT);
    return KVC_OK;
}
