/* The forward pass's workspace and the per-layer pieces it calls. */
#ifndef KVC_MODEL_FORWARD_INTERNAL_H
#define KVC_MODEL_FORWARD_INTERNAL_H

#include "kvcache/ops.h"
#include "model/model_internal.h"
#include "ops/attn_plan.h"

/* Attention of one kind (full, sliding window or chunked local) planned once per step and
 * run by each of its layers (ops/attn_plan.h). */
typedef struct kvc_model_attn_plan {
    kvci_attn_plan plan;
    uint64_t step;  /* the workspace's step it was planned in (0: never) */
    uint64_t plans; /* plans made so far (once per step when every layer of the kind fits) */
    void *ws;       /* its workspace (grows once to the largest step) */
    size_t ws_bytes;
} kvc_model_attn_plan;

#define KVC_ATTN_KINDS 3 /* full, sliding window, chunked local */

struct kvc_model_workspace {
    int64_t max_tokens, max_rows, max_kv_len;
    /* longrope: every token of every step rotates with the long factors, chosen once for the workspace:
     * max_kv_len (the engine's max_model_len, the runner's max_seq_len) beyond
     * original_max_position_embeddings, as vLLM's max_model_len rule (docs/model.md, Phi-3) */
    bool rope_long;
    int64_t qw, kw, vw, ow; /* widths: nH*Dq, Nkv*Dq, Nkv*Dv, nH*max(Dv, rkv) */
    int64_t ffw;            /* widest MLP intermediate (I, 2I for GptOss, Imoe, the shared expert's) */
    float *h;               /* [Tm, H] residual stream */
    float *xn;              /* [Tm, H] normed input of a sub-layer */
    float *q;               /* [Tm, qw] */
    float *k;               /* [Tm, kw] */
    float *v;               /* [Tm, vw] */
    float *att;             /* [Tm, ow] attention output (latent for absorbed MLA) */
    float *proj;            /* [Tm, H] output of o_proj / MLP */
    float *ff_a;            /* [Tm, ffw] */
    float *ff_b;            /* [Tm, ffw] */
    float *fused;           /* [Tm, fw] output of a fused GEMM (q|k|v or gate|up; LFM2's B|C|x), fw = max(qw + kw +
                             * vw, 2 I, 3 H with conv layers; Qwen3-Next's q|gate|k|v: 2 qw + kw + vw) */
    float *mamba;           /* [kvci_mamba2_scratch(Tm)] Mamba2 mixers: conv out, y, states of a step without caches */
    float *acc;             /* [Tm, mw] MoE accumulator (mw = max(H, moe_latent_size)) */
    float *xg;              /* [Tm, mw] MoE gathered rows */
    float *yg;              /* [Tm, mw] MoE expert outputs of the gathered rows */
    float *lat;             /* [Tm, moe_latent_size] Nemotron-H's latent expert inputs (1 float without) */
    float *router;          /* [Tm, E] router logits / scores (E: with LongCat-Flash's zero experts) */
    float *route_tmp;       /* [2E] */
    float *shortcut;        /* [Tm, H] LongCat-Flash: the MoE output of the even sub-layer, else unused */
    float *zamba;           /* [kvci_zamba_scratch(Tm)] Zamba(2): embeddings, shared block input, adapters */
    int32_t *sel;           /* [Tm, k] chosen experts */
    float *selw;            /* [Tm, k] their weights */
    int32_t *tok;           /* [Tm] tokens routed to one expert */
    float *tokw;            /* [Tm] their weights */
    float *mla_a;           /* [Tm, max(rq, rkv + dr)] MLA q_a / kv_a outputs; with mla_q_gate [Tm, 3 rq]: the
                             * normalised q latent [T, rq], then q_gate_proj's input [T, 2 rq] */
    float *mla_b;           /* [Tm, nH * max(dn + dv, rkv)] MLA kv_b output or absorbed q */
    float *q_rope;          /* [Tm, nH, dr] MLA absorbed: the rotated rope lanes of the queries */
    float *cos;             /* [Tm, rot] RoPE cos of each token's position (this step) */
    float *sin;             /* [Tm, rot] */
    float *cos_sliding;     /* [Tm, rot] the sliding layers' own (model inv_freq_sliding), else unused */
    float *sin_sliding;     /* [Tm, rot] */
    float *rope_tmp;        /* [rot] */
    float *qk_ss;           /* [2 Tm] OLMo 2 under tensor parallelism: each token's q and k sums of squares */
    float *gate;            /* [Tm, qw] the attention output gates (Qwen3-Next's attn_output_gate, AFMoE's
                             * attn_gate_proj), else unused */
    float *gnorm;           /* [Tm, gated_norm_rank] A.X-K2's gated norms' fc1 output (gated_norm.c), else unused */
    float *gdn;             /* [Tm, gdn_w] Gated DeltaNet scratch (gated_delta.c), else unused */
    float *ple;             /* [Tm, L P] Gemma 4's per-layer inputs of the step (P = ple_dim), else unused */
    float *ple_a;           /* [max(Tm, L) P] their scratch */
    float *kv_keep;         /* [2, Tm, kw + vw] Gemma 4 without caches: the full (0) and sliding (1) KV-shared layers'
                             * source rows, else unused */
    float *altup;           /* [2, K, Tm, H] Gemma 3n: the AltUp copies of the step (K = altup_inputs), then their
                             * predictions; else unused */
    float *altup_c;         /* [Tm, K K + K] the router's outputs and the coefficients */
    float *laurel;          /* [Tm, H] the LAuReL branch */
    float *laurel_r;        /* [Tm, laurel_rank] its low-rank rows */
    void *kc;               /* [Tm, kw] keys in the cache dtype (f32-sized, so any dtype fits) */
    void *vc;               /* [Tm, vw] values in the cache dtype */
    int64_t *slots;         /* [Tm] writes by slot into contiguous caches: cache row * S_max + position */
    int64_t *lens_a;        /* [max_rows] */
    int64_t *lens_b;        /* [max_rows] */
    /* DeepSeek sparse attention (attn_dsa.c; 1 element without), Kc = min(index_topk, max_kv_len) */
    float *ix_q;      /* [Tm, Hi, Di] indexer queries */
    float *ix_k;      /* [Tm, Di] indexer keys of the step */
    float *ix_w;      /* [Tm, Hi] indexer head weights, times Hi^-1/2 */
    float *dsa_sc;    /* [dsa_threads, 2, max_kv_len] a query's scores and their copy for the selection */
    int32_t *dsa_pos; /* [Tm, Kc] each query's chosen key positions, ascending (kept for shared layers) */
    int32_t *dsa_bt;  /* [Tm, Kc] their slots in the layer's caches (the sparse call's block table) */
    int64_t *dsa_n;   /* [Tm] keys chosen per query */
    int64_t *dsa_cu;  /* [Tm] 1, 2, .., Tm: one query per request of the sparse call */
    int64_t dsa_k;    /* Kc */
    int dsa_threads;
    float *hc;     /* [Tm, hc_mult, H] HY V4's residual streams (hyper_conn.c), else 1 float */
    float *hc_w;   /* [Tm, 2 hc_mult] their pre | post weights of the sub-layer being run */
    void *attn_ws; /* kvc_attention_cpu workspace of per-row calls (grows once to the largest step) */
    size_t attn_ws_bytes;
    uint64_t step;                                  /* forward calls so far (plans hold for one) */
    kvc_model_attn_plan attn_plans[KVC_ATTN_KINDS]; /* by kind: full, sliding, chunked (run_attention) */
};

