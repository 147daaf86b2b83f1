/* The mixed workload of `kvcache demo` and `kvcache bench engine`: built-in
 * small models of the three families (random weights), a seeded list of
 * greedy requests whose prompt and output lengths vary (long-tailed
 * outputs), and a driver that pushes a workload through an engine
 * over kvc_engine_adapter, collecting outputs and figures. */
#ifndef KVC_CLI_DEMO_WORKLOAD_H
#define KVC_CLI_DEMO_WORKLOAD_H

#include "kvcache/kvcache.h"

/* One built-in model: a small config.json of the family, random weights. */
typedef struct kvc_demo_family {
    const char *name;   /* "qwen3", "gpt_oss", "deepseek_v3" */
    const char *config; /* config.json text */
    bool latent;        /* run with MLA latent caches */
} kvc_demo_family;

#define KVC_DEMO_N_FAMILIES 3
extern const kvc_demo_family kvc_demo_families[KVC_DEMO_N_FAMILIES];

/* kvc_model_create_random over family f's config (seed fixed). */
kvc_status kvc_demo_model(const kvc_demo_family *f, kvc_model **out);

typedef struct kvc_demo_request {
    int64_t n_prompt, max_new_tokens;
    const int32_t *prompt;        /* [n_prompt] into kvc_demo_workload.ids */
    kvc_sampling_params sampling; /* greedy, or seeded temperature / top-k / top-p */
} kvc_demo_request;

typedef struct kvc_demo_workload {
    int64_t n;              /* requests, ids 0..n-1 */
    kvc_demo_request *reqs; /* [n] */
    double *arrival_s;      /* [n] arrival of each request, seconds after the start (0: all at once) */
    int32_t *ids;           /* every prompt, packed */
    int64_t max_len;        /* longest n_prompt + max_new_tokens - 1 */
    int64_t max_new;        /* largest max_new_tokens */
} kvc_demo_workload;

/* n requests with prompts of 4..96 tokens (a fifth 96..256) and outputs of
 * 4..32 tokens (a quarter 96..224), all arriving at once; odd ids sample
 * (temperature 0.8, top-k 40, top-p 0.9, seed from the id), even ids are
 * greedy. Fits max_model_len 512. long_every > 0: every long_every-th
 * request instead has a long prompt of 600..900 tokens (fits max_model_len
 * 1024). The forward is batch-invariant to the last bit, so a sampled
 * request draws the same tokens under churn as alone. */
kvc_status kvc_demo_workload_make(int64_t n, uint64_t seed, int64_t vocab, int64_t long_every, kvc_demo_workload *out);
void kvc_demo_workload_free(kvc_demo_workload *w);
/* A shared prompt part: every request i with i % every == 0 starts with the
 * same n_shared tokens (a system prompt; at most its prompt length - 1), the
 * rest of its prompt unchanged. */
void kvc_demo_workload_share_prefix(kvc_demo_workload *w, int64_t every, int64_t n_shared, int64_t vocab);
/* Poisson arrivals: exponential gaps of mean 1 / rate seconds (rate > 0);
 * rate 0: every request arrives at the start. */
void kvc_demo_workload_arrivals(kvc_demo_workload *w, double rate, uint64_t seed);

/* Latency samples of a pass: the time to first token of every finished
 * request (from its arrival) and every gap between two consecutive tokens
 * of one request (time per output token), in seconds, in model work (the
 * tokens the model ran in the steps between) and, for the gaps, in the
 * CPU time of the calling thread spent in those steps (kvc_engine_step with
 * one OpenMP thread: the steps' cost without the time other processes of a
 * loaded machine took from it). */
typedef struct kvc_demo_latency {
    double *ttft_s, *ttft_work;              /* [w->n] */
    double *tpot_s, *tpot_work, *tpot_cpu_s; /* [w->n * w->max_new] */
    int64_t n_ttft, n_tpot;
    int64_t *token_ns, *token_step; /* [w->max_new] scratch */
    int64_t *cum_tokens;            /* [cap_steps] tokens run by steps 0..s of the engine */
    int64_t *cum_cpu_ns;            /* [cap_steps] thread CPU time of steps 0..s */
    int64_t cap_steps;
} kvc_demo_latency;

kvc_status kvc_demo_latency_create(const kvc_demo_workload *w, kvc_demo_latency *out);
void kvc_demo_latency_free(kvc_demo_latency *l);
/* The q-quantile (0..1, nearest rank) of v[0..n); sorts v. 0 when n is 0. */
double kvc_demo_percentile(double *v, int64_t n, double q);

/* What one pass of a workload through an engine did. */
typedef struct kvc_demo_figures {
    double seconds;     /* wall time of the steps */
    double cpu_seconds; /* the calling thread's CPU time in the same loop */
    int64_t requests, prompt_tokens, generated_tokens, steps, preemptions;
    int64_t peak_rows;       /* most rows of one step */
    kvc_engine_stats stats;  /* at the end (peaks, pools, kv bytes) */
    kvc_prefix_stats prefix; /* the manager's prefix-cache counters at the end */
    char keys[KVC_MAX_MANAGERS][KVC_NAME_MAX];
    int64_t block_size[KVC_MAX_MANAGERS];
    /* FullAttention keys, after every step: slots of the blocks in use and
     * tokens cached in them, summed over steps (waste = 1 - cached / slots) */
    int64_t full_slots, full_cached;
    kvc_demo_latency *lat; /* NULL, or where the pass adds its latency samples */
} kvc_demo_figures;

/* Runs every request of w through an engine built over m with ep and ap
 * (each request added once it has arrived and a request slot is free, with
 * its arrival time; finished ones read and released at once; the loop
 * sleeps when nothing has arrived yet). outputs [w->n, w->max_new] receive the tokens (the
 * rest of a row -1); lat (NULL: not collected) the latency samples. KVC_OK, or the first
 * failure (message set). */
kvc_status kvc_demo_run(const kvc_model *m, const kvc_engine_params *ep, const kvc_engine_adapter_params *ap,
                        const kvc_demo_workload *w, int32_t *outputs, kvc_demo_latency *lat, kvc_demo_figures *fig);

/* The loop of kvc_demo_run on an engine the caller made (its manager keys
 * already in fig->keys / fig->block_size for the waste figures): adds,
 * steps, reads and releases until every request of w is done. Adds to
 * fig's counters; fig->seconds = the loop's wall time, fig->cpu_seconds its
 * thread CPU time. */
kvc_status kvc_demo_drive(kvc_engine *e, const kvc_demo_workload *w, int32_t *outputs, kvc_demo_figures *fig);

/* CPU time of the calling thread, in nanoseconds (CLOCK_THREAD_CPUTIME_ID). */
int64_t kvc_demo_thread_cpu_ns(void);

/* KV bytes one token takes in every layer's cache (full form or latent) of kv_dtype. */
int64_t kvc_demo_kv_bytes_per_token(const kvc_model *m, bool latent, kvc_dtype kv_dtype);

#endif
