/* `kvcache demo --trace` (kvc_cmd_trace_demo; `kvcache demo` itself runs the engine,
 * demo_engine.c): replays the built-in example trace of a hybrid model under
 * memory pressure (examples/hybrid_pressure.json, embedded so that the demo
 * runs from any directory), one readable line per step, then checks the
 * manager's invariants and prints PASS or FAIL. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "trace_replay.h"

/* 4 layers: full attention (0, 2) and sliding window W=32 (1, 3), block size
 * 16; 16 usable full-attention blocks (256 tokens) for four requests of
 * 60-120 tokens, so some admissions are refused until others are freed. */
const char kvc_demo_trace[] =
    "{\n"
    "  \"max_model_len\": 256,\n"
    "  \"layers\": [\n"
    "    {\"caches\": [\n"
    "      {\"name\": \"k_cache\", \"attn_type\": \"FullAttention\", \"num_head\": 2, \"dim\": 64, \"dtype\": "
    "\"bf16\", \"block_size\": 16},\n"
    "      {\"name\": \"v_cache\", \"attn_type\": \"FullAttention\", \"num_head\": 2, \"dim\": 64, \"dtype\": "
    "\"bf16\", \"block_size\": 16}]},\n"
    "    {\"caches\": [\n"
    "      {\"name\": \"k_cache\", \"attn_type\": \"SlidingWindow\", \"num_head\": 2, \"dim\": 64, \"dtype\": "
    "\"bf16\", \"block_size\": 16, \"sliding_window\": 32},\n"
    "      {\"name\": \"v_cache\", \"attn_type\": \"SlidingWindow\", \"num_head\": 2, \"dim\": 64, \"dtype\": "
    "\"bf16\", \"block_size\": 16, \"sliding_window\": 32}]},\n"
    "    {\"caches\": [\n"
    "      {\"name\": \"k_cache\", \"attn_type\": \"FullAttention\", \"num_head\": 2, \"dim\": 64, \"dtype\": "
    "\"bf16\", \"block_size\": 16},\n"
    "      {\"name\": \"v_cache\", \"attn_type\": \"FullAttention\", \"num_head\": 2, \"dim\": 64, \"dtype\": "
    "\"bf16\", \"block_size\": 16}]},\n"
    "    {\"caches\": [\n"
    "      {\"name\": \"k_cache\", \"attn_type\": \"SlidingWindow\", \"num_head\": 2, \"dim\": 64, \"dtype\": "
    "\"bf16\", \"block_size\": 16, \"sliding_window\": 32},\n"
    "      {\"name\": \"v_cache\", \"attn_type\": \"SlidingWindow\", \"num_head\": 2, \"dim\": 64, \"dtype\": "
    "\"bf16\", \"block_size\": 16, \"sliding_window\": 32}]}\n"
    "  ],\n"
    "  \"block_num\": {\"FullAttention\": 17, \"SlidingWindow\": 13},\n"
    "  \"ops\": [\n"
    "    {\"op\": \"allocate\", \"request\": 1, \"new_tokens\": 100},\n"
    "    {\"op\": \"allocate\", \"request\": 2, \"new_tokens\": 60},\n"
    "    {\"op\": \"allocate\", \"request\": 3, \"new_tokens\": 90},\n"
    "    {\"op\": \"allocate\", \"request\": 1, \"computed_tokens\": 100, \"new_tokens\": 1},\n"
    "    {\"op\": \"allocate\", \"request\": 2, \"computed_tokens\": 60, \"new_tokens\": 1},\n"
    "    {\"op\": \"allocate\", \"request\": 1, \"computed_tokens\": 112, \"new_tokens\": 1},\n"
    "    {\"op\": \"allocate\", \"request\": 2, \"computed_tokens\": 64, \"new_tokens\": 1},\n"
    "    {\"op\": \"allocate\", \"request\": 3, \"new_tokens\": 90},\n"
    "    {\"op\": \"free\", \"request\": 1},\n"
    "    {\"op\": \"allocate\", \"request\": 3, \"new_tokens\": 90},\n"
    "    {\"op\": \"allocate\", \"request\": 4, \"new_tokens\": 120},\n"
    "    {\"op\": \"allocate\", \"request\": 3, \"computed_tokens\": 90, \"new_tokens\": 1, \"lookahead_tokens\": 1},\n"
    "    {\"op\": \"free\", \"request\": 2},\n"
    "    {\"op\": \"allocate\", \"request\": 4, \"new_tokens\": 120},\n"
    "    {\"op\": \"allocate\", \"request\": 4, \"computed_tokens\": 120, \"new_tokens\": 1},\n"
    "    {\"op\": \"free\", \"request\": 3},\n"
    "    {\"op\": \"free\", \"request\": 4}\n"
    "  ]\n"
    "}\n";

static void describe_op(const kvc_trace_op *op, char *buf, size_t cap) {
    if (op->kind == KVC_TRACE_FREE) {
        snprintf(buf, cap, "free r%" PRId64, op->request);
        return;
    }
    int n = snprintf(buf, cap, "allocate r%" PRId64 ": %" PRId64 " cached + %" PRId64 " new", op->request,
                     op->computed_tokens, op->new_tokens);
    if (op->lookahead_tokens != 0 && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " + %" PRId64 " ahead", op->lookahead_tokens);
}

