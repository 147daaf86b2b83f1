/* kvcache plan: the analyzer on the public config.json of real models (JSON
 * output per layer, per-rank cache shapes at tp 1 and 8, bytes per token,
 * block numbers for a fixed budget), cross-checked against kvc_plan_blocks
 * on cache descriptions built here independently; plus malformed configs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "cmd_plan.h"
#include "kvc_test_util.h"
#include "kvcache/kvcache.h"

#define BUDGET 17179869184LL /* 16 GiB for every cache */
#define CONC   4             /* requests at once */

static char *read_config(const char *name, size_t *len) {
    const char *dir = getenv("KVC_DATA_DIR");
    assert_non_null(dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/%s", dir, name);
    char *buf = kvc_test_read_text(path);
    *len = strlen(buf);
    return buf;
}

static kvc_plan_options budget_options(int64_t tp) {
    kvc_plan_options o = kvc_plan_default_options();
    o.tp = tp;
    o.kv_dtype_set = true;
    o.kv_dtype = KVC_DTYPE_BF16;
    o.max_concurrency = CONC;
    o.kv_memory_bytes = BUDGET;
    return o;
}

/* Plans a shipped config and returns its JSON document, parsed. */
static cJSON *plan_json(const char *name, const kvc_plan_options *o, kvc_model_plan **plan_out) {
    size_t len = 0;
    char *text = read_config(name, &len);
    kvc_model_plan *plan = NULL;
    kvc_status st = kvc_model_plan_create(text, len, o, &plan);
    free(text);
    if (st != KVC_OK) fail_msg("%s: %s", name, kvc_last_error());
    char *doc = NULL;
    assert_int_equal(kvc_model_plan_to_json(plan, &doc), KVC_OK);
    cJSON *root = cJSON_Parse(doc);
    kvc_plan_json_free(doc);
    assert_non_null(root);
    if (plan_out != NULL)
        *plan_out = plan;
    else
        kvc_model_plan_destroy(plan);
    return root;
}

static double num(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v)) fail_msg("field %s is not a number", name);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsString(v)) fail_msg("field %s is not a string", name);
    return v->valuestring;
}

static bool flag(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsBool(v)) fail_msg("field %s is not a boolean", name);
    return cJSON_IsTrue(v);
}

static bool is_null(const cJSON *o, const char *name) {
    return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* ---- an independent cache description ------------------------------------- */

enum { T_FULL, T_SW };

typedef struct ref_model {
    int n_layers;
    int types[128]; /* T_FULL / T_SW per layer */
    int64_t window; /* keys of a window layer */
    int64_t heads;  /* KV heads per rank */
    int64_t dim;    /* K and V dim (GQA) */
    bool mla;
    int64_t nope, rope;
} ref_model;

typedef struct ref_desc {
    kvc_layer_cache_info layers[128];
    kvc_cache_entry entries[256];
    kvc_model_cache_info ci;
} ref_desc;

static void ref_entry(kvc_cache_entry *e, const char *name, int type, int64_t heads, int64_t dim, int64_t window) {
    *e = kvc_cache_entry_default();
    snprintf(e->name, sizeof e->name, "%s", name);
    e->attn_type = type == T_SW ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_FULL;
    e->num_head = heads;
    e->n_dims = 1;
    e->dim[0] = dim;
    e->dtype = KVC_DTYPE_BF16;
    e->needs_block = true;
    e->block_size = 128;
    if (type == T_SW) e->sliding_window = window;
}

static void ref_build(const ref_model *m, ref_desc *d) {
    for (int i = 0; i < m->n_layers; i++) {
        kvc_cache_entry *e = &d->entries[2 * i];
        if (m->mla) {
            ref_entry(&e[0], "nope_cache", T_FULL, 1, m->nope, 0);
            ref_entry(&e[1], "rope_cache", T_FULL, 1, m->rope, 0);
        } else {
            ref_entry(&e[0], "k_cache", m->types[i], m->heads, m->dim, m->window);
            ref_entry(&e[1], "v_cache", m->types[i], m->heads, m->dim, m->window);
        }
        d->layers[i] = (kvc_layer_cache_info){.layer_idx = i, .n_caches = 2, .caches = e};
    }
    d->ci = (kvc_model_cache_info){
        .num_layers = m->n_layers, .n_layer_infos = m->n_layers, .layer_infos = d->layers, .is_mla_backend = m->mla};
}

/* The document's numbers equal the planner's answer for the reference description. */
static void check_numbers_against_planner(const cJSON *doc, const ref_model *m) {
    ref_desc *d = calloc(1, sizeof *d);
    assert_non_null(d);
    ref_build(m, d);
    kvc_plan_params pp = kvc_plan_default_params();
    pp.mode = KVC_PLAN_BUDGET;
    pp.kv_memory_bytes = BUDGET;
    pp.max_concurrency = CONC;
    pp.shared_pools = true; /* as kvcache plan and the engine plan them */
    kvc_block_plan bp;
    if (kvc_plan_blocks(&pp, &d->ci, &bp) != KVC_OK) fail_msg("reference plan: %s", kvc_last_error());
    assert_int_equal((int64_t)num(doc, "bytes_per_token"), bp.per_token_bytes);
    assert_int_equal((int64_t)num(doc, "fixed_bytes"), bp.fixed_bytes);
    assert_int_equal((int64_t)num(doc, "max_tokens"), bp.max_tokens);
    assert_int_equal((int64_t)num(doc, "total_bytes"), bp.total_bytes);
    const cJSON *bn = cJSON_GetObjectItemCaseSensitive(doc, "block_num");
    assert_int_equal(cJSON_GetArraySize(bn), bp.n_groups);
    for (int32_t g = 0; g < bp.n_groups; g++)
        assert_int_equal((int64_t)num(bn, bp.groups[g].key), bp.groups[g].block_num);
    free(d);
}

/* Every layer of the document: type, window, masks, caches per rank. */
static void check_layers(const cJSON *doc, const ref_model *m, const char *layout) {
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
    assert_int_equal(cJSON_GetArraySize(layers), m->n_layers);
    bool mla_absorb = strcmp(layout, "TND_NTD") == 0;
    for (int i = 0; i < m->n_layers; i++) {
        const cJSON *L = cJSON_GetArrayItem(layers, i);
        assert_int_equal((int)num(L, "layer"), i);
        const cJSON *sm = cJSON_GetObjectItemCaseSensitive(L, "sparse_mode");
        if (m->types[i] == T_SW) {
            assert_string_equal(str(L, "attn_type"), "SlidingWindow");
            assert_int_equal((int64_t)num(L, "sliding_window"), m->window);
            assert_int_equal((int)num(sm, "prefill"), 4);
            assert_int_equal((int)num(sm, "decode"), 4);
            assert_int_equal((int64_t)num(L, "pre_tokens"), m->window - 1);
            assert_int_equal((int64_t)num(L, "next_tokens"), 0);
        } else {
            assert_string_equal(str(L, "attn_type"), "FullAttention");
            assert_true(is_null(L, "sliding_window"));
            assert_int_equal((int)num(sm, "prefill"), 3);
            assert_int_equal((int)num(sm, "decode"), mla_absorb ? 0 : 3);
            assert_true(is_null(L, "pre_tokens"));
            assert_true(is_null(L, "next_tokens"));
        }
        const cJSON *caches = cJSON_GetObjectItemCaseSensitive(L, "caches");
        assert_int_equal(cJSON_GetArraySize(caches), 2);
        const cJSON *c0 = cJSON_GetArrayItem(caches, 0), *c1 = cJSON_GetArrayItem(caches, 1);
        if (m->mla) {
            assert_string_equal(str(c0, "name"), "nope_cache");
            assert_string_equal(str(c1, "name"), "rope_cache");
            assert_int_equal((int64_t)num(c0, "num_head"), 1);
            assert_int_equal((int64_t)num(c1, "num_head"), 1);
            assert_int_equal((int64_t)num(c0, "dim"), m->nope);
            assert_int_equal((int64_t)num(c1, "dim"), m->rope);
            assert_int_equal((int64_t)num(c0, "bytes_per_token"), m->nope * 2);
            assert_int_equal((int64_t)num(c1, "bytes_per_token"), m->rope * 2);
        } else {
            assert_string_equal(str(c0, "name"), "k_cache");
            assert_string_equal(str(c1, "name"), "v_cache");
            for (int k = 0; k < 2; k++) {
                const cJSON *c = cJSON_GetArrayItem(caches, k);
                assert_int_equal((int64_t)num(c, "num_head"), m->heads);
                assert_int_equal((int64_t)num(c, "dim"), m->dim);
                assert_string_equal(str(c, "dtype"), "bf16");
                assert_int_equal((int64_t)num(c, "bytes_per_token"), m->heads * m->dim * 2);
            }
        }
    }
}

static void check_header(const cJSON *doc, const char *arch, const char *layout, bool mla_absorb, bool hybrid,
                         double scale) {
    assert_string_equal(str(doc, "architecture"), arch);
    assert_string_equal(str(doc, "kv_mode"), "paged");
    assert_true(is_null(doc, "reason"));
    assert_int_equal((int)num(doc, "fa_version"), 2);
    assert_true(strlen(str(doc, "fa_version_reason")) > 0);
    assert_string_equal(str(doc, "input_layout"), layout);
    assert_int_equal(flag(doc, "mla_absorb"), mla_absorb);
    assert_int_equal(flag(doc, "hybrid"), hybrid);
    assert_true(fabs(num(doc, "scale") - scale) < 1e-7);
}

static void full_model(ref_model *m, int n_layers) {
    memset(m, 0, sizeof *m);
    m->n_layers = n_layers;
}

static void alternating(ref_model *m, int n_layers, int64_t window) {
    full_model(m, n_layers);
    m->window = window;
    for (int i = 0; i < n_layers; i++) m->types[i] = i % 2 == 0 ? T_SW : T_FULL;
}

/* One GQA model at tp 1 and tp 8: header, layers, numbers, literal expectations. */
static void check_gqa(const char *file, const char *arch, ref_model *m, int64_t kv_heads, double scale,
                      const int64_t per_token[2], const int64_t blocks_full[2], bool hybrid) {
    const int64_t tps[2] = {1, 8};
    for (int t = 0; t < 2; t++) {
        kvc_plan_options o = budget_options(tps[t]);
        cJSON *doc = plan_json(file, &o, NULL);
        m->heads = kv_heads / tps[t] > 1 ? kv_heads / tps[t] : 1;
        check_header(doc, arch, "TND", false, hybrid, scale);
        check_layers(doc, m, "TND");
        assert_int_equal((int64_t)num(doc, "bytes_per_token"), per_token[t]);
        const cJSON *bn = cJSON_GetObjectItemCaseSensitive(doc, "block_num");
        assert_int_equal((int64_t)num(bn, "FullAttention"), blocks_full[t]);
        check_numbers_against_planner(doc, m);
        cJSON_Delete(doc);
    }
}

static void test_llama_3_1_8b(void **state) {
    (void)state;
    ref_model m;
    full_model(&m, 32);
    m.dim = 128;
    /* 32 layers x (K + V) x 8 heads x 128 x 2 B; tp 8 leaves one head. 16 GiB / bytes, then / 128. */
    const int64_t per_token[2] = {131072, 16384}, blocks[2] = {1024, 8192};
    check_gqa("Llama-3.1-8B.json", "LlamaForCausalLM", &m, 8, 1.0 / sqrt(128.0), per_token, blocks, false);
    kvc_plan_options o = budget_options(1);
    cJSON *doc = plan_json("Llama-3.1-8B.json", &o, NULL);
    const cJSON *rope = cJSON_GetObjectItemCaseSensitive(doc, "rope");
    assert_string_equal(str(rope, "type"), "llama3");
    assert_true(num(rope, "factor") == 8.0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "warnings")), 0);
    cJSON_Delete(doc);
}

static void test_qwen3_8b(void **state) {
    (void)state;
    ref_model m;
    full_model(&m, 36);
    m.dim = 128;
    const int64_t per_token[2] = {147456, 18432}, blocks[2] = {910, 7281};
    check_gqa("Qwen3-8B.json", "Qwen3ForCausalLM", &m, 8, 1.0 / sqrt(128.0), per_token, blocks, false);
}

static void test_qwen3_30b_a3b(void **state) {
    (void)state;
    ref_model m;
    full_model(&m, 48);
    m.dim = 128;
    /* 4 KV heads: tp 8 replicates them, one head per rank. */
    const int64_t per_token[2] = {98304, 24576}, blocks[2] = {1365, 5461};
    check_gqa("Qwen3-30B-A3B.json", "Qwen3MoeForCausalLM", &m, 4, 1.0 / sqrt(128.0), per_token, blocks, false);
}

static void test_gpt_oss_20b(void **state) {
    (void)state;
    ref_model m;
    alternating(&m, 24, 128);
    m.dim = 64;
    /* 12 full and 12 window layers of equal pages: one pool of the whole
     * budget, 16 GiB / 24576 B per token / 128 (tp 8: / 3072 B) blocks. */
    const int64_t per_token[2] = {24576, 3072}, blocks[2] = {5461, 43690};
    check_gqa("gpt-oss-20b.json", "GptOssForCausalLM", &m, 8, 0.125, per_token, blocks, true);
    kvc_plan_options o = budget_options(1);
    cJSON *doc = plan_json("gpt-oss-20b.json", &o, NULL);
    assert_true(flag(doc, "sinks"));
    assert_int_equal((int64_t)num(cJSON_GetObjectItemCaseSensitive(doc, "block_num"), "SlidingWindow"), 5461);
    assert_int_equal((int64_t)num(doc, "fixed_bytes"), 0); /* nothing set aside per sequence for the window */
    const cJSON *managers = cJSON_GetObjectItemCaseSensitive(doc, "managers");
    assert_int_equal(cJSON_GetArraySize(managers), 2); /* both keys name the one shared pool */
    assert_true(num(cJSON_GetArrayItem(managers, 0), "pool_id") > 0);
    assert_true(num(cJSON_GetArrayItem(managers, 0), "pool_id") == num(cJSON_GetArrayItem(managers, 1), "pool_id"));
    for (int k = 0; k < 2; k++) { /* each key's block size and page: 128 x 8 heads x 64 x bf16 */
        assert_int_equal((int64_t)num(cJSON_GetArrayItem(managers, k), "block_size"), 128);
        assert_int_equal((int64_t)num(cJSON_GetArrayItem(managers, k), "page_bytes"), 128 * 8 * 64 * 2);
    }
    assert_true(is_null(doc, "state_padding"));
    const cJSON *rope = cJSON_GetObjectItemCaseSensitive(doc, "rope");
    assert_string_equal(str(rope, "type"), "yarn");
    assert_true(fabs(num(rope, "attention_factor") - (0.1 * log(32.0) + 1.0)) < 1e-9);
    cJSON_Delete(doc);
}

static void test_gemma_2_9b(void **state) {
    (void)state;
    ref_model m;
    alternating(&m, 42, 4096);
    m.dim = 256;
    /* Scale from query_pre_attn_scalar 256; 21 window layers sharing the full layers' pool. */
    const int64_t per_token[2] = {172032, 21504}, blocks[2] = {780, 6241};
    check_gqa("gemma-2-9b-it.json", "Gemma2ForCausalLM", &m, 8, 0.0625, per_token, blocks, true);
    kvc_plan_options o = budget_options(1);
    cJSON *doc = plan_json("gemma-2-9b-it.json", &o, NULL);
    assert_int_equal((int64_t)num(doc, "fixed_bytes"), 0);
    /* soft-capping is the operator's logit_softcap now: a parameter, no warning */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "warnings")), 0);
    assert_true(num(doc, "logit_softcap") == 50.0);
    cJSON_Delete(doc);
}

static void test_deepseek_mla(void **state) {
    (void)state;
    ref_model m;
    full_model(&m, 61);
    m.mla = true;
    m.nope = 512;
    m.rope = 64;
    const double scale = pow(192.0, -0.5) * pow(0.1 * log(40.0) + 1.0, 2.0); /* 0.1352338 */
    const int64_t tps[2] = {1, 8};
    for (int t = 0; t < 2; t++) {
        kvc_plan_options o = budget_options(tps[t]);
        cJSON *doc = plan_json("DeepSeek-R1.json", &o, NULL);
        check_header(doc, "DeepseekV3ForCausalLM", "TND_NTD", true, false, scale);
        assert_true(fabs(num(doc, "scale") - 0.1352338) < 1e-6);
        check_layers(doc, &m, "TND_NTD"); /* latent never split: same at tp 8 */
        assert_int_equal((int64_t)num(doc, "bytes_per_token"), 70272);
        assert_int_equal((int64_t)num(cJSON_GetObjectItemCaseSensitive(doc, "block_num"), "FullAttention"), 1909);
        assert_int_equal((int64_t)num(cJSON_GetObjectItemCaseSensitive(doc, "heads"), "q_heads_per_rank"),
                         128 / tps[t]);
        check_numbers_against_planner(doc, &m);
        cJSON_Delete(doc);
    }
    /* Speculative decode: the absorbed path switches to mode 3; int8 latent keeps a bf16 rope cache. */
    kvc_plan_options o = budget_options(1);
    o.next_n = 1;
    o.kv_dtype = KVC_DTYPE_I8;
    kvc_model_plan *plan = NULL;
    cJSON *doc = plan_json("DeepSeek-R1.json", &o, &plan);
    assert_int_equal(plan->layers[0].sparse_decode, 3);
    assert_int_equal(plan->layers[0].caches[0].dtype, KVC_DTYPE_I8);
    assert_int_equal(plan->layers[0].caches[1].dtype, KVC_DTYPE_BF16);
    assert_int_equal(plan->blocks.per_token_bytes, 61 * (512 + 128));
    assert_true(plan->cache_info.is_mla_backend);
    kvc_model_plan_destroy(plan);
    cJSON_Delete(doc);
}

