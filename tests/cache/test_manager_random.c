/* Model-based randomised test (VER 8): long seeded sequences of
 * allocate/free over mixed Full, SlidingWindow, ChunkedLocal and Mamba managers, each call
 * checked against a shadow model that knows only the spec's formulas (table
 * lengths, backed blocks, free counts, admission) and never block ids, plus
 * the invariants of VER 5 and the release chain. A shared-pool run has every
 * key draw from one pool (admission counts the blocks of all keys together). */
#include "kvc_test_util.h"

#include "shadow_rng.h"

#define MAX_REQ  24
#define MAX_KEYS 3

typedef struct shadow_table {
    bool present;
    int64_t len;    /* logical table length */
    int64_t n_null; /* null prefix (sliding window, chunked local) */
} shadow_table;

typedef struct shadow {
    int32_t n_keys;
    kvc_attn_type type[MAX_KEYS];
    int64_t bs[MAX_KEYS], window[MAX_KEYS] /* W or C */, next_n[MAX_KEYS], num_blocks[MAX_KEYS];
    int64_t free_blocks[MAX_KEYS]; /* by pool */
    int32_t pool[MAX_KEYS];        /* the pool of each key: itself, or 0 when they share one */
    int64_t max_model_len;
    shadow_table t[MAX_REQ][MAX_KEYS];
} shadow;

static bool spans(kvc_attn_type t) { return t == KVC_ATTN_SLIDING_WINDOW || t == KVC_ATTN_CHUNKED_LOCAL; }

/* Positions no later query of key k reads once `computed` are cached: the
 * window's start (c - W + 1), or the chunk start of position c. */
static int64_t skipped_of(const shadow *s, int32_t k, int64_t computed) {
    if (s->type[k] == KVC_ATTN_CHUNKED_LOCAL) return computed / s->window[k] * s->window[k];
    return imax(0, computed - s->window[k] + 1);
}

static int64_t entries_of(const shadow *s, int32_t k) {
    int64_t n = 0;
    for (int r = 0; r < MAX_REQ; r++) n += s->t[r][k].present;
    return n;
}

/* Predicts one allocate_slots; applies the window releases of phase 1 (every
 * selected key first) to the shadow and, when every pool has the blocks its
 * keys take, phase 2. Returns the expected status. */
static kvc_status shadow_allocate(shadow *s, int r, int64_t computed, int64_t num_new, int64_t lookahead,
                                  int64_t reserved, uint64_t mask) {
    int64_t wanted = computed + num_new + lookahead;
    int64_t need_slot = imin(wanted, s->max_model_len);
    int64_t total_computed = imin(computed, s->max_model_len);
    int64_t need[MAX_KEYS] = {0}, demand[MAX_KEYS] = {0};
    for (int32_t k = 0; k < s->n_keys; k++) {
        if (!(mask >> k & 1u)) continue;
        shadow_table *t = &s->t[r][k];
        if (spans(s->type[k]) && t->present) {
            int64_t skipped = skipped_of(s, k, total_computed);
            int64_t kk = imin(skipped / s->bs[k], t->len);
            if (kk > t->n_null) {
                s->free_blocks[s->pool[k]] += kk - t->n_null;
                t->n_null = kk;
            }
        }
        int64_t reserve = 0;
        if (s->type[k] == KVC_ATTN_FULL) {
            need[k] = imax(0, cdiv(need_slot, s->bs[k]) - t->len);
            reserve = cdiv(reserved, s->bs[k]) * entries_of(s, k);
        } else if (spans(s->type[k])) {
            /* an empty table starts with nulls for the blocks the computed tokens skip */
            int64_t len = t->len > 0 ? t->len : skipped_of(s, k, total_computed) / s->bs[k];
            need[k] = imax(0, cdiv(need_slot, s->bs[k]) - len);
        } else {
            need[k] = imax(0, (t->len == 0 ? 1 : 1 + s->next_n[k]) - t->len);
        }
        demand[s->pool[k]] += need[k] + reserve;
    }
    for (int32_t k = 0; k < s->n_keys; k++)
        if (demand[k] > s->free_blocks[k]) return KVC_NO_SPACE;
    for (int32_t k = 0; k < s->n_keys; k++) {
        if (!(mask >> k & 1u)) continue;
        shadow_table *t = &s->t[r][k];
        if (spans(s->type[k]) && t->len == 0) {
            t->n_null = skipped_of(s, k, total_computed) / s->bs[k];
            t->len = t->n_null;
        }
        t->present = true;
        t->len += need[k];
        s->free_blocks[s->pool[k]] -= need[k];
    }
    return wanted > s->max_model_len ? KVC_CLAMPED : KVC_OK;
}

