/* The manager-free row builder kvc_step_rows_begin / _add / _to_metadata:
 * exact values from RM 5 worked numbers (and section 8's speculative
 * window), padding rows, adding in pieces, and every refusal (a refused add
 * leaves the object and its arrays unchanged). */
#include "batch_assert.h"

#define MAX_ROWS   4
#define MAX_TOKENS 12

typedef struct rows_fixture {
    int64_t positions[MAX_TOKENS];
    int64_t kv_pos[MAX_ROWS], seq_lens_q[MAX_ROWS], seq_lens_kv[MAX_ROWS];
    int64_t cu_seq_lens_q[MAX_ROWS], cu_seq_lens_kv[MAX_ROWS];
    kvc_step_rows rs;
} rows_fixture;

/* Arrays filled with a marker value, capacities MAX_ROWS x MAX_TOKENS. */
static void fixture_init(rows_fixture *f) {
    memset(f, 0x5a, sizeof *f);
    f->rs = (kvc_step_rows){.max_rows = MAX_ROWS,
                            .max_tokens = MAX_TOKENS,
                            .positions = f->positions,
                            .kv_pos = f->kv_pos,
                            .seq_lens_q = f->seq_lens_q,
                            .seq_lens_kv = f->seq_lens_kv,
                            .cu_seq_lens_q = f->cu_seq_lens_q,
                            .cu_seq_lens_kv = f->cu_seq_lens_kv};
}

static void expect_rows(const kvc_step_rows *rs, const int64_t *positions, int64_t n_tokens, const int64_t *kv_pos,
                        const int64_t *q, const int64_t *kv, const int64_t *cu_q, const int64_t *cu_kv, int64_t n_rows,
                        int64_t prompt_tokens) {
    assert_int_equal(rs->n_rows, n_rows);
    assert_int_equal(rs->n_tokens, n_tokens);
    assert_int_equal(rs->prompt_tokens, prompt_tokens);
    expect_i64_array(rs->positions, positions, n_tokens, "positions");
    expect_i64_array(rs->kv_pos, kv_pos, n_rows, "kv_pos");
    expect_i64_array(rs->seq_lens_q, q, n_rows, "seq_lens_q");
    expect_i64_array(rs->seq_lens_kv, kv, n_rows, "seq_lens_kv");
    expect_i64_array(rs->cu_seq_lens_q, cu_q, n_rows, "cu_seq_lens_q");
    expect_i64_array(rs->cu_seq_lens_kv, cu_kv, n_rows, "cu_seq_lens_kv");
}

/* RM 5: prompts 5, 2, 3: actual_q = actual_kv = [5,2,3], cu_q = cu_kv = [5,7,10]. */
static void test_prefill_three_requests(void **state) {
    (void)state;
    rows_fixture f;
    fixture_init(&f);
    const kvc_step_request rows[3] = {{0, 0, 5}, {1, 0, 2}, {2, 0, 3}};
    assert_int_equal(kvc_step_rows_begin(&f.rs, true), KVC_OK);
    assert_int_equal(kvc_step_rows_add(&f.rs, rows, 3), KVC_OK);
    assert_true(f.rs.is_prefill);
    expect_rows(&f.rs, I64S(0, 1, 2, 3, 4, 0, 1, 0, 1, 2), 10, I64S(4, 1, 2), I64S(5, 2, 3), I64S(5, 2, 3),
                I64S(5, 7, 10), I64S(5, 7, 10), 3, 10);

    kvc_step_metadata md;
    memset(&md, 0x5a, sizeof md);
    assert_int_equal(kvc_step_rows_to_metadata(&f.rs, &md), KVC_OK);
    assert_true(md.is_prefill);
    assert_int_equal(md.n_rows, 3);
    assert_int_equal(md.n_tokens, 10);
    assert_int_equal(md.prompt_tokens, 10);
    assert_ptr_equal(md.positions, f.positions);
    assert_ptr_equal(md.kv_pos, f.kv_pos);
    assert_ptr_equal(md.seq_lens_q, f.seq_lens_q);
    assert_ptr_equal(md.seq_lens_kv, f.seq_lens_kv);
    assert_ptr_equal(md.cu_seq_lens_q, f.cu_seq_lens_q);
    assert_ptr_equal(md.cu_seq_lens_kv, f.cu_seq_lens_kv);
    assert_int_equal(md.n_keys, 0);
    assert_null(md.keys[0].key);
    assert_null(md.keys[0].block_table);
}

