/* Read-only queries of the request-level manager (KM 5.3). */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "cache/manager_internal.h"

static const kvc_single_manager *key_manager(const kvc_manager *m, int32_t key_index) {
    if (m == NULL || key_index < 0 || key_index >= m->n_managers) return NULL;
    return &m->managers[key_index];
}

int32_t kvc_manager_n_keys(const kvc_manager *m) { return m != NULL ? m->n_managers : 0; }

const char *kvc_manager_key(const kvc_manager *m, int32_t key_index) {
    const kvc_single_manager *sm = key_manager(m, key_index);
    return sm != NULL ? sm->group.key : NULL;
}

kvc_status kvc_manager_key_index(const kvc_manager *m, const char *key, int32_t *out) {
    if (m == NULL || key == NULL || out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_manager_key_index: manager, key and out must not be NULL");
    for (int32_t g = 0; g < m->n_managers; g++) {
        if (strcmp(m->managers[g].group.key, key) == 0) {
            *out = g;
            return KVC_OK;
        }
    }
    return kvci_fail(KVC_EINVAL, "manager key \"%s\" is unknown", key);
}

/* Value of one group field, or `fallback` for a bad key index. */
#define KEY_FIELD(m, key_index, expr, fallback)                                                                        \
    do {                                                                                                               \
        const kvc_single_manager *sm_ = key_manager((m), (key_index));                                                 \
        return sm_ != NULL ? (expr) : (fallback);                                                                      \
    } while (0)

kvc_attn_type kvc_manager_key_type(const kvc_manager *m, int32_t k) {
    KEY_FIELD(m, k, sm_->group.attn_type, KVC_ATTN_TYPE_COUNT);
}
int64_t kvc_manager_block_size(const kvc_manager *m, int32_t k) { KEY_FIELD(m, k, sm_->group.block_size, -1); }
int64_t kvc_manager_num_blocks(const kvc_manager *m, int32_t k) {
    KEY_FIELD(m, k, kvc_block_pool_num_blocks(sm_->pool), -1);
}
int64_t kvc_manager_num_free(const kvc_manager *m, int32_t k) {
    KEY_FIELD(m, k, kvc_block_pool_num_free(sm_->pool), -1);
}
int32_t kvc_manager_pool_key(const kvc_manager *m, int32_t k) {
    const kvc_single_manager *sm = key_manager(m, k);
    int32_t first = 0;
    while (sm != NULL && m->managers[first].pool != sm->pool) first++;
    return sm != NULL ? first : -1;
}
int64_t kvc_manager_next_n(const kvc_manager *m, int32_t k) { KEY_FIELD(m, k, sm_->group.next_n, -1); }
int64_t kvc_manager_compress_ratio(const kvc_manager *m, int32_t k) { KEY_FIELD(m, k, sm_->group.compress_ratio, -1); }
int64_t kvc_manager_snapshot_interval(const kvc_manager *m, int32_t k) {
    KEY_FIELD(m, k, sm_->caching && sm_->type->state_hits ? sm_->index.block_tokens : 0, -1);
}

int64_t kvc_manager_table_width(const kvc_manager *m, int32_t k, int64_t max_len) {
    KEY_FIELD(m, k, max_len >= 0 ? kvci_cdiv(max_len, sm_->group.block_size) : -1, -1);
}

int64_t kvc_manager_max_model_len(const kvc_manager *m) { return m != NULL ? m->max_model_len : -1; }

int64_t kvc_manager_num_live_requests(const kvc_manager *m) { return m != NULL ? m->requests.n_live : 0; }

bool kvc_manager_has_request(const kvc_manager *m, int64_t rid, int32_t key_index) {
    if (key_manager(m, key_index) == NULL) return false;
    int32_t slot = kvci_request_table_find(&m->requests, rid);
    return slot >= 0 && kvci_manager_request_tables(m, slot)[key_index].present;
}

static kvc_status check_copy_args(const kvc_manager *m, int32_t key_index, const int32_t *out, int64_t cap,
                                  const int64_t *n_out, const char *fn) {
    if (m == NULL || n_out == NULL) return kvci_fail(KVC_EINVAL, "%s: manager and n_out must not be NULL", fn);
    if (key_manager(m, key_index) == NULL)
        return kvci_fail(KVC_ERANGE, "%s: key index %d is out of range [0, %d)", fn, key_index, m->n_managers);
    if (cap < 0 || (cap > 0 && out == NULL))
        return kvci_fail(KVC_EINVAL, "%s: out must hold cap %lld ids", fn, (long long)cap);
    return KVC_OK;
}

kvc_status kvc_manager_block_ids(const kvc_manager *m, int64_t rid, int32_t key_index, int32_t *out, int64_t cap,
                                 int64_t *n_out) {
    kvc_status st = check_copy_args(m, key_index, out, cap, n_out, "kvc_manager_block_ids");
    if (st != KVC_OK) return st;
    int32_t slot = kvci_request_table_find(&m->requests, rid);
    if (slot < 0) {
        *n_out = 0;
        return KVC_OK;
    }
    const kvc_req_blocks *t = &kvci_manager_request_tables(m, slot)[key_index];
    if (kvci_min64(t->len, cap) > 0) memcpy(out, t->ids, (size_t)kvci_min64(t->len, cap) * sizeof *out);
    *n_out = t->len;
    return KVC_OK;
}

/* Writes table entries [from, len) of t into row. */
static void write_entries(const kvc_req_blocks *t, int64_t from, int32_t *row) {
    if (from < t->len) memcpy(row + from, t->ids + from, (size_t)(t->len - from) * sizeof *row);
}

/* The entry a state was copied from, found through its slot hint without
 * hashing: generations are unique, so a slot still holding the state's
 * generation for that request holds the same entry. NULL: look it up. */
static const kvc_req_blocks *cached_entry(const kvc_manager *m, int64_t rid, int32_t key_index,
                                          const kvc_table_state *state) {
    if (state->generation == 0 || state->slot < 0 || state->slot >= m->requests.n_slots) return NULL;
    if (m->requests.ids[state->slot] != rid) return NULL;
    const kvc_req_blocks *t = &kvci_manager_request_tables(m, state->slot)[key_index];
    return t->present && t->generation == state->generation ? t : NULL;
}

kvc_status kvc_manager_table_sync(const kvc_manager *m, int64_t rid, int32_t key_index, int32_t *row, int64_t width,
                                  kvc_table_state *state) {
    if (m == NULL || row == NULL || state == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_manager_table_sync: manager, row and state must not be NULL");
    const kvc_single_manager *sm = key_manager(m, key_index);
    if (sm == NULL)
        return kvci_fail(KVC_ERANGE, "kvc_manager_table_sync: key index %d is out of range [0, %d)", key_index,
                         m->n_managers);
    if (width < 0) return kvci_fail(KVC_EINVAL, "kvc_manager_table_sync: width %lld is negative", (long long)width);
    /* state is written only on success (KVC_ERANGE leaves it unchanged). */
    int32_t slot = state->slot;
    const kvc_req_blocks *t = cached_entry(m, rid, key_index, state);
    if (t == NULL) {
        slot = kvci_request_table_find(&m->requests, rid);
        t = slot >= 0 ? &kvci_manager_request_tables(m, slot)[key_index] : NULL;
    }
    if (t == NULL || !t->present) {
        memset(row, 0, (size_t)width * sizeof *row);
        *state = (kvc_table_state){0};
        return KVC_OK;
    }
    int64_t len = t->len;
    if (len > width)
        return kvci_fail(KVC_ERANGE, "request %lld, key %s: table length %lld exceeds the row width %lld",
                         (long long)rid, sm->group.key, (long long)len, (long long)width);
    /* the state is the caller's: counts that no sync wrote (negative, n_null past len) mean unknown */
    const bool sane = state->n_null >= 0 && state->n_null <= state->len && state->len <= len;
    if (sane && state->generation == t->generation && state->width == width) {
        /* Current copy: entries released since become null, new ones are appended. */
        for (int64_t i = state->n_null; i < kvci_min64(t->n_null, state->len); i++) row[i] = KVC_NULL_BLOCK;
        write_entries(t, state->len, row);
    } else {
        write_entries(t, 0, row);
        memset(row + len, 0, (size_t)(width - len) * sizeof *row);
    }
    *state =
        (kvc_table_state){.generation = t->generation, .n_null = t->n_null, .len = len, .width = width, .slot = slot};
    return KVC_OK;
}

kvc_status kvc_manager_free_queue(const kvc_manager *m, int32_t key_index, int32_t *out, int64_t cap, int64_t *n_out) {
    kvc_status st = check_copy_args(m, key_index, out, cap, n_out, "kvc_manager_free_queue");
    if (st != KVC_OK) return st;
    return kvc_block_pool_free_ids(m->managers[key_index].pool, out, cap, n_out);
}

kvc_status kvc_manager_format_usage(const kvc_manager *m, char *buf, size_t cap) {
    if (m == NULL || buf == NULL || cap == 0)
        return kvci_fail(KVC_EINVAL, "kvc_manager_format_usage: manager and a non-empty buffer are required");
    if (m->n_managers == 0) {
        int n = snprintf(buf, cap, "0/0");
        return (size_t)n < cap ? KVC_OK : kvci_fail(KVC_ERANGE, "usage needs %d bytes, buffer has %zu", n + 1, cap);
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t g = 0; g < m->n_managers; g++) {
        const kvc_single_manager *sm = &m->managers[g];
        int64_t total = kvc_block_pool_num_blocks(sm->pool);
        int n = snprintf(buf + used, cap - used, "%s%s:%lld/%lld", g > 0 ? "," : "", sm->group.key,
                         (long long)(total - kvc_block_pool_num_free(sm->pool)), (long long)total);
        if (n < 0 || (size_t)n >= cap - used)
            return kvci_fail(KVC_ERANGE, "usage does not fit in a buffer of %zu bytes", cap);
        used += (size_t)n;
    }
    return KVC_OK;
}

/* One export record for a validated attention entry with a tensor. */
static kvc_buffer_info buffer_info(const kvc_cache_entry *e, int32_t layer_idx) {
    const int64_t storage_bs = e->block_size / e->compress_ratio, block_bytes = kvci_entry_block_bytes(e);
    kvc_buffer_info info = {
        .data = e->tensor.data,
        .total_bytes = e->tensor.shape[0] * block_bytes, /* [blocks, ...] */
        .bytes_per_block = block_bytes,
        .block_size = storage_bs,
        .layer_idx = layer_idx,
    };
    snprintf(info.key, sizeof info.key, "%s", kvc_cache_entry_group_key(e));
    snprintf(info.name, sizeof info.name, "%s", e->name);
    return info;
}

kvc_status kvc_manager_buffer_infos(const kvc_manager *m, kvc_buffer_info *out, int64_t cap, int64_t *n_out) {
    if (m == NULL || n_out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_manager_buffer_infos: manager and n_out must not be NULL");
    if (cap < 0 || (cap > 0 && out == NULL))
        return kvci_fail(KVC_EINVAL, "kvc_manager_buffer_infos: out must hold cap %lld records", (long long)cap);
    int64_t n = 0;
    for (int32_t i = 0; i < m->ci->n_layer_infos; i++) {
        const kvc_layer_cache_info *layer = &m->ci->layer_infos[m->layer_order[i]];
        for (int32_t c = 0; c < layer->n_caches; c++) {
            const kvc_cache_entry *e = &layer->caches[c];
            if (!e->needs_block) continue;
            if (e->attn_type == KVC_ATTN_MAMBA)
                return kvci_fail(KVC_EINVAL,
                                 "layer %d, cache %s: Mamba state caches cannot be exported for KV "
                                 "transfer",
                                 layer->layer_idx, e->name);
            if (e->tensor.data == NULL)
                return kvci_fail(KVC_EINVAL,
                                 "layer %d, cache %s: no tensor allocated (run kvc_cache_storage_allocate "
                                 "first)",
                                 layer->layer_idx, e->name);
            if (n < cap) out[n] = buffer_info(e, layer->layer_idx);
            n++;
        }
    }
    *n_out = n;
    return KVC_OK;
}
