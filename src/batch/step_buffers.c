/* The step workspace: sized once from the manager's keys, never grown. */
#include <stdlib.h>

#include "base/internal.h"
#include "batch/step_internal.h"

/* calloc of count elements of elem bytes with an overflow check; does
 * nothing (returns NULL) once *st holds a failure, so calls can be chained. */
static void *zalloc(int64_t count, size_t elem, const char *what, kvc_status *st) {
    if (*st != KVC_OK) return NULL;
    if (count < 1) count = 1;
    if ((uint64_t)count > SIZE_MAX / elem) {
        *st = kvci_fail(KVC_ENOMEM, "step buffers: %s needs %lld elements of %zu bytes, more than memory can address",
                        what, (long long)count, elem);
        return NULL;
    }
    void *p = kvci_calloc((size_t)count, elem);
    if (p == NULL) {
        *st = kvci_fail(KVC_ENOMEM, "step buffers: cannot allocate %s (%lld elements of %zu bytes)", what,
                        (long long)count, elem);
    }
    return p;
}

/* Reads the fixed facts of key k from the manager. */
static kvc_status key_info_read(const kvc_manager *m, int32_t k, kvc_step_key_info *info) {
    info->attn_type = kvc_manager_key_type(m, k);
    info->block_size = kvc_manager_block_size(m, k);
    info->num_blocks = kvc_manager_num_blocks(m, k);
    info->is_state = kvc_manager_key_is_state(m, k);
    info->prefill_width = kvc_manager_step_width(m, k, true);
    info->decode_width = kvc_manager_step_width(m, k, false);
    info->has_slots = kvc_manager_has_slot_mapping(m, k);
    info->max_width = kvci_max64(info->prefill_width, info->decode_width);
    const char *key = kvc_manager_key(m, k);
    if (info->block_size < 1 || info->num_blocks < 1 || info->prefill_width < 1 || info->decode_width < 1) {
        return kvci_fail(KVC_EINVAL,
                         "step buffers: manager key %d (%s) reports block_size %lld, num_blocks %lld, step widths "
                         "%lld (prefill) and %lld (decode); expected positive sizes",
                         (int)k, key ? key : "?", (long long)info->block_size, (long long)info->num_blocks,
                         (long long)info->prefill_width, (long long)info->decode_width);
    }
    if (info->is_state && info->max_width > KVC_MAX_STATE_BLOCKS)
        return kvci_fail(KVC_EINVAL,
                         "step buffers: manager key %d (%s) reads %lld state blocks a step; a step holds at "
                         "most %d",
                         (int)k, key ? key : "?", (long long)info->max_width, KVC_MAX_STATE_BLOCKS);
    return KVC_OK;
}

kvc_status kvc_step_buffers_create(const kvc_manager *m, int64_t max_rows, int64_t max_tokens, kvc_step_buffers **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_step_buffers_create: out is NULL");
    *out = NULL;
    if (m == NULL) return kvci_fail(KVC_EINVAL, "kvc_step_buffers_create: manager is NULL");
    if (max_rows < 1 || max_rows > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "kvc_step_buffers_create: max_rows %lld must be in [1, 2^31)",
                         (long long)max_rows);
    if (max_tokens < 1) {
        return kvci_fail(KVC_EINVAL, "kvc_step_buffers_create: max_tokens %lld must be >= 1", (long long)max_tokens);
    }
    int32_t n_keys = kvc_manager_n_keys(m);
    if (n_keys < 0 || n_keys > KVC_MAX_MANAGERS) {
        return kvci_fail(KVC_EINVAL, "kvc_step_buffers_create: manager has %d keys, expected 0..%d", (int)n_keys,
                         KVC_MAX_MANAGERS);
    }
    kvc_step_buffers *buf = kvci_calloc(1, sizeof *buf);
    if (buf == NULL) return kvci_fail(KVC_ENOMEM, "kvc_step_buffers_create: cannot allocate the buffers object");
    buf->manager = m;
    buf->max_rows = max_rows;
    buf->rows.max_rows = max_rows;
    buf->rows.max_tokens = max_tokens;
    buf->max_tokens = max_tokens;
    buf->n_keys = n_keys;

    kvc_status st = KVC_OK;
    buf->rows.positions = zalloc(max_tokens, sizeof(int64_t), "positions", &st);
    buf->rows.kv_pos = zalloc(max_rows, sizeof(int64_t), "kv_pos", &st);
    buf->rows.seq_lens_q = zalloc(max_rows, sizeof(int64_t), "seq_lens_q", &st);
    buf->rows.seq_lens_kv = zalloc(max_rows, sizeof(int64_t), "seq_lens_kv", &st);
    buf->rows.cu_seq_lens_q = zalloc(max_rows, sizeof(int64_t), "cu_seq_lens_q", &st);
    buf->rows.cu_seq_lens_kv = zalloc(max_rows, sizeof(int64_t), "cu_seq_lens_kv", &st);
    buf->seen_mask = 1;
    while (buf->seen_mask + 1 < 2 * max_rows) buf->seen_mask = 2 * buf->seen_mask + 1;
    buf->seen_ids = zalloc(buf->seen_mask + 1, sizeof(int64_t), "the duplicate-id set", &st);
    buf->seen_stamp = zalloc(buf->seen_mask + 1, sizeof(uint32_t), "the duplicate-id set", &st);
    for (int32_t k = 0; st == KVC_OK && k < n_keys; k++) {
        st = key_info_read(m, k, &buf->info[k]);
        if (st != KVC_OK) break;
        if (buf->info[k].max_width > INT64_MAX / max_rows) {
            st = kvci_fail(KVC_ENOMEM, "kvc_step_buffers_create: block table of key %s: %lld rows x %lld overflows",
                           kvc_manager_key(m, k), (long long)max_rows, (long long)buf->info[k].max_width);
            break;
        }
        buf->block_table[k] = zalloc(max_rows * buf->info[k].max_width, sizeof(int32_t), "a block table", &st);
        buf->row_state[k] = zalloc(max_rows, sizeof(kvc_table_state), "the block table row states", &st);
        if (buf->info[k].has_slots) buf->slot_mapping[k] = zalloc(max_tokens, sizeof(int64_t), "a slot mapping", &st);
    }
    if (st != KVC_OK) {
        kvc_step_buffers_destroy(buf);
        return st;
    }
    *out = buf;
    return KVC_OK;
}

void kvc_step_buffers_destroy(kvc_step_buffers *buf) {
    if (buf == NULL) return;
    for (int32_t k = 0; k < KVC_MAX_MANAGERS; k++) {
        kvci_free(buf->block_table[k]);
        kvci_free(buf->row_state[k]);
        kvci_free(buf->slot_mapping[k]);
    }
    kvci_free(buf->rows.positions);
    kvci_free(buf->rows.kv_pos);
    kvci_free(buf->rows.seq_lens_q);
    kvci_free(buf->rows.seq_lens_kv);
    kvci_free(buf->rows.cu_seq_lens_q);
    kvci_free(buf->rows.cu_seq_lens_kv);
    kvci_free(buf->seen_ids);
    kvci_free(buf->seen_stamp);
    kvci_free(buf);
}

int64_t kvc_step_buffers_max_rows(const kvc_step_buffers *buf) { return buf ? buf->max_rows : 0; }
int64_t kvc_step_buffers_max_tokens(const kvc_step_buffers *buf) { return buf ? buf->max_tokens : 0; }
