/* kvci_model_prepare: after the weights are filled (load or random), every
 * matrix the forward multiplies is brought into the [out, in] form the one
 * GEMM reads (gemm.h): the GptOss expert tensors, stored [in, out] by the
 * checkpoints, are transposed in place, and the absorbed MLA query
 * projection W_UK^h (rows of kv_b_proj, [dn, rkv] per head) gets a
 * transposed copy [rkv, dn] per head. */
#include <string.h>

#include "base/internal.h"
#include "model/model_internal.h"

/* m[rows, cols] -> m[cols, rows] through tmp [rows * cols]. */
static void transpose(float *m, int64_t rows, int64_t cols, float *tmp) {
    memcpy(tmp, m, (size_t)(rows * cols) * sizeof(float));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) m[c * rows + r] = tmp[r * cols + c];
}

kvc_status kvci_model_prepare(kvc_model *m) {
    const kvc_model_config *c = &m->cfg;
    const int64_t L = c->num_layers, H = c->hidden_size;
    if (c->family == KVC_FAMILY_GPT_OSS) {
        const int64_t E = c->num_experts, I = c->intermediate_size;
        float *tmp = NULL;
        kvc_status st = kvc_aligned_alloc(64, (size_t)(2 * I * H) * sizeof(float), (void **)&tmp);
        if (st != KVC_OK) return st;
        for (int64_t l = 0; l < L; l++)
            for (int64_t e = 0; e < E; e++) {
                transpose(m->layers[l].gu + e * H * 2 * I, H, 2 * I, tmp);
                transpose(m->layers[l].dn + e * I * H, I, H, tmp);
            }
        kvc_aligned_free(tmp);
    }
    if (c->family == KVC_FAMILY_DEEPSEEK_V3) {
        const int64_t nH = c->num_heads, rkv = c->kv_lora_rank, dn = c->qk_nope_head_dim, dv = c->v_head_dim;
        const int64_t per_layer = nH * rkv * dn;
        kvc_status st = kvc_aligned_alloc(64, (size_t)(L * per_layer) * sizeof(float), (void **)&m->derived);
        if (st != KVC_OK) return st;
        for (int64_t l = 0; l < L; l++) {
            float *dst = m->derived + l * per_layer;
            m->layers[l].wuk_t = dst;
            for (int64_t h = 0; h < nH; h++)
                for (int64_t d = 0; d < dn; d++)
                    for (int64_t r = 0; r < rkv; r++)
                        dst[(h * rkv + r) * dn + d] = m->layers[l].wkvb[(h * (dn + dv) + d) * rkv + r];
        }
    }
    return KVC_OK;
}
