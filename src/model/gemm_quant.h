/* The dense layers over quantized weights (issue 30): C[M, N] = A[M, K] . W[N, K]^T
 * (+ bias) with f32 activations A and weights W stored as 8-bit or 4-bit integers
 * with one f16 scale per block of 32 consecutive k of one output row (the Q8_0 and
 * Q4_0 formats of llama.cpp), packed once at load into the layout every kernel reads.
 *
 * Blocks: Kp = K rounded up to 32, KB = Kp / 32 blocks; G = ceil(N / 16) column
 * groups of 16 output rows of W. Padding weights (n >= N or k >= K) and padding
 * activations are 0.
 *
 * Packed W (kvci_wq_packed_bytes): the integer part, then the scales.
 *   Q8_0: int8 q[G][KB][8][16][4]: byte ((g KB + b) 512 + (kk / 4) 64 + c 4 + kk % 4)
 *         holds q of W[16g + c][32b + kk]: one 16 x 32 block is one 512-byte AMX B tile
 *         (8 rows of 16 columns x 4 k, the VNNI quad layout of vpdpbusd/TDPBSSD).
 *   Q4_0: uint8 u[G][KB][4][16][4]: byte ((g KB + b) 256 + (kk / 4) 64 + c 4 + kk % 4)
 *         for kk < 16 holds in its low nibble u of W[16g + c][32b + kk] and in its high
 *         nibble u of W[16g + c][32b + 16 + kk]; u = q + 8 in [0, 15], q in [-8, 7].
 *   then f16 d[G][KB][16]: the scale of W[16g + c][32b .. 32b + 31] at (g KB + b) 16 + c.
 *   W[n][k] = f32(d) * q.
 * Quantizing one block of 32 weights w (f32, kvci_wq_pack):
 *   Q8_0: d = f16(max |w| / 127); q = clamp(rne(w / f32(d)), -127, 127) (q = 0 when d = 0).
 *   Q4_0: m = the w of largest |w| (first one on ties); d = f16(m / -8);
 *         q = clamp(rne(w / f32(d)), -8, 7) (q = 0 when d = 0).
 *   rne: round to nearest, ties to even.
 *
 * Activations, quantized per row and per block of 32 by kvci_wq_quantize_rows
 * (every kernel reads the same bytes, so the choice does not change a bit):
 *   amax = max |a| over the block; da = amax / 127 (f32; NaN when amax is not finite);
 *   ia = da != 0 ? 1 / da : 0; qa = clamp(rne(a * ia), -127, 127) (int8), 0 where a * ia
 *   is NaN (a non-finite block; or a = 0 in a block whose da is subnormal, so ia = inf);
 *   asum = sum of the block's qa (int32, the Q4_0 kernels' offset term).
 *   Stored row-major: qa [Mp][Kp] int8, da [Mp][KB] f32, asum [Mp][KB] int32,
 *   Mp = M rounded up to 16 (rows >= M are 0).
 *
 * The one reduction order, every kernel (portable, AVX2, AVX-512 VNNI, AMX-INT8),
 * so all their outputs are bitwise equal and every output element depends only on
 * its row of A, its column of W and K (never on M, N, tiling, threads or ISA):
 *   acc = +0
 *   for b = 0 .. KB-1:  isum = sum over the block's 32 k of q_w * qa   (exact, int32;
 *                              Q4_0: sum u * qa - 8 asum)
 *                       s    = f32(d_w[n][b]) * da[i][b]               (one f32 rounding)
 *                       acc  = fmaf((float)isum, s, acc)               (isum exact in f32)
 *   C[i][n] = bias ? acc + bias[n] : acc
 * A non-finite activation makes its row's outputs NaN (the runtime refuses them). */
#ifndef KVC_MODEL_GEMM_QUANT_H
#define KVC_MODEL_GEMM_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/base.h"

typedef enum kvc_wq_format { KVC_WQ_Q8_0, KVC_WQ_Q4_0 } kvc_wq_format;

/* Bytes of one packed W of N rows of K (a 64-byte multiple) in format f. */
int64_t kvci_wq_packed_bytes(kvc_wq_format f, int64_t N, int64_t K);
/* Bytes of a packed W's integer part: its f16 scales start there. */
int64_t kvci_wq_scales_offset(kvc_wq_format f, int64_t N, int64_t K);
/* Quantizes W[n][k] = src[n * sn + k * sk] (f32) into dst [kvci_wq_packed_bytes]. */
void kvci_wq_pack(kvc_wq_format f, int64_t N, int64_t K, const float *src, int64_t sn, int64_t sk, void *dst);
/* Row n of a packed W, dequantized to f32: out[K]. */
void kvci_wq_packed_row(kvc_wq_format f, const void *packed, int64_t N, int64_t K, int64_t n, float *out);