/* What one layer's attention sees of the step. */
typedef struct kvc_fwd_step {
    const kvc_model *m;
    kvc_model_workspace *ws;
    const kvc_forward_args *a;
    const kvc_step_metadata *md;
    int64_t T;
    bool fresh;             /* every row's keys are all in the step (packed attention, then write) */
    const float *cos, *sin; /* [T, rot] the RoPE tables of the layer being run (its kind's) */
    int64_t rot, D;         /* that layer's rotary width and q/k head dim (kvci_layer_shape) */
} kvc_fwd_step;

/* RoPE (the config's rope_form) of n_heads heads stride floats apart in each of the step's token
 * rows (row_stride floats apart), at each token's position (s->cos/sin). */
void kvci_fwd_rope(const kvc_fwd_step *s, float *x, int64_t n_heads, int64_t stride, int64_t row_stride);
/* RoPE (the config's rope_form, half-split or pairs) (when `rotate`; SmolLM3's no-rope layers: not) of token t's row
 * (n_heads heads stride floats apart) at its position, each head first RMS-normalised over head_dim channels by norm
 * (the Qwen3 q/k norm, rms_norm_eps; NULL: none), or with cfg.qk_norm_whole the heads together over n_heads * head_dim
 * channels (OLMo 2; stride == head_dim), or with cfg.layer_norm each head LayerNormed by its own weights, norm
 * [n_heads, head_dim] (Cohere's use_qk_norm), or, given a bias [head_dim], each head LayerNormed by the one weight
 * norm [head_dim] and that bias (Persimmon's q/k LayerNorms); on the calling thread. */
