/* Debug option of cache storage: a block taken for new data is filled with a
 * value no computation produces (NaN for floating-point caches, a sentinel
 * for integer ones), so that a read of a slot not written in the block's
 * current life shows up in the results. */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h"

/* The poison element of a dtype, as bytes. */
static size_t poison_bytes(kvc_dtype dtype, uint8_t out[8]) {
    switch (dtype) {
    case KVC_DTYPE_F32: memcpy(out, (const uint8_t[]){0x00, 0x00, 0xc0, 0x7f}, 4); return 4; /* quiet NaN */
    case KVC_DTYPE_F16: memcpy(out, (const uint8_t[]){0x00, 0x7e}, 2); return 2;
    case KVC_DTYPE_BF16: memcpy(out, (const uint8_t[]){0xc0, 0x7f}, 2); return 2;
    case KVC_DTYPE_F8E4M3: out[0] = 0x7f; return 1; /* the e4m3fn NaN */
    case KVC_DTYPE_F8E5M2: out[0] = 0x7e; return 1;
    case KVC_DTYPE_I8: out[0] = 0x80; return 1; /* -128: symmetric int8 quantisation never writes it */
    default: memset(out, 0xa5, 8); return kvc_dtype_size(dtype);
    }
}

void kvci_storage_poison_block(const kvc_cache_entry *e, int32_t id) {
    const kvc_tensor *t = &e->tensor;
    if (t->data == NULL || t->ndim < 1 || id >= t->shape[0]) return;
    int64_t per_block = kvc_tensor_numel(t) / t->shape[0];
    uint8_t pattern[8];
    size_t item = poison_bytes(t->dtype, pattern);
    uint8_t *dst = (uint8_t *)t->data + (size_t)id * (size_t)per_block * item;
    for (int64_t i = 0; i < per_block; i++) memcpy(dst + (size_t)i * item, pattern, item);
}
