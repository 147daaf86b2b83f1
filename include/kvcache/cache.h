/* kvcache cache layer: block pool, cache descriptions and their validation,
 * the per-attention-type managers behind the request-level manager, the block
 * planner and cache storage. Behaviour: docs/cache.md.
 *
 * Thread safety: none of these objects is thread-safe; callers serialise
 * access to one object (the reference is single-threaded per worker).
 * Distinct objects may be used from distinct threads. */
#ifndef KVCACHE_CACHE_H
#define KVCACHE_CACHE_H

#include "kvcache/base.h"
#include "kvcache/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVC_NAME_MAX     64 /* bytes of a cache name or manager key, NUL included */
#define KVC_MAX_MANAGERS 16 /* distinct manager keys (groups) in one model */
#define KVC_NULL_BLOCK   0  /* id of the null block of every pool */

/* ---- block pool ------------------------------------------------------------
 * Ids 0..num_blocks-1; id 0 is the null block: never handed out, never free,
 * never counted, silently ignored when given back. Every other block has a
 * reference count (its holders); a block nobody holds is in the free queue,
 * which is also the eviction order of the prefix cache: blocks are handed out
 * from its head in the order they were freed. take/give are O(n) in the ids
 * moved, O(1) per id, and never allocate. */
typedef struct kvc_block_pool kvc_block_pool;

KVC_API kvc_status kvc_block_pool_create(int64_t num_blocks, kvc_block_pool **out);
KVC_API void kvc_block_pool_destroy(kvc_block_pool *pool);
KVC_API int64_t kvc_block_pool_num_blocks(const kvc_block_pool *pool);
KVC_API int64_t kvc_block_pool_num_free(const kvc_block_pool *pool);              /* O(1); null block never counted */
KVC_API bool kvc_block_pool_is_free(const kvc_block_pool *pool, int32_t id);      /* count 0, in the queue */
KVC_API int32_t kvc_block_pool_ref_count(const kvc_block_pool *pool, int32_t id); /* 0 for the null block or a bad id */
/* Pops n ids from the head of the queue into out[0..n), each with count 1.
 * n > num_free is KVC_NO_SPACE and takes nothing; n < 0 is KVC_EINVAL. */
KVC_API kvc_status kvc_block_pool_take(kvc_block_pool *pool, int64_t n, int32_t *out /* [n] */);
/* One more holder for a block; a free block leaves the queue (O(1)). The
 * null block or an out-of-range id is KVC_ERANGE. */
KVC_API kvc_status kvc_block_pool_ref(kvc_block_pool *pool, int32_t id);
/* Drops one holder per listed id; blocks left with none join the tail in
 * list order; null ids are skipped. The whole list is checked first: an
 * out-of-range id (KVC_ERANGE) or a count that would go below 0 (an id
 * already free, or listed more often than it is held: KVC_EDOUBLEFREE)
 * fails the call and leaves the pool unchanged. */
KVC_API kvc_status kvc_block_pool_give(kvc_block_pool *pool, const int32_t *ids /* [n] */, int64_t n);
/* Copies the free queue, head first, into out (at most cap ids); *n_out = queue length. */
KVC_API kvc_status kvc_block_pool_free_ids(const kvc_block_pool *pool, int32_t *out, int64_t cap, int64_t *n_out);

/* ---- cache description ----------------------------------------------------- */
typedef enum kvc_attn_type {
    KVC_ATTN_FULL = 0,           /* "FullAttention": paged, every position kept */
    KVC_ATTN_SLIDING_WINDOW = 1, /* "SlidingWindow": only the last W keys backed */
    KVC_ATTN_MAMBA = 2,          /* "Mamba": one fixed-size state block per request */
    KVC_ATTN_CHUNKED_LOCAL = 3,  /* "ChunkedLocal": only the keys of the query's own chunk of C positions backed */
    KVC_ATTN_TYPE_COUNT
} kvc_attn_type;

/* "FullAttention", "SlidingWindow", "Mamba", "ChunkedLocal"; "?" for an unknown value. */
KVC_API const char *kvc_attn_type_name(kvc_attn_type type);
KVC_API kvc_status kvc_attn_type_parse(const char *name, kvc_attn_type *out);

typedef enum kvc_allocator {
    KVC_ALLOC_HBM = 0,    /* device memory (host memory on this CPU build) */
    KVC_ALLOC_SWAPPED = 1 /* host memory mapped to the device; not for Mamba */
} kvc_allocator;

/* Receives a freshly allocated cache tensor (called exactly once per entry).
 * Optional: without one the tensor is only recorded in the entry's tensor field. */
typedef void (*kvc_tensor_setter)(void *user, const kvc_tensor *tensor);

