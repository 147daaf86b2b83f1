/* The bf16-weight GEMM (src/model/gemm_bf16.h), run on every kernel this CPU
 * has: the error bound of its family against a float64 product, the fma
 * family's kernels bitwise equal to the portable one, and each kernel's
 * output rows / columns bitwise independent of M, N, column slices and the
 * thread count. Packing round-trips, transposed sources included. f16 weights
 * on the fma family (kvci_gemm_f16) likewise. Activations rounded to bf16
 * (kvci_gemm_bf16_rounded): each kernel bitwise its exact mode over A rounded
 * first, within the rounded bound of float64, and the same invariances. */
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

#include "kvcache/half.h"
#include "kvcache/kvcache.h"
#include "model/gemm_bf16.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

/* n floats in [-1, 1), or bf16 values when `bf16` (weights as a checkpoint holds them). */
static float *rand_buf(int64_t n, bool bf16) {
    float *p = malloc((size_t)n * sizeof(float));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++) p[i] = bf16 ? kvc_bf16_to_f32(kvc_f32_to_bf16(frand())) : frand();
    return p;
}

static uint16_t *packed(int64_t N, int64_t K, const float *B, int64_t ldb) {
    uint16_t *p = malloc((size_t)kvci_bf16_packed_elems(N, K) * sizeof *p);
    assert_non_null(p);
    kvci_bf16_pack(N, K, B, ldb, 1, p);
    return p;
}

static int kernels(const kvc_gemm_bf16_kernel **all) {
    const int n = kvci_gemm_bf16_kernels(all);
    assert_string_equal(all[n - 1]->name, "portable");
    return n;
}

static void force(const char *name) {
    if (kvci_gemm_bf16_force(name) != KVC_OK) fail_msg("force %s: %s", name ? name : "NULL", kvc_last_error());
}

static bool rounded; /* gemm() runs kvci_gemm_bf16_rounded */

static void gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const uint16_t *B, const float *bias,
                 float *C, int64_t ldc) {
    const kvc_status s = rounded ? kvci_gemm_bf16_rounded(M, N, K, A, lda, B, bias, C, ldc)
                                 : kvci_gemm_bf16(M, N, K, A, lda, B, bias, C, ldc);
    if (s != KVC_OK) fail_msg("gemm bf16%s: %s", rounded ? " rounded" : "", kvc_last_error());
}

/* Whether the mode under test runs on kernel k (the rounded mode skips the kernels without one). */
static bool runs(const kvc_gemm_bf16_kernel *k) { return !rounded || k->block_rounded; }

/* Shapes around every edge: K odd / below / at / above 32-multiples, N around 16-groups, M around 16-tiles. */
static const int64_t SHAPES[][3] = {{1, 1, 1},     {1, 7, 15},    {3, 5, 16},    {4, 16, 17},   {5, 17, 33},
                                    {16, 13, 64},  {17, 33, 63},  {9, 3, 100},   {33, 31, 130}, {66, 70, 48},
                                    {2, 300, 257}, {1, 64, 2048}, {20, 40, 3001}};

/* The bound of gemm_bf16.h for kernel family `fam`. */
static double bound(const char *fam, int64_t K, double mag, double bias) {
    const double u = ldexp(1.0, -24), tiny = ldexp(1.0, -126);
    if (strcmp(fam, "fma") == 0) return (double)(K + 1) * u * (mag + bias);
    const double P = KVC_GEMM_BF16_PARTS, n = P * (double)K + 1;
    const double rep = P >= 3 ? 0.0 : ldexp(1.0, -16) * mag;
    return n * u * (1 + ldexp(1.0, -7)) * ((1 + ldexp(1.0, -7)) * mag + bias) + rep + n * tiny * 2;
}

