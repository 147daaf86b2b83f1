/* kvcache engine layer: the framework deployment. A request queue ordered
 * by priority then arrival, a scheduler that fills every step under one
 * token budget (decode tokens of the running requests first, then chunks of
 * partially prefilled and waiting prompts, all in one packed batch: chunked
 * prefill mixed with decode, docs/scheduler.md), admission through
 * kvc_manager_allocate_slots with the reserved-decode-tokens rule,
 * preemption by recomputation when the pool runs short, release of finished
 * requests' blocks, per-request latency accounting, and a sampler (greedy,
 * temperature / top-k / top-p / min-p, logit bias, penalties, min_tokens). The earlier prefill-alone scheduler (whole
 * prompts in steps of their own) stays as an option. A model that declares
 * no cache info runs on the self-managed path: legacy contiguous caches
 * [max_num_seqs, max_model_len, *unit] with an explicit cache row per
 * request. Behaviour: docs/engine.md and docs/scheduler.md.
 *
 * The engine talks to the model through kvc_engine_model (a vtable); the
 * model runtime plugs in through a thin adapter that fills it.
 *
 * Thread safety: an engine is not thread-safe (one caller at a time); the
 * model's forward runs on the calling thread. A sampler is not thread-safe. */
#ifndef KVCACHE_ENGINE_H
#define KVCACHE_ENGINE_H

#include "kvcache/base.h"
#include "kvcache/batch.h"
#include "kvcache/cache.h"
#include "kvcache/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sampler ---------------------------------------------------------------- */

/* One logit_bias entry: bias is added to token's logit. */
typedef struct kvc_logit_bias {
    int32_t token; /* in [0, vocab) */
    float bias;    /* [-100, 100] (OpenAI's range) */
} kvc_logit_bias;

#define KVC_SAMPLING_MAX_LOGIT_BIAS 300 /* entries of logit_bias per request */
#define KVC_SAMPLING_MAX_STOP_IDS   64  /* min_tokens_ids per request */

/* A request's logits go through these steps, in vLLM v1's order (docs/engine.md, "Sampling"):
 *   0. a mask set by kvc_engine_set_allowed_tokens gives every token it does not allow -inf;
 *   1. while fewer than min_tokens tokens were generated, min_tokens_ids (and the engine request's
 *      eos_id) are set to -inf;
 *   2. logit_bias[i].bias is added to logit_bias[i].token's logit (ids repeated add up);
 *   3. penalties: repetition_penalty r over every token of the prompt and of the output (a positive
 *      logit divided by r, another multiplied by r), then frequency and presence over the output
 *      only: logit -= frequency_penalty * count, then logit -= presence_penalty (count > 0);
 *   4. temperature 0 is greedy: the argmax of these logits (lowest index on ties). Otherwise they
 *      are divided by the temperature, tokens whose probability is below min_p times the largest
 *      one are dropped, the rest cut to the top_k most likely (0 = no cut), then to the smallest
 *      most-likely-first prefix whose probability reaches top_p (1 = no cut; at least one token is
 *      kept), and one token is drawn from what is left. Ties in the ordering go to the lower id.
 * Every field's zero value is neutral (repetition_penalty 0 reads as 1), so a zero-initialised
 * struct with top_p 1 is greedy and callers written before the fields existed keep their behaviour.
 * The draw for a request's k-th generated token depends only on (seed, k) (a counter-based
 * generator) and the penalties only on the request's own tokens, so a request samples the same
 * tokens whatever batch it runs in and however often it is preempted. logit_bias and
 * min_tokens_ids belong to the caller: kvc_engine_add_request copies them. */
typedef struct kvc_sampling_params {
    float temperature; /* >= 0; 0 = greedy */
    int32_t top_k;     /* >= 0; 0 = all tokens */
    float top_p;       /* (0, 1] */
    uint64_t seed;
    /* added after the four above; zero = off */
    float min_p;                      /* [0, 1]; 0 = no cut */
    float presence_penalty;           /* [-2, 2] */
    float frequency_penalty;          /* [-2, 2] */
    float repetition_penalty;         /* [0, 2]; 0 or 1 = none */
    int64_t min_tokens;               /* >= 0 */
    const int32_t *min_tokens_ids;    /* [n_min_tokens_ids] stop tokens held back by min_tokens, in [0, vocab) */
    int32_t n_min_tokens_ids;         /* 0 .. KVC_SAMPLING_MAX_STOP_IDS (0 with NULL) */
    int32_t n_logit_bias;             /* 0 .. KVC_SAMPLING_MAX_LOGIT_BIAS (0 with NULL) */
    const kvc_logit_bias *logit_bias; /* [n_logit_bias] */
} kvc_sampling_params;

