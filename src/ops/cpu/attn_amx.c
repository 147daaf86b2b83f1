/* AMX bf16 tiles for the CPU attention kernel (attn_amx.h). Tiles: C
 * tmm0-3 (up to 16 rows x 16 f32), B tmm4 (16 pairs x 16 columns), the
 * parts of A tmm5-7 (up to 16 rows x 32 bf16); each call loads the
 * configuration for its row count and releases the tiles when done.
 *
 * Scores, per 16 rows: C = four tiles of 16 keys, A = the query parts of
 * a block of 32 channels, B = the keys' channel pairs of that block
 * (16 keys x 32 channels transposed as 16 x 16 dwords, once per call for
 * every row). Values, per 16 rows: C = four groups of 16 value channels
 * (the accumulators, loaded from and stored back to acc), A = the weight
 * parts of 32 keys, B = those keys' values with consecutive keys
 * interleaved (pairs). */
#include "ops/cpu/attn_amx.h"

#include <math.h>

#include "base/amx.h"
#include "base/internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TGT __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))
#define INL TGT __attribute__((always_inline)) static inline

/* C and A tiles of m rows, B of 16. */
INL void config_rows(int m) {
    kvc_amx_tile_config t = {.palette = 1};
    for (int i = 0; i < 8; i++) t.colsb[i] = 64, t.rows[i] = i == 4 ? 16 : (uint8_t)m;
    _tile_loadconfig(&t);
}

/* The cache lines of a row of n bf16 into L1. */
INL void prefetch_row(const uint16_t *row, int64_t n) {
    for (int64_t l = 0; l < n * 2; l += 64) _mm_prefetch((const char *)row + l, _MM_HINT_T0);
}

/* Lanes of 32 bf16 (or 16 of them) whose exponent is all ones (inf, NaN). */
INL __mmask32 nonfinite32(__m512i x) {
    const __m512i e = _mm512_set1_epi16(0x7f80);
    return _mm512_cmpeq_epi16_mask(_mm512_and_si512(x, e), e);
}

static inline float bf16_f32(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } c = {(uint32_t)h << 16};
    return c.f;
}

TGT void kvci_amx_split_queries(const float *qs, int64_t qstride, int nr, int64_t D, uint16_t *qa, int64_t pstride,
                                uint8_t *qbad) {
    const int64_t Dp = kvci_round32(D);
    const __m512 inf = _mm512_set1_ps(INFINITY);
    for (int r = 0; r < nr; r++) {
        int bad = 0;
        for (int64_t d = 0; d < Dp; d += 16) {
            const int64_t left = kvci_max64(0, kvci_min64(16, D - d));
            __m512 x = _mm512_maskz_loadu_ps((__mmask16)((1u << left) - 1u), qs + r * qstride + d);
            const __mmask16 nf = _mm512_cmp_ps_mask(_mm512_abs_ps(x), inf, _CMP_NLT_UQ);
            bad |= nf != 0;
            x = _mm512_maskz_mov_ps((__mmask16)~nf, x);
            for (int p = 0; p < KVC_AMX_PARTS; p++) {
                const __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
                _mm256_storeu_si256((__m256i *)(qa + p * pstride + r * Dp + d), h);
                x = _mm512_sub_ps(x, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
            }
        }
        qbad[r] = (uint8_t)bad;
    }
}

/* C tile c += every part (tmm5-7, in order) . the B tile at b (loaded into tmm4). */
#define DOT_PARTS(c, b)                                                                                                \
    do {                                                                                                               \
        _tile_loadd(4, (b), 64);                                                                                       \
        _tile_dpbf16ps(c, 5, 4);                                                                                       \
        _tile_dpbf16ps(c, 6, 4);                                                                                       \
        _tile_dpbf16ps(c, 7, 4);                                                                                       \
    } while (0)

/* C tiles 0 .. n-1 (n <= 4) += the parts . the B tiles at b, b + bs, ... */
INL void dot_tiles(const int n, const uint16_t *b, int64_t bs) {
    DOT_PARTS(0, b);
    if (n > 1) DOT_PARTS(1, b + bs);
    if (n > 2) DOT_PARTS(2, b + 2 * bs);
    if (n > 3) DOT_PARTS(3, b + 3 * bs);
}

/* 16 x 16 dwords transposed in place: r[n] lane p becomes r[p] lane n. */
INL void transpose16(__m512i *r) {
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);     /* columns 0, 4, 8, 12 of rows i .. i+3 */
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]); /* 1, 5, 9, 13 */
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) { /* u[4 g + c]: columns c + 4 l (lanes l) of rows 4 g .. 4 g + 3 */
        const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        const __m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        r[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        r[c + 8] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
        r[c + 4] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        r[c + 12] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
    }
}

