/* The gated products of SwiGLU and GeGLU (src/model/act.h): every kernel this CPU runs gives the portable
 * kernel's bits on ordinary and edge inputs (bit for bit; a NaN result a NaN), and the error bounds act.h
 * states hold against a float64 reference. Also Kimi Delta Attention's recurrence step (kda.c), RWKV's WKV step
 * (rwkv.c), RecurrentGemma's RG-LRU (rglru.c) and HY V4's hyper-connection weights (hyper_conn.c) against float64. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/act.h"
#include "model/forward_internal.h"
#include "model/model_internal.h"

static float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

/* Ulps between f and the float64 value r, in units of r's f32 ulp (r normal). */
static double ulps(float f, double r) {
    int e = 0;
    frexp(r, &e);
    return fabs((double)f - r) / ldexp(1.0, e - 24);
}

/* got[i] has want[i]'s bits, or both are NaN: with two NaN operands (g and u, or -inf / inf and a NaN
 * u) which payload survives depends on the compiler's operand order of a commutative product. */
static void assert_same(const float *got, const float *want, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i])) {
            assert_true(isnan(got[i]));
            continue;
        }
        uint32_t a, b;
        memcpy(&a, got + i, sizeof a), memcpy(&b, want + i, sizeof b);
        if (a != b) fail_msg("element %lld: %08x, want %08x", (long long)i, (unsigned)a, (unsigned)b);
    }
}

enum { N = 1 << 20 };
static float g[N + 3], u[N + 3], want[N + 3], got[N + 3];

/* The row kernel of act (0: SwiGLU, 1: GeGLU) and its scalar form. */
static kvc_swiglu_row_fn row_of(const kvc_act_kernel *k, int act) { return act ? k->geglu : k->swiglu; }
static float scalar_of(int act, float a, float b) { return act ? kvci_gelu_mul(a, b) : kvci_silu_mul(a, b); }

static void same_bits(int act) {
    static const uint32_t edge[] = {
        0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x807fffffu, 0x00800000u, 0x80800000u,
        0x3f800000u, 0xbf800000u, 0x42a00000u, 0xc2a00000u, 0x42ac0000u, 0xc2ac0000u, 0x42b00000u, 0xc2b00000u,
        0x42b17218u, 0xc2b17218u, 0x42b17219u, 0xc2b17219u, 0x42b20000u, 0xc2b20000u, 0x42c80000u, 0xc2c80000u,
        0x7149f2cau, 0xf149f2cau, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
        0x7fa00001u, 0xffd00007u, 0x41880000u, 0xc1880000u, 0x3f000000u, 0xbf000000u, 0x34000000u, 0xb4000000u};
    const int ne = (int)(sizeof edge / sizeof edge[0]);
    uint32_t s = 7u;
    for (int i = 0; i < N + 3; i++) {
        const uint32_t r = lcg(&s);
        if (i < ne * ne) { /* every edge value against every edge value */
            g[i] = from_bits(edge[i % ne]);
            u[i] = from_bits(edge[i / ne]);
        } else if (i % 3 == 0) { /* any bit pattern */
            g[i] = from_bits(r);
            u[i] = from_bits(lcg(&s));
        } else { /* the range where silu bends, and a little beyond the exp clamps */
            g[i] = -95.0f + 190.0f * (float)(r >> 8) / 16777216.0f * (i % 3 == 1 ? 1.0f : 0.25f);
            u[i] = (float)(lcg(&s) >> 8) / 8388608.0f - 1.0f;
        }
    }
    for (int i = 0; i < N + 3; i++) want[i] = scalar_of(act, g[i], u[i]);
    const kvc_act_kernel *ks[3];
    const int nk = kvci_act_kernels(ks);
    assert_string_equal(ks[nk - 1]->name, "portable");
    assert_ptr_equal(kvci_act_active(), ks[0]);
    for (int k = 0; k < nk; k++)
        for (int off = 0; off < 3; off++) { /* unaligned rows, tails of every length */
            const int64_t n = N - 13 * off;
            memset(got, 0, sizeof got);
            row_of(ks[k], act)(g + off, u + off, n, got + off);
            assert_same(got + off, want + off, n);
            memcpy(got, g, sizeof got); /* in place, out == g */
            row_of(ks[k], act)(got + off, u + off, n, got + off);
            assert_same(got + off, want + off, n);
        }
    /* short rows (every length below two 16-lane vectors: all-tail rows and each tail after one or two
     * vectors) from an odd offset, apart and in place in u (out == u) */
    for (int k = 0; k < nk; k++)
        for (int64_t n = 0; n <= 33; n++) {
            memset(got, 0, 40 * sizeof(float));
            row_of(ks[k], act)(g + 1, u + 1, n, got + 1);
            assert_same(got + 1, want + 1, n);
            assert_true(got[0] == 0.0f && got[n + 1] == 0.0f); /* nothing written outside the row */
            memcpy(got, u, 40 * sizeof(float));
            row_of(ks[k], act)(g + 1, got + 1, n, got + 1);
            assert_same(got + 1, want + 1, n);
        }
    /* the row loop, threaded at this size, gives the same bits */
    kvci_glu(act ? KVC_MLP_GELU_TANH : KVC_MLP_SILU, g, u, 64, 1024, 1024, got, 1024);
    assert_same(got, want, 64 * 1024);
}

