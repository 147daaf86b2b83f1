/* Fast CPU attention (AO 3.1): exact softmax per fixed key chunk, chunks
 * merged in token order.
 *
 * Work item = (request b, KV head g, tile of query rows): its rows are the
 * G query heads of the group times the tile's query positions, so every K/V
 * load serves all of them (GQA sharing; for decode the item holds exactly
 * the G heads). Keys are split into chunks of KVC_CHUNK tokens at absolute
 * positions c * KVC_CHUNK; each chunk gives a record (m, l, e, acc[Dv8]) per
 * row (attn_chunk.c). Records are merged in chunk order by one merge
 * function, either after computing all chunks in parallel (split-K: few
 * items, e.g. batch-1 decode) or sequentially inside the item (many items).
 * Chunk boundaries depend only on token positions and every row's
 * arithmetic is the same in both schedules, so the output is bitwise
 * identical whatever the block size, paging, batch composition or thread
 * count. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "base/threads.h"
#include "ops/attn_plan.h"
#include "ops/elem.h"

#define KVC_PARTIAL_CAP ((size_t)256 << 20) /* split-K partials kept under 256 MiB */

typedef kvc_cpu_item item;
typedef kvc_cpu_ctx ctx;
typedef kvc_cpu_scratch scratch;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Fills the item table; returns the number of split-K tasks (chunks over all items). A request's items go
 * KV head by KV head, each head's query tiles in order: items taken one after another read the same head's
 * keys and values (kept in L2 between them). */
static int64_t items_fill(const ctx *cx, item *it) {
    const kvc_attn_problem *pb = cx->pb;
    int64_t n = 0, tasks = 0;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t q0, sq, k0, skv;
        kvci_attn_q_range(pb, b, &q0, &sq);
        kvci_attn_kv_range(pb, b, &k0, &skv);
        for (int64_t g = 0; g < pb->Nkv; g++)
            for (int64_t i0 = 0; i0 < sq; i0 += cx->QT) {
                const int64_t ni = kvci_min64(cx->QT, sq - i0), hg = kvci_cpu_heads_per_item(cx, ni);
                if (g % hg) continue; /* in the tile's item of heads from g - g % hg */
                int64_t lo = skv, hi = 0;
                for (int64_t i = i0; i < i0 + ni; i++) {
                    int64_t a, e;
                    kvci_attn_row_interval(pb, i, sq, skv, &a, &e);
                    if (e > a) {
                        lo = kvci_min64(lo, a);
                        hi = kvci_max64(hi, e);
                    }
                }
                item *x = &it[n++];
                x->b = b, x->g0 = g, x->ng = kvci_min64(hg, pb->Nkv - g), x->i0 = i0, x->ni = ni, x->q0 = q0,
                x->sq = sq, x->k0 = k0, x->skv = skv;
                x->lo = lo, x->hi = hi;
                x->c_lo = hi > lo ? lo / KVC_CHUNK : 0;
                x->c_hi = hi > lo ? kvci_cdiv(hi, KVC_CHUNK) : 0;
                x->task0 = tasks;
                tasks += x->c_hi - x->c_lo;
            }
    }
    return tasks;
}

/* a <- merge(a, c) for one row record (m, l, e, pad, acc[Dv8]) of RS floats. */
static void merge_row(float *a, const float *c, int64_t RS) {
    if (c[0] == -INFINITY) return;
    if (a[0] == -INFINITY) {
        memcpy(a, c, sizeof(float) * (size_t)RS);
        return;
    }
    const float M = a[0] > c[0] ? a[0] : c[0];
    const float fa = kvci_cpu_exp(a[0] - M), fc = kvci_cpu_exp(c[0] - M); /* a NaN m makes both NaN */
    a[0] = M;
    a[1] = a[1] * fa + c[1] * fc;
    a[2] = a[2] * fa + c[2] * fc;
    for (int64_t d = KVC_REC_HDR; d < RS; d++) a[d] = a[d] * fa + c[d] * fc;
}