static void test_model_wide_windows(void **state) {
    (void)state;
    /* Mistral 4096 and Phi-3 2047: every layer a window layer, only fixed caches. */
    const struct {
        const char *file;
        int n;
        int64_t w, heads, dim, per_block_tp1;
    } cases[] = {
        {"Mistral-7B-v0.1.json", 32, 4096, 8, 128, 32LL * 2 * 128 * 8 * 128 * 2},
        {"Phi-3-mini-4k-instruct.json", 32, 2047, 32, 96, 32LL * 2 * 128 * 32 * 96 * 2},
    };
    for (size_t k = 0; k < 2; k++) {
        ref_model m;
        full_model(&m, cases[k].n);
        m.window = cases[k].w;
        m.dim = cases[k].dim;
        for (int i = 0; i < m.n_layers; i++) m.types[i] = T_SW;
        const int64_t tps[2] = {1, 8};
        for (int t = 0; t < 2; t++) {
            kvc_plan_options o = budget_options(tps[t]);
            cJSON *doc = plan_json(cases[k].file, &o, NULL);
            m.heads = cases[k].heads / tps[t];
            check_layers(doc, &m, "TND");
            assert_false(flag(doc, "hybrid"));
            int64_t fixed_blocks = CONC * ((cases[k].w + 127) / 128 + 1) + 1;
            assert_int_equal((int64_t)num(cJSON_GetObjectItemCaseSensitive(doc, "block_num"), "SlidingWindow"),
                             fixed_blocks);
            assert_int_equal((int64_t)num(doc, "fixed_bytes"), fixed_blocks * cases[k].per_block_tp1 / tps[t]);
            assert_int_equal((int64_t)num(doc, "bytes_per_token"), 0);
            check_numbers_against_planner(doc, &m);
            cJSON_Delete(doc);
        }
    }
}

static void test_offline_sizing(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    o.max_model_len = 4096 + 2048 + 1;
    o.max_concurrency = 16;
    kvc_model_plan *plan = NULL;
    cJSON *doc = plan_json("Qwen3-8B.json", &o, &plan);
    /* KM 6.3: cdiv(6145, 128) = 49 -> 49 * 16 + 1 = 785 blocks. */
    assert_int_equal((int64_t)num(cJSON_GetObjectItemCaseSensitive(doc, "block_num"), "FullAttention"), 785);
    assert_int_equal((int64_t)num(doc, "max_tokens"), 6145 * 16);
    assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(doc, "sizing"), "mode"), "offline");
    assert_string_equal(str(doc, "kv_dtype"), "bf16"); /* from torch_dtype */
    kvc_block_plan again;
    assert_int_equal(kvc_plan_blocks(&plan->plan_params, &plan->cache_info, &again), KVC_OK);
    assert_int_equal(again.groups[0].block_num, 785);
    kvc_model_plan_destroy(plan);
    cJSON_Delete(doc);
}

static void test_legacy_and_dtype(void **state) {
    (void)state;
    kvc_plan_options o = budget_options(1);
    o.block_size = 100; /* not a multiple of 16: no paged operator path */
    cJSON *doc = plan_json("Llama-3.1-8B.json", &o, NULL);
    assert_string_equal(str(doc, "kv_mode"), "legacy");
    assert_non_null(strstr(str(doc, "reason"), "block_size 100"));
    assert_int_equal((int)num(doc, "fa_version"), 1);
    assert_string_equal(str(doc, "input_layout"), "BSH");
    const cJSON *L0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "layers"), 0);
    const cJSON *sm = cJSON_GetObjectItemCaseSensitive(L0, "sparse_mode");
    assert_int_equal((int)num(sm, "prefill"), 3);
    assert_int_equal((int)num(sm, "decode"), 0);
    cJSON_Delete(doc);

    o = budget_options(1);
    o.kv_dtype = KVC_DTYPE_I8;
    doc = plan_json("Llama-3.1-8B.json", &o, NULL);
    assert_int_equal((int64_t)num(doc, "bytes_per_token"), 65536);
    cJSON_Delete(doc);
}

/* A hybrid linear-attention model (synthetic config of the Qwen3-Next shape). */
static const char HYBRID[] =
    "{\"architectures\": [\"Qwen3NextForCausalLM\"], \"model_type\": \"qwen3_next\", \"num_hidden_layers\": 4,"
    " \"num_attention_heads\": 16, \"num_key_value_heads\": 2, \"head_dim\": 256, \"hidden_size\": 2048,"
    " \"max_position_embeddings\": 8192, \"torch_dtype\": \"bfloat16\","
    " \"layer_types\": [\"linear_attention\", \"linear_attention\", \"linear_attention\", \"full_attention\"],"
    " \"linear_num_key_heads\": 16, \"linear_num_value_heads\": 32, \"linear_key_head_dim\": 128,"
    " \"linear_value_head_dim\": 128, \"linear_conv_kernel_dim\": 4}";

/* Qwen3.5-MoE's multimodal wrapper: the text model under text_config planned (no layer_types: every 4th layer full),
 * Qwen3_5MoeTextConfig's 2 KV heads of 256 and Gated DeltaNet state shapes (kernel 4 when absent). */
static void test_qwen3_5_moe_wrapper_plan(void **state) {
    (void)state;
    static const char CFG[] =
        "{\"architectures\": [\"Qwen3_5MoeForConditionalGeneration\"], \"model_type\": \"qwen3_5_moe\","
        " \"text_config\": {\"model_type\": \"qwen3_5_moe_text\", \"num_hidden_layers\": 8,"
        " \"num_attention_heads\": 16, \"hidden_size\": 2048, \"linear_num_key_heads\": 16,"
        " \"linear_num_value_heads\": 32, \"linear_key_head_dim\": 128, \"linear_value_head_dim\": 128,"
        " \"max_position_embeddings\": 8192}}";
    kvc_plan_options o = budget_options(1);
    kvc_model_plan *plan = NULL;
    assert_int_equal(kvc_model_plan_create(CFG, sizeof CFG - 1, &o, &plan), KVC_OK);
    for (int i = 0; i < 8; i++) {
        const kvc_plan_layer *L = &plan->layers[i];
        assert_int_equal(L->attn_type, (i + 1) % 4 == 0 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
        if (L->attn_type != KVC_ATTN_MAMBA) continue;
        assert_int_equal(L->caches[0].shape[0], 2 * 16 * 128 + 32 * 128); /* q | k | v conv channels */
        assert_int_equal(L->caches[0].shape[1], 3);
        assert_int_equal(L->caches[1].shape[0], 32);
    }
    assert_int_equal(plan->blocks.per_token_bytes,
                     2 * 2 * 2 * 256 * 2); /* layers 3 and 7: bf16 K and V, 2 KV heads of 256 */
    kvc_model_plan_destroy(plan);
}

/* K-EXAONE (exaone_moe) without layer_types or a window: ExaoneMoeConfig's window of 4096 on three layers of four
 * (sliding_window_pattern 4), the fourth full. */
static void test_exaone_moe_plan(void **state) {
    (void)state;
    static const char CFG[] = "{\"architectures\": [\"ExaoneMoeForCausalLM\"], \"model_type\": \"exaone_moe\","
                              " \"num_hidden_layers\": 8, \"num_attention_heads\": 64, \"num_key_value_heads\": 8,"
                              " \"hidden_size\": 6144, \"head_dim\": 128, \"max_position_embeddings\": 8192}";
    kvc_plan_options o = budget_options(1);
    kvc_model_plan *plan = NULL;
    assert_int_equal(kvc_model_plan_create(CFG, sizeof CFG - 1, &o, &plan), KVC_OK);
    for (int i = 0; i < 8; i++) {
        const bool full = (i + 1) % 4 == 0;
        assert_int_equal(plan->layers[i].attn_type, full ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW);
        assert_int_equal(plan->layers[i].sliding_window, full ? 0 : 4096);
    }
    kvc_model_plan_destroy(plan);
}

/* The text models of multimodal wrappers by their classes' defaults: Emu3's (text_config emu3_text_model) 8 KV heads
 * of hidden_size / heads when the key is missing, Aria's as many KV heads as heads, Phi-4-multimodal's 8 KV heads and
 * its window on every layer; each planned under its plan name (Phi-4-multimodal's: phi3). */
static void test_multimodal_text_plans(void **state) {
    (void)state;
    static const char *const CFG[3] = {
        "{\"architectures\": [\"Emu3ForConditionalGeneration\"], \"model_type\": \"emu3\", \"text_config\": "
        "{\"model_type\": \"emu3_text_model\", \"num_hidden_layers\": 2, \"num_attention_heads\": 32, "
        "\"hidden_size\": 4096, \"max_position_embeddings\": 9216}}",
        "{\"architectures\": [\"AriaForConditionalGeneration\"], \"model_type\": \"aria\", \"text_config\": "
        "{\"model_type\": \"aria_text\", \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
        "\"hidden_size\": 1024, \"max_position_embeddings\": 8192}}",
        "{\"architectures\": [\"Phi4MultimodalForCausalLM\"], \"model_type\": \"phi4_multimodal\", "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 24, \"hidden_size\": 3072, \"sliding_window\": 2048, "
        "\"max_position_embeddings\": 8192}"};
    static const char *const FAMILY[3] = {"emu3", "aria", "phi3"};
    const int64_t kv_heads[3] = {8, 16, 8}, head_dim[3] = {128, 64, 128}, window[3] = {0, 0, 2048};
    kvc_plan_options o = budget_options(1);
    for (int t = 0; t < 3; t++) {
        kvc_model_plan *plan = NULL;
        if (kvc_model_plan_create(CFG[t], strlen(CFG[t]), &o, &plan) != KVC_OK) fail_msg("%s", kvc_last_error());
        assert_string_equal(plan->family, FAMILY[t]);
        for (int l = 0; l < 2; l++) {
            assert_int_equal(plan->layers[l].attn_type, window[t] ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_FULL);
            assert_int_equal(plan->layers[l].sliding_window, window[t]);
            assert_int_equal(plan->layers[l].caches[0].bytes_per_token, kv_heads[t] * head_dim[t] * 2); /* bf16 K */
        }
        /* the full-attention caches' bytes per token (the window caches' are fixed bytes) */
        assert_int_equal(plan->blocks.per_token_bytes, window[t] ? 0 : 2 * 2 * kv_heads[t] * head_dim[t] * 2);
        kvc_model_plan_destroy(plan);
    }
    /* llava-1.5's text_config names the Llama type and its length only: LlamaConfig's 32 layers, 32 heads (as many
     * KV heads) and hidden 4096, as transformers builds it (was refused: num_hidden_layers is missing); a top-level
     * Llama config still names its sizes */
    static const char llava[] = "{\"architectures\": [\"LlavaForConditionalGeneration\"], \"model_type\": \"llava\","
                                " \"text_config\": {\"model_type\": \"llama\", \"max_position_embeddings\": 4096}}";
    kvc_model_plan *p = NULL;
    assert_int_equal(kvc_model_plan_create(llava, sizeof llava - 1, &o, &p), KVC_OK);
    assert_true(p->n_layers == 32 && p->num_attention_heads == 32 && p->num_key_value_heads == 32);
    assert_int_equal(p->head_dim, 128);
    kvc_model_plan_destroy(p);
    static const char llama[] = "{\"model_type\": \"llama\", \"max_position_embeddings\": 4096}";
    assert_int_equal(kvc_model_plan_create(llama, sizeof llama - 1, &o, &p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "num_hidden_layers is missing"));
}

static void test_hybrid_state_layers(void **state) {
    (void)state;
    kvc_plan_options o = budget_options(2);
    o.next_n = 1;
    kvc_model_plan *plan = NULL;
    assert_int_equal(kvc_model_plan_create(HYBRID, sizeof HYBRID - 1, &o, &plan), KVC_OK);
    assert_true(plan->hybrid);
    for (int i = 0; i < 3; i++) {
        const kvc_plan_layer *L = &plan->layers[i];
        assert_int_equal(L->attn_type, KVC_ATTN_MAMBA);
        assert_int_equal(L->sparse_prefill, KVC_PLAN_NO_MODE);
        assert_int_equal(L->n_caches, 2);
        /* per rank (tp 2): conv channels 2 * 8 * 128 + 16 * 128 = 4096, kernel 4 less the token's own input: 3
         * columns (as the runtime stores it); state 16 x 128 x 128 */
        assert_int_equal(L->caches[0].shape[0], 4096);
        assert_int_equal(L->caches[0].shape[1], 3);
        assert_int_equal(L->caches[1].shape[0], 16);
        assert_int_equal(L->caches[1].bytes_per_block, 16 * 128 * 128 * 2);
    }
    assert_int_equal(plan->layers[3].attn_type, KVC_ATTN_FULL);
    int64_t mamba = 0;
    assert_int_equal(kvc_block_plan_block_num(&plan->blocks, "Mamba", &mamba), KVC_OK);
    assert_int_equal(mamba, CONC * (1 + 1) + 1); /* KM 6.1 */
    assert_int_equal(plan->blocks.per_token_bytes, 1 * 2 * 256 * 2);
    char *doc = NULL;
    assert_int_equal(kvc_model_plan_to_json(plan, &doc), KVC_OK);
    cJSON *root = cJSON_Parse(doc);
    const cJSON *L0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "layers"), 0);
    assert_string_equal(str(L0, "attn_type"), "Mamba");
    assert_true(is_null(L0, "sparse_mode"));
    assert_true(is_null(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(L0, "caches"), 0), "bytes_per_token"));
    /* the state key keeps its own pool; one pool with the attention would pad its
     * 24 KiB conv and 512 KiB recurrent pages to 512 KiB (1024 tokens of 512 B) */
    const cJSON *managers = cJSON_GetObjectItemCaseSensitive(root, "managers");
    assert_int_equal((int64_t)num(cJSON_GetArrayItem(managers, 0), "pool_id"), 0);
    assert_int_equal((int64_t)num(cJSON_GetArrayItem(managers, 0), "page_bytes"), 0);
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "state_padding");
    assert_string_equal(str(pad, "state_key"), "Mamba");
    assert_string_equal(str(pad, "paged_key"), "FullAttention");
    assert_int_equal((int64_t)num(pad, "page_bytes"), 524288);
    assert_int_equal((int64_t)num(pad, "block_size"), 1024);
    assert_int_equal((int64_t)num(pad, "state_bytes"), 3 * (4096 * 3 * 2 + 524288));
    assert_int_equal((int64_t)num(pad, "padded_bytes"), 3 * 2 * 524288);
    cJSON_Delete(root);
    kvc_plan_json_free(doc);
    kvc_model_plan_destroy(plan);
}

static kvc_model_plan *plan_text(const char *json, const kvc_plan_options *o) {
    kvc_model_plan *plan = NULL;
    if (kvc_model_plan_create(json, strlen(json), o, &plan) != KVC_OK) fail_msg("%s", kvc_last_error());
    return plan;
}

/* kvc_model_plan_create refuses json, naming needle. */
static void expect_refusal_text(const char *json, const char *needle) {
    kvc_model_plan *plan = NULL;
    const kvc_plan_options o = kvc_plan_default_options();
    assert_int_equal(kvc_model_plan_create(json, strlen(json), &o, &plan), KVC_EINVAL);
    if (strstr(kvc_last_error(), needle) == NULL) fail_msg("\"%s\" lacks \"%s\"", kvc_last_error(), needle);
}

/* A Llama 4 text config (8 layers, 40 query and 8 KV heads of 128) in the multimodal wrapper; `extra` adds
 * members to text_config. */
static kvc_model_plan *llama4_plan(const char *extra, const kvc_plan_options *o) {
    char json[1024];
    snprintf(json, sizeof json,
             "{\"architectures\": [\"Llama4ForConditionalGeneration\"], \"model_type\": \"llama4\","
             " \"text_config\": {\"model_type\": \"llama4_text\", \"num_hidden_layers\": 8,"
             " \"num_attention_heads\": 40, \"num_key_value_heads\": 8, \"head_dim\": 128, \"hidden_size\": 5120,"
             " \"max_position_embeddings\": 10485760, \"torch_dtype\": \"bfloat16\"%s}}",
             extra);
    return plan_text(json, o);
}

/* Llama 4: chunked local attention on the RoPE layers (no_rope_layers[i] 1), full causal on the NoPE ones;
 * an empty or absent no_rope_layers is every 4th layer full. The chunked layers plan a ChunkedLocal key of
 * C = 8192 with a fixed pool per request, the full layers the paged bytes per token. */
