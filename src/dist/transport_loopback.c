/* The loopback transport (transport.h): two endpoints in one process, for
 * tests of the P/D protocol without MPI. A send queues a copy of the header
 * and the payload itself; the other endpoint's poll takes the oldest header,
 * and its payload is handed over by sequence number. A dropped payload
 * (the pair's fault) makes its receiver wait out its deadline. */
#include <string.h>
#include <time.h>

#include "base/internal.h"
#include "dist/transport.h"

#define LOOP_SLOTS 64 /* messages in flight per direction */

typedef struct loop_msg {
    bool used, header_taken;
    uint64_t seq;
    int64_t header_bytes, payload_bytes;
    char header[KVC_TRANSPORT_HEADER_MAX];
    void *payload; /* owned; NULL when dropped */
} loop_msg;

typedef struct loop_pair loop_pair;

typedef struct loop_end {
    loop_pair *pair;
    int32_t rank;
} loop_end;

struct loop_pair {
    loop_end ends[2];
    loop_msg queue[2][LOOP_SLOTS]; /* queue[r]: messages to rank r, in sending order by arrival number */
    int64_t arrival[2][LOOP_SLOTS];
    int64_t next_arrival;
    int64_t drop_payload_seq;
    int32_t n_open;
};

static kvc_status loop_send(void *self, int32_t peer, uint64_t seq, const void *header, int64_t header_bytes,
                            void *payload, int64_t payload_bytes, int64_t timeout_ms) {
    (void)timeout_ms;
    loop_end *end = self;
    loop_pair *p = end->pair;
    if (peer != 1 - end->rank || header_bytes < 1 || header_bytes > KVC_TRANSPORT_HEADER_MAX || payload_bytes < 0) {
        kvci_free(payload);
        return kvci_fail(KVC_EINVAL,
                         "loopback transport: peer %d (only %d), header of %lld bytes (1 .. %d), payload "
                         "of %lld",
                         peer, 1 - end->rank, (long long)header_bytes, KVC_TRANSPORT_HEADER_MAX,
                         (long long)payload_bytes);
    }
    for (int i = 0; i < LOOP_SLOTS; i++) {
        loop_msg *m = &p->queue[peer][i];
        if (m->used) continue;
        *m = (loop_msg){.used = true, .seq = seq, .header_bytes = header_bytes, .payload_bytes = payload_bytes};
        memcpy(m->header, header, (size_t)header_bytes);
        const bool drop = p->drop_payload_seq >= 0 && seq == (uint64_t)p->drop_payload_seq;
        m->payload = drop || payload_bytes == 0 ? NULL : kvci_malloc((size_t)payload_bytes);
        if (m->payload == NULL && !drop && payload_bytes > 0) {
            m->used = false;
            kvci_free(payload);
            return kvci_fail(KVC_ENOMEM, "loopback transport: %lld bytes for a payload", (long long)payload_bytes);
        }
        if (m->payload != NULL) memcpy(m->payload, payload, (size_t)payload_bytes);
        p->arrival[peer][i] = p->next_arrival++;
        return KVC_OK;
    }
    kvci_free(payload);
    return kvci_fail(KVC_ETIMEDOUT, "loopback transport: %d messages to rank %d are not taken", LOOP_SLOTS, peer);
}

static kvc_status loop_poll_header(void *self, void *header, int64_t header_bytes, int32_t *from) {
    loop_end *end = self;
    loop_pair *p = end->pair;
    *from = -1;
    int best = -1;
    for (int i = 0; i < LOOP_SLOTS; i++) {
        const loop_msg *m = &p->queue[end->rank][i];
        if (m->used && !m->header_taken && (best < 0 || p->arrival[end->rank][i] < p->arrival[end->rank][best]))
            best = i;
    }
    if (best < 0) return KVC_OK;
    loop_msg *m = &p->queue[end->rank][best];
    m->header_taken = true;
    if (m->payload_bytes == 0) kvci_free(m->payload), m->used = false;
    if (m->header_bytes != header_bytes)
        return kvci_fail(KVC_EINVAL, "loopback transport: a header of %lld bytes, expected %lld",
                         (long long)m->header_bytes, (long long)header_bytes);
    memcpy(header, m->header, (size_t)header_bytes);
    *from = 1 - end->rank;
    return KVC_OK;
}

static kvc_status loop_recv_payload(void *self, int32_t peer, uint64_t seq, void *payload, int64_t payload_bytes,
                                    int64_t timeout_ms) {
    loop_end *end = self;
    if (payload_bytes == 0) return KVC_OK;
    for (int i = 0; peer == 1 - end->rank && i < LOOP_SLOTS; i++) {
        loop_msg *m = &end->pair->queue[end->rank][i];
        if (!m->used || !m->header_taken || m->seq != seq || m->payload == NULL) continue;
        if (m->payload_bytes != payload_bytes)
            return kvci_fail(KVC_EINVAL, "loopback transport: payload %llu has %lld bytes, expected %lld",
                             (unsigned long long)seq, (long long)m->payload_bytes, (long long)payload_bytes);
        memcpy(payload, m->payload, (size_t)payload_bytes);
        kvci_free(m->payload);
        m->used = false;
        return KVC_OK;
    }
    nanosleep(&(struct timespec){.tv_sec = timeout_ms / 1000, .tv_nsec = timeout_ms % 1000 * 1000000}, NULL);
    return kvci_fail(KVC_ETIMEDOUT,
                     "loopback transport: the payload of message %llu (%lld bytes) from rank %d did "
                     "not arrive within %lld ms",
                     (unsigned long long)seq, (long long)payload_bytes, peer, (long long)timeout_ms);
}

static void loop_destroy(void *self) {
    loop_end *end = self;
    loop_pair *p = end->pair;
    if (--p->n_open > 0) return;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < LOOP_SLOTS; i++)
            if (p->queue[r][i].used) kvci_free(p->queue[r][i].payload);
    kvci_free(p);
}

static const kvci_transport_ops LOOP_OPS = {
    .name = "loopback",
    .send = loop_send,
    .poll_header = loop_poll_header,
    .recv_payload = loop_recv_payload,
    .destroy = loop_destroy,
};

kvc_status kvci_transport_loopback_open(kvci_transport *a, kvci_transport *b, int64_t drop_payload_seq) {
    if (a == NULL || b == NULL) return kvci_fail(KVC_EINVAL, "kvci_transport_loopback_open: a and b are required");
    loop_pair *p = kvci_calloc(1, sizeof *p);
    if (p == NULL) return kvci_fail(KVC_ENOMEM, "loopback transport: out of memory");
    p->drop_payload_seq = drop_payload_seq;
    p->n_open = 2;
    kvci_transport *t[2] = {a, b};
    for (int32_t r = 0; r < 2; r++) {
        p->ends[r] = (loop_end){.pair = p, .rank = r};
        *t[r] = (kvci_transport){.ops = &LOOP_OPS, .self = &p->ends[r], .rank = r, .n_ranks = 2};
    }
    return KVC_OK;
}
