/* The machine's ceilings, measured while a benchmark runs so that its
 * figures can be divided by them: read bandwidth (every thread sums its
 * share of a 1 GiB buffer in independent vector chains) and the peak of
 * each arithmetic instruction a kernel may use (independent chains of it
 * on every thread): FMA on scalars, ymm and zmm, vdpbf16ps, vpdpbusd, AMX
 * TDPBF16PS and AMX TDPBSSD. KVC_BENCH_READ_MIB sets another buffer size
 * (the tests' 64: a bandwidth figure then, the command still runs, but
 * with a buffer that a large last-level cache may hold). */
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench.h"
#include "kvcache/base.h"
#include "machine_limits.h"
#include "model/gemm_bf16.h"  /* kvci_gemm_bf16_amx_kernel: the OS's grant of AMX tile data */
#include "model/gemm_quant.h" /* kvci_wq_amx_kernel: the same for AMX-INT8 */

#define GIB ((size_t)1 << 30)

/* The read buffers (1 GiB, or KVC_BENCH_READ_MIB), one per page kind asked for, allocated by kvc_limits_init. */
static float *g_read[KVC_LIMITS_PAGE_KINDS];
static size_t g_read_bytes = GIB, g_read_n = GIB / sizeof(float);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* Sum of n floats (n a multiple of 32) in four independent 8-lane chains:
 * enough loads in flight that the pass is bound by memory, not by the
 * latency of one add chain (a scalar chain reads about 40 % slower here). */
