/* The engine over the model runtime under churn and bad input: the built-in
 * models (cli/demo_workload.h) run a mixed workload through a small KV
 * pool (blocks reused, requests preempted and recomputed), also with small
 * step budgets that chunk every prompt beside decode rows, and every
 * request's tokens (half of them sampled) equal its tokens when run alone
 * (the logits' bitwise equality under batching and chunking is the model's
 * batch-invariance test in tests/model); prefix caching on (the run alone
 * has it off) changes no token either; the pools are empty afterwards.
 * Bad requests are refused with a clear error while the others keep being
 * served. */
#include <malloc.h>
#include <omp.h>
#include <stdlib.h>

#include "demo_workload.h"
#include "kvc_test_util.h"

#define MML 512

static kvc_engine_params churn_params(int64_t batch) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = MML;
    p.max_num_seqs = batch;
    p.seed = 3;
    return p;
}

/* w's tokens with every request run alone (one at a time, a pool per key), n * max_new of them; free() it. */
static int32_t *run_alone(const kvc_model *m, const kvc_engine_adapter_params *ap, const kvc_demo_workload *w,
                          const char *what) {
    int32_t *alone = malloc((size_t)(w->n * w->max_new) * sizeof *alone);
    assert_non_null(alone);
    kvc_engine_params solo = churn_params(1);
    solo.max_requests = 1;
    solo.shared_pools = false; /* alone with a pool per key, busy with the default shared pool */
    kvc_demo_figures solo_fig;
    if (kvc_demo_run(m, &solo, ap, w, alone, NULL, &solo_fig) != KVC_OK)
        fail_msg("%s alone: %s", what, kvc_last_error());
    return alone;
}

/* Runs w under p; every request's tokens must equal `alone` (run_alone's); returns the run's figures. */
static kvc_demo_figures busy_vs(const kvc_model *m, const kvc_engine_params *p, const kvc_engine_adapter_params *ap,
                                const kvc_demo_workload *w, const int32_t *alone, const char *what) {
    int32_t *busy = malloc((size_t)(w->n * w->max_new) * sizeof *busy);
    assert_non_null(busy);
    kvc_demo_figures fig;
    if (kvc_demo_run(m, p, ap, w, busy, NULL, &fig) != KVC_OK) fail_msg("%s: %s", what, kvc_last_error());
    assert_int_equal(fig.requests, w->n);
    for (int64_t i = 0; i < w->n; i++) {
        const int32_t *a = busy + i * w->max_new, *b = alone + i * w->max_new;
        for (int64_t j = 0; j < w->max_new; j++)
            if (a[j] != b[j])
                fail_msg("%s: request %lld token %lld is %d under churn, %d alone", what, (long long)i, (long long)j,
                         a[j], b[j]);
        assert_int_not_equal(a[w->reqs[i].max_new_tokens - 1], -1); /* every token generated */
    }
    for (int32_t k = 0; k < fig.stats.n_keys; k++) assert_int_equal(fig.stats.blocks_in_use[k], 0);
    free(busy);
    return fig;
}

/* Runs w under p and alone; returns the busy run's figures. */
static kvc_demo_figures busy_vs_alone(const kvc_model *m, const kvc_engine_params *p,
                                      const kvc_engine_adapter_params *ap, const kvc_demo_workload *w,
                                      const char *what) {
    int32_t *alone = run_alone(m, ap, w, what);
    kvc_demo_figures fig = busy_vs(m, p, ap, w, alone, what);
    free(alone);
    return fig;
}

/* At most cap new tokens per request (the sanitizer build runs the model slowly). */
static void short_outputs(kvc_demo_workload *w, int64_t cap) {
    for (int64_t i = 0; i < w->n; i++)
        if (w->reqs[i].max_new_tokens > cap) w->reqs[i].max_new_tokens = cap;
}

/* The busy workload: 20 requests (seed 11); under AddressSanitizer, whose build runs the model about 25 times
 * slower, 8 requests of at most 96 new tokens (seed 15: its long outputs still make the small pool preempt and
 * run out of blocks in every family, as churn_family checks). */
