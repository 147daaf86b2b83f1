/* Shared by the runner equivalence tests: run a model through every mode
 * and compare greedy tokens (exact), logits (1e-5 against the no-cache
 * recomputation) and the paged modes among each other (memcmp). */
#ifndef KVC_TESTS_RUNNER_FIXTURE_H
#define KVC_TESTS_RUNNER_FIXTURE_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/runner.h"

typedef struct run_out {
    int32_t *tokens; /* [n, NT] */
    float *logits;   /* [NT, n, V] */
} run_out;

static inline kvc_model *fixture_model(const char *json, uint64_t seed) {
    kvc_model_config cfg;
    if (kvc_model_config_parse(json, "test config", &cfg) != KVC_OK) fail_msg("config: %s", kvc_last_error());
    kvc_model *m = NULL;
    if (kvc_model_create_random(&cfg, seed, &m) != KVC_OK) fail_msg("model: %s", kvc_last_error());
    return m;
}

static inline run_out fixture_run_layout(const kvc_model *m, kvc_runner_mode mode, int64_t bs, bool mla_paged,
                                         kvc_block_layout layout, const int32_t *ids, const int64_t *lens, int64_t n,
                                         int64_t NT, int64_t S) {
    const int64_t V = kvc_model_config_of(m)->vocab_size;
    int64_t maxl = 0;
    for (int64_t b = 0; b < n; b++) maxl = lens[b] > maxl ? lens[b] : maxl;
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = mode;
    p.cache.block_size = bs;
    p.mla_paged = mla_paged;
    p.max_new_tokens = NT;
    p.max_seq_len = S;
    p.cache.kv_layout = layout;
    kvc_runner *r = NULL;
    if (kvc_runner_create(m, &p, n, maxl, &r) != KVC_OK)
        fail_msg("runner mode %d bs %lld: %s", (int)mode, (long long)bs, kvc_last_error());
    run_out o = {calloc((size_t)(n * NT), sizeof(int32_t)), calloc((size_t)(NT * n * V), sizeof(float))};
    assert_non_null(o.tokens);
    assert_non_null(o.logits);
    if (kvc_runner_generate(r, ids, lens, n, o.tokens, o.logits, NULL) != KVC_OK)
        fail_msg("generate mode %d bs %lld: %s", (int)mode, (long long)bs, kvc_last_error());
    kvc_runner_destroy(r);
    return o;
}

static inline run_out fixture_run(const kvc_model *m, kvc_runner_mode mode, int64_t bs, bool mla_paged,
                                  const int32_t *ids, const int64_t *lens, int64_t n, int64_t NT, int64_t S) {
    return fixture_run_layout(m, mode, bs, mla_paged, KVC_BLOCK_BNBSND, ids, lens, n, NT, S);
}

static inline void run_free(run_out *o) {
    free(o->tokens);
    free(o->logits);
}

static inline void expect_close(const run_out *got, const run_out *ref, int64_t n, int64_t NT, int64_t V, double tol,
                                const char *what) {
    for (int64_t i = 0; i < n * NT; i++)
        if (got->tokens[i] != ref->tokens[i])
            fail_msg("%s: token %lld (row %lld, step %lld) is %d, reference %d", what, (long long)i,
                     (long long)(i / NT), (long long)(i % NT), got->tokens[i], ref->tokens[i]);
    double worst = 0.0;
    for (int64_t i = 0; i < NT * n * V; i++) {
        const double d =
            fabs((double)got->logits[i] - (double)ref->logits[i]) / fmax(1.0, fabs((double)ref->logits[i]));
        if (!(d <= tol))
            fail_msg("%s: logit %lld differs by %g (%g vs %g)", what, (long long)i, d, got->logits[i], ref->logits[i]);
        worst = d > worst ? d : worst;
    }
}

/* Mode 2 with keys in lanes (KVC_BLOCK_BNNDBS): close to the recomputation,
 * bitwise the same over block sizes 1, 16 and 128, and each prompt's logits
 * run alone bitwise those of the batch. */
