/* The budget scheduler (docs/scheduler.md): under random token budgets,
 * chunk caps, pool sizes, priorities and arrival patterns every request's
 * tokens equal the dense reference (= the request run alone; the toy
 * model's logits hash the exact bits of every key and value a row reads, so
 * equal tokens under seeded sampling mean bit-equal reads), with the
 * engine's checks on before and after every step (both budgets, chunks in
 * order and never twice, blocks held within tokens + lookahead, pools
 * drained); a 4k-token prompt arriving while 8 requests decode does not
 * stall them; a stream of short requests does not starve a long one;
 * priorities order admission and choose the preemption victim; the latency
 * records are consistent; prefix caching changes no output and shares only
 * computed blocks; with the checks off, steps and requests allocate nothing
 * after the engine is created. */
#include "base/internal.h"
#include "engine_fixture.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static kvc_engine_request_times times_of(const kvc_engine *e, int64_t id) {
    kvc_engine_request_times t;
    assert_int_equal(kvc_engine_request_times_get(e, id, &t), KVC_OK);
    return t;
}

static void step_ok(kvc_engine *e, kvc_engine_step_result *res) {
    kvc_status st = kvc_engine_step(e, res);
    if (st != KVC_OK) fail_msg("kvc_engine_step: %s %s", kvc_status_str(st), kvc_last_error());
}

/* Latency records of a finished request: ordered, one time per token. */
static void expect_times(const kvc_engine *e, int64_t id) {
    kvc_engine_request_times t = times_of(e, id);
    kvc_engine_request_info info = fix_info(e, id);
    assert_true(t.arrival_step <= t.first_scheduled_step && t.first_scheduled_step <= t.first_token_step &&
                t.first_token_step <= t.finish_step);
    assert_true(t.arrival_ns <= t.first_scheduled_ns && t.first_scheduled_ns <= t.first_token_ns &&
                t.first_token_ns <= t.finish_ns);
    int64_t steps[64], ns[64], n = 0;
    assert_int_equal(kvc_engine_request_token_times(e, id, steps, ns, 64, &n), KVC_OK);
    assert_int_equal(n, info.n_generated);
    assert_true(n <= 64);
    assert_int_equal(steps[0], t.first_token_step);
    assert_int_equal(ns[0], t.first_token_ns);
    assert_int_equal(steps[n - 1], t.finish_step);
    for (int64_t k = 1; k < n; k++) assert_true(steps[k] > steps[k - 1] && ns[k] >= ns[k - 1]);
}

/* One random configuration: requests arrive at random steps with random
 * priorities; every one is checked against the reference when finished. */
