/* KV events (issue 24): the queue of block stored / removed / cleared
 * events a manager with kv_event_capacity records, drained in order; a full
 * queue loses later events and counts them; bad capacities are refused.
 * The random test (test_prefix_random.c) checks every event against its
 * shadow model. */
#include "kvc_test_util.h"

/* Full attention (bs 4) over 6 blocks, caching with `capacity` events. */
static kvc_status events_manager(kvc_test_model *model, bool caching, int64_t capacity, kvc_manager **out) {
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(model, &e, 1);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    p.prefix_caching = caching;
    p.kv_event_capacity = capacity;
    kvc_block_plan plan;
    assert_int_equal(
        kvc_block_plan_from_counts(&model->ci, (const char *[]){"FullAttention"}, (const int64_t[]){6}, 1, &plan),
        KVC_OK);
    return kvc_manager_create(&model->ci, &plan, &p, out);
}

static void test_stored_removed_cleared_in_order(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = NULL;
    assert_int_equal(events_manager(&model, true, 16, &m), KVC_OK);
    const int32_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[16] = {9, 9, 9, 9, 8, 8, 8, 8, 7, 7, 7, 7, 6, 6, 6, 6};
    kvc_test_compute_and_free(m, 1, a, 8); /* blocks 1, 2 stored */
    kvc_kv_event ev[16];
    int64_t n = 0, lost = -1;
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 16, &n, &lost), KVC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(lost, 0);
    assert_true(ev[0].type == KVC_KV_EVENT_STORED && ev[0].block_id == 1 && ev[0].key_index == 0);
    assert_true(ev[1].type == KVC_KV_EVENT_STORED && ev[1].block_id == 2 && ev[1].n_tokens == 4);
    assert_true(ev[1].parent_hi == ev[0].hash_hi && ev[1].parent_lo == ev[0].hash_lo); /* chained */
    kvc_block_info info;
    assert_int_equal(kvc_manager_block_info(m, 0, 2, &info), KVC_OK);
    assert_true(info.hash_hi == ev[1].hash_hi && info.hash_lo == ev[1].hash_lo);
    /* 16 new tokens take 3, 4, 5 and then evict 2 (freed tail first: queue 3, 4, 5, 2, 1) */
    kvc_test_compute_and_free(m, 2, b, 16);
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 16, &n, &lost), KVC_OK);
    assert_int_equal(n, 5);
    assert_true(ev[0].type == KVC_KV_EVENT_REMOVED && ev[0].block_id == 2 && ev[0].hash_lo == info.hash_lo);
    for (int i = 1; i < 5; i++) assert_int_equal(ev[i].type, KVC_KV_EVENT_STORED);
    assert_int_equal(kvc_manager_clear_prefix_cache(m), KVC_OK);
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 16, &n, &lost), KVC_OK);
    assert_true(n == 1 && ev[0].type == KVC_KV_EVENT_CLEARED && ev[0].key_index == -1);
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 16, &n, &lost), KVC_OK);
    assert_int_equal(n, 0);
    kvc_manager_destroy(m);
}

/* A full queue keeps its oldest events and counts the lost ones; a
 * partial drain leaves the rest queued. */
static void test_full_queue_counts_lost_events(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = NULL;
    assert_int_equal(events_manager(&model, true, 2, &m), KVC_OK);
    const int32_t a[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    kvc_test_compute_and_free(m, 1, a, 16); /* 4 stored, 2 of them lost */
    kvc_kv_event ev[4];
    int64_t n = 0, lost = 0;
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 1, &n, &lost), KVC_OK);
    assert_true(n == 1 && lost == 2 && ev[0].block_id == 1);
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 4, &n, &lost), KVC_OK);
    assert_true(n == 1 && lost == 0 && ev[0].block_id == 2);
    assert_int_equal(kvc_manager_drain_kv_events(m, NULL, 1, &n, &lost), KVC_EINVAL);
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 4, NULL, &lost), KVC_EINVAL);
    kvc_manager_destroy(m);
}

static void test_bad_capacities_refused(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = NULL;
    assert_int_equal(events_manager(&model, true, -1, &m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "kv_event_capacity -1"));
    assert_int_equal(events_manager(&model, true, (1 << 24) + 1, &m), KVC_EINVAL);
    assert_int_equal(events_manager(&model, false, 8, &m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "needs prefix_caching"));
    assert_null(m);
    /* off: nothing is recorded */
    assert_int_equal(events_manager(&model, true, 0, &m), KVC_OK);
    const int32_t a[4] = {1, 2, 3, 4};
    kvc_test_compute_and_free(m, 1, a, 4);
    kvc_kv_event ev[1];
    int64_t n = -1, lost = -1;
    assert_int_equal(kvc_manager_drain_kv_events(m, ev, 1, &n, &lost), KVC_OK);
    assert_true(n == 0 && lost == 0);
    kvc_manager_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stored_removed_cleared_in_order),
        cmocka_unit_test(test_full_queue_counts_lost_events),
        cmocka_unit_test(test_bad_capacities_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
