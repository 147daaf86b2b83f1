/* RoPE, the one implementation of the library: frequency plans (default,
 * linear, llama3, YaRN, longrope), cos/sin of a position, and the half-split, interleaved (DeepSeek's)
 * and pairwise (GLM-4's, Cohere's) rotations used by the fused MLA write and by the model. Angles are f32
 * products pos * inv_freq[i] as in HF transformers. */
#include <math.h>

#include "base/internal.h"
#include "kvcache/ops.h"
#include "ops/write_internal.h"

#define KVC_PI 3.14159265358979323846

static kvc_status check_plan(const kvc_rope_config *r, int64_t rot_dim) {
    if (!r) return kvci_fail(KVC_EINVAL, "rope: the plan must not be NULL");
    if (rot_dim <= 0 || rot_dim % 2 != 0)
        return kvci_fail(KVC_EINVAL, "rope: rot_dim %lld must be even and > 0", (long long)rot_dim);
    if (!(r->theta > 0.0) || !isfinite(r->theta))
        return kvci_fail(KVC_EINVAL, "rope: theta %g must be finite and > 0", r->theta);
    if (r->type == KVC_ROPE_LLAMA3) {
        if (!(r->factor > 0.0) || !isfinite(r->factor) || r->original_max_position <= 0 ||
            !(r->low_freq_factor > 0.0) || !(r->high_freq_factor >= r->low_freq_factor) ||
            !isfinite(r->high_freq_factor))
            return kvci_fail(KVC_EINVAL,
                             "rope llama3: factor %g and original_max_position %lld must be > 0, and 0 < "
                             "low_freq_factor %g <= high_freq_factor %g",
                             r->factor, (long long)r->original_max_position, r->low_freq_factor, r->high_freq_factor);
    } else if (r->type == KVC_ROPE_YARN) {
        if (!(r->factor > 0.0) || !isfinite(r->factor) || r->original_max_position <= 0 || !(r->beta_fast > 0.0) ||
            !(r->beta_slow > 0.0) || !isfinite(r->beta_fast) || !isfinite(r->beta_slow) || !(r->theta > 1.0))
            return kvci_fail(KVC_EINVAL,
                             "rope yarn: factor %g, original_max_position %lld, beta_fast %g and beta_slow %g must be "
                             "finite and > 0, theta %g > 1",
                             r->factor, (long long)r->original_max_position, r->beta_fast, r->beta_slow, r->theta);
        if (!isfinite(r->attention_factor) || r->attention_factor < 0.0 || !isfinite(r->mscale) ||
            !isfinite(r->mscale_all_dim))
            return kvci_fail(KVC_EINVAL,
                             "rope yarn: attention_factor %g (>= 0), mscale %g and mscale_all_dim %g must be finite",
                             r->attention_factor, r->mscale, r->mscale_all_dim);
    } else if (r->type == KVC_ROPE_LONGROPE) {
        if (r->n_short_factors != rot_dim / 2 || r->n_long_factors != rot_dim / 2 || r->original_max_position <= 0)
            return kvci_fail(KVC_EINVAL,
                             "rope longrope: short_factor (%d) and long_factor (%d) must hold rot_dim / 2 = %lld "
                             "entries each, original_max_position %lld must be > 0",
                             (int)r->n_short_factors, (int)r->n_long_factors, (long long)(rot_dim / 2),
                             (long long)r->original_max_position);
        if (!isfinite(r->attention_factor) || r->attention_factor < 0.0 || !(r->factor > 0.0) || !isfinite(r->factor))
            return kvci_fail(KVC_EINVAL, "rope longrope: attention_factor %g (>= 0) and factor %g (> 0) must be finite",
                             r->attention_factor, r->factor);
        for (int64_t i = 0; i < rot_dim / 2; i++)
            if (!(r->short_factor[i] > 0.0f) || !isfinite(r->short_factor[i]) || !(r->long_factor[i] > 0.0f) ||
                !isfinite(r->long_factor[i]))
                return kvci_fail(KVC_EINVAL,
                                 "rope longrope: short_factor[%lld] %g and long_factor[%lld] %g must be "
                                 "finite and > 0",
                                 (long long)i, (double)r->short_factor[i], (long long)i, (double)r->long_factor[i]);
    } else if (r->type == KVC_ROPE_LINEAR || r->type == KVC_ROPE_PROPORTIONAL) {
        if (!(r->factor > 0.0) || !isfinite(r->factor))
            return kvci_fail(KVC_EINVAL, "rope %s: factor %g must be finite and > 0",
                             r->type == KVC_ROPE_LINEAR ? "linear" : "proportional", r->factor);
        if (r->type == KVC_ROPE_PROPORTIONAL && !(r->partial_rotary_factor >= 0.0 && r->partial_rotary_factor <= 1.0))
            return kvci_fail(KVC_EINVAL, "rope proportional: partial_rotary_factor %g must be in [0, 1] (0: 1)",
                             r->partial_rotary_factor);
    } else if (r->type != KVC_ROPE_DEFAULT) {
        return kvci_fail(KVC_EINVAL,
                         "rope: type %d unknown or not computed (default, linear, llama3, yarn, longrope, "
                         "proportional)",
                         (int)r->type);
    }
    return KVC_OK;
}

