/* One chunk of the fast CPU attention: the exact softmax of an item's rows
 * over the keys of chunk c (absolute positions [c * KVC_CHUNK, (c + 1) *
 * KVC_CHUNK)), as a record (m, l, e, acc[Dv8]) per row.
 *
 * Pass 1 takes the keys 8 at a time (tiles at absolute multiples of 8),
 * converted into an f32 tile (or in registers by the direct kernels for
 * items of up to KVC_DIRECT_ROWS rows per head), and computes the scores of all rows
 * against them (keys in lanes, BNNDBS: up to 64 keys of one block per
 * qk_lanes call, for any number of rows); each row then selects its visible keys (never an exp of
 * masked garbage), soft-caps them (logit_softcap), takes the maximum and the exponentials (summed per lane
 * t % 8, so leading or trailing masked keys add exact zeros); pass 2 takes
 * the values 32 at a time (8 when an item holds several heads) the same way
 * and accumulates them with the weights. On the amx path (cx->amx) both
 * passes run on AMX tiles instead (attn_amx.h: scores in tiles of 16 keys,
 * values in steps of 32, each call one unit below). Per (row, key) the
 * arithmetic depends only on the data, never on the block size, paging,
 * batch or thread count. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "ops/cpu/attn_cpu.h"
#include "ops/elem.h"

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

/* The K/V row whose channel 0 is element e of base into dst [round8(dim)] (zero padded): the table's
 * converter of the slot, or for a generic slot (gen) the dtype entry's to_f32, a whole row at once when the
 * channels are in order (a dtype stored in blocks: whole blocks), else channel by channel. */
static inline void cvt_row(const kvc_cpu_ctx *cx, int slot, const kvc_dtype_traits *gen, const char *base, int64_t es,
                           int64_t e, kvc_chan_map cm, int64_t dim, float *dst) {
    if (gen == NULL) {
        cx->simd->cvt[slot](base + es * e, cm, dim, dst);
        return;
    }
    if (cm.mask == -1)
        gen->to_f32(base, e, dim, dst);
    else
        for (int64_t d = 0; d < dim; d++) gen->to_f32(base, e + kvci_chan(cm, d), 1, dst + d);
    for (int64_t d = dim; d < kvci_round8(dim); d++) dst[d] = 0.0f;
}

static kvc_chan_map chan_map(const kvci_kv_view *v) {
    kvc_chan_map m;
    if (v->c0 > 0) {
        m.nzs = v->schan;
        m.sh = __builtin_ctzll((unsigned long long)v->c0);
        m.mask = v->c0 - 1;
    } else {
        m.nzs = 0, m.sh = 62, m.mask = -1;
    }
    return m;
}

void kvci_cpu_ctx_init(kvc_cpu_ctx *cx, const kvc_attn_problem *pb) {
    const kvc_attention_params *p = pb->p;
    memset(cx, 0, sizeof *cx);
    cx->pb = pb;
    cx->simd = kvci_simd_select();
    cx->D8 = kvci_round8(pb->D);
    cx->Dr8 = kvci_round8(pb->Dr);
    cx->Dq8 = cx->D8 + cx->Dr8;
    cx->Dv8 = kvci_round8(pb->Dv);
    const bool krows = pb->vk.form == KVCI_KV_ROWS, vrows = pb->vv.form == KVCI_KV_ROWS;
    /* not with soft-capped scores, chunked local attention or ALiBi: the AMX kernels are untested with them (no
     * AMX where they were written), so such calls take the table's AVX-512 kernels instead */
    cx->amx = cx->simd->amx && p->k.dtype == KVC_DTYPE_BF16 && p->v.dtype == KVC_DTYPE_BF16 && krows && vrows &&
              !pb->Dr && !pb->kv_quant && pb->Dv % 16 == 0 && p->logit_softcap == 0.0 && p->attention_chunk_size == 0 &&
              !p->alibi_slopes.data;
    cx->Dp = kvci_round32(pb->D);
    const int64_t rows = cx->amx ? KVC_AMX_ROWS : KVC_ROWS;
    cx->QT = pb->G >= rows ? 1 : rows / pb->G;
    cx->R = pb->G * cx->QT;
    cx->RS = KVC_REC_HDR + cx->Dv8;
    cx->kslot = kvci_simd_slot(p->k.dtype);
    cx->vslot = kvci_simd_slot(p->v.dtype);
    cx->rslot = pb->Dr ? kvci_simd_slot(p->k_rope.dtype) : 0;
    cx->kes = (int64_t)kvc_dtype_size(p->k.dtype);
    cx->ves = (int64_t)kvc_dtype_size(p->v.dtype);
    cx->res = pb->Dr ? (int64_t)kvc_dtype_size(p->k_rope.dtype) : 0;
    cx->kgen = cx->kslot == KVC_SIMD_GENERIC ? kvci_dtype_traits(p->k.dtype) : NULL;
    cx->vgen = cx->vslot == KVC_SIMD_GENERIC ? kvci_dtype_traits(p->v.dtype) : NULL;
    cx->rgen = cx->rslot == KVC_SIMD_GENERIC ? kvci_dtype_traits(p->k_rope.dtype) : NULL;
    cx->cmk = chan_map(&pb->vk);
    cx->cmv = chan_map(&pb->vv);
    cx->cmr = chan_map(&pb->vr);
    cx->lanes = pb->vk.form == KVCI_KV_LANES;
    cx->eo = cx->simd->qk_eo && !cx->amx && !cx->lanes;
    cx->prefetch = (krows || cx->lanes) && vrows && !cx->kgen && !cx->vgen;
    cx->far = cx->prefetch && kvci_simd_far_prefetch();
    cx->direct = cx->simd->qk_direct[cx->kslot] && cx->simd->pv_direct[cx->vslot] && krows && vrows && !pb->Dr &&
                 pb->D % 8 == 0 && pb->Dv % 8 == 0;
    cx->direct_pv = cx->simd->pv_direct[cx->vslot] && vrows && pb->Dv % 8 == 0 && (cx->direct || cx->lanes);
    cx->token_major = kvci_kv_token_major(&pb->vk, pb->D, pb->Nkv) && kvci_kv_token_major(&pb->vv, pb->Dv, pb->Nkv);
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t q0, sq;
        kvci_attn_q_range(pb, b, &q0, &sq);
        for (int64_t i0 = 0; i0 < sq; i0 += cx->QT)
            cx->n_items += kvci_cdiv(pb->Nkv, kvci_cpu_heads_per_item(cx, kvci_min64(cx->QT, sq - i0)));
    }
}

