/* AVX-512 (F, BW, VL) table: the qk and pv kernels, exponentials and
 * maximum on zmm registers, the conversion into tiles shared with the AVX2
 * table. Bitwise equal to the AVX2 table by construction:
 * - qk holds two keys per zmm (key t in lanes 0-7, key t + 1 in lanes
 *   8-15, the query's 8 channels in both halves), so every lane
 *   accumulates exactly the products the AVX2 kernel's lane does, in the
 *   same order, and each key's 8 lanes go through the same reduction tree
 *   (reduce8). With 32 registers, up to 4 query rows x 8 keys (16
 *   accumulators) are computed in one pass over the channels; 5-8 rows
 *   (GQA 8 decode) in two such blocks of 3 or 4 rows, each converting the
 *   keys again (hot f16 and bf16 calls of 8 rows, D 128: 0.96-0.97 of the
 *   time of one pass of 8 rows over two halves of 4 keys, which converted
 *   each key once but loaded every query vector twice); int8 and fp8 keys,
 *   whose conversion costs more, take that pass of 8 rows (qk_block8: warm
 *   decode calls at GQA 8, one core, 0.96 e4m3, 0.98-0.99 int8, 1.00 e5m2
 *   of the time; f16 0.98 warm but 1.03 cold, so 2-byte rows keep the
 *   two blocks).
 * - pv computes acc += w * v per channel in increasing key order, skipping
 *   zero weights: the same per-element operations at any vector width;
 *   up to 8 rows share each converted value vector;
 *   16 channels per zmm, a tail of 8 through masked loads and stores
 *   (masked lanes are not read, so no byte past a row is touched); bf16
 *   rows 32 channels per load as even and odd channels (eo_bf16), the
 *   accumulators permuted to match: only where each channel sits changes.
 * - the maximum (max16) over 16 lanes in four chains: a maximum is exact,
 *   so any order gives the AVX2 kernel's value.
 * Used only when the CPU reports AVX-512 F, BW and VL besides AVX2 and FMA. */
#include <math.h>

#include "ops/cpu/simd_x86.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define INL TGT __attribute__((always_inline)) static inline

/* Two 8-channel halves into one zmm: lo in lanes 0-7, hi in lanes 8-15. */
INL __m512 join(__m256 lo, __m256 hi)
{
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

/* Channels d..d+7 of rows a and b, each converted exactly as ld_* converts them. */
INL __m512 pair_f32(const void *a, const void *b, int64_t d) { return join(ld_f32(a, d), ld_f32(b, d)); }
INL __m256i halves16(const void *a, const void *b, int64_t d)
{
    const __m128i lo = _mm_loadu_si128((const __m128i *)((const uint16_t *)a + d));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), _mm_loadu_si128((const __m128i *)((const uint16_t *)b + d)), 1);
}
/* each half converted on its own (vcvtph2ps ymm from memory) and joined: the same values, the inner loop of
 * 4 rows 0.92 of the time of one vcvtph2ps zmm of the two halves joined as integers */
INL __m512 pair_f16(const void *a, const void *b, int64_t d) { return join(ld_f16(a, d), ld_f16(b, d)); }
INL __m512 pair_bf16(const void *a, const void *b, int64_t d)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves16(a, b, d)), 16));
}
INL __m512 pair_i8(const void *a, const void *b, int64_t d); /* below, with the fp8 pairs */

INL __m128i bytes2(const void *a, const void *b, int64_t d)
{
    return _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)((const int8_t *)a + d)),
                              _mm_loadl_epi64((const __m128i *)((const int8_t *)b + d)));
}
/* 16 fp8 bytes as f32, exactly as ld_e5m2 / ld_e4m3 convert them (simd_x86.h), and the _fast forms of the
 * kernels for rows without NaN codes (kvci_fp8_rows_nan), which leave the NaN codes as other values:
 * - e5m2: the code is the top byte of an f16 (_fast: a NaN code gives a NaN of another payload);
 * - e4m3: the code sign-extended to 16 bits, shifted left by 7 and masked to sign | magnitude << 7 is the
 *   f16 of the value / 256 (e4m3's subnormals land on f16's), exact in f32 and scaled back by 256 (a NaN
 *   code gives +-480); vec_e4m3_fast leaves the factor 256 to the weights (KVC_AVX512_FP8 below). */
INL __m512 signed_qnan16(__m512 f, __mmask16 nan)
{
    /* (f & sign) | quiet NaN in the lanes of nan */
    return _mm512_castsi512_ps(_mm512_mask_ternarylogic_epi32(_mm512_castps_si512(f), nan, _mm512_set1_epi32((int)0x80000000u),
                                                              _mm512_castps_si512(_mm512_set1_ps(__builtin_nanf(""))), 0xEA));
}
INL __m512 e5m2_fast16(__m128i x) { return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(x), 8)); }
INL __m512 e5m2_16(__m128i x)
{
    const __m512 f = e5m2_fast16(x);
    return signed_qnan16(f, _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q));
}
INL __m512 e4m3_256th16(__m128i x)
{
    return _mm512_cvtph_ps(_mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(x), 7), _mm256_set1_epi16((short)0xBF80)));
}
INL __m512 e4m3_fast16(__m128i x) { return _mm512_mul_ps(e4m3_256th16(x), _mm512_set1_ps(256.0f)); }
INL __m512 e4m3_16(__m128i x)
{
    /* the NaN codes: (x & 0x7f) == 0x7f */
    const __mmask16 nan = _mm_cmpeq_epi8_mask(_mm_or_si128(x, _mm_set1_epi8((char)0x80)), _mm_set1_epi8(-1));
    return signed_qnan16(e4m3_fast16(x), nan);
}
INL __m512 pair_e5m2(const void *a, const void *b, int64_t d) { return e5m2_16(bytes2(a, b, d)); }
INL __m512 pair_e4m3(const void *a, const void *b, int64_t d) { return e4m3_16(bytes2(a, b, d)); }
INL __m512 pair_e5m2_fast(const void *a, const void *b, int64_t d) { return e5m2_fast16(bytes2(a, b, d)); }
INL __m512 pair_e4m3_fast(const void *a, const void *b, int64_t d) { return e4m3_fast16(bytes2(a, b, d)); }

