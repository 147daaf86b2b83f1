/* Cache storage (KM 7, P-INIT-5) and the transfer export (KM 5.3.6). */
#include "kvc_test_util.h"

typedef struct setter_log {
    int calls;
    kvc_tensor last;
} setter_log;

static void record_tensor(void *user, const kvc_tensor *t) {
    setter_log *log = user;
    log->calls++;
    log->last = *t;
}

static void test_shapes_alignment_setters(void **state) {
    (void)state;
    kvc_cache_entry entries[4] = {
        kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0), kvc_test_attention_entry("v", KVC_ATTN_FULL, 16, 0),
        kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 32), kvc_test_mamba_entry("state", 0)};
    entries[1].layout = KVC_BLOCK_BNNBSD;
    entries[0].compress_ratio = 4;
    entries[1].compress_ratio = 4;
    setter_log logs[4] = {{0}};
    for (int i = 0; i < 4; i++) {
        entries[i].tensor_setter = record_tensor;
        entries[i].setter_user = &logs[i];
    }
    kvc_test_model m;
    kvc_test_model_init(&m, entries, 4);
    kvc_block_plan plan;
    assert_int_equal(kvc_block_plan_from_counts(&m.ci, (const char *[]){"FullAttention", "SlidingWindow", "Mamba"},
                                                (const int64_t[]){6, 5, 3}, 3, &plan),
                     KVC_OK);
    kvc_cache_storage *s = NULL;
    kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    sp.alignment = KVC_ALIGN_2MIB; /* every tensor here is below 2 MiB: the plain allocation aligns them */
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &sp, &s), KVC_OK);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(logs[i].calls, 1);
        assert_ptr_equal(logs[i].last.data, m.entries[i].tensor.data);
        assert_int_equal((uintptr_t)logs[i].last.data % KVC_ALIGN_2MIB, 0);
    }
    const int64_t expected[4][5] = {{6, 4, 2, 8, 0}, {6, 2, 4, 8, 0}, {5, 16, 2, 8, 0}, {3, 4, 8, 0, 0}};
    const int32_t ndim[4] = {4, 4, 4, 3};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(logs[i].last.ndim, ndim[i]);
        for (int d = 0; d < ndim[i]; d++) assert_int_equal(logs[i].last.shape[d], expected[i][d]);
    }
    /* block 0 zero-filled */
    assert_true(kvc_test_zero_bytes(m.entries[0].tensor.data, 4 * 2 * 8 * 2));
    assert_true(kvc_test_zero_bytes(m.entries[3].tensor.data, 4 * 8 * 4));
    assert_int_equal(kvc_cache_storage_bytes(s), 2 * 6 * 4 * 2 * 8 * 2 + 5 * 16 * 2 * 8 * 2 + 3 * 32 * 4);

    /* The transfer export refuses Mamba caches... */
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    kvc_manager *mgr = NULL;
    assert_int_equal(kvc_manager_create(&m.ci, &plan, &p, &mgr), KVC_OK);
    kvc_buffer_info infos[4];
    int64_t n = 0;
    assert_int_equal(kvc_manager_buffer_infos(mgr, infos, 4, &n), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "layer 3, cache state: Mamba"));
    kvc_manager_destroy(mgr);
    kvc_cache_storage_destroy(s);
}

/* ... and lists attention tensors by layer_idx, then entry order. */
static void test_buffer_infos_order(void **state) {
    (void)state;
    kvc_cache_entry l0[2] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0),
                             kvc_test_attention_entry("v", KVC_ATTN_FULL, 16, 0)};
    kvc_cache_entry l1[2] = {kvc_test_attention_entry("sw_k", KVC_ATTN_SLIDING_WINDOW, 16, 32),
                             kvc_test_attention_entry("unused", KVC_ATTN_FULL, 16, 0)};
    l1[1].needs_block = false;
    setter_log log = {0};
    for (int i = 0; i < 2; i++) {
        l0[i].tensor_setter = l1[i].tensor_setter = record_tensor;
        l0[i].setter_user = l1[i].setter_user = &log;
    }
    /* layer infos given out of order: export sorts by layer_idx */
    kvc_layer_cache_info layers[2] = {{.layer_idx = 1, .n_caches = 2, .caches = l1},
                                      {.layer_idx = 0, .n_caches = 2, .caches = l0}};
    kvc_model_cache_info ci = {.num_layers = 2, .n_layer_infos = 2, .layer_infos = layers};
    kvc_block_plan plan;
    assert_int_equal(kvc_block_plan_from_counts(&ci, (const char *[]){"SlidingWindow", "FullAttention"},
                                                (const int64_t[]){7, 9}, 2, &plan),
                     KVC_OK);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    kvc_manager *mgr = NULL;
    assert_int_equal(kvc_manager_create(&ci, &plan, &p, &mgr), KVC_OK);
    kvc_buffer_info infos[4];
    int64_t n = 0;
    assert_int_equal(kvc_manager_buffer_infos(mgr, infos, 4, &n), KVC_EINVAL); /* nothing allocated yet */
    assert_non_null(strstr(kvc_last_error(), "no tensor allocated"));
    kvc_cache_storage *s = NULL;
    const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    assert_int_equal(kvc_cache_storage_allocate(&ci, &plan, &sp, &s), KVC_OK);
    assert_int_equal(log.calls, 3);
    assert_true(l1[1].tensor.data == NULL);
    assert_int_equal(kvc_manager_buffer_infos(mgr, infos, 4, &n), KVC_OK);
    assert_int_equal(n, 3);
    assert_string_equal(infos[0].name, "k");
    assert_string_equal(infos[1].name, "v");
    assert_string_equal(infos[2].name, "sw_k");
    assert_string_equal(infos[2].key, "SlidingWindow");
    assert_int_equal(infos[0].bytes_per_block, 16 * 2 * 8 * 2);
    assert_int_equal(infos[0].total_bytes, 9 * 16 * 2 * 8 * 2);
    assert_int_equal(infos[2].total_bytes, 7 * 16 * 2 * 8 * 2);
    assert_int_equal(infos[0].block_size, 16);
    assert_ptr_equal(infos[1].data, l0[1].tensor.data);
    kvc_manager_destroy(mgr);
    kvc_cache_storage_destroy(s);
}

