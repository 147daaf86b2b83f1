/* The library's one RMSNorm and one RoPE (ops.h): frequency plans (default,
 * llama3, YaRN, longrope) against float64 formulas written here from the HF
 * definitions, cos/sin of a position, the half-split and interleaved
 * rotations over heads in place, the row-wise RMSNorm, and the refusals of
 * unusable plans. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/ops.h"
#include "ops/write_internal.h"

#define PI 3.14159265358979323846

static double rel(double got, double want) { return fabs(got - want) / (fabs(want) + 1e-30); }

static void test_default_frequencies(void **state) {
    (void)state;
    kvc_rope_config r = {.type = KVC_ROPE_DEFAULT, .theta = 10000.0};
    float inv[32], A = 0;
    assert_int_equal(kvc_rope_frequencies(&r, 64, inv, &A), KVC_OK);
    assert_true(A == 1.0f);
    for (int i = 0; i < 32; i++) assert_true(rel(inv[i], pow(10000.0, -2.0 * i / 64.0)) < 1e-6);
}

/* YaRN as the DeepSeek-V3 oracle config states it: rope 16, theta 1e4,
 * factor 40, L0 4096, beta 32 / 1, mscale = mscale_all_dim = 1 (A = 1). */
static void test_yarn_frequencies(void **state) {
    (void)state;
    kvc_rope_config r = {.type = KVC_ROPE_YARN,
                         .theta = 10000.0,
                         .factor = 40.0,
                         .original_max_position = 4096,
                         .beta_fast = 32.0,
                         .beta_slow = 1.0,
                         .mscale = 1.0,
                         .mscale_all_dim = 1.0,
                         .truncate = true};
    const int d = 16;
    float inv[8], A = 0;
    assert_int_equal(kvc_rope_frequencies(&r, d, inv, &A), KVC_OK);
    assert_true(fabs(A - 1.0) < 1e-7);
    double lo = floor(d * log(4096.0 / (32.0 * 2 * PI)) / (2 * log(10000.0)));
    double hi = ceil(d * log(4096.0 / (1.0 * 2 * PI)) / (2 * log(10000.0)));
    if (lo < 0) lo = 0;
    if (hi > d - 1) hi = d - 1;
    for (int i = 0; i < d / 2; i++) {
        double ramp = (i - lo) / (hi - lo);
        ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
        const double base = pow(10000.0, -2.0 * i / d);
        const double want = base / 40.0 * ramp + base * (1.0 - ramp);
        assert_true(rel(inv[i], want) < 1e-6);
    }
    /* without mscale / mscale_all_dim: A = 0.1 ln(f) + 1; an explicit attention_factor wins */
    r.mscale = r.mscale_all_dim = 0.0;
    assert_int_equal(kvc_rope_frequencies(&r, d, inv, &A), KVC_OK);
    assert_true(rel(A, 0.1 * log(40.0) + 1.0) < 1e-6);
    r.attention_factor = 0.75;
    assert_int_equal(kvc_rope_frequencies(&r, d, inv, &A), KVC_OK);
    assert_true(A == 0.75f);
}

static void test_llama3_frequencies(void **state) {
    (void)state;
    kvc_rope_config r = {.type = KVC_ROPE_LLAMA3,
                         .theta = 500000.0,
                         .factor = 8.0,
                         .low_freq_factor = 1.0,
                         .high_freq_factor = 4.0,
                         .original_max_position = 8192};
    float inv[64], A = 0;
    assert_int_equal(kvc_rope_frequencies(&r, 128, inv, &A), KVC_OK);
    assert_true(A == 1.0f);
    int low = 0, mid = 0, high = 0;
    for (int i = 0; i < 64; i++) {
        const double w = (double)(float)(1.0 / pow(500000.0, 2.0 * i / 128.0)), wl = 2 * PI / w;
        double want = w;
        if (wl > 8192.0)
            want = w / 8.0, low++;
        else if (wl >= 2048.0) {
            const double s = (8192.0 / wl - 1.0) / 3.0;
            want = (1 - s) * w / 8.0 + s * w, mid++;
        } else
            high++;
        assert_true(rel(inv[i], want) < 1e-6);
    }
    assert_true(low > 0 && mid > 0 && high > 0); /* all three bands are exercised */
    /* Llama 4 Scout's equal factors (16, 1, 1): no blended band, wavelengths above L0 divided, the rest kept */
    r.factor = 16.0, r.high_freq_factor = 1.0;
    assert_int_equal(kvc_rope_frequencies(&r, 128, inv, &A), KVC_OK);
    low = high = 0;
    for (int i = 0; i < 64; i++) {
        const double w = (double)(float)(1.0 / pow(500000.0, 2.0 * i / 128.0)), wl = 2 * PI / w;
        const bool scaled = wl > 8192.0;
        low += scaled, high += !scaled;
        assert_true(rel(inv[i], scaled ? w / 16.0 : w) < 1e-6);
    }
    assert_true(low > 0 && high > 0);
}

