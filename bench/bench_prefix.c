/* `kvcache bench prefix [--json]`: prefix caching through the request-level
 * manager, caching on and off in the same run.
 *
 *   shared prefix: 128 requests, each a 1,024-token common prefix plus its
 *                  own 64-token suffix, admitted one after another (each is
 *                  prefilled, decodes 16 tokens and leaves);
 *   chat:          32 conversations of 8 turns, taken round-robin; a turn's
 *                  prompt is the conversation so far (previous prompt, the
 *                  32-token answer, a new 48-token user message);
 * both on a FullAttention key with 16-token blocks; the shared-prefix
 * workload again on a hybrid (gpt-oss style) model, a FullAttention and a
 * SlidingWindow key (window 128, shorter than the shared prefix, which each
 * request prefills in one chunk) sharing one pool. Printed: hit rate (hit
 * tokens / prompt tokens), prefill tokens computed and their reduction,
 * evictions, the manager's bookkeeping per request (find_prefix +
 * allocate_slots + cache_computed + decode + free), and the cost of a hit per
 * block (a find_prefix over a fully cached 1,024-token prefix divided by its
 * 64 blocks: hash + lookup + verify) next to the bare XXH3-128 of the same
 * bytes (parent hash + 16 token ids per block), both medians over 2,000
 * queries timed one by one; the workload figures are medians over 7
 * repetitions. Then the shared-prefix workload (64 requests) through the
 * engine with the demo's toy model, caching off and on: tokens/s (prompt +
 * generated tokens over the steps' wall time, fastest of 3 alternating runs
 * each), speedup, prefill tokens the
 * model computed, and whether both runs produced the same tokens. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bench.h"
#include "demo_workload.h"
#include "kvcache/cache.h"
#include "kvcache/engine.h"

enum {
    REPS = 7,
    BS = 16,
    MAX_LEN = 2048,
    POOL_BLOCKS = 4096,
    SHARED_REQUESTS = 128,
    SHARED_PREFIX = 1024,
    SHARED_SUFFIX = 64,
    DECODE = 16,
    CHATS = 32,
    TURNS = 8,
    CHAT_SYSTEM = 256,
    CHAT_USER = 48,
    CHAT_ANSWER = 32,
    HIT_REPS = 2000,
    WINDOW = 128 /* the hybrid model's sliding window (gpt-oss's) */
};

#define TARGET_REDUCTION 0.90
#define TARGET_HIT_NS    100.0

static volatile uint64_t bench_sink;

typedef struct bench_model {
    kvc_cache_entry entry[2];
    kvc_layer_cache_info layer[2];
    kvc_model_cache_info ci;
    kvc_block_plan plan;
} bench_model;

/* One FullAttention layer, or (hybrid, gpt-oss style) a FullAttention layer
 * and a SlidingWindow layer of window WINDOW drawing from one shared pool
 * (their pages are equal in bytes) of twice the blocks. */
static int make_manager(bench_model *bm, bool caching, bool hybrid, kvc_manager **out) {
    int32_t n_layers = hybrid ? 2 : 1;
    for (int32_t l = 0; l < n_layers; l++) {
        kvc_cache_entry *e = &bm->entry[l];
        *e = kvc_cache_entry_default();
        snprintf(e->name, sizeof e->name, "k_cache");
        e->num_head = 8;
        e->n_dims = 1;
        e->dim[0] = 128;
        e->block_size = BS;
        e->attn_type = l == 0 ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW;
        e->sliding_window = l == 0 ? 0 : WINDOW;
        bm->layer[l] = (kvc_layer_cache_info){.layer_idx = l, .n_caches = 1, .caches = e};
    }
    bm->ci = (kvc_model_cache_info){.num_layers = n_layers, .n_layer_infos = n_layers, .layer_infos = bm->layer};
    const char *keys[2] = {"FullAttention", "SlidingWindow"};
    int64_t blocks[2] = {n_layers * POOL_BLOCKS, n_layers * POOL_BLOCKS};
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = MAX_LEN;
    p.max_requests = 256;
    p.prefix_caching = caching;
    p.poison_new_blocks = false; /* no storage here */
    kvc_status st = kvc_block_plan_from_counts(&bm->ci, keys, blocks, n_layers, &bm->plan);
    for (int32_t g = 0; g < bm->plan.n_groups && hybrid; g++) bm->plan.groups[g].pool_id = 1;
    if (st == KVC_OK && hybrid) st = kvc_block_plan_check_pools(&bm->plan);
    if (st != KVC_OK || kvc_manager_create(&bm->ci, &bm->plan, &p, out) != KVC_OK) {
        fprintf(stderr, "kvcache bench prefix: %s\n", kvc_last_error());
        return 1;
    }
    return 0;
}

