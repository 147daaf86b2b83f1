/* The engine over the model runtime (kvc_engine_adapter), for each family
 * (random small configs and the Hugging Face oracle directories): block
 * sizes 1, 16 and 128 and the self-managed legacy path give the greedy
 * tokens of the runner and of transformers, with every logit bitwise equal
 * to the runner's paged mode (mode 2; MLA latent caches: mode 3) on the same
 * batch. */
#include <cjson/cJSON.h>
#include <omp.h>
#include <string.h>

#include "engine_models.h"

#define NT 8

static const int32_t IDS[] = {3,  17, 42, 9,  100, 5,  77, 63, 12, 1,   99, 31, 8,
                              45, 2,  60, 71, 33,  19, 88, 7,  14, 120, 4,  6,  50};
static const int64_t LENS[] = {13, 3, 10};

typedef struct em_case {
    const kvc_model *m;
    const int32_t *ids;
    const int64_t *lens;
    int64_t n, max_model_len;
    const int32_t *oracle; /* [n, NT] transformers' greedy ids, or NULL */
    const char *name;
} em_case;

static void expect_same(const em_case *c, const char *path, const int32_t *tok, const float *lg /* [n, NT, V] */,
                        const int32_t *ref_tok, const float *ref_lg /* [NT, n, V] */) {
    const int64_t V = kvc_model_config_of(c->m)->vocab_size;
    for (int64_t b = 0; b < c->n; b++)
        for (int64_t i = 0; i < NT; i++) {
            if (tok[b * NT + i] != ref_tok[b * NT + i])
                fail_msg("%s %s: request %lld token %lld is %d, runner %d", c->name, path, (long long)b, (long long)i,
                         tok[b * NT + i], ref_tok[b * NT + i]);
            if (c->oracle && tok[b * NT + i] != c->oracle[b * NT + i])
                fail_msg("%s %s: request %lld token %lld is %d, transformers %d", c->name, path, (long long)b,
                         (long long)i, tok[b * NT + i], c->oracle[b * NT + i]);
            if (memcmp(lg + (b * NT + i) * V, ref_lg + (i * c->n + b) * V, (size_t)V * sizeof(float)) != 0)
                fail_msg("%s %s: request %lld step %lld logits are not bitwise equal to the runner's", c->name, path,
                         (long long)b, (long long)i);
        }
}

/* Engine paths (managed bs 1/16/128, self-managed) against one runner mode. */
static void check_paths(const em_case *c, bool latent, kvc_runner_mode mode) {
    const int64_t V = kvc_model_config_of(c->m)->vocab_size, n = c->n;
    int32_t *ref_tok = calloc((size_t)(n * NT), sizeof *ref_tok), *tok = calloc((size_t)(n * NT), sizeof *tok);
    float *ref_lg = calloc((size_t)(n * NT * V), sizeof *ref_lg), *lg = calloc((size_t)(n * NT * V), sizeof *lg);
    assert_true(ref_tok && tok && ref_lg && lg);
    em_runner_run(c->m, mode, true, c->ids, c->lens, n, NT, ref_tok, ref_lg);
    static const int64_t sizes[3] = {1, 16, 128};
    char path[64];
    for (int i = 0; i < 4; i++) {
        kvc_engine_adapter_params ap = {
            .self_managed = i == 3, .latent = latent, .cache = {.block_size = i < 3 ? sizes[i] : 0}};
        if (i < 3)
            snprintf(path, sizeof path, "%s managed block size %lld", latent ? "latent" : "full", (long long)sizes[i]);
        else
            snprintf(path, sizeof path, "%s self-managed", latent ? "latent" : "full");
        memset(lg, 0, (size_t)(n * NT * V) * sizeof *lg);
        em_engine_run(c->m, &ap, c->max_model_len, c->ids, c->lens, n, NT, tok, lg);
        expect_same(c, path, tok, lg, ref_tok, ref_lg);
    }
    free(ref_tok);
    free(tok);
    free(ref_lg);
    free(lg);
}

static void check_case(const em_case *c) {
    check_paths(c, false, KVC_RUNNER_PAGED);
    if (kvc_model_config_of(c->m)->family == KVC_FAMILY_DEEPSEEK_V3) check_paths(c, true, KVC_RUNNER_MLA_LATENT);
}

