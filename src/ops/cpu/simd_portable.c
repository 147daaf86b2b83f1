/* Portable (scalar) SIMD table: the fallback on CPUs without AVX2/FMA/F16C. */
#include "ops/cpu/simd.h"
#include "ops/elem.h"

#define KVC_PORTABLE_PAIR(NAME, DT)                                                                              \
    static void dot_##NAME(const void *k, int64_t nzs, int64_t c0, const float *q, int64_t qstride, int nr,      \
                           int64_t dim, float *out)                                                              \
    {                                                                                                            \
        for (int r = 0; r < nr; r++) out[r] = 0.0f;                                                              \
        for (int64_t d = 0; d < dim; d++) {                                                                      \
            const float x = kvc_elem_load(k, DT, c0 ? (d / c0) * nzs + d % c0 : d);                              \
            for (int r = 0; r < nr; r++) out[r] += q[r * qstride + d] * x;                                       \
        }                                                                                                        \
    }                                                                                                            \
    static void axpy_##NAME(const void *v, int64_t nzs, int64_t c0, const float *w, float *acc, int64_t astride, \
                            int nr, int64_t dim)                                                                 \
    {                                                                                                            \
        for (int64_t d = 0; d < dim; d++) {                                                                      \
            const float x = kvc_elem_load(v, DT, c0 ? (d / c0) * nzs + d % c0 : d);                              \
            for (int r = 0; r < nr; r++) acc[r * astride + d] += w[r] * x;                                       \
        }                                                                                                        \
    }

KVC_PORTABLE_PAIR(f32, KVC_DTYPE_F32)
KVC_PORTABLE_PAIR(f16, KVC_DTYPE_F16)
KVC_PORTABLE_PAIR(bf16, KVC_DTYPE_BF16)
KVC_PORTABLE_PAIR(i8, KVC_DTYPE_I8)

const kvc_simd_table kvc_simd_portable = {
    "portable",
    {dot_f32, dot_f16, dot_bf16, dot_i8},
    {axpy_f32, axpy_f16, axpy_bf16, axpy_i8},
};
