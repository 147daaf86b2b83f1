/* The amx-bf16 kernel of kvci_gemm_bf16's dot family (gemm_bf16.h). Every
 * element C[i, j] is one f32 accumulator that runs over the blocks of 32 k
 * in increasing order and, within a block, over the bf16 parts of A[i, .]
 * in order, each step one TDPBF16PS (the block's 16 pairs of row i against
 * column j). TDPBF16PS computes each element of its C tile from that row of
 * the A tile, that column of the B tile and the element's previous value
 * only, so where a row sits in a tile, how tall the tiles are and whether
 * the accumulator waits in memory between steps never changes a bit: the
 * same sums for any M, N, tiling or thread. Two paths:
 *
 *   M <= 16 (decode): A and C tiles as tall as M (the parts of the M rows in
 *   tmm0-2), three column groups per pass (C tmm5-7, B tmm3-4): no work on
 *   padding rows, and each B tile (1 KiB of weights) read once per call.
 *
 *   M > 16: C in 16 x 16 tiles, up to 2 x 2 of them (tmm0-3), A's parts of
 *   16 rows (tmm4-5), the weights of two groups (tmm6-7), blocked over k
 *   (KC below): a chunk of A stays in L1 across the groups, the C tiles are
 *   saved to a per-thread buffer between chunks and reloaded (an exact f32
 *   store and load). Rows past M are the scratch's zero rows, not stored;
 *   padding columns and k only add +0.
 *
 * Linux hands tile data to a process only on request: the kernel is offered
 * once kvci_amx_bf16_granted (base/amx.h) says the CPU and the OS allow it. Each block loads
 * the tile configuration and releases the tiles when done. */
#include "model/gemm_bf16.h"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include "base/amx.h"
#include "model/gemm_bf16_x86.h"

#define TGT __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bf16")))
#define INL TGT __attribute__((always_inline)) static inline

typedef kvc_amx_tile_config tile_config;

/* Every tile 16 rows of 64 bytes: C 16 x 16 f32, A 16 rows x 32 bf16, B 16 pairs x 16 columns. */
static const tile_config config = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* The large-M path is blocked over k: for a chunk of KC k (KC/32 blocks), the parts of 32 rows
 * of A (KC * 32 * parts * 2 bytes = 24 KiB) stay in L1 while the chunk runs over SUB_G column
 * groups; the C tiles are saved to a per-thread f32 buffer between chunks and reloaded (exact:
 * the accumulation order per element is unchanged, chunk after chunk in increasing k). */
#define KC     128
#define SUB_G  8 /* column groups per pass over the chunks: acc holds 64 rows x SUB_G * 16 columns */
#define ACC_LD (SUB_G * 16)

/* MT x NT C tiles at rows i (scratch rows, multiples of 16) and group g over k blocks [k0, k1):
 * started from +0 when k0 == 0, else from acc; ends in acc (rows i - m0 .., columns (g - gb) * 16 ..),
 * or in C when k1 == Kp. */
INL void tiles(const int MT, const int NT, const kvc_bf16_call *c, int64_t i, int64_t m0, int64_t m1, int64_t g,
               int64_t gb, int64_t k0, int64_t k1, float *acc) {
    float *at = acc + (i - m0) * ACC_LD + (g - gb) * 16;
    if (k0 == 0) {
        _tile_zero(0);
        if (NT == 2) _tile_zero(1);
        if (MT == 2) _tile_zero(2);
        if (MT == 2 && NT == 2) _tile_zero(3);
    } else {
        _tile_loadd(0, at, ACC_LD * 4);
        if (NT == 2) _tile_loadd(1, at + 16, ACC_LD * 4);
        if (MT == 2) _tile_loadd(2, at + 16 * ACC_LD, ACC_LD * 4);
        if (MT == 2 && NT == 2) _tile_loadd(3, at + 16 * ACC_LD + 16, ACC_LD * 4);
    }
    const uint16_t *b = c->B + g * 16 * c->Kp;
    for (int64_t kb = k0; kb < k1; kb += 32) {
        _tile_loadd(6, b + kb * 16, 64);
        if (NT == 2) _tile_loadd(7, b + 16 * c->Kp + kb * 16, 64);
        for (int p = 0; p < KVC_GEMM_BF16_PARTS; p++) {
            _tile_loadd(4, c->As + kvci_bf16_split_at(c, p, i, kb), 64);
            if (MT == 2) _tile_loadd(5, c->As + kvci_bf16_split_at(c, p, i + 16, kb), 64);
            _tile_dpbf16ps(0, 4, 6);
            if (NT == 2) _tile_dpbf16ps(1, 4, 7);
            if (MT == 2) _tile_dpbf16ps(2, 5, 6);
            if (MT == 2 && NT == 2) _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, at, ACC_LD * 4);
    if (NT == 2) _tile_stored(1, at + 16, ACC_LD * 4);
    if (MT == 2) _tile_stored(2, at + 16 * ACC_LD, ACC_LD * 4);
    if (MT == 2 && NT == 2) _tile_stored(3, at + 16 * ACC_LD + 16, ACC_LD * 4);
    if (k1 < c->Kp) return;
    for (int64_t r = 0; r < 16 * MT && i + r < m1; r++)
        for (int u = 0; u < NT; u++) bf16_store_group(c, i + r, g + u, _mm512_loadu_ps(at + r * ACC_LD + 16 * u));
}

typedef void (*tiles_fn)(const kvc_bf16_call *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float *);
#define TILES(MT, NT)                                                                                                  \
    TGT static void tiles_##MT##x##NT(const kvc_bf16_call *c, int64_t i, int64_t m0, int64_t m1, int64_t g,            \
                                      int64_t gb, int64_t k0, int64_t k1, float *acc) {                                \
        tiles(MT, NT, c, i, m0, m1, g, gb, k0, k1, acc);                                                               \
    }
