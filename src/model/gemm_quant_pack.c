/* The number formats of kvci_gemm_wq (gemm_quant.h): weights quantized into
 * the packed Q8_0 / Q4_0 layout and read back, activations quantized per row
 * and per block of 32 into the bytes every kernel reads. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/half.h"
#include "model/gemm_quant.h"

#define QK 32 /* k per block */

static int64_t int_block_bytes(kvc_wq_format f) { return f == KVC_WQ_Q8_0 ? 512 : 256; }

int64_t kvci_wq_packed_bytes(kvc_wq_format f, int64_t N, int64_t K) {
    const int64_t blocks = kvci_cdiv(N, 16) * kvci_cdiv(K, QK);
    return (blocks * (int_block_bytes(f) + 16 * 2) + 63) / 64 * 64;
}

int64_t kvci_wq_scales_offset(kvc_wq_format f, int64_t N, int64_t K) {
    return kvci_cdiv(N, 16) * kvci_cdiv(K, QK) * int_block_bytes(f);
}

/* rne(x) clamped to [lo, hi]; 0 for NaN (an activation block that is not finite). */
static int quant_round(float x, float lo, float hi) {
    const float r = rintf(x);
    if (r > hi) return (int)hi;
    if (r < lo) return (int)lo;
    return r == r ? (int)r : 0;
}

/* Byte of the packed integer part that holds q of column c, k kk of block (g, b) (Q4_0: kk < 16;
 * k 16 + kk is the high nibble of the same byte). */
static int64_t int_at(kvc_wq_format f, int64_t KB, int64_t g, int64_t b, int64_t c, int64_t kk) {
    return (g * KB + b) * int_block_bytes(f) + (kk / 4) * 64 + c * 4 + kk % 4;
}

/* One block of n <= 32 weights into its scale (f16 bits) and q [32] (padding q = 0). */
static uint16_t quantize_block(kvc_wq_format f, const float *w, int64_t n, int q[QK]) {
    float m = 0.0f;
    for (int64_t k = 0; k < n; k++)
        if (fabsf(w[k]) > fabsf(m)) m = w[k]; /* first one of largest |w| */
    const uint16_t d = kvc_f32_to_f16(f == KVC_WQ_Q8_0 ? fabsf(m) / 127.0f : m / -8.0f);
    const float df = kvc_f16_to_f32(d), lo = f == KVC_WQ_Q8_0 ? -127.0f : -8.0f, hi = f == KVC_WQ_Q8_0 ? 127.0f : 7.0f;
    for (int64_t k = 0; k < QK; k++) q[k] = k < n && df != 0.0f ? quant_round(w[k] / df, lo, hi) : 0;
    return d;
}

void kvci_wq_pack(kvc_wq_format f, int64_t N, int64_t K, const float *src, int64_t sn, int64_t sk, void *dst) {
    const int64_t KB = kvci_cdiv(K, QK);
    uint8_t *qi = dst;
    uint16_t *dw = (uint16_t *)(qi + kvci_wq_scales_offset(f, N, K));
    /* padding: q = 0 (Q4_0 stores u = q + 8), scale 0 */
    memset(qi, f == KVC_WQ_Q8_0 ? 0 : 0x88, (size_t)kvci_wq_scales_offset(f, N, K));
    memset(dw, 0, (size_t)(kvci_wq_packed_bytes(f, N, K) - kvci_wq_scales_offset(f, N, K)));
    /* rows in parallel: each writes only its own bytes and scales (a model's load is one pass of this) */
#pragma omp parallel for schedule(static) if (N * K >= (INT64_C(1) << 20))
    for (int64_t n = 0; n < N; n++) {
        float w[QK];
        int q[QK];
        for (int64_t b = 0; b < KB; b++) {
            const int64_t len = kvci_min64(QK, K - b * QK), g = n / 16, c = n % 16;
            for (int64_t k = 0; k < len; k++) w[k] = src[n * sn + (b * QK + k) * sk];
            dw[(g * KB + b) * 16 + c] = quantize_block(f, w, len, q);
            for (int64_t kk = 0; kk < (f == KVC_WQ_Q8_0 ? QK : QK / 2); kk++)
                qi[int_at(f, KB, g, b, c, kk)] =
                    f == KVC_WQ_Q8_0 ? (uint8_t)(int8_t)q[kk] : (uint8_t)((q[kk] + 8) | (q[kk + 16] + 8) << 4);
        }
    }
}

void kvci_wq_packed_row(kvc_wq_format f, const void *packed, int64_t N, int64_t K, int64_t n, float *out) {
    const int64_t KB = kvci_cdiv(K, QK), g = n / 16, c = n % 16;
    const uint8_t *qi = packed;
    const uint16_t *dw = (const uint16_t *)(qi + kvci_wq_scales_offset(f, N, K));
    for (int64_t k = 0; k < K; k++) {
        const int64_t b = k / QK, kk = k % QK;
        int q;
        if (f == KVC_WQ_Q8_0) {
            q = (int8_t)qi[int_at(f, KB, g, b, c, kk)];
        } else {
            const uint8_t u = qi[int_at(f, KB, g, b, c, kk % 16)];
            q = (kk < 16 ? u & 15 : u >> 4) - 8;
        }
        out[k] = kvc_f16_to_f32(dw[(g * KB + b) * 16 + c]) * (float)q;
    }
}

void kvci_wq_quantize_rows_portable(const kvc_wq_call *c, const float *A, int64_t lda, int64_t i0, int64_t i1,
                                    int8_t *qa, float *da, int32_t *asum) {
    for (int64_t i = i0; i < i1; i++) {
        int8_t *q = qa + i * c->Kp;
        memset(q, 0, (size_t)c->Kp);
        for (int64_t b = 0; b < c->KB; b++) {
            da[i * c->KB + b] = 0.0f, asum[i * c->KB + b] = 0;
            if (i >= c->M) continue;
            const float *a = A + i * lda + b * QK;
            const int64_t len = kvci_min64(QK, c->K - b * QK);
            float amax = 0.0f;
            bool finite = true;
            for (int64_t k = 0; k < len; k++) {
                finite = finite && isfinite(a[k]);
                amax = fmaxf(amax, fabsf(a[k]));
            }
            const float d = finite ? amax / 127.0f : NAN, ia = d != 0.0f ? 1.0f / d : 0.0f;
            int32_t s = 0;
            for (int64_t k = 0; k < len; k++) s += q[b * QK + k] = (int8_t)quant_round(a[k] * ia, -127.0f, 127.0f);
            da[i * c->KB + b] = d, asum[i * c->KB + b] = s;
        }
    }
}

void kvci_wq_quantize_rows(const kvc_wq_call *c, const float *A, int64_t lda, int64_t i0, int64_t i1, int8_t *qa,
                           float *da, int32_t *asum) {
    const kvc_wq_quantize_fn simd = kvci_wq_quantize_avx512();
    (simd ? simd : kvci_wq_quantize_rows_portable)(c, A, lda, i0, i1, qa, da, asum);
}
