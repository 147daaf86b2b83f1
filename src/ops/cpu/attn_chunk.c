/* One chunk of the fast CPU attention: the exact softmax of an item's rows
 * over the keys of chunk c (absolute positions [c * KVC_CHUNK, (c + 1) *
 * KVC_CHUNK)), as a record (m, l, e, acc[Dv8]) per row.
 *
 * Pass 1 takes the keys 8 at a time (tiles at absolute multiples of 8),
 * converted into an f32 tile (or in registers by the direct kernels for
 * items of up to KVC_DIRECT_ROWS rows per head), and computes the scores of all rows
 * against them; each row then selects its visible keys (never an exp of
 * masked garbage), takes the maximum and the exponentials (summed per lane
 * t % 8, so leading or trailing masked keys add exact zeros); pass 2 takes
 * the values 32 at a time (8 when an item holds several heads) the same way
 * and accumulates them with the weights. Per (row, key) the arithmetic
 * depends only on the data, never on the block size, paging, batch or
 * thread count. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "ops/cpu/attn_cpu.h"
#include "ops/elem.h"

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

static kvc_chan_map chan_map(int64_t bs, int64_t c0)
{
    kvc_chan_map m;
    if (c0 > 0) {
        m.nzs = bs * c0;
        m.sh = __builtin_ctzll((unsigned long long)c0);
        m.mask = c0 - 1;
    } else {
        m.nzs = 0, m.sh = 62, m.mask = -1;
    }
    return m;
}

void kvci_cpu_ctx_init(kvc_cpu_ctx *cx, const kvc_attn_problem *pb)
{
    const kvc_attention_params *p = pb->p;
    memset(cx, 0, sizeof *cx);
    cx->pb = pb;
    cx->simd = kvci_simd_select();
    cx->D8 = kvci_round8(pb->D);
    cx->Dr8 = kvci_round8(pb->Dr);
    cx->Dq8 = cx->D8 + cx->Dr8;
    cx->Dv8 = kvci_round8(pb->Dv);
    cx->QT = pb->G >= KVC_ROWS ? 1 : KVC_ROWS / pb->G;
    cx->R = pb->G * cx->QT;
    cx->RS = KVC_REC_HDR + cx->Dv8;
    cx->kslot = kvci_simd_slot(p->k.dtype);
    cx->vslot = kvci_simd_slot(p->v.dtype);
    cx->rslot = pb->Dr ? kvci_simd_slot(p->k_rope.dtype) : 0;
    cx->kes = (int64_t)kvc_dtype_size(p->k.dtype);
    cx->ves = (int64_t)kvc_dtype_size(p->v.dtype);
    cx->res = pb->Dr ? (int64_t)kvc_dtype_size(p->k_rope.dtype) : 0;
    cx->cmk = chan_map(pb->bs, pb->c0k);
    cx->cmv = chan_map(pb->bs, pb->c0v);
    cx->cmr = chan_map(pb->bs, pb->c0r);
    cx->direct = cx->simd->qk_direct[cx->kslot] && cx->simd->pv_direct[cx->vslot] && !pb->c0k && !pb->c0v && !pb->Dr &&
                 pb->D % 8 == 0 && pb->Dv % 8 == 0;
    if (pb->paged)
        cx->token_major = pb->blk == KVC_BLOCK_BNBSND;
    else
        cx->token_major = p->layout != KVC_LAYOUT_NTD_TND && p->layout != KVC_LAYOUT_BNSD;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t q0, sq;
        kvci_attn_q_range(pb, b, &q0, &sq);
        for (int64_t i0 = 0; i0 < sq; i0 += cx->QT)
            cx->n_items += kvci_cdiv(pb->Nkv, kvci_cpu_heads_per_item(cx, kvci_min64(cx->QT, sq - i0)));
    }
}

int64_t kvci_cpu_heads_per_item(const kvc_cpu_ctx *cx, int64_t ni)
{
    if (!cx->token_major) return 1;
    const int64_t h = KVC_ROWS / (cx->pb->G * ni);
    return h < 1 ? 1 : h > cx->pb->Nkv ? cx->pb->Nkv : h;
}

size_t kvci_cpu_thread_floats(const kvc_cpu_ctx *cx)
{
    const size_t R = (size_t)cx->R;
    return R * (size_t)cx->Dq8 + 2 * align8(R) + R * KVC_CHUNK + KVC_QK_KEYS * (size_t)cx->Dq8 +
           KVC_VTILE * (size_t)cx->Dv8 + 2 * R * (size_t)cx->RS;
}

kvc_cpu_scratch kvci_cpu_scratch_at(const kvc_cpu_ctx *cx, float *base)
{
    const size_t R = (size_t)cx->R;
    kvc_cpu_scratch s;
    s.qs = base;
    s.qsum = s.qs + R * (size_t)cx->Dq8;
    s.cst = s.qsum + align8(R);
    s.sc = s.cst + align8(R);
    s.kt = s.sc + R * KVC_CHUNK;
    s.vt = s.kt + KVC_QK_KEYS * (size_t)cx->Dq8;
    s.rec = s.vt + KVC_VTILE * (size_t)cx->Dv8;
    s.run = s.rec + R * (size_t)cx->RS;
    return s;
}

void kvci_cpu_load_queries(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, kvc_cpu_scratch *s)
{
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const bool chan = pb->kv_quant && !kvci_qidx_per_key(pb->kq);
    const float scale = (float)p->scale;
    const int64_t R = it->ng * pb->G * it->ni;
    for (int64_t r = 0; r < R; r++) {
        const int64_t g = it->g0 + r / (pb->G * it->ni), h = r / it->ni % pb->G;
        const int64_t n = g * pb->G + h, i = it->i0 + r % it->ni;
        float *q = s->qs + r * cx->Dq8;
        const int64_t qi = kvci_attn_q_index(pb, it->b, it->q0, i, n, pb->D);
        float qsum = 0.0f, cst = 0.0f;
        for (int64_t d = 0; d < pb->D; d++) {
            float x = kvci_elem_load(p->q.data, p->q.dtype, qi + d);
            if (chan) x *= kvci_cpu_fquant(&p->key_scale, kvci_attn_quant_index(pb, pb->kq, it->b, 0, g, d, pb->D));
            x *= scale;
            if (chan && pb->k_has_off)
                cst += x * kvci_cpu_fquant(&p->key_offset, kvci_attn_quant_index(pb, pb->kq, it->b, 0, g, d, pb->D));
            qsum += x;
            q[d] = x;
        }
        for (int64_t d = pb->D; d < cx->D8; d++) q[d] = 0.0f;
        if (pb->Dr) {
            const int64_t ri = kvci_attn_q_index(pb, it->b, it->q0, i, n, pb->Dr);
            /* a quantised rope part takes the key's scale: folded here when constant along the keys */
            const float rs = pb->rope_quant && chan
                                 ? kvci_cpu_fquant(&p->key_scale, kvci_attn_quant_index(pb, pb->kq, it->b, 0, g, 0, pb->D))
                                 : 1.0f;
            for (int64_t d = 0; d < pb->Dr; d++)
                q[cx->D8 + d] = scale * (rs * kvci_elem_load(p->q_rope.data, p->q_rope.dtype, ri + d));
            for (int64_t d = pb->Dr; d < cx->Dr8; d++) q[cx->D8 + d] = 0.0f;
        }
        s->qsum[r] = qsum;
        s->cst[r] = cst;
    }
}

