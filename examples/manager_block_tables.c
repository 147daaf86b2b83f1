/* A cache manager driving the block tables of a small hybrid model: layer 0
 * attends to every earlier token (FullAttention), layer 1 to the last 8 only
 * (SlidingWindow), both with 4-token blocks.
 *
 *   1. describe the caches and plan the pools (room for 2 requests of up to
 *      32 tokens);
 *   2. admit two prompts (10 and 6 tokens) with kvc_manager_allocate_slots;
 *   3. decode 8 tokens each, one allocate_slots call per request and step,
 *      keeping a persistent block-table row per request and key up to date
 *      with kvc_manager_table_sync (the array a kernel reads, see
 *      paged_attention.c);
 *   4. free both requests: every block is back in its pool.
 *
 * Prints the tables after each step; uses only the core library
 * (libkvcache_core). Exit status 0 when every check holds. */
#include <stdio.h>
#include <string.h>

#include "kvcache/kvcache.h"

enum { N_REQ = 2, MAX_LEN = 32, BLOCK_SIZE = 4, WINDOW = 8, DECODE_STEPS = 8 };

static int check(kvc_status st, const char *what) {
    if (st >= 0) return 0;
    fprintf(stderr, "%s: %s: %s\n", what, kvc_status_str(st), kvc_last_error());
    return 1;
}

static kvc_cache_entry attention_entry(const char *name, kvc_attn_type type) {
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "%s", name);
    e.attn_type = type;
    e.num_head = 2;
    e.n_dims = 1;
    e.dim[0] = 64;
    e.dtype = KVC_DTYPE_BF16;
    e.block_size = BLOCK_SIZE;
    e.sliding_window = type == KVC_ATTN_SLIDING_WINDOW ? WINDOW : 0;
    return e;
}

static void print_row(const char *key, int64_t id, const int32_t *row, int64_t width) {
    printf("  %-13s request %lld: [", key, (long long)id);
    for (int64_t i = 0; i < width; i++) printf(i ? " %2d" : "%2d", row[i]);
    printf("]\n");
}

int main(void) {
    /* 1. one cache per layer; the manager groups them by attention type */
    kvc_cache_entry entries[2] = {attention_entry("k_cache", KVC_ATTN_FULL),
                                  attention_entry("k_cache", KVC_ATTN_SLIDING_WINDOW)};
    kvc_layer_cache_info layers[2] = {{.layer_idx = 0, .n_caches = 1, .caches = &entries[0]},
                                      {.layer_idx = 1, .n_caches = 1, .caches = &entries[1]}};
    kvc_model_cache_info ci = {.num_layers = 2, .n_layer_infos = 2, .layer_infos = layers};

    kvc_plan_params pp = kvc_plan_default_params();
    pp.mode = KVC_PLAN_OFFLINE;
    pp.max_len = MAX_LEN;
    pp.max_concurrency = N_REQ;
    kvc_block_plan plan;
    if (check(kvc_plan_blocks(&pp, &ci, &plan), "plan")) return 1;

    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = MAX_LEN;
    kvc_manager *m = NULL;
    if (check(kvc_manager_create(&ci, &plan, &mp, &m), "manager")) return 1;
    const int32_t n_keys = kvc_manager_n_keys(m);
    int64_t free_at_start[KVC_MAX_MANAGERS];
    for (int32_t k = 0; k < n_keys; k++) {
        free_at_start[k] = kvc_manager_num_free(m, k);
        printf("key %s: %lld blocks of %lld tokens (block 0 is the null block)\n", kvc_manager_key(m, k),
               (long long)kvc_manager_num_blocks(m, k), (long long)kvc_manager_block_size(m, k));
    }

    /* persistent tables, one row per request and key, as a kernel reads them */
    const int64_t width = MAX_LEN / BLOCK_SIZE;
    int32_t rows[KVC_MAX_MANAGERS][N_REQ][MAX_LEN / BLOCK_SIZE];
    kvc_table_state states[KVC_MAX_MANAGERS][N_REQ];
    memset(states, 0, sizeof states); /* zeroed: the rows' contents are unknown */

    const int64_t ids[N_REQ] = {100, 200};
    int64_t cached[N_REQ] = {0, 0};
    const int64_t prompt[N_REQ] = {10, 6};
    int failed = 0;
    for (int step = 0; step <= DECODE_STEPS && !failed; step++) {
        /* 2-3. step 0 admits the prompts, every later step decodes one token */
        for (int r = 0; r < N_REQ && !failed; r++) {
            const int64_t new_tokens = step == 0 ? prompt[r] : 1;
            kvc_slot_request req = {.request_id = ids[r], .computed_tokens = cached[r], .num_new_tokens = new_tokens};
            kvc_status st = kvc_manager_allocate_slots(m, &req);
            if (st == KVC_NO_SPACE) {
                fprintf(stderr, "request %lld: no space at step %d\n", (long long)ids[r], step);
                failed = 1;
            }
            failed = failed || check(st, "allocate_slots");
            cached[r] += new_tokens;
        }
        printf("step %d (%s): request %lld holds %lld tokens, request %lld holds %lld\n", step,
               step == 0 ? "prefill" : "decode", (long long)ids[0], (long long)cached[0], (long long)ids[1],
               (long long)cached[1]);
        for (int32_t k = 0; k < n_keys && !failed; k++)
            for (int r = 0; r < N_REQ && !failed; r++) {
                failed = check(kvc_manager_table_sync(m, ids[r], k, rows[k][r], width, &states[k][r]), "table_sync");
                if (failed) break;
                print_row(kvc_manager_key(m, k), ids[r], rows[k][r], width);
                /* a full-attention row holds one real block per 4 tokens; a
                 * sliding-window row has released the blocks that only hold
                 * tokens older than the window (they read as null, 0) */
                int64_t real = 0;
                for (int64_t i = 0; i < width; i++) real += rows[k][r][i] != KVC_NULL_BLOCK;
                const int64_t blocks = (cached[r] + BLOCK_SIZE - 1) / BLOCK_SIZE;
                const bool full = kvc_manager_key_type(m, k) == KVC_ATTN_FULL;
                if ((full && real != blocks) || (!full && (real > blocks || real > WINDOW / BLOCK_SIZE + 1))) {
                    fprintf(stderr, "key %s request %lld: %lld real blocks for %lld tokens\n", kvc_manager_key(m, k),
                            (long long)ids[r], (long long)real, (long long)cached[r]);
                    failed = 1;
                }
            }
        failed = failed || check(kvc_manager_check_invariants(m), "invariants");
    }

    /* 4. freeing returns every block */
    for (int r = 0; r < N_REQ; r++) failed = failed || check(kvc_manager_free(m, ids[r]), "free");
    for (int32_t k = 0; k < n_keys && !failed; k++)
        if (kvc_manager_num_free(m, k) != free_at_start[k]) {
            fprintf(stderr, "key %s: %lld free blocks after freeing, %lld before\n", kvc_manager_key(m, k),
                    (long long)kvc_manager_num_free(m, k), (long long)free_at_start[k]);
            failed = 1;
        }
    char usage[256];
    if (!failed && kvc_manager_format_usage(m, usage, sizeof usage) == KVC_OK) printf("after free: %s\n", usage);
    kvc_manager_destroy(m);
    return failed;
}
