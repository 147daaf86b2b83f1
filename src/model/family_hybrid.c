/* Hybrids of attention and state layers (planned only): Qwen3-Next (Gated
 * DeltaNet, every full_attention_interval-th layer full), Jamba (Mamba, an
 * attention layer every attn_layer_period from attn_layer_offset) and the
 * Mamba2 hybrids (Granite 4 style), which must list their layer_types. Their
 * state shapes: plan/caches.c. */
#include "base/internal.h"
#include "model/family.h"

static kvc_status qwen3_next_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    int64_t interval = 4;
    bool have = false;
    KVC_TRY(kvci_json_int(&ctx->hp->cfg, "full_attention_interval", 1, KVC_HP_MAX_LAYERS, &interval, &have));
    if (!have) kvci_family_warn(ctx, "layer_types and full_attention_interval absent: every 4th layer full assumed");
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = (i + 1) % interval == 0 ? KVC_LK_FULL : KVC_LK_STATE;
    return KVC_OK;
}

static kvc_status jamba_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    int64_t period = 0, offset = 0;
    KVC_TRY(kvci_json_int(cfg, "attn_layer_period", 1, KVC_HP_MAX_LAYERS, &period, NULL));
    KVC_TRY(kvci_json_int(cfg, "attn_layer_offset", 0, KVC_HP_MAX_LAYERS, &offset, NULL));
    if (offset >= period)
        return kvci_fail(KVC_EINVAL, "%s: attn_layer_offset %lld must be in [0, attn_layer_period %lld)", cfg->doc,
                         (long long)offset, (long long)period);
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = i % period == offset ? KVC_LK_FULL : KVC_LK_STATE;
    return KVC_OK;
}

static kvc_status mamba2_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    (void)kinds;
    return kvci_fail(KVC_EINVAL, "%s: layer_types is missing (needed to tell mamba from attention layers)",
                     ctx->hp->cfg.doc);
}

static const kvc_family_alias QWEN3_NEXT[] = {{"qwen3_next", "Qwen3NextForCausalLM", "qwen3_next", false}};
static const kvc_family_alias JAMBA[] = {{"jamba", "JambaForCausalLM", "jamba", false}};
static const kvc_family_alias MAMBA2[] = {
    {"granitemoehybrid", "GraniteMoeHybridForCausalLM", "granitemoehybrid", false}};

const kvc_family_desc kvc_family_qwen3_next = {
    .id = KVC_FAMILY_QWEN3_NEXT,
    .name = "qwen3_next",
    .aliases = QWEN3_NEXT,
    .n_aliases = 1,
    .default_kinds = qwen3_next_kinds,
};

const kvc_family_desc kvc_family_jamba = {
    .id = KVC_FAMILY_JAMBA,
    .name = "jamba",
    .aliases = JAMBA,
    .n_aliases = 1,
    .default_kinds = jamba_kinds,
};

const kvc_family_desc kvc_family_mamba2_hybrid = {
    .id = KVC_FAMILY_MAMBA2_HYBRID,
    .name = "mamba2_hybrid",
    .aliases = MAMBA2,
    .n_aliases = 1,
    .default_kinds = mamba2_kinds,
};
