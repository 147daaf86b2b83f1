/* The fma family of kvci_gemm_bf16 and kvci_gemm_f16 (gemm_bf16.h) on AVX-512F
 * and AVX2+FMA+F16C: one vector lane per output column, the 16-bit weights of a
 * packed pair widened to f32 (bf16 by shifts: even k << 16, odd k high half kept;
 * f16 by vcvtph2ps of the even and odd halves), the activation broadcast, and
 * acc = fma(a, b, acc) for k = 0 .. K-1 in order: the portable kernel's roundings
 * exactly (both widenings are exact). Tiles of MR rows x NR vectors; blocks of many
 * rows go to gemm_bf16_panel.c (same bits). Compiled with target attributes, used only
 * when the CPU reports the ISA. */
#include "model/gemm_bf16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "model/gemm_bf16_x86.h"

/* ---- AVX-512F: a vector is one group of 16 columns; tiles up to 4 rows x 4 groups ---- */

#define INL512 __attribute__((target("avx512f"), always_inline)) static inline
#define TGT512 __attribute__((target("avx512f")))

/* The even-k and odd-k weights of 16 packed pairs, widened. */
INL512 void widen512(const bool F16, __m512i v, __m512 *even, __m512 *odd) {
    if (F16) {
        *even = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
        *odd = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
    } else {
        *even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        *odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u)));
    }
}

INL512 void tile512(const int MR, const int NR, const bool F16, const kvc_bf16_call *c, int64_t i, int64_t g) {
    __m512 acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 4; j++) acc[r][j] = _mm512_setzero_ps();
    const uint16_t *b = c->B + g * 16 * c->Kp;
    const float *a = c->A + i * c->lda;
    const int64_t pairs = c->K / 2;
    for (int64_t P = 0; P < pairs; P++) {
        __m512 ae[4], ao[4];
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++)
            ae[r] = _mm512_set1_ps(a[r * c->lda + 2 * P]), ao[r] = _mm512_set1_ps(a[r * c->lda + 2 * P + 1]);
#pragma GCC unroll 4
        for (int j = 0; j < NR; j++) {
            __m512 be, bo;
            widen512(F16, _mm512_loadu_si512(b + j * 16 * c->Kp + P * 32), &be, &bo);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++) {
                acc[r][j] = _mm512_fmadd_ps(ae[r], be, acc[r][j]);
                acc[r][j] = _mm512_fmadd_ps(ao[r], bo, acc[r][j]);
            }
        }
    }
    if (c->K % 2) { /* the last k is even: its pair's odd half is padding */
        for (int j = 0; j < NR; j++) {
            __m512 be, bo;
            widen512(F16, _mm512_loadu_si512(b + j * 16 * c->Kp + pairs * 32), &be, &bo);
            for (int r = 0; r < MR; r++)
                acc[r][j] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * c->lda + 2 * pairs]), be, acc[r][j]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) bf16_store_group(c, i + r, g + j, acc[r][j]);
}

#define TILE512_BF16(MR, NR, c, i, g) tile512(MR, NR, false, c, i, g)
#define TILE512_F16(MR, NR, c, i, g)  tile512(MR, NR, true, c, i, g)
KVC_BF16_TILES_4X4(TGT512, fma512, TILE512_BF16)
KVC_BF16_TILES_4X4(TGT512, fma512h, TILE512_F16)

/* Tall tiles for blocks of 5 .. 15 rows (a batch's decode): up to 12 rows x 2 groups (24 accumulators), each
 * pair of weights widened once for all the tile's rows, where the 4 x 4 tiles widened it once per 4 rows. */
INL512 void tall512(const int MR, const int NG, const bool F16, const kvc_bf16_call *c, int64_t i, int64_t g) {
    __m512 acc[12][2];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NG; j++) acc[r][j] = _mm512_setzero_ps();
    const uint16_t *b = c->B + g * 16 * c->Kp;
    const float *a = c->A + i * c->lda;
    const int64_t pairs = c->K / 2;
    for (int64_t P = 0; P < pairs; P++) {
        __m512 be[2], bo[2];
        for (int j = 0; j < NG; j++) widen512(F16, _mm512_loadu_si512(b + j * 16 * c->Kp + P * 32), &be[j], &bo[j]);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            const __m512 ae = _mm512_set1_ps(a[r * c->lda + 2 * P]), ao = _mm512_set1_ps(a[r * c->lda + 2 * P + 1]);
            for (int j = 0; j < NG; j++) acc[r][j] = _mm512_fmadd_ps(ao, bo[j], _mm512_fmadd_ps(ae, be[j], acc[r][j]));
        }
    }
    if (c->K % 2) /* the last k is even: its pair's odd half is padding */
        for (int j = 0; j < NG; j++) {
            __m512 be, bo;
            widen512(F16, _mm512_loadu_si512(b + j * 16 * c->Kp + pairs * 32), &be, &bo);
            for (int r = 0; r < MR; r++)
                acc[r][j] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * c->lda + 2 * pairs]), be, acc[r][j]);
        }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NG; j++) bf16_store_group(c, i + r, g + j, acc[r][j]);
}

