/* `kvcache bench gemm`: the model's batch-invariant GEMM (src/model/gemm.h)
 * against OpenBLAS cblas_sgemm on the same operands, in the same run, on
 * the projection / MLP shapes of a Qwen3-0.6B-sized layer and of the
 * oracle models, for decode and prefill row counts, with the same thread
 * count (OpenBLAS's set with openblas_set_num_threads). With one thread
 * the two are timed call by call in alternation (the fair A/B on a shared
 * machine). With more, each side owns a pool of threads that busy-waits
 * after a call (libgomp's spin, OpenBLAS's server threads until their
 * timeout, 2^28 cycles by default), so in alternation each side would run
 * against the other's spinning threads: there the samples are taken in
 * blocks, each side warmed up first, with an idle gap after each block long
 * enough for the other pool to go to sleep. The figure is the median
 * GFLOP/s of each and their ratio. A check that the two agree to float
 * rounding runs once per shape.
 *
 * Then the GEMM over bf16 weights (gemm_bf16.h), on every kernel of this
 * CPU but the portable one, next to the f32 GEMM on the same shapes, and the
 * instruction peaks measured in the same run (all threads): FMA on ymm and
 * zmm, vdpbf16ps and, where the OS grants tiles, TDPBF16PS. The dot kernels
 * run three bf16 products per activation, so their ceiling is a third of the
 * instruction's peak. Next to them the rounded mode (kvci_gemm_bf16_rounded:
 * activations rounded to bf16, one product each) of every kernel that has one,
 * in columns marked "/r". Then the bf16 GEMV of decode against the read bandwidth
 * (bench_gemm_decode.c); last, the quantized-weight kernels (bench_gemm_quant.c). */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "bench_gemm_decode.h"
#include "bench_gemm_quant.h"
#include "machine_limits.h"
#include "model/gemm.h"
#include "model/gemm_bf16.h"

#define REPS       9
#define MIN_CALL_S 0.02 /* each timed sample repeats the call until it lasts this long */
#define IDLE_GAP_S 0.15 /* > OpenBLAS's default thread timeout (2^28 cycles, about 0.1 s) and libgomp's spin */

typedef struct gemm_shape {
    const char *name; /* the layer the shape comes from */
    int64_t M, N, K;
} gemm_shape;

/* The instruction-set flags the CPU reports that matter to the kernels
 * (the names both GCC and clang know for __builtin_cpu_supports). */
static void cpu_flags(char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
#define FLAG(name)                                                                                                     \
    do {                                                                                                               \
        if (__builtin_cpu_supports(name) && len + sizeof name + 1 < cap)                                               \
            len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? " " : "", name);                               \
    } while (0)
    FLAG("avx2");
    FLAG("fma");
    FLAG("avx512f");
    FLAG("avx512bw");
    FLAG("avx512vl");
    FLAG("avx512vnni");
    FLAG("avx512bf16");
#undef FLAG
    if (kvci_gemm_bf16_amx_kernel() && len + 10 < cap) len += (size_t)snprintf(out + len, cap - len, " amx-bf16");
#endif
    if (len == 0) snprintf(out, cap, "none of avx2/fma/avx512 reported");
}

/* Seconds per call of ours (who 0) or OpenBLAS (who 1), one sample. */
static double sample(int who, const gemm_shape *s, const float *A, const float *B, float *C) {
    int calls = 0;
    const double t0 = kvc_bench_now();
    double t;
    do {
        if (who == 0)
            kvci_gemm_nt(s->M, s->N, s->K, A, s->K, B, s->K, NULL, C, s->N);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)s->M, (int)s->N, (int)s->K, 1.0f, A, (int)s->K, B,
                        (int)s->K, 0.0f, C, (int)s->N);
        calls++;
        t = kvc_bench_now() - t0;
    } while (t < MIN_CALL_S);
    return t / calls;
}

/* Sleeps until the thread pool of the side just measured has stopped spinning. */
static void idle_gap(void) {
    const struct timespec ts = {0, (long)(IDLE_GAP_S * 1e9)};
    nanosleep(&ts, NULL);
}

