/* Dense kernels of the decoder: SwiGLU (Linear: wmat.c). Each works row by row, so a token's result never depends
 * on the other tokens of the step. */
#include <math.h>

#include "model/model_internal.h"

void kvci_swiglu(const float *g, const float *u, int64_t T, int64_t n, int64_t ld, float *out, int64_t ld_out) {
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < n; j++) {
            const float a = g[t * ld + j];
            out[t * ld_out + j] = (a / (1.0f + expf(-a))) * u[t * ld + j];
        }
}