/* llama3: wavelengths above L0 / low_freq_factor divided by the factor,
 * below L0 / high_freq_factor kept, a smooth blend in between (none when the
 * two factors are equal, as Llama 4 Scout's: every wavelength up to L0 kept). */
static void llama3_scale(const kvc_rope_config *r, int64_t half, float *inv) {
    const double L0 = (double)r->original_max_position, f = r->factor;
    const double low_wl = L0 / r->low_freq_factor, high_wl = L0 / r->high_freq_factor;
    for (int64_t i = 0; i < half; i++) {
        const double w = (double)inv[i], wl = 2.0 * KVC_PI / w;
        double v = w;
        if (wl > low_wl) {
            v = w / f;
        } else if (wl >= high_wl && r->high_freq_factor > r->low_freq_factor) {
            const double s = (L0 / wl - r->low_freq_factor) / (r->high_freq_factor - r->low_freq_factor);
            v = (1.0 - s) * w / f + s * w;
        }
        inv[i] = (float)v;
    }
}

double kvc_rope_attention_factor(const kvc_rope_config *r) {
    if (r == NULL) return NAN;
    if (r->type == KVC_ROPE_LONGROPE) { /* sqrt(1 + ln f / ln L0), as transformers derives it */
        if (r->attention_factor > 0) return r->attention_factor;
        if (!(r->factor > 1.0) || r->original_max_position <= 1) return 1.0;
        return sqrt(1.0 + log(r->factor) / log((double)r->original_max_position));
    }
    if (r->type != KVC_ROPE_YARN) return 1.0;
    if (r->attention_factor > 0) return r->attention_factor;
    if (r->mscale != 0.0 && r->mscale_all_dim != 0.0)
        return kvc_yarn_mscale(r->factor, r->mscale) / kvc_yarn_mscale(r->factor, r->mscale_all_dim);
    return kvc_yarn_mscale(r->factor, 1.0);
}

/* YaRN: a linear ramp over the dimensions between the correction range of
 * beta_fast and beta_slow blends interpolation and extrapolation. */
static void yarn_scale(const kvc_rope_config *r, int64_t d, float *inv) {
    const double f = r->factor, L0 = (double)r->original_max_position, th = r->theta;
    double lo = (double)d * log(L0 / (r->beta_fast * 2.0 * KVC_PI)) / (2.0 * log(th));
    double hi = (double)d * log(L0 / (r->beta_slow * 2.0 * KVC_PI)) / (2.0 * log(th));
    if (r->truncate) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    if (lo < 0) lo = 0;
    if (hi > (double)(d - 1)) hi = (double)(d - 1);
    if (lo == hi) hi += 0.001;
    for (int64_t i = 0; i < d / 2; i++) {
        double ramp = ((double)i - lo) / (hi - lo);
        ramp = ramp < 0 ? 0 : (ramp > 1 ? 1 : ramp);
        /* HF: extrapolation factor = 1 - ramp, both terms in f32 */
        const float pos = powf((float)th, (float)(2 * i) / (float)d);
        const float extra = 1.0f / pos, inter = 1.0f / ((float)f * pos);
        const float ef = (float)(1.0 - ramp);
        inv[i] = inter * (1.0f - ef) + extra * ef;
    }
}

