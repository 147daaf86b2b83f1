/* The checkpoint's names of the families whose modules are not named as Llama's: weights.c walks every model
 * under Llama's names (model.layers.N.self_attn.o_proj.weight, ...), and the loader reads each under the name
 * its model type's checkpoints give it. A saved quantized copy keeps Llama's names (save.c), so it is read
 * without renaming. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "model/weights_internal.h"

/* One rename: in a tensor of model_type `type`, the first `from` becomes `to`. Every rule of the type whose
 * `from` the name holds applies, in this order. */
typedef struct rename_rule {
    const char *type, *from, *to;
} rename_rule;

static const rename_rule RULES[] = {
    /* RecurrentGemma (RecurrentGemmaForCausalLM): temporal_pre_norm / channel_pre_norm the two norms, temporal_block
     * the attention or the recurrent block, mlp_block the MLP, final_norm the model's last norm */
    {"recurrent_gemma", "input_layernorm.", "temporal_pre_norm."},
    {"recurrent_gemma", "post_attention_layernorm.", "channel_pre_norm."},
    {"recurrent_gemma", "self_attn.", "temporal_block."},
    {"recurrent_gemma", "mlp.", "mlp_block."},
    {"recurrent_gemma", "model.norm.", "model.final_norm."},
    /* Phi (PhiForCausalLM): the attention's output projection is dense, the MLP fc1 (up) and fc2 (down) */
    {"phi", "self_attn.o_proj.", "self_attn.dense."},
    {"phi", "mlp.up_proj.", "mlp.fc1."},
    {"phi", "mlp.down_proj.", "mlp.fc2."},
    {"phi", "model.norm.", "model.final_layernorm."},
    /* Persimmon (PersimmonForCausalLM): GPT-NeoX's fused query_key_value and MLP names under model., dense the o_proj,
     * final_layernorm the final norm */
    {"persimmon", "self_attn.qkv_proj.", "self_attn.query_key_value."},
    {"persimmon", "self_attn.o_proj.", "self_attn.dense."},
    {"persimmon", "mlp.up_proj.", "mlp.dense_h_to_4h."},
    {"persimmon", "mlp.down_proj.", "mlp.dense_4h_to_h."},
    {"persimmon", "model.norm.", "model.final_layernorm."},
    /* GPT-NeoX (GPTNeoXForCausalLM): under gpt_neox., q/k/v fused per head in attention.query_key_value (the
     * fused name weights.c gives them), the MLP dense_h_to_4h (up) and dense_4h_to_h (down), the head embed_out */
    {"gpt_neox", "model.embed_tokens.", "gpt_neox.embed_in."},
    {"gpt_neox", "model.layers.", "gpt_neox.layers."},
    {"gpt_neox", "self_attn.qkv_proj.", "attention.query_key_value."},
    {"gpt_neox", "self_attn.o_proj.", "attention.dense."},
    {"gpt_neox", "mlp.up_proj.", "mlp.dense_h_to_4h."},
    {"gpt_neox", "mlp.down_proj.", "mlp.dense_4h_to_h."},
    {"gpt_neox", "model.norm.", "gpt_neox.final_layer_norm."},
    {"gpt_neox", "lm_head.", "embed_out."},
    /* GPT-NeoX Japanese (GPTNeoXJapaneseForCausalLM): GPT-NeoX's names under gpt_neox_japanese., the last layer's
     * o_proj bias attention.dense_bias */
    {"gpt_neox_japanese", "model.embed_tokens.", "gpt_neox_japanese.embed_in."},
    {"gpt_neox_japanese", "model.layers.", "gpt_neox_japanese.layers."},
    {"gpt_neox_japanese", "self_attn.qkv_proj.", "attention.query_key_value."},
    {"gpt_neox_japanese", "self_attn.o_proj.bias", "attention.dense_bias"},
    {"gpt_neox_japanese", "self_attn.o_proj.", "attention.dense."},
    {"gpt_neox_japanese", "mlp.up_proj.", "mlp.dense_h_to_4h."},
    {"gpt_neox_japanese", "mlp.down_proj.", "mlp.dense_4h_to_h."},
    {"gpt_neox_japanese", "model.norm.", "gpt_neox_japanese.final_layer_norm."},
    {"gpt_neox_japanese", "lm_head.", "embed_out."},
    /* GPT-2 (GPT2LMHeadModel): under transformer., wte / wpe the embeddings, h.N the layers with ln_1 / ln_2,
     * attn.c_attn (q, k, v fused) and attn.c_proj, mlp.c_fc (up) and mlp.c_proj (down), ln_f the final norm */
    {"gpt2", "model.embed_tokens.", "transformer.wte."},
    {"gpt2", "model.embed_positions.", "transformer.wpe."},
    {"gpt2", "model.layers.", "transformer.h."},
    {"gpt2", "input_layernorm.", "ln_1."},
    {"gpt2", "post_attention_layernorm.", "ln_2."},
    {"gpt2", "self_attn.qkv_proj.", "attn.c_attn."},
    {"gpt2", "self_attn.o_proj.", "attn.c_proj."},
    {"gpt2", "mlp.up_proj.", "mlp.c_fc."},
    {"gpt2", "mlp.down_proj.", "mlp.c_proj."},
    {"gpt2", "model.norm.", "transformer.ln_f."},
    /* OPT (OPTForCausalLM): under model.decoder., self_attn_layer_norm / final_layer_norm in each layer,
     * self_attn.out_proj, fc1 (up) and fc2 (down) outside any mlp., final_layer_norm the model's last norm */
    {"opt", "model.embed_tokens.", "model.decoder.embed_tokens."},
    {"opt", "model.embed_positions.", "model.decoder.embed_positions."},
    {"opt", "model.layers.", "model.decoder.layers."},
    {"opt", "input_layernorm.", "self_attn_layer_norm."},
    {"opt", "post_attention_layernorm.", "final_layer_norm."},
    {"opt", "self_attn.o_proj.", "self_attn.out_proj."},
    {"opt", "mlp.up_proj.", "fc1."},
    {"opt", "mlp.down_proj.", "fc2."},
    {"opt", "model.norm.", "model.decoder.final_layer_norm."},
    {"opt", "model.project_in.", "model.decoder.project_in."},
    {"opt", "model.project_out.", "model.decoder.project_out."},
    /* Falcon (FalconForCausalLM): under transformer., word_embeddings, h.N, self_attention.query_key_value (q/k/v
     * grouped by KV head: weights.c) and self_attention.dense, the MLP dense_h_to_4h (up) and dense_4h_to_h
     * (down), ln_f the final norm; new_decoder_architecture's ln_attn / ln_mlp are weights.c's names */
    {"falcon", "model.embed_tokens.", "transformer.word_embeddings."},
    {"falcon", "model.layers.", "transformer.h."},
    {"falcon", "self_attn.qkv_proj.", "self_attention.query_key_value."},
    {"falcon", "self_attn.o_proj.", "self_attention.dense."},
    {"falcon", "mlp.up_proj.", "mlp.dense_h_to_4h."},
    {"falcon", "mlp.down_proj.", "mlp.dense_4h_to_h."},
    {"falcon", "model.norm.", "transformer.ln_f."},
    /* GPT-J (GPTJForCausalLM): under transformer., wte, h.N with ln_1 (its one norm), attn.q_proj / k_proj / v_proj
     * / out_proj, mlp.fc_in (up) and mlp.fc_out (down), ln_f the final norm */
    {"gptj", "model.embed_tokens.", "transformer.wte."},
    {"gptj", "model.layers.", "transformer.h."},
    {"gptj", "input_layernorm.", "ln_1."},
    {"gptj", "self_attn.o_proj.", "attn.out_proj."},
    {"gptj", "self_attn.", "attn."},
    {"gptj", "mlp.up_proj.", "mlp.fc_in."},
    {"gptj", "mlp.down_proj.", "mlp.fc_out."},
    {"gptj", "model.norm.", "transformer.ln_f."},
    /* BLOOM (BloomForCausalLM): under transformer., word_embeddings and word_embeddings_layernorm (embed_norm), h.N,
     * self_attention.query_key_value (q/k/v per head: weights.c) and self_attention.dense, the MLP dense_h_to_4h
     * (up) and dense_4h_to_h (down), ln_f the final norm */
    {"bloom", "model.embed_tokens.", "transformer.word_embeddings."},
    {"bloom", "model.embed_norm.", "transformer.word_embeddings_layernorm."},
    {"bloom", "model.layers.", "transformer.h."},
    {"bloom", "self_attn.qkv_proj.", "self_attention.query_key_value."},
    {"bloom", "self_attn.o_proj.", "self_attention.dense."},
    {"bloom", "mlp.up_proj.", "mlp.dense_h_to_4h."},
    {"bloom", "mlp.down_proj.", "mlp.dense_4h_to_h."},
    {"bloom", "model.norm.", "transformer.ln_f."},
    /* RWKV (RwkvForCausalLM): under rwkv., embeddings, blocks.N with ln1 / ln2 (their mixers' names are weights.c's),
     * block 0's pre_ln the embeddings' norm, ln_out the final norm, head the LM head */
    {"rwkv", "model.embed_tokens.", "rwkv.embeddings."},
    {"rwkv", "model.embed_norm.", "rwkv.blocks.0.pre_ln."},
    {"rwkv", "model.layers.", "rwkv.blocks."},
    {"rwkv", "input_layernorm.", "ln1."},
    {"rwkv", "post_attention_layernorm.", "ln2."},
    {"rwkv", "model.norm.", "rwkv.ln_out."},
    {"rwkv", "lm_head.", "head."},
    /* MPT (MptForCausalLM): under transformer., wte, blocks.N with norm_1 / norm_2, attn.Wqkv (q, k, v one after
     * the other) and attn.out_proj, ffn.up_proj / ffn.down_proj, norm_f the final norm */
    {"mpt", "model.embed_tokens.", "transformer.wte."},
    {"mpt", "model.layers.", "transformer.blocks."},
    {"mpt", "input_layernorm.", "norm_1."},
    {"mpt", "post_attention_layernorm.", "norm_2."},
    {"mpt", "self_attn.qkv_proj.", "attn.Wqkv."},
    {"mpt", "self_attn.o_proj.", "attn.out_proj."},
    {"mpt", "mlp.", "ffn."},
    {"mpt", "model.norm.", "transformer.norm_f."},
    /* GPT-Neo (GPTNeoForCausalLM): under transformer., wte / wpe the embeddings, h.N the layers with ln_1 / ln_2,
     * attn.attention.q_proj / k_proj / v_proj / out_proj, mlp.c_fc (up) and mlp.c_proj (down), ln_f the final norm */
    {"gpt_neo", "model.embed_tokens.", "transformer.wte."},
    {"gpt_neo", "model.embed_positions.", "transformer.wpe."},
    {"gpt_neo", "model.layers.", "transformer.h."},
    {"gpt_neo", "input_layernorm.", "ln_1."},
    {"gpt_neo", "post_attention_layernorm.", "ln_2."},
    {"gpt_neo", "self_attn.o_proj.", "attn.attention.out_proj."},
    {"gpt_neo", "self_attn.", "attn.attention."},
    {"gpt_neo", "mlp.up_proj.", "mlp.c_fc."},
    {"gpt_neo", "mlp.down_proj.", "mlp.c_proj."},
    {"gpt_neo", "model.norm.", "transformer.ln_f."},
    /* BioGPT (BioGptForCausalLM): under biogpt., OPT's layer names (self_attn_layer_norm / final_layer_norm,
     * self_attn.out_proj, fc1 / fc2 outside any mlp.), layer_norm the final norm, output_projection the head */
    {"biogpt", "model.embed_tokens.", "biogpt.embed_tokens."},
    {"biogpt", "model.embed_positions.", "biogpt.embed_positions."},
    {"biogpt", "model.layers.", "biogpt.layers."},
    {"biogpt", "input_layernorm.", "self_attn_layer_norm."},
    {"biogpt", "post_attention_layernorm.", "final_layer_norm."},
    {"biogpt", "self_attn.o_proj.", "self_attn.out_proj."},
    {"biogpt", "mlp.up_proj.", "fc1."},
    {"biogpt", "mlp.down_proj.", "fc2."},
    {"biogpt", "model.norm.", "biogpt.layer_norm."},
    {"biogpt", "lm_head.", "output_projection."},
    /* XGLM (XGLMForCausalLM): BioGPT's layer names under model. (its positions are computed, weights.c) */
    {"xglm", "input_layernorm.", "self_attn_layer_norm."},
    {"xglm", "post_attention_layernorm.", "final_layer_norm."},
    {"xglm", "self_attn.o_proj.", "self_attn.out_proj."},
    {"xglm", "mlp.up_proj.", "fc1."},
    {"xglm", "mlp.down_proj.", "fc2."},
    {"xglm", "model.norm.", "model.layer_norm."},
    /* GPT-1 (OpenAIGPTLMHeadModel): GPT-2's layer names under transformer., tokens_embed / positions_embed the
     * embeddings, no final norm */
    {"openai-gpt", "model.embed_tokens.", "transformer.tokens_embed."},
    {"openai-gpt", "model.embed_positions.", "transformer.positions_embed."},
    {"openai-gpt", "model.layers.", "transformer.h."},
    {"openai-gpt", "input_layernorm.", "ln_1."},
    {"openai-gpt", "post_attention_layernorm.", "ln_2."},
    {"openai-gpt", "self_attn.qkv_proj.", "attn.c_attn."},
    {"openai-gpt", "self_attn.o_proj.", "attn.c_proj."},
    {"openai-gpt", "mlp.up_proj.", "mlp.c_fc."},
    {"openai-gpt", "mlp.down_proj.", "mlp.c_proj."},
    /* CTRL (CTRLLMHeadModel): under transformer., w the embedding, h.N the layers with layernorm1 / layernorm2,
     * multi_head_attention.Wq / Wk / Wv / dense, the MLP ffn.0 (up) and ffn.2 (down) of its nn.Sequential, layernorm
     * the final norm (its positions are computed, weights.c) */
    {"ctrl", "model.embed_tokens.", "transformer.w."},
    {"ctrl", "model.layers.", "transformer.h."},
    {"ctrl", "input_layernorm.", "layernorm1."},
    {"ctrl", "post_attention_layernorm.", "layernorm2."},
    {"ctrl", "self_attn.q_proj.", "multi_head_attention.Wq."},
    {"ctrl", "self_attn.k_proj.", "multi_head_attention.Wk."},
    {"ctrl", "self_attn.v_proj.", "multi_head_attention.Wv."},
    {"ctrl", "self_attn.o_proj.", "multi_head_attention.dense."},
    {"ctrl", "mlp.up_proj.", "ffn.0."},
    {"ctrl", "mlp.down_proj.", "ffn.2."},
    {"ctrl", "model.norm.", "transformer.layernorm."},
    /* VaultGemma (VaultGemmaForCausalLM): the MLP's input norm is pre_feedforward_layernorm (no post norms) */
    {"vaultgemma", "post_attention_layernorm.", "pre_feedforward_layernorm."},
    /* HunYuan dense (HunYuanDenseV1ForCausalLM): the per-head q/k norms are query_layernorm / key_layernorm */
    {"hunyuan_v1_dense", "self_attn.q_norm.", "self_attn.query_layernorm."},
    {"hunyuan_v1_dense", "self_attn.k_norm.", "self_attn.key_layernorm."},
    /* and the MoE's (HunYuanMoEV1ForCausalLM, named as the dense): the router mlp.gate.wg, the shared MLP shared_mlp */
    {"hunyuan_v1_dense", "mlp.gate.weight", "mlp.gate.wg.weight"},
    {"hunyuan_v1_dense", "mlp.shared_expert.", "mlp.shared_mlp."},
    /* Apertus (ApertusForCausalLM): the sub-layers' input norms are attention_layernorm / feedforward_layernorm */
    {"apertus", "input_layernorm.", "attention_layernorm."},
    {"apertus", "post_attention_layernorm.", "feedforward_layernorm."},
    /* MiniMax-M2 (MiniMaxM2ForCausalLM): Mixtral's block_sparse_moe (weights.c), the router's correction bias beside it
     */
    {"minimax_m2", "mlp.gate.e_score_correction_bias", "block_sparse_moe.e_score_correction_bias"},
    /* Kimi-Linear (KimiLinearForCausalLM): every MLP, dense or routed (with its router and shared experts), under
     * block_sparse_moe (the experts Mixtral's, weights.c) */
    {"kimi_linear", "mlp.", "block_sparse_moe."},
    /* K-EXAONE (ExaoneMoeForCausalLM): the router's correction bias beside mlp.gate */
    {"exaone_moe", "mlp.gate.e_score_correction_bias", "mlp.e_score_correction_bias"},
    /* EXAONE 3.x (ExaoneForCausalLM, which transformers runs as LlamaForCausalLM and saves under its hub names): under
     * transformer., wte, h.N with ln_1 / ln_2, attn.attention.q_proj / k_proj / v_proj / out_proj, mlp.c_fc_0 (gate),
     * c_fc_1 (up) and c_proj (down), ln_f the final norm */
    {"exaone", "model.embed_tokens.", "transformer.wte."},
    {"exaone", "model.layers.", "transformer.h."},
    {"exaone", "input_layernorm.", "ln_1."},
    {"exaone", "post_attention_layernorm.", "ln_2."},
    {"exaone", "self_attn.o_proj.", "attn.attention.out_proj."},
    {"exaone", "self_attn.", "attn.attention."},
    {"exaone", "mlp.gate_proj.", "mlp.c_fc_0."},
    {"exaone", "mlp.up_proj.", "mlp.c_fc_1."},
    {"exaone", "mlp.down_proj.", "mlp.c_proj."},
    {"exaone", "model.norm.", "transformer.ln_f."},
    /* DBRX (DbrxForCausalLM): under transformer., wte the embedding, blocks.N the layers with norm_attn_norm's norm_1
     * / norm_2 and attn.Wqkv (q, k, v fused) / attn.out_proj, norm_f the final norm (its ffn's names are weights.c's)
     */
    {"dbrx", "model.embed_tokens.", "transformer.wte."},
    {"dbrx", "model.layers.", "transformer.blocks."},
    {"dbrx", "input_layernorm.", "norm_attn_norm.norm_1."},
    {"dbrx", "post_attention_layernorm.", "norm_attn_norm.norm_2."},
    {"dbrx", "self_attn.qkv_proj.", "norm_attn_norm.attn.Wqkv."},
    {"dbrx", "self_attn.o_proj.", "norm_attn_norm.attn.out_proj."},
    {"dbrx", "model.norm.", "transformer.norm_f."},
    /* Jamba (JambaForCausalLM): the router feed_forward.router, the MLP (or experts) feed_forward, the MLP's input
     * norm pre_ff_layernorm, the final norm final_layernorm */
    {"jamba", "mlp.gate.", "feed_forward.router."},
    {"jamba", "mlp.", "feed_forward."},
    {"jamba", "post_attention_layernorm.", "pre_ff_layernorm."},
    {"jamba", "model.norm.", "model.final_layernorm."},
    /* Bamba (BambaForCausalLM): the MLP's input norm is pre_ff_layernorm, the MLP feed_forward */
    {"bamba", "post_attention_layernorm.", "pre_ff_layernorm."},
    {"bamba", "mlp.", "feed_forward."},
    /* Nemotron-H (NemotronHForCausalLM): embeddings, each layer's one block under mixer. with its one norm, norm_f
     * the final norm (hub checkpoints under backbone.: BARE_AS) */
    {"nemotron_h", "model.embed_tokens.", "model.embeddings."},
    {"nemotron_h", "input_layernorm.", "norm."},
    {"nemotron_h", "post_attention_layernorm.", "norm."},
    {"nemotron_h", "self_attn.", "mixer."},
    {"nemotron_h", "mamba.", "mixer."},
    {"nemotron_h", "mlp.", "mixer."},
    /* Granite MoE SWA (GraniteMoeSWAForCausalLM): Granite MoE's experts under transformers 5's own names (no legacy
     * checkpoint to convert from): the router block_sparse_moe.router, the experts' fused gate / up rows
     * experts.gate_up_proj [E, 2 I, H] and down experts.down_proj [E, H, I] */
    {"granitemoe_swa", "block_sparse_moe.router.layer.", "block_sparse_moe.router."},
    {"granitemoe_swa", "block_sparse_moe.input_linear.weight", "block_sparse_moe.experts.gate_up_proj"},
    {"granitemoe_swa", "block_sparse_moe.output_linear.weight", "block_sparse_moe.experts.down_proj"},
    /* Flint (FlintForCausalLM): the sinks are saved as softmax_offset */
    {"flint", "self_attn.sinks", "self_attn.softmax_offset"},
    /* MiMo-V2-Flash (MiMoV2FlashForCausalLM): its sliding layers' sinks are saved as attention_sink_bias */
    {"mimo_v2_flash", "self_attn.sinks", "self_attn.attention_sink_bias"},
    /* Laguna (LagunaForCausalLM): its output gate's projection is g_proj; transformers saves the router's
     * correction bias under the experts and the shared experts as shared_expert */
    {"laguna", "self_attn.gate_proj.", "self_attn.g_proj."},
    {"laguna", "mlp.gate.e_score_correction_bias", "mlp.experts.e_score_correction_bias"},
    {"laguna", "mlp.shared_experts.", "mlp.shared_expert."},
    /* Hy3 (HYV3ForCausalLM): the router mlp.router.gate, its correction bias mlp.expert_bias, the shared MLP
     * mlp.shared_mlp */
    {"hy_v3", "mlp.gate.weight", "mlp.router.gate.weight"},
    {"hy_v3", "mlp.gate.e_score_correction_bias", "mlp.expert_bias"},
    {"hy_v3", "mlp.shared_experts.", "mlp.shared_mlp."},
    /* AFMoE (AfmoeForCausalLM): the MLP's sandwich norms pre_mlp_layernorm / post_mlp_layernorm, the router
     * mlp.router.gate and its correction bias mlp.expert_bias */
    {"afmoe", "pre_feedforward_layernorm.", "pre_mlp_layernorm."},
    {"afmoe", "post_feedforward_layernorm.", "post_mlp_layernorm."},
    {"afmoe", "mlp.gate.weight", "mlp.router.gate.weight"},
    {"afmoe", "mlp.gate.e_score_correction_bias", "mlp.expert_bias"},
    /* Sarvam-MoE (sarvam_moe; Param2-MoE's are named alike), as transformers saves them: word_embeddings, the
     * attention under attention. with q, k, v one after the other in query_key_value (weights.c), dense the o_proj,
     * query_layernorm / key_layernorm the q/k norms, the router's correction bias mlp.gate.expert_bias */
    {"sarvam_moe", "model.embed_tokens.", "model.word_embeddings."},
    {"sarvam_moe", "self_attn.qkv_proj.", "attention.query_key_value."},
    {"sarvam_moe", "self_attn.o_proj.", "attention.dense."},
    {"sarvam_moe", "self_attn.q_norm.", "attention.query_layernorm."},
    {"sarvam_moe", "self_attn.k_norm.", "attention.key_layernorm."},
    {"sarvam_moe", "mlp.gate.e_score_correction_bias", "mlp.gate.expert_bias"},
    /* Kolibri 1 (Kolibri1ForCausalLM): GLM-4's sandwich norms post_attn_norm / post_ffn_norm, the router's correction
     * bias moe.router.expert_bias beside mlp. */
    {"kolibri1", "post_self_attn_layernorm.", "post_attn_norm."},
    {"kolibri1", "post_mlp_layernorm.", "post_ffn_norm."},
    {"kolibri1", "mlp.gate.e_score_correction_bias", "moe.router.expert_bias"},
    /* Ergo (ErgoForCausalLM): its training framework's names (transformers' conversion mapping), the base model's
     * prefix left out (BARE); the router and the shared MLP stored [in, out] (weights.c) */
    {"ergo", "model.embed_tokens.", "tok_embeddings."},
    {"ergo", "lm_head.", "output."},
    {"ergo", "input_layernorm.", "attention_norm."},
    {"ergo", "post_attention_layernorm.", "post_attention_norm."},
    {"ergo", "pre_feedforward_layernorm.", "ffn_norm."},
    {"ergo", "post_feedforward_layernorm.", "post_ffn_norm."},
    {"ergo", "attention_residual_gate.weight", "post_attention_residual.scale"},
    {"ergo", "feedforward_residual_gate.weight", "post_ffn_residual.scale"},
    {"ergo", "self_attn.qkv_proj.", "attention.wqkv."},
    {"ergo", "self_attn.o_proj.", "attention.wo."},
    {"ergo", "self_attn.q_norm.", "attention.q_norm."},
    {"ergo", "self_attn.k_norm.", "attention.k_norm."},
    {"ergo", "mlp.up_proj.", "feed_forward.up."},
    {"ergo", "mlp.down_proj.", "feed_forward.down."},
    {"ergo", "mlp.gate.linear.weight", "feed_forward.gate_kernel"},
    {"ergo", "mlp.gate.e_score_correction_bias", "feed_forward.router_bias"},
    {"ergo", "mlp.experts.up_proj", "feed_forward.up_proj"},
    {"ergo", "mlp.experts.down_proj", "feed_forward.down_proj"},
    {"ergo", "mlp.experts.post_expert_norm.weight", "feed_forward.expert_output_norm.scale"},
    {"ergo", "mlp.shared_experts.up_proj.weight", "feed_forward.shared_up_proj"},
    {"ergo", "mlp.shared_experts.down_proj.weight", "feed_forward.shared_down_proj"},
    {"ergo", "mlp.shared_experts.norm.weight", "feed_forward.shared_expert_output_norm.scale"},
    /* OLMo Hybrid (OlmoHybridForCausalLM): the Gated DeltaNet as Qwen3.5's (weights.c) with the gate g_proj, b_proj,
     * a_proj, o_norm and o_proj; q, k, v and the conv in three parts each (weights.c); its norms: LOAD_RULES */
    {"olmo_hybrid", "linear_attn.in_proj_z.", "linear_attn.g_proj."},
    {"olmo_hybrid", "linear_attn.in_proj_b.", "linear_attn.b_proj."},
    {"olmo_hybrid", "linear_attn.in_proj_a.", "linear_attn.a_proj."},
    {"olmo_hybrid", "linear_attn.norm.", "linear_attn.o_norm."},
    {"olmo_hybrid", "linear_attn.out_proj.", "linear_attn.o_proj."},
    /* NanoChat (NanoChatForCausalLM): the MLP fc1 (up) and fc2 (down) */
    {"nanochat", "mlp.up_proj.", "mlp.fc1."},
    {"nanochat", "mlp.down_proj.", "mlp.fc2."},
    /* ModernBERT's decoder (ModernBertDecoderForCausalLM): the head's decoder first (lm_head. then names its
     * transform), the embeddings and their norm under model.embeddings., attn (Wo the o_proj), attn_norm / mlp_norm,
     * the fused mlp.Wi (gate | up) and mlp.Wo, final_norm */
    {"modernbert-decoder", "lm_head.", "decoder."},
    {"modernbert-decoder", "model.head_dense.", "lm_head.dense."},
    {"modernbert-decoder", "model.head_norm.", "lm_head.norm."},
    {"modernbert-decoder", "model.embed_tokens.", "model.embeddings.tok_embeddings."},
    {"modernbert-decoder", "model.embed_norm.", "model.embeddings.norm."},
    {"modernbert-decoder", "self_attn.o_proj.", "attn.Wo."},
    {"modernbert-decoder", "self_attn.", "attn."},
    {"modernbert-decoder", "input_layernorm.", "attn_norm."},
    {"modernbert-decoder", "post_attention_layernorm.", "mlp_norm."},
    {"modernbert-decoder", "mlp.gate_up_proj.", "mlp.Wi."},
    {"modernbert-decoder", "mlp.down_proj.", "mlp.Wo."},
    {"modernbert-decoder", "model.norm.", "model.final_norm."},
};

