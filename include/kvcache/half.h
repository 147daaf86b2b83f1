/* kvcache half-precision helpers: scalar conversions between f32 and the two
 * 16-bit float formats used by caches and activations (IEEE binary16 "f16"
 * and bfloat16 "bf16"). Narrowing rounds to nearest, ties to even; NaN stays
 * NaN and infinities stay infinite.
 *
 * Thread safety: pure functions, thread-safe. */
#ifndef KVCACHE_HALF_H
#define KVCACHE_HALF_H

#include <stdint.h>

#include "kvcache/export.h"

#ifdef __cplusplus
extern "C" {
#endif

KVC_API float kvc_f16_to_f32(uint16_t h);
KVC_API uint16_t kvc_f32_to_f16(float f);
KVC_API float kvc_bf16_to_f32(uint16_t h);
KVC_API uint16_t kvc_f32_to_bf16(float f);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_HALF_H */