static void record_empty(float *a, int64_t RS) {
    a[0] = -INFINITY;
    memset(a + 1, 0, sizeof(float) * (size_t)(RS - 1));
}

/* NaN as the one quiet NaN the kernel writes (paths and operand orders would otherwise differ in sign or payload). */
static float canonical(float x) { return x == x ? x : NAN; }

/* Dequantises values, adds the sink (one of -inf is none), writes the output row and lse; a row with no key
 * (L 0) is empty: zeros and lse +inf. */
static void finalize_row(const ctx *cx, const item *it, int64_t r, float *a) {
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const int64_t Dv = pb->Dv, g = it->g0 + r / (pb->G * it->ni), h = r / it->ni % pb->G;
    const int64_t i = it->i0 + r % it->ni, n = g * pb->G + h;
    float M = a[0], L = a[1];
    float *acc = a + KVC_REC_HDR;
    if (pb->kv_quant && L != 0.0f) { /* no value read: nothing to dequantise (the scales may be NaN) */
        if (kvci_qidx_per_key(pb->vq)) {
            for (int64_t d = 0; d < Dv; d++) acc[d] += a[2];
        } else {
            for (int64_t d = 0; d < Dv; d++) {
                const int64_t k = kvci_attn_quant_index(pb, pb->vq, it->b, 0, g, d, Dv);
                const float off = pb->v_has_off ? kvci_cpu_fquant(&p->value_offset, k) : 0.0f;
                acc[d] = kvci_cpu_fquant(&p->value_scale, k) * (acc[d] + off * L);
            }
        }
    }
    const float sg = p->sinks.data ? kvci_elem_load(p->sinks.data, p->sinks.dtype, n) : -INFINITY;
    if (sg != -INFINITY) {
        const float Mn = M > sg ? M : sg; /* a NaN sink: NaN */
        const float fa = kvci_cpu_exp(M - Mn);
        L = L * fa + kvci_cpu_exp(sg - Mn);
        for (int64_t d = 0; d < Dv; d++) acc[d] *= fa;
        M = Mn;
    }
    const int64_t oi = kvci_attn_out_index(pb, it->b, it->q0, i, n);
    const bool empty = L == 0.0f; /* a NaN L is not empty: the row is NaN */
    if (p->out.dtype == KVC_DTYPE_F32) {
        cx->simd->out_row(acc, Dv, L, (float *)p->out.data + oi);
    } else {
        cx->simd->out_row(acc, Dv, L, acc);
        for (int64_t d = 0; d < Dv; d++) kvci_elem_store(p->out.data, p->out.dtype, oi + d, acc[d]);
    }
    if (p->lse.data)
        ((float *)p->lse.data)[kvci_attn_lse_index(pb, it->b, it->q0, i, n)] =
            empty ? INFINITY : canonical(M + logf(L));
}

typedef kvc_cpu_ws_layout ws_layout;

static ws_layout layout_of(const ctx *cx, int threads, int64_t n_tasks) {
    ws_layout w;
    w.items = align64(sizeof(item) * (size_t)(cx->n_items + 1));
    w.per_thread = align64(sizeof(float) * kvci_cpu_thread_floats(cx));
    const size_t part = sizeof(float) * (size_t)n_tasks * (size_t)cx->R * (size_t)cx->RS;
    w.partials = part <= KVC_PARTIAL_CAP ? align64(part) : 0;
    w.total = w.items + w.per_thread * (size_t)threads + w.partials;
    return w;
}

/* The items' pieces of work without building the items (items_fill's items, every chunk of each a piece):
 * returns how many threads the work keeps busy, its work (rows x keys) over its largest piece, rounded (a
 * second thread only pays when it takes a fair share: one request over 560 keys is pieces of 512 and 48 keys,
 * 1.09: one thread; over 800 keys 512 and 288, 1.56: two); *tasks: the pieces (split-K tasks, an upper
 * bound: every chunk of every item). */