static inline void fixture_lanes(const kvc_model *m, const int32_t *ids, const int64_t *lens, int64_t n, int64_t NT,
                                 const run_out *ref) {
    const int64_t V = kvc_model_config_of(m)->vocab_size, S = 128;
    const int64_t sizes[3] = {1, 16, 128};
    run_out lanes[3];
    for (int i = 0; i < 3; i++) {
        lanes[i] = fixture_run_layout(m, KVC_RUNNER_PAGED, sizes[i], false, KVC_BLOCK_BNNDBS, ids, lens, n, NT, S);
        expect_close(&lanes[i], ref, n, NT, V, 1e-5, "mode 2, keys in lanes");
        if (i > 0 && memcmp(lanes[i].logits, lanes[0].logits, (size_t)(NT * n * V) * sizeof(float)) != 0)
            fail_msg("keys in lanes: logits with block size %lld are not bitwise equal to block size 1",
                     (long long)sizes[i]);
    }
    for (int64_t b = 0, at = 0; b < n; at += lens[b], b++) {
        run_out alone =
            fixture_run_layout(m, KVC_RUNNER_PAGED, 16, false, KVC_BLOCK_BNNDBS, ids + at, lens + b, 1, NT, S);
        for (int64_t t = 0; t < NT; t++)
            if (memcmp(alone.logits + t * V, lanes[1].logits + (t * n + b) * V, (size_t)V * sizeof(float)) != 0)
                fail_msg("keys in lanes: prompt %lld alone differs from its row of the batch at step %lld",
                         (long long)b, (long long)t);
        run_free(&alone);
    }
    for (int i = 0; i < 3; i++) run_free(&lanes[i]);
}

/* Modes 0, 1, 2 (bs 1, 16, 128; token-major blocks and keys in lanes) [and 3
 * over 1 and over 2 with bs 1, 16, 128 for MLA]. */
static inline void fixture_equivalence(const kvc_model *m, const int32_t *ids, const int64_t *lens, int64_t n,
                                       int64_t NT, bool mla) {
    const int64_t V = kvc_model_config_of(m)->vocab_size, S = 128;
    run_out ref = fixture_run(m, KVC_RUNNER_RECOMPUTE, 0, false, ids, lens, n, NT, 0);
    run_out c1 = fixture_run(m, KVC_RUNNER_CONTIGUOUS, 0, false, ids, lens, n, NT, 0);
    expect_close(&c1, &ref, n, NT, V, 1e-5, "mode 1");
    const int64_t sizes[3] = {1, 16, 128};
    run_out paged[3];
    for (int i = 0; i < 3; i++) {
        paged[i] = fixture_run(m, KVC_RUNNER_PAGED, sizes[i], false, ids, lens, n, NT, S);
        expect_close(&paged[i], &ref, n, NT, V, 1e-5, "mode 2");
        if (i > 0 && memcmp(paged[i].logits, paged[0].logits, (size_t)(NT * n * V) * sizeof(float)) != 0)
            fail_msg("mode 2 logits with block size %lld are not bitwise equal to block size 1", (long long)sizes[i]);
    }
    if (mla) {
        run_out l1 = fixture_run(m, KVC_RUNNER_MLA_LATENT, 0, false, ids, lens, n, NT, 0);
        expect_close(&l1, &ref, n, NT, V, 1e-5, "mode 3 over mode 1");
        for (int i = 0; i < 3; i++) {
            run_out l2 = fixture_run(m, KVC_RUNNER_MLA_LATENT, sizes[i], true, ids, lens, n, NT, S);
            expect_close(&l2, &ref, n, NT, V, 1e-5, "mode 3 over mode 2");
            if (memcmp(l2.logits, l1.logits, (size_t)(NT * n * V) * sizeof(float)) != 0)
                fail_msg("mode 3 paged (block size %lld) logits are not bitwise equal to mode 3 contiguous",
                         (long long)sizes[i]);
            run_free(&l2);
        }
        run_free(&l1);
    }
    fixture_lanes(m, ids, lens, n, NT, &ref);
    for (int i = 0; i < 3; i++) run_free(&paged[i]);
    run_free(&c1);
    run_free(&ref);
}

#endif
