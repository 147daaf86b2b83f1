/* `kvcache bench gemm`, the bf16 decode table: kvci_gemm_bf16 at M = 1 (one
 * token's GEMV) on packed bf16 weights far past the caches, on every kernel of
 * this CPU but the portable one (forced by name), through the library's own
 * blocking and threads, in two shapes:
 *
 *   one W: a single N = 524,288 x K = 1,024 call, 1 GiB of packed weights;
 *   0.6B step: the GEMMs of a Qwen3-0.6B decode step at batch 1 as the model
 *   runs them (q/k/v and gate/up fused, fuse.c): 28 layers of qkv 4096 x 1024,
 *   o 1024 x 2048, gate_up 6144 x 1024, down 1024 x 3072, then the head
 *   151,936 x 1024 (113 calls, 1.19 GB), so the cost of a parallel region per
 *   call shows next to the one-call row.
 *
 * The figure is GB/s of packed weights read per call (or per step) against the
 * read bandwidth (1 GiB on 2 MiB pages, all threads) measured just before each
 * sample: the ratio of each pair, median of REPS, is the share of the roofline
 * (the machine's bandwidth may change between samples; the pair shares it). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench.h"
#include "bench_gemm_decode.h"
#include "machine_limits.h"
#include "model/gemm_bf16.h"

#define REPS       7
#define MIN_CALL_S 0.02 /* each timed sample repeats the call (or step) until it lasts this long */
#define LAYERS     28

typedef struct decode_mat {
    int64_t N, K;
    uint16_t *B; /* packed, on 2 MiB pages */
    size_t bytes;
} decode_mat;

/* Random normal bf16 weights of magnitude 2^-7 .. 2^5 (no denormals, NaN or infinity), packed. */
static int make_mat(int64_t N, int64_t K, uint64_t seed, decode_mat *m) {
    m->N = N, m->K = K, m->bytes = (size_t)kvci_bf16_packed_elems(N, K) * sizeof(uint16_t);
    bool advised = false;
    void *p = NULL;
    if (kvci_pages_alloc(m->bytes, KVCI_PAGES_HUGE, &advised, &p) != KVC_OK) return 1;
    m->B = p;
    const int64_t n = (int64_t)(m->bytes / sizeof(uint16_t));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) { /* splitmix64 of the index: the padding too, which the kernels read */
        uint64_t z = ((uint64_t)i + seed) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull, z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        m->B[i] = (uint16_t)(0x3C00u + (unsigned)(z % 0x600u)) | (uint16_t)((z >> 40 & 1u) << 15);
    }
    return 0;
}

/* Seconds per pass over the n matrices (one call each), one sample. */
static double sample(const decode_mat *m, int n, const float *A, float *C) {
    int passes = 0;
    const double t0 = kvc_bench_now();
    double t;
    do {
        for (int i = 0; i < n; i++) (void)kvci_gemm_bf16(1, m[i].N, m[i].K, A, m[i].K, m[i].B, NULL, C, m[i].N);
        passes++;
        t = kvc_bench_now() - t0;
    } while (t < MIN_CALL_S);
    return t / passes;
}

static void row(const kvc_gemm_bf16_kernel *k, const char *shape, const decode_mat *m, int n, const float *A, float *C,
                bool json) {
    size_t bytes = 0;
    for (int i = 0; i < n; i++) bytes += m[i].bytes;
    double gbs[REPS], read[REPS], ratio[REPS];
    kvci_gemm_bf16_force(k->name);
    (void)sample(m, n, A, C); /* warm-up: the threads, the pages' translations */
    for (int r = 0; r < REPS; r++) {
        read[r] = kvc_limits_read_pass(KVC_LIMITS_2M);
        gbs[r] = (double)bytes / sample(m, n, A, C) / 1e9;
        ratio[r] = gbs[r] / read[r];
    }
    kvci_gemm_bf16_force(NULL);
    const double g = kvc_bench_median(gbs, REPS), rd = kvc_bench_median(read, REPS), q = kvc_bench_median(ratio, REPS);
    if (json)
        printf("{\"bench\":\"gemm_bf16_decode\",\"kernel\":\"%s\",\"shape\":\"%s\",\"threads\":%d,\"calls\":%d,"
               "\"weight_bytes\":%zu,\"weights_gbs\":%.3f,\"read_gbs\":%.3f,\"ratio\":%.3f}\n",
               k->name, shape, omp_get_max_threads(), n, bytes, g, rd, q);
    else
        printf("%-12s %-10s %6d %8.3f %10.2f %10.2f %7.3f\n", k->name, shape, n, (double)bytes / 1e9, g, rd, q);
}

int kvc_bench_gemm_bf16_decode(bool json) {
    static const int64_t layer[4][2] = {{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}};
    enum { STEP = LAYERS * 4 + 1, MATS = STEP + 1 };
    const bool want[KVC_LIMITS_PAGE_KINDS] = {[KVC_LIMITS_2M] = true};
    decode_mat m[MATS] = {{0}};
    float *A = calloc(3072, sizeof(float)), *C = calloc(524288, sizeof(float));
    int rc = !A || !C || kvc_limits_init(want) != 0;
    for (int i = 0; i < MATS && rc == 0; i++) {
        const int64_t N = i == STEP ? 524288 : i == STEP - 1 ? 151936 : layer[i % 4][0];
        rc = make_mat(N, i == STEP || i == STEP - 1 ? 1024 : layer[i % 4][1], (uint64_t)i << 40, &m[i]);
    }
    if (rc == 0) {
        for (int k = 0; k < 3072; k++) A[k] = (float)((k * 7919) % 1000) / 1000.0f - 0.5f;
        const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
        const int nk = kvci_gemm_bf16_kernels(all) - 1; /* not the portable one */
        if (!json)
            printf(
                "\nbf16 decode (M = 1) through kvci_gemm_bf16 on %d threads, weights on 2 MiB pages: GB/s of packed "
                "weights vs the read\nbandwidth measured before each sample (%zu MiB, 2 MiB pages); ratio: median of "
                "the %d pairs' ratios\n%-12s %-10s %6s %8s %10s %10s %7s\n",
                omp_get_max_threads(), kvc_limits_read_mib(), REPS, "kernel", "shape", "calls", "GB", "GB/s", "read",
                "ratio");
        for (int k = 0; k < nk; k++) {
            row(all[k], "one W", &m[STEP], 1, A, C, json);
            row(all[k], "0.6B step", m, STEP, A, C, json);
        }
    } else
        fprintf(stderr, "bench gemm: no memory for the bf16 decode weights (2.2 GB), or no read buffer (above)\n");
    for (int i = 0; i < MATS; i++)
        if (m[i].B) kvci_pages_free(m[i].B, m[i].bytes);
    kvc_limits_free();
    free(A), free(C);
    return rc;
}
