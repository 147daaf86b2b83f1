/* Prefill/decode disaggregation over MPI, two ranks (run by mpirun -np 2;
 * registered as mpi_pd_equal): for every built-in family (random small
 * models, tests/dist/pd_fixture.h), rank 0 prefills the four requests and
 * sends their KV through the MPI transport; rank 1 decodes them and checks
 * its tokens and logits bitwise (memcmp) against one BOTH engine it runs
 * itself on the same requests -- prefix caching on, salts, a decode-side
 * prefix hit, and (pools for one request) preemption on the decode side. */
#include "dist/comm.h"
#include "pd_fixture.h"

static kvc_comm comm;
static kvci_transport mpi;

static void check_family(const pd_family *f, bool tight) {
    print_message("rank %d: family %s%s\n", mpi.rank, f->name, tight ? ", decode pools for one request" : "");
    kvc_model *m = random_model(f->json);
    if (mpi.rank == 0) {
        prefill_and_send(m, f->latent, 4, &mpi, -1);
    } else {
        instance ref, dc;
        reference_open(&ref, m, f->latent, 4);
        instance_open(&dc, m, f->latent, KVC_ENGINE_ROLE_DECODE, 4, tight);
        assert_int_equal(receive_and_decode(&dc, &mpi), 0);
        expect_same_outputs(&dc, &ref, 0);
        kvc_engine_stats st;
        assert_int_equal(kvc_engine_get_stats(dc.e, &st), KVC_OK);
        assert_true(f->state || st.prefix_hit_tokens >= 16);
        if (tight && has_kv_key(dc.e)) assert_true(st.preemptions > 0);
        expect_no_blocks(dc.e);
        instance_close(&dc);
        instance_close(&ref);
    }
    kvc_model_destroy(m);
}

static void test_families(void **state) {
    (void)state;
    for (int i = 0; i < PD_N_FAMILIES; i++)
        for (int tight = 0; tight < 2; tight++) check_family(&PD_FAMILIES[i], tight);
}

int main(int argc, char **argv) {
    if (kvc_comm_init(&argc, &argv, &comm) != KVC_OK || kvci_transport_mpi_open(&comm, &mpi) != KVC_OK ||
        mpi.n_ranks != 2) {
        fprintf(stderr, "mpi_pd_equal: runs under mpirun -np 2 (%s)\n", mpi.ops ? "not 2 ranks" : kvc_last_error());
        kvci_transport_close(&mpi);
        kvc_comm_finalize(&comm);
        return 1;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_families)};
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kvci_transport_close(&mpi);
    kvc_comm_finalize(&comm);
    return rc;
}
