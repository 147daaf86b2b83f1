/* The cache builder (src/model/cache_build.c) that the runner and the
 * engine adapter share: one check of the knobs for every owner, the entries
 * of each layer from the family's cache dims and the KV dtype, the bytes
 * per slot, the tensors carved from one buffer in each layout, and the
 * setters that fill the same slots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvc_test_util.h"
#include "kvcache/kvcache.h"
#include "kvcache/plan.h"
#include "model/cache_build.h"
#include "model/model_internal.h"

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

static kvc_model *load(const char *family) {
    char dir[1024];
    kvc_test_oracle_dir(family, dir, sizeof dir);
    kvc_model *m = NULL;
    check(kvc_model_load(dir, &m), family);
    return m;
}

static void expect_shape(const kvc_tensor *t, int32_t ndim, int64_t s0, int64_t s1, int64_t s2, int64_t s3) {
    const int64_t want[4] = {s0, s1, s2, s3};
    assert_int_equal(t->ndim, ndim);
    for (int32_t d = 0; d < ndim; d++) assert_int_equal(t->shape[d], want[d]);
}

/* Paged int8 GQA caches: k, v and their scales per layer, carved back to back in entry order. */
static void test_paged_int8(void **state) {
    (void)state;
    kvc_model *m = load("qwen3");
    const kvc_model_config *c = kvc_model_config_of(m);
    const int64_t nkv = c->num_kv_heads, D = c->head_dim, L = c->num_layers, NB = 3, bs = 4;
    const kvci_cache_knobs k = {.cache = {.block_size = bs, .kv_dtype = KVC_DTYPE_I8}, .paged = true};
    check(kvci_cache_knobs_check(m, &k, "test", "cache.", "here"), "knobs");
    kvc_model_caches caches;
    kvci_cache_set s;
    check(kvci_cache_set_build(m, &k, &caches, &s), "build");
    assert_int_equal(s.ci->n_layer_infos, L);
    assert_int_equal(s.ci->layer_infos[0].n_caches, 4);
    assert_string_equal(s.ci->layer_infos[0].caches[3].name, "v_scale");
    assert_int_equal(caches.kind, KVC_MCACHE_PAGED);
    assert_int_equal(caches.block_size, bs);
    int64_t bytes = 0;
    assert_true(kvci_cache_set_bytes(&s, 1, &bytes));
    assert_int_equal(bytes, L * (2 * nkv * D + 2 * (int64_t)sizeof(float))); /* int8 k, v + two f32 scales */
    assert_true(kvci_cache_set_bytes(&s, NB * bs, &bytes));
    char *mem = calloc((size_t)bytes, 1);
    kvci_cache_set_carve(&s, mem, NB, bs);
    const kvc_layer_cache *l0 = &caches.layers[0], *l1 = &caches.layers[1];
    expect_shape(&l0->k, 4, NB, bs, nkv, D);
    expect_shape(&l0->v, 4, NB, bs, nkv, D);
    expect_shape(&l0->k_scales, 2, NB, bs, 0, 0);
    assert_int_equal(l0->k.dtype, KVC_DTYPE_I8);
    assert_int_equal(l0->v_scales.dtype, KVC_DTYPE_F32);
    assert_ptr_equal(l0->v.data, mem + NB * bs * nkv * D);
    assert_ptr_equal(l1->k.data, (char *)l0->v_scales.data + NB * bs * (int64_t)sizeof(float));
    assert_ptr_equal((char *)caches.layers[L - 1].v_scales.data + NB * bs * (int64_t)sizeof(float), mem + bytes);
    assert_string_equal(l0->key, "FullAttention");
    free(mem);
    kvci_cache_set_release(&s);
    assert_null(caches.layers);
    kvc_model_destroy(m);
}

