/* The one config.json reader as the runtime (kvc_model_config_parse) and the
 * planner (kvc_model_plan_create) see it: the same rope precedence
 * (transformers 5.x: a non-empty rope_scaling wins over rope_parameters), an
 * explicit YaRN factor kept when factor * L0 != max_position_embeddings, one
 * softmax scale, one answer for q_lora_rank 0, invalid UTF-8 refused, and
 * every size bounded before use with a message naming key and value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/plan.h"
#include "model/json_read.h"
#include "config_fixture.h"
#include "kvc_test_util.h"

/* A DeepSeek-V3 shape with nope 16 + rope 8 = 24 query/key dims. */
#define DS_BASE                                                                                                        \
    "{\"model_type\":\"deepseek_v3\",\"architectures\":[\"DeepseekV3ForCausalLM\"],\"vocab_size\":16,"                 \
    "\"hidden_size\":32,\"intermediate_size\":16,\"num_hidden_layers\":1,\"num_attention_heads\":2,"                   \
    "\"num_key_value_heads\":2,\"kv_lora_rank\":8,\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,"                     \
    "\"v_head_dim\":8,\"first_k_dense_replace\":1,\"max_position_embeddings\":163840,\"torch_dtype\":\"bfloat16\","

#define YARN_40                                                                                                        \
    "{\"type\":\"yarn\",\"factor\":40,\"original_max_position_embeddings\":4096,\"mscale\":1.0,\"mscale_all_dim\":1."  \
    "0}"

static kvc_model_plan *plan_of(const char *json) {
    kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *p = NULL;
    if (kvc_model_plan_create(json, strlen(json), &o, &p) != KVC_OK) fail_msg("plan: %s", kvc_last_error());
    return p;
}

/* float64 reference of the MLA scale with YaRN mscale_all_dim m at factor f. */
static double mla_scale_ref(double dq, double f, double m) {
    const double g = f > 1.0 ? 0.1 * m * log(f) + 1.0 : 1.0;
    return g * g / sqrt(dq);
}

static void test_rope_scaling_wins_in_model_and_plan(void **state) {
    (void)state;
    /* rope_scaling (yarn, factor 40, mscale_all_dim 1) beside rope_parameters (default) */
    const char *both = DS_BASE "\"rope_theta\":10000,\"rope_scaling\":" YARN_40 ","
                               "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":10000}}";
    kvc_model *m = model_of(both);
    kvc_model_plan *p = plan_of(both);
    const double want = mla_scale_ref(24.0, 40.0, 1.0); /* 0.3825 */
    assert_true(fabs(want - 0.38249) < 1e-4);
    assert_true(fabs(kvc_model_attn_scale(kvc_model_config_of(m)) - want) < 1e-12);
    assert_true(fabs(p->scale - want) < 1e-12);
    assert_int_equal(kvc_model_config_of(m)->rope.type, KVC_ROPE_YARN);
    assert_string_equal(p->rope_type, "yarn");
    assert_true(p->rope_factor == 40.0);
    kvc_model_plan_destroy(p);
    kvc_model_destroy(m);

    /* an empty rope_scaling does not count: rope_parameters (default) applies */
    const char *empty =
        DS_BASE "\"rope_scaling\":{},\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":10000}}";
    m = model_of(empty);
    p = plan_of(empty);
    assert_true(fabs(kvc_model_attn_scale(kvc_model_config_of(m)) - 1.0 / sqrt(24.0)) < 1e-12);
    assert_true(fabs(p->scale - 1.0 / sqrt(24.0)) < 1e-12);
    assert_string_equal(p->rope_type, "default");
    kvc_model_plan_destroy(p);
    kvc_model_destroy(m);
}

#define LLAMA_HEAD                                                                                                     \
    "{\"model_type\":\"llama\",\"vocab_size\":16,\"intermediate_size\":16,\"num_key_value_heads\":1,"                  \
    "\"torch_dtype\":\"bfloat16\","
#define LLAMA_SIZES "\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
#define LLAMA_BASE  LLAMA_HEAD LLAMA_SIZES

