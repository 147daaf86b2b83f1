/* Pieces shared by the x86 SIMD tables (simd_avx2.c, simd_avx512.c): the
 * conversions of 8 K/V channels into f32 lanes, the fixed reduction tree of
 * the dot products, the prefetch walk of the direct kernels, and the AVX2
 * functions the AVX-512 table reuses unchanged (conversion into tiles,
 * exponentials, maximum). Both tables give every (row, key) pair the same
 * per-lane arithmetic, so their results are bitwise equal. */
#ifndef KVC_OPS_CPU_SIMD_X86_H
#define KVC_OPS_CPU_SIMD_X86_H

#include "ops/cpu/simd.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define KVC_X86_AVX2 __attribute__((target("avx2,fma,f16c")))
#define KVC_X86_INL KVC_X86_AVX2 __attribute__((always_inline)) static inline

/* The dispatch table of an x86 path: the file's own qk/pv tile kernels and
 * direct kernels (f32, f16, bf16, i8; fp8 has no direct kernel yet), with the
 * shared AVX2 conversions, exponentials and maximum. */
#define KVC_X86_SIMD_TABLE(VAR, NAME)                                                                                \
    static const kvc_simd_table VAR = {                                                                              \
        NAME,                                                                                                        \
        {kvci_avx2_cvt_f32, kvci_avx2_cvt_f16, kvci_avx2_cvt_bf16, kvci_avx2_cvt_i8, kvci_simd_cvt_e4m3,             \
         kvci_simd_cvt_e5m2},                                                                                        \
        qk,                                                                                                          \
        pv,                                                                                                          \
        {qk_direct_f32, qk_direct_f16, qk_direct_bf16, qk_direct_i8, NULL, NULL},                                    \
        {pv_direct_f32, pv_direct_f16, pv_direct_bf16, pv_direct_i8, NULL, NULL},                                    \
        kvci_avx2_exp_sum,                                                                                           \
        kvci_avx2_max,                                                                                               \
    }

KVC_X86_INL __m256 ld_f32(const void *p, int64_t i) { return _mm256_loadu_ps((const float *)p + i); }
KVC_X86_INL __m256 ld_f16(const void *p, int64_t i)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
}
KVC_X86_INL __m256 ld_bf16(const void *p, int64_t i)
{
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
KVC_X86_INL __m256 ld_i8(const void *p, int64_t i)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)p + i))));
}

/* Lane i of the result = sum of a_i, each by the tree ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)),
 * in two steps that may run apart: reduce4 of a[0..3] and of a[4..7], then reduce_join. */
KVC_X86_INL __m256 reduce4(const __m256 *a) { return _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3])); }
KVC_X86_INL __m256 reduce_join(__m256 t0, __m256 t1)
{
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}
KVC_X86_INL __m256 reduce8(const __m256 *a) { return reduce_join(reduce4(a), reduce4(a + 4)); }

/* Two lines of a direct call's prefetch run per inner step: the requests
 * are spread over the arithmetic instead of issued in one burst before it
 * (a burst fills the miss buffers, and the core waits for them). */
KVC_X86_INL void pf_step(kvc_pf_run *c)
{
    if (kvci_pf_line(c)) kvci_pf_line(c);
}

/* simd_avx2.c */
void kvci_avx2_cvt_f32(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
void kvci_avx2_cvt_f16(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
void kvci_avx2_cvt_bf16(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
void kvci_avx2_cvt_i8(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
float kvci_avx2_exp_sum(float *s, int64_t n, float m);
float kvci_avx2_max(const float *s, int64_t n);
#endif

#endif
