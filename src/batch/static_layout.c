/* Standalone deployment: the static block table and linear slots
 * (RM 10). */
#include "base/internal.h"
#include "kvcache/batch.h"

kvc_status kvc_static_layout_init(int64_t batch, int64_t max_seq_len, int64_t block_size, kvc_static_layout *out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_static_layout_init: out is NULL");
    if (batch < 1) return kvci_fail(KVC_EINVAL, "static layout: batch %lld must be >= 1", (long long)batch);
    if (max_seq_len < 1) {
        return kvci_fail(KVC_EINVAL, "static layout: max_seq_len %lld must be >= 1", (long long)max_seq_len);
    }
    if (block_size < 1)
        return kvci_fail(KVC_EINVAL, "static layout: block_size %lld must be >= 1", (long long)block_size);
    if (max_seq_len % block_size != 0) {
        return kvci_fail(KVC_EINVAL,
                         "static layout: max_seq_len %lld is not a multiple of block_size %lld (rows would overlap)",
                         (long long)max_seq_len, (long long)block_size);
    }
    int64_t per_seq = max_seq_len / block_size;
    if (per_seq > INT32_MAX / batch || max_seq_len > INT64_MAX / batch) {
        return kvci_fail(KVC_ERANGE, "static layout: batch %lld x %lld blocks per sequence exceeds int32 block ids",
                         (long long)batch, (long long)per_seq);
    }
    out->batch = batch;
    out->max_seq_len = max_seq_len;
    out->block_size = block_size;
    out->blocks_per_seq = per_seq;
    out->total_blocks = batch * per_seq;
    return KVC_OK;
}

/* A layout is what kvc_static_layout_init makes of its batch, max_seq_len and block_size: a
 * caller's own struct with other fields (a total that does not bound the table, products past
 * int64) is refused before any of them sizes a write. */
static kvc_status layout_check(const char *fn, const kvc_static_layout *l) {
    kvc_static_layout made;
    kvc_status st = kvc_static_layout_init(l->batch, l->max_seq_len, l->block_size, &made);
    if (st != KVC_OK) return kvci_fail(st, "%s: layout: %s", fn, kvc_last_error());
    if (made.blocks_per_seq != l->blocks_per_seq || made.total_blocks != l->total_blocks)
        return kvci_fail(KVC_EINVAL,
                         "%s: layout blocks_per_seq %lld and total_blocks %lld, kvc_static_layout_init gives %lld and "
                         "%lld",
                         fn, (long long)l->blocks_per_seq, (long long)l->total_blocks, (long long)made.blocks_per_seq,
                         (long long)made.total_blocks);
    return KVC_OK;
}

kvc_status kvc_static_table_fill(const kvc_static_layout *l, int32_t *table, int64_t cap) {
    if (l == NULL || table == NULL) return kvci_fail(KVC_EINVAL, "kvc_static_table_fill: layout or table is NULL");
    kvc_status st = layout_check("kvc_static_table_fill", l);
    if (st != KVC_OK) return st;
    if (cap < l->total_blocks) {
        return kvci_fail(KVC_ERANGE, "kvc_static_table_fill: cap %lld is less than batch x blocks_per_seq = %lld",
                         (long long)cap, (long long)l->total_blocks);
    }
    for (int64_t b = 0; b < l->batch; b++) {
        for (int64_t i = 0; i < l->blocks_per_seq; i++) {
            table[b * l->blocks_per_seq + i] = (int32_t)(b * l->blocks_per_seq + i);
        }
    }
    return KVC_OK;
}

/* Checks the row count of a standalone call against the layout. */
static kvc_status rows_check(const char *fn, const kvc_static_layout *l, const void *in, int64_t n, const void *outp) {
    if (l == NULL || outp == NULL || (in == NULL && n > 0)) {
        return kvci_fail(KVC_EINVAL, "%s: layout, input or output is NULL", fn);
    }
    kvc_status st = layout_check(fn, l);
    if (st != KVC_OK) return st;
    if (n < 0 || n > l->batch) {
        return kvci_fail(KVC_ERANGE, "%s: n %lld rows, expected 0..batch %lld", fn, (long long)n, (long long)l->batch);
    }
    return KVC_OK;
}

kvc_status kvc_static_slots_prefill(const kvc_static_layout *l, const int64_t *seq_lens, int64_t n, int64_t *slots,
                                    int64_t cap, int64_t *n_out) {
    kvc_status st = rows_check("kvc_static_slots_prefill", l, seq_lens, n, n_out);
    if (st != KVC_OK) return st;
    int64_t total = 0;
    for (int64_t b = 0; b < n; b++) {
        if (seq_lens[b] < 1 || seq_lens[b] > l->max_seq_len) {
            return kvci_fail(KVC_ERANGE,
                             "kvc_static_slots_prefill: seq_lens[%lld] = %lld, expected 1..max_seq_len %lld",
                             (long long)b, (long long)seq_lens[b], (long long)l->max_seq_len);
        }
        total += seq_lens[b];
    }
    if (total > cap || (total > 0 && slots == NULL)) {
        return kvci_fail(KVC_ERANGE, "kvc_static_slots_prefill: %lld slots do not fit in cap %lld", (long long)total,
                         (long long)(slots == NULL ? 0 : cap));
    }
    int64_t t = 0;
    for (int64_t b = 0; b < n; b++) {
        for (int64_t p = 0; p < seq_lens[b]; p++) slots[t++] = b * l->max_seq_len + p;
    }
    *n_out = total;
    return KVC_OK;
}

kvc_status kvc_static_slots_decode(const kvc_static_layout *l, const int64_t *kv_pos, int64_t n, int64_t *slots) {
    kvc_status st = rows_check("kvc_static_slots_decode", l, kv_pos, n, slots);
    if (st != KVC_OK) return st;
    for (int64_t b = 0; b < n; b++) {
        if (kv_pos[b] < 0 || kv_pos[b] >= l->max_seq_len) {
            return kvci_fail(KVC_ERANGE,
                             "kvc_static_slots_decode: kv_pos[%lld] = %lld, expected 0..max_seq_len-1 = %lld",
                             (long long)b, (long long)kv_pos[b], (long long)(l->max_seq_len - 1));
        }
    }
    for (int64_t b = 0; b < n; b++) slots[b] = b * l->max_seq_len + kv_pos[b];
    return KVC_OK;
}
