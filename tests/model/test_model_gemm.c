/* The batch-invariant GEMM (src/model/gemm.h): accuracy against a float64
 * product, every kernel of this CPU bitwise equal to the portable one, and
 * each output row / column bitwise independent of M, N, strides and the
 * thread count. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/kvcache.h"
#include "model/gemm.h"

static uint64_t rng = 0x1234567ull;
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

/* Shapes around every tile and lane edge: K below, at and above 16-multiples. */
static const int64_t SHAPES[][3] = {{1, 1, 1},   {1, 7, 15},  {3, 5, 16},    {4, 4, 17},   {5, 9, 33},
                                    {7, 13, 64}, {9, 3, 100}, {17, 31, 130}, {66, 70, 48}, {2, 300, 257}};

static void test_accuracy_against_float64(void **state) {
    (void)state;
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
        const int64_t lda = K + 3, ldb = K + 1, ldc = N + 2;
        float *A = rand_buf(M * lda), *B = rand_buf(N * ldb), *bias = rand_buf(N), *C = rand_buf(M * ldc);
        kvci_gemm_nt(M, N, K, A, lda, B, ldb, bias, C, ldc);
        /* each lane sums ceil(K/16) products, then 4 tree levels and the bias: error <= (ceil(K/16) + 5) u sum|ab| */
        const double u = ldexp(1.0, -24), levels = (double)((K + 15) / 16 + 5);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double ref = bias[j], mag = fabs(bias[j]);
                for (int64_t k = 0; k < K; k++) {
                    ref += (double)A[i * lda + k] * B[j * ldb + k];
                    mag += fabs((double)A[i * lda + k] * B[j * ldb + k]);
                }
                const double err = fabs(C[i * ldc + j] - ref);
                if (err > 1.01 * levels * u * mag)
                    fail_msg("M %lld N %lld K %lld: C[%lld,%lld] = %.9g, float64 %.9g, error %.3g above bound %.3g",
                             (long long)M, (long long)N, (long long)K, (long long)i, (long long)j, C[i * ldc + j], ref,
                             err, 1.01 * levels * u * mag);
            }
        free(A), free(B), free(bias), free(C);
    }
}

static void test_every_kernel_bitwise_equal(void **state) {
    (void)state;
    const kvc_gemm_kernel *all[3];
    const int n = kvci_gemm_kernels(all);
    assert_string_equal(all[n - 1]->name, "portable");
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
        float *A = rand_buf(M * K), *B = rand_buf(N * K), *bias = rand_buf(N);
        float *ref = calloc((size_t)(M * N), sizeof(float)), *C = calloc((size_t)(M * N), sizeof(float));
        assert_int_equal(kvci_gemm_force("portable"), KVC_OK);
        kvci_gemm_nt(M, N, K, A, K, B, K, s % 2 ? bias : NULL, ref, N);
        for (int i = 0; i < n; i++) {
            assert_int_equal(kvci_gemm_force(all[i]->name), KVC_OK);
            assert_string_equal(kvci_gemm_active()->name, all[i]->name);
            kvci_gemm_nt(M, N, K, A, K, B, K, s % 2 ? bias : NULL, C, N);
            if (memcmp(C, ref, (size_t)(M * N) * sizeof(float)) != 0)
                fail_msg("kernel %s differs from portable at M %lld N %lld K %lld", all[i]->name, (long long)M,
                         (long long)N, (long long)K);
        }
        assert_int_equal(kvci_gemm_force(NULL), KVC_OK);
        free(A), free(B), free(bias), free(ref), free(C);
    }
    assert_int_equal(kvci_gemm_force("sse9"), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "sse9"));
}

/* Rows alone, rows inside larger M, column slices of N, strided inputs and
 * 1 or 2 threads: every element bitwise the same. Large enough to thread. */
static void test_rows_and_columns_independent(void **state) {
    (void)state;
    const int64_t M = 70, N = 200, K = 300;
    float *A = rand_buf(M * K), *B = rand_buf(N * K), *bias = rand_buf(N);
    float *full = calloc((size_t)(M * N), sizeof(float)), *part = calloc((size_t)(M * N), sizeof(float));
    omp_set_num_threads(2);
    kvci_gemm_nt(M, N, K, A, K, B, K, bias, full, N);
    omp_set_num_threads(1);
    for (int64_t i = 0; i < M; i += 7) { /* row alone */
        kvci_gemm_nt(1, N, K, A + i * K, K, B, K, bias, part, N);
        assert_memory_equal(part, full + i * N, (size_t)N * sizeof(float));
    }
    omp_set_num_threads(2);
    for (int64_t m0 = 0; m0 < M; m0 += 13) { /* row blocks of odd sizes, column slices */
        const int64_t mm = m0 + 13 <= M ? 13 : M - m0;
        const int64_t n0 = (m0 * 7) % 50, nn = N - n0 - 3;
        kvci_gemm_nt(mm, nn, K, A + m0 * K, K, B + n0 * K, K, bias + n0, part, nn);
        for (int64_t i = 0; i < mm; i++)
            assert_memory_equal(part + i * nn, full + (m0 + i) * N + n0, (size_t)nn * sizeof(float));
    }
    omp_set_num_threads(1);
    kvci_gemm_nt(M, N, K, A, K, B, K, bias, part, N);
    assert_memory_equal(part, full, (size_t)(M * N) * sizeof(float));
    free(A), free(B), free(bias), free(full), free(part);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accuracy_against_float64),
        cmocka_unit_test(test_every_kernel_bitwise_equal),
        cmocka_unit_test(test_rows_and_columns_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