/* Element indices of channel 0 of keys [j, j + n) (clamped to [j0, j1)) for
 * the item's first head, in a K/V tensor of `dim` channels per head. The
 * index is linear in the key within one block (and throughout contiguous
 * storage): keys of one block cost two index computations, not one each
 * (each holds a 64-bit division by the block size; for items of one head
 * and one row they took about as long as the arithmetic). */
static void key_indices(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t j, int64_t n, int64_t j0, int64_t j1,
                        int64_t dim, int64_t c0, int64_t *idx)
{
    const kvc_attn_problem *pb = cx->pb;
    const int64_t a = kvci_min64(kvci_max64(j, j0), j1 - 1), e = kvci_min64(kvci_max64(j + n, j0 + 1), j1); /* keys used */
    const bool one_block = !pb->paged || a / pb->bs == (e - 1) / pb->bs;
    const int64_t i0 = kvci_attn_kv_index(pb, it->b, it->k0, a, it->g0, dim, c0);
    const int64_t step = one_block && e - a >= 2 ? kvci_attn_kv_index(pb, it->b, it->k0, a + 1, it->g0, dim, c0) - i0 : 0;
    for (int64_t t = 0; t < n; t++) {
        const int64_t k = kvci_min64(kvci_max64(j + t, j0), j1 - 1);
        idx[t] = one_block ? i0 + (k - a) * step : kvci_attn_kv_index(pb, it->b, it->k0, k, it->g0, dim, c0);
    }
}

