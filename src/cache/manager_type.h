/* Internal: the single-type manager (one pool, one block table per request)
 * and the vtable each attention type supplies. A new attention type is one
 * file defining a kvc_manager_type and one line in registry.c. */
#ifndef KVC_CACHE_MANAGER_TYPE_H
#define KVC_CACHE_MANAGER_TYPE_H

#include "kvcache/cache.h"

/* One request's logical block table in one manager: n_null null entries
 * (always a prefix), then n_real real blocks linked head -> tail through the
 * manager's next[] array (each real block is held by one request at most). */
typedef struct kvc_req_blocks {
    int64_t n_null;
    int64_t n_real;
    int32_t head; /* first real block, -1 if none */
    int32_t tail; /* last real block, -1 if none */
    bool present; /* the request has an entry (possibly empty) */
    uint64_t generation; /* manager-unique id of this entry (>= 1 while present) */
} kvc_req_blocks;

static inline int64_t kvc_req_blocks_len(const kvc_req_blocks *t) { return t->n_null + t->n_real; }

typedef struct kvc_manager_type kvc_manager_type;

typedef struct kvc_single_manager {
    const kvc_manager_type *type;
    kvc_cache_group group; /* key, block size and the type's parameters */
    int64_t max_model_len;
    int64_t max_table;     /* longest table a request can have */
    kvc_block_pool *pool;
    int32_t *next;         /* [num_blocks] next real block of the same request, -1 ends */
    int32_t *prev;         /* [num_blocks] previous real block (valid back to the table's head) */
    int32_t *scratch;      /* [max_table] ids moved in one call */
    int64_t n_entries;     /* requests with an entry (the reservation rule counts them) */
} kvc_single_manager;

struct kvc_manager_type {
    kvc_attn_type attn_type;
    const char *name;     /* "FullAttention", ... */
    bool fixed_size;      /* pool sized per request by the planner (spec §6.1) */
    bool has_slot_mapping;/* the step builds a slot mapping for it */
    /* Type-specific per-entry rules (needs_block entries). */
    kvc_status (*validate_entry)(const kvc_cache_entry *e, int32_t layer_idx);
    /* Tokens at the start of the sequence whose blocks may be released once
     * `computed` tokens are cached. */
    int64_t (*num_skipped_tokens)(const kvc_single_manager *m, int64_t computed);
    /* Pure: blocks to take so that num_tokens positions are addressable, and
     * whether the pool can give them under the reservation rule. */
    void (*pre_allocate)(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens,
                         int64_t reserved_tokens, int64_t *need, bool *ok);
    /* Null entries placed before the first real block when an empty table
     * receives its first blocks for num_tokens positions. */
    int64_t (*leading_nulls)(const kvc_single_manager *m, int64_t num_tokens);
    /* Fixed types: pool size for `concurrency` requests (null block included). */
    int64_t (*fixed_blocks)(const kvc_cache_group *g, int64_t concurrency, int64_t next_n);
    /* Longest table a request can reach. */
    int64_t (*max_table_len)(const kvc_cache_group *g, int64_t max_model_len);
};

/* registry.c */
const kvc_manager_type *kvc_manager_type_find(kvc_attn_type type);

/* The vtables (one file each). */
extern const kvc_manager_type kvc_full_attention_type;
extern const kvc_manager_type kvc_sliding_window_type;
extern const kvc_manager_type kvc_mamba_type;

/* Shared policies (single_manager.c). */
void kvc_default_pre_allocate(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens,
                              int64_t reserved_tokens, int64_t *need, bool *ok);
int64_t kvc_no_skipped_tokens(const kvc_single_manager *m, int64_t computed);
int64_t kvc_no_leading_nulls(const kvc_single_manager *m, int64_t num_tokens);
int64_t kvc_positions_table_len(const kvc_cache_group *g, int64_t max_model_len);
kvc_status kvc_validate_attention_entry(const kvc_cache_entry *e, int32_t layer_idx);

/* Single-manager operations (single_manager.c). */
kvc_status kvc_single_manager_init(kvc_single_manager *m, const kvc_cache_group *g, int64_t num_blocks,
                                   int64_t max_model_len);
void kvc_single_manager_release(kvc_single_manager *m);
/* Releases blocks that left the window (spec §4.2 remove_skipped). */
void kvc_single_manager_remove_skipped(kvc_single_manager *m, kvc_req_blocks *t, int64_t total_computed);
/* Appends n fresh blocks (phase 2; cannot fail after pre_allocate said ok);
 * a new entry gets `generation`. */
void kvc_single_manager_allocate_new(kvc_single_manager *m, kvc_req_blocks *t, int64_t n, int64_t num_tokens,
                                     uint64_t generation);
/* Returns every block of the table to the pool and drops the entry. */
void kvc_single_manager_free(kvc_single_manager *m, kvc_req_blocks *t);
/* Writes the logical table (nulls included) to out[0..min(len, cap)). */
void kvc_single_manager_table(const kvc_single_manager *m, const kvc_req_blocks *t, int32_t *out, int64_t cap);
/* Writes the last n entries of the table (n <= n_real) to out[0..n). */
void kvc_single_manager_table_tail(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t n, int32_t *out);

#endif