INL __m512 pair_i8(const void *a, const void *b, int64_t d) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes2(a, b, d))); }

/* 16 channels (lanes outside mask m read nothing and hold 0). */
INL __m512 vec_f32(const void *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
INL __m512 vec_f16(const void *p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
INL __m512 vec_bf16(const void *p, __mmask16 m)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}
INL __m512 vec_i8(const void *p, __mmask16 m) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p))); }
INL __m512 vec_e5m2(const void *p, __mmask16 m) { return e5m2_16(_mm_maskz_loadu_epi8(m, p)); }
INL __m512 vec_e4m3(const void *p, __mmask16 m) { return e4m3_16(_mm_maskz_loadu_epi8(m, p)); }
INL __m512 vec_e5m2_fast(const void *p, __mmask16 m) { return e5m2_fast16(_mm_maskz_loadu_epi8(m, p)); }
INL __m512 vec_e4m3_fast(const void *p, __mmask16 m) { return e4m3_256th16(_mm_maskz_loadu_epi8(m, p)); }

/* The query's channels d..d+7 in both halves. */
INL __m512 q_both(const float *q) { return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(q)))); }

/* The reduce8 tree (simd_x86.h) of 8 keys held in pair accumulators (keys 2p in lanes 0-7, 2p + 1 in lanes
 * 8-15 of a[p]) on zmm: each hadd of the tree as odd + even elements of two in-lane shuffles (hadd's own
 * operands, in its order: x[2i + 1] + x[2i]), so every sum adds the same two values as the AVX2 kernel.
 * The first level of a[0], a[1] (keys 0-3) holds per 128-bit lane [k0 p01, k0 p23, k2 p01, k2 p23],
 * [k0 p45, k0 p67, k2 ..], [k1 ..], [k1 ..] (pij: lane j + lane i); the second adds those of keys 0-3 and
 * 4-7 into p23 + p01 and p67 + p45 (lanes of keys 0, 2, 4, 6, then 1, 3, 5, 7); the last joins them as
 * reduce_join does (low half + high half) and puts the keys in order: 13 instructions per 8 keys instead of
 * 4 extracts and 6 ymm hadd (hot qk_direct f16 calls, D 128: 4 rows 0.95, 8 rows 0.98 of the time). */
INL __m512 hadd_lanes(__m512 x, __m512 y)
{
    return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0xDD), _mm512_shuffle_ps(x, y, 0x88));
}
/* the tree's last two levels, from hadd_lanes of keys 0-3 (h0) and of keys 4-7 (h1) */
INL __m256 pairs_tree_join(__m512 h0, __m512 h1)
{
    const __m512 u = hadd_lanes(h0, h1);
    const __m512 j = _mm512_add_ps(_mm512_shuffle_f32x4(u, u, 0x88), _mm512_shuffle_f32x4(u, u, 0xDD));
    return _mm256_permutexvar_ps(_mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7), _mm512_castps512_ps256(j));
}
INL __m256 pairs_tree8(const __m512 *a) { return pairs_tree_join(hadd_lanes(a[0], a[1]), hadd_lanes(a[2], a[3])); }

/* Whether any weight w[r * ws + t], r < nr, t < nk (<= KVC_VTILE), is 0 (+0 or -0; NaN is not): 16 weights
 * per compare, masked lanes not read (hot pv_direct calls of 4 and 8 rows, D 128, measured 0.92-0.95 of the
 * time of the scalar loop). */
_Static_assert(KVC_VTILE <= 32, "any_zero compares two vectors of weights per row");
INL int any_zero(const float *w, int64_t ws, int nk, int nr)
{
    const __m512 zero = _mm512_setzero_ps();
    const __mmask16 m0 = nk >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nk) - 1);
    const __mmask16 m1 = nk >= 32 ? (__mmask16)0xFFFF : nk > 16 ? (__mmask16)((1u << (nk - 16)) - 1) : 0;
    __mmask16 z = 0;
    for (int r = 0; r < nr; r++) {
        z |= _mm512_mask_cmp_ps_mask(m0, _mm512_maskz_loadu_ps(m0, w + r * ws), zero, _CMP_EQ_OQ);
        z |= _mm512_mask_cmp_ps_mask(m1, _mm512_maskz_loadu_ps(m1, w + r * ws + 16), zero, _CMP_EQ_OQ);
    }
    return z != 0;
}

/* 32 bf16 channels (one 64-byte load) as f32 without a shuffle: x[0] the even channels (each dword << 16),
 * x[1] the odd ones (dword & 0xFFFF0000); accumulators of 32 channels held in the same even/odd order
 * (eo_load, eo_store permute them once per call). pv's products per channel are unchanged. */
INL void eo_bf16(const void *p, __m512 *x)
{
    const __m512i v = _mm512_loadu_si512(p);
    x[0] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    x[1] = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u)));
}
INL void eo_load(const float *p, __m512 *a)
{
    const __m512 lo = _mm512_loadu_ps(p), hi = _mm512_loadu_ps(p + 16);
    a[0] = _mm512_permutex2var_ps(lo, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), hi);
    a[1] = _mm512_permutex2var_ps(lo, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), hi);
}
INL void eo_store(const __m512 *a, float *p)
{
    _mm512_storeu_ps(p, _mm512_permutex2var_ps(a[0], _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), a[1]));
    _mm512_storeu_ps(p + 16, _mm512_permutex2var_ps(a[0], _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), a[1]));
}

