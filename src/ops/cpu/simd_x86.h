/* Pieces shared by the x86 SIMD tables (simd_avx2.c, simd_avx512.c): the
 * conversions of 8 K/V channels into f32 lanes, the fixed reduction tree of
 * the dot products, the prefetch walk of the direct kernels, and the AVX2
 * functions the AVX-512 table reuses unchanged (conversion into tiles,
 * exponentials, maximum). Both tables give every (row, key) pair the same
 * per-lane arithmetic, so their results are bitwise equal. */
#ifndef KVC_OPS_CPU_SIMD_X86_H
#define KVC_OPS_CPU_SIMD_X86_H

#include "ops/cpu/simd.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define KVC_X86_AVX2 __attribute__((target("avx2,fma,f16c")))
#define KVC_X86_INL  KVC_X86_AVX2 __attribute__((always_inline)) static inline

/* The dispatch table of an x86 path: the file's own qk/pv tile kernels,
 * direct kernels (f32, f16, bf16, i8, fp8 e4m3 and e5m2), exponentials
 * (EXP_SUM) and maximum (MAX), with the shared AVX2 conversions into tiles;
 * AMX sets the table's amx flag; KPANEL and QK_EO the even/odd tile scores (simd.h) or NULL. */
#define KVC_X86_SIMD_TABLE(VAR, NAME, CVT_F32, CVT_F16, CVT_BF16, EXP_SUM, MAX, AMX, KPANEL, QK_EO)                    \
    static const kvc_simd_table VAR = {                                                                                \
        NAME,                                                                                                          \
        {CVT_F32, CVT_F16, CVT_BF16, kvci_avx2_cvt_i8, kvci_avx2_cvt_e4m3, kvci_avx2_cvt_e5m2},                        \
        qk,                                                                                                            \
        pv,                                                                                                            \
        {qk_direct_f32, qk_direct_f16, qk_direct_bf16, qk_direct_i8, qk_direct_e4m3, qk_direct_e5m2},                  \
        {pv_direct_f32, pv_direct_f16, pv_direct_bf16, pv_direct_i8, pv_direct_e4m3, pv_direct_e5m2},                  \
        {qk_lanes_f32, qk_lanes_f16, qk_lanes_bf16, qk_lanes_i8, qk_lanes_e4m3, qk_lanes_e5m2},                        \
        EXP_SUM,                                                                                                       \
        MAX,                                                                                                           \
        kvci_avx2_out_row,                                                                                             \
        AMX,                                                                                                           \
        KPANEL,                                                                                                        \
        QK_EO,                                                                                                         \
    }

/* The tile kernels as the dispatch table calls them (qk, pv on f32 tiles with
 * a row stride): the file's qk_rows_tile/pv_rows_tile without prefetch. */
#define KVC_X86_TILE_ENTRIES(TGT)                                                                                      \
    TGT static void qk(const float *k, int64_t ks, const float *q, int64_t qs, int nr, int64_t dim, float *out,        \
                       int64_t os) {                                                                                   \
        kvc_pf_run none = {NULL, NULL, 0, false};                                                                      \
        qk_rows_tile(k, ks, q, qs, nr, dim, out, os, &none);                                                           \
    }                                                                                                                  \
    TGT static void pv(const float *v, int64_t vs, int nk, const float *w, int64_t ws, int nr, int64_t dim,            \
                       float *acc, int64_t as) {                                                                       \
        kvc_pf_run none = {NULL, NULL, 0, false};                                                                      \
        pv_rows_tile(v, vs, nk, w, ws, nr, dim, acc, as, &none);                                                       \
    }

/* The direct kernels of one element type, as the dispatch table calls them:
 * rows given as pointers (k[t], v[t]), the file's qk_rows_/pv_rows_ kernels,
 * then the rest of the prefetch run. TGT is the file's target attribute. */
#define KVC_X86_DIRECT_ENTRIES(NAME, TGT)                                                                              \
    TGT static void qk_direct_##NAME(const void *const *k, const float *q, int64_t qs, int nr, int64_t dim,            \
                                     float *out, int64_t os, kvc_pf_run pf) {                                          \
        qk_rows_##NAME(k, 0, q, qs, nr, dim, out, os, &pf);                                                            \
        kvci_pf_rest(&pf);                                                                                             \
    }                                                                                                                  \
    TGT static void pv_direct_##NAME(const void *const *v, int nk, const float *w, int64_t ws, int nr, int64_t dim,    \
                                     float *acc, int64_t as, kvc_pf_run pf) {                                          \
        pv_rows_##NAME(v, 0, nk, w, ws, nr, dim, acc, as, &pf);                                                        \
        kvci_pf_rest(&pf);                                                                                             \
    }

