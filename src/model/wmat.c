/* kvc_wmat: the GEMM operands of a model in their dtype (model_internal.h),
 * filled at load and read by kvci_linear through the GEMM of their dtype. */
#include <string.h>

#include "base/internal.h"
#include "model/gemm.h"
#include "model/gemm_bf16.h"
#include "model/model_internal.h"

int64_t kvci_wmat_matrix_bytes(const kvc_wmat *w) {
    const int64_t b = w->dtype == KVC_WMAT_BF16 ? kvci_bf16_packed_elems(w->rows, w->cols) * 2 : w->rows * w->cols * 4;
    return (b + 63) / 64 * 64;
}

kvc_wmat kvci_wmat_at(const kvc_wmat *w, int64_t e) {
    kvc_wmat one = *w;
    one.count = 1;
    one.data = (char *)w->data + e * kvci_wmat_matrix_bytes(w);
    return one;
}

void kvci_wmat_fill(kvc_wmat *w, const float *src, bool transposed) {
    const int64_t R = w->rows, C = w->cols, sr = transposed ? 1 : C, sc = transposed ? R : 1;
    for (int64_t e = 0; e < w->count; e++) {
        const kvc_wmat one = kvci_wmat_at(w, e);
        const float *s = src + e * R * C;
        if (w->dtype == KVC_WMAT_BF16) {
            kvci_bf16_pack(R, C, s, sr, sc, one.data);
        } else {
            float *d = one.data;
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++) d[r * C + c] = s[r * sr + c * sc];
        }
    }
}

void kvci_wmat_row(const kvc_wmat *w, int64_t r, float *out) {
    if (w->dtype == KVC_WMAT_BF16)
        kvci_bf16_packed_row(w->data, w->rows, w->cols, r, out);
    else
        memcpy(out, (const float *)w->data + r * w->cols, (size_t)w->cols * sizeof(float));
}

const char *kvci_wmat_dtype_name(kvc_wmat_dtype d) { return d == KVC_WMAT_BF16 ? "bf16" : "f32"; }

kvc_status kvci_linear(const float *x, int64_t T, const kvc_wmat *w, const float *b, float *y) {
    const int64_t in = w->cols, out = w->rows;
    if (w->dtype == KVC_WMAT_BF16) return kvci_gemm_bf16(T, out, in, x, in, w->data, b, y, out);
    kvci_gemm_nt(T, out, in, x, in, w->data, in, b, y, out);
    return KVC_OK;
}
