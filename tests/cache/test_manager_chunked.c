/* ChunkedLocal (chunk C): hand-computed tables and free queues (blocks leave
 * exactly when the next query's chunk starts past them, also when C is not a
 * multiple of the block size: INV-CL-1, INV-CL-2), the planner's pool bound,
 * validation, and prefix hits whose null prefix never covers a block the
 * next query reads (INV-CL-3). */
#include "kvc_test_util.h"

#define ALLOC(m, rid, computed, n)                                                                                     \
    kvc_manager_allocate_slots(                                                                                        \
        (m), &(kvc_slot_request){.request_id = (rid), .computed_tokens = (computed), .num_new_tokens = (n)})
#define CHECK(m) assert_int_equal(kvc_manager_check_invariants(m), KVC_OK)

static kvc_manager *chunked_manager(kvc_test_model *model, int64_t bs, int64_t chunk, int64_t blocks, bool caching) {
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_CHUNKED_LOCAL, bs, chunk);
    kvc_test_model_init(model, &e, 1);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    p.prefix_caching = caching;
    return kvc_test_manager_with(model, (const char *[]){"ChunkedLocal"}, (const int64_t[]){blocks}, 1, &p);
}

/* C = 8, bs = 4, 8 blocks: prefill 10, then decodes. The query at 15 still
 * reads 8..15 (block 2 stays); the one at 16 starts chunk 16..23, so blocks
 * 2 and 3 go (highest logical index first) before block 4 is taken. */
static void test_chunk_multiple_of_block(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = chunked_manager(&model, 4, 8, 8, false);
    assert_int_equal(kvc_manager_key_type(m, 0), KVC_ATTN_CHUNKED_LOCAL);
    assert_string_equal(kvc_attn_type_name(KVC_ATTN_CHUNKED_LOCAL), "ChunkedLocal");
    assert_int_equal(kvc_manager_worst_blocks(m, 0, 64), 3); /* cdiv(8, 4) + 1 */
    assert_int_equal(kvc_manager_worst_blocks(m, 0, 5), 2);
    assert_int_equal(kvc_manager_skipped_tokens(m, 0, 15), 8);
    assert_int_equal(kvc_manager_skipped_tokens(m, 0, 16), 16);
    assert_int_equal(ALLOC(m, 1, 0, 10), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(1, 2, 3));
    kvc_test_assert_queue(m, 0, KVC_IDS(4, 5, 6, 7));
    const struct {
        int64_t computed;
        int32_t table[5], n_table, queue[7], n_queue;
    } steps[] = {
        {7, {1, 2, 3}, 3, {4, 5, 6, 7}, 4},              /* query 7 reads 0..7: nothing goes */
        {10, {0, 0, 3}, 3, {4, 5, 6, 7, 2, 1}, 6},       /* query 10 reads 8..10 */
        {11, {0, 0, 3}, 3, {4, 5, 6, 7, 2, 1}, 6},       /* 12 positions: 3 blocks */
        {12, {0, 0, 3, 4}, 4, {5, 6, 7, 2, 1}, 5},       /* position 12 takes block 4 */
        {15, {0, 0, 3, 4}, 4, {5, 6, 7, 2, 1}, 5},       /* query 15 reads 8..15 */
        {16, {0, 0, 0, 0, 5}, 5, {6, 7, 2, 1, 4, 3}, 6}, /* chunk 16..23 */
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        assert_int_equal(ALLOC(m, 1, steps[i].computed, 1), KVC_OK);
        kvc_test_assert_table(m, 1, 0, steps[i].table, steps[i].n_table);
        kvc_test_assert_queue(m, 0, steps[i].queue, steps[i].n_queue);
        CHECK(m);
    }
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    kvc_test_assert_queue(m, 0, KVC_IDS(6, 7, 2, 1, 4, 3, 5));
    CHECK(m);
    kvc_manager_destroy(m);
}

/* C = 6, bs = 4: chunk starts 6, 12, 18 fall inside blocks 1, 3, 4. A
 * block that holds the chunk start stays real (positions 6, 7 of block 1
 * are read by queries 6..11); only whole blocks before the start go. */