/* RM 5: their first decode padded to 4 rows: actual_q = [1,1,1,1], cu_q =
 * [1,2,3,4], kv_len = [5,2,3,0], actual_kv = [6,3,4,1], cu_kv = [6,9,13,14]. */
static void test_decode_padded(void **state) {
    (void)state;
    rows_fixture f;
    fixture_init(&f);
    const kvc_step_request rows[4] = {{0, 5, 1}, {1, 2, 1}, {2, 3, 1}, {-1, 0, 1}};
    assert_int_equal(kvc_step_rows_begin(&f.rs, false), KVC_OK);
    assert_int_equal(kvc_step_rows_add(&f.rs, rows, 4), KVC_OK);
    assert_false(f.rs.is_prefill);
    expect_rows(&f.rs, I64S(5, 2, 3, 0), 4, I64S(5, 2, 3, 0), I64S(1, 1, 1, 1), I64S(6, 3, 4, 1), I64S(1, 2, 3, 4),
                I64S(6, 9, 13, 14), 4, 0);
}

/* Padding in prefill contributes its own tokens at position 0 as keys too
 * (cu_q == cu_kv) and is not counted in prompt_tokens; its computed_tokens
 * is ignored, even when negative. */
static void test_prefill_padding(void **state) {
    (void)state;
    rows_fixture f;
    fixture_init(&f);
    const kvc_step_request rows[2] = {{7, 0, 3}, {-1, -9, 2}};
    assert_int_equal(kvc_step_rows_begin(&f.rs, true), KVC_OK);
    assert_int_equal(kvc_step_rows_add(&f.rs, rows, 2), KVC_OK);
    expect_rows(&f.rs, I64S(0, 1, 2, 0, 0), 5, I64S(2, 0), I64S(3, 2), I64S(3, 2), I64S(3, 5), I64S(3, 5), 2, 3);
}

/* RM 8, next_n = 1 after the prefill above (computed_len [4,1,2]): kv_len =
 * [6,3,4]; positions [5,6 | 2,3 | 3,4]; actual_q = [2,2,2], cu_q = [2,4,6];
 * actual_kv = [7,4,5], cu_kv = [7,11,16]. Added one row at a time: the same
 * arrays as in one call. */
static void test_speculative_in_pieces(void **state) {
    (void)state;
    rows_fixture f;
    fixture_init(&f);
    const kvc_step_request rows[3] = {{0, 5, 2}, {1, 2, 2}, {2, 3, 2}};
    assert_int_equal(kvc_step_rows_begin(&f.rs, false), KVC_OK);
    for (int i = 0; i < 3; i++) assert_int_equal(kvc_step_rows_add(&f.rs, &rows[i], 1), KVC_OK);
    assert_int_equal(kvc_step_rows_add(&f.rs, NULL, 0), KVC_OK); /* nothing to add */
    expect_rows(&f.rs, I64S(5, 6, 2, 3, 3, 4), 6, I64S(6, 3, 4), I64S(2, 2, 2), I64S(7, 4, 5), I64S(2, 4, 6),
                I64S(7, 11, 16), 3, 0);

    rows_fixture g;
    fixture_init(&g);
    assert_int_equal(kvc_step_rows_begin(&g.rs, false), KVC_OK);
    assert_int_equal(kvc_step_rows_add(&g.rs, rows, 3), KVC_OK);
    assert_memory_equal(g.positions, f.positions, sizeof f.positions);
    assert_memory_equal(g.cu_seq_lens_kv, f.cu_seq_lens_kv, sizeof f.cu_seq_lens_kv);
    assert_memory_equal(g.seq_lens_kv, f.seq_lens_kv, sizeof f.seq_lens_kv);

    /* begin starts the next step from row 0 */
    assert_int_equal(kvc_step_rows_begin(&f.rs, true), KVC_OK);
    assert_int_equal(f.rs.n_rows, 0);
    assert_int_equal(f.rs.n_tokens, 0);
    assert_int_equal(f.rs.prompt_tokens, 0);
}

