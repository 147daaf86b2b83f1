/* The avx2 kernel of kvci_gemm_wq (gemm_quant.h). VPMADDUBSW multiplies unsigned
 * by signed bytes and adds pairs into saturating int16, so each product must keep
 * its pair sum within int16:
 *
 *   Q8_0: |w| (unsigned) times qa with w's sign (VPSIGNB): w qa, each pair sum at
 *         most 2 * 127 * 127 = 32258 < 32767; VPMADDWD by 1 adds the pairs of each
 *         column's four k into its int32 lane, added to the block's isum;
 *   Q4_0: u in [0, 15] times qa: each int16 lane adds the block's 8 pair sums
 *         (|sum| <= 8 * 2 * 15 * 127 = 30480) before one VPMADDWD; isum = that - 8 asum.
 *
 * Exact isum, then the f32 step of the one reduction order. One 64-byte row of the
 * packed block (16 columns x 4 k) is two ymm of 8 columns; the activations' four k
 * of one row are broadcast to every lane. Tiles of up to 2 rows x 1 column group;
 * the weights of a group are read once per 2 rows. Offered when the CPU reports
 * AVX2, FMA and F16C. */
#include "model/gemm_quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "base/internal.h"
#include "base/isa.h"

#define TGT __attribute__((target("avx2,fma,f16c")))
#define INL TGT __attribute__((always_inline)) static inline

#define MR 2 /* rows per tile */

/* Four k of a row of A from k0, in every lane. */
INL __m256i quad(const int8_t *a, int64_t k0) {
    int32_t v;
    __builtin_memcpy(&v, a + k0, 4);
    return _mm256_set1_epi32(v);
}

/* C[i, 16g .. 16g+15] = acc (lanes 0-7, 8-15) (+ bias), the columns < N only. */
INL void store16(const kvc_wq_call *c, int64_t i, int64_t g, const __m256 *acc) {
    float out[16];
    _mm256_storeu_ps(out, acc[0]);
    _mm256_storeu_ps(out + 8, acc[1]);
    const int64_t n0 = g * 16, cols = kvci_min64(16, c->N - n0);
    float *dst = c->C + i * c->ldc + n0;
    for (int64_t j = 0; j < cols; j++) dst[j] = c->bias ? out[j] + c->bias[n0 + j] : out[j];
}

/* Rows [i, i + R) x group g of C, format F. */
INL void tile(const kvc_wq_format F, const int R, const kvc_wq_call *c, int64_t i, int64_t g) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[MR][2];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < c->KB; b++) {
        __m256i s[MR][2];
        const int8_t *a[MR];
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) a[r] = c->qa + (i + r) * c->Kp + b * 32;
        if (F == KVC_WQ_Q8_0) {
            const uint8_t *w = c->W + (g * c->KB + b) * 512;
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) s[r][0] = s[r][1] = _mm256_setzero_si256();
#pragma GCC unroll 16
            for (int q = 0; q < 8; q++)
#pragma GCC unroll 16
                for (int h = 0; h < 2; h++) {
                    const __m256i wv = _mm256_loadu_si256((const __m256i *)(w + q * 64 + h * 32));
                    const __m256i aw = _mm256_abs_epi8(wv);
#pragma GCC unroll 16
                    for (int r = 0; r < R; r++) {
                        const __m256i p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(quad(a[r], 4 * q), wv));
                        s[r][h] = _mm256_add_epi32(s[r][h], _mm256_madd_epi16(p, ones));
                    }
                }
        } else {
            const uint8_t *w = c->W + (g * c->KB + b) * 256;
            const __m256i nib = _mm256_set1_epi8(0x0F);
            __m256i p[MR][2];
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) p[r][0] = p[r][1] = _mm256_setzero_si256();
#pragma GCC unroll 16
            for (int q = 0; q < 4; q++)
#pragma GCC unroll 16
                for (int h = 0; h < 2; h++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(w + q * 64 + h * 32));
                    const __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
#pragma GCC unroll 16
                    for (int r = 0; r < R; r++) {
                        p[r][h] = _mm256_add_epi16(p[r][h], _mm256_maddubs_epi16(lo, quad(a[r], 4 * q)));
                        p[r][h] = _mm256_add_epi16(p[r][h], _mm256_maddubs_epi16(hi, quad(a[r], 16 + 4 * q)));
                    }
                }
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) {
                const __m256i off = _mm256_set1_epi32(8 * c->asum[(i + r) * c->KB + b]);
#pragma GCC unroll 16
                for (int h = 0; h < 2; h++) s[r][h] = _mm256_sub_epi32(_mm256_madd_epi16(p[r][h], ones), off);
            }
        }
        const uint16_t *dw = c->dw + (g * c->KB + b) * 16;
#pragma GCC unroll 16
        for (int h = 0; h < 2; h++) {
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dw + 8 * h)));
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) {
                const __m256 sc = _mm256_mul_ps(d, _mm256_set1_ps(c->da[(i + r) * c->KB + b]));
                acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r][h]), sc, acc[r][h]);
            }
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) store16(c, i + r, g, acc[r]);
}

#define BLOCK_FN(F)                                                                                                    \
    TGT static void tile_##F##_1(const kvc_wq_call *c, int64_t i, int64_t g) { tile(F, 1, c, i, g); }                  \
    TGT static void tile_##F##_2(const kvc_wq_call *c, int64_t i, int64_t g) { tile(F, 2, c, i, g); }                  \
    static void block_##F(const kvc_wq_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {                      \
        const int64_t me = kvci_min64(m1, c->M);                                                                       \
        for (int64_t g = g0; g < g1; g++)                                                                              \
            for (int64_t i = m0; i < me; i += MR) (me - i >= 2 ? tile_##F##_2 : tile_##F##_1)(c, i, g);                \
    }
BLOCK_FN(KVC_WQ_Q8_0)
BLOCK_FN(KVC_WQ_Q4_0)

static const kvc_wq_kernel avx2 = {"avx2", 1, {block_KVC_WQ_Q8_0, block_KVC_WQ_Q4_0}};

const kvc_wq_kernel *kvci_wq_avx2_kernel(void) { return kvci_cpu_runs(KVC_ISA_AVX2) ? &avx2 : NULL; }
#else
const kvc_wq_kernel *kvci_wq_avx2_kernel(void) { return NULL; }
#endif