/* The kernels for f32 tiles (row t at k + t * ks) and for direct rows of
 * each dtype (row t at k[t]); ROW(k, t, ks) gives row t's address, PAIR
 * and VEC convert in registers; BF16 (a constant): the rows are bf16, and
 * pv passes covering whole 32-channel groups read them by eo_bf16; QK8
 * (a constant): qk of 5-8 rows by qk_block8 (1-byte rows). */
#define KVC_AVX512_KERNELS(NAME, KARG, ROW, PAIR, VEC, ET, BF16, QK8)                                               \
    /* NR <= 4 rows x 8 keys: a[r * 4 + p] holds keys 2p, 2p + 1 of row r */                                        \
    INL void qk_block_##NAME(KARG k, int64_t ks, const float *q, int64_t qs, int64_t dim, int NR, float *out,       \
                             int64_t os, kvc_pf_run *pf)                                                            \
    {                                                                                                               \
        __m512 a[16];                                                                                               \
        const void *kr[8];                                                                                          \
        for (int t = 0; t < 8; t++) kr[t] = ROW(k, t, ks);                                                          \
        for (int x = 0; x < NR * 4; x++) a[x] = _mm512_setzero_ps();                                                \
        for (int64_t d = 0; d < dim; d += 8) {                                                                      \
            pf_step(pf);                                                                                            \
            __m512 kv[4];                                                                                           \
            for (int p = 0; p < 4; p++) kv[p] = PAIR(kr[2 * p], kr[2 * p + 1], d);                                  \
            for (int r = 0; r < NR; r++) {                                                                          \
                const __m512 qv = q_both(q + r * qs + d);                                                           \
                for (int p = 0; p < 4; p++) a[r * 4 + p] = _mm512_fmadd_ps(qv, kv[p], a[r * 4 + p]);                \
            }                                                                                                       \
        }                                                                                                           \
        for (int r = 0; r < NR; r++)                                                                                \
            _mm256_storeu_ps(out + r * os, pairs_tree8(a + r * 4));                                                 \
    }                                                                                                               \
    /* NR (5-8) rows x 8 keys as two halves of 4 keys over all channels, each key converted once for every          \
     * row (a[r * 2 + p] holds keys 2p, 2p + 1 of the half): the first half's level of the tree is kept (h)         \
     * and joined with the second's, the same sums as pairs_tree8 */                                                \
    INL void qk_block8_##NAME(KARG k, int64_t ks, const float *q, int64_t qs, int64_t dim, int NR, float *out,      \
                              int64_t os, kvc_pf_run *pf)                                                           \
    {                                                                                                               \
        __m512 a[16], h[8];                                                                                         \
        for (int half = 0; half < 2; half++) {                                                                      \
            const void *kr[4];                                                                                      \
            for (int t = 0; t < 4; t++) kr[t] = ROW(k, 4 * half + t, ks);                                           \
            for (int x = 0; x < NR * 2; x++) a[x] = _mm512_setzero_ps();                                            \
            for (int64_t d = 0; d < dim; d += 8) {                                                                  \
                pf_step(pf);                                                                                        \
                const __m512 k0 = PAIR(kr[0], kr[1], d), k1 = PAIR(kr[2], kr[3], d);                                \
                for (int r = 0; r < NR; r++) {                                                                      \
                    const __m512 qv = q_both(q + r * qs + d);                                                       \
                    a[r * 2] = _mm512_fmadd_ps(qv, k0, a[r * 2]);                                                   \
                    a[r * 2 + 1] = _mm512_fmadd_ps(qv, k1, a[r * 2 + 1]);                                           \
                }                                                                                                   \
            }                                                                                                       \
            for (int r = 0; r < NR; r++) {                                                                          \
                const __m512 t = hadd_lanes(a[r * 2], a[r * 2 + 1]);                                                \
                if (half) _mm256_storeu_ps(out + r * os, pairs_tree_join(h[r], t));                                 \
                else h[r] = t;                                                                                      \
            }                                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
    INL void qk_rows_##NAME(KARG k, int64_t ks, const float *q, int64_t qs, int nr, int64_t dim, float *out,        \
                            int64_t os, kvc_pf_run *pf)                                                             \
    {                                                                                                               \
        if (QK8 && nr >= 5 && nr <= 8) {                                                                            \
            switch (nr) {                                                                                           \
            case 5: qk_block8_##NAME(k, ks, q, qs, dim, 5, out, os, pf); break;                                     \
            case 6: qk_block8_##NAME(k, ks, q, qs, dim, 6, out, os, pf); break;                                     \
            case 7: qk_block8_##NAME(k, ks, q, qs, dim, 7, out, os, pf); break;                                     \
            default: qk_block8_##NAME(k, ks, q, qs, dim, 8, out, os, pf); break;                                    \
            }                                                                                                       \
            return;                                                                                                 \
        }                                                                                                           \
        for (int r = 0, n; r < nr; r += n) { /* NR a constant in each call: the accumulators stay in registers */   \
            n = nr - r > 8 ? 4 : nr - r > 4 ? (nr - r + 1) / 2 : nr - r; /* 5-8 rows: two blocks of 3 or 4 */       \
            switch (n) {                                                                                            \
            case 1: qk_block_##NAME(k, ks, q + r * qs, qs, dim, 1, out + r * os, os, pf); break;                    \
            case 2: qk_block_##NAME(k, ks, q + r * qs, qs, dim, 2, out + r * os, os, pf); break;                    \
            case 3: qk_block_##NAME(k, ks, q + r * qs, qs, dim, 3, out + r * os, os, pf); break;                    \
            default: qk_block_##NAME(k, ks, q + r * qs, qs, dim, 4, out + r * os, os, pf); break;                   \
            }                                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
    /* NR rows x W vectors of 16 channels from d, the last one under mask mt                                        \
     * (8 or 16 channels); DENSE (a constant): no weight is 0, otherwise                                            \
     * zero-weight pairs are skipped. Per key: the W value vectors, then one                                        \
     * weight broadcast per row (NR * W + W + 1 registers: no accumulator spills;                                   \
     * an array of per-vector masks made gcc keep the accumulators on the stack).                                   \
     * EO (a constant; W even, no tail): bf16 rows by eo_bf16, vector pairs even/odd. */                            \
    INL void pv_block_##NAME(KARG v, int64_t vs, int64_t d, __mmask16 mt, int nk, const float *w, int64_t ws,       \
                             int DENSE, int EO, int NR, int W, float *acc, int64_t as, kvc_pf_run *pf)              \
    {                                                                                                               \
        __m512 a[24];                                                                                               \
        for (int r = 0; r < NR; r++) {                                                                              \
            if (EO) {                                                                                               \
                for (int x = 0; x < W; x += 2) eo_load(acc + r * as + d + 16 * x, a + r * W + x);                   \
                continue;                                                                                           \
            }                                                                                                       \
            for (int x = 0; x + 1 < W; x++) a[r * W + x] = _mm512_loadu_ps(acc + r * as + d + 16 * x);              \
            a[r * W + W - 1] = _mm512_maskz_loadu_ps(mt, acc + r * as + d + 16 * (W - 1));                          \
        }                                                                                                           \
        for (int t = 0; t < nk; t++) {                                                                              \
            const ET *vr = (const ET *)ROW(v, t, vs) + d;                                                           \
            pf_step(pf);                                                                                            \
            __m512 vx[8];                                                                                           \
            if (EO) {                                                                                               \
                for (int x = 0; x < W; x += 2) eo_bf16(vr + 16 * x, vx + x);                                        \
            } else {                                                                                                \
                for (int x = 0; x + 1 < W; x++) vx[x] = VEC(vr + 16 * x, (__mmask16)0xFFFF);                        \
                vx[W - 1] = VEC(vr + 16 * (W - 1), mt);                                                             \
            }                                                                                                       \
            for (int r = 0; r < NR; r++) {                                                                          \
                if (!DENSE && w[r * ws + t] == 0.0f) continue;                                                      \
                const __m512 wr = _mm512_set1_ps(w[r * ws + t]);                                                    \
                for (int x = 0; x < W; x++) a[r * W + x] = _mm512_fmadd_ps(wr, vx[x], a[r * W + x]);                \
            }                                                                                                       \
        }                                                                                                           \
        for (int r = 0; r < NR; r++) {                                                                              \
            if (EO) {                                                                                               \
                for (int x = 0; x < W; x += 2) eo_store(a + r * W + x, acc + r * as + d + 16 * x);                  \
                continue;                                                                                           \
            }                                                                                                       \
            for (int x = 0; x + 1 < W; x++) _mm512_storeu_ps(acc + r * as + d + 16 * x, a[r * W + x]);              \
            _mm512_mask_storeu_ps(acc + r * as + d + 16 * (W - 1), mt, a[r * W + W - 1]);                           \
        }                                                                                                           \
    }                                                                                                               \
    /* pv_group_NAME_NR, NR = 1..8 (PV_GROUP) */                                                                    \
    PV_GROUP(NAME, KARG, BF16, 1) PV_GROUP(NAME, KARG, BF16, 2) PV_GROUP(NAME, KARG, BF16, 3)                       \
    PV_GROUP(NAME, KARG, BF16, 4) PV_GROUP(NAME, KARG, BF16, 5) PV_GROUP(NAME, KARG, BF16, 6)                       \
    PV_GROUP(NAME, KARG, BF16, 7) PV_GROUP(NAME, KARG, BF16, 8)                                                     \
    INL void pv_rows_##NAME(KARG v, int64_t vs, int nk, const float *w, int64_t ws, int nr, int64_t dim,            \
                            float *acc, int64_t as, kvc_pf_run *pf)                                                 \
    {                                                                                                               \
        for (int r = 0, n; r < nr; r += n) {                                                                        \
            n = nr - r > 8 ? 8 : nr - r;                                                                            \
            switch (n) {                                                                                            \
            case 1: pv_group_##NAME##_1(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf); break;               \
            case 2: pv_group_##NAME##_2(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf); break;               \
            case 3: pv_group_##NAME##_3(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf); break;               \
            case 4: pv_group_##NAME##_4(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf); break;               \
            case 5: pv_group_##NAME##_5(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf); break;               \
            case 6: pv_group_##NAME##_6(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf); break;               \
            case 7: pv_group_##NAME##_7(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf); break;               \
            default: pv_group_##NAME##_8(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf); break;              \
            }                                                                                                       \
        }                                                                                                           \
    }

/* NR (a literal, 1-8) rows over all channels, W vectors at a time: at most 29 / (NR + 1)
 * (NR * W accumulators, W values, a weight), spread evenly over the passes. One function per NR, so that
 * PV_CASE's conditions on NR, W and BF16 are constant expressions: the cases a group never takes are not
 * instantiated even without optimisation (the sanitizer build compiles this file at -O0). */
#define PV_GROUP(NAME, KARG, BF16, NR)                                                                              \
    INL void pv_group_##NAME##_##NR(KARG v, int64_t vs, int nk, const float *w, int64_t ws, int64_t dim, float *acc, \
                                    int64_t as, kvc_pf_run *pf)                                                     \
    {                                                                                                               \
        const int dense = !any_zero(w, ws, nk, NR), WMAX = 29 / (NR + 1) > 8 ? 8 : 29 / (NR + 1);                   \
        for (int64_t d = 0; d < dim;) {                                                                             \
            const int64_t nv = (dim - d + 15) / 16, passes = (nv + WMAX - 1) / WMAX;                                \
            const int W = (int)((nv + passes - 1) / passes);                                                        \
            const __mmask16 mt = dim - d - 16 * (W - 1) >= 16 ? (__mmask16)0xFFFF : (__mmask16)0x00FF;              \
            const int eo = BF16 && mt == (__mmask16)0xFFFF;                                                         \
            switch (W) {                                                                                            \
            PV_CASE(NAME, BF16, NR, 8) PV_CASE(NAME, BF16, NR, 7) PV_CASE(NAME, BF16, NR, 6)                        \
            PV_CASE(NAME, BF16, NR, 5) PV_CASE(NAME, BF16, NR, 4) PV_CASE(NAME, BF16, NR, 3)                        \
            PV_CASE(NAME, BF16, NR, 2) default: PV_CASE(NAME, BF16, NR, 1)                                          \
            }                                                                                                       \
            d += 16 * W;                                                                                            \
        }                                                                                                           \
    }