static void random_family(const char *json, const char *name) {
    kvc_model *m = em_random_model(json, 99);
    em_case c = {.m = m, .ids = IDS, .lens = LENS, .n = 3, .max_model_len = 48, .name = name};
    check_case(&c);
    kvc_model_destroy(m);
}

static const char *const QWEN3_JSON =
    "{\"model_type\":\"qwen3\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
    "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"attention_bias\":true,\"max_position_embeddings\":512}";

static void test_random_qwen3(void **state) {
    (void)state;
    random_family(QWEN3_JSON, "qwen3 (random)");
}

static void test_random_gpt_oss(void **state) {
    (void)state;
    random_family(GPT_OSS_JSON, "gpt_oss (random)");
}

/* The adapter's step cost model (multiply-adds, docs/scheduler.md), counted
 * here by hand from the two configs above. */
static void expect_costs(const char *json, double token, double row, double context) {
    kvc_model *m = em_random_model(json, 5);
    kvc_engine_adapter_params ap = {.cache = {.block_size = 16}};
    kvc_engine_params ep = em_params(48, 3, 64);
    kvc_engine_adapter *a = NULL;
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &ep, &a), KVC_OK);
    const kvc_engine_model *em = kvc_engine_adapter_model(a);
    assert_true(em->cost_token == token && em->cost_row == row && em->cost_context == context);
    kvc_engine_adapter_destroy(a);
    kvc_model_destroy(m);
}

static void test_adapter_costs(void **state) {
    (void)state;
    /* Qwen3: per layer q, o 64 x 64, k, v 64 x 32, MLP 3 x 64 x 96; 2 layers; 4 heads x (16 + 16) per pair */
    expect_costs(QWEN3_JSON, 2.0 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 96), 64.0 * 128 + 128, 2.0 * 4 * 32);
    /* GptOss: router 64 x 8 + 2 experts x 3 x 64 x 32; layers 0 and 2 attend a window of 4 per token */
    expect_costs(GPT_OSS_JSON, 4.0 * (2 * 64 * 64 + 2 * 64 * 32 + 64 * 8 + 2 * 3 * 64 * 32) + 2.0 * 4 * 32 * 4,
                 64.0 * 128 + 128, 2.0 * 4 * 32);
    /* StarCoder2 (Qwen3's sizes): its ungated MLP is 2 x 64 x 96 */
    expect_costs("{\"model_type\":\"starcoder2\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
                 "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                 "\"max_position_embeddings\":512}",
                 2.0 * (2 * 64 * 64 + 2 * 64 * 32 + 2 * 64 * 96), 64.0 * 128 + 128, 2.0 * 4 * 32);
}

/* GPT-2 reads a table of n_positions learned positions: an engine of a longer max_model_len is refused at creation
 * (it was taken, and each request past the table failed its step) */
static void test_adapter_refuses_len_beyond_learned_positions(void **state) {
    (void)state;
    kvc_model *m = em_random_model("{\"model_type\":\"gpt2\",\"vocab_size\":128,\"n_embd\":64,\"n_layer\":1,"
                                   "\"n_head\":4,\"n_positions\":32}",
                                   5);
    kvc_engine_adapter_params ap = {.cache = {.block_size = 16}};
    kvc_engine_adapter *a = NULL;
    kvc_engine_params ep = em_params(33, 1, 8);
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &ep, &a), KVC_EINVAL);
    assert_null(a);
    assert_non_null(strstr(kvc_last_error(), "max_model_len 33 is beyond the 32 learned positions of gpt2"));
    ep = em_params(32, 1, 8);
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &ep, &a), KVC_OK);
    kvc_engine_adapter_destroy(a);
    kvc_model_destroy(m);
}

/* One adapter, one live engine, managed or self-managed: a second engine over it is refused (managed: it took the
 * adapter's caches, and the first engine's steps then wrote into the second's storage, freed with it;
 * self-managed: both ran their rows over the adapter's one set of legacy caches); once the first is destroyed, the
 * adapter serves a new one. */
