/* Engine internals shared by the files of src/engine: the request slots, the
 * id table, the waiting and running lists, the rows of the step being built,
 * the per-step workspaces. */
#ifndef KVC_ENGINE_INTERNAL_H
#define KVC_ENGINE_INTERNAL_H

#include "base/internal.h"
#include "base/request_table.h"
#include "cache/page_set.h"
#include "engine/logits_steps.h"
#include "kvcache/engine.h"

#define KVC_SLOT_UNUSED (-1) /* state of a request slot that holds no request */

typedef struct kvc_engine_req {
    int64_t id;
    int32_t state; /* kvc_engine_request_state, or KVC_SLOT_UNUSED */
    kvc_engine_finish_reason finish;
    int32_t priority;
    int64_t arrival; /* arrival number: order among equal priorities */
    int64_t n_prompt;
    int64_t n_tokens;    /* prompt + generated */
    int64_t n_cached;    /* tokens whose KV is cached (fed to the model); 0 while waiting */
    uint64_t hit_handle; /* admission: the handle of the prefix hit n_cached came from (0: none) */
    int64_t max_new_tokens;
    int32_t eos_id;
    kvc_sampling_params sampling; /* seed already mixed with the engine's; logit_bias and min_tokens_ids
                                   * point into the two stores below */
    kvc_logit_bias *logit_bias;   /* [KVC_SAMPLING_MAX_LOGIT_BIAS] (into kvc_engine.bias_store) */
    int32_t *min_tokens_ids;      /* [KVC_SAMPLING_MAX_STOP_IDS] (into kvc_engine.stop_store) */
    uint32_t *allowed_store;      /* [mask_words] (into kvc_engine.mask_store): kvc_engine_set_allowed_tokens */
    const uint32_t *allowed;      /* allowed_store while a mask waits for the next sampled token, else NULL */
    int64_t n_preemptions;
    int64_t cache_row; /* self-managed: legacy row while running, else -1 */
    int64_t row_build; /* kvc_engine.build of the last step that gave it a row */
    kvc_engine_request_times times;
    int64_t n_prefix_hit;                 /* tokens its latest admission took from the prefix cache */
    int64_t cache_salt_len;               /* bytes of its prefix-cache salt (0: none) */
    char cache_salt[KVC_ENGINE_SALT_MAX]; /* [cache_salt_len] the salt's bytes */
    int32_t *tokens;                      /* [max_model_len + 1] prompt then generated (into kvc_engine.token_store) */
    int64_t *token_step;                  /* [max_model_len + 1] step that produced tokens[i] (generated i only) */
    int64_t *token_ns;                    /* [max_model_len + 1] its monotonic time */
    int64_t n_external; /* DECODE role: prompt positions [0, n_external) whose KV load_external writes at the
                         * first admission (0 after it) */
    kvc_status (*load_external)(void *, const kvc_manager *, int64_t, int64_t, int64_t);
    void *load_user;
} kvc_engine_req;

/* Self-managed workspaces. */
typedef struct kvc_engine_legacy {
    int32_t n_caches;
    kvci_page_set set;  /* the n_caches tensors handed to the model, zero-filled, paged as p.pages says */
    int64_t *free_rows; /* [max_num_seqs] stack of free cache rows */
    int64_t n_free_rows;
    kvc_step_rows rows;    /* the step's rows: arrays [max_num_seqs] and positions [max_tokens] */
    int64_t *cache_rows;   /* [max_num_seqs] */
    int64_t *legacy_index; /* [max_tokens] */
} kvc_engine_legacy;

/* Scratch of the step checks (allocated when p.check). */
typedef struct kvc_engine_check_ws {
    int32_t *row;                          /* [max table width] */
    uint64_t *slot_seen[KVC_MAX_MANAGERS]; /* [cdiv(num_blocks * bs, 64)] bitmap per slot-mapped key */
} kvc_engine_check_ws;

