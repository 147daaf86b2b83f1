/* XGLM's sinusoidal position table (model_internal.h), computed once at load. */
#include <math.h>
#include <string.h>

#include "model/model_internal.h"

void kvci_model_sinusoid_table(int64_t rows, int64_t H, int64_t zero_row, float *t) {
    const int64_t half = H / 2;
    const float s = (float)(-log(10000.0) / (double)(half - 1)); /* the Python float, as an f32 operand */
    for (int64_t p = 0; p < rows; p++) {
        float *row = t + p * H;
        for (int64_t i = 0; i < half; i++) {
            const float w = (float)exp((double)((float)i * s));
            const float a = (float)p * w; /* [rows, half] f32 product */
            row[i] = (float)sin((double)a);
            row[half + i] = (float)cos((double)a);
        }
        if (H % 2 == 1) row[H - 1] = 0.0f;
    }
    if (zero_row >= 0 && zero_row < rows) memset(t + zero_row * H, 0, (size_t)H * sizeof(float));
}
