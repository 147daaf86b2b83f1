/* The model's dense layers: one single-precision GEMM whose result for each
 * output element depends only on its own row of A, its own row of B and K,
 * never on M, N, the tiling, the thread count or the instruction set
 * (the batch-invariance contract, docs/runtime.md).
 *
 * Fixed reduction order: element (i, j) = sum_k A[i,k] * B[j,k] is split
 * into 16 lanes, lane l accumulating k = l, l + 16, l + 32, ... in
 * increasing k with fused multiply-adds from +0 (lanes past K add 0 * 0);
 * the lanes are then summed by one fixed tree (l + l+8, then + 4, + 2,
 * + 1), and the bias, if any, is added last. Every kernel (AVX-512: one
 * 16-lane register per element; AVX2+FMA: two 8-lane registers; portable:
 * fmaf on 16 floats) performs exactly these roundings, so their outputs are
 * bitwise equal; work is split over threads by whole output tiles only. */
#ifndef KVC_MODEL_GEMM_H
#define KVC_MODEL_GEMM_H

#include <stdint.h>

#include "kvcache/base.h"

/* C[i, j] = sum_k A[i, k] B[j, k] (+ bias[j]) for i < M, j < N:
 * A [M, K] rows lda apart, B [N, K] rows ldb apart (a Linear weight
 * [out, in]), bias [N] or NULL, C [M, N] rows ldc apart. M, N >= 0, K >= 1;
 * C must not overlap A, B or bias. Uses the OpenMP threads when the
 * product is large enough. */
void kvci_gemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                  const float *bias, float *C, int64_t ldc);

/* One output tile of at most mr x nr elements (the ISA table's tile). */
typedef void (*kvc_gemm_tile_fn)(int mr, int nr, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                                 const float *bias, float *C, int64_t ldc);

typedef struct kvc_gemm_kernel {
    const char *name; /* "avx512", "avx2-fma", "portable" */
    int mr, nr;       /* largest tile */
    kvc_gemm_tile_fn tile;
} kvc_gemm_kernel;

/* The kernels this CPU can run, best first (at most 3; portable always last). */
int kvci_gemm_kernels(const kvc_gemm_kernel **out /* [3] */);
/* The kernel kvci_gemm_nt uses now (the best one unless forced). */
const kvc_gemm_kernel *kvci_gemm_active(void);
/* Forces a kernel by name (tests, bench); NULL restores the best one.
 * KVC_EINVAL naming the kernel when this CPU cannot run it. */
kvc_status kvci_gemm_force(const char *name);

/* The per-ISA tables (gemm_avx512.c, gemm_avx2.c); NULL when the compiler
 * cannot build them. The CPU check is the caller's. */
const kvc_gemm_kernel *kvci_gemm_avx512_kernel(void);
const kvc_gemm_kernel *kvci_gemm_avx2_kernel(void);

#endif
