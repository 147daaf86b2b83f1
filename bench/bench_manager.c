/* `kvcache bench manager [--json]`: the block pool and one decode step of the
 * request-level manager, each next to a baseline measured in the same run.
 *
 *   pool:  ns per block operation of kvc_block_pool_take/give in batches,
 *          against a naive array FIFO (ring buffer, no checks);
 *   step:  µs for one decode step of 256 live requests (allocate_slots for
 *          every request + kvc_step_metadata_build: block tables and slot
 *          mappings), against copying tables of the same size and computing
 *          the same slots from them with a plain loop.
 * Figures are medians: of repetitions for the pool, of every timed step
 * (REPS prefills of 256 requests, STEP_STEPS decode steps each) for the step,
 * so that a step preempted by another process does not move the figure. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kvcache/batch.h"
#include "kvcache/cache.h"

enum {
    REPS = 9,
    POOL_BLOCKS = 1 << 16, /* usable ids moved per repetition */
    POOL_BATCH = 32,
    STEP_REQUESTS = 256,
    STEP_PROMPT = 1000,
    STEP_STEPS = 32, /* decode steps per repetition */
    STEP_MAX_LEN = 2048,
    STEP_BS = 16,
    STEP_WINDOW = 128
};

#define TARGET_POOL_NS 50.0
#define TARGET_STEP_US 20.0

/* Results of the baselines land here so that the compiler keeps their work. */
static volatile int64_t bench_sink;

/* ---- block pool ------------------------------------------------------------- */

/* The baseline: a FIFO of ids in a power-of-two ring, no validation. */
typedef struct ring {
    int32_t *q; /* [mask + 1] */
    int64_t mask, head, n;
} ring;

static void ring_take(ring *r, int64_t n, int32_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = r->q[(r->head + i) & r->mask];
    r->head = (r->head + n) & r->mask;
    r->n -= n;
}

static void ring_give(ring *r, const int32_t *ids, int64_t n) {
    for (int64_t i = 0; i < n; i++) r->q[(r->head + r->n + i) & r->mask] = ids[i];
    r->n += n;
}

typedef struct pool_result {
    double ns, baseline_ns;
} pool_result;

static int bench_pool(pool_result *res) {
    kvc_block_pool *pool = NULL;
    int32_t *held = malloc(sizeof(int32_t) * POOL_BLOCKS);
    ring r = {.q = malloc(sizeof(int32_t) * 2 * POOL_BLOCKS), .mask = 2 * POOL_BLOCKS - 1, .head = 0, .n = 0};
    if (held == NULL || r.q == NULL || kvc_block_pool_create(POOL_BLOCKS + 1, &pool) != KVC_OK) {
        fprintf(stderr, "kvcache bench manager: setup failed: %s\n", kvc_last_error());
        free(held);
        free(r.q);
        return 1;
    }
    for (int32_t i = 0; i < POOL_BLOCKS; i++) r.q[i] = i + 1;
    r.n = POOL_BLOCKS;
    double lib[REPS], base[REPS];
    const double ops = 2.0 * POOL_BLOCKS;
    kvc_status st = KVC_OK;
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = kvc_bench_now();
        for (int64_t j = 0; j < POOL_BLOCKS && st == KVC_OK; j += POOL_BATCH)
            st = kvc_block_pool_take(pool, POOL_BATCH, held + j);
        for (int64_t j = 0; j < POOL_BLOCKS && st == KVC_OK; j += POOL_BATCH)
            st = kvc_block_pool_give(pool, held + j, POOL_BATCH);
        double t1 = kvc_bench_now();
        for (int64_t j = 0; j < POOL_BLOCKS; j += POOL_BATCH) ring_take(&r, POOL_BATCH, held + j);
        bench_sink = held[POOL_BLOCKS - 1];
        for (int64_t j = 0; j < POOL_BLOCKS; j += POOL_BATCH) ring_give(&r, held + j, POOL_BATCH);
        double t2 = kvc_bench_now();
        lib[rep] = 1e9 * (t1 - t0) / ops;
        base[rep] = 1e9 * (t2 - t1) / ops;
    }
    res->ns = kvc_bench_median(lib, REPS);
    res->baseline_ns = kvc_bench_median(base, REPS);
    int rc = st == KVC_OK && kvc_block_pool_num_free(pool) == POOL_BLOCKS && r.n == POOL_BLOCKS ? 0 : 1;
    if (rc != 0) fprintf(stderr, "kvcache bench manager: block pool run failed: %s\n", kvc_last_error());
    kvc_block_pool_destroy(pool);
    free(held);
    free(r.q);
    return rc;
}

/* ---- decode step ------------------------------------------------------------ */
typedef struct step_result {
    double us, baseline_us, allocate_us, build_us;
} step_result;

typedef struct step_setup {
    kvc_cache_entry entries[4];
    kvc_layer_cache_info layers[2];
    kvc_model_cache_info ci;
    kvc_manager *m;
    kvc_step_buffers *buf;
    kvc_step_request rows[STEP_REQUESTS];
} step_setup;