int64_t kvci_cpu_heads_per_item(const kvc_cpu_ctx *cx, int64_t ni) {
    if (!cx->token_major) return 1;
    const int64_t h = KVC_ROWS / (cx->pb->G * ni);
    return h < 1 ? 1 : h > cx->pb->Nkv ? cx->pb->Nkv : h;
}

/* Floats of each amx scratch part (qa, kb, vb, pa, qbad), each a multiple of 16 (64 bytes); zeros without amx. */
static void amx_parts(const kvc_cpu_ctx *cx, size_t part[5]) {
    const size_t R = (size_t)cx->R, Dp = (size_t)cx->Dp, h = cx->amx ? 1 : 0;
    const size_t elems[5] = {KVC_AMX_PARTS * R * Dp, KVC_CHUNK * Dp, KVC_CHUNK * (size_t)cx->Dv8,
                             KVC_AMX_PARTS * 32 * KVC_AMX_PV_KEYS, (R + 1) / 2}; /* 16-bit elements (qbad: bytes) */
    for (int i = 0; i < 5; i++) part[i] = h * ((elems[i] + 31) / 32 * 16);
}

size_t kvci_cpu_thread_floats(const kvc_cpu_ctx *cx) {
    const size_t R = (size_t)cx->R;
    size_t amx[5];
    amx_parts(cx, amx);
    const size_t eo = cx->eo ? (R + KVC_QK_KEYS) * (size_t)cx->Dq8 : 0;
    return R * (size_t)cx->Dq8 + 2 * align8(R) + R * KVC_CHUNK + KVC_QK_KEYS * (size_t)cx->Dq8 +
           KVC_VTILE * (size_t)cx->Dv8 + 2 * R * (size_t)cx->RS + amx[0] + amx[1] + amx[2] + amx[3] + amx[4] + eo;
}

kvc_cpu_scratch kvci_cpu_scratch_at(const kvc_cpu_ctx *cx, float *base) {
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
    size_t amx[5];
    amx_parts(cx, amx);
    float *at = s.run + R * (size_t)cx->RS;
    uint16_t **half[4] = {&s.qa, &s.kb, &s.vb, &s.pa};
    for (int i = 0; i < 4; i++) *half[i] = cx->amx ? (uint16_t *)at : NULL, at += amx[i];
    s.qbad = cx->amx ? (uint8_t *)at : NULL;
    at += amx[4];
    s.qeo = cx->eo ? at : NULL;
    s.kp = cx->eo ? at + R * (size_t)cx->Dq8 : NULL;
    return s;
}

void kvci_cpu_load_queries(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, kvc_cpu_scratch *s) {
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
        if (p->q.dtype == KVC_DTYPE_F32)
            memcpy(q, (const float *)p->q.data + qi, sizeof(float) * (size_t)pb->D);
        else
            for (int64_t d = 0; d < pb->D; d++) q[d] = kvci_elem_load(p->q.data, p->q.dtype, qi + d);
        if (chan)
            for (int64_t d = 0; d < pb->D; d++)
                q[d] *= kvci_cpu_fquant(&p->key_scale, kvci_attn_quant_index(pb, pb->kq, it->b, 0, g, d, pb->D));
        for (int64_t d = 0; d < pb->D; d++) q[d] *= scale;
        /* the sums only key offsets read (key_quant_fix): serial chains, skipped without quantised keys */
        float qsum = 0.0f, cst = 0.0f;
        if (chan && pb->k_has_off)
            for (int64_t d = 0; d < pb->D; d++)
                cst += q[d] * kvci_cpu_fquant(&p->key_offset, kvci_attn_quant_index(pb, pb->kq, it->b, 0, g, d, pb->D));
        if (pb->kv_quant)
            for (int64_t d = 0; d < pb->D; d++) qsum += q[d];
        for (int64_t d = pb->D; d < cx->D8; d++) q[d] = 0.0f;
        if (pb->Dr) {
            const int64_t ri = kvci_attn_q_index(pb, it->b, it->q0, i, n, pb->Dr);
            /* a quantised rope part takes the key's scale: folded here when constant along the keys */
            const float rs =
                pb->rope_quant && chan
                    ? kvci_cpu_fquant(&p->key_scale, kvci_attn_quant_index(pb, pb->kq, it->b, 0, g, 0, pb->D))
                    : 1.0f;
            for (int64_t d = 0; d < pb->Dr; d++)
                q[cx->D8 + d] = scale * (rs * kvci_elem_load(p->q_rope.data, p->q_rope.dtype, ri + d));
            for (int64_t d = pb->Dr; d < cx->Dr8; d++) q[cx->D8 + d] = 0.0f;
        }
        s->qsum[r] = qsum;
        s->cst[r] = cst;
    }
    if (cx->eo && !(cx->direct && pb->G * it->ni <= KVC_DIRECT_ROWS)) /* the rows scores() gives qk_eo */
        for (int64_t r = 0; r < R; r++)
            for (int64_t d = 0; d < cx->Dq8; d++)
                s->qeo[r * cx->Dq8 + (d & ~(int64_t)7) + (d & 1) * 4 + (d & 7) / 2] = s->qs[r * cx->Dq8 + d];
    if (cx->amx) {
        const int64_t RG = pb->G * it->ni;
        kvci_amx_split_queries(s->qs, cx->Dq8, (int)R, pb->D, s->qa, cx->R * cx->Dp,
                               RG <= KVC_AMX_KEYS_A_ROWS ? (int)RG : 0, s->qbad);
    }
}

