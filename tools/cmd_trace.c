/* `kvcache trace FILE|- [--usage]`: replays a JSON trace against the
 * request-level manager and prints JSON Lines (format: trace_replay.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "plot_data.h"
#include "trace_replay.h"

static void trace_usage(FILE *f) {
    fprintf(f,
            "usage: kvcache trace FILE|- [--usage] [--plot FILE.png]\n\n"
            "Replays a JSON trace (a cache description, block counts or a plan, and a list of\n"
            "allocate/free ops) against the request-level manager and prints JSON Lines:\n"
            "  {\"block_num\": {KEY: N, ...}}                          the pools\n"
            "  {\"op\": I, \"ok\": B, \"blocks\": {KEY: [ids]}, \"free\": {KEY: N}}   one per op\n"
            "  {\"op\": I, \"error\": MSG}                               an op the manager refuses\n"
            "An invalid trace prints one {\"error\": MSG} line naming the position and exits 2.\n\n"
            "Prefix caching (docs/prefix-caching.md): a top-level\n"
            "  \"prefix_caching\": {\"salt\": N, \"state_snapshot_interval\": TOKENS}   (both optional)\n"
            "turns it on. An allocate op then may carry the request's token ids so far,\n"
            "  \"tokens\": [7, [100, 1024], 3]   ids and runs [first, count] of consecutive ids,\n"
            "and a \"cache_salt\" string. The first allocate of a request with tokens takes the\n"
            "longest cached prefix of them (its op line gains \"hit\": L); every allocate with\n"
            "tokens marks computed_tokens + new_tokens of them computed. Op lines gain\n"
            "\"cached_free\": {KEY: N}, the free blocks still cached.\n\n"
            "  --usage   also print {\"usage\": \"key:used/total,...\"} after every op line, and with\n"
            "            prefix caching {\"prefix\": {queries, hits, query_tokens, hit_tokens,\n"
            "            evictions, cached_blocks}}\n"
            "  --plot FILE.png  draw block usage per key over the ops, prefix hits marked (implies\n"
            "            --usage; writes the lines to FILE.png.jsonl and runs python3 -m kvcache.plot on\n"
            "            them, KVC_PYTHON picks the Python)\n");
}

/* Reads the whole stream into a malloc'ed buffer. */
static char *read_all(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *grown = realloc(buf, cap * 2);
        if (grown == NULL) free(buf);
        buf = grown;
        cap *= 2;
    }
    if (buf != NULL && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    *len = n;
    return buf;
}

int kvc_cmd_trace(int argc, char **argv) {
    const char *path = NULL, *plot = NULL;
    kvc_trace_options opts = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--usage") == 0) {
            opts.print_usage = true;
        } else if (strcmp(argv[i], "--plot") == 0 && i + 1 < argc) {
            plot = argv[++i];
            opts.print_usage = true; /* the usage lines are what the picture draws */
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
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (in == NULL) {
        fprintf(stderr, "kvcache trace: cannot open %s\n", path);
        return 2;
    }
    size_t len = 0;
    char *json = read_all(in, &len);
    if (in != stdin) fclose(in);
    if (json == NULL) {
        fprintf(stderr, "kvcache trace: cannot read %s\n", path);
        return 2;
    }
    if (plot == NULL) {
        int rc = kvc_trace_replay(json, len, stdout, &opts);
        free(json);
        return fflush(stdout) == 0 ? rc : 1;
    }
    /* --plot: the same lines go to stdout and to the picture's data file */
    char *lines = NULL;
    size_t n_lines = 0;
    FILE *mem = open_memstream(&lines, &n_lines);
    if (mem == NULL) {
        free(json);
        fprintf(stderr, "kvcache trace: out of memory\n");
        return 1;
    }
    int rc = kvc_trace_replay(json, len, mem, &opts);
    free(json);
    if (fclose(mem) != 0) rc = 1;
    fwrite(lines, 1, n_lines, stdout);
    if (fflush(stdout) != 0) rc = 1;
    if (rc == 0) rc = kvc_plot_emit("trace", lines, n_lines, plot, ".jsonl");
    free(lines);
    return rc;
}