/* One case of pv_group's switch on W (unreachable above its WMAX); eo: bf16 rows and no tail. */
#define PV_CASE(NAME, BF16, NR, W)                                                                                  \
    case W:                                                                                                         \
        if (W > 29 / (NR + 1)) break;                                                                               \
        if (BF16 && W % 2 == 0 && eo && dense) pv_block_##NAME(v, vs, d, mt, nk, w, ws, 1, 1, NR, W, acc, as, pf);  \
        else if (BF16 && W % 2 == 0 && eo) pv_block_##NAME(v, vs, d, mt, nk, w, ws, 0, 1, NR, W, acc, as, pf);      \
        else if (dense) pv_block_##NAME(v, vs, d, mt, nk, w, ws, 1, 0, NR, W, acc, as, pf);                         \
        else pv_block_##NAME(v, vs, d, mt, nk, w, ws, 0, 0, NR, W, acc, as, pf);                                    \
        break;

/* f32 tiles */
#define TILE_ROW(k, t, ks) ((const void *)((k) + (t) * (ks)))
KVC_AVX512_KERNELS(tile, const float *, TILE_ROW, pair_f32, vec_f32, float, 0, 0)

KVC_X86_TILE_ENTRIES(TGT)

/* direct rows: pointer k[t] */
#define DIRECT_ROW(k, t, ks) ((void)(ks), (k)[t])
#define KVC_AVX512_DIRECT(NAME, ET, BF16, QK8)                                                                      \
    KVC_AVX512_KERNELS(NAME, const void *const *, DIRECT_ROW, pair_##NAME, vec_##NAME, ET, BF16, QK8)               \
    KVC_X86_DIRECT_ENTRIES(NAME, TGT)

KVC_AVX512_DIRECT(f32, float, 0, 0)
KVC_AVX512_DIRECT(f16, uint16_t, 0, 0)
KVC_AVX512_DIRECT(bf16, uint16_t, 1, 0)
KVC_AVX512_DIRECT(i8, int8_t, 0, 1)

/* fp8 rows: the NaN-fixing kernels and the _fast ones (KVC_X86_FP8_ENTRIES); e4m3's _fast values are
 * 2^-8 of the values in pv, the weights scaled by 256. */
#define KVC_AVX512_FP8(NAME, NAN_LIM, VSCALE)                                                                       \
    KVC_AVX512_KERNELS(NAME, const void *const *, DIRECT_ROW, pair_##NAME, vec_##NAME, uint8_t, 0, 1)               \
    KVC_AVX512_KERNELS(NAME##_fast, const void *const *, DIRECT_ROW, pair_##NAME##_fast, vec_##NAME##_fast, uint8_t, 0, 1) \
    KVC_X86_FP8_ENTRIES(NAME, NAN_LIM, VSCALE, TGT)
KVC_AVX512_FP8(e4m3, 0x7f, 256.0f)
KVC_AVX512_FP8(e5m2, 0x7d, 1.0f)

/* The even/odd tile scores (kvc_qk_eo_fn, simd.h). kpanel_eo: per 8 channels, keys 0-3 and 4-7 each as two pairs
 * joined (keys 0, 1 and 2, 3) and two permutes, into the even and the odd lanes. */
TGT static void kpanel_eo(const float *k, int64_t ks, int64_t dim, float *panel)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
    for (int64_t d = 0; d < dim; d += 8) {
        float *o = panel + 8 * d;
        for (int h = 0; h < 2; h++) {
            const float *r = k + 4 * h * ks + d;
            const __m512 z01 = join(_mm256_loadu_ps(r), _mm256_loadu_ps(r + ks));
            const __m512 z23 = join(_mm256_loadu_ps(r + 2 * ks), _mm256_loadu_ps(r + 3 * ks));
            _mm512_storeu_ps(o + 32 * h, _mm512_permutex2var_ps(z01, ev, z23));
            _mm512_storeu_ps(o + 32 * h + 16, _mm512_permutex2var_ps(z01, od, z23));
        }
    }
}
/* NR (1-6) rows x 8 keys: a[4r], a[4r + 1] the even and odd lanes of keys 0-3 (lane 4b + j: channel 2j or 2j + 1
 * of key b), a[4r + 2], a[4r + 3] those of keys 4-7; the query's even and odd channels broadcast per 128 bits.
 * The tree of reduce8: the even + odd sums (l0 + l1 ...), hadd_lanes of keys 0-3 and 4-7 ((l0 + l1) + (l2 + l3)
 * and (l4 + l5) + (l6 + l7)), then both halves' sums of two rows gathered by two permutes and added. */
INL void qk_eo_block(const float *kp, const float *q, int64_t qs, int64_t dim, int NR, float *out, int64_t os)
{
    __m512 a[24];
    for (int x = 0; x < NR * 4; x++) a[x] = _mm512_setzero_ps();
    for (int64_t d = 0; d < dim; d += 8) {
        const float *g = kp + 8 * d;
        const __m512 k0 = _mm512_loadu_ps(g), k1 = _mm512_loadu_ps(g + 16);
        const __m512 k2 = _mm512_loadu_ps(g + 32), k3 = _mm512_loadu_ps(g + 48);
        for (int r = 0; r < NR; r++) {
            const __m512 qe = _mm512_broadcast_f32x4(_mm_loadu_ps(q + r * qs + d));
            const __m512 qo = _mm512_broadcast_f32x4(_mm_loadu_ps(q + r * qs + d + 4));
            a[4 * r] = _mm512_fmadd_ps(qe, k0, a[4 * r]);
            a[4 * r + 1] = _mm512_fmadd_ps(qo, k1, a[4 * r + 1]);
            a[4 * r + 2] = _mm512_fmadd_ps(qe, k2, a[4 * r + 2]);
            a[4 * r + 3] = _mm512_fmadd_ps(qo, k3, a[4 * r + 3]);
        }
    }
    /* after hadd_lanes, key j < 4 sits in lanes 4j, 4j + 1 (its two half sums), key j >= 4 in 4(j - 4) + 2, + 3 */
    const __m512i lo = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 16, 20, 24, 28, 18, 22, 26, 30);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(1));
    for (int r = 0; r < NR; r += 2) {
        const int s = r + 1 < NR ? r + 1 : r;
        const __m512 zr = hadd_lanes(_mm512_add_ps(a[4 * r], a[4 * r + 1]), _mm512_add_ps(a[4 * r + 2], a[4 * r + 3]));
        const __m512 zs = hadd_lanes(_mm512_add_ps(a[4 * s], a[4 * s + 1]), _mm512_add_ps(a[4 * s + 2], a[4 * s + 3]));
        const __m512 t = _mm512_add_ps(_mm512_permutex2var_ps(zr, lo, zs), _mm512_permutex2var_ps(zr, hi, zs));
        _mm256_storeu_ps(out + r * os, _mm512_castps512_ps256(t));
        if (s != r) _mm256_storeu_ps(out + s * os, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
    }
}
TGT static void qk_eo(const float *kp, const float *q, int64_t qs, int nr, int64_t dim, float *out, int64_t os,
                      kvc_pf_run *pf)
{
    for (int r = 0, n; r < nr; r += n) { /* NR a constant in each call: the accumulators stay in registers */
        pf_step(pf);
        n = nr - r > 6 ? 6 : nr - r;
        switch (n) {
        case 1: qk_eo_block(kp, q + r * qs, qs, dim, 1, out + r * os, os); break;
        case 2: qk_eo_block(kp, q + r * qs, qs, dim, 2, out + r * os, os); break;
        case 3: qk_eo_block(kp, q + r * qs, qs, dim, 3, out + r * os, os); break;
        case 4: qk_eo_block(kp, q + r * qs, qs, dim, 4, out + r * os, os); break;
        case 5: qk_eo_block(kp, q + r * qs, qs, dim, 5, out + r * os, os); break;
        default: qk_eo_block(kp, q + r * qs, qs, dim, 6, out + r * os, os); break;
        }
    }
}

/* Keys in lanes from an f32 panel (channel d of key t at panel[d * KVC_LANES_KEYS + t], lanes past the keys 0):
 * the FMA chains of lanes_block, NR <= 4 rows x NV <= 4 vectors of 16 keys, without a conversion per row block.
 * Prefill calls (more than KVC_LANES_PANEL_ROWS rows, D <= KVC_LANES_PANEL_DIM) convert their keys into the panel, on
 * the stack (64 KiB at D 256: the OpenMP workers' and callers' stacks are MiBs), once: the widening of bf16
 * keys (a shift and a zero extension per vector) took 2 of every 6 vector instructions of lanes_block's 4 x 4 block,
 * on the ports of the FMAs. */
#define KVC_LANES_PANEL_ROWS 8
#define KVC_LANES_PANEL_DIM  256
INL void lanes_panel_block(const float *k, int NV, __mmask16 mt, const float *q, int64_t qs, int NR, int64_t dim,
                           float *out, int64_t os, kvc_pf_run *pf)
{
    __m512 a[16];
    for (int x = 0; x < NR * NV; x++) a[x] = _mm512_setzero_ps();
    for (int64_t d = 0; d < dim; d++) {
        pf_step(pf);
        const float *kd = k + d * KVC_LANES_KEYS;
        __m512 kv[4];
        for (int v = 0; v < NV; v++) kv[v] = _mm512_load_ps(kd + 16 * v);
        for (int r = 0; r < NR; r++) {
            const __m512 qb = _mm512_set1_ps(q[r * qs + d]);
            for (int v = 0; v < NV; v++) a[r * NV + v] = _mm512_fmadd_ps(qb, kv[v], a[r * NV + v]);
        }
    }
    for (int r = 0; r < NR; r++) {
        for (int v = 0; v + 1 < NV; v++) _mm512_storeu_ps(out + r * os + 16 * v, a[r * NV + v]);
        _mm512_mask_storeu_ps(out + r * os + 16 * (NV - 1), mt, a[r * NV + NV - 1]);
    }
}
#define PANEL_CASE(NR, NV)                                                                       \
    case (NR - 1) * 4 + NV - 1:                                                                  \
        lanes_panel_block(k, NV, mt, qr, qs, NR, dim, o, os, pf);                                \
        break;
TGT static void qk_lanes_panel(const float *k, int NV, __mmask16 mt, const float *q, int64_t qs, int nr, int64_t dim,
                               float *out, int64_t os, kvc_pf_run *pf)
{
    for (int r = 0, n; r < nr; r += n) {
        n = nr - r > 4 ? 4 : nr - r;
        const float *qr = q + r * qs;
        float *o = out + r * os;
        switch ((n - 1) * 4 + NV - 1) { /* NR, NV constants: the accumulators stay in registers */
        PANEL_CASE(1, 1) PANEL_CASE(1, 2) PANEL_CASE(1, 3) PANEL_CASE(1, 4)
        PANEL_CASE(2, 1) PANEL_CASE(2, 2) PANEL_CASE(2, 3) PANEL_CASE(2, 4)
        PANEL_CASE(3, 1) PANEL_CASE(3, 2) PANEL_CASE(3, 3) PANEL_CASE(3, 4)
        PANEL_CASE(4, 1) PANEL_CASE(4, 2) PANEL_CASE(4, 3) default: PANEL_CASE(4, 4)
        }
    }
}

/* Keys in lanes: NR <= 4 rows x NV <= 4 vectors of 16 keys (the last
 * under mask mt; masked lanes are not read, VEC converts), one FMA per
 * channel with the query channel broadcast. */
#define KVC_AVX512_LANES(NAME, VEC, ET)                                                                             \
    INL void lanes_block_##NAME(const ET *k, int64_t cs, int NV, __mmask16 mt, const float *q, int64_t qs, int NR,  \
                                int64_t dim, float *out, int64_t os, kvc_pf_run *pf)                                \
    {                                                                                                               \
        __m512 a[16];                                                                                               \
        for (int x = 0; x < NR * NV; x++) a[x] = _mm512_setzero_ps();                                               \
        for (int64_t d = 0; d < dim; d++) {                                                                         \
            pf_step(pf);                                                                                            \
            const ET *kd = k + d * cs;                                                                              \
            __m512 kv[4];                                                                                           \
            for (int v = 0; v + 1 < NV; v++) kv[v] = VEC(kd + 16 * v, (__mmask16)0xFFFF);                           \
            kv[NV - 1] = VEC(kd + 16 * (NV - 1), mt);                                                               \
            for (int r = 0; r < NR; r++) {                                                                          \
                const __m512 qb = _mm512_set1_ps(q[r * qs + d]);                                                    \
                for (int v = 0; v < NV; v++) a[r * NV + v] = _mm512_fmadd_ps(qb, kv[v], a[r * NV + v]);             \
            }                                                                                                       \
        }                                                                                                           \
        for (int r = 0; r < NR; r++) {                                                                              \
            for (int v = 0; v + 1 < NV; v++) _mm512_storeu_ps(out + r * os + 16 * v, a[r * NV + v]);                \
            _mm512_mask_storeu_ps(out + r * os + 16 * (NV - 1), mt, a[r * NV + NV - 1]);                            \
        }                                                                                                           \
    }                                                                                                               \
    TGT static void qk_lanes_##NAME(const void *k, int64_t cs, int nk, const float *q, int64_t qs, int nr,          \
                                    int64_t dim, float *out, int64_t os, kvc_pf_run pf)                             \
    {                                                                                                               \
        const int NV = (nk + 15) / 16;                                                                              \
        const __mmask16 mt = nk % 16 ? (__mmask16)((1u << (nk % 16)) - 1) : (__mmask16)0xFFFF;                      \
        if (nr > KVC_LANES_PANEL_ROWS && dim <= KVC_LANES_PANEL_DIM) {                                              \
            float panel[KVC_LANES_PANEL_DIM * KVC_LANES_KEYS] __attribute__((aligned(64)));                         \
            for (int64_t d = 0; d < dim; d++) {                                                                     \
                const ET *kd = (const ET *)k + d * cs;                                                              \
                for (int v = 0; v + 1 < NV; v++)                                                                    \
                    _mm512_store_ps(panel + d * KVC_LANES_KEYS + 16 * v, VEC(kd + 16 * v, (__mmask16)0xFFFF));      \
                _mm512_store_ps(panel + d * KVC_LANES_KEYS + 16 * (NV - 1), VEC(kd + 16 * (NV - 1), mt));           \
            }                                                                                                       \
            qk_lanes_panel(panel, NV, mt, q, qs, nr, dim, out, os, &pf);                                            \
            kvci_pf_rest(&pf);                                                                                      \
            return;                                                                                                 \
        }                                                                                                           \
        for (int r = 0, n; r < nr; r += n) {                                                                        \
            n = nr - r > 4 ? 4 : nr - r;                                                                            \
            const float *qr = q + r * qs;                                                                           \
            float *o = out + r * os;                                                                                \
            switch ((n - 1) * 4 + NV - 1) { /* NR, NV constants: the accumulators stay in registers */              \
            LANES_CASE(NAME, ET, 1, 1) LANES_CASE(NAME, ET, 1, 2) LANES_CASE(NAME, ET, 1, 3) LANES_CASE(NAME, ET, 1, 4) \
            LANES_CASE(NAME, ET, 2, 1) LANES_CASE(NAME, ET, 2, 2) LANES_CASE(NAME, ET, 2, 3) LANES_CASE(NAME, ET, 2, 4) \
            LANES_CASE(NAME, ET, 3, 1) LANES_CASE(NAME, ET, 3, 2) LANES_CASE(NAME, ET, 3, 3) LANES_CASE(NAME, ET, 3, 4) \
            LANES_CASE(NAME, ET, 4, 1) LANES_CASE(NAME, ET, 4, 2) LANES_CASE(NAME, ET, 4, 3) default: LANES_CASE(NAME, ET, 4, 4) \
            }                                                                                                       \
        }                                                                                                           \
        kvci_pf_rest(&pf);                                                                                          \
    }