static void shadow_free(shadow *s, int r) {
    for (int32_t k = 0; k < s->n_keys; k++) {
        shadow_table *t = &s->t[r][k];
        if (t->present) s->free_blocks[s->pool[k]] += t->len - t->n_null;
        *t = (shadow_table){0};
    }
}

static bool block_is_free(const kvc_manager *m, int32_t k, int32_t id) {
    int32_t queue[512];
    int64_t n = 0;
    kvc_manager_free_queue(m, k, queue, 512, &n);
    for (int64_t i = 0; i < n && i < 512; i++)
        if (queue[i] == id) return true;
    return false;
}

/* Persistent copies of every request's rows, kept current with
 * kvc_manager_table_sync and compared with a fresh copy after every step. */
#define ROW_WIDTH 64
static int32_t synced_rows[MAX_REQ][MAX_KEYS][ROW_WIDTH];
static kvc_table_state synced_state[MAX_REQ][MAX_KEYS];

static void check_synced_row(const kvc_manager *m, int r, int32_t k, long step) {
    int32_t fresh[ROW_WIDTH] = {0};
    int64_t n = 0;
    assert_int_equal(kvc_manager_block_ids(m, r, k, fresh, ROW_WIDTH, &n), KVC_OK);
    assert_true(n <= ROW_WIDTH);
    if (kvc_manager_table_sync(m, r, k, synced_rows[r][k], ROW_WIDTH, &synced_state[r][k]) != KVC_OK)
        fail_msg("step %ld: sync: %s", step, kvc_last_error());
    if (memcmp(fresh, synced_rows[r][k], sizeof fresh) != 0)
        fail_msg("step %ld req %d key %d: synced row differs", step, r, k);
    assert_int_equal(synced_state[r][k].len, n);
}

/* Every table and free count of the manager equals the shadow's. */
static void compare(const kvc_manager *m, const shadow *s, long step) {
    for (int32_t k = 0; k < s->n_keys; k++) {
        if (kvc_manager_num_free(m, k) != s->free_blocks[s->pool[k]])
            fail_msg("step %ld key %d: %lld free, shadow %lld", step, k, (long long)kvc_manager_num_free(m, k),
                     (long long)s->free_blocks[s->pool[k]]);
        for (int r = 0; r < MAX_REQ; r++) {
            int32_t ids[512];
            int64_t n = -1;
            assert_int_equal(kvc_manager_block_ids(m, r, k, ids, 512, &n), KVC_OK);
            const shadow_table *t = &s->t[r][k];
            if (kvc_manager_has_request(m, r, k) != t->present || n != t->len)
                fail_msg("step %ld req %d key %d: len %lld present %d, shadow len %lld present %d", step, r, k,
                         (long long)n, kvc_manager_has_request(m, r, k), (long long)t->len, t->present);
            /* sync only some steps, so that rows lag several changes behind */
            if ((step + r) % 3 == 0) check_synced_row(m, r, k, step);
            for (int64_t b = 0; b < n; b++)
                if ((ids[b] == 0) != (b < t->n_null))
                    fail_msg("step %ld req %d key %d: entry %lld is %d, shadow null prefix %lld", step, r, k,
                             (long long)b, ids[b], (long long)t->n_null);
        }
    }
    kvc_status st = kvc_manager_check_invariants(m);
    if (st != KVC_OK) fail_msg("step %ld: %s", step, kvc_last_error());
}