static void test_accuracy_against_float64(void **state) {
    (void)state;
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int nk = kernels(all);
    for (int kk = 0; kk < nk; kk++) {
        force(all[kk]->name);
        rng = 0x9E3779B97F4A7C15ull; /* the same operands for every kernel */
        double worst = 0.0;          /* largest error / sum |ab|: the figure docs/runtime.md quotes */
        for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
            const int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
            const int64_t lda = K + 3, ldc = N + 2;
            float *A = rand_buf(M * lda, false), *B = rand_buf(N * K, true), *bias = rand_buf(N, false);
            float *C = rand_buf(M * ldc, false);
            uint16_t *Bp = packed(N, K, B, K);
            gemm(M, N, K, A, lda, Bp, bias, C, ldc);
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double ref = bias[j], mag = 0.0;
                    for (int64_t k = 0; k < K; k++) {
                        ref += (double)A[i * lda + k] * B[j * K + k];
                        mag += fabs((double)A[i * lda + k] * B[j * K + k]);
                    }
                    const double err = fabs(C[i * ldc + j] - ref), lim = bound(all[kk]->family, K, mag, fabs(bias[j]));
                    worst = fmax(worst, err / mag);
                    if (err > lim)
                        fail_msg("%s M %lld N %lld K %lld: C[%lld,%lld] = %.9g, float64 %.9g, error %.3g above %.3g",
                                 all[kk]->name, (long long)M, (long long)N, (long long)K, (long long)i, (long long)j,
                                 C[i * ldc + j], ref, err, lim);
                }
            free(A), free(B), free(bias), free(C), free(Bp);
        }
        print_message("%-12s (%s family%s): largest |error| / sum |ab| = %.3g\n", all[kk]->name, all[kk]->family,
                      all[kk]->split ? (KVC_GEMM_BF16_PARTS == 3 ? ", 3 parts" : ", 2 parts") : "", worst);
    }
    force(NULL);
}

static void test_fma_family_bitwise_equal(void **state) {
    (void)state;
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int nk = kernels(all);
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
        float *A = rand_buf(M * K, false), *B = rand_buf(N * K, true), *bias = rand_buf(N, false);
        float *ref = calloc((size_t)(M * N), sizeof(float)), *C = calloc((size_t)(M * N), sizeof(float));
        uint16_t *Bp = packed(N, K, B, K);
        force("portable");
        gemm(M, N, K, A, K, Bp, s % 2 ? bias : NULL, ref, N);
        for (int kk = 0; kk < nk; kk++) {
            if (strcmp(all[kk]->family, "fma") != 0) continue;
            force(all[kk]->name);
            assert_string_equal(kvci_gemm_bf16_active()->name, all[kk]->name);
            gemm(M, N, K, A, K, Bp, s % 2 ? bias : NULL, C, N);
            if (memcmp(C, ref, (size_t)(M * N) * sizeof(float)) != 0)
                fail_msg("kernel %s differs from portable at M %lld N %lld K %lld", all[kk]->name, (long long)M,
                         (long long)N, (long long)K);
        }
        free(A), free(B), free(bias), free(ref), free(C), free(Bp);
    }
    force(NULL);
    assert_int_equal(kvci_gemm_bf16_force("sse9"), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "sse9"));
}

/* Per kernel: rows alone, row blocks of odd sizes over column slices (whole
 * 16-column groups of the packed weights, any width), 1 or 2 threads: every
 * element bitwise the same. Large enough to thread. */
