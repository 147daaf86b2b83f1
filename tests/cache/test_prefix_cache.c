/* Prefix caching through the request-level manager: hits per attention type,
 * the hybrid fixed point, salts, verified hits (a forced hash collision),
 * eviction order, statistics and clearing (docs/prefix-caching.md). */
#include "kvc_test_util.h"

#include "cache/prefix_index.h"

#define CHECK(m) assert_int_equal(kvc_manager_check_invariants(m), KVC_OK)

static kvc_manager *caching_manager(kvc_test_model *model, const kvc_cache_entry *entries, int32_t n,
                                    const char *const *keys, const int64_t *counts, int64_t interval) {
    kvc_test_model_init(model, entries, n);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    p.prefix_caching = true;
    p.prefix_salt = 99;
    p.state_snapshot_interval = interval;
    return kvc_test_manager_with(model, keys, counts, n, &p);
}

static kvc_manager *full_manager(kvc_test_model *model, int64_t blocks) {
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    return caching_manager(model, &e, 1, (const char *[]){"FullAttention"}, (const int64_t[]){blocks}, 0);
}

/* Admits a request for its prompt and salt (salt_len bytes) with whatever hit
 * the manager finds, then computes it whole; returns the hit length. */
static int64_t admit_salted(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n, const void *salt,
                            int64_t salt_len) {
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = n, .cache_salt = salt, .cache_salt_len = salt_len};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    kvc_status st = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid,
                                                                      .computed_tokens = hit.n_tokens,
                                                                      .num_new_tokens = n - hit.n_tokens,
                                                                      .prompt = &prompt});
    if (st != KVC_OK) fail_msg("allocate %lld: %s %s", (long long)rid, kvc_status_str(st), kvc_last_error());
    assert_int_equal(kvc_manager_cache_computed(m, rid, tokens, n), KVC_OK);
    CHECK(m);
    return hit.n_tokens;
}

/* The same with a string salt (NULL: none). */
static int64_t admit(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n, const char *salt) {
    return admit_salted(m, rid, tokens, n, salt, salt != NULL ? (int64_t)strlen(salt) : 0);
}

/* The hit a prompt of n tokens finds under a salt of salt_len bytes. */
static int64_t hit_for(kvc_manager *m, const int32_t *tokens, int64_t n, const void *salt, int64_t salt_len) {
    kvc_prefix_hit hit;
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = n, .cache_salt = salt, .cache_salt_len = salt_len};
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    return hit.n_tokens;
}

static const int32_t prompt_a[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const int32_t prompt_b[] = {1, 2, 3, 4, 5, 6, 7, 8, 20, 21, 22, 23, 24};

static void test_full_hit_shares_blocks_and_counts_holders(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 16);
    assert_int_equal(admit(m, 1, prompt_a, 10, NULL), 0);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(1, 2, 3));
    /* B shares A's two full blocks; A's partial third block is not cached. */
    assert_int_equal(admit(m, 2, prompt_b, 13, NULL), 8);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(1, 2, 4, 5));
    assert_int_equal(kvc_manager_num_free(m, 0), 15 - 5);
    kvc_prefix_stats st;
    assert_int_equal(kvc_manager_prefix_stats(m, &st), KVC_OK);
    assert_int_equal(st.queries, 2);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.query_tokens, 23);
    assert_int_equal(st.hit_tokens, 8);
    assert_int_equal(st.cached_blocks, 3); /* 1, 2 (A) and 4 (B); the partial blocks 3 and 5 are not */
    /* Freeing A keeps the shared blocks held by B; only A's block 3 is free,
     * and as it is not cached it goes to the head (taken first). */
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    CHECK(m);
    kvc_test_assert_queue(m, 0, KVC_IDS(3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    /* Freeing B, tail first: its uncached partial block 5 to the head, its
     * cached blocks 4, 2, 1 to the tail. */
    assert_int_equal(kvc_manager_free(m, 2), KVC_OK);
    kvc_test_assert_queue(m, 0, KVC_IDS(5, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 4, 2, 1));
    CHECK(m);
    /* A again: the cached free blocks 1 and 2 leave the queue from its tail,
     * the new third block is the head, 5. */
    assert_int_equal(admit(m, 3, prompt_a, 10, NULL), 8);
    kvc_test_assert_table(m, 3, 0, KVC_IDS(1, 2, 5));
    kvc_test_assert_queue(m, 0, KVC_IDS(3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 4));
    kvc_manager_destroy(m);
}

/* The hit leaves at least one prompt token to compute; a one-token prompt
 * never hits. */
static void test_hit_leaves_last_token(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 16);
    assert_int_equal(admit(m, 1, prompt_a, 8, NULL), 0);
    assert_int_equal(admit(m, 2, prompt_a, 8, NULL), 4); /* 7 tokens at most: one block */
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &(kvc_prompt){.tokens = prompt_a, .n_tokens = 1}, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 0);
    kvc_manager_destroy(m);
}

