/* The fma family's blocks of many rows (gemm_bf16.h), on AVX-512F and
 * AVX2 + FMA + F16C: the block's 16-bit weights are widened to f32 once per
 * k-block into a panel on the stack (AVX-512: by the k-block's first tile of
 * 8 rows as it runs), and every other tile of rows then reads the panel, so a
 * widening is paid once per block instead of once per tile of rows (on cores
 * whose shift and shuffle units share ports with the FMA units, the widening
 * had cost a fifth of the FMA issue slots).
 *
 * Bits: each output is acc = +0, then acc = fma(A[i,k], B[j,k], acc) for
 * k = 0 .. K-1 in order (a k-block ends by storing acc into a buffer of
 * partial sums, the next one reloads it: exact), then C = acc (+ bias): the fma family's chain exactly,
 * so these blocks give the same bits as the per-tile kernels and the portable
 * one for any rows, columns, blocking or threads.
 *
 * Panel of a k-block [k0, k1) (k0 even) over NG groups (16 columns each):
 * panel[(k - k0) * NG_MAX * 16 + 16 j + q] = B[16 (g + j) + q][k]. */
#include "model/gemm_bf16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "model/gemm_bf16_x86.h"

#define PANEL_KB 128 /* k per panel: 128 x 48 f32 = 24 KiB of stack (AVX-512), 8 KiB (AVX2) */
/* Rows whose partial sums wait in a contiguous buffer between k-blocks (64 x 48 f32 = 12 KiB of stack; AVX2 4 KiB):
 * C's rows lie N floats apart, a multiple of 4 KiB for every model width, so the tiles' rows of C fell into the
 * same few L1 sets (8 rows x 3 lines per set with the A rows and the panel: more lines than ways) and the
 * partial sums went to L2 and back at every k-block; C now takes each output once, at the last k-block. */
#define PART_ROWS 64

/* ---- AVX-512F: tiles of up to 8 rows x 3 groups (24 accumulators) ---- */

#define INL512 __attribute__((target("avx512f"), always_inline)) static inline
#define TGT512 __attribute__((target("avx512f")))
#define NG512  KVC_BF16_PANEL512_GROUPS

/* The even (odd) k of 16 packed pairs v, widened (exact). */
INL512 __m512 widen_half512(const bool F16, __m512i v, bool odd) {
    if (F16) return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(odd ? _mm512_srli_epi32(v, 16) : v));
    return _mm512_castsi512_ps(odd ? _mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u))
                                   : _mm512_slli_epi32(v, 16));
}

/* The k-block [k0, k1) of groups g .. g + ng - 1, widened into the panel (rows of NG512 groups). */
INL512 void fill512(const bool F16, const kvc_bf16_call *c, int64_t g, int ng, int64_t k0, int64_t k1, float *panel) {
    for (int64_t P = k0 / 2; 2 * P < k1; P++) {
        float *even = panel + (2 * P - k0) * NG512 * 16, *odd = even + NG512 * 16;
        for (int j = 0; j < ng; j++) {
            const __m512i v = _mm512_loadu_si512(c->B + (g + j) * 16 * c->Kp + P * 32);
            /* k1 odd: the padding k lands inside the panel, unread */
            _mm512_store_ps(even + 16 * j, widen_half512(F16, v, false));
            _mm512_store_ps(odd + 16 * j, widen_half512(F16, v, true));
        }
    }
}

/* FILL 0: the tile reads the panel; FILL 1 (bf16) or 2 (f16): the k-block's first tile widens the weights itself and
 * writes the panel for the tiles after it, its weight loads and panel stores spread among its FMAs (fill512 before
 * the tiles had been a burst of loads from L3 or DRAM and of stores, with the FMA units idle). */
