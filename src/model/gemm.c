/* kvci_gemm_nt: the blocking and threading around the per-ISA tile kernels,
 * the portable kernel and the run-time choice of kernel. The blocking only
 * decides which tile is computed when and by which thread; every tile runs
 * the whole K reduction itself, so blocking and threads never change a bit. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "base/internal.h"
#include "base/isa.h"
#include "model/gemm.h"

/* The fixed lane tree of gemm.h: l + l+8, + 4, + 2, + 1. */
static float lane_tree(const float l[16]) {
    float t8[8], t4[4];
    for (int i = 0; i < 8; i++) t8[i] = l[i] + l[i + 8];
    for (int i = 0; i < 4; i++) t4[i] = t8[i] + t8[i + 4];
    const float t2a = t4[0] + t4[2], t2b = t4[1] + t4[3];
    return t2a + t2b;
}

static void tile_portable(int mr, int nr, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                          const float *bias, float *C, int64_t ldc) {
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            const float *a = A + i * lda, *b = B + j * ldb;
            float l[16] = {0};
            for (int64_t k0 = 0; k0 < K; k0 += 16)
                for (int64_t q = 0; q < 16; q++) {
                    const int64_t k = k0 + q;
                    l[q] = k < K ? fmaf(a[k], b[k], l[q]) : fmaf(0.0f, 0.0f, l[q]);
                }
            const float s = lane_tree(l);
            C[i * ldc + j] = bias ? s + bias[j] : s;
        }
}

static const kvc_gemm_kernel portable = {"portable", 1, 1, tile_portable};

int kvci_gemm_kernels(const kvc_gemm_kernel **out) {
    int n = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const kvc_gemm_kernel *k512 = kvci_gemm_avx512_kernel(), *k2 = kvci_gemm_avx2_kernel();
    const kvc_isa cap = kvci_isa_cap();
    if (k512 && cap >= KVC_ISA_AVX512 && __builtin_cpu_supports("avx512f")) out[n++] = k512;
    if (k2 && kvci_isa_runs(KVC_ISA_AVX2)) out[n++] = k2;
#endif
    out[n++] = &portable;
    return n;
}

static const kvc_gemm_kernel *_Atomic forced;

const kvc_gemm_kernel *kvci_gemm_active(void) {
    const kvc_gemm_kernel *f = forced;
    if (f) return f;
    const kvc_gemm_kernel *all[3];
    kvci_gemm_kernels(all);
    return all[0];
}

kvc_status kvci_gemm_force(const char *name) {
    if (!name) {
        forced = NULL;
        return KVC_OK;
    }
    const kvc_gemm_kernel *all[3];
    const int n = kvci_gemm_kernels(all);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0) {
            forced = all[i];
            return KVC_OK;
        }
    return kvci_fail(KVC_EINVAL, "gemm: kernel \"%s\" is not available on this CPU (best: %s)", name, all[0]->name);
}

/* Rows of B per job: a block of about 64 KiB of B stays in L2 while the
 * job's row tiles of A pass over it. Rows of A per job: GEMM_MC. */
#define GEMM_B_BLOCK_BYTES  (64 * 1024)
#define GEMM_MC             64
#define GEMM_PARALLEL_FLOPS (1 << 22) /* about 40 us on one core: below, a parallel region costs more than it saves */

void kvci_gemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                  const float *bias, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    KVC_ASSERT(K >= 1);
    const kvc_gemm_kernel *kr = kvci_gemm_active();
    const int64_t MR = kr->mr, NR = kr->nr;
    int64_t nc = GEMM_B_BLOCK_BYTES / (K * (int64_t)sizeof(float));
    nc = kvci_max64(NR, nc / NR * NR);
    const int64_t mc = GEMM_MC / MR * MR;
    const int64_t jobs_m = kvci_cdiv(M, mc), jobs_n = kvci_cdiv(N, nc), jobs = jobs_m * jobs_n;
    const double flops = 2.0 * (double)M * (double)N * (double)K;
#pragma omp parallel for schedule(dynamic, 1) if (jobs > 1 && flops >= GEMM_PARALLEL_FLOPS)
    for (int64_t job = 0; job < jobs; job++) {
        const int64_t m0 = (job % jobs_m) * mc, n0 = (job / jobs_m) * nc;
        const int64_t m1 = kvci_min64(M, m0 + mc), n1 = kvci_min64(N, n0 + nc);
        for (int64_t i = m0; i < m1; i += MR) {
            const int mr = (int)kvci_min64(MR, m1 - i);
            for (int64_t j = n0; j < n1; j += NR)
                kr->tile(mr, (int)kvci_min64(NR, n1 - j), K, A + i * lda, lda, B + j * ldb, ldb, bias ? bias + j : NULL,
                         C + i * ldc + j, ldc);
        }
    }
}
