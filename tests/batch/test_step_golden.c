/* Step metadata over a real manager: the worked examples of RM 5,
 * 6.2, 7 and 8 (golden scenarios 8 and 9), the Mamba tables of KM 8.4 and
 * the sliding-window slots of KM 8.1 / 8.2, all as exact values. */
#include "step_fixture.h"

/* One FullAttention key (bs 4, max_model_len 16 -> width 4, 9 usable blocks)
 * whose free queue is steered to [2,7,5,1,9,3,4,6,8], then the prefill of
 * requests 0, 1, 2 with 5, 2, 3 tokens: the pool hands out [2,7], [5], [1]. */
static void setup_rm62(step_fixture *f) {
    kvc_cache_entry e = fix_full("full", 4);
    fixture_create(f, &e, I64S(10), 1, 16, 8, 32);
    for (int64_t i = 0; i < 9; i++) fixture_allocate(f, 100 + i, 0, 4, 0); /* filler 100+i holds block i+1 */
    for (int32_t i = 0; i < 9; i++) kvc_test_assert_table(f->m, 100 + i, 0, &(int32_t){i + 1}, 1);
    const int32_t free_order[9] = {2, 7, 5, 1, 9, 3, 4, 6, 8};
    for (int i = 0; i < 9; i++) assert_int_equal(kvc_manager_free(f->m, 100 + free_order[i] - 1), KVC_OK);
    kvc_test_assert_queue(f->m, 0, free_order, 9);
    fixture_allocate(f, 0, 0, 5, 0);
    fixture_allocate(f, 1, 0, 2, 0);
    fixture_allocate(f, 2, 0, 3, 0);
}

static void test_rm62_prefill(void **state) {
    (void)state;
    step_fixture f;
    setup_rm62(&f);
    const kvc_step_request rows[3] = {{0, 0, 5}, {1, 0, 2}, {2, 0, 3}};
    kvc_step_metadata md;
    fixture_build(&f, rows, 3, true, &md);
    assert_true(md.is_prefill);
    assert_int_equal(md.n_rows, 3);
    assert_int_equal(md.n_tokens, 10);
    assert_int_equal(md.prompt_tokens, 10);
    expect_i64_array(md.positions, I64S(0, 1, 2, 3, 4, 0, 1, 0, 1, 2), 10, "positions");
    expect_i64_array(md.seq_lens_q, I64S(5, 2, 3), 3, "actual_q");
    expect_i64_array(md.seq_lens_kv, I64S(5, 2, 3), 3, "actual_kv");
    expect_i64_array(md.cu_seq_lens_q, I64S(5, 7, 10), 3, "cu_q");
    expect_i64_array(md.cu_seq_lens_kv, I64S(5, 7, 10), 3, "cu_kv");
    expect_i64_array(md.kv_pos, I64S(4, 1, 2), 3, "kv_pos");
    assert_int_equal(md.n_keys, 1);
    const kvc_step_key *k = fixture_key(&md, "full");
    assert_int_equal(k->attn_type, KVC_ATTN_FULL);
    assert_int_equal(k->block_size, 4);
    assert_int_equal(k->width, 4);
    expect_i32_array(k->block_table, I32S(2, 7, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0), 12, "block_table");
    expect_i64_array(k->slot_mapping, I64S(8, 9, 10, 11, 28, 20, 21, 4, 5, 6), 10, "slot_mapping");
    fixture_destroy(&f);
}

