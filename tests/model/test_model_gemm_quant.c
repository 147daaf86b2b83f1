/* The quantized-weight GEMM (src/model/gemm_quant.h), run on every kernel this
 * CPU has, for Q8_0 and Q4_0: the packed layout byte for byte and the
 * quantization rules against float64, the GEMM's error bound against a float64
 * product over the dequantized weights, every kernel bitwise equal to the
 * portable one, each output row bitwise independent of M and the thread count,
 * bias, several products over one A in one call (kvci_gemm_wq_parts), non-finite
 * rows and an out-of-memory scratch. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/internal.h"
#include "kvcache/half.h"
#include "kvcache/kvcache.h"
#include "model/gemm_quant.h"

static const kvc_wq_format FORMATS[] = {KVC_WQ_Q8_0, KVC_WQ_Q4_0};
static const char *const FORMAT_NAMES[] = {"q8_0", "q4_0"};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static float *rand_buf(int64_t n) {
    float *p = malloc((size_t)n * sizeof(float));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

static void *packed(kvc_wq_format f, int64_t N, int64_t K, const float *W) {
    void *p = malloc((size_t)kvci_wq_packed_bytes(f, N, K));
    assert_non_null(p);
    kvci_wq_pack(f, N, K, W, K, 1, p);
    return p;
}

/* The dequantized weights of a packed W: [N][K]. */
static float *dequantized(kvc_wq_format f, const void *p, int64_t N, int64_t K) {
    float *w = malloc((size_t)(N * K) * sizeof(float));
    assert_non_null(w);
    for (int64_t n = 0; n < N; n++) kvci_wq_packed_row(f, p, N, K, n, w + n * K);
    return w;
}

static void force(const char *name) {
    if (kvci_wq_force(name) != KVC_OK) fail_msg("force %s: %s", name ? name : "NULL", kvc_last_error());
}

static void gemm(kvc_wq_format f, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const void *W,
                 const float *bias, float *C, int64_t ldc) {
    if (kvci_gemm_wq(f, M, N, K, A, lda, W, bias, C, ldc) != KVC_OK) fail_msg("gemm wq: %s", kvc_last_error());
}

/* Shapes around every edge: K below / at / above 32-multiples, N around 16-groups, M around 16-tiles. */
static const int64_t SHAPES[][3] = {{1, 1, 1},     {1, 7, 15},    {3, 5, 32},    {4, 16, 33},   {5, 17, 63},
                                    {16, 13, 64},  {17, 33, 95},  {9, 3, 100},   {33, 31, 130}, {66, 70, 48},
                                    {2, 300, 257}, {1, 64, 2048}, {20, 40, 3001}};

/* The scale of gemm_quant.h for one block of weights (f16 rounded, as f32). */
static float block_scale(kvc_wq_format f, const float *w, int64_t n) {
    float m = 0.0f;
    for (int64_t k = 0; k < n; k++)
        if (fabsf(w[k]) > fabsf(m)) m = w[k];
    return kvc_f16_to_f32(kvc_f32_to_f16(f == KVC_WQ_Q8_0 ? fabsf(m) / 127.0f : m / -8.0f));
}

/* Every weight: W'[n][k] = d q with d the block's scale and q the rule's integer, read
 * back both through kvci_wq_packed_row and straight from the bytes the header names;
 * |W - W'| <= |d| / 2 (Q4_0: |d| where q clamps at 7); a transposed source packs the same. */