/* Keys in lanes: k [NB, heads, D, bs], v head-major, and the entries say so to the storage. */
static void test_lanes(void **state) {
    (void)state;
    kvc_model *m = load("qwen3");
    const kvc_model_config *c = kvc_model_config_of(m);
    const kvci_cache_knobs k = {.cache = {.block_size = 8, .kv_dtype = KVC_DTYPE_F16, .kv_layout = KVC_BLOCK_BNNDBS},
                                .paged = true};
    kvc_model_caches caches;
    kvci_cache_set s;
    check(kvci_cache_set_build(m, &k, &caches, &s), "build");
    assert_int_equal(s.ci->layer_infos[0].caches[0].layout, KVC_BLOCK_BNNDBS);
    assert_int_equal(s.ci->layer_infos[0].caches[1].layout, KVC_BLOCK_BNNBSD);
    assert_int_equal(caches.layout, KVC_BLOCK_BNNDBS);
    int64_t bytes = 0;
    assert_true(kvci_cache_set_bytes(&s, 2 * 8, &bytes));
    char *mem = calloc((size_t)bytes, 1);
    kvci_cache_set_carve(&s, mem, 2, 8);
    expect_shape(&caches.layers[0].k, 4, 2, c->num_kv_heads, c->head_dim, 8);
    expect_shape(&caches.layers[0].v, 4, 2, c->num_kv_heads, 8, c->head_dim);
    free(mem);
    kvci_cache_set_release(&s);
    kvc_model_destroy(m);
}

/* Contiguous MLA latent caches: one head of kv_lora_rank (nope) and of the rope dim, one scale; the
 * setters (the engine's path) fill the slots the carve (the runner's path) fills. */
static void test_latent_contiguous(void **state) {
    (void)state;
    kvc_model *m = load("deepseek_v3");
    const kvc_model_config *c = kvc_model_config_of(m);
    const kvci_cache_knobs k = {.cache = {.kv_dtype = KVC_DTYPE_F8E4M3}, .latent = true};
    kvc_model_caches caches;
    kvci_cache_set s;
    check(kvci_cache_set_build(m, &k, &caches, &s), "build");
    const kvc_layer_cache_info *li = &s.ci->layer_infos[0];
    assert_int_equal(li->n_caches, 3);
    assert_string_equal(li->caches[0].name, "nope_cache");
    assert_int_equal(li->caches[0].block_size, 1);
    assert_int_equal(caches.kind, KVC_MCACHE_CONTIGUOUS);
    assert_true(caches.latent);
    int64_t bytes = 0;
    assert_true(kvci_cache_set_bytes(&s, 2 * 5, &bytes));
    char *mem = calloc((size_t)bytes, 1);
    kvci_cache_set_carve(&s, mem, 2, 5);
    expect_shape(&caches.layers[0].k, 3, 2, 5, c->kv_lora_rank, 0);
    expect_shape(&caches.layers[0].v, 3, 2, 5, c->qk_rope_head_dim, 0);
    expect_shape(&caches.layers[0].k_scales, 2, 2, 5, 0, 0);
    kvci_cache_set_wire_setters(&s);
    kvc_tensor t = {.data = mem, .dtype = KVC_DTYPE_F32, .ndim = 1, .shape = {7}};
    li->caches[2].tensor_setter(li->caches[2].setter_user, &t);
    assert_ptr_equal(caches.layers[0].k_scales.data, mem);
    expect_shape(&caches.layers[0].k_scales, 1, 7, 0, 0, 0);
    free(mem);
    kvci_cache_set_release(&s);
    kvc_model_destroy(m);
}

/* GLM-5's DeepSeek sparse attention: the full-indexer layers (0 and 2 of the oracle's) end with their f32 indexer
 * keys [NB, bs, 1, index_head_dim] (after an fp8 latent's scale), the shared layer 1 keeps none, the setters fill
 * index_k; the planner plans the same entries and bytes per token; keys in lanes refused by name. */
