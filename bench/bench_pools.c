/* `kvcache bench pools [--json]` (also the last section of `kvcache bench
 * engine`): the hybrid gpt-oss-style demo model (full and sliding-window
 * layers, cli/demo_workload.h) served in the same KV memory with one pool
 * shared by its keys against a pool per key, in the same run.
 *
 * 256 requests (the demo's mixed prompts of 4-256 tokens, at most
 * BP_MAX_NEW new tokens each) arrive at once; the engine may run all of them
 * (max_num_seqs 256). The KV memory M holds BP_M_TOKENS tokens of every
 * layer. With a pool per key the planner sets aside the window pools for
 * max_num_seqs requests first, so fewer sequences may serve more: each side
 * runs at every max_num_seqs (256, halving) whose engine fits M, everything
 * it allocates included, and the run with the most concurrent sequences
 * counts (an operator's tuning). Figures: that max_num_seqs, the
 * peak rows of one step (concurrent sequences), generated tokens per second
 * (wall), preemptions, and the KV bytes each side allocates. Target (issue
 * 24): shared peak rows >= 2x per-key. Printed, never asserted. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench.h"
#include "bench_pools.h"
#include "demo_workload.h"

#define BP_REQUESTS      256
#define BP_MAX_NEW       16
#define BP_BLOCK         16
#define BP_MAX_MODEL_LEN 1024
#define BP_M_TOKENS      8192 /* the KV memory: tokens of every layer */
#define BP_GPT_OSS       1    /* kvc_demo_families index */
#define BP_N_SEQS        9    /* max_num_seqs 256, 128, ..., 1 */

typedef struct bp_side {
    int64_t max_num_seqs, peak_rows, preemptions, kv_bytes, steps;
    double tps;
} bp_side;

static kvc_engine_params bp_params(bool shared, int64_t seqs, int64_t kv_memory) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = BP_MAX_MODEL_LEN;
    p.max_num_seqs = seqs;
    p.max_requests = BP_REQUESTS;
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = kv_memory;
    p.step_cost_ratio = 0.0; /* admit whatever fits: the pools decide */
    p.shared_pools = shared;
    p.check = false;
    return p;
}

kvc_status kvc_bench_engine_kv_bytes(const kvc_model *m, const kvc_engine_adapter_params *ap,
                                     const kvc_engine_params *p, int64_t *bytes) {
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    kvc_engine_stats es;
    kvc_status st = kvc_engine_adapter_create(m, ap, p, &a);
    if (st == KVC_OK) st = kvc_engine_create(kvc_engine_adapter_model(a), p, &e);
    if (st == KVC_OK) st = kvc_engine_get_stats(e, &es);
    if (st == KVC_OK) *bytes = es.kv_bytes;
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
    return st;
}

/* Engine params with max_num_seqs seqs whose engine allocates at most
 * memory bytes (per key, the window pools' room for one step's chunks comes
 * on top of the budget: the budget is lowered by it); KVC_ENOMEM: none. */
static kvc_status fit(const kvc_model *m, const kvc_engine_adapter_params *ap, bool shared, int64_t seqs,
                      int64_t memory, kvc_engine_params *out) {
    int64_t budget = memory, bytes = 0;
    for (int i = 0; i < 4 && budget > 0; i++) {
        *out = bp_params(shared, seqs, budget);
        kvc_status st = kvc_bench_engine_kv_bytes(m, ap, out, &bytes);
        if (st != KVC_OK) return st;
        if (bytes <= memory) return KVC_OK;
        budget -= bytes - memory;
    }
    return kvci_fail(KVC_ENOMEM, "bench pools: %lld sequences do not fit %lld bytes", (long long)seqs,
                     (long long)memory);
}

/* Runs w on one side in kv_memory bytes at every max_num_seqs (256, halving)
 * that fits, keeping each run in runs[i] (max_num_seqs 256 >> i; all zero if
 * it does not fit) and the run with the most concurrent sequences (what an
 * operator tuning max_num_seqs for that memory would get) in side. */
