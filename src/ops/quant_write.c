/* Quantising cache writes (AO 2.5 and docs/kv-dtypes.md): f32 keys/values
 * into int8 or fp8 paged caches with static scales (per tensor, head or
 * channel, e.g. calibrated with kvc_kv_quant_scales) or with a scale per
 * token computed on the fly and stored by cache slot. Every argument and
 * every value is checked before anything is written. */
#include <math.h>

#include "base/internal.h"
#include "kvcache/ops.h"
#include "ops/elem.h"
#include "ops/write_internal.h"

void kvci_quant_store(void *cache, kvc_dtype dt, int64_t idx, float x, float inv_scale, float offset) {
    if (dt == KVC_DTYPE_I8)
        ((int8_t *)cache)[idx] = kvc_quantize_i8(x, inv_scale, offset);
    else
        kvci_elem_store(cache, dt, idx, x * inv_scale); /* fp8: saturating, ties to even */
}

int8_t kvc_quantize_i8(float x, float inv_scale, float offset) {
    float y = nearbyintf(x * inv_scale + offset); /* default FP mode: ties to even */
    if (!(y == y)) return 0;
    if (y > 127.0f) return 127;
    if (y < -128.0f) return -128;
    return (int8_t)y;
}

/* Static scales: each inverse scale finite and non-zero; offsets for int8 only, each finite (an infinite or
 * NaN one wrote 127 or 0 for every value). */
static kvc_status check_inv_scales(const float *inv_scale, int64_t n, const float *offset, kvc_dtype dt,
                                   const char *what) {
    if (offset && !kvci_dtype_traits(dt)->offsets)
        return kvci_fail(KVC_EINVAL, "%s: %s caches take no offset (x * inv_scale is stored)", what,
                         kvc_dtype_name(dt));
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(inv_scale[i]) || inv_scale[i] == 0.0f)
            return kvci_fail(KVC_EINVAL, "%s: inv_scale[%lld] = %g must be finite and non-zero", what, (long long)i,
                             (double)inv_scale[i]);
    for (int64_t i = 0; offset != NULL && i < n; i++)
        if (!isfinite(offset[i]))
            return kvci_fail(KVC_EINVAL, "%s: offset[%lld] = %g must be finite", what, (long long)i, (double)offset[i]);
    return KVC_OK;
}

kvc_status kvc_write_slots_quant(kvc_tensor *cache, kvc_block_layout order, const kvc_tensor *upd, const int64_t *slots,
                                 int64_t n_slots, const float *inv_scale, const float *offset, int64_t n_quant) {
    kvc_paged_geom g;
    kvc_status st = kvci_paged_geom_of(cache, order, "write_slots_quant", &g);
    if (st != KVC_OK) return st;
    if ((st = kvci_check_upd(upd, &g, "write_slots_quant")) != KVC_OK) return st;
    if (!kvci_dtype_scales_beside(cache->dtype) || upd->dtype != KVC_DTYPE_F32)
        return kvci_fail(KVC_EINVAL, "write_slots_quant: needs an int8 or fp8 cache (got %s) and f32 upd (got %s)",
                         kvc_dtype_name(cache->dtype), kvc_dtype_name(upd->dtype));
    const int64_t H = g.n_heads * g.head_dim;
    if (!inv_scale || (n_quant != 1 && n_quant != g.n_heads && n_quant != H))
        return kvci_fail(KVC_EINVAL,
                         "write_slots_quant: %lld scales given, expected 1 (per tensor), Nkv = %lld (per head) or "
                         "Nkv*D = %lld (per channel)",
                         (long long)n_quant, (long long)g.n_heads, (long long)H);
    if ((st = check_inv_scales(inv_scale, n_quant, offset, cache->dtype, "write_slots_quant")) != KVC_OK) return st;
    if ((st = kvci_check_slots(slots, n_slots, upd->shape[0], g.n_blocks * g.bs, g.bs, "write_slots_quant")) != KVC_OK)
        return st;
    const float *x = upd->data;
    for (int64_t t = 0; t < n_slots; t++) {
        if (slots[t] == KVC_SLOT_SKIP) continue;
        for (int64_t h = 0; h < g.n_heads; h++)
            for (int64_t d = 0; d < g.head_dim; d++) {
                const int64_t ch = h * g.head_dim + d, qi = n_quant == 1 ? 0 : n_quant == H ? ch : h;
                kvci_quant_store(cache->data, cache->dtype, kvci_paged_index(&g, slots[t], h, d), x[t * H + ch],
                                 inv_scale[qi], offset ? offset[qi] : 0.0f);
            }
    }
    return KVC_OK;
}

