/* Prefix caching of sliding-window keys (issue 24): a prefill computes every
 * block of its prompt into cache blocks, so the blocks that leave the window
 * stay cached (hittable until evicted), and a hit backs only what the
 * window still needs, so it never asks more of the pool than a cold prompt
 * of the same length (docs/prefix-caching.md, "The hit rule of each type"). */
#include "kvc_test_util.h"

#define CHECK(m) assert_int_equal(kvc_manager_check_invariants(m), KVC_OK)

/* A caching manager over entries[0..n) with the given pool per key. */
static kvc_manager *caching_manager(kvc_test_model *model, const kvc_cache_entry *entries, int32_t n,
                                    const char *const *keys, const int64_t *counts, int64_t max_model_len) {
    kvc_test_model_init(model, entries, n);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = max_model_len;
    p.prefix_caching = true;
    return kvc_test_manager_with(model, keys, counts, n, &p);
}

/* Admits tokens[0..n) with the hit the manager finds (KVC_NO_SPACE when the
 * pools refuse it); *hit_out = the hit. */
static kvc_status admit_found(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n, int64_t *hit_out) {
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = n};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    *hit_out = hit.n_tokens;
    return kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid,
                                                             .computed_tokens = hit.n_tokens,
                                                             .num_new_tokens = n - hit.n_tokens,
                                                             .prompt = &prompt});
}

/* Prefills tokens[0..n) in chunks of `chunk` tokens, each reported
 * computed, then frees the request. */
static void prefill_and_free(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n, int64_t chunk) {
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = n};
    for (int64_t done = 0; done < n; done += chunk) {
        int64_t step = done + chunk < n ? chunk : n - done;
        kvc_status st = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid,
                                                                          .computed_tokens = done,
                                                                          .num_new_tokens = step,
                                                                          .prompt = done == 0 ? &prompt : NULL});
        if (st != KVC_OK)
            fail_msg("prefill of %lld at %lld: %s %s", (long long)rid, (long long)done, kvc_status_str(st),
                     kvc_last_error());
        assert_int_equal(kvc_manager_cache_computed(m, rid, tokens, done + step), KVC_OK);
        CHECK(m);
    }
    assert_int_equal(kvc_manager_free(m, rid), KVC_OK);
    CHECK(m);
}

/* Full key + sliding key (W 128, block size 16, 200 blocks each): prompt A
 * = 512 shared tokens + 300 own, prefilled in one chunk, cached and freed;
 * prompt B = the same 512 + 300 others hits the 512 (as vLLM does): the
 * sliding key finds the blocks of the window before position 512, which A's
 * prefill computed and released to the cached-free queue. */
static void test_single_chunk_prefill_caches_blocks_behind_the_window(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e[2] = {kvc_test_attention_entry("k_full", KVC_ATTN_FULL, 16, 0),
                            kvc_test_attention_entry("k_swa", KVC_ATTN_SLIDING_WINDOW, 16, 128)};
    kvc_manager *m = caching_manager(&model, e, 2, (const char *[]){"FullAttention", "SlidingWindow"},
                                     (const int64_t[]){200, 200}, 1024);
    enum { SHARED = 512, OWN = 300 };
    int32_t a[SHARED + OWN], b[SHARED + OWN];
    for (int i = 0; i < SHARED + OWN; i++) {
        a[i] = i < SHARED ? 1000 + i : 5000 + i;
        b[i] = i < SHARED ? 1000 + i : 9000 + i;
    }
    prefill_and_free(m, 1, a, SHARED + OWN, SHARED + OWN);
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &(kvc_prompt){.tokens = b, .n_tokens = SHARED + OWN}, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, SHARED);
    assert_int_equal(hit.n_entries[1], SHARED / 16);
    /* The window at 512 reads positions 385 ..: blocks 24 .. 31 are cached, the earlier entries null. */
    assert_int_equal(hit.n_cached[1], SHARED / 16 - (SHARED - 128 + 1) / 16);
    int64_t found = 0;
    assert_int_equal(admit_found(m, 2, b, SHARED + OWN, &found), KVC_OK);
    assert_int_equal(found, SHARED);
    CHECK(m);
    kvc_manager_destroy(m);
}

