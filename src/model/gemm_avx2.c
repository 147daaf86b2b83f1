/* AVX2 + FMA tiles of kvci_gemm_nt: up to 2 x 2 output elements, each with
 * two 8-lane accumulators (lanes 0-7 and 8-15 of the 16-lane order of
 * gemm.h), summed first (the tree's l + l+8 step) and then by the rest of
 * the fixed tree. Compiled with a target attribute; used only when the CPU
 * reports AVX2 and FMA. */
#include "model/gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define INL __attribute__((target("avx2,fma"), always_inline)) static inline
#define TGT __attribute__((target("avx2,fma")))

INL float tree8(__m256 lo, __m256 hi) {
    const __m256 t8 = _mm256_add_ps(lo, hi);
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4)); /* [t4[0] + t4[2], t4[1] + t4[3]] */
    return _mm_cvtss_f32(_mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1)));
}

INL void tile(const int MR, const int NR, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
              const float *bias, float *C, int64_t ldc) {
    __m256 lo[4], hi[4];
    for (int n = 0; n < 4; n++) lo[n] = hi[n] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m256 al[2], ah[2];
#pragma GCC unroll 2
        for (int i = 0; i < MR; i++)
            al[i] = _mm256_loadu_ps(A + i * lda + k), ah[i] = _mm256_loadu_ps(A + i * lda + k + 8);
#pragma GCC unroll 2
        for (int j = 0; j < NR; j++) {
            const __m256 bl = _mm256_loadu_ps(B + j * ldb + k), bh = _mm256_loadu_ps(B + j * ldb + k + 8);
#pragma GCC unroll 2
            for (int i = 0; i < MR; i++) {
                lo[i * 2 + j] = _mm256_fmadd_ps(al[i], bl, lo[i * 2 + j]);
                hi[i * 2 + j] = _mm256_fmadd_ps(ah[i], bh, hi[i * 2 + j]);
            }
        }
    }
    if (k < K) { /* lanes past K load 0 and add 0 * 0 */
        const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const int rem = (int)(K - k);
        const __m256i ml = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem), idx);
        const __m256i mh = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem - 8), idx);
        for (int j = 0; j < NR; j++) {
            const __m256 bl = _mm256_maskload_ps(B + j * ldb + k, ml), bh = _mm256_maskload_ps(B + j * ldb + k + 8, mh);
            for (int i = 0; i < MR; i++) {
                lo[i * 2 + j] = _mm256_fmadd_ps(_mm256_maskload_ps(A + i * lda + k, ml), bl, lo[i * 2 + j]);
                hi[i * 2 + j] = _mm256_fmadd_ps(_mm256_maskload_ps(A + i * lda + k + 8, mh), bh, hi[i * 2 + j]);
            }
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) {
            const float s = tree8(lo[i * 2 + j], hi[i * 2 + j]);
            C[i * ldc + j] = bias ? s + bias[j] : s;
        }
}

#define TILE_FN(MR, NR)                                                                                                \
    TGT static void tile_##MR##x##NR(int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,              \
                                     const float *bias, float *C, int64_t ldc) {                                       \
        tile(MR, NR, K, A, lda, B, ldb, bias, C, ldc);                                                                 \
    }
TILE_FN(1, 1)
TILE_FN(1, 2)
TILE_FN(2, 1)
TILE_FN(2, 2)

typedef void (*fixed_tile)(int64_t, const float *, int64_t, const float *, int64_t, const float *, float *, int64_t);
static const fixed_tile tiles[2][2] = {{tile_1x1, tile_1x2}, {tile_2x1, tile_2x2}};

static void tile_any(int mr, int nr, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                     const float *bias, float *C, int64_t ldc) {
    tiles[mr - 1][nr - 1](K, A, lda, B, ldb, bias, C, ldc);
}

static const kvc_gemm_kernel avx2 = {"avx2-fma", 2, 2, tile_any};

const kvc_gemm_kernel *kvci_gemm_avx2_kernel(void) { return &avx2; }
#else
const kvc_gemm_kernel *kvci_gemm_avx2_kernel(void) { return NULL; }
#endif
