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

/* The two 8-bit float formats of fp8 KV caches (docs/kv-dtypes.md).
 * Decoding is exact (every fp8 value is an f32). Encoding rounds to nearest,
 * ties to even, and saturates: a finite |x| above the largest finite value
 * and +-inf give +-max (448 for e4m3, 57344 for e5m2); NaN gives NaN (0x7f
 * with x's sign); -0 stays -0. e4m3 (the "fn" variant: no infinities,
 * S.1111.111 is NaN) has subnormals down to 2^-9, e5m2 down to 2^-16. */
KVC_API float kvc_fp8_e4m3_to_f32(uint8_t x);
KVC_API uint8_t kvc_f32_to_fp8_e4m3(float f);
KVC_API float kvc_fp8_e5m2_to_f32(uint8_t x);
KVC_API uint8_t kvc_f32_to_fp8_e5m2(float f);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_HALF_H */
