/* Cache descriptions: defaults, derived values, validation (KM 2.5) and
 * grouping by manager key (KM 4.6). */
#include <stdio.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "cache/manager_type.h"

kvc_cache_entry kvc_cache_entry_default(void) {
    return (kvc_cache_entry){
        .attn_type = KVC_ATTN_FULL,
        .dtype = KVC_DTYPE_BF16,
        .needs_block = true,
        .allocator = KVC_ALLOC_HBM,
        .compress_ratio = 1,
        .layout = KVC_BLOCK_BNBSND,
    };
}

int64_t kvc_cache_entry_dim_numel(const kvc_cache_entry *e) {
    if (e == NULL) return 0;
    const int64_t *dims = e->is_state ? e->shape : e->dim;
    const int32_t nd = e->is_state ? e->n_shape : e->n_dims;
    if (nd < 0 || nd > KVC_MAX_DIMS) return -1;
    int64_t n = 1;
    for (int32_t i = 0; i < nd; i++)
        if (dims[i] < 0) return -1;
    for (int32_t i = 0; i < nd; i++)
        if (!kvci_mul64(n, dims[i], &n)) return -1;
    return n;
}

static bool terminated(const char *s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

const char *kvc_cache_entry_group_key(const kvc_cache_entry *e) {
    if (e == NULL || !terminated(e->manager_key, sizeof e->manager_key)) return "";
    return e->manager_key[0] != '\0' ? e->manager_key : kvc_attn_type_name((kvc_attn_type)e->attn_type);
}

bool kvci_entry_row_bytes(const kvc_cache_entry *e, int64_t *out) {
    const kvc_dtype_traits *t = kvci_dtype_traits(e->dtype);
    const int64_t *dims = e->is_state ? e->shape : e->dim;
    const int32_t n = e->is_state ? e->n_shape : e->n_dims;
    if (t == NULL || (t->block > 1 && (n < 1 || dims[n - 1] % t->block != 0))) return false;
    int64_t outer = 1, inner = 0; /* the innermost dim's bytes times the other dims */
    for (int32_t i = 0; i + 1 < n; i++)
        if (!kvci_mul64(outer, dims[i], &outer)) return false;
    if (!kvci_dtype_bytes(e->dtype, n > 0 ? dims[n - 1] : 1, &inner)) return false;
    return kvci_mul64(outer, inner, out);
}

/* One block of the entry stays below 2^40 bytes, so that plans of up to
 * INT32_MAX blocks cannot overflow int64 (its row bytes exist). */
static bool entry_block_bytes_fit(const kvc_cache_entry *e) {
    const int64_t limit = (int64_t)1 << 40;
    int64_t bytes = 0;
    if (!kvci_entry_row_bytes(e, &bytes) || bytes > limit) return false;
    if (!e->is_state && (!kvci_mul64(bytes, e->num_head, &bytes) || bytes > limit)) return false;
    return kvci_mul64(bytes, e->block_size, &bytes) && bytes <= limit;
}

/* The dtype of an entry through the table: known, and a dtype stored in blocks of channels with its
 * innermost dim whole blocks and its channels in order (no keys in lanes). */
static kvc_status validate_entry_dtype(const kvc_cache_entry *e, int32_t layer_idx) {
    const kvc_dtype_traits *t = kvci_dtype_traits(e->dtype);
    if (t == NULL)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: dtype %d is unknown", layer_idx, e->name, (int)e->dtype);
    if (t->block == 1) return KVC_OK;
    const int64_t *dims = e->is_state ? e->shape : e->dim;
    const int32_t n = e->is_state ? e->n_shape : e->n_dims;
    const int64_t inner = n > 0 ? dims[n - 1] : 0;
    if (inner % t->block != 0 || inner < 1)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: dim %lld is not a multiple of the %d-element blocks of dtype %s (a "
                         "block runs along the innermost dim)",
                         layer_idx, e->name, (long long)inner, (int)t->block, t->name);
    if (e->layout == KVC_BLOCK_BNNDBS)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: dtype %s is stored in blocks of %d channels: cache_layout BnNDBs "
                         "(keys in lanes) cannot hold it (BnBsND or BnNBsD)",
                         layer_idx, e->name, t->name, (int)t->block);
    return KVC_OK;
}

/* The checks every needs_block entry goes through, in the order of KM 2.5, then
 * the proposed up-front ones. */
