/* The storage poison debug option: a block taken for new data is filled with
 * NaN (float caches) or -128 (int8), a block reused by a prefix hit keeps its
 * content, and the null block is never touched. */
#include <math.h>

#include "kvc_test_util.h"

#include "kvcache/half.h"

static void ignore_tensor(void *user, const kvc_tensor *tensor) {
    (void)user;
    (void)tensor;
}

/* A one-entry-per-layer model whose entries accept their tensors. */
static void init_model(kvc_test_model *model, kvc_cache_entry *e, int32_t n) {
    for (int32_t i = 0; i < n; i++) e[i].tensor_setter = ignore_tensor;
    kvc_test_model_init(model, e, n);
}

static void test_taken_blocks_are_poisoned_hits_are_not(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_cache_entry e[2] = {kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0),
                            kvc_test_attention_entry("q_cache", KVC_ATTN_FULL, 4, 0)};
    e[0].dtype = KVC_DTYPE_F32;
    e[1].dtype = KVC_DTYPE_I8;
    init_model(&model, e, 2);
    kvc_block_plan plan;
    assert_int_equal(
        kvc_block_plan_from_counts(&model.ci, (const char *[]){"FullAttention"}, (const int64_t[]){6}, 1, &plan),
        KVC_OK);
    kvc_cache_storage *storage = NULL;
    const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    assert_int_equal(kvc_cache_storage_allocate(&model.ci, &plan, &sp, &storage), KVC_OK);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 32;
    p.prefix_caching = true;
    p.poison_new_blocks = true;
    kvc_manager *m = NULL;
    assert_int_equal(kvc_manager_create(&model.ci, &plan, &p, &m), KVC_OK);
    float *k = model.entries[0].tensor.data;
    int8_t *q = model.entries[1].tensor.data;
    const int64_t per_block = 4 * 2 * 8; /* block_size x heads x dim */
    int32_t tokens[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = 9};
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 9, .prompt = &prompt}),
        KVC_OK);
    for (int64_t i = 0; i < per_block; i++) {
        assert_true(isnan(k[0 * per_block + i]) == 0); /* the null block */
        assert_true(isnan(k[1 * per_block + i]) && isnan(k[3 * per_block + i]));
        assert_int_equal(q[2 * per_block + i], -128);
        assert_false(isnan(k[4 * per_block + i])); /* not taken */
    }
    /* The step writes blocks 1..3; block 1 is then hit and keeps its data. */
    for (int64_t i = per_block; i < 4 * per_block; i++) k[i] = 1.0f;
    assert_int_equal(kvc_manager_cache_computed(m, 1, tokens, 9), KVC_OK);
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK); /* queue 3 4 5 2 1: uncached block 3 at the head */
    prompt.n_tokens = 6;
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 2, .computed_tokens = 4, .num_new_tokens = 2, .prompt = &prompt}),
        KVC_OK);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(1, 3));
    for (int64_t i = 0; i < per_block; i++) {
        assert_true(k[1 * per_block + i] == 1.0f);
        assert_true(isnan(k[3 * per_block + i]));  /* written before, taken again: poisoned anew */
        assert_true(k[2 * per_block + i] == 1.0f); /* freed, not taken again yet */
        assert_false(isnan(k[4 * per_block + i])); /* never taken */
    }
    kvc_manager_destroy(m);
    kvc_cache_storage_destroy(storage);
}

/* Each floating dtype's poison value reads as NaN. */
static void test_poison_values_are_nan(void **state) {
    (void)state;
    const kvc_dtype dtypes[] = {KVC_DTYPE_F16, KVC_DTYPE_BF16};
    for (size_t d = 0; d < 2; d++) {
        kvc_test_model model;
        kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
        e.dtype = dtypes[d];
        init_model(&model, &e, 1);
        kvc_block_plan plan;
        assert_int_equal(
            kvc_block_plan_from_counts(&model.ci, (const char *[]){"FullAttention"}, (const int64_t[]){3}, 1, &plan),
            KVC_OK);
        kvc_cache_storage *storage = NULL;
        const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
        assert_int_equal(kvc_cache_storage_allocate(&model.ci, &plan, &sp, &storage), KVC_OK);
        kvc_manager_params p = kvc_manager_default_params();
        p.max_model_len = 8;
        p.poison_new_blocks = true;
        kvc_manager *m = NULL;
        assert_int_equal(kvc_manager_create(&model.ci, &plan, &p, &m), KVC_OK);
        assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 4}),
                         KVC_OK);
        const uint16_t *bits = (const uint16_t *)model.entries[0].tensor.data + 4 * 2 * 8; /* block 1 */
        float v = dtypes[d] == KVC_DTYPE_F16 ? kvc_f16_to_f32(bits[0]) : kvc_bf16_to_f32(bits[0]);
        assert_true(isnan(v));
        kvc_manager_destroy(m);
        kvc_cache_storage_destroy(storage);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taken_blocks_are_poisoned_hits_are_not),
        cmocka_unit_test(test_poison_values_are_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
