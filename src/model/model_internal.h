/* Internal layout of a kvc_model: the weights per layer, named as in the
 * Hugging Face checkpoints (MF 2, 3.5, 4.5), and the small dense kernels
 * shared by the families (RMSNorm and RoPE are the ops layer's). The
 * matrices the GEMM reads are kvc_wmat views in the checkpoint's dtype (bf16
 * packed for kvci_gemm_bf16, else f32) or the dtype asked at load (f32, bf16,
 * or quantized Q8_0 / Q4_0 packed for kvci_gemm_wq); vectors are f32. */
#ifndef KVC_MODEL_INTERNAL_H
#define KVC_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/model.h"
#include "model/json_read.h" /* KVC_TRY */

/* Gemma 3n's most AltUp copies of the hidden state (altup_num_inputs; the E2B / E4B models' 4). */
#define KVC_GEMMA3N_MAX_ALTUP 16

/* One GEMM operand: `count` matrices [rows = out, cols = in] (count > 1: the
 * experts of a MoE layer, [E, rows, cols]); data NULL when the family/config
 * has none. F32: rows of cols floats; BF16, F16: each matrix packed
 * (gemm_bf16.h, kvci_bf16_packed_elems); Q8_0, Q4_0: each matrix quantized and
 * packed (gemm_quant.h, kvci_wq_packed_bytes); the next matrix 64-byte aligned
 * after it. KVC_WMAT_CHECKPOINT is no matrix's dtype: asked at load, it keeps
 * the checkpoint's (kvci_wmat_dtype_for). */
typedef enum kvc_wmat_dtype {
    KVC_WMAT_CHECKPOINT = -1,
    KVC_WMAT_F32,
    KVC_WMAT_BF16,
    KVC_WMAT_Q8_0,
    KVC_WMAT_Q4_0,
    KVC_WMAT_F16, /* only as an f16 checkpoint stores it (kvci_wmat_dtype_for) */
    KVC_WMAT_COUNT
} kvc_wmat_dtype;
typedef struct kvc_wmat {
    void *data;
    kvc_wmat_dtype dtype;
    int64_t count, rows, cols;
    bool act_bf16; /* bf16 only: activations rounded to bf16 (kvc_model_set_activations) */
} kvc_wmat;

/* Bytes of one matrix of w (64-byte multiple) and of all of them. */
int64_t kvci_wmat_matrix_bytes(const kvc_wmat *w);
/* A quantized matrix's two parts (gemm_quant.h): the integer bytes, then n_scales f16 scales
 * right after them; false for f32 and bf16 (the parts then mean nothing). */
bool kvci_wmat_quant_parts(const kvc_wmat *w, int64_t *int_bytes, int64_t *n_scales);
/* Matrix e of w as a one-matrix view. */
kvc_wmat kvci_wmat_at(const kvc_wmat *w, int64_t e);
/* Fills w from f32 src [count][rows][cols], or [count][cols][rows] when
 * `transposed` (checkpoints that store [in, out]); bf16 rounds to nearest even
 * (exact for values widened from bf16); Q8_0 / Q4_0 quantize (kvci_wq_pack). */
void kvci_wmat_fill(kvc_wmat *w, const float *src, bool transposed);
/* Row r of a one-matrix view, widened (dequantized) to f32: out[cols]. */
void kvci_wmat_row(const kvc_wmat *w, int64_t r, float *out);
/* "checkpoint", "f32", "bf16", "q8_0", "q4_0" or "f16". */
const char *kvci_wmat_dtype_name(kvc_wmat_dtype d);
/* The dtype named `name` (one of kvci_wmat_dtype_name's but f16, which only a checkpoint gives);
 * KVC_EINVAL naming it and the choices. */
kvc_status kvci_wmat_dtype_parse(const char *name, kvc_wmat_dtype *out);
/* The dtype of the matrix `name` (its HF name) stored in the checkpoint as `stored` (F32, BF16
 * or F16) when the weights are asked as `want`: the checkpoint's for KVC_WMAT_CHECKPOINT, else
 * `want`, except that the embedding and the output head (model.embed_tokens.weight,
 * lm_head.weight) are Q8_0 when `want` is quantized (docs/runtime.md). */
kvc_wmat_dtype kvci_wmat_dtype_for(kvc_wmat_dtype want, kvc_wmat_dtype stored, const char *name);
/* The GEMM kernel kvci_linear runs for w now. */
const char *kvci_wmat_kernel_name(const kvc_wmat *w);