static void test_salts_separate_tenants(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 32);
    assert_int_equal(admit(m, 1, prompt_a, 10, "tenant-a"), 0);
    assert_int_equal(admit(m, 2, prompt_a, 10, "tenant-b"), 0);
    assert_int_equal(admit(m, 3, prompt_a, 10, NULL), 0);
    assert_int_equal(admit(m, 4, prompt_a, 10, "tenant-a"), 8);
    assert_int_equal(admit(m, 5, prompt_a, 10, NULL), 8);
    kvc_manager_destroy(m);
    /* The engine salt and the request salt both change the seed of the chain. */
    kvc_hash128 a = kvci_prefix_seed(99, NULL, 0), b = kvci_prefix_seed(98, NULL, 0), c = kvci_prefix_seed(99, "", 0);
    assert_false(kvci_hash128_equal(a, b));
    assert_false(kvci_hash128_equal(a, kvci_prefix_seed(99, "x", 1)));
    assert_true(kvci_hash128_equal(a, c)); /* an empty salt is no salt */
    /* Salts are bytes: a NUL inside, or at the end, counts. */
    assert_false(kvci_hash128_equal(kvci_prefix_seed(99, "a\0x", 3), kvci_prefix_seed(99, "a\0y", 3)));
    assert_false(kvci_hash128_equal(kvci_prefix_seed(99, "a", 1), kvci_prefix_seed(99, "a\0", 2)));
}

/* Issue 23 #2: salts that differ only after a NUL byte are two tenants. */
static void test_salts_with_nul_bytes(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 32);
    assert_int_equal(admit_salted(m, 1, prompt_a, 10, "a\0x", 3), 0);
    assert_int_equal(admit_salted(m, 2, prompt_a, 10, "a\0y", 3), 0);
    assert_int_equal(admit_salted(m, 3, prompt_a, 10, "a", 1), 0);
    assert_int_equal(admit_salted(m, 4, prompt_a, 10, "a\0x", 3), 8);
    assert_int_equal(hit_for(m, prompt_a, 10, "a\0", 2), 0);
    kvc_manager_destroy(m);
}

/* Issue 23 #1: the salt is fixed by a request's first allocation, whatever
 * its computed tokens and with or without a prompt: blocks a salted request
 * computed beyond its hit are indexed under its salt. */
