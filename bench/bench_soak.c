/* `kvcache bench soak [--json]`: 1,000,000 requests through the request-level
 * manager and 100,000 through the engine (toy model), with the heap in use,
 * the resident set and the peak resident set read after 1/8, 1/4, 1/2 and all
 * of the requests. The baseline of each row is the first checkpoint of the
 * same run: flat memory reads +0 there. */
#include <stdio.h>

#include "bench.h"
#include "kvcache/base.h"
#include "soak.h"

#define SOAK_MANAGER_REQUESTS 1000000
#define SOAK_ENGINE_REQUESTS  100000

static void report(const char *what, const kvc_soak_figures *f, bool json) {
    if (json) {
        printf("{\"bench\": \"soak\", \"what\": \"%s\", \"requests\": %lld, \"seconds\": %.3f, \"refused\": %lld, "
               "\"preemptions\": %lld, \"steps\": %lld, \"checkpoints\": [",
               what, (long long)f->requests, f->seconds, (long long)f->refused, (long long)f->preemptions,
               (long long)f->steps);
        for (int i = 0; i < KVC_SOAK_CHECKPOINTS; i++)
            printf("%s{\"done\": %lld, \"heap_bytes\": %lld, \"rss_kib\": %lld, \"peak_rss_kib\": %lld}", i ? ", " : "",
                   (long long)f->done_at[i], (long long)f->heap_bytes[i], (long long)f->rss_kib[i],
                   (long long)f->peak_rss_kib[i]);
        printf("]}\n");
        return;
    }
    printf("%s: %lld requests in %.2f s (%.0f requests/s), %lld refused, %lld preemptions, %lld steps\n", what,
           (long long)f->requests, f->seconds, (double)f->requests / f->seconds, (long long)f->refused,
           (long long)f->preemptions, (long long)f->steps);
    printf("  %-10s %14s %12s %14s %16s\n", "done", "heap bytes", "RSS KiB", "peak RSS KiB", "peak vs first");
    for (int i = 0; i < KVC_SOAK_CHECKPOINTS; i++)
        printf("  %-10lld %14lld %12lld %14lld %+16lld\n", (long long)f->done_at[i], (long long)f->heap_bytes[i],
               (long long)f->rss_kib[i], (long long)f->peak_rss_kib[i],
               (long long)(f->peak_rss_kib[i] - f->peak_rss_kib[0]));
}

int kvc_bench_soak(const kvc_bench_opts *opts) {
    kvc_soak_figures f;
    if (kvc_soak_manager(SOAK_MANAGER_REQUESTS, &f) != KVC_OK) {
        fprintf(stderr, "kvcache bench soak: manager: %s\n", kvc_last_error());
        return 1;
    }
    report("manager", &f, opts->json);
    if (kvc_soak_engine(SOAK_ENGINE_REQUESTS, &f) != KVC_OK) {
        fprintf(stderr, "kvcache bench soak: engine: %s\n", kvc_last_error());
        return 1;
    }
    report("engine", &f, opts->json);
    return 0;
}