/* 16 keys as B tiles, one per block b of 32 channels: dst[b * 512 + p * 32 + 2 n + i] = channel 32 b + 2 p + i of
 * key n (non-finite channels and absent keys 0); returns the keys with a non-finite channel as bits. The rows of the
 * next tile (next[n], NULL: none) are prefetched meanwhile. */
INL unsigned pack_keys(const uint16_t *const *k, const uint16_t *const *next, int64_t D, uint16_t *dst) {
    unsigned bad = 0;
    for (int64_t ks = 0; ks < D; ks += 32) {
        const int64_t left = kvci_min64(32, D - ks);
        const __mmask32 m = left == 32 ? ~(__mmask32)0 : (((__mmask32)1 << left) - 1);
        __m512i r[16];
        for (int n = 0; n < 16; n++) {
            if (ks == 0 && next[n]) prefetch_row(next[n], D);
            r[n] = k[n] ? _mm512_maskz_loadu_epi16(m, k[n] + ks) : _mm512_setzero_si512();
            const __mmask32 nf = nonfinite32(r[n]);
            if (nf) r[n] = _mm512_maskz_mov_epi16(~nf, r[n]), bad |= 1u << n;
        }
        transpose16(r);
        for (int p = 0; p < 16; p++) _mm512_storeu_si512(dst + ks * 16 + p * 32, r[p]);
    }
    return bad;
}

/* C tiles 0 .. NKT-1 = the scores of the config's rows (parts at qa) against NKT packed key tiles. */
INL void qk_tiles(const int NKT, int64_t Dp, const uint16_t *qa, int64_t pstride, const uint16_t *kb, float *out,
                  int64_t os) {
    const int64_t kts = 16 * Dp; /* elements of one packed key tile */
    _tile_zero(0);
    if (NKT > 1) _tile_zero(1);
    if (NKT > 2) _tile_zero(2);
    if (NKT > 3) _tile_zero(3);
    for (int64_t ks = 0; ks < Dp; ks += 32) {
        _tile_loadd(5, qa + ks, Dp * 2);
        _tile_loadd(6, qa + pstride + ks, Dp * 2);
        _tile_loadd(7, qa + 2 * pstride + ks, Dp * 2);
        dot_tiles(NKT, kb + ks * 16, kts);
    }
    _tile_stored(0, out, os * 4);
    if (NKT > 1) _tile_stored(1, out + 16, os * 4);
    if (NKT > 2) _tile_stored(2, out + 32, os * 4);
    if (NKT > 3) _tile_stored(3, out + 48, os * 4);
}

/* The terms the tiles left out (a non-finite query or key channel): each is +-inf or NaN. */
static void qk_nonfinite(const uint16_t *const *k, int nk, const unsigned long long *kbad, int64_t D, const float *qs,
                         int64_t qstride, const uint8_t *qbad, int nr, float *out, int64_t os) {
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nk; t++) {
            if (!k[t] || !(qbad[r] || (kbad[t / 64] >> (t % 64) & 1u))) continue;
            float extra = 0.0f;
            for (int64_t d = 0; d < D; d++) {
                const float q = qs[r * qstride + d], x = bf16_f32(k[t][d]);
                if (!isfinite(q) || !isfinite(x)) extra += q * x;
            }
            out[r * os + t] += extra;
        }
}

