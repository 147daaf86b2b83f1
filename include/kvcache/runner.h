/* kvcache runner layer: the standalone deployment (AO 5: modes 1-3; RM 10: its static block layout). The runner
 * owns its caches and builds its own step metadata, with no manager:
 *   mode 1  contiguous per-layer (k, v) caches [batch, S_max, heads*dim]
 *   mode 2  manual paging: per-layer [NB, bs, heads, dim] caches, the static
 *           block table table[b][i] = b*(S_max/bs) + i and linear slots
 *   mode 3  MLA latent caches (normalised latent + rotated k_pe, one head)
 *           over mode 1 (contiguous) or mode 2 (paged)
 * plus mode 0, a plain recomputation without any cache (every step runs the
 * whole sequences again), used as the reference of the other modes.
 * A static batch of prompts is prefilled together, then decoded greedily in
 * lock-step until every row has max_new_tokens tokens (no stop token).
 *
 * Thread safety: a runner serves one generate call at a time. */
#ifndef KVCACHE_RUNNER_H
#define KVCACHE_RUNNER_H

#include "kvcache/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kvc_runner_mode {
    KVC_RUNNER_RECOMPUTE = 0,
    KVC_RUNNER_CONTIGUOUS = 1,
    KVC_RUNNER_PAGED = 2,
    KVC_RUNNER_MLA_LATENT = 3
} kvc_runner_mode;

/* The longest sequence (prompt + new tokens) a runner takes, whatever the
 * model's max_position_embeddings or max_positions say: its caches and step
 * buffers grow with it. */
#define KVC_RUNNER_MAX_POSITIONS (INT64_C(1) << 20)

typedef struct kvc_runner_params {
    kvc_runner_mode mode;    /* default 2 */
    bool mla_paged;          /* mode 3 over mode 2 (true, default) or mode 1 */
    int64_t max_new_tokens;  /* >= 1 (default 8); the longest prompt + max_new_tokens must fit in max_positions */
    int64_t max_positions;   /* the longest sequence allowed: 0 (default) the model's max_position_embeddings,
                              * else this many positions in its place (1 .. KVC_RUNNER_MAX_POSITIONS) */
    int64_t max_seq_len;     /* positions per sequence, at most KVC_RUNNER_MAX_POSITIONS; 0 (default):
                              * max_prompt_len + max_new_tokens, rounded up to cache.block_size when paged */
    kvc_storage_pages pages; /* page policy of the cache memory when it is at least KVC_HUGE_PAGE_MIN_BYTES
                              * (cache.h; default KVC_STORAGE_PAGES_HUGE; docs/runtime.md) */
    kvc_cache_knobs cache;   /* the caches' knobs (model.h; default kvc_cache_knobs_default()): block_size
                              * read by mode 2, and mode 3 when mla_paged; kv_dtype by modes 1-3 (int8 /
                              * fp8: scales per token computed on write, model.h); kv_layout BNNDBS by mode
                              * 2 only */
} kvc_runner_params;

KVC_API kvc_runner_params kvc_runner_default_params(void);

typedef struct kvc_runner kvc_runner;

/* The checks kvc_runner_create applies to its arguments, without allocating
 * anything: every entry point (kvc_runner_create, kvc_runner_compare_dtype,
 * `kvcache run`, Python's kvcache.run) passes through it, so a caller may
 * refuse a run before it sizes buffers of its own. Refused: a mode the model
 * cannot run (mode 3 without MLA), sizes < 1, a batch above 2^24 (a step's
 * tokens in the model workspace) or a max_seq_len above
 * KVC_RUNNER_MAX_POSITIONS, the knobs the cache builder
 * refuses (the engine adapter's rules, docs/runtime.md: a cache.kv_dtype
 * that is not a cache dtype, a cache.block_size outside
 * [1, KVC_ATTN_MAX_BLOCK_SIZE] in a paged mode, a cache.kv_layout the mode
 * does not take), max_prompt_len + max_new_tokens beyond
 * the positions allowed (max_positions, else the model's
 * max_position_embeddings, and never more than KVC_RUNNER_MAX_POSITIONS). */
KVC_API kvc_status kvc_runner_check(const kvc_model *m, const kvc_runner_params *p, int64_t batch,
                                    int64_t max_prompt_len);

/* Caches, metadata and workspace for up to `batch` prompts of at most
 * max_prompt_len tokens, all sized here. Refused: what kvc_runner_check
 * refuses, S_max % cache.block_size != 0 (RM 10), S_max below max_prompt_len +
 * max_new_tokens - 1. The model must outlive the runner. */
KVC_API kvc_status kvc_runner_create(const kvc_model *m, const kvc_runner_params *p, int64_t batch,
                                     int64_t max_prompt_len, kvc_runner **out);
