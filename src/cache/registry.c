/* Attention type -> manager vtable. A new type: one file, one line here. */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h"

static const kvc_manager_type *registry[KVC_MAX_ATTN_TYPES] = {
    [KVC_ATTN_FULL] = &kvc_full_attention_type,
    [KVC_ATTN_SLIDING_WINDOW] = &kvc_sliding_window_type,
    [KVC_ATTN_MAMBA] = &kvc_mamba_type,
    [KVC_ATTN_CHUNKED_LOCAL] = &kvc_chunked_local_type,
};
static int n_registered = KVC_ATTN_TYPE_COUNT;

const kvc_manager_type *kvci_manager_type_find(kvc_attn_type type) {
    return (unsigned)type < (unsigned)n_registered ? registry[type] : NULL;
}

kvc_status kvci_manager_type_register(kvc_manager_type *type, kvc_attn_type *out) {
    if (type == NULL || out == NULL || type->name == NULL || type->validate_entry == NULL ||
        type->blocks_needed == NULL || type->hit_length == NULL || (type->fixed_size && type->fixed_blocks == NULL))
        return kvci_fail(KVC_EINVAL, "kvci_manager_type_register: a type needs a name, validate_entry, blocks_needed, "
                                     "hit_length and (fixed-size types) fixed_blocks");
    if (n_registered == KVC_MAX_ATTN_TYPES)
        return kvci_fail(KVC_ENOMEM, "kvci_manager_type_register: %d attention types are registered already",
                         KVC_MAX_ATTN_TYPES);
    type->attn_type = (kvc_attn_type)n_registered;
    registry[n_registered] = type;
    *out = (kvc_attn_type)n_registered++;
    return KVC_OK;
}

const char *kvc_attn_type_name(kvc_attn_type type) {
    const kvc_manager_type *t = kvci_manager_type_find(type);
    return t != NULL ? t->name : "?";
}

kvc_status kvc_attn_type_parse(const char *name, kvc_attn_type *out) {
    if (name == NULL || out == NULL) return kvci_fail(KVC_EINVAL, "kvc_attn_type_parse: name and out must not be NULL");
    for (int t = 0; t < n_registered; t++) {
        if (strcmp(name, registry[t]->name) == 0) {
            *out = (kvc_attn_type)t;
            return KVC_OK;
        }
    }
    return kvci_fail(KVC_EINVAL,
                     "attn_type \"%s\" is unknown (expected FullAttention, SlidingWindow, Mamba or "
                     "ChunkedLocal)",
                     name);
}
