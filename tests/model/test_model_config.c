/* config.json reading: the three families' fields, rope parameters in the v5
 * (`rope_parameters`) and v4 (`rope_theta` + `rope_scaling`) forms, the
 * derived values of MF 5 (YaRN ramp and attention factor, llama3 bands, MLA
 * softmax scale), and refusals that name the key. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config_fixture.h"
#include "kvcache/plan.h"
#include "model/family.h"
#include "model/model_internal.h"
#include "kvc_test_util.h"

static float base_inv(double theta, int64_t i, int64_t d) {
    return 1.0f / powf((float)theta, (float)(2 * i) / (float)d);
}

#define GPT_OSS_HEAD                                                                                                   \
    "{\"model_type\":\"gpt_oss\",\"vocab_size\":16,\"hidden_size\":32,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":32,"                     \
    "\"num_local_experts\":4,\"num_experts_per_tok\":2,\"sliding_window\":8,\"max_position_embeddings\":131072,"

static void test_gpt_oss_yarn_v5_and_v4(void **state) {
    (void)state;
    kvc_model *a = model_of(GPT_OSS_HEAD "\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":150000,"
                                         "\"factor\":32,\"beta_fast\":32,\"beta_slow\":1,\"truncate\":false,"
                                         "\"original_max_position_embeddings\":4096}}");
    kvc_model *b = model_of(GPT_OSS_HEAD "\"rope_theta\":150000,\"rope_scaling\":{\"type\":\"yarn\",\"factor\":32,"
                                         "\"truncate\":false,\"original_max_position_embeddings\":4096}}");
    const kvc_model_config *c = kvc_model_config_of(a);
    assert_true(c->layer_sliding[0] && !c->layer_sliding[1]); /* default: even layers sliding */
    assert_true(c->qkv_bias && c->o_bias);
    assert_true(fabsf(a->rope_attn_factor - 1.3465736f) < 1e-6f);
    assert_memory_equal(a->inv_freq, b->inv_freq, 16 * sizeof(float));
    assert_true(a->rope_attn_factor == b->rope_attn_factor);
    /* lo = 4.0464, hi = 8.6990: pairs 0..4 keep theta, 9..15 divided by 32 */
    for (int64_t i = 0; i < 16; i++) {
        const float base = base_inv(150000.0, i, 32);
        if (i <= 4) assert_true(fabsf(a->inv_freq[i] - base) <= 1e-6f * base);
        if (i >= 9) assert_true(fabsf(a->inv_freq[i] - base / 32.0f) <= 1e-6f * base);
        if (i > 4 && i < 9) assert_true(a->inv_freq[i] < base && a->inv_freq[i] > base / 32.0f);
    }
    assert_true(fabs(kvc_model_attn_scale(c) - 1.0 / sqrt(32.0)) < 1e-12);
    /* neither dict (or both null): GptOssConfig's own YaRN at the file's theta (was the default rope) */
    kvc_model *d = model_of(GPT_OSS_HEAD "\"rope_theta\":150000,\"rope_scaling\":null}");
    assert_memory_equal(a->inv_freq, d->inv_freq, 16 * sizeof(float));
    assert_true(a->rope_attn_factor == d->rope_attn_factor);
    kvc_model_destroy(d);
    kvc_model_destroy(a);
    kvc_model_destroy(b);
}

#define DS_HEAD                                                                                                        \
    "{\"model_type\":\"deepseek_v3\",\"vocab_size\":16,\"hidden_size\":32,\"intermediate_size\":16,"                   \
    "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"kv_lora_rank\":8,\"qk_nope_head_dim\":32,"                    \
    "\"qk_rope_head_dim\":16,\"v_head_dim\":24,\"max_position_embeddings\":163840,\"first_k_dense_replace\":1,"

static void test_deepseek_scale_and_mscale(void **state) {
    (void)state;
    kvc_model *d = model_of(DS_HEAD "\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":10000,\"factor\":40,"
                                    "\"original_max_position_embeddings\":4096,\"beta_fast\":32,\"beta_slow\":1,"
                                    "\"mscale\":1,\"mscale_all_dim\":1}}");
    const kvc_model_config *c = kvc_model_config_of(d);
    /* q_lora_rank missing: DeepseekV3Config's 1536 (null, below: a plain q_proj) */
    assert_true(c->num_kv_heads == 2 && c->rope_form == KVC_ROPE_INTERLEAVED && c->q_lora_rank == 1536 &&
                c->head_dim == 16);
    assert_true(fabs(kvc_model_attn_scale(c) - 0.2704676) < 1e-6);
    assert_true(d->rope_attn_factor == 1.0f);
    /* lo = 2, hi = 6 (truncated): pairs 0..2 keep theta, 6.. divided by 40 */
    for (int64_t i = 0; i < 8; i++) {
        const float base = base_inv(10000.0, i, 16);
        if (i <= 2) assert_true(fabsf(d->inv_freq[i] - base) <= 1e-6f * base);
        if (i >= 6) assert_true(fabsf(d->inv_freq[i] - base / 40.0f) <= 1e-6f * base);
    }
    kvc_model *db = model_of(DS_HEAD "\"q_lora_rank\":null,\"rope_interleave\":false,\"rope_parameters\":{"
                                     "\"rope_type\":\"yarn\",\"rope_theta\":10000,\"factor\":40,"
                                     "\"original_max_position_embeddings\":4096,\"mscale\":1,\"mscale_all_dim\":0.8}}");
    assert_true(fabsf(db->rope_attn_factor - 1.0569663f) < 1e-6f && db->cfg.q_lora_rank == 0);
    assert_true(fabs(kvc_model_attn_scale(&db->cfg) - 48.0 / 48.0 * pow(48.0, -0.5) * 1.6773108) < 1e-6);
    /* a caller's config without a head dim: NaN (NULL was dereferenced, MLA dims past int64 overflowed) */
    kvc_model_config bad = *c;
    bad.qk_nope_head_dim = bad.qk_rope_head_dim = INT64_MAX;
    assert_true(isnan(kvc_model_attn_scale(&bad)));
    bad.family = KVC_FAMILY_DENSE, bad.head_dim = 0;
    assert_true(isnan(kvc_model_attn_scale(&bad)));
    assert_true(isnan(kvc_model_attn_scale(NULL)));
    kvc_model_destroy(d);
    kvc_model_destroy(db);
}

static void test_llama3_bands(void **state) {
    (void)state;
    kvc_model *m = model_of("{\"model_type\":\"llama\",\"vocab_size\":16,\"hidden_size\":128,\"intermediate_size\":16,"
                            "\"num_hidden_layers\":1,\"num_attention_heads\":4,\"num_key_value_heads\":1,"
                            "\"rope_theta\":500000,\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8,"
                            "\"low_freq_factor\":1,\"high_freq_factor\":4,\"original_max_position_embeddings\":8192},"
                            "\"max_position_embeddings\":65536}");
    assert_int_equal(kvc_model_config_of(m)->head_dim, 32);
    for (int64_t i = 0; i < 16; i++) {
        const float base = base_inv(500000.0, i, 32);
        if (i <= 7) assert_true(m->inv_freq[i] == base);
        if (i == 8) assert_true(m->inv_freq[i] < base && m->inv_freq[i] > base / 8.0f);
        if (i >= 9) assert_true(fabsf(m->inv_freq[i] - base / 8.0f) <= 1e-6f * base);
    }
    kvc_model_destroy(m);
    /* Llama 4 Scout's published factors are equal (low 1, high 1): no blended band, as transformers reads them */
    m = model_of("{\"model_type\":\"llama\",\"vocab_size\":16,\"hidden_size\":128,\"intermediate_size\":16,"
                 "\"num_hidden_layers\":1,\"num_attention_heads\":4,\"num_key_value_heads\":1,"
                 "\"rope_theta\":500000,\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":16,"
                 "\"low_freq_factor\":1,\"high_freq_factor\":1,\"original_max_position_embeddings\":8192},"
                 "\"max_position_embeddings\":65536}");
    for (int64_t i = 0; i < 16; i++) {
        const float base = base_inv(500000.0, i, 32);
        if (i <= 8) assert_true(m->inv_freq[i] == base); /* wavelengths up to 8192 kept */
        if (i >= 9) assert_true(fabsf(m->inv_freq[i] - base / 16.0f) <= 1e-6f * base);
    }
    kvc_model_destroy(m);
}

static void test_family_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(
        kvc_model_config_parse(
            "{\"model_type\":\"qwen2\",\"vocab_size\":8,\"hidden_size\":8,"
            "\"intermediate_size\":8,\"num_hidden_layers\":3,\"num_attention_heads\":2,"
            "\"num_key_value_heads\":2,\"use_sliding_window\":true,\"sliding_window\":4,\"max_window_layers\":2}",
            "q2", &c),
        KVC_OK);
    assert_true(c.qkv_bias && !c.o_bias && !c.qk_norm && c.head_dim == 4 && c.num_kv_heads == 2);
    assert_true(!c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2] && c.sliding_window == 4);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen3\",\"vocab_size\":8,\"hidden_size\":8,"
                                            "\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
                                            "\"num_key_value_heads\":2}",
                                            "q3", &c),
                     KVC_OK);
    assert_true(c.qk_norm && c.head_dim == 128 && !c.qkv_bias && c.rope.theta == 10000.0 && c.sliding_window == 0);
}

#define MOE_BASE                                                                                                       \
    "\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,\"num_attention_heads\":2,\"num_key_value_heads\":2,"

/* The MoE layers and routing fields of the softmax-routed families, with transformers 5.25's defaults and
 * sliding rules: Qwen3-MoE slides every layer with use_sliding_window (no max_window_layers), Qwen2-MoE the
 * even layers below max_window_layers, Mixtral every layer when sliding_window is set. */
static void test_moe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen3_moe\"," MOE_BASE "\"num_hidden_layers\":4,"
                                            "\"mlp_only_layers\":[2],\"decoder_sparse_step\":2,\"num_experts\":16,"
                                            "\"use_sliding_window\":true,\"sliding_window\":4,\"max_window_layers\":2}",
                                            "q3moe", &c),
                     KVC_OK);
    assert_true(c.qk_norm && !c.qkv_bias && c.n_routed_experts == 16 && c.experts_per_tok == 8 && !c.norm_topk_prob);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && !c.layer_moe[2] && c.layer_moe[3]);
    assert_true(c.moe_intermediate_size == 768 && c.shared_expert_intermediate_size == 0);
    for (int l = 0; l < 4; l++) assert_true(c.layer_sliding[l]);
    /* Qwen3MoeConfig has no head_dim of its own (Qwen3Config's is 128): hidden_size / heads */
    assert_int_equal(c.head_dim, 4);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen2_moe\"," MOE_BASE "\"num_hidden_layers\":4,"
                                            "\"use_sliding_window\":true,\"sliding_window\":4,\"max_window_layers\":2,"
                                            "\"norm_topk_prob\":true}",
                                            "q2moe", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && !c.o_bias && c.n_routed_experts == 60 && c.experts_per_tok == 4 && c.norm_topk_prob);
    assert_true(c.shared_expert_intermediate_size == 5632 && c.moe_intermediate_size == 1408);
    assert_true(c.layer_sliding[0] && !c.layer_sliding[1] && !c.layer_sliding[2] && !c.layer_sliding[3]);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"mixtral\"," MOE_BASE "\"num_hidden_layers\":2,"
                                            "\"sliding_window\":4,\"num_experts_per_tok\":2}",
                                            "mixtral", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 8 && c.norm_topk_prob && c.moe_intermediate_size == 8);
    assert_true(c.layer_moe[0] && c.layer_moe[1] && c.layer_sliding[0] && c.layer_sliding[1] && !c.qk_norm);
}

/* Gemma 3 as the hub's transformers-4 configs write it (sliding_window_pattern, rope_theta and
 * rope_local_base_freq, rope_scaling for the full layers only) and its class defaults; the multimodal
 * config's text_config; the scale, the embedding scale and the norm flags. */
static void test_gemma3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma3_text\"," MOE_BASE "\"num_hidden_layers\":7,"
                                            "\"sliding_window\":4,\"sliding_window_pattern\":6,\"rope_theta\":1000000,"
                                            "\"rope_local_base_freq\":10000,\"query_pre_attn_scalar\":168,"
                                            "\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":8},"
                                            "\"final_logit_softcapping\":null,\"attn_logit_softcapping\":null}",
                                            "gemma3", &c),
                     KVC_OK);
    for (int l = 0; l < 7; l++) assert_true(c.layer_sliding[l] == (l != 5));
    assert_true(c.family == KVC_FAMILY_GEMMA3 && c.sliding_window == 4 && c.head_dim == 256 && c.qk_norm);
    assert_true(c.gemma_norms && c.tie_word_embeddings && c.mlp_act == KVC_MLP_GELU_TANH && !c.qkv_bias);
    assert_true(c.rope.type == KVC_ROPE_LINEAR && c.rope.factor == 8.0 && c.rope.theta == 1e6);
    assert_true(c.rope_sliding.type == KVC_ROPE_DEFAULT && c.rope_sliding.theta == 1e4);
    assert_true(c.embed_scale == (float)sqrt(8.0) && kvc_model_attn_scale(&c) == 1.0 / sqrt(168.0));
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma3\",\"architectures\":"
                                            "[\"Gemma3ForConditionalGeneration\"],\"text_config\":{\"model_type\":"
                                            "\"gemma3_text\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":4},"
                                            "\"vision_config\":{\"model_type\":\"siglip_vision_model\"}}",
                                            "gemma3mm", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_GEMMA3 && c.sliding_window == 4096 && c.layer_sliding[0] && c.layer_sliding[1]);
    assert_true(c.rope.theta == 1e6 && c.rope_sliding.theta == 1e4 && kvc_model_attn_scale(&c) == 1.0 / 16.0);
}

/* Gemma 2 as the hub writes it (gemma-2-9b's keys) and its class defaults: alternating layers (sliding first),
 * one rope, the scale from query_pre_attn_scalar, sandwich norms without q/k norms, the soft-caps (absent: 50
 * and 30, null: none). */
static void test_gemma2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma2\"," MOE_BASE "\"num_hidden_layers\":5,"
                                            "\"sliding_window\":4,\"rope_theta\":10000,\"query_pre_attn_scalar\":144,"
                                            "\"final_logit_softcapping\":3.5,\"attn_logit_softcapping\":null}",
                                            "gemma2", &c),
                     KVC_OK);
    for (int l = 0; l < 5; l++) assert_true(c.layer_sliding[l] == (l % 2 == 0));
    assert_true(c.family == KVC_FAMILY_GEMMA2 && c.sliding_window == 4 && c.head_dim == 256 && !c.qk_norm);
    assert_true(c.gemma_norms && c.sandwich_norms && c.tie_word_embeddings && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_true(c.rope.theta == 1e4 && kvc_model_attn_scale(&c) == 1.0 / 12.0);
    assert_true(c.rope_sliding.theta == 0.0 || c.rope_sliding.theta == 1e4); /* one rope: none of its own, or a copy */
    assert_true(c.embed_scale == (float)sqrt(8.0));
    assert_true(c.attn_logit_softcapping == 0.0 && c.final_logit_softcapping == 3.5);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"gemma2\"," MOE_BASE "\"num_hidden_layers\":2}", "gemma2", &c),
        KVC_OK);
    assert_true(c.attn_logit_softcapping == 50.0 && c.final_logit_softcapping == 30.0 && c.sliding_window == 4096);
    assert_true(kvc_model_attn_scale(&c) == 1.0 / 16.0);
}

/* num_attention_heads absent: the config class's default (Gemma2Config's, VaultGemmaConfig's and BloomConfig's
 * 8, NanoChatConfig's 6), as transformers reads the file; KV heads then by their own rule. */
static void test_class_default_heads(void **state) {
    (void)state;
    kvc_model_config c;
    static const char *const gemmas[] = {"gemma2", "vaultgemma"};
    for (int i = 0; i < 2; i++) {
        char js[256];
        snprintf(js, sizeof js,
                 "{\"model_type\":\"%s\",\"vocab_size\":8,\"hidden_size\":48,\"intermediate_size\":8,"
                 "\"num_hidden_layers\":2,\"head_dim\":6}",
                 gemmas[i]);
        assert_int_equal(kvc_model_config_parse(js, gemmas[i], &c), KVC_OK);
        assert_true(c.num_heads == 8 && c.num_kv_heads == 4 && c.head_dim == 6);
    }
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"nanochat\",\"vocab_size\":8,\"hidden_size\":48,"
                                            "\"intermediate_size\":8,\"num_hidden_layers\":2}",
                                            "nanochat", &c),
                     KVC_OK);
    assert_true(c.num_heads == 6 && c.num_kv_heads == 6 && c.head_dim == 8);
    assert_int_equal(kvc_model_config_parse(
                         "{\"model_type\":\"bloom\",\"vocab_size\":8,\"n_layer\":2,\"hidden_size\":48}", "bloom", &c),
                     KVC_OK);
    assert_true(c.num_heads == 8 && c.num_kv_heads == 8 && c.head_dim == 6);
}

#define PHI3_BASE                                                                                                      \
    "{\"model_type\":\"phi3\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                            \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"

/* Phi-3 as the hub writes it: Phi-3-mini-4k (a window on every layer, no rope dict, biases refused by its
 * modules whatever the config says, rms_norm_eps 1e-5 when absent) and Phi-4-mini / Phi-3.5-mini (a top-level
 * partial_rotary_factor, longrope with "su" its first name, the original length at the top level); the dict's
 * partial_rotary_factor wins over the top-level one. */
static void test_phi3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(PHI3_BASE "\"sliding_window\":2047,\"rope_scaling\":null,"
                                                      "\"attention_bias\":true,\"mlp_bias\":true}",
                                            "phi3-mini", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && kvci_model_rot_dim(&c) == 16);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && c.rms_norm_eps == 1e-5 && !c.tie_word_embeddings);
    assert_true(c.layer_sliding[0] && c.layer_sliding[1] && c.sliding_window == 2047);
    assert_true(c.rope.type == KVC_ROPE_DEFAULT && c.rope.theta == 10000.0);
    assert_int_equal(kvc_model_config_parse(PHI3_BASE "\"max_position_embeddings\":131072,"
                                                      "\"original_max_position_embeddings\":4096,"
                                                      "\"partial_rotary_factor\":0.75,\"tie_word_embeddings\":true,"
                                                      "\"rope_scaling\":{\"type\":\"su\",\"short_factor\":[1,1,1,1,1,"
                                                      "1],\"long_factor\":[1,2,3,4,5,6.5]}}",
                                            "phi4-mini", &c),
                     KVC_OK);
    assert_true(c.rope.type == KVC_ROPE_LONGROPE && c.rope.original_max_position == 4096 && c.rope.factor == 32.0);
    assert_true(kvci_model_rot_dim(&c) == 12 && c.rope.n_short_factors == 6 && c.rope.n_long_factors == 6);
    assert_true(c.rope.long_factor[5] == 6.5f && c.tie_word_embeddings && c.sliding_window == 0);
    assert_int_equal(kvc_model_config_parse(PHI3_BASE "\"partial_rotary_factor\":0.75,"
                                                      "\"rope_parameters\":{\"rope_type\":\"default\","
                                                      "\"partial_rotary_factor\":0.5}}",
                                            "phi3-dict", &c),
                     KVC_OK);
    assert_int_equal(kvci_model_rot_dim(&c), 8);
}

#define OLMO2_BASE                                                                                                     \
    "{\"model_type\":\"olmo2\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                           \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,"

/* OLMo 2 as the hub writes it (OLMo-2-1124-7B: rope_theta 500000, rms_norm_eps 1e-6, no KV head count) and with
 * Olmo2Config's defaults (rms_norm_eps 1e-5, theta 10,000, untied, no bias); attention_bias puts a bias on q, k,
 * v and o, never on the MLP. */
static void test_olmo2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(OLMO2_BASE "\"rope_theta\":500000,\"rms_norm_eps\":1e-06,"
                                                       "\"rope_scaling\":null,\"attention_bias\":false}",
                                            "olmo2-7b", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.num_kv_heads == 4);
    assert_true(c.qk_norm && c.qk_norm_whole && c.post_norms && !c.gemma_norms && c.embed_scale == 0.0f);
    assert_true(c.rope.theta == 500000.0 && c.rms_norm_eps == 1e-6 && !c.qkv_bias && !c.mlp_bias);
    assert_int_equal(kvc_model_config_parse(OLMO2_BASE "\"num_key_value_heads\":2,\"attention_bias\":true,"
                                                       "\"mlp_bias\":true}",
                                            "olmo2-defaults", &c),
                     KVC_OK);
    assert_true(c.rope.theta == 10000.0 && c.rms_norm_eps == 1e-5 && !c.tie_word_embeddings);
    assert_true(c.qkv_bias && c.o_bias && !c.mlp_bias && c.num_kv_heads == 2);
}

/* OLMo 3 in the transformers-4 form the hub holds (rope_theta and a yarn rope_scaling at the top level, no
 * layer_types): Olmo3Config's layers (three sliding, then one full) and window 4096; the yarn rope and
 * rope_theta go to the full layers, the sliding ones take the default rope at 500,000 (transformers 5.25 pops
 * rope_theta for the full layers first). */
static void test_olmo3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"olmo3\",\"vocab_size\":8,\"hidden_size\":64,"
                                            "\"intermediate_size\":8,\"num_hidden_layers\":8,"
                                            "\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                                            "\"max_position_embeddings\":65536,\"rope_theta\":10000,"
                                            "\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":8.0,"
                                            "\"original_max_position_embeddings\":8192,"
                                            "\"attention_factor\":1.2}}",
                                            "olmo3-hub", &c),
                     KVC_OK);
    assert_true(c.qk_norm_whole && c.post_norms && c.sliding_window == 4096 && c.rms_norm_eps == 1e-5);
    for (int64_t l = 0; l < 8; l++) assert_int_equal(c.layer_sliding[l], (l + 1) % 4 != 0);
    assert_true(c.rope.type == KVC_ROPE_YARN && c.rope.theta == 10000.0 && c.rope.factor == 8.0);
    assert_true(c.rope_sliding.type == KVC_ROPE_DEFAULT && c.rope_sliding.theta == 500000.0);
}

#define GRANITE_BASE                                                                                                   \
    "{\"model_type\":\"granite\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                         \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"

/* Granite as granite-3.1-8b writes it, and with GraniteConfig's defaults: every multiplier 1 (the softmax scale
 * 1 too, not head_dim^-1/2), Llama's biases. */
static void test_granite_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GRANITE_BASE "\"embedding_multiplier\":12.0,\"residual_multiplier\":0.22,"
                                                         "\"attention_multiplier\":0.0078125,\"logits_scaling\":8.0,"
                                                         "\"attention_bias\":true,\"tie_word_embeddings\":true}",
                                            "granite-3.1-8b", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.embed_scale == 12.0f && c.residual_multiplier == 0.22);
    assert_true(kvc_model_attn_scale(&c) == 0.0078125 && c.logits_scaling == 8.0 && c.tie_word_embeddings);
    assert_true(c.qkv_bias && c.o_bias && !c.mlp_bias && !c.post_norms && !c.qk_norm);
    assert_int_equal(kvc_model_config_parse(GRANITE_BASE "\"mlp_bias\":true}", "granite-defaults", &c), KVC_OK);
    assert_true(c.embed_scale == 1.0f && c.residual_multiplier == 1.0 && c.logits_scaling == 1.0);
    assert_true(kvc_model_attn_scale(&c) == 1.0 && c.mlp_bias && !c.qkv_bias);
}

#define SMOLLM3_BASE                                                                                                   \
    "{\"model_type\":\"smollm3\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                         \
    "\"num_hidden_layers\":8,\"num_attention_heads\":4,\"num_key_value_heads\":2,"

/* SmolLM3 with SmolLM3Config's defaults (no rope on layers 3 and 7: no_rope_layer_interval 4; theta 2e6; tied),
 * another interval, and use_sliding_window with a window: the no-rope layers slide, the others stay full. */
static void test_smollm3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(SMOLLM3_BASE "\"rope_scaling\":null}", "smollm3-defaults", &c), KVC_OK);
    for (int64_t l = 0; l < 8; l++) assert_int_equal(c.layer_nope[l], l == 3 || l == 7);
    assert_true(c.rope.theta == 2000000.0 && c.tie_word_embeddings && c.sliding_window == 0 && !c.layer_sliding[3]);
    assert_int_equal(kvc_model_config_parse(SMOLLM3_BASE "\"no_rope_layer_interval\":2,\"use_sliding_window\":true,"
                                                         "\"sliding_window\":16,\"tie_word_embeddings\":false}",
                                            "smollm3-sliding", &c),
                     KVC_OK);
    for (int64_t l = 0; l < 8; l++) {
        assert_int_equal(c.layer_nope[l], l % 2 == 1);
        assert_int_equal(c.layer_sliding[l], l % 2 == 1);
    }
    assert_true(c.sliding_window == 16 && !c.tie_word_embeddings);
}

#define GEMMA_BASE                                                                                                     \
    "{\"model_type\":\"gemma\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                           \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":1,"

/* Gemma (1) as gemma-2b writes it (hidden_act "gelu", GemmaConfig's legacy name of gelu_pytorch_tanh; no
 * head_dim: 256) and GemmaConfig's defaults: norms as 1 + w without Gemma 3's sandwich norms or q/k norms,
 * embeddings times sqrt(64) = 8, tied, the softmax scale head_dim^-1/2. */
static void test_gemma_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(
        kvc_model_config_parse(GEMMA_BASE "\"hidden_act\":\"gelu\",\"rope_theta\":10000.0}", "gemma-2b", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 256 && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_true(c.gemma_norms && !c.sandwich_norms && !c.qk_norm && c.embed_scale == 8.0f && c.tie_word_embeddings);
    assert_true(kvc_model_attn_scale(&c) == 1.0 / 16.0 && c.sliding_window == 0 && !c.layer_sliding[0]);
    assert_int_equal(kvc_model_config_parse(GEMMA_BASE "\"head_dim\":16,\"attention_bias\":true}", "gemma", &c),
                     KVC_OK);
    assert_true(c.head_dim == 16 && c.mlp_act == KVC_MLP_GELU_TANH && c.qkv_bias && c.o_bias && !c.mlp_bias);
}

static void expect_refusal(const char *json, const char *needle) {
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(json, "cfg.json", &c), KVC_EINVAL);
    if (!strstr(kvc_last_error(), needle)) fail_msg("\"%s\" should mention \"%s\"", kvc_last_error(), needle);
}

/* kvc_model_create_random refuses c, naming needle, and leaves no model. */
static void expect_create_refusal(const kvc_model_config *c, const char *needle) {
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_create_random(c, 1, &m), KVC_EINVAL);
    if (!strstr(kvc_last_error(), needle)) fail_msg("\"%s\" should mention \"%s\"", kvc_last_error(), needle);
    assert_null(m);
}

#define GEMMA4_BASE "{\"model_type\":\"gemma4_text\"," MOE_BASE "\"head_dim\":4,\"global_head_dim\":4,"

/* Gemma 4 (Gemma4TextConfig's defaults where absent): the last num_kv_shared_layers layers read the last earlier
 * layer of their kind, the last layer full whatever layer_types says, per-layer inputs of 256 over 262,144 rows,
 * norms as w with v_norm and layer scalars, scale 1, the ropes per layer type; the wrapper's text_config; each key
 * the runtime has no operator for refused by name. */
static void test_gemma4_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GEMMA4_BASE "\"num_hidden_layers\":5,\"num_kv_shared_layers\":2,"
                                                        "\"sliding_window\":4,\"layer_types\":[\"sliding_attention\","
                                                        "\"full_attention\",\"sliding_attention\",\"full_attention\","
                                                        "\"sliding_attention\"],\"use_double_wide_mlp\":true}",
                                            "gemma4", &c),
                     KVC_OK);
    for (int l = 0; l < 5; l++) assert_true(c.layer_sliding[l] == (l % 2 == 0 && l != 4));
    assert_true(c.family == KVC_FAMILY_GEMMA4 && c.kv_shared_layers == 2 && c.mlp_double_shared);
    assert_true(kvci_model_kv_source(&c, 2) == 2 && kvci_model_kv_source(&c, 3) == 1 &&
                kvci_model_kv_source(&c, 4) == 1);
    assert_true(c.ple_dim == 256 && c.ple_vocab == 262144 && c.v_norm && c.layer_scalar && c.qk_norm);
    assert_true(c.sandwich_norms && !c.gemma_norms && !c.attn_k_eq_v && c.tie_word_embeddings);
    assert_true(c.mlp_act == KVC_MLP_GELU_TANH && c.final_logit_softcapping == 0.0 && kvc_model_attn_scale(&c) == 1.0);
    assert_true(c.rope.type == KVC_ROPE_PROPORTIONAL && c.rope.partial_rotary_factor == 0.25 && c.rope.theta == 1e6);
    assert_true(c.rope_sliding.type == KVC_ROPE_DEFAULT && c.rope_sliding.theta == 1e4);
    assert_true(c.embed_scale == (float)sqrt(8.0) && kvci_model_rot_dim(&c) == 4);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma4\",\"text_config\":{\"model_type\":"
                                            "\"gemma4_text\"," MOE_BASE "\"head_dim\":4,\"global_head_dim\":4,"
                                            "\"num_hidden_layers\":2,\"hidden_size_per_layer_input\":null,"
                                            "\"attention_k_eq_v\":true,\"final_logit_softcapping\":30},"
                                            "\"vision_config\":{\"model_type\":\"gemma4_vision\"}}",
                                            "gemma4mm", &c),
                     KVC_OK);
    assert_true(c.ple_dim == 0 && c.attn_k_eq_v && c.final_logit_softcapping == 30.0 && c.sliding_window == 512);
    assert_true(c.layer_sliding[0] && !c.layer_sliding[1] && c.kv_shared_layers == 0);
    assert_int_equal(kvc_model_config_parse(GEMMA4_BASE
                                            "\"num_hidden_layers\":2,\"enable_moe_block\":true,"
                                            "\"num_experts\":4,\"top_k_experts\":2,\"moe_intermediate_size\":6}",
                                            "gemma4-moe", &c),
                     KVC_OK);
    assert_true(c.layer_moe[0] && c.layer_moe[1] && c.n_routed_experts == 4 && c.experts_per_tok == 2);
    assert_true(c.moe_intermediate_size == 6);
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"enable_moe_block\":true,\"num_experts\":4,"
                               "\"moe_intermediate_size\":6}",
                   "top_k_experts");
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"enable_moe_block\":true,\"num_experts\":2,"
                               "\"top_k_experts\":3,\"moe_intermediate_size\":6}",
                   "top_k_experts");
    /* Gemma4TextConfig's defaults: global_head_dim 512 on the full layers (num_global_key_value_heads read only with
     * attention_k_eq_v), per_layer_config read alone when given */
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma4_text\"," MOE_BASE
                                            "\"head_dim\":4,\"num_hidden_layers\":6,\"num_global_key_value_heads\":1}",
                                            "gemma4-defaults", &c),
                     KVC_OK);
    for (int l = 0; l < 6; l++)
        assert_true(c.layer_head_dim[l] == (l == 5 ? 512 : 0) && c.layer_kv_heads[l] == 0 &&
                    c.layer_sliding[l] == (l < 5));
    assert_true(kvci_layer_shape(&c, 5).D == 512 && kvci_layer_shape(&c, 5).rot == 512 &&
                kvci_layer_attn_scale(&c, 5) == 1.0);
    assert_int_equal(kvc_model_config_parse(GEMMA4_BASE "\"num_hidden_layers\":2,\"attention_k_eq_v\":true,"
                                                        "\"num_global_key_value_heads\":1}",
                                            "gemma4-keqv", &c),
                     KVC_OK);
    assert_true(c.layer_kv_heads[1] == 1 && c.layer_head_dim[1] == 0 && c.layer_kv_heads[0] == 0);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma4_text\"," MOE_BASE
                                            "\"head_dim\":4,\"num_hidden_layers\":2,\"global_head_dim\":8,"
                                            "\"per_layer_config\":{\"0\":{\"num_key_value_heads\":1}}}",
                                            "gemma4-plc", &c),
                     KVC_OK);
    assert_true(c.layer_kv_heads[0] == 1 && c.layer_head_dim[1] == 0);
    expect_refusal(GEMMA4_BASE
                   "\"num_hidden_layers\":4,\"num_kv_shared_layers\":1,\"per_layer_config\":{\"3\":"
                   "{\"head_dim\":8}},\"layer_types\":[\"full_attention\",\"sliding_attention\",\"full_attention\","
                   "\"full_attention\"]}",
                   "layer 3 (2 KV heads of 8) reads the cache of layer 2 (2 of 4), whose heads differ");
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"use_bidirectional_attention\":\"all\"}",
                   "use_bidirectional_attention \"all\" is not supported");
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"hidden_activation\":\"silu\"}",
                   "hidden_activation \"silu\" is not supported (gemma4");
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"vocab_size_per_layer_input\":4}",
                   "vocab_size_per_layer_input 4 is below vocab_size 8");
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"num_kv_shared_layers\":2}", "num_kv_shared_layers");
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":3,\"num_kv_shared_layers\":1,\"layer_types\":["
                               "\"sliding_attention\",\"sliding_attention\",\"full_attention\"]}",
                   "layer 2 has no earlier layer of its kind");
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"rope_parameters\":{\"full_attention\":{\"rope_type\":"
                               "\"dynamic\",\"factor\":2},\"sliding_attention\":{\"rope_type\":\"default\"}}}",
                   "rope type \"dynamic\" is not supported");
    /* a layer type's entry not a dict: refused, not read as a flat dict of defaults */
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"rope_parameters\":{\"full_attention\":\"x\","
                               "\"sliding_attention\":{\"rope_type\":\"default\"}}}",
                   "rope_parameters.full_attention must be an object or null");
    /* an entry missing for a kind the model has: refused, not the other kind's rope */
    expect_refusal(GEMMA4_BASE "\"num_hidden_layers\":2,\"layer_types\":[\"sliding_attention\",\"full_attention\"],"
                               "\"rope_parameters\":{\"sliding_attention\":{\"rope_type\":\"default\"}}}",
                   "rope_parameters has no \"full_attention\" entry (layer 1 is one)");
    expect_refusal(
        GEMMA4_BASE "\"num_hidden_layers\":2,\"rope_parameters\":{}}",
        "rope_parameters must hold one dict per layer type (full_attention, sliding_attention) for gemma4_text");
    /* a caller's own struct: the Gemma 4 fields outside the family, a shared layer without a source */
    assert_int_equal(kvc_model_config_parse(GEMMA4_BASE "\"num_hidden_layers\":2,\"num_kv_shared_layers\":1,"
                                                        "\"layer_types\":[\"full_attention\",\"full_attention\"]}",
                                            "gemma4", &c),
                     KVC_OK);
    kvc_model_config bad = c;
    bad.layer_sliding[1] = true, bad.sliding_window = 4;
    expect_create_refusal(&bad, "layer 1 has no earlier layer of its kind");
    bad = c;
    bad.family = KVC_FAMILY_GEMMA3;
    expect_create_refusal(&bad, "need family gemma4");
}

/* Gemma 4 Unified (Gemma4UnifiedTextConfig's defaults where absent): Gemma 4's layers with a window of 1024, no
 * per-layer inputs or experts whatever those keys say (its class has none), the wrapper's text_config. */
static void test_gemma4_unified_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma4_unified_text\"," MOE_BASE
                                            "\"head_dim\":4,\"global_head_dim\":8,\"num_hidden_layers\":7,"
                                            "\"hidden_size_per_layer_input\":4,\"enable_moe_block\":true}",
                                            "gemma4u", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_GEMMA4 && c.sliding_window == 1024 && c.ple_dim == 0 && !c.layer_moe[0]);
    for (int l = 0; l < 7; l++)
        assert_true(c.layer_sliding[l] == (l != 5 && l != 6) && c.layer_head_dim[l] == (l >= 5 ? 8 : 0));
    assert_true(c.layer_scalar && c.v_norm && c.kv_shared_layers == 0 && c.final_logit_softcapping == 0.0);
    assert_true(c.rope.type == KVC_ROPE_PROPORTIONAL && c.rope_sliding.theta == 1e4 && kvc_model_attn_scale(&c) == 1.0);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma4_unified\",\"text_config\":{\"model_type\":"
                                            "\"gemma4_unified_text\"," MOE_BASE "\"head_dim\":4,\"global_head_dim\":4,"
                                            "\"num_hidden_layers\":2,\"use_bidirectional_attention\":\"vision\"}}",
                                            "gemma4u-mm", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_GEMMA4 && c.ple_dim == 0 && c.layer_sliding[0] && !c.layer_sliding[1]);
    expect_refusal("{\"model_type\":\"gemma4_unified_text\"," MOE_BASE
                   "\"head_dim\":4,\"num_hidden_layers\":2,\"use_bidirectional_attention\":\"all\"}",
                   "use_bidirectional_attention \"all\" is not supported");
    expect_refusal("{\"model_type\":\"gemma4_unified\"," MOE_BASE "\"head_dim\":4,\"num_hidden_layers\":2}",
                   "gemma4_unified without text_config is not supported");
}

#define GEMMA3N_BASE "{\"model_type\":\"gemma3n_text\"," MOE_BASE "\"head_dim\":4,"
#define GEMMA3N_MM                                                                                                     \
    "{\"model_type\":\"gemma3n\",\"text_config\":{\"model_type\":\"gemma3n_text\",\"vocab_size\":8,\"hidden_size\":8," \
    "\"num_attention_heads\":2,\"num_key_value_heads\":2,\"head_dim\":4,\"num_hidden_layers\":3,"

/* Gemma 3n (Gemma3nTextConfig's defaults where absent, the E4B model's): every 5th layer full, the last 15 layers
 * reading the last earlier layer of their kind, the first 10 layers sparse at 0.95, four AltUp copies, LAuReL of rank
 * 64, per-layer inputs, Gemma 4's norms and scale, final logits capped at 30, ropes at 1e6 / 1e4; the wrapper's
 * text_config with one width per layer; each key outside what the runtime runs refused by name. */
static void test_gemma3n_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GEMMA3N_BASE "\"num_hidden_layers\":20}", "gemma3n", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_GEMMA3N && c.kv_shared_layers == 15 && c.sliding_window == 512);
    for (int l = 0; l < 20; l++) {
        assert_true(c.layer_sliding[l] == ((l + 1) % 5 != 0));
        assert_true(c.layer_act_sparsity[l] == (l < 10 ? 0.95f : 0.0f));
    }
    assert_true(kvci_model_kv_source(&c, 4) == 4 && kvci_model_kv_source(&c, 19) == 4 &&
                kvci_model_kv_source(&c, 18) == 3 && kvci_model_kv_source(&c, 5) == 3);
    assert_true(c.altup_inputs == 4 && c.altup_active == 0 && c.altup_correct_scale && c.laurel_rank == 64);
    assert_true(c.ple_dim == 256 && c.ple_vocab == 262144 && c.v_norm && c.qk_norm && c.sandwich_norms);
    assert_true(!c.layer_scalar && !c.gemma_norms && c.tie_word_embeddings && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_true(c.final_logit_softcapping == 30.0 && kvc_model_attn_scale(&c) == 1.0 && c.intermediate_size == 8);
    assert_true(c.rope.theta == 1e6 && c.rope_sliding.theta == 1e4 && c.embed_scale == (float)sqrt(8.0));
    assert_int_equal(
        kvc_model_config_parse(GEMMA3N_MM
                               "\"intermediate_size\":[6,6,6],\"num_kv_shared_layers\":0,"
                               "\"activation_sparsity_pattern\":[0.5,0,0],\"altup_num_inputs\":2,"
                               "\"altup_active_idx\":1,\"altup_correct_scale\":false,"
                               "\"laurel_rank\":3,\"final_logit_softcapping\":null,\"vocab_size_per_layer_input\":4,"
                               "\"rope_theta\":5e5,\"rope_local_base_freq\":2e4}}",
                               "gemma3n-mm", &c),
        KVC_OK);
    assert_true(c.intermediate_size == 6 && c.layer_act_sparsity[0] == 0.5f && c.layer_act_sparsity[1] == 0.0f);
    assert_true(c.altup_inputs == 2 && c.altup_active == 1 && !c.altup_correct_scale && c.laurel_rank == 3);
    assert_true(c.final_logit_softcapping == 0.0 && c.rope.theta == 5e5 && c.rope_sliding.theta == 2e4);
    assert_true(c.kv_shared_layers == 0 && c.layer_sliding[0] && c.layer_sliding[2]);
    assert_true(c.ple_vocab == 4 && c.vocab_size == 8); /* below the vocabulary: ids beyond it read row 0 */
    expect_refusal(GEMMA3N_MM "\"num_kv_shared_layers\":0,\"intermediate_size\":[6,7,6]}}",
                   "intermediate_size[1] 7 differs from layer 0's 6");
    expect_refusal(GEMMA3N_MM "\"num_kv_shared_layers\":0,\"intermediate_size\":[6,6]}}",
                   "intermediate_size holds 2 widths");
    expect_refusal(GEMMA3N_MM "\"num_kv_shared_layers\":0,\"activation_sparsity_pattern\":[1,0,0]}}",
                   "activation_sparsity_pattern[0] must be a number in [0, 1)");
    expect_refusal(GEMMA3N_MM "\"num_kv_shared_layers\":0,\"activation_sparsity_pattern\":0.5}}",
                   "activation_sparsity_pattern must be a list of num_hidden_layers (3) numbers");
    expect_refusal(GEMMA3N_BASE "\"num_hidden_layers\":20,\"altup_active_idx\":4}", "altup_active_idx");
    expect_refusal(GEMMA3N_BASE "\"num_hidden_layers\":20,\"altup_num_inputs\":17}", "altup_num_inputs");
    expect_refusal(GEMMA3N_BASE "\"num_hidden_layers\":20,\"laurel_rank\":0}", "laurel_rank");
    expect_refusal(GEMMA3N_BASE "\"num_hidden_layers\":15}", "num_kv_shared_layers is absent and gemma3n's default 15");
    expect_refusal(GEMMA3N_BASE "\"num_hidden_layers\":3,\"num_kv_shared_layers\":3}", "num_kv_shared_layers");
    expect_refusal(GEMMA3N_BASE "\"num_hidden_layers\":20,\"hidden_activation\":\"silu\"}",
                   "hidden_activation \"silu\" is not supported (gemma3n");
    expect_refusal(GEMMA3N_BASE "\"num_hidden_layers\":20,\"rope_parameters\":{}}",
                   "rope_parameters must hold one dict per layer type");
    expect_refusal("{\"model_type\":\"gemma3n\"," MOE_BASE "\"num_hidden_layers\":20}",
                   "gemma3n without text_config is not supported");
    /* a caller's own struct: the Gemma 3n fields outside the family, or out of range */
    assert_int_equal(kvc_model_config_parse(GEMMA3N_MM "\"num_kv_shared_layers\":1}}", "gemma3n", &c), KVC_OK);
    kvc_model_config bad = c;
    bad.altup_active = 4;
    expect_create_refusal(&bad, "gemma3n needs altup_inputs in [1, 16], altup_active in [0, altup_inputs)");
    bad = c;
    bad.ple_vocab = 0;
    expect_create_refusal(&bad, "vocab_size_per_layer_input 0 outside [1, ");
    bad = c;
    bad.layer_act_sparsity[1] = 1.0f;
    expect_create_refusal(&bad, "layer_act_sparsity[1] 1 outside [0, 1)");
    assert_int_equal(kvc_model_config_parse(GEMMA4_BASE "\"num_hidden_layers\":2}", "gemma4", &c), KVC_OK);
    bad = c;
    bad.laurel_rank = 2;
    expect_create_refusal(&bad, "need family gemma3n");
}

static void test_refusals(void **state) {
    (void)state;
    expect_refusal(GRANITE_BASE "\"logits_scaling\":0}", "logits_scaling");
    expect_refusal(GEMMA_BASE "\"hidden_act\":\"silu\"}",
                   "hidden_act \"silu\" is not supported (gemma: gelu_pytorch_tanh");
    expect_refusal(GEMMA_BASE "\"use_bidirectional_attention\":true}", "use_bidirectional_attention is set");
    expect_refusal(SMOLLM3_BASE "\"no_rope_layers\":[1,0,1]}", "no_rope_layers has 3 entries");
    expect_refusal(SMOLLM3_BASE "\"no_rope_layers\":[1,0,1,1,1,1,1,2]}", "no_rope_layers[7]");
    expect_refusal(GRANITE_BASE "\"residual_multiplier\":-1}", "residual_multiplier");
    expect_refusal("{\"model_type\":\"qwen3_moe\"," MOE_BASE "\"num_hidden_layers\":2,\"mlp_only_layers\":[2]}",
                   "mlp_only_layers[0]");
    expect_refusal("{\"model_type\":\"mixtral\"," MOE_BASE "\"num_hidden_layers\":2,\"num_local_experts\":2,"
                   "\"num_experts_per_tok\":3}",
                   "num_experts_per_tok 3 must be in [1, num_local_experts = 2]");
    /* Gemma3ForCausalLM caps its logits as Gemma 2 does; Gemma3ForConditionalGeneration never does: refused there */
    kvc_model_config g3;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"gemma3_text\"," MOE_BASE
                                            "\"num_hidden_layers\":2,\"final_logit_softcapping\":30}",
                                            "gemma3-cap", &g3),
                     KVC_OK);
    assert_true(g3.final_logit_softcapping == 30.0 && g3.attn_logit_softcapping == 0.0);
    expect_refusal("{\"model_type\":\"gemma3\",\"text_config\":{\"model_type\":\"gemma3_text\"," MOE_BASE
                   "\"num_hidden_layers\":2,\"final_logit_softcapping\":30}}",
                   "final_logit_softcapping is set; the runtime does not run soft-capped final logits");
    expect_refusal("{\"model_type\":\"gemma3_text\"," MOE_BASE "\"num_hidden_layers\":2,\"attn_logit_softcapping\":50}",
                   "attn_logit_softcapping is set");
    expect_refusal("{\"model_type\":\"gemma3_text\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"use_bidirectional_attention\":true}",
                   "use_bidirectional_attention is set");
    /* planned only, refused by the runtime naming what it lacks */
    expect_refusal("{\"model_type\":\"bailing_hybrid\"}",
                   "\"bailing_hybrid\" is planned only, not run: its Kimi Delta");
    expect_refusal("{\"model_type\":\"dory\"}", "\"dory\" is planned only, not run: its recurrent section");
    expect_refusal("{\"model_type\":\"doge\"}", "\"doge\" is planned only, not run: its dynamic mask attention");
    expect_refusal("{\"model_type\":\"qwen4_exp\",\"text_config\":{\"model_type\":\"qwen4_exp_text\"}}",
                   "\"qwen4_exp_text\" is planned only, not run: its indexed_attention layers' QSA token indexer");
    expect_refusal("{\"model_type\":\"qwen4_exp\"}", "\"qwen4_exp\" is planned only, not run");
    expect_refusal("{\"model_type\":\"deepseek_v4\"}",
                   "\"deepseek_v4\" is planned only, not run: its hyper-connection residual streams");
    expect_refusal("{\"model_type\":\"gemma3_text\"," MOE_BASE
                   "\"num_hidden_layers\":2,\"hidden_activation\":\"silu\"}",
                   "hidden_activation \"silu\" is not supported (gemma3: gelu_pytorch_tanh)");
    expect_refusal("{\"model_type\":\"gemma2\"," MOE_BASE "\"num_hidden_layers\":2,\"attn_logit_softcapping\":0}",
                   "attn_logit_softcapping 0 must be a number in (0, 1e+06]");
    expect_refusal("{\"model_type\":\"gemma2\"," MOE_BASE "\"num_hidden_layers\":2,\"final_logit_softcapping\":\"30\"}",
                   "final_logit_softcapping must be a number");
    expect_refusal("{\"model_type\":\"gemma2\"," MOE_BASE "\"num_hidden_layers\":2,\"hidden_activation\":\"silu\"}",
                   "(gemma2: gelu_pytorch_tanh)");
    expect_refusal("{\"model_type\":\"t5\"}", "model_type \"t5\"");
    expect_refusal("{\"model_type\":\"llama\",\"vocab_size\":8}", "num_hidden_layers is missing");
    expect_refusal("[1]", "the top level must be an object");
    expect_refusal("{\"model_type\":\"llama\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"layer_types\":[\"full_attention\"]}",
                   "layer_types");
    /* chunked local attention is run for Llama 4 only (transformers' Llama ignores layer_types) */
    expect_refusal("{\"model_type\":\"llama\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"attention_chunk_size\":4,"
                   "\"layer_types\":[\"chunked_attention\",\"full_attention\"]}",
                   "layer 0 is a chunked-attention layer, which the runtime does not run");
    expect_refusal(
        "{\"model_type\":\"llama\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
        "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"rope_scaling\":{\"rope_type\":\"dynamic\",\"factor\":2}}",
        "rope type \"dynamic\" is not supported by the runtime: past max_position_embeddings dynamic NTK raises its "
        "base with each forward pass's longest sequence, so the keys already cached would keep an older base");
    expect_refusal("{\"model_type\":\"llama\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"rope_parameters\":{\"rope_type\":"
                   "\"proportional\"}}",
                   "rope type \"proportional\" is not supported by the runtime");
    expect_refusal("{\"model_type\":\"llama\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":1,\"num_attention_heads\":3,\"num_key_value_heads\":2}",
                   "not a multiple");
    /* an activation the runtime does not compute (it ran SiLU whatever hidden_act said) */
    expect_refusal("{\"model_type\":\"llama\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"hidden_act\":\"gelu\"}",
                   "hidden_act \"gelu\" is not supported (llama: silu or swish, gelu_pytorch_tanh, gelu_new or "
                   "gelu_fast)");
    /* the tanh GELUs run the gated MLP as GeGLU (transformers' ACT2FN in LlamaMLP); with routed experts, refused */
    kvc_model_config g;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"llama\",\"vocab_size\":8,\"hidden_size\":8,"
                                            "\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
                                            "\"hidden_act\":\"gelu_pytorch_tanh\"}",
                                            "llama-geglu", &g),
                     KVC_OK);
    assert_true(g.mlp_act == KVC_MLP_GELU_TANH && !g.mlp_plain);
    expect_refusal("{\"model_type\":\"mixtral\"," MOE_BASE "\"num_hidden_layers\":1,\"num_local_experts\":2,"
                   "\"num_experts_per_tok\":1,\"hidden_act\":\"gelu_new\"}",
                   "hidden_act \"gelu_new\" is not supported (mixtral: silu or swish)");
    expect_refusal("{\"model_type\":\"qwen3\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":2,\"hidden_act\":7}",
                   "hidden_act");
    expect_refusal("{\"model_type\":\"deepseek_v3\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"kv_lora_rank\":4,\"qk_nope_head_dim\":4,"
                   "\"qk_rope_head_dim\":4,\"v_head_dim\":4,\"first_k_dense_replace\":1,\"n_routed_experts\":8,"
                   "\"n_group\":4,\"topk_group\":1,\"num_experts_per_tok\":4}",
                   "k <= topk_group");
    /* Phi-3: longrope factors that do not match the rotary width, an odd rotary width, a rope type
     * transformers would misread, longrope beside a sliding layers' rope */
    expect_refusal(PHI3_BASE "\"partial_rotary_factor\":0.75,\"original_max_position_embeddings\":64,"
                             "\"rope_scaling\":{\"type\":\"longrope\","
                             "\"short_factor\":[1,1,1,1,1,1,1,1],\"long_factor\":[1,1,1,1,1,1,1,1]}}",
                   "short_factor and long_factor hold 8 and 8 entries; the rotary width 12 needs 6 each");
    expect_refusal(PHI3_BASE "\"partial_rotary_factor\":0.1}", "the rotary width 1 (head_dim 16 x");
    expect_refusal(PHI3_BASE "\"partial_rotary_factor\":0.35}", "must be even");
    expect_refusal(PHI3_BASE "\"original_max_position_embeddings\":64,\"rope_scaling\":{\"type\":\"longrope\","
                             "\"short_factor\":[1,\"x\"]}}",
                   "short_factor[1] must be a number");
    expect_refusal(PHI3_BASE "\"rope_scaling\":{\"type\":\"yarn\",\"factor\":4,"
                             "\"original_max_position_embeddings\":64}}",
                   "phi3 with rope type \"yarn\"");
    expect_refusal(PHI3_BASE "\"sliding_window\":4,\"original_max_position_embeddings\":64,"
                             "\"rope_parameters\":{\"full_attention\":{\"rope_type\":"
                             "\"longrope\",\"short_factor\":[1,1,1,1,1,1,1,1],\"long_factor\":[1,1,1,1,1,1,1,1]},"
                             "\"sliding_attention\":{\"rope_type\":\"default\"}}}",
                   "longrope as the one rope of every layer");
}

#define GLM4_BASE                                                                                                      \
    "{\"model_type\":\"glm4\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                            \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define GLM_BASE                                                                                                       \
    "{\"model_type\":\"glm\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                             \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define SEED_OSS_BASE                                                                                                  \
    "{\"model_type\":\"seed_oss\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define EXAONE4_BASE                                                                                                   \
    "{\"model_type\":\"exaone4\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                         \
    "\"num_hidden_layers\":8,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define FULL8                                                                                                          \
    "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","                  \
    "\"full_attention\",\"full_attention\",\"full_attention\""
#define STARCODER2_BASE                                                                                                \
    "{\"model_type\":\"starcoder2\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                      \
    "\"num_hidden_layers\":8,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define HELIUM_BASE                                                                                                    \
    "{\"model_type\":\"helium\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                          \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define ARCEE_BASE                                                                                                     \
    "{\"model_type\":\"arcee\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                           \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define STABLELM_BASE                                                                                                  \
    "{\"model_type\":\"stablelm\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define OLMO1_BASE                                                                                                     \
    "{\"model_type\":\"olmo\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                            \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define ERNIE_BASE                                                                                                     \
    "{\"model_type\":\"ernie4_5\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4"
#define PHI_BASE                                                                                                       \
    "{\"model_type\":\"phi\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                             \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4"
#define NEOX_BASE                                                                                                      \
    "{\"model_type\":\"gpt_neox\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4"
#define BIGCODE_BASE "{\"model_type\":\"gpt_bigcode\",\"vocab_size\":8,\"n_embd\":32,\"n_layer\":2,\"n_head\":4"
#define FALCON_BASE                                                                                                    \
    "{\"model_type\":\"falcon\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":2,\"num_attention_heads\":4"
#define BLOOM_BASE "{\"model_type\":\"bloom\",\"vocab_size\":8,\"n_layer\":2,\"n_head\":6"
#define MPT_BASE                                                                                                       \
    "{\"model_type\":\"mpt\",\"vocab_size\":8,\"d_model\":40,\"n_layers\":2,\"n_heads\":5,\"max_seq_len\":64"
#define GPTJ_BASE "{\"model_type\":\"gptj\",\"vocab_size\":8,\"n_embd\":32,\"n_layer\":2,\"n_head\":2"
#define NEMOTRON_BASE                                                                                                  \
    "{\"model_type\":\"nemotron\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"                       \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4"
#define CODEGEN_BASE "{\"model_type\":\"codegen\",\"vocab_size\":8,\"n_embd\":32,\"n_layer\":2,\"n_head\":2"
#define GPT_NEO_BASE "{\"model_type\":\"gpt_neo\",\"vocab_size\":8,\"hidden_size\":32,\"num_heads\":4"
#define GPT2_BASE    "{\"model_type\":\"gpt2\",\"vocab_size\":8,\"n_embd\":32,\"n_layer\":2,\"n_head\":4"
#define OPT_BASE                                                                                                       \
    "{\"model_type\":\"opt\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":2,\"num_attention_heads\":4"
#define MINISTRAL_BASE                                                                                                 \
    "{\"model_type\":\"ministral\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                       \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define MINISTRAL_BASE3                                                                                                \
    "{\"model_type\":\"ministral3\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                      \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define MINISTRAL3_TEXT                                                                                                \
    MINISTRAL_BASE3 ",\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":1e6,\"factor\":16,"                   \
                    "\"original_max_position_embeddings\":16384,\"beta_fast\":32,\"beta_slow\":1,\"mscale\":1,"        \
                    "\"mscale_all_dim\":1,\"llama_4_scaling_beta\":0.1}"
#define COHERE_BASE(mt)                                                                                                \
    "{\"model_type\":\"" mt "\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                          \
    "\"num_hidden_layers\":8,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* GLM-4 with Glm4Config's defaults (head_dim 128 of which the first 64 rotate in pairs, q/k/v biases, sandwich
 * norms, rms_norm_eps 1.5625e-7, untied) and as the hub's 9B-0414 writes it; Cohere and Cohere 2 with their
 * defaults (LayerNorm eps 1e-5, logit_scale 0.0625, tied, no bias, theta 5e5 / 1e4; Cohere 2's
 * sliding_window_pattern 4 and window 4096: layers 3 and 7 full and unrotated), Cohere's use_qk_norm (Cohere
 * 2 has none); the refusals: a Cohere 2 head_dim other than hidden_size / heads, and in a caller's own struct
 * DeepSeek's interleaved form outside MLA and a parallel block with sandwich norms. */
static void test_glm4_cohere_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GLM4_BASE "}", "glm4-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && kvci_model_rot_dim(&c) == 64);
    assert_true(c.rope_form == KVC_ROPE_PAIRS && c.sandwich_norms && !c.layer_norm && !c.parallel_block);
    assert_true(c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings && c.rms_norm_eps == 1.5625e-7);
    assert_int_equal(kvc_model_config_parse(GLM4_BASE ",\"head_dim\":16,\"attention_bias\":false,"
                                                      "\"partial_rotary_factor\":0.5,\"rms_norm_eps\":1e-5,"
                                                      "\"rope_theta\":10000.0}",
                                            "glm4-9b-0414", &c),
                     KVC_OK);
    assert_true(c.head_dim == 16 && kvci_model_rot_dim(&c) == 8 && !c.qkv_bias && c.rms_norm_eps == 1e-5);
    assert_int_equal(kvc_model_config_parse(COHERE_BASE("cohere") "}", "cohere-defaults", &c), KVC_OK);
    assert_true(c.layer_norm && c.parallel_block && c.rope_form == KVC_ROPE_PAIRS && c.rms_norm_eps == 1e-5);
    assert_true(c.logit_scale == 0.0625 && c.tie_word_embeddings && !c.qkv_bias && !c.o_bias && c.head_dim == 16);
    assert_true(c.rope.theta == 500000.0 && kvci_model_rot_dim(&c) == 16 && c.sliding_window == 0);
    assert_int_equal(kvc_model_config_parse(COHERE_BASE("cohere") ",\"attention_bias\":true,\"logit_scale\":0.125,"
                                                                  "\"layer_norm_eps\":1e-3}",
                                            "cohere-set", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && c.logit_scale == 0.125 && c.rms_norm_eps == 1e-3);
    assert_int_equal(kvc_model_config_parse(COHERE_BASE("cohere2") "}", "cohere2-defaults", &c), KVC_OK);
    assert_true(c.rope.theta == 10000.0 && c.sliding_window == 4096 && c.logit_scale == 0.0625);
    for (int64_t l = 0; l < 8; l++) assert_true(c.layer_sliding[l] == (l % 4 != 3) && c.layer_nope[l] == (l % 4 == 3));
    assert_int_equal(kvc_model_config_parse(COHERE_BASE("cohere2") ",\"sliding_window\":32,"
                                                                   "\"sliding_window_pattern\":2}",
                                            "cohere2-pattern", &c),
                     KVC_OK);
    for (int64_t l = 0; l < 8; l++) assert_true(c.layer_sliding[l] == (l % 2 == 0) && c.layer_nope[l] == (l % 2 == 1));
    assert_true(!c.qk_norm);
    assert_int_equal(kvc_model_config_parse(COHERE_BASE("cohere") ",\"use_qk_norm\":true}", "cohere-qk", &c), KVC_OK);
    assert_true(c.qk_norm && c.layer_norm && !c.qk_norm_whole);
    /* Cohere2Config has no use_qk_norm: the key is ignored, as transformers does */
    assert_int_equal(kvc_model_config_parse(COHERE_BASE("cohere2") ",\"use_qk_norm\":true}", "cohere2-qk", &c), KVC_OK);
    assert_true(!c.qk_norm);
    /* Cohere2's attention reads a head_dim key (transformers built from such a config runs heads of 32) */
    assert_int_equal(kvc_model_config_parse(COHERE_BASE("cohere2") ",\"head_dim\":32}", "cohere2-hd", &c), KVC_OK);
    assert_int_equal(c.head_dim, 32);
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_config_parse(GLM4_BASE ",\"head_dim\":16}", "glm4", &c), KVC_OK);
    c.rope_form = KVC_ROPE_INTERLEAVED;
    assert_int_equal(kvc_model_create_random(&c, 1, &m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "in an MLA family"));
    c.rope_form = KVC_ROPE_PAIRS, c.parallel_block = true;
    assert_int_equal(kvc_model_create_random(&c, 1, &m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "parallel_block takes the input norm only"));
    assert_null(m);
}

/* GLM (glm-4-9b-chat-hf) with GlmConfig's defaults: GLM-4's without the sandwich norms (head_dim 128 of which
 * the first 64 rotate in pairs, q/k/v biases, rms_norm_eps 1.5625e-7, untied). */
static void test_glm_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GLM_BASE "}", "glm-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && kvci_model_rot_dim(&c) == 64);
    assert_true(c.rope_form == KVC_ROPE_PAIRS && !c.sandwich_norms && !c.post_norms && !c.layer_norm);
    assert_true(c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings && c.rms_norm_eps == 1.5625e-7);
    assert_int_equal(kvc_model_config_parse(GLM_BASE ",\"attention_bias\":false,\"head_dim\":16}", "glm-set", &c),
                     KVC_OK);
    assert_true(!c.qkv_bias && c.head_dim == 16 && kvci_model_rot_dim(&c) == 8);
}

/* Seed-OSS with SeedOssConfig's defaults (q/k/v biases, none on o_proj or the MLP, head_dim 128, untied) and
 * with attention_out_bias and mlp_bias set, attention_bias cleared: each key moves its own biases. */
static void test_seed_oss_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(SEED_OSS_BASE "}", "seed-oss-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && kvci_model_rot_dim(&c) == 128);
    assert_true(c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings && c.rope_form == KVC_ROPE_HALF);
    assert_int_equal(kvc_model_config_parse(SEED_OSS_BASE ",\"attention_bias\":false,\"attention_out_bias\":true,"
                                                          "\"mlp_bias\":true}",
                                            "seed-oss-set", &c),
                     KVC_OK);
    assert_true(!c.qkv_bias && c.o_bias && c.mlp_bias);
    /* a null head_dim: hidden_size / num_attention_heads, as SeedOssConfig derives it (was its 128 for an absent
     * key: q_proj refused by shape); ERNIE 4.5 likewise; hidden_size not a multiple of the heads refused by name */
    assert_int_equal(kvc_model_config_parse(SEED_OSS_BASE ",\"head_dim\":null}", "seed-oss-null", &c), KVC_OK);
    assert_int_equal(c.head_dim, 16);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"ernie4_5\",\"vocab_size\":8,\"hidden_size\":48,"
                                            "\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":4,"
                                            "\"head_dim\":null}",
                                            "ernie-null", &c),
                     KVC_OK);
    assert_int_equal(c.head_dim, 12);
    expect_refusal("{\"model_type\":\"seed_oss\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":1,\"num_attention_heads\":3,\"num_key_value_heads\":1,\"head_dim\":null}",
                   "head_dim is null");
}

/* EXAONE 4.0 with Exaone4Config's defaults (post-norms, per-head q/k norms, no biases, eps 1e-5, window 4096,
 * sliding_window_pattern 4: layers 3 and 7 full and unrotated, untied), the hub's string pattern, a null
 * window with every layer full (all rotated), and the refusal of sliding layers without a window (transformers
 * cannot build their mask either). */
static void test_exaone4_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(EXAONE4_BASE "}", "exaone4-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.post_norms && c.qk_norm && !c.qk_norm_whole && !c.layer_norm);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings && c.rms_norm_eps == 1e-5);
    assert_true(c.sliding_window == 4096 && c.head_dim == 16 && c.rope_form == KVC_ROPE_HALF);
    for (int64_t l = 0; l < 8; l++) assert_true(c.layer_sliding[l] == (l % 4 != 3) && c.layer_nope[l] == (l % 4 == 3));
    assert_int_equal(kvc_model_config_parse(EXAONE4_BASE ",\"sliding_window\":64,\"sliding_window_pattern\":\"LG\"}",
                                            "exaone4-string", &c),
                     KVC_OK);
    for (int64_t l = 0; l < 8; l++) assert_true(c.layer_sliding[l] == (l % 2 == 0) && c.layer_nope[l] == (l % 2 == 1));
    assert_int_equal(kvc_model_config_parse(EXAONE4_BASE ",\"sliding_window\":null,\"layer_types\":[" FULL8 "]}",
                                            "exaone4-1.2b", &c),
                     KVC_OK);
    for (int64_t l = 0; l < 8; l++) assert_true(!c.layer_sliding[l] && !c.layer_nope[l]);
    assert_int_equal(kvc_model_config_parse(EXAONE4_BASE ",\"sliding_window\":null}", "exaone4-nowindow", &c),
                     KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "sliding_window is missing but the model has sliding-attention layers"));
}

/* StarCoder2 with Starcoder2Config's defaults (LayerNorms with bias, eps 1e-5, the plain gelu_tanh MLP, every
 * bias, tied, no window) and with use_bias false and a window (every layer slides); the refusals: another
 * hidden_act, and in a caller's own struct norm biases without LayerNorms or with post-norms, a plain MLP
 * outside the dense family. */
static void test_starcoder2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(STARCODER2_BASE "}", "starcoder2-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.layer_norm && c.norm_bias && c.mlp_plain && !c.parallel_block);
    assert_true(c.mlp_act == KVC_MLP_GELU_TANH && c.rms_norm_eps == 1e-5 && c.tie_word_embeddings);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && c.sliding_window == 0 && c.head_dim == 16);
    assert_int_equal(kvc_model_config_parse(STARCODER2_BASE ",\"use_bias\":false,\"sliding_window\":4096,"
                                                            "\"norm_epsilon\":1e-3}",
                                            "starcoder2-set", &c),
                     KVC_OK);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && c.rms_norm_eps == 1e-3 && c.sliding_window == 4096);
    for (int64_t l = 0; l < 8; l++) assert_true(c.layer_sliding[l] && !c.layer_nope[l]);
    expect_refusal(STARCODER2_BASE ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\" is not supported");
    assert_int_equal(kvc_model_config_parse(STARCODER2_BASE "}", "starcoder2", &c), KVC_OK);
    c.layer_norm = false;
    expect_create_refusal(&c, "norm_bias needs layer_norm in pre-norm blocks");
    c.layer_norm = c.post_norms = true;
    expect_create_refusal(&c, "norm_bias needs layer_norm in pre-norm blocks");
    c.post_norms = false, c.family = KVC_FAMILY_GEMMA2;
    expect_create_refusal(&c, "mlp_plain is the dense family's dense MLP only");
}

/* Ministral with MinistralConfig's defaults (window 4096 on every layer, no layer_types) and with layer_types;
 * its biases are never read, whatever attention_bias says. */
static void test_ministral_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(MINISTRAL_BASE ",\"attention_bias\":true}", "ministral-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.sliding_window == 4096 && !c.qkv_bias && !c.o_bias && !c.mlp_bias);
    for (int64_t l = 0; l < 2; l++) assert_true(c.layer_sliding[l]);
    assert_int_equal(kvc_model_config_parse(MINISTRAL_BASE
                                            ",\"layer_types\":[\"sliding_attention\",\"full_attention\"]}",
                                            "ministral-types", &c),
                     KVC_OK);
    assert_true(c.layer_sliding[0] && !c.layer_sliding[1]);
}

/* Ministral 3: the query scale from its rope dict (llama_4_scaling_beta, original_max_position_embeddings), head_dim
 * 128, eps 1e-5, no window, no biases; in Mistral3ForConditionalGeneration's config the head tied by the top
 * level's tie_word_embeddings (true when absent), not text_config's; the refusals: no rope dict, a dict without
 * the beta, layer_types. */
static void test_ministral3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(MINISTRAL3_TEXT "}", "ministral3", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.rms_norm_eps == 1e-5 && c.sliding_window == 0);
    assert_true(c.query_scale_beta == 0.1 && c.query_scale_positions == 16384 && c.rope.type == KVC_ROPE_YARN);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"mistral3\",\"text_config\":" MINISTRAL3_TEXT
                                            ",\"tie_word_embeddings\":false}}",
                                            "mistral3", &c),
                     KVC_OK);
    assert_true(c.tie_word_embeddings && c.query_scale_beta == 0.1);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"mistral3\",\"tie_word_embeddings\":false,"
                                            "\"text_config\":" MINISTRAL3_TEXT "}}",
                                            "mistral3-untied", &c),
                     KVC_OK);
    assert_true(!c.tie_word_embeddings);
    expect_refusal(MINISTRAL_BASE3 "}", "ministral3 needs one rope dict");
    expect_refusal(MINISTRAL_BASE3 ",\"rope_parameters\":{\"rope_type\":\"default\"}}", "llama_4_scaling_beta");
    expect_refusal(MINISTRAL3_TEXT ",\"layer_types\":[\"full_attention\",\"full_attention\"]}",
                   "ministral3 with layer_types is not supported");
}

/* Helium with HeliumConfig's defaults (RoPE on adjacent pairs, head_dim 128, theta 1e5, eps 1e-8, no biases,
 * untied) and with attention_bias / mlp_bias set (q/k/v and MLP biases, never o_proj's); Arcee with
 * ArceeConfig's (relu2 ungated MLP, eps 1e-5, no biases) and with both biases set (o_proj's too); refused: Arcee
 * with another hidden_act, and in a caller's own struct relu2 in a gated MLP. */
static void test_helium_arcee_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(HELIUM_BASE "}", "helium-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.rope_form == KVC_ROPE_PAIRS);
    assert_true(c.rope.theta == 100000.0 && c.rms_norm_eps == 1e-8 && !c.tie_word_embeddings);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.mlp_plain && c.mlp_act == KVC_MLP_SILU);
    assert_int_equal(
        kvc_model_config_parse(HELIUM_BASE ",\"attention_bias\":true,\"mlp_bias\":true}", "helium-set", &c), KVC_OK);
    assert_true(c.qkv_bias && !c.o_bias && c.mlp_bias);
    assert_int_equal(kvc_model_config_parse(ARCEE_BASE "}", "arcee-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.mlp_plain && c.mlp_act == KVC_MLP_RELU2 && c.head_dim == 16);
    assert_true(c.rms_norm_eps == 1e-5 && c.rope_form == KVC_ROPE_HALF && !c.layer_norm && !c.tie_word_embeddings);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_int_equal(kvc_model_config_parse(ARCEE_BASE ",\"attention_bias\":true,\"mlp_bias\":true}", "arcee-set", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias);
    expect_refusal(ARCEE_BASE ",\"hidden_act\":\"silu\"}", "hidden_act \"silu\" is not supported (arcee: relu2)");
    assert_int_equal(kvc_model_config_parse(ARCEE_BASE "}", "arcee", &c), KVC_OK);
    c.mlp_plain = false, c.mlp_act = KVC_MLP_RELU; /* relu2 gated: BitNet's */
    expect_create_refusal(&c, "with mlp_plain, 4 (relu)");
}

/* StableLM with StableLmConfig's defaults (LayerNorms with bias, eps 1e-5, RoPE on a quarter of each head,
 * no biases, sequential blocks, untied) and with use_qkv_bias and use_parallel_residual set; qk_layernorm (StableLM
 * 2 12B) reads as per-head q/k LayerNorms; a head_dim key is not read (hidden / heads). */
static void test_stablelm_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(STABLELM_BASE "}", "stablelm-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.layer_norm && c.norm_bias && !c.parallel_block && !c.mlp_plain);
    assert_true(c.head_dim == 16 && kvci_model_rot_dim(&c) == 4 && c.rope_form == KVC_ROPE_HALF);
    assert_true(c.rms_norm_eps == 1e-5 && !c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(STABLELM_BASE ",\"use_qkv_bias\":true,\"use_parallel_residual\":true,"
                                                          "\"layer_norm_eps\":1e-3,\"qk_layernorm\":false}",
                                            "stablelm-set", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && !c.o_bias && !c.mlp_bias && c.parallel_block && c.norm_bias && c.rms_norm_eps == 1e-3);
    assert_true(!c.qk_norm);
    assert_int_equal(kvc_model_config_parse(STABLELM_BASE ",\"qk_layernorm\":true}", "stablelm-2-12b", &c), KVC_OK);
    assert_true(c.qk_norm && c.layer_norm && !c.qk_norm_whole);
    /* a head_dim key is not read: StableLmAttention splits hidden_size over the heads whatever it says */
    assert_int_equal(kvc_model_config_parse(STABLELM_BASE ",\"head_dim\":8}", "stablelm-hd", &c), KVC_OK);
    assert_int_equal(c.head_dim, 16);
}

/* OLMo 1 with OlmoConfig's defaults (weightless LayerNorms, eps 1e-5, no clip, no biases) and with
 * attention_bias and clip_qkv 8 set; clip_qkv null is none; refused: clip_qkv 0, and in a caller's own struct
 * weightless norms with norm biases or with post_norms, a negative clip_qkv. */
static void test_olmo1_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(OLMO1_BASE ",\"rms_norm_eps\":0.5}", "olmo-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.layer_norm && c.norm_weightless && !c.norm_bias);
    assert_true(c.rms_norm_eps == 1e-5 && c.clip_qkv == 0.0 && !c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_true(c.head_dim == 16 && !c.parallel_block && c.rope_form == KVC_ROPE_HALF && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(OLMO1_BASE ",\"attention_bias\":true,\"clip_qkv\":8}", "olmo-set", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && !c.mlp_bias && c.clip_qkv == 8.0);
    assert_int_equal(kvc_model_config_parse(OLMO1_BASE ",\"clip_qkv\":null}", "olmo-null", &c), KVC_OK);
    assert_true(c.clip_qkv == 0.0);
    expect_refusal(OLMO1_BASE ",\"clip_qkv\":0}", "clip_qkv");
    assert_int_equal(kvc_model_config_parse(OLMO1_BASE "}", "olmo", &c), KVC_OK);
    c.norm_bias = true;
    expect_create_refusal(&c, "norm_weightless needs pre-norm blocks without norm_bias");
    c.norm_bias = false, c.post_norms = true;
    expect_create_refusal(&c, "norm_weightless needs pre-norm blocks without norm_bias");
    c.post_norms = false, c.clip_qkv = -1.0;
    expect_create_refusal(&c, "clip_qkv -1 must be in [0, 3.4e38]");
}

/* ERNIE 4.5 with Ernie4_5Config's defaults (2 KV heads without the key, head_dim 128, theta 5e5, eps 1e-5, RoPE on
 * pairs, no biases, tied) and with use_bias set, the key null (as many KV heads as heads) and 4 KV heads;
 * refused by name: the missing key's 2 KV heads under an odd head count. */
static void test_ernie4_5_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(ERNIE_BASE "}", "ernie-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 2 && c.head_dim == 128 && c.rope.theta == 500000.0);
    assert_true(c.rms_norm_eps == 1e-5 && c.rope_form == KVC_ROPE_PAIRS && c.tie_word_embeddings);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && kvci_model_rot_dim(&c) == 128);
    assert_int_equal(
        kvc_model_config_parse(ERNIE_BASE ",\"use_bias\":true,\"num_key_value_heads\":null}", "ernie-set", &c), KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && c.num_kv_heads == 4);
    assert_int_equal(kvc_model_config_parse(ERNIE_BASE ",\"num_key_value_heads\":4}", "ernie-kv", &c), KVC_OK);
    assert_true(c.num_kv_heads == 4);
    expect_refusal("{\"model_type\":\"ernie4_5\",\"vocab_size\":8,\"hidden_size\":96,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":2,\"num_attention_heads\":3}",
                   "num_attention_heads 3 is not a multiple of num_key_value_heads 2 (the key is missing: the default "
                   "of ernie4_5's config in transformers)");
}

/* A config without num_key_value_heads takes its config class's default where transformers has one (Qwen2Config's
 * 32, Gemma2Config's 4), as many as the query heads where it has none (Llama) or the key is null. */
static void test_missing_kv_heads_class_default(void **state) {
    (void)state;
#define KV_BASE(type)                                                                                                  \
    "{\"model_type\":\"" type "\",\"vocab_size\":8,\"hidden_size\":128,\"intermediate_size\":8,"                       \
    "\"num_hidden_layers\":1,\"num_attention_heads\":64,\"head_dim\":2,\"max_position_embeddings\":64"
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(KV_BASE("qwen2") "}", "qwen2", &c), KVC_OK);
    assert_int_equal(c.num_kv_heads, 32);
    assert_int_equal(kvc_model_config_parse(KV_BASE("qwen2") ",\"num_key_value_heads\":null}", "qwen2-null", &c),
                     KVC_OK);
    assert_int_equal(c.num_kv_heads, 64);
    assert_int_equal(kvc_model_config_parse(KV_BASE("gemma2") "}", "gemma2", &c), KVC_OK);
    assert_int_equal(c.num_kv_heads, 4);
    assert_int_equal(kvc_model_config_parse(KV_BASE("llama") "}", "llama", &c), KVC_OK);
    assert_int_equal(c.num_kv_heads, 64);
    kvc_model_plan *plan = NULL; /* the planner reads the same */
    const char *qwen2 = KV_BASE("qwen2") "}";
    const kvc_plan_options opt = kvc_plan_default_options();
    assert_int_equal(kvc_model_plan_create(qwen2, strlen(qwen2), &opt, &plan), KVC_OK);
    assert_int_equal(plan->num_key_value_heads, 32);
    kvc_model_plan_destroy(plan);
#undef KV_BASE
}

/* sliding_window applies only where transformers' attention reads it: Mistral slides, Llama and GPT-2 (a config
 * written from a shared template) do not, a Llama "sliding_attention" layer is a full one; the planner agrees. */
static void test_window_only_where_transformers_reads_it(void **state) {
    (void)state;
#define WIN_BASE(type)                                                                                                 \
    "{\"model_type\":\"" type "\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"max_position_embeddings\":64,"      \
    "\"sliding_window\":8"
    const char *cases[4] = {WIN_BASE("mistral") "}", WIN_BASE("llama") "}", WIN_BASE("gpt2") "}",
                            WIN_BASE("llama") ",\"layer_types\":[\"sliding_attention\",\"full_attention\"]}"};
    const bool slides[4] = {true, false, false, false};
    for (int i = 0; i < 4; i++) {
        kvc_model_config c;
        if (kvc_model_config_parse(cases[i], "window", &c) != KVC_OK) fail_msg("case %d: %s", i, kvc_last_error());
        kvc_model_plan *plan = NULL;
        const kvc_plan_options opt = kvc_plan_default_options();
        assert_int_equal(kvc_model_plan_create(cases[i], strlen(cases[i]), &opt, &plan), KVC_OK);
        for (int l = 0; l < 2; l++) {
            if (c.layer_sliding[l] != slides[i] || (plan->layers[l].attn_type == KVC_ATTN_SLIDING_WINDOW) != slides[i])
                fail_msg("case %d layer %d: runtime %s, planner %s, want %s", i, l,
                         c.layer_sliding[l] ? "sliding" : "full",
                         plan->layers[l].attn_type == KVC_ATTN_SLIDING_WINDOW ? "sliding" : "full",
                         slides[i] ? "sliding" : "full");
        }
        kvc_model_plan_destroy(plan);
    }
#undef WIN_BASE
}

#define DSV2_BASE                                                                                                      \
    "{\"model_type\":\"deepseek_v2\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"                    \
    "\"num_hidden_layers\":3,\"num_attention_heads\":2,\"kv_lora_rank\":8,\"qk_nope_head_dim\":8,"                     \
    "\"qk_rope_head_dim\":8,\"v_head_dim\":8"

/* DeepSeek-V2 with DeepseekV2Config's defaults (every layer MoE: 64 experts of 1407, 2 shared, greedy as one group,
 * scaling 1, no renormalisation, q LoRA 1536 when missing, RoPE on adjacent pairs, no correction bias) and with
 * group_limited_greedy; the keys transformers 5.25 does not read (scoring_func, norm_topk_prob, moe_layer_freq) not
 * read; refused by name: the keys transformers needs and has no default for, the topk_methods, mlp_bias. */
static void test_deepseek_v2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(DSV2_BASE ",\"num_experts_per_tok\":6}", "dsv2-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && kvci_deepseek_v2(&c) && c.first_k_dense_replace == 0);
    assert_true(c.layer_moe[0] && c.layer_moe[2] && c.n_routed_experts == 64 && c.moe_intermediate_size == 1407);
    assert_true(c.n_shared_experts == 2 && c.shared_expert_intermediate_size == 2 * 1407 && c.experts_per_tok == 6);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.routed_scaling_factor == 1.0 && !c.norm_topk_prob);
    assert_true(c.q_lora_rank == 1536 && c.rope_form == KVC_ROPE_INTERLEAVED && c.head_dim == 8);
    assert_true(c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings && c.max_position_embeddings == 2048);
    assert_int_equal(kvc_model_config_parse(DSV2_BASE ",\"num_experts_per_tok\":6,\"n_group\":8,\"topk_group\":3,"
                                                      "\"topk_method\":\"group_limited_greedy\",\"q_lora_rank\":null,"
                                                      "\"routed_scaling_factor\":16,\"first_k_dense_replace\":1,"
                                                      "\"moe_layer_freq\":1,\"scoring_func\":\"softmax\"}",
                                            "dsv2-groups", &c),
                     KVC_OK);
    assert_true(c.n_group == 8 && c.topk_group == 3 && c.routed_scaling_factor == 16.0 && c.q_lora_rank == 0);
    assert_true(!c.layer_moe[0] && c.layer_moe[1]);
    /* one expert per group: V2's group score is that expert's (V3's top-2 sum needs two) */
    assert_int_equal(kvc_model_config_parse(DSV2_BASE ",\"num_experts_per_tok\":2,\"n_routed_experts\":4,"
                                                      "\"topk_method\":\"group_limited_greedy\",\"n_group\":4,"
                                                      "\"topk_group\":2}",
                                            "dsv2-single", &c),
                     KVC_OK);
    /* no MoE layer: the router's keys are not needed */
    assert_int_equal(kvc_model_config_parse(DSV2_BASE ",\"first_k_dense_replace\":3}", "dsv2-dense", &c), KVC_OK);
    expect_refusal(DSV2_BASE "}", "deepseek_v2 with MoE layers needs num_experts_per_tok");
    expect_refusal(DSV2_BASE ",\"num_experts_per_tok\":2,\"topk_method\":\"group_limited_greedy\",\"n_group\":8}",
                   "group_limited_greedy needs n_group and topk_group");
    expect_refusal(DSV2_BASE ",\"num_experts_per_tok\":2,\"topk_method\":\"noaux_tc\"}",
                   "topk_method \"noaux_tc\" is not supported");
    assert_int_equal(kvc_model_config_parse(DSV2_BASE ",\"num_experts_per_tok\":2,\"scoring_func\":\"sigmoid\","
                                                      "\"norm_topk_prob\":true,\"moe_layer_freq\":2}",
                                            "dsv2-unread", &c),
                     KVC_OK);
    assert_true(!c.norm_topk_prob && c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[2]);
    expect_refusal(DSV2_BASE ",\"num_experts_per_tok\":2,\"mlp_bias\":true}", "mlp_bias true");
    expect_refusal(DSV2_BASE ",\"num_experts_per_tok\":2,\"topk_method\":\"group_limited_greedy\",\"n_group\":64,"
                             "\"topk_group\":1}",
                   "MoE routing sizes are inconsistent");
}

#define OLMOE_BASE                                                                                                     \
    "{\"model_type\":\"olmoe\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                           \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* OLMoE with OlmoeConfig's defaults (64 experts of intermediate_size, top 8, not renormalised, pre-norm blocks with
 * whole-projection q/k norms, eps 1e-5, no clip, no biases; a sliding_window key ignored) and with its keys set;
 * refused: a head_dim other than hidden_size / heads (its norms' size), clip_qkv 0. */
static void test_olmoe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(OLMOE_BASE ",\"rms_norm_eps\":null,\"sliding_window\":4}", "olmoe", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.qk_norm && c.qk_norm_whole && !c.post_norms && !c.layer_norm);
    assert_true(c.rms_norm_eps == 1e-5 && c.clip_qkv == 0.0 && !c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_true(c.n_routed_experts == 64 && c.experts_per_tok == 8 && !c.norm_topk_prob);
    assert_true(c.moe_intermediate_size == 8 && c.shared_expert_intermediate_size == 0 && c.head_dim == 16);
    assert_true(c.layer_moe[0] && c.layer_moe[1] && !c.layer_sliding[0] && c.sliding_window == 0);
    assert_true(c.rope.theta == 10000.0 && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(OLMOE_BASE ",\"attention_bias\":true,\"clip_qkv\":8,\"num_experts\":4,"
                                                       "\"num_experts_per_tok\":2,\"norm_topk_prob\":true}",
                                            "olmoe-set", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && c.clip_qkv == 8.0 && c.n_routed_experts == 4 && c.experts_per_tok == 2);
    assert_true(c.norm_topk_prob);
    expect_refusal(OLMOE_BASE ",\"head_dim\":8}", "olmoe head_dim 8 is not hidden_size 64");
    expect_refusal(OLMOE_BASE ",\"clip_qkv\":0}", "clip_qkv");
    expect_refusal(OLMOE_BASE ",\"num_experts\":4}", "num_experts_per_tok 8 must be in [1, num_experts = 4]");
}

#define GRANITEMOE_BASE(mt)                                                                                            \
    "{\"model_type\":\"" mt "\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                          \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* Granite MoE with GraniteMoeConfig's defaults (8 experts of intermediate_size, top 2, multipliers of 1: the softmax
 * scale 1, no shared MLP, no biases, eps 1e-6; a sliding_window key ignored) and Granite MoE Shared with its keys
 * set; refused: more experts per token than num_local_experts. */
static void test_granitemoe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GRANITEMOE_BASE("granitemoe") ",\"sliding_window\":4}", "granitemoe", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.n_routed_experts == 8 && c.experts_per_tok == 2);
    assert_true(c.moe_intermediate_size == 8 && c.shared_expert_intermediate_size == 0 && !c.qkv_bias && !c.o_bias);
    assert_true(c.embed_scale == 1.0f && c.residual_multiplier == 1.0 && c.logits_scaling == 1.0);
    assert_true(kvc_model_attn_scale(&c) == 1.0 && c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings);
    assert_true(c.layer_moe[0] && c.layer_moe[1] && !c.layer_sliding[0] && c.sliding_window == 0 && !c.qk_norm);
    assert_int_equal(kvc_model_config_parse(GRANITEMOE_BASE("granitemoeshared") ",\"num_local_experts\":4,"
                                                                                "\"num_experts_per_tok\":3,"
                                                                                "\"shared_intermediate_size\":16,"
                                                                                "\"attention_bias\":true,"
                                                                                "\"attention_multiplier\":0.5}",
                                            "granitemoeshared", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 4 && c.experts_per_tok == 3 && c.shared_expert_intermediate_size == 16);
    assert_true(c.qkv_bias && c.o_bias && !c.mlp_bias && kvc_model_attn_scale(&c) == 0.5);
    expect_refusal(GRANITEMOE_BASE("granitemoe") ",\"num_local_experts\":1}",
                   "num_experts_per_tok 2 must be in [1, num_local_experts = 1]");
}

#define GLM4_MOE_BASE                                                                                                  \
    "{\"model_type\":\"glm4_moe\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* GLM-4.5 with Glm4MoeConfig's defaults (head_dim hidden / heads, half of it rotated half-split, layer 0 dense, 128
 * experts of 1408, top 8 in 1 of 1 group, renormalised, scale 1, one shared expert, no biases or q/k norms, eps 1e-5)
 * and with its keys set; refused: routing sizes DeepSeek-V3's rules refuse, a scale of 0. */
static void test_glm4_moe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GLM4_MOE_BASE "}", "glm4_moe", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.rope.partial_rotary_factor == 0.5);
    assert_true(c.rope_form == KVC_ROPE_HALF && !c.qkv_bias && !c.o_bias && !c.qk_norm && c.rms_norm_eps == 1e-5);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[2] && c.first_k_dense_replace == 1);
    assert_true(c.n_routed_experts == 128 && c.moe_intermediate_size == 1408 && c.experts_per_tok == 8);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.norm_topk_prob && c.routed_scaling_factor == 1.0);
    assert_true(c.n_shared_experts == 1 && c.shared_expert_intermediate_size == 1408 && !c.layer_sliding[0]);
    assert_int_equal(kvc_model_config_parse(GLM4_MOE_BASE ",\"head_dim\":24,\"partial_rotary_factor\":1.0,"
                                                          "\"attention_bias\":true,\"use_qk_norm\":true,"
                                                          "\"first_k_dense_replace\":2,\"moe_intermediate_size\":4,"
                                                          "\"n_routed_experts\":8,\"num_experts_per_tok\":2,"
                                                          "\"n_group\":4,\"topk_group\":2,\"n_shared_experts\":2,"
                                                          "\"norm_topk_prob\":false,\"routed_scaling_factor\":2.5}",
                                            "glm4_moe-set", &c),
                     KVC_OK);
    assert_true(c.head_dim == 24 && c.rope.partial_rotary_factor == 1.0 && c.qkv_bias && !c.o_bias && c.qk_norm);
    assert_true(!c.layer_moe[1] && c.layer_moe[2] && c.n_routed_experts == 8 && c.experts_per_tok == 2);
    assert_true(c.n_group == 4 && c.topk_group == 2 && c.shared_expert_intermediate_size == 8 && !c.norm_topk_prob);
    assert_true(c.routed_scaling_factor == 2.5);
    expect_refusal(GLM4_MOE_BASE ",\"n_routed_experts\":8,\"num_experts_per_tok\":2,\"n_group\":3}",
                   "MoE routing sizes are inconsistent (n_routed_experts 8, n_group 3");
    expect_refusal(GLM4_MOE_BASE ",\"routed_scaling_factor\":0}", "routed_scaling_factor");
}

#define ERNIE_MOE_BASE                                                                                                 \
    "{\"model_type\":\"ernie4_5_moe\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                    \
    "\"num_hidden_layers\":6,\"num_attention_heads\":4"

/* ERNIE 4.5 MoE with Ernie4_5_MoeConfig's defaults (4 KV heads, head_dim hidden / heads, theta 5e5, adjacent pairs,
 * no biases, tied, layers 1 to the last MoE: 64 experts of 1536, top 6, 2 shared, moe_norm_min 1e-12), with its keys
 * set (the HF attribute names num_experts / num_experts_per_tok too), and the refusals. */
static void test_ernie4_5_moe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(ERNIE_MOE_BASE "}", "ernie4_5_moe", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && c.rope.theta == 500000.0);
    assert_true(c.rope_form == KVC_ROPE_PAIRS && !c.qkv_bias && !c.o_bias && !c.mlp_bias && c.tie_word_embeddings);
    assert_true(!c.head_bias);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[5] && c.n_routed_experts == 64);
    assert_true(c.moe_intermediate_size == 1536 && c.experts_per_tok == 6 && c.n_shared_experts == 2);
    assert_true(c.shared_expert_intermediate_size == 3072 && c.moe_norm_min == 1e-12 && c.rms_norm_eps == 1e-5);
    assert_int_equal(kvc_model_config_parse(ERNIE_MOE_BASE ",\"num_key_value_heads\":2,\"moe_num_experts\":8,"
                                                           "\"moe_k\":2,\"moe_intermediate_size\":4,"
                                                           "\"moe_num_shared_experts\":0,\"moe_layer_start_index\":0,"
                                                           "\"moe_layer_end_index\":4,\"moe_layer_interval\":2,"
                                                           "\"moe_norm_min\":0.5,\"use_bias\":true}",
                                            "ernie4_5_moe-set", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 2 && c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.qkv_bias && c.mlp_bias);
    assert_true(c.head_bias); /* Ernie4_5_MoeForCausalLM's lm_head takes use_bias */
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && !c.layer_moe[2] && c.layer_moe[3] && !c.layer_moe[5]);
    assert_true(c.shared_expert_intermediate_size == 0 && c.moe_norm_min == 0.5 && c.moe_intermediate_size == 4);
    assert_int_equal(
        kvc_model_config_parse(ERNIE_MOE_BASE ",\"num_experts\":8,\"num_experts_per_tok\":3}", "ernie4_5_moe-hf", &c),
        KVC_OK);
    assert_true(c.n_routed_experts == 8 && c.experts_per_tok == 3);
    expect_refusal(ERNIE_MOE_BASE ",\"moe_num_experts\":4}", "moe_k 6 must be in [1, moe_num_experts = 4]");
    expect_refusal(ERNIE_MOE_BASE ",\"moe_layer_interval\":0}", "moe_layer_interval");
    expect_refusal(ERNIE_MOE_BASE ",\"moe_norm_min\":-1}", "moe_norm_min");
}

#define PHIMOE_BASE                                                                                                    \
    "{\"model_type\":\"phimoe\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                          \
    "\"num_hidden_layers\":2,\"num_attention_heads\":8"

/* Phi-3.5-MoE with PhimoeConfig's defaults (8 KV heads, theta 1e6, LayerNorms with bias, eps 1e-5, no biases, untied,
 * 16 experts of intermediate_size on every layer, two chosen whatever num_experts_per_tok says, jitter 0.01), its
 * keys set, and the refusals. */
static void test_phimoe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(PHIMOE_BASE ",\"num_experts_per_tok\":4}", "phimoe", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 8 && c.rope.theta == 1e6 && c.head_dim == 8);
    assert_true(c.layer_norm && c.norm_bias && c.rms_norm_eps == 1e-5 && !c.qkv_bias && !c.o_bias && !c.head_bias);
    assert_true(!c.tie_word_embeddings && c.layer_moe[0] && c.layer_moe[1] && c.n_routed_experts == 16);
    assert_true(c.experts_per_tok == 2 && c.moe_intermediate_size == 8 && c.router_jitter_noise == 0.01);
    assert_int_equal(kvc_model_config_parse(PHIMOE_BASE ",\"num_key_value_heads\":2,\"attention_bias\":true,"
                                                        "\"lm_head_bias\":true,\"num_local_experts\":4,"
                                                        "\"router_jitter_noise\":0.3,\"rms_norm_eps\":1e-6}",
                                            "phimoe-set", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 2 && c.qkv_bias && c.o_bias && c.head_bias && c.n_routed_experts == 4);
    assert_true(c.router_jitter_noise == 0.3 && c.rms_norm_eps == 1e-6);
    expect_refusal(PHIMOE_BASE ",\"num_local_experts\":1}", "num_local_experts");
    expect_refusal(PHIMOE_BASE ",\"router_jitter_noise\":-0.1}", "router_jitter_noise");
#define PHIMOE_LONGROPE(MSCALES)                                                                                       \
    PHIMOE_BASE ",\"rope_scaling\":{\"rope_type\":\"longrope\",\"short_factor\":[1,2,3,4],\"long_factor\":[5,6,7,8],"  \
                "\"original_max_position_embeddings\":64" MSCALES "}}"
    /* longrope: the short factors everywhere, the equal mscales as the attention factor */
    assert_int_equal(
        kvc_model_config_parse(PHIMOE_LONGROPE(",\"short_mscale\":1.25,\"long_mscale\":1.25"), "phimoe-lr", &c),
        KVC_OK);
    assert_true(c.rope.type == KVC_ROPE_LONGROPE && c.rope.attention_factor == 1.25 && c.rope.n_long_factors == 4);
    assert_true(c.rope.long_factor[0] == 1.0f && c.rope.long_factor[3] == 4.0f);
    expect_refusal(PHIMOE_LONGROPE(",\"short_mscale\":1.25,\"long_mscale\":1.5"),
                   "phimoe longrope with short_mscale 1.25 and long_mscale 1.5");
    expect_refusal(PHIMOE_LONGROPE(",\"short_mscale\":1.25"), "long_mscale");
    expect_refusal(PHIMOE_BASE ",\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":2}}",
                   "phimoe with rope type \"linear\"");
#undef PHIMOE_LONGROPE
}

#define DBRX_BASE "{\"model_type\":\"dbrx\",\"vocab_size\":8,\"d_model\":64,\"n_heads\":4,\"n_layers\":2"

/* DBRX with DbrxConfig's defaults (1 KV head, theta 1e4, LayerNorms without bias, eps 1e-5, head_dim d_model /
 * n_heads, untied, 4 experts of ffn_hidden_size 3584 on every layer, top 1, over their sum), with its nested keys set,
 * and the refusals (clip_qkv missing: transformers' clamp fails). */
static void test_dbrx_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(DBRX_BASE ",\"attn_config\":{\"clip_qkv\":8}}", "dbrx", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 1 && c.rope.theta == 10000.0 && c.head_dim == 16);
    assert_true(c.layer_norm && !c.norm_bias && c.rms_norm_eps == 1e-5 && !c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_true(!c.tie_word_embeddings && c.clip_qkv == 8.0 && c.intermediate_size == 3584 && c.layer_moe[1]);
    assert_true(c.n_routed_experts == 4 && c.experts_per_tok == 1 && c.moe_intermediate_size == 3584 &&
                c.norm_topk_prob);
    assert_int_equal(kvc_model_config_parse(DBRX_BASE ",\"rope_theta\":500000,\"attn_config\":{\"kv_n_heads\":2,"
                                                      "\"clip_qkv\":1.5,\"rope_theta\":500000},\"ffn_config\":{"
                                                      "\"ffn_hidden_size\":24,\"moe_num_experts\":8,\"moe_top_k\":2,"
                                                      "\"moe_normalize_expert_weights\":null,\"ffn_act_fn\":{"
                                                      "\"name\":\"silu\"}}}",
                                            "dbrx-set", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 2 && c.clip_qkv == 1.5 && c.rope.theta == 500000.0 && c.intermediate_size == 24);
    assert_true(c.n_routed_experts == 8 && c.experts_per_tok == 2 && !c.norm_topk_prob);
    expect_refusal(DBRX_BASE "}", "dbrx without attn_config.clip_qkv");
    expect_refusal(DBRX_BASE ",\"attn_config\":{\"clip_qkv\":8,\"rope_theta\":500000}}",
                   "attn_config.rope_theta 500000 is not the rope's theta 10000");
    expect_refusal(DBRX_BASE ",\"attn_config\":{\"clip_qkv\":8},\"ffn_config\":{\"moe_normalize_expert_weights\":2}}",
                   "moe_normalize_expert_weights 2 is not supported");
    expect_refusal(DBRX_BASE ",\"attn_config\":{\"clip_qkv\":8},\"ffn_config\":{\"ffn_act_fn\":{\"name\":\"gelu\"}}}",
                   "ffn_act_fn name \"gelu\"");
    expect_refusal(DBRX_BASE ",\"attn_config\":{\"clip_qkv\":8},\"tie_word_embeddings\":true}",
                   "dbrx with tie_word_embeddings true");
    expect_refusal(DBRX_BASE ",\"num_key_value_heads\":4,\"attn_config\":{\"clip_qkv\":8,\"kv_n_heads\":2}}",
                   "kv_n_heads 2 contradicts num_key_value_heads 4");
    expect_refusal(DBRX_BASE ",\"attn_config\":{\"clip_qkv\":8},\"ffn_config\":{\"moe_top_k\":5}}", "moe_top_k");
}

#define LLAMA4_BASE                                                                                                    \
    "{\"model_type\":\"llama4_text\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                     \
    "\"num_hidden_layers\":8,\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* Llama4TextConfig's defaults (head_dim 128, theta 5e5, eps 1e-5, adjacent pairs, 16 experts of
 * intermediate_size, top 1, a shared expert, the dense MLP of intermediate_size_mlp 16384, every layer MoE,
 * every 4th layer NoPE and full, the others chunked, the L2 q/k norms and the NoPE layers' query scale
 * 0.1 / 8192), the keys that change them, the multimodal text_config, and the refusals. */
static void test_llama4_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(LLAMA4_BASE ",\"attention_chunk_size\":16}", "llama4-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_LLAMA4 && c.head_dim == 128 && c.rope.theta == 500000.0);
    assert_true(c.rms_norm_eps == 1e-5 && c.rope_form == KVC_ROPE_PAIRS && !c.tie_word_embeddings);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && c.qk_l2_norm && c.moe_sigmoid_input);
    assert_true(c.n_routed_experts == 16 && c.experts_per_tok == 1 && c.moe_intermediate_size == 8);
    assert_true(c.shared_expert_intermediate_size == 8 && c.intermediate_size == 16384);
    assert_true(c.query_scale_nope && c.query_scale_beta == 0.1 && c.query_scale_positions == 8192);
    assert_int_equal(c.attention_chunk_size, 16);
    for (int l = 0; l < 8; l++) {
        assert_true(c.layer_moe[l]);
        assert_int_equal(c.layer_nope[l], l % 4 == 3);
        assert_int_equal(c.layer_chunked[l], l % 4 != 3);
        assert_false(c.layer_sliding[l]);
    }
    assert_int_equal(kvc_model_config_parse(LLAMA4_BASE ",\"attention_chunk_size\":null,\"use_qk_norm\":false,"
                                                        "\"attn_temperature_tuning\":false,\"attention_bias\":true,"
                                                        "\"interleave_moe_layer_step\":2,\"no_rope_layers\":[1,0,1,1,"
                                                        "1,1,1,0],\"intermediate_size_mlp\":24,\"num_local_experts\":4,"
                                                        "\"num_experts_per_tok\":2}",
                                            "llama4-set", &c),
                     KVC_OK);
    assert_true(!c.qk_l2_norm && c.query_scale_beta == 0.0 && c.qkv_bias && c.o_bias && c.intermediate_size == 24);
    assert_true(c.n_routed_experts == 4 && c.experts_per_tok == 2 && c.attention_chunk_size == 0);
    for (int l = 0; l < 8; l++) {
        assert_int_equal(c.layer_moe[l], l % 2 == 1);
        assert_int_equal(c.layer_nope[l], l == 1 || l == 7);
        assert_false(c.layer_chunked[l]); /* a null chunk: every layer full */
    }
    assert_int_equal(kvc_model_config_parse(LLAMA4_BASE ",\"attention_chunk_size\":8,\"moe_layers\":[0,5],"
                                                        "\"no_rope_layer_interval\":2}",
                                            "llama4-lists", &c),
                     KVC_OK);
    for (int l = 0; l < 8; l++) {
        assert_int_equal(c.layer_moe[l], l == 0 || l == 5);
        assert_int_equal(c.layer_nope[l], l % 2 == 1);
    }
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"llama4\",\"architectures\":[\"Llama4ForConditionalGeneration\"],"
                               "\"text_config\":" LLAMA4_BASE ",\"attention_chunk_size\":4}}",
                               "llama4-multimodal", &c),
        KVC_OK);
    assert_true(c.family == KVC_FAMILY_LLAMA4 && c.attention_chunk_size == 4 && c.layer_chunked[0]);
    expect_refusal(LLAMA4_BASE "}", "attention_chunk_size is absent (Llama4TextConfig's default 8192");
    expect_refusal("{\"model_type\":\"llama4_text\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":8,\"num_attention_heads\":4,\"attention_chunk_size\":8}",
                   "num_key_value_heads 8 (the key is missing: the default of llama4_text's config");
    expect_refusal(LLAMA4_BASE ",\"attention_chunk_size\":8,\"moe_layers\":[8]}", "moe_layers[0]");
    expect_refusal(LLAMA4_BASE ",\"attention_chunk_size\":8,\"num_local_experts\":2,\"num_experts_per_tok\":3}",
                   "num_experts_per_tok");
    expect_refusal(LLAMA4_BASE ",\"attention_chunk_size\":8,\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\"");
    expect_refusal(LLAMA4_BASE ",\"attention_chunk_size\":8,\"layer_types\":[\"sliding_attention\",\"full_attention\","
                               "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
                               "\"full_attention\",\"full_attention\"],\"sliding_window\":4}",
                   "sliding_attention");
}

/* Phi with PhiConfig's defaults (as many KV heads as heads, RoPE on half of each head, eps 1e-5, gelu_new, every
 * bias and the head's, a parallel block of LayerNorms with bias, untied) and with Phi-2's top-level
 * partial_rotary_factor 0.4 (6 of 16 channels, truncated as transformers), gelu_pytorch_tanh, tied, and gelu (erf);
 * with qk_layernorm (false when absent) the q/k LayerNorms with bias; refused by name: another hidden_act. */
static void test_phi_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(PHI_BASE "}", "phi-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && kvci_model_rot_dim(&c) == 8);
    assert_true(c.layer_norm && c.norm_bias && c.parallel_block && c.mlp_plain && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && c.head_bias && !c.tie_word_embeddings);
    assert_true(c.rms_norm_eps == 1e-5 && c.rope_form == KVC_ROPE_HALF && c.rope.theta == 10000.0 && !c.qk_norm);
    assert_int_equal(kvc_model_config_parse(PHI_BASE
                                            ",\"partial_rotary_factor\":0.4,\"hidden_act\":\"gelu_pytorch_tanh\","
                                            "\"tie_word_embeddings\":true,\"layer_norm_eps\":1e-3,"
                                            "\"num_key_value_heads\":2,\"qk_layernorm\":false}",
                                            "phi-set", &c),
                     KVC_OK);
    assert_true(kvci_model_rot_dim(&c) == 6 && c.tie_word_embeddings && c.head_bias && c.rms_norm_eps == 1e-3);
    assert_true(c.num_kv_heads == 2 && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_int_equal(kvc_model_config_parse(PHI_BASE ",\"hidden_act\":\"gelu\"}", "phi-gelu", &c), KVC_OK);
    assert_true(c.mlp_act == KVC_MLP_GELU);
    assert_int_equal(kvc_model_config_parse(PHI_BASE ",\"qk_layernorm\":true}", "phi-qk", &c), KVC_OK);
    assert_true(c.qk_norm && !c.qk_norm_whole && c.layer_norm && c.parallel_block);
    expect_refusal(PHI_BASE ",\"hidden_act\":\"silu\"}", "hidden_act \"silu\" is not supported (phi: gelu, gelu_new");
}

/* GPT-NeoX with GPTNeoXConfig's defaults (parallel residual with the MLP's own LayerNorm, RoPE on a quarter of each
 * head at theta 1e4, exact GELU, every bias, eps 1e-5, untied) and with the hub's legacy keys rotary_pct 0.5 and
 * rotary_emb_base 5e4 (a rope dict wins over them), the sequential block, no attention biases, gelu_fast; refused
 * by name: another hidden_act, a head_dim or KV head count its attention does not use; in a caller's own struct,
 * the MLP's own norm without a parallel block. */
static void test_gpt_neox_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(NEOX_BASE "}", "neox-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && kvci_model_rot_dim(&c) == 4);
    assert_true(c.parallel_block && c.parallel_mlp_norm && c.layer_norm && c.norm_bias && c.mlp_plain);
    assert_true(c.mlp_act == KVC_MLP_GELU && c.qkv_bias && c.o_bias && c.mlp_bias && !c.head_bias);
    assert_true(c.rms_norm_eps == 1e-5 && c.rope.theta == 10000.0 && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(NEOX_BASE ",\"rotary_pct\":0.5,\"rotary_emb_base\":50000,"
                                                      "\"use_parallel_residual\":false,\"attention_bias\":false,"
                                                      "\"hidden_act\":\"gelu_fast\",\"tie_word_embeddings\":true}",
                                            "neox-set", &c),
                     KVC_OK);
    assert_true(kvci_model_rot_dim(&c) == 8 && c.rope.theta == 50000.0 && !c.parallel_block && !c.parallel_mlp_norm);
    assert_true(!c.qkv_bias && !c.o_bias && c.mlp_bias && c.mlp_act == KVC_MLP_GELU_TANH && c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(NEOX_BASE
                                            ",\"rotary_pct\":0.5,\"rope_parameters\":{\"rope_type\":"
                                            "\"default\",\"rope_theta\":20000,\"partial_rotary_factor\":1.0}}",
                                            "neox-dict", &c),
                     KVC_OK);
    assert_true(kvci_model_rot_dim(&c) == 16 && c.rope.theta == 20000.0);
    expect_refusal(NEOX_BASE ",\"hidden_act\":\"silu\"}", "hidden_act \"silu\" is not supported (gpt_neox: gelu");
    /* head_dim and num_key_value_heads keys are not read: GPTNeoXAttention never reads them (nor the planner) */
    assert_int_equal(kvc_model_config_parse(NEOX_BASE ",\"head_dim\":8,\"num_key_value_heads\":2}", "neox-keys", &c),
                     KVC_OK);
    assert_true(c.head_dim == 16 && c.num_kv_heads == 4);
    assert_int_equal(kvc_model_config_parse(NEOX_BASE ",\"use_parallel_residual\":false}", "neox", &c), KVC_OK);
    c.parallel_mlp_norm = true;
    expect_create_refusal(&c, "parallel_mlp_norm needs parallel_block");
    c.parallel_mlp_norm = false, c.mlp_act = KVC_MLP_RELU, c.mlp_plain = false; /* gelu gated: ModernBERT's GeGLU */
    expect_create_refusal(&c, "2 (relu2), 3 (gelu) or, with mlp_plain, 4 (relu) or 5 (xielu)");
}

/* One forward of T <= 8 tokens at positions 0..T-1 of a random model of cfg (vocab_size <= 8): its status. */
static kvc_status forward_positions(const kvc_model_config *cfg, int64_t T) {
    kvc_model *m = NULL;
    const int32_t ids[8] = {0};
    float lg[8 * 8];
    assert_true(T <= 8 && cfg->vocab_size <= 8);
    assert_int_equal(kvc_model_create_random(cfg, 3, &m), KVC_OK);
    const kvc_status st = kvc_test_prompt_forward(m, ids, T, 8, lg);
    kvc_model_destroy(m);
    return st;
}

/* GPT-2 with GPT2Config's defaults (n_inner 4 x n_embd, n_positions 1024, gelu_new, eps 1e-5, every bias, learned
 * positions and no RoPE on any layer, tied) and with n_inner, n_positions, gelu, layer_norm_epsilon set; refused by
 * name: the four attention switches the runtime does not run, another activation_function; a random model with
 * n_positions 4 runs 4 tokens and refuses a fifth position by name. */
static void test_gpt2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GPT2_BASE "}", "gpt2-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.hidden_size == 32 && c.num_heads == 4 && c.num_kv_heads == 4);
    assert_true(c.head_dim == 8 && c.intermediate_size == 128 && c.max_position_embeddings == 1024);
    assert_true(c.pos_learned && c.pos_offset == 0 && c.layer_nope[0] && c.layer_nope[1] && c.tie_word_embeddings);
    assert_true(c.mlp_act == KVC_MLP_GELU_TANH && c.mlp_plain && c.layer_norm && c.norm_bias && c.rms_norm_eps == 1e-5);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && !c.head_bias && !c.parallel_block);
    /* num_key_value_heads / head_dim keys (a config written from a shared template) are not read, as GPT2Attention
     * never reads them; the planner reads the same */
    const char *extra = GPT2_BASE ",\"num_key_value_heads\":2,\"head_dim\":16,\"n_positions\":64}";
    assert_int_equal(kvc_model_config_parse(extra, "gpt2-extra-keys", &c), KVC_OK);
    assert_true(c.num_kv_heads == 4 && c.head_dim == 8);
    kvc_model_plan *plan = NULL;
    const kvc_plan_options opt = kvc_plan_default_options();
    assert_int_equal(kvc_model_plan_create(extra, strlen(extra), &opt, &plan), KVC_OK);
    assert_true(plan->num_key_value_heads == 4 && plan->head_dim == 8);
    kvc_model_plan_destroy(plan);
    /* nor a rope dict (learned positions: GPT-2 reads none), scaled and partial as a template may carry it */
    assert_int_equal(kvc_model_config_parse(GPT2_BASE ",\"rope_parameters\":{\"rope_type\":\"llama3\",\"factor\":8,"
                                                      "\"low_freq_factor\":1,\"high_freq_factor\":4,"
                                                      "\"original_max_position_embeddings\":16,"
                                                      "\"partial_rotary_factor\":0.5,\"rope_theta\":5e4}}",
                                            "gpt2-rope-dict", &c),
                     KVC_OK);
    assert_true(c.pos_learned && c.layer_nope[0] && c.layer_nope[1]);
    assert_int_equal(kvc_model_config_parse(GPT2_BASE
                                            ",\"n_inner\":null,\"n_positions\":4,\"activation_function\":"
                                            "\"gelu\",\"layer_norm_epsilon\":1e-3,\"scale_attn_weights\":true}",
                                            "gpt2-set", &c),
                     KVC_OK);
    assert_true(c.intermediate_size == 128 && c.max_position_embeddings == 4 && c.mlp_act == KVC_MLP_GELU);
    assert_true(c.rms_norm_eps == 1e-3);
    assert_int_equal(forward_positions(&c, 4), KVC_OK);
    assert_int_equal(forward_positions(&c, 5), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "positions[4] = 4 is beyond the model's 4 learned positions"));
    assert_int_equal(kvc_model_config_parse(GPT2_BASE ",\"n_inner\":48}", "gpt2-inner", &c), KVC_OK);
    assert_true(c.intermediate_size == 48);
    /* stanford-crfm's keys: layer l's scale divided by l + 1; float32 scores (the runtime's); strict bools */
    assert_int_equal(kvc_model_config_parse(GPT2_BASE ",\"scale_attn_by_inverse_layer_idx\":true,"
                                                      "\"reorder_and_upcast_attn\":true}",
                                            "gpt2-crfm", &c),
                     KVC_OK);
    assert_true(c.attn_scale_inverse_layer);
    assert_int_equal(kvc_model_config_parse(GPT2_BASE "}", "gpt2-plain", &c), KVC_OK);
    assert_false(c.attn_scale_inverse_layer);
    expect_refusal(GPT2_BASE ",\"reorder_and_upcast_attn\":1}", "reorder_and_upcast_attn");
    expect_refusal(BIGCODE_BASE ",\"scale_attn_by_inverse_layer_idx\":true}",
                   "gpt_bigcode with scale_attn_by_inverse_layer_idx true is not supported");
    expect_refusal(GPT2_BASE ",\"add_cross_attention\":true}", "gpt2 with add_cross_attention true");
    expect_refusal(GPT2_BASE ",\"activation_function\":\"silu\"}", "activation_function \"silu\" is not supported");
    c.pos_learned = false, c.pos_offset = 2;
    expect_create_refusal(&c, "pos_offset 2 must be in");
}

/* GPT-BigCode with GPTBigCodeConfig's defaults (multi_query: one KV head whatever num_key_value_heads says, n_inner
 * 4 x n_embd, n_positions 1024, gelu_pytorch_tanh, every bias, learned positions, tied) and without multi_query (as
 * many KV heads as heads, gelu); refused by name: cross-attention, another activation. */
static void test_gpt_bigcode_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(BIGCODE_BASE ",\"num_key_value_heads\":4}", "bigcode-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_heads == 4 && c.num_kv_heads == 1 && c.head_dim == 8);
    assert_true(c.intermediate_size == 128 && c.max_position_embeddings == 1024 && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_true(c.pos_learned && c.pos_offset == 0 && c.layer_nope[1] && c.tie_word_embeddings && c.mlp_plain);
    assert_true(c.layer_norm && c.norm_bias && c.qkv_bias && c.o_bias && c.mlp_bias && c.rms_norm_eps == 1e-5);
    assert_int_equal(kvc_model_config_parse(BIGCODE_BASE ",\"multi_query\":false,\"activation_function\":\"gelu\","
                                                         "\"n_inner\":48,\"tie_word_embeddings\":false}",
                                            "bigcode-mha", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 4 && c.mlp_act == KVC_MLP_GELU && c.intermediate_size == 48);
    assert_true(!c.tie_word_embeddings);
    expect_refusal(BIGCODE_BASE ",\"add_cross_attention\":true}", "gpt_bigcode with add_cross_attention true");
    expect_refusal(BIGCODE_BASE ",\"activation_function\":\"silu\"}",
                   "activation_function \"silu\" is not supported (gpt_bigcode");
}

/* Falcon with FalconConfig's defaults (multi_query: one KV head whatever num_key_value_heads says, parallel block on
 * one LayerNorm, no biases, RoPE on the whole head at 1e4, gelu, ffn_hidden_size 4 x hidden, eps 1e-5, tied), with
 * new_decoder_architecture (num_kv_heads, heads when null; ln_attn / ln_mlp unless num_ln_in_parallel_attn 1) and
 * the sequential block; refused by name: alibi, the combinations transformers cannot run, another activation. */
static void test_falcon_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(FALCON_BASE ",\"num_key_value_heads\":4}", "falcon-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 1 && c.head_dim == 8 && c.intermediate_size == 128);
    assert_true(c.parallel_block && !c.parallel_mlp_norm && !c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_true(c.layer_norm && c.norm_bias && c.mlp_plain && c.mlp_act == KVC_MLP_GELU && c.rms_norm_eps == 1e-5);
    assert_true(c.tie_word_embeddings && !c.pos_learned && !c.layer_nope[0] && kvci_model_rot_dim(&c) == 8);
    assert_true(c.rope.theta == 10000.0 && c.max_position_embeddings == 2048);
    assert_int_equal(kvc_model_config_parse(FALCON_BASE ",\"new_decoder_architecture\":true,\"num_kv_heads\":2,"
                                                        "\"bias\":true,\"ffn_hidden_size\":null,"
                                                        "\"activation\":\"gelu_new\"}",
                                            "falcon-new", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 2 && c.parallel_block && c.parallel_mlp_norm && c.qkv_bias && c.o_bias);
    assert_true(c.mlp_bias && c.intermediate_size == 128 && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_int_equal(kvc_model_config_parse(FALCON_BASE ",\"new_decoder_architecture\":true,\"num_kv_heads\":null,"
                                                        "\"num_ln_in_parallel_attn\":1}",
                                            "falcon-new-one-ln", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 4 && c.parallel_block && !c.parallel_mlp_norm);
    assert_int_equal(kvc_model_config_parse(FALCON_BASE ",\"multi_query\":false,\"parallel_attn\":false,"
                                                        "\"ffn_hidden_size\":24}",
                                            "falcon-seq", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 4 && !c.parallel_block && c.intermediate_size == 24);
    assert_int_equal(kvc_model_config_parse(FALCON_BASE ",\"alibi\":true,\"multi_query\":false}", "falcon-rw", &c),
                     KVC_OK);
    assert_true(c.alibi && c.alibi_in_scale && c.alibi_bias_max == 0.0 && c.layer_nope[0] && c.layer_nope[1]);
    assert_true(!c.embed_norm && c.num_kv_heads == 4);
    expect_refusal(FALCON_BASE ",\"new_decoder_architecture\":true,\"parallel_attn\":false}",
                   "falcon with new_decoder_architecture true and parallel_attn false is not supported");
    expect_refusal(FALCON_BASE ",\"num_ln_in_parallel_attn\":2}",
                   "falcon with num_ln_in_parallel_attn 2 without new_decoder_architecture");
    expect_refusal(FALCON_BASE ",\"multi_query\":false,\"num_kv_heads\":2}",
                   "falcon with multi_query false needs num_kv_heads 2 equal to num_attention_heads 4");
    expect_refusal(FALCON_BASE ",\"activation\":\"silu\"}", "activation \"silu\" is not supported (falcon");
}

/* BLOOM with BloomConfig's keys (n_layer, n_head, hidden_size or the older n_embed): the embeddings LayerNorm,
 * LayerNorms with bias, every bias, BloomGelu (the tanh form), 4 x hidden, ALiBi after the scale, tied; refused by
 * name: apply_residual_connection_post_layernorm. Falcon with alibi: BLOOM's slopes rounded to bf16. MPT (d_model,
 * n_heads, n_layers, attn_config): clip_qkv, softmax_scale and alibi_bias_max read from attn_config; refused by name
 * what MptForCausalLM ignores. The slopes of both, and Falcon's scaled ones, against transformers' formulas written out
 * by hand. */
static void test_alibi_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(BLOOM_BASE ",\"hidden_size\":48}", "bloom", &c), KVC_OK);
    assert_true(c.alibi && !c.alibi_in_scale && c.alibi_bias_max == 0.0 && c.embed_norm && c.head_dim == 8);
    assert_true(c.layer_norm && c.norm_bias && c.qkv_bias && c.o_bias && c.mlp_bias && c.mlp_plain);
    assert_true(c.mlp_act == KVC_MLP_GELU_TANH && c.intermediate_size == 192 && c.tie_word_embeddings);
    assert_true(c.num_kv_heads == 6 && c.layer_nope[0] && c.layer_nope[1] && c.rms_norm_eps == 1e-5);
    float s[16];                    /* the most heads asked of kvci_model_alibi_slopes below */
    kvci_model_alibi_slopes(&c, s); /* 4 of 2^-2 (2^-8/4), then 2^-1, 2^-3 (odd powers of 2^-4/4) */
    const float bloom6[6] = {0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f};
    assert_memory_equal(s, bloom6, sizeof bloom6);
    assert_int_equal(kvc_model_config_parse(BLOOM_BASE ",\"n_embed\":48}", "bloom-n-embed", &c), KVC_OK);
    assert_true(c.hidden_size == 48);
    expect_refusal(BLOOM_BASE ",\"hidden_size\":48,\"apply_residual_connection_post_layernorm\":true}",
                   "bloom with apply_residual_connection_post_layernorm true is not supported");
    assert_int_equal(kvc_model_config_parse(MPT_BASE "}", "mpt", &c), KVC_OK);
    assert_true(c.alibi && !c.alibi_in_scale && c.alibi_bias_max == 8.0 && !c.embed_norm && c.head_dim == 8);
    assert_true(c.layer_norm && !c.norm_bias && !c.qkv_bias && !c.o_bias && !c.mlp_bias && c.clip_qkv == 0.0);
    assert_true(c.mlp_act == KVC_MLP_GELU && c.intermediate_size == 160 && c.tie_word_embeddings);
    assert_true(c.max_position_embeddings == 64 && c.attention_multiplier == 0.0);
    kvci_model_alibi_slopes(&c, s); /* 8 slopes 2^-k, k even first: 2^-2, 2^-4, 2^-6, 2^-8, 2^-1 */
    const float mpt5[5] = {0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f};
    assert_memory_equal(s, mpt5, sizeof mpt5);
    assert_int_equal(kvc_model_config_parse(MPT_BASE ",\"attn_config\":{\"clip_qkv\":2,\"softmax_scale\":0.5,"
                                                     "\"alibi_bias_max\":8}}",
                                            "mpt-attn", &c),
                     KVC_OK);
    assert_true(c.clip_qkv == 2.0 && c.attention_multiplier == 0.5 && kvc_model_attn_scale(&c) == 0.5);
    c.alibi_bias_max = 16.0;        /* the formula at another bias_max (no config reaches it) */
    kvci_model_alibi_slopes(&c, s); /* 2^-(2k * 16 / 8) for even k first */
    assert_true(s[0] == 0.0625f && s[4] == 0.25f);
    static const char *const refused[][2] = {
        {",\"attn_config\":{\"alibi\":false}}", "attn_config.alibi false"},
        {",\"attn_config\":{\"qk_ln\":true}}", "attn_config.qk_ln true"},
        {",\"attn_config\":{\"attn_type\":\"multiquery_attention\"}}", "attn_type other than multihead"},
        {",\"attn_config\":{\"prefix_lm\":true}}", "attn_config.prefix_lm true"},
        {",\"no_bias\":false}", "no_bias false"},
        {",\"expansion_ratio\":2}", "expansion_ratio other than 4"},
        {",\"logit_scale\":2.0}", "a logit_scale"},
        {",\"attn_config\":{\"alibi_bias_max\":6}}", "alibi_bias_max other than 8"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", MPT_BASE, refused[i][0]);
        expect_refusal(text, refused[i][1]);
    }
    assert_int_equal(kvc_model_config_parse(MPT_BASE ",\"logit_scale\":null}", "mpt-null-logit-scale", &c), KVC_OK);
    assert_int_equal(kvc_model_config_parse(FALCON_BASE ",\"alibi\":true,\"multi_query\":false}", "falcon-rw", &c),
                     KVC_OK);
    c.num_heads = 16;               /* 2^(-k/2) rounded to bf16: 2^-0.5 is 0.70703125, not 0.70710677 */
    kvci_model_alibi_slopes(&c, s); /* (the bias before the scale, at bf16 precision) */
    assert_true(s[0] == 0.70703125f && s[1] == 0.5f && s[2] == 0.353515625f);
}

/* GPT-J with GPTJConfig's defaults (rotary_dim 64 of head_dim 16: the whole head; theta 1e4 whatever rope_theta
 * says, adjacent pairs, a parallel block on one LayerNorm, no q/k/v/o biases, MLP and head biases, n_inner 4 x n_embd,
 * gelu_new, untied) and with rotary_dim 6 of 16; refused by name: rotary_dim null or above head_dim. */
static void test_gptj_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GPTJ_BASE ",\"rotary_dim\":16,\"rope_theta\":5e5}", "gptj-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.num_kv_heads == 2 && c.intermediate_size == 128);
    assert_true(kvci_model_rot_dim(&c) == 16 && c.rope.theta == 10000.0 && c.rope_form == KVC_ROPE_PAIRS);
    assert_true(c.parallel_block && !c.parallel_mlp_norm && !c.qkv_bias && !c.o_bias && c.mlp_bias && c.head_bias);
    assert_true(c.layer_norm && c.norm_bias && c.mlp_plain && c.mlp_act == KVC_MLP_GELU_TANH && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(GPTJ_BASE ",\"rotary_dim\":6,\"n_inner\":null}", "gptj-6", &c), KVC_OK);
    assert_true(kvci_model_rot_dim(&c) == 6 && c.intermediate_size == 128);
    expect_refusal(GPTJ_BASE "}", "gptj with rotary_dim above head_dim is not supported (at most head_dim 16)");
    expect_refusal(GPTJ_BASE ",\"rotary_dim\":null}", "gptj with rotary_dim null is not supported");
    expect_refusal(GPTJ_BASE ",\"rotary_dim\":8,\"activation_function\":\"silu\"}",
                   "activation_function \"silu\" is not supported (gptj");
}

/* The plan of config json, which the planner must take, of family `family` (destroy it). */
static kvc_model_plan *plan_of(const char *json, const char *family) {
    kvc_model_plan *plan = NULL;
    const kvc_plan_options opt = kvc_plan_default_options();
    if (kvc_model_plan_create(json, strlen(json), &opt, &plan) != KVC_OK) fail_msg("%s", kvc_last_error());
    assert_string_equal(plan->family, family);
    return plan;
}

/* scale_attn_weights false (GPT-2, GPT-BigCode): the softmax unscaled, in the runtime and the plan; GPT-2's layer
 * division still applies on top; a non-bool refused by name. */
static void test_gpt2_unscaled_softmax(void **state) {
    (void)state;
    static const char *const configs[] = {GPT2_BASE ",\"n_positions\":64,\"scale_attn_weights\":false}",
                                          BIGCODE_BASE ",\"n_positions\":64,\"scale_attn_weights\":false}"};
    static const char *const families[] = {"gpt2", "gpt_bigcode"};
    for (int i = 0; i < 2; i++) {
        kvc_model_config c;
        assert_int_equal(kvc_model_config_parse(configs[i], "unscaled", &c), KVC_OK);
        assert_true(kvc_model_attn_scale(&c) == 1.0);
        kvc_model_plan *plan = plan_of(configs[i], families[i]);
        assert_true(plan->scale == 1.0);
        kvc_model_plan_destroy(plan);
    }
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GPT2_BASE "}", "scaled", &c), KVC_OK);
    assert_true(fabs(kvc_model_attn_scale(&c) - 1.0 / sqrt(8.0)) < 1e-15);
    kvc_model_plan *plan = plan_of(GPT2_BASE ",\"n_positions\":64}", "gpt2");
    assert_true(fabs(plan->scale - 1.0 / sqrt(8.0)) < 1e-15);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(GPT2_BASE ",\"scale_attn_weights\":false,"
                                                      "\"scale_attn_by_inverse_layer_idx\":true}",
                                            "unscaled-crfm", &c),
                     KVC_OK);
    assert_true(kvc_model_attn_scale(&c) == 1.0 && c.attn_scale_inverse_layer);
    expect_refusal(GPT2_BASE ",\"scale_attn_weights\":0}", "scale_attn_weights");
}

/* A config of model_type `type` without its closing brace: hidden 64 in 4 heads, 2 layers, 64 positions. */
#define TOY64_BASE(type)                                                                                               \
    "{\"model_type\":\"" type "\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_attention_heads\":4,\"num_hidden_layers\":2,\"max_position_embeddings\":64"

/* The planner plans json as family with head_dim D over kv KV heads. */
static void expect_plan_heads(const char *json, const char *family, int64_t D, int64_t kv) {
    kvc_model_plan *plan = plan_of(json, family);
    assert_true(plan->head_dim == D && plan->num_key_value_heads == kv);
    kvc_model_plan_destroy(plan);
}

#define JETMOE_BASE "{\"model_type\":\"jetmoe\",\"vocab_size\":8,\"hidden_size\":64,\"num_hidden_layers\":2"

/* JetMoE with JetMoeConfig's defaults (16 KV heads of kv_channels 128, 8 experts, top 2: 32 query heads whatever
 * num_attention_heads says; intermediate 5632, layer norms' eps 1e-6, the final norm's rms_norm_eps, theta 1e4,
 * tied) and with its keys set; the planner's heads and dims; refused: another activation, top-k above the experts,
 * tensor parallelism. */
static void test_jetmoe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(JETMOE_BASE ",\"num_attention_heads\":5}", "jetmoe", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.attention_experts && c.num_kv_heads == 16 && c.num_heads == 32);
    assert_true(c.head_dim == 128 && c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.intermediate_size == 5632);
    assert_true(c.moe_intermediate_size == 5632 && c.layer_moe[0] && c.layer_moe[1] && c.tie_word_embeddings);
    assert_true(c.rms_norm_eps == 1e-6 && c.final_norm_eps == 1e-6 && c.rope.theta == 1e4 && !c.qkv_bias);
    assert_true(kvc_model_attn_scale(&c) == 1.0 / sqrt(128.0) && c.max_position_embeddings == 4096);
    expect_plan_heads(JETMOE_BASE "}", "jetmoe", 128, 16);
    assert_int_equal(kvc_model_config_parse(JETMOE_BASE ",\"num_key_value_heads\":2,\"kv_channels\":16,"
                                                        "\"num_local_experts\":4,\"num_experts_per_tok\":3,"
                                                        "\"intermediate_size\":24,\"rms_norm_eps\":1e-5,"
                                                        "\"tie_word_embeddings\":false}",
                                            "jetmoe-set", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 2 && c.num_heads == 6 && c.head_dim == 16 && c.n_routed_experts == 4);
    assert_true(c.experts_per_tok == 3 && c.moe_intermediate_size == 24 && !c.tie_word_embeddings);
    assert_true(c.rms_norm_eps == 1e-6 && c.final_norm_eps == 1e-5);
    expect_plan_heads(JETMOE_BASE ",\"num_key_value_heads\":2,\"kv_channels\":16}", "jetmoe", 16, 2);
    expect_refusal(JETMOE_BASE ",\"activation_function\":\"gelu\"}", "activation_function \"gelu\"");
    expect_refusal(JETMOE_BASE ",\"kv_channels\":23}", "kv_channels 23 must be even"); /* was named head_dim */
    expect_refusal(JETMOE_BASE ",\"num_local_experts\":1}",
                   "num_experts_per_tok 2 must be in [1, num_local_experts = 1]");
    kvc_model_config sh;
    assert_int_equal(kvc_model_config_parse(JETMOE_BASE "}", "jetmoe", &c), KVC_OK);
    assert_int_equal(kvci_model_shard_config(&c, 2, &sh), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "not supported for jetmoe"));
}

/* VaultGemma with VaultGemmaConfig's defaults (Gemma 2's: head_dim 256, window 4096, even layers sliding, scale
 * 256^-1/2, soft-caps 50 and 30, tied) and Gemma 2's layer without its post norms; the planner plans it as Gemma 2's
 * family with those windows and that scale; refused by name: hidden_size not a multiple of the heads. */
static void test_vaultgemma_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def =
        "{\"model_type\":\"vaultgemma\"," MOE_BASE "\"num_hidden_layers\":3,\"max_position_embeddings\":8192}";
    assert_int_equal(kvc_model_config_parse(def, "vaultgemma", &c), KVC_OK);
    for (int l = 0; l < 3; l++) assert_true(c.layer_sliding[l] == (l % 2 == 0));
    assert_true(c.family == KVC_FAMILY_GEMMA2 && c.sliding_window == 4096 && c.head_dim == 256 && !c.qk_norm);
    assert_true(c.gemma_norms && !c.sandwich_norms && c.tie_word_embeddings && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_true(c.attn_logit_softcapping == 50.0 && c.final_logit_softcapping == 30.0);
    assert_true(kvc_model_attn_scale(&c) == 1.0 / 16.0 && c.embed_scale == (float)sqrt(8.0) && c.rope.theta == 1e4);
    kvc_model_plan *plan = plan_of(def, "vaultgemma");
    assert_true(plan->scale == 1.0 / 16.0 && plan->head_dim == 256 && plan->layers[0].sliding_window == 4096);
    assert_true(plan->layers[1].sliding_window == 0);
    kvc_model_plan_destroy(plan);
    expect_refusal("{\"model_type\":\"vaultgemma\",\"vocab_size\":8,\"hidden_size\":9,\"intermediate_size\":8,"
                   "\"num_attention_heads\":2,\"num_key_value_heads\":2,\"num_hidden_layers\":2}",
                   "vaultgemma with hidden_size 9 not a multiple of num_attention_heads 2 is not supported");
    expect_refusal("{\"model_type\":\"vaultgemma\"," MOE_BASE "\"num_hidden_layers\":2,\"hidden_activation\":\"silu\"}",
                   "(vaultgemma: gelu_pytorch_tanh)");
}

/* FlexOlmo with FlexOlmoConfig's defaults (OLMo 2's layer: post norms, whole q/k norms, no clipping, no window; 7
 * experts of intermediate_size on every layer, top 5, not renormalised; eps 1e-6, theta 5e5, untied); clip_qkv and
 * sliding_window are not read (FlexOlmo's attention has neither); refused by name: top-k above the experts. */
static void test_flex_olmo_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"flex_olmo\"," MOE_BASE "\"num_hidden_layers\":2,\"clip_qkv\":1.5,"
                      "\"sliding_window\":4,\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(def, "flex_olmo", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.post_norms && c.qk_norm && c.qk_norm_whole && c.clip_qkv == 0.0);
    assert_true(c.n_routed_experts == 7 && c.experts_per_tok == 5 && !c.norm_topk_prob && c.layer_moe[0]);
    assert_true(c.layer_moe[1] && c.moe_intermediate_size == 8 && c.rms_norm_eps == 1e-6 && c.rope.theta == 5e5);
    assert_true(!c.tie_word_embeddings && !c.qkv_bias && !c.o_bias && c.sliding_window == 0 && !c.layer_sliding[0]);
    kvc_model_plan *plan = plan_of(def, "flex_olmo");
    assert_true(plan->layers[0].sliding_window == 0 && plan->layers[1].sliding_window == 0);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"flex_olmo\"," MOE_BASE
                                            "\"num_hidden_layers\":2,\"num_experts\":4,\"num_experts_per_tok\":2,"
                                            "\"norm_topk_prob\":true,\"attention_bias\":true,\"rms_norm_eps\":1e-5}",
                                            "flex_olmo-set", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 4 && c.experts_per_tok == 2 && c.norm_topk_prob && c.qkv_bias && c.o_bias);
    assert_true(c.rms_norm_eps == 1e-5);
    expect_refusal("{\"model_type\":\"flex_olmo\"," MOE_BASE "\"num_hidden_layers\":2,\"num_experts\":4}",
                   "num_experts_per_tok 5 must be in [1, num_experts = 4]");
}

/* HunYuan dense with HunYuanDenseV1Config's defaults (Llama's layer, per-head q/k norms after RoPE, no biases, eps
 * 1e-5, theta 1e4, KV heads = heads, untied) and with the hub's "dynamic" rope carrying an alpha (theta x alpha^(D / (D
 * - 2)), a default rope, planner alike); refused by name: head_dim absent or null, "dynamic" without an alpha. */
static void test_hunyuan_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"hunyuan_v1_dense\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":4,"
                      "\"use_qk_norm\":false,\"sliding_window\":4,\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(def, "hunyuan", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.qk_norm && c.qk_norm_after_rope && !c.qk_norm_whole);
    assert_true(c.head_dim == 4 && c.num_kv_heads == 2 && c.rms_norm_eps == 1e-5 && c.rope.theta == 1e4);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings && c.sliding_window == 0);
    const char *hub = "{\"model_type\":\"hunyuan_v1_dense\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":4,"
                      "\"rope_theta\":10000.0,\"rope_scaling\":{\"alpha\":1000.0,\"beta_fast\":32,\"beta_slow\":1,"
                      "\"factor\":1.0,\"mscale\":1.0,\"mscale_all_dim\":1.0,\"type\":\"dynamic\"},"
                      "\"attention_bias\":true,\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(hub, "hunyuan-hub", &c), KVC_OK);
    assert_true(c.rope.type == KVC_ROPE_DEFAULT && c.rope.theta == 1e4 * pow(1000.0, 2.0) && c.qkv_bias && c.o_bias);
    kvc_model_plan *plan = plan_of(hub, "hunyuan_v1_dense");
    assert_string_equal(plan->rope_type, "default");
    assert_true(plan->head_dim == 4 && plan->num_key_value_heads == 2);
    kvc_model_plan_destroy(plan);
    expect_refusal("{\"model_type\":\"hunyuan_v1_dense\"," MOE_BASE "\"num_hidden_layers\":2}",
                   "hunyuan_v1_dense without head_dim is not supported");
    expect_refusal("{\"model_type\":\"hunyuan_v1_dense\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":null}",
                   "hunyuan_v1_dense without head_dim is not supported");
    expect_refusal("{\"model_type\":\"hunyuan_v1_dense\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":4,"
                   "\"rope_scaling\":{\"type\":\"dynamic\",\"factor\":2.0}}",
                   "rope type \"dynamic\" is not supported");
    /* HunYuan MoE: the same attention and rope; HunYuanMoEV1Config's 1 expert of top 1 when absent, always
     * renormalised, the shared MLP and the experts of intermediate_size; lists per layer refused */
    const char *moe = "{\"model_type\":\"hunyuan_v1_moe\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":4,"
                      "\"rope_scaling\":{\"alpha\":1000.0,\"type\":\"dynamic\"},\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(moe, "hunyuan-moe", &c), KVC_OK);
    assert_true(c.qk_norm_after_rope && c.rope.theta == 1e4 * pow(1000.0, 2.0) && c.n_routed_experts == 1);
    assert_true(c.experts_per_tok == 1 && c.norm_topk_prob && c.moe_intermediate_size == 8 && c.layer_moe[1]);
    assert_true(c.shared_expert_intermediate_size == 8 && c.n_group == 0 && c.rms_norm_eps == 1e-5);
    plan = plan_of(moe, "hunyuan_v1_moe");
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"hunyuan_v1_moe\"," MOE_BASE
                                            "\"num_hidden_layers\":2,\"head_dim\":4,\"num_experts\":4,\"moe_topk\":2}",
                                            "hunyuan-moe-4", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 4 && c.experts_per_tok == 2);
    expect_refusal("{\"model_type\":\"hunyuan_v1_moe\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":4,"
                   "\"num_experts\":[4,4]}",
                   "hunyuan_v1_moe with num_experts per layer (a list) is not supported");
    expect_refusal("{\"model_type\":\"hunyuan_v1_moe\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":4,"
                   "\"moe_topk\":[1,1]}",
                   "hunyuan_v1_moe with moe_topk per layer (a list) is not supported");
    expect_refusal("{\"model_type\":\"hunyuan_v1_moe\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":4,"
                   "\"num_experts\":2,\"moe_topk\":3}",
                   "moe_topk 3 must be in [1, num_experts = 2]");
}

/* BioGPT with BioGptConfig's defaults (learned positions offset by 2 over 1024 rows, embeddings times sqrt(hidden),
 * LayerNorms at eps 1e-5 whatever layer_norm_eps says, biases everywhere but the head, intermediate 4096, gelu, tied);
 * scale_embedding false and set keys; head_dim / num_key_value_heads / rope keys not read. */
static void test_biogpt_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"biogpt\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":2,"
                      "\"num_attention_heads\":4,\"layer_norm_eps\":1e-12,\"head_dim\":16,\"num_key_value_heads\":2,"
                      "\"rope_theta\":5e5}";
    assert_int_equal(kvc_model_config_parse(def, "biogpt", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 8 && c.num_kv_heads == 4 && c.intermediate_size == 4096);
    assert_true(c.pos_learned && c.pos_offset == 2 && c.max_position_embeddings == 1024 && c.layer_nope[1]);
    assert_true(c.embed_scale == (float)sqrt(32.0) && c.rms_norm_eps == 1e-5 && c.tie_word_embeddings);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && !c.head_bias && c.layer_norm && c.norm_bias && c.mlp_plain);
    assert_true(c.mlp_act == KVC_MLP_GELU && !c.parallel_block);
    kvc_model_plan *plan = plan_of(def, "biogpt");
    assert_true(plan->options.max_model_len == 1024 && plan->head_dim == 8 && plan->num_key_value_heads == 4);
    kvc_model_plan_destroy(plan);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"biogpt\",\"vocab_size\":8,\"hidden_size\":32,"
                               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"scale_embedding\":false,"
                               "\"intermediate_size\":48,\"max_position_embeddings\":16,"
                               "\"hidden_act\":\"relu\",\"tie_word_embeddings\":false}",
                               "biogpt-set", &c),
        KVC_OK);
    assert_true(c.embed_scale == 0.0f && c.intermediate_size == 48 && c.max_position_embeddings == 16);
    assert_true(c.mlp_act == KVC_MLP_RELU && !c.tie_word_embeddings);
    expect_refusal("{\"model_type\":\"biogpt\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":2,"
                   "\"num_attention_heads\":4,\"hidden_act\":\"silu\"}",
                   "hidden_act \"silu\" is not supported (biogpt");
}

/* dots.llm1 with Dots1Config's defaults (Qwen3's attention: per-head q/k norms, biases by attention_bias on q/k/v/o;
 * DeepSeek-V3's router on every layer from first_k_dense_replace 0, norm_topk_prob false, n_group / topk_group 1,
 * scale 1; eps 1e-6; 32 KV heads when the key is missing; window 4096 from max_window_layers 62 on, use_sliding_window
 * not read); refused by name: n_routed_experts, n_shared_experts or num_experts_per_tok absent (None in the class). */
static void test_dots1_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define DOTS1_BASE                                                                                                     \
    "{\"model_type\":\"dots1\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,\"num_attention_heads\":2,"  \
    "\"num_key_value_heads\":2,\"num_hidden_layers\":3,\"max_position_embeddings\":8192,"
    const char *def = DOTS1_BASE "\"n_routed_experts\":4,\"n_shared_experts\":1,\"num_experts_per_tok\":2,"
                                 "\"use_sliding_window\":false,\"max_window_layers\":1}";
    assert_int_equal(kvc_model_config_parse(def, "dots1", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.qk_norm && !c.qk_norm_after_rope && !c.qkv_bias && !c.o_bias);
    assert_true(c.first_k_dense_replace == 0 && c.layer_moe[0] && c.n_routed_experts == 4 && c.experts_per_tok == 2);
    assert_true(c.n_group == 1 && c.topk_group == 1 && !c.norm_topk_prob && c.routed_scaling_factor == 1.0);
    assert_true(c.moe_intermediate_size == 1408 && c.shared_expert_intermediate_size == 1408 && c.rms_norm_eps == 1e-6);
    assert_true(!c.layer_sliding[0] && c.layer_sliding[1] && c.layer_sliding[2] && c.sliding_window == 4096);
    kvc_model_plan *plan = plan_of(def, "dots1");
    assert_true(plan->layers[0].sliding_window == 0 && plan->layers[1].sliding_window == 4096);
    kvc_model_plan_destroy(plan);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"dots1\",\"vocab_size\":8,\"hidden_size\":8,"
                               "\"intermediate_size\":8,\"num_attention_heads\":32,\"num_hidden_layers\":2,"
                               "\"n_routed_experts\":4,\"n_shared_experts\":0,\"num_experts_per_tok\":1,"
                               "\"head_dim\":2,\"attention_bias\":true,\"sliding_window\":null}",
                               "dots1-class", &c),
        KVC_OK);
    assert_true(c.num_kv_heads == 32 && c.qkv_bias && c.o_bias && c.shared_expert_intermediate_size == 0);
    assert_true(!c.layer_sliding[0] && !c.layer_sliding[1] && c.sliding_window == 0);
    expect_refusal(DOTS1_BASE "\"n_shared_experts\":1,\"num_experts_per_tok\":2}", "n_routed_experts is missing");
    expect_refusal(DOTS1_BASE "\"n_routed_experts\":4,\"num_experts_per_tok\":2}", "n_shared_experts is missing");
    expect_refusal(DOTS1_BASE "\"n_routed_experts\":4,\"n_shared_experts\":1,\"num_experts_per_tok\":null}",
                   "num_experts_per_tok is missing");
#undef DOTS1_BASE
}

/* Sarvam-MoE and Param2-MoE (GLM-4.5's modeling) with their config classes' defaults (whole heads of 64 rotated,
 * per-head q/k norms, no biases, eps 1e-6, layer 0 dense, top 6, x 2.5; Sarvam 4 KV heads, theta 8e6, 128 experts of
 * 1024 and one shared, untied; Param2 8 KV heads, theta 5e5, 64 of 2048 and two shared, tied) and with their attribute
 * maps' original keys (num_experts, num_shared_experts, use_qkv_bias), which GLM-4.5 itself does not read. */
static void test_sarvam_param2_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define SARVAM_BASE                                                                                                    \
    "\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":3,\"num_attention_heads\":8"
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"sarvam_moe\"," SARVAM_BASE "}", "sarvam", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 64 && c.num_kv_heads == 4 && c.rope.theta == 8e6);
    assert_true(kvci_model_rot_dim(&c) == 64 && c.rope_form == KVC_ROPE_HALF && c.qk_norm && !c.qkv_bias && !c.o_bias);
    assert_true(c.rms_norm_eps == 1e-6 && !c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[2] &&
                !c.tie_word_embeddings);
    assert_true(c.n_routed_experts == 128 && c.moe_intermediate_size == 1024 && c.experts_per_tok == 6);
    assert_true(c.shared_expert_intermediate_size == 1024 && c.routed_scaling_factor == 2.5 && c.norm_topk_prob);
    expect_plan_heads("{\"model_type\":\"sarvam_moe\"," SARVAM_BASE ",\"max_position_embeddings\":64}", "sarvam_moe",
                      64, 4);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"sarvam_moe\"," SARVAM_BASE
                                            ",\"num_experts\":8,\"num_shared_experts\":2,\"use_qkv_bias\":true,"
                                            "\"num_experts_per_tok\":2,\"partial_rotary_factor\":0.5}",
                                            "sarvam-set", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 8 && c.shared_expert_intermediate_size == 2048 && c.qkv_bias && !c.o_bias);
    assert_true(kvci_model_rot_dim(&c) == 32 && c.experts_per_tok == 2);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"param2moe\"," SARVAM_BASE "}", "param2", &c), KVC_OK);
    assert_true(c.head_dim == 64 && c.num_kv_heads == 8 && c.rope.theta == 5e5 && kvci_model_rot_dim(&c) == 64);
    assert_true(c.qk_norm && c.tie_word_embeddings && c.n_routed_experts == 64 && c.moe_intermediate_size == 2048);
    assert_true(c.shared_expert_intermediate_size == 4096 && c.experts_per_tok == 6 && c.routed_scaling_factor == 2.5);
    expect_plan_heads("{\"model_type\":\"param2moe\"," SARVAM_BASE ",\"max_position_embeddings\":64}", "param2moe", 64,
                      8);
    assert_int_equal(kvc_model_config_parse(GLM4_MOE_BASE ",\"use_qkv_bias\":true,\"num_experts\":8}", "glm", &c),
                     KVC_OK);
    assert_true(!c.qkv_bias && c.n_routed_experts == 128);
    expect_refusal("{\"model_type\":\"param2moe\"," SARVAM_BASE ",\"num_experts\":4}",
                   "MoE routing sizes are inconsistent (n_routed_experts 4");
#undef SARVAM_BASE
}

/* MiniCPM5-MoE with MiniCPM5MoeConfig's defaults (gated attention, head_dim 128 rotated whole even when
 * partial_rotary_factor says otherwise, 2 KV heads, theta 5e6, no biases or q/k norms, eps 1e-6, layer 0 dense, 160
 * experts of 512, top 16, one shared, renormalised, x 3.66) and with mlp_layer_types and attention_bias set (o_proj's
 * bias too); refused by name: use_gated_attention false, an mlp_layer_types of the wrong length. */
static void test_minicpm5_moe_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define MINICPM5_BASE                                                                                                  \
    "{\"model_type\":\"minicpm5_moe\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                    \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4"
    assert_int_equal(kvc_model_config_parse(MINICPM5_BASE ",\"partial_rotary_factor\":0.5}", "minicpm5", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 2 && c.rope.theta == 5e6);
    assert_true(c.attn_output_gate && kvci_model_rot_dim(&c) == 128 && !c.qk_norm && !c.qkv_bias && !c.o_bias);
    assert_true(c.rms_norm_eps == 1e-6 && !c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[2]);
    assert_true(c.n_routed_experts == 160 && c.moe_intermediate_size == 512 && c.experts_per_tok == 16);
    assert_true(c.shared_expert_intermediate_size == 512 && c.routed_scaling_factor == 3.66 && c.norm_topk_prob);
    assert_true(c.n_group == 1 && c.topk_group == 1 && !c.tie_word_embeddings);
    expect_plan_heads(MINICPM5_BASE ",\"max_position_embeddings\":64}", "minicpm5_moe", 128, 2);
    assert_int_equal(kvc_model_config_parse(MINICPM5_BASE ",\"mlp_layer_types\":[\"sparse\",\"dense\",\"sparse\"],"
                                                          "\"attention_bias\":true,\"use_gated_attention\":true}",
                                            "minicpm5-set", &c),
                     KVC_OK);
    assert_true(c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && c.qkv_bias && c.o_bias);
    expect_refusal(MINICPM5_BASE ",\"use_gated_attention\":false}", "use_gated_attention false");
    expect_refusal(MINICPM5_BASE ",\"mlp_layer_types\":[\"dense\",\"sparse\"]}", "mlp_layer_types has 2 entries");
#undef MINICPM5_BASE
}

/* Kolibri 1 with Kolibri1Config's defaults (head_dim 128, 4 KV heads, q/k norms, GLM-4's sandwich norms, eps 1e-6,
 * window 513 on four layers of five, the fifth full and unrotated; on every layer 384 experts of 512, top 6, not
 * renormalised, a shared MLP of 512; no dense MLP) and the planner's windows; with layer_types, num_experts (its
 * attribute map's name) and norm_topk_prob set; refused by name: sliding_window null (with sliding layers or not). */
static void test_kolibri1_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define KOLIBRI_BASE                                                                                                   \
    "{\"model_type\":\"kolibri1\",\"vocab_size\":8,\"hidden_size\":64,\"num_hidden_layers\":5,"                        \
    "\"num_attention_heads\":8,\"max_position_embeddings\":1024"
    assert_int_equal(kvc_model_config_parse(KOLIBRI_BASE "}", "kolibri1", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 4 && c.rms_norm_eps == 1e-6);
    assert_true(c.qk_norm && c.sandwich_norms && !c.post_norms && !c.qkv_bias && !c.o_bias && c.sliding_window == 513);
    for (int l = 0; l < 5; l++)
        assert_true(c.layer_sliding[l] == (l != 4) && c.layer_nope[l] == (l == 4) && c.layer_moe[l]);
    assert_true(c.n_routed_experts == 384 && c.moe_intermediate_size == 512 && c.experts_per_tok == 6);
    assert_true(!c.norm_topk_prob && c.shared_expert_intermediate_size == 512 && c.intermediate_size == 512);
    assert_true(c.n_group == 0 && !c.tie_word_embeddings);
    kvc_model_plan *plan = plan_of(KOLIBRI_BASE "}", "kolibri1");
    assert_true(plan->head_dim == 128 && plan->num_key_value_heads == 4 && plan->layers[0].sliding_window == 513);
    assert_true(plan->layers[4].sliding_window == 0);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(KOLIBRI_BASE
                                            ",\"num_experts\":8,\"num_experts_per_tok\":2,"
                                            "\"norm_topk_prob\":true,\"sliding_window\":16,\"layer_types\":"
                                            "[\"full_attention\",\"sliding_attention\",\"full_attention\","
                                            "\"sliding_attention\",\"sliding_attention\"]}",
                                            "kolibri1-set", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.norm_topk_prob && c.sliding_window == 16);
    assert_true(c.layer_nope[0] && !c.layer_sliding[0] && c.layer_sliding[1] && !c.layer_nope[1] && c.layer_nope[2]);
    expect_refusal(KOLIBRI_BASE ",\"sliding_window\":null}", "kolibri1 with sliding_window null");
    expect_refusal(KOLIBRI_BASE ",\"sliding_window\":null,\"layer_types\":[\"full_attention\",\"full_attention\","
                                "\"full_attention\",\"full_attention\",\"full_attention\"]}",
                   "kolibri1 with sliding_window null");
#undef KOLIBRI_BASE
}

/* Solar Open with SolarOpenConfig's defaults (Llama's attention without biases, whole heads rotated whatever
 * partial_rotary_factor says, head_dim 128, 8 KV heads, theta 1e6, eps 1e-5; on every layer, first_k_dense_replace not
 * read, the grouped router over 128 experts of 1280, top 8, one shared expert, renormalised, x 1; untied) and with
 * attention_bias and the counts set; refused by name: routing sizes the grouped router cannot take. */
static void test_solar_open_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define SOLAR_BASE                                                                                                     \
    "{\"model_type\":\"solar_open\",\"vocab_size\":8,\"hidden_size\":64,\"num_attention_heads\":8,"                    \
    "\"num_hidden_layers\":2,\"max_position_embeddings\":64"
    assert_int_equal(
        kvc_model_config_parse(SOLAR_BASE ",\"first_k_dense_replace\":1,\"partial_rotary_factor\":0.5}", "solar", &c),
        KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 8 && c.rms_norm_eps == 1e-5);
    assert_true(c.rope.theta == 1e6 && kvci_model_rot_dim(&c) == 128 && !c.qkv_bias && !c.o_bias && !c.qk_norm);
    assert_true(c.first_k_dense_replace == 0 && c.layer_moe[0] && c.layer_moe[1] && c.n_routed_experts == 128);
    assert_true(c.experts_per_tok == 8 && c.n_group == 1 && c.topk_group == 1 && c.norm_topk_prob);
    assert_true(c.moe_intermediate_size == 1280 && c.shared_expert_intermediate_size == 1280);
    assert_true(c.routed_scaling_factor == 1.0 && !c.tie_word_embeddings && c.intermediate_size == 1280);
    expect_plan_heads(SOLAR_BASE "}", "solar_open", 128, 8);
    assert_int_equal(kvc_model_config_parse(SOLAR_BASE ",\"attention_bias\":true,\"num_local_experts\":6,"
                                                       "\"num_experts_per_tok\":3,\"n_shared_experts\":2,"
                                                       "\"moe_intermediate_size\":16,\"n_group\":3,\"topk_group\":2}",
                                            "solar-set", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && !c.o_bias && c.n_routed_experts == 6 && c.experts_per_tok == 3 && c.n_group == 3);
    assert_true(c.intermediate_size == 16); /* the experts' width: no dense MLP */
    assert_true(c.topk_group == 2 && c.moe_intermediate_size == 16 && c.shared_expert_intermediate_size == 32);
    expect_refusal(SOLAR_BASE ",\"n_routed_experts\":6,\"n_group\":4}", "MoE routing sizes are inconsistent");
#undef SOLAR_BASE
}

/* MiniMax-M2 as its hub config states it (rotary_dim, no rope dict) and MiniMaxM2Config's defaults (head_dim 128, 8 KV
 * heads, theta 5e6, eps 1e-6, 256 experts, top 8; whole-row q/k norms; DeepSeek-V3's router with one group, scale 1,
 * renormalised); a top-level partial_rotary_factor wins over rotary_dim; refused by name: a single expert. */
static void test_minimax_m2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *hub =
        "{\"model_type\":\"minimax_m2\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
        "\"num_attention_heads\":16,\"num_hidden_layers\":2,\"rotary_dim\":64,\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(hub, "minimax_m2", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 8 &&
                kvci_model_rot_dim(&c) == 64);
    assert_true(c.rope.theta == 5e6 && c.rms_norm_eps == 1e-6 && c.qk_norm && c.qk_norm_whole && !c.qkv_bias);
    assert_true(c.n_routed_experts == 256 && c.experts_per_tok == 8 && c.n_group == 1 && c.topk_group == 1);
    assert_true(c.norm_topk_prob && c.routed_scaling_factor == 1.0 && c.moe_intermediate_size == 8 && c.layer_moe[0]);
    assert_true(c.shared_expert_intermediate_size == 0 && !c.tie_word_embeddings);
    kvc_model_plan *plan = plan_of(hub, "minimax_m2");
    assert_true(plan->head_dim == 128 && plan->num_key_value_heads == 8);
    kvc_model_plan_destroy(plan);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"minimax_m2\"," MOE_BASE
                               "\"num_hidden_layers\":2,\"head_dim\":16,\"rotary_dim\":8,"
                               "\"partial_rotary_factor\":0.25,\"num_experts\":4,\"num_experts_per_tok\":2}",
                               "minimax_m2-set", &c),
        KVC_OK);
    assert_true(kvci_model_rot_dim(&c) == 4 && c.n_routed_experts == 4 && c.experts_per_tok == 2 &&
                c.num_kv_heads == 2);
    expect_refusal("{\"model_type\":\"minimax_m2\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":16,"
                   "\"num_local_experts\":1,\"num_experts_per_tok\":1}",
                   "minimax_m2 with num_local_experts 1 is not supported");
    expect_refusal("{\"model_type\":\"minimax_m2\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":16,"
                   "\"rotary_dim\":32}",
                   "rotary_dim 32 above head_dim 16");
}

/* MiniMax under MiniMaxConfig's defaults (8 KV heads, head_dim hidden / heads, theta 1e6, eps 1e-5, 8 experts of
 * intermediate_size, top 2, renormalised; layers alternating softmax / lightning; every residual factor 1) and with
 * its keys set; refused by name: a sliding window, another activation, a factor not a number, top-k above the
 * experts, a layer type it has not. */
static void test_minimax_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define MINIMAX_BASE "{\"model_type\":\"minimax\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"
    assert_int_equal(
        kvc_model_config_parse(MINIMAX_BASE "\"num_attention_heads\":8,\"num_hidden_layers\":4}", "mm", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_MINIMAX && c.head_dim == 8 && c.num_kv_heads == 8 && c.rope.theta == 1e6);
    assert_true(c.rms_norm_eps == 1e-5 && !c.tie_word_embeddings && c.residual_normed);
    assert_true(c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.moe_intermediate_size == 8 && c.norm_topk_prob);
    for (int64_t l = 0; l < 4; l++) assert_true(c.layer_moe[l] && c.layer_lightning[l] == (l % 2 == 1));
    for (int i = 0; i < 3; i++) assert_true(c.residual_alpha[i] == 1.0 && c.residual_beta[i] == 1.0);
    assert_int_equal(kvc_model_config_parse(MINIMAX_BASE
                                            "\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                                            "\"num_hidden_layers\":2,\"head_dim\":16,\"num_local_experts\":4,"
                                            "\"num_experts_per_tok\":1,\"linear_attn_alpha_factor\":3.5,"
                                            "\"mlp_beta_factor\":-2,\"full_attn_beta_factor\":0.5,\"layer_types\":"
                                            "[\"linear_attention\",\"full_attention\"]}",
                                            "mm-set", &c),
                     KVC_OK);
    assert_true(c.head_dim == 16 && c.num_kv_heads == 2 && c.n_routed_experts == 4 && c.experts_per_tok == 1);
    assert_true(c.layer_lightning[0] && !c.layer_lightning[1] && c.residual_alpha[1] == 3.5);
    assert_true(c.residual_beta[2] == -2.0 && c.residual_beta[0] == 0.5 && c.residual_alpha[0] == 1.0);
#define MINIMAX_2 MINIMAX_BASE "\"num_attention_heads\":8,\"num_hidden_layers\":2,"
    expect_refusal(MINIMAX_2 "\"sliding_window\":16}", "minimax with sliding_window 16 is not supported");
    expect_refusal(MINIMAX_2 "\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\" is not supported");
    expect_refusal(MINIMAX_2 "\"mlp_alpha_factor\":\"x\"}", "mlp_alpha_factor");
    expect_refusal(MINIMAX_2 "\"num_experts_per_tok\":9}", "num_experts_per_tok 9");
    expect_refusal(MINIMAX_2 "\"block_size\":0}", "block_size");
    expect_refusal(MINIMAX_2 "\"layer_types\":[\"linear_attention\",\"conv\"]}", "layer_types[1]");
#undef MINIMAX_2
#undef MINIMAX_BASE
}

/* RWKV-4 under RwkvConfig's defaults (intermediate_size and attention_hidden_size absent or null: 4 H and H,
 * layer_norm_epsilon 1e-5, rescale_every 6, untied), every layer a state layer of [2, H] and [3, H] whatever
 * layer_types says; a rescale_every of 0 or below none; refusals by name. */
static void test_rwkv_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define RWKV_BASE "{\"model_type\":\"rwkv\",\"vocab_size\":8,\"hidden_size\":16,\"num_hidden_layers\":3"
    assert_int_equal(kvc_model_config_parse(RWKV_BASE "}", "rwkv", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_RWKV && c.intermediate_size == 64 && c.rms_norm_eps == 1e-5);
    assert_true(c.final_norm_eps == 1e-5 && c.rwkv_rescale_every == 6 && !c.tie_word_embeddings);
    assert_true(c.layer_norm && c.norm_bias && c.embed_norm);
    for (int64_t l = 0; l < 3; l++) {
        kvci_state_shape sh[KVCI_MAX_LAYER_STATES];
        assert_int_equal(kvci_layer_states(&c, l, sh), 2);
        assert_true(sh[0].shape[0] == 2 && sh[0].shape[1] == 16 && sh[1].shape[0] == 3 && sh[1].shape[1] == 16);
    }
    assert_int_equal(kvc_model_config_parse(RWKV_BASE ",\"intermediate_size\":null,\"attention_hidden_size\":null,"
                                                      "\"layer_norm_epsilon\":1e-3,\"rescale_every\":-1,"
                                                      "\"tie_word_embeddings\":true,"
                                                      "\"layer_types\":[\"full_attention\",\"full_attention\","
                                                      "\"full_attention\"]}",
                                            "rwkv-set", &c),
                     KVC_OK);
    assert_true(c.intermediate_size == 64 && c.rms_norm_eps == 1e-3 && c.final_norm_eps == 1e-5);
    assert_true(c.rwkv_rescale_every == 0 && c.tie_word_embeddings && kvci_model_first_state(&c) == 0);
    expect_refusal(RWKV_BASE ",\"attention_hidden_size\":8}", "attention_hidden_size 8 != hidden_size 16");
    expect_refusal(RWKV_BASE ",\"rescale_every\":1.5}", "rescale_every");
    expect_refusal(RWKV_BASE ",\"layer_norm_epsilon\":-1}", "layer_norm_epsilon");
#undef RWKV_BASE
}

/* RecurrentGemma under RecurrentGemmaConfig's defaults (block_types recurrent, recurrent, attention repeated; window
 * 2048; head_dim hidden / heads unless given; KV heads = heads; half of each head rotated at theta 1e4;
 * lru_width hidden, conv1d_width 4; MLP intermediate_size / 2 (7680 / 2 absent) with biases, o_proj biased, q/k/v by
 * attention_bias; Gemma norms, tied, logits capped at 30, embeddings times bf16(sqrt(hidden))) and with its keys set;
 * refused by name: another activation or block type, layer_types, an lru_width the heads do not divide, another rope
 * type. */
static void test_recurrent_gemma_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define RG_BASE "{\"model_type\":\"recurrent_gemma\",\"vocab_size\":8,\"hidden_size\":48,"
    assert_int_equal(kvc_model_config_parse(RG_BASE "\"num_attention_heads\":4,\"num_hidden_layers\":4,"
                                                    "\"head_dim\":32}",
                                            "rg", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_RECURRENT_GEMMA && c.head_dim == 32 && c.num_kv_heads == 4);
    for (int64_t l = 0; l < 4; l++) {
        assert_true(c.layer_rglru[l] == (l % 3 != 2) && c.layer_sliding[l] == (l % 3 == 2));
        assert_true(kvci_model_layer_is_state(&c, l) == c.layer_rglru[l]);
    }
    assert_true(c.sliding_window == 2048 && c.lru_width == 48 && c.conv_kernel == 4 && c.intermediate_size == 3840);
    assert_true(c.rope.theta == 1e4 && c.rope.partial_rotary_factor == 0.5 && c.mlp_act == KVC_MLP_GELU_TANH);
    assert_true(!c.qkv_bias && c.o_bias && c.mlp_bias && c.gemma_norms && c.tie_word_embeddings);
    assert_true(c.final_logit_softcapping == 30.0 && c.embed_scale == 6.9375f && c.rms_norm_eps == 1e-6);
    assert_int_equal(kvc_model_config_parse(RG_BASE "\"num_attention_heads\":4,\"num_hidden_layers\":3,"
                                                    "\"num_key_value_heads\":1,\"lru_width\":32,"
                                                    "\"conv1d_width\":2,\"attention_window_size\":16,"
                                                    "\"intermediate_size\":65,\"attention_bias\":true,"
                                                    "\"logits_soft_cap\":5,\"tie_word_embeddings\":false,"
                                                    "\"block_types\":[\"attention\",\"recurrent\"]}",
                                            "rg-set", &c),
                     KVC_OK);
    assert_true(c.layer_sliding[0] && c.layer_rglru[1] && c.layer_sliding[2] && c.sliding_window == 16 &&
                c.head_dim == 12);
    assert_true(c.num_kv_heads == 1 && c.lru_width == 32 && c.conv_kernel == 2 && c.intermediate_size == 32);
    assert_true(c.qkv_bias && c.final_logit_softcapping == 5.0 && !c.tie_word_embeddings);
    c.lru_width = 30; /* a hand-made config: checked as a parsed one */
    expect_create_refusal(&c, "lru_width 30 must be a positive multiple of num_heads 4");
    c.lru_width = 32, c.conv_kernel = 0;
    expect_create_refusal(&c, "conv_kernel 0 is outside");
#define RG_2 RG_BASE "\"num_attention_heads\":4,\"num_hidden_layers\":2,"
    expect_refusal(RG_2 "\"hidden_activation\":\"gelu\"}", "hidden_activation \"gelu\" is not supported");
    expect_refusal(RG_2 "\"block_types\":[\"recurrent\",\"mlp\"]}", "block_types[1] \"mlp\"");
    expect_refusal(RG_2 "\"block_types\":[]}", "block_types is empty");
    expect_refusal(RG_2 "\"layer_types\":[\"sliding_attention\",\"sliding_attention\"]}", "layer_types is not");
    expect_refusal(RG_2 "\"lru_width\":30}", "lru_width 30 is not a multiple of num_attention_heads 4");
    expect_refusal(RG_2 "\"conv1d_width\":0}", "conv1d_width");
    expect_refusal(RG_2 "\"rope_parameters\":{\"rope_type\":\"linear\",\"factor\":2,\"rope_theta\":10000}}",
                   "rope type linear is not supported");
#undef RG_2
#undef RG_BASE
}

/* Mellum under MellumConfig's defaults (head_dim 128, 4 KV heads, every layer full, window 1024 for sliding ones,
 * ropes theta 5e5 full and 1e4 sliding over whole heads, q/k norms, every layer sparse: 64 experts of 896, top 8,
 * renormalised, intermediate 7168, eps 1e-6): the plan's caches, mlp_layer_types, refusals by name. */
static void test_mellum_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"mellum\",\"vocab_size\":8,\"hidden_size\":64,\"num_attention_heads\":8,"
                      "\"num_hidden_layers\":3,\"max_position_embeddings\":4096,\"layer_types\":[\"sliding_attention\","
                      "\"full_attention\",\"sliding_attention\"]}";
    assert_int_equal(kvc_model_config_parse(def, "mellum", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 4 && c.rms_norm_eps == 1e-6);
    assert_true(c.qk_norm && !c.qkv_bias && !c.o_bias && c.intermediate_size == 7168 && c.n_routed_experts == 64);
    assert_true(c.experts_per_tok == 8 && c.moe_intermediate_size == 896 && c.norm_topk_prob && c.n_group == 0);
    assert_true(c.shared_expert_intermediate_size == 0 && c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[2]);
    assert_true(c.rope.theta == 5e5 && c.rope_sliding.theta == 1e4 && c.rope.partial_rotary_factor == 1.0);
    assert_true(c.layer_sliding[0] && !c.layer_sliding[1] && c.sliding_window == 1024 && c.layer_kv_heads[0] == 0);
    kvc_model_plan *plan = plan_of(def, "mellum");
    assert_true(plan->layers[0].sliding_window == 1024 && plan->layers[1].sliding_window == 0);
    assert_true(plan->layers[1].caches[0].num_head == 4 && plan->layers[1].caches[1].dim == 128);
    kvc_model_plan_destroy(plan);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"mellum\"," MOE_BASE
                               "\"num_hidden_layers\":2,\"head_dim\":8,\"attention_bias\":true,"
                               "\"num_local_experts\":4,\"num_experts_per_tok\":2,\"norm_topk_prob\":false,"
                               "\"mlp_layer_types\":[\"dense\",\"sparse\"]}",
                               "mellum-set", &c),
        KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && c.n_routed_experts == 4 && !c.norm_topk_prob && !c.layer_moe[0]);
    assert_true(c.layer_moe[1] && !c.layer_sliding[0] && !c.layer_sliding[1]);
    expect_refusal("{\"model_type\":\"mellum\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":8,"
                   "\"rope_parameters\":{\"full_attention\":{\"rope_type\":\"default\",\"rope_theta\":1e4,"
                   "\"partial_rotary_factor\":0.5}}}",
                   "partial_rotary_factor 0.5: mellum rotates whole heads");
    expect_refusal("{\"model_type\":\"mellum\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"mlp_layer_types\":[\"sparse\",\"moe\"]}",
                   "mlp_layer_types[1] must be \"dense\" or \"sparse\"");
}

/* DiffLlama under DiffLlamaConfig's defaults (32 heads of 64, as many KV heads, rms_norm_eps 1e-5, untied): the
 * differential attention flag, the caches of 16 pair heads of 128 in the runtime and the plan (the bytes of 32 of
 * 64), refusals by name (attention_dropout, an odd num_key_value_heads). */
static void test_diffllama_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"diffllama\",\"vocab_size\":32000,\"hidden_size\":2048,"
                      "\"intermediate_size\":8192,\"num_attention_heads\":32,\"num_hidden_layers\":16,"
                      "\"max_position_embeddings\":2048}";
    assert_int_equal(kvc_model_config_parse(def, "diffllama", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.diff_attn && c.head_dim == 64 && c.num_kv_heads == 32);
    assert_true(c.rms_norm_eps == 1e-5 && !c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings);
    const kvc_cache_dims d = kvci_model_layer_cache_dims(&c, 3, false);
    assert_true(d.heads[0] == 16 && d.heads[1] == 16 && d.dim[0] == 128 && d.dim[1] == 128);
    kvc_model_plan *plan = plan_of(def, "diffllama");
    assert_true(plan->layers[15].caches[0].num_head == 16 && plan->layers[15].caches[0].dim == 128);
    assert_true(plan->layers[15].caches[1].num_head == 16 && plan->layers[15].caches[1].dim == 128);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"diffllama\"," MOE_BASE
                                            "\"num_hidden_layers\":2,\"head_dim\":8,\"attention_bias\":true}",
                                            "diffllama-set", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && !c.mlp_bias && c.head_dim == 8);
    kvc_model_config sh;
    assert_int_equal(kvci_model_shard_config(&c, 2, &sh), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "differential attention pairs"));
    expect_refusal("{\"model_type\":\"diffllama\"," MOE_BASE "\"num_hidden_layers\":2,\"attention_dropout\":0.1}",
                   "diffllama with attention_dropout 0.1 is not supported");
    expect_refusal("{\"model_type\":\"diffllama\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":96,"
                   "\"num_attention_heads\":8,\"num_key_value_heads\":1,\"num_hidden_layers\":2}",
                   "diffllama with num_key_value_heads 1 is not supported");
}

/* Cohere Compass's text model: the hub's form (rope_theta / rope_type beside the entries, dropped; the full layers'
 * entry null: NoPE), head_dim from hidden_size whatever the key says, half-split RoPE, logit_scale 1 when absent, tied,
 * every layer full without layer_types; the class default ({}), a flat dict and a missing entry refused by name. */
static void test_cohere_compass_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *hub = "{\"model_type\":\"cohere_compass_text\"," MOE_BASE "\"num_hidden_layers\":4,\"head_dim\":2,"
                      "\"layer_types\":[\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
                      "\"full_attention\"],\"rope_parameters\":{\"rope_theta\":1e4,\"rope_type\":\"default\","
                      "\"full_attention\":null,\"sliding_attention\":{\"rope_type\":\"default\",\"rope_theta\":5e4,"
                      "\"mrope_section\":[24,20,20],\"mrope_interleaved\":true}}}";
    assert_int_equal(kvc_model_config_parse(hub, "compass", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 4 && c.layer_norm && c.parallel_block && !c.qk_norm);
    assert_true(c.rope_form == KVC_ROPE_HALF && c.logit_scale == 1.0 && c.tie_word_embeddings);
    assert_true(c.rope_sliding.theta == 5e4 && c.sliding_window == 4096 && c.layer_sliding[0] && !c.layer_sliding[3]);
    assert_true(!c.layer_nope[0] && !c.layer_nope[2] && c.layer_nope[3]);
    kvc_model_plan *plan = plan_of(hub, "cohere_compass_text");
    assert_true(plan->layers[0].sliding_window == 4096 && plan->layers[3].sliding_window == 0);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"cohere_compass_text\"," MOE_BASE
                                            "\"num_hidden_layers\":2,\"logit_scale\":null,\"rope_parameters\":{"
                                            "\"full_attention\":{\"rope_theta\":2e5}}}",
                                            "compass-full", &c),
                     KVC_OK);
    assert_true(c.rope.theta == 2e5 && !c.layer_nope[0] && !c.layer_sliding[1] && c.logit_scale == 1.0);
    expect_refusal("{\"model_type\":\"cohere_compass_text\"," MOE_BASE "\"num_hidden_layers\":2}",
                   "cohere_compass_text needs rope_parameters with an entry");
    expect_refusal("{\"model_type\":\"cohere_compass_text\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":1e4}}",
                   "cohere_compass_text needs rope_parameters with an entry");
    expect_refusal("{\"model_type\":\"cohere_compass_text\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"layer_types\":[\"sliding_attention\",\"full_attention\"],"
                   "\"rope_parameters\":{\"full_attention\":{\"rope_theta\":1e4}}}",
                   "rope_parameters has no \"sliding_attention\" entry (layer 0 is one)");
}

/* ModernBERT's decoder under ModernBertDecoderConfig's sizes without layer_types or rope_parameters (the hub's form):
 * full every third layer from layer 0, the others sliding over local_attention / 2 = 64, ropes 160000 / 10000 (or
 * global_rope_theta / local_rope_theta), head_dim 64, one KV head per head, GeGLU by erf, LayerNorms without bias,
 * the head transform without its dense's bias, the decoder's bias, tied, layer 0's attention unnormed; mlp_bias,
 * another head act and a flat rope dict refused by name. */
static void test_modernbert_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"modernbert-decoder\",\"vocab_size\":50368,\"hidden_size\":768,"
                      "\"intermediate_size\":1152,\"num_attention_heads\":12,\"num_hidden_layers\":22,"
                      "\"max_position_embeddings\":8192}";
    assert_int_equal(kvc_model_config_parse(def, "modernbert", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 64 && c.num_kv_heads == 12 && c.rms_norm_eps == 1e-5);
    assert_true(c.layer_norm && !c.norm_bias && c.embed_norm && c.head_transform && c.head_dense_unbiased);
    assert_true(c.head_bias && c.tie_word_embeddings && c.attn_norm_first_none && !c.qkv_bias && !c.o_bias);
    assert_true(c.mlp_act == KVC_MLP_GELU && !c.mlp_plain && c.head_act == KVC_MLP_GELU && c.sliding_window == 64);
    assert_true(!c.layer_sliding[0] && c.layer_sliding[1] && c.layer_sliding[2] && !c.layer_sliding[3]);
    assert_true(c.rope.theta == 160000.0 && c.rope_sliding.theta == 10000.0);
    kvc_model_plan *plan = plan_of(def, "modernbert-decoder");
    assert_true(plan->layers[0].sliding_window == 0 && plan->layers[1].sliding_window == 64);
    assert_true(plan->layers[21].sliding_window == 0 && plan->layers[0].caches[0].num_head == 12);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"modernbert-decoder\"," MOE_BASE
                                            "\"num_hidden_layers\":3,\"global_attn_every_n_layers\":2,"
                                            "\"local_attention\":10,\"global_rope_theta\":5e4,"
                                            "\"local_rope_theta\":500,\"norm_bias\":true,\"classifier_bias\":true,"
                                            "\"classifier_activation\":\"silu\",\"decoder_bias\":false}",
                                            "modernbert-set", &c),
                     KVC_OK);
    assert_true(!c.layer_sliding[0] && c.layer_sliding[1] && !c.layer_sliding[2] && c.sliding_window == 5);
    assert_true(c.rope.theta == 5e4 && c.rope_sliding.theta == 500.0 && c.norm_bias && !c.head_dense_unbiased);
    assert_true(c.head_act == KVC_MLP_SILU && !c.head_bias);
    expect_refusal("{\"model_type\":\"modernbert-decoder\"," MOE_BASE "\"num_hidden_layers\":2,\"mlp_bias\":true}",
                   "modernbert-decoder with mlp_bias true is not supported");
    expect_refusal("{\"model_type\":\"modernbert-decoder\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"classifier_activation\":\"tanh\"}",
                   "classifier_activation \"tanh\" is not supported");
    expect_refusal("{\"model_type\":\"modernbert-decoder\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":1e4}}",
                   "modernbert-decoder with rope_parameters not holding a full_attention and a sliding_attention");
}

/* BitNet under BitNetConfig's defaults (20 heads of 128 over 5 KV heads, relu2, rms_norm_eps 1e-5, untied): the
 * sub-norms, the gated relu2 MLP; a quantization_config, another act, heads x head_dim other than hidden_size and
 * tensor parallelism refused by name. */
static void test_bitnet_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"bitnet\",\"vocab_size\":128256,\"hidden_size\":2560,"
                      "\"intermediate_size\":6912,\"num_attention_heads\":20,\"num_key_value_heads\":5,"
                      "\"num_hidden_layers\":30,\"hidden_act\":\"relu2\",\"max_position_embeddings\":2048}";
    assert_int_equal(kvc_model_config_parse(def, "bitnet", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.sub_norms && c.head_dim == 128 && c.num_kv_heads == 5);
    assert_true(c.mlp_act == KVC_MLP_RELU2 && !c.mlp_plain && c.rms_norm_eps == 1e-5 && !c.tie_word_embeddings);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"bitnet\",\"vocab_size\":8,\"hidden_size\":80,"
                                            "\"intermediate_size\":8,\"num_attention_heads\":10,"
                                            "\"num_hidden_layers\":2}",
                                            "bitnet-keys", &c),
                     KVC_OK); /* the class's 5 KV heads and theta 5e5 when the keys are absent */
    assert_true(c.num_kv_heads == 5 && c.rope.theta == 500000.0);
    assert_int_equal(kvc_model_config_parse(def, "bitnet", &c), KVC_OK);
    kvc_model_config sh;
    assert_int_equal(kvci_model_shard_config(&c, 5, &sh), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "attn_sub_norm and ffn_sub_norm"));
    expect_refusal("{\"model_type\":\"bitnet\"," MOE_BASE "\"num_hidden_layers\":2,\"quantization_config\":{"
                   "\"quant_method\":\"bitnet\",\"linear_class\":\"autobitlinear\",\"quantization_mode\":\"offline\"}}",
                   "bitnet with a quantization_config is not supported");
    expect_refusal("{\"model_type\":\"bitnet\"," MOE_BASE "\"num_hidden_layers\":2,\"hidden_act\":\"relu\"}",
                   "hidden_act \"relu\" is not supported (bitnet: relu2");
    expect_refusal("{\"model_type\":\"bitnet\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":8}",
                   "bitnet with num_attention_heads x head_dim 16 other than hidden_size 8 is not supported");
}

/* Laguna under LagunaConfig's defaults (head_dim 128, 8 KV heads, every layer full, window 512 for sliding ones,
 * ropes theta 5e5 over half the head on full layers and 1e4 over all of it on sliding ones, softplus gates per head,
 * q/k norms, 256 experts of 512, top 8, a shared expert of 512, the first layer dense, eps 1e-6): per-layer query
 * heads and rotary widths, the plan's caches, gating per element, refusals by name. */
static void test_laguna_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"laguna\",\"vocab_size\":8,\"hidden_size\":64,\"num_attention_heads\":16,"
                      "\"num_hidden_layers\":3,\"max_position_embeddings\":4096,\"layer_types\":[\"full_attention\","
                      "\"sliding_attention\",\"full_attention\"],\"num_attention_heads_per_layer\":[16,8,24]}";
    assert_int_equal(kvc_model_config_parse(def, "laguna", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 8 && c.rms_norm_eps == 1e-6);
    assert_true(c.qk_norm && c.attn_head_gate && !c.attn_gate_proj && c.attn_gate_softplus && !c.qkv_bias);
    assert_true(c.intermediate_size == 8192 && c.n_routed_experts == 256 && c.experts_per_tok == 8);
    assert_true(c.moe_intermediate_size == 512 && c.shared_expert_intermediate_size == 512 && c.n_group == 1);
    assert_true(c.norm_topk_prob && c.routed_scaling_factor == 1.0 && !c.layer_moe[0] && c.layer_moe[1]);
    assert_true(c.rope.theta == 5e5 && c.rope.partial_rotary_factor == 0.5 && c.rope_sliding.theta == 1e4);
    assert_true(c.layer_heads[0] == 0 && c.layer_heads[1] == 8 && c.layer_heads[2] == 24 && c.sliding_window == 512);
    assert_true(c.layer_rot_dim[0] == 0 && c.layer_rot_dim[1] == 128 && c.layer_rot_dim[2] == 0);
    kvc_model_plan *plan = plan_of(def, "laguna");
    assert_true(plan->layers[1].sliding_window == 512 && plan->layers[0].sliding_window == 0);
    for (int l = 0; l < 3; l++)
        assert_true(plan->layers[l].caches[0].num_head == 8 && plan->layers[l].caches[1].dim == 128);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"laguna\"," MOE_BASE
                                            "\"num_hidden_layers\":2,\"head_dim\":8,\"gating\":\"per-element\","
                                            "\"attention_bias\":true,\"moe_routed_scaling_factor\":2}",
                                            "laguna-set", &c),
                     KVC_OK);
    assert_true(!c.attn_head_gate && c.attn_gate_proj && c.qkv_bias && c.o_bias && c.routed_scaling_factor == 2.0);
    assert_true(!c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_heads[1] == 0);
    expect_refusal("{\"model_type\":\"laguna\"," MOE_BASE "\"num_hidden_layers\":2,\"gating\":\"per-token\"}",
                   "gating must be true, false");
    expect_refusal("{\"model_type\":\"laguna\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"num_attention_heads_per_layer\":[2]}",
                   "num_attention_heads_per_layer has 1 entries for 2 layers");
    expect_refusal("{\"model_type\":\"laguna\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"num_attention_heads_per_layer\":[2,3]}",
                   "num_attention_heads_per_layer[1] 3 is not a multiple of num_key_value_heads 2");
    expect_refusal("{\"model_type\":\"laguna\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"moe_router_logit_softcapping\":30}",
                   "moe_router_logit_softcapping 30 is not supported");
    expect_refusal("{\"model_type\":\"laguna\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"moe_apply_router_weight_on_input\":true}",
                   "moe_apply_router_weight_on_input true is not supported");
    kvc_model_config hand = c;
    hand.attn_gate_proj = false;
    expect_create_refusal(&hand, "attn_gate_softplus needs attn_head_gate or attn_gate_proj");
    hand = c;
    hand.layer_heads[1] = 3;
    expect_create_refusal(&hand, "layer 1: its 3 query heads (layer_heads) must be a multiple of its 2 KV heads");
}

/* MiMo-V2-Flash under MiMoV2FlashConfig's defaults (head_dim 192, values of 128, layer 0 and every sixth full, the
 * others sliding over 129 keys with twice the KV heads and sinks, values times 0.707, each kind its rope over 0.334 of
 * the head, 256 experts of 2048, top 8, no shared one, the first layer dense, eps 1e-5): the runtime's per-layer
 * shapes and the plan's caches agree; sliding_window_size, the nulls the class reads as defaults, refusals. */
static void test_mimo_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"mimo_v2_flash\",\"vocab_size\":8,\"hidden_size\":64,"
                      "\"num_attention_heads\":8,\"num_hidden_layers\":12,\"max_position_embeddings\":4096}";
    assert_int_equal(kvc_model_config_parse(def, "mimo", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 192 && c.num_kv_heads == 4 && c.rms_norm_eps == 1e-5);
    assert_true(!c.qkv_bias && !c.o_bias && !c.qk_norm && !c.tie_word_embeddings && c.intermediate_size == 16384);
    assert_true(c.attn_value_scale == 0.707 && c.attn_sinks && c.sinks_sliding_only && c.sliding_window == 129);
    assert_true(c.n_routed_experts == 256 && c.experts_per_tok == 8 && c.moe_intermediate_size == 2048);
    assert_true(c.shared_expert_intermediate_size == 0 && c.n_group == 1 && c.norm_topk_prob);
    assert_true(c.routed_scaling_factor == 1.0 && !c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[11]);
    assert_true(c.rope.theta == 5e6 && c.rope_sliding.theta == 1e4 && c.rope.partial_rotary_factor == 0.334);
    for (int l = 0; l < 12; l++) {
        const bool full = l == 0 || l == 5 || l == 11;
        assert_true(c.layer_sliding[l] == !full && c.layer_kv_heads[l] == (full ? 0 : 8));
        assert_true(c.layer_v_head_dim[l] == 128 && c.layer_heads[l] == 0 && c.layer_head_dim[l] == 0);
    }
    kvc_model_plan *plan = plan_of(def, "mimo_v2_flash");
    assert_true(plan->n_layers == 12 && plan->head_dim == 192 && plan->sinks);
    for (int l = 0; l < 12; l++) {
        const bool full = l == 0 || l == 5 || l == 11;
        assert_true(plan->layers[l].sliding_window == (full ? 0 : 129));
        assert_true(plan->layers[l].caches[0].num_head == (full ? 4 : 8) && plan->layers[l].caches[0].dim == 192);
        assert_true(plan->layers[l].caches[1].num_head == (full ? 4 : 8) && plan->layers[l].caches[1].dim == 128);
    }
    assert_int_equal(plan->blocks.per_token_bytes, 3 * 4 * (192 + 128) * 2); /* bf16 by default */
    kvc_model_plan_destroy(plan);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"mimo_v2_flash\",\"vocab_size\":8,\"hidden_size\":8,"
                               "\"intermediate_size\":8,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                               "\"num_hidden_layers\":2,\"head_dim\":8,\"v_head_dim\":4,"
                               "\"sliding_window\":50,\"sliding_window_size\":6,"
                               "\"attention_value_scale\":null,\"routed_scaling_factor\":null,"
                               "\"attention_bias\":true,\"mlp_layer_types\":[\"sparse\",\"dense\"],"
                               "\"n_routed_experts\":4,\"num_experts_per_tok\":2}",
                               "mimo-set", &c),
        KVC_OK);
    assert_true(c.sliding_window == 7 && c.layer_sliding[1] && c.layer_kv_heads[1] == 4 && c.layer_v_head_dim[0] == 4);
    assert_true(c.attn_value_scale == 1.0 && c.routed_scaling_factor == 1.0 && c.qkv_bias && !c.o_bias);
    assert_true(c.layer_moe[0] && !c.layer_moe[1] && c.n_routed_experts == 4);
    expect_refusal("{\"model_type\":\"mimo_v2_flash\"," MOE_BASE "\"num_hidden_layers\":2,\"v_head_dim\":0}",
                   "v_head_dim");
    expect_refusal("{\"model_type\":\"mimo_v2_flash\"," MOE_BASE "\"num_hidden_layers\":2,"
                   "\"layer_types\":[\"sliding_attention\",\"full_attention\"]}",
                   "the sliding layers' 2 x num_key_value_heads 4 KV heads do not divide num_attention_heads 2");
    expect_refusal("{\"model_type\":\"mimo_v2_flash\"," MOE_BASE "\"num_hidden_layers\":2,\"head_dim\":8,"
                   "\"rope_parameters\":{\"full_attention\":{\"rope_type\":\"default\",\"rope_theta\":1e4,"
                   "\"partial_rotary_factor\":0.5},\"sliding_attention\":{\"rope_type\":\"default\","
                   "\"rope_theta\":1e4}}}",
                   "partial_rotary_factor 0.334 of the sliding layers differs from the full layers' 0.5");
    kvc_model_config hand = c;
    hand.attn_sinks = false;
    expect_create_refusal(&hand, "sinks_sliding_only needs attn_sinks");
    hand = c;
    hand.attn_value_scale = -1.0;
    expect_create_refusal(&hand, "attn_value_scale -1 outside");
}

/* AFMoE (Trinity) under AfmoeConfig's defaults (head_dim 128, intermediate 6144, 64 experts of 1408, top 6, 2 shared,
 * the first layer dense, window 1024 over three sliding layers then one full, RoPE on the sliding ones only, eps
 * 1e-5, untied), the plan's layers and cache bytes, its keys set (layer_types, mup_enabled, attention_bias, a null
 * head_dim) and its refusals by name. */
static void test_afmoe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"afmoe\",\"vocab_size\":8,\"hidden_size\":64,\"num_attention_heads\":4,"
                      "\"num_hidden_layers\":8,\"max_position_embeddings\":4096}";
    assert_int_equal(kvc_model_config_parse(def, "afmoe", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 4 && c.rms_norm_eps == 1e-5);
    assert_true(c.qk_norm && !c.qk_norm_whole && c.sandwich_norms && c.attn_gate_proj && !c.attn_output_gate);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && c.embed_scale == 0.0f && !c.tie_word_embeddings);
    assert_true(c.intermediate_size == 6144 && c.moe_intermediate_size == 1408 && c.n_routed_experts == 64);
    assert_true(c.experts_per_tok == 6 && c.n_shared_experts == 2 && c.shared_expert_intermediate_size == 2816);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.norm_topk_prob && c.routed_scaling_factor == 1.0);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[7] && c.sliding_window == 1024 && c.rope.theta == 1e4);
    for (int l = 0; l < 8; l++) assert_true(c.layer_sliding[l] == (l % 4 != 3) && c.layer_nope[l] == (l % 4 == 3));
    kvc_model_plan *plan = plan_of(def, "afmoe");
    assert_true(plan->n_layers == 8 && plan->head_dim == 128 && plan->num_key_value_heads == 4);
    assert_true(plan->layers[0].sliding_window == 1024 && plan->layers[3].sliding_window == 0);
    assert_true(plan->layers[0].caches[0].num_head == 4 && plan->layers[0].caches[0].dim == 128);
    assert_true(plan->layers[3].caches[1].bytes_per_token == 4 * 128 * 2); /* bf16 by default */
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"afmoe\"," MOE_BASE
                                            "\"num_hidden_layers\":3,\"head_dim\":null,\"mup_enabled\":true,"
                                            "\"attention_bias\":true,\"num_dense_layers\":0,\"num_experts\":1,"
                                            "\"num_experts_per_tok\":1,\"num_shared_experts\":0,\"route_scale\":2.5,"
                                            "\"global_attn_every_n_layers\":null,\"sliding_window\":4,\"layer_types\":"
                                            "[\"full_attention\",\"sliding_attention\",\"full_attention\"]}",
                                            "afmoe-set", &c),
                     KVC_OK);
    assert_true(c.head_dim == 4 && c.embed_scale == sqrtf(8.0f) && c.qkv_bias && c.o_bias && c.layer_moe[0]);
    assert_true(c.n_routed_experts == 1 && c.shared_expert_intermediate_size == 0 && c.routed_scaling_factor == 2.5);
    assert_true(!c.layer_sliding[0] && c.layer_sliding[1] && c.layer_nope[0] && !c.layer_nope[1] && c.layer_nope[2]);
    /* the planner reads head_dim null as the runtime does (was: AfmoeConfig's 128, scale 128^-1/2 against 4^-1/2) */
    expect_plan_heads("{\"model_type\":\"afmoe\"," MOE_BASE
                      "\"num_hidden_layers\":2,\"head_dim\":null,\"max_position_embeddings\":64}",
                      "afmoe", 4, 2);
    expect_refusal("{\"model_type\":\"afmoe\",\"vocab_size\":8,\"hidden_size\":8,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":2,\"head_dim\":null,\"num_attention_heads\":3,\"num_key_value_heads\":1}",
                   "head_dim is null and hidden_size 8 is not a multiple of num_attention_heads 3");
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"afmoe\"," MOE_BASE
                                            "\"num_hidden_layers\":4,\"head_dim\":4,"
                                            "\"global_attn_every_n_layers\":2,\"sliding_window\":4}",
                                            "afmoe-every", &c),
                     KVC_OK);
    for (int l = 0; l < 4; l++) assert_true(c.layer_sliding[l] == (l % 2 == 0) && c.layer_nope[l] == (l % 2 == 1));
    expect_refusal("{\"model_type\":\"afmoe\"," MOE_BASE "\"num_hidden_layers\":2,\"hidden_act\":\"gelu\"}",
                   "hidden_act \"gelu\" is not supported (afmoe");
    expect_refusal("{\"model_type\":\"afmoe\"," MOE_BASE "\"num_hidden_layers\":2,\"num_dense_layers\":null}",
                   "afmoe num_dense_layers is null");
    expect_refusal("{\"model_type\":\"afmoe\"," MOE_BASE "\"num_hidden_layers\":2,\"route_scale\":0}", "route_scale");
    expect_refusal("{\"model_type\":\"afmoe\"," MOE_BASE "\"num_hidden_layers\":2,\"num_experts\":4,"
                   "\"num_experts_per_tok\":5}",
                   "num_experts_per_tok 5 must be in [1, num_experts = 4]");
    expect_refusal("{\"model_type\":\"afmoe\"," MOE_BASE "\"num_hidden_layers\":2,\"global_attn_every_n_layers\":0}",
                   "global_attn_every_n_layers");
    kvc_model_config hand = c;
    hand.n_group = 2;
    expect_create_refusal(&hand, "afmoe routes its experts in one group");
    hand = c;
    hand.attn_output_gate = true;
    expect_create_refusal(&hand, "attn_gate_proj needs GQA attention without attn_output_gate");
}

/* EXAONE 3.x as its hub config spells it (num_layers, layer_norm_epsilon, activation_function: ExaoneConfig's attribute
 * map) and ExaoneConfig's defaults (8 KV heads, theta 5e5, eps 1e-5, untied; Llama's biases by attention_bias and
 * mlp_bias); refused by name: an activation Llama's MLP does not take. */
static void test_exaone_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *hub = "{\"model_type\":\"exaone\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"
                      "\"num_attention_heads\":16,\"num_layers\":2,\"layer_norm_epsilon\":1e-6,"
                      "\"activation_function\":\"silu\",\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(hub, "exaone", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_layers == 2 && c.num_kv_heads == 8 && c.head_dim == 4);
    assert_true(c.rope.theta == 5e5 && c.rms_norm_eps == 1e-6 && c.mlp_act == KVC_MLP_SILU && !c.tie_word_embeddings);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.qk_norm);
    kvc_model_plan *plan = plan_of(hub, "exaone");
    assert_true(plan->num_key_value_heads == 8 && plan->n_layers == 2);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"exaone\"," MOE_BASE
                                            "\"num_hidden_layers\":2,\"attention_bias\":true,\"mlp_bias\":true}",
                                            "exaone-set", &c),
                     KVC_OK);
    assert_true(c.rms_norm_eps == 1e-5 && c.qkv_bias && c.o_bias && c.mlp_bias && c.num_kv_heads == 2);
    expect_refusal("{\"model_type\":\"exaone\"," MOE_BASE "\"num_hidden_layers\":2,\"activation_function\":\"relu\"}",
                   "activation_function \"relu\" is not supported (exaone");
}

/* InternLM3 with InternLM3Config's defaults (head_dim 128, 2 KV heads, eps 1e-5, theta 1e4, no biases, untied) and its
 * names for the biases (qkv_bias, bias); refused by name: the two apart. */
static void test_internlm3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = "{\"model_type\":\"internlm3\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"
                      "\"num_attention_heads\":4,\"num_hidden_layers\":2,\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(def, "internlm3", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 2 && c.rms_norm_eps == 1e-5);
    assert_true(c.rope.theta == 1e4 && !c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings);
    kvc_model_plan *plan = plan_of(def, "internlm3");
    assert_true(plan->head_dim == 128 && plan->num_key_value_heads == 2);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"internlm3\"," MOE_BASE
                                            "\"num_hidden_layers\":2,\"qkv_bias\":true,\"bias\":true}",
                                            "internlm3-bias", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias);
    expect_refusal("{\"model_type\":\"internlm3\"," MOE_BASE "\"num_hidden_layers\":2,\"qkv_bias\":true}",
                   "internlm3 with qkv_bias (attention_bias) true and bias (mlp_bias) false is not supported");
}

/* HyperCLOVA X with HyperCLOVAXConfig's defaults (Granite's multipliers at 1 with the softmax scale head_dim^-1/2,
 * Peri-LN sandwich norms, eps 1e-6, as many KV heads as heads, no biases, untied) and with the multipliers set (the
 * logits' scaling kept as its reciprocal, a divisor) and use_post_norm false; the planner's scale. */
static void test_hyperclovax_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define HCX_BASE TOY64_BASE("hyperclovax")
    assert_int_equal(kvc_model_config_parse(HCX_BASE "}", "hyperclovax", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.num_kv_heads == 4 && c.rms_norm_eps == 1e-6);
    assert_true(c.sandwich_norms && !c.post_norms && kvc_model_attn_scale(&c) == 0.25 && c.embed_scale == 1.0f);
    assert_true(c.residual_multiplier == 1.0 && c.logits_scaling == 1.0 && !c.qkv_bias && !c.mlp_bias);
    assert_true(!c.tie_word_embeddings && c.rope.theta == 1e4);
    kvc_model_plan *plan = plan_of(HCX_BASE "}", "hyperclovax");
    assert_true(fabs(plan->scale - 0.25) < 1e-12 && plan->head_dim == 16);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(HCX_BASE ",\"attention_multiplier\":0.1,\"logits_scaling\":4,"
                                                     "\"embedding_multiplier\":6,\"residual_multiplier\":0.5,"
                                                     "\"use_post_norm\":false,\"attention_bias\":true}",
                                            "hyperclovax-set", &c),
                     KVC_OK);
    assert_true(!c.sandwich_norms && kvc_model_attn_scale(&c) == 0.1 && c.logits_scaling == 0.25);
    assert_true(c.embed_scale == 6.0f && c.residual_multiplier == 0.5 && c.qkv_bias && c.o_bias);
#undef HCX_BASE
}

/* IQuest-Coder-V1 with IQuestCoderConfig's defaults (head_dim 128, 8 KV heads, eps 1e-5, theta 1e4, no biases, untied)
 * and with both biases; refused by name: clip_qkv, use_sliding_window true (IQuestCoderConfig refuses them). */
static void test_iquestcoder_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define IQUEST_BASE                                                                                                    \
    "{\"model_type\":\"iquestcoder\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                     \
    "\"num_attention_heads\":8,\"num_hidden_layers\":2,\"max_position_embeddings\":64"
    assert_int_equal(kvc_model_config_parse(IQUEST_BASE ",\"attention_bias\":true,\"mlp_bias\":true,\"clip_qkv\":null,"
                                                        "\"use_sliding_window\":false}",
                                            "iquestcoder-bias", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias);
    expect_refusal(IQUEST_BASE ",\"clip_qkv\":8}", "iquestcoder with clip_qkv is not supported");
    expect_refusal(IQUEST_BASE ",\"use_sliding_window\":true}", "iquestcoder with use_sliding_window true");
    assert_int_equal(kvc_model_config_parse(IQUEST_BASE "}", "iquestcoder", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 8 && c.rms_norm_eps == 1e-5);
    assert_true(c.rope.theta == 1e4 && !c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings);
    expect_plan_heads(IQUEST_BASE "}", "iquestcoder", 128, 8);
#undef IQUEST_BASE
}

/* Jais 2 with Jais2Config's defaults (LayerNorms with bias at eps 1e-5, an ungated relu2 MLP, biases on q/k/v/o and the
 * MLP, as many KV heads as heads, head_dim hidden / heads, theta 1e4, untied) and with the biases off, GQA, another
 * eps; refused by name: another hidden_act. */
static void test_jais2_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define JAIS2_BASE TOY64_BASE("jais2")
    assert_int_equal(kvc_model_config_parse(JAIS2_BASE ",\"attention_bias\":false,\"mlp_bias\":false,"
                                                       "\"num_key_value_heads\":2,\"layer_norm_eps\":1e-3}",
                                            "jais2-set", &c),
                     KVC_OK);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && c.num_kv_heads == 2 && c.rms_norm_eps == 1e-3);
    assert_int_equal(kvc_model_config_parse(JAIS2_BASE ",\"rms_norm_eps\":0.5}", "jais2", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.num_kv_heads == 4 && c.rms_norm_eps == 1e-5);
    assert_true(c.layer_norm && c.norm_bias && c.mlp_plain && c.mlp_act == KVC_MLP_RELU2 && !c.parallel_block);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && !c.head_bias && !c.tie_word_embeddings);
    assert_true(c.rope.theta == 1e4 && kvci_model_rot_dim(&c) == 16 && !c.qk_norm);
    expect_plan_heads(JAIS2_BASE "}", "jais2", 16, 4);
    expect_refusal(JAIS2_BASE ",\"hidden_act\":\"silu\"}", "hidden_act \"silu\" is not supported (jais2: relu2)");
#undef JAIS2_BASE
}

/* CWM with CwmConfig's defaults (head_dim 128, 8 KV heads, eps 1e-5, theta 1e6 when the rope dict has none, window
 * 8192 with every fourth layer from layer 0 full, no biases whatever attention_bias says, untied) and with
 * layer_types, a window and mlp_bias set; the planner plans those layers (a window of 16: hybrid); refused by
 * name: no rope dict. */
static void test_cwm_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define CWM_BASE                                                                                                       \
    "{\"model_type\":\"cwm\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                             \
    "\"num_attention_heads\":8,\"num_hidden_layers\":5,\"max_position_embeddings\":64"
#define CWM_ROPE ",\"rope_parameters\":{\"rope_type\":\"default\"}"
    assert_int_equal(kvc_model_config_parse(CWM_BASE CWM_ROPE ",\"attention_bias\":true}", "cwm", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 8 && c.rms_norm_eps == 1e-5);
    assert_true(c.rope.theta == 1e6 && !c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings);
    assert_true(c.sliding_window == 8192 && !c.layer_sliding[0] && c.layer_sliding[1] && c.layer_sliding[2]);
    assert_true(c.layer_sliding[3] && !c.layer_sliding[4]);
    kvc_model_plan *plan = plan_of(CWM_BASE CWM_ROPE ",\"sliding_window\":16}", "cwm");
    assert_true(plan->head_dim == 128 && plan->num_key_value_heads == 8 && plan->hybrid);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(CWM_BASE CWM_ROPE
                                            ",\"sliding_window\":16,\"mlp_bias\":true,"
                                            "\"layer_types\":[\"sliding_attention\",\"full_attention\","
                                            "\"full_attention\",\"full_attention\",\"sliding_attention\"]}",
                                            "cwm-set", &c),
                     KVC_OK);
    assert_true(c.sliding_window == 16 && c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[4]);
    assert_true(c.mlp_bias && !c.qkv_bias);
    expect_refusal(CWM_BASE "}", "cwm without rope_parameters (or rope_scaling) is not supported");
#undef CWM_ROPE
#undef CWM_BASE
}

/* Granite SWA with GraniteSWAConfig's defaults (4 KV heads, window 128 with every fourth layer from layer 0 full,
 * every layer at rope_parameters' theta, sinks, the softmax scale 1, eps 1e-5, tied) and Granite MoE SWA with its
 * keys set (layer_rope_theta: 0 unrotated, the sliding layers' base apart; eps 1e-6 and untied when absent); the
 * planner plans the windows with sinks (one sliding layer: 128 tokens); refused by name: layer_rope_theta of the
 * wrong length, a negative entry, two bases among the sliding layers. */
static void test_granite_swa_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define GSWA_BASE(mt)                                                                                                  \
    "{\"model_type\":\"" mt "\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                          \
    "\"num_attention_heads\":8,\"num_hidden_layers\":5,\"max_position_embeddings\":4096"
    assert_int_equal(kvc_model_config_parse(GSWA_BASE("granite_swa") "}", "granite_swa", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.rms_norm_eps == 1e-5 && c.attn_sinks);
    assert_true(c.tie_word_embeddings && c.attention_multiplier == 1.0 && c.rope.theta == 1e4);
    assert_true(c.sliding_window == 128 && !c.layer_sliding[0] && c.layer_sliding[1] && c.layer_sliding[3]);
    assert_true(!c.layer_sliding[4] && !c.layer_nope[0] && !c.layer_nope[1] && c.rope_sliding.theta == 1e4);
    kvc_model_plan *plan = plan_of(GSWA_BASE("granite_swa") "}", "granite_swa");
    assert_true(plan->sinks && plan->hybrid && plan->n_layers == 5 && plan->num_key_value_heads == 4);
    assert_true(plan->layers[0].sliding_window == 0 && plan->layers[1].sliding_window == 128);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(GSWA_BASE("granitemoe_swa") ",\"num_local_experts\":4,"
                                                                        "\"sliding_window\":16,\"layer_rope_theta\":"
                                                                        "[0,500,500,500,0]}",
                                            "granitemoe_swa", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 8 && c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings && c.attn_sinks);
    assert_true(c.n_routed_experts == 4 && c.experts_per_tok == 2 && c.layer_moe[0] && c.sliding_window == 16);
    assert_true(c.layer_nope[0] && !c.layer_nope[1] && c.layer_nope[4] && c.rope_sliding.theta == 500.0);
    assert_true(c.rope.theta == 1e4);
    plan = plan_of(GSWA_BASE("granitemoe_swa") ",\"sliding_window\":16}", "granitemoe_swa");
    assert_true(plan->sinks && plan->layers[1].sliding_window == 16 && plan->layers[4].sliding_window == 0);
    kvc_model_plan_destroy(plan);
    expect_refusal(GSWA_BASE("granite_swa") ",\"layer_rope_theta\":[1,2]}",
                   "layer_rope_theta has 2 entries but num_hidden_layers is 5");
    expect_refusal(GSWA_BASE("granite_swa") ",\"layer_rope_theta\":[1,-2,2,2,1]}", "layer_rope_theta[1] must be");
    expect_refusal(GSWA_BASE("granite_swa") ",\"layer_rope_theta\":[1,2,3,2,1]}",
                   "layer_rope_theta[2] 3 differs from 2 of another sliding layer");
#undef GSWA_BASE
}

/* Flint with FlintConfig's defaults (head_dim 128, 4 KV heads, q/k norms, sinks, window 513 on all but layers 0, 1,
 * every i % 4 == 1 and the last, the full layers unrotated, 256 experts of 512, top 6, renormalised, a shared
 * expert of 1024, dense layers 0 and 1, untied) and with its keys set; the planner plans the windows with sinks;
 * refused by name: more experts per token than experts. */
static void test_flint_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define FLINT_BASE                                                                                                     \
    "{\"model_type\":\"flint\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                           \
    "\"num_attention_heads\":8,\"num_hidden_layers\":7,\"max_position_embeddings\":4096"
    assert_int_equal(kvc_model_config_parse(FLINT_BASE "}", "flint", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 4 && c.qk_norm);
    assert_true(c.attn_sinks && !c.qkv_bias && !c.tie_word_embeddings && c.sliding_window == 513);
    assert_true(!c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2] && c.layer_sliding[3]);
    assert_true(c.layer_sliding[4] && !c.layer_sliding[5] && !c.layer_sliding[6]);
    assert_true(c.layer_nope[0] && c.layer_nope[5] && c.layer_nope[6] && !c.layer_nope[2] && !c.layer_nope[4]);
    assert_true(c.n_routed_experts == 256 && c.experts_per_tok == 6 && c.moe_intermediate_size == 512);
    assert_true(c.shared_expert_intermediate_size == 1024 && c.norm_topk_prob);
    assert_true(!c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && c.layer_moe[6]);
    kvc_model_plan *plan = plan_of(FLINT_BASE "}", "flint");
    assert_true(plan->sinks && plan->hybrid && plan->head_dim == 128 && plan->num_key_value_heads == 4);
    assert_true(plan->layers[1].sliding_window == 0 && plan->layers[2].sliding_window == 513);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(FLINT_BASE ",\"head_dim\":16,\"num_experts\":4,\"num_experts_per_tok\":2,"
                                                       "\"norm_topk_prob\":false,\"mlp_only_layers\":[3],"
                                                       "\"sliding_window\":32,\"attention_bias\":true}",
                                            "flint-set", &c),
                     KVC_OK);
    assert_true(c.head_dim == 16 && c.n_routed_experts == 4 && c.experts_per_tok == 2 && !c.norm_topk_prob);
    assert_true(c.layer_moe[0] && c.layer_moe[1] && !c.layer_moe[3] && c.sliding_window == 32 && c.qkv_bias);
    expect_refusal(FLINT_BASE ",\"num_experts\":4,\"num_experts_per_tok\":5}", "num_experts_per_tok 5 must be in");
#undef FLINT_BASE
}

/* Hy3 with HYV3Config's defaults (head_dim 128, 8 KV heads, q/k norms, theta 11158840, eps 1e-5, layer 0 dense and
 * the others 192 experts of 1536, top 8, by the one-group sigmoid router times 2.826, one shared expert, untied) and
 * with no shared expert (the shared MLP then intermediate_size wide) and mlp_layer_types set; refused by name: one
 * expert, an mlp_layer_types entry neither dense nor sparse. */
static void test_hy_v3_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define HY3_BASE                                                                                                       \
    "{\"model_type\":\"hy_v3\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":40,"                          \
    "\"num_attention_heads\":8,\"num_hidden_layers\":3,\"max_position_embeddings\":64"
    assert_int_equal(kvc_model_config_parse(HY3_BASE "}", "hy_v3", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 8 && c.qk_norm);
    assert_true(c.rope.theta == 11158840.0 && c.rms_norm_eps == 1e-5 && !c.tie_word_embeddings && !c.qkv_bias);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[2] && c.n_routed_experts == 192);
    assert_true(c.experts_per_tok == 8 && c.moe_intermediate_size == 1536 && c.shared_expert_intermediate_size == 1536);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.norm_topk_prob && c.routed_scaling_factor == 2.826);
    kvc_model_plan *plan = plan_of(HY3_BASE "}", "hy_v3");
    assert_true(plan->head_dim == 128 && plan->num_key_value_heads == 8 && !plan->hybrid && !plan->sinks);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(HY3_BASE ",\"num_experts\":4,\"num_experts_per_tok\":2,"
                                                     "\"num_shared_experts\":0,\"mlp_bias\":true,"
                                                     "\"mlp_layer_types\":[\"sparse\",\"dense\",\"sparse\"]}",
                                            "hy_v3-set", &c),
                     KVC_OK);
    assert_true(c.shared_expert_intermediate_size == 40 && c.mlp_bias && c.layer_moe[0] && !c.layer_moe[1]);
    expect_refusal(HY3_BASE ",\"num_experts\":1,\"num_experts_per_tok\":1}", "hy_v3 with num_experts 1");
    expect_refusal(HY3_BASE ",\"mlp_layer_types\":[\"dense\",\"moe\",\"sparse\"]}", "mlp_layer_types[1] must be");
#undef HY3_BASE
}

/* Cohere 2 MoE with Cohere2MoeConfig's defaults (head_dim 128, as many KV heads as heads, LayerNorms of eps 1e-5 as
 * rms_norm_eps is absent, window 4096 with three sliding layers then one full, the full ones unrotated, 8 experts of
 * intermediate_size, top 2 by softmax, no shared expert, logit scale 0.0625, tied) and with first_k_dense_replace,
 * RMSNorms, sigmoid routing, shared experts summed and prefix_dense_intermediate_size set; rope_scaling unread (its
 * rope_parameters read); refused by name: an unknown expert_selection_fn or shared_expert_combination_strategy. */
static void test_cohere2_moe_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define C2M_BASE                                                                                                       \
    "{\"model_type\":\"cohere2_moe\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":40,"                    \
    "\"num_attention_heads\":8,\"num_hidden_layers\":5,\"max_position_embeddings\":8192"
    assert_int_equal(kvc_model_config_parse(C2M_BASE "}", "cohere2_moe", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 8 && c.layer_norm);
    assert_true(c.rms_norm_eps == 1e-5 && c.parallel_block && c.rope_form == KVC_ROPE_PAIRS && c.tie_word_embeddings);
    assert_true(c.sliding_window == 4096 && c.layer_sliding[0] && c.layer_sliding[2] && !c.layer_sliding[3]);
    assert_true(c.layer_sliding[4] && c.layer_nope[3] && !c.layer_nope[0] && c.logit_scale == 0.0625);
    assert_true(c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.moe_intermediate_size == 40);
    assert_true(c.shared_expert_intermediate_size == 0 && !c.moe_shared_average && !c.moe_route_sigmoid);
    assert_true(c.layer_moe[0] && c.layer_moe[4]);
    kvc_model_plan *plan = plan_of(C2M_BASE "}", "cohere2_moe");
    assert_true(plan->hybrid && plan->layers[0].sliding_window == 4096 && plan->layers[3].sliding_window == 0);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(C2M_BASE ",\"first_k_dense_replace\":2,\"rms_norm_eps\":1e-6,"
                                                     "\"expert_selection_fn\":\"sigmoid\",\"num_shared_experts\":2,"
                                                     "\"shared_expert_combination_strategy\":\"sum\","
                                                     "\"prefix_dense_intermediate_size\":24,\"sliding_window\":16}",
                                            "cohere2_moe-set", &c),
                     KVC_OK);
    assert_true(!c.layer_norm && c.rms_norm_eps == 1e-6 && c.moe_route_sigmoid && !c.moe_shared_average);
    assert_true(c.shared_expert_intermediate_size == 80 && c.intermediate_size == 24 && c.moe_intermediate_size == 40);
    assert_true(!c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && c.sliding_window == 16);
    /* the dense prefix: full by prefix_dense_sliding_window_pattern 1, rotated (force_rope); then 3 sliding */
    assert_true(!c.layer_sliding[0] && !c.layer_sliding[1] && !c.layer_nope[0] && !c.layer_nope[1]);
    assert_true(c.layer_sliding[2] && c.layer_sliding[4]);
    assert_int_equal(kvc_model_config_parse(C2M_BASE ",\"num_shared_experts\":1}", "cohere2_moe-avg", &c), KVC_OK);
    assert_true(c.moe_shared_average && c.shared_expert_intermediate_size == 40);
    /* rope_scaling is a field Cohere2MoeConfig never folds into rope_parameters: unread, as its model leaves it (was
     * applied); rope_parameters and rope_theta are read */
    assert_int_equal(kvc_model_config_parse(C2M_BASE ",\"rope_theta\":50000,\"rope_scaling\":{\"rope_type\":\"linear\","
                                                     "\"factor\":4.0}}",
                                            "cohere2_moe-scaling", &c),
                     KVC_OK);
    assert_true(c.rope.type == KVC_ROPE_DEFAULT && c.rope.theta == 50000.0);
    assert_int_equal(kvc_model_config_parse(C2M_BASE ",\"rope_parameters\":{\"rope_type\":\"linear\",\"factor\":4.0,"
                                                     "\"rope_theta\":20000}}",
                                            "cohere2_moe-parameters", &c),
                     KVC_OK);
    assert_true(c.rope.type == KVC_ROPE_LINEAR && c.rope.factor == 4.0 && c.rope.theta == 20000.0);
    expect_refusal(C2M_BASE ",\"expert_selection_fn\":\"tanh\"}", "expert_selection_fn \"tanh\" is not supported");
    expect_refusal(C2M_BASE ",\"shared_expert_combination_strategy\":\"max\"}",
                   "shared_expert_combination_strategy \"max\" is not supported");
#undef C2M_BASE
}

/* Ergo with ErgoConfig's defaults (head_dim hidden / heads, 8 KV heads, rms_norm_eps 1e-12, window 512 with three
 * sliding layers then one full and unrotated, layer 0 dense of 32768, 256 relu2 experts of 4096 top 8 by one group
 * times 8^1/2, a shared MLP of 8192, residual gates, expert norms, no global scale, untied) and with
 * local_attention_window, global_attention_scale, mlp_layer_types and rope_parameters per layer type (the full
 * layers' null); refused by name: a hidden_size the heads do not divide, a global_attention_scale not above 0. */
static void test_ergo_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define ERGO_BASE                                                                                                      \
    "{\"model_type\":\"ergo\",\"vocab_size\":8,\"hidden_size\":64,\"num_attention_heads\":8,"                          \
    "\"num_hidden_layers\":5,\"max_position_embeddings\":4096"
    assert_int_equal(kvc_model_config_parse(ERGO_BASE "}", "ergo", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 8 && c.num_kv_heads == 8 && !c.layer_norm);
    assert_true(c.rms_norm_eps == 1e-12 && c.rope_form == KVC_ROPE_PAIRS && !c.tie_word_embeddings && c.qk_norm);
    assert_true(c.sliding_window == 512 && c.layer_sliding[0] && c.layer_sliding[2] && !c.layer_sliding[3]);
    assert_true(c.layer_sliding[4] && c.layer_nope[3] && !c.layer_nope[0] && c.rope.theta == 1e6);
    assert_true(c.n_routed_experts == 256 && c.experts_per_tok == 8 && c.moe_intermediate_size == 4096);
    assert_true(c.shared_expert_intermediate_size == 8192 && c.intermediate_size == 32768 && c.mlp_plain);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.routed_scaling_factor == sqrt(8.0));
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[4] && c.sandwich_norms);
    assert_true(c.residual_gates && c.expert_norms && c.global_attention_scale == 0.0);
    kvc_model_plan *plan = plan_of(ERGO_BASE "}", "ergo");
    assert_true(plan->hybrid && plan->layers[0].sliding_window == 512 && plan->layers[3].sliding_window == 0);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(ERGO_BASE ",\"local_attention_window\":16,\"global_attention_scale\":1.5,"
                                                      "\"mlp_layer_types\":[\"dense\",\"dense\",\"sparse\",\"sparse\","
                                                      "\"dense\"],\"rope_parameters\":{\"full_attention\":null,"
                                                      "\"sliding_attention\":{\"rope_type\":\"default\","
                                                      "\"rope_theta\":10000.0}}}",
                                            "ergo-set", &c),
                     KVC_OK);
    assert_true(c.sliding_window == 16 && c.global_attention_scale == 1.5 && c.rope_sliding.theta == 1e4);
    assert_true(!c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && !c.layer_moe[4]);
    expect_refusal("{\"model_type\":\"ergo\",\"vocab_size\":8,\"hidden_size\":60,\"num_attention_heads\":8,"
                   "\"num_hidden_layers\":5}",
                   "hidden_size 60 is not a multiple");
    expect_refusal(ERGO_BASE ",\"global_attention_scale\":0}", "global_attention_scale");
#undef ERGO_BASE
}

/* HRM-Text (a looped recurrent reasoning model) refused by name with the reason, by the runtime and the planner. */
static void test_hrm_text_refused(void **state) {
    (void)state;
    const char *json = "{\"model_type\":\"hrm_text\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"
                       "\"num_attention_heads\":4,\"num_hidden_layers\":16,\"num_layers_per_stack\":2}";
    expect_refusal(json, "model_type \"hrm_text\" is not supported: HRM-Text is a looped");
    kvc_model_plan *plan = NULL;
    const kvc_plan_options opt = kvc_plan_default_options();
    assert_int_equal(kvc_model_plan_create(json, strlen(json), &opt, &plan), KVC_EINVAL);
    assert_null(plan);
    assert_non_null(strstr(kvc_last_error(), "model_type \"hrm_text\" is not planned: HRM-Text is a looped"));
}

/* Persimmon with PersimmonConfig's defaults (as many KV heads as heads whatever num_key_value_heads says, head_dim
 * hidden / heads, RoPE on half of each head at theta 1e4, q/k LayerNorms, relu2, every bias but the head's, LayerNorms
 * with bias, sequential blocks, eps 1e-5, untied) and without qk_layernorm, gelu, partial 0.25; refused by name:
 * another hidden_act. */
static void test_persimmon_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define PERSIMMON_BASE                                                                                                 \
    "{\"model_type\":\"persimmon\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                       \
    "\"num_attention_heads\":4,\"num_hidden_layers\":2,\"max_position_embeddings\":64"
    assert_int_equal(
        kvc_model_config_parse(PERSIMMON_BASE ",\"num_key_value_heads\":2,\"head_dim\":8}", "persimmon", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && kvci_model_rot_dim(&c) == 8);
    assert_true(c.layer_norm && c.norm_bias && !c.parallel_block && c.mlp_plain && c.mlp_act == KVC_MLP_RELU2);
    assert_true(c.qk_norm && !c.qk_norm_whole && c.qkv_bias && c.o_bias && c.mlp_bias && !c.head_bias);
    assert_true(c.rms_norm_eps == 1e-5 && c.rope_form == KVC_ROPE_HALF && c.rope.theta == 10000.0);
    assert_true(!c.tie_word_embeddings);
    kvc_model_plan *plan = plan_of(PERSIMMON_BASE "}", "persimmon");
    assert_true(plan->head_dim == 16 && plan->num_key_value_heads == 4);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(PERSIMMON_BASE ",\"qk_layernorm\":false,\"hidden_act\":\"gelu\","
                                                           "\"partial_rotary_factor\":0.25}",
                                            "persimmon-set", &c),
                     KVC_OK);
    assert_true(!c.qk_norm && c.mlp_act == KVC_MLP_GELU && kvci_model_rot_dim(&c) == 4);
    expect_refusal(PERSIMMON_BASE ",\"hidden_act\":\"silu\"}", "hidden_act \"silu\" is not supported (persimmon: gelu");
#undef PERSIMMON_BASE
}

/* XGLM with XGLMConfig's defaults (its key names d_model / num_layers / attention_heads / ffn_dim 4096, gelu, scaled
 * embeddings, every bias, LayerNorms with bias at 1e-5, tied, no RoPE, the computed table offset 2 with row 1 zeros,
 * 2048 positions) and with scale_embedding false, pad_token_id null, relu, untied; refused by name: d_model 2, another
 * activation_function; 2^31 - 1 positions made at once. */
static void test_xglm_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define XGLM_BASE "{\"model_type\":\"xglm\",\"vocab_size\":8,\"d_model\":64,\"attention_heads\":4,\"num_layers\":2"
    assert_int_equal(kvc_model_config_parse(XGLM_BASE "}", "xglm", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && c.intermediate_size == 4096);
    assert_true(c.pos_learned && c.pos_sinusoidal && c.pos_offset == 2 && c.pos_zero_row == 1);
    assert_true(c.max_position_embeddings == 2048 && c.layer_nope[0] && c.layer_nope[1]);
    assert_true(c.embed_scale == 8.0f && c.mlp_act == KVC_MLP_GELU && c.mlp_plain && c.layer_norm && c.norm_bias);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && c.tie_word_embeddings && c.rms_norm_eps == 1e-5);
    kvc_model_plan *plan = plan_of(XGLM_BASE "}", "xglm");
    assert_true(plan->head_dim == 16 && plan->num_key_value_heads == 4);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(XGLM_BASE ",\"scale_embedding\":false,\"pad_token_id\":null,"
                                                      "\"activation_function\":\"relu\",\"tie_word_embeddings\":false,"
                                                      "\"ffn_dim\":24}",
                                            "xglm-set", &c),
                     KVC_OK);
    assert_true(c.embed_scale == 0.0f && c.pos_zero_row == -1 && c.mlp_act == KVC_MLP_RELU && !c.tie_word_embeddings);
    assert_true(c.intermediate_size == 24);
    expect_refusal("{\"model_type\":\"xglm\",\"vocab_size\":8,\"d_model\":2,\"attention_heads\":1,\"num_layers\":2}",
                   "xglm with d_model 2 is not supported");
    expect_refusal(XGLM_BASE ",\"activation_function\":\"silu\"}",
                   "activation_function \"silu\" is not supported (xglm");
    /* the most positions a config may give: no table of them is built (2^31 rows x 64 were 550 GB to allocate) */
    assert_int_equal(
        kvc_model_config_parse(XGLM_BASE ",\"ffn_dim\":24,\"max_position_embeddings\":2147483647}", "xglm-long", &c),
        KVC_OK);
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_create_random(&c, 1, &m), KVC_OK);
    kvc_model_destroy(m);
#undef XGLM_BASE
}

/* The planner and the runtime refuse json alike, each naming needle. */
static void expect_both_refuse(const char *json, const char *needle) {
    expect_refusal(json, needle);
    kvc_model_plan *plan = NULL;
    const kvc_plan_options opt = kvc_plan_default_options();
    assert_int_equal(kvc_model_plan_create(json, strlen(json), &opt, &plan), KVC_EINVAL);
    assert_null(plan);
    if (!strstr(kvc_last_error(), needle)) fail_msg("plan: \"%s\" should mention \"%s\"", kvc_last_error(), needle);
}

/* The BERT types with their config classes' defaults and is_decoder true (bert, the RoBERTa types, ernie; then
 * bert-generation and the pre-norm types): learned positions (BERT and ERNIE from row
 * 0, the RoBERTa types from pad_token_id + 1, their positions that many fewer than the table's rows, in the runtime
 * and the plan), token type 0's row, embeddings LayerNormed, post-norm layers without a final norm, every bias, gelu,
 * the head's transform (the RoBERTa types' act GELU by erf whatever hidden_act), tied, eps 1e-12, 512 positions;
 * ERNIE's task types under use_task_id. Refused by name by both: is_decoder false or absent (bidirectional; also for
 * the types planned only, electra's here), add_cross_attention; by the runtime: pad_token_id null or past the table
 * (RoBERTa's), position_embedding_type other than absolute, another hidden_act. */
static void test_bert_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define BERT_KEYS                                                                                                      \
    "\"vocab_size\":8,\"hidden_size\":64,\"num_attention_heads\":4,\"num_hidden_layers\":2,\"intermediate_size\":16"
#define BERT_BASE "{\"model_type\":\"bert\",\"is_decoder\":true," BERT_KEYS
    assert_int_equal(kvc_model_config_parse(BERT_BASE "}", "bert", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && c.intermediate_size == 16);
    assert_true(c.pos_learned && c.pos_offset == 0 && c.max_position_embeddings == 512 && c.layer_nope[1]);
    assert_true(c.type_vocab_size == 2 && c.task_type_vocab_size == 0 && c.embed_norm && c.norm_after_add);
    assert_true(c.final_norm_none && c.head_transform && c.head_act == KVC_MLP_GELU && c.mlp_act == KVC_MLP_GELU);
    assert_true(c.mlp_plain && c.layer_norm && c.norm_bias && c.qkv_bias && c.o_bias && c.mlp_bias && c.head_bias);
    assert_true(c.tie_word_embeddings && c.rms_norm_eps == 1e-12);
    assert_int_equal(kvc_model_config_parse(BERT_BASE ",\"hidden_act\":\"relu\",\"type_vocab_size\":1,"
                                                      "\"tie_word_embeddings\":false,\"layer_norm_eps\":1e-5}",
                                            "bert-set", &c),
                     KVC_OK);
    assert_true(c.mlp_act == KVC_MLP_RELU && c.head_act == KVC_MLP_RELU && c.type_vocab_size == 1);
    assert_true(!c.tie_word_embeddings && c.rms_norm_eps == 1e-5);
    kvc_model_plan *plan = plan_of(BERT_BASE "}", "bert");
    assert_true(plan->head_dim == 16 && plan->num_key_value_heads == 4 && plan->options.max_model_len == 512);
    kvc_model_plan_destroy(plan);
    static const char *const ROBERTA[] = {"roberta", "xlm-roberta", "camembert", "data2vec-text"};
    for (size_t i = 0; i < sizeof ROBERTA / sizeof ROBERTA[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"model_type\":\"%s\",\"is_decoder\":true,\"hidden_act\":\"gelu_new\"," BERT_KEYS "}", ROBERTA[i]);
        assert_int_equal(kvc_model_config_parse(json, ROBERTA[i], &c), KVC_OK);
        assert_true(c.pos_offset == 2 && c.max_position_embeddings == 510 && c.head_transform);
        assert_true(c.mlp_act == KVC_MLP_GELU_TANH && c.head_act == KVC_MLP_GELU && c.type_vocab_size == 2);
        plan = plan_of(json, ROBERTA[i]);
        assert_true(plan->options.max_model_len == 510);
        kvc_model_plan_destroy(plan);
    }
#define ROBERTA_BASE "{\"model_type\":\"roberta\",\"is_decoder\":true," BERT_KEYS
    assert_int_equal(
        kvc_model_config_parse(ROBERTA_BASE ",\"pad_token_id\":0,\"max_position_embeddings\":514}", "roberta", &c),
        KVC_OK);
    assert_true(c.pos_offset == 1 && c.max_position_embeddings == 513);
    expect_refusal(ROBERTA_BASE ",\"pad_token_id\":null}", "roberta with pad_token_id null is not supported");
    expect_both_refuse(ROBERTA_BASE ",\"pad_token_id\":511}", "roberta with pad_token_id 511 leaves no position");
#define ERNIE1_BASE "{\"model_type\":\"ernie\",\"is_decoder\":true," BERT_KEYS
    assert_int_equal(kvc_model_config_parse(ERNIE1_BASE "}", "ernie", &c), KVC_OK);
    assert_true(c.task_type_vocab_size == 0 && c.pos_offset == 0);
    assert_int_equal(
        kvc_model_config_parse(ERNIE1_BASE ",\"use_task_id\":true,\"task_type_vocab_size\":5}", "ernie", &c), KVC_OK);
    assert_true(c.task_type_vocab_size == 5);
    /* BertGeneration: no token types, no head transform; the pre-norm types: a final norm, no norm after the adds,
     * their embeddings' LayerNorm RoBERTa-PreLayerNorm's only; XLM-RoBERTa-XL's class defaults (one token type, eps
     * 1e-5, 514 rows: 512 positions) */
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"bert-generation\",\"is_decoder\":true," BERT_KEYS "}",
                                            "bert-generation", &c),
                     KVC_OK);
    assert_true(c.type_vocab_size == 0 && !c.head_transform && c.embed_norm && c.norm_after_add && c.final_norm_none);
    assert_true(c.pos_offset == 0 && c.head_bias && c.tie_word_embeddings);
    static const struct {
        const char *type;
        bool embed_norm;
        int64_t offset, types, positions;
        double eps;
    } PRE[] = {{"megatron-bert", false, 0, 2, 512, 1e-12},
               {"xlm-roberta-xl", false, 2, 1, 512, 1e-5},
               {"roberta-prelayernorm", true, 2, 2, 510, 1e-12}};
    for (size_t i = 0; i < sizeof PRE / sizeof PRE[0]; i++) {
        char json[512];
        snprintf(json, sizeof json, "{\"model_type\":\"%s\",\"is_decoder\":true," BERT_KEYS "}", PRE[i].type);
        assert_int_equal(kvc_model_config_parse(json, PRE[i].type, &c), KVC_OK);
        assert_true(!c.norm_after_add && !c.final_norm_none && c.embed_norm == PRE[i].embed_norm && c.head_transform);
        assert_true(c.pos_offset == PRE[i].offset && c.type_vocab_size == PRE[i].types && c.rms_norm_eps == PRE[i].eps);
        assert_true(c.max_position_embeddings == PRE[i].positions && c.head_act == KVC_MLP_GELU);
    }
    expect_both_refuse("{\"model_type\":\"bert\"," BERT_KEYS "}", "bert with is_decoder false (or absent");
    const char *by_arch = "{\"architectures\":[\"RobertaForCausalLM\"],\"is_decoder\":false," BERT_KEYS "}";
    const kvc_plan_options opt = kvc_plan_default_options(); /* the planner's look-up by architecture */
    assert_int_equal(kvc_model_plan_create(by_arch, strlen(by_arch), &opt, &plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "roberta with is_decoder false"));
    expect_both_refuse(BERT_BASE ",\"add_cross_attention\":true}", "bert with add_cross_attention true");
    expect_both_refuse("{\"model_type\":\"electra\"," BERT_KEYS "}",
                       "electra with is_decoder false"); /* planned only */
    expect_refusal(BERT_BASE ",\"position_embedding_type\":\"relative_key\"}",
                   "position_embedding_type \"relative_key\" is not supported");
    assert_int_equal(kvc_model_config_parse(BERT_BASE ",\"position_embedding_type\":\"absolute\"}", "bert", &c),
                     KVC_OK);
    expect_refusal(BERT_BASE ",\"hidden_act\":\"tanh\"}", "hidden_act \"tanh\" is not supported (bert");
#undef ERNIE1_BASE
#undef ROBERTA_BASE
#undef BERT_BASE
#undef BERT_KEYS
}

/* GPT-1 (openai-gpt) with OpenAIGPTConfig's defaults (n_embd / n_head / n_layer / n_positions, 512 positions when
 * absent, Conv1D layers, learned positions, post-norm blocks without a final norm, the MLP 4 x n_embd by afn gelu
 * = the tanh form, every bias, eps 1e-5, tied, no RoPE) and with afn relu / silu / swish, untied, eps and positions
 * set; refused by name: another afn (transformers' table has no gelu_new); the plan's family and positions. */
static void test_openai_gpt_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define OPENAI_GPT_BASE "{\"model_type\":\"openai-gpt\",\"vocab_size\":8,\"n_embd\":64,\"n_head\":4,\"n_layer\":2"
    assert_int_equal(kvc_model_config_parse(OPENAI_GPT_BASE "}", "openai-gpt", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && c.intermediate_size == 256);
    assert_true(c.pos_learned && !c.pos_sinusoidal && c.pos_offset == 0 && c.max_position_embeddings == 512);
    assert_true(c.norm_after_add && c.final_norm_none && c.layer_nope[0] && c.layer_nope[1]);
    assert_true(c.mlp_act == KVC_MLP_GELU_TANH && c.mlp_plain && c.layer_norm && c.norm_bias && c.embed_scale == 0.0f);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && !c.head_bias && c.tie_word_embeddings &&
                c.rms_norm_eps == 1e-5);
    kvc_model_plan *plan = plan_of(OPENAI_GPT_BASE "}", "openai-gpt");
    assert_true(plan->head_dim == 16 && plan->num_key_value_heads == 4 && plan->options.max_model_len == 512);
    kvc_model_plan_destroy(plan);
    static const struct {
        const char *afn;
        kvc_mlp_act act;
    } acts[] = {{"relu", KVC_MLP_RELU}, {"silu", KVC_MLP_SILU}, {"swish", KVC_MLP_SILU}};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        char json[256];
        snprintf(json, sizeof json,
                 OPENAI_GPT_BASE ",\"afn\":\"%s\",\"tie_word_embeddings\":false,\"layer_norm_epsilon\":1e-3,"
                                 "\"n_positions\":32}",
                 acts[i].afn);
        assert_int_equal(kvc_model_config_parse(json, "openai-gpt-set", &c), KVC_OK);
        assert_true(c.mlp_act == acts[i].act && !c.tie_word_embeddings && c.rms_norm_eps == 1e-3);
        assert_true(c.max_position_embeddings == 32);
    }
    expect_refusal(OPENAI_GPT_BASE ",\"afn\":\"gelu_new\"}", "afn \"gelu_new\" is not supported (openai-gpt");
#undef OPENAI_GPT_BASE
}

/* CTRL with CTRLConfig's defaults (n_embd / n_head / n_layer, 256 positions and dff 8192 when absent, embeddings times
 * sqrt(n_embd), CTRL's sinusoid table, pre-norm LayerNorms with bias at 1e-6 and the final one at layer_norm_epsilon
 * 1e-6, relu, every bias and the head's, tied, no RoPE) and with dff, eps, positions set and untied; refused by name:
 * layer_norm_epsilon 0; a random model made, and refused with a zero row; the plan. */
static void test_ctrl_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define CTRL_BASE "{\"model_type\":\"ctrl\",\"vocab_size\":8,\"n_embd\":64,\"n_head\":4,\"n_layer\":2"
    assert_int_equal(kvc_model_config_parse(CTRL_BASE "}", "ctrl", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && c.intermediate_size == 8192);
    assert_true(c.pos_learned && c.pos_sinusoidal && c.pos_sinusoid_ctrl && c.pos_offset == 0 && c.pos_zero_row == -1);
    assert_true(c.max_position_embeddings == 256 && c.layer_nope[0] && c.layer_nope[1] && c.embed_scale == 8.0f);
    assert_true(c.mlp_act == KVC_MLP_RELU && c.mlp_plain && c.layer_norm && c.norm_bias && !c.norm_after_add);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && c.head_bias && c.tie_word_embeddings);
    assert_true(c.rms_norm_eps == 1e-6 && c.final_norm_eps == 1e-6);
    kvc_model_plan *plan = plan_of(CTRL_BASE "}", "ctrl");
    assert_true(plan->head_dim == 16 && plan->num_key_value_heads == 4 && plan->options.max_model_len == 256);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(CTRL_BASE ",\"dff\":24,\"layer_norm_epsilon\":1e-3,\"n_positions\":32,"
                                                      "\"tie_word_embeddings\":false}",
                                            "ctrl-set", &c),
                     KVC_OK);
    assert_true(c.intermediate_size == 24 && c.final_norm_eps == 1e-3 && c.rms_norm_eps == 1e-6);
    assert_true(c.max_position_embeddings == 32 && !c.tie_word_embeddings);
    expect_refusal(CTRL_BASE ",\"layer_norm_epsilon\":0}", "layer_norm_epsilon");
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_create_random(&c, 1, &m), KVC_OK);
    kvc_model_destroy(m);
    c.pos_zero_row = 0;
    expect_create_refusal(&c, "pos_sinusoid_ctrl needs pos_sinusoidal, pos_offset 0 and pos_zero_row -1");
#undef CTRL_BASE
}

/* GPT-NeoX Japanese with GPTNeoXJapaneseConfig's defaults (q/k/v fused per head, no biases but the last layer's
 * o_proj one, RoPE on the whole head at 1e4, intermediate 4 x hidden, gelu, LayerNorms with bias at 1e-5, sequential,
 * tied) and with rotary_pct / rotary_emb_base, intermediate_multiple_size, relu, silu, untied; refused by name: mish, a
 * width past the bound; a random model holds the last layer's o_proj bias alone; the plan. */
static void test_gpt_neox_japanese_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define NEOX_JA_BASE                                                                                                   \
    "{\"model_type\":\"gpt_neox_japanese\",\"vocab_size\":8,\"hidden_size\":64,\"num_attention_heads\":4,"             \
    "\"num_hidden_layers\":3"
    assert_int_equal(kvc_model_config_parse(NEOX_JA_BASE "}", "gpt_neox_japanese", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 4 && c.head_dim == 16 && c.intermediate_size == 256);
    assert_true(c.rope.partial_rotary_factor == 1.0 && c.rope.theta == 1e4 && !c.layer_nope[0]);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.head_bias && !c.parallel_block);
    assert_true(c.mlp_act == KVC_MLP_GELU && c.mlp_plain && c.layer_norm && c.norm_bias && c.tie_word_embeddings);
    assert_true(c.rms_norm_eps == 1e-5 && c.max_position_embeddings == 2048);
    kvc_model_plan *plan = plan_of(NEOX_JA_BASE "}", "gpt_neox_japanese");
    assert_true(plan->head_dim == 16 && plan->num_key_value_heads == 4);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(NEOX_JA_BASE ",\"rotary_pct\":0.5,\"rotary_emb_base\":500.0,"
                                                         "\"intermediate_multiple_size\":2,\"hidden_act\":\"relu\","
                                                         "\"tie_word_embeddings\":false,\"layer_norm_eps\":1e-3}",
                                            "gpt_neox_japanese-set", &c),
                     KVC_OK);
    assert_true(c.rope.partial_rotary_factor == 0.5 && c.rope.theta == 500.0 && c.intermediate_size == 128);
    assert_true(c.mlp_act == KVC_MLP_RELU && !c.tie_word_embeddings && c.rms_norm_eps == 1e-3);
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_create_random(&c, 1, &m), KVC_OK);
    assert_true(m->layers[0].bo == NULL && m->layers[1].bo == NULL && m->layers[2].bo != NULL);
    kvc_model_destroy(m);
    assert_int_equal(kvc_model_config_parse(NEOX_JA_BASE ",\"hidden_act\":\"silu\"}", "gpt_neox_japanese-silu", &c),
                     KVC_OK);
    assert_true(c.mlp_act == KVC_MLP_SILU);
    expect_refusal(NEOX_JA_BASE ",\"hidden_act\":\"mish\"}", "hidden_act \"mish\" is not supported (gpt_neox_japanese");
    expect_refusal(NEOX_JA_BASE ",\"intermediate_multiple_size\":1000000000}", "intermediate_multiple_size");
#undef NEOX_JA_BASE
}

/* Apertus with ApertusConfig's defaults (xielu, as many KV heads as heads, eps 1e-5, theta 1.2e7 when the rope dict has
 * none, no biases, untied): the dense family with per-head q/k norms and a plain MLP; attention_bias on q/k/v/o;
 * refused by name: another hidden_act, no rope dict (ApertusConfig's llama3 default is not assumed). */
static void test_apertus_fields(void **state) {
    (void)state;
    kvc_model_config c;
#define APERTUS_BASE                                                                                                   \
    "{\"model_type\":\"apertus\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                         \
    "\"num_attention_heads\":4,\"num_hidden_layers\":2,\"max_position_embeddings\":64"
#define APERTUS_ROPE                                                                                                   \
    ",\"rope_parameters\":{\"rope_type\":\"llama3\",\"factor\":8.0,\"original_max_position_embeddings\":8192,"         \
    "\"low_freq_factor\":1.0,\"high_freq_factor\":4.0}"
    const char *def = APERTUS_BASE APERTUS_ROPE "}";
    assert_int_equal(kvc_model_config_parse(def, "apertus", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.num_kv_heads == 4 && c.rms_norm_eps == 1e-5);
    assert_true(c.mlp_act == KVC_MLP_XIELU && c.mlp_plain && c.qk_norm && !c.qk_norm_whole && !c.layer_norm);
    assert_true(c.rope.theta == 1.2e7 && c.rope.type == KVC_ROPE_LLAMA3 && c.rope.factor == 8.0);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings);
    kvc_model_plan *plan = plan_of(def, "apertus");
    assert_true(plan->head_dim == 16 && plan->num_key_value_heads == 4);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(APERTUS_BASE APERTUS_ROPE ",\"attention_bias\":true}", "apertus-bias", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && !c.mlp_bias);
    expect_refusal(APERTUS_BASE APERTUS_ROPE ",\"hidden_act\":\"relu2\"}",
                   "hidden_act \"relu2\" is not supported (apertus: xielu)");
    expect_refusal(APERTUS_BASE "}", "apertus without rope_parameters (or rope_scaling) is not supported");
#undef APERTUS_ROPE
#undef APERTUS_BASE
}

/* CodeGen with CodeGenConfig's defaults (GPT-J's: rotary_dim 64, theta 1e4 whatever rope_theta says, adjacent pairs,
 * a parallel block on one LayerNorm, MLP and head biases, n_inner 4 x n_embd, gelu_new, untied, 2048 positions) and
 * with rotary_dim 6 of 16; head_dim / num_key_value_heads keys not read; refused by name: n_embd not a multiple of 4
 * (its 4 model-parallel shards), rotary_dim null or above head_dim. */
static void test_codegen_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = CODEGEN_BASE ",\"rotary_dim\":16,\"rope_theta\":5e5,\"head_dim\":8,\"num_key_value_heads\":1}";
    assert_int_equal(kvc_model_config_parse(def, "codegen-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.num_kv_heads == 2 && c.intermediate_size == 128);
    assert_true(kvci_model_rot_dim(&c) == 16 && c.rope.theta == 10000.0 && c.rope_form == KVC_ROPE_PAIRS);
    assert_true(c.parallel_block && !c.parallel_mlp_norm && !c.qkv_bias && !c.o_bias && c.mlp_bias && c.head_bias);
    assert_true(c.layer_norm && c.norm_bias && c.mlp_plain && c.mlp_act == KVC_MLP_GELU_TANH && !c.tie_word_embeddings);
    assert_true(c.max_position_embeddings == 2048 && !c.pos_learned && c.rms_norm_eps == 1e-5);
    kvc_model_plan *plan = plan_of(def, "codegen");
    assert_true(plan->num_key_value_heads == 2 && plan->head_dim == 16 && plan->options.max_model_len == 2048);
    kvc_model_plan_destroy(plan);
    assert_int_equal(
        kvc_model_config_parse(CODEGEN_BASE ",\"rotary_dim\":6,\"n_inner\":null,\"n_positions\":64}", "codegen-6", &c),
        KVC_OK);
    assert_true(kvci_model_rot_dim(&c) == 6 && c.intermediate_size == 128 && c.max_position_embeddings == 64);
    expect_refusal(CODEGEN_BASE "}", "codegen with rotary_dim above head_dim is not supported (at most head_dim 16)");
    expect_refusal(CODEGEN_BASE ",\"rotary_dim\":null}", "codegen with rotary_dim null is not supported");
    expect_refusal("{\"model_type\":\"codegen\",\"vocab_size\":8,\"n_embd\":18,\"n_layer\":2,\"n_head\":1,"
                   "\"rotary_dim\":8}",
                   "codegen with n_embd 18 is not supported (its qkv_proj splits into 4 model-parallel shards");
    expect_refusal(CODEGEN_BASE ",\"rotary_dim\":8,\"activation_function\":\"silu\"}",
                   "activation_function \"silu\" is not supported (codegen");
}

/* GPT-Neo with GPTNeoConfig's defaults (24 layers alternating global and local from attention_types' default, window
 * 256, 2048 learned positions, no q/k/v biases, out_proj / MLP biases, intermediate 4 x hidden, gelu_new, tied, eps
 * 1e-5, an unscaled q.k: the runtime's and the planner's scale 1); attention_layers over attention_types, layer_types /
 * sliding_window / head_dim / num_key_value_heads / rope keys not read; refused by name: an entry neither global nor
 * local, a layer count other than num_layers, a malformed group. */
static void test_gpt_neo_fields(void **state) {
    (void)state;
    kvc_model_config c;
    const char *def = GPT_NEO_BASE ",\"num_layers\":24}";
    assert_int_equal(kvc_model_config_parse(def, "gpt_neo-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 8 && c.num_kv_heads == 4 && c.intermediate_size == 128);
    assert_true(c.pos_learned && c.pos_offset == 0 && c.max_position_embeddings == 2048 && c.tie_word_embeddings);
    assert_true(c.layer_nope[0] && c.layer_nope[23] && kvc_model_attn_scale(&c) == 1.0);
    assert_true(!c.layer_sliding[0] && c.layer_sliding[1] && !c.layer_sliding[22] && c.layer_sliding[23]);
    assert_true(c.sliding_window == 256 && !c.qkv_bias && c.o_bias && c.mlp_bias && !c.head_bias && !c.parallel_block);
    assert_true(c.mlp_act == KVC_MLP_GELU_TANH && c.mlp_plain && c.layer_norm && c.norm_bias && c.rms_norm_eps == 1e-5);
    kvc_model_plan *plan = plan_of(def, "gpt_neo");
    assert_true(plan->scale == 1.0 && plan->n_layers == 24 && plan->options.max_model_len == 2048);
    assert_true(plan->layers[0].sliding_window == 0 && plan->layers[1].sliding_window == 256);
    kvc_model_plan_destroy(plan);
    /* attention_layers (a saved config's) wins over attention_types, as GPTNeoConfig keeps it; keys transformers never
     * reads for gpt_neo are not read */
    const char *set = GPT_NEO_BASE ",\"num_layers\":3,\"attention_types\":[[[\"global\"],3]],"
                                   "\"attention_layers\":[\"local\",\"global\",\"local\"],\"window_size\":5,"
                                   "\"intermediate_size\":null,\"max_position_embeddings\":64,"
                                   "\"activation_function\":\"relu\",\"layer_norm_epsilon\":1e-3,"
                                   "\"tie_word_embeddings\":false,\"sliding_window\":3,\"use_sliding_window\":false,"
                                   "\"layer_types\":[\"full_attention\",\"full_attention\",\"full_attention\"],"
                                   "\"head_dim\":16,\"num_key_value_heads\":2,\"rope_theta\":5e5}";
    assert_int_equal(kvc_model_config_parse(set, "gpt_neo-set", &c), KVC_OK);
    assert_true(c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2] && c.sliding_window == 5);
    assert_true(c.head_dim == 8 && c.num_kv_heads == 4 && c.intermediate_size == 128 && c.layer_nope[2]);
    assert_true(c.max_position_embeddings == 64 && c.mlp_act == KVC_MLP_RELU && c.rms_norm_eps == 1e-3);
    assert_true(!c.tie_word_embeddings && kvc_model_attn_scale(&c) == 1.0);
    plan = plan_of(set, "gpt_neo");
    assert_true(plan->layers[0].sliding_window == 5 && plan->layers[1].sliding_window == 0);
    assert_true(plan->num_key_value_heads == 4 && plan->head_dim == 8 && plan->options.max_model_len == 64);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(GPT_NEO_BASE
                                            ",\"num_layers\":5,\"attention_types\":[[[\"global\",\"local\"],2],"
                                            "[[\"local\"],1]]}",
                                            "gpt_neo-groups", &c),
                     KVC_OK);
    assert_true(!c.layer_sliding[0] && c.layer_sliding[1] && !c.layer_sliding[2] && c.layer_sliding[3]);
    assert_true(c.layer_sliding[4]);
    expect_refusal(GPT_NEO_BASE ",\"num_layers\":3}", "gpt_neo's attention_types gives 24 layers but num_layers is 3");
    expect_refusal(GPT_NEO_BASE ",\"num_layers\":2,\"attention_layers\":[\"global\"]}",
                   "gpt_neo's attention_layers gives 1 layers but num_layers is 2");
    expect_refusal(GPT_NEO_BASE ",\"num_layers\":2,\"attention_layers\":[\"global\",\"sparse\"]}",
                   "attention_layers[1] holds an entry other than \"global\" and \"local\"");
    expect_refusal(GPT_NEO_BASE ",\"num_layers\":2,\"attention_types\":[[\"global\",2]]}",
                   "attention_types[0] must be [[\"global\" or \"local\", ...], count]");
    expect_refusal(GPT_NEO_BASE ",\"num_layers\":2,\"attention_types\":[[[\"global\"],1e9]]}",
                   "attention_types[0] must be");
    expect_refusal(GPT_NEO_BASE ",\"num_layers\":2,\"attention_types\":[[[\"local\"],2]],\"window_size\":0}",
                   "window_size");
    expect_refusal(GPT_NEO_BASE ",\"num_layers\":24,\"activation_function\":\"silu\"}",
                   "activation_function \"silu\" is not supported (gpt_neo");
}

/* Nemotron with NemotronConfig's defaults (LayerNorm1P: LayerNorms with bias applied as 1 + w, RoPE half-split on half
 * of each head, relu2 ungated MLP, no biases, eps 1e-5, untied) and with biases, head_dim, partial_rotary_factor and
 * hidden_act set; refused by name: num_key_value_heads absent or null (None in NemotronConfig). */
static void test_nemotron_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(NEMOTRON_BASE ",\"num_key_value_heads\":2}", "nemotron-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 2 && c.head_dim == 8 && kvci_model_rot_dim(&c) == 4);
    assert_true(c.layer_norm && c.norm_bias && c.gemma_norms && c.mlp_plain && c.mlp_act == KVC_MLP_RELU2);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.parallel_block && !c.tie_word_embeddings);
    assert_true(c.rms_norm_eps == 1e-5 && c.rope_form == KVC_ROPE_HALF && c.rope.theta == 10000.0);
    assert_int_equal(kvc_model_config_parse(NEMOTRON_BASE ",\"num_key_value_heads\":4,\"head_dim\":16,"
                                                          "\"attention_bias\":true,\"mlp_bias\":true,"
                                                          "\"partial_rotary_factor\":1.0,\"norm_eps\":1e-3,"
                                                          "\"hidden_act\":\"relu\"}",
                                            "nemotron-set", &c),
                     KVC_OK);
    assert_true(c.head_dim == 16 && kvci_model_rot_dim(&c) == 16 && c.qkv_bias && c.o_bias && c.mlp_bias);
    assert_true(c.rms_norm_eps == 1e-3 && c.mlp_act == KVC_MLP_RELU);
    expect_refusal(NEMOTRON_BASE "}", "nemotron without num_key_value_heads is not supported");
    expect_refusal(NEMOTRON_BASE ",\"num_key_value_heads\":null}", "nemotron without num_key_value_heads");
    expect_refusal(NEMOTRON_BASE ",\"num_key_value_heads\":2,\"hidden_act\":\"silu\"}",
                   "hidden_act \"silu\" is not supported (nemotron");
}

#define LFM2_BASE                                                                                                      \
    "{\"model_type\":\"lfm2\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"                            \
    "\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define LFM2_KINDS ",\"layer_types\":[\"conv\",\"full_attention\",\"conv\"]"

/* LFM2 with Lfm2Config's defaults (intermediate_size 12288 auto-adjusted to 8192, conv_L_cache 3 without biases,
 * norm_eps 1e-5, theta 1e6, tied, per-head q/k norms) and with its keys set: block_ff_dim over intermediate_size, the
 * multiplier and block_multiple_of rounding (int(2 x 192 / 3) = 128, x 1.5 = 192, up to a multiple of 40: 200), no
 * adjustment, a null multiplier (no rounding), tie_embedding over tie_word_embeddings, full_attn_idxs for the kinds;
 * refused by name: a layer type transformers would run as attention, a kernel of 1, tensor parallelism (the engine's
 * refusals: test_model_state_engine). */
static void test_lfm2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(LFM2_BASE LFM2_KINDS "}", "lfm2-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_LFM2 && c.head_dim == 8 && c.qk_norm && c.intermediate_size == 8192);
    assert_true(c.layer_conv[0] && !c.layer_conv[1] && c.layer_conv[2] && kvci_model_first_state(&c) == 0);
    assert_true(c.conv_kernel == 3 && !c.conv_bias && c.tie_word_embeddings && c.rms_norm_eps == 1e-5);
    assert_true(c.rope.theta == 1e6 && c.sliding_window == 0);
    assert_int_equal(kvc_model_config_parse(LFM2_BASE LFM2_KINDS
                                            ",\"intermediate_size\":96,\"block_ff_dim\":192,"
                                            "\"block_multiple_of\":40,\"block_ffn_dim_multiplier\":1.5,"
                                            "\"tie_word_embeddings\":true,\"tie_embedding\":false,"
                                            "\"conv_L_cache\":4,\"conv_bias\":true,\"norm_eps\":1e-3}",
                                            "lfm2-set", &c),
                     KVC_OK);
    assert_true(c.intermediate_size == 200 && !c.tie_word_embeddings && c.conv_kernel == 4 && c.conv_bias);
    assert_true(c.rms_norm_eps == 1e-3);
    assert_int_equal(kvc_model_config_parse(LFM2_BASE ",\"full_attn_idxs\":[1],\"intermediate_size\":96,"
                                                      "\"block_auto_adjust_ff_dim\":false}",
                                            "lfm2-idxs", &c),
                     KVC_OK);
    assert_true(c.layer_conv[0] && !c.layer_conv[1] && c.layer_conv[2] && c.intermediate_size == 96);
    assert_int_equal(kvc_model_config_parse(LFM2_BASE LFM2_KINDS ",\"intermediate_size\":96,"
                                                                 "\"block_ffn_dim_multiplier\":null}",
                                            "lfm2-null", &c),
                     KVC_OK);
    assert_int_equal(c.intermediate_size, 64);
    expect_refusal(LFM2_BASE ",\"layer_types\":[\"conv\",\"mamba\",\"conv\"]}",
                   "layer_types[1] \"mamba\" in an lfm2 model");
    expect_refusal(LFM2_BASE LFM2_KINDS ",\"conv_L_cache\":1}", "conv_L_cache");
    assert_int_equal(kvc_model_config_parse(LFM2_BASE LFM2_KINDS ",\"intermediate_size\":48}", "lfm2-small", &c),
                     KVC_OK);
    kvc_model_config shard; /* a rank: its share of the conv channels; a split that does not divide refused */
    assert_int_equal(kvci_model_shard_config(&c, 2, &shard), KVC_OK);
    assert_true(shard.conv_channels == 16 && shard.hidden_size == 32 && c.conv_channels == 0);
    assert_int_equal(kvci_model_shard_config(&c, 3, &shard), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "tensor parallelism 3 does not divide hidden_size (the conv layers' "
                                             "channels) 32"));
}

#define LFM3_BASE                                                                                                      \
    "{\"model_type\":\"lfm3\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":5,\"num_attention_heads\":4"
#define LFM3_ROPES                                                                                                     \
    ",\"rope_parameters\":{\"full_attention\":{\"rope_type\":\"proportional\",\"rope_theta\":5e5,"                     \
    "\"partial_rotary_factor\":0.25,\"factor\":2.0},\"sliding_attention\":{\"rope_type\":\"default\","                 \
    "\"rope_theta\":1e3}}"

/* LFM3 with Lfm3Config's defaults (head_dim 128, 4 KV heads, intermediate_size 7680 as given, layers conv, conv, full,
 * conv, sliding by its i % 4 rule, window 256, conv_L_cache 7, the full layers' proportional rope (theta 1e6, half the
 * angles: the whole head rotates with zero frequencies) and the sliding layers' default one (1e4), the gate per head
 * and the sandwich norms on, tied) and with its keys set; its plan (conv states of kernel - 1 columns, the window);
 * refused by name: a layer type its model has no mask for, a flat rope dict or one without a used type's entry, a
 * null window, the proportional rope in another type. */
static void test_lfm3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(LFM3_BASE "}", "lfm3-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_LFM2 && c.head_dim == 128 && c.num_kv_heads == 4 && c.intermediate_size == 7680);
    assert_true(c.layer_conv[0] && c.layer_conv[1] && !c.layer_conv[2] && !c.layer_sliding[2] && c.layer_conv[3]);
    assert_true(c.layer_sliding[4] && c.sliding_window == 256 && c.conv_kernel == 7 && !c.conv_bias);
    assert_true(c.rope.type == KVC_ROPE_PROPORTIONAL && c.rope.theta == 1e6 && c.rope.partial_rotary_factor == 0.5);
    assert_true(c.rope_sliding.type == KVC_ROPE_DEFAULT && c.rope_sliding.theta == 1e4);
    assert_true(kvci_model_rot_dim(&c) == 128 && c.attn_head_gate && c.sandwich_norms && !c.qkv_bias && !c.o_bias);
    assert_true(c.qk_norm && c.tie_word_embeddings && c.rms_norm_eps == 1e-5);
    assert_int_equal(kvc_model_config_parse(LFM3_BASE LFM3_ROPES
                                            ",\"head_dim\":16,\"num_key_value_heads\":2,\"intermediate_size\":40,"
                                            "\"block_ff_dim\":64,\"use_attention_gate\":false,"
                                            "\"use_sandwich_norm\":false,\"attention_bias\":true,\"conv_L_cache\":3,"
                                            "\"conv_bias\":true,\"sliding_window\":16,\"norm_eps\":1e-3,"
                                            "\"tie_word_embeddings\":false,\"layer_types\":[\"sliding_attention\","
                                            "\"conv\",\"full_attention\",\"conv\",\"conv\"]}",
                                            "lfm3-set", &c),
                     KVC_OK);
    assert_true(c.head_dim == 16 && c.num_kv_heads == 2 && c.intermediate_size == 40 && c.conv_kernel == 3);
    assert_true(!c.attn_head_gate && !c.sandwich_norms && c.qkv_bias && c.o_bias && c.conv_bias);
    assert_true(c.layer_sliding[0] && c.layer_conv[1] && !c.layer_conv[2] && c.sliding_window == 16);
    assert_true(c.rope.theta == 5e5 && c.rope.factor == 2.0 && c.rope.partial_rotary_factor == 0.25);
    assert_true(c.rope_sliding.theta == 1e3 && !c.tie_word_embeddings && c.rms_norm_eps == 1e-3);
    kvc_model_plan *plan = plan_of(LFM3_BASE ",\"head_dim\":8,\"max_position_embeddings\":1024}", "lfm3");
    assert_true(plan->hybrid && plan->n_layers == 5 && plan->head_dim == 8 && plan->num_key_value_heads == 4);
    assert_true(plan->layers[0].caches[0].is_state && plan->layers[0].caches[0].shape[0] == 32);
    assert_true(plan->layers[0].caches[0].shape[1] == 6 && plan->layers[4].sliding_window == 256);
    assert_true(plan->layers[2].sliding_window == 0 && !plan->layers[2].caches[0].is_state);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(LFM3_BASE ",\"head_dim\":8}", "lfm3", &c), KVC_OK);
    kvc_model_config shard; /* a rank: half the heads (and their gates), half the conv channels */
    assert_int_equal(kvci_model_shard_config(&c, 2, &shard), KVC_OK);
    assert_true(shard.conv_channels == 16 && shard.num_heads == 2 && shard.attn_head_gate);
    expect_refusal(LFM3_BASE ",\"layer_types\":[\"conv\",\"conv\",\"chunked_attention\",\"conv\",\"conv\"]}",
                   "layer_types[2] in an lfm3 model must be \"conv\", \"full_attention\" or \"sliding_attention\"");
    expect_refusal(LFM3_BASE ",\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":1e4}}",
                   "rope_parameters of an lfm3 model must hold one rope per attention layer type");
    expect_refusal(LFM3_BASE ",\"rope_parameters\":{\"full_attention\":{\"rope_type\":\"default\"}}}",
                   "rope_parameters has no sliding_attention entry");
    assert_int_equal(kvc_model_config_parse(LFM3_BASE ",\"layer_types\":[\"conv\",\"full_attention\",\"conv\","
                                                      "\"conv\",\"conv\"],\"rope_parameters\":{\"full_attention\":"
                                                      "{\"rope_type\":\"default\"}}}",
                                            "lfm3-full-only", &c),
                     KVC_OK);
    expect_refusal(LFM3_BASE ",\"sliding_window\":null}", "sliding");
    expect_refusal("{\"model_type\":\"qwen3\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":2,"
                   "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"intermediate_size\":8,\"rope_parameters\":{"
                   "\"rope_type\":\"proportional\"}}",
                   "rope type \"proportional\" is not supported by the runtime");
}

#define BAMBA_BASE                                                                                                     \
    "{\"model_type\":\"bamba\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"                           \
    "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":48,\"attn_layer_indices\":[1]"

/* Bamba with BambaConfig's defaults (mamba_n_heads 128 over mamba_expand 2 x hidden_size 64: heads of 1, 1 group of
 * state 256, conv kernel 4 with its bias, no projection biases, time_step_limit (0, inf), rms_norm_eps 1e-5,
 * untied, RoPE over half of each head) and with its keys set; the states each mamba layer keeps (conv: kernel - 1
 * columns of I + 2 G N channels; ssm: [heads, head_dim, state]); refused by name: heads that do not divide the
 * inner width, a head width that does not match it, groups that do not divide the heads, a bad time_step_limit,
 * a kernel of 1, tensor parallelism (the engine's refusals: test_model_state_engine). attention_bias and mlp_bias
 * (false when absent) on the attention's projections and the MLP's. */
static void test_bamba_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"bamba\",\"vocab_size\":8,\"hidden_size\":64,"
                                            "\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                                            "\"intermediate_size\":48,\"attn_layer_indices\":[0]}",
                                            "bamba-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_MAMBA2_HYBRID && !c.layer_mamba[0] && c.layer_mamba[1]);
    assert_true(c.mamba_heads == 128 && c.mamba_head_dim == 1 && c.mamba_groups == 1 && c.mamba_d_state == 256);
    assert_true(c.conv_kernel == 4 && c.mamba_conv_bias && !c.mamba_proj_bias && c.mamba_dt_min == 0.0);
    assert_true(isinf(c.mamba_dt_max) && c.rms_norm_eps == 1e-5 && !c.tie_word_embeddings);
    assert_true(c.rope.partial_rotary_factor == 0.5 && kvci_model_rot_dim(&c) == 8 && kvci_model_first_state(&c) == 1);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias);
    /* attention_bias (q/k/v/o) and mlp_bias, as BambaAttention and BambaMLP read them (were ignored) */
    assert_int_equal(kvc_model_config_parse(BAMBA_BASE ",\"mamba_n_heads\":4,\"attention_bias\":true,"
                                                       "\"mlp_bias\":true}",
                                            "bamba-biases", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias);
    assert_int_equal(kvc_model_config_parse(BAMBA_BASE ",\"mamba_n_heads\":4,\"mamba_d_head\":16,"
                                                       "\"mamba_n_groups\":2,\"mamba_d_state\":8,\"mamba_d_conv\":3,"
                                                       "\"mamba_conv_bias\":false,\"mamba_proj_bias\":true,"
                                                       "\"time_step_limit\":[0.01,2.5],\"tie_word_embeddings\":true}",
                                            "bamba-set", &c),
                     KVC_OK);
    assert_true(c.layer_mamba[0] && !c.layer_mamba[1] && c.layer_mamba[2] && c.mamba_heads == 4);
    assert_true(c.mamba_head_dim == 16 && c.mamba_groups == 2 && c.mamba_d_state == 8 && c.conv_kernel == 3);
    assert_true(!c.mamba_conv_bias && c.mamba_proj_bias && c.mamba_dt_min == 0.01 && c.mamba_dt_max == 2.5);
    assert_true(c.tie_word_embeddings);
    kvci_state_shape s[KVCI_MAX_LAYER_STATES];
    assert_int_equal(kvci_layer_states(&c, 0, s), 2);
    assert_int_equal(kvci_layer_states(&c, 1, s), 0);
    assert_int_equal(kvci_layer_states(&c, 2, s), 2);
    assert_true(strcmp(s[0].name, "conv_state") == 0 && s[0].ndim == 2 && s[0].shape[0] == 2 && s[0].shape[1] == 96);
    assert_true(strcmp(s[1].name, "ssm_state") == 0 && s[1].ndim == 3 && s[1].shape[0] == 4 && s[1].shape[1] == 16 &&
                s[1].shape[2] == 8);
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":5}", "mamba_n_heads 5 does not divide");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"mamba_d_head\":8}", "mamba_d_head 8 x mamba_n_heads 4");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"mamba_n_groups\":3}", "mamba_n_groups 3 does not divide");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"time_step_limit\":[2,1]}", "time_step_limit");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"time_step_limit\":null}", "time_step_limit");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"mamba_d_conv\":1}", "mamba_d_conv");
    /* Python's Infinity as transformers saves the default limit: read as the number; elsewhere a finite number is
     * still required, and the word inside a string stays a string */
    assert_int_equal(
        kvc_model_config_parse(BAMBA_BASE ",\"mamba_n_heads\":4,\"time_step_limit\":[0.0, Infinity]}", "bamba-inf", &c),
        KVC_OK);
    assert_true(isinf(c.mamba_dt_max) && c.mamba_dt_max > 0 && c.mamba_dt_min == 0.0);
    assert_int_equal(kvc_model_config_parse(BAMBA_BASE ",\"mamba_n_heads\":4,\"time_step_limit\":[0.5,"
                                                       "{\"__float__\":\"Infinity\"}]}",
                                            "bamba-inf5", &c),
                     KVC_OK); /* transformers 5's form */
    assert_true(isinf(c.mamba_dt_max) && c.mamba_dt_max > 0 && c.mamba_dt_min == 0.5);
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"time_step_limit\":[0,{\"__float__\":\"NaN\"}]}",
                   "time_step_limit");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"time_step_limit\":[0.0,-Infinity]}", "time_step_limit");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"rms_norm_eps\":Infinity}", "rms_norm_eps");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"hidden_act\":\"Infinity\"}", "\"Infinity\"");
    expect_refusal(BAMBA_BASE ",\"mamba_n_heads\":4,\"time_step_limit\":[0.0,Infinityx]}", "invalid JSON");
    assert_int_equal(kvc_model_config_parse(BAMBA_BASE ",\"mamba_n_heads\":4}", "bamba-tp", &c), KVC_OK);
    kvc_model_config shard; /* heads split; the one group replicated on every rank (vLLM's rule for 1 group) */
    assert_int_equal(kvci_model_shard_config(&c, 2, &shard), KVC_OK);
    assert_true(shard.mamba_heads == 2 && shard.mamba_groups == 1 && c.mamba_heads == 4);
    assert_int_equal(kvci_model_shard_config(&c, 8, &shard), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "tensor parallelism 8 does not divide mamba_n_heads 4"));
    assert_int_equal(kvc_model_config_parse(BAMBA_BASE ",\"mamba_n_heads\":12,\"mamba_n_groups\":6,\"mamba_expand\":3}",
                                            "bamba-g6", &c),
                     KVC_OK);
    assert_int_equal(kvci_model_shard_config(&c, 2, &shard), KVC_OK);
    assert_true(shard.mamba_heads == 6 && shard.mamba_groups == 3);
    assert_int_equal(kvci_model_shard_config(&c, 4, &shard), KVC_EINVAL); /* 6 groups: neither 4 | 6 nor 6 | 4 */
    assert_non_null(
        strstr(kvc_last_error(), "tensor parallelism 4 neither divides mamba_n_groups 6 nor is a multiple"));
}

/* The config classes' rules where a key is absent or null, as the planner reads them (test_plan): Bamba's null
 * attn_layer_indices (BambaConfig's default) is Mamba2 on every layer; LFM2 without layer_types or full_attn_idxs
 * attends on every layer (Lfm2Config's); Lfm2MoeConfig has no such rule; GLM-4.5's head_dim is hidden // heads rounded
 * down (Glm4MoeConfig's 4096 / 96: 42); no length key is 2048 positions; the encoder-decoders transformers lists as
 * causal LMs are refused by name. */
static void test_class_fallbacks(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(BAMBA_BASE ",\"mamba_n_heads\":4}", "bamba-base", &c), KVC_OK);
    assert_true(!c.layer_mamba[1]);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"bamba\",\"vocab_size\":8,\"hidden_size\":32,"
                               "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"intermediate_size\":48,"
                               "\"attn_layer_indices\":null,\"mamba_n_heads\":4}",
                               "bamba-null", &c),
        KVC_OK);
    assert_true(c.layer_mamba[0] && c.layer_mamba[1] && c.layer_mamba[2] && c.max_position_embeddings == 2048);
    assert_true(c.max_positions_assumed);
    assert_int_equal(
        kvc_model_config_parse(BAMBA_BASE ",\"mamba_n_heads\":4,\"max_position_embeddings\":2048}", "bamba-len", &c),
        KVC_OK);
    assert_false(c.max_positions_assumed);
    assert_int_equal(kvc_model_config_parse(LFM2_BASE "}", "lfm2-none", &c), KVC_OK);
    assert_true(!c.layer_conv[0] && !c.layer_conv[1] && !c.layer_conv[2]);
    expect_refusal("{\"model_type\":\"lfm2_moe\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"
                   "\"num_attention_heads\":4,\"num_key_value_heads\":2}",
                   "Lfm2MoeConfig has no default");
#define GLM4_MOE_FLOOR(hidden, heads)                                                                                  \
    "{\"model_type\":\"glm4_moe\",\"vocab_size\":8,\"hidden_size\":" hidden ",\"intermediate_size\":8,"                \
    "\"num_hidden_layers\":2,\"num_attention_heads\":" heads ",\"num_key_value_heads\":1}"
    assert_int_equal(kvc_model_config_parse(GLM4_MOE_FLOOR("100", "6"), "glm4_moe-floor", &c), KVC_OK);
    assert_true(c.head_dim == 16 && kvci_model_rot_dim(&c) == 8);
    expect_refusal(GLM4_MOE_FLOOR("84", "2"), "the rotary width 21 (head_dim 42");
#undef GLM4_MOE_FLOOR /* transformers rotates 22 channels at 21's frequencies */
    expect_refusal("{\"model_type\":\"llama\",\"vocab_size\":8,\"hidden_size\":100,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":1,\"num_attention_heads\":3,\"num_key_value_heads\":1}",
                   "hidden_size 100 is not a multiple of num_attention_heads");
    expect_refusal(
        "{\"model_type\":\"kolibri1_1\",\"vocab_size\":8,\"hidden_size\":64,\"num_hidden_layers\":5}",
        "model_type \"kolibri1_1\" is planned only, not run: its indexed_attention layers"); /* planned only */
    expect_refusal("{\"model_type\":\"lara_mini\",\"vocab_size\":8,\"hidden_size\":64,\"num_hidden_layers\":5}",
                   "model_type \"lara_mini\" is not supported"); /* planned only */
    expect_refusal(
        "{\"model_type\":\"gemma4_unified_assistant\",\"text_config\":{\"model_type\":\"gemma4_text\"}}",
        "\"gemma4_unified_assistant\" is not supported: Gemma 4 Unified's assistant is a speculative drafter");
    expect_refusal("{\"model_type\":\"mbart\",\"vocab_size\":8,\"d_model\":64,\"decoder_layers\":2}",
                   "model_type \"mbart\" is not supported: mBART is an encoder-decoder");
}

#define NEMOTRON_H_BASE                                                                                                \
    "{\"model_type\":\"nemotron_h\",\"vocab_size\":8,\"hidden_size\":32,\"num_attention_heads\":4,"                    \
    "\"num_key_value_heads\":2,\"intermediate_size\":48,\"mamba_num_heads\":8,\"mamba_head_dim\":8"

/* Nemotron-H with NemotronHConfig's defaults (128 mixer heads of 64, 8 groups of state 128, conv kernel 4 with its
 * bias, no projection biases, head_dim 128, layer_norm_epsilon 1e-5, relu2 MLPs, no positions, untied), its layers
 * counted from hybrid_override_pattern (no num_hidden_layers) or from layers_block_type (transformers 5's save), one
 * block a layer; with its keys set; refused by name: another activation, groups that do not divide the
 * heads, an unknown layer type, a model of MLPs alone. */
static void test_nemotron_h_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"nemotron_h\",\"vocab_size\":8,\"hidden_size\":64,"
                                            "\"num_attention_heads\":4,\"intermediate_size\":48,"
                                            "\"hybrid_override_pattern\":\"M-*\"}",
                                            "nemotron-h-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_MAMBA2_HYBRID && c.num_layers == 3 && c.layer_mamba[0] && !c.layer_mamba[2]);
    assert_true(c.mamba_heads == 128 && c.mamba_head_dim == 64 && c.mamba_groups == 8 && c.mamba_d_state == 128);
    assert_true(c.conv_kernel == 4 && c.mamba_conv_bias && !c.mamba_proj_bias && isinf(c.mamba_dt_max));
    assert_true(c.head_dim == 128 && c.rms_norm_eps == 1e-5 && c.mlp_plain && c.mlp_act == KVC_MLP_RELU2);
    assert_true(!c.tie_word_embeddings && !c.mlp_bias && c.layer_nope[2] && !c.qkv_bias && !c.o_bias);
    assert_true(c.layer_no_ffn[0] && !c.layer_no_mixer[0] && c.layer_no_mixer[1] && !c.layer_no_ffn[1]);
    assert_true(c.layer_no_ffn[2] && !c.layer_no_mixer[2] && kvci_model_first_state(&c) == 0);
    assert_int_equal(kvc_model_config_parse(NEMOTRON_H_BASE ",\"layers_block_type\":[\"mlp\",\"linear_attention\","
                                                            "\"full_attention\",\"linear_attention\"],\"n_groups\":2,"
                                                            "\"ssm_state_size\":8,\"conv_kernel\":3,\"use_bias\":true,"
                                                            "\"use_conv_bias\":false,\"mlp_bias\":true,\"head_dim\":16,"
                                                            "\"layer_norm_epsilon\":1e-6,\"time_step_limit\":[0,2],"
                                                            "\"tie_word_embeddings\":true}",
                                            "nemotron-h-set", &c),
                     KVC_OK);
    assert_true(c.num_layers == 4 && c.layer_no_mixer[0] && c.layer_mamba[1] && !c.layer_mamba[2] && c.layer_mamba[3]);
    assert_true(c.mamba_groups == 2 && c.mamba_d_state == 8 && c.conv_kernel == 3 && c.mamba_proj_bias);
    assert_true(!c.mamba_conv_bias && c.mlp_bias && c.head_dim == 16 && c.rms_norm_eps == 1e-6);
    assert_true(c.mamba_dt_max == 2.0 && !c.tie_word_embeddings); /* transformers ties nothing here */
    kvci_state_shape s[KVCI_MAX_LAYER_STATES];
    assert_int_equal(kvci_layer_states(&c, 0, s), 0);
    assert_int_equal(kvci_layer_states(&c, 1, s), 2);
    assert_true(s[0].shape[0] == 2 && s[0].shape[1] == 64 + 2 * 2 * 8 && s[1].shape[0] == 8 && s[1].shape[1] == 8);
    /* the legacy names Nemotron-3 Ultra's config gives, remapped as transformers does (was refused) */
    assert_int_equal(kvc_model_config_parse(NEMOTRON_H_BASE ",\"layers_block_type\":[\"mlp\",\"mamba\","
                                                            "\"attention\",\"mamba\"]}",
                                            "nemotron-h-legacy", &c),
                     KVC_OK);
    assert_true(c.num_layers == 4 && c.layer_no_mixer[0] && c.layer_mamba[1] && !c.layer_mamba[2] && c.layer_mamba[3]);
    expect_refusal(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"M\",\"mlp_hidden_act\":\"silu\"}", "mlp_hidden_act");
    expect_refusal(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"M\",\"mamba_hidden_act\":\"gelu\"}",
                   "mamba_hidden_act");
    expect_refusal(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"M\",\"n_groups\":3}", "n_groups 3 does not divide");
    expect_refusal(NEMOTRON_H_BASE ",\"layers_block_type\":[\"mamba2\"]}", "layers_block_type[0] \"mamba2\"");
    expect_refusal(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"--\"}", "every layer");
    expect_refusal(NEMOTRON_H_BASE "}", "layers_block_type and hybrid_override_pattern are missing");
}

/* Nemotron-H's expert layers (E / moe) with NemotronHConfig's defaults (8 experts of 7688, top 2 in 1 group, the
 * shared MLP of 7688, renormalised, x 1, no latent size), an expert layer alone (no cache); with its keys set
 * (num_local_experts for n_routed_experts, the latent size, groups); refused by name: k above the experts, groups
 * that do not split them, a latent size or shared width of 0. */
static void test_nemotron_h_experts(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"M-E\"}", "nh-moe", &c),
                     KVC_OK);
    assert_true(c.layer_moe[2] && !c.layer_moe[1] && !c.layer_moe[0] && c.layer_no_mixer[2] && !c.layer_no_ffn[2]);
    assert_true(c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.moe_intermediate_size == 7688);
    assert_true(c.shared_expert_intermediate_size == 7688 && c.n_group == 1 && c.topk_group == 1);
    assert_true(c.norm_topk_prob && c.routed_scaling_factor == 1.0 && c.moe_latent_size == 0);
    assert_true(c.first_k_dense_replace == 0 && c.mlp_plain && c.mlp_act == KVC_MLP_RELU2);
    assert_int_equal(kvc_model_config_parse(NEMOTRON_H_BASE ",\"layers_block_type\":[\"linear_attention\",\"moe\"],"
                                                            "\"num_local_experts\":16,\"num_experts_per_tok\":3,"
                                                            "\"moe_intermediate_size\":24,\"n_group\":4,"
                                                            "\"topk_group\":2,\"norm_topk_prob\":false,"
                                                            "\"routed_scaling_factor\":2.5,\"moe_latent_size\":16,"
                                                            "\"moe_shared_expert_intermediate_size\":40}",
                                            "nh-moe-set", &c),
                     KVC_OK);
    assert_true(c.layer_moe[1] && c.n_routed_experts == 16 && c.experts_per_tok == 3 && c.moe_intermediate_size == 24);
    assert_true(c.n_group == 4 && c.topk_group == 2 && !c.norm_topk_prob && c.routed_scaling_factor == 2.5);
    assert_true(c.moe_latent_size == 16 && c.shared_expert_intermediate_size == 40);
    assert_int_equal(kvc_model_config_parse(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"M-\","
                                                            "\"moe_latent_size\":16}",
                                            "nh-no-moe", &c),
                     KVC_OK);
    assert_true(!c.layer_moe[1] && c.moe_latent_size == 0 && c.n_routed_experts == 0); /* no expert layer: unread */
    expect_refusal(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"ME\",\"num_experts_per_tok\":9}",
                   "num_experts_per_tok");
    expect_refusal(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"ME\",\"n_group\":3}", "n_group 3");
    expect_refusal(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"ME\",\"moe_latent_size\":0}", "moe_latent_size");
    expect_refusal(NEMOTRON_H_BASE ",\"hybrid_override_pattern\":\"ME\",\"moe_shared_expert_intermediate_size\":0}",
                   "moe_shared_expert_intermediate_size");
}

#define FALCON_H1_BASE                                                                                                 \
    "{\"model_type\":\"falcon_h1\",\"vocab_size\":8,\"hidden_size\":64,\"num_attention_heads\":4,"                     \
    "\"num_hidden_layers\":2,\"intermediate_size\":48"

/* Falcon-H1 with FalconH1Config's defaults (mamba_d_ssm 1024: 128 heads of 8, 1 group of state 256, conv kernel 4
 * with its bias, no in_proj / out_proj biases, no gated norm, every multiplier 1), each layer a mixer and attention
 * with RoPE; with its keys set (mamba_d_ssm null: mamba_expand x hidden_size); refused by name: another hidden_act,
 * a multiplier list of another length or a multiplier outside (0, 1e6], heads that do not split mamba_d_ssm. */
static void test_falcon_h1_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(FALCON_H1_BASE "}", "falcon-h1-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_MAMBA2_HYBRID && c.layer_mamba[0] && c.layer_mamba[1] && c.mamba_parallel_attn);
    assert_true(c.mamba_heads == 128 && c.mamba_head_dim == 8 && c.mamba_groups == 1 && c.mamba_d_state == 256);
    assert_true(c.conv_kernel == 4 && c.mamba_conv_bias && !c.mamba_proj_bias && !c.mamba_out_bias);
    assert_true(!c.mamba_rms_norm && c.mamba_norm_before_gate && !c.layer_nope[0] && !c.layer_no_ffn[0]);
    assert_true(c.embed_scale == 1.0f && c.logit_scale == 1.0 && c.key_multiplier == 1.0 &&
                c.ssm_multipliers[4] == 1.0);
    assert_true(c.mlp_gate_multiplier == 1.0 && c.mlp_down_multiplier == 1.0 && c.head_dim == 16);
    kvci_state_shape s[KVCI_MAX_LAYER_STATES];
    assert_int_equal(kvci_layer_states(&c, 1, s), 2);
    assert_true(s[0].shape[0] == 3 && s[0].shape[1] == 1024 + 2 * 256 && s[1].shape[0] == 128);
    assert_int_equal(kvc_model_config_parse(FALCON_H1_BASE ",\"mamba_d_ssm\":null,\"mamba_n_heads\":8,"
                                                           "\"mamba_n_groups\":2,\"mamba_d_state\":16,"
                                                           "\"mamba_rms_norm\":true,\"mamba_norm_before_gate\":false,"
                                                           "\"projectors_bias\":true,\"mamba_proj_bias\":true,"
                                                           "\"embedding_multiplier\":2.5,\"lm_head_multiplier\":0.5,"
                                                           "\"key_multiplier\":0.25,\"ssm_in_multiplier\":1.5,"
                                                           "\"ssm_out_multiplier\":0.75,\"attention_in_multiplier\":2,"
                                                           "\"attention_out_multiplier\":3,\"mlp_multipliers\":[4,5],"
                                                           "\"ssm_multipliers\":[0.1,0.2,0.3,0.4,0.5]}",
                                            "falcon-h1-set", &c),
                     KVC_OK);
    assert_true(c.mamba_heads == 8 && c.mamba_head_dim == 16 && c.mamba_groups == 2 && c.mamba_rms_norm);
    assert_true(!c.mamba_norm_before_gate && c.mamba_out_bias && c.mamba_proj_bias && c.embed_scale == 2.5f);
    assert_true(c.logit_scale == 0.5 && c.key_multiplier == 0.25 && c.ssm_in_multiplier == 1.5);
    assert_true(c.ssm_out_multiplier == 0.75 && c.attention_in_multiplier == 2 && c.attention_out_multiplier == 3);
    assert_true(c.mlp_gate_multiplier == 4 && c.mlp_down_multiplier == 5 && c.ssm_multipliers[0] == 0.1);
    assert_true(c.ssm_multipliers[4] == 0.5);
    expect_refusal(FALCON_H1_BASE ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\"");
    expect_refusal(FALCON_H1_BASE ",\"mlp_multipliers\":[1]}", "mlp_multipliers has 1 entries");
    expect_refusal(FALCON_H1_BASE ",\"ssm_multipliers\":[1,1,0,1,1]}", "ssm_multipliers[2]");
    expect_refusal(FALCON_H1_BASE ",\"key_multiplier\":0}", "key_multiplier");
    expect_refusal(FALCON_H1_BASE ",\"mamba_d_ssm\":100}", "does not divide mamba_d_ssm 100");
}

#define MAMBA2_BASE "{\"model_type\":\"mamba2\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":2"

/* Mamba2 (Mamba2ForCausalLM) with Mamba2Config's defaults (128 heads of 64 = expand 2 x hidden_size 4096, 8 groups of
 * state 128, conv kernel 4 with its bias, no projection biases, layer_norm_epsilon 1e-5, untied; no num_attention_heads
 * or intermediate_size needed), every layer a mixer alone; with its keys set (tied honoured); refused by name: heads
 * that do not fill expand x hidden_size, groups that do not divide the heads, another hidden_act. */
static void test_mamba2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"mamba2\",\"vocab_size\":8,\"hidden_size\":4096,"
                                            "\"num_hidden_layers\":2}",
                                            "mamba2-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_MAMBA2_HYBRID && c.layer_mamba[0] && c.layer_mamba[1] && c.layer_no_ffn[1]);
    assert_true(!c.layer_no_mixer[0] && c.mamba_heads == 128 && c.mamba_head_dim == 64 && c.mamba_groups == 8);
    assert_true(c.mamba_d_state == 128 && c.conv_kernel == 4 && c.mamba_conv_bias && !c.mamba_proj_bias);
    assert_true(c.rms_norm_eps == 1e-5 && !c.tie_word_embeddings && isinf(c.mamba_dt_max));
    assert_int_equal(kvc_model_config_parse(MAMBA2_BASE ",\"num_heads\":4,\"head_dim\":8,\"expand\":1,\"n_groups\":2,"
                                                        "\"state_size\":16,\"conv_kernel\":3,\"use_bias\":true,"
                                                        "\"use_conv_bias\":false,\"layer_norm_epsilon\":1e-6,"
                                                        "\"tie_word_embeddings\":true}",
                                            "mamba2-set", &c),
                     KVC_OK);
    assert_true(c.mamba_heads == 4 && c.mamba_head_dim == 8 && c.mamba_groups == 2 && c.mamba_d_state == 16);
    assert_true(c.conv_kernel == 3 && c.mamba_proj_bias && !c.mamba_conv_bias && c.rms_norm_eps == 1e-6);
    assert_true(c.tie_word_embeddings);
    expect_refusal(MAMBA2_BASE ",\"num_heads\":4,\"head_dim\":8}", "num_heads 4 x head_dim 8 is not expand");
    expect_refusal(MAMBA2_BASE ",\"num_heads\":8,\"head_dim\":8,\"n_groups\":3}", "n_groups 3 does not divide");
    expect_refusal(MAMBA2_BASE ",\"num_heads\":8,\"head_dim\":8,\"n_groups\":1,\"hidden_act\":\"gelu\"}", "hidden_act");
}

#define ZAMBA2_BASE                                                                                                    \
    "{\"model_type\":\"zamba2\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,\"num_attention_heads\":"  \
    "4,"                                                                                                               \
    "\"layers_block_type\":[\"mamba\",\"hybrid\",\"hybrid\"]"

/* Zamba2 (Zamba2ForCausalLM) with Zamba2Config's defaults (54 layers, hybrid at 6, 12, ..., 42, 47, 51; 8 mixer heads
 * of expand 2 x hidden / 8, 1 group of state 64, kernel 4, dt above time_step_min 0.001, the gated norm's eps 1e-5;
 * head_dim 2 hidden / heads, scale (head_dim / 2)^-1/2, one block, the GELU MLP of 4 hidden, no RoPE, tied), every
 * layer a mixer and the hybrid ones the shared block; its keys set; refused by name: another layers_block_type entry or
 * count, add_bias_linear, attention adapters with fewer KV heads, another hidden_act, tensor parallelism. */
static void test_zamba2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"zamba2\",\"vocab_size\":8,\"hidden_size\":2560,"
                                            "\"num_hidden_layers\":54,\"num_attention_heads\":32}",
                                            "zamba2-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_MAMBA2_HYBRID && c.num_mem_blocks == 1 && c.adapter_rank == 128);
    for (int l = 0; l < 54; l++) {
        const bool hybrid = (l % 6 == 0 && l > 0 && l <= 42) || l == 47 || l == 51;
        assert_true(c.layer_mamba[l] && c.layer_no_ffn[l] && c.layer_shared_block[l] == hybrid && c.layer_nope[l]);
    }
    assert_true(c.mamba_heads == 8 && c.mamba_head_dim == 640 && c.mamba_groups == 1 && c.mamba_d_state == 64);
    assert_true(c.conv_kernel == 4 && c.mamba_conv_bias && c.mamba_dt_min == 0.001 && isinf(c.mamba_dt_max));
    assert_true(c.head_dim == 160 && c.num_kv_heads == 32 && c.intermediate_size == 10240 && c.tie_word_embeddings);
    assert_true(c.shared_act == KVC_MLP_GELU && !c.shared_attn_adapter && c.mamba_norm_eps == 1e-5);
    assert_true(fabs(kvc_model_attn_scale(&c) - 1.0 / sqrt(80.0)) < 1e-12);
    assert_int_equal(kvc_model_config_parse(ZAMBA2_BASE ",\"num_key_value_heads\":4,\"n_mamba_heads\":4,"
                                                        "\"mamba_ngroups\":2,\"mamba_d_state\":8,\"mamba_d_conv\":3,"
                                                        "\"intermediate_size\":48,\"num_mem_blocks\":2,"
                                                        "\"use_shared_attention_adapter\":true,\"adapter_rank\":4,"
                                                        "\"use_mem_rope\":true,\"hidden_act\":\"silu\","
                                                        "\"tie_word_embeddings\":false,\"use_long_context\":true}",
                                            "zamba2-set", &c),
                     KVC_OK);
    assert_true(!c.layer_shared_block[0] && c.layer_shared_block[1] && c.layer_shared_block[2] && !c.layer_nope[1]);
    assert_true(c.mamba_head_dim == 16 && c.mamba_groups == 2 && c.head_dim == 16 && c.num_mem_blocks == 2);
    assert_true(c.shared_attn_adapter && c.adapter_rank == 4 && c.shared_act == KVC_MLP_SILU);
    assert_true(!c.tie_word_embeddings && c.max_position_embeddings == 16384);
    /* the blocks' use sites: untied, every hybrid layer its own block (transformers 5.25 ties them only with the
     * embeddings); tied, site i reads block i % num_mem_blocks at that block's first site */
    int64_t first = -1;
    assert_int_equal(kvci_zamba_site(&c, 2, &first), 1);
    assert_int_equal(first, 2);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"zamba2\",\"vocab_size\":8,\"hidden_size\":32,"
                                            "\"num_hidden_layers\":5,\"num_attention_heads\":4,\"num_mem_blocks\":2,"
                                            "\"layers_block_type\":[\"hybrid\",\"mamba\",\"hybrid\",\"hybrid\","
                                            "\"hybrid\"]}",
                                            "zamba2-sites", &c),
                     KVC_OK);
    const int64_t want_site[5] = {0, 0, 1, 2, 3}, want_first[5] = {0, 0, 2, 0, 2};
    for (int64_t l = 0; l < 5; l++) {
        if (l == 1) continue;
        assert_int_equal(kvci_zamba_site(&c, l, &first), want_site[l]);
        assert_int_equal(first, want_first[l]);
    }
    expect_refusal("{\"model_type\":\"zamba2\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"
                   "\"num_attention_heads\":4,\"layers_block_type\":[\"mamba\",\"full_attention\",\"hybrid\"]}",
                   "layers_block_type[1] \"full_attention\" is not hybrid");
    expect_refusal("{\"model_type\":\"zamba2\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"
                   "\"num_attention_heads\":4,\"layers_block_type\":[\"mamba\",null,\"hybrid\"]}",
                   "layers_block_type[1] must be a string (hybrid, linear_attention or mamba), got null");
    expect_refusal("{\"model_type\":\"zamba2\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"
                   "\"num_attention_heads\":4}",
                   "Zamba2Config's default list has 54 layers");
    expect_refusal(ZAMBA2_BASE ",\"add_bias_linear\":true}", "add_bias_linear");
    expect_refusal(ZAMBA2_BASE ",\"num_key_value_heads\":2,\"use_shared_attention_adapter\":true}",
                   "use_shared_attention_adapter");
    expect_refusal(ZAMBA2_BASE ",\"hidden_act\":\"relu\"}", "hidden_act \"relu\"");
    expect_refusal(ZAMBA2_BASE ",\"n_mamba_heads\":5}", "n_mamba_heads 5");
    kvc_model_config full;
    assert_int_equal(kvc_model_config_parse(ZAMBA2_BASE "}", "zamba2-tp", &full), KVC_OK);
    assert_int_equal(kvci_shard_state_config(&full, 2, &c), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "zamba2"));
}

#define ZAMBA_BASE                                                                                                     \
    "{\"model_type\":\"zamba\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,\"num_attention_heads\":4," \
    "\"layers_block_type\":[\"mamba\",\"hybrid\",\"hybrid\"]"

/* Zamba (ZambaForCausalLM) with ZambaConfig's defaults (76 layers: 0, 1 mixers alone, 2 and 3 + i hybrid where i % 6
 * == 4; Mamba-1 mixers of expand 2 x hidden in 2 heads, state 16, kernel 4, dt rank ceil(hidden / 16), conv bias;
 * head_dim attention_head_dim or 2 hidden / heads, scale (head_dim / 2)^-1/2, no RoPE, one block, the GELU MLP of
 * 14848, eps 1e-5, 4096 positions, tied), its keys set; refused by name: another attention_hidden_size,
 * hidden_mamba_act or hidden_act, heads that do not divide the channels, tensor parallelism. */
static void test_zamba_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"zamba\",\"vocab_size\":8,\"hidden_size\":3712,"
                                            "\"num_hidden_layers\":76,\"num_attention_heads\":16}",
                                            "zamba-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_JAMBA && c.num_mem_blocks == 1 && c.adapter_rank == 0);
    for (int l = 0; l < 76; l++) {
        const bool hybrid = l == 2 || (l > 2 && (l - 3) % 6 == 4);
        assert_true(c.layer_mamba1[l] && c.layer_no_ffn[l] && c.layer_shared_block[l] == hybrid && c.layer_nope[l]);
    }
    assert_true(c.mamba_inner == 7424 && c.mamba_heads == 2 && c.mamba_d_state == 16 && c.conv_kernel == 4);
    assert_true(c.mamba_dt_rank == 232 && c.mamba_conv_bias && !c.mamba_proj_bias && !c.mamba_bcdt_norm);
    assert_true(c.head_dim == 464 && c.num_kv_heads == 16 && c.intermediate_size == 14848 && c.tie_word_embeddings);
    assert_true(c.shared_act == KVC_MLP_GELU && c.rms_norm_eps == 1e-5 && c.max_position_embeddings == 4096);
    assert_true(fabs(kvc_model_attn_scale(&c) - 1.0 / sqrt(232.0)) < 1e-12);
    assert_int_equal(kvc_model_config_parse(ZAMBA_BASE ",\"num_key_value_heads\":2,\"attention_head_dim\":8,"
                                                       "\"attention_hidden_size\":64,\"n_mamba_heads\":4,"
                                                       "\"mamba_d_state\":8,\"mamba_d_conv\":3,\"mamba_expand\":3,"
                                                       "\"mamba_dt_rank\":5,\"mamba_proj_bias\":true,"
                                                       "\"mamba_conv_bias\":false,\"intermediate_size\":48,"
                                                       "\"hidden_act\":\"silu\",\"rms_norm_eps\":1e-6,"
                                                       "\"tie_word_embeddings\":false}",
                                            "zamba-set", &c),
                     KVC_OK);
    assert_true(!c.layer_shared_block[0] && c.layer_shared_block[1] && c.layer_shared_block[2]);
    assert_true(c.mamba_inner == 96 && c.mamba_heads == 4 && c.mamba_d_state == 8 && c.conv_kernel == 3);
    assert_true(c.mamba_dt_rank == 5 && c.mamba_proj_bias && !c.mamba_conv_bias && c.head_dim == 8);
    assert_true(c.num_kv_heads == 2 && c.intermediate_size == 48 && c.shared_act == KVC_MLP_SILU);
    assert_true(c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings && fabs(kvc_model_attn_scale(&c) - 0.5) < 1e-12);
    expect_refusal(ZAMBA_BASE ",\"attention_hidden_size\":48}", "attention_hidden_size 48");
    expect_refusal(ZAMBA_BASE ",\"hidden_mamba_act\":\"gelu\"}", "hidden_mamba_act \"gelu\"");
    expect_refusal(ZAMBA_BASE ",\"hidden_act\":\"relu\"}", "hidden_act \"relu\"");
    expect_refusal(ZAMBA_BASE ",\"n_mamba_heads\":5}", "n_mamba_heads 5");
    expect_refusal("{\"model_type\":\"zamba\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"
                   "\"num_attention_heads\":4,\"layers_block_type\":[\"mamba\",\"attention\",\"hybrid\"]}",
                   "layers_block_type[1]");
    kvc_model_config full;
    assert_int_equal(kvc_model_config_parse(ZAMBA_BASE "}", "zamba-tp", &full), KVC_OK);
    assert_int_equal(kvci_shard_state_config(&full, 2, &c), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "zamba"));
    /* a caller's own struct: Mamba-1 heads that do not divide the channels, or without Zamba's one block */
    full.mamba_heads = 3;
    expect_create_refusal(&full, "mamba_heads 3");
    full.mamba_heads = 2, full.num_mem_blocks = 2;
    expect_create_refusal(&full, "num_mem_blocks");
}

#define MAMBA1_BASE "{\"model_type\":\"mamba\",\"vocab_size\":8,\"hidden_size\":40,\"num_hidden_layers\":2"

/* Mamba (MambaConfig's defaults: expand 2, state 16, kernel 4, time_step_rank auto = ceil(hidden / 16), conv bias, no
 * projection biases, eps 1e-5, tied; no heads or intermediate_size needed), every layer a mixer alone; with its keys
 * set (intermediate_size over expand); FalconMamba's dt / B / C norms (mixer_rms_eps 1e-6 by default); refused by name:
 * another hidden_act, a time_step_rank that is neither a rank nor "auto", an expand of 0. */
static void test_mamba_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(MAMBA1_BASE "}", "mamba-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_JAMBA && c.layer_mamba1[0] && c.layer_mamba1[1] && c.layer_no_ffn[1]);
    assert_true(!c.layer_mamba[0] && c.mamba_inner == 80 && c.mamba_dt_rank == 3 && c.mamba_d_state == 16);
    assert_true(c.conv_kernel == 4 && c.mamba_conv_bias && !c.mamba_proj_bias && !c.mamba_bcdt_norm);
    assert_true(c.rms_norm_eps == 1e-5 && c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(MAMBA1_BASE ",\"expand\":3,\"state_size\":8,\"conv_kernel\":2,"
                                                        "\"time_step_rank\":7,\"use_bias\":true,"
                                                        "\"use_conv_bias\":false,\"layer_norm_epsilon\":1e-6,"
                                                        "\"tie_word_embeddings\":false,\"use_mambapy\":true}",
                                            "mamba-set", &c),
                     KVC_OK);
    assert_true(c.mamba_inner == 120 && c.mamba_dt_rank == 7 && c.mamba_d_state == 8 && c.conv_kernel == 2);
    assert_true(c.mamba_proj_bias && !c.mamba_conv_bias && c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"falcon_mamba\",\"vocab_size\":8,\"hidden_size\":16,"
                                            "\"num_hidden_layers\":1}",
                                            "falcon-mamba-defaults", &c),
                     KVC_OK);
    assert_true(c.layer_mamba1[0] && c.mamba_bcdt_norm && c.mamba_bcdt_eps == 1e-6 && c.mamba_dt_rank == 1);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"falcon_mamba\",\"vocab_size\":8,\"hidden_size\":16,"
                                            "\"num_hidden_layers\":1,\"mixer_rms_eps\":1e-3}",
                                            "falcon-mamba-set", &c),
                     KVC_OK);
    assert_true(c.mamba_bcdt_eps == 1e-3);
    /* the file's intermediate_size wins over expand x hidden_size, as MambaConfig keeps it (was 2 x 40 = 80: the
     * checkpoint's in_proj was refused by shape); the planned states have its width */
    assert_int_equal(kvc_model_config_parse(MAMBA1_BASE ",\"expand\":3,\"intermediate_size\":48}", "mamba-inner", &c),
                     KVC_OK);
    assert_int_equal(c.mamba_inner, 48);
    kvc_model_plan *plan = NULL;
    const kvc_plan_options po = kvc_plan_default_options();
    static const char inner_json[] = MAMBA1_BASE ",\"intermediate_size\":48}";
    assert_int_equal(kvc_model_plan_create(inner_json, strlen(inner_json), &po, &plan), KVC_OK);
    assert_int_equal(plan->layers[0].caches[0].shape[0], 48);
    kvc_model_plan_destroy(plan);
    expect_refusal(MAMBA1_BASE ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\"");
    /* the message lists what is taken: a tanh GELU is not (the dense families' GeGLU only) */
    expect_refusal(MAMBA1_BASE ",\"hidden_act\":\"gelu_pytorch_tanh\"}",
                   "hidden_act \"gelu_pytorch_tanh\" is not supported (mamba: silu or swish)");
    expect_refusal(MAMBA1_BASE ",\"time_step_rank\":\"big\"}", "time_step_rank");
    expect_refusal(MAMBA1_BASE ",\"time_step_rank\":0}", "time_step_rank");
    expect_refusal(MAMBA1_BASE ",\"expand\":0}", "expand");
    expect_refusal(MAMBA1_BASE ",\"conv_kernel\":1}", "conv_kernel");
}

#define JAMBA_BASE                                                                                                     \
    "{\"model_type\":\"jamba\",\"vocab_size\":8,\"hidden_size\":64,\"num_hidden_layers\":8,"                           \
    "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":32,\"max_position_embeddings\":64"

/* Jamba with JambaConfig's defaults (attention on layer 4 of every 8, 16 experts on every odd layer, top-2 of a
 * softmax not renormalised, the mixer's mamba_* keys: expand 2, state 16, kernel 4, dt rank auto, conv bias, no
 * projection biases; the dt / B / C norms with rms_norm_eps 1e-6; untied, no positions; sliding_window not read),
 * with them set (one expert:
 * the dense MLP everywhere); refused by name: an attn_layer_offset past its period, a top-k above the experts,
 * another hidden_act. */
static void test_jamba_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(JAMBA_BASE "}", "jamba-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_JAMBA && c.layer_mamba1[0] && !c.layer_mamba1[4] && c.layer_mamba1[7]);
    assert_true(!c.layer_no_ffn[0] && c.layer_nope[4] && c.layer_moe[1] && !c.layer_moe[2] && c.layer_moe[7]);
    assert_true(c.n_routed_experts == 16 && c.experts_per_tok == 2 && !c.norm_topk_prob &&
                c.moe_intermediate_size == 32);
    assert_true(c.mamba_inner == 128 && c.mamba_d_state == 16 && c.conv_kernel == 4 && c.mamba_dt_rank == 4);
    assert_true(c.mamba_conv_bias && !c.mamba_proj_bias && c.mamba_bcdt_norm && c.mamba_bcdt_eps == 1e-6);
    assert_true(c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings && c.head_dim == 16);
    assert_int_equal(kvc_model_config_parse(JAMBA_BASE ",\"sliding_window\":4}", "jamba-window", &c), KVC_OK);
    assert_true(!c.layer_sliding[4] && c.sliding_window == 0); /* JambaAttention has no window */
    assert_int_equal(kvc_model_config_parse(JAMBA_BASE
                                            ",\"attn_layer_period\":2,\"attn_layer_offset\":1,"
                                            "\"num_experts\":1,\"mamba_expand\":1,\"mamba_d_state\":4,"
                                            "\"mamba_d_conv\":2,\"mamba_dt_rank\":6,\"mamba_proj_bias\":true,"
                                            "\"rms_norm_eps\":1e-5}",
                                            "jamba-set", &c),
                     KVC_OK);
    assert_true(c.layer_mamba1[0] && !c.layer_mamba1[1] && !c.layer_moe[1] && c.mamba_inner == 64);
    assert_true(c.mamba_d_state == 4 && c.conv_kernel == 2 && c.mamba_dt_rank == 6 && c.mamba_proj_bias);
    assert_true(c.mamba_bcdt_eps == 1e-5);
    expect_refusal(JAMBA_BASE ",\"attn_layer_period\":2,\"attn_layer_offset\":2}", "attn_layer_offset 2");
    expect_refusal(JAMBA_BASE ",\"num_experts\":4,\"num_experts_per_tok\":5}", "num_experts_per_tok");
    expect_refusal(JAMBA_BASE ",\"hidden_act\":\"gelu\"}", "hidden_act");
}

#define GRANITE_H_BASE                                                                                                 \
    "{\"model_type\":\"granitemoehybrid\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"                \
    "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":48,\"mamba_n_heads\":4,"                \
    "\"layer_types\":[\"mamba\",\"attention\",\"mamba\"]"

/* Granite 4.0-H with GraniteMoeHybridConfig's defaults (no positions: position_embedding_type absent, 8 experts of
 * intermediate_size, top-2, a shared MLP of 1024, Granite's multipliers 1 with the softmax scale 1, rms_norm_eps
 * 1e-6, the mixer's keys as Bamba's), with them set (RoPE, other multipliers, experts), and without experts (the
 * shared MLP alone, a dense MLP of its width); refused by name: another position_embedding_type, a top-k above the
 * experts. */
static void test_granitemoehybrid_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GRANITE_H_BASE "}", "granite-h-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_MAMBA2_HYBRID && c.layer_mamba[0] && !c.layer_mamba[1] && c.layer_mamba[2]);
    assert_true(c.layer_nope[1] && c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.layer_moe[0]);
    assert_true(c.moe_intermediate_size == 48 && c.shared_expert_intermediate_size == 1024 && c.embed_scale == 1.0f);
    assert_true(c.residual_multiplier == 1.0 && kvc_model_attn_scale(&c) == 1.0 && c.logits_scaling == 1.0);
    assert_true(c.rms_norm_eps == 1e-6 && c.mamba_head_dim == 16 && c.mamba_d_state == 256 && !c.tie_word_embeddings);
    /* without layer_types every layer is a mixer, as GraniteMoeHybridConfig derives it (was refused: "layer_types,
     * attn_layer_indices, ... are missing") */
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"granitemoehybrid\",\"vocab_size\":8,\"hidden_size\":32,"
                               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"intermediate_size\":48,"
                               "\"mamba_n_heads\":4}",
                               "granite-h-no-types", &c),
        KVC_OK);
    assert_true(c.layer_mamba[0] && c.layer_mamba[1]);
    assert_int_equal(kvc_model_config_parse(GRANITE_H_BASE
                                            ",\"position_embedding_type\":\"rope\","
                                            "\"num_local_experts\":3,\"num_experts_per_tok\":3,"
                                            "\"shared_intermediate_size\":20,\"embedding_multiplier\":12,"
                                            "\"residual_multiplier\":0.22,\"attention_multiplier\":0.0078125,"
                                            "\"logits_scaling\":8,\"rms_norm_eps\":1e-5}",
                                            "granite-h-set", &c),
                     KVC_OK);
    assert_true(!c.layer_nope[1] && c.n_routed_experts == 3 && c.experts_per_tok == 3);
    assert_true(c.shared_expert_intermediate_size == 20 && c.embed_scale == 12.0f && c.residual_multiplier == 0.22);
    assert_true(kvc_model_attn_scale(&c) == 0.0078125 && c.logits_scaling == 8.0 && c.rms_norm_eps == 1e-5);
    assert_int_equal(kvc_model_config_parse(GRANITE_H_BASE ",\"num_local_experts\":0,\"shared_intermediate_size\":40}",
                                            "granite-h-dense", &c),
                     KVC_OK);
    assert_true(!c.layer_moe[0] && !c.layer_moe[1] && c.intermediate_size == 40 && c.n_routed_experts == 0);
    expect_refusal(GRANITE_H_BASE ",\"position_embedding_type\":\"alibi\"}", "position_embedding_type \"alibi\"");
    expect_refusal(GRANITE_H_BASE ",\"num_local_experts\":2,\"num_experts_per_tok\":3}", "num_experts_per_tok");
}

#define QWEN3_NEXT_BASE                                                                                                \
    "{\"model_type\":\"qwen3_next\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":4,"                      \
    "\"num_attention_heads\":4"

/* Qwen3-Next with Qwen3NextConfig's defaults (every 4th layer full, head_dim 256 of 2 KV heads, partial rotary 0.25,
 * linear heads 16 / 32 of 128 with kernel 4, 512 experts of 512, top 10 renormalised, a shared expert of 512 on every
 * layer, intermediate_size 5632, zero-centred norms, the attention's output gate, untied) and with its keys set
 * (full_attention_interval, mlp_only_layers, decoder_sparse_step, num_experts 0: dense everywhere, attention_bias);
 * refused by name: value heads not a multiple of the key heads, a kernel of 1, top-k above the experts; OLMo Hybrid's
 * plan (its kinds and state sizes by its class's defaults) and the runtime's refusal of it. */
static void test_qwen3_next_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(QWEN3_NEXT_BASE "}", "q3n-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_QWEN3_NEXT && c.head_dim == 256 && c.num_kv_heads == 2);
    assert_true(c.layer_gdn[0] && c.layer_gdn[1] && c.layer_gdn[2] && !c.layer_gdn[3] &&
                kvci_model_first_state(&c) == 0);
    assert_true(c.gdn_k_heads == 16 && c.gdn_v_heads == 32 && c.gdn_k_dim == 128 && c.gdn_v_dim == 128);
    assert_true(c.gdn_conv_kernel == 4 && c.attn_output_gate && c.gemma_norms && c.qk_norm && !c.qkv_bias);
    assert_true(c.rope.partial_rotary_factor == 0.25 && kvci_model_rot_dim(&c) == 64 && c.rope.theta == 10000.0);
    assert_true(c.n_routed_experts == 512 && c.experts_per_tok == 10 && c.norm_topk_prob);
    assert_true(c.moe_intermediate_size == 512 && c.shared_expert_intermediate_size == 512);
    assert_true(c.layer_moe[0] && c.layer_moe[3] && c.intermediate_size == 5632 && !c.tie_word_embeddings);
    assert_true(c.rms_norm_eps == 1e-6 && c.conv_kernel == 0 && !c.layer_conv[0]);
    assert_int_equal(kvc_model_config_parse(QWEN3_NEXT_BASE ",\"full_attention_interval\":2,\"mlp_only_layers\":[2],"
                                                            "\"decoder_sparse_step\":1,\"num_experts\":4,"
                                                            "\"num_experts_per_tok\":4,\"attention_bias\":true,"
                                                            "\"linear_num_key_heads\":2,\"linear_num_value_heads\":6,"
                                                            "\"linear_conv_kernel_dim\":2,\"head_dim\":8}",
                                            "q3n-set", &c),
                     KVC_OK);
    assert_true(c.layer_gdn[0] && !c.layer_gdn[1] && c.layer_gdn[2] && !c.layer_gdn[3] && c.qkv_bias && c.o_bias);
    assert_true(c.layer_moe[0] && !c.layer_moe[2] && c.n_routed_experts == 4 && c.experts_per_tok == 4);
    assert_true(c.gdn_k_heads == 2 && c.gdn_v_heads == 6 && c.gdn_conv_kernel == 2 && kvci_model_rot_dim(&c) == 2);
    assert_int_equal(kvc_model_config_parse(QWEN3_NEXT_BASE ",\"num_experts\":0}", "q3n-dense", &c), KVC_OK);
    assert_true(!c.layer_moe[0] && !c.layer_moe[3]);
    expect_refusal(QWEN3_NEXT_BASE ",\"linear_num_value_heads\":24}",
                   "linear_num_value_heads 24 is not a multiple of linear_num_key_heads 16");
    expect_refusal(QWEN3_NEXT_BASE ",\"linear_conv_kernel_dim\":1}", "linear_conv_kernel_dim");
    expect_refusal(QWEN3_NEXT_BASE ",\"num_experts\":4,\"num_experts_per_tok\":5}", "num_experts_per_tok");
    /* OLMo Hybrid: OlmoHybridConfig's kinds (i % 4 == 3 full, else the last) and its Gated DeltaNet sizes when absent
     * (heads, heads, int(0.75 H / nk) = 12, 2 dk = 24), planned and run alike */
#define OLMO_H                                                                                                         \
    "{\"model_type\":\"olmo_hybrid\",\"vocab_size\":8,\"hidden_size\":64,\"num_hidden_layers\":3,"                     \
    "\"num_attention_heads\":4,\"intermediate_size\":96,\"max_position_embeddings\":1024"
    kvc_model_plan *plan = plan_of(OLMO_H "}", "olmo_hybrid");
    assert_true(plan->n_layers == 3 && plan->layers[0].caches[0].is_state && !plan->layers[2].caches[0].is_state);
    assert_true(plan->layers[0].caches[0].shape[0] == 2 * 4 * 12 + 4 * 24 && plan->layers[0].caches[0].shape[1] == 3);
    assert_true(plan->layers[1].caches[1].shape[0] == 4 && plan->layers[1].caches[1].shape[1] == 12 &&
                plan->layers[1].caches[1].shape[2] == 24);
    kvc_model_plan_destroy(plan);
    assert_int_equal(kvc_model_config_parse(OLMO_H "}", "olmo-h", &c), KVC_OK);
    assert_true(c.layer_gdn[0] && c.layer_gdn[1] && !c.layer_gdn[2] && c.gdn_split_proj && c.gdn_neg_eigval);
    assert_true(c.gdn_k_heads == 4 && c.gdn_v_heads == 4 && c.gdn_k_dim == 12 && c.gdn_v_dim == 24);
    assert_true(c.gdn_norm_eps == 1e-5 && c.rms_norm_eps == 1e-6 && c.gdn_pre_norms && c.post_norms && c.qk_norm_whole);
    assert_true(!c.attn_output_gate && !c.gemma_norms && !c.qkv_bias && c.num_kv_heads == 4 && c.head_dim == 16);
    assert_true(kvci_model_rot_dim(&c) == 16 && c.rope.theta == 10000.0 && !c.layer_nope[2] && !c.tie_word_embeddings);
    assert_int_equal(
        kvc_model_config_parse(OLMO_H ",\"linear_allow_neg_eigval\":false,\"attention_bias\":true}", "o", &c), KVC_OK);
    assert_true(!c.gdn_neg_eigval && c.qkv_bias && c.o_bias);
    /* no RoPE when rope_theta is None: the dict's null, else the top level's under a dict without one, or a dict per
     * layer type (OlmoHybridModel's rotary_emb None); the dict's number wins over a null top level */
    const char *nope[] = {",\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":null}}", ",\"rope_theta\":null}",
                          ",\"rope_parameters\":{\"rope_type\":\"default\"},\"rope_theta\":null}",
                          ",\"rope_parameters\":{\"full_attention\":{\"rope_theta\":500.0}}}"};
    for (size_t i = 0; i < sizeof nope / sizeof nope[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", OLMO_H, nope[i]);
        assert_int_equal(kvc_model_config_parse(text, "olmo-nope", &c), KVC_OK);
        assert_true(c.layer_nope[0] && c.layer_nope[2]);
    }
    assert_int_equal(
        kvc_model_config_parse(OLMO_H ",\"rope_parameters\":{\"rope_theta\":500.0},\"rope_theta\":null}", "o", &c),
        KVC_OK);
    assert_true(!c.layer_nope[2] && c.rope.theta == 500.0);
    expect_refusal(OLMO_H ",\"layer_types\":[\"linear_attention\",\"sliding_attention\",\"linear_attention\"],"
                          "\"sliding_window\":4}",
                   "layer_types[1] \"sliding_attention\" is not run by olmo_hybrid");
    expect_refusal(OLMO_H ",\"layer_types\":[\"full_attention\",\"full_attention\",\"full_attention\"]}",
                   "olmo_hybrid needs a linear_attention layer and a full_attention layer");
    expect_refusal(OLMO_H ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\" is not supported");
#undef OLMO_H
}

#define KIMI_BASE                                                                                                      \
    "{\"model_type\":\"kimi_linear\",\"vocab_size\":8,\"num_hidden_layers\":9,\"hidden_size\":2304,"                   \
    "\"num_attention_heads\":32"

/* Kimi-Linear with KimiLinearConfig's defaults (hidden 2304 and 32 heads given, as every saved config has them; MLA 512
 * / 64 / 128 / 128 without q LoRA, scale 192^-1/2; KDA layers but every 4th from layer 4; 32 KDA heads of 128, kernel
 * 4; layer 0 dense, 256 experts of 1024, 8 per token, one group, a shared expert, renormalised, times 2.446; eps 1e-5)
 * and with its keys set: the saved names (num_experts_per_token ...) or the DeepSeek ones, linear_attn_config over
 * linear_*; refused by name: a layer in neither of linear_attn_config's lists, hidden_act gelu. */
static void test_kimi_linear_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(KIMI_BASE "}", "kimi-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_KIMI_LINEAR && c.gdn_kda && c.hidden_size == 2304 && c.num_heads == 32);
    assert_true(c.kv_lora_rank == 512 && c.q_lora_rank == 0 && c.qk_rope_head_dim == 64 && c.v_head_dim == 128);
    assert_true(fabs(kvc_model_attn_scale(&c) - 1.0 / sqrt(192.0)) < 1e-12 && c.rms_norm_eps == 1e-5);
    for (int l = 0; l < 9; l++) assert_true(c.layer_gdn[l] == (l % 4 != 0 || l == 0));
    assert_true(c.gdn_k_heads == 32 && c.gdn_v_heads == 32 && c.gdn_k_dim == 128 && c.gdn_conv_kernel == 4);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.n_routed_experts == 256 && c.experts_per_tok == 8);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.norm_topk_prob && c.routed_scaling_factor == 2.446);
    assert_true(c.moe_intermediate_size == 1024 && c.shared_expert_intermediate_size == 1024 &&
                c.intermediate_size == 9216);
    assert_int_equal(kvc_model_config_parse(KIMI_BASE ",\"num_experts\":8,\"num_experts_per_token\":2,"
                                                      "\"num_expert_group\":2,\"moe_renormalize\":false,"
                                                      "\"first_k_dense_replace\":3,\"linear_num_heads\":4,"
                                                      "\"linear_attn_config\":{\"head_dim\":16,"
                                                      "\"short_conv_kernel_size\":3,\"kda_layers\":[1,2,3,4,5,6,7,8],"
                                                      "\"full_attn_layers\":[9]}}",
                                            "kimi-set", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.n_group == 2 && !c.norm_topk_prob);
    assert_true(!c.layer_moe[2] && c.layer_moe[3] && c.layer_gdn[7] && !c.layer_gdn[8]);
    assert_true(c.gdn_k_heads == 4 && c.gdn_k_dim == 16 && c.gdn_conv_kernel == 3);
    assert_int_equal(
        kvc_model_config_parse(KIMI_BASE ",\"num_local_experts\":6,\"num_experts_per_tok\":3}", "kimi-ds-names", &c),
        KVC_OK);
    assert_true(c.n_routed_experts == 6 && c.experts_per_tok == 3);
    expect_refusal(KIMI_BASE ",\"linear_attn_config\":{\"kda_layers\":[1],\"full_attn_layers\":[2]}}",
                   "layer 3 is in neither");
    expect_refusal(KIMI_BASE ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\"");
}

/* Qwen3.5's text model with Qwen3_5TextConfig's defaults: qwen3_next's layers, the projections apart, no experts
 * (num_experts not read), intermediate_size 12288, 4 KV heads, partial rotary 0.25. */
static void test_qwen3_5_text_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen3_5_text\",\"vocab_size\":8,\"hidden_size\":32,"
                                            "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_experts\":8}",
                                            "q35-defaults", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_QWEN3_NEXT && c.gdn_split_proj && c.attn_output_gate && c.gemma_norms);
    assert_true(c.head_dim == 256 && c.num_kv_heads == 4 && c.intermediate_size == 12288 &&
                kvci_model_rot_dim(&c) == 64);
    assert_true(c.layer_gdn[0] && !c.layer_gdn[3] && !c.layer_moe[0] && c.n_routed_experts == 0);
    assert_true(c.gdn_k_heads == 16 && c.gdn_v_heads == 32 && c.gdn_conv_kernel == 4);
}

#define LFM2_MOE_BASE                                                                                                  \
    "{\"model_type\":\"lfm2_moe\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":3,"                        \
    "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":96,"                                    \
    "\"max_position_embeddings\":64" LFM2_KINDS

/* LFM2-MoE with Lfm2MoeConfig's defaults (the dense MLP of intermediate_size as given on the first 2 layers whatever
 * block_* keys say, then 32 experts of 1792, top-4 by sigmoid score + expert_bias, renormalised, times 1; LFM2's conv
 * and attention layers) and with its keys set; the planner plans LFM2's layers; refused by name: use_expert_bias
 * false, a single expert, a top-k above the experts, tensor parallelism (the conv layers). */
static void test_lfm2_moe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(LFM2_MOE_BASE ",\"block_ffn_dim_multiplier\":1.5}", "lfm2-moe", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_LFM2 && c.intermediate_size == 96 && c.moe_intermediate_size == 1792);
    assert_true(c.n_routed_experts == 32 && c.experts_per_tok == 4 && c.n_group == 1 && c.topk_group == 1);
    assert_true(c.norm_topk_prob && c.routed_scaling_factor == 1.0 && c.shared_expert_intermediate_size == 0);
    assert_true(!c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && c.layer_conv[0] && !c.layer_conv[1]);
    assert_true(c.qk_norm && c.tie_word_embeddings && c.conv_kernel == 3 && c.rope.theta == 1e6);
    assert_int_equal(kvc_model_config_parse(LFM2_MOE_BASE ",\"num_experts\":6,\"num_experts_per_tok\":3,"
                                                          "\"moe_intermediate_size\":16,\"num_dense_layers\":0,"
                                                          "\"norm_topk_prob\":false,\"routed_scaling_factor\":2.5,"
                                                          "\"tie_embedding\":false}",
                                            "lfm2-moe-set", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 6 && c.experts_per_tok == 3 && c.moe_intermediate_size == 16);
    assert_true(c.layer_moe[0] && c.layer_moe[1] && !c.norm_topk_prob && c.routed_scaling_factor == 2.5);
    assert_true(!c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"lfm2_moe\",\"vocab_size\":8,\"hidden_size\":32,"
                                            "\"num_hidden_layers\":3,\"num_attention_heads\":8" LFM2_KINDS "}",
                                            "lfm2-moe-class", &c),
                     KVC_OK);
    assert_true(c.intermediate_size == 7168 && c.num_kv_heads == 8);
    kvc_model_plan *plan = plan_of(LFM2_MOE_BASE ",\"conv_L_cache\":3}", "lfm2_moe");
    assert_true(plan->hybrid && plan->n_layers == 3 && plan->head_dim == 8 && plan->num_key_value_heads == 2);
    kvc_model_plan_destroy(plan);
    expect_refusal(LFM2_MOE_BASE ",\"use_expert_bias\":false}", "lfm2_moe with use_expert_bias false is not supported");
    expect_refusal(LFM2_MOE_BASE ",\"num_experts\":1,\"num_experts_per_tok\":1}", "lfm2_moe with num_experts 1");
    expect_refusal(LFM2_MOE_BASE ",\"num_experts\":4,\"num_experts_per_tok\":5}",
                   "num_experts_per_tok 5 must be in [1, num_experts = 4]");
    assert_int_equal(kvc_model_config_parse(LFM2_MOE_BASE "}", "lfm2-moe", &c), KVC_OK);
    kvc_model_config shard;
    assert_int_equal(kvci_model_shard_config(&c, 2, &shard), KVC_OK);
    assert_int_equal(shard.conv_channels, 16);
}

/* A caller's own struct (kvc_model_create_random) with the scales, ALiBi fields or short-convolution layers no
 * config reader sets: NaN or negative scales, ALiBi fields without alibi, layer_conv outside LFM2 (its weights were
 * conv weights the family's attention never read: a crash at the first forward) or with a kernel below 2. */
static void test_caller_extras_refused(void **state) {
    (void)state;
    kvc_model_config c, base;
    assert_int_equal(kvc_model_config_parse(OLMO1_BASE "}", "olmo", &base), KVC_OK);
    c = base, c.embed_scale = NAN;
    expect_create_refusal(&c, "embed_scale nan outside [0, 1e+06]");
    c = base, c.residual_multiplier = -1.0;
    expect_create_refusal(&c, "residual_multiplier -1 outside");
    c = base, c.attention_multiplier = INFINITY;
    expect_create_refusal(&c, "attention_multiplier inf outside");
    c = base, c.logits_scaling = NAN;
    expect_create_refusal(&c, "logits_scaling nan outside");
    c = base, c.alibi_in_scale = true;
    expect_create_refusal(&c, "alibi_in_scale and alibi_bias_max need alibi");
    c = base, c.layer_conv[1] = true, c.conv_kernel = 3;
    expect_create_refusal(&c, "layer_conv marks 1 layers, which the dense family does not run");
    assert_int_equal(kvc_model_config_parse(LFM2_BASE LFM2_KINDS ",\"intermediate_size\":48}", "lfm2", &base), KVC_OK);
    const int64_t kernels[] = {1, 0, -5, 65537};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        c = base, c.conv_kernel = kernels[i];
        expect_create_refusal(&c, "conv_kernel");
    }
    assert_int_equal(kvc_model_config_parse(MPT_BASE "}", "mpt", &base), KVC_OK);
    c = base, c.alibi_bias_max = NAN;
    expect_create_refusal(&c, "alibi_bias_max nan outside");
    c = base, c.alibi_bias_max = -8.0;
    expect_create_refusal(&c, "alibi_bias_max -8 outside");
}

/* Qwen3.5-MoE's text model with Qwen3_5MoeTextConfig's defaults: the projections apart, 256 experts of 512, 8 per
 * token, always renormalised, on every layer (decoder_sparse_step, mlp_only_layers and norm_topk_prob not read), the
 * shared expert of 512, 2 KV heads; the wrappers: text_config required, the head tied by the top level's key alone. */
static void test_qwen3_5_moe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"qwen3_5_moe_text\",\"vocab_size\":8,\"hidden_size\":32,"
                               "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"decoder_sparse_step\":2,"
                               "\"mlp_only_layers\":[0],\"norm_topk_prob\":false,\"intermediate_size\":-1}",
                               "q35moe-defaults", &c),
        KVC_OK);
    assert_true(c.family == KVC_FAMILY_QWEN3_NEXT && c.gdn_split_proj && c.attn_output_gate);
    assert_true(c.n_routed_experts == 256 && c.experts_per_tok == 8 && c.norm_topk_prob);
    assert_true(c.moe_intermediate_size == 512 && c.shared_expert_intermediate_size == 512);
    for (int l = 0; l < 4; l++) assert_true(c.layer_moe[l]);
    assert_true(c.head_dim == 256 && c.num_kv_heads == 2 && kvci_model_rot_dim(&c) == 64 && c.layer_gdn[0]);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"qwen3_5_moe\",\"tie_word_embeddings\":true,"
                               "\"text_config\":{\"model_type\":\"qwen3_5_moe_text\",\"vocab_size\":8,"
                               "\"hidden_size\":32,\"num_hidden_layers\":4,\"num_attention_heads\":4,"
                               "\"num_experts\":4,\"num_experts_per_tok\":2,\"tie_word_embeddings\":false}}",
                               "q35moe-wrapped", &c),
        KVC_OK);
    assert_true(c.tie_word_embeddings && c.n_routed_experts == 4 && c.experts_per_tok == 2);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"qwen3_5\",\"text_config\":{\"model_type\":"
                               "\"qwen3_5_text\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":4,"
                               "\"num_attention_heads\":4,\"tie_word_embeddings\":true}}",
                               "q35-wrapped", &c),
        KVC_OK);
    assert_true(!c.tie_word_embeddings && c.n_routed_experts == 0 && c.intermediate_size == 12288 && c.gdn_split_proj);
    expect_refusal("{\"model_type\":\"qwen3_5_moe\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":4,"
                   "\"num_attention_heads\":4}",
                   "without text_config");
    expect_refusal("{\"model_type\":\"qwen3_5_moe_text\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":4,"
                   "\"num_attention_heads\":4,\"num_experts\":0}",
                   "num_experts");
}

/* GLM-4.7-Flash (glm4_moe_lite) with Glm4MoeLiteConfig's defaults: DeepSeek-V3's MLA with q_lora_rank 768,
 * rms_norm_eps 1e-5, interleaved RoPE; layer 0 dense and the rest sparse (first_k_dense_replace not read); 64 experts
 * of 1536, 4 per token in 1 group, renormalised, times 1.8, 1 shared; mlp_layer_types read and checked by name. */
#define GLM_LITE_BASE                                                                                                  \
    "{\"model_type\":\"glm4_moe_lite\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"                  \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"kv_lora_rank\":8,\"qk_rope_head_dim\":4,"                     \
    "\"qk_nope_head_dim\":4,\"v_head_dim\":4"
static void test_glm4_moe_lite_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GLM_LITE_BASE ",\"first_k_dense_replace\":3}", "glm-lite", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.q_lora_rank == 768 && c.rms_norm_eps == 1e-5);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[2] && c.rope_form == KVC_ROPE_INTERLEAVED);
    assert_true(c.n_routed_experts == 64 && c.moe_intermediate_size == 1536 && c.experts_per_tok == 4);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.norm_topk_prob && c.routed_scaling_factor == 1.8);
    assert_true(c.n_shared_experts == 1 && c.shared_expert_intermediate_size == 1536);
    assert_int_equal(kvc_model_config_parse(GLM_LITE_BASE
                                            ",\"mlp_layer_types\":[\"sparse\",\"dense\",\"sparse\"],"
                                            "\"q_lora_rank\":null,\"n_routed_experts\":4,\"num_experts_per_tok\":2}",
                                            "glm-lite-types", &c),
                     KVC_OK);
    assert_true(c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && c.q_lora_rank == 0);
    assert_int_equal(kvc_model_config_parse(GLM_LITE_BASE ",\"mlp_layer_types\":[\"dense\",\"dense\",\"dense\"],"
                                                          "\"n_routed_experts\":3,\"n_group\":2}",
                                            "glm-lite-dense", &c),
                     KVC_OK); /* no router: its sizes unchecked */
    expect_refusal(GLM_LITE_BASE ",\"mlp_layer_types\":[\"sparse\",\"dense\"]}", "mlp_layer_types has 2 entries");
    expect_refusal(GLM_LITE_BASE ",\"mlp_layer_types\":[\"sparse\",\"moe\",\"dense\"]}", "mlp_layer_types[1]");
    expect_refusal(GLM_LITE_BASE ",\"n_routed_experts\":6,\"n_group\":4}", "MoE routing sizes");
    expect_refusal(GLM_LITE_BASE ",\"rope_parameters\":{\"rope_type\":\"default\",\"partial_rotary_factor\":0.5}}",
                   "partial_rotary_factor 0.5: glm4_moe_lite");
}

/* Sarvam-105B (sarvam_mla) with SarvamMLAConfig's defaults over DeepSeek-V3's: the MLA sizes (latent 512, rope 64,
 * nope 128, v 128), no q LoRA, layer 0 dense, 128 experts, one group; the original checkpoint's spellings:
 * num_experts / num_shared_experts (winning over n_routed_experts), head_dim and q_head_dim (not read) and
 * rope_scaling type deepseek_yarn (YaRN; refused under another model type). */
#define SARVAM_BASE                                                                                                    \
    "{\"model_type\":\"sarvam_mla\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"                     \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4"
static void test_sarvam_mla_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(SARVAM_BASE "}", "sarvam", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.q_lora_rank == 0 && c.kv_lora_rank == 512);
    assert_true(c.qk_rope_head_dim == 64 && c.qk_nope_head_dim == 128 && c.v_head_dim == 128);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[2] && c.rope_form == KVC_ROPE_INTERLEAVED);
    assert_true(c.n_routed_experts == 128 && c.moe_intermediate_size == 2048 && c.experts_per_tok == 8);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.routed_scaling_factor == 2.5 && c.n_shared_experts == 1);
    assert_true(c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(SARVAM_BASE ",\"kv_lora_rank\":8,\"qk_rope_head_dim\":4,"
                                                        "\"qk_nope_head_dim\":4,\"v_head_dim\":4,\"head_dim\":12,"
                                                        "\"q_head_dim\":8,\"n_routed_experts\":4,\"num_experts\":6,"
                                                        "\"num_shared_experts\":2,\"num_experts_per_tok\":2,"
                                                        "\"rope_scaling\":{\"type\":\"deepseek_yarn\",\"factor\":4,"
                                                        "\"original_max_position_embeddings\":64,\"mscale\":1,"
                                                        "\"mscale_all_dim\":1}}",
                                            "sarvam-legacy", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 6 && c.n_shared_experts == 2 && c.head_dim == 4);
    assert_true(c.rope.type == KVC_ROPE_YARN && c.rope.factor == 4.0 && c.rope.original_max_position == 64);
    expect_refusal(
        "{\"model_type\":\"deepseek_v3\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"
        "\"num_hidden_layers\":1,\"num_attention_heads\":4,\"kv_lora_rank\":8,\"qk_rope_head_dim\":4,"
        "\"qk_nope_head_dim\":4,\"v_head_dim\":4,\"rope_scaling\":{\"type\":\"deepseek_yarn\",\"factor\":4}}",
        "deepseek_yarn");
    expect_refusal(SARVAM_BASE ",\"num_experts\":6}", "MoE routing sizes"); /* 6 experts, top 8 */
}

/* A.X-K1 (axk1) with AXK1Config's defaults: DeepSeek-V3's MLA sizes with q LoRA 1536 (null refused: its attention
 * always has one), layer 0 dense, 192 experts, 8 per token in 4 of 8 groups; the legacy first_k_dense_replace /
 * moe_layer_freq read only without mlp_layer_types. */
#define AXK1_BASE                                                                                                      \
    "{\"model_type\":\"axk1\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"                           \
    "\"num_hidden_layers\":4,\"num_attention_heads\":4"
static void test_axk1_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(AXK1_BASE "}", "axk1", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.q_lora_rank == 1536 && c.kv_lora_rank == 512);
    assert_true(c.qk_rope_head_dim == 64 && c.qk_nope_head_dim == 128 && c.v_head_dim == 128);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[3] && c.rope_form == KVC_ROPE_INTERLEAVED);
    assert_true(c.n_routed_experts == 192 && c.moe_intermediate_size == 2048 && c.experts_per_tok == 8);
    assert_true(c.n_group == 8 && c.topk_group == 4 && c.routed_scaling_factor == 2.5 && c.n_shared_experts == 1);
    assert_int_equal(
        kvc_model_config_parse(AXK1_BASE ",\"first_k_dense_replace\":1,\"moe_layer_freq\":2}", "axk1-freq", &c),
        KVC_OK);
    assert_true(!c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && !c.layer_moe[3]);
    assert_int_equal(kvc_model_config_parse(AXK1_BASE
                                            ",\"first_k_dense_replace\":3,"
                                            "\"mlp_layer_types\":[\"sparse\",\"dense\",\"dense\",\"sparse\"]}",
                                            "axk1-types", &c),
                     KVC_OK);
    assert_true(c.layer_moe[0] && !c.layer_moe[1] && !c.layer_moe[2] && c.layer_moe[3]);
    expect_refusal(AXK1_BASE ",\"q_lora_rank\":null}", "axk1 q_lora_rank null");
    expect_refusal(AXK1_BASE ",\"moe_layer_freq\":0}", "moe_layer_freq");
}

/* A.X-K2 (axk2) with AXK2Config's defaults: MLA sizes (q LoRA 384, latent 128, rope 32, nope 64, v 64), V3.2's
 * indexer on every layer (16 heads of 128, top 2048, half-split RoPE), max_position_embeddings 131072, layer 0 dense
 * (AXK1Config's legacy keys), 128 experts of 512, 8 per token over all of them (n_group null), gated norms of rank
 * 16 and the q gate; refused by name: n_group or topk_group alone, q_lora_rank null, gated_norm_rank 0. */
#define AXK2_BASE                                                                                                      \
    "{\"model_type\":\"axk2\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":4,\"num_attention_heads\":4"
static void test_axk2_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(AXK2_BASE ",\"n_group\":null,\"topk_group\":null}", "axk2", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.q_lora_rank == 384 && c.kv_lora_rank == 128);
    assert_true(c.qk_rope_head_dim == 32 && c.qk_nope_head_dim == 64 && c.v_head_dim == 64);
    assert_true(c.index_topk == 2048 && c.index_n_heads == 16 && c.index_head_dim == 128 && c.index_rope_half);
    assert_true(c.max_position_embeddings == 131072 && c.rope_form == KVC_ROPE_INTERLEAVED);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[3] && c.intermediate_size == 5120);
    assert_true(c.n_routed_experts == 128 && c.moe_intermediate_size == 512 && c.experts_per_tok == 8);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.norm_topk_prob && c.routed_scaling_factor == 2.5);
    assert_true(c.gated_norm_rank == 16 && c.mla_q_gate && c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(AXK2_BASE ",\"n_group\":4,\"topk_group\":2,\"num_local_experts\":16,"
                                                      "\"gated_norm_rank\":4,\"moe_layer_freq\":2}",
                                            "axk2-groups", &c),
                     KVC_OK);
    assert_true(c.n_group == 4 && c.topk_group == 2 && c.n_routed_experts == 16 && c.gated_norm_rank == 4);
    assert_true(!c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && !c.layer_moe[3]);
    expect_refusal(AXK2_BASE ",\"n_group\":4}", "axk2 n_group is set without topk_group");
    expect_refusal(AXK2_BASE ",\"topk_group\":2}", "axk2 topk_group is set without n_group");
    expect_refusal(AXK2_BASE ",\"q_lora_rank\":null}", "axk2 q_lora_rank null");
    expect_refusal(AXK2_BASE ",\"gated_norm_rank\":0}", "gated_norm_rank");
}

/* Beam (beam) with BeamConfig's defaults: head_dim 128, 8 KV heads, window 512, every sixth layer and the last full
 * (NoPE, queries scaled), the first three dense (MLP 20480), 256 experts of 2560, top 8 in 4 of 8 groups, scale 2.5,
 * renormalised, soft cap 30; refused by name: a rope dict on the full layers, n_group null, sliding_window null. */
#define BEAM_BASE                                                                                                      \
    "{\"model_type\":\"beam\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":7,\"num_attention_heads\":16"
static void test_beam_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(BEAM_BASE "}", "beam", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 8 && c.sliding_window == 512);
    assert_true(c.layer_sliding[0] && !c.layer_sliding[5] && !c.layer_sliding[6] && c.layer_sliding[4]);
    assert_true(!c.layer_nope[0] && c.layer_nope[5] && c.layer_nope[6] && c.query_scale_ssmax);
    assert_true(!c.layer_moe[2] && c.layer_moe[3] && c.intermediate_size == 20480 && c.moe_intermediate_size == 2560);
    assert_true(c.n_routed_experts == 256 && c.experts_per_tok == 8 && c.n_group == 8 && c.topk_group == 4);
    assert_true(c.norm_topk_prob && c.routed_scaling_factor == 2.5 && c.shared_expert_intermediate_size == 0);
    assert_true(c.final_logit_softcapping == 30.0 && c.qk_norm && c.sandwich_norms && c.attn_gate_proj);
    assert_true(c.attn_gate_bias && c.depth_scaled_residual && c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings);
    assert_int_equal(kvc_model_config_parse(BEAM_BASE ",\"final_logit_softcapping\":null,\"rope_parameters\":"
                                                      "{\"sliding_attention\":{\"rope_type\":\"default\","
                                                      "\"rope_theta\":500.0},\"full_attention\":null}}",
                                            "beam-ropes", &c),
                     KVC_OK);
    assert_true(c.final_logit_softcapping == 0.0 && c.rope.theta == 500.0);
    expect_refusal(BEAM_BASE ",\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":500.0}}",
                   "beam rope_parameters.full_attention must be null");
    expect_refusal(BEAM_BASE ",\"n_group\":null}", "beam n_group null");
    expect_refusal(BEAM_BASE ",\"sliding_window\":null}", "beam with sliding_window null");
    expect_refusal(BEAM_BASE ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\"");
}

/* LongCat-Flash (longcat_flash) with LongcatFlashConfig's defaults: 28 decoder layers of two sub-layers (56), MLA
 * sizes (q LoRA 1536, latent 512, rope 64, nope 128, v 128), MLP 12288, 512 experts of 2048 plus 256 zero experts,
 * top-12, times 6, rms_norm_eps 1e-5, theta 1e7, the MoE on the even sub-layers, q and latent scales
 * sqrt(hidden / rank); refused by name: q_lora_rank null, qk_head_dim or head_dim off their widths, router_bias. */
#define LONGCAT_BASE "{\"model_type\":\"longcat_flash\",\"vocab_size\":8,\"hidden_size\":32,\"num_attention_heads\":4"
static void test_longcat_flash_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(LONGCAT_BASE "}", "longcat", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.num_layers == 56 && c.q_lora_rank == 1536);
    assert_true(c.kv_lora_rank == 512 && c.qk_rope_head_dim == 64 && c.qk_nope_head_dim == 128 && c.v_head_dim == 128);
    assert_true(c.intermediate_size == 12288 && c.moe_intermediate_size == 2048 && c.n_routed_experts == 512);
    assert_true(c.zero_experts == 256 && c.experts_per_tok == 12 && c.routed_scaling_factor == 6.0);
    assert_true(c.rms_norm_eps == 1e-5 && c.rope.theta == 1e7 && c.moe_shortcut && c.n_shared_experts == 0);
    assert_true(c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[54] && !c.layer_moe[55]);
    assert_true(fabs(c.mla_q_scale - sqrt(32.0 / 1536.0)) < 1e-12 && fabs(c.mla_kv_scale - 0.25) < 1e-12);
    assert_int_equal(
        kvc_model_config_parse(LONGCAT_BASE ",\"num_hidden_layers\":6,\"zero_expert_num\":null}", "longcat-hidden", &c),
        KVC_OK);
    assert_true(c.num_layers == 6 && c.zero_experts == 0);
    expect_refusal(LONGCAT_BASE ",\"q_lora_rank\":null}", "q_lora_rank null");
    expect_refusal(LONGCAT_BASE ",\"qk_head_dim\":100}", "qk_head_dim 100");
    expect_refusal(LONGCAT_BASE ",\"head_dim\":32}", "head_dim 32");
    expect_refusal(LONGCAT_BASE ",\"router_bias\":true}", "router_bias");
    expect_refusal(LONGCAT_BASE ",\"moe_topk\":769}", "moe_topk 769");
    c.mla_kv_scale = -1.0; /* a caller's own struct: the scales bounded */
    expect_create_refusal(&c, "mla_kv_scale");
}

/* GLM-5 (glm_moe_dsa) with GlmMoeDsaConfig's defaults: MLA sizes (q LoRA 2048, latent 512, rope 64, nope 192, v 256),
 * rms_norm_eps 1e-5, the first 3 layers dense, 256 experts, 8 per token in 1 group, times 2.5; RoPE always
 * interleaved (rope_interleave not read); index_topk 2048 and an indexer of 32 heads of 128 rotating pairs (positions
 * not cut); the indexer's keys checked by name; index_topk_pattern's S layers shared. */
#define GLM_DSA_BASE                                                                                                   \
    "{\"model_type\":\"glm_moe_dsa\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"                    \
    "\"num_hidden_layers\":4,\"num_attention_heads\":4"
static void test_glm_moe_dsa_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(GLM_DSA_BASE ",\"rope_interleave\":false}", "glm5", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.q_lora_rank == 2048 && c.kv_lora_rank == 512);
    assert_true(c.qk_rope_head_dim == 64 && c.qk_nope_head_dim == 192 && c.v_head_dim == 256);
    assert_true(!c.layer_moe[0] && !c.layer_moe[2] && c.layer_moe[3] && c.rope_form == KVC_ROPE_INTERLEAVED);
    assert_true(c.n_routed_experts == 256 && c.moe_intermediate_size == 2048 && c.experts_per_tok == 8);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.routed_scaling_factor == 2.5 && c.rms_norm_eps == 1e-5);
    assert_true(c.index_topk == 2048 && c.max_position_embeddings == 202752 && !c.tie_word_embeddings);
    assert_true(c.index_n_heads == 32 && c.index_head_dim == 128 && !c.index_rope_half && !c.layer_index_shared[3]);
    assert_int_equal(kvc_model_config_parse(GLM_DSA_BASE ",\"first_k_dense_replace\":1,\"index_topk\":16,"
                                                         "\"index_topk_pattern\":\"FSSF\",\"num_experts\":16}",
                                            "glm5-set", &c),
                     KVC_OK);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.index_topk == 16 && c.n_routed_experts == 16);
    assert_true(!c.layer_index_shared[0] && c.layer_index_shared[1] && c.layer_index_shared[2] &&
                !c.layer_index_shared[3]);
    expect_refusal(GLM_DSA_BASE ",\"q_lora_rank\":null}", "glm_moe_dsa q_lora_rank null");
    expect_refusal(GLM_DSA_BASE ",\"index_topk\":0}", "index_topk");
    expect_refusal(GLM_DSA_BASE ",\"index_head_dim\":32}", "index_head_dim 32 is below qk_rope_head_dim 64");
    expect_refusal(GLM_DSA_BASE ",\"indexer_types\":[\"full\",\"shared\"]}", "indexer_types has 2 entries");
    expect_refusal(GLM_DSA_BASE ",\"indexer_types\":[\"full\",\"dense\",\"full\",\"full\"]}", "indexer_types[1]");
    expect_refusal(GLM_DSA_BASE ",\"indexer_types\":[\"shared\",\"full\",\"full\",\"full\"]}",
                   "indexer_types[0] is shared");
    expect_refusal(GLM_DSA_BASE ",\"index_topk_pattern\":\"FSXF\"}", "index_topk_pattern[2]");
    /* a list pattern: the types themselves, as GlmMoeDsaConfig takes it */
    assert_int_equal(kvc_model_config_parse(GLM_DSA_BASE ",\"index_topk_pattern\":[\"full\",\"shared\",\"full\","
                                                         "\"shared\"]}",
                                            "glm5-list", &c),
                     KVC_OK);
    assert_true(!c.layer_index_shared[0] && c.layer_index_shared[1] && !c.layer_index_shared[2] &&
                c.layer_index_shared[3]);
    expect_refusal(GLM_DSA_BASE ",\"index_topk_pattern\":[\"full\",\"F\",\"full\",\"full\"]}",
                   "index_topk_pattern[1] must be \"full\" or \"shared\"");
}

/* HY V4 (hy_v4) with HYV4Config's defaults: MLA sizes (q LoRA 1536, latent 512, rope 64, nope 192, v 256), rms_norm_eps
 * 1e-5 (also the indexer key norm's), layer 0 dense of 6912, 256 experts of 768 (num_local_experts its alias), 8 per
 * token in 1 group, times 2.827, one shared expert, swiglu_limit 10; sinks and the output gate; an indexer of 16 heads
 * of 128 rotating its last lanes on layer 0 and every fourth from layer 1, index_topk 2048; 4 streams of magnitude 2,
 * hc_eps 1e-6; max_position_embeddings 262144; num_key_value_heads overridden as HYV4Config does. */
#define HY_V4_BASE                                                                                                     \
    "{\"model_type\":\"hy_v4\",\"vocab_size\":8,\"hidden_size\":32,\"num_hidden_layers\":6,"                           \
    "\"num_attention_heads\":4"
static void test_hy_v4_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(HY_V4_BASE ",\"num_key_value_heads\":1,\"head_dim\":128}", "hy_v4", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 4);
    assert_true(c.family == KVC_FAMILY_HY_V4 && c.q_lora_rank == 1536 && c.kv_lora_rank == 512);
    assert_true(c.qk_rope_head_dim == 64 && c.qk_nope_head_dim == 192 && c.v_head_dim == 256 && c.head_dim == 64);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[5] && c.intermediate_size == 6912);
    assert_true(c.n_routed_experts == 256 && c.moe_intermediate_size == 768 && c.experts_per_tok == 8);
    assert_true(c.n_group == 1 && c.topk_group == 1 && c.routed_scaling_factor == 2.827 && c.norm_topk_prob);
    assert_true(c.shared_expert_intermediate_size == 768 && c.swiglu_limit == 10.0 && c.rms_norm_eps == 1e-5);
    assert_true(c.attn_sinks && c.attn_gate_proj && c.rope_form == KVC_ROPE_INTERLEAVED && !c.tie_word_embeddings);
    assert_true(c.index_topk == 2048 && c.index_n_heads == 16 && c.index_head_dim == 128 && c.index_rope_last);
    assert_true(c.index_norm_eps == 1e-5 && !c.index_rope_half && c.max_position_embeddings == 262144);
    for (int64_t l = 0; l < 6; l++) assert_true(c.layer_index_shared[l] == !(l == 0 || l == 1 || l == 5));
    assert_true(c.hc_mult == 4 && c.hc_magnitude == 2.0 && c.hc_eps == 1e-6);
    assert_int_equal(kvc_model_config_parse(HY_V4_BASE ",\"mlp_layer_types\":[\"sparse\",\"dense\",\"dense\","
                                                       "\"dense\",\"dense\",\"sparse\"],\"num_local_experts\":16,"
                                                       "\"hc_mult\":2,\"hc_magnitude\":1.5,\"swiglu_limit\":7,"
                                                       "\"rms_norm_eps\":1e-6,\"n_shared_experts\":2}",
                                            "hy_v4-set", &c),
                     KVC_OK);
    assert_true(c.layer_moe[0] && !c.layer_moe[1] && c.n_routed_experts == 16 && c.hc_mult == 2);
    assert_true(c.hc_magnitude == 1.5 && c.swiglu_limit == 7.0 && c.index_norm_eps == 1e-6);
    assert_true(c.shared_expert_intermediate_size == 2 * 768);
    expect_refusal(HY_V4_BASE ",\"q_lora_rank\":null}", "hy_v4 q_lora_rank null");
    expect_refusal(HY_V4_BASE ",\"swiglu_limit\":0}", "hy_v4 swiglu_limit 0 is not supported");
    expect_refusal(HY_V4_BASE ",\"hc_mult\":0}", "hc_mult");
    expect_refusal(HY_V4_BASE ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\" is not supported");
    expect_refusal(HY_V4_BASE ",\"index_head_dim\":32}", "index_head_dim 32 is below qk_rope_head_dim 64");
    expect_refusal(HY_V4_BASE ",\"indexer_types\":[\"shared\",\"full\",\"full\",\"full\",\"full\",\"full\"]}",
                   "indexer_types[0] is \"shared\"");
    expect_refusal(HY_V4_BASE ",\"mlp_layer_types\":[\"dense\"]}", "mlp_layer_types has 1 entries");
    expect_refusal(HY_V4_BASE ",\"n_routed_experts\":4,\"num_experts_per_tok\":8}", "MoE routing sizes");
    c.family = KVC_FAMILY_DEEPSEEK_V3, c.attn_gate_proj = false; /* a caller's own struct: streams are HY V4's */
    expect_create_refusal(&c, "hc_mult");
}

/* DeepSeek-V3.2 (deepseek_v32) with DeepseekV32Config's defaults: V3's MLA (q LoRA 1536, RoPE on pairs whatever
 * rope_interleave says) and router, and an indexer of 64 heads of 128 on every layer (indexer_types not read) whose
 * RoPE turns half-split lanes; index_topk 2048, max_position_embeddings 163840. */
static void test_deepseek_v32_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"deepseek_v32\",\"vocab_size\":8,\"hidden_size\":32,"
                               "\"intermediate_size\":16,\"num_hidden_layers\":4,\"num_attention_heads\":4,"
                               "\"rope_interleave\":false,\"indexer_types\":[\"full\",\"shared\"]}",
                               "v32", &c),
        KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.q_lora_rank == 1536 && c.rope_form == KVC_ROPE_INTERLEAVED);
    assert_true(c.index_topk == 2048 && c.index_n_heads == 64 && c.index_head_dim == 128 && c.index_rope_half);
    assert_true(!c.layer_index_shared[1] && c.max_position_embeddings == 163840 && !c.layer_moe[2] && c.layer_moe[3]);
    expect_refusal("{\"model_type\":\"deepseek_v32\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"
                   "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"q_lora_rank\":null}",
                   "deepseek_v32 q_lora_rank null");
}

/* K-EXAONE (exaone_moe) with ExaoneMoeConfig's defaults: EXAONE 4.0's attention (window 4096, three sliding layers
 * then one full and NoPE) in pre-norm blocks; layer 0 dense (first_k_dense_replace 1); num_experts 64 of 1024
 * (n_routed_experts not read), top 8, num_shared_experts 1, renormalised, times 2.5, 1 group; mlp_layer_types wins
 * over first_k_dense_replace. */
#define EXAONE_MOE_BASE                                                                                                \
    "{\"model_type\":\"exaone_moe\",\"vocab_size\":8,\"hidden_size\":32,\"intermediate_size\":16,"                     \
    "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2"
static void test_exaone_moe_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(EXAONE_MOE_BASE ",\"n_routed_experts\":4}", "exaone-moe", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.qk_norm && !c.post_norms && c.sliding_window == 4096);
    assert_true(c.layer_nope[3] && !c.layer_nope[0] && c.rms_norm_eps == 1e-5);
    assert_true(!c.layer_moe[0] && c.layer_moe[1] && c.layer_moe[3]);
    assert_true(c.n_routed_experts == 64 && c.moe_intermediate_size == 1024 && c.experts_per_tok == 8);
    assert_true(c.n_shared_experts == 1 && c.shared_expert_intermediate_size == 1024 && c.norm_topk_prob);
    assert_true(c.routed_scaling_factor == 2.5 && c.n_group == 1 && c.topk_group == 1);
    assert_int_equal(kvc_model_config_parse(EXAONE_MOE_BASE
                                            ",\"num_experts\":4,\"num_experts_per_tok\":2,"
                                            "\"num_shared_experts\":0,\"first_k_dense_replace\":3,"
                                            "\"mlp_layer_types\":[\"sparse\",\"dense\",\"sparse\",\"dense\"]}",
                                            "exaone-moe-types", &c),
                     KVC_OK);
    assert_true(c.layer_moe[0] && !c.layer_moe[1] && c.layer_moe[2] && !c.layer_moe[3]);
    assert_true(c.n_routed_experts == 4 && c.n_shared_experts == 0 && c.shared_expert_intermediate_size == 0);
    expect_refusal(EXAONE_MOE_BASE ",\"mlp_layer_types\":[\"dense\"]}", "mlp_layer_types has 1 entries");
    expect_refusal(EXAONE_MOE_BASE ",\"num_experts\":6,\"n_group\":4}", "MoE routing sizes");
}

/* OPT with OPTConfig's defaults (ffn_dim 3072, 2048 positions with OPT's offset of 2, relu, LayerNorms with weight and
 * bias at eps 1e-5, every bias, no RoPE, tied, pre-norm with a final norm, embeddings of hidden_size) and with
 * weightless LayerNorms, no biases, gelu, ffn_dim 16 and 4 positions (a fifth refused by the forward, whatever the
 * offset); OPT-350m's post-norm blocks without a final norm, word_embed_proj_dim (null: hidden_size), a removed
 * final norm; refused by name: word_embed_proj_dim 0, another activation_function. */
static void test_opt_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(OPT_BASE "}", "opt-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 8 && c.num_kv_heads == 4 && c.intermediate_size == 3072);
    assert_true(c.pos_learned && c.pos_offset == 2 && c.max_position_embeddings == 2048 && c.layer_nope[1]);
    assert_true(c.mlp_act == KVC_MLP_RELU && c.mlp_plain && c.layer_norm && c.norm_bias && !c.norm_weightless);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && c.rms_norm_eps == 1e-5 && c.tie_word_embeddings);
    assert_true(!c.norm_after_add && !c.final_norm_none && c.embed_dim == 0);
    assert_int_equal(kvc_model_config_parse(OPT_BASE ",\"layer_norm_elementwise_affine\":false,\"enable_bias\":false,"
                                                     "\"activation_function\":\"gelu\",\"ffn_dim\":16,"
                                                     "\"max_position_embeddings\":4,\"word_embed_proj_dim\":32,"
                                                     "\"do_layer_norm_before\":true,\"rms_norm_eps\":0.5}",
                                            "opt-set", &c),
                     KVC_OK);
    assert_true(c.norm_weightless && !c.norm_bias && !c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_true(c.mlp_act == KVC_MLP_GELU && c.intermediate_size == 16 && c.rms_norm_eps == 1e-5);
    assert_int_equal(forward_positions(&c, 4), KVC_OK);
    assert_int_equal(forward_positions(&c, 5), KVC_ERANGE);
    assert_int_equal(
        kvc_model_config_parse(OPT_BASE ",\"do_layer_norm_before\":false,\"word_embed_proj_dim\":16}", "opt-350m", &c),
        KVC_OK);
    assert_true(c.norm_after_add && c.final_norm_none && c.embed_dim == 16 && c.norm_bias);
    assert_int_equal(kvc_model_config_parse(OPT_BASE ",\"_remove_final_layer_norm\":true,\"word_embed_proj_dim\":null}",
                                            "opt-no-final", &c),
                     KVC_OK);
    assert_true(!c.norm_after_add && c.final_norm_none && c.embed_dim == 0);
    expect_refusal(OPT_BASE ",\"word_embed_proj_dim\":0}", "word_embed_proj_dim");
    c.norm_after_add = c.parallel_block = true; /* post-norm blocks are sequential, embed_dim bounded */
    expect_create_refusal(&c, "norm_after_add needs layer_norm in sequential blocks");
    c.parallel_block = false, c.embed_dim = -1;
    expect_create_refusal(&c, "embed_dim -1 outside");
    expect_refusal(OPT_BASE ",\"activation_function\":\"silu\"}", "activation_function \"silu\" is not supported");
}

#define NANOCHAT_BASE                                                                                                  \
    "{\"model_type\":\"nanochat\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4"

/* NanoChat with NanoChatConfig's defaults (weightless RMSNorms at eps 1e-6, the embeddings normalised, q/k normalised
 * after reversed RoPE, relu2 plain MLP, no biases, logits soft-capped at 15, untied, KV heads = heads, theta 1e4)
 * and with attention_bias, a null soft-cap (none); refused by name: another hidden_act. */
static void test_nanochat_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(NANOCHAT_BASE "}", "nanochat-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.num_kv_heads == 4 && !c.tie_word_embeddings);
    assert_true(c.norm_weightless && c.embed_norm && c.qk_l2_norm && c.rope_reversed && !c.qk_norm && !c.layer_norm);
    assert_true(c.mlp_act == KVC_MLP_RELU2 && c.mlp_plain && !c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_true(c.rms_norm_eps == 1e-6 && c.final_logit_softcapping == 15.0 && c.rope.theta == 10000.0);
    assert_int_equal(kvc_model_config_parse(NANOCHAT_BASE ",\"attention_bias\":true,\"final_logit_softcapping\":null,"
                                                          "\"rms_norm_eps\":1e-5,\"num_key_value_heads\":2}",
                                            "nanochat-set", &c),
                     KVC_OK);
    assert_true(c.qkv_bias && c.o_bias && !c.mlp_bias && c.final_logit_softcapping == 0.0 && c.rms_norm_eps == 1e-5);
    assert_true(c.num_kv_heads == 2);
    expect_refusal(NANOCHAT_BASE ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\" is not supported (nanochat");
    c.rope_form = KVC_ROPE_PAIRS; /* the negated frequencies are the half-split form's */
    expect_create_refusal(&c, "rope_reversed needs one half-split RoPE");
}

#define YOUTU_BASE                                                                                                     \
    "{\"model_type\":\"youtu\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                           \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"kv_lora_rank\":16,\"qk_rope_head_dim\":8,"                    \
    "\"qk_nope_head_dim\":16,\"v_head_dim\":16"

/* Youtu-LLM with YoutuConfig's defaults (DeepSeek-V3's MLA: q LoRA 1536 when missing, interleaved RoPE; every layer
 * dense, no router keys read; tied; rms_norm_eps 1e-6) and with rope_interleave false, untied, q_lora_rank null and
 * a leftover first_k_dense_replace (not read: still every layer dense). */
static void test_youtu_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(YOUTU_BASE "}", "youtu-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.q_lora_rank == 1536 && c.rope_form == KVC_ROPE_INTERLEAVED);
    assert_true(c.tie_word_embeddings && c.rms_norm_eps == 1e-6 && c.first_k_dense_replace == 3);
    assert_true(!c.layer_moe[0] && !c.layer_moe[1] && !c.layer_moe[2] && c.shared_expert_intermediate_size == 0);
    assert_int_equal(kvc_model_config_parse(YOUTU_BASE ",\"rope_interleave\":false,\"tie_word_embeddings\":false,"
                                                       "\"q_lora_rank\":null,\"first_k_dense_replace\":1}",
                                            "youtu-set", &c),
                     KVC_OK);
    assert_true(c.rope_form == KVC_ROPE_HALF && !c.tie_word_embeddings && c.q_lora_rank == 0 && !c.layer_moe[2]);
    expect_refusal(YOUTU_BASE ",\"num_key_value_heads\":2}", "num_key_value_heads 2 contradicts");
}

#define MINICPM3_BASE                                                                                                  \
    "{\"model_type\":\"minicpm3\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                        \
    "\"num_hidden_layers\":4,\"num_attention_heads\":4"

/* MiniCPM3 with MiniCPM3Config's defaults (MLA sizes 768 / 256 / 64 + 32, v_head_dim hidden / heads, half-split RoPE,
 * every layer dense, scale_emb 12, scale_depth 1.4 over sqrt(layers), logits / (hidden / 256), tied, eps 1e-5) and
 * with scale_depth and dim_model_base null (sqrt(layers): a multiplier of 1; hidden: no division), v_head_dim null;
 * refused by name: hidden_size not divisible by the heads. */
static void test_minicpm3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(MINICPM3_BASE "}", "minicpm3-defaults", &c), KVC_OK);
    assert_true(c.family == KVC_FAMILY_DEEPSEEK_V3 && c.q_lora_rank == 768 && c.kv_lora_rank == 256);
    assert_true(c.qk_nope_head_dim == 64 && c.qk_rope_head_dim == 32 && c.v_head_dim == 16);
    assert_true(c.rope_form == KVC_ROPE_HALF && !c.layer_moe[0] && !c.layer_moe[3] && c.tie_word_embeddings);
    assert_true(c.embed_scale == 12.0f && c.residual_multiplier == 1.4 / 2.0 && c.logits_scaling == 64.0 / 256.0);
    assert_true(c.rms_norm_eps == 1e-5 && !c.mlp_bias);
    assert_int_equal(kvc_model_config_parse(MINICPM3_BASE ",\"scale_depth\":null,\"dim_model_base\":null,"
                                                          "\"v_head_dim\":null,\"scale_emb\":1.5,\"mlp_bias\":true}",
                                            "minicpm3-null", &c),
                     KVC_OK);
    assert_true(c.residual_multiplier == 1.0 && c.logits_scaling == 1.0 && c.v_head_dim == 16);
    assert_true(c.embed_scale == 1.5f && c.mlp_bias);
    expect_refusal("{\"model_type\":\"minicpm3\",\"vocab_size\":8,\"hidden_size\":66,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":4,\"num_attention_heads\":4}",
                   "hidden_size");
}

#define QWEN_VL_TEXT(mt)                                                                                               \
    "{\"model_type\":\"" mt "\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                          \
    "\"num_hidden_layers\":90,\"num_attention_heads\":4,\"num_key_value_heads\":2"
#define QWEN_VL_ROPE ",\"rope_scaling\":{\"type\":\"mrope\",\"mrope_section\":[2,3,3]}"

/* Qwen2-VL and Qwen2.5-VL's text models: the hub's flat config (text keys at the top level, rope_scaling type
 * mrope) with their text configs' defaults (theta 1e6, 8 KV heads when the key is missing, q/k/v biases only,
 * untied, max_window_layers 80 under use_sliding_window, window 4096 when absent); transformers 5's nested
 * text_config, the head tied by either level's tie_word_embeddings; refused: an mrope_section not summing to
 * head_dim / 2 (the default [16, 24, 24] included), a head_dim other than hidden_size / num_attention_heads,
 * partial_rotary_factor. */
static void test_qwen2_vl_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen2_5_vl\",\"vocab_size\":8,\"hidden_size\":128,"
                                            "\"intermediate_size\":8,\"num_hidden_layers\":2,"
                                            "\"num_attention_heads\":8" QWEN_VL_ROPE "}",
                                            "qwen2_5_vl", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 16 && c.num_kv_heads == 8 && c.rope.theta == 1e6);
    assert_true(c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.qk_norm && !c.tie_word_embeddings);
    assert_true(c.rope.type == KVC_ROPE_DEFAULT && c.sliding_window == 0);
    assert_int_equal(
        kvc_model_config_parse(QWEN_VL_TEXT("qwen2_vl") QWEN_VL_ROPE ",\"use_sliding_window\":true}", "qwen2_vl", &c),
        KVC_OK);
    assert_true(c.sliding_window == 4096 && !c.layer_sliding[79] && c.layer_sliding[80] && c.layer_sliding[89]);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen2_vl\",\"text_config\":" QWEN_VL_TEXT(
                                                "qwen2_vl_text") QWEN_VL_ROPE ",\"tie_word_embeddings\":true}}",
                                            "qwen2_vl-nested", &c),
                     KVC_OK);
    assert_true(c.tie_word_embeddings && c.num_kv_heads == 2 && strcmp(c.model_type, "qwen2_vl_text") == 0);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen2_5_vl\",\"tie_word_embeddings\":true,"
                                            "\"text_config\":" QWEN_VL_TEXT("qwen2_5_vl_text") QWEN_VL_ROPE
                                            ",\"tie_word_embeddings\":false}}",
                                            "qwen2_5_vl-outer", &c),
                     KVC_OK);
    assert_true(c.tie_word_embeddings);
    expect_refusal(QWEN_VL_TEXT("qwen2_5_vl") "}", "mrope_section sums to 64 (the default [16, 24, 24])");
    expect_refusal(QWEN_VL_TEXT("qwen2_vl") ",\"rope_scaling\":{\"type\":\"mrope\",\"mrope_section\":[2,3,4]}}",
                   "mrope_section sums to 9 (given) but head_dim 16");
    /* a head_dim key is not read: Qwen2-VL's attention splits hidden_size over the heads */
    assert_int_equal(kvc_model_config_parse(QWEN_VL_TEXT("qwen2_vl") QWEN_VL_ROPE ",\"head_dim\":32}", "vl-hd", &c),
                     KVC_OK);
    assert_true(c.head_dim * c.num_heads == c.hidden_size);
    /* a partial_rotary_factor is not read: Qwen2-VL's rope rotates whole heads whatever it says (hparams.c) */
    assert_int_equal(
        kvc_model_config_parse(QWEN_VL_TEXT("qwen2_vl") QWEN_VL_ROPE ",\"partial_rotary_factor\":0.5}", "vl-prf", &c),
        KVC_OK);
    assert_true(c.rope.partial_rotary_factor == 1.0);
}

#define QWEN3_VL_TEXT                                                                                                  \
    "{\"model_type\":\"qwen3_vl_text\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"                   \
    "\"num_hidden_layers\":2,\"num_attention_heads\":32,\"rope_parameters\":{\"rope_type\":\"default\","               \
    "\"mrope_section\":[24,20,20],\"mrope_interleaved\":true}"

/* Qwen3-VL's text model with its text config's defaults (head_dim 128, theta 5e5, 32 KV heads when the key is
 * missing, q/k norms, no biases, no window even when the config names one, untied: the top level's
 * tie_word_embeddings alone, text_config's ignored); attention_bias puts biases on q/k/v/o; refused: the flat
 * layout (no text_config). */
static void test_qwen3_vl_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen3_vl\",\"text_config\":" QWEN3_VL_TEXT
                                            ",\"tie_word_embeddings\":true,\"sliding_window\":4}}",
                                            "qwen3_vl", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.head_dim == 128 && c.num_kv_heads == 32 && c.rope.theta == 5e5);
    assert_true(c.qk_norm && !c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings);
    assert_true(c.sliding_window == 0 && !c.layer_sliding[0] && strcmp(c.model_type, "qwen3_vl_text") == 0);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"qwen3_vl\",\"tie_word_embeddings\":true,"
                                            "\"text_config\":" QWEN3_VL_TEXT ",\"attention_bias\":true}}",
                                            "qwen3_vl-bias", &c),
                     KVC_OK);
    assert_true(c.tie_word_embeddings && c.qkv_bias && c.o_bias && !c.mlp_bias);
    expect_refusal("{\"model_type\":\"qwen3_vl\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2}",
                   "qwen3_vl without text_config is not supported");
}

#define MM_TEXT(mt)                                                                                                    \
    "{\"model_type\":\"" mt "\",\"vocab_size\":8,\"hidden_size\":128,\"intermediate_size\":8,"                         \
    "\"num_hidden_layers\":2,\"num_attention_heads\":8"

/* Emu3's text model (emu3, emu3_text_model): Emu3TextConfig's defaults (theta 1e6, 8 KV heads when the key is missing,
 * eps 1e-5, no biases), biases by attention_bias / mlp_bias, the head tied by the wrapper's tie_word_embeddings alone
 * (text_config's ignored) or, alone, by its own; refused: the wrapper without text_config. */
static void test_emu3_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"emu3\",\"text_config\":" MM_TEXT(
                                                "emu3_text_model") ",\"tie_word_embeddings\":true}}",
                                            "emu3", &c),
                     KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 8 && c.head_dim == 16 && c.rope.theta == 1e6);
    assert_true(!c.qkv_bias && !c.o_bias && !c.mlp_bias && !c.tie_word_embeddings && c.rms_norm_eps == 1e-5);
    assert_true(strcmp(c.model_type, "emu3_text_model") == 0 && c.sliding_window == 0);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"emu3\",\"tie_word_embeddings\":true,\"text_config\":" MM_TEXT(
                                   "emu3_text_model") ",\"attention_bias\":true,\"mlp_bias\":true}}",
                               "emu3-outer", &c),
        KVC_OK);
    assert_true(c.tie_word_embeddings && c.qkv_bias && c.o_bias && c.mlp_bias);
    assert_int_equal(
        kvc_model_config_parse(MM_TEXT("emu3_text_model") ",\"tie_word_embeddings\":true}", "emu3-text", &c), KVC_OK);
    assert_true(c.tie_word_embeddings && c.num_kv_heads == 8);
    expect_refusal(MM_TEXT("emu3") "}", "emu3 without text_config is not supported");
}

/* Llama 3.2 Vision's text model (mllama, mllama_text_model): MllamaTextConfig's defaults (theta 5e5, 8 KV heads, eps
 * 1e-5, intermediate_size 14336, cross_attention_layers [3, 8, ..., 38]); the listed layers skipped whole (no mixer, no
 * MLP), the others Llama's; head_dim hidden_size / num_attention_heads; vocab_size + 8 embedded ids; never tied;
 * refused by name: the wrapper without text_config, another head_dim, every layer listed, a listed layer past the
 * last, and (a caller's struct) a skipped layer in another type. */
static void test_mllama_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"mllama\",\"tie_word_embeddings\":true,\"text_config\":" MM_TEXT(
                                   "mllama_text_model") ",\"cross_attention_layers\":[1],"
                                                        "\"tie_word_embeddings\":true}}",
                               "mllama", &c),
        KVC_OK);
    assert_true(c.family == KVC_FAMILY_DENSE && c.num_kv_heads == 8 && c.head_dim == 16 && c.rope.theta == 5e5);
    assert_true(c.rms_norm_eps == 1e-5 && !c.tie_word_embeddings && !c.qkv_bias && !c.o_bias && !c.mlp_bias);
    assert_true(c.vocab_size == 8 && c.input_vocab_size == 16 && kvci_model_input_vocab(&c) == 16);
    assert_true(!c.layer_no_mixer[0] && !c.layer_no_ffn[0] && c.layer_no_mixer[1] && c.layer_no_ffn[1]);
    assert_true(strcmp(c.model_type, "mllama_text_model") == 0 && c.sliding_window == 0);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"mllama_text_model\",\"vocab_size\":8,"
                                            "\"hidden_size\":128,\"num_hidden_layers\":40,\"num_attention_heads\":8,"
                                            "\"num_key_value_heads\":2,\"head_dim\":16,\"attention_bias\":true}",
                                            "mllama-defaults", &c),
                     KVC_OK);
    assert_true(c.intermediate_size == 14336 && c.num_kv_heads == 2 && !c.qkv_bias);
    for (int64_t l = 0; l < 40; l++)
        assert_true(c.layer_no_mixer[l] == (l % 5 == 3) && c.layer_no_ffn[l] == (l % 5 == 3));
    expect_refusal(MM_TEXT("mllama") ",\"cross_attention_layers\":[1]}", "mllama without text_config is not supported");
    expect_refusal(MM_TEXT("mllama_text_model") ",\"cross_attention_layers\":[1],\"head_dim\":32}",
                   "head_dim 32 must be hidden_size / num_attention_heads (16)");
    expect_refusal(MM_TEXT("mllama_text_model") ",\"cross_attention_layers\":[0,1]}",
                   "every layer is listed in cross_attention_layers");
    expect_refusal(MM_TEXT("mllama_text_model") "}", "cross_attention_layers lists layer 3 of 2");
    assert_int_equal(kvc_model_config_parse(MM_TEXT("llama") "}", "llama", &c), KVC_OK);
    c.layer_no_mixer[1] = c.layer_no_ffn[1] = true;
    expect_create_refusal(&c, "or both mllama's (a layer skipped)");
}

/* Aria's text model (aria, aria_text): AriaTextConfig's defaults (as many KV heads as heads, eps 1e-6, 8 experts of
 * intermediate_size, top 2, 2 shared experts as one MLP twice as wide, every layer a MoE layer), q/k/v/o biases by
 * attention_bias and the shared experts' by mlp_bias, untied unless the wrapper says so; refused by name: a wrapper
 * without text_config, no shared expert, top-k above the experts, another activation. */
static void test_aria_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"aria\",\"text_config\":" MM_TEXT(
                                                "aria_text") ",\"tie_word_embeddings\":true}}",
                                            "aria", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 8 && c.head_dim == 16 && c.rms_norm_eps == 1e-6 && !c.tie_word_embeddings);
    assert_true(c.n_routed_experts == 8 && c.experts_per_tok == 2 && c.moe_intermediate_size == 8);
    assert_true(c.n_shared_experts == 2 && c.shared_expert_intermediate_size == 16 && c.layer_moe[0] && c.layer_moe[1]);
    assert_true(!c.qkv_bias && !c.mlp_bias && strcmp(c.model_type, "aria_text") == 0);
    assert_int_equal(kvc_model_config_parse(MM_TEXT("aria_text") ",\"moe_num_experts\":4,\"moe_topk\":3,"
                                                                 "\"moe_num_shared_experts\":1,\"attention_bias\":true,"
                                                                 "\"mlp_bias\":true,\"tie_word_embeddings\":true}",
                                            "aria_text", &c),
                     KVC_OK);
    assert_true(c.n_routed_experts == 4 && c.experts_per_tok == 3 && c.shared_expert_intermediate_size == 8);
    assert_true(c.qkv_bias && c.o_bias && c.mlp_bias && c.tie_word_embeddings);
    expect_refusal(MM_TEXT("aria") "}", "aria without text_config is not supported");
    expect_refusal(MM_TEXT("aria_text") ",\"moe_num_shared_experts\":0}", "moe_num_shared_experts");
    expect_refusal(MM_TEXT("aria_text") ",\"moe_num_experts\":2,\"moe_topk\":3}", "moe_topk 3 must be in [1");
    expect_refusal(MM_TEXT("aria_text") ",\"hidden_act\":\"gelu\"}", "hidden_act \"gelu\" is not supported");
}

/* Phi-4-multimodal's text path (phi4_multimodal): Phi-3's keys with 8 KV heads when the key is missing, partial
 * rotation and its window read; a yarn rope refused as Phi-3's. */
static void test_phi4_multimodal_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(MM_TEXT("phi4_multimodal") ",\"sliding_window\":16,\"attention_bias\":true,"
                                                                       "\"rope_parameters\":{\"rope_type\":\"default\","
                                                                       "\"rope_theta\":10000.0,"
                                                                       "\"partial_rotary_factor\":0.75}}",
                                            "phi4", &c),
                     KVC_OK);
    assert_true(c.num_kv_heads == 8 && c.head_dim == 16 && kvci_model_rot_dim(&c) == 12 && c.rms_norm_eps == 1e-5);
    assert_true(c.sliding_window == 16 && c.layer_sliding[0] && c.layer_sliding[1] && !c.qkv_bias && !c.mlp_bias);
    expect_refusal(MM_TEXT("phi4_multimodal") ",\"max_position_embeddings\":64,\"rope_parameters\":{\"rope_type\":"
                                              "\"yarn\",\"factor\":2.0}}",
                   "phi4_multimodal with rope type \"yarn\"");
}

#define APERTUS1P5_ROPE ",\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":1e4}"

/* Apertus 1.5's text model (apertus1p5, apertus1p5_text): Apertus's keys; output_vocab_size prunes the head (the
 * logits' width, vocab_size) below the embedded ids (input_vocab_size); null, equal to vocab_size or a tied head: none;
 * the wrapper ties by its own key; refused by name: output_vocab_size outside [1, vocab_size], the wrapper without
 * text_config, and a caller's struct with input_vocab_size not above vocab_size or with a tied head. */
static void test_apertus1p5_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(
        kvc_model_config_parse(MM_TEXT("apertus1p5_text") APERTUS1P5_ROPE ",\"output_vocab_size\":6}", "ap", &c),
        KVC_OK);
    assert_true(c.vocab_size == 6 && c.input_vocab_size == 8 && c.qk_norm && c.mlp_act == KVC_MLP_XIELU);
    assert_true(kvci_model_input_vocab(&c) == 8 && strcmp(c.model_type, "apertus1p5_text") == 0);
    const char *unpruned[] = {",\"output_vocab_size\":null}", ",\"output_vocab_size\":8}",
                              ",\"output_vocab_size\":6,\"tie_word_embeddings\":true}"};
    for (int i = 0; i < 3; i++) {
        char json[512];
        snprintf(json, sizeof json, "%s%s%s", MM_TEXT("apertus1p5_text"), APERTUS1P5_ROPE, unpruned[i]);
        assert_int_equal(kvc_model_config_parse(json, "ap-full", &c), KVC_OK);
        assert_true(c.vocab_size == 8 && c.input_vocab_size == 0 && kvci_model_input_vocab(&c) == 8);
    }
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"apertus1p5\",\"tie_word_embeddings\":true,"
                                            "\"text_config\":" MM_TEXT("apertus1p5_text") APERTUS1P5_ROPE
                                            ",\"output_vocab_size\":6,\"tie_word_embeddings\":false}}",
                                            "ap-outer", &c),
                     KVC_OK);
    assert_true(c.tie_word_embeddings && c.vocab_size == 8 && c.input_vocab_size == 0);
    expect_refusal(MM_TEXT("apertus1p5_text") APERTUS1P5_ROPE ",\"output_vocab_size\":9}",
                   "output_vocab_size 9 must be an integer in [1, 8]");
    expect_refusal(MM_TEXT("apertus1p5") APERTUS1P5_ROPE "}", "apertus1p5 without text_config is not supported");
    assert_int_equal(
        kvc_model_config_parse(MM_TEXT("apertus1p5_text") APERTUS1P5_ROPE ",\"output_vocab_size\":6}", "ap", &c),
        KVC_OK);
    c.input_vocab_size = 6;
    expect_create_refusal(&c, "input_vocab_size 6 must exceed vocab_size 6");
    c.input_vocab_size = 8, c.tie_word_embeddings = true;
    expect_create_refusal(&c, "and the head untied");
}

#define LLAVA_TEXT(mt)                                                                                                 \
    "{" mt "\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,\"num_hidden_layers\":2,"                      \
    "\"num_attention_heads\":4,\"num_key_value_heads\":2"

/* LLaVA and LLaVA-NeXT's text models: text_config llama (also when its model_type is absent: LlavaConfig's default),
 * mistral or qwen2, run under that type; the head tied by LlavaConfig's rule (the top level's tie_word_embeddings or
 * text_config's) and LlavaNextConfig's (the top level's alone); refused: no text_config, another text type. */
static void test_llava_fields(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"llava\",\"text_config\":" LLAVA_TEXT(
                                                "\"model_type\":\"llama\",") ",\"tie_word_embeddings\":true}}",
                                            "llava", &c),
                     KVC_OK);
    assert_true(c.tie_word_embeddings && strcmp(c.model_type, "llama") == 0 && c.num_kv_heads == 2);
    assert_int_equal(
        kvc_model_config_parse("{\"model_type\":\"llava\",\"tie_word_embeddings\":true,\"text_config\":" LLAVA_TEXT(
                                   "") ",\"tie_word_embeddings\":false}}",
                               "llava-outer", &c),
        KVC_OK);
    assert_true(c.tie_word_embeddings && strcmp(c.model_type, "llava") == 0 && c.sliding_window == 0);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"llava_next\",\"text_config\":" LLAVA_TEXT(
                                                "\"model_type\":\"mistral\",") ",\"tie_word_embeddings\":true}}",
                                            "llava_next", &c),
                     KVC_OK);
    assert_true(!c.tie_word_embeddings && strcmp(c.model_type, "mistral") == 0 && c.sliding_window == 4096);
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"llava_next\",\"tie_word_embeddings\":true,"
                                            "\"text_config\":" LLAVA_TEXT("\"model_type\":\"llama\",") "}}",
                                            "llava_next-outer", &c),
                     KVC_OK);
    assert_true(c.tie_word_embeddings);
    expect_refusal("{\"model_type\":\"llava\",\"vocab_size\":8,\"hidden_size\":64,\"intermediate_size\":8,"
                   "\"num_hidden_layers\":2,\"num_attention_heads\":4}",
                   "llava without text_config is not supported");
    expect_refusal("{\"model_type\":\"llava_next\",\"text_config\":" LLAVA_TEXT("\"model_type\":\"gemma\",") "}}",
                   "llava_next with text_config.model_type gemma is not supported (llama, mistral, qwen2)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt_oss_yarn_v5_and_v4),
        cmocka_unit_test(test_deepseek_scale_and_mscale),
        cmocka_unit_test(test_llama3_bands),
        cmocka_unit_test(test_family_fields),
        cmocka_unit_test(test_moe_fields),
        cmocka_unit_test(test_gemma3_fields),
        cmocka_unit_test(test_gemma4_fields),
        cmocka_unit_test(test_gemma3n_fields),
        cmocka_unit_test(test_gemma4_unified_fields),
        cmocka_unit_test(test_gemma2_fields),
        cmocka_unit_test(test_vaultgemma_fields),
        cmocka_unit_test(test_flex_olmo_fields),
        cmocka_unit_test(test_hunyuan_fields),
        cmocka_unit_test(test_biogpt_fields),
        cmocka_unit_test(test_dots1_fields),
        cmocka_unit_test(test_solar_open_fields),
        cmocka_unit_test(test_minimax_m2_fields),
        cmocka_unit_test(test_minimax_fields),
        cmocka_unit_test(test_rwkv_fields),
        cmocka_unit_test(test_recurrent_gemma_fields),
        cmocka_unit_test(test_exaone_fields),
        cmocka_unit_test(test_internlm3_fields),
        cmocka_unit_test(test_apertus_fields),
        cmocka_unit_test(test_xglm_fields),
        cmocka_unit_test(test_bert_fields),
        cmocka_unit_test(test_openai_gpt_fields),
        cmocka_unit_test(test_ctrl_fields),
        cmocka_unit_test(test_gpt_neox_japanese_fields),
        cmocka_unit_test(test_phi3_fields),
        cmocka_unit_test(test_olmo2_fields),
        cmocka_unit_test(test_olmo3_fields),
        cmocka_unit_test(test_granite_fields),
        cmocka_unit_test(test_smollm3_fields),
        cmocka_unit_test(test_gemma_fields),
        cmocka_unit_test(test_glm4_cohere_fields),
        cmocka_unit_test(test_glm_fields),
        cmocka_unit_test(test_seed_oss_fields),
        cmocka_unit_test(test_exaone4_fields),
        cmocka_unit_test(test_starcoder2_fields),
        cmocka_unit_test(test_ministral_fields),
        cmocka_unit_test(test_ministral3_fields),
        cmocka_unit_test(test_helium_arcee_fields),
        cmocka_unit_test(test_stablelm_fields),
        cmocka_unit_test(test_olmo1_fields),
        cmocka_unit_test(test_ernie4_5_fields),
        cmocka_unit_test(test_missing_kv_heads_class_default),
        cmocka_unit_test(test_window_only_where_transformers_reads_it),
        cmocka_unit_test(test_deepseek_v2_fields),
        cmocka_unit_test(test_olmoe_fields),
        cmocka_unit_test(test_granitemoe_fields),
        cmocka_unit_test(test_jetmoe_fields),
        cmocka_unit_test(test_glm4_moe_fields),
        cmocka_unit_test(test_sarvam_param2_fields),
        cmocka_unit_test(test_minicpm5_moe_fields),
        cmocka_unit_test(test_kolibri1_fields),
        cmocka_unit_test(test_ernie4_5_moe_fields),
        cmocka_unit_test(test_phimoe_fields),
        cmocka_unit_test(test_dbrx_fields),
        cmocka_unit_test(test_llama4_fields),
        cmocka_unit_test(test_phi_fields),
        cmocka_unit_test(test_persimmon_fields),
        cmocka_unit_test(test_cwm_fields),
        cmocka_unit_test(test_granite_swa_fields),
        cmocka_unit_test(test_flint_fields),
        cmocka_unit_test(test_hy_v3_fields),
        cmocka_unit_test(test_cohere2_moe_fields),
        cmocka_unit_test(test_ergo_fields),
        cmocka_unit_test(test_hrm_text_refused),
        cmocka_unit_test(test_class_fallbacks),
        cmocka_unit_test(test_jais2_fields),
        cmocka_unit_test(test_iquestcoder_fields),
        cmocka_unit_test(test_hyperclovax_fields),
        cmocka_unit_test(test_gpt_neox_fields),
        cmocka_unit_test(test_gpt2_fields),
        cmocka_unit_test(test_gpt_bigcode_fields),
        cmocka_unit_test(test_gpt2_unscaled_softmax),
        cmocka_unit_test(test_falcon_fields),
        cmocka_unit_test(test_alibi_fields),
        cmocka_unit_test(test_gptj_fields),
        cmocka_unit_test(test_gpt_neo_fields),
        cmocka_unit_test(test_codegen_fields),
        cmocka_unit_test(test_nemotron_fields),
        cmocka_unit_test(test_opt_fields),
        cmocka_unit_test(test_lfm2_fields),
        cmocka_unit_test(test_lfm3_fields),
        cmocka_unit_test(test_qwen3_next_fields),
        cmocka_unit_test(test_kimi_linear_fields),
        cmocka_unit_test(test_qwen3_5_text_fields),
        cmocka_unit_test(test_qwen3_5_moe_fields),
        cmocka_unit_test(test_glm4_moe_lite_fields),
        cmocka_unit_test(test_sarvam_mla_fields),
        cmocka_unit_test(test_axk1_fields),
        cmocka_unit_test(test_axk2_fields),
        cmocka_unit_test(test_beam_fields),
        cmocka_unit_test(test_longcat_flash_fields),
        cmocka_unit_test(test_glm_moe_dsa_fields),
        cmocka_unit_test(test_hy_v4_fields),
        cmocka_unit_test(test_deepseek_v32_fields),
        cmocka_unit_test(test_exaone_moe_fields),
        cmocka_unit_test(test_lfm2_moe_fields),
        cmocka_unit_test(test_bamba_fields),
        cmocka_unit_test(test_nemotron_h_fields),
        cmocka_unit_test(test_nemotron_h_experts),
        cmocka_unit_test(test_falcon_h1_fields),
        cmocka_unit_test(test_mamba2_fields),
        cmocka_unit_test(test_zamba2_fields),
        cmocka_unit_test(test_zamba_fields),
        cmocka_unit_test(test_mamba_fields),
        cmocka_unit_test(test_jamba_fields),
        cmocka_unit_test(test_granitemoehybrid_fields),
        cmocka_unit_test(test_caller_extras_refused),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_qwen2_vl_fields),
        cmocka_unit_test(test_qwen3_vl_fields),
        cmocka_unit_test(test_llava_fields),
        cmocka_unit_test(test_emu3_fields),
        cmocka_unit_test(test_mllama_fields),
        cmocka_unit_test(test_aria_fields),
        cmocka_unit_test(test_phi4_multimodal_fields),
        cmocka_unit_test(test_apertus1p5_fields),
        cmocka_unit_test(test_nanochat_fields),
        cmocka_unit_test(test_youtu_fields),
        cmocka_unit_test(test_minicpm3_fields),
        cmocka_unit_test(test_afmoe_fields),
        cmocka_unit_test(test_mimo_fields),
        cmocka_unit_test(test_laguna_fields),
        cmocka_unit_test(test_mellum_fields),
        cmocka_unit_test(test_diffllama_fields),
        cmocka_unit_test(test_cohere_compass_fields),
        cmocka_unit_test(test_modernbert_fields),
        cmocka_unit_test(test_bitnet_fields),
        cmocka_unit_test(test_class_default_heads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
