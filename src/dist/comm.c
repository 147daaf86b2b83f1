/* kvc_comm: MPI start-up and the bounded wait of every communication of src/dist/ (comm.h). */
#include "dist/comm.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"

#define KVC_DIST_DEFAULT_TIMEOUT_S 60.0

static kvc_status mpi_fail(int rc, const char *what) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", rc);
    return kvci_fail(KVC_EINTERNAL, "dist: %s: %s", what, msg);
}

static kvc_status timeout_from_env(double *out) {
    *out = KVC_DIST_DEFAULT_TIMEOUT_S;
    const char *s = getenv("KVC_DIST_TIMEOUT_S");
    if (!s || !*s) return KVC_OK;
    char *end = NULL;
    const double v = strtod(s, &end);
    if (*end != '\0' || !(v > 0.0 && v <= 86400.0))
        return kvci_fail(KVC_EINVAL, "dist: KVC_DIST_TIMEOUT_S \"%s\" must be a number of seconds in (0, 86400]", s);
    *out = v;
    return KVC_OK;
}

/* After c->comm was made (rc: how that went): errors returned, c's rank and size. */
static kvc_status set_up(int rc, kvc_comm *c) {
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(c->comm, &c->rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(c->comm, &c->size);
    return rc == MPI_SUCCESS ? KVC_OK : mpi_fail(rc, "setting up the communicator");
}

kvc_status kvc_comm_init(int *argc, char ***argv, kvc_comm *c) {
    if (!c) return kvci_fail(KVC_EINVAL, "kvc_comm_init: c must not be NULL");
    memset(c, 0, sizeof *c);
    c->comm = MPI_COMM_NULL;
    kvc_status st = timeout_from_env(&c->timeout_s);
    if (st != KVC_OK) return st;
    int started = 0, finished = 0, provided = 0;
    MPI_Finalized(&finished);
    if (finished) /* MPI starts once per process: a second distributed run in one process cannot start */
        return kvci_fail(KVC_EINVAL, "dist: MPI was already finalized in this process (one distributed run per "
                                     "process: start another process, e.g. another mpirun)");
    MPI_Initialized(&started);
    if (!started) {
        /* one thread at a time calls MPI (OpenMP threads never do); not always the one that started it: a
         * server's engine thread steps while its main thread started MPI and loads the shard */
        const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) return kvci_fail(KVC_EINTERNAL, "dist: MPI_Init_thread failed (%d)", rc);
        c->owns_mpi = true;
    }
    return set_up(MPI_Comm_dup(MPI_COMM_WORLD, &c->comm), c);
}

kvc_status kvc_comm_split(const kvc_comm *parent, int color, kvc_comm *out) {
    if (!parent || !out || color < 0) return kvci_fail(KVC_EINVAL, "kvc_comm_split: parent, out and a color >= 0");
    *out = (kvc_comm){.comm = MPI_COMM_NULL, .timeout_s = parent->timeout_s};
    return set_up(MPI_Comm_split(parent->comm, color, parent->rank, &out->comm), out);
}

kvc_status kvc_comm_max_i32(const kvc_comm *c, int32_t *v, int n, const char *what) {
    MPI_Request req;
    const int rc = MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_INT32_T, MPI_MAX, c->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, what);
    return kvc_comm_wait(c, &req, what);
}

void kvc_comm_finalize(kvc_comm *c) {
    if (!c) return;
    if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
    if (c->owns_mpi) MPI_Finalize();
    c->owns_mpi = false;
}

void kvc_comm_abort(const kvc_comm *c, int code) {
    MPI_Abort(c && c->comm != MPI_COMM_NULL ? c->comm : MPI_COMM_WORLD, code);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

kvc_status kvc_comm_wait(const kvc_comm *c, MPI_Request *req, const char *what) {
    const double deadline = now_s() + c->timeout_s;
    for (;;) {
        int done = 0;
        const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, what);
        if (done) return KVC_OK;
        if (now_s() > deadline)
            return kvci_fail(KVC_EINTERNAL,
                             "dist: rank %d of %d waited more than %g s for %s (a peer died or hangs; "
                             "KVC_DIST_TIMEOUT_S sets the limit)",
                             c->rank, c->size, c->timeout_s, what);
        sched_yield(); /* ranks may share cores (mpirun --oversubscribe) */
    }
}