void kvci_fwd_norm_rope_token(const kvc_fwd_step *s, int64_t t, float *row, int64_t n_heads, int64_t stride,
                              const float *norm, const float *bias, bool rotate);

/* Cross-checks of the step metadata a caller hands the forward (forward_md.c): each row's lengths, positions,
 * kv_pos and cu_seq_lens_kv agree (*fresh: every row's keys are all in the step); with paged caches each key's
 * slots are the ones its rows' tables give, and no two rows share a state block. KVC_EINVAL / KVC_ERANGE naming the
 * field and row. */
kvc_status kvci_fwd_check_rows(const kvc_step_metadata *md, int64_t max_kv_len, bool *fresh);
kvc_status kvci_fwd_check_keys(const kvc_step_metadata *md, const kvc_model_caches *cs,
                               int64_t *scratch /* [n_rows] */);
/* Contiguous caches: each step row's cache row within [0, rows) and no two alike (sorted in scratch [n_rows]). */
kvc_status kvci_fwd_check_cache_rows(const int64_t *cache_rows, int64_t n_rows, int64_t rows, int64_t *scratch);

/* The attention sub-layers: read ws->xn [T, H], write ws->proj [T, H]. */
kvc_status kvci_attn_gqa(const kvc_fwd_step *s, int64_t l);
kvc_status kvci_attn_mla(const kvc_fwd_step *s, int64_t l);
/* Gemma 4 (attn_gemma4.c): its attention; the step's per-layer inputs into ws->ple from the embedded rows in ws->h
 * (ids [T]); after layer l's MLP, its per-layer input block and layer scalar on ws->h. */
kvc_status kvci_attn_gemma4(const kvc_fwd_step *s, int64_t l);
kvc_status kvci_gemma4_per_layer_inputs(const kvc_model *m, kvc_model_workspace *ws, const int32_t *ids, int64_t T);
kvc_status kvci_gemma4_layer_tail(const kvc_fwd_step *s, int64_t l);
/* Gemma 4's feed-forward of layer l into ws->proj: its dense MLP of ws->xn and, with enable_moe_block, the experts
 * beside it (attn_gemma4.c; kvci_ffn_gemma4_experts, ffn.c: the routing and the experts over x [T, H] into
 * ws->acc from the router logits in ws->router). */
kvc_status kvci_gemma4_ffn(const kvc_fwd_step *s, int64_t l);
/* Gemma 3n (gemma3n.c): the AltUp copies from the embedded rows in ws->h (the per-layer inputs computed); layer l
 * on them; their merge into ws->h before the final norm. Phi^-1(p) as torch's Normal(0, 1).icdf computes it in f32
 * (the sparse layers' standard-deviation multiplier, p in [0, 1)). */
kvc_status kvci_gemma3n_streams(const kvc_fwd_step *s);
kvc_status kvci_gemma3n_layer(const kvc_fwd_step *s, int64_t l);
kvc_status kvci_gemma3n_merge(const kvc_fwd_step *s);
float kvci_gemma3n_std_multiplier(float p);
kvc_status kvci_ffn_gemma4_experts(const kvc_fwd_step *s, int64_t l, const float *x);
/* DiffLlama's differential attention (attn_diff.c): q [T, nH, D], k / v [T, nKV, D] (rotated) packed into qd
 * [T, nH, 2D] (the query heads in pair order, zero-padded), kd / vd [T, nKV/2, 2D] (heads p and p + nKV/2 side by
 * side); the attention's att [T, nH, 2D] of the packed heads combined into out [T, nH D] (layer l's lambda, the
 * group norm, 1 - lambda_init). */
void kvci_diff_pack(const kvc_fwd_step *s, const float *q, const float *k, const float *v, float *qd, float *kd,
                    float *vd);
void kvci_diff_combine(const kvc_fwd_step *s, int64_t l, const float *att, float *out);
/* JetMoE's mixture of attention heads (attn_moa.c; kvc_model_config.attention_experts). */
kvc_status kvci_attn_moa(const kvc_fwd_step *s, int64_t l);
/* The k largest of the E logits lg into sel (ties: lower index first) and their softmax (over those k only, f32) into
 * sw: the GptOss, Granite MoE and JetMoE routers. */
