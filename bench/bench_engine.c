/* `kvcache bench engine [--json] [--plot FILE.png]`: the engine's schedulers
 * on the built-in models (cli/demo_workload.h), measured in one run.
 *
 * Throughput (the demo's mixed workload, all requests arriving at once),
 * generated tokens per second of wall time and of the thread's CPU time
 * (the forward runs on the calling thread), fastest of BE_REPS runs of each
 * side:
 *   static        the runner (mode 2, or 3 for an MLA model) on batches of 8
 *                 in arrival order, each decoded until its longest request is
 *                 done, counting only the tokens each request asked for
 *                 ("static useful": those over the tokens it decoded). Static
 *                 batching reserves max_model_len positions per row
 *                 contiguously: KV memory M = 8 x max_model_len x bytes/token
 *                 holds its 8 rows.
 *   equal rows    the engine with the same 8 rows and pools planned for 8
 *                 requests of max_model_len (never short of blocks):
 *                 stall-free (the default: token budget 2048 and the
 *                 stall-free limit), budget-256 (a fixed budget of 256, no
 *                 limit: the default of the last measurement), prefill-alone.
 *   equal memory  the engine in the same KV memory M (KVC_ENGINE_PLAN_BUDGET,
 *                 everything it allocates included) with max_num_seqs 64
 *                 (every request of the workload may run at once), default
 *                 scheduler and without the stall-free limit; with peak
 *                 rows, memory, CPU time per token run on each side
 *                 (prompt tokens included) and where the default engine's
 *                 step time went (schedule, metadata, forward, sampling).
 *   memory        peak blocks in use (budget-256, 8 rows) over the blocks a
 *                 contiguous max-length allocation needs; waste: unused slots
 *                 inside the FullAttention blocks in use over the steps
 * Latency (the mixed workload with a long prompt (600-900 tokens) every 8th
 * request, 8 rows): all at once ("offline"), then Poisson arrivals at 50 % and
 * 90 % of the stall-free scheduler's offline request rate; for each scheduler
 * (and the budget scheduler with 16 tokens per step) the time to first token
 * (from arrival) and the time per output token (every gap between two tokens
 * of one request) at p50 / p90 / p99, in wall ms, in the tokens the model ran
 * meanwhile, and (TPOT) in the CPU ms of the steps between (what the steps
 * cost, without the time other processes of a loaded machine take).
 * Targets (issue 16): throughput >= 3x static; p99 TPOT <= 2x p50 while long
 * prompts arrive; waste <= 4 %. Printed, never asserted. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench.h"
#include "bench_pools.h"
#include "demo_workload.h"
#include "plot_data.h"

#define BE_REQUESTS          48
#define BE_BATCH             8
#define BE_BLOCK             16
#define BE_MAX_MODEL_LEN     1024 /* the context the engine serves; contiguous rows reserve all of it */
#define BE_EQUAL_MEMORY_SEQS 64   /* max_num_seqs at equal memory: >= the workload's requests */
#define BE_REPS              5    /* throughput: each side runs this often, the fastest run counts */
#define BE_LONG_EVERY        8
#define BE_N_ARRIVALS        3 /* offline, 50 %, 90 % of the offline rate */

static const double be_rate_share[BE_N_ARRIVALS] = {0.0, 0.5, 0.9};

/* Decode cost per token against the batch: the runner's decode steps at these rows. */
#define BE_N_DECODE_ROWS 3
static const int64_t be_decode_rows[BE_N_DECODE_ROWS] = {1, 8, 48};
#define BE_DECODE_PROMPT 32
#define BE_DECODE_NEW    64

/* The engine configurations; the first four run the latency passes too. */
enum {
    BE_STALL_FREE,
    BE_BUDGET_256,
    BE_PREFILL_ALONE,
    BE_BUDGET_16,
    BE_EQUAL_MEMORY,
    BE_EQUAL_MEMORY_NO_LIMIT,
    BE_N_CONFIGS
};
#define BE_N_SCHED      4 /* latency: configs 0..3 */
#define BE_N_THROUGHPUT 5 /* throughput: stall-free, budget-256, prefill-alone (8 rows), equal memory (2) */
static const int be_throughput_configs[BE_N_THROUGHPUT] = {BE_STALL_FREE, BE_BUDGET_256, BE_PREFILL_ALONE,
                                                           BE_EQUAL_MEMORY, BE_EQUAL_MEMORY_NO_LIMIT};
static const char *const be_config_names[BE_N_CONFIGS] = {"stall-free", "budget-256",   "prefill-alone",
                                                          "budget-16",  "equal-memory", "equal-memory-no-limit"};

