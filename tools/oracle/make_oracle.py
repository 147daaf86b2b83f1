#!/usr/bin/env python3
"""Build the Hugging Face oracle data under tests/data/oracle/.

For each family (qwen3, gpt_oss, deepseek_v3, qwen3_moe, mixtral, qwen2_moe, gemma3, phi3,
phi3_longrope, olmo2, olmo3, granite, smollm3, gemma, gemma2, glm4, cohere, cohere2, glm, seed_oss,
exaone4, starcoder2, ministral,
ministral3, helium, arcee, stablelm, stablelm_parallel, olmo, ernie4_5, deepseek_v2, deepseek_v2_lite, stablelm2_qk,
olmoe, granitemoe, granitemoeshared, glm4_moe, glm4_moe_lite, exaone_moe, llama4, phi, gpt_neox, gpt_neox_seq, gpt2, opt, gpt_bigcode,
gpt_bigcode_mha, falcon, falcon_new, falcon_alibi, bloom, mpt, gptj, nemotron, ernie4_5_moe, phimoe, dbrx, lfm2, bamba, granitemoehybrid,
gpt_neo, codegen, vaultgemma, flex_olmo, hunyuan_v1_dense, biogpt, dots1, hunyuan_v1_moe, minimax_m2, exaone,
internlm3, apertus, persimmon, xglm, qwen3_next, kimi_linear, qwen3_5_text, qwen3_5_moe, olmo_hybrid, phi_qk, lfm2_moe, cwm, solar_open, jais2, iquestcoder,
hyperclovax, granite_swa, granitemoe_swa, flint, hy_v3,
cohere2_moe, cohere2_moe_sigmoid, sarvam_mla, axk1, axk2, glm_moe_dsa, deepseek_v32, hy_v4, lfm3, ergo, bert, roberta,
ernie, megatron_bert, roberta_prelayernorm, openai_gpt, ctrl, gpt_neox_japanese, beam, minimax, gemma3n, gemma4_unified) this script
  * builds a small model from an explicit config (float32, eager attention, eval mode),
  * overwrites every parameter from a seeded torch.Generator (norm weights, biases and sinks are
    randomised too: HF initialises norms to 1 and biases to 0, which would hide placement bugs),
  * saves config.json + model.safetensors with save_pretrained(safe_serialization=True),
  * runs greedy decoding with full-sequence forwards and no cache (use_cache=False), recording
    the logits of every prompt position and of every decode step,
  * checks model.generate(do_sample=False) (which uses the KV cache) against those ids,
  * writes expected.json and tensors.txt,
  * reloads the saved directory with from_pretrained and checks the stored logits bit for bit.

Also writes qwen3/bf16 and qwen3/f16: the qwen3 weights rounded to those dtypes (loader tests),
with the logits of the 23-token prompt computed in float32 from the rounded weights.

Only needed to regenerate the data; CI uses the committed files. See README.md beside this file.
"""

import argparse
import functools
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import (
    BertConfig,
    BertLMHeadModel,
    MegatronBertConfig,
    MegatronBertForCausalLM,
    RobertaPreLayerNormConfig,
    RobertaPreLayerNormForCausalLM,
    ErnieConfig,
    ErnieForCausalLM,
    RobertaConfig,
    RobertaForCausalLM,
    Zamba2Config,
    Zamba2ForCausalLM,
    ZambaConfig,
    ZambaForCausalLM,
    DeepseekV3Config,
    DeepseekV3ForCausalLM,
    KimiLinearConfig,
    MiniMaxConfig,
    MiniMaxForCausalLM,
    RwkvConfig,
    RwkvForCausalLM,
    RecurrentGemmaConfig,
    RecurrentGemmaForCausalLM,
    KimiLinearForCausalLM,
    CohereConfig,
    CohereForCausalLM,
    Cohere2Config,
    Cohere2ForCausalLM,
    Exaone4Config,
    Exaone4ForCausalLM,
    ExaoneMoeConfig,
    ExaoneMoeForCausalLM,
    GemmaConfig,
    MinistralConfig,
    MinistralForCausalLM,
    Ministral3Config,
    HeliumConfig,
    HeliumForCausalLM,
    CwmConfig,
    HyperCLOVAXConfig,
    HyperCLOVAXForCausalLM,
    IQuestCoderConfig,
    Jais2Config,
    Jais2ForCausalLM,
    SolarOpenConfig,
    SolarOpenForCausalLM,
    CwmForCausalLM,
    ApertusConfig,
    ApertusForCausalLM,
    AfmoeConfig,
    AfmoeForCausalLM,
    MiMoV2FlashConfig,
    MiMoV2FlashForCausalLM,
    LagunaConfig,
    LagunaForCausalLM,
    MellumConfig,
    MellumForCausalLM,
    ArceeConfig,
    ArceeForCausalLM,
    PersimmonConfig,
    PersimmonForCausalLM,
    XGLMConfig,
    XGLMForCausalLM,
    OpenAIGPTConfig,
    OpenAIGPTLMHeadModel,
    CTRLConfig,
    CTRLLMHeadModel,
    GPTNeoXJapaneseConfig,
    GPTNeoXJapaneseForCausalLM,
    StableLmConfig,
    StableLmForCausalLM,
    PhiConfig,
    PhiForCausalLM,
    Lfm2MoeConfig,
    Lfm2MoeForCausalLM,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    GPT2Config,
    GPT2LMHeadModel,
    GPTBigCodeConfig,
    GPTBigCodeForCausalLM,
    FalconConfig,
    FalconForCausalLM,
    BloomConfig,
    BloomForCausalLM,
    MptConfig,
    MptForCausalLM,
    GPTJConfig,
    BioGptConfig,
    BioGptForCausalLM,
    CodeGenConfig,
    CodeGenForCausalLM,
    GPTNeoConfig,
    GPTNeoForCausalLM,
    GPTJForCausalLM,
    NemotronConfig,
    NemotronForCausalLM,
    Lfm2Config,
    Lfm2ForCausalLM,
    Lfm3Config,
    Lfm3ForCausalLM,
    Qwen3NextConfig,
    Qwen3NextForCausalLM,
    Qwen3_5ForCausalLM,
    OlmoHybridConfig,
    OlmoHybridForCausalLM,
    Qwen3_5TextConfig,
    Qwen3_5MoeConfig,
    Qwen3_5MoeForConditionalGeneration,
    BambaConfig,
    BambaForCausalLM,
    NemotronHConfig,
    NemotronHForCausalLM,
    FalconH1Config,
    FalconH1ForCausalLM,
    Mamba2Config,
    Mamba2ForCausalLM,
    MambaConfig,
    MambaForCausalLM,
    JambaConfig,
    JambaForCausalLM,
    FalconMambaConfig,
    FalconMambaForCausalLM,
    GraniteMoeHybridConfig,
    GraniteMoeHybridForCausalLM,
    NanoChatConfig,
    NanoChatForCausalLM,
    DiffLlamaConfig,
    DiffLlamaForCausalLM,
    CohereCompassTextConfig,
    CohereCompassForCausalLM,
    ModernBertDecoderConfig,
    ModernBertDecoderForCausalLM,
    BitNetConfig,
    BitNetForCausalLM,
    OPTConfig,
    OPTForCausalLM,
    AXK1Config,
    LongcatFlashConfig,
    LongcatFlashForCausalLM,
    AXK1ForCausalLM,
    AXK2Config,
    AXK2ForCausalLM,
    BeamConfig,
    BeamForCausalLM,
    DeepseekV32Config,
    DeepseekV32ForCausalLM,
    GlmMoeDsaConfig,
    GlmMoeDsaForCausalLM,
    HYV4Config,
    HYV4ForCausalLM,
    SarvamMLAConfig,
    YoutuConfig,
    YoutuForCausalLM,
    MiniCPM3Config,
    MiniCPM3ForCausalLM,
    OlmoConfig,
    OlmoForCausalLM,
    OlmoeConfig,
    OlmoeForCausalLM,
    Ernie4_5Config,
    Ernie4_5ForCausalLM,
    Ernie4_5_MoeConfig,
    Ernie4_5_MoeForCausalLM,
    PhimoeConfig,
    PhimoeForCausalLM,
    DbrxConfig,
    DbrxForCausalLM,
    DeepseekV2Config,
    DeepseekV2ForCausalLM,
    Llama4Config,
    Llama4ForCausalLM,
    Llama4ForConditionalGeneration,
    Llama4TextConfig,
    Llama4VisionConfig,
    Ministral3ForCausalLM,
    Mistral3Config,
    Mistral3ForConditionalGeneration,
    PixtralVisionConfig,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2VLConfig,
    Qwen2VLForConditionalGeneration,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
    CLIPVisionConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaNextConfig,
    LlavaNextForConditionalGeneration,
    Emu3Config,
    Emu3ForConditionalGeneration,
    MllamaConfig,
    MllamaForConditionalGeneration,
    AriaConfig,
    AriaForConditionalGeneration,
    Phi4MultimodalConfig,
    Phi4MultimodalForCausalLM,
    Apertus1p5TextConfig,
    Apertus1p5TextForCausalLM,
    GemmaForCausalLM,
    Gemma2Config,
    Dots1Config,
    Dots1ForCausalLM,
    HunYuanDenseV1Config,
    ExaoneConfig,
    InternLM3Config,
    LlamaForCausalLM,
    MiniMaxM2Config,
    MiniMaxM2ForCausalLM,
    HunYuanMoEV1Config,
    HunYuanMoEV1ForCausalLM,
    HunYuanDenseV1ForCausalLM,
    FlexOlmoConfig,
    FlexOlmoForCausalLM,
    VaultGemmaConfig,
    VaultGemmaForCausalLM,
    Gemma2ForCausalLM,
    GlmConfig,
    GlmForCausalLM,
    Glm4Config,
    Glm4ForCausalLM,
    Glm4MoeConfig,
    Glm4MoeForCausalLM,
    Kolibri1Config,
    Kolibri1ForCausalLM,
    MiniCPM5MoeConfig,
    MiniCPM5MoeForCausalLM,
    Param2MoeConfig,
    SarvamMoEConfig,
    Glm4MoeLiteConfig,
    Glm4MoeLiteForCausalLM,
    Gemma3Config,
    Gemma3ForCausalLM,
    Gemma3ForConditionalGeneration,
    Gemma3TextConfig,
    Gemma3nForCausalLM,
    Gemma3nTextConfig,
    Gemma4Config,
    Gemma4ForCausalLM,
    Gemma4UnifiedConfig,
    Gemma4UnifiedForCausalLM,
    Gemma4UnifiedForConditionalGeneration,
    Gemma4UnifiedTextConfig,
    Gemma4ForConditionalGeneration,
    Gemma4TextConfig,
    Gemma4VisionConfig,
    GraniteConfig,
    GraniteForCausalLM,
    GraniteMoeConfig,
    GraniteMoeForCausalLM,
    JetMoeConfig,
    JetMoeForCausalLM,
    GraniteMoeSharedConfig,
    GraniteMoeSharedForCausalLM,
    Cohere2MoeConfig,
    Cohere2MoeForCausalLM,
    ErgoConfig,
    ErgoForCausalLM,
    FlintConfig,
    FlintForCausalLM,
    HYV3Config,
    HYV3ForCausalLM,
    GraniteMoeSWAConfig,
    GraniteMoeSWAForCausalLM,
    GraniteSWAConfig,
    GraniteSWAForCausalLM,
    GptOssConfig,
    GptOssForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    Olmo2Config,
    Olmo2ForCausalLM,
    Olmo3Config,
    Olmo3ForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    SiglipVisionConfig,
    SmolLM3Config,
    SmolLM3ForCausalLM,
    Qwen3Config,
    SeedOssConfig,
    Starcoder2Config,
    Starcoder2ForCausalLM,
    SeedOssForCausalLM,
    Qwen3ForCausalLM,
    Qwen2MoeConfig,
    Qwen2MoeForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
)

SEED = 20240604
PROMPT_LENGTHS = (5, 23, 40)
NEW_TOKENS = 8
VOCAB = 512


# --------------------------------------------------------------------------------------------
# configs
# --------------------------------------------------------------------------------------------

def qwen3_config():
    # spec model-families.md §5 "Q3"
    return Qwen3Config(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        max_position_embeddings=512,
        attention_bias=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def gpt_oss_config():
    # spec §5 "G", with hidden 64 / intermediate 48 instead of 128 / 64 to keep the files small.
    return GptOssConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=48,
        num_hidden_layers=4,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        sliding_window=8,
        num_local_experts=8,
        num_experts_per_tok=2,
        rms_norm_eps=1e-5,
        rope_parameters={
            "rope_type": "yarn",
            "rope_theta": 150000.0,
            "factor": 32.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
            "original_max_position_embeddings": 4096,
        },
        max_position_embeddings=131072,
        attention_bias=True,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def deepseek_v3_config():
    # spec §5 "D" with dense MLP layers only (first_k_dense_replace = num_hidden_layers = 3) and
    # intermediate 192 instead of 256 (file size). MoE fields kept valid but unused.
    return DeepseekV3Config(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=192,
        moe_intermediate_size=64,
        num_hidden_layers=3,
        first_k_dense_replace=3,
        num_attention_heads=4,
        num_key_value_heads=4,
        q_lora_rank=64,
        kv_lora_rank=32,
        qk_nope_head_dim=32,
        qk_rope_head_dim=16,
        v_head_dim=24,
        n_routed_experts=8,
        n_group=2,
        topk_group=1,
        num_experts_per_tok=2,
        n_shared_experts=1,
        routed_scaling_factor=2.5,
        rope_parameters={
            "rope_type": "yarn",
            "rope_theta": 10000.0,
            "factor": 40.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
        max_position_embeddings=163840,
        rope_interleave=True,
        rms_norm_eps=1e-6,
        attention_bias=False,
        tie_word_embeddings=False,
        num_mtp_layers=0,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def qwen3_moe_config():
    # Qwen3-30B-A3B's structure at toy size: q/k norms, head_dim 16 != hidden / heads, layer 0 dense
    # (mlp_only_layers) with intermediate 64, layers 1-2 route 8 experts of width 24, top-2.
    # norm_topk_prob false (the class default; mixtral covers the renormalised weights), so the
    # softmax is over all 8 logits before top-k (softmax over the top 2 only would differ).
    return Qwen3MoeConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=64,
        moe_intermediate_size=24,
        num_hidden_layers=3,
        mlp_only_layers=[0],
        decoder_sparse_step=1,
        num_experts=8,
        num_experts_per_tok=2,
        norm_topk_prob=False,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        max_position_embeddings=512,
        attention_bias=False,
        use_sliding_window=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def mixtral_config():
    # Mixtral at toy size: Mistral attention with a sliding window of 8 (shorter than the 23- and
    # 40-token prompts) on every layer, 8 experts (w1/w3/w2) of width 32, top-2, renormalised.
    return MixtralConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=32,
        num_hidden_layers=2,
        num_local_experts=8,
        num_experts_per_tok=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=8,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        max_position_embeddings=512,
        router_jitter_noise=0.0,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def qwen2_moe_config():
    # Qwen2-MoE at toy size: q/k/v biases, 4 layers with decoder_sparse_step 2 (layers 1 and 3 route
    # 8 experts of width 24, top-2, not renormalised, plus a shared expert of width 32 scaled by the
    # sigmoid of shared_expert_gate; layers 0 and 2 dense, intermediate 64), and use_sliding_window
    # with max_window_layers 4: the config class makes layers 0 and 2 slide (window 8).
    return Qwen2MoeConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=64,
        moe_intermediate_size=24,
        shared_expert_intermediate_size=32,
        num_hidden_layers=4,
        decoder_sparse_step=2,
        num_experts=8,
        num_experts_per_tok=2,
        norm_topk_prob=False,
        num_attention_heads=4,
        num_key_value_heads=2,
        qkv_bias=True,
        use_sliding_window=True,
        sliding_window=8,
        max_window_layers=4,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        max_position_embeddings=512,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


def gemma3_config():
    # Gemma 3 text at toy size: sliding_window_pattern 3 over 5 layers (sliding, sliding, full,
    # sliding, sliding), a window of 8 (shorter than the 23- and 40-token prompts), the sliding
    # layers' rope at rope_local_base_freq 10,000 and the full layers' linear rope (factor 8, theta
    # 1e6, as the 4B-27B models), query_pre_attn_scalar 32 (not head_dim 16, so the scale shows),
    # GeGLU (gelu_pytorch_tanh), q/k norms, the four sandwich norms, tied embeddings scaled by
    # sqrt(hidden_size).
    return Gemma3TextConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=64,
        num_hidden_layers=5,
        sliding_window_pattern=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        query_pre_attn_scalar=32,
        sliding_window=8,
        hidden_activation="gelu_pytorch_tanh",
        rope_parameters={
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        },
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        max_position_embeddings=512,
        attention_bias=False,
        final_logit_softcapping=None,
        attn_logit_softcapping=None,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )


# every Gemma 4 oracle's: the ropes per layer type (the full layers' proportional on a quarter of the angles),
# eps, positions, no special tokens
GEMMA4_COMMON = dict(
    rope_parameters={
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    },
    rms_norm_eps=1e-6, max_position_embeddings=512, bos_token_id=None, eos_token_id=None)


def gemma4_config():
    # Gemma 4 text at toy size, E2B-like: layers sliding, full, sliding, full with the last two KV-shared
    # (num_kv_shared_layers 2: layer 2 attends over layer 0's keys and values, layer 3 over layer 1's, neither has
    # k/v projections), their MLPs twice as wide (use_double_wide_mlp), per-layer inputs of 8 channels, a window of
    # 8 (shorter than the prompts), the full layers' proportional rope (a quarter of the angles at theta 1e6), the
    # sliding layers' default rope, q/k/v norms (v's without weight), scale 1, the four sandwich norms applied as w,
    # layer scalars, tied embeddings. The full layers' heads twice as wide (global_head_dim 16, head_dim 8; small, as the scale is 1), as the
    # E2B / E4B models' 512 against 256.
    return Gemma4TextConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=64,
        num_hidden_layers=4,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        global_head_dim=16,
        sliding_window=8,
        num_kv_shared_layers=2,
        use_double_wide_mlp=True,
        hidden_size_per_layer_input=8,
        vocab_size_per_layer_input=VOCAB,
        tie_word_embeddings=True,
        final_logit_softcapping=None,
        pad_token_id=0,  # the wrapper's text-only path reads it (its multimodal mask)
        **GEMMA4_COMMON,
    )


def gemma3n_config():
    # Gemma 3n text at toy size, E2B-like: layers sliding, full, sliding, full with the last two KV-shared (layer 2
    # attends over layer 0's keys and values, layer 3 over layer 1's), a window of 8 (shorter than the prompts), the
    # sliding layers' rope at theta 1e4 and the full layers' at 1e6, q/k/v norms (v's without weight), scale 1, the
    # four sandwich norms applied as w; per-layer inputs of 8 channels, four AltUp copies (the active one 0,
    # correct_output_scale applied), LAuReL of rank 8, the gate activations of layers 0 (sliding) and 3 (full,
    # shared) sparse (0.95 and 0.6), final logits soft-capped at 10 (small enough to bend them), tied embeddings.
    return Gemma3nTextConfig(
        vocab_size=VOCAB,
        vocab_size_per_layer_input=VOCAB - 64,  # as E2B / E4B, below vocab_size: ids beyond it read row 0
        hidden_size=32,
        hidden_size_per_layer_input=8,
        intermediate_size=64,
        num_hidden_layers=4,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        sliding_window=8,
        num_kv_shared_layers=2,
        laurel_rank=8,
        altup_num_inputs=4,
        activation_sparsity_pattern=[0.95, 0.0, 0.0, 0.6],
        final_logit_softcapping=10.0,
        tie_word_embeddings=True,
        rope_parameters={
            "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        },
        rms_norm_eps=1e-6, max_position_embeddings=512, pad_token_id=0, bos_token_id=None, eos_token_id=None,
    )


def gemma4_unified_config():
    # Gemma 4 Unified text at toy size (12B-like): Gemma 4's layers without per-layer inputs or experts; layers
    # sliding, full, sliding, full with the last two KV-shared (layer 2 over layer 0's keys and values, layer 3 over
    # layer 1's), the full layers' head dim twice the sliding layers' (global_head_dim 16 against 8) with their
    # proportional rope, a window of 8, layer scalars, final logits soft-capped at 10, untied head.
    # use_bidirectional_attention is the class's "vision" (text tokens causal).
    return Gemma4UnifiedTextConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=64,
        num_hidden_layers=4,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        global_head_dim=16,
        sliding_window=8,
        num_kv_shared_layers=2,
        final_logit_softcapping=10.0,
        tie_word_embeddings=False,
        pad_token_id=0,  # the wrapper's text-only path reads it
        **GEMMA4_COMMON,
    )


def gemma4_dense_config():
    # Gemma 4 text at toy size, 31B-like: no per-layer inputs, no KV sharing, the full layer's values from its
    # k_proj (attention_k_eq_v) in its own shape (global_head_dim 32 against head_dim 16, one KV head,
    # num_global_key_value_heads, against 2), final logits soft-capped at 10 (small enough to bend them); layers
    # sliding, sliding, full.
    return Gemma4TextConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        global_head_dim=32,
        num_global_key_value_heads=1,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        sliding_window=8,
        attention_k_eq_v=True,
        hidden_size_per_layer_input=0,
        final_logit_softcapping=10.0,
        tie_word_embeddings=False,
        pad_token_id=None,
        **GEMMA4_COMMON,
    )


def gemma4_moe_config():
    # Gemma 4 text at toy size, 26B-A4B-like: every layer's experts beside its MLP (enable_moe_block: 4 experts of
    # 16, 2 per token, routed from the residual stream, GeGLU), no per-layer inputs; layers sliding, full (head dim
    # 16 against 8), sliding-then-forced-full.
    return Gemma4TextConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        global_head_dim=16,
        layer_types=["sliding_attention", "full_attention", "full_attention"],
        sliding_window=8,
        enable_moe_block=True,
        num_experts=4,
        top_k_experts=2,
        moe_intermediate_size=16,
        hidden_size_per_layer_input=0,
        tie_word_embeddings=True,
        pad_token_id=None,
        **GEMMA4_COMMON,
    )


# both Phi-3 oracles: 2 layers of width 64 (MLP 96), 4 query heads and 2 KV heads of 16, no special tokens
PHI3_SHAPE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def phi3_config():
    # Phi-3-mini at toy size: fused qkv_proj / gate_up_proj, GQA (4 query heads, 2 KV heads of 16), the
    # whole head rotated with the default rope, a sliding window of 8 on every layer (shorter than the
    # 23- and 40-token prompts), untied embeddings, rms_norm_eps left at Phi3Config's 1e-5.
    return Phi3Config(
        **PHI3_SHAPE,
        sliding_window=8,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False,
        max_position_embeddings=512,
        original_max_position_embeddings=512,
    )


def phi3_longrope_factors(n, seed):
    gen = torch.Generator().manual_seed(seed)
    return [round(float(v), 4) for v in 1.0 + 3.0 * torch.rand(n, generator=gen)]


def phi3_longrope_config():
    # Phi-4-mini at toy size: partial_rotary_factor 0.75 (12 of each head's 16 dims rotate, 6 frequencies),
    # longrope with 6 short and 6 long factors, original_max_position_embeddings 64 (beyond every prompt and
    # continuation here, so transformers takes the short factors) and max_position_embeddings 256 (factor 4:
    # attention factor sqrt(1 + ln 4 / ln 64)), tied embeddings, GQA (4 query heads, 2 KV heads), no window.
    return Phi3Config(
        **PHI3_SHAPE,
        partial_rotary_factor=0.75,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
                         "short_factor": phi3_longrope_factors(6, 1), "long_factor": phi3_longrope_factors(6, 2),
                         "original_max_position_embeddings": 64},
        original_max_position_embeddings=64,
        tie_word_embeddings=True,
        max_position_embeddings=256,
        sliding_window=None,
    )


# the OLMo, Granite and SmolLM3 oracles: width 64 (MLP 96), 4 query heads and 2 KV heads of 16, no special tokens
DENSE_TOY_SHAPE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_attention_heads=4,
                       num_key_value_heads=2, max_position_embeddings=512, bos_token_id=None, eos_token_id=None,
                       pad_token_id=None)


def olmo2_config():
    # OLMo 2 at toy size: post-norm blocks (no input norm; post_attention_layernorm and
    # post_feedforward_layernorm on the sub-layer outputs), q_norm / k_norm over the whole q [64] / k [32]
    # projection, GQA (4 query heads, 2 KV heads of 16), rope_theta 500,000 as the hub's 7B-32B configs,
    # untied embeddings, rms_norm_eps left at Olmo2Config's 1e-5.
    return Olmo2Config(
        **DENSE_TOY_SHAPE,
        num_hidden_layers=3,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        tie_word_embeddings=False,
        attention_bias=False,
    )


def olmo3_config():
    # OLMo 3 at toy size: OLMo 2's blocks over 4 layers of Olmo3Config's default layer_types (three sliding,
    # then one full), a window of 8 (shorter than the 23- and 40-token prompts), yarn (factor 4 over 128
    # positions) on the full layer and the default rope at theta 10,000 on the sliding ones, GQA 4/2, untied.
    return Olmo3Config(
        **DENSE_TOY_SHAPE,
        num_hidden_layers=4,
        sliding_window=8,
        rope_parameters={
            "full_attention": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128,
                               "rope_theta": 500000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        },
        tie_word_embeddings=False,
        attention_bias=False,
    )