static int64_t random_run(uint64_t seed, bool caching, bool check) {
    uint64_t rng = seed;
    const int32_t layers = 1 + (int32_t)(fix_rand(&rng) % 2);
    const int64_t bs = (int64_t[]){1, 2, 4, 16}[fix_rand(&rng) % 4];
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, layers, bs, 3 + (int64_t)(fix_rand(&rng) % 9));
    kvc_engine_model em = toy_engine_model(&m, false);
    const int64_t seqs = 1 + (int64_t)(fix_rand(&rng) % 6), mml = 96;
    kvc_engine_params p = fix_params(mml, seqs);
    p.max_num_batched_tokens = seqs + (int64_t)(fix_rand(&rng) % 40);
    p.long_prefill_token_threshold = fix_rand(&rng) % 2 ? 0 : 1 + (int64_t)(fix_rand(&rng) % 12);
    p.reserved_decode_tokens = (int64_t)(fix_rand(&rng) % 3) * bs;
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    /* about 1.2 to 3 longest requests of KV per layer: preemption happens */
    int64_t positions = (mml + 2 * bs) * (12 + (int64_t)(fix_rand(&rng) % 19)) / 10;
    p.kv_memory_bytes = positions * 2 * TOY_D * (int64_t)sizeof(float) * layers;
    p.max_requests = 3 * seqs;
    p.seed = seed;
    p.prefix_caching = caching;
    p.prefix_salt = seed;
    p.check = check;
    kvc_engine *e = fix_engine(&em, &p);
    uint64_t engine_allocs = 0; /* the library's allocations inside add, step and release */
    int32_t shared[40];         /* caching: prompts start with a random part of this one */
    for (int i = 0; i < 40; i++) shared[i] = (int32_t)(fix_rand(&rng) % FIX_VOCAB);
    enum { N = 40 };
    fix_request q[N];
    int64_t added = 0, done = 0, steps = 0;
    while (done < N) {
        /* 0-3 arrivals before each step while slots last */
        for (int64_t k = (int64_t)(fix_rand(&rng) % 4); k > 0 && added < N; k--) {
            fix_request_random(&q[added], added, &rng, 40, 30, added % 3 == 0);
            q[added].r.priority = (int32_t)(fix_rand(&rng) % 3);
            if (caching) {
                int64_t n_shared = (int64_t)(fix_rand(&rng) % (uint64_t)q[added].r.n_prompt);
                memcpy(q[added].prompt, shared, (size_t)n_shared * sizeof *shared);
            }
            kvci_alloc_fail_at(0);
            kvc_status st = kvc_engine_add_request(e, &q[added].r);
            engine_allocs += kvci_alloc_calls();
            if (st != KVC_OK) break; /* slots full: arrives later */
            added++;
        }
        kvc_engine_step_result res;
        kvci_alloc_fail_at(0);
        step_ok(e, &res);
        engine_allocs += kvci_alloc_calls();
        assert_true(res.n_tokens <= p.max_num_batched_tokens && res.n_rows <= seqs);
        assert_true(++steps < 20000);
        for (int64_t i = 0; i < added; i++) {
            kvc_engine_request_info info;
            if (kvc_engine_request_get(e, i, &info) != KVC_OK || info.state != KVC_REQ_FINISHED) continue;
            fix_expect_reference(e, &m, &q[i].r);
            expect_times(e, i);
            kvci_alloc_fail_at(0);
            assert_int_equal(kvc_engine_request_release(e, i), KVC_OK);
            engine_allocs += kvci_alloc_calls();
            done++;
        }
    }
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    for (int32_t k = 0; k < st.n_keys; k++) assert_int_equal(st.blocks_in_use[k], 0);
    if (!check) assert_int_equal(engine_allocs, 0); /* with checks on, the manager's invariant check has scratch */
    assert_int_equal(kvc_engine_check(e), KVC_OK);
    kvc_engine_destroy(e);
    return st.prefix_hit_tokens;
}

static void test_random_budgets(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 60; seed++) random_run(seed, false, true);
}

/* The same with prefix caching on and shared prompt prefixes: outputs are
 * unchanged by the cache (hits, preemption with recomputation hitting the
 * cache, eviction under the small pools). */
static void test_random_prefix_caching(void **state) {
    (void)state;
    int64_t hit_tokens = 0;
    for (uint64_t seed = 101; seed <= 140; seed++) hit_tokens += random_run(seed, true, true);
    assert_true(hit_tokens > 0);
}

/* With the checks off (as in production), steps and requests allocate
 * nothing once the engine exists: chunking, preemption, prefix caching,
 * sampling, release. */
static void test_steps_allocate_nothing(void **state) {
    (void)state;
    for (uint64_t seed = 201; seed <= 210; seed++) random_run(seed, seed % 2 == 0, false);
}

/* Two requests with one prompt admitted in the same step share nothing (the
 * blocks are not computed yet); a third one after that step hits every full
 * block but the one holding the last prompt token; a request with a cache
 * salt shares only with requests of the same salt. */
