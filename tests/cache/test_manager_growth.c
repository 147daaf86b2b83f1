/* Memory that follows use (issue 23 #6): a manager's request slots, block
 * tables, query scratch and prefix index grow with the requests, positions
 * and blocks actually used, not with max_requests x max_model_len or the
 * pool's token capacity; growing is amortised (doubling), and an allocation
 * that fails while growing is KVC_ENOMEM with nothing changed. */
#include "base/internal.h"
#include "cache/manager_internal.h"
#include "kvc_test_util.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static kvc_manager *create(kvc_test_model *tm, const kvc_cache_entry *entries, int32_t n, const int64_t *counts,
                           const kvc_manager_params *p) {
    kvc_test_model_init(tm, entries, n);
    kvc_block_plan plan;
    const char *keys[KVC_TEST_MAX_LAYERS];
    kvc_cache_groups groups;
    assert_int_equal(kvc_cache_groups_build(&tm->ci, &groups), KVC_OK);
    for (int32_t g = 0; g < groups.n_groups; g++) keys[g] = groups.groups[g].key;
    assert_int_equal(kvc_block_plan_from_counts(&tm->ci, keys, counts, groups.n_groups, &plan), KVC_OK);
    kvc_manager *m = NULL;
    if (kvc_manager_create(&tm->ci, &plan, p, &m) != KVC_OK) fail_msg("kvc_manager_create: %s", kvc_last_error());
    return m;
}

/* Full attention and a local key, a sliding window or chunked local of
 * `window` positions (both of block_size, `blocks` each), with prefix
 * caching on. */
static kvc_manager *caching_local(kvc_test_model *tm, kvc_attn_type local, int64_t block_size, int64_t window,
                                  int64_t max_model_len, int64_t max_requests, int64_t blocks) {
    const kvc_cache_entry e[2] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, block_size, 0),
                                  kvc_test_attention_entry("w", local, block_size, window)};
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = max_model_len;
    p.max_requests = max_requests;
    p.prefix_caching = true;
    return create(tm, e, 2, (const int64_t[]){blocks, blocks}, &p);
}

static kvc_manager *caching_hybrid(kvc_test_model *tm, int64_t block_size, int64_t window, int64_t max_model_len,
                                   int64_t max_requests, int64_t blocks) {
    return caching_local(tm, KVC_ATTN_SLIDING_WINDOW, block_size, window, max_model_len, max_requests, blocks);
}

static void prompt_tokens(int32_t *tokens, int64_t n, int32_t seed) {
    for (int64_t i = 0; i < n; i++) tokens[i] = seed * 7919 + (int32_t)i;
}

static kvc_status allocate(kvc_manager *m, int64_t rid, int64_t computed, int64_t num_new, const kvc_prompt *prompt) {
    kvc_slot_request req = {
        .request_id = rid, .computed_tokens = computed, .num_new_tokens = num_new, .prompt = prompt};
    return kvc_manager_allocate_slots(m, &req);
}

/* The limits: max_model_len 2^31 - 1 and 65,536 requests over a
 * 64-block pool, with prefix caching; creating it and serving a few
 * requests stays within a few KiB per request (before: refused as "too many"
 * table entries, or gigabytes of tables). */
static void test_huge_limits_small_pool(void **state) {
    (void)state;
    size_t before = kvc_test_heap_bytes();
    kvc_test_model tm;
    kvc_manager *m = caching_hybrid(&tm, 16, 32, INT32_MAX, 65536, 64);
    size_t created = kvc_test_heap_bytes() - before;
    assert_true(created < 64 * KIB);
    int32_t tokens[64];
    for (int64_t rid = 0; rid < 3; rid++) {
        prompt_tokens(tokens, 64, (int32_t)rid);
        kvc_prompt prompt = {.tokens = tokens, .n_tokens = 64};
        kvc_prefix_hit hit;
        assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
        assert_int_equal(allocate(m, rid, 0, 64, &prompt), KVC_OK);
        assert_int_equal(kvc_manager_cache_computed(m, rid, tokens, 64), KVC_OK);
    }
    assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
    size_t used = kvc_test_heap_bytes() - before;
    if (used >= 128 * KIB) fail_msg("a manager serving 3 requests holds %zu bytes", used);
    kvc_manager_destroy(m);
}

/* A prefix index over 16M blocks of 1,024 tokens is created with the
 * pool's own per-block arrays and a zeroed 4-byte map per block, not 64 GiB
 * of token ids (before: the token store was sized blocks x block_size). */