/* Element indices of channel 0 of keys [j, j + n) (clamped to [j0, j1)) for
 * the item's first head, in the K/V tensor of view v. The
 * index is linear in the key within one block (and throughout contiguous
 * storage): each block's run of keys costs two index computations, not one
 * per key (each holds a 64-bit division by the block size and a block table
 * read; per key they took as long as the arithmetic of one-head items). */
static void key_indices(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t j, int64_t n, int64_t j0, int64_t j1,
                        const kvci_kv_view *v, int64_t *idx) {
    const kvc_attn_problem *pb = cx->pb;
    for (int64_t t = 0; t < n;) {
        const int64_t k = kvci_min64(kvci_max64(j + t, j0), j1 - 1);
        const int64_t i0 = kvci_attn_kv_index(pb, v, it->b, it->k0, k, it->g0);
        if (j + t < j0 || j + t >= j1) { /* a clamped lane: the nearest visible key */
            idx[t++] = i0;
            continue;
        }
        const int64_t end = kvci_min64(j + n, pb->paged ? kvci_min64(j1, (k / pb->bs + 1) * pb->bs) : j1);
        const int64_t step = end - k >= 2 ? kvci_attn_kv_index(pb, v, it->b, it->k0, k + 1, it->g0) - i0 : 0;
        for (; j + t < end; t++) idx[t] = i0 + (j + t - k) * step;
    }
}

/* Software prefetch (docs/bench-attention.md, "Decode design"). A chunk is
 * computed in units: the keys of one sub-range (KVC_SUB keys at absolute
 * multiples of KVC_SUB) times one KV head of the item, first the scores of
 * every unit (sub-ranges in order, heads in order inside each), then the
 * values of every unit in the same order. While a unit computes, the rows
 * of the unit computed next are prefetched (pf_share says where to), spread
 * over the unit's kernel calls and inside them over their inner steps: the
 * next head's rows of the sub-range, then the next sub-range's first head;
 * after the last key unit the first value unit, after the last value unit
 * the next chunk's first key unit. On token-major rows (all heads of a
 * token adjacent) a unit reads one head's 256-512 bytes of every token row
 * while the prefetches keep the other heads' rows on their way, so every
 * byte of a token row is still read once per pass. Keys in lanes
 * (BNNDBS) prefetch the next unit's segments of the K channel rows. NZ
 * rows (column tiles) are not prefetched. */
typedef struct chunk_rows {
    int64_t p0; /* j0 rounded down to 32 (the first key of the chunk's tiles of 8, 16 or 32) */
    int64_t
        ki[KVC_CHUNK]; /* key p0 + t: element index of channel 0 of the item's first head in K (clamped to [j0, j1)) */
    int64_t vi[KVC_CHUNK]; /* the same in V */
    int64_t nb, nn;        /* the next chunk's first key unit: keys [nb, nb + nn) (nn 0: none) */
    int64_t ni[KVC_SUB];   /* their K indices */
    /* query row i0 + i of the item admits keys [ra[i], re[i]) (kvci_attn_row_interval): both non-decreasing in i */
    int64_t ra[KVC_MAX_QT], re[KVC_MAX_QT];
} chunk_rows;

static int64_t sub_end(int64_t a, int64_t j1) { return kvci_min64(j1, (a / KVC_SUB + 1) * KVC_SUB); }

static void chunk_rows_fill(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t cb, int64_t j0, int64_t j1,
                            chunk_rows *cr) {
    const kvc_attn_problem *pb = cx->pb;
    cr->p0 = j0 & ~(int64_t)31;
    const int64_t n = kvci_round32(j1) - cr->p0; /* whole tiles of 32 */
    key_indices(cx, it, cr->p0, n, j0, j1, &pb->vk, cr->ki);
    key_indices(cx, it, cr->p0, n, j0, j1, &pb->vv, cr->vi);
    cr->nb = cb + KVC_CHUNK;
    cr->nn = cx->prefetch && cr->nb < it->hi ? kvci_min64(KVC_SUB, it->hi - cr->nb) : 0;
    if (cr->nn) key_indices(cx, it, cr->nb, kvci_round8(cr->nn), cr->nb, cr->nb + cr->nn, &pb->vk, cr->ni);
    for (int64_t i = 0; i < it->ni; i++)
        kvci_attn_row_interval(pb, it->i0 + i, it->sq, it->skv, &cr->ra[i], &cr->re[i]);
}

/* The item's query rows [*r0, *r1) (of 0 .. ni) whose intervals meet keys [j, j + n): one range, the
 * intervals' ends being non-decreasing (bisection). The other rows weigh every key of [j, j + n) 0, so a
 * tile's scores and value sums skip them (row_softmax reads a row's scores inside its interval only, and pv
 * skips weights of 0): causal prefill items compute their diagonal triangle only, to the tile. */
static void rows_seeing(const chunk_rows *cr, int64_t ni, int64_t j, int64_t n, int64_t *r0, int64_t *r1) {
    int64_t lo = 0, hi = ni;
    while (lo < hi) {
        const int64_t m = (lo + hi) / 2;
        if (cr->re[m] > j)
            hi = m;
        else
            lo = m + 1;
    }
    *r0 = lo;
    for (hi = ni; lo < hi;) {
        const int64_t m = (lo + hi) / 2;
        if (cr->ra[m] >= j + n)
            hi = m;
        else
            lo = m + 1;
    }
    *r1 = lo;
}

/* Rows of KV head gl (item-relative) that see keys [j, j + n), as calls over runs of consecutive item rows
 * (first row f[c], count nr[c]): one call of all G ni rows when every row sees them, else one per query
 * head; returns the number of calls (0 when no row sees them). */
static int rows_calls(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, const chunk_rows *cr, int64_t gl, int64_t j,
                      int64_t n, int64_t f[], int64_t nr[]) {
    const int64_t G = cx->pb->G, ni = it->ni;
    int64_t r0, r1;
    rows_seeing(cr, ni, j, n, &r0, &r1);
    if (r1 <= r0) return 0;
    if (r1 - r0 == ni) {
        f[0] = gl * G * ni, nr[0] = G * ni;
        return 1;
    }
    for (int64_t h = 0; h < G; h++) f[h] = (gl * G + h) * ni + r0, nr[h] = r1 - r0;
    return (int)G;
}