/* a tile of C at rows i.., column group g.. (AVX2: half-groups) */
typedef void (*fma_tile)(const kvc_bf16_call *, int64_t, int64_t);
#define TALL_FN(MR, NG, F16, SUF)                                                                                      \
    TGT512 static void tall##SUF##_##MR##x##NG(const kvc_bf16_call *c, int64_t i, int64_t g) {                         \
        tall512(MR, NG, F16, c, i, g);                                                                                 \
    }
#define TALL_ROW(MR, F16, SUF) TALL_FN(MR, 1, F16, SUF) TALL_FN(MR, 2, F16, SUF)
TALL_ROW(5, false, b)
TALL_ROW(6, false, b)
TALL_ROW(7, false, b)
TALL_ROW(8, false, b)
TALL_ROW(9, false, b)
TALL_ROW(10, false, b)
TALL_ROW(11, false, b)
TALL_ROW(12, false, b)
TALL_ROW(5, true, h)
TALL_ROW(6, true, h)
TALL_ROW(7, true, h)
TALL_ROW(8, true, h)
TALL_ROW(9, true, h)
TALL_ROW(10, true, h)
TALL_ROW(11, true, h)
TALL_ROW(12, true, h)
#define TALL_PTRS(SUF, MR)                                                                                             \
    { tall##SUF##_##MR##x1, tall##SUF##_##MR##x2 }
static const fma_tile tall_tiles[2][8][2] = {{TALL_PTRS(b, 5), TALL_PTRS(b, 6), TALL_PTRS(b, 7), TALL_PTRS(b, 8),
                                              TALL_PTRS(b, 9), TALL_PTRS(b, 10), TALL_PTRS(b, 11), TALL_PTRS(b, 12)},
                                             {TALL_PTRS(h, 5), TALL_PTRS(h, 6), TALL_PTRS(h, 7), TALL_PTRS(h, 8),
                                              TALL_PTRS(h, 9), TALL_PTRS(h, 10), TALL_PTRS(h, 11), TALL_PTRS(h, 12)}};

/* By rows: up to 4 the 4 x 4 tiles (one row's decode streams its weights as tuned), 5 .. 15 tall tiles
 * (13 .. 15: 12 + the rest on 4 x 4), 16 or more the panel (gemm_bf16_panel.c). */
static void rows_of(const bool f16, const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    const int64_t rows = m1 - m0;
    if (rows >= KVC_BF16_PANEL512_ROWS) {
        (f16 ? kvci_f16_panel512_block : kvci_bf16_panel512_block)(c, m0, m1, g0, g1);
        return;
    }
    if (rows <= 4) {
        (f16 ? fma512h_block : fma512_block)(c, m0, m1, g0, g1);
        return;
    }
    const int64_t tall = kvci_min64(12, rows);
    for (int64_t g = g0; g < g1; g += 2) tall_tiles[f16][tall - 5][kvci_min64(2, g1 - g) - 1](c, m0, g);
    if (tall < rows) (f16 ? fma512h_block : fma512_block)(c, m0 + tall, m1, g0, g1);
}
static void rows512(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    rows_of(false, c, m0, m1, g0, g1);
}
static void rows512h(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    rows_of(true, c, m0, m1, g0, g1);
}

static const kvc_gemm_bf16_kernel fma512 = {"avx512-fma", "fma",    NULL,    1,    rows512,
                                            false,        rows512h, rows512, NULL, KVC_BF16_PANEL512_GROUPS};

const kvc_gemm_bf16_kernel *kvci_gemm_bf16_fma512_kernel(void) { return &fma512; }

/* ---- AVX2 + FMA: a vector is half a group (8 columns); tiles up to 2 rows x 4 half-groups ---- */

#define INL256 __attribute__((target("avx2,fma,f16c"), always_inline)) static inline
#define TGT256 __attribute__((target("avx2,fma,f16c")))

/* Half-group h of the call: columns 8h .. 8h+7, pair P at B + (h / 2) 16 Kp + P 32 + (h % 2) 16. */
INL256 __m256i half_pair(const kvc_bf16_call *c, int64_t h, int64_t P) {
    return _mm256_loadu_si256((const __m256i *)(c->B + (h / 2) * 16 * c->Kp + P * 32 + (h % 2) * 16));
}

/* The even-k and odd-k weights of 8 packed pairs, widened (f16: each 128-bit lane's even or odd
 * halves gathered by a byte shuffle, the two lanes' quarters joined, vcvtph2ps). */
INL256 void widen256(const bool F16, __m256i v, __m256 *even, __m256 *odd) {
    if (F16) {
        const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9,
                                              12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
        const __m256i q = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, pick), 0xD8); /* even 0-7, odd 0-7 */
        *even = _mm256_cvtph_ps(_mm256_castsi256_si128(q));
        *odd = _mm256_cvtph_ps(_mm256_extracti128_si256(q, 1));
    } else {
        *even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        *odd = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xFFFF0000u)));
    }
}

