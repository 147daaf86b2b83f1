/* AVX2 + FMA + F16C table: 8 lanes, K/V converted in registers. Compiled
 * with target attributes so the rest of the library stays baseline x86-64;
 * used only when the CPU reports AVX2 and FMA (every such CPU has F16C). */
#include "ops/cpu/simd_x86.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <math.h>

#include "ops/elem.h"

#define TGT KVC_X86_AVX2
#define INL KVC_X86_AVX2 __attribute__((always_inline)) static inline

#define KVC_AVX2_CVT(NAME, LD, DT)                                                                                  \
    TGT void kvci_avx2_cvt_##NAME(const void *src, kvc_chan_map cm, int64_t dim, float *dst)                           \
    {                                                                                                               \
        const int64_t dv = dim & ~(int64_t)7;                                                                       \
        int64_t d = 0;                                                                                              \
        if (cm.nzs == 0) /* plain row */                                                                            \
            for (; d < dv; d += 8) _mm256_storeu_ps(dst + d, LD(src, d));                                           \
        else if (cm.mask >= 7) /* NZ tiles of >= 8 channels */                                                      \
            for (; d < dv; d += 8) _mm256_storeu_ps(dst + d, LD(src, kvci_chan(cm, d)));                             \
        for (; d < dim; d++) dst[d] = kvci_elem_load(src, DT, kvci_chan(cm, d));                                      \
        for (; d < kvci_round8(dim); d++) dst[d] = 0.0f;                                                             \
    }

KVC_AVX2_CVT(f32, ld_f32, KVC_DTYPE_F32)
KVC_AVX2_CVT(f16, ld_f16, KVC_DTYPE_F16)
KVC_AVX2_CVT(bf16, ld_bf16, KVC_DTYPE_BF16)
KVC_AVX2_CVT(i8, ld_i8, KVC_DTYPE_I8)
KVC_AVX2_CVT(e4m3, ld_e4m3, KVC_DTYPE_F8E4M3)
KVC_AVX2_CVT(e5m2, ld_e5m2, KVC_DTYPE_F8E5M2)

/* Lane i < 4 of the result = sum of a_i by the same tree as reduce8. */
INL __m128 reduce4_sums(const __m256 *a)
{
    const __m256 t0 = reduce4(a);
    return _mm_add_ps(_mm256_castps256_ps128(t0), _mm256_extractf128_ps(t0, 1));
}

/* When every weight w[r * ws + t] (t < nk <= KVC_VTILE) is nonzero (NaN
 * counts as nonzero), broadcasts it into wb[t * NR + r] and returns 1;
 * otherwise returns 0 and leaves wb alone (the caller skips zero pairs). */
INL int broadcast_weights(const float *w, int64_t ws, int nk, int NR, __m256 *wb)
{
    const __m256 zero = _mm256_setzero_ps();
    int zeros = 0;
    for (int r = 0; r < NR; r++) {
        int t = 0;
        for (; t + 8 <= nk; t += 8) zeros |= _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(w + r * ws + t), zero, _CMP_EQ_OQ));
        for (; t < nk; t++) zeros |= w[r * ws + t] == 0.0f;
    }
    if (zeros) return 0;
    for (int t = 0; t < nk; t++)
        for (int r = 0; r < NR; r++) wb[t * NR + r] = _mm256_broadcast_ss(w + r * ws + t);
    return 1;
}

/* The qk and pv kernels, generated for f32 tiles (TILE) and for direct
 * reads of each K/V dtype: the same instructions per (row, key) pair, only
 * the load differs (a tile row at t * ks, or row pointer k[t] converted in
 * registers). */
#define TILE_K(k, t, ks, d) _mm256_loadu_ps((const float *)(k) + (t) * (ks) + (d))

/* One group of NR (a literal: 1, 2 or 4) rows over all channels, W = 12 / NR vectors at a time
 * where the channels allow (NR x W accumulator chains hide the FMA latency;
 * 3 chains for one row ran at a third of the FMA rate), then fewer.
 * 128 channels: 4 x 24 + 2 x 16 (4 rows), 48 + 2 x 40 (2), 2 x 64 (1). One function per NR, so that
 * PV_CASE's condition on NR and W is a constant expression: the cases a group never takes are not
 * instantiated even without optimisation (the sanitizer build compiles this file at -O0). */