/* The rows to prefetch for keys [a, e) of KV head gl (item-relative) in
 * pass `pass` (0 keys, 1 values; indices idx[j - off]) into pr + n (at most
 * KVC_PF_ROWS in all); returns the new count and sets *lines to the cache
 * lines to fetch from each. Plain rows: each key's row (at most
 * KVC_PF_ROW_LINES lines of it: the hardware prefetcher follows longer
 * rows). Keys in lanes: per block segment, the segment of each channel row
 * (of at most KVC_PF_CHANNELS channels). */
static int64_t unit_rows(const kvc_cpu_ctx *cx, const int64_t *idx, int64_t off, int64_t a, int64_t e, int64_t gl,
                         int pass, const char **pr, int64_t n, int *lines) {
    const kvc_attn_problem *pb = cx->pb;
    const int64_t dim = pass ? pb->Dv : pb->D, es = pass ? cx->ves : cx->kes;
    const char *base = (const char *)(pass ? pb->p->v.data : pb->p->k.data) + es * gl * (pass ? pb->vv : pb->vk).shead;
    if (cx->lanes && !pass) {
        const int64_t dmax = kvci_min64(dim, KVC_PF_CHANNELS), rs = es * pb->vk.schan; /* bytes between channel rows */
        for (int64_t s0 = a, s1; s0 < e && n + dmax <= KVC_PF_ROWS; s0 = s1) {
            s1 = kvci_min64(e, (s0 / pb->bs + 1) * pb->bs);
            const char *first = base + es * idx[s0 - off]; /* channel 0 of key s0 */
            const int64_t lo = (int64_t)((uintptr_t)first & 63u);
            *lines = (int)kvci_max64(*lines, (lo + es * (s1 - s0) + 63) / 64);
            for (int64_t d = 0; d < dmax; d++) pr[n++] = first - lo + d * rs;
        }
        return n;
    }
    *lines = (int)kvci_min64((dim * es + 63) / 64, KVC_PF_ROW_LINES);
    for (int64_t j = a; j < e && n < KVC_PF_ROWS; j++) pr[n++] = base + es * idx[j - off];
    return n;
}

/* The rows to prefetch of the unit computed after (keys [a, e), head gl) of
 * pass `pass` (0 scores, 1 values) into pr; returns their number. Items of
 * one row per KV head on token-major rows of 2-byte or wider elements (not
 * on the amx path) take the unit KVC_PF_AHEAD_ONE units ahead instead:
 * such a unit computes in a quarter of the time of a GQA 4 one, too short
 * to cover a row's trip from memory (one core, cold, batch 4 at 2k keys,
 * calls alternating: f16 and bf16 0.80-0.83 of the time with 2 or 4 units
 * ahead against 1; int8 0.98-1.07 one core, 1.12-1.41 in a loaded
 * two-thread benchmark run, so 1-byte rows keep one unit). Past the next chunk's first
 * unit there is nothing to prefetch. */
static int64_t next_unit_rows(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, const chunk_rows *cr, int64_t j0,
                              int64_t j1, int64_t a, int64_t e, int64_t gl, int pass, const char **pr, int *lines) {
    *lines = 0;
    if (!cx->prefetch) return 0;
    int64_t na = a, ne = e, ng = gl, off = cr->p0;
    const int64_t *idx = NULL;
    const int ahead = cx->pb->G * it->ni == 1 && cx->token_major && !cx->amx && (pass ? cx->ves : cx->kes) >= 2
                          ? KVC_PF_AHEAD_ONE
                          : 1;
    for (int k = 0; k < ahead; k++) {
        if (++ng < it->ng) continue;
        if (idx) return 0; /* past the next chunk's first unit */
        ng = 0, na = ne, ne = sub_end(ne, j1);
        if (na >= j1) {
            if (pass == 0)
                pass = 1, na = j0, ne = sub_end(j0, j1);
            else
                pass = 0, na = cr->nb, ne = cr->nb + cr->nn, off = cr->nb, idx = cr->ni;
        }
    }
    if (!idx) idx = pass ? cr->vi : cr->ki;
    return unit_rows(cx, idx, off, na, ne, ng, pass, pr, 0, lines);
}

/* Far prefetch of decode items with 2 to KVC_DIRECT_ROWS rows per KV head
 * (1 to it on keys in lanes): while the units of keys [a, e) compute, the
 * K or V of a later sub-range in pass order (the sub-ranges of the pass;
 * after the last key sub-range the value sub-ranges, after the last value
 * sub-range the next chunk's first key unit) is fetched into L2, spread
 * over the sub-range's kernel calls: part p of the P calls (units in
 * order, calls in order inside each) issues rows [n p / P, n (p + 1) / P)
 * of the n before its call (one burst per unit measured 0.02-0.04 of the
 * time slower, cold). The unit prefetch into L1 then finds them in L2
 * instead of memory.
 * - Token-major rows (items of several KV heads): the whole token rows
 *   (every head of the item) of the next sub-range (one core, cold, batch 4
 *   at 2k keys, calls alternating: GQA 4 f16 0.84-0.87 of the CPU time,
 *   GQA 8 f16 0.84-0.92, int8 GQA 4 0.94; two sub-ranges ahead 0.85-0.94
 *   against none).
 * - Head-major rows (items of one KV head, whose unit prefetch already
 *   takes the next sub-range): the rows of the sub-range after next
 *   (KVC_PF_FAR_AHEAD_HEADS; one core, cold, batch 8 at 4k, f16, calls
 *   alternating, f16 and bf16: BnNBsD GQA 4 0.72-0.75, GQA 8 0.83-0.90 of
 *   the CPU time; one sub-range ahead 1.06-1.12 and three 1.03-1.04 of the
 *   time of two).
 * - Keys in lanes (BnNDBs, one KV head, values head-major): the next
 *   sub-range, for keys the sub-range's segment of every channel row
 *   (GQA 4 0.80-0.81, GQA 8 0.86-0.88 of the CPU time without it; two
 *   sub-ranges ahead 1.02-1.04 of the time of one).
 * GQA 1 items, whose token rows hold 32 heads, took 1.2-1.35 with it, so
 * one-row items keep the unit prefetch alone, head-major ones too
 * (1.08-1.10 with it), but not on keys in lanes (0.94, f16 and bf16). int8
 * token-major rows take it (one core, cold, batch 4 at 2k keys, calls
 * alternating: GQA 2 0.62-0.76 of the CPU time, GQA 4 0.77-0.88, GQA 8
 * 0.92-1.01; two threads, batch 8 at 4k: 0.65 / 0.97 / 0.96; warm calls
 * pay its instructions: 1.02-1.06); int8 keys in lanes do not (GQA 1
 * 1.14-1.37 of the time in five two-thread benchmark runs, GQA 4/8
 * 0.89-1.06), nor do fp8 rows, whose NaN check reads each call's rows
 * before its kernel (e4m3 and e5m2, GQA 2-8, five runs at load 3-6:
 * 0.89-1.06, no consistent gain).
 * Skipped when a sub-range's bytes exceed KVC_PF_FAR_BYTES, and on Intel CPUs
 * (cx->far, kvci_simd_far_prefetch): on an Ice Lake Xeon the calls took
 * 0.63-0.94 of the time without it (GQA 2-8), cold and warm, every layout (docs/bench-attention.md,
 * "Decode on an Ice Lake Xeon").
 * Always inlined: GCC takes a function of prefetches alone for one without
 * side effects and drops its calls. */
