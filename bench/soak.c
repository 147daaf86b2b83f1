/* Soak runs of the manager and the engine (soak.h). */
#include "soak.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/internal.h"
#include "bench.h"
#include "kvcache/engine.h"
#include "trace_replay.h"

static uint64_t next_random(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void checkpoint(kvc_soak_figures *f, int i, int64_t done) {
    struct rusage ru;
    long pages = 0, page_kib = sysconf(_SC_PAGESIZE) / 1024;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm != NULL) {
        long size = 0;
        if (fscanf(statm, "%ld %ld", &size, &pages) != 2) pages = 0;
        fclose(statm);
    }
    f->done_at[i] = done;
    f->heap_bytes[i] = (int64_t)mallinfo2().uordblks;
    f->rss_kib[i] = pages * page_kib;
    f->peak_rss_kib[i] = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

/* Index of the checkpoint reached when `done` of n requests are finished, or -1. */
static int checkpoint_at(int64_t done, int64_t n) {
    for (int i = 0; i < KVC_SOAK_CHECKPOINTS; i++)
        if (done == (n >> (KVC_SOAK_CHECKPOINTS - 1 - i))) return i;
    return -1;
}

/* ---- manager ---------------------------------------------------------------- */

#define SOAK_LIVE 64

static const char soak_trace[] =
    "{\"max_model_len\": 4096, \"layers\": ["
    "{\"caches\": [{\"name\": \"k\", \"attn_type\": \"FullAttention\", \"num_head\": 1, \"dim\": 8, "
    "\"dtype\": \"bf16\", \"block_size\": 16}]},"
    "{\"caches\": [{\"name\": \"k\", \"attn_type\": \"SlidingWindow\", \"num_head\": 1, \"dim\": 8, "
    "\"dtype\": \"bf16\", \"block_size\": 16, \"sliding_window\": 64}]}],"
    "\"block_num\": {\"FullAttention\": 641, \"SlidingWindow\": 641}, \"ops\": []}";

typedef struct live_request {
    int64_t id, computed, steps_left;
} live_request;

kvc_status kvc_soak_manager(int64_t n_requests, kvc_soak_figures *out) {
    memset(out, 0, sizeof *out);
    char err[256];
    kvc_trace *t = NULL;
    if (kvc_trace_load(soak_trace, strlen(soak_trace), NULL, &t, err, sizeof err) != KVC_TRACE_EXIT_OK)
        return kvci_fail(KVC_EINTERNAL, "soak: the built-in trace does not load: %s", err);
    kvc_manager *m = t->manager;
    live_request live[SOAK_LIVE];
    int n_live = 0;
    int64_t next_id = 0, done = 0;
    uint64_t seed = 7;
    kvc_status st = KVC_OK;
    const double t0 = kvc_bench_now();
    while (done < n_requests && st >= 0) {
        if (n_live < SOAK_LIVE && next_id < n_requests) {
            live_request r = {next_id++, 0, 1 + (int64_t)(next_random(&seed) % 16)};
            int64_t prompt = 16 + (int64_t)(next_random(&seed) % 256);
            st = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = r.id, .num_new_tokens = prompt});
            if (st == KVC_NO_SPACE) { /* make room: the oldest live request finishes early */
                out->refused++;
                next_id--;
                st = n_live > 0 ? kvc_manager_free(m, live[0].id)
                                : kvci_fail(KVC_EINTERNAL, "soak: an empty pool refused");
                if (n_live > 0) memmove(live, live + 1, (size_t)--n_live * sizeof *live), done++;
            } else if (st >= 0) {
                r.computed = prompt;
                live[n_live++] = r;
            }
        } else {
            for (int i = 0; i < n_live && st >= 0; i++) { /* one decode step of every live request */
                live_request *r = &live[i];
                st = kvc_manager_allocate_slots(
                    m, &(kvc_slot_request){.request_id = r->id, .computed_tokens = r->computed, .num_new_tokens = 1});
                if (st == KVC_NO_SPACE)
                    out->refused++, st = KVC_OK, r->steps_left = 0;
                else
                    r->computed++, r->steps_left--;
            }
            for (int i = 0; i < n_live && st >= 0;) {
                if (live[i].steps_left > 0) {
                    i++;
                    continue;
                }
                st = kvc_manager_free(m, live[i].id);
                live[i] = live[--n_live];
                done++;
                int c = checkpoint_at(done, n_requests);
                if (c >= 0) checkpoint(out, c, done);
            }
        }
        int c = checkpoint_at(done, n_requests);
        if (c >= 0 && out->done_at[c] != done) checkpoint(out, c, done);
    }
    out->seconds = kvc_bench_now() - t0;
    out->requests = done;
    for (int32_t k = 0; st >= 0 && k < kvc_manager_n_keys(m); k++)
        if (kvc_manager_num_free(m, k) != kvc_manager_num_blocks(m, k) - 1)
            st =
                kvci_fail(KVC_EINTERNAL, "soak: pool %s holds blocks after every request ended", kvc_manager_key(m, k));
    if (st >= 0) st = kvc_manager_check_invariants(m);
    kvc_trace_destroy(t);
    return st < 0 ? st : KVC_OK;
}

/* ---- engine ------------------------------------------------------------------ */

#define SOAK_BATCH 64
#define SOAK_VOCAB 64

