/* The per-thread scratch of the GEMMs (gemm_bf16.c, gemm_quant.c): one
 * grow-only, 64-byte aligned buffer per calling thread, kept between calls and
 * freed when the thread exits. A thread runs one GEMM at a time, so the GEMMs
 * share it; its contents do not survive the next call. */
#ifndef KVC_MODEL_GEMM_SCRATCH_H
#define KVC_MODEL_GEMM_SCRATCH_H

#include <stddef.h>

#include "kvcache/base.h"

/* *out: at least `bytes` of this thread's scratch; KVC_ENOMEM (*out NULL) when it cannot grow. */
kvc_status kvci_gemm_scratch(size_t bytes, void **out);

#endif