typedef struct be_latency {
    double rate;                          /* requests per second (0: offline) */
    double seconds, tps;                  /* wall time, generated tokens per second */
    double ttft[3], tpot[3], tpot_cpu[3]; /* p50, p90, p99 in ms */
    double ttft_work[3], tpot_work[3];    /* the same in tokens the model ran meanwhile */
    int64_t preemptions;
} be_latency;

typedef struct be_row {
    double tps[BE_N_CONFIGS], static_tps;         /* generated tokens per second (wall) */
    double cpu_tps[BE_N_CONFIGS], static_cpu_tps; /* the same per second of the thread's CPU time */
    int64_t peak_blocks, contiguous_blocks;
    double waste;
    int64_t static_generated, static_computed; /* static: tokens asked for, tokens decoded */
    int64_t prompt_tokens;                     /* of the workload: both sides prefill them once */
    int64_t static_bytes, equal_bytes;         /* KV memory: static's contiguous rows, the engine at equal memory */
    int64_t equal_kv_budget;                   /* its kv_memory_bytes (so that everything it allocates fits) */
    int64_t equal_peak_rows, equal_steps, equal_preemptions, no_limit_peak_rows;
    double static_us_per_token, engine_us_per_token; /* CPU time per token run (prompt + decoded or generated) */
    double decode_us[BE_N_DECODE_ROWS];              /* runner decode wall time per token at be_decode_rows rows */
    double equal_phase_us[4];                        /* per step: schedule, metadata, forward, sample */
    be_latency lat[BE_N_SCHED][BE_N_ARRIVALS];       /* [scheduler][arrivals] */
} be_row;

static kvc_engine_params be_params(int config, int64_t kv_budget) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = BE_MAX_MODEL_LEN;
    p.max_num_seqs = BE_BATCH;
    p.plan_concurrency = BE_BATCH; /* the pools of a contiguous allocation: the engine is not short of blocks */
    p.check = false;
    if (config == BE_PREFILL_ALONE) {
        p.scheduler = KVC_ENGINE_SCHED_PREFILL_ALONE;
        p.max_num_batched_tokens = BE_MAX_MODEL_LEN;
    } else if (config == BE_BUDGET_256 || config == BE_BUDGET_16) {
        p.max_num_batched_tokens = config == BE_BUDGET_256 ? 256 : 16;
        p.step_cost_ratio = 0.0;
    } else if (config == BE_EQUAL_MEMORY || config == BE_EQUAL_MEMORY_NO_LIMIT) {
        p.max_num_seqs = BE_EQUAL_MEMORY_SEQS;
        p.plan = KVC_ENGINE_PLAN_BUDGET;
        p.kv_memory_bytes = kv_budget;
        if (config == BE_EQUAL_MEMORY_NO_LIMIT) p.step_cost_ratio = 0.0; /* every prompt admitted at once */
    }
    return p;
}

/* The runner on the same cache form as the engine: paged (mode 2), or paged
 * MLA latent caches (mode 3) for a latent family. */
static kvc_status static_batches(const kvc_model *m, bool latent, const kvc_demo_workload *w, double *seconds,
                                 double *cpu_seconds, int64_t *useful, int64_t *computed) {
    int32_t *ids = malloc((size_t)BE_BATCH * 256 * sizeof *ids);
    int32_t *tokens = malloc((size_t)BE_BATCH * (size_t)w->max_new * sizeof *tokens);
    kvc_status st = ids && tokens ? KVC_OK : KVC_ENOMEM;
    *seconds = *cpu_seconds = 0.0;
    *useful = *computed = 0;
    for (int64_t b0 = 0; b0 < w->n && st == KVC_OK; b0 += BE_BATCH) {
        const int64_t n = w->n - b0 < BE_BATCH ? w->n - b0 : BE_BATCH;
        int64_t lens[BE_BATCH], t = 0, max_prompt = 0;
        kvc_runner_params p = kvc_runner_default_params();
        p.mode = latent ? KVC_RUNNER_MLA_LATENT : KVC_RUNNER_PAGED;
        p.mla_paged = true;
        p.cache.block_size = BE_BLOCK;
        p.max_new_tokens = 1;
        for (int64_t i = 0; i < n; i++) {
            const kvc_demo_request *r = &w->reqs[b0 + i];
            memcpy(ids + t, r->prompt, (size_t)r->n_prompt * sizeof *ids);
            t += lens[i] = r->n_prompt;
            max_prompt = r->n_prompt > max_prompt ? r->n_prompt : max_prompt;
            p.max_new_tokens = r->max_new_tokens > p.max_new_tokens ? r->max_new_tokens : p.max_new_tokens;
            *useful += r->max_new_tokens;
        }
        *computed += n * p.max_new_tokens;
        kvc_runner *run = NULL;
        st = kvc_runner_create(m, &p, n, max_prompt, &run);
        const double t0 = kvc_bench_now();
        const int64_t cpu0 = kvc_demo_thread_cpu_ns();
        if (st == KVC_OK) st = kvc_runner_generate(run, ids, lens, n, tokens, NULL, NULL);
        *seconds += kvc_bench_now() - t0;
        *cpu_seconds += 1e-9 * (double)(kvc_demo_thread_cpu_ns() - cpu0);
        kvc_runner_destroy(run);
    }
    free(ids);
    free(tokens);
    return st;
}

