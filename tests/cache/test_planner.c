/* Block planner: the golden numbers of KM 6.3 and every error path (P-INIT-3, P-INIT-4). */
#include "kvc_test_util.h"

static int64_t plan_one(kvc_cache_entry e, kvc_plan_params p) {
    kvc_test_model m;
    kvc_test_model_init(&m, &e, 1);
    kvc_block_plan plan;
    kvc_status st = kvc_plan_blocks(&p, &m.ci, &plan);
    if (st != KVC_OK) fail_msg("plan: %s", kvc_last_error());
    assert_int_equal(plan.n_groups, 1);
    return plan.groups[0].block_num;
}

static void test_fixed_types(void **state) {
    (void)state;
    kvc_plan_params p = kvc_plan_default_params();
    p.max_concurrency = 16;
    p.max_len = 4096;
    assert_int_equal(plan_one(kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 128, 128), p), 33);
    assert_int_equal(plan_one(kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 4, 6), p), 49);
    p.next_n = 1;
    assert_int_equal(plan_one(kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 128, 128), p), 49);
    assert_int_equal(plan_one(kvc_test_mamba_entry("state", 1), p), 33);
}

static void test_offline_full(void **state) {
    (void)state;
    kvc_plan_params p = kvc_plan_default_params();
    p.max_concurrency = 16;
    p.next_n = 1;
    p.max_len = 4096 + 2048 + 1; /* input 4096 + max_new 1024 * (next_n + 1) + next_n */
    kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_FULL, 128, 0);
    assert_int_equal(plan_one(e, p), 785);
    /* demand above the free memory names the shortfall */
    kvc_test_model m;
    kvc_test_model_init(&m, &e, 1);
    kvc_block_plan plan;
    p.free_bytes = 1000;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_ENOMEM);
    assert_non_null(strstr(kvc_last_error(), "only 1000 are free"));
    /* 785 blocks of 128 tokens x 2 heads x 8 dims x 2 bytes */
    p.free_bytes = 785 * 128 * 32;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.total_bytes, 785 * 128 * 32);
    assert_int_equal(plan.per_token_bytes, 32);
    p.max_len = 0;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_EINVAL);
}

/* MLA-style model: 61 layers of nope 512 + rope 64, bf16 (KM 6.3, online). */
static void test_device_mla(void **state) {
    (void)state;
    enum { LAYERS = 61 };
    kvc_cache_entry entries[LAYERS][2];
    kvc_layer_cache_info layers[LAYERS];
    for (int l = 0; l < LAYERS; l++) {
        for (int c = 0; c < 2; c++) {
            entries[l][c] = kvc_cache_entry_default();
            snprintf(entries[l][c].name, KVC_NAME_MAX, c == 0 ? "nope_cache" : "rope_cache");
            entries[l][c].num_head = 1;
            entries[l][c].n_dims = 1;
            entries[l][c].dim[0] = c == 0 ? 512 : 64;
            entries[l][c].block_size = 128;
        }
        layers[l] = (kvc_layer_cache_info){.layer_idx = l, .n_caches = 2, .caches = entries[l]};
    }
    kvc_model_cache_info ci = {
        .num_layers = LAYERS, .n_layer_infos = LAYERS, .layer_infos = layers, .is_mla_backend = true};
    const int64_t gib = (int64_t)1 << 30;
    int64_t free_bytes[2] = {40 * gib, 48 * gib};
    kvc_plan_params p = kvc_plan_default_params();
    p.mode = KVC_PLAN_DEVICE;
    p.max_concurrency = 16;
    p.total_bytes = 64 * gib;
    p.rank_free_bytes = free_bytes;
    p.n_ranks = 1;
    kvc_block_plan plan;
    assert_int_equal(kvc_plan_blocks(&p, &ci, &plan), KVC_OK);
    assert_int_equal(plan.per_token_bytes, 70272);
    assert_int_equal(plan.max_tokens, 464505);
    assert_int_equal(plan.groups[0].block_num, 3628);
    /* P-INIT-4: a rank with more free memory does not raise the count. */
    p.n_ranks = 2;
    assert_int_equal(kvc_plan_blocks(&p, &ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].block_num, 3628);
    free_bytes[0] = 48 * gib;
    free_bytes[1] = 40 * gib;
    assert_int_equal(kvc_plan_blocks(&p, &ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].block_num, 3628);
    /* the prefill check: 3627 usable blocks hold 464,256 tokens */
    p.max_prefill_tokens = 464255;
    assert_int_equal(kvc_plan_blocks(&p, &ci, &plan), KVC_OK);
    p.max_prefill_tokens = 464256;
    assert_int_equal(kvc_plan_blocks(&p, &ci, &plan), KVC_ENOMEM);
    assert_non_null(strstr(kvc_last_error(), "needs 1 more"));
    /* nothing left after the used memory */
    p.max_prefill_tokens = 0;
    free_bytes[1] = 8 * gib;
    assert_int_equal(kvc_plan_blocks(&p, &ci, &plan), KVC_ENOMEM);
    assert_non_null(strstr(kvc_last_error(), "rank 1"));
}

