/* Block pool: FIFO reuse, null block, all-or-nothing give (KM 3, KM 8.6). */
#include "kvc_test_util.h"

static void queue_is(const kvc_block_pool *pool, const int32_t *expected, int64_t n) {
    int32_t got[64];
    int64_t n_got = -1;
    assert_int_equal(kvc_block_pool_free_ids(pool, got, 64, &n_got), KVC_OK);
    assert_int_equal(n_got, n);
    assert_int_equal(kvc_block_pool_num_free(pool), n);
    for (int64_t i = 0; i < n; i++) assert_int_equal(got[i], expected[i]);
}

static void test_create_reserves_null_block(void **state) {
    (void)state;
    kvc_block_pool *pool = NULL;
    assert_int_equal(kvc_block_pool_create(4, &pool), KVC_OK);
    queue_is(pool, KVC_IDS(1, 2, 3));
    assert_false(kvc_block_pool_is_free(pool, 0));
    /* a negative capacity is refused as the manager's copies refuse it (it was taken as 0) */
    int32_t ids[4];
    int64_t n = -7;
    assert_int_equal(kvc_block_pool_free_ids(pool, ids, -1, &n), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "cap -1 must be >= 0"));
    assert_int_equal(n, -7);
    kvc_block_pool_destroy(pool);
    assert_int_equal(kvc_block_pool_create(0, &pool), KVC_EINVAL);
    assert_null(pool);
    assert_non_null(strstr(kvc_last_error(), "num_blocks 0"));
    assert_int_equal(kvc_block_pool_create(1, &pool), KVC_OK); /* only the null block */
    assert_int_equal(kvc_block_pool_num_free(pool), 0);
    kvc_block_pool_destroy(pool);
    kvc_block_pool_destroy(NULL);
}

/* KM 8.6 step by step. */
static void test_fifo_and_atomic_double_free(void **state) {
    (void)state;
    kvc_block_pool *pool = NULL;
    assert_int_equal(kvc_block_pool_create(4, &pool), KVC_OK);
    int32_t got[8];
    assert_int_equal(kvc_block_pool_take(pool, 2, got), KVC_OK);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 2);
    queue_is(pool, KVC_IDS(3));
    assert_int_equal(kvc_block_pool_give(pool, KVC_IDS(2, 0)), KVC_OK);
    queue_is(pool, KVC_IDS(3, 2));
    assert_int_equal(kvc_block_pool_give(pool, KVC_IDS(1, 2)), KVC_EDOUBLEFREE);
    assert_non_null(strstr(kvc_last_error(), "block 2"));
    queue_is(pool, KVC_IDS(3, 2)); /* unchanged: 1 was not returned either */
    assert_false(kvc_block_pool_is_free(pool, 1));
    assert_int_equal(kvc_block_pool_take(pool, 5, got), KVC_NO_SPACE);
    queue_is(pool, KVC_IDS(3, 2));
    kvc_block_pool_destroy(pool);
}

static void test_give_rejects_range_and_duplicates_without_change(void **state) {
    (void)state;
    kvc_block_pool *pool = NULL;
    assert_int_equal(kvc_block_pool_create(6, &pool), KVC_OK);
    int32_t got[5];
    assert_int_equal(kvc_block_pool_take(pool, 5, got), KVC_OK);
    queue_is(pool, NULL, 0);
    assert_int_equal(kvc_block_pool_give(pool, KVC_IDS(4, 6)), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "block 6"));
    assert_int_equal(kvc_block_pool_give(pool, KVC_IDS(3, -1)), KVC_ERANGE);
    assert_int_equal(kvc_block_pool_give(pool, KVC_IDS(5, 3, 5)), KVC_EDOUBLEFREE); /* twice in one list */
    queue_is(pool, NULL, 0);
    for (int32_t id = 1; id < 6; id++) assert_false(kvc_block_pool_is_free(pool, id));
    assert_int_equal(kvc_block_pool_give(pool, KVC_IDS(5, 0, 3)), KVC_OK);
    queue_is(pool, KVC_IDS(5, 3));
    assert_int_equal(kvc_block_pool_take(pool, -1, got), KVC_EINVAL);
    assert_int_equal(kvc_block_pool_give(pool, NULL, -2), KVC_EINVAL);
    kvc_block_pool_destroy(pool);
}

/* The ring wraps many times: reuse order stays exactly the free order. */
static void test_ring_wraps_in_order(void **state) {
    (void)state;
    kvc_block_pool *pool = NULL;
    assert_int_equal(kvc_block_pool_create(5, &pool), KVC_OK);
    int32_t got[4];
    for (int round = 0; round < 50; round++) {
        assert_int_equal(kvc_block_pool_take(pool, 3, got), KVC_OK);
        int32_t back[3] = {got[2], got[0], got[1]};
        assert_int_equal(kvc_block_pool_give(pool, back, 3), KVC_OK);
        int32_t q[4];
        int64_t n = 0;
        kvc_block_pool_free_ids(pool, q, 4, &n);
        assert_int_equal(n, 4);
        assert_int_equal(q[1], back[0]);
        assert_int_equal(q[2], back[1]);
        assert_int_equal(q[3], back[2]);
    }
    kvc_block_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_reserves_null_block),
        cmocka_unit_test(test_fifo_and_atomic_double_free),
        cmocka_unit_test(test_give_rejects_range_and_duplicates_without_change),
        cmocka_unit_test(test_ring_wraps_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