static void test_prefix_hit_after_computed(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 2, 4, 6);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(64, 4);
    p.prefix_caching = true;
    p.step_cost_ratio = 0.0; /* whole prompts in one step: d is computed when f arrives */
    kvc_engine *e = fix_engine(&em, &p);
    int32_t prompt[40];
    for (int i = 0; i < 40; i++) prompt[i] = (i * 11 + 5) % FIX_VOCAB;
    kvc_engine_request a = fix_request_over(1, prompt, 40, 6), b = fix_request_over(2, prompt, 40, 6),
                       c = fix_request_over(3, prompt, 40, 6);
    fix_add(e, &a);
    fix_add(e, &b);
    kvc_engine_step_result res;
    step_ok(e, &res);
    assert_int_equal(res.n_prefill_tokens, 80);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.prefix_hit_tokens, 0);
    fix_add(e, &c);
    step_ok(e, &res);
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.prefix_hit_tokens, 36); /* 9 full blocks; the 10th holds token 39 */
    assert_int_equal(st.prefix_query_tokens, 120);
    assert_int_equal(fix_info(e, 3).n_prefix_hit, 36);
    assert_int_equal(fix_info(e, 1).n_prefix_hit, 0);
    assert_int_equal(res.n_prefill_tokens, 4);
    kvc_prefix_stats ps;
    assert_int_equal(kvc_manager_prefix_stats(kvc_engine_manager(e), &ps), KVC_OK);
    assert_int_equal(ps.hits, 1);
    /* salts: another tenant's salt misses, the same salt hits what its
     * tenant computed */
    kvc_engine_request d = fix_request_over(4, prompt, 40, 6), f = fix_request_over(5, prompt, 40, 6);
    d.cache_salt = f.cache_salt = "tenant-b";
    d.cache_salt_len = f.cache_salt_len = 8;
    fix_add(e, &d);
    step_ok(e, &res);
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(fix_info(e, 4).state, KVC_REQ_RUNNING);
    assert_int_equal(st.prefix_hit_tokens, 36); /* d was admitted and missed */
    fix_add(e, &f);
    while (fix_info(e, 5).state == KVC_REQ_WAITING) step_ok(e, &res); /* until a row frees */
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.prefix_hit_tokens, 72); /* f hit d's blocks */
    char long_salt[KVC_ENGINE_SALT_MAX + 1];
    memset(long_salt, 'x', sizeof long_salt);
    kvc_engine_request g = fix_request_over(6, prompt, 4, 1);
    g.cache_salt = long_salt;
    g.cache_salt_len = KVC_ENGINE_SALT_MAX + 1;
    assert_int_equal(kvc_engine_add_request(e, &g), KVC_EINVAL);
    g.cache_salt_len = 0; /* a salt without its length */
    assert_int_equal(kvc_engine_add_request(e, &g), KVC_EINVAL);
    fix_run(e, 100);
    fix_expect_reference(e, &m, &a);
    fix_expect_reference(e, &m, &b);
    fix_expect_reference(e, &m, &c);
    fix_expect_reference(e, &m, &d);
    fix_expect_reference(e, &m, &f);
    kvc_engine_destroy(e);
}

/* 8 requests decode; a 4,096-token prompt arrives; with a 512-token budget
 * (stall-free limit off) it is chunked in over 9 steps while each of the 8
 * gets a token in every step, and the prompt's first token comes when its
 * last chunk ran. */
