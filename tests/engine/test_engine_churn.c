/* Engine scheduling under a small pool: the most recently admitted request
 * is the one preempted, prefill admission is strict FIFO (a head that does
 * not fit is not overtaken), and the release chain over thousands of
 * requests: every output equals the dense reference (= the request run
 * alone), blocks in use return to zero when the queue drains, and the
 * engine's counters stay flat. */
#include "engine_fixture.h"

/* Params whose BUDGET pool holds n_blocks blocks of 4 tokens (one layer). */
static kvc_engine_params pool_params(int64_t max_model_len, int64_t max_num_seqs, int64_t n_blocks) {
    kvc_engine_params p = fix_params(max_model_len, max_num_seqs);
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = n_blocks * 4 * 2 * TOY_D * (int64_t)sizeof(float);
    return p;
}

static int64_t kvc_max64_test(int64_t a, int64_t b) { return a > b ? a : b; }

static void test_lifo_preemption(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = pool_params(32, 4, 9); /* 8 usable blocks */
    kvc_engine *e = fix_engine(&em, &p);
    int32_t prompt[12];
    for (int i = 0; i < 12; i++) prompt[i] = (7 * i + 1) % FIX_VOCAB;
    kvc_engine_request a = fix_request_over(1, prompt, 12, 20), b = fix_request_over(2, prompt, 12, 20),
                       c = fix_request_over(3, prompt + 4, 8, 5);
    b.sampling.temperature = 1.0f;
    b.sampling.seed = 99;
    fix_add(e, &a);
    fix_add(e, &b);
    fix_add(e, &c);
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK); /* prefill of all three: 3 + 3 + 2 blocks */
    assert_true(res.is_prefill);
    assert_int_equal(res.n_rows, 3);
    assert_int_equal(kvc_manager_num_free(kvc_engine_manager(e), 0), 0);
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK); /* A needs a 4th block: C, admitted last, goes */
    assert_false(res.is_prefill);
    assert_int_equal(res.n_preempted, 1);
    assert_int_equal(res.n_rows, 2);
    kvc_engine_request_info ic = fix_info(e, 3);
    assert_int_equal(ic.state, KVC_REQ_WAITING);
    assert_int_equal(ic.n_cached, 0);
    assert_int_equal(ic.n_preemptions, 1);
    assert_int_equal(ic.n_generated, 1); /* kept: it is recomputed, not regenerated */
    assert_int_equal(fix_info(e, 1).n_preemptions, 0);
    assert_int_equal(fix_info(e, 2).n_preemptions, 0);
    fix_run(e, 1000);
    fix_expect_reference(e, &m, &a);
    fix_expect_reference(e, &m, &b);
    fix_expect_reference(e, &m, &c);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_true(st.preemptions >= 1);
    assert_int_equal(st.blocks_in_use[0], 0);
    assert_int_equal(st.peak_blocks_in_use[0], 8);
    kvc_engine_destroy(e);
}

/* A waiting head that does not fit is not overtaken by a later request that
 * would. The prefill-alone scheduler leaves the head waiting; the budget
 * scheduler admits it with the largest chunk the pool backs (halving 16 ->
 * 8 tokens: two blocks), which leaves nothing for the later one either. */
static void fifo_no_skip(kvc_engine_scheduler sched) {
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = pool_params(32, 4, 9);
    p.scheduler = sched;
    p.step_cost_ratio = 0.0; /* the chunk is sized by the pool alone */
    kvc_engine *e = fix_engine(&em, &p);
    int32_t prompt[20];
    for (int i = 0; i < 20; i++) prompt[i] = (5 * i + 2) % FIX_VOCAB;
    kvc_engine_request a = fix_request_over(1, prompt, 20, 12), b = fix_request_over(2, prompt, 16, 4),
                       d = fix_request_over(3, prompt + 3, 2, 4);
    fix_add(e, &a);
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK); /* A: 5 blocks, 3 free */
    fix_add(e, &b);                                     /* needs 4: does not fit whole */
    fix_add(e, &d);                                     /* needs 1: would fit, but waits behind B */
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK); /* A's decode takes a 6th block */
    if (sched == KVC_ENGINE_SCHED_PREFILL_ALONE) {
        assert_false(res.is_prefill);
        assert_int_equal(res.n_rows, 1);
        assert_int_equal(fix_info(e, 2).state, KVC_REQ_WAITING);
    } else {
        assert_true(res.is_prefill);
        assert_int_equal(res.n_rows, 2);
        assert_int_equal(res.n_decode_rows, 1);
        assert_int_equal(fix_info(e, 2).state, KVC_REQ_RUNNING);
        assert_int_equal(fix_info(e, 2).n_cached, 8);
    }
    assert_int_equal(fix_info(e, 3).state, KVC_REQ_WAITING);
    fix_run(e, 1000);
    fix_expect_reference(e, &m, &a);
    fix_expect_reference(e, &m, &b);
    fix_expect_reference(e, &m, &d);
    kvc_engine_destroy(e);
}

