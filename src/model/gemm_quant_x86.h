/* The AVX-512 steps the AMX-INT8 and AVX-512 VNNI kernels of kvci_gemm_wq share
 * (gemm_quant.h): one block's 16 column scales and the output of one 16-column group. */
#ifndef KVC_MODEL_GEMM_QUANT_X86_H
#define KVC_MODEL_GEMM_QUANT_X86_H

#include <immintrin.h>

#include "base/internal.h"
#include "model/gemm_quant.h"

#define KVC_WQ_X86_INL __attribute__((target("avx512f"), always_inline)) static inline

/* f32(d_w) of the 16 columns of group g in block b (f16 to f32 is exact). */
KVC_WQ_X86_INL __m512 wq_scales16(const kvc_wq_call *c, int64_t g, int64_t b) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(c->dw + (g * c->KB + b) * 16)));
}

/* acc = fmaf((float)isum, f32(d_w) * da, acc) for one row's 16 columns: dw the group's
 * scales (wq_scales16), da the row's activation scale of the block. */
KVC_WQ_X86_INL __m512 wq_step16(__m512 acc, __m512i isum, __m512 dw, float da) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(da)), acc);
}

/* C[i, 16g .. 16g+15] = acc (+ bias), the columns < N only. */
KVC_WQ_X86_INL void wq_store16(const kvc_wq_call *c, int64_t i, int64_t g, __m512 acc) {
    const int64_t n0 = g * 16, cols = kvci_min64(16, c->N - n0);
    const __mmask16 m = (__mmask16)((1u << cols) - 1u);
    if (c->bias) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, c->bias + n0));
    _mm512_mask_storeu_ps(c->C + i * c->ldc + n0, m, acc);
}

#endif
