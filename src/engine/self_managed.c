/* The self-managed path (RM 9) for a model that declares no cache info: legacy
 * contiguous caches [max_num_seqs, cache_seq_len, *unit] (cache_seq_len =
 * max_model_len), one cache row per running request from a free list, and the
 * step metadata without block tables: positions, kv_pos, the length arrays,
 * the row of each batch row and the flat write index of each token. */
#include <string.h>

#include "base/dtype_traits.h"
#include "engine/engine_internal.h"

static kvc_status legacy_bytes(const kvc_engine *e, const kvc_engine_legacy_cache *c, int32_t i, int64_t *bytes) {
    if (memchr(c->name, '\0', sizeof c->name) == NULL) /* every message below prints it */
        return kvci_fail(KVC_EINVAL, "legacy cache %d (layer %d): name is not NUL-terminated within %d bytes", i,
                         c->layer_idx, KVC_NAME_MAX);
    if (c->tensor_setter == NULL)
        return kvci_fail(KVC_EINVAL, "legacy cache %d (%s, layer %d): no tensor_setter to receive the tensor", i,
                         c->name, c->layer_idx);
    const kvc_dtype_traits *t = kvci_dtype_traits(c->dtype);
    if (t == NULL)
        return kvci_fail(KVC_EINVAL, "legacy cache %d (%s, layer %d): dtype %d is unknown", i, c->name, c->layer_idx,
                         (int)c->dtype);
    if (c->n_dims < 1 || c->n_dims > KVC_MAX_DIMS - 2)
        return kvci_fail(KVC_EINVAL, "legacy cache %d (%s, layer %d): n_dims %d must be in [1, %d]", i, c->name,
                         c->layer_idx, c->n_dims, KVC_MAX_DIMS - 2);
    for (int32_t d = 0; d < c->n_dims; d++)
        if (c->unit[d] < 1)
            return kvci_fail(KVC_EINVAL, "legacy cache %d (%s, layer %d): unit[%d] = %lld must be >= 1", i, c->name,
                             c->layer_idx, d, (long long)c->unit[d]);
    const int64_t inner = c->unit[c->n_dims - 1]; /* a dtype stored in blocks runs them along the innermost dim */
    if (inner % t->block != 0)
        return kvci_fail(KVC_EINVAL,
                         "legacy cache %d (%s, layer %d): unit[%d] = %lld is not a multiple of the %d-element blocks "
                         "of dtype %s",
                         i, c->name, c->layer_idx, c->n_dims - 1, (long long)inner, (int)t->block, t->name);
    int64_t n = 0;
    bool ok = kvci_dtype_bytes(c->dtype, inner, &n) && kvci_mul64(n, e->p.max_num_seqs, &n) &&
              kvci_mul64(n, e->p.max_model_len, &n);
    for (int32_t d = 0; d + 1 < c->n_dims && ok; d++) ok = kvci_mul64(n, c->unit[d], &n);
    if (!ok)
        return kvci_fail(KVC_EINVAL, "legacy cache %d (%s, layer %d): [%lld, %lld, ...] overflows int64 bytes", i,
                         c->name, c->layer_idx, (long long)e->p.max_num_seqs, (long long)e->p.max_model_len);
    *bytes = n;
    return KVC_OK;
}

static kvc_status legacy_tensors(kvc_engine *e) {
    kvc_engine_legacy *l = &e->legacy;
    const kvc_engine_model *m = &e->model;
    l->n_caches = m->n_legacy_caches;
    if (l->n_caches == 0) return KVC_OK;
    kvc_status st = kvci_page_set_init(&l->set, "engine", e->p.pages, e->p.alignment, l->n_caches);
    if (st != KVC_OK) return st;
    for (int32_t i = 0; i < l->n_caches; i++) {
        const kvc_engine_legacy_cache *c = &m->legacy_caches[i];
        int64_t bytes = 0;
        void *data = NULL;
        st = legacy_bytes(e, c, i, &bytes);
        if (st != KVC_OK) return st;
        st = kvci_page_set_alloc(&l->set, (size_t)bytes, true, &data); /* the model gets zeroed caches */
        if (st != KVC_OK)
            return kvci_fail(st, "legacy cache %d (%s, layer %d) of %lld bytes: %s", i, c->name, c->layer_idx,
                             (long long)bytes, kvc_last_error());
        e->kv_bytes += bytes;
    }
    /* everything allocated: hand the tensors over */
    for (int32_t i = 0; i < l->n_caches; i++) {
        const kvc_engine_legacy_cache *c = &m->legacy_caches[i];
        kvc_tensor t = {.data = l->set.data[i], .dtype = c->dtype, .ndim = 2 + c->n_dims};
        t.shape[0] = e->p.max_num_seqs;
        t.shape[1] = e->p.max_model_len;
        for (int32_t d = 0; d < c->n_dims; d++) t.shape[2 + d] = c->unit[d];
        c->tensor_setter(c->setter_user, &t);
    }
    return KVC_OK;
}

