/* Internal types of the fast CPU attention kernel: the call context, work
 * items, per-thread scratch and chunk records, shared by the scheduler
 * (attention_cpu.c) and the chunk computation (attn_chunk.c). */
#ifndef KVC_OPS_CPU_ATTN_CPU_H
#define KVC_OPS_CPU_ATTN_CPU_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "ops/attn_problem.h"
#include "ops/cpu/attn_amx.h"
#include "ops/cpu/simd.h"

#define KVC_CHUNK 512 /* keys per chunk at absolute positions c * KVC_CHUNK (also the split-K granule) */
_Static_assert(KVC_CHUNK == KVC_AMX_KEYS, "the AMX kernels take a chunk's keys in one call");
#define KVC_ROWS                                                                                                       \
    256 /* target rows per item (heads x query positions); prefill tiles reuse each K/V tile this often (a key tile    \
           skips the rows that do not see it, so a causal diagonal costs no more with larger tiles: 256 measured       \
           0.96-0.97 of the time of 128, bf16 prefill 1 x 512 and 8 x 64 GQA 2, 0.86-0.93 paged 512 x 4096 GQA 4, one  \
           thread; keys in lanes 0.99-1.03)                                                                            \
         */
#define KVC_AMX_ROWS                                                                                                   \
    256 /* the same on the amx path, whose arithmetic is fast enough for the K/V reads to matter (measured prefill 512 \
           x 4096, one thread: 0.88 of the time of 128 rows; 512 rows: no faster) */
#define KVC_MAX_QT KVC_AMX_ROWS /* most query rows per item (QT, with one head per KV head) */
_Static_assert(KVC_ROWS <= KVC_AMX_ROWS, "KVC_MAX_QT bounds both paths' query tiles");
#define KVC_SUB                                                                                                        \
    64 /* keys per unit of a chunk (absolute multiples): a unit computes one KV head over them while the next unit's   \
          rows are prefetched (64 measured 0.91-0.99 of the time of 128) */
_Static_assert(KVC_SUB <= KVC_LANES_KEYS, "a unit's keys of one block fit one qk_lanes call");
#define KVC_PF_ROW_LINES 16  /* most cache lines of one K/V row a unit prefetches */
#define KVC_PF_CHANNELS  256 /* most channel rows of keys in lanes a unit prefetches */
#define KVC_PF_ROWS                                                                                                    \
    512 /* most prefetch rows of one unit (its key rows; keys in lanes: channel rows of its block segments) */
#define KVC_PF_AHEAD_ONE       2            /* units ahead of the unit an item of one row per KV head prefetches */
#define KVC_PF_FAR_BYTES       (256 * 1024) /* most bytes of one sub-range's K or V a far prefetch fetches into L2 */
#define KVC_PF_FAR_AHEAD_HEADS 2            /* sub-ranges ahead the far prefetch of head-major one-head items fetches */
#define KVC_DIRECT_ROWS                                                                                                \
    8 /* most rows per KV head an item may compute with the direct (tile-free) kernels: decode up to GQA 8 */
#define KVC_REC_HDR 8 /* record header floats: m, l, e (value-offset term), padding */

/* Work item: (request b, KV heads [g0, g0 + ng), tile of query rows). Row
 * r of an item is (head group g0 + r / (G ni), head h = r / ni % G,
 * query row i0 + r % ni). Token-major K/V storage (all heads of a token
 * adjacent) puts several heads in one item so that K/V are read in address
 * order; head-major storage uses one head per item. */
typedef struct kvc_cpu_item {
    int64_t b, g0, ng, i0, ni; /* request, KV heads, first query row, query rows */
    int64_t q0, sq, k0, skv;
    int64_t lo, hi;     /* union of the rows' visible key intervals */
    int64_t c_lo, c_hi; /* chunks [c_lo, c_hi) hold visible keys */
    int64_t task0;      /* split-K: index of this item's first chunk task */
} kvc_cpu_item;

