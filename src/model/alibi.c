/* ALiBi slopes per attention head, as transformers computes them in f32 (kvci_model_alibi_slopes,
 * model_internal.h): the operator adds slope * (key position - query position) to each score. */
#include <math.h>

#include "kvcache/half.h"
#include "model/model_internal.h"

/* BLOOM's and Falcon's build_alibi_tensor: n the largest power of two <= heads; heads h < n take b^(h + 1) with
 * b = 2^(-8 / n); the rest take the odd powers 1, 3, 5, ... of e = 2^(-4 / n) (the slopes of 2n heads that
 * fall between the first n's). MPT's build_mpt_alibi_tensor: n the smallest power of two >= heads, slope k
 * (1-based) 1 / 2^(k * alibi_bias_max / n); when n > heads the even k first, then the odd, the first heads
 * kept. */
void kvci_model_alibi_slopes(const kvc_model_config *c, float *out) {
    const int64_t heads = c->num_heads;
    if (c->alibi_bias_max > 0.0) { /* MPT */
        int64_t n = 1;
        while (n < heads) n *= 2;
        const float step = (float)(c->alibi_bias_max / (double)n);
        for (int64_t h = 0; h < heads; h++) {
            /* position h of concat(slopes[1::2], slopes[::2]) (0-based indices into the n slopes) */
            const int64_t i = n == heads ? h : h < n / 2 ? 2 * h + 1 : 2 * (h - n / 2);
            out[h] = 1.0f / powf(2.0f, (float)(i + 1) * step);
        }
    } else { /* BLOOM, Falcon */
        int64_t n = 1;
        while (2 * n <= heads) n *= 2;
        const float base = (float)exp2(-8.0 / (double)n), extra = (float)exp2(-4.0 / (double)n);
        for (int64_t h = 0; h < heads; h++)
            out[h] = h < n ? powf(base, (float)(h + 1)) : powf(extra, (float)(2 * (h - n) + 1));
    }
    if (c->alibi_in_scale) /* Falcon: slopes[..., None].bfloat16() */
        for (int64_t h = 0; h < heads; h++) out[h] = kvc_bf16_to_f32(kvc_f32_to_bf16(out[h]));
}