struct kvc_engine {
    kvc_engine_model model;
    kvc_engine_params p; /* resolved: no 0 = default field left */
    int64_t max_tokens;  /* tokens of one step = p.max_num_batched_tokens */
    double cost_token;   /* model.cost_token, or 1 when the model gives no costs (a token costs 1) */
    bool managed;
    bool adapter_claimed; /* model is a kvc_engine_adapter's, claimed for this engine (model_adapter.c) */

    /* managed mode */
    kvc_block_plan plan;
    kvc_cache_storage *storage;
    kvc_manager *mgr;
    kvc_step_buffers *buf;
    int32_t n_keys;
    int64_t snapshot_interval; /* prefix caching of state keys: tokens between state snapshots (0: none) */
    int64_t peak_in_use[KVC_MAX_MANAGERS];
    int64_t kv_bytes;

    /* self-managed mode */
    kvc_engine_legacy legacy;

    /* requests */
    kvc_request_table table;    /* held ids -> slots of reqs (and the stack of unused slots) */
    kvc_engine_req *reqs;       /* [max_requests] indexed by slot */
    int32_t *token_store;       /* [max_requests, max_model_len + 1] */
    int64_t *time_store;        /* [2, max_requests, max_model_len + 1] token steps, then token ns */
    kvc_logit_bias *bias_store; /* [max_requests, KVC_SAMPLING_MAX_LOGIT_BIAS] each request's logit_bias */
    int32_t *stop_store;        /* [max_requests, KVC_SAMPLING_MAX_STOP_IDS] each request's min_tokens_ids */
    uint32_t *mask_store;       /* [max_requests, mask_words] each request's allowed-token bitmask */
    int64_t mask_words;         /* cdiv(vocab_size, 32) */
    int64_t next_arrival;
    int32_t *waiting; /* [max_requests] slots, best (priority, arrival) first */
    int64_t n_waiting;
    int32_t *running; /* [max_num_seqs] slots, best (priority, arrival) first */
    int64_t n_running;
    int64_t n_finished;
    int64_t n_held; /* PREFILL role: finished requests still holding their blocks (until released) */

    /* the step being built */
    kvc_step_request *rows; /* [max_num_seqs] */
    int32_t *row_slots;     /* [max_num_seqs] */
    int64_t *row_ids;       /* [max_num_seqs] */
    bool *row_admitted;     /* [max_num_seqs] the row's request was admitted by this step */
    int64_t n_rows, n_row_tokens;
    int64_t build;      /* number of the step being built: a request has a row in it when its row_build equals this */
    double decode_cost; /* stall-free limit: cost of the step's decode rows (kvci_engine_row_cost) */
    double chunk_cost;  /* and of its prompt chunks so far */
    int64_t n_chunks;   /* prompt chunks in the step so far */
    int64_t step_forward_ns; /* the last forward's duration */
    int32_t *ids;            /* [max_tokens] */
    float *logits;           /* [max_num_seqs, vocab] */
    kvc_sampler *sampler;

    kvc_engine_check_ws check_ws;
    kvc_engine_stats stats; /* counters; the "now" fields are filled on demand */

    /* tensor-parallel replicas (p.sync, replica.c) */
    uint8_t *log; /* [log_cap] lead: the calls logged since the last log sent; follower: the log received */
    int64_t log_n, log_cap;
    bool replaying;  /* follower: inside kvc_engine_follow (its calls come from the lead's log) */
    bool log_lost;   /* lead: a log failed to go out; the followers no longer match, no step runs */
    bool log_begun;  /* follower: the lead's first step log (its sizes) is replayed */
    int64_t score_n; /* follower: ids of the lead's scoring pass in log (kvc_engine_follow_score); 0: none */
};

/* ---- sampling (sampler.c) ---- */
/* The token drawn for a request whose params were checked at submit (kvc_sampler_sample_tokens
 * without the checks): eos_id (-1: none) is held back by min_tokens too. allowed (NULL: every
 * token) is a bitmask [cdiv(vocab, 32)] of the tokens that may be drawn (bit t % 32 of word t / 32);
 * -1 when no allowed token has a logit above -inf after the logits steps. */