static void test_long_prompt_does_not_stall(void **state) {
    (void)state;
    enum { LONG = 4096, N_DEC = 8, BUDGET = 512 };
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 2, 16, 64);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(LONG + 64, N_DEC + 1);
    p.max_num_batched_tokens = BUDGET;
    p.step_cost_ratio = 0.0;
    p.max_requests = N_DEC + 1;
    kvc_engine *e = fix_engine(&em, &p);
    int32_t *prompt = malloc(LONG * sizeof *prompt);
    for (int64_t i = 0; i < LONG; i++) prompt[i] = (int32_t)((i * 7 + 3) % FIX_VOCAB);
    kvc_engine_request dec[N_DEC];
    for (int64_t i = 0; i < N_DEC; i++) {
        dec[i] = fix_request_over(i, prompt + 100 * i, 20, 40);
        fix_add(e, &dec[i]);
    }
    kvc_engine_step_result res;
    step_ok(e, &res); /* the 8 prompts */
    step_ok(e, &res); /* a decode step */
    assert_int_equal(res.n_decode_rows, N_DEC);
    kvc_engine_request big = fix_request_over(100, prompt, LONG, 4);
    fix_add(e, &big);
    int64_t chunk_steps = 0;
    while (fix_info(e, 100).n_generated == 0) {
        int64_t before[N_DEC];
        for (int64_t i = 0; i < N_DEC; i++) before[i] = fix_info(e, i).n_generated;
        int64_t cached = fix_info(e, 100).n_cached;
        step_ok(e, &res);
        chunk_steps++;
        assert_int_equal(res.n_decode_rows, N_DEC);
        assert_int_equal(res.n_rows, N_DEC + 1);
        assert_true(res.n_tokens <= BUDGET);
        for (int64_t i = 0; i < N_DEC; i++) assert_int_equal(fix_info(e, i).n_generated, before[i] + 1);
        int64_t now = fix_info(e, 100).n_cached;
        assert_int_equal(now - cached, min64(LONG - cached, BUDGET - N_DEC));
    }
    assert_int_equal(chunk_steps, (LONG + BUDGET - N_DEC - 1) / (BUDGET - N_DEC));
    fix_run(e, 1000);
    for (int64_t i = 0; i < N_DEC; i++) fix_expect_reference(e, &m, &dec[i]);
    fix_expect_reference(e, &m, &big);
    kvc_engine_request_times t = times_of(e, 100);
    assert_int_equal(t.first_token_step - t.first_scheduled_step + 1, chunk_steps);
    free(prompt);
    kvc_engine_destroy(e);
}

/* Cost of a row of n tokens after `start` cached ones (kvc_engine_model's
 * formula), in float64 from the test's own arithmetic. */
static double row_cost(const kvc_engine_model *em, int64_t start, int64_t n) {
    return em->cost_row + em->cost_token * (double)n +
           em->cost_context * ((double)n * (double)start + (double)n * (double)(n + 1) / 2.0);
}

/* The stall-free limit (default step_cost_ratio 2, min_chunk_tokens 4) with
 * a cost model that counts the attention context: 8 requests decode while a
 * 1,500-token prompt is chunked in. Every step gives each of the 8 a token;
 * its chunk costs at most (ratio - 1) x the decode rows, or is the 4-token
 * floor; one more token would break the limit (chunks are as large as
 * allowed); chunks shrink as the prompt's context grows; the outputs equal
 * the reference. */
