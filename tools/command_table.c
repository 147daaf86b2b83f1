/* One line per `kvcache` subcommand. */
#include <stddef.h>

#include "bench.h"
#include "commands.h"

const kvc_command kvc_commands[] = {
    {"bench", "run a benchmark (manager, ...) next to its baseline", kvc_cmd_bench},
    {NULL, NULL, NULL},
};
