/* The machine's ceilings, measured while a benchmark runs so that its
 * figures can be divided by them: read bandwidth (every thread sums its
 * share of a 1 GiB buffer in independent vector chains) and the FMA peak
 * (independent FMA chains at the widest vector width this build runs). */
#include <omp.h>
#include <stdlib.h>

#include "bench.h"
#include "kvcache/base.h"
#include "machine_limits.h"

#define GIB ((size_t)1 << 30)

/* The 1 GiB read buffer, allocated by kvc_limits_init. */
static float *g_read;
static const size_t g_read_n = GIB / sizeof(float);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* Sum of n floats (n a multiple of 32) in four independent 8-lane chains:
 * enough loads in flight that the pass is bound by memory, not by the
 * latency of one add chain (a scalar chain reads about 40 % slower here). */
__attribute__((target("avx2"))) static float read_sum_avx2(const float *p, size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    }
    float o[8];
    _mm256_storeu_ps(o, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    return o[0] + o[1] + o[2] + o[3] + o[4] + o[5] + o[6] + o[7];
}
static int has_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#else
static float read_sum_avx2(const float *p, size_t n) { (void)p, (void)n; return 0.0f; }
static int has_avx2(void) { return 0; }
#endif

/* Portable read: eight independent scalar chains (n a multiple of 32). */
static float read_sum_scalar(const float *p, size_t n)
{
    float a[8] = {0};
    for (size_t i = 0; i < n; i += 8)
        for (int k = 0; k < 8; k++) a[k] += p[i + k];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* One STREAM-style pass: every thread sums its contiguous share of the
 * 1 GiB buffer at the widest vector width; GB/s (1e9). */
double kvc_limits_read_pass(void)
{
    const int wide = has_avx2();
    const double t0 = kvc_bench_now();
    double s = 0.0;
#pragma omp parallel reduction(+ : s)
    {
        const size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
        const size_t per = g_read_n / nt & ~(size_t)31, n = id + 1 == nt ? g_read_n - per * id : per;
        const float *p = g_read + per * id;
        s += wide ? read_sum_avx2(p, n) : read_sum_scalar(p, n);
    }
    const double t = kvc_bench_now() - t0;
    if (s == -1.0) return 0.0; /* keeps the sum alive */
    return (double)(g_read_n * sizeof(float)) / t / 1e9;
}

int kvc_limits_init(void)
{
    if (kvc_aligned_alloc(64, g_read_n * sizeof(float), (void **)&g_read) != KVC_OK) return 1;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < g_read_n; i++) g_read[i] = (float)(i & 1023) * 0.001f;
    return 0;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) static double fma_chains_avx2(long iters)
{
    __m256 a[10], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < 10; k++) a[k] = _mm256_set1_ps((float)k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < 10; k++) a[k] = _mm256_fmadd_ps(a[k], m, c);
    __m256 s = a[0];
    for (int k = 1; k < 10; k++) s = _mm256_add_ps(s, a[k]);
    float o[8];
    _mm256_storeu_ps(o, s);
    return (double)o[0];
}
#else
static double fma_chains_avx2(long iters) { (void)iters; return 0.0; }
#endif

/* Scalar fallback: 10 independent multiply-add chains (2 flops each). */
static double fma_chains_scalar(long iters)
{
    float a[10];
    for (int k = 0; k < 10; k++) a[k] = (float)k;
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < 10; k++) a[k] = a[k] * 0.999999f + 1e-7f;
    float s = 0.0f;
    for (int k = 0; k < 10; k++) s += a[k];
    return (double)s;
}

/* One FMA-peak pass in GFLOP/s over all threads (about 0.1 s). */
double kvc_limits_peak_pass(void)
{
    const long iters = 20000000;
    const int wide = has_avx2();
    const double flops_per_iter = 10.0 * 2.0 * (wide ? 8.0 : 1.0);
    double sink = 0.0;
    int threads = 1;
    const double t0 = kvc_bench_now();
#pragma omp parallel reduction(+ : sink)
    {
#pragma omp single
        threads = omp_get_num_threads();
        sink += wide ? fma_chains_avx2(iters) : fma_chains_scalar(iters);
    }
    const double t = kvc_bench_now() - t0;
    if (sink == -1.0) return 0.0;
    return flops_per_iter * (double)iters * threads / t / 1e9;
}

void kvc_limits_free(void)
{
    kvc_aligned_free(g_read);
    g_read = NULL;
}
