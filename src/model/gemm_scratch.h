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

/* The same for one of KVC_GEMM_SCRATCH_SLOTS independent buffers: slot 0 is kvci_gemm_scratch's
 * (a call's operands, e.g. the quantized activations, which every thread of the call reads), slot
 * 1 a kernel's own buffer inside one block of work (e.g. the Q4_0 groups unpacked once for all
 * row tiles), so that a kernel running on the calling thread never moves the operands. */
#define KVC_GEMM_SCRATCH_SLOTS 2
kvc_status kvci_gemm_scratch_slot(int slot, size_t bytes, void **out);

#endif
