/* A saved quantized copy (kvci_model_save, issue 30): every oracle family in
 * q8_0 and q4_0 saved and loaded back holds the very bytes of the model
 * quantized at load (every tensor, padding included); a copy only loads as itself; what is
 * not a quantized model, a Gemma norm that would not reload to its bits, an existing directory and bad metadata are
 * refused with what is wrong named; a failed save (out of memory) leaves nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/internal.h"
#include "kvc_test_util.h"
#include "model/model_internal.h"

static char tmp[] = "/tmp/kvc_qsave_XXXXXX";

static void out_dir(const char *name, char *buf, size_t cap) { snprintf(buf, cap, "%s/%s", tmp, name); }

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* Every tensor of a model as (bytes, count): vectors their floats, matrices all their packed bytes. */
typedef struct spans {
    const void *p[512];
    int64_t bytes[512];
    int n;
} spans;

static kvc_status span_fn(void *user, const kvc_wtensor *t) {
    spans *s = user;
    assert_true(s->n < 512);
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
    s->p[s->n] = t->mat ? t->mat->data : *t->vec;
    s->bytes[s->n++] = t->mat ? t->mat->count * kvci_wmat_matrix_bytes(t->mat) : n * 4;
    return KVC_OK;
}

/* a and b hold the same bytes in every tensor. */
static void assert_same_weights(kvc_model *a, kvc_model *b) {
    static spans sa, sb;
    sa.n = sb.n = 0;
    assert_int_equal(kvci_model_visit_weights(a, span_fn, &sa), KVC_OK);
    assert_int_equal(kvci_model_visit_weights(b, span_fn, &sb), KVC_OK);
    assert_int_equal(sa.n, sb.n);
    for (int i = 0; i < sa.n; i++) {
        assert_int_equal(sa.bytes[i], sb.bytes[i]);
        assert_memory_equal(sa.p[i], sb.p[i], (size_t)sa.bytes[i]);
    }
}

static void test_round_trip_every_family(void **state) {
    (void)state;
    /* gemma3: its norms held as 1 + w are written as w and read back to the same bits; phi3_longrope: its
     * fused qkv_proj / gate_up_proj written as the runtime's q, k, v and gate, up and read back; olmo3: no input
     * norm, q / k norms over the whole projection, two ropes; gemma: 1 + w norms without the sandwich ones;
     * glm4: its fused gate_up_proj and its own names of the sandwich norms; cohere: LayerNorms, no
     * post-attention norm, q / k norms of shape [heads, head_dim]; starcoder2: the LayerNorms' biases and the
     * plain MLP's c_fc / c_proj; lfm2: the conv layers' taps, an f32 tensor of three dims [H, 1, L];
     * stablelm2_qk: q / k LayerNorms of one module per head (norms.{h}), stacked [heads, head_dim] */
    static const char *const families[] = {"qwen3",         "gpt_oss",    "deepseek_v3", "gemma3",
                                           "phi3_longrope", "olmo3",      "gemma",       "glm4",
                                           "cohere",        "starcoder2", "lfm2",        "stablelm2_qk"};
    static const kvc_wmat_dtype dts[] = {KVC_WMAT_Q8_0, KVC_WMAT_Q4_0};
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (size_t d = 0; d < 2; d++) {
            char dir[1024], out[1100];
            kvc_test_oracle_dir(families[f], dir, sizeof dir);
            snprintf(out, sizeof out, "%s/%s_%s", tmp, families[f], kvci_wmat_dtype_name(dts[d]));
            kvc_model *a = NULL, *b = NULL, *c = NULL;
            assert_int_equal(kvci_model_load_as(dir, dts[d], &a), KVC_OK);
            assert_int_equal(kvci_model_save(a, dir, out), KVC_OK);
            assert_int_equal(kvc_model_load(out, &b), KVC_OK);
            assert_int_equal(a->arena_bytes, b->arena_bytes);
            assert_same_weights(a, b);
            assert_int_equal(kvci_model_load_as(out, dts[d], &c), KVC_OK); /* asking its own dtype */
            assert_same_weights(a, c);
            kvc_model_destroy(c), c = NULL;
            assert_int_equal(kvci_model_load_as(out, KVC_WMAT_F32, &c), KVC_EINVAL);
            assert_non_null(strstr(kvc_last_error(), "loads as checkpoint"));
            assert_null(c);
            kvc_model_destroy(a), kvc_model_destroy(b);
        }
}