static kvc_status validate_entry(const kvc_cache_entry *e, int32_t layer_idx) {
    if (e->block_size <= 0)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: block_size %lld must be positive", layer_idx, e->name,
                         (long long)e->block_size);
    const kvc_manager_type *type = kvci_manager_type_find((kvc_attn_type)e->attn_type);
    if (type == NULL)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: attn_type %d is unknown (expected FullAttention, "
                         "SlidingWindow, Mamba or ChunkedLocal)",
                         layer_idx, e->name, e->attn_type);
    if (e->layout != KVC_BLOCK_BNBSND && e->layout != KVC_BLOCK_BNNBSD && e->layout != KVC_BLOCK_BNNDBS)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: cache_layout %d is unknown (expected BnBsND, BnNBsD or "
                         "BnNDBs)",
                         layer_idx, e->name, e->layout);
    if (e->layout == KVC_BLOCK_BNNDBS && (e->n_dims != 1 || e->attn_type == KVC_ATTN_MAMBA))
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: cache_layout BnNDBs (keys in lanes) takes attention entries of "
                         "one dim, not %d dims (attn_type %d)",
                         layer_idx, e->name, (int)e->n_dims, e->attn_type);
    if (e->is_state && e->attn_type != KVC_ATTN_MAMBA)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: a state entry must have attn_type Mamba, not %s", layer_idx,
                         e->name, type->name);
    kvc_status st = type->validate_entry(e, layer_idx);
    if (st != KVC_OK) return st;
    if (e->allocator != KVC_ALLOC_HBM && e->allocator != KVC_ALLOC_SWAPPED)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: allocator %d is unknown (expected HBM or SWAPPED_MEMORY)",
                         layer_idx, e->name, e->allocator);
    if ((st = validate_entry_dtype(e, layer_idx)) != KVC_OK) return st;
    if (e->compress_ratio < 1 || e->block_size % e->compress_ratio != 0)
        return kvci_fail(KVC_EINVAL, "layer %d, cache %s: compress_ratio %lld must be >= 1 and divide block_size %lld",
                         layer_idx, e->name, (long long)e->compress_ratio, (long long)e->block_size);
    if (e->compress_ratio != 1 && e->attn_type != KVC_ATTN_FULL)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: compress_ratio %lld is only allowed for FullAttention "
                         "(%s needs 1)",
                         layer_idx, e->name, (long long)e->compress_ratio, type->name);
    if (!entry_block_bytes_fit(e))
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: one block (block_size x heads x the bytes of its dims) exceeds "
                         "2^40 bytes",
                         layer_idx, e->name);
    if (e->sliding_window != 0 && e->attn_type != KVC_ATTN_SLIDING_WINDOW)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: sliding_window %lld is set on a %s cache (only "
                         "SlidingWindow takes one)",
                         layer_idx, e->name, (long long)e->sliding_window, type->name);
    if (e->attention_chunk_size != 0 && e->attn_type != KVC_ATTN_CHUNKED_LOCAL)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: attention_chunk_size %lld is set on a %s cache (only "
                         "ChunkedLocal takes one)",
                         layer_idx, e->name, (long long)e->attention_chunk_size, type->name);
    return KVC_OK;
}

static kvc_status validate_entries(const kvc_model_cache_info *ci) {
    if (ci == NULL) return kvci_fail(KVC_EINVAL, "cache info must not be NULL");
    if (ci->n_layer_infos < 0 || (ci->n_layer_infos > 0 && ci->layer_infos == NULL))
        return kvci_fail(KVC_EINVAL, "cache info: layer_infos is NULL or n_layer_infos %d is negative",
                         ci->n_layer_infos);
    if (ci->num_layers != ci->n_layer_infos)
        return kvci_fail(KVC_EINVAL, "cache info: num_layers %d differs from the %d layer infos given", ci->num_layers,
                         ci->n_layer_infos);
    for (int32_t l = 0; l < ci->n_layer_infos; l++) {
        const kvc_layer_cache_info *layer = &ci->layer_infos[l];
        if (layer->n_caches < 0 || (layer->n_caches > 0 && layer->caches == NULL)) /* none: an MLP-only layer */
            return kvci_fail(KVC_EINVAL, "layer %d: n_caches %d is negative or its caches are NULL", layer->layer_idx,
                             layer->n_caches);
        for (int32_t c = 0; c < layer->n_caches; c++) {
            const kvc_cache_entry *e = &layer->caches[c];
            if (!terminated(e->name, sizeof e->name) || e->name[0] == '\0')
                return kvci_fail(KVC_EINVAL, "layer %d, cache %d: name must be a non-empty string of at most %d bytes",
                                 layer->layer_idx, c, KVC_NAME_MAX - 1);
            if (!terminated(e->manager_key, sizeof e->manager_key))
                return kvci_fail(KVC_EINVAL, "layer %d, cache %s: manager_key is longer than %d bytes",
                                 layer->layer_idx, e->name, KVC_NAME_MAX - 1);
            if (!e->needs_block) continue;
            kvc_status st = validate_entry(e, layer->layer_idx);
            if (st != KVC_OK) return st;
        }
    }
    return KVC_OK;
}