int32_t kvci_sampler_draw(kvc_sampler *s, const float *logits /* [vocab] */, const kvc_sampling_params *p,
                          int32_t eos_id, const uint32_t *allowed, const int32_t *tokens, int64_t n_prompt,
                          int64_t n_tokens);

/* ---- one live engine per adapter (model_adapter.c) ---- */
/* *claimed = whether model is a kvc_engine_adapter's (then claimed for one engine); KVC_EINVAL, naming it, when
 * that adapter already serves a live engine. A model that is not an adapter's is the caller's to keep apart. */
kvc_status kvci_engine_adapter_claim(const kvc_engine_model *model, bool *claimed);
void kvci_engine_adapter_unclaim(const kvc_engine_model *model);

/* ---- request slots and ordered lists (queue.c) ---- */
kvc_engine_req *kvci_engine_find(const kvc_engine *e, int64_t id);
/* a is served before b: lower priority value, then earlier arrival. */
bool kvci_engine_req_before(const kvc_engine_req *a, const kvc_engine_req *b);
void kvci_engine_wait_insert(kvc_engine *e, int32_t slot);
void kvci_engine_wait_remove(kvc_engine *e, int32_t slot);
void kvci_engine_run_insert(kvc_engine *e, int32_t slot);
void kvci_engine_run_remove(kvc_engine *e, int32_t slot);
static inline int32_t kvci_engine_slot_of(const kvc_engine *e, const kvc_engine_req *r) {
    return (int32_t)(r - e->reqs);
}

/* ---- residency: blocks or cache rows (residency.c) ---- */
/* A waiting request about to be admitted: r->n_cached = the prefix of its
 * tokens the cache holds (kvc_manager_find_prefix; 0 with caching off), and
 * r->hit_handle the hit the admission's kvci_engine_alloc then takes. */
kvc_status kvci_engine_prefix_hit(kvc_engine *e, kvc_engine_req *r);
/* Makes positions [0, r->n_cached + *n_new) addressable (plus the
 * lookahead): a first chunk (`admit`, after kvci_engine_prefix_hit) takes a
 * cache row (self-managed) or is admitted under the reserved-decode rule
 * (*n_new cut to the tokens left after the hit and, with `halve`, halved
 * while the pools refuse it); later chunks and decode tokens grow the
 * request's tables. KVC_NO_SPACE when the pools or the legacy rows refuse
 * (r unchanged, an admission's n_cached back to 0). */
kvc_status kvci_engine_alloc(kvc_engine *e, kvc_engine_req *r, int64_t *n_new, bool admit, bool halve);
/* Gives back a request's blocks or cache row (idempotent). */
kvc_status kvci_engine_evict(kvc_engine *e, kvc_engine_req *r);
/* Blocks one request needs at worst for `positions` positions, per key, vs pools. */
kvc_status kvci_engine_fit_check(const kvc_engine *e, int64_t id, int64_t positions);

/* ---- tensor-parallel replicas (replica.c, kvc_engine_sync) ----
 * The calls that change an engine log themselves on a lead, after their checks and before their change,
 * and are refused on a follower outside its replay (KVC_EINVAL naming `what`); without replicas they do
 * nothing. A failure (KVC_ENOMEM growing the log) leaves engine and log unchanged. */
kvc_status kvci_engine_log_add(kvc_engine *e, const kvc_engine_request *r);
kvc_status kvci_engine_log_mask(kvc_engine *e, int64_t id, const uint32_t *bitmask, int64_t n_words);
/* A release logs itself before its change; *mark: the log's end before it, for kvci_engine_log_rewind
 * when the change then fails. */
kvc_status kvci_engine_log_release(kvc_engine *e, int64_t id, int64_t *mark);
void kvci_engine_log_rewind(kvc_engine *e, int64_t mark);
/* kvc_engine_step, before anything else: the lead sends its log (the followers then step). */
kvc_status kvci_engine_log_step(kvc_engine *e);
/* kvc_engine_create, last: a lead's log starts with its sizes. kvc_engine_destroy, first: a lead
 * sends the end; the log is freed. */
