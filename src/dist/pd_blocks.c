/* The blocks of a P/D message (pd.h): which blocks of each manager key carry
 * a request's KV, and copying them between a payload and the pool storage
 * of either side. */
#include <string.h>

#include "base/internal.h"
#include "dist/pd.h"

kvc_status kvci_pd_layout_init(const kvc_manager *m, kvci_pd_layout *out) {
    memset(out, 0, sizeof *out);
    out->n_keys = kvc_manager_n_keys(m);
    for (int32_t k = 0; k < out->n_keys; k++) {
        if (kvc_manager_key_is_state(m, k))
            return kvci_fail(KVC_EINVAL,
                             "P/D transfer: manager %s holds state (Mamba) blocks, which P/D does not carry (the "
                             "prefill side holds the state after the whole prompt)",
                             kvc_manager_key(m, k));
        out->block_size[k] = kvc_manager_block_size(m, k);
        out->table_cap = kvci_max64(out->table_cap, kvc_manager_table_width(m, k, kvc_manager_max_model_len(m)));
    }
    kvc_status st = kvc_manager_buffer_infos(m, NULL, 0, &out->n_buffers);
    if (st != KVC_OK) return st;
    out->buffers = kvci_calloc((size_t)kvci_max64(out->n_buffers, 1), sizeof *out->buffers);
    out->table = kvci_calloc((size_t)kvci_max64(out->table_cap, 1), sizeof *out->table);
    if (out->buffers == NULL || out->table == NULL) {
        kvci_pd_layout_free(out);
        return kvci_fail(KVC_ENOMEM, "P/D transfer: out of memory");
    }
    st = kvc_manager_buffer_infos(m, out->buffers, out->n_buffers, &out->n_buffers);
    for (int64_t i = 0; st == KVC_OK && i < out->n_buffers; i++) {
        int32_t k = -1;
        st = kvc_manager_key_index(m, out->buffers[i].key, &k);
        if (st == KVC_OK) out->block_bytes[k] += out->buffers[i].bytes_per_block;
    }
    if (st != KVC_OK) kvci_pd_layout_free(out);
    return st;
}

void kvci_pd_layout_free(kvci_pd_layout *l) {
    kvci_free(l->buffers);
    kvci_free(l->table);
    kvci_free(l->pack);
    memset(l, 0, sizeof *l);
}

void kvci_pd_block_range(const kvc_manager *m, int32_t k, int64_t n_external, int64_t *first, int64_t *n) {
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
            const kvc_buffer_info *bi = &l->buffers[i];
            if (strcmp(bi->key, kvc_manager_key(m, k)) != 0) continue;
            char *block = (char *)bi->data + (int64_t)b * bi->bytes_per_block;
            if (j >= from)
                memcpy(to_payload ? payload + *off : block, to_payload ? block : payload + *off,
                       (size_t)bi->bytes_per_block);
            *off += bi->bytes_per_block;
        }
    }
    return KVC_OK;
}

/* Pool <-> payload for every key, blocks of positions [0, n_external); blocks before position n_hit are
 * left alone (to the pool only: they are the request's prefix-cache hit). */
kvc_status kvci_pd_copy_blocks(const kvc_manager *m, kvci_pd_layout *l, int64_t id, int64_t n_prompt,
                               int64_t n_external, int64_t n_hit, char *payload, bool to_payload) {
    int64_t off = n_prompt * (int64_t)sizeof(int32_t);
    for (int32_t k = 0; k < l->n_keys; k++) {
        int64_t first = 0, n = 0;
        kvci_pd_block_range(m, k, n_external, &first, &n);
        kvc_status st = copy_key(m, l, id, k, first, first + n, kvci_max64(first, n_hit / l->block_size[k]), payload,
                                 &off, to_payload);
        if (st != KVC_OK) return st;
    }
    return KVC_OK;
}
