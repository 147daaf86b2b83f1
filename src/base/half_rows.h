/* Row converters f32 -> bf16 / f16 (half.c): y[i] = kvc_f32_to_bf16(x[i]) / kvc_f32_to_f16(x[i]) for
 * i < n, the same bits as the scalar API on every instruction-set path (vectorised up to the KVC_SIMD cap:
 * bf16 by an AVX-512 build of the same C loop, f16 by F16C's vcvtps2ph). On the calling thread. */
#ifndef KVC_BASE_HALF_ROWS_H
#define KVC_BASE_HALF_ROWS_H

#include <stdint.h>

void kvci_f32_to_bf16_n(const float *x, int64_t n, uint16_t *y);
void kvci_f32_to_f16_n(const float *x, int64_t n, uint16_t *y);

#endif
