/* The gated products of the MLPs by row kernels, one per instruction set, chosen once at run time under
 * the KVC_SIMD cap (base/isa.h): SwiGLU's out = silu(g) * u with silu(a) = a / (1 + exp(-a)), and
 * GeGLU's (Gemma 3) out = gelu_tanh(g) * u with gelu_tanh(a) = a (1 + tanh(w / 2)) / 2 = a / (1 + exp(-w)),
 * w = 2 sqrt(2 / pi) (a + 0.044715 a^3) (PyTorch's gelu, approximate="tanh", rewritten with
 * 1 + tanh(z) = 2 / (1 + exp(-2 z)), so that it shares silu's exp).
 *
 * exp is not libm's expf but kvci_silu_exp below, written once as portable C and once per instruction
 * set with the same operations in the same order (products and sums each rounded, no FMA; IEEE max /
 * min; division), so every kernel gives every element the same bits (a NaN result is NaN in all;
 * with two NaN operands which payload survives follows the compiler's operand order), and an
 * element's result depends on its inputs only. Error against a float64 reference
 * (tests/model/test_model_act.c, 2 M points each; worst measured 0.96 and 2.63 ulp): kvci_silu_exp within 2 ulp of exp
 * for x in [-86, 88.7]; silu(g) * u within 4 ulp of the exact product for g >= -88.7 wherever it is a normal float
 * (below -88.7, exp(-g) overflows and the product is +-0, as with a / (1 + expf(-a))); gelu_tanh(g) * u
 * within 4 + 4 |w| ulp (w's three roundings move exp(-w) by a few |w| ulp of it: the function's own
 * condition; measured 4 + 3.18 |w|, 207 ulp at |w| near 88) where exp(-w) does not overflow. */
#ifndef KVC_MODEL_ACT_H
#define KVC_MODEL_ACT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* No contraction of a * b + c into an FMA where the code does not ask for one (clang contracts by
 * default where the target has FMA, e.g. in the AVX kernels' scalar tails; GCC does not in C11
 * mode): the kernels' bits must not depend on the target. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* exp's argument is clamped to [LO, HI]: below LO, 1 + exp(x) is 1 in f32 anyway (from x < -17);
 * above HI (and from 88.73) exp overflows to +inf, as expf's does. A NaN becomes LO (the input a
 * itself carries it through the division). */
#define KVC_SILU_X_LO  (-86.0f)
#define KVC_SILU_X_HI  88.8f
#define KVC_SILU_LOG2E 1.44269504088896341f
#define KVC_SILU_ROUND 12582912.0f /* 1.5 * 2^23: (t + R) - R rounds t to an integer, ties to even */
/* ln 2 in two parts and the Cephes expf polynomial (P0 highest), on |r| <= ln 2 / 2 */
#define KVC_SILU_LN2_HI 0.693359375f
#define KVC_SILU_LN2_LO (-2.12194440e-4f)
#define KVC_SILU_P0     1.9875691500e-4f
#define KVC_SILU_P1     1.3981999507e-3f
#define KVC_SILU_P2     8.3334519073e-3f
#define KVC_SILU_P3     4.1665795894e-2f
#define KVC_SILU_P4     1.6666665459e-1f
#define KVC_SILU_P5     5.0000001201e-1f

/* exp(x): x clamped (x > LO ? x : LO, the IEEE max of the vector kernels, then x < HI ? x : HI),
 * n = round(x log2 e), r = x - n ln 2 in two steps (n ln2_hi exact), y = 1 + r + r^2 P(r) by
 * Horner, times 2^(n-1)
 * times 2 (n - 1 >= -125 and <= 127 keep the power a normal float; the last product overflows). */
static inline float kvci_silu_exp(float x) {
    x = x > KVC_SILU_X_LO ? x : KVC_SILU_X_LO;
    x = x < KVC_SILU_X_HI ? x : KVC_SILU_X_HI;
    const float n = (x * KVC_SILU_LOG2E + KVC_SILU_ROUND) - KVC_SILU_ROUND;
    float r = x - n * KVC_SILU_LN2_HI;
    r = r - n * KVC_SILU_LN2_LO;
    float p = KVC_SILU_P0;
    p = p * r + KVC_SILU_P1;
    p = p * r + KVC_SILU_P2;
    p = p * r + KVC_SILU_P3;
    p = p * r + KVC_SILU_P4;
    p = p * r + KVC_SILU_P5;
    const float y = (p * (r * r) + r) + 1.0f;
    const uint32_t bits = (uint32_t)((int32_t)n + 126) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return (y * s) * 2.0f;
}

