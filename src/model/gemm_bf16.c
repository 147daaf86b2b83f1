/* kvci_gemm_bf16: packing of bf16 weights, the portable kernel of the fma
 * family, the run-time choice of kernel, the per-thread scratch of the split
 * activations and the blocking and threading around the kernels (gemm_bf16.h).
 * Every output element is computed whole (all of K) by one kernel call, so
 * blocking and threads never change a bit. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/half_rows.h"
#include "base/internal.h"
#include "base/isa.h"
#include "kvcache/half.h"
#include "model/gemm_bf16.h"
#include "model/gemm_scratch.h"

static int64_t k_padded(int64_t K) { return (K + 31) / 32 * 32; }

int64_t kvci_bf16_packed_elems(int64_t N, int64_t K) { return kvci_cdiv(N, 16) * 16 * k_padded(K); }

/* Offset of B[n][k] in the packed layout. */
static int64_t packed_at(int64_t Kp, int64_t n, int64_t k) {
    return (n / 16) * 16 * Kp + (k / 2) * 32 + (n % 16) * 2 + (k % 2);
}

/* B [N, K] (element (n, k) at src[n sn + k sk]) into the packed layout, each element rounded by the
 * row converter `narrow_n` (the scalar API's bits): rows in runs of PACK_RUN through a local buffer
 * when their k are adjacent (sk 1), one element at a time otherwise. Each group of 16 rows owns its
 * 16 Kp elements of dst, so the groups run on the threads (the arena's first touch spread with them)
 * and each element's bits are the same whichever thread writes it. */
#define PACK_RUN      256
#define PACK_PARALLEL (INT64_C(1) << 18) /* elements: below this a load's tiny matrices stay on one thread */
static void pack16(int64_t N, int64_t K, const float *src, int64_t sn, int64_t sk,
                   void (*narrow_n)(const float *, int64_t, uint16_t *), uint16_t *dst) {
    const int64_t Kp = k_padded(K), groups = kvci_cdiv(N, 16);
#pragma omp parallel for schedule(static) if (N * K >= PACK_PARALLEL)
    for (int64_t g = 0; g < groups; g++) {
        uint16_t run[PACK_RUN];
        memset(dst + g * 16 * Kp, 0, (size_t)(16 * Kp) * sizeof *dst);
        for (int64_t n = g * 16; n < kvci_min64(N, g * 16 + 16); n++)
            for (int64_t k0 = 0; k0 < K; k0 += PACK_RUN) {
                const int64_t len = kvci_min64(PACK_RUN, K - k0);
                if (sk == 1)
                    narrow_n(src + n * sn + k0, len, run);
                else
                    for (int64_t k = 0; k < len; k++) narrow_n(src + n * sn + (k0 + k) * sk, 1, run + k);
                for (int64_t k = 0; k < len; k++) dst[packed_at(Kp, n, k0 + k)] = run[k];
            }
    }
}

static void row16(const uint16_t *packed, int64_t K, int64_t n, float (*widen)(uint16_t), float *out) {
    const int64_t Kp = k_padded(K);
    for (int64_t k = 0; k < K; k++) out[k] = widen(packed[packed_at(Kp, n, k)]);
}

void kvci_bf16_pack(int64_t N, int64_t K, const float *src, int64_t sn, int64_t sk, uint16_t *dst) {
    pack16(N, K, src, sn, sk, kvci_f32_to_bf16_n, dst);
}

void kvci_f16_pack(int64_t N, int64_t K, const float *src, int64_t sn, int64_t sk, uint16_t *dst) {
    pack16(N, K, src, sn, sk, kvci_f32_to_f16_n, dst);
}

void kvci_bf16_packed_row(const uint16_t *packed, int64_t N, int64_t K, int64_t n, float *out) {
    (void)N;
    row16(packed, K, n, kvc_bf16_to_f32, out);
}

void kvci_f16_packed_row(const uint16_t *packed, int64_t N, int64_t K, int64_t n, float *out) {
    (void)N;
    row16(packed, K, n, kvc_f16_to_f32, out);
}

/* The fma family's order, one element at a time. */
static void portable_of(float (*widen)(uint16_t), const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0,
                        int64_t g1) {
    for (int64_t i = m0; i < m1; i++)
        for (int64_t j = g0 * 16; j < kvci_min64(c->N, g1 * 16); j++) {
            const float *a = c->A + i * c->lda;
            float acc = 0.0f;
            for (int64_t k = 0; k < c->K; k++) acc = fmaf(a[k], widen(c->B[packed_at(c->Kp, j, k)]), acc);
            c->C[i * c->ldc + j] = c->bias ? acc + c->bias[j] : acc;
        }
}
static void block_portable(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    portable_of(kvc_bf16_to_f32, c, m0, m1, g0, g1);
}
static void block_portable_f16(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    portable_of(kvc_f16_to_f32, c, m0, m1, g0, g1);
}