/* The BERT types (family_bert.c): the encoder's modules under embeddings. and encoder.layer.N. (then under the base
 * model's own prefix, bert_base), q/k/v attention.self.query / key / value, attention.output.dense, intermediate.dense
 * (up) and output.dense (down); their norms by kind: the post-norm types' attention.output.LayerNorm and
 * output.LayerNorm, Megatron-BERT's attention.ln, ln and encoder.ln, XLM-RoBERTa-XL's attention.self_attn_layer_norm,
 * LayerNorm and encoder.LayerNorm, RoBERTa-PreLayerNorm's attention.LayerNorm, intermediate.LayerNorm and the base
 * model's LayerNorm; the head BERT's, ERNIE's and Megatron-BERT's cls.predictions (transform.dense,
 * transform.LayerNorm, decoder) or the others' lm_head (dense, layer_norm, decoder). The decoder's bias is the one
 * its forward adds: decoder.bias, which an untied checkpoint holds beside the head's own bias (another tensor,
 * unused); a tied one holds the head's bias alone (cls.predictions.bias, lm_head.bias: kvci_checkpoint_unconverted). */
static const rename_rule BERT_RULES[] = {
    {"cls", "model.head_dense.", "cls.predictions.transform.dense."},
    {"cls", "model.head_norm.", "cls.predictions.transform.LayerNorm."},
    {"cls", "lm_head.weight", "cls.predictions.decoder.weight"},
    {"cls", "lm_head.bias", "cls.predictions.decoder.bias"},
    {"lm_head", "model.head_dense.", "lm_head.dense."},
    {"lm_head", "model.head_norm.", "lm_head.layer_norm."},
    {"lm_head", "lm_head.weight", "lm_head.decoder.weight"},
    {"lm_head", "lm_head.bias", "lm_head.decoder.bias"},
    {"post", "input_layernorm.", "attention.output.LayerNorm."},
    {"post", "post_attention_layernorm.", "output.LayerNorm."},
    {"megatron", "input_layernorm.", "attention.ln."},
    {"megatron", "post_attention_layernorm.", "ln."},
    {"megatron", "model.norm.", "encoder.ln."},
    {"xl", "input_layernorm.", "attention.self_attn_layer_norm."},
    {"xl", "post_attention_layernorm.", "LayerNorm."},
    {"xl", "model.norm.", "encoder.LayerNorm."},
    {"prelayernorm", "input_layernorm.", "attention.LayerNorm."},
    {"prelayernorm", "post_attention_layernorm.", "intermediate.LayerNorm."},
    {"prelayernorm", "model.norm.", "LayerNorm."},
    {"bert", "model.embed_tokens.", "embeddings.word_embeddings."},
    {"bert", "model.embed_positions.", "embeddings.position_embeddings."},
    {"bert", "model.token_type_embeddings.", "embeddings.token_type_embeddings."},
    {"bert", "model.task_type_embeddings.", "embeddings.task_type_embeddings."},
    {"bert", "model.embed_norm.", "embeddings.LayerNorm."},
    {"bert", "model.layers.", "encoder.layer."},
    {"bert", "self_attn.q_proj.", "attention.self.query."},
    {"bert", "self_attn.k_proj.", "attention.self.key."},
    {"bert", "self_attn.v_proj.", "attention.self.value."},
    {"bert", "self_attn.o_proj.", "attention.output.dense."},
    {"bert", "mlp.up_proj.", "intermediate.dense."},
    {"bert", "mlp.down_proj.", "output.dense."},
};

