/* The bf16 decode table of `kvcache bench gemm` (bench_gemm_decode.c). */
#ifndef KVC_BENCH_GEMM_DECODE_H
#define KVC_BENCH_GEMM_DECODE_H

#include <stdbool.h>

/* Prints the table (JSON Lines when json); 0, or 1 when memory runs out. */
int kvc_bench_gemm_bf16_decode(bool json);

#endif
