/* Soak runs (`kvcache bench soak`, and a short version in the tests): many
 * requests through the request-level manager and through the engine, with
 * memory read at checkpoints to show it stays flat. */
#ifndef KVC_BENCH_SOAK_H
#define KVC_BENCH_SOAK_H

#include <stdint.h>

#include "kvcache/base.h"

#define KVC_SOAK_CHECKPOINTS 4 /* after 1/8, 1/4, 1/2 and all of the requests */

typedef struct kvc_soak_figures {
    int64_t requests;                           /* requests served to the end */
    int64_t refused;                            /* manager: allocations refused for lack of blocks */
    int64_t preemptions;                        /* engine: requests preempted */
    int64_t steps;                              /* engine: steps run */
    double seconds;                             /* wall time of the whole run */
    int64_t done_at[KVC_SOAK_CHECKPOINTS];      /* requests finished at each checkpoint */
    int64_t heap_bytes[KVC_SOAK_CHECKPOINTS];   /* malloc'ed bytes in use (mallinfo2; 0 under ASan) */
    int64_t rss_kib[KVC_SOAK_CHECKPOINTS];      /* resident set now */
    int64_t peak_rss_kib[KVC_SOAK_CHECKPOINTS]; /* peak resident set so far (getrusage) */
} kvc_soak_figures;

/* n_requests requests of 16..271 prompt tokens and 1..16 decode steps each
 * through one hybrid manager (full attention + sliding window, 640 blocks
 * each) with up to 64 live at once; a refused allocation frees the oldest
 * live request first. Every block is back in its pool at the end
 * (KVC_EINTERNAL otherwise). */
kvc_status kvc_soak_manager(int64_t n_requests, kvc_soak_figures *out);

/* n_requests requests of 4..35 prompt tokens and 1..8 new tokens through one
 * engine (max_num_seqs 64, a pool of 33 blocks of 16) over a toy model whose
 * logits depend only on the last token; requests are added as slots free up
 * and released when they finish. */
kvc_status kvc_soak_engine(int64_t n_requests, kvc_soak_figures *out);

#endif