static void test_pack_layout_and_rule(void **state) {
    (void)state;
    const int64_t N = 37, K = 75, KB = 3, G = 3;
    float *W = rand_buf(N * K), *T = malloc((size_t)(N * K) * sizeof(float)), row[75];
    assert_non_null(T);
    W[5 * K + 40] = 0.0f, W[6 * K + 3] = -2.0f;           /* a zero and a clear maximum */
    for (int64_t k = 64; k < K; k++) W[7 * K + k] = 0.0f; /* an all-zero (ragged) block: d = 0 */
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) T[k * N + n] = W[n * K + k];
    for (size_t fi = 0; fi < 2; fi++) {
        const kvc_wq_format f = FORMATS[fi];
        const bool q8 = f == KVC_WQ_Q8_0;
        const int64_t bytes = kvci_wq_packed_bytes(f, N, K), ib = q8 ? 512 : 256;
        assert_int_equal(bytes, (G * KB * (ib + 32) + 63) / 64 * 64);
        uint8_t *p = packed(f, N, K, W), *pt = malloc((size_t)bytes);
        assert_non_null(pt);
        kvci_wq_pack(f, N, K, T, 1, N, pt);
        assert_memory_equal(p, pt, (size_t)bytes);
        const uint16_t *dw = (const uint16_t *)(p + G * KB * ib);
        for (int64_t n = 0; n < N; n++) {
            kvci_wq_packed_row(f, p, N, K, n, row);
            for (int64_t k = 0; k < K; k++) {
                const int64_t b = k / 32, kk = k % 32, g = n / 16, c = n % 16;
                const float d = block_scale(f, W + n * K + b * 32, kvci_min64(32, K - b * 32));
                assert_int_equal(kvc_f16_to_f32(dw[(g * KB + b) * 16 + c]), d);
                int q;
                if (q8) {
                    q = (int8_t)p[(g * KB + b) * 512 + (kk / 4) * 64 + c * 4 + kk % 4];
                } else {
                    const uint8_t u = p[(g * KB + b) * 256 + (kk % 16 / 4) * 64 + c * 4 + kk % 4];
                    q = (kk < 16 ? u & 15 : u >> 4) - 8;
                }
                assert_true(q >= (q8 ? -127 : -8) && q <= (q8 ? 127 : 7));
                assert_true(row[k] == d * (float)q);
                const double err = fabs((double)W[n * K + k] - (double)d * q);
                const double lim = d == 0.0f ? 0.0 : fabs((double)d) * (q == 7 && !q8 ? 1.0 : 0.5) * (1 + 1e-6);
                if (err > lim)
                    fail_msg("%s W[%lld][%lld] = %.9g -> %d x %.9g: error %.3g above %.3g", FORMAT_NAMES[fi],
                             (long long)n, (long long)k, W[n * K + k], q, d, err, lim);
            }
        }
        /* the largest |w| of a block is its rule's extreme integer */
        kvci_wq_packed_row(f, p, N, K, 6, row);
        assert_true(row[3] == block_scale(f, W + 6 * K, 32) * (q8 ? -127.0f : -8.0f));
        /* padding: Q8_0 q = 0, Q4_0 u = 8 */
        const uint8_t pad = p[(2 * KB + 2) * ib + 3 * 64 + 15 * 4];
        assert_int_equal(pad, q8 ? 0 : 0x88);
        free(p), free(pt);
    }
    free(W), free(T);
}

/* A matrix large enough to pack on the OpenMP threads: the same bytes as on one thread. */
static void test_pack_threads(void **state) {
    (void)state;
    const int64_t N = 1030, K = 1100;
    float *W = rand_buf(N * K);
    for (size_t fi = 0; fi < 2; fi++) {
        omp_set_num_threads(1);
        void *one = packed(FORMATS[fi], N, K, W);
        omp_set_num_threads(2);
        void *two = packed(FORMATS[fi], N, K, W);
        assert_memory_equal(one, two, (size_t)kvci_wq_packed_bytes(FORMATS[fi], N, K));
        free(one), free(two);
    }
    free(W);
}

/* The activations' bytes: da = amax / 127, |a - qa da| <= da / 2, asum the block's sum,
 * padding rows and k zero, a non-finite block's da NaN. */
