/* Tensor parallelism over MPI (docs/distributed.md): each rank of a kvc_comm loads its shard of a
 * model (kvci_model_load_tp) and reduces the partial sums of its row-parallel layers here.
 *
 * The all-reduce is deterministic: every rank gathers all ranks' partials (one non-blocking
 * allgather, kvc_comm_wait bounds it) and sums them element by element in rank order,
 * ((p0 + p1) + p2) + ..., so every rank holds bitwise the same sum, the same run to run and
 * whatever the batch (an element's sum never depends on the other elements). */
#ifndef KVC_DIST_TP_H
#define KVC_DIST_TP_H

#include "dist/comm.h"
#include "kvcache/model.h"

typedef struct kvc_tp {
    const kvc_comm *comm;
    float *gather; /* [size, cap] the ranks' partials of one all-reduce */
    int64_t cap;   /* floats per rank gather holds */
} kvc_tp;

/* Loads this rank's shard of the model in dir (rank comm->rank of comm->size), its row-parallel
 * layers reduced through tp (which must outlive the model); sharding refusals name the size that
 * does not divide (kvci_model_shard_config). weights: as kvc_model_load_weights (NULL: the
 * checkpoint's dtype; q8_0 / q4_0 quantize each rank's shard at load). */
kvc_status kvc_tp_load_model(kvc_tp *tp, const kvc_comm *comm, const char *dir, const char *weights, kvc_model **out);
/* x[n] = the sum over the ranks of their x[n], in rank order (a kvc_model_reduce_fn; user: kvc_tp). */
kvc_status kvc_tp_allreduce_sum(void *user, float *x, int64_t n);
/* Frees tp's buffer (not the communicator). */
void kvc_tp_release(kvc_tp *tp);

#endif
