/* The planner's fallback for an architecture no family names: planned from
 * the generic fields (num_hidden_layers, num_attention_heads,
 * num_key_value_heads, head_dim, sliding_window, layer_types), with warnings. */
#include "model/family.h"

/* A window without layer_types: every layer slides. */
static kvc_status generic_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
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
