/* Direct vs cumulative sequence-length arrays per layout (RM 5 worked
 * numbers, section 8 speculative lengths, INV-R4). */
#include "batch_assert.h"

static void test_forms_table(void **state) {
    (void)state;
    struct {
        kvc_seq_layout layout;
        bool kv_paged;
        kvc_len_form q, kv;
    } rows[] = {
        {KVC_SEQ_LAYOUT_TND, false, KVC_LEN_CUMULATIVE, KVC_LEN_CUMULATIVE},
        {KVC_SEQ_LAYOUT_TND, true, KVC_LEN_CUMULATIVE, KVC_LEN_DIRECT},
        {KVC_SEQ_LAYOUT_NTD_TND, false, KVC_LEN_CUMULATIVE, KVC_LEN_CUMULATIVE},
        {KVC_SEQ_LAYOUT_TND_NTD, true, KVC_LEN_CUMULATIVE, KVC_LEN_DIRECT},
        {KVC_SEQ_LAYOUT_BSH, false, KVC_LEN_DIRECT, KVC_LEN_DIRECT},
        {KVC_SEQ_LAYOUT_BSH, true, KVC_LEN_DIRECT, KVC_LEN_DIRECT},
        {KVC_SEQ_LAYOUT_BSND, false, KVC_LEN_DIRECT, KVC_LEN_DIRECT},
        {KVC_SEQ_LAYOUT_BNSD, false, KVC_LEN_DIRECT, KVC_LEN_DIRECT},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        kvc_len_form q = (kvc_len_form)-1, kv = (kvc_len_form)-1;
        assert_int_equal(kvc_seq_layout_forms(rows[i].layout, rows[i].kv_paged, &q, &kv), KVC_OK);
        assert_int_equal(q, rows[i].q);
        assert_int_equal(kv, rows[i].kv);
    }
}

/* Prompts 5, 2, 3: actual_q = actual_kv = [5,2,3], cu_q = cu_kv = [5,7,10]. */
static void test_prefill_three_requests(void **state) {
    (void)state;
    int64_t q[3], kv[3];
    assert_int_equal(kvc_seq_lens_prefill(KVC_SEQ_LAYOUT_TND, false, I64S(5, 2, 3), 3, q, kv), KVC_OK);
    expect_i64_array(q, I64S(5, 7, 10), 3, "cu_q");
    expect_i64_array(kv, I64S(5, 7, 10), 3, "cu_kv");
    /* paged prefill: cache written first, read back through the table */
    assert_int_equal(kvc_seq_lens_prefill(KVC_SEQ_LAYOUT_TND, true, I64S(5, 2, 3), 3, q, kv), KVC_OK);
    expect_i64_array(q, I64S(5, 7, 10), 3, "cu_q");
    expect_i64_array(kv, I64S(5, 2, 3), 3, "actual_kv");
    assert_int_equal(kvc_seq_lens_prefill(KVC_SEQ_LAYOUT_BSH, false, I64S(5, 2, 3), 3, q, kv), KVC_OK);
    expect_i64_array(q, I64S(5, 2, 3), 3, "actual_q");
    expect_i64_array(kv, I64S(5, 2, 3), 3, "actual_kv");
}

/* First decode, padded to 4 rows: cu_q = [1,2,3,4], kv_len = [5,2,3,0],
 * actual_kv = [6,3,4,1]; with packed K/V the cumulative KV is [6,9,13,14]. */
static void test_decode_padded(void **state) {
    (void)state;
    int64_t q[4], kv[4];
    assert_int_equal(kvc_seq_lens_decode(KVC_SEQ_LAYOUT_TND, I64S(5, 2, 3, 0), 1, 4, q, kv), KVC_OK);
    expect_i64_array(q, I64S(1, 2, 3, 4), 4, "cu_q");
    expect_i64_array(kv, I64S(6, 3, 4, 1), 4, "actual_kv");
    assert_int_equal(kvc_seq_lens_fill(KVC_SEQ_LAYOUT_TND, false, I64S(1, 1, 1, 1), I64S(6, 3, 4, 1), 4, q, kv),
                     KVC_OK);
    expect_i64_array(kv, I64S(6, 9, 13, 14), 4, "cu_kv");
}

/* 512 and 256 tokens: TND prefill KV [512,768], BSH [512,256]; decode with
 * visible 522 and 266: KV [522,266] in both, Q [1,2] (TND) vs [1,1] (BSH);
 * MLA prefill NTD_TND is packed, MLA absorbed decode TND_NTD is paged. */