/* One cache tensor of one layer. Start from kvc_cache_entry_default(). */
typedef struct kvc_cache_entry {
    char name[KVC_NAME_MAX]; /* "k_cache", "v_cache", "nope_cache", ... */
    int32_t attn_type;       /* kvc_attn_type (int so that bad values can be refused) */
    int64_t num_head;        /* heads on this rank (not for Mamba) */
    int32_t n_dims;          /* per-head trailing shape dim[0..n_dims) (not for Mamba) */
    int64_t dim[KVC_MAX_DIMS];
    kvc_dtype dtype;
    bool needs_block;               /* false: no manager, no tensor, no table */
    int64_t block_size;             /* tokens per block; 0 = unset (an error when needs_block) */
    char manager_key[KVC_NAME_MAX]; /* "" = group by attention type */
    int64_t sliding_window;         /* keys a query sees, itself included (SlidingWindow only); 0 = unset */
    int32_t allocator;              /* kvc_allocator */
    int64_t compress_ratio;         /* logical tokens per stored entry, >= 1 (FullAttention only) */
    int32_t layout;                 /* kvc_block_layout */
    bool is_state;                  /* a Mamba state entry (the fields below apply) */
    int32_t n_shape;                /* Mamba: whole-state shape shape[0..n_shape) of one block */
    int64_t shape[KVC_MAX_DIMS];
    int64_t next_n; /* Mamba: speculative depth; 1 + next_n blocks in decode */
    kvc_tensor_setter tensor_setter;
    void *setter_user;
    kvc_tensor tensor; /* output: set by kvc_cache_storage_allocate */
    /* ChunkedLocal only: C, the chunk length; a query at position p sees the keys
     * [floor(p / C) * C, p]. 0 = unset. */
    int64_t attention_chunk_size;
} kvc_cache_entry;

/* Defaults: needs_block, FullAttention, bf16, compress_ratio 1, HBM,
 * block-major, everything else unset/zero. */
KVC_API kvc_cache_entry kvc_cache_entry_default(void);

/* One attention layer (or sub-layer); caches[0..n_caches), none (caches may be NULL) for a layer that keeps
 * nothing (Nemotron-H's MLP layers). */
typedef struct kvc_layer_cache_info {
    int32_t layer_idx;
    int32_t n_caches;
    kvc_cache_entry *caches; /* [n_caches] */
} kvc_layer_cache_info;

typedef struct kvc_model_cache_info {
    int32_t num_layers;
    int32_t n_layer_infos;
    kvc_layer_cache_info *layer_infos; /* [n_layer_infos] */
    bool is_mla_backend;               /* set explicitly by MLA models */
} kvc_model_cache_info;

/* Product of an entry's per-head dims (Mamba: of its state shape); 0 for
 * NULL, -1 for a count outside [0, KVC_MAX_DIMS], a negative extent or a
 * product beyond int64. */
KVC_API int64_t kvc_cache_entry_dim_numel(const kvc_cache_entry *e);
/* Group key: manager_key if set, else the attention type's name; "" for NULL
 * or a manager_key without its NUL within KVC_NAME_MAX bytes. */
KVC_API const char *kvc_cache_entry_group_key(const kvc_cache_entry *e);

/* Checks every validation rule of KM 2.5 (per entry, then per group) and names layer,
 * cache and field on failure. engine_next_n >= 0 also requires every Mamba
 * entry's next_n to equal it; pass -1 to skip that rule. */
KVC_API kvc_status kvc_validate_cache_info(const kvc_model_cache_info *ci, int64_t engine_next_n);

/* New cache info = main's layers then draft's, draft layer_idx offset by
 * main's layer count; inputs untouched. Free with kvc_model_cache_info_destroy.
 * KVC_EINVAL when an offset draft index meets one of main's (main's indices
 * skip layers, as a plan's do for cache-less layers) or overflows int32. */
KVC_API kvc_status kvc_model_cache_info_merge(const kvc_model_cache_info *main_ci, const kvc_model_cache_info *draft_ci,
                                              kvc_model_cache_info **out);
KVC_API void kvc_model_cache_info_destroy(kvc_model_cache_info *ci);

/* The managers a cache description asks for: one group per distinct group key
 * of the needs_block entries, in first-seen order (layer, then entry). */
typedef struct kvc_cache_group {
    char key[KVC_NAME_MAX];
    kvc_attn_type attn_type;
    int64_t block_size;     /* logical tokens per block */
    int64_t sliding_window; /* SlidingWindow: W, else 0 */
    int64_t compress_ratio; /* FullAttention: shared ratio, else 1 */
    int64_t next_n;         /* Mamba: shared next_n, else 0 */
    int32_t n_entries;
    int64_t attention_chunk_size; /* ChunkedLocal: C, else 0 */
} kvc_cache_group;

typedef struct kvc_cache_groups {
    int32_t n_groups;
    kvc_cache_group groups[KVC_MAX_MANAGERS];
} kvc_cache_groups;

/* Groups a validated description (runs kvc_validate_cache_info with -1). */
KVC_API kvc_status kvc_cache_groups_build(const kvc_model_cache_info *ci, kvc_cache_groups *out);

/* Uniform page size (vLLM's unify of page sizes), before planning with
 * shared_pools: raises the block sizes of position keys (FullAttention,
 * SlidingWindow) so that keys whose bytes per block differ get pages equal in
 * bytes, and one pool serves them. The rule, keys taken by page (the bytes of
 * one block of each entry, all equal) from the largest: a key joins the first
 * pool whose page is a multiple of its own, its block size times the ratio
 * (a key with half the bytes per token gets twice the block size), if that
 * stays <= max_block_size; else it opens a pool of its own page. A state key
 * (Mamba: its page is its state) joins only a pool of exactly its page, and a
 * key whose entries differ in page or are not HBM is left alone. Block sizes
 * only grow, to a page some key already has, so the pools are as few as they
 * can be: one per page that no larger page is a multiple of (within the
 * bound). Rewrites the entries' block_size (all or nothing); *n_pools (may be
 * NULL) = the pools the keys then take, a key left alone counted as one. */
