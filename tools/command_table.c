/* One line per `kvcache` subcommand. */
#include <stddef.h>

#include "commands.h"

const kvc_command kvc_commands[] = {
    {NULL, NULL, NULL},
};
