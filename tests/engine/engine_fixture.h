/* Helpers of the engine tests: engines over the toy model, random
 * workloads, running to completion and comparing with the dense reference. */
#ifndef KVC_TESTS_ENGINE_FIXTURE_H
#define KVC_TESTS_ENGINE_FIXTURE_H

#include <stdlib.h>

#include "toy_model.h"

#define FIX_VOCAB      32
#define FIX_MAX_PROMPT 64

/* One request of a workload, its prompt stored inline. */
typedef struct fix_request {
    kvc_engine_request r;
    int32_t prompt[FIX_MAX_PROMPT];
    kvc_logit_bias bias[2]; /* a sampled request's logit_bias */
    int32_t stop;           /* and the token its min_tokens holds back beside EOS */
} fix_request;

static inline uint64_t fix_rand(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* A request with a random prompt of 1..max_prompt tokens, 1..max_new new
 * tokens, EOS 3 and, when `sampled`, temperature sampling with its own seed
 * and, from that seed, random penalties, logit bias, min_p and min_tokens. */
static inline void fix_request_random(fix_request *q, int64_t id, uint64_t *rng, int64_t max_prompt, int64_t max_new,
                                      bool sampled) {
    q->r = kvc_engine_request_default();
    q->r.id = id;
    q->r.n_prompt = 1 + (int64_t)(fix_rand(rng) % (uint64_t)max_prompt);
    for (int64_t i = 0; i < q->r.n_prompt; i++) q->prompt[i] = (int32_t)(fix_rand(rng) % FIX_VOCAB);
    q->r.prompt = q->prompt;
    q->r.max_new_tokens = 1 + (int64_t)(fix_rand(rng) % (uint64_t)max_new);
    q->r.eos_id = 3;
    if (sampled) {
        q->r.sampling.temperature = 0.8f;
        q->r.sampling.top_k = 12;
        q->r.sampling.top_p = 0.9f;
        q->r.sampling.seed = fix_rand(rng);
        kvc_sampling_params *sp = &q->r.sampling;
        uint64_t x = sp->seed; /* the workload's own draws stay as they were */
        sp->presence_penalty = (float)((int)(fix_rand(&x) % 9) - 4) * 0.5f;
        sp->frequency_penalty = (float)((int)(fix_rand(&x) % 9) - 4) * 0.25f;
        sp->repetition_penalty = (float)(fix_rand(&x) % 9) * 0.25f;
        sp->min_p = (float)(fix_rand(&x) % 4) * 0.05f;
        sp->min_tokens = (int64_t)(fix_rand(&x) % 4);
        q->stop = (int32_t)(fix_rand(&x) % FIX_VOCAB);
        sp->min_tokens_ids = &q->stop;
        sp->n_min_tokens_ids = 1;
        for (int i = 0; i < 2; i++)
            q->bias[i] = (kvc_logit_bias){(int32_t)(fix_rand(&x) % FIX_VOCAB), (float)((int)(fix_rand(&x) % 21) - 10)};
        sp->logit_bias = q->bias;
        sp->n_logit_bias = 2;
    }
}

/* A greedy request over a caller-owned prompt. */
static inline kvc_engine_request fix_request_over(int64_t id, const int32_t *prompt, int64_t n_prompt,
                                                  int64_t max_new) {
    kvc_engine_request r = kvc_engine_request_default();
    r.id = id;
    r.prompt = prompt;
    r.n_prompt = n_prompt;
    r.max_new_tokens = max_new;
    return r;
}

static inline kvc_engine_request_info fix_info(const kvc_engine *e, int64_t id) {
    kvc_engine_request_info info;
    assert_int_equal(kvc_engine_request_get(e, id, &info), KVC_OK);
    return info;
}

/* Test params: checks on, no decode reservation. */
static inline kvc_engine_params fix_params(int64_t max_model_len, int64_t max_num_seqs) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = max_model_len;
    p.max_num_seqs = max_num_seqs;
    p.reserved_decode_tokens = 0;
    p.check = true;
    return p;
}

