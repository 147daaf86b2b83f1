/* MPI for the distributed runtime (docs/distributed.md): start-up, this process's communicator,
 * and a bounded wait. Shared by tensor parallelism and the prefill/decode transport.
 *
 * No wait hangs forever: every communication of src/dist/ is non-blocking and finished by
 * kvc_comm_wait, which polls it until the communicator's deadline (KVC_DIST_TIMEOUT_S seconds,
 * default 60) and then fails with a message naming what it waited for. The communicator returns
 * MPI errors as codes (MPI_ERRORS_RETURN) instead of aborting. What does not hold: MPI_Init and
 * MPI_Finalize themselves block (mpirun bounds start-up; a caller whose wait timed out must end
 * with kvc_comm_abort, never kvc_comm_finalize, since its peers may never join). */
#ifndef KVC_DIST_COMM_H
#define KVC_DIST_COMM_H

#include <mpi.h>
#include <stdbool.h>

#include "kvcache/base.h"

typedef struct kvc_comm {
    MPI_Comm comm;    /* a duplicate of MPI_COMM_WORLD, errors returned */
    int rank, size;   /* this process's rank in comm, ranks in comm */
    double timeout_s; /* deadline of every kvc_comm_wait */
    bool owns_mpi;    /* kvc_comm_init started MPI: kvc_comm_finalize ends it */
} kvc_comm;

/* Starts MPI unless it runs already (argc/argv may be NULL) and fills c over all the job's
 * processes; the timeout from KVC_DIST_TIMEOUT_S (seconds in (0, 86400]; a bad value is refused). */
kvc_status kvc_comm_init(int *argc, char ***argv, kvc_comm *c);
/* Fills out with the ranks of parent whose color equals this rank's (MPI_Comm_split, ranks kept in
 * parent's order), parent's deadline, errors returned; MPI stays parent's. Collective over parent. */
kvc_status kvc_comm_split(const kvc_comm *parent, int color, kvc_comm *out);
/* v[i] = the largest v[i] over c's ranks, i < n (MPI_Iallreduce, waited for by kvc_comm_wait naming
 * `what`). Collective over c. */
kvc_status kvc_comm_max_i32(const kvc_comm *c, int32_t *v, int n, const char *what);
/* Frees c's communicator and ends MPI if kvc_comm_init started it. Collective: every rank calls it. */
void kvc_comm_finalize(kvc_comm *c);
/* Ends every process of the job with `code` (after a failed or timed-out wait). */
void kvc_comm_abort(const kvc_comm *c, int code);
/* Waits for *req until c's deadline; KVC_EINTERNAL naming `what` and this rank on an MPI error or
 * on time-out (the request then stays pending: end the job with kvc_comm_abort). */
kvc_status kvc_comm_wait(const kvc_comm *c, MPI_Request *req, const char *what);

#endif