/* linear (position interpolation): the default f32 frequencies divided by the factor in f32, as HF. */
static void test_linear_frequencies(void **state) {
    (void)state;
    kvc_rope_config r = {.type = KVC_ROPE_LINEAR, .theta = 10000.0, .factor = 2.5};
    float inv[32], A = 0;
    assert_int_equal(kvc_rope_frequencies(&r, 64, inv, &A), KVC_OK);
    assert_true(A == 1.0f);
    for (int i = 0; i < 32; i++) {
        const float base = 1.0f / powf(10000.0f, (float)(2 * i) / 64.0f);
        assert_true(inv[i] == base / 2.5f);
        assert_true(rel(inv[i], 1.0 / pow(10000.0, 2.0 * i / 64.0) / 2.5) < 1e-6);
    }
    r.factor = 0.0;
    assert_int_equal(kvc_rope_frequencies(&r, 64, inv, &A), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "rope linear: factor 0"));
    r.type = KVC_ROPE_DYNAMIC;
    r.factor = 2.0;
    assert_int_equal(kvc_rope_frequencies(&r, 64, inv, &A), KVC_EINVAL);
}

/* proportional (LFM3's full layers): the whole head's default frequencies, of which the first floor(share x d / 2)
 * turn (against float64) and the rest are 0 (cos 1, sin 0: those channels pass through unchanged), all divided by
 * the factor; a share outside [0, 1] refused. */
static void test_proportional_frequencies(void **state) {
    (void)state;
    kvc_rope_config r = {.type = KVC_ROPE_PROPORTIONAL, .theta = 1e6, .factor = 1.0, .partial_rotary_factor = 0.3};
    float inv[32], A = 0, cs[64], sn[64], x[64], y[64];
    assert_int_equal(kvc_rope_frequencies(&r, 64, inv, &A), KVC_OK);
    assert_true(A == 1.0f);
    for (int i = 0; i < 32; i++) /* floor(0.3 x 64 / 2) = 9 angles turn */
        assert_true(i < 9 ? rel(inv[i], 1.0 / pow(1e6, 2.0 * i / 64.0)) < 1e-6 : inv[i] == 0.0f);
    kvc_rope_cos_sin(inv, 64, A, 17, cs, sn);
    for (int i = 0; i < 64; i++) x[i] = (float)(i - 20) / 7.0f;
    kvc_rope_half_f32(x, cs, sn, 64, y);
    for (int i = 0; i < 64; i++) assert_true((i % 32 < 9) == (y[i] != x[i]));
    r.factor = 4.0, r.partial_rotary_factor = 0.0; /* 0: the whole head */
    assert_int_equal(kvc_rope_frequencies(&r, 64, inv, &A), KVC_OK);
    for (int i = 0; i < 32; i++) assert_true(inv[i] > 0.0f && rel(inv[i], 1.0 / pow(1e6, 2.0 * i / 64.0) / 4.0) < 1e-6);
    r.partial_rotary_factor = 1.5;
    assert_int_equal(kvc_rope_frequencies(&r, 64, inv, &A), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "rope proportional: partial_rotary_factor 1.5"));
}

