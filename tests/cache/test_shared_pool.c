/* Shared pools (issue 24): the planner puts the keys whose pages are equal in
 * bytes into one pool, sized from the memory budget as a whole; the storage
 * gives their entries views of the same page buffers; a plan naming pools
 * that cannot be shared is refused, saying why. */
#include "kvc_test_util.h"

/* Full (bs 16) and sliding-window (bs 16, W 32) entries of 512-byte pages,
 * and a Mamba state of 128 bytes: the first two can share a pool. */
static void hybrid_model(kvc_test_model *m) {
    kvc_cache_entry entries[3] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0),
                                  kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 32),
                                  kvc_test_mamba_entry("state", 0)};
    kvc_test_model_init(m, entries, 3);
}

static kvc_plan_params budget_params(int64_t concurrency, int64_t bytes, bool shared) {
    kvc_plan_params p = kvc_plan_default_params();
    p.mode = KVC_PLAN_BUDGET;
    p.max_concurrency = concurrency;
    p.kv_memory_bytes = bytes;
    p.shared_pools = shared;
    return p;
}

/* BUDGET: the whole budget left after the Mamba pool goes to the one pool of
 * the full and window keys; nothing is set aside per sequence for the window,
 * so a concurrency whose per-key window pools exceed the budget still plans. */
static void test_budget_one_pool(void **state) {
    (void)state;
    kvc_test_model m;
    hybrid_model(&m);
    kvc_block_plan plan;
    kvc_plan_params p = budget_params(4, 1 << 20, true);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].pool_id, 1);
    assert_int_equal(plan.groups[1].pool_id, 1);
    assert_int_equal(plan.groups[2].pool_id, 0); /* 128-byte pages: a pool of its own */
    assert_int_equal(plan.groups[0].page_bytes, 512);
    assert_int_equal(plan.groups[0].block_num, plan.groups[1].block_num);
    assert_int_equal(plan.fixed_bytes, 5 * 128);
    int64_t tokens = ((1 << 20) - 5 * 128) / 32;
    assert_int_equal(plan.groups[0].block_num, tokens / 16);
    assert_int_equal(plan.total_bytes, plan.groups[0].block_num * 512 + 5 * 128);
    /* 4096 sequences: per-key window pools need 4096 * 3 blocks of 512 B = 6 MiB > 1 MiB */
    p = budget_params(4096, 1 << 20, false);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_ENOMEM);
    p = budget_params(4096, 1 << 20, true);
    m.entries[2].needs_block = false; /* the Mamba pool alone would also grow with the sequences */
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.total_bytes, plan.groups[0].block_num * 512);
    assert_true(plan.total_bytes <= 1 << 20 && plan.total_bytes > (1 << 20) - 1024);
}

/* OFFLINE: the pool holds what the keys' pools held apart (same bytes). */
static void test_offline_pool_sums_the_keys(void **state) {
    (void)state;
    kvc_test_model m;
    hybrid_model(&m);
    kvc_plan_params p = kvc_plan_default_params();
    p.max_len = 100;
    p.max_concurrency = 3;
    kvc_block_plan apart, shared;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &apart), KVC_OK);
    p.shared_pools = true;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &shared), KVC_OK);
    assert_int_equal(apart.groups[0].pool_id, 0);
    assert_int_equal(shared.groups[0].block_num, apart.groups[0].block_num + apart.groups[1].block_num - 1);
    assert_int_equal(shared.total_bytes, apart.total_bytes - 512); /* one null block fewer */
}

/* The storage: the pool's keys view the same buffer, each with its shape;
 * a page written through one key's view reads through the other's. */