static kvc_status run_side(const kvc_model *m, const kvc_demo_workload *w, bool shared, int64_t kv_memory, int32_t *out,
                           bp_side *side, bp_side runs[BP_N_SEQS]) {
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.cache.block_size = BP_BLOCK;
    kvc_status st = KVC_OK;
    *side = (bp_side){0};
    for (int i = 0; i < BP_N_SEQS && st == KVC_OK; i++) {
        int64_t seqs = BP_REQUESTS >> i;
        runs[i] = (bp_side){0};
        kvc_engine_params p;
        kvc_demo_figures fig;
        st = fit(m, &ap, shared, seqs, kv_memory, &p);
        if (st == KVC_ENOMEM || st == KVC_EINVAL) { /* too many sequences for the memory: fewer */
            st = KVC_OK;
            continue;
        }
        if (st == KVC_OK) st = kvc_demo_run(m, &p, &ap, w, out, NULL, &fig);
        if (st != KVC_OK) continue;
        bp_side now = {.max_num_seqs = seqs,
                       .peak_rows = fig.peak_rows,
                       .preemptions = fig.preemptions,
                       .kv_bytes = fig.stats.kv_bytes,
                       .steps = fig.steps,
                       .tps = (double)fig.generated_tokens / fig.seconds};
        runs[i] = now;
        if (now.peak_rows > side->peak_rows) *side = now;
    }
    if (st == KVC_OK && side->peak_rows == 0)
        return kvci_fail(KVC_ENOMEM, "bench pools: no max_num_seqs fits %lld bytes", (long long)kv_memory);
    return st;
}

/* Sequences each side ran at once at every max_num_seqs, in the same memory
 * ("-": its engine does not fit). */
static void print_by_seqs(bp_side runs[2][BP_N_SEQS]) {
    printf("\nconcurrent sequences (peak rows) at each max_num_seqs, same KV memory:\n%12s %8s %8s %7s\n",
           "max_num_seqs", "per-key", "shared", "ratio");
    for (int i = 0; i < BP_N_SEQS; i++) {
        char per_key[24] = "-";
        if (runs[0][i].max_num_seqs > 0) snprintf(per_key, sizeof per_key, "%lld", (long long)runs[0][i].peak_rows);
        printf("%12d %8s %8lld", BP_REQUESTS >> i, per_key, (long long)runs[1][i].peak_rows);
        if (runs[0][i].peak_rows > 0) printf(" %6.2fx", (double)runs[1][i].peak_rows / (double)runs[0][i].peak_rows);
        printf("\n");
    }
}