/* Prefetch of the rows at idx[0..n) (es-byte elements, dim per head, hs
 * between heads) spread over the item's ng head calls, so that the
 * requests overlap the arithmetic of the current tile.
 * Token-major rows: the whole token rows (all the item's heads) in address
 * order, a share of about 1/ng per head call. Prefetching head g's own rows
 * instead would put them all into the few L1 sets of one head's offset (a
 * head's rows are a token row apart) and evict the rows being computed; on
 * this CPU every prefetch hint fills L1 (measured: multi-head decode 15-23 %
 * faster cold). The share is walked by a cursor, without divisions per
 * call (three 64-bit divisions per head call cost about a tenth of 4:1
 * decode). Head-major rows: head g's rows in the call for head g, rows
 * adjacent in memory (consecutive keys of one block) taken as one run, so
 * that a direct kernel spreads it like a token-major share (measured cold
 * on paged [NB, Nkv, bs, D], against one burst per row and no prefetch for
 * f16 rows of one query head: f16 one row per head 1.35-1.45x faster, 4
 * rows per head 1.2x, int8 one row per head 1.15-1.2x). NZ rows are
 * scattered over column tiles that the hardware prefetcher follows: none. */
typedef struct prefetch_walk {
    const char *base;
    const int64_t *idx;
    int64_t es, dim, hs, n;
    int64_t lines, share; /* token-major: lines per token row, lines per head call */
    int64_t t, o, left;   /* token-major cursor: token, line in its row, lines left */
    bool token_major, off;
} prefetch_walk;

static prefetch_walk prefetch_start(const kvc_cpu_ctx *cx, const char *base, int64_t es, int64_t dim, int64_t hs,
                                    int64_t c0, const int64_t *idx, int64_t n, int64_t ng)
{
    prefetch_walk w = {base, idx, es, dim, hs, n, 0, 0, 0, 0, 0, cx->token_major, c0 != 0 || n <= 0};
    if (w.token_major) {
        w.lines = ((ng - 1) * hs * es + dim * es + 63) / 64;
        w.left = n * w.lines;
        w.share = (w.left + ng - 1) / ng;
    }
    return w;
}

/* The share of head call g. Its first contiguous run goes into *defer (a
 * direct kernel spreads it over its steps) when defer is not NULL; the
 * rest is requested now. Always inlined: as an outlined function gcc finds
 * it free of side effects and drops the calls. */
__attribute__((always_inline)) static inline void prefetch_step(prefetch_walk *w, int64_t g, kvc_pf_run *defer)
{
    if (w->off) return;
    if (!w->token_major) {
        for (int64_t t = 0, u; t < w->n; t = u) {
            for (u = t + 1; u < w->n && w->idx[u] == w->idx[u - 1] + w->dim;) u++; /* rows t..u-1 adjacent */
            const uintptr_t a = (uintptr_t)(w->base + w->es * (w->idx[t] + g * w->hs));
            const char *r = (const char *)(a & ~(uintptr_t)63);
            const int64_t lines = ((int64_t)(a & 63) + (u - t) * w->dim * w->es + 63) / 64;
            if (defer && defer->n == 0) defer->p = r, defer->n = lines;
            else
                for (int64_t i = 0; i < lines; i++) __builtin_prefetch(r + 64 * i);
        }
        return;
    }
    for (int64_t q = w->share < w->left ? w->share : w->left; q > 0;) {
        const int64_t run = q < w->lines - w->o ? q : w->lines - w->o;
        const char *r = w->base + w->es * w->idx[w->t] + 64 * w->o;
        if (defer && defer->n == 0) defer->p = r, defer->n = run;
        else
            for (int64_t i = 0; i < run; i++) __builtin_prefetch(r + 64 * i);
        q -= run, w->left -= run, w->o += run;
        if (w->o == w->lines) w->o = 0, w->t++;
    }
}