kvc_status kvci_engine_log_create(kvc_engine *e);
void kvci_engine_log_destroy(kvc_engine *e);

/* ---- the step's rows and preemption (step_rows.c) ---- */
/* Appends a row for slot: tokens [r->n_cached, r->n_cached + n_new). */
void kvci_engine_row_add(kvc_engine *e, int32_t slot, int64_t n_new, bool admitted);
/* Frees the request's KV and puts it back in the waiting queue to recompute. */
kvc_status kvci_engine_preempt(kvc_engine *e, int32_t slot);
/* Gives back what the rows admitted by this step took, requeueing them. */
void kvci_engine_rows_undo(kvc_engine *e);

/* ---- step cost (step_cost.c): the stall-free limit's cost model ---- */
/* Cost of a row of n tokens after `start` cached ones under the model's cost (kvcache/engine.h). */
double kvci_engine_row_cost(const kvc_engine *e, int64_t start, int64_t n);
/* Most tokens (<= n_max) a chunk starting at `start` may take for a cost of at most `allowance`. */
int64_t kvci_engine_tokens_for_cost(const kvc_engine *e, int64_t start, int64_t n_max, double allowance);
/* Whether the row of a running request is a decode row: one token, the request's last. */
bool kvci_engine_is_decode_row(const kvc_engine_req *r, const kvc_step_request *row);

/* ---- scheduling policies (schedule.c): fill e->rows for one step ---- */
kvc_status kvci_engine_schedule_budget(kvc_engine *e, int64_t *n_preempted);
kvc_status kvci_engine_schedule_prefill_alone(kvc_engine *e, int64_t *n_preempted);

/* ---- prefix caching of state layers (state_cache.c) ---- */
/* The snapshot interval of the manager's state keys, 0 when none is cached. */
int64_t kvci_engine_snapshot_interval(const kvc_manager *m);
/* A prompt chunk of n tokens after r's cached ones, cut to end at the last snapshot position it passes (so that
 * the state there is kept); n when it passes none, is one token, or no state key is cached. */
int64_t kvci_engine_align_chunk(const kvc_engine *e, const kvc_engine_req *r, int64_t n);
/* Copies each row's state copy source (a snapshot it resumes from) into its own state block, in every state
 * tensor of the key; run after scheduling, before the model. */
kvc_status kvci_engine_copy_states(const kvc_engine *e);

/* ---- latency records (latency.c) ---- */
void kvci_engine_times_arrive(kvc_engine *e, kvc_engine_req *r, int64_t arrival_ns);
/* Stamps first-scheduled for the step's rows (at t0) and the token appended
 * to r (at t1). */
void kvci_engine_times_scheduled(kvc_engine *e, int64_t t0);
void kvci_engine_times_token(kvc_engine *e, kvc_engine_req *r, int64_t t1);
void kvci_engine_times_finish(kvc_engine *e, kvc_engine_req *r, int64_t t1);

/* ---- self-managed path (self_managed.c) ---- */
kvc_status kvci_engine_legacy_create(kvc_engine *e);
void kvci_engine_legacy_destroy(kvc_engine *e);
/* Metadata of rows[0..n) (no keys) plus cache rows and legacy indices. */
kvc_status kvci_engine_legacy_build(kvc_engine *e, const kvc_step_request *rows, int64_t n, bool is_prefill,
                                    kvc_step_metadata *md, kvc_engine_batch *batch);

/* ---- checks (check.c): read-only, callers decide when to run them ---- */
kvc_status kvci_engine_check_alloc(const kvc_engine *e, kvc_engine_check_ws *ws);
void kvci_engine_check_free(kvc_engine_check_ws *ws);
/* The step about to run: budgets, rows in order, metadata vs the manager. */
kvc_status kvci_engine_check_step(const kvc_engine *e, kvc_engine_check_ws *ws, const kvc_engine_batch *batch);
kvc_status kvci_engine_check_released(const kvc_engine *e, int64_t id);

#endif /* KVC_ENGINE_INTERNAL_H */