static void test_adapter_one_engine(void **state) {
    (void)state;
    kvc_model *m = em_random_model(QWEN3_JSON, 5);
    for (int self_managed = 0; self_managed < 2; self_managed++) {
        kvc_engine_adapter_params ap = {.self_managed = self_managed, .cache = {.block_size = 16}};
        kvc_engine_params ep = em_params(48, 1, 64);
        kvc_engine_adapter *a = NULL;
        kvc_engine *e = NULL, *e2 = NULL;
        assert_int_equal(kvc_engine_adapter_create(m, &ap, &ep, &a), KVC_OK);
        assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &ep, &e), KVC_OK);
        assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &ep, &e2), KVC_EINVAL);
        assert_null(e2);
        assert_non_null(strstr(kvc_last_error(), "already serves a live engine"));
        assert_non_null(strstr(kvc_last_error(), self_managed ? "self-managed" : "managed"));
        kvc_engine_request r = kvc_engine_request_default();
        r.id = 1, r.prompt = IDS, r.n_prompt = 5, r.max_new_tokens = 2;
        kvc_engine_step_result res;
        assert_int_equal(kvc_engine_add_request(e, &r), KVC_OK);
        assert_int_equal(kvc_engine_step(e, &res), KVC_OK);
        kvc_engine_destroy(e);
        assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &ep, &e2), KVC_OK);
        assert_int_equal(kvc_engine_add_request(e2, &r), KVC_OK);
        assert_int_equal(kvc_engine_step(e2, &res), KVC_OK);
        /* the adapter destroyed before its engine (the reverse of the documented order): freed with the engine,
         * which steps on until then (it read the freed adapter's caches and description) */
        kvc_engine_adapter_destroy(a);
        r.id = 2;
        assert_int_equal(kvc_engine_add_request(e2, &r), KVC_OK);
        assert_int_equal(kvc_engine_step(e2, &res), KVC_OK);
        kvc_engine_destroy(e2);
    }
    kvc_model_destroy(m);
}

static void test_random_deepseek_v3(void **state) {
    (void)state;
    random_family("{\"model_type\":\"deepseek_v3\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
                  "\"moe_intermediate_size\":32,\"num_hidden_layers\":3,\"first_k_dense_replace\":1,"
                  "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"q_lora_rank\":32,\"kv_lora_rank\":24,"
                  "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":12,\"n_routed_experts\":8,"
                  "\"n_group\":2,\"topk_group\":1,\"num_experts_per_tok\":2,\"n_shared_experts\":1,"
                  "\"routed_scaling_factor\":2.5,\"max_position_embeddings\":4096}",
                  "deepseek_v3 (random)");
}

/* ---- oracle directories (tests/data/oracle, README there) ---- */

static void oracle_family(const char *sub) {
    char dir[1024], path[1100];
    kvc_test_oracle_dir(sub, dir, sizeof dir);
    kvc_model *m = NULL;
    if (kvc_model_load(dir, &m) != KVC_OK) fail_msg("load %s: %s", dir, kvc_last_error());
    snprintf(path, sizeof path, "%s/expected.json", dir);
    char *text = kvc_test_read_text(path);
    cJSON *exp = cJSON_Parse(text);
    free(text);
    assert_non_null(exp);
    assert_int_equal(cJSON_GetObjectItem(exp, "num_new_tokens")->valueint, NT);
    int32_t ids[256], greedy[4 * NT];
    int64_t lens[4], n = 0, t = 0;
    const cJSON *p, *x;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(exp, "prompts")) {
        assert_true(n < 4);
        lens[n] = 0;
        cJSON_ArrayForEach(x, cJSON_GetObjectItem(p, "ids")) {
            assert_true(t < 256);
            ids[t++] = x->valueint;
            lens[n]++;
        }
        int64_t i = 0;
        cJSON_ArrayForEach(x, cJSON_GetObjectItem(p, "greedy_ids")) {
            assert_true(i < NT);
            greedy[n * NT + i++] = x->valueint;
        }
        assert_int_equal(i, NT);
        n++;
    }
    cJSON_Delete(exp);
    em_case c = {.m = m, .ids = ids, .lens = lens, .n = n, .max_model_len = 48, .oracle = greedy, .name = sub};
    check_case(&c);
    kvc_model_destroy(m);
}

static void test_oracle_qwen3(void **state) {
    (void)state;
    oracle_family("qwen3");
}