static void test_budget_fixed_first(void **state) {
    (void)state;
    kvc_cache_entry entries[3] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0),
                                  kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 32),
                                  kvc_test_mamba_entry("state", 0)};
    kvc_test_model m;
    kvc_test_model_init(&m, entries, 3);
    kvc_plan_params p = kvc_plan_default_params();
    p.mode = KVC_PLAN_BUDGET;
    p.max_concurrency = 4;
    p.kv_memory_bytes = 1 << 20;
    kvc_block_plan plan;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    /* sliding: 4 * (cdiv(32,16) + 1) + 1 = 13 blocks of 16*2*8*2 = 512 B; Mamba: 5 blocks of 128 B */
    assert_int_equal(plan.groups[1].block_num, 13);
    assert_int_equal(plan.groups[2].block_num, 5);
    assert_int_equal(plan.fixed_bytes, 13 * 512 + 5 * 128);
    int64_t tokens = ((1 << 20) - plan.fixed_bytes) / 32;
    assert_int_equal(plan.max_tokens, tokens);
    assert_int_equal(plan.groups[0].block_num, tokens / 16);
    /* a budget below the fixed caches */
    p.kv_memory_bytes = 1000;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_ENOMEM);
    /* a budget that holds no usable paged block */
    p.kv_memory_bytes = 13 * 512 + 5 * 128 + 32 * 20;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_ENOMEM);
    assert_non_null(strstr(kvc_last_error(), "not one usable block"));
    /* Mamba next_n must match the plan's */
    p.kv_memory_bytes = 1 << 20;
    p.next_n = 1;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_EINVAL);
}

/* needs_block = false entries and swapped paged entries do not count. */
static void test_unmanaged_and_swapped_entries(void **state) {
    (void)state;
    kvc_cache_entry entries[2] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0),
                                  kvc_test_attention_entry("extra", KVC_ATTN_FULL, 16, 0)};
    kvc_test_model m;
    kvc_plan_params p = kvc_plan_default_params();
    p.mode = KVC_PLAN_BUDGET;
    p.kv_memory_bytes = 64 * 1024;
    kvc_block_plan one, two;
    kvc_test_model_init(&m, entries, 1);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &one), KVC_OK);
    entries[1].needs_block = false;
    kvc_test_model_init(&m, entries, 2);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &two), KVC_OK);
    assert_int_equal(one.groups[0].block_num, two.groups[0].block_num);
    entries[0].allocator = KVC_ALLOC_SWAPPED;
    kvc_test_model_init(&m, entries, 1);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &two), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "no HBM-backed paged cache"));
}

