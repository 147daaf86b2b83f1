/* Quantise-on-write (docs/kv-dtypes.md): calibrated symmetric scales
 * (kvc_kv_quant_scales) and per-token scales computed on the fly and
 * stored by slot (kvc_write_slots_token_quant). The KIVI split (keys per
 * channel, values per token) end to end through attention for int8 and
 * fp8 caches: the kernel against the float64 reference on the same cache,
 * and the result against attention on the unquantised keys/values within
 * a bound derived from the per-element quantisation errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/half.h"
#include "kvcache/ops.h"

static kvc_tensor t3(void *d, kvc_dtype dt, int64_t a, int64_t b, int64_t c) {
    return (kvc_tensor){.data = d, .dtype = dt, .ndim = 3, .shape = {a, b, c}};
}

static double qmax_of(kvc_dtype dt) { return dt == KVC_DTYPE_I8 ? 127.0 : dt == KVC_DTYPE_F8E4M3 ? 448.0 : 57344.0; }

static void test_calibrated_scales(void **state) {
    (void)state;
    enum { T = 5, N = 2, D = 3, H = N * D };
    float x[T * H];
    for (int i = 0; i < T * H; i++) x[i] = (float)sin(1.3 * i) * (float)(1 + i % 4);
    for (int i = 0; i < T; i++) x[i * H + 5] = 0.0f; /* channel 5 is all zeros */
    kvc_tensor xt = t3(x, KVC_DTYPE_F32, T, N, D);
    const int64_t counts[3] = {1, N, H};
    const kvc_dtype dts[3] = {KVC_DTYPE_I8, KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    for (int di = 0; di < 3; di++)
        for (int ci = 0; ci < 3; ci++) {
            float sc[H], inv[H];
            assert_int_equal(kvc_kv_quant_scales(&xt, dts[di], counts[ci], sc, inv), KVC_OK);
            for (int64_t k = 0; k < counts[ci]; k++) {
                double amax = 0;
                for (int t = 0; t < T; t++)
                    for (int c = 0; c < H; c++)
                        if ((counts[ci] == 1) || (counts[ci] == N && c / D == k) || (counts[ci] == H && c == k))
                            amax = fmax(amax, fabs(x[t * H + c]));
                const double want = amax > 0 ? amax / qmax_of(dts[di]) : 1.0;
                assert_true(fabs(sc[k] - want) <= 1e-6 * want);
                assert_true(fabs(inv[k] * want - 1.0) <= 1e-6);
            }
        }
    float sc[H], inv[H];
    assert_int_equal(kvc_kv_quant_scales(&xt, KVC_DTYPE_BF16, 1, sc, inv), KVC_EINVAL);
    assert_int_equal(kvc_kv_quant_scales(&xt, KVC_DTYPE_I8, 4, sc, inv), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "n_scale 4"));
    x[7] = NAN;
    assert_int_equal(kvc_kv_quant_scales(&xt, KVC_DTYPE_I8, 1, sc, inv), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "token 1, channel 1"));
}

static void test_token_write_refusals(void **state) {
    (void)state;
    enum { NB = 2, BS = 4, N = 1, D = 4, T = 2 };
    int8_t cache[NB * BS * N * D];
    float scales[NB * BS], upd[T * N * D] = {1, 2, 3, 4, 5, 6, INFINITY, 8};
    memset(cache, 0x55, sizeof cache);
    for (int i = 0; i < NB * BS; i++) scales[i] = -1.0f;
    kvc_tensor c = {.data = cache, .dtype = KVC_DTYPE_I8, .ndim = 4, .shape = {NB, BS, N, D}};
    kvc_tensor u = t3(upd, KVC_DTYPE_F32, T, N, D);
    int64_t slots[T] = {5, 2};
    assert_int_equal(kvc_write_slots_token_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, scales, NB * BS), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "token 1, channel 2 is inf"));
    upd[6] = 7.0f;
    assert_int_equal(kvc_write_slots_token_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, scales, NB * BS - 1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "one scale per cache slot"));
    slots[1] = NB * BS;
    assert_int_equal(kvc_write_slots_token_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, scales, NB * BS), KVC_ERANGE);
    for (size_t i = 0; i < sizeof cache; i++) assert_int_equal(cache[i], 0x55); /* nothing written */
    for (int i = 0; i < NB * BS; i++) assert_true(scales[i] == -1.0f);
    slots[1] = KVC_SLOT_SKIP;
    assert_int_equal(kvc_write_slots_token_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, scales, NB * BS), KVC_OK);
    assert_true(fabsf(scales[5] - 4.0f / 127.0f) < 1e-7f);
    const int8_t want[4] = {32, 64, 95, 127}; /* 127 x / 4, ties to even: 31.75, 63.5, 95.25, 127 */
    for (int d = 0; d < D; d++) assert_int_equal(cache[5 * D + d], want[d]);
    for (int i = 0; i < NB * BS; i++)
        if (i != 5) assert_true(scales[i] == -1.0f);
}

