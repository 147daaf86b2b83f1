/* Engine: request lifecycle, batched outputs equal to the dense reference
 * and to each request run alone (block sizes 1..128, one or two managers),
 * refusals of bad input while other requests keep being served, creation
 * refusals, recovery from a failing forward, the max_model_len stop; tensor-parallel replicas (kvc_engine_sync)
 * over an in-memory wire: a follower replays the lead's log to the same outputs, and refuses what it cannot
 * parse or what is not the lead's. */
#include <math.h>

#include "engine_fixture.h"

static void test_lifecycle(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(64, 4);
    kvc_engine *e = fix_engine(&em, &p);
    const int32_t prompt[] = {5, 6, 7};
    kvc_engine_request r = kvc_engine_request_default();
    r.id = 42;
    r.prompt = prompt;
    r.n_prompt = 3;
    r.max_new_tokens = 5;
    fix_add(e, &r);
    kvc_engine_request_info info;
    assert_int_equal(kvc_engine_request_get(e, 42, &info), KVC_OK);
    assert_int_equal(info.state, KVC_REQ_WAITING);

    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    assert_true(res.is_prefill);
    assert_int_equal(res.n_rows, 1);
    assert_int_equal(res.n_tokens, 3);
    assert_int_equal(kvc_engine_request_get(e, 42, &info), KVC_OK);
    assert_int_equal(info.state, KVC_REQ_RUNNING);
    assert_int_equal(info.n_cached, 3);
    assert_int_equal(info.n_generated, 1);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.blocks_in_use[0], 1); /* 3 positions, bs 4 */

    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    assert_false(res.is_prefill);
    assert_int_equal(res.n_rows, 1);
    assert_int_equal(kvc_engine_request_get(e, 42, &info), KVC_OK);
    assert_int_equal(info.n_cached, 4);
    fix_run(e, 100);
    fix_expect_reference(e, &m, &r);
    assert_int_equal(kvc_engine_request_get(e, 42, &info), KVC_OK);
    assert_int_equal(info.finish, KVC_FINISH_MAX_NEW);
    assert_int_equal(info.n_generated, 5);
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.blocks_in_use[0], 0);
    assert_int_equal(st.peak_blocks_in_use[0], 2); /* 7 positions at most */
    assert_int_equal(st.n_finished, 1);
    assert_int_equal(st.generated_tokens, 5);

    assert_int_equal(kvc_engine_request_release(e, 42), KVC_OK);
    assert_int_equal(kvc_engine_request_get(e, 42, &info), KVC_EINVAL);
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.n_free_slots, kvc_engine_params_of(e)->max_requests);
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    assert_true(res.idle);
    assert_int_equal(kvc_engine_check(e), KVC_OK);
    kvc_engine_destroy(e);
}

/* Outputs of requests run one at a time in a fresh engine. */
static void run_alone(toy_model *m, const kvc_engine_params *p, const fix_request *q, int64_t n, int32_t *out,
                      int64_t *n_out, int64_t cap) {
    for (int64_t i = 0; i < n; i++) {
        kvc_engine_model em = toy_engine_model(m, false);
        kvc_engine *e = fix_engine(&em, p);
        fix_add(e, &q[i].r);
        fix_run(e, 1000);
        assert_int_equal(kvc_engine_request_output(e, q[i].r.id, out + i * cap, cap, &n_out[i]), KVC_OK);
        kvc_engine_destroy(e);
    }
}