static void test_plan_refusals(void **state) {
    (void)state;
    float inv[8], A;
    kvc_rope_config r = {.type = KVC_ROPE_DEFAULT, .theta = 10000.0};
    assert_int_equal(kvc_rope_frequencies(&r, 15, inv, &A), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "rot_dim 15"));
    r.theta = 0;
    assert_int_equal(kvc_rope_frequencies(&r, 16, inv, &A), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "theta"));
    kvc_rope_config y = {.type = KVC_ROPE_YARN,
                         .theta = 10000.0,
                         .factor = 4.0,
                         .original_max_position = 0,
                         .beta_fast = 32,
                         .beta_slow = 1};
    assert_int_equal(kvc_rope_frequencies(&y, 16, inv, &A), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "yarn"));
    kvc_rope_config l = {.type = KVC_ROPE_LLAMA3,
                         .theta = 10000.0,
                         .factor = 8,
                         .low_freq_factor = 4,
                         .high_freq_factor = 1,
                         .original_max_position = 8192};
    assert_int_equal(kvc_rope_frequencies(&l, 16, inv, &A), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "llama3"));
    assert_int_equal(kvc_rope_frequencies(NULL, 16, inv, &A), KVC_EINVAL);
}

/* longrope (Phi-3.5, Phi-4-mini): inv_freq[i] = 1 / (ext[i] theta^(2i/d)), ext the short factors
 * (kvc_rope_frequencies) or the long ones (kvc_rope_frequencies_long), A = sqrt(1 + ln f / ln L0); then a
 * head of 16 whose first 12 dims rotate (partial_rotary_factor 0.75) at position 5000 (beyond L0) with the
 * long factors, against the float64 formula, its last 4 dims untouched; refusals: factor counts that are
 * not rot_dim / 2, a non-positive factor, the long factors of another type. */
static void test_longrope_frequencies(void **state) {
    (void)state;
    enum { ROT = 12, D = 16 };
    kvc_rope_config r = {.type = KVC_ROPE_LONGROPE,
                         .theta = 10000.0,
                         .factor = 32.0,
                         .original_max_position = 4096,
                         .n_short_factors = ROT / 2,
                         .n_long_factors = ROT / 2,
                         .short_factor = {1.0f, 1.25f, 1.5f, 2.0f, 3.0f, 4.5f},
                         .long_factor = {1.1f, 2.5f, 7.0f, 13.0f, 40.0f, 61.5f}};
    float inv_s[ROT / 2], inv_l[ROT / 2], As = 0, Al = 0;
    assert_int_equal(kvc_rope_frequencies(&r, ROT, inv_s, &As), KVC_OK);
    assert_int_equal(kvc_rope_frequencies_long(&r, ROT, inv_l, &Al), KVC_OK);
    const double A = sqrt(1.0 + log(32.0) / log(4096.0));
    assert_true(fabs(As - A) < 1e-6 && Al == As);
    for (int i = 0; i < ROT / 2; i++) {
        const double base = pow(10000.0, 2.0 * i / ROT);
        assert_true(rel(inv_s[i], 1.0 / ((double)r.short_factor[i] * base)) < 1e-6);
        assert_true(rel(inv_l[i], 1.0 / ((double)r.long_factor[i] * base)) < 1e-6);
    }
    float cs[ROT], sn[ROT], x[D], o[D];
    const int64_t pos = 5000;
    kvc_rope_cos_sin(inv_l, ROT, Al, pos, cs, sn);
    for (int i = 0; i < D; i++) o[i] = x[i] = (float)cos(0.71 * i + 0.2);
    kvc_rope_heads_f32(x, 1, D, cs, sn, ROT, KVC_ROPE_HALF, NULL);
    for (int i = 0; i < ROT / 2; i++) {
        const double ang = (double)pos / ((double)r.long_factor[i] * pow(10000.0, 2.0 * i / ROT));
        const double x1 = o[i], x2 = o[i + ROT / 2];
        /* the f32 angle pos * inv_freq is within 2^-23 * 5000 rad of the exact one */
        assert_true(fabs(x[i] - A * (x1 * cos(ang) - x2 * sin(ang))) < 2e-3 * A);
        assert_true(fabs(x[i + ROT / 2] - A * (x2 * cos(ang) + x1 * sin(ang))) < 2e-3 * A);
    }
    for (int i = ROT; i < D; i++) assert_true(x[i] == o[i]);
    kvc_rope_config bad = r;
    bad.n_long_factors = 5;
    assert_int_equal(kvc_rope_frequencies(&bad, ROT, inv_s, &As), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "long_factor (5)"));
    bad = r, bad.short_factor[2] = 0.0f;
    assert_int_equal(kvc_rope_frequencies_long(&bad, ROT, inv_l, &Al), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "short_factor[2]"));
    const kvc_rope_config def = {.type = KVC_ROPE_DEFAULT, .theta = 10000.0};
    assert_int_equal(kvc_rope_frequencies_long(&def, ROT, inv_l, &Al), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "long factors need a longrope plan"));
}

