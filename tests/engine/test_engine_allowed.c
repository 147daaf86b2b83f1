/* kvc_engine_set_allowed_tokens: masked tokens are never sampled at any
 * temperature (logit_bias pushing them included), greedy takes the best
 * allowed token of the dense reference, a mask binds its own request's next
 * sampled token only (not a neighbour in the batch, not the slot's next
 * request, not the token after), an empty mask ends the request with
 * KVC_FINISH_NO_ALLOWED_TOKEN while the others go on, and bad calls are
 * refused with the request unchanged. */
#include <math.h>

#include "engine_fixture.h"

#define WORDS(v) (((v) + 31) / 32)

static void allow_only(uint32_t *mask, int64_t vocab, const int32_t *ids, int n) {
    memset(mask, 0, (size_t)WORDS(vocab) * sizeof *mask);
    for (int i = 0; i < n; i++) mask[ids[i] / 32] |= 1u << (ids[i] % 32);
}

static bool allowed(const uint32_t *mask, int32_t t) { return (mask[t / 32] >> (t % 32)) & 1u; }

/* A managed engine (max_model_len 64, checks on) over a one-layer toy model of vocab tokens, block size 4. */
static kvc_engine *engine_over(toy_model *m, int64_t vocab, int64_t max_num_seqs) {
    toy_init_managed(m, vocab, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(m, false);
    kvc_engine_params p = fix_params(64, max_num_seqs);
    return fix_engine(&em, &p);
}

static void set_mask(kvc_engine *e, int64_t id, const uint32_t *mask, int64_t n_words) {
    kvc_status st = kvc_engine_set_allowed_tokens(e, id, mask, n_words);
    if (st != KVC_OK) fail_msg("set_allowed_tokens %lld: %s %s", (long long)id, kvc_status_str(st), kvc_last_error());
}

/* Every request samples under its own mask (re-set before every step) at temperatures from greedy to 100,
 * with logit_bias +100 on a masked token: every token it generates is one of its allowed ones. */
static void test_masked_never_sampled(void **state) {
    (void)state;
    toy_model m;
    kvc_engine *e = engine_over(&m, FIX_VOCAB, 4);
    const float temps[] = {0.0f, 0.5f, 1.0f, 5.0f, 100.0f};
    const int32_t prompt[] = {1, 2, 3, 4, 5};
    const int32_t ids[5][3] = {{3, 17, 30}, {0, 31, 16}, {9, 10, 11}, {20, 21, 22}, {7, 8, 29}};
    uint32_t masks[5][WORDS(FIX_VOCAB)];
    for (int64_t round = 0; round < 8; round++) {
        for (int i = 0; i < 5; i++) {
            kvc_engine_request r = fix_request_over(round * 5 + i, prompt, 5, 12);
            r.sampling.temperature = temps[i];
            r.sampling.seed = (uint64_t)round;
            kvc_logit_bias bias = {(ids[i][0] + 1) % FIX_VOCAB, 100.0f}; /* not allowed: none of the ids are adjacent */
            r.sampling.logit_bias = &bias;
            r.sampling.n_logit_bias = 1;
            fix_add(e, &r);
            allow_only(masks[i], FIX_VOCAB, ids[i], 3);
        }
        for (int64_t s = 0; s < 200; s++) {
            for (int i = 0; i < 5; i++)
                if (fix_info(e, round * 5 + i).state != KVC_REQ_FINISHED)
                    set_mask(e, round * 5 + i, masks[i], WORDS(FIX_VOCAB));
            kvc_engine_step_result res;
            assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
            if (res.idle) break;
        }
        for (int i = 0; i < 5; i++) {
            int32_t out[12];
            int64_t n = 0;
            assert_int_equal(kvc_engine_request_output(e, round * 5 + i, out, 12, &n), KVC_OK);
            assert_int_equal(n, 12);
            for (int64_t k = 0; k < n; k++)
                if (!allowed(masks[i], out[k]))
                    fail_msg("request %lld (temperature %g) sampled masked token %d", (long long)(round * 5 + i),
                             (double)temps[i], out[k]);
            assert_int_equal(kvc_engine_request_release(e, round * 5 + i), KVC_OK);
        }
    }
    kvc_engine_destroy(e);
}

/* Greedy under a mask takes the best allowed token of the dense reference logits, token after token, while an
 * unmasked neighbour in the same batch generates exactly its unmasked reference. */
static void test_greedy_best_allowed_one_request_only(void **state) {
    (void)state;
    toy_model m;
    kvc_engine *e = engine_over(&m, FIX_VOCAB, 4);
    const int32_t prompt[] = {4, 8, 15, 16, 23, 42 % FIX_VOCAB};
    kvc_engine_request masked = fix_request_over(1, prompt, 6, 10), plain = fix_request_over(2, prompt, 6, 10);
    fix_add(e, &masked);
    fix_add(e, &plain);
    int32_t hist[64];
    memcpy(hist, prompt, sizeof prompt);
    int64_t n = 6;
    float logits[FIX_VOCAB];
    uint32_t mask[WORDS(FIX_VOCAB)];
    for (int64_t k = 0; k < 10; k++) {
        /* allow the even tokens at even k, the odd ones at odd k: the unmasked argmax is refused half the time */
        memset(mask, 0, sizeof mask);
        for (int32_t t = (int32_t)(k % 2); t < FIX_VOCAB; t += 2) mask[0] |= 1u << t;
        set_mask(e, 1, mask, WORDS(FIX_VOCAB));
        kvc_engine_step_result res;
        assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
        toy_reference_logits(&m, hist, n, logits);
        int32_t want = -1;
        for (int32_t t = 0; t < FIX_VOCAB; t++)
            if (allowed(mask, t) && (want < 0 || logits[t] > logits[want])) want = t;
        int32_t out[10];
        int64_t got = 0;
        assert_int_equal(kvc_engine_request_output(e, 1, out, 10, &got), KVC_OK);
        assert_int_equal(got, k + 1);
        assert_int_equal(out[k], want);
        hist[n++] = want;
    }
    fix_run(e, 100);
    fix_expect_reference(e, &m, &plain); /* the neighbour never saw request 1's mask */
    assert_int_equal(fix_info(e, 1).finish, KVC_FINISH_MAX_NEW);
    kvc_engine_destroy(e);
}

/* A mask binds the next sampled token only, however many prompt chunks come first; one left pending when its
 * request is released does not reach the slot's next request. */
static void test_one_token_no_leak(void **state) {
    (void)state;
    toy_model m;
    toy_init_managed(&m, FIX_VOCAB, 1, 4, 0);
    kvc_engine_model em = toy_engine_model(&m, false);
    kvc_engine_params p = fix_params(64, 2);
    p.max_num_batched_tokens = 4; /* a prompt of 20 tokens takes 5 steps */
    p.max_requests = 1;           /* one slot: request 8 reuses request 7's */
    kvc_engine *e = fix_engine(&em, &p);
    int32_t prompt[20];
    for (int i = 0; i < 20; i++) prompt[i] = (i * 7 + 3) % FIX_VOCAB;
    kvc_engine_request r = fix_request_over(7, prompt, 20, 4);
    fix_add(e, &r);
    float logits[FIX_VOCAB];
    toy_reference_logits(&m, prompt, 20, logits);
    const int32_t best = kvc_sample_greedy(logits, FIX_VOCAB), other = (best + 1) % FIX_VOCAB;
    uint32_t mask[WORDS(FIX_VOCAB)];
    allow_only(mask, FIX_VOCAB, &other, 1);
    set_mask(e, 7, mask, WORDS(FIX_VOCAB));
    fix_run(e, 100);
    int32_t out[4];
    int64_t n = 0;
    assert_int_equal(kvc_engine_request_output(e, 7, out, 4, &n), KVC_OK);
    assert_int_equal(n, 4);
    assert_int_equal(out[0], other); /* after 5 steps of prompt chunks */
    int32_t hist[24];
    memcpy(hist, prompt, sizeof prompt);
    hist[20] = other;
    toy_reference_logits(&m, hist, 21, logits);
    assert_int_equal(out[1], kvc_sample_greedy(logits, FIX_VOCAB)); /* the next token is free again */
    assert_int_equal(kvc_engine_request_release(e, 7), KVC_OK);

    kvc_engine_request again = fix_request_over(7, prompt, 20, 4);
    fix_add(e, &again);
    set_mask(e, 7, mask, WORDS(FIX_VOCAB)); /* pending when released */
    assert_int_equal(kvc_engine_request_release(e, 7), KVC_OK);
    kvc_engine_request next = fix_request_over(8, prompt, 20, 4);
    fix_add(e, &next);
    fix_run(e, 100);
    fix_expect_reference(e, &m, &next);
    kvc_engine_destroy(e);
}

/* An empty mask, or one whose only token min_tokens holds back, ends its request with
 * KVC_FINISH_NO_ALLOWED_TOKEN, nothing appended and its blocks freed; the batch goes on. */
static void test_nothing_allowed(void **state) {
    (void)state;
    toy_model m;
    kvc_engine *e = engine_over(&m, FIX_VOCAB, 4);
    const int32_t prompt[] = {9, 9, 9};
    kvc_engine_request empty = fix_request_over(1, prompt, 3, 5), held = fix_request_over(2, prompt, 3, 5),
                       plain = fix_request_over(3, prompt, 3, 5);
    held.eos_id = 6;
    held.sampling.min_tokens = 3;
    held.sampling.temperature = 1.0f;
    fix_add(e, &empty);
    fix_add(e, &held);
    fix_add(e, &plain);
    uint32_t none[WORDS(FIX_VOCAB)] = {0}, eos_only[WORDS(FIX_VOCAB)];
    allow_only(eos_only, FIX_VOCAB, &held.eos_id, 1);
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK); /* one token each, unmasked */
    set_mask(e, 1, none, WORDS(FIX_VOCAB));
    set_mask(e, 2, eos_only, WORDS(FIX_VOCAB));
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    assert_int_equal(res.n_finished, 2);
    for (int64_t id = 1; id <= 2; id++) {
        kvc_engine_request_info info = fix_info(e, id);
        assert_int_equal(info.state, KVC_REQ_FINISHED);
        assert_int_equal(info.finish, KVC_FINISH_NO_ALLOWED_TOKEN);
        assert_int_equal(info.n_generated, 1);
    }
    assert_string_equal(kvc_engine_finish_reason_name(KVC_FINISH_NO_ALLOWED_TOKEN), "no_allowed_token");
    fix_run(e, 100);
    fix_expect_reference(e, &m, &plain);
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    assert_int_equal(st.blocks_in_use[0], 0);
    assert_int_equal(kvc_engine_check(e), KVC_OK);
    kvc_engine_destroy(e);
}

