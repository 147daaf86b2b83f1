/* kvcache model layer: Hugging Face config.json reading, safetensors loading
 * by mmap, the four model families (dense GQA: Llama / Qwen2 / Qwen3 and the
 * softmax-routed MoE models; GptOss: sliding/full layers, sinks, biases, MoE;
 * DeepseekV3: MLA; Gemma 3 text: sliding/full layers with their own ropes,
 * Gemma norms, GeGLU) and a
 * forward pass over a packed batch that consumes one step's metadata.
 * Behaviour: docs/model.md ("MF"), docs/batch.md ("RM").
 *
 * Numerics: activations are f32 (for bf16 weights, rounded to bf16 only when
 * asked: kvc_model_set_activations); dense layers go through the library's batch-invariant
 * GEMM (a fixed reduction order over K, docs/runtime.md); cache writes,
 * RMSNorm, RoPE and attention (the absorbed MLA form over latent caches
 * included) only through the ops layer (ops.h): one code path.
 *
 * Thread safety: a kvc_model is immutable after creation (and
 * kvc_model_set_activations, called before any use) and may be shared;
 * a kvc_model_workspace serves one forward call at a time. */
#ifndef KVCACHE_MODEL_H
#define KVCACHE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/base.h"
#include "kvcache/batch.h"
#include "kvcache/cache.h"
#include "kvcache/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVC_MODEL_MAX_LAYERS 256

/* The model families the planner knows (kvc_plan_model); the runtime
 * (kvc_model_load) runs the model types marked "runs". One descriptor per
 * family (docs/model.md, "Adding a model family") tells both what they need. */
typedef enum kvc_model_family {
    KVC_FAMILY_DENSE = 0,     /* GQA; runs llama, mistral, qwen2, qwen3, phi3, olmo2, olmo3, granite, smollm3,
                               * gemma, glm, glm4, cohere, cohere2, seed_oss, exaone4, starcoder2, ministral,
                               * ministral3 (also mistral3's text model), helium, arcee, stablelm, olmo,
                               * ernie4_5, phi, gpt_neox, gpt2, opt and the softmax-routed MoE models qwen3_moe,
                               * qwen2_moe, mixtral, olmoe, granitemoe, granitemoeshared, and glm4_moe (DeepSeek-V3's
                               * router) */
    KVC_FAMILY_GPT_OSS,       /* runs gpt_oss: sliding / full layers, sinks, MoE */
    KVC_FAMILY_DEEPSEEK_V3,   /* MLA; runs deepseek_v3, deepseek_v2; plans also deepseek_v32, kimi_k2 */
    KVC_FAMILY_GEMMA2,        /* runs gemma2: alternating sliding / full, soft-capped scores and logits */
    KVC_FAMILY_GEMMA3,        /* runs gemma3_text and gemma3's text model (sliding_window_pattern or layer_types:
                               * sliding / full layers, each kind its own rope; Gemma norms, GeGLU) */
    KVC_FAMILY_QWEN3_NEXT,    /* runs qwen3_next: linear attention (Gated DeltaNet) + gated full attention, MoE;
                               * plans also qwen4_exp_text and qwen4_exp's text model (with QSA indexer keys) */
    KVC_FAMILY_JAMBA,         /* runs mamba, falcon_mamba (Mamba-1 mixers alone) and jamba (Mamba-1 + attention
                               * every attn_layer_period layers, experts every expert_layer_period layers) */
    KVC_FAMILY_MAMBA2_HYBRID, /* plans granitemoehybrid (layer_types), bamba, nemotron_h, falcon_h1 */
    KVC_FAMILY_GENERIC,       /* plans any other architecture from the generic fields */
    KVC_FAMILY_LFM2,          /* plans lfm2, lfm2_moe: short-convolution layers + full attention */
    KVC_FAMILY_KIMI_LINEAR,   /* plans kimi_linear, bailing_hybrid: Kimi Delta Attention (linear) layers + MLA */
    KVC_FAMILY_MINIMAX,       /* runs minimax (plans minimax_text_01, minimax_m1): lightning (linear) + softmax
                               * layers, routed experts */
    KVC_FAMILY_LLAMA4,        /* runs llama4_text and llama4's text model: chunked local attention, every 4th layer
                               * full (NoPE), a sigmoid-routed MoE with a shared expert */
    KVC_FAMILY_DEEPSEEK_V4,   /* plans deepseek_v4: a shared-KV sliding window on every layer, compressed KV entries
                               * (CSA with its indexer keys, HCA) and the compressors' pending states beside it */
    KVC_FAMILY_HY_V4,         /* plans hy_v4: MLA latent caches, sinks, indexer keys on its "full" indexer layers */
    KVC_FAMILY_GEMMA4,        /* runs gemma4_text and gemma4's text model: sliding / full layers, each kind its
                               * own head dim and KV heads, KV shared by the last layers, per-layer inputs */
    KVC_FAMILY_GEMMA3N,       /* gemma3n_text and gemma3n's text model: every 5th layer full, KV shared by the
                               * last num_kv_shared_layers (15 when absent), AltUp, LAuReL */
    KVC_FAMILY_RWKV,          /* runs rwkv (RWKV-4): time mixing (WKV) and channel mixing with token shifts in every
                               * layer, a fixed-size state per sequence, no keys or values */
    /* runs recurrent_gemma (Griffin): RG-LRU recurrent blocks + local attention blocks */
    KVC_FAMILY_RECURRENT_GEMMA,
    KVC_FAMILY_BUILTIN_COUNT /* families added at run time (tests) take the ids from here on */
} kvc_model_family;

/* "dense", "gpt_oss", "deepseek_v3", "gemma2", ..., "generic"; "?" for an unknown id. */
KVC_API const char *kvc_model_family_name(kvc_model_family f);

/* kvc_rope_type and kvc_rope_config live in ops.h (the RoPE op takes them);
 * the config reader fills them as transformers 5.x resolves the config
 * (docs/config.md). */

/* "default", "llama3", "yarn", "linear", "dynamic", "longrope", "proportional"; "?" otherwise. */
KVC_API const char *kvc_rope_type_name(kvc_rope_type t);

/* The MLP's activation: silu (SwiGLU) or gelu_pytorch_tanh (GeGLU, Gemma 3; StarCoder2's ungated MLP), or relu2
 * (ReLU squared, Arcee's ungated MLP only: mlp_plain), or gelu (GELU by erf) or relu (OPT), ungated MLPs only. */
typedef enum kvc_mlp_act {
    KVC_MLP_SILU = 0,
    KVC_MLP_GELU_TANH = 1,
    KVC_MLP_RELU2 = 2,
    KVC_MLP_GELU = 3,
    KVC_MLP_RELU = 4,
    KVC_MLP_XIELU = 5 /* Apertus: per-layer learned scalars (plain MLPs only) */
} kvc_mlp_act;

