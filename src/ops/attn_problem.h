/* The validated form of one attention call, shared by the reference and the
 * fast CPU kernel: resolved extents and the index arithmetic of every
 * layout (AO 3.3: one kvci_kv_view per K/V tensor), length form (3.4),
 * mask mode (3.5) and dequantisation granularity (3.10). Built by kvci_attn_resolve (attn_check.c), which
 * refuses every misuse of AO 6.1 first. */
#ifndef KVC_OPS_ATTN_PROBLEM_H
#define KVC_OPS_ATTN_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/half.h"
#include "kvcache/ops.h"

/* How a dequantisation scale/offset tensor is indexed. */
typedef enum kvc_qidx {
    KVC_QIDX_NONE = 0,
    KVC_QIDX_TENSOR,
    KVC_QIDX_CHANNEL,
    KVC_QIDX_TOKEN, /* [B, S] by request and key position */
    KVC_QIDX_HEAD,
    KVC_QIDX_SLOT /* [NB * bs] by the key's physical cache slot */
} kvc_qidx;

/* Scales that vary per key (a factor of the key's score or value weight)
 * rather than per channel or head (folded into the query or the output). */
static inline bool kvci_qidx_per_key(kvc_qidx q) { return q == KVC_QIDX_TOKEN || q == KVC_QIDX_SLOT; }

/* The form of one head's channels in a K/V-family tensor. */
typedef enum kvci_kv_form {
    KVCI_KV_ROWS = 0, /* channels adjacent */
    KVCI_KV_LANES,    /* keys in lanes: channel d every schan elements (K only) */
    KVCI_KV_NZ        /* tiles of c0 channels, schan elements apart */
} kvci_kv_form;

/* How one K/V-family tensor (K, V or key_rope) is addressed, resolved once
 * per call (attn_view.c) from the front end's layouts or the caller's
 * kvc_paged_kv. Channel 0 of head g of key j of request b sits at
 *   paged:      block_table[b][j / bs] * sblk + (j % bs) * stok + g * shead
 *   contiguous: b * sblk + (k0 + j) * stok + g * shead (k0: the request's first packed row)
 * and channel d at + kvci_attn_kv_chan(view, d). */
typedef struct kvci_kv_view {
    kvci_kv_form form;
    int64_t c0;                /* channels per tile: rows 0, lanes 1, NZ 32 / element size */
    int64_t sblk, shead, stok; /* element strides per block (contiguous: per request), head, token */
    int64_t schan;             /* lanes: from channel to channel; NZ: from tile to tile; rows: 0 */
} kvci_kv_view;

typedef struct kvc_attn_problem {
    const kvc_attention_params *p;
    int64_t B, Nq, Nkv, G, D, Dv, Dr; /* Dr = 0 without MLA rope */
    bool q_cum;                       /* q_lens cumulative (T.. layouts) */
    bool paged;
    bool kv_packed;  /* contiguous K/V of a T.. layout: rows cu_kv[b-1] .. */
    int64_t Tq;      /* T.. layouts: query rows; else B * Sq_dim */
    int64_t Sq_dim;  /* B.. layouts: S extent of q / out / lse */
    int64_t Skv_dim; /* contiguous B.. layouts: S extent of k/v; packed: Tkv */
    int64_t max_sq, max_skv;
    /* paging */
    int64_t bs, NB, tbl_w;
    kvci_kv_view vk, vv, vr; /* addressing of k, v, k_rope (vr: with MLA) */
    /* masks */
    bool has_mask; /* explicit [Sq, Skv] mask consulted (modes 0/1) */
    int64_t mask_bstride, mask_cols;
    /* dequantisation of int8 K/V */
    bool kv_quant;
    kvc_qidx kq, vq; /* scale indexing for K and V */
    bool k_has_off, v_has_off;
    bool rope_quant; /* MLA k_rope int8/fp8 (k's dtype): dequantised with the key scale of its key */
    int64_t q_tok_s; /* per-token scales: S extent of [B, S] */
} kvc_attn_problem;

/* Validates p (every rule of AO 6.1 that applies) and fills pb. */
kvc_status kvci_attn_resolve(const kvc_attention_params *p, kvc_attn_problem *pb);

/* attn_view.c: the view of contiguous K/V (p's layout, Skv_dim) with dim
 * channels per head; the view of a paged tensor of dtype dt stored densely
 * in block layout lay (BNNDBS: keys in lanes); and the view of a paged
 * tensor t described by d (name: its field, "paged_kv.k"), refused unless
 * every field is usable and every element addressed lies inside t. */