/* The layouts cache descriptions take (layout.h): keys in lanes (BNNDBS) is
 * stored [blocks, heads, dim, block_size]; NZ is for callers of the ops only. */
static void test_block_layouts_taken(void **state) {
    (void)state;
    kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0);
    e.layout = KVC_BLOCK_BNNDBS;
    kvc_test_model m;
    kvc_test_model_init(&m, &e, 1);
    assert_int_equal(kvc_validate_cache_info(&m.ci, -1), KVC_OK);
    kvc_block_plan plan;
    assert_int_equal(
        kvc_block_plan_from_counts(&m.ci, (const char *[]){"FullAttention"}, (const int64_t[]){3}, 1, &plan), KVC_OK);
    kvc_cache_storage *s = NULL;
    const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &sp, &s), KVC_OK);
    const kvc_tensor *t = &m.entries[0].tensor;
    assert_int_equal(t->ndim, 4);
    const int64_t shape[4] = {3, e.num_head, e.dim[0], 16};
    for (int d = 0; d < 4; d++) assert_int_equal(t->shape[d], shape[d]);
    kvc_cache_storage_destroy(s);
    m.entries[0].layout = KVC_BLOCK_NZ;
    assert_int_equal(kvc_validate_cache_info(&m.ci, -1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "cache_layout 2 is unknown"));
}

static void test_refusals(void **state) {
    (void)state;
    kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0);
    kvc_test_model m;
    kvc_test_model_init(&m, &e, 1);
    kvc_block_plan plan;
    assert_int_equal(
        kvc_block_plan_from_counts(&m.ci, (const char *[]){"FullAttention"}, (const int64_t[]){3}, 1, &plan), KVC_OK);
    kvc_cache_storage *s = NULL;
    const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    /* the setter is optional: without one the tensor is only recorded in the entry */
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &sp, &s), KVC_OK);
    assert_non_null(m.entries[0].tensor.data);
    assert_int_equal(m.entries[0].tensor.shape[0], 3);
    kvc_cache_storage_destroy(s);
    s = NULL;
    m.entries[0].tensor_setter = record_tensor;
    setter_log log = {0};
    m.entries[0].setter_user = &log;
    kvc_cache_storage_params bad = sp;
    bad.alignment = 48;
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &bad, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "alignment 48"));
    bad = sp;
    bad.pages = (kvc_storage_pages)7;
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, &bad, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "pages 7"));
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &plan, NULL, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "params must not be NULL"));
    assert_null(s);
    kvc_block_plan other;
    kvc_cache_entry sw = kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 8);
    kvc_test_model m2;
    kvc_test_model_init(&m2, &sw, 1);
    assert_int_equal(
        kvc_block_plan_from_counts(&m2.ci, (const char *[]){"SlidingWindow"}, (const int64_t[]){3}, 1, &other), KVC_OK);
    assert_int_equal(kvc_cache_storage_allocate(&m.ci, &other, &sp, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "FullAttention"));
    /* a caller's plan whose count is no pool's (0 divided by zero, -5 overflowed the bytes) */
    const int64_t counts[] = {0, -5, (int64_t)INT32_MAX + 1};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        kvc_block_plan forged = plan;
        forged.groups[0].block_num = counts[i];
        assert_int_equal(kvc_cache_storage_allocate(&m.ci, &forged, &sp, &s), KVC_EINVAL);
        assert_null(s);
        assert_non_null(strstr(kvc_last_error(), "key FullAttention plans"));
    }
    assert_int_equal(log.calls, 0);
    kvc_cache_storage_destroy(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes_alignment_setters),
        cmocka_unit_test(test_buffer_infos_order),
        cmocka_unit_test(test_block_layouts_taken),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