static void test_batched_equals_alone(void **state) {
    (void)state;
    enum { N = 12, CAP = 24 };
    const int64_t block_sizes[] = {1, 4, 16, 128};
    for (int32_t layers = 1; layers <= 2; layers++) {
        for (size_t bi = 0; bi < sizeof block_sizes / sizeof *block_sizes; bi++) {
            toy_model m;
            toy_init_managed(&m, FIX_VOCAB, layers, block_sizes[bi], 5);
            kvc_engine_params p = fix_params(96, 4);
            fix_request q[N];
            uint64_t rng = 7 + (uint64_t)bi;
            for (int64_t i = 0; i < N; i++) fix_request_random(&q[i], 100 + i, &rng, 40, CAP, i % 3 == 2);
            int32_t alone[N * CAP], got[CAP];
            int64_t n_alone[N], n_got = 0;
            if (block_sizes[bi] == 4) run_alone(&m, &p, q, N, alone, n_alone, CAP); /* one live engine per model */
            kvc_engine_model em = toy_engine_model(&m, false);
            kvc_engine *e = fix_engine(&em, &p);
            for (int64_t i = 0; i < N; i++) fix_add(e, &q[i].r);
            fix_run(e, 10000);
            for (int64_t i = 0; i < N; i++) fix_expect_reference(e, &m, &q[i].r);
            if (block_sizes[bi] == 4) {
                for (int64_t i = 0; i < N; i++) {
                    assert_int_equal(kvc_engine_request_output(e, q[i].r.id, got, CAP, &n_got), KVC_OK);
                    assert_int_equal(n_got, n_alone[i]);
                    assert_memory_equal(got, alone + i * CAP, (size_t)n_got * sizeof *got);
                }
            }
            kvc_engine_stats st;
            assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
            assert_int_equal(st.n_keys, layers);
            for (int32_t k = 0; k < st.n_keys; k++) assert_int_equal(st.blocks_in_use[k], 0);
            kvc_engine_destroy(e);
        }
    }
}

static void expect_refused(kvc_engine *e, const kvc_engine_request *r, kvc_status want, const char *needle) {
    kvc_status st = kvc_engine_add_request(e, r);
    if (st != want || strstr(kvc_last_error(), needle) == NULL)
        fail_msg("request %lld: got %s \"%s\", expected %s mentioning \"%s\"", (long long)r->id, kvc_status_str(st),
                 kvc_last_error(), kvc_status_str(want), needle);
}

