/* Fast CPU attention (AO 3.1): exact softmax per fixed key chunk, chunks
 * merged in token order.
 *
 * Work item = (request b, KV head g, tile of query rows): its rows are the
 * G query heads of the group times the tile's query positions, so every K/V
 * load serves all of them (GQA sharing; for decode the item holds exactly
 * the G heads). Keys are split into chunks of KVC_CHUNK tokens at absolute
 * positions c * KVC_CHUNK; per chunk the scores of all rows are computed
 * (pass 1 over K), soft-maxed within the chunk, and weighted values summed
 * (pass 2 over V) into a record (m, l, e, acc[Dv]). Records are merged in
 * chunk order by one merge function, either after computing all chunks in
 * parallel (split-K: few items, e.g. batch-1 decode) or sequentially inside
 * the item (many items). Chunk boundaries depend only on token positions
 * and every row's arithmetic is the same in both schedules, so the output is
 * bitwise identical whatever the block size, paging, batch composition or
 * thread count. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "base/internal.h"
#include "ops/attn_problem.h"
#include "ops/cpu/simd.h"
#include "ops/elem.h"

#define KVC_CHUNK 512  /* keys per chunk (also the split-K granule) */
#define KVC_ROWS 32    /* target rows per item (G heads x query positions) */
#define KVC_PARTIAL_CAP ((size_t)256 << 20) /* split-K partials kept under 256 MiB */

typedef struct item {
    int64_t b, g, i0, ni;   /* request, KV head, first query row, query rows */
    int64_t q0, sq, k0, skv;
    int64_t lo, hi;         /* union of the rows' visible key intervals */
    int64_t c_lo, c_hi;     /* chunks [c_lo, c_hi) hold visible keys */
    int64_t task0;          /* split-K: index of this item's first chunk task */
} item;

typedef struct ctx {
    const kvc_attn_problem *pb;
    const kvc_simd_table *simd;
    int64_t Dq, QT, R, RS; /* q row width D + Dr; query rows per item; max rows; record floats Dv + 3 */
    int64_t n_items, n_tasks;
    int kslot, vslot, rslot;
    int64_t kes, ves, res; /* element sizes */
    int64_t nzs_k, nzs_v, nzs_r;
} ctx;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static void ctx_init(ctx *cx, const kvc_attn_problem *pb)
{
    const kvc_attention_params *p = pb->p;
    memset(cx, 0, sizeof *cx);
    cx->pb = pb;
    cx->simd = kvc_simd_select();
    cx->Dq = pb->D + pb->Dr;
    cx->QT = pb->G >= KVC_ROWS ? 1 : KVC_ROWS / pb->G;
    cx->R = pb->G * cx->QT;
    cx->RS = pb->Dv + 3;
    cx->kslot = kvc_simd_slot(p->k.dtype);
    cx->vslot = kvc_simd_slot(p->v.dtype);
    cx->rslot = pb->Dr ? kvc_simd_slot(p->k_rope.dtype) : 0;
    cx->kes = (int64_t)kvc_dtype_size(p->k.dtype);
    cx->ves = (int64_t)kvc_dtype_size(p->v.dtype);
    cx->res = pb->Dr ? (int64_t)kvc_dtype_size(p->k_rope.dtype) : 0;
    cx->nzs_k = pb->bs * pb->c0k;
    cx->nzs_v = pb->bs * pb->c0v;
    cx->nzs_r = pb->bs * pb->c0r;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t q0, sq;
        kvc_attn_q_range(pb, b, &q0, &sq);
        cx->n_items += pb->Nkv * kvc_cdiv(sq, cx->QT);
    }
}

/* Per-thread scratch floats: q rows, qsum, cst, scores, chunk record, running record, weights. */
static size_t thread_floats(const ctx *cx)
{
    return (size_t)(cx->R * (cx->Dq + 2 + KVC_CHUNK + 2 * cx->RS) + 8);
}