/* Greedy: temperature 0, top_k 0, top_p 1, seed 0, repetition_penalty 1, everything else 0 / NULL. */
KVC_API kvc_sampling_params kvc_sampling_default_params(void);
/* KVC_EINVAL naming the field when a value is out of range (token ids: only their sign, the
 * vocabulary is checked where it is known: the sampler and kvc_engine_add_request). */
KVC_API kvc_status kvc_sampling_params_check(const kvc_sampling_params *p);

/* Argmax of logits[0..vocab), lowest index on ties (NaN never wins; 0 when
 * nothing compares greater than -inf). -1 for NULL logits or a vocab outside
 * [1, 2^31) (no token id to return). */
KVC_API int32_t kvc_sample_greedy(const float *logits /* [vocab] */, int64_t vocab);

/* The uniform number in [0, 1) a seeded draw uses for counter k. */
KVC_API double kvc_sample_uniform(uint64_t seed, uint64_t k);

/* Workspace for one vocabulary size; sampling never allocates. */
typedef struct kvc_sampler kvc_sampler;

KVC_API kvc_status kvc_sampler_create(int64_t vocab_size, kvc_sampler **out);
KVC_API void kvc_sampler_destroy(kvc_sampler *s);
/* Draws one token for a request whose tokens so far are tokens[0..n_tokens): its prompt
 * [0, n_prompt), then its n_tokens - n_prompt generated ones (the draw counter k). The logits are
 * not written (the steps above work on a copy). KVC_EINVAL for bad params or a token id outside
 * the vocabulary. */
KVC_API kvc_status kvc_sampler_sample_tokens(kvc_sampler *s, const float *logits /* [vocab] */,
                                             const kvc_sampling_params *p, const int32_t *tokens /* [n_tokens] */,
                                             int64_t n_prompt, int64_t n_tokens, int32_t *token_out);
/* Draws one token for draw counter k (the request's generated-token index), for params without
 * penalties (they need the tokens: KVC_EINVAL naming the field, use kvc_sampler_sample_tokens). */
KVC_API kvc_status kvc_sampler_sample(kvc_sampler *s, const float *logits /* [vocab] */, const kvc_sampling_params *p,
                                      uint64_t k, int32_t *token_out);

/* ---- the model seen by the engine ------------------------------------------ */

/* A contiguous cache tensor a self-managed model asks for: the engine
 * allocates [max_num_seqs, max_model_len, *unit] of dtype, zero-filled,
 * and hands it to the setter once. */
typedef struct kvc_engine_legacy_cache {
    char name[KVC_NAME_MAX]; /* "k_cache", for messages */
    int32_t layer_idx;
    kvc_dtype dtype;
    int32_t n_dims; /* per-token trailing shape unit[0..n_dims), >= 1 dims */
    int64_t unit[KVC_MAX_DIMS];
    kvc_tensor_setter tensor_setter; /* required */
    void *setter_user;
} kvc_engine_legacy_cache;

/* What one forward step receives besides the token ids. */
typedef struct kvc_engine_batch {
    /* positions, lengths, kv_pos; in managed mode also the block tables and
     * slot mappings of every manager key. Self-managed mode: n_keys = 0. */
    const kvc_step_metadata *md;
    const int64_t *request_ids; /* [md->n_rows] the engine's request id of each row */
    /* Self-managed mode only (NULL / 0 in managed mode): an explicit cache row
     * per request, the same row in every step of the request; md->kv_pos is
     * the row's last position and legacy_index each token's flat index. */
    const int64_t *cache_rows;   /* [md->n_rows] legacy cache row of each row, < max_num_seqs */
    const int64_t *legacy_index; /* [md->n_tokens] cache_rows[row] * cache_seq_len + positions[t] */
    int64_t cache_seq_len;       /* positions per legacy row (= max_model_len) */
} kvc_engine_batch;