static void test_rows_and_columns_independent(void **state) {
    (void)state;
    const int64_t M = 70, N = 200, K = 300;
    float *A = rand_buf(M * K, false), *B = rand_buf(N * K, true), *bias = rand_buf(N, false);
    float *full = calloc((size_t)(M * N), sizeof(float)), *part = calloc((size_t)(M * N), sizeof(float));
    uint16_t *Bp = packed(N, K, B, K);
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int nk = kernels(all);
    const int64_t Kp = (K + 31) / 32 * 32;
    for (int kk = 0; kk < nk; kk++) {
        if (!runs(all[kk])) continue;
        force(all[kk]->name);
        omp_set_num_threads(2);
        gemm(M, N, K, A, K, Bp, bias, full, N);
        omp_set_num_threads(1);
        for (int64_t i = 0; i < M; i += 7) { /* row alone */
            gemm(1, N, K, A + i * K, K, Bp, bias, part, N);
            if (memcmp(part, full + i * N, (size_t)N * sizeof(float)) != 0)
                fail_msg("%s: row %lld alone differs from M %lld", all[kk]->name, (long long)i, (long long)M);
        }
        omp_set_num_threads(2);
        for (int64_t m0 = 0; m0 < M; m0 += 13) {
            const int64_t mm = m0 + 13 <= M ? 13 : M - m0, g0 = (m0 / 13) % 4, n0 = 16 * g0, nn = N - n0 - (m0 % 5);
            gemm(mm, nn, K, A + m0 * K, K, Bp + g0 * 16 * Kp, bias + n0, part, nn);
            for (int64_t i = 0; i < mm; i++)
                if (memcmp(part + i * nn, full + (m0 + i) * N + n0, (size_t)nn * sizeof(float)) != 0)
                    fail_msg("%s: rows %lld.. columns %lld.. differ", all[kk]->name, (long long)m0, (long long)n0);
        }
        omp_set_num_threads(1);
        gemm(M, N, K, A, K, Bp, bias, part, N);
        if (memcmp(part, full, (size_t)(M * N) * sizeof(float)) != 0)
            fail_msg("%s: 1 thread differs from 2", all[kk]->name);
    }
    force(NULL);
    free(A), free(B), free(bias), free(full), free(part), free(Bp);
}

/* Per kernel: every row block of M = 1 .. 17, 31, 32, 33 rows (the small-M paths, their
 * edges and the tiles past them) bitwise equal to the same rows of one M = 512 call (the
 * large-M blocking), 2 threads; N past the threading threshold, K over several blocks. */
static void test_small_m_equals_large_m(void **state) {
    (void)state;
    const int64_t M = 512, N = 100, K = 2100;
    float *A = rand_buf(M * K, false), *B = rand_buf(N * K, true), *bias = rand_buf(N, false);
    float *full = calloc((size_t)(M * N), sizeof(float)), *part = calloc((size_t)(33 * N), sizeof(float));
    uint16_t *Bp = packed(N, K, B, K);
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int nk = kernels(all) - 1; /* the portable kernel: covered by the fma family's equality */
    static const int64_t rows[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 32, 33};
    omp_set_num_threads(2);
    for (int kk = 0; kk < nk; kk++) {
        if (!runs(all[kk])) continue;
        force(all[kk]->name);
        gemm(M, N, K, A, K, Bp, bias, full, N);
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            const int64_t m = rows[r], i0 = (int64_t)(r * 23) % (M - m);
            gemm(m, N, K, A + i0 * K, K, Bp, bias, part, N);
            if (memcmp(part, full + i0 * N, (size_t)(m * N) * sizeof(float)) != 0)
                fail_msg("%s: rows %lld .. %lld alone (M %lld) differ from M %lld", all[kk]->name, (long long)i0,
                         (long long)(i0 + m - 1), (long long)m, (long long)M);
        }
    }
    force(NULL);
    free(A), free(B), free(bias), free(full), free(part), free(Bp);
}