static void test_bad_input_refused_engine_serves(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(64, 2);
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    p.kv_memory_bytes = 11 * 4 * 2 * TOY_D * 4; /* 11 blocks of 4 tokens (k and v, f32): 40 usable positions */
    p.max_requests = 4;
    kvc_engine *e = fix_engine(&em, &p);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.num_blocks[0], 11);

    fix_request good[2];
    uint64_t rng = 3;
    for (int i = 0; i < 2; i++) fix_request_random(&good[i], i, &rng, 8, 10, false);
    fix_add(e, &good[0].r);
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK); /* request 0 running */

    int32_t prompt[70];
    for (int i = 0; i < 70; i++) prompt[i] = i % FIX_VOCAB;
    kvc_engine_request bad = kvc_engine_request_default();
    bad.id = 9;
    bad.prompt = prompt;
    bad.n_prompt = 0;
    expect_refused(e, &bad, KVC_EINVAL, "empty");
    bad.n_prompt = 65;
    expect_refused(e, &bad, KVC_EINVAL, "longer than max_model_len 64");
    bad.n_prompt = 4;
    bad.id = 0; /* running */
    expect_refused(e, &bad, KVC_EINVAL, "already held");
    bad.id = -3;
    expect_refused(e, &bad, KVC_EINVAL, "must be >= 0");
    bad.id = 9;
    prompt[1] = FIX_VOCAB;
    expect_refused(e, &bad, KVC_EINVAL, "outside the vocabulary");
    prompt[1] = 1;
    bad.eos_id = FIX_VOCAB;
    expect_refused(e, &bad, KVC_EINVAL, "eos_id");
    bad.eos_id = -1;
    bad.sampling.top_p = 2.0f;
    expect_refused(e, &bad, KVC_EINVAL, "top_p");
    bad.sampling.top_p = 1.0f;
    kvc_logit_bias bias = {FIX_VOCAB, 1.0f};
    bad.sampling.logit_bias = &bias;
    bad.sampling.n_logit_bias = 1;
    expect_refused(e, &bad, KVC_EINVAL, "logit_bias[0].token 32 is outside the vocabulary");
    bad.sampling = kvc_sampling_default_params();
    const int32_t stop = FIX_VOCAB;
    bad.sampling.min_tokens_ids = &stop;
    bad.sampling.n_min_tokens_ids = 1;
    expect_refused(e, &bad, KVC_EINVAL, "min_tokens_ids[0] 32");
    bad.sampling = kvc_sampling_default_params();
    bad.sampling.frequency_penalty = 3.0f;
    expect_refused(e, &bad, KVC_EINVAL, "frequency_penalty");
    bad.sampling = kvc_sampling_default_params();
    bad.max_new_tokens = 0;
    expect_refused(e, &bad, KVC_EINVAL, "max_new_tokens");
    /* 30 prompt + 20 new - 1 = 49 positions: 13 blocks > 10 usable */
    bad.n_prompt = 30;
    bad.max_new_tokens = 20;
    expect_refused(e, &bad, KVC_ENOMEM, "usable blocks");
    bad.max_new_tokens = 11; /* 40 positions: exactly fits alone */
    fix_add(e, &bad);
    fix_add(e, &good[1].r);
    fix_request extra;
    fix_request_random(&extra, 77, &rng, 4, 4, false);
    fix_add(e, &extra.r); /* fourth slot */
    extra.r.id = 78;
    expect_refused(e, &extra.r, KVC_NO_SPACE, "request slots");
    fix_run(e, 1000);
    fix_expect_reference(e, &m, &good[0].r);
    fix_expect_reference(e, &m, &good[1].r);
    bad.id = 9;
    fix_expect_reference(e, &m, &bad);
    /* a finished request keeps its id until released */
    expect_refused(e, &good[1].r, KVC_EINVAL, "(finished)");
    assert_int_equal(kvc_engine_request_release(e, good[1].r.id), KVC_OK);
    fix_add(e, &good[1].r);
    fix_run(e, 1000);
    fix_expect_reference(e, &m, &good[1].r);
    assert_int_equal(kvc_engine_request_release(e, 12345), KVC_EINVAL);
    kvc_engine_destroy(e);
}

/* The engine copies logit_bias and min_tokens_ids at submit: the caller's arrays may change after. */
static void test_sampling_arrays_copied(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(32, 2);
    kvc_engine *e = fix_engine(&em, &p);
    const int32_t prompt[] = {1, 2, 3};
    kvc_engine_request r = fix_request_over(5, prompt, 3, 4);
    kvc_logit_bias bias = {7, 100.0f}; /* greedy always takes 7 */
    r.sampling.logit_bias = &bias;
    r.sampling.n_logit_bias = 1;
    fix_add(e, &r);
    bias = (kvc_logit_bias){9, 100.0f};
    fix_run(e, 100);
    int32_t out[4];
    int64_t n = 0;
    assert_int_equal(kvc_engine_request_output(e, 5, out, 4, &n), KVC_OK);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(out[i], 7);
    kvc_engine_destroy(e);
}

static void expect_create_refused(const kvc_engine_model *em, const kvc_engine_params *p, kvc_status want,
                                  const char *needle) {
    kvc_engine *e = NULL;
    kvc_status st = kvc_engine_create(em, p, &e);
    if (st != want || e != NULL || strstr(kvc_last_error(), needle) == NULL)
        fail_msg("create: got %s \"%s\", expected %s mentioning \"%s\"", kvc_status_str(st), kvc_last_error(),
                 kvc_status_str(want), needle);
}