/* Whether an item with RG rows per KV head prefetches its K/V rows of
 * es-byte elements. Token-major rows: when a prefetched 64-byte line feeds
 * at least 64 multiply-adds (RG * 64 / es); below that the prefetch
 * instructions, one per line, cost more than the hardware prefetcher,
 * which follows whole token rows in address order, leaves to gain.
 * Measured cold, one row per head: f16 and f32 up to 20 % faster without,
 * int8 5-14 % faster with; 4 rows per head, f16: 22-34 % faster with.
 * Head-major rows always: an item reads one head's run per block and
 * jumps between blocks (measured cold, one f16 row per head: about 1.2x
 * faster with, even as one burst per row). */
static bool prefetches(const kvc_cpu_ctx *cx, int64_t RG, int64_t es) { return !cx->token_major || RG * 64 / es >= 64; }

/* Key scores fixed for int8 K: per-token scale kA and offset kO, per-channel offset term cst. */
static void key_quant_fix(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t R, int64_t jt, int64_t j1, float *sc,
                          const kvc_cpu_scratch *s)
{
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    float kA[KVC_QK_KEYS], kO[KVC_QK_KEYS];
    for (int64_t t = 0; t < KVC_QK_KEYS; t++) {
        kA[t] = 1.0f, kO[t] = 0.0f;
        if (kvci_qidx_per_key(pb->kq)) {
            const int64_t qi = kvci_attn_quant_index(pb, pb->kq, it->b, kvci_min64(jt + t, j1 - 1), 0, 0, 0);
            kA[t] = kvci_cpu_fquant(&p->key_scale, qi);
            if (pb->k_has_off) kO[t] = kvci_cpu_fquant(&p->key_offset, qi);
        }
    }
    for (int64_t r = 0; r < R; r++)
        for (int64_t t = 0; t < KVC_QK_KEYS; t++) {
            float *x = &sc[r * KVC_CHUNK + t];
            *x = kA[t] * (*x + kO[t] * s->qsum[r]) + s->cst[r];
        }
}

/* Pass 1: scores sc[r, j - cb] for the keys [j0, j1) (tiles of 8 at absolute multiples of 8). */
static void scores(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t cb, int64_t j0, int64_t j1,
                   kvc_cpu_scratch *s)
{
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const int64_t RG = pb->G * it->ni, R = it->ng * RG, Dq8 = cx->Dq8, K = KVC_QK_KEYS;
    const int64_t hk = kvci_attn_kv_head_stride(pb, pb->D), hr = kvci_attn_kv_head_stride(pb, pb->Dr);
    const bool direct = cx->direct && RG <= KVC_DIRECT_ROWS;
    const char *kd = p->k.data, *rd = p->k_rope.data;
    int64_t ki[KVC_QK_KEYS], ri[KVC_QK_KEYS], pi[KVC_QK_KEYS]; /* key, rope and prefetched key indices */
    for (int64_t jt = j0 & ~(int64_t)7; jt < j1; jt += K) {
        const bool pf = prefetches(cx, RG, cx->kes) && jt + KVC_PREFETCH < j1;
        key_indices(cx, it, jt, K, j0, j1, pb->D, pb->c0k, ki);
        if (pf) key_indices(cx, it, jt + KVC_PREFETCH, K, j0, j1, pb->D, pb->c0k, pi);
        if (pb->Dr) key_indices(cx, it, jt, K, j0, j1, pb->Dr, pb->c0r, ri);
        prefetch_walk pw = prefetch_start(cx, kd, cx->kes, pb->D, hk, pb->c0k, pi, pf ? K : 0, it->ng);
        for (int64_t gl = 0; gl < it->ng; gl++) { /* lanes outside [j0, j1) repeat a valid key; masked later */
            kvc_pf_run run = {NULL, 0};
            prefetch_step(&pw, gl, direct ? &run : NULL);
            float *out = s->sc + gl * RG * KVC_CHUNK + (jt - cb);
            if (direct) {
                const void *kp[KVC_QK_KEYS];
                for (int64_t t = 0; t < K; t++) kp[t] = kd + cx->kes * (ki[t] + gl * hk);
                cx->simd->qk_direct[cx->kslot](kp, s->qs + gl * RG * Dq8, Dq8, (int)RG, pb->D, out, KVC_CHUNK, run);
                continue;
            }
            for (int64_t t = 0; t < K; t++) {
                float *dst = s->kt + t * Dq8;
                cx->simd->cvt[cx->kslot](kd + cx->kes * (ki[t] + gl * hk), cx->cmk, pb->D, dst);
                if (pb->Dr) cx->simd->cvt[cx->rslot](rd + cx->res * (ri[t] + gl * hr), cx->cmr, pb->Dr, dst + cx->D8);
            }
            cx->simd->qk(s->kt, Dq8, s->qs + gl * RG * Dq8, Dq8, (int)RG, Dq8, out, KVC_CHUNK);
        }
        if (pb->kv_quant && (kvci_qidx_per_key(pb->kq) || pb->k_has_off)) key_quant_fix(cx, it, R, jt, j1, s->sc + (jt - cb), s);
    }
}