/* INV-SW-2, INV-CL-2 (retention): after a call whose computed c covers
 * every position addressed before (a first call, or the engine's pattern),
 * positions >= c - W + 1 are backed (chunked local: >= floor(c / C) * C). */
static void check_retention(const kvc_manager *m, const shadow *s, int r, const bool *was_empty, int64_t computed,
                            bool monotone) {
    for (int32_t k = 0; k < s->n_keys; k++) {
        if (!spans(s->type[k]) || !s->t[r][k].present) continue;
        if (!was_empty[k] && !monotone) continue;
        int64_t first_pos = skipped_of(s, k, imin(computed, s->max_model_len));
        int32_t ids[512];
        int64_t n = 0;
        kvc_manager_block_ids(m, r, k, ids, 512, &n);
        for (int64_t b = first_pos / s->bs[k]; b < n; b++)
            if (ids[b] == 0)
                fail_msg("req %d key %d: logical block %lld inside the window is null", r, k, (long long)b);
    }
}

typedef struct config {
    int32_t n_keys;
    kvc_attn_type type[MAX_KEYS];
    int64_t bs[MAX_KEYS], window[MAX_KEYS], next_n, blocks[MAX_KEYS], max_model_len;
    bool shared; /* one pool of blocks[0] blocks for every key */
} config;

static void run_config(const config *c, uint64_t seed, long steps) {
    rng_state = seed;
    kvc_cache_entry entries[MAX_KEYS];
    const char *keys[MAX_KEYS];
    shadow s = {.n_keys = c->n_keys, .max_model_len = c->max_model_len};
    for (int32_t k = 0; k < c->n_keys; k++) {
        entries[k] = c->type[k] == KVC_ATTN_MAMBA ? kvc_test_mamba_entry("state", c->next_n)
                                                  : kvc_test_attention_entry("kv", c->type[k], c->bs[k], c->window[k]);
        keys[k] = kvc_attn_type_name(c->type[k]);
        s.type[k] = c->type[k];
        s.bs[k] = c->type[k] == KVC_ATTN_MAMBA ? 1 : c->bs[k];
        s.window[k] = c->window[k];
        s.next_n[k] = c->next_n;
        s.pool[k] = c->shared ? 0 : k;
        s.num_blocks[k] = c->blocks[s.pool[k]];
        s.free_blocks[k] = s.num_blocks[k] - 1; /* read for pool keys only */
    }
    kvc_test_model model;
    kvc_test_model_init(&model, entries, c->n_keys);
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = c->max_model_len;
    kvc_manager *m = c->shared ? kvc_test_manager_shared(&model, keys, c->blocks[0], c->n_keys, &mp)
                               : kvc_test_manager(&model, keys, c->blocks, c->n_keys, c->max_model_len);
    memset(synced_rows, 0x7f, sizeof synced_rows); /* garbage that a zeroed state must overwrite */
    memset(synced_state, 0, sizeof synced_state);
    int64_t cached[MAX_REQ] = {0}, high[MAX_REQ] = {0}; /* largest need_slot granted so far */
    long no_space = 0, clamped = 0, frees = 0;
    for (long step = 0; step < steps; step++) {
        int r = (int)rnd_in(0, MAX_REQ - 1);
        int64_t op = rnd_in(0, 99);
        if (op < 12) {
            int32_t before[MAX_KEYS][512];
            int64_t n_before[MAX_KEYS];
            for (int32_t k = 0; k < c->n_keys; k++) kvc_manager_block_ids(m, r, k, before[k], 512, &n_before[k]);
            assert_int_equal(kvc_manager_free(m, r), KVC_OK);
            shadow_free(&s, r);
            cached[r] = 0;
            high[r] = 0;
            frees++;
            /* release chain: the freed ids are free now, the request is unreachable */
            for (int32_t k = 0; k < c->n_keys; k++) {
                assert_false(kvc_manager_has_request(m, r, k));
                for (int64_t b = 0; b < n_before[k]; b++)
                    if (before[k][b] != 0) assert_true(block_is_free(m, k, before[k][b]));
            }
        } else {
            bool prefill = cached[r] == 0 || op < 25;
            int64_t computed = prefill ? (rnd_in(0, 3) == 0 ? cached[r] : 0) : cached[r];
            int64_t num_new = prefill ? rnd_in(0, 3 * c->bs[0] * 3) : rnd_in(1, 1 + c->next_n);
            int64_t lookahead = rnd_in(0, 4) == 0 ? rnd_in(0, 3) : 0;
            int64_t reserved = rnd_in(0, 3) == 0 ? rnd_in(0, 2 * c->bs[0]) : 0;
            uint64_t mask = rnd_in(0, 5) == 0 ? rnd() : KVC_ALL_KEYS;
            bool was_empty[MAX_KEYS];
            for (int32_t k = 0; k < c->n_keys; k++) was_empty[k] = s.t[r][k].len == 0;
            kvc_status expected = shadow_allocate(&s, r, computed, num_new, lookahead, reserved, mask);
            kvc_status got = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = r,
                                                                               .computed_tokens = computed,
                                                                               .num_new_tokens = num_new,
                                                                               .lookahead_tokens = lookahead,
                                                                               .reserved_tokens = reserved,
                                                                               .skip_keys = ~mask});
            if (got != expected)
                fail_msg("step %ld: allocate(%d, %lld, %lld, %lld, %lld, mask %llx) = %s, shadow says %s", step, r,
                         (long long)computed, (long long)num_new, (long long)lookahead, (long long)reserved,
                         (unsigned long long)mask, kvc_status_str(got), kvc_status_str(expected));
            if (got == KVC_NO_SPACE) no_space++;
            if (got == KVC_CLAMPED) clamped++;
            if (got >= 0 && got != KVC_NO_SPACE) {
                int64_t need_slot = imin(computed + num_new + lookahead, c->max_model_len);
                check_retention(m, &s, r, was_empty, computed, computed >= high[r]);
                high[r] = imax(high[r], need_slot);
                cached[r] = imin(computed + num_new, c->max_model_len);
            }
        }
        compare(m, &s, step);
    }
    /* The run must have exercised refusals, clamping and frees. */
    assert_true(no_space > steps / 100);
    assert_true(frees > steps / 20);
    (void)clamped;
    for (int r = 0; r < MAX_REQ; r++) kvc_manager_free(m, r);
    for (int32_t k = 0; k < c->n_keys; k++) assert_int_equal(kvc_manager_num_free(m, k), s.num_blocks[k] - 1);
    assert_int_equal(kvc_manager_num_live_requests(m), 0);
    kvc_manager_destroy(m);
}