void kvci_top_k_softmax(const float *lg, int64_t E, int64_t K, int32_t *sel, float *sw);
/* Row r's state in t, one of layer l's state tensors (kvci_layer_state_slot; state_layers.c): its cache row
 * (cache_rows) or its block of the layer's state key (paged); *out NULL when the step has no caches. Refused naming
 * the layer and row when the block table is missing or the row or block is out of range. */
kvc_status kvci_row_state(const kvc_fwd_step *s, const kvc_layer_cache *lc, const kvc_tensor *t, int64_t l, int64_t r,
                          float **out);
/* Row r's conv state (kvc_layer_cache.state) and recurrent state (.recurrent) of layer l, as kvci_row_state gives
 * each; both NULL when the step has no caches. */
kvc_status kvci_row_states(const kvc_fwd_step *s, int64_t l, int64_t r, float **conv, float **rec);
/* The Mamba2 mixer in place of attention (mamba2.c): reads ws->xn, writes ws->proj, uses ws->fused [T,
 * kvci_mamba2_in_width] and ws->mamba, reads and rewrites each row's conv and ssm states when the step has caches. */
kvc_status kvci_mamba2_mixer(const kvc_fwd_step *s, int64_t l);
/* The in_proj rows of c's mixer (I + C + nh) and the floats of ws->mamba for `tokens` tokens. */
int64_t kvci_mamba2_in_width(const kvc_model_config *c);
int64_t kvci_mamba2_scratch(const kvc_model_config *c, int64_t tokens);
/* Zamba's and Zamba2's scratch floats for a step of `tokens` (zamba.c). */
int64_t kvci_zamba_scratch(const kvc_model_config *c, int64_t tokens);
/* The Mamba-1 mixer in place of attention (mamba1.c): reads ws->xn, writes ws->proj, uses ws->fused [T, 2 I] and
 * ws->mamba [kvci_mamba1_scratch(T)], reads and rewrites each row's conv and ssm states when the step has caches. */
kvc_status kvci_mamba1_mixer(const kvc_fwd_step *s, int64_t l);
int64_t kvci_mamba1_scratch(const kvc_model_config *c, int64_t tokens);
/* RWKV-4's time mixing in place of attention and channel mixing in place of the MLP (rwkv.c; family rwkv): read
 * ws->xn, write ws->proj, use ws->mamba [kvci_rwkv_scratch(T)]; read and rewrite each row's token-shift state (.state
 * [2, H]) and WKV state (.recurrent [3, H]: num, den, max) when the step has caches. */
kvc_status kvci_rwkv_time_mix(const kvc_fwd_step *s, int64_t l);
kvc_status kvci_rwkv_channel_mix(const kvc_fwd_step *s, int64_t l);
int64_t kvci_rwkv_scratch(const kvc_model_config *c, int64_t tokens);
/* One token of channel i of the WKV recurrence over st [3, H] (num, den, max): out = (e^(max - p) num + e^(first + k -
 * p) v) / (e^(max - p) den + e^(first + k - p)), p = max(max, first + k); then num, den decay by e^decay (decay =
 * -exp(time_decay)) and take e^k v, e^k, all relative to the new max(max + decay, k). */
void kvci_rwkv_wkv_token(float *st, int64_t H, int64_t i, float decay, float first, float k, float v, float *out);
/* The causal depthwise convolution of one row's n tokens (conv_short.c; LFM2's and Mamba2's): out [n, C], channel
 * ch of token t = bias[ch] (NULL: none) + sum over j < L of taps[ch L + j] x the input L - 1 - j steps back, the
 * inputs n rows `stride` floats apart (channels from in's column 0) and, before the row's first token, st [L - 1,
 * C]'s columns (oldest first; zeros when fresh or st NULL); then st (when given) holds the row's last L - 1 inputs.
 * One fixed-order sum per output. */
void kvci_causal_conv(const float *in, int64_t stride, int64_t n, int64_t C, const float *taps, int64_t L,
                      const float *bias, float *st, bool fresh, float *out);
/* LFM2's short convolution in place of attention (conv_short.c): reads ws->xn, writes ws->proj, uses ws->fused
 * [T, 3H], reads and rewrites each row's conv state (kvc_layer_cache.state) when the step has caches. */
