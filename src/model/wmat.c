/* kvc_wmat: the GEMM operands of a model in their dtype (model_internal.h),
 * filled at load and read by kvci_linear through the GEMM of their dtype. One
 * table entry per dtype; a quantized one names its kvc_wq_format (gemm_quant.h). */
#include <string.h>

#include "base/internal.h"
#include "model/gemm.h"
#include "model/gemm_bf16.h"
#include "model/gemm_quant.h"
#include "model/model_internal.h"

typedef struct wmat_kind {
    const char *name;
    bool quantized;
    kvc_wq_format wq; /* quantized only */
    bool stored_only; /* kept as a checkpoint stores it, never asked for by name (kvci_wmat_dtype_parse) */
} wmat_kind;

static const wmat_kind KINDS[KVC_WMAT_COUNT] = {
    [KVC_WMAT_F32] = {"f32", false, KVC_WQ_Q8_0, false},  [KVC_WMAT_BF16] = {"bf16", false, KVC_WQ_Q8_0, false},
    [KVC_WMAT_Q8_0] = {"q8_0", true, KVC_WQ_Q8_0, false}, [KVC_WMAT_Q4_0] = {"q4_0", true, KVC_WQ_Q4_0, false},
    [KVC_WMAT_F16] = {"f16", false, KVC_WQ_Q8_0, true},
};

/* 16-bit weights in the packed pair layout of gemm_bf16.h. */
static bool packed16(kvc_wmat_dtype d) { return d == KVC_WMAT_BF16 || d == KVC_WMAT_F16; }

int64_t kvci_wmat_matrix_bytes(const kvc_wmat *w) {
    const wmat_kind *k = &KINDS[w->dtype];
    int64_t b = w->rows * w->cols * 4;
    if (k->quantized) b = kvci_wq_packed_bytes(k->wq, w->rows, w->cols);
    if (packed16(w->dtype)) b = kvci_bf16_packed_elems(w->rows, w->cols) * 2;
    return (b + 63) / 64 * 64;
}

bool kvci_wmat_quant_parts(const kvc_wmat *w, int64_t *int_bytes, int64_t *n_scales) {
    const wmat_kind *k = &KINDS[w->dtype];
    *int_bytes = kvci_wq_scales_offset(k->wq, w->rows, w->cols);
    *n_scales = kvci_cdiv(w->rows, 16) * kvci_cdiv(w->cols, 32) * 16;
    return k->quantized;
}

kvc_wmat kvci_wmat_at(const kvc_wmat *w, int64_t e) {
    kvc_wmat one = *w;
    one.count = 1;
    one.data = (char *)w->data + e * kvci_wmat_matrix_bytes(w);
    return one;
}

void kvci_wmat_fill(kvc_wmat *w, const float *src, bool transposed) {
    const int64_t R = w->rows, C = w->cols, sr = transposed ? 1 : C, sc = transposed ? R : 1;
    const wmat_kind *k = &KINDS[w->dtype];
    for (int64_t e = 0; e < w->count; e++) {
        const kvc_wmat one = kvci_wmat_at(w, e);
        const float *s = src + e * R * C;
        if (k->quantized) {
            kvci_wq_pack(k->wq, R, C, s, sr, sc, one.data);
        } else if (w->dtype == KVC_WMAT_BF16) {
            kvci_bf16_pack(R, C, s, sr, sc, one.data);
        } else if (w->dtype == KVC_WMAT_F16) {
            kvci_f16_pack(R, C, s, sr, sc, one.data);
        } else {
            float *d = one.data;
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++) d[r * C + c] = s[r * sr + c * sc];
        }
    }
}

void kvci_wmat_row(const kvc_wmat *w, int64_t r, float *out) {
    const wmat_kind *k = &KINDS[w->dtype];
    if (k->quantized)
        kvci_wq_packed_row(k->wq, w->data, w->rows, w->cols, r, out);
    else if (w->dtype == KVC_WMAT_BF16)
        kvci_bf16_packed_row(w->data, w->rows, w->cols, r, out);
    else if (w->dtype == KVC_WMAT_F16)
        kvci_f16_packed_row(w->data, w->rows, w->cols, r, out);
    else
        memcpy(out, (const float *)w->data + r * w->cols, (size_t)w->cols * sizeof(float));
}