/* A BERT type's base model prefix, head rules ("cls", "lm_head") and norm rules ("post", "megatron", "xl",
 * "prelayernorm"). */
typedef struct bert_names {
    const char *type, *base, *head, *norms;
} bert_names;

static const bert_names *bert_base(const char *model_type) {
    static const bert_names BASES[] = {
        {"bert", "bert.", "cls", "post"},
        {"ernie", "ernie.", "cls", "post"},
        {"roberta", "roberta.", "lm_head", "post"},
        {"xlm-roberta", "roberta.", "lm_head", "post"},
        {"camembert", "roberta.", "lm_head", "post"},
        {"data2vec-text", "data2vec_text.", "lm_head", "post"},
        {"bert-generation", "bert.", "lm_head", "post"},
        {"megatron-bert", "bert.", "cls", "megatron"},
        {"xlm-roberta-xl", "roberta.", "lm_head", "xl"},
        {"roberta-prelayernorm", "roberta_prelayernorm.", "lm_head", "prelayernorm"},
    };
    for (size_t i = 0; i < sizeof BASES / sizeof BASES[0]; i++)
        if (strcmp(model_type, BASES[i].type) == 0) return &BASES[i];
    return NULL;
}

/* Renames transformers undoes on load (its conversion mapping): a file may hold either name
 * (kvci_checkpoint_unconverted). OLMo Hybrid, as transformers saves it: the sub-layers' first norms
 * attention_layer_norm and feedforward_layer_norm, on every layer; Aria's fused experts fc1 (gate | up, [E, H, 2I])
 * and fc2 (down, [E, I, H]). A.X-K2, as its hub checkpoints and transformers'
 * save_pretrained name them: the gated norms' mlp.fc1 / mlp.fc2 as W_down / W_up, q_gate_proj as q_b_proj (the same
 * [heads (dq + dv), 2 rq] rows). HY V4's below. */