static void test_storage_views_share_pages(void **state) {
    (void)state;
    kvc_test_model m;
    hybrid_model(&m);
    m.entries[1].layout = KVC_BLOCK_BNNBSD; /* its own shape over the same bytes */
    kvc_block_plan plan;
    kvc_plan_params p = budget_params(4, 64 << 10, true);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    kvc_cache_storage *s = NULL;
    kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &sp, &s), KVC_OK);
    const kvc_tensor *full = &m.entries[0].tensor, *window = &m.entries[1].tensor;
    assert_ptr_equal(full->data, window->data);
    assert_int_equal(full->shape[1], 16);  /* [n, bs, heads, dim] */
    assert_int_equal(window->shape[1], 2); /* [n, heads, bs, dim] */
    assert_int_equal(kvc_tensor_numel(full), kvc_tensor_numel(window));
    assert_int_equal(kvc_cache_storage_bytes(s), plan.total_bytes);
    uint16_t *page = (uint16_t *)full->data + 3 * 256; /* block 3 of the full key */
    page[5] = 0x3c00;
    assert_int_equal(((const uint16_t *)window->data)[3 * 256 + 5], 0x3c00);
    kvc_cache_storage_destroy(s);
}

/* A caller's plan naming a pool of keys whose pages differ, or with unequal
 * counts, is refused by the storage and the manager, saying why. */
static void test_bad_pools_refused(void **state) {
    (void)state;
    kvc_test_model m;
    hybrid_model(&m);
    kvc_block_plan plan;
    assert_int_equal(kvc_block_plan_from_counts(&m.ci, (const char *[]){"FullAttention", "SlidingWindow", "Mamba"},
                                                (const int64_t[]){8, 8, 8}, 3, &plan),
                     KVC_OK);
    for (int g = 0; g < 3; g++) plan.groups[g].pool_id = 1;
    kvc_cache_storage *s = NULL;
    kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &sp, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "pages differ"));
    assert_null(s);
    plan.groups[2].pool_id = 0;
    plan.groups[1].block_num = 9;
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = 64;
    kvc_manager *mgr = NULL;
    assert_int_equal(kvc_manager_create(&m.ci, &plan, &mp, &mgr), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "share pool 1 but plan 8 and 9 blocks"));
    plan.groups[1].block_num = 8;
    plan.groups[1].pool_id = -2;
    assert_int_equal(kvc_block_plan_check_pools(&plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "pool_id -2"));
}

/* One manager over the shared pool: a window key's blocks come from the same
 * free queue as the full key's, so what one key frees the other can take. */
static void test_manager_keys_draw_from_one_queue(void **state) {
    (void)state;
    kvc_test_model m;
    hybrid_model(&m);
    m.entries[2].needs_block = false;
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = 256;
    kvc_manager *mgr = kvc_test_manager_shared(&m, (const char *[]){"FullAttention", "SlidingWindow"}, 9, 2, &mp);
    assert_int_equal(kvc_manager_pool_key(mgr, 1), 0);
    /* 64 tokens: 4 full blocks + 4 window blocks = the 8 usable blocks */
    assert_int_equal(kvc_manager_allocate_slots(mgr, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 64}),
                     KVC_OK);
    assert_int_equal(kvc_manager_num_free(mgr, 0), 0);
    assert_int_equal(kvc_manager_num_free(mgr, 1), 0);
    assert_int_equal(kvc_manager_allocate_slots(mgr, &(kvc_slot_request){.request_id = 2, .num_new_tokens = 1}),
                     KVC_NO_SPACE);
    /* the next step releases the 2 window blocks that left the window: they
     * give the full key its fifth block and the window key its next one */
    assert_int_equal(kvc_manager_allocate_slots(
                         mgr, &(kvc_slot_request){.request_id = 1, .computed_tokens = 64, .num_new_tokens = 1}),
                     KVC_OK);
    assert_int_equal(kvc_manager_num_free(mgr, 0), 0);
    assert_int_equal(kvc_manager_check_invariants(mgr), KVC_OK);
    assert_int_equal(kvc_manager_free(mgr, 1), KVC_OK);
    assert_int_equal(kvc_manager_num_free(mgr, 0), 8);
    kvc_manager_destroy(mgr);
}

/* Keys whose entries differ in page (int8 caches and their scales) share a
 * pool when their entry slots agree: each key's i-th entries equal in bytes.
 * A key whose slots disagree keeps its own; a caller's pool of such keys is
 * refused by the storage, naming the slot. */