/* Everything the forward pass needs from config.json. */
typedef struct kvc_model_config {
    kvc_model_family family;
    char model_type[32];
    int64_t vocab_size, hidden_size, intermediate_size, num_layers;
    int64_t num_heads, num_kv_heads, head_dim;
    double rms_norm_eps;
    bool tie_word_embeddings;
    bool qkv_bias, o_bias, mlp_bias; /* resolved per family (MF 6.5: which projections carry a bias) */
    bool qk_norm;                    /* Qwen3 per-head q/k RMSNorm */
    int64_t max_position_embeddings;
    kvc_rope_config rope;         /* of the full-attention layers */
    kvc_rope_config rope_sliding; /* of the sliding layers: rope, unless the config gives them their own
                                   * (transformers 5's rope_parameters per layer type; Gemma 3's
                                   * rope_local_base_freq); theta 0 (a hand-made
                                   * config): rope */
    kvc_mlp_act mlp_act;          /* the dense MLP's activation */
    kvc_rope_form rope_form;      /* which channels RoPE turns together: half-split (most), DeepSeek's
                                   * rope_interleave (KVC_ROPE_INTERLEAVED, MLA only), GLM-4's and
                                   * Cohere's adjacent pairs */
    /* Gemma: embeddings times embed_scale (sqrt(hidden_size) as an f32; 0: none) and every RMSNorm weight w
     * (the q/k norms too) applied as 1 + w (gemma_norms); Gemma 3 also normalises the attention and MLP
     * outputs (post_attention_layernorm, post_feedforward_layernorm) before their residual add and the MLP's
     * input by pre_feedforward_layernorm (sandwich_norms), its softmax scale query_pre_attn_scalar^-1/2 (0:
     * the family's). GLM-4's sandwich_norms are post_self_attn_layernorm, post_attention_layernorm (the MLP's
     * input) and post_mlp_layernorm. */
    float embed_scale;
    bool gemma_norms, sandwich_norms;
    /* OLMo 2: no input norm; the attention and MLP outputs each normalised (post_attention_layernorm,
     * post_feedforward_layernorm) before their residual add, the sub-layers reading the residual stream as it
     * is (post_norms); q_norm / k_norm one RMSNorm over a token's whole q [nH*D] and k [nKV*D] rather than
     * per head (qk_norm_whole, with qk_norm). */
    bool post_norms, qk_norm_whole;
    /* Granite: embed_scale is embedding_multiplier; each sub-layer's output times residual_multiplier (as an
     * f32; 0: none) before its residual add, the softmax scale attention_multiplier (0: the family's) and the
     * logits divided by logits_scaling (as an f32; 0: none). */
    double residual_multiplier, attention_multiplier, logits_scaling;
    /* Cohere: every norm a LayerNorm without bias, (x - mean) / sqrt(var + rms_norm_eps) * w (layer_norm;
     * rms_norm_eps holds layer_norm_eps; with qk_norm, use_qk_norm's LayerNorm of each q and k head, each
     * head its own weights, q_norm [nH, D] and k_norm [nKV, D]); a parallel block, attention and MLP both reading the
     * layer's one input norm, h + attn + mlp (parallel_block); the logits times logit_scale (as an f32; 0: none). */
    bool layer_norm, parallel_block;
    double logit_scale;
    double query_pre_attn_scalar;
    int64_t sliding_window;                   /* W keys incl. the query; 0 = none */
    bool layer_sliding[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    bool layer_nope[KVC_MODEL_MAX_LAYERS];    /* [num_layers] SmolLM3: q and k of this layer are not rotated */
    /* GptOss MoE (experts_per_tok: also the routed families' k; swiglu_limit > 0 also clamps HY V4's routed
     * experts: gate above, up both sides, then silu(gate) up) */
    int64_t num_experts, experts_per_tok;
    double swiglu_limit, swiglu_alpha;
    /* DeepseekV3 MLA */
    int64_t q_lora_rank; /* 0 = plain q_proj (config null; missing: 1536) */
    int64_t kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    /* Routed MoE (deepseek_v3: grouped sigmoid router; deepseek_v2: grouped softmax router, greedy as n_group 1;
     * qwen3_moe, qwen2_moe, mixtral: softmax router):
     * layer_moe[l] says whether layer l's feed-forward is n_routed_experts SwiGLU experts of
     * moe_intermediate_size (Mixtral: intermediate_size) or the dense MLP of intermediate_size;
     * norm_topk_prob renormalises the k weights; a shared SwiGLU expert of shared_expert_intermediate_size
     * (0: none; DeepseekV3: n_shared_experts * moe_intermediate_size) is added to the routed ones. */
    bool layer_moe[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    int64_t shared_expert_intermediate_size;
    int64_t first_k_dense_replace, moe_intermediate_size, n_routed_experts, n_shared_experts;
    int64_t n_group, topk_group;
    bool norm_topk_prob;
    double routed_scaling_factor;
    /* Gemma 2: the attention scores soft-capped by attn_logit_softcapping (the operator's logit_softcap) and
     * the logits by final_logit_softcapping, each x -> cap * tanh(x / cap) (as f32 arithmetic, the cap an f32
     * for the logits); 0: none. Last, so that the fields before them keep their offsets. */
    double attn_logit_softcapping, final_logit_softcapping;
    /* StarCoder2: each LayerNorm (layer_norm) adds a bias of its own (norm_bias: input_layernorm.bias,
     * post_attention_layernorm.bias, model.norm.bias; pre-norm blocks only); the dense MLP is not gated,
     * down(act(up(x))) with up = c_fc [I, H] and down = c_proj [H, I] (mlp_plain; mlp_bias: their biases).
     * Last, as above. */
    bool norm_bias, mlp_plain;
    /* Ministral 3 (Llama 4's attention scaling): each query, after RoPE, times 1 + query_scale_beta *
     * log(1 + floor(position / query_scale_positions)) (f32 arithmetic, the beta an f32); 0: none. Last, as
     * above. */
    double query_scale_beta;
    int64_t query_scale_positions;
    /* OLMo (1): LayerNorms without weight or bias (norm_weightless: layer_norm in pre-norm blocks, no
     * norm_bias; no norm tensors read), and q, k, v clamped to [-clip_qkv, clip_qkv]: v right after its
     * projection, q and k after their q/k norms, if any (OLMoE), before RoPE (an f32 bound; 0: none). Last, as
     * above. */
    bool norm_weightless;
    double clip_qkv;
    /* Llama 4: chunked local attention on the layers layer_chunked marks (each query sees the keys of its own
     * chunk of attention_chunk_size positions: the operator's attention_chunk_size), q and k of the rotated layers
     * L2-normalised per head after RoPE (qk_l2_norm: no weight, rms_norm_eps), the query scale (query_scale_beta,
     * query_scale_positions) on the no-rope layers only and at position + 1 (query_scale_nope: 1 + beta *
     * log1p(floor((pos + 1) / positions))), and each routed expert's input times its router score, the sigmoid
     * of its logit among the top k (moe_sigmoid_input). Last, as above. */
    int64_t attention_chunk_size;
    bool layer_chunked[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    bool qk_l2_norm, query_scale_nope, moe_sigmoid_input;
    /* Phi (1, 1.5, 2): the output head adds a bias of its own (lm_head.bias [vocab_size], also with a tied
     * head). Last, as above. */
    bool head_bias;
    /* GPT-NeoX: a parallel block whose MLP reads post_attention_layernorm of the block's input (with its bias
     * under norm_bias) instead of the attention's input_layernorm output; parallel_block only. Last, as above. */
    bool parallel_mlp_norm;
    /* GPT-2: learned absolute positions (pos_learned): row position + pos_offset of model.embed_positions.weight
     * [max_position_embeddings + pos_offset, hidden_size] added to each token's embedding; a position from
     * max_position_embeddings on is refused. Last, as above. */
    bool pos_learned;
    int64_t pos_offset;
    /* ERNIE 4.5 MoE (model_type ernie4_5_moe): the k experts of the largest softmax probability plus the
     * router's correction bias (choosing only), weighted by their unbiased probabilities over max(their sum,
     * moe_norm_min). Last, as above. */
    double moe_norm_min;
    /* Phi-3.5-MoE (model_type phimoe): SparseMixer's two experts, each among the router logits within
     * router_jitter_noise of its own (kvci_ffn_phimoe). Last, as above. */
    double router_jitter_noise;
    /* LFM2 (model_type lfm2): the layers layer_conv marks are short convolutions instead of attention, each
     * in_proj [3H, H] into B, C, x, then y = C * conv(B * x), a causal depthwise convolution of conv_kernel taps
     * per channel over time, then out_proj [H, H] (conv_bias: in_proj, conv and out_proj carry biases); such a
     * layer keeps no K/V but a state of the last conv_kernel - 1 conv inputs per channel and sequence
     * (kvc_layer_cache.state). Last, as above. */
    int64_t conv_kernel;
    bool conv_bias;
    bool layer_conv[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    /* ALiBi (BLOOM, MPT, Falcon with alibi; alibi): no positions at all, each head's attention scores biased by
     * its slope times the key's distance (the operator's alibi_slopes; kvci_model_alibi_slopes): alibi_bias_max 0
     * gives BLOOM's slopes (powers of 2^(-8/n), n the largest power of two <= heads, the rest odd powers of
     * 2^(-4/n)), else MPT's (2^(-k * alibi_bias_max / n), n the smallest power of two >= heads, even k first when
     * n > heads); alibi_in_scale: Falcon's form, the bias added before the softmax scale at bf16 precision (bf16
     * slopes, the operator's alibi_bf16), else after it in f32 (BLOOM, MPT). BLOOM also normalises the embeddings
     * (embed_norm: word_embeddings_layernorm, a LayerNorm with bias). Last, as above. */
    bool alibi, alibi_in_scale, embed_norm;
    double alibi_bias_max;
    /* HunYuan (model_type hunyuan_v1_dense): the per-head q/k RMSNorms (qk_norm) applied after RoPE instead of
     * before it. Last, as above. */
    bool qk_norm_after_rope;
    /* XGLM (model_type xglm): pos_learned's table [max_position_embeddings + pos_offset, hidden_size] computed instead
     * of read, row by row as tokens are embedded, transformers' sinusoid (src/model/sinusoid.c): row p holds sin(p w_i)
     * for i < H / 2, then cos(p w_i), w_i = exp(-i ln(10000) / (H / 2 - 1)) (an odd H's last column 0), and row
     * pos_zero_row (XGLM's pad_token_id; -1: none) zeros. Last, as above. */
    bool pos_sinusoidal;
    int64_t pos_zero_row;
    /* Qwen3-Next (model_type qwen3_next): the layers layer_gdn marks are Gated DeltaNet linear attention instead
     * (gated_delta.c): gdn_k_heads key heads of gdn_k_dim channels (q and k) and gdn_v_heads value heads of gdn_v_dim
     * (v, the output gate z), a causal depthwise conv of gdn_conv_kernel taps and SiLU over q | k | v, the gated
     * delta rule's state [gdn_v_heads, gdn_k_dim, gdn_v_dim] per sequence. Such a layer keeps no K/V but its conv
     * state (kvc_layer_cache.state: the last gdn_conv_kernel - 1 inputs of its 2 gdn_k_heads gdn_k_dim + gdn_v_heads
     * gdn_v_dim channels) and its recurrent state (kvc_layer_cache.recurrent). The attention layers' q_proj yields
     * each head's query then its gate [nH, 2 D], the attention output times sigmoid(gate) before o_proj
     * (attn_output_gate). Qwen3.5 (qwen3_5_text) projects q | k | v, z, b and a apart (gdn_split_proj) instead of
     * grouped per key head. Last, as above. */
    int64_t gdn_k_heads, gdn_v_heads, gdn_k_dim, gdn_v_dim, gdn_conv_kernel;
    bool attn_output_gate, gdn_split_proj;
    bool layer_gdn[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    /* Mamba2 hybrids (model_type bamba): the layers layer_mamba marks are Mamba2 mixers instead of attention
     * (kvci_mamba2_mixer, src/model/mamba2.c): in_proj [2 I + 2 G N + nh, H] into the gate z, xBC and dt (I =
     * mamba_heads x mamba_head_dim, G = mamba_groups, N = mamba_d_state, nh = mamba_heads); a causal depthwise
     * convolution of conv_kernel taps over the I + 2 G N channels of xBC (mamba_conv_bias: with its bias), SiLU;
     * per head dt = softplus(dt + dt_bias) clamped to [mamba_dt_min, mamba_dt_max], state = state exp(dt A) + dt B
     * x (A = -exp(A_log)), y = C . state + D x; y silu(z) RMS-normed in G groups; out_proj [H, I]
     * (mamba_proj_bias: in_proj and out_proj biases). Such a layer keeps no K/V but a conv state
     * (kvc_layer_cache.state [conv_kernel - 1, I + 2 G N]) and an ssm state (.recurrent [nh, P, N]) per
     * sequence. Last, as above. */
    bool layer_mamba[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    int64_t mamba_heads, mamba_head_dim, mamba_d_state, mamba_groups;
    bool mamba_conv_bias, mamba_proj_bias;
    double mamba_dt_min, mamba_dt_max;
    /* Nemotron-H (model_type nemotron_h): each layer holds one block, its own pre-norm and residual. layer_no_mixer
     * marks a layer without the attention (or mixer) half, an MLP alone, which keeps no cache; layer_no_ffn a layer
     * without the MLP half, a mixer or attention alone; both together a layer skipped whole (Mllama's cross-attention
     * layers on text-only prompts, mllama types only). Last, as above. */
    bool layer_no_mixer[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    bool layer_no_ffn[KVC_MODEL_MAX_LAYERS];   /* [num_layers] */
    /* OPT-350m (model_type opt): post-norm blocks, each sub-layer reading the residual stream as it is and the
     * stream normalised after each residual add, h = norm(h + f(h)), by input_layernorm after the attention and
     * post_attention_layernorm after the MLP (norm_after_add: layer_norm, no post_norms, sandwich_norms or
     * parallel_block); no final norm (final_norm_none); embeddings and the head of embed_dim columns (0:
     * hidden_size) with model.project_in [H, embed_dim] after the embedding and model.project_out [embed_dim, H]
     * before the head (no biases). Last, as above. */
    bool norm_after_add, final_norm_none;
    int64_t embed_dim;
    /* NanoChat (model_type nanochat): RoPE turned the other way, by -angle (rotate_half as [x2, -x1]: every
     * inverse frequency negated, the sines' signs flipped, cosines unchanged). Last, as above. */
    bool rope_reversed;
    /* LFM2's conv layers under tensor parallelism: the channels of one rank's conv (hidden_size / tp; its in_proj
     * [3 conv_channels, H], conv state [conv_kernel - 1, conv_channels]); 0, as a config read from a checkpoint
     * holds it: hidden_size. Last, as above. */
    int64_t conv_channels;
    /* Nemotron-H's experts (layer_moe on a layer_no_mixer layer): ungated mlp_act experts and shared MLP (up, act,
     * down), routed by DeepseekV3's grouped sigmoid router; moe_latent_size > 0: the routed experts run in that
     * latent width between fc1_latent_proj [L, H] and fc2_latent_proj [H, L] (0: in hidden_size). Last, as above. */
    int64_t moe_latent_size;
    /* Falcon-H1 (model_type falcon_h1): mamba_parallel_attn makes every layer_mamba layer run its mixer and GQA
     * attention side by side on the same normed input, their outputs summed into the residual; such a layer keeps
     * its K/V and its two states (two cache_info layers of one layer_idx, attention first). Under it alone: the
     * mixer's input times ssm_in_multiplier, its in_proj rows z | x | B | C | dt times ssm_multipliers[0..4], its
     * output times ssm_out_multiplier; y silu(z) group-RMS-normed only with mamba_rms_norm (mamba_norm_before_gate:
     * normed, then gated); out_proj's bias by mamba_out_bias (projectors_bias; in_proj's stays mamba_proj_bias); the
     * attention's input times attention_in_multiplier, its keys times key_multiplier, its output times
     * attention_out_multiplier; the SwiGLU gate's pre-activation times mlp_gate_multiplier, the MLP's output times
     * mlp_down_multiplier. Last, as above. */
    bool mamba_parallel_attn, mamba_rms_norm, mamba_norm_before_gate, mamba_out_bias;
    double ssm_in_multiplier, ssm_out_multiplier, ssm_multipliers[5];
    double attention_in_multiplier, attention_out_multiplier, key_multiplier;
    double mlp_gate_multiplier, mlp_down_multiplier;
    /* Mamba-1 (model_type mamba, falcon_mamba, jamba): the layers layer_mamba1 marks are selective-scan mixers instead
     * of attention (kvci_mamba1_mixer, src/model/mamba1.c): in_proj [2 I, H] into x and the gate z (I = mamba_inner;
     * mamba_proj_bias: in_proj and out_proj biases); a causal depthwise convolution of conv_kernel taps over x
     * (mamba_conv_bias: with its bias), SiLU; x_proj [R + 2 N, I] into dt [R], B and C [N] (R = mamba_dt_rank,
     * N = mamba_d_state), each RMS-normed with eps mamba_bcdt_eps when mamba_bcdt_norm (falcon_mamba without
     * weights, jamba with its dt_layernorm, b_layernorm, c_layernorm); dt_proj [I, R] and its bias, softplus; per
     * channel state = state exp(dt A) + dt B x (A = -exp(A_log) [I, N]), y = C . state + D x; y silu(z); out_proj [H,
     * I]. Such a layer keeps no K/V but a conv state (kvc_layer_cache.state [conv_kernel - 1, I]) and an ssm state
     * (.recurrent [I, N]) per sequence. mamba_heads > 0 (Zamba, with its shared block: num_mem_blocks 1): the
     * channels in mamba_heads heads, each with its own x_proj [R + 2 N, I / mamba_heads] and dt_proj, and in_proj's x
     * and z rows alternating per channel; 0: one head, as above. Last, as above. */
    bool layer_mamba1[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    int64_t mamba_inner, mamba_dt_rank;
    bool mamba_bcdt_norm;
    double mamba_bcdt_eps;
    /* GPT-2's scale_attn_by_inverse_layer_idx: layer l's softmax scale is kvc_model_attn_scale's divided by l + 1.
     * Last, as above. */
    bool attn_scale_inverse_layer;
    /* Granite SWA (granite_swa, granitemoe_swa): per-head attention sinks, self_attn.sinks [nH] (GptOss has its own
     * always). Last, as above. */
    bool attn_sinks;
    /* Cohere 2 MoE (cohere2_moe): the routed experts chosen by the top-k logits weighted by their sigmoid (renormalised
     * by norm_topk_prob) instead of their softmax (moe_route_sigmoid), and the shared experts' output averaged with
     * the routed ones', (routed + shared) / 2, instead of summed (moe_shared_average). Last, as above. */
    bool moe_route_sigmoid, moe_shared_average;
    /* AFMoE (model_type afmoe): the attention output times sigmoid(self_attn.gate_proj x) [T, nH * D] (a projection
     * of the layer's normed input of its own, no bias) before o_proj (attn_gate_proj). Last, as above. */
    bool attn_gate_proj;
    /* DeepSeek sparse attention (model_types glm_moe_dsa, deepseek_v32): each query attends to the index_topk keys
     * its lightning indexer picks (index_n_heads and the rest below; 0: none). Last, as above. */
    int64_t index_topk;
    /* LFM3's attention gate (use_attention_gate): g_proj (self_attn.gate_proj in checkpoints) [num_heads,
     * hidden_size] of the attention's normed input,
     * each head's output times sigmoid of its gate before o_proj. Last, as above. */
    bool attn_head_gate;
    /* JetMoE (model_type jetmoe): attention_experts marks the mixture of attention heads (kvci_attn_moa,
     * src/model/attn_moa.c): each token's top experts_per_tok of n_routed_experts query projections [nKV D, H]
     * (slot j's queries the heads j, j + K, ... of transformers' order) over the shared k / v of num_kv_heads heads,
     * each slot's output through its expert's output projection [H, nKV D], weighted by the router's top-k softmax,
     * plus a bias. final_norm_eps: the final norm's eps when above 0 (JetMoE's layer norms keep 1e-6, rms_norm_eps),
     * else rms_norm_eps. Last, as above. */
    bool attention_experts;
    double final_norm_eps;
    /* Ergo (model_type ergo): each sub-layer's output d joins the residual stream h through a learned gate g [H] per
     * hidden dimension, h = sigmoid(g) d + sqrt(1 + sigmoid(g)) exp(-softplus(g) / 2) h (residual_gates: the
     * attention's attn_gate, the MLP's ffn_gate); each routed expert's output, and the shared experts', through an
     * RMSNorm of its own before the routing weights (expert_norms); the logits of the full-attention layers times
     * global_attention_scale (0: none). Last, as above. */
    bool residual_gates, expert_norms;
    double global_attention_scale;
    /* LongCat-Flash (model_type longcat_flash): num_layers counts attention sub-layers, two per decoder layer, each
     * with its MLP; the even sub-layer's input to the MLP also feeds the layer's MoE (moe_shortcut), whose output is
     * held and added after the odd sub-layer's MLP. Its router scores n_routed_experts + zero_experts by softmax (a
     * zero expert passes its input through times its weight); mla_q_scale and mla_kv_scale (0: none) multiply the
     * queries and the normalised latent. Last, as above. */
    bool moe_shortcut;
    int64_t zero_experts;
    double mla_q_scale, mla_kv_scale;
    /* max_position_embeddings is 2048 because the config has no length key (max_position_embeddings, n_positions,
     * seq_length, max_seq_len) and its type no class default: vLLM's assumption, which `kvcache run` and the planner
     * state in a warning. Last, as above. */
    bool max_positions_assumed;
    /* OLMo Hybrid (model_type olmo_hybrid): its Gated DeltaNet (gdn_split_proj) scales beta by 2 (gdn_neg_eigval:
     * linear_allow_neg_eigval), its gated norm's eps is gdn_norm_eps (0: rms_norm_eps); under post_norms its Gated
     * DeltaNet layers keep pre-norms (gdn_pre_norms: input_layernorm, post_attention_layernorm the MLP's input). Last,
     * as above. */
    bool gdn_neg_eigval, gdn_pre_norms;
    double gdn_norm_eps;
    /* Per-layer attention shapes (MiMo-V2-Flash's sliding layers with more KV heads and values narrower than q/k;
     * Gemma 4's full layers): layer l's query heads, KV heads, q/k head dim, v head dim and rotary width, each 0
     * where the layer takes the model's (num_heads, num_kv_heads, head_dim, its q/k head dim, and its head dim
     * times rope.partial_rotary_factor). Its projections are q [nH D, H], k [nKV D, H], v [nKV Dv, H], o [H, nH Dv],
     * its caches k [.., nKV, D] and v [.., nKV, Dv], its softmax scale the family's from its own D. Layers of one
     * kind (full, sliding) share one rotary width (one cos/sin table each); tensor parallelism is refused
     * (kvci_layer_shapes_check, docs/model.md). Last, as above. */
    int64_t layer_heads[KVC_MODEL_MAX_LAYERS];      /* [num_layers] */
    int64_t layer_kv_heads[KVC_MODEL_MAX_LAYERS];   /* [num_layers] */
    int64_t layer_head_dim[KVC_MODEL_MAX_LAYERS];   /* [num_layers] */
    int64_t layer_v_head_dim[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    int64_t layer_rot_dim[KVC_MODEL_MAX_LAYERS];    /* [num_layers] */
    /* MiMo-V2-Flash (model_type mimo_v2_flash): attn_sinks on the sliding layers only (sinks_sliding_only), and each
     * value times attn_value_scale right after its projection, before the cache (as an f32; 0: none). Last, as
     * above. */
    bool sinks_sliding_only;
    double attn_value_scale;
    /* Laguna (model_type laguna): the attention output gates (attn_head_gate per head, attn_gate_proj per channel)
     * by softplus instead of the sigmoid (attn_gate_softplus: f32, torch's threshold 20). Last, as above. */
    bool attn_gate_softplus;
    /* Gemma 4 (gemma4_text, gemma4's text model; family_gemma4.c): each value head RMS-normalised without a weight
     * after its projection (v_norm); the full layers without v_proj, their values the keys' projection before k_norm
     * and RoPE (attn_k_eq_v); the last kv_shared_layers layers without k/v projections or caches, attending over the
     * keys and values of the last earlier layer of their kind (kvci_model_kv_source); per-layer inputs of ple_dim
     * channels (hidden_size_per_layer_input; 0: none) from embed_tokens_per_layer [ple_vocab, num_layers ple_dim] and
     * per_layer_model_projection, gated into each layer's output; each layer's output times its layer_scalar [1]
     * (layer_scalar); the KV-shared layers' MLP twice intermediate_size wide (mlp_double_shared). Last, as above. */
    bool v_norm, attn_k_eq_v, layer_scalar, mlp_double_shared;
    int64_t kv_shared_layers, ple_dim, ple_vocab;
    /* Zamba2 (model_type zamba2; Zamba, zamba, alike over Mamba-1 mixers, layer_mamba1, with one block, no
     * adapters: adapter_rank 0, gate and up apart): a Mamba2 mixer (layer_mamba) with its input_layernorm and residual
     * in every layer (layer_no_ffn); on the layers layer_shared_block marks (layers_block_type "hybrid") the mixer
     * reads h + linear(S) instead of h (its residual stays h), S the shared transformer block of that use site: an
     * RMSNorm [2H] of [h | the embeddings], GQA attention from 2H (q, k, v each plus its LoRA adapter B A x under
     * shared_attn_adapter; RoPE only without layer_nope), o_proj, an RMSNorm [H], then act(gate) * up (gate | up
     * plus the site's adapter B A x; shared_act: silu, gelu (erf) or gelu_tanh) and down_proj, no residual inside.
     * num_mem_blocks blocks serve the use sites in turn (site i: block i % num_mem_blocks), loaded once; each site
     * keeps its own K/V, adapters (adapter_rank) and linear [H, H]. mamba_norm_eps: the mixer's gated norm's eps
     * (0: rms_norm_eps). Last, as above. */
    bool layer_shared_block[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    int64_t num_mem_blocks, adapter_rank;
    bool shared_attn_adapter;
    kvc_mlp_act shared_act;
    double mamba_norm_eps;
    /* DeepSeek sparse attention's lightning indexer (index_topk > 0; src/model/attn_dsa.c): index_n_heads query
     * heads of index_head_dim from the q latent, one key of index_head_dim per token (LayerNormed, its first
     * qk_rope_head_dim channels rotated: on half-split lanes with index_rope_half, else on pairs), kept in each
     * indexed layer's own cache (kvc_layer_cache.index_k). layer_index_shared[l]: GLM-5's "shared" layers, which
     * reuse the previous full layer's choice and keep no indexer. Last, as above. */
    int64_t index_n_heads, index_head_dim;
    bool index_rope_half;
    bool layer_index_shared[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    /* Kimi-Linear (model_type kimi_linear): its layer_gdn layers are Kimi Delta Attention (kda.c): gdn_k_heads ==
     * gdn_v_heads heads of gdn_k_dim == gdn_v_dim channels, the decay per key channel, q, k and v projected and
     * convolved apart; its MLA layers are NoPE (the model's RoPE frequencies zero). Last, as above. */
    bool gdn_kda;
    /* BERT-style encoders run as decoders (model_type bert, roberta, ...; family_bert.c): each token's embedding plus
     * row 0 of model.token_type_embeddings [type_vocab_size, H] (0: none; the type transformers adds without
     * token_type_ids) before its position's row, then ERNIE's row 0 of model.task_type_embeddings
     * [task_type_vocab_size, H] after it (0: none); head_transform: the head reads LayerNorm(head_act(model.head_dense
     * x + b)) (model.head_dense [H, H] with its bias, model.head_norm with weight and bias, rms_norm_eps). Last, as
     * above. */
    int64_t type_vocab_size, task_type_vocab_size;
    bool head_transform;
    kvc_mlp_act head_act;
    /* CTRL (model_type ctrl): pos_sinusoidal's rows by CTRL's table instead of XGLM's: row p holds sin(p r_j) on its
     * first ceil(hidden_size / 2) columns and cos(p r_j) on the rest, r_j = 1 / 10000^(2j / hidden_size) in f32; it
     * needs pos_sinusoidal with pos_offset 0 and no zero row (pos_zero_row -1). Last, as above. */
    bool pos_sinusoid_ctrl;
    /* A.X-K2 (model_type axk2): gated_norm_rank r > 0 gates the input norm of every layer and the MLP-input norm of
     * the MoE layers, y = RMSNorm(x), y * sigmoid(fc2(silu(fc1(y)))) with fc1 [r, H] and fc2 [H, r] (gated_norm.c);
     * mla_q_gate: q_gate_proj [nH (dq + dv), 2 rq] maps [normalised | raw] q latent to each head's query and a
     * gate on its attention output (times its sigmoid) in place of q_b_proj. Last, as above. */
    int64_t gated_norm_rank;
    bool mla_q_gate;
    /* Beam (model_type beam): depth_scaled_residual joins each sub-layer's output d to the residual stream h as
     * d / sqrt(i) + h sqrt((i - 1) / i), i = 2 (l + 1) after attention and 2 (l + 1) + 1 after the MLP;
     * query_scale_ssmax scales the NoPE layers' queries by (1 + (pos + 1) / 2048)^0.1 (scalable softmax);
     * attn_gate_bias adds self_attn.gate_bias [nH] per head to the attn_gate_proj gates before their sigmoid. Last, as
     * above. */
    bool depth_scaled_residual, query_scale_ssmax, attn_gate_bias;
    /* MiniMax (model_type minimax): its layer_lightning layers are lightning attention (lightning.c) instead of
     * softmax attention: num_heads heads of head_dim, one [head_dim, head_dim] state per head, decaying by a fixed
     * rate per head and layer. Every sub-layer's residual is its normed input (residual_normed): h = alpha norm(h) +
     * beta f(norm(h)), residual_alpha / residual_beta [0] after full attention, [1] after lightning attention, [2]
     * after the MLP. Last, as above. */
    bool layer_lightning[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    bool residual_normed;
    double residual_alpha[3], residual_beta[3];
    /* Gemma 3n (gemma3n_text, gemma3n's text model; family_gemma3n.c, gemma3n.c): Gemma 4's attention, per-layer
     * inputs and KV-shared layers (v_norm, kv_shared_layers, ple_dim) in altup_inputs parallel copies of the hidden
     * state (AltUp), the layer run on copy altup_active, predicted before it and corrected after it (the corrected
     * active copy times correct_output_scale under altup_correct_scale); LAuReL beside the attention (rank
     * laurel_rank); the gate activations of layer l kept above mean + std * Phi^-1(layer_act_sparsity[l]) (0:
     * dense). Last, as above. */
    int64_t altup_inputs, altup_active, laurel_rank;
    bool altup_correct_scale;
    float layer_act_sparsity[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    /* Rows of the input embedding when they exceed vocab_size, the head's rows and the logits' width (Apertus 1.5's
     * pruned head: output_vocab_size logits over the ids of vocab_size; never with a tied head); 0: vocab_size.
     * Last, as above. */
    int64_t input_vocab_size;
    /* RWKV-4 (family KVC_FAMILY_RWKV, rwkv.c): in inference layer l's output projections are divided by 2^(l /
     * rwkv_rescale_every) and the hidden states halved after every rwkv_rescale_every-th layer (0: never). Last, as
     * above. */
    int64_t rwkv_rescale_every;
    /* RecurrentGemma (recurrent_gemma; family_recurrent_gemma.c, rglru.c): its layer_rglru layers are Griffin's
     * recurrent blocks instead of attention: linear_y with GeLU (tanh) beside linear_x, a causal depthwise conv of
     * conv_kernel taps (with bias) and the RG-LRU over lru_width channels (num_heads blocks of lru_width / num_heads
     * for its gates), their product through linear_out. Such a layer keeps a conv state [conv_kernel - 1, lru_width]
     * and the RG-LRU's state [lru_width]. Last, as above. */
    bool layer_rglru[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    int64_t lru_width;
    /* HY V4 (model_type hy_v4): hc_mult > 0 keeps hc_mult residual streams per token (hyper_conn.c): each sub-layer
     * reads their sum weighted by pre = sigmoid(.) + hc_eps and adds its output to stream i times post_i =
     * hc_magnitude sigmoid(.) + hc_eps (no stream mixing), and hc_head collapses them before the final norm.
     * index_rope_last: the indexer rotates the LAST qk_rope_head_dim channels of its queries and keys (not the
     * first); index_norm_eps: its key LayerNorm's eps (0: 1e-6). Its routed experts clamp by swiglu_limit (above).
     * Last, as above. */
    int64_t hc_mult;
    double hc_magnitude, hc_eps;
    bool index_rope_last;
    double index_norm_eps;
    /* DiffLlama's differential attention (attn_diff.c): each query head's softmax over its key head applied to the
     * values of both halves of the KV heads, head i's pair minus lambda times head i + num_heads / 2's, then a
     * weightless RMSNorm over the pair times (1 - lambda_init) (lambda_q1 / k1 / q2 / k2 per layer; lambda_init =
     * 0.8 - 0.6 exp(-0.3 l)). Its caches hold num_key_value_heads / 2 heads of 2 head_dim (key heads j and
     * j + num_key_value_heads / 2 side by side). Last, as above. */
    bool diff_attn;
    /* ModernBERT's decoder: layer 0's attention reads the embedded (LayerNormed) rows without a norm of its own
     * (attn_norm_first_none), and the head transform's dense has no bias (head_dense_unbiased: classifier_bias
     * false). Last, as above. */
    bool attn_norm_first_none, head_dense_unbiased;
    /* BitNet (unquantized: its weights as plain matrices): an RMSNorm of the attention output [nH Dv] before o_proj
     * (attn_sub_norm) and of the gated MLP's act(gate) * up [I] before down_proj (ffn_sub_norm), both at
     * rms_norm_eps. Last, as above. */
    bool sub_norms;
} kvc_model_config;

/* Parses config.json text (name: used in messages) through the one config
 * reader (docs/config.md). Refuses unknown model_type, missing required
 * fields, sizes outside the documented bounds, invalid UTF-8 and
 * inconsistent sizes, naming the key and the value. */
KVC_API kvc_status kvc_model_config_parse(const char *json_text, const char *name, kvc_model_config *out);
/* Reads DIR/config.json. */
KVC_API kvc_status kvc_model_config_load(const char *dir, kvc_model_config *out);

/* Softmax scale of the family's attention (MF 1.5, MF 4.3); NaN for NULL or
 * a config without a head dim (head_dim, or the MLA dims, below 1). */
KVC_API double kvc_model_attn_scale(const kvc_model_config *c);

/* ---- safetensors (by mmap) -------------------------------------------------- */

typedef struct kvc_safetensors kvc_safetensors;

/* Maps the safetensors files of dir, as transformers picks them:
 * model.safetensors alone when dir has it, else exactly the shards the
 * weight_map of dir's model.safetensors.index.json names, else every
 * *.safetensors file (sorted by name); and indexes their headers. Refused with the file named: not a regular file,
 * truncated file, header out of bounds (or over 100 MiB), header not UTF-8
 * JSON, shape or offsets not exact integers, tensor data outside the file,
 * tensors that do not tile the data section exactly (overlap, gap, offset not
 * a multiple of the element size; the tensor named), duplicate tensor names,
 * __metadata__ values other than strings; with the index named: a shard not a
 * plain .safetensors name of dir ("../x", "/x", "sub/x"), a missing shard, a
 * tensor not in the shard its entry names. */
KVC_API kvc_status kvc_safetensors_open_dir(const char *dir, kvc_safetensors **out);
KVC_API kvc_status kvc_safetensors_open_file(const char *path, kvc_safetensors **out);
KVC_API void kvc_safetensors_destroy(kvc_safetensors *st);
KVC_API bool kvc_safetensors_has(const kvc_safetensors *st, const char *name);
/* Copies tensor `name` (F32/F16/BF16 on disk) into dst as f32 after checking
 * its shape against shape[0..ndim); dst NULL checks only. Errors name the
 * tensor and its file: missing tensor, wrong shape, wrong dtype. */
KVC_API kvc_status kvc_safetensors_read_f32(const kvc_safetensors *st, const char *name, int32_t ndim,
                                            const int64_t *shape /* [ndim] */, float *dst /* [prod(shape)] */);

/* ---- model -------------------------------------------------------------------- */

typedef struct kvc_model kvc_model;

/* config.json + *.safetensors of a Hugging Face model directory. */
KVC_API kvc_status kvc_model_load(const char *dir, kvc_model **out);
/* kvc_model_load with the weight matrices in `weights`: "checkpoint" (or NULL:
 * as stored, as kvc_model_load), "f32", "bf16", "q8_0" or "q4_0" (quantized at
 * load: an f16 scale per 32 weights; the embedding and output head in q8_0;
 * docs/runtime.md). KVC_EINVAL naming any other value. */
KVC_API kvc_status kvc_model_load_weights(const char *dir, const char *weights, kvc_model **out);
/* The precision of the activations the dense layers over bf16 weights read: "f32" (the
 * default: split exactly into bf16 parts, f32-level results) or "bf16" (each activation rounded
 * once to bf16, one bf16 product per weight, as a PyTorch bf16 model computes: faster, with the
 * measured error of docs/runtime.md, "Rounded activations"). Matrices of other dtypes are left as
 * they are. Set it before the model is shared or a forward runs (it rewrites the model's
 * matrix views). KVC_EINVAL naming the value when it is neither, or "bf16" for a model without
 * bf16 matrices (f32 and f16 weights have no bf16 product; quantized ones already round the
 * activations to int8). */
KVC_API kvc_status kvc_model_set_activations(kvc_model *m, const char *activations);
/* "f32" or "bf16": what kvc_model_set_activations set last ("f32" for NULL). */
KVC_API const char *kvc_model_activations(const kvc_model *m);
/* The same architecture with deterministic pseudo-random weights (as the
 * oracle configurations of MF 5: weights N(0, 0.05), norms 1 + 0.1 N, biases N(0, 0.05), sinks N(0, 1)). */
KVC_API kvc_status kvc_model_create_random(const kvc_model_config *cfg, uint64_t seed, kvc_model **out);
KVC_API void kvc_model_destroy(kvc_model *m);
KVC_API const kvc_model_config *kvc_model_config_of(const kvc_model *m);

/* ---- caches seen by the forward pass --------------------------------------- */

typedef enum kvc_model_cache_kind {
    KVC_MCACHE_CONTIGUOUS = 1, /* per layer [rows, S_max, heads * dim] (BSH), written by the contiguous write, AO 2.1 */
    KVC_MCACHE_PAGED = 2       /* per layer [NB, bs, heads, dim], slot scatter AO 2.2, table per key */
} kvc_model_cache_kind;

/* One attention layer's cache. Full form (`latent` false): k [.., Nkv, D],
 * v [.., Nkv, Dv] (DeepseekV3: Nkv = nH, D = dn + dr, Dv = dv). Latent form
 * (DeepseekV3 only, MF 4.4): k = normalised latent c [.., 1, rkv],
 * v = rotated k_pe [.., 1, dr]. k and v have one dtype: f32, f16, bf16
 * (written rounded to nearest even) or int8 / fp8 (e4m3, e5m2), quantised
 * on write with a scale per token computed from that token's values
 * (amax / qmax, qmax 127, 448 or 57344; kvc_write_slots_token_quant and the
 * fused kvc_mla_write), stored by cache slot and read back as scale * q
 * (attention quant mode 3 paged, 1 contiguous). Full form: one scale per
 * token for its keys (all heads) and one for its values; latent form: one
 * scale per token over the latent and the rope part together (the latent is
 * the value too). */
typedef struct kvc_layer_cache {
    kvc_tensor k; /* contiguous [rows, S_max, Nkv*D]; paged [NB, bs, Nkv, D] (layout BNNDBS: [NB, Nkv, D, bs]) */
    kvc_tensor v; /* contiguous [rows, S_max, Nkv*Dv]; paged [NB, bs, Nkv, Dv] (layout BNNDBS: [NB, Nkv, bs, Dv]) */
    kvc_tensor k_scales;    /* int8 / fp8 only, f32 with NB*bs (paged) or rows*S_max (contiguous) elements, e.g.
                             * [NB, bs] / [rows, S_max]: the keys' per-slot scales (latent: of latent + rope) */
    kvc_tensor v_scales;    /* int8 / fp8 full form only: the values' per-slot scales, shaped as k_scales */
    char key[KVC_NAME_MAX]; /* paged: manager key of this layer's block table / slots (a conv layer: its state
                             * key's, whose block table gives each row its state block, width >= 1) */
    /* A short-convolution layer (kvc_model_config.layer_conv) keeps no k / v (their data NULL) but its conv
     * state, f32 always: contiguous [rows, conv_kernel - 1, H] (a row per cache row), paged [NB, conv_kernel -
     * 1, H] (one block per sequence: the first entry of its row of the key's block table); the oldest input
     * first. A row whose keys are all in the step (seq_lens_kv == seq_lens_q) starts from zeros; any other
     * continues from its state. Every step writes it. Attention layers leave it empty. A Mamba2 layer keeps its
     * conv state here too (its conv_kernel - 1 last xBC inputs, [.., conv_kernel - 1, conv channels]). */
    kvc_tensor state;
    /* A state layer's second state, f32, laid out as `state` (contiguous [rows, ...], paged [NB, ...], one block
     * per sequence under the same key and block table): Mamba2's ssm_state [.., heads, head_dim, d_state], Gated
     * DeltaNet's recurrent_state. Layers with one state or none leave it empty. Last, as kvc_model_config's. */
    kvc_tensor recurrent;
    /* paged: the manager key of the states' block table where the layer also keeps K/V under `key` (Falcon-H1's
     * mamba_parallel_attn); "" where the states, if any, are under `key`. Last, as above. */
    char state_key[KVC_NAME_MAX];
    /* DeepSeek sparse attention (kvc_model_config.index_topk): the layer's indexer keys, f32 whatever the KV dtype
     * (the top-k choice exact), paged [NB, bs, 1, index_head_dim], contiguous [rows, S_max, index_head_dim], written
     * by the layer's slots; empty on other layers and GLM-5's shared ones. Last, as above. */
    kvc_tensor index_k;
} kvc_layer_cache;

/* Whether the forward takes caches of dtype dt: f32, f16, bf16, i8,
 * fp8_e4m3, fp8_e5m2 (full form and latent alike), and a K/V dtype added to
 * the library's dtype table that is stored in blocks, keeps its scales in
 * them (or has none) and converts from f32 (full form in token order only,
 * head dims whole blocks: the cache builder refuses the rest by name). */
KVC_API bool kvc_model_kv_dtype_ok(kvc_dtype dt);
/* Whether caches of dt are quantised on write (int8, fp8) and so need the per-slot scale tensors. */
KVC_API bool kvc_model_kv_quantised(kvc_dtype dt);

/* The cache knobs: what an owner of a model's KV caches chooses, stated
 * once for every owner (kvc_runner_params.cache, runner.h;
 * kvc_engine_adapter_params.cache, engine.h) and checked by one rule set,
 * the cache builder's (docs/runtime.md, "The cache builder"): a refusal
 * names the field as the caller wrote it, e.g. "cache.kv_layout". */
typedef struct kvc_cache_knobs {
    int64_t block_size;         /* paged caches: tokens per block, in [1, KVC_ATTN_MAX_BLOCK_SIZE]; not read by
                                 * contiguous caches */
    kvc_dtype kv_dtype;         /* kvc_model_kv_dtype_ok: f32, f16, bf16, i8, fp8_e4m3, fp8_e5m2, or a registered
                                 * one stored in blocks of channels (BNBSND full form, head dims whole blocks) */
    kvc_block_layout kv_layout; /* KVC_BLOCK_BNBSND, or for paged full-form caches KVC_BLOCK_BNNDBS (keys in lanes:
                                 * K [NB, Nkv, D, bs], V [NB, Nkv, bs, Dv]; kvc_model_caches.layout) */
} kvc_cache_knobs;

/* block_size 16, kv_dtype f32, kv_layout KVC_BLOCK_BNBSND. */
KVC_API kvc_cache_knobs kvc_cache_knobs_default(void);

typedef struct kvc_model_caches {
    kvc_model_cache_kind kind;
    bool latent;             /* MLA latent caches (MF 4.4 absorbed attention) */
    int64_t block_size;      /* paged: every layer's block size, or 0: each layer's is its k tensor's block
                              * dimension (its manager key's: keys whose block sizes differ, as an engine with
                              * shared_pools gives keys of unequal bytes per token, kvc_cache_info_unify_pages) */
    kvc_block_layout layout; /* paged full-form caches: KVC_BLOCK_BNBSND (0, the default: k, v [NB, bs, Nkv, D]) or
                              * KVC_BLOCK_BNNDBS (k [NB, Nkv, D, bs], keys in lanes; v [NB, Nkv, bs, Dv]);
                              * latent and contiguous caches take BNBSND only */
    int32_t n_layers;
    kvc_layer_cache *layers; /* [n_layers] */
} kvc_model_caches;

/* Per-layer cache description the model asks for (engine path): k/v (or
 * nope/rope for latent) entries of dtype kv_dtype (kvc_model_kv_dtype_ok)
 * with num_head, dims, block_size (in [1, KVC_ATTN_MAX_BLOCK_SIZE]) and the sliding window of sliding layers
 * (group keys FullAttention / SlidingWindow); for int8 / fp8 also the f32
 * per-slot scale entries (one head of one channel): "k_scale" and "v_scale"
 * (full form) or "scale" (latent), in the layer's group. A short-convolution
 * layer (LFM2) has one entry instead, "conv_state": a state entry of the
 * Mamba group (is_state, shape [conv_kernel - 1, hidden_size], f32 whatever
 * kv_dtype, block_size 1: one block per request). Free with
 * kvc_model_cache_info_destroy (cache.h). */
KVC_API kvc_status kvc_model_cache_info_build(const kvc_model *m, bool latent, kvc_dtype kv_dtype, int64_t block_size,
                                              kvc_model_cache_info **out);

/* ---- forward ----------------------------------------------------------------- */

typedef struct kvc_model_workspace kvc_model_workspace;

/* Buffers for steps of at most max_tokens tokens and max_rows rows whose
 * keys reach at most max_kv_len positions (1 <= max_rows <= max_tokens <=
 * 2^24, 1 <= max_kv_len < 2^31, as the manager's max_model_len). Forward calls never allocate,
 * except that the attention kernel's workspace grows (once) when a step
 * needs more than the largest seen so far. */
KVC_API kvc_status kvc_model_workspace_create(const kvc_model *m, int64_t max_tokens, int64_t max_rows,
                                              int64_t max_kv_len, kvc_model_workspace **out);
KVC_API void kvc_model_workspace_destroy(kvc_model_workspace *ws);

typedef struct kvc_forward_args {
    const int32_t *token_ids;       /* [T], T = md->n_tokens */
    const kvc_step_metadata *md;    /* positions, lengths, per-key tables and slots */
    const kvc_model_caches *caches; /* NULL: no cache; every row must be a whole sequence (positions 0..L-1) */
    const int64_t *cache_rows;      /* contiguous caches: [n_rows] cache row of each step row (NULL: row r) */
    bool all_logits;                /* true: logits of every token; false: of each row's last token */
    float *logits;                  /* [T, V] if all_logits else [n_rows, V] */
} kvc_forward_args;

/* One step. Rows whose keys are all in the step (seq_lens_kv == seq_lens_q)
 * attend over the step's packed K/V and then write the cache; otherwise the
 * cache is written first and read back (decode, continued prefill). Every
 * attention layer reads its own key (sliding layers their sliding window).
 * Refused with a named field: T or rows above the workspace, ids outside the
 * vocabulary, a paged key missing from md, a cache row or position outside
 * the cache, cache shapes that do not match the model; and metadata that
 * disagrees with itself (docs/batch.md, "Caller-built metadata"): a row's
 * positions not seq_lens_kv - seq_lens_q .. seq_lens_kv - 1 in order, kv_pos
 * or cu_seq_lens_kv (when non-NULL) not those of seq_lens_kv, a slot other
 * than -1 or the one its row's block table gives, a table narrower than a
 * row's keys or naming a block its caches lack, two rows on one contiguous
 * cache row or one state block. The tables themselves
 * (block ids, blocks shared between rows) are the caller's. */
KVC_API kvc_status kvc_model_forward(const kvc_model *m, kvc_model_workspace *ws, const kvc_forward_args *a);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_MODEL_H */
