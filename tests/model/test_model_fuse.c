/* Fused projections (src/model/fuse.c): a Qwen3-shaped random model fuses q/k/v and gate/up
 * into one GEMM each for f32 and bf16 weights (views over the parts, no copy) and leaves
 * quantized weights unfused; the fused model's prompt logits are bitwise those of the same
 * model run through the separate GEMMs, on every bf16 kernel of this CPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvc_test_util.h"
#include "kvcache/kvcache.h"
#include "model/gemm_bf16.h"
#include "model/model_internal.h"

#define T 9 /* prompt tokens: several rows through each fused GEMM */

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

/* The logits of m fused (as loaded) and with every fused view dropped, compared bit for bit. */
static void same_bits_unfused(kvc_model *m, const int32_t *ids, const char *what) {
    const int64_t n = T * m->cfg.vocab_size, L = m->cfg.num_layers;
    float *fused = malloc((size_t)n * sizeof(float)), *apart = malloc((size_t)n * sizeof(float));
    assert_non_null(fused);
    assert_non_null(apart);
    kvc_test_prompt_logits(m, ids, T, fused);
    kvc_wmat qkv[2], gu[2];
    assert_true(L <= 2);
    for (int64_t l = 0; l < L; l++) {
        qkv[l] = m->layers[l].wqkv, gu[l] = m->layers[l].w_gu;
        m->layers[l].wqkv = m->layers[l].w_gu = (kvc_wmat){0};
    }
    kvc_test_prompt_logits(m, ids, T, apart);
    for (int64_t l = 0; l < L; l++) m->layers[l].wqkv = qkv[l], m->layers[l].w_gu = gu[l];
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&fused[i], &apart[i], sizeof(float)) != 0)
            fail_msg("%s: logit %lld is %.9g fused, %.9g apart", what, (long long)i, fused[i], apart[i]);
    free(fused), free(apart);
}

static void run(kvc_wmat_dtype dtype, bool fuses) {
    kvc_model_config cfg;
    check(kvc_model_config_parse(
              "{\"model_type\":\"qwen3\",\"vocab_size\":96,\"hidden_size\":64,\"num_hidden_layers\":2,"
              "\"max_position_embeddings\":512,\"intermediate_size\":96,\"num_attention_heads\":4,"
              "\"num_key_value_heads\":2,\"head_dim\":16,\"rope_theta\":1000000,\"rms_norm_eps\":1e-6}",
              "test config", &cfg),
          "config");
    kvc_model *m = NULL;
    check(kvci_model_create_random_as(&cfg, 11, dtype, &m), "model");
    for (int64_t l = 0; l < cfg.num_layers; l++) {
        const kvc_layer_weights *w = &m->layers[l];
        assert_int_equal(w->wqkv.data != NULL, fuses);
        assert_int_equal(w->w_gu.data != NULL, fuses);
        if (!fuses) continue;
        assert_ptr_equal(w->wqkv.data, w->wq.data); /* a view: the parts keep their bytes */
        assert_int_equal(w->wqkv.rows, w->wq.rows + w->wk.rows + w->wv.rows);
        assert_ptr_equal(w->w_gu.data, w->w_gate.data);
        assert_int_equal(w->w_gu.rows, 2 * w->w_gate.rows);
    }
    int32_t ids[T];
    for (int i = 0; i < T; i++) ids[i] = (int32_t)((i * 37 + 11) % cfg.vocab_size);
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int n = dtype == KVC_WMAT_BF16 ? kvci_gemm_bf16_kernels(all) : 1;
    for (int k = 0; k < n; k++) {
        if (dtype == KVC_WMAT_BF16) check(kvci_gemm_bf16_force(all[k]->name), all[k]->name);
        same_bits_unfused(m, ids, dtype == KVC_WMAT_BF16 ? all[k]->name : kvci_wmat_dtype_name(dtype));
    }
    check(kvci_gemm_bf16_force(NULL), "force");
    kvc_model_destroy(m);
}

static void test_f32(void **s) { (void)s, run(KVC_WMAT_F32, true); }
static void test_bf16(void **s) { (void)s, run(KVC_WMAT_BF16, true); }
static void test_q8_0(void **s) { (void)s, run(KVC_WMAT_Q8_0, false); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_q8_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