__attribute__((target("avx2"))) static float read_sum_avx2(const float *p, size_t n) {
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
static float read_sum_avx2(const float *p, size_t n) {
    (void)p, (void)n;
    return 0.0f;
}
static int has_avx2(void) { return 0; }
#endif

/* Portable read: eight independent scalar chains (n a multiple of 32). */
static float read_sum_scalar(const float *p, size_t n) {
    float a[8] = {0};
    for (size_t i = 0; i < n; i += 8)
        for (int k = 0; k < 8; k++) a[k] += p[i + k];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* Inside a parallel region: t0 = the moment every thread of the team is running, read by all of them after it.
 * A pass timed from before its region also timed the wake-up of the team (a virtual machine's idle vCPU, or
 * the first region's thread creation, can take tens of milliseconds: a 2-thread FMA peak of 50 ms measured
 * one thread's worth in some runs). */
#define TEAM_START(t0)                                                                                                 \
    _Pragma("omp barrier") _Pragma("omp single")(t0) = kvc_bench_now(); /* the single's barrier: all start at t0 */

/* Once per process, before the first timed pass: every thread of the team busy for TEAM_WARM_S. Linux starts a
 * new thread on its creator's CPU and moves it only when it sees both busy; until then the team shares one core
 * (the first 2-thread FMA peak of a process measured 94-182 GFLOP/s where the next ones measured 190-200, and
 * in some processes every pass stayed near 100). */
#define TEAM_WARM_S 0.1
static void team_warm(void) {
    static atomic_bool warm;
    if (atomic_exchange(&warm, true)) return;
#pragma omp parallel
    {
        const double t0 = kvc_bench_now();
        while (kvc_bench_now() - t0 < TEAM_WARM_S) {}
    }
}

/* One STREAM-style pass: every thread sums its contiguous share of the
 * buffer at the widest vector width, timed from the moment all run (TEAM_START); GB/s (1e9). */
double kvc_limits_read_pass(kvc_limits_pages pages) {
    const float *buf = g_read[pages];
    const int wide = has_avx2();
    double s = 0.0, t0 = 0.0;
    team_warm();
#pragma omp parallel reduction(+ : s)
    {
        TEAM_START(t0);
        const size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
        const size_t per = g_read_n / nt & ~(size_t)31, n = id + 1 == nt ? g_read_n - per * id : per;
        const float *p = buf + per * id;
        s += wide ? read_sum_avx2(p, n) : read_sum_scalar(p, n);
    }
    const double t = kvc_bench_now() - t0;
    if (s == -1.0) return 0.0; /* keeps the sum alive */
    return (double)(g_read_n * sizeof(float)) / t / 1e9;
}

/* KVC_BENCH_READ_MIB: a whole number of MiB in [16, 16384]; unset: 1 GiB. 0 when the value is refused. */
static size_t read_bytes_asked(void) {
    const char *v = getenv("KVC_BENCH_READ_MIB");
    if (v == NULL) return GIB;
    char *end = NULL;
    const long mib = strtol(v, &end, 10);
    if (end == v || *end != '\0' || mib < 16 || mib > 16384) {
        fprintf(stderr, "kvcache bench: KVC_BENCH_READ_MIB=\"%s\" is not a whole number of MiB in [16, 16384]\n", v);
        return 0;
    }
    return (size_t)mib << 20;
}

int kvc_limits_init(const bool want[KVC_LIMITS_PAGE_KINDS]) {
    const size_t bytes = read_bytes_asked();
    if (bytes == 0) return 1;
    g_read_bytes = bytes, g_read_n = bytes / sizeof(float);
    for (int k = 0; k < KVC_LIMITS_PAGE_KINDS; k++) {
        if (!want[k]) continue;
        bool advised = false;
        float *buf = NULL;
        if (kvci_pages_alloc(g_read_bytes, k == KVC_LIMITS_2M ? KVCI_PAGES_HUGE : KVCI_PAGES_BASE, &advised,
                             (void **)&buf) != KVC_OK) {
            fprintf(stderr, "kvcache bench: no memory for the %zu MiB read buffer\n", g_read_bytes >> 20);
            kvc_limits_free();
            return 1;
        }
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < g_read_n; i++) buf[i] = (float)(i & 1023) * 0.001f;
        g_read[k] = buf;
    }
    return 0;
}

size_t kvc_limits_read_mib(void) { return g_read_bytes >> 20; }

const char *kvc_limits_pages_name(kvc_limits_pages pages) { return pages == KVC_LIMITS_2M ? "2m" : "4k"; }

int64_t kvc_limits_huge_bytes(kvc_limits_pages pages) {
    const void *ptrs[1] = {g_read[pages]};
    const size_t sizes[1] = {g_read_bytes};
    return kvci_pages_huge_resident(NULL, ptrs, sizes, 1);
}

void kvc_limits_thp_setting(char *buf, size_t n) {
    char line[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    const bool got = f != NULL && fgets(line, sizeof line, f) != NULL;
    if (f != NULL) fclose(f);
    const char *open = got ? strchr(line, '[') : NULL, *close = open ? strchr(open, ']') : NULL;
    if (close == NULL)
        snprintf(buf, n, "unknown");
    else
        snprintf(buf, n, "%.*s", (int)(close - open - 1), open + 1);
}

/* Independent chains of one instruction: enough of them (12) that the
 * pass is bound by the instruction's throughput, not its latency. Each
 * returns a value derived from every chain so that none is dropped. */
#define CHAINS 12
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) static double chains_fma_ymm(long iters) {
    __m256 a[CHAINS], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < CHAINS; k++) a[k] = _mm256_set1_ps((float)k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) a[k] = _mm256_fmadd_ps(a[k], m, c);
    __m256 s = a[0];
    for (int k = 1; k < CHAINS; k++) s = _mm256_add_ps(s, a[k]);
    return (double)_mm256_cvtss_f32(s);
}

__attribute__((target("avx512f"))) static double chains_fma_zmm(long iters) {
    __m512 a[CHAINS], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < CHAINS; k++) a[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) a[k] = _mm512_fmadd_ps(a[k], m, c);
    __m512 s = a[0];
    for (int k = 1; k < CHAINS; k++) s = _mm512_add_ps(s, a[k]);
    return (double)_mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) static double chains_dpbf16(long iters) {
    __m512 a[CHAINS];
    const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
    for (int k = 0; k < CHAINS; k++) a[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) a[k] = _mm512_dpbf16_ps(a[k], x, x);
    __m512 s = a[0];
    for (int k = 1; k < CHAINS; k++) s = _mm512_add_ps(s, a[k]);
    return (double)_mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512vnni"))) static double chains_dpbusd(long iters) {
    __m512i a[CHAINS];
    const __m512i u = _mm512_set1_epi8(3), v = _mm512_set1_epi8(-2);
    for (int k = 0; k < CHAINS; k++) a[k] = _mm512_set1_epi32(k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) a[k] = _mm512_dpbusd_epi32(a[k], u, v);
    __m512i s = a[0];
    for (int k = 1; k < CHAINS; k++) s = _mm512_add_epi32(s, a[k]);
    /* the lanes wrap (vpdpbusd and vpaddd are modular); summed in int64, not by a signed int32 reduce whose
     * C fallback (gcc's _mm512_reduce_add_epi32) overflows, undefined behaviour UBSan reports */
    int32_t lane[16];
    _mm512_storeu_si512(lane, s);
    int64_t sum = 0;
    for (int i = 0; i < 16; i++) sum += lane[i];
    return (double)sum;
}

