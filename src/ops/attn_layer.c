/* The per-layer side of plan and run (attn_plan.h): which tensors a layer
 * brings, their check against the plan, and whether a call fits a plan. */
#include <stddef.h>

#include "base/internal.h"
#include "ops/attn_plan.h"

/* One layer tensor: its name and where it sits in each struct. */
typedef struct {
    const char *name;
    size_t in_layer, in_params;
} layer_field;

#define FIELD(x)                                                                                                       \
    { #x, offsetof(kvci_attn_layer, x), offsetof(kvc_attention_params, x) }
static const layer_field fields[] = {FIELD(q),           FIELD(q_rope),      FIELD(k),          FIELD(v),
                                     FIELD(k_rope),      FIELD(out),         FIELD(lse),        FIELD(sinks),
                                     FIELD(key_scale),   FIELD(value_scale), FIELD(key_offset), FIELD(value_offset),
                                     FIELD(alibi_slopes)};
#undef FIELD
#define N_FIELDS (sizeof fields / sizeof fields[0])

static const kvc_tensor *at(const void *base, size_t off) { return (const kvc_tensor *)((const char *)base + off); }

kvci_attn_layer kvci_attn_layer_of(const kvc_attention_params *p) {
    kvci_attn_layer t;
    for (size_t i = 0; i < N_FIELDS; i++)
        *(kvc_tensor *)((char *)&t + fields[i].in_layer) = *at(p, fields[i].in_params);
    return t;
}

/* Index of the first dim where a and b differ, ndim when they agree; -1 when presence, dtype or rank differ. */
static int form_diff(const kvc_tensor *a, const kvc_tensor *b) {
    if ((a->data == NULL) != (b->data == NULL)) return -1;
    if (!a->data) return 0;
    if (a->dtype != b->dtype || a->ndim != b->ndim) return -1;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return d;
    return a->ndim;
}

static bool same_form(const kvc_tensor *a, const kvc_tensor *b) {
    const int d = form_diff(a, b);
    return d >= 0 && (!a->data || d == a->ndim);
}

kvc_status kvci_attn_layer_check(const kvci_attn_plan *plan, const kvci_attn_layer *layer) {
    if (!plan || !layer) return kvci_fail(KVC_EINVAL, "attention run: plan and layer must not be NULL");
    for (size_t i = 0; i < N_FIELDS; i++) {
        const kvc_tensor *t = at(layer, fields[i].in_layer), *want = at(&plan->p, fields[i].in_params);
        if (same_form(t, want)) continue;
        const int d = form_diff(t, want);
        if (d < 0)
            return kvci_fail(KVC_EINVAL,
                             "attention run: layer tensor %s is %s %s with %d dims, the plan has %s %s with %d dims "
                             "(layers of one plan share presence, dtype and rank)",
                             fields[i].name, t->data ? "given" : "absent", kvc_dtype_name(t->dtype), (int)t->ndim,
                             want->data ? "given" : "absent", kvc_dtype_name(want->dtype), (int)want->ndim);
        return kvci_fail(KVC_EINVAL, "attention run: layer tensor %s has extent %lld in dim %d, the plan has %lld",
                         fields[i].name, (long long)t->shape[d], d, (long long)want->shape[d]);
    }
    return KVC_OK;
}

static bool same_tensor_ref(const kvc_tensor *a, const kvc_tensor *b) { return a->data == b->data && same_form(a, b); }

static bool same_binding(const kvc_attn_binding *a, const kvc_attn_binding *b) {
    return a->type == b->type && a->window == b->window && a->block_size == b->block_size &&
           a->num_kv_heads == b->num_kv_heads;
}

bool kvci_attention_plan_fits(const kvci_attn_plan *plan, const kvc_attention_params *p) {
    const kvc_attention_params *a = &plan->p;
    if (a->layout != p->layout || a->num_heads != p->num_heads || a->num_kv_heads != p->num_kv_heads ||
        a->scale != p->scale || a->logit_softcap != p->logit_softcap ||
        a->attention_chunk_size != p->attention_chunk_size || a->alibi_bf16 != p->alibi_bf16 ||
        a->sparse_mode != p->sparse_mode || a->pre_tokens != p->pre_tokens || a->next_tokens != p->next_tokens ||
        a->bidirectional != p->bidirectional || a->batch != p->batch || a->q_lens != p->q_lens ||
        a->kv_lens != p->kv_lens || a->kv_len_form != p->kv_len_form || a->kv_storage != p->kv_storage ||
        a->block_layout != p->block_layout || a->paged_kv != p->paged_kv || a->block_size != p->block_size ||
        a->key_quant_mode != p->key_quant_mode || a->value_quant_mode != p->value_quant_mode ||
        !same_tensor_ref(&a->block_table, &p->block_table) || !same_tensor_ref(&a->mask, &p->mask) ||
        !same_binding(&a->binding, &p->binding))
        return false;
    for (size_t i = 0; i < N_FIELDS; i++)
        if (!same_form(at(p, fields[i].in_params), at(a, fields[i].in_params))) return false;
    return true;
}