static const rename_rule LOAD_RULES[] = {
    {"olmo_hybrid", "input_layernorm.", "attention_layer_norm."},
    {"olmo_hybrid", "post_attention_layernorm.", "feedforward_layer_norm."},
    {"axk2", "layernorm.mlp.fc1.", "layernorm.W_down."},
    {"axk2", "layernorm.mlp.fc2.", "layernorm.W_up."},
    {"axk2", "self_attn.q_gate_proj.", "self_attn.q_b_proj."},
    /* HY V4, as its hub checkpoints and transformers' save_pretrained name them: the gates linear_gate (the
     * attention's output gate, the dense MLP's and the shared experts' gate_proj), the sinks learnable_sink_param, the
     * hyper-connections under hc_pre */
    {"hy_v4", "self_attn.gate_proj.", "self_attn.linear_gate."},
    {"hy_v4", "mlp.gate_proj.", "mlp.linear_gate."},
    {"hy_v4", "shared_experts.gate_proj.", "shared_experts.linear_gate."},
    {"hy_v4", "self_attn.sinks", "self_attn.learnable_sink_param"},
    {"hy_v4", "attn_hc.", "hc_pre.hc_attn_layer.hc_"},
    {"hy_v4", "ffn_hc.", "hc_pre.hc_mlp_layer.hc_"},
    {"hy_v4", "hc_head.hc_", "hc_pre.hc_head.hc_head_"},
    /* Aria's text model: the fused experts (load.c) as its hub names, as transformers saves them */
    {"aria_text", "mlp.experts.gate_up_proj", "mlp.experts.fc1.weight"},
    {"aria_text", "mlp.experts.down_proj", "mlp.experts.fc2.weight"},
};

