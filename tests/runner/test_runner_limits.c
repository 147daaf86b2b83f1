/* The runner's one check of its arguments (kvc_runner_check, issue 23 #8
 * and #11): prompt + new tokens against max_position_embeddings, against
 * max_positions in its place and against KVC_RUNNER_MAX_POSITIONS; the
 * block size against paged attention's limit; a block layout the mode does
 * not take, named in words. kvc_runner_create and kvc_runner_compare_dtype
 * refuse what it refuses. */
#include "runner_fixture.h"

/* max_position_embeddings 32 */
#define SMALL                                                                                                          \
    "{\"model_type\":\"qwen3\",\"vocab_size\":64,\"hidden_size\":32,\"intermediate_size\":48,"                         \
    "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":16,"                     \
    "\"rope_theta\":10000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":32}"
/* max_position_embeddings 2^22, beyond the runner's own limit */
#define LONG                                                                                                           \
    "{\"model_type\":\"qwen3\",\"vocab_size\":64,\"hidden_size\":32,\"intermediate_size\":48,"                         \
    "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":16,"                     \
    "\"rope_theta\":10000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":4194304}"

/* GLM-5 with index_topk 4 below max_position_embeddings 64 */
#define GLM_DSA                                                                                                        \
    "{\"model_type\":\"glm_moe_dsa\",\"vocab_size\":64,\"hidden_size\":32,\"intermediate_size\":16,"                   \
    "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":2,\"q_lora_rank\":16,"                  \
    "\"kv_lora_rank\":16,\"qk_rope_head_dim\":8,\"qk_nope_head_dim\":8,\"v_head_dim\":8,\"index_head_dim\":8,"         \
    "\"index_topk\":4,\"max_position_embeddings\":64}"

static kvc_runner_params params(int64_t new_tokens, int64_t max_positions) {
    kvc_runner_params p = kvc_runner_default_params();
    p.max_new_tokens = new_tokens;
    p.max_positions = max_positions;
    return p;
}

static void expect_refused(const kvc_model *m, const kvc_runner_params *p, int64_t prompt, const char *text) {
    assert_int_equal(kvc_runner_check(m, p, 1, prompt), KVC_EINVAL);
    if (!strstr(kvc_last_error(), text)) fail_msg("message \"%s\" lacks \"%s\"", kvc_last_error(), text);
    static int sentinel;
    kvc_runner *r = (kvc_runner *)&sentinel; /* overwritten with NULL on refusal */
    assert_int_equal(kvc_runner_create(m, p, 1, prompt, &r), KVC_EINVAL);
    assert_null(r);
    if (!strstr(kvc_last_error(), text)) fail_msg("create: message \"%s\" lacks \"%s\"", kvc_last_error(), text);
}

static void test_model_positions(void **state) {
    (void)state;
    kvc_model *m = fixture_model(SMALL, 5);
    kvc_runner_params p = params(30, 0);
    assert_int_equal(kvc_runner_check(m, &p, 1, 2), KVC_OK); /* 2 + 30 = 32 positions: the model's last */
    p = params(31, 0);
    expect_refused(m, &p, 2, "a prompt of 2 ids + 31 new tokens passes the model's max_position_embeddings 32");
    p = params(INT64_MAX, 0); /* no overflow on the way */
    expect_refused(m, &p, 2, "passes the model's max_position_embeddings 32 (max_positions overrides it)");
    kvc_model_destroy(m);
    m = fixture_model(GLM_DSA, 5); /* past index_topk (the indexer runs), up to max_position_embeddings */
    p = params(62, 0);
    assert_int_equal(kvc_runner_check(m, &p, 1, 2), KVC_OK);
    p = params(63, 0);
    expect_refused(m, &p, 2, "passes the model's max_position_embeddings 64 (max_positions overrides it)");
    kvc_model_destroy(m);
}