KVC_X86_INL __m256 ld_f32(const void *p, int64_t i) { return _mm256_loadu_ps((const float *)p + i); }
KVC_X86_INL __m256 ld_f16(const void *p, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
}
KVC_X86_INL __m256 ld_bf16(const void *p, int64_t i) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
KVC_X86_INL __m256 ld_i8(const void *p, int64_t i) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)p + i))));
}

/* fp8 bytes (e5m2 zero-extended, e4m3 sign-extended into 16-bit lanes) as f16 bits: e5m2 is the top byte
 * of an f16 (inf and NaN included); e4m3's sign | magnitude << 7 is an f16 whose value is 2^-8 of the fp8
 * value (exponent bias 15 instead of 7, e4m3's subnormals on f16's; its NaN code 0x7f lands on 1.875 * 2^0,
 * so it is scaled by 256 and +-480 becomes NaN). NaN lanes get the NaN of kvc_fp8_*_to_f32 (the quiet NaN
 * with the code's sign), so every code converts to the scalar decoding's bits. The _fast forms leave the
 * NaN codes as other values (a NaN of another payload, +-480): for rows without NaN codes only
 * (kvci_fp8_rows_nan). */
KVC_X86_INL __m128i e5m2_f16(__m128i x) { return _mm_slli_epi16(x, 8); }
KVC_X86_INL __m128i e4m3_f16(__m128i x) { return _mm_and_si128(_mm_slli_epi16(x, 7), _mm_set1_epi16((short)0xBF80)); }
KVC_X86_INL __m256 signed_qnan(__m256 f, __m256 nan) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    return _mm256_blendv_ps(f, _mm256_or_ps(_mm256_and_ps(f, sign), _mm256_set1_ps(__builtin_nanf(""))), nan);
}
KVC_X86_INL __m256 ld_e5m2_fast(const void *p, int64_t i) {
    return _mm256_cvtph_ps(e5m2_f16(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)((const uint8_t *)p + i)))));
}
KVC_X86_INL __m256 ld_e5m2(const void *p, int64_t i) {
    const __m256 f = ld_e5m2_fast(p, i);
    return signed_qnan(f, _mm256_cmp_ps(f, f, _CMP_UNORD_Q));
}
KVC_X86_INL __m256 ld_e4m3_fast(const void *p, int64_t i) {
    const __m256 h =
        _mm256_cvtph_ps(e4m3_f16(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)((const int8_t *)p + i)))));
    return _mm256_mul_ps(h, _mm256_set1_ps(256.0f));
}
KVC_X86_INL __m256 ld_e4m3(const void *p, int64_t i) {
    const __m256 f = ld_e4m3_fast(p, i);
    return signed_qnan(f,
                       _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), f), _mm256_set1_ps(480.0f), _CMP_EQ_OQ));
}

/* The largest (byte & 0x7f) of runs of fp8 bytes, folded 32, 16, 8 and 1 bytes at a time. */
typedef struct kvci_fp8_mag {
    __m256i m32;
    __m128i m16;
    int m1;
} kvci_fp8_mag;

KVC_X86_INL void kvci_fp8_mag_fold(kvci_fp8_mag *a, const uint8_t *p, int64_t n) {
    const __m256i mag = _mm256_set1_epi8(0x7f);
    int64_t t = 0;
    for (; t + 32 <= n; t += 32)
        a->m32 = _mm256_max_epu8(a->m32, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p + t)), mag));
    for (; t + 16 <= n; t += 16)
        a->m16 =
            _mm_max_epu8(a->m16, _mm_and_si128(_mm_loadu_si128((const __m128i *)(p + t)), _mm256_castsi256_si128(mag)));
    for (; t + 8 <= n; t += 8)
        a->m16 =
            _mm_max_epu8(a->m16, _mm_and_si128(_mm_loadl_epi64((const __m128i *)(p + t)), _mm256_castsi256_si128(mag)));
    for (; t < n; t++) a->m1 = (p[t] & 0x7f) > a->m1 ? p[t] & 0x7f : a->m1;
}