#define PV_GROUP(NAME, KARG, NR)                                                                                    \
    INL void pv_group_##NAME##_##NR(KARG v, int64_t vs, int nk, const float *w, int64_t ws, int64_t dim, float *acc, \
                                    int64_t as, kvc_pf_run *pf)                                                     \
    {                                                                                                               \
        __m256 wb[KVC_VTILE * 4];                                                                                   \
        const int dense = broadcast_weights(w, ws, nk, NR, wb);                                                     \
        const int WMAX = 12 / NR;                                                                                   \
        for (int64_t d = 0; d < dim;) { /* W a constant in every call: the accumulators stay in registers */        \
            const int64_t rem = (dim - d) / 8;                                                                      \
            const int W = rem >= 2 * WMAX ? WMAX : rem > WMAX ? (int)(rem + 1) / 2 : (int)rem;                      \
            switch (W) {                                                                                            \
            PV_CASE(NAME, NR, 12) PV_CASE(NAME, NR, 11) PV_CASE(NAME, NR, 10) PV_CASE(NAME, NR, 9)                  \
            PV_CASE(NAME, NR, 8) PV_CASE(NAME, NR, 7) PV_CASE(NAME, NR, 6) PV_CASE(NAME, NR, 5)                     \
            PV_CASE(NAME, NR, 4) PV_CASE(NAME, NR, 3) PV_CASE(NAME, NR, 2) default: PV_CASE(NAME, NR, 1)            \
            }                                                                                                       \
            d += 8 * W;                                                                                             \
        }                                                                                                           \
    }

/* One case of pv_group's switch on W (unreachable for NR * W > 12). */
#define PV_CASE(NAME, NR, W)                                                        \
    case W:                                                                         \
        if (NR * W > 12) break;                                                     \
        if (dense) pv_block_##NAME(v, vs, d, nk, w, ws, wb, 1, NR, W, acc, as, pf); \
        else pv_block_##NAME(v, vs, d, nk, w, ws, wb, 0, NR, W, acc, as, pf);       \
        break;