kvci_kv_view kvci_attn_view_contiguous(const kvc_attn_problem *pb, int64_t dim);
kvci_kv_view kvci_attn_view_dense(const kvc_attn_problem *pb, kvc_block_layout lay, int64_t dim, kvc_dtype dt);
kvc_status kvci_attn_view_paged(const kvc_attn_problem *pb, const kvc_paged_tensor *d, const char *name,
                                const kvc_tensor *t, kvci_kv_view *v);

/* ---- lengths ------------------------------------------------------------- */

/* Query rows of request b: first row index (T.. layouts; 0 otherwise) and count. */
static inline void kvci_attn_q_range(const kvc_attn_problem *pb, int64_t b, int64_t *q0, int64_t *sq) {
    const kvc_attention_params *p = pb->p;
    if (pb->q_cum) {
        *q0 = b == 0 ? 0 : p->q_lens[b - 1];
        *sq = p->q_lens[b] - *q0;
    } else {
        *q0 = 0;
        *sq = p->q_lens ? p->q_lens[b] : pb->Sq_dim;
    }
}

/* Keys of request b: first packed row (packed K/V; 0 otherwise) and count. */
static inline void kvci_attn_kv_range(const kvc_attn_problem *pb, int64_t b, int64_t *k0, int64_t *skv) {
    const kvc_attention_params *p = pb->p;
    if (p->kv_len_form == KVC_KV_FORM_CUMULATIVE) {
        *k0 = b == 0 ? 0 : p->kv_lens[b - 1];
        *skv = p->kv_lens[b] - *k0;
    } else {
        *k0 = 0;
        *skv = p->kv_lens[b];
    }
}

/* ---- query / output / lse addressing ------------------------------------- */

/* Element index of channel 0 of (request b, local row i, head n) in a
 * query-shaped tensor with `dim` channels per head (q: D, q_rope: Dr). q0
 * is the request's first row (kvci_attn_q_range). */
static inline int64_t kvci_attn_q_index(const kvc_attn_problem *pb, int64_t b, int64_t q0, int64_t i, int64_t n,
                                        int64_t dim) {
    switch (pb->p->layout) {
    case KVC_LAYOUT_NTD_TND: return (n * pb->Tq + q0 + i) * dim;
    case KVC_LAYOUT_TND:
    case KVC_LAYOUT_TND_NTD: return ((q0 + i) * pb->Nq + n) * dim;
    case KVC_LAYOUT_BNSD: return ((b * pb->Nq + n) * pb->Sq_dim + i) * dim;
    default: return ((b * pb->Sq_dim + i) * pb->Nq + n) * dim; /* BSH, BSND, BSND_NBSD */
    }
}

/* Element index of channel 0 of the output row (b, i, n). */
static inline int64_t kvci_attn_out_index(const kvc_attn_problem *pb, int64_t b, int64_t q0, int64_t i, int64_t n) {
    const int64_t Dv = pb->Dv;
    switch (pb->p->layout) {
    case KVC_LAYOUT_TND:
    case KVC_LAYOUT_NTD_TND: return ((q0 + i) * pb->Nq + n) * Dv;
    case KVC_LAYOUT_TND_NTD: return (n * pb->Tq + q0 + i) * Dv;
    case KVC_LAYOUT_BNSD: return ((b * pb->Nq + n) * pb->Sq_dim + i) * Dv;
    case KVC_LAYOUT_BSND_NBSD: return ((n * pb->B + b) * pb->Sq_dim + i) * Dv;
    default: return ((b * pb->Sq_dim + i) * pb->Nq + n) * Dv; /* BSH, BSND */
    }
}

/* Element index of the lse of (b, i, n): [Tq, Nq, 1] or [B, Nq, Sq, 1]. */
static inline int64_t kvci_attn_lse_index(const kvc_attn_problem *pb, int64_t b, int64_t q0, int64_t i, int64_t n) {
    if (pb->q_cum) return (q0 + i) * pb->Nq + n;
    return (b * pb->Nq + n) * pb->Sq_dim + i;
}

/* ---- key / value addressing ---------------------------------------------- */

/* Element index of channel 0 of key j of request b, KV head g, in the
 * tensor addressed by view v (pb->vk, vv or vr). k0 is the request's first
 * packed row (kvci_attn_kv_range). Linear in j inside one block (and
 * throughout contiguous storage), and in g. */
static inline int64_t kvci_attn_kv_index(const kvc_attn_problem *pb, const kvci_kv_view *v, int64_t b, int64_t k0,
                                         int64_t j, int64_t g) {
    if (pb->paged) {
        const int32_t *tbl = (const int32_t *)pb->p->block_table.data;
        return tbl[b * pb->tbl_w + j / pb->bs] * v->sblk + (j % pb->bs) * v->stok + g * v->shead;
    }
    return b * v->sblk + (k0 + j) * v->stok + g * v->shead;
}