KVC_API void kvc_runner_destroy(kvc_runner *r);
KVC_API int64_t kvc_runner_max_seq_len(const kvc_runner *r);
/* Bytes one token's keys and values take in every layer's cache, int8 / fp8
 * scales included (0 in mode 0). */
KVC_API int64_t kvc_runner_kv_bytes_per_token(const kvc_runner *r);
/* Where the runner's cache memory lives: its page policy, the bytes on a
 * 2 MiB-aligned mapping, those whose huge-page advice the kernel accepted,
 * and the bytes on huge pages now (mode 0 has no cache memory). Reads
 * /proc/self/smaps: a query, not for every step. */
KVC_API kvc_status kvc_runner_page_info(const kvc_runner *r, kvc_storage_page_info *out);

/* Timings of the last generate call (milliseconds). */
typedef struct kvc_runner_stats {
    double prefill_ms; /* the first step (mode 0: the first recomputation) */
    double decode_ms;  /* every later step together */
    int64_t decode_steps;
} kvc_runner_stats;

/* Runs n prompts (packed ids [sum lens], lens [n]) to completion:
 * tokens [n, max_new_tokens] receives the greedy tokens (argmax, ties to the
 * lower id); logits, if not NULL, [max_new_tokens, n, V] the logits each
 * token was chosen from; stats may be NULL. */
KVC_API kvc_status kvc_runner_generate(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n,
                                       int32_t *tokens, float *logits, kvc_runner_stats *stats);

/* The same run, teacher-forced: step i + 1 is fed forced[b, i] instead of
 * the token picked at step i (forced [n, max_new_tokens], ids in the
 * vocabulary); tokens still receives the picked (argmax) tokens. Used to
 * compare paths position by position (kvc_runner_compare_dtype). */
KVC_API kvc_status kvc_runner_generate_forced(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n,
                                              const int32_t *forced, int32_t *tokens, float *logits,
                                              kvc_runner_stats *stats);

/* Scores a prompt chunk by chunk (what its tokens' log-probabilities are computed from): feeds
 * ids[0, q) to row 0 at positions first .. first + q - 1 and writes the logits of every fed token,
 * logits [q, V] (row i: the next-token logits after position first + i). first is 0 (the row starts
 * over) or at most the tokens row 0 holds (a chunk continues them). The runner must hold contiguous
 * caches (mode 1, or mode 3 with mla_paged false); q at most its max_prompt_len, first + q at most
 * its max_seq_len. A chunk whose logits are not finite is refused naming the position (KVC_ERANGE);
 * a failed chunk leaves row 0 holding the tokens before it. */
KVC_API kvc_status kvc_runner_score_chunk(kvc_runner *r, const int32_t *ids, int64_t first, int64_t q,
                                          float *logits /* [q, V] */);

/* How close a reduced-precision cache stays to f32 on a batch of prompts
 * (kvc_runner_compare_dtype). */
typedef struct kvc_dtype_compare {
    kvc_dtype dtype;
    int64_t bytes_per_token;     /* KV bytes per token, all layers */
    int64_t f32_bytes_per_token; /* the same with f32 caches */
    int64_t tokens;              /* n * max_new_tokens greedy tokens compared */
    int64_t same_as_f32;         /* free-running greedy tokens equal to the f32 cache's, position by position */
    int64_t same_as_ref;         /* ... equal to ref_tokens (the Hugging Face oracle's), -1 without them */
    double max_logit_err;        /* teacher-forced on the f32 tokens: largest |logit - f32 logit|, every step and id */
    double kl_mean, kl_max;      /* KL(f32 || dtype) of the next-token distributions over every step, nats */
    int64_t forced_argmax_same;  /* teacher-forced steps whose argmax equals the f32 one */
    int64_t near_ties;           /* steps whose f32 top-2 gap is at most 2x that step's largest logit error
                                  * (the only steps where the argmax may legitimately change) */
    int64_t flips_beyond_error;  /* steps whose argmax changed although the gap exceeded 2x the error (must be 0) */
} kvc_dtype_compare;

/* Runs the prompts through runners of params p (mode 1, 2 or 3;
 * cache.kv_dtype ignored) with f32 caches and with `dtype` caches and fills out. ref_tokens
 * [n, max_new_tokens] or NULL. Allocates its runners and buffers. */
KVC_API kvc_status kvc_runner_compare_dtype(const kvc_model *m, const kvc_runner_params *p, const int32_t *ids,
                                            const int64_t *lens, int64_t n, kvc_dtype dtype, const int32_t *ref_tokens,
                                            kvc_dtype_compare *out);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_RUNNER_H */
