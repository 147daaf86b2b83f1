/* The per-ISA kernels of the quantized-weight GEMM (src/model/gemm_quant.h):
 * every kernel this CPU can run, both formats, bitwise equal (memcmp) to a scalar
 * reference written here from the header's formulas: weights packed and activations
 * quantized here too, the reduction order of the header, C's padding untouched.
 * Each block function is called over the whole product and over split row and
 * group ranges, so tiling cannot change a bit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/half.h"
#include "model/gemm_quant.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static void *zalloc(size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    assert_non_null(p);
    return p;
}

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* The header's quantized weights, logically: q[Np][Kp] (Q4_0: in [-8, 7]) and d[Np][KB] (f16 bits),
 * and packed: W (integer part) and dw. */
typedef struct weights {
    int8_t *q;
    uint16_t *d;
    uint8_t *W;
    uint16_t *dw;
} weights;

/* Q8_0: d = f16(max |w| / 127), q = clamp(rne(w / f32(d)), -127, 127); Q4_0: m the w of largest |w|
 * (first on ties), d = f16(m / -8), q = clamp(rne(w / f32(d)), -8, 7); q = 0 when d = 0. */
static void quantize_block(kvc_wq_format f, const float *w, int8_t *q, uint16_t *d) {
    float m = 0;
    for (int k = 0; k < 32; k++)
        if (fabsf(w[k]) > fabsf(m)) m = w[k];
    *d = kvc_f32_to_f16(f == KVC_WQ_Q8_0 ? fabsf(m) / 127 : m / -8);
    const float df = kvc_f16_to_f32(*d);
    const float lo = f == KVC_WQ_Q8_0 ? -127 : -8, hi = f == KVC_WQ_Q8_0 ? 127 : 7;
    for (int k = 0; k < 32; k++) q[k] = df == 0 ? 0 : (int8_t)fminf(hi, fmaxf(lo, rintf(w[k] / df)));
}

/* W [N][K] (rows K apart) quantized and packed per the header (padding rows and k are 0). */
static weights pack(kvc_wq_format f, int64_t N, int64_t K, const float *src) {
    const int64_t Kp = round_up(K, 32), KB = Kp / 32, G = (N + 15) / 16, Np = G * 16;
    weights w = {zalloc((size_t)(Np * Kp)), zalloc((size_t)(Np * KB) * 2), zalloc((size_t)(G * KB * 512)),
                 zalloc((size_t)(G * KB * 16) * 2)};
    for (int64_t n = 0; n < N; n++)
        for (int64_t b = 0; b < KB; b++) {
            float blk[32] = {0};
            for (int64_t k = 0; k < 32 && 32 * b + k < K; k++) blk[k] = src[n * K + 32 * b + k];
            quantize_block(f, blk, w.q + n * Kp + 32 * b, w.d + n * KB + b);
        }
    for (int64_t n = 0; n < Np; n++)
        for (int64_t b = 0; b < KB; b++) {
            const int64_t g = n / 16, c = n % 16;
            w.dw[(g * KB + b) * 16 + c] = w.d[n * KB + b];
            for (int64_t kk = 0; kk < 32; kk++) {
                const int8_t q = w.q[n * Kp + 32 * b + kk];
                if (f == KVC_WQ_Q8_0) {
                    w.W[(g * KB + b) * 512 + (kk / 4) * 64 + c * 4 + kk % 4] = (uint8_t)q;
                } else {
                    uint8_t *byte = w.W + (g * KB + b) * 256 + (kk % 16 / 4) * 64 + c * 4 + kk % 4;
                    *byte |= (uint8_t)((q + 8) << (kk < 16 ? 0 : 4));
                }
            }
        }
    return w;
}

static void free_weights(weights w) { free(w.q), free(w.d), free(w.W), free(w.dw); }