static void test_oracle_gpt_oss(void **state) {
    (void)state;
    oracle_family("gpt_oss");
}

static void test_oracle_deepseek_v3(void **state) {
    (void)state;
    oracle_family("deepseek_v3");
}

/* the softmax-routed MoE families */
static void test_oracle_moe(void **state) {
    (void)state;
    oracle_family("qwen3_moe");
    oracle_family("mixtral");
    oracle_family("qwen2_moe");
}

/* Gemma 3: sliding and full layers with their own ropes */
static void test_oracle_gemma3(void **state) {
    (void)state;
    oracle_family("gemma3");
}

/* Phi-3: fused weights, a window of 8; Phi-4-mini-like partial rotary and longrope (max_model_len 48, within
 * original_max_position_embeddings 64: the short factors, as transformers) */
static void test_oracle_phi3(void **state) {
    (void)state;
    oracle_family("phi3");
    oracle_family("phi3_longrope");
}

/* OLMo 2: post-norm blocks, q / k norms over the whole projection; OLMo 3: with sliding layers of their own rope;
 * Granite: its four multipliers; SmolLM3: a layer without rope; Gemma (1): 1 + w norms, GeGLU */
static void test_oracle_dense_more(void **state) {
    (void)state;
    oracle_family("olmo2");
    oracle_family("olmo3");
    oracle_family("granite");
    oracle_family("smollm3");
    oracle_family("gemma");
}

/* GLM-4: sandwich norms, fused gate_up_proj, partial pairwise RoPE; Cohere: LayerNorm, parallel blocks, logit
 * scale; Cohere 2: with sliding layers and unrotated full ones */
static void test_oracle_glm4_cohere(void **state) {
    (void)state;
    oracle_family("glm4");
    oracle_family("cohere");
    oracle_family("cohere2");
}

/* GLM, Seed-OSS, EXAONE 4.0, StarCoder2 (LayerNorm biases, ungated MLP), Ministral and Ministral 3 (the query
 * scale by position): the engine's greedy ids are the oracle's */
static void test_oracle_glm_to_ministral3(void **state) {
    (void)state;
    static const char *const families[] = {"glm", "seed_oss", "exaone4", "starcoder2", "ministral", "ministral3"};
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) oracle_family(families[i]);
}

/* OLMoE (q/k clamped after whole-projection norms), Granite MoE and Shared (top-k softmax, fused experts, shared
 * MLP) and GLM-4.5 (DeepSeek-V3's router over GQA): the engine's greedy ids are the oracle's */
static void test_oracle_olmoe_to_glm4_moe(void **state) {
    (void)state;
    static const char *const families[] = {"olmoe", "granitemoe", "granitemoeshared", "glm4_moe"};
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) oracle_family(families[i]);
}

/* Llama 4: chunked local attention of 8 positions, whose manager releases the blocks before each query's chunk
 * (block size 1: every position before it; 16 and 128: none, the chunk inside one block), a NoPE layer, the
 * sigmoid-routed MoE */
static void test_oracle_llama4(void **state) {
    (void)state;
    oracle_family("llama4");
}

int main(void) {
    omp_set_num_threads(1); /* tiny models: the attention threads would only oversubscribe */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_qwen3),       cmocka_unit_test(test_random_gpt_oss),
        cmocka_unit_test(test_random_deepseek_v3), cmocka_unit_test(test_oracle_qwen3),
        cmocka_unit_test(test_oracle_gpt_oss),     cmocka_unit_test(test_oracle_deepseek_v3),
        cmocka_unit_test(test_oracle_moe),         cmocka_unit_test(test_oracle_gemma3),
        cmocka_unit_test(test_oracle_phi3),        cmocka_unit_test(test_oracle_dense_more),
        cmocka_unit_test(test_oracle_glm4_cohere), cmocka_unit_test(test_oracle_glm_to_ministral3),
        cmocka_unit_test(test_adapter_costs),      cmocka_unit_test(test_oracle_olmoe_to_glm4_moe),
        cmocka_unit_test(test_oracle_llama4),      cmocka_unit_test(test_adapter_refuses_len_beyond_learned_positions),
        cmocka_unit_test(test_adapter_one_engine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