static void test_activation_quantization(void **state) {
    (void)state;
    const int64_t M = 3, K = 40, Kp = 64, KB = 2, Mp = 16;
    float *A = rand_buf(M * K);
    A[2 * K + 5] = INFINITY;
    int8_t qa[16 * 64];
    float da[16 * 2];
    int32_t asum[16 * 2];
    memset(qa, 0x55, sizeof qa), memset(da, 0x55, sizeof da), memset(asum, 0x55, sizeof asum);
    const kvc_wq_call c = {.M = M, .N = 1, .K = K, .Kp = Kp, .KB = KB, .Mp = Mp};
    kvci_wq_quantize_rows(&c, A, K, 0, Mp, qa, da, asum);
    for (int64_t i = 0; i < Mp; i++)
        for (int64_t b = 0; b < KB; b++) {
            int32_t s = 0;
            float amax = 0.0f;
            for (int64_t k = b * 32; k < b * 32 + 32; k++) {
                const bool real = i < M && k < K;
                s += qa[i * Kp + k];
                if (!real) assert_int_equal(qa[i * Kp + k], 0);
                if (real) amax = fmaxf(amax, fabsf(A[i * K + k]));
            }
            assert_int_equal(asum[i * KB + b], s);
            if (i == 2 && b == 0) {
                assert_true(isnan(da[i * KB + b]));
                continue;
            }
            assert_true(da[i * KB + b] == amax / 127.0f);
            for (int64_t k = b * 32; k < kvci_min64(K, b * 32 + 32) && i < M; k++)
                assert_true(fabs((double)A[i * K + k] - (double)qa[i * Kp + k] * da[i * KB + b]) <=
                            da[i * KB + b] * 0.5 * (1 + 1e-6));
        }
    free(A);
}

/* Activation values that reach every rule of the quantization: exact ties of rne (with amax 127 the
 * scale is 1), the clamp, zeros, subnormals (a block of them has a subnormal da, so 1 / da is inf and
 * a zero quantizes through NaN to 0), and non-finite values. */
static float special(int64_t x) {
    static const float v[] = {2.5f,  -3.5f,  0.5f,    -0.5f,  126.5f, -126.5f,  127.0f,    -127.0f, 0.0f,
                              -0.0f, 1e-40f, -3e-42f, 1e-45f, NAN,    INFINITY, -INFINITY, 1e30f,   -1e-30f};
    return v[x % (int64_t)(sizeof v / sizeof v[0])];
}

/* The AVX-512 quantizer writes the portable loop's bytes (qa, da and asum, NaN da included) for every
 * K remainder, row range and kind of block: random, ties with amax 127, subnormal-only, all zero, and
 * blocks holding a NaN or an infinity. */
static void test_activation_quantization_simd(void **state) {
    (void)state;
    const kvc_wq_quantize_fn simd = kvci_wq_quantize_avx512();
    if (!simd) {
        print_message("no AVX-512 on this CPU: the portable quantizer only\n");
        return;
    }
    static const int64_t Ks[] = {1, 15, 16, 17, 31, 32, 33, 40, 64, 100, 1024};
    for (size_t s = 0; s < sizeof Ks / sizeof Ks[0]; s++) {
        const int64_t K = Ks[s], M = 9, lda = K + 3, Kp = (K + 31) / 32 * 32, KB = Kp / 32, Mp = 16;
        float *A = rand_buf(M * lda);
        for (int64_t i = 0; i < M; i++)
            for (int64_t k = 0; k < K; k++) {
                float *a = &A[i * lda + k];
                if (i == 1) *a = *a * 127.0f;                                        /* random, amax near 127 */
                if (i == 2) *a = k == 0 ? 127.0f : (float)(int)(*a * 120.0f) + 0.5f; /* ties */
                if (i == 3) *a = *a * 1e-39f;                                        /* subnormal blocks */
                if (i == 4) *a = 0.0f;
                if (i >= 5) *a = k % (i + 2) == 0 ? special(k + i) : *a * 50.0f;
            }
        int8_t *qa[2];
        float *da[2];
        int32_t *asum[2];
        for (int v = 0; v < 2; v++) {
            qa[v] = malloc((size_t)(Mp * Kp)), da[v] = malloc((size_t)(Mp * KB) * sizeof(float));
            asum[v] = malloc((size_t)(Mp * KB) * sizeof(int32_t));
            assert_true(qa[v] && da[v] && asum[v]);
            memset(qa[v], 0x55, (size_t)(Mp * Kp)), memset(da[v], 0x55, (size_t)(Mp * KB) * sizeof(float));
            memset(asum[v], 0x55, (size_t)(Mp * KB) * sizeof(int32_t));
        }
        const kvc_wq_call c = {.M = M, .N = 1, .K = K, .Kp = Kp, .KB = KB, .Mp = Mp};
        kvci_wq_quantize_rows_portable(&c, A, lda, 0, Mp, qa[0], da[0], asum[0]);
        simd(&c, A, lda, 0, 3, qa[1], da[1], asum[1]); /* two row ranges, the second past M */
        simd(&c, A, lda, 3, Mp, qa[1], da[1], asum[1]);
        for (int64_t i = 0; i < Mp; i++) {
            if (memcmp(qa[0] + i * Kp, qa[1] + i * Kp, (size_t)Kp) != 0 ||
                memcmp(da[0] + i * KB, da[1] + i * KB, (size_t)KB * sizeof(float)) != 0 ||
                memcmp(asum[0] + i * KB, asum[1] + i * KB, (size_t)KB * sizeof(int32_t)) != 0)
                fail_msg("K %lld row %lld: the AVX-512 quantizer differs from the portable one", (long long)K,
                         (long long)i);
        }
        for (int v = 0; v < 2; v++) free(qa[v]), free(da[v]), free(asum[v]);
        free(A);
    }
}

