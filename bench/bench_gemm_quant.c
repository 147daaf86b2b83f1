/* `kvcache bench gemm`, last table: the per-ISA kernels of the quantized-weight
 * GEMM (gemm_quant.h) that this CPU runs, both formats. Each call runs a kernel's
 * block function on every thread, each over its share of the column groups (the
 * split kvci_gemm_wq makes), on random operands (the kernels' time does not depend
 * on the values):
 *
 *   M = 1 (decode): GB/s of packed weights (integers and scales) read per call from
 *   a 1 GiB W on 2 MiB pages, far past the caches, next to the read bandwidth of the
 *   same page kind measured between the kernel's samples (ratio: the roofline share);
 *   M = 512 (prefill): G op/s (a multiply-add counts 2) next to the peak of the
 *   kernel's instruction measured in the same run: TDPBSSD with K = 32 (one block)
 *   for amx-int8, VPDPBUSD on zmm for avx512-vnni (none for avx2). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench.h"
#include "bench_gemm_quant.h"
#include "machine_limits.h"
#include "model/gemm_quant.h"

#define REPS       5
#define MIN_CALL_S 0.02 /* each timed sample repeats the call until it lasts this long */
#define DECODE_K   1024
#define DECODE_W   ((int64_t)1 << 30) /* bytes of the decode W's integers */

static const char *format_name(kvc_wq_format f) { return f == KVC_WQ_Q8_0 ? "q8_0" : "q4_0"; }

/* The operands of an M x N x K call in format f: packed W (integers then scales, on 2 MiB pages, bytes in
 * *wbytes), activations quantized, C; NULL W when memory runs out. */
static kvc_wq_call make_call(kvc_wq_format f, int64_t M, int64_t N, int64_t K, size_t *wbytes) {
    const int64_t Kp = (K + 31) / 32 * 32, KB = Kp / 32, G = (N + 15) / 16, Mp = (M + 15) / 16 * 16;
    const size_t ints = (size_t)(G * KB * (f == KVC_WQ_Q8_0 ? 512 : 256)), scales = (size_t)(G * KB * 16) * 2;
    kvc_wq_call c = {.format = f, .M = M, .N = N, .K = K, .Kp = Kp, .KB = KB, .Mp = Mp, .ldc = N};
    void *w = NULL;
    bool advised = false;
    int8_t *qa = calloc((size_t)(Mp * Kp), 1);
    float *da = calloc((size_t)(Mp * KB), sizeof(float)), *C = calloc((size_t)(M * N), sizeof(float));
    int32_t *asum = calloc((size_t)(Mp * KB), sizeof(int32_t));
    if (!qa || !da || !C || !asum || kvci_pages_alloc(ints + scales, KVCI_PAGES_HUGE, &advised, &w) != KVC_OK) {
        free(qa), free(da), free(C), free(asum);
        return c;
    }
    uint8_t *wb = w;
    uint16_t *dw = (uint16_t *)(wb + ints);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < (int64_t)(ints / 8); i++) { /* a splitmix64 stream: no two blocks alike */
        uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull, z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        memcpy(wb + 8 * i, &z, 8);
    }
    for (int64_t i = 0; i < G * KB * 16; i++) dw[i] = 0x2000; /* f16 2^-7 */
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++)
            qa[i * Kp + k] = (int8_t)((i * 31 + k * 7) % 255 - 127), asum[i * KB + k / 32] += qa[i * Kp + k];
    for (int64_t i = 0; i < M * KB; i++) da[i] = 1.f / 127;
    c.qa = qa, c.da = da, c.asum = asum, c.W = wb, c.dw = dw, c.C = C;
    *wbytes = ints + scales;
    return c;
}

static void free_call(kvc_wq_call *c, size_t wbytes) {
    kvci_pages_free((void *)c->W, wbytes);
    free((void *)c->qa), free((void *)c->da), free((void *)c->asum), free(c->C);
}

/* Seconds per call of kernel k on c, one sample: every thread its share of the groups. */
static double sample(const kvc_wq_kernel *k, const kvc_wq_call *c) {
    const int64_t G = (c->N + 15) / 16;
    int calls = 0;
    const double t0 = kvc_bench_now();
    double t;
    do {
#pragma omp parallel
        {
            const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
            const int64_t g0 = G * id / nt, g1 = G * (id + 1) / nt;
            if (g1 > g0) k->block[c->format](c, 0, c->Mp, g0, g1);
        }
        calls++;
        t = kvc_bench_now() - t0;
    } while (t < MIN_CALL_S);
    return t / calls;
}

