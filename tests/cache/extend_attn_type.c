/* The attention-type contract: a type beyond the built-in ones, defined in
 * this file alone and registered with one call, with no other file of the
 * library changed, works through the manager (tables, releases, invariants,
 * prefix caching) and the step metadata. The type is a test-only variant of
 * the built-in ChunkedLocal, with its chunk fixed at CHUNK positions in code
 * and a paged (not fixed-size) pool: a query sees only the keys of its own
 * chunk, so the blocks of finished chunks are released. */
#include "kvc_test_util.h"

#include "base/internal.h"
#include "cache/manager_type.h"

#define CHUNK     8
#define TYPE_NAME "TestChunk8Paged"

/* Once `computed` tokens are cached, the next query starts a chunk at
 * (computed / CHUNK) * CHUNK: everything before it is no longer needed. */
static int64_t chunked_skipped_tokens(const kvc_single_manager *m, int64_t computed) {
    (void)m;
    return computed / CHUNK * CHUNK;
}

static int64_t chunked_worst_blocks(const kvc_cache_group *g, int64_t positions) {
    return kvci_min64(kvci_cdiv(positions, g->block_size), kvci_cdiv(CHUNK, g->block_size) + 1);
}

/* Only the rules that differ from the defaults are given. */
static kvc_manager_type chunked_local_type = {
    .name = TYPE_NAME,
    .fixed_size = false,
    .reserves_decode = true,
    .state_hits = false,
    .null_prefix = true,
    .validate_entry = kvci_validate_attention_entry,
    .num_skipped_tokens = chunked_skipped_tokens,
    .blocks_needed = kvci_positions_blocks_needed,
    .worst_blocks = chunked_worst_blocks,
    .hit_length = kvci_windowed_hit_length,
};

static kvc_attn_type chunked;

static kvc_manager *chunked_manager(kvc_test_model *model, bool caching) {
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    e.attn_type = chunked;
    kvc_test_model_init(model, &e, 1);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 64;
    p.prefix_caching = caching;
    return kvc_test_manager_with(model, (const char *[]){TYPE_NAME}, (const int64_t[]){12}, 1, &p);
}

#define ALLOC(m, rid, computed, n)                                                                                     \
    kvc_manager_allocate_slots(                                                                                        \
        (m), &(kvc_slot_request){.request_id = (rid), .computed_tokens = (computed), .num_new_tokens = (n)})

static void test_chunks_release_their_blocks(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = chunked_manager(&model, false);
    assert_int_equal(kvc_manager_key_type(m, 0), chunked);
    assert_string_equal(kvc_attn_type_name(chunked), TYPE_NAME);
    assert_int_equal(kvc_manager_step_width(m, 0, false), 16);
    assert_true(kvc_manager_has_slot_mapping(m, 0));
    assert_false(kvc_manager_key_is_state(m, 0));
    assert_int_equal(kvc_manager_worst_blocks(m, 0, 64), 3);
    assert_int_equal(kvc_manager_skipped_tokens(m, 0, 13), 8);
    assert_int_equal(ALLOC(m, 1, 0, 10), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(1, 2, 3));
    /* Decoding position 10 (chunk 8..15): the first chunk's blocks go. */
    assert_int_equal(ALLOC(m, 1, 10, 1), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(0, 0, 3));
    kvc_test_assert_queue(m, 0, KVC_IDS(4, 5, 6, 7, 8, 9, 10, 11, 2, 1));
    assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
    for (int64_t c = 11; c < 17; c++) assert_int_equal(ALLOC(m, 1, c, 1), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(0, 0, 0, 0, 5)); /* position 16 starts chunk 16..23 */
    assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);

    /* The step metadata of the batch layer: width, table and slot mapping. */
    kvc_step_buffers *buf = NULL;
    assert_int_equal(kvc_step_buffers_create(m, 4, 16, &buf), KVC_OK);
    kvc_step_metadata md;
    kvc_step_request row = {.request_id = 1, .computed_tokens = 16, .num_new_tokens = 1};
    assert_int_equal(kvc_step_metadata_build(buf, &row, 1, false, &md), KVC_OK);
    const kvc_step_key *key = kvc_step_metadata_key(&md, TYPE_NAME);
    assert_non_null(key);
    assert_int_equal(key->width, 16);
    assert_int_equal(key->block_table[4], 5);
    assert_non_null(key->slot_mapping);
    assert_int_equal(key->slot_mapping[0], 5 * 4 + 0);
    kvc_step_buffers_destroy(buf);
    assert_int_equal(kvc_manager_free(m, 1), KVC_OK);
    assert_int_equal(kvc_manager_num_free(m, 0), 11);
    kvc_manager_destroy(m);
}

/* Prefix caching with the windowed hit rule: a hit of L needs only the
 * blocks of L's chunk. */
static void test_chunked_prefix_hit(void **state) {
    (void)state;
    kvc_test_model model;
    kvc_manager *m = chunked_manager(&model, true);
    int32_t tokens[24];
    for (int i = 0; i < 24; i++) tokens[i] = 7 * i + 1;
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = 20};
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 20, .prompt = &prompt}),
        KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(m, 1, tokens, 20), KVC_OK);
    kvc_prompt longer = {.tokens = tokens, .n_tokens = 24};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &longer, &hit), KVC_OK);
    assert_int_equal(hit.n_tokens, 20); /* chunk 16..23: block 4 (16..19) is enough */
    assert_int_equal(hit.n_entries[0], 5);
    assert_int_equal(hit.n_cached[0], 1);
    assert_int_equal(
        kvc_manager_allocate_slots(
            m, &(kvc_slot_request){.request_id = 2, .computed_tokens = 20, .num_new_tokens = 4, .prompt = &longer}),
        KVC_OK);
    kvc_test_assert_table(m, 2, 0, KVC_IDS(0, 0, 0, 0, 5, 6));
    assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
    kvc_manager_destroy(m);
}

/* One file: the type's name appears in no other source file. */
static void test_only_this_file_names_the_type(void **state) {
    (void)state;
    kvc_test_assert_only_file_naming(TYPE_NAME, "extend_attn_type.c");
}

int main(void) {
    /* The one registration. */
    if (kvci_manager_type_register(&chunked_local_type, &chunked) != KVC_OK) {
        fprintf(stderr, "%s\n", kvc_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_release_their_blocks),
        cmocka_unit_test(test_chunked_prefix_hit),
        cmocka_unit_test(test_only_this_file_names_the_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
