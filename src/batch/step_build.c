/* kvc_step_metadata_build: rows first, then every manager key in order;
 * the result is published only when everything succeeded. */
#include <string.h>

#include "base/internal.h"
#include "batch/step_internal.h"

kvc_status kvc_step_metadata_build(kvc_step_buffers *buf, const kvc_step_request *rows, int64_t n_rows, bool is_prefill,
                                   kvc_step_metadata *out) {
    if (buf == NULL) return kvci_fail(KVC_EINVAL, "kvc_step_metadata_build: buffers is NULL");
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_step_metadata_build: out is NULL");
    if (n_rows < 0)
        return kvci_fail(KVC_EINVAL, "kvc_step_metadata_build: n_rows %lld must be >= 0", (long long)n_rows);
    if (n_rows > buf->max_rows) {
        return kvci_fail(KVC_ERANGE, "kvc_step_metadata_build: n_rows %lld exceeds the buffers' max_rows %lld",
                         (long long)n_rows, (long long)buf->max_rows);
    }
    if (rows == NULL && n_rows > 0) {
        return kvci_fail(KVC_EINVAL, "kvc_step_metadata_build: rows is NULL with n_rows %lld", (long long)n_rows);
    }
    kvc_step_metadata md;
    kvc_status st = kvci_step_rows_fill(buf, rows, n_rows, is_prefill, &md);
    if (st != KVC_OK) return st;
    md.n_keys = buf->n_keys;
    for (int32_t k = 0; k < buf->n_keys; k++) {
        kvc_step_key *key = &md.keys[k];
        st = kvci_step_key_fill(buf, k, rows, n_rows, is_prefill, &key->width);
        if (st != KVC_OK) return st;
        key->key = kvc_manager_key(buf->manager, k);
        key->attn_type = buf->info[k].attn_type;
        key->block_size = buf->info[k].block_size;
        key->block_table = buf->block_table[k];
        key->slot_mapping = buf->slot_mapping[k];
    }
    *out = md;
    return KVC_OK;
}

const kvc_step_key *kvc_step_metadata_key(const kvc_step_metadata *md, const char *key) {
    if (md == NULL || key == NULL) return NULL;
    for (int32_t k = 0; k < md->n_keys && k < KVC_MAX_MANAGERS; k++) {
        if (md->keys[k].key != NULL && strcmp(md->keys[k].key, key) == 0) return &md->keys[k];
    }
    return NULL;
}