#define KVC_AVX2_KERNELS(NAME, LOADK, ROWAT, LD, KARG)                                                              \
    /* NR rows x NK keys (NR * NK <= 12 accumulators, index r * NK + t) */                                          \
    INL void qk_acc_##NAME(KARG k, int64_t ks, const float *q, int64_t qs, int64_t dim, int NR, int NK,             \
                           __m256 *a, kvc_pf_run *pf)                                                               \
    {                                                                                                               \
        for (int x = 0; x < NR * NK; x++) a[x] = _mm256_setzero_ps();                                               \
        for (int64_t d = 0; d < dim; d += 8) {                                                                      \
            pf_step(pf);                                                                                            \
            if (NR == 1) { /* each key converted just before its FMA: 8 accumulators + q + 1 key, no spill */       \
                const __m256 qv = _mm256_loadu_ps(q + d);                                                           \
                for (int t = 0; t < NK; t++) a[t] = _mm256_fmadd_ps(qv, LOADK(k, t, ks, d), a[t]);                  \
                continue;                                                                                           \
            }                                                                                                       \
            __m256 kv[8];                                                                                           \
            for (int t = 0; t < NK; t++) kv[t] = LOADK(k, t, ks, d);                                                \
            for (int r = 0; r < NR; r++) {                                                                          \
                const __m256 qv = _mm256_loadu_ps(q + r * qs + d);                                                  \
                for (int t = 0; t < NK; t++) a[r * NK + t] = _mm256_fmadd_ps(qv, kv[t], a[r * NK + t]);             \
            }                                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
    INL void qk_block_##NAME(KARG k, int64_t ks, const float *q, int64_t qs, int64_t dim, int NR, int NK,           \
                           float *o8, kvc_pf_run *pf)                                                               \
    {                                                                                                               \
        __m256 a[8];                                                                                                \
        qk_acc_##NAME(k, ks, q, qs, dim, NR, NK, a, pf);                                                            \
        _mm256_storeu_ps(o8, reduce8(a));                                                                           \
    }                                                                                                               \
    /* 4 rows x keys t .. t + 2 (12 accumulator chains hide the FMA latency) */                                     \
    INL void qk_triples_##NAME(KARG k, int64_t ks, const float *q, int64_t qs, int64_t dim, float *out,             \
                           int64_t os, kvc_pf_run *pf)                                                              \
    {                                                                                                               \
        __m256 a[12];                                                                                               \
        float o[12];                                                                                                \
        qk_acc_##NAME(k, ks, q, qs, dim, 4, 3, a, pf);                                                              \
        _mm256_storeu_ps(o, reduce8(a));                                                                            \
        _mm_storeu_ps(o + 8, reduce4_sums(a + 8));                                                                       \
        for (int x = 0; x < 12; x++) out[x / 3 * os + x % 3] = o[x];                                                \
    }                                                                                                               \
    /* 4 rows x keys t, t + 1: each row's pair of scores stored as one 64-bit store */                              \
    INL void qk_pairs_##NAME(KARG k, int64_t ks, const float *q, int64_t qs, int64_t dim, float *out,               \
                           int64_t os, kvc_pf_run *pf)                                                              \
    {                                                                                                               \
        __m256 a[8];                                                                                                \
        qk_acc_##NAME(k, ks, q, qs, dim, 4, 2, a, pf);                                                              \
        const __m256 s = reduce8(a);                                                                                \
        const __m128 lo = _mm256_castps256_ps128(s), hi = _mm256_extractf128_ps(s, 1);                              \
        _mm_storel_pi((__m64 *)out, lo);                                                                            \
        _mm_storeh_pi((__m64 *)(out + os), lo);                                                                     \
        _mm_storel_pi((__m64 *)(out + 2 * os), hi);                                                                 \
        _mm_storeh_pi((__m64 *)(out + 3 * os), hi);                                                                 \
    }                                                                                                               \
    INL void qk_rows_##NAME(KARG k, int64_t ks, const float *q, int64_t qs, int nr, int64_t dim, float *out,        \
                            int64_t os, kvc_pf_run *pf)                                                             \
    {                                                                                                               \
        float o8[8];                                                                                                \
        int r = 0;                                                                                                  \
        for (; r + 4 <= nr; r += 4) { /* keys 0-2, 3-5, 6-7 */                                                      \
            qk_triples_##NAME(k, ks, q + r * qs, qs, dim, out + r * os, os, pf);                                    \
            qk_triples_##NAME(KSHIFT(k, 3, ks), ks, q + r * qs, qs, dim, out + r * os + 3, os, pf);                 \
            qk_pairs_##NAME(KSHIFT(k, 6, ks), ks, q + r * qs, qs, dim, out + r * os + 6, os, pf);                   \
        }                                                                                                           \
        if (r + 2 <= nr) {                                                                                          \
            for (int t = 0; t < KVC_QK_KEYS; t += 4) {                                                              \
                qk_block_##NAME(KSHIFT(k, t, ks), ks, q + r * qs, qs, dim, 2, 4, o8, pf);                           \
                for (int x = 0; x < 8; x++) out[(r + x / 4) * os + t + x % 4] = o8[x];                              \
            }                                                                                                       \
            r += 2;                                                                                                 \
        }                                                                                                           \
        if (r < nr) {                                                                                               \
            qk_block_##NAME(k, ks, q + r * qs, qs, dim, 1, 8, o8, pf);                                              \
            for (int x = 0; x < 8; x++) out[r * os + x] = o8[x];                                                    \
        }                                                                                                           \
    }                                                                                                               \
    /* NR rows x W vectors of channels from d: acc = fma(w, v, acc) in increasing                                   \
     * key order. DENSE (a constant): every weight nonzero and broadcast in                                         \
     * wb[t * NR + r], read as a memory operand; otherwise each pair whose                                          \
     * weight is 0 is skipped (its value row may hold NaN). */                                                      \
    INL void pv_block_##NAME(KARG v, int64_t vs, int64_t d, int nk, const float *w, int64_t ws, const __m256 *wb,   \
                             int DENSE, int NR, int W, float *acc, int64_t as, kvc_pf_run *pf)                      \
    {                                                                                                               \
        __m256 a[12];                                                                                               \
        for (int r = 0; r < NR; r++)                                                                                \
            for (int x = 0; x < W; x++) a[r * W + x] = _mm256_loadu_ps(acc + r * as + d + 8 * x);                   \
        for (int t = 0; t < nk; t++) {                                                                              \
            /* channels d + 8 x read at constant displacements from one register (the                               \
             * empty asm keeps gcc from hoisting d + 8 x per x into spilled invariants) */                          \
            const void *vr = ROWAT(v, t, vs, d);                                                                    \
            __asm__("" : "+r"(vr));                                                                                 \
            pf_step(pf);                                                                                            \
            if (DENSE) { /* one value vector live at a time: 12 accumulators fit the 16 registers */                \
                for (int x = 0; x < W; x++) {                                                                       \
                    const __m256 vx = LD(vr, 8 * x);                                                                \
                    for (int r = 0; r < NR; r++) a[r * W + x] = _mm256_fmadd_ps(wb[t * NR + r], vx, a[r * W + x]);  \
                }                                                                                                   \
                continue;                                                                                           \
            }                                                                                                       \
            for (int x = 0; x < W; x++) {                                                                           \
                const __m256 vx = LD(vr, 8 * x);                                                                    \
                for (int r = 0; r < NR; r++)                                                                        \
                    if (w[r * ws + t] != 0.0f)                                                                      \
                        a[r * W + x] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + r * ws + t), vx, a[r * W + x]);      \
            }                                                                                                       \
        }                                                                                                           \
        for (int r = 0; r < NR; r++)                                                                                \
            for (int x = 0; x < W; x++) _mm256_storeu_ps(acc + r * as + d + 8 * x, a[r * W + x]);                   \
    }                                                                                                               \
    /* pv_group_NAME_NR, NR = 1, 2, 4 (PV_GROUP) */                                                                 \
    PV_GROUP(NAME, KARG, 1) PV_GROUP(NAME, KARG, 2) PV_GROUP(NAME, KARG, 4)                                         \
    INL void pv_rows_##NAME(KARG v, int64_t vs, int nk, const float *w, int64_t ws, int nr, int64_t dim,            \
                            float *acc, int64_t as, kvc_pf_run *pf)                                                 \
    {                                                                                                               \
        int r = 0;                                                                                                  \
        for (; r + 4 <= nr; r += 4) pv_group_##NAME##_4(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf);      \
        if (r + 2 <= nr) {                                                                                          \
            pv_group_##NAME##_2(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf);                              \
            r += 2;                                                                                                 \
        }                                                                                                           \
        if (r < nr) pv_group_##NAME##_1(v, vs, nk, w + r * ws, ws, dim, acc + r * as, as, pf);                      \
    }