__attribute__((always_inline)) static inline void far_prefetch(const kvc_cpu_ctx *cx, const kvc_cpu_item *it,
                                                               const chunk_rows *cr, int64_t j0, int64_t j1, int64_t e,
                                                               int64_t part, int64_t parts, int pass) {
    const kvc_attn_problem *pb = cx->pb;
    const int64_t RG = pb->G * it->ni;
    if (!cx->far || (RG < 2 && !cx->lanes) || RG > KVC_DIRECT_ROWS) return;
    int64_t na = e, ne = sub_end(e, j1), off = cr->p0;
    const int64_t *idx = pass ? cr->vi : cr->ki;
    for (int k = cx->token_major || cx->lanes ? 1 : KVC_PF_FAR_AHEAD_HEADS;; na = ne, ne = sub_end(ne, j1)) {
        if (na >= j1) {      /* past the pass */
            if (pass == 1) { /* the next chunk's first key unit: nothing after it */
                pass = 0, na = cr->nb, ne = cr->nb + cr->nn, off = cr->nb, idx = cr->ni;
                break;
            }
            pass = 1, na = j0, ne = sub_end(j0, j1), idx = cr->vi;
        }
        if (--k == 0) break;
    }
    const int64_t es = pass ? cx->ves : cx->kes, dim = pass ? pb->Dv : pb->D, n = ne - na;
    const bool i8 = (pass ? pb->p->v.dtype : pb->p->k.dtype) == KVC_DTYPE_I8;
    if ((es < 2 && !(i8 && cx->token_major)) || n * es * dim * it->ng > KVC_PF_FAR_BYTES) return;
    const char *base = (const char *)(pass ? pb->p->v.data : pb->p->k.data);
    if (pass == 0 && cx->lanes) { /* channel d of key j at idx + d * schan: per block segment, each channel's run */
        for (int64_t s0 = na, s1; s0 < ne; s0 = s1) {
            s1 = kvci_min64(ne, (s0 / pb->bs + 1) * pb->bs);
            const char *first = base + es * idx[s0 - off];
            const int64_t lo = (int64_t)((uintptr_t)first & 63u), bytes = lo + es * (s1 - s0);
            for (int64_t d = dim * part / parts; d < dim * (part + 1) / parts; d++)
                for (int64_t l = 0; l < bytes; l += 64)
                    __builtin_prefetch(first - lo + es * pb->vk.schan * d + l, 0, 1);
        }
        return;
    }
    const int64_t row = es * dim * it->ng;
    for (int64_t j = na + n * part / parts; j < na + n * (part + 1) / parts; j++) {
        const char *r = base + es * idx[j - off];
#pragma GCC unroll 8
        for (int64_t l = 0; l < row; l += 64) __builtin_prefetch(r + l, 0, 1); /* prefetcht2 */
    }
}

/* Call c's share of a unit's prefetch rows pr[0..n) over `calls` calls.
 * Items of several rows per KV head prefetch into L1, those of one row
 * (multi-head attention: one multiply-add per element) into L2; measured
 * cold, batch 8 at 4k, calls alternating: GQA 4 f16 10-15 % faster with
 * prefetcht0 than with prefetcht2, GQA 1 f16 7-8 % slower. */
static kvc_pf_run pf_share(const char *const *pr, int64_t n, int lines, int64_t calls, int64_t c, int64_t RG) {
    const int64_t per = kvci_cdiv(n, calls), r0 = kvci_min64(n, c * per);
    kvc_pf_run run = {pr + r0, pr + kvci_min64(n, r0 + per), lines, RG > 1};
    return run;
}

