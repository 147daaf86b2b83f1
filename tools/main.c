/* `kvcache COMMAND [ARGS]`: dispatches to the command table. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kvcache/version.h"

static void usage(FILE *f) {
    fprintf(f, "usage: kvcache COMMAND [ARGS...]   (kvcache COMMAND --help for details; kvcache --version)\n\n"
               "commands:\n");
    for (const kvc_command *c = kvc_commands; c->name != NULL; c++) fprintf(f, "  %-8s %s\n", c->name, c->summary);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("kvcache %s\n", kvc_version_string());
        return 0;
    }
    for (const kvc_command *c = kvc_commands; c->name != NULL; c++)
        if (strcmp(argv[1], c->name) == 0) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "kvcache: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
