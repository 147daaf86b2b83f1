/* `mpirun -np 2 kvcache bench pd [--json]`: TTFT and TPOT percentiles of
 * prefill/decode disaggregation (src/dist/pd.h) against one instance, on the
 * same arrival mix, in the same run.
 *
 * BP_REQUESTS requests arrive one every BP_GAP_MS ms; every BP_LONG_EVERY-th
 * has a long prompt (BP_LONG tokens), the others BP_SHORT; each generates
 * BP_NEW tokens (greedy, no end-of-sequence) over a random llama-like model.
 *   one instance  rank 0 alone, a BOTH engine (the BUDGET scheduler with its
 *                 stall-free limit: prompt chunks beside the decode rows);
 *   P/D           rank 0 a PREFILL engine that sends each prefilled request
 *                 to rank 1, a DECODE engine that decodes it.
 * TTFT: arrival (rank 0) to the first token (where it is sampled); TPOT: the
 * request's (finish - first token) / (tokens - 1); both ranks read the same
 * CLOCK_MONOTONIC (one machine). The ranks share the machine's cores: P/D
 * runs two engines on them where one instance runs one. Printed, never
 * asserted. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "bench.h"
#include "demo_workload.h"
#include "dist/pd.h"

#ifdef KVC_HAVE_MPI
#include "dist/comm.h"
#include <time.h>

#define BP_REQUESTS   32
#define BP_GAP_MS     20
#define BP_LONG_EVERY 4
#define BP_LONG       512
#define BP_SHORT      32
#define BP_NEW        32
#define BP_TAG        90101

static const char BP_CONFIG[] =
    "{\"model_type\":\"llama\",\"vocab_size\":256,\"hidden_size\":256,\"intermediate_size\":512,"
    "\"num_hidden_layers\":4,\"num_attention_heads\":8,\"num_key_value_heads\":4,\"head_dim\":32,"
    "\"rope_theta\":10000,\"rms_norm_eps\":1e-5,\"max_position_embeddings\":4096}";

typedef struct bp_engine {
    kvc_model *m;
    kvc_engine_adapter *a;
    kvc_engine *e;
} bp_engine;

static kvc_status bp_open(bp_engine *b, kvc_engine_role role) {
    memset(b, 0, sizeof *b);
    kvc_model_config cfg;
    kvc_status st = kvc_model_config_parse(BP_CONFIG, "bench pd", &cfg);
    if (st == KVC_OK) st = kvc_model_create_random(&cfg, 3, &b->m);
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = BP_LONG + BP_NEW;
    p.max_num_seqs = BP_REQUESTS;
    p.max_requests = BP_REQUESTS;
    p.reserved_decode_tokens = 0;
    p.check = false;
    p.role = role;
    const kvc_engine_adapter_params ap = kvc_engine_adapter_default_params(); /* blocks of 16 tokens */
    if (st == KVC_OK) st = kvc_engine_adapter_create(b->m, &ap, &p, &b->a);
    if (st == KVC_OK) st = kvc_engine_create(kvc_engine_adapter_model(b->a), &p, &b->e);
    return st;
}

static void bp_close(bp_engine *b) {
    kvc_engine_destroy(b->e);
    kvc_engine_adapter_destroy(b->a);
    kvc_model_destroy(b->m);
}

/* The workload: request i's prompt and arrival (ns after t0). */
static int32_t bp_prompt[BP_LONG];

static kvc_engine_request bp_request(int64_t i, int64_t t0) {
    kvc_engine_request r = kvc_engine_request_default();
    r.id = i;
    r.prompt = bp_prompt;
    r.n_prompt = i % BP_LONG_EVERY == BP_LONG_EVERY - 1 ? BP_LONG : BP_SHORT;
    r.max_new_tokens = BP_NEW;
    r.arrival_ns = t0 + i * BP_GAP_MS * 1000000;
    return r;
}

/* Adds the requests due by now; *next = the first not added yet. */
static kvc_status bp_arrivals(kvc_engine *e, int64_t t0, int64_t *next) {
    kvc_status st = KVC_OK;
    for (; st == KVC_OK && *next < BP_REQUESTS; (*next)++) {
        const kvc_engine_request r = bp_request(*next, t0);
        if (r.arrival_ns > kvc_engine_now_ns()) break;
        st = kvc_engine_add_request(e, &r);
    }
    return st;
}

