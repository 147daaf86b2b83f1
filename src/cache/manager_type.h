/* Internal: the single-type manager (one pool, one block table per request)
 * and the vtable each attention type supplies. A new attention type is one
 * file defining a kvc_manager_type and one line in registry.c. */
#ifndef KVC_CACHE_MANAGER_TYPE_H
#define KVC_CACHE_MANAGER_TYPE_H

#include "cache/prefix_index.h"
#include "kvcache/cache.h"

/* One request's logical block table in one manager: ids[0..len), of which
 * the first n_null are the null block (always a prefix) and the rest real
 * blocks. A real block may be in several tables at once (prefix sharing). */
typedef struct kvc_req_blocks {
    int32_t *ids; /* [cap] the table; grows with use (kvci_req_blocks_reserve), kept across entries */
    int64_t cap;  /* entries ids holds, <= max_table */
    int64_t n_null;
    int64_t len;
    bool present;        /* the request has an entry (possibly empty) */
    uint64_t generation; /* manager-unique id of this entry (>= 1 while present) */
    /* Prefix caching (only used when it is on): */
    kvc_hash128 seed;     /* first parent of the request's chain (engine and request salts) */
    kvc_hash128 chain;    /* hash of the request's last hashed block (the seed before the first) */
    int64_t n_hashed;     /* blocks of block_tokens tokens whose hashes the chain has passed */
    int32_t state_source; /* state types: block to copy the initial state from this step, or 0 */
    int64_t scheduled;    /* computed + new tokens of the request's last allocation: its state block
                           * holds the state after them once they are reported computed */
} kvc_req_blocks;

static inline int64_t kvci_req_blocks_real(const kvc_req_blocks *t) { return t->len - t->n_null; }

typedef struct kvc_manager_type kvc_manager_type;

/* The prompt a hit is searched for, with its chain hashes per block of
 * `block_tokens` computed lazily into the manager's scratch. */
typedef struct kvc_prefix_query {
    const int32_t *tokens; /* [n_tokens] */
    int64_t n_tokens;
    kvc_hash128 seed;
} kvc_prefix_query;

/* One key's part of a prefix hit that find_prefix handed out: what the
 * request's table receives, and what proves it is still cached. */
typedef struct kvc_key_hit {
    int32_t *ids;        /* [cap] table entries of positions [0, L), nulls included (state
                          * tables: the snapshot block) */
    kvc_hash128 *hashes; /* [cap] the hash each real entry was indexed under when found */
    int64_t n, cap;
    kvc_hash128 end; /* chain hash after the hit's last block: the request's chain goes on from it */
} kvc_key_hit;

/* The manager's KV event queue (kv_events.c): a ring of cap events. */
typedef struct kvc_kv_events {
    kvc_kv_event *ring; /* [cap] */
    int64_t cap, head, n;
    int64_t lost; /* events dropped because the ring was full, since the last drain */
} kvc_kv_events;

/* Records an event when events are on (no-op for NULL or a zero capacity). */
void kvci_kv_events_record(kvc_kv_events *ev, kvc_kv_event_type type, int32_t key_index, int32_t id, int64_t n_tokens,
                           kvc_hash128 hash, kvc_hash128 parent);

