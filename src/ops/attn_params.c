/* Attention parameters: defaults (no default for the required fields), the
 * framework-name setter of both operator generations (AO 3.2), causal and
 * sliding-window visibility in plain terms (attn_plan.h), the YaRN
 * scale helper (AO 3.7) and the compressed mask template (AO 3.5). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/ops.h"
#include "ops/attn_plan.h"

void kvci_attention_causal(kvc_attention_params *p, int64_t window, bool one_row) {
    if (window > 0) {
        p->sparse_mode = 4;
        p->pre_tokens = window - 1;
        p->next_tokens = 0;
        p->binding.type = KVC_BIND_SLIDING;
        p->binding.window = window;
    } else {
        p->sparse_mode = one_row ? 0 : 3;
        p->binding.type = KVC_BIND_FULL;
    }
}

static const char *const layout_names[KVC_LAYOUT_COUNT] = {
    "UNSET", "TND", "TND_NTD", "NTD_TND", "BSH", "BSND", "BNSD", "BSND_NBSD",
};

const char *kvc_attn_layout_name(kvc_attn_layout layout) {
    return (layout >= 0 && layout < KVC_LAYOUT_COUNT) ? layout_names[layout] : "?";
}

kvc_attention_params kvc_attention_default_params(void) {
    kvc_attention_params p;
    memset(&p, 0, sizeof p);
    p.layout = KVC_LAYOUT_UNSET;
    p.scale = 0.0; /* required: refused until set */
    p.sparse_mode = -1;
    p.pre_tokens = INT32_MAX;
    p.next_tokens = INT32_MAX;
    p.kv_len_form = KVC_KV_FORM_UNSET;
    p.kv_storage = KVC_KV_CONTIGUOUS;
    p.key_quant_mode = KVC_QUANT_NONE;
    p.value_quant_mode = KVC_QUANT_NONE;
    return p;
}

/* One row of AO 3.2: the v1 and v2 names of a scalar field. */
typedef enum { F_HEADS, F_KV_HEADS, F_SCALE, F_MODE, F_PRE, F_NEXT, F_BS, F_LSE, F_SINK } field_id;

typedef struct {
    const char *v1, *v2; /* NULL: not part of that generation */
    field_id f;
} name_row;

static const name_row names[] = {
    {"num_heads", "num_query_heads", F_HEADS},
    {"num_key_value_heads", "num_key_value_heads", F_KV_HEADS},
    {"scale", "softmax_scale", F_SCALE},
    {"scaleValue", "softmax_scale", F_SCALE},
    {"sparse_mode", "sparse_mode", F_MODE},
    {"pre_tokens", "pre_tokens", F_PRE},
    {"next_tokens", "next_tokens", F_NEXT},
    {"block_size", "block_size", F_BS},
    {"softmax_lse_flag", "return_softmax_lse", F_LSE},
    {NULL, "learnable_sink", F_SINK},
};

/* An integer field's value: a whole number within the field's type (NaN, fractions and values past
 * it were cast, some of them undefined behaviour, others clamped or truncated without a word). */
static kvc_status whole(const char *name, double v, double lo, double hi_excl, int64_t *out) {
    if (!(v >= lo && v < hi_excl) || v != floor(v))
        return kvci_fail(KVC_EINVAL, "attention: parameter '%s' = %g must be an integer in [%.0f, %.0f)", name, v, lo,
                         hi_excl);
    *out = (int64_t)v;
    return KVC_OK;
}

kvc_status kvc_attention_params_set(kvc_attention_params *p, kvc_attn_api api, const char *name, double value) {
    if (!p || !name) return kvci_fail(KVC_EINVAL, "attention params_set: params and name must not be NULL");
    if (api != KVC_API_V1 && api != KVC_API_V2)
        return kvci_fail(KVC_EINVAL, "attention params_set: api %d must be KVC_API_V1 or KVC_API_V2", (int)api);
    const size_t n = sizeof names / sizeof names[0];
    for (size_t i = 0; i < n; i++) {
        const char *mine = api == KVC_API_V1 ? names[i].v1 : names[i].v2;
        const char *other = api == KVC_API_V1 ? names[i].v2 : names[i].v1;
        if (mine && strcmp(mine, name) == 0) {
            const bool i32 = names[i].f == F_HEADS || names[i].f == F_KV_HEADS || names[i].f == F_MODE ||
                             names[i].f == F_BS,
                       i64 = names[i].f == F_PRE || names[i].f == F_NEXT;
            int64_t v = 0;
            if (i32 || i64) {
                kvc_status st = whole(name, value, i32 ? INT32_MIN : -0x1p63, i32 ? 0x1p31 : 0x1p63, &v);
                if (st != KVC_OK) return st;
            }
            switch (names[i].f) {
            case F_HEADS: p->num_heads = (int32_t)v; break;
            case F_KV_HEADS: p->num_kv_heads = (int32_t)v; break;
            case F_SCALE: p->scale = value; break;
            case F_MODE: p->sparse_mode = (int32_t)v; break;
            case F_PRE: p->pre_tokens = v; break;
            case F_NEXT: p->next_tokens = v; break;
            case F_BS: p->block_size = (int32_t)v; break;
            case F_LSE: break; /* LSE is requested by giving p->lse */
            case F_SINK:
                return kvci_fail(KVC_EINVAL, "attention: learnable_sink is a tensor: set p->sinks [Nq] instead");
            }
            return KVC_OK;
        }
        if (other && strcmp(other, name) == 0) {
            if (!mine)
                return kvci_fail(
                    KVC_EINVAL,
                    "attention: parameter '%s' does not exist in operator generation v%d (R11: sinks are v2 only)",
                    name, (int)api);
            return kvci_fail(KVC_EINVAL,
                             "attention: parameter '%s' is the v%d name; under v%d it is '%s' (the vendor binding "
                             "would silently ignore it and use its default)",
                             name, api == KVC_API_V1 ? 2 : 1, (int)api, mine);
        }
    }
    return kvci_fail(KVC_EINVAL, "attention: unknown scalar parameter '%s' for v%d", name, (int)api);
}

double kvc_yarn_mscale(double factor, double mscale) { return factor > 1.0 ? 0.1 * mscale * log(factor) + 1.0 : 1.0; }

double kvc_yarn_softmax_scale(int64_t d_nope, int64_t d_rope, double factor, double mscale_all_dim) {
    int64_t d = 0;
    if (d_nope < 0 || d_rope < 0 || !kvci_add64(d_nope, d_rope, &d) || d < 1) return NAN; /* no head dim */
    const double base = 1.0 / sqrt((double)d);
    if (mscale_all_dim == 0.0) return base;
    const double m = kvc_yarn_mscale(factor, mscale_all_dim);
    return base * m * m;
}

void kvc_mask_template_fill(uint8_t *tmpl) {
    const int64_t N = KVC_MASK_TEMPLATE_DIM;
    for (int64_t r = 0; r < N; r++)
        for (int64_t c = 0; c < N; c++) tmpl[r * N + c] = (uint8_t)(c > r);
}