TILES(1, 1)
TILES(1, 2)
TILES(2, 1)
TILES(2, 2)
static const tiles_fn tiles_of[2][2] = {{tiles_1x1, tiles_1x2}, {tiles_2x1, tiles_2x2}};

/* Rows [m0, m1) (at most 64: the job's) x groups [g0, g1): SUB_G groups at a time, each over the
 * k chunks in order, each chunk over 32-row pairs, each pair over the groups (A's chunk reused from L1). */
TGT static void large_m(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    _Alignas(64) float acc[64 * ACC_LD];
    KVC_ASSERT(m1 - m0 <= 64);
    _tile_loadconfig(&config);
    for (int64_t gb = g0; gb < g1; gb += SUB_G) {
        const int64_t ge = kvci_min64(g1, gb + SUB_G);
        for (int64_t k0 = 0; k0 < c->Kp; k0 += KC) {
            const int64_t k1 = kvci_min64(c->Kp, k0 + KC);
            for (int64_t i = m0; i < m1; i += 32)
                for (int64_t g = gb; g < ge; g += 2)
                    tiles_of[m1 - i > 16][ge - g > 1](c, i, m0, m1, g, gb, k0, k1, acc);
        }
    }
    _tile_release();
}

/* ---- M <= 16 (decode): every tile as tall as M, the parts of A in three tiles ----------------- */

/* Tiles for M rows: A parts tmm0-2 (M rows x 32 bf16), B tmm3-4 (16 pairs x 16 columns),
 * C tmm5-7 (M rows x 16 f32): one C tile per column group, three groups at a time. */
static void small_config(tile_config *t, int64_t M) {
    *t = (tile_config){.palette = 1};
    for (int r = 0; r < 8; r++) t->colsb[r] = 64, t->rows[r] = r == 3 || r == 4 ? 16 : (uint8_t)M;
}

/* Parts p of the M rows at block kb into tmm0 .. tmm(PARTS-1). */
#define LOAD_PARTS(c, kb)                                                                                              \
    do {                                                                                                               \
        _tile_loadd(0, (c)->As + kvci_bf16_split_at((c), 0, 0, (kb)), 64);                                             \
        _tile_loadd(1, (c)->As + kvci_bf16_split_at((c), 1, 0, (kb)), 64);                                             \
        if (KVC_GEMM_BF16_PARTS > 2) _tile_loadd(2, (c)->As + kvci_bf16_split_at((c), 2, 0, (kb)), 64);                \
    } while (0)
/* C tile CT += every part . B tile BT, the parts in order (the 16-row kernel's order). */
#define DOT_PARTS(CT, BT)                                                                                              \
    do {                                                                                                               \
        _tile_dpbf16ps(CT, 0, BT);                                                                                     \
        _tile_dpbf16ps(CT, 1, BT);                                                                                     \
        if (KVC_GEMM_BF16_PARTS > 2) _tile_dpbf16ps(CT, 2, BT);                                                        \
    } while (0)

/* NT (1-3) column groups from g for the M <= 16 rows of the call. */
INL void small_tiles(const int NT, const kvc_bf16_call *c, int64_t g) {
    _tile_zero(5);
    if (NT > 1) _tile_zero(6);
    if (NT > 2) _tile_zero(7);
    const int64_t gs = 16 * c->Kp; /* elements of one packed group */
    const uint16_t *b = c->B + g * gs;
    for (int64_t kb = 0; kb < c->Kp; kb += 32) {
        LOAD_PARTS(c, kb);
        _tile_loadd(3, b + kb * 16, 64);
        DOT_PARTS(5, 3);
        if (NT > 1) {
            _tile_loadd(4, b + gs + kb * 16, 64);
            DOT_PARTS(6, 4);
        }
        if (NT > 2) {
            _tile_loadd(3, b + 2 * gs + kb * 16, 64);
            DOT_PARTS(7, 3);
        }
    }
    float out[3][16][16];
    _tile_stored(5, out[0], 64);
    if (NT > 1) _tile_stored(6, out[1], 64);
    if (NT > 2) _tile_stored(7, out[2], 64);
    for (int64_t r = 0; r < c->M; r++)
        for (int u = 0; u < NT; u++) bf16_store_group(c, r, g + u, _mm512_loadu_ps(out[u][r]));
}

TGT static void small_1(const kvc_bf16_call *c, int64_t g) { small_tiles(1, c, g); }
TGT static void small_2(const kvc_bf16_call *c, int64_t g) { small_tiles(2, c, g); }
TGT static void small_3(const kvc_bf16_call *c, int64_t g) { small_tiles(3, c, g); }

TGT static void block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    if (c->M <= 16) {
        tile_config small;
        small_config(&small, c->M);
        _tile_loadconfig(&small);
        for (int64_t g = g0; g < g1; g += 3) {
            const int64_t nt = g1 - g;
            if (nt >= 3)
                small_3(c, g);
            else if (nt == 2)
                small_2(c, g);
            else
                small_1(c, g);
        }
        _tile_release();
        return;
    }
    large_m(c, m0, m1, g0, g1);
}

static const kvc_gemm_bf16_kernel amx = {"amx-bf16", "dot", kvci_bf16_split_avx512, 16, block, true, NULL, NULL,
                                         NULL,       0};

const kvc_gemm_bf16_kernel *kvci_gemm_bf16_amx_kernel(void) { return kvci_amx_bf16_granted() ? &amx : NULL; }
#else
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_amx_kernel(void) { return NULL; }
#endif