typedef struct kvc_cpu_ctx {
    const kvc_attn_problem *pb;
    const kvc_simd_table *simd;
    int64_t D8, Dr8, Dq8; /* q / key-tile row: D channels padded to D8, then Dr padded to Dr8; Dq8 = D8 + Dr8 */
    int64_t Dv8;          /* value channels padded to a multiple of 8 */
    int64_t QT, R, RS;    /* query rows per item; max rows; record floats KVC_REC_HDR + Dv8 */
    int64_t n_items, n_tasks;
    bool token_major; /* K and V of all heads of one token adjacent (kvci_kv_token_major) */
    bool prefetch;    /* K/V rows are prefetched unit by unit (not NZ: column tiles) */
    bool far;         /* prefetch and kvci_simd_far_prefetch(): decode items also prefetch far ahead into L2 */
    bool direct;      /* plain K/V rows, D and Dv multiples of 8, no rope: items of <= KVC_DIRECT_ROWS rows per
                         head may use the table's direct (tile-free) qk / pv */
    bool direct_pv;   /* the same for pv alone (plain V rows, Dv a multiple of 8) */
    bool lanes;       /* K in lanes (pb->vk.form KVCI_KV_LANES): every qk through the table's qk_lanes */
    bool amx;         /* plain bf16 K/V rows, no rope, quantisation or soft-cap, Dv % 16 == 0, the table's amx: every
                         item's scores and values on AMX tiles (attn_amx.h) */
    bool eo;          /* the table's kpanel / qk_eo score the tile path's keys (not amx, not keys in lanes) */
    int64_t Dp;       /* amx: D rounded up to 32 (query parts' row) */
    int kslot, vslot, rslot;
    int64_t kes, ves, res; /* element sizes (0 for a dtype stored in blocks) */
    /* KVC_SIMD_GENERIC slots: the dtype-table entries whose to_f32 decodes K, V, rope rows into the tiles; else NULL */
    const kvc_dtype_traits *kgen, *vgen, *rgen;
    kvc_chan_map cmk, cmv, cmr;
} kvc_cpu_ctx;

/* Scratch of one thread (floats, each part 32-byte aligned). */
typedef struct kvc_cpu_scratch {
    float *qs;   /* [R, Dq8] query rows times the softmax scale (and folded key scales) */
    float *qsum; /* [R] sum of a query row's D channels (per-token key offsets) */
    float *cst;  /* [R] per-channel key offset term */
    float *sc;   /* [R, KVC_CHUNK] scores, then weights, at chunk-relative positions */
    float *kt;   /* [KVC_QK_KEYS, Dq8] key tile (f32) */
    float *vt;   /* [KVC_VTILE, Dv8] value tile (f32) */
    float *rec;  /* [R, RS] chunk record */
    float *run;  /* [R, RS] running record */
    /* eo only (else NULL): */
    float *qeo; /* [R, Dq8] qs in qk_eo's form (even then odd channels of each 8), for items on the tile path */
    float *kp;  /* [KVC_QK_KEYS * Dq8] kt as kpanel's panel */
    /* amx only (else NULL): */
    uint16_t *qa;  /* [KVC_AMX_PARTS, R, Dp] bf16 parts of qs, grouped per KV head when an item has at most
                      KVC_AMX_KEYS_A_ROWS rows per head (kvci_amx_split_queries) */
    uint16_t *kb;  /* [KVC_CHUNK, Dp] packed key tiles */
    uint16_t *vb;  /* [KVC_CHUNK, Dv] packed value pairs */
    uint16_t *pa;  /* [KVC_AMX_PARTS, 32, KVC_AMX_PV_KEYS] weight parts */
    uint8_t *qbad; /* [R] row has a non-finite channel */
} kvc_cpu_scratch;

/* Element i of an f32 dequantisation scale/offset tensor; NaN when it is
 * not finite (docs/ops.md "NaN and Inf": what it dequantises is NaN). */
static inline float kvci_cpu_fquant(const kvc_tensor *t, int64_t i) {
    const float x = ((const float *)t->data)[i];
    return isfinite(x) ? x : NAN;
}

/* The scalar exponential of record merges and sinks, with exp_sum's rule
 * (simd.h): exp(max(x, KVC_EXP_LO)), -inf gives 0, NaN stays NaN. */
static inline float kvci_cpu_exp(float x) { return x == -INFINITY ? 0.0f : expf(x < KVC_EXP_LO ? KVC_EXP_LO : x); }

void kvci_cpu_ctx_init(kvc_cpu_ctx *cx, const kvc_attn_problem *pb);
/* KV heads per item for a tile of ni query rows. */
int64_t kvci_cpu_heads_per_item(const kvc_cpu_ctx *cx, int64_t ni);
size_t kvci_cpu_thread_floats(const kvc_cpu_ctx *cx);
kvc_cpu_scratch kvci_cpu_scratch_at(const kvc_cpu_ctx *cx, float *base);

/* Loads the item's query rows into scratch. */
void kvci_cpu_load_queries(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, kvc_cpu_scratch *s);

/* Computes the record of chunk c of an item into rec [R, RS]: per row
 * (m, l, e, acc[Dv8]) with m = -inf for a row that sees no key of the chunk. */
void kvci_cpu_chunk(const kvc_cpu_ctx *cx, const kvc_cpu_item *it, int64_t c, kvc_cpu_scratch *s, float *rec);

#endif
