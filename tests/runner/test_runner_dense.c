/* Dense GQA family (Qwen3 with q/k norm and biases, Llama with llama3 RoPE,
 * Qwen2 with a sliding layer), random weights: every runner mode gives the
 * tokens and logits of the no-cache recomputation; paged modes bitwise equal. */
#include "runner_fixture.h"

static const int32_t IDS[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31, 8, 45, 2, 60, 71, 33, 19, 88, 7, 14, 120};
static const int64_t LENS[] = {5, 11, 7};

static void run_family(const char *json) {
    kvc_model *m = fixture_model(json, 1234);
    fixture_equivalence(m, IDS, LENS, 3, 6, false);
    kvc_model_destroy(m);
}

static void test_qwen3(void **state) {
    (void)state;
    run_family("{\"model_type\":\"qwen3\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
               "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"attention_bias\":true,\"max_position_embeddings\":512}");
}

static void test_qwen3_sliding(void **state) {
    (void)state;
    run_family("{\"model_type\":\"qwen3\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
               "\"rope_theta\":1000000,\"use_sliding_window\":true,\"sliding_window\":4,\"max_window_layers\":1,"
               "\"tie_word_embeddings\":true}");
}

static void test_llama3(void **state) {
    (void)state;
    run_family("{\"model_type\":\"llama\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":1,\"rms_norm_eps\":1e-5,"
               "\"rope_theta\":500000,\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8,\"low_freq_factor\":1,"
               "\"high_freq_factor\":4,\"original_max_position_embeddings\":8192},\"max_position_embeddings\":65536,"
               "\"mlp_bias\":true}");
}

static void test_qwen2(void **state) {
    (void)state;
    run_family("{\"model_type\":\"qwen2\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
               "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
               "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":1000000},\"tie_word_embeddings\":true}");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_qwen3_sliding),
        cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_qwen2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
