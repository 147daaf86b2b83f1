/* Llama 4 (Scout, Maverick; planned only): chunked local attention with RoPE
 * on most layers, full causal attention without RoPE (NoPE) on the rest.
 * no_rope_layers[i] is 1 for a RoPE (chunked) layer and 0 for a NoPE (full)
 * one; an absent or empty list is transformers' default, every
 * no_rope_layer_interval-th layer (4) full. The chunk is
 * attention_chunk_size; without one, every layer is full attention. */
#include <stdio.h>

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
    if (have && list->child != NULL) {
        if (cJSON_GetArraySize(list) != ctx->n_layers)
            return kvci_fail(KVC_EINVAL, "%s: no_rope_layers has %d entries but num_hidden_layers is %lld", cfg->doc,
                             cJSON_GetArraySize(list), (long long)ctx->n_layers);
        int64_t i = 0;
        for (const cJSON *e = list->child; e != NULL; e = e->next, i++) {
            char where[48];
            snprintf(where, sizeof where, "no_rope_layers[%lld]", (long long)i);
            int64_t rope = 0;
            KVC_TRY(kvci_json_int_value(e, where, 0, 1, &rope));
            kinds[i] = rope ? local : KVC_LK_FULL;
        }
        return KVC_OK;
    }
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