static void test_stall_free_chunks(void **state) {
    (void)state;
    enum { LONG = 1500, N_DEC = 8, BUDGET = 2048 };
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 2, 16, 64);
    kvc_engine_model em = toy_engine_model(&m, false);
    em.cost_token = 1.0;
    em.cost_row = 3.0;
    em.cost_context = 1.0 / 32.0;
    kvc_engine_params p = fix_params(LONG + 64, N_DEC + 1);
    p.max_num_batched_tokens = BUDGET;
    p.max_requests = N_DEC + 1;
    assert_true(p.step_cost_ratio == 2.0 && p.min_chunk_tokens == 4);
    kvc_engine *e = fix_engine(&em, &p);
    int32_t *prompt = malloc(LONG * sizeof *prompt);
    for (int64_t i = 0; i < LONG; i++) prompt[i] = (int32_t)((i * 5 + 1) % FIX_VOCAB);
    kvc_engine_request dec[N_DEC];
    for (int64_t i = 0; i < N_DEC; i++) {
        dec[i] = fix_request_over(i, prompt + 40 * i, 30 + 60 * i, 400);
        fix_add(e, &dec[i]);
    }
    kvc_engine_step_result res;
    for (int k = 0; k < 3; k++) step_ok(e, &res); /* prompts in, then decode steps */
    assert_int_equal(res.n_decode_rows, N_DEC);
    kvc_engine_request big = fix_request_over(100, prompt, LONG, 4);
    fix_add(e, &big);
    int64_t first_chunk = -1, last_chunk = -1, floor_steps = 0;
    while (fix_info(e, 100).n_generated == 0) {
        int64_t before[N_DEC];
        double decode = 0.0;
        for (int64_t i = 0; i < N_DEC; i++) {
            kvc_engine_request_info info = fix_info(e, i);
            before[i] = info.n_generated;
            decode += row_cost(&em, info.n_cached, 1);
        }
        const int64_t cached = fix_info(e, 100).n_cached;
        step_ok(e, &res);
        assert_int_equal(res.n_decode_rows, N_DEC);
        for (int64_t i = 0; i < N_DEC; i++) assert_int_equal(fix_info(e, i).n_generated, before[i] + 1);
        const int64_t chunk = fix_info(e, 100).n_cached - cached;
        assert_true(chunk >= 1);
        const double allowance = (p.step_cost_ratio - 1.0) * decode;
        if (chunk == p.min_chunk_tokens && row_cost(&em, cached, chunk) > allowance)
            floor_steps++;
        else
            assert_true(row_cost(&em, cached, chunk) <= allowance);
        if (cached + chunk < LONG)
            assert_true(chunk == p.min_chunk_tokens || row_cost(&em, cached, chunk + 1) > allowance);
        if (first_chunk < 0) first_chunk = chunk;
        if (cached + chunk < LONG) last_chunk = chunk;
    }
    assert_true(first_chunk > last_chunk); /* the context makes later tokens dearer */
    assert_true(floor_steps > 0);          /* the deep chunks hit the floor */
    fix_run(e, 2000);
    for (int64_t i = 0; i < N_DEC; i++) fix_expect_reference(e, &m, &dec[i]);
    fix_expect_reference(e, &m, &big);
    free(prompt);
    kvc_engine_destroy(e);
}

/* A stream of short requests keeps arriving (two per step) while a long
 * one waits for a row: nobody who arrived after it is served before it,
 * and it finishes. */
static void test_no_starvation(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(256, 4);
    p.max_num_batched_tokens = 16; /* the long prompt (200) never fits a step whole */
    p.max_requests = 64;
    kvc_engine *e = fix_engine(&em, &p);
    int32_t prompt[200];
    for (int i = 0; i < 200; i++) prompt[i] = (i * 3 + 1) % FIX_VOCAB;
    int64_t next_id = 0, long_id = -1, steps = 0;
    kvc_engine_request r;
    for (; next_id < 4; next_id++) { /* the rows are busy when the long one arrives */
        r = fix_request_over(next_id, prompt + next_id, 3, 12);
        fix_add(e, &r);
    }
    while (long_id < 0 || fix_info(e, long_id).state != KVC_REQ_FINISHED) {
        if (steps == 1) {
            long_id = next_id++;
            r = fix_request_over(long_id, prompt, 200, 3);
            fix_add(e, &r);
        }
        for (int k = 0; k < 2; k++, next_id++) {
            r = fix_request_over(next_id, prompt + next_id % 100, 2 + next_id % 3, 2 + next_id % 5);
            kvc_status st = kvc_engine_add_request(e, &r);
            if (st == KVC_NO_SPACE) break; /* the queue is full: they arrive later */
            assert_int_equal(st, KVC_OK);
        }
        kvc_engine_step_result res;
        step_ok(e, &res);
        /* release finished short requests (keeps slots for the stream); one
         * that arrived after the long one was not served before it */
        for (int64_t id = 0; id < next_id; id++) {
            kvc_engine_request_info info;
            if (id == long_id || kvc_engine_request_get(e, id, &info) != KVC_OK || info.state != KVC_REQ_FINISHED)
                continue;
            if (long_id >= 0 && id > long_id) {
                int64_t first = times_of(e, long_id).first_scheduled_step;
                assert_true(first >= 0 && times_of(e, id).first_scheduled_step >= first);
            }
            assert_int_equal(kvc_engine_request_release(e, id), KVC_OK);
        }
        assert_true(++steps < 200);
    }
    kvc_engine_request_times lt = times_of(e, long_id);
    for (int64_t id = long_id + 1; id < next_id; id++) {
        kvc_engine_request_times t;
        if (kvc_engine_request_times_get(e, id, &t) != KVC_OK) continue; /* never added, or released above */
        assert_true(t.first_scheduled_step < 0 || t.first_scheduled_step >= lt.first_scheduled_step);
    }
    assert_true(lt.first_scheduled_step - lt.arrival_step <= 12); /* a row frees when the first shorts end */
    kvc_engine_destroy(e);
}

