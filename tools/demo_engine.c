/* `kvcache demo`: the main job. The engine (the budget scheduler: decode
 * rows and prompt chunks in one batch per step, paged KV managed by the
 * framework) runs the three built-in models (small random
 * Qwen3, GptOss with sliding + full layers, DeepseekV3 with MLA latent
 * caches) over a mixed workload under a KV budget small enough to exhaust the
 * pools (block reuse, preemption), checks every request against a run of it
 * alone and prints a summary with PASS/FAIL. `kvcache demo --trace [--json]`
 * is the earlier manager trace replay (cmd_demo.c). */
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "base/internal.h"
#include "commands.h"
#include "demo_engine.h"
#include "demo_workload.h"
#include "trace_replay.h"

#define DEMO_MAX_MODEL_LEN 512
#define DEMO_BATCH         8
#define DEMO_BLOCK         16
#define DEMO_BUDGET_TOKENS 576 /* KV budget: this many tokens of every layer */
#define DEMO_KV_DTYPE      KVC_DTYPE_BF16
#define DEMO_STEP_TOKENS   128 /* max_num_batched_tokens: long prompts are chunked */
#define DEMO_SHARED_PROMPT 48  /* every other request starts with the same 48 tokens (prefix caching) */

typedef struct demo_result {
    kvc_demo_figures fig;
    double ttft_ms[3], tpot_ms[3]; /* p50, p90, p99 of the busy run */
    int64_t kv_bytes_per_token, budget, prompt_total, matched;
    bool pools_back, ok;
} demo_result;

static kvc_engine_params demo_params(int64_t batch) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = DEMO_MAX_MODEL_LEN;
    p.max_num_seqs = batch;
    p.max_requests = 2 * batch;
    p.max_num_batched_tokens = DEMO_STEP_TOKENS;
    p.seed = 7;
    p.check = false; /* the checks run in the tests; here they would dominate the time */
    return p;
}

/* The workload under pressure, then each request alone; outputs compared. */
static kvc_status run_family(const kvc_demo_family *f, const kvc_demo_workload *w, demo_result *r) {
    memset(r, 0, sizeof *r);
    kvc_model *m = NULL;
    kvc_status st = kvc_demo_model(f, &m);
    if (st != KVC_OK) return st;
    const size_t n_out = (size_t)(w->n * w->max_new);
    int32_t *busy = kvci_malloc(n_out * sizeof *busy), *alone = kvci_malloc(n_out * sizeof *alone);
    if (busy == NULL || alone == NULL) st = KVC_ENOMEM;
    kvc_engine_adapter_params ap = {
        .latent = f->latent,
        .cache = {.block_size = DEMO_BLOCK, .kv_dtype = DEMO_KV_DTYPE, .kv_layout = KVC_BLOCK_BNBSND}};
    kvc_engine_params p = demo_params(DEMO_BATCH);
    r->kv_bytes_per_token = kvc_demo_kv_bytes_per_token(m, f->latent, ap.cache.kv_dtype);
    r->budget = r->kv_bytes_per_token * DEMO_BUDGET_TOKENS;
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = r->budget;
    p.prefix_caching = true; /* the run alone below has it off: outputs must not depend on it */
    kvc_demo_latency lat;
    if (st == KVC_OK) st = kvc_demo_latency_create(w, &lat);
    if (st == KVC_OK) {
        st = kvc_demo_run(m, &p, &ap, w, busy, &lat, &r->fig);
        const double q[3] = {0.5, 0.9, 0.99};
        for (int i = 0; i < 3; i++) {
            r->ttft_ms[i] = 1e3 * kvc_demo_percentile(lat.ttft_s, lat.n_ttft, q[i]);
            r->tpot_ms[i] = 1e3 * kvc_demo_percentile(lat.tpot_s, lat.n_tpot, q[i]);
        }
        kvc_demo_latency_free(&lat);
    }
    kvc_engine_params solo = demo_params(1);
    kvc_demo_figures solo_fig;
    if (st == KVC_OK) st = kvc_demo_run(m, &solo, &ap, w, alone, NULL, &solo_fig);
    if (st == KVC_OK) {
        for (int64_t i = 0; i < w->n; i++) {
            r->prompt_total += w->reqs[i].n_prompt;
            r->matched += memcmp(busy + i * w->max_new, alone + i * w->max_new, (size_t)w->max_new * sizeof *busy) == 0;
        }
        r->pools_back = true;
        for (int32_t k = 0; k < r->fig.stats.n_keys; k++)
            r->pools_back = r->pools_back && r->fig.stats.blocks_in_use[k] == 0;
        r->ok = r->matched == w->n && r->fig.requests == w->n && r->pools_back && r->fig.preemptions >= 1 &&
                r->fig.prefix.hits >= 1;
    }
    kvci_free(busy);
    kvci_free(alone);
    kvc_model_destroy(m);
    return st;
}