def hyperclovax_config():
    # HyperCLOVA X SEED at toy size: Granite's layer with Peri-LN (use_post_norm, the class's: post_norm1 / post_norm2
    # on each sub-layer's output, randomised as every norm), embedding_multiplier 6, residual_multiplier 0.22,
    # attention_multiplier left at the class's head_dim^-1/2 and logits times logits_scaling 3 (multiplied, not
    # divided as Granite's), GQA 4/2, 2 layers, untied (the default).
    return HyperCLOVAXConfig(**DENSE_TOY_SHAPE, num_hidden_layers=2, embedding_multiplier=6.0, residual_multiplier=0.22,
                             logits_scaling=3.0, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def granite_config():
    # Granite 3 at toy size: Llama with embedding_multiplier 6 (not a power of two, so its rounding shows),
    # residual_multiplier 0.22, attention_multiplier 0.1 (not head_dim 16's 0.25) and logits_scaling 3 (a
    # division that differs from a product by its reciprocal in some bits), GQA 4/2, tied embeddings as the hub's.
    return GraniteConfig(
        **DENSE_TOY_SHAPE,
        num_hidden_layers=2,
        embedding_multiplier=6.0,
        residual_multiplier=0.22,
        attention_multiplier=0.1,
        logits_scaling=3.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=True,
        attention_bias=False,
        mlp_bias=False,
    )


def smollm3_config():
    # SmolLM3 at toy size: no_rope_layers [1, 0, 1, 1] (layer 1 leaves q and k unrotated; not the interval
    # rule's layer 3, so a reader that ignores the list shows), theta 2e6 (SmolLM3Config's), GQA 4/2, tied.
    return SmolLM3Config(
        **DENSE_TOY_SHAPE,
        num_hidden_layers=4,
        no_rope_layers=[1, 0, 1, 1],
        rope_parameters={"rope_type": "default", "rope_theta": 2000000.0},
        tie_word_embeddings=True,
    )


# Gemma (1) and Gemma 2 oracles: width 48 (embeddings times sqrt(48), not a power of two), head_dim 16 with 4
# query and 2 KV heads, the default rope at theta 10,000, tied, no biases, no special tokens
GEMMA_SHAPE = dict(vocab_size=VOCAB, hidden_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True,
                   max_position_embeddings=512, attention_bias=False, bos_token_id=None, eos_token_id=None,
                   pad_token_id=None)


def gemma_config():
    # Gemma (1) at toy size: norms as 1 + w, GeGLU under the legacy name hidden_act "gelu" (GemmaConfig reads
    # it as gelu_pytorch_tanh), 2 layers (the 2B model is MQA, the 7B MHA), the softmax scale head_dim^-1/2.
    return GemmaConfig(**GEMMA_SHAPE, intermediate_size=96, num_hidden_layers=2, hidden_act="gelu")


def gemma2_config():
    # Gemma 2 at toy size: 4 layers alternating sliding (even) and full (odd), a window of 8 (shorter than the
    # 23- and 40-token prompts), one default rope (theta 10,000), query_pre_attn_scalar 32 (not head_dim 16),
    # GeGLU (gelu_pytorch_tanh), the four sandwich norms as 1 + w, no q/k norms, tied embeddings scaled by
    # sqrt(hidden_size), and both soft-caps low enough to bend what they cap: the attention scores' at 5, the
    # logits' at 3 (dropping either moves the logits: the summary's sensitivity_no_*_softcap).
    return Gemma2Config(**GEMMA_SHAPE, intermediate_size=64, num_hidden_layers=4, query_pre_attn_scalar=32,
                        sliding_window=8, hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                        attn_logit_softcapping=5.0, final_logit_softcapping=3.0)


def vaultgemma_config():
    # VaultGemma at toy size: Gemma 2's layer without its post-attention and post-feedforward norms (input_layernorm,
    # pre_feedforward_layernorm only, as 1 + w), 4 layers alternating sliding (even) and full (odd; the default
    # layer_types), a window of 8, query_pre_attn_scalar 32, GeGLU, tied embeddings scaled by sqrt(hidden_size), both
    # soft-caps low (attention 5, logits 3).
    return VaultGemmaConfig(**GEMMA_SHAPE, intermediate_size=64, num_hidden_layers=4, query_pre_attn_scalar=32,
                            sliding_window=8, rms_norm_eps=1e-6, attn_logit_softcapping=5.0,
                            final_logit_softcapping=3.0)


# GLM and GLM-4 share one toy shape: 3 layers, head_dim 16, theta 1e4, untied (the rest their classes' defaults).
GLM_SHAPE = dict(**DENSE_TOY_SHAPE, num_hidden_layers=3, head_dim=16,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def glm4_config():
    # GLM-4-0414 at toy size: fused gate_up_proj, sandwich norms (post_self_attn_layernorm and
    # post_mlp_layernorm on the sub-layer outputs), q/k/v biases (attention_bias, Glm4Config's default),
    # head_dim 16 of which the first 8 rotate (partial_rotary_factor left at Glm4Config's 0.5) in adjacent
    # pairs, GQA 4/2, untied, rms_norm_eps left at Glm4Config's 1.5625e-7.
    return Glm4Config(**GLM_SHAPE)


def glm_config():
    # GLM-4-9B-chat-hf at toy size: GLM-4's attention (q/k/v biases by GlmConfig's attention_bias, head_dim 16
    # of which the first 8 rotate in adjacent pairs, partial_rotary_factor left at GlmConfig's 0.5) and fused
    # gate_up_proj in plain pre-norm blocks (no sandwich norms), GQA 4/2, untied, rms_norm_eps left at 1.5625e-7.
    return GlmConfig(**GLM_SHAPE)


def cohere_config():
    # Command R+ at toy size: LayerNorm without bias (mean subtracted, layer_norm_eps 1e-5), parallel blocks
    # (attention and MLP read the same normalised input), use_qk_norm (a LayerNorm of each q and k head with
    # its own weights, before RoPE), RoPE on adjacent pairs, logit_scale 0.3 (not a power of two, so its
    # rounding shows), q/k/v/o biases (attention_bias; the hub's models have none), GQA 4/2, tied
    # embeddings, rope_theta left at CohereConfig's 500,000. (cohere2 runs the blocks without q/k norms.)
    return CohereConfig(
        **DENSE_TOY_SHAPE,
        num_hidden_layers=3,
        logit_scale=0.3,
        attention_bias=True,
        use_qk_norm=True,
        tie_word_embeddings=True,
    )


def cohere2_config():
    # Command R7B at toy size: Cohere's parallel LayerNorm blocks over 4 layers of Cohere2Config's default
    # layer_types (sliding_window_pattern 4: three sliding, then one full), a window of 8 (shorter than the
    # 23- and 40-token prompts), RoPE on the sliding layers only (the full layer has none), logit_scale 0.3,
    # GQA 4/2, tied embeddings, no biases.
    return Cohere2Config(
        **DENSE_TOY_SHAPE,
        num_hidden_layers=4,
        sliding_window=8,
        logit_scale=0.3,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=True,
    )


def seed_oss_config():
    # Seed-OSS at toy size: Llama with q/k/v biases (attention_bias, SeedOssConfig's default true), none on
    # o_proj (attention_out_bias left at its default false: a key of its own), MLP biases (mlp_bias set: its
    # default is false), head_dim 16 (set: the default is 128), GQA 4/2, 3 layers, theta 1e4, untied.
    return SeedOssConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3, head_dim=16, mlp_bias=True,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def exaone4_config():
    # EXAONE 4.0 at toy size: post-norm blocks (post_attention_layernorm, post_feedforward_layernorm; no input
    # norm), q/k norms per head before RoPE, 4 layers of Exaone4Config's default layer_types (sliding_window_pattern
    # 4: three sliding, then one full), a window of 8 (shorter than the 23- and 40-token prompts), RoPE on the
    # sliding layers only (the full one is NoPE), GQA 4/2, theta 1e4, untied, rms_norm_eps left at 1e-5.
    return Exaone4Config(**DENSE_TOY_SHAPE, num_hidden_layers=4, sliding_window=8,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def exaone_moe_config():
    # K-EXAONE at toy size: EXAONE 4.0's attention (q/k norms per head before RoPE; layer_types from
    # sliding_window_pattern 4: layers 0-2 slide over a window of 8, layer 3 full and NoPE) in pre-norm blocks (input
    # and post-attention norms, OLMoE's), GQA 4/2, theta 1e4; mlp_layer_types ["dense", "sparse", "dense", "sparse"]
    # (first_k_dense_replace cannot say it): DeepSeek-V3's grouped sigmoid router over 8 experts of 16 (num_experts)
    # in 2 groups (the best 1 kept), top-2, renormalised, times 2.5 (the class default), one shared expert
    # (num_shared_experts); the router's e_score_correction_bias random; untied, rms_norm_eps left at 1e-5.
    return ExaoneMoeConfig(**DENSE_TOY_SHAPE, num_hidden_layers=4, sliding_window=8, moe_intermediate_size=16,
                           num_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, num_shared_experts=1,
                           mlp_layer_types=["dense", "sparse", "dense", "sparse"],
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def starcoder2_config():
    # StarCoder2 at toy size: LayerNorms with bias (norm_epsilon 1e-5), a plain MLP c_fc -> gelu_pytorch_tanh ->
    # c_proj, biases on q/k/v/o and the MLP (use_bias, Starcoder2Config's default), every layer sliding with a
    # window of 8 (shorter than the 23- and 40-token prompts; the default is none), GQA 4/2, 3 layers, theta 1e4,
    # tied embeddings (the default).
    return Starcoder2Config(**DENSE_TOY_SHAPE, num_hidden_layers=3, sliding_window=8,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def ministral_config():
    # Ministral at toy size: Mistral with layer_types (sliding, full, sliding, full; MinistralConfig's default
    # slides every layer), a window of 8 (shorter than the 23- and 40-token prompts), head_dim 16 (set: Ministral's
    # attention needs it), GQA 4/2, theta 1e4, untied, no biases.
    return MinistralConfig(**DENSE_TOY_SHAPE, num_hidden_layers=4, head_dim=16, sliding_window=8,
                           layer_types=["sliding_attention", "full_attention"] * 2,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def ministral3_config():
    # Ministral 3's text model at toy size: Mistral with head_dim 16, no window (Ministral3Config's default), YaRN
    # (factor 16 over original_max_position_embeddings 16, so the ramp bends the toy's frequencies; mscale and
    # mscale_all_dim 1: attention factor 1) and Llama 4's query scale by position, llama_4_scaling_beta 0.1 over
    # the same 16 positions (1 up to 15, 1 + 0.1 ln 2 to 31, 1 + 0.1 ln 3 to 47: every prompt past 16 tokens
    # sees it), GQA 4/2, 2 layers, untied, rms_norm_eps left at 1e-5.
    shape = {**DENSE_TOY_SHAPE, "max_position_embeddings": 256}
    return Ministral3Config(**shape, num_hidden_layers=2, head_dim=16, tie_word_embeddings=False,
                            rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 16.0,
                                             "original_max_position_embeddings": 16, "beta_fast": 32.0,
                                             "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                             "llama_4_scaling_beta": 0.1})


def helium_config():
    # Helium at toy size: Llama with RoPE on adjacent pairs, q/k/v biases (attention_bias set; o_proj never has
    # one) and MLP biases (mlp_bias set), head_dim 16 (set: the default is 128), GQA 4/2, 3 layers, untied,
    # rope_theta and rms_norm_eps left at HeliumConfig's 1e5 and 1e-8.
    return HeliumConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3, head_dim=16, attention_bias=True, mlp_bias=True,
                        tie_word_embeddings=False)


def arcee_config():
    # Arcee (AFM) at toy size: Llama with an ungated MLP down(relu2(up(x))) (hidden_act left at ArceeConfig's
    # relu2), q/k/v/o biases (attention_bias) and MLP biases (mlp_bias), GQA 4/2, 3 layers, theta 1e4, untied.
    return ArceeConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3, attention_bias=True, mlp_bias=True,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def ergo_config():
    # Ergo at toy size: fused qkv, per-head q/k norms, 4 heads / 2 KV heads of 16, 3 layers [sliding, full, sliding]
    # (global_attention_every_n_layers 2) over a window of 8 keys, RoPE (pairs) on the sliding layers only, the full
    # layer's logits times global_attention_scale 1.7; sandwich norms and per-dimension residual gates; layer 0 a
    # dense relu2 MLP of 96 (num_dense_blocks 1), layers 1-2 8 relu2 experts of 16 (each output RMS-normed by its
    # own weights) chosen by sigmoid scores plus a random correction bias, top-2, renormalised, times 8^1/2, plus the
    # normed shared relu2 MLP of 24; rms_norm_eps 1e-6, theta 1e4, untied.
    shape = {k: v for k, v in DENSE_TOY_SHAPE.items() if k != "intermediate_size"}
    return ErgoConfig(**shape, num_hidden_layers=3, first_dense_intermediate_size=96, num_dense_blocks=1,
                      moe_intermediate_size=16, shared_intermediate_size=24, num_experts=8, num_experts_per_tok=2,
                      global_attention_every_n_layers=2, global_attention_scale=1.7, sliding_window=8,
                      rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def beam_config():
    # Beam at toy size: Qwen3-MoE's attention (per-head q/k norms), GQA 4/2 of 16, each head's output times
    # sigmoid(gate_proj x + its gate_bias); 4 layers [sliding, full, sliding, full], the sliding ones over 8 keys with
    # RoPE (BeamConfig's default rope dict: theta 1e4 there, none on the full layers, whose queries are scaled by
    # position); sandwich norms, depth-scaled residual adds; layers 0 and 3 a SwiGLU MLP of 96, layers 1-2 DeepSeek-V3's
    # grouped sigmoid router over 8 experts of 16 in 2 groups (the best 1 kept), top-2, renormalised, times 2.5, random
    # correction bias, no shared expert; logits soft-capped at 30 (the default), rms_norm_eps 1e-6, untied.
    return BeamConfig(**DENSE_TOY_SHAPE, head_dim=16, num_hidden_layers=4, sliding_window=8, moe_intermediate_size=16,
                      num_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1,
                      layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
                      mlp_layer_types=["dense", "sparse", "sparse", "dense"])


def afmoe_config():
    # AFMoE (Trinity) at toy size: per-head q/k norms, the attention output gated by sigmoid(gate_proj x), sandwich
    # norms, GQA 4/2, head_dim 16, 3 layers [sliding, full, sliding] (global_attn_every_n_layers 2) over a window of 8
    # keys, RoPE on the sliding layers only; layer 0 a dense MLP of 96 (num_dense_layers 1), layers 1-2 8 experts of
    # width 16 chosen by sigmoid scores plus a random expert_bias, top-2, renormalised, times route_scale 2.5, plus one
    # shared expert; mup_enabled (embeddings times sqrt(64)), untied.
    return AfmoeConfig(**DENSE_TOY_SHAPE, head_dim=16, num_hidden_layers=3, num_dense_layers=1,
                       global_attn_every_n_layers=2, sliding_window=8, moe_intermediate_size=16, num_experts=8,
                       num_experts_per_tok=2, num_shared_experts=1, route_scale=2.5, mup_enabled=True,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def mimo_v2_flash_config():
    # MiMo-V2-Flash at toy size: per-layer attention shapes, 4 query heads of q/k head_dim 24 and values of
    # v_head_dim 16 everywhere, 1 KV head on the full layers and 2 (twice) with per-head sinks on the sliding ones;
    # 4 layers whose kinds MiMoV2FlashConfig fills in (layer 0 full, 1-2 sliding over sliding_window 8 keys, 3 full:
    # (3 + 1) % 6 != 0 gives sliding, so layer_types is explicit to cover a later full layer), values times
    # attention_value_scale 0.707 (the default); the class's ropes per kind (theta 5e6 full, 1e4 sliding, 0.334 of
    # each head: 8 channels); layer 0 a dense MLP of 96, layers 1-3 DeepSeek-V3's sigmoid router with its random
    # correction bias over 8 experts of 16 in 2 groups (the best 1 kept), top-2, renormalised, times 2.5, no shared
    # expert; q/k/v biases (attention_bias), untied.
    shape = {**DENSE_TOY_SHAPE, "num_key_value_heads": 1}
    return MiMoV2FlashConfig(**shape, num_hidden_layers=4, head_dim=24, v_head_dim=16, sliding_window=8,
                             layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
                             moe_intermediate_size=16, n_routed_experts=8, num_experts_per_tok=2, n_group=2,
                             topk_group=1, routed_scaling_factor=2.5, attention_bias=True, tie_word_embeddings=False)


def laguna_config():
    # Laguna at toy size: per-layer query heads (num_attention_heads_per_layer [4, 2, 6] over 2 KV heads of 16),
    # per-head q/k norms, the output times softplus(g_proj x) per head (gating true, the default), 3 layers [full,
    # sliding, full] over sliding_window 8, the class's ropes per kind (theta 5e5 over half of each full layer's head,
    # 1e4 over all of each sliding one's); layer 0 a dense MLP of 96, layers 1-2 8 experts of 16 chosen by sigmoid
    # scores plus a random correction bias, top-2 renormalised, times moe_routed_scaling_factor 2.5, plus a shared
    # expert of 24; untied.
    return LagunaConfig(**DENSE_TOY_SHAPE, head_dim=16, num_hidden_layers=3, num_attention_heads_per_layer=[4, 2, 6],
                        layer_types=["full_attention", "sliding_attention", "full_attention"], sliding_window=8,
                        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
                        shared_expert_intermediate_size=24, moe_routed_scaling_factor=2.5)


def mellum_config():
    # Mellum at toy size: Qwen3-MoE's attention (per-head q/k norms, GQA 4/2 of 16), 3 layers [sliding, full, sliding]
    # over sliding_window 8, the class's ropes per kind (theta 5e5 full, 1e4 sliding, whole heads); layers 0 and 2 the
    # softmax router over 8 experts of 16, top-2 renormalised (norm_topk_prob, the class's), layer 1 a dense MLP of
    # 96 (mlp_layer_types); untied.
    return MellumConfig(**DENSE_TOY_SHAPE, head_dim=16, num_hidden_layers=3, sliding_window=8,
                        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                        mlp_layer_types=["sparse", "dense", "sparse"], num_experts=8, num_experts_per_tok=2,
                        moe_intermediate_size=16)


def iquestcoder_config():
    # IQuest-Coder-V1 at toy size: LlamaForCausalLM with IQuestCoderConfig (transformers runs it so), q/k/v/o and MLP
    # biases (attention_bias, mlp_bias), GQA 4/2, head_dim 24 (not hidden / heads), 2 layers, theta 5e5, untied.
    return IQuestCoderConfig(**{**DENSE_TOY_SHAPE, "bos_token_id": 1, "eos_token_id": 2}, num_hidden_layers=2,
                             head_dim=24, attention_bias=True, mlp_bias=True,
                             rope_parameters={"rope_type": "default", "rope_theta": 500000.0})


def jais2_config():
    # Jais 2 at toy size: Llama's attention with LayerNorms with bias (randomised as every norm and bias), an ungated
    # MLP down(relu2(up(x))) (Nemotron's), q/k/v/o and MLP biases (attention_bias, mlp_bias: the class's), 2 KV heads
    # of 16 for 4 heads, 2 layers, theta 1e4, untied (the default).
    return Jais2Config(**{**DENSE_TOY_SHAPE, "bos_token_id": 0, "eos_token_id": 1}, num_hidden_layers=2,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def apertus_config():
    # Apertus at toy size: Llama with per-head RMS q/k norms and an ungated MLP down(xielu(up(x))) whose xIELU
    # scalars (alpha_p, alpha_n, beta, eps) differ per layer (randomise), q/k/v/o biases (attention_bias), GQA 4/2,
    # 3 layers, llama3 rope (factor 8 over 64 positions, theta 1e4: both sides of the band), untied.
    return ApertusConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3, attention_bias=True,
                         rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                          "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
                                          "high_freq_factor": 4.0}, tie_word_embeddings=False)


def apertus1p5_config():
    # Apertus 1.5's text model at toy size (Apertus1p5TextForCausalLM): Apertus's layer (per-head q/k norms, xIELU MLP
    # with scalars per layer, llama3 rope as apertus's), GQA 4/2, 2 layers, its head pruned to the first 448 of the
    # 512 ids (output_vocab_size): the prompts' ids above 448 are embedded, never produced; untied.
    return Apertus1p5TextConfig(**DENSE_TOY_SHAPE, num_hidden_layers=2, output_vocab_size=448,
                                rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                                 "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
                                                 "high_freq_factor": 4.0}, tie_word_embeddings=False)


def cwm_config():
    # CWM's layer at toy size: Llama without attention biases, GQA 4/2, head_dim 16, 5 layers whose kinds CwmConfig
    # fills in (layer_types not given: layers 0 and 4 full, 1-3 sliding) over sliding_window 8, llama3 rope (factor 8
    # over 64 positions, theta 1e6: both sides of the band), untied (the defaults); bos_token_id 1 (the class takes no
    # null); eos_token_id becomes the class's three ids, beyond the vocabulary (never produced).
    return CwmConfig(**{**DENSE_TOY_SHAPE, "bos_token_id": 1}, num_hidden_layers=5, head_dim=16, sliding_window=8,
                     rope_parameters={"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 8.0,
                                      "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0})


def persimmon_config():
    # Persimmon-8B's blocks at toy size: LayerNorms with bias, q/k/v fused per head in query_key_value, q/k LayerNorms
    # with bias (qk_layernorm, [16] shared by the heads, randomised as every norm and bias), RoPE on half of each head
    # (partial_rotary_factor left at PersimmonConfig's 0.5) at theta 25000 (the hub's), relu2 MLP (hidden_act left at
    # the class's), 4 heads of 16, 3 layers, untied.
    return PersimmonConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_attention_heads=4,
                           num_hidden_layers=3, max_position_embeddings=512, bos_token_id=None, eos_token_id=None,
                           pad_token_id=None, rope_parameters={"rope_type": "default", "rope_theta": 25000.0},
                           tie_word_embeddings=False)


def xglm_config():
    # XGLM at toy size: BioGPT's pre-norm blocks with biases and gelu, embeddings times sqrt(64) (scale_embedding left
    # at XGLMConfig's), tied as the hub's, and positions from its sinusoid table (not saved: kvcache computes it),
    # offset by 2, whose row pad_token_id is zeros: pad_token_id 5 puts that row at position 3 (the hub's 1 is never
    # read). 3 layers, 4 heads of 16, ffn_dim 96.
    return XGLMConfig(vocab_size=VOCAB, d_model=64, ffn_dim=96, num_layers=3, attention_heads=4,
                      max_position_embeddings=512, bos_token_id=None, eos_token_id=None, pad_token_id=5)


def openai_gpt_config():
    # GPT-1 at toy size: GPT-2's Conv1D layers with biases (q/k/v fused in c_attn) and learned positions (n_positions
    # 64: the prompts and their continuations stay within), post-norm blocks (ln_1 after the attention's residual add,
    # ln_2 after the MLP's) and no final norm, the MLP 4 x n_embd wide, afn gelu (transformers' gelu_new; the
    # default), 3 layers, 4 heads of 16, tied (the default).
    return OpenAIGPTConfig(vocab_size=VOCAB, n_embd=64, n_layer=3, n_head=4, n_positions=64)


def ctrl_config():
    # CTRL at toy size: embeddings times sqrt(64) plus CTRL's sinusoid table (n_positions 64 rows, not saved: kvcache
    # computes it), pre-norm LayerNorms at eps 1e-6 in the layers and the final one at layer_norm_epsilon 1e-4 (set
    # apart from the layers' so that a swap shows), Wq / Wk / Wv / dense and ffn 0 / 2 with biases, relu, dff 96, the
    # tied head with its own bias; 3 layers, 4 heads of 16.
    return CTRLConfig(vocab_size=VOCAB, n_embd=64, dff=96, n_layer=3, n_head=4, n_positions=64,
                      layer_norm_epsilon=1e-4)


def gpt_neox_japanese_config():
    # GPT-NeoX Japanese at toy size: q/k/v fused per head in query_key_value [heads, 3, D] and dense without biases,
    # the last layer's dense_bias alone, RoPE half-split on half of each head (rotary_pct 0.5; GPTNeoXJapaneseConfig's
    # 1.0 would rotate all of it), sequential pre-norm LayerNorms with bias, the MLP 2 x hidden wide
    # (intermediate_multiple_size 2) without biases, gelu (the default), tied (the default); 3 layers, 4 heads of 16.
    return GPTNeoXJapaneseConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                                 intermediate_multiple_size=2, max_position_embeddings=64, rotary_pct=0.5,
                                 bos_token_id=None, eos_token_id=None, pad_token_id=None)


def stablelm_config():
    # StableLM 2 (1.6B's shape) at toy size: LayerNorms with bias (layer_norm_eps 1e-5), RoPE on the first quarter
    # of each head (partial_rotary_factor left at StableLmConfig's 0.25: 4 of 16 channels), q/k/v biases
    # (use_qkv_bias), sequential blocks, GQA 4/2, 3 layers, theta 1e4, untied. head_dim is hidden / heads = 16.
    return StableLmConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3, use_qkv_bias=True,
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def stablelm_parallel_config():
    # StableLM with use_parallel_residual (attention and MLP read input_layernorm's output; no
    # post_attention_layernorm stored), partial_rotary_factor 0.5, no q/k/v biases, 2 layers, tied.
    return StableLmConfig(**DENSE_TOY_SHAPE, num_hidden_layers=2, use_parallel_residual=True,
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                           "partial_rotary_factor": 0.5}, tie_word_embeddings=True)


def stablelm2_qk_config():
    # StableLM 2 12B's attention at toy size: qk_layernorm (a bias-free LayerNorm per query head and per KV head,
    # each its own module: q_layernorm.norms.{h}), parallel blocks, GQA 4/2, rotary 0.25, 2 layers, untied.
    return StableLmConfig(**DENSE_TOY_SHAPE, num_hidden_layers=2, use_parallel_residual=True, qk_layernorm=True,
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def olmo_config():
    # OLMo 1 at toy size: LayerNorms without weight or bias (eps 1e-5, fixed), q/k/v/o biases (attention_bias; the
    # hub's OLMo has none), clip_qkv 2 (OLMo-1B-0724's is 8; at this size q, k and v stay below 3.1, so a bound that
    # clamps some of them: 4.2% of the unclamped projections' entries on the first prompt lie beyond 2), GQA 4/2,
    # 3 layers, theta 1e4, untied.
    return OlmoConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3, attention_bias=True, clip_qkv=2.0,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def ernie4_5_config():
    # ERNIE 4.5 0.3B at toy size: Llama with RoPE on adjacent pairs over the whole head, biases on q/k/v/o and the
    # MLP (use_bias; the hub's 0.3B has none), head_dim 16 (set: the default is 128), GQA 4/2, 3 layers, tied (the
    # default), rope_theta and rms_norm_eps left at Ernie4_5Config's 5e5 and 1e-5.
    return Ernie4_5Config(**DENSE_TOY_SHAPE, num_hidden_layers=3, head_dim=16, use_bias=True)



def deepseek_v2_config():
    # DeepSeek-V2 (236B) at toy size: MLA with a q LoRA (q_lora_rank 48), RoPE on adjacent pairs (its complex form), a
    # YaRN rope whose mscale and mscale_all_dim 0.707 are the hub's (factor 40, so the softmax scale and the
    # cos/sin scaling both matter), layer 0 dense and layers 1-2 MoE: 8 experts in 4 groups, group_limited_greedy
    # keeping 2 groups, 3 experts per token, 2 shared experts, routed_scaling_factor 4 (the hub's is 16), 3 layers.
    return DeepseekV2Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, moe_intermediate_size=16, num_hidden_layers=3,
        first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=48, kv_lora_rank=32,
        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=24, n_routed_experts=8, n_group=4, topk_group=2,
        num_experts_per_tok=3, n_shared_experts=2, routed_scaling_factor=4.0, topk_method="group_limited_greedy",
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                         "original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0,
                         "mscale": 0.707, "mscale_all_dim": 0.707},
        max_position_embeddings=163840, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def deepseek_v2_lite_config():
    # DeepSeek-V2-Lite at toy size: no q LoRA (q_lora_rank null: a plain q_proj), topk_method greedy (the default),
    # routed_scaling_factor 1 and n_shared_experts 2 left at DeepseekV2Config's defaults, attention_bias on (the
    # hub's is off: here the q_a-less bias placement on kv_a_proj_with_mqa and o_proj is exercised), plain RoPE
    # theta 10000, layer 0 dense, layers 1-2 MoE of 8 experts, 2 per token, 3 layers, tied embeddings.
    return DeepseekV2Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=64, moe_intermediate_size=16, num_hidden_layers=3,
        first_k_dense_replace=1, num_attention_heads=4, q_lora_rank=None, kv_lora_rank=32, qk_nope_head_dim=16,
        qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=8, num_experts_per_tok=2, attention_bias=True,
        tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        max_position_embeddings=512, bos_token_id=None, eos_token_id=None, pad_token_id=None)

def olmoe_config():
    # OLMoE at toy size: OLMo 2's q/k norms over the whole q [64] / k [32] projection in pre-norm blocks, clip_qkv
    # 1.5 (OLMoE-1B-7B's is null: a bound that clamps some normalised q/k entries and some v entries), q/k/v/o
    # biases (attention_bias), GQA 4/2, 2 layers each routing 8 experts of width 24, top-2, norm_topk_prob left
    # at OlmoeConfig's false, untied, rms_norm_eps 1e-5 and theta 1e4 left at the class defaults.
    return OlmoeConfig(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=2, num_experts=8,
                       num_experts_per_tok=2, attention_bias=True, clip_qkv=1.5, tie_word_embeddings=False)


def flex_olmo_config():
    # FlexOlmo at toy size: OLMo 2's layer (no input norm, post-attention and post-feedforward norms, q/k norms over
    # the whole q [64] / k [32] projection, no clipping) with OLMoE's router on every layer: 7 experts of width 24
    # (FlexOlmoConfig's count), top-2, norm_topk_prob left at false, q/k/v/o biases (attention_bias), GQA 4/2, 3
    # layers, untied, rms_norm_eps 1e-6 and theta 5e5 left at FlexOlmoConfig's defaults.
    return FlexOlmoConfig(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=3, num_experts=7,
                          num_experts_per_tok=2, attention_bias=True, tie_word_embeddings=False)


def hunyuan_v1_dense_config():
    # Hunyuan-7B's layer at toy size: Llama's with per-head q/k RMSNorms (query_layernorm, key_layernorm) applied
    # after RoPE, the hub's "dynamic" rope with an alpha (transformers' ntk_alpha: theta 1e4 x 1000^(16/14)),
    # GQA 4/2, head_dim 16, 3 layers, untied, no biases.
    return HunYuanDenseV1Config(**DENSE_TOY_SHAPE, num_hidden_layers=3, head_dim=16, tie_word_embeddings=False,
                                rope_parameters={"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0,
                                                 "rope_theta": 10000.0})


def hunyuan_v1_moe_config():
    # Hunyuan-A13B's layer at toy size: HunYuan dense's attention (per-head q/k norms after RoPE, the "dynamic" rope with
    # alpha 1000), GQA 4/2, head_dim 16, 3 layers, each a softmax router (mlp.gate.wg) over 8 SwiGLU experts of width 24
    # (intermediate_size), top-2 renormalised, plus the ungated shared_mlp of 24; untied, no biases.
    return HunYuanMoEV1Config(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=3, head_dim=16,
                              num_experts=8, moe_topk=2, tie_word_embeddings=False,
                              rope_parameters={"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0,
                                               "rope_theta": 10000.0})


def minimax_m2_config():
    # MiniMax-M2 at toy size: OLMo 2's q/k norms over the whole q [64] / k [32] projection before RoPE in pre-norm
    # blocks, RoPE half-split on the first rotary_dim 8 of head_dim 16 (the checkpoints' key), GQA 4/2, 3 layers, each
    # Mixtral's block_sparse_moe of 8 experts of width 24 chosen by sigmoid scores plus a random correction bias, top-2
    # renormalised; theta 5e6 and rms_norm_eps 1e-6 left at the class's, untied, no biases.
    return MiniMaxM2Config(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=3, head_dim=16,
                           rotary_dim=8, num_local_experts=8, num_experts_per_tok=2, tie_word_embeddings=False)


def exaone_config():
    # EXAONE-3.5's blocks at toy size: LlamaForCausalLM under EXAONE's hub names (transformer.h.N.attn.attention.*,
    # ln_1 / ln_2, mlp.c_fc_0 gate / c_fc_1 up / c_proj down), the hub's key spellings (num_layers,
    # layer_norm_epsilon 1e-5, activation_function silu), GQA 4/2, theta 5e5 left at ExaoneConfig's, untied.
    return ExaoneConfig(**{k: v for k, v in DENSE_TOY_SHAPE.items()}, num_layers=3, layer_norm_epsilon=1e-5,
                        activation_function="silu", tie_word_embeddings=False)


def internlm3_config():
    # InternLM3-8B's blocks at toy size: LlamaForCausalLM with InternLM3Config, qkv_bias and bias (its names for
    # attention_bias and mlp_bias) both true, head_dim 16, GQA 4/2, 3 layers, untied, eps 1e-5 and theta 1e4 left at
    # the class's.
    return InternLM3Config(**DENSE_TOY_SHAPE, num_hidden_layers=3, head_dim=16, qkv_bias=True, bias=True,
                           tie_word_embeddings=False)


def jetmoe_config():
    # JetMoE at toy size: 3 layers, 2 KV heads of kv_channels 24 (so 4 query heads: 2 per token from its 2 of 4
    # attention experts), MoE MLP of 4 experts of width 40, top-2, both blocks with their biases, rms_norm_eps 1e-5
    # (the final norm's; the layer norms keep 1e-6), tied as JetMoeConfig's default.
    return JetMoeConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=40, num_hidden_layers=3,
                        num_key_value_heads=2, kv_channels=24, num_local_experts=4, num_experts_per_tok=2,
                        rms_norm_eps=1e-5, max_position_embeddings=512, bos_token_id=None, eos_token_id=None,
                        pad_token_id=None)


def granitemoe_config():
    # Granite 3.0 MoE at toy size: Granite's multipliers (embedding 6, residual 0.22, attention 0.1, logits scaling 3,
    # as the granite oracle), q/k/v/o biases (attention_bias; the hub's have none), GQA 4/2, tied as the hub's, 2
    # layers each routing 8 experts of width 24 (intermediate_size), top-2: softmax over the two largest logits.
    return GraniteMoeConfig(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=2, num_local_experts=8,
                            num_experts_per_tok=2, embedding_multiplier=6.0, residual_multiplier=0.22,
                            attention_multiplier=0.1, logits_scaling=3.0, attention_bias=True,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True)


def granitemoeshared_config():
    # Granite MoE Shared at toy size: granitemoe's blocks with other multipliers (embedding 4, residual 0.3,
    # attention 0.2, logits scaling 2.5), no biases, untied, 2 layers of 6 experts of width 24, top-3, and a shared
    # MLP of width 32 (shared_intermediate_size) added to the experts' sum.
    return GraniteMoeSharedConfig(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=2,
                                  num_local_experts=6, num_experts_per_tok=3, shared_intermediate_size=32,
                                  embedding_multiplier=4.0, residual_multiplier=0.3, attention_multiplier=0.2,
                                  logits_scaling=2.5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                                  tie_word_embeddings=False)


def granite_swa_config():
    # Granite SWA at toy size: Granite's multipliers (embedding 6, residual 0.22, attention 0.1, logits scaling 3),
    # per-head sinks (N(0, 1)), 4 layers whose kinds GraniteSWAConfig fills in (layer 0 full, 1-3 sliding over window
    # 8), layer_rope_theta 10000 on the full layer, none on layer 1 (NoPE) and 500 on layers 2-3 (a base of their own),
    # GQA 4/2, tied (the class's default).
    return GraniteSWAConfig(**DENSE_TOY_SHAPE, num_hidden_layers=4, sliding_window=8, embedding_multiplier=6.0,
                            residual_multiplier=0.22, attention_multiplier=0.1, logits_scaling=3.0,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                            layer_rope_theta=[10000.0, 0, 500.0, 500.0])


def granitemoe_swa_config():
    # Granite MoE SWA at toy size: granitemoeshared's blocks (4 experts of width 24, top-2, a shared MLP of width 32)
    # with sinks, 3 layers (0 full, 1-2 sliding over window 8), the full layer unrotated and the sliding ones at
    # theta 20000 (not rope_parameters' 10000), other multipliers, q/k/v/o biases, untied (the class's default).
    return GraniteMoeSWAConfig(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=3,
                               num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=32,
                               sliding_window=8, embedding_multiplier=4.0, residual_multiplier=0.3,
                               attention_multiplier=0.2, logits_scaling=2.5, attention_bias=True,
                               rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                               layer_rope_theta=[0, 20000.0, 20000.0])


def flint_config():
    # Flint at toy size: Qwen3-MoE's attention (q/k norms, head_dim 16, GQA 4/2) with sinks, 4 layers whose kinds
    # FlintConfig fills in (0, 1 and the last full and unrotated, 2 sliding over window 8 and rotated), the dense MLP
    # on mlp_only_layers' default [0, 1], then 6 experts of width 16, top-3 by sigmoid, renormalised, plus an ungated
    # shared expert of width 24; untied (the class's default).
    return FlintConfig(**DENSE_TOY_SHAPE, num_hidden_layers=4, head_dim=16, sliding_window=8, num_experts=6,
                       num_experts_per_tok=3, moe_intermediate_size=16, shared_expert_intermediate_size=24,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def hy_v3_config():
    # Hy3 at toy size: Apertus's attention (per-head q/k norms, head_dim 16, GQA 4/2) in Llama's blocks, 3 layers by
    # mlp_layer_types' default (layer 0 the dense MLP, 1-2 sparse), 6 experts of width 16, top 3 by the sigmoid
    # router with its random e_score_correction_bias (choosing only), renormalised, times router_scaling_factor 2.826
    # (the default), plus one shared expert of width 16; theta 11158840 (the class's), untied.
    return HYV3Config(**DENSE_TOY_SHAPE, num_hidden_layers=3, head_dim=16, num_experts=6, num_experts_per_tok=3,
                      moe_intermediate_size=16)


def cohere2_moe_config():
    # Command A MoE-like at toy size: Cohere 2's parallel blocks with LayerNorms (rms_norm_eps absent), RoPE on pairs,
    # q/k/v/o biases, head_dim 16, GQA 4/2; first_k_dense_replace 1 (a config.json key the class pops): layer 0 dense
    # (prefix_dense_intermediate_size 48), full and rotated (prefix_dense_sliding_window_pattern 1 forces RoPE), then
    # sliding_window_pattern 2 over layers 1-3 (sliding, full unrotated, sliding; window 8); 6 experts of width 32
    # (intermediate_size), top-2 by the softmax of the two largest logits, one shared expert of 32 averaged with them
    # (the defaults); logit_scale 0.5, tied.
    return Cohere2MoeConfig(**{**DENSE_TOY_SHAPE, "intermediate_size": 32}, num_hidden_layers=4, head_dim=16,
                            sliding_window=8, sliding_window_pattern=2, first_k_dense_replace=1,
                            prefix_dense_intermediate_size=48, num_experts=6, num_experts_per_tok=2,
                            num_shared_experts=1, attention_bias=True, logit_scale=0.5,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def cohere2_moe_sigmoid_config():
    # The other Cohere 2 MoE choices: RMSNorms (rms_norm_eps set), experts by sigmoid scores renormalised
    # (expert_selection_fn sigmoid, norm_topk_prob), two shared experts summed with them, no dense layer, layer_types
    # by sliding_window_pattern 4 (three sliding, one full), untied, no biases.
    return Cohere2MoeConfig(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=4, head_dim=16,
                            sliding_window=8, num_experts=5, num_experts_per_tok=3, num_shared_experts=2,
                            shared_expert_combination_strategy="sum", expert_selection_fn="sigmoid",
                            norm_topk_prob=True, rms_norm_eps=1e-6, logit_scale=0.5, tie_word_embeddings=False,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def glm4_moe_config():
    # GLM-4.5 at toy size: head_dim 24 (not hidden / heads, as GLM-4.5's 128), RoPE half-split over its first 12
    # channels (partial_rotary_factor left at Glm4MoeConfig's 0.5), q/k/v biases (attention_bias, GLM-4.5's), per-head
    # q/k norms (use_qk_norm, GLM-4.5's), GQA 4/2, 3 layers: layer 0 a dense MLP of 96 (first_k_dense_replace 1), layers
    # 1-2 DeepSeek-V3's grouped sigmoid router over 8 experts of width 16 in 2 groups (the best 1 kept), top-2,
    # renormalised, times 2.5 (GLM-4.5's routed_scaling_factor), plus one shared expert; the routers'
    # e_score_correction_bias random (randomise_buffers), no MTP layer, untied.
    return Glm4MoeConfig(**DENSE_TOY_SHAPE, head_dim=24, num_hidden_layers=3, first_k_dense_replace=1,
                         moe_intermediate_size=16, n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1,
                         n_shared_experts=1, routed_scaling_factor=2.5, norm_topk_prob=True, use_qk_norm=True,
                         attention_bias=True, num_mtp_layers=0, tie_word_embeddings=False,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})

def sarvam_moe_config():
    # Sarvam-MoE at toy size, which transformers runs as Glm4MoeForCausalLM and saves under the original names
    # (model.word_embeddings, attention.query_key_value [q | k | v], attention.dense, query_layernorm / key_layernorm,
    # mlp.gate.expert_bias): whole heads rotated (SarvamMoEConfig's partial_rotary_factor 1), its per-head q/k norms
    # (use_qk_norm, the class default), q/k/v biases (use_qkv_bias, the original key), GQA 4/2 of 16, 3 layers: layer 0
    # dense, layers 1-2 the grouped sigmoid router over 8 experts of 16 (num_experts, the original key) in 2 groups,
    # top-2, times 2.5 (the class default), one shared expert (num_shared_experts); rms_norm_eps 1e-6, untied.
    return SarvamMoEConfig(**DENSE_TOY_SHAPE, head_dim=16, num_hidden_layers=3, first_k_dense_replace=1,
                           moe_intermediate_size=16, num_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1,
                           num_shared_experts=1, use_qkv_bias=True, tie_word_embeddings=False,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def param2moe_config():
    # Param2-MoE at toy size (Glm4MoeForCausalLM under Sarvam-MoE's original names): whole heads rotated, per-head q/k
    # norms, no biases, GQA 4/2 of 16, 3 layers: layers 0-1 dense (first_k_dense_replace 2), layer 2 the sigmoid router
    # over 8 experts of 16 in 1 group, top-3, not renormalised, times 2.5, two shared experts (the class default: one
    # MLP of 32); tied embeddings (the class default).
    return Param2MoeConfig(**DENSE_TOY_SHAPE, head_dim=16, num_hidden_layers=3, first_k_dense_replace=2,
                           moe_intermediate_size=16, n_routed_experts=8, num_experts_per_tok=3, norm_topk_prob=False,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def minicpm5_moe_config():
    # MiniCPM5-MoE at toy size: q_gate_proj holds each head's query then its gate (the output times sigmoid(gate)
    # before o_proj), biases on q/k/v/o (attention_bias), whole heads of 24 rotated half-split, GQA 4/2, 3 layers whose
    # feed-forward mlp_layer_types names: layers 0 and 2 sparse, layer 1 the dense MLP of 96; DeepSeek-V3's grouped
    # sigmoid router over 8 experts of 16 in 2 groups (the best 1 kept), top-2, renormalised, times 3.66 (the class
    # default), one shared expert; rms_norm_eps 1e-6, untied (the defaults).
    return MiniCPM5MoeConfig(**DENSE_TOY_SHAPE, head_dim=24, num_hidden_layers=3,
                             mlp_layer_types=["sparse", "dense", "sparse"], moe_intermediate_size=16,
                             n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, attention_bias=True,
                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def kolibri1_config():
    # Kolibri 1 at toy size: EXAONE 4.0's attention (per-head q/k norms, no biases) in GLM-4's sandwich blocks (saved as
    # post_attn_norm / post_ffn_norm), layers sliding, full, sliding over a window of 8 (the full one unrotated: global
    # NoPE), GQA 4/2 of 16; on every layer 8 experts of 16, top-2 by logit + correction bias (saved as
    # moe.router.expert_bias, random), weighted by their logits' sigmoids, not renormalised (the class default), plus a
    # shared MLP of 24; rms_norm_eps 1e-6, untied (the defaults).
    return Kolibri1Config(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=16, max_position_embeddings=512, sliding_window=8,
                          layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                          moe_intermediate_size=16, num_experts=8, num_experts_per_tok=2,
                          shared_expert_intermediate_size=24, bos_token_id=None, eos_token_id=None, pad_token_id=None,
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def glm4_moe_lite_config():
    # GLM-4.7-Flash at toy size: DeepSeek-V3's MLA (q_lora_rank 32 with its norm, kv_lora_rank 24, 4 heads of nope 16 +
    # rope 8 keys and 12 values, RoPE on interleaved pairs: rope_interleave, the class default) over 3 layers whose
    # feed-forward mlp_layer_types names: layers 0 and 2 sparse, layer 1 the dense MLP of 96 (not a dense prefix: what
    # first_k_dense_replace cannot say); GLM-4.5's grouped sigmoid router over 8 experts of 16 in 2 groups (the best 1
    # kept), top-2, renormalised, times 1.8 (the class default), one shared expert; the routers'
    # e_score_correction_bias random; rms_norm_eps 1e-5 and untied by default.
    return Glm4MoeLiteConfig(**MLA_MOE_TOY_SHAPE)


def sarvam_mla_config():
    # Sarvam-105B at toy size (SarvamMLAConfig, run by DeepseekV3ForCausalLM): its class defaults where they differ
    # from DeepSeek-V3's (q_lora_rank None: a plain q_proj; one routing group; layer 0 dense, first_k_dense_replace
    # 1), MLA latent 24, 4 heads of nope 16 + rope 8 keys and 12 values, interleaved RoPE (the default) with YaRN
    # (factor 4: the mscale softmax scale), 3 layers, 8 experts of 16, top-2, one shared expert; untied.
    return SarvamMLAConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                           num_attention_heads=4, kv_lora_rank=24, qk_nope_head_dim=16, qk_rope_head_dim=8,
                           v_head_dim=12, moe_intermediate_size=16, n_routed_experts=8, num_experts_per_tok=2,
                           n_shared_experts=1, max_position_embeddings=128,
                           rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                            "original_max_position_embeddings": 32, "mscale": 1.0,
                                            "mscale_all_dim": 1.0},
                           bos_token_id=None, eos_token_id=None, pad_token_id=None)


# The MLA + grouped-router toy shape of glm4_moe_lite, axk1 and glm_moe_dsa.
MLA_MOE_TOY_SHAPE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=24,
                         qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=12, moe_intermediate_size=16,
                         n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=1,
                         mlp_layer_types=["sparse", "dense", "sparse"], max_position_embeddings=128,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)


def axk1_config():
    # A.X-K1 at toy size: DeepSeek-V3's MLA (q LoRA 32, latent 24, 4 heads of nope 16 + rope 8 keys and 12 values,
    # interleaved RoPE: the default) over 3 layers whose feed-forward mlp_layer_types names (sparse, dense, sparse);
    # V3's grouped sigmoid router over 8 experts of 16 in 2 groups (the best 1 kept), top-2, renormalised, times 2.5,
    # one shared expert, and A.X-K1's post_mlp_layernorm on the MoE output; the routers' e_score_correction_bias
    # random; untied.
    return AXK1Config(**MLA_MOE_TOY_SHAPE)


def longcat_flash_config():
    # LongCat-Flash at toy size: 2 decoder layers of two MLA sub-layers each (q LoRA 32, latent 24, 4 heads of nope 16
    # + rope 8 keys and 12 values, RoPE on interleaved pairs, q and latent times sqrt(hidden / rank)), each sub-layer's
    # MLP of 48, and per decoder layer the shortcut MoE: softmax router over 6 experts of 16 plus 2 zero experts, top-3
    # by the scores plus a random e_score_correction_bias, times routed_scaling_factor 2 (the defaults are 512 + 256,
    # top-12, times 6); untied, rms_norm_eps 1e-5 (the default).
    return LongcatFlashConfig(vocab_size=VOCAB, hidden_size=64, num_layers=2, num_attention_heads=4,
                              ffn_hidden_size=48, q_lora_rank=32, kv_lora_rank=24, qk_nope_head_dim=16,
                              qk_rope_head_dim=8, head_dim=8, v_head_dim=12, moe_topk=3, n_routed_experts=6, zero_expert_num=2,
                              expert_ffn_hidden_size=16, routed_scaling_factor=2.0, max_position_embeddings=128,
                              rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                              bos_token_id=None, eos_token_id=None, pad_token_id=None)


def glm_moe_dsa_config():
    # GLM-5 at toy size: DeepSeek-V3's MLA (q LoRA 32, latent 24, 4 heads of nope 16 + rope 8 keys and 12 values,
    # RoPE on interleaved pairs: GLM-5's attention always) over 3 layers whose feed-forward mlp_layer_types names
    # (sparse, dense, sparse); V3's grouped sigmoid router over 8 experts of 16 in 2 groups (the best 1 kept), top-2,
    # renormalised, times 2.5, one shared expert; DeepSeek sparse attention with index_topk 6 (below most positions of
    # the prompts and their new tokens: the indexer's choice shapes the attention), an indexer of 8 heads of 16 on
    # layers 0 and 2 (layer 1 shared: reuses layer 0's choice); untied, rms_norm_eps 1e-5 (the defaults). 8 heads: no
    # exact ties at the 6th score in the data (4 heads have keys scoring 0 in every head, where torch.topk's pick
    # among equal scores is unspecified).
    return GlmMoeDsaConfig(**MLA_MOE_TOY_SHAPE, index_topk=6, index_head_dim=16, index_n_heads=8,
                           indexer_types=["full", "shared", "full"])


def deepseek_v32_config():
    # DeepSeek-V3.2 at toy size: V3's MLA (q LoRA 32, latent 24, 4 heads of nope 16 + rope 8 keys and 12 values, RoPE
    # on interleaved pairs) and grouped sigmoid router over 3 layers (sparse, dense, sparse), with DeepSeek sparse
    # attention on every layer: index_topk 6 (below most positions of the data), an indexer of 8 heads of 16 whose
    # RoPE turns half-split lanes (unlike the attention's pairs); untied.
    shape = {k: v for k, v in MLA_MOE_TOY_SHAPE.items()}
    return DeepseekV32Config(**shape, index_topk=6, index_head_dim=16, index_n_heads=8)


def axk2_config():
    # A.X-K2 at toy size: DeepSeek-V3.2's MLA layers (q LoRA 32, latent 24, 4 heads of nope 16 + rope 8 keys and 12
    # values, RoPE on interleaved pairs, its indexer on every layer: index_topk 6, 8 heads of 16, half-split RoPE)
    # whose q_gate_proj maps [normalised | raw] q latent to each head's query and the sigmoid gate of its output;
    # gated norms of rank 4 (the default is 16) on every input norm and on the MoE layers' MLP-input norm; layers
    # (sparse, dense, sparse); the sigmoid router over all 8 experts of 16 (n_group None: AXK2Config's default), top-2,
    # renormalised, times 2.5, one shared expert, random e_score_correction_bias; untied.
    shape = dict(MLA_MOE_TOY_SHAPE, n_group=None, topk_group=None)
    return AXK2Config(**shape, index_topk=6, index_head_dim=16, index_n_heads=8, gated_norm_rank=4)


def hy_v4_config():
    # HY V4 at toy size: GLM-5's MLA (q LoRA 32, latent 24, 4 heads of nope 16 + rope 8 keys and 12 values, RoPE on
    # interleaved pairs) with learned sinks per head and the output times sigmoid(gate_proj x) per head and channel;
    # DeepSeek sparse attention with index_topk 6 (below most positions of the prompts), an indexer of 8 heads of 16
    # rotating its LAST 8 channels, on layers 0 and 1 (layer 2 "shared": reuses layer 1's choice; HYV4Config's
    # default list); 3 layers (dense, sparse, sparse: the default mlp_layer_types): the sigmoid router with its random
    # correction bias over all 8 experts of 16 (n_group 1), top-2, renormalised, times 2.827, routed experts clamped
    # at swiglu_limit 0.8 (10 by default; small here so that the clamps act on this data), one shared expert; 2
    # hyper-connection streams (hc_mult; 4 by default) with hc_magnitude 1.7 (2 by default), hc_eps 1e-6; untied,
    # rms_norm_eps 1e-5 (the defaults). 8 indexer heads: no exact ties at the 6th score (hy_v4_index_tie_gap).
    return HYV4Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=4, q_lora_rank=32, kv_lora_rank=24, qk_nope_head_dim=16, qk_rope_head_dim=8,
                      v_head_dim=12, moe_intermediate_size=16, n_routed_experts=8, num_experts_per_tok=2,
                      index_topk=6, index_head_dim=16, index_n_heads=8, hc_mult=2, hc_magnitude=1.7, swiglu_limit=0.8,
                      max_position_embeddings=128, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)


def solar_open_config():
    # Solar Open at toy size: Llama's attention with q/k/v biases (attention_bias) and none on o_proj, whole heads
    # rotated, GQA 4/2, head_dim 16, 2 layers, each GLM-4.5's grouped sigmoid router over 8 experts of width 16 in 2
    # groups (the best 1 kept), top-2, renormalised, times 2.5, plus one shared expert; the routers'
    # e_score_correction_bias random; untied (the default).
    return SolarOpenConfig(**DENSE_TOY_SHAPE, head_dim=16, num_hidden_layers=2, moe_intermediate_size=16,
                           n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=1,
                           routed_scaling_factor=2.5, attention_bias=True,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def dots1_config():
    # dots.llm1 at toy size: Qwen3's attention (per-head q/k norms before RoPE, q/k/v/o biases by attention_bias), GQA
    # 4/2, head_dim 16, 3 layers: layer 0 a dense MLP of 96 (first_k_dense_replace 1), layers 1-2 DeepSeek-V3's
    # grouped sigmoid router over 8 experts of width 16 in 2 groups (the best 1 kept), top-2, not renormalised (the
    # class's norm_topk_prob false), times 2.5, plus one shared expert; the routers' e_score_correction_bias random;
    # sliding_window 8 from max_window_layers 2 on (layer 2 slides), untied.
    return Dots1Config(**DENSE_TOY_SHAPE, num_hidden_layers=3, first_k_dense_replace=1, moe_intermediate_size=16,
                       n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=1,
                       routed_scaling_factor=2.5, attention_bias=True, sliding_window=8, max_window_layers=2,
                       tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def ernie4_5_moe_config():
    # ERNIE-4.5-21B-A3B at toy size: ERNIE 4.5's pairwise RoPE over the whole head (head_dim hidden / heads: 16), GQA
    # 4/2, 4 layers: layers 1-2 MoE (moe_layer_start_index 1, moe_layer_end_index 2, interval 1), layers 0 and 3 the
    # dense MLP of 96; 8 experts of width 16, top 3 (moe_k), the softmax router choosing by probability plus a random
    # correction bias (moe_statics, N(0, 0.2^2): top-3 margin 1.6e-4; N(0, 0.1^2) gave 1.2e-6 without biases),
    # weights over max(sum, moe_norm_min), one shared expert; biases (use_bias; the hub's have none) on q/k/v/o, the
    # dense MLPs, the shared experts and the head, tied (the default).
    return Ernie4_5_MoeConfig(**DENSE_TOY_SHAPE, num_hidden_layers=4, moe_intermediate_size=16, moe_num_experts=8,
                              moe_k=3, moe_num_shared_experts=1, moe_layer_start_index=1, moe_layer_end_index=2,
                              moe_layer_interval=1, use_bias=True)


def phimoe_config():
    # Phi-3.5-MoE at toy size: LayerNorms with bias, q/k/v/o biases (attention_bias, the hub's), the head's bias
    # (lm_head_bias; the hub's has none), GQA 4/2, 3 layers each routing 8 experts of width 24 by SparseMixer (two
    # experts; router_jitter_noise 0.3, the hub's 0.01, so that the second expert and the softmax masks see several
    # logits), untied, Phi-3.5-MoE's longrope: 8 short and 8 long factors, original_max_position_embeddings 16 (the
    # longer prompts pass it: transformers still takes the short factors, its forward recomputing them without the
    # length) and short_mscale = long_mscale = 1.25 (the hub's are equal, 1.243) scaling cos/sin.
    return PhimoeConfig(**{**DENSE_TOY_SHAPE, "intermediate_size": 24}, num_hidden_layers=3, num_local_experts=8,
                        router_jitter_noise=0.3, attention_bias=True, lm_head_bias=True, tie_word_embeddings=False,
                        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                         "short_factor": phi3_longrope_factors(8, 3),
                                         "long_factor": phi3_longrope_factors(8, 4),
                                         "original_max_position_embeddings": 16, "short_mscale": 1.25,
                                         "long_mscale": 1.25})


def dbrx_config():
    # DBRX at toy size: d_model 64, 4 heads of 16, attn_config.kv_n_heads 2 (the hub's 8 of 48), q/k/v fused in Wqkv and
    # clamped to +-1.5 (clip_qkv; the hub's 8: at this size a bound that clamps some entries), LayerNorms without bias,
    # no biases, untied (DBRX cannot tie), rope theta 1e4 (rope_parameters; transformers 5.25 ignores
    # attn_config.rope_theta), 3 layers each routing 8 experts of ffn_hidden_size 24 stored flat (w1 / v1 / w2
    # [8 * 24, 64]), top 2 (moe_top_k; the hub's 4 of 16), the weights over their sum (moe_normalize_expert_weights 1).
    return DbrxConfig(d_model=64, n_heads=4, n_layers=3, max_seq_len=512, vocab_size=VOCAB,
                      attn_config={"kv_n_heads": 2, "clip_qkv": 1.5, "rope_theta": 10000.0},
                      ffn_config={"ffn_hidden_size": 24, "moe_num_experts": 8, "moe_top_k": 2},
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def llama4_config():
    # Llama 4's text model at toy size: 4 layers, layer 2 NoPE (full attention, no rope, temperature-tuned queries:
    # floor_scale 8, attn_scale 0.5, so every position from 7 on is scaled) and the others chunked local attention
    # of 8 positions with RoPE on adjacent pairs, llama3 rope scaling (original 16 positions: the toy's frequencies
    # bend) and the L2 q/k norms; MoE on layers 1 and 3 (interleave_moe_layer_step 2: 4 experts of 32, top 1,
    # plus the shared expert), the dense MLP of intermediate_size_mlp 96 on layers 0 and 2; GQA 4/2, head_dim 16,
    # untied.
    shape = {**DENSE_TOY_SHAPE, "intermediate_size": 32}
    return Llama4TextConfig(**shape, num_hidden_layers=4, head_dim=16, intermediate_size_mlp=96,
                            num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2,
                            no_rope_layers=[1, 1, 0, 1], attention_chunk_size=8, use_qk_norm=True,
                            attn_temperature_tuning=True, floor_scale=8, attn_scale=0.5, tie_word_embeddings=False,
                            rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                             "original_max_position_embeddings": 16})

def phi_config():
    # Phi-2 at toy size: one LayerNorm with bias feeding attention and MLP side by side, q/k/v/dense biases, RoPE
    # on the first half of each head (partial_rotary_factor left at PhiConfig's 0.5: 8 of 16 channels),
    # fc2(gelu_new(fc1(x))) with biases, final LayerNorm with bias, lm_head with a bias, GQA 4/2, 3 layers,
    # untied (PhiConfig's default).
    return PhiConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3, hidden_act="gelu_new",
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def phi_qk_config():
    # Phi with qk_layernorm (no released Phi sets it; PhiConfig reads it): phi's blocks at a smaller size, a LayerNorm
    # with bias over each q and k head before RoPE, one weight and bias [16] shared by the heads (randomised as every
    # norm and bias), GQA 4/2, 2 layers, partial_rotary_factor 0.5, untied.
    return PhiConfig(**DENSE_TOY_SHAPE, num_hidden_layers=2, hidden_act="gelu_new", qk_layernorm=True,
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False)


def gpt_neox_config():
    # Pythia at toy size: parallel residual (use_parallel_residual, GPTNeoXConfig's default: x + attn(ln1(x)) +
    # mlp(ln2(x))), LayerNorms with bias, q/k/v fused per head in query_key_value [heads, 3, D], their and
    # dense's biases (attention_bias, the default), RoPE on the first quarter of each head (rotary_pct left at
    # 0.25: 4 of 16 channels), exact GELU (hidden_act "gelu", the default), 3 layers, untied (embed_out).
    return GPTNeoXConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_attention_heads=4,
                         num_hidden_layers=3, max_position_embeddings=512, bos_token_id=None, eos_token_id=None,
                         pad_token_id=None, tie_word_embeddings=False)


def gpt_neox_seq_config():
    # GPT-NeoX with the sequential block (use_parallel_residual false), no attention biases, RoPE on half of each
    # head at theta 5e4, gelu_fast (GPT-NeoX-20B's: the tanh form), 2 layers, tied.
    return GPTNeoXConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_attention_heads=4,
                         num_hidden_layers=2, max_position_embeddings=512, bos_token_id=None, eos_token_id=None,
                         pad_token_id=None, use_parallel_residual=False, attention_bias=False, hidden_act="gelu_fast",
                         rope_parameters={"rope_type": "default", "rope_theta": 50000.0,
                                          "partial_rotary_factor": 0.5}, tie_word_embeddings=True)


def gpt2_config():
    # GPT-2 at toy size: learned positions (wpe, n_positions 64: the prompts and their continuations stay within),
    # no RoPE, Conv1D layers [in, out] with biases, q/k/v fused in c_attn, LayerNorms with bias, gelu_new (the
    # default), n_inner 128 (null would be 4 x n_embd), 3 layers, 4 heads of 16, tied (the default).
    return GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=3, n_head=4, n_inner=128, n_positions=64, bos_token_id=None,
                      eos_token_id=None, pad_token_id=None)


def gpt2_layer_scale_config():
    # GPT-2 as stanford-crfm's checkpoints set it: scale_attn_by_inverse_layer_idx (layer l's softmax scale divided by
    # l + 1) and reorder_and_upcast_attn (scores in float32); 3 layers, 2 heads of 16, n_inner null (4 x n_embd).
    return GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=3, n_head=2, n_inner=None, n_positions=64,
                      scale_attn_by_inverse_layer_idx=True, reorder_and_upcast_attn=True, bos_token_id=None,
                      eos_token_id=None, pad_token_id=None)


def gpt2_unscaled_config():
    # GPT-2 with scale_attn_weights false: the softmax of q.k unscaled (GPT2Attention's scaling 1), 3 layers, 2 heads
    # of 16, n_inner null (4 x n_embd).
    return GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=3, n_head=2, n_inner=None, n_positions=64,
                      scale_attn_weights=False, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def gpt_bigcode_config():
    # StarCoder 1 / SantaCoder at toy size: GPT-2's learned positions (n_positions 64) and no RoPE, nn.Linear layers
    # with biases, multi_query (the default: one KV head, c_attn [q 64 | k 16 | v 16] rows), LayerNorms with bias,
    # gelu_pytorch_tanh (the default), n_inner 128, 3 layers, 4 heads of 16, tied (the default).
    return GPTBigCodeConfig(vocab_size=VOCAB, n_embd=64, n_layer=3, n_head=4, n_inner=128, n_positions=64,
                            bos_token_id=None, eos_token_id=None, pad_token_id=None)


def gpt_bigcode_mha_config():
    # GPT-BigCode without multi_query: as many KV heads as heads, c_attn per head [4, 3, 16]; gelu (erf), n_inner
    # null (4 x n_embd), 2 layers, untied (lm_head its own).
    return GPTBigCodeConfig(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_inner=None, n_positions=64,
                            multi_query=False, activation_function="gelu", tie_word_embeddings=False,
                            bos_token_id=None, eos_token_id=None, pad_token_id=None)


def falcon_config():
    # Falcon-7B at toy size: multi_query (one KV head; query_key_value [q 64 | k 16 | v 16] rows), parallel_attn on one
    # LayerNorm, no biases (bias false, the default), RoPE half-split on the whole head at theta 1e4, gelu (erf, the
    # default), ffn_hidden_size null (4 x 64), 3 layers, 4 heads of 16, tied (the default).
    return FalconConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                        max_position_embeddings=64, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def falcon_new_config():
    # Falcon-40B / 180B at toy size: new_decoder_architecture with num_kv_heads 2 of 4 heads of 16 (query_key_value
    # grouped [2, 2 + 2, 16]), ln_attn and ln_mlp (num_ln_in_parallel_attn 2, its default there), biases (bias true),
    # rope_theta 5e4, gelu_new, ffn_hidden_size 80, 2 layers, untied.
    return FalconConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=2,
                        new_decoder_architecture=True, bias=True, activation="gelu_new", ffn_hidden_size=80,
                        rope_parameters={"rope_type": "default", "rope_theta": 50000.0}, tie_word_embeddings=False,
                        max_position_embeddings=64, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def falcon_alibi_config():
    # Falcon-RW at toy size: alibi (no RoPE; BLOOM's slopes over 12 heads, 8 powers of 2^-1 and 4 odd powers of
    # 2^-0.5 (rounded to bf16: FalconModel's slopes.bfloat16()), the bias added before the 1/sqrt(head_dim) scale),
    # multi_query false (query_key_value per head [12, 3, 4]), the sequential block (parallel_attn false), biases,
    # gelu (erf, the default), ffn_hidden_size null (4 x 48), 2 layers, 12 heads of 4, tied (the default).
    return FalconConfig(vocab_size=VOCAB, hidden_size=48, num_hidden_layers=2, num_attention_heads=12, alibi=True,
                        multi_query=False, parallel_attn=False, bias=True, max_position_embeddings=64,
                        bos_token_id=None, eos_token_id=None, pad_token_id=None)


def bloom_config():
    # BLOOM at toy size: the embeddings normalised (word_embeddings_layernorm), LayerNorms with bias, q/k/v fused per
    # head in query_key_value [6, 3, 8] with biases, ALiBi over 6 heads (not a power of two: 4 slopes of 2^-2 and two
    # interleaved of 2^-1), the bias after the scale, BloomGelu (tanh form) MLP of 4 x 48 with biases, 2 layers, tied
    # (the default).
    return BloomConfig(vocab_size=VOCAB, hidden_size=48, n_layer=2, n_head=6, bos_token_id=None, eos_token_id=None,
                       pad_token_id=None)


def mpt_config():
    # MPT-7B's blocks at toy size: LayerNorms without bias, Wqkv [q | k | v] clamped to +-1.5 (attn_config.clip_qkv:
    # about a tenth of the entries), no biases, ALiBi over 5 heads of 8 (MPT's slopes of 8 heads, even ones first,
    # alibi_bias_max 8), exact GELU MLP of 4 x 40, 2 layers, max_seq_len 64, tied (the default).
    return MptConfig(vocab_size=VOCAB, d_model=40, n_heads=5, n_layers=2, max_seq_len=64,
                     attn_config={"clip_qkv": 1.5, "alibi_bias_max": 8}, bos_token_id=None, eos_token_id=None,
                     pad_token_id=None)


def gptj_config():
    # GPT-J-6B at toy size: a parallel block on one LayerNorm (ln_1), q/k/v and out_proj without biases, RoPE on
    # adjacent pairs of the first rotary_dim 8 of 16 channels (theta 1e4, fixed), fc_in / fc_out with biases of n_inner
    # 128, gelu_new (the default), 3 layers, 4 heads, untied (the default) with the head's bias.
    return GPTJConfig(vocab_size=VOCAB, n_embd=64, n_layer=3, n_head=4, rotary_dim=8, n_inner=128, n_positions=64,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)


def gpt_neo_config():
    # GPT-Neo 125M's blocks at toy size: learned positions (wpe, 64 rows), pre-norm LayerNorms with bias, q/k/v
    # without biases and out_proj with one, no 1/sqrt(d) scaling of q.k, global (full) and local layers by
    # attention_types (two groups: global + local once, then local once: layers global, local, local) sliding over
    # window_size 8 keys, c_fc / c_proj with biases of intermediate_size 96, gelu_new (the default), tied (the default).
    return GPTNeoConfig(vocab_size=VOCAB, hidden_size=48, num_layers=3, num_heads=4, intermediate_size=96,
                        attention_types=[[["global", "local"], 1], [["local"], 1]], window_size=8,
                        max_position_embeddings=64, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def codegen_config():
    # CodeGen-350M's blocks at toy size: GPT-J's layer (a parallel block on one LayerNorm, no q/k/v/out_proj biases,
    # RoPE on adjacent pairs of the first rotary_dim 4 of 8 channels, fc_in / fc_out with biases of n_inner 96,
    # gelu_new, untied with the head's bias) with q/k/v fused in qkv_proj as 4 model-parallel shards [4, q | v | k, 12]:
    # n_embd 48 over 6 heads of 8, so that heads straddle the shards.
    return CodeGenConfig(vocab_size=VOCAB, n_embd=48, n_layer=3, n_head=6, rotary_dim=4, n_inner=96, n_positions=64,
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)


def biogpt_config():
    # BioGPT's blocks at toy size: OPT's learned positions offset by 2 (max_position_embeddings 64: 66 rows) added to
    # the token embeddings times sqrt(48) (scale_embedding, the default), pre-norm LayerNorms with weight and bias at
    # nn.LayerNorm's eps 1e-5 (layer_norm_eps 1e-12, the default, is not read by its modules), q/k/v/out_proj and
    # fc1 / fc2 with biases of intermediate_size 96, gelu (the default), tied (the default) output_projection.
    return BioGptConfig(vocab_size=VOCAB, hidden_size=48, num_hidden_layers=3, num_attention_heads=4,
                        intermediate_size=96, max_position_embeddings=64, bos_token_id=None, eos_token_id=None,
                        pad_token_id=None)


# The BERT types run as decoders (is_decoder true: causal; the classes' false is bidirectional and refused)
BERT_TOY = dict(vocab_size=VOCAB, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                max_position_embeddings=64, is_decoder=True)


def bert_config():
    # BertLMHeadModel at toy size: word + token type 0 + learned position rows, LayerNormed; post-norm layers
    # (attention.output.LayerNorm, output.LayerNorm) at layer_norm_eps 1e-12, q/k/v/o and the MLP with biases, gelu;
    # the head's dense + gelu + LayerNorm, then the decoder tied to the word embeddings with its own bias.
    return BertConfig(**BERT_TOY, bos_token_id=None, eos_token_id=None)


def roberta_config():
    # RobertaForCausalLM at toy size: BERT's blocks with positions from pad_token_id + 1 (pad 2, which no prompt or
    # greedy continuation holds: transformers' forward would give it the padding row; rows 3..), the MLP's act
    # gelu_new (tanh) while its head's is GELU by erf whatever hidden_act says (RobertaLMHead), type_vocab_size 1
    # (RoBERTa's checkpoints'), untied head (lm_head.decoder with its bias), layer_norm_eps 1e-5.
    return RobertaConfig(**BERT_TOY, hidden_act="gelu_new", type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=2,
                         tie_word_embeddings=False, bos_token_id=None, eos_token_id=None)


def ernie_config():
    # ErnieForCausalLM at toy size with use_task_id: BERT's model plus task type 0's row after the positions' (3 rows
    # of task_type_vocab_size), relu in the MLP and the head's transform.
    return ErnieConfig(**BERT_TOY, use_task_id=True, hidden_act="relu", bos_token_id=None, eos_token_id=None)


def megatron_bert_config():
    # MegatronBertForCausalLM at toy size: BERT's embeddings without their LayerNorm, pre-norm layers (attention.ln,
    # ln) and a final encoder.ln, gelu_new, the head's transform with gelu_new (hidden_act), tied.
    return MegatronBertConfig(**BERT_TOY, hidden_act="gelu_new", bos_token_id=None, eos_token_id=None)


def roberta_prelayernorm_config():
    # RobertaPreLayerNormForCausalLM at toy size: RoBERTa's LayerNormed embeddings and positions (pad_token_id 0, in
    # no prompt or continuation: rows 1..), pre-norm layers (attention.LayerNorm, intermediate.LayerNorm) and the base
    # model's final LayerNorm, relu in the MLP, GELU by erf in the head's transform, tied.
    return RobertaPreLayerNormConfig(**BERT_TOY, hidden_act="relu", pad_token_id=0, bos_token_id=None,
                                     eos_token_id=None)


def nemotron_config():
    # Nemotron-4 / Minitron at toy size: LayerNorm1P norms (weight applied as 1 + w, with bias), grouped-query
    # attention (2 KV heads of 4, head_dim 16), RoPE half-split on half of each head (partial_rotary_factor 0.5, the
    # default), relu2 (the default) ungated MLP of 96, no biases (the defaults), 3 layers, untied (the default).
    return NemotronConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                          bos_token_id=None, eos_token_id=None, pad_token_id=None)


def lfm2_config():
    # LFM2 at toy size, the first hybrid with state layers: 4 layers, short convolutions (kernel conv_L_cache 3, with
    # conv_bias so that in_proj, the taps and out_proj all carry biases) on layers 0, 2 and 3, GQA attention (2 KV
    # heads of 4, head_dim 16) with per-head q/k RMSNorm on layer 1, the SwiGLU MLP auto-adjusted from
    # intermediate_size 96: int(2 * 96 / 3) = 64, times block_ffn_dim_multiplier 1.5 = 96, rounded up to
    # block_multiple_of 40: 120, norm_eps 1e-5, theta 1e6, tied (the defaults).
    return Lfm2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, conv_L_cache=3,
                      conv_bias=True, block_multiple_of=40, block_ffn_dim_multiplier=1.5,
                      layer_types=["conv", "full_attention", "conv", "conv"],
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)


def lfm3_config():
    # LFM3 at toy size: 4 layers, short convolutions (conv_L_cache 7, the class's; no biases) on layers 0 and 2, Qwen3's
    # attention (4 heads of 16, 2 KV heads, per-head q/k RMSNorm) with a sigmoid gate per head (g_proj) full on layer
    # 1 under the proportional rope (theta 1e6, half the angles: the class's) and sliding (window 6) on layer 3 under
    # the default rope (theta 1e4), sandwich norms (post_operator_norm, post_ffn_norm), the SwiGLU MLP of 96 as given,
    # norm_eps 1e-5, tied (the defaults).
    return Lfm3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                      sliding_window=6, layer_types=["conv", "full_attention", "conv", "sliding_attention"],
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)