static void churn_workload(kvc_demo_workload *w) {
#ifdef KVC_TEST_ASAN
    assert_int_equal(kvc_demo_workload_make(8, 15, 512, 0, w), KVC_OK);
    short_outputs(w, 96);
#else
    assert_int_equal(kvc_demo_workload_make(20, 11, 512, 0, w), KVC_OK);
#endif
}

/* budget_tokens: KV budget in tokens of every layer (GptOss: its sliding
 * layers take small window pools, so the same budget leaves more blocks to
 * its full layers) */
static void churn_family(int f, int64_t budget_tokens) {
    const kvc_demo_family *fam = &kvc_demo_families[f];
    kvc_model *m = NULL;
    assert_int_equal(kvc_demo_model(fam, &m), KVC_OK);
    kvc_demo_workload w;
    churn_workload(&w);
    kvc_engine_adapter_params ap = {.latent = fam->latent, .cache = {.block_size = 16}};
    kvc_engine_params p = churn_params(6);
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = kvc_demo_kv_bytes_per_token(m, fam->latent, KVC_DTYPE_F32) * budget_tokens;
    /* w alone once: the shared-pool, pool-per-key and self-managed runs below must each give its tokens */
    int32_t *w_alone = run_alone(m, &ap, &w, fam->name);
    kvc_demo_figures fig = busy_vs(m, &p, &ap, &w, w_alone, fam->name);
    if (fig.preemptions < 1) fail_msg("%s: the pool forced no preemption", fam->name);
    for (int32_t k = 1; k < fig.stats.n_keys; k++) /* GptOss: its window key draws from the full key's pool */
        assert_int_equal(fig.stats.num_blocks[k], fig.stats.num_blocks[0]);
#ifndef KVC_TEST_ASAN /* a pool per key: the shared pool's engine code again, checked by the Release build */
    kvc_engine_params apart = p;
    apart.shared_pools = false;
    busy_vs(m, &apart, &ap, &w, w_alone, fam->name);
#endif
    bool exhausted = false; /* some key ran out of blocks: they were reused */
    for (int32_t k = 0; k < fig.stats.n_keys; k++)
        exhausted = exhausted || fig.stats.peak_blocks_in_use[k] == fig.stats.num_blocks[k] - 1;
    assert_true(exhausted);
    /* small steps: prompts chunked (at most 10 tokens of one request, 24 per
     * step), decode rows beside chunks in most steps (a shorter workload:
     * the sanitizer build runs the model slowly) */
    kvc_demo_workload few;
    assert_int_equal(kvc_demo_workload_make(6, 12, 512, 0, &few), KVC_OK);
    short_outputs(&few, 12);
    p.max_num_batched_tokens = 24;
    p.long_prefill_token_threshold = 10;
    kvc_demo_figures chunked = busy_vs_alone(m, &p, &ap, &few, fam->name);
    if (chunked.stats.prefill_steps < 2 * few.n) fail_msg("%s: prompts were not chunked", fam->name);
    kvc_demo_workload_free(&few);
    /* prefix caching on (the run alone: off): two thirds of the requests share
     * a 64-token system prompt; hits, sliding windows shorter than the shared
     * prefix (GptOss), preemption and eviction under the small pool */
    kvc_demo_workload shared;
    assert_int_equal(kvc_demo_workload_make(12, 13, 512, 0, &shared), KVC_OK);
    kvc_demo_workload_share_prefix(&shared, 1, 64, 512);
    short_outputs(&shared, 12);
    for (int64_t i = 2; i < shared.n; i += 3) shared.ids[shared.reqs[i].prompt - shared.ids] ^= 1; /* a third differ */
    kvc_engine_params pc = churn_params(6);
    pc.plan = KVC_ENGINE_PLAN_BUDGET;
    pc.kv_memory_bytes = p.kv_memory_bytes;
    pc.prefix_caching = true;
    kvc_demo_figures cached = busy_vs_alone(m, &pc, &ap, &shared, fam->name);
    if (cached.stats.prefix_hit_tokens == 0) fail_msg("%s: no prefix hit", fam->name);
    kvc_demo_workload_free(&shared);
    /* the self-managed path: legacy rows reused by later requests, the same tokens as the paged cache alone */
    kvc_engine_adapter_params self = {.self_managed = true, .latent = fam->latent};
    kvc_engine_params ps = churn_params(3);
    busy_vs(m, &ps, &self, &w, w_alone, "self-managed");
    free(w_alone);
    kvc_demo_workload_free(&w);
    kvc_model_destroy(m);
}

