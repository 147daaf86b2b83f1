/* Cache description validation (KM 2.5, P-INIT-2, P-INIT-6) and merge (P-INIT-1). */
#include "kvc_test_util.h"

typedef void (*mutate_fn)(kvc_test_model *m);

static kvc_status validate_mutated(mutate_fn mutate, int64_t engine_next_n) {
    kvc_cache_entry entries[3] = {kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 16, 0),
                                  kvc_test_attention_entry("sw_cache", KVC_ATTN_SLIDING_WINDOW, 16, 128),
                                  kvc_test_mamba_entry("state", 1)};
    kvc_test_model m;
    kvc_test_model_init(&m, entries, 3);
    mutate(&m);
    return kvc_validate_cache_info(&m.ci, engine_next_n);
}

static void no_change(kvc_test_model *m) { (void)m; }
static void layer_count(kvc_test_model *m) { m->ci.num_layers = 4; }
static void empty_layer(kvc_test_model *m) { m->layers[1].n_caches = 0; } /* Nemotron-H's MLP layers */
static void negative_caches(kvc_test_model *m) { m->layers[1].n_caches = -1; }
static void null_caches(kvc_test_model *m) { m->layers[1].caches = NULL; }
static void zero_block_size(kvc_test_model *m) { m->entries[0].block_size = 0; }
static void bad_type(kvc_test_model *m) { m->entries[0].attn_type = 7; }
static void bad_layout(kvc_test_model *m) { m->entries[0].layout = 5; }
static void mamba_not_state(kvc_test_model *m) { m->entries[2].is_state = false; }
static void state_not_mamba(kvc_test_model *m) { m->entries[0].is_state = true; }
static void zero_heads(kvc_test_model *m) { m->entries[0].num_head = 0; }
static void zero_dim(kvc_test_model *m) { m->entries[1].dim[0] = -3; }
static void no_dims(kvc_test_model *m) { m->entries[0].n_dims = 0; }
static void bad_allocator(kvc_test_model *m) { m->entries[0].allocator = 9; }
static void bad_dtype(kvc_test_model *m) { m->entries[0].dtype = (kvc_dtype)40; }
static void ratio_not_dividing(kvc_test_model *m) { m->entries[0].compress_ratio = 3; }
static void ratio_on_window(kvc_test_model *m) { m->entries[1].compress_ratio = 2; }
static void missing_window(kvc_test_model *m) { m->entries[1].sliding_window = 0; }
static void window_on_full(kvc_test_model *m) { m->entries[0].sliding_window = 8; }
static void mamba_block_size(kvc_test_model *m) { m->entries[2].block_size = 2; }
static void mamba_shape(kvc_test_model *m) { m->entries[2].shape[1] = 0; }
static void mamba_swapped(kvc_test_model *m) { m->entries[2].allocator = KVC_ALLOC_SWAPPED; }
static void mixed_types_one_key(kvc_test_model *m) {
    snprintf(m->entries[1].manager_key, KVC_NAME_MAX, "FullAttention");
}
static void mixed_block_sizes(kvc_test_model *m) {
    snprintf(m->entries[1].manager_key, KVC_NAME_MAX, "sw");
    m->entries[0] = kvc_test_attention_entry("k2", KVC_ATTN_SLIDING_WINDOW, 32, 128);
    snprintf(m->entries[0].manager_key, KVC_NAME_MAX, "sw");
}
static void mixed_windows(kvc_test_model *m) {
    m->entries[0] = kvc_test_attention_entry("k2", KVC_ATTN_SLIDING_WINDOW, 16, 64);
}
static void mixed_ratios(kvc_test_model *m) {
    m->entries[1] = kvc_test_attention_entry("v_cache", KVC_ATTN_FULL, 16, 0);
    m->entries[1].compress_ratio = 4;
}
static void mixed_next_n(kvc_test_model *m) { m->entries[0] = kvc_test_mamba_entry("state2", 2); }
static void unnamed(kvc_test_model *m) { m->entries[0].name[0] = '\0'; }
/* needs_block = false entries are exempt from the per-entry rules. */
static void unmanaged_garbage(kvc_test_model *m) {
    m->entries[0].needs_block = false;
    m->entries[0].block_size = 0;
    m->entries[0].attn_type = 99;
}