static void test_layouts_512_256(void **state) {
    (void)state;
    static const struct {
        kvc_seq_layout layout;
        bool prefill;        /* else decode with q_len 1 */
        const int64_t in[2]; /* prefill: prompt lengths; decode: kv_pos */
        const int64_t q[2], kv[2];
    } cases[] = {
        {KVC_SEQ_LAYOUT_TND, true, {512, 256}, {512, 768}, {512, 768}},
        {KVC_SEQ_LAYOUT_BSH, true, {512, 256}, {512, 256}, {512, 256}},
        {KVC_SEQ_LAYOUT_NTD_TND, true, {512, 256}, {512, 768}, {512, 768}},
        {KVC_SEQ_LAYOUT_TND, false, {521, 265}, {1, 2}, {522, 266}},
        {KVC_SEQ_LAYOUT_BSH, false, {521, 265}, {1, 1}, {522, 266}},
        {KVC_SEQ_LAYOUT_BNSD, false, {521, 265}, {1, 1}, {522, 266}},
        {KVC_SEQ_LAYOUT_TND_NTD, false, {521, 265}, {1, 2}, {522, 266}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t q[2] = {-1, -1}, kv[2] = {-1, -1};
        kvc_status st = cases[i].prefill ? kvc_seq_lens_prefill(cases[i].layout, false, cases[i].in, 2, q, kv)
                                         : kvc_seq_lens_decode(cases[i].layout, cases[i].in, 1, 2, q, kv);
        assert_int_equal(st, KVC_OK);
        expect_i64_array(q, cases[i].q, 2, "q");
        expect_i64_array(kv, cases[i].kv, 2, "kv");
    }
}

/* RM 8, next_n = 1: kv_len = [6,3,4] -> cu_q = [2,4,6], actual_kv = [7,4,5]. */
static void test_speculative_decode(void **state) {
    (void)state;
    int64_t q[3], kv[3];
    assert_int_equal(kvc_seq_lens_decode(KVC_SEQ_LAYOUT_TND, I64S(6, 3, 4), 2, 3, q, kv), KVC_OK);
    expect_i64_array(q, I64S(2, 4, 6), 3, "cu_q");
    expect_i64_array(kv, I64S(7, 4, 5), 3, "actual_kv");
    assert_int_equal(kvc_seq_lens_fill(KVC_SEQ_LAYOUT_TND, false, I64S(2, 2, 2), I64S(7, 4, 5), 3, q, kv), KVC_OK);
    expect_i64_array(kv, I64S(7, 11, 16), 3, "cu_kv");
}

static void test_empty_batch(void **state) {
    (void)state;
    assert_int_equal(kvc_seq_lens_fill(KVC_SEQ_LAYOUT_TND, false, NULL, NULL, 0, NULL, NULL), KVC_OK);
    assert_int_equal(kvc_seq_lens_decode(KVC_SEQ_LAYOUT_TND, NULL, 1, 0, NULL, NULL), KVC_OK);
}

static void test_refusals(void **state) {
    (void)state;
    int64_t q[2], kv[2];
    kvc_len_form qf, kvf;
    expect_failure(kvc_seq_layout_forms((kvc_seq_layout)99, false, &qf, &kvf), KVC_EINVAL, "layout 99");
    expect_failure(kvc_seq_layout_forms((kvc_seq_layout)-1, false, &qf, &kvf), KVC_EINVAL, "layout -1");
    expect_failure(kvc_seq_layout_forms(KVC_SEQ_LAYOUT_TND, false, NULL, &kvf), KVC_EINVAL, "NULL");
    expect_failure(kvc_seq_lens_fill(KVC_SEQ_LAYOUT_TND, false, I64S(1, -2), I64S(1, 1), 2, q, kv), KVC_EINVAL,
                   "q_lens[1] = -2");
    expect_failure(kvc_seq_lens_fill(KVC_SEQ_LAYOUT_BSH, false, I64S(1, 1), I64S(-3, 1), 2, q, kv), KVC_EINVAL,
                   "kv_lens[0] = -3");
    expect_failure(kvc_seq_lens_fill(KVC_SEQ_LAYOUT_TND, false, I64S(INT64_MAX, 1), I64S(1, 1), 2, q, kv), KVC_ERANGE,
                   "overflows");
    expect_failure(kvc_seq_lens_fill(KVC_SEQ_LAYOUT_TND, false, NULL, I64S(1), 1, q, kv), KVC_EINVAL, "NULL");
    expect_failure(kvc_seq_lens_fill(KVC_SEQ_LAYOUT_TND, false, I64S(1), I64S(1), -1, q, kv), KVC_EINVAL, "n -1");
    expect_failure(kvc_seq_lens_prefill(KVC_SEQ_LAYOUT_TND, false, I64S(3, 0), 2, q, kv), KVC_EINVAL,
                   "seq_lens[1] = 0");
    expect_failure(kvc_seq_lens_decode(KVC_SEQ_LAYOUT_TND, I64S(3, -1), 1, 2, q, kv), KVC_EINVAL, "kv_pos[1] = -1");
    expect_failure(kvc_seq_lens_decode(KVC_SEQ_LAYOUT_TND, I64S(3, 1), 0, 2, q, kv), KVC_EINVAL, "q_len 0");
    expect_failure(kvc_seq_lens_decode(KVC_SEQ_LAYOUT_TND, I64S(3, 1), 1, 2, NULL, kv), KVC_EINVAL, "NULL");
    expect_failure(kvc_seq_lens_decode((kvc_seq_layout)7, I64S(3, 1), 1, 2, q, kv), KVC_EINVAL, "layout 7");
    expect_failure(kvc_seq_lens_decode(KVC_SEQ_LAYOUT_TND, I64S(3, 1), INT64_MAX, 2, q, kv), KVC_ERANGE, "overflow");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms_table),        cmocka_unit_test(test_prefill_three_requests),
        cmocka_unit_test(test_decode_padded),      cmocka_unit_test(test_layouts_512_256),
        cmocka_unit_test(test_speculative_decode), cmocka_unit_test(test_empty_batch),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
