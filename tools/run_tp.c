/* kvcache run --tp N and --role over MPI (run_tp.h). */
#include "run_tp.h"

#include <stdio.h>
#include <string.h>

#include "base/internal.h"

#ifdef KVC_HAVE_MPI
#include "dist/tp.h"
#include "model/json_read.h" /* KVC_TRY */

static struct {
    bool active, pd;
    kvc_comm world; /* every rank of the job */
    kvc_comm group; /* P/D: this role's ranks (the tensor-parallel group); else unused (world is) */
    kvc_tp tp;
    int32_t *peers; /* P/D: [group.size] the job rank of the other role's rank r */
} g_dist;

static const kvc_comm *tp_group(void) { return g_dist.pd ? &g_dist.group : &g_dist.world; }

/* The job's ranks by role: peers = the other role's job ranks in order; refused unless each role has
 * `want` ranks. */
static kvc_status find_peers(kvc_engine_role role, int64_t want) {
    int32_t *roles = kvci_calloc((size_t)g_dist.world.size, sizeof *roles);
    g_dist.peers = kvci_calloc((size_t)g_dist.world.size, sizeof *g_dist.peers);
    const int32_t mine = (int32_t)role;
    MPI_Request req;
    kvc_status st =
        !roles || !g_dist.peers ? kvci_fail(KVC_ENOMEM, "out of memory for the job's roles")
        : MPI_Iallgather(&mine, 1, MPI_INT32_T, roles, 1, MPI_INT32_T, g_dist.world.comm, &req) != MPI_SUCCESS
            ? kvci_fail(KVC_EINTERNAL, "MPI_Iallgather of the ranks' roles failed")
            : kvc_comm_wait(&g_dist.world, &req, "the ranks' roles");
    int32_t n_mine = 0, n_other = 0;
    for (int32_t r = 0; st == KVC_OK && r < g_dist.world.size; r++) {
        if (roles[r] == mine)
            n_mine++;
        else if (roles[r] != KVC_ENGINE_ROLE_BOTH)
            g_dist.peers[n_other++] = r;
    }
    kvci_free(roles);
    if (st == KVC_OK && (n_mine != want || n_other != want || n_mine + n_other != g_dist.world.size))
        st = kvci_fail(
            KVC_EINVAL,
            "--role%s runs %lld rank(s) per role (mpirun -np %lld kvcache run ... --role prefill : -np %lld "
            "kvcache run ... --role decode); this job has %d rank(s) of this role, %d of the other, %d in all",
            want > 1 ? " with --tp" : "", (long long)want, (long long)want, (long long)want, n_mine, n_other,
            g_dist.world.size);
    return st;
}

kvc_status kvc_run_dist_start(int64_t tp, kvc_engine_role role) {
    if (tp == 0 && role == KVC_ENGINE_ROLE_BOTH) return KVC_OK;
    KVC_TRY(kvc_comm_init(NULL, NULL, &g_dist.world));
    g_dist.active = true;
    g_dist.pd = role != KVC_ENGINE_ROLE_BOTH;
    if (g_dist.pd) {
        KVC_TRY(kvc_comm_split(&g_dist.world, (int)role, &g_dist.group));
        KVC_TRY(find_peers(role, tp > 0 ? tp : 1));
    } else if (g_dist.world.size != tp) {
        return kvci_fail(KVC_EINVAL, "--tp %lld but mpirun started %d ranks (run: mpirun -np %lld kvcache run ...)",
                         (long long)tp, g_dist.world.size, (long long)tp);
    }
    if (tp_group()->rank > 0 && !freopen("/dev/null", "w", stdout))
        return kvci_fail(KVC_EINVAL, "rank %d: cannot send stdout to /dev/null", g_dist.world.rank);
    return KVC_OK;
}

kvc_status kvc_run_load_model(const char *dir, int64_t tp, const char *weights, kvc_model **out) {
    if (tp == 0) return kvc_model_load_weights(dir, weights, out);
    *out = NULL;
    if (!g_dist.active) return kvci_fail(KVC_EINTERNAL, "--tp: MPI was not started (kvc_run_dist_start)");
    return kvc_tp_load_model(&g_dist.tp, tp_group(), dir, weights, out);
}

bool kvc_run_tp_root(void) { return !g_dist.active || tp_group()->rank == 0; }

kvc_status kvc_run_pd_connect(kvc_run_pd_link *l) {
    *l = (kvc_run_pd_link){.rank = g_dist.group.rank, .size = g_dist.group.size, .peers = g_dist.peers};
    if (!g_dist.pd) return kvci_fail(KVC_EINTERNAL, "--role: MPI was not started (kvc_run_dist_start)");
    return kvci_transport_mpi_open(&g_dist.world, &l->transport);
}

kvc_status kvc_run_role_max(int32_t *v, int n) {
    if (!g_dist.pd || g_dist.group.size == 1) return KVC_OK;
    return kvc_comm_max_i32(&g_dist.group, v, n, "the decode ranks' agreement on the received prompts");
}

int kvc_run_tp_finish(int rc) {
    if (!g_dist.active) return rc;
    fflush(stdout);
    fflush(stderr);
    if (rc != 0 && !g_dist.pd && g_dist.world.size > 1) kvc_comm_abort(&g_dist.world, rc);
    kvc_tp_release(&g_dist.tp);
    kvci_free(g_dist.peers);
    if (g_dist.pd) kvc_comm_finalize(&g_dist.group);
    kvc_comm_finalize(&g_dist.world);
    memset(&g_dist, 0, sizeof g_dist);
    return rc;
}

#else

static kvc_status no_mpi(const char *what) {
    return kvci_fail(KVC_EINVAL,
                     "%s: this kvcache was built without MPI (configure with Open MPI installed, KVC_MPI=ON)", what);
}

kvc_status kvc_run_dist_start(int64_t tp, kvc_engine_role role) {
    if (tp == 0 && role == KVC_ENGINE_ROLE_BOTH) return KVC_OK;
    return no_mpi(tp > 0 ? "--tp" : "--role");
}

kvc_status kvc_run_load_model(const char *dir, int64_t tp, const char *weights, kvc_model **out) {
    if (tp == 0) return kvc_model_load_weights(dir, weights, out);
    *out = NULL;
    return no_mpi("--tp");
}

bool kvc_run_tp_root(void) { return true; }

kvc_status kvc_run_pd_connect(kvc_run_pd_link *l) {
    *l = (kvc_run_pd_link){0};
    return no_mpi("--role");
}

kvc_status kvc_run_role_max(int32_t *v, int n) {
    (void)v, (void)n;
    return KVC_OK;
}

int kvc_run_tp_finish(int rc) { return rc; }

#endif
