/* One attention layer over the step's packed K/V or its cache (full form):
 * the cache writes (AO 2.1 per row, AO 2.2 by slots) and the calls of
 * kvc_attention_cpu for the three read paths (packed TND, contiguous BSH
 * per row, paged TND through the layer key's block table). */
#include <omp.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "base/half_rows.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"

static kvc_tensor view_dt(const void *data, kvc_dtype dt, int32_t nd, int64_t a, int64_t b, int64_t c) {
    kvc_tensor t = {.data = (void *)data, .dtype = dt, .ndim = nd};
    t.shape[0] = a, t.shape[1] = b, t.shape[2] = c;
    return t;
}

static kvc_tensor view(const float *data, int32_t nd, int64_t a, int64_t b, int64_t c) {
    return view_dt(data, KVC_DTYPE_F32, nd, a, b, c);
}

/* Grows *buf to the workspace p needs on this many threads. */
static kvc_status grow_workspace(const kvc_attention_params *p, void **buf, size_t *bytes) {
    size_t need = 0;
    kvc_status st = kvc_attention_cpu_workspace_size(p, omp_get_max_threads(), &need);
    if (st != KVC_OK || need <= *bytes) return st;
    void *n = NULL;
    st = kvc_aligned_alloc(64, need, &n);
    if (st != KVC_OK) return st;
    kvc_aligned_free(*buf);
    *buf = n;
    *bytes = need;
    return KVC_OK;
}

/* One call planned and run at once (per-row calls, whose lengths differ row by row). */
static kvc_status run_attention_once(kvc_model_workspace *ws, const kvc_attention_params *p) {
    kvc_status st = grow_workspace(p, &ws->attn_ws, &ws->attn_ws_bytes);
    return st == KVC_OK ? kvc_attention_cpu(p, ws->attn_ws, ws->attn_ws_bytes) : st;
}

/* A layer's call over the step's metadata: planned by the first layer of its
 * kind (full, sliding window or chunked local) in the step, run by every one. */
static kvc_status run_attention(const kvc_fwd_step *s, const kvc_attn_call *c, const kvc_attention_params *p) {
    kvc_model_workspace *ws = s->ws;
    kvc_model_attn_plan *k = &ws->attn_plans[c->window > 0 ? 1 : c->chunk > 0 ? 2 : 0];
    if (k->step != ws->step || !kvci_attention_plan_fits(&k->plan, p)) {
        k->step = 0;
        kvc_status st = grow_workspace(p, &k->ws, &k->ws_bytes);
        if (st == KVC_OK) st = kvci_attention_plan(&k->plan, p, k->ws, k->ws_bytes);
        if (st != KVC_OK) return st;
        k->step = ws->step;
        k->plans++;
    }
    const kvci_attn_layer layer = kvci_attn_layer_of(p);
    return kvci_attention_run(&k->plan, &layer);
}

const kvc_step_key *kvci_layer_key(const kvc_fwd_step *s, const kvc_layer_cache *lc) {
    const kvc_step_key *k = kvc_step_metadata_key(s->md, lc->key);
    if (!k)
        kvci_fail(KVC_EINVAL, "forward: the step has no manager key \"%s\" for this layer's cache", lc->key);
    else if (!k->slot_mapping || !k->block_table)
        kvci_fail(KVC_EINVAL, "forward: manager key \"%s\" has no block table / slot mapping", lc->key);
    return (k && k->slot_mapping && k->block_table) ? k : NULL;
}

/* On the calling thread: vectorised, 0.5 M elements (a prefill's K or V) take ~0.06 ms here, less than
 * an OpenMP region costs on a loaded machine. */
const void *kvci_cache_rows(const kvc_tensor *t, const float *rows, int64_t n, void *buf) {
    switch (t->dtype) {
    case KVC_DTYPE_F16: kvci_f32_to_f16_n(rows, n, buf); return buf;
    case KVC_DTYPE_BF16: kvci_f32_to_bf16_n(rows, n, buf); return buf;
    default: return rows;
    }
}

int64_t kvci_layer_block_size(const kvc_model_caches *cs, const kvc_layer_cache *lc) {
    if (cs->block_size != 0) return cs->block_size;
    return lc->k.shape[cs->layout == KVC_BLOCK_BNNDBS ? 3 : 1];
}

int64_t kvci_cache_slot_count(const kvc_model_caches *cs, const kvc_layer_cache *lc) {
    return lc->k.shape[0] * (cs->kind == KVC_MCACHE_PAGED ? kvci_layer_block_size(cs, lc) : lc->k.shape[1]);
}

