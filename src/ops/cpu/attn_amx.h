/* The AMX path of the CPU attention kernel for bf16 K/V rows (attn_amx.c):
 * scores and value sums on TDPBF16PS tiles with f32-level exactness.
 *
 * The f32 operand of each product (a query channel times the softmax scale,
 * or a softmax weight) is split into KVC_AMX_PARTS bf16 parts (hi =
 * bf16(x), lo = bf16(x - hi), lo2 = bf16(x - hi - lo), round to nearest
 * even: every normal f32 exactly); the other operand (a key or value
 * channel) is exact in bf16. Each output element is one f32 accumulator
 * that runs over blocks of 32 in increasing order (channels for a score,
 * keys at absolute multiples of 32 for a value sum) and within a block over
 * the parts in order, one TDPBF16PS each. The element depends only on its
 * row, its key (or channel) and that order: not on the rows or keys beside
 * it, how many rows a tile holds, or the call, so the kernel's bitwise
 * guarantees hold within the path. Products are exact, each sum is rounded
 * to nearest even, denormal operands and results count as zero (at most
 * 2^-126 per term).
 *
 * Non-finite key or value channels and query channels go into the tiles as
 * 0, and their terms are added afterwards in f32: each is +-inf or NaN, so
 * the sum is the same in any order and the "NaN and Inf" table of
 * docs/ops.md holds; a key or value row that is absent (NULL) is zeros and
 * its weight is not read. */
#ifndef KVC_OPS_CPU_ATTN_AMX_H
#define KVC_OPS_CPU_ATTN_AMX_H

#include <stdint.h>

#include "ops/cpu/simd.h"

#define KVC_AMX_PARTS   3
#define KVC_AMX_KEYS    512 /* most keys of one call (a chunk, KVC_CHUNK) */
#define KVC_AMX_PV_KEYS 128 /* keys whose weight parts kvci_amx_pv splits at a time */

static inline int64_t kvci_round32(int64_t n) { return (n + 31) & ~(int64_t)31; }

/* Parts of nr query rows (row r: qs[r * qstride + d], d < D) into qa, Dp = D
 * rounded up to 32, zeros past D and in place of non-finite channels; qbad[r]
 * = 1 when row r has one, else 0. tg 0: part p of row r at qa[p * pstride +
 * r * Dp] (kvci_amx_qk). tg > 0: rows in groups of tg (<= KVC_AMX_KEYS_A_ROWS,
 * one KV head's rows), each group's parts as B operands of kvci_amx_qk_keys:
 * group g at qa + g * KVC_AMX_PARTS * Dp * tg, within it part p of block x (32
 * channels) at (x * KVC_AMX_PARTS + p) * 32 * tg, element 2 tg c + 2 n + i =
 * channel 32 x + 2 c + i of the group's row n. */
void kvci_amx_split_queries(const float *qs, int64_t qstride, int nr, int64_t D, uint16_t *qa, int64_t pstride, int tg,
                            uint8_t *qbad);

/* Most rows per KV head scored with the keys as the A operand (kvci_amx_qk_keys): a tile product costs the same
 * for 1 to 16 rows, so few rows (decode) take 16 keys per product straight from the cache instead of packing
 * the keys as B tiles. */
#define KVC_AMX_KEYS_A_ROWS 16

/* out[r * os + t] = the score of query row r (parts as split above, f32 row
 * qs[r * qstride], flag qbad[r]) and key t (k[t]: D bf16 channels; NULL:
 * zeros) for r < nr, t < nk (a multiple of 16, at most KVC_AMX_KEYS); kb:
 * scratch of nk * Dp elements. */
void kvci_amx_qk(const uint16_t *const *k, int nk, int64_t D, const uint16_t *qa, int64_t pstride, const float *qs,
                 int64_t qstride, const uint8_t *qbad, int nr, float *out, int64_t os, uint16_t *kb, kvc_pf_run *pf);

/* The scores of kvci_amx_qk, bit for bit, for nr <= KVC_AMX_KEYS_A_ROWS rows whose parts qt are grouped (tg =
 * nr above): C = 16 keys x nr rows, A = 16 keys x 32 channels read in place from the rows (copied into kb when a
 * key is absent, the rows are not evenly spaced, D is not a multiple of 32, or a score came out non-finite),
 * B = one part of the rows' channel pairs. TDPBF16PS computes each element alike whichever operand holds the
 * key: the same products, summed in the same order. kb: scratch of 32 * Dp elements. */
void kvci_amx_qk_keys(const uint16_t *const *k, int nk, int64_t D, const uint16_t *qt, const float *qs, int64_t qstride,
                      const uint8_t *qbad, int nr, float *out, int64_t os, uint16_t *kb, kvc_pf_run *pf);

/* acc[r * as + d] += sum over t of w[r * ws + t] v[t][d] for r < nr, d < Dv
 * (a multiple of 16), keys t < nk (a multiple of 32, at most KVC_AMX_KEYS) in
 * increasing order; v[t] NULL: the key is absent (its weight not read). A
 * weight of 0 adds nothing. vb: scratch of nk * Dv elements, pa: of
 * KVC_AMX_PARTS * 32 * KVC_AMX_PV_KEYS. Both kernels issue pf's prefetches
 * one row per key row they read (docs/bench-attention.md, "Decode design"), the rest at the end. */
void kvci_amx_pv(const uint16_t *const *v, int nk, int64_t Dv, const float *w, int64_t ws, int nr, float *acc,
                 int64_t as, uint16_t *vb, uint16_t *pa, kvc_pf_run *pf);

#endif
