/* One line per `kvcache` subcommand, and the usage text built from it. */
#include <stddef.h>
#include <stdio.h>

#include "bench.h"
#include "cmd_plan.h"
#include "cmd_run.h"
#include "cmd_serve.h"
#include "commands.h"
#include "demo_engine.h"
#include "trace_replay.h"

const kvc_command kvc_commands[] = {
    {"bench", "run a benchmark next to its baseline (kvcache bench WHAT; WHAT below)", kvc_cmd_bench},
    {"trace", "replay a JSON trace against the manager, print JSON Lines", kvc_cmd_trace},
    {"demo", "the engine on built-in models: mixed workload, KV pressure, checked (--trace: manager trace)",
     kvc_cmd_engine_demo},
    {"plan", "the KV cache plan of a Hugging Face config.json or model directory (layers, caches, memory)",
     kvc_cmd_plan},
    {"run", "run a Hugging Face model directory through the standalone runner (greedy ids)", kvc_cmd_run},
    {"serve",
     "serve a model directory over an OpenAI-compatible HTTP API (--help): runs python -m kvcache.serve,\n"
     "           so the Python package must be installed (pip install \"./python[serve]\") in $KVC_PYTHON,\n"
     "           else build/python-venv, else python3",
     kvc_cmd_serve},
    {NULL, NULL, NULL},
};

void kvc_commands_usage(FILE *f) {
    fprintf(f, "usage: kvcache COMMAND [ARGS...]   (kvcache COMMAND --help for details; kvcache --version)\n\n"
               "commands:\n");
    for (const kvc_command *c = kvc_commands; c->name != NULL; c++) fprintf(f, "  %-8s %s\n", c->name, c->summary);
    fprintf(f, "\nbenchmarks (kvcache bench WHAT):\n");
    for (const kvc_bench_entry *b = kvc_benches; b->name != NULL; b++) fprintf(f, "  %-10s %s\n", b->name, b->summary);
    fprintf(f, "\nOpenMP threads spin at most 10,000 pauses before they sleep (GOMP_SPINCOUNT=10000) unless\n"
               "OMP_WAIT_POLICY or GOMP_SPINCOUNT is set (long spins stall each other on shared cores, sleeping at\n"
               "once slows every parallel region; docs/runtime.md)\n");
}