static void test_each_rule(void **state) {
    (void)state;
    const struct {
        mutate_fn fn;
        kvc_status expected;
        const char *message_part;
    } cases[] = {
        {no_change, KVC_OK, NULL},
        {unmanaged_garbage, KVC_OK, NULL},
        {layer_count, KVC_EINVAL, "num_layers 4"},
        {empty_layer, KVC_OK, NULL},
        {negative_caches, KVC_EINVAL, "layer 1: n_caches -1 is negative"},
        {null_caches, KVC_EINVAL, "layer 1: n_caches 1 is negative or its caches are NULL"},
        {zero_block_size, KVC_EINVAL, "layer 0, cache k_cache: block_size 0"},
        {bad_type, KVC_EINVAL, "attn_type 7"},
        {bad_layout, KVC_EINVAL, "cache_layout 5"},
        {mamba_not_state, KVC_EINVAL, "layer 2, cache state: attn_type Mamba needs a state entry"},
        {state_not_mamba, KVC_EINVAL, "state entry must have attn_type Mamba"},
        {zero_heads, KVC_EINVAL, "num_head 0"},
        {zero_dim, KVC_EINVAL, "layer 1, cache sw_cache: dim[0] -3"},
        {no_dims, KVC_EINVAL, "dim must have"},
        {bad_allocator, KVC_EINVAL, "allocator 9"},
        {bad_dtype, KVC_EINVAL, "dtype 40"},
        {ratio_not_dividing, KVC_EINVAL, "compress_ratio 3"},
        {ratio_on_window, KVC_EINVAL, "only allowed for FullAttention"},
        {missing_window, KVC_EINVAL, "sliding_window 0"},
        {window_on_full, KVC_EINVAL, "sliding_window 8 is set on a FullAttention"},
        {mamba_block_size, KVC_EINVAL, "block_size 2 of a Mamba entry"},
        {mamba_shape, KVC_EINVAL, "shape[1] 0"},
        {mamba_swapped, KVC_EINVAL, "HBM"},
        {mixed_types_one_key, KVC_EINVAL, "attn_type SlidingWindow differs from FullAttention"},
        {mixed_block_sizes, KVC_EINVAL, "block_size 16 differs from 32"},
        {mixed_windows, KVC_EINVAL, "sliding_window 128 differs from 64"},
        {mixed_ratios, KVC_EINVAL, "compress_ratio 4 differs from 1"},
        {mixed_next_n, KVC_EINVAL, "next_n 1 differs from 2"},
        {unnamed, KVC_EINVAL, "layer 0, cache 0: name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvc_status st = validate_mutated(cases[i].fn, -1);
        if (st != cases[i].expected) fail_msg("case %zu: status %s (%s)", i, kvc_status_str(st), kvc_last_error());
        if (cases[i].message_part != NULL && strstr(kvc_last_error(), cases[i].message_part) == NULL)
            fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, kvc_last_error(), cases[i].message_part);
    }
    assert_int_equal(validate_mutated(no_change, 1), KVC_OK);
    assert_int_equal(validate_mutated(no_change, 0), KVC_EINVAL); /* Mamba next_n 1 vs engine 0 */
    assert_non_null(strstr(kvc_last_error(), "engine's next_n 0"));
    assert_int_equal(kvc_validate_cache_info(NULL, -1), KVC_EINVAL);
}

/* The canonical configurations are accepted and grouped in first-seen order. */
static void test_canonical_groups(void **state) {
    (void)state;
    kvc_cache_entry nope = kvc_cache_entry_default(), rope = kvc_cache_entry_default();
    snprintf(nope.name, sizeof nope.name, "nope_cache");
    snprintf(rope.name, sizeof rope.name, "rope_cache");
    nope.num_head = rope.num_head = 1;
    nope.n_dims = rope.n_dims = 1;
    nope.dim[0] = 512;
    rope.dim[0] = 64;
    nope.block_size = rope.block_size = 128;
    kvc_cache_entry entries[4] = {nope, rope, kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 128),
                                  kvc_test_mamba_entry("state", 0)};
    kvc_test_model m;
    kvc_test_model_init(&m, entries, 4);
    m.ci.is_mla_backend = true;
    kvc_cache_groups groups;
    assert_int_equal(kvc_cache_groups_build(&m.ci, &groups), KVC_OK);
    assert_int_equal(groups.n_groups, 3);
    assert_string_equal(groups.groups[0].key, "FullAttention");
    assert_int_equal(groups.groups[0].n_entries, 2);
    assert_int_equal(groups.groups[0].block_size, 128);
    assert_string_equal(groups.groups[1].key, "SlidingWindow");
    assert_int_equal(groups.groups[1].sliding_window, 128);
    assert_string_equal(groups.groups[2].key, "Mamba");
    assert_int_equal(kvc_cache_entry_dim_numel(&entries[3]), 32);
}