static inline kvc_engine *fix_engine(const kvc_engine_model *model, const kvc_engine_params *p) {
    kvc_engine *e = NULL;
    kvc_status st = kvc_engine_create(model, p, &e);
    if (st != KVC_OK) fail_msg("kvc_engine_create: %s %s", kvc_status_str(st), kvc_last_error());
    return e;
}

/* Steps until idle (at most max_steps), every step succeeding. */
static inline void fix_run(kvc_engine *e, int64_t max_steps) {
    for (int64_t i = 0; i < max_steps; i++) {
        kvc_engine_step_result res;
        kvc_status st = kvc_engine_step(e, &res);
        if (st != KVC_OK) fail_msg("kvc_engine_step: %s %s", kvc_status_str(st), kvc_last_error());
        if (res.idle) return;
    }
    fail_msg("engine still busy after %lld steps", (long long)max_steps);
}

static inline void fix_add(kvc_engine *e, const kvc_engine_request *r) {
    kvc_status st = kvc_engine_add_request(e, r);
    if (st != KVC_OK) fail_msg("add request %lld: %s %s", (long long)r->id, kvc_status_str(st), kvc_last_error());
}

/* Asserts the engine's finished output of r equals the dense reference. */
static inline void fix_expect_reference(const kvc_engine *e, const toy_model *m, const kvc_engine_request *r) {
    const kvc_engine_params *p = kvc_engine_params_of(e);
    int32_t *hist = malloc((size_t)(p->max_model_len + 1) * sizeof *hist);
    int32_t *want = malloc((size_t)r->max_new_tokens * sizeof *want);
    int32_t *got = malloc((size_t)r->max_new_tokens * sizeof *got);
    float logits[FIX_VOCAB];
    kvc_sampler *s = NULL;
    assert_int_equal(kvc_sampler_create(m->vocab, &s), KVC_OK);
    int64_t n_want = toy_reference_generate(m, s, r, p->max_model_len, p->seed, hist, logits, want);
    kvc_engine_request_info info;
    assert_int_equal(kvc_engine_request_get(e, r->id, &info), KVC_OK);
    assert_int_equal(info.state, KVC_REQ_FINISHED);
    int64_t n_got = -1;
    assert_int_equal(kvc_engine_request_output(e, r->id, got, r->max_new_tokens, &n_got), KVC_OK);
    int64_t same = 0;
    while (same < n_got && same < n_want && got[same] == want[same]) same++;
    if (n_got != n_want || same != n_want)
        fail_msg("request %lld: %lld tokens generated, reference %lld (first difference at %lld)", (long long)r->id,
                 (long long)n_got, (long long)n_want, (long long)same);
    kvc_sampler_destroy(s);
    free(hist);
    free(want);
    free(got);
}

/* Adds n random requests (ids 0..n-1, prompts of 1..30 tokens, 1..16 new
 * ones, every third one sampled; random from `seed`), runs them to
 * completion, checks each against the dense reference and copies its tokens
 * into out [n, 16] (0xff past a request's end). */
static inline void fix_run_random(kvc_engine *e, const toy_model *m, int64_t n, uint64_t seed, int32_t *out) {
    fix_request *q = calloc((size_t)n, sizeof *q);
    assert_non_null(q);
    for (int64_t i = 0; i < n; i++) {
        fix_request_random(&q[i], i, &seed, 30, 16, i % 3 == 0);
        fix_add(e, &q[i].r);
    }
    fix_run(e, 10000);
    for (int64_t i = 0; i < n; i++) {
        fix_expect_reference(e, m, &q[i].r);
        int64_t got = 0;
        memset(out + i * 16, 0xff, 16 * sizeof *out);
        assert_int_equal(kvc_engine_request_output(e, i, out + i * 16, 16, &got), KVC_OK);
    }
    free(q);
}

#endif /* KVC_TESTS_ENGINE_FIXTURE_H */
