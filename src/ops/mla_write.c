/* Fused MLA cache write (AO 2.3): RMSNorm of the latent part, interleaved
 * RoPE of the rope part, both written at the token's slot (plain or NZ). */
#include <math.h>

#include "base/internal.h"
#include "kvcache/ops.h"
#include "ops/elem.h"
#include "ops/write_internal.h"

static kvc_status check_cache(const kvc_tensor *c, kvc_block_layout order, int64_t dim, const char *what,
                              kvc_paged_geom *g) {
    kvc_status st = kvci_paged_geom_of(c, order, what, g);
    if (st != KVC_OK) return st;
    if (order == KVC_BLOCK_BNNBSD)
        return kvci_fail(KVC_EINVAL, "%s: MLA caches are written in PA (BNBSND) or PA_NZ order", what);
    if (g->n_heads != 1 || g->head_dim != dim)
        return kvci_fail(KVC_EINVAL, "%s: cache must be [NB, bs, 1, %lld], got heads %lld, dim %lld", what,
                         (long long)dim, (long long)g->n_heads, (long long)g->head_dim);
    return KVC_OK;
}

/* Which quantisation the caches take: none (float caches), static or per token. */
static kvc_status check_quant(const kvc_mla_write_params *p, const kvc_paged_geom *g, bool *quant) {
    const kvc_dtype nd = p->nope_cache->dtype, rd = p->rope_cache->dtype;
    *quant = kvci_dtype_scales_beside(nd);
    if (!*quant) {
        if (!kvci_dtype_is_compute(nd) || !kvci_dtype_is_compute(rd))
            return kvci_fail(KVC_EINVAL,
                             "mla_write: cache dtypes %s / %s: float caches are f32/f16/bf16, quantised "
                             "ones both one int8/fp8 dtype",
                             kvc_dtype_name(nd), kvc_dtype_name(rd));
        if (p->nope_inv_scale || p->slot_scale)
            return kvci_fail(KVC_EINVAL, "mla_write: %s caches take no nope_inv_scale / slot_scale",
                             kvc_dtype_name(nd));
        return KVC_OK;
    }
    if (rd != nd)
        return kvci_fail(KVC_EINVAL, "mla_write: a %s nope cache needs a %s rope cache (one scale covers both), got %s",
                         kvc_dtype_name(nd), kvc_dtype_name(nd), kvc_dtype_name(rd));
    if ((p->nope_inv_scale != NULL) == (p->slot_scale != NULL))
        return kvci_fail(KVC_EINVAL,
                         "mla_write: %s caches need exactly one of nope_inv_scale (static) and slot_scale "
                         "(per token)",
                         kvc_dtype_name(nd));
    if (p->nope_inv_scale && (!isfinite(p->nope_inv_scale[0]) || p->nope_inv_scale[0] == 0.0f))
        return kvci_fail(KVC_EINVAL, "mla_write: nope_inv_scale %g must be finite and non-zero",
                         (double)p->nope_inv_scale[0]);
    if (p->slot_scale && p->n_slot_scale != g->n_blocks * g->bs)
        return kvci_fail(KVC_EINVAL,
                         "mla_write: slot_scale must hold one scale per cache slot: %lld given, NB*bs = %lld",
                         (long long)p->n_slot_scale, (long long)(g->n_blocks * g->bs));
    if (p->slot_scale) {
        const int64_t W = p->latent_dim + p->rope_dim, bad = kvci_first_nonfinite(p->kv, p->n_tokens * W);
        if (bad >= 0)
            return kvci_fail(KVC_EINVAL,
                             "mla_write: kv of token %lld, channel %lld is %g: per-token scales need finite "
                             "values",
                             (long long)(bad / W), (long long)(bad % W), (double)p->kv[bad]);
    }
    return KVC_OK;
}

/* Output lane i of token t's rotated rope part (lane i < Dr/2 rotates even input k = i, lane i >= Dr/2 odd input k). */
static float rope_out(const kvc_mla_write_params *p, int64_t t, int64_t i) {
    const int64_t Dr = p->rope_dim, k = i % (Dr / 2);
    const float *r = p->kv + t * (p->latent_dim + Dr) + p->latent_dim;
    return kvci_rope_lane(r[2 * k], r[2 * k + 1], p->cos[t * Dr + i], p->sin[t * Dr + i], i >= Dr / 2);
}