/* The base model's prefix that a type's hub checkpoints may leave out or name otherwise (openai-community/gpt2 holds
 * wte.weight, h.0.ln_1.weight, ...; OPT's OPTModel checkpoints decoder.layers...; bigscience/bloom-560m
 * word_embeddings.weight, h.0...). */
static const rename_rule BARE[] = {
    {"gpt2", "transformer.", ""},
    {"openai-gpt", "transformer.", ""}, /* openai-community/openai-gpt: tokens_embed.weight, h.0.ln_1.weight */
    {"opt", "model.", ""},
    {"bloom", "transformer.", ""},
    {"nemotron_h", "model.", "backbone."},
    {"ergo", "model.", ""}, /* layers.0.attention.wqkv.weight, norm.weight */ /* nvidia/NVIDIA-Nemotron-Nano-9B-v2: backbone.layers.0.mixer... */
};

/* Types whose checkpoints name their modules as another type's: GPT-BigCode (GPTBigCodeForCausalLM) as GPT-2's
 * (its layers nn.Linear where GPT-2's are Conv1D: weights.c), CodeGen (CodeGenForCausalLM) as GPT-J's (its q/k/v fused
 * in attn.qkv_proj: weights.c), HunYuan MoE as HunYuan dense's, Mamba2, Mamba and FalconMamba as Nemotron-H's
 * (backbone., mixer., norm_f),
 * Falcon-H1 as Bamba's (pre_ff_layernorm, feed_forward), Param2-MoE as Sarvam-MoE's, Apertus 1.5's text model as
 * Apertus's. */