/* f32 tiles: k + t * ks */
#define KSHIFT(k, t, ks) ((k) + (t) * (ks))
#define TILE_ROW(k, t, ks, d) ((const float *)(k) + (t) * (ks) + (d))
KVC_AVX2_KERNELS(tile, TILE_K, TILE_ROW, ld_f32, const float *)
#undef KSHIFT

KVC_X86_TILE_ENTRIES(TGT)

/* direct rows: pointer k[t], element d converted in registers */
#define KSHIFT(k, t, ks) ((k) + (t))

#define KVC_AVX2_DIRECT_KERNELS(NAME, LD, ET)                                                                       \
    INL __m256 ld_row_##NAME(const void *const *k, int t, int64_t ks, int64_t d)                                    \
    {                                                                                                               \
        (void)ks;                                                                                                   \
        return LD(k[t], d);                                                                                         \
    }                                                                                                               \
    INL const void *row_at_##NAME(const void *const *k, int t, int64_t ks, int64_t d)                               \
    {                                                                                                               \
        (void)ks;                                                                                                   \
        return (const ET *)k[t] + d;                                                                                \
    }                                                                                                               \
    KVC_AVX2_KERNELS(NAME, ld_row_##NAME, row_at_##NAME, LD, const void *const *)
#define KVC_AVX2_DIRECT(NAME, LD, ET)                                                                               \
    KVC_AVX2_DIRECT_KERNELS(NAME, LD, ET)                                                                           \
    KVC_X86_DIRECT_ENTRIES(NAME, TGT)
/* fp8: the NaN-fixing kernels and the _fast ones (KVC_X86_FP8_ENTRIES; their values are the fp8 values) */
#define KVC_AVX2_FP8(NAME, NAN_LIM)                                                                                 \
    KVC_AVX2_DIRECT_KERNELS(NAME, ld_##NAME, uint8_t)                                                               \
    KVC_AVX2_DIRECT_KERNELS(NAME##_fast, ld_##NAME##_fast, uint8_t)                                                 \
    KVC_X86_FP8_ENTRIES(NAME, NAN_LIM, 1.0f, TGT)

KVC_AVX2_DIRECT(f32, ld_f32, float)
KVC_AVX2_DIRECT(f16, ld_f16, uint16_t)
KVC_AVX2_DIRECT(bf16, ld_bf16, uint16_t)
KVC_AVX2_DIRECT(i8, ld_i8, int8_t)
KVC_AVX2_FP8(e4m3, 0x7f)
KVC_AVX2_FP8(e5m2, 0x7d)
#undef KSHIFT

/* exp(max(x, KVC_EXP_LO)) for x <= 0 (Cephes polynomial, about 1 ulp); -inf gives 0, NaN stays NaN. */
INL __m256 exp256(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(KVC_EXP_LO);
    const __m256 valid = _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_NEQ_UQ);
    x = _mm256_max_ps(lo, x);
    const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(KVC_EXP_LOG2E)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(KVC_EXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(KVC_EXP_LN2_LO), r);
    __m256 y = _mm256_set1_ps(KVC_EXP_P0);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(KVC_EXP_P1));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(KVC_EXP_P2));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(KVC_EXP_P3));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(KVC_EXP_P4));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(KVC_EXP_P5));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r);
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), valid);
}

