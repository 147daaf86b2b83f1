/* The forward's cross-checks of step metadata a caller built by hand
 * (kvc_step_metadata with positions, lengths, tables and slots of its own
 * rather than from the batch builders): every row's arrays must describe
 * the same tokens, and every slot a paged key writes must be the one its
 * row's block table gives for the token's position, so that a row writes
 * and reads only the blocks of its own table; no two rows share a state
 * block or a contiguous cache row. O(tokens + rows) per key (a sort of the
 * rows for state blocks and cache rows, in workspace scratch), no
 * allocation; what stays the caller's (tables of different rows sharing a
 * block that one of them writes) is in docs/batch.md, "Caller-built
 * metadata". */
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"

/* Row r of md: len = cu_seq_lens_q[r] - cu_seq_lens_q[r - 1] query tokens, equal to seq_lens_q[r];
 * seq_lens_kv[r] in [len, max_kv_len]; its positions seq_lens_kv[r] - len .. seq_lens_kv[r] - 1 in order;
 * kv_pos[r] = seq_lens_kv[r] - 1 and cu_seq_lens_kv the prefix sums of seq_lens_kv where given. */
kvc_status kvci_fwd_check_rows(const kvc_step_metadata *md, int64_t max_kv_len, bool *fresh) {
    const int64_t R = md->n_rows;
    int64_t q0 = 0, cu_kv = 0;
    *fresh = true;
    for (int64_t r = 0; r < R; r++) {
        const int64_t len = md->cu_seq_lens_q[r] - q0, kv = md->seq_lens_kv[r];
        if (len < 1 || len != md->seq_lens_q[r] || md->cu_seq_lens_q[r] > md->n_tokens)
            return kvci_fail(KVC_EINVAL,
                             "forward: row %lld: cu_seq_lens_q %lld after %lld gives %lld query tokens, seq_lens_q "
                             "says %lld (need >= 1, within n_tokens %lld)",
                             (long long)r, (long long)md->cu_seq_lens_q[r], (long long)q0, (long long)len,
                             (long long)md->seq_lens_q[r], (long long)md->n_tokens);
        if (kv < len || kv > max_kv_len)
            return kvci_fail(KVC_EINVAL,
                             "forward: row %lld: seq_lens_kv %lld outside [%lld query tokens, max_kv_len %lld]",
                             (long long)r, (long long)kv, (long long)len, (long long)max_kv_len);
        for (int64_t i = 0; i < len; i++)
            if (md->positions[q0 + i] != kv - len + i)
                return kvci_fail(KVC_EINVAL,
                                 "forward: row %lld: positions[%lld] = %lld, but a row of %lld query tokens over "
                                 "seq_lens_kv %lld keys holds positions %lld..%lld in order",
                                 (long long)r, (long long)(q0 + i), (long long)md->positions[q0 + i], (long long)len,
                                 (long long)kv, (long long)(kv - len), (long long)(kv - 1));
        if (md->kv_pos && md->kv_pos[r] != kv - 1)
            return kvci_fail(KVC_EINVAL, "forward: row %lld: kv_pos %lld, but seq_lens_kv %lld needs kv_pos %lld",
                             (long long)r, (long long)md->kv_pos[r], (long long)kv, (long long)(kv - 1));
        cu_kv += kv; /* kv <= max_kv_len < 2^31, R <= 2^24 rows: no overflow */
        if (md->cu_seq_lens_kv && md->cu_seq_lens_kv[r] != cu_kv)
            return kvci_fail(KVC_EINVAL,
                             "forward: row %lld: cu_seq_lens_kv %lld, but the prefix sum of seq_lens_kv is %lld",
                             (long long)r, (long long)md->cu_seq_lens_kv[r], (long long)cu_kv);
        *fresh = *fresh && kv == len;
        q0 += len;
    }
    return KVC_OK;
}

/* Key k's table [n_rows, width] covers every row's keys, and each slot is -1 (not written) or
 * table[r][p / bs] * bs + p % bs for its token at position p of row r. */
static kvc_status check_key(const kvc_step_metadata *md, int32_t k) {
    const kvc_step_key *key = &md->keys[k];
    const char *name = key->key ? key->key : "(null)";
    const int64_t bs = key->block_size, W = key->width;
    if (!key->key || !key->block_table || bs < 1 || W < 1 || W > INT64_MAX / md->n_rows)
        return kvci_fail(KVC_EINVAL,
                         "forward: md keys[%d] (\"%s\") with a slot_mapping needs a name, a block_table, "
                         "block_size >= 1 (%lld) and width >= 1 (%lld)",
                         (int)k, name, (long long)bs, (long long)W);
    int64_t t = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        const int64_t kv = md->seq_lens_kv[r];
        if ((kv - 1) / bs >= W)
            return kvci_fail(KVC_ERANGE,
                             "forward: key %s row %lld: seq_lens_kv %lld needs %lld blocks of %lld, the block_table "
                             "is %lld wide",
                             name, (long long)r, (long long)kv, (long long)kvci_cdiv(kv, bs), (long long)bs,
                             (long long)W);
        const int32_t *row = key->block_table + r * W;
        for (; t < md->cu_seq_lens_q[r]; t++) {
            const int64_t p = md->positions[t], slot = key->slot_mapping[t];
            const int64_t want = (int64_t)row[p / bs] * bs + p % bs;
            if (slot != KVC_SLOT_SKIP && slot != want)
                return kvci_fail(KVC_EINVAL,
                                 "forward: key %s row %lld: slot_mapping[%lld] = %lld, but position %lld lies in "
                                 "block %d of the row's block_table (slot %lld; -1 skips the write)",
                                 name, (long long)r, (long long)t, (long long)slot, (long long)p, (int)row[p / bs],
                                 (long long)want);
        }
    }
    return KVC_OK;
}

