/* Fused MLA cache write (AO 2.3): RMSNorm of the latent part, interleaved
 * RoPE of the rope part, both written at the token's slot (plain or NZ). */
#include <math.h>

#include "base/internal.h"
#include "kvcache/ops.h"
#include "ops/elem.h"
#include "ops/write_internal.h"

/* 1 / sqrt(mean(x^2) + eps), accumulated in double. x: [n] */
static double rms_inv(const float *x, int64_t n, float eps)
{
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    return 1.0 / sqrt(ss / (double)n + (double)eps);
}

/* Output lane i of the interleaved RoPE: lanes [0, n/2) hold the rotated
 * even inputs x1, lanes [n/2, n) the rotated odd inputs x2. r, cs, sn: [n] */
static float rope_lane(const float *r, const float *cs, const float *sn, int64_t n, int64_t i)
{
    const int64_t h = n / 2, k = i % h;
    const float x1 = r[2 * k], x2 = r[2 * k + 1];
    return i < h ? x1 * cs[i] - x2 * sn[i] : x2 * cs[i] + x1 * sn[i];
}

void kvc_rmsnorm_f32(const float *x, const float *gamma, int64_t n, float eps, float *y)
{
    const double inv = rms_inv(x, n, eps);
    for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * inv * (double)gamma[i]);
}

void kvc_rope_interleaved_f32(const float *r, const float *cos, const float *sin, int64_t n, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = rope_lane(r, cos, sin, n, i);
}

static kvc_status check_cache(const kvc_tensor *c, kvc_paged_order order, int64_t dim, const char *what,
                              kvc_paged_geom *g)
{
    kvc_status st = kvc_paged_geom_of(c, order, what, g);
    if (st != KVC_OK) return st;
    if (order == KVC_PAGED_BNNBSD)
        return kvc_fail(KVC_EINVAL, "%s: MLA caches are written in PA (BNBSND) or PA_NZ order", what);
    if (g->n_heads != 1 || g->head_dim != dim)
        return kvc_fail(KVC_EINVAL, "%s: cache must be [NB, bs, 1, %lld], got heads %lld, dim %lld", what,
                        (long long)dim, (long long)g->n_heads, (long long)g->head_dim);
    return KVC_OK;
}

kvc_status kvc_mla_write(const kvc_mla_write_params *p)
{
    if (!p || !p->kv || !p->gamma || !p->cos || !p->sin || !p->nope_cache || !p->rope_cache)
        return kvc_fail(KVC_EINVAL, "mla_write: kv, gamma, cos, sin and both caches are required");
    if (p->latent_dim <= 0 || p->rope_dim <= 0 || p->rope_dim % 2 != 0)
        return kvc_fail(KVC_EINVAL, "mla_write: latent_dim %lld must be > 0 and rope_dim %lld even and > 0",
                        (long long)p->latent_dim, (long long)p->rope_dim);
    if (!(p->eps >= 0.0f) || !isfinite(p->eps))
        return kvc_fail(KVC_EINVAL, "mla_write: eps %g must be finite and >= 0 (the model's norm eps)",
                        (double)p->eps);
    kvc_paged_geom gn, gr;
    kvc_status st = check_cache(p->nope_cache, p->order, p->latent_dim, "mla_write nope_cache", &gn);
    if (st != KVC_OK) return st;
    if ((st = check_cache(p->rope_cache, p->order, p->rope_dim, "mla_write rope_cache", &gr)) != KVC_OK) return st;
    if (gn.n_blocks != gr.n_blocks || gn.bs != gr.bs)
        return kvc_fail(KVC_EINVAL, "mla_write: nope and rope caches must have the same NB and bs");
    if (!kvc_is_float_dtype(p->rope_cache->dtype))
        return kvc_fail(KVC_EINVAL, "mla_write: rope cache dtype %s must be f32/f16/bf16",
                        kvc_dtype_name(p->rope_cache->dtype));
    const bool quant = p->nope_cache->dtype == KVC_DTYPE_I8;
    if (quant != (p->nope_inv_scale != NULL))
        return kvc_fail(KVC_EINVAL,
                        "mla_write: an int8 nope cache needs nope_inv_scale and a float cache must not get one (cache %s)",
                        kvc_dtype_name(p->nope_cache->dtype));
    if (!quant && !kvc_is_float_dtype(p->nope_cache->dtype))
        return kvc_fail(KVC_EINVAL, "mla_write: nope cache dtype %s unsupported",
                        kvc_dtype_name(p->nope_cache->dtype));
    if (quant && (!isfinite(p->nope_inv_scale[0]) || p->nope_inv_scale[0] == 0.0f))
        return kvc_fail(KVC_EINVAL, "mla_write: nope_inv_scale %g must be finite and non-zero",
                        (double)p->nope_inv_scale[0]);
    if ((st = kvc_check_slots(p->slots, p->n_tokens, p->n_tokens, gn.n_blocks * gn.bs, gn.bs, "mla_write")) != KVC_OK)
        return st;

    const int64_t Dc = p->latent_dim, Dr = p->rope_dim, W = Dc + Dr;
    for (int64_t t = 0; t < p->n_tokens; t++) {
        const float *row = p->kv + t * W;
        const int64_t s = p->slots[t];
        /* outputs are computed element by element, so no scratch row is needed */
        const double inv = rms_inv(row, Dc, p->eps);
        for (int64_t i = 0; i < Dc; i++) {
            const float y = (float)((double)row[i] * inv * (double)p->gamma[i]);
            if (p->out_nope) p->out_nope[t * Dc + i] = y;
            if (s == KVC_SLOT_SKIP) continue;
            const int64_t a = kvc_paged_index(&gn, s, 0, i);
            if (quant)
                ((int8_t *)p->nope_cache->data)[a] = kvc_quantize_i8(y, p->nope_inv_scale[0], 0.0f);
            else
                kvc_elem_store(p->nope_cache->data, p->nope_cache->dtype, a, y);
        }
        const float *r = row + Dc, *cs = p->cos + t * Dr, *sn = p->sin + t * Dr;
        for (int64_t i = 0; i < Dr; i++) {
            const float y = rope_lane(r, cs, sn, Dr, i);
            if (p->out_rope) p->out_rope[t * Dr + i] = y;
            if (s != KVC_SLOT_SKIP)
                kvc_elem_store(p->rope_cache->data, p->rope_cache->dtype, kvc_paged_index(&gr, s, 0, i), y);
        }
    }
    return KVC_OK;
}