static void record_clear(float *rr, int64_t Dv8, float m, float l)
{
    rr[0] = m, rr[1] = l, rr[2] = 0.0f;
    memset(rr + 3, 0, sizeof(float) * (size_t)(KVC_REC_HDR - 3 + Dv8));
}

/* Selection, maximum and exponentials of row r; weights outside the row's
 * visible keys are left 0 over [j0, j1) of the chunk. */
static void row_softmax(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t r, int64_t cb, int64_t j0, int64_t j1,
                        kvc_cpu_scratch *s, float *rr)
{
    const kvc_attn_problem *pb = cx->pb;
    const int64_t i = it->i0 + r % it->ni;
    int64_t a, e;
    kvci_attn_row_interval(pb, i, it->sq, it->skv, &a, &e);
    a = kvci_max64(a, j0) - cb, e = kvci_min64(e, j1) - cb;
    float *sr = s->sc + r * KVC_CHUNK;
    const int64_t u0 = j0 - cb, u1 = j1 - cb;
    if (a >= e) {
        memset(sr + u0, 0, sizeof(float) * (size_t)(u1 - u0));
        record_clear(rr, cx->Dv8, -INFINITY, 0.0f);
        return;
    }
    const int64_t a8 = a & ~(int64_t)7, e8 = kvci_round8(e);
    for (int64_t t = a8; t < a; t++) sr[t] = -INFINITY;
    for (int64_t t = e; t < e8; t++) sr[t] = -INFINITY;
    if (pb->has_mask)
        for (int64_t t = a; t < e; t++)
            if (kvci_attn_masked(pb, it->b, i, cb + t)) sr[t] = -INFINITY;
    const float m = cx->simd->max(sr + a8, e8 - a8);
    if (m == -INFINITY) {
        memset(sr + u0, 0, sizeof(float) * (size_t)(u1 - u0));
        record_clear(rr, cx->Dv8, -INFINITY, 0.0f);
        return;
    }
    const float l = cx->simd->exp_sum(sr + a8, e8 - a8, m);
    for (int64_t t = u0; t < a8; t++) sr[t] = 0.0f;
    for (int64_t t = e8; t < u1; t++) sr[t] = 0.0f;
    record_clear(rr, cx->Dv8, m, l);
}

/* Per-token value scales over keys [j0, j1): the weight of each key a row
 * sees is multiplied by the key's scale and the key's offset term summed
 * into the row's e. Keys a row does not see are skipped (selection): their
 * scale or offset may be NaN or infinite, and 0 * NaN would poison the row. */