/* One model's figures as JSON (the fields of print_family); false when memory ran out. */
static bool add_family_json(cJSON *models, const kvc_demo_family *f, const kvc_demo_workload *w, const demo_result *r) {
    const kvc_demo_figures *g = &r->fig;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL || !cJSON_AddItemToArray(models, o)) {
        cJSON_Delete(o);
        return false;
    }
    cJSON *peak = cJSON_AddObjectToObject(o, "peak_blocks"); /* {key: [peak in use, usable blocks of the pool]} */
    bool ok =
        peak != NULL && cJSON_AddStringToObject(o, "model", f->name) && cJSON_AddBoolToObject(o, "latent", f->latent) &&
        cJSON_AddStringToObject(o, "kv_dtype", kvc_dtype_name(DEMO_KV_DTYPE)) &&
        cJSON_AddNumberToObject(o, "kv_bytes_per_token", (double)r->kv_bytes_per_token) &&
        cJSON_AddNumberToObject(o, "kv_budget_bytes", (double)r->budget) &&
        cJSON_AddNumberToObject(o, "requests", (double)w->n) &&
        cJSON_AddNumberToObject(o, "finished", (double)g->requests) &&
        cJSON_AddNumberToObject(o, "prompt_tokens", (double)r->prompt_total) &&
        cJSON_AddNumberToObject(o, "computed_tokens", (double)g->prompt_tokens) &&
        cJSON_AddNumberToObject(o, "generated_tokens", (double)g->generated_tokens) &&
        cJSON_AddNumberToObject(o, "steps", (double)g->steps) && cJSON_AddNumberToObject(o, "seconds", g->seconds) &&
        cJSON_AddNumberToObject(o, "tokens_per_s", (double)(g->prompt_tokens + g->generated_tokens) / g->seconds) &&
        cJSON_AddItemToObject(o, "ttft_ms_p50_p90_p99", cJSON_CreateDoubleArray(r->ttft_ms, 3)) &&
        cJSON_AddItemToObject(o, "tpot_ms_p50_p90_p99", cJSON_CreateDoubleArray(r->tpot_ms, 3)) &&
        cJSON_AddNumberToObject(o, "prefix_hits", (double)g->prefix.hits) &&
        cJSON_AddNumberToObject(o, "prefix_queries", (double)g->prefix.queries) &&
        cJSON_AddNumberToObject(o, "prefix_hit_tokens", (double)g->prefix.hit_tokens) &&
        cJSON_AddNumberToObject(o, "prefix_evictions", (double)g->prefix.evictions) &&
        cJSON_AddNumberToObject(o, "preemptions", (double)g->preemptions) &&
        cJSON_AddBoolToObject(o, "pools_back", r->pools_back) &&
        cJSON_AddNumberToObject(o, "equal_to_alone", (double)r->matched) && cJSON_AddBoolToObject(o, "ok", r->ok);
    for (int32_t k = 0; ok && k < g->stats.n_keys; k++) {
        const double pair[2] = {(double)g->stats.peak_blocks_in_use[k], (double)(g->stats.num_blocks[k] - 1)};
        ok = cJSON_AddItemToObject(peak, g->keys[k], cJSON_CreateDoubleArray(pair, 2));
    }
    return ok;
}

