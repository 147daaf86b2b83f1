/* DeepseekV3 MLA attention (MF 4.2-4.4). Without a cache or with full-form
 * caches: per-head keys [k_nope | k_pe] and values expanded through kv_b_proj
 * (the non-absorbed form). With latent caches: the normalised latent and the
 * rotated k_pe are written by the ops layer's fused RMSNorm + RoPE + write
 * (for both RoPE forms, int8 / fp8 with a scale per token) and
 * kvc_attention_cpu runs the absorbed form over them: queries q_nope . W_UK
 * against the latent, q_pe against the rope cache, values the latent, then
 * W_UV per head. With DeepSeek sparse attention (index_topk) each query attends to its chosen keys alone
 * (attn_dsa.c). HY V4's: per-head sinks (attn_sinks) and the output times sigmoid(self_attn.gate_proj x) [T, nH, dv]
 * (attn_gate_proj) before o_proj. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "model/gemm.h"

#define DS_LATENT_EPS 1e-6f /* q_a_layernorm / kv_a_layernorm class default (MF 1.2) */

/* x [n] times f (LongCat-Flash's scales; 0: none). */
static void scale_by(float *x, int64_t n, double f) {
    for (int64_t i = 0; f != 0.0 && i < n; i++) x[i] *= (float)f;
}

/* kv_a output [T, rkv + dr] -> normalised latent (times mla_kv_scale) and rotated k_pe in place. */
static void norm_rope_latent(const kvc_fwd_step *s, int64_t l, float *ckv) {
    const kvc_model_config *c = &s->m->cfg;
    const int64_t rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    kvc_rmsnorm_rows_f32(ckv, s->T, rkv, rkv + dr, s->m->layers[l].kva_norm, DS_LATENT_EPS);
    for (int64_t t = 0; t < s->T; t++) scale_by(ckv + t * (rkv + dr), rkv, c->mla_kv_scale);
    kvci_fwd_rope(s, ckv + rkv, 1, dr, rkv + dr);
}

/* Non-absorbed: k [T, nH, dq], v [T, nH, dv] from the latent, then plain attention. */
static kvc_status expanded(const kvc_fwd_step *s, int64_t l, float *ckv /* [T, rkv + dr] */) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, nH = c->num_heads, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const int64_t dn = c->qk_nope_head_dim, dv = c->v_head_dim, dq = dn + dr, KVW = nH * (dn + dv);
    norm_rope_latent(s, l, ckv);
    float *kv = ws->mla_b; /* [T, nH, dn + dv] */
    kvci_gemm_nt(T, KVW, rkv, ckv, rkv + dr, w->wkvb, rkv, NULL, kv, KVW);
    float *k = ws->k; /* [T, nH, dq] */
    float *v = ws->v; /* [T, nH, dv] */
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < nH; h++) {
            const float *src = kv + t * KVW + h * (dn + dv);
            memcpy(k + (t * nH + h) * dq, src, (size_t)dn * sizeof(float));
            memcpy(k + (t * nH + h) * dq + dn, ckv + t * (rkv + dr) + rkv, (size_t)dr * sizeof(float));
            memcpy(v + (t * nH + h) * dv, src + dn, (size_t)dv * sizeof(float));
        }
    kvc_attn_call call = {.layer = l,
                          .q = ws->q,
                          .k = k,
                          .v = v,
                          .nH = nH,
                          .nKV = nH,
                          .D = dq,
                          .Dv = dv,
                          .scale = kvc_model_attn_scale(c),
                          .window = 0,
                          .sinks = w->sinks, /* HY V4's (attn_sinks), else NULL */
                          .out = ws->att};
    return c->index_topk > 0 ? kvci_dsa_attend(s, &call) : kvci_attn_core(s, &call);
}

/* A latent cache tensor as the 4-D [blocks, block, 1, dim] the MLA write takes. */
static kvc_tensor as_blocks(const kvc_tensor *t) {
    kvc_tensor b = *t;
    if (t->ndim == 3) b.ndim = 4, b.shape[2] = 1, b.shape[3] = t->shape[2];
    return b;
}

