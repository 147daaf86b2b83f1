/* DeepseekV3 MLA attention (MF 4.2-4.4). Without a cache or with full-form
 * caches: per-head keys [k_nope | k_pe] and values expanded through kv_b_proj
 * (the non-absorbed form). With latent caches: the normalised latent and the
 * rotated k_pe are cached and attention runs in the absorbed form. */
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "model/gemm.h"
#include "model/mla_internal.h"

#define DS_LATENT_EPS 1e-6f /* q_a_layernorm / kv_a_layernorm class default (MF 1.2) */

static void rope_rows(const kvc_fwd_step *s, float *x, int64_t n_heads, int64_t head_stride, int64_t row_stride)
{
    const kvc_model *m = s->m;
    for (int64_t t = 0; t < s->T; t++) {
        const int64_t p = s->md->positions[t];
        if (m->cfg.rope_interleave) kvc_rope_interleaved(m, x + t * row_stride, n_heads, head_stride, p, s->ws->rope_tmp);
        else kvc_rope_half(m, x + t * row_stride, n_heads, head_stride, p);
    }
}

/* Non-absorbed: k [T, nH, dq], v [T, nH, dv] from the latent, then plain attention. */
static kvc_status expanded(const kvc_fwd_step *s, int64_t l, const float *ckv /* [T, rkv + dr] */)
{
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, nH = c->num_heads, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const int64_t dn = c->qk_nope_head_dim, dv = c->v_head_dim, dq = dn + dr, KVW = nH * (dn + dv);
    float *kv = ws->mla_b; /* [T, nH, dn + dv] */
    kvc_gemm_nt(T, KVW, rkv, ckv, rkv + dr, w->wkvb, rkv, NULL, kv, KVW);
    float *k = ws->k; /* [T, nH, dq] */
    float *v = ws->v; /* [T, nH, dv] */
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < nH; h++) {
            const float *src = kv + t * KVW + h * (dn + dv);
            memcpy(k + (t * nH + h) * dq, src, (size_t)dn * sizeof(float));
            memcpy(k + (t * nH + h) * dq + dn, ckv + t * (rkv + dr) + rkv, (size_t)dr * sizeof(float));
            memcpy(v + (t * nH + h) * dv, src + dn, (size_t)dv * sizeof(float));
        }
    kvc_attn_call call = {.layer = l, .q = ws->q, .k = k, .v = v, .nH = nH, .nKV = nH, .D = dq, .Dv = dv,
                          .scale = kvc_model_attn_scale(c), .window = 0, .sinks = NULL, .out = ws->att};
    return kvc_attn_core(s, &call);
}