/* The model, as a vtable plus its self pointer. */
typedef struct kvc_engine_model {
    void *self;
    int64_t vocab_size; /* >= 1 */
    /* The model's cache declaration; NULL = self-managed. The engine
     * validates it, plans blocks, allocates storage (the entries' own tensor
     * setters receive the tensors; entry.tensor is written) and builds the
     * manager over it, so it must outlive the engine. */
    kvc_model_cache_info *cache_info;
    /* Self-managed only: the legacy caches to allocate (may be empty when the
     * model owns its caches; it still gets a cache row per request). */
    const kvc_engine_legacy_cache *legacy_caches; /* [n_legacy_caches] */
    int32_t n_legacy_caches;
    /* One step: ids packed per batch->md (rows one after another, row b's
     * tokens at [cu_q[b-1], cu_q[b])); writes each row's logits for its LAST
     * token: logits [md->n_rows, vocab_size]. A row is a decode token (one
     * token at kv_pos) or a prompt chunk (positions kv_pos - q + 1 .. kv_pos
     * over the request's KV already cached before them); one step mixes
     * both kinds. Must write the step's K/V
     * through the slot mappings (managed) or legacy_index (self-managed)
     * before reading them back. A failure status is returned by
     * kvc_engine_step unchanged. */
    kvc_status (*forward)(void *self, const int32_t *ids /* [md->n_tokens] */, const kvc_engine_batch *batch,
                          float *logits /* [md->n_rows, vocab_size] */);
    /* What a step costs, for the stall-free limit (kvc_engine_params.step_cost_ratio), in one unit of the
     * model's choosing (the adapter counts multiply-adds): a row of q tokens starting at position s costs
     * cost_row + cost_token * q + cost_context * (q * s + q * (q + 1) / 2) (the output head and the sampling
     * once per row, the dense layers per token, the attention per pair of a query token and a key position
     * it reads). All three 0: a token costs 1, nothing else counts. Finite and >= 0. */
    double cost_token, cost_row, cost_context;
} kvc_engine_model;

/* ---- engine ----------------------------------------------------------------- */

typedef enum kvc_engine_plan {
    KVC_ENGINE_PLAN_OFFLINE = 0, /* cdiv(max_model_len, bs) * plan_concurrency + 1 blocks per paged key */
    KVC_ENGINE_PLAN_BUDGET = 1   /* kv_memory_bytes for every cache (fixed-size types first) */
} kvc_engine_plan;

typedef enum kvc_engine_scheduler {
    /* One token budget per step: running requests' decode tokens first, then
     * chunks of partially prefilled and waiting prompts (priority, then
     * arrival order) until max_num_batched_tokens is spent; one batch. */
    KVC_ENGINE_SCHED_BUDGET = 0,
    /* The earlier scheduler: a step admits whole prompts only (no decode rows
     * in it); decode steps run when nothing can be admitted. */
    KVC_ENGINE_SCHED_PREFILL_ALONE = 1
} kvc_engine_scheduler;

/* What an engine does with a request (prefill/decode disaggregation, docs/pd.md). */
typedef enum kvc_engine_role {
    KVC_ENGINE_ROLE_BOTH = 0,    /* prefill and decode here (default) */
    KVC_ENGINE_ROLE_PREFILL = 1, /* computes the prompt and samples the first token, then the request ends
                                  * (KVC_FINISH_PREFILLED) keeping its blocks until kvc_engine_request_release,
                                  * so that its KV can be sent to a decode instance */
    KVC_ENGINE_ROLE_DECODE = 2   /* also admits requests whose prompt KV arrives from outside
                                  * (kvc_engine_request.n_external_tokens) */
} kvc_engine_role;

/* Replicas of one engine in lockstep: the ranks of a tensor-parallel model (docs/serve.md, "Tensor
 * parallel"), each with its shard and an engine over it, created with the same params. The lead (rank 0)
 * is driven as any engine; it logs every call that changes it (kvc_engine_add_request with its prompt,
 * sampling, salt and priority; kvc_engine_set_allowed_tokens; kvc_engine_request_release) and sends the
 * log through bcast at the start of each kvc_engine_step (before the step's schedule: idle steps too) and
 * from kvc_engine_destroy (the end). A follower runs kvc_engine_follow, which receives each log, replays
 * it and steps, so every rank schedules, caches and samples alike (each samples from bitwise equal
 * logits). The first log carries the lead's sizes (vocabulary, params, blocks per pool): a follower whose
 * own differ refuses naming the first that differs. The log is in the lead's byte order: every rank runs
 * the same build. Only the BOTH role. */
typedef struct kvc_engine_sync {
    /* Sends n bytes from the lead's buf to every follower's buf (collective: the lead and every follower
     * call it with the same n). idle: a follower waiting for the lead's next log (the lead may have nothing
     * to do for hours): no deadline there; every other wait is bounded. */
    kvc_status (*bcast)(void *user, void *buf, int64_t n, bool idle);
    void *user;
    bool follower; /* false: the lead */
} kvc_engine_sync;