static const kvc_gemm_bf16_kernel portable = {"portable",         "fma",          NULL, 1, block_portable, false,
                                              block_portable_f16, block_portable, NULL, 0};

int kvci_gemm_bf16_kernels(const kvc_gemm_bf16_kernel **out) {
    int n = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const kvc_gemm_bf16_kernel *amx = kvci_gemm_bf16_amx_kernel(), *dot = kvci_gemm_bf16_dot512_kernel();
    const kvc_gemm_bf16_kernel *f512 = kvci_gemm_bf16_fma512_kernel(), *f256 = kvci_gemm_bf16_fma256_kernel();
    /* measured order (docs/runtime.md): three vdpbf16ps per pair lose to two widened FMAs */
    const kvc_isa cap = kvci_isa_cap();
    if (amx && cap >= KVC_ISA_AMX) out[n++] = amx;
    if (f512 && cap >= KVC_ISA_AVX512 && __builtin_cpu_supports("avx512f")) out[n++] = f512;
    if (dot && cap >= KVC_ISA_AVX512 && __builtin_cpu_supports("avx512bf16")) out[n++] = dot;
    if (f256 && kvci_isa_runs(KVC_ISA_AVX2)) out[n++] = f256;
#endif
    out[n++] = &portable;
    return n;
}

static const kvc_gemm_bf16_kernel *_Atomic forced;

const kvc_gemm_bf16_kernel *kvci_gemm_bf16_active(void) {
    const kvc_gemm_bf16_kernel *f = forced;
    if (f) return f;
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    kvci_gemm_bf16_kernels(all);
    return all[0];
}

const kvc_gemm_bf16_kernel *kvci_gemm_f16_active(void) {
    const kvc_gemm_bf16_kernel *f = forced;
    if (f && f->block_f16) return f;
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int n = kvci_gemm_bf16_kernels(all);
    for (int i = 0; i < n; i++)
        if (all[i]->block_f16) return all[i];
    return &portable;
}

const kvc_gemm_bf16_kernel *kvci_gemm_bf16_rounded_active(void) {
    const kvc_gemm_bf16_kernel *f = forced;
    if (f && f->block_rounded) return f;
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS], *best = NULL;
    const int n = kvci_gemm_bf16_kernels(all);
    for (int i = 0; i < n; i++) {
        if (all[i]->split_rounded) return all[i];
        if (!best && all[i]->block_rounded) best = all[i];
    }
    return best;
}

kvc_status kvci_gemm_bf16_force(const char *name) {
    if (!name) {
        forced = NULL;
        return KVC_OK;
    }
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int n = kvci_gemm_bf16_kernels(all);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0) {
            forced = all[i];
            return KVC_OK;
        }
    return kvci_fail(KVC_EINVAL, "gemm bf16: kernel \"%s\" is not available on this CPU (best: %s)", name,
                     all[0]->name);
}

#define BF16_B_BLOCK_BYTES   (256 * 1024) /* packed B per job: stays in L2 while the job's rows pass */
#define BF16_MC              64
#define BF16_JOBS_PER_THREAD 4 /* k-blocked kernels: spare jobs for a thread held up elsewhere */
#define BF16_PARALLEL_FLOPS  (1 << 22)
#define BF16_PARALLEL_BYTES  (1 << 20) /* decode: a megabyte of weights is worth the threads' bandwidth */

/* Rows [i0, i1) of A [., K] (rows lda apart) rounded to bf16 (nearest even), as f32, into R [., K]:
 * the fma family's rounded mode. */
static void round_rows(const float *A, int64_t lda, int64_t K, int64_t i0, int64_t i1, float *R) {
    for (int64_t i = i0; i < i1; i++)
        for (int64_t k = 0; k < K; k++) R[i * K + k] = kvc_bf16_to_f32(kvc_f32_to_bf16(A[i * lda + k]));
}

/* C = A . B^T (+ bias) by kernel kr, its block function `block` (bf16 or f16 weights) and split
 * `split` (the dot family's; NULL: the kernel reads A, rounded first into scratch when `rounded`). */