static void test_explicit_yarn_factor_is_kept(void **state) {
    (void)state;
    /* factor 4 while max_position_embeddings / L0 = 8: transformers 5.x uses 4 in both dict forms */
    kvc_model *v4 = model_of(LLAMA_BASE "\"max_position_embeddings\":32768,\"rope_theta\":10000,\"rope_scaling\":"
                                        "{\"type\":\"yarn\",\"factor\":4,\"original_max_position_embeddings\":4096}}");
    kvc_model *v5 =
        model_of(LLAMA_BASE "\"max_position_embeddings\":32768,\"rope_parameters\":{\"rope_type\":\"yarn\","
                            "\"rope_theta\":10000,\"factor\":4,\"original_max_position_embeddings\":4096}}");
    /* the same rope with a consistent max_position_embeddings (4 * 4096) */
    kvc_model *ok = model_of(LLAMA_BASE "\"max_position_embeddings\":16384,\"rope_theta\":10000,\"rope_scaling\":"
                                        "{\"type\":\"yarn\",\"factor\":4,\"original_max_position_embeddings\":4096}}");
    const int64_t half = v4->rot_dim / 2;
    assert_int_equal(half, 16);
    assert_memory_equal(v4->inv_freq, ok->inv_freq, (size_t)half * sizeof(float));
    assert_memory_equal(v5->inv_freq, ok->inv_freq, (size_t)half * sizeof(float));
    /* the last pair is past the ramp: plain theta frequency divided by 4 */
    const float last = 1.0f / powf(10000.0f, (float)(2 * (half - 1)) / 32.0f);
    assert_true(fabsf(v4->inv_freq[half - 1] - last / 4.0f) <= 1e-6f * last);
    const double a = 0.1 * log(4.0) + 1.0;
    assert_true(fabsf(v4->rope_attn_factor - (float)a) < 1e-7f);
    kvc_model_plan *p =
        plan_of(LLAMA_BASE "\"max_position_embeddings\":32768,\"rope_theta\":10000,\"rope_scaling\":"
                           "{\"type\":\"yarn\",\"factor\":4,\"original_max_position_embeddings\":4096}}");
    assert_true(p->rope_factor == 4.0);
    assert_true(fabs(p->rope_attention_factor - a) < 1e-12);
    kvc_model_plan_destroy(p);
    kvc_model_destroy(v4);
    kvc_model_destroy(v5);
    kvc_model_destroy(ok);
}

/* longrope (Phi-3.5 / Phi-4-mini): without a factor, max_position_embeddings over the top-level original length,
 * and A = sqrt(1 + ln f / ln L0) (transformers' _compute_longrope_parameters); an explicit factor or attention
 * factor wins. */
static void test_rope_longrope(void **state) {
    (void)state;
#define PHI3_BASE                                                                                                      \
    "{\"model_type\":\"phi3\",\"num_hidden_layers\":2,\"num_attention_heads\":24,\"num_key_value_heads\":8,"           \
    "\"hidden_size\":3072,\"max_position_embeddings\":131072,\"original_max_position_embeddings\":4096,"
    kvc_model_plan *p = plan_of(PHI3_BASE "\"rope_scaling\":{\"type\":\"longrope\",\"long_factor\":[1],"
                                          "\"short_factor\":[1]}}");
    assert_true(p->rope_factor == 32.0);
    assert_true(fabs(p->rope_attention_factor - sqrt(1.0 + log(32.0) / log(4096.0))) < 1e-12);
    kvc_model_plan_destroy(p);
    p = plan_of(PHI3_BASE "\"rope_scaling\":{\"type\":\"longrope\",\"factor\":4,\"long_factor\":[1]}}");
    assert_true(p->rope_factor == 4.0);
    assert_true(fabs(p->rope_attention_factor - sqrt(1.0 + log(4.0) / log(4096.0))) < 1e-12);
    kvc_model_plan_destroy(p);
    p = plan_of(PHI3_BASE "\"rope_scaling\":{\"type\":\"longrope\",\"attention_factor\":1.5}}");
    assert_true(p->rope_attention_factor == 1.5);
    kvc_model_plan_destroy(p);
#undef PHI3_BASE
}

