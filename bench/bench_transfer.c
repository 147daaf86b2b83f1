/* `mpirun -np 2 kvcache bench transfer [--json]`: the P/D KV transfer
 * (src/dist/pd.h) of one request against a plain memcpy of the same bytes
 * and MPI's own bandwidth (a raw MPI_Send / MPI_Recv of the same bytes), in
 * the same run, on the same two ranks.
 *
 * Rank 0 runs a PREFILL engine over a random llama-like model (BT_LAYERS
 * layers of BT_KV_HEADS x 64 f32 KV, blocks of 16) and prefills one prompt
 * of BT_TOKENS tokens; rank 1 runs the DECODE engine of the same model.
 * Timed, best of BT_ITERS, each after a barrier:
 *   memcpy     rank 0 copies the payload's bytes between two buffers;
 *   MPI        rank 0 MPI_Send's them, rank 1 MPI_Recv's them and answers
 *              with one byte; rank 0 times until the answer;
 *   MPI put    rank 0 MPI_Put's them into a window over rank 1's buffer
 *              (passive target: lock, put, unlock), the one-sided
 *              alternative to the two-sided transport;
 *   KV         rank 0 kvci_pd_send (pack the blocks + send), rank 1
 *              kvci_pd_receive (header check + payload into staging) and the
 *              same one-byte answer; plus the unpack into pool blocks that a
 *              decode engine's loader does (kvci_pd_copy_blocks, timed on rank
 *              0 into the request's own blocks: the same copy).
 * GB/s are payload bytes (1e9) per second. Printed, never asserted. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "bench.h"
#include "dist/pd.h"

#ifdef KVC_HAVE_MPI
#include "dist/comm.h"

#define BT_TOKENS   1024
#define BT_LAYERS   16
#define BT_KV_HEADS 8
#define BT_ITERS    5
#define BT_BLOCK    16
#define BT_ACK_TAG  90001
#define BT_RAW_TAG  90002

static const char BT_CONFIG[] =
    "{\"model_type\":\"llama\",\"vocab_size\":256,\"hidden_size\":128,\"intermediate_size\":256,"
    "\"num_hidden_layers\":16,\"num_attention_heads\":8,\"num_key_value_heads\":8,\"head_dim\":64,"
    "\"rope_theta\":10000,\"rms_norm_eps\":1e-5,\"max_position_embeddings\":4096}";

typedef struct bt_times {
    double memcpy_s, mpi_s, put_s, kv_s, unpack_s;
} bt_times;

typedef struct bt_side {
    kvc_model *m;
    kvc_engine_adapter *a;
    kvc_engine *e;
    int32_t prompt[BT_TOKENS];
    kvc_engine_request r;
} bt_side;

static kvc_status side_open(bt_side *s, kvc_engine_role role) {
    kvc_model_config cfg;
    kvc_status st = kvc_model_config_parse(BT_CONFIG, "bench transfer", &cfg);
    if (st == KVC_OK) st = kvc_model_create_random(&cfg, 1, &s->m);
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = BT_TOKENS + 1;
    p.max_num_seqs = 1;
    p.max_num_batched_tokens = BT_TOKENS + 1;
    p.reserved_decode_tokens = 0;
    p.check = false;
    p.role = role;
    const kvc_engine_adapter_params ap = {
        .cache = {.block_size = BT_BLOCK, .kv_dtype = KVC_DTYPE_F32, .kv_layout = KVC_BLOCK_BNBSND}};
    if (st == KVC_OK) st = kvc_engine_adapter_create(s->m, &ap, &p, &s->a);
    if (st == KVC_OK) st = kvc_engine_create(kvc_engine_adapter_model(s->a), &p, &s->e);
    for (int i = 0; i < BT_TOKENS; i++) s->prompt[i] = (i * 7 + 3) % 256;
    s->r = kvc_engine_request_default();
    s->r.id = 0;
    s->r.prompt = s->prompt;
    s->r.n_prompt = BT_TOKENS;
    s->r.max_new_tokens = 1;
    return st;
}

static void side_close(bt_side *s) {
    kvc_engine_destroy(s->e);
    kvc_engine_adapter_destroy(s->a);
    kvc_model_destroy(s->m);
}

static void ack_send(void) {
    char b = 1;
    MPI_Send(&b, 1, MPI_BYTE, 0, BT_ACK_TAG, MPI_COMM_WORLD);
}

static void ack_wait(void) {
    char b = 0;
    MPI_Recv(&b, 1, MPI_BYTE, 1, BT_ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static double best(double a, double b) { return a < b ? a : b; }

/* Both ranks: a window over rank 1's buffer of `bytes`; rank 0 puts src into it BT_ITERS times (best
 * time into *put_s). Collective. */
