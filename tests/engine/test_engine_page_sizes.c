/* Keys of unequal bytes per token in one pool (issue 24): the engine with
 * shared_pools applies the planner's block-size rule
 * (kvc_cache_info_unify_pages) and the model reads each layer's block size
 * from its tensors.
 *
 * The built-in families give every attention key equal bytes per token, so
 * the case is a hand-made description: the model adapter's caches of a
 * random GptOss model (sliding window 4 on the even layers) with the
 * SlidingWindow key's entries turned to bf16 while the FullAttention key's
 * stay f32. Its pages are half as large at equal block size, so the rule
 * gives it blocks of 2 x 4 tokens and one pool; without shared pools each
 * key keeps blocks of 4 in a pool of its own. The logits of every request's
 * every step are the same bits (memcmp) in one pool, in a pool per key, with
 * prefix caching on (requests served one after another, the later ones
 * hitting whole 8-token blocks of the first), and with each request run
 * alone; with keys in lanes too, one pool against a pool per key.
 *
 * And `kvcache plan --json` (kvc_model_plan_to_json) names the block size
 * and pool of every manager key as the engine over the adapter chooses them
 * for the same config and options. */
#include <cjson/cJSON.h>
#include <omp.h>

#include "engine_models.h"

#define NT 6
#define BS 4

/* Three prompts sharing prefixes: 20 tokens; its first 16 + 6 own; its first 9 + 4 own. */
static const int32_t IDS[] = {3,   17, 42, 9,  100, 5,   77, 63, 12,  1,  99, 31, 8,  45, 2,  60, 71, 33, 19,
                              88,  3,  17, 42, 9,   100, 5,  77, 63,  12, 1,  99, 31, 8,  45, 2,  60, 7,  14,
                              120, 4,  6,  50, 3,   17,  42, 9,  100, 5,  77, 63, 12, 11, 23, 27, 90};
static const int64_t LENS[] = {20, 22, 13};

/* How one engine run is set up, and what its manager chose. */
typedef struct run_setup {
    bool shared_pools, prefix_caching;
    bool one_by_one;                    /* each request served to the end before the next is added (prefix hits) */
    bool bf16_window;                   /* the hand-made description: SlidingWindow entries in bf16 */
    bool lanes;                         /* keys in lanes (KVC_BLOCK_BNNDBS: the block dimension last in k) */
    int64_t block_size[2], pool_key[2]; /* chosen: [0] SlidingWindow, [1] FullAttention */
    int64_t hit_tokens;                 /* prompt tokens taken from the prefix cache */
} run_setup;

static void turn_window_bf16(kvc_model_cache_info *ci) {
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            kvc_cache_entry *e = &ci->layer_infos[l].caches[c];
            if (strcmp(kvc_cache_entry_group_key(e), "SlidingWindow") == 0) e->dtype = KVC_DTYPE_BF16;
        }
}

/* Requests 0..n-1 (prompts ids/lens) with NT greedy tokens each, run
 * together: logits [n, NT, V]. */
static void run(const kvc_model *m, run_setup *s, const int32_t *ids, const int64_t *lens, int64_t n, float *logits) {
    kvc_engine_params p = em_params(48, n, 64); /* every prompt in one step */
    p.shared_pools = s->shared_pools;
    p.prefix_caching = s->prefix_caching;
    const kvc_engine_adapter_params ap = {.cache = {.block_size = BS,
                                                    .kv_dtype = KVC_DTYPE_F32,
                                                    .kv_layout = s->lanes ? KVC_BLOCK_BNNDBS : KVC_BLOCK_BNBSND}};
    kvc_engine_adapter *a = NULL;
    if (kvc_engine_adapter_create(m, &ap, &p, &a) != KVC_OK) fail_msg("adapter: %s", kvc_last_error());
    em_recorder rec = {
        .inner = kvc_engine_adapter_model(a), .vocab = kvc_model_config_of(m)->vocab_size, .nt = NT, .logits = logits};
    rec.outer = *rec.inner;
    rec.outer.self = &rec;
    rec.outer.forward = em_forward;
    if (s->bf16_window) turn_window_bf16(rec.outer.cache_info);
    kvc_engine *e = NULL;
    if (kvc_engine_create(&rec.outer, &p, &e) != KVC_OK) fail_msg("engine: %s", kvc_last_error());
    const kvc_manager *mgr = kvc_engine_manager(e);
    static const char *const keys[2] = {"SlidingWindow", "FullAttention"};
    for (int i = 0; i < 2; i++) {
        int32_t k = -1;
        assert_int_equal(kvc_manager_key_index(mgr, keys[i], &k), KVC_OK);
        s->block_size[i] = kvc_manager_block_size(mgr, k);
        s->pool_key[i] = kvc_manager_pool_key(mgr, k) == k ? i : 1 - i; /* as an index of keys[] */
    }
    for (int64_t b = 0, t = 0; b < n; t += lens[b], b++) {
        kvc_engine_request r = kvc_engine_request_default();
        r.id = b;
        r.prompt = ids + t;
        r.n_prompt = lens[b];
        r.max_new_tokens = NT;
        if (kvc_engine_add_request(e, &r) != KVC_OK) fail_msg("add request %lld: %s", (long long)b, kvc_last_error());
        if (s->one_by_one || b == n - 1) {
            kvc_engine_step_result res = {0};
            for (int64_t step = 0; !res.idle; step++) {
                if (kvc_engine_step(e, &res) != KVC_OK) fail_msg("step: %s", kvc_last_error());
                assert_true(step <= NT + 1);
            }
        }
    }
    for (int64_t b = 0; b < n; b++) assert_int_equal(rec.steps[b], NT);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    s->hit_tokens = st.prefix_hit_tokens;
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
}