/* Priorities: a later request of priority 0 is admitted before earlier ones
 * of priority 1; when blocks run out, the lowest-priority running request
 * is preempted, not the latest. */
static void test_priorities(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(32, 1);
    kvc_engine *e = fix_engine(&em, &p);
    int32_t prompt[12];
    for (int i = 0; i < 12; i++) prompt[i] = (5 * i + 1) % FIX_VOCAB;
    kvc_engine_request a = fix_request_over(1, prompt, 4, 2), b = fix_request_over(2, prompt, 5, 2),
                       c = fix_request_over(3, prompt, 6, 2);
    a.priority = b.priority = 1;
    c.priority = 0;
    fix_add(e, &a);
    fix_add(e, &b);
    fix_add(e, &c);
    kvc_engine_step_result res;
    step_ok(e, &res);
    assert_int_equal(fix_info(e, 3).state, KVC_REQ_RUNNING);
    assert_int_equal(fix_info(e, 1).state, KVC_REQ_WAITING);
    fix_run(e, 100);
    assert_true(times_of(e, 3).first_token_step < times_of(e, 1).first_token_step);
    assert_true(times_of(e, 1).first_token_step < times_of(e, 2).first_token_step);
    kvc_engine_destroy(e);

    /* 8 usable blocks of 4: x (priority 0, arrives last) and y (priority 2)
     * fill them; x's next block preempts y although x arrived later */
    kvc_engine_params q = fix_params(32, 2);
    q.plan = KVC_ENGINE_PLAN_BUDGET;
    q.kv_memory_bytes = 9 * 4 * 2 * TOY_D * (int64_t)sizeof(float);
    e = fix_engine(&em, &q);
    kvc_engine_request y = fix_request_over(10, prompt, 12, 10), x = fix_request_over(11, prompt, 12, 10);
    y.priority = 2;
    x.priority = 0;
    fix_add(e, &y);
    step_ok(e, &res);
    fix_add(e, &x);
    step_ok(e, &res); /* y decodes (a 4th block), x admitted: 3 blocks + 4 = 7, and one left */
    assert_int_equal(fix_info(e, 11).state, KVC_REQ_RUNNING);
    while (fix_info(e, 10).n_preemptions == 0) {
        step_ok(e, &res);
        assert_int_equal(fix_info(e, 11).n_preemptions, 0);
    }
    fix_run(e, 1000);
    fix_expect_reference(e, &m, &x);
    fix_expect_reference(e, &m, &y);
    kvc_engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_budgets),
        cmocka_unit_test(test_random_prefix_caching),
        cmocka_unit_test(test_steps_allocate_nothing),
        cmocka_unit_test(test_prefix_hit_after_computed),
        cmocka_unit_test(test_long_prompt_does_not_stall),
        cmocka_unit_test(test_stall_free_chunks),
        cmocka_unit_test(test_no_starvation),
        cmocka_unit_test(test_priorities),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
