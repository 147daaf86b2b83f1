/* KV pressure at scale (issue 13): the built-in model families
 * (cli/demo_workload.h) serve 48 requests at once (max_num_seqs 48) from a
 * KV pool that holds a tenth of what they would need together, so requests
 * are admitted, preempted and recomputed over and over. Through the public
 * engine API only: every request finishes with exactly the tokens it gets
 * when it runs alone, the engine's checks hold, and every block is back in
 * its pool at the end. */
#include <stdlib.h>

#include "demo_workload.h"
#include "kvc_test_util.h"

#define N_REQ            48
#define MAX_NEW          8
#define BLOCK            16
#define OVERSUBSCRIPTION 10 /* demand of all requests at once over the pool's capacity, at least */

typedef struct workload {
    int32_t prompts[N_REQ][32];
    int64_t lens[N_REQ];
    int32_t out[N_REQ][MAX_NEW];
} workload;

static void make_workload(workload *w, int64_t vocab) {
    uint64_t s = 12345;
    for (int i = 0; i < N_REQ; i++) {
        w->lens[i] = 8 + i % 17; /* 8..24 tokens: with MAX_NEW, at most 2 blocks of 16 */
        for (int64_t t = 0; t < w->lens[i]; t++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            w->prompts[i][t] = (int32_t)((s >> 33) % (uint64_t)vocab);
        }
    }
}

/* Runs requests [first, first + n) of w through one engine until idle and
 * stores their tokens; returns the engine's stats. */
static kvc_engine_stats serve(const kvc_model *m, bool latent, const kvc_engine_params *p, workload *w, int first,
                              int n, const char *what) {
    kvc_engine_adapter_params ap = {.latent = latent, .cache = {.block_size = BLOCK}};
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    if (kvc_engine_adapter_create(m, &ap, p, &a) != KVC_OK ||
        kvc_engine_create(kvc_engine_adapter_model(a), p, &e) != KVC_OK)
        fail_msg("%s: %s", what, kvc_last_error());
    for (int i = first; i < first + n; i++) {
        kvc_engine_request r = kvc_engine_request_default();
        r.id = i;
        r.prompt = w->prompts[i];
        r.n_prompt = w->lens[i];
        r.max_new_tokens = MAX_NEW;
        if (kvc_engine_add_request(e, &r) != KVC_OK) fail_msg("%s: add %d: %s", what, i, kvc_last_error());
    }
    for (int guard = 0;; guard++) {
        kvc_engine_step_result res;
        kvc_status st = kvc_engine_step(e, &res);
        if (st != KVC_OK) fail_msg("%s: step %d: %s", what, guard, kvc_last_error());
        if (kvc_engine_check(e) != KVC_OK) fail_msg("%s: check after step %d: %s", what, guard, kvc_last_error());
        if (res.idle) break;
        if (guard > 100000) fail_msg("%s: no end after %d steps", what, guard);
    }
    for (int i = first; i < first + n; i++) {
        kvc_engine_request_info info;
        int64_t got = 0;
        assert_int_equal(kvc_engine_request_get(e, i, &info), KVC_OK);
        assert_int_equal(info.n_generated, MAX_NEW);
        assert_int_equal(kvc_engine_request_output(e, i, w->out[i], MAX_NEW, &got), KVC_OK);
        assert_int_equal(got, MAX_NEW);
        assert_int_equal(kvc_engine_request_release(e, i), KVC_OK);
    }
    kvc_engine_stats stats;
    assert_int_equal(kvc_engine_get_stats(e, &stats), KVC_OK);
    for (int32_t k = 0; k < stats.n_keys; k++) assert_int_equal(stats.blocks_in_use[k], 0);
    /* the full-attention pools, against what the requests need all at once */
    const kvc_manager *mgr = kvc_engine_manager(e);
    int checked = 0;
    for (int32_t k = 0; k < stats.n_keys && first == 0 && n == N_REQ; k++) {
        if (strcmp(kvc_manager_key(mgr, k), "FullAttention") != 0) continue;
        checked++;
        int64_t demand = 0; /* of every key drawing from the full-attention key's pool */
        for (int32_t j = 0; j < stats.n_keys; j++)
            for (int i = 0; kvc_manager_pool_key(mgr, j) == kvc_manager_pool_key(mgr, k) && i < N_REQ; i++)
                demand += kvc_manager_worst_blocks(mgr, j, w->lens[i] + MAX_NEW - 1);
        if (demand < OVERSUBSCRIPTION * (stats.num_blocks[k] - 1))
            fail_msg("%s: %lld blocks demanded, pool of %lld: less than %dx", what, (long long)demand,
                     (long long)stats.num_blocks[k] - 1, OVERSUBSCRIPTION);
    }
    if (first == 0 && n == N_REQ && checked == 0) fail_msg("%s: no FullAttention pool", what);
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
    return stats;
}

static void pressure(int f) {
    const kvc_demo_family *fam = &kvc_demo_families[f];
    kvc_model *m = NULL;
    assert_int_equal(kvc_demo_model(fam, &m), KVC_OK);
    static workload busy, alone;
    make_workload(&busy, kvc_model_config_of(m)->vocab_size);
    alone = busy;

    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = 64;
    p.max_num_seqs = N_REQ;
    p.max_requests = N_REQ;
    p.reserved_decode_tokens = 0; /* admit as many as fit: decodes then preempt */
    p.plan = KVC_ENGINE_PLAN_OFFLINE;
    p.plan_concurrency = 2; /* full-attention pools of 2 * 64 / 16 + 1 = 9 blocks: 48 requests need 96 */
    kvc_engine_stats st = serve(m, fam->latent, &p, &busy, 0, N_REQ, fam->name);
    if (st.preemptions < 1) fail_msg("%s: only %lld preemptions", fam->name, (long long)st.preemptions);

    kvc_engine_params solo = p;
    solo.max_num_seqs = 1;
    solo.max_requests = 1;
    solo.plan_concurrency = 1;
    for (int i = 0; i < N_REQ; i++) serve(m, fam->latent, &solo, &alone, i, 1, "alone");
    for (int i = 0; i < N_REQ; i++)
        if (memcmp(busy.out[i], alone.out[i], sizeof busy.out[i]) != 0)
            fail_msg("%s: request %d's tokens differ under pressure from its run alone", fam->name, i);
    print_message("%s: %d requests at once on %lld full-attention blocks, %lld preemptions, outputs equal to their "
                  "runs alone\n",
                  fam->name, N_REQ, (long long)st.num_blocks[0] - 1, (long long)st.preemptions);
    kvc_model_destroy(m);
}

static void test_pressure_qwen3(void **state) {
    (void)state;
    pressure(0);
}

static void test_pressure_gpt_oss(void **state) {
    (void)state;
    pressure(1);
}

static void test_pressure_deepseek_v3(void **state) {
    (void)state;
    pressure(2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pressure_qwen3),
        cmocka_unit_test(test_pressure_gpt_oss),
        cmocka_unit_test(test_pressure_deepseek_v3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