/* The header's activation quantization of A [M][K] into c's qa/da/asum ([Mp] rows, those >= M zero). */
static void quantize_activations(kvc_wq_call *c, const float *A) {
    int8_t *qa = zalloc((size_t)(c->Mp * c->Kp));
    float *da = zalloc((size_t)(c->Mp * c->KB) * sizeof(float));
    int32_t *asum = zalloc((size_t)(c->Mp * c->KB) * sizeof(int32_t));
    for (int64_t i = 0; i < c->M; i++)
        for (int64_t b = 0; b < c->KB; b++) {
            float amax = 0;
            for (int64_t k = 32 * b; k < 32 * b + 32 && k < c->K; k++) amax = fmaxf(amax, fabsf(A[i * c->K + k]));
            bool finite = true;
            for (int64_t k = 32 * b; k < 32 * b + 32 && k < c->K; k++) finite = finite && isfinite(A[i * c->K + k]);
            const float d = finite ? amax / 127 : NAN, ia = d != 0 ? 1 / d : 0;
            da[i * c->KB + b] = d;
            for (int64_t k = 32 * b; k < 32 * b + 32 && k < c->K && finite; k++) {
                const int8_t q = (int8_t)fminf(127, fmaxf(-127, rintf(A[i * c->K + k] * ia)));
                qa[i * c->Kp + k] = q;
                asum[i * c->KB + b] += q;
            }
        }
    c->qa = qa, c->da = da, c->asum = asum;
}

/* C[i][n] per the header's one reduction order, from the logical q and d. */
static void reference(const kvc_wq_call *c, const weights *w, float *C) {
    for (int64_t i = 0; i < c->M; i++)
        for (int64_t n = 0; n < c->N; n++) {
            float acc = 0;
            for (int64_t b = 0; b < c->KB; b++) {
                int32_t isum = 0;
                for (int64_t k = 32 * b; k < 32 * b + 32; k++) isum += w->q[n * c->Kp + k] * c->qa[i * c->Kp + k];
                const float s = kvc_f16_to_f32(w->d[n * c->KB + b]) * c->da[i * c->KB + b];
                acc = fmaf((float)isum, s, acc);
            }
            C[i * c->ldc + n] = c->bias ? acc + c->bias[n] : acc;
        }
}

/* The kernels of this CPU, with their names; prints which ran. */
static int isa_kernels(const kvc_wq_kernel **out) {
    int n = 0;
    const kvc_wq_kernel *all[3] = {kvci_wq_amx_kernel(), kvci_wq_vnni512_kernel(), kvci_wq_avx2_kernel()};
    for (int k = 0; k < 3; k++)
        if (all[k]) out[n++] = all[k];
    return n;
}

#define SENTINEL 0x5A
/* The block function over [m0s[j], m0s[j + 1]) x [gs[l], gs[l + 1]) for every cut, C first filled with SENTINEL. */
static void run_blocks(const kvc_wq_kernel *kern, const kvc_wq_call *c, const int64_t *ms, int nm, const int64_t *gs,
                       int ng, size_t cbytes) {
    memset(c->C, SENTINEL, cbytes);
    for (int j = 0; j + 1 < nm; j++)
        for (int l = 0; l + 1 < ng; l++) kern->block[c->format](c, ms[j], ms[j + 1], gs[l], gs[l + 1]);
}