/* Every weight of one decoder layer; NULL when the family/config has none. */
typedef struct kvc_layer_weights {
    float *in_norm;      /* [H] input_layernorm (OLMo 2: NULL) */
    float *in_norm_b;    /* [H] its bias (StarCoder2's LayerNorm; else NULL) */
    float *post_norm;    /* [H] post_attention_layernorm (Gemma 3, OLMo 2: of the attention's output) */
    float *post_norm_b;  /* [H] its bias (StarCoder2's LayerNorm, the MLP's input; else NULL) */
    float *pre_ff_norm;  /* [H] Gemma 3 pre_feedforward_layernorm (the MLP's input) */
    float *post_ff_norm; /* [H] Gemma 3, OLMo 2 post_feedforward_layernorm (the MLP's output) */
    /* A.X-K2's gated norms (gated_norm_rank r): fc1 [r, H] and fc2 [H, r] of input_layernorm's gate and of
     * post_attention_layernorm's on MoE layers (data NULL: an ungated norm) */
    kvc_wmat gn_in[2], gn_post[2];
    /* GQA attention (dense, GptOss) */
    kvc_wmat wq;            /* [nH*D, H] */
    float *bq;              /* [nH*D] */
    kvc_wmat wk;            /* [nKV*D, H] */
    float *bk;              /* [nKV*D] */
    kvc_wmat wv;            /* [nKV*D, H] */
    float *bv;              /* [nKV*D] */
    kvc_wmat wo;            /* [H, nH*Dv] */
    kvc_wmat wqkv;          /* [nH*D + 2*nKV*D, H]: one view over wq, wk, wv (fuse.c); data NULL: not fused */
    float *bo;              /* [H] */
    float *gate_b;          /* [nH] Beam's self_attn.gate_bias (attn_gate_bias), else NULL */
    float *attn_sub_norm;   /* [nH*Dv] BitNet's self_attn.attn_sub_norm (sub_norms), else NULL */
    float *ffn_sub_norm;    /* [I] BitNet's mlp.ffn_sub_norm (sub_norms), else NULL */
    float *lambda[4];       /* [D] each: DiffLlama's self_attn.lambda_q1, lambda_k1, lambda_q2, lambda_k2 (diff_attn) */
    kvc_wmat wg;            /* self_attn.gate_proj, no bias: [nH*D, H] AFMoE's (attn_gate_proj), [nH, H] LFM3's g_proj
                               (attn_head_gate) */
    float *q_norm, *k_norm; /* [D] Qwen3; [nH*D], [nKV*D] OLMo 2 */
    float *q_norm_b, *k_norm_b; /* [D] Persimmon's q/k LayerNorm biases (its [D] weights shared by the heads) */
    float *sinks;               /* [nH] GptOss */
    /* MLA (DeepseekV3); wq above is q_proj [nH*dq, H] when q_lora_rank == 0 */
    kvc_wmat wqa;    /* [rq, H] */
    float *bqa;      /* [rq] */
    float *qa_norm;  /* [rq] */
    kvc_wmat wqb;    /* [nH*dq, rq] */
    kvc_wmat wqg;    /* A.X-K2's q_gate_proj [nH*(dq+dv), 2*rq] (mla_q_gate; wqb unused) */
    kvc_wmat wkva;   /* [rkv+dr, H] */
    float *bkva;     /* [rkv+dr] */
    float *kva_norm; /* [rkv] */
    float *wkvb;     /* [nH*(dn+dv), rkv], f32 always: read by head slices */
    float *wuk_t;    /* [nH, rkv, dn] W_UK^h transposed (absorbed queries), in kvc_model.derived */
    /* DeepSeek sparse attention's indexer (a full indexer layer; Hi heads of Di): self_attn.indexer.* */
    kvc_wmat ix_wq;               /* wq_b [Hi*Di, rq] */
    kvc_wmat ix_wk;               /* wk [Di, H] */
    kvc_wmat ix_wp;               /* weights_proj [Hi, H] */
    float *ix_knorm, *ix_knorm_b; /* k_norm (LayerNorm, eps 1e-6) weight and bias [Di] */
    /* dense SwiGLU MLP (mlp_plain: no gate, up is c_fc and down c_proj) */
    kvc_wmat w_gate, w_up, w_down; /* [I, H], [I, H], [H, I] */
    kvc_wmat w_gu;                 /* [2I, H]: one view over w_gate, w_up (fuse.c); data NULL: not fused */
    float *b_gate, *b_up, *b_down; /* [I], [I], [H] */
    float *xielu[4];               /* [1] alpha_p, [1] alpha_n, [] beta, [] eps: Apertus's xIELU (mlp.act_fn.*) */
    /* GptOss MoE */
    kvc_wmat router_w;  /* [E, H] */
    float *router_b;    /* [E] */
    kvc_wmat gu, dn;    /* [E][2I, H], [E][H, I] (checkpoints: [E, H, 2I], [E, I, H], transposed at load) */
    float *gu_b, *dn_b; /* [E, 2I], [E, H] */
    /* routed MoE (DeepseekV3, Qwen3-MoE, Qwen2-MoE, Mixtral) */
    kvc_wmat gate_w;                  /* [E, H] */
    float *gate_corr;                 /* [E] e_score_correction_bias (DeepseekV3) */
    kvc_wmat ex_gate, ex_up, ex_down; /* [E][Imoe, H], [E][Imoe, H], [E][H, Imoe] */
    kvc_wmat sh_gate, sh_up, sh_down; /* [Ish, H], [Ish, H], [H, Ish]; data NULL: no shared expert */
    kvc_wmat lat_in, lat_out;         /* Nemotron-H's fc1 / fc2_latent_proj [L, H], [H, L]; data NULL: none */
    float *lat_in_b, *lat_out_b;      /* their biases (mlp_bias) [L], [H] */
    kvc_wmat sh_scale;                /* [1, H] Qwen2-MoE shared_expert_gate: the shared output times its sigmoid */
    float *ex_norm, *sh_norm;         /* [E, H], [H] Ergo's RMSNorms of each expert's output (expert_norms) */
    float *attn_gate, *ffn_gate;      /* [H], [H] Ergo's residual gates (residual_gates) */
    float *moe_b;                     /* [H] JetMoE's mlp.bias, added to the experts' sum */
    /* JetMoE's attention experts (attention_experts): router [E, H], query [E][nKV D, H], output [E][H, nKV D]
     * projections; k / v are wk / wv (kv_proj's halves), the output bias bo */
    kvc_wmat moa_router, moa_in, moa_out;
    bool moe;
    /* the shared experts' biases with mlp_bias (ERNIE 4.5 MoE's use_bias), else NULL: [Ish], [Ish], [H] */
    float *sh_gate_b, *sh_up_b, *sh_down_b;
    /* LFM2's short convolution (layer_conv): in_proj [3W, H] into B, C, x and its bias [3W] (conv_bias, else
     * NULL), the depthwise taps [W, L] (L = conv_kernel, oldest input first) and their bias [W] (W: its conv
     * channels, kvci_conv_channels); out_proj is wo
     * (bias bo) */
    kvc_wmat conv_in;
    float *conv_in_b, *conv_w, *conv_b;
    /* Qwen3-Next's Gated DeltaNet (layer_gdn): in_proj_qkvz [2 nk dk + 2 nv dv, H] (per key head q, k, then its nv /
     * nk value heads' v, then their z), in_proj_ba [2 nv, H] (per key head its value heads' b, then their a), the
     * depthwise taps [C, K] (C = 2 nk dk + nv dv channels q | k | v, oldest input first), dt_bias [nv], A_log [nv],
     * the gated norm's weight [dv] (applied as w); out_proj is wo. Qwen3.5 (gdn_split_proj): gdn_qkvz holds
     * in_proj_qkv [C, H] (q | k | v as the conv reads them), gdn_z in_proj_z [nv dv, H], gdn_ba in_proj_b [nv, H],
     * gdn_a in_proj_a [nv, H] (OLMo Hybrid's: in_proj_qkv its q_proj | k_proj | v_proj rows) */
    kvc_wmat gdn_qkvz, gdn_ba, gdn_z, gdn_a;
    float *gdn_conv, *gdn_dt_bias, *gdn_a_log, *gdn_norm;
    /* Kimi Delta Attention (gdn_kda, kda.c) reads wq / wk / wv / wo (q_proj, k_proj, v_proj [nh d, H], o_proj),
     * gdn_ba (b_proj [nh, H]), gdn_dt_bias [nh d], gdn_a_log [nh], gdn_norm (o_norm [d]) and these: f_a_proj and
     * g_a_proj [d, H], f_b_proj and g_b_proj [nh d, d], the q, k and v conv taps [nh d, K] each */
    kvc_wmat kda_fa, kda_fb, kda_ga, kda_gb;
    float *kda_conv[3];
    /* A Mamba2 mixer (layer_mamba) also reads conv_in (in_proj [I + C + nh, H], bias conv_in_b), conv_w / conv_b
     * (conv1d [C, L], [C]), ssm_out / ssm_out_b (out_proj, below), and these: [nh] each, then the gated norm's [I]
     * (NULL: Falcon-H1 without mamba_rms_norm) */
    float *ssm_dt_bias, *ssm_a_log, *ssm_d, *ssm_norm;
    kvc_wmat ssm_out; /* the mixer's out_proj [H, I] (beside Falcon-H1's attention o_proj, wo) */
    float *ssm_out_b; /* its bias [H] (mamba_proj_bias; Falcon-H1: projectors_bias), else NULL */
    /* A Mamba-1 mixer (layer_mamba1) reads conv_in (in_proj [2 I, H]), conv_w / conv_b ([I, L], [I]), ssm_out /
     * ssm_out_b (out_proj; Zamba's hybrid layers keep the shared block's o_proj in wo), these two, x_proj
     * [R + 2 N, I] and dt_proj [I, R] (Zamba's per head: [nh][R + 2 N, P] and [nh][P, R]), and ssm_dt_bias (dt_proj's
     * bias [I]), ssm_a_log [I, N] and ssm_d [I]; Jamba's dt, B and C norm weights [R], [N], [N] (else NULL) */
    kvc_wmat ssm_x_proj, ssm_dt_proj;
    float *ssm_dt_norm, *ssm_b_norm, *ssm_c_norm;
    /* RWKV-4 (rwkv.c): time mixing reads wk, wv, wq (its key, value and receptance [H, H]) and wo (output [H, H]),
     * channel mixing w_up (key [I, H]), w_down (value [H, I]) and w_gate (receptance [H, H]); and these: time_decay
     * and time_first [H], the token-shift factors [H] of time mixing's key, value, receptance, then of channel
     * mixing's key, receptance */
    float *rwkv_decay, *rwkv_first, *rwkv_mix[5];
    /* Gemma 4's per-layer input (ple_dim P): per_layer_input_gate [P, H], per_layer_projection [H, P],
     * post_per_layer_input_norm [H]; layer_scalar [1] (else NULL) */
    kvc_wmat ple_gate, ple_proj;
    float *ple_norm, *scalar;
    /* Gemma 3n's AltUp (K = altup_num_inputs): modality_router [K, H], router_norm [H], prediction_coefs [K K, K],
     * correction_coefs [K, K], correct_output_scale [H]; LAuReL (rank R): linear_left [R, H], linear_right [H, R],
     * post_laurel_norm [H] */
    kvc_wmat altup_router, laurel_left, laurel_right;
    float *altup_router_norm, *altup_pred, *altup_corr, *altup_scale, *laurel_norm;
    /* Gemma 4's experts beside the MLP (enable_moe_block; the router gate_w, experts ex_gate / ex_up / ex_down):
     * router.scale [H], router.per_expert_scale [E], post_feedforward_layernorm_1 (the MLP's output) [H],
     * pre_feedforward_layernorm_2 (the experts' input) [H], post_feedforward_layernorm_2 (their output) [H] */
    float *router_scale, *expert_scale, *mlp_out_norm, *moe_in_norm, *moe_out_norm;
    /* Zamba2's hybrid layer (layer_shared_block): its linear [H, H] and its use site's LoRA adapters, A [r, in] and
     * B [out, r], of q, k, v (shared_attn_adapter; in and out 2H) and of the MLP's gate | up (in H, out 2I). The
     * shared block lies in its first use site's struct alone (kvci_zamba_site): post_norm its input_layernorm [2H],
     * wq / wk / wv [.., 2H], wo, pre_ff_norm [H], w_gate / w_up (gate_up_proj's halves), w_down. */
    kvc_wmat zamba_linear, zamba_ad_a[4], zamba_ad_b[4];
    /* RecurrentGemma's recurrent block (layer_rglru, rglru.c; W = lru_width, nH blocks of bw): linear_y [W, H] and its
     * bias [W]; linear_x is conv_in / conv_in_b, conv_1d conv_w [W, L] / conv_b [W], linear_out wo / bo; the RG-LRU's
     * recurrent_param [W], input_gate_weight / recurrent_gate_weight [nH, bw, bw] and their biases [nH, bw] */
    kvc_wmat rg_y;
    float *rg_y_b, *rg_a_param, *rg_in_w, *rg_in_b, *rg_a_w, *rg_a_b;
    /* HY V4's hyper-connections before the attention (attn_hc) and the MLP (ffn_hc), hc_mult n: fn [2n, n H], base
     * [2n], scale [2] (hyper_conn.c) */
    float *hc_fn[2], *hc_base[2], *hc_scale[2];
} kvc_layer_weights;