/* First decode, padded to 4 rows (golden scenario 8). */
static void test_rm62_decode_padded(void **state) {
    (void)state;
    step_fixture f;
    setup_rm62(&f);
    const int64_t computed_len[3] = {4, 1, 2};
    for (int64_t r = 0; r < 3; r++) fixture_allocate(&f, r, computed_len[r] + 1, 1, 0);
    const kvc_step_request rows[4] = {{0, 5, 1}, {1, 2, 1}, {2, 3, 1}, {-1, 0, 1}};
    kvc_step_metadata md;
    fixture_build(&f, rows, 4, false, &md);
    assert_false(md.is_prefill);
    assert_int_equal(md.n_tokens, 4);
    assert_int_equal(md.prompt_tokens, 0);
    expect_i64_array(md.positions, I64S(5, 2, 3, 0), 4, "positions");
    expect_i64_array(md.kv_pos, I64S(5, 2, 3, 0), 4, "kv_pos");
    expect_i64_array(md.seq_lens_q, I64S(1, 1, 1, 1), 4, "actual_q");
    expect_i64_array(md.cu_seq_lens_q, I64S(1, 2, 3, 4), 4, "cu_q");
    expect_i64_array(md.seq_lens_kv, I64S(6, 3, 4, 1), 4, "actual_kv");
    expect_i64_array(md.cu_seq_lens_kv, I64S(6, 9, 13, 14), 4, "cu_kv");
    const kvc_step_key *k = fixture_key(&md, "full");
    expect_i32_array(k->block_table, I32S(2, 7, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0), 16, "block_table");
    expect_i64_array(k->slot_mapping, I64S(29, 22, 7, 0), 4, "slot_mapping");
    fixture_destroy(&f);
}

/* RM 8, next_n = 1 (golden scenario 9): the decode allocation asks
 * for computed_len + 2*next_n + 1 = [7,4,5] positions, so request 2 takes
 * block 9, the head of the queue. */
static void test_rm8_speculative(void **state) {
    (void)state;
    step_fixture f;
    setup_rm62(&f);
    const int64_t computed_len[3] = {4, 1, 2};
    const int64_t next_n = 1;
    for (int64_t r = 0; r < 3; r++) fixture_allocate(&f, r, computed_len[r] + 1, 1 + next_n, 0);
    const kvc_step_request rows[3] = {{0, 5, 2}, {1, 2, 2}, {2, 3, 2}};
    kvc_step_metadata md;
    fixture_build(&f, rows, 3, false, &md);
    assert_int_equal(md.n_tokens, 6);
    expect_i64_array(md.kv_pos, I64S(6, 3, 4), 3, "kv_len");
    expect_i64_array(md.positions, I64S(5, 6, 2, 3, 3, 4), 6, "positions");
    expect_i64_array(md.seq_lens_q, I64S(2, 2, 2), 3, "actual_q");
    expect_i64_array(md.cu_seq_lens_q, I64S(2, 4, 6), 3, "cu_q");
    expect_i64_array(md.seq_lens_kv, I64S(7, 4, 5), 3, "actual_kv");
    expect_i64_array(md.cu_seq_lens_kv, I64S(7, 11, 16), 3, "cu_kv");
    const kvc_step_key *k = fixture_key(&md, "full");
    expect_i32_array(k->block_table, I32S(2, 7, 0, 0, 5, 0, 0, 0, 1, 9, 0, 0), 12, "block_table");
    expect_i64_array(k->slot_mapping, I64S(29, 30, 22, 23, 7, 36), 6, "slot_mapping");
    fixture_destroy(&f);
}

/* Dummy batch (RM 3): one row with id -1 and one token; no
 * allocation, all-null tables, position 0 -> slot 0, no real prompt tokens. */
static void test_dummy_and_empty_steps(void **state) {
    (void)state;
    step_fixture f;
    setup_rm62(&f);
    const kvc_step_request dummy = {-1, 0, 1};
    kvc_step_metadata md;
    fixture_build(&f, &dummy, 1, true, &md);
    assert_int_equal(md.n_tokens, 1);
    assert_int_equal(md.prompt_tokens, 0);
    expect_i64_array(md.positions, I64S(0), 1, "positions");
    expect_i64_array(md.seq_lens_kv, I64S(1), 1, "actual_kv");
    const kvc_step_key *k = fixture_key(&md, "full");
    expect_i32_array(k->block_table, I32S(0, 0, 0, 0), 4, "block_table");
    expect_i64_array(k->slot_mapping, I64S(0), 1, "slot_mapping");
    /* trailing padding tokens of a prefill (sequence-parallel alignment):
     * not prompt tokens, position 0, their own packed K/V (cu_q == cu_kv) */
    const kvc_step_request aligned[2] = {{0, 0, 5}, {-1, 0, 3}};
    fixture_build(&f, aligned, 2, true, &md);
    assert_int_equal(md.n_tokens, 8);
    assert_int_equal(md.prompt_tokens, 5);
    expect_i64_array(md.positions, I64S(0, 1, 2, 3, 4, 0, 0, 0), 8, "positions");
    expect_i64_array(md.kv_pos, I64S(4, 0), 2, "kv_pos");
    expect_i64_array(md.seq_lens_kv, I64S(5, 3), 2, "actual_kv");
    expect_i64_array(md.cu_seq_lens_q, I64S(5, 8), 2, "cu_q");
    expect_i64_array(md.cu_seq_lens_kv, I64S(5, 8), 2, "cu_kv");
    expect_i64_array(fixture_key(&md, "full")->slot_mapping, I64S(8, 9, 10, 11, 28, 0, 0, 0), 8, "slot_mapping");
    /* warm-up without rows */
    fixture_build(&f, NULL, 0, false, &md);
    assert_int_equal(md.n_rows, 0);
    assert_int_equal(md.n_tokens, 0);
    assert_int_equal(fixture_key(&md, "full")->width, 4);
    assert_null(kvc_step_metadata_key(&md, "absent"));
    fixture_destroy(&f);
}