/* The runner's decode wall time per token (fastest of BE_REPS) at each of
 * be_decode_rows rows of 32-token prompts decoding 64 tokens: what a larger
 * batch saves per token with the batch-invariant GEMM. */
static kvc_status decode_scaling(const kvc_model *m, bool latent, const kvc_demo_workload *w, be_row *row) {
    int32_t *tokens = malloc((size_t)(48 * BE_DECODE_NEW) * sizeof *tokens);
    kvc_status st = tokens != NULL ? KVC_OK : KVC_ENOMEM;
    for (int i = 0; i < BE_N_DECODE_ROWS && st == KVC_OK; i++) {
        const int64_t n = be_decode_rows[i];
        int64_t lens[48];
        for (int64_t b = 0; b < n; b++) lens[b] = BE_DECODE_PROMPT;
        kvc_runner_params p = kvc_runner_default_params();
        p.mode = latent ? KVC_RUNNER_MLA_LATENT : KVC_RUNNER_PAGED;
        p.mla_paged = true;
        p.cache.block_size = BE_BLOCK;
        p.max_new_tokens = BE_DECODE_NEW;
        kvc_runner *run = NULL;
        st = kvc_runner_create(m, &p, n, BE_DECODE_PROMPT, &run);
        double best = 1e30;
        for (int rep = 0; rep < BE_REPS && st == KVC_OK; rep++) {
            kvc_runner_stats rs;
            st = kvc_runner_generate(run, w->ids, lens, n, tokens, NULL, &rs); /* the workload's first prompt tokens */
            const double us = 1e3 * rs.decode_ms / (double)(n * (rs.decode_steps > 0 ? rs.decode_steps : 1));
            best = us < best ? us : best;
        }
        row->decode_us[i] = best;
        kvc_runner_destroy(run);
    }
    free(tokens);
    return st;
}

/* The equal-memory engine's kv_memory_bytes: static's memory, less what the
 * engine allocates beyond its budget (one step's chunk room in the
 * sliding-window pools), so that everything it allocates fits. */
static kvc_status fit_equal_memory(const kvc_model *m, const kvc_engine_adapter_params *ap, be_row *row) {
    int64_t budget = row->static_bytes, bytes = 0;
    for (int i = 0; i < 4; i++) {
        kvc_engine_params p = be_params(BE_EQUAL_MEMORY, budget);
        kvc_status st = kvc_bench_engine_kv_bytes(m, ap, &p, &bytes);
        if (st != KVC_OK) return st;
        if (bytes <= row->static_bytes) break;
        budget -= bytes - row->static_bytes;
    }
    row->equal_kv_budget = budget;
    row->equal_bytes = bytes;
    return bytes <= row->static_bytes
               ? KVC_OK
               : kvci_fail(KVC_ENOMEM, "bench engine: no budget fits %lld bytes", (long long)row->static_bytes);
}