/* Per request: first token and finish (ns) from the engine that sampled them. */
typedef struct bp_times {
    int64_t first_ns[BP_REQUESTS], finish_ns[BP_REQUESTS], n_gen[BP_REQUESTS];
} bp_times;

static kvc_status bp_collect(const kvc_engine *e, bp_times *t) {
    kvc_status st = KVC_OK;
    for (int64_t i = 0; i < BP_REQUESTS && st == KVC_OK; i++) {
        kvc_engine_request_times tm;
        kvc_engine_request_info info;
        st = kvc_engine_request_times_get(e, i, &tm);
        if (st == KVC_OK) st = kvc_engine_request_get(e, i, &info);
        t->first_ns[i] = tm.first_token_ns;
        t->finish_ns[i] = tm.finish_ns;
        t->n_gen[i] = info.n_generated;
    }
    return st;
}

static void bp_idle(void) { nanosleep(&(struct timespec){.tv_nsec = 200000}, NULL); }

/* A barrier that sleeps while it waits (MPI_Barrier polls a core, which the other rank's run needs). */
static void bp_barrier(void) {
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done; MPI_Test(&req, &done, MPI_STATUS_IGNORE))
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
}

/* Rank 0 alone: one BOTH engine over the arrivals. */
static kvc_status bp_single(int64_t t0, bp_times *t) {
    bp_engine b;
    kvc_status st = bp_open(&b, KVC_ENGINE_ROLE_BOTH);
    int64_t next = 0;
    kvc_engine_stats s = {.finished_total = 0};
    while (st == KVC_OK && s.finished_total < BP_REQUESTS) {
        kvc_engine_step_result res;
        st = bp_arrivals(b.e, t0, &next);
        if (st == KVC_OK) st = kvc_engine_step(b.e, &res);
        if (st == KVC_OK && res.idle) bp_idle();
        if (st == KVC_OK) st = kvc_engine_get_stats(b.e, &s);
    }
    if (st == KVC_OK) st = bp_collect(b.e, t);
    bp_close(&b);
    return st;
}

/* Rank 0 of P/D: prefill the arrivals and send each prefilled request. */
static kvc_status bp_prefill(int64_t t0, const kvci_transport *tr) {
    bp_engine b;
    kvci_pd_layout l = {0};
    kvc_status st = bp_open(&b, KVC_ENGINE_ROLE_PREFILL);
    if (st == KVC_OK) st = kvci_pd_layout_init(kvc_engine_manager(b.e), kvc_engine_adapter_model(b.a)->cache_info, &l);
    int64_t next = 0, sent = 0;
    while (st == KVC_OK && sent < BP_REQUESTS) {
        kvc_engine_step_result res;
        st = bp_arrivals(b.e, t0, &next);
        if (st == KVC_OK) st = kvc_engine_step(b.e, &res);
        if (st == KVC_OK && res.idle) bp_idle();
        for (int64_t i = sent; st == KVC_OK && i < next; i++) { /* requests prefill in arrival order */
            kvc_engine_request_info info;
            st = kvc_engine_request_get(b.e, i, &info);
            if (st != KVC_OK || info.state != KVC_REQ_FINISHED) break;
            const kvc_engine_request r = bp_request(i, t0);
            st = kvci_pd_send(b.e, &l, tr, 1, (uint64_t)i, &r, 60000, false);
            if (st == KVC_OK) st = kvc_engine_request_release(b.e, i);
            sent += st == KVC_OK;
        }
    }
    kvci_pd_layout_free(&l);
    bp_close(&b);
    return st;
}