/* The paged order of cache tensor t of lc: BNBSND, or for the BNNDBS
 * layout keys in lanes (k) and head-major values (v). */
static kvc_block_layout paged_order(const kvc_model_caches *cs, const kvc_layer_cache *lc, const kvc_tensor *t) {
    if (cs->layout != KVC_BLOCK_BNNDBS) return KVC_BLOCK_BNBSND;
    return t == &lc->k ? KVC_BLOCK_BNNDBS : KVC_BLOCK_BNNBSD;
}

const int64_t *kvci_cache_slots(const kvc_fwd_step *s, const kvc_layer_cache *lc) {
    if (s->a->caches->kind == KVC_MCACHE_PAGED) {
        const kvc_step_key *k = kvci_layer_key(s, lc);
        return k ? k->slot_mapping : NULL;
    }
    const kvc_step_metadata *md = s->md;
    const int64_t rows = lc->k.shape[0], S = lc->k.shape[1];
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        const int64_t cr = s->a->cache_rows ? s->a->cache_rows[r] : r;
        if (cr < 0 || cr >= rows) {
            kvci_fail(KVC_ERANGE, "forward: row %lld uses cache row %lld outside [0, %lld)", (long long)r,
                      (long long)cr, (long long)rows);
            return NULL;
        }
        for (int64_t t = q0; t < md->cu_seq_lens_q[r]; t++) s->ws->slots[t] = cr * S + md->positions[t];
        q0 = md->cu_seq_lens_q[r];
    }
    return s->ws->slots;
}

/* Rows f32 [T, heads, dim] into t (seen as [blocks, block, heads, dim]) by
 * slot: int8 / fp8 quantised per token, each token's scale at its slot of
 * `scales`; scales NULL: a dtype stored in blocks, through its from_f32. */
static kvc_status cache_write_f32(const kvc_fwd_step *s, const kvc_layer_cache *lc, kvc_tensor *t,
                                  const kvc_tensor *scales, const float *rows, int64_t heads, int64_t dim) {
    const int64_t *slots = kvci_cache_slots(s, lc);
    if (!slots) return s->a->caches->kind == KVC_MCACHE_PAGED ? KVC_EINVAL : KVC_ERANGE;
    const kvc_model_caches *cs = s->a->caches;
    kvc_tensor c4 = *t;
    const kvc_block_layout order = cs->kind == KVC_MCACHE_PAGED ? paged_order(cs, lc, t) : KVC_BLOCK_BNBSND;
    if (order == KVC_BLOCK_BNBSND)
        c4.ndim = 4, c4.shape[2] = heads, c4.shape[3] = dim; /* [blocks, block, heads, dim] */
    const kvc_tensor upd = view(rows, 3, s->T, heads, dim);
    if (scales == NULL) return kvc_write_slots(&c4, order, &upd, slots, s->T);
    return kvc_write_slots_token_quant(&c4, order, &upd, slots, s->T, scales->data, kvci_cache_slot_count(cs, lc));
}

/* Element n of a buffer of dtype dt at base (n at a row start: whole blocks of dt), through the dtype table. */
static char *elem_at(const void *base, kvc_dtype dt, int64_t n) {
    int64_t bytes = 0;
    kvci_dtype_bytes(dt, n, &bytes);
    return (char *)base + bytes;
}

kvc_status kvci_cache_write(const kvc_fwd_step *s, const kvc_layer_cache *lc, kvc_tensor *t, const void *rows,
                            int64_t heads, int64_t dim) {
    const kvc_step_metadata *md = s->md;
    const int64_t W = heads * dim;
    if (s->a->caches->kind == KVC_MCACHE_PAGED) {
        const kvc_step_key *k = kvci_layer_key(s, lc);
        if (!k) return KVC_EINVAL;
        kvc_tensor upd = view_dt(rows, t->dtype, 3, s->T, heads, dim);
        return kvc_write_slots(t, paged_order(s->a->caches, lc, t), &upd, k->slot_mapping, s->T);
    }
    const int64_t S = t->shape[1];
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        const int64_t q1 = md->cu_seq_lens_q[r];
        const int64_t cr = s->a->cache_rows ? s->a->cache_rows[r] : r;
        if (cr < 0 || cr >= t->shape[0])
            return kvci_fail(KVC_ERANGE, "forward: row %lld uses cache row %lld outside [0, %lld)", (long long)r,
                             (long long)cr, (long long)t->shape[0]);
        kvc_tensor crow = view_dt(elem_at(t->data, t->dtype, cr * S * W), t->dtype, 3, 1, S, W);
        kvc_tensor upd = view_dt(elem_at(rows, t->dtype, q0 * W), t->dtype, 3, 1, q1 - q0, W);
        const int64_t start = md->positions[q0];
        kvc_status st = kvc_write_contiguous(&crow, &upd, &start, 1);
        if (st != KVC_OK) return st;
        q0 = q1;
    }
    return KVC_OK;
}

