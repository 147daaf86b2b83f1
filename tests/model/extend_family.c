/* The model-family contract (docs/model.md, "Adding a model family"): a
 * family defined in this file alone and registered with one call, with no
 * other file of the library changed, is read by the runtime's config parser,
 * planned by the planner with the same layer kinds and cache shapes as the
 * runtime asks the managers for, and run by every runner mode with the
 * results of the no-cache recomputation.
 *
 * The family, "toy_islands", is a dense GQA model whose layers slide except
 * the ones listed in its own key `global_layers`, which attend to everything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runner/runner_fixture.h"
#include "kvc_test_util.h"
#include "base/internal.h"
#include "kvcache/plan.h"
#include "model/family.h"

#define FAMILY_NAME "toy_islands"

/* head_dim, or hidden_size / heads; no biases, no q/k norm. */
static kvc_status islands_parse(const kvc_hparams *hp, kvc_model_config *cfg) {
    return kvci_hparams_head_dim(hp, &cfg->head_dim);
}

/* Every layer slides except those in global_layers (each in [0, n_layers)). */
static kvc_status islands_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    const cJSON *global = NULL;
    KVC_TRY(kvci_json_array(cfg, "global_layers", ctx->n_layers, &global, NULL));
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_SLIDING;
    for (const cJSON *e = global->child; e != NULL; e = e->next) {
        int64_t l = 0;
        KVC_TRY(kvci_json_int_value(e, "global_layers item", 0, ctx->n_layers - 1, &l));
        kinds[l] = KVC_LK_FULL;
    }
    return KVC_OK;
}

static const kvc_family_alias ALIASES[] = {{FAMILY_NAME, "ToyIslandsForCausalLM", FAMILY_NAME, true}};
static kvc_family_desc islands = {
    .name = FAMILY_NAME,
    .aliases = ALIASES,
    .n_aliases = 1,
    .parse = islands_parse,
    .default_kinds = islands_kinds,
};
static kvc_model_family islands_id;

static int register_family(void **state) {
    (void)state;
    return kvci_family_register(&islands, &islands_id) == KVC_OK ? 0 : -1;
}

/* 4 layers: 0 and 2 slide (window 3), 1 and 3 are global. */
static const char CONFIG[] =
    "{\"model_type\":\"" FAMILY_NAME "\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
    "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
    "\"sliding_window\":3,\"global_layers\":[1,3],\"max_position_embeddings\":512,\"torch_dtype\":\"float32\"}";

static void test_runtime_reads_the_family(void **state) {
    (void)state;
    kvc_model_config c;
    assert_int_equal(kvc_model_config_parse(CONFIG, "islands", &c), KVC_OK);
    assert_int_equal(c.family, islands_id);
    assert_true(islands_id >= KVC_FAMILY_BUILTIN_COUNT);
    assert_string_equal(kvc_model_family_name(c.family), FAMILY_NAME);
    assert_int_equal(c.head_dim, 16);
    assert_int_equal(c.sliding_window, 3);
    const bool sliding[4] = {true, false, true, false};
    for (int l = 0; l < 4; l++) assert_int_equal(c.layer_sliding[l], sliding[l]);
    /* the family's own refusal, through the runtime's parser */
    assert_int_equal(kvc_model_config_parse("{\"model_type\":\"" FAMILY_NAME "\",\"vocab_size\":8,\"hidden_size\":8,"
                                            "\"intermediate_size\":8,\"num_hidden_layers\":2,\"num_attention_heads\":2,"
                                            "\"sliding_window\":3,\"global_layers\":[2]}",
                                            "bad", &c),
                     KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "global_layers item"));
}

/* The planner's layers (attention type, window, cache heads and dims) are
 * the runtime's cache description, layer by layer. */
static void test_plan_matches_runtime(void **state) {
    (void)state;
    kvc_model *m = fixture_model(CONFIG, 7);
    kvc_model_cache_info *ci = NULL;
    assert_int_equal(kvc_model_cache_info_build(m, false, KVC_DTYPE_F32, 16, &ci), KVC_OK);
    kvc_plan_options o = kvc_plan_default_options();
    o.block_size = 16;
    kvc_model_plan *plan = NULL;
    assert_int_equal(kvc_model_plan_create(CONFIG, strlen(CONFIG), &o, &plan), KVC_OK);
    assert_string_equal(plan->family, FAMILY_NAME);
    assert_int_equal(plan->n_layers, ci->n_layer_infos);
    for (int32_t l = 0; l < plan->n_layers; l++) {
        const kvc_plan_layer *pl = &plan->layers[l];
        const kvc_layer_cache_info *li = &ci->layer_infos[l];
        assert_int_equal(pl->attn_type, l % 2 == 0 ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_FULL);
        assert_int_equal(pl->n_caches, li->n_caches);
        for (int32_t k = 0; k < pl->n_caches; k++) {
            assert_string_equal(pl->caches[k].name, li->caches[k].name);
            assert_int_equal(pl->attn_type, li->caches[k].attn_type);
            assert_int_equal(pl->sliding_window, li->caches[k].sliding_window);
            assert_int_equal(pl->caches[k].num_head, li->caches[k].num_head);
            assert_int_equal(pl->caches[k].dim, li->caches[k].dim[0]);
            assert_int_equal(pl->caches[k].num_head * pl->caches[k].dim, 2 * 16);
        }
    }
    kvc_model_plan_destroy(plan);
    kvc_model_cache_info_destroy(ci);
    kvc_model_destroy(m);
}

static const int32_t IDS[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31, 8, 45, 2, 60, 71, 33, 19, 88, 7, 14, 120};
static const int64_t LENS[] = {5, 11, 7};

/* Every runner mode (contiguous, paged with three block sizes, keys in lanes)
 * gives the no-cache recomputation's tokens and logits. */
static void test_runner_runs_the_family(void **state) {
    (void)state;
    kvc_model *m = fixture_model(CONFIG, 1234);
    fixture_equivalence(m, IDS, LENS, 3, 6, false);
    kvc_model_destroy(m);
}

/* ---- one file: the family's name appears in no other source file ------------ */

static void test_only_this_file_names_the_family(void **state) {
    (void)state;
    kvc_test_assert_only_file_naming(FAMILY_NAME, "extend_family.c");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime_reads_the_family),
        cmocka_unit_test(test_plan_matches_runtime),
        cmocka_unit_test(test_runner_runs_the_family),
        cmocka_unit_test(test_only_this_file_names_the_family),
    };
    return cmocka_run_group_tests(tests, register_family, NULL);
}