static void value_token_scales(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t R, int64_t cb, int64_t j0,
                               int64_t j1, kvc_cpu_scratch *s, float *rec)
{
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    for (int64_t r = 0; r < R; r++) {
        const int64_t i = it->i0 + r % it->ni;
        int64_t a, e;
        kvci_attn_row_interval(pb, i, it->sq, it->skv, &a, &e);
        float *w = s->sc + r * KVC_CHUNK; /* chunk-relative: key j at w[j - cb] */
        for (int64_t j = kvci_max64(a, j0); j < kvci_min64(e, j1); j++) {
            if (kvci_attn_masked(pb, it->b, i, j)) continue;
            const int64_t qi = kvci_attn_quant_index(pb, pb->vq, it->b, j, 0, 0, 0);
            w[j - cb] *= kvci_cpu_fquant(&p->value_scale, qi);
            if (pb->v_has_off) rec[r * cx->RS + 2] += w[j - cb] * kvci_cpu_fquant(&p->value_offset, qi);
        }
    }
}

/* Pass 2: rec acc += weights x values over keys [j0, j1), a tile of value rows at a time. */
static void values(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t cb, int64_t j0, int64_t j1,
                   kvc_cpu_scratch *s, float *rec)
{
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const int64_t RG = pb->G * it->ni, R = it->ng * RG, RS = cx->RS, Dv8 = cx->Dv8;
    const bool direct = cx->direct && RG <= KVC_DIRECT_ROWS;
    /* 8 value rows per call when an item holds several heads: one head's rows of
     * consecutive tokens sit a token row apart (2 KiB for 8 heads of 128 f16),
     * so 32 of them fall into the same few L1 sets and evict each other. */
    const int64_t vt = it->ng > 1 ? 8 : KVC_VTILE, hv = kvci_attn_kv_head_stride(pb, pb->Dv);
    const char *vd = p->v.data;
    int64_t vi[KVC_VTILE], pi[KVC_VTILE]; /* value indices of this tile and of the prefetched one */
    if (pb->kv_quant && kvci_qidx_per_key(pb->vq)) value_token_scales(cx, it, R, cb, j0, j1, s, rec);
    for (int64_t jv = j0; jv < j1; jv += vt) {
        const int nk = (int)kvci_min64(vt, j1 - jv);
        const int64_t np = prefetches(cx, RG, cx->ves) ? kvci_min64(vt, j1 - jv - KVC_PREFETCH) : 0; /* keys to prefetch */
        key_indices(cx, it, jv, nk, j0, j1, pb->Dv, pb->c0v, vi);
        if (np > 0) key_indices(cx, it, jv + KVC_PREFETCH, np, j0, j1, pb->Dv, pb->c0v, pi);
        prefetch_walk pw = prefetch_start(cx, vd, cx->ves, pb->Dv, hv, pb->c0v, pi, np, it->ng);
        for (int64_t gl = 0; gl < it->ng; gl++) {
            kvc_pf_run run = {NULL, 0};
            prefetch_step(&pw, gl, direct ? &run : NULL);
            const float *w = s->sc + gl * RG * KVC_CHUNK + (jv - cb);
            float *acc = rec + gl * RG * RS + KVC_REC_HDR;
            if (direct) {
                const void *vp[KVC_VTILE];
                for (int t = 0; t < nk; t++) vp[t] = vd + cx->ves * (vi[t] + gl * hv);
                cx->simd->pv_direct[cx->vslot](vp, nk, w, KVC_CHUNK, (int)RG, pb->Dv, acc, RS, run);
                continue;
            }
            for (int t = 0; t < nk; t++)
                cx->simd->cvt[cx->vslot](vd + cx->ves * (vi[t] + gl * hv), cx->cmv, pb->Dv, s->vt + t * Dv8);
            cx->simd->pv(s->vt, Dv8, nk, w, KVC_CHUNK, (int)RG, Dv8, acc, RS);
        }
    }
}

void kvci_cpu_chunk(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t c, kvc_cpu_scratch *s, float *rec)
{
    const int64_t R = it->ng * cx->pb->G * it->ni, cb = c * KVC_CHUNK;
    const int64_t j0 = kvci_max64(cb, it->lo), j1 = kvci_min64(cb + KVC_CHUNK, it->hi);
    scores(cx, it, cb, j0, j1, s);
    for (int64_t r = 0; r < R; r++) row_softmax(cx, it, r, cb, j0, j1, s, rec + r * cx->RS);
    values(cx, it, cb, j0, j1, s, rec);
}
