/* The `kvcache` subcommands. Each returns the process exit status
 * (0 success, 1 failure of the job, 2 bad usage or bad input). */
#ifndef KVC_TOOLS_COMMANDS_H
#define KVC_TOOLS_COMMANDS_H

#include <stdio.h>

typedef int (*kvc_command_fn)(int argc, char **argv);

typedef struct kvc_command {
    const char *name;
    const char *summary;
    kvc_command_fn run;
} kvc_command;

/* The command table (tools/command_table.c); terminated by a NULL name. */
extern const kvc_command kvc_commands[];

/* `kvcache --help`: every command and every benchmark, from their tables. */
void kvc_commands_usage(FILE *f);

#endif
