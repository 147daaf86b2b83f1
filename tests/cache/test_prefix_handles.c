/* Hit handles (issue 24): find_prefix hands its hit out as a value that
 * allocate_slots takes without hashing the prompt again, checked still
 * cached; stale, taken, replaced, mismatched or misused hits are refused by
 * name and change nothing; kvc_manager_block_info reports each block's
 * holders, queue and index state (docs/prefix-caching.md, "Using it"). */
#include "kvc_test_util.h"

#include "cache/prefix_index.h"

#define CHECK(m) assert_int_equal(kvc_manager_check_invariants(m), KVC_OK)

static int64_t n_hashes; /* block hashes computed since the last reset */

static kvc_hash128 counting_hash(const void *bytes, size_t n) {
    n_hashes++;
    return XXH3_128bits(bytes, n);
}

/* Full attention (bs 4) with caching over a pool of `blocks` blocks. */
static kvc_manager *full_manager(kvc_test_model *model, int64_t blocks) {
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(model, &e, 1);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    p.prefix_caching = true;
    return kvc_test_manager_with(model, (const char *[]){"FullAttention"}, (const int64_t[]){blocks}, 1, &p);
}

static kvc_status allocate_hit(kvc_manager *m, int64_t rid, const kvc_prompt *prompt, const kvc_prefix_hit *hit) {
    return kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid,
                                                             .computed_tokens = hit->n_tokens,
                                                             .num_new_tokens = prompt->n_tokens - hit->n_tokens,
                                                             .prompt = prompt,
                                                             .hit = hit});
}

/* Admits rid cold for all of tokens[0..n) and reports them computed. */
static void prefill(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n) {
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = n};
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid, .num_new_tokens = n, .prompt = &prompt}),
        KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(m, rid, tokens, n), KVC_OK);
}

/* Prefills and caches tokens[0..n) for rid, then frees it. */
static void cache_prompt(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n) {
    prefill(m, rid, tokens, n);
    assert_int_equal(kvc_manager_free(m, rid), KVC_OK);
}

static int32_t shared[24];

static void fill_shared(void) {
    for (int i = 0; i < 24; i++) shared[i] = 500 + i;
}

/* The allocation takes the blocks the query found and hashes nothing; the
 * computed step hashes only the blocks after the hit. */
static void test_hit_taken_without_hashing_again(void **state) {
    (void)state;
    fill_shared();
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 16);
    cache_prompt(m, 1, shared, 16);
    kvc_prompt prompt = {.tokens = shared, .n_tokens = 24};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 16);
    assert_true(hit.handle != 0);
    kvc_prefix_hash_override = counting_hash;
    n_hashes = 0;
    assert_int_equal(allocate_hit(m, 2, &prompt, &hit), KVC_OK);
    assert_int_equal(n_hashes, 0);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(1, 2, 3, 4, 5, 6));
    assert_int_equal(kvc_manager_cache_computed(m, 2, shared, 24), KVC_OK);
    assert_int_equal(n_hashes, 2); /* blocks 4 and 5 */
    /* Without the hit the allocation looks it up again: the prompt's blocks are hashed. */
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    n_hashes = 0;
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 3, .computed_tokens = 20, .num_new_tokens = 4, .prompt = &prompt}),
        KVC_OK);
    assert_true(n_hashes >= 5);
    kvc_prefix_hash_override = NULL;
    CHECK(m);
    kvc_manager_destroy(m);
}