def qwen3_next_config():
    # Qwen3-Next at toy size: 4 layers, Gated DeltaNet on layers 0-2 (full_attention_interval 4) with 2 key heads of
    # 16 and 4 value heads of 12 (two value heads per key head), conv kernel 4, then gated full attention on layer 3
    # (4 heads, 2 KV heads, head_dim 16, partial_rotary_factor 0.25: 4 rotated channels), zero-centred norms; the MoE
    # (8 experts of 32, top 2, renormalised, a shared expert of 48 behind its sigmoid gate) on every layer but layer
    # 1 (mlp_only_layers), which runs the dense MLP of 96; untied.
    return Qwen3NextConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                           linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
                           linear_value_head_dim=12, linear_conv_kernel_dim=4, full_attention_interval=4,
                           num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                           shared_expert_intermediate_size=48, mlp_only_layers=[1],
                           bos_token_id=None, eos_token_id=None, pad_token_id=None)


def kimi_linear_config():
    # Kimi-Linear at toy size: 4 layers, Kimi Delta Attention on layers 0, 1, 3 (3 heads of 8, conv kernel 3) and
    # NoPE MLA on layer 2 (4 heads, q_lora_rank null, kv_lora_rank 16, qk_nope 8, qk_rope 4, v 8); layer 0's dense MLP
    # of 96 (first_k_dense_replace 1), then the sigmoid-routed MoE (8 experts of 16 in 2 groups, top 1 group, 2 per
    # token, renormalised, times 2.446, a shared expert of 16); untied.
    return KimiLinearConfig(vocab_size=VOCAB, hidden_size=48, intermediate_size=96, num_hidden_layers=4,
                            num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=None,
                            qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, max_position_embeddings=64,
                            linear_num_heads=3, linear_head_dim=8, linear_conv_kernel_dim=3,
                            layer_types=["linear_attention", "linear_attention", "full_attention",
                                         "linear_attention"],
                            num_local_experts=8, num_experts_per_tok=2, moe_intermediate_size=16, n_group=2,
                            topk_group=1, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def minimax_config():
    # MiniMax (MiniMaxForCausalLM) at toy size: 4 layers, lightning attention on layers 0, 2, 3 (4 heads of 16: the
    # decay factor of layer 0, of a middle layer and of the last, almost none) and softmax attention on layer 1 (2 KV
    # heads); block_size 8, so the prompts of 23 and 40 tokens cross blocks of transformers' chunked prefill; Mixtral's
    # experts (4 of 32, top 2) on every layer; six different residual factors (the residual is the normed input).
    return MiniMaxConfig(vocab_size=VOCAB, hidden_size=48, intermediate_size=32, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                         layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention"],
                         block_size=8, num_local_experts=4, num_experts_per_tok=2,
                         full_attn_alpha_factor=1.5, full_attn_beta_factor=0.8, linear_attn_alpha_factor=1.25,
                         linear_attn_beta_factor=1.1, mlp_alpha_factor=0.9, mlp_beta_factor=1.3,
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)


def rwkv_config():
    # RWKV-4 (RwkvForCausalLM) at toy size: 3 layers of hidden 32 (the WKV channels too: attention_hidden_size apart
    # from it breaks transformers' state), channel mixing 48 wide; rescale_every 2, so layer 1's outputs are halved and
    # the stream after it; layer_norm_epsilon 1e-3, which ln_out (nn.LayerNorm's own 1e-5) does not take.
    return RwkvConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=48,
                      num_hidden_layers=3, context_length=64, layer_norm_epsilon=1e-3, rescale_every=2,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)