/* The gated erf-GELU (ModernBERT) and relu2 (BitNet) products of kvci_glu: out = act(g) * u with the element
 * functions tested against float64 below (one more rounding for the product), over strided rows (ld 3 n + 1,
 * the output at its own stride), at a size the row loop threads; the exact product of the double values of
 * act(g) and u rounded once equals it (the product of two floats fits a double). */
static void test_glu_gated_scalar(void **state) {
    (void)state;
    enum { GT = 40, GN = 700, GLD = 3 * GN + 1, GLDO = GN + 5 };
    float *gate = malloc(sizeof(float) * GT * GLD), *up = malloc(sizeof(float) * GT * GLD),
          *out = malloc(sizeof(float) * GT * GLDO);
    assert_non_null(gate);
    assert_non_null(up);
    assert_non_null(out);
    uint32_t s = 29u;
    for (int i = 0; i < GT * GLD; i++) {
        gate[i] = -9.0f + 18.0f * (float)(lcg(&s) >> 8) / 16777216.0f;
        up[i] = -4.0f + 8.0f * (float)(lcg(&s) >> 8) / 16777216.0f;
    }
    const kvc_mlp_act acts[2] = {KVC_MLP_GELU, KVC_MLP_RELU2};
    for (int a = 0; a < 2; a++) {
        for (int i = 0; i < GT * GLDO; i++) out[i] = 7.0f;
        kvci_glu(acts[a], gate, up, GT, GN, GLD, out, GLDO);
        for (int t = 0; t < GT; t++) {
            for (int j = 0; j < GN; j++) {
                const float x = gate[t * GLD + j], y = up[t * GLD + j];
                const double act = a == 0 ? (double)kvci_gelu_erf(x) : (double)kvci_relu2(x);
                const float expect = (float)(act * (double)y);
                if (memcmp(&out[t * GLDO + j], &expect, sizeof expect) != 0)
                    fail_msg("act %d row %d col %d: %.9g, expect %.9g", a, t, j, (double)out[t * GLDO + j],
                             (double)expect);
            }
            for (int j = GN; j < GLDO; j++) assert_true(out[t * GLDO + j] == 7.0f); /* nothing past the row */
        }
    }
    free(gate);
    free(up);
    free(out);
}

static void test_kernels_same_bits(void **state) {
    (void)state;
    same_bits(0);
    same_bits(1);
}

/* Special values: silu(+inf) = +inf, silu(-inf) = NaN (-inf / inf, as a / (1 + expf(-a))), NaN in
 * gives NaN, silu(-100) = -0 (exp(100) overflows), silu(+-0) = +-0. */
static void test_special_values(void **state) {
    (void)state;
    assert_true(kvci_silu_mul(INFINITY, 1.0f) == INFINITY);
    assert_true(isnan(kvci_silu_mul(-INFINITY, 1.0f)));
    assert_true(isnan(kvci_silu_mul(NAN, 1.0f)));
    const float m = kvci_silu_mul(-100.0f, 1.0f), z = kvci_silu_mul(-0.0f, 1.0f);
    assert_true(m == 0.0f && signbit(m));
    assert_true(z == 0.0f && signbit(z));
    assert_true(kvci_silu_exp(89.0f) == INFINITY);
    assert_true(kvci_silu_exp(88.72f) < INFINITY);
    assert_true(kvci_silu_exp(0.0f) == 1.0f);
}

/* exp within 2 ulp on [-86, 88.7]; silu(g) * u for g >= -88.7 (below, exp(-g) overflows and the
 * product is +-0, as with expf) within 4 ulp of the float64 value wherever that is a normal float,
 * else within 4 subnormal ulps. */
