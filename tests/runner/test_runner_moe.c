/* GptOss (sliding/full layers, sinks, biases, router + clamped SwiGLU
 * experts, YaRN) and DeepseekV3 (MLA with q low-rank or plain q_proj, YaRN
 * mscale, dense and MoE layers), random weights: every runner mode (mode 3
 * for MLA over contiguous and paged latent caches) matches the no-cache
 * recomputation; paged modes are bitwise equal to each other. */
#include "runner_fixture.h"

static const int32_t IDS[] = {3,  17, 42, 9,  100, 5,  77, 63, 12, 1,   99, 31, 8,
                              45, 2,  60, 71, 33,  19, 88, 7,  14, 120, 4,  6,  50};
static const int64_t LENS[] = {12, 4, 10};

static void run_family(const char *json, bool mla) {
    kvc_model *m = fixture_model(json, 99);
    fixture_equivalence(m, IDS, LENS, 3, 6, mla);
    kvc_model_destroy(m);
}

static void test_gpt_oss(void **state) {
    (void)state;
    run_family("{\"model_type\":\"gpt_oss\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":32,"
               "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
               "\"sliding_window\":4,\"num_local_experts\":8,\"num_experts_per_tok\":2,\"rms_norm_eps\":1e-5,"
               "\"layer_types\":[\"sliding_attention\",\"full_attention\",\"sliding_attention\",\"full_attention\"],"
               "\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":150000,\"factor\":32,\"beta_fast\":32,"
               "\"beta_slow\":1,\"truncate\":false,\"original_max_position_embeddings\":4096},"
               "\"max_position_embeddings\":131072}",
               false);
}

static void test_deepseek_q_lora(void **state) {
    (void)state;
    run_family("{\"model_type\":\"deepseek_v3\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
               "\"moe_intermediate_size\":32,\"num_hidden_layers\":3,\"first_k_dense_replace\":1,"
               "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"q_lora_rank\":32,\"kv_lora_rank\":24,"
               "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":12,\"n_routed_experts\":8,"
               "\"n_group\":2,\"topk_group\":1,\"num_experts_per_tok\":2,\"n_shared_experts\":1,"
               "\"routed_scaling_factor\":2.5,\"rope_theta\":10000,\"rope_scaling\":{\"type\":\"yarn\",\"factor\":40,"
               "\"original_max_position_embeddings\":4096,\"beta_fast\":32,\"beta_slow\":1,\"mscale\":1.0,"
               "\"mscale_all_dim\":1.0},\"max_position_embeddings\":163840}",
               true);
}

static void test_deepseek_plain_q(void **state) {
    (void)state;
    run_family("{\"model_type\":\"deepseek_v3\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
               "\"moe_intermediate_size\":32,\"num_hidden_layers\":2,\"first_k_dense_replace\":2,"
               "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"q_lora_rank\":null,\"kv_lora_rank\":24,"
               "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":20,\"rope_interleave\":false,"
               "\"attention_bias\":true,\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":10000,\"factor\":40,"
               "\"original_max_position_embeddings\":4096,\"mscale\":1.0,\"mscale_all_dim\":0.8},"
               "\"max_position_embeddings\":163840}",
               true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt_oss),
        cmocka_unit_test(test_deepseek_q_lora),
        cmocka_unit_test(test_deepseek_plain_q),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