typedef struct kvc_engine_params {
    int64_t max_model_len;                /* >= 1: KV positions of one request (prompt + generated - 1) */
    int64_t max_num_seqs;                 /* >= 1: rows per step = requests running at once */
    int64_t max_num_batched_tokens;       /* tokens of one step, >= max_num_seqs; 0 = default: BUDGET
                                           * max(2048, max_num_seqs); PREFILL_ALONE max(max_model_len,
                                           * max_num_seqs), and there it must be >= max_model_len (a
                                           * preempted request recomputes up to max_model_len tokens in one
                                           * step) */
    int64_t long_prefill_token_threshold; /* BUDGET: most prompt tokens of one request in one step; 0 = no cap */
    /* BUDGET, stall-free limit (as Sarathi-Serve): a step that runs decode rows and prompt chunks costs at
     * most step_cost_ratio times its decode rows alone, under the model's cost (kvc_engine_model.cost_*),
     * so a long prompt arriving stretches no running request's time per token by more than that. 0 = off
     * (chunks fill the token budget); else in [1, 1e6]. A step without decode rows is limited by the
     * token budget only. */
    double step_cost_ratio;
    int64_t min_chunk_tokens; /* the limit never cuts the first chunk of a step below this many tokens, so a
                               * long prompt progresses beside a small batch; >= 1 when the limit is on */
    kvc_engine_scheduler scheduler;
    int64_t max_requests; /* requests held at once (waiting, running, finished and not released);
                           * 0 = 4 * max_num_seqs */
    kvc_engine_plan plan;
    int64_t plan_concurrency;       /* OFFLINE: 0 = max_num_seqs */
    int64_t kv_memory_bytes;        /* BUDGET: > 0 */
    int64_t reserved_decode_tokens; /* admitting a waiting request keeps cdiv(this, bs) blocks per live request free */
    int64_t next_n;                 /* speculative depth: only 0 is supported */
    uint64_t seed;                  /* mixed into every request's sampling seed */
    bool prefix_caching;            /* managed: reuse the cached KV of prompt prefixes (docs/scheduler.md); turned
                                     * off for a model with state layers (kvc_engine_params_of shows it) */
    uint64_t prefix_salt;           /* prefix caching: the engine's salt, in every block hash chain */
    size_t alignment;               /* cache tensor alignment (KVC_ALIGN_DEFAULT or KVC_ALIGN_2MIB; self-managed: any
                                     * power of two, at most 2 MiB unless pages is SYSTEM) */
    kvc_storage_pages pages;        /* page policy of the cache tensors of at least KVC_HUGE_PAGE_MIN_BYTES, managed
                                     * storage and self-managed caches alike (cache.h; docs/engine.md) */
    bool check;                     /* run the verification checks before and after every step and release */
    bool shared_pools;              /* managed: the keys whose entry slots agree in page bytes draw from one
                                     * pool (kvc_plan_params.shared_pools; int8/fp8 caches with their scales
                                     * too), after kvc_cache_info_unify_pages (bound: max_model_len capped at
                                     * KVC_ATTN_MAX_BLOCK_SIZE, as kvcache plan) has grown the block sizes of
                                     * keys with fewer bytes per token in model->cache_info (put back when
                                     * kvc_engine_create fails); false: a pool per key,
                                     * each key's block size as described */
    kvc_engine_role role;           /* BOTH (default), PREFILL or DECODE; PREFILL and DECODE need a managed model
                                     * (cache info) and the BUDGET scheduler */
    kvc_engine_sync sync;           /* tensor-parallel replicas (below); bcast NULL (default): none */
} kvc_engine_params;

/* max_model_len 0 (must be set), max_num_seqs 8, max_num_batched_tokens 0,
 * long_prefill_token_threshold 0, step_cost_ratio 2, min_chunk_tokens 4, BUDGET scheduler, max_requests 0, OFFLINE,
 * plan_concurrency 0, kv_memory_bytes 0, reserved_decode_tokens 64, next_n
 * 0, seed 0, prefix caching off (salt 0), KVC_ALIGN_DEFAULT, pages
 * KVC_STORAGE_PAGES_HUGE, check on in debug builds (no NDEBUG) and off
 * otherwise, shared pools on, role BOTH. The KV cache's dtype, layout and
 * block size are the model adapter's (kvc_engine_adapter_params.cache): a
 * model of your own builds its caches its own way. */
KVC_API kvc_engine_params kvc_engine_default_params(void);

typedef struct kvc_engine kvc_engine;

/* The tokens of one step the params give (the resolved
 * max_num_batched_tokens); 0 for params kvc_engine_create would refuse. */
KVC_API int64_t kvc_engine_step_tokens(const kvc_engine_params *p);
/* The monotonic clock the engine's latency records use, in nanoseconds. */
KVC_API int64_t kvc_engine_now_ns(void);
/* Validates the model and params, plans the blocks (or sets up the legacy
 * caches), allocates the storage, the manager, the step buffers, the request
 * slots and every per-step workspace: nothing is allocated afterwards.
 * Managed: the description's entries receive the storage's tensors
 * (entry.tensor), which kvc_engine_destroy clears; a description whose
 * entries still hold tensors serves another live engine and is refused
 * (KVC_EINVAL naming the layer and cache); so is a second engine over a
 * kvc_engine_adapter, managed or self-managed, until the first is
 * destroyed. */
