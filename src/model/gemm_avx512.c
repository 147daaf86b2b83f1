/* AVX-512F tiles of kvci_gemm_nt: up to 4 x 4 output elements, one 16-lane
 * accumulator each (lane l holds k = l mod 16, gemm.h), and one joint
 * reduction of the 16 accumulators by 128-bit and in-lane shuffles that
 * follows the fixed lane tree element by element. Compiled with a target
 * attribute; used only when the CPU reports AVX-512F. */
#include "model/gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define INL __attribute__((target("avx512f"), always_inline)) static inline
#define TGT __attribute__((target("avx512f")))

/* acc[i*4 + j] -> one vector whose lane 4j + i holds the lane-tree sum of acc[i*4 + j]. */
INL __m512 reduce16(const __m512 acc[16]) {
    __m512 v[8], w[4];
    for (int p = 0; p < 8; p++) /* t8: lanes 0-7 + lanes 8-15, two accumulators per vector */
        v[p] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * p], acc[2 * p + 1], 0x44),
                             _mm512_shuffle_f32x4(acc[2 * p], acc[2 * p + 1], 0xEE));
    for (int r = 0; r < 4; r++) /* t4: quarter q of w[r] is accumulator 4r + q */
        w[r] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * r], v[2 * r + 1], 0x88),
                             _mm512_shuffle_f32x4(v[2 * r], v[2 * r + 1], 0xDD));
    /* t2: quarter q holds accumulators q, 4+q (u0) and 8+q, 12+q (u1), two lanes each */
    const __m512 u0 = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x44), _mm512_shuffle_ps(w[0], w[1], 0xEE));
    const __m512 u1 = _mm512_add_ps(_mm512_shuffle_ps(w[2], w[3], 0x44), _mm512_shuffle_ps(w[2], w[3], 0xEE));
    /* t1: quarter q = accumulators q, 4+q, 8+q, 12+q */
    return _mm512_add_ps(_mm512_shuffle_ps(u0, u1, 0x88), _mm512_shuffle_ps(u0, u1, 0xDD));
}

INL void tile(const int MR, const int NR, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
              const float *bias, float *C, int64_t ldc) {
    __m512 acc[16];
    for (int n = 0; n < 16; n++) acc[n] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 a[4], b[4];
#pragma GCC unroll 4
        for (int i = 0; i < MR; i++) a[i] = _mm512_loadu_ps(A + i * lda + k);
#pragma GCC unroll 4
        for (int j = 0; j < NR; j++) b[j] = _mm512_loadu_ps(B + j * ldb + k);
#pragma GCC unroll 4
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int j = 0; j < NR; j++) acc[i * 4 + j] = _mm512_fmadd_ps(a[i], b[j], acc[i * 4 + j]);
    }
    if (k < K) { /* lanes past K load 0 and add 0 * 0, as the lane definition says */
        const __mmask16 m = (__mmask16)((1u << (K - k)) - 1u);
        __m512 a[4], b[4];
        for (int i = 0; i < MR; i++) a[i] = _mm512_maskz_loadu_ps(m, A + i * lda + k);
        for (int j = 0; j < NR; j++) b[j] = _mm512_maskz_loadu_ps(m, B + j * ldb + k);
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++) acc[i * 4 + j] = _mm512_fmadd_ps(a[i], b[j], acc[i * 4 + j]);
    }
    float s[16]; /* s[4j + i] */
    _mm512_storeu_ps(s, reduce16(acc));
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) C[i * ldc + j] = bias ? s[4 * j + i] + bias[j] : s[4 * j + i];
}

#define TILE_FN(MR, NR)                                                                                                \
    TGT static void tile_##MR##x##NR(int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,              \
                                     const float *bias, float *C, int64_t ldc) {                                       \
        tile(MR, NR, K, A, lda, B, ldb, bias, C, ldc);                                                                 \
    }
#define TILE_ROW(MR) TILE_FN(MR, 1) TILE_FN(MR, 2) TILE_FN(MR, 3) TILE_FN(MR, 4)
TILE_ROW(1)
TILE_ROW(2)
TILE_ROW(3)
TILE_ROW(4)

typedef void (*fixed_tile)(int64_t, const float *, int64_t, const float *, int64_t, const float *, float *, int64_t);
#define ROW(MR)                                                                                                        \
    { tile_##MR##x1, tile_##MR##x2, tile_##MR##x3, tile_##MR##x4 }
static const fixed_tile tiles[4][4] = {ROW(1), ROW(2), ROW(3), ROW(4)};

static void tile_any(int mr, int nr, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                     const float *bias, float *C, int64_t ldc) {
    tiles[mr - 1][nr - 1](K, A, lda, B, ldb, bias, C, ldc);
}

static const kvc_gemm_kernel avx512 = {"avx512", 4, 4, tile_any};

const kvc_gemm_kernel *kvci_gemm_avx512_kernel(void) { return &avx512; }
#else
const kvc_gemm_kernel *kvci_gemm_avx512_kernel(void) { return NULL; }
#endif
