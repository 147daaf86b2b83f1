/* kvc_model_set_activations: the precision of the activations the dense layers over bf16 weights
 * read (model.h). "bf16" marks every bf16 matrix so that kvci_linear runs it through
 * kvci_gemm_bf16_rounded (gemm_bf16.h); the fused views are rebuilt from their parts. */
#include <string.h>

#include "base/internal.h"
#include "model/model_internal.h"

typedef struct act_walk {
    bool on;
    int64_t bf16; /* matrices of dtype bf16 seen */
} act_walk;

static kvc_status mark_fn(void *user, const kvc_wtensor *t) {
    act_walk *w = user;
    if (t->mat && t->mat->dtype == KVC_WMAT_BF16) {
        t->mat->act_bf16 = w->on;
        w->bf16++;
    }
    return KVC_OK;
}

kvc_status kvc_model_set_activations(kvc_model *m, const char *activations) {
    if (!m || !activations)
        return kvci_fail(KVC_EINVAL, "model_set_activations: model and activations must not be NULL");
    const bool on = strcmp(activations, "bf16") == 0;
    if (!on && strcmp(activations, "f32") != 0)
        return kvci_fail(KVC_EINVAL, "model_set_activations: activations \"%s\" is not one of f32, bf16", activations);
    act_walk w = {false, 0};
    KVC_TRY(kvci_model_visit_weights(m, mark_fn, &w)); /* counts first: a refusal changes nothing */
    if (on && w.bf16 == 0)                             /* a tied head is the embedding, visited */
        return kvci_fail(KVC_EINVAL,
                         "model_set_activations: activations \"bf16\" needs bf16 weights; this model's are %s "
                         "(f32 and f16 weights have no bf16 product, quantized ones round activations to int8)",
                         kvci_wmat_dtype_name(m->lm_head.dtype));
    w.on = on;
    KVC_TRY(kvci_model_visit_weights(m, mark_fn, &w));
    m->lm_head.act_bf16 = on && m->lm_head.dtype == KVC_WMAT_BF16; /* a tied head is a copy of the embedding */
    m->act_bf16 = on;
    kvci_model_fuse(m);
    return KVC_OK;
}

const char *kvc_model_activations(const kvc_model *m) { return m && m->act_bf16 ? "bf16" : "f32"; }
