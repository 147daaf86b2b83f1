/* Cache storage (KM 7): one aligned host tensor per needs_block entry. */
#include <string.h>

#include "base/internal.h"
#include "kvcache/cache.h"

struct kvc_cache_storage {
    int64_t n_tensors;
    void **tensors; /* [n_tensors] */
    int64_t bytes;
};

/* Shape of an entry's tensor for n blocks. */
static kvc_tensor entry_tensor(const kvc_cache_entry *e, int64_t n) {
    kvc_tensor t = {.dtype = e->dtype};
    t.shape[t.ndim++] = n;
    if (e->attn_type == KVC_ATTN_MAMBA) {
        for (int32_t i = 0; i < e->n_shape; i++) t.shape[t.ndim++] = e->shape[i];
        return t;
    }
    int64_t s = e->block_size / e->compress_ratio;
    bool head_major = e->layout == KVC_BLOCK_BNNBSD;
    t.shape[t.ndim++] = head_major ? e->num_head : s;
    t.shape[t.ndim++] = head_major ? s : e->num_head;
    /* n, s, heads and up to KVC_MAX_DIMS - 3 dims; more dims are flattened into the last one. */
    for (int32_t i = 0; i < e->n_dims; i++) {
        if (t.ndim < KVC_MAX_DIMS)
            t.shape[t.ndim++] = e->dim[i];
        else
            t.shape[KVC_MAX_DIMS - 1] *= e->dim[i];
    }
    return t;
}

static kvc_status count_entries(const kvc_model_cache_info *ci, const kvc_block_plan *plan, int64_t *n_out) {
    int64_t n = 0;
    for (int32_t l = 0; l < ci->n_layer_infos; l++) {
        const kvc_layer_cache_info *layer = &ci->layer_infos[l];
        for (int32_t c = 0; c < layer->n_caches; c++) {
            const kvc_cache_entry *e = &layer->caches[c];
            if (!e->needs_block) continue;
            if (e->tensor_setter == NULL)
                return kvci_fail(KVC_EINVAL, "layer %d, cache %s: no tensor_setter to receive the tensor",
                                layer->layer_idx, e->name);
            int64_t block_num = 0;
            kvc_status st = kvc_block_plan_block_num(plan, kvc_cache_entry_group_key(e), &block_num);
            if (st != KVC_OK) return kvci_fail(st, "layer %d, cache %s: %s", layer->layer_idx, e->name, kvc_last_error());
            n++;
        }
    }
    *n_out = n;
    return KVC_OK;
}

kvc_status kvc_cache_storage_allocate(kvc_model_cache_info *ci, const kvc_block_plan *plan, size_t alignment,
                                      kvc_cache_storage **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_cache_storage_allocate: out must not be NULL");
    *out = NULL;
    if (plan == NULL) return kvci_fail(KVC_EINVAL, "kvc_cache_storage_allocate: plan must not be NULL");
    if (alignment != KVC_ALIGN_DEFAULT && alignment != KVC_ALIGN_2MIB)
        return kvci_fail(KVC_EINVAL, "alignment %zu must be KVC_ALIGN_DEFAULT (64) or KVC_ALIGN_2MIB", alignment);
    kvc_status st = kvc_validate_cache_info(ci, -1);
    int64_t n = 0;
    if (st == KVC_OK) st = count_entries(ci, plan, &n);
    if (st != KVC_OK) return st;
    kvc_cache_storage *s = kvci_calloc(1, sizeof *s);
    if (s != NULL) s->tensors = kvci_calloc((size_t)kvci_max64(n, 1), sizeof *s->tensors);
    if (s == NULL || s->tensors == NULL) {
        kvci_free(s);
        return kvci_fail(KVC_ENOMEM, "cannot allocate the storage record of %lld tensors", (long long)n);
    }
    /* Allocate everything first, hand tensors out only when all succeeded. */
    for (int32_t l = 0; l < ci->n_layer_infos && st == KVC_OK; l++) {
        kvc_layer_cache_info *layer = &ci->layer_infos[l];
        for (int32_t c = 0; c < layer->n_caches && st == KVC_OK; c++) {
            kvc_cache_entry *e = &layer->caches[c];
            if (!e->needs_block) continue;
            int64_t block_num = 0;
            kvc_block_plan_block_num(plan, kvc_cache_entry_group_key(e), &block_num);
            kvc_tensor t = entry_tensor(e, block_num);
            int64_t bytes = 0;
            if (!kvci_mul64(kvc_tensor_numel(&t), (int64_t)kvc_dtype_size(e->dtype), &bytes)) {
                st = kvci_fail(KVC_ENOMEM, "layer %d, cache %s: tensor size overflows", layer->layer_idx, e->name);
                break;
            }
            st = kvc_aligned_alloc(alignment, (size_t)bytes, &t.data);
            if (st != KVC_OK) {
                st = kvci_fail(st, "layer %d, cache %s: %s", layer->layer_idx, e->name, kvc_last_error());
                break;
            }
            memset(t.data, 0, (size_t)(bytes / block_num)); /* block 0, the null block */
            s->tensors[s->n_tensors++] = t.data;
            s->bytes += bytes;
            e->tensor = t;
        }
    }
    if (st != KVC_OK) {
        for (int32_t l = 0; l < ci->n_layer_infos; l++)
            for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++)
                if (ci->layer_infos[l].caches[c].needs_block) ci->layer_infos[l].caches[c].tensor = (kvc_tensor){0};
        kvc_cache_storage_destroy(s);
        return st;
    }
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            kvc_cache_entry *e = &ci->layer_infos[l].caches[c];
            if (e->needs_block) e->tensor_setter(e->setter_user, &e->tensor);
        }
    *out = s;
    return KVC_OK;
}

int64_t kvc_cache_storage_bytes(const kvc_cache_storage *s) { return s != NULL ? s->bytes : 0; }

void kvc_cache_storage_destroy(kvc_cache_storage *s) {
    if (s == NULL) return;
    for (int64_t i = 0; i < s->n_tensors; i++) kvc_aligned_free(s->tensors[i]);
    kvci_free(s->tensors);
    kvci_free(s);
}
