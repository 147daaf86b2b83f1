/* `kvcache trace FILE|- [--usage] [--check] [--max-blocks N]`: replays a JSON
 * trace against the request-level manager and prints JSON Lines (format:
 * trace_replay.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "base/internal.h"
#include "commands.h"
#include "plot_data.h"
#include "trace_replay.h"

static void trace_usage(FILE *f) {
    fprintf(f,
            "usage: kvcache trace FILE|- [--usage] [--check] [--max-blocks N] [--plot FILE.png]\n\n"
            "Replays a JSON trace (a cache description, block counts or a plan, and a list of\n"
            "allocate, free, query and clear ops) against the request-level manager and prints\n"
            "JSON Lines:\n"
            "  {\"block_num\": {KEY: N, ...}}                          the pools\n"
            "  {\"op\": I, \"ok\": B, \"blocks\": {KEY: [ids]}, \"free\": {KEY: N}}   one per op\n"
            "  {\"op\": I, \"error\": MSG}                               an op the manager refuses\n"
            "Request ids are integers in [0, 2^53 - 1] (JSON numbers beyond are not exact).\n"
            "An invalid trace prints one {\"error\": MSG} line naming the position and exits 2;\n"
            "a replay that cannot go on (out of memory, a broken invariant) ends with an\n"
            "{\"error\": MSG} line and exits 1, as does a failed write of the output.\n\n"
            "Prefix caching (docs/prefix-caching.md): a top-level\n"
            "  \"prefix_caching\": {\"salt\": N, \"state_snapshot_interval\": TOKENS}   (both optional)\n"
            "turns it on. An allocate op then may carry the request's token ids so far,\n"
            "  \"tokens\": [7, [100, 1024], 3]   ids and runs [first, count] of consecutive ids,\n"
            "(at most max_model_len per op and %" PRId64 " in all, counted before they are\n"
            "expanded) and a \"cache_salt\" string: bytes, \\u0000 included, fixed by the request's\n"
            "first allocate (tokens or not); only requests with the same salt share blocks.\n"
            "The first allocate of a request with tokens takes the longest cached prefix of\n"
            "them when it covers the op's computed_tokens (its op line gains \"hit\": L, only\n"
            "then); every allocate with tokens marks computed_tokens + new_tokens of them\n"
            "computed. \"external_computed_tokens\": E on a first allocate with tokens: a KV\n"
            "connector's tokens (kvc_slot_request.num_external_computed_tokens); those of\n"
            "computed_tokens + E the hit does not cover follow it, counted computed too.\n"
            "Two more ops:\n"
            "  {\"op\": \"query\", \"tokens\": [...], \"cache_salt\": S}   the cached prefix, taking\n"
            "                                   nothing: {\"op\": I, \"ok\": true, \"hit\": L, ...}\n"
            "  {\"op\": \"clear\"}                  empties the prefix cache\n"
            "Op lines gain \"cached_free\": {KEY: N}, the free blocks still cached.\n\n"
            "  --usage         also print {\"usage\": \"key:used/total,...\"} after every op line, and\n"
            "                  with prefix caching {\"prefix\": {queries, hits, query_tokens, hit_tokens,\n"
            "                  evictions, cached_blocks}}\n"
            "  --check         check the manager's invariants after every op (time grows with\n"
            "                  the pool size per op)\n"
            "  --max-blocks N  largest number of blocks of all pools together (default %" PRId64 ";\n"
            "                  at most %" PRId32 ")\n"
            "  --plot FILE.png draw block usage per key over the ops, prefix hits marked (implies\n"
            "                  --usage; writes the lines to FILE.png.jsonl and runs PYTHON -m\n"
            "                  kvcache.plot on them: $KVC_PYTHON, else build/python-venv's, else python3)\n"
            "The input file is at most %zu bytes.\n",
            KVC_TRACE_MAX_TOKENS, KVC_TRACE_DEFAULT_MAX_BLOCKS, INT32_MAX, KVC_MAX_INPUT_BYTES);
}

int kvc_cmd_trace(int argc, char **argv) {
    const char *path = NULL, *plot = NULL;
    kvc_trace_options opts = {.max_blocks = KVC_TRACE_DEFAULT_MAX_BLOCKS};
    kvc_arg_seen seen = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--usage") == 0) {
            opts.print_usage = true;
        } else if (strcmp(argv[i], "--plot") == 0 && i + 1 < argc) {
            if (kvc_arg_repeated(&seen, "trace", argv[i]) || !kvc_plot_path_ok("trace", argv[i + 1])) return 2;
            plot = argv[++i];
            opts.print_usage = true; /* the usage lines are what the picture draws */
        } else if (strcmp(argv[i], "--check") == 0) {
            opts.check_invariants = true;
        } else if (strcmp(argv[i], "--max-blocks") == 0) {
            if (!kvc_arg_int(i + 1 < argc ? argv[i + 1] : NULL, 1, INT32_MAX, &opts.max_blocks)) { /* int32 ids */
                fprintf(stderr, "kvcache trace: --max-blocks expects an integer in [1, %" PRId32 "], got \"%s\"\n",
                        INT32_MAX, i + 1 < argc ? argv[i + 1] : "");
                return 2;
            }
            if (kvc_arg_repeated(&seen, "trace", argv[i])) return 2;
            i++;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            trace_usage(stdout);
            return 0;
        } else if (path == NULL && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) {
            path = argv[i];
        } else {
            fprintf(stderr, "kvcache trace: unexpected argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (path == NULL) {
        trace_usage(stderr);
        return 2;
    }
    char *json = NULL;
    size_t len = 0;
    kvc_status st = kvci_read_file(path, KVC_MAX_INPUT_BYTES, &json, &len);
    if (st != KVC_OK) {
        fprintf(stderr, "kvcache trace: %s\n", kvc_last_error());
        return st == KVC_ENOMEM ? 1 : 2;
    }
    if (plot == NULL) {
        int rc = kvc_trace_replay(json, len, stdout, &opts);
        kvci_free(json);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "kvcache trace: cannot write the output (%s)\n", strerror(errno));
            return 1;
        }
        return rc;
    }
    /* --plot: the lines go to the picture's data file, then from it to stdout */
    char *data_path = kvc_plot_data_path(plot, ".jsonl");
    FILE *out = data_path != NULL ? fopen(data_path, "w+b") : NULL;
    if (out == NULL) {
        if (data_path != NULL) fprintf(stderr, "kvcache trace: cannot write %s\n", data_path);
        kvci_free(data_path);
        kvci_free(json);
        return 1;
    }
    int rc = kvc_trace_replay(json, len, out, &opts);
    kvci_free(json);
    char buf[8192];
    rewind(out);
    for (size_t n; (n = fread(buf, 1, sizeof buf, out)) > 0;)
        if (fwrite(buf, 1, n, stdout) != n) break;
    bool bad = ferror(out) != 0;
    bad |= fclose(out) != 0;
    if (bad || fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "kvcache trace: cannot write the output (%s)\n", strerror(errno));
        rc = 1;
    }
    if (rc == 0) rc = kvc_plot_run("trace", data_path, plot);
    kvci_free(data_path);
    return rc;
}