KVC_API kvc_status kvc_engine_create(const kvc_engine_model *model, const kvc_engine_params *p, kvc_engine **out);
KVC_API void kvc_engine_destroy(kvc_engine *e);

/* One request. Start from kvc_engine_request_default(). */
typedef struct kvc_engine_request {
    int64_t id;             /* >= 0, not held by the engine already */
    const int32_t *prompt;  /* [n_prompt] token ids in [0, vocab); copied */
    int64_t n_prompt;       /* 1 .. max_model_len */
    int64_t max_new_tokens; /* >= 1 */
    int32_t eos_id;         /* -1: none; generation stops after emitting it (it is part of the output) */
    int32_t priority;       /* lower is served first; equal priorities in arrival order */
    const void *cache_salt; /* prefix caching: NULL (no salt), or cache_salt_len bytes, NUL bytes included
                             * (copied); only requests with the same salt share cached blocks */
    int64_t cache_salt_len; /* 0 with NULL, else 1 .. KVC_ENGINE_SALT_MAX */
    int64_t arrival_ns;     /* 0: now; else when it arrived (kvc_engine_now_ns clock, not in the future) */
    kvc_sampling_params sampling;
    /* DECODE role: the KV of the prompt's first n_external_tokens positions comes from outside (a
     * prefill instance), 0 .. n_prompt - 1 (the last prompt token is computed here, which samples the
     * first token). At the request's first admission, after its blocks are allocated (positions
     * before n_hit taken from the prefix cache), load_external(load_user, manager, id, n_hit,
     * n_external_tokens) writes positions [n_hit, n_external_tokens) into the request's blocks; they
     * then count as computed and are indexed for prefix caching under the request's salt. A failure
     * of the loader fails that step (its status returned, the step undone) and the request computes
     * its prompt here from then on. A request preempted later recomputes them too. 0: none (load_external NULL). */
    int64_t n_external_tokens;
    kvc_status (*load_external)(void *load_user, const kvc_manager *m, int64_t request_id, int64_t n_hit,
                                int64_t n_external_tokens);
    void *load_user; /* must outlive the request's first admission */
} kvc_engine_request;

#define KVC_ENGINE_SALT_MAX 64

/* id -1, no prompt, max_new_tokens 16, eos_id -1, priority 0, no cache salt, arrival now, greedy, no
 * external tokens. */
KVC_API kvc_engine_request kvc_engine_request_default(void);

/* Queues a request behind every waiting request of its priority or a lower
 * one. Refused, with the engine unchanged: bad fields (KVC_EINVAL: empty
 * prompt, prompt longer than max_model_len, a token or eos id outside the
 * vocabulary, bad sampling, an arrival time in the future, a cache salt
 * longer than KVC_ENGINE_SALT_MAX bytes or without its length), an
 * id already held (KVC_EINVAL), a request whose longest run
 * (min(n_prompt + max_new_tokens - 1, max_model_len) positions) does not fit
 * the pools even alone (KVC_ENOMEM, naming the key and counts), no free
 * request slot (KVC_NO_SPACE: release finished requests). */
KVC_API kvc_status kvc_engine_add_request(kvc_engine *e, const kvc_engine_request *r);

typedef enum kvc_engine_request_state {
    KVC_REQ_WAITING = 0, /* queued for (re)prefill; holds no KV */
    KVC_REQ_RUNNING = 1, /* holds KV: being prefilled chunk by chunk, or decoding */
    KVC_REQ_FINISHED = 2 /* done; blocks already freed (PREFILL role: held until released); output readable
                          * until released */
} kvc_engine_request_state;

typedef enum kvc_engine_finish_reason {
    KVC_FINISH_NONE = 0,
    KVC_FINISH_EOS = 1,             /* emitted eos_id */
    KVC_FINISH_MAX_NEW = 2,         /* max_new_tokens generated */
    KVC_FINISH_MAX_MODEL_LEN = 3,   /* its next token would need a position >= max_model_len */
    KVC_FINISH_PREFILLED = 4,       /* PREFILL role: the prompt is computed; the blocks stay until release */
    KVC_FINISH_NO_ALLOWED_TOKEN = 5 /* its allowed-token mask (kvc_engine_set_allowed_tokens) left no token with a
                                     * logit above -inf: nothing was appended */
} kvc_engine_finish_reason;

KVC_API const char *kvc_engine_request_state_name(kvc_engine_request_state s);
KVC_API const char *kvc_engine_finish_reason_name(kvc_engine_finish_reason r);

