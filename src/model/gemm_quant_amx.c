/* The amx-int8 kernel of kvci_gemm_wq (gemm_quant.h). One block of 32 k of 16
 * output columns is one TDPBSSD: the A tile holds the block's qa of 16 rows
 * (rows x 32 bytes, read in place from the [Mp][Kp] activations), the B tile the
 * packed block itself (8 rows x 64 bytes: 16 columns x 4 k per row, the layout
 * gemm_quant.h packs for it), the C tile the exact int32 isum of every element
 * (from +0; |isum| <= 32 * 127 * 127). The tile is stored and the f32 step of the
 * one reduction order runs in AVX-512, one accumulator per row in registers.
 * Q4_0 blocks are unpacked first to s8 q = u - 8 (the 16 low nibbles are k 0-15,
 * the high ones k 16-31: B rows 0-3 and 4-7), so TDPBSSD gives isum directly; a
 * job over several 16-row tiles unpacks each group once into a buffer for all of them.
 *
 * Two blocks are in flight (A tmm0/1, B tmm2/3, C tmm4/5): one block's tiles
 * run while the f32 steps of the one before read its stored isums. The tiles are
 * 16 rows tall, the last one of a call as tall as its rows rounded up to 4 (those
 * past M are the activations' zero padding, never stored); each group's weights
 * stay in L2 across the row tiles. The weights are prefetched PF_BLOCKS blocks
 * ahead: a tile load waits for all of its lines, so at decode (one row tile, the
 * weights streamed from memory once) each block's wait for memory would otherwise
 * add to its tile and f32 work. Blocks of at most 4 rows run the avx512-vnni kernel
 * instead (8 for Q4_0: vnni_rows), which stream the weights faster there.
 *
 * Offered when the CPU reports AMX-INT8 and AVX-512 BW and Linux has granted the
 * tile data (kvci_amx_bf16_granted, base/amx.h: it asks only on CPUs with AMX-BF16
 * too, which every AMX-INT8 CPU so far has). Each block loads the configuration and
 * releases the tiles when done. */
#include "model/gemm_quant.h"
#include "model/gemm_scratch.h"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <stdlib.h>

#include "base/amx.h"
#include "model/gemm_quant_x86.h"

#define TGT __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw")))
#define INL TGT __attribute__((always_inline)) static inline

/* Blocks of at most vnni_rows[format] rows run the avx512-vnni kernel (same bits, gemm_quant.h), measured
 * faster there (one core, N = 3072, K = 1024, weights from memory; q8_0: 1.15x at 1-2 rows, even at 4, and
 * amx-int8 with its prefetch 1.1-1.2x faster from 8 rows on; q4_0: avx512-vnni 1.0-1.2x faster at 8). */
static const int vnni_rows[2] = {4, 8};

/* A tiles (tmm0, tmm1) R rows x 32 bytes, B tiles (tmm2, tmm3) 8 x 64 bytes, C tiles (tmm4, tmm5) R x 16 int32;
 * configs[R / 4 - 1] for R = 4, 8, 12, 16 (the tile work and the f32 steps scale with R). */
static const kvc_amx_tile_config configs[4] = {
    {.palette = 1, .colsb = {32, 32, 64, 64, 64, 64}, .rows = {4, 4, 8, 8, 4, 4}},
    {.palette = 1, .colsb = {32, 32, 64, 64, 64, 64}, .rows = {8, 8, 8, 8, 8, 8}},
    {.palette = 1, .colsb = {32, 32, 64, 64, 64, 64}, .rows = {12, 12, 8, 8, 12, 12}},
    {.palette = 1, .colsb = {32, 32, 64, 64, 64, 64}, .rows = {16, 16, 8, 8, 16, 16}},
};

/* The packed Q4_0 block p (4 rows of 64 bytes) as an s8 B tile [8][64] of q = u - 8. */
INL void unpack_q4(const uint8_t *p, int8_t *out) {
    const __m512i nib = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
#pragma GCC unroll 16
    for (int q = 0; q < 4; q++) {
        const __m512i v = _mm512_loadu_si512(p + q * 64);
        _mm512_store_si512(out + q * 64, _mm512_sub_epi8(_mm512_and_si512(v, nib), eight));
        _mm512_store_si512(out + 256 + q * 64, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), nib), eight));
    }
}