static const char *names_of(const char *model_type) {
    if (strcmp(model_type, "codegen") == 0) return "gptj";
    if (strcmp(model_type, "hunyuan_v1_moe") == 0) return "hunyuan_v1_dense";
    if (strcmp(model_type, "mamba2") == 0 || strcmp(model_type, "mamba") == 0 ||
        strcmp(model_type, "falcon_mamba") == 0)
        return "nemotron_h";
    if (strcmp(model_type, "falcon_h1") == 0) return "bamba";
    if (strcmp(model_type, "param2moe") == 0) return "sarvam_moe";
    if (strcmp(model_type, "apertus1p5_text") == 0) return "apertus";
    return strcmp(model_type, "gpt_bigcode") == 0 ? "gpt2" : model_type;
}

const char *kvci_checkpoint_bare(const char *model_type, const char *name, char *buf, size_t cap) {
    model_type = names_of(model_type);
    for (size_t i = 0; i < sizeof BARE / sizeof BARE[0]; i++)
        if (strcmp(model_type, BARE[i].type) == 0 && strncmp(name, BARE[i].from, strlen(BARE[i].from)) == 0) {
            snprintf(buf, cap, "%s%s", BARE[i].to, name + strlen(BARE[i].from));
            return buf;
        }
    return NULL;
}

