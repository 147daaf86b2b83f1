/* The avx512-bf16 kernel of kvci_gemm_bf16's dot family (gemm_bf16.h): one
 * vector lane per output column; for each block of 32 k and each bf16 part
 * of the activation, vdpbf16ps adds the 16 pairs of the block in order
 * (the pair of the activation broadcast, the packed pair of the 16 columns).
 * KVC_GEMM_BF16_PARTS parts, or one (the activation rounded to bf16:
 * kvci_gemm_bf16_rounded), each with its own split and tiles.
 * Tiles of up to 4 rows x 4 groups of 16 columns; compiled with a target
 * attribute, used only when the CPU reports AVX512_BF16. */
#include "model/gemm_bf16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "model/gemm_bf16_x86.h"

#define INL __attribute__((target("avx512f,avx512bf16"), always_inline)) static inline
#define TGT __attribute__((target("avx512f,avx512bf16")))

/* Offset of part p of A[i][k] in the avx512-bf16 kernel's own layout of As for P parts,
 * [Mp/4][Kp/32][P][4][32]: the 4-row panel a tile reads is one sequential stream
 * (per block of 32 k: every part of its 4 rows, 768 bytes at three parts), where the AMX
 * tiles of kvci_bf16_split_at put a panel's rows 1 KiB and its parts a whole matrix apart
 * (the hardware prefetch lost them at M = 512: 44 against 72 GFLOP/s at K = 1,024, 16 at
 * K = 3,072, one thread, docs/runtime.md). */
static inline int64_t panel_at(const kvc_bf16_call *c, int P, int p, int64_t i, int64_t k) {
    return (((i / 4) * (c->Kp / 32) + k / 32) * P + p) * 128 + (i % 4) * 32 + k % 32;
}

/* P parts by vcvtneps2bf16 (round to nearest even; denormal inputs and results become 0,
 * as the dot instructions would take them): hi = bf16(a), then the exact f32 remainder;
 * written at kvci_bf16_split_at (panels false: the AMX tiles) or panel_at (true). */
INL void split_rows(const int P, const kvc_bf16_call *c, int64_t i0, int64_t i1, uint16_t *As, bool panels) {
    for (int64_t i = i0; i < i1; i++)
        for (int64_t k = 0; k < c->Kp; k += 16) {
            const int64_t left = i < c->M ? kvci_max64(0, kvci_min64(16, c->K - k)) : 0;
            __m512 r = _mm512_maskz_loadu_ps((__mmask16)((1u << left) - 1u), c->A + i * c->lda + k);
            for (int p = 0; p < P; p++) {
                const __m256i h = (__m256i)_mm512_cvtneps_pbh(r);
                const int64_t at = panels ? panel_at(c, P, p, i, k) : kvci_bf16_split_at(c, p, i, k);
                _mm256_storeu_si256((__m256i *)(As + at), h);
                r = _mm512_sub_ps(r, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
            }
        }
}

TGT void kvci_bf16_split_avx512(const kvc_bf16_call *c, int64_t i0, int64_t i1, uint16_t *As) {
    split_rows(KVC_GEMM_BF16_PARTS, c, i0, i1, As, false);
}

TGT static void split_panels(const kvc_bf16_call *c, int64_t i0, int64_t i1, uint16_t *As) {
    split_rows(KVC_GEMM_BF16_PARTS, c, i0, i1, As, true);
}

TGT static void split_panels1(const kvc_bf16_call *c, int64_t i0, int64_t i1, uint16_t *As) {
    split_rows(1, c, i0, i1, As, true);
}

/* Rows i .. i+MR-1 (i a multiple of 4: one panel) x groups g .. g+NR-1, P parts. */
INL void tile(const int MR, const int NR, const int P, const kvc_bf16_call *c, int64_t i, int64_t g) {
    __m512 acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 4; j++) acc[r][j] = _mm512_setzero_ps();
    const uint16_t *b = c->B + g * 16 * c->Kp, *a = c->As + panel_at(c, P, 0, i, 0);
    for (int64_t kb = 0; kb < c->Kp; kb += 32, a += P * 128)
        for (int p = 0; p < P; p++) {
            for (int q = 0; q < 16; q++) {
                __m512i ap[4];
#pragma GCC unroll 4
                for (int r = 0; r < MR; r++) {
                    int32_t pair;
                    __builtin_memcpy(&pair, a + p * 128 + r * 32 + 2 * q, 4);
                    ap[r] = _mm512_set1_epi32(pair);
                }
#pragma GCC unroll 4
                for (int j = 0; j < NR; j++) {
                    const __m512i v = _mm512_loadu_si512(b + j * 16 * c->Kp + kb * 16 + q * 32);
#pragma GCC unroll 4
                    for (int r = 0; r < MR; r++) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], (__m512bh)ap[r], (__m512bh)v);
                }
            }
        }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) bf16_store_group(c, i + r, g + j, acc[r][j]);
}

#define TILE_PARTS(MR, NR, c, i, g) tile(MR, NR, KVC_GEMM_BF16_PARTS, c, i, g)
#define TILE_ONE(MR, NR, c, i, g)   tile(MR, NR, 1, c, i, g)
KVC_BF16_TILES_4X4(TGT, dot, TILE_PARTS)
KVC_BF16_TILES_4X4(TGT, dot1, TILE_ONE)

static const kvc_gemm_bf16_kernel dot512 = {"avx512-bf16", "dot",      split_panels,  4, dot_block, false,
                                            NULL,          dot1_block, split_panels1, 0};

const kvc_gemm_bf16_kernel *kvci_gemm_bf16_dot512_kernel(void) { return &dot512; }
#else
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_dot512_kernel(void) { return NULL; }
#endif