static void base_params(kvc_attention_params *p, const kvc_attn_call *c) {
    *p = kvc_attention_default_params();
    p->num_heads = (int32_t)c->nH;
    p->num_kv_heads = (int32_t)c->nKV;
    p->scale = c->scale;
    p->logit_softcap = c->softcap;
    p->attention_chunk_size = c->chunk;
    if (c->sinks) {
        p->sinks = view(c->sinks, 1, c->nH, 0, 0);
    }
    if (c->alibi) p->alibi_slopes = view(c->alibi, 1, c->nH, 0, 0);
    p->alibi_bf16 = c->alibi_bf16;
}

/* int8 / fp8 keys and values: the per-slot scales written with them, read
 * by slot (paged, mode 3) or as the [1, S_max] row of cache row cr
 * (contiguous, mode 1). Latent caches: the one scale of latent + rope is
 * the value's scale too. */
static void quant_params(kvc_attention_params *p, const kvc_model_caches *cs, const kvc_layer_cache *lc, bool latent,
                         int64_t cr) {
    if (!kvc_model_kv_quantised(lc->k.dtype)) return;
    const kvc_tensor *vs = latent ? &lc->k_scales : &lc->v_scales;
    const int64_t S = lc->k.shape[1], slots = kvci_cache_slot_count(cs, lc);
    if (cr < 0) {
        p->key_quant_mode = p->value_quant_mode = KVC_QUANT_PER_SLOT;
        p->key_scale = view(lc->k_scales.data, 1, slots, 0, 0);
        p->value_scale = view(vs->data, 1, slots, 0, 0);
    } else {
        p->key_quant_mode = p->value_quant_mode = KVC_QUANT_PER_TOKEN;
        p->key_scale = view((const float *)lc->k_scales.data + cr * S, 2, 1, S, 0);
        p->value_scale = view((const float *)vs->data + cr * S, 2, 1, S, 0);
    }
}

/* TND query [T, nH, D] and output [T, nH, Dv] over the step's rows (cumulative q lengths). */
static void tnd_params(kvc_attention_params *p, const kvc_fwd_step *s, const kvc_attn_call *c) {
    base_params(p, c);
    p->layout = KVC_LAYOUT_TND;
    p->batch = s->md->n_rows;
    p->q_lens = s->md->cu_seq_lens_q;
    p->q = view(c->q, 3, s->T, c->nH, c->D);
    p->out = view(c->out, 3, s->T, c->nH, c->Dv);
    kvci_attention_causal(p, c->window, false);
}

/* Over the step's own keys: k [T, nKV, D], v [T, nKV, Dv] as the layer's
 * float cache stores them (its dtype), or f32 without a cache (lc NULL). */
static kvc_status attend_packed(const kvc_fwd_step *s, const kvc_attn_call *c, const kvc_layer_cache *lc, const void *k,
                                const void *v) {
    kvc_attention_params p;
    tnd_params(&p, s, c);
    p.kv_lens = s->md->cu_seq_lens_q;
    p.kv_len_form = KVC_KV_FORM_CUMULATIVE;
    p.k = view_dt(k, lc ? lc->k.dtype : KVC_DTYPE_F32, 3, s->T, c->nKV, c->D);
    p.v = view_dt(v, lc ? lc->v.dtype : KVC_DTYPE_F32, 3, s->T, c->nKV, c->Dv);
    return run_attention(s, c, &p);
}

