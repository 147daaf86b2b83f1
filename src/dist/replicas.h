/* Tensor-parallel replicas of an engine over MPI (kvc_engine_sync in engine.h; docs/serve.md, "Tensor
 * parallel"): the broadcast that carries the lead's log to the followers, and one process's session for a
 * program other than the kvcache command (the Python package's server): MPI start, the shard load, the end.
 *
 * Every wait is bounded by the communicator's deadline (comm.h) but one: a follower waiting for the lead's
 * next log (the lead may sit idle for hours), which polls without a deadline, sleeping between polls (up to
 * 2 ms) once it has waited 10 ms. A lead that dies ends the job through mpirun. */
#ifndef KVC_DIST_REPLICAS_H
#define KVC_DIST_REPLICAS_H

#include "dist/comm.h"
#include "kvcache/engine.h"

/* A kvc_engine_sync.bcast over user, a const kvc_comm * (rank 0 the lead): MPI_Ibcast of n bytes from
 * rank 0. */
kvc_status kvc_replicas_bcast(void *user, void *buf, int64_t n, bool idle);

/* This process's session (one per process, as MPI is): starts MPI (kvc_comm_init over the whole job),
 * refused unless the job has `size` ranks (size >= 2); *rank = this process's rank. */
kvc_status kvc_replicas_start(int64_t size, int32_t *rank);
/* This rank's shard of the model in dir (kvc_tp_load_model; weights as kvc_model_load_weights). */
kvc_status kvc_replicas_load(const char *dir, const char *weights, kvc_model **out);
/* The session's kvc_engine_sync (follower on ranks > 0). */
kvc_engine_sync kvc_replicas_sync(void);
/* Ends the session, once the engine and the model are destroyed: rc 0 finalizes MPI (collective), another
 * rc ends the whole job with it (MPI_Abort: a peer may wait in a collective). Nothing without a session. */
void kvc_replicas_end(int rc);

#endif