/* The fused op (RMSNorm + RoPE + write; int8 / fp8 with one scale per token
 * over latent + rope) for either RoPE form: the interleaved op applied to
 * half-split lanes rearranged as pairs (x[i], x[i + dr/2]) computes exactly
 * the half-split rotation, so the rope part is rearranged in place first. */
static kvc_status write_latent(const kvc_fwd_step *s, int64_t l, float *ckv /* [T, rkv + dr] */) {
    const kvc_model_config *c = &s->m->cfg;
    kvc_model_workspace *ws = s->ws;
    kvc_layer_cache *lc = &s->a->caches->layers[l];
    const int64_t T = s->T, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const int64_t *slots = kvci_cache_slots(s, lc);
    if (!slots) return s->a->caches->kind == KVC_MCACHE_PAGED ? KVC_EINVAL : KVC_ERANGE;
    if (c->rope_form == KVC_ROPE_HALF)
        for (int64_t t = 0; t < T; t++) {
            float *r = ckv + t * (rkv + dr) + rkv;
            for (int64_t i = 0; i < dr / 2; i++) ws->rope_tmp[2 * i] = r[i], ws->rope_tmp[2 * i + 1] = r[i + dr / 2];
            memcpy(r, ws->rope_tmp, (size_t)dr * sizeof(float));
        }
    kvc_tensor nope = as_blocks(&lc->k), rope = as_blocks(&lc->v);
    const bool quant = kvc_model_kv_quantised(lc->k.dtype);
    const kvc_mla_write_params p = {.kv = ckv,
                                    .gamma = s->m->layers[l].kva_norm,
                                    .cos = s->cos,
                                    .sin = s->sin,
                                    .slots = slots,
                                    .n_tokens = T,
                                    .latent_dim = rkv,
                                    .rope_dim = dr,
                                    .eps = DS_LATENT_EPS,
                                    .order = KVC_BLOCK_BNBSND,
                                    .nope_cache = &nope,
                                    .rope_cache = &rope,
                                    .slot_scale = quant ? lc->k_scales.data : NULL,
                                    .n_slot_scale = quant ? nope.shape[0] * nope.shape[1] : 0};
    return kvc_mla_write(&p);
}

/* Absorbed over the latent caches; leaves o [T, nH * dv] in ws->att. */
static kvc_status absorbed(const kvc_fwd_step *s, int64_t l, float *ckv /* [T, rkv + dr] */) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, nH = c->num_heads, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const int64_t dn = c->qk_nope_head_dim, dv = c->v_head_dim, dq = dn + dr;
    kvc_status st = write_latent(s, l, ckv);
    if (st != KVC_OK) return st;
    float *qlat = ws->mla_b; /* [T, nH, rkv] = q_nope_h . W_UK^h */
    for (int64_t h = 0; h < nH; h++)
        kvci_gemm_nt(T, rkv, dn, ws->q + h * dq, nH * dq, w->wuk_t + h * rkv * dn, dn, NULL, qlat + h * rkv, nH * rkv);
    scale_by(qlat, T * nH * rkv, c->mla_kv_scale); /* the cache holds the latent unscaled: its scale on both sides */
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < nH; h++)
            memcpy(ws->q_rope + (t * nH + h) * dr, ws->q + (t * nH + h) * dq + dn, (size_t)dr * sizeof(float));
    kvc_attn_call call = {.layer = l,
                          .q = qlat,
                          .nH = nH,
                          .nKV = 1,
                          .D = rkv,
                          .Dv = rkv,
                          .scale = kvc_model_attn_scale(c),
                          .q_rope = ws->q_rope,
                          .dr = dr,
                          .sinks = w->sinks,
                          .out = ws->att};
    st = c->index_topk > 0 ? kvci_dsa_attend(s, &call) : kvci_attn_cached(s, &call); /* ws->att [T, nH, rkv] */
    if (st != KVC_OK) return st;
    /* o_h = W_UV^h . o_lat_h, W_UV^h = kv_b rows [h(dn+dv) + dn, (h+1)(dn+dv)) : [dv, rkv] */
    float *o = ws->mla_b; /* [T, nH, dv] (q_lat is dead now) */
    for (int64_t h = 0; h < nH; h++)
        kvci_gemm_nt(T, dv, rkv, ws->att + h * rkv, nH * rkv, w->wkvb + (h * (dn + dv) + dn) * rkv, rkv, NULL,
                     o + h * dv, nH * dv);
    memcpy(ws->att, o, (size_t)(T * nH * dv) * sizeof(float));
    scale_by(ws->att, T * nH * dv, c->mla_kv_scale);
    return KVC_OK;
}