/* RM 5: two requests of 512 and 256 tokens, later decode with visible
 * lengths 522 and 266: KV [522, 266] direct, Q [1, 2] cumulative. Request
 * ids are not looked up: a repeated id is accepted here. */
static void test_decode_512_256(void **state) {
    (void)state;
    rows_fixture f;
    fixture_init(&f);
    const kvc_step_request rows[2] = {{3, 521, 1}, {3, 265, 1}};
    assert_int_equal(kvc_step_rows_begin(&f.rs, false), KVC_OK);
    assert_int_equal(kvc_step_rows_add(&f.rs, rows, 2), KVC_OK);
    expect_rows(&f.rs, I64S(521, 265), 2, I64S(521, 265), I64S(1, 1), I64S(522, 266), I64S(1, 2), I64S(522, 788), 2, 0);
}

/* A refused add returns `want` naming `needle` and changes nothing. */
static void expect_add_refused(rows_fixture *f, const kvc_step_request *rows, int64_t n, kvc_status want,
                               const char *needle) {
    rows_fixture before;
    memcpy(&before, f, sizeof before);
    expect_failure(kvc_step_rows_add(&f->rs, rows, n), want, needle);
    assert_memory_equal(&f->rs, &before.rs, sizeof before.rs);
    assert_memory_equal(f->positions, before.positions, sizeof before.positions);
    assert_memory_equal(f->kv_pos, before.kv_pos, sizeof before.kv_pos);
    assert_memory_equal(f->seq_lens_q, before.seq_lens_q, sizeof before.seq_lens_q);
    assert_memory_equal(f->seq_lens_kv, before.seq_lens_kv, sizeof before.seq_lens_kv);
    assert_memory_equal(f->cu_seq_lens_q, before.cu_seq_lens_q, sizeof before.cu_seq_lens_q);
    assert_memory_equal(f->cu_seq_lens_kv, before.cu_seq_lens_kv, sizeof before.cu_seq_lens_kv);
}

static void test_begin_refusals(void **state) {
    (void)state;
    rows_fixture f;
    expect_failure(kvc_step_rows_begin(NULL, true), KVC_EINVAL, "rows object is NULL");
    fixture_init(&f);
    f.rs.max_rows = -1;
    expect_failure(kvc_step_rows_begin(&f.rs, true), KVC_EINVAL, "max_rows -1");
    fixture_init(&f);
    f.rs.max_tokens = -2;
    expect_failure(kvc_step_rows_begin(&f.rs, true), KVC_EINVAL, "max_tokens -2");
    fixture_init(&f);
    f.rs.positions = NULL;
    expect_failure(kvc_step_rows_begin(&f.rs, true), KVC_EINVAL, "positions is NULL with max_tokens 12");
    fixture_init(&f);
    f.rs.cu_seq_lens_kv = NULL;
    expect_failure(kvc_step_rows_begin(&f.rs, true), KVC_EINVAL, "must not be NULL with max_rows 4");
    /* zero capacities need no arrays; any row is then past them */
    kvc_step_rows empty = {0};
    assert_int_equal(kvc_step_rows_begin(&empty, false), KVC_OK);
    const kvc_step_request one = {0, 0, 1};
    expect_failure(kvc_step_rows_add(&empty, &one, 1), KVC_ERANGE, "past max_rows 0");
    kvc_step_metadata md;
    expect_failure(kvc_step_rows_to_metadata(NULL, &md), KVC_EINVAL, "must not be NULL");
    expect_failure(kvc_step_rows_to_metadata(&empty, NULL), KVC_EINVAL, "must not be NULL");
}