const char *kvci_wmat_dtype_name(kvc_wmat_dtype d) { return d == KVC_WMAT_CHECKPOINT ? "checkpoint" : KINDS[d].name; }

kvc_status kvci_wmat_dtype_parse(const char *name, kvc_wmat_dtype *out) {
    if (name && strcmp(name, "checkpoint") == 0) {
        *out = KVC_WMAT_CHECKPOINT;
        return KVC_OK;
    }
    for (int d = 0; d < KVC_WMAT_COUNT; d++)
        if (name && strcmp(name, KINDS[d].name) == 0 && !KINDS[d].stored_only) {
            *out = (kvc_wmat_dtype)d;
            return KVC_OK;
        }
    if (name && strcmp(name, KINDS[KVC_WMAT_F16].name) == 0)
        return kvci_fail(KVC_EINVAL, "weight dtype \"f16\" is kept from an f16 checkpoint (--weights checkpoint), "
                                     "never rounded to from another dtype: ask for one of checkpoint, f32, bf16, "
                                     "q8_0, q4_0");
    return kvci_fail(KVC_EINVAL, "weight dtype \"%s\" is not one of checkpoint, f32, bf16, q8_0, q4_0",
                     name ? name : "(null)");
}

kvc_wmat_dtype kvci_wmat_dtype_for(kvc_wmat_dtype want, kvc_wmat_dtype stored, const char *name) {
    if (want == KVC_WMAT_CHECKPOINT) return stored;
    const bool head = strcmp(name, "model.embed_tokens.weight") == 0 || strcmp(name, "lm_head.weight") == 0;
    return KINDS[want].quantized && head ? KVC_WMAT_Q8_0 : want;
}

const char *kvci_wmat_kernel_name(const kvc_wmat *w) {
    const wmat_kind *k = &KINDS[w->dtype];
    if (k->quantized) return kvci_wq_active(k->wq)->name;
    if (w->dtype == KVC_WMAT_F16) return kvci_gemm_f16_active()->name;
    if (w->dtype == KVC_WMAT_BF16)
        return (w->act_bf16 ? kvci_gemm_bf16_rounded_active() : kvci_gemm_bf16_active())->name;
    return kvci_gemm_active()->name;
}

kvc_status kvci_linear(const float *x, int64_t T, const kvc_wmat *w, const float *b, float *y) {
    const int64_t in = w->cols, out = w->rows;
    const wmat_kind *k = &KINDS[w->dtype];
    if (k->quantized) return kvci_gemm_wq(k->wq, T, out, in, x, in, w->data, b, y, out);
    if (w->dtype == KVC_WMAT_BF16 && w->act_bf16) return kvci_gemm_bf16_rounded(T, out, in, x, in, w->data, b, y, out);
    if (w->dtype == KVC_WMAT_BF16) return kvci_gemm_bf16(T, out, in, x, in, w->data, b, y, out);
    if (w->dtype == KVC_WMAT_F16) return kvci_gemm_f16(T, out, in, x, in, w->data, b, y, out);
    kvci_gemm_nt(T, out, in, x, in, w->data, in, b, y, out);
    return KVC_OK;
}

kvc_status kvci_linear_shared(const float *x, int64_t T, int n, const kvc_wmat *const *w, const float *const *b,
                              float *const *y) {
    bool one_call = n <= KVC_WQ_MAX_PARTS && KINDS[w[0]->dtype].quantized;
    for (int i = 1; i < n; i++) one_call = one_call && w[i]->dtype == w[0]->dtype && w[i]->cols == w[0]->cols;
    if (!one_call) {
        for (int i = 0; i < n; i++) KVC_TRY(kvci_linear(x, T, w[i], b[i], y[i]));
        return KVC_OK;
    }
    kvc_wq_part parts[KVC_WQ_MAX_PARTS];
    for (int i = 0; i < n; i++)
        parts[i] = (kvc_wq_part){.N = w[i]->rows, .W = w[i]->data, .bias = b[i], .C = y[i], .ldc = w[i]->rows};
    return kvci_gemm_wq_parts(KINDS[w[0]->dtype].wq, T, w[0]->cols, x, w[0]->cols, n, parts);
}