static void test_llama4_chunked_layers(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    o.max_model_len = 131072;
    o.max_concurrency = 4;
    const char *defaults[] = {", \"attention_chunk_size\": 8192, \"no_rope_layers\": []",
                              ", \"attention_chunk_size\": 8192"};
    for (int d = 0; d < 2; d++) {
        kvc_model_plan *p = llama4_plan(defaults[d], &o);
        assert_string_equal(p->family, "llama4");
        assert_int_equal(p->n_layers, 8);
        for (int i = 0; i < 8; i++) {
            const bool full = i == 3 || i == 7;
            assert_int_equal(p->layers[i].attn_type, full ? KVC_ATTN_FULL : KVC_ATTN_CHUNKED_LOCAL);
            assert_int_equal(p->layers[i].attention_chunk_size, full ? 0 : 8192);
            assert_int_equal(p->layers[i].sliding_window, 0);
            assert_int_equal(p->layers[i].sparse_prefill, 3); /* per chunk: no band is claimed */
            assert_int_equal(p->layers[i].pre_tokens, KVC_PLAN_NO_BAND);
        }
        assert_true(p->hybrid);
        for (int w = 0; w < p->n_warnings; w++) assert_null(strstr(p->warnings[w], "attention_chunk_size"));
        /* 2 full layers x (k + v) x 8 heads x 128 x bf16 */
        assert_int_equal(p->blocks.per_token_bytes, 2 * 2 * 8 * 128 * 2);
        /* 6 chunked layers and 2 full ones: the chunked ones in 3 keys of 2 layers (layer j of the key in group
         * j mod 3), so that every key fills the shared pool's block id of 4 pages of 128 x 8 x 128 x 2 B */
        assert_int_equal(p->blocks.n_groups, 4);
        const char *keys[4] = {"ChunkedLocal.g0", "ChunkedLocal.g1", "ChunkedLocal.g2", "FullAttention"};
        for (int g = 0; g < 4; g++) {
            assert_string_equal(p->blocks.groups[g].key, keys[g]);
            assert_int_equal(p->blocks.groups[g].pool_id, p->blocks.groups[0].pool_id); /* equal pages: one pool */
        }
        const int chunked_layers[6] = {0, 1, 2, 4, 5, 6};
        for (int j = 0; j < 6; j++)
            assert_string_equal(p->cache_info.layer_infos[chunked_layers[j]].caches[1].manager_key, keys[j % 3]);
        const kvc_group_plan *chunked = &p->blocks.groups[0];
        assert_true(chunked->fixed);
        /* every key's blocks are whole ids of the pool: 4 x 1024 full blocks and 3 keys x 4 x (8192 / 128 + 1)
         * chunked blocks, + the null block */
        const int64_t page = 128 * 8 * 128 * 2;
        assert_int_equal(chunked->block_num, 1 + 4 * 1024 + 3 * 4 * 65);
        assert_int_equal(p->blocks.total_bytes, chunked->block_num * 4 * page);
        /* apart, each chunked key is fixed bytes: 4 requests x 65 blocks + the null block, of 4 pages */
        kvc_plan_params pp = p->plan_params;
        pp.shared_pools = false;
        kvc_block_plan apart;
        assert_int_equal(kvc_plan_blocks(&pp, &p->cache_info, &apart), KVC_OK);
        assert_int_equal(apart.groups[0].block_num, 4 * 65 + 1);
        assert_int_equal(apart.fixed_bytes, 3 * (4 * 65 + 1) * 4 * page);
        assert_int_equal(apart.per_token_bytes, p->blocks.per_token_bytes);
        kvc_model_plan_destroy(p);
    }

    /* An explicit no_rope_layers, a no_rope_layer_interval, and the JSON field. */
    kvc_model_plan *p =
        llama4_plan(", \"attention_chunk_size\": 4096, \"no_rope_layers\": [1, 0, 1, 1, 0, 1, 1, 1]", &o);
    for (int i = 0; i < 8; i++)
        assert_int_equal(p->layers[i].attn_type, i == 1 || i == 4 ? KVC_ATTN_FULL : KVC_ATTN_CHUNKED_LOCAL);
    char *doc = NULL;
    assert_int_equal(kvc_model_plan_to_json(p, &doc), KVC_OK);
    cJSON *root = cJSON_Parse(doc);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    assert_int_equal((int64_t)num(cJSON_GetArrayItem(layers, 0), "attention_chunk_size"), 4096);
    assert_string_equal(str(cJSON_GetArrayItem(layers, 0), "attn_type"), "ChunkedLocal");
    assert_true(is_null(cJSON_GetArrayItem(layers, 1), "attention_chunk_size"));
    cJSON_Delete(root);
    kvc_plan_json_free(doc);
    kvc_model_plan_destroy(p);
    p = llama4_plan(", \"attention_chunk_size\": 8192, \"no_rope_layer_interval\": 2", &o);
    for (int i = 0; i < 8; i++)
        assert_int_equal(p->layers[i].attn_type, i % 2 == 1 ? KVC_ATTN_FULL : KVC_ATTN_CHUNKED_LOCAL);
    kvc_model_plan_destroy(p);

    /* No chunk: every layer full, said once; a chunk as long as the model's positions drops nothing. */
    p = llama4_plan("", &o);
    for (int i = 0; i < 8; i++) assert_int_equal(p->layers[i].attn_type, KVC_ATTN_FULL);
    assert_non_null(strstr(p->warnings[p->n_warnings - 1], "attention_chunk_size absent"));
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"llama4_text\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 2, \"head_dim\": 64, \"max_position_embeddings\": 4096,"
                  " \"attention_chunk_size\": 4096}",
                  &o);
    for (int i = 0; i < 4; i++) assert_int_equal(p->layers[i].attn_type, KVC_ATTN_FULL);
    assert_non_null(strstr(p->warnings[p->n_warnings - 1], "attention_chunk_size 4096 >= max_position_embeddings"));
    kvc_model_plan_destroy(p);

    /* layer_types "chunked_attention" of any family (here an unknown one, generic); refusals named. */
    p = plan_text("{\"architectures\": [\"FooForCausalLM\"], \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 2, \"head_dim\": 64, \"attention_chunk_size\": 256,"
                  " \"max_position_embeddings\": 4096, \"layer_types\": [\"chunked_attention\", \"full_attention\"]}",
                  &o);
    assert_int_equal(p->layers[0].attn_type, KVC_ATTN_CHUNKED_LOCAL);
    assert_int_equal(p->layers[0].attention_chunk_size, 256);
    assert_int_equal(p->layers[1].attn_type, KVC_ATTN_FULL);
    kvc_model_plan_destroy(p);
    const struct {
        const char *extra, *error;
    } bad[] = {
        {", \"attention_chunk_size\": 8192, \"no_rope_layers\": [1, 0]", "no_rope_layers has 2 entries"},
        {", \"attention_chunk_size\": 8192, \"no_rope_layers\": [1, 0, 1, 1, 2, 1, 1, 1]", "no_rope_layers[4]"},
        {", \"attention_chunk_size\": 0", "attention_chunk_size"},
        {", \"layer_types\": [\"chunked_attention\", \"full_attention\", \"chunked_attention\","
         " \"full_attention\", \"chunked_attention\", \"full_attention\", \"chunked_attention\","
         " \"full_attention\"]",
         "attention_chunk_size is missing but the model has chunked-attention layers"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[1024];
        snprintf(json, sizeof json,
                 "{\"model_type\": \"llama4_text\", \"num_hidden_layers\": 8, \"num_attention_heads\": 8,"
                 " \"num_key_value_heads\": 2, \"head_dim\": 64, \"max_position_embeddings\": 65536%s}",
                 bad[i].extra);
        kvc_model_plan *q = NULL;
        assert_int_equal(kvc_model_plan_create(json, strlen(json), &o, &q), KVC_EINVAL);
        if (strstr(kvc_last_error(), bad[i].error) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, kvc_last_error(), bad[i].error);
    }
}