static void test_churn_qwen3(void **state) {
    (void)state;
    churn_family(0, 560);
}

static void test_churn_gpt_oss(void **state) {
    (void)state;
    churn_family(1, 400);
}

/* int8 KV: each layer's k and v caches come with their f32 scales (entries
 * of two page sizes in one key); the full and window keys' entry slots agree,
 * so the engine still serves both from one pool, every token as alone. */
static void test_churn_gpt_oss_int8(void **state) {
    (void)state;
    kvc_model *m = NULL;
    assert_int_equal(kvc_demo_model(&kvc_demo_families[1], &m), KVC_OK);
    kvc_demo_workload w;
    assert_int_equal(kvc_demo_workload_make(8, 11, 512, 0, &w), KVC_OK);
    short_outputs(&w, 12);
    kvc_engine_adapter_params ap = {.cache = {.block_size = 16, .kv_dtype = KVC_DTYPE_I8}};
    kvc_engine_params p = churn_params(6);
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = kvc_demo_kv_bytes_per_token(m, false, KVC_DTYPE_I8) * 400;
    kvc_demo_figures fig = busy_vs_alone(m, &p, &ap, &w, "gpt_oss int8");
    assert_int_equal(fig.stats.n_keys, 2);
    assert_int_equal(fig.stats.num_blocks[1], fig.stats.num_blocks[0]); /* one pool */
    kvc_demo_workload_free(&w);
    kvc_model_destroy(m);
}

static void test_churn_deepseek_v3(void **state) {
    (void)state;
    churn_family(2, 560);
}

/* A long churn through one engine keeps memory flat: once a first pass has
 * grown the attention scratch to its size, more passes allocate nothing that
 * stays (heap bytes in use unchanged), give the same tokens and leave the
 * pools empty. mallinfo2 reads 0 under ASan (whose leak check covers the
 * frees), so that build runs one more pass, not three. */
#ifdef KVC_TEST_ASAN
#define LONG_PASSES 1
#else
#define LONG_PASSES 3
#endif
static void test_long_churn_memory_flat(void **state) {
    (void)state;
    kvc_model *m = NULL;
    assert_int_equal(kvc_demo_model(&kvc_demo_families[0], &m), KVC_OK);
    kvc_demo_workload w;
    assert_int_equal(kvc_demo_workload_make(30, 5, 512, 0, &w), KVC_OK);
    kvc_engine_params p = churn_params(6);
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = kvc_demo_kv_bytes_per_token(m, false, KVC_DTYPE_F32) * 560;
    kvc_engine_adapter_params ap = {.cache = {.block_size = 16}};
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &p, &a), KVC_OK);
    assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &p, &e), KVC_OK);
    const size_t n_out = (size_t)(w.n * w.max_new);
    int32_t *first = malloc(n_out * sizeof *first), *again = malloc(n_out * sizeof *again);
    assert_true(first && again);
    for (size_t i = 0; i < n_out; i++) first[i] = again[i] = -1;
    kvc_demo_figures fig;
    memset(&fig, 0, sizeof fig);
    assert_int_equal(kvc_demo_drive(e, &w, first, &fig), KVC_OK);
    const size_t in_use = mallinfo2().uordblks;
    for (int pass = 0; pass < LONG_PASSES; pass++) {
        assert_int_equal(kvc_demo_drive(e, &w, again, &fig), KVC_OK);
        assert_memory_equal(first, again, n_out * sizeof *first);
    }
    assert_int_equal(mallinfo2().uordblks, in_use);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.finished_total, (1 + LONG_PASSES) * w.n);
    assert_true(st.preemptions >= 1 + LONG_PASSES);
    assert_int_equal(st.blocks_in_use[0], 0);
    free(first);
    free(again);
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
    kvc_demo_workload_free(&w);
    kvc_model_destroy(m);
}

