/* Attention type -> manager vtable. A new type: one file, one line here. */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h"

static const kvc_manager_type *const registry[KVC_ATTN_TYPE_COUNT] = {
    [KVC_ATTN_FULL] = &kvc_full_attention_type,
    [KVC_ATTN_SLIDING_WINDOW] = &kvc_sliding_window_type,
    [KVC_ATTN_MAMBA] = &kvc_mamba_type,
};

const kvc_manager_type *kvc_manager_type_find(kvc_attn_type type) {
    return (unsigned)type < KVC_ATTN_TYPE_COUNT ? registry[type] : NULL;
}

const char *kvc_attn_type_name(kvc_attn_type type) {
    const kvc_manager_type *t = kvc_manager_type_find(type);
    return t != NULL ? t->name : "?";
}

kvc_status kvc_attn_type_parse(const char *name, kvc_attn_type *out) {
    if (name == NULL || out == NULL) return kvc_fail(KVC_EINVAL, "kvc_attn_type_parse: name and out must not be NULL");
    for (int t = 0; t < KVC_ATTN_TYPE_COUNT; t++) {
        if (registry[t] != NULL && strcmp(name, registry[t]->name) == 0) {
            *out = (kvc_attn_type)t;
            return KVC_OK;
        }
    }
    return kvc_fail(KVC_EINVAL, "attn_type \"%s\" is unknown (expected FullAttention, SlidingWindow or Mamba)", name);
}