INL512 void tile512(const int MR, const int NG, const int FILL, const kvc_bf16_call *c, int64_t i, int64_t g,
                    float *panel, int64_t k0, int64_t k1, float *part) {
    __m512 acc[8][NG512];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NG; j++)
            acc[r][j] = k0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(part + (r * NG512 + j) * 16);
    const float *a = c->A + i * c->lda;
    for (int64_t k = k0; k < k1; k++) {
        float *p = panel + (k - k0) * NG512 * 16;
        __m512 b[NG512];
        for (int j = 0; j < NG; j++) {
            if (FILL) {
                b[j] = widen_half512(FILL == 2, _mm512_loadu_si512(c->B + (g + j) * 16 * c->Kp + k / 2 * 32), k % 2);
                _mm512_store_ps(p + 16 * j, b[j]);
            } else
                b[j] = _mm512_load_ps(p + 16 * j);
        }
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m512 ar = _mm512_set1_ps(a[r * c->lda + k]);
            for (int j = 0; j < NG; j++) acc[r][j] = _mm512_fmadd_ps(ar, b[j], acc[r][j]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NG; j++) {
            if (k1 == c->K)
                bf16_store_group(c, i + r, g + j, acc[r][j]);
            else
                _mm512_store_ps(part + (r * NG512 + j) * 16, acc[r][j]);
        }
}

typedef void (*panel_tile)(const kvc_bf16_call *, int64_t, int64_t, float *, int64_t, int64_t, float *);
#define TILE512_FN(FILL, MR, NG)                                                                                       \
    TGT512 static void p512_##FILL##_##MR##x##NG(const kvc_bf16_call *c, int64_t i, int64_t g, float *panel,           \
                                                 int64_t k0, int64_t k1, float *part) {                                \
        tile512(MR, NG, FILL, c, i, g, panel, k0, k1, part);                                                           \
    }
#define TILE512_ROW(FILL, MR) TILE512_FN(FILL, MR, 1) TILE512_FN(FILL, MR, 2) TILE512_FN(FILL, MR, 3)
TILE512_ROW(0, 1)
TILE512_ROW(0, 2)
TILE512_ROW(0, 3)
TILE512_ROW(0, 4)
TILE512_ROW(0, 5)
TILE512_ROW(0, 6)
TILE512_ROW(0, 7)
TILE512_ROW(0, 8)
TILE512_ROW(1, 8)
TILE512_ROW(2, 8)
#define PTRS512(FILL, MR)                                                                                              \
    { p512_##FILL##_##MR##x1, p512_##FILL##_##MR##x2, p512_##FILL##_##MR##x3 }
static const panel_tile tiles512[8][NG512] = {PTRS512(0, 1), PTRS512(0, 2), PTRS512(0, 3), PTRS512(0, 4),
                                              PTRS512(0, 5), PTRS512(0, 6), PTRS512(0, 7), PTRS512(0, 8)};
static const panel_tile fill_tiles512[2][NG512] = {PTRS512(1, 8), PTRS512(2, 8)}; /* 8 rows: bf16, f16 */

TGT512 static void block512(const bool F16, const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    _Alignas(64) float panel[PANEL_KB * NG512 * 16], part[PART_ROWS * NG512 * 16];
    for (int64_t mp = m0; mp < m1; mp += PART_ROWS) { /* gemm16's jobs: one pass (64 rows) */
        const int64_t mq = kvci_min64(m1, mp + PART_ROWS);
        for (int64_t g = g0; g < g1;) {
            const int ng = g1 - g == 4 ? 2 : (int)kvci_min64(NG512, g1 - g); /* four groups: 2 + 2, not 3 + 1 */
            for (int64_t k0 = 0; k0 < c->K; k0 += PANEL_KB) {
                const int64_t k1 = kvci_min64(c->K, k0 + PANEL_KB);
                const bool fused = mq - mp >= 8; /* the first tile (8 rows) fills the panel */
                if (!fused) fill512(F16, c, g, ng, k0, k1, panel);
                for (int64_t i = mp; i < mq; i += 8)
                    (fused && i == mp ? fill_tiles512[F16] : tiles512[kvci_min64(8, mq - i) - 1])[ng - 1](
                        c, i, g, panel, k0, k1, part + (i - mp) * NG512 * 16);
            }
            g += ng;
        }
    }
}

void kvci_bf16_panel512_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    block512(false, c, m0, m1, g0, g1);
}
void kvci_f16_panel512_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    block512(true, c, m0, m1, g0, g1);
}