typedef struct workload_result {
    int64_t prompt_tokens, computed_tokens, hit_tokens, evictions, requests;
    double us_per_request;
} workload_result;

/* One request's life: admitted with the hit the manager finds, prefilled,
 * DECODE (or `decode`) tokens decoded, freed. tokens must hold n + decode ids. */
static int serve(kvc_manager *m, int64_t id, const int32_t *tokens, int64_t n, int64_t decode, workload_result *r) {
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = n};
    kvc_prefix_hit hit;
    if (kvc_manager_find_prefix(m, &prompt, &hit) != KVC_OK) return 1;
    kvc_status st = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = id,
                                                                      .computed_tokens = hit.n_tokens,
                                                                      .num_new_tokens = n - hit.n_tokens,
                                                                      .prompt = &prompt});
    if (st != KVC_OK || kvc_manager_cache_computed(m, id, tokens, n) != KVC_OK) return 1;
    for (int64_t t = n; t < n + decode; t++)
        if (kvc_manager_allocate_slots(
                m, &(kvc_slot_request){.request_id = id, .computed_tokens = t, .num_new_tokens = 1}) != KVC_OK ||
            kvc_manager_cache_computed(m, id, tokens, t + 1) != KVC_OK)
            return 1;
    if (kvc_manager_free(m, id) != KVC_OK) return 1;
    r->prompt_tokens += n;
    r->computed_tokens += n - hit.n_tokens;
    r->hit_tokens += hit.n_tokens;
    r->requests++;
    return 0;
}

static int32_t *shared_tokens(int64_t i, int32_t *buf) {
    for (int64_t t = 0; t < SHARED_PREFIX; t++) buf[t] = (int32_t)(t * 7 + 3);
    for (int64_t t = 0; t < SHARED_SUFFIX + DECODE; t++) buf[SHARED_PREFIX + t] = (int32_t)(100000 + i * 1000 + t);
    return buf;
}

static int run_shared(kvc_manager *m, workload_result *r) {
    static int32_t buf[SHARED_PREFIX + SHARED_SUFFIX + DECODE];
    for (int64_t i = 0; i < SHARED_REQUESTS; i++)
        if (serve(m, i, shared_tokens(i, buf), SHARED_PREFIX + SHARED_SUFFIX, DECODE, r) != 0) return 1;
    return 0;
}

/* Conversation c's tokens up to turn `turn` (its prompt and answer). */
static int64_t chat_tokens(int64_t c, int64_t turn, int32_t *buf) {
    int64_t n = 0;
    for (int64_t t = 0; t < CHAT_SYSTEM; t++) buf[n++] = (int32_t)(t * 5 + 1);
    for (int64_t k = 0; k <= turn; k++) {
        for (int64_t t = 0; t < CHAT_USER; t++) buf[n++] = (int32_t)(200000 + c * 10000 + k * 100 + t);
        for (int64_t t = 0; t < CHAT_ANSWER; t++) buf[n++] = (int32_t)(500000 + c * 10000 + k * 100 + t);
    }
    return n;
}

static int run_chat(kvc_manager *m, workload_result *r) {
    static int32_t buf[CHAT_SYSTEM + TURNS * (CHAT_USER + CHAT_ANSWER)];
    int64_t id = 0;
    for (int64_t turn = 0; turn < TURNS; turn++)
        for (int64_t c = 0; c < CHATS; c++) {
            int64_t n = chat_tokens(c, turn, buf) - CHAT_ANSWER; /* the answer is generated */
            if (serve(m, id++, buf, n, CHAT_ANSWER, r) != 0) return 1;
        }
    return 0;
}

/* Median over REPS fresh managers of one workload; counts from the first. */
static int measure(bool caching, bool hybrid, int (*workload)(kvc_manager *, workload_result *), workload_result *out) {
    double us[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        bench_model bm;
        kvc_manager *m = NULL;
        if (make_manager(&bm, caching, hybrid, &m) != 0) return 1;
        workload_result r = {0};
        double t0 = kvc_bench_now();
        int rc = workload(m, &r);
        us[rep] = 1e6 * (kvc_bench_now() - t0) / (double)(r.requests > 0 ? r.requests : 1);
        kvc_prefix_stats st;
        kvc_manager_prefix_stats(m, &st);
        r.evictions = st.evictions;
        kvc_manager_destroy(m);
        if (rc != 0) {
            fprintf(stderr, "kvcache bench prefix: %s\n", kvc_last_error());
            return 1;
        }
        if (rep == 0) *out = r;
    }
    out->us_per_request = kvc_bench_median(us, REPS);
    return 0;
}