KVC_API kvc_status kvc_cache_info_unify_pages(kvc_model_cache_info *ci, int64_t max_block_size, int32_t *n_pools);

/* ---- block planner (KM 6) -------------------------------------------------- */
typedef enum kvc_plan_mode {
    KVC_PLAN_OFFLINE = 0, /* cdiv(max_len, bs) * concurrency + 1 blocks per paged key */
    KVC_PLAN_BUDGET = 1,  /* kv_memory_bytes for all caches: fixed types first, rest per token */
    KVC_PLAN_DEVICE = 2   /* total * mem_fraction - used, MIN over the ranks' free memory */
} kvc_plan_mode;

typedef struct kvc_plan_params {
    kvc_plan_mode mode;
    int64_t max_concurrency;        /* C >= 1 */
    int64_t next_n;                 /* speculative depth >= 0 */
    int64_t max_len;                /* OFFLINE: L_off >= 1 */
    int64_t free_bytes;             /* OFFLINE: device free memory; < 0 = do not check */
    int64_t kv_memory_bytes;        /* BUDGET: bytes given to every cache */
    int64_t total_bytes;            /* DEVICE: device memory */
    double mem_fraction;            /* DEVICE: default 0.85 */
    const int64_t *rank_free_bytes; /* DEVICE: [n_ranks] free memory per rank of the TP group */
    int32_t n_ranks;
    int64_t extra_reserved_bytes; /* model workspace that must stay free */
    int64_t max_prefill_tokens;   /* BUDGET/DEVICE: > 0 requires room for one such prefill */
    int64_t partition;            /* OFFLINE: ranks sharing the persistent cache (default 1) */
    bool shared_pools;            /* one pool for the keys whose entry slots agree in page bytes (below) */
} kvc_plan_params;

KVC_API kvc_plan_params kvc_plan_default_params(void);

typedef struct kvc_group_plan {
    char key[KVC_NAME_MAX];
    kvc_attn_type attn_type;
    int64_t block_size;
    int64_t block_num;   /* blocks of the pool, null block included */
    bool fixed;          /* sized per request (SlidingWindow, ChunkedLocal, Mamba) */
    int64_t block_bytes; /* bytes one block takes over all entries of the group */
    int64_t page_bytes;  /* bytes of one block of each of its entries when all are equal and HBM, else 0 */
    int32_t pool_id;     /* 0: a pool of its own; > 0: the keys with this id share one pool (one id
                          * space, one free queue) of block_num blocks, equal in all of them */
} kvc_group_plan;

typedef struct kvc_block_plan {
    int32_t n_groups;
    kvc_group_plan groups[KVC_MAX_MANAGERS]; /* in group order */
    int64_t per_token_bytes;                 /* paged caches, one token, all layers */
    int64_t fixed_bytes;                     /* every fixed-type entry at its planned count */
    int64_t max_tokens;                      /* tokens the paged budget holds (OFFLINE: max_len * C) */
    int64_t total_bytes;                     /* bytes of every HBM cache tensor at its planned count */
} kvc_block_plan;

/* Shared pools (shared_pools on): keys whose entries are all HBM and whose
 * entry slots agree (a key's i-th entry is slot i; the i-th entries of the
 * keys equal in bytes per block, for every i both have) share one pool: a
 * block id names one page of every entry slot, so a block costs the pages of
 * its key with the most entries; keys that agree with no other keep pools of
 * their own (kvc_cache_info_unify_pages first makes pages equal where block
 * sizes can). The window and
 * state keys of a pool draw blocks from it as they need them: OFFLINE adds
 * their per-request counts to the pool, BUDGET/DEVICE give the whole budget
 * left to the pool, sized by its paged keys' tokens. */
KVC_API kvc_status kvc_plan_blocks(const kvc_plan_params *p, const kvc_model_cache_info *ci, kvc_block_plan *out);
/* Checks the pools a plan names (pool_id >= 0; the keys of a pool have equal
 * block_num and equal page_bytes where both are non-zero: keys of unequal
 * entries are checked slot by slot by kvc_cache_storage_allocate) and
 * recomputes its byte totals, counting each pool once: for plans whose pools
 * a caller set itself. */
KVC_API kvc_status kvc_block_plan_check_pools(kvc_block_plan *plan);
/* Block count planned for a key; KVC_EINVAL naming the key when absent or
 * when its count is outside [1, INT32_MAX] (a caller's plan). */
KVC_API kvc_status kvc_block_plan_block_num(const kvc_block_plan *plan, const char *key, int64_t *out);
/* A plan from explicit counts (keys[i] -> counts[i]), for callers that size pools themselves. */
KVC_API kvc_status kvc_block_plan_from_counts(const kvc_model_cache_info *ci, const char *const *keys,
                                              const int64_t *counts, int32_t n, kvc_block_plan *out);