static kvc_status add(kvc_engine *e, int64_t id, const int32_t *prompt, int64_t n, int64_t max_new) {
    kvc_engine_request r = kvc_engine_request_default();
    r.id = id;
    r.prompt = prompt;
    r.n_prompt = n;
    r.max_new_tokens = max_new;
    return kvc_engine_add_request(e, &r);
}

static void expect_refused(kvc_status got, kvc_status want, const char *needle) {
    assert_int_equal(got, want);
    if (strstr(kvc_last_error(), needle) == NULL)
        fail_msg("error \"%s\" does not mention \"%s\"", kvc_last_error(), needle);
}

/* Bad requests refused, the good ones served to their full outputs. */
static void test_bad_input_keeps_serving(void **state) {
    (void)state;
    kvc_model *m = NULL;
    assert_int_equal(kvc_demo_model(&kvc_demo_families[0], &m), KVC_OK);
    kvc_engine_params p = churn_params(4);
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = kvc_demo_kv_bytes_per_token(m, false, KVC_DTYPE_F32) * 160; /* 10 blocks of 16 */
    kvc_engine_adapter_params ap = {.cache = {.block_size = 16}};
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &p, &a), KVC_OK);
    assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &p, &e), KVC_OK);
    static int32_t prompt[MML + 1];
    for (int i = 0; i <= MML; i++) prompt[i] = (i * 37 + 5) % 512;
    assert_int_equal(add(e, 1, prompt, 9, 12), KVC_OK);
    assert_int_equal(add(e, 2, prompt + 3, 20, 12), KVC_OK);
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    expect_refused(add(e, 3, prompt, 0, 4), KVC_EINVAL, "prompt is empty");
    expect_refused(add(e, 3, prompt, MML + 1, 4), KVC_EINVAL, "max_model_len");
    expect_refused(add(e, 1, prompt, 4, 4), KVC_EINVAL, "already held");
    expect_refused(add(e, 3, prompt, 200, 4), KVC_ENOMEM, "FullAttention");
    int32_t bad_token[2] = {5, 512};
    expect_refused(add(e, 3, bad_token, 2, 4), KVC_EINVAL, "vocab");
    assert_int_equal(add(e, 3, prompt + 7, 5, 12), KVC_OK);
    for (int s = 0; s < 100 && !res.idle; s++) assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    assert_true(res.idle);
    for (int64_t id = 1; id <= 3; id++) {
        kvc_engine_request_info info;
        assert_int_equal(kvc_engine_request_get(e, id, &info), KVC_OK);
        assert_int_equal(info.state, KVC_REQ_FINISHED);
        assert_int_equal(info.n_generated, 12);
    }
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);

    /* adapter refusals */
    ap.latent = true;
    expect_refused(kvc_engine_adapter_create(m, &ap, &p, &a), KVC_EINVAL, "latent");
    ap = (kvc_engine_adapter_params){.cache = {.block_size = 0}};
    expect_refused(kvc_engine_adapter_create(m, &ap, &p, &a), KVC_EINVAL, "block_size");
    assert_null(a);
    kvc_model_destroy(m);
}

int main(void) {
    omp_set_num_threads(1); /* tiny models: the attention threads would only oversubscribe */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_churn_qwen3),
        cmocka_unit_test(test_churn_gpt_oss),
        cmocka_unit_test(test_churn_gpt_oss_int8),
        cmocka_unit_test(test_churn_deepseek_v3),
        cmocka_unit_test(test_long_churn_memory_flat),
        cmocka_unit_test(test_bad_input_keeps_serving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