#define LANES_CASE(NAME, ET, NR, NV)                                                             \
    case (NR - 1) * 4 + NV - 1:                                                                  \
        lanes_block_##NAME((const ET *)k, cs, NV, mt, qr, qs, NR, dim, o, os, &pf);              \
        break;

KVC_AVX512_LANES(f32, vec_f32, float)
KVC_AVX512_LANES(f16, vec_f16, uint16_t)
KVC_AVX512_LANES(bf16, vec_bf16, uint16_t)
KVC_AVX512_LANES(i8, vec_i8, int8_t)
/* fp8: the fixing conversions and those without the NaN fix-up (KVC_X86_FP8_LANES); e4m3's whole value
 * (its pv-side _fast form leaves the factor 256 to the weights, which qk has not) */
INL __m512 vec_e4m3_nonan(const void *p, __mmask16 m) { return e4m3_fast16(_mm_maskz_loadu_epi8(m, p)); }
KVC_AVX512_LANES(e4m3_fix, vec_e4m3, uint8_t)
KVC_AVX512_LANES(e4m3_nonan, vec_e4m3_nonan, uint8_t)
KVC_AVX512_LANES(e5m2_fix, vec_e5m2, uint8_t)
KVC_AVX512_LANES(e5m2_nonan, vec_e5m2_fast, uint8_t)
KVC_X86_FP8_LANES(e4m3, 0x7f, TGT)
KVC_X86_FP8_LANES(e5m2, 0x7d, TGT)