/* ---- cache storage (KM 7) -------------------------------------------------- */
#define KVC_ALIGN_DEFAULT ((size_t)64)
#define KVC_ALIGN_2MIB    ((size_t)2 << 20)
/* Tensors of at least this many bytes follow the page policy below. */
#define KVC_HUGE_PAGE_MIN_BYTES ((int64_t)2 << 20)

typedef struct kvc_cache_storage kvc_cache_storage;

/* Pages of the cache tensors of at least KVC_HUGE_PAGE_MIN_BYTES (smaller
 * ones always take the plain aligned allocation). A decode kernel streams
 * the cache; hardware prefetchers stop at page boundaries, so on 4 KiB pages
 * it reads slower than on 2 MiB ones (docs/cache.md, "Storage"). */
typedef enum kvc_storage_pages {
    KVC_STORAGE_PAGES_HUGE = 0, /* default: a 2 MiB-aligned mapping advised madvise(MADV_HUGEPAGE)
                                 * (Linux; transparent huge pages where the system allows them) */
    KVC_STORAGE_PAGES_SYSTEM,   /* off: the plain aligned allocation; the system's setting decides */
    KVC_STORAGE_PAGES_BASE,     /* a 2 MiB-aligned mapping advised MADV_NOHUGEPAGE: 4 KiB pages even
                                 * where the system puts huge pages everywhere (for measuring) */
} kvc_storage_pages;

typedef struct kvc_cache_storage_params {
    size_t alignment;        /* KVC_ALIGN_DEFAULT or KVC_ALIGN_2MIB; tensors on a mapping
                              * (HUGE, BASE) are 2 MiB-aligned whatever it says */
    kvc_storage_pages pages; /* page policy of the large tensors */
} kvc_cache_storage_params;

/* alignment KVC_ALIGN_DEFAULT, pages KVC_STORAGE_PAGES_HUGE. */
KVC_API kvc_cache_storage_params kvc_cache_storage_default_params(void);

/* Allocates one tensor per needs_block entry ([n, s, heads, *dim] block-major,
 * [n, heads, s, *dim] head-major, [n, *shape] Mamba; s = block_size /
 * compress_ratio), aligned and paged as p says, with block 0 zero-filled;
 * records it in entry.tensor and hands it to the entry's setter if it has one
 * (the setter is optional: read entry.tensor instead). All-or-nothing. */
KVC_API kvc_status kvc_cache_storage_allocate(kvc_model_cache_info *ci, const kvc_block_plan *plan,
                                              const kvc_cache_storage_params *p, kvc_cache_storage **out);
KVC_API int64_t kvc_cache_storage_bytes(const kvc_cache_storage *s);

/* What a storage asked of the kernel for its pages, and what it got. */
typedef struct kvc_storage_page_info {
    kvc_storage_pages pages; /* the policy it was allocated with */
    int64_t mapped_bytes;    /* bytes of its tensors on 2 MiB-aligned mappings (each rounded up to 2 MiB) */
    int64_t advised_bytes;   /* of those, bytes whose advice the kernel accepted (0 off Linux, or
                              * where transparent huge pages are compiled out) */
    int64_t huge_bytes;      /* bytes on huge pages now: AnonHugePages of the process's mappings that
                              * hold its tensors (/proc/self/smaps; a mapping the kernel merged with an
                              * adjacent one counts whole); -1 where that file cannot be read. Pages
                              * come on first write, so this grows as blocks are written. */
} kvc_storage_page_info;

/* Fills *out for s. Reads /proc/self/smaps, which walks the process's page
 * tables (milliseconds for large caches): a query, not for hot paths. */
KVC_API kvc_status kvc_cache_storage_page_info(const kvc_cache_storage *s, kvc_storage_page_info *out);
/* Frees every tensor (entry.tensor views become dangling). */
KVC_API void kvc_cache_storage_destroy(kvc_cache_storage *s);

/* ---- request-level manager (KM 5) ------------------------------------------ */
typedef struct kvc_manager kvc_manager;

typedef struct kvc_manager_params {
    int64_t max_model_len;           /* >= 1: positions are clamped to it */
    int64_t max_requests;            /* live requests the manager tracks; 0 = default (see below) */
    int64_t engine_next_n;           /* >= 0: Mamba entries must agree; -1 = not checked */
    bool prefix_caching;             /* share computed full blocks between requests (docs/prefix-caching.md) */
    uint64_t prefix_salt;            /* prefix caching: the engine's salt, in every hash chain */
    int64_t state_snapshot_interval; /* prefix caching, Mamba keys: tokens between kept state
                                      * snapshots, a multiple of every FullAttention and
                                      * SlidingWindow block size; 0 = their least common multiple */
    bool poison_new_blocks;          /* debug: fill a block's storage with NaN (float dtypes) or a sentinel
                                      * (int8: -128) whenever it is taken for new data, so that reading a slot
                                      * not written since shows; needs the tensors allocated before the first
                                      * allocation. Default: off, or on when the environment variable
                                      * KVC_POISON_BLOCKS is 1. */
    int64_t kv_event_capacity;       /* prefix caching: > 0 records KV events (block stored / removed /
                                      * cleared, see kvc_manager_drain_kv_events) in a queue of this many;
                                      * 0 = off; at most 2^24 */
} kvc_manager_params;