/* LongCat-Flash's sub-layer L's modules within decoder layer L / 2 (LongcatFlashDecoderLayer): the attention, its
 * norms and the MLP under self_attn.j, input_layernorm.j, post_attention_layernorm.j and mlps.j (j = L % 2), the MoE
 * (at the even sub-layer) under mlp. with the router mlp.router.classifier and its correction bias beside it. */
typedef struct longcat_rule {
    const char *from, *to;
    bool sub; /* the sub-layer's index j follows `to` */
} longcat_rule;
static const longcat_rule LONGCAT[] = {
    {"self_attn.", "self_attn.", true},
    {"input_layernorm.", "input_layernorm.", true},
    {"post_attention_layernorm.", "post_attention_layernorm.", true},
    {"mlp.gate_proj.", "mlps.", true},
    {"mlp.up_proj.", "mlps.", true},
    {"mlp.down_proj.", "mlps.", true},
    {"mlp.gate.weight", "mlp.router.classifier.weight", false},
    {"mlp.gate.e_score_correction_bias", "mlp.router.e_score_correction_bias", false},
};

static const char *longcat_name(const char *name, char *buf, size_t cap) {
    static const char pre[] = "model.layers.";
    long long L = 0;
    int used = 0;
    if (strncmp(name, pre, sizeof pre - 1) != 0 || sscanf(name + sizeof pre - 1, "%lld.%n", &L, &used) != 1 || !used)
        return name;
    const char *rest = name + sizeof pre - 1 + used;
    for (size_t i = 0; i < sizeof LONGCAT / sizeof LONGCAT[0]; i++) {
        const longcat_rule *r = &LONGCAT[i];
        if (strncmp(rest, r->from, strlen(r->from)) != 0) continue;
        const char *tail = rest + strlen(r->from);
        if (!r->sub) {
            snprintf(buf, cap, "%s%lld.%s%s", pre, L / 2, r->to, tail);
        } else { /* mlp.gate_proj. -> mlps.j.gate_proj. keeps the module's own name after the index */
            const char *own = strncmp(r->from, "mlp.", 4) == 0 ? r->from + 4 : "";
            snprintf(buf, cap, "%s%lld.%s%lld.%s%s", pre, L / 2, r->to, L % 2, own, tail);
        }
        return buf;
    }
    snprintf(buf, cap, "%s%lld.%s", pre, L / 2, rest); /* the experts */
    return buf;
}

