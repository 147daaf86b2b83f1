/* Element access by dtype for the ops layer (scalar paths only; the fast
 * kernel has its own vector loads). */
#ifndef KVC_OPS_ELEM_H
#define KVC_OPS_ELEM_H

#include <stdint.h>
#include <string.h>

#include "kvcache/base.h"
#include "kvcache/half.h"

/* Reads element idx of a f32/f16/bf16/i8/fp8 buffer as float (i8 raw, fp8
 * decoded exactly; neither scaled). */
static inline float kvci_elem_load(const void *base, kvc_dtype dt, int64_t idx) {
    switch (dt) {
    case KVC_DTYPE_F32: return ((const float *)base)[idx];
    case KVC_DTYPE_F16: return kvc_f16_to_f32(((const uint16_t *)base)[idx]);
    case KVC_DTYPE_BF16: return kvc_bf16_to_f32(((const uint16_t *)base)[idx]);
    case KVC_DTYPE_I8: return (float)((const int8_t *)base)[idx];
    case KVC_DTYPE_BOOL: return (float)((const uint8_t *)base)[idx];
    case KVC_DTYPE_F8E4M3: return kvc_fp8_e4m3_to_f32(((const uint8_t *)base)[idx]);
    case KVC_DTYPE_F8E5M2: return kvc_fp8_e5m2_to_f32(((const uint8_t *)base)[idx]);
    default: return 0.0f;
    }
}

/* Stores v (rounded to nearest even; fp8 saturating) at element idx of a
 * f32/f16/bf16/fp8 buffer. */
static inline void kvci_elem_store(void *base, kvc_dtype dt, int64_t idx, float v) {
    switch (dt) {
    case KVC_DTYPE_F32: ((float *)base)[idx] = v; break;
    case KVC_DTYPE_F16: ((uint16_t *)base)[idx] = kvc_f32_to_f16(v); break;
    case KVC_DTYPE_BF16: ((uint16_t *)base)[idx] = kvc_f32_to_bf16(v); break;
    case KVC_DTYPE_F8E4M3: ((uint8_t *)base)[idx] = kvc_f32_to_fp8_e4m3(v); break;
    case KVC_DTYPE_F8E5M2: ((uint8_t *)base)[idx] = kvc_f32_to_fp8_e5m2(v); break;
    default: break;
    }
}

static inline int kvci_is_fp8_dtype(kvc_dtype dt) { return dt == KVC_DTYPE_F8E4M3 || dt == KVC_DTYPE_F8E5M2; }

/* Cache dtypes read through a dequantisation scale: int8 (scale required)
 * and fp8 (scale optional, 1 when absent). */
static inline int kvci_is_quant_dtype(kvc_dtype dt) { return dt == KVC_DTYPE_I8 || kvci_is_fp8_dtype(dt); }

static inline int kvci_is_float_dtype(kvc_dtype dt) {
    return dt == KVC_DTYPE_F32 || dt == KVC_DTYPE_F16 || dt == KVC_DTYPE_BF16;
}

#endif