static void test_chunk_straddles_blocks(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = chunked_manager(&model, 4, 6, 8, false);
    assert_int_equal(kvc_manager_worst_blocks(m, 0, 64), 3); /* cdiv(6, 4) + 1 */
    assert_int_equal(ALLOC(m, 1, 0, 10), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(1, 2, 3));
    const struct {
        int64_t computed;
        int32_t table[5], n_table, queue[7], n_queue;
    } steps[] = {
        {10, {0, 2, 3}, 3, {4, 5, 6, 7, 1}, 5},          /* reads 6..10: entry 1 (4..7) stays */
        {11, {0, 2, 3}, 3, {4, 5, 6, 7, 1}, 5},          /* reads 6..11 */
        {12, {0, 0, 0, 4}, 4, {5, 6, 7, 1, 3, 2}, 6},    /* reads 12: entries 1, 2 go, entry 3 takes block 4 */
        {16, {0, 0, 0, 4, 5}, 5, {6, 7, 1, 3, 2}, 5},    /* reads 12..16: entry 3 (12..15) stays */
        {17, {0, 0, 0, 4, 5}, 5, {6, 7, 1, 3, 2}, 5},    /* reads 12..17 */
        {18, {0, 0, 0, 0, 5}, 5, {6, 7, 1, 3, 2, 4}, 6}, /* reads 18: entry 4 (16..19) holds it */
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        assert_int_equal(ALLOC(m, 1, steps[i].computed, 1), KVC_OK);
        kvc_test_assert_table(m, 1, 0, steps[i].table, steps[i].n_table);
        kvc_test_assert_queue(m, 0, steps[i].queue, steps[i].n_queue);
        CHECK(m);
    }
    kvc_manager_destroy(m);
}

/* The planner's fixed pool: cdiv(C + 2 next_n, bs) + 1 per request, +1 null. */
static void test_planned_pool(void **state) {
    (void)state;
    const struct {
        int64_t bs, chunk, next_n, blocks;
    } cases[] = {
        {4, 8, 0, 16 * (2 + 1) + 1}, /* 49 */
        {4, 6, 0, 16 * (2 + 1) + 1}, /* 49 */
        {4, 6, 2, 16 * (3 + 1) + 1}, /* cdiv(10, 4) = 3: 65 */
        {16, 8192, 1, 16 * (513 + 1) + 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_CHUNKED_LOCAL, cases[i].bs, cases[i].chunk);
        kvc_test_model model;
        kvc_test_model_init(&model, &e, 1);
        kvc_plan_params p = kvc_plan_default_params();
        p.max_concurrency = 16;
        p.max_len = 1 << 20;
        p.next_n = cases[i].next_n;
        kvc_block_plan plan;
        assert_int_equal(kvc_plan_blocks(&p, &model.ci, &plan), KVC_OK);
        assert_true(plan.groups[0].fixed);
        assert_int_equal(plan.groups[0].attn_type, KVC_ATTN_CHUNKED_LOCAL);
        assert_int_equal(plan.groups[0].block_num, cases[i].blocks);
    }
}

/* Named errors: the chunk unset or out of range, a chunk on another type,
 * two chunks in one group, and the type's name in both directions. */
static void test_validation(void **state) {
    (void)state;
    const struct {
        int32_t type;
        int64_t chunk;
        const char *message;
    } cases[] = {
        {KVC_ATTN_CHUNKED_LOCAL, 0, "attention_chunk_size 0 must be set"},
        {KVC_ATTN_CHUNKED_LOCAL, -3, "attention_chunk_size -3 must be set"},
        {KVC_ATTN_CHUNKED_LOCAL, (int64_t)1 << 31, "attention_chunk_size 2147483648 must be set"},
        {KVC_ATTN_FULL, 8, "attention_chunk_size 8 is set on a FullAttention cache"},
        {KVC_ATTN_SLIDING_WINDOW, 8, "attention_chunk_size 8 is set on a SlidingWindow cache"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvc_cache_entry e = kvc_test_attention_entry("k", (kvc_attn_type)cases[i].type, 4, 8);
        e.attention_chunk_size = cases[i].chunk;
        kvc_test_model model;
        kvc_test_model_init(&model, &e, 1);
        assert_int_equal(kvc_validate_cache_info(&model.ci, -1), KVC_EINVAL);
        if (strstr(kvc_last_error(), cases[i].message) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, kvc_last_error(), cases[i].message);
    }
    kvc_cache_entry two[2] = {kvc_test_attention_entry("k", KVC_ATTN_CHUNKED_LOCAL, 4, 8),
                              kvc_test_attention_entry("v", KVC_ATTN_CHUNKED_LOCAL, 4, 16)};
    kvc_test_model model;
    kvc_test_model_init(&model, two, 2);
    assert_int_equal(kvc_validate_cache_info(&model.ci, -1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "attention_chunk_size 16 differs from 8"));
    kvc_attn_type t = KVC_ATTN_FULL;
    assert_int_equal(kvc_attn_type_parse("ChunkedLocal", &t), KVC_OK);
    assert_int_equal(t, KVC_ATTN_CHUNKED_LOCAL);
    assert_int_equal(kvc_attn_type_parse("Chunked", &t), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "ChunkedLocal"));
}

