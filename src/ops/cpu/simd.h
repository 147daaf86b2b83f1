/* SIMD primitives of the CPU attention kernel, one table per instruction
 * set, chosen once at run time.
 *
 * K/V rows are first converted (f32, f16, bf16, int8, fp8 -> f32, exact) into
 * small f32 tiles whose rows are padded with zeros to a multiple of 8
 * channels; the dot-product and accumulation kernels then work on f32 only.
 * Every (query row, key) pair goes through the same instruction sequence
 * whatever the number of rows or keys handled together, so results do not
 * depend on how work is grouped (the determinism contract, docs/ops.md "Two implementations"). */
#ifndef KVC_OPS_CPU_SIMD_H
#define KVC_OPS_CPU_SIMD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/dtype_traits.h"
#include "kvcache/base.h"

#define KVC_QK_KEYS 8  /* keys per qk call */
#define KVC_VTILE   32 /* most keys per pv call */

/* Where channel d of a K/V row sits relative to channel 0: plain storage
 * d; NZ storage with tile width c0 = 1 << sh: (d >> sh) * nzs + (d & mask). */
typedef struct kvc_chan_map {
    int64_t nzs;  /* elements between NZ column tiles (bs * c0) */
    int sh;       /* log2(c0); 62 for plain rows */
    int64_t mask; /* c0 - 1; all ones for plain rows */
} kvc_chan_map;

/* dst[d] = (float)src[chan(d)] for d < dim (int8: the raw integer; fp8: its exact value), then
 * zeros up to the next multiple of 8. */
typedef void (*kvc_cvt_fn)(const void *src, kvc_chan_map cm, int64_t dim, float *dst);

/* out[r * ostride + t] = sum_d q[r * qstride + d] * k[t * kstride + d] for
 * r < nr, t < KVC_QK_KEYS; dim, qstride, kstride multiples of 8. */
typedef void (*kvc_qk_fn)(const float *k, int64_t kstride, const float *q, int64_t qstride, int nr, int64_t dim,
                          float *out, int64_t ostride);

/* acc[r * astride + d] += w[r * wstride + t] * v[t * vstride + d] for
 * r < nr, d < dim (a multiple of 8), keys t < nk <= KVC_VTILE in
 * increasing order. A pair (r, t) whose weight is 0 is skipped (its value
 * row may hold NaN); skipping and adding 0 * finite give the same bits. */
typedef void (*kvc_pv_fn)(const float *v, int64_t vstride, int nk, const float *w, int64_t wstride, int nr, int64_t dim,
                          float *acc, int64_t astride);

/* s[t] = exp(max(s[t] - m, KVC_EXP_LO)) for t < n (a multiple of 8): -inf
 * gives 0, NaN stays NaN, and no finite argument underflows to 0 (the
 * value of a key whose score is finite is always read; docs/ops.md "NaN
 * and Inf"); returns the sum, accumulated per lane t % 8 in order of t,
 * then a fixed tree. */
#define KVC_EXP_LO (-87.0f)
typedef float (*kvc_exp_sum_fn)(float *s, int64_t n, float m);

/* max of s[0..n) (n a multiple of 8), -inf when every entry is -inf; a NaN
 * entry may be dropped (NaN scores reach the row through the exponentials,
 * and a row whose maximum is -inf is searched for NaN). */
typedef float (*kvc_max_fn)(const float *s, int64_t n);

/* A finished record's output row: out[d] = acc[d] / l for d < n, a NaN
 * written as the one quiet NaN 0x7fc00000 (docs/ops.md "NaN and Inf"), or
 * zeros when l is 0 (a row that saw no key); out may be acc. One IEEE
 * division per element: every table gives the same bits. */
typedef void (*kvc_out_row_fn)(const float *acc, int64_t n, float l, float *out);

/* Decode forms of qk and pv that read plain K/V rows of one dtype directly
 * (converted in registers; no f32 tile): k[t] / v[t] point at channel 0 of
 * key t; dim a multiple of 8. Each (row, key) pair gets exactly the
 * arithmetic of qk / pv on the converted tile, so either form may serve any
 * row. pf: rows to prefetch (`lines` cache lines from each row address),
 * one row per inner step of the call, the rest at the end.
 * NULL in tables without them. */
typedef struct kvc_pf_run {
    const char *const *at;  /* next row address */
    const char *const *end; /* one past the last */
    int lines;              /* cache lines from each row address */
    bool l1;                /* into L1 (prefetcht0), else into L2 (prefetcht2) */
} kvc_pf_run;

/* The run's next row, if any. */
__attribute__((always_inline)) static inline void kvci_pf_row(kvc_pf_run *r) {
    if (r->at < r->end) {
        const char *row = *r->at++;
        for (int l = 0; l < r->lines; l++) {
            if (r->l1)
                __builtin_prefetch(row + 64 * l, 0, 3);
            else
                __builtin_prefetch(row + 64 * l, 0, 1);
        }
    }
}

/* The rows the run has left. */
static inline void kvci_pf_rest(kvc_pf_run *r) {
    while (r->at < r->end) kvci_pf_row(r);
}

typedef void (*kvc_qk_direct_fn)(const void *const *k, const float *q, int64_t qstride, int nr, int64_t dim, float *out,
                                 int64_t ostride, kvc_pf_run pf);