/* The bound of one output against the float64 product over the dequantized weights W':
 * the activations' rounding sum_b da_b / 2 sum_k |W'|, then the f32 steps (one rounding
 * of each block's scale product, one per fma, one for the bias) on sum |qa da W'|. */
static double bound(const float *a, const float *w, int64_t K, double bias) {
    double act = 0.0, mag = 0.0;
    for (int64_t b = 0; b < K; b += 32) {
        double amax = 0.0, wsum = 0.0;
        for (int64_t k = b; k < kvci_min64(K, b + 32); k++) {
            amax = fmax(amax, fabs(a[k])), wsum += fabs(w[k]);
            mag += fabs(a[k]) * fabs(w[k]);
        }
        act += (float)(amax / 127.0) * 0.5 * wsum;
    }
    const double u = ldexp(1.0, -24), KB = (double)kvci_cdiv(K, 32);
    return act * (1 + 1e-6) + (2 * KB + 2) * u * ((mag + act) + bias) + 1e-30;
}

static void test_accuracy_against_float64(void **state) {
    (void)state;
    const kvc_wq_kernel *all[KVC_WQ_MAX_KERNELS];
    for (size_t fi = 0; fi < 2; fi++) {
        const kvc_wq_format f = FORMATS[fi];
        const int nk = kvci_wq_kernels(f, all);
        assert_string_equal(all[nk - 1]->name, "portable");
        for (int kk = 0; kk < nk; kk++) {
            force(all[kk]->name);
            rng = 0x9E3779B97F4A7C15ull;
            double worst = 0.0, worst_w = 0.0; /* largest error / sum |a w|: vs W' and vs the original W */
            for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
                const int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2], lda = K + 3, ldc = N + 2;
                float *A = rand_buf(M * lda), *W = rand_buf(N * K), *bias = rand_buf(N), *C = rand_buf(M * ldc);
                void *p = packed(f, N, K, W);
                float *Wd = dequantized(f, p, N, K);
                gemm(f, M, N, K, A, lda, p, bias, C, ldc);
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        double ref = bias[j], ref_w = bias[j], mag = 0.0;
                        for (int64_t k = 0; k < K; k++) {
                            ref += (double)A[i * lda + k] * Wd[j * K + k];
                            ref_w += (double)A[i * lda + k] * W[j * K + k];
                            mag += fabs((double)A[i * lda + k] * W[j * K + k]);
                        }
                        const double err = fabs(C[i * ldc + j] - ref);
                        const double lim = bound(A + i * lda, Wd + j * K, K, fabs(bias[j]));
                        worst = fmax(worst, err / mag), worst_w = fmax(worst_w, fabs(C[i * ldc + j] - ref_w) / mag);
                        if (err > lim)
                            fail_msg("%s %s M %lld N %lld K %lld: C[%lld,%lld] = %.9g, float64 %.9g, error %.3g "
                                     "above %.3g",
                                     FORMAT_NAMES[fi], all[kk]->name, (long long)M, (long long)N, (long long)K,
                                     (long long)i, (long long)j, C[i * ldc + j], ref, err, lim);
                    }
                free(A), free(W), free(bias), free(C), free(p), free(Wd);
            }
            print_message("%s %-12s: largest |error| / sum |aw|: %.3g vs the dequantized weights, %.3g vs the "
                          "f32 weights\n",
                          FORMAT_NAMES[fi], all[kk]->name, worst, worst_w);
        }
    }
    force(NULL);
    assert_int_equal(kvci_wq_force("sse9"), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "sse9"));
}