/* Absorbed over the latent caches; leaves o [T, nH * dv] in ws->att. */
static kvc_status absorbed(const kvc_fwd_step *s, int64_t l, const float *ckv /* [T, rkv + dr] */)
{
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const kvc_model_caches *caches = s->a->caches;
    kvc_layer_cache *lc = &caches->layers[l];
    const int64_t T = s->T, nH = c->num_heads, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const int64_t dn = c->qk_nope_head_dim, dv = c->v_head_dim, dq = dn + dr;
    float *lat = ws->k;  /* [T, rkv] */
    float *rope = ws->v; /* [T, dr] */
    for (int64_t t = 0; t < T; t++) {
        memcpy(lat + t * rkv, ckv + t * (rkv + dr), (size_t)rkv * sizeof(float));
        memcpy(rope + t * dr, ckv + t * (rkv + dr) + rkv, (size_t)dr * sizeof(float));
    }
    kvc_status st = kvc_cache_write(s, lc, &lc->k, lat, 1, rkv);
    if (st == KVC_OK) st = kvc_cache_write(s, lc, &lc->v, rope, 1, dr);
    if (st != KVC_OK) return st;
    float *qlat = ws->mla_b; /* [T, nH, rkv] = q_nope_h . W_UK^h */
    for (int64_t h = 0; h < nH; h++)
        kvc_gemm_nt(T, rkv, dn, ws->q + h * dq, nH * dq, w->wuk_t + h * rkv * dn, dn, NULL, qlat + h * rkv, nH * rkv);
    kvc_latent_call lcall = {.md = s->md, .n_heads = nH, .rkv = rkv, .dr = dr, .scale = kvc_model_attn_scale(c),
                             .q_lat = qlat, .q_pe = ws->q + dn, .q_pe_stride = nH * dq, .q_pe_head_stride = dq,
                             .latent = lc->k.data, .rope = lc->v.data, .max_kv = ws->max_kv_len, .out = ws->att};
    if (caches->kind == KVC_MCACHE_PAGED) {
        const kvc_step_key *key = kvc_step_metadata_key(s->md, lc->key);
        if (!key || !key->block_table)
            return kvc_fail(KVC_EINVAL, "forward: the step has no block table for manager key \"%s\" (layer %lld)", lc->key,
                            (long long)l);
        lcall.block_table = key->block_table;
        lcall.table_width = key->width;
        lcall.block_size = lc->k.shape[1];
        lcall.n_blocks = lc->k.shape[0];
    } else {
        lcall.cache_row = s->a->cache_rows ? s->a->cache_rows : ws->lens_a;
        lcall.n_cache_rows = lc->k.shape[0];
        lcall.seq_cap = lc->k.shape[1];
    }
    st = kvc_mla_latent_check(&lcall);
    if (st != KVC_OK) return st;
    kvc_mla_latent_attend(&lcall, ws->scores);
    /* o_h = W_UV^h . o_lat_h, W_UV^h = kv_b rows [h(dn+dv) + dn, (h+1)(dn+dv)) : [dv, rkv] */
    float *o = ws->mla_b; /* [T, nH, dv] (q_lat is dead now) */
    for (int64_t h = 0; h < nH; h++)
        kvc_gemm_nt(T, dv, rkv, ws->att + h * rkv, nH * rkv, w->wkvb + (h * (dn + dv) + dn) * rkv, rkv, NULL, o + h * dv,
                    nH * dv);
    memcpy(ws->att, o, (size_t)(T * nH * dv) * sizeof(float));
    return KVC_OK;
}

kvc_status kvc_attn_mla(const kvc_fwd_step *s, int64_t l)
{
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = c->hidden_size, nH = c->num_heads, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const int64_t dn = c->qk_nope_head_dim, dv = c->v_head_dim, dq = dn + dr, rq = c->q_lora_rank;
    float *q = ws->q; /* [T, nH, dq] = [nope | pe] per head */
    if (rq > 0) {
        float *cq = ws->mla_a; /* [T, rq] */
        kvc_linear(ws->xn, T, H, w->wqa, w->bqa, rq, cq);
        kvc_rmsnorm_rows(cq, T, rq, rq, w->qa_norm, DS_LATENT_EPS);
        kvc_linear(cq, T, rq, w->wqb, NULL, nH * dq, q);
    } else {
        kvc_linear(ws->xn, T, H, w->wq, NULL, nH * dq, q);
    }
    float *ckv = ws->mla_a; /* [T, rkv + dr] = [latent | k_pe] */
    kvc_linear(ws->xn, T, H, w->wkva, w->bkva, rkv + dr, ckv);
    kvc_rmsnorm_rows(ckv, T, rkv, rkv + dr, w->kva_norm, DS_LATENT_EPS);
    rope_rows(s, q + dn, nH, dq, nH * dq);
    rope_rows(s, ckv + rkv, 1, dr, rkv + dr);
    const bool latent = s->a->caches && s->a->caches->latent;
    kvc_status st = latent ? absorbed(s, l, ckv) : expanded(s, l, ckv);
    if (st != KVC_OK) return st;
    kvc_linear(ws->att, T, nH * dv, w->wo, w->bo, H, ws->proj);
    return KVC_OK;
}