static void test_create_refusals(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(64, 2);
    p.max_model_len = 0;
    expect_create_refused(&em, &p, KVC_EINVAL, "max_model_len");
    p = fix_params(64, 2);
    p.max_num_batched_tokens = 32; /* the prefill-alone scheduler does not chunk */
    p.scheduler = KVC_ENGINE_SCHED_PREFILL_ALONE;
    expect_create_refused(&em, &p, KVC_EINVAL, "max_num_batched_tokens 32");
    p = fix_params(64, 4);
    p.max_num_batched_tokens = 3; /* a step holds every running request's decode token */
    expect_create_refused(&em, &p, KVC_EINVAL, "max_num_seqs 4");
    p = fix_params(64, 2);
    p.max_num_batched_tokens = -1;
    expect_create_refused(&em, &p, KVC_EINVAL, "max_num_batched_tokens -1");
    p = fix_params(64, 2);
    p.long_prefill_token_threshold = -2;
    expect_create_refused(&em, &p, KVC_EINVAL, "long_prefill_token_threshold -2");
    p = fix_params(64, 2);
    p.scheduler = (kvc_engine_scheduler)7;
    expect_create_refused(&em, &p, KVC_EINVAL, "scheduler 7");
    p = fix_params(64, 2);
    p.next_n = 1;
    expect_create_refused(&em, &p, KVC_EINVAL, "next_n");
    p = fix_params(64, 2);
    p.step_cost_ratio = 0.5; /* a step with chunks cannot cost less than its decode rows */
    expect_create_refused(&em, &p, KVC_EINVAL, "step_cost_ratio 0.5");
    p.step_cost_ratio = NAN;
    expect_create_refused(&em, &p, KVC_EINVAL, "step_cost_ratio nan");
    p.step_cost_ratio = 2.0;
    p.min_chunk_tokens = 0;
    expect_create_refused(&em, &p, KVC_EINVAL, "min_chunk_tokens 0");
    p.step_cost_ratio = 0.0; /* the limit off: min_chunk_tokens unused */
    kvc_engine *off = fix_engine(&em, &p);
    kvc_engine_destroy(off);
    p = fix_params(64, 2);
    p.plan = KVC_ENGINE_PLAN_BUDGET;
    expect_create_refused(&em, &p, KVC_EINVAL, "kv_memory_bytes");
    p.kv_memory_bytes = 100; /* not one block */
    expect_create_refused(&em, &p, KVC_ENOMEM, "usable block");
    p = fix_params(64, 2);
    kvc_engine_model bad = em;
    bad.vocab_size = 0;
    expect_create_refused(&bad, &p, KVC_EINVAL, "vocab_size");
    bad = em;
    bad.forward = NULL;
    expect_create_refused(&bad, &p, KVC_EINVAL, "forward");
    bad = em;
    bad.cost_context = -1.0;
    expect_create_refused(&bad, &p, KVC_EINVAL, "cost_context -1");
    bad = em;
    bad.cost_token = INFINITY;
    expect_create_refused(&bad, &p, KVC_EINVAL, "cost_token inf");
    m.entries[0][1].block_size = 0;
    expect_create_refused(&em, &p, KVC_EINVAL, "block_size");
    m.entries[0][1].block_size = 4;
    m.entries[0][0].tensor_setter = NULL;
    expect_create_refused(&em, &p, KVC_EINVAL, "tensor_setter");
    m.entries[0][0].tensor_setter = toy_setter;
    kvc_engine *e = fix_engine(&em, &p);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.num_blocks[0], 16 * 2 + 1); /* offline: cdiv(64, 4) x max_num_seqs + null */
    assert_int_equal(st.kv_bytes, 33 * 4 * TOY_D * 4 * 2);
    assert_non_null(m.cache[0][0]);
    assert_non_null(m.cache[0][1]);
    kvc_engine_destroy(e);
    kvc_engine_destroy(NULL);
}