static int run_shape(const gemm_shape *s, bool json) {
    float *A = malloc((size_t)(s->M * s->K) * sizeof(float)), *B = malloc((size_t)(s->N * s->K) * sizeof(float));
    float *C = malloc((size_t)(s->M * s->N) * sizeof(float)), *R = malloc((size_t)(s->M * s->N) * sizeof(float));
    if (!A || !B || !C || !R) {
        fprintf(stderr, "bench gemm: out of memory for %s M %lld\n", s->name, (long long)s->M);
        free(A), free(B), free(C), free(R);
        return 1;
    }
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < s->M * s->K; i++)
        x ^= x << 13, x ^= x >> 7, x ^= x << 17, A[i] = (float)(x >> 40) / 16777216.0f - 0.5f;
    for (int64_t i = 0; i < s->N * s->K; i++)
        x ^= x << 13, x ^= x >> 7, x ^= x << 17, B[i] = (float)(x >> 40) / 16777216.0f - 0.5f;
    kvci_gemm_nt(s->M, s->N, s->K, A, s->K, B, s->K, NULL, C, s->N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)s->M, (int)s->N, (int)s->K, 1.0f, A, (int)s->K, B,
                (int)s->K, 0.0f, R, (int)s->N);
    double diff = 0.0;
    for (int64_t i = 0; i < s->M * s->N; i++) diff = fmax(diff, fabs((double)C[i] - R[i]));
    double ours[REPS], blas[REPS];
    if (omp_get_max_threads() == 1) {
        for (int r = 0; r < REPS; r++) {
            ours[r] = sample(0, s, A, B, C);
            blas[r] = sample(1, s, A, B, R);
        }
    } else {
        idle_gap();
        (void)sample(0, s, A, B, C); /* warm-up: wakes our pool */
        for (int r = 0; r < REPS; r++) ours[r] = sample(0, s, A, B, C);
        idle_gap();
        (void)sample(1, s, A, B, R); /* warm-up: wakes OpenBLAS's pool */
        for (int r = 0; r < REPS; r++) blas[r] = sample(1, s, A, B, R);
    }
    const double flop = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    const double go = flop / kvc_bench_median(ours, REPS) / 1e9, gb = flop / kvc_bench_median(blas, REPS) / 1e9;
    if (json)
        printf("{\"bench\":\"gemm\",\"kernel\":\"%s\",\"threads\":%d,\"layer\":\"%s\",\"M\":%lld,\"N\":%lld,\"K\":%lld,"
               "\"gflops\":%.3f,\"openblas_gflops\":%.3f,\"ratio\":%.3f,\"max_abs_diff\":%.3g}\n",
               kvci_gemm_active()->name, omp_get_max_threads(), s->name, (long long)s->M, (long long)s->N,
               (long long)s->K, go, gb, go / gb, diff);
    else
        printf("%-22s %5lld %6lld %6lld %10.2f %10.2f %7.2f %10.2g\n", s->name, (long long)s->M, (long long)s->N,
               (long long)s->K, go, gb, go / gb, diff);
    free(A), free(B), free(C), free(R);
    return 0;
}

/* GFLOP/s of the f32 GEMM (kernel NULL) or a bf16 kernel (its rounded mode when `rnd`) on one
 * shape, median of REPS samples. */
static double bf16_rate(const kvc_gemm_bf16_kernel *k, bool rnd, const gemm_shape *s, const float *A, const float *B,
                        const uint16_t *Bp, float *C) {
    double t[REPS];
    if (k) kvci_gemm_bf16_force(k->name);
    for (int r = 0; r < REPS; r++) {
        int calls = 0;
        const double t0 = kvc_bench_now();
        do {
            if (k && rnd)
                (void)kvci_gemm_bf16_rounded(s->M, s->N, s->K, A, s->K, Bp, NULL, C, s->N);
            else if (k)
                (void)kvci_gemm_bf16(s->M, s->N, s->K, A, s->K, Bp, NULL, C, s->N);
            else
                kvci_gemm_nt(s->M, s->N, s->K, A, s->K, B, s->K, NULL, C, s->N);
            calls++;
            t[r] = kvc_bench_now() - t0;
        } while (t[r] < MIN_CALL_S);
        t[r] /= calls;
    }
    kvci_gemm_bf16_force(NULL);
    return 2.0 * (double)s->M * (double)s->N * (double)s->K / kvc_bench_median(t, REPS) / 1e9;
}