kvc_status kvc_write_contiguous_quant(kvc_tensor *cache, const kvc_tensor *upd, const int64_t *starts, int64_t n_starts,
                                      const float *inv_scale, const float *offset, int64_t n_quant) {
    kvc_status st = kvci_check_contiguous(cache, upd, starts, n_starts, "write_contiguous_quant");
    if (st != KVC_OK) return st;
    if (!kvci_dtype_scales_beside(cache->dtype) || upd->dtype != KVC_DTYPE_F32)
        return kvci_fail(KVC_EINVAL, "write_contiguous_quant: needs an int8 or fp8 cache (got %s) and f32 upd (got %s)",
                         kvc_dtype_name(cache->dtype), kvc_dtype_name(upd->dtype));
    const int64_t B = cache->shape[0], S = cache->shape[1], H = cache->shape[2], L = upd->shape[1];
    if (!inv_scale || (n_quant != 1 && n_quant != H))
        return kvci_fail(KVC_EINVAL,
                         "write_contiguous_quant: %lld scales given, expected 1 (per tensor) or H = %lld (per channel)",
                         (long long)n_quant, (long long)H);
    if ((st = check_inv_scales(inv_scale, n_quant, offset, cache->dtype, "write_contiguous_quant")) != KVC_OK)
        return st;
    const float *x = upd->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t l = 0; l < L; l++)
            for (int64_t c = 0; c < H; c++) {
                const int64_t qi = n_quant == 1 ? 0 : c;
                kvci_quant_store(cache->data, cache->dtype, (b * S + starts[b] + l) * H + c, x[(b * L + l) * H + c],
                                 inv_scale[qi], offset ? offset[qi] : 0.0f);
            }
    return KVC_OK;
}

void kvci_scale_of_amax(float amax, float qmax, float *scale, float *inv) {
    /* below qmax / FLT_MAX, qmax / amax overflows (and amax / qmax may flush to 0): 0 * inf would store NaN */
    const bool tiny = !(amax > 0.0f) || !isfinite(qmax / amax) || amax / qmax == 0.0f;
    *scale = tiny ? 1.0f : amax / qmax;
    *inv = tiny ? 1.0f : qmax / amax;
}

static kvc_status check_f32_rows(const kvc_tensor *x, const char *what) {
    if (!x || !x->data || x->ndim != 3 || x->dtype != KVC_DTYPE_F32 || x->shape[0] < 0 || x->shape[1] <= 0 ||
        x->shape[2] <= 0)
        return kvci_fail(KVC_EINVAL, "%s: values must be an f32 tensor [T, Nkv, D] with Nkv, D > 0", what);
    const int64_t H = x->shape[1] * x->shape[2], bad = kvci_first_nonfinite(x->data, x->shape[0] * H);
    if (bad >= 0)
        return kvci_fail(KVC_EINVAL, "%s: value of token %lld, channel %lld is %g: scales need finite values", what,
                         (long long)(bad / H), (long long)(bad % H), (double)((const float *)x->data)[bad]);
    return KVC_OK;
}