static void test_forward_failure_recovers(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 2, 4, 6);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(64, 3);
    kvc_engine *e = fix_engine(&em, &p);
    fix_request q[5];
    uint64_t rng = 11;
    for (int i = 0; i < 5; i++) {
        fix_request_random(&q[i], i, &rng, 20, 12, i == 4);
        fix_add(e, &q[i].r);
    }
    m.fail_at_call = 1; /* the first prefill */
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_ERANGE);
    assert_int_equal(kvc_engine_check(e), KVC_OK);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.n_waiting, 5);
    assert_int_equal(st.blocks_in_use[0], 0);
    m.fail_at_call = 4; /* a decode */
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    assert_int_equal(kvc_engine_step(e, &res), KVC_ERANGE);
    assert_int_equal(kvc_engine_check(e), KVC_OK);
    fix_run(e, 1000);
    for (int i = 0; i < 5; i++) fix_expect_reference(e, &m, &q[i].r);
    kvc_engine_destroy(e);
}

static void test_max_model_len_stop(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(16, 2);
    kvc_engine *e = fix_engine(&em, &p);
    int32_t prompt[16];
    for (int i = 0; i < 16; i++) prompt[i] = (i * 5) % FIX_VOCAB;
    kvc_engine_request a = kvc_engine_request_default(), b;
    a.id = 1;
    a.prompt = prompt;
    a.n_prompt = 16; /* the whole cache: one token, then stop */
    a.max_new_tokens = 10;
    b = a;
    b.id = 2;
    b.n_prompt = 14; /* positions 14 and 15 left: three tokens */
    fix_add(e, &a);
    fix_add(e, &b);
    fix_run(e, 100);
    kvc_engine_request_info info;
    assert_int_equal(kvc_engine_request_get(e, 1, &info), KVC_OK);
    assert_int_equal(info.finish, KVC_FINISH_MAX_MODEL_LEN);
    assert_int_equal(info.n_generated, 1);
    assert_int_equal(kvc_engine_request_get(e, 2, &info), KVC_OK);
    assert_int_equal(info.finish, KVC_FINISH_MAX_MODEL_LEN);
    assert_int_equal(info.n_generated, 3);
    fix_expect_reference(e, &m, &a);
    fix_expect_reference(e, &m, &b);
    assert_string_equal(kvc_engine_finish_reason_name(info.finish), "max_model_len");
    kvc_engine_destroy(e);
}

/* ---- replicas: the lead's bcast appends to a wire, the follower's reads it back in order ---- */

typedef struct wire {
    uint8_t bytes[1 << 16];
    int64_t n_put, n_got;
} wire;

static kvc_status wire_send(void *user, void *buf, int64_t n, bool idle) {
    (void)idle;
    wire *w = user;
    assert_true(w->n_put + n <= (int64_t)sizeof w->bytes);
    memcpy(w->bytes + w->n_put, buf, (size_t)n);
    w->n_put += n;
    return KVC_OK;
}

static kvc_status wire_receive(void *user, void *buf, int64_t n, bool idle) {
    (void)idle;
    wire *w = user;
    if (w->n_got + n > w->n_put) return KVC_EINTERNAL; /* nothing more was sent */
    memcpy(buf, w->bytes + w->n_got, (size_t)n);
    w->n_got += n;
    return KVC_OK;
}

