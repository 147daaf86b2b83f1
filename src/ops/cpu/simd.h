/* SIMD primitives of the CPU attention kernel, one table per instruction
 * set, chosen once at run time. Each converts K/V elements (f32, f16, bf16,
 * int8) to f32 in registers. A K/V row is addressed by its channel-0
 * pointer; with NZ storage (c0 > 0) channel d sits at element
 * (d / c0) * nzs + d % c0, else at d. */
#ifndef KVC_OPS_CPU_SIMD_H
#define KVC_OPS_CPU_SIMD_H

#include <stdint.h>

#include "kvcache/base.h"

/* out[r] = sum_d q[r * qstride + d] * k[d] for r < nr (nr <= 4). */
typedef void (*kvc_dot_fn)(const void *k, int64_t nzs, int64_t c0, const float *q, int64_t qstride, int nr,
                           int64_t dim, float *out);
/* acc[r * astride + d] += w[r] * v[d] for r < nr (nr <= 4), d < dim. */
typedef void (*kvc_axpy_fn)(const void *v, int64_t nzs, int64_t c0, const float *w, float *acc, int64_t astride,
                            int nr, int64_t dim);

typedef struct kvc_simd_table {
    const char *name;
    kvc_dot_fn dot[4];   /* by kvc_simd_slot(dtype) */
    kvc_axpy_fn axpy[4];
} kvc_simd_table;

/* 0 f32, 1 f16, 2 bf16, 3 int8 (raw integer value). */
static inline int kvc_simd_slot(kvc_dtype dt)
{
    return dt == KVC_DTYPE_F16 ? 1 : dt == KVC_DTYPE_BF16 ? 2 : dt == KVC_DTYPE_I8 ? 3 : 0;
}

extern const kvc_simd_table kvc_simd_portable;
/* NULL when the compiler cannot build the AVX2 path. */
const kvc_simd_table *kvc_simd_avx2_table(void);
/* The best table this CPU runs (AVX2+FMA+F16C, else portable), or the
 * override. */
const kvc_simd_table *kvc_simd_select(void);
/* Tests: force a table (NULL: back to detection). Not for concurrent use. */
void kvc_simd_override(const kvc_simd_table *t);

#endif