/* Whether the largest folded magnitude is >= lim: an e4m3 NaN code for lim 0x7f, an e5m2 one for 0x7d. */
KVC_X86_INL bool kvci_fp8_mag_reaches(const kvci_fp8_mag *a, int lim) {
    const __m128i m =
        _mm_max_epu8(a->m16, _mm_max_epu8(_mm256_castsi256_si128(a->m32), _mm256_extracti128_si256(a->m32, 1)));
    return a->m1 >= lim || _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(m, _mm_set1_epi8((char)lim)), m)) != 0;
}

/* Whether rows r[0..n) of dim bytes hold a NaN code (lim as above). */
KVC_X86_INL bool kvci_fp8_rows_nan(const void *const *r, int n, int64_t dim, int lim) {
    kvci_fp8_mag a = {_mm256_setzero_si256(), _mm_setzero_si128(), 0};
    for (int t = 0; t < n; t++) kvci_fp8_mag_fold(&a, r[t], dim);
    return kvci_fp8_mag_reaches(&a, lim);
}

/* The same for a keys-in-lanes block: channel d of key t at byte d * cs + t, d < dim, t < nk. */
KVC_X86_INL bool kvci_fp8_lanes_nan(const void *k, int64_t cs, int nk, int64_t dim, int lim) {
    kvci_fp8_mag a = {_mm256_setzero_si256(), _mm_setzero_si128(), 0};
    for (int64_t d = 0; d < dim; d++) kvci_fp8_mag_fold(&a, (const uint8_t *)k + d * cs, nk);
    return kvci_fp8_mag_reaches(&a, lim);
}

/* Rows x[r * xs + j], r < nr, j < n, times f into buf (rows of n); false when a finite entry's product
 * overflows (|x| f >= 2^128): those rows are left to the unscaled kernels. */
KVC_X86_INL bool kvci_scaled_rows(const float *x, int64_t xs, int nr, int64_t n, float f, float *buf) {
    const __m256 fv = _mm256_set1_ps(f), inf = _mm256_set1_ps(__builtin_inff()), sign = _mm256_set1_ps(-0.0f);
    __m256 over = _mm256_setzero_ps();
    bool over1 = false;
    for (int r = 0; r < nr; r++) {
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) {
            const __m256 a = _mm256_loadu_ps(x + r * xs + j), y = _mm256_mul_ps(a, fv);
            _mm256_storeu_ps(buf + r * n + j, y);
            over = _mm256_or_ps(over, _mm256_and_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, y), inf, _CMP_EQ_OQ),
                                                    _mm256_cmp_ps(_mm256_andnot_ps(sign, a), inf, _CMP_NEQ_UQ)));
        }
        for (; j < n; j++) {
            const float a = x[r * xs + j], y = a * f;
            buf[r * n + j] = y;
            over1 |= __builtin_isinf(y) && !__builtin_isinf(a);
        }
    }
    return !over1 && _mm256_movemask_ps(over) == 0;
}

/* The keys-in-lanes qk of an fp8 dtype: the file's qk_lanes_NAME_nonan (no NaN fix-up) when the block
 * holds no NaN code, else qk_lanes_NAME_fix; the same bits either way. */
#define KVC_X86_FP8_LANES(NAME, NAN_LIM, TGT)                                                                          \
    TGT static void qk_lanes_##NAME(const void *k, int64_t cs, int nk, const float *q, int64_t qs, int nr,             \
                                    int64_t dim, float *out, int64_t os, kvc_pf_run pf) {                              \
        if (kvci_fp8_lanes_nan(k, cs, nk, dim, NAN_LIM))                                                               \
            qk_lanes_##NAME##_fix(k, cs, nk, q, qs, nr, dim, out, os, pf);                                             \
        else                                                                                                           \
            qk_lanes_##NAME##_nonan(k, cs, nk, q, qs, nr, dim, out, os, pf);                                           \
    }

/* The direct entries of an fp8 dtype: when a call's rows hold no NaN code, the file's NAME_fast kernels,
 * pv on the weights times VSCALE (the factor its NAME_fast conversion leaves out, 1 or a power of two;
 * 8 rows at a time); otherwise, or for weight rows the scaling would overflow, the NaN-fixing kernels
 * NAME. Every product is the same exact product either way, so the bits are the same, with the NaN check
 * once per call instead of once per converted vector. */
