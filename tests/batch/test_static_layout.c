/* Standalone static block table and linear slots (RM 10,
 * verification P-STAT-1, P-STAT-2, golden scenario 11). */
#include "batch_assert.h"

static kvc_static_layout layout_2x2048(void) {
    kvc_static_layout l;
    assert_int_equal(kvc_static_layout_init(2, 2048, 128, &l), KVC_OK);
    return l;
}

static void test_layout_sizes(void **state) {
    (void)state;
    kvc_static_layout l = layout_2x2048();
    assert_int_equal(l.blocks_per_seq, 16);
    assert_int_equal(l.total_blocks, 32);
    assert_int_equal(l.max_seq_len, 2048);
}

static void test_table_is_arange_per_row(void **state) {
    (void)state;
    kvc_static_layout l = layout_2x2048();
    int32_t table[32];
    memset(table, 0xff, sizeof table);
    assert_int_equal(kvc_static_table_fill(&l, table, 32), KVC_OK);
    expect_i32_array(table, I32S(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 16, "row 0");
    expect_i32_array(table + 16, I32S(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31), 16, "row 1");
}

static void test_prefill_slots_example(void **state) {
    (void)state;
    kvc_static_layout l = layout_2x2048();
    int64_t slots[800];
    int64_t n = -1;
    assert_int_equal(kvc_static_slots_prefill(&l, I64S(512, 256), 2, slots, 800, &n), KVC_OK);
    assert_int_equal(n, 768);
    for (int64_t i = 0; i < 512; i++) assert_int_equal(slots[i], i);
    for (int64_t i = 0; i < 256; i++) assert_int_equal(slots[512 + i], 2048 + i);
    assert_int_equal(slots[511], 511);
    assert_int_equal(slots[512], 2048);
    assert_int_equal(slots[767], 2303);
}

static void test_decode_slots_example(void **state) {
    (void)state;
    kvc_static_layout l = layout_2x2048();
    int64_t slots[2] = {-1, -1};
    assert_int_equal(kvc_static_slots_decode(&l, I64S(522, 266), 2, slots), KVC_OK);
    expect_i64_array(slots, I64S(522, 2314), 2, "decode slots");
}

/* The arithmetic slots equal table[b][p / bs] * bs + p % bs (P-STAT-1). */
static void test_slots_match_general_formula(void **state) {
    (void)state;
    kvc_static_layout l;
    assert_int_equal(kvc_static_layout_init(3, 96, 16, &l), KVC_OK);
    int32_t table[18];
    assert_int_equal(kvc_static_table_fill(&l, table, 18), KVC_OK);
    int64_t lens[3] = {96, 1, 40};
    int64_t slots[137];
    int64_t n = 0;
    assert_int_equal(kvc_static_slots_prefill(&l, lens, 3, slots, 137, &n), KVC_OK);
    assert_int_equal(n, 137);
    int64_t t = 0;
    for (int64_t b = 0; b < 3; b++) {
        for (int64_t p = 0; p < lens[b]; p++, t++) {
            assert_int_equal(slots[t], (int64_t)table[b * 6 + p / 16] * 16 + p % 16);
        }
    }
    int64_t kv_pos[3] = {95, 0, 41};
    int64_t dec[3];
    assert_int_equal(kvc_static_slots_decode(&l, kv_pos, 3, dec), KVC_OK);
    for (int64_t b = 0; b < 3; b++)
        assert_int_equal(dec[b], (int64_t)table[b * 6 + kv_pos[b] / 16] * 16 + kv_pos[b] % 16);
}

/* Standalone lengths use the framework convention: write at kv_pos, visible
 * kv_pos + 1; prefill cumulative q == kv (P-STAT-2, RM 10). */
static void test_standalone_lengths(void **state) {
    (void)state;
    kvc_static_layout l = layout_2x2048();
    /* after the prefill of [512, 256] kv_pos = L; two decode steps later L + 2:
     * the write lands at kv_pos and kv_pos + 1 keys are visible */
    const int64_t kv_pos[2] = {514, 258};
    int64_t slots[2], q[2], kv[2];
    assert_int_equal(kvc_static_slots_decode(&l, kv_pos, 2, slots), KVC_OK);
    expect_i64_array(slots, I64S(514, 2048 + 258), 2, "decode slots");
    assert_int_equal(kvc_seq_lens_decode(KVC_SEQ_LAYOUT_TND, kv_pos, 1, 2, q, kv), KVC_OK);
    expect_i64_array(q, I64S(1, 2), 2, "decode cu_q");
    expect_i64_array(kv, I64S(515, 259), 2, "decode actual_kv");
}

static void test_layout_refusals(void **state) {
    (void)state;
    kvc_static_layout l;
    expect_failure(kvc_static_layout_init(2, 2048, 100, &l), KVC_EINVAL, "not a multiple of block_size 100");
    expect_failure(kvc_static_layout_init(0, 2048, 128, &l), KVC_EINVAL, "batch 0");
    expect_failure(kvc_static_layout_init(2, 0, 128, &l), KVC_EINVAL, "max_seq_len 0");
    expect_failure(kvc_static_layout_init(2, 2048, 0, &l), KVC_EINVAL, "block_size 0");
    expect_failure(kvc_static_layout_init(2, 2048, 128, NULL), KVC_EINVAL, "out is NULL");
    expect_failure(kvc_static_layout_init(INT64_C(1) << 28, 2048, 128, &l), KVC_ERANGE, "int32 block ids");
}

static void test_table_refusals(void **state) {
    (void)state;
    kvc_static_layout l = layout_2x2048();
    int32_t table[32];
    expect_failure(kvc_static_table_fill(&l, table, 31), KVC_ERANGE, "cap 31");
    expect_failure(kvc_static_table_fill(NULL, table, 32), KVC_EINVAL, "NULL");
    expect_failure(kvc_static_table_fill(&l, NULL, 32), KVC_EINVAL, "NULL");
}

/* A caller's own layout struct is checked against what kvc_static_layout_init makes of it: a
 * total_blocks that does not bound the rows (here the table would be written far past its cap) or
 * sizes past int64 are refused before anything is written. */
static void test_hand_made_layout_refusals(void **state) {
    (void)state;
    int32_t table[64];
    int64_t slots[64], n = 0;
    const kvc_static_layout lying = {
        .batch = INT64_MAX, .max_seq_len = INT64_MAX, .block_size = 1, .blocks_per_seq = INT64_MAX, .total_blocks = 1};
    expect_failure(kvc_static_table_fill(&lying, table, 64), KVC_ERANGE, "int32 block ids");
    expect_failure(kvc_static_slots_decode(&lying, I64S(5, 0), 2, slots), KVC_ERANGE, "int32 block ids");
    expect_failure(kvc_static_slots_prefill(&lying, I64S(5, 1), 2, slots, 64, &n), KVC_ERANGE, "int32 block ids");
    const kvc_static_layout wide = {
        .batch = 2, .max_seq_len = 8, .block_size = 2, .blocks_per_seq = 40, .total_blocks = 8};
    expect_failure(kvc_static_table_fill(&wide, table, 8), KVC_EINVAL, "blocks_per_seq 40 and total_blocks 8");
    const kvc_static_layout zero = {0};
    expect_failure(kvc_static_slots_decode(&zero, I64S(0), 1, slots), KVC_EINVAL, "batch 0");
}

static void test_slot_refusals(void **state) {
    (void)state;
    kvc_static_layout l = layout_2x2048();
    int64_t slots[4096];
    int64_t n = 0;
    expect_failure(kvc_static_slots_prefill(&l, I64S(2049), 1, slots, 4096, &n), KVC_ERANGE, "seq_lens[0] = 2049");
    expect_failure(kvc_static_slots_prefill(&l, I64S(4, 0), 2, slots, 4096, &n), KVC_ERANGE, "seq_lens[1] = 0");
    expect_failure(kvc_static_slots_prefill(&l, I64S(1, 1, 1), 3, slots, 4096, &n), KVC_ERANGE, "n 3 rows");
    expect_failure(kvc_static_slots_prefill(&l, I64S(512, 256), 2, slots, 767, &n), KVC_ERANGE, "768 slots");
    expect_failure(kvc_static_slots_prefill(&l, I64S(512, 256), 2, NULL, 4096, &n), KVC_ERANGE, "768 slots");
    expect_failure(kvc_static_slots_prefill(&l, I64S(512, 256), 2, slots, 4096, NULL), KVC_EINVAL, "NULL");
    expect_failure(kvc_static_slots_prefill(&l, I64S(512), -1, slots, 4096, &n), KVC_ERANGE, "n -1 rows");
    expect_failure(kvc_static_slots_decode(&l, I64S(2048, 0), 2, slots), KVC_ERANGE, "kv_pos[0] = 2048");
    expect_failure(kvc_static_slots_decode(&l, I64S(0, -1), 2, slots), KVC_ERANGE, "kv_pos[1] = -1");
    expect_failure(kvc_static_slots_decode(&l, I64S(0, 0, 0), 3, slots), KVC_ERANGE, "n 3 rows");
    expect_failure(kvc_static_slots_decode(&l, I64S(0), 1, NULL), KVC_EINVAL, "NULL");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_sizes),
        cmocka_unit_test(test_table_is_arange_per_row),
        cmocka_unit_test(test_prefill_slots_example),
        cmocka_unit_test(test_decode_slots_example),
        cmocka_unit_test(test_slots_match_general_formula),
        cmocka_unit_test(test_standalone_lengths),
        cmocka_unit_test(test_layout_refusals),
        cmocka_unit_test(test_table_refusals),
        cmocka_unit_test(test_slot_refusals),
        cmocka_unit_test(test_hand_made_layout_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