/* max_model_len 0 (must be set, at most 2^31 - 1), max_requests 0 =
 * min(max(256, the largest pool's usable blocks), 65536), engine_next_n -1,
 * prefix caching off (salt 0, interval 0), poison_new_blocks from KVC_POISON_BLOCKS. */
KVC_API kvc_manager_params kvc_manager_default_params(void);

/* The description must outlive the manager (buffer infos read its tensors).
 * Its memory follows use, not max_requests x max_model_len: request slots,
 * block tables, the prefix index and the query scratch grow (by doubling)
 * as requests, positions, indexed blocks and prompts need them, so a call
 * that grows one may fail with KVC_ENOMEM, changing nothing. */
KVC_API kvc_status kvc_manager_create(const kvc_model_cache_info *ci, const kvc_block_plan *plan,
                                      const kvc_manager_params *p, kvc_manager **out);
KVC_API void kvc_manager_destroy(kvc_manager *m);
/* Makes room up front for n_requests live requests (<= max_requests) of up
 * to n_positions positions each (<= max_model_len), for prefix-cache
 * queries of as many tokens and for an index of every block: within those
 * bounds allocate_slots, find_prefix and cache_computed then allocate
 * nothing (the engine reserves its max_num_seqs x max_model_len). KVC_ENOMEM
 * keeps the room made so far; nothing else changes. */
KVC_API kvc_status kvc_manager_reserve(kvc_manager *m, int64_t n_requests, int64_t n_positions);

#define KVC_ALL_KEYS UINT64_MAX /* key mask selecting every manager */

/* A request's prompt for prefix caching (see below). A cache salt is a byte
 * string with a length: every byte counts, NUL included ("a\0x" and "a\0y"
 * differ). Only requests with the same salt share blocks; no salt (NULL, 0)
 * is a salt of its own. A pointer with length 0, NULL with a length, or a
 * negative length is KVC_EINVAL. */
typedef struct kvc_prompt {
    const int32_t *tokens; /* [n_tokens] the request's token ids */
    int64_t n_tokens;
    const void *cache_salt; /* [cache_salt_len] bytes, or NULL: no salt */
    int64_t cache_salt_len;
} kvc_prompt;

typedef struct kvc_prefix_hit kvc_prefix_hit; /* a prefix-cache hit (below) */

/* What one allocate_slots call asks for. Fill it with designated
 * initialisers; every field left out is 0, which is the common case:
 *
 *   kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = id,
 *                              .computed_tokens = done, .num_new_tokens = 1});
 *
 * The positions of one request in one manager key (block size 4 here), and
 * what each field names:
 *
 *   position  0 1 2 3 | 4 5 6 7 | 8 9 10 11 | 12 13 14 15 | 16 ...
 *             <--- computed_tokens --->|<- num_new ->|<- lookahead ->|
 *             |  already in the cache  | this step   | speculative   |
 *   blocks    [   b0   ][   b1   ][    b2    ][    b3     ][   b4  ]
 *
 * After KVC_OK, every position before computed + num_new + lookahead (cut to
 * max_model_len) has a block; blocks already in the table are kept, new ones
 * are appended. A sliding-window key first releases the blocks that the
 * computed tokens have left behind (they become null entries), then backs
 * every position asked for, as vLLM does: a prefill chunk's blocks are all
 * computed (and cached, with prefix caching) and go back at the request's
 * next call; an empty table starts with null entries only for the blocks
 * before position computed - W + 1. A Mamba key holds its state block(s)
 * instead of position blocks.
 *
 * reserved_tokens is an admission rule for paged (FullAttention) keys: the
 * call succeeds only if, after it, the pool still has
 * cdiv(reserved_tokens, block_size) free blocks for every request that
 * already had an entry in that key, so that running requests can keep
 * decoding. Engines
 * pass their decode reserve when admitting a prompt and 0 for decode steps. */