/* name under the rules[0..n) of model_type into buf[cap] (name itself when none applies); *hit: whether one did. */
static const char *apply(const rename_rule *rules, size_t n, const char *model_type, const char *name, bool *hit,
                         char *buf, size_t cap) {
    char tmp[320];
    const char *cur = name;
    for (size_t i = 0; i < n; i++) {
        const rename_rule *r = &rules[i];
        const char *at = strcmp(model_type, r->type) == 0 ? strstr(cur, r->from) : NULL;
        if (!at) continue;
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(at - cur), cur, r->to, at + strlen(r->from));
        snprintf(buf, cap, "%s", tmp);
        cur = buf;
        *hit = true;
    }
    return cur;
}

/* name as BERT type b's checkpoints hold it, into buf: its head's rules, its norms', the encoder's, then the base
 * model's prefix on all but the head. */
static const char *bert_name(const bert_names *b, const char *name, char *buf, size_t cap) {
    char a[320], c[320], tmp[320];
    bool hit = false;
    const size_t n = sizeof BERT_RULES / sizeof BERT_RULES[0];
    snprintf(a, sizeof a, "%s", apply(BERT_RULES, n, b->head, name, &hit, tmp, sizeof tmp));
    snprintf(c, sizeof c, "%s", apply(BERT_RULES, n, b->norms, a, &hit, tmp, sizeof tmp));
    const char *body = apply(BERT_RULES, n, "bert", c, &hit, tmp, sizeof tmp);
    const bool head = strncmp(body, "cls.", 4) == 0 || strncmp(body, "lm_head.", 8) == 0;
    snprintf(buf, cap, "%s%s", head ? "" : b->base, body);
    return buf;
}

const char *kvci_checkpoint_name(const char *model_type, const char *name, char *buf, size_t cap) {
    char tmp[320];
    bool hit = false;
    const bert_names *bert = bert_base(model_type);
    if (bert != NULL) return bert_name(bert, name, buf, cap);
    if (strcmp(model_type, "longcat_flash") == 0) return longcat_name(name, buf, cap);
    model_type = names_of(model_type);
    name = apply(LOAD_RULES, sizeof LOAD_RULES / sizeof LOAD_RULES[0], model_type, name, &hit, tmp, sizeof tmp);
    const char *out = apply(RULES, sizeof RULES / sizeof RULES[0], model_type, name, &hit, buf, cap);
    if (out == tmp) snprintf(buf, cap, "%s", tmp), out = buf;
    return out;
}

const char *kvci_checkpoint_unconverted(const char *model_type, const char *name, char *buf, size_t cap) {
    char tmp[320];
    bool hit = false;
    const bert_names *bert = bert_base(model_type);
    if (bert != NULL && strcmp(name, "lm_head.bias") == 0) { /* a tied head's bias (decoder.bias tied to it) */
        snprintf(buf, cap, "%s", strcmp(bert->head, "cls") == 0 ? "cls.predictions.bias" : "lm_head.bias");
        return buf;
    }
    if (bert != NULL) return NULL;
    model_type = names_of(model_type);
    apply(LOAD_RULES, sizeof LOAD_RULES / sizeof LOAD_RULES[0], model_type, name, &hit, tmp, sizeof tmp);
    bool any = false;
    return hit ? apply(RULES, sizeof RULES / sizeof RULES[0], model_type, name, &any, buf, cap) : NULL;
}
