/* The output step shared by the AVX-512 kernels of kvci_gemm_bf16: one
 * 16-column group of one row, plus the bias, masked to the columns < N. */
#ifndef KVC_MODEL_GEMM_BF16_X86_H
#define KVC_MODEL_GEMM_BF16_X86_H

#include <immintrin.h>

#include "base/internal.h"
#include "model/gemm_bf16.h"

/* C[i, 16g .. 16g+15] = acc (+ bias), the columns < N only. */
__attribute__((target("avx512f"), always_inline)) static inline void bf16_store_group(const kvc_bf16_call *c, int64_t i,
                                                                                      int64_t g, __m512 acc) {
    const int64_t n0 = g * 16, cols = kvci_min64(16, c->N - n0);
    const __mmask16 m = (__mmask16)((1u << cols) - 1u);
    if (c->bias) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, c->bias + n0));
    _mm512_mask_storeu_ps(c->C + i * c->ldc + n0, m, acc);
}

/* The AVX-512 kernels' tiles of up to 4 rows x 4 groups: from an always-inline
 * TILE(MR, NR, c, i, g), fixed-size functions PREFIX_MRxNR (compiled with TGT), and
 * PREFIX_block, the kvc_bf16_block_fn that covers a block with them. */
#define KVC_BF16_TILE_FN(TGT, PREFIX, TILE, MR, NR)                                                                    \
    TGT static void PREFIX##_##MR##x##NR(const kvc_bf16_call *c, int64_t i, int64_t g) { TILE(MR, NR, c, i, g); }
#define KVC_BF16_TILE_ROW(TGT, PREFIX, TILE, MR)                                                                       \
    KVC_BF16_TILE_FN(TGT, PREFIX, TILE, MR, 1)                                                                         \
    KVC_BF16_TILE_FN(TGT, PREFIX, TILE, MR, 2)                                                                         \
    KVC_BF16_TILE_FN(TGT, PREFIX, TILE, MR, 3) KVC_BF16_TILE_FN(TGT, PREFIX, TILE, MR, 4)
#define KVC_BF16_TILE_PTRS(PREFIX, MR)                                                                                 \
    { PREFIX##_##MR##x1, PREFIX##_##MR##x2, PREFIX##_##MR##x3, PREFIX##_##MR##x4 }
#define KVC_BF16_TILES_4X4(TGT, PREFIX, TILE)                                                                          \
    KVC_BF16_TILE_ROW(TGT, PREFIX, TILE, 1)                                                                            \
    KVC_BF16_TILE_ROW(TGT, PREFIX, TILE, 2)                                                                            \
    KVC_BF16_TILE_ROW(TGT, PREFIX, TILE, 3)                                                                            \
    KVC_BF16_TILE_ROW(TGT, PREFIX, TILE, 4)                                                                            \
    static void (*const PREFIX##_tiles[4][4])(const kvc_bf16_call *, int64_t, int64_t) = {                             \
        KVC_BF16_TILE_PTRS(PREFIX, 1), KVC_BF16_TILE_PTRS(PREFIX, 2), KVC_BF16_TILE_PTRS(PREFIX, 3),                   \
        KVC_BF16_TILE_PTRS(PREFIX, 4)};                                                                                \
    static void PREFIX##_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {               \
        for (int64_t g = g0; g < g1; g += 4)                                                                           \
            for (int64_t i = m0; i < m1; i += 4)                                                                       \
                PREFIX##_tiles[kvci_min64(4, m1 - i) - 1][kvci_min64(4, g1 - g) - 1](c, i, g);                         \
    }

/* The fma family's blocks of many rows (gemm_bf16_panel.c: weights widened once per k-block, the
 * family's bits; bf16 and f16 weights), for blocks of at least this many rows: below, the per-tile
 * kernels are as fast or faster (one core, N 3,072, K 1,024: AVX-512 even at 16 rows, 0.93x at 8;
 * AVX2 1.2x at 12, even at 8). */
#define KVC_BF16_PANEL512_ROWS   16
#define KVC_BF16_PANEL512_GROUPS 3 /* column groups per k-block step of the AVX-512 blocks (8 x 3 tiles) */
#define KVC_BF16_PANEL256_ROWS   12
void kvci_bf16_panel512_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1);
void kvci_f16_panel512_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1);
void kvci_bf16_panel256_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1);
void kvci_f16_panel256_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1);

#endif