static int run_bf16(bool json) {
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int nk = kvci_gemm_bf16_kernels(all) - 1; /* not the portable one */
    static const kvc_peak_kind kinds[] = {KVC_PEAK_FMA_YMM, KVC_PEAK_FMA_ZMM, KVC_PEAK_DPBF16, KVC_PEAK_TDPBF16};
    double peak[4];
    idle_gap(); /* OpenBLAS's threads spin after openblas_set_num_threads and the f32 table: the peaks had shared the
                   cores */
    for (int i = 0; i < 4; i++) peak[i] = kvc_limits_peak_pass(kinds[i]);
    if (json)
        printf("{\"bench\":\"gemm_bf16_peaks\",\"fma_ymm\":%.1f,\"fma_zmm\":%.1f,\"vdpbf16ps_zmm\":%.1f,"
               "\"tdpbf16ps\":%.1f}\n",
               peak[0], peak[1], peak[2], peak[3]);
    else {
        printf("\nbf16 weights (packed), f32 activations; dot kernels: %d bf16 parts per activation; /r: activations "
               "rounded to bf16 (one part)\n"
               "peaks, GFLOP/s, all threads: fma-ymm %.1f  fma-zmm %.1f  vdpbf16ps-zmm %.1f  tdpbf16ps (AMX) %.1f\n"
               "%-6s %6s %6s %10s",
               KVC_GEMM_BF16_PARTS, peak[0], peak[1], peak[2], peak[3], "M", "N", "K", "f32");
        for (int k = 0; k < nk; k++) printf(" %14s", all[k]->name);
        for (int k = 0; k < nk; k++)
            if (all[k]->block_rounded) printf(" %12s/r", all[k]->name);
        printf("\n");
    }
    static const int64_t NK[][2] = {{1024, 1024}, {3072, 1024}, {1024, 3072}}, rows[] = {1, 8, 64, 512};
    for (size_t l = 0; l < 3; l++)
        for (size_t r = 0; r < 4; r++) {
            const gemm_shape s = {"bf16", rows[r], NK[l][0], NK[l][1]};
            float *A = malloc((size_t)(s.M * s.K) * sizeof(float)), *B = malloc((size_t)(s.N * s.K) * sizeof(float));
            float *C = malloc((size_t)(s.M * s.N) * sizeof(float));
            uint16_t *Bp = malloc((size_t)kvci_bf16_packed_elems(s.N, s.K) * sizeof *Bp);
            if (!A || !B || !C || !Bp) {
                free(A), free(B), free(C), free(Bp);
                fprintf(stderr, "bench gemm: out of memory\n");
                return 1;
            }
            for (int64_t i = 0; i < s.M * s.K; i++) A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
            for (int64_t i = 0; i < s.N * s.K; i++) B[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
            kvci_bf16_pack(s.N, s.K, B, s.K, 1, Bp);
            const double f32 = bf16_rate(NULL, false, &s, A, B, Bp, C);
            if (!json) printf("%-6lld %6lld %6lld %10.1f", (long long)s.M, (long long)s.N, (long long)s.K, f32);
            for (int rnd = 0; rnd < 2; rnd++)
                for (int k = 0; k < nk; k++) {
                    if (rnd && !all[k]->block_rounded) continue;
                    const double g = bf16_rate(all[k], rnd, &s, A, B, Bp, C);
                    if (json)
                        printf("{\"bench\":\"gemm_bf16\",\"kernel\":\"%s\",\"activations\":\"%s\",\"M\":%lld,"
                               "\"N\":%lld,\"K\":%lld,\"gflops\":%.3f,\"f32_gflops\":%.3f}\n",
                               all[k]->name, rnd ? "bf16" : "f32", (long long)s.M, (long long)s.N, (long long)s.K, g,
                               f32);
                    else
                        printf(" %14.1f", g);
                }
            if (!json) printf("\n");
            free(A), free(B), free(C), free(Bp);
        }
    return 0;
}

/* The tables, in the order they run; --only TEXT keeps those whose name contains TEXT. */
static const char *const TABLES[] = {"f32", "bf16", "bf16-decode", "quant"};
enum { TABLE_F32, TABLE_BF16, TABLE_DECODE, TABLE_QUANT, TABLE_COUNT };

int kvc_bench_gemm(const kvc_bench_opts *opts) {
    bool run[TABLE_COUNT], any = false;
    for (int t = 0; t < TABLE_COUNT; t++) {
        run[t] = !opts->only || strstr(TABLES[t], opts->only);
        any = any || run[t];
    }
    if (!any) {
        fprintf(stderr, "bench gemm: --only \"%s\" matches no table; the tables are: f32 bf16 bf16-decode quant\n",
                opts->only);
        return 2;
    }
    const int threads = omp_get_max_threads();
    openblas_set_num_threads(threads);
    char flags[160];
    cpu_flags(flags, sizeof flags);
    static const struct {
        const char *name;
        int64_t N, K;
    } layers[] = {{"0.6B q_proj", 2048, 1024},     {"0.6B gate/up_proj", 3072, 1024},  {"0.6B down_proj", 1024, 3072},
                  {"oracle qwen3 gate", 256, 128}, {"oracle qwen3 lm_head", 512, 128}, {"oracle ds kv_a", 48, 128}};
    static const int64_t rows[] = {1, 8, 64, 256};
    if (!opts->json && run[TABLE_F32])
        printf("gemm: kernel %s, %d threads (OMP_WAIT_POLICY %s), CPU flags: %s\n"
               "C[M,N] = A[M,K] B[N,K]^T; GFLOP/s median of %d samples (%s); ratio = ours / OpenBLAS (%s)\n"
               "%-22s %5s %6s %6s %10s %10s %7s %10s\n",
               kvci_gemm_active()->name, threads, getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "unset",
               flags, REPS,
               threads == 1 ? "alternating call by call" : "in blocks per side, the other side's threads idle",
               openblas_get_config(), "layer", "M", "N", "K", "ours", "OpenBLAS", "ratio", "max |diff|");
    int rc = 0;
    for (size_t l = 0; l < sizeof layers / sizeof layers[0] && run[TABLE_F32]; l++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            const gemm_shape s = {layers[l].name, rows[r], layers[l].N, layers[l].K};
            rc |= run_shape(&s, opts->json);
        }
    if (run[TABLE_BF16]) rc |= run_bf16(opts->json);
    if (run[TABLE_DECODE]) rc |= kvc_bench_gemm_bf16_decode(opts->json);
    return run[TABLE_QUANT] ? rc | kvc_bench_gemm_quant(opts->json) : rc;
}