/* Throughput of the engine configurations and the runner, fastest of BE_REPS each. */
static kvc_status measure_throughput(const kvc_model *m, const kvc_demo_family *f, const kvc_demo_workload *w,
                                     int32_t *out, be_row *row) {
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.latent = f->latent;
    ap.cache.block_size = BE_BLOCK;
    row->static_bytes = BE_BATCH * BE_MAX_MODEL_LEN * kvc_demo_kv_bytes_per_token(m, f->latent, KVC_DTYPE_F32);
    for (int64_t i = 0; i < w->n; i++) row->prompt_tokens += w->reqs[i].n_prompt;
    kvc_status st = fit_equal_memory(m, &ap, row);
    double best[BE_N_CONFIGS], best_cpu[BE_N_CONFIGS], best_static = 1e30, best_static_cpu = 1e30;
    kvc_demo_figures fig[BE_N_CONFIGS];
    for (int c = 0; c < BE_N_CONFIGS; c++) best[c] = best_cpu[c] = 1e30;
    for (int rep = 0; rep < BE_REPS && st == KVC_OK; rep++) {
        for (int i = 0; i < BE_N_THROUGHPUT && st == KVC_OK; i++) {
            const int c = be_throughput_configs[i];
            kvc_engine_params p = be_params(c, row->equal_kv_budget);
            kvc_demo_figures now;
            st = kvc_demo_run(m, &p, &ap, w, out, NULL, &now);
            if (now.seconds < best[c]) {
                best[c] = now.seconds;
                fig[c] = now;
            }
            best_cpu[c] = now.cpu_seconds < best_cpu[c] ? now.cpu_seconds : best_cpu[c];
        }
        double secs = 0.0, cpu = 0.0;
        row->static_generated = row->static_computed = 0;
        if (st == KVC_OK)
            st = static_batches(m, f->latent, w, &secs, &cpu, &row->static_generated, &row->static_computed);
        best_static = secs < best_static ? secs : best_static;
        best_static_cpu = cpu < best_static_cpu ? cpu : best_static_cpu;
    }
    if (st != KVC_OK) return st;
    for (int i = 0; i < BE_N_THROUGHPUT; i++) {
        const int c = be_throughput_configs[i];
        row->tps[c] = (double)fig[c].generated_tokens / best[c];
        row->cpu_tps[c] = (double)fig[c].generated_tokens / best_cpu[c];
    }
    row->static_tps = (double)row->static_generated / best_static;
    row->static_cpu_tps = (double)row->static_generated / best_static_cpu;
    const kvc_demo_figures *b = &fig[BE_BUDGET_256], *q = &fig[BE_EQUAL_MEMORY];
    for (int32_t k = 0; k < b->stats.n_keys; k++) {
        row->peak_blocks += b->stats.peak_blocks_in_use[k];
        row->contiguous_blocks += BE_BATCH * ((BE_MAX_MODEL_LEN + b->block_size[k] - 1) / b->block_size[k]);
    }
    row->waste = b->full_slots > 0 ? 1.0 - (double)b->full_cached / (double)b->full_slots : 0.0;
    row->equal_peak_rows = q->peak_rows;
    row->no_limit_peak_rows = fig[BE_EQUAL_MEMORY_NO_LIMIT].peak_rows;
    row->static_us_per_token = 1e6 * best_static_cpu / (double)(row->static_computed + row->prompt_tokens);
    row->engine_us_per_token = 1e6 * best_cpu[BE_EQUAL_MEMORY] / (double)(q->generated_tokens + q->prompt_tokens);
    row->equal_steps = q->steps;
    row->equal_preemptions = q->preemptions;
    const int64_t phase[4] = {q->stats.schedule_ns, q->stats.metadata_ns, q->stats.forward_ns, q->stats.sample_ns};
    for (int i = 0; i < 4; i++) row->equal_phase_us[i] = q->steps > 0 ? 1e-3 * (double)phase[i] / (double)q->steps : 0;
    return KVC_OK;
}

/* --plot: the latency samples of every pass go here (cli/plot_data.h). */
static FILE *be_plot;

/* One pass of the long-prompt mix under scheduler s at the workload's arrivals (lat->rate). */
static kvc_status measure_latency(const kvc_model *m, const kvc_demo_family *f, const kvc_demo_workload *w, int s,
                                  int32_t *out, be_latency *lat) {
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.latent = f->latent;
    ap.cache.block_size = BE_BLOCK;
    kvc_engine_params p = be_params(s, 0);
    kvc_demo_latency samples;
    kvc_demo_figures fig;
    kvc_status st = kvc_demo_latency_create(w, &samples);
    if (st == KVC_OK) st = kvc_demo_run(m, &p, &ap, w, out, &samples, &fig);
    if (st == KVC_OK) {
        lat->seconds = fig.seconds;
        lat->tps = (double)fig.generated_tokens / fig.seconds;
        lat->preemptions = fig.preemptions;
        const double q[3] = {0.5, 0.9, 0.99};
        for (int i = 0; i < 3; i++) {
            lat->ttft[i] = 1e3 * kvc_demo_percentile(samples.ttft_s, samples.n_ttft, q[i]);
            lat->tpot[i] = 1e3 * kvc_demo_percentile(samples.tpot_s, samples.n_tpot, q[i]);
            lat->tpot_cpu[i] = 1e3 * kvc_demo_percentile(samples.tpot_cpu_s, samples.n_tpot, q[i]);
            lat->ttft_work[i] = kvc_demo_percentile(samples.ttft_work, samples.n_ttft, q[i]);
            lat->tpot_work[i] = kvc_demo_percentile(samples.tpot_work, samples.n_tpot, q[i]);
        }
        if (be_plot != NULL) {
            char run[96];
            if (lat->rate > 0)
                snprintf(run, sizeof run, "%s, Poisson %.0f req/s", be_config_names[s], lat->rate);
            else
                snprintf(run, sizeof run, "%s, offline", be_config_names[s]);
            kvc_plot_latency_line(be_plot, f->name, run, samples.ttft_s, samples.n_ttft, samples.tpot_s,
                                  samples.n_tpot);
        }
    }
    kvc_demo_latency_free(&samples);
    return st;
}