/* One sliding key (W 8, block size 8) of `blocks` blocks, null included. */
static kvc_manager *sliding_manager(kvc_test_model *model, int64_t blocks) {
    kvc_cache_entry e = kvc_test_attention_entry("k_swa", KVC_ATTN_SLIDING_WINDOW, 8, 8);
    return caching_manager(model, &e, 1, (const char *[]){"SlidingWindow"}, (const int64_t[]){blocks}, 64);
}

/* Whether a 40-token prompt is admitted into a fresh pool of `blocks`
 * blocks, after a 9-token prompt sharing its first 8 tokens was prefilled
 * and freed when `warm` (the prompt then hits 8 tokens). */
static bool admitted_40(int64_t blocks, bool warm) {
    kvc_test_model model;
    kvc_manager *m = sliding_manager(&model, blocks);
    int32_t p[40];
    for (int i = 0; i < 40; i++) p[i] = i < 8 ? 1 + i : (warm ? 100 : 200) + i;
    if (warm) prefill_and_free(m, 1, p, 9, 1);
    int64_t hit = -1;
    kvc_status st = admit_found(m, 2, p, 40, &hit);
    assert_true(st == KVC_OK || st == KVC_NO_SPACE);
    assert_int_equal(hit, warm ? 8 : 0);
    CHECK(m);
    kvc_manager_destroy(m);
    return st == KVC_OK;
}

/* A hit of 8 tokens never turns an admissible 40-token prompt into a
 * refusal: for every pool size, the prompt with the hit is admitted
 * whenever a cold prompt of the same length is (the case: a pool
 * of 4 blocks admitted the cold prompt and refused the hit for ever). */
static void test_hit_admitted_whenever_cold_prompt_is(void **state) {
    (void)state;
    bool any = false;
    for (int64_t blocks = 3; blocks <= 12; blocks++) { /* 3: room for the 9-token prefill */
        bool cold = admitted_40(blocks, false), warm = admitted_40(blocks, true);
        if (cold && !warm)
            fail_msg("a pool of %lld blocks admits the cold prompt but refuses the hit", (long long)blocks);
        any |= cold;
    }
    assert_true(any);
}

/* A hit at L = 32 (W 8, block size 8) backs only the window: entries 0 .. 2
 * are null, block 3 is the cached one, and the prompt's last 8 tokens take
 * one fresh block, so it fits a pool where the cold prompt does not. */
static void test_hit_backs_only_the_window(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = sliding_manager(&model, 4);
    int32_t p[40];
    for (int i = 0; i < 40; i++) p[i] = i < 33 ? 1 + i : 300 + i;
    prefill_and_free(m, 1, p, 33, 8);
    int64_t hit = -1;
    assert_int_equal(admit_found(m, 2, p, 40, &hit), KVC_OK);
    assert_int_equal(hit, 32);
    int32_t ids[8];
    int64_t n = 0;
    assert_int_equal(kvc_manager_block_ids(m, 2, 0, ids, 8, &n), KVC_OK);
    assert_int_equal(n, 5);
    for (int64_t i = 0; i < 3; i++) assert_int_equal(ids[i], KVC_NULL_BLOCK);
    assert_int_not_equal(ids[3], KVC_NULL_BLOCK);
    assert_int_not_equal(ids[4], KVC_NULL_BLOCK);
    CHECK(m);
    kvc_manager_destroy(m);
    assert_false(admitted_40(4, false));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_chunk_prefill_caches_blocks_behind_the_window),
        cmocka_unit_test(test_hit_admitted_whenever_cold_prompt_is),
        cmocka_unit_test(test_hit_backs_only_the_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
