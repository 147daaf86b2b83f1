/* DeepSeek sparse attention (GLM-5's glm_moe_dsa; transformers' DeepseekV32Indexer / GlmMoeDsaIndexer, their eager
 * f32 path: no fp8, no Hadamard rotation, which keeps dot products). Per full-indexer layer: queries q [T, Hi, Di] =
 * wq_b(q latent), a key per token k [Di] = LayerNorm(wk(x)), both with their first qk_rope_head_dim channels rotated
 * (HY V4's HYV4Indexer: the last ones, its LayerNorm's eps rms_norm_eps),
 * head weights w [T, Hi] = weights_proj(x) Hi^-1/2; query t's score of key j <= its position p is
 * sum_h w[t, h] relu(Di^-1/2 q[t, h] . k[j]), and it attends to the index_topk best (all p + 1 below that). Ties at the
 * k-th score go to the earlier positions (torch.topk leaves them unspecified); the choice depends on the query's own
 * scores alone, so it is the same in any batch. The keys live in the layer's index_k cache (f32), written by the
 * layer's slots; the MLA attention then reads only the chosen slots (kvci_attn_sparse). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "ops/write_internal.h"

#define DSA_KNORM_EPS     1e-6f     /* the indexer's nn.LayerNorm(eps=1e-6) */
#define DSA_PARALLEL_MACS (1 << 20) /* a row's scoring work below this runs on the calling thread */

float kvci_dsa_score(const float *q, const float *w, int64_t Hi, int64_t Di, float scale, const float *key) {
    float s = 0.0f;
    for (int64_t h = 0; h < Hi; h++) {
        float d = 0.0f;
        for (int64_t i = 0; i < Di; i++) d += q[h * Di + i] * key[i];
        d *= scale;
        if (d > 0.0f) s += w[h] * d; /* relu */
    }
    return s;
}