static void test_full_only(void **state) {
    (void)state;
    config c = {.n_keys = 1, .type = {KVC_ATTN_FULL}, .bs = {4}, .blocks = {40}, .max_model_len = 50};
    run_config(&c, 0x1234567u, 20000);
}

/* Random steps of a configuration: n in the Release build, half under AddressSanitizer (the same paths; its
 * build runs them about six times slower). */
#ifdef KVC_TEST_ASAN
#define STEPS(n) ((n) / 2)
#else
#define STEPS(n) (n)
#endif

/* One key of `type` (blocks of 4) per span in spans[0..n). */
static void run_spans(kvc_attn_type type, const int64_t *spans, size_t n, uint64_t seed, long steps) {
    for (size_t i = 0; i < n; i++) {
        config c = {.n_keys = 1, .type = {type}, .bs = {4}, .window = {spans[i]}, .blocks = {30}, .max_model_len = 60};
        run_config(&c, seed + i, STEPS(steps));
    }
}

static void test_sliding_windows_below_at_above_block(void **state) {
    (void)state;
    run_spans(KVC_ATTN_SLIDING_WINDOW, (const int64_t[]){1, 3, 4, 5, 9}, 5, 0xabcdef01u, 8000);
}

/* Chunks below, at, above and not a multiple of the block size. */
static void test_chunks_below_at_above_block(void **state) {
    (void)state;
    run_spans(KVC_ATTN_CHUNKED_LOCAL, (const int64_t[]){1, 3, 4, 6, 8}, 5, 0xc0ffee01u, 6000);
}

