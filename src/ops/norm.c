/* RMSNorm, the one implementation of the library (fused MLA write, model). A row's inverse RMS is
 * one double accumulator over its elements in order; rows normalised together interleave their
 * accumulators (so that their additions overlap) without changing any row's order, so a row's bits
 * never depend on the rows beside it, the threads or the instruction set. Also the model's LayerNorm
 * without bias (Cohere's), its sums in double in the same way. */
#include <math.h>

#include "base/isa.h"
#include "kvcache/ops.h"
#include "ops/write_internal.h"

/* 1 / sqrt(mean + eps) of a row's sum of squares ss over n elements. */
static inline double inv_of_sum(double ss, int64_t n, float eps) { return 1.0 / sqrt(ss / (double)n + (double)eps); }

double kvci_sum_squares(const float *x, int64_t n) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    return ss;
}

double kvci_rms_inv(const float *x, int64_t n, float eps) { return inv_of_sum(kvci_sum_squares(x, n), n, eps); }

void kvci_rmsnorm_by_sum(float *x, const float *gamma, int64_t n, double ss, int64_t n_total, float eps) {
    const double inv = inv_of_sum(ss, n_total, eps);
    for (int64_t i = 0; i < n; i++) x[i] = kvci_rms_scaled(x[i], inv, gamma[i]);
}

/* gamma NULL: a weightless RMSNorm (NanoChat's), each element scaled as by a weight of 1. */
static inline __attribute__((always_inline)) void scale_row(const float *x, const float *gamma, int64_t n, double inv,
                                                            float *y) {
    if (!gamma) {
        for (int64_t i = 0; i < n; i++) y[i] = kvci_rms_scaled(x[i], inv, 1.0f);
        return;
    }
    for (int64_t i = 0; i < n; i++) y[i] = kvci_rms_scaled(x[i], inv, gamma[i]);
}

void kvc_rmsnorm_f32(const float *x, const float *gamma, int64_t n, float eps, float *y) {
    scale_row(x, gamma, n, kvci_rms_inv(x, n, eps), y);
}

#define GROUP 8 /* rows normalised together */

/* Rows r < R (R <= GROUP) of x, ld apart, normalised into y (rows ld apart; y may be x):
 * kvc_rmsnorm_f32's bits. */
static inline __attribute__((always_inline)) void norm_group(const float *x, int R, int64_t n, int64_t ld,
                                                             const float *gamma, float eps, float *y) {
    double inv[GROUP];
    if (R == GROUP) {
        double ss[GROUP] = {0.0};
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < GROUP; r++) ss[r] += (double)x[r * ld + i] * (double)x[r * ld + i];
        for (int r = 0; r < GROUP; r++) inv[r] = inv_of_sum(ss[r], n, eps);
    } else {
        for (int r = 0; r < R; r++) inv[r] = kvci_rms_inv(x + r * ld, n, eps);
    }
    for (int r = 0; r < R; r++) scale_row(x + r * ld, gamma, n, inv[r], y + r * ld);
}

static inline __attribute__((always_inline)) void norm_rows(const float *x, int64_t n_rows, int64_t n, int64_t ld,
                                                            const float *gamma, float eps, float *y) {
    for (int64_t r = 0; r < n_rows; r += GROUP)
        norm_group(x + r * ld, (int)(n_rows - r < GROUP ? n_rows - r : GROUP), n, ld, gamma, eps, y + r * ld);
}

static void norm_rows_base(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps,
                           float *y) {
    norm_rows(x, n_rows, n, ld, gamma, eps, y);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The same loops compiled for AVX-512 (vectorised by the compiler, no contraction: C11 mode): the same bits. */
__attribute__((target("avx512f"))) static void norm_rows_avx512(const float *x, int64_t n_rows, int64_t n, int64_t ld,
                                                                const float *gamma, float eps, float *y) {
    norm_rows(x, n_rows, n, ld, gamma, eps, y);
}
#endif

void kvci_rmsnorm_rows_to(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps,
                          float *y) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (kvci_isa_runs(KVC_ISA_AVX512)) {
        norm_rows_avx512(x, n_rows, n, ld, gamma, eps, y);
        return;
    }
#endif
    norm_rows_base(x, n_rows, n, ld, gamma, eps, y);
}

void kvci_rmsnorm_rows(float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps) {
    kvci_rmsnorm_rows_to(x, n_rows, n, ld, gamma, eps, x);
}

/* Elements from which the rows are shared among the OpenMP threads (a prefill's norms: 512 tokens x
 * 1,024 channels), in whole groups; a decode step's rows stay on the calling thread. */
#define RMSNORM_PARALLEL_ELEMS (1 << 18)

void kvci_rmsnorm_rows_threads(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps,
                               float *y) {
    const int64_t groups = (n_rows + GROUP - 1) / GROUP;
#pragma omp parallel for schedule(static) if (n_rows > 16 && n_rows * n >= RMSNORM_PARALLEL_ELEMS)
    for (int64_t g = 0; g < groups; g++) {
        const int64_t r0 = g * GROUP;
        kvci_rmsnorm_rows_to(x + r0 * ld, n_rows - r0 < GROUP ? n_rows - r0 : GROUP, n, ld, gamma, eps, y + r0 * ld);
    }
}

void kvc_rmsnorm_rows_f32(float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps) {
    kvci_rmsnorm_rows_threads(x, n_rows, n, ld, gamma, eps, x);
}

/* One row of LayerNorm: its mean, then its variance about the mean, each one double accumulator over the row
 * in order; y = (x - mean) / sqrt(var + eps) * gamma (+ beta when not NULL, in double), rounded once to f32;
 * gamma NULL (OLMo's weightless norm; beta NULL too): no scale. */
static void layernorm_row(const float *x, const float *gamma, const float *beta, int64_t n, float eps, float *y) {
    double sum = 0.0, ss = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i];
    const double mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) ss += ((double)x[i] - mean) * ((double)x[i] - mean);
    const double inv = inv_of_sum(ss, n, eps);
    for (int64_t i = 0; i < n; i++) {
        double v = ((double)x[i] - mean) * inv;
        if (gamma) v *= (double)gamma[i];
        if (beta) v += (double)beta[i];
        y[i] = (float)v;
    }
}

void kvci_layernorm_rows_to(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, int64_t gamma_ld,
                            float eps, float *y) {
    for (int64_t r = 0; r < n_rows; r++) layernorm_row(x + r * ld, gamma + r * gamma_ld, NULL, n, eps, y + r * ld);
}

void kvci_layernorm_rows_threads(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma,
                                 const float *beta, float eps, float *y) {
#pragma omp parallel for schedule(static) if (n_rows > 16 && n_rows * n >= RMSNORM_PARALLEL_ELEMS)
    for (int64_t r = 0; r < n_rows; r++) layernorm_row(x + r * ld, gamma, beta, n, eps, y + r * ld);
}