static kvc_engine *replica(toy_model *m, wire *w, bool follower, int64_t max_num_seqs) {
    toy_init_managed(m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(m, false);
    kvc_engine_params p = fix_params(64, max_num_seqs);
    p.prefix_caching = true;
    p.sync = (kvc_engine_sync){.bcast = follower ? wire_receive : wire_send, .user = w, .follower = follower};
    return fix_engine(&em, &p);
}

/* Drives a lead through every call it logs: adds (seeded sampling, logit_bias, min_tokens ids, a salt, a
 * priority), masks, a mask dropped, a release of a running request, steps, an idle step, two scoring passes
 * (one before the first log: the follower returns for each, then at the end); records the outputs,
 * destroys the lead (its end); the follower's loop then holds the same outputs after as many steps. */
#define N_REPLICA_REQ 4
static void test_replica_follows_lead(void **state) {
    (void)state;
    static wire w;
    memset(&w, 0, sizeof w);
    toy_model ml, mf;
    kvc_engine *lead = replica(&ml, &w, false, 2), *fol = replica(&mf, &w, true, 2);
    const int32_t prompt[] = {3, 1, 4, 1, 5, 9, 2, 6};
    const int32_t stops[] = {7};
    const kvc_logit_bias bias[] = {{11, 3.0f}, {12, -2.0f}};
    uint32_t mask = 0x0000f0f0u;
    for (int64_t id = 0; id < N_REPLICA_REQ; id++) {
        kvc_engine_request r = fix_request_over(id, prompt, 5 + id, 10);
        r.sampling.temperature = id == 0 ? 0.0f : 0.9f;
        r.sampling.seed = 100 + (uint64_t)id;
        r.sampling.min_tokens = 2, r.sampling.min_tokens_ids = stops, r.sampling.n_min_tokens_ids = 1;
        r.sampling.logit_bias = bias, r.sampling.n_logit_bias = 2;
        r.priority = (int32_t)(id % 2);
        r.cache_salt = id == 2 ? "tenant" : NULL, r.cache_salt_len = id == 2 ? 6 : 0;
        fix_add(lead, &r);
    }
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_sync_score(lead, prompt, 8), KVC_OK); /* before the first log: its sizes wait */
    for (int step = 0; step < 40; step++) {
        if (step == 5) assert_int_equal(kvc_engine_sync_score(lead, prompt, 5), KVC_OK); /* between two steps */
        if (step < 6 && fix_info(lead, 1).state != KVC_REQ_FINISHED)
            assert_int_equal(kvc_engine_set_allowed_tokens(lead, 1, &mask, 1), KVC_OK);
        if (step == 2) {
            assert_int_equal(kvc_engine_set_allowed_tokens(lead, 3, &mask, 1), KVC_OK);
            assert_int_equal(kvc_engine_set_allowed_tokens(lead, 3, NULL, 0), KVC_OK);
        }
        if (step == 3) assert_int_equal(kvc_engine_request_release(lead, 0), KVC_OK); /* aborted while running */
        assert_int_equal(kvc_engine_step(lead, &res), KVC_OK);
    }
    assert_true(res.idle);
    int32_t want[N_REPLICA_REQ][10];
    int64_t n_want[N_REPLICA_REQ] = {0};
    for (int64_t id = 1; id < N_REPLICA_REQ; id++)
        assert_int_equal(kvc_engine_request_output(lead, id, want[id], 10, &n_want[id]), KVC_OK);
    kvc_engine_stats sl, sf;
    assert_int_equal(kvc_engine_get_stats(lead, &sl), KVC_OK);
    kvc_engine_destroy(lead);
    const int64_t n_scored[] = {8, 5, 0}; /* the follower's loop returns for each scoring pass, then at the end */
    for (int i = 0; i < 3; i++) {
        const int32_t *ids = NULL;
        int64_t n = -1;
        assert_int_equal(kvc_engine_follow(fol), KVC_OK);
        assert_int_equal(kvc_engine_follow_score(fol, &ids, &n), KVC_OK);
        assert_int_equal(n, n_scored[i]);
        if (n > 0) assert_memory_equal(ids, prompt, (size_t)n * sizeof *ids);
    }
    assert_int_equal(w.n_got, w.n_put);
    assert_int_equal(kvc_engine_get_stats(fol, &sf), KVC_OK);
    assert_int_equal(sf.steps, sl.steps);
    assert_int_equal(sf.prefix_hit_tokens, sl.prefix_hit_tokens);
    assert_int_not_equal(kvc_engine_request_get(fol, 0, &(kvc_engine_request_info){0}), KVC_OK); /* released */
    for (int64_t id = 1; id < N_REPLICA_REQ; id++) {
        int32_t got[10];
        int64_t n = 0;
        assert_int_equal(kvc_engine_request_output(fol, id, got, 10, &n), KVC_OK);
        assert_int_equal(n, n_want[id]);
        assert_memory_equal(got, want[id], (size_t)n * sizeof *got);
    }
    kvc_engine_destroy(fol);
}

