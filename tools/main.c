/* `kvcache COMMAND [ARGS]`: dispatches to the command table. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kvcache/version.h"

int main(int argc, char **argv) {
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