static void time_puts(int rank, const char *src, int64_t bytes, double *put_s) {
    char *dst = rank == 1 ? kvci_malloc((size_t)bytes) : NULL;
    MPI_Win win;
    MPI_Win_create(dst, rank == 1 && dst ? bytes : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int it = 0; it < BT_ITERS; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank != 0) continue;
        const double t0 = kvc_bench_now();
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        MPI_Put(src, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
        MPI_Win_unlock(1, win);
        *put_s = best(*put_s, kvc_bench_now() - t0);
    }
    MPI_Win_free(&win);
    kvci_free(dst);
}

/* Rank 0: prefill, then the timings. */
static kvc_status rank0(bt_side *s, const kvci_transport *t, int64_t *bytes, bt_times *out) {
    kvc_status st = kvc_engine_add_request(s->e, &s->r);
    kvc_engine_step_result res = {.idle = false};
    while (st == KVC_OK && !res.idle) st = kvc_engine_step(s->e, &res);
    kvci_pd_layout l = {0};
    if (st == KVC_OK)
        st = kvci_pd_layout_init(kvc_engine_manager(s->e), kvc_engine_adapter_model(s->a)->cache_info, &l);
    const kvc_manager *m = kvc_engine_manager(s->e);
    *bytes = kvci_pd_blocks_offset(&l, BT_TOKENS);
    for (int32_t k = 0; k < l.n_keys; k++) {
        int64_t first = 0, n = 0;
        kvci_pd_block_range(m, k, BT_TOKENS - 1, &first, &n);
        *bytes += n * l.block_bytes[k];
    }
    char *src = kvci_malloc((size_t)*bytes), *dst = kvci_malloc((size_t)*bytes);
    if (st == KVC_OK && (src == NULL || dst == NULL)) st = kvci_fail(KVC_ENOMEM, "bench transfer: out of memory");
    if (st == KVC_OK) st = kvci_pd_copy_blocks(m, &l, 0, BT_TOKENS, BT_TOKENS - 1, 0, src, true);
    *out = (bt_times){1e30, 1e30, 1e30, 1e30, 1e30};
    int64_t shared[1] = {st == KVC_OK ? *bytes : 0}; /* rank 1 sizes its window from it */
    MPI_Bcast(shared, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (shared[0] > 0) time_puts(0, src, *bytes, &out->put_s);
    for (int it = 0; it < BT_ITERS && st == KVC_OK; it++) {
        double t0 = kvc_bench_now();
        memcpy(dst, src, (size_t)*bytes);
        out->memcpy_s = best(out->memcpy_s, kvc_bench_now() - t0);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = kvc_bench_now();
        MPI_Send(src, (int)*bytes, MPI_BYTE, 1, BT_RAW_TAG, MPI_COMM_WORLD);
        ack_wait();
        out->mpi_s = best(out->mpi_s, kvc_bench_now() - t0);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = kvc_bench_now();
        st = kvci_pd_send(s->e, &l, t, 1, (uint64_t)it, &s->r, 60000, false);
        ack_wait();
        out->kv_s = best(out->kv_s, kvc_bench_now() - t0);
        t0 = kvc_bench_now();
        if (st == KVC_OK) st = kvci_pd_copy_blocks(m, &l, 0, BT_TOKENS, BT_TOKENS - 1, 0, src, false);
        out->unpack_s = best(out->unpack_s, kvc_bench_now() - t0);
    }
    kvci_free(src);
    kvci_free(dst);
    kvci_pd_layout_free(&l);
    return st;
}

/* Rank 1: the receiving ends. */
static kvc_status rank1(bt_side *s, const kvci_transport *t) {
    kvci_pd_receiver rx;
    kvc_status st = kvci_pd_receiver_init(s->e, kvc_engine_adapter_model(s->a)->cache_info, 1, &rx);
    int64_t bytes[1] = {0};
    MPI_Bcast(bytes, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    double unused = 0.0;
    if (bytes[0] > 0)
        time_puts(1, NULL, bytes[0], &unused);
    else
        st = kvci_fail(KVC_EINTERNAL, "bench transfer: rank 0 failed before the timings");
    char *buf = NULL;
    for (int it = 0; it < BT_ITERS && st == KVC_OK; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Status ms;
        int count = 0;
        MPI_Probe(0, BT_RAW_TAG, MPI_COMM_WORLD, &ms);
        MPI_Get_count(&ms, MPI_BYTE, &count);
        if (buf == NULL) buf = kvci_malloc((size_t)count + 1);
        MPI_Recv(buf, count, MPI_BYTE, 0, BT_RAW_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ack_send();
        MPI_Barrier(MPI_COMM_WORLD);
        kvci_pd_event ev = {.kind = KVC_PD_NONE};
        while (st == KVC_OK && ev.kind == KVC_PD_NONE) st = kvci_pd_receive(&rx, s->e, t, 60000, &ev);
        ack_send();
        if (st == KVC_OK && ev.kind != KVC_PD_ADDED) st = ev.status;
        if (st == KVC_OK) st = kvc_engine_request_release(s->e, 0);
        kvci_pd_receiver_forget(&rx, 0);
    }
    kvci_free(buf);
    if (rx.staged != NULL) kvci_pd_receiver_free(&rx);
    return st;
}

static void print_times(const kvc_bench_opts *opts, int64_t bytes, const bt_times *t) {
    const double gb = (double)bytes / 1e9, kv = t->kv_s + t->unpack_s;
    if (opts->json) {
        printf("{\"bench\":\"transfer\",\"bytes\":%lld,\"tokens\":%d,\"memcpy_gbs\":%.3f,\"mpi_gbs\":%.3f,"
               "\"mpi_put_gbs\":%.3f,\"kv_transfer_gbs\":%.3f,\"kv_send_receive_ms\":%.3f,\"kv_unpack_ms\":%.3f}\n",
               (long long)bytes, BT_TOKENS, gb / t->memcpy_s, gb / t->mpi_s, gb / t->put_s, gb / kv, t->kv_s * 1e3,
               t->unpack_s * 1e3);
        return;
    }
    printf("kvcache bench transfer: one request of %d tokens, random llama-like model (%d layers, %d KV heads x 64, "
           "f32 KV, blocks of %d): %lld payload bytes, best of %d\n",
           BT_TOKENS, BT_LAYERS, BT_KV_HEADS, BT_BLOCK, (long long)bytes, BT_ITERS);
    printf("  %-34s %8.2f GB/s  %8.3f ms\n", "memcpy (one rank)", gb / t->memcpy_s, t->memcpy_s * 1e3);
    printf("  %-34s %8.2f GB/s  %8.3f ms\n", "MPI_Send/Recv (raw)", gb / t->mpi_s, t->mpi_s * 1e3);
    printf("  %-34s %8.2f GB/s  %8.3f ms\n", "MPI_Put (one-sided, raw)", gb / t->put_s, t->put_s * 1e3);
    printf("  %-34s %8.2f GB/s  %8.3f ms  (pack + send + receive %.3f ms, unpack %.3f ms)\n",
           "KV transfer (P/D send + receive)", gb / kv, kv * 1e3, t->kv_s * 1e3, t->unpack_s * 1e3);
}

kvc_status kvc_bench_mpi_pair_open(const char *what, kvc_comm *comm, kvci_transport *tr) {
    memset(tr, 0, sizeof *tr);
    kvc_status st = kvc_comm_init(NULL, NULL, comm);
    if (st == KVC_OK) st = kvci_transport_mpi_open(comm, tr);
    if (st == KVC_OK && tr->n_ranks != 2)
        st = kvci_fail(KVC_EINVAL, "runs on 2 MPI ranks: mpirun -np 2 kvcache bench %s (got %d)", what, tr->n_ranks);
    return st;
}

int kvc_bench_transfer(const kvc_bench_opts *opts) {
    kvc_comm comm;
    kvci_transport t;
    kvc_status st = kvc_bench_mpi_pair_open("transfer", &comm, &t);
    bt_side s = {0};
    if (st == KVC_OK) st = side_open(&s, t.rank == 0 ? KVC_ENGINE_ROLE_PREFILL : KVC_ENGINE_ROLE_DECODE);
    bt_times times = {0};
    int64_t bytes = 0;
    if (st == KVC_OK) st = t.rank == 0 ? rank0(&s, &t, &bytes, &times) : rank1(&s, &t);
    if (st == KVC_OK && t.rank == 0) print_times(opts, bytes, &times);
    if (st != KVC_OK) fprintf(stderr, "kvcache bench transfer: %s\n", kvc_last_error());
    side_close(&s);
    kvci_transport_close(&t);
    kvc_comm_finalize(&comm);
    return st == KVC_OK ? 0 : 1;
}

#endif
