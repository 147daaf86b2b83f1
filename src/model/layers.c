/* Dense kernels of the decoder: SwiGLU (Linear: wmat.c). Each works row by row, so a token's result never depends
 * on the other tokens of the step. */
#include <math.h>

#include "model/model_internal.h"

/* Elements from which a prefill's SwiGLU takes the OpenMP threads (an expf each: 1.5 M at 512 tokens of
 * intermediate 3,072 were ~5 % of the prefill's wall time on one thread while the other waited); every
 * decode step of up to 16 rows of a 0.6B-8B model stays below it, on the calling thread. */
#define SWIGLU_PARALLEL_ELEMS (1 << 16)

void kvci_swiglu(const float *g, const float *u, int64_t T, int64_t n, int64_t ld, float *out, int64_t ld_out) {
#pragma omp parallel for schedule(static) if (T > 16 && T * n >= SWIGLU_PARALLEL_ELEMS)
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < n; j++) {
            const float a = g[t * ld + j];
            out[t * ld_out + j] = (a / (1.0f + expf(-a))) * u[t * ld + j];
        }
}