static void expect_follow_refused(kvc_engine *fol, const char *text) {
    assert_int_equal(kvc_engine_follow(fol), KVC_EINVAL);
    if (strstr(kvc_last_error(), text) == NULL) fail_msg("expected \"%s\" in: %s", text, kvc_last_error());
}

/* A follower refuses calls from elsewhere, a log whose header, command or sizes are not the lead's; the
 * BOTH role only; kvc_engine_follow needs a follower. */
static void test_replica_refusals(void **state) {
    (void)state;
    static wire w;
    toy_model ml, mf;
    const int32_t prompt[] = {1, 2, 3};
    kvc_engine_request r = fix_request_over(7, prompt, 3, 4);
    kvc_engine_step_result res;
    struct {
        int64_t at; /* byte of the wire to change (from its end when < 0), after a lead's add and step */
        uint8_t value;
        const char *text;
    } cases[] = {{0, 0x01, "magic"},
                 {4, 9, "kind"},
                 {16, 9, "unknown"},
                 {24, 0x01, "unknown or truncated"}, /* the hello's length */
                 {16 + 16 + 8, 0xff, "max_model_len"},
                 {-8, 0x7f, "add"}}; /* the add's last prompt token: replayed, refused by the engine */
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        memset(&w, 0, sizeof w);
        kvc_engine *lead = replica(&ml, &w, false, 2), *fol = replica(&mf, &w, true, 2);
        fix_add(lead, &r);
        assert_int_equal(kvc_engine_step(lead, &res), KVC_OK);
        w.bytes[cases[c].at >= 0 ? cases[c].at : w.n_put + cases[c].at] ^= cases[c].value;
        expect_follow_refused(fol, cases[c].text);
        kvc_engine_destroy(lead);
        kvc_engine_destroy(fol);
    }
    memset(&w, 0, sizeof w); /* params unlike the lead's */
    kvc_engine *lead = replica(&ml, &w, false, 2), *fol = replica(&mf, &w, true, 3);
    kvc_engine_destroy(lead);
    expect_follow_refused(fol, "max_num_seqs is 3, the lead's 2");
    /* a follower takes no call from elsewhere; a lead or a plain engine does not follow */
    assert_int_equal(kvc_engine_add_request(fol, &r), KVC_EINVAL);
    assert_int_equal(kvc_engine_step(fol, &res), KVC_EINVAL);
    assert_int_equal(kvc_engine_request_release(fol, 7), KVC_EINVAL);
    assert_int_equal(kvc_engine_sync_score(fol, prompt, 3), KVC_EINVAL);
    kvc_engine_destroy(fol);
    memset(&w, 0, sizeof w);
    lead = replica(&ml, &w, false, 2);
    assert_int_equal(kvc_engine_follow(lead), KVC_EINVAL);
    assert_int_equal(kvc_engine_sync_score(lead, prompt, 0), KVC_EINVAL);
    assert_int_equal(kvc_engine_sync_score(lead, prompt, 65), KVC_EINVAL); /* beyond max_model_len 64 */
    kvc_engine_destroy(lead);
    toy_init_managed(&ml, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&ml, false);
    kvc_engine_params p = fix_params(64, 2);
    p.sync = (kvc_engine_sync){.bcast = wire_send, .user = &w};
    p.role = KVC_ENGINE_ROLE_PREFILL;
    kvc_engine *e = NULL;
    assert_int_equal(kvc_engine_create(&em, &p, &e), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "BOTH role"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_batched_equals_alone),
        cmocka_unit_test(test_bad_input_refused_engine_serves),
        cmocka_unit_test(test_sampling_arrays_copied),
        cmocka_unit_test(test_create_refusals),
        cmocka_unit_test(test_forward_failure_recovers),
        cmocka_unit_test(test_max_model_len_stop),
        cmocka_unit_test(test_replica_follows_lead),
        cmocka_unit_test(test_replica_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