/* Refusals leave the request as it was: a wrong word count, bits past the vocabulary (37 tokens: 27 bits of
 * the second word are past it), an unknown id, a finished request; NULL drops a pending mask. */
static void test_refusals(void **state) {
    (void)state;
    toy_model m;
    kvc_engine *e = engine_over(&m, 37, 2);
    const int32_t prompt[] = {1, 2};
    kvc_engine_request r = fix_request_over(5, prompt, 2, 3);
    fix_add(e, &r);
    uint32_t mask[3] = {0, 0, 0};
    const int32_t only = 36;
    allow_only(mask, 37, &only, 1);
    assert_int_equal(kvc_engine_set_allowed_tokens(e, 5, mask, 1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "n_words 1"));
    assert_int_equal(kvc_engine_set_allowed_tokens(e, 5, mask, 3), KVC_EINVAL);
    mask[1] |= 1u << 5; /* token 37 */
    assert_int_equal(kvc_engine_set_allowed_tokens(e, 5, mask, 2), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "vocabulary size 37"));
    mask[1] = 1u << 4; /* token 36 only */
    assert_int_equal(kvc_engine_set_allowed_tokens(e, 6, mask, 2), KVC_EINVAL);
    assert_int_equal(kvc_engine_set_allowed_tokens(NULL, 5, mask, 2), KVC_EINVAL);
    /* nothing was set by the refusals: the first token is the unmasked one */
    kvc_engine_step_result res;
    assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
    float logits[37];
    toy_reference_logits(&m, prompt, 2, logits);
    int32_t out[3];
    int64_t n = 0;
    assert_int_equal(kvc_engine_request_output(e, 5, out, 3, &n), KVC_OK);
    assert_int_equal(out[0], kvc_sample_greedy(logits, 37));
    assert_true(out[0] != 36); /* else the check above proves nothing */
    set_mask(e, 5, mask, 2);
    set_mask(e, 5, NULL, 0); /* dropped again: the next tokens are the unmasked greedy ones */
    fix_run(e, 100);
    assert_int_equal(kvc_engine_request_output(e, 5, out, 3, &n), KVC_OK);
    assert_int_equal(n, 3);
    int32_t hist[5] = {1, 2, out[0], out[1], out[2]};
    for (int64_t k = 1; k < 3; k++) {
        toy_reference_logits(&m, hist, 2 + k, logits); /* fix_expect_reference is for FIX_VOCAB tokens */
        assert_int_equal(out[k], kvc_sample_greedy(logits, 37));
    }
    assert_int_equal(kvc_engine_set_allowed_tokens(e, 5, mask, 2), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "finished"));
    kvc_engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_masked_never_sampled),
        cmocka_unit_test(test_greedy_best_allowed_one_request_only),
        cmocka_unit_test(test_one_token_no_leak),
        cmocka_unit_test(test_nothing_allowed),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