/* Family rules that the shipped configs do not reach (synthetic configs). */
static void test_family_rules(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    /* Gemma 3 in a multimodal wrapper: text_config, five window layers then one full. */
    kvc_model_plan *p = plan_text(
        "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"model_type\": \"gemma3\","
        " \"text_config\": {\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 12, \"num_attention_heads\": 8,"
        " \"num_key_value_heads\": 4, \"head_dim\": 256, \"query_pre_attn_scalar\": 256, \"sliding_window\": 1024,"
        " \"sliding_window_pattern\": 6, \"max_position_embeddings\": 131072,"
        " \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}}}",
        &o);
    assert_string_equal(p->family, "gemma3");
    for (int i = 0; i < 12; i++)
        assert_int_equal(p->layers[i].attn_type, (i + 1) % 6 == 0 ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW);
    assert_int_equal(p->layers[0].pre_tokens, 1023);
    assert_true(p->hybrid);
    assert_string_equal(p->rope_type, "linear");
    kvc_model_plan_destroy(p);
    /* gemma-3-4b-it's text_config gives no heads, KV heads, head_dim or length: Gemma3TextConfig's 8, 4, 256 and
     * 131072 (was refused: num_attention_heads is missing; a config without the length was planned at 2048) */
    p = plan_text("{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"model_type\": \"gemma3\","
                  " \"torch_dtype\": \"bfloat16\", \"text_config\": {\"hidden_size\": 2560,"
                  " \"model_type\": \"gemma3_text\", \"num_hidden_layers\": 6, \"sliding_window\": 1024}}",
                  &o);
    assert_true(p->num_attention_heads == 8 && p->num_key_value_heads == 4 && p->head_dim == 256);
    assert_int_equal(p->options.max_model_len, 131072);
    assert_int_equal(p->layers[5].attn_type, KVC_ATTN_FULL);
    assert_int_equal(p->blocks.per_token_bytes, 2 * 4 * 256 * 2); /* the one full layer */
    kvc_model_plan_destroy(p);

    /* Qwen2 with use_sliding_window: window layers from max_window_layers on. */
    p = plan_text("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 2, \"hidden_size\": 1024, \"max_position_embeddings\": 32768,"
                  " \"use_sliding_window\": true, \"sliding_window\": 4096, \"max_window_layers\": 2}",
                  &o);
    assert_int_equal(p->layers[1].attn_type, KVC_ATTN_FULL);
    assert_int_equal(p->layers[2].attn_type, KVC_ATTN_SLIDING_WINDOW);
    assert_int_equal(p->layers[3].sliding_window, 4096);
    kvc_model_plan_destroy(p);

    /* Qwen2.5-VL: the multimodal rope is the default rope (as transformers reads it; was refused), and
     * use_sliding_window false turns the window off for any model type (was planned all sliding). */
    p = plan_text("{\"model_type\": \"qwen2_5_vl\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 2, \"hidden_size\": 1024, \"max_position_embeddings\": 32768,"
                  " \"sliding_window\": 4096, \"use_sliding_window\": false, \"max_window_layers\": 2,"
                  " \"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [16, 24, 24]}}",
                  &o);
    assert_int_equal(p->layers[0].attn_type, KVC_ATTN_FULL);
    assert_int_equal(p->layers[1].attn_type, KVC_ATTN_FULL);
    assert_string_equal(p->rope_type, "default");
    kvc_model_plan_destroy(p);

    /* A window that covers every position is full attention (Phi-3 128k style). */
    p = plan_text("{\"model_type\": \"phi3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 1024, \"max_position_embeddings\": 131072, \"sliding_window\": 262144}",
                  &o);
    assert_int_equal(p->layers[0].attn_type, KVC_ATTN_FULL);
    assert_non_null(strstr(p->warnings[p->n_warnings - 1], "never drops a key"));
    kvc_model_plan_destroy(p);

    /* Jamba: attention every attn_layer_period layers, Mamba state elsewhere. */
    p = plan_text("{\"model_type\": \"jamba\", \"num_hidden_layers\": 8, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 2, \"hidden_size\": 1024, \"max_position_embeddings\": 4096,"
                  " \"attn_layer_period\": 4, \"attn_layer_offset\": 2, \"mamba_d_state\": 16, \"mamba_d_conv\": 4,"
                  " \"mamba_expand\": 2}",
                  &o);
    for (int i = 0; i < 8; i++) assert_int_equal(p->layers[i].attn_type, i % 4 == 2 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    assert_int_equal(p->layers[0].caches[0].shape[0], 2048);
    assert_int_equal(p->layers[0].caches[1].shape[1], 16);
    kvc_model_plan_destroy(p);

    /* Bamba: attn_layer_indices name the attention layers, Mamba2 elsewhere (conv: heads * head dim + 2 groups x
     * state channels). */
    p = plan_text("{\"model_type\": \"bamba\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 2, \"hidden_size\": 1024, \"max_position_embeddings\": 4096,"
                  " \"attn_layer_indices\": [4, 1], \"mamba_n_heads\": 32, \"mamba_d_head\": 64,"
                  " \"mamba_d_state\": 128, \"mamba_d_conv\": 4, \"mamba_n_groups\": 1}",
                  &o);
    assert_string_equal(p->family, "bamba");
    assert_int_equal(p->n_layers, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(p->layers[i].layer, i);
        assert_int_equal(p->layers[i].attn_type, i == 1 || i == 4 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    }
    assert_int_equal(p->layers[0].caches[0].shape[0], 32 * 64 + 2 * 128);
    kvc_model_plan_destroy(p);

    /* Nemotron-H: one pattern character per layer; MLP (-) and experts (E) layers keep nothing and are not
     * listed, the others keep their model index (in the plan and in its cache description). */
    p = plan_text("{\"model_type\": \"nemotron_h\", \"num_hidden_layers\": 7, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 2, \"head_dim\": 64, \"hidden_size\": 512,"
                  " \"max_position_embeddings\": 4096, \"hybrid_override_pattern\": \"M-M*-EM\","
                  " \"mamba_num_heads\": 16, \"mamba_head_dim\": 64, \"ssm_state_size\": 128, \"conv_kernel\": 4,"
                  " \"n_groups\": 2}",
                  &o);
    const int kept[4] = {0, 2, 3, 6};
    assert_int_equal(p->n_layers, 4);
    assert_int_equal(p->cache_info.n_layer_infos, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(p->layers[i].layer, kept[i]);
        assert_int_equal(p->cache_info.layer_infos[i].layer_idx, kept[i]);
        assert_int_equal(p->layers[i].attn_type, kept[i] == 3 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    }
    assert_int_equal(p->layers[0].caches[0].shape[0], 16 * 64 + 2 * 2 * 128);
    assert_int_equal(p->layers[0].caches[1].bytes_per_block, 16 * 64 * 128 * 2);
    assert_true(p->hybrid);
    bool noted = false;
    for (int w = 0; w < p->n_warnings; w++) noted |= strstr(p->warnings[w], "3 of the 7 layers") != NULL;
    assert_true(noted);
    /* a draft merged after such a model must not reuse one of its indices */
    kvc_model_cache_info *merged = NULL;
    assert_int_equal(kvc_model_cache_info_merge(&p->cache_info, &p->cache_info, &merged), KVC_EINVAL);
    assert_null(merged);
    assert_non_null(strstr(kvc_last_error(), "becomes layer_idx 6"));
    kvc_model_plan_destroy(p);

    /* Falcon-H1: attention and Mamba2 side by side in every layer: two entries per model layer, the attention
     * one first, both with the layer's index; a manager takes the description. */
    p = plan_text(
        "{\"model_type\": \"falcon_h1\", \"num_hidden_layers\": 3, \"num_attention_heads\": 8,"
        " \"num_key_value_heads\": 2, \"head_dim\": 64, \"hidden_size\": 512,"
        " \"max_position_embeddings\": 4096, \"mamba_n_heads\": 16, \"mamba_d_head\": 32, \"mamba_d_ssm\": 512,"
        " \"mamba_d_state\": 64, \"mamba_d_conv\": 4, \"mamba_n_groups\": 1}",
        &o);
    assert_int_equal(p->n_layers, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(p->layers[i].layer, i / 2);
        assert_int_equal(p->layers[i].attn_type, i % 2 == 0 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
        assert_int_equal(p->cache_info.layer_infos[i].layer_idx, i / 2);
    }
    assert_int_equal(p->layers[0].caches[0].num_head, 2);
    assert_int_equal(p->layers[1].caches[0].shape[0], 16 * 32 + 2 * 64);
    assert_true(p->hybrid);
    kvc_manager *mgr = NULL;
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = 256;
    if (kvc_manager_create(&p->cache_info, &p->blocks, &mp, &mgr) != KVC_OK) fail_msg("%s", kvc_last_error());
    kvc_manager_destroy(mgr);
    kvc_model_plan_destroy(p);

    /* Zamba2: a Mamba2 mixer in every layer; the hybrid layers' shared block keeps one K/V per use site (two
     * entries of the layer's index, attention first), whatever num_mem_blocks; head_dim 2 hidden / heads (not
     * kv_channels), the scale (head_dim / 2)^-1/2; "mamba" is the legacy name of a mixer layer. */
    p = plan_text("{\"model_type\": \"zamba2\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 8, \"hidden_size\": 512, \"kv_channels\": 64,"
                  " \"max_position_embeddings\": 4096, \"layers_block_type\": [\"mamba\", \"hybrid\","
                  " \"linear_attention\", \"hybrid\"], \"num_mem_blocks\": 1, \"n_mamba_heads\": 16,"
                  " \"mamba_d_state\": 64, \"mamba_d_conv\": 4, \"mamba_ngroups\": 2}",
                  &o);
    assert_string_equal(p->family, "zamba2");
    const int z2_layer[6] = {0, 1, 1, 2, 3, 3};
    const kvc_attn_type z2_type[6] = {KVC_ATTN_MAMBA, KVC_ATTN_FULL, KVC_ATTN_MAMBA,
                                      KVC_ATTN_MAMBA, KVC_ATTN_FULL, KVC_ATTN_MAMBA};
    assert_int_equal(p->n_layers, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(p->layers[i].layer, z2_layer[i]);
        assert_int_equal(p->layers[i].attn_type, z2_type[i]);
    }
    assert_int_equal(p->layers[1].caches[0].num_head, 8);
    assert_int_equal(p->layers[1].caches[0].dim, 128);
    assert_int_equal(p->layers[0].caches[0].shape[0], 1024 + 2 * 2 * 64); /* I + 2 G N */
    assert_int_equal(p->layers[0].caches[1].shape[1], 64);                /* heads of expand x 512 / 16 */
    assert_true(fabs(p->scale - 1.0 / sqrt(64.0)) < 1e-12);
    kvc_model_plan_destroy(p);

    /* Zamba: Mamba-1 mixers; without layers_block_type layers 0, 1 alone, 2 hybrid, then 3 + i hybrid where
     * i % attn_layer_period == attn_layer_offset; head_dim attention_head_dim. */
    p = plan_text("{\"model_type\": \"zamba\", \"num_hidden_layers\": 8, \"num_attention_heads\": 4,"
                  " \"num_key_value_heads\": 4, \"hidden_size\": 256, \"attention_head_dim\": 32,"
                  " \"max_position_embeddings\": 4096, \"attn_layer_period\": 3, \"attn_layer_offset\": 1,"
                  " \"mamba_d_state\": 16, \"mamba_d_conv\": 4, \"mamba_expand\": 2}",
                  &o);
    assert_string_equal(p->family, "zamba");
    int n_full = 0;
    for (int i = 0; i < p->n_layers; i++) {
        const int l = p->layers[i].layer;
        const bool hybrid = l == 2 || l == 4 || l == 7;
        if (p->layers[i].attn_type == KVC_ATTN_FULL) {
            assert_true(hybrid);
            assert_int_equal(p->layers[i].caches[0].dim, 32);
            n_full++;
        } else {
            assert_int_equal(p->layers[i].caches[0].shape[0], 512);
            assert_int_equal(p->layers[i].caches[1].shape[1], 16);
        }
    }
    assert_int_equal(n_full, 3);
    assert_int_equal(p->n_layers, 11);
    assert_true(fabs(p->scale - 1.0 / sqrt(16.0)) < 1e-12);
    kvc_model_plan_destroy(p);

    /* Llama 3.2 Vision's text model, text-only: its cross_attention_layers keep no cache (transformers skips them
     * without an image); the other layers keep K/V under their own indices. Nested (mllama) or alone, the class
     * default list [3, 8, ..., 38] and 8 KV heads (MllamaTextConfig's) when absent. */
    p = plan_text("{\"model_type\": \"mllama\", \"text_config\": {\"model_type\": \"mllama_text_model\","
                  " \"num_hidden_layers\": 6, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                  " \"hidden_size\": 256, \"max_position_embeddings\": 4096, \"cross_attention_layers\": [1, 4]}}",
                  &o);
    assert_string_equal(p->family, "mllama_text_model");
    assert_int_equal(p->n_layers, 4);
    bool skipped_noted = false;
    for (int w = 0; w < p->n_warnings; w++) {
        skipped_noted |= strstr(p->warnings[w], "2 of the 6 layers (cross_attention_layers, skipped on text") != NULL;
        assert_null(strstr(p->warnings[w], "keys of the image"));
    }
    assert_true(skipped_noted);
    const int want_layers[4] = {0, 2, 3, 5};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(p->layers[i].layer, want_layers[i]);
        assert_int_equal(p->layers[i].attn_type, KVC_ATTN_FULL);
        assert_int_equal(p->layers[i].caches[0].dim, 64);
    }
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"mllama_text_model\", \"num_hidden_layers\": 40, \"num_attention_heads\": 32,"
                  " \"hidden_size\": 4096, \"max_position_embeddings\": 4096}",
                  &o);
    assert_int_equal(p->n_layers, 32);
    for (int i = 0; i < p->n_layers; i++) {
        assert_true(p->layers[i].layer % 5 != 3);
        assert_int_equal(p->layers[i].caches[0].num_head, 8);
        assert_int_equal(p->layers[i].caches[0].dim, 128);
    }
    kvc_model_plan_destroy(p);
    expect_refusal_text("{\"model_type\": \"mllama_text_model\", \"num_hidden_layers\": 4, \"num_attention_heads\": 4,"
                        " \"num_key_value_heads\": 2, \"hidden_size\": 64, \"max_position_embeddings\": 64,"
                        " \"cross_attention_layers\": [4]}",
                        "cross_attention_layers lists layer 4");

    /* MLA outside the absorbed operator's shapes: legacy latent caches, non-absorbed v1. */
    p = plan_text("{\"model_type\": \"deepseek_v2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 16,"
                  " \"kv_lora_rank\": 256, \"qk_rope_head_dim\": 32, \"qk_nope_head_dim\": 64, \"v_head_dim\": 64,"
                  " \"max_position_embeddings\": 4096}",
                  &o);
    assert_int_equal(p->kv_mode, KVC_KV_LEGACY);
    assert_false(p->mla_absorb);
    assert_int_equal(p->fa_version, 1);
    assert_string_equal(p->input_layout, "NTD_TND");
    assert_int_equal(p->layers[0].caches[0].dim, 256);
    assert_true(fabs(p->scale - 1.0 / sqrt(96.0)) < 1e-12);
    kvc_model_plan_destroy(p);
}

static bool has_warning(const kvc_model_plan *p, const char *needle) {
    for (int w = 0; w < p->n_warnings; w++)
        if (strstr(p->warnings[w], needle) != NULL) return true;
    return false;
}

/* tp > 1 of a model the runtime runs but cannot split so (an intermediate_size tp does not divide, which the
 * cache plan does not depend on): planned, with the runtime's refusal as a warning; a model it splits and one
 * rank get none. */
static void test_runtime_tp_refusal(void **state) {
    (void)state;
    static const char *const sizes =
        "\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
        " \"num_hidden_layers\": 2, \"vocab_size\": 512, \"max_position_embeddings\": 512}";
    char json[512];
    kvc_plan_options o = kvc_plan_default_options();
    o.tp = 2;
    snprintf(json, sizeof json, "{\"model_type\": \"qwen3\", \"intermediate_size\": 97, %s", sizes);
    kvc_model_plan *p = plan_text(json, &o);
    assert_true(has_warning(p, "runtime refuses this tensor parallelism (model: tensor parallelism 2 does not divide "
                               "intermediate_size 97)"));
    assert_int_equal(p->q_heads_per_rank, 2); /* the plan itself stands */
    kvc_model_plan_destroy(p);
    o.tp = 1;
    p = plan_text(json, &o);
    assert_false(has_warning(p, "runtime refuses"));
    kvc_model_plan_destroy(p);
    o.tp = 2;
    for (int i = 0; i < 2; i++) { /* OLMo 2 too: its norms' sums span the ranks */
        snprintf(json, sizeof json, "{\"model_type\": \"%s\", \"intermediate_size\": 96, %s", i ? "olmo2" : "qwen3",
                 sizes);
        p = plan_text(json, &o);
        assert_false(has_warning(p, "runtime refuses"));
        kvc_model_plan_destroy(p);
    }
}

/* Shapes of recent models that share a family's rules or need their own: DeepSeek-V3.2's indexer keys, an
 * unknown MLA model, Gemma 3n's shared caches and LFM2's convolution states. */
static void test_recent_shapes(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    /* DeepSeek-V3.2: latent caches plus the indexer's f32 key (512 B), as the runtime keeps it. */
    kvc_model_plan *p = plan_text(
        "{\"architectures\": [\"DeepseekV32ForCausalLM\"], \"model_type\": \"deepseek_v32\", \"num_hidden_layers\": 3,"
        " \"num_attention_heads\": 16, \"kv_lora_rank\": 512, \"qk_rope_head_dim\": 64, \"qk_nope_head_dim\": 128,"
        " \"v_head_dim\": 128, \"max_position_embeddings\": 4096, \"index_head_dim\": 128, \"index_n_heads\": 64,"
        " \"index_topk\": 2048}",
        &o);
    assert_string_equal(p->family, "deepseek_v32");
    assert_true(p->mla);
    assert_int_equal(p->layers[0].n_caches, 3);
    assert_string_equal(p->layers[0].caches[2].name, "indexer_k_cache");
    assert_int_equal(p->layers[0].caches[2].dtype, KVC_DTYPE_F32);
    assert_int_equal(p->layers[0].caches[2].bytes_per_token, 128 * 4);
    assert_int_equal(p->blocks.per_token_bytes, 3 * ((512 + 64) * 2 + 128 * 4));
    assert_true(has_warning(p, "index_topk 2048"));
    kvc_model_plan_destroy(p);
    /* GLM-5 (glm_moe_dsa) by GlmMoeDsaConfig's defaults: latent 512 + rope 64 and the indexer's 128 keys as the
     * runtime keeps them (f32, no scale), on every layer (index_topk_freq 1) */
    p = plan_text("{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 512, \"max_position_embeddings\": 4096}",
                  &o);
    assert_string_equal(p->family, "glm_moe_dsa");
    assert_true(p->mla && p->layers[1].n_caches == 3);
    assert_string_equal(p->layers[1].caches[2].name, "indexer_k_cache");
    assert_int_equal(p->layers[1].caches[2].dtype, KVC_DTYPE_F32);
    assert_int_equal(p->layers[1].caches[2].bytes_per_token, 128 * 4);
    assert_int_equal(p->blocks.per_token_bytes, 2 * ((512 + 64) * 2 + 128 * 4));
    assert_true(has_warning(p, "index_topk 2048") && has_warning(p, "indexer_k_cache f32"));
    kvc_model_plan_destroy(p);
    /* A.X-K2 (axk2) by AXK2Config's defaults: latent 128 + rope 32 and V3.2's indexer keys (128, f32) on every layer,
     * as transformers' DynamicCache holds them (k_pass, k_rot, update_indexer) */
    p = plan_text("{\"model_type\": \"axk2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 32,"
                  " \"hidden_size\": 2048, \"max_position_embeddings\": 4096}",
                  &o);
    assert_string_equal(p->family, "axk2");
    assert_true(p->mla && p->layers[1].n_caches == 3);
    assert_string_equal(p->layers[1].caches[2].name, "indexer_k_cache");
    assert_int_equal(p->layers[1].caches[2].bytes_per_token, 128 * 4);
    assert_int_equal(p->blocks.per_token_bytes, 2 * ((128 + 32) * 2 + 128 * 4));
    assert_true(has_warning(p, "index_topk 2048") && has_warning(p, "indexer_k_cache f32"));
    kvc_model_plan_destroy(p);
    /* Beam (beam) by BeamConfig's defaults: 52 layers, every sixth and the last full (9), the rest sliding over 512
     * keys, 8 KV heads of 128 (bf16: 4 KiB per token and layer), as transformers' DynamicCache holds them */
    p = plan_text("{\"model_type\": \"beam\", \"num_hidden_layers\": 52, \"num_attention_heads\": 48,"
                  " \"hidden_size\": 5120, \"max_position_embeddings\": 8192}",
                  &o);
    assert_string_equal(p->family, "beam");
    int64_t full = 0;
    for (int64_t i = 0; i < 52; i++) full += p->layers[i].sliding_window == 0;
    assert_int_equal(full, 9);
    assert_true(p->layers[51].sliding_window == 0 && p->layers[5].sliding_window == 0);
    assert_int_equal(p->layers[0].sliding_window, 512);
    assert_int_equal(p->layers[0].caches[0].bytes_per_token, 8 * 128 * 2);
    kvc_model_plan_destroy(p);
    /* GLM-5's shared layers keep no indexer keys: indexer_types, else index_topk_freq 2 from offset 2 (F F S F S F) */
    p = plan_text(
        "{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 3, \"num_attention_heads\": 8,"
        " \"hidden_size\": 512, \"max_position_embeddings\": 64, \"indexer_types\": [\"full\", \"shared\", \"full\"]}",
        &o);
    assert_true(p->layers[0].n_caches == 3 && p->layers[1].n_caches == 2 && p->layers[2].n_caches == 3);
    kvc_model_plan_destroy(p);
    /* GLM-5.2's layer_types spell indexed_attention by its legacy name, as transformers remaps it (was refused) */
    p = plan_text("{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 512, \"max_position_embeddings\": 64, \"layer_types\":"
                  " [\"deepseek_sparse_attention\", \"qwen_sparse_attention\"]}",
                  &o);
    assert_true(p->n_layers == 2 && p->layers[1].attn_type == KVC_ATTN_FULL && p->layers[1].n_caches == 3);
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 512, \"max_position_embeddings\": 64, \"index_topk_freq\": 2}",
                  &o);
    for (int l = 0; l < 6; l++) assert_int_equal(p->layers[l].n_caches, l == 2 || l == 4 ? 2 : 3);
    kvc_model_plan_destroy(p);
    /* LongCat-Flash (planned only): two MLA layers per decoder layer of num_layers (else half num_hidden_layers, else
     * 28), LongcatFlashConfig's latent 512 + rope 64 when absent */
    const char *longcat[] = {"\"num_layers\": 3", "\"num_hidden_layers\": 7", "\"vocab_size\": 8"};
    const int32_t longcat_layers[] = {6, 6, 56};
    for (int i = 0; i < 3; i++) {
        char cfg[256];
        snprintf(cfg, sizeof cfg,
                 "{\"model_type\": \"longcat_flash\", %s, \"num_attention_heads\": 8, \"hidden_size\": 512,"
                 " \"max_position_embeddings\": 4096}",
                 longcat[i]);
        p = plan_text(cfg, &o);
        assert_string_equal(p->family, "longcat_flash");
        assert_true(p->mla && p->n_layers == longcat_layers[i] && p->layers[0].n_caches == 2);
        assert_int_equal(p->blocks.per_token_bytes, longcat_layers[i] * (512 + 64) * 2);
        kvc_model_plan_destroy(p);
    }

    /* An unknown model with kv_lora_rank: latent caches, not num_attention_heads x hidden/heads; GLM-4.7-Flash
     * (glm4_moe_lite, DeepSeek-V3's family) the same caches without the warning. */
    for (int known = 0; known < 2; known++) {
        char cfg[512];
        snprintf(cfg, sizeof cfg,
                 "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"num_hidden_layers\": 2,"
                 " \"num_attention_heads\": 20, \"hidden_size\": 2048, \"kv_lora_rank\": 512, \"qk_rope_head_dim\": 64,"
                 " \"qk_nope_head_dim\": 192, \"v_head_dim\": 256, \"max_position_embeddings\": 4096}",
                 known ? "Glm4MoeLiteForCausalLM" : "SomeLatentForCausalLM", known ? "glm4_moe_lite" : "some_latent");
        p = plan_text(cfg, &o);
        assert_string_equal(p->family, known ? "glm4_moe_lite" : "some_latent");
        assert_true(p->mla);
        assert_int_equal(p->layers[0].n_caches, 2);
        assert_int_equal(p->layers[0].caches[0].dim, 512);
        assert_int_equal(p->blocks.per_token_bytes, 2 * (512 + 64) * 2);
        assert_true(has_warning(p, "planned as multi-head latent attention") == !known);
        kvc_model_plan_destroy(p);
    }

    /* Gemma 3n: the last num_kv_shared_layers layers read earlier layers' caches and keep none. */
    p = plan_text("{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 2, \"head_dim\": 256, \"sliding_window\": 512,"
                  " \"max_position_embeddings\": 32768, \"num_kv_shared_layers\": 2, \"layer_types\":"
                  " [\"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\","
                  " \"sliding_attention\", \"full_attention\"]}",
                  &o);
    assert_int_equal(p->n_layers, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(p->layers[i].layer, i);
    assert_true(has_warning(p, "layers 4-5 read the caches"));
    assert_false(has_warning(p, "MLP or experts only"));
    kvc_model_plan_destroy(p);
    /* Gemma3nTextConfig's defaults where the keys are absent: every 5th layer full, the last 15 layers shared
     * (layers 0-4 keep caches), scale 1; fewer layers than that default is refused by name */
    p = plan_text("{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 20, \"num_attention_heads\": 8,"
                  " \"max_position_embeddings\": 32768}",
                  &o);
    assert_string_equal(p->family, "gemma3n");
    assert_true(p->scale == 1.0);
    assert_int_equal(p->n_layers, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(p->layers[i].attn_type, i == 4 ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW);
        assert_int_equal(p->layers[i].caches[0].num_head, 2);
        assert_int_equal(p->layers[i].caches[0].dim, 256);
    }
    assert_true(has_warning(p, "layers 5-19 read the caches"));
    kvc_model_plan_destroy(p);
    kvc_model_plan *q = NULL;
    const char *few = "{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 15, \"num_attention_heads\": 8,"
                      " \"max_position_embeddings\": 32768}";
    assert_int_equal(kvc_model_plan_create(few, strlen(few), &o, &q), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "num_kv_shared_layers is absent and gemma3n's default 15"));

    /* Kolibri 1.1 by Kolibri1_1Config's defaults: 50 layers, every fifth indexed (full, NoPE), the others sliding over
     * 513 keys; of the 10 indexed layers the 2nd, 3rd and 10th read the 1st's K/V, the 7th-9th the 6th's: 44 layers
     * keep caches (as transformers' DynamicCache: no update on those layers); a reader of a sliding layer refused */
    p = plan_text("{\"model_type\": \"kolibri1_1\", \"num_hidden_layers\": 50, \"num_attention_heads\": 48,"
                  " \"hidden_size\": 2560, \"max_position_embeddings\": 262144}",
                  &o);
    assert_int_equal(p->n_layers, 44);
    int64_t n_full = 0;
    for (int i = 0; i < 44; i++) n_full += p->layers[i].attn_type == KVC_ATTN_FULL;
    assert_int_equal(n_full, 4);
    assert_true(p->layers[4].layer == 4 && p->layers[4].attn_type == KVC_ATTN_FULL);
    assert_true(p->layers[0].sliding_window == 513 && p->layers[0].caches[0].num_head == 4);
    assert_true(has_warning(p, "kv_source_layers: 6 layers read") && !has_warning(p, "MLP or experts only"));
    kvc_model_plan_destroy(p);
    const char *kol_bad =
        "{\"model_type\": \"kolibri1_1\", \"num_hidden_layers\": 5, \"num_attention_heads\": 48,"
        " \"hidden_size\": 2560, \"max_position_embeddings\": 4096, \"kv_source_layers\": [0, 0, 2, 3, 4]}";
    assert_int_equal(kvc_model_plan_create(kol_bad, strlen(kol_bad), &o, &q), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "kv_source_layers[1] is 0"));
    const char *kol_many = "{\"model_type\": \"kolibri1_1\", \"num_hidden_layers\": 55, \"num_attention_heads\": 48,"
                           " \"hidden_size\": 2560, \"max_position_embeddings\": 4096}";
    assert_int_equal(kvc_model_plan_create(kol_many, strlen(kol_many), &o, &q), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "covers 10 indexed_attention layers"));

    /* Kimi-Linear: kda_layers (counted from 1) are linear-attention state layers, the others MLA; the conv state
     * keeps short_conv_kernel_size - 1 inputs (the runtime's). */
    p = plan_text("{\"model_type\": \"kimi_linear\", \"num_hidden_layers\": 4, \"num_attention_heads\": 32,"
                  " \"num_key_value_heads\": 32, \"kv_lora_rank\": 512, \"qk_rope_head_dim\": 64,"
                  " \"qk_nope_head_dim\": 128, \"v_head_dim\": 128, \"max_position_embeddings\": 4096,"
                  " \"linear_attn_config\": {\"kda_layers\": [1, 2, 3], \"full_attn_layers\": [4], \"num_heads\": 32,"
                  " \"head_dim\": 128, \"short_conv_kernel_size\": 4}}",
                  &o);
    assert_string_equal(p->family, "kimi_linear");
    for (int i = 0; i < 4; i++) assert_int_equal(p->layers[i].attn_type, i == 3 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    assert_int_equal(p->layers[0].caches[0].shape[0], 3 * 32 * 128);
    assert_int_equal(p->layers[0].caches[0].shape[1], 3);
    assert_int_equal(p->layers[0].caches[1].bytes_per_block, 32 * 128 * 128 * 2);
    assert_int_equal(p->layers[3].caches[0].dim, 512);
    assert_int_equal(p->blocks.per_token_bytes, (512 + 64) * 2);
    kvc_model_plan_destroy(p);
    /* the saved copy and the key the class copies it from disagree; a bad value under either name */
    expect_refusal_text("{\"model_type\": \"bailing_hybrid\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
                        " \"short_conv_kernel_size\": 3, \"linear_conv_kernel_dim\": 4}",
                        "linear_conv_kernel_dim 4 differs from short_conv_kernel_size 3");
    expect_refusal_text("{\"model_type\": \"bailing_hybrid\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
                        " \"linear_num_heads\": 8}",
                        "linear_num_heads 8 differs from num_attention_heads 4");
    expect_refusal_text("{\"model_type\": \"bailing_hybrid\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
                        " \"short_conv_kernel_size\": \"x\", \"linear_conv_kernel_dim\": 4}",
                        "short_conv_kernel_size must be an integer");
    /* As transformers 5.25 saves it: linear_num_heads / linear_head_dim / linear_conv_kernel_dim; without layer_types
     * or the lists, KimiLinearConfig's rule (layer i full when i > 0 and i % 4 == 0). */
    p = plan_text("{\"model_type\": \"kimi_linear\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
                  " \"kv_lora_rank\": 64, \"qk_rope_head_dim\": 16, \"qk_nope_head_dim\": 32, \"v_head_dim\": 32,"
                  " \"model_max_length\": 4096, \"linear_num_heads\": 4, \"linear_head_dim\": 16,"
                  " \"linear_conv_kernel_dim\": 3}",
                  &o);
    for (int i = 0; i < 6; i++) assert_int_equal(p->layers[i].attn_type, i == 4 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    assert_int_equal(p->layers[0].caches[0].shape[0], 3 * 4 * 16);
    assert_int_equal(p->layers[0].caches[0].shape[1], 2);
    assert_int_equal(p->layers[0].caches[1].bytes_per_block, 4 * 16 * 16 * 2);
    kvc_model_plan_destroy(p);

    /* MiniMax-Text-01: attn_type_list 0 is a lightning layer (a head_dim^2 state per head), 1 softmax attention;
     * no warning that the list is not planned. */
    p = plan_text("{\"model_type\": \"minimax_text_01\", \"num_hidden_layers\": 4, \"num_attention_heads\": 64,"
                  " \"num_key_value_heads\": 8, \"head_dim\": 128, \"max_position_embeddings\": 4096,"
                  " \"attn_type_list\": [0, 0, 0, 1]}",
                  &o);
    assert_string_equal(p->family, "minimax_text_01");
    for (int i = 0; i < 4; i++) assert_int_equal(p->layers[i].attn_type, i == 3 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    assert_int_equal(p->layers[0].caches[0].bytes_per_block, 64 * 128 * 128 * 2);
    assert_false(has_warning(p, "attn_type_list"));
    kvc_model_plan_destroy(p);
    /* MiniMax (transformers' minimax) without layer_types: MiniMaxConfig's alternation, even layers softmax (8 KV
     * heads of hidden / heads when absent), odd ones lightning; attn_type_list is not its key. */
    p = plan_text("{\"model_type\": \"minimax\", \"num_hidden_layers\": 4, \"num_attention_heads\": 32,"
                  " \"hidden_size\": 4096, \"max_position_embeddings\": 4096}",
                  &o);
    assert_string_equal(p->family, "minimax");
    for (int i = 0; i < 4; i++) assert_int_equal(p->layers[i].attn_type, i % 2 ? KVC_ATTN_MAMBA : KVC_ATTN_FULL);
    assert_int_equal(p->layers[0].caches[0].num_head, 8);
    assert_int_equal(p->layers[0].caches[0].dim, 128);
    assert_int_equal(p->layers[1].caches[0].bytes_per_block, 32 * 128 * 128 * 2);
    kvc_model_plan_destroy(p);
    /* RecurrentGemma under RecurrentGemmaConfig's defaults but a 5-layer stack: block_types (recurrent, recurrent,
     * attention) repeated, the attention layers sliding over attention_window_size 2048 (no length key: 2048 positions)
     * with head_dim 64 as given (hidden / heads when absent), the recurrent ones a conv state [conv1d_width - 1,
     * lru_width] and the RG-LRU's [lru_width]; lru_width and attention_window_size set. */
    p = plan_text("{\"model_type\": \"recurrent_gemma\", \"num_hidden_layers\": 5, \"num_attention_heads\": 10,"
                  " \"num_key_value_heads\": 1, \"hidden_size\": 2560, \"head_dim\": 64}",
                  &o);
    assert_string_equal(p->family, "recurrent_gemma");
    for (int i = 0; i < 5; i++)
        assert_int_equal(p->layers[i].attn_type, i % 3 == 2 ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_MAMBA);
    assert_int_equal(p->layers[2].sliding_window, 2048);
    assert_true(p->layers[2].caches[0].num_head == 1 && p->layers[2].caches[0].dim == 64);
    assert_true(p->layers[0].caches[0].shape[0] == 3 && p->layers[0].caches[0].shape[1] == 2560);
    assert_int_equal(p->layers[0].caches[1].bytes_per_block, 2560 * 2);
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"recurrent_gemma\", \"num_hidden_layers\": 3, \"num_attention_heads\": 4,"
                  " \"hidden_size\": 64, \"lru_width\": 32, \"conv1d_width\": 2, \"attention_window_size\": 16,"
                  " \"block_types\": [\"attention\", \"recurrent\"]}",
                  &o);
    for (int i = 0; i < 3; i++)
        assert_int_equal(p->layers[i].attn_type, i == 1 ? KVC_ATTN_MAMBA : KVC_ATTN_SLIDING_WINDOW);
    assert_true(p->layers[0].sliding_window == 16 && p->layers[0].caches[0].num_head == 4);
    assert_int_equal(p->layers[0].caches[0].dim, 16);
    assert_true(p->layers[1].caches[0].shape[0] == 1 && p->layers[1].caches[0].shape[1] == 32);
    kvc_model_plan_destroy(p);

    /* RWKV-4 at RwkvConfig's default shape (hidden 4096, 32 layers, no attention keys): every layer a state layer of
     * the two token-shift inputs [2, H] and the WKV num, den and max [3, H], no KV cache; no shard rule for tp 2,
     * attention_hidden_size apart from hidden_size refused. */
    static const char rwkv[] = "{\"model_type\": \"rwkv\", \"hidden_size\": 4096, \"num_hidden_layers\": 32}";
    p = plan_text(rwkv, &o);
    assert_string_equal(p->family, "rwkv");
    assert_int_equal(p->n_layers, 32);
    for (int i = 0; i < 32; i++) {
        assert_int_equal(p->layers[i].attn_type, KVC_ATTN_MAMBA);
        assert_int_equal(p->layers[i].n_caches, 2);
        assert_int_equal(p->layers[i].caches[0].bytes_per_token, 0);
        assert_int_equal(p->layers[i].caches[0].bytes_per_block, 2 * 4096 * 2);
        assert_int_equal(p->layers[i].caches[1].bytes_per_block, 3 * 4096 * 2);
    }
    kvc_model_plan_destroy(p);
    kvc_plan_options tp2 = o;
    tp2.tp = 2;
    kvc_model_plan *refused_plan = NULL;
    assert_int_equal(kvc_model_plan_create(rwkv, strlen(rwkv), &tp2, &refused_plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "tensor parallelism 2 over rwkv"));
    expect_refusal_text("{\"model_type\": \"rwkv\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                        "\"attention_hidden_size\": 32}",
                        "attention_hidden_size 32 != hidden_size 64");

    /* LFM2: conv layers keep hidden_size x (conv_L_cache - 1) of state; layer_types or full_attn_idxs. */
    static const char *const lfm2[] = {
        "{\"model_type\": \"lfm2\", \"num_hidden_layers\": 4, \"num_attention_heads\": 16, \"num_key_value_heads\":"
        " 8, \"hidden_size\": 1024, \"max_position_embeddings\": 4096, \"conv_L_cache\": 3, \"layer_types\":"
        " [\"conv\", \"conv\", \"full_attention\", \"conv\"]}",
        "{\"model_type\": \"lfm2\", \"num_hidden_layers\": 4, \"num_attention_heads\": 16, \"num_key_value_heads\":"
        " 8, \"hidden_size\": 1024, \"max_position_embeddings\": 4096, \"conv_L_cache\": 3, \"full_attn_idxs\": [2]}"};
    for (int c = 0; c < 2; c++) {
        p = plan_text(lfm2[c], &o);
        assert_string_equal(p->family, "lfm2");
        for (int i = 0; i < 4; i++) assert_int_equal(p->layers[i].attn_type, i == 2 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
        assert_int_equal(p->layers[0].n_caches, 1);
        assert_int_equal(p->layers[0].caches[0].shape[0], 1024);
        assert_int_equal(p->layers[0].caches[0].shape[1], 2);
        assert_int_equal(p->layers[0].caches[0].bytes_per_block, 1024 * 2 * 2);
        assert_int_equal(p->blocks.per_token_bytes, 8 * 64 * 2 * 2);
        kvc_model_plan_destroy(p);
    }
    /* A state key the config leaves out takes its class's default, as the loader reads it (these were refused,
     * "the state layers need ... to size their state" / "conv_L_cache is missing", and Mamba2's groups were 1):
     * LFM2's conv_L_cache 3; Mamba2Config's n_groups 8 and conv_kernel 4; Falcon-H1's mamba_d_head (mamba_d_ssm over
     * the heads), mamba_d_state 256, mamba_d_conv 4. */
    p = plan_text("{\"model_type\": \"lfm2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
                  " \"num_key_value_heads\": 2, \"hidden_size\": 64, \"max_position_embeddings\": 256,"
                  " \"layer_types\": [\"conv\", \"full_attention\"]}",
                  &o);
    assert_int_equal(p->layers[0].caches[0].shape[1], 2);
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"mamba2\", \"num_hidden_layers\": 2, \"hidden_size\": 64, \"num_heads\": 8,"
                  " \"head_dim\": 16, \"state_size\": 8, \"max_position_embeddings\": 256}",
                  &o);
    assert_int_equal(p->layers[0].caches[0].shape[0], 8 * 16 + 2 * 8 * 8);
    assert_int_equal(p->layers[0].caches[0].shape[1], 3);
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"falcon_h1\", \"num_hidden_layers\": 1, \"num_attention_heads\": 4,"
                  " \"hidden_size\": 64, \"max_position_embeddings\": 256, \"mamba_d_ssm\": 64,"
                  " \"mamba_n_heads\": 4}",
                  &o);
    assert_int_equal(p->layers[1].caches[0].shape[0], 64 + 2 * 256);
    assert_int_equal(p->layers[1].caches[0].shape[1], 3);
    assert_int_equal(p->layers[1].caches[1].shape[1], 16);
    kvc_model_plan_destroy(p);
}