/* DeepSeek's routed experts (the oracle has none): a random MoE model, its config.json written beside it. */
static void test_round_trip_deepseek_experts(void **state) {
    (void)state;
    static const char json[] =
        "{\"model_type\":\"deepseek_v3\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"
        "\"moe_intermediate_size\":32,\"num_hidden_layers\":2,\"first_k_dense_replace\":1,"
        "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"q_lora_rank\":32,\"kv_lora_rank\":24,"
        "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":12,\"n_routed_experts\":8,"
        "\"n_group\":2,\"topk_group\":1,\"num_experts_per_tok\":2,\"n_shared_experts\":1,"
        "\"routed_scaling_factor\":2.5,\"rope_theta\":10000,\"max_position_embeddings\":4096}";
    char src[1100], path[1200], out[1100];
    out_dir("ds_src", src, sizeof src);
    out_dir("ds_q4", out, sizeof out);
    assert_int_equal(mkdir(src, 0755), 0);
    snprintf(path, sizeof path, "%s/config.json", src);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(json, f) >= 0);
    assert_int_equal(fclose(f), 0);
    kvc_model_config cfg;
    assert_int_equal(kvc_model_config_parse(json, "deepseek", &cfg), KVC_OK);
    kvc_model *a = NULL, *b = NULL;
    assert_int_equal(kvci_model_create_random_as(&cfg, 3, KVC_WMAT_Q4_0, &a), KVC_OK);
    assert_true(a->layers[1].moe && a->layers[1].ex_gate.count == 8);
    assert_int_equal(kvci_model_save(a, src, out), KVC_OK);
    assert_int_equal(kvc_model_load(out, &b), KVC_OK);
    assert_same_weights(a, b);
    kvc_model_destroy(a), kvc_model_destroy(b);
}

static void test_refusals(void **state) {
    (void)state;
    char dir[1024], out[1100], path[1300];
    kvc_test_oracle_dir("qwen3", dir, sizeof dir);
    kvc_model *m = NULL;
    /* not quantized: refused naming the matrix, nothing left */
    assert_int_equal(kvci_model_load_as(dir, KVC_WMAT_BF16, &m), KVC_OK);
    out_dir("bf16", out, sizeof out);
    assert_int_equal(kvci_model_save(m, dir, out), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "is bf16, not quantized"));
    assert_false(exists(out));
    kvc_model_destroy(m);
    /* a Gemma norm 1 + w whose w written back would not reload to it: w = -16777218 gives 1 + w = -2^24
     * (the tie to even), written as -2^24 (again a tie) and reloaded as 1 - 2^24; refused, nothing left */
    char gemma[1024];
    kvc_test_oracle_dir("gemma3", gemma, sizeof gemma);
    kvc_model *g = NULL;
    assert_int_equal(kvci_model_load_as(gemma, KVC_WMAT_Q8_0, &g), KVC_OK);
    g->final_norm[3] = 1.0f + -16777218.0f;
    out_dir("gemma_norm", out, sizeof out);
    assert_int_equal(kvci_model_save(g, gemma, out), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "norm \"model.norm.weight\"[3] = 1 + w does not give w back exactly"));
    assert_false(exists(out));
    kvc_model_destroy(g);
    /* an existing directory */
    assert_int_equal(kvci_model_load_as(dir, KVC_WMAT_Q8_0, &m), KVC_OK);
    assert_int_equal(kvci_model_save(m, dir, tmp), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "must not exist yet"));
    /* out of memory at every allocation in turn: KVC_ENOMEM and nothing left, until it succeeds */
    out_dir("oom", out, sizeof out);
    kvc_status st = KVC_ENOMEM;
    for (uint64_t n = 1; st != KVC_OK; n++) {
        kvci_alloc_fail_at(n);
        st = kvci_model_save(m, dir, out);
        kvci_alloc_fail_at(0);
        if (st != KVC_OK) {
            assert_int_equal(st, KVC_ENOMEM);
            assert_false(exists(out));
        }
    }
    kvc_model_destroy(m);
    /* bad metadata, patched into the saved file (same lengths, so the offsets still hold) */
    static const char *const patches[][3] = {
        {"kvcache-q-packed-1", "kvcache-q-packed-9", "is not kvcache-q-packed-1"},
        {"kvcache.dtype.model.layers.0.self_attn.q_proj", "kvcache.dtype.model.layers.0.self_attn.q_pro_",
         "kvcache.dtype.model.layers.0.self_attn.q_proj.weight naming q8_0 or q4_0"},
        {"\"q8_0\"", "\"bf16\"", "(got \"bf16\")"},
        {"\"U8\"", "\"I8\"", "has wrong dtype I8, expected U8"},
    };
    for (size_t i = 0; i < sizeof patches / sizeof patches[0]; i++) {
        char bad[1200];
        snprintf(bad, sizeof bad, "%s/patched%zu", tmp, i);
        assert_int_equal(kvci_model_load_as(dir, KVC_WMAT_Q8_0, &m), KVC_OK);
        assert_int_equal(kvci_model_save(m, dir, bad), KVC_OK);
        kvc_model_destroy(m), m = NULL;
        snprintf(path, sizeof path, "%s/model.safetensors", bad);
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(kvci_read_file(path, 1 << 26, &text, &len), KVC_OK);
        char *at = strstr(text + 8, patches[i][0]);
        assert_non_null(at);
        memcpy(at, patches[i][1], strlen(patches[i][1]));
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        kvci_free(text);
        assert_int_equal(kvc_model_load(bad, &m), KVC_EINVAL);
        if (!strstr(kvc_last_error(), patches[i][2])) fail_msg("patch %zu: %s", i, kvc_last_error());
        assert_null(m);
    }
}

static int setup(void **state) {
    (void)state;
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_family),
        cmocka_unit_test(test_round_trip_deepseek_experts),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