static void test_counts_and_params(void **state) {
    (void)state;
    kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0);
    kvc_test_model m;
    kvc_test_model_init(&m, &e, 1);
    kvc_block_plan plan;
    assert_int_equal(kvc_block_plan_from_counts(&m.ci, (const char *[]){"Full"}, (const int64_t[]){4}, 1, &plan),
                     KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "\"Full\" matches no manager key"));
    assert_int_equal(kvc_block_plan_from_counts(&m.ci, NULL, NULL, 0, &plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "no block count given for manager key \"FullAttention\""));
    assert_int_equal(
        kvc_block_plan_from_counts(&m.ci, (const char *[]){"FullAttention"}, (const int64_t[]){0}, 1, &plan),
        KVC_EINVAL);
    int64_t n = 0;
    assert_int_equal(
        kvc_block_plan_from_counts(&m.ci, (const char *[]){"FullAttention"}, (const int64_t[]){9}, 1, &plan), KVC_OK);
    assert_int_equal(kvc_block_plan_block_num(&plan, "FullAttention", &n), KVC_OK);
    assert_int_equal(n, 9);
    assert_int_equal(kvc_block_plan_block_num(&plan, "Mamba", &n), KVC_EINVAL);
    kvc_plan_params p = kvc_plan_default_params();
    p.max_len = 100;
    p.max_concurrency = 0;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_EINVAL);
    p.max_concurrency = 1;
    p.mode = (kvc_plan_mode)9;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_EINVAL);
    p.mode = KVC_PLAN_DEVICE;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_EINVAL);
    p.mode = KVC_PLAN_OFFLINE;
    p.max_len = INT64_MAX;
    p.max_concurrency = INT32_MAX;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_EINVAL);
}

/* A caller's plan whose n_groups or keys lie outside its array (issue 23
 * #9: 1,000 groups read past groups[16], a SIGSEGV in Release) is refused by
 * every function that walks it, naming the count or the group. */
static void ignore_tensor(void *user, const kvc_tensor *t) {
    (void)user;
    (void)t;
}

static void test_plan_group_bounds(void **state) {
    (void)state;
    kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0);
    e.tensor_setter = ignore_tensor;
    kvc_test_model m;
    kvc_test_model_init(&m, &e, 1);
    kvc_block_plan plan;
    assert_int_equal(
        kvc_block_plan_from_counts(&m.ci, (const char *[]){"FullAttention"}, (const int64_t[]){9}, 1, &plan), KVC_OK);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    const int32_t bad_counts[] = {1000, KVC_MAX_MANAGERS + 1, -1, INT32_MIN};
    for (size_t i = 0; i < sizeof bad_counts / sizeof *bad_counts; i++) {
        kvc_block_plan bad = plan;
        bad.n_groups = bad_counts[i];
        char needle[64];
        snprintf(needle, sizeof needle, "n_groups %d must be in [0, %d]", bad_counts[i], KVC_MAX_MANAGERS);
        kvc_manager *mgr = (kvc_manager *)&plan; /* overwritten with NULL by the refusal */
        assert_int_equal(kvc_manager_create(&m.ci, &bad, &p, &mgr), KVC_EINVAL);
        assert_null(mgr);
        assert_non_null(strstr(kvc_last_error(), needle));
        int64_t n = -1;
        assert_int_equal(kvc_block_plan_block_num(&bad, "FullAttention", &n), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), needle));
        assert_int_equal(n, -1);
        kvc_cache_storage *storage = NULL;
        assert_int_equal(kvc_cache_storage_allocate(&m.ci, &bad, &sp, &storage), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), needle));
        assert_null(storage);
    }
    kvc_block_plan unterminated = plan;
    memset(unterminated.groups[0].key, 'x', sizeof unterminated.groups[0].key);
    kvc_manager *mgr = NULL;
    assert_int_equal(kvc_manager_create(&m.ci, &unterminated, &p, &mgr), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "the key of group 0 is not NUL-terminated"));
    assert_int_equal(kvc_manager_create(&m.ci, &plan, &p, &mgr), KVC_OK);
    kvc_manager_destroy(mgr);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_types),
        cmocka_unit_test(test_offline_full),
        cmocka_unit_test(test_device_mla),
        cmocka_unit_test(test_budget_fixed_first),
        cmocka_unit_test(test_unmanaged_and_swapped_entries),
        cmocka_unit_test(test_counts_and_params),
        cmocka_unit_test(test_plan_group_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