typedef struct kvc_single_manager {
    const kvc_manager_type *type;
    kvc_cache_group group; /* key, block size and the type's parameters */
    int64_t max_model_len;
    int64_t max_table;                /* longest table a request can have */
    kvc_block_pool *pool;             /* its own, or one shared with other keys (kvc_group_plan.pool_id) */
    bool owns_pool;                   /* destroys the pool on release */
    struct kvc_single_manager *peers; /* the manager's keys by key index (a shared pool's cached
                                       * blocks may be in any of their indexes) */
    int32_t *scratch;  /* [min(max_table, num_blocks)] ids moved in one call (the real blocks of a table) */
    int64_t n_entries; /* requests with an entry (the reservation rule counts them) */
    /* Prefix caching (NULL/0 when off): */
    bool caching;
    kvc_prefix_index index;
    kvc_hash128 *chain; /* [query_cap] query: chain hash of each block, chain[i] after block i */
    int64_t query_cap;  /* hashed blocks of the longest query so far (kvci_single_manager_reserve_query) */
    int64_t n_chain;    /* hashes of the current query computed so far */
    int32_t *hit_ids;   /* [query_cap] table entries (or the state source) of the last hit_length */
    int64_t n_hit;
    int64_t evictions;     /* indexed blocks taken for new data */
    kvc_kv_events *events; /* the manager's event queue (NULL: off) */
    int32_t key_index;     /* this manager's key (its index in peers) */
    /* Storage poisoning (debug; NULL when off): */
    const kvc_cache_entry **poison; /* [n_poison] the group's entries, whose blocks are poisoned when taken */
    int32_t n_poison;
} kvc_single_manager;

/* Every rule that depends on the attention type lives here; the layers
 * above ask through the kvc_manager_* queries of cache.h. Slots marked
 * "optional" may be NULL and then take the default named there. */
struct kvc_manager_type {
    kvc_attn_type attn_type;
    const char *name;     /* "FullAttention", ... */
    bool fixed_size;      /* pool sized per request by the planner (KM 6.1) */
    bool reserves_decode; /* the allocate_slots reservation rule applies to it */
    bool state_hits;      /* the table holds state blocks (not one block per block_size positions);
                           * a prefix hit is a state snapshot to copy from, not table entries */
    bool null_prefix;     /* the table may start with null entries (positions no longer needed) */
    /* Type-specific per-entry rules (needs_block entries). */
    kvc_status (*validate_entry)(const kvc_cache_entry *e, int32_t layer_idx);
    /* Tokens at the start of the sequence whose blocks may be released once
     * `computed` tokens are cached (optional: none). */
    int64_t (*num_skipped_tokens)(const kvc_single_manager *m, int64_t computed);
    /* Pure: fresh blocks to take so that num_tokens positions are addressable. */
    int64_t (*blocks_needed)(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens);
    /* Fixed types: pool size for `concurrency` requests (null block included). */
    int64_t (*fixed_blocks)(const kvc_cache_group *g, int64_t concurrency, int64_t next_n);
    /* Longest table a request can reach (optional: cdiv(max_model_len, block_size)). */
    int64_t (*max_table_len)(const kvc_cache_group *g, int64_t max_model_len);
    /* Block-table width of a step (optional: cdiv(max_model_len, block_size)). */
    int64_t (*step_width)(const kvc_cache_group *g, int64_t max_model_len, bool is_prefill);
    /* Whether a step builds a slot mapping for the key (optional: when compress_ratio is 1). */
    bool (*has_slot_mapping)(const kvc_cache_group *g);
    /* Most real blocks one request holds for `positions` positions (optional:
     * cdiv(positions, block_size)). */
    int64_t (*worst_blocks)(const kvc_cache_group *g, int64_t positions);
    /* Extra per-table invariant (optional: none); KVC_EINTERNAL naming it. */
    kvc_status (*check_table)(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t rid);
    /* Appends n fresh blocks for num_tokens positions (phase 2, after
     * blocks_needed; cannot fail) (optional: kvci_single_manager_append). */
    void (*grow)(kvc_single_manager *m, kvc_req_blocks *t, int64_t n, int64_t num_tokens);
    /* Prefix caching: the largest hit length L <= max_len this type accepts
     * for the query (0 = none), leaving in m->hit_ids[0..n_hit) what the
     * request's table receives for it (position tables: the table entries of
     * positions [0, L), nulls included; state tables: the snapshot block). */
    int64_t (*hit_length)(kvc_single_manager *m, const kvc_prefix_query *q, int64_t max_len);
    /* Prefix caching: hashes and indexes the request's blocks once
     * `computed` tokens of `tokens` are in the cache (optional:
     * kvci_paged_cache_computed). */
    void (*cache_computed)(kvc_single_manager *m, kvc_req_blocks *t, const int32_t *tokens, int64_t computed);
};

