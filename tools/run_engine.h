/* `kvcache run` through the engine (run_engine.c): what the standalone runner
 * cannot do, a token at a time. */
#ifndef KVC_TOOLS_RUN_ENGINE_H
#define KVC_TOOLS_RUN_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/engine.h"

typedef struct kvc_run_engine_opts {
    kvc_sampling_params sampling; /* temperature 0: greedy */
    int32_t eos_id;               /* -1: none; a prompt stops after emitting it */
    bool stream;                  /* print each token as its step ends */
    int64_t max_new_tokens;
    kvc_engine_adapter_params adapter; /* latent (mode 3) and the cache knobs; managed caches */
} kvc_run_engine_opts;

/* Runs the n prompts (ids packed, lens[n]) as requests of one engine over m
 * (paged caches, every prompt admitted at once) and prints the generated ids:
 * with o->stream a line "B: ID" per token as its step ends (B the prompt's
 * index), flushed each step; else one comma-separated line per prompt at the
 * end. Either way ends with a line per prompt naming why it stopped. Returns
 * the exit status (0, or 1 after a message on stderr). */
int kvc_run_engine(const kvc_model *m, const kvc_run_engine_opts *o, const int32_t *ids, const int64_t *lens,
                   int64_t n);

/* The pieces kvc_run_engine is made of, for the P/D run (run_pd.c): the engine params it sizes for
 * the prompts (role BOTH), the request of prompt b, the streaming of prompt b's new tokens ("B: ID"
 * lines from *printed on; buf [cap]) and the end of its output (its ids unless streamed, and on
 * stderr why it stopped; buf [o->max_new_tokens]). */
kvc_engine_params kvc_run_engine_params(const kvc_run_engine_opts *o, const int64_t *lens, int64_t n);
kvc_engine_request kvc_run_engine_request(const kvc_run_engine_opts *o, int64_t b, const int32_t *prompt,
                                          int64_t n_prompt);
kvc_status kvc_run_engine_stream(const kvc_engine *e, int64_t b, int32_t *buf, int64_t cap, int64_t *printed);
kvc_status kvc_run_engine_print(const kvc_engine *e, const kvc_run_engine_opts *o, int64_t b, int32_t *buf);

#endif
