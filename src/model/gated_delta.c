/* Qwen3-Next's Gated DeltaNet layer (Qwen3NextGatedDeltaNet) in place of attention. in_proj_qkvz and in_proj_ba of
 * the normed input; q | k | v through a causal depthwise convolution of K taps per channel (tap j reads the input
 * K - 1 - j steps back; before a row's first token its conv state, or zeros when the row starts its sequence) and
 * SiLU; q and k L2-normalised per head (x / sqrt(sum x^2 + 1e-6)), q divided by dk^1/2; per value head j (key head
 * j / (nv / nk), transformers' repeat_interleave) beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias) and the
 * gated delta rule over its state S [dk, dv], token by token in f32:
 *     S = exp(g) S;  delta = beta (v - S^T k);  S = S + k delta^T;  o = S^T q
 * then o RMS-normalised over dv (the weight as is), times silu(z), and out_proj. transformers' torch path runs a
 * prefill by its chunked form of the same recurrence (64 tokens a chunk) and a decode step by this sequential one;
 * the runtime runs the sequential one for every token whatever the step (docs/runtime.md, "Gated DeltaNet": the
 * logits within 3.2e-5 of the chunked form's on the oracle, transformers' own two forms 1.5e-5 apart). Qwen3.5
 * (gdn_split_proj) projects q | k | v, z, b and a apart instead of grouped per key head; OLMo Hybrid as Qwen3.5 (its q,
 * k and v rows joined at load), beta times 2 (gdn_neg_eigval), its gated norm's eps gdn_norm_eps. Each output element
 * is one fixed-order sum on one thread, each head's recurrence on one thread: a sequence's bits do not depend on how it
 * was split into steps or batched. The conv state (kvc_layer_cache.state [.., K - 1, C], oldest first) and the
 * recurrent state (.recurrent [.., nv, dk, dv]) are read and rewritten by every step with caches. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/batch.h"
#include "model/act.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"
#include "ops/write_internal.h"

/* The conv channels C = 2 nk dk + nv dv, the projection width P = C + nv dv (z). */
static int64_t conv_channels(const kvc_model_config *c) {
    return 2 * c->gdn_k_heads * c->gdn_k_dim + c->gdn_v_heads * c->gdn_v_dim;
}

int64_t kvci_gated_delta_floats(const kvc_model_config *c, int64_t Tm) {
    bool any = false;
    for (int64_t l = 0; l < c->num_layers; l++) any |= c->layer_gdn[l];
    if (!any) return 1;
    if (c->gdn_kda) return kvci_kda_floats(c, Tm); /* Kimi Delta Attention's own scratch */
    const int64_t C = conv_channels(c), nv = c->gdn_v_heads, dk = c->gdn_k_dim, dv = c->gdn_v_dim;
    /* per token: qkvz [C + nv dv], ba [2 nv], conv input [C], conv output [C], core [nv dv]; then per head a state
     * [dk, dv] (no caches), q, k and the decays [3 dk], the S^T k sums [dv] */
    return Tm * (3 * C + 2 * nv * dv + 2 * nv) + nv * (dk * dv + 3 * dk + dv);
}

/* The scratch of one step, carved from ws->gdn (kvci_gated_delta_floats). */
typedef struct gdn_bufs {
    float *qkvz, *ba, *xin, *xc, *core; /* [Tm, P], [Tm, 2 nv], [Tm, C], [Tm, C], [Tm, nv dv] */
    float *heads;                       /* [nv, dk dv + 2 dk + dv] */
    int64_t Tm;
} gdn_bufs;

static gdn_bufs carve(const kvc_model_config *c, kvc_model_workspace *ws) {
    const int64_t Tm = ws->max_tokens, C = conv_channels(c), vd = c->gdn_v_heads * c->gdn_v_dim;
    gdn_bufs b = {.qkvz = ws->gdn, .Tm = Tm};
    b.ba = b.qkvz + Tm * (C + vd);
    b.xin = b.ba + Tm * 2 * c->gdn_v_heads;
    b.xc = b.xin + Tm * C;
    b.core = b.xc + Tm * C;
    b.heads = b.core + Tm * vd;
    return b;
}

/* Token t's z [dv], b and a of value head j (key head g, its i-th of r): grouped per key head in qkvz and ba
 * (Qwen3-Next), or apart (Qwen3.5: z [T, nv dv] in qkvz, b [T, nv] then a [Tm, nv] in ba). */