typedef struct hit_result {
    double ns_per_block, xxh3_ns_per_block;
} hit_result;

/* A find_prefix over a fully cached prefix, per block, and the bare XXH3 of
 * the same bytes per block. */
static int measure_hit(hit_result *out) {
    bench_model bm;
    kvc_manager *m = NULL;
    if (make_manager(&bm, true, false, &m) != 0) return 1;
    static int32_t buf[SHARED_PREFIX + SHARED_SUFFIX + DECODE];
    workload_result r = {0};
    if (serve(m, 0, shared_tokens(0, buf), SHARED_PREFIX + 1, 0, &r) != 0) return 1;
    kvc_prompt prompt = {.tokens = buf, .n_tokens = SHARED_PREFIX + 1};
    const int64_t blocks = SHARED_PREFIX / BS;
    /* Each query and each bare chain is timed alone (a few us, well inside a
     * scheduler time slice), so that a preemption moves one sample, not the median. */
    static double find[HIT_REPS], bare[HIT_REPS];
    uint8_t bytes[16 + BS * sizeof(int32_t)];
    for (int i = 0; i < HIT_REPS; i++) {
        kvc_prefix_hit hit;
        double t0 = kvc_bench_now();
        kvc_manager_find_prefix(m, &prompt, &hit);
        double t1 = kvc_bench_now();
        XXH128_hash_t h = {0, 0};
        for (int64_t b = 0; b < blocks; b++) {
            memcpy(bytes, &h, 16);
            memcpy(bytes + 16, buf + b * BS, BS * sizeof(int32_t));
            h = XXH3_128bits(bytes, sizeof bytes);
        }
        double t2 = kvc_bench_now();
        bench_sink += h.low64 + (uint64_t)hit.n_tokens;
        if (hit.n_tokens != SHARED_PREFIX) {
            fprintf(stderr, "kvcache bench prefix: expected a hit of %d tokens, got %" PRId64 "\n", SHARED_PREFIX,
                    hit.n_tokens);
            kvc_manager_destroy(m);
            return 1;
        }
        find[i] = 1e9 * (t1 - t0) / (double)blocks;
        bare[i] = 1e9 * (t2 - t1) / (double)blocks;
    }
    kvc_manager_destroy(m);
    out->ns_per_block = kvc_bench_median(find, HIT_REPS);
    out->xxh3_ns_per_block = kvc_bench_median(bare, HIT_REPS);
    return 0;
}

/* ---- through the engine with the demo's toy model -------------------------- */
enum { ENGINE_REQUESTS = 64, ENGINE_NEW = 8, ENGINE_MAX_LEN = 1152, ENGINE_REPS = 3 };

typedef struct engine_result {
    double tokens_per_s[2]; /* [off, on] the workload's prompt + generated tokens per second of engine steps */
    double seconds[2];
    int64_t prefill_computed[2]; /* prompt tokens the model computed */
    int64_t hit_tokens;
    bool outputs_equal;
} engine_result;