/* cos/sin of a position, then the three rotations over 3 heads in place against
 * the float64 rotate_half formula (interleaved: on the de-interleaved pairs; pairs: each pair kept in
 * place, turned by its pair's angle, as transformers' GLM-4 / Cohere rotate_half). */
static void test_rotations(void **state) {
    (void)state;
    enum { D = 16, H = 3, STRIDE = 20 };
    kvc_rope_config r = {.type = KVC_ROPE_DEFAULT, .theta = 10000.0};
    float inv[D / 2], A, cs[D], sn[D];
    assert_int_equal(kvc_rope_frequencies(&r, D, inv, &A), KVC_OK);
    const int64_t pos = 1234;
    kvc_rope_cos_sin(inv, D, 0.5f, pos, cs, sn);
    for (int i = 0; i < D; i++) {
        const double ang = (double)((float)pos * inv[i % (D / 2)]);
        assert_true(fabs(cs[i] - 0.5 * cos(ang)) < 1e-6 && fabs(sn[i] - 0.5 * sin(ang)) < 1e-6);
    }
    for (int form = KVC_ROPE_HALF; form <= KVC_ROPE_PAIRS; form++) {
        const bool pairs_in = form != KVC_ROPE_HALF, pairs_out = form == KVC_ROPE_PAIRS;
        float x[H * STRIDE], orig[H * STRIDE], tmp[D];
        for (int i = 0; i < H * STRIDE; i++) orig[i] = x[i] = (float)sin(0.37 * i + form);
        kvc_rope_heads_f32(x, H, STRIDE, cs, sn, D, (kvc_rope_form)form, form == KVC_ROPE_INTERLEAVED ? tmp : NULL);
        for (int h = 0; h < H; h++) {
            const float *o = orig + h * STRIDE;
            for (int i = 0; i < D / 2; i++) {
                const double x1 = pairs_in ? o[2 * i] : o[i], x2 = pairs_in ? o[2 * i + 1] : o[i + D / 2];
                const double ang = (double)((float)pos * inv[i]); /* pair i's angle */
                const int64_t y1 = h * STRIDE + (pairs_out ? 2 * i : i), y2 = y1 + (pairs_out ? 1 : D / 2);
                assert_true(fabs(x[y1] - 0.5 * (x1 * cos(ang) - x2 * sin(ang))) < 1e-6);
                assert_true(fabs(x[y2] - 0.5 * (x2 * cos(ang) + x1 * sin(ang))) < 1e-6);
            }
            for (int i = D; i < STRIDE; i++) assert_true(x[h * STRIDE + i] == o[i]); /* past rot_dim untouched */
        }
    }
    /* half-split, then pairs, over 21 pairs (longer than a 16-lane vector, not a multiple of it), in place
     * and apart: kvci_rope_lane's bits */
    enum { P = 21 };
    float x[2 * P], y[2 * P], c[2 * P], sv[2 * P], want[2 * P];
    for (int i = 0; i < 2 * P; i++)
        x[i] = (float)sin(0.91 * i) * 3.0f, c[i] = (float)cos(0.13 * i), sv[i] = (float)sin(0.29 * i);
    for (int i = 0; i < 2 * P; i++) want[i] = kvci_rope_lane(x[i % P], x[i % P + P], c[i], sv[i], i >= P);
    kvc_rope_half_f32(x, c, sv, 2 * P, y);
    assert_memory_equal(y, want, sizeof y);
    /* pairs (of the rotated x): pair i = (x[2i], x[2i+1]) at cos[i] / sin[i], apart and in place */
    for (int i = 0; i < 2 * P; i++) want[i] = kvci_rope_lane(x[i & ~1], x[i | 1], c[i / 2], sv[i / 2], i % 2 == 1);
    kvc_rope_pairs_f32(x, c, sv, 2 * P, y);
    assert_memory_equal(y, want, sizeof y);
    kvc_rope_pairs_f32(x, c, sv, 2 * P, x);
    assert_memory_equal(x, want, sizeof x);
}