typedef struct kvc_engine_request_info {
    kvc_engine_request_state state;
    kvc_engine_finish_reason finish;
    int64_t n_prompt;
    int64_t n_generated;
    int64_t n_cached; /* tokens whose KV is in the cache (0 while waiting) */
    int64_t n_preemptions;
    int32_t priority;
    int64_t n_prefix_hit; /* prompt tokens its latest admission took from the prefix cache (0 before it) */
} kvc_engine_request_info;

/* KVC_EINVAL for an id the engine does not hold. */
KVC_API kvc_status kvc_engine_request_get(const kvc_engine *e, int64_t id, kvc_engine_request_info *out);
/* Generated tokens so far (at most cap copied); *n_out = their count. */
KVC_API kvc_status kvc_engine_request_output(const kvc_engine *e, int64_t id, int32_t *out, int64_t cap,
                                             int64_t *n_out);
/* Latency records of one request: steps are kvc_engine_stats.steps at the
 * time (a request that arrives before step s has arrival_step s; a token
 * produced by step s has step s), nanoseconds are kvc_engine_now_ns; -1 =
 * not yet. first_scheduled is the first step that ran one of its tokens. */
typedef struct kvc_engine_request_times {
    int64_t arrival_step, first_scheduled_step, first_token_step, finish_step;
    int64_t arrival_ns, first_scheduled_ns, first_token_ns, finish_ns;
} kvc_engine_request_times;

KVC_API kvc_status kvc_engine_request_times_get(const kvc_engine *e, int64_t id, kvc_engine_request_times *out);
/* When each generated token was produced: step and ns of token k at
 * steps[k], ns[k] (either may be NULL; at most cap written); *n_out = the
 * number of generated tokens. */
KVC_API kvc_status kvc_engine_request_token_times(const kvc_engine *e, int64_t id, int64_t *steps /* [cap] */,
                                                  int64_t *ns /* [cap] */, int64_t cap, int64_t *n_out);
/* Restricts the next token a request samples (structured outputs: a grammar's allowed tokens) to the
 * tokens whose bit is set in bitmask [n_words], n_words = cdiv(vocab_size, 32), token t at bit t % 32
 * of word t / 32 (xgrammar's and llguidance's layout). The mask is copied and applies to the request's
 * next sampled token only, however many steps pass before it is sampled (prompt chunks, preemption),
 * then it is dropped: set one before each token to constrain every token. Masked tokens get -inf
 * before every other sampler step (min_tokens, logit_bias, penalties, temperature, the cuts), so they
 * are never drawn at any temperature and greedy takes the best allowed token. When no allowed token
 * keeps a logit above -inf (an all-zero mask; min_tokens holding back the only allowed ones), the
 * request finishes with KVC_FINISH_NO_ALLOWED_TOKEN and appends nothing. bitmask NULL (n_words
 * ignored) drops a pending mask. Refused (KVC_EINVAL, the request unchanged): an id the engine does
 * not hold, a finished request, n_words other than cdiv(vocab_size, 32), bits set at or past
 * vocab_size. Masks live in storage kvc_engine_create allocates ([max_requests, n_words]): no
 * allocation, and a request's mask never outlives it (kvc_engine_add_request starts without one). */
KVC_API kvc_status kvc_engine_set_allowed_tokens(kvc_engine *e, int64_t id, const uint32_t *bitmask /* [n_words] */,
                                                 int64_t n_words);
/* Forgets a request: a finished one's output goes (a PREFILL-role request's
 * kept blocks are freed); a waiting or running one is aborted (its blocks /
 * cache row are freed at once). Frees its slot and id. */
KVC_API kvc_status kvc_engine_request_release(kvc_engine *e, int64_t id);

typedef struct kvc_engine_step_result {
    bool is_prefill;          /* the step ran at least one prompt chunk */
    int64_t n_rows;           /* rows the model ran (0: nothing ran) */
    int64_t n_tokens;         /* tokens the model ran */
    int64_t n_decode_rows;    /* rows of one token that continue a request (n_rows - prompt chunks) */
    int64_t n_prefill_tokens; /* tokens of the prompt chunks */
    int64_t n_preempted;      /* requests preempted by this step */
    int64_t n_finished;       /* requests that finished in this step */
    bool idle;                /* nothing waiting or running: there was nothing to do */
} kvc_engine_step_result;