/* silu(a) * u of one element, as every kernel computes it. */
static inline float kvci_silu_mul(float a, float u) { return (a / (1.0f + kvci_silu_exp(-a))) * u; }

/* GeGLU's gate constants: 0.044715 and 2 sqrt(2 / pi) as floats. */
#define KVC_GELU_C  0.044715f
#define KVC_GELU_K2 1.59576912160573071f

/* w of gelu_tanh(a) = a / (1 + exp(-w)): ((a a) a) 0.044715 + a, times 2 sqrt(2 / pi), each step rounded. */
static inline float kvci_gelu_w(float a) { return (((a * a) * a) * KVC_GELU_C + a) * KVC_GELU_K2; }

/* gelu_tanh(a) * u of one element, as every kernel computes it. */
static inline float kvci_gelu_mul(float a, float u) { return (a / (1.0f + kvci_silu_exp(-kvci_gelu_w(a)))) * u; }

/* relu2(a) = max(a, 0)^2 as transformers' ReLUSquaredActivation: one rounding of the square (NaN stays NaN). */
static inline float kvci_relu2(float a) {
    const float r = a > 0.0f || a != a ? a : 0.0f;
    return r * r;
}

/* relu(a) = max(a, 0) as PyTorch's (NaN stays NaN). */
static inline float kvci_relu(float a) { return a > 0.0f || a != a ? a : 0.0f; }

/* gelu(a) = a (1 + erf(a / sqrt 2)) / 2 without approximation (transformers' "gelu", PyTorch's exact gelu), as
 * a erfc(-a / sqrt 2) / 2 in double (no cancellation where erf(a / sqrt 2) nears -1), rounded once to float. */
static inline float kvci_gelu_erf(float a) {
    const double x = a;
    return (float)(0.5 * x * erfc(-x * 0.70710678118654752440));
}

/* transformers' XIELUActivation (Apertus) in f32 as its Python path: with ap = softplus(alpha_p) and
 * an = beta + softplus(alpha_n) (softplus(z) = log1p(exp(z)), z itself above 20, as PyTorch's),
 * xielu(a) = ap a a + beta a for a > 0, else (expm1(min(a, eps)) - a) an + beta a; each product and sum
 * rounded (no FMA), expm1 libm's. A NaN stays NaN. */
static inline float kvci_softplus(float z) { return z > 20.0f ? z : log1pf(expf(z)); }
static inline float kvci_xielu(float a, float ap, float an, float beta, float eps) {
    const float lin = beta * a;
    if (a > 0.0f) return (ap * a) * a + lin;
    const float m = a < eps || a != a ? a : eps;
    return (expm1f(m) - a) * an + lin;
}

/* out[j] = act(g[j]) * u[j] for j < n; out may be g or u. */
typedef void (*kvc_swiglu_row_fn)(const float *g, const float *u, int64_t n, float *out);

typedef struct kvc_act_kernel {
    const char *name;         /* "avx512", "avx2", "portable" */
    kvc_swiglu_row_fn swiglu; /* silu(g) * u */
    kvc_swiglu_row_fn geglu;  /* gelu_tanh(g) * u */
} kvc_act_kernel;

/* The kernels this CPU runs under the KVC_SIMD cap, best first (at most 3; portable always last). */
int kvci_act_kernels(const kvc_act_kernel **out /* [3] */);
/* The kernel kvci_glu uses: the first of kvci_act_kernels. */
const kvc_act_kernel *kvci_act_active(void);

/* The per-ISA kernels (act_x86.c); NULL when the compiler cannot build them. The CPU check is the
 * caller's. */
const kvc_act_kernel *kvci_act_avx512_kernel(void);
const kvc_act_kernel *kvci_act_avx2_kernel(void);

#endif