static kvc_status gemm16(const kvc_gemm_bf16_kernel *kr, kvc_bf16_block_fn block, kvc_bf16_split_fn split, bool rounded,
                         int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const uint16_t *B,
                         const float *bias, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return KVC_OK;
    KVC_ASSERT(K >= 1);
    kvc_bf16_call c = {.M = M,
                       .N = N,
                       .K = K,
                       .Kp = k_padded(K),
                       .A = A,
                       .lda = lda,
                       .B = B,
                       .bias = bias,
                       .C = C,
                       .ldc = ldc,
                       .Mp = (M + 15) / 16 * 16};
    float *R = NULL; /* the rounded rows of the fma family's rounded mode */
    if (split || rounded) {
        const size_t bytes = split ? (size_t)((rounded ? 1 : KVC_GEMM_BF16_PARTS) * c.Mp * c.Kp) * sizeof(uint16_t)
                                   : (size_t)(M * K) * sizeof(float);
        void *scratch;
        if (kvci_gemm_scratch(bytes, &scratch) != KVC_OK)
            return kvci_fail(KVC_ENOMEM, "gemm bf16: no memory for %zu bytes of split activations", bytes);
        if (split)
            c.As = scratch;
        else
            R = scratch, c.A = R, c.lda = K; /* the kernel reads the rounded rows */
    }
    const int64_t G = kvci_cdiv(N, 16), mc = BF16_MC / kr->mb * kr->mb;
    int64_t gc = kvci_max64(2, BF16_B_BLOCK_BYTES / (32 * c.Kp) / 2 * 2);
    if (!kr->k_blocked) { /* whole 4-group tiles of the AVX-512 kernels (K = 3,072 gave 2: 4 x 2 tiles only), whole
                           * 3-group steps of avx512-fma's blocks of many rows (4 had run 2 + 2: 8 x 2 tiles) */
        const int64_t unit = kr->panel_groups && M >= 16 ? kr->panel_groups : 4;
        gc = kvci_cdiv(gc, unit) * unit;
    }
    if (kr->k_blocked && M > 16) { /* A is re-read once per job: as few column blocks as the threads allow */
        const int64_t want_n = kvci_cdiv(BF16_JOBS_PER_THREAD * omp_get_max_threads(), kvci_cdiv(M, mc));
        gc = kvci_max64(gc, kvci_cdiv(kvci_cdiv(G, want_n), 2) * 2);
    }
    const int64_t jobs_m = kvci_cdiv(M, mc), jobs_n = kvci_cdiv(G, gc), jobs = jobs_m * jobs_n;
    const double flops = 2.0 * (double)M * (double)N * (double)K, bytes = 2.0 * (double)N * (double)K;
    const bool threads = jobs > 1 && (flops >= BF16_PARALLEL_FLOPS || bytes >= BF16_PARALLEL_BYTES);
    uint16_t *As = (uint16_t *)c.As;
    /* one tile of rows (M <= 16, decode): split or rounded before the region, sparing it a barrier;
     * no kernel reads the padding rows then */
    const bool one_tile = M <= 16;
    if (one_tile && split) split(&c, 0, M, As);
    if (one_tile && R) round_rows(A, lda, K, 0, M, R);
#pragma omp parallel if (threads)
    {
        if (split && !one_tile) {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < c.Mp; r += 16) split(&c, r, r + 16, As);
        } else if (R && !one_tile) {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < M; r += 16) round_rows(A, lda, K, r, kvci_min64(r + 16, M), R);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t job = 0; job < jobs; job++) {
            const int64_t m0 = (job % jobs_m) * mc, g0 = (job / jobs_m) * gc;
            block(&c, m0, kvci_min64(M, m0 + mc), g0, kvci_min64(G, g0 + gc));
        }
    }
    return KVC_OK;
}

kvc_status kvci_gemm_bf16(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const uint16_t *B,
                          const float *bias, float *C, int64_t ldc) {
    const kvc_gemm_bf16_kernel *kr = kvci_gemm_bf16_active();
    return gemm16(kr, kr->block, kr->split, false, M, N, K, A, lda, B, bias, C, ldc);
}

kvc_status kvci_gemm_bf16_rounded(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const uint16_t *B,
                                  const float *bias, float *C, int64_t ldc) {
    const kvc_gemm_bf16_kernel *kr = kvci_gemm_bf16_rounded_active();
    return gemm16(kr, kr->block_rounded, kr->split_rounded, true, M, N, K, A, lda, B, bias, C, ldc);
}

kvc_status kvci_gemm_f16(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const uint16_t *B,
                         const float *bias, float *C, int64_t ldc) {
    const kvc_gemm_bf16_kernel *kr = kvci_gemm_f16_active();
    return gemm16(kr, kr->block_f16, NULL, false, M, N, K, A, lda, B, bias, C, ldc);
}