static void test_error_bounds(void **state) {
    (void)state;
    double worst_exp = 0.0, worst_silu = 0.0;
    for (int i = 0; i <= 2000000; i++) {
        const float x = -86.0f + 174.7f * (float)i / 2000000.0f;
        worst_exp = fmax(worst_exp, ulps(kvci_silu_exp(x), exp((double)x)));
    }
    uint32_t s = 3u;
    for (int i = 0; i < 2000000; i++) {
        const uint32_t r = lcg(&s);
        const float a = i < 1000000 ? -90.0f + 180.0f * (float)(r >> 8) / 16777216.0f
                                    : from_bits(r & 0xbfffffffu) * (r & 1 ? 1.0f : -1.0f);
        const float b = i % 2 ? 1.0f : (float)(lcg(&s) >> 8) / 8388608.0f - 1.0f;
        if (!isfinite(a) || a < -88.7f) continue; /* below, exp(-a) overflows: +-0, as with expf */
        const double ref = (double)a / (1.0 + exp(-(double)a)) * (double)b;
        const float f = kvci_silu_mul(a, b);
        if (fabs(ref) >= FLT_MIN)
            worst_silu = fmax(worst_silu, ulps(f, ref));
        else
            assert_true(fabs((double)f - ref) <= 4.0 * ldexp(1.0, -149));
    }
    print_message("exp worst %.2f ulp, silu(g) * u worst %.2f ulp\n", worst_exp, worst_silu);
    assert_true(worst_exp <= 2.0);
    assert_true(worst_silu <= 4.0);
}

/* GeGLU: gelu_tanh(+inf) = +inf, gelu_tanh(-inf) = NaN (as PyTorch's 0.5 x (1 + tanh) gives -inf * 0),
 * NaN in gives NaN, gelu_tanh(-20) = -0 (exp(w) overflows), gelu_tanh(+-0) = +-0, gelu_tanh(30) = 30; within
 * 4 + 4 |w| ulp of the float64 value a (1 + tanh(z)) / 2 * u = a / (1 + exp(-2 z)) * u, z = sqrt(2 / pi)
 * (a + 0.044715 a^3), wherever that is a
 * normal float and exp(-w) does not overflow (w > -88.7). */
static void test_gelu(void **state) {
    (void)state;
    assert_true(kvci_gelu_mul(INFINITY, 1.0f) == INFINITY);
    assert_true(isnan(kvci_gelu_mul(-INFINITY, 1.0f)));
    assert_true(isnan(kvci_gelu_mul(NAN, 1.0f)));
    const float m = kvci_gelu_mul(-20.0f, 1.0f), z = kvci_gelu_mul(-0.0f, 1.0f);
    assert_true(m == 0.0f && signbit(m));
    assert_true(z == 0.0f && signbit(z));
    assert_true(kvci_gelu_mul(30.0f, 1.0f) == 30.0f);
    double worst = 0.0, worst_ratio = -1e9;
    uint32_t s = 5u;
    for (int i = 0; i < 2000000; i++) {
        const uint32_t r = lcg(&s);
        const float a = i < 1500000 ? -12.0f + 24.0f * (float)(r >> 8) / 16777216.0f
                                    : from_bits(r & 0xbfffffffu) * (r & 1 ? 1.0f : -1.0f);
        const float b = i % 2 ? 1.0f : (float)(lcg(&s) >> 8) / 8388608.0f - 1.0f;
        const double w = (double)kvci_gelu_w(a);
        if (!isfinite(a) || w < -88.7) continue;
        const double x = (double)a;
        /* a (1 + tanh(z)) / 2 = a / (1 + exp(-2 z)), without 1 + tanh's cancellation for z << 0 */
        const double ref = x / (1.0 + exp(-2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x))) * (double)b;
        const float f = kvci_gelu_mul(a, b);
        if (fabs(ref) < FLT_MIN) {
            assert_true(fabs((double)f - ref) <= (4.0 + 4.0 * fabs(w)) * ldexp(1.0, -149));
            continue;
        }
        const double e = ulps(f, ref);
        worst = fmax(worst, e);
        worst_ratio = fmax(worst_ratio, (e - 4.0) / fabs(w));
    }
    print_message("gelu_tanh(g) * u worst %.2f ulp, worst (ulp - 4) / |w|: %.2f\n", worst, worst_ratio);
    assert_true(worst_ratio <= 4.0);
}

/* relu2 (Arcee's ungated MLP): max(a, 0)^2 is the float64 square rounded once (PyTorch's relu then pow 2), so
 * exactly the float of the float64 value over a sweep and random bit patterns; -0 and negatives give +0, NaN
 * stays NaN, +inf gives +inf; kvci_act_rows applies it in place, element by element. */
