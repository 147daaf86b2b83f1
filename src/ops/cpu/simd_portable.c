/* Portable (scalar) SIMD table: the fallback on CPUs without AVX2/FMA/F16C. */
#include <math.h>
#include <stddef.h>

#include "ops/cpu/simd.h"
#include "ops/elem.h"

#define KVC_PORTABLE_CVT(NAME, DT)                                                                                     \
    static void cvt_##NAME(const void *src, kvc_chan_map cm, int64_t dim, float *dst) {                                \
        int64_t d = 0;                                                                                                 \
        for (; d < dim; d++) dst[d] = kvci_elem_load(src, DT, kvci_chan(cm, d));                                       \
        for (; d < kvci_round8(dim); d++) dst[d] = 0.0f;                                                               \
    }

KVC_PORTABLE_CVT(f32, KVC_DTYPE_F32)
KVC_PORTABLE_CVT(f16, KVC_DTYPE_F16)
KVC_PORTABLE_CVT(bf16, KVC_DTYPE_BF16)
KVC_PORTABLE_CVT(i8, KVC_DTYPE_I8)
KVC_PORTABLE_CVT(e4m3, KVC_DTYPE_F8E4M3)
KVC_PORTABLE_CVT(e5m2, KVC_DTYPE_F8E5M2)

static void qk(const float *k, int64_t kstride, const float *q, int64_t qstride, int nr, int64_t dim, float *out,
               int64_t ostride) {
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < KVC_QK_KEYS; t++) {
            float s = 0.0f;
            for (int64_t d = 0; d < dim; d++) s += q[r * qstride + d] * k[t * kstride + d];
            out[r * ostride + t] = s;
        }
}

static void pv(const float *v, int64_t vstride, int nk, const float *w, int64_t wstride, int nr, int64_t dim,
               float *acc, int64_t astride) {
    for (int t = 0; t < nk; t++)
        for (int r = 0; r < nr; r++) {
            const float x = w[r * wstride + t];
            if (x == 0.0f) continue;
            for (int64_t d = 0; d < dim; d++) acc[r * astride + d] += x * v[t * vstride + d];
        }
}

/* Keys in lanes: each key's FMA chain over the channels (simd.h kvc_qk_lanes_fn). */
#define KVC_PORTABLE_LANES(NAME, DT)                                                                                   \
    static void lanes_##NAME(const void *k, int64_t cs, int nk, const float *q, int64_t qs, int nr, int64_t dim,       \
                             float *out, int64_t os, kvc_pf_run pf) {                                                  \
        (void)pf;                                                                                                      \
        for (int r = 0; r < nr; r++)                                                                                   \
            for (int t = 0; t < nk; t++) {                                                                             \
                float s = 0.0f;                                                                                        \
                for (int64_t d = 0; d < dim; d++) s = fmaf(q[r * qs + d], kvci_elem_load(k, DT, d * cs + t), s);       \
                out[r * os + t] = s;                                                                                   \
            }                                                                                                          \
    }

KVC_PORTABLE_LANES(f32, KVC_DTYPE_F32)
KVC_PORTABLE_LANES(f16, KVC_DTYPE_F16)
KVC_PORTABLE_LANES(bf16, KVC_DTYPE_BF16)
KVC_PORTABLE_LANES(i8, KVC_DTYPE_I8)
KVC_PORTABLE_LANES(e4m3, KVC_DTYPE_F8E4M3)
KVC_PORTABLE_LANES(e5m2, KVC_DTYPE_F8E5M2)

static float exp_sum(float *s, int64_t n, float m) {
    float lane[8] = {0};
    for (int64_t t = 0; t < n; t++) {
        const float x = s[t] - m;
        s[t] = x == -INFINITY ? 0.0f : expf(x < KVC_EXP_LO ? KVC_EXP_LO : x); /* NaN compares false: stays NaN */
        lane[t % 8] += s[t];
    }
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

static float vmax(const float *s, int64_t n) {
    float m = -INFINITY;
    for (int64_t t = 0; t < n; t++) m = s[t] > m ? s[t] : m;
    return m;
}

static void out_row(const float *acc, int64_t n, float l, float *out) {
    for (int64_t d = 0; d < n; d++) {
        const float x = l == 0.0f ? 0.0f : acc[d] / l;
        out[d] = x == x ? x : NAN;
    }
}

const kvc_simd_table kvc_simd_portable = {
    "portable",
    {cvt_f32, cvt_f16, cvt_bf16, cvt_i8, cvt_e4m3, cvt_e5m2},
    qk,
    pv,
    {NULL},
    {NULL},
    {lanes_f32, lanes_f16, lanes_bf16, lanes_i8, lanes_e4m3, lanes_e5m2},
    exp_sum,
    vmax,
    out_row,
    false,
    NULL,
    NULL,
};
