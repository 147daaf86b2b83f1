/* The MLPs' gated products (act.h): the portable kernels, the choice of kernel, and the row loop of the
 * MLP, which shares rows among the OpenMP threads. Each element is computed alone, so neither the
 * kernel nor the threads change a bit. */
#include "model/act.h"

#include "base/isa.h"
#include "model/model_internal.h"

static void swiglu_portable(const float *g, const float *u, int64_t n, float *out) {
    for (int64_t j = 0; j < n; j++) out[j] = kvci_silu_mul(g[j], u[j]);
}

static void geglu_portable(const float *g, const float *u, int64_t n, float *out) {
    for (int64_t j = 0; j < n; j++) out[j] = kvci_gelu_mul(g[j], u[j]);
}

static const kvc_act_kernel portable = {"portable", swiglu_portable, geglu_portable};

int kvci_act_kernels(const kvc_act_kernel **out) {
    int n = 0;
    const kvc_act_kernel *k512 = kvci_act_avx512_kernel(), *k2 = kvci_act_avx2_kernel();
    if (k512 && kvci_isa_runs(KVC_ISA_AVX512)) out[n++] = k512;
    if (k2 && kvci_isa_runs(KVC_ISA_AVX2)) out[n++] = k2;
    out[n++] = &portable;
    return n;
}

static const kvc_act_kernel *_Atomic active;

const kvc_act_kernel *kvci_act_active(void) {
    const kvc_act_kernel *a = active;
    if (!a) {
        const kvc_act_kernel *all[3];
        kvci_act_kernels(all);
        active = a = all[0];
    }
    return a;
}

/* Elements from which a prefill's SwiGLU takes the OpenMP threads (512 tokens of intermediate 3,072
 * are 1.5 M); every decode step of up to 16 rows of a 0.6B-8B model stays below it, on the calling
 * thread. */
#define SWIGLU_PARALLEL_ELEMS (1 << 16)

void kvci_act_rows(kvc_mlp_act act, float *x, int64_t T, int64_t n) {
#pragma omp parallel for schedule(static) if (T > 16 && T * n >= SWIGLU_PARALLEL_ELEMS)
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < n; j++) {
            float *e = x + t * n + j;
            *e = act == KVC_MLP_RELU2       ? kvci_relu2(*e)
                 : act == KVC_MLP_GELU_TANH ? kvci_gelu_mul(*e, 1.0f)
                 : act == KVC_MLP_GELU      ? kvci_gelu_erf(*e)
                 : act == KVC_MLP_RELU      ? kvci_relu(*e)
                                            : kvci_silu_mul(*e, 1.0f);
        }
}

void kvci_xielu_rows(const float *const p[4], float *x, int64_t T, int64_t n) {
    const float ap = kvci_softplus(p[0][0]), an = p[2][0] + kvci_softplus(p[1][0]), beta = p[2][0], eps = p[3][0];
#pragma omp parallel for schedule(static) if (T > 16 && T * n >= SWIGLU_PARALLEL_ELEMS)
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < n; j++) x[t * n + j] = kvci_xielu(x[t * n + j], ap, an, beta, eps);
}

void kvci_glu(kvc_mlp_act act, const float *g, const float *u, int64_t T, int64_t n, int64_t ld, float *out,
              int64_t ld_out) {
    if (act == KVC_MLP_GELU || act == KVC_MLP_RELU2) { /* ModernBERT's GeGLU by erf, BitNet's relu2: act(g) * u */
#pragma omp parallel for schedule(static) if (T > 16 && T * n >= SWIGLU_PARALLEL_ELEMS)
        for (int64_t t = 0; t < T; t++)
            for (int64_t j = 0; j < n; j++) {
                const float x = g[t * ld + j];
                out[t * ld_out + j] = (act == KVC_MLP_GELU ? kvci_gelu_erf(x) : kvci_relu2(x)) * u[t * ld + j];
            }
        return;
    }
    const kvc_act_kernel *k = kvci_act_active();
    const kvc_swiglu_row_fn row = act == KVC_MLP_GELU_TANH ? k->geglu : k->swiglu;
#pragma omp parallel for schedule(static) if (T > 16 && T * n >= SWIGLU_PARALLEL_ELEMS)
    for (int64_t t = 0; t < T; t++) row(g + t * ld, u + t * ld, n, out + t * ld_out);
}
