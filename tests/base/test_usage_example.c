/* The usage sketch at the top of kvcache.h, compiled and run so it cannot rot. */
#include "kvc_test_util.h"

static void test_header_example(void **state) {
    (void)state;
    kvc_cache_entry k = kvc_cache_entry_default();
    snprintf(k.name, sizeof k.name, "k_cache");
    k.num_head = 8;
    k.n_dims = 1;
    k.dim[0] = 128;
    k.block_size = 16;
    kvc_layer_cache_info layer = {.layer_idx = 0, .n_caches = 1, .caches = &k};
    kvc_model_cache_info ci = {.num_layers = 1, .n_layer_infos = 1, .layer_infos = &layer};

    kvc_plan_params pp = kvc_plan_default_params();
    pp.mode = KVC_PLAN_OFFLINE;
    pp.max_len = 4096;
    pp.max_concurrency = 16;
    kvc_block_plan plan;
    assert_int_equal(kvc_plan_blocks(&pp, &ci, &plan), KVC_OK);
    assert_int_equal(plan.groups[0].block_num, 256 * 16 + 1);

    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = 4096;
    kvc_manager *m = NULL;
    assert_int_equal(kvc_manager_create(&ci, &plan, &mp, &m), KVC_OK);
    kvc_status st = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 7, .num_new_tokens = 100});
    assert_int_equal(st, KVC_OK);
    assert_int_equal(kvc_manager_num_free(m, 0), 256 * 16 - 7);
    kvc_manager_free(m, 7);
    kvc_manager_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_header_example)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