/* C[i, 8h .. 8h+7] = acc (+ bias), the columns < N only. */
INL256 void store256(const kvc_bf16_call *c, int64_t i, int64_t h, __m256 acc) {
    const int64_t n0 = h * 8, cols = kvci_min64(8, c->N - n0);
    float out[8];
    _mm256_storeu_ps(out, acc);
    for (int64_t q = 0; q < cols; q++) c->C[i * c->ldc + n0 + q] = c->bias ? out[q] + c->bias[n0 + q] : out[q];
}

INL256 void tile256(const int MR, const int NR, const bool F16, const kvc_bf16_call *c, int64_t i, int64_t h) {
    __m256 acc[2][4];
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 4; j++) acc[r][j] = _mm256_setzero_ps();
    const float *a = c->A + i * c->lda;
    const int64_t pairs = c->K / 2;
    for (int64_t P = 0; P < pairs; P++) {
        __m256 ae[2], ao[2];
#pragma GCC unroll 2
        for (int r = 0; r < MR; r++)
            ae[r] = _mm256_set1_ps(a[r * c->lda + 2 * P]),
            ao[r] = _mm256_set1_ps(
                a[r * c->lda + 2 * P + 1]); /* not broadcast_ss(ptr): GCC 12 then keeps acc on the stack */
#pragma GCC unroll 4
        for (int j = 0; j < NR; j++) {
            __m256 be, bo;
            widen256(F16, half_pair(c, h + j, P), &be, &bo);
#pragma GCC unroll 2
            for (int r = 0; r < MR; r++) {
                acc[r][j] = _mm256_fmadd_ps(ae[r], be, acc[r][j]);
                acc[r][j] = _mm256_fmadd_ps(ao[r], bo, acc[r][j]);
            }
        }
    }
    if (c->K % 2)
        for (int j = 0; j < NR; j++) {
            __m256 be, bo;
            widen256(F16, half_pair(c, h + j, pairs), &be, &bo);
            for (int r = 0; r < MR; r++)
                acc[r][j] = _mm256_fmadd_ps(_mm256_set1_ps(a[r * c->lda + 2 * pairs]), be, acc[r][j]);
        }
    for (int j = 0; j < NR; j++)
        for (int r = 0; r < MR; r++) store256(c, i + r, h + j, acc[r][j]);
}

/* How far ahead a tall tile prefetches its group's weights: the hardware prefetchers stop at each 4 KiB page of
 * the stream (64 pairs), and decode at batch 8 read its weights from memory with the FMA units waiting at each
 * (bench model --against, Zen 3, 2 threads: decode step 0.85-0.93 of the time without it). */
#define TALL_PF_BYTES 2048
/* Tall tiles for blocks of 3 .. 11 rows (a batch's decode): up to 5 rows x 2 half-groups (10 accumulators + 4
 * widened weights + 1), each pair of weights widened once for all the tile's rows (the 2 x 4 tiles: per 2 rows). */
INL256 void tall256(const int MR, const int NH, const bool F16, const kvc_bf16_call *c, int64_t i, int64_t h) {
    __m256 acc[5][2];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NH; j++) acc[r][j] = _mm256_setzero_ps();
    const float *a = c->A + i * c->lda;
    const int64_t pairs = c->K / 2;
    /* the group's pairs, 64 B each; an address, not a pointer: after the last group it is past B (prefetch never
     * faults) */
    const uintptr_t ahead = (uintptr_t)(c->B + (h / 2) * 16 * c->Kp) + TALL_PF_BYTES;
    for (int64_t P = 0; P < pairs; P++) {
        _mm_prefetch((const char *)(ahead + 64 * (uintptr_t)P), _MM_HINT_T0);
        __m256 be[2], bo[2];
        for (int j = 0; j < NH; j++) widen256(F16, half_pair(c, h + j, P), &be[j], &bo[j]);
#pragma GCC unroll 5
        for (int r = 0; r < MR; r++) {
            const __m256 ae = _mm256_set1_ps(a[r * c->lda + 2 * P]), ao = _mm256_set1_ps(a[r * c->lda + 2 * P + 1]);
            for (int j = 0; j < NH; j++) acc[r][j] = _mm256_fmadd_ps(ao, bo[j], _mm256_fmadd_ps(ae, be[j], acc[r][j]));
        }
    }
    if (c->K % 2)
        for (int j = 0; j < NH; j++) {
            __m256 be, bo;
            widen256(F16, half_pair(c, h + j, pairs), &be, &bo);
            for (int r = 0; r < MR; r++)
                acc[r][j] = _mm256_fmadd_ps(_mm256_set1_ps(a[r * c->lda + 2 * pairs]), be, acc[r][j]);
        }
    for (int j = 0; j < NH; j++)
        for (int r = 0; r < MR; r++) store256(c, i + r, h + j, acc[r][j]);
}

