/* The dense layers over bf16 weights: C[M, N] = A[M, K] . B[N, K]^T (+ bias)
 * with f32 activations A and bf16 weights B (a Linear weight kept in the
 * checkpoint's dtype), packed once at load into the layout every kernel reads.
 *
 * Packed B: [G = ceil(N/16)][Kp/2][16][2] bf16, Kp = K rounded up to 32:
 * group g holds columns 16g .. 16g+15; its pair P holds, for each of the 16
 * columns n, B[n][2P] and B[n][2P+1] side by side (the VNNI pair layout of
 * the AMX B tile and of vdpbf16ps); columns >= N and k >= K are +0. Sixteen
 * consecutive pairs of a group form one 1 KiB AMX tile.
 *
 * Three families of kernels, each with its own fixed reduction order and
 * so its own bits; within a family every output element depends only on its
 * row of A, its column of B and K (never on M, N, tiling or threads):
 *
 *   "fma" family (avx512-fma, avx2-fma, portable: bitwise equal to each
 *   other): acc = +0, then acc = fma(A[i,k], B[j,k], acc) for k = 0 .. K-1
 *   in order, C = acc (+ bias). A is used unrounded: the products are exact
 *   and |C - exact| <= (K + 1) u sum_k |A[i,k] B[j,k]| (+ |bias|), u = 2^-24.
 *
 *   "dot" family (amx-bf16: TDPBF16PS tiles; avx512-bf16: vdpbf16ps): A is
 *   split per element into KVC_GEMM_BF16_PARTS bf16 parts (hi = bf16(a),
 *   lo = bf16(a - hi), lo2 = bf16(a - hi - lo): round to nearest even), and
 *   for each block of 32 k, in increasing k, the products of every part are
 *   accumulated in f32 (all pairs of the block with hi, then with lo, ...),
 *   C = acc (+ bias). Products of bf16 numbers are exact in f32; the
 *   instructions round each sum to nearest even and treat denormal inputs
 *   and results as zero. Three parts represent every normal f32 exactly, so
 *   |C - exact| <= (3K + 1) u' sum_k |A[i,k] B[j,k]| (+ |bias|) + D with
 *   u' = 2^-24 (1 + 2^-7) and D the flushed denormals, at most
 *   (3K + 1) 2^-126 (1 + max |B|) absolute. Two parts would add the
 *   representation error 2^-16 |a| per element (bench gemm measured the choice,
 *   docs/runtime.md).
 *
 * Rounded activations (kvci_gemm_bf16_rounded; the model's "activations":
 * "bf16" option, what a PyTorch bf16 model computes): each A[i,k] is rounded
 * once to bf16 a' = bf16(a) (nearest even) and C = sum_k a' B[j,k] (+ bias) in
 * the family's order: the dot family with one part (a' alone, the hi part of
 * the split: one vdpbf16ps per pair; denormal a become 0), the fma family by
 * its fma chain over a' (the rounded rows in a scratch, then the kernel as it
 * is). Each kernel's bits are those of its exact mode run on A rounded
 * beforehand (the two further parts are then +0 and add nothing), so the
 * invariances above hold within each kernel; the rounding adds at most
 * 2^-8 sum_k |A[i,k] B[j,k]| (bf16 has 8 significant bits) to the family's
 * bound over a' (|a'| <= (1 + 2^-8) |a|):
 *   fma: |C - exact| <= 2^-8 S + (K + 1) u ((1 + 2^-8) S + |bias|),
 *   dot: |C - exact| <= 2^-8 S + (K + 1) u' ((1 + 2^-8) S + |bias|) + D,
 * S = sum_k |A[i,k] B[j,k]|, D now (K + 1) 2^-126 (1 + max |B|). The amx-bf16
 * kernel has no rounded mode (untested here): it falls to the next kernel.
 *
 * f16 weights (IEEE binary16, kept as an f16 checkpoint stores them) use the
 * same packed layout and run on the fma family only, in its order with the
 * weight widened exactly from f16 (the dot instructions take bf16 only):
 * the fma family's bound holds as it is, and every fma kernel gives the same
 * bits (kvci_gemm_f16).
 *
 * The kernel is chosen at run time (CPUID, and for AMX the Linux permission
 * to use tile data, asked once per process) and may be forced by name. */
