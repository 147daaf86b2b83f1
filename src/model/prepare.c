/* kvci_model_prepare: after the weights are filled (load or random; the
 * GptOss experts, stored [in, out] by the checkpoints, are transposed as they
 * are filled), the absorbed MLA query projection W_UK^h (rows of kv_b_proj,
 * [dn, rkv] per head) gets a transposed copy [rkv, dn] per head; Gemma's norm
 * weights w become 1 + w in place (its RMSNorm multiplies by 1 + w in f32, as
 * transformers: the same bits as the plain norm over the stored sum); the
 * projections that share an input are fused (kvci_model_fuse). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/model_internal.h"

static void plus_one(float *w, int64_t n) {
    for (int64_t i = 0; w && i < n; i++) w[i] = 1.0f + w[i];
}

kvc_status kvci_model_prepare(kvc_model *m) {
    const kvc_model_config *c = &m->cfg;
    const int64_t L = c->num_layers;
    if (kvci_family_get(c->family)->mla) { /* Kimi-Linear's KDA layers have no kv_b_proj: none for them */
        const int64_t nH = c->num_heads, rkv = c->kv_lora_rank, dn = c->qk_nope_head_dim, dv = c->v_head_dim;
        const int64_t per_layer = nH * rkv * dn;
        kvc_status st = kvc_aligned_alloc(64, (size_t)(L * per_layer) * sizeof(float), (void **)&m->derived);
        if (st != KVC_OK) return st;
        for (int64_t l = 0; l < L; l++) {
            if (c->layer_gdn[l]) continue;
            float *dst = m->derived + l * per_layer;
            m->layers[l].wuk_t = dst;
            for (int64_t h = 0; h < nH; h++)
                for (int64_t d = 0; d < dn; d++)
                    for (int64_t r = 0; r < rkv; r++)
                        dst[(h * rkv + r) * dn + d] = m->layers[l].wkvb[(h * (dn + dv) + d) * rkv + r];
        }
    }
    if (c->gemma_norms) {
        const int64_t H = c->hidden_size, D = c->head_dim;
        for (int64_t l = 0; l < L; l++) {
            kvc_layer_weights *w = &m->layers[l];
            plus_one(w->in_norm, H), plus_one(w->post_norm, H), plus_one(w->pre_ff_norm, H);
            plus_one(w->post_ff_norm, H), plus_one(w->q_norm, D), plus_one(w->k_norm, D);
        }
        plus_one(m->final_norm, H);
    }
    kvci_model_fuse(m);
    return KVC_OK;
}