static void test_prefix_index_of_16m_blocks(void **state) {
    (void)state;
    const int64_t blocks = (int64_t)1 << 24;
    kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_FULL, 1024, 0);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = (int64_t)1 << 20;
    p.prefix_caching = true;
    size_t before = kvc_test_heap_bytes();
    kvc_test_model tm;
    kvc_manager *m = create(&tm, &e, 1, (const int64_t[]){blocks}, &p);
    size_t created = kvc_test_heap_bytes() - before;
    /* The pool keeps 13 bytes per block (count, queue links, cached flag). */
    if (created > (size_t)blocks * (13 + 4) + MIB) fail_msg("%zu bytes for %lld blocks", created, (long long)blocks);
    assert_int_equal(m->managers[0].index.cap, 16);
    kvc_manager_destroy(m);
}

/* One request grows a token at a time past 1,000 blocks and 40 requests
 * pass the 16 slots a manager starts with: the tables are right all along
 * and they grow by doubling (a few allocations, not one per block). */
static void test_tables_grow_by_doubling(void **state) {
    (void)state;
    kvc_cache_entry e = kvc_test_attention_entry("k", KVC_ATTN_FULL, 1, 0);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = (int64_t)1 << 30;
    kvc_test_model tm;
    kvc_manager *m = create(&tm, &e, 1, (const int64_t[]){1201}, &p);
    assert_int_equal(m->requests.n_slots, 16);
    kvci_alloc_fail_at(0); /* counts the allocations from here */
    assert_int_equal(allocate(m, 7, 0, 1, NULL), KVC_OK);
    for (int64_t n = 1; n < 1000; n++) assert_int_equal(allocate(m, 7, n, 1, NULL), KVC_OK);
    assert_true(kvci_alloc_calls() <= 10); /* 4, 8, ..., 1024 entries */
    int32_t ids[1000];
    int64_t n_ids = 0;
    assert_int_equal(kvc_manager_block_ids(m, 7, 0, ids, 1000, &n_ids), KVC_OK);
    assert_int_equal(n_ids, 1000);
    for (int32_t i = 0; i < 1000; i++) assert_int_equal(ids[i], i + 1); /* the queue hands out 1, 2, ... */
    for (int64_t rid = 100; rid < 140; rid++) assert_int_equal(allocate(m, rid, 0, 5, NULL), KVC_OK);
    assert_int_equal(m->requests.n_slots, 64);
    assert_int_equal(kvc_manager_num_live_requests(m), 41);
    assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
    for (int64_t rid = 100; rid < 140; rid += 2) assert_int_equal(kvc_manager_free(m, rid), KVC_OK);
    assert_int_equal(kvc_manager_free(m, 7), KVC_OK);
    for (int64_t rid = 200; rid < 221; rid++) assert_int_equal(allocate(m, rid, 0, 9, NULL), KVC_OK);
    assert_int_equal(m->requests.n_slots, 64); /* freed slots are reused */
    assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
    for (int64_t rid = 200; rid < 221; rid++) {
        assert_int_equal(kvc_manager_block_ids(m, rid, 0, ids, 1000, &n_ids), KVC_OK);
        assert_int_equal(n_ids, 9);
    }
    kvc_manager_destroy(m);
}

/* kvc_manager_reserve makes room up front: within its bounds, allocating,
 * querying and indexing allocate nothing (the engine's steps rely on it);
 * bounds past the manager's limits are refused by name. */
static void test_reserve_up_front(void **state) {
    (void)state;
    kvc_test_model tm;
    kvc_manager *m = caching_hybrid(&tm, 4, 8, 256, 40, 2600);
    assert_int_equal(kvc_manager_reserve(m, 41, 256), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "n_requests 41 must be in [0, max_requests 40]"));
    assert_int_equal(kvc_manager_reserve(m, 40, 257), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "n_positions 257 must be in [0, max_model_len 256]"));
    assert_int_equal(kvc_manager_reserve(NULL, 1, 1), KVC_EINVAL);
    assert_int_equal(kvc_manager_reserve(m, 40, 256), KVC_OK);
    int32_t tokens[256];
    kvci_alloc_fail_at(0);
    for (int64_t round = 0; round < 3; round++) {
        for (int64_t rid = 0; rid < 40; rid++) {
            prompt_tokens(tokens, 256, (int32_t)(rid % 5));
            kvc_prompt prompt = {.tokens = tokens, .n_tokens = 256};
            kvc_prefix_hit hit;
            assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
            assert_int_equal(allocate(m, rid + 100 * round, hit.n_tokens, 256 - hit.n_tokens, &prompt), KVC_OK);
            assert_int_equal(kvc_manager_cache_computed(m, rid + 100 * round, tokens, 256), KVC_OK);
        }
        for (int64_t rid = 0; rid < 40; rid++) assert_int_equal(kvc_manager_free(m, rid + 100 * round), KVC_OK);
    }
    assert_int_equal(kvci_alloc_calls(), 0);
    assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
    kvc_manager_destroy(m);
}