#ifndef KVC_MODEL_GEMM_BF16_H
#define KVC_MODEL_GEMM_BF16_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/base.h"

#ifndef KVC_GEMM_BF16_PARTS
#define KVC_GEMM_BF16_PARTS 3 /* bf16 parts of an activation on the dot paths */
#endif

/* Elements (uint16_t) of a packed B of N rows of K. */
int64_t kvci_bf16_packed_elems(int64_t N, int64_t K);
/* Packs B[n][k] = src[n * sn + k * sk] (f32, rounded to bf16 to nearest even; exact for
 * values widened from bf16) into dst [kvci_bf16_packed_elems(N, K)]; sk != 1 reads a
 * transposed source ([in, out] checkpoints). */
void kvci_bf16_pack(int64_t N, int64_t K, const float *src, int64_t sn, int64_t sk, uint16_t *dst);
/* Row n of a packed B, widened to f32: out[K]. */
void kvci_bf16_packed_row(const uint16_t *packed, int64_t N, int64_t K, int64_t n, float *out);
/* The same for f16 weights: kvci_f16_pack rounds to f16 (nearest even; exact for values widened
 * from f16, which is what the loader passes it). */
void kvci_f16_pack(int64_t N, int64_t K, const float *src, int64_t sn, int64_t sk, uint16_t *dst);
void kvci_f16_packed_row(const uint16_t *packed, int64_t N, int64_t K, int64_t n, float *out);

/* C[i, j] = sum_k A[i, k] B[j, k] (+ bias[j]) for i < M, j < N: A [M, K] rows lda
 * apart, B packed (above), bias [N] or NULL, C [M, N] rows ldc apart; M, N >= 0,
 * K >= 1; C must not overlap A or bias. Uses the OpenMP threads when the product is
 * large enough. The dot kernels split A into a per-thread scratch kept between calls:
 * KVC_ENOMEM when it cannot grow (C untouched). */
kvc_status kvci_gemm_bf16(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const uint16_t *B,
                          const float *bias, float *C, int64_t ldc);

/* kvci_gemm_bf16 with A rounded to bf16 (above), on the kernel kvci_gemm_bf16_rounded_active names;
 * KVC_ENOMEM when the scratch of the rounded activations cannot grow (C untouched). */
kvc_status kvci_gemm_bf16_rounded(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const uint16_t *B,
                                  const float *bias, float *C, int64_t ldc);

/* kvci_gemm_bf16 over f16 weights packed by kvci_f16_pack: the fma family's order, on the kernel
 * kvci_gemm_f16_active names (never KVC_ENOMEM: no split). */
kvc_status kvci_gemm_f16(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const uint16_t *B,
                         const float *bias, float *C, int64_t ldc);

/* The operands of one call as the kernels see them. */
typedef struct kvc_bf16_call {
    int64_t M, N, K, Kp;
    const float *A; /* [M, K] rows lda apart (fma family) */
    int64_t lda;
    const uint16_t *As; /* bf16 parts of A (dot family) in the kernel's layout: 16 x 32 tiles at
                         * kvci_bf16_split_at (amx-bf16), 4-row panels (avx512-bf16's own split) */
    int64_t Mp;         /* M rounded up to 16 */
    const uint16_t *B;  /* packed */
    const float *bias;
    float *C;
    int64_t ldc;
} kvc_bf16_call;

/* Offset of part p of A[i][k] in As: [parts][Mp/16][Kp/32][16][32], each 16 x 32 block one
 * contiguous 1 KiB AMX tile (a row of it 32 k of one row of A); +0 past M and K. */