kvc_status kvci_conv_short(const kvc_fwd_step *s, int64_t l);
/* Qwen3-Next's Gated DeltaNet in place of attention (gated_delta.c): reads ws->xn, writes ws->proj, uses
 * ws->gdn; reads and rewrites each row's conv and recurrent states when the step has caches. */
kvc_status kvci_gated_delta(const kvc_fwd_step *s, int64_t l);
/* A.X-K2's gate behind a sub-layer's input norm (gated_norm.c): ws->xn [T, H] (already RMSNormed) times
 * sigmoid(fc[1](silu(fc[0](xn)))); uses ws->gnorm and ws->proj. */
kvc_status kvci_gated_norm(const kvc_fwd_step *s, const kvc_wmat fc[2]);
/* Floats of ws->gdn for steps of Tm tokens (1 without Gated DeltaNet layers). */
int64_t kvci_gated_delta_floats(const kvc_model_config *c, int64_t Tm);
/* Kimi-Linear's Kimi Delta Attention in place of attention (kda.c; layer_gdn with gdn_kda): reads ws->xn, writes
 * ws->proj, uses ws->gdn (kvci_kda_floats of it); reads and rewrites each row's conv and recurrent states. */
kvc_status kvci_kda(const kvc_fwd_step *s, int64_t l);
int64_t kvci_kda_floats(const kvc_model_config *c, int64_t Tm);
/* One token of the delta rule with a per-key-channel decay over S [dk, dv]: S = diag(decay) S, delta = beta (v -
 * S^T k), S += k delta^T, o [dv] = S^T q; kvm: [dv] scratch. Gated DeltaNet's step too, one decay for every channel. */
void kvci_kda_token(float *S, const float *q, const float *k, const float *v, const float *decay, float beta,
                    int64_t dk, int64_t dv, float *kvm, float *o);
/* MiniMax's lightning attention in place of attention (lightning.c; layer_lightning): reads ws->xn, writes ws->proj,
 * uses ws->gdn (kvci_lightning_floats of it, 1 without lightning layers); reads and rewrites each row's state. */
kvc_status kvci_lightning(const kvc_fwd_step *s, int64_t l);
int64_t kvci_lightning_floats(const kvc_model_config *c, int64_t Tm);
/* One token of lightning attention over S [d, d]: S = decay S + k v^T, o [d] = S^T q. */
void kvci_lightning_token(float *S, const float *q, const float *k, const float *v, float decay, int64_t d, float *o);
/* RecurrentGemma's recurrent block in place of attention (rglru.c; layer_rglru): reads ws->xn, writes ws->proj, uses
 * ws->gdn (kvci_rglru_floats of it, 1 without such layers); reads and rewrites each row's conv and RG-LRU states. */
kvc_status kvci_rglru(const kvc_fwd_step *s, int64_t l);
int64_t kvci_rglru_floats(const kvc_model_config *c, int64_t Tm);
/* One token of the RG-LRU over W channels: u [W] the conv's output, gi / ga [W] the input and recurrence gates'
 * pre-activations, neg8_sp [W] -8 softplus(recurrent_param); s [W] the state, rewritten (reset: s = sigmoid(gi) u);
 * out [W] the new s (out may be u). */
void kvci_rglru_token(const float *u, const float *gi, const float *ga, const float *neg8_sp, int64_t W, bool reset,
                      float *s, float *out);
/* The FFN sub-layers: read ws->xn, write ws->proj. */
/* SwiGLU MLP (MF 1.6) of x [n, H] into out [n, H] (act: its gate's activation, silu; gelu_tanh for
 * Gemma 3's GeGLU); ga, gb: [n, n_inter] scratch. */
kvc_status kvci_swiglu_mlp(kvc_mlp_act act, const float *x, int64_t n, const kvc_wmat *g, const float *bg,
                           const kvc_wmat *u, const float *bu, const kvc_wmat *d, const float *bd, float *ga, float *gb,
                           float *out);
/* Ungated MLP (StarCoder2's, Nemotron-H's experts) of x [n, H] into out [n, H]: down(act(up x)); xielu: Apertus's
 * four parameters when act is xielu (else NULL); a: [n, up->rows] scratch. */
kvc_status kvci_plain_mlp(kvc_mlp_act act, const float *const *xielu, const float *x, int64_t n, const kvc_wmat *up,
                          const float *bu, const kvc_wmat *down, const float *bd, float *a, float *out);