kvc_status kvc_bench_pools_run(bool json) {
    const kvc_demo_family *fam = &kvc_demo_families[BP_GPT_OSS];
    kvc_model *m = NULL;
    kvc_demo_workload w;
    kvc_status st = kvc_demo_model(fam, &m);
    if (st != KVC_OK) return st;
    st = kvc_demo_workload_make(BP_REQUESTS, 24, 512, 0, &w);
    if (st != KVC_OK) {
        kvc_model_destroy(m);
        return st;
    }
    int64_t prompt_tokens = 0;
    for (int64_t i = 0; i < w.n; i++) {
        if (w.reqs[i].max_new_tokens > BP_MAX_NEW) w.reqs[i].max_new_tokens = BP_MAX_NEW;
        prompt_tokens += w.reqs[i].n_prompt;
    }
    const int64_t kv_memory = kvc_demo_kv_bytes_per_token(m, false, KVC_DTYPE_F32) * BP_M_TOKENS;
    int32_t *out = malloc((size_t)(w.n * w.max_new) * sizeof *out);
    bp_side sides[2] = {{0}}, runs[2][BP_N_SEQS]; /* per key, shared */
    st = out != NULL ? KVC_OK : KVC_ENOMEM;
    for (int s = 0; s < 2 && st == KVC_OK; s++) st = run_side(m, &w, s == 1, kv_memory, out, &sides[s], runs[s]);
    const bp_side *at_most = (const bp_side[]){runs[0][0], runs[1][0]}; /* both at max_num_seqs 256 */
    if (st == KVC_OK && json) {
        printf("{\"bench\": \"pools\", \"model\": \"%s\", \"requests\": %d, \"prompt_tokens\": %lld, "
               "\"max_new_tokens\": %d, \"kv_memory_bytes\": %lld, \"sides\": [",
               fam->name, BP_REQUESTS, (long long)prompt_tokens, BP_MAX_NEW, (long long)kv_memory);
        for (int s = 0; s < 2; s++)
            printf("%s{\"pools\": \"%s\", \"max_num_seqs\": %lld, \"peak_rows\": %lld, \"tokens_per_s\": %.1f, "
                   "\"steps\": %lld, \"preemptions\": %lld, \"kv_bytes\": %lld}",
                   s ? ", " : "", s ? "shared" : "per-key", (long long)sides[s].max_num_seqs,
                   (long long)sides[s].peak_rows, sides[s].tps, (long long)sides[s].steps,
                   (long long)sides[s].preemptions, (long long)sides[s].kv_bytes);
        printf("], \"peak_rows_ratio\": %.3f, \"peak_rows_at_%d_seqs\": [%lld, %lld], \"by_max_num_seqs\": [",
               (double)sides[1].peak_rows / (double)sides[0].peak_rows, BP_REQUESTS, (long long)at_most[0].peak_rows,
               (long long)at_most[1].peak_rows);
        for (int i = 0; i < BP_N_SEQS; i++)
            printf("%s{\"max_num_seqs\": %d, \"peak_rows\": [%lld, %lld]}", i ? ", " : "", BP_REQUESTS >> i,
                   (long long)runs[0][i].peak_rows, (long long)runs[1][i].peak_rows);
        printf("], \"target\": 2.0}\n");
    } else if (st == KVC_OK) {
        printf(
            "\nShared pool vs a pool per key (%s: full and sliding-window layers), %d requests at once (%lld\n"
            "prompt tokens, at most %d new tokens each), KV memory of %d tokens of every layer (%.2f MiB), block\n"
            "size %d. Per key the window pools are set aside for max_num_seqs requests first: each side runs at every\n"
            "max_num_seqs (%d, halving) that fits, the run with the most concurrent sequences counts. Target:\n"
            "shared peak rows >= 2x per-key.\n\n",
            fam->name, BP_REQUESTS, (long long)prompt_tokens, BP_MAX_NEW, BP_M_TOKENS, (double)kv_memory / 1048576.0,
            BP_BLOCK, BP_REQUESTS);
        printf("%-8s %12s %9s %10s %6s %7s %9s\n", "pools", "max_num_seqs", "peak rows", "gen tok/s", "steps",
               "preempt", "KV MiB");
        for (int s = 0; s < 2; s++)
            printf("%-8s %12lld %9lld %10.0f %6lld %7lld %9.2f\n", s ? "shared" : "per-key",
                   (long long)sides[s].max_num_seqs, (long long)sides[s].peak_rows, sides[s].tps,
                   (long long)sides[s].steps, (long long)sides[s].preemptions, (double)sides[s].kv_bytes / 1048576.0);
        printf("peak rows shared / per key: %.2fx; tokens/s: %.2fx (both at max_num_seqs %d: %lld vs %lld peak rows, "
               "%.0f vs %.0f tokens/s)\n",
               (double)sides[1].peak_rows / (double)sides[0].peak_rows, sides[1].tps / sides[0].tps, BP_REQUESTS,
               (long long)at_most[1].peak_rows, (long long)at_most[0].peak_rows, at_most[1].tps, at_most[0].tps);
        print_by_seqs(runs);
    }
    free(out);
    kvc_demo_workload_free(&w);
    kvc_model_destroy(m);
    return st;
}

int kvc_bench_pools(const kvc_bench_opts *opts) {
    omp_set_num_threads(1);
    kvc_status st = kvc_bench_pools_run(opts->json);
    if (st != KVC_OK) fprintf(stderr, "kvcache bench pools: %s (%s)\n", kvc_status_str(st), kvc_last_error());
    return st == KVC_OK ? 0 : 1;
}
