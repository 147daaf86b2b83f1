/* JSON traces replayed against the request-level manager (`kvcache trace`,
 * `kvcache demo`, tests and fuzz targets).
 *
 * A trace is one JSON object:
 *   max_model_len   positive integer
 *   layers          [{"caches": [entry, ...]}, ...]; an entry has name,
 *                   attn_type (FullAttention | SlidingWindow | Mamba |
 *                   ChunkedLocal), num_head, dim (int or list), dtype (f32 |
 *                   f16 | bf16 | i8), block_size, and optionally manager_key,
 *                   sliding_window, attention_chunk_size, compress_ratio, needs_block, cache_layout (BnBsND |
 *                   BnNBsD) and, for Mamba only, shape and next_n
 *                   (num_head and dim are optional for Mamba, block_size
 *                   defaults to 1 there)
 *   block_num       {KEY: blocks, ...}   (null block included)  -- or --
 *   plan            {"mode": "offline", "max_len", "max_concurrency", "next_n"}
 *                   {"mode": "online", "kv_memory_bytes", "max_concurrency", "next_n"}
 *                   plus optional "max_prefill_tokens" (next_n defaults to 0)
 *   prefix_caching  optional {"salt"?: engine salt >= 0, "state_snapshot_interval"?: tokens}:
 *                   turns prefix caching on (docs/prefix-caching.md)
 *   ops             [{"op": "allocate", "request", "new_tokens",
 *                     "computed_tokens"?, "external_computed_tokens"?,
 *                     "lookahead_tokens"?, "reserved_tokens"?,
 *                     "keys"?: [KEY, ...], "tokens"?: TOKENS, "cache_salt"?: STRING},
 *                    {"op": "free", "request"},
 *                    {"op": "query", "tokens": TOKENS, "cache_salt"?: STRING},
 *                    {"op": "clear"}, ...]
 *                   TOKENS lists the request's token ids so far (at least
 *                   computed_tokens + external_computed_tokens + new_tokens of
 *                   them, at most max_model_len),
 *                   each item an id or a run [first, count] of consecutive ids:
 *                   [1, [100, 1024], 7] is 1, 100, 101, ..., 1123, 7. The ops of
 *                   a trace list at most KVC_TRACE_MAX_TOKENS ids in all (runs
 *                   are counted before they are expanded). With prefix caching,
 *                   the first allocate of a request with tokens asks for the
 *                   cached prefix of them and takes it when it covers the op's
 *                   computed_tokens (the op's positions stay covered; the
 *                   external tokens it lists are those after the hit), and
 *                   every allocate with tokens reports its computed_tokens +
 *                   external + new tokens computed afterwards. A request's
 *                   cache_salt is fixed by its first allocate, with or without
 *                   tokens; later ones may repeat it. "query" is a pure
 *                   kvc_manager_find_prefix, "clear" empties the prefix cache.
 *
 * Integers must be integral JSON numbers within the int64 range (cJSON keeps
 * numbers as doubles, so integers beyond 2^53 are not exact); request ids are
 * in [0, 2^53 - 1], where every integer is exact. Strings hold at most
 * KVC_NAME_MAX-1 bytes and no NUL byte, except a cache_salt: bytes, where
 * "a\u0000x" and "a\u0000y" are two salts. Unknown and duplicate fields are
 * refused. */
#ifndef KVC_CLI_TRACE_REPLAY_H
#define KVC_CLI_TRACE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvcache/cache.h"

/* Exit statuses of a replay. */
#define KVC_TRACE_EXIT_OK      0
#define KVC_TRACE_EXIT_FAILED  1 /* a manager invariant broke, or the output failed */
#define KVC_TRACE_EXIT_INVALID 2 /* the trace file is invalid */

/* Blocks a `kvcache trace` replay builds at most, all pools together, unless
 * --max-blocks says otherwise: 2^24 blocks take about 300 MB and half a second
 * to set up, and an offline plan of a long max_model_len asks for far more. */
#define KVC_TRACE_DEFAULT_MAX_BLOCKS (INT64_C(1) << 24)

/* Token ids the ops of one trace list in all, runs expanded (64 MiB of ids). */
#define KVC_TRACE_MAX_TOKENS (INT64_C(1) << 24)

/* Request ids of a trace: [0, KVC_TRACE_MAX_REQUEST_ID], the integers a JSON
 * number (a double) holds exactly, neighbours included. */
#define KVC_TRACE_MAX_REQUEST_ID ((INT64_C(1) << 53) - 1)