TGT float kvci_avx2_exp_sum(float *s, int64_t n, float m)
{
    const __m256 mv = _mm256_set1_ps(m);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t t = 0; t < n; t += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(s + t), mv));
        _mm256_storeu_ps(s + t, e);
        acc = _mm256_add_ps(acc, e);
    }
    return hsum_tree(acc);
}

TGT float kvci_avx2_max(const float *s, int64_t n)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    for (int64_t t = 0; t < n; t += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(s + t));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

TGT void kvci_avx2_out_row(const float *acc, int64_t n, float l, float *out)
{
    int64_t d = 0;
    if (l != 0.0f) {
        const __m256 lv = _mm256_set1_ps(l), qnan = _mm256_set1_ps(NAN);
        for (; d + 8 <= n; d += 8) {
            const __m256 x = _mm256_div_ps(_mm256_loadu_ps(acc + d), lv);
            _mm256_storeu_ps(out + d, _mm256_blendv_ps(x, qnan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
        }
    }
    for (; d < n; d++) {
        const float x = l == 0.0f ? 0.0f : acc[d] / l;
        out[d] = x == x ? x : NAN;
    }
}

/* Keys in lanes from an f32 panel (channel d of key t at panel[d * KVC_LANES_KEYS + t]): lanes_block's FMA chains,
 * NR <= 4 rows x NV <= 3 vectors of 8 keys (12 accumulators, 3 keys, the query broadcast: 16 registers), without
 * converting the keys again per row block. Prefill calls (more than KVC_LANES_PANEL_ROWS rows, D <=
 * KVC_LANES_PANEL_DIM) convert their whole vectors of keys into the panel (on the stack, 64 KiB at D 256) once:
 * the bf16 widening's shift ran on the FMA ports, 2 of every 10 there. */
#define KVC_LANES_PANEL_ROWS 8
#define KVC_LANES_PANEL_DIM  256
INL void lanes_panel_block(const float *k, int NV, const float *q, int64_t qs, int NR, int64_t dim, float *out,
                           int64_t os, kvc_pf_run *pf)
{
    __m256 a[12];
    for (int x = 0; x < NR * NV; x++) a[x] = _mm256_setzero_ps();
    for (int64_t d = 0; d < dim; d++) {
        pf_step(pf);
        const float *kd = k + d * KVC_LANES_KEYS;
        __m256 kv[3];
        for (int v = 0; v < NV; v++) kv[v] = _mm256_load_ps(kd + 8 * v);
        for (int r = 0; r < NR; r++) {
            const __m256 qb = _mm256_set1_ps(q[r * qs + d]);
            for (int v = 0; v < NV; v++) a[r * NV + v] = _mm256_fmadd_ps(qb, kv[v], a[r * NV + v]);
        }
    }
    for (int r = 0; r < NR; r++)
        for (int v = 0; v < NV; v++) _mm256_storeu_ps(out + r * os + 8 * v, a[r * NV + v]);
}
#define PANEL_CASE(NR, NV)                                                                       \
    case (NR - 1) * 3 + NV - 1:                                                                  \
        lanes_panel_block(kt, NV, qr, qs, NR, dim, o, os, pf);                                   \
        break;
/* keys [0, full) (full a multiple of 8) of the panel */
TGT static void qk_lanes_panel(const float *k, int full, const float *q, int64_t qs, int nr, int64_t dim, float *out,
                               int64_t os, kvc_pf_run *pf)
{
    for (int t = 0, nv; t < full; t += 8 * nv) {
        nv = full - t >= 24 ? 3 : (full - t) / 8;
        const float *kt = k + t;
        for (int r = 0, n; r < nr; r += n) {
            n = nr - r > 4 ? 4 : nr - r;
            const float *qr = q + r * qs;
            float *o = out + r * os + t;
            switch ((n - 1) * 3 + nv - 1) { /* NR, NV constants: the accumulators stay in registers */
            PANEL_CASE(1, 1) PANEL_CASE(1, 2) PANEL_CASE(1, 3) PANEL_CASE(2, 1) PANEL_CASE(2, 2) PANEL_CASE(2, 3)
            PANEL_CASE(3, 1) PANEL_CASE(3, 2) PANEL_CASE(3, 3) PANEL_CASE(4, 1) PANEL_CASE(4, 2)
            default: PANEL_CASE(4, 3)
            }
        }
    }
}

/* Keys in lanes: NR <= 4 rows x NV <= 2 vectors of 8 keys, one FMA per
 * channel with the query channel broadcast; the keys past the last full
 * vector (nk % 8) by scalar FMA chains, the same operations per lane. */
#define KVC_AVX2_LANES(NAME, LD, DT, DTN)                                                                                \
    INL void lanes_block_##NAME(const void *k, int64_t cs, int NV, const float *q, int64_t qs, int NR, int64_t dim, \
                                float *out, int64_t os, kvc_pf_run *pf)                                             \
    {                                                                                                               \
        __m256 a[8];                                                                                                \
        for (int x = 0; x < NR * NV; x++) a[x] = _mm256_setzero_ps();                                               \
        for (int64_t d = 0; d < dim; d++) {                                                                         \
            pf_step(pf);                                                                                            \
            __m256 kv[2];                                                                                           \
            for (int v = 0; v < NV; v++) kv[v] = LD(k, d * cs + 8 * v);                                             \
            for (int r = 0; r < NR; r++) {                                                                          \
                const __m256 qb = _mm256_broadcast_ss(q + r * qs + d);                                              \
                for (int v = 0; v < NV; v++) a[r * NV + v] = _mm256_fmadd_ps(qb, kv[v], a[r * NV + v]);             \
            }                                                                                                       \
        }                                                                                                           \
        for (int r = 0; r < NR; r++)                                                                                \
            for (int v = 0; v < NV; v++) _mm256_storeu_ps(out + r * os + 8 * v, a[r * NV + v]);                    \
    }                                                                                                               \
    TGT static void qk_lanes_##NAME(const void *k, int64_t cs, int nk, const float *q, int64_t qs, int nr,          \
                                    int64_t dim, float *out, int64_t os, kvc_pf_run pf)                             \
    {                                                                                                               \
        const int full = nk / 8 * 8;                                                                                \
        int t0 = 0; /* keys [0, t0) scored from the panel */                                                        \
        if (nr > KVC_LANES_PANEL_ROWS && dim <= KVC_LANES_PANEL_DIM && full > 0) {                                  \
            float panel[KVC_LANES_PANEL_DIM * KVC_LANES_KEYS] __attribute__((aligned(32)));                         \
            for (int64_t d = 0; d < dim; d++)                                                                       \
                for (int t = 0; t < full; t += 8) _mm256_store_ps(panel + d * KVC_LANES_KEYS + t, LD(k, d * cs + t)); \
            qk_lanes_panel(panel, full, q, qs, nr, dim, out, os, &pf);                                              \
            t0 = full;                                                                                              \
        }                                                                                                           \
        for (int t = t0, nv; t < full; t += 8 * nv) {                                                               \
            nv = full - t >= 16 ? 2 : 1;                                                                            \
            const void *kt = (const char *)k + (int64_t)t * (int64_t)sizeof(DT);                                    \
            for (int r = 0, n; r < nr; r += n) {                                                                    \
                n = nr - r > 4 ? 4 : nr - r;                                                                        \
                const float *qr = q + r * qs;                                                                       \
                float *o = out + r * os + t;                                                                        \
                switch ((n - 1) * 2 + nv - 1) { /* NR, NV constants: the accumulators stay in registers */          \
                LANES2_CASE(NAME, 1, 1) LANES2_CASE(NAME, 1, 2) LANES2_CASE(NAME, 2, 1) LANES2_CASE(NAME, 2, 2)     \
                LANES2_CASE(NAME, 3, 1) LANES2_CASE(NAME, 3, 2) LANES2_CASE(NAME, 4, 1) default: LANES2_CASE(NAME, 4, 2) \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        for (int t = full; t < nk; t++)                                                                             \
            for (int r = 0; r < nr; r++) {                                                                          \
                float s = 0.0f;                                                                                     \
                for (int64_t d = 0; d < dim; d++)                                                                   \
                    s = __builtin_fmaf(q[r * qs + d], kvci_elem_load(k, KVC_DTYPE_##DTN, d * cs + t), s);          \
                out[r * os + t] = s;                                                                                \
            }                                                                                                       \
        kvci_pf_rest(&pf);                                                                                          \
    }
#define LANES2_CASE(NAME, NR, NV)                                                          \
    case (NR - 1) * 2 + NV - 1: lanes_block_##NAME(kt, cs, NV, qr, qs, NR, dim, o, os, &pf); break;

KVC_AVX2_LANES(f32, ld_f32, float, F32)
KVC_AVX2_LANES(f16, ld_f16, uint16_t, F16)
KVC_AVX2_LANES(bf16, ld_bf16, uint16_t, BF16)
KVC_AVX2_LANES(i8, ld_i8, int8_t, I8)
KVC_AVX2_LANES(e4m3_fix, ld_e4m3, uint8_t, F8E4M3)
KVC_AVX2_LANES(e4m3_nonan, ld_e4m3_fast, uint8_t, F8E4M3)
KVC_AVX2_LANES(e5m2_fix, ld_e5m2, uint8_t, F8E5M2)
KVC_AVX2_LANES(e5m2_nonan, ld_e5m2_fast, uint8_t, F8E5M2)
KVC_X86_FP8_LANES(e4m3, 0x7f, TGT)
KVC_X86_FP8_LANES(e5m2, 0x7d, TGT)

KVC_X86_SIMD_TABLE(avx2_table, "avx2-fma-f16c", kvci_avx2_cvt_f32, kvci_avx2_cvt_f16, kvci_avx2_cvt_bf16,
                   kvci_avx2_exp_sum, kvci_avx2_max, false, NULL, NULL);

const kvc_simd_table *kvci_simd_avx2_table(void) { return &avx2_table; }
#else
const kvc_simd_table *kvci_simd_avx2_table(void) { return NULL; }
#endif
