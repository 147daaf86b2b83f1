/* Engine internals shared by the files of src/engine: the request slots, the id map,
 * the waiting ring and the running list, the per-step workspaces. */
#ifndef KVC_ENGINE_INTERNAL_H
#define KVC_ENGINE_INTERNAL_H

#include "base/internal.h"
#include "base/request_table.h"
#include "kvcache/engine.h"

#define KVC_SLOT_UNUSED (-1) /* state of a request slot that holds no request */

typedef struct kvc_engine_req {
    int64_t id;
    int32_t state; /* kvc_engine_request_state, or KVC_SLOT_UNUSED */
    kvc_engine_finish_reason finish;
    int64_t n_prompt;
    int64_t n_tokens; /* prompt + generated */
    int64_t n_cached; /* tokens whose KV is cached (computed_len + 1); 0 while waiting */
    int64_t max_new_tokens;
    int32_t eos_id;
    kvc_sampling_params sampling; /* seed already mixed with the engine's */
    int64_t n_preemptions;
    int64_t cache_row; /* self-managed: legacy row while running, else -1 */
    int32_t *tokens;   /* [max_model_len + 1] prompt then generated (into kvc_engine.token_store) */
} kvc_engine_req;

/* Self-managed workspaces (RM 9). */
typedef struct kvc_engine_legacy {
    int32_t n_caches;
    void **data;            /* [n_caches] the tensors handed to the model */
    int64_t *free_rows;     /* [max_batch] stack of free cache rows */
    int64_t n_free_rows;
    kvc_step_rows rows;     /* the step's rows: arrays [max_batch] and positions [max_tokens] */
    int64_t *cache_rows;    /* [max_batch] */
    int64_t *legacy_index;  /* [max_tokens] */
} kvc_engine_legacy;

struct kvc_engine {
    kvc_engine_model model;
    kvc_engine_params p;
    int64_t max_tokens; /* tokens of one step: max(max_prefill_tokens, max_batch) */
    bool managed;

    /* managed mode */
    kvc_block_plan plan;
    kvc_cache_storage *storage;
    kvc_manager *mgr;
    kvc_step_buffers *buf;
    int32_t n_keys;
    int64_t window[KVC_MAX_MANAGERS]; /* per key: SlidingWindow W, else 0 */
    int64_t peak_in_use[KVC_MAX_MANAGERS];
    int64_t kv_bytes;

    /* self-managed mode */
    kvc_engine_legacy legacy;

    /* requests */
    kvc_request_table table; /* held ids -> slots of reqs (and the stack of unused slots) */
    kvc_engine_req *reqs;   /* [max_requests] indexed by slot */
    int32_t *token_store;   /* [max_requests, max_model_len + 1] */
    int32_t *waiting;       /* [max_requests] ring of slots */
    int64_t wait_head, n_waiting;
    int32_t *running;       /* [max_batch] slots in admission order */
    int64_t n_running;
    int64_t n_finished;

    /* per-step workspaces */
    kvc_step_request *rows; /* [max_batch] */
    int32_t *row_slots;     /* [max_batch] */
    int64_t *row_ids;       /* [max_batch] */
    int32_t *ids;           /* [max_tokens] */
    float *logits;          /* [max_batch, vocab] */
    kvc_sampler *sampler;

    /* verification workspaces (allocated when p.check) */
    int32_t *check_row;     /* [max table width] */
    uint64_t *slot_seen[KVC_MAX_MANAGERS]; /* [cdiv(num_blocks * bs, 64)] bitmap per slot-mapped key */

    kvc_engine_stats stats; /* counters; the "now" fields are filled on demand */
};

/* ---- request slots and queues (queue.c) ---- */
kvc_engine_req *kvc_engine_find(const kvc_engine *e, int64_t id);
void kvc_engine_wait_push_back(kvc_engine *e, int32_t slot);
void kvc_engine_wait_push_front(kvc_engine *e, int32_t slot);
int32_t kvc_engine_wait_at(const kvc_engine *e, int64_t i); /* i-th waiting slot from the head */
void kvc_engine_wait_pop_front(kvc_engine *e);
void kvc_engine_wait_remove(kvc_engine *e, int32_t slot);
void kvc_engine_run_remove(kvc_engine *e, int32_t slot);
static inline int32_t kvc_engine_slot_of(const kvc_engine *e, const kvc_engine_req *r) {
    return (int32_t)(r - e->reqs);
}

/* ---- residency: blocks or cache rows (residency.c) ---- */
/* Admits a request for a prefill of r->n_tokens tokens: KVC_NO_SPACE when the
 * pools (reserved-decode rule) or the legacy rows refuse. */
kvc_status kvc_engine_admit(kvc_engine *e, kvc_engine_req *r);
/* Gives back a request's blocks or cache row (idempotent). */
kvc_status kvc_engine_evict(kvc_engine *e, kvc_engine_req *r);
/* Blocks one request needs at worst for `positions` positions, per key, vs pools. */
kvc_status kvc_engine_fit_check(const kvc_engine *e, int64_t id, int64_t positions);

/* ---- self-managed path (self_managed.c) ---- */
kvc_status kvc_engine_legacy_create(kvc_engine *e);
void kvc_engine_legacy_destroy(kvc_engine *e);
/* Metadata of rows[0..n) (no keys) plus cache rows and legacy indices. */
kvc_status kvc_engine_legacy_build(kvc_engine *e, const kvc_step_request *rows, int64_t n, bool is_prefill,
                                   kvc_step_metadata *md, kvc_engine_batch *batch);

/* ---- checks (check.c) ---- */
kvc_status kvc_engine_check_step(kvc_engine *e, const kvc_engine_batch *batch);
kvc_status kvc_engine_check_released(const kvc_engine *e, int64_t id);
kvc_status kvc_engine_check_alloc(kvc_engine *e);

#endif /* KVC_ENGINE_INTERNAL_H */
