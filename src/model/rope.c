/* RoPE (MF 1.4): inverse frequencies for default / llama3 / yarn, the
 * attention factor A, and the half-split and interleaved applications.
 * Angles are fp32 products p * inv[i] as in HF; cos/sin are scaled by A. */
#include <math.h>
#include <stdlib.h>

#include "base/internal.h"
#include "model/model_internal.h"

#define KVC_PI 3.14159265358979323846

kvc_status kvc_rope_prepare(kvc_model *m)
{
    const kvc_rope_config *r = &m->cfg.rope;
    const int64_t d = m->rot_dim, half = d / 2;
    float *inv = m->inv_freq; /* [d/2] */
    m->rope_attn_factor = 1.0f;
    for (int64_t i = 0; i < half; i++) {
        /* HF: theta ** (arange(0, d, 2).float() / d) in fp32 */
        const float expo = (float)(2 * i) / (float)d;
        inv[i] = 1.0f / powf((float)r->theta, expo);
    }
    if (r->type == KVC_ROPE_LLAMA3) {
        const double L0 = (double)r->original_max_position, f = r->factor;
        const double low_wl = L0 / r->low_freq_factor, high_wl = L0 / r->high_freq_factor;
        for (int64_t i = 0; i < half; i++) {
            const double w = (double)inv[i], wl = 2.0 * KVC_PI / w;
            double v = w;
            if (wl > low_wl) {
                v = w / f;
            } else if (wl >= high_wl) {
                const double s = (L0 / wl - r->low_freq_factor) / (r->high_freq_factor - r->low_freq_factor);
                v = (1.0 - s) * w / f + s * w;
            }
            inv[i] = (float)v;
        }
    } else if (r->type == KVC_ROPE_YARN) {
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
        for (int64_t i = 0; i < half; i++) {
            double ramp = ((double)i - lo) / (hi - lo);
            ramp = ramp < 0 ? 0 : (ramp > 1 ? 1 : ramp);
            /* HF: extrapolation factor = 1 - ramp, both terms in fp32 */
            const float pos = powf((float)th, (float)(2 * i) / (float)d);
            const float extra = 1.0f / pos, inter = 1.0f / ((float)f * pos);
            const float ef = (float)(1.0 - ramp);
            inv[i] = inter * (1.0f - ef) + extra * ef;
        }
        m->rope_attn_factor = (float)kvc_rope_attention_factor(r);
    }
    return KVC_OK;
}

void kvc_rope_half(const kvc_model *m, float *x, int64_t n_heads, int64_t stride, int64_t p)
{
    const int64_t half = m->rot_dim / 2;
    const float A = m->rope_attn_factor, pf = (float)p;
    for (int64_t i = 0; i < half; i++) {
        const float ang = pf * m->inv_freq[i];
        const float c = cosf(ang) * A, s = sinf(ang) * A;
        for (int64_t h = 0; h < n_heads; h++) {
            float *v = x + h * stride;
            const float a = v[i], b = v[i + half];
            v[i] = a * c - b * s;
            v[i + half] = b * c + a * s;
        }
    }
}

void kvc_rope_interleaved(const kvc_model *m, float *x, int64_t n_heads, int64_t stride, int64_t p, float *tmp)
{
    const int64_t d = m->rot_dim, half = d / 2;
    for (int64_t h = 0; h < n_heads; h++) {
        float *v = x + h * stride;
        for (int64_t i = 0; i < half; i++) {
            tmp[i] = v[2 * i];
            tmp[i + half] = v[2 * i + 1];
        }
        for (int64_t i = 0; i < d; i++) v[i] = tmp[i];
    }
    kvc_rope_half(m, x, n_heads, stride, p);
}
