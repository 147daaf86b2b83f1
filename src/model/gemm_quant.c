/* kvci_gemm_wq (gemm_quant.h): the portable kernel of the quantized-weight
 * GEMM, the run-time choice of kernel, the quantization of the activations
 * into the per-thread scratch (gemm_scratch.h), and the blocking and threading
 * around the kernels. Every output element is computed whole (all of K) by
 * one kernel call, so blocking and threads never change a bit. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <string.h>

#include "base/internal.h"
#include "base/isa.h"
#include "kvcache/half.h"
#include "model/gemm_quant.h"
#include "model/gemm_scratch.h"

/* The order of gemm_quant.h, one 16-column group of one row at a time. */
static void block_portable(const kvc_wq_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    const bool q8 = c->format == KVC_WQ_Q8_0;
    const int64_t bb = q8 ? 512 : 256;
    for (int64_t i = m0; i < kvci_min64(m1, c->M); i++)
        for (int64_t g = g0; g < g1; g++) {
            float acc[16] = {0};
            for (int64_t b = 0; b < c->KB; b++) {
                const uint8_t *w = c->W + (g * c->KB + b) * bb;
                const int8_t *a = c->qa + i * c->Kp + b * 32;
                int32_t isum[16] = {0};
                for (int kk = 0; kk < (q8 ? 32 : 16); kk++)
                    for (int n = 0; n < 16; n++) {
                        const uint8_t u = w[(kk / 4) * 64 + n * 4 + kk % 4];
                        isum[n] += q8 ? (int8_t)u * a[kk] : (u & 15) * a[kk] + (u >> 4) * a[kk + 16];
                    }
                const float da = c->da[i * c->KB + b];
                for (int n = 0; n < 16; n++) {
                    const int32_t s = q8 ? isum[n] : isum[n] - 8 * c->asum[i * c->KB + b];
                    acc[n] = fmaf((float)s, kvc_f16_to_f32(c->dw[(g * c->KB + b) * 16 + n]) * da, acc[n]);
                }
            }
            for (int64_t n = 0; n < 16 && g * 16 + n < c->N; n++)
                c->C[i * c->ldc + g * 16 + n] = c->bias ? acc[n] + c->bias[g * 16 + n] : acc[n];
        }
}

static const kvc_wq_kernel portable = {"portable", 1, {block_portable, block_portable}};

/* The per-ISA kernels, asked once: their getters run CPUID, which traps to the hypervisor in a VM
 * (measured: about 1.4% of a q8_0 batch-8 model run when every GEMM call asked). */
static const kvc_wq_kernel *isa[3];
static pthread_once_t isa_asked = PTHREAD_ONCE_INIT;
static void ask_isa(void) {
    isa[0] = kvci_wq_amx_kernel(), isa[1] = kvci_wq_vnni512_kernel(), isa[2] = kvci_wq_avx2_kernel();
}

int kvci_wq_kernels(kvc_wq_format f, const kvc_wq_kernel **out) {
    (void)pthread_once(&isa_asked, ask_isa);
    static const kvc_isa needs[3] = {KVC_ISA_AMX, KVC_ISA_AVX512, KVC_ISA_AVX2}; /* of isa[i] */
    const kvc_isa cap = kvci_isa_cap();
    int n = 0;
    for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++)
        if (isa[i] && isa[i]->block[f] && needs[i] <= cap) out[n++] = isa[i];
    out[n++] = &portable;
    return n;
}

static const kvc_wq_kernel *_Atomic forced;

const kvc_wq_kernel *kvci_wq_active(kvc_wq_format f) {
    const kvc_wq_kernel *k = forced;
    if (k && k->block[f]) return k;
    const kvc_wq_kernel *all[KVC_WQ_MAX_KERNELS];
    kvci_wq_kernels(f, all);
    return all[0];
}

kvc_status kvci_wq_force(const char *name) {
    if (!name) {
        forced = NULL;
        return KVC_OK;
    }
    for (int f = KVC_WQ_Q8_0; f <= KVC_WQ_Q4_0; f++) {
        const kvc_wq_kernel *all[KVC_WQ_MAX_KERNELS];
        const int n = kvci_wq_kernels((kvc_wq_format)f, all);
        for (int i = 0; i < n; i++)
            if (strcmp(all[i]->name, name) == 0) {
                forced = all[i];
                return KVC_OK;
            }
    }
    return kvci_fail(KVC_EINVAL, "gemm quant: kernel \"%s\" is not available on this CPU (best: %s)", name,
                     kvci_wq_active(KVC_WQ_Q8_0)->name);
}

#define WQ_B_BLOCK_BYTES   (256 * 1024) /* packed W per job: stays in L2 while the job's rows pass */
#define WQ_MC              64
#define WQ_JOBS_PER_THREAD 4 /* spare jobs for a thread held up elsewhere */
#define WQ_PARALLEL_FLOPS  (1 << 22)
#define WQ_PARALLEL_BYTES  (1 << 20) /* decode: a megabyte of weights is worth the threads' bandwidth */