/* One scheduler step (docs/scheduler.md). Requests are served in order of
 * priority, then arrival. BUDGET: every running request that has one token
 * left to feed gets a decode row (allocate_slots(id, cached, 1, next_n, 0));
 * when that allocation fails, the lowest-priority running request is
 * preempted (its blocks freed, back to the waiting queue to recompute its
 * prompt and generated tokens) and the allocation retried. Then partially
 * prefilled requests get their next chunk, then waiting requests are
 * admitted (allocate_slots(id, hit, chunk, next_n, reserved_decode_tokens),
 * where hit is 0 or, with prefix caching, the prefix of its tokens
 * kvc_manager_find_prefix finds cached; admission stops at the first
 * refusal, nobody overtakes), each chunk as
 * large as the budget left, the rest of the prompt,
 * long_prefill_token_threshold and the stall-free limit (step_cost_ratio,
 * min_chunk_tokens) allow, until max_num_batched_tokens tokens or
 * max_num_seqs rows. A chunk that finds no blocks waits for a later step
 * (the request keeps what it holds) unless nothing else can run, then the
 * lowest-priority request is preempted; a step that preempted admits nobody.
 * PREFILL_ALONE: a step admits whole prompts (FIFO under the budget) or, when
 * none can be admitted, decodes every running request. Then the model runs,
 * one token is sampled per row that reached the end of its request's tokens,
 * the blocks the step completed are offered to the prefix cache
 * (kvc_manager_cache_computed: a request admitted in the same step as
 * another with the same prompt shares nothing with it until a later step),
 * and finished requests release their blocks at once (PREFILL role: every
 * request finishes after its first token and keeps its blocks until
 * released; DECODE role: an admission with external tokens runs the
 * request's loader first). KVC_OK when a batch
 * ran or there was nothing to do (res->idle); KVC_NO_SPACE (with a message)
 * when requests are held but none can run ("no progress"). If the model's
 * forward fails its status is returned, this step's admissions are undone
 * and no token is appended. */
KVC_API kvc_status kvc_engine_step(kvc_engine *e, kvc_engine_step_result *res);

/* A follower's loop (kvc_engine_sync): receives each of the lead's logs, replays its calls and steps, until
 * the lead's kvc_engine_destroy ends it (KVC_OK). A follower takes no call that changes it from elsewhere
 * (add, mask, release and step are refused, KVC_EINVAL). Fails, returning at once, on a log it cannot
 * parse (KVC_EINVAL naming what: bad magic or kind, a command truncated or unknown, sizes unlike the
 * lead's), on a replayed call or step that fails (it no longer matches the lead) and on a failed bcast;
 * the caller then ends the job (MPI_Abort: the lead may be waiting in a collective). */
KVC_API kvc_status kvc_engine_follow(kvc_engine *e);

/* A pass of the lead's own over its model beside the engine (Python's Engine.prompt_logprobs: a runner
 * scoring a prompt between steps): a TP model's forward is collective, so every follower must run the same
 * pass at the same point. The lead calls kvc_engine_sync_score with the prompt's n ids (1..max_model_len)
 * just before its pass: they go out at once (the calls logged since the last step wait for the next one).
 * A follower's kvc_engine_follow then returns KVC_OK with kvc_engine_follow_score giving those ids (*n > 0;
 * the ids live until the next kvc_engine_follow): it runs the same pass, results dropped, and calls
 * kvc_engine_follow again. *n == 0 after kvc_engine_follow: the lead has ended. Without replicas
 * kvc_engine_sync_score does nothing. */
KVC_API kvc_status kvc_engine_sync_score(kvc_engine *e, const int32_t *ids, int64_t n);
KVC_API kvc_status kvc_engine_follow_score(const kvc_engine *e, const int32_t **ids, int64_t *n);

typedef struct kvc_engine_stats {
    int64_t n_waiting, n_running, n_finished; /* held now (finished: not released yet) */
    int64_t n_free_slots;                     /* request slots free now */
    int64_t steps;                            /* steps that ran the model */
    int64_t prefill_steps,
        decode_steps; /* steps with a prompt chunk / with a decode row (a mixed step counts in both) */
    int64_t prefill_tokens, decode_tokens, generated_tokens;
    int64_t preemptions, finished_total;
    int32_t n_keys;                          /* manager keys (0: self-managed) */
    int64_t num_blocks[KVC_MAX_MANAGERS];    /* per key, null block included */
    int64_t blocks_in_use[KVC_MAX_MANAGERS]; /* per key, null block excluded */
    int64_t peak_blocks_in_use[KVC_MAX_MANAGERS];
    int64_t kv_bytes;            /* bytes of every cache tensor the engine allocated */
    int64_t prefix_hit_tokens;   /* prompt tokens taken from the prefix cache at admission */
    int64_t prefix_query_tokens; /* with prefix caching: tokens of the requests admitted, looked up */
    /* Where the steps' time went, summed over the steps that ran the model (CLOCK_MONOTONIC ns):
     * choosing the rows and allocating their blocks, building the step metadata (block tables, slot
     * mappings; and the step check when params.check), the model's forward, sampling and retiring
     * the rows (finished requests' release). */
    int64_t schedule_ns, metadata_ns, forward_ns, sample_ns;
    int64_t free_cache_rows; /* self-managed: legacy rows free now */
} kvc_engine_stats;