static void test_indexer_keys(void **state) {
    (void)state;
    kvc_model *m = load("glm_moe_dsa");
    const kvc_model_config *c = kvc_model_config_of(m);
    const kvci_cache_knobs k = {
        .cache = {.kv_dtype = KVC_DTYPE_F8E4M3, .block_size = 4}, .paged = true, .latent = true};
    kvc_model_caches caches;
    kvci_cache_set s;
    check(kvci_cache_set_build(m, &k, &caches, &s), "build");
    const int32_t want[3] = {4, 3, 4};
    for (int32_t l = 0; l < 3; l++) assert_int_equal(s.ci->layer_infos[l].n_caches, want[l]);
    assert_string_equal(s.ci->layer_infos[0].caches[3].name, "indexer_k_cache");
    assert_int_equal(s.ci->layer_infos[0].caches[3].dtype, KVC_DTYPE_F32);
    int64_t bytes = 0;
    assert_true(kvci_cache_set_bytes(&s, 3 * 4, &bytes));
    const int64_t latent = c->kv_lora_rank + c->qk_rope_head_dim + 4; /* fp8 nope + rope, the f32 scale */
    assert_int_equal(bytes, 3 * 4 * (3 * latent + 2 * 4 * c->index_head_dim));
    char *mem = calloc((size_t)bytes, 1);
    kvci_cache_set_carve(&s, mem, 3, 4);
    expect_shape(&caches.layers[2].index_k, 4, 3, 4, 1, c->index_head_dim);
    assert_null(caches.layers[1].index_k.data);
    kvci_cache_set_wire_setters(&s);
    kvc_tensor t = {.data = mem, .dtype = KVC_DTYPE_F32, .ndim = 1, .shape = {7}};
    s.ci->layer_infos[2].caches[3].tensor_setter(s.ci->layer_infos[2].caches[3].setter_user, &t);
    assert_ptr_equal(caches.layers[2].index_k.data, mem);
    free(mem);
    kvci_cache_set_release(&s);
    char path[1024];
    kvc_test_oracle_dir("glm_moe_dsa", path, sizeof path);
    strncat(path, "/config.json", sizeof path - strlen(path) - 1);
    char *text = kvc_test_read_text(path);
    kvc_plan_options o = kvc_plan_default_options();
    o.kv_dtype_set = true, o.kv_dtype = KVC_DTYPE_F32;
    kvc_model_plan *p = NULL;
    check(kvc_model_plan_create(text, strlen(text), &o, &p), "plan");
    for (int32_t l = 0; l < 3; l++) {
        assert_int_equal(p->layers[l].n_caches, want[l] - 1); /* f32: no scale entry */
        if (l != 1) assert_int_equal(p->layers[l].caches[2].bytes_per_token, 4 * c->index_head_dim);
    }
    kvc_model_plan_destroy(p);
    free(text);
    kvci_cache_knobs lanes = {.cache = kvc_cache_knobs_default(), .paged = true};
    lanes.cache.kv_layout = KVC_BLOCK_BNNDBS;
    assert_int_equal(kvci_cache_knobs_check(m, &lanes, "owner", "", "here"), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "DeepSeek sparse attention (index_topk)"));
    kvc_model_destroy(m);
}

static void expect_refused(const kvc_model *m, kvci_cache_knobs k, const char *text) {
    assert_int_equal(kvci_cache_knobs_check(m, &k, "owner", "knobs.", "by these caches"), KVC_EINVAL);
    if (!strstr(kvc_last_error(), text)) fail_msg("message \"%s\" lacks \"%s\"", kvc_last_error(), text);
}

/* One set of rules for every owner, each refusal naming the knob as the owner's caller wrote it. */
static void test_refusals(void **state) {
    (void)state;
    kvc_model *m = load("qwen3");
    const kvci_cache_knobs ok = {.cache = kvc_cache_knobs_default(), .paged = true};
    check(kvci_cache_knobs_check(m, &ok, "owner", "", ""), "default knobs");
    kvci_cache_knobs k = ok;
    k.cache.kv_dtype = KVC_DTYPE_I32;
    expect_refused(m, k, "owner: knobs.kv_dtype i32");
    k = ok, k.latent = true;
    expect_refused(m, k, "owner: the MLA latent form needs an MLA model");
    k = ok, k.cache.block_size = 0;
    expect_refused(m, k, "owner: knobs.block_size 0 must be in [1, 1024]");
    k = ok, k.cache.block_size = KVC_ATTN_MAX_BLOCK_SIZE + 1;
    expect_refused(m, k, "owner: knobs.block_size 1025");
    k = ok, k.paged = false, k.cache.block_size = 0; /* contiguous: the block size is not read */
    check(kvci_cache_knobs_check(m, &k, "owner", "", ""), "contiguous");
    k.cache.kv_layout = KVC_BLOCK_BNNDBS;
    expect_refused(m, k, "owner: knobs.kv_layout KVC_BLOCK_BNNDBS (keys in lanes) is not taken by these caches");
    k = ok, k.cache.kv_layout = KVC_BLOCK_NZ;
    expect_refused(m, k, "knobs.kv_layout KVC_BLOCK_NZ (tiles) is not taken");
    kvc_model_destroy(m);
}

/* ---- per-layer attention shapes (kvc_model_config.layer_heads ..., src/model/layer_shape.c) ---- */

/* 2 layers, model-wide 2 heads of 16 over 1 KV head: the per-layer entries below override them. */
static const char *const SHAPES_JSON =
    "{\"model_type\":\"llama\",\"vocab_size\":96,\"hidden_size\":32,\"intermediate_size\":48,"
    "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":16,"
    "\"rope_theta\":10000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":64}";