/* One AMX instruction OP on four independent 16 x 16 accumulators, operands in registers: CHAINS
 * instructions per iteration (the caller counts CHAINS per iteration); A and B tiles ACOLS bytes deep. */
#define TILE_CHAINS(NAME, TARGET, OP, ACOLS)                                                                           \
    __attribute__((target(TARGET))) static double NAME(long iters) {                                                   \
        static const struct {                                                                                          \
            uint8_t palette, start_row, reserved[14];                                                                  \
            uint16_t colsb[16];                                                                                        \
            uint8_t rows[16];                                                                                          \
        } cfg = {.palette = 1,                                                                                         \
                 .colsb = {64, 64, 64, 64, ACOLS, ACOLS, 64, 64},                                                      \
                 .rows = {16, 16, 16, 16, 16, 16, ACOLS / 4, ACOLS / 4}};                                              \
        _tile_loadconfig(&cfg);                                                                                        \
        _tile_zero(0);                                                                                                 \
        _tile_zero(1);                                                                                                 \
        _tile_zero(2);                                                                                                 \
        _tile_zero(3);                                                                                                 \
        _tile_zero(4);                                                                                                 \
        _tile_zero(5);                                                                                                 \
        _tile_zero(6);                                                                                                 \
        _tile_zero(7);                                                                                                 \
        for (long i = 0; i < iters; i++)                                                                               \
            for (int k = 0; k < CHAINS; k += 4) {                                                                      \
                OP(0, 4, 6);                                                                                           \
                OP(1, 4, 7);                                                                                           \
                OP(2, 5, 6);                                                                                           \
                OP(3, 5, 7);                                                                                           \
            }                                                                                                          \
        float out[16 * 16];                                                                                            \
        _tile_stored(0, out, 64);                                                                                      \
        _tile_release();                                                                                               \
        return (double)out[0];                                                                                         \
    }
TILE_CHAINS(chains_tdpbf16, "amx-tile,amx-bf16", _tile_dpbf16ps, 64)
TILE_CHAINS(chains_tdpbssd, "amx-tile,amx-int8", _tile_dpbssd, 32)

static int cpu_has(kvc_peak_kind k) {
    __builtin_cpu_init();
    switch (k) {
    case KVC_PEAK_FMA_SCALAR: return 1;
    case KVC_PEAK_FMA_YMM: return has_avx2();
    case KVC_PEAK_FMA_ZMM: return __builtin_cpu_supports("avx512f");
    case KVC_PEAK_DPBF16: return __builtin_cpu_supports("avx512bf16");
    case KVC_PEAK_DPBUSD: return __builtin_cpu_supports("avx512vnni");
    case KVC_PEAK_TDPBF16: return kvci_gemm_bf16_amx_kernel() != NULL;
    case KVC_PEAK_TDPBSSD: return kvci_wq_amx_kernel() != NULL;
    default: return 0;
    }
}
#else
static double chains_fma_ymm(long iters) {
    (void)iters;
    return 0.0;
}
static double chains_fma_zmm(long iters) {
    (void)iters;
    return 0.0;
}
static double chains_dpbf16(long iters) {
    (void)iters;
    return 0.0;
}
static double chains_dpbusd(long iters) {
    (void)iters;
    return 0.0;
}
static double chains_tdpbf16(long iters) {
    (void)iters;
    return 0.0;
}
static double chains_tdpbssd(long iters) {
    (void)iters;
    return 0.0;
}
static int cpu_has(kvc_peak_kind k) { return k == KVC_PEAK_FMA_SCALAR; }
#endif

/* Scalar fallback: independent multiply-add chains (2 flops each). */
static double chains_fma_scalar(long iters) {
    float a[CHAINS];
    for (int k = 0; k < CHAINS; k++) a[k] = (float)k;
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) a[k] = a[k] * 0.999999f + 1e-7f;
    float s = 0.0f;
    for (int k = 0; k < CHAINS; k++) s += a[k];
    return (double)s;
}