/* ---- AVX2 + FMA + F16C: tiles of up to 6 rows x 1 group (two vectors of 8 columns: 12 accumulators) ---- */

#define INL256 __attribute__((target("avx2,fma,f16c"), always_inline)) static inline
#define TGT256 __attribute__((target("avx2,fma,f16c")))

/* The k-block [k0, k1) of group g widened into the panel (rows of 16 columns). */
INL256 void fill256(const bool F16, const kvc_bf16_call *c, int64_t g, int64_t k0, int64_t k1, float *panel) {
    const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12,
                                          13, 2, 3, 6, 7, 10, 11, 14, 15);
    for (int64_t P = k0 / 2; 2 * P < k1; P++) {
        float *even = panel + (2 * P - k0) * 16, *odd = even + 16;
        for (int h = 0; h < 2; h++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(c->B + g * 16 * c->Kp + P * 32 + h * 16));
            __m256 e, o;
            if (F16) { /* each 128-bit lane's even or odd halves gathered, the lanes' quarters joined */
                const __m256i q = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, pick), 0xD8);
                e = _mm256_cvtph_ps(_mm256_castsi256_si128(q));
                o = _mm256_cvtph_ps(_mm256_extracti128_si256(q, 1));
            } else {
                e = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
                o = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xFFFF0000u)));
            }
            _mm256_store_ps(even + 8 * h, e);
            _mm256_store_ps(odd + 8 * h, o);
        }
    }
}

/* Lanes q with column n0 + q < N (all off when n0 >= N). */
INL256 __m256i cols256(const kvc_bf16_call *c, int64_t n0) {
    const int64_t n = kvci_max64(0, kvci_min64(8, c->N - n0));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* A tile of MR rows over the panel; it also prefetches npf 64-byte pairs of weights at pf into L1 (its share of the
 * next fill's: the hardware prefetchers stop at 4 KiB pages, one k-block's weights of a group, and the fill had waited
 * for them from memory with the FMA units idle). */
INL256 void tile256(const int MR, const kvc_bf16_call *c, int64_t i, int64_t g, const float *panel, int64_t k0,
                    int64_t k1, float *part, const uint16_t *pf, int npf) {
    for (int q = 0; q < npf; q++) _mm_prefetch((const char *)(pf + 32 * q), _MM_HINT_T0);
    const int64_t n0 = g * 16;
    __m256 lo[6], hi[6]; /* columns n0 .. n0+7 and n0+8 .. n0+15; lanes of columns >= N masked off at the store */
    for (int r = 0; r < MR; r++) {
        lo[r] = k0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps(part + 16 * r);
        hi[r] = k0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps(part + 16 * r + 8);
    }
    const float *a = c->A + i * c->lda;
    for (int64_t k = k0; k < k1; k++) {
        const __m256 b0 = _mm256_load_ps(panel + (k - k0) * 16), b1 = _mm256_load_ps(panel + (k - k0) * 16 + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            const __m256 ar = _mm256_set1_ps(a[r * c->lda + k]); /* broadcast_ss(ptr) spills acc (GCC 12) */
            lo[r] = _mm256_fmadd_ps(ar, b0, lo[r]);
            hi[r] = _mm256_fmadd_ps(ar, b1, hi[r]);
        }
    }
    for (int r = 0; r < MR; r++) {
        if (k1 < c->K) {
            _mm256_store_ps(part + 16 * r, lo[r]);
            _mm256_store_ps(part + 16 * r + 8, hi[r]);
            continue;
        }
        float *row = c->C + (i + r) * c->ldc + n0;
        __m256 v0 = lo[r], v1 = hi[r];
        if (n0 + 16 <= c->N) { /* a whole group: plain stores (AMD's masked stores are microcoded) */
            if (c->bias) {
                v0 = _mm256_add_ps(v0, _mm256_loadu_ps(c->bias + n0));
                v1 = _mm256_add_ps(v1, _mm256_loadu_ps(c->bias + n0 + 8));
            }
            _mm256_storeu_ps(row, v0);
            _mm256_storeu_ps(row + 8, v1);
            continue;
        }
        const __m256i m0 = cols256(c, n0), m1 = cols256(c, n0 + 8); /* not kept across the loop: 12 + 3 registers */
        if (c->bias) {
            v0 = _mm256_add_ps(v0, _mm256_maskload_ps(c->bias + n0, m0));
            v1 = _mm256_add_ps(v1, _mm256_maskload_ps(c->bias + n0 + 8, m1));
        }
        _mm256_maskstore_ps(row, m0, v0);
        _mm256_maskstore_ps(row + 8, m1, v1);
    }
}

#define TILE256_FN(MR)                                                                                                 \
    TGT256 static void p256_##MR(const kvc_bf16_call *c, int64_t i, int64_t g, const float *panel, int64_t k0,         \
                                 int64_t k1, float *part, const uint16_t *pf, int npf) {                               \
        tile256(MR, c, i, g, panel, k0, k1, part, pf, npf);                                                            \
    }
