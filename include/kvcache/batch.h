/* kvcache batch layer: the metadata of one forward step. Positions, the
 * sequence-length arrays (direct and cumulative), block tables and slot
 * mappings per manager key for the framework path (built from a kvc_manager),
 * the static tables and linear slots of the standalone path, and the legacy
 * flat index of the self-managed path. Behaviour:
 * RM 2-10 (the step-metadata rules: lengths, packed steps, tables, slot mappings).
 *
 * Conventions of every array here: int64 unless said otherwise; cumulative
 * length arrays are inclusive prefix sums without a leading 0 (entry b is the
 * end offset of row b, row b occupies [cu[b-1], cu[b]) with cu[-1] = 0).
 * After a failed call, caller-owned output arrays hold unspecified values.
 *
 * Thread safety: kvc_step_buffers is not thread-safe (one step at a time per
 * buffers object); building reads the manager, so callers serialise it with
 * the manager's mutating calls. The standalone, sequence-length and legacy
 * helpers are pure functions and thread-safe. */
#ifndef KVCACHE_BATCH_H
#define KVCACHE_BATCH_H

#include "kvcache/base.h"
#include "kvcache/cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- framework step metadata (RM 3-8: packed steps, tables, slot mappings) -- */

/* One scheduled row of a step, in batch order. */
typedef struct kvc_step_request {
    int64_t request_id;      /* < 0: padding (or dummy) row: never looked up, table all null */
    int64_t computed_tokens; /* tokens already cached = first position processed (ignored for padding) */
    int64_t num_new_tokens;  /* query tokens of the row, >= 1 (padding rows: q_len) */
} kvc_step_request;

/* The block table (and slot mapping) of one manager key for one step. */
typedef struct kvc_step_key {
    const char *key; /* manager key (owned by the manager) */
    kvc_attn_type attn_type;
    int64_t block_size; /* logical tokens per block */
    int64_t width; /* kvc_manager_step_width: attention cdiv(max_model_len, block_size); Mamba 1 prefill, 1 + next_n
                      decode */
    int32_t *block_table; /* [n_rows, width] row-major; padding rows and unused tails are 0 (the null id) */
    int64_t
        *slot_mapping; /* [n_tokens]; NULL where kvc_manager_has_slot_mapping is false (Mamba, compress_ratio > 1) */
} kvc_step_key;

/* Everything the model needs for one step. Arrays point into the
 * kvc_step_buffers that built it and stay valid until its next build. A
 * caller may also fill one by hand: kvc_model_forward cross-checks its rows
 * and slots against each other and its tables' widths (docs/batch.md,
 * "Caller-built metadata"); the block ids in the tables stay the caller's. */
typedef struct kvc_step_metadata {
    bool is_prefill;
    int64_t n_rows;                      /* rows of the step (padding rows included) */
    int64_t n_tokens;                    /* query tokens of the step = cu_seq_lens_q[n_rows - 1] (0 without rows) */
    int64_t prompt_tokens;               /* prefill: query tokens of the real (request_id >= 0) rows; decode: 0 */
    int64_t *positions;                  /* [n_tokens] position of each token within its request; padding tokens 0 */
    int64_t *kv_pos;                     /* [n_rows] position of the row's last token; padding rows 0 */
    int64_t *seq_lens_q;                 /* [n_rows] query tokens per row (direct) */
    int64_t *seq_lens_kv;                /* [n_rows] keys visible after the step = kv_pos + 1; padding rows: 1 in
                                          * decode, their own token count in prefill (so prefill cu_q == cu_kv) */
    int64_t *cu_seq_lens_q;              /* [n_rows] inclusive prefix sums of seq_lens_q */
    int64_t *cu_seq_lens_kv;             /* [n_rows] inclusive prefix sums of seq_lens_kv */
    int32_t n_keys;                      /* = kvc_manager_n_keys */
    kvc_step_key keys[KVC_MAX_MANAGERS]; /* [n_keys] in manager order */
} kvc_step_metadata;

