/* `kvcache trace`: golden replays of the worked examples of
 * KM 8 and the error lines of malformed traces. Traces and
 * expected lines are written with ' for " to stay readable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trace_replay.h"

/* A copy of s with every ' turned into ". */
static char *dq(const char *s) {
    char *out = strdup(s);
    assert_non_null(out);
    for (char *c = out; *c != '\0'; c++)
        if (*c == '\'') *c = '"';
    return out;
}

/* What a replay printed (open_memstream keeps these two up to date). */
typedef struct output {
    char *text;
    size_t size;
} output;

/* Replays trace (with ' for ") into out->text; returns the exit status. */
static int replay_into(const char *trace, bool usage, output *out) {
    char *json = dq(trace);
    FILE *f = open_memstream(&out->text, &out->size);
    assert_non_null(f);
    kvc_trace_options opts = {.print_usage = usage};
    int rc = kvc_trace_replay(json, strlen(json), f, &opts);
    fclose(f);
    free(json);
    return rc;
}

static void expect_replay(const char *trace, bool usage, int want_rc, const char *want) {
    output got = {0};
    int rc = replay_into(trace, usage, &got);
    char *expected = dq(want);
    assert_string_equal(got.text, expected);
    assert_int_equal(rc, want_rc);
    free(got.text);
    free(expected);
}

/* The whole output of an invalid trace: the one error line, status 2. */
static void expect_invalid(const char *trace, const char *message) {
    char line[512];
    snprintf(line, sizeof line, "{'error': '%s'}\n", message);
    expect_replay(trace, false, KVC_TRACE_EXIT_INVALID, line);
}

/* The output is exactly one line starting with prefix, status 2. */
static void expect_invalid_prefix(const char *trace, const char *prefix) {
    output got = {0};
    int rc = replay_into(trace, false, &got);
    char *want = dq(prefix);
    assert_int_equal(rc, KVC_TRACE_EXIT_INVALID);
    assert_memory_equal(got.text, want, strlen(want));
    assert_non_null(strchr(got.text, '\n'));
    assert_int_equal(strchr(got.text, '\n')[1], '\0');
    free(got.text);
    free(want);
}

#define SW_ENTRY                                                                                                       \
    "{'name': 'k', 'attn_type': 'SlidingWindow', 'num_head': 1, 'dim': 4, 'dtype': 'f32', 'block_size': 4, "           \
    "'sliding_window': 6}"
#define FULL_ENTRY                                                                                                     \
    "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': 2, 'dim': [2, 4], 'dtype': 'bf16', 'block_size': 4}"

/* KM 8.1: W = 6, bs = 4, 8 blocks; prefill 10, 5 decodes, free; then a new
 * prefill of 28 shows the FIFO reuse order (free queue [5,6,7,1,2,3,4]) and
 * the null prefix. */
static void test_sliding_window_8_1(void **state) {
    (void)state;
    expect_replay(
        "{'max_model_len': 64, 'layers': [{'caches': [" SW_ENTRY "]}],"
        " 'block_num': {'SlidingWindow': 8}, 'ops': ["
        "{'op': 'allocate', 'request': 7, 'new_tokens': 10},"
        "{'op': 'allocate', 'request': 7, 'computed_tokens': 10, 'new_tokens': 1},"
        "{'op': 'allocate', 'request': 7, 'computed_tokens': 11, 'new_tokens': 1},"
        "{'op': 'allocate', 'request': 7, 'computed_tokens': 12, 'new_tokens': 1},"
        "{'op': 'allocate', 'request': 7, 'computed_tokens': 13, 'new_tokens': 1},"
        "{'op': 'allocate', 'request': 7, 'computed_tokens': 14, 'new_tokens': 1},"
        "{'op': 'free', 'request': 7},"
        "{'op': 'allocate', 'request': 8, 'new_tokens': 28}]}",
        true, 0,
        "{'block_num': {'SlidingWindow': 8}}\n"
        "{'op': 0, 'ok': true, 'blocks': {'SlidingWindow': [1, 2, 3]}, 'free': {'SlidingWindow': 4}}\n"
        "{'usage': 'SlidingWindow:4/8'}\n"
        "{'op': 1, 'ok': true, 'blocks': {'SlidingWindow': [0, 2, 3]}, 'free': {'SlidingWindow': 5}}\n"
        "{'usage': 'SlidingWindow:3/8'}\n"
        "{'op': 2, 'ok': true, 'blocks': {'SlidingWindow': [0, 2, 3]}, 'free': {'SlidingWindow': 5}}\n"
        "{'usage': 'SlidingWindow:3/8'}\n"
        "{'op': 3, 'ok': true, 'blocks': {'SlidingWindow': [0, 2, 3, 4]}, 'free': {'SlidingWindow': 4}}\n"
        "{'usage': 'SlidingWindow:4/8'}\n"
        "{'op': 4, 'ok': true, 'blocks': {'SlidingWindow': [0, 0, 3, 4]}, 'free': {'SlidingWindow': 5}}\n"
        "{'usage': 'SlidingWindow:3/8'}\n"
        "{'op': 5, 'ok': true, 'blocks': {'SlidingWindow': [0, 0, 3, 4]}, 'free': {'SlidingWindow': 5}}\n"
        "{'usage': 'SlidingWindow:3/8'}\n"
        "{'op': 6, 'ok': true, 'blocks': {'SlidingWindow': []}, 'free': {'SlidingWindow': 7}}\n"
        "{'usage': 'SlidingWindow:1/8'}\n"
        "{'op': 7, 'ok': true, 'blocks': {'SlidingWindow': [5, 6, 7, 1, 2, 3, 4]}, 'free': {'SlidingWindow': 0}}\n"
        "{'usage': 'SlidingWindow:8/8'}\n");
}