/* Tensor parallelism (docs/distributed.md): rank `rank` of `size` holds a shard of every split
 * layer (shard.c) and sums the partials of its row-parallel layers (o_proj, down_proj, the
 * experts' down projections) over the ranks with `reduce` (NULL: one rank, nothing to sum). The
 * model layer knows no MPI: src/dist/ passes the collective in. */
typedef kvc_status (*kvc_model_reduce_fn)(void *user, float *x, int64_t n);
typedef struct kvc_model_tp {
    int64_t rank, size;
    kvc_model_reduce_fn reduce; /* x[n] = the sum over the ranks of their x[n], the same on every rank */
    void *user;
} kvc_model_tp;

struct kvc_model {
    kvc_model_config cfg;  /* this rank's: heads, KV heads and intermediate sizes divided by tp.size */
    kvc_model_config full; /* the checkpoint's (equal to cfg on one rank) */
    kvc_model_tp tp;       /* size 1 unless loaded by kvci_model_load_tp */
    kvc_wmat embed;        /* [V, E]: E = cfg.embed_dim, or H when 0 */
    float *pos_embed;      /* [max_position_embeddings + pos_offset, H] learned positions (pos_learned), else NULL */
    float *final_norm;     /* [H] */
    float *final_norm_b;   /* [H] its bias (norm_bias), else NULL */
    kvc_wmat lm_head;      /* [V, E] (the embed's data when tied) */
    float *lm_head_b;      /* [V] its bias (head_bias), else NULL */
    float *embed_norm;     /* [H] BLOOM's word_embeddings_layernorm (embed_norm), else NULL */
    float *embed_norm_b;   /* [H] its bias */
    float *alibi;          /* [cfg.num_heads] this rank's heads' ALiBi slopes (the operator's), else NULL */
    float
        *pos_freq; /* [ceil(H / 2)] XGLM's or CTRL's sinusoid frequencies (pos_sinusoidal; pos_embed NULL), else NULL */
    kvc_wmat project_in;  /* [H, E] OPT-350m's (cfg.embed_dim E != 0), else empty */
    kvc_wmat project_out; /* [E, H] its pair before the head */
    /* Gemma 4's per-layer inputs (cfg.ple_dim P > 0, L layers): embed_tokens_per_layer [ple_vocab, L P],
     * per_layer_model_projection [L P, H], per_layer_projection_norm [P]; else empty / NULL */
    kvc_wmat ple_embed, ple_model_proj;
    float *ple_proj_norm;
    /* BERT-style: token_type_embeddings [type_vocab_size, H] and ERNIE's task_type_embeddings (row 0 of each added),
     * the head's transform head_dense [H, H] with its bias and head_norm / head_norm_b [H]; else empty / NULL */
    float *type_embed, *task_embed;
    kvc_wmat head_dense;
    float *head_dense_b, *head_norm, *head_norm_b;
    /* Gemma 3n's altup_projections and altup_unembed_projections [K - 1][H, H] (K = cfg.altup_inputs) */
    kvc_wmat altup_proj[KVC_GEMMA3N_MAX_ALTUP - 1], altup_unembed[KVC_GEMMA3N_MAX_ALTUP - 1];
    /* HY V4's hc_head (cfg.hc_mult n > 0): hc_fn [n, n H], hc_base [n], hc_scale [1]; else NULL */
    float *hc_head_fn, *hc_head_base, *hc_head_scale;
    kvc_layer_weights layers[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    void *arena;                                    /* every weight above: one kvci_pages_alloc mapping */
    int64_t arena_bytes;
    float *derived;          /* [num_layers * nH * rkv * dn] the wuk_t of every MLA layer, or NULL */
    float *inv_freq;         /* [rot/2] RoPE inverse frequencies after scaling (full-attention layers) */
    float *inv_freq_long;    /* [rot/2] longrope's with its long factors (a workspace's rope_long); else NULL */
    float rope_attn_factor;  /* A (MF 1.4) */
    float *inv_freq_sliding; /* [rot/2] the sliding layers' (cfg.rope_sliding), when they differ; else NULL */
    float rope_attn_factor_sliding;
    int64_t rot_dim;         /* rotary width d of the full layers (and every layer's, unless per-layer shapes) */
    int64_t rot_dim_sliding; /* of the sliding layers (inv_freq_sliding's width when it has its own) */
    bool act_bf16;           /* kvc_model_set_activations "bf16" */
};

/* Walks every tensor of the model in a fixed order; the callback receives
 * the HF name, the shape, the slot (`vec` for an f32 tensor, `mat` for a GEMM
 * operand: shape [rows, cols] or [count, rows, cols], or its transpose when
 * `transposed`) and the kind of initialisation a random model gives it. Used
 * by load, random init and arena sizing, so they never disagree. */
typedef enum kvc_winit {
    KVC_WINIT_WEIGHT,
    KVC_WINIT_NORM,
    KVC_WINIT_BIAS,
    KVC_WINIT_SINK,
    KVC_WINIT_GATE_UP
} kvc_winit;
/* The part of a checkpoint tensor one tensor-parallel rank holds: along `dim` of the stored tensor
 * (whose length there is `full`), the shape[dim] entries from `start`; dim -1: all of it. `zero`:
 * the bias of a row-parallel layer on ranks > 0, held as zeros (rank 0 adds it, once, before the
 * all-reduce). */
#define KVC_WSPLIT_RUNS 5
typedef struct kvc_wsplit {
    int32_t dim;
    int64_t full, start;
    bool zero;
    bool absent_zero; /* a vector held as zeros when the checkpoint lacks it (A.X-K1's router correction bias) */
    /* runs > 0 (dim 0 only): the rank's part is runs pieces of dim 0, run i the run_len[i] entries from
     * run_start[i], one after the other (a fused projection whose segments are each split by heads: LFM2's
     * in_proj B | C | x, Mamba2's z | x | B | C | dt; shard_state.c); start unused */
    int32_t runs;
    int64_t run_start[KVC_WSPLIT_RUNS], run_len[KVC_WSPLIT_RUNS];
} kvc_wsplit;
/* Where a GEMM operand (or a bias) lies in a checkpoint that stores it fused with others along dim 0 (Phi-3's
 * self_attn.qkv_proj [q | k | v] and mlp.gate_up_proj [gate | up]): the fused tensor's name, its
 * length along dim 0, and the first of this operand's entries there; name NULL: never fused. block > 0: the
 * operand's entries come in blocks of `block`, block i at i * stride + at (GPT-NeoX's query_key_value
 * [heads, 3, D]: block D, stride 3 D; Falcon's [KV heads, g + 2, D]: q's block g D). */
typedef struct kvc_wfused {
    const char *name;
    int64_t rows, at;
    int64_t block, stride;
} kvc_wfused;
typedef struct kvc_wtensor {
    const char *name;
    int32_t ndim;
    const int64_t *shape; /* this rank's part, as stored (before any transpose) */
    kvc_wsplit split;
    kvc_wfused fused; /* the loader reads it there when the file has no `name` */
    kvc_winit init;
    float **vec;
    kvc_wmat *mat;
    bool transposed;
    /* n_parts > 0: when the file has no `name`, the loader reads it as the tensors parts[0..n_parts) one after the
     * other along dim 0, each as long as the file holds it (OLMo Hybrid's Gated DeltaNet: in_proj_qkv as q_proj |
     * k_proj | v_proj, conv1d as q_conv1d | k_conv1d | v_conv1d, which transformers saves cut in equal thirds) */
    const char *const *parts;
    int32_t n_parts;
} kvc_wtensor;
#define KVC_WPARTS_MAX 3
typedef kvc_status (*kvc_weight_visit_fn)(void *user, const kvc_wtensor *t);
kvc_status kvci_model_visit_weights(kvc_model *m, kvc_weight_visit_fn fn, void *user);

/* Largest size of any one dimension of a config (2^24: vocabularies and
 * widths of real models are below 2^20), so that products of two sizes stay
 * far from int64 overflow; and the most weight bytes a model may take
 * (2^38 = 256 GiB of f32). */
#define KVC_MODEL_MAX_DIM          (INT64_C(1) << 24)
#define KVC_MODEL_MAX_WEIGHT_BYTES (INT64_C(1) << 38)

/* Common head of load / random: config checks (every size bounded), this rank's shard of cfg (tp:
 * NULL for one rank; kvci_model_shard_config), then
 * `check` (may be NULL) over every tensor before the arena is allocated (load
 * compares the file's shapes there and sets each matrix's dtype: bf16 where the
 * file holds BF16; random sets them all), arena sizing, arena, RoPE frequencies
 * (kvc_rope_frequencies). */
kvc_status kvci_model_alloc(const kvc_model_config *cfg, const kvc_model_tp *tp, kvc_weight_visit_fn check,
                            void *check_user, kvc_model **out);
/* kvc_model_create_random with every GEMM operand in `wdtype` (bf16: the random
 * values rounded to bf16, as a bf16 checkpoint holds them; q8_0 / q4_0: quantized, the
 * embedding and output head by kvci_wmat_dtype_for's rule; checkpoint: f32). */
kvc_status kvci_model_create_random_as(const kvc_model_config *cfg, uint64_t seed, kvc_wmat_dtype wdtype,
                                       kvc_model **out);
/* Common tail of load / random, once the weights are filled (prepare.c):
 * W_UK^h transposed into m->derived (MLA). */
kvc_status kvci_model_prepare(kvc_model *m);

/* Fuses the GEMMs of a layer that read the same input (fuse.c), after the weights are filled
 * (and sharded: each rank fuses its own parts): wqkv over wq, wk, wv and w_gu over w_gate, w_up,
 * when they have no biases and lie one after the other in the arena in a layout that is the
 * fused matrix's own (f32: no padding between them; bf16: whole 16-row groups; quantized
 * matrices, whose scales follow each matrix's integers, never). A fused matrix is a view: no
 * byte is copied, the parts keep their names and data, and each output row is computed
 * by the same per-row arithmetic as before, so fusing changes no bit of any output. */
void kvci_model_fuse(kvc_model *m);

/* The rotary width of c: MLA's qk_rope_head_dim, else head_dim times rope.partial_rotary_factor (truncated, as
 * transformers' int(); 0 or 1: the whole head); the channels beyond it pass through unrotated. */
int64_t kvci_model_rot_dim(const kvc_model_config *c);
/* The layer whose K/V cache layer l attends over: l itself, or for one of the last kv_shared_layers layers (Gemma 4)
 * the last earlier layer of its kind (sliding or full), which keeps the cache; l keeps none then. */
int64_t kvci_model_kv_source(const kvc_model_config *c, int64_t l);
/* The same for a layer of its own head dim (kvci_layer_shape). */
int64_t kvci_model_rot_dim_of(const kvc_model_config *c, int64_t head_dim);
/* head_dim times r's partial_rotary_factor (truncated; proportional, 0 or 1: the whole head). */
int64_t kvci_rope_share_width(const kvc_rope_config *r, int64_t head_dim);

/* One layer's attention shape (layer_shape.c; kvc_model_config.layer_heads ...): query heads, KV heads, q/k and v
 * head dims, rotary width, and the widths of its q [nH D], k [nKV D], v [nKV Dv] and attention output [nH Dv]. */
typedef struct kvci_attn_shape {
    int64_t nH, nKV, D, Dv, rot;
    int64_t q_width, k_width, v_width, o_width;
} kvci_attn_shape;
kvci_attn_shape kvci_layer_shape(const kvc_model_config *c, int64_t l);
/* Whether every layer takes the model's shape (every per-layer entry 0). */
bool kvci_layer_shapes_uniform(const kvc_model_config *c);
/* Each field the largest over c's layers (the workspace's sizes). */
kvci_attn_shape kvci_layer_shape_max(const kvc_model_config *c);
/* Layer l's softmax scale: kvc_model_attn_scale's, from the layer's own head dim where it has one (1 / sqrt(D)). */
double kvci_layer_attn_scale(const kvc_model_config *c, int64_t l);
/* The rotary width of c's full (sliding false) or sliding attention layers (one per kind: kvci_layer_shapes_check). */
int64_t kvci_kind_rot_dim(const kvc_model_config *c, bool sliding);
/* The rules of the per-layer shapes, named under doc: entries in [0, KVC_HP_MAX_DIM], query heads a multiple of
 * the KV heads, even head dims, a rotary width even in [2, D] and one per layer kind, and none of the features
 * that assume one shape (MLA, attention experts, ALiBi, whole or per-head LayerNorm q/k norms, Falcon-H1's parallel
 * attention, output gates with Dv != D). */
kvc_status kvci_layer_shapes_check(const kvc_model_config *c, const char *doc);
/* The columns of c's embedding and head: embed_dim (OPT-350m's word_embed_proj_dim), or hidden_size when 0. */
int64_t kvci_model_embed_width(const kvc_model_config *c);
/* The rows of c's input embedding: input_vocab_size, or vocab_size when 0. */
int64_t kvci_model_input_vocab(const kvc_model_config *c);
/* The state caches of layer l (state_layers.c; docs/runtime.md, "State layers"): its number, 0 for a layer with
 * K/V (attention), and each one's name (the cache_info entry's, the planner's) and per-sequence shape of f32. State
 * i lives in kvci_layer_state_slot(lc, i): kvc_layer_cache.state (0) or .recurrent (1); contiguous [rows, shape],
 * paged [NB, shape]. */
#define KVCI_MAX_LAYER_STATES 2
typedef struct kvci_state_shape {
    const char *name; /* "conv_state", "ssm_state", ... */
    int32_t ndim;
    int64_t shape[3];
} kvci_state_shape;
int32_t kvci_layer_states(const kvc_model_config *c, int64_t l, kvci_state_shape out[KVCI_MAX_LAYER_STATES]);
kvc_tensor *kvci_layer_state_slot(kvc_layer_cache *lc, int32_t i);
/* The f32 elements of one sequence's state s. */
int64_t kvci_layer_state_floats(const kvci_state_shape *s);
/* Whether layer l keeps states (kvci_layer_states > 0) instead of K/V; the first such layer of c, -1: none. */
bool kvci_model_layer_is_state(const kvc_model_config *c, int64_t l);
int64_t kvci_model_first_state(const kvc_model_config *c);

/* Zamba2's use site of hybrid layer l (c->layer_shared_block[l]): its index i among the hybrid layers, and in *first
 * the hybrid layer whose checkpoint tensors hold its block: block i % num_mem_blocks's first use site (the block's
 * weights are read there once, with every site's adapters) when tie_word_embeddings, else l itself (transformers
 * 5.25 ties the blocks under tie_word_embeddings only: untied, every hybrid layer runs a block of its own). */
int64_t kvci_zamba_site(const kvc_model_config *c, int64_t l, int64_t *first);

/* The ALiBi slopes of c's num_heads heads into out [num_heads] (c->alibi; alibi.c), as transformers computes
 * them in f32: BLOOM's and Falcon's build_alibi_tensor (alibi_bias_max 0) or MPT's (alibi_bias_max > 0), rounded
 * to bf16 for Falcon's form (alibi_in_scale: the operator's alibi_bf16). */
void kvci_model_alibi_slopes(const kvc_model_config *c, float *out);

/* What a step of the model reads and computes (bench model's rooflines). */
typedef struct kvc_model_cost_path {
    const char *dtype;  /* "f32", "bf16", "q8_0" or "q4_0" */
    const char *kernel; /* the GEMM kernel kvci_linear runs for that dtype now (gemm.h, gemm_bf16.h) */
} kvc_model_cost_path;
typedef struct kvc_model_cost {
    int64_t weight_bytes;      /* the arena: every weight as stored */
    int64_t dense_read_bytes;  /* read by every decode step whatever the batch: all weights but the embedding
                                * (gathered by id; counted when tied, as the lm_head) and the routed experts */
    int64_t expert_bytes;      /* the routed experts of every MoE layer */
    double expert_fraction;    /* experts one token runs / experts of a layer */
    int64_t macs_per_token;    /* GEMM multiply-adds of the decoder layers per token (run experts only) */
    int64_t lm_head_macs;      /* per token whose logits are computed: V x H */
    int64_t attn_macs_per_key; /* attention multiply-adds per (query, visible key) pair, all full-attention
                                * layers: heads x (Dqk + Dv); sliding and chunked layers not counted */
    kvc_model_cost_path attn_proj, mlp, lm_head; /* q/k/v/o projections, MLP (or experts), lm_head */
} kvc_model_cost;
kvc_status kvci_model_cost_of(const kvc_model *m, kvc_model_cost *out);

/* kvci_model_load_as of rank tp->rank's shard for tp->size ranks (shard.c's rules), reducing through
 * tp->reduce; size 1 loads the whole model. Quantized weights quantize each rank's shard (a saved
 * quantized copy is refused: its blocks are packed for the whole matrix). */
kvc_status kvci_model_load_tp(const char *dir, const kvc_model_tp *tp, kvc_wmat_dtype weights, kvc_model **out);
/* kvc_model_config_parse of json_text[0..len) (no NUL needed), for callers holding a length. */
kvc_status kvci_model_config_parse_n(const char *json_text, size_t len, const char *name, kvc_model_config *out);
/* This rank's config for tp ranks: num_heads, intermediate_size and moe_intermediate_size divided by
 * tp, num_key_value_heads divided, or 1 when tp exceeds them (each replicated on tp / n ranks);
 * KVC_EINVAL naming the size tp does not divide. */
kvc_status kvci_model_shard_config(const kvc_model_config *full, int64_t tp, kvc_model_config *out);
/* The first KV head rank r of tp holds (r * num_kv_heads / tp: split, or replicated). */
int64_t kvci_model_shard_kv_head0(const kvc_model_config *full, int64_t r, int64_t tp);
/* v / tp into *out; KVC_EINVAL naming `field` when tp does not divide it. */
kvc_status kvci_shard_divide(const char *field, int64_t v, int64_t tp, int64_t *out);
/* The state layers' part of kvci_model_shard_config (shard_state.c): LFM2's conv channels (conv_channels =
 * hidden_size / tp), Mamba-1's channels (mamba_inner / tp), Gated DeltaNet's key and value heads, Mamba2's heads
 * divided by tp and its groups divided, or 1 when tp is a multiple of mamba_n_groups (each group on tp / groups ranks);
 * KVC_EINVAL naming the size that does not divide, or a state layer without a rule. */
kvc_status kvci_shard_state_config(const kvc_model_config *full, int64_t tp, kvc_model_config *c);
/* The channels of an LFM2 conv layer of config c (conv_channels, else hidden_size). */
static inline int64_t kvci_conv_channels(const kvc_model_config *c) {
    return c->conv_channels > 0 ? c->conv_channels : c->hidden_size;
}
/* Whether layer l's sub-layers take OLMo 2's post-norms (post_norms; OLMo Hybrid's Gated DeltaNet layers take
 * pre-norms, gdn_pre_norms). */
static inline bool kvci_layer_post_norms(const kvc_model_config *c, int64_t l) {
    return c->post_norms && !(c->gdn_pre_norms && c->layer_gdn[l]);
}
/* The first Mamba2 group this rank's heads read (rank * mamba_n_groups / tp: split, or replicated). */
int64_t kvci_shard_mamba_group0(const kvc_model *m);
/* The fused projections of the state layers whose segments are each split (kvc_wsplit.runs): LFM2's in_proj
 * B | C | x, Mamba2's in_proj z | x | B | C | dt and its conv x | B | C, Mamba-1's in_proj x | z, Qwen3.5's
 * in_proj_qkv and Gated DeltaNet's conv q | k | v. One rank: the whole tensor. */
typedef enum kvci_state_runs {
    KVCI_RUNS_LFM2_IN,
    KVCI_RUNS_MAMBA_IN,
    KVCI_RUNS_MAMBA_CONV,
    KVCI_RUNS_GDN_QKV,
    KVCI_RUNS_MAMBA1_IN
} kvci_state_runs;
kvc_wsplit kvci_shard_state_runs(const kvc_model *m, kvci_state_runs what);

/* kvc_model_load with the GEMM matrices in `weights` (kvci_wmat_dtype_for): KVC_WMAT_CHECKPOINT
 * keeps the checkpoint's dtype (bf16 packed where the file holds BF16, else f32), f32 widens,
 * bf16 rounds, q8_0 / q4_0 quantize at load. KVC_EINVAL for any other value. */
kvc_status kvci_model_load_as(const char *dir, kvc_wmat_dtype weights, kvc_model **out);

/* The kvcache.format of a saved quantized copy (save.c): its layout version. */
#define KVC_QUANT_FORMAT "kvcache-q-packed-1"
/* Writes m, every matrix quantized (q8_0 / q4_0), as the model directory out_dir (created here;
 * it must not exist): model.safetensors with each matrix's packed integers and f16 scales beside
 * each other, config.json (and the tokenizer files, generation_config.json, expected.json when
 * src_dir has them) copied from src_dir. KVC_EINVAL naming the matrix that is not quantized or the
 * file that could not be written; on failure nothing written stays behind. */
kvc_status kvci_model_save(kvc_model *m, const char *src_dir, const char *out_dir);

/* XGLM's positions (sinusoid.c): row p of transformers' XGLMSinusoidalPositionalEmbedding.get_embedding in f32,
 * computed when a token is embedded. kvci_model_sinusoid_freqs: w [H / 2], w_i = exp(i * s) with s = -ln(10000) /
 * (H / 2 - 1) rounded to f32, the product i * s rounded; kvci_model_sinusoid_add: row[H] += sin(p w_i) for i < H / 2,
 * cos(p w_i) after, p w_i rounded, an odd H's last column 0, all 0 when zero (the padding row); exp, sin and cos in
 * double rounded once, which PyTorch's f32 kernels agree with to 1 ulp. H >= 4. */
void kvci_model_sinusoid_freqs(int64_t H, float *w);
void kvci_model_sinusoid_add(const float *w, int64_t H, int64_t p, bool zero, float *row);
/* CTRL's positions (pos_sinusoid_ctrl): row p of transformers' positional_encoding in f32.
 * kvci_model_sinusoid_freqs_ctrl: w [ceil(H / 2)], w_j = 1 / 10000^e_j with e_j = 2j / H rounded to f32 and the power
 * rounded to f32; kvci_model_sinusoid_add_ctrl: row[j] += sin(p w_j) for j < ceil(H / 2), row[ceil(H / 2) + j] +=
 * cos(p w_j) for j < H / 2, each p w_j rounded to f32 first. */
void kvci_model_sinusoid_freqs_ctrl(int64_t H, float *w);
void kvci_model_sinusoid_add_ctrl(const float *w, int64_t H, int64_t p, float *row);

/* ---- kernels (wmat.c, act.c) --------------------------------------------------- */

/* y[T, out] = x[T, in] . W[out, in]^T (+ b[out]) (HF Linear) for a one-matrix W
 * (in = cols, out = rows), batch-invariant (gemm.h, gemm_bf16.h); KVC_ENOMEM from
 * the bf16 GEMM's scratch. */
kvc_status kvci_linear(const float *x, int64_t T, const kvc_wmat *w, const float *b, float *y);
/* y[i] = kvci_linear(x, T, w[i], b[i]) for i < n (b[i] may be NULL), the same bits; quantized
 * matrices of one dtype run as one GEMM call over the shared input (kvci_gemm_wq_parts: one
 * parallel region, x quantized once), the others one call each. */
kvc_status kvci_linear_shared(const float *x, int64_t T, int n, const kvc_wmat *const *w, const float *const *b,
                              float *const *y);
/* out[T, n] = act(g) * u (silu: SwiGLU; gelu_tanh: GeGLU; gelu: GeGLU by erf, scalar), g/u rows with stride ld (may
 * equal out); the kernels are act.h's. */
void kvci_glu(kvc_mlp_act act, const float *g, const float *u, int64_t T, int64_t n, int64_t ld, float *out,
              int64_t ld_out);
/* x[T, n] = act(x) in place (StarCoder2's and Arcee's plain MLP): act(a) * 1, kvci_glu's element function with
 * u = 1, so the same bits as every act.h kernel; relu2 is kvci_relu2 (plain MLPs only). */
void kvci_act_rows(kvc_mlp_act act, float *x, int64_t T, int64_t n);
/* x[T, n] = xielu(x) in place (Apertus): p the layer's raw alpha_p, alpha_n, beta, eps (act.h's kvci_xielu). */
void kvci_xielu_rows(const float *const p[4], float *x, int64_t T, int64_t n);

#endif /* KVC_MODEL_INTERNAL_H */
