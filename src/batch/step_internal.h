/* Internal layout of kvc_step_buffers, shared by the files of src/batch/
 * that create the workspace and fill one step into it. */
#ifndef KVC_BATCH_STEP_INTERNAL_H
#define KVC_BATCH_STEP_INTERNAL_H

#include "base/internal.h"
#include "kvcache/batch.h"

/* Widest Mamba table a step reads (1 + next_n, next_n <= KVC_MAX_NEXT_N);
 * the step's scratch row holds this many ids (step_tables.c). */
#define KVC_MAX_STATE_BLOCKS (1 + KVC_MAX_NEXT_N)

/* What the buffers remember about one manager key (fixed for the manager's
 * lifetime: block size, type, widths and whether slots are built). */
typedef struct kvc_step_key_info {
    kvc_attn_type attn_type;
    int64_t block_size;
    int64_t num_blocks;    /* ids of the key's pool are < num_blocks */
    bool is_state;         /* the table holds state blocks, not positions (kvc_manager_key_is_state) */
    int64_t prefill_width; /* table width of a prefill step (kvc_manager_step_width) */
    int64_t decode_width;  /* table width of a decode step */
    int64_t max_width;     /* widest table the key ever needs */
    bool has_slots;        /* a step builds its slot mapping (kvc_manager_has_slot_mapping) */
} kvc_step_key_info;

struct kvc_step_buffers {
    const kvc_manager *manager;
    int64_t max_rows;
    int64_t max_tokens;
    int32_t n_keys;
    kvc_step_key_info info[KVC_MAX_MANAGERS];     /* [n_keys] */
    int32_t *block_table[KVC_MAX_MANAGERS];       /* [n_keys] -> [max_rows, max_width], kept between steps */
    kvc_table_state *row_state[KVC_MAX_MANAGERS]; /* [n_keys] -> [max_rows] what each row holds */
    int64_t last_width[KVC_MAX_MANAGERS];         /* [n_keys] width of the previous step (rows move when it changes) */
    int64_t *slot_mapping[KVC_MAX_MANAGERS];      /* [n_keys] -> [max_tokens] or NULL */
    kvc_step_rows rows;                           /* the step's rows: positions [max_tokens], the rest [max_rows] */
    int64_t seen_mask;                            /* buckets of the duplicate-id set - 1 (power of two >= 2 max_rows) */
    int64_t *seen_ids;                            /* [seen_mask + 1] request ids marked this step */
    uint32_t *seen_stamp;                         /* [seen_mask + 1] step stamp of each bucket */
    uint32_t stamp;                               /* this step's stamp */
};

/* Checks rows[0..n_rows) against the buffers' capacity and for a request id
 * listed twice, fills positions, kv_pos, the length arrays and their prefix
 * sums (kvc_step_rows_add) and sets the row part of *md (no keys). */
kvc_status kvci_step_rows_fill(kvc_step_buffers *buf, const kvc_step_request *rows, int64_t n_rows, bool is_prefill,
                               kvc_step_metadata *md);

/* Fills the block table (and slot mapping, if the key has one) of key k for
 * rows already passed through kvci_step_rows_fill; *width receives the width
 * used for this step. */
kvc_status kvci_step_key_fill(kvc_step_buffers *buf, int32_t k, const kvc_step_request *rows, int64_t n_rows,
                              bool is_prefill, int64_t *width);

#endif /* KVC_BATCH_STEP_INTERNAL_H */