static kvc_status measure(const kvc_demo_family *f, const kvc_demo_workload *mixed, kvc_demo_workload *longmix,
                          be_row *row) {
    memset(row, 0, sizeof *row);
    kvc_model *m = NULL;
    kvc_status st = kvc_demo_model(f, &m);
    if (st != KVC_OK) return st;
    int64_t cap = mixed->n * mixed->max_new > longmix->n * longmix->max_new ? mixed->n * mixed->max_new
                                                                            : longmix->n * longmix->max_new;
    int32_t *out = malloc((size_t)cap * sizeof *out);
    st = out != NULL ? measure_throughput(m, f, mixed, out, row) : KVC_ENOMEM;
    if (st == KVC_OK) st = decode_scaling(m, f->latent, mixed, row);
    double offline_rate = 0.0;
    for (int a = 0; a < BE_N_ARRIVALS && st == KVC_OK; a++) {
        double rate = be_rate_share[a] * offline_rate;
        kvc_demo_workload_arrivals(longmix, rate, 99);
        for (int s = 0; s < BE_N_SCHED && st == KVC_OK; s++) {
            row->lat[s][a].rate = rate;
            st = measure_latency(m, f, longmix, s, out, &row->lat[s][a]);
        }
        if (a == 0) offline_rate = (double)longmix->n / row->lat[BE_STALL_FREE][0].seconds;
    }
    kvc_demo_workload_arrivals(longmix, 0.0, 0);
    free(out);
    kvc_model_destroy(m);
    return st;
}

static double ratio(const double *p) { return p[0] > 0 ? p[2] / p[0] : 0.0; }

/* Config c's generated tokens per second over static's, by wall or by CPU time. */
static double speedup(const be_row *r, int c, bool cpu) {
    return cpu ? r->cpu_tps[c] / r->static_cpu_tps : r->tps[c] / r->static_tps;
}

/* engine / static if a token cost the same on both sides: static runs its
 * decoded tokens and the prompts, the engine the generated tokens and the
 * prompts (the useful-work bound of the speedup). */
static double ceiling(const be_row *r) {
    return (double)(r->static_computed + r->prompt_tokens) / (double)(r->static_generated + r->prompt_tokens);
}