typedef struct kvc_slot_request {
    int64_t request_id;       /* >= 0 */
    int64_t computed_tokens;  /* tokens whose KV is already cached */
    int64_t num_new_tokens;   /* tokens computed by this step */
    int64_t lookahead_tokens; /* speculative positions after them */
    int64_t reserved_tokens;  /* see above; 0 = no reservation */
    uint64_t skip_keys;       /* bit i set: leave manager i untouched (0 = allocate in every manager) */
    /* Prefix caching, first call for a request only (NULL otherwise): its
     * prompt, whose first computed_tokens tokens are taken from the cache
     * when computed_tokens is the n_tokens of the hit kvc_manager_find_prefix
     * returned for it (0 = no hit). */
    const kvc_prompt *prompt;
    /* That hit, as find_prefix returned it (with the prompt; computed_tokens
     * must be its n_tokens): its blocks are taken as found, after checking
     * that each is still cached under the hash it was found by, so the
     * prompt is not hashed again. NULL with computed_tokens > 0 looks the hit
     * up again (hashing the prompt's blocks). A hit whose blocks are no
     * longer cached, taken already, or replaced by 8 later queries is
     * KVC_EINVAL: query again; so is a hit found for another prompt (its
     * blocks hold other tokens than this prompt's). */
    const kvc_prefix_hit *hit;
    /* The request's cache salt (bytes, see kvc_prompt), for a first call
     * without a prompt: tokens computed beyond a hit, or a request opened
     * before its tokens are known. The salt and with it the seed of the
     * request's hash chains are fixed by its FIRST call, whatever its
     * computed_tokens: the prompt's salt when a prompt is given (this one, if
     * also given, must be the same bytes), else this one (none: unsalted).
     * A later call may restate it; a different salt is KVC_EINVAL. */
    const void *cache_salt;
    int64_t cache_salt_len;
    /* External computed tokens (a KV connector: P/D transfer, offload), first
     * call only, with the prompt: the prompt tokens right after the
     * computed_tokens of the hit whose KV the caller writes into the
     * request's blocks from outside before the step. They count as computed
     * (positions computed + external + num_new_tokens + lookahead are
     * backed; a sliding-window key backs only the blocks its window reads at
     * computed + external, its earlier entries null, so nothing is written
     * there; a Mamba key takes no snapshot of the hit: the state after them
     * arrives with them, into its state block). Once written, the caller
     * reports them with kvc_manager_cache_computed like any computed tokens,
     * and their full blocks are hashed and cached under the request's salt.
     * computed + external must leave the prompt's last token to compute;
     * negative, beyond that, or without a prompt is KVC_EINVAL. */
    int64_t num_external_computed_tokens;
} kvc_slot_request;

/* Two-phase allocation: the positions above become addressable in every
 * selected manager, or nothing is allocated anywhere (KVC_NO_SPACE; blocks
 * that already left a sliding window stay released). KVC_CLAMPED: done, but
 * the demand was cut to max_model_len. Negative counts or id: KVC_EINVAL. */
KVC_API kvc_status kvc_manager_allocate_slots(kvc_manager *m, const kvc_slot_request *req);
/* Returns every block of the request in every manager (unknown id: no-op). */
KVC_API kvc_status kvc_manager_free(kvc_manager *m, int64_t request_id);

/* ---- prefix caching (docs/prefix-caching.md) -------------------------------
 * With kvc_manager_params.prefix_caching on, a full block whose tokens are
 * all computed is indexed by a hash chained over its tokens and its
 * predecessors' (seeded by the engine and request salts) and stays cached
 * after its requests release it, until the pool hands it out again. A new
 * request asks kvc_manager_find_prefix for the longest prefix of its prompt
 * every manager key has cached, passes it to allocate_slots and computes only
 * the rest; after each step kvc_manager_cache_computed indexes what it
 * computed. Every hit is verified against the stored tokens. A block is
 * indexed under the salt its request's first allocation fixed, and only a
 * prompt with the same salt finds it. */
struct kvc_prefix_hit {
    int64_t n_tokens;                    /* L: leading tokens already cached (0 = miss); at most
                                          * n_tokens - 1, so the last prompt token is computed */
    int64_t n_entries[KVC_MAX_MANAGERS]; /* table entries the hit fills per key, null entries
                                          * included (Mamba keys: 1 state snapshot to copy from) */
    int64_t n_cached[KVC_MAX_MANAGERS];  /* cached blocks among them */
    uint64_t handle;                     /* names the blocks found, which the manager keeps for
                                          * allocate_slots (kvc_slot_request.hit); 0 on a miss */
};

/* The hit for a prompt: the largest L that every key accepts (FullAttention:
 * its first L / block_size blocks cached; SlidingWindow: the blocks the
 * window still needs at L; Mamba: a state snapshot at exactly L). The hit
 * is a value: its handle names the blocks found, which the manager keeps
 * (the last 8 hits) until an allocation passes it in kvc_slot_request.hit;
 * no block, table or count changes. With caching off, a zero hit. */
KVC_API kvc_status kvc_manager_find_prefix(kvc_manager *m, const kvc_prompt *prompt, kvc_prefix_hit *out);
/* Indexes the request's full blocks now that its first n_computed tokens
 * (tokens[0..n_computed), the prompt then generated tokens) are computed;
 * releases the Mamba copy source of its last step. A Mamba key does either
 * only when n_computed covers the request's last allocation (computed + new
 * tokens): a report made after the next step was allocated keeps no
 * snapshot, since that step computes on from the state block in place.
 * O(new blocks). No-op with caching off or for an unknown request. */
KVC_API kvc_status kvc_manager_cache_computed(kvc_manager *m, int64_t request_id, const int32_t *tokens,
                                              int64_t n_computed);
/* Mamba keys under prefix caching: the block whose state the request's next
 * step starts from (a hit's snapshot, or the request's own previous block
 * after it moved off a snapshot), or KVC_NULL_BLOCK when its state block
 * already holds it. */
KVC_API kvc_status kvc_manager_state_source(const kvc_manager *m, int64_t request_id, int32_t key_index, int32_t *out);