/* The rules of a type with its optional slots' defaults applied (rules.c). */
int64_t kvci_type_skipped_tokens(const kvc_single_manager *m, int64_t computed);
/* Null entries an empty table starts with when its first allocation finds
 * `computed` tokens cached: the whole blocks num_skipped_tokens(computed)
 * covers (their positions are never read again). */
int64_t kvci_type_leading_nulls(const kvc_single_manager *m, int64_t computed);
int64_t kvci_type_max_table_len(const kvc_manager_type *t, const kvc_cache_group *g, int64_t max_model_len);
int64_t kvci_type_step_width(const kvc_manager_type *t, const kvc_cache_group *g, int64_t max_model_len,
                             bool is_prefill);
bool kvci_type_has_slot_mapping(const kvc_manager_type *t, const kvc_cache_group *g);
int64_t kvci_type_worst_blocks(const kvc_manager_type *t, const kvc_cache_group *g, int64_t positions);
void kvci_type_grow(kvc_single_manager *m, kvc_req_blocks *t, int64_t n, int64_t num_tokens);
void kvci_type_cache_computed(kvc_single_manager *m, kvc_req_blocks *t, const int32_t *tokens, int64_t computed);

/* block_pool.c: which key's prefix index holds a block (-1: none), so that
 * the pool counts each key's free blocks that are still cached in O(1) and a
 * key taking a block of a shared pool knows whose index to drop it from. */
void kvci_block_pool_mark_cached(kvc_block_pool *pool, int32_t id, int32_t key_index);
int32_t kvci_block_pool_cached_by(const kvc_block_pool *pool, int32_t id);
int64_t kvci_block_pool_num_cached_free(const kvc_block_pool *pool, int32_t key_index);
/* kvc_block_pool_give for a key with prefix caching: blocks no index holds
 * go to the head of the free queue (taken first), cached ones to the tail. */
kvc_status kvci_block_pool_give_uncached_first(kvc_block_pool *pool, const int32_t *ids, int64_t n);

/* planner.c: a caller's plan names at most KVC_MAX_MANAGERS groups, each
 * key NUL-terminated, the keys of a shared pool with equal block counts
 * (KVC_EINVAL naming what is wrong). */
kvc_status kvci_block_plan_check(const kvc_block_plan *plan);
/* cache_info.c: bytes of one head's row of the entry for one cache slot (its dims; a state entry: its
 * whole shape), from the dtype table: a dtype stored in blocks runs them along the innermost dim, so that
 * dim must hold whole blocks. False for an unknown dtype, an innermost dim that is not whole blocks, or
 * int64 overflow (kvc_validate_cache_info names which). */
bool kvci_entry_row_bytes(const kvc_cache_entry *e, int64_t *out);
/* Bytes one block of the entry takes in its tensor (its page); of a validated entry. */
int64_t kvci_entry_block_bytes(const kvc_cache_entry *e);
/* The page bytes of every entry of group g when they are all equal and HBM
 * (the entries can be slots of a shared pool), else 0. */
int64_t kvci_group_page_bytes(const kvc_model_cache_info *ci, const kvc_cache_groups *groups, int32_t g);
/* page_unify.c: whether keys a and b can share one pool: every entry of both
 * HBM, and their i-th entries (entry slot i) equal in page bytes for every i
 * both have (the entries of one key may differ: int8 caches and their scales). */
bool kvci_keys_share_slots(const kvc_model_cache_info *ci, const char *a, const char *b);
/* page_unify.c: the max_block_size the planner and the engine both hand
 * kvc_cache_info_unify_pages: max_model_len capped at paged attention's
 * limit (KVC_ATTN_MAX_BLOCK_SIZE), never below a block size ci already has. */
int64_t kvci_page_unify_bound(const kvc_model_cache_info *ci, int64_t max_model_len);
/* The plan of a key (of a checked plan); KVC_EINVAL naming the key when absent. */
kvc_status kvci_block_plan_group(const kvc_block_plan *plan, const char *key, const kvc_group_plan **out);