static void test_relu2(void **state) {
    (void)state;
    assert_true(kvci_relu2(INFINITY) == INFINITY && kvci_relu2(-INFINITY) == 0.0f && isnan(kvci_relu2(NAN)));
    assert_true(kvci_relu2(-0.0f) == 0.0f && !signbit(kvci_relu2(-0.0f)) && !signbit(kvci_relu2(-3.0f)));
    uint32_t s = 11u;
    for (int i = 0; i < 200000; i++) {
        const uint32_t r = lcg(&s);
        const float a = i % 2 ? -12.0f + 24.0f * (float)(r >> 8) / 16777216.0f : from_bits(r);
        if (isnan(a)) continue;
        const double x = a > 0.0f ? (double)a : 0.0;
        const float want_f = (float)(x * x); /* the exact square of a float fits a double: one rounding */
        const float got_f = kvci_relu2(a);
        assert_memory_equal(&got_f, &want_f, sizeof got_f);
    }
    float row[6] = {-2.0f, -0.0f, 0.5f, 3.0f, 1e20f, 1e-30f};
    kvci_act_rows(KVC_MLP_RELU2, row, 2, 3);
    const float want_row[6] = {0.0f, 0.0f, 0.25f, 9.0f, INFINITY, 0.0f};
    assert_memory_equal(row, want_row, sizeof row);
}

/* gelu by erf (GPT-NeoX's ungated MLP): within 1 ulp of a long double reference a erfc(-a / sqrt 2) / 2 over a
 * sweep of [-12, 12] and random bit patterns (the float64 evaluation rounded once); gelu(0) = 0, large negative
 * inputs give -0 or tiny negatives, not NaN; kvci_act_rows applies it in place, element by element. */
static void test_gelu_erf(void **state) {
    (void)state;
    assert_true(kvci_gelu_erf(0.0f) == 0.0f && kvci_gelu_erf(INFINITY) == INFINITY && isnan(kvci_gelu_erf(NAN)));
    assert_true(kvci_gelu_erf(-INFINITY) == 0.0f || isnan(kvci_gelu_erf(-INFINITY)));
    uint32_t s = 13u;
    double worst = 0.0;
    for (int i = 0; i < 200000; i++) {
        const uint32_t r = lcg(&s);
        const float a = i % 2 ? -12.0f + 24.0f * (float)(r >> 8) / 16777216.0f : from_bits(r);
        if (!isfinite(a)) continue;
        const long double x = a;
        const long double ref = 0.5L * x * erfcl(-x * 0.707106781186547524400844362104849039L);
        const float out = kvci_gelu_erf(a);
        const double ulp = (double)nextafterf(fabsf((float)ref), INFINITY) - (double)fabsf((float)ref);
        const double e = ref == 0.0L ? fabs((double)out) : fabs((double)((long double)out - ref)) / ulp;
        if (ref != 0.0L) worst = fmax(worst, e);
        assert_true(ref == 0.0L ? out == 0.0f : e <= 1.0);
    }
    print_message("gelu (erf) worst %.2f ulp\n", worst);
    float row[4] = {-1.0f, 0.5f, 2.0f, -20.0f};
    kvci_act_rows(KVC_MLP_GELU, row, 2, 2);
    const float want_row[4] = {kvci_gelu_erf(-1.0f), kvci_gelu_erf(0.5f), kvci_gelu_erf(2.0f), kvci_gelu_erf(-20.0f)};
    assert_memory_equal(row, want_row, sizeof row);
    assert_true(fabsf(row[0] - -0.15865525f) < 1e-7f && row[3] <= 0.0f && row[3] > -1e-30f);
}

/* relu (OPT's ungated MLP): max(a, 0) exactly, NaN stays NaN; kvci_act_rows applies it in place. */
static void test_relu(void **state) {
    (void)state;
    assert_true(kvci_relu(INFINITY) == INFINITY && kvci_relu(-INFINITY) == 0.0f && isnan(kvci_relu(NAN)));
    float row[6] = {-2.0f, -0.0f, 0.5f, 3.0f, 1e20f, -1e-30f};
    kvci_act_rows(KVC_MLP_RELU, row, 2, 3);
    const float want_row[6] = {0.0f, 0.0f, 0.5f, 3.0f, 1e20f, 0.0f};
    assert_memory_equal(row, want_row, sizeof row);
}

/* DeepSeek sparse attention's indexer score (attn_dsa.c) against float64: sum_h w[h] relu(scale q[h] . k), within a
 * few f32 roundings of the sum of the magnitudes; a head whose dot is negative adds nothing (relu). */