/* Fills the item table; returns the number of split-K tasks (chunks over all items). */
static int64_t items_fill(const ctx *cx, item *it)
{
    const kvc_attn_problem *pb = cx->pb;
    int64_t n = 0, tasks = 0;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t q0, sq, k0, skv;
        kvc_attn_q_range(pb, b, &q0, &sq);
        kvc_attn_kv_range(pb, b, &k0, &skv);
        for (int64_t i0 = 0; i0 < sq; i0 += cx->QT) {
            const int64_t ni = kvc_min64(cx->QT, sq - i0);
            int64_t lo = skv, hi = 0;
            for (int64_t i = i0; i < i0 + ni; i++) {
                int64_t a, e;
                kvc_attn_row_interval(pb, i, sq, skv, &a, &e);
                if (e > a) {
                    lo = kvc_min64(lo, a);
                    hi = kvc_max64(hi, e);
                }
            }
            for (int64_t g = 0; g < pb->Nkv; g++) {
                item *x = &it[n++];
                x->b = b, x->g = g, x->i0 = i0, x->ni = ni, x->q0 = q0, x->sq = sq, x->k0 = k0, x->skv = skv;
                x->lo = lo, x->hi = hi;
                x->c_lo = hi > lo ? lo / KVC_CHUNK : 0;
                x->c_hi = hi > lo ? kvc_cdiv(hi, KVC_CHUNK) : 0;
                x->task0 = tasks;
                tasks += x->c_hi - x->c_lo;
            }
        }
    }
    return tasks;
}

/* Scratch of one thread. */
typedef struct scratch {
    float *qs;   /* [R, Dq] query rows (key-scale folded), rope part after D */
    float *qsum; /* [R] sum of the query's D channels (per-token key offsets) */
    float *cst;  /* [R] per-channel key offset term */
    float *sc;   /* [R, KVC_CHUNK] scores, then weights */
    float *rec;  /* [R, RS] chunk record (m, l, e, acc[Dv]) */
    float *run;  /* [R, RS] running record */
} scratch;

static scratch scratch_at(const ctx *cx, float *base)
{
    scratch s;
    s.qs = base;
    s.qsum = s.qs + cx->R * cx->Dq;
    s.cst = s.qsum + cx->R;
    s.sc = s.cst + cx->R;
    s.rec = s.sc + cx->R * KVC_CHUNK;
    s.run = s.rec + cx->R * cx->RS;
    return s;
}

static inline float fquant(const kvc_tensor *t, int64_t i) { return ((const float *)t->data)[i]; }

/* Loads the item's query rows (row r = head h * ni + position ii) into scratch. */
static void load_queries(const ctx *cx, const item *it, scratch *s)
{
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const bool chan = pb->kv_quant && pb->kq != KVC_QIDX_TOKEN;
    for (int64_t h = 0; h < pb->G; h++)
        for (int64_t ii = 0; ii < it->ni; ii++) {
            const int64_t r = h * it->ni + ii, n = it->g * pb->G + h, i = it->i0 + ii;
            float *q = s->qs + r * cx->Dq;
            const int64_t qi = kvc_attn_q_index(pb, it->b, it->q0, i, n, pb->D);
            float qsum = 0.0f, cst = 0.0f;
            for (int64_t d = 0; d < pb->D; d++) {
                float x = kvc_elem_load(p->q.data, p->q.dtype, qi + d);
                qsum += x;
                if (chan) {
                    const int64_t k = kvc_attn_quant_index(pb, pb->kq, it->b, 0, it->g, d, pb->D);
                    x *= fquant(&p->key_scale, k);
                    if (pb->k_has_off) cst += x * fquant(&p->key_offset, k);
                }
                q[d] = x;
            }
            if (pb->Dr) {
                const int64_t ri = kvc_attn_q_index(pb, it->b, it->q0, i, n, pb->Dr);
                for (int64_t d = 0; d < pb->Dr; d++) q[pb->D + d] = kvc_elem_load(p->q_rope.data, p->q_rope.dtype, ri + d);
            }
            s->qsum[r] = qsum;
            s->cst[r] = cst;
        }
}