static int64_t work_pieces(const ctx *cx, int64_t *tasks) {
    const kvc_attn_problem *pb = cx->pb;
    double total = 0.0, largest = 0.0;
    *tasks = 0;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t q0, sq, k0, skv;
        kvci_attn_q_range(pb, b, &q0, &sq);
        kvci_attn_kv_range(pb, b, &k0, &skv);
        for (int64_t i0 = 0; i0 < sq; i0 += cx->QT) {
            const int64_t ni = kvci_min64(cx->QT, sq - i0), hg = kvci_cpu_heads_per_item(cx, ni);
            for (int64_t g = 0; g < pb->Nkv; g += hg) {
                const double rows = (double)(kvci_min64(hg, pb->Nkv - g) * pb->G * ni);
                total += rows * (double)skv;
                largest = fmax(largest, rows * (double)kvci_min64(skv, KVC_CHUNK));
                *tasks += kvci_cdiv(skv, KVC_CHUNK);
            }
        }
    }
    return largest > 0.0 ? (int64_t)(total / largest + 0.5) : 1;
}

kvc_status kvc_attention_cpu_workspace_size(const kvc_attention_params *p, int max_threads, size_t *bytes) {
    if (!bytes) return kvci_fail(KVC_EINVAL, "attention_cpu_workspace_size: bytes must not be NULL");
    if (max_threads < 1)
        return kvci_fail(KVC_EINVAL, "attention_cpu_workspace_size: max_threads %d must be >= 1", max_threads);
    kvc_attn_problem pb;
    kvc_status st = kvci_attn_resolve(p, &pb);
    if (st != KVC_OK) return st;
    ctx cx;
    kvci_cpu_ctx_init(&cx, &pb);
    /* split-K (and its partials) only serves calls with fewer than 4 items per thread */
    int64_t tasks = 0;
    work_pieces(&cx, &tasks);
    *bytes = layout_of(&cx, max_threads, cx.n_items < 4 * (int64_t)max_threads ? tasks : 0).total;
    return KVC_OK;
}

const char *kvc_attention_cpu_isa(void) { return kvci_simd_select()->name; }

/* Threads a call with a workspace of `bytes` runs on: the OpenMP maximum,
 * one for a problem below about a million multiply-adds (forking and
 * joining costs more than the work), no more than its work keeps busy
 * (work_pieces: a decode call of one request over one chunk of keys is one
 * piece, and a second thread would only join the region and wait), and no
 * more than the workspace has per-thread scratch for (what
 * kvc_attention_cpu_threads reports). Results do not depend on it. */
static int call_threads(const ctx *cx, size_t bytes) {
    const kvc_attn_problem *pb = cx->pb;
    const ws_layout one = layout_of(cx, 1, 0);
    int threads = kvci_max_threads();
    const double macs = (double)pb->Tq * (double)pb->max_skv * (double)pb->Nq * (double)(pb->D + pb->Dv);
    if (macs < 1048576.0) threads = 1;
    int64_t tasks;
    if (threads > 1) threads = (int)kvci_max64(1, kvci_min64(threads, work_pieces(cx, &tasks)));
    while (threads > 1 && one.items + one.per_thread * (size_t)threads > bytes) threads--;
    return threads;
}

static kvc_status workspace_check(const char *fn, const ctx *cx, const void *workspace, size_t bytes) {
    const ws_layout one = layout_of(cx, 1, 0);
    if (!workspace || bytes < one.total || ((uintptr_t)workspace & 63u))
        return kvci_fail(KVC_EINVAL,
                         "%s: workspace %p of %zu bytes is too small or not 64-byte aligned (need %zu: "
                         "kvc_attention_cpu_workspace_size)",
                         fn, workspace, bytes, one.total);
    return KVC_OK;
}