KVC_API kvc_status kvc_engine_get_stats(const kvc_engine *e, kvc_engine_stats *out);

/* Where the engine's cache tensors live (managed storage or self-managed
 * caches): the page policy, the bytes on 2 MiB-aligned mappings, those whose
 * huge-page advice the kernel accepted, and the bytes on huge pages now.
 * Reads /proc/self/smaps (milliseconds for large caches): a query, not for
 * every step. */
KVC_API kvc_status kvc_engine_page_info(const kvc_engine *e, kvc_storage_page_info *out);

/* The engine's manager (NULL in self-managed mode) and its parameters. */
KVC_API const kvc_manager *kvc_engine_manager(const kvc_engine *e);
KVC_API const kvc_engine_params *kvc_engine_params_of(const kvc_engine *e);

/* Runs the engine-level verification checks now (also run after every step
 * when params.check): kvc_manager_check_invariants, queue/slot bookkeeping
 * (queues ordered by priority then arrival), every running request holding
 * exactly the blocks of its cached tokens in every manager and no waiting
 * one holding any, and with nothing running (and, PREFILL role, no finished
 * request still holding its blocks) every pool back at num_blocks - 1 free. KVC_EINTERNAL naming the broken rule. */
KVC_API kvc_status kvc_engine_check(const kvc_engine *e);

/* ---- the model runtime as an engine model (model_adapter.c) --------------- */

/* A kvc_engine_model over a kvc_model (model.h). Managed (default): the
 * model's cache description from kvc_model_cache_info_build(m, latent,
 * cache.kv_dtype, cache.block_size) (entries grouped FullAttention /
 * SlidingWindow; int8 / fp8 with their per-slot scale entries); the
 * adapter's tensor setters record the tensors the engine allocates, so every
 * layer reads its own manager key. Self-managed: no cache info, one legacy
 * contiguous cache per entry of that description [max_num_seqs,
 * max_model_len, heads*dim] (k, v; latent: [.., kv_lora_rank] and [..,
 * qk_rope_head_dim]; scales [.., 1]), read and written at the engine's
 * cache rows. The forward runs kvc_model_forward with each
 * row's last-token logits into a workspace sized once from the engine
 * params: a step allocates nothing (the attention kernel's scratch grows
 * once, model.h).
 *
 * One adapter serves one live engine (its cache description receives that
 * engine's tensors; a second engine over it is refused until the first is
 * destroyed); create the adapter, then the engine with the same
 * params over kvc_engine_adapter_model(), destroy the engine first (an
 * adapter destroyed while its engine lives is freed with that engine, which
 * keeps working until then). The model must outlive the adapter. Not
 * thread-safe. */
typedef struct kvc_engine_adapter_params {
    bool self_managed;     /* legacy contiguous caches instead of cache info */
    bool latent;           /* MLA latent caches (DeepseekV3 only; MF 4.4, absorbed MLA) */
    kvc_cache_knobs cache; /* the KV caches' knobs (model.h): cache.block_size is read on the managed path only,
                            * where the engine may grow a key's (kvc_engine_params.shared_pools) and the forward
                            * follows each layer's tensors; cache.kv_layout BNNDBS on the managed full-form
                            * path only */
} kvc_engine_adapter_params;

/* Not self-managed, not latent, kvc_cache_knobs_default(). */
KVC_API kvc_engine_adapter_params kvc_engine_adapter_default_params(void);

typedef struct kvc_engine_adapter kvc_engine_adapter;

/* Refused (KVC_EINVAL, naming the field): engine params kvc_engine_create
 * would refuse for their sizes, and the knobs the cache builder refuses
 * (the runner's rules, docs/runtime.md): latent on a non-MLA model, a
 * cache.block_size outside [1, KVC_ATTN_MAX_BLOCK_SIZE] on the managed path,
 * a cache.kv_dtype that is not a KV cache dtype, a cache.kv_layout other
 * than KVC_BLOCK_BNBSND or KVC_BLOCK_BNNDBS, or BNNDBS with self-managed or
 * latent caches. */
KVC_API kvc_status kvc_engine_adapter_create(const kvc_model *m, const kvc_engine_adapter_params *p,
                                             const kvc_engine_params *engine_params, kvc_engine_adapter **out);
KVC_API void kvc_engine_adapter_destroy(kvc_engine_adapter *a);
/* The vtable to pass to kvc_engine_create (valid while the adapter lives). */
KVC_API const kvc_engine_model *kvc_engine_adapter_model(const kvc_engine_adapter *a);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_ENGINE_H */
