/* TEMP: the per-ISA kernels of kvci_gemm_wq until their branch lands (gemm_quant.h):
 * none, so every call takes the portable kernel. */
#include <stddef.h>

#include "model/gemm_quant.h"

const kvc_wq_kernel *kvci_wq_amx_kernel(void) { return NULL; }
const kvc_wq_kernel *kvci_wq_vnni512_kernel(void) { return NULL; }
const kvc_wq_kernel *kvci_wq_avx2_kernel(void) { return NULL; }