static void test_merge(void **state) {
    (void)state;
    kvc_cache_entry main_entries[2] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0),
                                       kvc_test_attention_entry("v", KVC_ATTN_FULL, 16, 0)};
    kvc_cache_entry draft_entry = kvc_test_attention_entry("draft_k", KVC_ATTN_FULL, 16, 0);
    kvc_test_model main_m, draft_m;
    kvc_test_model_init(&main_m, main_entries, 2);
    kvc_test_model_init(&draft_m, &draft_entry, 1);
    kvc_model_cache_info *merged = NULL, *again = NULL;
    assert_int_equal(kvc_model_cache_info_merge(&main_m.ci, &draft_m.ci, &merged), KVC_OK);
    assert_int_equal(merged->num_layers, 3);
    assert_int_equal(merged->layer_infos[2].layer_idx, 2);
    assert_string_equal(merged->layer_infos[2].caches[0].name, "draft_k");
    assert_int_equal(draft_m.layers[0].layer_idx, 0); /* input untouched */
    assert_int_equal(kvc_validate_cache_info(merged, -1), KVC_OK);
    assert_int_equal(kvc_model_cache_info_merge(&main_m.ci, &draft_m.ci, &again), KVC_OK);
    for (int32_t l = 0; l < 3; l++) assert_int_equal(again->layer_infos[l].layer_idx, merged->layer_infos[l].layer_idx);
    kvc_model_cache_info_destroy(merged);
    kvc_model_cache_info_destroy(again);
    draft_m.ci.is_mla_backend = true;
    assert_int_equal(kvc_model_cache_info_merge(&main_m.ci, &draft_m.ci, &merged), KVC_EINVAL);
    assert_null(merged);
    assert_non_null(strstr(kvc_last_error(), "is_mla_backend"));
}

static void test_names(void **state) {
    (void)state;
    kvc_attn_type t;
    assert_int_equal(kvc_attn_type_parse("SlidingWindow", &t), KVC_OK);
    assert_int_equal(t, KVC_ATTN_SLIDING_WINDOW);
    assert_int_equal(kvc_attn_type_parse("Linear", &t), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "\"Linear\""));
    assert_string_equal(kvc_attn_type_name(KVC_ATTN_MAMBA), "Mamba");
    kvc_dtype d;
    assert_int_equal(kvc_dtype_parse("bf16", &d), KVC_OK);
    assert_int_equal(kvc_dtype_size(d), 2);
    assert_int_equal(kvc_dtype_parse("fp8", &d), KVC_OK);
    assert_int_equal(d, KVC_DTYPE_F8E4M3);
    assert_int_equal(kvc_dtype_parse("int8", &d), KVC_OK);
    assert_int_equal(d, KVC_DTYPE_I8);
    assert_int_equal(kvc_dtype_parse("fp4", &d), KVC_EINVAL);
    assert_string_equal(kvc_status_str(KVC_NO_SPACE), "KVC_NO_SPACE");
}

/* The derived values of a caller's entry that validation has not seen: dims counted past
 * KVC_MAX_DIMS (read past dim[]), products past int64 (signed overflow), negative extents and a
 * manager_key without its NUL (its reader ran past the array) give -1 and "". */
static void test_entry_values_of_bad_entries(void **state) {
    (void)state;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 16, 0);
    e.n_dims = 2, e.dim[0] = 3, e.dim[1] = 5;
    assert_int_equal(kvc_cache_entry_dim_numel(&e), 15);
    e.n_dims = KVC_MAX_DIMS + 1;
    assert_int_equal(kvc_cache_entry_dim_numel(&e), -1);
    e.n_dims = -1;
    assert_int_equal(kvc_cache_entry_dim_numel(&e), -1);
    e.n_dims = 3, e.dim[0] = e.dim[1] = e.dim[2] = INT64_MAX;
    assert_int_equal(kvc_cache_entry_dim_numel(&e), -1);
    e.n_dims = 2, e.dim[0] = -3, e.dim[1] = -5;
    assert_int_equal(kvc_cache_entry_dim_numel(&e), -1);
    kvc_cache_entry m = kvc_test_mamba_entry("state", 1);
    m.n_shape = KVC_MAX_DIMS + 1;
    assert_int_equal(kvc_cache_entry_dim_numel(&m), -1);
    assert_int_equal(kvc_cache_entry_dim_numel(NULL), 0);
    assert_string_equal(kvc_cache_entry_group_key(&e), "FullAttention");
    memset(e.manager_key, 'k', sizeof e.manager_key);
    assert_string_equal(kvc_cache_entry_group_key(&e), "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_rule),
        cmocka_unit_test(test_canonical_groups),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_entry_values_of_bad_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