static void print_throughput(const be_row *rows) {
    printf(
        "kvcache bench engine: %d requests (prompts 4-256, outputs 4-224 tokens, half sampled with top-k 40 /\n"
        "top-p 0.9), block size %d, max_model_len %d, one OpenMP thread; generated tokens per second, fastest of\n"
        "%d runs each. static = the runner (mode 2; mode 3 for MLA) on batches of %d in arrival order, each decoded\n"
        "until its longest request is done; static batching reserves max_model_len per row, so its KV memory M =\n"
        "%d rows x %d positions. Equal rows: the engine with %d rows (pools of %d max-length requests): stall-free\n"
        "(default: budget 2048 + stall-free limit), budget-256 (fixed budget, no limit), prefill-alone. Equal\n"
        "memory: the engine in M (everything it allocates) with max_num_seqs %d.\n\n",
        BE_REQUESTS, BE_BLOCK, BE_MAX_MODEL_LEN, BE_REPS, BE_BATCH, BE_BATCH, BE_MAX_MODEL_LEN, BE_BATCH, BE_BATCH,
        BE_EQUAL_MEMORY_SEQS);
    printf("Speedups over static by wall time and, after the slash, by the thread's CPU time (what a loaded machine's\n"
           "time slicing does not disturb).\n\nEqual rows (the comparison of the last measurement):\n");
    printf("%-12s %9s %7s %8s | %9s %13s | %9s %13s | %9s %13s\n", "model", "static", "static", "ceiling", "stall-fr",
           "/static", "budget256", "/static", "pf-alone", "/static");
    for (int i = 0; i < KVC_DEMO_N_FAMILIES; i++) {
        const be_row *r = &rows[i];
        printf("%-12s %9.0f %6.1f%% %7.2fx | %9.0f %5.2fx/%5.2fx | %9.0f %5.2fx/%5.2fx | %9.0f %5.2fx/%5.2fx\n",
               kvc_demo_families[i].name, r->static_tps,
               100.0 * (double)r->static_generated / (double)r->static_computed, ceiling(r), r->tps[BE_STALL_FREE],
               speedup(r, BE_STALL_FREE, false), speedup(r, BE_STALL_FREE, true), r->tps[BE_BUDGET_256],
               speedup(r, BE_BUDGET_256, false), speedup(r, BE_BUDGET_256, true), r->tps[BE_PREFILL_ALONE],
               speedup(r, BE_PREFILL_ALONE, false), speedup(r, BE_PREFILL_ALONE, true));
    }
    printf("\nEqual memory (KV MiB each side gets; the engine: default, and without the stall-free limit; us/token =\n"
           "CPU time per token run, prompt tokens included: static's decoded tokens, the default engine's generated\n"
           "ones):\n");
    printf("%-12s %6s %6s | %9s %13s %5s | %9s %13s %5s | %9s %9s %6s\n", "model", "static", "engine", "engine",
           "/static", "rows", "no limit", "/static", "rows", "us/tok st", "us/tok en", "ratio");
    for (int i = 0; i < KVC_DEMO_N_FAMILIES; i++) {
        const be_row *r = &rows[i];
        printf("%-12s %6.2f %6.2f | %9.0f %5.2fx/%5.2fx %5lld | %9.0f %5.2fx/%5.2fx %5lld | %9.2f %9.2f %5.2fx\n",
               kvc_demo_families[i].name, (double)r->static_bytes / 1048576.0, (double)r->equal_bytes / 1048576.0,
               r->tps[BE_EQUAL_MEMORY], speedup(r, BE_EQUAL_MEMORY, false), speedup(r, BE_EQUAL_MEMORY, true),
               (long long)r->equal_peak_rows, r->tps[BE_EQUAL_MEMORY_NO_LIMIT],
               speedup(r, BE_EQUAL_MEMORY_NO_LIMIT, false), speedup(r, BE_EQUAL_MEMORY_NO_LIMIT, true),
               (long long)r->no_limit_peak_rows, r->static_us_per_token, r->engine_us_per_token,
               r->static_us_per_token / r->engine_us_per_token);
    }
    printf("(target: engine / static >= 3x; ceiling = (static's decoded + prompt tokens) / (tokens asked for + prompt\n"
           "tokens): the speedup if a token cost the same on both sides, which the us/token ratio multiplies; rows = "
           "peak\n"
           "rows of one step)\n\n");
    printf("Decode wall time per token against the batch (the runner, %d-token prompts, %d decode steps, fastest of "
           "%d):\n",
           BE_DECODE_PROMPT, BE_DECODE_NEW - 1, BE_REPS);
    printf("%-12s %12s %12s %12s\n", "model", "1 row us", "8 rows us", "48 rows us");
    for (int i = 0; i < KVC_DEMO_N_FAMILIES; i++)
        printf("%-12s %12.2f %12.2f %12.2f\n", kvc_demo_families[i].name, rows[i].decode_us[0], rows[i].decode_us[1],
               rows[i].decode_us[2]);
    printf("\n");
    printf(
        "Equal-memory engine, per step (us): schedule, metadata (block tables, slot mappings), forward, sampling\n"
        "and retiring rows; memory: peak blocks / contiguous (budget-256, 8 rows) and KV waste (target <= 4 %%).\n\n");
    printf("%-12s %6s %6s %9s %9s %9s %9s   %14s %7s %9s\n", "model", "steps", "preemp", "schedule", "metadata",
           "forward", "sampling", "peak/contig.", "ratio", "waste");
    for (int i = 0; i < KVC_DEMO_N_FAMILIES; i++) {
        const be_row *r = &rows[i];
        char blocks[32];
        snprintf(blocks, sizeof blocks, "%lld / %lld", (long long)r->peak_blocks, (long long)r->contiguous_blocks);
        printf("%-12s %6lld %6lld %9.1f %9.1f %9.1f %9.1f   %14s %7.3f %7.2f %%\n", kvc_demo_families[i].name,
               (long long)r->equal_steps, (long long)r->equal_preemptions, r->equal_phase_us[0], r->equal_phase_us[1],
               r->equal_phase_us[2], r->equal_phase_us[3], blocks,
               (double)r->peak_blocks / (double)r->contiguous_blocks, 100.0 * r->waste);
    }
}