static void print_family(const kvc_demo_family *f, const kvc_demo_workload *w, const demo_result *r) {
    const kvc_demo_figures *g = &r->fig;
    printf("%s%s: KV %" PRId64 " B/token (%s, all layers), budget %.1f KiB (%d tokens of every layer)\n", f->name,
           f->latent ? " (MLA latent caches)" : "", r->kv_bytes_per_token, kvc_dtype_name(DEMO_KV_DTYPE),
           (double)r->budget / 1024.0, DEMO_BUDGET_TOKENS);
    printf("  requests %" PRId64 "/%" PRId64 "  prompt tokens %" PRId64 "  computed %" PRId64 " (recomputation after "
           "preemption included, prefix hits not)  generated %" PRId64 "\n  steps %" PRId64 "  %.2f s  %.0f tokens/s "
           "(computed + generated)\n",
           g->requests, w->n, r->prompt_total, g->prompt_tokens, g->generated_tokens, g->steps, g->seconds,
           (double)(g->prompt_tokens + g->generated_tokens) / g->seconds);
    printf("  TTFT p50/p90/p99 %.1f / %.1f / %.1f ms  TPOT p50/p90/p99 %.2f / %.2f / %.2f ms (all requests arrive at "
           "once)\n",
           r->ttft_ms[0], r->ttft_ms[1], r->ttft_ms[2], r->tpot_ms[0], r->tpot_ms[1], r->tpot_ms[2]);
    printf("  prefix cache: %" PRId64 " of %" PRId64 " admissions hit, %" PRId64 " of %" PRId64
           " prompt tokens taken from the cache, %" PRId64 " cached blocks evicted\n",
           g->prefix.hits, g->prefix.queries, g->prefix.hit_tokens, g->prefix.query_tokens, g->prefix.evictions);
    printf("  preemptions %" PRId64 "  peak blocks in use (of the pool, null block excluded):", g->preemptions);
    for (int32_t k = 0; k < g->stats.n_keys; k++)
        printf(" %s %" PRId64 "/%" PRId64, g->keys[k], g->stats.peak_blocks_in_use[k], g->stats.num_blocks[k] - 1);
    printf("\n  blocks back in the pools: %s  outputs equal to the request run alone: %" PRId64 "/%" PRId64 "  %s\n",
           r->pools_back ? "yes" : "NO", r->matched, w->n, r->ok ? "ok" : "FAILED");
    if (g->preemptions == 0) printf("  FAILED: no preemption, the KV budget did not bind on this workload\n");
    if (g->prefix.hits == 0) printf("  FAILED: no prefix-cache hit on the shared system prompt\n");
    printf("\n");
}

/* The run's figures as one JSON object on stdout; false when memory ran out. */
static bool print_json(cJSON *doc, double seconds, int64_t tokens, int64_t preempted, bool pass) {
    bool ok =
        cJSON_AddNumberToObject(doc, "seconds", seconds) && cJSON_AddNumberToObject(doc, "tokens", (double)tokens) &&
        cJSON_AddNumberToObject(doc, "preemptions", (double)preempted) && cJSON_AddBoolToObject(doc, "pass", pass);
    char *text = ok ? cJSON_PrintUnformatted(doc) : NULL;
    if (text != NULL) printf("%s\n", text);
    cJSON_free(text);
    return text != NULL;
}