/* The operands of one call as the kernels see them. */
typedef struct kvc_wq_call {
    kvc_wq_format format;
    int64_t M, N, K, Kp, KB, Mp;
    const int8_t *qa;    /* [Mp][Kp] */
    const float *da;     /* [Mp][KB] */
    const int32_t *asum; /* [Mp][KB] */
    const uint8_t *W;    /* packed, integer part */
    const uint16_t *dw;  /* packed, scales (f16 bits) [G][KB][16] */
    const float *bias;   /* [N] or NULL */
    float *C;            /* [M, N] rows ldc apart */
    int64_t ldc;
} kvc_wq_call;

/* Quantizes rows [i0, i1) of A [M, K] (rows lda apart) into c's qa/da/asum (i1 <= Mp;
 * rows >= M written as 0): kvci_wq_quantize_avx512's where the CPU runs it, else the
 * portable loop; both write the same bytes. */
void kvci_wq_quantize_rows(const kvc_wq_call *c, const float *A, int64_t lda, int64_t i0, int64_t i1, int8_t *qa,
                           float *da, int32_t *asum);
typedef void (*kvc_wq_quantize_fn)(const kvc_wq_call *c, const float *A, int64_t lda, int64_t i0, int64_t i1,
                                   int8_t *qa, float *da, int32_t *asum);
void kvci_wq_quantize_rows_portable(const kvc_wq_call *c, const float *A, int64_t lda, int64_t i0, int64_t i1,
                                    int8_t *qa, float *da, int32_t *asum);
/* The AVX-512 form (gemm_quant_rows_avx512.c); NULL when the CPU cannot run it. */
kvc_wq_quantize_fn kvci_wq_quantize_avx512(void);

/* Rows [m0, m1) x column groups [g0, g1) of C; m0 a multiple of the kernel's mb;
 * rows may run to m1 <= Mp (the padding rows are read, never written past M). */
typedef void (*kvc_wq_block_fn)(const kvc_wq_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1);

typedef struct kvc_wq_kernel {
    const char *name;         /* "amx-int8", "avx512-vnni", "avx2", "portable" */
    int mb;                   /* rows per block granularity */
    kvc_wq_block_fn block[2]; /* per kvc_wq_format; NULL: the format is not supported by this kernel */
} kvc_wq_kernel;

/* C[i, j] = sum_k A[i, k] W[j, k] (+ bias[j]) in the order above: A [M, K] f32 rows lda
 * apart, W packed, bias [N] or NULL, C rows ldc apart. Uses the OpenMP threads when the
 * product is large enough; the quantized activations live in a per-thread scratch kept
 * between calls: KVC_ENOMEM when it cannot grow (C untouched). */
kvc_status kvci_gemm_wq(kvc_wq_format f, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const void *W,
                        const float *bias, float *C, int64_t ldc);

/* One of several products over the same A (kvci_gemm_wq_parts): W [N, K] packed, bias [N] or
 * NULL, C [M, N] rows ldc apart; N >= 0. */
typedef struct kvc_wq_part {
    int64_t N;
    const void *W;
    const float *bias;
    float *C;
    int64_t ldc;
} kvc_wq_part;
#define KVC_WQ_MAX_PARTS 4

/* kvci_gemm_wq of each of parts[0..n) (1 <= n <= KVC_WQ_MAX_PARTS, one format, one K) over the
 * same A, in one parallel region with A quantized once: a decode step's q/k/v or gate/up
 * projections wait for the threads once instead of once per matrix. Every output element is
 * the bits kvci_gemm_wq gives it alone. */
kvc_status kvci_gemm_wq_parts(kvc_wq_format f, int64_t M, int64_t K, const float *A, int64_t lda, int n,
                              const kvc_wq_part *parts);

#define KVC_WQ_MAX_KERNELS 4
/* The kernels this CPU (and OS) can run for format f, best first; portable always last. */
int kvci_wq_kernels(kvc_wq_format f, const kvc_wq_kernel **out /* [KVC_WQ_MAX_KERNELS] */);
/* Forces a kernel by name (tests, bench); NULL restores the best one. KVC_EINVAL naming
 * the kernel when this CPU cannot run it. */
kvc_status kvci_wq_force(const char *name);
const kvc_wq_kernel *kvci_wq_active(kvc_wq_format f);

/* The per-ISA kernels (gemm_quant_*.c); NULL when the compiler cannot build them or
 * the CPU (and for AMX the OS's tile-data permission) cannot run them. */
const kvc_wq_kernel *kvci_wq_amx_kernel(void);
const kvc_wq_kernel *kvci_wq_vnni512_kernel(void);
const kvc_wq_kernel *kvci_wq_avx2_kernel(void);

#endif
