/* The dtype table (docs/kv-dtypes.md, "The dtype table"): one entry per
 * element type holds every fact the library asks of it (its storage in
 * blocks, where its dequantisation scales live, its converters, its poison
 * value, the CPU kernel's vector path), so a question about a dtype has one
 * answer. The built-in entries sit in dtype.c; another one (a test's)
 * joins with kvci_dtype_register and is then served by the generic paths:
 * the converters below instead of a vector kernel. */
#ifndef KVC_BASE_DTYPE_TRAITS_H
#define KVC_BASE_DTYPE_TRAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvcache/base.h"

/* Where the dequantisation scales of a dtype's codes live. */
typedef enum kvc_scale_home {
    KVC_SCALES_NONE = 0,    /* the stored values are the values */
    KVC_SCALES_IN_BLOCK,    /* each block carries its own scale: a row of whole blocks decodes alone */
    KVC_SCALES_PER_TOKEN,   /* beside the data, one f32 per cache slot: the runtime's caches keep them in the
                             * entries after k and v (k_scale, v_scale; latent: one scale), the operator takes
                             * them as key/value_scale */
    KVC_SCALES_PER_CHANNEL, /* beside the data, one f32 per channel (operator quant mode 0) */
    KVC_SCALES_PER_TENSOR,  /* beside the data, one f32 for the whole tensor */
} kvc_scale_home;

/* The CPU attention kernel's vector path of a K/V dtype: the index of its
 * converters in every SIMD table (src/ops/cpu/simd.h), or GENERIC: rows are
 * decoded with the entry's to_f32 into the f32 tiles the vector math reads. */
typedef enum kvc_simd_slot {
    KVC_SIMD_F32 = 0,
    KVC_SIMD_F16,
    KVC_SIMD_BF16,
    KVC_SIMD_I8, /* the raw integer */
    KVC_SIMD_E4M3,
    KVC_SIMD_E5M2,
    KVC_SIMD_GENERIC,
    KVC_SIMD_SLOTS
} kvc_simd_slot;

#define KVC_DTYPE_MAX_BLOCK_BYTES 256

typedef struct kvc_dtype_traits {
    const char *name;      /* kvc_dtype_name, kvc_dtype_parse */
    int32_t bits;          /* bits of one element's code (a block's scale not counted) */
    int32_t block;         /* elements per block; 1: plain elements */
    int32_t block_bytes;   /* bytes per block, its scale included (<= KVC_DTYPE_MAX_BLOCK_BYTES) */
    kvc_scale_home scales; /* where a quantised dtype's scales live; NONE otherwise */
    bool scale_required;   /* scales beside the data: a K/V tensor of it needs them (int8); else optional (fp8) */
    bool offsets;          /* scales beside the data: dequantisation offsets allowed too (int8) */
    bool kv;               /* a KV cache dtype: the runtime's caches and the operator's K/V */
    bool compute;          /* a float dtype of queries, outputs, sinks, key_rope and updates */
    float qmax;            /* quantised: the largest code magnitude (scale = amax / qmax); 0 otherwise */
    kvc_simd_slot simd;    /* the CPU kernel's path (registered dtypes: KVC_SIMD_GENERIC) */
    const uint8_t *poison; /* block_bytes bytes: one block no write produces (NaN, or a code quantisation never
                            * writes), for KVC_POISON_BLOCKS */
    /* dst[i] = element i0 + i of the buffer at base, i < n: the value, or for
     * scales beside the data the unscaled code (int8 the integer, fp8 its
     * exact value); NULL for i32 / i64. */
    void (*to_f32)(const void *base, int64_t i0, int64_t n, float *dst);
    /* Stores src[0 .. n) as elements [i0, i0 + n) of the buffer at base
     * (i0, n multiples of block; scales in the block computed here, rounding
     * to nearest even); NULL when quantising needs a scale from outside
     * (int8: kvc_write_slots_quant) or the dtype holds no floats. */
    void (*from_f32)(const float *src, int64_t n, void *base, int64_t i0);
} kvc_dtype_traits;

/* The entry of dt; NULL for a dtype neither built in nor registered. */
const kvc_dtype_traits *kvci_dtype_traits(kvc_dtype dt);
/* Adds a dtype (a test's): its id (>= KVC_DTYPE_COUNT) is returned in *out.
 * Refused, naming the field: a name taken already; block < 1; block_bytes
 * outside [1, KVC_DTYPE_MAX_BLOCK_BYTES]; bits < 1 or block codes of bits
 * more than block_bytes hold; scales beside the data (with scale_required,
 * offsets: the built-in writers' only); compute; a vector slot other than
 * KVC_SIMD_GENERIC; no poison or to_f32; a K/V dtype without from_f32; a
 * full table. Not thread-safe: register before any use. */
kvc_status kvci_dtype_register(const kvc_dtype_traits *t, kvc_dtype *out);

/* Bytes of n elements of dt into *out; false (nothing written) for an
 * unknown dtype, n < 0 or not a multiple of the block, or int64 overflow. */
bool kvci_dtype_bytes(kvc_dtype dt, int64_t n, int64_t *out);
/* The entry's answers, false for an unknown dtype. */
bool kvci_dtype_is_kv(kvc_dtype dt);
bool kvci_dtype_is_compute(kvc_dtype dt);
/* Quantised with scales beside the data (int8, fp8): the operator's key/value_scale, the runtime's scale entries. */
bool kvci_dtype_scales_beside(kvc_dtype dt);
/* Stored in blocks of more than one element. */
bool kvci_dtype_is_blocked(kvc_dtype dt);

#endif
