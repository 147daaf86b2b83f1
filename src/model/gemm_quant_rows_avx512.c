/* The AVX-512 form of kvci_wq_quantize_rows (gemm_quant.h): the same bytes as
 * the portable loop, one block of 32 activations in two zmm. Every step is the
 * portable one lane by lane: amax is a max (exact in any order), d = amax / 127
 * and ia = 1 / d are the same scalar divisions, the product a * ia is one f32
 * rounding, VRNDSCALEPS with round-to-nearest-even is rintf in the default
 * rounding mode, the clamp to [-127, 127] and the NaN-to-0 rule are masks.
 * Measured on the prefill GEMM (M = 512, N = 3072, K = 1024, amx-int8, one
 * core): the portable loop was about a third of the call. */
#include "model/gemm_quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "base/internal.h"

#define TGT __attribute__((target("avx512f,avx512bw")))

/* rne(a * ia) clamped to [-127, 127] as int32 lanes; 0 where a * ia is NaN. */
TGT static inline __m512i quantize16(__m512 a, __m512 ia) {
    const __m512 x = _mm512_mul_ps(a, ia);
    const __m512 r = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 clamped = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    return _mm512_maskz_cvtps_epi32(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), clamped);
}

/* Lanes [0, n) of a 16-lane half, n clamped to [0, 16]. */
static __mmask16 lanes(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1u); }

TGT static void quantize_rows(const kvc_wq_call *c, const float *A, int64_t lda, int64_t i0, int64_t i1, int8_t *qa,
                              float *da, int32_t *asum) {
    const __m512 inf = _mm512_set1_ps(INFINITY);
    for (int64_t i = i0; i < i1; i++) {
        int8_t *q = qa + i * c->Kp;
        if (i >= c->M) {
            memset(q, 0, (size_t)c->Kp);
            memset(da + i * c->KB, 0, (size_t)c->KB * sizeof(float));
            memset(asum + i * c->KB, 0, (size_t)c->KB * sizeof(int32_t));
            continue;
        }
        for (int64_t b = 0; b < c->KB; b++) {
            const float *a = A + i * lda + b * 32;
            const int64_t len = c->K - b * 32; /* k past K (the padding) load as 0 and quantize to 0 */
            const __mmask16 m0 = lanes(len), m1 = lanes(len - 16);
            const __m512 a0 = _mm512_maskz_loadu_ps(m0, a), a1 = _mm512_maskz_loadu_ps(m1, a + 16);
            const __m512 abs0 = _mm512_abs_ps(a0), abs1 = _mm512_abs_ps(a1);
            const bool finite =
                (_mm512_cmp_ps_mask(abs0, inf, _CMP_LT_OQ) & _mm512_cmp_ps_mask(abs1, inf, _CMP_LT_OQ)) == 0xFFFF;
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(abs0, abs1));
            const float d = finite ? amax / 127.0f : NAN, ia = d != 0.0f ? 1.0f / d : 0.0f;
            const __m512i q0 = quantize16(a0, _mm512_set1_ps(ia)), q1 = quantize16(a1, _mm512_set1_ps(ia));
            _mm_storeu_si128((__m128i *)(q + b * 32), _mm512_cvtepi32_epi8(q0));
            _mm_storeu_si128((__m128i *)(q + b * 32 + 16), _mm512_cvtepi32_epi8(q1));
            da[i * c->KB + b] = d, asum[i * c->KB + b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        }
    }
}

kvc_wq_quantize_fn kvci_wq_quantize_avx512(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? quantize_rows : NULL;
}
#else
kvc_wq_quantize_fn kvci_wq_quantize_avx512(void) { return NULL; }
#endif
