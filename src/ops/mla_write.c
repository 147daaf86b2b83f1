/* Fused MLA cache write (AO 2.3): RMSNorm of the latent part, interleaved
 * RoPE of the rope part, both written at the token's slot (plain or NZ). */
#include <math.h>

#include "base/internal.h"
#include "kvcache/ops.h"
#include "ops/elem.h"
#include "ops/write_internal.h"

static kvc_status check_cache(const kvc_tensor *c, kvc_block_layout order, int64_t dim, const char *what,
                              kvc_paged_geom *g)
{
    kvc_status st = kvci_paged_geom_of(c, order, what, g);
    if (st != KVC_OK) return st;
    if (order == KVC_BLOCK_BNNBSD)
        return kvci_fail(KVC_EINVAL, "%s: MLA caches are written in PA (BNBSND) or PA_NZ order", what);
    if (g->n_heads != 1 || g->head_dim != dim)
        return kvci_fail(KVC_EINVAL, "%s: cache must be [NB, bs, 1, %lld], got heads %lld, dim %lld", what,
                        (long long)dim, (long long)g->n_heads, (long long)g->head_dim);
    return KVC_OK;
}

kvc_status kvc_mla_write(const kvc_mla_write_params *p)
{
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
    if (!kvci_is_float_dtype(p->rope_cache->dtype))
        return kvci_fail(KVC_EINVAL, "mla_write: rope cache dtype %s must be f32/f16/bf16",
                        kvc_dtype_name(p->rope_cache->dtype));
    const bool quant = kvci_is_quant_dtype(p->nope_cache->dtype);
    if (quant != (p->nope_inv_scale != NULL))
        return kvci_fail(KVC_EINVAL,
                        "mla_write: an int8/fp8 nope cache needs nope_inv_scale and a float cache must not get one (cache %s)",
                        kvc_dtype_name(p->nope_cache->dtype));
    if (!quant && !kvci_is_float_dtype(p->nope_cache->dtype))
        return kvci_fail(KVC_EINVAL, "mla_write: nope cache dtype %s unsupported",
                        kvc_dtype_name(p->nope_cache->dtype));
    if (quant && (!isfinite(p->nope_inv_scale[0]) || p->nope_inv_scale[0] == 0.0f))
        return kvci_fail(KVC_EINVAL, "mla_write: nope_inv_scale %g must be finite and non-zero",
                        (double)p->nope_inv_scale[0]);
    if ((st = kvci_check_slots(p->slots, p->n_tokens, p->n_tokens, gn.n_blocks * gn.bs, gn.bs, "mla_write")) != KVC_OK)
        return st;

    const int64_t Dc = p->latent_dim, Dr = p->rope_dim, W = Dc + Dr;
    for (int64_t t = 0; t < p->n_tokens; t++) {
        const float *row = p->kv + t * W;
        const int64_t s = p->slots[t];
        /* outputs are computed element by element, so no scratch row is needed */
        const double inv = kvci_rms_inv(row, Dc, p->eps);
        for (int64_t i = 0; i < Dc; i++) {
            const float y = kvci_rms_scaled(row[i], inv, p->gamma[i]);
            if (p->out_nope) p->out_nope[t * Dc + i] = y;
            if (s == KVC_SLOT_SKIP) continue;
            const int64_t a = kvci_paged_index(&gn, s, 0, i);
            if (quant)
                kvci_quant_store(p->nope_cache->data, p->nope_cache->dtype, a, y, p->nope_inv_scale[0], 0.0f);
            else
                kvci_elem_store(p->nope_cache->data, p->nope_cache->dtype, a, y);
        }
        const float *r = row + Dc, *cs = p->cos + t * Dr, *sn = p->sin + t * Dr;
        for (int64_t i = 0; i < Dr; i++) { /* lane i < Dr/2 rotates even input k = i, lane i >= Dr/2 odd input k */
            const int64_t k = i % (Dr / 2);
            const float y = kvci_rope_lane(r[2 * k], r[2 * k + 1], cs[i], sn[i], i >= Dr / 2);
            if (p->out_rope) p->out_rope[t * Dr + i] = y;
            if (s != KVC_SLOT_SKIP)
                kvci_elem_store(p->rope_cache->data, p->rope_cache->dtype, kvci_paged_index(&gr, s, 0, i), y);
        }
    }
    return KVC_OK;
}
