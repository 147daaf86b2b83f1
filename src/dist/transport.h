/* The transport of prefill/decode disaggregation (docs/pd.md): moves one
 * request's message -- a fixed-size header, then a payload (its prompt and
 * KV blocks) -- from a prefill instance to a decode instance. Two-sided:
 * the receiver sees a header first, sizes its buffer from it, then takes
 * the payload. Every wait has a deadline (KVC_ETIMEDOUT naming what was
 * awaited), so a peer that stops sending or receiving never hangs the
 * other. Implementations: MPI (transport_mpi.c) and an in-process loopback
 * for tests (transport_loopback.c).
 *
 * Messages of one sender arrive in the order they were sent; a payload is
 * matched to its header by the header's sequence number, so a payload that
 * arrives after its receiver gave up is never taken for a later one.
 *
 * Not thread-safe: one caller at a time. */
#ifndef KVC_DIST_TRANSPORT_H
#define KVC_DIST_TRANSPORT_H

#include <stdint.h>

#include "kvcache/base.h"

#define KVC_TRANSPORT_HEADER_MAX 4096 /* bytes of one header, at most */

typedef struct kvci_transport_ops {
    const char *name; /* "mpi", "loopback" */
    /* Sends header (copied) then payload (payload_bytes may be 0) to peer under sequence number seq.
     * KVC_OK: both are on their way and the payload is the caller's again (to reuse). Any failure:
     * the transport has taken the payload (a kvci_malloc'd buffer, or NULL) and frees it once no send
     * can read it any more (a timed-out send cannot be taken back: at close). KVC_ETIMEDOUT when the
     * peer has not taken both after timeout_ms. */
    kvc_status (*send)(void *self, int32_t peer, uint64_t seq, const void *header, int64_t header_bytes, void *payload,
                       int64_t payload_bytes, int64_t timeout_ms);
    /* Takes the next header of header_bytes from any peer if one has arrived: *from = its sender, or -1
     * when none has (never waits). A message of another size is KVC_EINVAL (and consumed). */
    kvc_status (*poll_header)(void *self, void *header, int64_t header_bytes, int32_t *from);
    /* Receives the payload of message seq from peer into payload[0..payload_bytes); KVC_ETIMEDOUT after
     * timeout_ms (the receive is cancelled). */
    kvc_status (*recv_payload)(void *self, int32_t peer, uint64_t seq, void *payload, int64_t payload_bytes,
                               int64_t timeout_ms);
    void (*destroy)(void *self);
} kvci_transport_ops;

typedef struct kvci_transport {
    const kvci_transport_ops *ops;
    void *self;
    int32_t rank, n_ranks; /* this process's place among the peers */
} kvci_transport;

/* Destroys t's implementation (NULL or an unset transport: nothing) and unsets it. */
void kvci_transport_close(kvci_transport *t);

typedef struct kvc_comm kvc_comm; /* dist/comm.h */

/* MPI, two-sided (MPI_Isend / MPI_Irecv polled with MPI_Test up to the deadline) on a duplicate of
 * comm's communicator (its ranks are the peers); comm started MPI (kvc_comm_init) and ends it after
 * this transport is closed (kvc_comm_finalize). KVC_EINVAL when this build has no MPI. */
kvc_status kvci_transport_mpi_open(const kvc_comm *comm, kvci_transport *out);

/* Two endpoints in this process, ranks 0 and 1, each a transport whose sends the other receives.
 * drop_payload_seq >= 0: the payload of that message is lost on the way (a fault for tests: its
 * receiver times out). Close both; the pair's memory goes with the second. */
kvc_status kvci_transport_loopback_open(kvci_transport *a, kvci_transport *b, int64_t drop_payload_seq);

#endif /* KVC_DIST_TRANSPORT_H */