static kvc_model_config *shapes_config(int64_t heads, int64_t kv_heads, int64_t head_dim) {
    kvc_model_config *c = calloc(1, sizeof *c);
    check(kvc_model_config_parse(SHAPES_JSON, "shapes", c), "config");
    c->num_heads = heads, c->num_kv_heads = kv_heads, c->head_dim = head_dim;
    return c;
}

/* Greedy tokens and logits of 2 prompts, 3 new tokens each, in runner mode `mode`. */
static void shapes_run(const kvc_model *m, kvc_runner_mode mode, int32_t *tokens, float *logits) {
    static const int32_t ids[] = {3, 17, 42, 9, 50, 5, 77};
    static const int64_t lens[] = {4, 3};
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = mode, p.max_new_tokens = 3, p.cache.block_size = 4;
    kvc_runner *r = NULL;
    check(kvc_runner_create(m, &p, 2, 4, &r), "runner");
    check(kvc_runner_generate(r, ids, lens, 2, tokens, logits, NULL), "generate");
    kvc_runner_destroy(r);
}

#define SHAPES_LOGITS (3 * 2 * 96)

/* Layers given the shape 4 heads of 8 over 2 KV heads one by one run bit for bit as a model of that shape
 * model-wide (same weights: the same names and shapes), in the recompute and paged modes: the weights, the
 * scratch, the caches, RoPE's width and the softmax scale all follow the layer. */
static void test_layer_shapes_as_uniform(void **state) {
    (void)state;
    kvc_model_config *u = shapes_config(4, 2, 8), *p = shapes_config(2, 1, 16);
    for (int64_t l = 0; l < 2; l++) p->layer_heads[l] = 4, p->layer_kv_heads[l] = 2, p->layer_head_dim[l] = 8;
    kvc_model *mu = NULL, *mp = NULL;
    check(kvc_model_create_random(u, 5, &mu), "uniform");
    check(kvc_model_create_random(p, 5, &mp), "per-layer");
    for (int mode = 0; mode < 3; mode += 2) {
        int32_t tu[6], tp[6];
        float *lu = malloc(SHAPES_LOGITS * sizeof(float)), *lp = malloc(SHAPES_LOGITS * sizeof(float));
        shapes_run(mu, (kvc_runner_mode)mode, tu, lu);
        shapes_run(mp, (kvc_runner_mode)mode, tp, lp);
        assert_memory_equal(tu, tp, sizeof tu);
        assert_memory_equal(lu, lp, SHAPES_LOGITS * sizeof(float));
        free(lu), free(lp);
    }
    kvc_model_destroy(mu), kvc_model_destroy(mp);
    free(u), free(p);
}

/* A model whose layers differ (layer 1: 4 KV heads, values of 4 channels): each layer's cache entries and
 * tensors are its own, and the three runner modes agree. */
static void test_layer_shapes_mixed(void **state) {
    (void)state;
    kvc_model_config *c = shapes_config(4, 2, 8);
    c->layer_kv_heads[1] = 4, c->layer_v_head_dim[1] = 4;
    kvc_model *m = NULL;
    check(kvc_model_create_random(c, 9, &m), "model");
    const kvci_cache_knobs k = {.cache = {.block_size = 4, .kv_dtype = KVC_DTYPE_F32}, .paged = true};
    kvc_model_caches caches;
    kvci_cache_set s;
    check(kvci_cache_set_build(m, &k, &caches, &s), "build");
    const kvc_cache_entry *e0 = s.ci->layer_infos[0].caches, *e1 = s.ci->layer_infos[1].caches;
    assert_int_equal(e0[0].num_head, 2), assert_int_equal(e0[1].dim[0], 8);
    assert_int_equal(e1[0].num_head, 4), assert_int_equal(e1[0].dim[0], 8), assert_int_equal(e1[1].dim[0], 4);
    int64_t bytes = 0;
    assert_true(kvci_cache_set_bytes(&s, 1, &bytes));
    assert_int_equal(bytes, 4 * (2 * 8 + 2 * 8 + 4 * 8 + 4 * 4)); /* f32 k and v of each layer */
    char *mem = calloc((size_t)bytes * 8, 1);
    kvci_cache_set_carve(&s, mem, 2, 4);
    expect_shape(&caches.layers[1].k, 4, 2, 4, 4, 8);
    expect_shape(&caches.layers[1].v, 4, 2, 4, 4, 4);
    kvci_cache_set_release(&s);
    free(mem);
    int32_t t[3][6];
    float *lg = malloc(3 * SHAPES_LOGITS * sizeof(float));
    for (int mode = 0; mode < 3; mode++) shapes_run(m, (kvc_runner_mode)mode, t[mode], lg + mode * SHAPES_LOGITS);
    for (int mode = 1; mode < 3; mode++) {
        assert_memory_equal(t[0], t[mode], sizeof t[0]);
        for (int i = 0; i < SHAPES_LOGITS; i++) assert_float_equal(lg[i], lg[mode * SHAPES_LOGITS + i], 1e-5);
    }
    free(lg);
    kvc_model_destroy(m);
    free(c);
}