/* transformers 5.x's nested form: one rope dict per layer type */
static void test_rope_per_layer_type(void **state) {
    (void)state;
    const char *gemma3 = "{\"model_type\":\"gemma3_text\",\"num_hidden_layers\":6,\"num_attention_heads\":8,"
                         "\"num_key_value_heads\":4,\"head_dim\":256,\"max_position_embeddings\":131072,"
                         "\"sliding_window\":1024,\"query_pre_attn_scalar\":256,\"rope_parameters\":{"
                         "\"sliding_attention\":{\"rope_type\":\"default\",\"rope_theta\":10000},"
                         "\"full_attention\":{\"rope_type\":\"linear\",\"factor\":8,\"rope_theta\":1000000}}}";
    kvc_model_plan *p = plan_of(gemma3);
    assert_string_equal(p->rope_type, "linear");
    assert_true(p->rope_factor == 8.0);
    bool warned = false;
    for (int32_t i = 0; i < p->n_warnings; i++) warned |= strstr(p->warnings[i], "per layer type") != NULL;
    assert_true(warned);
    kvc_model_plan_destroy(p);
    /* the runtime holds both: the full layers' linear rope, the sliding layers' default one */
    kvc_model_config c;
    char rt[1024]; /* with the sizes the runtime needs */
    snprintf(rt, sizeof rt, "{\"hidden_size\":2048,\"vocab_size\":1000,\"intermediate_size\":64,%s", gemma3 + 1);
    assert_int_equal(kvc_model_config_parse(rt, "c", &c), KVC_OK);
    assert_true(c.rope.type == KVC_ROPE_LINEAR && c.rope.factor == 8.0 && c.rope.theta == 1e6);
    assert_true(c.rope_sliding.type == KVC_ROPE_DEFAULT && c.rope_sliding.theta == 1e4);
    /* a nested dict without a sliding entry: every layer the full entry's */
    assert_int_equal(kvc_model_config_parse(LLAMA_BASE "\"rope_parameters\":{\"full_attention\":{\"rope_type\":"
                                                       "\"default\",\"rope_theta\":20000}}}",
                                            "c", &c),
                     KVC_OK);
    assert_true(c.rope.theta == 2e4 && c.rope_sliding.theta == 2e4);
    /* the sliding entry's type is checked as the full one's, and named */
    assert_int_equal(kvc_model_config_parse(LLAMA_BASE "\"rope_parameters\":{\"full_attention\":{\"rope_type\":"
                                                       "\"default\"},\"sliding_attention\":{\"rope_type\":"
                                                       "\"dynamic\",\"factor\":2}}}",
                                            "c", &c),
                     KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "sliding_attention rope type \"dynamic\" is not supported"));
}

/* Both consumers refuse json with a message containing every needle. */
static void expect_both_refuse(const char *json, const char *needle, const char *needle2) {
    kvc_model_config c;
    kvc_status st = kvc_model_config_parse(json, "config.json", &c);
    if (st != KVC_EINVAL || strstr(kvc_last_error(), needle) == NULL ||
        (needle2 != NULL && strstr(kvc_last_error(), needle2) == NULL))
        fail_msg("model: status %s, \"%s\" should name \"%s\" and \"%s\"", kvc_status_str(st), kvc_last_error(), needle,
                 needle2 ? needle2 : "");
    kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *p = NULL;
    st = kvc_model_plan_create(json, strlen(json), &o, &p);
    if (st != KVC_EINVAL || strstr(kvc_last_error(), needle) == NULL ||
        (needle2 != NULL && strstr(kvc_last_error(), needle2) == NULL))
        fail_msg("plan: status %s, \"%s\" should name \"%s\" and \"%s\"", kvc_status_str(st), kvc_last_error(), needle,
                 needle2 ? needle2 : "");
    assert_null(p);
}

static void test_q_lora_rank(void **state) {
    (void)state;
    expect_both_refuse(DS_BASE "\"q_lora_rank\":0}", "q_lora_rank 0", NULL);
    /* null and absent: a plain q_proj in both */
    kvc_model *m = model_of(DS_BASE "\"q_lora_rank\":null}");
    assert_int_equal(kvc_model_config_of(m)->q_lora_rank, 0);
    kvc_model_destroy(m);
    kvc_model_plan_destroy(plan_of(DS_BASE "\"q_lora_rank\":null}"));
    m = model_of(DS_BASE "\"q_lora_rank\":12}");
    assert_int_equal(kvc_model_config_of(m)->q_lora_rank, 12);
    kvc_model_destroy(m);
}