def recurrent_gemma_config():
    # RecurrentGemma (Griffin) at toy size: block_types (recurrent, attention) repeated over 3 layers, so recurrent,
    # attention, recurrent; lru_width 32 (not hidden 48) in 4 gate blocks of 8, conv1d_width 3; local MQA (1 KV head
    # of 12, half of it rotated) over a window of 8 (shorter than the 23- and 40-token prompts), q/k/v biases;
    # logits_soft_cap 6 (the logits come near it); the embeddings times sqrt(48) rounded to bf16 (6.9375, not 6.928);
    # untied (tied, the scaled embedding of the last token dominates and every continuation repeats it).
    return RecurrentGemmaConfig(vocab_size=VOCAB, hidden_size=48, intermediate_size=64, num_hidden_layers=3,
                                num_attention_heads=4, num_key_value_heads=1, lru_width=32, conv1d_width=3,
                                attention_window_size=8, block_types=["recurrent", "attention"], attention_bias=True,
                                logits_soft_cap=6.0, tie_word_embeddings=False, bos_token_id=None, eos_token_id=None,
                                pad_token_id=None)


def qwen3_5_text_config():
    # Qwen3.5's text model at toy size: qwen3_next's layers with the Gated DeltaNet's projections apart (in_proj_qkv,
    # in_proj_z, in_proj_b, in_proj_a) and a dense MLP: 4 layers, Gated DeltaNet on layers 0, 2, 3 (layer_types), 2
    # key heads of 12 and 6 value heads of 8 (three per key head), conv kernel 3, gated attention on layer 1 (4 heads
    # of 16, 1 KV head, partial rotary 0.25 by default), the SwiGLU MLP of 80, tied.
    return Qwen3_5TextConfig(vocab_size=VOCAB, hidden_size=48, intermediate_size=80, num_hidden_layers=4,
                             num_attention_heads=4, num_key_value_heads=1, head_dim=16, max_position_embeddings=64,
                             linear_num_key_heads=2, linear_num_value_heads=6, linear_key_head_dim=12,
                             linear_value_head_dim=8, linear_conv_kernel_dim=3, tie_word_embeddings=True,
                             layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention"],
                             bos_token_id=None, eos_token_id=None, pad_token_id=None)


def olmo_hybrid_config():
    # OLMo Hybrid at toy size: 3 layers, Gated DeltaNet on layers 0 and 2 (pre-norms; q, k, v, the gate, b and a
    # projected apart; 2 key heads of 8, 4 value heads of 12, conv kernel 4; beta x 2 by default, the gated norm's
    # eps 1e-5), OLMo 3's attention on layer 1 (post-norms, q/k norms over the whole projection; 4 heads of 16, 2 KV
    # heads, the default rope), the SwiGLU MLP of 96, rms_norm_eps 1e-6, untied (the defaults).
    return OlmoHybridConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                            linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                            linear_value_head_dim=12, linear_conv_kernel_dim=4,
                            layer_types=["linear_attention", "full_attention", "linear_attention"],
                            bos_token_id=None, eos_token_id=None, pad_token_id=None)