typedef struct kvc_trace_options {
    bool print_usage;      /* a {"usage": ...} line after every op line */
    bool check_invariants; /* check the manager's invariants after every op (O(pool) each) */
    int64_t max_model_len; /* > 0: refuse traces asking for a longer max_model_len */
    int64_t max_blocks;    /* > 0: refuse traces whose pools hold more blocks than this in total */
} kvc_trace_options;

typedef enum kvc_trace_op_kind {
    KVC_TRACE_ALLOCATE = 0,
    KVC_TRACE_FREE = 1,
    KVC_TRACE_UNKNOWN = 2, /* an op name the replay does not know */
    KVC_TRACE_QUERY = 3,   /* kvc_manager_find_prefix of its tokens and salt */
    KVC_TRACE_CLEAR = 4    /* kvc_manager_clear_prefix_cache */
} kvc_trace_op_kind;

typedef struct kvc_trace_op {
    kvc_trace_op_kind kind;
    int64_t request;
    int64_t computed_tokens;
    int64_t external_tokens; /* num_external_computed_tokens: a connector's tokens after the hit */
    int64_t new_tokens;
    int64_t lookahead_tokens;
    int64_t reserved_tokens;
    uint64_t key_mask; /* KVC_ALL_KEYS unless the op lists "keys" */
    int32_t *tokens;   /* [n_tokens] the request's token ids (NULL: none given) */
    int64_t n_tokens;
    int64_t cache_salt_len;        /* 0: no salt */
    char cache_salt[KVC_NAME_MAX]; /* [cache_salt_len] bytes, NUL bytes included */
    char refusal[160];             /* non-empty: why the replay refuses this op (unknown op or key) */
} kvc_trace_op;

/* A loaded trace: the cache description it declares, the manager built from
 * it and the ops still to replay. */
typedef struct kvc_trace {
    kvc_model_cache_info info;
    kvc_manager *manager;
    kvc_trace_op *ops; /* [n_ops] */
    size_t n_ops;
    bool prefix_caching;
    int64_t last_hit; /* hit length the last applied op took (allocate) or found (query); -1: none */
} kvc_trace;

/* Parses and checks a trace and creates its manager. On failure returns
 * KVC_TRACE_EXIT_INVALID with a message naming the position in err
 * ("layers[1].caches[0].num_head: expected a positive integer"), or
 * KVC_TRACE_EXIT_FAILED when memory ran out, and *out is NULL. opts may be
 * NULL (no limits). */
int kvc_trace_load(const char *json, size_t len, const kvc_trace_options *opts, kvc_trace **out, char *err,
                   size_t err_cap);
void kvc_trace_destroy(kvc_trace *t);

/* Applies ops[i] to the manager. A negative status means the op was refused
 * as invalid; *message then says why (valid until the next call). */
kvc_status kvc_trace_apply(kvc_trace *t, size_t i, const char **message);

/* One request's block tables for every key of a manager, packed in one
 * growing buffer: key k owns ids[start[k] .. start[k+1]). */
typedef struct kvc_trace_tables {
    int32_t *ids; /* [cap] */
    int64_t cap;
    int64_t start[KVC_MAX_MANAGERS + 1];
} kvc_trace_tables;

/* Fills tb with the request's tables (grows tb->ids as needed; start from a
 * zeroed struct). Free with kvc_trace_tables_free. */
kvc_status kvc_trace_fetch_tables(const kvc_manager *m, int64_t request, kvc_trace_tables *tb);
void kvc_trace_tables_free(kvc_trace_tables *tb);

/* Writes s as a JSON string literal (quotes included). */
void kvc_trace_put_json_string(FILE *out, const char *s);

/* Replays a whole trace, printing JSON Lines to out: {"block_num": {...}},
 * then one line per op ({"op": i, "ok": ..., "blocks": {...}, "free": {...}}
 * or {"op": i, "error": "..."} for an op the manager refused). An invalid
 * trace prints the single line {"error": "..."}. A failure of the replay
 * itself (memory, a broken invariant, the output) ends it with an
 * {"error": "..."} line and KVC_TRACE_EXIT_FAILED. Returns a
 * KVC_TRACE_EXIT_* status. */
int kvc_trace_replay(const char *json, size_t len, FILE *out, const kvc_trace_options *opts);

/* The built-in example of `kvcache demo` (the text of
 * examples/hybrid_pressure.json). */
extern const char kvc_demo_trace[];

int kvc_cmd_trace(int argc, char **argv);
int kvc_cmd_trace_demo(int argc, char **argv);

#endif