/* The dense gated MLP of layer l (its w_gate / w_up / w_down and biases, the config's mlp_act) into ws->proj. */
kvc_status kvci_fwd_dense_mlp(const kvc_fwd_step *s, int64_t l);
kvc_status kvci_ffn_gpt_oss(const kvc_fwd_step *s, int64_t l);
/* DeepSeek's MoE layer: routed experts by V3's sigmoid router (MF 4.5) or, v2, V2's softmax one, plus shared experts.
 */
kvc_status kvci_ffn_deepseek(const kvc_fwd_step *s, int64_t l, bool v2);
/* LongCat-Flash: each sub-layer's dense MLP, the even one's MoE (softmax router, zero experts) added after the odd. */
kvc_status kvci_ffn_longcat(const kvc_fwd_step *s, int64_t l);
/* Qwen3-MoE / Mixtral: softmax router, top-k (renormalised when norm_topk_prob), SwiGLU experts. */
kvc_status kvci_ffn_softmax_moe(const kvc_fwd_step *s, int64_t l);
/* Granite MoE (and Shared): the k largest router logits, softmax over them (GptOss's router), SwiGLU experts. */
kvc_status kvci_ffn_granite_moe(const kvc_fwd_step *s, int64_t l);
/* JetMoE: Granite MoE's router and experts, the block's bias (moe_b [H]) added. */
kvc_status kvci_ffn_jetmoe(const kvc_fwd_step *s, int64_t l);
/* Llama 4: sigmoid of the top-k logits, each scaling its expert's input; the shared expert added. */
kvc_status kvci_ffn_sigmoid_moe(const kvc_fwd_step *s, int64_t l);
/* ERNIE 4.5 MoE: softmax router choosing by probability plus correction bias, min-clamped renormalisation. */
kvc_status kvci_ffn_ernie_moe(const kvc_fwd_step *s, int64_t l);
/* Phi-3.5-MoE: SparseMixer's two experts (eval mode), SwiGLU experts. */
kvc_status kvci_ffn_phimoe(const kvc_fwd_step *s, int64_t l);
/* Kolibri 1: the top-k of logit + correction bias, weighted by their logits' sigmoids; the shared MLP added. */
kvc_status kvci_ffn_kolibri(const kvc_fwd_step *s, int64_t l);

/* Attention of q [T, nH, D] over k [T, Nkv, D], v [T, Nkv, Dv] of the step
 * and/or the layer's cache (full form): writes the cache and fills out
 * [T, nH, Dv]. window 0 = full attention; chunk > 0: chunked local; sinks [nH] or NULL; ALiBi slopes [nH] or NULL. */
typedef struct kvc_attn_call {
    int64_t layer;
    const float *q, *k, *v;
    int64_t nH, nKV, D, Dv;
    double scale;
    double softcap; /* the operator's logit_softcap (0: none) */
    int64_t window;
    int64_t chunk; /* the operator's attention_chunk_size (0: none) */
    const float *sinks;
    const float *alibi;  /* the operator's alibi_slopes [nH] (NULL: none) */
    bool alibi_bf16;     /* the operator's alibi_bf16 (Falcon's form) */
    const float *q_rope; /* MLA absorbed [T, nH, dr]: k is the latent cache (also the value), v the rope cache */
    int64_t dr;
    float *out;
} kvc_attn_call;
kvc_status kvci_attn_core(const kvc_fwd_step *s, const kvc_attn_call *c);
/* Attention over what the layer's cache holds (its writes done), any form. */
kvc_status kvci_attn_cached(const kvc_fwd_step *s, const kvc_attn_call *c);
/* DeepSeek sparse attention (attn_dsa.c): layer l's indexer over the step (cq [T, q_lora_rank] the normed q latent,
 * ws->xn the layer's input) picks each query's keys into ws->dsa_pos / dsa_n, its keys written to the layer's
 * index_k cache first; a shared layer keeps the previous choice. */
kvc_status kvci_dsa_select(const kvc_fwd_step *s, int64_t l, const float *cq);
/* The call's attention over the chosen keys alone: full-form caches written first (c->k, c->v); latent caches
 * already written (c->q_rope given). */
kvc_status kvci_dsa_attend(const kvc_fwd_step *s, const kvc_attn_call *c);
/* HY V4's hyper-connections (hyper_conn.c). One hyper-connection's parameters: fn [m, n H] (m = 2n, or n for the
 * head), base [m], scale [2] ([1] for the head), eps the input RMS eps, hc_eps added to every weight, magnitude the
 * post weights' scale. */
