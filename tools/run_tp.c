/* kvcache run --tp N over MPI (run_tp.h). */
#include "run_tp.h"

#include <stdio.h>

#include "base/internal.h"

#ifdef KVC_HAVE_MPI
#include "dist/tp.h"

static struct {
    bool active;
    kvc_comm comm;
    kvc_tp tp;
} g_tp;

kvc_status kvc_run_load_model(const char *dir, int64_t tp, kvc_model **out) {
    if (tp == 0) return kvc_model_load(dir, out);
    *out = NULL;
    const kvc_status st = kvc_comm_init(NULL, NULL, &g_tp.comm);
    if (st != KVC_OK) return st;
    g_tp.active = true;
    if (g_tp.comm.size != tp)
        return kvci_fail(KVC_EINVAL, "--tp %lld but mpirun started %d ranks (run: mpirun -np %lld kvcache run ...)",
                         (long long)tp, g_tp.comm.size, (long long)tp);
    if (g_tp.comm.rank > 0 && !freopen("/dev/null", "w", stdout))
        return kvci_fail(KVC_EINVAL, "rank %d: cannot send stdout to /dev/null", g_tp.comm.rank);
    return kvc_tp_load_model(&g_tp.tp, &g_tp.comm, dir, out);
}

bool kvc_run_tp_root(void) { return !g_tp.active || g_tp.comm.rank == 0; }

int kvc_run_tp_finish(int rc) {
    if (!g_tp.active) return rc;
    fflush(stdout);
    if (rc != 0 && g_tp.comm.size > 1) kvc_comm_abort(&g_tp.comm, rc);
    kvc_tp_release(&g_tp.tp);
    kvc_comm_finalize(&g_tp.comm);
    g_tp.active = false;
    return rc;
}

#else

kvc_status kvc_run_load_model(const char *dir, int64_t tp, kvc_model **out) {
    if (tp == 0) return kvc_model_load(dir, out);
    *out = NULL;
    return kvci_fail(KVC_EINVAL,
                     "--tp %lld: this kvcache was built without MPI (configure with Open MPI installed, "
                     "KVC_MPI=ON)",
                     (long long)tp);
}

bool kvc_run_tp_root(void) { return true; }

int kvc_run_tp_finish(int rc) { return rc; }

#endif
