/* Models whose GEMM operands are kept in bf16 (packed, src/model/wmat.c):
 * for every family, a random bf16 model and the f32 model drawn from the same
 * seed with its matrices rounded to bf16 give the same prompt logits to f32 rounding on every bf16
 * GEMM kernel of this CPU (so packing, the GptOss experts' transposition, the
 * DeepSeek experts and the tied / untied heads are read right), and the
 * weights take about half the bytes. With activations rounded to bf16
 * (kvc_model_set_activations "bf16") every bf16 matrix and fused view is
 * marked, the logits move by less than the rounding allows yet do move, the fma
 * kernels agree bitwise, and "f32" gives the exact bits back; refusals name
 * the value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/half.h"
#include "kvc_test_util.h"
#include "kvcache/kvcache.h"
#include "model/gemm_bf16.h"
#include "model/model_internal.h"

#define T 9 /* prompt tokens */

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

/* Rounds an f32 model's GEMM operands to bf16 in place: the values the bf16
 * model, drawn from the same seed, must hold wherever it packed them. */
static kvc_status round_to_bf16(void *user, const kvc_wtensor *t) {
    (void)user;
    if (!t->mat) return KVC_OK;
    assert_int_equal(t->mat->dtype, KVC_WMAT_F32);
    float *d = t->mat->data;
    for (int64_t i = 0; i < t->mat->count * t->mat->rows * t->mat->cols; i++)
        d[i] = kvc_bf16_to_f32(kvc_f32_to_bf16(d[i]));
    return KVC_OK;
}

/* Asserts that every bf16 matrix of the model is marked `on`. */
static kvc_status marked(void *user, const kvc_wtensor *t) {
    if (t->mat && t->mat->dtype == KVC_WMAT_BF16) assert_int_equal(t->mat->act_bf16, *(const bool *)user);
    return KVC_OK;
}

static void assert_marked(kvc_model *m, bool on) {
    check(kvci_model_visit_weights(m, marked, &on), "visit");
    assert_int_equal(m->lm_head.act_bf16, on);
    for (int64_t l = 0; l < m->cfg.num_layers; l++) { /* the fused views (fuse.c) */
        if (m->layers[l].wqkv.data) assert_int_equal(m->layers[l].wqkv.act_bf16, on);
        if (m->layers[l].w_gu.data) assert_int_equal(m->layers[l].w_gu.act_bf16, on);
    }
}

/* b: the bf16 model, f: the f32 one (matrices rounded to bf16), ref: f's logits [T, V]; the
 * logits may move by at most `frac` of the largest one. */
static void rounded_activations(kvc_model *b, kvc_model *f, const int32_t *ids, const float *ref, float *got,
                                double frac) {
    const int64_t V = b->cfg.vocab_size;
    float *exact = malloc((size_t)(T * V) * sizeof(float)), *fma = malloc((size_t)(T * V) * sizeof(float));
    assert_true(exact && fma);
    kvc_test_prompt_logits(b, ids, T, exact);
    assert_int_equal(kvc_model_set_activations(f, "bf16"), KVC_EINVAL); /* no bf16 matrix */
    assert_non_null(strstr(kvc_last_error(), "activations \"bf16\" needs bf16 weights; this model's are f32"));
    assert_int_equal(kvc_model_set_activations(b, "f16"), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "activations \"f16\" is not one of f32, bf16"));
    assert_string_equal(kvc_model_activations(b), "f32");
    check(kvc_model_set_activations(b, "bf16"), "bf16 activations");
    assert_string_equal(kvc_model_activations(b), "bf16");
    assert_marked(b, true);
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int n = kvci_gemm_bf16_kernels(all);
    bool fma_seen = false;
    for (int k = 0; k < n; k++) {
        if (!all[k]->block_rounded) continue;
        check(kvci_gemm_bf16_force(all[k]->name), all[k]->name);
        kvc_test_prompt_logits(b, ids, T, got);
        double moved = 0.0, scale = 0.0;
        for (int64_t i = 0; i < T * V; i++) {
            moved = fmax(moved, fabs((double)got[i] - ref[i]));
            scale = fmax(scale, fabs((double)ref[i]));
        }
        if (!(moved > 0 && moved < frac * scale))
            fail_msg("%s, %s rounded: logits moved by %.3g (largest logit %.3g)", b->cfg.model_type, all[k]->name,
                     moved, scale);
        if (strcmp(all[k]->family, "fma") != 0) continue;
        if (fma_seen && memcmp(got, fma, (size_t)(T * V) * sizeof(float)) != 0)
            fail_msg("%s: fma kernel %s rounded differs from the other fma kernels", b->cfg.model_type, all[k]->name);
        memcpy(fma, got, (size_t)(T * V) * sizeof(float)), fma_seen = true;
    }
    check(kvci_gemm_bf16_force(NULL), "force");
    check(kvc_model_set_activations(b, "f32"), "f32 activations");
    assert_marked(b, false);
    kvc_test_prompt_logits(b, ids, T, got);
    assert_memory_equal(got, exact, (size_t)(T * V) * sizeof(float));
    free(exact), free(fma);
}

