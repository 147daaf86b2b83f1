/* `kvcache run ... --role prefill|decode` under mpirun (run_pd.c): one
 * prefill rank and one decode rank serve the prompts together (docs/pd.md). */
#ifndef KVC_TOOLS_RUN_PD_H
#define KVC_TOOLS_RUN_PD_H

#include "run_engine.h"

typedef struct kvc_run_pd_opts {
    kvc_engine_role role;   /* KVC_ENGINE_ROLE_PREFILL or KVC_ENGINE_ROLE_DECODE */
    int64_t timeout_ms;     /* every wait for the peer: a transfer, or the next request's KV */
    int64_t drop_payload;   /* prefill fault for tests: the prompt whose KV is not sent (its header is); -1 none */
    int64_t exit_after;     /* prefill fault for tests: stop after sending this many prompts; -1 none */
    bool kill;              /* with exit_after: die there by SIGKILL instead of ending cleanly */
    const char *first_line; /* decode: printed first, as `kvcache run` without --role prints it */
} kvc_run_pd_opts;

/* Runs this rank's side over MPI (exactly 2 ranks; the peer is the other one). The prefill rank
 * prefills every prompt and sends each one's KV (its stdout stays empty); the decode rank admits
 * each prompt with the received KV, decodes, and prints what kvc_run_engine prints, after
 * first_line. A prompt whose transfer failed gets an empty output line (unless streamed) and a
 * line on stderr naming the failure; the others are served. Returns the exit status: 0, 1 when
 * something failed (after a message on stderr). */
int kvc_run_pd(const kvc_model *m, const kvc_run_engine_opts *o, const kvc_run_pd_opts *pd, const int32_t *ids,
               const int64_t *lens, int64_t n);

#endif
