/* Gemma 2 and 3 (planned only): sliding and full layers, Gemma 2 alternating
 * (sliding first), Gemma 3 sliding_window_pattern - 1 sliding layers then one
 * full; the softmax scale follows query_pre_attn_scalar. */
#include <math.h>

#include "base/internal.h"
#include "model/family.h"

static kvc_status gemma3_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    int64_t pattern = 6;
    bool have = false;
    KVC_TRY(kvci_json_int(cfg, "sliding_window_pattern", 1, KVC_HP_MAX_LAYERS, &pattern, &have));
    if (!have) KVC_TRY(kvci_json_int(cfg, "_sliding_window_pattern", 1, KVC_HP_MAX_LAYERS, &pattern, &have));
    if (!have) kvci_family_warn(ctx, "sliding_window_pattern absent: 6 (five sliding layers, then one full) assumed");
    return kvci_family_every_nth_full(ctx, pattern, kinds);
}

/* query_pre_attn_scalar^-1/2, head_dim standing in when it is absent. */
static kvc_status gemma_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale) {
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    double v = 0.0;
    bool have = false;
    KVC_TRY(kvci_json_num(&ctx->hp->cfg, "query_pre_attn_scalar", positive, &v, &have));
    if (!have) {
        v = (double)head_dim;
        kvci_family_warn(ctx, "query_pre_attn_scalar absent: head_dim %lld used for the scale", (long long)head_dim);
    }
    *scale = 1.0 / sqrt(v);
    return KVC_OK;
}

static const kvc_family_alias GEMMA2[] = {{"gemma2", "Gemma2ForCausalLM", "gemma2", false}};
static const kvc_family_alias GEMMA3[] = {
    {"gemma3", "Gemma3ForConditionalGeneration", "gemma3", false},
    {"gemma3_text", "Gemma3ForCausalLM", "gemma3", false},
};

const kvc_family_desc kvc_family_gemma2 = {
    .id = KVC_FAMILY_GEMMA2,
    .name = "gemma2",
    .aliases = GEMMA2,
    .n_aliases = 1,
    .default_kinds = kvci_family_alternating_kinds,
    .softmax_scale = gemma_scale,
};

const kvc_family_desc kvc_family_gemma3 = {
    .id = KVC_FAMILY_GEMMA3,
    .name = "gemma3",
    .aliases = GEMMA3,
    .n_aliases = 2,
    .default_kinds = gemma3_kinds,
    .softmax_scale = gemma_scale,
};