static int engine_demo(int64_t n_requests, bool json) {
    /* tiny models: one OpenMP thread is much faster than the attention
     * kernel's threads oversubscribing (the library leaves this to the tool) */
    omp_set_num_threads(1);
    kvc_demo_workload w;
    cJSON *doc = json ? cJSON_CreateObject() : NULL;
    cJSON *models = doc != NULL ? cJSON_AddArrayToObject(doc, "models") : NULL;
    if ((json && models == NULL) || kvc_demo_workload_make(n_requests, 42, 512, 0, &w) != KVC_OK) {
        cJSON_Delete(doc);
        fprintf(json ? stderr : stdout, "FAIL: out of memory for the workload\n");
        return 1;
    }
    kvc_demo_workload_share_prefix(&w, 2, DEMO_SHARED_PROMPT, 512);
    if (!json)
        printf("kvcache demo: the engine (budget scheduler: %lld tokens per step, decode rows first, prompt chunks\n"
               "after, in one batch, a step with chunks costing at most 2x its decode rows (the stall-free default);\n"
               "framework-managed paged KV; prefix caching on) on three built-in models with\n"
               "random weights and %s KV caches, %" PRId64 " requests each (half sampled: temperature 0.8, top-k 40,\n"
               "top-p 0.9, seeded; half greedy): prompts 4-256 tokens (every other one starting with the same\n"
               "%d-token system prompt), outputs 4-224 tokens, up to %d running at once, block size %d, max_model_len\n"
               "%d, one OpenMP thread. Every request is then run alone (no prefix caching) and its tokens compared\n"
               "(bitwise: the forward is batch-invariant).\n\n",
               (long long)DEMO_STEP_TOKENS, kvc_dtype_name(DEMO_KV_DTYPE), w.n, DEMO_SHARED_PROMPT, DEMO_BATCH,
               DEMO_BLOCK, DEMO_MAX_MODEL_LEN);
    bool pass = true;
    double seconds = 0.0;
    int64_t tokens = 0, preempted = 0;
    for (int i = 0; i < KVC_DEMO_N_FAMILIES; i++) {
        demo_result r;
        kvc_status st = run_family(&kvc_demo_families[i], &w, &r);
        if (st != KVC_OK) {
            fprintf(json ? stderr : stdout, "%s: FAILED: %s (%s)\n\n", kvc_demo_families[i].name, kvc_status_str(st),
                    kvc_last_error());
            pass = false;
            continue;
        }
        if (json && !add_family_json(models, &kvc_demo_families[i], &w, &r)) {
            fprintf(stderr, "FAIL: out of memory for the JSON summary\n");
            pass = false;
        } else if (!json) {
            print_family(&kvc_demo_families[i], &w, &r);
        }
        pass = pass && r.ok;
        seconds += r.fig.seconds;
        tokens += r.fig.prompt_tokens + r.fig.generated_tokens;
        preempted += r.fig.preemptions;
    }
    if (json) {
        pass = print_json(doc, seconds, tokens, preempted, pass) && pass;
        cJSON_Delete(doc);
        kvc_demo_workload_free(&w);
        return pass ? 0 : 1;
    }
    printf("total: %" PRId64 " requests, %" PRId64 " tokens in %.2f s (%.0f tokens/s), %" PRId64 " preemptions\n",
           KVC_DEMO_N_FAMILIES * w.n, tokens, seconds, seconds > 0 ? (double)tokens / seconds : 0.0, preempted);
    printf("%s\n", pass ? "PASS" : "FAIL");
    kvc_demo_workload_free(&w);
    return pass ? 0 : 1;
}

static void demo_usage(FILE *out) {
    fprintf(out, "usage: kvcache demo [--requests N] [--json] | kvcache demo --trace [--json]\n\n"
                 "Runs the engine on three small built-in models (random Qwen3, GptOss, DeepseekV3) over a\n"
                 "mixed workload under a small KV budget (block reuse, preemption), checks every request\n"
                 "against a run of it alone and prints a summary with PASS/FAIL (exit 1 on FAIL).\n"
                 "  --requests N   requests per model (default 32)\n"
                 "  --json         one JSON object instead of the text: per model (\"models\") the figures of\n"
                 "                 the text summary, then seconds, tokens, preemptions and pass\n"
                 "  --trace        replay the built-in hybrid-model manager trace instead (--json: JSON Lines)\n");
}

int kvc_engine_demo_parse(int argc, char **argv, int64_t *n_requests, int *trace_at, bool *json) {
    *n_requests = 32;
    *trace_at = 0;
    *json = false;
    kvc_arg_seen seen = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            *json = true;
        } else if (strcmp(argv[i], "--trace") == 0) {
            *trace_at = i;
            return -1;
        } else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
            if (kvc_arg_repeated(&seen, "demo", argv[i])) return 2;
            if (!kvc_arg_int(argv[++i], 1, 100000, n_requests)) {
                fprintf(stderr, "kvcache demo: --requests expects 1..100000, got \"%s\"\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            demo_usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "kvcache demo: unexpected argument \"%s\"\n", argv[i]);
            demo_usage(stderr);
            return 2;
        }
    }
    return -1;
}

int kvc_cmd_engine_demo(int argc, char **argv) {
    int64_t n = 0;
    int trace_at = 0;
    bool json = false;
    int rc = kvc_engine_demo_parse(argc, argv, &n, &trace_at, &json);
    if (rc >= 0) return rc;
    if (trace_at > 0) {
        /* the trace demo sees the rest of the arguments, led by a --json given before --trace */
        static char json_flag[] = "--json";
        if (json) argv[trace_at--] = json_flag;
        argv[trace_at] = argv[0];
        return kvc_cmd_trace_demo(argc - trace_at, argv + trace_at);
    }
    return engine_demo(n, json);
}