static void test_dsa_score(void **state) {
    (void)state;
    uint32_t seed = 7;
    enum { HI = 3, DI = 8, TRIALS = 64 };
    float q[HI * DI], w[HI], k[DI];
    for (int trial = 0; trial < TRIALS; trial++) {
        for (int i = 0; i < HI * DI; i++) q[i] = (float)((int32_t)lcg(&seed) >> 8) / 8388608.0f;
        for (int i = 0; i < DI; i++) k[i] = (float)((int32_t)lcg(&seed) >> 8) / 8388608.0f;
        for (int h = 0; h < HI; h++) w[h] = (float)((int32_t)lcg(&seed) >> 8) / 8388608.0f;
        const float scale = 0.35355339f;
        double ref = 0.0, mag = 0.0;
        for (int h = 0; h < HI; h++) {
            double d = 0.0, m = 0.0;
            for (int i = 0; i < DI; i++) d += (double)q[h * DI + i] * k[i], m += fabs((double)q[h * DI + i] * k[i]);
            ref += d * scale > 0.0 ? (double)w[h] * d * scale : 0.0;
            mag += fabs((double)w[h]) * m * scale;
        }
        const float score = kvci_dsa_score(q, w, HI, DI, scale, k);
        if (fabs((double)score - ref) > 16.0 * FLT_EPSILON * mag + 1e-30)
            fail_msg("trial %d: score %.9g, float64 %.17g (magnitude %g)", trial, (double)score, ref, mag);
    }
    for (int i = 0; i < DI; i++) k[i] = -q[i]; /* head 0's dot negative: w[0] must not count */
    for (int h = 1; h < HI; h++) w[h] = 0.0f;
    w[0] = 1.0f;
    assert_true(kvci_dsa_score(q, w, HI, DI, 1.0f, k) == 0.0f);
}

/* The top-k choice (kvci_dsa_pick) against a float64 reference ranking by (score descending, position ascending):
 * the same set, listed ascending, for scores with many exact ties (small integers) and without; all keys when n <= k;
 * ties at the k-th score go to the earliest positions (torch.topk on {0, 1, 0, 0, 2, 0, 0, 0}, k 4 picks 4, 1, 5, 7
 * on this CPU: unspecified, documented in docs/model.md). */
static void test_dsa_pick(void **state) {
    (void)state;
    enum { NMAX = 97 };
    float sc[NMAX], tmp[NMAX];
    int32_t out[NMAX];
    const float ties[8] = {0, 1, 0, 0, 2, 0, 0, 0};
    assert_int_equal(kvci_dsa_pick(ties, 8, 4, tmp, out), 4);
    assert_true(out[0] == 0 && out[1] == 1 && out[2] == 2 && out[3] == 4);
    assert_int_equal(kvci_dsa_pick(ties, 8, 8, tmp, out), 8);
    assert_int_equal(kvci_dsa_pick(ties, 5, 9, tmp, out), 5);
    assert_true(out[4] == 4);
    uint32_t seed = 11;
    for (int trial = 0; trial < 400; trial++) {
        const int64_t n = 1 + (int64_t)(lcg(&seed) % NMAX), k = 1 + (int64_t)(lcg(&seed) % NMAX);
        const bool tied = trial % 2 == 0;
        for (int64_t j = 0; j < n; j++)
            sc[j] = tied ? (float)(lcg(&seed) % 5) - 2.0f : (float)((int32_t)lcg(&seed) >> 8) / 8388608.0f;
        const int64_t m = kvci_dsa_pick(sc, n, k, tmp, out);
        assert_int_equal(m, n < k ? n : k);
        int64_t prev = -1;
        for (int64_t i = 0; i < m; i++) { /* ascending, and each chosen key outranks every key left out */
            assert_true(out[i] > prev && out[i] < n);
            prev = out[i];
        }
        bool chosen[NMAX] = {false};
        for (int64_t i = 0; i < m; i++) chosen[out[i]] = true;
        for (int64_t a = 0; a < n; a++)
            for (int64_t b = 0; b < n; b++)
                if (chosen[a] && !chosen[b] && !((double)sc[a] > (double)sc[b] || (sc[a] == sc[b] && a < b)))
                    fail_msg("trial %d: key %lld (%g) chosen over key %lld (%g)", trial, (long long)a, (double)sc[a],
                             (long long)b, (double)sc[b]);
    }
}

/* HY V4's hyper-connection weights (kvci_hc_weights, hyper_conn.c) against float64: for streams x [n, H], mix = (fn x)
 * (mean(x^2) + eps)^-1/2, pre = sigmoid(mix[:n] s0 + b[:n]) + hc_eps, post = magnitude sigmoid(mix[n:] s1 + b[n:]) +
 * hc_eps; the head's form (post NULL: n rows of fn, one scale) the same pre. Within 1e-6 (f32 sums). */
