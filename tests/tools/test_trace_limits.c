/* `kvcache trace` limits and failures (issue 13 #1, #2, #4, #12, #14): the
 * invariant check only on request, the pool limit over all pools, strict
 * UTF-8 in and out, out-of-memory and output failures reported as such. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/internal.h"
#include "trace_replay.h"

#define N_OPS 400

/* A one-pool trace of `pool` blocks with N_OPS allocate/free ops. */
static char *make_trace(int64_t pool) {
    size_t cap = 512 + N_OPS * 80;
    char *s = malloc(cap);
    assert_non_null(s);
    int n = snprintf(s, cap,
                     "{\"max_model_len\": 4096, \"layers\": [{\"caches\": [{\"name\": \"k\", \"attn_type\": "
                     "\"FullAttention\", \"num_head\": 1, \"dim\": 4, \"dtype\": \"f32\", \"block_size\": 16}]}], "
                     "\"block_num\": {\"FullAttention\": %lld}, \"ops\": [",
                     (long long)pool);
    for (int i = 0; i < N_OPS; i++)
        n += snprintf(s + n, cap - (size_t)n, "%s{\"op\": \"%s\", \"request\": %d%s}", i ? ", " : "",
                      i % 2 ? "free" : "allocate", i / 2, i % 2 ? "" : ", \"new_tokens\": 40");
    snprintf(s + n, cap - (size_t)n, "]}");
    return s;
}

typedef struct output {
    char *text;
    size_t size;
} output;

static int replay(const char *json, const kvc_trace_options *opts, output *out) {
    FILE *f = open_memstream(&out->text, &out->size);
    assert_non_null(f);
    int rc = kvc_trace_replay(json, strlen(json), f, opts);
    fclose(f);
    return rc;
}

/* Without --check a replay does not walk the pool after every op (the walk
 * made replay quadratic): the check takes one flag array per op, so the
 * replay that checks allocates once more per op than the one that does not. */
static void test_check_only_on_request(void **state) {
    (void)state;
    char *json = make_trace(1 << 12);
    output got = {0};
    kvc_trace_options opts = {0};
    kvci_alloc_fail_at(0);
    assert_int_equal(replay(json, &opts, &got), KVC_TRACE_EXIT_OK);
    uint64_t unchecked = kvci_alloc_calls();
    free(got.text);
    opts.check_invariants = true;
    kvci_alloc_fail_at(0);
    assert_int_equal(replay(json, &opts, &got), KVC_TRACE_EXIT_OK);
    uint64_t checked = kvci_alloc_calls();
    free(got.text);
    assert_true(checked >= unchecked + N_OPS);
    free(json);
}

/* The block limit counts every pool together, and is checked before the
 * manager (and its pools) exist. */
static void test_block_limit(void **state) {
    (void)state;
    char *json = make_trace(1000);
    output got = {0};
    kvc_trace_options opts = {.max_blocks = 999};
    assert_int_equal(replay(json, &opts, &got), KVC_TRACE_EXIT_INVALID);
    assert_non_null(strstr(got.text, "the pools hold more than 999 blocks in all"));
    free(got.text);
    opts.max_blocks = 1000;
    assert_int_equal(replay(json, &opts, &got), KVC_TRACE_EXIT_OK);
    free(got.text);
    free(json);
}

/* Invalid UTF-8 anywhere in the file is refused with its offset; strings the
 * replay writes are always UTF-8 (a byte that is not becomes U+FFFD). */
static void test_utf8(void **state) {
    (void)state;
    char *json = make_trace(100);
    char *name = strstr(json, "\"k\"");
    name[1] = (char)0xC3; /* a lead byte followed by a quote */
    output got = {0};
    assert_int_equal(replay(json, NULL, &got), KVC_TRACE_EXIT_INVALID);
    char want[64];
    snprintf(want, sizeof want, "{\"error\": \"invalid UTF-8 at byte %zu\"}\n", (size_t)(name + 1 - json));
    assert_string_equal(got.text, want);
    free(got.text);
    free(json);

    FILE *f = open_memstream(&got.text, &got.size);
    kvc_trace_put_json_string(f, "a\xC3\xA9\xFF\xE2\x82z\t\"");
    fclose(f);
    assert_string_equal(got.text, "\"a\xC3\xA9\\ufffd\\ufffd\\ufffdz\\t\\\"\"");
    free(got.text);
}

/* A failed allocation while parsing is reported as out of memory (exit 1),
 * not as invalid JSON; a failed write of the output fails the replay. */
static void test_failures_named(void **state) {
    (void)state;
    char *json = make_trace(100);
    output got = {0};
    kvci_alloc_fail_at(1);
    assert_int_equal(replay(json, NULL, &got), KVC_TRACE_EXIT_FAILED);
    kvci_alloc_fail_at(0);
    assert_string_equal(got.text, "{\"error\": \"out of memory parsing JSON\"}\n");
    free(got.text);

    FILE *full = fopen("/dev/full", "w");
    assert_non_null(full);
    assert_int_equal(kvc_trace_replay(json, strlen(json), full, NULL), KVC_TRACE_EXIT_FAILED);
    fclose(full);
    free(json);
}

/* Memory follows the pool (issue 23 #6): a 64-block pool with max_model_len
 * 1e9 replays (it took max_requests x 1e9 / 16 table entries and failed as
 * "out of memory loading the trace"), and when an allocation of the load
 * does fail, the message is that of the step that ran out. */
static void test_huge_max_model_len(void **state) {
    (void)state;
    const char *json = "{\"max_model_len\": 1000000000, \"layers\": [{\"caches\": [{\"name\": \"k\", \"attn_type\": "
                       "\"FullAttention\", \"num_head\": 1, \"dim\": 4, \"dtype\": \"f32\", \"block_size\": 16}]}], "
                       "\"block_num\": {\"FullAttention\": 64}, \"prefix_caching\": {}, \"ops\": [{\"op\": "
                       "\"allocate\", \"request\": 1, \"new_tokens\": 100}]}";
    output got = {0};
    kvci_alloc_fail_at(0);
    assert_int_equal(replay(json, NULL, &got), KVC_TRACE_EXIT_OK);
    uint64_t total = kvci_alloc_calls();
    assert_non_null(strstr(got.text, "\"ok\": true"));
    free(got.text);
    int named = 0;
    for (uint64_t at = 1; at <= total; at++) {
        output failed = {0};
        kvci_alloc_fail_at(at);
        int rc = replay(json, NULL, &failed);
        kvci_alloc_fail_at(0);
        if (rc == KVC_TRACE_EXIT_FAILED && strstr(failed.text, "manager FullAttention: ") != NULL) named++;
        free(failed.text);
    }
    assert_true(named > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_only_on_request),
        cmocka_unit_test(test_block_limit),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_failures_named),
        cmocka_unit_test(test_huge_max_model_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