typedef struct kvc_prefix_stats {
    int64_t queries;       /* requests admitted with a prompt */
    int64_t hits;          /* of those, admitted with a hit */
    int64_t query_tokens;  /* their prompt tokens */
    int64_t hit_tokens;    /* tokens taken from the cache */
    int64_t evictions;     /* cached blocks handed out for new data (all keys) */
    int64_t cached_blocks; /* blocks indexed now (all keys) */
} kvc_prefix_stats;

KVC_API kvc_status kvc_manager_prefix_stats(const kvc_manager *m, kvc_prefix_stats *out);
/* Free blocks of a key that are still cached (indexed); O(1). */
KVC_API int64_t kvc_manager_num_cached_free(const kvc_manager *m, int32_t key_index);
/* One block of a key's pool as the prefix cache sees it. */
typedef struct kvc_block_info {
    int32_t ref_count; /* holders: request tables and copy sources (0: free; always 0 for the null block) */
    bool free;         /* in the free queue (taken from its head when blocks are needed) */
    bool cached;       /* indexed: a prompt with its content finds it until it is handed out again */
    uint64_t hash_hi;  /* the chained XXH3-128 hash it is indexed under (high, low 64 bits); 0, 0 when */
    uint64_t hash_lo;  /* not cached */
} kvc_block_info;

/* The state of block `block_id` of key `key_index`; KVC_ERANGE naming
 * which is out of range. */
KVC_API kvc_status kvc_manager_block_info(const kvc_manager *m, int32_t key_index, int32_t block_id,
                                          kvc_block_info *out);
/* ---- KV events --------------------------------------------------------------
 * With kvc_manager_params.kv_event_capacity > 0, the manager records what
 * enters and leaves its prefix cache, for an external router or index (as
 * vLLM publishes BlockStored / BlockRemoved / AllBlocksCleared): a block
 * indexed (stored), an indexed block handed out for new data (removed), and
 * the index emptied (cleared, every key at once). Events queue in the order
 * they happen until drained; when the queue is full, later events are lost
 * and counted, and the consumer should resynchronise (e.g. treat it as a
 * clear). */
typedef enum kvc_kv_event_type {
    KVC_KV_EVENT_STORED = 0,  /* block_id is now found under hash (its parent: parent) */
    KVC_KV_EVENT_REMOVED = 1, /* block_id, indexed under hash, is no longer found */
    KVC_KV_EVENT_CLEARED = 2  /* every key's index was emptied (key_index -1, no block, no hash) */
} kvc_kv_event_type;

typedef struct kvc_kv_event {
    int32_t type;      /* kvc_kv_event_type */
    int32_t key_index; /* the manager key (-1 for CLEARED) */
    int32_t block_id;
    int64_t n_tokens;              /* tokens the hashed block covers (block size, or a Mamba snapshot interval) */
    uint64_t hash_hi, hash_lo;     /* the block's chained XXH3-128 hash (high, low 64 bits) */
    uint64_t parent_hi, parent_lo; /* STORED: the hash it is chained to (the salted seed for a first block) */
} kvc_kv_event;

/* Moves the oldest queued events, at most cap, to out[0..*n_out), oldest
 * first; *n_lost = events lost to a full queue since the last drain (then
 * reset). Capacity 0: nothing is recorded, *n_out = *n_lost = 0. */
KVC_API kvc_status kvc_manager_drain_kv_events(kvc_manager *m, kvc_kv_event *out, int64_t cap, int64_t *n_out,
                                               int64_t *n_lost);

/* Empties the index of every key (blocks stay where they are). */
KVC_API kvc_status kvc_manager_clear_prefix_cache(kvc_manager *m);

KVC_API int32_t kvc_manager_n_keys(const kvc_manager *m);
KVC_API const char *kvc_manager_key(const kvc_manager *m, int32_t key_index); /* NULL if out of range */
KVC_API kvc_status kvc_manager_key_index(const kvc_manager *m, const char *key, int32_t *out);
KVC_API kvc_attn_type kvc_manager_key_type(const kvc_manager *m, int32_t key_index);
KVC_API int64_t kvc_manager_max_model_len(const kvc_manager *m);
KVC_API int64_t kvc_manager_block_size(const kvc_manager *m, int32_t key_index);
/* The pool the key draws from: its blocks and free blocks (a shared pool's
 * are those of every key drawing from it). */
KVC_API int64_t kvc_manager_num_blocks(const kvc_manager *m, int32_t key_index);
KVC_API int64_t kvc_manager_num_free(const kvc_manager *m, int32_t key_index);
/* The first key drawing from the same pool as key_index (key_index itself
 * for a pool of its own); -1 for a bad index. */
KVC_API int32_t kvc_manager_pool_key(const kvc_manager *m, int32_t key_index);
KVC_API int64_t kvc_manager_next_n(const kvc_manager *m, int32_t key_index); /* Mamba keys */
KVC_API int64_t kvc_manager_compress_ratio(const kvc_manager *m, int32_t key_index);
/* The rules of a key's attention type, for the layers above (step
 * metadata, engine); each comes from the type's vtable, so a new type needs
 * no change there. -1 / false for a bad key index. */

/* Block-table width a step uses for the key: cdiv(max_model_len, block_size)
 * for position tables, 1 (prefill) or 1 + next_n (decode) for Mamba states. */