/* Ling / Ring hybrids (bailing_hybrid): KDA state layers (q/k/v conv of linear_num_heads x linear_head_dim, else
 * num_attention_heads x head_dim, and a head_dim^2 state per head) beside MLA layers, the last of every
 * layer_group_size without layer_types. Qwen4-Exp: Gated DeltaNet states beside indexed_attention layers, whose QSA
 * indexer (when set) keeps one raw key per token. Dory: the recurrent layers' caches once per loop (per_loop). */
static void test_linear_and_loop_types(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    o.kv_dtype_set = true, o.kv_dtype = KVC_DTYPE_BF16;
    kvc_model_plan *p = plan_text(
        "{\"model_type\": \"bailing_hybrid\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
        " \"num_key_value_heads\": 8, \"head_dim\": 16, \"linear_head_dim\": 32, \"kv_lora_rank\": 64,"
        " \"qk_rope_head_dim\": 16, \"qk_nope_head_dim\": 32, \"v_head_dim\": 32, \"max_position_embeddings\": 4096,"
        " \"layer_group_size\": 3}",
        &o);
    assert_string_equal(p->family, "bailing_hybrid");
    assert_true(p->mla);
    for (int i = 0; i < 6; i++) assert_int_equal(p->layers[i].attn_type, i % 3 == 2 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    assert_int_equal(p->layers[0].caches[0].shape[0], 3 * 8 * 32);
    assert_int_equal(p->layers[0].caches[0].shape[1], 4 - 1); /* the kernel's last inputs, as Kimi-Linear's */
    assert_int_equal(p->layers[0].caches[1].bytes_per_block, 8 * 32 * 32 * 2);
    assert_int_equal(p->layers[2].caches[0].dim, 64);
    assert_int_equal(p->blocks.per_token_bytes, 2 * (64 + 16) * 2);
    kvc_model_plan_destroy(p);
    /* layer_types given, the class's MLA dims and KDA head_dim, kernel from short_conv_kernel_size */
    p = plan_text("{\"model_type\": \"bailing_hybrid\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
                  " \"max_position_embeddings\": 4096, \"short_conv_kernel_size\": 3,"
                  " \"layer_types\": [\"full_attention\", \"linear_attention\"]}",
                  &o);
    assert_int_equal(p->layers[0].attn_type, KVC_ATTN_FULL);
    assert_int_equal(p->layers[1].caches[0].shape[0], 3 * 4 * 128);
    assert_int_equal(p->layers[1].caches[0].shape[1], 3 - 1);
    assert_int_equal(p->blocks.per_token_bytes, (512 + 64) * 2);
    kvc_model_plan_destroy(p);

#define QWEN4                                                                                                          \
    "\"num_hidden_layers\": 4, \"num_attention_heads\": 16, \"num_key_value_heads\": 2, \"hidden_size\": 2048,"        \
    " \"max_position_embeddings\": 32768"
    p = plan_text("{\"model_type\": \"qwen4_exp_text\", " QWEN4 "}", &o);
    assert_string_equal(p->family, "qwen4_exp_text");
    for (int i = 0; i < 4; i++) assert_int_equal(p->layers[i].attn_type, i == 3 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    assert_int_equal(p->layers[0].caches[0].shape[0], 2 * 16 * 128 + 32 * 128);
    assert_int_equal(p->layers[0].caches[1].bytes_per_block, 32 * 128 * 128 * 2);
    assert_int_equal(p->layers[3].n_caches, 2);
    assert_int_equal(p->blocks.per_token_bytes, 2 * 2 * 256 * 2);
    kvc_model_plan_destroy(p);
    static const char *const qsa =
        "\"indexer_n_heads\": 8, \"indexer_kv_heads\": 1, \"indexer_head_dim\": 64, \"indexer_budget\": 2048,"
        " \"indexer_compress_ratio\": 4";
    char json[1024];
    snprintf(json, sizeof json,
             "{\"architectures\": [\"Qwen4ExpForConditionalGeneration\"], \"model_type\": \"qwen4_exp\","
             " \"text_config\": {\"model_type\": \"qwen4_exp_text\", " QWEN4 ", \"layer_types\": [\"linear_attention\","
             " \"indexed_attention\", \"linear_attention\", \"full_attention\"], %s}}",
             qsa);
    p = plan_text(json, &o);
    assert_string_equal(p->family, "qwen4_exp_text");
    assert_int_equal(p->layers[1].n_caches, 3);
    assert_string_equal(p->layers[1].caches[2].name, "indexer_k_cache");
    assert_int_equal(p->layers[1].caches[2].dim, 64);
    assert_int_equal(p->blocks.per_token_bytes, 2 * (2 * 2 * 256 + 64) * 2);
    assert_true(has_warning(p, "QSA indexer (indexer_budget 2048 in blocks of 4)"));
    kvc_model_plan_destroy(p);
    static const char *const qwen4_bad[][2] = {
        {"\"indexer_n_heads\": 8", "the QSA indexer is set but indexer_kv_heads is missing"},
        {"\"indexer_n_heads\": 8, \"indexer_kv_heads\": 2, \"indexer_head_dim\": 64, \"indexer_budget\": 2048,"
         " \"indexer_compress_ratio\": 4",
         "indexer_kv_heads 2 must be 1"},
        {"\"indexer_n_heads\": 8, \"indexer_kv_heads\": 1, \"indexer_head_dim\": 64, \"indexer_budget\": 2047,"
         " \"indexer_compress_ratio\": 4",
         "indexer_budget 2047 is not divisible by indexer_compress_ratio 4"},
        {"\"ple_layer_ids\": [1]", "ple_layer_ids lists 1 layers"},
        {"\"ple_layer_ids\": \"1\"", "ple_layer_ids must be an array"}};
    for (size_t c = 0; c < sizeof qwen4_bad / sizeof qwen4_bad[0]; c++) {
        snprintf(json, sizeof json, "{\"model_type\": \"qwen4_exp_text\", " QWEN4 ", %s}", qwen4_bad[c][0]);
        p = NULL;
        assert_int_equal(kvc_model_plan_create(json, strlen(json), &o, &p), KVC_EINVAL);
        if (strstr(kvc_last_error(), qwen4_bad[c][1]) == NULL) fail_msg("%s", kvc_last_error());
    }
#undef QWEN4

    /* Dory as saved: an "mlp" entry after every attention layer, the counts doubled; 2 input, 4 recurrent (3
     * loops), 2 output attention layers */
#define DORY                                                                                                           \
    "{\"model_type\": \"dory\", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 8,"              \
    " \"sliding_window\": 16, \"max_position_embeddings\": 4096, "
    static const char *const saved_types =
        "\"num_hidden_layers\": 12, \"n_input_layers\": 2, \"n_output_layers\": 2, \"layer_types\": "
        "[\"sliding_attention\","
        " \"mlp\", \"sliding_attention\", \"mlp\", \"sliding_attention\", \"mlp\", \"full_attention\", \"mlp\","
        " \"sliding_attention\", \"mlp\", \"sliding_attention\", \"mlp\"], \"n_recurrent_loops\": 3";
    snprintf(json, sizeof json, DORY "%s}", saved_types);
    p = plan_text(json, &o);
    assert_string_equal(p->family, "dory");
    assert_int_equal(p->n_layers, 1 + 4 * 3 + 1);
    int full = 0;
    for (int i = 0; i < p->n_layers; i++) full += p->layers[i].attn_type == KVC_ATTN_FULL;
    assert_int_equal(full, 3);
    assert_true(has_warning(p, "layers 2-9 run 3 times (n_recurrent_loops), one cache per loop (per_loop): 14"));
    kvc_model_plan_destroy(p);
    snprintf(json, sizeof json, DORY "%s, \"recurrent_kv_cache_mode\": \"last_loop\"}", saved_types);
    p = plan_text(json, &o);
    assert_int_equal(p->n_layers, 6);
    kvc_model_plan_destroy(p);
    /* built in Python (no "mlp" entries): DoryConfig's layer_types, every fourth layer full */
    p = plan_text(DORY "\"num_hidden_layers\": 6, \"n_input_layers\": 1, \"n_output_layers\": 1}", &o);
    assert_int_equal(p->n_layers, 1 + 4 * 2 + 1);
    for (int i = 0; i < p->n_layers; i++)
        assert_int_equal(p->layers[i].attn_type, p->layers[i].layer == 3 ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW);
    kvc_model_plan_destroy(p);
    static const char *const dory_bad[][2] = {
        {"\"num_hidden_layers\": 6, \"n_input_layers\": 1, \"n_output_layers\": 1, \"n_recurrent_layers\": 2}",
         "n_input_layers 1 + n_recurrent_layers 2 + n_output_layers 1 must be the 6 attention layers"},
        {"\"num_hidden_layers\": 6, \"n_input_layers\": 1, \"n_output_layers\": 1, \"recurrent_kv_cache_mode\":"
         " \"all\"}",
         "recurrent_kv_cache_mode \"all\" is not per_loop or last_loop"},
        {"\"num_hidden_layers\": 6, \"n_input_layers\": 1, \"n_output_layers\": 1, \"n_recurrent_loops\": 0}",
         "n_recurrent_loops"},
        {"\"num_hidden_layers\": 4, \"layer_types\": [\"sliding_attention\", \"sliding_attention\", \"mlp\","
         " \"mlp\"]}",
         "layer_types[1]: the saved form alternates an attention layer and \"mlp\""}};
    for (size_t c = 0; c < sizeof dory_bad / sizeof dory_bad[0]; c++) {
        snprintf(json, sizeof json, DORY "%s", dory_bad[c][0]);
        p = NULL;
        assert_int_equal(kvc_model_plan_create(json, strlen(json), &o, &p), KVC_EINVAL);
        if (strstr(kvc_last_error(), dory_bad[c][1]) == NULL) fail_msg("%s", kvc_last_error());
    }
#undef DORY
}

/* Gemma 4: the full layers' own head dim (global_head_dim, 512 when absent) and, with attention_k_eq_v, their
 * own KV heads (num_global_key_value_heads); or both from per_layer_config as transformers 5.25 saves them; the
 * last layer always full; the last num_kv_shared_layers layers keep no caches; scale 1; proportional rope. */
static void test_gemma4_plan(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    /* Gemma4TextConfig's defaults where the keys are absent: sliding window 512, five sliding layers then a full
     * one of 4 KV heads of 512; bf16: 2 * 4 * 512 * 2 bytes per token of the full layer */
    kvc_model_plan *p =
        plan_text("{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 4, \"max_position_embeddings\": 131072}",
                  &o);
    assert_string_equal(p->family, "gemma4");
    assert_string_equal(p->rope_type, "proportional");
    assert_true(p->scale == 1.0);
    assert_int_equal(p->head_dim, 256);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(p->layers[i].attn_type, i == 5 ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW);
        assert_int_equal(p->layers[i].sliding_window, i == 5 ? 0 : 512);
        for (int c = 0; c < 2; c++) {
            assert_int_equal(p->layers[i].caches[c].num_head, 4);
            assert_int_equal(p->layers[i].caches[c].dim, i == 5 ? 512 : 256);
        }
    }
    assert_int_equal(p->blocks.per_token_bytes, 2 * 4 * 512 * 2);
    assert_true(has_warning(p, "1 of the 6 layers have their own head dim"));
    kvc_model_plan_destroy(p);

    /* The wrapper's text_config with the legacy keys: attention_k_eq_v gives the full layers 2 KV heads, one per
     * rank at tp 2 and replicated at tp 4 (said once); the sliding layers keep 8 */
    for (int64_t tp = 2; tp <= 4; tp += 2) {
        o.tp = tp;
        p = plan_text("{\"architectures\": [\"Gemma4ForConditionalGeneration\"], \"model_type\": \"gemma4\","
                      " \"vision_config\": {\"model_type\": \"gemma4_vision\"}, \"text_config\": {\"model_type\":"
                      " \"gemma4_text\", \"num_hidden_layers\": 12, \"num_attention_heads\": 16,"
                      " \"num_key_value_heads\": 8, \"head_dim\": 256, \"global_head_dim\": 512,"
                      " \"num_global_key_value_heads\": 2, \"attention_k_eq_v\": true, \"sliding_window\": 1024,"
                      " \"max_position_embeddings\": 262144}}",
                      &o);
        for (int i = 0; i < 12; i++) {
            assert_int_equal(p->layers[i].caches[1].num_head, (i + 1) % 6 == 0 ? 1 : 8 / tp);
            assert_int_equal(p->layers[i].caches[1].dim, (i + 1) % 6 == 0 ? 512 : 256);
        }
        assert_int_equal(p->blocks.per_token_bytes, 2 * 2 * 1 * 512 * 2);
        int replicated = 0;
        for (int w = 0; w < p->n_warnings; w++) replicated += strstr(p->warnings[w], "replicated") != NULL;
        assert_int_equal(replicated, tp == 4 ? 1 : 0);
        kvc_model_plan_destroy(p);
    }
    o.tp = 1;
    /* per_layer_config given as null or {}: every layer the model's, global_head_dim not read (as transformers) */
    for (int empty = 0; empty < 2; empty++) {
        char cfg[320];
        snprintf(cfg, sizeof cfg,
                 "{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
                 " \"global_head_dim\": 128, \"max_position_embeddings\": 4096, \"per_layer_config\": %s}",
                 empty ? "{}" : "null");
        p = plan_text(cfg, &o);
        assert_int_equal(p->layers[5].caches[0].dim, 256);
        kvc_model_plan_destroy(p);
    }
    /* without attention_k_eq_v num_global_key_value_heads is not read */
    p = plan_text("{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 4, \"global_head_dim\": 128, \"num_global_key_value_heads\": 1,"
                  " \"max_position_embeddings\": 4096}",
                  &o);
    assert_int_equal(p->layers[5].caches[0].num_head, 4);
    assert_int_equal(p->layers[5].caches[0].dim, 128);
    kvc_model_plan_destroy(p);

    /* per_layer_config (zero-padded keys), a sliding last layer planned full, two KV-shared layers: layer 6 reads
     * layer 4's cache, layer 7 layer 5's; 6 layers listed */
    p = plan_text("{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 8, \"num_attention_heads\": 8,"
                  " \"num_key_value_heads\": 1, \"head_dim\": 64, \"sliding_window\": 128,"
                  " \"max_position_embeddings\": 4096, \"num_kv_shared_layers\": 2, \"layer_types\":"
                  " [\"sliding_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\","
                  " \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"sliding_attention\"],"
                  " \"per_layer_config\": {\"2\": {\"head_dim\": 128}, \"5\": {\"head_dim\": 128},"
                  " \"7\": {\"head_dim\": 128, \"skip\": []}}}",
                  &o);
    assert_int_equal(p->n_layers, 6);
    for (int i = 0; i < 6; i++) assert_int_equal(p->layers[i].caches[0].dim, i == 2 || i == 5 ? 128 : 64);
    assert_true(has_warning(p, "the last layer (7) is sliding; planned full"));
    assert_true(has_warning(p, "layers 6-7 read the caches"));
    assert_int_equal(p->blocks.per_token_bytes, 2 * 2 * 128 * 2);
    kvc_model_plan_destroy(p);
}

/* Hybrids whose keys have unequal layer counts are cut into groups of equal size (vLLM's rule), so that no
 * key leaves part of the shared pool's block ids unused: Gemma-3-1B's 22 window and 4 full layers become 6
 * window keys of 4 or 3 layers and the full key; 40 window layers and 1 full one stay within KVC_MAX_MANAGERS. */
static void test_equal_layer_groups(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    o.max_model_len = 4096;
    char json[2048];
    int n = snprintf(json, sizeof json,
                     "{\"architectures\": [\"FooForCausalLM\"], \"num_hidden_layers\": 26, \"num_attention_heads\": 4,"
                     " \"num_key_value_heads\": 1, \"head_dim\": 256, \"max_position_embeddings\": 32768,"
                     " \"sliding_window\": 512, \"layer_types\": [");
    for (int i = 0; i < 26; i++)
        n += snprintf(json + n, sizeof json - (size_t)n, "%s\"%s\"", i ? ", " : "",
                      i % 6 == 5 ? "full_attention" : "sliding_attention");
    snprintf(json + n, sizeof json - (size_t)n, "]}");
    kvc_model_plan *p = plan_text(json, &o);
    assert_int_equal(p->blocks.n_groups, 7);
    int64_t layers_of[7] = {0}, ids = 1;
    for (int32_t l = 0; l < p->cache_info.n_layer_infos; l++) {
        const char *key = kvc_cache_entry_group_key(&p->cache_info.layer_infos[l].caches[0]);
        int32_t g = 0;
        while (strcmp(p->blocks.groups[g].key, key) != 0) g++;
        layers_of[g]++;
    }
    for (int g = 0; g < 7; g++) {
        const kvc_group_plan *gp = &p->blocks.groups[g];
        const bool full = strcmp(gp->key, "FullAttention") == 0;
        assert_true(full || strncmp(gp->key, "SlidingWindow.g", 15) == 0);
        assert_true(layers_of[g] == 4 || (!full && layers_of[g] == 3));
        assert_int_equal(gp->pool_id, 1);
        ids += full ? 4096 / 128 : 512 / 128 + 1;
    }
    assert_int_equal(p->blocks.groups[0].block_num, ids);
    kvc_manager *mgr = NULL;
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = 4096;
    if (kvc_manager_create(&p->cache_info, &p->blocks, &mp, &mgr) != KVC_OK) fail_msg("%s", kvc_last_error());
    kvc_manager_destroy(mgr);
    kvc_model_plan_destroy(p);

    n = snprintf(json, sizeof json,
                 "{\"architectures\": [\"FooForCausalLM\"], \"num_hidden_layers\": 41, \"num_attention_heads\": 4,"
                 " \"num_key_value_heads\": 1, \"head_dim\": 256, \"max_position_embeddings\": 32768,"
                 " \"sliding_window\": 512, \"layer_types\": [\"full_attention\"");
    for (int i = 1; i < 41; i++) n += snprintf(json + n, sizeof json - (size_t)n, ", \"sliding_attention\"");
    snprintf(json + n, sizeof json - (size_t)n, "]}");
    p = plan_text(json, &o);
    assert_true(p->blocks.n_groups <= KVC_MAX_MANAGERS && p->blocks.n_groups > 2);
    kvc_model_plan_destroy(p);
}

/* An unknown architecture: planned from generic fields with a warning, or refused naming what is missing. */
static void test_unknown_architecture(void **state) {
    (void)state;
    static const char ok[] = "{\"architectures\": [\"FooForCausalLM\"], \"num_hidden_layers\": 2,"
                             " \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"hidden_size\": 1024,"
                             " \"max_position_embeddings\": 2048, \"torch_dtype\": \"float16\"}";
    kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *plan = NULL;
    assert_int_equal(kvc_model_plan_create(ok, sizeof ok - 1, &o, &plan), KVC_OK);
    assert_string_equal(plan->family, "generic");
    assert_int_equal(plan->head_dim, 128);
    assert_int_equal(plan->options.kv_dtype, KVC_DTYPE_F16);
    assert_true(plan->n_warnings >= 1);
    assert_non_null(strstr(plan->warnings[0], "not a known family"));
    kvc_model_plan_destroy(plan);

    /* sizes under the other names configs give them (transformers' attribute maps), and KV heads stated by
     * multi_query (Falcon-7B, GPT-BigCode: one), Falcon's num_kv_heads, ChatGLM's multi_query_group_num;
     * each was planned with one KV head per query head (Falcon-7B: 71x the bytes) or refused */
    static const struct {
        const char *json;
        int64_t layers, heads, kv_heads, head_dim, max_pos;
    } named[] = {
        {"{\"model_type\": \"falcon\", \"hidden_size\": 4544, \"num_hidden_layers\": 32, \"num_attention_heads\": 71,"
         " \"multi_query\": true, \"new_decoder_architecture\": false}",
         32, 71, 1, 64, 0},
        {"{\"model_type\": \"falcon\", \"hidden_size\": 8192, \"num_hidden_layers\": 60, \"num_attention_heads\": 128,"
         " \"num_kv_heads\": 8, \"multi_query\": true, \"new_decoder_architecture\": true}",
         60, 128, 8, 64, 0},
        {"{\"model_type\": \"gpt_bigcode\", \"n_embd\": 6144, \"n_head\": 48, \"n_layer\": 40, \"n_positions\": 8192,"
         " \"multi_query\": true}",
         40, 48, 1, 128, 8192},
        {"{\"model_type\": \"mpt\", \"d_model\": 4096, \"n_heads\": 32, \"n_layers\": 32, \"max_seq_len\": 2048}", 32,
         32, 32, 128, 2048},
        {"{\"model_type\": \"chatglm\", \"hidden_size\": 4096, \"num_layers\": 28, \"num_attention_heads\": 32,"
         " \"multi_query_attention\": true, \"multi_query_group_num\": 2, \"kv_channels\": 96, \"seq_length\": 8192}",
         28, 32, 2, 96, 8192},
        {"{\"model_type\": \"dbrx\", \"d_model\": 6144, \"n_heads\": 48, \"n_layers\": 40, \"max_seq_len\": 32768,"
         " \"attn_config\": {\"kv_n_heads\": 8}}",
         40, 48, 8, 128, 32768},
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        o.max_model_len = named[i].max_pos > 0 ? 0 : 1024; /* 0: the config's own length */
        if (kvc_model_plan_create(named[i].json, strlen(named[i].json), &o, &plan) != KVC_OK)
            fail_msg("case %zu: %s", i, kvc_last_error());
        assert_int_equal(plan->n_layers, named[i].layers);
        assert_int_equal(plan->num_attention_heads, named[i].heads);
        assert_int_equal(plan->num_key_value_heads, named[i].kv_heads);
        assert_int_equal(plan->head_dim, named[i].head_dim);
        assert_int_equal(plan->layers[0].caches[0].num_head, named[i].kv_heads);
        if (named[i].max_pos > 0) assert_int_equal(plan->options.max_model_len, named[i].max_pos);
        kvc_model_plan_destroy(plan);
    }
    o = kvc_plan_default_options();
    static const char no_groups[] = "{\"model_type\": \"chatglm\", \"hidden_size\": 4096, \"num_layers\": 2,"
                                    " \"num_attention_heads\": 32, \"multi_query_attention\": true}";
    assert_int_equal(kvc_model_plan_create(no_groups, sizeof no_groups - 1, &o, &plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "multi_query_group_num is missing"));

    /* a window with sliding_window_pattern and no layer_types: every N-th layer full (Cohere2, was planned all
     * sliding: 8 of its 32 layers need every position), or an L/G string repeated (Exaone 4) */
    static const struct {
        const char *pattern;
        const char *full; /* per layer: 1 full, 0 sliding */
    } patterns[] = {{"4", "00010001"}, {"\"LLLG\"", "00010001"}, {"\"GL\"", "10101010"}, {"1", "11111111"}};
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"model_type\": \"cohere2\", \"hidden_size\": 1024, \"num_hidden_layers\": 8,"
                 " \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"max_position_embeddings\": 8192,"
                 " \"sliding_window\": 512, \"sliding_window_pattern\": %s}",
                 patterns[i].pattern);
        plan = plan_text(json, &o);
        for (int l = 0; l < 8; l++)
            assert_int_equal(plan->layers[l].attn_type,
                             patterns[i].full[l] == '1' ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW);
        kvc_model_plan_destroy(plan);
    }
    /* Cohere 2 and EXAONE 4.0 without the pattern or the window: their config classes' 4 and 4096 (Cohere 2 was
     * planned all full without a window, all sliding with one; EXAONE 4.0 all full) */
    static const char *const family_4[] = {"cohere2", "exaone4"};
    for (size_t i = 0; i < 2; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"model_type\": \"%s\", \"hidden_size\": 1024, \"num_hidden_layers\": 8,"
                 " \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"max_position_embeddings\": 8192}",
                 family_4[i]);
        plan = plan_text(json, &o);
        assert_string_equal(plan->family, family_4[i]);
        for (int l = 0; l < 8; l++) {
            assert_int_equal(plan->layers[l].attn_type, l % 4 == 3 ? KVC_ATTN_FULL : KVC_ATTN_SLIDING_WINDOW);
            if (l % 4 != 3) assert_int_equal(plan->layers[l].sliding_window, 4096);
        }
        kvc_model_plan_destroy(plan);
    }
    static const char bad_pattern[] = "{\"model_type\": \"exaone4\", \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
                                      " \"num_attention_heads\": 32, \"max_position_embeddings\": 8192,"
                                      " \"sliding_window\": 512, \"sliding_window_pattern\": \"LXG\"}";
    assert_int_equal(kvc_model_plan_create(bad_pattern, sizeof bad_pattern - 1, &o, &plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "sliding_window_pattern \"LXG\""));

    /* layers that are not causal self-attention are named: cross-attention (Llama 3.2 Vision), lightning
     * attention (MiniMax) */
    static const char *const other[2][2] = {{"\"cross_attention_layers\": [1]", "cross-attention layers"},
                                            {"\"attn_type_list\": [0, 1]", "lightning linear-attention layers"}};
    for (int i = 0; i < 2; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"model_type\": \"other\", \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
                 " \"num_attention_heads\": 8, \"max_position_embeddings\": 8192, %s}",
                 other[i][0]);
        plan = plan_text(json, &o);
        bool named_it = false;
        for (int w = 0; w < plan->n_warnings; w++) named_it |= strstr(plan->warnings[w], other[i][1]) != NULL;
        assert_true(named_it);
        kvc_model_plan_destroy(plan);
    }

    /* attention_chunk_size without chunked layers (no layer_types, not Llama 4) is named as not planned: full
     * causal layers are an upper bound */
    static const char chunked[] = "{\"architectures\": [\"FooForCausalLM\"], \"num_hidden_layers\": 2,"
                                  " \"num_attention_heads\": 8, \"hidden_size\": 1024, \"attention_chunk_size\": 8192,"
                                  " \"max_position_embeddings\": 65536}";
    assert_int_equal(kvc_model_plan_create(chunked, sizeof chunked - 1, &o, &plan), KVC_OK);
    assert_non_null(strstr(plan->warnings[plan->n_warnings - 1], "attention_chunk_size 8192"));
    kvc_model_plan_destroy(plan);

    static const char bad[] = "{\"architectures\": [\"FooForCausalLM\"], \"num_key_value_heads\": 2}";
    plan = (kvc_model_plan *)&plan;
    assert_int_equal(kvc_model_plan_create(bad, sizeof bad - 1, &o, &plan), KVC_EINVAL);
    assert_null(plan);
    assert_non_null(strstr(kvc_last_error(), "num_hidden_layers"));
    assert_non_null(strstr(kvc_last_error(), "num_attention_heads"));
    assert_non_null(strstr(kvc_last_error(), "head_dim or hidden_size"));
}