/* Each misuse is refused by name and changes nothing. */
static void test_bad_hits_refused(void **state) {
    (void)state;
    fill_shared();
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 16);
    cache_prompt(m, 1, shared, 16);
    kvc_prompt prompt = {.tokens = shared, .n_tokens = 24};
    kvc_prompt salted = {.tokens = shared, .n_tokens = 24, .cache_salt = "t", .cache_salt_len = 1};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    /* computed_tokens other than the hit's, or no prompt */
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 2,
                                                                       .computed_tokens = 12,
                                                                       .num_new_tokens = 4,
                                                                       .prompt = &prompt,
                                                                       .hit = &hit}),
                     KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "computed_tokens = its n_tokens"));
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 2, .computed_tokens = 16, .num_new_tokens = 4, .hit = &hit}),
        KVC_EINVAL);
    /* another salt than the prompt it was found for */
    assert_int_equal(allocate_hit(m, 2, &salted, &hit), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "another cache salt"));
    /* another prompt's hit (its first blocks hold other tokens, or the same
     * tokens after another one) would hand that prompt's KV to this one */
    int32_t other[24];
    memcpy(other, shared, sizeof other);
    other[5] = 7;
    kvc_prompt mixed = {.tokens = other, .n_tokens = 24};
    assert_int_equal(allocate_hit(m, 2, &mixed, &hit), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "another prompt"));
    assert_non_null(strstr(kvc_last_error(), "block 1"));
    /* a handle never handed out */
    kvc_prefix_hit forged = hit;
    forged.handle += 1000;
    assert_int_equal(allocate_hit(m, 2, &prompt, &forged), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "stale hit"));
    assert_false(kvc_manager_has_request(m, 2, 0));
    assert_int_equal(kvc_manager_num_free(m, 0), 15);
    CHECK(m);
    /* taken once: a second request cannot take it again */
    assert_int_equal(allocate_hit(m, 2, &prompt, &hit), KVC_OK);
    assert_int_equal(allocate_hit(m, 3, &prompt, &hit), KVC_EINVAL);
    assert_false(kvc_manager_has_request(m, 3, 0));
    /* replaced by 8 later queries */
    kvc_prefix_hit old;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &old), KVC_OK);
    for (int i = 0; i < 8; i++) assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    assert_int_equal(allocate_hit(m, 3, &prompt, &old), KVC_EINVAL);
    assert_int_equal(allocate_hit(m, 3, &prompt, &hit), KVC_OK);
    CHECK(m);
    kvc_manager_destroy(m);
}

/* A hit whose blocks were handed out for new data since the query is
 * stale; the query again finds what is left. */
static void test_evicted_hit_is_stale(void **state) {
    (void)state;
    fill_shared();
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 7);
    cache_prompt(m, 1, shared, 16); /* 4 cached free blocks, 2 never used */
    kvc_prompt prompt = {.tokens = shared, .n_tokens = 20};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 16);
    const int32_t other[12] = {0};
    prefill(m, 9, other, 12); /* takes the 2 unused blocks and the cached block 4 */
    assert_int_equal(allocate_hit(m, 2, &prompt, &hit), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "evicted"));
    assert_int_equal(kvc_manager_free(m, 9), KVC_OK);
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 12);
    assert_int_equal(allocate_hit(m, 2, &prompt, &hit), KVC_OK);
    CHECK(m);
    kvc_manager_destroy(m);
}

/* Holders, queue and index state of blocks, and their hashes. */
static void test_block_info(void **state) {
    (void)state;
    fill_shared();
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 16);
    prefill(m, 1, shared, 10);
    kvc_block_info info;
    assert_int_equal(kvc_manager_block_info(m, 0, 1, &info), KVC_OK);
    assert_int_equal(info.ref_count, 1);
    assert_false(info.free);
    assert_true(info.cached && (info.hash_hi | info.hash_lo) != 0);
    kvc_block_info second;
    assert_int_equal(kvc_manager_block_info(m, 0, 2, &second), KVC_OK);
    assert_true(second.cached && (second.hash_hi != info.hash_hi || second.hash_lo != info.hash_lo));
    assert_int_equal(kvc_manager_block_info(m, 0, 3, &info), KVC_OK); /* partial block: not cached */
    assert_true(info.ref_count == 1 && !info.cached && info.hash_hi == 0 && info.hash_lo == 0);
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    assert_int_equal(kvc_manager_block_info(m, 0, 2, &info), KVC_OK);
    assert_true(info.ref_count == 0 && info.free && info.cached);
    assert_true(info.hash_hi == second.hash_hi && info.hash_lo == second.hash_lo);
    assert_int_equal(kvc_manager_clear_prefix_cache(m), KVC_OK);
    assert_int_equal(kvc_manager_block_info(m, 0, 2, &info), KVC_OK);
    assert_true(info.free && !info.cached && info.hash_hi == 0);
    assert_int_equal(kvc_manager_block_info(m, 0, KVC_NULL_BLOCK, &info), KVC_OK);
    assert_true(info.ref_count == 0 && !info.free && !info.cached);
    assert_int_equal(kvc_manager_block_info(m, 0, 16, &info), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "block 16"));
    assert_int_equal(kvc_manager_block_info(m, 1, 1, &info), KVC_ERANGE);
    assert_int_equal(kvc_manager_block_info(m, 0, 1, NULL), KVC_EINVAL);
    kvc_manager_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_taken_without_hashing_again),
        cmocka_unit_test(test_bad_hits_refused),
        cmocka_unit_test(test_evicted_hit_is_stale),
        cmocka_unit_test(test_block_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