/* kvci_gemm_wq_parts over rows [0, 64), [64, 64) (empty), [64, 170), [170, N) of W, each packed
 * alone, writing into one C [M, N]: bitwise the single call's `full`. */
static void shared_parts(kvc_wq_format f, const char *kernel, int64_t M, int64_t N, int64_t K, const float *A,
                         const float *W, const float *bias, const float *full, float *C) {
    const int64_t cut[5] = {0, 64, 64, 170, N};
    kvc_wq_part parts[4];
    void *pw[4];
    for (int i = 0; i < 4; i++) {
        const int64_t n0 = cut[i], n = cut[i + 1] - n0;
        pw[i] = n > 0 ? packed(f, n, K, W + n0 * K) : NULL;
        parts[i] = (kvc_wq_part){.N = n, .W = pw[i], .bias = bias + n0, .C = C + n0, .ldc = N};
    }
    memset(C, 0, (size_t)(M * N) * sizeof(float));
    if (kvci_gemm_wq_parts(f, M, K, A, K, 4, parts) != KVC_OK) fail_msg("gemm wq parts: %s", kvc_last_error());
    if (memcmp(C, full, (size_t)(M * N) * sizeof(float)) != 0)
        fail_msg("%s %s: the parts of M %lld differ from one call", f == KVC_WQ_Q8_0 ? "q8_0" : "q4_0", kernel,
                 (long long)M);
    for (int i = 0; i < 4; i++) free(pw[i]);
}

/* Per format and kernel: bitwise equal to the portable kernel; every row of an M-row call
 * equal to the same row computed alone, and to row blocks of odd sizes; 1 or 2 threads;
 * the bias added last (C with bias = C without + bias, one rounding). Large enough to thread. */
static void test_batch_invariance(void **state) {
    (void)state;
    const int64_t M = 70, N = 200, K = 300;
    float *A = rand_buf(M * K), *W = rand_buf(N * K), *bias = rand_buf(N);
    float *ref = calloc((size_t)(M * N), sizeof(float)), *full = calloc((size_t)(M * N), sizeof(float));
    float *part = calloc((size_t)(M * N), sizeof(float));
    assert_true(ref && full && part);
    const kvc_wq_kernel *all[KVC_WQ_MAX_KERNELS];
    for (size_t fi = 0; fi < 2; fi++) {
        const kvc_wq_format f = FORMATS[fi];
        void *p = packed(f, N, K, W);
        force("portable");
        omp_set_num_threads(1);
        gemm(f, M, N, K, A, K, p, bias, ref, N);
        const int nk = kvci_wq_kernels(f, all);
        for (int kk = 0; kk < nk; kk++) {
            force(all[kk]->name);
            assert_string_equal(kvci_wq_active(f)->name, all[kk]->name);
            omp_set_num_threads(2);
            gemm(f, M, N, K, A, K, p, bias, full, N);
            if (memcmp(full, ref, (size_t)(M * N) * sizeof(float)) != 0)
                fail_msg("%s %s (2 threads) differs from portable (1 thread)", FORMAT_NAMES[fi], all[kk]->name);
            for (int64_t i = 0; i < M; i += 3) {
                omp_set_num_threads(1 + (int)(i % 2));
                gemm(f, 1, N, K, A + i * K, K, p, bias, part, N);
                if (memcmp(part, full + i * N, (size_t)N * sizeof(float)) != 0)
                    fail_msg("%s %s: row %lld alone differs from M %lld", FORMAT_NAMES[fi], all[kk]->name, (long long)i,
                             (long long)M);
            }
            omp_set_num_threads(2);
            for (int64_t m0 = 0; m0 < M; m0 += 13) {
                const int64_t mm = kvci_min64(13, M - m0);
                gemm(f, mm, N, K, A + m0 * K, K, p, bias, part, N);
                if (memcmp(part, full + m0 * N, (size_t)(mm * N) * sizeof(float)) != 0)
                    fail_msg("%s %s: rows %lld.. (M %lld) differ", FORMAT_NAMES[fi], all[kk]->name, (long long)m0,
                             (long long)mm);
            }
            gemm(f, M, N, K, A, K, p, NULL, part, N);
            for (int64_t e = 0; e < M * N; e++)
                if (part[e] + bias[e % N] != full[e])
                    fail_msg("%s %s: bias not added last", FORMAT_NAMES[fi], all[kk]->name);
            for (int64_t mm = 1; mm <= M; mm += M - 1) /* decode and many rows */
                shared_parts(f, all[kk]->name, mm, N, K, A, W, bias, full, part);
        }
        free(p);
    }
    force(NULL);
    free(A), free(W), free(bias), free(ref), free(full), free(part);
}

