/* Test helpers: small cache descriptions and table assertions. */
#ifndef KVC_TEST_UTIL_H
#define KVC_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kvcache/kvcache.h"

/* A one-layer-per-entry description built in place (entries live in the struct). */
#define KVC_TEST_MAX_LAYERS 8
typedef struct kvc_test_model {
    kvc_cache_entry entries[KVC_TEST_MAX_LAYERS];
    kvc_layer_cache_info layers[KVC_TEST_MAX_LAYERS];
    kvc_model_cache_info ci;
} kvc_test_model;

/* Attention entry (FullAttention, SlidingWindow with window w, or ChunkedLocal with chunk w). */
kvc_cache_entry kvc_test_attention_entry(const char *name, kvc_attn_type type, int64_t block_size, int64_t window);
/* Mamba state entry of shape [4, 8], f32. */
kvc_cache_entry kvc_test_mamba_entry(const char *name, int64_t next_n);
/* Puts entries[i] alone in layer i and points ci at them. */
void kvc_test_model_init(kvc_test_model *m, const kvc_cache_entry *entries, int32_t n);
/* Manager over m with explicit pool sizes per key. */
kvc_manager *kvc_test_manager(kvc_test_model *m, const char *const *keys, const int64_t *counts, int32_t n_keys,
                              int64_t max_model_len);
/* The same with explicit manager parameters (prefix caching, ...). */
kvc_manager *kvc_test_manager_with(kvc_test_model *m, const char *const *keys, const int64_t *counts, int32_t n_keys,
                                   const kvc_manager_params *p);
/* The same with one pool of num_blocks blocks shared by the n_keys keys (pool_id 1). */
kvc_manager *kvc_test_manager_shared(kvc_test_model *m, const char *const *keys, int64_t num_blocks, int32_t n_keys,
                                     const kvc_manager_params *p);

/* The logits lg [T, V] of one prompt ids[0..T) prefilled as one row by kvc_model_forward (a fresh
 * workspace each call); fails the test on any error. */
void kvc_test_prompt_logits(const kvc_model *m, const int32_t *ids, int64_t T, float *lg);
/* The same through a workspace of max_kv_len (>= T) positions (longrope picks its factors by it). */
void kvc_test_prompt_logits_kv(const kvc_model *m, const int32_t *ids, int64_t T, int64_t max_kv_len, float *lg);
/* The same returning kvc_model_forward's (or the workspace's) status instead of failing on it. */
kvc_status kvc_test_prompt_forward(const kvc_model *m, const int32_t *ids, int64_t T, int64_t max_kv_len, float *lg);

/* Asserts the request's table for key_index equals expected[0..n). */
void kvc_test_assert_table(const kvc_manager *m, int64_t rid, int32_t key_index, const int32_t *expected, int64_t n);
/* Asserts the free queue of key_index equals expected[0..n) (head first). */
void kvc_test_assert_queue(const kvc_manager *m, int32_t key_index, const int32_t *expected, int64_t n);
/* Prefills tokens[0..n) as request rid in one step, reports them computed
 * (prefix caching indexes its blocks) and frees it. */
void kvc_test_compute_and_free(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n);

/* Whole file as a NUL-terminated string (fails the test if unreadable); free() it. */
char *kvc_test_read_text(const char *path);
/* "$KVC_DATA_DIR/oracle/<family>" (fails the test if KVC_DATA_DIR is unset). */
void kvc_test_oracle_dir(const char *family, char *out, size_t cap);
/* Adds n requests to e (ids 0..n-1, request i the next lens[i] of ids, nt new tokens each), steps it until
 * every one has finished (failing the test after max_steps steps or on any error) and reads their tokens into
 * out [n, nt]. */
void kvc_test_engine_generate(kvc_engine *e, const int32_t *ids, const int64_t *lens, int64_t n, int64_t nt,
                              int max_steps, int32_t *out);

/* KVC_TEST_ASAN: this build runs under AddressSanitizer. */
#if defined(__SANITIZE_ADDRESS__)
#define KVC_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVC_TEST_ASAN 1
#endif
#endif
/* Heap bytes in use (allocated and not freed, untouched zeroed pages included). */
size_t kvc_test_heap_bytes(void);

/* Whether p[0..n) is all zero bytes. */
bool kvc_test_zero_bytes(const void *p, size_t n);
/* Whether this kernel has transparent huge pages (then madvise(MADV_HUGEPAGE) succeeds). */
bool kvc_test_kernel_has_thp(void);
/* The one-file rule of the test-only extensions (extend_*.c): fails the test when a file under the
 * source tree's src, include, tests, tools, cli, bench or python other than one named `self` holds
 * needle (each file named that differs is printed). Needs KVC_DATA_DIR (ctest sets it). */
void kvc_test_assert_only_file_naming(const char *needle, const char *self);

/* Runs `kvcache ARGS...` in this process: the command of args[0] from the
 * command table with allocation fail_at failing (0: none; kvci_alloc_fail_at),
 * stdout and stderr captured together in a temporary file. The command gets a
 * fresh argv (commands may rewrite theirs); argc <= 15, args[argc] NULL. */
typedef struct kvc_test_command_result {
    int rc;         /* the exit status (99: no such command) */
    uint64_t calls; /* allocations the run asked for (up to the failed one) */
    char *out;      /* stdout and stderr together; free() it */
} kvc_test_command_result;
kvc_test_command_result kvc_test_run_command(char *const *args, int argc, uint64_t fail_at);

#define KVC_IDS(...) ((const int32_t[]){__VA_ARGS__}), (sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

#endif
