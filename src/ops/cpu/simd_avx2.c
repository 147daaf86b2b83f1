/* AVX2 + FMA + F16C table: 8 lanes, K/V converted in registers. Compiled
 * with target attributes so the rest of the library stays baseline x86-64;
 * used only when the CPU reports all three features. */
#include "ops/cpu/simd.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "ops/elem.h"

#define TGT __attribute__((target("avx2,fma,f16c")))

TGT static inline __m256 ld_f32(const void *p, int64_t i) { return _mm256_loadu_ps((const float *)p + i); }
TGT static inline __m256 ld_f16(const void *p, int64_t i)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
}
TGT static inline __m256 ld_bf16(const void *p, int64_t i)
{
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
TGT static inline __m256 ld_i8(const void *p, int64_t i)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)p + i))));
}

TGT static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Channel offset of lane block d (a multiple of 8; NZ tiles are multiples of 8 wide). */
#define OFF(d) (c0 ? ((d) / c0) * nzs + (d) % c0 : (d))

#define KVC_AVX2_PAIR(NAME, LD, DT)                                                                              \
    TGT static void dot_##NAME(const void *k, int64_t nzs, int64_t c0, const float *q, int64_t qstride, int nr,  \
                               int64_t dim, float *out)                                                          \
    {                                                                                                            \
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                                              \
        const int64_t dv = dim & ~(int64_t)7;                                                                    \
        for (int64_t d = 0; d < dv; d += 8) {                                                                    \
            const __m256 x = LD(k, OFF(d));                                                                      \
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), x, a0);                                                 \
            if (nr > 1) a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + qstride + d), x, a1);                           \
            if (nr > 2) a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 2 * qstride + d), x, a2);                       \
            if (nr > 3) a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 3 * qstride + d), x, a3);                       \
        }                                                                                                        \
        out[0] = hsum(a0);                                                                                       \
        if (nr > 1) out[1] = hsum(a1);                                                                           \
        if (nr > 2) out[2] = hsum(a2);                                                                           \
        if (nr > 3) out[3] = hsum(a3);                                                                           \
        for (int64_t d = dv; d < dim; d++) {                                                                     \
            const float x = kvc_elem_load(k, DT, OFF(d));                                                        \
            for (int r = 0; r < nr; r++) out[r] += q[r * qstride + d] * x;                                       \
        }                                                                                                        \
    }                                                                                                            \
    TGT static void axpy_##NAME(const void *v, int64_t nzs, int64_t c0, const float *w, float *acc,              \
                                int64_t astride, int nr, int64_t dim)                                            \
    {                                                                                                            \
        const int64_t dv = dim & ~(int64_t)7;                                                                    \
        for (int64_t d = 0; d < dv; d += 8) {                                                                    \
            const __m256 x = LD(v, OFF(d));                                                                      \
            for (int r = 0; r < nr; r++) {                                                                       \
                float *a = acc + r * astride + d;                                                                \
                _mm256_storeu_ps(a, _mm256_fmadd_ps(_mm256_set1_ps(w[r]), x, _mm256_loadu_ps(a)));              \
            }                                                                                                    \
        }                                                                                                        \
        for (int64_t d = dv; d < dim; d++) {                                                                     \
            const float x = kvc_elem_load(v, DT, OFF(d));                                                        \
            for (int r = 0; r < nr; r++) acc[r * astride + d] += w[r] * x;                                       \
        }                                                                                                        \
    }

KVC_AVX2_PAIR(f32, ld_f32, KVC_DTYPE_F32)
KVC_AVX2_PAIR(f16, ld_f16, KVC_DTYPE_F16)
KVC_AVX2_PAIR(bf16, ld_bf16, KVC_DTYPE_BF16)
KVC_AVX2_PAIR(i8, ld_i8, KVC_DTYPE_I8)

static const kvc_simd_table avx2_table = {
    "avx2-fma-f16c",
    {dot_f32, dot_f16, dot_bf16, dot_i8},
    {axpy_f32, axpy_f16, axpy_bf16, axpy_i8},
};

const kvc_simd_table *kvc_simd_avx2_table(void) { return &avx2_table; }

static const kvc_simd_table *detect(void)
{
    __builtin_cpu_init();
    /* F16C has no __builtin_cpu_supports name in older compilers; every AVX2 CPU has it */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &avx2_table;
    return &kvc_simd_portable;
}
#else
const kvc_simd_table *kvc_simd_avx2_table(void) { return NULL; }
static const kvc_simd_table *detect(void) { return &kvc_simd_portable; }
#endif

static const kvc_simd_table *_Atomic forced;

void kvc_simd_override(const kvc_simd_table *t) { forced = t; }

const kvc_simd_table *kvc_simd_select(void)
{
    const kvc_simd_table *f = forced;
    return f ? f : detect();
}