/* Plain f32, f16 and bf16 rows into tiles 16 channels at a time (vec_*: the same exact conversions as the
 * AVX2 table's, whose functions take NZ rows); the last step under a mask, its lanes up to the next multiple
 * of 8 stored as zeros. */
#define KVC_AVX512_CVT(NAME, ET)                                                                                    \
    TGT static void cvt_##NAME(const void *src, kvc_chan_map cm, int64_t dim, float *dst)                           \
    {                                                                                                               \
        if (cm.nzs != 0) {                                                                                          \
            kvci_avx2_cvt_##NAME(src, cm, dim, dst);                                                                \
            return;                                                                                                 \
        }                                                                                                           \
        int64_t d = 0;                                                                                              \
        for (; d + 16 <= dim; d += 16) _mm512_storeu_ps(dst + d, vec_##NAME((const ET *)src + d, (__mmask16)0xFFFF)); \
        if (d < dim) {                                                                                              \
            const int64_t r = dim - d;                                                                              \
            const __m512 x = vec_##NAME((const ET *)src + d, (__mmask16)((1u << r) - 1));                           \
            _mm512_mask_storeu_ps(dst + d, (__mmask16)((1u << kvci_round8(r)) - 1), x);                             \
        }                                                                                                           \
    }
KVC_AVX512_CVT(f32, float)
KVC_AVX512_CVT(f16, uint16_t)
KVC_AVX512_CVT(bf16, uint16_t)

/* exp(max(x, KVC_EXP_LO)) for x <= 0 on 16 lanes, each exactly as exp256 (simd_avx2.c) computes it. */
INL __m512 exp512(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(KVC_EXP_LO);
    const __mmask16 valid = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_NEQ_UQ);
    x = _mm512_max_ps(lo, x);
    const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(KVC_EXP_LOG2E)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(KVC_EXP_LN2_HI), x);
    r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(KVC_EXP_LN2_LO), r);
    __m512 y = _mm512_set1_ps(KVC_EXP_P0);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(KVC_EXP_P1));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(KVC_EXP_P2));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(KVC_EXP_P3));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(KVC_EXP_P4));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(KVC_EXP_P5));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), r);
    y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
    /* y * 2^fx in one vscalefps, where exp256 builds 2^fx's bits and multiplies: fx is an integer in [-126, 0]
     * (x >= KVC_EXP_LO), so 2^fx is a normal float and both are the one rounding of y * 2^fx (NaN stays NaN) */
    return _mm512_maskz_mov_ps(valid, _mm512_scalef_ps(y, fx));
}