static void test_max_positions(void **state) {
    (void)state;
    kvc_model *m = fixture_model(SMALL, 5);
    kvc_runner_params p = params(19, 20);
    expect_refused(m, &p, 2, "a prompt of 2 ids + 19 new tokens passes max_positions 20");
    p = params(98, 100); /* in place of the model's 32 */
    assert_int_equal(kvc_runner_check(m, &p, 1, 2), KVC_OK);
    p = params(4, KVC_RUNNER_MAX_POSITIONS + 1);
    expect_refused(m, &p, 2, "max_positions 1048577 must be in [1, 1048576]");
    p = params(4, -1);
    expect_refused(m, &p, 2, "max_positions -1 must be in [1, 1048576]");
    kvc_model_destroy(m);
    m = fixture_model(LONG, 5);
    p = params(KVC_RUNNER_MAX_POSITIONS - 1, 0);
    expect_refused(m, &p, 2, "passes the runner's limit of 1048576 positions");
    kvc_model_destroy(m);
}

/* The dtype comparison refuses before it sizes its logits (a run of 600
 * steps would take them otherwise). */
static void test_compare_dtype_positions(void **state) {
    (void)state;
    kvc_model *m = fixture_model(SMALL, 5);
    const int32_t ids[] = {1, 2};
    const int64_t lens[] = {2};
    kvc_runner_params p = params(600, 0);
    kvc_dtype_compare c;
    assert_int_equal(kvc_runner_compare_dtype(m, &p, ids, lens, 1, KVC_DTYPE_F16, NULL, &c), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "a prompt of 2 ids + 600 new tokens passes the model's"));
    p = params(19, 20);
    assert_int_equal(kvc_runner_compare_dtype(m, &p, ids, lens, 1, KVC_DTYPE_F16, NULL, &c), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "passes max_positions 20"));
    p = params(2, 0);
    assert_int_equal(kvc_runner_compare_dtype(m, &p, ids, lens, 1, KVC_DTYPE_F16, NULL, &c), KVC_OK);
    assert_int_equal(c.tokens, 2);
    kvc_model_destroy(m);
}

/* batch and max_seq_len are bounded before create multiplies them (batch x max_seq_len and batch x
 * max_prompt_len overflowed int64: signed overflow, then sizes wrapped into small buffers). */
static void test_batch_and_seq_len_bounded(void **state) {
    (void)state;
    kvc_model *m = fixture_model(SMALL, 5);
    for (int mode = KVC_RUNNER_RECOMPUTE; mode <= KVC_RUNNER_PAGED; mode++) {
        kvc_runner_params p = params(2, 0);
        p.mode = (kvc_runner_mode)mode;
        kvc_runner *r = NULL;
        assert_int_equal(kvc_runner_create(m, &p, INT64_MAX, 4, &r), KVC_EINVAL);
        assert_null(r);
        assert_non_null(strstr(kvc_last_error(), "batch 9223372036854775807 must be at most 2^24"));
        p.max_seq_len = INT64_MAX;
        expect_refused(m, &p, 2, "max_seq_len 9223372036854775807 at most 1048576");
    }
    kvc_model_destroy(m);
}

static void test_block_size_and_layout(void **state) {
    (void)state;
    kvc_model *m = fixture_model(SMALL, 5);
    kvc_runner_params p = params(2, 0);
    p.cache.block_size = KVC_ATTN_MAX_BLOCK_SIZE;
    assert_int_equal(kvc_runner_check(m, &p, 1, 2), KVC_OK);
    p.cache.block_size = KVC_ATTN_MAX_BLOCK_SIZE + 1;
    expect_refused(m, &p, 2, "block_size 1025 must be in [1, 1024] in paged modes");
    p = params(2, 0);
    p.mode = KVC_RUNNER_RECOMPUTE, p.cache.kv_layout = KVC_BLOCK_BNNDBS;
    expect_refused(m, &p, 2, "kv_layout KVC_BLOCK_BNNDBS (keys in lanes) is not taken in mode 0");
    kvc_model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_positions), cmocka_unit_test(test_max_positions),
                                       cmocka_unit_test(test_compare_dtype_positions),
                                       cmocka_unit_test(test_block_size_and_layout),
                                       cmocka_unit_test(test_batch_and_seq_len_bounded)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
