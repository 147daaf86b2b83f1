/* Sampler: greedy ties, seeded reproducibility, the top-k / top-p / min-p
 * truncation on small hand-made distributions, every draw equal to a
 * reference that sorts the whole vocabulary (random logits with ties, NaN
 * and -inf; random temperature, top-k, top-p and min-p), each logits step
 * (min_tokens, logit_bias, the three penalties) on hand-made logits, and the
 * refusals naming each field. python/tests/test_sampling.py compares every
 * step together with a numpy reference. */
#include <math.h>
#include <stdlib.h>

#include "kvc_test_util.h"

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static kvc_sampler *make(int64_t vocab) {
    kvc_sampler *s = NULL;
    assert_int_equal(kvc_sampler_create(vocab, &s), KVC_OK);
    return s;
}

static kvc_sampling_params params(float temperature, int32_t top_k, float top_p, uint64_t seed) {
    kvc_sampling_params p = kvc_sampling_default_params();
    p.temperature = temperature;
    p.top_k = top_k;
    p.top_p = top_p;
    p.seed = seed;
    return p;
}

/* Counts how often each token is drawn over draws 0..n-1. */
static void histogram(kvc_sampler *s, const float *logits, int64_t vocab, const kvc_sampling_params *p, int64_t n,
                      int64_t *counts) {
    for (int64_t v = 0; v < vocab; v++) counts[v] = 0;
    for (int64_t k = 0; k < n; k++) {
        int32_t tok = -1;
        assert_int_equal(kvc_sampler_sample(s, logits, p, (uint64_t)k, &tok), KVC_OK);
        assert_true(tok >= 0 && tok < vocab);
        counts[tok]++;
    }
}

static void test_greedy_ties_and_nan(void **state) {
    (void)state;
    const float a[] = {1.0f, 3.0f, 3.0f, 2.0f};
    assert_int_equal(kvc_sample_greedy(a, 4), 1);
    const float b[] = {NAN, -1.0f, NAN, -1.0f};
    assert_int_equal(kvc_sample_greedy(b, 4), 1);
    const float c[] = {-INFINITY, -INFINITY};
    assert_int_equal(kvc_sample_greedy(c, 2), 0);
    /* nothing to choose from: -1, not a token id (NULL was dereferenced before) */
    assert_int_equal(kvc_sample_greedy(NULL, 4), -1);
    assert_int_equal(kvc_sample_greedy(c, 0), -1);
    assert_int_equal(kvc_sample_greedy(c, -1), -1);
    assert_int_equal(kvc_sample_greedy(c, (int64_t)INT32_MAX + 1), -1);
    kvc_sampler *s = make(4);
    kvc_sampling_params g = kvc_sampling_default_params();
    int32_t tok = -1;
    assert_int_equal(kvc_sampler_sample(s, a, &g, 7, &tok), KVC_OK);
    assert_int_equal(tok, 1);
    kvc_sampling_params k1 = params(1.0f, 1, 1.0f, 3); /* top_k 1 is greedy too */
    assert_int_equal(kvc_sampler_sample(s, a, &k1, 7, &tok), KVC_OK);
    assert_int_equal(tok, 1);
    kvc_sampler_destroy(s);
}

static void test_seeded_reproducible(void **state) {
    (void)state;
    enum { V = 50, N = 400 };
    float logits[V];
    for (int v = 0; v < V; v++) logits[v] = (float)((v * 37) % 11) * 0.3f;
    kvc_sampler *s = make(V), *s2 = make(V);
    kvc_sampling_params p = params(0.9f, 20, 0.9f, 12345);
    kvc_sampling_params q = params(0.9f, 20, 0.9f, 54321);
    int32_t first[N];
    int64_t same_as_other_seed = 0, distinct = 0;
    for (int k = 0; k < N; k++) {
        assert_int_equal(kvc_sampler_sample(s, logits, &p, (uint64_t)k, &first[k]), KVC_OK);
        int32_t other = -1;
        assert_int_equal(kvc_sampler_sample(s2, logits, &q, (uint64_t)k, &other), KVC_OK);
        same_as_other_seed += other == first[k];
        distinct += k > 0 && first[k] != first[k - 1];
    }
    /* replay in reverse order on the other workspace: a draw depends on (seed, k) only */
    for (int k = N - 1; k >= 0; k--) {
        int32_t again = -1;
        assert_int_equal(kvc_sampler_sample(s2, logits, &p, (uint64_t)k, &again), KVC_OK);
        assert_int_equal(again, first[k]);
    }
    assert_true(same_as_other_seed < N / 2);
    assert_true(distinct > N / 2);
    double mean = 0.0;
    for (uint64_t k = 0; k < 10000; k++) {
        double u = kvc_sample_uniform(99, k);
        assert_true(u >= 0.0 && u < 1.0);
        mean += u / 10000.0;
    }
    assert_true(fabs(mean - 0.5) < 0.02);
    kvc_sampler_destroy(s);
    kvc_sampler_destroy(s2);
}