static int measure_engine(engine_result *out) {
    const kvc_demo_family *f = &kvc_demo_families[0];
    kvc_model *m = NULL;
    if (kvc_demo_model(f, &m) != KVC_OK) return 1;
    const int64_t n_prompt = SHARED_PREFIX + SHARED_SUFFIX;
    kvc_demo_workload w = {.n = ENGINE_REQUESTS, .max_len = n_prompt + ENGINE_NEW - 1, .max_new = ENGINE_NEW};
    w.reqs = calloc(ENGINE_REQUESTS, sizeof *w.reqs);
    w.arrival_s = calloc(ENGINE_REQUESTS, sizeof *w.arrival_s);
    w.ids = malloc((size_t)ENGINE_REQUESTS * (size_t)n_prompt * sizeof *w.ids);
    int32_t *outputs[2] = {malloc(ENGINE_REQUESTS * ENGINE_NEW * sizeof(int32_t)),
                           malloc(ENGINE_REQUESTS * ENGINE_NEW * sizeof(int32_t))};
    int rc = w.reqs == NULL || w.arrival_s == NULL || w.ids == NULL || outputs[0] == NULL || outputs[1] == NULL;
    for (int64_t i = 0; i < ENGINE_REQUESTS && rc == 0; i++) {
        int32_t *ids = w.ids + i * n_prompt;
        for (int64_t t = 0; t < n_prompt; t++) ids[t] = (int32_t)((t < SHARED_PREFIX ? t * 7 + 3 : i * 31 + t) % 100);
        w.reqs[i] = (kvc_demo_request){.n_prompt = n_prompt,
                                       .max_new_tokens = ENGINE_NEW,
                                       .prompt = ids,
                                       .sampling = kvc_sampling_default_params()};
    }
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.cache.block_size = BS;
    for (int run = 0; run < 2 * ENGINE_REPS && rc == 0; run++) { /* off, on, off, on, ...: fastest of each */
        int on = run % 2;
        kvc_engine_params p = kvc_engine_default_params();
        p.max_model_len = ENGINE_MAX_LEN;
        p.max_num_seqs = 16;
        p.plan_concurrency = 16;
        p.check = false;
        p.prefix_caching = on == 1;
        kvc_demo_figures fig;
        if (kvc_demo_run(m, &p, &ap, &w, outputs[on], NULL, &fig) != KVC_OK) {
            fprintf(stderr, "kvcache bench prefix: engine: %s\n", kvc_last_error());
            rc = 1;
            break;
        }
        if (run >= 2 && fig.seconds >= out->seconds[on]) continue;
        out->seconds[on] = fig.seconds;
        /* the same workload both times: every prompt and generated token counts */
        out->tokens_per_s[on] = (double)(ENGINE_REQUESTS * (n_prompt + ENGINE_NEW)) / fig.seconds;
        out->prefill_computed[on] = fig.prompt_tokens; /* the prompt tokens the steps computed */
        if (on) out->hit_tokens = fig.prefix.hit_tokens;
    }
    if (rc == 0)
        out->outputs_equal = memcmp(outputs[0], outputs[1], ENGINE_REQUESTS * ENGINE_NEW * sizeof(int32_t)) == 0;
    free(outputs[0]);
    free(outputs[1]);
    free(w.reqs);
    free(w.arrival_s);
    free(w.ids);
    kvc_model_destroy(m);
    return rc;
}

static double reduction(const workload_result *on, const workload_result *off) {
    return off->computed_tokens > 0 ? 1.0 - (double)on->computed_tokens / (double)off->computed_tokens : 0.0;
}

static void print_workload(const char *name, const workload_result *on, const workload_result *off, bool json,
                           bool last) {
    double hit_rate = (double)on->hit_tokens / (double)on->prompt_tokens;
    if (json) {
        printf("\"%s\": {\"requests\": %" PRId64 ", \"prompt_tokens\": %" PRId64 ", \"hit_rate\": %.4f, "
               "\"prefill_tokens_on\": %" PRId64 ", \"prefill_tokens_off\": %" PRId64 ", \"reduction\": %.4f, "
               "\"evictions\": %" PRId64 ", \"us_per_request_on\": %.2f, \"us_per_request_off\": %.2f}%s",
               name, on->requests, on->prompt_tokens, hit_rate, on->computed_tokens, off->computed_tokens,
               reduction(on, off), on->evictions, on->us_per_request, off->us_per_request, last ? "" : ", ");
        return;
    }
    printf("  %-14s %5" PRId64 " requests  hit rate %5.1f %%  prefill tokens %8" PRId64 " on / %8" PRId64
           " off (-%.1f %%)  evictions %5" PRId64 "  manager %6.2f us/request on, %6.2f off\n",
           name, on->requests, 100.0 * hit_rate, on->computed_tokens, off->computed_tokens, 100.0 * reduction(on, off),
           on->evictions, on->us_per_request, off->us_per_request);
}