static void test_invalid_utf8_refused(void **state) {
    (void)state;
    /* "llama" followed by a lone continuation byte, an overlong '/', a surrogate */
    expect_both_refuse("{\"model_type\":\"llama\x80\",\"num_hidden_layers\":1}", "model_type", "UTF-8");
    expect_both_refuse("{\"model_type\":\"llama\",\"note\":\"\xC0\xAF\"}", "note", "UTF-8");
    expect_both_refuse("{\"model_type\":\"llama\",\"a\":{\"\xED\xA0\x80\":1}}", "a", "UTF-8");
    /* a \u0000 escape would cut the name short ("qwen3\u0000x" read as qwen3): refused, as in traces; an escaped
     * backslash before u0000 is text, not a NUL */
    expect_both_refuse("{\"model_type\":\"qwen3\\u0000x\",\"num_hidden_layers\":1}", "model_type", "\\u0000");
    expect_both_refuse("{\"model_type\":\"llama\",\"a\":{\"b\\u0000\":1}}", "a", "member name");
    kvc_model_plan *p = plan_of("{\"model_type\":\"llama\",\"note\":\"c:\\\\u0000\",\"num_hidden_layers\":1,"
                                "\"num_attention_heads\":2,\"hidden_size\":64,\"max_position_embeddings\":64}");
    kvc_model_plan_destroy(p);
    /* valid multi-byte text is fine */
    assert_true(kvci_utf8_valid("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9));
    assert_false(kvci_utf8_valid("\xF4\x90\x80\x80", 4)); /* above U+10FFFF */
    assert_false(kvci_utf8_valid("\xE2\x82", 2));         /* truncated */
}

static void test_sizes_bounded_before_use(void **state) {
    (void)state;
    /* heads near 9e15 (signed overflow in the planner before) */
    expect_both_refuse(
        LLAMA_HEAD
        "\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":9000000000000000,\"head_dim\":128,"
        "\"max_position_embeddings\":64}",
        "num_attention_heads 9000000000000000", "[1, 65536]");
    /* float-to-int64 overflow */
    expect_both_refuse(LLAMA_BASE "\"max_position_embeddings\":64,\"rope_scaling\":{\"type\":\"yarn\",\"factor\":4,"
                                  "\"original_max_position_embeddings\":1e300}}",
                       "rope_scaling.original_max_position_embeddings 1e+300", NULL);
    expect_both_refuse(LLAMA_BASE "\"max_position_embeddings\":0}", "max_position_embeddings 0", NULL);
    expect_both_refuse(LLAMA_BASE "\"max_position_embeddings\":-1}", "max_position_embeddings -1", NULL);
    expect_both_refuse(LLAMA_BASE "\"max_position_embeddings\":64,\"head_dim\":1e300}", "head_dim 1e+300", NULL);
    expect_both_refuse(LLAMA_HEAD "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"max_position_embeddings\":64,"
                                  "\"hidden_size\":1.5}",
                       "hidden_size 1.5", NULL);
    /* a key given twice: transformers keeps the last, cJSON the first; refused */
    expect_both_refuse(LLAMA_BASE "\"max_position_embeddings\":64,\"hidden_size\":128}", "hidden_size", "twice");
    expect_both_refuse(LLAMA_BASE "\"max_position_embeddings\":64,\"rope_theta\":1e400}", "rope_theta", NULL);
    expect_both_refuse(LLAMA_BASE "\"max_position_embeddings\":64} trailing", "byte", NULL);
    /* an object of 22422 members (nvidia/MiniMax-M3-NVFP4's quantization_config.quantized_layers) is read (was
     * refused past 4096); a name given twice among them still is */
    enum { MEMBERS = 22422 };
    char *big = test_malloc(MEMBERS * 16 + 256);
    int at = snprintf(big, 256, LLAMA_BASE "\"max_position_embeddings\":64,\"quantization_config\":{");
    for (int i = 0; i < MEMBERS; i++) at += sprintf(big + at, "%s\"l%d\":{}", i ? "," : "", i);
    strcpy(big + at, "}}");
    kvc_model_plan *p = plan_of(big);
    kvc_model_plan_destroy(p);
    sprintf(big + at, ",\"l%d\":{}}}", MEMBERS / 2);
    expect_both_refuse(big, "quantization_config.l11211", "twice");
    test_free(big);
}

/* One window rule: Qwen applies sliding_window only with use_sliding_window
 * (transformers ignores the key otherwise), gpt_oss defaults to 128, and a
 * window of 0 is refused by both. */
static void test_window_rule(void **state) {
    (void)state;
    const char *qwen = "{\"model_type\":\"qwen3\",\"vocab_size\":16,\"hidden_size\":64,\"intermediate_size\":16,"
                       "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"num_key_value_heads\":2,\"head_dim\":32,"
                       "\"max_position_embeddings\":64,\"torch_dtype\":\"bfloat16\",\"sliding_window\":8}";
    kvc_model *m = model_of(qwen);
    kvc_model_plan *p = plan_of(qwen);
    assert_int_equal(kvc_model_config_of(m)->sliding_window, 0);
    assert_int_equal(p->layers[0].attn_type, KVC_ATTN_FULL); /* was planned as a window layer */
    assert_int_equal(p->layers[1].attn_type, KVC_ATTN_FULL);
    kvc_model_plan_destroy(p);
    kvc_model_destroy(m);
    const char *oss = "{\"model_type\":\"gpt_oss\",\"vocab_size\":16,\"hidden_size\":32,\"intermediate_size\":8,"
                      "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":32,"
                      "\"num_local_experts\":4,\"num_experts_per_tok\":2,\"max_position_embeddings\":4096,"
                      "\"torch_dtype\":\"bfloat16\"}";
    m = model_of(oss);
    p = plan_of(oss);
    assert_int_equal(kvc_model_config_of(m)->sliding_window, 128);
    assert_int_equal(p->layers[0].sliding_window, 128); /* was refused: "sliding_window is missing" */
    kvc_model_plan_destroy(p);
    kvc_model_destroy(m);
    expect_both_refuse(LLAMA_BASE "\"max_position_embeddings\":64,\"sliding_window\":0}", "sliding_window 0", NULL);
    /* Mistral without the key: MistralConfig's 4096; an explicit null (Mistral v0.2 on): no window. Mixtral
     * without rope_theta: MixtralConfig's 1e6. Both without num_key_value_heads: their classes' 8. */
#define MISTRAL                                                                                                        \
    "{\"model_type\":\"mistral\",\"vocab_size\":16,\"hidden_size\":64,\"intermediate_size\":16,"                       \
    "\"num_hidden_layers\":1,\"num_attention_heads\":16,\"max_position_embeddings\":8192"
    /* a leftover use_sliding_window (MistralConfig never reads it): every layer still slides */
    const int64_t want[4] = {4096, 0, 16, 16};
    const char *mistral[4] = {MISTRAL "}", MISTRAL ",\"sliding_window\":null}",
                              MISTRAL ",\"sliding_window\":16,\"use_sliding_window\":false}",
                              MISTRAL ",\"sliding_window\":16,\"use_sliding_window\":true}"};
    for (int i = 0; i < 4; i++) {
        m = model_of(mistral[i]);
        p = plan_of(mistral[i]);
        assert_int_equal(kvc_model_config_of(m)->sliding_window, want[i]);
        assert_int_equal(p->layers[0].sliding_window, want[i]);
        assert_int_equal(kvc_model_config_of(m)->num_kv_heads, 8); /* MistralConfig's, the key missing */
        assert_int_equal(p->num_key_value_heads, 8);
        kvc_model_plan_destroy(p);
        kvc_model_destroy(m);
    }
#undef MISTRAL
    const char *mixtral = "{\"model_type\":\"mixtral\",\"vocab_size\":16,\"hidden_size\":64,\"intermediate_size\":16,"
                          "\"num_hidden_layers\":1,\"num_attention_heads\":8,\"max_position_embeddings\":64,"
                          "\"num_local_experts\":4,\"num_experts_per_tok\":2}";
    m = model_of(mixtral);
    assert_true(kvc_model_config_of(m)->rope.theta == 1e6 && kvc_model_config_of(m)->num_kv_heads == 8);
    kvc_model_destroy(m);
}

/* The planner alone refuses json naming needle. */
static void expect_plan_refuses(const char *json, const char *needle) {
    kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *p = NULL;
    kvc_status st = kvc_model_plan_create(json, strlen(json), &o, &p);
    if (st != KVC_EINVAL || strstr(kvc_last_error(), needle) == NULL)
        fail_msg("plan: status %s, \"%s\" should name \"%s\"", kvc_status_str(st), kvc_last_error(), needle);
    assert_null(p);
}

#define JAMBA                                                                                                          \
    "{\"model_type\":\"jamba\",\"num_hidden_layers\":8,\"num_attention_heads\":32,\"num_key_value_heads\":8,"          \
    "\"hidden_size\":4096,\"max_position_embeddings\":4096,\"attn_layer_period\":8,\"attn_layer_offset\":4,"           \
    "\"mamba_d_state\":16,\"mamba_d_conv\":4,"

static void test_state_sizes_bounded(void **state) {
    (void)state;
    /* 2^52 * hidden 4096 wrapped and was planned as if it were 1 */
    expect_plan_refuses(JAMBA "\"mamba_expand\":4503599627370496}", "mamba_expand 4503599627370496");
    expect_plan_refuses(JAMBA "\"mamba_expand\":0}", "mamba_expand 0");
    kvc_model_plan *p = plan_of(JAMBA "\"mamba_expand\":2}");
    assert_int_equal(p->layers[0].caches[0].shape[0], 8192); /* conv state: expand * hidden channels */
    kvc_model_plan_destroy(p);
    expect_plan_refuses("{\"model_type\":\"qwen3_next\",\"num_hidden_layers\":4,\"num_attention_heads\":16,"
                        "\"num_key_value_heads\":2,\"head_dim\":256,\"max_position_embeddings\":4096,"
                        "\"linear_num_key_heads\":16,\"linear_num_value_heads\":9000000000000000,"
                        "\"linear_key_head_dim\":128,\"linear_value_head_dim\":128,\"linear_conv_kernel_dim\":4}",
                        "linear_num_value_heads 9000000000000000");
}

static void test_fixed_arrays_refuse(void **state) {
    (void)state;
    kvc_model_config c;
    /* model_type is kept in char[32]: a longer one is refused, not truncated */
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"llama_with_a_name_longer_than_the_field\"}", "c", &c),
                     KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "model_type"));
    assert_non_null(strstr(kvc_last_error(), "at most 31"));
    /* layer_sliding[256]: the planner takes 300 layers, the runtime refuses them by name */
    const char *deep = LLAMA_HEAD "\"hidden_size\":64,\"num_attention_heads\":2,\"max_position_embeddings\":64,"
                                  "\"num_hidden_layers\":300}";
    assert_int_equal(kvc_model_config_parse(deep, "c", &c), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "num_hidden_layers 300"));
    assert_non_null(strstr(kvc_last_error(), "KVC_MODEL_MAX_LAYERS"));
    kvc_model_plan *p = plan_of(deep);
    assert_int_equal(p->n_layers, 300);
    kvc_model_plan_destroy(p);
}

