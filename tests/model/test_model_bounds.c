/* Model sizes given through the C API (not config.json, whose reader bounds
 * them too) are bounded before anything is multiplied or allocated (issue
 * 13 #6): every size at most 2^24, the weights at most 2^38 bytes. */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/internal.h"
#include "kvcache/model.h"

static kvc_model_config small_config(void) {
    kvc_model_config cfg;
    kvc_status st = kvc_model_config_parse(
        "{\"model_type\":\"qwen3\",\"vocab_size\":16,\"hidden_size\":8,\"intermediate_size\":16,"
        "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4}",
        "cfg", &cfg);
    assert_int_equal(st, KVC_OK);
    return cfg;
}

/* Refused with a message naming `text`, and without a single allocation. */
static void expect_refused(const kvc_model_config *cfg, const char *text) {
    kvc_model *m = (kvc_model *)cfg;
    kvci_alloc_fail_at(0);
    assert_int_equal(kvc_model_create_random(cfg, 1, &m), KVC_EINVAL);
    assert_null(m);
    if (strstr(kvc_last_error(), text) == NULL) fail_msg("\"%s\" should name \"%s\"", kvc_last_error(), text);
    assert_true(kvci_alloc_calls() <= 2); /* the model struct and its RoPE table at most, never the weights */
}

static void test_sizes_bounded(void **state) {
    (void)state;
    kvc_model_config cfg = small_config();
    cfg.vocab_size = INT64_C(1) << 40;
    expect_refused(&cfg, "vocab_size 1099511627776 outside [1, 16777216]");
    cfg = small_config();
    cfg.hidden_size = INT64_C(9000000000000000);
    expect_refused(&cfg, "hidden_size 9000000000000000 outside");
    cfg = small_config();
    cfg.intermediate_size = -1;
    expect_refused(&cfg, "intermediate_size -1 outside");
    cfg = small_config();
    cfg.num_heads = cfg.num_kv_heads = INT64_C(1) << 50;
    expect_refused(&cfg, "num_attention_heads");
}

/* Sizes each within bounds whose product is not: refused by the weight
 * limit before the arena is allocated. */
static void test_weight_limit(void **state) {
    (void)state;
    kvc_model_config cfg = small_config();
    cfg.vocab_size = INT64_C(1) << 24;
    cfg.hidden_size = INT64_C(1) << 20;
    expect_refused(&cfg, "model.embed_tokens.weight\" needs more than the 274877906944-byte weight limit");
}

/* Only a family the runtime runs: one it merely plans (its layers would be run
 * as a dense model's), or no family at all (the cache shapes and the forward
 * pass ask the family's descriptor), is refused. */
static void test_family_must_run(void **state) {
    (void)state;
    kvc_model_config cfg = small_config();
    cfg.family = KVC_FAMILY_DEEPSEEK_V4;
    expect_refused(&cfg, "family 13 (deepseek_v4) is not one the runtime runs");
    cfg.family = (kvc_model_family)999;
    expect_refused(&cfg, "family 999 (?) is not one the runtime runs");
}

static kvc_model_config parsed(const char *json) {
    kvc_model_config cfg;
    if (kvc_model_config_parse(json, "cfg", &cfg) != KVC_OK) fail_msg("parse: %s", kvc_last_error());
    return cfg;
}

/* A model of cfg is created (and destroyed). */
static void expect_created(const kvc_model_config *cfg) {
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_create_random(cfg, 1, &m), KVC_OK);
    kvc_model_destroy(m);
}

/* The fields beyond the sizes that the forward reads are checked as the config reader bounds them:
 * DeepSeek's routing groups (n_group 0 divided by zero, experts_per_tok above the experts read past
 * the router's scores), GptOss's experts and SwiGLU, and every family's eps, positions, window and
 * model_type, so a caller's own struct is refused before any allocation. */