static void test_salt_fixed_at_first_allocation(void **state) {
    (void)state;
    kvc_test_model model;
    int32_t ids[13];
    for (int i = 0; i < 13; i++) ids[i] = i + 1;
    kvc_manager *m = full_manager(&model, 32);
    /* computed beyond the (empty) hit: no prompt, the salt on the request */
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1,
                                                                       .computed_tokens = 8,
                                                                       .num_new_tokens = 4,
                                                                       .cache_salt = "tenant-a",
                                                                       .cache_salt_len = 8}),
                     KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(m, 1, ids, 12), KVC_OK);
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    assert_int_equal(hit_for(m, ids, 13, NULL, 0), 0);
    assert_int_equal(hit_for(m, ids, 13, "tenant-b", 8), 0);
    assert_int_equal(hit_for(m, ids, 13, "tenant-a", 8), 12);
    /* opened before its tokens are known, computed chunk by chunk */
    int32_t other[9] = {40, 41, 42, 43, 44, 45, 46, 47, 48};
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 2, .cache_salt = "t\0b", .cache_salt_len = 3}),
        KVC_OK);
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 2, .num_new_tokens = 8, .cache_salt = "t\0b", .cache_salt_len = 3}),
        KVC_OK); /* restating the salt is allowed */
    assert_int_equal(kvc_manager_cache_computed(m, 2, other, 8), KVC_OK);
    assert_int_equal(hit_for(m, other, 9, NULL, 0), 0);
    assert_int_equal(hit_for(m, other, 9, "t", 1), 0);
    assert_int_equal(hit_for(m, other, 9, "t\0b", 3), 8);
    /* a later call with another salt, or none first and one later, is refused */
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 2,
                                                                       .computed_tokens = 8,
                                                                       .num_new_tokens = 1,
                                                                       .cache_salt = "t\0c",
                                                                       .cache_salt_len = 3}),
                     KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "not the salt its first allocation fixed"));
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 3, .num_new_tokens = 1}), KVC_OK);
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 3,
                                                                       .computed_tokens = 1,
                                                                       .num_new_tokens = 1,
                                                                       .cache_salt = "x",
                                                                       .cache_salt_len = 1}),
                     KVC_EINVAL);
    kvc_manager_destroy(m);
}

/* Salts without their length, or a request salt that is not its prompt's,
 * are refused before anything changes. */
static void test_bad_salts_refused(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 32);
    kvc_prefix_hit hit;
    const kvc_prompt bad_prompts[] = {
        {.tokens = prompt_a, .n_tokens = 10, .cache_salt = "x", .cache_salt_len = 0},
        {.tokens = prompt_a, .n_tokens = 10, .cache_salt = NULL, .cache_salt_len = 2},
        {.tokens = prompt_a, .n_tokens = 10, .cache_salt = "x", .cache_salt_len = -1},
    };
    for (size_t i = 0; i < sizeof bad_prompts / sizeof bad_prompts[0]; i++) {
        assert_int_equal(kvc_manager_find_prefix(m, &bad_prompts[i], &hit), KVC_EINVAL);
        assert_int_equal(kvc_manager_allocate_slots(
                             m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 10, .prompt = &bad_prompts[i]}),
                         KVC_EINVAL);
        assert_int_equal(
            kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1,
                                                              .num_new_tokens = 10,
                                                              .cache_salt = bad_prompts[i].cache_salt,
                                                              .cache_salt_len = bad_prompts[i].cache_salt_len}),
            KVC_EINVAL);
    }
    const kvc_prompt salted = {.tokens = prompt_a, .n_tokens = 10, .cache_salt = "a", .cache_salt_len = 1};
    const kvc_prompt unsalted = {.tokens = prompt_a, .n_tokens = 10};
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1,
                                                                       .num_new_tokens = 10,
                                                                       .prompt = &salted,
                                                                       .cache_salt = "b",
                                                                       .cache_salt_len = 1}),
                     KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "is not its prompt's salt"));
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1,
                                                                       .num_new_tokens = 10,
                                                                       .prompt = &unsalted,
                                                                       .cache_salt = "b",
                                                                       .cache_salt_len = 1}),
                     KVC_EINVAL);
    assert_false(kvc_manager_has_request(m, 1, 0));
    assert_int_equal(kvc_manager_num_free(m, 0), 31);
    /* the same bytes twice are one salt */
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1,
                                                                       .num_new_tokens = 10,
                                                                       .prompt = &salted,
                                                                       .cache_salt = "a",
                                                                       .cache_salt_len = 1}),
                     KVC_OK);
    kvc_manager_destroy(m);
}