static void test_hc_weights(void **state) {
    (void)state;
    enum { NS = 3, H = 5, F = NS * H };
    uint32_t seed = 5;
    float x[F], fn[2 * NS * F], base[2 * NS], scale[2] = {0.7f, -1.3f}, pre[NS], post[NS];
    for (int trial = 0; trial < 32; trial++) {
        for (int i = 0; i < F; i++) x[i] = (float)((int32_t)lcg(&seed) >> 8) / 2097152.0f;
        for (int i = 0; i < 2 * NS * F; i++) fn[i] = (float)((int32_t)lcg(&seed) >> 8) / 8388608.0f;
        for (int i = 0; i < 2 * NS; i++) base[i] = (float)((int32_t)lcg(&seed) >> 8) / 8388608.0f;
        const kvc_hc_params p = {
            .fn = fn, .base = base, .scale = scale, .eps = 1e-5, .hc_eps = 1e-3f, .magnitude = 2.5f};
        const bool head = trial % 2 == 1;
        kvci_hc_weights(x, NS, H, &p, pre, head ? NULL : post);
        double ss = 0.0;
        for (int i = 0; i < F; i++) ss += (double)x[i] * x[i];
        const double r = 1.0 / sqrt(ss / F + 1e-5);
        for (int j = 0; j < (head ? NS : 2 * NS); j++) {
            double d = 0.0;
            for (int i = 0; i < F; i++) d += (double)fn[j * F + i] * x[i];
            const double z = d * r * (j < NS ? scale[0] : scale[1]) + base[j], sg = 1.0 / (1.0 + exp(-z));
            const double ref = j < NS ? sg + 1e-3 : 2.5 * sg + 1e-3;
            const float val = j < NS ? pre[j] : post[j - NS];
            if (fabs((double)val - ref) > 1e-6)
                fail_msg("trial %d weight %d: %.9g, float64 %.17g", trial, j, (double)val, ref);
        }
    }
}

/* kvci_kda_token over 40 tokens of one head (dk 6, dv 5), a decay per key channel in (0.5, 1): its outputs and state
 * against the same recurrence in float64 (S = diag(decay) S, delta = beta (v - S^T k), S += k delta^T, o = S^T q).
 * A decay shared by the channels (their mean) misses the reference: the per-channel rule is what is checked. */
static void test_kda_token(void **state) {
    (void)state;
    enum { DK = 6, DV = 5, STEPS = 40 };
    uint32_t seed = 7u;
    float S[DK * DV] = {0}, q[DK], k[DK], v[DV], decay[DK], kvm[DV], o[DV];
    double R[DK * DV] = {0}, err = 0.0, mean_err = 0.0, Rm[DK * DV] = {0};
    for (int t = 0; t < STEPS; t++) {
        double mean = 0.0;
        for (int a = 0; a < DK; a++) {
            q[a] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 24);
            k[a] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 24);
            decay[a] = 0.5f + (float)(lcg(&seed) >> 8) / (float)(1 << 25);
            mean += decay[a] / DK;
        }
        for (int e = 0; e < DV; e++) v[e] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 23);
        const float beta = 0.25f + (float)(lcg(&seed) >> 8) / (float)(1 << 25);
        kvci_kda_token(S, q, k, v, decay, beta, DK, DV, kvm, o);
        double *refs[2] = {R, Rm};
        for (int m = 0; m < 2; m++) {
            double *X = refs[m], km[DV] = {0}, ro[DV] = {0};
            for (int a = 0; a < DK; a++)
                for (int e = 0; e < DV; e++) {
                    X[a * DV + e] *= m == 0 ? (double)decay[a] : mean;
                    km[e] += X[a * DV + e] * k[a];
                }
            for (int e = 0; e < DV; e++) km[e] = ((double)v[e] - km[e]) * beta;
            for (int a = 0; a < DK; a++)
                for (int e = 0; e < DV; e++) {
                    X[a * DV + e] += (double)k[a] * km[e];
                    ro[e] += X[a * DV + e] * q[a];
                }
            for (int e = 0; e < DV; e++) {
                const double d = fabs((double)o[e] - ro[e]);
                if (m == 0 && d > err) err = d;
                if (m == 1 && d > mean_err) mean_err = d;
            }
        }
    }
    for (int i = 0; i < DK * DV; i++)
        if (fabs((double)S[i] - R[i]) > err) err = fabs((double)S[i] - R[i]);
    assert_true(err < 1e-5);
    assert_true(mean_err > 1e-3);
}

/* kvci_lightning_token over 40 tokens of one head (d 6), decay 0.9: each output against transformers' prefill form in
 * float64, o_t = sum over j <= t of decay^(t - j) (q_t . k_j) v_j (no state), and the state against sum_j decay^(t - j)
 * k_j v_j^T; the decay applied after the token's k v^T (S = decay (S + k v^T)) misses it. */