/* 11 rows (a group of 8 normalised together, then 3) against a float64 formula, each bitwise equal to
 * kvc_rmsnorm_f32 alone; row 9 all zeros, row 10 tiny (subnormal) and huge values; the padding
 * between rows untouched. */
static void test_rmsnorm_rows(void **state) {
    (void)state;
    enum { R = 11, N = 37, LD = 40 };
    float x[R * LD], orig[R * LD], g[N], y[N];
    for (int i = 0; i < R * LD; i++) orig[i] = x[i] = (float)cos(0.3 * i) * (float)(1 + i % 5);
    for (int i = 0; i < N; i++) {
        orig[9 * LD + i] = x[9 * LD + i] = 0.0f;
        orig[10 * LD + i] = x[10 * LD + i] = i % 2 ? 1e-40f * (float)i : 1e30f * (float)(i % 5);
        g[i] = 0.5f + 0.01f * (float)i;
    }
    kvc_rmsnorm_rows_f32(x, R, N, LD, g, 1e-6f);
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int i = 0; i < N; i++) ss += (double)orig[r * LD + i] * orig[r * LD + i];
        const double inv = 1.0 / sqrt(ss / N + 1e-6);
        for (int i = 0; i < N; i++)
            assert_true(fabs(x[r * LD + i] - orig[r * LD + i] * inv * g[i]) <=
                        1e-6 * fabs(orig[r * LD + i] * inv * g[i]) + 1e-45);
        for (int i = N; i < LD; i++) assert_true(x[r * LD + i] == orig[r * LD + i]);
        kvc_rmsnorm_f32(orig + r * LD, g, N, 1e-6f, y);
        assert_memory_equal(y, x + r * LD, sizeof y);
    }
}

/* Rows enough to take the threads (300 x 1,024), in place and out of place: each row bitwise equal to
 * kvc_rmsnorm_f32 alone. */
static void test_rmsnorm_rows_threads(void **state) {
    (void)state;
    enum { R = 300, N = 1024 };
    float *x = malloc(sizeof(float) * R * N), *y = malloc(sizeof(float) * N), g[N];
    assert_non_null(x), assert_non_null(y);
    for (int i = 0; i < R * N; i++) x[i] = (float)sin(0.7 * i) * (float)(1 + i % 7);
    for (int i = 0; i < N; i++) g[i] = 0.5f + 0.001f * (float)i;
    float *orig = malloc(sizeof(float) * R * N);
    assert_non_null(orig);
    memcpy(orig, x, sizeof(float) * R * N);
    float *z = malloc(sizeof(float) * R * N);
    assert_non_null(z);
    kvci_rmsnorm_rows_threads(x, R, N, N, g, 1e-6f, z); /* out of place, the model's form */
    kvc_rmsnorm_rows_f32(x, R, N, N, g, 1e-6f);
    assert_memory_equal(z, x, sizeof(float) * R * N);
    for (int r = 0; r < R; r++) {
        kvc_rmsnorm_f32(orig + r * N, g, N, 1e-6f, y);
        assert_memory_equal(y, x + r * N, sizeof(float) * N);
    }
    free(x), free(y), free(orig), free(z);
}

/* LayerNorm without bias (Cohere's), with one (StarCoder2's) and without weight or bias (OLMo's, equal bit for bit
 * to weights of 1): 5 rows ld apart, one with a large common offset (1e4:
 * the mean matters, a variance taken as E[x^2] - mean^2 in f32 would lose it) and one constant (variance 0: eps alone:
 * the bias), against a float64 formula, the padding untouched; then 300 rows x 1,024 with the bias (enough to take the
 * threads) bitwise equal to the same rows normalised one at a time; then rows with weights of their own. */