static void test_fifo_no_skip(void **state) {
    (void)state;
    fifo_no_skip(KVC_ENGINE_SCHED_BUDGET);
    fifo_no_skip(KVC_ENGINE_SCHED_PREFILL_ALONE);
}

/* Thousands of requests through a small pool, max_held in flight at once;
 * each finished request is checked against the reference and released. */
static void churn(int32_t layers, int64_t block_size, int64_t n_requests, int64_t reserved) {
    enum { MAX_HELD = 12 };
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, layers, block_size, 7);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = pool_params(48, 6, 0);
    /* room for about one longest request (30 + 20 - 1 positions) plus a block */
    int64_t positions = kvc_max64_test(56, (49 / block_size + 2) * block_size);
    p.kv_memory_bytes = positions * 2 * TOY_D * (int64_t)sizeof(float) * layers;
    p.max_requests = MAX_HELD;
    p.reserved_decode_tokens = reserved;
    p.seed = 1234;
    kvc_engine *e = fix_engine(&em, &p);
    kvc_engine_stats st0;
    assert_int_equal(kvc_engine_get_stats(e, &st0), KVC_OK);
    fix_request *q = calloc(MAX_HELD, sizeof *q);
    int64_t *slot_of = malloc((size_t)MAX_HELD * sizeof *slot_of);
    uint64_t rng = 42 + (uint64_t)block_size;
    int64_t added = 0, done = 0;
    for (int64_t i = 0; i < MAX_HELD; i++) slot_of[i] = -1;
    while (done < n_requests) {
        for (int64_t s = 0; s < MAX_HELD && added < n_requests; s++) {
            if (slot_of[s] >= 0) continue;
            fix_request_random(&q[s], 1000 + added, &rng, 30, 20, added % 4 == 1);
            fix_add(e, &q[s].r);
            slot_of[s] = added++;
        }
        kvc_engine_step_result res;
        kvc_status status = kvc_engine_step(e, &res);
        if (status != KVC_OK) fail_msg("step: %s %s", kvc_status_str(status), kvc_last_error());
        if (res.n_finished == 0) continue;
        for (int64_t s = 0; s < MAX_HELD; s++) {
            if (slot_of[s] < 0) continue;
            kvc_engine_request_info info;
            assert_int_equal(kvc_engine_request_get(e, q[s].r.id, &info), KVC_OK);
            if (info.state != KVC_REQ_FINISHED) continue;
            fix_expect_reference(e, &m, &q[s].r);
            assert_int_equal(kvc_engine_request_release(e, q[s].r.id), KVC_OK);
            slot_of[s] = -1;
            done++;
        }
    }
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_true(st.preemptions > 0); /* the pool really was too small */
    assert_int_equal(st.finished_total, n_requests);
    assert_int_equal(st.n_free_slots, st0.n_free_slots); /* nothing held, nothing leaked */
    assert_int_equal(st.n_waiting + st.n_running + st.n_finished, 0);
    for (int32_t k = 0; k < st.n_keys; k++) {
        assert_int_equal(st.blocks_in_use[k], 0);
        assert_int_equal(st.num_blocks[k], st0.num_blocks[k]);
        assert_true(st.peak_blocks_in_use[k] <= st.num_blocks[k] - 1);
        assert_true(st.peak_blocks_in_use[k] > 0);
    }
    assert_int_equal(kvc_manager_num_live_requests(kvc_engine_manager(e)), 0);
    assert_int_equal(kvc_engine_check(e), KVC_OK);
    free(q);
    free(slot_of);
    kvc_engine_destroy(e);
}

static void test_churn_full_bs4(void **state) {
    (void)state;
    churn(1, 4, 3000, 0);
}

static void test_churn_window_bs1_reserved(void **state) {
    (void)state;
    churn(2, 1, 1500, 2);
}

static void test_churn_bs16(void **state) {
    (void)state;
    churn(1, 16, 1500, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifo_preemption), cmocka_unit_test(test_fifo_no_skip),
        cmocka_unit_test(test_churn_full_bs4),  cmocka_unit_test(test_churn_window_bs1_reserved),
        cmocka_unit_test(test_churn_bs16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