/* KM 8.3: full attention admission with a reservation (bs 4, 11 blocks). */
static void test_reservation_8_3(void **state) {
    (void)state;
    expect_replay("{'max_model_len': 64, 'layers': [{'caches': [" FULL_ENTRY "]}],"
                  " 'block_num': {'FullAttention': 11}, 'ops': ["
                  "{'op': 'allocate', 'request': 100, 'computed_tokens': 0, 'new_tokens': 9},"
                  "{'op': 'allocate', 'request': 101, 'new_tokens': 5},"
                  "{'op': 'allocate', 'request': 102, 'computed_tokens': 9, 'new_tokens': 1, 'reserved_tokens': 8},"
                  "{'op': 'allocate', 'request': 102, 'computed_tokens': 4, 'new_tokens': 1, 'reserved_tokens': 4}]}",
                  false, 0,
                  "{'block_num': {'FullAttention': 11}}\n"
                  "{'op': 0, 'ok': true, 'blocks': {'FullAttention': [1, 2, 3]}, 'free': {'FullAttention': 7}}\n"
                  "{'op': 1, 'ok': true, 'blocks': {'FullAttention': [4, 5]}, 'free': {'FullAttention': 5}}\n"
                  "{'op': 2, 'ok': false, 'blocks': {'FullAttention': []}, 'free': {'FullAttention': 5}}\n"
                  "{'op': 3, 'ok': true, 'blocks': {'FullAttention': [6, 7]}, 'free': {'FullAttention': 3}}\n");
}

/* KM 8.4: Mamba, next_n = 1, planned offline for C = 2 -> 5 blocks. */
static void test_mamba_8_4(void **state) {
    (void)state;
    expect_replay("{'max_model_len': 64, 'layers': [{'caches': ["
                  "{'name': 'state', 'attn_type': 'Mamba', 'dtype': 'f32', 'shape': [4, 3], 'next_n': 1}]}],"
                  " 'plan': {'mode': 'offline', 'max_len': 64, 'max_concurrency': 2, 'next_n': 1}, 'ops': ["
                  "{'op': 'allocate', 'request': 0, 'new_tokens': 7},"
                  "{'op': 'allocate', 'request': 1, 'new_tokens': 3},"
                  "{'op': 'allocate', 'request': 0, 'computed_tokens': 7, 'new_tokens': 2},"
                  "{'op': 'allocate', 'request': 1, 'computed_tokens': 3, 'new_tokens': 2},"
                  "{'op': 'allocate', 'request': 0, 'computed_tokens': 8, 'new_tokens': 2},"
                  "{'op': 'allocate', 'request': 2, 'new_tokens': 3},"
                  "{'op': 'free', 'request': 0}]}",
                  false, 0,
                  "{'block_num': {'Mamba': 5}}\n"
                  "{'op': 0, 'ok': true, 'blocks': {'Mamba': [1]}, 'free': {'Mamba': 3}}\n"
                  "{'op': 1, 'ok': true, 'blocks': {'Mamba': [2]}, 'free': {'Mamba': 2}}\n"
                  "{'op': 2, 'ok': true, 'blocks': {'Mamba': [1, 3]}, 'free': {'Mamba': 1}}\n"
                  "{'op': 3, 'ok': true, 'blocks': {'Mamba': [2, 4]}, 'free': {'Mamba': 0}}\n"
                  "{'op': 4, 'ok': true, 'blocks': {'Mamba': [1, 3]}, 'free': {'Mamba': 0}}\n"
                  "{'op': 5, 'ok': false, 'blocks': {'Mamba': []}, 'free': {'Mamba': 0}}\n"
                  "{'op': 6, 'ok': true, 'blocks': {'Mamba': []}, 'free': {'Mamba': 2}}\n");
}

#define HYBRID_8_5                                                                                                     \
    "{'max_model_len': 64, 'layers': [{'caches': [" SW_ENTRY "]}, {'caches': [" FULL_ENTRY "]}],"                      \
    " 'block_num': {'SlidingWindow': 8, 'FullAttention': 5}, 'ops': ["

/* KM 8.5: the sliding-window release of phase 1 stays when the full-attention
 * manager refuses. */
static void test_two_phase_8_5(void **state) {
    (void)state;
    expect_replay(HYBRID_8_5 "{'op': 'allocate', 'request': 0, 'new_tokens': 14},"
                             "{'op': 'allocate', 'request': 0, 'computed_tokens': 14, 'new_tokens': 3}]}",
                  false, 0,
                  "{'block_num': {'SlidingWindow': 8, 'FullAttention': 5}}\n"
                  "{'op': 0, 'ok': true, 'blocks': {'SlidingWindow': [1, 2, 3, 4], 'FullAttention': [1, 2, 3, 4]},"
                  " 'free': {'SlidingWindow': 3, 'FullAttention': 0}}\n"
                  "{'op': 1, 'ok': false, 'blocks': {'SlidingWindow': [0, 0, 3, 4], 'FullAttention': [1, 2, 3, 4]},"
                  " 'free': {'SlidingWindow': 5, 'FullAttention': 0}}\n");
}