/* A.X-K2's queries and output gates (mla_q_gate): q_gate_proj over [normalised | raw] q latent gives each head's
 * [query dq | gate dv]; the query into ws->q [T, nH, dq], the gate into ws->gate [T, nH, dv]. cq [T, rq] holds the
 * raw latent on entry and the normalised one on return (the indexer reads it); cat [T, 2 rq] follows it in mla_a. */
static kvc_status q_gate(const kvc_fwd_step *s, int64_t l, float *cq) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, nH = c->num_heads, rq = c->q_lora_rank, dq = c->qk_nope_head_dim + c->qk_rope_head_dim;
    const int64_t dv = c->v_head_dim, dg = dq + dv;
    float *cat = cq + T * rq, *qg = ws->fused; /* [T, 2 rq], [T, nH, dq + dv] */
    for (int64_t t = 0; t < T; t++) memcpy(cat + t * 2 * rq + rq, cq + t * rq, (size_t)rq * sizeof(float));
    kvc_rmsnorm_rows_f32(cq, T, rq, rq, w->qa_norm, DS_LATENT_EPS);
    for (int64_t t = 0; t < T; t++) memcpy(cat + t * 2 * rq, cq + t * rq, (size_t)rq * sizeof(float));
    KVC_TRY(kvci_linear(cat, T, &w->wqg, NULL, qg));
    for (int64_t i = 0; i < T * nH; i++) {
        memcpy(ws->q + i * dq, qg + i * dg, (size_t)dq * sizeof(float));
        memcpy(ws->gate + i * dv, qg + i * dg + dq, (size_t)dv * sizeof(float));
    }
    return KVC_OK;
}

kvc_status kvci_attn_mla(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, nH = c->num_heads, dr = c->qk_rope_head_dim;
    const int64_t dn = c->qk_nope_head_dim, dq = dn + dr, rq = c->q_lora_rank;
    float *q = ws->q; /* [T, nH, dq] = [nope | pe] per head */
    if (rq > 0) {
        float *cq = ws->mla_a; /* [T, rq] */
        KVC_TRY(kvci_linear(ws->xn, T, &w->wqa, w->bqa, cq));
        if (c->mla_q_gate) {
            KVC_TRY(q_gate(s, l, cq));
        } else {
            kvc_rmsnorm_rows_f32(cq, T, rq, rq, w->qa_norm, DS_LATENT_EPS);
            KVC_TRY(kvci_linear(cq, T, &w->wqb, NULL, q));
        }
        if (c->index_topk > 0) KVC_TRY(kvci_dsa_select(s, l, cq)); /* before ckv takes mla_a */
    } else {
        KVC_TRY(kvci_linear(ws->xn, T, &w->wq, NULL, q));
    }
    scale_by(q, T * nH * dq, c->mla_q_scale);
    kvci_fwd_rope(s, q + dn, nH, dq, nH * dq);
    if (c->attn_gate_proj) KVC_TRY(kvci_linear(ws->xn, T, &w->wg, NULL, ws->gate)); /* HY V4's [T, nH, dv] */
    float *ckv = ws->mla_a; /* [T, rkv + dr] = [latent | k_pe], not yet normalised / rotated */
    KVC_TRY(kvci_linear(ws->xn, T, &w->wkva, w->bkva, ckv));
    const bool latent = s->a->caches && s->a->caches->latent;
    kvc_status st = latent ? absorbed(s, l, ckv) : expanded(s, l, ckv);
    if (st != KVC_OK) return st;
    const bool gated = c->mla_q_gate || c->attn_gate_proj;
    for (int64_t i = 0; gated && i < T * nH * c->v_head_dim; i++) /* ws->att [T, nH, dv] */
        ws->att[i] *= 1.0f / (1.0f + expf(-ws->gate[i]));
    return kvci_linear(ws->att, T, &w->wo, w->bo, ws->proj);
}