/* Resolves the call into *pb, fills *cx from it and checks the workspace
 * (cx keeps a pointer to pb, so both live in the caller's frame). */
static kvc_status prepare_call(const char *what, const kvc_attention_params *p, const void *workspace,
                               size_t workspace_bytes, kvc_attn_problem *pb, ctx *cx) {
    kvc_status st = kvci_attn_resolve(p, pb);
    if (st != KVC_OK) return st;
    kvci_cpu_ctx_init(cx, pb);
    return workspace_check(what, cx, workspace, workspace_bytes);
}

kvc_status kvc_attention_cpu_threads(const kvc_attention_params *p, const void *workspace, size_t workspace_bytes,
                                     int *threads) {
    if (!threads) return kvci_fail(KVC_EINVAL, "attention_cpu_threads: threads must not be NULL");
    *threads = 0;
    kvc_attn_problem pb;
    ctx cx;
    kvc_status st = prepare_call("attention_cpu_threads", p, workspace, workspace_bytes, &pb, &cx);
    if (st != KVC_OK) return st;
    *threads = call_threads(&cx, workspace_bytes);
    return KVC_OK;
}

/* kvci_attention_plan with refusals named after the caller `what`. */
static kvc_status plan_call(const char *what, kvci_attn_plan *plan, const kvc_attention_params *p, void *workspace,
                            size_t bytes) {
    if (!p) return kvci_fail(KVC_EINVAL, "attention: params must not be NULL");
    memset(plan, 0, sizeof *plan);
    plan->p = *p;
    kvc_status st = prepare_call(what, &plan->p, workspace, bytes, &plan->pb, &plan->cx);
    if (st != KVC_OK) return st;
    plan->ws = workspace;
    plan->items = (item *)workspace;
    if (plan->cx.n_items == 0) return KVC_OK;
    const ctx *cx = &plan->cx;
    plan->n_tasks = items_fill(cx, plan->items);
    plan->threads = call_threads(cx, bytes);
    plan->lay = layout_of(cx, plan->threads, plan->n_tasks);
    plan->split = plan->lay.partials > 0 && plan->lay.total <= bytes && cx->n_items < 4 * (int64_t)plan->threads &&
                  plan->n_tasks > cx->n_items;
    return KVC_OK;
}

kvc_status kvci_attention_plan(kvci_attn_plan *plan, const kvc_attention_params *p, void *workspace, size_t bytes) {
    if (!plan) return kvci_fail(KVC_EINVAL, "attention plan: plan must not be NULL");
    return plan_call("attention plan", plan, p, workspace, bytes);
}

/* Split-K: every chunk of every item a task, then the merge per item. */
static void run_split(const kvci_attn_plan *plan, const ctx *cxp) {
    const ctx cx = *cxp;
    const item *items = plan->items;
    const int threads = plan->threads;
    const int64_t n_tasks = plan->n_tasks, RS = cx.RS, nit = cx.n_items, G = cx.pb->G;
    char *tbase = plan->ws + plan->lay.items;
    const size_t per_thread = plan->lay.per_thread;
    float *part = (float *)(tbase + per_thread * (size_t)threads);
#pragma omp parallel num_threads(threads)
    {
        scratch s = kvci_cpu_scratch_at(&cx, (float *)(tbase + per_thread * (size_t)kvci_thread_num()));
        int64_t loaded = -1; /* item whose queries this thread's scratch holds */
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < n_tasks; t++) {
            /* find the item of task t (items are few on this path) */
            int64_t k = 0;
            while (k + 1 < nit && items[k + 1].task0 <= t) k++;
            const item *it = &items[k];
            if (k != loaded) kvci_cpu_load_queries(&cx, it, &s);
            loaded = k;
            kvci_cpu_chunk(&cx, it, it->c_lo + (t - it->task0), &s, part + (size_t)t * (size_t)(cx.R * RS));
        }
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (nit > 1) /* the merge: one item, no region */
    for (int64_t k = 0; k < nit; k++) {
        const item *it = &items[k];
        scratch s = kvci_cpu_scratch_at(&cx, (float *)(tbase + per_thread * (size_t)kvci_thread_num()));
        const int64_t R = it->ng * G * it->ni;
        for (int64_t r = 0; r < R; r++) {
            record_empty(s.run + r * RS, RS);
            for (int64_t c = it->c_lo; c < it->c_hi; c++)
                merge_row(s.run + r * RS, part + (size_t)(it->task0 + c - it->c_lo) * (size_t)(cx.R * RS) + r * RS, RS);
            finalize_row(&cx, it, r, s.run + r * RS);
        }
    }
}