static void test_layernorm_rows(void **state) {
    (void)state;
    enum { R = 5, N = 37, LD = 40, RT = 300, NT = 1024 };
    float x[R * LD], y[R * LD], g[NT], b[NT];
    for (int i = 0; i < R * LD; i++) x[i] = (float)cos(0.3 * i) * (float)(1 + i % 5) + (i / LD == 3 ? 1e4f : 0.0f);
    for (int i = 0; i < N; i++) x[4 * LD + i] = 2.5f;
    for (int i = 0; i < NT; i++) g[i] = 0.5f + 0.01f * (float)(i % 97);
    for (int i = 0; i < NT; i++) b[i] = 0.05f * (float)cos(1.3 * i);
    for (int form = 0; form < 3; form++) { /* Cohere's (no bias), StarCoder2's (a bias), OLMo's (neither weight) */
        const float *beta = form == 1 ? b : NULL, *gamma = form == 2 ? NULL : g;
        for (int i = 0; i < R * LD; i++) y[i] = -1.0f;
        kvci_layernorm_rows_threads(x, R, N, LD, gamma, beta, 1e-5f, y);
        for (int r = 0; r < R; r++) {
            double mean = 0.0, var = 0.0;
            for (int i = 0; i < N; i++) mean += x[r * LD + i];
            mean /= N;
            for (int i = 0; i < N; i++) var += (x[r * LD + i] - mean) * (x[r * LD + i] - mean);
            const double inv = 1.0 / sqrt(var / N + (double)1e-5f);
            for (int i = 0; i < N; i++) {
                const double want = (x[r * LD + i] - mean) * inv * (gamma ? g[i] : 1.0) + (beta ? beta[i] : 0.0);
                assert_true(fabs(y[r * LD + i] - want) <= 1e-6 * fabs(want) + 1e-30);
            }
            for (int i = N; i < LD; i++) assert_true(y[r * LD + i] == -1.0f);
        }
        for (int i = 0; i < N; i++) assert_true(y[4 * LD + i] == (beta ? b[i] : 0.0f)); /* variance 0: the bias */
    }
    float ones[N], y1[R * LD];
    for (int i = 0; i < N; i++) ones[i] = 1.0f;
    memcpy(y1, y, sizeof y1); /* the weightless form's, from the loop's last pass */
    kvci_layernorm_rows_threads(x, R, N, LD, ones, NULL, 1e-5f, y);
    assert_memory_equal(y, y1, sizeof y);
    float *xt = malloc(sizeof(float) * RT * NT), *yt = malloc(sizeof(float) * RT * NT), one[NT];
    assert_non_null(xt), assert_non_null(yt);
    for (int i = 0; i < RT * NT; i++) xt[i] = (float)sin(0.7 * i) * (float)(1 + i % 7) + 3.0f;
    kvci_layernorm_rows_threads(xt, RT, NT, NT, g, b, 1e-5f, yt);
    for (int r = 0; r < RT; r++) {
        kvci_layernorm_rows_threads(xt + r * NT, 1, NT, NT, g, b, 1e-5f, one);
        assert_memory_equal(one, yt + r * NT, sizeof one);
    }
    kvci_layernorm_rows_threads(xt, RT, NT, NT, g, b, 1e-5f, xt); /* in place */
    assert_memory_equal(xt, yt, sizeof(float) * RT * NT);
    /* 4 heads of 16 a row, each with its own weights (Cohere's q / k norms), in place: each head as the row
     * normalised alone by its weights */
    float heads[4 * 16];
    for (int i = 0; i < 4 * 16; i++) heads[i] = x[i];
    for (int h = 0; h < 4; h++) kvci_layernorm_rows_threads(x + h * 16, 1, 16, 16, g + h * 16, NULL, 1e-5f, y + h * 16);
    kvci_layernorm_rows_to(heads, 4, 16, 16, g, 16, 1e-5f, heads);
    assert_memory_equal(heads, y, sizeof heads);
    free(xt), free(yt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_frequencies),
        cmocka_unit_test(test_yarn_frequencies),
        cmocka_unit_test(test_llama3_frequencies),
        cmocka_unit_test(test_linear_frequencies),
        cmocka_unit_test(test_proportional_frequencies),
        cmocka_unit_test(test_plan_refusals),
        cmocka_unit_test(test_rotations),
        cmocka_unit_test(test_longrope_frequencies),
        cmocka_unit_test(test_rmsnorm_rows),
        cmocka_unit_test(test_rmsnorm_rows_threads),
        cmocka_unit_test(test_layernorm_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