/* Packing keeps bf16 values exactly, reads transposed sources, rounds f32 to nearest even. */
static void test_pack_round_trip(void **state) {
    (void)state;
    const int64_t N = 21, K = 35;
    float *B = rand_buf(N * K, true), *T = malloc((size_t)(N * K) * sizeof(float)), row[35];
    assert_non_null(T);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) T[k * N + n] = B[n * K + k]; /* [K, N], as an [in, out] checkpoint */
    uint16_t *p = packed(N, K, B, K), *q = malloc((size_t)kvci_bf16_packed_elems(N, K) * sizeof *q);
    assert_non_null(q);
    kvci_bf16_pack(N, K, T, 1, N, q);
    assert_memory_equal(p, q, (size_t)kvci_bf16_packed_elems(N, K) * sizeof *p);
    for (int64_t n = 0; n < N; n++) {
        kvci_bf16_packed_row(p, N, K, n, row);
        assert_memory_equal(row, B + n * K, (size_t)K * sizeof(float));
    }
    const float x = 1.0f + ldexp(1.0f, -8) * 1.5f; /* between two bf16: rounds up to 1 + 2^-7 */
    kvci_bf16_pack(1, 1, &x, 1, 1, q);
    assert_int_equal(q[0], kvc_f32_to_bf16(x));
    assert_int_equal(kvci_bf16_packed_elems(17, 33), 32 * 64);
    free(B), free(T), free(p), free(q);
    /* f32 values that are no bf16 / f16 (NaNs, infinities, subnormals, halfway cases among them), rows
     * longer than the packer's 256-element runs, read in place and transposed: every element is the
     * scalar API's rounding of its source, at its place in the layout */
    enum { N2 = 17, K2 = 300 };
    static float src[N2 * K2], srcT[K2 * N2], got[K2];
    const float odd[] = {NAN,      -NAN,  INFINITY,       -INFINITY,       0.0f,  -0.0f, 1e-40f, -3e-39f,
                         65520.0f, 1e30f, 1.0f + 0x1p-8f, 1.0f + 0x1p-11f, 6e-8f, 3e-8f};
    for (int64_t i = 0; i < N2 * K2; i++)
        src[i] = i % 7 == 3 ? odd[(i / 7) % (int64_t)(sizeof odd / sizeof odd[0])] : frand() * 3.0f;
    for (int64_t n = 0; n < N2; n++)
        for (int64_t k = 0; k < K2; k++) srcT[k * N2 + n] = src[n * K2 + k];
    uint16_t *pk = malloc((size_t)kvci_bf16_packed_elems(N2, K2) * sizeof *pk);
    assert_non_null(pk);
    for (int f16 = 0; f16 < 2; f16++)
        for (int tr = 0; tr < 2; tr++) {
            (f16 ? kvci_f16_pack : kvci_bf16_pack)(N2, K2, tr ? srcT : src, tr ? 1 : K2, tr ? N2 : 1, pk);
            for (int64_t n = 0; n < N2; n++) {
                (f16 ? kvci_f16_packed_row : kvci_bf16_packed_row)(pk, N2, K2, n, got);
                for (int64_t k = 0; k < K2; k++) {
                    const float v = src[n * K2 + k];
                    const float want = f16 ? kvc_f16_to_f32(kvc_f32_to_f16(v)) : kvc_bf16_to_f32(kvc_f32_to_bf16(v));
                    if (memcmp(&want, &got[k], sizeof want) != 0)
                        fail_msg("%s pack%s: (%lld, %lld) of %a is %a, not %a", f16 ? "f16" : "bf16",
                                 tr ? " transposed" : "", (long long)n, (long long)k, (double)v, (double)got[k],
                                 (double)want);
                }
            }
        }
    free(pk);
}

/* f16 weights (kvci_gemm_f16): every kernel that takes them gives, bitwise, the fma family's
 * formula written out here (acc = fmaf(a, f16 weight, acc) in k order, bias last), within its
 * float64 bound, rows alone equal to M = 512, and a forced dot kernel leaves f16 on the fma family.
 * The weights use all 11 bits of f16 (most of them are no bf16). */