typedef struct bad_case {
    const char *json;
    const char *needle; /* must appear in the error */
} bad_case;

/* DeepSeek-V4: a K = V window on every layer; compressed entries (Compressed_<ratio> keys, block_size entries
 * per block) with the indexer's keys on CSA layers; the compressors' pending positions as states. */
/* Nemotron-NAS (Llama-3.3-Nemotron-Super-49B's shape): block_configs[i].attention gives each layer's KV heads
 * (num_attention_heads / n_heads_in_group) or none (no_op, replace_with_linear); no num_key_value_heads. Before,
 * every layer was planned with one KV head per query head (13x the Super's bytes). */
static void test_nemotron_nas_blocks(void **state) {
    (void)state;
#define NAS_HEAD                                                                                                       \
    "{\"architectures\": [\"DeciLMForCausalLM\"], \"model_type\": \"nemotron-nas\", \"hidden_size\": 64,"              \
    " \"num_attention_heads\": 8, \"num_key_value_heads\": null, \"num_hidden_layers\": %d,"                           \
    " \"max_position_embeddings\": 1024, \"torch_dtype\": \"bfloat16\", \"block_configs\": [%s]}"
#define NAS_ATTN(x) "{\"attention\": {" x "}, \"ffn\": {\"no_op\": false}}"
    char json[2048];
    snprintf(json, sizeof json, NAS_HEAD, 4,
             NAS_ATTN("\"n_heads_in_group\": 2, \"no_op\": false, \"replace_with_linear\": false,"
                      " \"window_length\": null") ","                                               /* 4 KV heads */
             NAS_ATTN("\"n_heads_in_group\": null, \"no_op\": true") ","                            /* no cache */
             NAS_ATTN("\"n_heads_in_group\": null, \"replace_with_linear\": true") ","              /* no cache */
             NAS_ATTN("\"n_heads_in_group\": 4, \"no_op\": false, \"replace_with_linear\": null")); /* 2 KV heads */
    kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *plan = plan_text(json, &o);
    assert_int_equal(plan->n_layers, 2);
    assert_int_equal(plan->layers[0].layer, 0);
    assert_int_equal(plan->layers[1].layer, 3);
    assert_int_equal(plan->layers[0].caches[0].num_head, 4);
    assert_int_equal(plan->layers[1].caches[0].num_head, 2);
    assert_int_equal(plan->num_key_value_heads, 4); /* the first attention layer's */
    assert_int_equal(plan->blocks.per_token_bytes, 2 * (4 + 2) * 8 * 2);
    assert_true(has_warning(plan, "2 of the 4 layers"));
    kvc_model_plan_destroy(plan);
    static const struct {
        int layers;
        const char *blocks, *needle;
    } bad[] = {
        {2, NAS_ATTN("\"n_heads_in_group\": 2"), "block_configs has 1 entries for 2 layers"},
        {1, NAS_ATTN("\"n_heads_in_group\": 3"), "block_configs[0].attention.n_heads_in_group 3 does not divide"},
        {1, NAS_ATTN("\"n_heads_in_group\": 2, \"window_length\": 64"), "block_configs[0].attention.window_length"},
        {1, NAS_ATTN("\"no_op\": true"), "block_configs: no layer has attention"},
        {1, "{\"ffn\": {}}", "block_configs[0].attention is missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(json, sizeof json, NAS_HEAD, bad[i].layers, bad[i].blocks);
        expect_refusal_text(json, bad[i].needle);
    }
#undef NAS_ATTN
#undef NAS_HEAD
}

/* MiniMax-M3: the layers running a Lightning Indexer (sparse_attention_config.sparse_attention_freq 1, or layer_types
 * "minimax_m3_sparse") keep one index key per token in the KV dtype beside K/V, as transformers' sparse cache layer
 * does (were planned as plain full attention, the keys left out; layer_types was refused) */
/* A quantization_config asking for an FP8 KV cache (kv_cache_scheme, kv_cache_quant_algo) is planned in the config's
 * dtype, with a warning naming the key and the option that plans it (was silent) */
static void test_fp8_cache_warning(void **state) {
    (void)state;
    static const char *const Q[] = {
        "{\"quant_method\": \"compressed-tensors\", \"kv_cache_scheme\": {\"num_bits\": 8}}",
        "{\"quant_method\": \"modelopt\", \"kv_cache_quant_algo\": \"FP8\"}",
        "{\"quant_method\": \"fp8\", \"kv_cache_scheme\": null}"};
    kvc_plan_options o = kvc_plan_default_options();
    for (int i = 0; i < 3; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 8,"
                 " \"hidden_size\": 512, \"max_position_embeddings\": 64, \"torch_dtype\": \"bfloat16\","
                 " \"quantization_config\": %s}",
                 Q[i]);
        kvc_model_plan *p = plan_text(json, &o);
        assert_int_equal(p->options.kv_dtype, KVC_DTYPE_BF16);
        assert_true(has_warning(p, "--kv-dtype fp8_e4m3") == (i < 2));
        assert_true(i == 2 || has_warning(p, i == 0 ? "kv_cache_scheme" : "kv_cache_quant_algo"));
        kvc_model_plan_destroy(p);
    }
}

