/* safetensors loading: f32/f16/bf16 reads, and every refusal names the file
 * and the tensor (truncated file, header out of bounds, data outside the
 * file, missing tensor, wrong shape, wrong dtype), also through kvc_model_load,
 * and for the routed experts of the MoE oracle checkpoints (a module missing,
 * one beyond the config's expert count, one of the wrong shape) and an untied
 * head; the files a directory's index names; experts of mixed dtypes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kvc_test_util.h"
#include "kvcache/half.h"
#include "kvcache/model.h"
#include "model/model_internal.h"

static char g_dir[256];

static void write_file(const char *name, const void *data, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* header_len_override < 0: the real length. */
static void write_st(const char *name, const char *header, const void *data, size_t n, long long header_len_override) {
    const size_t hl = strlen(header);
    unsigned char *buf = malloc(8 + hl + n);
    assert_non_null(buf);
    const unsigned long long L = header_len_override < 0 ? hl : (unsigned long long)header_len_override;
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(L >> (8 * i));
    memcpy(buf + 8, header, hl);
    if (n) memcpy(buf + 8 + hl, data, n);
    write_file(name, buf, 8 + hl + n);
    free(buf);
}

static void path_of(const char *name, char *out, size_t cap) { snprintf(out, cap, "%s/%s", g_dir, name); }