static void test_top_k_truncation(void **state) {
    (void)state;
    enum { N = 20000 };
    const float logits[] = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f};
    kvc_sampler *s = make(5);
    int64_t c[5];
    kvc_sampling_params p = params(1.0f, 2, 1.0f, 1);
    histogram(s, logits, 5, &p, N, c);
    assert_int_equal(c[0] + c[1] + c[2], 0);
    /* renormalised over {4, 3}: P(4) = e / (e + 1) = 0.731 */
    assert_true(fabs((double)c[4] / N - exp(1.0) / (exp(1.0) + 1.0)) < 0.02);
    /* ties go to the lower id: of four equal logits top_k 2 keeps tokens 0 and 1 */
    const float flat[] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    histogram(s, flat, 5, &p, N, c);
    assert_int_equal(c[2] + c[3] + c[4], 0);
    assert_true(c[0] > N / 3 && c[1] > N / 3);
    /* a low temperature concentrates on the argmax */
    kvc_sampling_params cold = params(0.05f, 0, 1.0f, 2);
    histogram(s, logits, 5, &cold, 2000, c);
    assert_int_equal(c[4], 2000);
    kvc_sampler_destroy(s);
}

static void test_top_p_truncation(void **state) {
    (void)state;
    enum { N = 20000 };
    const double probs[] = {0.05, 0.5, 0.15, 0.3};
    float logits[4];
    for (int v = 0; v < 4; v++) logits[v] = (float)log(probs[v]);
    kvc_sampler *s = make(4);
    int64_t c[4];
    /* 0.5 alone reaches top_p 0.45: only token 1 */
    kvc_sampling_params p = params(1.0f, 0, 0.45f, 5);
    histogram(s, logits, 4, &p, N, c);
    assert_int_equal(c[1], N);
    /* 0.5 + 0.3 = 0.8 reaches 0.75: tokens 1 and 3, renormalised 0.625 / 0.375 */
    p.top_p = 0.75f;
    histogram(s, logits, 4, &p, N, c);
    assert_int_equal(c[0] + c[2], 0);
    assert_true(fabs((double)c[1] / N - 0.625) < 0.02);
    /* 0.9 needs the third token (0.15) but not the fourth */
    p.top_p = 0.9f;
    histogram(s, logits, 4, &p, N, c);
    assert_int_equal(c[0], 0);
    assert_true(fabs((double)c[2] / N - 0.15 / 0.95) < 0.02);
    /* top_p 1: every token, in proportion */
    p.top_p = 1.0f;
    histogram(s, logits, 4, &p, N, c);
    for (int v = 0; v < 4; v++) assert_true(fabs((double)c[v] / N - probs[v]) < 0.02);
    /* top-k first, then top-p on the renormalised set: k 2 keeps {1: 0.625, 3: 0.375}; p 0.6 keeps token 1 */
    kvc_sampling_params kp = params(1.0f, 2, 0.6f, 5);
    histogram(s, logits, 4, &kp, N, c);
    assert_int_equal(c[1], N);
    kvc_sampler_destroy(s);
}

/* The reference: every token sorted by (logit desc, NaN as -inf, then id),
 * weights exp((l - max) / T) in that order, the same sums in the same order
 * as the sampler's definition (kvcache/engine.h), so draws compare exactly. */
static const float *ref_logits;

static float ref_rank(float l) { return isnan(l) ? -INFINITY : l; }

/* exp((l - max) / T), 0 below min_p */
static double ref_w(float l, float mx, double inv_t, float min_p) {
    const double x = exp(((double)ref_rank(l) - (double)mx) * inv_t);
    return x >= (double)min_p ? x : 0.0;
}

static int ref_cmp(const void *pa, const void *pb) {
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    float la = ref_rank(ref_logits[a]), lb = ref_rank(ref_logits[b]);
    if (la != lb) return la > lb ? -1 : 1;
    return (a > b) - (a < b);
}