/* Computes the record of chunk c of an item into rec [R, RS]. */
static void chunk_compute(const ctx *cx, const item *it, int64_t c, scratch *s, float *rec)
{
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const int64_t R = pb->G * it->ni, RS = cx->RS, Dv = pb->Dv;
    const int64_t j0 = kvc_max64(c * KVC_CHUNK, it->lo), j1 = kvc_min64((c + 1) * KVC_CHUNK, it->hi);
    const float scale = (float)p->scale;
    const bool ktok = pb->kv_quant && pb->kq == KVC_QIDX_TOKEN, vtok = pb->kv_quant && pb->vq == KVC_QIDX_TOKEN;
    const char *kd = p->k.data, *vd = p->v.data, *rd = p->k_rope.data;
    float tmp[4], tr[4];
    /* pass 1: scores of every row against every key of the chunk */
    for (int64_t j = j0; j < j1; j++) {
        const char *kp = kd + cx->kes * kvc_attn_kv_index(pb, it->b, it->k0, j, it->g, pb->D, pb->c0k);
        float kA = 1.0f, kO = 0.0f;
        if (ktok) {
            const int64_t t = kvc_attn_quant_index(pb, KVC_QIDX_TOKEN, it->b, j, 0, 0, 0);
            kA = fquant(&p->key_scale, t);
            if (pb->k_has_off) kO = fquant(&p->key_offset, t);
        }
        for (int64_t r = 0; r < R; r += 4) {
            const int nr = (int)kvc_min64(4, R - r);
            cx->simd->dot[cx->kslot](kp, cx->nzs_k, pb->c0k, s->qs + r * cx->Dq, cx->Dq, nr, pb->D, tmp);
            if (pb->Dr) {
                const char *rp = rd + cx->res * kvc_attn_kv_index(pb, it->b, it->k0, j, it->g, pb->Dr, pb->c0r);
                cx->simd->dot[cx->rslot](rp, cx->nzs_r, pb->c0r, s->qs + r * cx->Dq + pb->D, cx->Dq, nr, pb->Dr, tr);
                for (int x = 0; x < nr; x++) tmp[x] += tr[x];
            }
            for (int x = 0; x < nr; x++)
                s->sc[(r + x) * KVC_CHUNK + (j - j0)] = scale * (kA * (tmp[x] + kO * s->qsum[r + x]) + s->cst[r + x]);
        }
    }
    /* selection (never exp of masked garbage), chunk max, weights, sums */
    for (int64_t r = 0; r < R; r++) {
        const int64_t i = it->i0 + r % it->ni;
        int64_t lo, hi;
        kvc_attn_row_interval(pb, i, it->sq, it->skv, &lo, &hi);
        float *sr = s->sc + r * KVC_CHUNK, m = -INFINITY, l = 0.0f;
        for (int64_t j = j0; j < j1; j++) {
            if (j < lo || j >= hi || kvc_attn_masked(pb, it->b, i, j)) sr[j - j0] = -INFINITY;
            else if (sr[j - j0] > m) m = sr[j - j0];
        }
        for (int64_t j = j0; j < j1; j++) {
            const float w = sr[j - j0] == -INFINITY ? 0.0f : expf(sr[j - j0] - m);
            sr[j - j0] = w;
            l += w;
        }
        float *rr = rec + r * RS;
        rr[0] = m, rr[1] = l, rr[2] = 0.0f;
        memset(rr + 3, 0, sizeof(float) * (size_t)Dv);
    }
    /* pass 2: weighted values, each V row loaded once for all rows */
    for (int64_t j = j0; j < j1; j++) {
        const char *vp = vd + cx->ves * kvc_attn_kv_index(pb, it->b, it->k0, j, it->g, Dv, pb->c0v);
        float vA = 1.0f, vO = 0.0f;
        if (vtok) {
            const int64_t t = kvc_attn_quant_index(pb, KVC_QIDX_TOKEN, it->b, j, 0, 0, 0);
            vA = fquant(&p->value_scale, t);
            if (pb->v_has_off) vO = fquant(&p->value_offset, t);
        }
        for (int64_t r = 0; r < R; r += 4) {
            const int nr = (int)kvc_min64(4, R - r);
            float w[4];
            int nz = 0;
            for (int x = 0; x < nr; x++) {
                w[x] = s->sc[(r + x) * KVC_CHUNK + (j - j0)] * vA;
                nz += w[x] != 0.0f;
                rec[(r + x) * RS + 2] += w[x] * vO;
            }
            if (nz == nr) {
                cx->simd->axpy[cx->vslot](vp, cx->nzs_v, pb->c0v, w, rec + r * RS + 3, RS, nr, Dv);
            } else if (nz > 0) { /* rows with weight 0 must not touch values (masked data may be NaN) */
                for (int x = 0; x < nr; x++)
                    if (w[x] != 0.0f) cx->simd->axpy[cx->vslot](vp, cx->nzs_v, pb->c0v, &w[x], rec + (r + x) * RS + 3, RS, 1, Dv);
            }
        }
    }
}