/* The per-row part of a step (RM 2-5: positions and lengths), built without a manager
 * into caller-owned arrays: positions, kv_pos, the direct and cumulative
 * length arrays and the step totals. Shared by kvc_step_metadata_build, the
 * engine's self-managed path and the standalone runner. The caller sets the
 * capacities and arrays (never written by the builder), then calls
 * kvc_step_rows_begin once per step and kvc_step_rows_add for its rows in
 * batch order (all at once, or a few at a time: the arrays and totals read
 * the same). Row semantics are those of kvc_step_metadata_build: real row b
 * processes positions computed_tokens .. computed_tokens + num_new_tokens - 1,
 * kv_pos = its last position, seq_lens_kv = kv_pos + 1; a padding row
 * (request_id < 0) contributes num_new_tokens tokens at position 0, kv_pos 0,
 * seq_lens_kv 1 in decode and num_new_tokens in prefill. Request ids are not
 * looked up and not checked for repeats. Never allocates; a pure function of
 * its arguments (thread-safe on distinct objects). */
typedef struct kvc_step_rows {
    /* set by the caller */
    int64_t max_rows;        /* >= 0: rows the arrays below hold */
    int64_t max_tokens;      /* >= 0: tokens positions holds */
    int64_t *positions;      /* [max_tokens] */
    int64_t *kv_pos;         /* [max_rows] */
    int64_t *seq_lens_q;     /* [max_rows] */
    int64_t *seq_lens_kv;    /* [max_rows] */
    int64_t *cu_seq_lens_q;  /* [max_rows] inclusive prefix sums */
    int64_t *cu_seq_lens_kv; /* [max_rows] inclusive prefix sums */
    /* written by kvc_step_rows_begin / kvc_step_rows_add */
    bool is_prefill;
    int64_t n_rows;        /* rows added this step; arrays hold [0, n_rows) and [0, n_tokens) */
    int64_t n_tokens;      /* = cu_seq_lens_q[n_rows - 1] (0 without rows) */
    int64_t prompt_tokens; /* prefill: tokens of the real rows; decode: 0 */
} kvc_step_rows;

/* Starts a step: n_rows = n_tokens = prompt_tokens = 0. Refused (KVC_EINVAL):
 * r NULL, a negative capacity, a NULL array with a positive capacity. */
KVC_API kvc_status kvc_step_rows_begin(kvc_step_rows *r, bool is_prefill);

/* Appends rows[0..n) after the rows already added. Refused, naming the row
 * (numbered from the step's first row) and field: r or (with n > 0) rows NULL,
 * n < 0 (KVC_EINVAL); more than max_rows rows in the step (KVC_ERANGE);
 * num_new_tokens < 1 (KVC_EINVAL); more than max_tokens tokens (KVC_ERANGE);
 * a real row with computed_tokens < 0 (KVC_EINVAL); computed_tokens +
 * num_new_tokens or the cumulative KV length overflowing int64 (KVC_ERANGE);
 * capacities and arrays begin would refuse, or totals (n_rows, n_tokens,
 * prompt_tokens) begin and add did not write (KVC_EINVAL).
 * All-or-nothing: a refused call changes neither r nor its arrays. */
KVC_API kvc_status kvc_step_rows_add(kvc_step_rows *r, const kvc_step_request *rows, int64_t n);

/* Sets the row part of *md from r (is_prefill, n_rows, n_tokens,
 * prompt_tokens and the six arrays, which md then points into) and clears
 * everything else (no keys). Refused (KVC_EINVAL): r or md NULL. */
KVC_API kvc_status kvc_step_rows_to_metadata(const kvc_step_rows *r, kvc_step_metadata *md);

/* Workspace for the metadata of steps with at most max_rows rows and
 * max_tokens query tokens, sized once from the manager's keys (block tables
 * of the widest form: max_model_len for attention keys, 1 + next_n for Mamba
 * keys). Building never allocates. The manager must outlive the buffers. */