def qwen3_5_moe_config():
    # Qwen3.5-MoE at toy size, the multimodal class with a one-block vision tower (never run on text): its text model
    # is qwen3_5_text's layers with Qwen3-Next's routed block on every layer: 3 layers, Gated DeltaNet on layers 0 and
    # 2 (2 key heads of 8, 4 value heads of 12, conv kernel 4), gated attention on layer 1 (4 heads of 16, 2 KV heads,
    # partial rotary 0.25 by default) with interleaved multimodal rope sections, 6 experts of 24 (2 per token, always
    # renormalised), the sigmoid-gated shared expert of 40; text_config says tied, the outer config untied: the head
    # is untied (the wrapper reads the outer key alone).
    text = dict(vocab_size=VOCAB, hidden_size=48, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                head_dim=16, max_position_embeddings=64, linear_num_key_heads=2, linear_num_value_heads=4,
                linear_key_head_dim=8, linear_value_head_dim=12, linear_conv_kernel_dim=4, num_experts=6,
                num_experts_per_tok=2, moe_intermediate_size=24, shared_expert_intermediate_size=40,
                tie_word_embeddings=True, layer_types=["linear_attention", "full_attention", "linear_attention"],
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
                                 "mrope_section": [1, 1, 0], "mrope_interleaved": True},
                bos_token_id=None, eos_token_id=None, pad_token_id=None)
    vision = dict(depth=1, hidden_size=16, intermediate_size=16, num_heads=1, out_hidden_size=48, patch_size=14,
                  num_position_embeddings=16)
    return Qwen3_5MoeConfig(text_config=text, vision_config=vision, image_token_id=VOCAB - 1, video_token_id=VOCAB - 2,
                            vision_start_token_id=VOCAB - 3, vision_end_token_id=VOCAB - 4, tie_word_embeddings=False)


def lfm2_moe_config():
    # LFM2-8B-A1B's blocks at toy size: 4 layers, short convolutions (kernel 3, no biases: the class's) on layers 0, 2
    # and 3, GQA attention (2 KV heads of 4, head_dim 16) with per-head q/k RMSNorm on layer 1; layer 0's feed-forward
    # the SwiGLU MLP of intermediate_size 96 (num_dense_layers 1; no block_* adjustment in this class), the others a
    # sigmoid router over 8 experts of 32 (moe_intermediate_size), top-2 by score + expert_bias (randomised),
    # renormalised (sum + 1e-6), times routed_scaling_factor 1.5; norm_eps 1e-5, theta 1e6, tied (the defaults).
    return Lfm2MoeConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                         num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         num_dense_layers=1, num_experts=8, num_experts_per_tok=2, routed_scaling_factor=1.5,
                         layer_types=["conv", "full_attention", "conv", "conv"],
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)


def bamba_config():
    # Bamba at toy size, the first Mamba2 hybrid: 4 layers, Mamba2 mixers on layers 0, 2 and 3 (8 heads of 16 =
    # mamba_expand 2 x 64, 2 groups of state 16, conv kernel 4 with its bias, in/out_proj biases), GQA attention
    # (2 KV heads of 4, head_dim 16, RoPE on half of each head: Bamba's fixed partial_rotary_factor) on layer 1,
    # SwiGLU MLP of 96, time_step_limit [0, 2] (written finite: JSON has no Infinity, and the clamp then bites),
    # mamba_chunk_size 8 so that transformers' prefill runs several chunks of its SSD scan, untied (the default).
    return BambaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                       attn_layer_indices=[1], mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=16, mamba_d_conv=4,
                       mamba_expand=2, mamba_chunk_size=8, mamba_proj_bias=True, time_step_limit=(0.0, 2.0),
                       bos_token_id=None, eos_token_id=None, pad_token_id=None)


def nemotron_h_config():
    # Nemotron-H at toy size: 6 layers by hybrid_override_pattern "M-*-MM", one block each: Mamba2 mixers (8 heads
    # of 16, 2 groups of state 16, conv kernel 4 with its bias, in/out_proj biases by use_bias, the gated norm in 2
    # groups), GQA attention without positions (4 heads of 16, 2 KV heads), ungated relu2 MLPs of 96, two mixers in
    # a row (layers 4, 5), chunk_size 8 so that transformers' prefill runs several chunks, layer_norm_epsilon 1e-5,
    # untied. time_step_limit stays (0, inf): transformers 5.25's one-token decode skips the clamp its prefill
    # applies, so a finite limit makes generate() disagree with the no-cache forward (Bamba's oracle tests it).
    return NemotronHConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, hybrid_override_pattern="M-*-MM",
                           num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                           mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=16, conv_kernel=4,
                           chunk_size=8, use_bias=True,
                           bos_token_id=None, eos_token_id=None, pad_token_id=None)


def nemotron_h_moe_config():
    # Nemotron-H's experts (Nemotron 3 Nano style) at toy size: 4 layers by hybrid_override_pattern "ME*E", a Mamba2
    # mixer (as nemotron_h's), attention, two expert layers: 8 ungated relu2 experts of 32 in 2 groups, top-1 group
    # and top-2 experts by the sigmoid router with its random e_score_correction_bias, norm_topk_prob, times 2.5,
    # running in moe_latent_size 48 between the latent projections (biases by mlp_bias), beside the shared relu2
    # MLP of 40; untied.
    return NemotronHConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, hybrid_override_pattern="ME*E",
                           num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                           mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=16, conv_kernel=4,
                           chunk_size=8, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                           moe_shared_expert_intermediate_size=40, moe_latent_size=48, n_group=2, topk_group=1,
                           routed_scaling_factor=2.5, norm_topk_prob=True, mlp_bias=True,
                           bos_token_id=None, eos_token_id=None, pad_token_id=None)


def falcon_h1_config():
    # Falcon-H1 at toy size: 3 layers, each a Mamba2 mixer (mamba_d_ssm 96: 6 heads of 16, not expand x hidden; 2
    # groups of state 16, conv kernel 4 with its bias, in_proj bias, out_proj bias by projectors_bias, the gated norm
    # by mamba_rms_norm, normed before the gate) beside GQA attention with RoPE (4 heads of 16, 2 KV heads) on the
    # same normed input, then a SwiGLU MLP of 96; every muP multiplier away from 1 (ssm_multipliers per in_proj part,
    # mlp_multipliers gate and down), mamba_chunk_size 8, untied; time_step_limit (0, inf) as nemotron_h's.
    return FalconH1Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                          mamba_d_ssm=96, mamba_n_heads=6, mamba_d_head=16, mamba_n_groups=2, mamba_d_state=16,
                          mamba_d_conv=4, mamba_chunk_size=8, mamba_proj_bias=True, projectors_bias=True,
                          mamba_rms_norm=True, mamba_norm_before_gate=True, embedding_multiplier=2.5,
                          lm_head_multiplier=0.6, key_multiplier=0.7, attention_in_multiplier=1.3,
                          attention_out_multiplier=0.8, ssm_in_multiplier=1.2, ssm_out_multiplier=0.9,
                          ssm_multipliers=[0.5, 1.5, 0.8, 1.2, 0.7], mlp_multipliers=[1.4, 0.6],
                          bos_token_id=None, eos_token_id=None, pad_token_id=None)


def falcon_h1_gated_config():
    # Falcon-H1 under FalconH1Config's defaults for the mixer's output: mamba_rms_norm false (y silu(z), no norm,
    # whatever mamba_norm_before_gate says), tied head, no projection biases; 2 layers, 4 heads of 16 in 1 group of
    # state 8, kernel 3; the muP multipliers left at 1 (falcon_h1 covers them).
    return FalconH1Config(vocab_size=VOCAB, hidden_size=48, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=12, max_position_embeddings=64,
                          mamba_d_ssm=64, mamba_n_heads=4, mamba_d_head=16, mamba_n_groups=1, mamba_d_state=8,
                          mamba_d_conv=3, mamba_chunk_size=8, tie_word_embeddings=True,
                          bos_token_id=None, eos_token_id=None, pad_token_id=None)


def mamba2_config():
    # Mamba2 at toy size: 4 layers, each one mixer (8 heads of 16 = expand 2 x 64, 2 groups of state 16, conv kernel
    # 4 with its bias, in/out_proj biases by use_bias, the gated norm in 2 groups) with its pre-norm and residual,
    # chunk_size 8 so that transformers' prefill runs several chunks, residual_in_fp32 (the default), untied;
    # time_step_limit (0, inf) for the reason nemotron_h's stays there.
    return Mamba2Config(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=4, num_heads=8, head_dim=16, n_groups=2,
                        state_size=16, conv_kernel=4, expand=2, chunk_size=8, use_bias=True,
                        bos_token_id=None, eos_token_id=None, pad_token_id=None)


def zamba2_config():
    # Zamba2 at toy size: 3 layers, a Mamba2 mixer in each (4 heads of 16 = expand 2 x 32, 2 groups of state 8, conv
    # kernel 3), layer 0 the mixer alone, layers 1-2 hybrid: the shared block (RMSNorm of [h | embeddings], 4 heads of
    # 16 from 64 with RoPE (use_mem_rope), q/k/v adapters of rank 4, o_proj, the GELU MLP of 48 with its adapter),
    # the site's linear, then the mixer. One block for both sites, each site its own adapters and K/V (more hybrid
    # layers amplify the gap between transformers' chunked prefill and its own recurrent decode: 4 layers with 3
    # sites reach 2.4e-4 on the 40-token prompt, these 3 layers 6.4e-5). chunk_size 8 (several SSD chunks in transformers' prefill), tied (the default:
    # transformers 5.25 ties the blocks across their use sites only then; untied, each hybrid layer has its own).
    return Zamba2Config(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3,
                        layers_block_type=["mamba", "hybrid", "hybrid"], num_attention_heads=4,
                        num_key_value_heads=4, n_mamba_heads=4, mamba_ngroups=2, mamba_d_state=8, mamba_d_conv=3,
                        intermediate_size=48, num_mem_blocks=1, use_shared_attention_adapter=True, adapter_rank=4,
                        use_mem_rope=True, chunk_size=8, max_position_embeddings=64,
                        bos_token_id=None, eos_token_id=None, pad_token_id=None)


def zamba_config():
    # Zamba at toy size: 3 layers, a multi-head Mamba-1 mixer in each (expand 2 x 32 = 64 channels in 2 heads of 32,
    # each head its own x_proj / dt_proj; state 8, conv kernel 3 with its bias, mamba_dt_rank "auto" = 2, in/out_proj
    # biases; in_proj rows alternating x and z), layer 0 the mixer alone, layers 1-2 hybrid: the one shared block
    # (RMSNorm of [h | embeddings], 4 query heads / 2 KV heads of attention_head_dim 16 from 64, no positions, scale
    # (16 / 2)^-1/2, o_proj, the GELU MLP of 48), the site's linear, then the mixer. Tied (the default: transformers
    # 5.25 ties the block across its use sites only then); each site keeps its own K/V.
    return ZambaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3,
                       layers_block_type=["mamba", "hybrid", "hybrid"], num_attention_heads=4,
                       num_key_value_heads=2, n_mamba_heads=2, mamba_d_state=8, mamba_d_conv=3, mamba_proj_bias=True,
                       intermediate_size=48, max_position_embeddings=64,
                       bos_token_id=None, eos_token_id=None, pad_token_id=None)


def mamba_config():
    # Mamba (Mamba-1) at toy size: 3 layers, each one selective-scan mixer (expand 2 x 48 = 96 channels, state 8,
    # conv kernel 4 with its bias, time_step_rank "auto" = 3, in/out_proj biases by use_bias) with its pre-norm and
    # residual, the head tied to the embeddings (the class's default).
    return MambaConfig(vocab_size=VOCAB, hidden_size=48, num_hidden_layers=3, state_size=8, conv_kernel=4, expand=2,
                       use_bias=True, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def falcon_mamba_config():
    # FalconMamba at toy size: Mamba's mixer plus the weightless RMS norms of dt, B and C (mixer_rms_eps 1e-6): 3
    # layers, expand 2 x 32 = 64 channels, state 16, conv kernel 3 without bias, time_step_rank 4, no projection
    # biases, an untied head.
    return FalconMambaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3, state_size=16, conv_kernel=3,
                             expand=2, time_step_rank=4, use_conv_bias=False, tie_word_embeddings=False,
                             bos_token_id=None, eos_token_id=None, pad_token_id=None)


def jamba_config():
    # Jamba at toy size: 4 layers, Mamba-1 mixers on 0, 1, 3 (expand 2 x 64 = 128 channels, state 8, kernel 4 with its
    # bias, mamba_dt_rank "auto" = 4, in/out_proj biases, the dt / B / C norms with weights), GQA attention without
    # positions on layer 2 (attn_layer_period 4, offset 2); 4 experts of 96 (top-2, softmax weights not
    # renormalised) on layers 1 and 3 (expert_layer_period 2, offset 1), the dense MLP of 96 on 0 and 2; untied.
    return JambaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, num_experts=4,
                       num_experts_per_tok=2, expert_layer_period=2, expert_layer_offset=1, attn_layer_period=4,
                       attn_layer_offset=2, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_proj_bias=True,
                       use_mamba_kernels=False, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def granitemoehybrid_config():
    # Granite 4.0-H at toy size: 4 layers by layer_types, Mamba2 mixers on 0, 2, 3 (8 heads of 16, 2 groups of state
    # 16, conv kernel 4 with its bias, no projection biases, time_step_limit [0, 2.5]: finite, JSON has no
    # Infinity), GQA attention on layer 1 with RoPE (position_embedding_type "rope"), Granite's multipliers
    # (embedding 3, residual 0.4, attention 0.15, logits scaling 2), 4 routed experts of width 32, top-2, beside the
    # shared MLP of 48 on every layer, mamba_chunk_size 8, untied.
    return GraniteMoeHybridConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=32, num_hidden_layers=4,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                  layer_types=["mamba", "attention", "mamba", "mamba"], position_embedding_type="rope",
                                  mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=16, mamba_d_conv=4,
                                  mamba_expand=2, mamba_chunk_size=8, time_step_limit=(0.0, 2.5),
                                  num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=48,
                                  embedding_multiplier=3.0, residual_multiplier=0.4, attention_multiplier=0.15,
                                  logits_scaling=2.0, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                                  bos_token_id=None, eos_token_id=None, pad_token_id=None)


def opt_config():
    # OPT-125m's blocks at toy size: learned positions with OPT's offset of 2 (max_position_embeddings 64: 66 rows),
    # no RoPE, pre-norm LayerNorms with weight and bias (do_layer_norm_before, layer_norm_elementwise_affine),
    # q/k/v/out_proj and fc1/fc2 biases (enable_bias), relu (the default), ffn_dim 96, 3 layers, 4 heads of 16,
    # tied (the default).
    return OPTConfig(vocab_size=VOCAB, hidden_size=64, ffn_dim=96, num_hidden_layers=3, num_attention_heads=4,
                     max_position_embeddings=64, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def opt_350m_config():
    # OPT-350m's shape at toy size: post-norm blocks (do_layer_norm_before false: the LayerNorm after each residual
    # add, no final LayerNorm), embeddings and the tied head 32 wide (word_embed_proj_dim) with project_in [64, 32]
    # and project_out [32, 64] between them and hidden 64; relu, ffn_dim 96, 2 layers, 4 heads of 16.
    return OPTConfig(vocab_size=VOCAB, hidden_size=64, word_embed_proj_dim=32, ffn_dim=96, num_hidden_layers=2,
                     num_attention_heads=4, max_position_embeddings=64, do_layer_norm_before=False,
                     bos_token_id=None, eos_token_id=None, pad_token_id=None)


def nanochat_config():
    # NanoChat at toy size: weightless RMSNorms (the embeddings normalised too), q/k normalised after RoPE turned the
    # other way, relu2 MLP fc2(relu2(fc1(x))) of 96, 2 layers, 4 heads of 16 over 2 KV heads, logits soft-capped at
    # 15 (the default), untied.
    return NanoChatConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                          bos_token_id=None, eos_token_id=None, pad_token_id=None)


def diffllama_config():
    # DiffLlama at toy size: differential attention over 8 heads of 16 and 4 KV heads (two query heads per key head,
    # so the value halves and the head pairs cross groups), 3 layers (lambda_init 0.2, 0.36, 0.47), lambdas drawn at
    # std 0.3 (lambda moves by tens of percent), q/k/v/o biases (attention_bias), a SwiGLU MLP of 96, untied.
    return DiffLlamaConfig(**DENSE_TOY_SHAPE | {"num_attention_heads": 8, "num_key_value_heads": 4}, head_dim=16,
                           num_hidden_layers=3, attention_bias=True)


def cohere_compass_config():
    # Cohere Compass's text model at toy size: Cohere 2's parallel blocks (bias-free LayerNorms), 4 heads of 16 over
    # 2 KV heads, 3 layers [sliding, full, sliding] over sliding_window 8, RoPE half-split at theta 5e4 on the
    # sliding layers (their M-RoPE sections, one position on text) and none on the full one (its entry null),
    # logit_scale 0.5, tied (the default).
    return CohereCompassTextConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3, sliding_window=8, logit_scale=0.5,
                                   layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                                   rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 5e4,
                                                                          "mrope_section": [4, 2, 2],
                                                                          "mrope_interleaved": True},
                                                    "full_attention": None})


def modernbert_decoder_config():
    # ModernBERT's decoder at toy size: LayerNormed embeddings, 4 pre-norm layers (layer 0's attention unnormed) with
    # layers 0 and 3 full (global_attn_every_n_layers 3) and 1-2 sliding over local_attention 16 / 2 = 8 keys, ropes
    # theta 160000 / 10000 (the class's), 4 heads of 16, GeGLU (gelu) of 96, the head LN(gelu(dense x)) and the
    # decoder's bias, tied; norm_bias true (every LayerNorm with a bias) and classifier_bias true.
    # Its class takes integer special ids only: the last ids of the vocabulary, which the forward does not treat apart.
    ids = dict(pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, cls_token_id=VOCAB - 2, sep_token_id=VOCAB - 3)
    return ModernBertDecoderConfig(**DENSE_TOY_SHAPE | ids, num_hidden_layers=4, local_attention=16, norm_bias=True,
                                   classifier_bias=True)


def bitnet_config():
    # BitNet without a quantization_config (its weights plain matrices) at toy size: Llama's layers with the RMSNorms
    # of the attention output (attn_sub_norm) and of relu2(gate) * up (ffn_sub_norm), GQA 4/2 of 16, 3 layers, theta
    # 5e5 (the class's), untied.
    return BitNetConfig(**DENSE_TOY_SHAPE, num_hidden_layers=3)


def youtu_config():
    # Youtu-LLM at toy size: DeepSeek-V3's MLA attention (q LoRA 32, latent 32, nope 16 + rope 8 per head, v 16,
    # rope_interleave true: the default) in Llama's layers, each with the dense SwiGLU MLP of 96, 2 layers, 4 heads,
    # tied (the default).
    return YoutuConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
                       qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, max_position_embeddings=64,
                       bos_token_id=None, eos_token_id=None, pad_token_id=None)


def minicpm3_config():
    # MiniCPM3 at toy size: DeepSeek-V2's MLA modules (q LoRA 32, latent 32, nope 16 + rope 8 per head, v_head_dim
    # null: hidden / heads = 16) with half-split RoPE, dense SwiGLU MLP of 96, embeddings x 12 (scale_emb), sub-layer
    # outputs x 1.4 / sqrt(2) (scale_depth), the last hidden state / (64 / dim_model_base 32), 2 layers, 4 heads;
    # untied (tied, the default, the random head repeats the last token).
    return MiniCPM3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
                          qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=None, dim_model_base=32,
                          tie_word_embeddings=False, max_position_embeddings=64, bos_token_id=None, eos_token_id=None,
                          pad_token_id=None)


def qwen2_5_vl_config():
    # Qwen2.5-VL's text model at toy size, built as the multimodal class (transformers 5's nested text_config) with a
    # one-block vision tower: Qwen2's q/k/v biases, 3 layers, 4 heads of 16 over 2 KV heads, multimodal rope
    # (rope_type "mrope", mrope_section [2, 3, 3]: 8 = head_dim / 2 frequencies) at theta 10000, untied.
    text = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6,
                rope_parameters={"rope_type": "mrope", "mrope_section": [2, 3, 3], "rope_theta": 10000.0},
                bos_token_id=None, eos_token_id=None, pad_token_id=None)
    vision = dict(depth=1, hidden_size=16, intermediate_size=16, num_heads=1, out_hidden_size=64, patch_size=14,
                  window_size=28, fullatt_block_indexes=[0])
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, image_token_id=VOCAB - 1,
                            video_token_id=VOCAB - 2, vision_start_token_id=VOCAB - 3, vision_end_token_id=VOCAB - 4)


def qwen2_vl_config():
    # Qwen2-VL's text model at toy size, the multimodal class with a one-block vision tower: 2 layers, 2 heads of 32
    # (MHA: num_key_value_heads 2), mrope_section [4, 6, 6] (16 = head_dim / 2) at theta 1e6 (the class default),
    # the head tied by text_config's tie_word_embeddings (the outer config's false: Qwen2VLConfig ORs them).
    text = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, tie_word_embeddings=True,
                rope_parameters={"rope_type": "default", "mrope_section": [4, 6, 6]},
                bos_token_id=None, eos_token_id=None, pad_token_id=None)
    vision = dict(depth=1, embed_dim=16, hidden_size=64, mlp_ratio=1, num_heads=1, patch_size=14)
    return Qwen2VLConfig(text_config=text, vision_config=vision, image_token_id=VOCAB - 1, video_token_id=VOCAB - 2,
                         vision_start_token_id=VOCAB - 3, vision_end_token_id=VOCAB - 4, tie_word_embeddings=False)


def qwen3_vl_config():
    # Qwen3-VL's text model at toy size, the multimodal class (transformers 5's nested layout, the only one) with a
    # one-block vision tower: Qwen3's per-head q/k norms, 3 layers, 4 heads of 32 (head_dim over hidden_size / heads
    # = 16) over 2 KV heads, interleaved multimodal rope (mrope_interleaved, mrope_section [6, 5, 5]: 16 = head_dim /
    # 2) at theta 5e5 (the class default), q/k/v/o biases (attention_bias), untied.
    text = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, head_dim=32, max_position_embeddings=128, rms_norm_eps=1e-6,
                attention_bias=True,
                rope_parameters={"rope_type": "default", "mrope_section": [6, 5, 5], "mrope_interleaved": True},
                bos_token_id=None, eos_token_id=None, pad_token_id=None)
    vision = dict(depth=1, hidden_size=16, intermediate_size=16, num_heads=1, out_hidden_size=64, patch_size=14,
                  num_position_embeddings=16, deepstack_visual_indexes=[0])
    return Qwen3VLConfig(text_config=text, vision_config=vision, image_token_id=VOCAB - 1, video_token_id=VOCAB - 2,
                         vision_start_token_id=VOCAB - 3, vision_end_token_id=VOCAB - 4, tie_word_embeddings=False)


def tiny_clip():
    return CLIPVisionConfig(hidden_size=16, intermediate_size=16, num_hidden_layers=2, num_attention_heads=1,
                            image_size=28, patch_size=14, projection_dim=16).to_dict()


def llava_config():
    # LLaVA's text model at toy size, the multimodal class (a two-layer CLIP vision tower of width 16 and the
    # projector beside it) with a Llama text_config: 3 layers, hidden 64, intermediate 96, 4 heads, 2 KV heads,
    # theta 1e4, no biases; the head untied (the top level's and text_config's tie_word_embeddings both false).
    text = dict(model_type="llama", vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6,
                tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    return LlavaConfig(text_config=text, vision_config=tiny_clip(), image_token_id=VOCAB - 1, image_seq_length=4,
                       tie_word_embeddings=False)


def llava_next_config():
    # LLaVA-NeXT's text model at toy size (a two-layer CLIP vision tower, the projector, image_newline) with a
    # Mistral text_config: 2 layers, hidden 64, intermediate 128, 4 heads, 1 KV head, head_dim 16, theta 1e6,
    # sliding_window 8 (every layer, shorter than two prompts), untied.
    text = dict(model_type="mistral", vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=1, head_dim=16, max_position_embeddings=128,
                rms_norm_eps=1e-6, sliding_window=8, rope_parameters={"rope_type": "default", "rope_theta": 1e6},
                tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    return LlavaNextConfig(text_config=text, vision_config=tiny_clip(), image_token_id=VOCAB - 1, image_seq_length=4,
                           image_grid_pinpoints=[[28, 28]], tie_word_embeddings=False)


def emu3_config():
    # Emu3's text model at toy size, the multimodal class (a one-stage VQ-VAE beside it, unread): Llama's layer with
    # q/k/v/o biases (attention_bias, a class attribute the key overrides), 3 layers, hidden 64, 4 heads over 2 KV
    # heads, Emu3TextConfig's theta 1e6, untied (Emu3Config's tie_word_embeddings false, text_config's true ignored).
    text = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, attention_bias=True,
                tie_word_embeddings=True, bos_token_id=1, eos_token_id=None, pad_token_id=0)  # Emu3TextConfig: ints
    vq = dict(codebook_size=16, embed_dim=4, latent_channels=4, base_channels=32, channel_multiplier=[1],
              num_res_blocks=1, attn_resolutions=[], hidden_size=16)
    return Emu3Config(text_config=text, vq_config=vq, vocabulary_map={"<image>": VOCAB - 1}, tie_word_embeddings=False)


def mllama_config():
    # Llama 3.2 Vision's text model at toy size, the multimodal class (a one-layer vision tower and the projector beside
    # it, unread): 4 layers, hidden 64, 4 heads over 2 KV heads, layer 2 a cross-attention layer (skipped on text:
    # no pixel values, nothing cached from an image), llama3 rope (factor 8 over 64 positions, theta 1e4: both sides
    # of the band), the embedding's 8 extra rows (the prompts hold ids from VOCAB on: mllama_prompts), never tied
    # (tie_word_embeddings true is not honoured by either Mllama class).
    text = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-6, cross_attention_layers=[2],
                rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                 "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0},
                tie_word_embeddings=True, bos_token_id=1, eos_token_id=None, pad_token_id=None)  # bos: an int
    vision = dict(hidden_size=16, num_hidden_layers=1, num_global_layers=1, attention_heads=2, intermediate_size=16,
                  vision_output_dim=32, image_size=28, patch_size=14, intermediate_layers_indices=[0])
    return MllamaConfig(text_config=text, vision_config=vision, image_token_index=VOCAB)


def mllama_prompts(ps):
    """The prompts with ids of the embedding's extra rows (VOCAB, the image token's, to VOCAB + 7) in place of some."""
    out = [list(p) for p in ps]
    for k, p in enumerate(out):
        p[1] = VOCAB + k
    out[-1][10], out[-1][30] = VOCAB + 7, VOCAB + 5
    return out