/* Key scores fixed for int8 K: per-token scale kA and offset kO, per-channel offset term cst. */
static void key_quant_fix(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t R, int64_t jt, int64_t j1, float *sc,
                          const kvc_cpu_scratch *s) {
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

/* Scores of keys [a, e) of item head gl stored in lanes, one qk_lanes call
 * per block segment, the unit's prefetch lines shared among them. Positions
 * of the chunk outside [j0, j1) are left as they are (row_softmax masks
 * them before reading). */
static void scores_lanes(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t cb, int64_t j0, int64_t j1, int64_t a,
                         int64_t e, int64_t gl, const chunk_rows *cr, kvc_cpu_scratch *s, const char *const *pr,
                         int64_t np, int lines) {
    const kvc_attn_problem *pb = cx->pb;
    const int64_t RG = pb->G * it->ni;
    const char *kd = (const char *)pb->p->k.data + cx->kes * gl * pb->vk.shead;
    const int64_t calls = kvci_cdiv(e, pb->bs) - a / pb->bs;
    for (int64_t s0 = a, s1, c = 0; s0 < e; s0 = s1, c++) {
        s1 = kvci_min64(e, (s0 / pb->bs + 1) * pb->bs);
        kvc_pf_run run = pf_share(pr, np, lines, calls, c, RG);
        far_prefetch(cx, it, cr, j0, j1, e, gl * calls + c, it->ng * calls, 0);
        int64_t f[KVC_MAX_QT], nr[KVC_MAX_QT];
        const int n = rows_calls(cx, it, cr, gl, s0, s1 - s0, f, nr);
        if (n == 0) kvci_pf_rest(&run);
        for (int x = 0; x < n; x++, run.at = run.end) /* the unit's prefetches with the first call */
            cx->simd->qk_lanes[cx->kslot](kd + cx->kes * cr->ki[s0 - cr->p0], pb->vk.schan, (int)(s1 - s0),
                                          s->qs + f[x] * cx->Dq8, cx->Dq8, (int)nr[x], pb->D,
                                          s->sc + f[x] * KVC_CHUNK + (s0 - cb), KVC_CHUNK, run);
    }
}

/* Row pointers of keys [t0, t0 + n) of item head gl in K (pass 0) or V (pass 1): NULL outside [j0, j1). */
static void amx_rows(const kvc_cpu_ctx *cx, const chunk_rows *cr, int64_t t0, int64_t n, int64_t j0, int64_t j1,
                     int64_t gl, int pass, const uint16_t **rows) {
    const kvc_attn_problem *pb = cx->pb;
    const int64_t es = pass ? cx->ves : cx->kes;
    const int64_t *idx = pass ? cr->vi : cr->ki;
    const char *base = (const char *)(pass ? pb->p->v.data : pb->p->k.data) + es * gl * (pass ? pb->vv : pb->vk).shead;
    for (int64_t t = 0; t < n; t++) {
        const int64_t j = t0 + t;
        rows[t] = j >= j0 && j < j1 ? (const uint16_t *)(base + es * idx[j - cr->p0]) : NULL;
    }
}

/* amx: pass 0 (scores) or 1 (value sums into rec) over keys [j0, j1), unit by unit (keys of a sub-range x one KV
 * head, in the order and with the prefetch of the other kernels): scores in tiles of 16 keys at absolute multiples
 * of 16, value sums in steps of 32 at absolute multiples of 32. */
static void units_amx(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t cb, int64_t j0, int64_t j1,
                      const chunk_rows *cr, kvc_cpu_scratch *s, float *rec, int pass) {
    const kvc_attn_problem *pb = cx->pb;
    const int64_t RG = pb->G * it->ni, al = pass ? 31 : 15;
    const uint16_t *rows[KVC_SUB + 32];
    const char *pr[KVC_PF_ROWS];
    for (int64_t a = j0, e; a < j1; a = e) {
        e = sub_end(a, j1);
        const int64_t t0 = a & ~al, nk = ((e + al) & ~al) - t0;
        for (int64_t gl = 0; gl < it->ng; gl++) {
            int lines;
            const int64_t np = next_unit_rows(cx, it, cr, j0, j1, a, e, gl, pass, pr, &lines);
            kvc_pf_run run = pf_share(pr, np, lines, 1, 0, RG);
            amx_rows(cx, cr, t0, nk, j0, j1, gl, pass, rows);
            if (pass)
                kvci_amx_pv(rows, (int)nk, pb->Dv, s->sc + gl * RG * KVC_CHUNK + (t0 - cb), KVC_CHUNK, (int)RG,
                            rec + gl * RG * cx->RS + KVC_REC_HDR, cx->RS, s->vb, s->pa, &run);
            else if (RG <= KVC_AMX_KEYS_A_ROWS)
                kvci_amx_qk_keys(rows, (int)nk, pb->D, s->qa + gl * RG * KVC_AMX_PARTS * cx->Dp,
                                 s->qs + gl * RG * cx->Dq8, cx->Dq8, s->qbad + gl * RG, (int)RG,
                                 s->sc + gl * RG * KVC_CHUNK + (t0 - cb), KVC_CHUNK, s->kb, &run);
            else
                kvci_amx_qk(rows, (int)nk, pb->D, s->qa + gl * RG * cx->Dp, cx->R * cx->Dp, s->qs + gl * RG * cx->Dq8,
                            cx->Dq8, s->qbad + gl * RG, (int)RG, s->sc + gl * RG * KVC_CHUNK + (t0 - cb), KVC_CHUNK,
                            s->kb, &run);
        }
    }
}

/* Pass 1: scores sc[r, j - cb] for the keys [j0, j1) (tiles of 8 at absolute multiples of 8), unit by unit. */
static void scores(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t cb, int64_t j0, int64_t j1,
                   const chunk_rows *cr, kvc_cpu_scratch *s) {
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const int64_t RG = pb->G * it->ni, R = it->ng * RG, Dq8 = cx->Dq8, K = KVC_QK_KEYS;
    const int64_t hk = pb->vk.shead, hr = pb->vr.shead;
    const bool direct = cx->direct && RG <= KVC_DIRECT_ROWS;
    const char *kd = p->k.data, *rd = p->k_rope.data;
    const char *pr[KVC_PF_ROWS];
    int64_t ri[KVC_QK_KEYS]; /* rope key indices */
    if (cx->amx) {
        units_amx(cx, it, cb, j0, j1, cr, s, NULL, 0);
        return;
    }
    for (int64_t a = j0, e; a < j1; a = e) {
        e = sub_end(a, j1);
        const int64_t t0 = a & ~(int64_t)7, calls = kvci_cdiv(e - t0, K);
        for (int64_t gl = 0; gl < it->ng; gl++) {
            int lines;
            const int64_t np = next_unit_rows(cx, it, cr, j0, j1, a, e, gl, 0, pr, &lines);
            if (cx->lanes) {
                scores_lanes(cx, it, cb, j0, j1, a, e, gl, cr, s, pr, np, lines);
                continue;
            }
            for (int64_t jt = t0, c = 0; jt < e;
                 jt += K, c++) { /* lanes outside [j0, j1) repeat a valid key; masked later */
                kvc_pf_run run = pf_share(pr, np, lines, calls, c, RG);
                far_prefetch(cx, it, cr, j0, j1, e, gl * calls + c, it->ng * calls, 0);
                const int64_t *ki = cr->ki + (jt - cr->p0);
                if (direct) {
                    const void *kp[KVC_QK_KEYS];
                    for (int64_t t = 0; t < K; t++) kp[t] = kd + cx->kes * (ki[t] + gl * hk);
                    cx->simd->qk_direct[cx->kslot](kp, s->qs + gl * RG * Dq8, Dq8, (int)RG, pb->D,
                                                   s->sc + gl * RG * KVC_CHUNK + (jt - cb), KVC_CHUNK, run);
                    continue;
                }
                if (pb->Dr) key_indices(cx, it, jt, K, j0, j1, &pb->vr, ri);
                for (int64_t t = 0; t < K; t++) {
                    float *dst = s->kt + t * Dq8;
                    cvt_row(cx, cx->kslot, cx->kgen, kd, cx->kes, ki[t] + gl * hk, cx->cmk, pb->D, dst);
                    if (pb->Dr)
                        cvt_row(cx, cx->rslot, cx->rgen, rd, cx->res, ri[t] + gl * hr, cx->cmr, pb->Dr, dst + cx->D8);
                }
                if (!cx->eo) kvci_pf_rest(&run); /* qk_eo spreads them over its row blocks */
                int64_t f[KVC_MAX_QT], nr[KVC_MAX_QT];
                const int n = rows_calls(cx, it, cr, gl, jt, K, f, nr);
                if (cx->eo && n > 0) cx->simd->kpanel(s->kt, Dq8, Dq8, s->kp);
                for (int x = 0; x < n; x++)
                    if (cx->eo)
                        cx->simd->qk_eo(s->kp, s->qeo + f[x] * Dq8, Dq8, (int)nr[x], Dq8,
                                        s->sc + f[x] * KVC_CHUNK + (jt - cb), KVC_CHUNK, &run);
                    else
                        cx->simd->qk(s->kt, Dq8, s->qs + f[x] * Dq8, Dq8, (int)nr[x], Dq8,
                                     s->sc + f[x] * KVC_CHUNK + (jt - cb), KVC_CHUNK);
                kvci_pf_rest(&run);
            }
        }
    }
    if (pb->kv_quant && (kvci_qidx_per_key(pb->kq) || pb->k_has_off))
        for (int64_t jt = j0 & ~(int64_t)7; jt < j1; jt += K) key_quant_fix(cx, it, R, jt, j1, s->sc + (jt - cb), s);
}

static void record_clear(float *rr, int64_t Dv8, float m, float l) {
    rr[0] = m, rr[1] = l, rr[2] = 0.0f;
    memset(rr + 3, 0, sizeof(float) * (size_t)(KVC_REC_HDR - 3 + Dv8));
}

static bool any_nan(const float *s, int64_t n) {
    for (int64_t t = 0; t < n; t++)
        if (s[t] != s[t]) return true;
    return false;
}

/* Soft-capping of scores s[0..n) (logit_softcap c > 0): s = c * tanh(s / c), each score alone and in scalar
 * code on every path (the same bits whatever the SIMD table, batch or grouping); -inf (masked, or scoring -inf)
 * stays -inf, NaN stays NaN. */
static void softcap(float *s, int64_t n, float c) {
    for (int64_t t = 0; t < n; t++)
        if (s[t] != -INFINITY) s[t] = c * tanhf(s[t] / c);
}

/* ALiBi of scores s[a..e) (alibi_slopes): the score of the key at distance d0 + t from the row's position gains
 * m * (d0 + t), the distance exact in f32 below 2^24 and one product and one sum rounded, in scalar code on every
 * path like softcap; -inf stays -inf (left out), NaN stays NaN. */
static void alibi(float *s, int64_t a, int64_t e, int64_t d0, float m) {
    for (int64_t t = a; t < e; t++)
        if (s[t] != -INFINITY) s[t] += m * (float)(d0 + t);
}

/* alibi_bf16's form: the key at absolute position j0 + t gains bf16(m * (j0 + t)) * scale (kvci_attn_alibi_bf16). */
static void alibi_bf16(float *s, int64_t a, int64_t e, int64_t j0, float m, float scale) {
    for (int64_t t = a; t < e; t++)
        if (s[t] != -INFINITY) s[t] += kvci_attn_alibi_bf16(m, j0 + t) * scale;
}

/* Selection, soft-capping (logit_softcap), ALiBi (alibi_slopes), maximum and exponentials of row r; weights outside the
 * row's visible keys are left 0 over [j0, j1) of the chunk. A NaN score makes the record NaN (through the exponentials,
 * or m and l NaN when the maximum dropped it); keys scoring -inf weigh 0 and are not read, like masked ones. */
static void row_softmax(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t r, int64_t cb, int64_t j0, int64_t j1,
                        const chunk_rows *cr, kvc_cpu_scratch *s, float *rr) {
    const kvc_attn_problem *pb = cx->pb;
    const int64_t i = it->i0 + r % it->ni;
    const int64_t a = kvci_max64(cr->ra[r % it->ni], j0) - cb, e = kvci_min64(cr->re[r % it->ni], j1) - cb;
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
    if (pb->p->logit_softcap > 0.0) softcap(sr + a, e - a, (float)pb->p->logit_softcap); /* before the maximum */
    if (pb->p->alibi_slopes.data) { /* after the cap; query head n of row r at position i + skv - sq */
        const int64_t n = (it->g0 + r / (pb->G * it->ni)) * pb->G + r / it->ni % pb->G;
        const float m = ((const float *)pb->p->alibi_slopes.data)[n];
        if (pb->p->alibi_bf16)
            alibi_bf16(sr, a, e, cb, m, (float)pb->p->scale);
        else
            alibi(sr, a, e, cb - (i + it->skv - it->sq), m);
    }
    const float m = cx->simd->max(sr + a8, e8 - a8);
    if (m == -INFINITY) { /* every key masked or scoring -inf (left out alike), or NaN scores the maximum dropped */
        const float x = any_nan(sr + a, e - a) ? NAN : -INFINITY;
        memset(sr + u0, 0, sizeof(float) * (size_t)(u1 - u0));
        record_clear(rr, cx->Dv8, x, x == x ? 0.0f : x);
        return;
    }
    const float l = cx->simd->exp_sum(sr + a8, e8 - a8, m);
    for (int64_t t = u0; t < a8; t++) sr[t] = 0.0f;
    for (int64_t t = e8; t < u1; t++) sr[t] = 0.0f;
    record_clear(rr, cx->Dv8, m, l);
}

/* Per-token value scales over keys [j0, j1): the weight of each key a row
 * sees is multiplied by the key's scale and the key's offset term summed
 * into the row's e. Keys of weight 0 (masked, or scoring -inf: the only
 * ones, since finite scores never weigh 0) are skipped (selection): their
 * scale or offset may be NaN or infinite, and 0 * NaN would poison the row. */
static void value_token_scales(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t R, int64_t cb, int64_t j0,
                               int64_t j1, kvc_cpu_scratch *s, float *rec) {
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    float vs[KVC_CHUNK], vo[KVC_CHUNK]; /* scale and offset of key j at j - j0, read once for all rows */
    for (int64_t j = j0; j < j1; j++) {
        const int64_t qi = kvci_attn_quant_index(pb, pb->vq, it->b, j, 0, 0, 0);
        vs[j - j0] = kvci_cpu_fquant(&p->value_scale, qi);
        vo[j - j0] = pb->v_has_off ? kvci_cpu_fquant(&p->value_offset, qi) : 0.0f;
    }
    for (int64_t r = 0; r < R; r++) {
        const int64_t i = it->i0 + r % it->ni;
        int64_t a, e;
        kvci_attn_row_interval(pb, i, it->sq, it->skv, &a, &e);
        float *w = s->sc + r * KVC_CHUNK; /* chunk-relative: key j at w[j - cb] */
        for (int64_t j = kvci_max64(a, j0); j < kvci_min64(e, j1); j++) {
            if (w[j - cb] == 0.0f) continue;
            w[j - cb] *= vs[j - j0];
            if (pb->v_has_off) rec[r * cx->RS + 2] += w[j - cb] * vo[j - j0];
        }
    }
}

/* Pass 2: rec acc += weights x values over keys [j0, j1), unit by unit, up to KVC_VTILE value rows per call. */
static void values(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t cb, int64_t j0, int64_t j1,
                   const chunk_rows *cr, kvc_cpu_scratch *s, float *rec) {
    const kvc_attn_problem *pb = cx->pb;
    const kvc_attention_params *p = pb->p;
    const int64_t RG = pb->G * it->ni, R = it->ng * RG, RS = cx->RS, Dv8 = cx->Dv8;
    const bool direct = cx->direct_pv && RG <= KVC_DIRECT_ROWS;
    const int64_t hv = pb->vv.shead;
    const char *vd = p->v.data;
    const char *pr[KVC_PF_ROWS];
    if (pb->kv_quant && kvci_qidx_per_key(pb->vq)) value_token_scales(cx, it, R, cb, j0, j1, s, rec);
    if (cx->amx) {
        units_amx(cx, it, cb, j0, j1, cr, s, rec, 1);
        return;
    }
    for (int64_t a = j0, e; a < j1; a = e) {
        e = sub_end(a, j1);
        const int64_t calls = kvci_cdiv(e - a, KVC_VTILE);
        for (int64_t gl = 0; gl < it->ng; gl++) {
            int lines;
            const int64_t np = next_unit_rows(cx, it, cr, j0, j1, a, e, gl, 1, pr, &lines);
            for (int64_t jv = a, c = 0; jv < e; jv += KVC_VTILE, c++) {
                kvc_pf_run run = pf_share(pr, np, lines, calls, c, RG);
                far_prefetch(cx, it, cr, j0, j1, e, gl * calls + c, it->ng * calls, 1);
                const int nk = (int)kvci_min64(KVC_VTILE, e - jv);
                const int64_t *vi = cr->vi + (jv - cr->p0);
                const float *w = s->sc + gl * RG * KVC_CHUNK + (jv - cb);
                float *acc = rec + gl * RG * RS + KVC_REC_HDR;
                if (direct) {
                    const void *vp[KVC_VTILE];
                    for (int t = 0; t < nk; t++) vp[t] = vd + cx->ves * (vi[t] + gl * hv);
                    cx->simd->pv_direct[cx->vslot](vp, nk, w, KVC_CHUNK, (int)RG, pb->Dv, acc, RS, run);
                    continue;
                }
                for (int t = 0; t < nk; t++)
                    cvt_row(cx, cx->vslot, cx->vgen, vd, cx->ves, vi[t] + gl * hv, cx->cmv, pb->Dv, s->vt + t * Dv8);
                kvci_pf_rest(&run);
                int64_t f[KVC_MAX_QT], nr[KVC_MAX_QT];
                for (int x = 0, n = rows_calls(cx, it, cr, gl, jv, nk, f, nr); x < n; x++)
                    cx->simd->pv(s->vt, Dv8, nk, s->sc + f[x] * KVC_CHUNK + (jv - cb), KVC_CHUNK, (int)nr[x], Dv8,
                                 rec + f[x] * RS + KVC_REC_HDR, RS);
            }
        }
    }
}

void kvci_cpu_chunk(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t c, kvc_cpu_scratch *s, float *rec) {
    const int64_t R = it->ng * cx->pb->G * it->ni, cb = c * KVC_CHUNK;
    const int64_t j0 = kvci_max64(cb, it->lo), j1 = kvci_min64(cb + KVC_CHUNK, it->hi);
    chunk_rows cr;
    chunk_rows_fill(cx, it, cb, j0, j1, &cr);
    scores(cx, it, cb, j0, j1, &cr, s);
    for (int64_t r = 0; r < R; r++) row_softmax(cx, it, r, cb, j0, j1, &cr, s, rec + r * cx->RS);
    values(cx, it, cb, j0, j1, &cr, s, rec);
}