KVC_API int64_t kvc_manager_step_width(const kvc_manager *m, int32_t key_index, bool is_prefill);
/* Whether a step builds a per-token slot mapping for the key (position
 * tables with compress_ratio 1; not Mamba). */
KVC_API bool kvc_manager_has_slot_mapping(const kvc_manager *m, int32_t key_index);
/* Whether the key's tables hold state blocks rather than one block per
 * block_size positions (Mamba). */
KVC_API bool kvc_manager_key_is_state(const kvc_manager *m, int32_t key_index);
/* Prefix caching, state keys: the tokens between two kept state snapshots
 * (kvc_manager_params.state_snapshot_interval once resolved); 0 for other
 * keys or with caching off; -1 for a bad key index. */
KVC_API int64_t kvc_manager_snapshot_interval(const kvc_manager *m, int32_t key_index);
/* Most real blocks one request holds for `positions` positions when it
 * advances one token a call (sliding window: its window's blocks + 1;
 * Mamba: 1 + next_n); a chunk of n tokens holds up to cdiv(n, block_size)
 * more until its next call. */
KVC_API int64_t kvc_manager_worst_blocks(const kvc_manager *m, int32_t key_index, int64_t positions);
/* Leading positions whose blocks a request no longer needs once `computed`
 * tokens are cached (sliding window: all but the last W - 1; else 0). */
KVC_API int64_t kvc_manager_skipped_tokens(const kvc_manager *m, int32_t key_index, int64_t computed);
/* cdiv(max_len, block_size) of a key (block-table width for that length). */
KVC_API int64_t kvc_manager_table_width(const kvc_manager *m, int32_t key_index, int64_t max_len);
KVC_API int64_t kvc_manager_num_live_requests(const kvc_manager *m);
KVC_API bool kvc_manager_has_request(const kvc_manager *m, int64_t request_id, int32_t key_index);

/* The request's logical block table for one key (null entries included),
 * copied into out (at most cap ids); *n_out = table length (0 if unknown). */
KVC_API kvc_status kvc_manager_block_ids(const kvc_manager *m, int64_t request_id, int32_t key_index, int32_t *out,
                                         int64_t cap, int64_t *n_out);
/* What a persistent copy of a request's table row holds, so that it can be
 * brought up to date by writing only what changed: real blocks never move
 * inside a table, they are appended at its end and released (turned null)
 * from its front. A zeroed state means "contents unknown". */
typedef struct kvc_table_state {
    uint64_t generation; /* the request entry the row was copied from; 0 = unknown / no entry */
    int64_t n_null;      /* leading null entries at that time */
    int64_t len;         /* table length at that time (entries len .. width-1 are null) */
    int64_t width;       /* row width the copy was written with */
    int32_t slot;        /* where the manager keeps the entry (a lookup hint; opaque) */
} kvc_table_state;

/* Brings row[0..width) — the request's table then null padding — up to date.
 * *state says what the row holds (zeroed: rewrite it all) and receives the
 * new state. A table longer than width is KVC_ERANGE and leaves row and
 * state unchanged. Unknown requests give an all-null row. O(changes) when
 * the state is current, O(width) otherwise. */
KVC_API kvc_status kvc_manager_table_sync(const kvc_manager *m, int64_t request_id, int32_t key_index, int32_t *row,
                                          int64_t width, kvc_table_state *state);

/* The pool's free queue of one key, head first. */
KVC_API kvc_status kvc_manager_free_queue(const kvc_manager *m, int32_t key_index, int32_t *out, int64_t cap,
                                          int64_t *n_out);
/* "key1:used1/total1,key2:used2/total2" (the null block counts as used). */
KVC_API kvc_status kvc_manager_format_usage(const kvc_manager *m, char *buf, size_t cap);

/* One block-managed cache tensor, for prefill -> decode KV transfer. */
typedef struct kvc_buffer_info {
    void *data;
    int64_t total_bytes;     /* blocks * bytes_per_block */
    int64_t bytes_per_block; /* storage_block_size * heads * the bytes of dim_numel elements (the dtype table's:
                              * whole blocks for a dtype stored in blocks) */
    char key[KVC_NAME_MAX];
    int64_t block_size; /* storage block size */
    int32_t layer_idx;
    char name[KVC_NAME_MAX];
} kvc_buffer_info;

/* Every needs_block tensor, layers by layer_idx then entries in order; a Mamba
 * entry or a missing tensor is KVC_EINVAL. *n_out = the count (even when > cap). */
KVC_API kvc_status kvc_manager_buffer_infos(const kvc_manager *m, kvc_buffer_info *out, int64_t cap, int64_t *n_out);

/* Checks the pool and table invariants of VER 5 (INV-P1..P5: the null block
 * is never free or handed out, no duplicate in the free queue, every block
 * free or held exactly once, every table entry a valid id; INV-F1: full-
 * attention tables have no null entry; INV-SW-1: sliding-window nulls only as
 * a prefix; INV-MB-1: Mamba tables hold 1 or 1 + next_n blocks; INV-K3: the
 * usage string's counts); KVC_EINTERNAL naming the broken one. */
KVC_API kvc_status kvc_manager_check_invariants(const kvc_manager *m);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_CACHE_H */
