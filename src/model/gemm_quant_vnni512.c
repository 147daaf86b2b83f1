/* The avx512-vnni kernel of kvci_gemm_wq (gemm_quant.h). VPDPBUSD multiplies
 * unsigned bytes by signed bytes, so the weights go in as the unsigned side and
 * the activations, four k of one row broadcast to every lane, as the signed side:
 *
 *   Q8_0: w + 128 = w ^ 0x80 in [1, 255]: sum (w + 128) qa = isum + 128 asum;
 *   Q4_0: the stored u = q + 8 in [0, 15]:  sum u qa        = isum + 8 asum.
 *
 * The int32 lanes start at -128 asum (or -8 asum), so after the block's 32 k they
 * hold isum exactly (|sum| <= 32 * 255 * 127 < 2^31), then the f32 step of the one
 * reduction order. Tiles of up to 4 rows x 2 column groups (one 64-byte row of the
 * packed block = 16 columns x 4 k, one VPDPBUSD per row of A); the weights of a
 * group are read once per 4 rows, so a call with M <= 4 streams them once, and then
 * one group at a time: one sequential stream of the packed weights, which the
 * hardware prefetchers keep ahead of (measured: 1.3-1.5x the GB/s of two streams a
 * group apart, out of cache, on an AMD EPYC; no change in cache).
 *
 * Q4_0 keeps each byte's high nibble in place (v & 0xF0 = 16 u) in a second int32
 * accumulator: two ANDs per 64 bytes instead of AND, shift, AND, and two dependency
 * chains of 4 VPDPBUSD per block instead of one of 8. */
#include "model/gemm_quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "model/gemm_quant_x86.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define INL TGT __attribute__((always_inline)) static inline

#define MR 4 /* rows per tile */
#define NR 2 /* column groups per tile */

/* Four k of a row of A from k0, in every lane. */
INL __m512i quad(const int8_t *a, int64_t k0) {
    int32_t v;
    __builtin_memcpy(&v, a + k0, 4);
    return _mm512_set1_epi32(v);
}