/* Full, sliding window and Mamba keys: pools of their own (blocks), or one
 * pool smaller than the three together (shared). Some runs put chunked local
 * (chunk 6 over blocks of 4) in the window's place, so that each of the two
 * meets every next_n in one of the two tests. */
static void run_mixed(const int64_t *blocks, bool shared, uint64_t seed) {
    for (int64_t next_n = 0; next_n <= 2; next_n++) {
        config c = {.n_keys = 3,
                    .type = {KVC_ATTN_FULL,
                             (next_n + shared) % 2 == 1 ? KVC_ATTN_CHUNKED_LOCAL : KVC_ATTN_SLIDING_WINDOW,
                             KVC_ATTN_MAMBA},
                    .bs = {4, 4, 1},
                    .window = {0, 6, 0},
                    .next_n = next_n,
                    .blocks = {blocks[0], blocks[1], blocks[2]},
                    .max_model_len = 40,
                    .shared = shared};
        run_config(&c, seed + (uint64_t)next_n, STEPS(15000));
    }
}

static void test_mixed_three_managers(void **state) {
    (void)state;
    run_mixed((const int64_t[]){45, 25, 20}, false, 0x5eed0000u);
}

static void test_mixed_three_managers_shared_pool(void **state) {
    (void)state;
    run_mixed((const int64_t[]){60, 0, 0}, true, 0x5eed1000u);
}

/* P-REL-5/6 soak: thousands of requests through a small pool; after the drain
 * every pool is back to full and no past request is reachable. */
static void test_soak_release_chain(void **state) {
    (void)state;
    kvc_cache_entry entries[2] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, 16, 0),
                                  kvc_test_attention_entry("sw", KVC_ATTN_SLIDING_WINDOW, 16, 32)};
    kvc_test_model model;
    kvc_test_model_init(&model, entries, 2);
    kvc_manager *m =
        kvc_test_manager(&model, (const char *[]){"FullAttention", "SlidingWindow"}, (const int64_t[]){64, 40}, 2, 256);
    rng_state = 99;
    int64_t live[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, len[8] = {0};
    for (int64_t rid = 0, done = 0; done < 10000;) {
        int slot = (int)rnd_in(0, 7);
        if (live[slot] < 0) {
            int64_t prompt = rnd_in(1, 100);
            if (kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid, .num_new_tokens = prompt}) ==
                KVC_OK) {
                live[slot] = rid++;
                len[slot] = prompt;
            }
        } else if (len[slot] < 200 && rnd_in(0, 9) != 0) {
            if (kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = live[slot],
                                                                  .computed_tokens = len[slot],
                                                                  .num_new_tokens = 1}) == KVC_OK)
                len[slot]++;
        } else {
            int32_t old[32];
            int64_t n = 0;
            kvc_manager_block_ids(m, live[slot], 0, old, 32, &n);
            assert_int_equal(kvc_manager_free(m, live[slot]), KVC_OK);
            for (int64_t b = 0; b < n; b++) assert_true(kvc_manager_num_free(m, 0) > 0 && old[b] > 0);
            int64_t after = -1;
            kvc_manager_block_ids(m, live[slot], 0, old, 32, &after);
            assert_int_equal(after, 0);
            live[slot] = -1;
            done++;
        }
        if (rid % 500 == 0) assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
    }
    for (int i = 0; i < 8; i++)
        if (live[i] >= 0) kvc_manager_free(m, live[i]);
    char usage[128];
    assert_int_equal(kvc_manager_format_usage(m, usage, sizeof usage), KVC_OK);
    assert_string_equal(usage, "FullAttention:1/64,SlidingWindow:1/40");
    assert_int_equal(kvc_manager_num_live_requests(m), 0);
    assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
    kvc_manager_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_only),
        cmocka_unit_test(test_sliding_windows_below_at_above_block),
        cmocka_unit_test(test_chunks_below_at_above_block),
        cmocka_unit_test(test_mixed_three_managers),
        cmocka_unit_test(test_mixed_three_managers_shared_pool),
        cmocka_unit_test(test_soak_release_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