static inline int64_t kvci_bf16_split_at(const kvc_bf16_call *c, int p, int64_t i, int64_t k) {
    return ((p * (c->Mp / 16) + i / 16) * (c->Kp / 32) + k / 32) * 512 + (i % 16) * 32 + k % 32;
}

/* Rows [m0, m1) x column groups [g0, g1) of C; m0 a multiple of the kernel's mb. */
typedef void (*kvc_bf16_block_fn)(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1);

/* Writes the parts of A's rows [i0, i1) (i0 a multiple of 16; i1 a multiple of 16, or M when
 * M <= 16: then no kernel reads the padding rows; i1 <= Mp) into As. */
typedef void (*kvc_bf16_split_fn)(const kvc_bf16_call *c, int64_t i0, int64_t i1, uint16_t *As);

typedef struct kvc_gemm_bf16_kernel {
    const char *name;        /* "amx-bf16", "avx512-fma", "avx512-bf16", "avx2-fma", "portable" */
    const char *family;      /* "dot" or "fma" */
    kvc_bf16_split_fn split; /* the dot family's split of A into As; NULL: the kernel reads A */
    int mb;                  /* rows per block granularity */
    kvc_bf16_block_fn block;
    bool k_blocked;              /* for M > 16 the kernel reads B once per block and A once per column block of
                                  * it: blocks take wide column ranges (few re-reads of A) */
    kvc_bf16_block_fn block_f16; /* the fma family's order over f16 weights (kvci_gemm_f16); NULL: bf16 only */
    /* Rounded activations (kvci_gemm_bf16_rounded): the block over them, NULL when the kernel has none;
     * the dot family's one-part split (NULL for the fma family, whose block reads the rounded rows as A). */
    kvc_bf16_block_fn block_rounded;
    kvc_bf16_split_fn split_rounded;
    int panel_groups; /* column groups per step of the kernel's blocks of 16 rows or more (avx512-fma: its panel's 3,
                       * gemm_bf16_x86.h); 0: none. Jobs of M >= 16 rows take whole steps (gemm16). */
} kvc_gemm_bf16_kernel;

#define KVC_GEMM_BF16_MAX_KERNELS 5
/* The kernels this CPU (and OS) can run, best first; portable always last. */
int kvci_gemm_bf16_kernels(const kvc_gemm_bf16_kernel **out /* [KVC_GEMM_BF16_MAX_KERNELS] */);
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_active(void);
/* The kernel kvci_gemm_f16 runs: the forced kernel when it takes f16, else the best one that does. */
const kvc_gemm_bf16_kernel *kvci_gemm_f16_active(void);
/* The kernel kvci_gemm_bf16_rounded runs: the forced kernel when it has a rounded mode, else the
 * first kernel with a one-part split (one vdpbf16ps per pair outruns two widened FMAs: bench gemm),
 * else the best one with a rounded mode. */
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_rounded_active(void);
/* Forces a kernel by name (tests, bench); NULL restores the best one. KVC_EINVAL
 * naming the kernel when this CPU cannot run it. */
kvc_status kvci_gemm_bf16_force(const char *name);

/* The per-ISA kernels (gemm_bf16_*.c); NULL when the compiler cannot build them.
 * The CPU check is the caller's, except for AMX: kvci_gemm_bf16_amx_kernel
 * returns NULL unless the CPU has AMX-BF16 and the OS granted tile data. */
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_amx_kernel(void);
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_dot512_kernel(void);
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_fma512_kernel(void);
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_fma256_kernel(void);
/* The AMX kernel's split into kvci_bf16_split_at tiles (gemm_bf16_dot512.c; AVX-512F +
 * AVX512_BF16 conversions). */
void kvci_bf16_split_avx512(const kvc_bf16_call *c, int64_t i0, int64_t i1, uint16_t *As);

#endif
