/* Uniform page size (issue 24): kvc_cache_info_unify_pages gives keys whose
 * bytes per block differ block sizes with equal pages, so that one shared
 * pool serves them; where the sizes cannot be made equal, the fewest pools. */
#include "kvc_test_util.h"

/* An attention entry of `heads` x 8 f16 per token (32 bytes per head pair). */
static kvc_cache_entry attention(const char *name, kvc_attn_type type, int64_t heads, int64_t window) {
    kvc_cache_entry e = kvc_test_attention_entry(name, type, 16, window);
    e.num_head = heads;
    return e;
}

static kvc_plan_params shared_budget(int64_t bytes) {
    kvc_plan_params p = kvc_plan_default_params();
    p.mode = KVC_PLAN_BUDGET;
    p.max_concurrency = 4;
    p.kv_memory_bytes = bytes;
    p.shared_pools = true;
    return p;
}

/* Full (2 heads: 512-byte pages at 16 tokens) and a window key (two
 * entries) of half the bytes per token: the window key gets 32-token blocks, both 512-byte pages,
 * one pool; the plan, the storage and a manager serve them from it. */
static void test_half_the_bytes_twice_the_block(void **state) {
    (void)state;
    kvc_test_model m;
    kvc_cache_entry entries[3] = {attention("k", KVC_ATTN_FULL, 2, 0), attention("sw", KVC_ATTN_SLIDING_WINDOW, 1, 64),
                                  attention("sw2", KVC_ATTN_SLIDING_WINDOW, 1, 64)};
    kvc_test_model_init(&m, entries, 3);
    kvc_block_plan plan;
    kvc_plan_params p = shared_budget(64 << 10);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].pool_id, 0); /* 512 and 256 bytes: two pools before */
    int32_t n_pools = 0;
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 1024, &n_pools), KVC_OK);
    assert_int_equal(n_pools, 1);
    assert_int_equal(m.entries[0].block_size, 16);
    assert_int_equal(m.entries[1].block_size, 32);
    assert_int_equal(m.entries[2].block_size, 32);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].pool_id, 1);
    assert_int_equal(plan.groups[1].pool_id, 1);
    assert_int_equal(plan.groups[1].block_size, 32);
    assert_int_equal(plan.groups[0].page_bytes, plan.groups[1].page_bytes);
    kvc_cache_storage *s = NULL;
    kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &sp, &s), KVC_OK);
    assert_ptr_equal(m.entries[0].tensor.data, m.entries[1].tensor.data);
    assert_int_equal(m.entries[1].tensor.shape[1], 32); /* [n, bs, heads, dim] */
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = 1024;
    kvc_manager *mgr = NULL;
    assert_int_equal(kvc_manager_create(&m.ci, &plan, &mp, &mgr), KVC_OK);
    assert_int_equal(kvc_manager_pool_key(mgr, 1), 0);
    int64_t free0 = kvc_manager_num_free(mgr, 0);
    /* 64 tokens: 4 full blocks of 16 and 2 window blocks of 32 (its two entries' pages), from one queue */
    assert_int_equal(kvc_manager_allocate_slots(mgr, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 64}),
                     KVC_OK);
    assert_int_equal(kvc_manager_num_free(mgr, 1), free0 - 6);
    assert_int_equal(kvc_manager_check_invariants(mgr), KVC_OK);
    kvc_manager_destroy(mgr);
    /* prefix caching across the two block sizes: a cached 97-token prompt hits
     * 96 tokens (6 full blocks, 3 window blocks), taken by the next request */
    mp.prefix_caching = true;
    assert_int_equal(kvc_manager_create(&m.ci, &plan, &mp, &mgr), KVC_OK);
    int32_t tokens[97];
    for (int i = 0; i < 97; i++) tokens[i] = 1000 + i;
    const kvc_prompt prompt = {.tokens = tokens, .n_tokens = 97};
    assert_int_equal(
        kvc_manager_allocate_slots(mgr, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 97, .prompt = &prompt}),
        KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(mgr, 1, tokens, 97), KVC_OK);
    assert_int_equal(kvc_manager_free(mgr, 1), KVC_OK);
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(mgr, &prompt, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 96);
    assert_int_equal(hit.n_cached[0], 6);
    assert_int_equal(kvc_manager_allocate_slots(mgr, &(kvc_slot_request){.request_id = 2,
                                                                         .computed_tokens = 96,
                                                                         .num_new_tokens = 1,
                                                                         .prompt = &prompt,
                                                                         .hit = &hit}),
                     KVC_OK);
    assert_int_equal(kvc_manager_check_invariants(mgr), KVC_OK);
    kvc_manager_destroy(mgr);
    kvc_cache_storage_destroy(s);
    /* a second call changes nothing */
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 1024, &n_pools), KVC_OK);
    assert_int_equal(m.entries[1].block_size, 32);
    assert_int_equal(n_pools, 1);
}

/* Where no page is a multiple of the other (2 and 3 heads), or the grown
 * block would pass max_block_size, the keys keep their block sizes and their
 * pools; a state key's page is its state: attention grows to it, never it. */