#define PF_BLOCKS 4 /* blocks of weights prefetched ahead (measured: 4 and 8 alike, 16 slower) */
/* The packed block at p into L1 (a prefetch past the weights' end is harmless: it never faults). */
INL void prefetch_block(const kvc_wq_format F, const uint8_t *p) {
    for (int o = 0; o < (F == KVC_WQ_Q8_0 ? 512 : 256); o += 64) _mm_prefetch((const char *)p + o, _MM_HINT_T0);
}

/* acc[r] steps over one block's C tile of R rows, stored at t [R][16] int32. */
INL void steps(const int R, __m512 *acc, const int32_t *t, __m512 dw, const float *da, int64_t KB) {
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) acc[r] = wq_step16(acc[r], _mm512_load_si512(t + r * 16), dw, da[r * KB]);
}

/* Block b's isum tile into t (int32 [16][16]) through tiles A = tmm TA, B = tmm TB, C = tmm TC. */
#define STAGE(TA, TB, TC, F, c, a, w, b, t, unpacked)                                                                  \
    do {                                                                                                               \
        _tile_loadd(TA, (a) + (b)*32, (c)->Kp);                                                                        \
        prefetch_block(F, (w) + ((b) + PF_BLOCKS) * ((F) == KVC_WQ_Q8_0 ? 512 : 256));                                 \
        if ((F) == KVC_WQ_Q8_0) {                                                                                      \
            _tile_loadd(TB, (w) + (b)*512, 64);                                                                        \
        } else {                                                                                                       \
            unpack_q4((w) + (b)*256, (unpacked));                                                                      \
            __asm__ volatile("" ::: "memory"); /* the tile load's asm reads the stores (it names no memory) */         \
            _tile_loadd(TB, (unpacked), 64);                                                                           \
        }                                                                                                              \
        _tile_zero(TC);                                                                                                \
        _tile_dpbssd(TC, TA, TB);                                                                                      \
        _tile_stored(TC, (t), 64);                                                                                     \
    } while (0)

/* Rows [i, i + R) x group g of C, tiles configured for R rows; rows >= me not stored. w: the group's KB blocks
 * in format F's packed layout (or, as KVC_WQ_Q8_0, Q4_0 blocks unpacked to s8 by unpack_q4).
 * Software-pipelined: block b's tiles run while the f32 steps of block b - 1 read its stored isums. */
INL void rows_group(const kvc_wq_format F, const int R, const kvc_wq_call *c, const uint8_t *w, int64_t i, int64_t me,
                    int64_t g) {
    _Alignas(64) int32_t t[2][16 * 16];
    _Alignas(64) int8_t unpacked[2][512];
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) acc[r] = _mm512_setzero_ps();
    const int64_t KB = c->KB;
    const int8_t *a = c->qa + i * c->Kp;
    const float *da = c->da + i * KB;
    if (KB > 0) { /* K = 0: C = bias (or 0) */
        STAGE(0, 2, 4, F, c, a, w, 0, t[0], unpacked[0]);
        int64_t b = 1;
        for (; b + 1 < KB; b += 2) {
            STAGE(1, 3, 5, F, c, a, w, b, t[1], unpacked[1]);
            steps(R, acc, t[0], wq_scales16(c, g, b - 1), da + b - 1, KB);
            STAGE(0, 2, 4, F, c, a, w, b + 1, t[0], unpacked[0]);
            steps(R, acc, t[1], wq_scales16(c, g, b), da + b, KB);
        }
        if (b < KB) STAGE(1, 3, 5, F, c, a, w, b, t[1], unpacked[1]);
        steps(R, acc, t[0], wq_scales16(c, g, b - 1), da + b - 1, KB);
        if (b < KB) steps(R, acc, t[1], wq_scales16(c, g, b), da + b, KB);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) /* a constant trip count: acc stays in registers */
        if (i + r < me) wq_store16(c, i + r, g, acc[r]);
}

/* tile_F_R: rows_group for format F and R rows. */
typedef void tile_fn(const kvc_wq_call *c, const uint8_t *w, int64_t i, int64_t me, int64_t g);
#define TILE_FN(F, R)                                                                                                  \
    TGT static void tile_##F##_##R(const kvc_wq_call *c, const uint8_t *w, int64_t i, int64_t me, int64_t g) {         \
        rows_group(F, R, c, w, i, me, g);                                                                              \
    }