static void expect_error(kvc_status st, const char *a, const char *b) {
    if (st == KVC_OK) fail_msg("expected a failure mentioning \"%s\"", a);
    const char *msg = kvc_last_error();
    if (!strstr(msg, a) || (b && !strstr(msg, b)))
        fail_msg("message \"%s\" should mention \"%s\" and \"%s\"", msg, a, b ? b : "");
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/kvc_st_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_reads_three_dtypes(void **state) {
    (void)state;
    unsigned char data[16 + 4 + 4];
    const float f[4] = {1.5f, -2.0f, 0.25f, 3.0f};
    memcpy(data, f, 16);
    const uint16_t h[2] = {kvc_f32_to_f16(0.5f), kvc_f32_to_f16(-4.0f)};
    const uint16_t bf[2] = {kvc_f32_to_bf16(2.0f), kvc_f32_to_bf16(-0.125f)};
    memcpy(data + 16, h, 4);
    memcpy(data + 20, bf, 4);
    write_st("ok.safetensors",
             "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
             "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[16,20]},"
             "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[20,24]}}",
             data, sizeof data, -1);
    char p[512];
    path_of("ok.safetensors", p, sizeof p);
    kvc_safetensors *st = NULL;
    assert_int_equal(kvc_safetensors_open_file(p, &st), KVC_OK);
    float out[4];
    const int64_t s22[2] = {2, 2}, s2[1] = {2};
    assert_int_equal(kvc_safetensors_read_f32(st, "a", 2, s22, out), KVC_OK);
    assert_memory_equal(out, f, 16);
    assert_int_equal(kvc_safetensors_read_f32(st, "h", 1, s2, out), KVC_OK);
    assert_true(out[0] == 0.5f && out[1] == -4.0f);
    assert_int_equal(kvc_safetensors_read_f32(st, "b", 1, s2, out), KVC_OK);
    assert_true(out[0] == 2.0f && out[1] == -0.125f);
    expect_error(kvc_safetensors_read_f32(st, "missing", 1, s2, out), "missing tensor \"missing\"", "ok.safetensors");
    expect_error(kvc_safetensors_read_f32(st, "a", 1, s2, out), "wrong shape [2, 2], expected [2]", "\"a\"");
    /* E experts' [E, rows, cols] stored with the first two dims merged (DBRX's [E * rows, cols]): the same bytes */
    const int64_t s212[3] = {2, 1, 2}, s122[3] = {1, 2, 2}, s221[3] = {2, 2, 1};
    memset(out, 0, sizeof out);
    assert_int_equal(kvc_safetensors_read_f32(st, "a", 3, s212, out), KVC_OK);
    assert_memory_equal(out, f, 16);
    assert_int_equal(kvc_safetensors_read_f32(st, "a", 3, s122, out), KVC_OK);
    expect_error(kvc_safetensors_read_f32(st, "a", 3, s221, out), "wrong shape [2, 2], expected [2, 2, 1]", "\"a\"");
    kvc_safetensors_destroy(st);
}

static void test_wrong_dtype(void **state) {
    (void)state;
    const int32_t v[2] = {1, 2};
    write_st("i32.safetensors", "{\"w\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}", v, 8, -1);
    char p[512];
    path_of("i32.safetensors", p, sizeof p);
    kvc_safetensors *st = NULL;
    assert_int_equal(kvc_safetensors_open_file(p, &st), KVC_OK);
    float out[2];
    const int64_t s[1] = {2};
    expect_error(kvc_safetensors_read_f32(st, "w", 1, s, out), "wrong dtype I32", "i32.safetensors");
    kvc_safetensors_destroy(st);
}

static void test_truncated_and_out_of_bounds(void **state) {
    (void)state;
    char p[512];
    kvc_safetensors *st = NULL;
    write_file("short.safetensors", "abc", 3);
    path_of("short.safetensors", p, sizeof p);
    expect_error(kvc_safetensors_open_file(p, &st), "truncated file", "short.safetensors");
    assert_null(st);

    write_st("hdr.safetensors", "{}", NULL, 0, 1000);
    path_of("hdr.safetensors", p, sizeof p);
    expect_error(kvc_safetensors_open_file(p, &st), "header out of bounds", "hdr.safetensors");

    const float d[2] = {1, 2};
    write_st("data.safetensors", "{\"big\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0,64]}}", d, 8, -1);
    path_of("data.safetensors", p, sizeof p);
    expect_error(kvc_safetensors_open_file(p, &st), "truncated file", "\"big\"");

    write_st("span.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", d, 8, -1);
    path_of("span.safetensors", p, sizeof p);
    expect_error(kvc_safetensors_open_file(p, &st), "span 8 bytes", "\"x\"");

    write_st("json.safetensors", "{not json", NULL, 0, -1);
    path_of("json.safetensors", p, sizeof p);
    expect_error(kvc_safetensors_open_file(p, &st), "not a JSON object", "json.safetensors");
}

/* "__metadata__" is the header's own entry, not a tensor: never found, read or viewed as one, even
 * when it holds a tensor entry's keys; its values are strings (the format's map of strings), any other
 * refused at open naming the key (a kvcache.format 5 read as absent: a saved copy loaded as a checkpoint). */
static void test_metadata_is_not_a_tensor(void **state) {
    (void)state;
    const float d[2] = {1, 2};
    write_st("meta.safetensors",
             "{\"__metadata__\":{\"dtype\":\"F32\",\"shape\":\"[1048576]\",\"data_offsets\":\"[0,4194304]\"},"
             "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
             d, 8, -1);
    write_st("meta_array.safetensors",
             "{\"__metadata__\":{\"dtype\":\"F32\",\"shape\":[1048576],\"data_offsets\":[0,4194304]},"
             "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
             d, 8, -1);
    write_st("meta_number.safetensors", "{\"__metadata__\":{\"kvcache.format\":5}}", NULL, 0, -1);
    write_st("meta_list.safetensors", "{\"__metadata__\":[\"pt\"]}", NULL, 0, -1);
    const char *const bad[][2] = {{"meta_array.safetensors", "__metadata__.shape must be a string"},
                                  {"meta_number.safetensors", "__metadata__.kvcache.format must be a string"},
                                  {"meta_list.safetensors", "\"__metadata__\" must be an object of strings"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char q[512];
        kvc_safetensors *none = NULL;
        path_of(bad[i][0], q, sizeof q);
        expect_error(kvc_safetensors_open_file(q, &none), bad[i][1], bad[i][0]);
        assert_null(none);
    }
    write_st("plain.safetensors", "{\"__metadata__\":{\"format\":\"pt\"}}", NULL, 0, -1);
    char p[512];
    const int64_t big[1] = {1048576};
    float *out = malloc(sizeof(float) * 1048576);
    assert_non_null(out);
    kvc_safetensors *st = NULL;
    path_of("meta.safetensors", p, sizeof p);
    assert_int_equal(kvc_safetensors_open_file(p, &st), KVC_OK);
    assert_true(kvc_safetensors_has(st, "w"));
    assert_false(kvc_safetensors_has(st, "__metadata__"));
    expect_error(kvc_safetensors_read_f32(st, "__metadata__", 1, big, out), "missing tensor \"__metadata__\"",
                 "meta.safetensors");
    kvc_safetensors_destroy(st);
    path_of("plain.safetensors", p, sizeof p);
    assert_int_equal(kvc_safetensors_open_file(p, &st), KVC_OK);
    expect_error(kvc_safetensors_read_f32(st, "__metadata__", 0, NULL, NULL), "missing tensor", "plain.safetensors");
    kvc_safetensors_destroy(st);
    free(out);
    /* a tensor name with a \u0000 escape would read as "w": refused, naming it */
    write_st("nul.safetensors", "{\"w\\u0000x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, -1);
    path_of("nul.safetensors", p, sizeof p);
    assert_int_equal(kvc_safetensors_open_file(p, &st), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "NUL byte"));
    assert_null(st);
}

/* A tensor in two files of a directory is refused, naming both files; names unique across the
 * files open. */
static void test_duplicate_across_files(void **state) {
    (void)state;
    char sub[600], p[700];
    snprintf(sub, sizeof sub, "%s/dup", g_dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    const float d[2] = {1, 2};
    snprintf(p, sizeof p, "dup/a.safetensors");
    write_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 4, -1);
    snprintf(p, sizeof p, "dup/b.safetensors");
    write_st(p, "{\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 4, -1);
    kvc_safetensors *st = NULL;
    assert_int_equal(kvc_safetensors_open_dir(sub, &st), KVC_OK);
    assert_true(kvc_safetensors_has(st, "x") && kvc_safetensors_has(st, "y"));
    kvc_safetensors_destroy(st);
    snprintf(p, sizeof p, "dup/c.safetensors");
    write_st(p,
             "{\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
             d, 8, -1);
    st = NULL;
    expect_error(kvc_safetensors_open_dir(sub, &st), "tensor \"x\" is in both", "a.safetensors and");
    assert_null(st);
    assert_non_null(strstr(kvc_last_error(), "c.safetensors"));
}

/* A directory with model.safetensors.index.json (and no model.safetensors, which transformers reads
 * alone) reads the shards its weight_map names and no other file (a stale copy beside them was read too: its tensors
 * refused as "in both" files, or taken when the shards lacked them); a shard named outside the directory, a missing
 * shard, a tensor in another shard than its entry says or in none, and an index without a weight map are refused naming
 * the index. */
static void test_index_names_the_shards(void **state) {
    (void)state;
    char sub[600], p[700];
    snprintf(sub, sizeof sub, "%s/indexed", g_dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    const float d[2] = {1, 2};
    write_st("indexed/a.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 4, -1);
    write_st("indexed/b.safetensors", "{\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 4, -1);
    write_st("indexed/stale.safetensors",
             "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
             d, 8, -1);
    const char *index = "{\"metadata\":{},\"weight_map\":{\"x\":\"a.safetensors\",\"y\":\"b.safetensors\"}}";
    write_file("indexed/model.safetensors.index.json", index, strlen(index));
    kvc_safetensors *st = NULL;
    assert_int_equal(kvc_safetensors_open_dir(sub, &st), KVC_OK);
    assert_true(kvc_safetensors_has(st, "x") && kvc_safetensors_has(st, "y"));
    assert_false(kvc_safetensors_has(st, "z")); /* stale.safetensors is not a shard */
    kvc_safetensors_destroy(st);
    /* model.safetensors beside the index: read alone, as transformers reads it */
    write_st("indexed/model.safetensors", "{\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 4, -1);
    assert_int_equal(kvc_safetensors_open_dir(sub, &st), KVC_OK);
    assert_true(kvc_safetensors_has(st, "z"));
    assert_false(kvc_safetensors_has(st, "x") || kvc_safetensors_has(st, "y"));
    kvc_safetensors_destroy(st);
    snprintf(p, sizeof p, "%s/model.safetensors", sub);
    assert_int_equal(unlink(p), 0);
    const char *const bad[][2] = {
        {"{\"weight_map\":{\"x\":\"../indexed/a.safetensors\",\"y\":\"b.safetensors\"}}",
         "weight_map.x must name a .safetensors file of the directory itself (no '/'), got "
         "\"../indexed/a.safetensors\""},
        {"{\"weight_map\":{\"x\":\"/etc/a.safetensors\"}}", "got \"/etc/a.safetensors\""},
        {"{\"weight_map\":{\"x\":\"config.json\"}}", "got \"config.json\""},
        {"{\"weight_map\":{\"x\":7}}", "got a non-string"},
        {"{\"weight_map\":{\"x\":\"a.safetensors\",\"y\":\"c.safetensors\"}}",
         "shard c.safetensors (of tensor \"y\") is missing"},
        {"{\"weight_map\":{\"x\":\"b.safetensors\",\"y\":\"a.safetensors\"}}",
         "tensor \"x\" is in shard b.safetensors by its weight_map, but is in a.safetensors"},
        {"{\"weight_map\":{\"x\":\"b.safetensors\",\"y\":\"b.safetensors\"}}",
         "tensor \"x\" is in shard b.safetensors by its weight_map, but b.safetensors does not hold it"},
        {"{\"weight_map\":{\"x\":\"a.safetensors\",\"w\":\"a.safetensors\"}}",
         "tensor \"w\" is in shard a.safetensors by its weight_map, but a.safetensors does not hold it"},
        {"{\"weight_map\":{}}", "weight_map must be an object naming each tensor's shard"},
        {"{\"metadata\":{}}", "weight_map must be an object naming each tensor's shard"},
        {"{\"weight_map\":", "model.safetensors.index.json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file("indexed/model.safetensors.index.json", bad[i][0], strlen(bad[i][0]));
        st = NULL;
        expect_error(kvc_safetensors_open_dir(sub, &st), bad[i][1], "indexed/model.safetensors.index.json");
        assert_null(st);
    }
    static char long_name[4400 + 64]; /* a shard name past the path limit: refused, not cut to a shorter one */
    const int at = snprintf(long_name, sizeof long_name, "{\"weight_map\":{\"x\":\"");
    memset(long_name + at, 'a', 4400);
    snprintf(long_name + at + 4400, sizeof long_name - (size_t)at - 4400, ".safetensors\"}}");
    write_file("indexed/model.safetensors.index.json", long_name, strlen(long_name));
    expect_error(kvc_safetensors_open_dir(sub, &st), "path too long", "(of tensor \"x\")");
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", sub);
    assert_int_equal(unlink(p), 0); /* without the index, every file of the directory */
    expect_error(kvc_safetensors_open_dir(sub, &st), "tensor \"x\" is in both", "stale.safetensors");
}

static void test_model_load_names_missing_tensor(void **state) {
    (void)state;
    char sub[300], p[512];
    snprintf(sub, sizeof sub, "%s/model", g_dir);
    snprintf(p, sizeof p, "mkdir -p '%s'", sub);
    assert_int_equal(system(p), 0);
    const char *cfg = "{\"model_type\":\"qwen3\",\"vocab_size\":4,\"hidden_size\":2,\"intermediate_size\":2,"
                      "\"num_hidden_layers\":1,\"num_attention_heads\":1,\"num_key_value_heads\":1,\"head_dim\":2}";
    write_file("model/config.json", cfg, strlen(cfg));
    const float e[8] = {0};
    write_st("model/model.safetensors",
             "{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[4,2],\"data_offsets\":[0,32]}}", e, 32, -1);
    kvc_model *m = NULL;
    expect_error(kvc_model_load(sub, &m), "missing tensor \"model.layers.0.input_layernorm.weight\"",
                 "model.safetensors");
    assert_null(m);

    write_st("model/model.safetensors",
             "{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[0,32]}}", e, 32, -1);
    expect_error(kvc_model_load(sub, &m), "\"model.embed_tokens.weight\" has wrong shape [2, 4], expected [4, 2]",
                 "model.safetensors");
    expect_error(kvc_model_load(g_dir, &m), "config.json", NULL);
    /* an empty directory path: "" + "/config.json" read the root directory's model */
    expect_error(kvc_model_load("", &m), "the model directory is an empty path", NULL);
    assert_null(m);
    kvc_model_config parsed;
    expect_error(kvc_model_config_load("", &parsed), "the model directory is an empty path", NULL);
}

/* The oracle checkpoint `family` with `from` replaced by `to` (as long) in its safetensors header, loaded:
 * refused with a message holding `want`. */
static void expect_edited(const char *family, const char *from, const char *to, const char *want) {
    char src[512], path[600], sub[300], cmd[1800];
    kvc_test_oracle_dir(family, src, sizeof src);
    snprintf(sub, sizeof sub, "%s/%s", g_dir, family);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && cp '%s/config.json' '%s/'", sub, sub, src, sub);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/model.safetensors", src);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    const size_t n = (size_t)ftell(f);
    char *b = malloc(n);
    assert_non_null(b);
    rewind(f);
    assert_int_equal(fread(b, 1, n, f), n);
    fclose(f);
    assert_int_equal(strlen(from), strlen(to));
    size_t hl = 0; /* the header: its little-endian length, then the text (terminated here for strstr) */
    for (int i = 7; i >= 0; i--) hl = hl << 8 | (unsigned char)b[i];
    assert_true(hl < n - 8);
    const char keep = b[8 + hl];
    b[8 + hl] = '\0';
    char *at = strstr(b + 8, from);
    assert_non_null(at);
    b[8 + hl] = keep;
    memcpy(at, to, strlen(to));
    char name[64];
    snprintf(name, sizeof name, "%s/model.safetensors", family);
    write_file(name, b, n);
    free(b);
    kvc_model *m = NULL;
    expect_error(kvc_model_load(sub, &m), want, NULL);
    assert_null(m);
}

static void test_moe_expert_refusals(void **state) {
    (void)state;
    expect_edited("qwen3_moe", "layers.1.mlp.experts.7.up_proj", "layers.1.mlp.experts.7.up_prxj",
                  "missing tensor \"model.layers.1.mlp.experts.7.up_proj.weight\"");
    expect_edited("qwen3_moe", "layers.2.mlp.experts.7.down_proj", "layers.2.mlp.experts.8.down_proj",
                  "unexpected tensor \"model.layers.2.mlp.experts.8.down_proj.weight\": the config has 8 experts");
    expect_edited("qwen3_moe", "layers.0.mlp.gate_proj", "layers.0.mlp.gate_prxj",
                  "missing tensor \"model.layers.0.mlp.gate_proj.weight\""); /* mlp_only_layers: layer 0 dense */
    expect_edited(
        "mixtral", "\"model.layers.1.block_sparse_moe.experts.3.w2.weight\":{\"dtype\":\"F32\",\"shape\":[48,32]",
        "\"model.layers.1.block_sparse_moe.experts.3.w2.weight\":{\"dtype\":\"F32\",\"shape\":[32,48]",
        "\"model.layers.1.block_sparse_moe.experts.3.w2.weight\" has wrong shape [32, 48], expected [48, 32]");
    expect_edited("mixtral", "layers.0.block_sparse_moe.gate.", "layers.0.block_sparse_moe.gatx.",
                  "missing tensor \"model.layers.0.block_sparse_moe.gate.weight\"");
    /* an untied head missing: refused (the embedding was read in its place, silently) */
    expect_edited("qwen3_moe", "\"lm_head.weight\"", "\"lm_head.weighx\"",
                  "missing tensor \"lm_head.weight\": tie_word_embeddings is false");
}

/* A one-layer Mixtral (H 2, I 2, 2 experts, vocab 4) in one file, every tensor BF16 of 1.0 but expert
 * 1's w1 in `w1_dtype` ("BF16" or "F16", 1 + 2^-10 there: not a BF16 value); with `extra` (not NULL) a vector [2]
 * of that name too. */
static void write_mixtral(const char *sub, const char *w1_dtype, const char *extra) {
    const struct {
        const char *name;
        int64_t d0, d1; /* d1 0: one dim */
    } T[] = {{"model.embed_tokens.weight", 4, 2},
             {"model.layers.0.input_layernorm.weight", 2, 0},
             {"model.layers.0.post_attention_layernorm.weight", 2, 0},
             {"model.layers.0.self_attn.q_proj.weight", 2, 2},
             {"model.layers.0.self_attn.k_proj.weight", 2, 2},
             {"model.layers.0.self_attn.v_proj.weight", 2, 2},
             {"model.layers.0.self_attn.o_proj.weight", 2, 2},
             {"model.layers.0.block_sparse_moe.gate.weight", 2, 2},
             {"model.layers.0.block_sparse_moe.experts.0.w1.weight", 2, 2},
             {"model.layers.0.block_sparse_moe.experts.0.w2.weight", 2, 2},
             {"model.layers.0.block_sparse_moe.experts.0.w3.weight", 2, 2},
             {"model.layers.0.block_sparse_moe.experts.1.w1.weight", 2, 2},
             {"model.layers.0.block_sparse_moe.experts.1.w2.weight", 2, 2},
             {"model.layers.0.block_sparse_moe.experts.1.w3.weight", 2, 2},
             {"model.norm.weight", 2, 0},
             {"lm_head.weight", 4, 2},
             {extra, 2, 0}};
    char header[4096], name[128];
    uint16_t data[256];
    size_t h = (size_t)snprintf(header, sizeof header, "{"), n = 0;
    for (size_t i = 0; i < sizeof T / sizeof T[0] - (extra ? 0 : 1); i++) {
        const int64_t count = T[i].d0 * (T[i].d1 ? T[i].d1 : 1);
        const bool f16 = strstr(T[i].name, "experts.1.w1") != NULL && strcmp(w1_dtype, "F16") == 0;
        char shape[64];
        snprintf(shape, sizeof shape, T[i].d1 ? "%lld,%lld" : "%lld", (long long)T[i].d0, (long long)T[i].d1);
        h += (size_t)snprintf(header + h, sizeof header - h,
                              "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}", i ? "," : "",
                              T[i].name, f16 ? "F16" : "BF16", shape, 2 * n, 2 * (n + (size_t)count));
        for (int64_t k = 0; k < count; k++) data[n++] = f16 ? 0x3C01 : 0x3F80; /* 1 + 2^-10 (f16), 1.0 (bf16) */
    }
    snprintf(header + h, sizeof header - h, "}");
    snprintf(name, sizeof name, "%s/model.safetensors", sub);
    write_st(name, header, data, 2 * n, -1);
    const char *cfg = "{\"model_type\":\"mixtral\",\"vocab_size\":4,\"hidden_size\":2,\"intermediate_size\":2,"
                      "\"num_hidden_layers\":1,\"num_attention_heads\":1,\"num_key_value_heads\":1,\"head_dim\":2,"
                      "\"num_local_experts\":2,\"num_experts_per_tok\":1}";
    snprintf(name, sizeof name, "%s/config.json", sub);
    write_file(name, cfg, strlen(cfg));
}

/* Routed experts stored per module in different dtypes are held in f32 at the checkpoint's dtype,
 * every value as stored (expert 0's BF16 decided for all: expert 1's F16 1 + 2^-10 was rounded to 1). */
static void test_mixed_dtype_experts(void **state) {
    (void)state;
    char sub[600];
    snprintf(sub, sizeof sub, "%s/mixed_experts", g_dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_mixtral("mixed_experts", "BF16", NULL);
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_load(sub, &m), KVC_OK);
    assert_int_equal(m->layers[0].ex_gate.dtype, KVC_WMAT_BF16); /* one dtype: kept */
    kvc_model_destroy(m);
    write_mixtral("mixed_experts", "F16", NULL);
    assert_int_equal(kvc_model_load(sub, &m), KVC_OK);
    assert_int_equal(m->layers[0].ex_gate.dtype, KVC_WMAT_F32);
    const float *e0 = kvci_wmat_at(&m->layers[0].ex_gate, 0).data, *e1 = kvci_wmat_at(&m->layers[0].ex_gate, 1).data;
    assert_true(e0[0] == 1.0f && e1[0] == 1.0f + 0x1p-10f);
    kvc_model_destroy(m);
}

/* A tensor left unread beside one the loader reads (a bias of a module it runs without one) is refused, naming it
 * and the model type; one in a module it does not read at all (a vision tower, a rotary buffer) loads. */
static void test_unread_tensors(void **state) {
    (void)state;
    char sub[600];
    snprintf(sub, sizeof sub, "%s/unread", g_dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    static const char *const refused[] = {"model.layers.0.self_attn.q_proj.bias", "model.layers.0.input_layernorm.bias",
                                          "model.norm.bias"};
    kvc_model *m = NULL;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        write_mixtral("unread", "BF16", refused[i]);
        char want[160];
        snprintf(want, sizeof want, "tensor \"%s\" is not read", refused[i]);
        expect_error(kvc_model_load(sub, &m), want, "mixtral");
        assert_null(m);
    }
    static const char *const allowed[] = {"vision_tower.x", "model.layers.0.self_attn.rotary_emb.inv_freq", "x"};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        write_mixtral("unread", "BF16", allowed[i]);
        assert_int_equal(kvc_model_load(sub, &m), KVC_OK);
        kvc_model_destroy(m);
        m = NULL;
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_three_dtypes),          cmocka_unit_test(test_wrong_dtype),
        cmocka_unit_test(test_truncated_and_out_of_bounds), cmocka_unit_test(test_metadata_is_not_a_tensor),
        cmocka_unit_test(test_duplicate_across_files),      cmocka_unit_test(test_model_load_names_missing_tensor),
        cmocka_unit_test(test_moe_expert_refusals),         cmocka_unit_test(test_index_names_the_shards),
        cmocka_unit_test(test_mixed_dtype_experts),         cmocka_unit_test(test_unread_tensors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