TGT void kvci_amx_qk(const uint16_t *const *k, int nk, int64_t D, const uint16_t *qa, int64_t pstride, const float *qs,
                     int64_t qstride, const uint8_t *qbad, int nr, float *out, int64_t os, uint16_t *kb) {
    const int64_t Dp = kvci_round32(D);
    const int nkt = nk / 16;
    unsigned long long bad[KVC_AMX_KEYS / 64] = {0};
    const uint16_t *none[16] = {NULL};
    for (int kt = 0; kt < nkt; kt++)
        bad[kt / 4] |=
            (unsigned long long)pack_keys(k + 16 * kt, kt + 1 < nkt ? k + 16 * (kt + 1) : none, D, kb + kt * 16 * Dp)
            << (16 * (kt % 4));
    int m = 0;
    for (int r0 = 0; r0 < nr; r0 += 16) {
        if (kvci_min64(16, nr - r0) != m) config_rows(m = (int)kvci_min64(16, nr - r0));
        const uint16_t *q = qa + r0 * Dp;
        for (int kt = 0; kt < nkt; kt += 4) {
            const uint16_t *b = kb + kt * 16 * Dp;
            float *o = out + r0 * os + 16 * kt;
            switch (kvci_min64(4, nkt - kt)) {
            case 1: qk_tiles(1, Dp, q, pstride, b, o, os); break;
            case 2: qk_tiles(2, Dp, q, pstride, b, o, os); break;
            case 3: qk_tiles(3, Dp, q, pstride, b, o, os); break;
            default: qk_tiles(4, Dp, q, pstride, b, o, os); break;
            }
        }
    }
    _tile_release();
    int any = 0;
    for (int i = 0; i < KVC_AMX_KEYS / 64; i++) any |= bad[i] != 0;
    for (int r = 0; r < nr; r++) any |= qbad[r];
    if (any) qk_nonfinite(k, nk, bad, D, qs, qstride, qbad, nr, out, os);
}

/* Keys 2p, 2p + 1 of every step as B tiles: dst[((st * ng + g) * 16 + p) * 32 + 2 n + i] = channel 16 g + n of
 * key 32 st + 2 p + i (non-finite channels and absent keys 0); bad[t / 64] bit t % 64: key t has a non-finite
 * channel. Rows 16 keys ahead are prefetched meanwhile. */
INL void pack_values(const uint16_t *const *v, int nk, int64_t Dv, uint16_t *dst, unsigned long long *bad) {
    const int64_t ng = Dv / 16;
    for (int t = 0; t < nk; t += 2) {
        for (int i = 0; i < 2 && t + 16 + i < nk; i++)
            if (v[t + 16 + i]) prefetch_row(v[t + 16 + i], Dv);
        for (int64_t g = 0; g < ng; g++) {
            __m256i h[2];
            for (int i = 0; i < 2; i++) {
                h[i] = v[t + i] ? _mm256_loadu_si256((const __m256i *)(v[t + i] + 16 * g)) : _mm256_setzero_si256();
                const __mmask32 nf = nonfinite32(_mm512_castsi256_si512(h[i])) & 0xffffu;
                if (nf)
                    h[i] = _mm256_maskz_mov_epi16((__mmask16)~nf, h[i]), bad[(t + i) / 64] |= 1ull << ((t + i) % 64);
            }
            const __m512i pair =
                _mm512_or_si512(_mm512_cvtepu16_epi32(h[0]), _mm512_slli_epi32(_mm512_cvtepu16_epi32(h[1]), 16));
            _mm512_storeu_si512(dst + (((t / 32) * ng + g) * 16 + (t % 32) / 2) * 32, pair);
        }
    }
}