/* Each item's chunks in order inside the item; the items taken last first: a request's query tiles grow
 * costlier along it under a causal mask, and the costliest handed out first leave the threads the least
 * to wait for at the end. */
static void run_items(const kvci_attn_plan *plan, const ctx *cxp) {
    const ctx cx = *cxp;
    const item *items = plan->items;
    const int64_t RS = cx.RS, nit = cx.n_items, G = cx.pb->G;
    char *tbase = plan->ws + plan->lay.items;
    const size_t per_thread = plan->lay.per_thread;
#pragma omp parallel for schedule(dynamic, 1) num_threads(plan->threads)
    for (int64_t k = 0; k < nit; k++) {
        const item *it = &items[nit - 1 - k];
        scratch s = kvci_cpu_scratch_at(&cx, (float *)(tbase + per_thread * (size_t)kvci_thread_num()));
        const int64_t R = it->ng * G * it->ni;
        kvci_cpu_load_queries(&cx, it, &s);
        /* the first chunk straight into the running records: merging a chunk into empty records copies it */
        if (it->c_lo == it->c_hi)
            for (int64_t r = 0; r < R; r++) record_empty(s.run + r * RS, RS);
        for (int64_t c = it->c_lo; c < it->c_hi; c++) {
            kvci_cpu_chunk(&cx, it, c, &s, c == it->c_lo ? s.run : s.rec);
            if (c > it->c_lo)
                for (int64_t r = 0; r < R; r++) merge_row(s.run + r * RS, s.rec + r * RS, RS);
        }
        for (int64_t r = 0; r < R; r++) finalize_row(&cx, it, r, s.run + r * RS);
    }
}

kvc_status kvci_attention_run(const kvci_attn_plan *plan, const kvci_attn_layer *layer) {
    kvc_status st = kvci_attn_layer_check(plan, layer);
    if (st != KVC_OK) return st;
    if (plan->cx.n_items == 0) return KVC_OK;
    /* the plan's problem and context over the layer's tensors (neither holds a data pointer of its own) */
    kvc_attention_params p = plan->p;
    p.q = layer->q, p.q_rope = layer->q_rope, p.k = layer->k, p.v = layer->v, p.k_rope = layer->k_rope;
    p.out = layer->out, p.lse = layer->lse, p.sinks = layer->sinks, p.alibi_slopes = layer->alibi_slopes;
    p.key_scale = layer->key_scale, p.value_scale = layer->value_scale;
    p.key_offset = layer->key_offset, p.value_offset = layer->value_offset;
    kvc_attn_problem pb = plan->pb;
    pb.p = &p;
    ctx cx = plan->cx;
    cx.pb = &pb;
    if (plan->split)
        run_split(plan, &cx);
    else
        run_items(plan, &cx);
    return KVC_OK;
}

kvc_status kvc_attention_cpu(const kvc_attention_params *p, void *workspace, size_t workspace_bytes) {
    kvci_attn_plan plan;
    kvc_status st = plan_call("attention_cpu", &plan, p, workspace, workspace_bytes);
    if (st != KVC_OK) return st;
    const kvci_attn_layer layer = kvci_attn_layer_of(p);
    return kvci_attention_run(&plan, &layer);
}