static int32_t ref_sample(const float *logits, int64_t v, const kvc_sampling_params *p, uint64_t k) {
    int32_t best = kvc_sample_greedy(logits, v);
    float mx = ref_rank(logits[best]);
    if (p->temperature == 0.0f || p->top_k == 1 || !isfinite(mx)) return best;
    int32_t order[256];
    double w[256];
    for (int64_t t = 0; t < v; t++) order[t] = (int32_t)t;
    ref_logits = logits;
    qsort(order, (size_t)v, sizeof *order, ref_cmp);
    const double inv_t = 1.0 / (double)p->temperature, u = kvc_sample_uniform(p->seed, k);
    int64_t kk = p->top_k > 0 && p->top_k < v ? p->top_k : v;
    double total = 0.0;
    for (int64_t j = 0; j < v; j++) w[j] = ref_w(logits[order[j]], mx, inv_t, p->min_p);
    if (kk == v && p->top_p >= 1.0f) { /* nothing cut: the draw walks the ids in order */
        for (int64_t t = 0; t < v; t++) total += ref_w(logits[t], mx, inv_t, p->min_p);
        double target = u * total, acc = 0.0;
        int32_t last = 0;
        for (int64_t t = 0; t < v; t++) {
            double x = ref_w(logits[t], mx, inv_t, p->min_p);
            if (x <= 0.0) continue;
            acc += x;
            last = (int32_t)t;
            if (target < acc) return last;
        }
        return last;
    }
    if (kk < v)
        for (int64_t j = 0; j < kk; j++) total += w[j];
    else
        for (int64_t t = 0; t < v; t++) total += ref_w(logits[t], mx, inv_t, p->min_p);
    double cut = (double)p->top_p * total, kept = 0.0;
    int64_t m = 0;
    while (m < kk) {
        kept += w[m++];
        if (kept >= cut) break;
    }
    double target = u * kept, acc = 0.0;
    for (int64_t j = 0; j < m; j++) {
        acc += w[j];
        if (target < acc) return order[j];
    }
    return order[m - 1];
}

static void test_equals_full_sort(void **state) {
    (void)state;
    uint64_t rng = 7;
    for (int trial = 0; trial < 400; trial++) {
        const int64_t v = 1 + (int64_t)(lcg(&rng) % 256);
        float logits[256];
        for (int64_t t = 0; t < v; t++) {
            uint64_t r = lcg(&rng) % 100;
            logits[t] = r < 3 ? NAN : r < 6 ? -INFINITY : (float)(lcg(&rng) % 24) * 0.25f; /* many ties */
        }
        kvc_sampler *s = make(v);
        for (int draw = 0; draw < 8; draw++) {
            const float temperature = (float)(1 + lcg(&rng) % 20) * 0.1f;
            const int32_t top_k = lcg(&rng) % 3 ? (int32_t)(lcg(&rng) % (uint64_t)(v + 2)) : 0;
            const float top_p = lcg(&rng) % 3 ? (float)(1 + lcg(&rng) % 100) * 0.01f : 1.0f;
            kvc_sampling_params p = params(temperature, top_k, top_p, lcg(&rng));
            p.min_p = lcg(&rng) % 2 ? (float)(lcg(&rng) % 101) * 0.01f : 0.0f;
            int32_t tok = -1;
            assert_int_equal(kvc_sampler_sample(s, logits, &p, (uint64_t)draw, &tok), KVC_OK);
            assert_int_equal(tok, ref_sample(logits, v, &p, (uint64_t)draw));
        }
        kvc_sampler_destroy(s);
    }
}

static void test_refusals(void **state) {
    (void)state;
    kvc_sampler *s = NULL;
    assert_int_equal(kvc_sampler_create(0, &s), KVC_EINVAL);
    assert_null(s);
    s = make(3);
    const float logits[] = {0.0f, 1.0f, 2.0f};
    int32_t tok = -1;
    kvc_sampling_params bad = params(-1.0f, 0, 1.0f, 0);
    assert_int_equal(kvc_sampler_sample(s, logits, &bad, 0, &tok), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "temperature"));
    bad = params(1.0f, -2, 1.0f, 0);
    assert_int_equal(kvc_sampler_sample(s, logits, &bad, 0, &tok), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "top_k"));
    bad = params(1.0f, 0, 0.0f, 0);
    assert_int_equal(kvc_sampler_sample(s, logits, &bad, 0, &tok), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "top_p"));
    bad = params(NAN, 0, 1.0f, 0);
    assert_int_equal(kvc_sampling_params_check(&bad), KVC_EINVAL);
    kvc_sampler_destroy(s);
    kvc_sampler_destroy(NULL);
}