typedef void (*kvc_pv_direct_fn)(const void *const *v, int nk, const float *w, int64_t wstride, int nr, int64_t dim,
                                 float *acc, int64_t astride, kvc_pf_run pf);

/* Scores of keys stored in lanes (KVC_BLOCK_BNNDBS): channel d of key t at
 * element d * cs + t of k (one dtype, converted in registers), for t < nk
 * <= KVC_LANES_KEYS consecutive keys of one block and head:
 * out[r * ostride + t] = the FMA chain s = fma(q[r * qstride + d], k(d, t), s)
 * over d = 0 .. dim - 1 from s = 0, for r < nr (any number of rows). Every
 * key is its own lane, so the result does not depend on the vector width,
 * nk or nr; this is the only qk of such keys (decode and prefill alike). */
#define KVC_LANES_KEYS 64
typedef void (*kvc_qk_lanes_fn)(const void *k, int64_t cs, int nk, const float *q, int64_t qstride, int nr, int64_t dim,
                                float *out, int64_t ostride, kvc_pf_run pf);

/* The even/odd form of the tile scores (AVX-512 only; NULL elsewhere), the same sums as qk: kpanel repacks an f32
 * tile of KVC_QK_KEYS rows (dim a multiple of 8) into panel [dim / 8][4][16]: per 8 channels, keys 0-3's even
 * channels (key b's channels 0, 2, 4, 6 in lanes 4b .. 4b + 3), their odd channels, then keys 4-7's; qk_eo
 * takes the query rows in the matching form (per 8 channels 0, 2, 4, 6, 1, 3, 5, 7; kvci_cpu_load_queries)
 * and writes out like qk. Each score's 8 lane sums and their tree are qk's, so the bits are too; the pairs of
 * a lane sum then sit in two registers (their sum one vertical addition, not two shuffles and one). qk_eo
 * prefetches pf's rows one per block of rows (not the rest: the caller's). */
typedef void (*kvc_kpanel_fn)(const float *k, int64_t kstride, int64_t dim, float *panel);
typedef void (*kvc_qk_eo_fn)(const float *panel, const float *q, int64_t qstride, int nr, int64_t dim, float *out,
                             int64_t ostride, kvc_pf_run *pf);

typedef struct kvc_simd_table {
    const char *name;
    kvc_cvt_fn cvt[KVC_SIMD_SLOTS]; /* by kvci_simd_slot(dtype) */
    kvc_qk_fn qk;
    kvc_pv_fn pv;
    kvc_qk_direct_fn qk_direct[KVC_SIMD_SLOTS]; /* by kvci_simd_slot(dtype); NULL: tile path */
    kvc_pv_direct_fn pv_direct[KVC_SIMD_SLOTS];
    kvc_qk_lanes_fn qk_lanes[KVC_SIMD_SLOTS]; /* by kvci_simd_slot(dtype); in every table */
    kvc_exp_sum_fn exp_sum;
    kvc_max_fn max;
    kvc_out_row_fn out_row;
    bool amx; /* bf16 K/V rows: scores and values on AMX tiles (attn_amx.h); the rest of the AVX-512 table */
    kvc_kpanel_fn kpanel; /* with qk_eo, or NULL */
    kvc_qk_eo_fn qk_eo;
} kvc_simd_table;

/* The slot of dt (its dtype-table entry; dtype_traits.h): the tables' converters of a built-in K/V dtype,
 * or KVC_SIMD_GENERIC, whose entries are NULL in every table (rows decoded by the entry's to_f32). */
static inline int kvci_simd_slot(kvc_dtype dt) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dt);
    return t != NULL ? (int)t->simd : KVC_SIMD_F32;
}

static inline int64_t kvci_chan(kvc_chan_map cm, int64_t d) { return (d >> cm.sh) * cm.nzs + (d & cm.mask); }

static inline int64_t kvci_round8(int64_t n) { return (n + 7) & ~(int64_t)7; }

extern const kvc_simd_table kvc_simd_portable;
/* NULL when the compiler cannot build the path (simd_avx2.c, simd_avx512.c). */
const kvc_simd_table *kvci_simd_avx2_table(void);
const kvc_simd_table *kvci_simd_avx512_table(void);
/* The AVX-512 table with `amx` set; NULL when the compiler cannot build it. */
const kvc_simd_table *kvci_simd_amx_table(void);
/* Whether this CPU runs table t (simd_select.c). */
bool kvci_simd_cpu_runs(const kvc_simd_table *t);
/* The table the kernels use: the override when set, else the path named by
 * the environment variable KVC_SIMD ("portable", "avx2" or "avx512"; read
 * once; a path this CPU cannot run gives the best one below it, any other
 * value is ignored), else the best this CPU runs (AVX-512 F/BW/VL, then
 * AVX2+FMA+F16C, then portable). */
const kvc_simd_table *kvci_simd_select(void);
/* Tests: force a table (NULL: back to the environment and detection). Not for concurrent use. */
void kvci_simd_override(const kvc_simd_table *t);
/* Whether decode items take the far prefetch into L2 (attn_chunk.c, far_prefetch): not on Intel CPUs (CPUID
 * vendor GenuineIntel), where it cost time (docs/bench-attention.md, "Decode on an Ice Lake Xeon"). Read once. */
bool kvci_simd_far_prefetch(void);

#endif