typedef struct kvc_hc_params {
    const float *fn, *base, *scale;
    double eps;
    float hc_eps, magnitude;
} kvc_hc_params;
/* One token's weights from its streams x [n, H]: pre [n] = sigmoid(mix[:n] scale[0] + base[:n]) + hc_eps and, post
 * not NULL, post [n] = magnitude sigmoid(mix[n:] scale[1] + base[n:]) + hc_eps, mix = (fn x) (mean(x^2) + eps)^-1/2. */
void kvci_hc_weights(const float *x, int64_t n, int64_t H, const kvc_hc_params *p, float *pre, float *post);
/* The streams ws->hc of the step from the embedding rows ws->h [T, H] (each stream a copy). */
void kvci_hc_begin(const kvc_fwd_step *s);
/* Layer l's hyper-connection before its attention (which 0) or MLP (1): ws->h [T, H] the pre-weighted sum of the
 * streams, ws->hc_w the weights. */
void kvci_hc_pre(const kvc_fwd_step *s, int64_t l, int which);
/* The sub-layer's output ws->proj [T, H] (summed over tensor-parallel ranks) into stream i times post_i. */
kvc_status kvci_hc_add(const kvc_fwd_step *s);
/* The head's collapse of the streams into ws->h [T, H]. */
void kvci_hc_head(const kvc_fwd_step *s);
/* One query's indexer score of one key: sum over heads h of w[h] relu(scale q[h] . key), q [Hi, Di], key [Di]. */
float kvci_dsa_score(const float *q, const float *w, int64_t Hi, int64_t Di, float scale, const float *key);
/* The top k of scores sc[0..n) into out (ascending positions; all n when n <= k): the k largest, ties at the k-th
 * value broken toward the earlier position; tmp [n] scratch. Returns the count. */
int64_t kvci_dsa_pick(const float *sc, int64_t n, int64_t k, float *tmp, int32_t *out);
/* Attention of c over, per query t, its n[t] keys at slots[t * width ..] of the layer's caches (none: rows of c->k /
 * c->v by token); kvc_attention_cpu paged with blocks of one slot, one query per request. */
kvc_status kvci_attn_sparse(const kvc_fwd_step *s, const kvc_attn_call *c, const int32_t *slots, const int64_t *n,
                            int64_t width);
/* Writes c->k / c->v into the layer's full-form cache (quantised or converted to its dtype). */
kvc_status kvci_cache_write_kv(const kvc_fwd_step *s, const kvc_attn_call *c);
/* The manager key of lc's block table and slot mapping in the step (paged), NULL with the error set. */
const kvc_step_key *kvci_layer_key(const kvc_fwd_step *s, const kvc_layer_cache *lc);

/* rows [n] f32 as float cache tensor t stores them: rows itself for f32;
 * else converted into buf (f16/bf16, rounded to nearest even). */
const void *kvci_cache_rows(const kvc_tensor *t, const float *rows, int64_t n, void *buf);
/* Writes rows [T, heads, dim] of t's dtype into float layer cache tensor t (contiguous per row or paged by slots). */
kvc_status kvci_cache_write(const kvc_fwd_step *s, const kvc_layer_cache *lc, kvc_tensor *t, const void *rows,
                            int64_t heads, int64_t dim);
/* The cache slot of each of the step's tokens: the layer key's slot mapping
 * (paged), or cache row * S_max + position (contiguous caches seen as
 * blocks of S_max tokens); NULL (error set) when a key or row is missing. */
const int64_t *kvci_cache_slots(const kvc_fwd_step *s, const kvc_layer_cache *lc);
/* Paged: the block size of lc, cs->block_size or, where that is 0, its k tensor's block dimension
 * ([NB, bs, heads, dim]; BNNDBS [NB, heads, dim, bs]): keys of different block sizes (an engine that
 * unified their pages, kvc_engine_params.shared_pools) give each layer its key's. */
int64_t kvci_layer_block_size(const kvc_model_caches *cs, const kvc_layer_cache *lc);
/* Slots of a layer's caches: NB * block_size (paged, any layout) or rows * S_max (contiguous). */
int64_t kvci_cache_slot_count(const kvc_model_caches *cs, const kvc_layer_cache *lc);

#endif /* KVC_MODEL_FORWARD_INTERNAL_H */