/* tiles_F[R / 4 - 1]: rows_group for R = 4, 8, 12, 16. */
#define TILE_FNS(F)                                                                                                    \
    TILE_FN(F, 4)                                                                                                      \
    TILE_FN(F, 8)                                                                                                      \
    TILE_FN(F, 12)                                                                                                     \
    TILE_FN(F, 16)                                                                                                     \
    static tile_fn *const tiles_##F[4] = {tile_##F##_4, tile_##F##_8, tile_##F##_12, tile_##F##_16};
TILE_FNS(KVC_WQ_Q8_0)
TILE_FNS(KVC_WQ_Q4_0)

/* The KB packed Q4_0 blocks at w unpacked into out [KB][512]: s8 B tiles, read as Q8_0 blocks. */
INL void unpack_group(const uint8_t *w, int64_t KB, int8_t *out) {
    for (int64_t b = 0; b < KB; b++) unpack_q4(w + b * 256, out + b * 512);
    __asm__ volatile("" ::: "memory"); /* the tile loads' asm reads the stores (it names no memory) */
}

/* Groups [g0, g1) of rows [m0, min(m1, M)) (m0 a multiple of 16) in format F: at most vnni_rows[F] rows on
 * the avx512-vnni kernel, else in 16-row tiles, then the rows left (fewer than 16) in one tile of them rounded
 * up to 4 (its rows past M are the activations' zero padding). Q4_0 over several 16-row tiles unpacks each
 * group's blocks once for all of them (per tile when that buffer cannot be had). */
INL void blocks(const kvc_wq_format F, const kvc_wq_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    const int64_t me = kvci_min64(m1, c->M), full = m0 + (me - m0) / 16 * 16, KB = c->KB;
    const int64_t group_bytes = KB * (F == KVC_WQ_Q8_0 ? 512 : 256);
    if (me <= m0) return;
    const kvc_wq_kernel *vnni = kvci_wq_vnni512_kernel();
    if (me - m0 <= vnni_rows[F] && vnni) {
        vnni->block[F](c, m0, m1, g0, g1);
        return;
    }
    tile_fn *const *tiles = F == KVC_WQ_Q8_0 ? tiles_KVC_WQ_Q8_0 : tiles_KVC_WQ_Q4_0;
    void *buf = NULL; /* the thread's kernel scratch (slot 1: the call's activations live in slot 0) */
    if (F == KVC_WQ_Q4_0 && full - m0 > 16 && kvci_gemm_scratch_slot(1, (size_t)KB * 512, &buf) != KVC_OK) buf = NULL;
    int8_t *unpacked = buf;
    if (full > m0) {
        _tile_loadconfig(&configs[3]);
        for (int64_t g = g0; g < g1; g++) {
            const uint8_t *w = c->W + g * group_bytes;
            if (unpacked) unpack_group(w, KB, unpacked);
            for (int64_t i = m0; i < full; i += 16)
                if (unpacked)
                    tile_KVC_WQ_Q8_0_16(c, (const uint8_t *)unpacked, i, me, g);
                else
                    tiles[3](c, w, i, me, g);
        }
    }
    if (me > full) {
        const int64_t t = (me - full + 3) / 4 - 1;
        _tile_loadconfig(&configs[t]);
        for (int64_t g = g0; g < g1; g++) tiles[t](c, c->W + g * group_bytes, full, me, g);
    }
    _tile_release();
}

TGT static void block_q8_0(const kvc_wq_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    blocks(KVC_WQ_Q8_0, c, m0, m1, g0, g1);
}
TGT static void block_q4_0(const kvc_wq_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    blocks(KVC_WQ_Q4_0, c, m0, m1, g0, g1);
}

static const kvc_wq_kernel amx = {"amx-int8", 16, {block_q8_0, block_q4_0}};

/* The CPU reports AMX-INT8 and AVX-512 BW, and the OS grants the tile data. */
static bool usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 25))) return false; /* AMX-INT8 */
    return __builtin_cpu_supports("avx512bw") && kvci_amx_bf16_granted();
}

const kvc_wq_kernel *kvci_wq_amx_kernel(void) { return usable() ? &amx : NULL; }
#else
const kvc_wq_kernel *kvci_wq_amx_kernel(void) { return NULL; }
#endif
