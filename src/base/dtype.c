/* Element types: sizes, names, parsing; tensor views; the finite check of f32 arrays. */
#include <math.h>
#include <string.h>

#include "base/internal.h"

static const struct {
    const char *name;
    size_t size;
} dtype_table[KVC_DTYPE_COUNT] = {
    [KVC_DTYPE_F32] = {"f32", 4},   [KVC_DTYPE_F16] = {"f16", 2},         [KVC_DTYPE_BF16] = {"bf16", 2},
    [KVC_DTYPE_I8] = {"i8", 1},     [KVC_DTYPE_I32] = {"i32", 4},         [KVC_DTYPE_I64] = {"i64", 8},
    [KVC_DTYPE_BOOL] = {"bool", 1}, [KVC_DTYPE_F8E4M3] = {"fp8_e4m3", 1}, [KVC_DTYPE_F8E5M2] = {"fp8_e5m2", 1},
};

static bool dtype_known(kvc_dtype dtype) { return (unsigned)dtype < KVC_DTYPE_COUNT; }

size_t kvc_dtype_size(kvc_dtype dtype) { return dtype_known(dtype) ? dtype_table[dtype].size : 0; }

const char *kvc_dtype_name(kvc_dtype dtype) { return dtype_known(dtype) ? dtype_table[dtype].name : "?"; }

kvc_status kvc_dtype_parse(const char *name, kvc_dtype *out) {
    if (name == NULL || out == NULL) return kvci_fail(KVC_EINVAL, "kvc_dtype_parse: name and out must not be NULL");
    /* Aliases users type: vLLM's --kv-cache-dtype fp8 means e4m3; int8 is i8. */
    static const struct {
        const char *alias;
        kvc_dtype dtype;
    } aliases[] = {{"fp8", KVC_DTYPE_F8E4M3}, {"int8", KVC_DTYPE_I8}};
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcmp(name, aliases[i].alias) == 0) {
            *out = aliases[i].dtype;
            return KVC_OK;
        }
    }
    for (int d = 0; d < KVC_DTYPE_COUNT; d++) {
        if (strcmp(name, dtype_table[d].name) == 0) {
            *out = (kvc_dtype)d;
            return KVC_OK;
        }
    }
    return kvci_fail(KVC_EINVAL,
                     "dtype \"%s\" is unknown (expected f32, f16, bf16, i8 (or int8), i32, i64, bool, fp8_e4m3 (or "
                     "fp8) or fp8_e5m2)",
                     name);
}

int64_t kvc_tensor_numel(const kvc_tensor *t) {
    if (t == NULL || t->ndim < 0 || t->ndim > KVC_MAX_DIMS) return 0;
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

int64_t kvci_first_nonfinite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}