static void test_add_refusals(void **state) {
    (void)state;
    rows_fixture f;
    fixture_init(&f);
    assert_int_equal(kvc_step_rows_begin(&f.rs, false), KVC_OK);
    const kvc_step_request two[2] = {{0, 4, 2}, {1, 0, 3}};
    assert_int_equal(kvc_step_rows_add(&f.rs, two, 2), KVC_OK); /* 2 rows, 5 tokens, 9 keys so far */

    const kvc_step_request ok = {2, 0, 1};
    expect_failure(kvc_step_rows_add(NULL, &ok, 1), KVC_EINVAL, "rows object is NULL");
    expect_add_refused(&f, NULL, 1, KVC_EINVAL, "rows is NULL with n 1");
    expect_add_refused(&f, &ok, -1, KVC_EINVAL, "n -1");
    const kvc_step_request three[3] = {{2, 0, 1}, {3, 0, 1}, {4, 0, 1}};
    expect_add_refused(&f, three, 3, KVC_ERANGE, "3 rows after 2 bring the step past max_rows 4");
    /* rows are numbered from the step's first row; earlier good rows of the
     * same call are not kept either */
    const kvc_step_request zero[2] = {{2, 0, 1}, {3, 0, 0}};
    expect_add_refused(&f, zero, 2, KVC_EINVAL, "step row 3 (request 3): num_new_tokens 0 must be >= 1");
    const kvc_step_request many = {2, 0, 8};
    expect_add_refused(&f, &many, 1, KVC_ERANGE,
                       "step row 2 (request 2): num_new_tokens 8 brings the step past max_tokens 12 (5 tokens before");
    const kvc_step_request negative = {2, -1, 1};
    expect_add_refused(&f, &negative, 1, KVC_EINVAL, "step row 2 (request 2): computed_tokens -1 must be >= 0");
    const kvc_step_request overflow = {2, INT64_MAX, 1};
    expect_add_refused(&f, &overflow, 1, KVC_ERANGE,
                       "computed_tokens 9223372036854775807 + num_new_tokens 1 overflows");
    const kvc_step_request cumulative = {2, INT64_MAX - 4, 2};
    expect_add_refused(&f, &cumulative, 1, KVC_ERANGE, "step row 2 (request 2): the cumulative KV length overflows");

    /* the struct is the caller's: totals or arrays changed since begin are refused before they index
     * anything (n_rows -2 wrote before kv_pos, a NULL positions was written through) */
    f.rs.n_rows = -2;
    expect_add_refused(&f, &ok, 1, KVC_EINVAL, "the step so far (n_rows -2, n_tokens 5) is not one begin and add");
    f.rs.n_rows = 5;
    expect_add_refused(&f, &ok, 1, KVC_EINVAL, "(n_rows 5, n_tokens 5)");
    f.rs.n_rows = 2, f.rs.n_tokens = -3;
    expect_add_refused(&f, &ok, 1, KVC_EINVAL, "n_tokens -3");
    f.rs.n_tokens = 5, f.rs.prompt_tokens = -1;
    expect_add_refused(&f, &ok, 1, KVC_EINVAL, "is not one begin and add wrote");
    f.rs.prompt_tokens = 0, f.rs.positions = NULL;
    expect_add_refused(&f, &ok, 1, KVC_EINVAL, "kvc_step_rows_add: positions is NULL with max_tokens 12");
    f.rs.positions = f.positions;

    /* still usable: the refused calls left the two rows as they were */
    assert_int_equal(kvc_step_rows_add(&f.rs, three, 2), KVC_OK);
    expect_rows(&f.rs, I64S(4, 5, 0, 1, 2, 0, 0), 7, I64S(5, 2, 0, 0), I64S(2, 3, 1, 1), I64S(6, 3, 1, 1),
                I64S(2, 5, 6, 7), I64S(6, 9, 10, 11), 4, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefill_three_requests), cmocka_unit_test(test_decode_padded),
        cmocka_unit_test(test_prefill_padding),        cmocka_unit_test(test_speculative_in_pieces),
        cmocka_unit_test(test_decode_512_256),         cmocka_unit_test(test_begin_refusals),
        cmocka_unit_test(test_add_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