static void expect_bits(const float *got, const float *want, int64_t n, const char *what) {
    if (memcmp(got, want, (size_t)n * sizeof(float)) != 0) fail_msg("%s: logits are not bitwise equal", what);
}

static void test_unequal_pages_one_pool(void **state) {
    (void)state;
    kvc_model *m = em_random_model(GPT_OSS_JSON, 99);
    const int64_t V = kvc_model_config_of(m)->vocab_size, n = 3, per = NT * V;
    float *one = calloc((size_t)(n * per), sizeof(float)), *lg = calloc((size_t)(n * per), sizeof(float));
    assert_true(one && lg);

    run_setup unified = {.shared_pools = true, .bf16_window = true};
    run(m, &unified, IDS, LENS, n, one);
    assert_int_equal(unified.block_size[0], 2 * BS); /* half the bytes per token: twice the tokens per page */
    assert_int_equal(unified.block_size[1], BS);
    assert_int_equal(unified.pool_key[0], unified.pool_key[1]); /* one pool */

    run_setup apart = {.shared_pools = false, .bf16_window = true};
    run(m, &apart, IDS, LENS, n, lg);
    assert_int_equal(apart.block_size[0], BS);
    assert_int_equal(apart.block_size[1], BS);
    assert_int_not_equal(apart.pool_key[0], apart.pool_key[1]); /* a pool per key */
    expect_bits(lg, one, n * per, "a pool per key against one pool");

    run_setup cached = {.shared_pools = true, .prefix_caching = true, .bf16_window = true};
    run(m, &cached, IDS, LENS, n, lg);
    expect_bits(lg, one, n * per, "prefix caching on against off");
    run_setup hits = {.shared_pools = true, .prefix_caching = true, .one_by_one = true, .bf16_window = true};
    run(m, &hits, IDS, LENS, n, lg);
    /* whole blocks of both keys (8 tokens): 16 of the second prompt's 16 shared, 8 of the third's 9 */
    assert_int_equal(hits.hit_tokens, 16 + 8);
    expect_bits(lg, one, n * per, "prefix hits against no caching");

    for (int64_t b = 0, t = 0; b < n; t += LENS[b], b++) {
        run_setup alone = {.shared_pools = true, .bf16_window = true};
        run(m, &alone, IDS + t, LENS + b, 1, lg);
        char what[64];
        snprintf(what, sizeof what, "request %lld alone against the batch", (long long)b);
        expect_bits(lg, one + b * per, per, what);
    }

    /* keys in lanes: the forward reads each layer's block size from the last dimension of its k tensor */
    run_setup lanes = {.shared_pools = true, .bf16_window = true, .lanes = true};
    run(m, &lanes, IDS, LENS, n, one);
    assert_int_equal(lanes.block_size[0], 2 * BS);
    assert_int_equal(lanes.pool_key[0], lanes.pool_key[1]);
    run_setup lanes_apart = {.bf16_window = true, .lanes = true};
    run(m, &lanes_apart, IDS, LENS, n, lg);
    assert_int_equal(lanes_apart.block_size[0], BS);
    expect_bits(lg, one, n * per, "keys in lanes: a pool per key against one pool");

    /* equal pages (the adapter's own f32 description): the rule leaves the block sizes as asked */
    run_setup plain = {.shared_pools = true};
    run(m, &plain, IDS, LENS, n, lg);
    assert_int_equal(plain.block_size[0], BS);
    assert_int_equal(plain.block_size[1], BS);
    assert_int_equal(plain.pool_key[0], plain.pool_key[1]);
    free(one);
    free(lg);
    kvc_model_destroy(m);
}

/* The engine's key -> (block size, pool) against the plan's managers for
 * config json with options o (f32 caches of block size o->block_size). */
