/* RMSNorm, the one implementation of the library (fused MLA write, model). */
#include <math.h>

#include "kvcache/ops.h"
#include "ops/write_internal.h"

double kvci_rms_inv(const float *x, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    return 1.0 / sqrt(ss / (double)n + (double)eps);
}

void kvc_rmsnorm_f32(const float *x, const float *gamma, int64_t n, float eps, float *y) {
    const double inv = kvci_rms_inv(x, n, eps);
    for (int64_t i = 0; i < n; i++) y[i] = kvci_rms_scaled(x[i], inv, gamma[i]);
}

/* Elements from which the rows are shared among the OpenMP threads (a prefill's norms: 512 tokens x
 * 1,024 channels); a decode step's rows stay on the calling thread. Each row is computed whole by
 * one thread, so the threads never change a bit. */
#define RMSNORM_PARALLEL_ELEMS (1 << 18)

void kvc_rmsnorm_rows_f32(float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps) {
#pragma omp parallel for schedule(static) if (n_rows > 16 && n_rows * n >= RMSNORM_PARALLEL_ELEMS)
    for (int64_t r = 0; r < n_rows; r++) kvc_rmsnorm_f32(x + r * ld, gamma, n, eps, x + r * ld);
}
