/* MiniMax's lightning attention (MiniMaxLightningAttention; layer_lightning) in place of attention. Of the normed input
 * x [T, H]: qkv = silu(qkv_proj x) [T, nH, 3 D], each head's q, k, v of D one after the other; per head h of layer l
 * (of L) a fixed decay rate s = b^(h + 1) (1 - l / (L - 1 + 1e-5) + 1e-5), b = 2^(-8 / nH), and a state S [D, D]
 * (key rows, value columns), token by token in f32:
 *     S = exp(-s) S + k v^T;  o = S^T q
 * then o [nH D] RMS-normalised over the whole row (the module's norm [nH D], eps 1e-6: not rms_norm_eps), times
 * sigmoid(output_gate x) [nH D], and out_proj. transformers' torch path runs a prefill block by block (the same sums
 * grouped by block_size: within a block the decay exp(-s (i - j)), across blocks through S) and a decode step by
 * this recurrence; the runtime runs the recurrence for every token (as kda.c). The state (kvc_layer_cache.state
 * [nH, D, D]) is read and rewritten by every step with caches. Each head's recurrence runs on one thread. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/act.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"
#include "ops/write_internal.h"

int64_t kvci_lightning_floats(const kvc_model_config *c, int64_t Tm) {
    bool any = false;
    for (int64_t l = 0; l < c->num_layers; l++) any |= c->layer_lightning[l];
    if (!any) return 1;
    const int64_t nh = c->num_heads, d = c->head_dim, V = nh * d;
    return Tm * 5 * V + nh * d * d; /* qkv [Tm, 3 V], gate and core [Tm, V] each; a state per head (no caches) */
}

void kvci_lightning_token(float *S, const float *q, const float *k, const float *v, float decay, int64_t d, float *o) {
    for (int64_t e = 0; e < d; e++) o[e] = 0.0f;
    for (int64_t a = 0; a < d; a++) {
        float *row = S + a * d;
        for (int64_t e = 0; e < d; e++) {
            row[e] = decay * row[e] + k[a] * v[e];
            o[e] += q[a] * row[e];
        }
    }
}

/* exp(-s) of head h of layer l: s in f32 as transformers' buffers (b^(h + 1) in f32, times the layer's factor). */
static float head_decay(const kvc_model_config *c, int64_t l, int64_t h) {
    const float base = (float)(1.0 / pow(2.0, 8.0 / (double)c->num_heads));
    const double factor = 1.0 - (double)l / ((double)(c->num_layers - 1) + 1e-5) + 1e-5;
    const float rate = powf(base, (float)(h + 1)) * (float)factor;
    return expf(-rate);
}

/* Work (state elements times tokens) from which the heads share the OpenMP threads (as kda.c). */
#define LIGHTNING_PARALLEL_WORK (1 << 16)

kvc_status kvci_lightning(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const kvc_step_metadata *md = s->md;
    const int64_t T = s->T, Tm = s->ws->max_tokens, nh = c->num_heads, d = c->head_dim, V = nh * d;
    float *qkv = s->ws->gdn, *gate = qkv + 3 * Tm * V, *core = gate + Tm * V, *own = core + Tm * V;
    double t0 = kvci_sp_begin();
    const kvc_wmat *mats[2] = {&w->wq, &w->wg};
    const float *bias[2] = {NULL, NULL};
    float *outs[2] = {qkv, gate};
    KVC_TRY(kvci_linear_shared(s->ws->xn, T, 2, mats, bias, outs));
    for (int64_t i = 0; i < T * 3 * V; i++) qkv[i] = kvci_silu_mul(qkv[i], 1.0f);
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    const kvc_layer_cache *lc = s->a->caches ? &s->a->caches->layers[l] : NULL;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        float *state = NULL;
        if (lc) KVC_TRY(kvci_row_state(s, lc, &lc->state, l, r, &state));
        const int64_t n = md->cu_seq_lens_q[r] - q0;
        const bool fresh = md->seq_lens_kv[r] == n || !state; /* the row starts its sequence in this step */
#pragma omp parallel for schedule(static) if (nh > 1 && n * d * d * nh >= LIGHTNING_PARALLEL_WORK)
        for (int64_t h = 0; h < nh; h++) {
            float *S = state ? state + h * d * d : own + h * d * d;
            const float decay = head_decay(c, l, h);
            if (fresh) memset(S, 0, (size_t)(d * d) * sizeof(float));
            for (int64_t t = q0; t < q0 + n; t++) {
                const float *x = qkv + t * 3 * V + h * 3 * d; /* this head's q | k | v */
                kvci_lightning_token(S, x, x + d, x + 2 * d, decay, d, core + t * V + h * d);
            }
        }
        q0 += n;
    }
    kvci_rmsnorm_rows(core, T, V, V, w->gdn_norm, 1e-6f);
    for (int64_t i = 0; i < T * V; i++) core[i] *= 1.0f / (1.0f + expf(-gate[i]));
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(core, T, &w->wo, NULL, s->ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
