/* The planner's fallback for an architecture no family names: planned from
 * the generic fields (num_hidden_layers, num_attention_heads,
 * num_key_value_heads, head_dim, sliding_window, layer_types), with warnings. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

kvc_status kvci_family_pattern_kinds(const kvc_family_ctx *ctx, bool *found, kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    const cJSON *pattern = kvci_json_find(cfg, "sliding_window_pattern");
    *found = ctx->window > 0 && pattern != NULL;
    if (*found && cJSON_IsString(pattern)) {
        const char *p = pattern->valuestring;
        const size_t n = strlen(p);
        if (n == 0 || n > KVC_HP_MAX_LAYERS || strspn(p, "LG") != n)
            return kvci_fail(KVC_EINVAL,
                             "%s: sliding_window_pattern \"%.64s\" is not a string of L (sliding) and G "
                             "(full) layers",
                             cfg->doc, p);
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = p[i % (int64_t)n] == 'L' ? KVC_LK_SLIDING : KVC_LK_FULL;
        return KVC_OK;
    }
    if (!*found) return KVC_OK;
    int64_t every = 0;
    KVC_TRY(kvci_json_int(cfg, "sliding_window_pattern", 1, KVC_HP_MAX_LAYERS, &every, NULL));
    return kvci_family_every_nth_full(ctx, every, kinds);
}

/* A window without layer_types: sliding_window_pattern (kvci_family_pattern_kinds), else every layer slides. */
static kvc_status generic_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    bool found = false;
    KVC_TRY(kvci_family_pattern_kinds(ctx, &found, kinds));
    if (found) return KVC_OK;
    if (ctx->window > 0)
        kvci_family_warn(ctx, "sliding_window %lld without layer_types: every layer planned as a window layer",
                         (long long)ctx->window);
    return kvci_family_uniform_kinds(ctx, kinds);
}

const kvc_family_desc kvc_family_generic = {
    .id = KVC_FAMILY_GENERIC,
    .name = "generic",
    .default_kinds = generic_kinds,
};