static void test_fields_and_routing_checked(void **state) {
    (void)state;
    const kvc_model_config ds =
        parsed("{\"model_type\":\"deepseek_v3\",\"vocab_size\":16,\"hidden_size\":8,\"intermediate_size\":16,"
               "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"num_key_value_heads\":2,\"kv_lora_rank\":4,"
               "\"qk_nope_head_dim\":4,\"qk_rope_head_dim\":4,\"v_head_dim\":4,\"first_k_dense_replace\":1,"
               "\"moe_intermediate_size\":8,\"n_routed_experts\":4,\"n_group\":2,\"topk_group\":1,"
               "\"num_experts_per_tok\":2}");
    expect_created(&ds);
    kvc_model_config cfg = ds;
    cfg.n_group = 0;
    expect_refused(&cfg, "MoE routing sizes are inconsistent (n_routed_experts 4, n_group 0");
    cfg = ds, cfg.experts_per_tok = 100;
    expect_refused(&cfg, "num_experts_per_tok 100)");
    cfg = ds, cfg.n_routed_experts = 0;
    expect_refused(&cfg, "n_routed_experts 0");
    cfg = ds, cfg.topk_group = 3;
    expect_refused(&cfg, "topk_group 3,");
    cfg = ds, cfg.routed_scaling_factor = INFINITY;
    expect_refused(&cfg, "routed_scaling_factor inf");
    const kvc_model_config oss =
        parsed("{\"model_type\":\"gpt_oss\",\"vocab_size\":16,\"hidden_size\":8,\"intermediate_size\":8,"
               "\"num_hidden_layers\":2,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4,"
               "\"num_local_experts\":4,\"num_experts_per_tok\":2}");
    cfg = oss, cfg.experts_per_tok = 5;
    expect_refused(&cfg, "num_experts_per_tok 5 must be in [1, num_local_experts = 4]");
    cfg = oss, cfg.swiglu_limit = NAN;
    expect_refused(&cfg, "swiglu_limit nan");
    cfg = oss, cfg.sliding_window = 0;
    expect_refused(&cfg, "sliding_window 0 outside [1,");
    cfg = small_config(), cfg.rms_norm_eps = NAN;
    expect_refused(&cfg, "rms_norm_eps nan");
    cfg = small_config(), cfg.max_position_embeddings = 0;
    expect_refused(&cfg, "max_position_embeddings 0");
    cfg = small_config(), cfg.sliding_window = -5;
    expect_refused(&cfg, "sliding_window -5");
    cfg = small_config(), memset(cfg.model_type, 'x', sizeof cfg.model_type);
    expect_refused(&cfg, "model_type is not NUL-terminated");
}

/* A state mixer marked on a layer of a family that does not run it: the dense forward ran a Mamba-1 or Gated
 * DeltaNet layer over weights it never allocated (SIGFPE) and a lightning layer past its workspace (heap
 * corruption); each mixer is refused outside its family, in any layer. */
static void test_mixers_of_their_family(void **state) {
    (void)state;
    static const char *const names[] = {"layer_conv",   "layer_gdn",       "layer_mamba",
                                        "layer_mamba1", "layer_lightning", "layer_rglru"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        kvc_model_config cfg = small_config();
        bool *marks[] = {cfg.layer_conv,   cfg.layer_gdn,       cfg.layer_mamba,
                         cfg.layer_mamba1, cfg.layer_lightning, cfg.layer_rglru};
        marks[i][0] = true;
        char want[96];
        snprintf(want, sizeof want, "%s marks 1 layers, which the", names[i]);
        expect_refused(&cfg, want);
    }
}

/* Apertus's xIELU holds scalars (beta, eps: shape []): the random initialiser read shape[-1] for their fan-in (a
 * stack-buffer-underflow under ASan). */
static void test_random_scalars(void **state) {
    (void)state;
    const kvc_model_config cfg =
        parsed("{\"model_type\":\"apertus\",\"vocab_size\":16,\"hidden_size\":8,\"intermediate_size\":16,"
               "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4,"
               "\"hidden_act\":\"xielu\",\"max_position_embeddings\":512,\"rope_parameters\":{\"rope_type\":"
               "\"llama3\",\"factor\":8.0,\"high_freq_factor\":4.0,\"low_freq_factor\":1.0,"
               "\"original_max_position_embeddings\":64,\"rope_theta\":10000.0}}");
    expect_created(&cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_bounded),          cmocka_unit_test(test_weight_limit),
        cmocka_unit_test(test_family_must_run),        cmocka_unit_test(test_fields_and_routing_checked),
        cmocka_unit_test(test_mixers_of_their_family), cmocka_unit_test(test_random_scalars)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