/* "keys" restricts an allocation to some managers; clamping is reported. */
static void test_keys_and_clamp(void **state) {
    (void)state;
    expect_replay(HYBRID_8_5 "{'op': 'allocate', 'request': 3, 'new_tokens': 5, 'keys': ['SlidingWindow']},"
                             "{'op': 'allocate', 'request': 3, 'new_tokens': 5, 'keys': []},"
                             "{'op': 'allocate', 'request': 4, 'computed_tokens': 60, 'new_tokens': 8,"
                             " 'keys': ['FullAttention']}]}",
                  false, 0,
                  "{'block_num': {'SlidingWindow': 8, 'FullAttention': 5}}\n"
                  "{'op': 0, 'ok': true, 'blocks': {'SlidingWindow': [1, 2], 'FullAttention': []},"
                  " 'free': {'SlidingWindow': 5, 'FullAttention': 4}}\n"
                  "{'op': 1, 'ok': true, 'blocks': {'SlidingWindow': [1, 2], 'FullAttention': []},"
                  " 'free': {'SlidingWindow': 5, 'FullAttention': 4}}\n"
                  "{'op': 2, 'ok': false, 'blocks': {'SlidingWindow': [], 'FullAttention': []},"
                  " 'free': {'SlidingWindow': 5, 'FullAttention': 4}}\n");
    expect_replay("{'max_model_len': 8, 'layers': [{'caches': [" FULL_ENTRY "]}],"
                  " 'block_num': {'FullAttention': 5}, 'ops': [{'op': 'allocate', 'request': 1, 'new_tokens': 10}]}",
                  false, 0,
                  "{'block_num': {'FullAttention': 5}}\n"
                  "{'op': 0, 'ok': true, 'clamped': true, 'blocks': {'FullAttention': [1, 2]},"
                  " 'free': {'FullAttention': 2}}\n");
}

/* Ops the manager refuses get their own error line; the replay goes on. */
static void test_op_errors(void **state) {
    (void)state;
    output got = {0};
    int rc = replay_into(HYBRID_8_5 "{'op': 'allocate', 'request': 1, 'new_tokens': -1},"
                                    "{'op': 'grow', 'request': 1},"
                                    "{'op': 'allocate', 'request': 1, 'new_tokens': 4, 'keys': ['Nope']},"
                                    "{'op': 'allocate', 'request': 1, 'computed_tokens': -4, 'new_tokens': 4},"
                                    "{'op': 'allocate', 'request': 1, 'new_tokens': 4, 'lookahead_tokens': -1},"
                                    "{'op': 'allocate', 'request': 1, 'new_tokens': 4}]}",
                         false, &got);
    assert_int_equal(rc, 0);
    char *lines[8] = {0};
    int n = 0;
    for (char *s = strtok(got.text, "\n"); s != NULL && n < 8; s = strtok(NULL, "\n")) lines[n++] = s;
    assert_int_equal(n, 7);
    char *want = dq("{'op': 0, 'error': '");
    assert_memory_equal(lines[1], want, strlen(want));
    free(want);
    want = dq("{'op': 1, 'error': 'unknown op \\'grow\\' (expected allocate, free, query or clear)'}");
    assert_string_equal(lines[2], want);
    free(want);
    want = dq("{'op': 2, 'error': 'unknown manager key \\'Nope\\''}");
    assert_string_equal(lines[3], want);
    free(want);
    want = dq("{'op': 3, 'error': '");
    assert_memory_equal(lines[4], want, strlen(want));
    free(want);
    want = dq("{'op': 4, 'error': '");
    assert_memory_equal(lines[5], want, strlen(want));
    free(want);
    want = dq("{'op': 5, 'ok': true, 'blocks': {'SlidingWindow': [1], 'FullAttention': [1]},"
              " 'free': {'SlidingWindow': 6, 'FullAttention': 3}}");
    assert_string_equal(lines[6], want);
    free(want);
    free(got.text);
}

#define ONE_LAYER_HEAD "{'max_model_len': 64, 'layers': [{'caches': ["
#define ONE_LAYER_TAIL "]}], 'block_num': {'FullAttention': 5}, 'ops': []}"