/* a <- merge(a, c) for one row record (m, l, e, acc[Dv]). */
static void merge_row(float *a, const float *c, int64_t Dv)
{
    if (c[0] == -INFINITY) return;
    if (a[0] == -INFINITY) {
        memcpy(a, c, sizeof(float) * (size_t)(Dv + 3));
        return;
    }
    const float M = a[0] > c[0] ? a[0] : c[0];
    const float fa = expf(a[0] - M), fc = expf(c[0] - M);
    a[0] = M;
    for (int64_t d = 1; d < Dv + 3; d++) a[d] = a[d] * fa + c[d] * fc;
}

static void record_empty(float *a, int64_t Dv)
{
    a[0] = -INFINITY;
    memset(a + 1, 0, sizeof(float) * (size_t)(Dv + 2));
}

/* Dequantises values, adds the sink, writes the output row and lse. */
static void finalize_row(const ctx *cx, const item *it, int64_t r, float *a)
{
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const int64_t Dv = pb->Dv, h = r / it->ni, i = it->i0 + r % it->ni, n = it->g * pb->G + h;
    float M = a[0], L = a[1];
    float *acc = a + 3;
    if (pb->kv_quant) {
        if (pb->vq == KVC_QIDX_TOKEN) {
            for (int64_t d = 0; d < Dv; d++) acc[d] += a[2];
        } else {
            for (int64_t d = 0; d < Dv; d++) {
                const int64_t k = kvc_attn_quant_index(pb, pb->vq, it->b, 0, it->g, d, Dv);
                const float off = pb->v_has_off ? fquant(&p->value_offset, k) : 0.0f;
                acc[d] = fquant(&p->value_scale, k) * (acc[d] + off * L);
            }
        }
    }
    if (p->sinks.data) {
        const float sg = kvc_elem_load(p->sinks.data, p->sinks.dtype, n);
        const float Mn = M > sg ? M : sg;
        const float fa = M == -INFINITY ? 0.0f : expf(M - Mn);
        L = L * fa + expf(sg - Mn);
        for (int64_t d = 0; d < Dv; d++) acc[d] *= fa;
        M = Mn;
    }
    const int64_t oi = kvc_attn_out_index(pb, it->b, it->q0, i, n);
    const bool empty = !(L > 0.0f);
    for (int64_t d = 0; d < Dv; d++) kvc_elem_store(p->out.data, p->out.dtype, oi + d, empty ? 0.0f : acc[d] / L);
    if (p->lse.data)
        ((float *)p->lse.data)[kvc_attn_lse_index(pb, it->b, it->q0, i, n)] = empty ? INFINITY : M + logf(L);
}

/* Workspace layout: items, per-thread scratch, optional split-K partials. */
typedef struct ws_layout {
    size_t items, per_thread, partials, total;
} ws_layout;

static ws_layout layout_of(const ctx *cx, int threads, int64_t n_tasks)
{
    ws_layout w;
    w.items = align64(sizeof(item) * (size_t)(cx->n_items + 1));
    w.per_thread = align64(sizeof(float) * thread_floats(cx));
    const size_t part = sizeof(float) * (size_t)n_tasks * (size_t)cx->R * (size_t)cx->RS;
    w.partials = part <= KVC_PARTIAL_CAP ? align64(part) : 0;
    w.total = w.items + w.per_thread * (size_t)threads + w.partials;
    return w;
}

/* Upper bound of split-K tasks without building the items (every chunk of every item). */
static int64_t tasks_bound(const ctx *cx)
{
    const kvc_attn_problem *pb = cx->pb;
    int64_t t = 0;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t q0, sq, k0, skv;
        kvc_attn_q_range(pb, b, &q0, &sq);
        kvc_attn_kv_range(pb, b, &k0, &skv);
        t += pb->Nkv * kvc_cdiv(sq, cx->QT) * kvc_cdiv(skv, KVC_CHUNK);
    }
    return t;
}