/* The published configs and the oracle models: where the runtime reads one,
 * the planner reads the same rope and the same softmax scale. */
static void test_published_configs_agree(void **state) {
    (void)state;
    static const char *const files[] = {
        "configs/Llama-3.1-8B.json",
        "configs/Mistral-7B-v0.1.json",
        "configs/Qwen3-8B.json",
        "configs/gpt-oss-20b.json",
        "configs/DeepSeek-R1.json",
        "oracle/qwen3/config.json",
        "oracle/gpt_oss/config.json",
        "oracle/deepseek_v3/config.json",
        "oracle/gemma3/config.json",
        "oracle/gemma3/multimodal/config.json",
        "oracle/gemma4/config.json",
        "oracle/gemma4/multimodal/config.json",
        "oracle/gemma4_dense/config.json",
        "oracle/phi3/config.json",
        "oracle/phi3_longrope/config.json",
        "oracle/olmo2/config.json",
        "configs/Phi-3-mini-4k-instruct.json",
        "oracle/glm4/config.json",
        "oracle/cohere/config.json",
        "oracle/cohere2/config.json",
        "oracle/glm/config.json",
        "oracle/seed_oss/config.json",
        "oracle/exaone4/config.json",
        "oracle/starcoder2/config.json",
        "oracle/ministral/config.json",
        "oracle/ministral3/config.json",
        "oracle/ministral3/multimodal/config.json",
        "oracle/helium/config.json",
        "oracle/arcee/config.json",
        "oracle/apertus/config.json",
        "oracle/stablelm/config.json",
        "oracle/stablelm_parallel/config.json",
        "oracle/olmo/config.json",
        "oracle/ernie4_5/config.json",
        "oracle/deepseek_v2/config.json",
        "oracle/deepseek_v2_lite/config.json",
        "oracle/olmoe/config.json",
        "oracle/granitemoe/config.json",
        "oracle/granitemoeshared/config.json",
        "oracle/granite_swa/config.json",
        "oracle/granitemoe_swa/config.json",
        "oracle/flint/config.json",
        "oracle/hy_v3/config.json",
        "oracle/cohere2_moe/config.json",
        "oracle/cohere2_moe_sigmoid/config.json",
        "oracle/glm4_moe/config.json",
        "oracle/llama4/config.json",
        "oracle/llama4/multimodal/config.json",
        "oracle/phi/config.json",
        "oracle/phi_qk/config.json",
        "oracle/persimmon/config.json",
        "oracle/cwm/config.json",
        "oracle/jais2/config.json",
        "oracle/iquestcoder/config.json",
        "oracle/hyperclovax/config.json",
        "oracle/lfm3/config.json",
        "oracle/xglm/config.json",
        "oracle/openai_gpt/config.json",
        "oracle/ctrl/config.json",
        "oracle/gpt_neox_japanese/config.json",
        "oracle/gpt_neox/config.json",
        "oracle/gpt_neox_seq/config.json",
        "oracle/gpt2/config.json",
        "oracle/gpt2_unscaled/config.json",
        "oracle/opt/config.json",
        "oracle/qwen2_5_vl/config.json",
        "oracle/qwen2_5_vl/flat/config.json",
        "oracle/qwen2_vl/config.json",
        "oracle/qwen2_vl/flat/config.json",
        "oracle/qwen3_vl/config.json",
        "oracle/llava/config.json",
        "oracle/llava_next/config.json",
        "oracle/emu3/config.json",
        "oracle/aria/config.json",
        "oracle/phi4_multimodal/config.json",
        "oracle/apertus1p5_text/config.json",
        "oracle/gpt_bigcode/config.json",
        "oracle/gpt_bigcode_mha/config.json",
        "oracle/falcon/config.json",
        "oracle/falcon_new/config.json",
        "oracle/falcon_alibi/config.json",
        "oracle/bloom/config.json",
        "oracle/mpt/config.json",
        "oracle/gptj/config.json",
        "oracle/gpt_neo/config.json",
        "oracle/codegen/config.json",
        "oracle/vaultgemma/config.json",
        "oracle/flex_olmo/config.json",
        "oracle/hunyuan_v1_dense/config.json",
        "oracle/biogpt/config.json",
        "oracle/dots1/config.json",
        "oracle/solar_open/config.json",
        "oracle/sarvam_moe/config.json",
        "oracle/param2moe/config.json",
        "oracle/minicpm5_moe/config.json",
        "oracle/kolibri1/config.json",
        "oracle/hunyuan_v1_moe/config.json",
        "oracle/minimax_m2/config.json",
        "oracle/exaone/config.json",
        "oracle/internlm3/config.json",
        "oracle/nemotron/config.json",
        "oracle/ernie4_5_moe/config.json",
        "oracle/phimoe/config.json",
        "oracle/dbrx/config.json",
        "oracle/opt_350m/config.json",
        "oracle/nanochat/config.json",
        "oracle/youtu/config.json",
        "oracle/minicpm3/config.json",
        "oracle/afmoe/config.json",
        "oracle/ergo/config.json",
        "oracle/sarvam_mla/config.json",
        "oracle/axk1/config.json",
        "oracle/glm_moe_dsa/config.json",
        "oracle/bert/config.json",
        "oracle/roberta/config.json",
        "oracle/ernie/config.json",
        "oracle/megatron_bert/config.json",
        "oracle/roberta_prelayernorm/config.json",
        "oracle/deepseek_v32/config.json",
        "oracle/axk2/config.json",
        "oracle/beam/config.json",
        "oracle/jetmoe/config.json",
        "oracle/zamba2/config.json",
        "oracle/zamba/config.json",
        "oracle/diffllama/config.json",
        "oracle/cohere_compass_text/config.json",
        "oracle/modernbert_decoder/config.json",
        "oracle/bitnet/config.json",
    };
    const char *dir = getenv("KVC_DATA_DIR");
    assert_non_null(dir);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        char *text = kvc_test_read_text(path);
        kvc_model_config c;
        if (kvc_model_config_parse(text, files[i], &c) != KVC_OK) fail_msg("%s: %s", files[i], kvc_last_error());
        kvc_model_plan *p = plan_of(text);
        for (int32_t l = 0; c.family == KVC_FAMILY_LLAMA4 && l < p->n_layers; l++) /* the same chunked layers */
            if ((p->layers[l].attn_type == KVC_ATTN_CHUNKED_LOCAL) != c.layer_chunked[l] ||
                (c.layer_chunked[l] && p->layers[l].attention_chunk_size != c.attention_chunk_size))
                fail_msg("%s: layer %d chunked %d (chunk %lld) in the plan, %d (%lld) in the runtime", files[i], (int)l,
                         p->layers[l].attn_type == KVC_ATTN_CHUNKED_LOCAL, (long long)p->layers[l].attention_chunk_size,
                         c.layer_chunked[l], (long long)c.attention_chunk_size);
        if (fabs(kvc_model_attn_scale(&c) - p->scale) > 1e-12 * p->scale || c.rope.factor != p->rope_factor ||
            strcmp(kvc_rope_type_name(c.rope.type), p->rope_type) != 0)
            fail_msg("%s: model scale %.9g rope %s x%g, plan scale %.9g rope %s x%g", files[i],
                     kvc_model_attn_scale(&c), kvc_rope_type_name(c.rope.type), c.rope.factor, p->scale, p->rope_type,
                     p->rope_factor);
        kvc_model_plan_destroy(p);
        free(text);
    }
    /* Gemma 3 without query_pre_attn_scalar: both take transformers' default 256, not head_dim 64 */
    const char *gemma = "{\"model_type\":\"gemma3_text\",\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                        "\"hidden_size\":64,\"head_dim\":64,\"vocab_size\":8,\"intermediate_size\":8,"
                        "\"sliding_window\":4,\"max_position_embeddings\":64}";
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(gemma, "g", &c), KVC_OK);
    kvc_model_plan *p = plan_of(gemma);
    assert_true(kvc_model_attn_scale(&c) == 1.0 / 16.0 && fabs(p->scale - 1.0 / 16.0) < 1e-15);
    kvc_model_plan_destroy(p);
    /* Granite without attention_multiplier: both take GraniteConfig's 1, not head_dim 16's 1/4 */
    const char *granite = "{\"model_type\":\"granite\",\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                          "\"hidden_size\":64,\"vocab_size\":8,\"intermediate_size\":8,\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(granite, "g", &c), KVC_OK);
    p = plan_of(granite);
    assert_true(kvc_model_attn_scale(&c) == 1.0 && p->scale == 1.0);
    kvc_model_plan_destroy(p);
    /* Granite MoE: the same default (GraniteMoeConfig's) */
    const char *granitemoe =
        "{\"model_type\":\"granitemoe\",\"num_hidden_layers\":2,\"num_attention_heads\":4,"
        "\"hidden_size\":64,\"vocab_size\":8,\"intermediate_size\":8,\"max_position_embeddings\":64}";
    assert_int_equal(kvc_model_config_parse(granitemoe, "gm", &c), KVC_OK);
    p = plan_of(granitemoe);
    assert_true(kvc_model_attn_scale(&c) == 1.0 && p->scale == 1.0);
    kvc_model_plan_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rope_scaling_wins_in_model_and_plan),
        cmocka_unit_test(test_published_configs_agree),
        cmocka_unit_test(test_explicit_yarn_factor_is_kept),
        cmocka_unit_test(test_rope_longrope),
        cmocka_unit_test(test_rope_per_layer_type),
        cmocka_unit_test(test_q_lora_rank),
        cmocka_unit_test(test_invalid_utf8_refused),
        cmocka_unit_test(test_sizes_bounded_before_use),
        cmocka_unit_test(test_window_rule),
        cmocka_unit_test(test_state_sizes_bounded),
        cmocka_unit_test(test_fixed_arrays_refuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
