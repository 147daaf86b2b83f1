/* kvc_replicas: an engine's tensor-parallel replicas over MPI (replicas.h). */
#include "dist/replicas.h"

#include <limits.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"
#include "dist/tp.h"

#define IDLE_SPIN_NS      10000000L /* a follower's wait polls without sleeping for 10 ms, */
#define IDLE_SLEEP_MIN_NS 50000L    /* then sleeps between polls, 50 us doubling */
#define IDLE_SLEEP_MAX_NS 2000000L  /* up to 2 ms (an idle follower: about 500 polls a second) */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Waits for req without a deadline (a follower's wait for the lead's next log). */
static kvc_status wait_idle(MPI_Request *req) {
    const int64_t t0 = now_ns();
    long sleep_ns = IDLE_SLEEP_MIN_NS;
    for (;;) {
        int done = 0;
        const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return kvci_fail(KVC_EINTERNAL, "replicas: waiting for the lead's log failed (%d)", rc);
        if (done) return KVC_OK;
        if (now_ns() - t0 < IDLE_SPIN_NS) {
            sched_yield();
        } else {
            const struct timespec pause = {0, sleep_ns};
            nanosleep(&pause, NULL);
            sleep_ns = sleep_ns * 2 > IDLE_SLEEP_MAX_NS ? IDLE_SLEEP_MAX_NS : sleep_ns * 2;
        }
    }
}

kvc_status kvc_replicas_bcast(void *user, void *buf, int64_t n, bool idle) {
    const kvc_comm *c = user;
    if (n < 1 || n > INT_MAX) return kvci_fail(KVC_EINVAL, "replicas: a log of %lld bytes", (long long)n);
    MPI_Request req;
    const int rc = MPI_Ibcast(buf, (int)n, MPI_BYTE, 0, c->comm, &req);
    if (rc != MPI_SUCCESS) return kvci_fail(KVC_EINTERNAL, "replicas: MPI_Ibcast of the lead's log failed (%d)", rc);
    return idle && c->rank > 0 ? wait_idle(&req) : kvc_comm_wait(c, &req, "the lead's engine log");
}

static struct {
    bool active;
    kvc_comm comm;
    kvc_tp tp;
} g_session;

kvc_status kvc_replicas_start(int64_t size, int32_t *rank) {
    if (g_session.active) return kvci_fail(KVC_EINVAL, "replicas: this process runs a tensor-parallel session already");
    if (size < 2)
        return kvci_fail(KVC_EINVAL, "replicas: tensor parallelism %lld needs 2 ranks or more", (long long)size);
    const kvc_status st = kvc_comm_init(NULL, NULL, &g_session.comm);
    if (st != KVC_OK) return st;
    g_session.active = true;
    if (g_session.comm.size != size) /* the caller says so, then ends the job (kvc_replicas_end) */
        return kvci_fail(KVC_EINVAL,
                         "--tensor-parallel-size %lld but mpirun started %d rank(s) (run: mpirun -np %lld ...)",
                         (long long)size, g_session.comm.size, (long long)size);
    *rank = g_session.comm.rank;
    return KVC_OK;
}

kvc_status kvc_replicas_load(const char *dir, const char *weights, kvc_model **out) {
    if (!g_session.active) return kvci_fail(KVC_EINVAL, "replicas: no tensor-parallel session (kvc_replicas_start)");
    return kvc_tp_load_model(&g_session.tp, &g_session.comm, dir, weights, out);
}

kvc_engine_sync kvc_replicas_sync(void) {
    return (kvc_engine_sync){.bcast = kvc_replicas_bcast, .user = &g_session.comm, .follower = g_session.comm.rank > 0};
}

void kvc_replicas_end(int rc) {
    if (!g_session.active) return;
    if (rc != 0 && g_session.comm.size > 1) kvc_comm_abort(&g_session.comm, rc);
    kvc_tp_release(&g_session.tp);
    kvc_comm_finalize(&g_session.comm);
    memset(&g_session, 0, sizeof g_session);
}
