/* kvc_model_calibrate_kv and kvc_model_set_kv_scales: the static scales of
 * int8 and fp8 caches, from the largest magnitudes the keys and values of a
 * calibration sequence reach. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"

void kvci_fwd_record_absmax(const kvc_fwd_step *s, const kvc_attn_call *c) {
    float *am = s->ws->kv_absmax;
    if (!am) return;
    const int64_t nk = s->T * c->nKV * c->D, nv = s->T * c->nKV * c->Dv;
    for (int64_t i = 0; i < nk; i++) am[2 * c->layer] = fmaxf(am[2 * c->layer], fabsf(c->k[i]));
    for (int64_t i = 0; i < nv; i++) am[2 * c->layer + 1] = fmaxf(am[2 * c->layer + 1], fabsf(c->v[i]));
}

kvc_status kvc_model_calibrate_kv(const kvc_model *m, const int32_t *ids, int64_t n, float *absmax) {
    if (!m || !ids || !absmax || n < 1)
        return kvci_fail(KVC_EINVAL, "model_calibrate_kv: model, ids and absmax must be given and n %lld >= 1",
                         (long long)n);
    const int64_t L = m->cfg.num_layers, V = m->cfg.vocab_size;
    int64_t *arrays = kvci_calloc((size_t)(n + 6), sizeof(int64_t));
    float *logits = kvci_malloc((size_t)V * sizeof(float));
    kvc_model_workspace *ws = NULL;
    kvc_status st = arrays && logits ? kvc_model_workspace_create(m, n, 1, n, &ws)
                                     : kvci_fail(KVC_ENOMEM, "model_calibrate_kv: out of memory");
    if (st == KVC_OK) {
        int64_t *pos = arrays, *len = arrays + n;
        for (int64_t t = 0; t < n; t++) pos[t] = t;
        len[0] = len[1] = len[2] = n; /* seq_lens_q, seq_lens_kv, cu_seq_lens_q */
        len[3] = n - 1;               /* kv_pos */
        kvc_step_metadata md = {.n_rows = 1,
                                .n_tokens = n,
                                .is_prefill = true,
                                .prompt_tokens = n,
                                .positions = pos,
                                .seq_lens_q = len,
                                .seq_lens_kv = len + 1,
                                .cu_seq_lens_q = len + 2,
                                .cu_seq_lens_kv = len + 2,
                                .kv_pos = len + 3};
        for (int64_t i = 0; i < 2 * L; i++) absmax[i] = 0.0f;
        ws->kv_absmax = absmax;
        const kvc_forward_args a = {.token_ids = ids, .md = &md, .logits = logits};
        st = kvc_model_forward(m, ws, &a);
    }
    kvc_model_workspace_destroy(ws);
    kvci_free(arrays);
    kvci_free(logits);
    return st;
}

float kvci_model_kv_qmax(kvc_dtype dt) {
    switch (dt) {
    case KVC_DTYPE_I8: return 127.0f;
    case KVC_DTYPE_F8E4M3: return 448.0f;
    case KVC_DTYPE_F8E5M2: return 57344.0f;
    default: return 0.0f;
    }
}

void kvc_model_set_kv_scales(const float *absmax, kvc_dtype kv_dtype, int32_t n_layers, kvc_layer_cache *layers) {
    const float qmax = kvci_model_kv_qmax(kv_dtype);
    if (!absmax || !layers || qmax == 0.0f) return;
    for (int32_t l = 0; l < n_layers; l++) {
        layers[l].k_scale = (absmax[2 * l] > 0.0f ? absmax[2 * l] : 1.0f) / qmax;
        layers[l].v_scale = (absmax[2 * l + 1] > 0.0f ? absmax[2 * l + 1] : 1.0f) / qmax;
    }
}