/* Malformed files: one error line naming the position, status 2. */
static void test_invalid_files(void **state) {
    (void)state;
    expect_invalid_prefix("{'max_model_len': 12,, }", "{'error': 'invalid JSON at byte ");
    expect_invalid_prefix("", "{'error': 'invalid JSON at byte 0'}");
    expect_invalid_prefix(ONE_LAYER_HEAD FULL_ENTRY ONE_LAYER_TAIL " x", "{'error': 'invalid JSON at byte ");
    expect_invalid("[]", "expected an object");
    expect_invalid("{'layers': [], 'block_num': {}, 'ops': []}", "max_model_len is missing");
    expect_invalid("{'max_model_len': 1e30, 'layers': [], 'block_num': {}, 'ops': []}",
                   "max_model_len 1e+30 must be an integer >= 1");
    expect_invalid("{'max_model_len': 64, 'layers': [], 'block_num': {}}", "ops: missing");
    expect_invalid("{'max_model_len': 64, 'layers': {}, 'block_num': {}, 'ops': []}", "layers: expected a list");
    expect_invalid("{'max_model_len': 64, 'layers': [], 'ops': []}", "block_num: missing (give block_num or plan)");
    expect_invalid("{'max_model_len': 64, 'layers': [], 'ops': [], 'extra': 1}", "unknown field \\'extra\\'");
    expect_invalid("{'max_model_len': 64, 'layers': [{'caches': [" FULL_ENTRY "]}, {'caches': ["
                   "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': '2', 'dim': 4, 'dtype': 'f32',"
                   " 'block_size': 4}]}], 'block_num': {'FullAttention': 5}, 'ops': []}",
                   "layers[1].caches[0].num_head must be an integer >= 1, got a string");
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': 2.5, 'dim': 4,"
                                  " 'dtype': 'f32', 'block_size': 4}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].num_head 2.5 must be an integer >= 1");
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': 2, 'dim': [4, 0],"
                                  " 'dtype': 'f32', 'block_size': 4}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].dim[1] 0 must be an integer >= 1");
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': 2, 'dim': 4,"
                                  " 'block_size': 4}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].dtype is missing");
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': 2, 'dim': 4,"
                                  " 'dtype': 'f64', 'block_size': 4}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].dtype: expected one of f32, f16, bf16, i8");
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'Linear', 'num_head': 2, 'dim': 4,"
                                  " 'dtype': 'f32', 'block_size': 4}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].attn_type: expected one of FullAttention, SlidingWindow, Mamba, ChunkedLocal");
    expect_invalid(ONE_LAYER_HEAD "{'name': '0123456789012345678901234567890123456789012345678901234567890123',"
                                  " 'attn_type': 'FullAttention', 'num_head': 2, 'dim': 4, 'dtype': 'f32',"
                                  " 'block_size': 4}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].name is 64 bytes long, at most 63 are accepted");
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': 2, 'dim': 4,"
                                  " 'dtype': 'f32', 'block_size': 4, 'needs_block': 1}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].needs_block must be true or false, got a number");
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': 2, 'dim': 4,"
                                  " 'dtype': 'f32', 'block_size': 4, 'shape': [2]}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].shape: only allowed for Mamba entries");
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'FullAttention', 'num_head': 2, 'dim': 4,"
                                  " 'dtype': 'f32', 'block_size': 4, 'dtype': 'f16'}" ONE_LAYER_TAIL,
                   "layers[0].caches[0]: duplicate field \\'dtype\\'");
    expect_invalid(ONE_LAYER_HEAD FULL_ENTRY "]}], 'block_num': {'FullAttention': 0}, 'ops': []}",
                   "block_num.FullAttention 0 must be an integer >= 1");
    expect_invalid(ONE_LAYER_HEAD FULL_ENTRY "]}], 'block_num': {'a': 1, 'b': 1, 'c': 1, 'd': 1, 'e': 1, 'f': 1,"
                                             " 'g': 1, 'h': 1, 'i': 1, 'j': 1, 'k': 1, 'l': 1, 'm': 1, 'n': 1, 'o': 1,"
                                             " 'p': 1, 'q': 1}, 'ops': []}",
                   "block_num: more than 16 keys");
    expect_invalid(ONE_LAYER_HEAD FULL_ENTRY "]}], 'block_num': {'FullAttention': 5, 'FullAttention': 6}, 'ops': []}",
                   "block_num.FullAttention: duplicate key");
    expect_invalid(ONE_LAYER_HEAD FULL_ENTRY "]}], 'block_num': {'FullAttention': 5},"
                                             " 'plan': {'mode': 'offline'}, 'ops': []}",
                   "plan: not allowed together with block_num");
    expect_invalid(ONE_LAYER_HEAD FULL_ENTRY "]}], 'plan': {'mode': 'offline', 'kv_memory_bytes': 10,"
                                             " 'max_concurrency': 1}, 'ops': []}",
                   "plan.kv_memory_bytes: not used by mode \\'offline\\'");
    expect_invalid(ONE_LAYER_HEAD FULL_ENTRY "]}], 'plan': {'mode': 'streaming'}, 'ops': []}",
                   "plan.mode: expected one of offline, online");
}

/* Op fields are type-checked before anything is replayed: a bad op makes the
 * whole file invalid (no block_num line, no op line). */
