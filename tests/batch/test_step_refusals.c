/* Every input kvc_step_buffers_create and kvc_step_metadata_build refuse,
 * with its status and the field the message names; a refused build leaves
 * the caller's metadata untouched, in every build (RM 7: no real position
 * on the null block). */
#include "step_fixture.h"

/* One full key (bs 4, max_model_len 16 -> width 4) and one Mamba key
 * (next_n 1); request 5 prefilled with 6 tokens; buffers of 4 rows x 8 tokens. */
static void setup(step_fixture *f) {
    const kvc_cache_entry e[2] = {fix_full("full", 4), fix_mamba("ssm", 1)};
    fixture_create(f, e, I64S(10, 5), 2, 16, 4, 8);
    fixture_allocate(f, 5, 0, 6, 0);
}

static void test_create_refusals(void **state) {
    (void)state;
    step_fixture f;
    setup(&f);
    kvc_step_buffers *buf = (kvc_step_buffers *)&f; /* any non-NULL value: must be reset to NULL */
    expect_failure(kvc_step_buffers_create(NULL, 4, 8, &buf), KVC_EINVAL, "manager is NULL");
    assert_null(buf);
    expect_failure(kvc_step_buffers_create(f.m, 4, 8, NULL), KVC_EINVAL, "out is NULL");
    buf = (kvc_step_buffers *)&f;
    expect_failure(kvc_step_buffers_create(f.m, 0, 8, &buf), KVC_EINVAL, "max_rows 0");
    assert_null(buf);
    expect_failure(kvc_step_buffers_create(f.m, 4, -1, &buf), KVC_EINVAL, "max_tokens -1");
    assert_null(buf);
    expect_failure(kvc_step_buffers_create(f.m, INT64_MAX / 2, 8, &buf), KVC_EINVAL, "max_rows 4611686018427387903");
    assert_null(buf);
    assert_int_equal(kvc_step_buffers_max_rows(f.buf), 4);
    assert_int_equal(kvc_step_buffers_max_tokens(f.buf), 8);
    kvc_step_buffers_destroy(NULL);
    fixture_destroy(&f);
}

/* Builds rows and expects the failure; *out must keep its previous bytes. */
static void expect_build_failure(step_fixture *f, const kvc_step_request *rows, int64_t n_rows, bool is_prefill,
                                 kvc_status want, const char *needle) {
    kvc_step_metadata md, before;
    memset(&md, 0x5a, sizeof md);
    memcpy(&before, &md, sizeof md);
    expect_failure(kvc_step_metadata_build(f->buf, rows, n_rows, is_prefill, &md), want, needle);
    assert_memory_equal(&md, &before, sizeof md);
}

static void test_argument_refusals(void **state) {
    (void)state;
    step_fixture f;
    setup(&f);
    const kvc_step_request ok = {5, 0, 6};
    kvc_step_metadata md;
    expect_failure(kvc_step_metadata_build(NULL, &ok, 1, true, &md), KVC_EINVAL, "buffers is NULL");
    expect_failure(kvc_step_metadata_build(f.buf, &ok, 1, true, NULL), KVC_EINVAL, "out is NULL");
    expect_build_failure(&f, NULL, 1, true, KVC_EINVAL, "rows is NULL with n_rows 1");
    expect_build_failure(&f, &ok, -1, true, KVC_EINVAL, "n_rows -1");
    const kvc_step_request five[5] = {{5, 0, 1}, {-1, 0, 1}, {-1, 0, 1}, {-1, 0, 1}, {-1, 0, 1}};
    expect_build_failure(&f, five, 5, false, KVC_ERANGE, "n_rows 5 exceeds the buffers' max_rows 4");
    fixture_destroy(&f);
}

static void test_row_refusals(void **state) {
    (void)state;
    step_fixture f;
    setup(&f);
    const kvc_step_request zero_new[2] = {{5, 0, 6}, {-1, 0, 0}};
    expect_build_failure(&f, zero_new, 2, true, KVC_EINVAL, "step row 1 (request -1): num_new_tokens 0");
    const kvc_step_request neg_new[1] = {{5, 0, -2}};
    expect_build_failure(&f, neg_new, 1, true, KVC_EINVAL, "step row 0 (request 5): num_new_tokens -2");
    const kvc_step_request neg_computed[1] = {{5, -1, 1}};
    expect_build_failure(&f, neg_computed, 1, false, KVC_EINVAL, "step row 0 (request 5): computed_tokens -1");
    const kvc_step_request too_many[2] = {{5, 0, 6}, {-1, 0, 3}};
    expect_build_failure(&f, too_many, 2, true, KVC_ERANGE, "step row 1 (request -1): num_new_tokens 3 brings");
    const kvc_step_request overflow[1] = {{5, INT64_MAX, 1}};
    expect_build_failure(&f, overflow, 1, false, KVC_ERANGE, "overflows");
    const kvc_step_request dup[3] = {{5, 6, 1}, {-1, 0, 1}, {5, 6, 1}};
    expect_build_failure(&f, dup, 3, false, KVC_EINVAL, "step rows 0 and 2: request_id 5 is scheduled twice");
    /* padding rows may repeat and their computed_tokens is ignored */
    const kvc_step_request pads[3] = {{5, 0, 6}, {-1, -7, 1}, {-1, 3, 1}};
    kvc_step_metadata md;
    fixture_build(&f, pads, 3, true, &md);
    expect_i64_array(md.positions, I64S(0, 1, 2, 3, 4, 5, 0, 0), 8, "positions");
    expect_i64_array(md.kv_pos, I64S(5, 0, 0), 3, "kv_pos");
    fixture_destroy(&f);
}

/* Duplicate detection over many rows in scrambled id order (a compressed
 * key only: the rows build without slots). */
