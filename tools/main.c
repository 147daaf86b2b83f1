/* `kvcache COMMAND [ARGS]`: dispatches to the command table. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "kvcache/version.h"

/* libgomp reads its wait policy once, when it is loaded, before main. Its default lets a thread
 * that ends a parallel region spin up to 300,000 pauses before it sleeps: on cores shared with other
 * jobs that spinning holds the core a descheduled teammate needs, and a decode step opens ~200
 * regions (6-27x slower steps measured); passive waiting (sleep at once) costs every region a wake-up
 * instead (q8_0 decode 49 ms against 27-28 ms on a quiet machine). A bounded spin of 10,000 pauses
 * kept the quiet machine's 28 ms and, beside two busy jobs, 60 ms (docs/runtime.md). Unless the user
 * chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT set), the command starts itself again once with
 * GOMP_SPINCOUNT=10000; if that fails it runs as it is. */
static void bound_spin_wait(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("GOMP_SPINCOUNT"); /* exec failed: the policy of this process stays the default */
}

int main(int argc, char **argv) {
    bound_spin_wait(argv);
    if (argc < 2) {
        kvc_commands_usage(stderr);
        return 2;
    }
    const bool help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0;
    if ((help || strcmp(argv[1], "--version") == 0) && argc > 2) {
        fprintf(stderr, "kvcache: %s takes no arguments, got \"%s\"\n", argv[1], argv[2]);
        return 2;
    }
    if (help) {
        kvc_commands_usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("kvcache %s\n", kvc_version_string());
        return 0;
    }
    for (const kvc_command *c = kvc_commands; c->name != NULL; c++)
        if (strcmp(argv[1], c->name) == 0) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "kvcache: unknown command \"%s\"\n", argv[1]);
    kvc_commands_usage(stderr);
    return 2;
}
