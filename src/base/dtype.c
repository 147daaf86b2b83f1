/* Element types: the dtype table (dtype_traits.h), sizes, names, parsing;
 * tensor views; the finite check of f32 arrays. */
#include <math.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "kvcache/half.h"

/* Converters of the built-in plain dtypes, one element at a time (the
 * conversions themselves are half.c's and fp8.c's). */
#define KVC_DTYPE_CVT(NAME, T, LOAD, STORE)                                                                            \
    static void to_f32_##NAME(const void *base, int64_t i0, int64_t n, float *dst) {                                   \
        const T *s = (const T *)base + i0;                                                                             \
        for (int64_t i = 0; i < n; i++) dst[i] = LOAD(s[i]);                                                           \
    }                                                                                                                  \
    static void from_f32_##NAME(const float *src, int64_t n, void *base, int64_t i0) {                                 \
        T *d = (T *)base + i0;                                                                                         \
        for (int64_t i = 0; i < n; i++) d[i] = STORE(src[i]);                                                          \
    }

#define KVC_ID(x) (x)
KVC_DTYPE_CVT(f32, float, KVC_ID, KVC_ID)
KVC_DTYPE_CVT(f16, uint16_t, kvc_f16_to_f32, kvc_f32_to_f16)
KVC_DTYPE_CVT(bf16, uint16_t, kvc_bf16_to_f32, kvc_f32_to_bf16)
KVC_DTYPE_CVT(e4m3, uint8_t, kvc_fp8_e4m3_to_f32, kvc_f32_to_fp8_e4m3)
KVC_DTYPE_CVT(e5m2, uint8_t, kvc_fp8_e5m2_to_f32, kvc_f32_to_fp8_e5m2)

/* int8 and bool decode to the raw integer; int8 is quantised with a scale from outside (kvc_write_slots_quant). */
static void to_f32_i8(const void *base, int64_t i0, int64_t n, float *dst) {
    for (int64_t i = 0; i < n; i++) dst[i] = (float)((const int8_t *)base)[i0 + i];
}
static void to_f32_bool(const void *base, int64_t i0, int64_t n, float *dst) {
    for (int64_t i = 0; i < n; i++) dst[i] = (float)((const uint8_t *)base)[i0 + i];
}

static const uint8_t POISON_F32[] = {0x00, 0x00, 0xc0, 0x7f}; /* quiet NaN */
static const uint8_t POISON_F16[] = {0x00, 0x7e};
static const uint8_t POISON_BF16[] = {0xc0, 0x7f};
static const uint8_t POISON_E4M3[] = {0x7f}; /* the e4m3fn NaN */
static const uint8_t POISON_E5M2[] = {0x7e};
static const uint8_t POISON_I8[] = {0x80}; /* -128: symmetric int8 quantisation never writes it */
static const uint8_t POISON_INT[] = {0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5};

#define KVC_DTYPE_REGISTERED_MAX 8

/* The built-in entries, then the registered ones (n_registered of them).
 * qmax, the largest magnitude symmetric scales map to: 127 for int8 (so
 * that -amax maps to -127 too), the largest finite value for fp8. */
