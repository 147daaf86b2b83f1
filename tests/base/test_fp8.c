/* fp8 e4m3 ("fn") and e5m2 conversions: every code decoded against the
 * format definitions, every finite code re-encoded to itself, encoding
 * against a brute-force nearest search (ties to the even code), the tie,
 * subnormal, saturation, NaN and signed-zero rules. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/half.h"

typedef struct fmt {
    int mb, bias;
    bool e5;
    float (*dec)(uint8_t);
    uint8_t (*enc)(float);
    double max;
} fmt;

static const fmt FMTS[2] = {
    {3, 7, false, kvc_fp8_e4m3_to_f32, kvc_f32_to_fp8_e4m3, 448.0},
    {2, 15, true, kvc_fp8_e5m2_to_f32, kvc_f32_to_fp8_e5m2, 57344.0},
};

/* Value of a code from the definition: (-1)^s 2^(e - bias) (1 + m / 2^M), subnormals 2^(1 - bias) m / 2^M. */
static double definition(const fmt *f, uint8_t x, bool *nan, bool *inf) {
    const int e = (x & 0x7f) >> f->mb, m = x & ((1 << f->mb) - 1), top = f->e5 ? 31 : 15;
    *nan = f->e5 ? (e == top && m != 0) : (e == top && m == (1 << f->mb) - 1);
    *inf = f->e5 && e == top && m == 0;
    const double s = x & 0x80 ? -1.0 : 1.0;
    if (*inf) return s * INFINITY;
    if (e == 0) return s * ldexp((double)m / (1 << f->mb), 1 - f->bias);
    return s * ldexp(1.0 + (double)m / (1 << f->mb), e - f->bias);
}

static void test_decode_every_code(void **state) {
    (void)state;
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 256; c++) {
            bool nan, inf;
            const double want = definition(&FMTS[k], (uint8_t)c, &nan, &inf);
            const float got = FMTS[k].dec((uint8_t)c);
            if (nan) {
                assert_true(isnan(got));
                continue;
            }
            assert_true((double)got == want);
            assert_true((signbit(got) != 0) == ((c & 0x80) != 0));
            if (!inf) assert_int_equal(FMTS[k].enc(got), c); /* every finite code round-trips, -0 included */
        }
    assert_true(kvc_fp8_e4m3_to_f32(0x7e) == 448.0f && kvc_fp8_e5m2_to_f32(0x7b) == 57344.0f);
    assert_true(kvc_fp8_e4m3_to_f32(0x01) == ldexpf(1.0f, -9) && kvc_fp8_e5m2_to_f32(0x01) == ldexpf(1.0f, -16));
}

/* The nearest finite code by search; on a tie the code with an even mantissa. */
static uint8_t nearest(const fmt *f, float v) {
    int best = -1;
    double bd = INFINITY;
    for (int c = 0; c < 128; c++) {
        bool nan, inf;
        const double x = definition(f, (uint8_t)c, &nan, &inf);
        if (nan || inf) continue;
        const double d = fabs(fabs((double)v) - x);
        if (d < bd || (d == bd && (c & 1) == 0)) bd = d, best = c;
    }
    return (uint8_t)(best | (signbit(v) ? 0x80 : 0));
}

static void test_encode_nearest_even(void **state) {
    (void)state;
    uint32_t s = 12345;
    for (int k = 0; k < 2; k++) {
        const fmt *f = &FMTS[k];
        for (int i = 0; i < 20000; i++) {
            s ^= s << 13, s ^= s >> 17, s ^= s << 5;
            /* magnitudes from far below the smallest subnormal to beyond max */
            const int ex = (int)(s % 48u) - (f->e5 ? 26 : 16);
            const float v = ldexpf(1.0f + (float)(s >> 8 & 0xffff) / 65536.0f, ex) * ((s & 1) ? -1.0f : 1.0f);
            const uint8_t want =
                fabs((double)v) >= f->max ? (uint8_t)((f->e5 ? 0x7b : 0x7e) | (v < 0 ? 0x80 : 0)) : nearest(f, v);
            if (f->enc(v) != want)
                fail_msg("%s: %a encodes to 0x%02x, nearest even is 0x%02x", f->e5 ? "e5m2" : "e4m3", (double)v,
                         f->enc(v), want);
        }
        /* exact midpoints between every pair of neighbouring finite codes go to the even one */
        for (int c = 0; c + 1 < 128; c++) {
            bool n0, i0, n1, i1;
            const double a = definition(f, (uint8_t)c, &n0, &i0), b = definition(f, (uint8_t)(c + 1), &n1, &i1);
            if (n0 || n1 || i0 || i1) continue;
            const float mid = (float)((a + b) / 2);
            assert_int_equal(f->enc(mid), (c & 1) ? c + 1 : c);
            assert_int_equal(f->enc(-mid), ((c & 1) ? c + 1 : c) | 0x80);
        }
    }
}

static void test_saturation_and_specials(void **state) {
    (void)state;
    assert_int_equal(kvc_f32_to_fp8_e4m3(INFINITY), 0x7e);
    assert_int_equal(kvc_f32_to_fp8_e4m3(-INFINITY), 0xfe);
    assert_int_equal(kvc_f32_to_fp8_e4m3(464.0f), 0x7e); /* midpoint to the would-be 480: saturates */
    assert_int_equal(kvc_f32_to_fp8_e4m3(1e30f), 0x7e);
    assert_int_equal(kvc_f32_to_fp8_e5m2(INFINITY), 0x7b);
    assert_int_equal(kvc_f32_to_fp8_e5m2(-1e30f), 0xfb);
    assert_int_equal(kvc_f32_to_fp8_e4m3(NAN) & 0x7f, 0x7f);
    assert_true(isnan(kvc_fp8_e5m2_to_f32(kvc_f32_to_fp8_e5m2(NAN))));
    assert_int_equal(kvc_f32_to_fp8_e4m3(-0.0f), 0x80);
    assert_int_equal(kvc_f32_to_fp8_e4m3(1.0625f), 0x38);         /* tie 1 | 1.125 -> 1 (even) */
    assert_int_equal(kvc_f32_to_fp8_e4m3(1.1875f), 0x3a);         /* tie 1.125 | 1.25 -> 1.25 (even) */
    assert_int_equal(kvc_f32_to_fp8_e4m3(ldexpf(1, -10)), 0x00);  /* half the smallest subnormal -> 0 */
    assert_int_equal(kvc_f32_to_fp8_e4m3(ldexpf(3, -10)), 0x02);  /* 1.5 subnormal steps -> 2 (even) */
    assert_int_equal(kvc_f32_to_fp8_e4m3(ldexpf(15, -10)), 0x08); /* 7.5 steps -> the smallest normal */
    assert_int_equal(kvc_f32_to_fp8_e4m3(1e-30f), 0x00);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_every_code),
        cmocka_unit_test(test_encode_nearest_even),
        cmocka_unit_test(test_saturation_and_specials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
