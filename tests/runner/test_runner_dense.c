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

/* The logits a prompt is scored with, chunk by chunk (kvc_runner_score_chunk), against the no-cache
 * recomputation fed the same tokens one step at a time (teacher-forced): every position within 1e-5,
 * over a sliding layer of window 4 and chunks of 1, 5 and 7 tokens; then the refusals. */
static void test_score_chunks(void **state) {
    (void)state;
    kvc_model *m = fixture_model(
        "{\"model_type\":\"qwen3\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
        "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
        "\"use_sliding_window\":true,\"sliding_window\":4,\"max_window_layers\":1,\"max_position_embeddings\":512}",
        99);
    enum { N = (int)(sizeof IDS / sizeof IDS[0]), V = 128 };
    int32_t forced[N], tokens[N];
    for (int i = 0; i < N; i++) forced[i] = i + 1 < N ? IDS[i + 1] : 0;
    float *ref = calloc((size_t)N * V, sizeof(float)), *got = calloc((size_t)N * V, sizeof(float));
    assert_non_null(ref);
    assert_non_null(got);
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = KVC_RUNNER_RECOMPUTE;
    p.max_new_tokens = N;
    kvc_runner *r = NULL;
    const int64_t one = 1;
    assert_int_equal(kvc_runner_create(m, &p, 1, 1, &r), KVC_OK);
    assert_int_equal(kvc_runner_generate_forced(r, IDS, &one, 1, forced, tokens, ref, NULL), KVC_OK);
    assert_int_equal(kvc_runner_score_chunk(r, IDS, 0, 1, got), KVC_EINVAL); /* no cache to continue */
    kvc_runner_destroy(r);
    const int64_t chunks[3] = {1, 5, 7};
    for (int c = 0; c < 3; c++) {
        p = kvc_runner_default_params();
        p.mode = KVC_RUNNER_CONTIGUOUS;
        p.max_new_tokens = 1;
        p.max_seq_len = N;
        assert_int_equal(kvc_runner_create(m, &p, 1, chunks[c], &r), KVC_OK);
        for (int64_t at = 0; at < N; at += chunks[c]) {
            const int64_t q = N - at < chunks[c] ? N - at : chunks[c];
            if (kvc_runner_score_chunk(r, IDS + at, at, q, got + at * V) != KVC_OK)
                fail_msg("chunk at %lld: %s", (long long)at, kvc_last_error());
        }
        for (int64_t i = 0; i < (int64_t)N * V; i++)
            if (!(fabs((double)got[i] - ref[i]) <= 1e-5 * fmax(1.0, fabs((double)ref[i]))))
                fail_msg("chunks of %lld: position %lld logit %lld is %g, teacher-forced %g", (long long)chunks[c],
                         (long long)(i / V), (long long)(i % V), got[i], ref[i]);
        assert_int_equal(kvc_runner_score_chunk(r, IDS, N, 1, got), KVC_ERANGE); /* past max_seq_len */
        /* starting over gives the same first chunk; a gap, an id outside the vocabulary, a chunk past the
         * runner's sizes are refused */
        float *again = calloc((size_t)chunks[c] * V, sizeof(float));
        assert_non_null(again);
        assert_int_equal(kvc_runner_score_chunk(r, IDS, 0, chunks[c], again), KVC_OK);
        assert_memory_equal(again, got, (size_t)chunks[c] * V * sizeof(float));
        assert_int_equal(kvc_runner_score_chunk(r, IDS, chunks[c] + 1, 1, again), KVC_EINVAL);
        const int32_t bad = V;
        assert_int_equal(kvc_runner_score_chunk(r, &bad, chunks[c], 1, again), KVC_ERANGE);
        assert_int_equal(kvc_runner_score_chunk(r, IDS, 0, chunks[c] + 1, again), KVC_EINVAL);
        free(again);
        kvc_runner_destroy(r);
    }
    free(ref);
    free(got);
    kvc_model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3), cmocka_unit_test(test_qwen3_sliding), cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_qwen2), cmocka_unit_test(test_score_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
