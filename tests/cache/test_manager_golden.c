/* Golden scenarios of KM 8 through the request-level manager
 * (VER 6 scenarios 1-7), with invariants after every call. */
#include "kvc_test_util.h"

#define ALLOC(m, rid, computed, new_tokens, reserved)                                                                  \
    kvc_manager_allocate_slots((m), &(kvc_slot_request){.request_id = (rid),                                           \
                                                        .computed_tokens = (computed),                                 \
                                                        .num_new_tokens = (new_tokens),                                \
                                                        .reserved_tokens = (reserved)})
#define CHECK(m) assert_int_equal(kvc_manager_check_invariants(m), KVC_OK)

static kvc_manager *sliding_manager(kvc_test_model *model) {
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_SLIDING_WINDOW, 4, 6);
    kvc_test_model_init(model, &e, 1);
    return kvc_test_manager(model, (const char *[]){"SlidingWindow"}, (const int64_t[]){8}, 1, 64);
}

/* KM 8.1: W = 6, bs = 4, 8 blocks, prefill 10 then 5 decodes, free. */
static void test_sliding_prefill_10(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = sliding_manager(&model);
    assert_int_equal(ALLOC(m, 7, 0, 10, 0), KVC_OK);
    kvc_test_assert_table(m, 7, 0, KVC_IDS(1, 2, 3));
    kvc_test_assert_queue(m, 0, KVC_IDS(4, 5, 6, 7));
    const struct {
        int64_t computed;
        int32_t table[4], n_table, queue[7], n_queue;
    } steps[] = {
        {10, {0, 2, 3}, 3, {4, 5, 6, 7, 1}, 5},    {11, {0, 2, 3}, 3, {4, 5, 6, 7, 1}, 5},
        {12, {0, 2, 3, 4}, 4, {5, 6, 7, 1}, 4},    {13, {0, 0, 3, 4}, 4, {5, 6, 7, 1, 2}, 5},
        {14, {0, 0, 3, 4}, 4, {5, 6, 7, 1, 2}, 5},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        assert_int_equal(ALLOC(m, 7, steps[i].computed, 1, 0), KVC_OK);
        kvc_test_assert_table(m, 7, 0, steps[i].table, steps[i].n_table);
        kvc_test_assert_queue(m, 0, steps[i].queue, steps[i].n_queue);
        CHECK(m);
    }
    assert_int_equal(kvc_manager_free(m, 7), KVC_OK);
    kvc_test_assert_queue(m, 0, KVC_IDS(5, 6, 7, 1, 2, 3, 4));
    kvc_test_assert_table(m, 7, 0, NULL, 0);
    CHECK(m);
    kvc_manager_destroy(m);
}

/* KM 8.2 (issue 24): a prefill of 20 backs all 5 blocks (a prefill computes
 * every block, so each can be cached); its first decode releases the 3 that
 * the window left, the highest logical index first; 4 decodes; free. */
static void test_sliding_prefill_then_release(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = sliding_manager(&model);
    assert_int_equal(ALLOC(m, 3, 0, 20, 0), KVC_OK);
    kvc_test_assert_table(m, 3, 0, KVC_IDS(1, 2, 3, 4, 5));
    kvc_test_assert_queue(m, 0, KVC_IDS(6, 7));
    assert_int_equal(ALLOC(m, 3, 20, 1, 0), KVC_OK);
    kvc_test_assert_table(m, 3, 0, KVC_IDS(0, 0, 0, 4, 5, 6));
    kvc_test_assert_queue(m, 0, KVC_IDS(7, 3, 2, 1));
    for (int64_t c = 21; c <= 23; c++) {
        assert_int_equal(ALLOC(m, 3, c, 1, 0), KVC_OK);
        kvc_test_assert_table(m, 3, 0, KVC_IDS(0, 0, 0, 0, 5, 6));
        kvc_test_assert_queue(m, 0, KVC_IDS(7, 3, 2, 1, 4));
        CHECK(m);
    }
    assert_int_equal(ALLOC(m, 3, 24, 1, 0), KVC_OK);
    kvc_test_assert_table(m, 3, 0, KVC_IDS(0, 0, 0, 0, 5, 6, 7));
    kvc_test_assert_queue(m, 0, KVC_IDS(3, 2, 1, 4));
    assert_int_equal(kvc_manager_free(m, 3), KVC_OK);
    kvc_test_assert_queue(m, 0, KVC_IDS(3, 2, 1, 4, 5, 6, 7));
    CHECK(m);
    kvc_manager_destroy(m);
}