#define KVC_X86_FP8_ENTRIES(NAME, NAN_LIM, VSCALE, TGT)                                                                \
    TGT static void qk_direct_##NAME(const void *const *k, const float *q, int64_t qs, int nr, int64_t dim,            \
                                     float *out, int64_t os, kvc_pf_run pf) {                                          \
        if (kvci_fp8_rows_nan(k, KVC_QK_KEYS, dim, NAN_LIM))                                                           \
            qk_rows_##NAME(k, 0, q, qs, nr, dim, out, os, &pf);                                                        \
        else                                                                                                           \
            qk_rows_##NAME##_fast(k, 0, q, qs, nr, dim, out, os, &pf);                                                 \
        kvci_pf_rest(&pf);                                                                                             \
    }                                                                                                                  \
    TGT static void pv_direct_##NAME(const void *const *v, int nk, const float *w, int64_t ws, int nr, int64_t dim,    \
                                     float *acc, int64_t as, kvc_pf_run pf) {                                          \
        int r = 0;                                                                                                     \
        if (!kvci_fp8_rows_nan(v, nk, dim, NAN_LIM)) {                                                                 \
            float b[8 * KVC_VTILE];                                                                                    \
            for (int n; r < nr; r += n) {                                                                              \
                n = nr - r > 8 ? 8 : nr - r;                                                                           \
                if (VSCALE == 1.0f)                                                                                    \
                    pv_rows_##NAME##_fast(v, 0, nk, w + r * ws, ws, n, dim, acc + r * as, as, &pf);                    \
                else if (kvci_scaled_rows(w + r * ws, ws, n, nk, VSCALE, b))                                           \
                    pv_rows_##NAME##_fast(v, 0, nk, b, nk, n, dim, acc + r * as, as, &pf);                             \
                else                                                                                                   \
                    break;                                                                                             \
            }                                                                                                          \
        }                                                                                                              \
        pv_rows_##NAME(v, 0, nk, w + r * ws, ws, nr - r, dim, acc + r * as, as, &pf);                                  \
        kvci_pf_rest(&pf);                                                                                             \
    }

/* Lane i of the result = sum of a_i, each by the tree ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)),
 * in two steps that may run apart: reduce4 of a[0..3] and of a[4..7], then reduce_join. */
KVC_X86_INL __m256 reduce4(const __m256 *a) {
    return _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
}
KVC_X86_INL __m256 reduce_join(__m256 t0, __m256 t1) {
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}
KVC_X86_INL __m256 reduce8(const __m256 *a) { return reduce_join(reduce4(a), reduce4(a + 4)); }

/* One row of a direct call's prefetch run per inner step: the requests
 * are spread over the arithmetic instead of issued in one burst before it
 * (a burst fills the miss buffers, and the core waits for them). */
KVC_X86_INL void pf_step(kvc_pf_run *c) { kvci_pf_row(c); }

/* exp(x), x <= 0, of the exponentials kernels (exp256 in simd_avx2.c,
 * exp512 in simd_avx512.c: the same operations per lane): x clamped at
 * KVC_EXP_LO (simd.h; max(lo, x), whose second operand passes a NaN
 * through), n = round(x log2 e), r = x - n ln 2 in two parts, a Cephes
 * polynomial in r (P0 highest), times 2^n; -inf lanes then set to 0. */
#define KVC_EXP_LOG2E  1.44269504088896341f
#define KVC_EXP_LN2_HI 0.693359375f
#define KVC_EXP_LN2_LO (-2.12194440e-4f)
#define KVC_EXP_P0     1.9875691500e-4f
#define KVC_EXP_P1     1.3981999507e-3f
#define KVC_EXP_P2     8.3334519073e-3f
#define KVC_EXP_P3     4.1665795894e-2f
#define KVC_EXP_P4     1.6666665459e-1f
#define KVC_EXP_P5     5.0000001201e-1f

/* The sum of an exponentials accumulator's 8 lanes, by the fixed tree of kvc_exp_sum_fn. */
KVC_X86_INL float hsum_tree(__m256 v) {
    const __m256 h = _mm256_hadd_ps(v, v);
    const __m256 h2 = _mm256_hadd_ps(h, h);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(h2), _mm256_extractf128_ps(h2, 1)));
}

/* simd_avx2.c */
void kvci_avx2_cvt_f32(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
void kvci_avx2_cvt_f16(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
void kvci_avx2_cvt_bf16(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
void kvci_avx2_cvt_i8(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
void kvci_avx2_cvt_e4m3(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
void kvci_avx2_cvt_e5m2(const void *src, kvc_chan_map cm, int64_t dim, float *dst);
float kvci_avx2_exp_sum(float *s, int64_t n, float m);
float kvci_avx2_max(const float *s, int64_t n);
void kvci_avx2_out_row(const float *acc, int64_t n, float l, float *out);
#endif

#endif
