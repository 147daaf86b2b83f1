/* A.X-K2's gated RMSNorm (AXK2GatedRMSNorm, Megatron's GatedNormWrapper): y = RMSNorm(x), then y times
 * sigmoid(fc2(silu(fc1(y)))), a low-rank gate of rank gated_norm_rank computed from y itself; f32 as transformers
 * (its gate in f32 before the product). The norm is the sub-layer's usual one (forward.c); this adds the gate. */
#include <math.h>

#include "model/act.h"
#include "model/forward_internal.h"

kvc_status kvci_gated_norm(const kvc_fwd_step *s, const kvc_wmat fc[2]) {
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, H = s->m->cfg.hidden_size, r = s->m->cfg.gated_norm_rank;
    KVC_TRY(kvci_linear(ws->xn, T, &fc[0], NULL, ws->gnorm)); /* [T, r] */
    for (int64_t i = 0; i < T * r; i++) ws->gnorm[i] = kvci_silu_mul(ws->gnorm[i], 1.0f);
    KVC_TRY(kvci_linear(ws->gnorm, T, &fc[1], NULL, ws->proj)); /* [T, H] */
    for (int64_t i = 0; i < T * H; i++) ws->xn[i] *= 1.0f / (1.0f + expf(-ws->proj[i]));
    return KVC_OK;
}