static void print_tables(const kvc_manager *m, const kvc_trace_tables *tb) {
    for (int32_t k = 0; k < kvc_manager_n_keys(m); k++) {
        printf("  %s [", kvc_manager_key(m, k));
        for (int64_t j = tb->start[k]; j < tb->start[k + 1]; j++)
            printf("%s%" PRId32, j > tb->start[k] ? " " : "", tb->ids[j]);
        printf("]");
    }
}

static const char *result_name(kvc_status st) {
    switch (st) {
    case KVC_OK: return "ok";
    case KVC_CLAMPED: return "clamped";
    case KVC_NO_SPACE: return "NO SPACE";
    default: return "ERROR";
    }
}

/* Replays every op; returns the number of steps after which something was
 * wrong (an op error or a broken invariant). */
static int run_steps(kvc_trace *t, int *n_refused) {
    kvc_manager *m = t->manager;
    kvc_trace_tables tb = {0};
    char what[128], usage[512];
    int bad = 0;
    printf("%-4s %-44s %-9s %-40s %s\n", "step", "op", "result", "usage (used/total blocks)", "tables of the request");
    for (size_t i = 0; i < t->n_ops; i++) {
        const char *message = NULL;
        kvc_status st = kvc_trace_apply(t, i, &message);
        describe_op(&t->ops[i], what, sizeof what);
        if (kvc_manager_format_usage(m, usage, sizeof usage) < 0) snprintf(usage, sizeof usage, "?");
        printf("%4zu %-44s %-9s %-40s", i, what, result_name(st), usage);
        if (st < 0) {
            printf("  %s", message);
            bad++;
        } else if (t->ops[i].kind == KVC_TRACE_FREE) {
            printf("  (all blocks returned)");
        } else if (kvc_trace_fetch_tables(m, t->ops[i].request, &tb) == KVC_OK) {
            print_tables(m, &tb);
        } else {
            printf("  tables not read: %s", kvc_last_error());
            bad++;
        }
        printf("\n");
        *n_refused += st == KVC_NO_SPACE;
        kvc_status inv = kvc_manager_check_invariants(m);
        if (inv < 0) {
            printf("     %s: %s\n", inv == KVC_ENOMEM ? "invariants not checked" : "invariant broken",
                   kvc_last_error());
            bad++;
        }
    }
    kvc_trace_tables_free(&tb);
    return bad;
}

int kvc_cmd_trace_demo(int argc, char **argv) {
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: kvcache demo --trace [--json]\n\n"
                   "Replays a built-in trace of a 4-layer hybrid model (full attention + sliding window,\n"
                   "block size 16) under memory pressure, one line per step, and checks the manager's\n"
                   "invariants (PASS/FAIL). --json prints the `kvcache trace --usage` output of the same\n"
                   "trace (examples/hybrid_pressure.json).\n");
            return 0;
        } else {
            fprintf(stderr, "kvcache demo: unexpected argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (json) {
        kvc_trace_options opts = {.print_usage = true, .check_invariants = true};
        return kvc_trace_replay(kvc_demo_trace, strlen(kvc_demo_trace), stdout, &opts);
    }
    char err[512];
    kvc_trace *t = NULL;
    if (kvc_trace_load(kvc_demo_trace, strlen(kvc_demo_trace), NULL, &t, err, sizeof err) != KVC_TRACE_EXIT_OK) {
        printf("FAIL: the built-in trace does not load: %s\n", err);
        return 1;
    }
    kvc_manager *m = t->manager;
    printf("kvcache demo: 4-layer hybrid model (full attention in layers 0 and 2, sliding window W=32 in\n"
           "layers 1 and 3, block size 16), max_model_len %" PRId64 "; pools:",
           kvc_manager_max_model_len(m));
    for (int32_t k = 0; k < kvc_manager_n_keys(m); k++)
        printf(" %s %" PRId64 " blocks", kvc_manager_key(m, k), kvc_manager_num_blocks(m, k));
    printf(" (null block 0 included)\n\n");
    int n_refused = 0;
    int bad = run_steps(t, &n_refused);
    bool all_returned = true;
    for (int32_t k = 0; k < kvc_manager_n_keys(m); k++)
        all_returned = all_returned && kvc_manager_num_free(m, k) == kvc_manager_num_blocks(m, k) - 1;
    kvc_status inv = kvc_manager_check_invariants(m);
    const char *verdict = inv == KVC_OK && bad == 0 ? "held after every step"
                          : inv == KVC_ENOMEM       ? "not checked (out of memory)"
                                                    : "BROKEN or not checked (see above)";
    printf("\n%zu steps, %d admissions refused for lack of blocks; invariants %s; every block back in its pool: %s\n",
           t->n_ops, n_refused, verdict, all_returned ? "yes" : "no");
    bool pass = inv == KVC_OK && bad == 0 && all_returned;
    printf("%s\n", pass ? "PASS" : "FAIL");
    kvc_trace_destroy(t);
    return pass ? 0 : 1;
}