static void test_keys_share_by_slots(void **state) {
    (void)state;
    kvc_cache_entry scale = kvc_test_attention_entry("k_scale", KVC_ATTN_FULL, 16, 0);
    scale.num_head = 1;
    scale.dim[0] = 1; /* 32-byte pages next to 512-byte ones */
    kvc_cache_entry sw_scale = scale;
    sw_scale.attn_type = KVC_ATTN_SLIDING_WINDOW;
    sw_scale.sliding_window = 32;
    kvc_cache_entry entries[4] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0), scale,
                                  kvc_test_attention_entry("k", KVC_ATTN_SLIDING_WINDOW, 16, 32), sw_scale};
    kvc_test_model m;
    kvc_test_model_init(&m, entries, 4);
    kvc_block_plan plan;
    kvc_plan_params p = budget_params(4, 64 << 10, true);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].page_bytes, 0); /* entries of two sizes */
    assert_int_equal(plan.groups[0].pool_id, 1);
    assert_int_equal(plan.groups[1].pool_id, 1);
    assert_int_equal(plan.total_bytes, plan.groups[0].block_num * (512 + 32));
    kvc_cache_storage *s = NULL;
    kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &sp, &s), KVC_OK);
    assert_ptr_equal(m.entries[0].tensor.data, m.entries[2].tensor.data); /* slot 0: the k caches */
    assert_ptr_equal(m.entries[1].tensor.data, m.entries[3].tensor.data); /* slot 1: the scales */
    assert_int_equal(kvc_cache_storage_bytes(s), plan.total_bytes);
    kvc_cache_storage_destroy(s);
    /* the window's scales of another size: its slots disagree, a pool of its own */
    m.entries[3].num_head = 2;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].pool_id, 0);
    assert_int_equal(plan.groups[1].pool_id, 0);
    plan.groups[1].block_num = plan.groups[0].block_num;
    plan.groups[0].pool_id = plan.groups[1].pool_id = 1;
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &sp, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "are not the 32-byte pages of slot 1 of pool 1"));
    assert_null(s);
}

/* Keys with unequal layer counts: a block id is a page in each of the pool's 3 slots whichever key holds it,
 * so the one-layer full key pays 3 pages per block: the offline pool is 1 + every key's real blocks, the
 * budget's cost per token the whole id's bytes (kvcache plan splits such keys into equal groups first). */
static void test_unequal_keys_pay_whole_ids(void **state) {
    (void)state;
    kvc_cache_entry entries[4] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0),
                                  kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 32),
                                  kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 32),
                                  kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 32)};
    kvc_test_model m;
    kvc_test_model_init(&m, entries, 4);
    kvc_plan_params p = kvc_plan_default_params();
    p.max_len = 100;
    p.max_concurrency = 3;
    p.shared_pools = true;
    kvc_block_plan plan;
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].pool_id, 1);
    assert_int_equal(plan.groups[1].pool_id, 1);
    /* full: 3 x cdiv(100, 16) = 21 blocks; window: 3 x (cdiv(32, 16) + 1) = 9; + the null block */
    assert_int_equal(plan.groups[0].block_num, 1 + 21 + 9);
    assert_int_equal(plan.total_bytes, (1 + 21 + 9) * 3 * 512);
    p = budget_params(3, 1 << 20, true);
    assert_int_equal(kvc_plan_blocks(&p, &m.ci, &plan), KVC_OK);
    assert_int_equal(plan.per_token_bytes, 3 * 512 / 16); /* not the key's own 512 / 16 */
    assert_int_equal(plan.groups[0].block_num, (1 << 20) / (3 * 512 / 16) / 16);
    assert_true(plan.total_bytes <= 1 << 20);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_one_pool),
        cmocka_unit_test(test_offline_pool_sums_the_keys),
        cmocka_unit_test(test_unequal_keys_pay_whole_ids),
        cmocka_unit_test(test_storage_views_share_pages),
        cmocka_unit_test(test_bad_pools_refused),
        cmocka_unit_test(test_manager_keys_draw_from_one_queue),
        cmocka_unit_test(test_keys_share_by_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
