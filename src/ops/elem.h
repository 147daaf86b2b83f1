/* Element access by dtype for the ops layer (scalar paths only; the fast
 * kernel has its own vector loads): the built-in dtypes inline, any other
 * through the converters of its entry in the dtype table. */
#ifndef KVC_OPS_ELEM_H
#define KVC_OPS_ELEM_H

#include <stdint.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "kvcache/base.h"
#include "kvcache/half.h"

/* Reads element idx of a buffer as float (i8 raw, fp8 decoded exactly,
 * neither scaled; a dtype with scales in its blocks dequantised); 0 for a
 * dtype without to_f32. */
static inline float kvci_elem_load(const void *base, kvc_dtype dt, int64_t idx) {
    switch (dt) {
    case KVC_DTYPE_F32: return ((const float *)base)[idx];
    case KVC_DTYPE_F16: return kvc_f16_to_f32(((const uint16_t *)base)[idx]);
    case KVC_DTYPE_BF16: return kvc_bf16_to_f32(((const uint16_t *)base)[idx]);
    case KVC_DTYPE_I8: return (float)((const int8_t *)base)[idx];
    case KVC_DTYPE_BOOL: return (float)((const uint8_t *)base)[idx];
    case KVC_DTYPE_F8E4M3: return kvc_fp8_e4m3_to_f32(((const uint8_t *)base)[idx]);
    case KVC_DTYPE_F8E5M2: return kvc_fp8_e5m2_to_f32(((const uint8_t *)base)[idx]);
    default: {
        const kvc_dtype_traits *t = kvci_dtype_traits(dt);
        float x = 0.0f;
        if (t != NULL && t->to_f32 != NULL) t->to_f32(base, idx, 1, &x);
        return x;
    }
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

#endif