static void print_latency(const be_row *rows) {
    printf("\nLatency: the same requests with a long prompt (600-900 tokens) every %dth, %d rows, arriving all at\n"
           "once (offline) or by Poisson arrivals at 50 %% and 90 %% of the stall-free scheduler's offline rate.\n"
           "TTFT from arrival; TPOT = every gap between two tokens of one request, in wall ms, in CPU ms of the\n"
           "steps between (what they cost; a loaded machine's time slicing left out) and in work (tokens the model\n"
           "ran in the steps between). budget-16: the budget scheduler with 16 tokens per step, no limit.\n"
           "Target: TPOT p99 <= 2x p50.\n\n",
           BE_LONG_EVERY, BE_BATCH);
    printf("%-12s %-13s %7s %9s | %23s | %20s | %20s | %20s | %6s %6s\n", "", "", "", "", "TTFT ms", "TTFT tokens",
           "TPOT ms", "TPOT CPU ms", "p99/p50", "");
    printf("%-12s %-13s %7s %9s | %7s %7s %7s | %6s %6s %6s | %6s %6s %6s | %6s %6s %6s | %5s %5s | %s\n", "model",
           "scheduler", "req/s", "gen tok/s", "p50", "p90", "p99", "p50", "p90", "p99", "p50", "p90", "p99", "p50",
           "p90", "p99", "CPU", "work", "TPOT tokens p50/p90/p99");
    for (int i = 0; i < KVC_DEMO_N_FAMILIES; i++)
        for (int a = 0; a < BE_N_ARRIVALS; a++)
            for (int s = 0; s < BE_N_SCHED; s++) {
                const be_latency *l = &rows[i].lat[s][a];
                char rate[16];
                if (a == 0)
                    snprintf(rate, sizeof rate, "offline");
                else
                    snprintf(rate, sizeof rate, "%.1f", l->rate);
                printf("%-12s %-13s %7s %9.0f | %7.1f %7.1f %7.1f | %6.0f %6.0f %6.0f | %6.2f %6.2f %6.2f | %6.2f "
                       "%6.2f %6.2f | %4.1fx %4.1fx | %.0f / %.0f / %.0f\n",
                       kvc_demo_families[i].name, be_config_names[s], rate, l->tps, l->ttft[0], l->ttft[1], l->ttft[2],
                       l->ttft_work[0], l->ttft_work[1], l->ttft_work[2], l->tpot[0], l->tpot[1], l->tpot[2],
                       l->tpot_cpu[0], l->tpot_cpu[1], l->tpot_cpu[2], ratio(l->tpot_cpu), ratio(l->tpot_work),
                       l->tpot_work[0], l->tpot_work[1], l->tpot_work[2]);
            }
}

static void print_json(const be_row *rows) {
    printf("{\"bench\": \"engine\", \"requests\": %d, \"rows\": %d, \"equal_memory_max_num_seqs\": %d, "
           "\"block_size\": %d, \"max_model_len\": %d, \"long_prompt_every\": %d, \"models\": [",
           BE_REQUESTS, BE_BATCH, BE_EQUAL_MEMORY_SEQS, BE_BLOCK, BE_MAX_MODEL_LEN, BE_LONG_EVERY);
    for (int i = 0; i < KVC_DEMO_N_FAMILIES; i++) {
        const be_row *r = &rows[i];
        printf("%s{\"model\": \"%s\", \"static_tokens_per_s\": %.1f, \"static_tokens_per_cpu_s\": %.1f, "
               "\"static_useful_tokens\": %lld, "
               "\"static_decoded_tokens\": %lld, \"prompt_tokens\": %lld, \"equal_cost_ceiling\": %.3f, "
               "\"static_kv_bytes\": %lld, \"throughput\": {",
               i ? ", " : "", kvc_demo_families[i].name, r->static_tps, r->static_cpu_tps,
               (long long)r->static_generated, (long long)r->static_computed, (long long)r->prompt_tokens, ceiling(r),
               (long long)r->static_bytes);
        for (int k = 0; k < BE_N_THROUGHPUT; k++) {
            const int c = be_throughput_configs[k];
            printf("%s\"%s\": {\"tokens_per_s\": %.1f, \"speedup\": %.3f, \"tokens_per_cpu_s\": %.1f, "
                   "\"cpu_speedup\": %.3f}",
                   k ? ", " : "", be_config_names[c], r->tps[c], speedup(r, c, false), r->cpu_tps[c],
                   speedup(r, c, true));
        }
        printf("}, \"speedup_target\": 3.0, \"equal_memory\": {\"kv_bytes\": %lld, \"kv_memory_bytes\": %lld, "
               "\"max_num_seqs\": %d, \"peak_rows\": %lld, \"no_limit_peak_rows\": %lld, \"steps\": %lld, "
               "\"preemptions\": %lld, \"static_us_per_token\": %.3f, \"engine_us_per_token\": %.3f, "
               "\"decode_us_per_token_at_1_8_48_rows\": [%.3f, %.3f, %.3f], "
               "\"step_us\": {\"schedule\": %.2f, \"metadata\": %.2f, \"forward\": %.2f, \"sample\": %.2f}}, "
               "\"peak_blocks\": %lld, \"contiguous_blocks\": %lld, \"block_ratio\": %.4f, \"waste\": %.4f, "
               "\"waste_target\": 0.04, \"latency\": [",
               (long long)r->equal_bytes, (long long)r->equal_kv_budget, BE_EQUAL_MEMORY_SEQS,
               (long long)r->equal_peak_rows, (long long)r->no_limit_peak_rows, (long long)r->equal_steps,
               (long long)r->equal_preemptions, r->static_us_per_token, r->engine_us_per_token, r->decode_us[0],
               r->decode_us[1], r->decode_us[2], r->equal_phase_us[0], r->equal_phase_us[1], r->equal_phase_us[2],
               r->equal_phase_us[3], (long long)r->peak_blocks, (long long)r->contiguous_blocks,
               (double)r->peak_blocks / (double)r->contiguous_blocks, r->waste);
        for (int a = 0; a < BE_N_ARRIVALS; a++)
            for (int s = 0; s < BE_N_SCHED; s++) {
                const be_latency *l = &r->lat[s][a];
                printf("%s{\"scheduler\": \"%s\", \"arrivals\": \"%s\", \"rate_per_s\": %.3f, "
                       "\"tokens_per_s\": %.1f, \"preemptions\": %lld, \"ttft_ms\": [%.3f, %.3f, %.3f], "
                       "\"tpot_ms\": [%.4f, %.4f, %.4f], \"tpot_cpu_ms\": [%.4f, %.4f, %.4f], "
                       "\"ttft_tokens\": [%.0f, %.0f, %.0f], \"tpot_tokens\": [%.0f, %.0f, %.0f]}",
                       a || s ? ", " : "", be_config_names[s], a == 0 ? "offline" : "poisson", l->rate, l->tps,
                       (long long)l->preemptions, l->ttft[0], l->ttft[1], l->ttft[2], l->tpot[0], l->tpot[1],
                       l->tpot[2], l->tpot_cpu[0], l->tpot_cpu[1], l->tpot_cpu[2], l->ttft_work[0], l->ttft_work[1],
                       l->ttft_work[2], l->tpot_work[0], l->tpot_work[1], l->tpot_work[2]);
            }
        printf("], \"percentiles\": [50, 90, 99]}");
    }
    printf("]}\n");
}