static void test_duplicates_among_many_rows(void **state) {
    (void)state;
    step_fixture f;
    const kvc_cache_entry e = fix_compressed("cmp", 8, 2);
    fixture_create(&f, &e, I64S(51), 1, 64, 64, 64);
    kvc_step_request rows[50];
    for (int64_t b = 0; b < 50; b++) {
        rows[b] = (kvc_step_request){(b * 37) % 50 * 1000 + 3, 0, 1};
        fixture_allocate(&f, rows[b].request_id, 0, 1, 0);
    }
    kvc_step_metadata md;
    fixture_build(&f, rows, 50, true, &md);
    assert_int_equal(md.n_tokens, 50);
    const int64_t pairs[4][2] = {{0, 49}, {17, 18}, {48, 2}, {25, 31}};
    for (int i = 0; i < 4; i++) {
        kvc_step_request dup[50];
        memcpy(dup, rows, sizeof dup);
        dup[pairs[i][1]].request_id = dup[pairs[i][0]].request_id;
        char needle[96];
        int64_t lo = pairs[i][0] < pairs[i][1] ? pairs[i][0] : pairs[i][1];
        int64_t hi = pairs[i][0] + pairs[i][1] - lo;
        snprintf(needle, sizeof needle, "step rows %lld and %lld: request_id %lld", (long long)lo, (long long)hi,
                 (long long)dup[lo].request_id);
        expect_build_failure(&f, dup, 50, true, KVC_EINVAL, needle);
    }
    fixture_destroy(&f);
}

/* A Mamba table shorter than the decode width (the decode allocation has not
 * run yet) is refused; after it, the same step builds. */
static void test_mamba_short_table(void **state) {
    (void)state;
    step_fixture f;
    setup(&f);
    const kvc_step_request row = {5, 6, 2};
    expect_build_failure(&f, &row, 1, false, KVC_EINVAL, "key ssm, step row 0 (request 5): Mamba table holds 1 blocks");
    fixture_allocate(&f, 5, 6, 2, 0);
    kvc_step_metadata md;
    fixture_build(&f, &row, 1, false, &md);
    expect_i32_array(fixture_key(&md, "ssm")->block_table, I32S(1, 2), 2, "ssm table");
    fixture_destroy(&f);
}

/* A position whose logical block reaches the table width (16 / 4 = 4). */
static void test_position_past_width(void **state) {
    (void)state;
    step_fixture f;
    setup(&f);
    fixture_allocate(&f, 5, 6, 10, 0); /* all 16 positions backed */
    fixture_allocate(&f, 5, 6, 2, 0);  /* Mamba decode width */
    const kvc_step_request row = {5, 15, 2};
    expect_build_failure(
        &f, &row, 1, false, KVC_ERANGE,
        "key full, step row 0 (request 5): position 16 lies in logical block 4, past the table width 4");
    const kvc_step_request last = {5, 14, 2};
    kvc_step_metadata md;
    fixture_build(&f, &last, 1, false, &md);
    expect_i32_array(fixture_key(&md, "full")->block_table, I32S(1, 2, 3, 4), 4, "full table");
    expect_i64_array(fixture_key(&md, "full")->slot_mapping, I64S(18, 19), 2, "slots");
    fixture_destroy(&f);
}

/* RM 7 in every build (issue 23 #11): a real row's position past its
 * request's allocation (it would map into the null block) and a request the
 * manager does not know are refused, naming the key, row, request and
 * position; the key without slots (compressed) checks the row's last position. */
static void test_step_past_allocation_refused(void **state) {
    (void)state;
    step_fixture f;
    const kvc_cache_entry full = fix_full("full", 4), cmp = fix_compressed("cmp", 8, 2);
    fixture_create(&f, &full, I64S(10), 1, 16, 4, 8);
    fixture_allocate(&f, 5, 0, 4, 0);
    const kvc_step_request backed = {5, 3, 1}, unbacked = {5, 4, 1}, chunk = {5, 2, 3}, unknown = {6, 0, 1};
    kvc_step_metadata md;
    fixture_build(&f, &backed, 1, false, &md);
    expect_build_failure(&f, &unbacked, 1, false, KVC_EINVAL,
                         "key full, step row 0 (request 5): position 4 lies in logical block 1, which the request's "
                         "table does not back");
    expect_build_failure(&f, &chunk, 1, true, KVC_EINVAL, "(request 5): position 4 lies in logical block 1");
    expect_build_failure(&f, &unknown, 1, true, KVC_EINVAL,
                         "key full, step row 0 (request 6): the request holds no blocks of this key");
    const kvc_step_request rows[2] = {{5, 3, 1}, {7, 0, 1}}; /* a known row first, then an unknown one */
    expect_build_failure(&f, rows, 2, false, KVC_EINVAL, "step row 1 (request 7): the request holds no blocks");
    fixture_destroy(&f);
    fixture_create(&f, &cmp, I64S(10), 1, 16, 4, 8);
    fixture_allocate(&f, 8, 0, 8, 0); /* one block of 8 positions */
    const kvc_step_request cmp_past = {8, 8, 1};
    expect_build_failure(&f, &cmp_past, 1, false, KVC_EINVAL,
                         "key cmp, step row 0 (request 8): position 8 lies in logical block 1, which the request's "
                         "table does not back");
    fixture_destroy(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_refusals),
        cmocka_unit_test(test_argument_refusals),
        cmocka_unit_test(test_row_refusals),
        cmocka_unit_test(test_mamba_short_table),
        cmocka_unit_test(test_position_past_width),
        cmocka_unit_test(test_duplicates_among_many_rows),
        cmocka_unit_test(test_step_past_allocation_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