static kvc_hash128 constant_hash(const void *bytes, size_t n) {
    (void)bytes;
    (void)n;
    return (kvc_hash128){.low64 = 7, .high64 = 7};
}

/* Every block hashes alike: a prompt with other tokens must still miss, and
 * the same prompt must still hit (the tokens are compared). */
static void test_forced_collision_misses(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 32);
    kvc_prefix_hash_override = constant_hash;
    static const int32_t other[] = {50, 51, 52, 53, 54, 55, 56, 57, 58};
    assert_int_equal(admit(m, 1, prompt_a, 10, NULL), 0);
    kvc_prefix_stats st;
    assert_int_equal(kvc_manager_prefix_stats(m, &st), KVC_OK);
    assert_int_equal(st.cached_blocks, 1); /* the second block's hash is taken by the first */
    assert_int_equal(admit(m, 2, other, 9, NULL), 0);
    assert_int_equal(admit(m, 3, prompt_a, 10, NULL), 4);
    kvc_prefix_hash_override = NULL;
    kvc_manager_destroy(m);
}

/* Pool pressure: fresh blocks come from the head of the queue, evicting the
 * cached blocks there (least recently freed first), and a prompt whose blocks
 * were evicted misses. */
static void test_eviction_order_and_counts(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 6);             /* 5 usable blocks */
    assert_int_equal(admit(m, 1, prompt_a, 10, NULL), 0); /* blocks 1 2 3 */
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);     /* uncached 3 to the head */
    kvc_test_assert_queue(m, 0, KVC_IDS(3, 4, 5, 2, 1));
    static const int32_t other[] = {40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52};
    assert_int_equal(admit(m, 2, other, 13, NULL), 0); /* takes 3 4 5 2: block 2 (cached) is evicted */
    kvc_test_assert_table(m, 2, 0, KVC_IDS(3, 4, 5, 2));
    kvc_prefix_stats st;
    assert_int_equal(kvc_manager_prefix_stats(m, &st), KVC_OK);
    assert_int_equal(st.evictions, 1);
    assert_int_equal(kvc_manager_num_cached_free(m, 0), 1); /* block 1 */
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &(kvc_prompt){.tokens = prompt_a, .n_tokens = 10}, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 4);
    assert_int_equal(hit.n_entries[0], 1);
    assert_int_equal(hit.n_cached[0], 1);
    /* No space for the rest while the hit's block is free: the hit block
     * itself is counted as taken. */
    kvc_prompt prompt = {.tokens = prompt_a, .n_tokens = 10};
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 3, .computed_tokens = 4, .num_new_tokens = 6, .prompt = &prompt}),
        KVC_NO_SPACE);
    CHECK(m);
    assert_int_equal(kvc_manager_free(m, 2), KVC_OK);
    assert_int_equal(admit(m, 3, prompt_a, 10, NULL), 4);
    kvc_manager_destroy(m);
}

/* Blocks no index holds go to the head when freed, in the order the pool is
 * given them (tail first), so they are taken before any cached block; with
 * caching off every freed block joins the tail. */
static void test_uncached_blocks_freed_to_head(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 8); /* 7 usable blocks of 4 tokens */
    kvc_prompt prompt = {.tokens = prompt_a, .n_tokens = 10};
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 10, .prompt = &prompt}),
        KVC_OK);                                                             /* blocks 1 2 3 */
    assert_int_equal(kvc_manager_cache_computed(m, 1, prompt_a, 4), KVC_OK); /* only block 1 indexed */
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    kvc_test_assert_queue(m, 0, KVC_IDS(3, 2, 4, 5, 6, 7, 1));
    CHECK(m);
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 2, .num_new_tokens = 8}), KVC_OK);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(3, 2)); /* block 1 stays cached */
    assert_int_equal(kvc_manager_num_cached_free(m, 0), 1);
    kvc_manager_destroy(m);
}