/* KM 8.2 layout values of a first allocation: table length and null prefix.
 * Every position asked for is backed; only the blocks that the computed
 * tokens skip (positions before computed - W + 1) start as nulls. */
static void test_sliding_layouts(void **state) {
    (void)state;
    const struct {
        int64_t computed, tokens, total, n_null;
    } cases[] = {{0, 0, 0, 0}, {0, 1, 1, 0},  {0, 8, 2, 0},  {0, 20, 5, 0},
                 {6, 2, 2, 0}, {10, 1, 3, 1}, {20, 1, 6, 3}, {16, 0, 4, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvc_test_model model;
        kvc_manager *m = sliding_manager(&model);
        assert_int_equal(ALLOC(m, 1, cases[i].computed, cases[i].tokens, 0), KVC_OK);
        int32_t ids[16];
        int64_t n = -1;
        assert_int_equal(kvc_manager_block_ids(m, 1, 0, ids, 16, &n), KVC_OK);
        assert_int_equal(n, cases[i].total);
        for (int64_t b = 0; b < n; b++) assert_int_equal(ids[b] == 0, b < cases[i].n_null);
        assert_int_equal(kvc_manager_num_free(m, 0), 7 - (cases[i].total - cases[i].n_null));
        assert_true(kvc_manager_has_request(m, 1, 0)); /* even the empty table of 0 tokens is an entry */
        CHECK(m);
        kvc_manager_destroy(m);
    }
}

/* KM 8.3: admission with a reservation. */
static void test_full_reservation(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(&model, &e, 1);
    kvc_manager *m = kvc_test_manager(&model, (const char *[]){"FullAttention"}, (const int64_t[]){11}, 1, 64);
    char usage[64];
    assert_int_equal(kvc_manager_format_usage(m, usage, sizeof usage), KVC_OK);
    assert_string_equal(usage, "FullAttention:1/11");
    assert_int_equal(ALLOC(m, 100, 0, 9, 0), KVC_OK);
    kvc_test_assert_table(m, 100, 0, KVC_IDS(1, 2, 3));
    assert_int_equal(ALLOC(m, 101, 0, 5, 0), KVC_OK);
    kvc_test_assert_table(m, 101, 0, KVC_IDS(4, 5));
    assert_int_equal(kvc_manager_num_free(m, 0), 5);
    assert_int_equal(ALLOC(m, 102, 9, 1, 8), KVC_NO_SPACE);
    assert_false(kvc_manager_has_request(m, 102, 0));
    assert_int_equal(kvc_manager_num_free(m, 0), 5);
    assert_int_equal(ALLOC(m, 102, 4, 1, 4), KVC_OK);
    kvc_test_assert_table(m, 102, 0, KVC_IDS(6, 7));
    assert_int_equal(kvc_manager_num_free(m, 0), 3);
    assert_int_equal(kvc_manager_format_usage(m, usage, sizeof usage), KVC_OK);
    assert_string_equal(usage, "FullAttention:8/11");
    assert_int_equal(kvc_manager_table_width(m, 0, 64), 16);
    assert_int_equal(kvc_manager_block_size(m, 0), 4);
    /* A smaller demand later never shrinks the table. */
    assert_int_equal(ALLOC(m, 100, 0, 1, 0), KVC_OK);
    kvc_test_assert_table(m, 100, 0, KVC_IDS(1, 2, 3));
    CHECK(m);
    for (int64_t r = 100; r <= 102; r++) assert_int_equal(kvc_manager_free(m, r), KVC_OK);
    assert_int_equal(kvc_manager_format_usage(m, usage, sizeof usage), KVC_OK);
    assert_string_equal(usage, "FullAttention:1/11");
    assert_int_equal(kvc_manager_num_live_requests(m), 0);
    kvc_manager_destroy(m);
}

/* KM 8.4: Mamba, next_n = 1, 5 blocks. */
static void test_mamba(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e = kvc_test_mamba_entry("conv_state", 1);
    kvc_test_model_init(&model, &e, 1);
    kvc_manager *m = kvc_test_manager(&model, (const char *[]){"Mamba"}, (const int64_t[]){5}, 1, 64);
    assert_int_equal(ALLOC(m, 0, 0, 7, 0), KVC_OK);
    kvc_test_assert_table(m, 0, 0, KVC_IDS(1));
    assert_int_equal(ALLOC(m, 1, 0, 3, 0), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(2));
    kvc_test_assert_queue(m, 0, KVC_IDS(3, 4));
    assert_int_equal(ALLOC(m, 0, 7, 2, 0), KVC_OK);
    kvc_test_assert_table(m, 0, 0, KVC_IDS(1, 3));
    assert_int_equal(ALLOC(m, 1, 3, 2, 0), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(2, 4));
    assert_int_equal(ALLOC(m, 0, 8, 2, 0), KVC_OK);
    kvc_test_assert_table(m, 0, 0, KVC_IDS(1, 3));
    assert_int_equal(ALLOC(m, 2, 0, 3, 0), KVC_NO_SPACE);
    CHECK(m);
    assert_int_equal(kvc_manager_free(m, 0), KVC_OK);
    kvc_test_assert_queue(m, 0, KVC_IDS(1, 3));
    kvc_manager_destroy(m);
}

/* KM 8.5: a failed call keeps the sliding window's release, allocates nothing. */
static void test_two_phase_side_effect(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry entries[2] = {kvc_test_attention_entry("sw_k", KVC_ATTN_SLIDING_WINDOW, 4, 6),
                                  kvc_test_attention_entry("full_k", KVC_ATTN_FULL, 4, 0)};
    kvc_test_model_init(&model, entries, 2);
    kvc_manager *m =
        kvc_test_manager(&model, (const char *[]){"SlidingWindow", "FullAttention"}, (const int64_t[]){8, 5}, 2, 64);
    assert_string_equal(kvc_manager_key(m, 0), "SlidingWindow");
    assert_int_equal(ALLOC(m, 0, 0, 14, 0), KVC_OK);
    kvc_test_assert_table(m, 0, 0, KVC_IDS(1, 2, 3, 4));
    kvc_test_assert_table(m, 0, 1, KVC_IDS(1, 2, 3, 4));
    assert_int_equal(ALLOC(m, 0, 14, 3, 0), KVC_NO_SPACE);
    kvc_test_assert_table(m, 0, 0, KVC_IDS(0, 0, 3, 4));
    kvc_test_assert_queue(m, 0, KVC_IDS(5, 6, 7, 2, 1));
    kvc_test_assert_table(m, 0, 1, KVC_IDS(1, 2, 3, 4));
    assert_int_equal(kvc_manager_num_free(m, 1), 0);
    CHECK(m);
    /* A key mask that leaves the full manager out succeeds. */
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 0, .computed_tokens = 14, .num_new_tokens = 3, .skip_keys = ~1u}),
        KVC_OK);
    kvc_test_assert_table(m, 0, 0, KVC_IDS(0, 0, 3, 4, 5));
    kvc_test_assert_table(m, 0, 1, KVC_IDS(1, 2, 3, 4));
    CHECK(m);
    kvc_manager_destroy(m);
}