/* frac: rounded_activations' bound. */
static void run(const char *json, double frac) {
    kvc_model_config cfg;
    check(kvc_model_config_parse(json, "test config", &cfg), "config");
    kvc_model *b = NULL, *f = NULL;
    check(kvci_model_create_random_as(&cfg, 7, KVC_WMAT_BF16, &b), "bf16 model");
    check(kvci_model_create_random_as(&cfg, 7, KVC_WMAT_F32, &f), "f32 model");
    assert_true(b->arena_bytes < f->arena_bytes * 6 / 10);
    check(kvci_model_visit_weights(f, round_to_bf16, NULL), "round");
    const int64_t V = cfg.vocab_size;
    int32_t ids[T];
    for (int i = 0; i < T; i++) ids[i] = (int32_t)((i * 37 + 11) % V);
    float *ref = malloc((size_t)(T * V) * sizeof(float)), *got = malloc((size_t)(T * V) * sizeof(float));
    assert_non_null(ref);
    assert_non_null(got);
    kvc_test_prompt_logits(f, ids, T, ref);
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int n = kvci_gemm_bf16_kernels(all);
    for (int k = 0; k < n; k++) {
        check(kvci_gemm_bf16_force(all[k]->name), all[k]->name);
        kvc_test_prompt_logits(b, ids, T, got);
        for (int64_t i = 0; i < T * V; i++)
            if (fabs((double)got[i] - ref[i]) > 1e-4 * fabs(ref[i]) + 2e-5)
                fail_msg("%s, %s: logit %lld is %.7g, the f32 model's %.7g", cfg.model_type, all[k]->name, (long long)i,
                         got[i], ref[i]);
    }
    check(kvci_gemm_bf16_force(NULL), "force");
    rounded_activations(b, f, ids, ref, got, frac);
    free(ref), free(got);
    kvc_model_destroy(b), kvc_model_destroy(f);
}

#define COMMON "\"vocab_size\":96,\"hidden_size\":64,\"num_hidden_layers\":2,\"max_position_embeddings\":512,"
static void test_dense(void **s) {
    (void)s, run("{\"model_type\":\"qwen3\"," COMMON "\"intermediate_size\":96,\"num_attention_heads\":4,"
                 "\"num_key_value_heads\":2,\"head_dim\":16,\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,"
                 "\"tie_word_embeddings\":true}",
                 0.05); /* about 2^-8 relative per GEMM input, two layers deep: well under 5 % of the logits */
}
static void test_gpt_oss(void **s) {
    (void)s, run("{\"model_type\":\"gpt_oss\"," COMMON "\"intermediate_size\":32,\"num_attention_heads\":4,"
                 "\"num_key_value_heads\":2,\"head_dim\":16,\"sliding_window\":5,\"num_local_experts\":4,"
                 "\"num_experts_per_tok\":2,\"rms_norm_eps\":1e-5,"
                 "\"layer_types\":[\"sliding_attention\",\"full_attention\"],\"rope_theta\":150000}",
                 1.0); /* the random router picks other experts on small changes: only a bound on the scale */
}
static void test_deepseek(void **s) {
    (void)s, run("{\"model_type\":\"deepseek_v3\"," COMMON "\"intermediate_size\":96,\"moe_intermediate_size\":32,"
                 "\"first_k_dense_replace\":1,\"num_attention_heads\":4,\"num_key_value_heads\":4,"
                 "\"q_lora_rank\":32,\"kv_lora_rank\":24,\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,"
                 "\"v_head_dim\":12,\"n_routed_experts\":8,\"n_group\":2,\"topk_group\":1,"
                 "\"num_experts_per_tok\":2,\"n_shared_experts\":1,\"routed_scaling_factor\":2.5,"
                 "\"rope_theta\":10000}",
                 0.05);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_gpt_oss),
        cmocka_unit_test(test_deepseek),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
