/* XGLM's and CTRL's sinusoidal positions (model_internal.h): the frequencies once at load, each token's row when it
 * is embedded (a table of max_position_embeddings rows, which a config sets up to 2^31 - 1, is never built). */
#include <math.h>

#include "model/model_internal.h"

void kvci_model_sinusoid_freqs(int64_t H, float *w) {
    const int64_t half = H / 2;
    const float s = (float)(-log(10000.0) / (double)(half - 1)); /* the Python float, as an f32 operand */
    for (int64_t i = 0; i < half; i++) w[i] = (float)exp((double)((float)i * s));
}

void kvci_model_sinusoid_add(const float *w, int64_t H, int64_t p, bool zero, float *row) {
    const int64_t half = H / 2;
    for (int64_t i = 0; i < half; i++) {
        const float a = (float)p * w[i]; /* the table's [rows, half] f32 product */
        row[i] += zero ? 0.0f : (float)sin((double)a);
        row[half + i] += zero ? 0.0f : (float)cos((double)a);
    }
    if (H % 2 == 1) row[H - 1] += 0.0f; /* an odd H's last column: 0 */
}

void kvci_model_sinusoid_freqs_ctrl(int64_t H, float *w) {
    for (int64_t j = 0; j < (H + 1) / 2; j++) {
        const float e = (float)(2 * j) / (float)H; /* (2 (i // 2)) / d_model_size, an f32 tensor over an int */
        w[j] = 1.0f / (float)pow(10000.0, (double)e);
    }
}

void kvci_model_sinusoid_add_ctrl(const float *w, int64_t H, int64_t p, float *row) {
    const int64_t n_sin = (H + 1) / 2; /* the even columns' sines, then the odd ones' cosines */
    for (int64_t j = 0; j < n_sin; j++) {
        const float a = (float)p * w[j]; /* the table's f32 product */
        row[j] += (float)sin((double)a);
        if (n_sin + j < H) row[n_sin + j] += (float)cos((double)a);
    }
}
