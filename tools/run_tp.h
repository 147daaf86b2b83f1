/* `kvcache run --tp N` and `--role prefill|decode`: this process as one rank of the MPI job that
 * mpirun started (docs/distributed.md, docs/pd.md). One MPI start-up (kvc_comm) serves both: under a
 * role the job's ranks are split by role (MPI_Comm_split) and each role's ranks are its tensor-parallel
 * group. Rank 0 of a tensor-parallel group prints what `kvcache run` prints; the group's other ranks'
 * stdout goes to /dev/null and they print only errors. */
#ifndef KVC_TOOLS_RUN_TP_H
#define KVC_TOOLS_RUN_TP_H

#include <stdbool.h>
#include <stdint.h>

#include "dist/transport.h"
#include "kvcache/engine.h"
#include "kvcache/model.h"

/* Starts MPI for a run with tp >= 1 or a P/D role (role KVC_ENGINE_ROLE_BOTH: none) and checks the job:
 * tp ranks without a role; with one, max(tp, 1) ranks of each role (its tensor-parallel group). Refused
 * when kvcache was built without MPI, or the job's ranks do not match (naming the counts). */
kvc_status kvc_run_dist_start(int64_t tp, kvc_engine_role role);
/* tp 0: kvc_model_load_weights(dir, weights). tp >= 1 (after kvc_run_dist_start): loads this rank's shard
 * of dir over its tensor-parallel group (kvc_tp_load_model), quantized by weights as one rank would be. */
kvc_status kvc_run_load_model(const char *dir, int64_t tp, const char *weights, kvc_model **out);
/* True unless this process is a tensor-parallel rank > 0. */
bool kvc_run_tp_root(void);

/* A P/D rank's place in the job (after kvc_run_dist_start with a role). */
typedef struct kvc_run_pd_link {
    kvci_transport transport; /* over all the job's ranks */
    int32_t rank, size;       /* this rank in its role's group, ranks per role */
    const int32_t *peers;     /* [size] the job rank of the other role's rank r */
} kvc_run_pd_link;

/* Opens l's transport (close it with kvci_transport_close before kvc_run_tp_finish). */
kvc_status kvc_run_pd_connect(kvc_run_pd_link *l);
/* v[i] = the largest v[i] over this rank's role group, i < n (a no-op for a group of one). */
kvc_status kvc_run_role_max(int32_t *v, int n);
/* Ends the job once the model is destroyed: rc 0 finalizes MPI; any other code of a tensor-parallel
 * run without a role aborts every rank (a peer may wait in a collective that never completes); a P/D
 * run finalizes (its survivors report per prompt; a peer stuck in a collective times out,
 * KVC_DIST_TIMEOUT_S). Returns rc. No-op without --tp or --role. */
int kvc_run_tp_finish(int rc);

#endif
