/* kvc_tp: the sharded load and the rank-ordered all-reduce of tensor parallelism (tp.h). */
#include "dist/tp.h"

#include <limits.h>
#include <string.h>

#include "base/internal.h"
#include "model/model_internal.h"

kvc_status kvc_tp_load_model(kvc_tp *tp, const kvc_comm *comm, const char *dir, const char *weights, kvc_model **out) {
    if (!tp || !comm || !out) return kvci_fail(KVC_EINVAL, "kvc_tp_load_model: tp, comm and out must not be NULL");
    *out = NULL;
    kvc_wmat_dtype wd = KVC_WMAT_CHECKPOINT;
    if (weights) KVC_TRY(kvci_wmat_dtype_parse(weights, &wd));
    memset(tp, 0, sizeof *tp);
    tp->comm = comm;
    const kvc_model_tp shard = {.rank = comm->rank, .size = comm->size, .reduce = kvc_tp_allreduce_sum, .user = tp};
    return kvci_model_load_tp(dir, &shard, wd, out);
}

kvc_status kvc_tp_allreduce_sum(void *user, float *x, int64_t n) {
    kvc_tp *tp = user;
    const int64_t R = tp->comm->size;
    if (n < 1 || n > INT_MAX / 2)
        return kvci_fail(KVC_EINVAL, "tp all-reduce: %lld floats outside [1, %d]", (long long)n, INT_MAX / 2);
    if (n > tp->cap) {
        float *g = NULL;
        if (kvc_aligned_alloc(64, (size_t)(R * n) * sizeof(float), (void **)&g) != KVC_OK)
            return kvci_fail(KVC_ENOMEM, "tp all-reduce: out of memory for %lld x %lld floats", (long long)R,
                             (long long)n);
        kvc_aligned_free(tp->gather);
        tp->gather = g, tp->cap = n;
    }
    MPI_Request req;
    const int rc = MPI_Iallgather(x, (int)n, MPI_FLOAT, tp->gather, (int)n, MPI_FLOAT, tp->comm->comm, &req);
    if (rc != MPI_SUCCESS) return kvci_fail(KVC_EINTERNAL, "tp all-reduce: MPI_Iallgather failed (%d)", rc);
    KVC_TRY(kvc_comm_wait(tp->comm, &req, "the tensor-parallel all-reduce"));
    memcpy(x, tp->gather, (size_t)n * sizeof(float));
    for (int64_t r = 1; r < R; r++) {
        const float *p = tp->gather + r * n;
        for (int64_t i = 0; i < n; i++) x[i] += p[i];
    }
    return KVC_OK;
}

void kvc_tp_release(kvc_tp *tp) {
    if (!tp) return;
    kvc_aligned_free(tp->gather);
    tp->gather = NULL, tp->cap = 0;
}