/* A token (or a calibration group) whose largest value is so small that qmax / amax overflows f32: it gets scale 1
 * and inverse 1 like an all-zero one, where it got inverse inf (and scale 0 below qmax x 2^-149), which stored
 * 0 x inf = NaN for its zero channels (fp8 NaN codes, read back as NaN: a poisoned attention row). */
static void test_tiny_amax(void **state) {
    (void)state;
    enum { NB = 1, BS = 2, N = 1, D = 4 };
    const kvc_dtype dts[3] = {KVC_DTYPE_I8, KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    float upd[D] = {1e-37f, 0.0f, -2e-39f, 1e-45f};
    const kvc_tensor u = t3(upd, KVC_DTYPE_F32, 1, N, D);
    for (int di = 0; di < 3; di++) {
        uint8_t cache[NB * BS * N * D];
        float scales[NB * BS] = {-1.0f, -1.0f}, sc = 0.0f, inv = 0.0f;
        kvc_tensor c = {.data = cache, .dtype = dts[di], .ndim = 4, .shape = {NB, BS, N, D}};
        const int64_t slot = 1;
        assert_int_equal(kvc_write_slots_token_quant(&c, KVC_BLOCK_BNBSND, &u, &slot, 1, scales, NB * BS), KVC_OK);
        assert_true(scales[1] == 1.0f);
        for (int d = 0; d < D; d++) {
            const uint8_t q = cache[BS * D - D + d];
            const float back = dts[di] == KVC_DTYPE_I8       ? (float)(int8_t)q
                               : dts[di] == KVC_DTYPE_F8E4M3 ? kvc_fp8_e4m3_to_f32(q)
                                                             : kvc_fp8_e5m2_to_f32(q);
            if (!(fabsf(back - upd[d]) <= 1e-37f)) fail_msg("dtype %d channel %d reads back %g", di, d, (double)back);
        }
        assert_int_equal(kvc_kv_quant_scales(&u, dts[di], 1, &sc, &inv), KVC_OK);
        assert_true(sc == 1.0f && inv == 1.0f);
    }
}

/* KIVI end to end for one cache dtype: B requests of kv_len L[b] each (a decode row), Nq = 4,
 * Nkv = 2, paged [NB, bs, Nkv*D]. */
static void kivi_case(kvc_dtype dt, uint32_t seed) {
    enum { B = 2, NQ = 4, NKV = 2, D = 32, H = NKV * D, BS = 16, W = 8, NB = 1 + B * W };
    const int64_t L[B] = {70, 117};
    const int64_t total = L[0] + L[1];
    float *k = malloc(sizeof(float) * (size_t)(total * H)), *v = malloc(sizeof(float) * (size_t)(total * H));
    uint32_t s = seed;
    for (int64_t i = 0; i < total * H; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        k[i] =
            (float)((int)(s % 2001u) - 1000) / 400.0f * (1.0f + (float)(i % H) / 16.0f); /* channel-dependent ranges */
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        v[i] = (float)((int)(s % 2001u) - 1000) / 500.0f;
    }
    /* block table: request b uses blocks 1 + b*W .. (block 0 is the null block) */
    int32_t tbl[B * W];
    int64_t *slots = malloc(sizeof(int64_t) * (size_t)total);
    for (int b = 0; b < B; b++)
        for (int e = 0; e < W; e++) tbl[b * W + e] = 1 + b * W + (W - 1 - e); /* reversed: paging matters */
    for (int b = 0, r = 0; b < B; b++)
        for (int64_t j = 0; j < L[b]; j++, r++) slots[r] = (int64_t)tbl[b * W + j / BS] * BS + j % BS;
    const size_t es = kvc_dtype_size(dt);
    void *kc = calloc((size_t)(NB * BS * H), es), *vc = calloc((size_t)(NB * BS * H), es);
    float kscale[H], kinv[H], *vslot = calloc((size_t)(NB * BS), sizeof(float));
    kvc_tensor kt = t3(k, KVC_DTYPE_F32, total, NKV, D), vt = t3(v, KVC_DTYPE_F32, total, NKV, D);
    kvc_tensor kc4 = {.data = kc, .dtype = dt, .ndim = 4, .shape = {NB, BS, NKV, D}}, vc4 = kc4;
    vc4.data = vc;
    assert_int_equal(kvc_kv_quant_scales(&kt, dt, H, kscale, kinv), KVC_OK); /* keys: calibrated per channel */
    assert_int_equal(kvc_write_slots_quant(&kc4, KVC_BLOCK_BNBSND, &kt, slots, total, kinv, NULL, H), KVC_OK);
    assert_int_equal(kvc_write_slots_token_quant(&vc4, KVC_BLOCK_BNBSND, &vt, slots, total, vslot, NB * BS), KVC_OK);
    /* per-element quantisation error, read back through the definitions */
    double dk[H] = {0}, dv_max = 0, vmax = 0;
    for (int64_t r = 0; r < total; r++)
        for (int64_t c = 0; c < H; c++) {
            const int64_t a = slots[r] * H + c;
            const double qk = dt == KVC_DTYPE_I8       ? ((int8_t *)kc)[a]
                              : dt == KVC_DTYPE_F8E4M3 ? kvc_fp8_e4m3_to_f32(((uint8_t *)kc)[a])
                                                       : kvc_fp8_e5m2_to_f32(((uint8_t *)kc)[a]);
            const double qv = dt == KVC_DTYPE_I8       ? ((int8_t *)vc)[a]
                              : dt == KVC_DTYPE_F8E4M3 ? kvc_fp8_e4m3_to_f32(((uint8_t *)vc)[a])
                                                       : kvc_fp8_e5m2_to_f32(((uint8_t *)vc)[a]);
            const double ek = fabs(kscale[c] * qk - k[r * H + c]), ev = fabs(vslot[slots[r]] * qv - v[r * H + c]);
            if (dt == KVC_DTYPE_I8) { /* half a step of the int8 grid */
                assert_true(ek <= 0.5 * kscale[c] * (1 + 1e-5));
                assert_true(ev <= 0.5 * vslot[slots[r]] * (1 + 1e-5));
            }
            dk[c] = fmax(dk[c], ek);
            dv_max = fmax(dv_max, ev);
            vmax = fmax(vmax, fabs(v[r * H + c]));
        }
    /* attention: decode row per request over the quantised cache, and over f32 copies of the originals */
    float q[B * NQ * D], out_q[B * NQ * D], out_cpu[B * NQ * D], out_f[B * NQ * D];
    for (int i = 0; i < B * NQ * D; i++) q[i] = (float)cos(0.77 * i + seed);
    const int64_t sh[2] = {NB, BS};
    kvc_attention_params p = kvc_attention_default_params();
    p.layout = KVC_LAYOUT_TND, p.num_heads = NQ, p.num_kv_heads = NKV, p.scale = 1.0 / sqrt((double)D),
    p.sparse_mode = 0;
    p.batch = B, p.q_lens = (int64_t[]){1, 2}, p.kv_lens = L, p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.q = t3(q, KVC_DTYPE_F32, B, NQ, D), p.out = t3(out_q, KVC_DTYPE_F32, B, NQ, D);
    p.k = t3(kc, dt, NB, BS, H), p.v = t3(vc, dt, NB, BS, H);
    p.kv_storage = KVC_KV_BLOCKS, p.block_size = BS;
    p.block_table = (kvc_tensor){.data = tbl, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {B, W}};
    p.key_quant_mode = KVC_QUANT_PER_CHANNEL, p.value_quant_mode = KVC_QUANT_PER_SLOT;
    p.key_scale = (kvc_tensor){.data = kscale, .dtype = KVC_DTYPE_F32, .ndim = 2, .shape = {NKV, D}};
    p.value_scale = (kvc_tensor){.data = vslot, .dtype = KVC_DTYPE_F32, .ndim = 2, .shape = {sh[0], sh[1]}};
    if (kvc_attention_ref(&p) != KVC_OK) fail_msg("%s", kvc_last_error());
    /* scales whose shape only multiplies out to Nkv*D (negative extents; a product past int64) are refused */
    kvc_attention_params bad = p;
    bad.key_scale.shape[0] = -NKV, bad.key_scale.shape[1] = -D;
    assert_int_equal(kvc_attention_check(&bad), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "key_scale has a negative extent"));
    bad.key_scale.shape[0] = H, bad.key_scale.shape[1] = 1 + ((int64_t)1 << 62); /* H * 2^62 = 0 mod 2^64 */
    assert_int_equal(kvc_attention_check(&bad), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "more elements than int64 holds"));
    size_t bytes;
    assert_int_equal(kvc_attention_cpu_workspace_size(&p, 2, &bytes), KVC_OK);
    void *ws;
    assert_int_equal(kvc_aligned_alloc(64, bytes, &ws), KVC_OK);
    p.out.data = out_cpu;
    assert_int_equal(kvc_attention_cpu(&p, ws, bytes), KVC_OK);
    for (int i = 0; i < B * NQ * D; i++) assert_true(fabs(out_cpu[i] - out_q[i]) <= 1e-5 * (1 + fabs(out_q[i])));
    /* unquantised: the same keys/values in f32 paged caches */
    float *kf = calloc((size_t)(NB * BS * H), sizeof(float)), *vf = calloc((size_t)(NB * BS * H), sizeof(float));
    for (int64_t r = 0; r < total; r++) {
        memcpy(kf + slots[r] * H, k + r * H, sizeof(float) * H);
        memcpy(vf + slots[r] * H, v + r * H, sizeof(float) * H);
    }
    kvc_attention_params pf = p;
    pf.k = t3(kf, KVC_DTYPE_F32, NB, BS, H), pf.v = t3(vf, KVC_DTYPE_F32, NB, BS, H), pf.out.data = out_f;
    pf.key_scale = pf.value_scale = (kvc_tensor){0};
    pf.key_quant_mode = pf.value_quant_mode = KVC_QUANT_NONE;
    assert_int_equal(kvc_attention_ref(&pf), KVC_OK);
    /* bound: a score moves by at most eps = scale * sum_d |q_d| dk_d, so each weight by a factor
     * within e^(+-2 eps) and the output by at most vmax (e^(2 eps) - 1) plus the largest value error */
    for (int b = 0; b < B; b++)
        for (int n = 0; n < NQ; n++) {
            const int g = n / (NQ / NKV);
            double eps = 0;
            for (int d = 0; d < D; d++) eps += fabs(q[(b * NQ + n) * D + d]) * dk[g * D + d];
            eps *= p.scale;
            const double bound = vmax * (exp(2 * eps) - 1) + dv_max;
            for (int d = 0; d < D; d++) {
                const double e = fabs(out_q[(b * NQ + n) * D + d] - out_f[(b * NQ + n) * D + d]);
                if (!(e <= bound * (1 + 1e-6) + 1e-6))
                    fail_msg("%s: request %d head %d: error %g above the bound %g", kvc_dtype_name(dt), b, n, e, bound);
            }
        }
    kvc_aligned_free(ws);
    free(k), free(v), free(slots), free(kc), free(vc), free(vslot), free(kf), free(vf);
}

static void test_kivi_end_to_end(void **state) {
    (void)state;
    kivi_case(KVC_DTYPE_I8, 11);
    kivi_case(KVC_DTYPE_F8E4M3, 12);
    kivi_case(KVC_DTYPE_F8E5M2, 13);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calibrated_scales),
        cmocka_unit_test(test_token_write_refusals),
        cmocka_unit_test(test_tiny_amax),
        cmocka_unit_test(test_kivi_end_to_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