/* MiMo-V2-Flash's oracle model: each layer's cache entries (heads, dims, attention type, window) are the ones
 * `kvcache plan` gives its config.json. */
static void test_layer_shapes_as_planned(void **state) {
    (void)state;
    kvc_model *m = load("mimo_v2_flash");
    char dir[1024], path[1100];
    kvc_test_oracle_dir("mimo_v2_flash", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *json = kvc_test_read_text(path);
    const kvc_plan_options o = kvc_plan_default_options();
    kvc_model_plan *plan = NULL;
    check(kvc_model_plan_create(json, strlen(json), &o, &plan), "plan");
    kvc_model_cache_info *ci = NULL;
    check(kvc_model_cache_info_build(m, false, KVC_DTYPE_F32, 16, &ci), "cache info");
    assert_int_equal(ci->n_layer_infos, plan->n_layers);
    for (int32_t l = 0; l < plan->n_layers; l++) {
        const kvc_plan_layer *p = &plan->layers[l];
        const kvc_cache_entry *e = ci->layer_infos[l].caches;
        assert_int_equal(e[0].attn_type, p->attn_type);
        assert_int_equal(e[0].sliding_window, p->sliding_window);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(e[i].num_head, p->caches[i].num_head);
            assert_int_equal(e[i].dim[0], p->caches[i].dim);
        }
    }
    kvc_model_cache_info_destroy(ci);
    kvc_model_plan_destroy(plan);
    free(json);
    kvc_model_destroy(m);
}

static void expect_shapes_refused(kvc_model_config *c, const char *text) {
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_create_random(c, 1, &m), KVC_EINVAL);
    if (!strstr(kvc_last_error(), text)) fail_msg("message \"%s\" lacks \"%s\"", kvc_last_error(), text);
}

/* Each rule of the per-layer shapes refuses by name, tensor parallelism included. */
static void test_layer_shapes_refused(void **state) {
    (void)state;
    kvc_model_config *c = shapes_config(4, 2, 8);
    c->layer_kv_heads[1] = 3;
    expect_shapes_refused(c, "layer 1: its 4 query heads (layer_heads) must be a multiple of its 3 KV heads");
    c->layer_kv_heads[1] = 0, c->layer_head_dim[0] = 7;
    expect_shapes_refused(c, "layer_head_dim 7 must be even");
    c->layer_head_dim[0] = 16; /* its rotary width 16 against layer 1's 8, both full layers */
    expect_shapes_refused(c, "layer 1: rotary width 8 differs from 16 of the other full layers");
    c->layer_rot_dim[1] = 16;
    expect_shapes_refused(c, "rotary width 16 (layer_rot_dim) even in [2, head dim]");
    c->layer_head_dim[0] = 0, c->layer_rot_dim[1] = 0, c->layer_v_head_dim[1] = -1;
    expect_shapes_refused(c, "layer_v_head_dim[1] -1 outside [0, 65536]");
    c->layer_v_head_dim[1] = 4, c->alibi = true;
    expect_shapes_refused(c, "are not supported with alibi");
    c->alibi = false;
    kvc_model_config local;
    assert_int_equal(kvci_model_shard_config(c, 2, &local), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "tensor parallelism 2 is not supported for llama (per-layer attention"));
    free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_paged_int8),
                                       cmocka_unit_test(test_lanes),
                                       cmocka_unit_test(test_latent_contiguous),
                                       cmocka_unit_test(test_refusals),
                                       cmocka_unit_test(test_layer_shapes_as_uniform),
                                       cmocka_unit_test(test_layer_shapes_mixed),
                                       cmocka_unit_test(test_layer_shapes_as_planned),
                                       cmocka_unit_test(test_layer_shapes_refused),
                                       cmocka_unit_test(test_indexer_keys)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