static void test_f16_weights(void **state) {
    (void)state;
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int nk = kernels(all);
    omp_set_num_threads(2);
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
        float *A = rand_buf(M * K, false), *B = rand_buf(N * K, false), *bias = rand_buf(N, false);
        for (int64_t i = 0; i < N * K; i++) B[i] = kvc_f16_to_f32(kvc_f32_to_f16(B[i] * 3.0f));
        float *ref = calloc((size_t)(M * N), sizeof(float)), *C = calloc((size_t)(M * N), sizeof(float));
        uint16_t *Bp = malloc((size_t)kvci_bf16_packed_elems(N, K) * sizeof *Bp);
        float *row = malloc((size_t)K * sizeof *row);
        assert_true(ref && C && Bp && row);
        kvci_f16_pack(N, K, B, K, 1, Bp);
        for (int64_t j = 0; j < N; j++) { /* the pack keeps f16 values exactly */
            kvci_f16_packed_row(Bp, N, K, j, row);
            assert_memory_equal(row, B + j * K, (size_t)K * sizeof(float));
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                float acc = 0.0f;
                double exact = bias[j], mag = 0.0;
                for (int64_t k = 0; k < K; k++) {
                    acc = fmaf(A[i * K + k], B[j * K + k], acc);
                    exact += (double)A[i * K + k] * B[j * K + k];
                    mag += fabs((double)A[i * K + k] * B[j * K + k]);
                }
                ref[i * N + j] = acc + bias[j];
                assert_true(fabs(ref[i * N + j] - exact) <= bound("fma", K, mag, fabs(bias[j])));
            }
        for (int kk = 0; kk < nk; kk++) {
            force(all[kk]->name);
            if (!all[kk]->block_f16) { /* a dot kernel: f16 stays on the best fma kernel */
                assert_string_equal(kvci_gemm_f16_active()->family, "fma");
                continue;
            }
            assert_string_equal(kvci_gemm_f16_active()->name, all[kk]->name);
            assert_int_equal(kvci_gemm_f16(M, N, K, A, K, Bp, bias, C, N), KVC_OK);
            if (memcmp(C, ref, (size_t)(M * N) * sizeof(float)) != 0)
                fail_msg("f16 weights on %s differ from the fma formula at M %lld N %lld K %lld", all[kk]->name,
                         (long long)M, (long long)N, (long long)K);
        }
        force(NULL);
        free(A), free(B), free(bias), free(ref), free(C), free(Bp), free(row);
    }
    const int64_t M = 512, N = 40, K = 300; /* rows alone against M = 512, threads on */
    float *A = rand_buf(M * K, false), *B = rand_buf(N * K, false), *full = calloc((size_t)(M * N), sizeof(float));
    float *part = calloc((size_t)(17 * N), sizeof(float));
    uint16_t *Bp = malloc((size_t)kvci_bf16_packed_elems(N, K) * sizeof *Bp);
    assert_true(full && part && Bp);
    kvci_f16_pack(N, K, B, K, 1, Bp);
    assert_int_equal(kvci_gemm_f16(M, N, K, A, K, Bp, NULL, full, N), KVC_OK);
    for (int64_t m = 1; m <= 17; m += 4) {
        const int64_t i0 = (m * 29) % (M - m);
        assert_int_equal(kvci_gemm_f16(m, N, K, A + i0 * K, K, Bp, NULL, part, N), KVC_OK);
        assert_memory_equal(part, full + i0 * N, (size_t)(m * N) * sizeof(float));
    }
    free(A), free(B), free(full), free(part), free(Bp);
}

/* The rounded mode's bound (gemm_bf16.h): 2^-8 S for the rounding of A, then the family's
 * bound over the rounded activations with one part. */
static double rounded_bound(const char *fam, int64_t K, double mag, double bias) {
    const double u = ldexp(1.0, -24), n = (double)K + 1, up = strcmp(fam, "fma") == 0 ? u : u * (1 + ldexp(1.0, -7));
    const double tiny = strcmp(fam, "fma") == 0 ? 0.0 : n * ldexp(1.0, -126) * 2;
    return ldexp(1.0, -8) * mag + n * up * ((1 + ldexp(1.0, -8)) * mag + bias) + tiny;
}

/* Per kernel with a rounded mode: bitwise its exact mode run on A rounded to bf16 beforehand
 * (so the fma family stays bitwise one), within rounded_bound of float64, and further from
 * float64 than the exact mode somewhere (the rounding is not skipped); the best rounded kernel
 * is a one-part dot kernel where the CPU has one. */
