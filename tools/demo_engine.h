/* `kvcache demo`: the engine on the built-in models (demo_engine.c). */
#ifndef KVC_TOOLS_DEMO_ENGINE_H
#define KVC_TOOLS_DEMO_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

/* Parses `demo` arguments: -1 when a demo should run (*trace_at > 0: the
 * trace demo from that argument on; else the engine demo of *n_requests
 * requests per model; *json: --json came before --trace or the engine demo
 * prints JSON), otherwise the exit status (0 after --help, 2 on bad
 * usage, with the message printed). The fuzz target calls it alone. */
int kvc_engine_demo_parse(int argc, char **argv, int64_t *n_requests, int *trace_at, bool *json);
int kvc_cmd_engine_demo(int argc, char **argv);

#endif
