/* The gated products on AVX2 (8 lanes) and AVX-512F (16 lanes): kvci_silu_exp, kvci_silu_mul and
 * kvci_gelu_mul of act.h operation for operation (vmaxps / vminps are the C x > lo ? x : lo and
 * x < hi ? x : hi), the row's tail through the scalar form. Compiled with target attributes; used only
 * when the CPU reports the instruction set. */
#include "model/act.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TGT512 __attribute__((target("avx512f")))
#define TGT2   __attribute__((target("avx2")))

TGT512 static inline __m512 neg512(__m512 a) {
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u)));
}
TGT2 static inline __m256 neg256(__m256 a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }

/* e = kvci_silu_exp(x) lane by lane (x clamped in place) */
#define EXP_BODY(V, P, PI)                                                                                             \
    x = P##_max_ps(x, P##_set1_ps(KVC_SILU_X_LO));                                                                     \
    x = P##_min_ps(x, P##_set1_ps(KVC_SILU_X_HI));                                                                     \
    const V R = P##_set1_ps(KVC_SILU_ROUND);                                                                           \
    const V k = P##_sub_ps(P##_add_ps(P##_mul_ps(x, P##_set1_ps(KVC_SILU_LOG2E)), R), R);                              \
    V r = P##_sub_ps(x, P##_mul_ps(k, P##_set1_ps(KVC_SILU_LN2_HI)));                                                  \
    r = P##_sub_ps(r, P##_mul_ps(k, P##_set1_ps(KVC_SILU_LN2_LO)));                                                    \
    V p = P##_set1_ps(KVC_SILU_P0);                                                                                    \
    p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(KVC_SILU_P1));                                                        \
    p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(KVC_SILU_P2));                                                        \
    p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(KVC_SILU_P3));                                                        \
    p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(KVC_SILU_P4));                                                        \
    p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(KVC_SILU_P5));                                                        \
    const V y = P##_add_ps(P##_add_ps(P##_mul_ps(p, P##_mul_ps(r, r)), r), P##_set1_ps(1.0f));                         \
    const V s = P##_castsi##PI##_ps(P##_slli_epi32(P##_add_epi32(P##_cvtps_epi32(k), P##_set1_epi32(126)), 23));       \
    const V e = P##_mul_ps(P##_mul_ps(y, s), P##_set1_ps(2.0f))

/* silu(a) * b: exp(-a) */
#define SILU_BODY(V, P, PI)                                                                                            \
    const V a = P##_loadu_ps(g + j), b = P##_loadu_ps(u + j);                                                          \
    V x = neg##PI(a);                                                                                                  \
    EXP_BODY(V, P, PI);                                                                                                \
    P##_storeu_ps(out + j, P##_mul_ps(P##_div_ps(a, P##_add_ps(P##_set1_ps(1.0f), e)), b))

/* gelu_tanh(a) * b: exp(-w), w as kvci_gelu_w */
#define GELU_BODY(V, P, PI)                                                                                            \
    const V a = P##_loadu_ps(g + j), b = P##_loadu_ps(u + j);                                                          \
    V w = P##_mul_ps(P##_mul_ps(a, a), a);                                                                             \
    w = P##_add_ps(P##_mul_ps(w, P##_set1_ps(KVC_GELU_C)), a);                                                         \
    V x = neg##PI(P##_mul_ps(w, P##_set1_ps(KVC_GELU_K2)));                                                            \
    EXP_BODY(V, P, PI);                                                                                                \
    P##_storeu_ps(out + j, P##_mul_ps(P##_div_ps(a, P##_add_ps(P##_set1_ps(1.0f), e)), b))

/* A row kernel: BODY over whole vectors of LANES, the tail through the scalar form. */
#define ROW_KERNEL(NAME, TGT, BODY, V, P, PI, LANES, SCALAR)                                                           \
    TGT static void NAME(const float *g, const float *u, int64_t n, float *out) {                                      \
        int64_t j = 0;                                                                                                 \
        for (; j + (LANES) <= n; j += (LANES)) {                                                                       \
            BODY(V, P, PI);                                                                                            \
        }                                                                                                              \
        for (; j < n; j++) out[j] = SCALAR(g[j], u[j]);                                                                \
    }

ROW_KERNEL(swiglu_avx512, TGT512, SILU_BODY, __m512, _mm512, 512, 16, kvci_silu_mul)
ROW_KERNEL(geglu_avx512, TGT512, GELU_BODY, __m512, _mm512, 512, 16, kvci_gelu_mul)
ROW_KERNEL(swiglu_avx2, TGT2, SILU_BODY, __m256, _mm256, 256, 8, kvci_silu_mul)
ROW_KERNEL(geglu_avx2, TGT2, GELU_BODY, __m256, _mm256, 256, 8, kvci_gelu_mul)

static const kvc_act_kernel k512 = {"avx512", swiglu_avx512, geglu_avx512};
static const kvc_act_kernel k2 = {"avx2", swiglu_avx2, geglu_avx2};

const kvc_act_kernel *kvci_act_avx512_kernel(void) { return &k512; }
const kvc_act_kernel *kvci_act_avx2_kernel(void) { return &k2; }

#else
const kvc_act_kernel *kvci_act_avx512_kernel(void) { return NULL; }
const kvc_act_kernel *kvci_act_avx2_kernel(void) { return NULL; }
#endif