static void test_invalid_ops(void **state) {
    (void)state;
    expect_invalid(HYBRID_8_5 "{'op': 'allocate', 'request': 1, 'new_tokens': 4},"
                              "{'op': 'allocate', 'request': 'x', 'new_tokens': 4}]}",
                   "ops[1].request must be an integer in [0, 9007199254740991], got a string (request ids are exact "
                   "integers in [0, 2^53 - 1])");
    expect_invalid(HYBRID_8_5 "{'op': 'allocate', 'request': 1}]}", "ops[0].new_tokens is missing");
    expect_invalid(HYBRID_8_5 "{'op': 'allocate', 'request': 1, 'new_tokens': 9.5}]}",
                   "ops[0].new_tokens 9.5 must be an integer");
    expect_invalid(HYBRID_8_5 "{'op': 'allocate', 'request': 1, 'new_tokens': 1e19}]}",
                   "ops[0].new_tokens 1e+19 must be an integer");
    expect_invalid(HYBRID_8_5 "{'op': 'free', 'request': 1, 'new_tokens': 4}]}",
                   "ops[0]: unknown field \\'new_tokens\\'");
    expect_invalid(HYBRID_8_5 "{'request': 1}]}", "ops[0].op: missing");
    expect_invalid(HYBRID_8_5 "3]}", "ops[0]: expected an object");
    expect_invalid(HYBRID_8_5 "{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'keys': [1]}]}",
                   "ops[0].keys[0]: expected a string of at most 63 bytes");
}

/* Errors found by the library (validation, planning) name their stage. */
static void test_library_errors(void **state) {
    (void)state;
    expect_invalid_prefix(ONE_LAYER_HEAD "{'name': 'k', 'attn_type': 'SlidingWindow', 'num_head': 1, 'dim': 4,"
                                         " 'dtype': 'f32', 'block_size': 4}]}],"
                                         " 'block_num': {'SlidingWindow': 5}, 'ops': []}",
                          "{'error': 'layers: ");
    expect_invalid_prefix(ONE_LAYER_HEAD FULL_ENTRY "]}], 'block_num': {'Other': 5}, 'ops': []}",
                          "{'error': 'block_num: ");
    expect_invalid_prefix(ONE_LAYER_HEAD FULL_ENTRY "]}], 'plan': {'mode': 'online', 'kv_memory_bytes': 4096,"
                                                    " 'max_concurrency': 1, 'max_prefill_tokens': 100000}, 'ops': []}",
                          "{'error': 'plan: ");
}

/* The built-in demo trace is the example file, replays cleanly, and shows
 * pressure: some allocations refused, every block back at the end. */