/* KM 8.4: Mamba next_n = 1, 5 blocks. Prefill width 1 -> [[1],[2]]; decode
 * width 1 + next_n -> [[1,3],[2,4]] plus an all-null padding row; no slots. */
static void test_mamba_tables(void **state) {
    (void)state;
    step_fixture f;
    kvc_cache_entry e = fix_mamba("ssm", 1);
    fixture_create(&f, &e, I64S(5), 1, 64, 4, 16);
    fixture_allocate(&f, 0, 0, 7, 0);
    fixture_allocate(&f, 1, 0, 3, 0);
    const kvc_step_request pre[2] = {{0, 0, 7}, {1, 0, 3}};
    kvc_step_metadata md;
    fixture_build(&f, pre, 2, true, &md);
    const kvc_step_key *k = fixture_key(&md, "ssm");
    assert_int_equal(k->attn_type, KVC_ATTN_MAMBA);
    assert_int_equal(k->width, 1);
    expect_i32_array(k->block_table, I32S(1, 2), 2, "prefill table");
    assert_null(k->slot_mapping);

    fixture_allocate(&f, 0, 7, 2, 0);
    fixture_allocate(&f, 1, 3, 2, 0);
    const kvc_step_request dec[3] = {{0, 7, 2}, {1, 3, 2}, {-1, 0, 2}};
    fixture_build(&f, dec, 3, false, &md);
    k = fixture_key(&md, "ssm");
    assert_int_equal(k->width, 2);
    expect_i32_array(k->block_table, I32S(1, 3, 2, 4, 0, 0), 6, "decode table");
    assert_null(k->slot_mapping);
    /* padding rows of a speculative step: q_len tokens at position 0 */
    expect_i64_array(md.positions, I64S(7, 8, 3, 4, 0, 0), 6, "positions");
    expect_i64_array(md.seq_lens_kv, I64S(9, 5, 1), 3, "actual_kv");
    /* the prefill width still takes only the state block */
    fixture_build(&f, pre, 2, true, &md);
    expect_i32_array(fixture_key(&md, "ssm")->block_table, I32S(1, 2), 2, "prefill table after decode");
    fixture_destroy(&f);
}

/* A SlidingWindow key W = 6, bs = 4, 8 blocks (KM 8.1 / 8.2), width 16. */
static void setup_window(step_fixture *f) {
    kvc_cache_entry e = fix_window("swa", 4, 6);
    fixture_create(f, &e, I64S(8), 1, 64, 4, 32);
}

/* Allocates and builds a one-row step of request 0; returns its "swa" key. */
static const kvc_step_key *window_step(step_fixture *f, int64_t computed, int64_t num_new, bool is_prefill,
                                       kvc_step_metadata *md) {
    fixture_allocate(f, 0, computed, num_new, 0);
    const kvc_step_request row = {0, computed, num_new};
    fixture_build(f, &row, 1, is_prefill, md);
    const kvc_step_key *k = fixture_key(md, "swa");
    assert_int_equal(k->width, 16);
    return k;
}

/* KM 8.1: prefill 10 -> slots 4..13, decodes at positions 10..14 -> slots
 * 14..18 while the window releases blocks 1 and 2. */