kvc_status kvc_kv_quant_scales(const kvc_tensor *x, kvc_dtype cache_dtype, int64_t n_scale, float *scale,
                               float *inv_scale) {
    kvc_status st = check_f32_rows(x, "kv_quant_scales");
    if (st != KVC_OK) return st;
    if (!kvci_dtype_scales_beside(cache_dtype))
        return kvci_fail(KVC_EINVAL, "kv_quant_scales: cache dtype %s is not int8 or fp8", kvc_dtype_name(cache_dtype));
    const int64_t T = x->shape[0], N = x->shape[1], D = x->shape[2], H = N * D;
    if (n_scale != 1 && n_scale != N && n_scale != H)
        return kvci_fail(
            KVC_EINVAL,
            "kv_quant_scales: n_scale %lld must be 1 (per tensor), Nkv = %lld (per head) or Nkv*D = %lld (per channel)",
            (long long)n_scale, (long long)N, (long long)H);
    if (T == 0) return kvci_fail(KVC_EINVAL, "kv_quant_scales: no tokens to calibrate on (T = 0)");
    if (!scale || !inv_scale) return kvci_fail(KVC_EINVAL, "kv_quant_scales: scale and inv_scale must not be NULL");
    const float *v = x->data;
    const int64_t per = H / n_scale; /* consecutive channels per group */
    for (int64_t k = 0; k < n_scale; k++) {
        float amax = 0.0f;
        for (int64_t t = 0; t < T; t++)
            for (int64_t c = k * per; c < (k + 1) * per; c++) amax = fmaxf(amax, fabsf(v[t * H + c]));
        kvci_scale_of_amax(amax, kvci_dtype_traits(cache_dtype)->qmax, &scale[k], &inv_scale[k]);
    }
    return KVC_OK;
}

kvc_status kvc_write_slots_token_quant(kvc_tensor *cache, kvc_block_layout order, const kvc_tensor *upd,
                                       const int64_t *slots, int64_t n_slots, float *slot_scale, int64_t n_slot_scale) {
    kvc_paged_geom g;
    kvc_status st = kvci_paged_geom_of(cache, order, "write_slots_token_quant", &g);
    if (st != KVC_OK) return st;
    if ((st = kvci_check_upd(upd, &g, "write_slots_token_quant")) != KVC_OK) return st;
    if (!kvci_dtype_scales_beside(cache->dtype))
        return kvci_fail(KVC_EINVAL, "write_slots_token_quant: needs an int8 or fp8 cache, got %s",
                         kvc_dtype_name(cache->dtype));
    if ((st = check_f32_rows(upd, "write_slots_token_quant")) != KVC_OK) return st;
    const int64_t cap = g.n_blocks * g.bs;
    if (!slot_scale || n_slot_scale != cap)
        return kvci_fail(
            KVC_EINVAL,
            "write_slots_token_quant: slot_scale must hold one scale per cache slot: %lld given, NB*bs = %lld",
            (long long)n_slot_scale, (long long)cap);
    if ((st = kvci_check_slots(slots, n_slots, upd->shape[0], cap, g.bs, "write_slots_token_quant")) != KVC_OK)
        return st;
    const int64_t H = g.n_heads * g.head_dim;
    const float *x = upd->data, qmax = kvci_dtype_traits(cache->dtype)->qmax;
    for (int64_t t = 0; t < n_slots; t++) {
        if (slots[t] == KVC_SLOT_SKIP) continue;
        float amax = 0.0f, inv;
        for (int64_t c = 0; c < H; c++) amax = fmaxf(amax, fabsf(x[t * H + c]));
        kvci_scale_of_amax(amax, qmax, &slot_scale[slots[t]], &inv);
        for (int64_t h = 0; h < g.n_heads; h++)
            for (int64_t d = 0; d < g.head_dim; d++)
                kvci_quant_store(cache->data, cache->dtype, kvci_paged_index(&g, slots[t], h, d),
                                 x[t * H + h * g.head_dim + d], inv, 0.0f);
    }
    return KVC_OK;
}