/* kvc_exp_sum_fn on 16 lanes: the exponentials of kvci_avx2_exp_sum, and
 * its 8 lane sums in the same order (the low 8 of each 16, then the high
 * 8; a last group of 8 reads -inf above it, whose exponentials add +0). */
TGT static float exp_sum(float *s, int64_t n, float m)
{
    const __m512 mv = _mm512_set1_ps(m), ninf = _mm512_set1_ps(-INFINITY);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t t = 0; t < n; t += 16) {
        const __mmask16 k = n - t >= 16 ? (__mmask16)0xFFFF : (__mmask16)0x00FF;
        const __m512 e = exp512(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, k, s + t), mv));
        _mm512_mask_storeu_ps(s + t, k, e);
        acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
        acc = _mm256_add_ps(acc, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
    }
    return hsum_tree(acc);
}

/* kvc_max_fn on 16 lanes with four independent maxima (the maximum of the same entries as kvci_avx2_max's,
 * a NaN entry dropped or kept alike: a row's NaN scores reach it through the exponentials either way). */
TGT static float max16(const float *s, int64_t n)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 m[4] = {ninf, ninf, ninf, ninf};
    int64_t t = 0;
    for (; t + 64 <= n; t += 64)
        for (int i = 0; i < 4; i++) m[i] = _mm512_max_ps(m[i], _mm512_loadu_ps(s + t + 16 * i));
    for (; t < n; t += 16) m[0] = _mm512_max_ps(m[0], _mm512_mask_loadu_ps(ninf, n - t >= 16 ? (__mmask16)0xFFFF : (__mmask16)0x00FF, s + t));
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
}

KVC_X86_SIMD_TABLE(avx512_table, "avx512-f-bw-vl", cvt_f32, cvt_f16, cvt_bf16, exp_sum, max16, false, kpanel_eo, qk_eo);
KVC_X86_SIMD_TABLE(amx_table, "amx-bf16+avx512", cvt_f32, cvt_f16, cvt_bf16, exp_sum, max16, true, kpanel_eo, qk_eo);

const kvc_simd_table *kvci_simd_avx512_table(void) { return &avx512_table; }
const kvc_simd_table *kvci_simd_amx_table(void) { return &amx_table; }
#else
const kvc_simd_table *kvci_simd_avx512_table(void) { return NULL; }
const kvc_simd_table *kvci_simd_amx_table(void) { return NULL; }
#endif