/* Rows [i, i + R) x groups [g, g + G) of C, format F. */
INL void tile(const kvc_wq_format F, const int R, const int G, const kvc_wq_call *c, int64_t i, int64_t g) {
    const int32_t off = F == KVC_WQ_Q8_0 ? 128 : 8;
    const int64_t bb = F == KVC_WQ_Q8_0 ? 512 : 256; /* bytes of one packed block */
    __m512 acc[MR][NR];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 16
        for (int u = 0; u < G; u++) acc[r][u] = _mm512_setzero_ps();
    for (int64_t b = 0; b < c->KB; b++) {
        __m512i s[MR][NR];
        const int8_t *a[MR];
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            a[r] = c->qa + (i + r) * c->Kp + b * 32;
            const __m512i start = _mm512_set1_epi32(-off * c->asum[(i + r) * c->KB + b]);
#pragma GCC unroll 16
            for (int u = 0; u < G; u++) s[r][u] = start;
        }
        const uint8_t *w = c->W + (g * c->KB + b) * bb;
        const int64_t gs = c->KB * bb; /* bytes of one packed group */
        if (F == KVC_WQ_Q8_0) {
#pragma GCC unroll 16
            for (int q = 0; q < 8; q++) {
                __m512i wv[NR];
#pragma GCC unroll 16
                for (int u = 0; u < G; u++)
                    wv[u] = _mm512_xor_si512(_mm512_loadu_si512(w + u * gs + q * 64), _mm512_set1_epi8((char)0x80));
#pragma GCC unroll 16
                for (int r = 0; r < R; r++) {
                    const __m512i av = quad(a[r], 4 * q);
#pragma GCC unroll 16
                    for (int u = 0; u < G; u++) s[r][u] = _mm512_dpbusd_epi32(s[r][u], wv[u], av);
                }
            }
        } else {
            /* lo: the low nibbles u; hi: the high nibbles kept in place, 16 u. */
            const __m512i mlo = _mm512_set1_epi8(0x0F), mhi = _mm512_set1_epi8((char)0xF0);
            __m512i h[MR][NR];
#pragma GCC unroll 16
            for (int r = 0; r < R; r++)
#pragma GCC unroll 16
                for (int u = 0; u < G; u++) h[r][u] = _mm512_setzero_si512();
#pragma GCC unroll 16
            for (int q = 0; q < 4; q++) {
                __m512i lo[NR], hi[NR];
#pragma GCC unroll 16
                for (int u = 0; u < G; u++) {
                    const __m512i v = _mm512_loadu_si512(w + u * gs + q * 64);
                    lo[u] = _mm512_and_si512(v, mlo);
                    hi[u] = _mm512_and_si512(v, mhi);
                }
#pragma GCC unroll 16
                for (int r = 0; r < R; r++) {
                    const __m512i al = quad(a[r], 4 * q), ah = quad(a[r], 16 + 4 * q);
#pragma GCC unroll 16
                    for (int u = 0; u < G; u++) {
                        s[r][u] = _mm512_dpbusd_epi32(s[r][u], lo[u], al);
                        h[r][u] = _mm512_dpbusd_epi32(h[r][u], hi[u], ah);
                    }
                }
            }
            /* h = 16 x the high nibbles' sum, exactly (|h| <= 16 * 16 * 15 * 127 < 2^31). */
#pragma GCC unroll 16
            for (int r = 0; r < R; r++)
#pragma GCC unroll 16
                for (int u = 0; u < G; u++) s[r][u] = _mm512_add_epi32(s[r][u], _mm512_srai_epi32(h[r][u], 4));
        }
#pragma GCC unroll 16
        for (int u = 0; u < G; u++) {
            const __m512 dw = wq_scales16(c, g + u, b);
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) acc[r][u] = wq_step16(acc[r][u], s[r][u], dw, c->da[(i + r) * c->KB + b]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 16
        for (int u = 0; u < G; u++) wq_store16(c, i + r, g + u, acc[r][u]);
}

#define TILE_FN(F, R, G)                                                                                               \
    TGT static void tile_##F##_##R##x##G(const kvc_wq_call *c, int64_t i, int64_t g) { tile(F, R, G, c, i, g); }
#define TILE_FNS(F)                                                                                                    \
    TILE_FN(F, 1, 1)                                                                                                   \
    TILE_FN(F, 1, 2)                                                                                                   \
    TILE_FN(F, 2, 1)                                                                                                   \
    TILE_FN(F, 2, 2)                                                                                                   \
    TILE_FN(F, 3, 1)                                                                                                   \
    TILE_FN(F, 3, 2)                                                                                                   \
    TILE_FN(F, 4, 1)                                                                                                   \
    TILE_FN(F, 4, 2)                                                                                                   \
    static void (*const tiles_##F[MR][NR])(const kvc_wq_call *, int64_t,                                               \
                                           int64_t) = {{tile_##F##_1x1, tile_##F##_1x2},                               \
                                                       {tile_##F##_2x1, tile_##F##_2x2},                               \
                                                       {tile_##F##_3x1, tile_##F##_3x2},                               \
                                                       {tile_##F##_4x1, tile_##F##_4x2}};                              \
    static void block_##F(const kvc_wq_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {                      \
        const int64_t me = kvci_min64(m1, c->M), nr = me - m0 > MR ? NR : 1;                                           \
        for (int64_t g = g0; g < g1; g += nr)                                                                          \
            for (int64_t i = m0; i < me; i += MR)                                                                      \
                tiles_##F[kvci_min64(MR, me - i) - 1][kvci_min64(nr, g1 - g) - 1](c, i, g);                            \
    }
TILE_FNS(KVC_WQ_Q8_0)
TILE_FNS(KVC_WQ_Q4_0)

static const kvc_wq_kernel vnni512 = {"avx512-vnni", 1, {block_KVC_WQ_Q8_0, block_KVC_WQ_Q4_0}};

const kvc_wq_kernel *kvci_wq_vnni512_kernel(void) {
    const bool ok =
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
    return ok ? &vnni512 : NULL;
}
#else
const kvc_wq_kernel *kvci_wq_vnni512_kernel(void) { return NULL; }
#endif