/* Parts of the weights of m rows over nk keys into pa[p * 16 * nk + r * nk + t]; absent keys weigh 0. */
INL void split_weights(const uint16_t *const *v, int nk, const float *w, int64_t ws, int m, uint16_t *pa) {
    for (int t = 0; t < nk; t += 16) {
        __mmask16 present = 0;
        for (int i = 0; i < 16; i++) present |= (__mmask16)((v[t + i] != NULL) << i);
        for (int r = 0; r < m; r++) {
            __m512 x = _mm512_maskz_loadu_ps(present, w + r * ws + t);
            for (int p = 0; p < KVC_AMX_PARTS; p++) {
                const __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
                _mm256_storeu_si256((__m256i *)(pa + (p * 16 + r) * nk + t), h);
                x = _mm512_sub_ps(x, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
            }
        }
    }
}

/* C tiles 0 .. NG-1 = acc of the config's rows, channel groups g0 .. g0 + NG - 1, plus every step's products. */
INL void pv_tiles(const int NG, int nk, int64_t ng, int64_t g0, const uint16_t *pa, const uint16_t *vb, float *acc,
                  int64_t as) {
    _tile_loadd(0, acc + 16 * g0, as * 4);
    if (NG > 1) _tile_loadd(1, acc + 16 * (g0 + 1), as * 4);
    if (NG > 2) _tile_loadd(2, acc + 16 * (g0 + 2), as * 4);
    if (NG > 3) _tile_loadd(3, acc + 16 * (g0 + 3), as * 4);
    for (int st = 0; st < nk / 32; st++) {
        _tile_loadd(5, pa + 32 * st, nk * 2);
        _tile_loadd(6, pa + 16 * nk + 32 * st, nk * 2);
        _tile_loadd(7, pa + 32 * nk + 32 * st, nk * 2);
        dot_tiles(NG, vb + (st * ng + g0) * 512, 512);
    }
    _tile_stored(0, acc + 16 * g0, as * 4);
    if (NG > 1) _tile_stored(1, acc + 16 * (g0 + 1), as * 4);
    if (NG > 2) _tile_stored(2, acc + 16 * (g0 + 2), as * 4);
    if (NG > 3) _tile_stored(3, acc + 16 * (g0 + 3), as * 4);
}

TGT void kvci_amx_pv(const uint16_t *const *v, int nk, int64_t Dv, const float *w, int64_t ws, int nr, float *acc,
                     int64_t as, uint16_t *vb, uint16_t *pa) {
    const int64_t ng = Dv / 16;
    unsigned long long bad[KVC_AMX_KEYS / 64] = {0};
    pack_values(v, nk, Dv, vb, bad);
    int m = 0;
    for (int r0 = 0; r0 < nr; r0 += 16) {
        split_weights(v, nk, w + r0 * ws, ws, (int)kvci_min64(16, nr - r0), pa);
        if (kvci_min64(16, nr - r0) != m) config_rows(m = (int)kvci_min64(16, nr - r0));
        float *a = acc + r0 * as;
        for (int64_t g = 0; g < ng; g += 4) switch (kvci_min64(4, ng - g)) {
            case 1: pv_tiles(1, nk, ng, g, pa, vb, a, as); break;
            case 2: pv_tiles(2, nk, ng, g, pa, vb, a, as); break;
            case 3: pv_tiles(3, nk, ng, g, pa, vb, a, as); break;
            default: pv_tiles(4, nk, ng, g, pa, vb, a, as); break;
            }
    }
    _tile_release();
    for (int t = 0; t < nk; t++) { /* the terms the tiles left out: each +-inf or NaN */
        if (!(bad[t / 64] >> (t % 64) & 1u)) continue;
        for (int r = 0; r < nr; r++) {
            const float wt = w[r * ws + t];
            if (wt == 0.0f) continue;
            for (int64_t d = 0; d < Dv; d++) {
                const float x = bf16_f32(v[t][d]);
                if (!isfinite(x)) acc[r * as + d] += wt * x;
            }
        }
    }
}
#else
void kvci_amx_split_queries(const float *qs, int64_t qstride, int nr, int64_t D, uint16_t *qa, int64_t pstride,
                            uint8_t *qbad) {
    (void)qs, (void)qstride, (void)nr, (void)D, (void)qa, (void)pstride, (void)qbad;
}
void kvci_amx_qk(const uint16_t *const *k, int nk, int64_t D, const uint16_t *qa, int64_t pstride, const float *qs,
                 int64_t qstride, const uint8_t *qbad, int nr, float *out, int64_t os, uint16_t *kb) {
    (void)k, (void)nk, (void)D, (void)qa, (void)pstride, (void)qs, (void)qstride, (void)qbad, (void)nr, (void)out;
    (void)os, (void)kb;
}
void kvci_amx_pv(const uint16_t *const *v, int nk, int64_t Dv, const float *w, int64_t ws, int nr, float *acc,
                 int64_t as, uint16_t *vb, uint16_t *pa) {
    (void)v, (void)nk, (void)Dv, (void)w, (void)ws, (void)nr, (void)acc, (void)as, (void)vb, (void)pa;
}
#endif