static kvc_dtype_traits table[KVC_DTYPE_COUNT + KVC_DTYPE_REGISTERED_MAX] = {
    [KVC_DTYPE_F32] = {.name = "f32",
                       .bits = 32,
                       .block = 1,
                       .block_bytes = 4,
                       .kv = true,
                       .compute = true,
                       .simd = KVC_SIMD_F32,
                       .poison = POISON_F32,
                       .to_f32 = to_f32_f32,
                       .from_f32 = from_f32_f32},
    [KVC_DTYPE_F16] = {.name = "f16",
                       .bits = 16,
                       .block = 1,
                       .block_bytes = 2,
                       .kv = true,
                       .compute = true,
                       .simd = KVC_SIMD_F16,
                       .poison = POISON_F16,
                       .to_f32 = to_f32_f16,
                       .from_f32 = from_f32_f16},
    [KVC_DTYPE_BF16] = {.name = "bf16",
                        .bits = 16,
                        .block = 1,
                        .block_bytes = 2,
                        .kv = true,
                        .compute = true,
                        .simd = KVC_SIMD_BF16,
                        .poison = POISON_BF16,
                        .to_f32 = to_f32_bf16,
                        .from_f32 = from_f32_bf16},
    [KVC_DTYPE_I8] = {.name = "i8",
                      .bits = 8,
                      .block = 1,
                      .block_bytes = 1,
                      .scales = KVC_SCALES_PER_TOKEN,
                      .scale_required = true,
                      .offsets = true,
                      .kv = true,
                      .qmax = 127.0f,
                      .simd = KVC_SIMD_I8,
                      .poison = POISON_I8,
                      .to_f32 = to_f32_i8},
    [KVC_DTYPE_I32] = {.name = "i32", .bits = 32, .block = 1, .block_bytes = 4, .poison = POISON_INT},
    [KVC_DTYPE_I64] = {.name = "i64", .bits = 64, .block = 1, .block_bytes = 8, .poison = POISON_INT},
    [KVC_DTYPE_BOOL] =
        {.name = "bool", .bits = 8, .block = 1, .block_bytes = 1, .poison = POISON_INT, .to_f32 = to_f32_bool},
    [KVC_DTYPE_F8E4M3] = {.name = "fp8_e4m3",
                          .bits = 8,
                          .block = 1,
                          .block_bytes = 1,
                          .scales = KVC_SCALES_PER_TOKEN,
                          .kv = true,
                          .qmax = 448.0f,
                          .simd = KVC_SIMD_E4M3,
                          .poison = POISON_E4M3,
                          .to_f32 = to_f32_e4m3,
                          .from_f32 = from_f32_e4m3},
    [KVC_DTYPE_F8E5M2] = {.name = "fp8_e5m2",
                          .bits = 8,
                          .block = 1,
                          .block_bytes = 1,
                          .scales = KVC_SCALES_PER_TOKEN,
                          .kv = true,
                          .qmax = 57344.0f,
                          .simd = KVC_SIMD_E5M2,
                          .poison = POISON_E5M2,
                          .to_f32 = to_f32_e5m2,
                          .from_f32 = from_f32_e5m2},
};
static int32_t n_registered;

const kvc_dtype_traits *kvci_dtype_traits(kvc_dtype dt) {
    return (unsigned)dt < (unsigned)(KVC_DTYPE_COUNT + n_registered) ? &table[dt] : NULL;
}

/* The dtype of a name or alias: vLLM's --kv-cache-dtype fp8 means e4m3; int8 is i8. */
static bool dtype_lookup(const char *name, kvc_dtype *out) {
    static const struct {
        const char *alias;
        kvc_dtype dtype;
    } aliases[] = {{"fp8", KVC_DTYPE_F8E4M3}, {"int8", KVC_DTYPE_I8}};
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcmp(name, aliases[i].alias) == 0) {
            *out = aliases[i].dtype;
            return true;
        }
    }
    for (int d = 0; d < KVC_DTYPE_COUNT + n_registered; d++) {
        if (strcmp(name, table[d].name) == 0) {
            *out = (kvc_dtype)d;
            return true;
        }
    }
    return false;
}

/* The fields of a dtype to register, each checked alone so that a refusal
 * names the field: what the generic paths need (dtype_traits.h). */