/* P-RUN-11: clamping to max_model_len is reported, the table stops at it. */
static void test_clamped(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(&model, &e, 1);
    kvc_manager *m = kvc_test_manager(&model, (const char *[]){"FullAttention"}, (const int64_t[]){20}, 1, 10);
    assert_int_equal(ALLOC(m, 1, 0, 10, 0), KVC_OK);
    assert_int_equal(ALLOC(m, 1, 10, 1, 0), KVC_CLAMPED);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(1, 2, 3));
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 2, .num_new_tokens = 8, .lookahead_tokens = 5}),
        KVC_CLAMPED);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(4, 5, 6));
    kvc_manager_destroy(m);
}

/* Bad arguments are refused by name and change nothing. */
static void test_refused_calls(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(&model, &e, 1);
    kvc_manager *m = kvc_test_manager(&model, (const char *[]){"FullAttention"}, (const int64_t[]){6}, 1, 64);
    assert_int_equal(ALLOC(m, 1, 0, -1, 0), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "new -1"));
    assert_int_equal(ALLOC(m, 1, -2, 1, 0), KVC_EINVAL);
    assert_int_equal(ALLOC(m, 1, 0, 1, -4), KVC_EINVAL);
    assert_int_equal(kvc_manager_allocate_slots(
                         m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 1, .lookahead_tokens = -1}),
                     KVC_EINVAL);
    assert_int_equal(ALLOC(m, -1, 0, 1, 0), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "request id -1"));
    assert_int_equal(ALLOC(m, 1, INT64_MAX, 1, 0), KVC_EINVAL);
    assert_int_equal(kvc_manager_allocate_slots(NULL, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 1}),
                     KVC_EINVAL);
    assert_int_equal(kvc_manager_num_live_requests(m), 0);
    assert_int_equal(kvc_manager_num_free(m, 0), 5);
    assert_int_equal(kvc_manager_free(m, 99), KVC_OK); /* unknown id: no-op (P-REL-2) */
    assert_int_equal(kvc_manager_free(m, -1), KVC_OK);
    int32_t ids[4];
    int64_t n = 0;
    assert_int_equal(kvc_manager_block_ids(m, 1, 3, ids, 4, &n), KVC_ERANGE);
    int32_t idx = -1;
    assert_int_equal(kvc_manager_key_index(m, "SlidingWindow", &idx), KVC_EINVAL);
    assert_int_equal(kvc_manager_key_index(m, "FullAttention", &idx), KVC_OK);
    assert_int_equal(idx, 0);
    char small[8];
    assert_int_equal(kvc_manager_format_usage(m, small, sizeof small), KVC_ERANGE);
    kvc_manager_destroy(m);
    kvc_manager_destroy(NULL);
}

