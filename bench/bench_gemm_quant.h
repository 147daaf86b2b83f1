/* The quantized-weight kernels' table of `kvcache bench gemm` (bench_gemm_quant.c). */
#ifndef KVC_BENCH_GEMM_QUANT_H
#define KVC_BENCH_GEMM_QUANT_H

#include <stdbool.h>

/* Prints the table (JSON Lines when json); 0, or 1 when memory runs out. */
int kvc_bench_gemm_quant(bool json);

#endif