static void test_minimax_m3_indexer(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *p = plan_text(
        "{\"model_type\": \"minimax_m3\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
        " \"num_key_value_heads\": 2, \"head_dim\": 16, \"hidden_size\": 128, \"max_position_embeddings\": 64,"
        " \"torch_dtype\": \"bfloat16\", \"sparse_attention_config\": {\"sparse_index_dim\": 64,"
        " \"sparse_attention_freq\": [0, 1, 1, 0]}}",
        &o);
    for (int l = 0; l < 4; l++) assert_int_equal(p->layers[l].n_caches, l == 1 || l == 2 ? 3 : 2);
    assert_string_equal(p->layers[1].caches[2].name, "indexer_k_cache");
    assert_int_equal(p->layers[1].caches[2].bytes_per_token, 64 * 2);
    assert_int_equal(p->blocks.per_token_bytes, 4 * 2 * 2 * 16 * 2 + 2 * 64 * 2);
    assert_true(has_warning(p, "2 of the 4 layers run a Lightning Indexer"));
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"minimax_m3_vl\", \"torch_dtype\": \"bfloat16\", \"text_config\": {"
                  " \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 16,"
                  " \"hidden_size\": 128, \"max_position_embeddings\": 64,"
                  " \"layer_types\": [\"full_attention\", \"minimax_m3_sparse\"]}}",
                  &o);
    assert_true(p->layers[0].n_caches == 2 && p->layers[1].n_caches == 3);
    assert_int_equal(p->layers[1].caches[2].bytes_per_token, 128 * 2);
    kvc_model_plan_destroy(p);
    expect_refusal_text("{\"model_type\": \"minimax_m3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                        " \"hidden_size\": 128, \"max_position_embeddings\": 64,"
                        " \"sparse_attention_config\": {\"sparse_attention_freq\": [1]}}",
                        "sparse_attention_config.sparse_attention_freq has 1 entries for 2 layers");
}

static void test_deepseek_v4(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    o.kv_dtype_set = true;
    o.kv_dtype = KVC_DTYPE_BF16;
    /* the config class's defaults (head_dim 512, one KV head, window 128): layers 0-2 HCA (128), 3 CSA (4) */
    kvc_model_plan *p = plan_text("{\"architectures\": [\"DeepseekV4ForCausalLM\"], \"model_type\": \"deepseek_v4\","
                                  " \"num_hidden_layers\": 4, \"num_attention_heads\": 64, \"hidden_size\": 4096,"
                                  " \"max_position_embeddings\": 1048576}",
                                  &o);
    assert_string_equal(p->family, "deepseek_v4");
    assert_true(p->sinks && p->hybrid);
    assert_int_equal(p->n_layers, 12);
    const kvc_plan_layer *w = &p->layers[0], *hca = &p->layers[1], *hs = &p->layers[2];
    assert_true(w->attn_type == KVC_ATTN_SLIDING_WINDOW && w->sliding_window == 128 && w->n_caches == 1);
    assert_string_equal(w->caches[0].name, "kv_cache");
    assert_int_equal(w->caches[0].bytes_per_token, 512 * 2);
    assert_true(hca->layer == 0 && hca->attn_type == KVC_ATTN_FULL && hca->compress_ratio == 128);
    assert_string_equal(hca->caches[0].name, "compressed_kv");
    assert_int_equal(hca->caches[0].bytes_per_token, 512 * 2 / 128);
    assert_true(hs->attn_type == KVC_ATTN_MAMBA && hs->n_caches == 1);
    assert_string_equal(hs->caches[0].name, "compressor_buffer");
    assert_int_equal(hs->caches[0].bytes_per_block, 127 * 2 * 512 * 2);
    const kvc_plan_layer *csa = &p->layers[10], *cs = &p->layers[11];
    assert_true(csa->layer == 3 && csa->compress_ratio == 4 && csa->n_caches == 2);
    assert_string_equal(csa->caches[1].name, "indexer_kv");
    assert_int_equal(csa->caches[1].bytes_per_token, 128 * 2 / 4);
    assert_int_equal(cs->n_caches, 4);
    const int64_t csa_state[4] = {3 * 4 * 512, 4 * 2 * 512, 3 * 4 * 128, 4 * 2 * 128};
    for (int32_t c = 0; c < 4; c++) assert_int_equal(cs->caches[c].bytes_per_block, 2 * csa_state[c]);
    /* the cache description: block_size entries per block of a compressed key */
    bool seen = false;
    for (int32_t l = 0; l < p->cache_info.n_layer_infos; l++) {
        const kvc_cache_entry *e = &p->cache_info.layer_infos[l].caches[0];
        if (strcmp(e->manager_key, "Compressed_128") != 0) continue;
        assert_int_equal(e->compress_ratio, 128);
        assert_int_equal(e->block_size % 128, 0);
        seen = true;
    }
    assert_true(seen);
    assert_true(has_warning(p, "1 CSA and 3 HCA layers"));
    kvc_model_plan_destroy(p);

    /* legacy keys: compress_ratios (one more entry, the MTP layer's), compress_rate_csa; a window-only layer */
    p = plan_text("{\"model_type\": \"deepseek_v4\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 256, \"head_dim\": 128, \"index_head_dim\": 64, \"sliding_window\": 64,"
                  " \"max_position_embeddings\": 4096, \"compress_ratios\": [0, 4, 128, 4, 0],"
                  " \"compress_rate_csa\": 8, \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 16,"
                  " \"original_max_position_embeddings\": 256}}",
                  &o);
    assert_int_equal(p->n_layers, 1 + 3 + 3 + 3);
    assert_true(p->layers[0].layer == 0 && p->layers[1].layer == 1 && p->layers[0].sliding_window == 64);
    assert_true(p->layers[2].compress_ratio == 8 && p->layers[2].caches[1].dim == 64);
    assert_int_equal(p->layers[3].caches[1].shape[0], 8); /* compressor_overlap [8, 2 x 128] */
    assert_int_equal(p->layers[5].compress_ratio, 128);   /* layer 2: HCA */
    assert_int_equal(p->layers[8].compress_ratio, 8);     /* layer 3: CSA */
    /* the compressed layers' YaRN without its attention factor (DeepseekV4Config sets 1) */
    assert_string_equal(p->rope_type, "yarn");
    assert_true(p->rope_factor == 16.0 && p->rope_attention_factor == 1.0);
    kvc_model_plan_destroy(p);
}

/* HY V4: DeepSeek-V3.2's latent caches and indexer keys (f32, as the runtime keeps them: GLM-5's), the keys only on
 * its "full" indexer layers (the default: layer 0, then every fourth from layer 1), sinks. */
static void test_hy_v4(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    o.kv_dtype_set = true;
    o.kv_dtype = KVC_DTYPE_BF16;
    const char *cfg = "{\"architectures\": [\"HYV4ForCausalLM\"], \"model_type\": \"hy_v4\", \"num_hidden_layers\": 6,"
                      " \"num_attention_heads\": 32, \"hidden_size\": 2816, \"kv_lora_rank\": 512,"
                      " \"qk_rope_head_dim\": 64, \"qk_nope_head_dim\": 192, \"v_head_dim\": 256,"
                      " \"max_position_embeddings\": 262144%s}";
    char json[512];
    snprintf(json, sizeof json, cfg, "");
    kvc_model_plan *p = plan_text(json, &o);
    assert_string_equal(p->family, "hy_v4");
    assert_true(p->mla && p->sinks);
    for (int32_t l = 0; l < 6; l++) assert_int_equal(p->layers[l].n_caches, l == 0 || l == 1 || l == 5 ? 3 : 2);
    assert_int_equal(p->layers[1].caches[2].bytes_per_token, 4 * 128); /* index_head_dim 128 by default, f32 */
    assert_int_equal(p->blocks.per_token_bytes, 6 * (512 + 64) * 2 + 3 * 4 * 128);
    assert_true(has_warning(p, "as kvcache's runtime keeps them"));
    assert_true(has_warning(p, "3 of the 6 layers run their own indexer"));
    kvc_model_plan_destroy(p);
    snprintf(json, sizeof json, cfg,
             ", \"index_head_dim\": 64, \"indexer_types\": [\"full\", \"shared\", \"shared\", \"full\", \"shared\","
             " \"shared\"], \"layer_types\": null");
    p = plan_text(json, &o);
    for (int32_t l = 0; l < 6; l++) assert_int_equal(p->layers[l].n_caches, l == 0 || l == 3 ? 3 : 2);
    assert_int_equal(p->layers[3].caches[2].dim, 64);
    kvc_model_plan_destroy(p);
}

/* Rules read off transformers' config classes where a key is absent or null, as the runtime reads them: no length
 * key plans vLLM's 2048 positions with a warning; Bamba without attn_layer_indices has Mamba2 layers alone; LFM2
 * without layer_types or full_attn_idxs attends on every layer; GLM-4.5's head_dim is hidden // heads rounded down.
 * Types transformers lists as causal LMs that are no KV decoders are refused by name with the reason. */
static void test_class_fallbacks(void **state) {
    (void)state;
    kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *p = plan_text("{\"model_type\": \"mamba2\", \"num_hidden_layers\": 2, \"hidden_size\": 64,"
                                  " \"num_heads\": 4, \"head_dim\": 32, \"n_groups\": 1, \"state_size\": 16,"
                                  " \"conv_kernel\": 4}",
                                  &o);
    assert_int_equal(p->options.max_model_len, 2048);
    assert_true(has_warning(p, "no length key") && has_warning(p, "assuming 2048 positions"));
    kvc_model_plan_destroy(p);
    o.max_model_len = 8192; /* given: taken as is, as vLLM does, without the warning */
    p = plan_text("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 512}",
                  &o);
    assert_true(p->options.max_model_len == 8192 && !has_warning(p, "no length key"));
    kvc_model_plan_destroy(p);
    o.max_model_len = 0;
    p = plan_text("{\"model_type\": \"bamba\", \"num_hidden_layers\": 3, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 1024, \"max_position_embeddings\": 4096, \"attn_layer_indices\": null,"
                  " \"mamba_n_heads\": 32, \"mamba_d_head\": 64, \"mamba_d_state\": 128, \"mamba_d_conv\": 4,"
                  " \"mamba_n_groups\": 1}",
                  &o);
    for (int i = 0; i < 3; i++) assert_int_equal(p->layers[i].attn_type, KVC_ATTN_MAMBA);
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"lfm2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 512, \"max_position_embeddings\": 4096, \"full_attn_idxs\": null}",
                  &o);
    assert_true(p->n_layers == 2 && p->layers[0].attn_type == KVC_ATTN_FULL && p->layers[1].attn_type == KVC_ATTN_FULL);
    kvc_model_plan_destroy(p);
    p = plan_text("{\"model_type\": \"glm4_moe\", \"num_hidden_layers\": 2, \"num_attention_heads\": 96,"
                  " \"num_key_value_heads\": 8, \"hidden_size\": 4096, \"max_position_embeddings\": 4096}",
                  &o);
    assert_int_equal(p->layers[0].caches[0].dim, 42);
    kvc_model_plan_destroy(p);
    /* Lara Mini (planned only): LaraMiniConfig's layers without layer_types (linear, sliding, linear, full, sliding),
     * window 512, Qwen3-Next's Gated DeltaNet states */
    p = plan_text("{\"model_type\": \"lara_mini\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
                  " \"hidden_size\": 512, \"max_position_embeddings\": 4096, \"linear_num_key_heads\": 2,"
                  " \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8, \"linear_value_head_dim\": 12}",
                  &o);
    static const kvc_attn_type LARA[6] = {KVC_ATTN_MAMBA, KVC_ATTN_SLIDING_WINDOW, KVC_ATTN_MAMBA,
                                          KVC_ATTN_FULL,  KVC_ATTN_SLIDING_WINDOW, KVC_ATTN_MAMBA};
    for (int i = 0; i < 6; i++) assert_int_equal(p->layers[i].attn_type, LARA[i]);
    assert_true(p->layers[1].sliding_window == 512 && p->layers[1].caches[0].num_head == 4);
    assert_true(p->layers[0].caches[0].shape[0] == 2 * 2 * 8 + 4 * 12 && p->layers[0].caches[1].shape[2] == 12);
    kvc_model_plan_destroy(p);
    /* Kimi-Linear as transformers 5 saves it: no linear_attn_config; KimiLinearConfig's layers (MLA when i > 0 and
     * i % 4 == 0) and its top-level KDA sizes (heads 32 of 128 when absent; the q, k, v convs side by side) */
    p = plan_text("{\"model_type\": \"kimi_linear\", \"num_hidden_layers\": 5, \"num_attention_heads\": 8,"
                  " \"kv_lora_rank\": 64, \"qk_rope_head_dim\": 16, \"qk_nope_head_dim\": 32, \"v_head_dim\": 32,"
                  " \"max_position_embeddings\": 4096, \"linear_num_heads\": 4, \"linear_conv_kernel_dim\": 3}",
                  &o);
    for (int i = 0; i < 5; i++) assert_int_equal(p->layers[i].attn_type, i == 4 ? KVC_ATTN_FULL : KVC_ATTN_MAMBA);
    assert_true(p->layers[0].caches[0].shape[0] == 3 * 4 * 128 && p->layers[0].caches[0].shape[1] == 3 - 1);
    kvc_model_plan_destroy(p);
    static const char *const refused[][2] = {
        {"bart", "BART is an encoder-decoder"}, {"whisper", "cross-attention"}, {"trocr", "cross-attention"},
        {"musicgen_melody", "num_codebooks"},   {"blt", "Byte Latent"},         {"xlm", "masked language model"},
        {"reformer", "past_buckets_states"},    {"xlnet", "permutation"},       {"xlstm", "matrix memory"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"model_type\": \"%s\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                 " \"hidden_size\": 512, \"max_position_embeddings\": 1024}",
                 refused[i][0]);
        kvc_model_plan *none = NULL;
        assert_int_equal(kvc_model_plan_create(json, strlen(json), &o, &none), KVC_EINVAL);
        assert_null(none);
        if (!strstr(kvc_last_error(), "is not planned") || !strstr(kvc_last_error(), refused[i][1]))
            fail_msg("%s: \"%s\"", refused[i][0], kvc_last_error());
    }
    /* a wrapper refused by its own type whatever its text model: Gemma 4 Unified's assistant reads its target's caches
     */
    const char *assistant = "{\"model_type\": \"gemma4_unified_assistant\", \"text_config\": {\"model_type\":"
                            " \"gemma4_unified_text\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,"
                            " \"head_dim\": 64, \"max_position_embeddings\": 1024, \"num_kv_shared_layers\": 2}}";
    kvc_model_plan *none = NULL;
    assert_int_equal(kvc_model_plan_create(assistant, strlen(assistant), &o, &none), KVC_EINVAL);
    assert_non_null(
        strstr(kvc_last_error(), "\"gemma4_unified_assistant\" is not planned: Gemma 4 Unified's assistant"));
}

