/* The MPI transport (transport.h): two-sided. A header travels with tag
 * HEADER_TAG; its payload with a tag derived from the message's sequence
 * number, so a payload its receiver gave up on stays unmatched instead of
 * being taken for the next one. Waits poll MPI_Test until a deadline.
 * MPI itself is started and ended by the caller's kvc_comm (comm.h): the
 * transport works on a duplicate of its communicator. */
#include "dist/transport.h"

#include "base/internal.h"

#ifdef KVC_HAVE_MPI
#include "dist/comm.h"

#include <sched.h>
#include <string.h>
#include <time.h>

#define HEADER_TAG        1
#define FIRST_PAYLOAD_TAG 2
#define MAX_PENDING       64 /* timed-out sends whose buffers wait for close */

typedef struct mpi_transport {
    MPI_Comm comm; /* a duplicate of the kvc_comm's */
    int32_t tag_span;
    MPI_Request pending[MAX_PENDING]; /* sends that timed out, with their payloads */
    void *pending_payload[MAX_PENDING];
    int32_t n_pending;
    char header_copy[MAX_PENDING][KVC_TRANSPORT_HEADER_MAX];
} mpi_transport;

static kvc_status mpi_fail(int rc, const char *what) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return kvci_fail(KVC_EINTERNAL, "MPI transport: %s failed: %s", what, text);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls the n requests until all completed (true) or timeout_ms passed (false). */
static bool wait_all(MPI_Request *reqs, int n, int64_t timeout_ms) {
    const int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        int done = 0;
        MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (done) return true;
        if (now_ms() >= deadline) return false;
        sched_yield(); /* MPI progresses a large message inside MPI_Test: poll it often */
    }
}

static int payload_tag(const mpi_transport *t, uint64_t seq) {
    return FIRST_PAYLOAD_TAG + (int)(seq % (uint64_t)t->tag_span);
}

static kvc_status mpi_send(void *self, int32_t peer, uint64_t seq, const void *header, int64_t header_bytes,
                           void *payload, int64_t payload_bytes, int64_t timeout_ms) {
    mpi_transport *t = self;
    if (header_bytes < 1 || header_bytes > KVC_TRANSPORT_HEADER_MAX || payload_bytes < 0 || payload_bytes > INT32_MAX ||
        t->n_pending == MAX_PENDING) {
        kvci_free(payload);
        return kvci_fail(KVC_EINVAL, "MPI transport: header of %lld bytes (1 .. %d), payload of %lld (0 .. 2^31 - 1)%s",
                         (long long)header_bytes, KVC_TRANSPORT_HEADER_MAX, (long long)payload_bytes,
                         t->n_pending == MAX_PENDING ? ", or too many sends timed out already" : "");
    }
    char *hdr = t->header_copy[t->n_pending];
    memcpy(hdr, header, (size_t)header_bytes);
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc = MPI_Isend(hdr, (int)header_bytes, MPI_BYTE, peer, HEADER_TAG, t->comm, &reqs[0]);
    if (rc == MPI_SUCCESS && payload_bytes > 0)
        rc = MPI_Isend(payload, (int)payload_bytes, MPI_BYTE, peer, payload_tag(t, seq), t->comm, &reqs[1]);
    if (rc != MPI_SUCCESS) {
        for (int i = 0; i < 2; i++)
            if (reqs[i] != MPI_REQUEST_NULL) MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
        kvci_free(payload);
        return mpi_fail(rc, "MPI_Isend");
    }
    if (wait_all(reqs, 2, timeout_ms)) return KVC_OK;
    /* the peer did not take it: the header copy slot and the payload stay with the request until close */
    t->pending[t->n_pending] = reqs[1];
    t->pending_payload[t->n_pending++] = payload;
    if (reqs[0] != MPI_REQUEST_NULL) MPI_Request_free(&reqs[0]);
    return kvci_fail(KVC_ETIMEDOUT,
                     "MPI transport: rank %d took neither header nor payload of message %llu "
                     "(%lld bytes) within %lld ms",
                     peer, (unsigned long long)seq, (long long)payload_bytes, (long long)timeout_ms);
}