/* Requests beyond max_requests are not admitted (and nothing is taken). */
static void test_request_capacity(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(&model, &e, 1);
    kvc_block_plan plan;
    assert_int_equal(
        kvc_block_plan_from_counts(&model.ci, (const char *[]){"FullAttention"}, (const int64_t[]){50}, 1, &plan),
        KVC_OK);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    p.max_requests = 3;
    kvc_manager *m = NULL;
    assert_int_equal(kvc_manager_create(&model.ci, &plan, &p, &m), KVC_OK);
    for (int64_t r = 0; r < 3; r++) assert_int_equal(ALLOC(m, r, 0, 4, 0), KVC_OK);
    assert_int_equal(ALLOC(m, 3, 0, 4, 0), KVC_NO_SPACE);
    assert_int_equal(kvc_manager_num_free(m, 0), 46);
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    assert_int_equal(ALLOC(m, 3, 0, 4, 0), KVC_OK);
    CHECK(m);
    kvc_manager_destroy(m);
    p.max_model_len = 0;
    assert_int_equal(kvc_manager_create(&model.ci, &plan, &p, &m), KVC_EINVAL);
    assert_null(m);
    assert_non_null(strstr(kvc_last_error(), "max_model_len 0"));
}

/* A FullAttention manager (block size 4, 11 blocks) whose request 7 holds 3 blocks. */
static kvc_manager *request_of_three_blocks(kvc_test_model *model, kvc_cache_entry *e) {
    *e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(model, e, 1);
    kvc_manager *m = kvc_test_manager(model, (const char *[]){"FullAttention"}, (const int64_t[]){11}, 1, 64);
    assert_int_equal(ALLOC(m, 7, 0, 9, 0), KVC_OK);
    return m;
}

