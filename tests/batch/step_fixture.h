/* A real kvc_manager for the step-metadata tests: one layer per cache entry,
 * every entry under its own manager key, pools sized by explicit counts. */
#ifndef KVC_TESTS_BATCH_STEP_FIXTURE_H
#define KVC_TESTS_BATCH_STEP_FIXTURE_H

#include <stdio.h>

#include "batch_assert.h"

#define FIX_MAX_KEYS 8

typedef struct step_fixture {
    kvc_cache_entry entries[FIX_MAX_KEYS];
    kvc_layer_cache_info layers[FIX_MAX_KEYS];
    kvc_model_cache_info ci;
    kvc_block_plan plan;
    kvc_manager *m;
    kvc_step_buffers *buf;
} step_fixture;

static inline kvc_cache_entry fix_attention(const char *key, kvc_attn_type type, int64_t block_size) {
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "k_cache");
    snprintf(e.manager_key, sizeof e.manager_key, "%s", key);
    e.attn_type = type;
    e.num_head = 2;
    e.n_dims = 1;
    e.dim[0] = 8;
    e.block_size = block_size;
    return e;
}

static inline kvc_cache_entry fix_full(const char *key, int64_t block_size) {
    return fix_attention(key, KVC_ATTN_FULL, block_size);
}

static inline kvc_cache_entry fix_window(const char *key, int64_t block_size, int64_t window) {
    kvc_cache_entry e = fix_attention(key, KVC_ATTN_SLIDING_WINDOW, block_size);
    e.sliding_window = window;
    return e;
}

static inline kvc_cache_entry fix_compressed(const char *key, int64_t block_size, int64_t ratio) {
    kvc_cache_entry e = fix_attention(key, KVC_ATTN_FULL, block_size);
    e.compress_ratio = ratio;
    return e;
}

static inline kvc_cache_entry fix_mamba(const char *key, int64_t next_n) {
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "ssm_state");
    snprintf(e.manager_key, sizeof e.manager_key, "%s", key);
    e.attn_type = KVC_ATTN_MAMBA;
    e.is_state = true;
    e.n_shape = 1;
    e.shape[0] = 4;
    e.block_size = 1;
    e.next_n = next_n;
    return e;
}

/* Builds the manager (pool of counts[i] blocks for entry i) and step buffers
 * of max_rows x max_tokens. f must stay where it is until fixture_destroy. */
static inline void fixture_create(step_fixture *f, const kvc_cache_entry *entries, const int64_t *counts, int32_t n,
                                  int64_t max_model_len, int64_t max_rows, int64_t max_tokens) {
    assert_true(n >= 1 && n <= FIX_MAX_KEYS);
    memset(f, 0, sizeof *f);
    const char *keys[FIX_MAX_KEYS];
    for (int32_t i = 0; i < n; i++) {
        f->entries[i] = entries[i];
        f->layers[i] = (kvc_layer_cache_info){.layer_idx = i, .n_caches = 1, .caches = &f->entries[i]};
        keys[i] = f->entries[i].manager_key;
    }
    f->ci = (kvc_model_cache_info){.num_layers = n, .n_layer_infos = n, .layer_infos = f->layers};
    if (kvc_block_plan_from_counts(&f->ci, keys, counts, n, &f->plan) != KVC_OK) fail_msg("plan: %s", kvc_last_error());
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = max_model_len;
    if (kvc_manager_create(&f->ci, &f->plan, &p, &f->m) != KVC_OK) fail_msg("manager: %s", kvc_last_error());
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
static inline void fixture_allocate(step_fixture *f, int64_t rid, int64_t computed, int64_t num_new, int64_t lookahead) {
    kvc_status st = kvc_manager_allocate_slots(f->m, rid, computed, num_new, lookahead, 0, KVC_ALL_KEYS);
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