/* registry.c */
const kvc_manager_type *kvci_manager_type_find(kvc_attn_type type);
#define KVC_MAX_ATTN_TYPES 8 /* built-in types plus those registered at run time */
/* Adds a type at run time (tests of the vtable contract); *out = its attn_type
 * value. The vtable must outlive every manager using it. */
kvc_status kvci_manager_type_register(kvc_manager_type *type, kvc_attn_type *out);

/* The vtables (one file each). */
extern const kvc_manager_type kvc_full_attention_type;
extern const kvc_manager_type kvc_sliding_window_type;
extern const kvc_manager_type kvc_mamba_type;
extern const kvc_manager_type kvc_chunked_local_type;

/* Shared policies (single_manager.c). */
int64_t kvci_positions_blocks_needed(const kvc_single_manager *m, const kvc_req_blocks *t, int64_t num_tokens);
kvc_status kvci_validate_attention_entry(const kvc_cache_entry *e, int32_t layer_idx);
/* Bounds of the types that keep only the last `span` positions a query can
 * see (SlidingWindow: W; ChunkedLocal: a chunk of C). Real blocks a request
 * holds for `positions` positions: the span's, +1 for a span straddling a
 * block boundary. */
int64_t kvci_span_worst_blocks(const kvc_cache_group *g, int64_t span, int64_t positions);
/* Their pool for `concurrency` requests: cdiv(span + 2 next_n, bs) per
 * request, +1 for a straddling span, +1 for the null block. */
int64_t kvci_span_fixed_blocks(const kvc_cache_group *g, int64_t span, int64_t concurrency, int64_t next_n);

/* Prefix-caching policies of paged types (prefix_rules.c). */
/* Chain hash after block i of the query (computed up to i on demand). */
kvc_hash128 kvci_prefix_chain_at(kvc_single_manager *m, const kvc_prefix_query *q, int64_t i);
/* The verified cached block at block index i of the query, or -1. */
int32_t kvci_prefix_lookup(kvc_single_manager *m, const kvc_prefix_query *q, int64_t i);
/* Indexes block id (a no-op when its hash is indexed already) and tells the pool. */
void kvci_single_manager_index(kvc_single_manager *m, int32_t id, kvc_hash128 hash, kvc_hash128 parent,
                               const int32_t *tokens);
/* Room in the index for the blocks that caching `computed` tokens of t
 * can add (before kvci_type_cache_computed); KVC_ENOMEM changes nothing. */
kvc_status kvci_single_manager_reserve_index(kvc_single_manager *m, const kvc_req_blocks *t, int64_t computed);
/* Empties the manager's index. */
void kvci_single_manager_clear_index(kvc_single_manager *m);
/* Hashes the table's full computed blocks, indexing its real ones. */
void kvci_paged_cache_computed(kvc_single_manager *m, kvc_req_blocks *t, const int32_t *tokens, int64_t computed);
/* The hit rule of types that release a leading part of the sequence: L needs
 * the blocks from num_skipped_tokens(L) / block_size on, the earlier entries
 * are nulls; searched from the longest candidate down (a miss at block i
 * moves the candidate end to i). */
int64_t kvci_windowed_hit_length(kvc_single_manager *m, const kvc_prefix_query *q, int64_t max_len);

/* Fills block id of e's tensor with its dtype's poison value (storage_poison.c);
 * no-op without a tensor. */
void kvci_storage_poison_block(const kvc_cache_entry *e, int32_t id);

/* Single-manager operations (single_manager.c). */
/* Key key_index of the manager whose keys are peers[], drawing from `shared`
 * (NULL: a pool of its own of num_blocks blocks). */
kvc_status kvci_single_manager_init(kvc_single_manager *m, const kvc_cache_group *g, int64_t num_blocks,
                                    int64_t max_model_len, int64_t hash_tokens, kvc_block_pool *shared);