/* One shape: every kernel, whole and split, bitwise equal to the reference (C's padding untouched). */
static void check_shape(kvc_wq_format f, int64_t M, int64_t N, int64_t K, bool with_bias, bool nan_row, bool extreme) {
    const kvc_wq_kernel *kernels[3];
    const int nk = isa_kernels(kernels);
    float *A = zalloc((size_t)(M * K) * sizeof(float)), *Wf = zalloc((size_t)(N * K) * sizeof(float));
    float *bias = zalloc((size_t)N * sizeof(float));
    for (int64_t x = 0; x < M * K; x++) A[x] = frand() * 3;
    for (int64_t x = 0; x < N * K; x++) Wf[x] = frand() * 0.1f;
    for (int64_t n = 0; n < N; n++) bias[n] = frand();
    if (extreme) { /* largest |isum|: row 0 of A and of W constant per block (all q at +-127, Q4_0 u at 0 or 15) */
        for (int64_t k = 0; k < K; k++) A[k] = (k / 32) % 2 ? -2.f : 2.f;
        for (int64_t k = 0; k < K; k++) Wf[k] = k % 32 == 0 ? 0.5f : (k / 32) % 2 ? -0.4375f : 0.5f;
    }
    if (nan_row && K > 0) A[(M - 1) * K + K / 2] = NAN;
    const int64_t Kp = round_up(K, 32), ldc = N + 3;
    kvc_wq_call c = {.format = f, .M = M, .N = N, .K = K, .Kp = Kp, .KB = Kp / 32, .Mp = round_up(M, 16)};
    const weights w = pack(f, N, K, Wf);
    quantize_activations(&c, A);
    c.W = w.W, c.dw = w.dw, c.bias = with_bias ? bias : NULL, c.ldc = ldc;
    const size_t cbytes = (size_t)(M * ldc) * sizeof(float);
    float *ref = malloc(cbytes), *C = malloc(cbytes);
    assert_non_null(ref), assert_non_null(C);
    memset(ref, SENTINEL, cbytes);
    reference(&c, &w, ref);
    if (nan_row && K > 0) assert_true(isnan(ref[(M - 1) * ldc]));
    const int64_t G = (N + 15) / 16;
    for (int k = 0; k < nk; k++) {
        const int64_t mb = kernels[k]->mb;
        c.C = C;
        const int64_t whole_m[] = {0, c.Mp}, whole_g[] = {0, G};
        run_blocks(kernels[k], &c, whole_m, 2, whole_g, 2, cbytes);
        if (memcmp(C, ref, cbytes) != 0)
            fail_msg("%s %s M %lld N %lld K %lld bias %d nan %d: differs from the reference", kernels[k]->name,
                     f == KVC_WQ_Q8_0 ? "q8_0" : "q4_0", (long long)M, (long long)N, (long long)K, with_bias, nan_row);
        /* rows cut at every mb multiple in turn (m1 may stop short of M), groups cut after the first */
        for (int64_t cut = mb; cut < c.Mp; cut += mb * ((c.Mp / mb) / 3 + 1)) {
            const int64_t ms[] = {0, cut, c.Mp}, gs[] = {0, G > 1 ? 1 : G, G};
            run_blocks(kernels[k], &c, ms, 3, gs, 3, cbytes);
            if (memcmp(C, ref, cbytes) != 0)
                fail_msg("%s M %lld N %lld K %lld: rows cut at %lld change the output", kernels[k]->name, (long long)M,
                         (long long)N, (long long)K, (long long)cut);
        }
    }
    free(A), free(Wf), free(bias), free(ref), free(C), free_weights(w);
    free((void *)c.qa), free((void *)c.da), free((void *)c.asum);
}

static void check_format(kvc_wq_format f) {
    static const int64_t NK[][2] = {{37, 100}, {16, 32}, {5, 70}, {50, 257}, {3, 0}};
    for (int64_t M = 1; M <= 64; M = M < 40 ? M + 1 : M + 24)
        for (size_t s = 0; s < sizeof NK / sizeof NK[0]; s++)
            check_shape(f, M, NK[s][0], NK[s][1], (M + (int64_t)s) % 2, M % 7 == 3, M % 5 == 1);
}

static void test_q8_0_every_kernel_bitwise_equal_to_reference(void **state) {
    (void)state;
    check_format(KVC_WQ_Q8_0);
}

static void test_q4_0_every_kernel_bitwise_equal_to_reference(void **state) {
    (void)state;
    check_format(KVC_WQ_Q4_0);
}

/* On a CPU with AMX-INT8 (this project's reference machine), all three are offered and named. */
static void test_kernels_offered(void **state) {
    (void)state;
    const kvc_wq_kernel *kernels[3];
    const int nk = isa_kernels(kernels);
    for (int k = 0; k < nk; k++) {
        print_message("kernel %s (mb %d) checked\n", kernels[k]->name, kernels[k]->mb);
        assert_non_null(kernels[k]->block[KVC_WQ_Q8_0]);
        assert_non_null(kernels[k]->block[KVC_WQ_Q4_0]);
        assert_true(kernels[k]->mb >= 1 && kernels[k]->mb <= 16);
    }
    if (kvci_wq_amx_kernel()) assert_string_equal(kvci_wq_amx_kernel()->name, "amx-int8");
    if (kvci_wq_vnni512_kernel()) assert_string_equal(kvci_wq_vnni512_kernel()->name, "avx512-vnni");
    if (kvci_wq_avx2_kernel()) assert_string_equal(kvci_wq_avx2_kernel()->name, "avx2");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_offered),
        cmocka_unit_test(test_q8_0_every_kernel_bitwise_equal_to_reference),
        cmocka_unit_test(test_q4_0_every_kernel_bitwise_equal_to_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
