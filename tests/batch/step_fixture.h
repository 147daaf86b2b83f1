/* A real kvc_manager for the step-metadata tests (built with the shared
 * helpers of tests/support): one layer per cache entry, every entry under
 * its own manager key, pools sized by explicit counts. */
#ifndef KVC_TESTS_BATCH_STEP_FIXTURE_H
#define KVC_TESTS_BATCH_STEP_FIXTURE_H

#include "batch_assert.h"
#include "kvc_test_util.h"

typedef struct step_fixture {
    kvc_test_model model;
    kvc_manager *m;
    kvc_step_buffers *buf;
} step_fixture;

/* Entries of the shared test helpers, each under its own manager key. */
static inline kvc_cache_entry fix_keyed(kvc_cache_entry e, const char *key) {
    snprintf(e.manager_key, sizeof e.manager_key, "%s", key);
    return e;
}

static inline kvc_cache_entry fix_full(const char *key, int64_t block_size) {
    return fix_keyed(kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, block_size, 0), key);
}

static inline kvc_cache_entry fix_window(const char *key, int64_t block_size, int64_t window) {
    return fix_keyed(kvc_test_attention_entry("k_cache", KVC_ATTN_SLIDING_WINDOW, block_size, window), key);
}

static inline kvc_cache_entry fix_compressed(const char *key, int64_t block_size, int64_t ratio) {
    kvc_cache_entry e = fix_full(key, block_size);
    e.compress_ratio = ratio;
    return e;
}

static inline kvc_cache_entry fix_mamba(const char *key, int64_t next_n) {
    return fix_keyed(kvc_test_mamba_entry("ssm_state", next_n), key);
}

/* Builds the manager (pool of counts[i] blocks for entry i) and step buffers
 * of max_rows x max_tokens. f must stay where it is until fixture_destroy. */
static inline void fixture_create(step_fixture *f, const kvc_cache_entry *entries, const int64_t *counts, int32_t n,
                                  int64_t max_model_len, int64_t max_rows, int64_t max_tokens) {
    memset(f, 0, sizeof *f);
    kvc_test_model_init(&f->model, entries, n);
    const char *keys[KVC_TEST_MAX_LAYERS];
    for (int32_t i = 0; i < n; i++) keys[i] = f->model.entries[i].manager_key;
    f->m = kvc_test_manager(&f->model, keys, counts, n, max_model_len);
    if (kvc_step_buffers_create(f->m, max_rows, max_tokens, &f->buf) != KVC_OK) {
        fail_msg("buffers: %s", kvc_last_error());
    }
}

static inline void fixture_destroy(step_fixture *f) {
    kvc_step_buffers_destroy(f->buf);
    kvc_manager_destroy(f->m);
    f->buf = NULL;
    f->m = NULL;
}

/* allocate_slots on every key, which must succeed without clamping. */
static inline void fixture_allocate(step_fixture *f, int64_t rid, int64_t computed, int64_t num_new,
                                    int64_t lookahead) {
    kvc_status st = kvc_manager_allocate_slots(f->m, &(kvc_slot_request){.request_id = rid,
                                                                         .computed_tokens = computed,
                                                                         .num_new_tokens = num_new,
                                                                         .lookahead_tokens = lookahead});
    if (st != KVC_OK) {
        fail_msg("allocate_slots(%lld, %lld, %lld, %lld): %s %s", (long long)rid, (long long)computed,
                 (long long)num_new, (long long)lookahead, kvc_status_str(st), kvc_last_error());
    }
}

static inline void fixture_build(step_fixture *f, const kvc_step_request *rows, int64_t n_rows, bool is_prefill,
                                 kvc_step_metadata *md) {
    kvc_status st = kvc_step_metadata_build(f->buf, rows, n_rows, is_prefill, md);
    if (st != KVC_OK) fail_msg("kvc_step_metadata_build: %s %s", kvc_status_str(st), kvc_last_error());
}

/* The key entry of a built step, which must exist. */
static inline const kvc_step_key *fixture_key(const kvc_step_metadata *md, const char *key) {
    const kvc_step_key *k = kvc_step_metadata_key(md, key);
    if (k == NULL) fail_msg("step has no key %s", key);
    return k;
}

#endif /* KVC_TESTS_BATCH_STEP_FIXTURE_H */