/* C = 6, bs = 4: a 24-token prompt cached, then the same prompt: the hit is
 * 20 tokens (the last token is computed), its first 4 entries null and
 * entry 4 (16..19) the cached block, since the query at 20 reads 18..20. */
static void test_hit_keeps_the_straddling_block(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = chunked_manager(&model, 4, 6, 16, true);
    int32_t tokens[24];
    for (int i = 0; i < 24; i++) tokens[i] = 11 * i + 3;
    kvc_test_compute_and_free(m, 1, tokens, 24);
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = 24};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 20);
    assert_int_equal(hit.n_entries[0], 5);
    assert_int_equal(hit.n_cached[0], 1);
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 2,
                                                                       .computed_tokens = 20,
                                                                       .num_new_tokens = 4,
                                                                       .prompt = &prompt,
                                                                       .hit = &hit}),
                     KVC_OK);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(0, 0, 0, 0, 5, 7)); /* 7: the head of the free queue */
    CHECK(m);
    kvc_manager_destroy(m);
}

/* For every chunk 1..9 and block size 1..5: a 30-token prompt cached, then
 * every prefix of it admitted with the hit the manager finds. The hit is
 * the longest whole-block prefix below the prompt's end (every block is
 * cached), and after the admission every position the query at the hit's
 * end reads, [floor(L / C) * C, L), lies in a real block: the cached one
 * found for it. */
static void test_hits_leave_the_chunk_real(void **state) {
    (void)state;
    int32_t tokens[30];
    for (int i = 0; i < 30; i++) tokens[i] = 5 * i + 2;
    for (int64_t chunk = 1; chunk <= 9; chunk++) {
        for (int64_t bs = 1; bs <= 5; bs++) {
            kvc_test_model model;
            kvc_manager *m = chunked_manager(&model, bs, chunk, 64, true);
            kvc_test_compute_and_free(m, 0, tokens, 30);
            for (int64_t n = 1; n <= 30; n++) {
                kvc_prompt prompt = {.tokens = tokens, .n_tokens = n};
                kvc_prefix_hit hit;
                assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
                int64_t L = hit.n_tokens;
                if (L != (n - 1) / bs * bs)
                    fail_msg("C %lld bs %lld prompt %lld: hit %lld", (long long)chunk, (long long)bs, (long long)n,
                             (long long)L);
                assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = n,
                                                                                   .computed_tokens = L,
                                                                                   .num_new_tokens = n - L,
                                                                                   .prompt = &prompt,
                                                                                   .hit = &hit}),
                                 KVC_OK);
                int32_t ids[64];
                int64_t len = 0;
                assert_int_equal(kvc_manager_block_ids(m, n, 0, ids, 64, &len), KVC_OK);
                for (int64_t pos = L / chunk * chunk; pos < L; pos++)
                    if (ids[pos / bs] == KVC_NULL_BLOCK)
                        fail_msg("C %lld bs %lld hit %lld: position %lld (entry %lld) is null", (long long)chunk,
                                 (long long)bs, (long long)L, (long long)pos, (long long)(pos / bs));
                CHECK(m);
                assert_int_equal(kvc_manager_free(m, n), KVC_OK);
            }
            kvc_manager_destroy(m);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_multiple_of_block),
        cmocka_unit_test(test_chunk_straddles_blocks),
        cmocka_unit_test(test_planned_pool),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_hit_keeps_the_straddling_block),
        cmocka_unit_test(test_hits_leave_the_chunk_real),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