#define TILE256(MR, NR, F16, SUF)                                                                                      \
    TGT256 static void t256##SUF##_##MR##x##NR(const kvc_bf16_call *c, int64_t i, int64_t h) {                         \
        tile256(MR, NR, F16, c, i, h);                                                                                 \
    }
#define ROW256(MR, F16, SUF)                                                                                           \
    TILE256(MR, 1, F16, SUF) TILE256(MR, 2, F16, SUF) TILE256(MR, 3, F16, SUF) TILE256(MR, 4, F16, SUF)
ROW256(1, false, b)
ROW256(2, false, b)
ROW256(1, true, h)
ROW256(2, true, h)

#define FNS256(SUF, MR)                                                                                                \
    { t256##SUF##_##MR##x1, t256##SUF##_##MR##x2, t256##SUF##_##MR##x3, t256##SUF##_##MR##x4 }
static const fma_tile tiles256[2][2][4] = {{FNS256(b, 1), FNS256(b, 2)}, {FNS256(h, 1), FNS256(h, 2)}};

#define TALL256(MR, NH, F16, SUF)                                                                                      \
    TGT256 static void tall256##SUF##_##MR##x##NH(const kvc_bf16_call *c, int64_t i, int64_t h) {                      \
        tall256(MR, NH, F16, c, i, h);                                                                                 \
    }
#define TALL256_ROW(MR, F16, SUF) TALL256(MR, 1, F16, SUF) TALL256(MR, 2, F16, SUF)
TALL256_ROW(1, false, b)
TALL256_ROW(2, false, b)
TALL256_ROW(3, false, b)
TALL256_ROW(4, false, b)
TALL256_ROW(5, false, b)
TALL256_ROW(1, true, h)
TALL256_ROW(2, true, h)
TALL256_ROW(3, true, h)
TALL256_ROW(4, true, h)
TALL256_ROW(5, true, h)
#define TALL256_PTRS(SUF, MR)                                                                                          \
    { tall256##SUF##_##MR##x1, tall256##SUF##_##MR##x2 }
static const fma_tile tall256_tiles[2][5][2] = {
    {TALL256_PTRS(b, 1), TALL256_PTRS(b, 2), TALL256_PTRS(b, 3), TALL256_PTRS(b, 4), TALL256_PTRS(b, 5)},
    {TALL256_PTRS(h, 1), TALL256_PTRS(h, 2), TALL256_PTRS(h, 3), TALL256_PTRS(h, 4), TALL256_PTRS(h, 5)}};

/* By rows: up to 2 the 2 x 4 tiles (one row's decode streams its weights as tuned), 3 .. 11 tall tiles, 12 or
 * more the panel (gemm_bf16_panel.c). */
static void block256_of(const bool f16, const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    if (m1 - m0 >= KVC_BF16_PANEL256_ROWS) {
        (f16 ? kvci_f16_panel256_block : kvci_bf16_panel256_block)(c, m0, m1, g0, g1);
        return;
    }
    const int64_t h1 = kvci_min64(2 * g1, kvci_cdiv(c->N, 8)); /* half-groups holding a column < N */
    if (m1 - m0 >= 3) {
        for (int64_t h = 2 * g0; h < h1; h += 2)
            for (int64_t i = m0; i < m1; i += 5)
                tall256_tiles[f16][kvci_min64(5, m1 - i) - 1][kvci_min64(2, h1 - h) - 1](c, i, h);
        return;
    }
    for (int64_t h = 2 * g0; h < h1; h += 4)
        for (int64_t i = m0; i < m1; i += 2)
            tiles256[f16][kvci_min64(2, m1 - i) - 1][kvci_min64(4, h1 - h) - 1](c, i, h);
}
static void block256(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    block256_of(false, c, m0, m1, g0, g1);
}
static void block256h(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    block256_of(true, c, m0, m1, g0, g1);
}

/* Listed only where kvci_isa_runs(KVC_ISA_AVX2), which includes F16C. */
static const kvc_gemm_bf16_kernel fma256 = {"avx2-fma", "fma", NULL, 1, block256, false, block256h, block256, NULL, 0};

const kvc_gemm_bf16_kernel *kvci_gemm_bf16_fma256_kernel(void) { return &fma256; }
#else
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_fma512_kernel(void) { return NULL; }
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_fma256_kernel(void) { return NULL; }
#endif