TILE256_FN(1)
TILE256_FN(2)
TILE256_FN(3)
TILE256_FN(4)
TILE256_FN(5)
TILE256_FN(6)
typedef void (*panel_tile256)(const kvc_bf16_call *, int64_t, int64_t, const float *, int64_t, int64_t, float *,
                              const uint16_t *, int);
static const panel_tile256 tiles256[6] = {p256_1, p256_2, p256_3, p256_4, p256_5, p256_6};

/* The packed weights the fill after the k-block ending at k1 of group g will read (the next k-block, else the next
 * group's first while g + 1 < g1): *at, and the count of its 64-byte pairs (0: none). */
static int next_block256(const kvc_bf16_call *c, int64_t g, int64_t g1, int64_t k1, const uint16_t **at) {
    if (k1 < c->K) {
        *at = c->B + g * 16 * c->Kp + k1 / 2 * 32;
        return (int)kvci_cdiv(kvci_min64(c->K, k1 + PANEL_KB) - k1, 2);
    }
    *at = c->B + (g + 1) * 16 * c->Kp; /* one past the end of B at most: not read when g + 1 == g1 */
    return g + 1 < g1 ? (int)kvci_cdiv(kvci_min64(c->K, PANEL_KB), 2) : 0;
}

TGT256 static void block256(const bool F16, const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    _Alignas(32) float panel[PANEL_KB * 16], part[PART_ROWS * 16];
    for (int64_t mp = m0; mp < m1; mp += PART_ROWS) { /* gemm16's jobs: one pass (64 rows) */
        const int64_t mq = kvci_min64(m1, mp + PART_ROWS);
        for (int64_t g = g0; g < g1; g++)
            for (int64_t k0 = 0; k0 < c->K; k0 += PANEL_KB) {
                const int64_t k1 = kvci_min64(c->K, k0 + PANEL_KB);
                fill256(F16, c, g, k0, k1, panel);
                const uint16_t *next;
                const int lines = next_block256(c, g, g1, k1, &next), tiles = (int)kvci_cdiv(mq - mp, 6);
                const int per = (lines + tiles - 1) / tiles;
                for (int64_t i = mp, t = 0; i < mq; i += 6, t++) {
                    const int from = (int)kvci_min64(lines, t * per), to = (int)kvci_min64(lines, from + per);
                    tiles256[kvci_min64(6, mq - i) - 1](c, i, g, panel, k0, k1, part + (i - mp) * 16, next + 32 * from,
                                                        to - from);
                }
            }
    }
}

void kvci_bf16_panel256_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    block256(false, c, m0, m1, g0, g1);
}
void kvci_f16_panel256_block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    block256(true, c, m0, m1, g0, g1);
}
#endif