/* A hit whose block was evicted after the query is refused as stale, with
 * nothing changed. */
static void test_stale_hit_refused(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = full_manager(&model, 4);
    assert_int_equal(admit(m, 1, prompt_a, 10, NULL), 0);
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK); /* queue 3 2 1 */
    kvc_prompt prompt = {.tokens = prompt_a, .n_tokens = 10};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 8);
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 2, .num_new_tokens = 12}),
                     KVC_OK); /* takes 3 2 1: both cached blocks evicted */
    assert_int_equal(kvc_manager_free(m, 2), KVC_OK);
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 3, .computed_tokens = 8, .num_new_tokens = 2, .prompt = &prompt}),
        KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "stale"));
    assert_false(kvc_manager_has_request(m, 3, 0));
    CHECK(m);
    /* A prompt on a known request, and a hit covering the whole prompt, are refused. */
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 3, .num_new_tokens = 2}), KVC_OK);
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 3, .computed_tokens = 2, .num_new_tokens = 1, .prompt = &prompt}),
        KVC_EINVAL);
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 4, .computed_tokens = 10, .num_new_tokens = 1, .prompt = &prompt}),
        KVC_EINVAL);
    kvc_manager_destroy(m);
}

/* Sliding window W = 4, bs = 4: a hit of L needs the blocks from
 * (L - W + 1) / bs on; the skipped prefix becomes null entries. */
static void test_sliding_window_hit_uses_nulls(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_SLIDING_WINDOW, 4, 4);
    kvc_manager *m = caching_manager(&model, &e, 1, (const char *[]){"SlidingWindow"}, (const int64_t[]){32}, 0);
    static const int32_t p[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 30, 31, 32};
    /* Chunked prefill of 17 tokens: 8, then 9 (the window releases block 0). */
    kvc_prompt prompt = {.tokens = p, .n_tokens = 17};
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 8, .prompt = &prompt}),
        KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(m, 1, p, 8), KVC_OK);
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .computed_tokens = 8, .num_new_tokens = 9}),
        KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(m, 1, p, 17), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(0, 2, 3, 4, 5));
    CHECK(m);
    /* Same 17 tokens plus 3: L = 16 needs only block 3 (positions 12..15). */
    assert_int_equal(admit(m, 2, p, 20, NULL), 16);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(0, 0, 0, 4, 6));
    /* Block 0 of the first request was cached and released: a prompt of 5
     * tokens hits it although the request no longer holds it. */
    assert_int_equal(admit(m, 3, p, 5, NULL), 4);
    kvc_test_assert_table(m, 3, 0, KVC_IDS(1, 7));
    kvc_manager_destroy(m);
}

/* Hybrid full + Mamba (snapshots every 8 tokens): full attention proposes
 * 20, the state key lowers it to its snapshot at 16, and the request's first
 * step copies its state from that snapshot. */
