/* Paged-cache geometry shared by the write ops. */
#ifndef KVC_OPS_WRITE_INTERNAL_H
#define KVC_OPS_WRITE_INTERNAL_H

#include <stdbool.h>

#include "kvcache/ops.h"

typedef struct kvc_paged_geom {
    kvc_block_layout order;
    int64_t n_blocks, bs, n_heads, head_dim;
    int64_t c0; /* NZ channels per tile; 0 for plain orders */
} kvc_paged_geom;

/* Reads the geometry of a 4-D paged cache (refusal names `what`). */
kvc_status kvci_paged_geom_of(const kvc_tensor *cache, kvc_block_layout order, const char *what, kvc_paged_geom *g);
/* Element index of (slot, head h, channel d). */
int64_t kvci_paged_index(const kvc_paged_geom *g, int64_t slot, int64_t h, int64_t d);
/* R16: one slot per token, each -1 or in [0, capacity); debug builds also
 * refuse a slot >= bs (outside the null block) given twice. */
kvc_status kvci_check_slots(const int64_t *slots, int64_t n_slots, int64_t n_tokens, int64_t capacity, int64_t bs,
                            const char *what);

/* AO 2.1 arguments: cache [B, S, H], upd [B, L, H], one start per row with
 * start + L <= S (dtypes are checked by the caller). */
kvc_status kvci_check_contiguous(const kvc_tensor *cache, const kvc_tensor *upd, const int64_t *starts,
                                 int64_t n_starts, const char *what);

/* upd is [T, Nkv, D] with the geometry's Nkv and D (refusal names `what`). */
kvc_status kvci_check_upd(const kvc_tensor *upd, const kvc_paged_geom *g, const char *what);

/* Stores x quantised into element idx of an int8 cache (kvc_quantize_i8) or
 * an fp8 cache (x * inv_scale, saturating round to nearest even; offset 0). */
void kvci_quant_store(void *cache, kvc_dtype dt, int64_t idx, float x, float inv_scale, float offset);

/* scale = amax / qmax (dequantisation) and inv = qmax / amax (quantisation);
 * an all-zero group, or one so small that either quotient leaves the finite
 * non-zero f32 range, gets 1 / 1 (its values then round to 0 or stay tiny). */
void kvci_scale_of_amax(float amax, float qmax, float *scale, float *inv);

/* The helpers below give the same bits in every build of them (the AVX-512 builds of norm.c and
 * rope.c too): no contraction into FMAs, which clang does by default where the target has them. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* RMSNorm (norm.c): 1 / sqrt(mean(x^2) + eps) accumulated in double, x [n],
 * and one output element x * inv * gamma rounded once to f32. */
double kvci_rms_inv(const float *x, int64_t n, float eps);
/* A row's sum of squares, one double accumulator in order (what kvci_rms_inv sums). */
double kvci_sum_squares(const float *x, int64_t n);
/* x [n], a part of a row of n_total elements whose sum of squares is ss, normalised in place as
 * kvc_rmsnorm_f32 normalises the whole row (gamma: the part's weights). */
void kvci_rmsnorm_by_sum(float *x, const float *gamma, int64_t n, double ss, int64_t n_total, float eps);
static inline float kvci_rms_scaled(float x, double inv, float gamma) {
    return (float)((double)x * inv * (double)gamma);
}
/* kvc_rmsnorm_rows_f32 from rows x [n_rows, n] ld apart into y (rows ld apart; y may be x), each row
 * with kvc_rmsnorm_f32's bits (norm.c): _threads shares the rows among the OpenMP threads as
 * kvc_rmsnorm_rows_f32 does, _to runs on the calling thread; kvci_rmsnorm_rows is _to in place. */
void kvci_rmsnorm_rows_threads(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps,
                               float *y);
void kvci_rmsnorm_rows_to(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps,
                          float *y);
void kvci_rmsnorm_rows(float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps);
/* LayerNorm of rows x [n_rows, n] ld apart into y (y may be x): (x - mean) / sqrt(var + eps) * gamma
 * (+ beta [n], StarCoder2's bias; NULL: none, Cohere's), mean and variance each one double sum over the row in
 * order, each output rounded once to f32; rows shared among the OpenMP threads as kvci_rmsnorm_rows_threads,
 * the same bits. _to (no bias) runs on the calling thread, row r scaled by gamma + r * gamma_ld (0: one gamma
 * for every row; Cohere's q/k norms: each head its own). */
void kvci_layernorm_rows_threads(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma,
                                 const float *beta, float eps, float *y);
void kvci_layernorm_rows_to(const float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, int64_t gamma_ld,
                            float eps, float *y);

/* One RoPE output lane from the pair (x1, x2): the first-half lane
 * x1 cos - x2 sin, or the second-half lane x2 cos + x1 sin. */
static inline float kvci_rope_lane(float x1, float x2, float c, float s, bool second) {
    return second ? x2 * c + x1 * s : x1 * c - x2 * s;
}

#endif