/* Two layers: full attention and a sliding window, k and v caches each. */
static kvc_status step_create(step_setup *s) {
    for (int i = 0; i < 4; i++) {
        kvc_cache_entry *e = &s->entries[i];
        *e = kvc_cache_entry_default();
        snprintf(e->name, sizeof e->name, "%s_cache", i % 2 == 0 ? "k" : "v");
        e->attn_type = i < 2 ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW;
        e->sliding_window = i < 2 ? 0 : STEP_WINDOW;
        e->num_head = 8;
        e->n_dims = 1;
        e->dim[0] = 128;
        e->block_size = STEP_BS;
    }
    s->layers[0] = (kvc_layer_cache_info){.layer_idx = 0, .n_caches = 2, .caches = &s->entries[0]};
    s->layers[1] = (kvc_layer_cache_info){.layer_idx = 1, .n_caches = 2, .caches = &s->entries[2]};
    s->ci = (kvc_model_cache_info){.num_layers = 2, .n_layer_infos = 2, .layer_infos = s->layers};
    const char *keys[2] = {"FullAttention", "SlidingWindow"};
    const int64_t per_req_full = (STEP_PROMPT + STEP_STEPS + STEP_BS - 1) / STEP_BS;
    const int64_t per_req_sw = (STEP_WINDOW + STEP_BS - 1) / STEP_BS + 1;
    const int64_t counts[2] = {STEP_REQUESTS * per_req_full + 1, STEP_REQUESTS * per_req_sw + 1};
    kvc_block_plan plan;
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = STEP_MAX_LEN;
    kvc_status st = kvc_block_plan_from_counts(&s->ci, keys, counts, 2, &plan);
    if (st == KVC_OK) st = kvc_manager_create(&s->ci, &plan, &mp, &s->m);
    if (st == KVC_OK) st = kvc_step_buffers_create(s->m, STEP_REQUESTS, STEP_REQUESTS, &s->buf);
    return st;
}

/* One decode step of every request: allocate, then build the metadata. */
static kvc_status step_run(step_setup *s, double *t_alloc, double *t_build) {
    kvc_step_metadata md;
    double t0 = kvc_bench_now();
    for (int64_t b = 0; b < STEP_REQUESTS; b++) {
        kvc_status st = kvc_manager_allocate_slots(
            s->m,
            &(kvc_slot_request){.request_id = b, .computed_tokens = s->rows[b].computed_tokens, .num_new_tokens = 1});
        if (st != KVC_OK) return st < 0 ? st : KVC_EINTERNAL;
    }
    double t1 = kvc_bench_now();
    kvc_status st = kvc_step_metadata_build(s->buf, s->rows, STEP_REQUESTS, false, &md);
    double t2 = kvc_bench_now();
    *t_alloc = t1 - t0;
    *t_build = t2 - t1;
    for (int64_t b = 0; b < STEP_REQUESTS; b++) s->rows[b].computed_tokens++;
    return st;
}

/* The baseline step: copy block tables of the same size and derive the same
 * slots from them with a plain loop. */
static double baseline_step(const int32_t *src, int32_t *dst, int64_t width, int64_t n_keys, int64_t *slots,
                            const kvc_step_request *rows) {
    double t0 = kvc_bench_now();
    size_t table = (size_t)(STEP_REQUESTS * width);
    memcpy(dst, src, table * n_keys * sizeof *dst);
    for (int64_t k = 0; k < n_keys; k++)
        for (int64_t b = 0; b < STEP_REQUESTS; b++) {
            int64_t p = rows[b].computed_tokens;
            slots[k * STEP_REQUESTS + b] =
                (int64_t)dst[k * (int64_t)table + b * width + p / STEP_BS] * STEP_BS + p % STEP_BS;
        }
    return kvc_bench_now() - t0;
}