/* The jobs of one part: row blocks of mc x column blocks of gc groups (a gc of packed W fits L2);
 * few rows (decode): narrower column blocks, so that every thread streams its share of the weights. */
static int64_t part_jobs(kvc_wq_format f, int64_t N, int64_t K, int64_t jobs_m, int64_t *gc_out) {
    const int64_t G = kvci_cdiv(N, 16), group_bytes = kvci_wq_packed_bytes(f, N, K) / G;
    const int64_t want_n = kvci_cdiv(WQ_JOBS_PER_THREAD * omp_get_max_threads(), jobs_m);
    *gc_out = kvci_max64(1, kvci_min64(kvci_max64(1, WQ_B_BLOCK_BYTES / group_bytes), kvci_cdiv(G, want_n)));
    return jobs_m * kvci_cdiv(G, *gc_out);
}

kvc_status kvci_gemm_wq_parts(kvc_wq_format f, int64_t M, int64_t K, const float *A, int64_t lda, int n,
                              const kvc_wq_part *parts) {
    KVC_ASSERT(n >= 1 && n <= KVC_WQ_MAX_PARTS && K >= 1);
    if (M <= 0) return KVC_OK;
    const kvc_wq_kernel *kr = kvci_wq_active(f);
    const int64_t Kp = (K + 31) / 32 * 32, KB = Kp / 32, Mp = (M + 15) / 16 * 16;
    void *scratch;
    if (kvci_gemm_scratch((size_t)(Mp * Kp + Mp * KB * 8), &scratch) != KVC_OK)
        return kvci_fail(KVC_ENOMEM, "gemm quant: no memory for the quantized activations of %lld x %lld", (long long)M,
                         (long long)K);
    int8_t *qa = scratch;
    float *da = (float *)(qa + Mp * Kp);
    int32_t *asum = (int32_t *)(da + Mp * KB);
    const int64_t mc = kvci_max64(1, WQ_MC / kr->mb) * kr->mb, jobs_m = kvci_cdiv(M, mc);
    kvc_wq_call c[KVC_WQ_MAX_PARTS];
    int64_t gc[KVC_WQ_MAX_PARTS], first[KVC_WQ_MAX_PARTS + 1] = {0}; /* part p's jobs: [first[p], first[p + 1]) */
    double flops = 0.0, bytes = 0.0;
    for (int p = 0; p < n; p++) {
        const kvc_wq_part *q = &parts[p];
        c[p] = (kvc_wq_call){
            .format = f,
            .M = M,
            .N = q->N,
            .K = K,
            .Kp = Kp,
            .KB = KB,
            .Mp = Mp,
            .qa = qa,
            .da = da,
            .asum = asum,
            .W = q->W,
            .dw = q->N > 0 ? (const uint16_t *)((const uint8_t *)q->W + kvci_wq_scales_offset(f, q->N, K)) : NULL,
            .bias = q->bias,
            .C = q->C,
            .ldc = q->ldc};
        first[p + 1] = first[p] + (q->N > 0 ? part_jobs(f, q->N, K, jobs_m, &gc[p]) : 0);
        flops += 2.0 * (double)M * (double)q->N * (double)K;
        bytes += q->N > 0 ? (double)kvci_wq_packed_bytes(f, q->N, K) : 0.0;
    }
    const int64_t jobs = first[n];
    if (jobs == 0) return KVC_OK;
    const bool threads = jobs > 1 && (flops >= WQ_PARALLEL_FLOPS || bytes >= WQ_PARALLEL_BYTES);
    /* one parallel region for every part: the activations quantized once, then the parts' jobs in turn;
     * one tile of rows (decode) is quantized before it, sparing the region a barrier */
    const bool one_tile = Mp == 16;
    if (one_tile) kvci_wq_quantize_rows(&c[0], A, lda, 0, 16, qa, da, asum);
#pragma omp parallel if (threads)
    {
        if (!one_tile) {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < Mp; r += 16) kvci_wq_quantize_rows(&c[0], A, lda, r, r + 16, qa, da, asum);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t job = 0; job < jobs; job++) {
            int p = 0;
            while (job >= first[p + 1]) p++;
            const int64_t j = job - first[p], m0 = (j % jobs_m) * mc, g0 = (j / jobs_m) * gc[p];
            kr->block[f](&c[p], m0, kvci_min64(M, m0 + mc), g0, kvci_min64(kvci_cdiv(c[p].N, 16), g0 + gc[p]));
        }
    }
    return KVC_OK;
}

kvc_status kvci_gemm_wq(kvc_wq_format f, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const void *W,
                        const float *bias, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return KVC_OK;
    const kvc_wq_part one = {.N = N, .W = W, .bias = bias, .C = C, .ldc = ldc};
    return kvci_gemm_wq_parts(f, M, K, A, lda, 1, &one);
}