def aria_config():
    # Aria's text model at toy size, the multimodal class (a one-layer Idefics3 vision tower and the projector beside
    # it, unread): Llama's attention (3 layers, hidden 64, 4 heads over 2 KV heads, theta 1e4) and on every layer 4
    # experts of 32, top 2 by logit softmaxed, plus 2 shared experts as one SwiGLU MLP of 64 with biases (mlp_bias),
    # untied.
    text = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=32, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, moe_num_experts=4, moe_topk=2,
                moe_num_shared_experts=2, mlp_bias=True, tie_word_embeddings=False, bos_token_id=None,
                eos_token_id=None, pad_token_id=None)
    vision = dict(hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=1, image_size=28,
                  patch_size=14)
    return AriaConfig(text_config=text, vision_config=vision, projector_patch_to_query_dict={4: 4},
                      image_token_index=VOCAB - 1, tie_word_embeddings=False)


def phi4_multimodal_config():
    # Phi-4-multimodal's text path at toy size (Phi4MultimodalForCausalLM; its image and audio embedders beside it,
    # unread on text): Phi-3's fused qkv_proj / gate_up_proj, 2 layers, hidden 64, 4 heads of 16 over 2 KV heads,
    # RoPE on 12 of 16 channels (partial_rotary_factor 0.75, as the hub's), a window of 16 on every layer, untied.
    vision = dict(hidden_size=16, intermediate_size=16, num_hidden_layers=2, num_attention_heads=1, image_size=28,
                  patch_size=14, crop_size=28, image_token_id=VOCAB - 1)
    audio = dict(hidden_size=16, intermediate_size=16, num_blocks=1, num_attention_heads=1, ext_pw_out_channel=16,
                 depthwise_separable_out_channel=16, nemo_conv_channels=16, audio_token_id=VOCAB - 2)
    return Phi4MultimodalConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                sliding_window=16, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                                    "partial_rotary_factor": 0.75},
                                tie_word_embeddings=False, bos_token_id=None, eos_token_id=[0], pad_token_id=None,
                                vision_config=vision, audio_config=audio)


FAMILIES = {
    "qwen3": (qwen3_config, Qwen3ForCausalLM),
    "gpt_oss": (gpt_oss_config, GptOssForCausalLM),
    "deepseek_v3": (deepseek_v3_config, DeepseekV3ForCausalLM),
    "qwen3_moe": (qwen3_moe_config, Qwen3MoeForCausalLM),
    "mixtral": (mixtral_config, MixtralForCausalLM),
    "qwen2_moe": (qwen2_moe_config, Qwen2MoeForCausalLM),
    "gemma3": (gemma3_config, Gemma3ForCausalLM),
    "gemma3n": (gemma3n_config, Gemma3nForCausalLM),
    "gemma4": (gemma4_config, Gemma4ForCausalLM),
    "gemma4_unified": (gemma4_unified_config, Gemma4UnifiedForCausalLM),
    "gemma4_dense": (gemma4_dense_config, Gemma4ForCausalLM),
    "gemma4_moe": (gemma4_moe_config, Gemma4ForCausalLM),
    "phi3": (phi3_config, Phi3ForCausalLM),
    "phi3_longrope": (phi3_longrope_config, Phi3ForCausalLM),
    "olmo2": (olmo2_config, Olmo2ForCausalLM),
    "olmo3": (olmo3_config, Olmo3ForCausalLM),
    "granite": (granite_config, GraniteForCausalLM),
    "smollm3": (smollm3_config, SmolLM3ForCausalLM),
    "gemma": (gemma_config, GemmaForCausalLM),
    "gemma2": (gemma2_config, Gemma2ForCausalLM),
    "hunyuan_v1_dense": (hunyuan_v1_dense_config, HunYuanDenseV1ForCausalLM),
    "hunyuan_v1_moe": (hunyuan_v1_moe_config, HunYuanMoEV1ForCausalLM),
    "minimax_m2": (minimax_m2_config, MiniMaxM2ForCausalLM),
    "exaone": (exaone_config, LlamaForCausalLM),
    "internlm3": (internlm3_config, LlamaForCausalLM),
    "flex_olmo": (flex_olmo_config, FlexOlmoForCausalLM),
    "vaultgemma": (vaultgemma_config, VaultGemmaForCausalLM),
    "glm": (glm_config, GlmForCausalLM),
    "seed_oss": (seed_oss_config, SeedOssForCausalLM),
    "exaone4": (exaone4_config, Exaone4ForCausalLM),
    "starcoder2": (starcoder2_config, Starcoder2ForCausalLM),
    "ministral": (ministral_config, MinistralForCausalLM),
    "ministral3": (ministral3_config, Ministral3ForCausalLM),
    "helium": (helium_config, HeliumForCausalLM),
    "arcee": (arcee_config, ArceeForCausalLM),
    "afmoe": (afmoe_config, AfmoeForCausalLM),
    "mimo_v2_flash": (mimo_v2_flash_config, MiMoV2FlashForCausalLM),
    "laguna": (laguna_config, LagunaForCausalLM),
    "mellum": (mellum_config, MellumForCausalLM),
    "bert": (bert_config, BertLMHeadModel),
    "roberta": (roberta_config, RobertaForCausalLM),
    "ernie": (ernie_config, ErnieForCausalLM),
    "megatron_bert": (megatron_bert_config, MegatronBertForCausalLM),
    "roberta_prelayernorm": (roberta_prelayernorm_config, RobertaPreLayerNormForCausalLM),
    "ergo": (ergo_config, ErgoForCausalLM),
    "apertus": (apertus_config, ApertusForCausalLM),
    "jais2": (jais2_config, Jais2ForCausalLM),
    "iquestcoder": (iquestcoder_config, LlamaForCausalLM),
    "hyperclovax": (hyperclovax_config, HyperCLOVAXForCausalLM),
    "persimmon": (persimmon_config, PersimmonForCausalLM),
    "cwm": (cwm_config, CwmForCausalLM),
    "xglm": (xglm_config, XGLMForCausalLM),
    "openai_gpt": (openai_gpt_config, OpenAIGPTLMHeadModel),
    "ctrl": (ctrl_config, CTRLLMHeadModel),
    "gpt_neox_japanese": (gpt_neox_japanese_config, GPTNeoXJapaneseForCausalLM),
    "stablelm": (stablelm_config, StableLmForCausalLM),
    "stablelm_parallel": (stablelm_parallel_config, StableLmForCausalLM),
    "stablelm2_qk": (stablelm2_qk_config, StableLmForCausalLM),
    "phi": (phi_config, PhiForCausalLM),
    "phi_qk": (phi_qk_config, PhiForCausalLM),
    "gpt_neox": (gpt_neox_config, GPTNeoXForCausalLM),
    "gpt_neox_seq": (gpt_neox_seq_config, GPTNeoXForCausalLM),
    "gpt2": (gpt2_config, GPT2LMHeadModel),
    "gpt2_layer_scale": (gpt2_layer_scale_config, GPT2LMHeadModel),
    "gpt2_unscaled": (gpt2_unscaled_config, GPT2LMHeadModel),
    "opt": (opt_config, OPTForCausalLM),
    "opt_350m": (opt_350m_config, OPTForCausalLM),
    "nanochat": (nanochat_config, NanoChatForCausalLM),
    "diffllama": (diffllama_config, DiffLlamaForCausalLM),
    "cohere_compass_text": (cohere_compass_config, CohereCompassForCausalLM),
    "modernbert_decoder": (modernbert_decoder_config, ModernBertDecoderForCausalLM),
    "bitnet": (bitnet_config, BitNetForCausalLM),
    "youtu": (youtu_config, YoutuForCausalLM),
    "minicpm3": (minicpm3_config, MiniCPM3ForCausalLM),
    "gpt_bigcode": (gpt_bigcode_config, GPTBigCodeForCausalLM),
    "gpt_bigcode_mha": (gpt_bigcode_mha_config, GPTBigCodeForCausalLM),
    "falcon": (falcon_config, FalconForCausalLM),
    "falcon_new": (falcon_new_config, FalconForCausalLM),
    "falcon_alibi": (falcon_alibi_config, FalconForCausalLM),
    "bloom": (bloom_config, BloomForCausalLM),
    "mpt": (mpt_config, MptForCausalLM),
    "gptj": (gptj_config, GPTJForCausalLM),
    "gpt_neo": (gpt_neo_config, GPTNeoForCausalLM),
    "biogpt": (biogpt_config, BioGptForCausalLM),
    "codegen": (codegen_config, CodeGenForCausalLM),
    "nemotron": (nemotron_config, NemotronForCausalLM),
    "lfm2": (lfm2_config, Lfm2ForCausalLM),
    "lfm3": (lfm3_config, Lfm3ForCausalLM),
    "qwen3_next": (qwen3_next_config, Qwen3NextForCausalLM),
    "qwen3_5_text": (qwen3_5_text_config, Qwen3_5ForCausalLM),
    "olmo_hybrid": (olmo_hybrid_config, OlmoHybridForCausalLM),
    "kimi_linear": (kimi_linear_config, KimiLinearForCausalLM),
    "minimax": (minimax_config, MiniMaxForCausalLM),
    "rwkv": (rwkv_config, RwkvForCausalLM),
    "recurrent_gemma": (recurrent_gemma_config, RecurrentGemmaForCausalLM),
    "qwen3_5_moe": (qwen3_5_moe_config, Qwen3_5MoeForConditionalGeneration),
    "lfm2_moe": (lfm2_moe_config, Lfm2MoeForCausalLM),
    "bamba": (bamba_config, BambaForCausalLM),
    "granitemoehybrid": (granitemoehybrid_config, GraniteMoeHybridForCausalLM),
    "nemotron_h": (nemotron_h_config, NemotronHForCausalLM),
    "nemotron_h_moe": (nemotron_h_moe_config, NemotronHForCausalLM),
    "falcon_h1": (falcon_h1_config, FalconH1ForCausalLM),
    "falcon_h1_gated": (falcon_h1_gated_config, FalconH1ForCausalLM),
    "mamba2": (mamba2_config, Mamba2ForCausalLM),
    "zamba2": (zamba2_config, Zamba2ForCausalLM),
    "zamba": (zamba_config, ZambaForCausalLM),
    "mamba": (mamba_config, MambaForCausalLM),
    "falcon_mamba": (falcon_mamba_config, FalconMambaForCausalLM),
    "jamba": (jamba_config, JambaForCausalLM),
    "olmo": (olmo_config, OlmoForCausalLM),
    "ernie4_5": (ernie4_5_config, Ernie4_5ForCausalLM),
    "olmoe": (olmoe_config, OlmoeForCausalLM),
    "granitemoe": (granitemoe_config, GraniteMoeForCausalLM),
    "jetmoe": (jetmoe_config, JetMoeForCausalLM),
    "granitemoeshared": (granitemoeshared_config, GraniteMoeSharedForCausalLM),
    "granite_swa": (granite_swa_config, GraniteSWAForCausalLM),
    "granitemoe_swa": (granitemoe_swa_config, GraniteMoeSWAForCausalLM),
    "flint": (flint_config, FlintForCausalLM),
    "hy_v3": (hy_v3_config, HYV3ForCausalLM),
    "cohere2_moe": (cohere2_moe_config, Cohere2MoeForCausalLM),
    "cohere2_moe_sigmoid": (cohere2_moe_sigmoid_config, Cohere2MoeForCausalLM),
    "glm4_moe": (glm4_moe_config, Glm4MoeForCausalLM),
    "sarvam_moe": (sarvam_moe_config, Glm4MoeForCausalLM),
    "param2moe": (param2moe_config, Glm4MoeForCausalLM),
    "minicpm5_moe": (minicpm5_moe_config, MiniCPM5MoeForCausalLM),
    "kolibri1": (kolibri1_config, Kolibri1ForCausalLM),
    "glm4_moe_lite": (glm4_moe_lite_config, Glm4MoeLiteForCausalLM),
    "sarvam_mla": (sarvam_mla_config, DeepseekV3ForCausalLM),
    "axk1": (axk1_config, AXK1ForCausalLM),
    "longcat_flash": (longcat_flash_config, LongcatFlashForCausalLM),
    "glm_moe_dsa": (glm_moe_dsa_config, GlmMoeDsaForCausalLM),
    "hy_v4": (hy_v4_config, HYV4ForCausalLM),
    "deepseek_v32": (deepseek_v32_config, DeepseekV32ForCausalLM),
    "axk2": (axk2_config, AXK2ForCausalLM),
    "beam": (beam_config, BeamForCausalLM),
    "exaone_moe": (exaone_moe_config, ExaoneMoeForCausalLM),
    "dots1": (dots1_config, Dots1ForCausalLM),
    "solar_open": (solar_open_config, SolarOpenForCausalLM),
    "glm4": (glm4_config, Glm4ForCausalLM),
    "cohere": (cohere_config, CohereForCausalLM),
    "cohere2": (cohere2_config, Cohere2ForCausalLM),
    "deepseek_v2": (deepseek_v2_config, DeepseekV2ForCausalLM),
    "deepseek_v2_lite": (deepseek_v2_lite_config, DeepseekV2ForCausalLM),
    "llama4": (llama4_config, Llama4ForCausalLM),
    "qwen2_5_vl": (qwen2_5_vl_config, Qwen2_5_VLForConditionalGeneration),
    "qwen2_vl": (qwen2_vl_config, Qwen2VLForConditionalGeneration),
    "qwen3_vl": (qwen3_vl_config, Qwen3VLForConditionalGeneration),
    "llava": (llava_config, LlavaForConditionalGeneration),
    "llava_next": (llava_next_config, LlavaNextForConditionalGeneration),
    "emu3": (emu3_config, Emu3ForConditionalGeneration),
    "aria": (aria_config, AriaForConditionalGeneration),
    "mllama": (mllama_config, MllamaForConditionalGeneration),
    "phi4_multimodal": (phi4_multimodal_config, Phi4MultimodalForCausalLM),
    "apertus1p5_text": (apertus1p5_config, Apertus1p5TextForCausalLM),
    "ernie4_5_moe": (ernie4_5_moe_config, Ernie4_5_MoeForCausalLM),
    "phimoe": (phimoe_config, PhimoeForCausalLM),
    "dbrx": (dbrx_config, DbrxForCausalLM),
}


# --------------------------------------------------------------------------------------------
# deterministic randomisation of every parameter
# --------------------------------------------------------------------------------------------

def param_std(name, shape, config):
    """Standard deviation (or None for 'norm weight': 1 + 0.1*N) for one parameter."""
    if name.startswith(("model.visual.", "model.vision_tower.", "model.multi_modal_projector.", "model.vqmodel.",
                        "model.embed_tokens_extend.", "model.vision_model.")) or \
            name == "model.image_newline":  # a vision tower, a projector, Emu3's VQ-VAE, Phi-4-multimodal's image and
        return 0.02  # audio embedders: never run on text-only prompts
    if name.endswith(("cross_attn_attn_gate", "cross_attn_mlp_gate")):  # Mllama's tanh gates of its cross-attention
        return 1.0  # layers (HF: zeros), which a text-only prompt skips
    if config.model_type == "aria" and name.endswith(("experts.gate_up_proj", "experts.down_proj")):
        return 1.0 / math.sqrt(shape[1])  # Aria's experts [E, H, 2I] and [E, I, H], used as x @ W: fan-in is dim 1
    if config.model_type == "rwkv":
        if name.endswith(("ln1.weight", "ln2.weight", "pre_ln.weight", "ln_out.weight")):  # LayerNorms
            return None
        if name.endswith(("time_decay", "time_first")):  # decay -exp(N(0, 1)) per token, bonus N(0, 1)
            return 1.0
        if ".time_mix_" in name:  # token-shift factors: both the token and its predecessor matter
            return 0.5
        if name == "rwkv.embeddings.weight":  # tied: the head too
            return 2.0 / math.sqrt(shape[1]) if config.tie_word_embeddings else 0.5
        if name == "head.weight":
            return 2.0 / math.sqrt(shape[1])
    if name.endswith("linear_attn.norm.weight"):  # Qwen3-Next's gated norm, applied as w
        return None
    if config.model_type in ("bert", "roberta", "ernie", "megatron-bert", "roberta-prelayernorm"):
        if name.endswith(("LayerNorm.weight", "layer_norm.weight", "ln.weight")):
            return None
        if name.endswith("word_embeddings.weight"):  # tied (BERT, ERNIE): the head too
            return 2.0 / math.sqrt(shape[1]) if config.tie_word_embeddings else 0.5
        if name.endswith(("position_embeddings.weight", "token_type_embeddings.weight", "task_type_embeddings.weight")):
            return 0.5
    if config.model_type == "ergo":
        if name.endswith("residual_gate.weight"):  # sigmoid / softplus of it per dimension: spread both ways
            return 1.0
        if name.endswith(("experts.up_proj", "experts.down_proj")):  # [E, in, out], used as x @ W: fan-in dim 1
            return 1.0 / math.sqrt(shape[1])
        if name == "model.embed_tokens.weight":  # never tied (ErgoConfig has no tie_word_embeddings)
            return 0.5
    if name.endswith("norm.weight") and config.model_type in ("gemma3_text", "gemma2", "gemma", "nemotron",
                                                                             "vaultgemma", "qwen3_next",
                                                                             "recurrent_gemma",
                                                                             "qwen3_5_text", "qwen3_5_moe"):
        return 0.3  # Gemma and Nemotron apply 1 + w: w itself is the offset, N(0, 0.3) so that the 1 matters
    if config.model_type == "gemma3n_text":
        if name.endswith("altup.correct_output_scale"):  # HF: zeros, which would silence the per-layer inputs
            return None
        if name.endswith("altup.modality_router.weight"):  # reads rms(x) / H: its tanh's input ~ N(0, 1/16)
            return 0.25 * math.sqrt(shape[1])  # (sqrt(H) saturates it: transformers' f32 then 2.2e-4 off its f64)
    if config.model_type in ("gemma4_text", "gemma4_unified_text"):
        if name.endswith(("router.scale", "router.per_expert_scale")):  # Gemma 4's router scales (HF: ones)
            return None
        if name.endswith(("experts.gate_up_proj", "experts.down_proj")):  # [E, out, in], used as x @ W[e].T
            return 1.0 / math.sqrt(shape[2])
    if name.endswith(("norm_1.weight", "norm_2.weight", "norm_f.weight")):  # DBRX's LayerNorms
        return None
    if name.endswith("ffn.experts.mlp.w2"):  # DBRX [E * I, H], used as x @ w2: fan-in is I
        return 1.0 / math.sqrt(config.ffn_config.ffn_hidden_size)
    if name.endswith(("post_norm1.weight", "post_norm2.weight")):  # HyperCLOVA X's Peri-LN output norms
        return None
    if config.model_type == "longcat_flash" and name.endswith(("layernorm.0.weight", "layernorm.1.weight")):
        return None
    if name.endswith("norm.weight") or ".norms." in name:  # input/post_attention/final, q/k, MLA latent norms;
        return None  # StableLM 2's per-head q/k LayerNorm modules (q_layernorm.norms.{h}.weight)
    if config.model_type == "opt" and name.endswith("embed_tokens.weight"):  # tied (the default): the head too
        return 2.0 / math.sqrt(shape[1]) if config.tie_word_embeddings else 0.5
    if config.model_type == "biogpt" and name.endswith("embed_tokens.weight"):  # tied; x sqrt(H) in the stream
        return 1.0 / math.sqrt(shape[1])
    if config.model_type == "xglm" and name.endswith("embed_tokens.weight"):  # tied; x sqrt(H) beside sin / cos
        return 0.5 / math.sqrt(shape[1])
    if config.model_type == "openai-gpt":  # Conv1D [in, out] used as x @ W: fan-in the first dim; post-norm
        if name.endswith(("ln_1.weight", "ln_2.weight")):
            return None
        if name.endswith(".bias"):
            return 0.05
        if name.endswith("tokens_embed.weight"):  # tied: the head too, after ln_2 (no final norm)
            return 2.0 / math.sqrt(shape[1])
        if name.endswith("positions_embed.weight"):
            return 0.5
        return 1.0 / math.sqrt(shape[0])
    if config.model_type == "gpt_neox_japanese" and name.endswith("embed_in.weight"):  # tied: the head too
        return 2.0 / math.sqrt(shape[1])
    if config.model_type == "ctrl":
        if name.endswith(("layernorm1.weight", "layernorm2.weight", "transformer.layernorm.weight")):
            return None
        if name.endswith("transformer.w.weight"):  # tied; x sqrt(H) beside sin / cos in the stream
            return 1.0 / math.sqrt(shape[1])
    if config.model_type == "biogpt" and name.endswith("embed_positions.weight"):
        return 0.5
    if config.model_type == "opt" and name.endswith("embed_positions.weight"):
        return 0.5
    if config.model_type == "falcon" and name.endswith(("ln_f.weight", "ln_attn.weight", "ln_mlp.weight")):
        return None  # Falcon's LayerNorms: ln_f, new_decoder_architecture's ln_attn / ln_mlp
    if config.model_type in ("falcon", "bloom") and name.endswith("word_embeddings.weight"):  # tied: the head too
        return 2.0 / math.sqrt(shape[1]) if config.tie_word_embeddings else 0.5
    if config.model_type == "bloom" and name.endswith("ln_f.weight"):  # BLOOM's final LayerNorm
        return None
    if config.model_type == "mpt" and name.endswith("wte.weight"):  # MPT's embedding, tied: the head too
        return 2.0 / math.sqrt(shape[1])
    if config.model_type in ("gpt2", "gpt_bigcode", "gptj", "gpt_neo", "codegen"):  # GPT-2's: ln_1/ln_2/ln_f, wte, wpe
        if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
            return None
        if name.endswith(".bias"):
            return 0.05
        if name.endswith("wte.weight"):
            return 2.0 / math.sqrt(shape[1]) if config.tie_word_embeddings else 0.5
        if name.endswith("wpe.weight"):
            return 0.5
        if config.model_type in ("gpt_bigcode", "gptj", "gpt_neo", "codegen"):  # nn.Linear [out, in]; own lm_head
            return (2.0 if name == "lm_head.weight" else 1.0) / math.sqrt(shape[1])
        return 1.0 / math.sqrt(shape[0])  # GPT-2's Conv1D [in, out], used as x @ W: fan-in is the first dim
    if name.endswith(("conv.conv.weight", "linear_attn.conv1d.weight")):  # depthwise taps [C, 1, L]: fan-in L
        return 1.0 / math.sqrt(shape[2])
    if config.model_type == "recurrent_gemma":
        if name.endswith("conv_1d.weight"):  # depthwise taps [W, 1, L]: fan-in L
            return 1.0 / math.sqrt(shape[2])
        if name.endswith("rg_lru.recurrent_param"):  # shifted by -3 in randomise: a from 0.1 to 0.99 per token
            return 1.5
        if name.endswith("_gate_weight"):  # [nH, bw, bw], used as x @ W per block: fan-in dim 1
            return 1.0 / math.sqrt(shape[1])
    if name.endswith("linear_attn.A_log"):  # Qwen3-Next: A = exp(A_log), shifted by -2 in randomise (mild decay)
        return 0.5
    if config.model_type == "kimi_linear" and name.endswith("self_attn.conv1d.weight"):  # q | k | v taps [3V, 1, L]
        return 1.0 / math.sqrt(shape[2])
    if name.endswith(("forget_gate.A_log", "forget_gate.dt_bias")):  # Kimi-Linear: A_log shifted by -2 as above
        return 0.5
    if name.endswith(("mamba.conv1d.weight", "mixer.conv1d.weight")):  # Mamba2's depthwise taps [C, 1, L]: fan-in L
        return 1.0 / math.sqrt(shape[2])
    if name.endswith(("mamba.x_proj_weight", "mamba.dt_proj_weight")):  # Zamba's per head [nh, out, in]: fan-in last
        return 1.0 / math.sqrt(shape[2])
    if name.endswith(("mamba.A_log", "mamba.D", "mamba.dt_bias", "mixer.A_log", "mixer.D", "mixer.dt_bias")):
        # Mamba2: A = -exp(A_log) spread around -1, dt = softplus(dt + dt_bias) spread over (0, 3) (some clamped),
        # D skips large enough to matter
        return 1.0
    if name.endswith("sinks"):
        return 1.0
    if config.model_type == "hy_v4" and name.endswith(("hc.base", "hc.scale", "hc_base", "hc_scale")):
        return 1.0  # the hyper-connections' sigmoid arguments: spread both ways (HF: scale 0.01, base -log(n - 1))
    if name.endswith(("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")):  # DiffLlama: lambda = exp(q1.k1) - ...
        return 0.3
    if name.endswith(("act_fn.alpha_p", "act_fn.alpha_n")):  # Apertus's xIELU: softplus'd scalars, one per layer
        return None
    if name.endswith("self_attn.gate_bias") and config.model_type == "beam":  # a gate bias per head: spread it
        return 1.0
    if name.endswith("mlp.expert_bias") and config.model_type == "afmoe":  # added to sigmoid scores: moves choices
        return 0.3
    if name.endswith("moe_statics.e_score_correction_bias"):  # ERNIE 4.5 MoE: added to probabilities ~1/E
        return 0.2
    if name.endswith("gate.e_score_correction_bias") and config.model_type == "laguna":  # a parameter there, added
        return 0.3  # to sigmoid scores: moves choices
    if name.endswith(".bias") or name.endswith("_bias"):
        return 0.05
    if name in ("model.embed_tokens.weight", "model.language_model.embed_tokens.weight", "model.embeddings.weight",
                "backbone.embeddings.weight", "model.text_model.embed_tokens.weight"):
        # tied (qwen3): also the lm_head, so scale like it (MllamaConfig has no such key: never tied)
        return 2.0 / math.sqrt(shape[1]) if getattr(config, "tie_word_embeddings", False) else 0.5
    if name == "lm_head.weight":
        return 2.0 / math.sqrt(shape[1])
    if name.endswith(("experts.gate_up_proj", "experts.down_proj")) and config.model_type in (
            "qwen3_moe", "qwen2_moe", "mixtral", "deepseek_v2", "olmoe", "granitemoe", "granitemoeshared", "granitemoe_swa", "flint", "hy_v3",
            "cohere2_moe",
            "granitemoehybrid",
            "glm4_moe", "ernie4_5_moe", "sarvam_moe", "param2moe", "minicpm5_moe", "kolibri1",
            "flex_olmo", "dots1", "hunyuan_v1_moe", "minimax_m2", "solar_open",
            "phimoe", "qwen3_next", "lfm2_moe", "longcat_flash", "kimi_linear", "beam", "minimax", "hy_v4"):
        # [E, 2I, H] (gate rows, then up rows) and [E, H, I], used as x @ W.T: fan-in is the last dim
        return 1.0 / math.sqrt(shape[2])
    if name.endswith(("mixer.experts.up_proj", "mixer.experts.down_proj")):  # Nemotron-H [E, I, L], [E, L, I]
        return 1.0 / math.sqrt(shape[2])
    if name.endswith("mlp.experts.gate_up_proj"):  # GptOss [E, H, 2I], used as x @ W
        # large enough that the clamps (gate <= 7, |up| <= 7) are exercised
        return 0.75
    if name.endswith("mlp.experts.down_proj"):  # GptOss [E, I, H]
        return 0.25 / math.sqrt(shape[1])
    if config.model_type == "jetmoe" and name.endswith(("input_linear.weight", "output_linear.weight")):
        return 1.0 / math.sqrt(shape[2])  # JetMoE's experts [E, out, in], used as x @ W[e].T
    if name.endswith(("feed_forward.experts.gate_up_proj", "feed_forward.experts.down_proj")):
        # Llama 4 [E, H, 2I] and [E, I, H], used as x @ W: fan-in is dim 1
        return 1.0 / math.sqrt(shape[1])
    if len(shape) == 2:  # nn.Linear [out, in] and router [E, H]
        return 1.0 / math.sqrt(shape[1])
    raise ValueError(f"no init rule for {name} {tuple(shape)}")