static kvc_cache_group *find_group(kvc_cache_groups *out, const char *key) {
    for (int32_t g = 0; g < out->n_groups; g++)
        if (strcmp(out->groups[g].key, key) == 0) return &out->groups[g];
    return NULL;
}

static kvc_status group_mismatch(const kvc_cache_group *g, const kvc_cache_entry *e, int32_t layer_idx,
                                 const char *field, int64_t group_value, int64_t entry_value) {
    return kvci_fail(KVC_EINVAL, "layer %d, cache %s: %s %lld differs from %lld of the other caches of manager %s",
                     layer_idx, e->name, field, (long long)entry_value, (long long)group_value, g->key);
}

/* Adds a validated entry to its group, creating the group on first sight.
 * The per-type parameters (compress_ratio, sliding_window, attention_chunk_size,
 * next_n) must agree
 * within a group; validation already pinned the ones a type does not use. */
static kvc_status join(kvc_cache_groups *out, const kvc_cache_entry *e, int32_t layer_idx) {
    const char *key = kvc_cache_entry_group_key(e);
    const kvc_manager_type *type = kvci_manager_type_find((kvc_attn_type)e->attn_type);
    kvc_cache_group *g = find_group(out, key);
    if (g == NULL) {
        if (out->n_groups == KVC_MAX_MANAGERS)
            return kvci_fail(KVC_EINVAL, "layer %d, cache %s: more than %d manager keys", layer_idx, e->name,
                             KVC_MAX_MANAGERS);
        g = &out->groups[out->n_groups++];
        *g = (kvc_cache_group){.attn_type = (kvc_attn_type)e->attn_type,
                               .block_size = e->block_size,
                               .sliding_window = e->sliding_window,
                               .compress_ratio = e->compress_ratio,
                               .next_n = e->is_state ? e->next_n : 0,
                               .n_entries = 1,
                               .attention_chunk_size = e->attention_chunk_size};
        snprintf(g->key, sizeof g->key, "%s", key);
        return KVC_OK;
    }
    if (g->attn_type != (kvc_attn_type)e->attn_type)
        return kvci_fail(KVC_EINVAL,
                         "layer %d, cache %s: attn_type %s differs from %s of the other caches of "
                         "manager %s",
                         layer_idx, e->name, type->name, kvc_attn_type_name(g->attn_type), g->key);
    if (g->block_size != e->block_size)
        return group_mismatch(g, e, layer_idx, "block_size", g->block_size, e->block_size);
    if (g->compress_ratio != e->compress_ratio)
        return group_mismatch(g, e, layer_idx, "compress_ratio", g->compress_ratio, e->compress_ratio);
    if (g->sliding_window != e->sliding_window)
        return group_mismatch(g, e, layer_idx, "sliding_window", g->sliding_window, e->sliding_window);
    if (g->attention_chunk_size != e->attention_chunk_size)
        return group_mismatch(g, e, layer_idx, "attention_chunk_size", g->attention_chunk_size,
                              e->attention_chunk_size);
    if (e->is_state && g->next_n != e->next_n) return group_mismatch(g, e, layer_idx, "next_n", g->next_n, e->next_n);
    g->n_entries++;
    return KVC_OK;
}

kvc_status kvc_cache_groups_build(const kvc_model_cache_info *ci, kvc_cache_groups *out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_cache_groups_build: out must not be NULL");
    kvc_status st = validate_entries(ci);
    if (st != KVC_OK) return st;
    kvc_cache_groups groups = {0};
    for (int32_t l = 0; l < ci->n_layer_infos; l++) {
        const kvc_layer_cache_info *layer = &ci->layer_infos[l];
        for (int32_t c = 0; c < layer->n_caches; c++) {
            if (!layer->caches[c].needs_block) continue;
            st = join(&groups, &layer->caches[c], layer->layer_idx);
            if (st != KVC_OK) return st;
        }
    }
    *out = groups;
    return KVC_OK;
}

kvc_status kvc_validate_cache_info(const kvc_model_cache_info *ci, int64_t engine_next_n) {
    kvc_cache_groups groups;
    kvc_status st = kvc_cache_groups_build(ci, &groups);
    if (st != KVC_OK || engine_next_n < 0) return st;
    for (int32_t g = 0; g < groups.n_groups; g++)
        if (groups.groups[g].attn_type == KVC_ATTN_MAMBA && groups.groups[g].next_n != engine_next_n)
            return kvci_fail(KVC_EINVAL, "manager %s: Mamba next_n %lld differs from the engine's next_n %lld",
                             groups.groups[g].key, (long long)groups.groups[g].next_n, (long long)engine_next_n);
    return KVC_OK;
}