/* A state (Mamba) key: each row's state is the first block of its table row; two rows on one block (the null
 * block aside: padding rows) would run both requests' recurrences over one state. Sorted in scratch [n_rows]. */
static kvc_status check_state_key(const kvc_step_metadata *md, int32_t k, int64_t *scratch) {
    const kvc_step_key *key = &md->keys[k];
    if (key->width < 1 || key->width > INT64_MAX / md->n_rows)
        return kvci_fail(KVC_EINVAL, "forward: md keys[%d] (\"%s\") width %lld must be >= 1", (int)k,
                         key->key ? key->key : "(null)", (long long)key->width);
    for (int64_t r = 0; r < md->n_rows; r++) scratch[r] = key->block_table[r * key->width];
    qsort(scratch, (size_t)md->n_rows, sizeof *scratch, kvci_cmp_i64);
    for (int64_t i = 1; i < md->n_rows; i++)
        if (scratch[i] == scratch[i - 1] && scratch[i] != KVC_NULL_BLOCK)
            return kvci_fail(KVC_EINVAL,
                             "forward: key %s: two step rows have state block %lld (each row needs its own; only "
                             "padding rows share the null block)",
                             key->key ? key->key : "(null)", (long long)scratch[i]);
    return KVC_OK;
}

/* The blocks key k's rows read (entries 0 .. cdiv(seq_lens_kv, bs) - 1) lie within every cache of the key's layers
 * (the smallest NB): the attention of a later layer would refuse them after earlier layers had written the cache. */
static kvc_status check_key_blocks(const kvc_step_metadata *md, int32_t k, const kvc_model_caches *cs) {
    const kvc_step_key *key = &md->keys[k];
    int64_t nb = -1;
    for (int32_t l = 0; l < cs->n_layers; l++) {
        const kvc_layer_cache *lc = &cs->layers[l];
        if (lc->k.data && lc->k.ndim == 4 && strncmp(lc->key, key->key, sizeof lc->key) == 0)
            nb = nb < 0 ? lc->k.shape[0] : kvci_min64(nb, lc->k.shape[0]);
    }
    for (int64_t r = 0; nb >= 0 && r < md->n_rows; r++) {
        const int32_t *row = key->block_table + r * key->width;
        for (int64_t e = 0; e <= (md->seq_lens_kv[r] - 1) / key->block_size; e++)
            if (row[e] < 0 || row[e] >= nb)
                return kvci_fail(KVC_ERANGE,
                                 "forward: key %s row %lld: block_table entry %lld = %d is outside [0, %lld), the "
                                 "blocks of its layers' caches",
                                 key->key, (long long)r, (long long)e, (int)row[e], (long long)nb);
    }
    return KVC_OK;
}

kvc_status kvci_fwd_check_keys(const kvc_step_metadata *md, const kvc_model_caches *cs, int64_t *scratch) {
    if (md->n_keys < 0 || md->n_keys > KVC_MAX_MANAGERS)
        return kvci_fail(KVC_EINVAL, "forward: md n_keys %d outside [0, %d]", (int)md->n_keys, KVC_MAX_MANAGERS);
    for (int32_t k = 0; k < md->n_keys; k++) {
        const kvc_step_key *key = &md->keys[k];
        if (key->slot_mapping) {
            KVC_TRY(check_key(md, k));
            KVC_TRY(check_key_blocks(md, k, cs));
        } else if (key->attn_type == KVC_ATTN_MAMBA && key->block_table)
            KVC_TRY(check_state_key(md, k, scratch));
    }
    return KVC_OK;
}

kvc_status kvci_fwd_check_cache_rows(const int64_t *cache_rows, int64_t n_rows, int64_t rows, int64_t *scratch) {
    for (int64_t r = 0; r < n_rows; r++)
        if (cache_rows[r] < 0 || cache_rows[r] >= rows)
            return kvci_fail(KVC_ERANGE, "forward: cache_rows[%lld] = %lld outside [0, %lld)", (long long)r,
                             (long long)cache_rows[r], (long long)rows);
    memcpy(scratch, cache_rows, (size_t)n_rows * sizeof *scratch);
    qsort(scratch, (size_t)n_rows, sizeof *scratch, kvci_cmp_i64);
    for (int64_t i = 1; i < n_rows; i++) {
        if (scratch[i] != scratch[i - 1]) continue;
        int64_t a = 0, b = 0; /* the first two rows holding it, for the message */
        while (cache_rows[a] != scratch[i]) a++;
        for (b = a + 1; cache_rows[b] != scratch[i]; b++) {}
        return kvci_fail(KVC_EINVAL,
                         "forward: cache_rows[%lld] and cache_rows[%lld] are both cache row %lld (one "
                         "cache row per step row)",
                         (long long)a, (long long)b, (long long)scratch[i]);
    }
    return KVC_OK;
}