/* Offset of channel d from channel 0 of one key (rows: d; lanes, NZ: tiled). */
static inline int64_t kvci_attn_kv_chan(const kvci_kv_view *v, int64_t d) {
    return v->c0 ? (d / v->c0) * v->schan + d % v->c0 : d;
}

/* The heads of one token adjacent (rows of dim channels, head after head),
 * so that items of several heads read K/V in address order. */
static inline bool kvci_kv_token_major(const kvci_kv_view *v, int64_t dim, int64_t Nkv) {
    return v->form == KVCI_KV_ROWS && v->shead == dim && v->stok >= Nkv * dim;
}

/* ---- visibility (AO 3.5) ------------------------------------------------- */

/* pre_tokens / next_tokens bounded to +-2^60: every band wider than any
 * sequence behaves the same, and sums with positions cannot overflow
 * (INT64_MAX for both means "no band limit"). */
#define KVC_ATTN_BAND_LIMIT ((int64_t)1 << 60)
static inline int64_t kvci_attn_band_clamp(int64_t x) {
    return x > KVC_ATTN_BAND_LIMIT ? KVC_ATTN_BAND_LIMIT : x < -KVC_ATTN_BAND_LIMIT ? -KVC_ATTN_BAND_LIMIT : x;
}

/* Keys [lo, hi) of row i that the mode's band/causal rule admits, narrowed to the row's chunk [c, c + C) with
 * attention_chunk_size C > 0 (c = floor(p / C) * C, p = i + skv - sq the row's absolute position), clipped to
 * [0, skv) (an explicit mask, if any, is consulted on top: kvci_attn_masked). Both ends are non-decreasing in
 * i. */
static inline void kvci_attn_row_interval(const kvc_attn_problem *pb, int64_t i, int64_t sq, int64_t skv, int64_t *lo,
                                          int64_t *hi) {
    const kvc_attention_params *p = pb->p;
    const int64_t delta = skv - sq, pre = kvci_attn_band_clamp(p->pre_tokens),
                  next = kvci_attn_band_clamp(p->next_tokens);
    int64_t a = 0, e = skv; /* [a, e) before clipping */
    switch (p->sparse_mode) {
    case 0:
        if (pb->has_mask) {
            a = i - pre;
            e = i + next + 1;
        }
        break;
    case 2: e = i + 1; break;
    case 3: e = i + delta + 1; break;
    case 4:
        a = i + delta - pre;
        e = i + delta + next + 1;
        break;
    default: break; /* mode 1: the mask alone */
    }
    if (p->attention_chunk_size > 0) {
        const int64_t C = p->attention_chunk_size, pos = i + delta;
        const int64_t c = (pos >= 0 ? pos / C : -((-pos + C - 1) / C)) * C; /* floor(pos / C) * C */
        if (a < c) a = c;
        if (e > c + C) e = c + C;
    }
    if (a < 0) a = 0;
    if (e > skv) e = skv;
    if (e < a) e = a;
    *lo = a;
    *hi = e;
}

/* The ALiBi bias of key j (absolute position) in the alibi_bf16 form, before the scale: bf16(m * bf16(j)), the
 * position rounded to bf16, the product taken in f32 and rounded to bf16 (torch's bf16 slopes times int64
 * positions: transformers' Falcon); the kernel and the reference both read it from here. */
static inline float kvci_attn_alibi_bf16(float m, int64_t j) {
    const float jb = kvc_bf16_to_f32(kvc_f32_to_bf16((float)j));
    return kvc_bf16_to_f32(kvc_f32_to_bf16(m * jb));
}

/* True when the explicit mask hides key j from row i of request b. */
static inline bool kvci_attn_masked(const kvc_attn_problem *pb, int64_t b, int64_t i, int64_t j) {
    if (!pb->has_mask) return false;
    const uint8_t *m = (const uint8_t *)pb->p->mask.data;
    return m[b * pb->mask_bstride + i * pb->mask_cols + j] != 0;
}

/* ---- dequantisation (AO 3.10) -------------------------------------------- */

/* Index into a scale/offset tensor of kind q for (b, j, g, d) with `dim` channels per head. */
static inline int64_t kvci_attn_quant_index(const kvc_attn_problem *pb, kvc_qidx q, int64_t b, int64_t j, int64_t g,
                                            int64_t d, int64_t dim) {
    switch (q) {
    case KVC_QIDX_CHANNEL: return g * dim + d;
    case KVC_QIDX_TOKEN: return b * pb->q_tok_s + j;
    case KVC_QIDX_SLOT: {
        const int32_t *tbl = (const int32_t *)pb->p->block_table.data;
        return (int64_t)tbl[b * pb->tbl_w + j / pb->bs] * pb->bs + j % pb->bs;
    }
    case KVC_QIDX_HEAD: return g;
    default: return 0;
    }
}

#endif
