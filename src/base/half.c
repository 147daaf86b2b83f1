/* f16 / bf16 <-> f32 conversions (round to nearest even): the scalar API and the row converters of the
 * model's cache writes, which apply the same per-element rounding (one definition each). */
#include "kvcache/half.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "base/half_rows.h"
#include "base/isa.h"

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float kvc_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

/* The bf16 rounding of f32 bits u, without branches (the row converters vectorise it): a NaN keeps
 * its sign and top payload bits and is made quiet, anything else rounds to nearest even. */
static inline uint16_t bf16_of_bits(uint32_t u) {
    const uint16_t nan = (uint16_t)((u >> 16) | 0x0040u);
    const uint16_t r = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return (u & 0x7fffffffu) > 0x7f800000u ? nan : r;
}

uint16_t kvc_f32_to_bf16(float f) { return bf16_of_bits(f32_bits(f)); }

static inline __attribute__((always_inline)) void bf16_row(const float *x, int64_t n, uint16_t *y) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        y[i] = bf16_of_bits(u);
    }
}

static void bf16_row_base(const float *x, int64_t n, uint16_t *y) { bf16_row(x, n, y); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The same loop compiled for 16-lane integer vectors: the same bits. */
__attribute__((target("avx512f,avx512bw"))) static void bf16_row_avx512(const float *x, int64_t n, uint16_t *y) {
    bf16_row(x, n, y);
}
#endif

void kvci_f32_to_bf16_n(const float *x, int64_t n, uint16_t *y) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (kvci_isa_runs(KVC_ISA_AVX512)) {
        bf16_row_avx512(x, n, y);
        return;
    }
#endif
    bf16_row_base(x, n, y);
}

float kvc_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) /* inf / NaN */
        return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t kvc_f32_to_f16(float f) {
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* rounds to >= 65536 (or is inf): infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {
        /* result is subnormal or zero: value / 2^-24 rounded to even */
        if (a < 0x33000000u) /* < 2^-25: rounds to zero */
            return sign;
        uint32_t exp = a >> 23;
        uint32_t man = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - exp; /* 14..24 */
        uint32_t q = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    /* normal: rebias exponent and round the mantissa to 10 bits */
    uint32_t r = a - 0x38000000u; /* exponent 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* vcvtps2ph rounding to nearest even gives kvc_f32_to_f16's bits for every one of the 2^32 inputs
 * (checked exhaustively once; the tests compare edge cases and random patterns). */
__attribute__((target("avx2,f16c"))) static void f16_row_f16c(const float *x, int64_t n, uint16_t *y) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) y[i] = kvc_f32_to_f16(x[i]);
}
#endif

void kvci_f32_to_f16_n(const float *x, int64_t n, uint16_t *y) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (kvci_isa_runs(KVC_ISA_AVX2)) { /* the tier includes F16C */
        f16_row_f16c(x, n, y);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = kvc_f32_to_f16(x[i]);
}