static void test_malformed_configs(void **state) {
    (void)state;
    const bad_case cases[] = {
        {"{\"model_type\": \"llama\", ", "invalid JSON"},
        {"[1, 2]", "top level"},
        {"{\"model_type\": \"llama\", \"num_attention_heads\": 32, \"hidden_size\": 4096}", "num_hidden_layers"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": \"32\", \"num_attention_heads\": 32, \"hidden_size\": "
         "4096}",
         "num_hidden_layers must be an integer"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 32, \"num_key_value_heads\": "
         "6,"
         " \"hidden_size\": 4096, \"max_position_embeddings\": 4096}",
         "num_key_value_heads 6"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 32, \"hidden_size\": 4001,"
         " \"max_position_embeddings\": 4096}",
         "hidden_size 4001"},
        {"{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 3, \"num_attention_heads\": 8, \"head_dim\": 64,"
         " \"max_position_embeddings\": 4096, \"sliding_window\": 128,"
         " \"layer_types\": [\"sliding_attention\", \"full_attention\"]}",
         "layer_types has 2 entries"},
        {"{\"model_type\": \"mistral\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64,"
         " \"max_position_embeddings\": 4096, \"layer_types\": [\"sliding_attention\", \"full_attention\"],"
         " \"sliding_window\": null}",
         "sliding_window is missing"},
        {"{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64,"
         " \"max_position_embeddings\": 4096, \"sliding_window\": 8, \"layer_types\": [\"local\", \"full_attention\"]}",
         "layer_types[0]"},
#define HY_V4_HEAD                                                                                                     \
    "{\"model_type\": \"hy_v4\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"hidden_size\": 256, "         \
    "\"max_position_embeddings\": 4096, \"kv_lora_rank\": 64, \"qk_rope_head_dim\": 16, \"qk_nope_head_dim\": 32, "    \
    "\"v_head_dim\": 32, "
        {HY_V4_HEAD "\"indexer_types\": [\"shared\", \"full\"]}", "indexer_types[0] is \"shared\""},
        {HY_V4_HEAD "\"indexer_types\": [\"full\", \"sparse\"]}", "indexer_types[1] must be"},
        {HY_V4_HEAD "\"indexer_types\": [\"full\"]}", "indexer_types has 1 entries"},
        {HY_V4_HEAD "\"layer_types\": [\"indexed_attention\", \"full_attention\"]}", "layer_types[1] must be"},
#define DSV4_HEAD                                                                                                      \
    "{\"model_type\": \"deepseek_v4\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"hidden_size\": 256, "   \
    "\"max_position_embeddings\": 4096, "
        {DSV4_HEAD "\"layer_types\": [\"sliding_attention\", \"full_attention\"]}", "layer_types[1] must be one of"},
        {DSV4_HEAD "\"layer_types\": [\"sliding_attention\"]}", "layer_types has 1 entries"},
        {DSV4_HEAD "\"compress_ratios\": [0, 5]}", "compress_ratios[1] is 5"},
        {DSV4_HEAD "\"compress_ratios\": [0]}", "compress_ratios has 1 entries"},
        {DSV4_HEAD "\"compress_rates\": {\"compressed_sparse_attention\": 4}}",
         "compress_rates has no entry \"heavily_compressed_attention\" for layer 0"},
        {DSV4_HEAD "\"compress_rate_hca\": 0}", "compress_rate_hca"},
        /* a state layer in a type without state layers (was: only "the state layers need mamba_n_heads ...") */
        {"{\"model_type\": \"granite\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64,"
         " \"max_position_embeddings\": 4096, \"layer_types\": [\"full_attention\", \"linear_attention\"]}",
         "mamba_d_conv to size their state (its layer list names state layers, which granite has no rule"},
        {"{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 16,"
         " \"qk_rope_head_dim\": 64, \"qk_nope_head_dim\": 128, \"max_position_embeddings\": 4096}",
         "kv_lora_rank is missing"},
#define MAMBA2_HEAD                                                                                                    \
    "{\"model_type\": \"nemotron_h\", \"num_hidden_layers\": 3, \"num_attention_heads\": 8, \"head_dim\": 64,"         \
    " \"max_position_embeddings\": 4096, \"mamba_num_heads\": 16, \"mamba_head_dim\": 64, \"ssm_state_size\": 128,"    \
    " \"conv_kernel\": 4, "
        {MAMBA2_HEAD "\"hybrid_override_pattern\": \"M*\"}", "hybrid_override_pattern has 2 layers"},
        {MAMBA2_HEAD "\"hybrid_override_pattern\": \"M*x\"}", "hybrid_override_pattern[2] 'x'"},
        {MAMBA2_HEAD "\"hybrid_override_pattern\": \"---\"}", "none of the 3 layers keeps a cache"},
        {MAMBA2_HEAD "\"attn_layer_indices\": [1, 1]}", "lists layer 1 twice"},
        {MAMBA2_HEAD "\"attn_layer_indices\": [3]}", "attn_layer_indices[0]"},
        {MAMBA2_HEAD "\"attn_layer_indices\": [\"1\"]}", "attn_layer_indices[0]"},
        {MAMBA2_HEAD "\"hidden_size\": 512}", "hybrid_override_pattern are missing"},
        {"{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 16,"
         " \"num_key_value_heads\": 8, \"kv_lora_rank\": 512, \"qk_rope_head_dim\": 64, \"qk_nope_head_dim\": 128,"
         " \"max_position_embeddings\": 4096}",
         "num_key_value_heads 8 contradicts"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 32, \"hidden_size\": 4096,"
         " \"max_position_embeddings\": 4096, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0,"
         " \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}}",
         "rope_scaling.low_freq_factor is missing"},
        {"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 32, \"hidden_size\": 1024,"
         " \"max_position_embeddings\": 4096, \"use_sliding_window\": true}",
         "use_sliding_window is true but sliding_window is missing"},
        {"{\"model_type\": \"mistral\", \"num_hidden_layers\": 2, \"num_attention_heads\": 32, \"hidden_size\": 4096,"
         " \"max_position_embeddings\": 4096, \"sliding_window\": 0}",
         "sliding_window 0"},
        {"{\"num_hidden_layers\": 2}", "neither architectures nor model_type"},
        {"{\"model_type\": \"mistral\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64,"
         " \"max_position_embeddings\": 4096, \"num_kv_shared_layers\": 2}",
         "num_kv_shared_layers"},
        {"{\"model_type\": \"mistral\", \"num_hidden_layers\": 3, \"num_attention_heads\": 8, \"head_dim\": 64,"
         " \"max_position_embeddings\": 4096, \"sliding_window\": 16, \"num_kv_shared_layers\": 1, \"layer_types\":"
         " [\"full_attention\", \"full_attention\", \"sliding_attention\"]}",
         "layer 2 has no earlier layer of its kind"},
#define GEMMA4_HEAD                                                                                                    \
    "{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"                          \
    " \"num_key_value_heads\": 2, \"head_dim\": 64, \"max_position_embeddings\": 4096, "
        {GEMMA4_HEAD "\"use_bidirectional_attention\": \"all\"}", "use_bidirectional_attention \"all\""},
        {GEMMA4_HEAD "\"per_layer_config\": {\"6\": {\"head_dim\": 32}}}", "per_layer_config key \"6\""},
        {GEMMA4_HEAD "\"per_layer_config\": {\"1\": {\"sliding_window\": 32}}}",
         "per_layer_config[\"1\"].sliding_window is not supported"},
        {GEMMA4_HEAD "\"per_layer_config\": {\"1\": {\"head_dim\": 0}}}", "per_layer_config[\"1\"].head_dim"},
        {GEMMA4_HEAD "\"num_kv_shared_layers\": 1, \"sliding_window\": 8, \"layer_types\": [\"sliding_attention\","
                     " \"full_attention\", \"sliding_attention\", \"sliding_attention\", \"full_attention\","
                     " \"full_attention\"], \"per_layer_config\": {\"5\": {\"head_dim\": 32}}}",
         "layer 5 (2 KV heads of 32) reads the cache of layer 4 (2 of 64)"},
        {GEMMA4_HEAD "\"sliding_window\": 8, \"layer_types\": [\"sliding_attention\", \"chunked_attention\","
                     " \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"full_attention\"],"
                     " \"attention_chunk_size\": 8}",
         "layer_types[1] is neither full_attention nor sliding_attention"},
        {"{\"model_type\": \"gemma4\", \"num_hidden_layers\": 6, \"num_attention_heads\": 8,"
         " \"max_position_embeddings\": 4096}",
         "gemma4 without text_config"},
#define KIMI_LINEAR_HEAD                                                                                               \
    "{\"model_type\": \"kimi_linear\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"kv_lora_rank\": 64,"    \
    " \"qk_rope_head_dim\": 16, \"qk_nope_head_dim\": 32, \"v_head_dim\": 32, \"max_position_embeddings\": 4096,"      \
    " \"linear_attn_config\": {\"num_heads\": 8, \"head_dim\": 32, \"short_conv_kernel_size\": 4, "
        {"{\"model_type\": \"minimax_m1\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64,"
         " \"max_position_embeddings\": 4096, \"attn_type_list\": [0]}",
         "attn_type_list has 1 entries"},
        {"{\"model_type\": \"minimax_m1\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64,"
         " \"max_position_embeddings\": 4096, \"attn_type_list\": [0, 2]}",
         "attn_type_list[1]"},
        {KIMI_LINEAR_HEAD "\"kda_layers\": [0], \"full_attn_layers\": [2]}}", "linear_attn_config.kda_layers[0]"},
        {KIMI_LINEAR_HEAD "\"kda_layers\": [1, 2], \"full_attn_layers\": [2]}}", "kda_layers[1] lists layer 2 twice"},
        {KIMI_LINEAR_HEAD "\"kda_layers\": [1], \"full_attn_layers\": []}}", "layer 2 is in neither"},
        {"{\"model_type\": \"lfm2_moe\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"hidden_size\": 512,"
         " \"max_position_embeddings\": 4096, \"conv_L_cache\": 3}",
         "layer_types is missing: Lfm2MoeConfig has no default"},
        {"{\"model_type\": \"lfm2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"hidden_size\": 512,"
         " \"max_position_embeddings\": 4096, \"full_attn_idxs\": [1], \"conv_L_cache\": 1}",
         "conv_L_cache"},
    };
    kvc_plan_options o = kvc_plan_default_options();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvc_model_plan *plan = NULL;
        kvc_status st = kvc_model_plan_create(cases[i].json, strlen(cases[i].json), &o, &plan);
        if (st != KVC_EINVAL || strstr(kvc_last_error(), cases[i].needle) == NULL)
            fail_msg("case %zu: status %s, message \"%s\", expected \"%s\"", i, kvc_status_str(st), kvc_last_error(),
                     cases[i].needle);
        assert_null(plan);
    }
    /* a raw NUL byte, in a string or between tokens, is not JSON (was: "jet" read as model_type; accepted) */
    static const char nul_in_string[] = "{\"model_type\": \"jet\0moe\"}", nul_between[] = "{\0\"model_type\": 1}";
    kvc_model_plan *plan = NULL;
    assert_int_equal(kvc_model_plan_create(nul_in_string, sizeof nul_in_string - 1, &o, &plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "invalid JSON at byte 19: a NUL byte"));
    assert_int_equal(kvc_model_plan_create(nul_between, sizeof nul_between - 1, &o, &plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "invalid JSON at byte 1: a NUL byte"));
    assert_null(plan);
}

static void test_invalid_arguments(void **state) {
    (void)state;
    size_t len = 0;
    char *text = read_config("Qwen3-8B.json", &len);
    kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *plan = NULL;
    assert_int_equal(kvc_model_plan_create(text, len, &o, NULL), KVC_EINVAL);
    assert_int_equal(kvc_model_plan_create(NULL, len, &o, &plan), KVC_EINVAL);
    assert_int_equal(kvc_model_plan_create(text, len, NULL, &plan), KVC_EINVAL);
    o.tp = 3;
    assert_int_equal(kvc_model_plan_create(text, len, &o, &plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "tp 3"));
    o = kvc_plan_default_options();
    o.max_concurrency = 0;
    assert_int_equal(kvc_model_plan_create(text, len, &o, &plan), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "max_concurrency"));
    o = kvc_plan_default_options();
    o.kv_dtype_set = true;
    o.kv_dtype = KVC_DTYPE_I32;
    assert_int_equal(kvc_model_plan_create(text, len, &o, &plan), KVC_EINVAL);
    o = kvc_plan_default_options();
    o.kv_memory_bytes = 1000; /* smaller than one block */
    assert_true(kvc_model_plan_create(text, len, &o, &plan) < 0);
    assert_null(plan);
    char *doc = NULL;
    assert_int_equal(kvc_model_plan_to_json(NULL, &doc), KVC_EINVAL);
    assert_null(doc);
    kvc_model_plan_destroy(NULL);
    free(text);
}

static void test_size_parser(void **state) {
    (void)state;
    int64_t v = 0;
    assert_int_equal(kvc_parse_size("64GiB", &v), 0);
    assert_int_equal(v, 68719476736LL);
    assert_int_equal(kvc_parse_size("512MiB", &v), 0);
    assert_int_equal(v, 536870912LL);
    assert_int_equal(kvc_parse_size("1e9", &v), 0);
    assert_int_equal(v, 1000000000LL);
    assert_int_equal(kvc_parse_size("1.5GB", &v), 0);
    assert_int_equal(v, 1500000000LL);
    assert_int_equal(kvc_parse_size("9223372036854775807", &v), 0);
    assert_int_equal(v, INT64_MAX);
    assert_int_equal(kvc_parse_size("128", &v), 0);
    assert_int_equal(v, 128);
    assert_int_equal(kvc_parse_size("abc", &v), -1);
    assert_int_equal(kvc_parse_size("-1", &v), -1);
    assert_int_equal(kvc_parse_size("12XB", &v), -1);
    assert_int_equal(kvc_parse_size("0.3B", &v), -1);
    assert_int_equal(kvc_parse_size("", &v), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_3_1_8b),
        cmocka_unit_test(test_qwen3_8b),
        cmocka_unit_test(test_qwen3_30b_a3b),
        cmocka_unit_test(test_gpt_oss_20b),
        cmocka_unit_test(test_gemma_2_9b),
        cmocka_unit_test(test_deepseek_mla),
        cmocka_unit_test(test_model_wide_windows),
        cmocka_unit_test(test_offline_sizing),
        cmocka_unit_test(test_legacy_and_dtype),
        cmocka_unit_test(test_hybrid_state_layers),
        cmocka_unit_test(test_qwen3_5_moe_wrapper_plan),
        cmocka_unit_test(test_exaone_moe_plan),
        cmocka_unit_test(test_multimodal_text_plans),
        cmocka_unit_test(test_family_rules),
        cmocka_unit_test(test_unknown_architecture),
        cmocka_unit_test(test_recent_shapes),
        cmocka_unit_test(test_runtime_tp_refusal),
        cmocka_unit_test(test_equal_layer_groups),
        cmocka_unit_test(test_class_fallbacks),
        cmocka_unit_test(test_malformed_configs),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_size_parser),
        cmocka_unit_test(test_llama4_chunked_layers),
        cmocka_unit_test(test_deepseek_v4),
        cmocka_unit_test(test_nemotron_nas_blocks),
        cmocka_unit_test(test_minimax_m3_indexer),
        cmocka_unit_test(test_fp8_cache_warning),
        cmocka_unit_test(test_hy_v4),
        cmocka_unit_test(test_gemma4_plan),
        cmocka_unit_test(test_linear_and_loop_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