static void test_demo_trace(void **state) {
    (void)state;
    const char *dir = getenv("KVC_EXAMPLES_DIR");
    assert_non_null(dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/hybrid_pressure.json", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char file[1 << 16];
    size_t n = fread(file, 1, sizeof file - 1, f);
    fclose(f);
    file[n] = '\0';
    assert_string_equal(file, kvc_demo_trace);

    output got = {0};
    assert_int_equal(replay_into(file, true, &got), 0);
    assert_null(strstr(got.text, "\"error\""));
    assert_non_null(strstr(got.text, "\"ok\": false"));
    const char *last = strstr(got.text, "{\"usage\": \"FullAttention:1/17,SlidingWindow:1/13\"}\n");
    assert_non_null(last);
    assert_int_equal(last[strlen("{\"usage\": \"FullAttention:1/17,SlidingWindow:1/13\"}\n")], '\0');
    free(got.text);

    char arg0[] = "demo";
    char *argv[] = {arg0, NULL};
    assert_int_equal(kvc_cmd_trace_demo(1, argv), 0);
}

/* Prefix caching: token runs, the hit a new request takes, cache salts,
 * cached-free counts and the statistics line of --usage. */
static void test_prefix_caching(void **state) {
    (void)state;
    expect_replay(
        "{'max_model_len': 64, 'layers': [{'caches': [" FULL_ENTRY "]}],"
        " 'block_num': {'FullAttention': 8}, 'prefix_caching': {'salt': 1}, 'ops': ["
        "{'op': 'allocate', 'request': 1, 'new_tokens': 10, 'tokens': [[1, 10]]},"
        "{'op': 'free', 'request': 1},"
        "{'op': 'allocate', 'request': 2, 'new_tokens': 12, 'tokens': [[1, 8], 50, 51, 52, 53]},"
        "{'op': 'allocate', 'request': 3, 'new_tokens': 10, 'tokens': [[1, 10]], 'cache_salt': 'other'},"
        "{'op': 'allocate', 'request': 2, 'computed_tokens': 12, 'new_tokens': 1,"
        " 'tokens': [[1, 8], [50, 5]]}]}",
        true, 0,
        "{'block_num': {'FullAttention': 8}}\n"
        "{'op': 0, 'ok': true, 'blocks': {'FullAttention': [1, 2, 3]}, 'free': {'FullAttention': 4},"
        " 'cached_free': {'FullAttention': 0}}\n"
        "{'usage': 'FullAttention:4/8'}\n"
        "{'prefix': {'queries': 1, 'hits': 0, 'query_tokens': 10, 'hit_tokens': 0, 'evictions': 0,"
        " 'cached_blocks': 2}}\n"
        "{'op': 1, 'ok': true, 'blocks': {'FullAttention': []}, 'free': {'FullAttention': 7},"
        " 'cached_free': {'FullAttention': 2}}\n"
        "{'usage': 'FullAttention:1/8'}\n"
        "{'prefix': {'queries': 1, 'hits': 0, 'query_tokens': 10, 'hit_tokens': 0, 'evictions': 0,"
        " 'cached_blocks': 2}}\n"
        "{'op': 2, 'ok': true, 'hit': 8, 'blocks': {'FullAttention': [1, 2, 3]}, 'free': {'FullAttention': 4},"
        " 'cached_free': {'FullAttention': 0}}\n"
        "{'usage': 'FullAttention:4/8'}\n"
        "{'prefix': {'queries': 2, 'hits': 1, 'query_tokens': 22, 'hit_tokens': 8, 'evictions': 0,"
        " 'cached_blocks': 3}}\n"
        "{'op': 3, 'ok': true, 'blocks': {'FullAttention': [4, 5, 6]}, 'free': {'FullAttention': 1},"
        " 'cached_free': {'FullAttention': 0}}\n"
        "{'usage': 'FullAttention:7/8'}\n"
        "{'prefix': {'queries': 3, 'hits': 1, 'query_tokens': 32, 'hit_tokens': 8, 'evictions': 0,"
        " 'cached_blocks': 5}}\n"
        "{'op': 4, 'ok': true, 'blocks': {'FullAttention': [1, 2, 3, 7]}, 'free': {'FullAttention': 0},"
        " 'cached_free': {'FullAttention': 0}}\n"
        "{'usage': 'FullAttention:8/8'}\n"
        "{'prefix': {'queries': 3, 'hits': 1, 'query_tokens': 32, 'hit_tokens': 8, 'evictions': 0,"
        " 'cached_blocks': 5}}\n");
    static const struct {
        const char *rest, *message;
    } bad[] = {
        {"'prefix_caching': {'salt': -1}, 'ops': []", "prefix_caching.salt -1 must be an integer >= 0"},
        {"'prefix_caching': {'seed': 1}, 'ops': []", "prefix_caching: unknown field \\'seed\\'"},
        {"'ops': [{'op': 'allocate', 'request': 1, 'new_tokens': 5, 'tokens': [1, 2]}]",
         "ops[0].tokens: 2 token ids do not cover computed_tokens + external_computed_tokens + new_tokens = 5"},
        {"'ops': [{'op': 'allocate', 'request': 1, 'external_computed_tokens': 3, 'new_tokens': 1, 'tokens': [1, 2]}]",
         "ops[0].tokens: 2 token ids do not cover computed_tokens + external_computed_tokens + new_tokens = 4"},
        {"'ops': [{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'tokens': [[1, 17]]}]",
         "ops[0].tokens: more than max_model_len 16 token ids"},
        {"'ops': [{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'tokens': [[1, 0]]}]",
         "ops[0].tokens[0].count 0 must be an integer >= 1"},
        {"'ops': [{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'tokens': [[1]]}]",
         "ops[0].tokens[0]: expected a token id or a run [first, count]"},
        {"'ops': [{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'tokens': [[2147483647, 2]]}]",
         "ops[0].tokens[0]: run [2147483647, 2] goes past token id 2147483647"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char trace[512];
        snprintf(trace, sizeof trace,
                 "{'max_model_len': 16, 'layers': [{'caches': [" FULL_ENTRY
                 "]}], 'block_num': {'FullAttention': 8}, %s}",
                 bad[i].rest);
        expect_invalid(trace, bad[i].message);
    }
}

/* Issue 24: external computed tokens after the hit the replay finds (the
 * hit covers 8 of the op's 12 computed + external tokens, so 4 are external
 * after it) are cached once the op's tokens are computed: a query then hits
 * 12; without tokens (no prompt) or negative, the manager's refusal. */
static void test_external_computed_tokens(void **state) {
    (void)state;
    expect_replay(
        "{'max_model_len': 64, 'layers': [{'caches': [" FULL_ENTRY "]}],"
        " 'block_num': {'FullAttention': 8}, 'prefix_caching': {}, 'ops': ["
        "{'op': 'allocate', 'request': 1, 'new_tokens': 9, 'tokens': [[1, 9]]},"
        "{'op': 'free', 'request': 1},"
        "{'op': 'allocate', 'request': 2, 'computed_tokens': 4, 'external_computed_tokens': 8,"
        " 'new_tokens': 2, 'tokens': [[1, 8], [50, 8]]},"
        "{'op': 'query', 'tokens': [[1, 8], [50, 8]]},"
        "{'op': 'allocate', 'request': 3, 'external_computed_tokens': 3, 'new_tokens': 1},"
        "{'op': 'allocate', 'request': 3, 'external_computed_tokens': -1, 'new_tokens': 1}]}",
        false, 0,
        "{'block_num': {'FullAttention': 8}}\n"
        "{'op': 0, 'ok': true, 'blocks': {'FullAttention': [1, 2, 3]}, 'free': {'FullAttention': 4},"
        " 'cached_free': {'FullAttention': 0}}\n"
        "{'op': 1, 'ok': true, 'blocks': {'FullAttention': []}, 'free': {'FullAttention': 7},"
        " 'cached_free': {'FullAttention': 2}}\n"
        "{'op': 2, 'ok': true, 'hit': 8, 'blocks': {'FullAttention': [1, 2, 3, 4]},"
        " 'free': {'FullAttention': 3}, 'cached_free': {'FullAttention': 0}}\n"
        "{'op': 3, 'ok': true, 'hit': 12, 'free': {'FullAttention': 3}, 'cached_free': {'FullAttention': 0}}\n"
        "{'op': 4, 'error': 'request 3: 3 external computed tokens need the prompt (they are its"
        " tokens after the hit, given with its first allocation)'}\n"
        "{'op': 5, 'error': 'request 3: token counts must not be negative (computed 0, external computed -1,"
        " new 1, lookahead 0, reserved 0)'}\n");
}

/* Issue 23 #1, #2 and the trace contract: a request's salt is fixed by its
 * first allocate (tokens computed beyond the hit, or no tokens at all), salts
 * are bytes (\u0000 counts), "hit" shows only a hit the allocation took, and
 * the query and clear ops. */
static void test_salts_queries_and_hits(void **state) {
    (void)state;
    expect_replay(
        "{'max_model_len': 64, 'layers': [{'caches': [" FULL_ENTRY "]}], 'block_num': {'FullAttention': 12},"
        " 'prefix_caching': {}, 'ops': ["
        "{'op': 'allocate', 'request': 1, 'computed_tokens': 8, 'new_tokens': 4, 'tokens': [[1, 12]],"
        " 'cache_salt': 'tenant-a'},"
        "{'op': 'free', 'request': 1},"
        "{'op': 'allocate', 'request': 2, 'new_tokens': 13, 'tokens': [[1, 13]]},"
        "{'op': 'query', 'tokens': [[1, 13]], 'cache_salt': 'tenant-a'},"
        "{'op': 'allocate', 'request': 3, 'computed_tokens': 13, 'new_tokens': 3, 'tokens': [[1, 16]],"
        " 'cache_salt': 'tenant-a'},"
        "{'op': 'allocate', 'request': 4, 'new_tokens': 4, 'cache_salt': 'a\\u0000x'},"
        "{'op': 'allocate', 'request': 4, 'computed_tokens': 4, 'new_tokens': 4, 'tokens': [[50, 8]]},"
        "{'op': 'query', 'tokens': [[50, 9]], 'cache_salt': 'a\\u0000x'},"
        "{'op': 'query', 'tokens': [[50, 9]], 'cache_salt': 'a\\u0000y'},"
        "{'op': 'allocate', 'request': 4, 'computed_tokens': 8, 'new_tokens': 1, 'tokens': [[50, 9]],"
        " 'cache_salt': 'a'},"
        "{'op': 'allocate', 'request': 5, 'new_tokens': 13, 'tokens': [[1, 13]], 'cache_salt': 'tenant-a'},"
        "{'op': 'free', 'request': 3},"
        "{'op': 'allocate', 'request': 5, 'new_tokens': 13, 'tokens': [[1, 13]], 'cache_salt': 'tenant-a'},"
        "{'op': 'clear'},"
        "{'op': 'query', 'tokens': [[1, 13]], 'cache_salt': 'tenant-a'}]}",
        false, 0,
        "{'block_num': {'FullAttention': 12}}\n"
        /* salted, computed beyond its (empty) hit */
        "{'op': 0, 'ok': true, 'blocks': {'FullAttention': [1, 2, 3]}, 'free': {'FullAttention': 8},"
        " 'cached_free': {'FullAttention': 0}}\n"
        "{'op': 1, 'ok': true, 'blocks': {'FullAttention': []}, 'free': {'FullAttention': 11},"
        " 'cached_free': {'FullAttention': 3}}\n"
        /* no salt: none of tenant-a's blocks */
        "{'op': 2, 'ok': true, 'blocks': {'FullAttention': [4, 5, 6, 7]}, 'free': {'FullAttention': 7},"
        " 'cached_free': {'FullAttention': 3}}\n"
        "{'op': 3, 'ok': true, 'hit': 12, 'free': {'FullAttention': 7}, 'cached_free': {'FullAttention': 3}}\n"
        /* computed 13 beyond the hit of 12: no hit taken, none printed */
        "{'op': 4, 'ok': true, 'blocks': {'FullAttention': [8, 9, 10, 11]}, 'free': {'FullAttention': 3},"
        " 'cached_free': {'FullAttention': 3}}\n"
        /* salted without tokens; the salt holds for its later ops */
        "{'op': 5, 'ok': true, 'blocks': {'FullAttention': [3]}, 'free': {'FullAttention': 2},"
        " 'cached_free': {'FullAttention': 2}}\n"
        "{'op': 6, 'ok': true, 'blocks': {'FullAttention': [3, 2]}, 'free': {'FullAttention': 1},"
        " 'cached_free': {'FullAttention': 1}}\n"
        "{'op': 7, 'ok': true, 'hit': 8, 'free': {'FullAttention': 1}, 'cached_free': {'FullAttention': 1}}\n"
        "{'op': 8, 'ok': true, 'hit': 0, 'free': {'FullAttention': 1}, 'cached_free': {'FullAttention': 1}}\n"
        "{'op': 9, 'error': 'request 4: cache_salt is not the salt its first allocation fixed'}\n"
        /* refused for lack of blocks: no hit taken */
        "{'op': 10, 'ok': false, 'blocks': {'FullAttention': []}, 'free': {'FullAttention': 1},"
        " 'cached_free': {'FullAttention': 1}}\n"
        "{'op': 11, 'ok': true, 'blocks': {'FullAttention': []}, 'free': {'FullAttention': 5},"
        " 'cached_free': {'FullAttention': 2}}\n"
        "{'op': 12, 'ok': true, 'hit': 4, 'blocks': {'FullAttention': [1, 10, 9, 8]}, 'free': {'FullAttention': 1},"
        " 'cached_free': {'FullAttention': 1}}\n"
        "{'op': 13, 'ok': true, 'free': {'FullAttention': 1}, 'cached_free': {'FullAttention': 0}}\n"
        "{'op': 14, 'ok': true, 'hit': 0, 'free': {'FullAttention': 1}, 'cached_free': {'FullAttention': 0}}\n");
}

/* Issue 23 #2, #5, #7: names holding a NUL byte, token runs past the trace's
 * limit and request ids that are not exact integers are refused by name,
 * before anything is expanded or replayed. */
static void test_nul_names_token_bounds_and_ids(void **state) {
    (void)state;
    expect_invalid(ONE_LAYER_HEAD "{'name': 'k\\u0000x', 'attn_type': 'FullAttention', 'num_head': 2, 'dim': 4,"
                                  " 'dtype': 'f32', 'block_size': 4}" ONE_LAYER_TAIL,
                   "layers[0].caches[0].name: the string holds a NUL byte (\\\\u0000)");
    expect_invalid(ONE_LAYER_HEAD FULL_ENTRY "]}], 'block_num': {'FullAttention\\u0000x': 5}, 'ops': []}",
                   "block_num: a member name holds a NUL byte (\\\\u0000)");
    expect_invalid(HYBRID_8_5 "{'op': 'free\\u0000', 'request': 1}]}",
                   "ops[0].op: the string holds a NUL byte (\\\\u0000)");
    expect_invalid(HYBRID_8_5 "{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'keys': ['FullAttention\\u0000']}]}",
                   "ops[0].keys[0]: the string holds a NUL byte (\\\\u0000)");
    expect_invalid(HYBRID_8_5 "{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'cache_salt': 7}]}",
                   "ops[0].cache_salt: expected a string");
    expect_invalid(HYBRID_8_5 "{'op': 'query', 'cache_salt': 'x'}]}",
                   "ops[0].tokens: missing (a query looks up token ids)");
    expect_invalid(HYBRID_8_5 "{'op': 'clear', 'request': 1}]}", "ops[0]: unknown field \\'request\\'");
    expect_invalid("{'max_model_len': 2147483647, 'layers': [{'caches': [" FULL_ENTRY "]}],"
                   " 'block_num': {'FullAttention': 8}, 'ops': ["
                   "{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'tokens': [[0, 2147483647]]}]}",
                   "ops[0].tokens: the ops list more than 16777216 token ids in all, the limit of a replay");
    expect_invalid("{'max_model_len': 16777216, 'layers': [{'caches': [" FULL_ENTRY "]}],"
                   " 'block_num': {'FullAttention': 8}, 'ops': ["
                   "{'op': 'query', 'tokens': [[0, 16777000]]},"
                   "{'op': 'allocate', 'request': 1, 'new_tokens': 1, 'tokens': [[0, 1000]]}]}",
                   "ops[1].tokens: the ops list more than 16777216 token ids in all, the limit of a replay");
    static const char *const bad_ids[][2] = {
        {"9007199254740992", "ops[0].request 9007199254740992 must be an integer in [0, 9007199254740991]"},
        {"9007199254740993", "ops[0].request 9007199254740992 must be an integer in [0, 9007199254740991]"},
        {"1.5", "ops[0].request 1.5 must be an integer in [0, 9007199254740991]"},
        {"-1", "ops[0].request -1 must be an integer in [0, 9007199254740991]"},
    };
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        char trace[512], message[256];
        snprintf(trace, sizeof trace, HYBRID_8_5 "{'op': 'free', 'request': %s}]}", bad_ids[i][0]);
        snprintf(message, sizeof message, "%s (request ids are exact integers in [0, 2^53 - 1])", bad_ids[i][1]);
        expect_invalid(trace, message);
    }
    expect_replay("{'max_model_len': 8, 'layers': [{'caches': [" FULL_ENTRY "]}], 'block_num': {'FullAttention': 4},"
                  " 'ops': [{'op': 'allocate', 'request': 9007199254740991, 'new_tokens': 1},"
                  " {'op': 'free', 'request': 9007199254740991}]}",
                  false, 0,
                  "{'block_num': {'FullAttention': 4}}\n"
                  "{'op': 0, 'ok': true, 'blocks': {'FullAttention': [1]}, 'free': {'FullAttention': 2}}\n"
                  "{'op': 1, 'ok': true, 'blocks': {'FullAttention': []}, 'free': {'FullAttention': 3}}\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sliding_window_8_1),
        cmocka_unit_test(test_reservation_8_3),
        cmocka_unit_test(test_mamba_8_4),
        cmocka_unit_test(test_two_phase_8_5),
        cmocka_unit_test(test_keys_and_clamp),
        cmocka_unit_test(test_op_errors),
        cmocka_unit_test(test_invalid_files),
        cmocka_unit_test(test_invalid_ops),
        cmocka_unit_test(test_library_errors),
        cmocka_unit_test(test_demo_trace),
        cmocka_unit_test(test_prefix_caching),
        cmocka_unit_test(test_salts_queries_and_hits),
        cmocka_unit_test(test_nul_names_token_bounds_and_ids),
        cmocka_unit_test(test_external_computed_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
