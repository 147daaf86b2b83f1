/* fp8 e4m3 ("fn") and e5m2 <-> f32 scalar conversions. Decoding places the
 * fp8 fields into f32 bits (subnormals as an exact integer times a power
 * of two); encoding splits |x| into an exponent and a mantissa scaled to
 * an integer, rounds that integer to nearest even (rintf in the default
 * rounding mode) and saturates, so every step is exact but the one
 * rounding. */
#include <math.h>
#include <string.h>

#include "kvcache/half.h"

/* An fp8 format: M mantissa bits, exponent bias, largest finite code
 * (positive), canonical NaN code, and whether the all-ones exponent is
 * inf/NaN (e5m2) or only its all-ones mantissa is NaN (e4m3 fn). */
typedef struct fp8_format {
    int mbits, bias;
    uint8_t max_code, nan_code;
    int ieee_top;
} fp8_format;

static const fp8_format E4M3 = {3, 7, 0x7e, 0x7f, 0};
static const fp8_format E5M2 = {2, 15, 0x7b, 0x7f, 1};

static float with_sign(float a, uint8_t x) { return (x & 0x80) ? -a : a; }

static float decode(const fp8_format *f, uint8_t x) {
    const int ebits = 7 - f->mbits, e = (x >> f->mbits) & ((1 << ebits) - 1), m = x & ((1 << f->mbits) - 1);
    const int top = (1 << ebits) - 1;
    if (f->ieee_top && e == top) return with_sign(m ? NAN : INFINITY, x);
    if (!f->ieee_top && e == top && m == (1 << f->mbits) - 1) return with_sign(NAN, x);
    if (e == 0) return with_sign(ldexpf((float)m, 1 - f->bias - f->mbits), x); /* subnormal m * 2^(1-bias-M) */
    const uint32_t bits = ((uint32_t)(e - f->bias + 127) << 23) | ((uint32_t)m << (23 - f->mbits));
    float a;
    memcpy(&a, &bits, sizeof a);
    return with_sign(a, x);
}

static uint8_t encode(const fp8_format *f, float v) {
    const uint8_t sign = signbit(v) ? 0x80 : 0;
    if (isnan(v)) return sign | f->nan_code;
    const float a = fabsf(v), max = decode(f, f->max_code);
    if (a >= max) return sign | f->max_code; /* saturate, +-inf included */
    const int min_exp = 1 - f->bias;         /* exponent of the smallest normal */
    int ex;
    frexpf(a, &ex); /* a = fr * 2^ex, fr in [0.5, 1): unbiased exponent ex - 1 */
    int E = ex - 1;
    if (a == 0.0f || E < min_exp) E = min_exp; /* subnormal range: the step of the smallest normal binade */
    /* q = a / 2^(E - M): the significand as an integer plus a fraction; exact (a power-of-two scaling) */
    const float q = rintf(ldexpf(a, f->mbits - E));
    const uint32_t r = (uint32_t)q; /* in [0, 2^(M+1)] */
    /* subnormal codes are r itself (r = 2^M lands on the smallest normal);
     * normal codes put E + bias above the mantissa, and r = 2^(M+1) carries into the exponent */
    uint32_t code =
        E == min_exp && r < (1u << f->mbits) ? r : ((uint32_t)(E + f->bias) << f->mbits) + (r - (1u << f->mbits));
    if (code > f->max_code) code = f->max_code;
    return (uint8_t)(sign | code);
}

float kvc_fp8_e4m3_to_f32(uint8_t x) { return decode(&E4M3, x); }
uint8_t kvc_f32_to_fp8_e4m3(float f) { return encode(&E4M3, f); }
float kvc_fp8_e5m2_to_f32(uint8_t x) { return decode(&E5M2, x); }
uint8_t kvc_f32_to_fp8_e5m2(float f) { return encode(&E5M2, f); }
