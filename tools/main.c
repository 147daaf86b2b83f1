/* `kvcache COMMAND [ARGS]`: dispatches to the command table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "kvcache/version.h"

/* libgomp reads its wait policy once, when it is loaded, before main: by default a thread that
 * ends a parallel region spins (up to GOMP_SPINCOUNT pauses) before it sleeps. On cores shared
 * with other jobs that spinning holds the core a descheduled teammate needs, and a decode step
 * opens a region per GEMM: `bench model` measured 6-10x slower steps than with passive waiting
 * (docs/runtime.md). Unless the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT set), the command
 * starts itself again once with OMP_WAIT_POLICY=passive; if that fails it runs as it is. */
static void prefer_passive_wait(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("OMP_WAIT_POLICY"); /* exec failed: the policy of this process stays the default */
}

int main(int argc, char **argv) {
    prefer_passive_wait(argv);
    if (argc < 2) {
        kvc_commands_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
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
