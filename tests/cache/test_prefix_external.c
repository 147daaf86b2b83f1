/* External computed tokens (issue 24; kvc_slot_request.num_external_computed_tokens):
 * a KV connector's tokens after the local hit, whose KV the caller writes
 * from outside, combine with the prompt, its hit and its salt in one
 * allocation; they are backed like computed tokens (a sliding key only
 * where its window reads) and, once reported computed, hashed and cached
 * under the request's salt like any computed block (docs/prefix-caching.md,
 * "External computed tokens"). */
#include "kvc_test_util.h"

#define CHECK(m) assert_int_equal(kvc_manager_check_invariants(m), KVC_OK)

enum { BS = 16, N = 128 };

/* A caching manager over entries[0..n), each key with `blocks` blocks. */
static kvc_manager *caching_manager(kvc_test_model *model, const kvc_cache_entry *entries, int32_t n,
                                    const char *const *keys, int64_t blocks) {
    kvc_test_model_init(model, entries, n);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 256;
    p.prefix_caching = true;
    p.state_snapshot_interval = 2 * BS;
    p.kv_event_capacity = 256;
    const int64_t counts[3] = {blocks, blocks, blocks};
    return kvc_test_manager_with(model, keys, counts, n, &p);
}

static kvc_manager *full_manager(kvc_test_model *model, int64_t blocks) {
    kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_FULL, BS, 0);
    return caching_manager(model, &e, 1, (const char *[]){"FullAttention"}, blocks);
}

static kvc_prompt salted(const int32_t *tokens, int64_t n, const char *salt) {
    return (kvc_prompt){.tokens = tokens,
                        .n_tokens = n,
                        .cache_salt = salt,
                        .cache_salt_len = salt != NULL ? (int64_t)strlen(salt) : 0};
}

static int64_t hit_of(kvc_manager *m, const kvc_prompt *prompt) {
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, prompt, &hit), KVC_OK);
    return hit.n_tokens;
}

/* Prefills the prompt with its hit in one call, caches it and frees it. */
static void prefill_and_free(kvc_manager *m, int64_t rid, const kvc_prompt *prompt) {
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, prompt, &hit), KVC_OK);
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid,
                                                          .computed_tokens = hit.n_tokens,
                                                          .num_new_tokens = prompt->n_tokens - hit.n_tokens,
                                                          .prompt = prompt,
                                                          .hit = &hit}),
        KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(m, rid, prompt->tokens, prompt->n_tokens), KVC_OK);
    assert_int_equal(kvc_manager_free(m, rid), KVC_OK);
    CHECK(m);
}

static void fill(int32_t *tokens, int64_t n, int32_t base) {
    for (int64_t i = 0; i < n; i++) tokens[i] = base + (int32_t)i;
}

/* The hit (32 tokens, salt "t1"), 64 external tokens after it and the rest
 * of the prompt in ONE allocation: the table backs all of them, the hit's
 * blocks are the cached ones, and once reported computed the external
 * blocks are cached under "t1" (found by a "t1" prompt, not by others). */
static void test_hit_external_and_salt_in_one_allocation(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 40);
    int32_t tokens[N];
    fill(tokens, N, 100);
    kvc_prompt first = salted(tokens, 2 * BS + 1, "t1");
    prefill_and_free(m, 1, &first);
    int32_t cached[2];
    int64_t n = 0;
    kvc_prompt prompt = salted(tokens, 112, "t1");
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 2 * BS);
    kvc_slot_request req = {.request_id = 2,
                            .computed_tokens = 2 * BS,
                            .num_external_computed_tokens = 4 * BS,
                            .num_new_tokens = 112 - 6 * BS,
                            .prompt = &prompt,
                            .hit = &hit};
    assert_int_equal(kvc_manager_allocate_slots(m, &req), KVC_OK);
    int32_t ids[8];
    assert_int_equal(kvc_manager_block_ids(m, 2, 0, ids, 8, &n), KVC_OK);
    assert_int_equal(n, 7); /* cdiv(112, 16): hit, external and new positions all backed */
    for (int64_t i = 0; i < n; i++) assert_int_not_equal(ids[i], KVC_NULL_BLOCK);
    memcpy(cached, ids, sizeof cached);
    for (int i = 0; i < 2; i++) {
        kvc_block_info info;
        assert_int_equal(kvc_manager_block_info(m, 0, cached[i], &info), KVC_OK);
        assert_true(info.cached && info.ref_count == 1); /* the hit's blocks, taken */
    }
    kvc_prefix_stats st;
    assert_int_equal(kvc_manager_prefix_stats(m, &st), KVC_OK);
    assert_int_equal(st.hit_tokens, 2 * BS); /* the local hit only */
    /* The connector wrote blocks 2 .. 5; the step computed the rest. */
    int64_t drained = 0, lost = 0;
    kvc_kv_event ev[64];
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 64, &drained, &lost), KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(m, 2, tokens, 112), KVC_OK);
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 64, &drained, &lost), KVC_OK);
    assert_int_equal(drained, 5); /* blocks 2 .. 6 stored */
    for (int64_t i = 0; i < drained; i++) {
        assert_int_equal(ev[i].type, KVC_KV_EVENT_STORED);
        assert_int_equal(ev[i].block_id, ids[2 + i]);
    }
    assert_int_equal(kvc_manager_free(m, 2), KVC_OK);
    CHECK(m);
    int32_t longer[N];
    memcpy(longer, tokens, sizeof longer);
    longer[N - 1] = 9;
    kvc_prompt same_salt = salted(longer, N, "t1"), other_salt = salted(longer, N, "t2"),
               none = salted(longer, N, NULL);
    assert_int_equal(hit_of(m, &same_salt), 112);
    assert_int_equal(hit_of(m, &other_salt), 0);
    assert_int_equal(hit_of(m, &none), 0);
    kvc_manager_destroy(m);
}

