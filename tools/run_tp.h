/* `kvcache run --tp N`: this process as one of N tensor-parallel ranks that mpirun started
 * (docs/distributed.md). Rank 0 prints what `kvcache run` prints; the other ranks' stdout goes to
 * /dev/null and they print only errors. */
#ifndef KVC_TOOLS_RUN_TP_H
#define KVC_TOOLS_RUN_TP_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/model.h"

/* tp 0: kvc_model_load(dir). tp >= 1: starts MPI, checks that the job has tp ranks and loads this
 * rank's shard of dir (kvc_tp_load_model); refused when kvcache was built without MPI. */
kvc_status kvc_run_load_model(const char *dir, int64_t tp, kvc_model **out);
/* True unless this process is a tensor-parallel rank > 0. */
bool kvc_run_tp_root(void);
/* Ends the tensor-parallel job once the model is destroyed: rc 0 finalizes MPI; any other code aborts
 * every rank (a peer may wait in a collective that never completes). Returns rc. No-op without --tp. */
int kvc_run_tp_finish(int rc);

#endif