static void test_rounded_activations(void **state) {
    (void)state;
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int nk = kernels(all);
    bool one_part = false;
    for (int kk = 0; kk < nk; kk++) one_part = one_part || all[kk]->split_rounded;
    assert_int_equal(one_part, kvci_gemm_bf16_rounded_active()->split_rounded != NULL);
    omp_set_num_threads(2);
    for (int kk = 0; kk < nk; kk++) {
        force(all[kk]->name);
        if (!all[kk]->block_rounded) { /* amx-bf16: the rounded mode runs on the next kernel */
            assert_ptr_not_equal(kvci_gemm_bf16_rounded_active(), all[kk]);
            continue;
        }
        assert_ptr_equal(kvci_gemm_bf16_rounded_active(), all[kk]);
        rng = 0x9E3779B97F4A7C15ull;
        double worst = 0.0, worst_exact = 0.0;
        for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
            const int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2], lda = K + 3, ldc = N + 2;
            float *A = rand_buf(M * lda, false), *Ar = malloc((size_t)(M * lda) * sizeof(float));
            float *B = rand_buf(N * K, true), *bias = rand_buf(N, false);
            float *C = rand_buf(M * ldc, false), *R = malloc((size_t)(M * ldc) * sizeof(float));
            float *E = malloc((size_t)(M * ldc) * sizeof(float));
            assert_true(Ar && R && E);
            memcpy(R, C, (size_t)(M * ldc) * sizeof(float));
            for (int64_t i = 0; i < M * lda; i++) Ar[i] = kvc_bf16_to_f32(kvc_f32_to_bf16(A[i]));
            uint16_t *Bp = packed(N, K, B, K);
            assert_int_equal(kvci_gemm_bf16_rounded(M, N, K, A, lda, Bp, bias, C, ldc), KVC_OK);
            assert_int_equal(kvci_gemm_bf16(M, N, K, Ar, lda, Bp, bias, R, ldc), KVC_OK);
            assert_int_equal(kvci_gemm_bf16(M, N, K, A, lda, Bp, bias, E, ldc), KVC_OK);
            for (int64_t i = 0; i < M; i++) {
                if (memcmp(C + i * ldc, R + i * ldc, (size_t)N * sizeof(float)) != 0)
                    fail_msg("%s rounded: row %lld of M %lld N %lld K %lld differs from the exact mode on bf16(A)",
                             all[kk]->name, (long long)i, (long long)M, (long long)N, (long long)K);
                for (int64_t j = 0; j < N; j++) {
                    double ref = bias[j], mag = 0.0;
                    for (int64_t k = 0; k < K; k++) {
                        ref += (double)A[i * lda + k] * B[j * K + k];
                        mag += fabs((double)A[i * lda + k] * B[j * K + k]);
                    }
                    const double err = fabs(C[i * ldc + j] - ref);
                    const double lim = rounded_bound(all[kk]->family, K, mag, fabs(bias[j]));
                    worst = fmax(worst, err / mag), worst_exact = fmax(worst_exact, fabs(E[i * ldc + j] - ref) / mag);
                    if (err > lim)
                        fail_msg("%s rounded M %lld N %lld K %lld: C[%lld,%lld] = %.9g, float64 %.9g, error %.3g above "
                                 "%.3g",
                                 all[kk]->name, (long long)M, (long long)N, (long long)K, (long long)i, (long long)j,
                                 C[i * ldc + j], ref, err, lim);
                }
            }
            free(A), free(Ar), free(B), free(bias), free(C), free(R), free(E), free(Bp);
        }
        assert_true(worst > 16 * worst_exact);
        print_message("%-12s rounded activations: largest |error| / sum |ab| = %.3g (exact mode %.3g)\n", all[kk]->name,
                      worst, worst_exact);
    }
    force(NULL);
}

/* The batch invariances of the exact mode, in the rounded mode. */
static void test_rounded_invariances(void **state) {
    rounded = true;
    test_rows_and_columns_independent(state);
    test_small_m_equals_large_m(state);
    rounded = false;
}

int main(void) {
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int n = kvci_gemm_bf16_kernels(all);
    printf("gemm bf16 kernels of this CPU:");
    for (int i = 0; i < n; i++) printf(" %s", all[i]->name);
    printf("\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accuracy_against_float64),
        cmocka_unit_test(test_fma_family_bitwise_equal),
        cmocka_unit_test(test_rows_and_columns_independent),
        cmocka_unit_test(test_small_m_equals_large_m),
        cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_f16_weights),
        cmocka_unit_test(test_rounded_activations),
        cmocka_unit_test(test_rounded_invariances),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