/* Without a hit: external tokens from position 0 (a P/D decode side). */
static void test_external_from_position_zero_is_cached(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 20);
    int32_t tokens[N];
    fill(tokens, N, 7);
    kvc_prompt prompt = salted(tokens, 65, NULL);
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1,
                                                                       .num_external_computed_tokens = 64,
                                                                       .num_new_tokens = 1,
                                                                       .prompt = &prompt}),
                     KVC_OK);
    assert_int_equal(kvc_manager_num_free(m, 0), 19 - 5);
    assert_int_equal(hit_of(m, &(kvc_prompt){.tokens = tokens, .n_tokens = N}), 0); /* not yet reported */
    assert_int_equal(kvc_manager_cache_computed(m, 1, tokens, 65), KVC_OK);
    assert_int_equal(hit_of(m, &(kvc_prompt){.tokens = tokens, .n_tokens = N}), 64);
    CHECK(m);
    kvc_manager_destroy(m);
}

/* Full + sliding (W 32): after a 32-token hit, 64 external tokens; the
 * sliding key backs only the blocks its window reads at 96 (entries 0 .. 3
 * null: nothing is transferred there) and asks the pool for no more than
 * that; once cached, a later prompt hits all 96 + 16 tokens in both keys. */
static void test_sliding_key_backs_only_the_window_at_the_external_end(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e[2] = {kvc_test_attention_entry("k_full", KVC_ATTN_FULL, BS, 0),
                            kvc_test_attention_entry("k_swa", KVC_ATTN_SLIDING_WINDOW, BS, 2 * BS)};
    kvc_manager *m = caching_manager(&model, e, 2, (const char *[]){"FullAttention", "SlidingWindow"}, 20);
    int32_t tokens[N];
    fill(tokens, N, 300);
    kvc_prompt first = salted(tokens, 2 * BS + 1, NULL);
    prefill_and_free(m, 1, &first);
    kvc_prompt prompt = salted(tokens, 112, NULL);
    assert_int_equal(hit_of(m, &prompt), 2 * BS);
    int64_t free_swa = kvc_manager_num_free(m, 1);
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 2,
                                                                       .computed_tokens = 2 * BS,
                                                                       .num_external_computed_tokens = 4 * BS,
                                                                       .num_new_tokens = 16,
                                                                       .prompt = &prompt}),
                     KVC_OK);
    int32_t ids[8];
    int64_t n = 0;
    assert_int_equal(kvc_manager_block_ids(m, 2, 1, ids, 8, &n), KVC_OK);
    assert_int_equal(n, 7);
    /* The window at 96 reads positions 65 ..: blocks 4 .. 6 are real. */
    for (int64_t i = 0; i < 4; i++) assert_int_equal(ids[i], KVC_NULL_BLOCK);
    for (int64_t i = 4; i < 7; i++) assert_int_not_equal(ids[i], KVC_NULL_BLOCK);
    assert_int_equal(kvc_manager_num_free(m, 1), free_swa - 3);
    assert_int_equal(kvc_manager_block_ids(m, 2, 0, ids, 8, &n), KVC_OK);
    for (int64_t i = 0; i < 7; i++) assert_int_not_equal(ids[i], KVC_NULL_BLOCK);
    CHECK(m);
    assert_int_equal(kvc_manager_cache_computed(m, 2, tokens, 112), KVC_OK);
    assert_int_equal(kvc_manager_free(m, 2), KVC_OK);
    CHECK(m);
    assert_int_equal(hit_of(m, &(kvc_prompt){.tokens = tokens, .n_tokens = N}), 112);
    kvc_manager_destroy(m);
}