static kvc_status attend_paged(const kvc_fwd_step *s, const kvc_attn_call *c, const kvc_layer_cache *lc) {
    const kvc_step_key *k = kvci_layer_key(s, lc);
    if (!k) return KVC_EINVAL;
    const kvc_model_caches *cs = s->a->caches;
    const int64_t NB = lc->k.shape[0], bs = kvci_layer_block_size(cs, lc);
    if (k->block_size != bs)
        return kvci_fail(KVC_EINVAL, "forward: layer %lld cache has block size %lld but key \"%s\" uses %lld",
                         (long long)c->layer, (long long)bs, lc->key, (long long)k->block_size);
    kvc_attention_params p;
    tnd_params(&p, s, c);
    p.kv_lens = s->md->seq_lens_kv;
    p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.k = view_dt(lc->k.data, lc->k.dtype, 3, NB, bs, c->nKV * c->D);
    if (c->q_rope) { /* absorbed MLA: the latent cache is key and value, the rope cache the keys' rope part */
        p.v = p.k;
        p.k_rope = view_dt(lc->v.data, lc->v.dtype, 3, NB, bs, c->dr);
        p.q_rope = view(c->q_rope, 3, s->T, c->nH, c->dr);
    } else {
        p.v = view_dt(lc->v.data, lc->v.dtype, 3, NB, bs, c->nKV * c->Dv);
    }
    if (cs->layout == KVC_BLOCK_BNNDBS) { /* k [NB, Nkv, D, bs] keys in lanes, v [NB, Nkv, bs, Dv] */
        p.block_layout = KVC_BLOCK_BNNDBS;
        p.k = lc->k;
        p.v = lc->v;
    }
    p.kv_storage = KVC_KV_BLOCKS;
    quant_params(&p, cs, lc, c->q_rope != NULL, -1);
    kvc_tensor bt = {.data = k->block_table, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {s->md->n_rows, k->width}};
    p.block_table = bt;
    p.block_size = (int32_t)bs;
    p.binding.block_size = (int32_t)k->block_size;
    p.binding.num_kv_heads = (int32_t)c->nKV;
    return run_attention(s, c, &p);
}

static kvc_status attend_contiguous(const kvc_fwd_step *s, const kvc_attn_call *c, const kvc_layer_cache *lc) {
    const kvc_step_metadata *md = s->md;
    const int64_t S = lc->k.shape[1], KW = c->nKV * c->D, VW = c->q_rope ? c->dr : c->nKV * c->Dv;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        const int64_t q1 = md->cu_seq_lens_q[r], len = q1 - q0;
        const int64_t cr = s->a->cache_rows ? s->a->cache_rows[r] : r;
        kvc_attention_params p;
        base_params(&p, c);
        p.layout = KVC_LAYOUT_BSH;
        p.batch = 1;
        int64_t ql = len, kl = md->seq_lens_kv[r];
        p.q_lens = &ql;
        p.kv_lens = &kl;
        p.kv_len_form = KVC_KV_FORM_DIRECT;
        p.q = view(c->q + q0 * c->nH * c->D, 3, 1, len, c->nH * c->D);
        p.k = view_dt(elem_at(lc->k.data, lc->k.dtype, cr * S * KW), lc->k.dtype, 3, 1, S, KW);
        const kvc_tensor second = view_dt(elem_at(lc->v.data, lc->v.dtype, cr * S * VW), lc->v.dtype, 3, 1, S, VW);
        if (c->q_rope) {
            p.v = p.k;
            p.k_rope = second;
            p.q_rope = view(c->q_rope + q0 * c->nH * c->dr, 3, 1, len, c->nH * c->dr);
        } else {
            p.v = second;
        }
        p.out = view(c->out + q0 * c->nH * c->Dv, 3, 1, len, c->nH * c->Dv);
        kvci_attention_causal(&p, c->window, len == 1);
        quant_params(&p, s->a->caches, lc, c->q_rope != NULL, cr);
        kvc_status st = run_attention_once(s->ws, &p);
        if (st != KVC_OK) return st;
        q0 = q1;
    }
    return KVC_OK;
}

kvc_status kvci_attn_sparse(const kvc_fwd_step *s, const kvc_attn_call *c, const int32_t *slots, const int64_t *n,
                            int64_t width) {
    const kvc_model_caches *cs = s->a->caches;
    const int64_t T = s->T, KW = c->nKV * c->D, VW = c->nKV * c->Dv;
    kvc_attention_params p;
    base_params(&p, c);
    p.layout = KVC_LAYOUT_TND;
    p.sparse_mode = 0; /* one query per request: every key given */
    p.batch = T;
    p.q_lens = s->ws->dsa_cu;
    p.kv_lens = n;
    p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.q = view(c->q, 3, T, c->nH, c->D);
    p.out = view(c->out, 3, T, c->nH, c->Dv);
    p.kv_storage = KVC_KV_BLOCKS;
    p.block_size = 1;
    p.block_table = (kvc_tensor){.data = (void *)slots, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {T, width}};
    if (!cs) { /* the step's own rows [T, nKV, D] as T blocks of one token */
        p.k = view(c->k, 3, T, 1, KW);
        p.v = view(c->v, 3, T, 1, VW);
        return run_attention_once(s->ws, &p);
    }
    const kvc_layer_cache *lc = &cs->layers[c->layer];
    const int64_t NS = kvci_cache_slot_count(cs, lc); /* [NB, bs] or [rows, S_max] slots as blocks of one */
    p.k = view_dt(lc->k.data, lc->k.dtype, 3, NS, 1, KW);
    if (c->q_rope) {
        p.v = p.k;
        p.k_rope = view_dt(lc->v.data, lc->v.dtype, 3, NS, 1, c->dr);
        p.q_rope = view(c->q_rope, 3, T, c->nH, c->dr);
    } else {
        p.v = view_dt(lc->v.data, lc->v.dtype, 3, NS, 1, VW);
    }
    quant_params(&p, cs, lc, c->q_rope != NULL, -1);
    return run_attention_once(s->ws, &p);
}