static void test_lightning_token(void **state) {
    (void)state;
    enum { D = 6, STEPS = 40 };
    uint32_t seed = 11u;
    const float decay = 0.9f;
    float S[D * D] = {0}, q[STEPS][D], k[STEPS][D], v[STEPS][D], o[D];
    double err = 0.0, late = 0.0;
    for (int t = 0; t < STEPS; t++) {
        for (int a = 0; a < D; a++) {
            q[t][a] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 23);
            k[t][a] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 23);
            v[t][a] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 23);
        }
        kvci_lightning_token(S, q[t], k[t], v[t], decay, D, o);
        for (int e = 0; e < D; e++) {
            double ref = 0.0, ref_late = 0.0;
            for (int j = 0; j <= t; j++) {
                double qk = 0.0;
                for (int a = 0; a < D; a++) qk += (double)q[t][a] * k[j][a];
                ref += pow((double)decay, t - j) * qk * v[j][e];
                ref_late += pow((double)decay, t - j + 1) * qk * v[j][e];
            }
            err = fmax(err, fabs((double)o[e] - ref));
            late = fmax(late, fabs((double)o[e] - ref_late));
        }
    }
    for (int a = 0; a < D; a++)
        for (int e = 0; e < D; e++) {
            double ref = 0.0;
            for (int j = 0; j < STEPS; j++) ref += pow((double)decay, STEPS - 1 - j) * k[j][a] * v[j][e];
            err = fmax(err, fabs((double)S[a * D + e] - ref));
        }
    assert_true(err < 1e-5);
    assert_true(late > 1e-2);
}

/* kvci_rwkv_wkv_token over 50 tokens of 3 channels (decays -exp(-1), -exp(0.5), -exp(1.5); time_first -0.7, 0.3,
 * 1.1), keys up to +-40 (e^k beyond f32 without the running maximum): each output against the closed form in float64,
 * wkv_t = (sum_{j<t} e^((t-1-j) w + k_j) v_j + e^(u + k_t) v_t) / (sum_{j<t} e^((t-1-j) w + k_j) + e^(u + k_t)), and
 * the state's num e^max and den e^max (relative to den) against those sums through t; one decay more per past token
 * misses it. */
static void test_rwkv_wkv_token(void **state) {
    (void)state;
    enum { H = 3, STEPS = 50 };
    static const float decay_p[H] = {-1.0f, 0.5f, 1.5f}, first[H] = {-0.7f, 0.3f, 1.1f};
    uint32_t seed = 5u;
    float st[3 * H], k[STEPS][H], v[STEPS][H], out = 0.0f;
    double err = 0.0, err_state = 0.0, late = 0.0;
    for (int i = 0; i < H; i++) st[i] = st[H + i] = 0.0f, st[2 * H + i] = -1e30f;
    for (int t = 0; t < STEPS; t++)
        for (int i = 0; i < H; i++) {
            k[t][i] = 40.0f * (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 23);
            v[t][i] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 23);
            const double w = -exp((double)decay_p[i]);
            kvci_rwkv_wkv_token(st, H, i, -expf(decay_p[i]), first[i], k[t][i], v[t][i], &out);
            /* sums relative to e^m, m the largest exponent, as the float64 closed form */
            double m = (double)first[i] + k[t][i];
            for (int j = 0; j < t; j++) m = fmax(m, (t - 1 - j) * w + k[j][i]);
            double num = exp((double)first[i] + k[t][i] - m) * v[t][i], den = exp((double)first[i] + k[t][i] - m);
            double num_l = num, den_l = den;
            for (int j = 0; j < t; j++) {
                num += exp((t - 1 - j) * w + k[j][i] - m) * v[j][i], den += exp((t - 1 - j) * w + k[j][i] - m);
                num_l += exp((t - j) * w + k[j][i] - m) * v[j][i], den_l += exp((t - j) * w + k[j][i] - m);
            }
            err = fmax(err, fabs((double)out - num / den));
            late = fmax(late, fabs((double)out - num_l / den_l));
            /* the state through t: sum_{j<=t} e^((t-j) w + k_j) (v_j), relative to its max */
            double ms = k[t][i];
            for (int j = 0; j < t; j++) ms = fmax(ms, (t - j) * w + k[j][i]);
            double sn = 0.0, sd = 0.0;
            for (int j = 0; j <= t; j++)
                sn += exp((t - j) * w + k[j][i] - ms) * v[j][i], sd += exp((t - j) * w + k[j][i] - ms);
            const double scale = exp((double)st[2 * H + i] - ms);
            err_state = fmax(err_state, fabs(st[i] * scale - sn) / sd + fabs(st[H + i] * scale - sd) / sd);
        }
    /* the state's max adds the decay in f32 every token (|max| up to ~200 here): num and den drift by its roundings
     * together, which the output's ratio cancels */
    if (!(err < 1e-5 && err_state < 1e-4)) fail_msg("wkv: output %.3g, state %.3g from float64", err, err_state);
    assert_true(late > 1e-2);
}