kvc_status kvci_engine_legacy_create(kvc_engine *e) {
    kvc_engine_legacy *l = &e->legacy;
    if (e->model.n_legacy_caches < 0 || (e->model.n_legacy_caches > 0 && e->model.legacy_caches == NULL))
        return kvci_fail(KVC_EINVAL, "engine model: %d legacy caches but the list is NULL or the count negative",
                         e->model.n_legacy_caches);
    size_t rows = (size_t)e->p.max_num_seqs, toks = (size_t)e->max_tokens;
    kvc_step_rows *sr = &l->rows;
    sr->max_rows = e->p.max_num_seqs;
    sr->max_tokens = e->max_tokens;
    l->free_rows = kvci_malloc(rows * sizeof(int64_t));
    sr->positions = kvci_malloc(toks * sizeof(int64_t));
    l->legacy_index = kvci_malloc(toks * sizeof(int64_t));
    sr->kv_pos = kvci_malloc(rows * sizeof(int64_t));
    sr->seq_lens_q = kvci_malloc(rows * sizeof(int64_t));
    sr->seq_lens_kv = kvci_malloc(rows * sizeof(int64_t));
    sr->cu_seq_lens_q = kvci_malloc(rows * sizeof(int64_t));
    sr->cu_seq_lens_kv = kvci_malloc(rows * sizeof(int64_t));
    l->cache_rows = kvci_malloc(rows * sizeof(int64_t));
    if (!l->free_rows || !sr->positions || !l->legacy_index || !sr->kv_pos || !sr->seq_lens_q || !sr->seq_lens_kv ||
        !sr->cu_seq_lens_q || !sr->cu_seq_lens_kv || !l->cache_rows)
        return kvci_fail(KVC_ENOMEM, "engine: out of host memory for the self-managed step buffers");
    /* a stack popped from the top: row 0 is handed out first */
    for (int64_t r = 0; r < e->p.max_num_seqs; r++) l->free_rows[r] = e->p.max_num_seqs - 1 - r;
    l->n_free_rows = e->p.max_num_seqs;
    return legacy_tensors(e);
}

void kvci_engine_legacy_destroy(kvc_engine *e) {
    kvc_engine_legacy *l = &e->legacy;
    kvci_page_set_release(&l->set);
    kvci_free(l->free_rows);
    kvci_free(l->rows.positions);
    kvci_free(l->legacy_index);
    kvci_free(l->rows.kv_pos);
    kvci_free(l->rows.seq_lens_q);
    kvci_free(l->rows.seq_lens_kv);
    kvci_free(l->rows.cu_seq_lens_q);
    kvci_free(l->rows.cu_seq_lens_kv);
    kvci_free(l->cache_rows);
    memset(l, 0, sizeof *l);
}

kvc_status kvci_engine_legacy_build(kvc_engine *e, const kvc_step_request *rows, int64_t n, bool is_prefill,
                                    kvc_step_metadata *md, kvc_engine_batch *batch) {
    kvc_engine_legacy *l = &e->legacy;
    int64_t s = e->p.max_model_len, t = 0;
    for (int64_t b = 0; b < n; b++) {
        const kvc_engine_req *r = &e->reqs[e->row_slots[b]];
        int64_t first = rows[b].computed_tokens, q = rows[b].num_new_tokens;
        if (r->cache_row < 0 || r->cache_row >= e->p.max_num_seqs || first + q > s || t + q > e->max_tokens)
            return kvci_fail(KVC_EINTERNAL,
                             "engine: self-managed row %lld (request %lld, cache row %lld) positions "
                             "%lld..%lld do not fit [%lld rows, %lld positions]",
                             (long long)b, (long long)r->id, (long long)r->cache_row, (long long)first,
                             (long long)(first + q - 1), (long long)e->p.max_num_seqs, (long long)s);
        l->cache_rows[b] = r->cache_row;
        t += q;
    }
    kvc_status st = kvc_step_rows_begin(&l->rows, is_prefill);
    if (st == KVC_OK) st = kvc_step_rows_add(&l->rows, rows, n);
    if (st == KVC_OK) st = kvc_step_rows_to_metadata(&l->rows, md);
    if (st != KVC_OK) return st;
    /* token i of row b goes to position positions[i] of cache row cache_rows[b] */
    for (int64_t b = 0, i = 0; b < n; b++)
        for (; i < l->rows.cu_seq_lens_q[b]; i++) l->legacy_index[i] = l->cache_rows[b] * s + l->rows.positions[i];
    batch->cache_rows = l->cache_rows;
    batch->legacy_index = l->legacy_index;
    batch->cache_seq_len = s;
    return KVC_OK;
}