static kvc_status check_traits(const kvc_dtype_traits *t) {
    const char *n = t->name;
    if (t->block < 1) return kvci_fail(KVC_EINVAL, "dtype_register: %s: block %d must be >= 1", n, (int)t->block);
    if (t->block_bytes < 1 || t->block_bytes > KVC_DTYPE_MAX_BLOCK_BYTES)
        return kvci_fail(KVC_EINVAL, "dtype_register: %s: block_bytes %d must be in [1, %d]", n, (int)t->block_bytes,
                         KVC_DTYPE_MAX_BLOCK_BYTES);
    if (t->bits < 1 || (int64_t)t->bits * t->block > 8 * (int64_t)t->block_bytes)
        return kvci_fail(KVC_EINVAL,
                         "dtype_register: %s: bits %d must be >= 1, and block %d codes of them fit in "
                         "block_bytes %d",
                         n, (int)t->bits, (int)t->block, (int)t->block_bytes);
    if (t->scales != KVC_SCALES_NONE && t->scales != KVC_SCALES_IN_BLOCK)
        return kvci_fail(KVC_EINVAL,
                         "dtype_register: %s: scales %d must be NONE or IN_BLOCK (scales beside the "
                         "data are the built-in int8 / fp8 writers')",
                         n, (int)t->scales);
    if (t->scale_required || t->offsets)
        return kvci_fail(KVC_EINVAL, "dtype_register: %s: scale_required and offsets are for scales beside the data",
                         n);
    if (t->compute)
        return kvci_fail(KVC_EINVAL,
                         "dtype_register: %s: compute must be false (outputs are stored by the built-in "
                         "float dtypes only, ops/elem.h)",
                         n);
    if (t->simd != KVC_SIMD_GENERIC)
        return kvci_fail(
            KVC_EINVAL, "dtype_register: %s: simd must be KVC_SIMD_GENERIC (the vector tables have no slot for it)", n);
    if (t->poison == NULL) return kvci_fail(KVC_EINVAL, "dtype_register: %s: poison must not be NULL", n);
    if (t->to_f32 == NULL) return kvci_fail(KVC_EINVAL, "dtype_register: %s: to_f32 must not be NULL", n);
    if (t->kv && t->from_f32 == NULL)
        return kvci_fail(KVC_EINVAL, "dtype_register: %s: from_f32 must not be NULL for a K/V dtype (kv)", n);
    return KVC_OK;
}

kvc_status kvci_dtype_register(const kvc_dtype_traits *t, kvc_dtype *out) {
    if (t == NULL || out == NULL || t->name == NULL)
        return kvci_fail(KVC_EINVAL, "dtype_register: traits, their name and out must not be NULL");
    kvc_dtype taken;
    if (dtype_lookup(t->name, &taken))
        return kvci_fail(KVC_EINVAL, "dtype_register: the name \"%s\" is taken", t->name);
    const kvc_status st = check_traits(t);
    if (st != KVC_OK) return st;
    if (n_registered == KVC_DTYPE_REGISTERED_MAX)
        return kvci_fail(KVC_ENOMEM, "dtype_register: %s: the table holds %d registered dtypes already", t->name,
                         KVC_DTYPE_REGISTERED_MAX);
    *out = (kvc_dtype)(KVC_DTYPE_COUNT + n_registered);
    table[*out] = *t;
    n_registered++;
    return KVC_OK;
}

bool kvci_dtype_bytes(kvc_dtype dt, int64_t n, int64_t *out) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dt);
    if (t == NULL || n < 0 || n % t->block != 0) return false;
    return kvci_mul64(n / t->block, t->block_bytes, out);
}

bool kvci_dtype_is_kv(kvc_dtype dt) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dt);
    return t != NULL && t->kv;
}

bool kvci_dtype_is_compute(kvc_dtype dt) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dt);
    return t != NULL && t->compute;
}

bool kvci_dtype_scales_beside(kvc_dtype dt) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dt);
    return t != NULL && t->scales >= KVC_SCALES_PER_TOKEN;
}

bool kvci_dtype_is_blocked(kvc_dtype dt) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dt);
    return t != NULL && t->block > 1;
}

size_t kvc_dtype_size(kvc_dtype dtype) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dtype);
    return t != NULL && t->block == 1 ? (size_t)t->block_bytes : 0;
}

const char *kvc_dtype_name(kvc_dtype dtype) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dtype);
    return t != NULL ? t->name : "?";
}

kvc_status kvc_dtype_parse(const char *name, kvc_dtype *out) {
    if (name == NULL || out == NULL) return kvci_fail(KVC_EINVAL, "kvc_dtype_parse: name and out must not be NULL");
    if (dtype_lookup(name, out)) return KVC_OK;
    return kvci_fail(KVC_EINVAL,
                     "dtype \"%s\" is unknown (expected f32, f16, bf16, i8 (or int8), i32, i64, bool, fp8_e4m3 (or "
                     "fp8) or fp8_e5m2)",
                     name);
}

int64_t kvc_tensor_numel(const kvc_tensor *t) {
    if (t == NULL || t->ndim < 0 || t->ndim > KVC_MAX_DIMS) return 0;
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++)
        if (t->shape[i] < 0) return -1;
    for (int32_t i = 0; i < t->ndim; i++)
        if (!kvci_mul64(n, t->shape[i], &n)) return -1;
    return n;
}

int64_t kvci_first_nonfinite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}