void kvci_single_manager_release(kvc_single_manager *m);
/* Room for len (<= max_table) entries in t's ids (doubling); KVC_ENOMEM
 * leaves t as it was. */
kvc_status kvci_req_blocks_reserve(const kvc_single_manager *m, kvc_req_blocks *t, int64_t len);
/* Room in the query scratch (chain, hit_ids) for a hit of up to len tokens;
 * KVC_ENOMEM leaves it as it was. No-op without prefix caching. */
kvc_status kvci_single_manager_reserve_query(kvc_single_manager *m, int64_t len);
/* Releases blocks that left the window (KM 4.2 remove_skipped). */
void kvci_single_manager_remove_skipped(kvc_single_manager *m, kvc_req_blocks *t, int64_t total_computed);
/* Opens the entry if absent (with `generation`). */
void kvci_single_manager_open(kvc_single_manager *m, kvc_req_blocks *t, uint64_t generation, kvc_hash128 seed);
/* Room in h for a hit of n entries (doubling); KVC_ENOMEM leaves it as it was. */
kvc_status kvci_key_hit_reserve(const kvc_single_manager *m, kvc_key_hit *h, int64_t n);
/* Copies the last hit_length result, of hit_len tokens, into h (which has
 * room for it). */
void kvci_single_manager_keep_hit(const kvc_single_manager *m, int64_t hit_len, kvc_key_hit *h);
/* Whether every real block of h is still indexed under the hash it had. */
bool kvci_single_manager_hit_valid(const kvc_single_manager *m, const kvc_key_hit *h);
/* The first block (in prompt blocks of block_tokens) of the valid hit h, of
 * hit_len tokens, whose stored tokens differ from the query's at its place
 * or whose stored parent is not the hit's block before it (the seed for a
 * first block), or -1: no hashing, so the first real block after null
 * entries is checked by its tokens only. */
int64_t kvci_single_manager_hit_mismatch(const kvc_single_manager *m, const kvc_key_hit *h, const kvc_prefix_query *q,
                                         int64_t hit_len);
/* Table entries the hit gives an empty entry. */
int64_t kvci_single_manager_hit_table_len(const kvc_single_manager *m, const kvc_key_hit *h);
/* Free (cached) blocks the hit takes out of the queue from entry `from` on. */
int64_t kvci_single_manager_hit_free_blocks(const kvc_single_manager *m, const kvc_key_hit *h, int64_t from);
/* Places the hit h, of hit_len tokens, into the empty entry t: table
 * entries, or the copy source of a state type; its blocks gain a holder and
 * the request's chain continues after them. Entries below `from` (the
 * leading nulls at the request's computed tokens when external tokens follow
 * the hit) stay null and take nothing; the table has at least `from` entries. */
void kvci_single_manager_take_hit(kvc_single_manager *m, kvc_req_blocks *t, const kvc_key_hit *h, int64_t hit_len,
                                  int64_t from);
/* An empty table's leading null entries for its first allocation with
 * `computed` tokens cached (kvci_type_leading_nulls); no-op otherwise. */
void kvci_single_manager_skip_leading(const kvc_single_manager *m, kvc_req_blocks *t, int64_t computed);
/* The grow of position-table types: appends n fresh blocks. */
void kvci_single_manager_append(kvc_single_manager *m, kvc_req_blocks *t, int64_t n);
/* Returns every block of the table to the pool and drops the entry. */
void kvci_single_manager_free(kvc_single_manager *m, kvc_req_blocks *t);
/* Takes n blocks from the pool into out for new data: drops the index
 * entries of cached blocks it reuses (counted as evictions) and poisons
 * their storage when that debug option is on. */
void kvci_single_manager_take(kvc_single_manager *m, int64_t n, int32_t *out);
/* Gives ids[0..n) back (each loses one holder; cannot fail for held ids):
 * with prefix caching, a block that nobody holds any more goes to the head of
 * the free queue when no index holds it and to the tail when one does. */
void kvci_single_manager_give(kvc_single_manager *m, const int32_t *ids, int64_t n);

#endif