/* The plan's frequencies; longrope with its long factors when `long_factors`, else its short ones. */
static kvc_status frequencies(const kvc_rope_config *r, int64_t rot_dim, bool long_factors, float *inv_freq,
                              float *attn_factor) {
    kvc_status st = check_plan(r, rot_dim);
    if (st != KVC_OK) return st;
    if (!inv_freq || !attn_factor) return kvci_fail(KVC_EINVAL, "rope: inv_freq and attn_factor must not be NULL");
    const int64_t half = rot_dim / 2;
    const float *ext = r->type != KVC_ROPE_LONGROPE ? NULL : long_factors ? r->long_factor : r->short_factor;
    for (int64_t i = 0; i < half; i++) { /* HF: theta ** (arange(0, d, 2).float() / d) in f32 */
        const float p = powf((float)r->theta, (float)(2 * i) / (float)rot_dim);
        inv_freq[i] = 1.0f / (ext ? ext[i] * p : p); /* longrope: 1 / (ext_factors * p), f32 */
    }
    if (r->type == KVC_ROPE_PROPORTIONAL) { /* HF: int(share * d // 2) angles turn, the others' frequencies are 0 */
        const double share = r->partial_rotary_factor > 0.0 ? r->partial_rotary_factor : 1.0;
        const int64_t angles = (int64_t)floor(share * (double)rot_dim / 2.0);
        for (int64_t i = angles; i < half; i++) inv_freq[i] = 0.0f;
    }
    if (r->type == KVC_ROPE_LINEAR || r->type == KVC_ROPE_PROPORTIONAL) /* HF divides the f32 frequencies by factor */
        for (int64_t i = 0; i < half; i++) inv_freq[i] /= (float)r->factor;
    else if (r->type == KVC_ROPE_LLAMA3)
        llama3_scale(r, half, inv_freq);
    else if (r->type == KVC_ROPE_YARN)
        yarn_scale(r, rot_dim, inv_freq);
    *attn_factor = (float)kvc_rope_attention_factor(r);
    return KVC_OK;
}

kvc_status kvc_rope_frequencies(const kvc_rope_config *r, int64_t rot_dim, float *inv_freq, float *attn_factor) {
    return frequencies(r, rot_dim, false, inv_freq, attn_factor);
}

kvc_status kvc_rope_frequencies_long(const kvc_rope_config *r, int64_t rot_dim, float *inv_freq, float *attn_factor) {
    if (r && r->type != KVC_ROPE_LONGROPE)
        return kvci_fail(KVC_EINVAL, "rope: long factors need a longrope plan (type %d), not type %d",
                         (int)KVC_ROPE_LONGROPE, (int)r->type);
    return frequencies(r, rot_dim, true, inv_freq, attn_factor);
}

void kvc_rope_cos_sin(const float *inv_freq, int64_t rot_dim, float attn_factor, int64_t pos, float *cos, float *sin) {
    const int64_t half = rot_dim / 2;
    const float pf = (float)pos;
    for (int64_t i = 0; i < half; i++) {
        const float ang = pf * inv_freq[i];
        cos[i] = cos[i + half] = cosf(ang) * attn_factor;
        sin[i] = sin[i + half] = sinf(ang) * attn_factor;
    }
}

void kvc_rope_half_f32(const float *x, const float *cos, const float *sin, int64_t n, float *y) {
    const int64_t h = n / 2;
    for (int64_t i = 0; i < h; i++) {
        const float x1 = x[i], x2 = x[i + h];
        y[i] = kvci_rope_lane(x1, x2, cos[i], sin[i], false);
        y[i + h] = kvci_rope_lane(x1, x2, cos[i + h], sin[i + h], true);
    }
}

void kvc_rope_interleaved_f32(const float *r, const float *cos, const float *sin, int64_t n, float *y) {
    const int64_t h = n / 2;
    for (int64_t i = 0; i < h; i++) {
        const float x1 = r[2 * i], x2 = r[2 * i + 1];
        y[i] = kvci_rope_lane(x1, x2, cos[i], sin[i], false);
        y[i + h] = kvci_rope_lane(x1, x2, cos[i + h], sin[i + h], true);
    }
}

void kvc_rope_pairs_f32(const float *x, const float *cos, const float *sin, int64_t n, float *y) {
    for (int64_t i = 0; i < n / 2; i++) {
        const float x1 = x[2 * i], x2 = x[2 * i + 1];
        y[2 * i] = kvci_rope_lane(x1, x2, cos[i], sin[i], false);
        y[2 * i + 1] = kvci_rope_lane(x1, x2, cos[i], sin[i], true);
    }
}

void kvc_rope_heads_f32(float *x, int64_t n_heads, int64_t stride, const float *cos, const float *sin, int64_t rot_dim,
                        kvc_rope_form form, float *tmp) {
    for (int64_t h = 0; h < n_heads; h++) {
        float *v = x + h * stride;
        if (form == KVC_ROPE_HALF) {
            kvc_rope_half_f32(v, cos, sin, rot_dim, v);
        } else if (form == KVC_ROPE_PAIRS) {
            kvc_rope_pairs_f32(v, cos, sin, rot_dim, v);
        } else {
            for (int64_t i = 0; i < rot_dim; i++) tmp[i] = v[i];
            kvc_rope_interleaved_f32(tmp, cos, sin, rot_dim, v);
        }
    }
}