static void test_window_slots_km81(void **state) {
    (void)state;
    step_fixture f;
    setup_window(&f);
    kvc_step_metadata md;
    const kvc_step_key *k = window_step(&f, 0, 10, true, &md);
    expect_i32_array(k->block_table, I32S(1, 2, 3, 0), 4, "prefill table");
    expect_i64_array(k->slot_mapping, I64S(4, 5, 6, 7, 8, 9, 10, 11, 12, 13), 10, "prefill slots");
    const int32_t tables[5][4] = {{0, 2, 3, 0}, {0, 2, 3, 0}, {0, 2, 3, 4}, {0, 0, 3, 4}, {0, 0, 3, 4}};
    for (int64_t d = 0; d < 5; d++) {
        k = window_step(&f, 10 + d, 1, false, &md);
        expect_i32_array(k->block_table, tables[d], 4, "decode table");
        assert_int_equal(k->slot_mapping[0], 14 + d);
    }
    fixture_destroy(&f);
}

/* KM 8.2 (issue 24): prefill 20 backs every block [1,2,3,4,5], so every
 * position writes its own slot (4..23); the first decode at position 20
 * releases blocks 1-3 (the window's null prefix [0,0,0,4,5,6]) and writes
 * slot 24. */
static void test_window_null_prefix_km82(void **state) {
    (void)state;
    step_fixture f;
    setup_window(&f);
    kvc_step_metadata md;
    const kvc_step_key *k = window_step(&f, 0, 20, true, &md);
    expect_i32_array(k->block_table, I32S(1, 2, 3, 4, 5, 0), 6, "prefill table");
    expect_i64_array(k->slot_mapping, I64S(4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23),
                     20, "prefill slots");
    k = window_step(&f, 20, 1, false, &md);
    expect_i32_array(k->block_table, I32S(0, 0, 0, 4, 5, 6, 0), 7, "decode table");
    assert_int_equal(k->slot_mapping[0], 24);
    fixture_destroy(&f);
}

/* Several keys in manager order: full (bs 4), compressed full (bs 8, ratio 2:
 * table but no slots), Mamba (no slots); each with its own width. */
static void test_keys_in_manager_order(void **state) {
    (void)state;
    step_fixture f;
    const kvc_cache_entry e[3] = {fix_full("full", 4), fix_compressed("cmp", 8, 2), fix_mamba("ssm", 0)};
    fixture_create(&f, e, I64S(9, 9, 5), 3, 32, 4, 32);
    fixture_allocate(&f, 7, 0, 9, 0);
    const kvc_step_request rows[2] = {{-1, 0, 1}, {7, 0, 9}};
    kvc_step_metadata md;
    fixture_build(&f, rows, 2, true, &md);
    assert_int_equal(md.n_keys, 3);
    assert_string_equal(md.keys[0].key, "full");
    assert_string_equal(md.keys[1].key, "cmp");
    assert_string_equal(md.keys[2].key, "ssm");
    assert_int_equal(md.prompt_tokens, 9);
    assert_int_equal(md.keys[0].width, 8);
    assert_int_equal(md.keys[1].width, 4);
    assert_int_equal(md.keys[2].width, 1);
    expect_i32_array(md.keys[0].block_table, I32S(0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0), 16, "full table");
    expect_i32_array(md.keys[1].block_table, I32S(0, 0, 0, 0, 1, 2, 0, 0), 8, "cmp table");
    expect_i32_array(md.keys[2].block_table, I32S(0, 1), 2, "ssm table");
    expect_i64_array(md.keys[0].slot_mapping, I64S(0, 4, 5, 6, 7, 8, 9, 10, 11, 12), 10, "full slots");
    assert_null(md.keys[1].slot_mapping);
    assert_null(md.keys[2].slot_mapping);
    fixture_destroy(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rm62_prefill),
        cmocka_unit_test(test_rm62_decode_padded),
        cmocka_unit_test(test_rm8_speculative),
        cmocka_unit_test(test_dummy_and_empty_steps),
        cmocka_unit_test(test_mamba_tables),
        cmocka_unit_test(test_window_slots_km81),
        cmocka_unit_test(test_window_null_prefix_km82),
        cmocka_unit_test(test_keys_in_manager_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