static void test_hybrid_fixed_point_with_state_snapshots(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e[2] = {kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0), kvc_test_mamba_entry("ssm", 0)};
    kvc_manager *m =
        caching_manager(&model, e, 2, (const char *[]){"FullAttention", "Mamba"}, (const int64_t[]){32, 8}, 8);
    /* the interval as resolved: the state key's; 0 for the paged key; -1 for a bad index; 0 = the block size */
    assert_int_equal(kvc_manager_snapshot_interval(m, 1), 8);
    assert_int_equal(kvc_manager_snapshot_interval(m, 0), 0);
    assert_int_equal(kvc_manager_snapshot_interval(m, 2), -1);
    kvc_test_model model0;
    kvc_manager *m0 =
        caching_manager(&model0, e, 2, (const char *[]){"FullAttention", "Mamba"}, (const int64_t[]){32, 8}, 0);
    assert_int_equal(kvc_manager_snapshot_interval(m0, 1), 4);
    kvc_manager_destroy(m0);
    int32_t p[26];
    for (int i = 0; i < 26; i++) p[i] = 100 + i;
    kvc_prompt prompt = {.tokens = p, .n_tokens = 20};
    /* Chunks of 8, 8, 4: snapshots at 8 and 16, the state block moves off each. */
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 8, .prompt = &prompt}),
        KVC_OK);
    kvc_test_assert_table(m, 1, 1, KVC_IDS(1));
    assert_int_equal(kvc_manager_cache_computed(m, 1, p, 8), KVC_OK);
    for (int64_t done = 8; done < 20; done += 8) {
        int64_t n = done == 8 ? 8 : 4;
        assert_int_equal(kvc_manager_allocate_slots(
                             m, &(kvc_slot_request){.request_id = 1, .computed_tokens = done, .num_new_tokens = n}),
                         KVC_OK);
        int32_t source = -1;
        assert_int_equal(kvc_manager_state_source(m, 1, 1, &source), KVC_OK);
        assert_int_equal(source, done == 8 ? 1 : 2); /* the snapshot just kept */
        CHECK(m);
        assert_int_equal(kvc_manager_cache_computed(m, 1, p, done + n), KVC_OK);
        assert_int_equal(kvc_manager_state_source(m, 1, 1, &source), KVC_OK);
        assert_int_equal(source, KVC_NULL_BLOCK);
    }
    kvc_test_assert_table(m, 1, 1, KVC_IDS(3));
    CHECK(m);
    kvc_prompt longer = {.tokens = p, .n_tokens = 26};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &longer, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 16);
    assert_int_equal(hit.n_entries[0], 4);
    assert_int_equal(hit.n_entries[1], 1);
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 2, .computed_tokens = 16, .num_new_tokens = 10, .prompt = &longer}),
        KVC_OK);
    int32_t source = -1;
    assert_int_equal(kvc_manager_state_source(m, 2, 1, &source), KVC_OK);
    assert_int_equal(source, 2);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(1, 2, 3, 4, 6, 7, 8));
    CHECK(m);
    /* Releasing everything returns every block; clearing empties the index. */
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    assert_int_equal(kvc_manager_free(m, 2), KVC_OK);
    CHECK(m);
    assert_int_equal(kvc_manager_num_free(m, 0), 31);
    assert_int_equal(kvc_manager_num_free(m, 1), 7);
    assert_int_equal(kvc_manager_clear_prefix_cache(m), KVC_OK);
    kvc_prefix_stats st;
    assert_int_equal(kvc_manager_prefix_stats(m, &st), KVC_OK);
    assert_int_equal(st.cached_blocks, 0);
    assert_int_equal(kvc_manager_find_prefix(m, &longer, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 0);
    CHECK(m);
    kvc_manager_destroy(m);
}

static void test_bad_parameters(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e[2] = {kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0), kvc_test_mamba_entry("ssm", 0)};
    kvc_test_model_init(&model, e, 2);
    kvc_block_plan plan;
    assert_int_equal(kvc_block_plan_from_counts(&model.ci, (const char *[]){"FullAttention", "Mamba"},
                                                (const int64_t[]){8, 4}, 2, &plan),
                     KVC_OK);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    p.prefix_caching = true;
    p.state_snapshot_interval = 6;
    kvc_manager *m = NULL;
    assert_int_equal(kvc_manager_create(&model.ci, &plan, &p, &m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "not a multiple of the block size 4"));
    assert_null(m);
    p.state_snapshot_interval = -1;
    assert_int_equal(kvc_manager_create(&model.ci, &plan, &p, &m), KVC_EINVAL);
    p.state_snapshot_interval = 0; /* defaults to 4 */
    assert_int_equal(kvc_manager_create(&model.ci, &plan, &p, &m), KVC_OK);
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &(kvc_prompt){.tokens = NULL, .n_tokens = 3}, &hit), KVC_EINVAL);
    assert_int_equal(kvc_manager_cache_computed(m, 1, NULL, 3), KVC_EINVAL);
    assert_int_equal(kvc_manager_cache_computed(m, 1, prompt_a, 3), KVC_OK); /* unknown request: no-op */
    kvc_manager_destroy(m);
}