static const float *z_of(const kvc_model_config *c, const gdn_bufs *b, int64_t t, int64_t j, int64_t g, int64_t i) {
    const int64_t nv = c->gdn_v_heads, dk = c->gdn_k_dim, dv = c->gdn_v_dim, r = nv / c->gdn_k_heads;
    if (c->gdn_split_proj) return b->qkvz + (t * nv + j) * dv;
    const int64_t P = conv_channels(c) + nv * dv;
    return b->qkvz + t * P + g * (2 * dk + 2 * r * dv) + 2 * dk + r * dv + i * dv;
}

static void ba_of(const kvc_model_config *c, const gdn_bufs *b, int64_t t, int64_t j, int64_t g, int64_t i, float *bv,
                  float *av) {
    const int64_t nv = c->gdn_v_heads, r = nv / c->gdn_k_heads;
    if (c->gdn_split_proj) {
        *bv = b->ba[t * nv + j], *av = b->ba[(b->Tm + t) * nv + j];
        return;
    }
    const float *row = b->ba + t * 2 * nv + g * 2 * r; /* per key head: its value heads' b, then their a */
    *bv = row[i], *av = row[r + i];
}

/* Each token's conv input q | k | v [C] from its qkvz row, grouped per key head g: q [dk], k [dk], then its r = nv /
 * nk value heads' v [r dv] and z [r dv]. */
static void gather_qkv(const kvc_model_config *c, const float *qkvz, int64_t T, float *xin) {
    const int64_t nk = c->gdn_k_heads, dk = c->gdn_k_dim, dv = c->gdn_v_dim, r = c->gdn_v_heads / nk;
    const int64_t C = conv_channels(c), P = C + c->gdn_v_heads * dv, grp = 2 * dk + 2 * r * dv;
    for (int64_t t = 0; t < T; t++)
        for (int64_t g = 0; g < nk; g++) {
            const float *src = qkvz + t * P + g * grp;
            float *dst = xin + t * C;
            memcpy(dst + g * dk, src, (size_t)dk * sizeof(float));
            memcpy(dst + nk * dk + g * dk, src + dk, (size_t)dk * sizeof(float));
            memcpy(dst + 2 * nk * dk + g * r * dv, src + 2 * dk, (size_t)(r * dv) * sizeof(float));
        }
}

/* The conv of one row (kvci_causal_conv, no bias): its inputs x [n, C], its state st [K - 1, C] (NULL: zeros;
 * fresh: zeroed first), outputs y [n, C] = silu(conv); then st holds the row's last K - 1 inputs. */
static void conv_row(const kvc_model_config *c, const float *taps, const float *x, int64_t n, float *st, bool fresh,
                     float *y) {
    const int64_t C = conv_channels(c);
    kvci_causal_conv(x, C, n, C, taps, c->gdn_conv_kernel, NULL, st, fresh, y);
    for (int64_t i = 0; i < n * C; i++) y[i] = kvci_silu_mul(y[i], 1.0f);
}

/* x [n] times 1 / sqrt(sum x^2 + 1e-6) (transformers' l2norm), then divided by div, into y. */
static void l2norm(const float *x, int64_t n, float div, float *y) {
    const double inv = 1.0 / sqrt(kvci_sum_squares(x, n) + 1e-6);
    for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * inv) / div;
}

/* Value head j of one row's n tokens: the recurrence over its state S [dk, dv] (zeroed first when fresh), each
 * token's o [dv] into core (kvci_kda_token with one decay for every key channel), then the gated norm of o by
 * silu(z). scratch: [3 dk + dv]. */
