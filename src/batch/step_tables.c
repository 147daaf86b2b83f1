/* The per-key part of a step: block tables from the manager's request
 * tables (RM 6) and slot mappings from the positions (RM 7). */
#include <string.h>

#include "base/internal.h"
#include "batch/step_internal.h"

/* Refuses position p of step row b when its logical block lies past the
 * table width or, when it must be backed, on the null block (a slot there
 * would write into the null block): a step past the request's allocation. */
static kvc_status check_position(const kvc_step_buffers *buf, int32_t k, int64_t b, int64_t rid, int64_t p,
                                 const int32_t *row /* [width] */, int64_t width, bool must_be_backed) {
    int64_t bs = buf->info[k].block_size, blk = p / bs;
    if (blk >= width)
        return kvci_fail(KVC_ERANGE,
                         "key %s, step row %lld (request %lld): position %lld lies in logical block %lld, past the "
                         "table width %lld (block_size %lld)",
                         kvc_manager_key(buf->manager, k), (long long)b, (long long)rid, (long long)p, (long long)blk,
                         (long long)width, (long long)bs);
    if (must_be_backed && row[blk] == KVC_NULL_BLOCK)
        return kvci_fail(KVC_EINVAL,
                         "key %s, step row %lld (request %lld): position %lld lies in logical block %lld, which the "
                         "request's table does not back (allocate its slots first)",
                         kvc_manager_key(buf->manager, k), (long long)b, (long long)rid, (long long)p, (long long)blk);
    return KVC_OK;
}

/* Brings row b's table of key k up to date (the rows persist between steps,
 * so only what changed since the row was last written is copied) and checks
 * its length against the width; a real row's request must have an entry in
 * the key whose table backs the row's last position. */
static kvc_status table_row_fill(kvc_step_buffers *buf, int32_t k, const kvc_step_request *r, int64_t b, int64_t width,
                                 bool is_prefill, int32_t *row /* [width] */) {
    const kvc_step_key_info *info = &buf->info[k];
    kvc_table_state *state = &buf->row_state[k][b];
    /* State rows hold the first `width` state blocks of a table that may be longer. */
    int64_t sync_width = info->is_state ? info->max_width : width;
    if (info->is_state) *state = (kvc_table_state){0};
    int32_t scratch[KVC_MAX_STATE_BLOCKS];
    int32_t *target = info->is_state ? scratch : row;
    kvc_status st = kvc_manager_table_sync(buf->manager, r->request_id, k, target, sync_width, state);
    if (st != KVC_OK) {
        *state = (kvc_table_state){0};
        return kvci_fail(st, "key %s, step row %lld (request %lld): %s", kvc_manager_key(buf->manager, k), (long long)b,
                         (long long)r->request_id, kvc_last_error());
    }
    if (info->is_state) {
        if (r->request_id >= 0 && state->len < width) {
            return kvci_fail(KVC_EINVAL,
                             "key %s, step row %lld (request %lld): %s table holds %lld blocks, a %s step needs "
                             "%lld (allocate the step's slots first)",
                             kvc_manager_key(buf->manager, k), (long long)b, (long long)r->request_id,
                             kvc_attn_type_name(info->attn_type), (long long)state->len,
                             is_prefill ? "prefill" : "decode", (long long)width);
        }
        memcpy(row, scratch, (size_t)width * sizeof *row);
    } else if (r->request_id >= 0) {
        if (state->generation == 0)
            return kvci_fail(KVC_EINVAL,
                             "key %s, step row %lld (request %lld): the request holds no blocks of this key (unknown "
                             "to the manager, or its slots were not allocated)",
                             kvc_manager_key(buf->manager, k), (long long)b, (long long)r->request_id);
        st = check_position(buf, k, b, r->request_id, buf->rows.kv_pos[b], row, width, true);
        if (st != KVC_OK) return st;
    }
    for (int64_t i = 0; i < width; i++) KVC_ASSERT(row[i] >= 0 && row[i] < info->num_blocks);
    return KVC_OK;
}

/* slot = table[row][pos / bs] * bs + pos % bs for every token of the step. */
static kvc_status slots_fill(kvc_step_buffers *buf, int32_t k, const kvc_step_request *rows, int64_t n_rows,
                             int64_t width) {
    const kvc_step_key_info *info = &buf->info[k];
    const int32_t *table = buf->block_table[k];
    int64_t *slots = buf->slot_mapping[k];
    int64_t bs = info->block_size;
    int64_t t = 0;
    for (int64_t b = 0; b < n_rows; b++) {
        const int32_t *row = table + b * width;
        bool real = rows[b].request_id >= 0;
        /* RM section 7 [proposed]: the positions a real row still needs are backed. */
        int64_t needed_from = real ? kvc_manager_skipped_tokens(buf->manager, k, buf->rows.kv_pos[b]) : INT64_MAX;
        for (int64_t i = 0; i < buf->rows.seq_lens_q[b]; i++, t++) {
            int64_t p = buf->rows.positions[t];
            kvc_status st = check_position(buf, k, b, rows[b].request_id, p, row, width, p >= needed_from);
            if (st != KVC_OK) return st;
            slots[t] = (int64_t)row[p / bs] * bs + p % bs;
        }
    }
    return KVC_OK;
}

kvc_status kvci_step_key_fill(kvc_step_buffers *buf, int32_t k, const kvc_step_request *rows, int64_t n_rows,
                              bool is_prefill, int64_t *width_out) {
    const kvc_step_key_info *info = &buf->info[k];
    int64_t width = is_prefill ? info->prefill_width : info->decode_width;
    KVC_ASSERT(width >= 1 && width <= info->max_width);
    int32_t *table = buf->block_table[k];
    if (width != buf->last_width[k]) { /* rows moved: nothing they hold is known */
        memset(buf->row_state[k], 0, (size_t)buf->max_rows * sizeof *buf->row_state[k]);
        buf->last_width[k] = width;
    }
    for (int64_t b = 0; b < n_rows; b++) { /* padding rows: unknown ids give null rows */
        kvc_status st = table_row_fill(buf, k, &rows[b], b, width, is_prefill, table + b * width);
        if (st != KVC_OK) return st;
    }
    if (info->has_slots) {
        kvc_status st = slots_fill(buf, k, rows, n_rows, width);
        if (st != KVC_OK) return st;
    }
    *width_out = width;
    return KVC_OK;
}