/* Stores y at element a of cache c, quantised with inv for int8/fp8 caches. */
static void store(kvc_tensor *c, int64_t a, float y, bool quant, float inv) {
    if (quant)
        kvci_quant_store(c->data, c->dtype, a, y, inv, 0.0f);
    else
        kvci_elem_store(c->data, c->dtype, a, y);
}

kvc_status kvc_mla_write(const kvc_mla_write_params *p) {
    if (!p || !p->kv || !p->gamma || !p->cos || !p->sin || !p->nope_cache || !p->rope_cache)
        return kvci_fail(KVC_EINVAL, "mla_write: kv, gamma, cos, sin and both caches are required");
    if (p->latent_dim <= 0 || p->rope_dim <= 0 || p->rope_dim % 2 != 0)
        return kvci_fail(KVC_EINVAL, "mla_write: latent_dim %lld must be > 0 and rope_dim %lld even and > 0",
                         (long long)p->latent_dim, (long long)p->rope_dim);
    if (!(p->eps >= 0.0f) || !isfinite(p->eps))
        return kvci_fail(KVC_EINVAL, "mla_write: eps %g must be finite and >= 0 (the model's norm eps)",
                         (double)p->eps);
    kvc_paged_geom gn, gr;
    kvc_status st = check_cache(p->nope_cache, p->order, p->latent_dim, "mla_write nope_cache", &gn);
    if (st != KVC_OK) return st;
    if ((st = check_cache(p->rope_cache, p->order, p->rope_dim, "mla_write rope_cache", &gr)) != KVC_OK) return st;
    if (gn.n_blocks != gr.n_blocks || gn.bs != gr.bs)
        return kvci_fail(KVC_EINVAL, "mla_write: nope and rope caches must have the same NB and bs");
    bool quant;
    if ((st = check_quant(p, &gn, &quant)) != KVC_OK) return st;
    if ((st = kvci_check_slots(p->slots, p->n_tokens, p->n_tokens, gn.n_blocks * gn.bs, gn.bs, "mla_write")) != KVC_OK)
        return st;

    const int64_t Dc = p->latent_dim, Dr = p->rope_dim, W = Dc + Dr;
    const float qmax = quant ? kvci_dtype_traits(p->nope_cache->dtype)->qmax : 0.0f;
    for (int64_t t = 0; t < p->n_tokens; t++) {
        const float *row = p->kv + t * W;
        const int64_t s = p->slots[t];
        /* outputs are computed element by element (twice with per-token scales: amax, then stores) */
        const double inv = kvci_rms_inv(row, Dc, p->eps);
        float qinv = p->nope_inv_scale ? p->nope_inv_scale[0] : 1.0f;
        if (p->slot_scale && s != KVC_SLOT_SKIP) {
            float amax = 0.0f;
            for (int64_t i = 0; i < Dc; i++) amax = fmaxf(amax, fabsf(kvci_rms_scaled(row[i], inv, p->gamma[i])));
            for (int64_t i = 0; i < Dr; i++) amax = fmaxf(amax, fabsf(rope_out(p, t, i)));
            kvci_scale_of_amax(amax, qmax, &p->slot_scale[s], &qinv);
        }
        for (int64_t i = 0; i < Dc; i++) {
            const float y = kvci_rms_scaled(row[i], inv, p->gamma[i]);
            if (p->out_nope) p->out_nope[t * Dc + i] = y;
            if (s != KVC_SLOT_SKIP) store(p->nope_cache, kvci_paged_index(&gn, s, 0, i), y, quant, qinv);
        }
        for (int64_t i = 0; i < Dr; i++) {
            const float y = rope_out(p, t, i);
            if (p->out_rope) p->out_rope[t * Dr + i] = y;
            if (s != KVC_SLOT_SKIP) store(p->rope_cache, kvci_paged_index(&gr, s, 0, i), y, quant, qinv);
        }
    }
    return KVC_OK;
}