/* ---- allocation failures while growing ------------------------------------ */

#define MAX_RID 32

/* What a caller can observe of a manager. */
typedef struct snapshot {
    int64_t live, free[2], cached_free[2], n_ids[MAX_RID][2];
    int32_t ids[MAX_RID][2][64];
    kvc_prefix_stats stats;
} snapshot;

static void take_snapshot(const kvc_manager *m, snapshot *s) {
    memset(s, 0, sizeof *s);
    s->live = kvc_manager_num_live_requests(m);
    assert_int_equal(kvc_manager_prefix_stats(m, &s->stats), KVC_OK);
    for (int32_t k = 0; k < 2; k++) {
        s->free[k] = kvc_manager_num_free(m, k);
        s->cached_free[k] = kvc_manager_num_cached_free(m, k);
        for (int64_t rid = 0; rid < MAX_RID; rid++)
            assert_int_equal(kvc_manager_block_ids(m, rid, k, s->ids[rid][k], 64, &s->n_ids[rid][k]), KVC_OK);
    }
}

typedef struct op {
    int kind; /* 0 allocate (a prompt when tokens > 0), 1 cache_computed, 2 find_prefix */
    int64_t rid, computed, num_new;
    int32_t seed; /* prompt of the request */
} op;

static kvc_status run_op(kvc_manager *m, const op *o) {
    int32_t tokens[256];
    int64_t n = o->computed + o->num_new;
    prompt_tokens(tokens, n, o->seed);
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = n};
    kvc_prefix_hit hit;
    switch (o->kind) {
    case 0: return allocate(m, o->rid, o->computed, o->num_new, o->seed > 0 ? &prompt : NULL);
    case 1: return kvc_manager_cache_computed(m, o->rid, tokens, n);
    default: return kvc_manager_find_prefix(m, &prompt, &hit);
    }
}

/* Every op is tried with its 1st, 2nd, ... allocation failing until it needs
 * no more: each failure is KVC_ENOMEM naming what could not grow, and
 * leaves everything a caller can see (and the invariants) as they were; with
 * a sliding window, and with chunked local (chunk 6 over blocks of 4). */
static void growth_failures_change_nothing(kvc_attn_type local, int64_t window) {
    kvc_test_model tm;
    kvc_manager *m = caching_local(&tm, local, 4, window, 1024, 0, 600);
    op ops[64];
    int n_ops = 0;
    for (int64_t rid = 0; rid < 20; rid++) { /* 20 requests (16 slots at first), 40-token prompts (10 entries) */
        ops[n_ops++] = (op){2, rid, 0, 40, (int32_t)rid % 3 + 1};
        ops[n_ops++] = (op){0, rid, 0, 40, (int32_t)rid % 3 + 1};
        ops[n_ops++] = (op){1, rid, 0, 40, (int32_t)rid % 3 + 1};
    }
    ops[n_ops++] = (op){0, 25, 36, 40, 1}; /* a hit of 36 tokens, its table grows past it */
    ops[n_ops++] = (op){0, 0, 40, 200, 0}; /* 60 entries */
    ops[n_ops++] = (op){1, 0, 0, 240, 1};
    int failures = 0;
    for (int i = 0; i < n_ops; i++) {
        for (uint64_t fail = 1;; fail++) {
            snapshot before, after;
            take_snapshot(m, &before);
            kvci_alloc_fail_at(fail);
            kvc_status st = run_op(m, &ops[i]);
            uint64_t calls = kvci_alloc_calls();
            kvci_alloc_fail_at(0);
            if (calls < fail) {
                if (st != KVC_OK) fail_msg("op %d: %s", i, kvc_last_error());
                break;
            }
            if (st != KVC_ENOMEM) fail_msg("op %d, allocation %llu failed: status %d", i, (unsigned long long)fail, st);
            assert_non_null(strstr(kvc_last_error(), "cannot allocate"));
            take_snapshot(m, &after);
            assert_memory_equal(&before, &after, sizeof before);
            assert_int_equal(kvc_manager_check_invariants(m), KVC_OK);
            failures++;
        }
    }
    assert_true(failures >= 20); /* slots, tables, index and query scratch all grew under a failure */
    kvc_manager_destroy(m);
}

static void test_growth_failures_change_nothing(void **state) {
    (void)state;
    growth_failures_change_nothing(KVC_ATTN_SLIDING_WINDOW, 8);
    growth_failures_change_nothing(KVC_ATTN_CHUNKED_LOCAL, 6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_limits_small_pool),         cmocka_unit_test(test_prefix_index_of_16m_blocks),
        cmocka_unit_test(test_tables_grow_by_doubling),        cmocka_unit_test(test_reserve_up_front),
        cmocka_unit_test(test_growth_failures_change_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
