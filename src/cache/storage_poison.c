/* Debug option of cache storage: a block taken for new data is filled with a
 * value no computation produces (NaN for floating-point caches, a sentinel
 * for integer ones), so that a read of a slot not written in the block's
 * current life shows up in the results. */
#include <string.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "cache/manager_type.h"

void kvci_storage_poison_block(const kvc_cache_entry *e, int32_t id) {
    const kvc_tensor *t = &e->tensor;
    if (t->data == NULL || t->ndim < 1 || id >= t->shape[0]) return;
    const kvc_dtype_traits *dt = kvci_dtype_traits(t->dtype);
    if (dt == NULL) return;
    /* the dtype table's poison, one of its storage blocks at a time */
    const int64_t per_block = kvc_tensor_numel(t) / t->shape[0] / dt->block;
    const size_t item = (size_t)dt->block_bytes;
    uint8_t *dst = (uint8_t *)t->data + (size_t)id * (size_t)per_block * item;
    for (int64_t i = 0; i < per_block; i++) memcpy(dst + (size_t)i * item, dt->poison, item);
}
