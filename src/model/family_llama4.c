/* Llama 4 (Scout, Maverick; planned only): chunked local attention with RoPE
 * on most layers, full causal attention without RoPE (NoPE) on the rest.
 * no_rope_layers[i] is 1 for a RoPE (chunked) layer and 0 for a NoPE (full)
 * one; an absent or empty list is transformers' default, every
 * no_rope_layer_interval-th layer (4) full. The chunk is
 * attention_chunk_size; without one, every layer is full attention. */

#include "base/internal.h"
#include "model/family.h"

static kvc_status llama4_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    const kvc_layer_kind local = ctx->chunk > 0 ? KVC_LK_CHUNKED : KVC_LK_FULL;
    if (ctx->chunk == 0)
        kvci_family_warn(ctx, "attention_chunk_size absent or null: every layer planned as full attention");
    const cJSON *list = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(cfg, "no_rope_layers", KVC_HP_MAX_LAYERS, &list, &have));
    if (have && list->child != NULL)
        return kvci_family_flag_kinds(ctx, "no_rope_layers", list, KVC_LK_FULL, local, kinds);
    int64_t interval = 4;
    KVC_TRY(kvci_json_int(cfg, "no_rope_layer_interval", 1, KVC_HP_MAX_LAYERS, &interval, &have));
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = (i + 1) % interval != 0 ? local : KVC_LK_FULL;
    return KVC_OK;
}

static const kvc_family_alias LLAMA4[] = {
    {"llama4", "Llama4ForConditionalGeneration", "llama4", false},
    {"llama4_text", "Llama4ForCausalLM", "llama4", false},
};

const kvc_family_desc kvc_family_llama4 = {
    .id = KVC_FAMILY_LLAMA4,
    .name = "llama4",
    .aliases = LLAMA4,
    .n_aliases = 2,
    .default_kinds = llama4_kinds,
};