int kvc_bench_engine(const kvc_bench_opts *opts) {
    const bool json = opts->json;
    omp_set_num_threads(1); /* tiny models: the attention threads would only oversubscribe */
    kvc_demo_workload mixed, longmix;
    if (kvc_demo_workload_make(BE_REQUESTS, 42, 512, 0, &mixed) != KVC_OK ||
        kvc_demo_workload_make(BE_REQUESTS, 43, 512, BE_LONG_EVERY, &longmix) != KVC_OK) {
        fprintf(stderr, "kvcache bench engine: out of memory\n");
        return 1;
    }
    be_row rows[KVC_DEMO_N_FAMILIES];
    int rc = 0;
    char *plot_data = opts->plot != NULL ? kvc_plot_data_path(opts->plot, ".jsonl") : NULL;
    if (plot_data != NULL && (be_plot = fopen(plot_data, "w")) == NULL) {
        fprintf(stderr, "kvcache bench engine: cannot write %s\n", plot_data);
        rc = 1;
    }
    if (opts->plot != NULL && plot_data == NULL) rc = 1;
    for (int i = 0; i < KVC_DEMO_N_FAMILIES && rc == 0; i++) {
        kvc_status st = measure(&kvc_demo_families[i], &mixed, &longmix, &rows[i]);
        if (st != KVC_OK) {
            fprintf(stderr, "kvcache bench engine: %s: %s (%s)\n", kvc_demo_families[i].name, kvc_status_str(st),
                    kvc_last_error());
            rc = 1;
        }
    }
    if (rc == 0 && json) print_json(rows);
    if (rc == 0 && !json) {
        print_throughput(rows);
        print_latency(rows);
    }
    if (rc == 0 && kvc_bench_pools_run(json) != KVC_OK) { /* the shared pool against a pool per key */
        fprintf(stderr, "kvcache bench engine: pools: %s\n", kvc_last_error());
        rc = 1;
    }
    if (be_plot != NULL) {
        if (fclose(be_plot) != 0 && rc == 0) rc = 1;
        be_plot = NULL;
        if (rc == 0) rc = kvc_plot_run("latency", plot_data, opts->plot);
    }
    kvci_free(plot_data);
    kvc_demo_workload_free(&mixed);
    kvc_demo_workload_free(&longmix);
    return rc;
}