typedef struct kvc_step_buffers kvc_step_buffers;

KVC_API kvc_status kvc_step_buffers_create(const kvc_manager *m, int64_t max_rows, int64_t max_tokens,
                                           kvc_step_buffers **out);
KVC_API void kvc_step_buffers_destroy(kvc_step_buffers *buf);
KVC_API int64_t kvc_step_buffers_max_rows(const kvc_step_buffers *buf);
KVC_API int64_t kvc_step_buffers_max_tokens(const kvc_step_buffers *buf);

/* Builds the metadata of one step from rows[0..n_rows) and the manager's
 * current block tables (call it after the step's kvc_manager_allocate_slots).
 * Real row b processes positions computed_tokens .. computed_tokens +
 * num_new_tokens - 1; padding rows contribute num_new_tokens tokens at
 * position 0 (RM 3). Refused (KVC_EINVAL / KVC_ERANGE, message
 * naming the row and field): NULL pointers, n_rows < 0 or > max_rows, more
 * than max_tokens tokens, negative computed_tokens, num_new_tokens < 1, a
 * request id listed twice, a table longer than its width (a guard: the
 * manager clamps tables to max_model_len), a Mamba table shorter than its
 * width, a position whose block index reaches the width. A real request the
 * manager does not know gets null rows. On failure *out is unchanged and the
 * buffers' arrays hold unspecified values. Debug builds assert (RM 7, slot mappings)
 * that every real position the row still needs (from
 * kvc_manager_skipped_tokens on: all of them for FullAttention) maps to a
 * non-null block, the row's last position (the query itself) included. */
KVC_API kvc_status kvc_step_metadata_build(kvc_step_buffers *buf, const kvc_step_request *rows, int64_t n_rows,
                                           bool is_prefill, kvc_step_metadata *out);

/* The entry of one manager key in a built step (NULL if the key is absent). */
KVC_API const kvc_step_key *kvc_step_metadata_key(const kvc_step_metadata *md, const char *key);

/* ---- sequence-length arrays (RM 5) ----------------------------------------- */

/* Query / key-value layouts of the attention call ("X_Y": input X, output Y). */
typedef enum kvc_seq_layout {
    KVC_SEQ_LAYOUT_TND = 0,     /* packed tokens */
    KVC_SEQ_LAYOUT_NTD_TND = 1, /* MLA prefill (non-absorbed) */
    KVC_SEQ_LAYOUT_TND_NTD = 2, /* MLA absorbed decode */
    KVC_SEQ_LAYOUT_BSH = 3,     /* padded contiguous */
    KVC_SEQ_LAYOUT_BSND = 4,
    KVC_SEQ_LAYOUT_BNSD = 5,
    KVC_SEQ_LAYOUT_COUNT
} kvc_seq_layout;

/* Whether an array is passed as per-row counts or inclusive prefix sums. */
typedef enum kvc_len_form { KVC_LEN_DIRECT = 0, KVC_LEN_CUMULATIVE = 1 } kvc_len_form;

/* Spec section 5 rule: Q lengths are cumulative for every T... layout; KV
 * lengths are cumulative when K/V are the step's packed tensors (T... layout,
 * kv_paged false) and direct when read through a block table or padded. */
KVC_API kvc_status kvc_seq_layout_forms(kvc_seq_layout layout, bool kv_paged, kvc_len_form *q_form,
                                        kvc_len_form *kv_form);

/* Writes q_lens / kv_lens (direct, each >= 0) in the forms the layout needs. */
KVC_API kvc_status kvc_seq_lens_fill(kvc_seq_layout layout, bool kv_paged, const int64_t *q_lens /* [n] */,
                                     const int64_t *kv_lens /* [n] */, int64_t n, int64_t *q_out /* [n] */,
                                     int64_t *kv_out /* [n] */);