/* A Mamba key takes no snapshot of the hit when external tokens follow it:
 * the state after them arrives with them (its copy source stays null). */
static void test_state_key_takes_no_snapshot_under_external_tokens(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e[2] = {kvc_test_attention_entry("k_full", KVC_ATTN_FULL, BS, 0), kvc_test_mamba_entry("ssm", 0)};
    kvc_manager *m = caching_manager(&model, e, 2, (const char *[]){"FullAttention", "Mamba"}, 20);
    int32_t tokens[N];
    fill(tokens, N, 40);
    kvc_prompt first = salted(tokens, 2 * BS, NULL);
    prefill_and_free(m, 1, &first);
    kvc_prompt prompt = salted(tokens, 100, NULL);
    assert_int_equal(hit_of(m, &prompt), 2 * BS);
    for (int external = 0; external <= 1; external++) {
        int64_t rid = 2 + external;
        assert_int_equal(
            kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid,
                                                              .computed_tokens = 2 * BS,
                                                              .num_external_computed_tokens = external * 32,
                                                              .num_new_tokens = external ? 32 : 4,
                                                              .prompt = &prompt}),
            KVC_OK);
        int32_t source = -1;
        assert_int_equal(kvc_manager_state_source(m, rid, 1, &source), KVC_OK);
        if (external)
            assert_int_equal(source, KVC_NULL_BLOCK);
        else
            assert_int_not_equal(source, KVC_NULL_BLOCK);
        CHECK(m);
    }
    /* The state block holds the state at 64 until the step computes on from
     * it in place: a report of 64 keeps no snapshot; the step's end does. */
    assert_int_equal(kvc_manager_cache_computed(m, 3, tokens, 64), KVC_OK);
    assert_int_equal(hit_of(m, &prompt), 2 * BS);
    assert_int_equal(kvc_manager_cache_computed(m, 3, tokens, 96), KVC_OK); /* a snapshot at 96 */
    assert_int_equal(kvc_manager_free(m, 3), KVC_OK);
    assert_int_equal(hit_of(m, &prompt), 96);
    kvc_manager_destroy(m);
}

static void expect_refused(kvc_manager *m, const kvc_slot_request *req, const char *needle) {
    int64_t free_before = kvc_manager_num_free(m, 0);
    assert_int_equal(kvc_manager_allocate_slots(m, req), KVC_EINVAL);
    if (strstr(kvc_last_error(), needle) == NULL) fail_msg("message \"%s\" lacks \"%s\"", kvc_last_error(), needle);
    assert_int_equal(kvc_manager_num_free(m, 0), free_before);
    assert_false(kvc_manager_has_request(m, req->request_id, 0));
}

/* Negative, past the prompt's last token, or without a prompt: refused,
 * naming what is wrong, nothing changed. */
static void test_bad_external_counts_are_refused(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 20);
    int32_t tokens[N];
    fill(tokens, N, 1);
    kvc_prompt prompt = salted(tokens, 40, NULL);
    expect_refused(m,
                   &(kvc_slot_request){
                       .request_id = 1, .num_external_computed_tokens = -1, .num_new_tokens = 1, .prompt = &prompt},
                   "external computed -1");
    expect_refused(m,
                   &(kvc_slot_request){
                       .request_id = 1, .num_external_computed_tokens = 40, .num_new_tokens = 1, .prompt = &prompt},
                   "go past the last of its 40-token prompt");
    expect_refused(m, &(kvc_slot_request){.request_id = 1, .num_external_computed_tokens = 8, .num_new_tokens = 1},
                   "need the prompt");
    expect_refused(m,
                   &(kvc_slot_request){.request_id = 1,
                                       .num_external_computed_tokens = INT64_MAX,
                                       .computed_tokens = 1,
                                       .num_new_tokens = 1,
                                       .prompt = &prompt},
                   "overflow");
    /* 39 is the most: the last token is computed here. */
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1,
                                                                       .num_external_computed_tokens = 39,
                                                                       .num_new_tokens = 1,
                                                                       .prompt = &prompt}),
                     KVC_OK);
    /* A later call has no prompt, so no external tokens. */
    expect_refused(m,
                   &(kvc_slot_request){
                       .request_id = 2, .computed_tokens = 40, .num_external_computed_tokens = 1, .num_new_tokens = 1},
                   "need the prompt");
    CHECK(m);
    kvc_manager_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_external_and_salt_in_one_allocation),
        cmocka_unit_test(test_external_from_position_zero_is_cached),
        cmocka_unit_test(test_sliding_key_backs_only_the_window_at_the_external_end),
        cmocka_unit_test(test_state_key_takes_no_snapshot_under_external_tokens),
        cmocka_unit_test(test_bad_external_counts_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
