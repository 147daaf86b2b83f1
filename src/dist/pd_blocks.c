/* The blocks of a P/D message (pd.h): which blocks of each manager key carry
 * a request's KV, and copying them between a payload and the pool storage
 * of either side. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h" /* kvci_entry_block_bytes: the manager's bytes per block */
#include "dist/pd.h"

/* Records every needs_block tensor of ci (out->tensors, out->data: cap entries; NULL: counts only). */
static kvc_status record(const kvc_manager *m, const kvc_model_cache_info *ci, kvci_pd_layout *out, int64_t cap) {
    out->n_buffers = 0;
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            const kvc_cache_entry *en = &ci->layer_infos[l].caches[c];
            if (!en->needs_block) continue;
            int32_t k = -1;
            const kvc_status st = kvc_manager_key_index(m, kvc_cache_entry_group_key(en), &k);
            if (st != KVC_OK) return st;
            if (en->tensor.data == NULL)
                return kvci_fail(KVC_EINVAL, "P/D transfer: layer %d, cache %s has no storage",
                                 ci->layer_infos[l].layer_idx, en->name);
            if (out->n_buffers < cap) {
                kvci_pd_tensor *d = &out->tensors[out->n_buffers];
                *d = (kvci_pd_tensor){.layer_idx = ci->layer_infos[l].layer_idx,
                                      .key = k,
                                      .dtype = (int32_t)en->tensor.dtype,
                                      .is_state = en->is_state,
                                      .bytes_per_block = kvci_entry_block_bytes(en)};
                snprintf(d->name, sizeof d->name, "%s", en->name);
                out->data[out->n_buffers] = en->tensor.data;
                out->block_bytes[k] += d->bytes_per_block;
            }
            out->n_buffers++;
        }
    return KVC_OK;
}

kvc_status kvci_pd_layout_init(const kvc_manager *m, const kvc_model_cache_info *ci, kvci_pd_layout *out) {
    memset(out, 0, sizeof *out);
    out->n_keys = kvc_manager_n_keys(m);
    for (int32_t k = 0; k < out->n_keys; k++) {
        out->has_state |= kvc_manager_key_is_state(m, k);
        out->block_size[k] = kvc_manager_block_size(m, k);
        out->table_cap = kvci_max64(out->table_cap, kvc_manager_table_width(m, k, kvc_manager_max_model_len(m)));
    }
    kvc_status st = record(m, ci, out, 0);
    if (st != KVC_OK) return st;
    const int64_t n = kvci_max64(out->n_buffers, 1);
    out->tensors = kvci_calloc((size_t)n, sizeof *out->tensors);
    out->data = kvci_calloc((size_t)n, sizeof *out->data);
    out->table = kvci_calloc((size_t)kvci_max64(out->table_cap, 1), sizeof *out->table);
    st = out->tensors && out->data && out->table ? record(m, ci, out, n)
                                                 : kvci_fail(KVC_ENOMEM, "P/D transfer: out of memory");
    if (st != KVC_OK) kvci_pd_layout_free(out);
    return st;
}

void kvci_pd_layout_free(kvci_pd_layout *l) {
    kvci_free(l->tensors);
    kvci_free(l->data);
    kvci_free(l->table);
    kvci_free(l->pack);
    memset(l, 0, sizeof *l);
}

int64_t kvci_pd_prefill_len(const kvci_pd_layout *l, int64_t n_prompt) {
    return l->has_state ? kvci_max64(n_prompt - 1, 1) : n_prompt;
}

int64_t kvci_pd_blocks_offset(const kvci_pd_layout *l, int64_t n_prompt) {
    return n_prompt * (int64_t)sizeof(int32_t) + l->n_buffers * (int64_t)sizeof(kvci_pd_tensor);
}

void kvci_pd_block_range(const kvc_manager *m, int32_t k, int64_t n_external, int64_t *first, int64_t *n) {
    if (kvc_manager_key_is_state(m, k)) { /* entry 0 of its table: the request's own state block */
        *first = 0, *n = n_external > 0;
        return;
    }
    const int64_t bs = kvc_manager_block_size(m, k);
    *first = n_external > 0 ? kvc_manager_skipped_tokens(m, k, n_external) / bs : 0;
    *n = kvci_cdiv(n_external, bs) - *first;
}

/* Copies the blocks [first, end) of key k of request id between the pool and the payload at *off
 * (to_payload: pool -> payload), skipping (but counting) the blocks before `from`. */
static kvc_status copy_key(const kvc_manager *m, kvci_pd_layout *l, int64_t id, int32_t k, int64_t first, int64_t end,
                           int64_t from, char *payload, int64_t *off, bool to_payload) {
    int64_t len = 0;
    kvc_status st = kvc_manager_block_ids(m, id, k, l->table, l->table_cap, &len);
    if (st != KVC_OK) return st;
    for (int64_t j = first; j < end; j++) {
        const int32_t b = j < len ? l->table[j] : KVC_NULL_BLOCK;
        if (j >= from && b == KVC_NULL_BLOCK)
            return kvci_fail(KVC_EINTERNAL,
                             "P/D transfer: request %lld has no block at entry %lld of manager %s "
                             "(table of %lld entries)",
                             (long long)id, (long long)j, kvc_manager_key(m, k), (long long)len);
        for (int64_t i = 0; i < l->n_buffers; i++) {
            const int64_t bytes = l->tensors[i].bytes_per_block;
            if (l->tensors[i].key != k) continue;
            char *block = l->data[i] + (int64_t)b * bytes;
            if (j >= from)
                memcpy(to_payload ? payload + *off : block, to_payload ? block : payload + *off, (size_t)bytes);
            *off += bytes;
        }
    }
    return KVC_OK;
}

/* Pool <-> payload for every key, blocks of positions [0, n_external); blocks before position n_hit are
 * left alone (to the pool only: they are the request's prefix-cache hit; a state key takes no hit when
 * external tokens follow it, so its block is always written). */
kvc_status kvci_pd_copy_blocks(const kvc_manager *m, kvci_pd_layout *l, int64_t id, int64_t n_prompt,
                               int64_t n_external, int64_t n_hit, char *payload, bool to_payload) {
    int64_t off = kvci_pd_blocks_offset(l, n_prompt);
    for (int32_t k = 0; k < l->n_keys; k++) {
        int64_t first = 0, n = 0;
        kvci_pd_block_range(m, k, n_external, &first, &n);
        const int64_t from = kvc_manager_key_is_state(m, k) ? first : kvci_max64(first, n_hit / l->block_size[k]);
        kvc_status st = copy_key(m, l, id, k, first, first + n, from, payload, &off, to_payload);
        if (st != KVC_OK) return st;
    }
    return KVC_OK;
}