kvc_status kvci_cache_write_kv(const kvc_fwd_step *s, const kvc_attn_call *c) {
    kvc_layer_cache *lc = &s->a->caches->layers[c->layer];
    const bool scales = kvc_model_kv_quantised(lc->k.dtype);
    if (scales || kvci_dtype_is_blocked(lc->k.dtype)) { /* quantised on write: scales per token or in the blocks */
        kvc_status st = cache_write_f32(s, lc, &lc->k, scales ? &lc->k_scales : NULL, c->k, c->nKV, c->D);
        return st == KVC_OK ? cache_write_f32(s, lc, &lc->v, scales ? &lc->v_scales : NULL, c->v, c->nKV, c->Dv) : st;
    }
    const void *k = kvci_cache_rows(&lc->k, c->k, s->T * c->nKV * c->D, s->ws->kc);
    const void *v = kvci_cache_rows(&lc->v, c->v, s->T * c->nKV * c->Dv, s->ws->vc);
    kvc_status st = kvci_cache_write(s, lc, &lc->k, k, c->nKV, c->D);
    return st == KVC_OK ? kvci_cache_write(s, lc, &lc->v, v, c->nKV, c->Dv) : st;
}

kvc_status kvci_attn_cached(const kvc_fwd_step *s, const kvc_attn_call *c) {
    kvc_layer_cache *lc = &s->a->caches->layers[c->layer];
    return s->a->caches->kind == KVC_MCACHE_PAGED ? attend_paged(s, c, lc) : attend_contiguous(s, c, lc);
}

kvc_status kvci_attn_core(const kvc_fwd_step *s, const kvc_attn_call *c) {
    const kvc_model_caches *caches = s->a->caches;
    double t0 = kvci_sp_begin();
    kvc_status st = KVC_OK;
    if (!caches) {
        st = attend_packed(s, c, NULL, c->k, c->v);
        kvci_sp_end(KVC_SP_ATTN, t0);
        return st;
    }
    kvc_layer_cache *lc = &caches->layers[c->layer];
    const int64_t T = s->T;
    const bool scales = kvc_model_kv_quantised(lc->k.dtype);
    if (scales || kvci_dtype_is_blocked(lc->k.dtype)) { /* quantised on write: always written, then read back */
        st = kvci_cache_write_kv(s, c);
        kvci_sp_end(KVC_SP_KV_WRITE, t0), t0 = kvci_sp_begin();
        if (st == KVC_OK) st = kvci_attn_cached(s, c);
        kvci_sp_end(KVC_SP_ATTN, t0);
        return st;
    }
    /* the keys and values as the cache stores them; fresh rows attend over
     * exactly these, so their logits equal those of a later read-back */
    const void *k = kvci_cache_rows(&lc->k, c->k, T * c->nKV * c->D, s->ws->kc);
    const void *v = kvci_cache_rows(&lc->v, c->v, T * c->nKV * c->Dv, s->ws->vc);
    kvci_sp_end(KVC_SP_KV_WRITE, t0), t0 = kvci_sp_begin();
    if (s->fresh) st = attend_packed(s, c, lc, k, v);
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    if (st == KVC_OK) st = kvci_cache_write(s, lc, &lc->k, k, c->nKV, c->D);
    if (st == KVC_OK) st = kvci_cache_write(s, lc, &lc->v, v, c->nKV, c->Dv);
    kvci_sp_end(KVC_SP_KV_WRITE, t0), t0 = kvci_sp_begin();
    if (st == KVC_OK && !s->fresh) st = kvci_attn_cached(s, c);
    kvci_sp_end(KVC_SP_ATTN, t0);
    return st;
}