int kvc_bench_prefix(const kvc_bench_opts *opts) {
    workload_result shared_on = {0}, shared_off = {0}, chat_on = {0}, chat_off = {0}, hybrid_on = {0}, hybrid_off = {0};
    hit_result hit;
    engine_result eng = {0};
    if (measure(true, false, run_shared, &shared_on) != 0 || measure(false, false, run_shared, &shared_off) != 0 ||
        measure(true, true, run_shared, &hybrid_on) != 0 || measure(false, true, run_shared, &hybrid_off) != 0 ||
        measure(true, false, run_chat, &chat_on) != 0 || measure(false, false, run_chat, &chat_off) != 0 ||
        measure_hit(&hit) != 0 || measure_engine(&eng) != 0)
        return 1;
    double speedup = eng.seconds[0] / eng.seconds[1];
    bool reduction_met = reduction(&shared_on, &shared_off) >= TARGET_REDUCTION &&
                         reduction(&hybrid_on, &hybrid_off) >= TARGET_REDUCTION;
    bool hit_met = hit.ns_per_block <= TARGET_HIT_NS;
    if (opts->json) {
        printf("{\"bench\": \"prefix\", \"repetitions\": %d, \"block_size\": %d, ", REPS, BS);
        print_workload("shared_prefix", &shared_on, &shared_off, true, false);
        printf("\"hybrid_window\": %d, ", WINDOW);
        print_workload("shared_prefix_hybrid", &hybrid_on, &hybrid_off, true, false);
        print_workload("chat", &chat_on, &chat_off, true, false);
        printf("\"hit\": {\"blocks\": %d, \"ns_per_block\": %.2f, \"xxh3_ns_per_block\": %.2f, \"target_ns\": %.0f, "
               "\"target_met\": %s}, \"reduction_target\": %.2f, \"reduction_target_met\": %s, "
               "\"engine\": {\"model\": \"%s\", \"requests\": %d, \"tokens_per_s_off\": %.1f, "
               "\"tokens_per_s_on\": %.1f, \"speedup\": %.2f, \"prefill_computed_off\": %" PRId64
               ", \"prefill_computed_on\": %" PRId64 ", \"outputs_equal\": %s}}\n",
               SHARED_PREFIX / BS, hit.ns_per_block, hit.xxh3_ns_per_block, TARGET_HIT_NS, hit_met ? "true" : "false",
               TARGET_REDUCTION, reduction_met ? "true" : "false", kvc_demo_families[0].name, ENGINE_REQUESTS,
               eng.tokens_per_s[0], eng.tokens_per_s[1], speedup, eng.prefill_computed[0], eng.prefill_computed[1],
               eng.outputs_equal ? "true" : "false");
        return 0;
    }
    printf("kvcache bench prefix (manager only, block size %d, medians over %d repetitions)\n\n", BS, REPS);
    printf("caching on vs off in the same run (shared prefix: %d requests x (%d shared + %d own tokens), %d decoded;\n"
           "chat: %d conversations x %d turns, %d-token system prompt, %d user + %d answer tokens a turn)\n",
           SHARED_REQUESTS, SHARED_PREFIX, SHARED_SUFFIX, DECODE, CHATS, TURNS, CHAT_SYSTEM, CHAT_USER, CHAT_ANSWER);
    print_workload("shared prefix", &shared_on, &shared_off, false, false);
    print_workload("  hybrid", &hybrid_on, &hybrid_off, false, false);
    print_workload("chat", &chat_on, &chat_off, false, true);
    printf("  (hybrid: gpt-oss style, a FullAttention and a SlidingWindow key (window %d < the shared prefix,\n"
           "  prefilled in one chunk) drawing from one shared pool; the sliding key hits the blocks its window\n"
           "  reads, which the first prefill cached before they left its window)\n",
           WINDOW);
    printf("  prefill reduction on the shared prefix, dense and hybrid: target >= %.0f %%: %s\n\n",
           100.0 * TARGET_REDUCTION, reduction_met ? "met" : "MISSED");
    printf("a hit, per block (%d-block cached prefix: chain hash + lookup + token compare; median of %d queries)\n",
           SHARED_PREFIX / BS, HIT_REPS);
    printf("  kvc_manager_find_prefix       %8.2f ns per block   target <= %.0f ns: %s\n", hit.ns_per_block,
           TARGET_HIT_NS, hit_met ? "met" : "MISSED");
    printf("  baseline: bare XXH3-128 of the same %d bytes %6.2f ns per block   ratio %.2fx\n\n",
           (int)(16 + BS * sizeof(int32_t)), hit.xxh3_ns_per_block, hit.ns_per_block / hit.xxh3_ns_per_block);
    printf("through the engine (%s toy model, %d requests of %d shared + %d own prompt tokens, %d generated)\n",
           kvc_demo_families[0].name, ENGINE_REQUESTS, SHARED_PREFIX, SHARED_SUFFIX, ENGINE_NEW);
    printf("  caching on  %9.1f tokens/s  prefill tokens computed %7" PRId64 "\n", eng.tokens_per_s[1],
           eng.prefill_computed[1]);
    printf("  caching off %9.1f tokens/s  prefill tokens computed %7" PRId64 "   speedup %.2fx (target >= 3x: %s)"
           "   outputs equal: %s\n",
           eng.tokens_per_s[0], eng.prefill_computed[0], speedup, speedup >= 3.0 ? "met" : "MISSED",
           eng.outputs_equal ? "yes" : "NO");
    return 0;
}