static void head_row(const kvc_model_config *c, const kvc_layer_weights *w, const gdn_bufs *b, int64_t t0, int64_t n,
                     int64_t j, float *S, bool fresh, float *scratch) {
    const int64_t nk = c->gdn_k_heads, nv = c->gdn_v_heads, dk = c->gdn_k_dim, dv = c->gdn_v_dim, r = nv / nk;
    const int64_t g = j / r, i = j % r, C = conv_channels(c);
    const float eps = (float)(c->gdn_norm_eps > 0.0 ? c->gdn_norm_eps : c->rms_norm_eps);
    const float root = (float)sqrt((double)dk), beta_scale = c->gdn_neg_eigval ? 2.0f : 1.0f; /* q / dk^1/2 */
    const float neg_a = -expf(w->gdn_a_log[j]);
    float *q = scratch, *k = scratch + dk, *decays = scratch + 2 * dk, *kvm = scratch + 3 * dk;
    if (fresh) memset(S, 0, (size_t)(dk * dv) * sizeof(float));
    for (int64_t t = t0; t < t0 + n; t++) {
        const float *xc = b->xc + t * C, *v = xc + 2 * nk * dk + j * dv;
        l2norm(xc + g * dk, dk, root, q);
        l2norm(xc + nk * dk + g * dk, dk, 1.0f, k);
        float bv = 0.0f, av = 0.0f;
        ba_of(c, b, t, j, g, i, &bv, &av);
        const float beta = beta_scale / (1.0f + expf(-bv));
        const float decay = expf(neg_a * kvci_softplus(av + w->gdn_dt_bias[j]));
        for (int64_t a = 0; a < dk; a++) decays[a] = decay; /* one decay for every key channel */
        float *o = b->core + t * nv * dv + j * dv;
        kvci_kda_token(S, q, k, v, decays, beta, dk, dv, kvm, o);
        const double inv = kvci_rms_inv(o, dv, eps); /* the gated norm: w * norm(o) * silu(z) */
        const float *z = z_of(c, b, t, j, g, i);
        for (int64_t e = 0; e < dv; e++) o[e] = kvci_silu_mul(z[e], kvci_rms_scaled(o[e], inv, w->gdn_norm[e]));
    }
}

/* Work (state elements times tokens) from which the heads share the OpenMP threads; a small decode step stays on the
 * calling thread. Each head is one thread's whole: the threads never change a bit. */
#define GDN_PARALLEL_WORK (1 << 16)

kvc_status kvci_gated_delta(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    const kvc_step_metadata *md = s->md;
    const int64_t T = s->T, C = conv_channels(c), nv = c->gdn_v_heads, dk = c->gdn_k_dim, dv = c->gdn_v_dim;
    const gdn_bufs b = carve(c, s->ws);
    double t0 = kvci_sp_begin();
    const bool split = c->gdn_split_proj; /* Qwen3.5: q | k | v straight into the conv input */
    const kvc_wmat *mats[4] = {&w->gdn_qkvz, &w->gdn_ba, &w->gdn_z, &w->gdn_a};
    const float *bias[4] = {NULL, NULL, NULL, NULL};
    float *outs[4] = {split ? b.xin : b.qkvz, b.ba, b.qkvz, b.ba + b.Tm * nv};
    KVC_TRY(kvci_linear_shared(s->ws->xn, T, split ? 4 : 2, mats, bias, outs));
    kvci_sp_end(KVC_SP_QKV, t0), t0 = kvci_sp_begin();
    if (!split) gather_qkv(c, b.qkvz, T, b.xin);
    const int64_t per_head = dk * dv + 3 * dk + dv;
    int64_t q0 = 0;
    for (int64_t r = 0; r < md->n_rows; r++) {
        float *conv_st = NULL, *rec = NULL;
        KVC_TRY(kvci_row_states(s, l, r, &conv_st, &rec));
        const int64_t n = md->cu_seq_lens_q[r] - q0;
        const bool fresh = md->seq_lens_kv[r] == n; /* the row starts its sequence in this step */
        conv_row(c, w->gdn_conv, b.xin + q0 * C, n, conv_st, fresh, b.xc + q0 * C);
#pragma omp parallel for schedule(static) if (nv > 1 && n * nv * dk * dv >= GDN_PARALLEL_WORK)
        for (int64_t j = 0; j < nv; j++) {
            float *hs = b.heads + j * per_head; /* S (no caches), then the head's scratch */
            head_row(c, w, &b, q0, n, j, rec ? rec + j * dk * dv : hs, fresh || !rec, hs + dk * dv);
        }
        q0 += n;
    }
    kvci_sp_end(KVC_SP_ATTN, t0), t0 = kvci_sp_begin();
    const kvc_status st = kvci_linear(b.core, T, &w->wo, NULL, s->ws->proj);
    kvci_sp_end(KVC_SP_O, t0);
    return st;
}