def randomise(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied weights appear once
            std = param_std(name, p.shape, model.config)
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if std is None:
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(std * noise)
            if name.endswith(("linear_attn.A_log", "forget_gate.A_log")):  # exp(g) near 0.9 per token: far memory
                p.sub_(2.0)
            if name.endswith("rg_lru.recurrent_param"):  # RecurrentGemma: softplus of it small, far memory for some
                p.sub_(3.0)
        for name, b in model.named_buffers():  # saved buffers: the grouped routers' correction bias (HF: zeros)
            if name.endswith("e_score_correction_bias"):  # LongCat-Flash's beside softmax scores ~1/(E + Z)
                std = 0.1 if model.config.model_type == "longcat_flash" else 1.0
                b.copy_(std * torch.randn(b.shape, generator=gen, dtype=torch.float32))
            if name.endswith("feed_forward.expert_bias"):  # LFM2-MoE's (HF: zeros), added to sigmoid scores
                b.copy_(0.2 * torch.randn(b.shape, generator=gen, dtype=torch.float32))
            if name.endswith("layer_scalar"):  # Gemma 4's (HF: 1): each layer's output times it
                b.copy_(1.0 + 0.3 * torch.randn(b.shape, generator=gen, dtype=torch.float32))
            if name.endswith("act_fn.beta"):  # Apertus's xIELU beta (HF: 0.5 in every layer)
                b.copy_(0.5 + 0.2 * torch.randn(b.shape, generator=gen, dtype=torch.float32))
            if name.endswith("act_fn.eps"):  # and its eps (HF: -1e-6): large enough to matter near 0
                b.copy_(-0.05 * torch.rand(b.shape, generator=gen, dtype=torch.float32))


def build(family, seed):
    make_cfg, cls = FAMILIES[family]
    cfg = make_cfg()
    torch.manual_seed(seed)
    model = cls._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    randomise(model, seed)
    model.eval()
    assert model.config._attn_implementation == "eager"
    assert all(p.dtype == torch.float32 for p in model.parameters())
    return model


# --------------------------------------------------------------------------------------------
# computation
# --------------------------------------------------------------------------------------------

def prompts(seed):
    gen = torch.Generator().manual_seed(seed + 1)
    return [torch.randint(0, VOCAB, (n,), generator=gen).tolist() for n in PROMPT_LENGTHS]


@torch.no_grad()
def forward_logits(model, ids):
    out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0].float().clone()  # [T, V]


@torch.no_grad()
def greedy_nocache(model, ids, n):
    seq = list(ids)
    prompt_logits = None
    step_logits = []
    gaps = []
    for step in range(n):
        logits = forward_logits(model, seq)
        if step == 0:
            prompt_logits = logits
        last = logits[-1]
        step_logits.append(last)
        top2 = torch.topk(last, 2).values
        gaps.append(float(top2[0] - top2[1]))
        seq.append(int(torch.argmax(last)))
    return prompt_logits, seq[len(ids):], torch.stack(step_logits), gaps


@torch.no_grad()
def greedy_generate(model, ids, n):
    # RoBERTa's forward numbers its positions from pad_token_id + 1, but generate() passes 0-based position_ids
    # (another model): give it the forward's, which kvcache runs
    extra = {}
    if model.config.model_type in ("roberta", "roberta-prelayernorm"):
        extra["position_ids"] = torch.arange(len(ids)).unsqueeze(0) + model.config.pad_token_id + 1
    out = model.generate(
        torch.tensor([ids], dtype=torch.long),
        **extra,
        do_sample=False,
        max_new_tokens=n,
        min_new_tokens=n,
        num_beams=1,
        pad_token_id=0,
        eos_token_id=None,
        output_logits=True,
        return_dict_in_generate=True,
    )
    new_ids = out.sequences[0, len(ids):].tolist()
    logits = torch.stack([l[0].float() for l in out.logits])
    return new_ids, logits


def first_row_block(o):
    """[T, H] of a layer's output [B, T, H] (Gemma 3n's [K, B, T, H]: copy 0's)."""
    t = o[0]
    return (t[0] if t.dim() == 3 else t).detach().clone()


@torch.no_grad()
def layer_outputs(model, ids):
    """Residual stream: embedding output, then the output of every decoder layer (before the
    final norm; Gemma 3n: its AltUp copy 0), for one prompt."""
    captured = []
    base = model.model if hasattr(model, "model") else model.base_model  # GPT-NeoX: model.gpt_neox
    base = getattr(base, "language_model", base)  # Qwen-VL: the text model inside the multimodal one
    base = getattr(base, "text_model", base)  # Emu3's
    hooks = [base.get_input_embeddings().register_forward_hook(
        lambda m, i, o: captured.append(o[0].detach().clone()))]
    layers = getattr(base, "layers", None) or getattr(base, "h", None) or getattr(base, "blocks", None)  # GPT-2, DBRX
    layers = layers or getattr(getattr(base, "encoder", None), "layer", None)  # BERT's encoder.layer
    for layer in layers or base.decoder.layers:  # OPT
        hooks.append(layer.register_forward_hook(
            lambda m, i, o: captured.append(first_row_block(o[0] if isinstance(o, tuple) else o))))
    forward_logits(model, ids)
    for h in hooks:
        h.remove()
    return captured


@torch.no_grad()
def hy_v4_index_tie_gap(model, seqs):
    """Smallest gap between the k-th and (k + 1)-th largest visible indexer scores (k = index_topk) over every query
    of the sequences and every full indexer layer: above 0, torch.topk's pick has no exact tie to break. The scores as
    HYV4Indexer computes them (its forward returns only the indices)."""
    gaps = []
    k = model.config.index_topk

    def hook(mod, args, kwargs, out):
        x, q_resid, (cos, sin), mask = args[0], args[1], args[2], args[3]
        b, t, _ = x.shape
        q = mod.wq_b(q_resid).view(b, t, mod.n_heads, mod.head_dim)
        q_pass, q_rot = torch.split(q, [mod.head_dim - mod.qk_rope_head_dim, mod.qk_rope_head_dim], dim=-1)
        key = mod.k_norm(mod.wk(x)).unsqueeze(2)
        k_pass, k_rot = torch.split(key, [mod.head_dim - mod.qk_rope_head_dim, mod.qk_rope_head_dim], dim=-1)
        q_rot, k_rot = hy_v4_rope(q_rot, k_rot, cos, sin)
        q = torch.cat([q_pass, q_rot], dim=-1)
        key = torch.cat([k_pass, k_rot], dim=-1).squeeze(2)
        sc = torch.relu(torch.matmul(q.float(), key.transpose(-1, -2).float().unsqueeze(1)))
        w = mod.weights_proj(x).float() * mod.n_heads ** -0.5 * mod.softmax_scale
        sc = torch.matmul(w.unsqueeze(-2), sc).squeeze(-2)[0]  # [T, T]
        for i in range(t):
            if i + 1 > k:
                top = torch.sort(sc[i, : i + 1], descending=True).values
                gaps.append(float(top[k - 1] - top[k]))

    import transformers.models.hy_v4.modeling_hy_v4 as hy
    hy_v4_rope = functools.partial(hy.apply_rotary_pos_emb_interleave, unsqueeze_dim=2)
    hooks = [layer.self_attn.indexer.register_forward_hook(hook, with_kwargs=True)
             for layer in model.model.layers if layer.self_attn.indexer is not None]
    for ids in seqs:
        forward_logits(model, ids)
    for h in hooks:
        h.remove()
    return min(gaps)


@torch.no_grad()
def gptoss_clamp_stats(model, all_ids):
    """Fraction of (token, selected expert, lane) gate values above 7 and |up| above 7."""
    stats = {"gate_gt_limit": 0, "up_abs_gt_limit": 0, "total": 0}
    orig = {}

    def wrap(experts):
        f = experts._apply_gate

        def g(gate_up):
            gate, up = gate_up[..., ::2], gate_up[..., 1::2]
            stats["gate_gt_limit"] += int((gate > experts.limit).sum())
            stats["up_abs_gt_limit"] += int((up.abs() > experts.limit).sum())
            stats["total"] += gate.numel()
            return f(gate_up)
        return f, g

    for layer in model.model.layers:
        f, g = wrap(layer.mlp.experts)
        orig[layer] = f
        layer.mlp.experts._apply_gate = g
    for ids in all_ids:
        forward_logits(model, ids)
    for layer, f in orig.items():
        layer.mlp.experts._apply_gate = f
    return stats


def min_hooked_gap(model, all_ids, modules, gap):
    """The smallest gap(module, output) over every forward of `modules` while the prompts run."""
    gaps = []
    hs = [mod.register_forward_hook(lambda m, inp, out: gaps.append(gap(m, out))) for mod in modules]
    for ids in all_ids:
        forward_logits(model, ids)
    for h in hs:
        h.remove()
    return min(gaps)


def kth_gap(values, k):
    """The smallest gap, over the rows of values [T, E], between the k-th and the (k+1)-th largest entry."""
    top = torch.topk(values.float(), k + 1, dim=-1).values
    return float((top[:, -2] - top[:, -1]).min())


@torch.no_grad()
def router_margin(model, all_ids):
    """Smallest gap, over every token of every prompt and every MoE layer, between the k-th and the
    (k+1)-th largest router probability: how far the top-k choice is from a tie."""
    gates = [layer.mlp.gate for layer in model.model.layers
             if hasattr(layer.mlp, "gate") and hasattr(layer.mlp.gate, "top_k")]
    return min_hooked_gap(model, all_ids, gates, lambda m, out: kth_gap(torch.softmax(out[0].float(), dim=-1), m.top_k))


@torch.no_grad()
def ernie_router_margin(model, all_ids):
    """router_margin for ERNIE 4.5 MoE, which chooses by probability plus its correction bias."""
    gates = [layer.mlp.gate for layer in model.model.layers if hasattr(layer.mlp, "gate")]
    return min_hooked_gap(model, all_ids, gates, lambda m, out: kth_gap(
        m.moe_statics(torch.softmax(out[0].float(), dim=-1)), m.top_k))


@torch.no_grad()
def granite_router_margin(model, all_ids):
    """router_margin for Granite MoE, whose router takes the k largest logits: the smallest gap between the k-th
    and the (k+1)-th largest logit."""
    routers = [layer.block_sparse_moe.router for layer in model.model.layers]
    return min_hooked_gap(model, all_ids, routers, lambda m, out: kth_gap(out[0], m.top_k))


@torch.no_grad()
def aria_router_margin(model, all_ids):
    """router_margin for Aria, whose router takes the k largest logits (its output's first entry, [T, E])."""
    routers = [layer.mlp.router for layer in model.model.language_model.layers]
    return min_hooked_gap(model, all_ids, routers, lambda m, out: kth_gap(out[0], m.top_k))


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------

def fmt(x):
    # shortest decimal string that round-trips to the same float32 (numpy's float32 str)
    s = str(np.float32(x))
    assert np.isfinite(np.float32(x)), s
    assert np.float32(s) == np.float32(x)
    return s


def rows(t):
    t = t.detach().cpu().numpy().astype(np.float32)
    if t.ndim == 1:
        return "[" + ",".join(fmt(v) for v in t) + "]"
    return "[" + ",\n".join(rows(torch.from_numpy(r)) for r in t) + "]"


def write_expected(path, header, prompt_entries):
    """Writes JSON by hand so that every float is the shortest float32 round-trip string."""
    parts = ["{"]
    for k, v in header.items():
        parts.append(f"{json.dumps(k)}: {json.dumps(v)},")
    parts.append('"prompts": [')
    for i, e in enumerate(prompt_entries):
        items = []
        for k, v in e.items():
            if isinstance(v, torch.Tensor):
                items.append(f"{json.dumps(k)}: {rows(v)}")
            elif isinstance(v, list) and v and isinstance(v[0], torch.Tensor):
                items.append(f"{json.dumps(k)}: [" + ",\n".join(rows(x) for x in v) + "]")
            else:
                items.append(f"{json.dumps(k)}: {json.dumps(v)}")
        parts.append("{" + ",\n".join(items) + "}" + ("," if i + 1 < len(prompt_entries) else ""))
    parts.append("]}")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")
    json.load(open(path))  # must parse