/* Greedy over the logits after each step: min_tokens, logit_bias, then the penalties. */
static void test_logits_steps(void **state) {
    (void)state;
    kvc_sampler *s = make(5);
    const float logits[] = {1.0f, 3.0f, 2.0f, -1.0f, 2.5f};
    kvc_sampling_params p = kvc_sampling_default_params();
    int32_t tok = -1;
    /* logit_bias: +100 forces the worst token, -100 drops the best; the logits are not written */
    const kvc_logit_bias up[] = {{3, 100.0f}}, down[] = {{1, -100.0f}, {4, -1.0f}, {4, -1.0f}};
    p.logit_bias = up;
    p.n_logit_bias = 1;
    assert_int_equal(kvc_sampler_sample(s, logits, &p, 0, &tok), KVC_OK);
    assert_int_equal(tok, 3);
    assert_true(logits[3] == -1.0f);
    p.logit_bias = down; /* token 4's two entries add up: 2.5 - 2 = 0.5 < 2 */
    p.n_logit_bias = 3;
    assert_int_equal(kvc_sampler_sample(s, logits, &p, 0, &tok), KVC_OK);
    assert_int_equal(tok, 2);
    /* min_tokens: token 1 held back while fewer than 2 tokens were generated */
    p = kvc_sampling_default_params();
    const int32_t stop = 1;
    p.min_tokens = 2;
    p.min_tokens_ids = &stop;
    p.n_min_tokens_ids = 1;
    for (uint64_t k = 0; k < 3; k++) {
        assert_int_equal(kvc_sampler_sample(s, logits, &p, k, &tok), KVC_OK);
        assert_int_equal(tok, k < 2 ? 4 : 1);
    }
    /* the generated-token count of sample_tokens is n_tokens - n_prompt */
    const int32_t hist[] = {0, 0, 2};
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, hist, 2, 3, &tok), KVC_OK);
    assert_int_equal(tok, 4);
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, hist, 1, 3, &tok), KVC_OK);
    assert_int_equal(tok, 1);
    /* repetition 2 over prompt and output: 3 / 2 = 1.5 < 2.5 (token 1 seen in the prompt) */
    p = kvc_sampling_default_params();
    p.repetition_penalty = 2.0f;
    const int32_t seen1[] = {1, 1};
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, seen1, 2, 2, &tok), KVC_OK);
    assert_int_equal(tok, 4);
    /* a negative logit is multiplied: -1 * 0.5 = -0.5 > the others pushed below by a bias */
    const kvc_logit_bias sink[] = {{0, -10.0f}, {1, -10.0f}, {2, -10.0f}, {4, -10.0f}};
    p.repetition_penalty = 0.5f;
    p.logit_bias = sink;
    p.n_logit_bias = 4;
    const int32_t seen3[] = {3};
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, seen3, 0, 1, &tok), KVC_OK);
    assert_int_equal(tok, 3);
    /* frequency counts output tokens only: token 1 generated twice, 3 - 2 * 0.3 = 2.4 < 2.5 */
    p = kvc_sampling_default_params();
    p.frequency_penalty = 0.3f;
    const int32_t out11[] = {1, 1, 1};
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, out11, 1, 3, &tok), KVC_OK);
    assert_int_equal(tok, 4);
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, out11, 2, 3, &tok), KVC_OK); /* once: 2.7 */
    assert_int_equal(tok, 1);
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, out11, 3, 3, &tok), KVC_OK); /* prompt only */
    assert_int_equal(tok, 1);
    /* presence counts once: 3 - 0.6 = 2.4 whatever the count; negative penalties raise */
    p = kvc_sampling_default_params();
    p.presence_penalty = 0.6f;
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, out11, 2, 3, &tok), KVC_OK);
    assert_int_equal(tok, 4);
    p.presence_penalty = -2.0f;
    const int32_t out0[] = {0};
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, out0, 0, 1, &tok), KVC_OK);
    assert_int_equal(tok, 0); /* 1 + 2 = 3 ties token 1: the lower id */
    /* the penalties need the tokens: refused without them */
    assert_int_equal(kvc_sampler_sample(s, logits, &p, 0, &tok), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "presence_penalty"));
    kvc_sampler_destroy(s);
}