/* Gemma 3n's sparse-gate multiplier Phi^-1(p): torch 2.15's Normal(0, 1).icdf(torch.tensor(p)) in f32, bit for bit
 * (its values printed by torch), and the float64 quantile's sign and symmetry elsewhere. */
static void test_gemma3n_quantile(void **state) {
    (void)state;
    static const struct {
        float p;
        uint32_t bits;
    } TORCH[] = {{0.95f, 0x3fd28a90u}, {0.5f, 0x00000000u}, {0.9f, 0x3fa409e1u},  {0.99f, 0x4014e2e4u},
                 {0.05f, 0xbfd28a90u}, {0.6f, 0x3e81b6b8u}, {0.999f, 0x4045c66eu}};
    for (size_t i = 0; i < sizeof TORCH / sizeof TORCH[0]; i++) {
        const float q = kvci_gemma3n_std_multiplier(TORCH[i].p);
        if (q != from_bits(TORCH[i].bits))
            fail_msg("p %.3f: %.9g, torch %.9g", (double)TORCH[i].p, (double)q, (double)from_bits(TORCH[i].bits));
    }
    for (int k = 1; k < 100; k++) {
        const float p = (float)k / 100.0f, q = kvci_gemma3n_std_multiplier(p);
        assert_true((p > 0.5f) == (q > 0.0f) && fabsf(q + kvci_gemma3n_std_multiplier(1.0f - p)) < 1e-5f);
        /* 0.5 (1 + erf(q / sqrt 2)) returns p to f32 accuracy */
        assert_true(fabs(0.5 * (1.0 + erf((double)q / sqrt(2.0))) - (double)p) < 1e-6);
    }
}

/* kvci_rglru_token over 40 tokens of W 7 channels, a reset at tokens 0 and 25 (position 0: a new sequence), against
 * transformers' RG-LRU in float64: a = exp(-8 sigmoid(ga) softplus(p)), s = a s + sqrt(1 - a^2) sigmoid(gi) u, and at a
 * reset s = sigmoid(gi) u; the reference without the sqrt(1 - a^2) normalisation misses it. */
static void test_rglru_token(void **state) {
    (void)state;
    enum { W = 7, STEPS = 40 };
    uint32_t seed = 5u;
    float uu[W], gi[W], ga[W], neg8_sp[W], s[W] = {0}, o[W];
    double p[W], ref[W] = {0}, plain[W] = {0}, err = 0.0, miss = 0.0;
    for (int j = 0; j < W; j++) {
        p[j] = 4.0 * ((double)(lcg(&seed) >> 8) / (double)(1 << 24)) - 4.0; /* softplus from 0.02 to 0.69 */
        neg8_sp[j] = -8.0f * kvci_softplus((float)p[j]);
    }
    for (int t = 0; t < STEPS; t++) {
        for (int j = 0; j < W; j++) {
            uu[j] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 22);
            gi[j] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 21);
            ga[j] = (float)((int32_t)(lcg(&seed) >> 8) - (1 << 23)) / (float)(1 << 21);
        }
        const bool reset = t == 0 || t == 25;
        kvci_rglru_token(uu, gi, ga, neg8_sp, W, reset, s, o);
        for (int j = 0; j < W; j++) {
            const double a = exp(-8.0 / (1.0 + exp(-(double)ga[j])) * log1p(exp(p[j])));
            const double x = (double)uu[j] / (1.0 + exp(-(double)gi[j]));
            ref[j] = reset ? x : a * ref[j] + sqrt(1.0 - a * a) * x;
            plain[j] = reset ? x : a * plain[j] + x;
            err = fmax(err, fmax(fabs((double)o[j] - ref[j]), fabs((double)s[j] - ref[j])));
            miss = fmax(miss, fabs((double)o[j] - plain[j]));
        }
    }
    assert_true(err < 1e-5);
    assert_true(miss > 1e-1);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kernels_same_bits),
                                       cmocka_unit_test(test_special_values),
                                       cmocka_unit_test(test_error_bounds),
                                       cmocka_unit_test(test_gelu),
                                       cmocka_unit_test(test_relu2),
                                       cmocka_unit_test(test_gelu_erf),
                                       cmocka_unit_test(test_glu_gated_scalar),
                                       cmocka_unit_test(test_relu),
                                       cmocka_unit_test(test_dsa_score),
                                       cmocka_unit_test(test_dsa_pick),
                                       cmocka_unit_test(test_hc_weights),
                                       cmocka_unit_test(test_kda_token),
                                       cmocka_unit_test(test_lightning_token),
                                       cmocka_unit_test(test_rwkv_wkv_token),
                                       cmocka_unit_test(test_gemma3n_quantile),
                                       cmocka_unit_test(test_rglru_token)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