def write_tensor_list(model_dir):
    lines = []
    for fn in sorted(os.listdir(model_dir)):
        if not fn.endswith(".safetensors"):
            continue
        with safe_open(os.path.join(model_dir, fn), framework="pt") as f:
            for k in sorted(f.keys()):
                sl = f.get_slice(k)
                lines.append(f"{k}\t{sl.get_dtype()}\t{list(sl.get_shape())}")
    with open(os.path.join(model_dir, "tensors.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def dir_size(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def versions():
    return {"transformers_version": transformers.__version__, "torch_version": torch.__version__}


# --------------------------------------------------------------------------------------------
# per family
# --------------------------------------------------------------------------------------------

def make_family(family, out_root, seed):
    out = os.path.join(out_root, family)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    model = build(family, seed)
    model.save_pretrained(out, safe_serialization=True)
    # save_pretrained may write a generation_config.json: keep only config + weights
    for fn in os.listdir(out):
        if fn not in ("config.json", "model.safetensors"):
            os.remove(os.path.join(out, fn))
    tensors = write_tensor_list(out)

    ps = prompts(seed)
    if family == "mllama":
        ps = mllama_prompts(ps)
    entries = []
    summary = {"family": family, "max_abs_logit": 0.0, "min_top2_gap": float("inf"),
               "generate_agrees": True, "generate_max_abs_logit_diff": 0.0}
    for pi, ids in enumerate(ps):
        prompt_logits, gen_ids, step_logits, gaps = greedy_nocache(model, ids, NEW_TOKENS)
        g_ids, g_logits = greedy_generate(model, ids, NEW_TOKENS)
        agree = g_ids == gen_ids
        diff = float((g_logits - step_logits).abs().max()) if g_logits.shape == step_logits.shape else float("nan")
        summary["generate_agrees"] &= agree
        summary["generate_max_abs_logit_diff"] = max(summary["generate_max_abs_logit_diff"], diff)
        summary["max_abs_logit"] = max(summary["max_abs_logit"], float(prompt_logits.abs().max()),
                                       float(step_logits.abs().max()))
        summary["min_top2_gap"] = min(summary["min_top2_gap"], min(gaps))
        # step 0 is the prompt forward itself
        assert torch.equal(step_logits[0], prompt_logits[-1])
        entry = {
            "ids": ids,
            "prompt_logits": prompt_logits,
            "greedy_ids": gen_ids,
            "step_logits": step_logits,
            "step_top2_gap": [float(np.float32(g)) for g in gaps],
            "generate_matches": agree,
            "generate_ids": g_ids,
            "generate_max_abs_logit_diff": diff,
        }
        if pi == 0:
            entry["layer_outputs"] = layer_outputs(model, ids)
        if pi == 0 and family == "phi3_longrope":
            # the long factors' logits: transformers takes them only past original_max_position_embeddings,
            # where its frequencies are those of a config whose short factors are the long ones
            entry["long_factor_prompt_logits"] = with_config(model, rope_parameters={
                **model.config.rope_parameters, "short_factor": model.config.rope_parameters["long_factor"]})(ids)
        entries.append(entry)

    header = {"family": family, **versions(), "seed": seed,
              "num_new_tokens": NEW_TOKENS,  # the logits' width: Apertus 1.5's pruned head's
              "vocab_size": getattr(model.config.get_text_config(), "output_vocab_size", None)
              or model.config.get_text_config().vocab_size}
    write_expected(os.path.join(out, "expected.json"), header, entries)

    if family == "gpt_oss":
        summary["clamp"] = gptoss_clamp_stats(model, ps)
        summary["sensitivity_all_full_attention"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
    if family in ("qwen3_moe", "qwen2_moe", "mixtral", "olmoe", "flex_olmo", "hunyuan_v1_moe", "qwen3_next"):
        summary["router_topk_margin"] = router_margin(model, ps)
    if family == "aria":
        summary["router_topk_margin"] = aria_router_margin(model, ps)
    if family in ("granitemoe", "granitemoeshared"):
        summary["router_topk_margin"] = granite_router_margin(model, ps)
        for key in ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"):
            summary["sensitivity_" + key + "_1"] = sensitivity(model, ps[-1], **{key: 1.0})
    if family == "glm4_moe":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_full_rotary"] = sensitivity(
            model, ps[-1], rope_parameters={**model.config.rope_parameters, "partial_rotary_factor": 1.0})
        summary["sensitivity_norm_topk_prob_false"] = sensitivity(model, ps[-1], norm_topk_prob=False)
    if family == "lfm3":
        attns = [layer.self_attn for layer in model.model.layers if hasattr(layer, "self_attn")]
        summary["sensitivity_no_attention_gate"] = sensitivity_modules(model, ps[-1], attns, "g_proj", None)
        summary["sensitivity_full_rotary"] = sensitivity(
            model, ps[-1], rope_parameters={**model.config.rope_parameters, "full_attention": {
                "rope_type": "default", "rope_theta": 1000000.0}})
        summary["sensitivity_every_layer_full"] = sensitivity(
            model, ps[-1], layer_types=["conv", "full_attention", "conv", "full_attention"])
    if family == "lfm2_moe":
        moes = [layer.feed_forward for layer in model.model.layers if hasattr(layer.feed_forward, "expert_bias")]
        bias_of = {id(m.gate): m.expert_bias for m in moes}  # chosen by sigmoid score + bias
        summary["router_topk_margin"] = min_hooked_gap(
            model, ps, [m.gate for m in moes], lambda g, out: kth_gap(torch.sigmoid(out[0].float()) + bias_of[id(g)], 2))
        summary["sensitivity_norm_topk_prob_false"] = sensitivity(model, ps[-1], norm_topk_prob=False)
        summary["sensitivity_routed_scaling_factor_1"] = sensitivity(model, ps[-1], routed_scaling_factor=1.0)
    if family == "minimax_m2":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_full_rotary"] = sensitivity(
            model, ps[-1], rope_parameters={**model.config.rope_parameters, "partial_rotary_factor": 1.0})
    if family == "deepseek_v32":
        summary["sensitivity_index_topk_8"] = sensitivity(model, ps[-1], index_topk=8)
    if family == "hy_v4":
        summary["index_tie_gap"] = hy_v4_index_tie_gap(model, [e["ids"] + e["greedy_ids"][:-1] for e in entries])
        assert summary["index_tie_gap"] > 0.0, "hy_v4: an exact tie at the indexer's k-th score"
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_index_topk_8"] = sensitivity(model, ps[-1], index_topk=8)
        summary["sensitivity_hc_magnitude_2"] = sensitivity(model, ps[-1], hc_magnitude=2.0)
        summary["sensitivity_swiglu_limit_10"] = sensitivity(model, ps[-1], swiglu_limit=10.0)
    if family == "glm_moe_dsa":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_index_topk_8"] = sensitivity(model, ps[-1], index_topk=8)
    if family == "longcat_flash":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_routed_scaling_factor_1"] = sensitivity(model, ps[-1], routed_scaling_factor=1.0)
    if family == "beam":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_no_softcapping"] = sensitivity(model, ps[-1], final_logit_softcapping=None)
        summary["sensitivity_routed_scaling_factor_1"] = sensitivity(model, ps[-1], routed_scaling_factor=1.0)
    if family == "axk2":
        summary["sensitivity_index_topk_8"] = sensitivity(model, ps[-1], index_topk=8)
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_no_norm_gates"] = sensitivity_no_norm_gates(model, ps[-1])
    if family == "axk1":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_no_post_mlp_layernorm"] = sensitivity_no_post_mlp_norm(model, ps[-1])
    if family == "sarvam_mla":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_rope_interleave_false"] = sensitivity(model, ps[-1], rope_interleave=False)
    if family == "glm4_moe_lite":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_rope_interleave_false"] = sensitivity(model, ps[-1], rope_interleave=False)
    if family == "exaone_moe":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_window_64"] = sensitivity(model, ps[-1], sliding_window=64)
    if family == "mellum":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_all_full_attention"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
        rp = model.config.rope_parameters
        summary["sensitivity_one_rope"] = sensitivity(
            model, ps[-1], rope_parameters={**rp, "sliding_attention": dict(rp["full_attention"])})
    if family == "laguna":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        rp = model.config.rope_parameters
        summary["sensitivity_sliding_half_rotary"] = sensitivity(
            model, ps[-1], rope_parameters={**rp, "sliding_attention": {**rp["sliding_attention"],
                                                                         "partial_rotary_factor": 0.5}})
    if family == "mimo_v2_flash":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_value_scale_1"] = sensitivity(model, ps[-1], attention_value_scale=1.0)
    if family == "afmoe":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_mup_disabled"] = sensitivity(model, ps[-1], mup_enabled=False)
        summary["sensitivity_all_full_attention"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
        summary["sensitivity_route_scale_1"] = sensitivity(model, ps[-1], route_scale=1.0)
    if family == "solar_open":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
    if family in ("sarvam_moe", "param2moe"):
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_half_rotary"] = sensitivity(
            model, ps[-1], rope_parameters={**model.config.rope_parameters, "partial_rotary_factor": 0.5})
    if family == "minicpm5_moe":
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
    if family == "kolibri1":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_window_64"] = sensitivity(model, ps[-1], sliding_window=64)
    if family == "dots1":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_norm_topk_prob_true"] = sensitivity(model, ps[-1], norm_topk_prob=True)
        summary["sensitivity_no_sliding_window"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
    if family == "hunyuan_v1_dense":
        summary["sensitivity_no_alpha"] = sensitivity(
            model, ps[-1], rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    if family == "flex_olmo":
        summary["sensitivity_norm_topk_prob_true"] = sensitivity(model, ps[-1], norm_topk_prob=True)
    if family == "olmoe":
        summary["sensitivity_norm_topk_prob_true"] = sensitivity(model, ps[-1], norm_topk_prob=True)
        summary["sensitivity_no_clip_qkv"] = sensitivity(model, ps[-1], clip_qkv=None)
    if family == "qwen2_moe":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_sliding_window"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
    if family == "qwen3_moe":
        summary["sensitivity_norm_topk_prob_true"] = sensitivity(model, ps[-1], norm_topk_prob=True)
    if family == "mixtral":
        summary["sensitivity_window_64"] = sensitivity(model, ps[-1], sliding_window=64)
    if family in ("gemma3", "olmo3"):
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_sliding_window"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
        summary["sensitivity_sliding_rope_global"] = sensitivity(
            model, ps[-1], rope_parameters={**model.config.rope_parameters,
                                            "sliding_attention": model.config.rope_parameters["full_attention"]})
    if family == "codegen":  # RoPE on 4 of 8 channels against the whole head
        summary["sensitivity_rotary_dim_8"] = sensitivity(model, ps[-1], rotary_dim=8)
    if family == "gpt_neox_japanese":
        summary["sensitivity_full_rotary"] = sensitivity(
            model, ps[-1], rope_parameters={**model.config.rope_parameters, "partial_rotary_factor": 1.0})
    if family == "biogpt":
        summary["sensitivity_no_embed_scale"] = sensitivity(model, ps[-1], scale_embedding=False)
    if family == "gpt_neo":
        n = model.config.num_layers
        summary["sensitivity_all_global"] = sensitivity(model, ps[-1], attention_layers=["global"] * n)
        summary["sensitivity_window_9"] = sensitivity(model, ps[-1], window_size=9)
    if family in ("gemma2", "vaultgemma"):
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_sliding_window"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
        summary["sensitivity_no_attn_softcap"] = sensitivity(model, ps[-1], attn_logit_softcapping=None)
        summary["sensitivity_no_final_softcap"] = sensitivity(model, ps[-1], final_logit_softcapping=None)
    if family == "granite":
        for key in ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"):
            summary["sensitivity_" + key + "_1"] = sensitivity(model, ps[-1], **{key: 1.0})
    if family == "smollm3":
        summary["sensitivity_rope_everywhere"] = sensitivity(model, ps[-1], no_rope_layers=[1, 1, 1, 1])
        summary["sensitivity_interval_rule"] = sensitivity(model, ps[-1], no_rope_layers=[1, 1, 1, 0])
    if family == "phi3":
        summary["sensitivity_window_64"] = sensitivity(model, ps[-1], sliding_window=64)
    if family == "phi3_longrope":
        rp = model.config.rope_parameters
        summary["sensitivity_full_rotary"] = sensitivity(
            model, ps[-1], partial_rotary_factor=1.0,
            rope_parameters={**rp, "partial_rotary_factor": 1.0, "short_factor": rp["short_factor"] + [1.0] * 2,
                             "long_factor": rp["long_factor"] + [1.0] * 2})
        summary["sensitivity_long_factors"] = sensitivity(
            model, ps[-1], rope_parameters={**rp, "short_factor": rp["long_factor"]})
    if family in ("glm", "glm4"):
        summary["sensitivity_full_rotary"] = sensitivity(
            model, ps[-1], rope_parameters={**model.config.rope_parameters, "partial_rotary_factor": 1.0})
    if family in ("cohere", "cohere2"):
        summary["sensitivity_logit_scale_1"] = sensitivity(model, ps[-1], logit_scale=1.0)
    if family == "cohere2":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_sliding_window"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
    if family == "exaone4":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_sliding_window"] = sensitivity(
            model, ps[-1], layer_types=["full_attention"] * model.config.num_hidden_layers)
    if family == "ministral":
        summary["sensitivity_every_layer_sliding"] = sensitivity(
            model, ps[-1], layer_types=["sliding_attention"] * model.config.num_hidden_layers)
    if family == "ministral3":
        rp = model.config.rope_parameters
        summary["sensitivity_llama_4_scaling_beta_0"] = sensitivity(
            model, ps[-1], rope_parameters={**rp, "llama_4_scaling_beta": 0.0})
        summary["sensitivity_default_rope"] = sensitivity(
            model, ps[-1], rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "llama_4_scaling_beta": 0.1,
                                            "original_max_position_embeddings": 16})
    if family == "starcoder2":
        summary["sensitivity_window_64"] = sensitivity(model, ps[-1], sliding_window=64)
    if family == "deepseek_v3":
        summary["sensitivity_rope_interleave_false"] = sensitivity(model, ps[-1], rope_interleave=False)
    if family == "deepseek_v2":
        summary["sensitivity_topk_method_greedy"] = sensitivity(model, ps[-1], topk_method="greedy")
    if family == "deepseek_v2_lite":
        summary["sensitivity_routed_scaling_factor_2"] = sensitivity(model, ps[-1], routed_scaling_factor=2.0)
    if family == "ernie4_5_moe":
        summary["router_topk_margin"] = ernie_router_margin(model, ps)
        summary["sensitivity_no_correction_bias"] = sensitivity_no_correction_bias(model, ps[-1])
        summary["sensitivity_moe_norm_min_2"] = sensitivity(model, ps[-1], moe_norm_min=2.0)
    if family == "phimoe":
        summary["sensitivity_router_jitter_noise_0.01"] = sensitivity(model, ps[-1], router_jitter_noise=0.01)
        rp = model.config.rope_parameters
        summary["sensitivity_long_factors"] = sensitivity(
            model, ps[-1], rope_parameters={**rp, "short_factor": rp["long_factor"]})
        summary["sensitivity_mscale_1"] = sensitivity(
            model, ps[-1], rope_parameters={**rp, "short_mscale": 1.0, "long_mscale": 1.0})
        routers = [layer.mlp.router for layer in model.model.layers]
        summary["router_top3_margin"] = min_hooked_gap(  # SparseMixer's two argmaxes: gaps of the 3 largest logits
            model, ps, routers, lambda m, out: min(kth_gap(out[0], 1), kth_gap(out[0], 2)))
    if family == "dbrx":
        routers = [layer.ffn.router for layer in model.transformer.blocks]
        summary["router_topk_margin"] = min_hooked_gap(
            model, ps, routers, lambda m, out: kth_gap(torch.softmax(out.float(), dim=-1), 2))
        summary["sensitivity_clip_qkv_1e30"] = sensitivity_modules(  # null: transformers' clamp fails
            model, ps[-1], [b.norm_attn_norm.attn for b in model.transformer.blocks], "clip_qkv", 1e30)
        summary["sensitivity_no_normalize_expert_weights"] = sensitivity_modules(
            model, ps[-1], [b.ffn for b in model.transformer.blocks], "moe_normalize_expert_weights", None)
    if family == "llama4":
        summary["layer_types"] = model.config.layer_types
        summary["sensitivity_no_chunks"] = sensitivity(model, ps[-1], attention_chunk_size=None,
                                                       layer_types=["full_attention"] * 4)
        summary["sensitivity_no_temperature_tuning"] = sensitivity(model, ps[-1], attn_temperature_tuning=False)
        summary["sensitivity_no_qk_norm"] = sensitivity(model, ps[-1], use_qk_norm=False)
        summary["sensitivity_rope_everywhere"] = sensitivity(model, ps[-1], no_rope_layers=[1, 1, 1, 1],
                                                             layer_types=["chunked_attention"] * 4)
        summary["router_top1_margin"] = llama4_router_margin(model, ps)
    summary["reload_max_abs_logit_diff"] = verify(family, out)
    summary["bytes"] = {fn: os.path.getsize(os.path.join(out, fn)) for fn in sorted(os.listdir(out))}
    summary["dir_bytes"] = dir_size(out)
    summary["num_tensors"] = len(tensors)

    if family == "gemma3":
        summary["multimodal"] = make_gemma3_multimodal(model, out_root, ps)
    if family == "gemma4":
        summary["multimodal"] = make_gemma4_multimodal(model, out_root, ps)
    if family == "gemma4_unified":
        summary["multimodal"] = make_gemma4_unified_multimodal(model, out_root, ps)
    if family == "gemma3n":
        summary["multimodal"] = make_gemma3n_multimodal(model, out_root)
    if family == "llama4":
        summary["multimodal"] = make_llama4_multimodal(model, out_root, ps)
    if family == "ministral3":
        summary["multimodal"] = make_ministral3_multimodal(model, out_root, ps)
    if family in ("qwen2_5_vl", "qwen2_vl"):
        summary["plain_rope_qwen2_equal"] = qwen_vl_as_plain(model, ps)
        summary["flat"] = make_qwen_vl_flat(family, model, out_root, ps)
    if family == "qwen3_vl":
        summary["plain_rope_qwen3_equal"] = qwen_vl_as_plain(model, ps)
    if family == "qwen3":
        summary["dtype_variants"] = {}
        for dt_name, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
            summary["dtype_variants"][dt_name] = make_dtype_variant(model, out_root, dt_name, dt, ps, seed)
    return summary


def make_dtype_variant(model32, out_root, dt_name, dtype, ps, seed):
    """qwen3/<dt_name>/: config.json + model.safetensors with the qwen3 weights rounded to dtype,
    and expected.json with the float32 logits of the rounded weights (the 23-token prompt only)."""
    out = os.path.join(out_root, "qwen3", dt_name)
    os.makedirs(out)
    m = build("qwen3", seed)
    m.load_state_dict(model32.state_dict())
    m = m.to(dtype)
    m.save_pretrained(out, safe_serialization=True)
    for fn in os.listdir(out):
        if fn not in ("config.json", "model.safetensors"):
            os.remove(os.path.join(out, fn))
    write_tensor_list(out)
    # reference: the rounded weights widened back to float32, computed in float32 by a fresh
    # float32 model (m.to() would also have rounded the rotary inv_freq buffers)
    m32 = build("qwen3", seed)
    m32.load_state_dict({k: v.to(torch.float32) for k, v in m.state_dict().items()})
    m32.eval()
    entries = []
    for ids in ps[1:2]:
        prompt_logits, gen_ids, step_logits, gaps = greedy_nocache(m32, ids, NEW_TOKENS)
        entries.append({"ids": ids, "prompt_logits": prompt_logits, "greedy_ids": gen_ids,
                        "step_logits": step_logits, "step_top2_gap": [float(np.float32(g)) for g in gaps]})
    header = {"family": "qwen3", **versions(), "seed": seed, "num_new_tokens": NEW_TOKENS,
              "vocab_size": m.config.vocab_size, "weights_dtype": dt_name,
              "compute_dtype": "float32 (weights widened exactly from " + dt_name + ")"}
    write_expected(os.path.join(out, "expected.json"), header, entries)
    # reload and check: from_pretrained in float32 widens the stored values
    re = FAMILIES["qwen3"][1].from_pretrained(out, attn_implementation="eager", dtype=torch.float32).eval()
    got = forward_logits(re, ps[1])
    want = torch.tensor(np.array(json.load(open(os.path.join(out, "expected.json")))["prompts"][0]["prompt_logits"],
                             dtype=np.float32))
    assert torch.equal(got, want), f"{dt_name} variant reload mismatch"
    with safe_open(os.path.join(out, "model.safetensors"), framework="pt") as f:
        dts = {f.get_slice(k).get_dtype() for k in f.keys()}
    return {"dir_bytes": dir_size(out), "stored_dtypes": sorted(dts)}


@torch.no_grad()
def make_gemma4_multimodal(text_model, out_root, ps):
    """gemma4/multimodal/: a Gemma4ForConditionalGeneration (the text model under model.language_model., a one-layer
    vision tower and its embedder beside it, no audio tower) whose language model holds the gemma4 oracle's weights;
    checked here to give the text model's logits bit for bit on every prompt."""
    vision = Gemma4VisionConfig(hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=1,
                                num_key_value_heads=1, head_dim=16, patch_size=4, position_embedding_size=64)
    cfg = Gemma4Config(text_config=text_model.config.to_dict(), vision_config=vision.to_dict(), audio_config=None,
                       tie_word_embeddings=True)
    return make_multimodal(text_model, os.path.join(out_root, "gemma4", "multimodal"), ps, cfg,
                           Gemma4ForConditionalGeneration)


@torch.no_grad()
def make_gemma4_unified_multimodal(text_model, out_root, ps):
    """gemma4_unified/multimodal/: a Gemma4UnifiedForConditionalGeneration (no vision or audio tower) whose
    language model holds the gemma4_unified oracle's weights, the head untied beside it; checked here to give the
    text model's logits bit for bit on every prompt."""
    cfg = Gemma4UnifiedConfig(text_config=text_model.config.to_dict(), vision_config=None, audio_config=None,
                              tie_word_embeddings=False)
    return make_multimodal(text_model, os.path.join(out_root, "gemma4_unified", "multimodal"), ps, cfg,
                           Gemma4UnifiedForConditionalGeneration)


@torch.no_grad()
def make_gemma3n_multimodal(text_model, out_root):
    """gemma3n/multimodal/: Gemma3nForConditionalGeneration's checkpoint layout holding the gemma3n oracle's weights
    (its text model under model.language_model., the config a Gemma3nConfig with them as text_config). Its vision
    tower needs timm, absent here, so the class is not built: the text weights are renamed and no tower is stored.
    Gemma3nModel embeds text ids below vision_config.vocab_offset (262,144) with the text model's own tables and
    runs the text model on them, so its logits are the text model's."""
    out = os.path.join(out_root, "gemma3n", "multimodal")
    os.makedirs(out)
    text = text_model.config.to_dict()
    cfg = {"model_type": "gemma3n", "architectures": ["Gemma3nForConditionalGeneration"], "text_config": text,
           "vision_config": {"model_type": "gemma3n_vision"}, "audio_config": {"model_type": "gemma3n_audio"},
           "tie_word_embeddings": True, "transformers_version": transformers.__version__}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    sd = {"model.language_model." + k[len("model."):]: v.contiguous() for k, v in text_model.state_dict().items()
          if k.startswith("model.")}
    save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    names = write_tensor_list(out)
    return {"dir_bytes": dir_size(out), "num_tensors": len(names)}


@torch.no_grad()
def make_gemma3_multimodal(text_model, out_root, ps):
    """gemma3/multimodal/: a Gemma3ForConditionalGeneration (transformers 5 layout: the text model under
    model.language_model., a one-layer SigLIP vision tower and the projector beside it) whose language
    model holds the gemma3 oracle's weights; checked here to give the text model's logits bit for bit
    on every prompt, so the runtime's logits on it must equal its logits on gemma3/."""
    vision = SiglipVisionConfig(hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=1,
                                image_size=28, patch_size=14)
    cfg = Gemma3Config(text_config=text_model.config.to_dict(), vision_config=vision.to_dict(),
                       mm_tokens_per_image=4, tie_word_embeddings=True)
    return make_multimodal(text_model, os.path.join(out_root, "gemma3", "multimodal"), ps, cfg,
                           Gemma3ForConditionalGeneration)


@torch.no_grad()
def make_ministral3_multimodal(text_model, out_root, ps):
    """ministral3/multimodal/: a Mistral3ForConditionalGeneration (Ministral 3's hub class: the text model under
    model.language_model., a one-layer Pixtral vision tower and the projector beside it) holding the ministral3
    oracle's weights, untied at the top level as the text model is (Mistral3Config ties by its own
    tie_word_embeddings, true by default); its logits equal the text model's bit for bit."""
    vision = PixtralVisionConfig(hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=1,
                                 image_size=28, patch_size=14, head_dim=16)
    cfg = Mistral3Config(text_config=text_model.config.to_dict(), vision_config=vision.to_dict(),
                         spatial_merge_size=1, tie_word_embeddings=False)
    return make_multimodal(text_model, os.path.join(out_root, "ministral3", "multimodal"), ps, cfg,
                           Mistral3ForConditionalGeneration)


@torch.no_grad()
def make_llama4_multimodal(text_model, out_root, ps):
    """llama4/multimodal/: a Llama4ForConditionalGeneration (the text model a Llama4ForCausalLM under
    language_model., as transformers 5.25 saves it; a one-layer vision tower and the projector beside it)
    holding the llama4 oracle's weights; its logits equal the text model's bit for bit."""
    vision = Llama4VisionConfig(hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=1,
                                image_size=28, patch_size=14, vision_output_dim=16, projector_input_dim=16,
                                projector_output_dim=16)
    cfg = Llama4Config(text_config=text_model.config.to_dict(), vision_config=vision.to_dict())
    return make_multimodal(text_model, os.path.join(out_root, "llama4", "multimodal"), ps, cfg,
                           Llama4ForConditionalGeneration,
                           load_text=lambda mm: mm.language_model.load_state_dict(text_model.state_dict()))


@torch.no_grad()
def llama4_router_margin(model, all_ids):
    """Smallest gap, over every token of every prompt and every MoE layer, between the largest and the second
    largest router logit (Llama 4 routes each token to its top-1 expert by logit)."""
    routers = [layer.feed_forward.router for layer in model.model.layers if hasattr(layer.feed_forward, "router")]
    return min_hooked_gap(model, all_ids, routers, lambda m, out: kth_gap(out[1], 1))


@torch.no_grad()
def make_multimodal(text_model, out, ps, cfg, cls, load_text=None):
    """out/: the multimodal model cls of cfg whose language model holds text_model's weights (the vision tower and
    projector at their seeded initialisation; load_text(mm) puts them in, default: under mm.model.language_model
    with the head beside), saved and reloaded; every prompt's logits must equal the text model's bit for bit."""
    os.makedirs(out)
    torch.manual_seed(SEED)
    mm = cls._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    if load_text is None:
        missing = mm.model.language_model.load_state_dict(text_model.model.state_dict())
        if not cfg.tie_word_embeddings:
            mm.lm_head.load_state_dict(text_model.lm_head.state_dict())
    else:
        missing = load_text(mm)
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    mm.eval()
    mm.save_pretrained(out, safe_serialization=True)
    for fn in os.listdir(out):
        if fn not in ("config.json", "model.safetensors"):
            os.remove(os.path.join(out, fn))
    names = write_tensor_list(out)
    mm = cls.from_pretrained(out, attn_implementation="eager", dtype=torch.float32).eval()
    for ids in ps:
        assert torch.equal(forward_logits(mm, ids), forward_logits(text_model, ids)), "multimodal logits differ"
    return {"dir_bytes": dir_size(out), "num_tensors": len(names),
            "text_prefix": sorted({n.split("embed_tokens")[0] for n in names if "embed_tokens" in n})}


@torch.no_grad()
def qwen_vl_as_plain(model, ps):
    """A Qwen2ForCausalLM (Qwen3-VL: Qwen3ForCausalLM) with plain RoPE at the same theta holding a Qwen-VL model's
    text weights gives its text-only logits bit for bit: the three position streams are equal, so the mrope sections
    (Qwen3-VL: interleaved) recombine the plain frequencies. Returns True (asserted)."""
    t = model.config.text_config
    common = dict(vocab_size=t.vocab_size, hidden_size=t.hidden_size, intermediate_size=t.intermediate_size,
                  num_hidden_layers=t.num_hidden_layers, num_attention_heads=t.num_attention_heads,
                  num_key_value_heads=t.num_key_value_heads, max_position_embeddings=t.max_position_embeddings,
                  rms_norm_eps=t.rms_norm_eps, tie_word_embeddings=model.config.tie_word_embeddings,
                  rope_parameters={"rope_type": "default", "rope_theta": t.rope_parameters["rope_theta"]})
    if model.config.model_type == "qwen3_vl":
        plain = Qwen3ForCausalLM._from_config(Qwen3Config(**common, head_dim=t.head_dim, attention_bias=t.attention_bias),
                                              attn_implementation="eager", dtype=torch.float32)
    else:
        plain = Qwen2ForCausalLM._from_config(Qwen2Config(**common), attn_implementation="eager", dtype=torch.float32)
    missing = plain.model.load_state_dict(model.model.language_model.state_dict())
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    plain.lm_head.load_state_dict(model.lm_head.state_dict())
    plain.eval()
    for ids in ps:
        assert torch.equal(forward_logits(plain, ids), forward_logits(model, ids)), "mrope differs from plain rope"
    return True


@torch.no_grad()
def make_qwen_vl_flat(family, model, out_root, ps):
    """family/flat/: the hub's earlier Qwen-VL config: every text key at the top level of config.json (no
    text_config; rope_scaling {"type": "mrope", ...}, rope_theta beside it), with the tensors under transformers 5's
    module names (model.language_model.*, model.visual.*, lm_head.weight; save_pretrained writes the hub's earlier
    model.* / visual.* instead, as the oracle itself holds them). transformers loads it into the same model: its
    logits equal the oracle's bit for bit on every prompt."""
    out = os.path.join(out_root, family, "flat")
    os.makedirs(out)
    full = model.config.to_dict()
    text = full.pop("text_config")
    rope = dict(text.pop("rope_parameters"))
    flat = {k: v for k, v in full.items() if k not in ("transformers_version",)}
    flat.update({k: v for k, v in text.items() if k not in ("model_type", "architectures", "dtype", "layer_types")})
    flat["model_type"] = family
    flat["architectures"] = [model.__class__.__name__]
    flat["rope_theta"] = rope.pop("rope_theta")
    rope.pop("rope_type", None)
    flat["rope_scaling"] = {"type": "mrope", **rope}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(flat, f, indent=2, sort_keys=True)
    tensors = {}
    for k, v in model.state_dict().items():
        if k == "lm_head.weight" and model.config.tie_word_embeddings:
            continue
        tensors[k] = v.contiguous()
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    names = write_tensor_list(out)
    cls = FAMILIES[family][1]
    re = cls.from_pretrained(out, attn_implementation="eager", dtype=torch.float32).eval()
    assert re.config.text_config.rope_parameters["rope_type"] == "default"
    for ids in ps:
        assert torch.equal(forward_logits(re, ids), forward_logits(model, ids)), "flat layout logits differ"
    return {"dir_bytes": dir_size(out), "num_tensors": len(names)}


def with_config(model, **overrides):
    """forward_logits of a model with the same weights and config fields changed."""
    cfg = model.config.__class__.from_dict({**model.config.to_dict(), **overrides})
    other = model.__class__._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    other.load_state_dict(model.state_dict())
    other.eval()
    return lambda ids: forward_logits(other, ids)


@torch.no_grad()
def sensitivity_no_correction_bias(model, ids):
    """sensitivity with the routers' e_score_correction_bias zeroed (a buffer, or ERNIE 4.5 MoE's parameter; not a
    config field)."""
    tensors = lambda: list(model.named_buffers()) + list(model.named_parameters())
    want = forward_logits(model, ids)
    saved = {n: b.clone() for n, b in tensors() if n.endswith("e_score_correction_bias")}
    for n, b in tensors():
        if n in saved:
            b.zero_()
    got = forward_logits(model, ids)
    for n, b in tensors():
        if n in saved:
            b.copy_(saved[n])
    return float((got - want).abs().max())


@torch.no_grad()
def sensitivity_no_norm_gates(model, ids):
    """sensitivity with A.X-K2's gated norms reduced to their RMSNorms (no sigmoid gate) on every layer."""
    want = forward_logits(model, ids)
    gated = [n for n in model.modules() if type(n).__name__ == "AXK2GatedRMSNorm"]
    for n in gated:
        object.__setattr__(n, "forward", lambda x, norm=n.norm: norm(x))
    got = forward_logits(model, ids)
    for n in gated:
        object.__delattr__(n, "forward")
    return float((got - want).abs().max())


@torch.no_grad()
def sensitivity_no_post_mlp_norm(model, ids):
    """sensitivity with A.X-K1's post_mlp_layernorm replaced by the identity on every MoE layer."""
    want = forward_logits(model, ids)
    moes = [layer.mlp for layer in model.model.layers if hasattr(layer.mlp, "post_mlp_layernorm")]
    saved = [m.post_mlp_layernorm for m in moes]
    for m in moes:
        m.post_mlp_layernorm = torch.nn.Identity()
    got = forward_logits(model, ids)
    for m, n in zip(moes, saved):
        m.post_mlp_layernorm = n
    return float((got - want).abs().max())


@torch.no_grad()
def sensitivity_modules(model, ids, modules, attr, value):
    """sensitivity with an attribute the modules copied from a nested config (DBRX's) set to value."""
    want = forward_logits(model, ids)
    saved = [getattr(m, attr) for m in modules]
    for m in modules:
        setattr(m, attr, value)
    got = forward_logits(model, ids)
    for m, v in zip(modules, saved):
        setattr(m, attr, v)
    return float((got - want).abs().max())


@torch.no_grad()
def sensitivity(model, ids, **overrides):
    """Max |logit difference| on one prompt when a config field is changed (same weights):
    shows that the stored data can tell the two computations apart."""
    return float((with_config(model, **overrides)(ids) - forward_logits(model, ids)).abs().max())


# Families whose reload may differ in the last bits: from_pretrained fuses the per-expert tensors
# into gate_up_proj / down_proj, and the expert GEMMs then round differently (seen on qwen2_moe).
RELOAD_TOLERANCE = {"qwen3_moe": 1e-5, "qwen2_moe": 1e-5, "mixtral": 1e-5, "deepseek_v2": 1e-5, "deepseek_v2_lite": 1e-5,
                    "olmoe": 1e-5, "granitemoe": 1e-5, "jetmoe": 1e-5, "granitemoeshared": 1e-5, "granitemoe_swa": 1e-5, "flint": 1e-5, "hy_v3": 1e-5, "cohere2_moe": 1e-5, "cohere2_moe_sigmoid": 1e-5, "granitemoehybrid": 1e-5, "glm4_moe": 1e-5,
                    "glm4_moe_lite": 1e-5, "exaone_moe": 1e-5, "sarvam_mla": 1e-5, "axk1": 1e-5, "axk2": 1e-5, "beam": 1e-5, "glm_moe_dsa": 1e-5, "deepseek_v32": 1e-5, "hy_v4": 1e-5, "longcat_flash": 1e-5,
                    "ernie4_5_moe": 1e-5, "phimoe": 1e-5, "dbrx": 1e-5, "flex_olmo": 1e-5, "dots1": 1e-5, "solar_open": 1e-5,
                    "sarvam_moe": 1e-5, "param2moe": 1e-5, "minicpm5_moe": 1e-5, "kolibri1": 1e-5,
                    "hunyuan_v1_moe": 1e-5, "minimax_m2": 1e-5, "lfm2_moe": 1e-5, "nemotron_h_moe": 1e-5,
                    "afmoe": 1e-5, "ergo": 1e-5, "mimo_v2_flash": 1e-5, "laguna": 1e-5, "mellum": 1e-5, "aria": 1e-5}


def verify(family, out):
    """Reload with from_pretrained; every stored prompt must give bit-identical logits and ids
    (MoE families: ids equal, logits within RELOAD_TOLERANCE). Returns the largest difference."""
    cls = FAMILIES[family][1]
    model = cls.from_pretrained(out, attn_implementation="eager", dtype=torch.float32).eval()
    exp = json.load(open(os.path.join(out, "expected.json")))
    assert exp["family"] == family
    tol = RELOAD_TOLERANCE.get(family, 0.0)
    worst = 0.0
    for p in exp["prompts"]:
        ids = p["ids"]
        pl, gen_ids, sl, _ = greedy_nocache(model, ids, NEW_TOKENS)
        want_pl = torch.tensor(np.array(p["prompt_logits"], dtype=np.float32))
        want_sl = torch.tensor(np.array(p["step_logits"], dtype=np.float32))
        worst = max(worst, float((pl - want_pl).abs().max()), float((sl - want_sl).abs().max()))
        assert worst <= tol, f"{family}: logits differ after reload by {worst}"
        assert gen_ids == p["greedy_ids"], f"{family}: greedy ids differ after reload"
    with safe_open(os.path.join(out, "model.safetensors"), framework="pt") as f:
        for k in f.keys():  # Emu3's VQ-VAE keeps its BatchNorms' step counters (I64), never read
            assert f.get_slice(k).get_dtype() == "F32" or k.endswith("num_batches_tracked"), k
    print(f"[verify] {family}: reloaded from {out}, {len(exp['prompts'])} prompts, max |diff| {worst}", flush=True)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.normpath(os.path.join(here, "..", "..", "tests", "data", "oracle")))
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES), help="default: all")
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # same reduction order on every run
    os.makedirs(args.out, exist_ok=True)
    summaries = []
    for fam in args.family or ["qwen3", "gpt_oss", "deepseek_v3", "qwen3_moe", "mixtral", "qwen2_moe", "gemma3",
                               "phi3", "phi3_longrope", "olmo2", "olmo3", "granite", "smollm3", "gemma", "gemma2",
                               "glm4", "cohere", "cohere2", "glm", "seed_oss", "exaone4", "starcoder2", "ministral", "ministral3",
                               "helium", "arcee", "stablelm", "stablelm_parallel", "olmo",
                               "ernie4_5", "stablelm2_qk",
                               "deepseek_v2", "deepseek_v2_lite", "olmoe", "granitemoe", "granitemoeshared", "glm4_moe", "glm4_moe_lite", "exaone_moe",
                               "llama4", "phi", "gpt_neox", "gpt_neox_seq", "gpt2", "gpt2_layer_scale", "gpt2_unscaled", "opt", "gpt_bigcode",
                               "gpt_bigcode_mha", "falcon", "falcon_new", "falcon_alibi", "bloom", "mpt", "gptj",
                               "nemotron", "lfm2", "lfm3", "qwen3_next", "qwen3_5_text", "qwen3_5_moe", "olmo_hybrid", "bamba", "granitemoehybrid", "nemotron_h", "nemotron_h_moe", "falcon_h1", "falcon_h1_gated", "mamba2", "zamba2", "zamba", "mamba", "falcon_mamba", "jamba", "gpt_neo", "codegen", "vaultgemma", "flex_olmo",
                               "hunyuan_v1_dense", "biogpt", "dots1", "hunyuan_v1_moe",
                               "minimax_m2", "exaone", "internlm3", "apertus", "persimmon", "xglm", "openai_gpt", "ctrl", "gpt_neox_japanese", "phi_qk", "lfm2_moe", "cwm", "solar_open", "jais2", "iquestcoder", "hyperclovax",
                               "qwen2_5_vl", "qwen2_vl", "qwen3_vl", "llava", "llava_next", "ernie4_5_moe", "phimoe",
                               "dbrx", "opt_350m", "nanochat", "youtu", "minicpm3", "afmoe", "sarvam_mla", "axk1", "axk2", "beam", "glm_moe_dsa", "deepseek_v32", "hy_v4", "sarvam_moe", "param2moe",
                               "minicpm5_moe", "kolibri1", "jetmoe", "ergo", "longcat_flash", "mimo_v2_flash", "laguna", "mellum", "kimi_linear",
                               "bert", "roberta", "ernie", "megatron_bert", "roberta_prelayernorm", "minimax",
                               "gemma3n", "gemma4_unified",
                               "emu3", "aria", "mllama", "phi4_multimodal", "apertus1p5_text", "rwkv", "diffllama", "cohere_compass_text", "modernbert_decoder", "bitnet"]:
        summaries.append(make_family(fam, args.out, args.seed))
    print(json.dumps(summaries, indent=1))
    bad = [s["family"] for s in summaries if not s["generate_agrees"]]
    if bad:
        print("WARNING: generate() disagreed with no-cache greedy for " + ", ".join(bad), file=sys.stderr)


if __name__ == "__main__":
    main()