/* Rank 1 of P/D: receive and decode every request, then send rank 0 the times. */
static kvc_status bp_decode(const kvci_transport *tr) {
    bp_engine b;
    kvci_pd_receiver rx = {0};
    kvc_status st = bp_open(&b, KVC_ENGINE_ROLE_DECODE);
    if (st == KVC_OK) st = kvci_pd_receiver_init(b.e, kvc_engine_adapter_model(b.a)->cache_info, BP_REQUESTS, &rx);
    kvc_engine_stats s = {.finished_total = 0};
    while (st == KVC_OK && s.finished_total < BP_REQUESTS) {
        kvci_pd_event ev;
        st = kvci_pd_receive(&rx, b.e, tr, 60000, &ev);
        if (st == KVC_OK && ev.kind == KVC_PD_FAILED) st = ev.status;
        kvc_engine_step_result res = {.idle = true};
        if (st == KVC_OK) st = kvc_engine_step(b.e, &res);
        if (st == KVC_OK && res.idle && ev.kind == KVC_PD_NONE) bp_idle();
        if (st == KVC_OK) st = kvc_engine_get_stats(b.e, &s);
    }
    static bp_times t;
    if (st == KVC_OK) st = bp_collect(b.e, &t);
    MPI_Send(&t, (int)sizeof t, MPI_BYTE, 0, BP_TAG, MPI_COMM_WORLD);
    if (rx.staged != NULL) kvci_pd_receiver_free(&rx);
    bp_close(&b);
    return st;
}

/* p50, p90, p99 of TTFT and TPOT in ms. */
static void bp_percentiles(int64_t t0, const bp_times *t, double ttft[3], double tpot[3]) {
    double a[BP_REQUESTS], b[BP_REQUESTS];
    for (int64_t i = 0; i < BP_REQUESTS; i++) {
        a[i] = (double)(t->first_ns[i] - bp_request(i, t0).arrival_ns) / 1e6;
        b[i] = t->n_gen[i] > 1 ? (double)(t->finish_ns[i] - t->first_ns[i]) / 1e6 / (double)(t->n_gen[i] - 1) : 0.0;
    }
    const double q[3] = {0.5, 0.9, 0.99};
    for (int k = 0; k < 3; k++) {
        ttft[k] = kvc_demo_percentile(a, BP_REQUESTS, q[k]);
        tpot[k] = kvc_demo_percentile(b, BP_REQUESTS, q[k]);
    }
}

static void bp_print(bool json, const char *name, const double ttft[3], const double tpot[3]) {
    if (json)
        printf("{\"bench\":\"pd\",\"run\":\"%s\",\"ttft_ms\":[%.3f,%.3f,%.3f],\"tpot_ms\":[%.3f,%.3f,%.3f]}\n", name,
               ttft[0], ttft[1], ttft[2], tpot[0], tpot[1], tpot[2]);
    else
        printf("  %-14s TTFT ms p50 %8.2f p90 %8.2f p99 %8.2f   TPOT ms p50 %7.2f p90 %7.2f p99 %7.2f\n", name, ttft[0],
               ttft[1], ttft[2], tpot[0], tpot[1], tpot[2]);
}

int kvc_bench_pd(const kvc_bench_opts *opts) {
    kvc_comm comm;
    kvci_transport tr;
    kvc_status st = kvc_bench_mpi_pair_open("pd", &comm, &tr);
    for (int i = 0; i < BP_LONG; i++) bp_prompt[i] = (i * 11 + 5) % 256;
    static bp_times single, pd;
    int64_t t0 = 0;
    double ttft[3], tpot[3];
    if (st == KVC_OK && tr.rank == 0) {
        if (!opts->json)
            printf("kvcache bench pd: %d requests, one every %d ms, every %d-th with a prompt of %d tokens (else %d), "
                   "%d new tokens each, random llama-like model (4 layers, hidden 256)\n",
                   BP_REQUESTS, BP_GAP_MS, BP_LONG_EVERY, BP_LONG, BP_SHORT, BP_NEW);
        st = bp_single(t0 = kvc_engine_now_ns(), &single);
        if (st == KVC_OK) bp_percentiles(t0, &single, ttft, tpot), bp_print(opts->json, "one instance", ttft, tpot);
    }
    if (tr.ops != NULL) bp_barrier();
    if (st == KVC_OK && tr.rank == 0) {
        st = bp_prefill(t0 = kvc_engine_now_ns(), &tr);
        MPI_Recv(&pd, (int)sizeof pd, MPI_BYTE, 1, BP_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (st == KVC_OK) bp_percentiles(t0, &pd, ttft, tpot), bp_print(opts->json, "P/D", ttft, tpot);
    } else if (st == KVC_OK) {
        st = bp_decode(&tr);
    }
    if (st != KVC_OK) fprintf(stderr, "kvcache bench pd: %s\n", kvc_last_error());
    kvci_transport_close(&tr);
    kvc_comm_finalize(&comm);
    return st == KVC_OK ? 0 : 1;
}

#endif
