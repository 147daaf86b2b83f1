/* Self-managed legacy contiguous cache: flat indices (RM 9,
 * verification P-SELF-1, P-SELF-2, golden scenario 10). */
#include "batch_assert.h"

static void test_prefill_example(void **state) {
    (void)state;
    int64_t out[8];
    int64_t n = -1;
    assert_int_equal(kvc_legacy_index_prefill(2, I64S(3, 2), 2, 8, 4, out, 8, &n), KVC_OK);
    assert_int_equal(n, 5);
    expect_i64_array(out, I64S(16, 17, 18, 24, 25), 5, "kv_len");
}

/* Request b's indices stay inside cache row offset + b (P-SELF-1). */
static void test_prefill_rows_do_not_overlap(void **state) {
    (void)state;
    const int64_t lens[4] = {7, 1, 16, 9};
    const int64_t S = 16, offset = 3;
    int64_t out[33];
    int64_t n = 0;
    assert_int_equal(kvc_legacy_index_prefill(offset, lens, 4, S, 7, out, 33, &n), KVC_OK);
    assert_int_equal(n, 33);
    int64_t t = 0;
    for (int64_t b = 0; b < 4; b++) {
        for (int64_t p = 0; p < lens[b]; p++, t++) {
            assert_int_equal(out[t] / S, offset + b);
            assert_int_equal(out[t] % S, p);
        }
    }
}

/* Decode row r writes at kv_pos[r] of its own cache row (P-SELF-2). */
static void test_decode_index(void **state) {
    (void)state;
    int64_t out[3] = {-1, -1, -1};
    assert_int_equal(kvc_legacy_index_decode(I64S(2, 3, 0), I64S(3, 2, 7), 3, 8, 4, out), KVC_OK);
    expect_i64_array(out, I64S(19, 26, 7), 3, "decode index");
}

static void test_prefill_refusals(void **state) {
    (void)state;
    int64_t out[32];
    int64_t n = 0;
    expect_failure(kvc_legacy_index_prefill(3, I64S(3, 2), 2, 8, 4, out, 32, &n), KVC_ERANGE,
                   "request_offset 3 + 2 requests exceeds n_cache_rows 4");
    expect_failure(kvc_legacy_index_prefill(-1, I64S(3), 1, 8, 4, out, 32, &n), KVC_ERANGE, "request_offset -1");
    expect_failure(kvc_legacy_index_prefill(0, I64S(3, 9), 2, 8, 4, out, 32, &n), KVC_ERANGE, "seq_lens[1] = 9");
    expect_failure(kvc_legacy_index_prefill(0, I64S(0), 1, 8, 4, out, 32, &n), KVC_ERANGE, "seq_lens[0] = 0");
    expect_failure(kvc_legacy_index_prefill(2, I64S(3, 2), 2, 8, 4, out, 4, &n), KVC_ERANGE, "5 indices");
    expect_failure(kvc_legacy_index_prefill(2, I64S(3, 2), 2, 0, 4, out, 32, &n), KVC_EINVAL, "cache_seq_len 0");
    expect_failure(kvc_legacy_index_prefill(2, I64S(3, 2), 2, 8, 0, out, 32, &n), KVC_EINVAL, "n_cache_rows 0");
    expect_failure(kvc_legacy_index_prefill(0, I64S(3), 1, INT64_MAX / 2, 4, out, 32, &n), KVC_ERANGE, "overflow");
    expect_failure(kvc_legacy_index_prefill(0, I64S(3), 1, 8, 4, out, 32, NULL), KVC_EINVAL, "NULL");
    expect_failure(kvc_legacy_index_prefill(0, NULL, 1, 8, 4, out, 32, &n), KVC_EINVAL, "NULL");
    expect_failure(kvc_legacy_index_prefill(0, I64S(3), -1, 8, 4, out, 32, &n), KVC_EINVAL, "n -1");
}

static void test_decode_refusals(void **state) {
    (void)state;
    int64_t out[2];
    expect_failure(kvc_legacy_index_decode(I64S(0, 1), I64S(3, 8), 2, 8, 4, out), KVC_ERANGE, "kv_pos[1] = 8");
    expect_failure(kvc_legacy_index_decode(I64S(0, 1), I64S(-1, 0), 2, 8, 4, out), KVC_ERANGE, "kv_pos[0] = -1");
    expect_failure(kvc_legacy_index_decode(I64S(4, 1), I64S(0, 0), 2, 8, 4, out), KVC_ERANGE, "cache_rows[0] = 4");
    expect_failure(kvc_legacy_index_decode(I64S(0, -2), I64S(0, 0), 2, 8, 4, out), KVC_ERANGE, "cache_rows[1] = -2");
    expect_failure(kvc_legacy_index_decode(I64S(0), I64S(0), 1, 8, 4, NULL), KVC_EINVAL, "NULL");
    expect_failure(kvc_legacy_index_decode(I64S(0), I64S(0), -1, 8, 4, out), KVC_EINVAL, "n -1");
    expect_failure(kvc_legacy_index_decode(I64S(0), I64S(0), 1, -8, 4, out), KVC_EINVAL, "cache_seq_len -8");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefill_example), cmocka_unit_test(test_prefill_rows_do_not_overlap),
        cmocka_unit_test(test_decode_index),    cmocka_unit_test(test_prefill_refusals),
        cmocka_unit_test(test_decode_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