static kvc_status mpi_poll_header(void *self, void *header, int64_t header_bytes, int32_t *from) {
    mpi_transport *t = self;
    *from = -1;
    int flag = 0, count = 0;
    MPI_Status status;
    int rc = MPI_Iprobe(MPI_ANY_SOURCE, HEADER_TAG, t->comm, &flag, &status);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Iprobe");
    if (!flag) return KVC_OK;
    MPI_Get_count(&status, MPI_BYTE, &count);
    char scratch[KVC_TRANSPORT_HEADER_MAX];
    const bool fits = count == header_bytes;
    rc = MPI_Recv(fits ? header : scratch, fits ? count : KVC_TRANSPORT_HEADER_MAX, MPI_BYTE, status.MPI_SOURCE,
                  HEADER_TAG, t->comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Recv of a header");
    if (!fits)
        return kvci_fail(KVC_EINVAL, "MPI transport: a header of %d bytes from rank %d, expected %lld", count,
                         status.MPI_SOURCE, (long long)header_bytes);
    *from = status.MPI_SOURCE;
    return KVC_OK;
}

static kvc_status mpi_recv_payload(void *self, int32_t peer, uint64_t seq, void *payload, int64_t payload_bytes,
                                   int64_t timeout_ms) {
    mpi_transport *t = self;
    if (payload_bytes == 0) return KVC_OK;
    if (payload_bytes < 0 || payload_bytes > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "MPI transport: payload of %lld bytes (1 .. 2^31 - 1)", (long long)payload_bytes);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_Irecv(payload, (int)payload_bytes, MPI_BYTE, peer, payload_tag(t, seq), t->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Irecv");
    if (wait_all(&req, 1, timeout_ms)) return KVC_OK;
    MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    return kvci_fail(KVC_ETIMEDOUT,
                     "MPI transport: the payload of message %llu (%lld bytes) from rank %d did not "
                     "arrive within %lld ms",
                     (unsigned long long)seq, (long long)payload_bytes, peer, (long long)timeout_ms);
}

static void mpi_destroy(void *self) {
    mpi_transport *t = self;
    for (int32_t i = 0; i < t->n_pending; i++)
        if (t->pending[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&t->pending[i]);
            MPI_Request_free(&t->pending[i]);
        }
    MPI_Comm_free(&t->comm);
    /* a send MPI could not cancel may read its payload until MPI ends (after this transport, in
     * kvc_comm_finalize): its payload is kept, at most MAX_PENDING buffers after failed sends */
    kvci_free(t);
}

static const kvci_transport_ops MPI_OPS = {
    .name = "mpi",
    .send = mpi_send,
    .poll_header = mpi_poll_header,
    .recv_payload = mpi_recv_payload,
    .destroy = mpi_destroy,
};

kvc_status kvci_transport_mpi_open(const kvc_comm *comm, kvci_transport *out) {
    if (comm == NULL || out == NULL) return kvci_fail(KVC_EINVAL, "kvci_transport_mpi_open: comm and out must be set");
    memset(out, 0, sizeof *out);
    mpi_transport *t = kvci_calloc(1, sizeof *t);
    if (t == NULL) return kvci_fail(KVC_ENOMEM, "MPI transport: out of memory");
    int flag = 0;
    int *tag_ub = NULL;
    const int rc = MPI_Comm_dup(comm->comm, &t->comm);
    if (rc != MPI_SUCCESS) {
        kvci_free(t);
        return mpi_fail(rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
    MPI_Comm_get_attr(t->comm, MPI_TAG_UB, &tag_ub, &flag);
    t->tag_span = (flag && tag_ub && *tag_ub > FIRST_PAYLOAD_TAG ? *tag_ub : 32767) - FIRST_PAYLOAD_TAG;
    *out = (kvci_transport){.ops = &MPI_OPS, .self = t, .rank = comm->rank, .n_ranks = comm->size};
    return KVC_OK;
}

#else

kvc_status kvci_transport_mpi_open(const kvc_comm *comm, kvci_transport *out) {
    (void)comm, (void)out;
    return kvci_fail(KVC_EINVAL, "this build of kvcache has no MPI (install libopenmpi-dev and reconfigure with "
                                 "-DKVC_MPI=ON)");
}

#endif
