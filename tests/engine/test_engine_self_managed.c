/* The self-managed path (RM 9): a model without cache info gets legacy
 * contiguous caches [max_num_seqs, max_model_len, *unit], a cache row per
 * running request from a free list (reused after finish), and writes at
 * legacy_index; its outputs equal the dense reference and the managed path. */
#include "engine_fixture.h"

static kvc_engine_params self_params(void) {
    kvc_engine_params p = fix_params(48, 3);
    p.max_requests = 8;
    return p;
}

static void test_legacy_tensors(void **state) {
    (void)state;
    toy_model m;
    toy_init_self_managed(&m, FIX_VOCAB);
    kvc_engine_model em = toy_engine_model(&m, true);
    kvc_engine_params p = self_params();
    kvc_engine *e = fix_engine(&em, &p);
    for (int kv = 0; kv < 2; kv++) {
        assert_non_null(m.legacy_data[kv]);
        assert_int_equal(m.legacy_shape[kv][0], 3);
        assert_int_equal(m.legacy_shape[kv][1], 48);
        assert_int_equal(m.legacy_shape[kv][2], TOY_D);
    }
    assert_null(kvc_engine_manager(e));
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.n_keys, 0);
    assert_int_equal(st.kv_bytes, 2 * 3 * 48 * TOY_D * 4);
    assert_int_equal(st.free_cache_rows, 3);
    kvc_engine_destroy(e);

    m.legacy[1].tensor_setter = NULL;
    e = NULL;
    assert_int_equal(kvc_engine_create(&em, &p, &e), KVC_EINVAL);
    assert_null(e);
    assert_non_null(strstr(kvc_last_error(), "v_cache"));
    m.legacy[1].tensor_setter = toy_legacy_setter;
    m.legacy[0].unit[0] = 0;
    assert_int_equal(kvc_engine_create(&em, &p, &e), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "unit[0]"));
    /* a name without its NUL (every refusal printed it, reading past the array): refused first */
    memset(m.legacy[0].name, 'k', sizeof m.legacy[0].name);
    assert_int_equal(kvc_engine_create(&em, &p, &e), KVC_EINVAL);
    assert_null(e);
    assert_non_null(strstr(kvc_last_error(), "legacy cache 0 (layer 0): name is not NUL-terminated within 64 bytes"));
}

/* Runs n random requests (n > max_num_seqs, so rows are reused) and checks them. */
static void run_workload(toy_model *m, bool self_managed, int64_t n, int32_t *outputs /* [n, 16] */) {
    kvc_engine_model em = toy_engine_model(m, self_managed);
    kvc_engine_params p = self_params();
    p.max_requests = n;
    kvc_engine *e = fix_engine(&em, &p);
    fix_run_random(e, m, n, 5, outputs);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    if (self_managed) assert_int_equal(st.free_cache_rows, 3);
    assert_int_equal(st.n_running, 0);
    assert_int_equal(st.finished_total, n);
    kvc_engine_destroy(e);
}

static void test_self_managed_equals_managed(void **state) {
    (void)state;
    enum { N = 20 };
    toy_model self, managed;
    toy_init_self_managed(&self, FIX_VOCAB);
    toy_init_managed(&managed, FIX_VOCAB, 1, 4, 0);
    int32_t a[N * 16], b[N * 16];
    run_workload(&self, true, N, a);
    run_workload(&managed, false, N, b);
    assert_memory_equal(a, b, sizeof a);
    assert_true(self.forward_calls > N / 3);
}

/* A row freed by a finished request is handed to the next admitted one;
 * its stale contents must not leak into the new request's output. */
static void test_rows_reused(void **state) {
    (void)state;
    toy_model m;
    toy_init_self_managed(&m, FIX_VOCAB);
    kvc_engine_model em = toy_engine_model(&m, true);
    kvc_engine_params p = self_params();
    p.max_num_seqs = 1;
    kvc_engine *e = fix_engine(&em, &p);
    int32_t prompt[20];
    for (int i = 0; i < 20; i++) prompt[i] = (3 * i + 1) % FIX_VOCAB;
    kvc_engine_request a = kvc_engine_request_default(), b;
    a.id = 1;
    a.prompt = prompt;
    a.n_prompt = 20;
    a.max_new_tokens = 10;
    b = a;
    b.id = 2;
    b.prompt = prompt + 10;
    b.n_prompt = 4; /* shorter: the row still holds A's later positions */
    fix_add(e, &a);
    fix_add(e, &b);
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    assert_int_equal(res.n_rows, 1); /* one row only: B waits for it */
    kvc_engine_request_info info;
    assert_int_equal(kvc_engine_request_get(e, 2, &info), KVC_OK);
    assert_int_equal(info.state, KVC_REQ_WAITING);
    fix_run(e, 100);
    fix_expect_reference(e, &m, &a);
    fix_expect_reference(e, &m, &b);
    kvc_engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legacy_tensors),
        cmocka_unit_test(test_self_managed_equals_managed),
        cmocka_unit_test(test_rows_reused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