/* A row too narrow for the table is KVC_ERANGE and leaves row and state as
 * they were, including the state's slot hint (it used to be overwritten). */
static void test_table_sync_erange_unchanged(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e;
    kvc_manager *m = request_of_three_blocks(&model, &e);
    int32_t row[2] = {-5, -6};
    kvc_table_state st = {.generation = 0, .n_null = 0, .len = 0, .width = 2, .slot = 12345};
    assert_int_equal(kvc_manager_table_sync(m, 7, 0, row, 2, &st), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "exceeds the row width 2"));
    assert_int_equal(st.slot, 12345);
    assert_int_equal(st.generation, 0);
    assert_int_equal(st.len, 0);
    assert_int_equal(row[0], -5);
    assert_int_equal(row[1], -6);
    int32_t wide[4];
    kvc_table_state fresh = {0};
    assert_int_equal(kvc_manager_table_sync(m, 7, 0, wide, 4, &fresh), KVC_OK);
    assert_int_equal(fresh.len, 3);
    assert_int_equal(wide[3], 0);
    kvc_manager_destroy(m);
}

/* A state is the caller's to keep: one whose generation is current but whose counts no sync wrote
 * (negative, n_null past len) is taken as unknown and the row rewritten, never indexed by them (a
 * negative len or n_null wrote before the row). */
static void test_table_sync_forged_state(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e;
    kvc_manager *m = request_of_three_blocks(&model, &e);
    int32_t want[6], buf[2 + 6 + 2];
    int32_t *row = buf + 2; /* guards of 2 entries before and after the row */
    kvc_table_state st = {0};
    assert_int_equal(kvc_manager_table_sync(m, 7, 0, want, 6, &st), KVC_OK);
    const kvc_table_state good = st;
    const kvc_table_state forged[] = {
        {.generation = good.generation, .n_null = 0, .len = -2, .width = 6, .slot = good.slot},
        {.generation = good.generation, .n_null = -2, .len = 3, .width = 6, .slot = good.slot},
        {.generation = good.generation, .n_null = 4, .len = 3, .width = 6, .slot = good.slot},
    };
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        for (int j = 0; j < 10; j++) buf[j] = -9;
        st = forged[i];
        assert_int_equal(kvc_manager_table_sync(m, 7, 0, row, 6, &st), KVC_OK);
        assert_memory_equal(row, want, sizeof want);
        assert_true(buf[0] == -9 && buf[1] == -9 && buf[8] == -9 && buf[9] == -9);
        assert_true(st.generation == good.generation && st.n_null == good.n_null && st.len == good.len &&
                    st.width == good.width && st.slot == good.slot);
    }
    kvc_manager_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sliding_prefill_10),
        cmocka_unit_test(test_table_sync_forged_state),
        cmocka_unit_test(test_sliding_prefill_then_release),
        cmocka_unit_test(test_sliding_layouts),
        cmocka_unit_test(test_full_reservation),
        cmocka_unit_test(test_mamba),
        cmocka_unit_test(test_two_phase_side_effect),
        cmocka_unit_test(test_clamped),
        cmocka_unit_test(test_refused_calls),
        cmocka_unit_test(test_request_capacity),
        cmocka_unit_test(test_table_sync_erange_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