static void expect_plan_agrees(const char *json, const kvc_plan_options *o, bool latent) {
    kvc_model_plan *plan = NULL;
    if (kvc_model_plan_create(json, strlen(json), o, &plan) != KVC_OK) fail_msg("plan: %s", kvc_last_error());
    char *text = NULL;
    assert_int_equal(kvc_model_plan_to_json(plan, &text), KVC_OK);
    cJSON *doc = cJSON_Parse(text);
    kvc_plan_json_free(text);
    kvc_model_plan_destroy(plan);
    assert_non_null(doc);
    const cJSON *managers = cJSON_GetObjectItem(doc, "managers");
    assert_non_null(managers);

    kvc_model *m = em_random_model(json, 5);
    kvc_engine_params p = em_params(o->max_model_len, o->max_concurrency, 64);
    const kvc_engine_adapter_params ap = {
        .latent = latent,
        .cache = {.block_size = o->block_size, .kv_dtype = o->kv_dtype, .kv_layout = KVC_BLOCK_BNBSND}};
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    if (kvc_engine_adapter_create(m, &ap, &p, &a) != KVC_OK) fail_msg("adapter: %s", kvc_last_error());
    if (kvc_engine_create(kvc_engine_adapter_model(a), &p, &e) != KVC_OK) fail_msg("engine: %s", kvc_last_error());
    const kvc_manager *mgr = kvc_engine_manager(e);
    assert_int_equal(cJSON_GetArraySize(managers), kvc_manager_n_keys(mgr));
    int32_t plan_pool[KVC_MAX_MANAGERS];
    for (int32_t k = 0; k < kvc_manager_n_keys(mgr); k++) {
        const cJSON *g = cJSON_GetArrayItem(managers, k);
        assert_string_equal(cJSON_GetObjectItem(g, "key")->valuestring, kvc_manager_key(mgr, k));
        assert_int_equal((int64_t)cJSON_GetObjectItem(g, "block_size")->valuedouble, kvc_manager_block_size(mgr, k));
        plan_pool[k] = cJSON_GetObjectItem(g, "pool_id")->valueint;
    }
    /* the same partition into pools: two keys share one in the engine iff their plan pool_id is equal and > 0 */
    for (int32_t i = 0; i < kvc_manager_n_keys(mgr); i++)
        for (int32_t j = 0; j < kvc_manager_n_keys(mgr); j++)
            if (i != j)
                assert_int_equal(kvc_manager_pool_key(mgr, i) == kvc_manager_pool_key(mgr, j),
                                 plan_pool[i] > 0 && plan_pool[i] == plan_pool[j]);
    cJSON_Delete(doc);
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
    kvc_model_destroy(m);
}

static void test_plan_agrees(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    o.block_size = 16;
    o.kv_dtype_set = true;
    o.kv_dtype = KVC_DTYPE_F32;
    o.max_model_len = 48;
    o.max_concurrency = 3;
    expect_plan_agrees(GPT_OSS_JSON, &o, false);
    o.block_size = 8;
    o.kv_dtype = KVC_DTYPE_I8; /* entries of unequal pages (caches and their scales) */
    expect_plan_agrees(GPT_OSS_JSON, &o, false);
}

/* An engine that fails after growing the block sizes (BUDGET too small for its caches) leaves the
 * description as it came: every entry keeps the adapter's block size. */
static void test_failed_create_restores_block_sizes(void **state) {
    (void)state;
    kvc_model *m = em_random_model(GPT_OSS_JSON, 99);
    kvc_engine_params p = em_params(48, 1, 64);
    p.shared_pools = true;
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = 64;
    const kvc_engine_adapter_params ap = {.cache = {.block_size = BS}};
    kvc_engine_adapter *a = NULL;
    if (kvc_engine_adapter_create(m, &ap, &p, &a) != KVC_OK) fail_msg("adapter: %s", kvc_last_error());
    kvc_engine_model em = *kvc_engine_adapter_model(a);
    turn_window_bf16(em.cache_info);
    kvc_engine *e = NULL;
    assert_int_not_equal(kvc_engine_create(&em, &p, &e), KVC_OK);
    assert_null(e);
    for (int32_t l = 0; l < em.cache_info->n_layer_infos; l++)
        for (int32_t c = 0; c < em.cache_info->layer_infos[l].n_caches; c++)
            if (em.cache_info->layer_infos[l].caches[c].needs_block)
                assert_int_equal(em.cache_info->layer_infos[l].caches[c].block_size, BS);
    kvc_engine_adapter_destroy(a);
    kvc_model_destroy(m);
}

int main(void) {
    omp_set_num_threads(1); /* a tiny model: the attention threads would only oversubscribe */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unequal_pages_one_pool),
        cmocka_unit_test(test_plan_agrees),
        cmocka_unit_test(test_failed_create_restores_block_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
