/* One line per `kvcache` subcommand. */
#include <stddef.h>

#include "bench.h"
#include "cmd_plan.h"
#include "cmd_run.h"
#include "commands.h"
#include "demo_engine.h"
#include "trace_replay.h"

const kvc_command kvc_commands[] = {
    {"bench", "run a benchmark (manager, engine, attention) next to its baseline", kvc_cmd_bench},
    {"trace", "replay a JSON trace against the manager, print JSON Lines", kvc_cmd_trace},
    {"demo", "the engine on built-in models: mixed workload, KV pressure, checked (--trace: manager trace)", kvc_cmd_engine_demo},
    {"plan", "the KV cache plan of a Hugging Face config.json (mode, layers, caches, memory)", kvc_cmd_plan},
    {"run", "run a Hugging Face model directory through the standalone runner (greedy ids)", kvc_cmd_run},
    {NULL, NULL, NULL},
};