/* Prefill of prompts seq_lens[b] >= 1 from position 0: Q = KV = seq_lens,
 * in the layout's forms (TND packed: both cumulative). */
KVC_API kvc_status kvc_seq_lens_prefill(kvc_seq_layout layout, bool kv_paged, const int64_t *seq_lens /* [n] */,
                                        int64_t n, int64_t *q_out /* [n] */, int64_t *kv_out /* [n] */);

/* Decode: every row has q_len >= 1 query tokens ending at kv_pos[b] >= 0;
 * Q = q_len, KV = kv_pos + 1 read from the cache (paged for T... layouts). */
KVC_API kvc_status kvc_seq_lens_decode(kvc_seq_layout layout, const int64_t *kv_pos /* [n] */, int64_t q_len, int64_t n,
                                       int64_t *q_out /* [n] */, int64_t *kv_out /* [n] */);

/* ---- standalone static tables and linear slots (RM 10) --------------------- */

typedef struct kvc_static_layout {
    int64_t batch;       /* sequences (cache rows) */
    int64_t max_seq_len; /* positions per sequence, a multiple of block_size */
    int64_t block_size;
    int64_t blocks_per_seq; /* max_seq_len / block_size */
    int64_t total_blocks;   /* batch * blocks_per_seq */
} kvc_static_layout;

/* Refuses non-positive values, max_seq_len % block_size != 0 and more blocks
 * than int32 ids hold. */
KVC_API kvc_status kvc_static_layout_init(int64_t batch, int64_t max_seq_len, int64_t block_size,
                                          kvc_static_layout *out);

/* table[b][i] = b * blocks_per_seq + i; cap = elements table holds. */
KVC_API kvc_status kvc_static_table_fill(const kvc_static_layout *l, int32_t *table /* [batch, blocks_per_seq] */,
                                         int64_t cap);

/* Prefill rows 0..n-1 of seq_lens[b] tokens each (1 <= L <= max_seq_len,
 * n <= batch): slots concat_b(b * max_seq_len + 0 .. L_b - 1);
 * *n_out = sum of seq_lens; more than cap slots is KVC_ERANGE. */
KVC_API kvc_status kvc_static_slots_prefill(const kvc_static_layout *l, const int64_t *seq_lens /* [n] */, int64_t n,
                                            int64_t *slots /* [cap] */, int64_t cap, int64_t *n_out);

/* Decode row b writes at kv_pos[b] (0 <= kv_pos < max_seq_len):
 * slot = b * max_seq_len + kv_pos[b]. */
KVC_API kvc_status kvc_static_slots_decode(const kvc_static_layout *l, const int64_t *kv_pos /* [n] */, int64_t n,
                                           int64_t *slots /* [n] */);

/* ---- self-managed legacy contiguous cache (RM 9) --------------------------- */

/* Prefill: request b of the batch owns cache row request_offset + b (< n_cache_rows)
 * and its token p goes to (request_offset + b) * cache_seq_len + p
 * (1 <= seq_lens[b] <= cache_seq_len). *n_out = sum of seq_lens; more than
 * cap entries is KVC_ERANGE. */
KVC_API kvc_status kvc_legacy_index_prefill(int64_t request_offset, const int64_t *seq_lens /* [n] */, int64_t n,
                                            int64_t cache_seq_len, int64_t n_cache_rows, int64_t *out /* [cap] */,
                                            int64_t cap, int64_t *n_out);

/* Decode: row r writes at kv_pos[r] (< cache_seq_len) of cache row
 * cache_rows[r] (< n_cache_rows): out[r] = cache_rows[r] * cache_seq_len + kv_pos[r]. */
KVC_API kvc_status kvc_legacy_index_decode(const int64_t *cache_rows /* [n] */, const int64_t *kv_pos /* [n] */,
                                           int64_t n, int64_t cache_seq_len, int64_t n_cache_rows,
                                           int64_t *out /* [n] */);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_BATCH_H */