/* The toy model: one full-attention layer whose cache it never reads; the
 * logits put all weight on (last token + 1) mod vocab. */
typedef struct toy {
    kvc_cache_entry entries[2];
    kvc_layer_cache_info layer;
    kvc_model_cache_info ci;
    kvc_engine_model model;
} toy;

static void toy_setter(void *user, const kvc_tensor *t) { (void)user, (void)t; }

static kvc_status toy_forward(void *self, const int32_t *ids, const kvc_engine_batch *batch, float *logits) {
    (void)self;
    const kvc_step_metadata *md = batch->md;
    for (int64_t b = 0; b < md->n_rows; b++) {
        float *row = logits + b * SOAK_VOCAB;
        for (int64_t v = 0; v < SOAK_VOCAB; v++) row[v] = 0.0f;
        if (md->seq_lens_q[b] > 0) row[(ids[md->cu_seq_lens_q[b] - 1] + 1) % SOAK_VOCAB] = 1.0f; /* not padding */
    }
    return KVC_OK;
}

static void toy_init(toy *m) {
    memset(m, 0, sizeof *m);
    for (int kv = 0; kv < 2; kv++) {
        kvc_cache_entry *e = &m->entries[kv];
        *e = kvc_cache_entry_default();
        snprintf(e->name, sizeof e->name, "%s", kv == 0 ? "k_cache" : "v_cache");
        e->attn_type = KVC_ATTN_FULL;
        e->num_head = 1;
        e->n_dims = 1;
        e->dim[0] = 4;
        e->dtype = KVC_DTYPE_F32;
        e->block_size = 16;
        e->tensor_setter = toy_setter;
    }
    m->layer = (kvc_layer_cache_info){.layer_idx = 0, .n_caches = 2, .caches = m->entries};
    m->ci = (kvc_model_cache_info){.num_layers = 1, .n_layer_infos = 1, .layer_infos = &m->layer};
    m->model = (kvc_engine_model){.self = m, .vocab_size = SOAK_VOCAB, .cache_info = &m->ci, .forward = toy_forward};
}

/* Adds request id with a prompt drawn from seed. */
static kvc_status add_request(kvc_engine *e, int64_t id, uint64_t *seed) {
    int32_t prompt[36];
    kvc_engine_request r = kvc_engine_request_default();
    r.id = id;
    r.n_prompt = 4 + (int64_t)(next_random(seed) % 32);
    for (int64_t i = 0; i < r.n_prompt; i++) prompt[i] = (int32_t)(next_random(seed) % SOAK_VOCAB);
    r.prompt = prompt;
    r.max_new_tokens = 1 + (int64_t)(next_random(seed) % 8);
    return kvc_engine_add_request(e, &r);
}

kvc_status kvc_soak_engine(int64_t n_requests, kvc_soak_figures *out) {
    memset(out, 0, sizeof *out);
    toy m;
    toy_init(&m);
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = 64;
    p.max_num_seqs = SOAK_BATCH;
    p.max_requests = 2 * SOAK_BATCH;
    p.plan_concurrency = 8; /* 4 blocks each: 33 blocks, a sixth of what 64 running requests may need */
    p.reserved_decode_tokens = 0;
    p.check = false;
    kvc_engine *e = NULL;
    kvc_status st = kvc_engine_create(&m.model, &p, &e);
    if (st != KVC_OK) return st;
    int64_t next_id = 0, done = 0;
    int64_t *held = kvci_calloc((size_t)p.max_requests, sizeof *held); /* [max_requests] ids held, -1: free */
    if (held == NULL) st = kvci_fail(KVC_ENOMEM, "soak: out of memory");
    for (int64_t i = 0; held != NULL && i < p.max_requests; i++) held[i] = -1;
    uint64_t seed = 11;
    const double t0 = kvc_bench_now();
    while (st == KVC_OK && done < n_requests) {
        for (int64_t i = 0; i < p.max_requests && next_id < n_requests && st == KVC_OK; i++)
            if (held[i] < 0 && (st = add_request(e, next_id, &seed)) == KVC_OK) held[i] = next_id++;
        kvc_engine_step_result res;
        if (st == KVC_OK) st = kvc_engine_step(e, &res);
        out->steps++;
        for (int64_t i = 0; i < p.max_requests && st == KVC_OK; i++) {
            kvc_engine_request_info info;
            if (held[i] < 0 || (st = kvc_engine_request_get(e, held[i], &info)) != KVC_OK ||
                info.state != KVC_REQ_FINISHED)
                continue;
            st = kvc_engine_request_release(e, held[i]);
            held[i] = -1;
            int c = checkpoint_at(++done, n_requests);
            if (c >= 0) checkpoint(out, c, done);
        }
    }
    out->seconds = kvc_bench_now() - t0;
    out->requests = done;
    kvc_engine_stats stats;
    if (st == KVC_OK && (st = kvc_engine_get_stats(e, &stats)) == KVC_OK) {
        out->preemptions = stats.preemptions;
        if (stats.blocks_in_use[0] != 0) st = kvci_fail(KVC_EINTERNAL, "soak: blocks in use after every request ended");
    }
    if (st == KVC_OK) st = kvc_engine_check(e);
    kvci_free(held);
    kvc_engine_destroy(e);
    return st;
}