/* The k-th largest of x[0..n), 1 <= k <= n (x reordered): quickselect, middle pivot. */
static float kth_largest(float *x, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    const int64_t want = k - 1;
    while (lo < hi) {
        const float piv = x[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) { /* descending: [lo, j] >= piv >= [i, hi] */
            while (x[i] > piv) i++;
            while (x[j] < piv) j--;
            if (i <= j) {
                const float t = x[i];
                x[i++] = x[j];
                x[j--] = t;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            return piv;
    }
    return x[want];
}

int64_t kvci_dsa_pick(const float *sc, int64_t n, int64_t k, float *tmp, int32_t *out) {
    if (n <= k) {
        for (int64_t j = 0; j < n; j++) out[j] = (int32_t)j;
        return n;
    }
    memcpy(tmp, sc, (size_t)n * sizeof *tmp);
    const float thr = kth_largest(tmp, n, k);
    int64_t above = 0, m = 0;
    for (int64_t j = 0; j < n; j++) above += sc[j] > thr;
    int64_t ties = k - above; /* the earliest of the keys scoring thr */
    for (int64_t j = 0; j < n; j++)
        if (sc[j] > thr || (sc[j] == thr && ties-- > 0)) out[m++] = (int32_t)j;
    return m;
}

/* Slot of key position j of row r (cache row cr) in lc's caches: paged through the key's block table, contiguous
 * cr * S_max + j; without caches the token index q0 + j. */
static int64_t key_slot(const kvc_fwd_step *s, const kvc_step_key *key, const kvc_layer_cache *lc, int64_t r,
                        int64_t q0, int64_t j) {
    if (!s->a->caches) return q0 + j;
    if (key)
        return (int64_t)key->block_table[r * key->width + j / key->block_size] * key->block_size + j % key->block_size;
    const int64_t cr = s->a->cache_rows ? s->a->cache_rows[r] : r;
    return cr * lc->k.shape[1] + j;
}

/* q, k, w of the indexer of layer l (ws->ix_q, ix_k, ix_w). */
static kvc_status project(const kvc_fwd_step *s, int64_t l, const float *cq) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, Hi = c->index_n_heads, Di = c->index_head_dim, rot = s->m->rot_dim;
    const kvc_rope_form form = c->index_rope_half ? KVC_ROPE_HALF : KVC_ROPE_INTERLEAVED;
    KVC_TRY(kvci_linear(cq, T, &w->ix_wq, NULL, ws->ix_q));
    KVC_TRY(kvci_linear(ws->xn, T, &w->ix_wk, NULL, ws->ix_k));
    KVC_TRY(kvci_linear(ws->xn, T, &w->ix_wp, NULL, ws->ix_w));
    const float eps = c->index_norm_eps > 0.0 ? (float)c->index_norm_eps : DSA_KNORM_EPS;
    kvci_layernorm_rows_threads(ws->ix_k, T, Di, Di, w->ix_knorm, w->ix_knorm_b, eps, ws->ix_k);
    const float hs = 1.0f / sqrtf((float)Hi);
    const int64_t at = c->index_rope_last ? Di - rot : 0; /* HY V4: the last rot channels */
    for (int64_t t = 0; t < T; t++) {
        const float *cs = s->cos + t * rot, *sn = s->sin + t * rot;
        kvc_rope_heads_f32(ws->ix_q + t * Hi * Di + at, Hi, Di, cs, sn, rot, form, ws->rope_tmp);
        kvc_rope_heads_f32(ws->ix_k + t * Di + at, 1, Di, cs, sn, rot, form, ws->rope_tmp);
        for (int64_t h = 0; h < Hi; h++) ws->ix_w[t * Hi + h] *= hs;
    }
    return KVC_OK;
}

kvc_status kvci_dsa_select(const kvc_fwd_step *s, int64_t l, const float *cq) {
    const kvc_model_config *c = &s->m->cfg;
    if (c->layer_index_shared[l]) return KVC_OK; /* the previous full layer's choice */
    kvc_model_workspace *ws = s->ws;
    const kvc_step_metadata *md = s->md;
    const int64_t Hi = c->index_n_heads, Di = c->index_head_dim, Kc = ws->dsa_k;
    KVC_TRY(project(s, l, cq));
    kvc_layer_cache *lc = s->a->caches ? &s->a->caches->layers[l] : NULL;
    const kvc_step_key *key = NULL;
    if (lc) {
        KVC_TRY(kvci_cache_write(s, lc, &lc->index_k, ws->ix_k, 1, Di));
        if (s->a->caches->kind == KVC_MCACHE_PAGED && !(key = kvci_layer_key(s, lc))) return KVC_EINVAL;
    }
    const float *keys = lc ? (const float *)lc->index_k.data : ws->ix_k; /* [slots, Di] */
    const float scale = 1.0f / sqrtf((float)Di);
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        const int64_t q1 = md->cu_seq_lens_q[r], work = (q1 - q0) * (md->positions[q1 - 1] + 1) * Hi * Di;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ws->dsa_threads) if (q1 - q0 > 1 && work >= DSA_PARALLEL_MACS)
        for (int64_t t = q0; t < q1; t++) {
            float *sc = ws->dsa_sc + (int64_t)omp_get_thread_num() * 2 * ws->max_kv_len;
            const int64_t n = md->positions[t] + 1, first = lc ? 0 : q0; /* keys 0..p; the step's rows: from q0 */
            for (int64_t j = 0; j < n; j++)
                sc[j] = kvci_dsa_score(ws->ix_q + t * Hi * Di, ws->ix_w + t * Hi, Hi, Di, scale,
                                       keys + key_slot(s, key, lc, r, first, j) * Di);
            ws->dsa_n[t] = kvci_dsa_pick(sc, n, Kc, sc + ws->max_kv_len, ws->dsa_pos + t * Kc);
        }
        q0 = q1;
    }
    return KVC_OK;
}

kvc_status kvci_dsa_attend(const kvc_fwd_step *s, const kvc_attn_call *c) {
    kvc_model_workspace *ws = s->ws;
    const kvc_step_metadata *md = s->md;
    const kvc_layer_cache *lc = s->a->caches ? &s->a->caches->layers[c->layer] : NULL;
    const kvc_step_key *key = NULL;
    if (lc && !c->q_rope) KVC_TRY(kvci_cache_write_kv(s, c)); /* full form; the latent is written by the caller */
    if (lc && s->a->caches->kind == KVC_MCACHE_PAGED && !(key = kvci_layer_key(s, lc))) return KVC_EINVAL;
    const int64_t Kc = ws->dsa_k;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        for (int64_t t = q0; t < md->cu_seq_lens_q[r]; t++)
            for (int64_t i = 0; i < ws->dsa_n[t]; i++)
                ws->dsa_bt[t * Kc + i] = (int32_t)key_slot(s, key, lc, r, q0, ws->dsa_pos[t * Kc + i]);
        q0 = md->cu_seq_lens_q[r];
    }
    return kvci_attn_sparse(s, c, ws->dsa_bt, ws->dsa_n, Kc);
}