/* Per kind: name, operations per instruction (a multiply-add counts 2;
 * vdpbf16ps: 16 lanes x 2 bf16 products; vpdpbusd: 16 lanes x 4 byte
 * products; TDPBF16PS: 16 x 16 outputs x 32 bf16 products; TDPBSSD with
 * K = 32: 16 x 16 outputs x 32 byte products), iterations of
 * one pass, the chains. */
static const struct {
    const char *name;
    double ops;
    long iters;
    double (*chains)(long iters);
} g_peaks[KVC_PEAK_KINDS] = {
    {"fma-scalar", 2.0, 4000000, chains_fma_scalar},
    {"fma-ymm", 16.0, 8000000, chains_fma_ymm},
    {"fma-zmm", 32.0, 4000000, chains_fma_zmm},
    {"vdpbf16ps-zmm", 64.0, 4000000, chains_dpbf16},
    {"vpdpbusd-zmm", 128.0, 4000000, chains_dpbusd},
    {"tdpbf16ps-amx", 16384.0, 1000000, chains_tdpbf16},
    {"tdpbssd-amx-k32", 16384.0, 1000000, chains_tdpbssd},
};

void kvc_limits_cpu_flags(char *buf, size_t n) {
    buf[0] = '\0';
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
#define KVC_FLAG(F)                                                                                                    \
    do {                                                                                                               \
        if (__builtin_cpu_supports(F)) snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? " " : "", F);     \
    } while (0)
    KVC_FLAG("avx2");
    KVC_FLAG("fma");
    KVC_FLAG("avx512f");
    KVC_FLAG("avx512bw");
    KVC_FLAG("avx512vl");
    KVC_FLAG("avx512vnni");
    KVC_FLAG("avx512bf16");
#undef KVC_FLAG
    if (kvci_gemm_bf16_amx_kernel()) snprintf(buf + strlen(buf), n - strlen(buf), " amx-bf16");
    if (kvci_wq_amx_kernel()) snprintf(buf + strlen(buf), n - strlen(buf), " amx-int8");
#endif
    if (!buf[0]) snprintf(buf, n, "(none of avx2 fma avx512f/bw/vl/vnni/bf16)");
}

const char *kvc_limits_peak_name(kvc_peak_kind k) { return g_peaks[k].name; }

int kvc_limits_has_peak(kvc_peak_kind k) { return cpu_has(k); }

kvc_peak_kind kvc_limits_fma_of_path(const char *isa) {
    if (strstr(isa, "avx512")) return KVC_PEAK_FMA_ZMM; /* also the attention's "amx-bf16+avx512" */
    if (strncmp(isa, "avx2", 4) == 0) return KVC_PEAK_FMA_YMM;
    return KVC_PEAK_FMA_SCALAR;
}

/* A pass runs its iterations in PEAK_SLICES slices and stops after the slice
 * that crosses PEAK_MAX_S seconds (an instrumented or loaded build measures
 * fewer iterations, not a longer wait); the flops counted are the slices
 * every thread finished. */
#define PEAK_SLICES 16
#define PEAK_MAX_S  0.05

double kvc_limits_peak_pass(kvc_peak_kind k) {
    if (!cpu_has(k)) return 0.0;
    const long slice = g_peaks[k].iters / PEAK_SLICES;
    double sink = 0.0, t0 = 0.0;
    long slices = 0;
    team_warm();
#pragma omp parallel reduction(+ : sink, slices)
    {
        TEAM_START(t0);
        for (int i = 0; i < PEAK_SLICES; i++) {
            sink += g_peaks[k].chains(slice);
            slices++;
            if (kvc_bench_now() - t0 > PEAK_MAX_S) break;
        }
    }
    const double t = kvc_bench_now() - t0;
    if (sink == -1.0) return 0.0;
    return g_peaks[k].ops * CHAINS * (double)slice * (double)slices / t / 1e9;
}

void kvc_limits_free(void) {
    for (int k = 0; k < KVC_LIMITS_PAGE_KINDS; k++) {
        kvci_pages_free(g_read[k], g_read_bytes);
        g_read[k] = NULL;
    }
}