/* min_p drops the tokens whose probability after the temperature is below min_p x the largest. */
static void test_min_p(void **state) {
    (void)state;
    kvc_sampler *s = make(4);
    /* probabilities relative to the best at T 1: 1, e^-1 = 0.37, e^-2 = 0.14, e^-3 = 0.05 */
    const float logits[] = {0.0f, -1.0f, -2.0f, -3.0f};
    kvc_sampling_params p = params(1.0f, 0, 1.0f, 11);
    p.min_p = 0.2f;
    enum { N = 4000 };
    int64_t c[4];
    histogram(s, logits, 4, &p, N, c);
    assert_true(c[0] > 0 && c[1] > 0);
    assert_int_equal(c[2] + c[3], 0);
    const double p1 = exp(-1.0) / (1.0 + exp(-1.0));
    assert_true(fabs((double)c[1] / N - p1) < 0.03);
    /* after the temperature: at T 2 token 2's relative probability is e^-1 = 0.37 >= 0.25, token 3's
     * e^-1.5 = 0.22 */
    p.temperature = 2.0f;
    p.min_p = 0.25f;
    histogram(s, logits, 4, &p, N, c);
    assert_true(c[2] > 0);
    assert_int_equal(c[3], 0);
    /* with top-p after it: the mass is measured over the kept tokens (1 / 1.37 = 0.73 >= 0.7) */
    p.temperature = 1.0f;
    p.top_p = 0.7f;
    histogram(s, logits, 4, &p, N, c);
    assert_int_equal(c[0], N);
    /* min_p 1 keeps the best tokens only */
    p = params(1.0f, 0, 1.0f, 3);
    p.min_p = 1.0f;
    histogram(s, logits, 4, &p, 200, c);
    assert_int_equal(c[0], 200);
    kvc_sampler_destroy(s);
}

static void test_step_refusals(void **state) {
    (void)state;
    kvc_sampler *s = make(3);
    const float logits[] = {0.0f, 1.0f, 2.0f};
    int32_t tok = -1;
    struct {
        float min_p, pres, freq, rep;
        int64_t min_tokens;
        const char *field;
    } cases[] = {
        {-0.1f, 0, 0, 1, 0, "min_p"},
        {1.5f, 0, 0, 1, 0, "min_p"},
        {NAN, 0, 0, 1, 0, "min_p"},
        {0, 2.5f, 0, 1, 0, "presence_penalty"},
        {0, 0, -2.1f, 1, 0, "frequency_penalty"},
        {0, 0, 0, 2.5f, 0, "repetition_penalty"},
        {0, 0, 0, -1.0f, 0, "repetition_penalty"},
        {0, 0, 0, 1, -1, "min_tokens"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvc_sampling_params p = kvc_sampling_default_params();
        p.min_p = cases[i].min_p;
        p.presence_penalty = cases[i].pres;
        p.frequency_penalty = cases[i].freq;
        p.repetition_penalty = cases[i].rep;
        p.min_tokens = cases[i].min_tokens;
        assert_int_equal(kvc_sampling_params_check(&p), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), cases[i].field));
    }
    kvc_sampling_params p = kvc_sampling_default_params();
    kvc_logit_bias b[] = {{3, 1.0f}};
    p.logit_bias = b;
    p.n_logit_bias = 1;
    assert_int_equal(kvc_sampling_params_check(&p), KVC_OK); /* the vocabulary is the sampler's */
    assert_int_equal(kvc_sampler_sample(s, logits, &p, 0, &tok), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "logit_bias[0].token 3"));
    b[0] = (kvc_logit_bias){-1, 1.0f};
    assert_int_equal(kvc_sampling_params_check(&p), KVC_EINVAL);
    b[0] = (kvc_logit_bias){0, 100.5f};
    assert_int_equal(kvc_sampling_params_check(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "logit_bias[0].bias"));
    p.n_logit_bias = KVC_SAMPLING_MAX_LOGIT_BIAS + 1;
    assert_int_equal(kvc_sampling_params_check(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "n_logit_bias"));
    p = kvc_sampling_default_params();
    const int32_t stop = 3;
    p.min_tokens_ids = &stop;
    assert_int_equal(kvc_sampling_params_check(&p), KVC_EINVAL); /* a pointer without its count */
    p.n_min_tokens_ids = 1;
    assert_int_equal(kvc_sampler_sample(s, logits, &p, 0, &tok), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "min_tokens_ids[0]"));
    p = kvc_sampling_default_params();
    const int32_t hist[] = {0, 5};
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, hist, 1, 2, &tok), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "tokens[1]"));
    assert_int_equal(kvc_sampler_sample_tokens(s, logits, &p, hist, 2, 1, &tok), KVC_EINVAL);
    /* a zero-initialised struct (as callers written before the new fields) is valid: greedy */
    kvc_sampling_params z;
    memset(&z, 0, sizeof z);
    z.top_p = 1.0f;
    assert_int_equal(kvc_sampler_sample(s, logits, &z, 0, &tok), KVC_OK);
    assert_int_equal(tok, 2);
    kvc_sampler_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_ties_and_nan), cmocka_unit_test(test_seeded_reproducible),
        cmocka_unit_test(test_top_k_truncation),    cmocka_unit_test(test_top_p_truncation),
        cmocka_unit_test(test_equals_full_sort),    cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_logits_steps),        cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_step_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