static int bench_step(step_result *res) {
    enum { N = REPS * STEP_STEPS };
    step_setup *s = calloc(1, sizeof *s);
    const int64_t width = (STEP_MAX_LEN + STEP_BS - 1) / STEP_BS, n_keys = 2;
    /* Page-aligned: a src/dst distance a few bytes off a page multiple makes
     * glibc's memcpy many times slower on some CPUs, which would flatter us. */
    const size_t table_bytes = (size_t)(n_keys * STEP_REQUESTS * width) * sizeof(int32_t);
    void *src_mem = NULL, *dst_mem = NULL;
    kvc_aligned_alloc(4096, table_bytes, &src_mem);
    kvc_aligned_alloc(4096, table_bytes, &dst_mem);
    int32_t *src = src_mem, *dst = dst_mem;
    int64_t *slots = calloc((size_t)(n_keys * STEP_REQUESTS), sizeof *slots);
    double *samples = calloc(4 * (size_t)N, sizeof *samples); /* total, allocate, build, baseline per step */
    int rc = s == NULL || src == NULL || dst == NULL || slots == NULL || samples == NULL || step_create(s) != KVC_OK;
    for (int64_t i = 0; rc == 0 && i < n_keys * STEP_REQUESTS * width; i++) src[i] = dst[i] = (int32_t)(i % 1000);
    for (int rep = 0; rep < REPS && rc == 0; rep++) {
        for (int64_t b = 0; b < STEP_REQUESTS && rc == 0; b++) {
            s->rows[b] = (kvc_step_request){.request_id = b, .computed_tokens = STEP_PROMPT, .num_new_tokens = 1};
            rc = kvc_manager_allocate_slots(
                     s->m, &(kvc_slot_request){.request_id = b, .num_new_tokens = STEP_PROMPT}) != KVC_OK;
        }
        for (int step = 0; step < STEP_STEPS && rc == 0; step++) {
            int i = rep * STEP_STEPS + step;
            rc = step_run(s, &samples[N + i], &samples[2 * N + i]) != KVC_OK;
            samples[i] = samples[N + i] + samples[2 * N + i];
        }
        for (int64_t b = 0; b < STEP_REQUESTS; b++) s->rows[b].computed_tokens = STEP_PROMPT;
        for (int step = 0; step < STEP_STEPS; step++) {
            samples[3 * N + rep * STEP_STEPS + step] = baseline_step(src, dst, width, n_keys, slots, s->rows);
            for (int64_t b = 0; b < STEP_REQUESTS; b++) s->rows[b].computed_tokens++;
            bench_sink = slots[step];
        }
        for (int64_t b = 0; b < STEP_REQUESTS && rc == 0; b++) rc = kvc_manager_free(s->m, b) != KVC_OK;
    }
    if (rc != 0) {
        fprintf(stderr, "kvcache bench manager: decode step failed: %s\n", kvc_last_error());
    } else {
        res->us = 1e6 * kvc_bench_median(samples, N);
        res->allocate_us = 1e6 * kvc_bench_median(samples + N, N);
        res->build_us = 1e6 * kvc_bench_median(samples + 2 * N, N);
        res->baseline_us = 1e6 * kvc_bench_median(samples + 3 * N, N);
    }
    if (s != NULL) {
        kvc_step_buffers_destroy(s->buf);
        kvc_manager_destroy(s->m);
    }
    free(s);
    kvc_aligned_free(src);
    kvc_aligned_free(dst);
    free(slots);
    free(samples);
    return rc;
}

static const char *verdict(double value, double target) { return value < target ? "met" : "MISSED"; }

int kvc_bench_manager(const kvc_bench_opts *opts) {
    const bool json = opts->json;
    pool_result pool;
    step_result step;
    if (bench_pool(&pool) != 0 || bench_step(&step) != 0) return 1;
    if (json) {
        printf("{\"bench\": \"manager\", \"repetitions\": %d, "
               "\"pool\": {\"batch\": %d, \"blocks\": %d, \"ns_per_block_op\": %.2f, \"baseline_ns\": %.2f, "
               "\"ratio\": %.2f, \"target_ns\": %.0f, \"target_met\": %s}, "
               "\"decode_step\": {\"requests\": %d, \"keys\": [\"FullAttention\", \"SlidingWindow\"], "
               "\"block_size\": %d, \"max_model_len\": %d, \"us_per_step\": %.2f, \"allocate_us\": %.2f, "
               "\"metadata_us\": %.2f, \"baseline_us\": %.2f, \"ratio\": %.2f, \"target_us\": %.0f, "
               "\"target_met\": %s}}\n",
               REPS, POOL_BATCH, POOL_BLOCKS, pool.ns, pool.baseline_ns, pool.ns / pool.baseline_ns, TARGET_POOL_NS,
               pool.ns < TARGET_POOL_NS ? "true" : "false", STEP_REQUESTS, STEP_BS, STEP_MAX_LEN, step.us,
               step.allocate_us, step.build_us, step.baseline_us, step.us / step.baseline_us, TARGET_STEP_US,
               step.us < TARGET_STEP_US ? "true" : "false");
        return 0;
    }
    printf("kvcache bench manager (medians: pool over %d repetitions, step over %d timed steps)\n\n", REPS,
           REPS * STEP_STEPS);
    printf("block pool take/give, batches of %d, %d blocks out and back per repetition\n", POOL_BATCH, POOL_BLOCKS);
    printf("  kvc_block_pool_take/give      %8.2f ns per block op\n", pool.ns);
    printf("  baseline: array FIFO, no checks %6.2f ns per block op   ratio %.2fx   target < %.0f ns: %s\n\n",
           pool.baseline_ns, pool.ns / pool.baseline_ns, TARGET_POOL_NS, verdict(pool.ns, TARGET_POOL_NS));
    printf("decode step, %d live requests (FullAttention + SlidingWindow W=%d, block size %d, max_model_len %d)\n",
           STEP_REQUESTS, STEP_WINDOW, STEP_BS, STEP_MAX_LEN);
    printf("  allocate_slots x%d + tables + slots %8.2f us per step  (allocate %.2f us, metadata %.2f us)\n",
           STEP_REQUESTS, step.us, step.allocate_us, step.build_us);
    printf("  baseline: memcpy of the same tables + slot loop %.2f us   ratio %.2fx   target < %.0f us: %s\n",
           step.baseline_us, step.us / step.baseline_us, TARGET_STEP_US, verdict(step.us, TARGET_STEP_US));
    return 0;
}