static void test_impossible_cases_keep_their_pools(void **state) {
    (void)state;
    kvc_test_model m;
    kvc_cache_entry two_three[2] = {attention("k", KVC_ATTN_FULL, 2, 0),
                                    attention("sw", KVC_ATTN_SLIDING_WINDOW, 3, 64)};
    kvc_test_model_init(&m, two_three, 2);
    int32_t n_pools = 0;
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 1 << 20, &n_pools), KVC_OK);
    assert_int_equal(n_pools, 2);
    assert_int_equal(m.entries[0].block_size, 16);
    assert_int_equal(m.entries[1].block_size, 16);

    kvc_cache_entry bounded[2] = {attention("k", KVC_ATTN_FULL, 4, 0), attention("sw", KVC_ATTN_SLIDING_WINDOW, 1, 64)};
    kvc_test_model_init(&m, bounded, 2);
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 63, &n_pools), KVC_OK); /* 16 x 4 = 64 > 63 */
    assert_int_equal(n_pools, 2);
    assert_int_equal(m.entries[1].block_size, 16);
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 64, &n_pools), KVC_OK);
    assert_int_equal(n_pools, 1);
    assert_int_equal(m.entries[1].block_size, 64);

    /* a 128-byte state next to 512-byte attention pages: its own pool */
    kvc_cache_entry with_state[3] = {attention("k", KVC_ATTN_FULL, 2, 0),
                                     attention("sw", KVC_ATTN_SLIDING_WINDOW, 1, 64), kvc_test_mamba_entry("state", 0)};
    kvc_test_model_init(&m, with_state, 3);
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 1024, &n_pools), KVC_OK);
    assert_int_equal(n_pools, 2);
    assert_int_equal(m.entries[2].block_size, 1);
    /* 16-byte-per-token attention (4-token blocks: 64 bytes) grows to the state's 128 bytes */
    with_state[0] = kvc_test_attention_entry("k", KVC_ATTN_FULL, 4, 0);
    with_state[0].num_head = 1;
    kvc_test_model_init(&m, with_state, 3);
    m.entries[1].block_size = 4;
    m.entries[1].num_head = 1;
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 1024, &n_pools), KVC_OK);
    assert_int_equal(n_pools, 1);
    assert_int_equal(m.entries[0].block_size, 8);
    assert_int_equal(m.entries[1].block_size, 8);
    kvc_block_plan plan;
    kvc_plan_params p = kvc_plan_default_params();
    p.max_len = 64;
    p.shared_pools = true;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_true(plan.groups[0].pool_id > 0 && plan.groups[2].pool_id == plan.groups[0].pool_id);

    /* a key whose entries differ in page (4 and 2 heads) is left alone */
    kvc_cache_entry mixed[3] = {attention("k", KVC_ATTN_FULL, 4, 0), attention("v", KVC_ATTN_FULL, 2, 0),
                                attention("sw", KVC_ATTN_SLIDING_WINDOW, 1, 64)};
    kvc_test_model_init(&m, mixed, 3);
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 1024, &n_pools), KVC_OK);
    assert_int_equal(n_pools, 2);
    assert_int_equal(m.entries[0].block_size, 16);
    assert_int_equal(m.entries[2].block_size, 16);
}

/* Pages near the 2^40-byte bound of one block: the grown block size is exact
 * (no product can overflow: it is the largest page over the key's bytes per
 * token), and bad arguments are refused with nothing changed. */
static void test_bounds_and_refusals(void **state) {
    (void)state;
    kvc_test_model m;
    kvc_cache_entry big[2] = {attention("k", KVC_ATTN_FULL, 1 << 20, 0),
                              attention("sw", KVC_ATTN_SLIDING_WINDOW, 1 << 10, 64)};
    big[0].block_size = big[1].block_size = 1 << 11; /* 2^20 heads x 16 B x 2^11 = 2^35 bytes */
    kvc_test_model_init(&m, big, 2);
    int32_t n_pools = 0;
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, INT64_MAX, &n_pools), KVC_OK);
    assert_int_equal(n_pools, 1);
    assert_int_equal(m.entries[1].block_size, (int64_t)1 << 21);
    assert_int_equal(kvc_validate_cache_info(&m.ci, -1), KVC_OK);

    kvc_cache_entry two[2] = {attention("k", KVC_ATTN_FULL, 2, 0), attention("sw", KVC_ATTN_SLIDING_WINDOW, 1, 64)};
    kvc_test_model_init(&m, two, 2);
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 0, &n_pools), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "max_block_size 0"));
    m.entries[0].block_size = 0; /* an invalid description: refused, the other entry untouched */
    assert_int_equal(kvc_cache_info_unify_pages(&m.ci, 1024, NULL), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "block_size 0"));
    assert_int_equal(m.entries[1].block_size, 16);
    assert_int_equal(kvc_cache_info_unify_pages(NULL, 1024, NULL), KVC_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_the_bytes_twice_the_block),
        cmocka_unit_test(test_impossible_cases_keep_their_pools),
        cmocka_unit_test(test_bounds_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
