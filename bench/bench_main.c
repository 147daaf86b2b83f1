/* `kvcache bench WHAT [--json]`: finds the benchmark and runs it. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench.h"

double kvc_bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench_usage(FILE *f) {
    fprintf(f, "usage: kvcache bench WHAT [--json]\n\nbenchmarks:\n");
    for (const kvc_bench_entry *b = kvc_benches; b->name != NULL; b++) fprintf(f, "  %-10s %s\n", b->name, b->summary);
}

int kvc_cmd_bench(int argc, char **argv) {
    const char *what = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            bench_usage(stdout);
            return 0;
        } else if (what == NULL) {
            what = argv[i];
        } else {
            fprintf(stderr, "kvcache bench: unexpected argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (what == NULL) {
        bench_usage(stderr);
        return 2;
    }
    for (const kvc_bench_entry *b = kvc_benches; b->name != NULL; b++)
        if (strcmp(what, b->name) == 0) return b->run(json);
    fprintf(stderr, "kvcache bench: unknown benchmark \"%s\"\n", what);
    bench_usage(stderr);
    return 2;
}