/* A row holding a NaN or an infinity gives NaN outputs; the other rows are unchanged. */
static void test_nonfinite_rows(void **state) {
    (void)state;
    const int64_t M = 5, N = 20, K = 70;
    float *A = rand_buf(M * K), *W = rand_buf(N * K), C[5 * 20], D[5 * 20];
    for (size_t fi = 0; fi < 2; fi++) {
        void *p = packed(FORMATS[fi], N, K, W);
        gemm(FORMATS[fi], M, N, K, A, K, p, NULL, C, N);
        const float keep1 = A[1 * K + 40], keep3 = A[3 * K + 2];
        A[1 * K + 40] = NAN, A[3 * K + 2] = -INFINITY;
        gemm(FORMATS[fi], M, N, K, A, K, p, NULL, D, N);
        A[1 * K + 40] = keep1, A[3 * K + 2] = keep3;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                if (i == 1 || i == 3)
                    assert_true(isnan(D[i * N + j]));
                else
                    assert_memory_equal(&D[i * N + j], &C[i * N + j], sizeof(float));
            }
        free(p);
    }
    free(A), free(W);
}

/* The scratch cannot grow: KVC_ENOMEM naming it, C untouched; the next call works. */
static void test_scratch_out_of_memory(void **state) {
    (void)state;
    const int64_t M = 300, N = 16, K = 4000;
    float *A = rand_buf(M * K), *W = rand_buf(N * K), *C = calloc((size_t)(M * N), sizeof(float));
    assert_non_null(C);
    void *p = packed(KVC_WQ_Q8_0, N, K, W);
    omp_set_num_threads(1);
    kvci_alloc_fail_at(1);
    assert_int_equal(kvci_gemm_wq(KVC_WQ_Q8_0, M, N, K, A, K, p, NULL, C, N), KVC_ENOMEM);
    kvci_alloc_fail_at(0);
    assert_non_null(strstr(kvc_last_error(), "quantized activations"));
    for (int64_t e = 0; e < M * N; e++) assert_true(C[e] == 0.0f);
    gemm(KVC_WQ_Q8_0, M, N, K, A, K, p, NULL, C, N);
    assert_true(C[0] != 0.0f);
    free(A), free(W), free(C), free(p);
}

int main(void) {
    for (size_t fi = 0; fi < 2; fi++) {
        const kvc_wq_kernel *all[KVC_WQ_MAX_KERNELS];
        const int n = kvci_wq_kernels(FORMATS[fi], all);
        printf("gemm %s kernels of this CPU:", FORMAT_NAMES[fi]);
        for (int i = 0; i < n; i++) printf(" %s", all[i]->name);
        printf("\n");
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_layout_and_rule),     cmocka_unit_test(test_pack_threads),
        cmocka_unit_test(test_activation_quantization),  cmocka_unit_test(test_activation_quantization_simd),
        cmocka_unit_test(test_accuracy_against_float64), cmocka_unit_test(test_batch_invariance),
        cmocka_unit_test(test_nonfinite_rows),           cmocka_unit_test(test_scratch_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