kvc_status kvc_attention_cpu_workspace_size(const kvc_attention_params *p, int max_threads, size_t *bytes)
{
    if (!bytes) return kvc_fail(KVC_EINVAL, "attention_cpu_workspace_size: bytes must not be NULL");
    if (max_threads < 1) return kvc_fail(KVC_EINVAL, "attention_cpu_workspace_size: max_threads %d must be >= 1", max_threads);
    kvc_attn_problem pb;
    kvc_status st = kvc_attn_resolve(p, &pb);
    if (st != KVC_OK) return st;
    ctx cx;
    ctx_init(&cx, &pb);
    *bytes = layout_of(&cx, max_threads, tasks_bound(&cx)).total;
    return KVC_OK;
}

const char *kvc_attention_cpu_isa(void) { return kvc_simd_select()->name; }

kvc_status kvc_attention_cpu(const kvc_attention_params *p, void *workspace, size_t workspace_bytes)
{
    kvc_attn_problem pb;
    kvc_status st = kvc_attn_resolve(p, &pb);
    if (st != KVC_OK) return st;
    ctx cx;
    ctx_init(&cx, &pb);
    const ws_layout one = layout_of(&cx, 1, 0);
    if (!workspace || workspace_bytes < one.total || ((uintptr_t)workspace & 63u))
        return kvc_fail(KVC_EINVAL, "attention_cpu: workspace %p of %zu bytes is too small or not 64-byte aligned (need %zu: kvc_attention_cpu_workspace_size)",
                        workspace, workspace_bytes, one.total);
    if (cx.n_items == 0) return KVC_OK;
    char *ws = workspace;
    item *items = (item *)ws;
    const int64_t n_tasks = items_fill(&cx, items);
    /* threads the workspace has room for (without partials first) */
    int threads = omp_get_max_threads();
    while (threads > 1 && one.items + one.per_thread * (size_t)threads > workspace_bytes) threads--;
    ws_layout lay = layout_of(&cx, threads, n_tasks);
    const bool split = lay.partials > 0 && lay.total <= workspace_bytes && cx.n_items < 4 * (int64_t)threads &&
                       n_tasks > cx.n_items;
    char *tbase = ws + lay.items;
    const int64_t RS = cx.RS, Dv = pb.Dv, nit = cx.n_items;
    if (split) {
        float *part = (float *)(tbase + lay.per_thread * (size_t)threads);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (int64_t t = 0; t < n_tasks; t++) {
            /* find the item of task t (items are few on this path) */
            int64_t k = 0;
            while (k + 1 < nit && items[k + 1].task0 <= t) k++;
            const item *it = &items[k];
            scratch s = scratch_at(&cx, (float *)(tbase + lay.per_thread * (size_t)omp_get_thread_num()));
            load_queries(&cx, it, &s);
            chunk_compute(&cx, it, it->c_lo + (t - it->task0), &s, part + (size_t)t * (size_t)(cx.R * RS));
        }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (int64_t k = 0; k < nit; k++) {
            const item *it = &items[k];
            scratch s = scratch_at(&cx, (float *)(tbase + lay.per_thread * (size_t)omp_get_thread_num()));
            const int64_t R = pb.G * it->ni;
            for (int64_t r = 0; r < R; r++) {
                record_empty(s.run + r * RS, Dv);
                for (int64_t c = it->c_lo; c < it->c_hi; c++)
                    merge_row(s.run + r * RS, part + (size_t)(it->task0 + c - it->c_lo) * (size_t)(cx.R * RS) + r * RS, Dv);
                finalize_row(&cx, it, r, s.run + r * RS);
            }
        }
        return KVC_OK;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t k = 0; k < nit; k++) {
        const item *it = &items[k];
        scratch s = scratch_at(&cx, (float *)(tbase + lay.per_thread * (size_t)omp_get_thread_num()));
        const int64_t R = pb.G * it->ni;
        load_queries(&cx, it, &s);
        for (int64_t r = 0; r < R; r++) record_empty(s.run + r * RS, Dv);
        for (int64_t c = it->c_lo; c < it->c_hi; c++) {
            chunk_compute(&cx, it, c, &s, s.rec);
            for (int64_t r = 0; r < R; r++) merge_row(s.run + r * RS, s.rec + r * RS, Dv);
        }
        for (int64_t r = 0; r < R; r++) finalize_row(&cx, it, r, s.run + r * RS);
    }
    return KVC_OK;
}