/* Caching off: a zero hit, a prompt accepted and ignored. */
static void test_caching_off_finds_nothing(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(&model, &e, 1);
    kvc_manager *m = kvc_test_manager(&model, (const char *[]){"FullAttention"}, (const int64_t[]){16}, 1, 64);
    assert_int_equal(admit(m, 1, prompt_a, 10, NULL), 0);
    assert_int_equal(admit(m, 2, prompt_a, 10, NULL), 0);
    kvc_prefix_stats st;
    assert_int_equal(kvc_manager_prefix_stats(m, &st), KVC_OK);
    assert_int_equal(st.queries + st.cached_blocks, 0);
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    kvc_test_assert_queue(m, 0, KVC_IDS(7, 8, 9, 10, 11, 12, 13, 14, 15, 1, 2, 3)); /* head first, as before */
    kvc_manager_destroy(m);
}

/* Pool reference counts: a block given back more often than it is held is a
 * double free and changes nothing. */
static void test_pool_reference_counts(void **state) {
    (void)state;
    kvc_block_pool *pool = NULL;
    assert_int_equal(kvc_block_pool_create(5, &pool), KVC_OK);
    int32_t got[2];
    assert_int_equal(kvc_block_pool_take(pool, 2, got), KVC_OK);
    assert_int_equal(kvc_block_pool_ref(pool, 1), KVC_OK);
    assert_int_equal(kvc_block_pool_ref_count(pool, 1), 2);
    assert_int_equal(kvc_block_pool_ref(pool, 0), KVC_ERANGE);
    assert_int_equal(kvc_block_pool_give(pool, (const int32_t[]){1, 1, 1}, 3), KVC_EDOUBLEFREE);
    assert_int_equal(kvc_block_pool_ref_count(pool, 1), 2);
    assert_int_equal(kvc_block_pool_give(pool, (const int32_t[]){1, 2}, 2), KVC_OK);
    assert_int_equal(kvc_block_pool_num_free(pool), 3); /* 3 4 2 */
    assert_false(kvc_block_pool_is_free(pool, 1));
    /* A hit on a free block in the middle of the queue takes it out in place. */
    assert_int_equal(kvc_block_pool_ref(pool, 4), KVC_OK);
    int32_t q[4];
    int64_t n = 0;
    assert_int_equal(kvc_block_pool_free_ids(pool, q, 4, &n), KVC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(q[0], 3);
    assert_int_equal(q[1], 2);
    assert_int_equal(kvc_block_pool_give(pool, (const int32_t[]){1, 4}, 2), KVC_OK);
    assert_int_equal(kvc_block_pool_free_ids(pool, q, 4, &n), KVC_OK);
    assert_memory_equal(q, ((const int32_t[]){3, 2, 1, 4}), sizeof q);
    kvc_block_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_hit_shares_blocks_and_counts_holders),
        cmocka_unit_test(test_hit_leaves_last_token),
        cmocka_unit_test(test_salts_separate_tenants),
        cmocka_unit_test(test_salts_with_nul_bytes),
        cmocka_unit_test(test_salt_fixed_at_first_allocation),
        cmocka_unit_test(test_bad_salts_refused),
        cmocka_unit_test(test_forced_collision_misses),
        cmocka_unit_test(test_eviction_order_and_counts),
        cmocka_unit_test(test_uncached_blocks_freed_to_head),
        cmocka_unit_test(test_stale_hit_refused),
        cmocka_unit_test(test_sliding_window_hit_uses_nulls),
        cmocka_unit_test(test_hybrid_fixed_point_with_state_snapshots),
        cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_caching_off_finds_nothing),
        cmocka_unit_test(test_pool_reference_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