/* M = 1 on a 1 GiB W: per kernel, median GB/s of weights and of the read pass between its samples. */
static int decode_rows(const kvc_wq_kernel *const *ks, int nk, kvc_wq_format f, bool json) {
    const int64_t N = DECODE_W / (f == KVC_WQ_Q8_0 ? DECODE_K : DECODE_K / 2);
    size_t wbytes = 0;
    kvc_wq_call c = make_call(f, 1, N, DECODE_K, &wbytes);
    if (!c.W) return 1;
    for (int k = 0; k < nk; k++) {
        double t[REPS], bw[REPS];
        (void)sample(ks[k], &c);
        for (int r = 0; r < REPS; r++) t[r] = sample(ks[k], &c), bw[r] = kvc_limits_read_pass(KVC_LIMITS_2M);
        const double gbs = (double)wbytes / kvc_bench_median(t, REPS) / 1e9, read = kvc_bench_median(bw, REPS);
        if (json)
            printf("{\"bench\":\"gemm_quant_decode\",\"kernel\":\"%s\",\"format\":\"%s\",\"threads\":%d,\"M\":1,"
                   "\"N\":%lld,\"K\":%d,\"weight_bytes\":%zu,\"weights_gbs\":%.3f,\"read_gbs\":%.3f,\"ratio\":%.3f}\n",
                   ks[k]->name, format_name(f), omp_get_max_threads(), (long long)N, DECODE_K, wbytes, gbs, read,
                   gbs / read);
        else
            printf("%-6s %-12s %5d %8lld %6d %10.2f %10.2f %7.3f\n", format_name(f), ks[k]->name, 1, (long long)N,
                   DECODE_K, gbs, read, gbs / read);
    }
    free_call(&c, wbytes);
    return 0;
}

/* M = 512 on the 0.6B model's MLP shapes: per kernel, median G op/s and its instruction's peak. */
static int prefill_rows(const kvc_wq_kernel *const *ks, int nk, kvc_wq_format f, const double *peak, bool json) {
    static const int64_t NK[][2] = {{3072, 1024}, {1024, 3072}};
    for (size_t s = 0; s < 2; s++) {
        size_t wbytes = 0;
        kvc_wq_call c = make_call(f, 512, NK[s][0], NK[s][1], &wbytes);
        if (!c.W) return 1;
        for (int k = 0; k < nk; k++) {
            double t[REPS];
            (void)sample(ks[k], &c);
            for (int r = 0; r < REPS; r++) t[r] = sample(ks[k], &c);
            const double gops = 2.0 * 512 * (double)c.N * (double)c.K / kvc_bench_median(t, REPS) / 1e9;
            if (json)
                printf("{\"bench\":\"gemm_quant_prefill\",\"kernel\":\"%s\",\"format\":\"%s\",\"threads\":%d,"
                       "\"M\":512,\"N\":%lld,\"K\":%lld,\"gops\":%.3f,\"peak_gops\":%.3f}\n",
                       ks[k]->name, format_name(f), omp_get_max_threads(), (long long)c.N, (long long)c.K, gops,
                       peak[k]);
            else if (peak[k] > 0)
                printf("%-6s %-12s %5d %8lld %6lld %10.1f %10.1f %7.3f\n", format_name(f), ks[k]->name, 512,
                       (long long)c.N, (long long)c.K, gops, peak[k], gops / peak[k]);
            else
                printf("%-6s %-12s %5d %8lld %6lld %10.1f %10s %7s\n", format_name(f), ks[k]->name, 512, (long long)c.N,
                       (long long)c.K, gops, "-", "-");
        }
        free_call(&c, wbytes);
    }
    return 0;
}

int kvc_bench_gemm_quant(bool json) {
    const kvc_wq_kernel *all[3] = {kvci_wq_amx_kernel(), kvci_wq_vnni512_kernel(), kvci_wq_avx2_kernel()}, *ks[3];
    const kvc_peak_kind kinds[3] = {KVC_PEAK_TDPBSSD, KVC_PEAK_DPBUSD, KVC_PEAK_KINDS};
    double peak[3];
    int nk = 0;
    for (int k = 0; k < 3; k++)
        if (all[k]) ks[nk] = all[k], peak[nk++] = kinds[k] == KVC_PEAK_KINDS ? 0.0 : kvc_limits_peak_pass(kinds[k]);
    if (nk == 0) return 0;
    const bool want[KVC_LIMITS_PAGE_KINDS] = {[KVC_LIMITS_2M] = true};
    if (kvc_limits_init(want) != 0) return 1;
    if (!json)
        printf(
            "\nquantized weights (gemm_quant.h), the ISA kernels' block functions on %d threads, each its share of "
            "the column groups;\nM = 1: GB/s of packed weights (1 GiB of integers + scales, 2 MiB pages) vs the "
            "read bandwidth (%zu MiB, 2 MiB pages)\nmeasured between the samples (medians of %d); M = 512: G op/s vs "
            "the kernel's instruction peak in this run\n(amx-int8: tdpbssd-amx-k32, avx512-vnni: vpdpbusd-zmm)\n"
            "%-6s %-12s %5s %8s %6s %10s %10s %7s\n",
            omp_get_max_threads(), kvc_limits_read_mib(), REPS, "format", "kernel", "M", "N", "K", "GB|Gop/s",
            "read|peak", "ratio");
    int rc = 0;
    for (int f = 0; f < 2 && rc == 0; f++) rc = decode_rows(ks, nk, (kvc_wq_format)f, json);
    for (int f = 0; f < 2 && rc == 0; f++) rc = prefill_rows(ks, nk, (kvc_wq_format)f, peak, json);
    kvc_limits_free();
    if (rc) fprintf(stderr, "bench gemm: out of memory for the quantized weights\n");
    return rc;
}
