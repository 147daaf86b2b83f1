/* The dtype contract (docs/extending.md, "A KV dtype"): a KV cache dtype
 * defined in this file alone by its dtype-table entry and registered with
 * one call, with no other file of the library changed, is written into
 * paged caches by the ordinary slot write, read by the CPU attention
 * operator (its generic converter path, on every SIMD table this CPU runs)
 * and by the float64 reference, and the two agree within the bound of
 * every other K/V dtype.
 *
 * The dtype, "toy_blockq8", is block-scaled 8-bit like ggml's Q8_0: blocks
 * of 32 channels, each an f16 scale d (little-endian) and 32 int8 codes q,
 * value d * q; written with d = f16(amax / 127) and q = round_half_even(x / d)
 * clamped to [-127, 127]. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "kvc_test_util.h"
#include "kvcache/half.h"
#include "ops/cpu/simd.h"

#define DTYPE_NAME "toy_blockq8"
#define QK         32
#define BLOCK_B    (2 + QK)

static float block_scale(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return kvc_f16_to_f32(h);
}

static void q8_to_f32(const void *base, int64_t i0, int64_t n, float *dst) {
    for (int64_t i = i0; i < i0 + n; i++) {
        const uint8_t *blk = (const uint8_t *)base + i / QK * BLOCK_B;
        dst[i - i0] = block_scale(blk) * (float)(int8_t)blk[2 + i % QK]; /* exact: 11 x 8 significant bits */
    }
}

static void q8_from_f32(const float *src, int64_t n, void *base, int64_t i0) {
    for (int64_t b = 0; b < n / QK; b++) {
        const float *x = src + b * QK;
        uint8_t *blk = (uint8_t *)base + (i0 / QK + b) * BLOCK_B;
        float amax = 0.0f;
        for (int i = 0; i < QK; i++) amax = fmaxf(amax, fabsf(x[i]));
        const uint16_t h = kvc_f32_to_f16(amax / 127.0f);
        memcpy(blk, &h, 2);
        const float d = kvc_f16_to_f32(h), inv = d != 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < QK; i++)
            blk[2 + i] = (uint8_t)(int8_t)fmaxf(-127.0f, fminf(127.0f, nearbyintf(x[i] * inv)));
    }
}

static const uint8_t POISON[BLOCK_B] = {0x00, 0x7e}; /* an f16 NaN scale: every value NaN */

static const kvc_dtype_traits toy = {
    .name = DTYPE_NAME,
    .bits = 8,
    .block = QK,
    .block_bytes = BLOCK_B,
    .scales = KVC_SCALES_IN_BLOCK,
    .kv = true,
    .qmax = 127.0f,
    .simd = KVC_SIMD_GENERIC,
    .poison = POISON,
    .to_f32 = q8_to_f32,
    .from_f32 = q8_from_f32,
};
static kvc_dtype toy_id;

static int register_dtype(void **state) {
    (void)state;
    return kvci_dtype_register(&toy, &toy_id) == KVC_OK ? 0 : -1;
}

static uint32_t rng(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}
static float unif(uint32_t *s) { return (float)(rng(s) & 0xffff) / 32768.0f - 1.0f; }

/* The table answers for the new dtype, and a second registration of its name is refused. */
static void test_table_answers(void **state) {
    (void)state;
    assert_true(toy_id >= KVC_DTYPE_COUNT);
    assert_string_equal(kvc_dtype_name(toy_id), DTYPE_NAME);
    kvc_dtype parsed;
    assert_int_equal(kvc_dtype_parse(DTYPE_NAME, &parsed), KVC_OK);
    assert_int_equal(parsed, toy_id);
    int64_t bytes = 0;
    assert_true(kvci_dtype_bytes(toy_id, 4 * QK, &bytes));
    assert_int_equal(bytes, 4 * BLOCK_B);
    assert_false(kvci_dtype_bytes(toy_id, QK + 1, &bytes)); /* not whole blocks */
    assert_int_equal(kvc_dtype_size(toy_id), 0);            /* no bytes per element */
    assert_true(kvci_dtype_is_kv(toy_id) && kvci_dtype_is_blocked(toy_id));
    assert_false(kvci_dtype_scales_beside(toy_id));
    assert_false(kvc_model_kv_dtype_ok(toy_id)); /* the runtime's caches: plain elements only */
    kvc_dtype again;
    assert_int_equal(kvci_dtype_register(&toy, &again), KVC_EINVAL);
    float x[QK];
    toy.to_f32(POISON, 0, QK, x);
    for (int i = 0; i < QK; i++) assert_true(isnan(x[i]));
}

/* The toy entry under another name with field i made inconsistent; the field as the refusal names it. */
static const char *spoil(int i, kvc_dtype_traits *t) {
    *t = toy;
    t->name = DTYPE_NAME "_bad";
    switch (i) {
    case 0: t->block = 0; return "block 0";
    case 1: t->block_bytes = 0; return "block_bytes 0";
    case 2: t->block_bytes = KVC_DTYPE_MAX_BLOCK_BYTES + 1; return "block_bytes 257";
    case 3: t->bits = 0; return "bits 0";
    case 4: t->bits = 16; return "bits 16"; /* 32 codes of 16 bits do not fit 34 bytes */
    case 5: t->scales = KVC_SCALES_PER_TOKEN; return "scales 2";
    case 6: t->scale_required = true; return "scale_required";
    case 7: t->compute = true; return "compute";
    case 8: t->simd = KVC_SIMD_F32; return "simd";
    case 9: t->poison = NULL; return "poison";
    case 10: t->to_f32 = NULL; return "to_f32";
    case 11: t->from_f32 = NULL; return "from_f32";
    default: return NULL;
    }
}

/* An entry with one inconsistent field is refused with a message naming that field, and is not registered. */
static void test_register_refuses_inconsistent_fields(void **state) {
    (void)state;
    kvc_dtype_traits t;
    const char *field;
    for (int i = 0; (field = spoil(i, &t)) != NULL; i++) {
        kvc_dtype id = KVC_DTYPE_F32, parsed;
        if (kvci_dtype_register(&t, &id) != KVC_EINVAL) fail_msg("%s: registered", field);
        if (!strstr(kvc_last_error(), field)) fail_msg("%s: the refusal does not name it: %s", field, kvc_last_error());
        assert_int_equal(id, KVC_DTYPE_F32);
        assert_int_not_equal(kvc_dtype_parse(t.name, &parsed), KVC_OK);
    }
}

/* A written row decodes within 0.57 of its block's step d (half a step, plus the f16 rounding of d). */
static void test_write_round_trip(void **state) {
    (void)state;
    enum { NB = 2, BS = 4, NKV = 2, D = 64, T = 5 };
    uint8_t cache[NB * BS * NKV * D / QK * BLOCK_B];
    float upd[T * NKV * D], back[D];
    uint32_t s = 7;
    for (int i = 0; i < T * NKV * D; i++) upd[i] = 3.0f * unif(&s) * (float)(1 + i % 5);
    kvc_tensor c = {.data = cache, .dtype = toy_id, .ndim = 4, .shape = {NB, BS, NKV, D}};
    const kvc_tensor u = {.data = upd, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {T, NKV, D}};
    const int64_t slots[T] = {5, 0, 7, KVC_SLOT_SKIP, 2};
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u, slots, T), KVC_OK);
    for (int t = 0; t < T; t++) {
        if (slots[t] < 0) continue;
        for (int h = 0; h < NKV; h++) {
            const int64_t e = (slots[t] * NKV + h) * D;
            toy.to_f32(cache, e, D, back);
            for (int d = 0; d < D; d++) {
                const float step = block_scale(cache + (e + d) / QK * BLOCK_B);
                assert_true(fabsf(back[d] - upd[(t * NKV + h) * D + d]) <= 0.57f * step);
            }
        }
    }
    /* refused: a layout that splits rows, an update not f32 */
    kvc_tensor lanes = {.data = cache, .dtype = toy_id, .ndim = 4, .shape = {NB, NKV, D, BS}};
    assert_int_equal(kvc_write_slots(&lanes, KVC_BLOCK_BNNDBS, &u, slots, T), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "BNBSND or BNNBSD"));
    const kvc_tensor u16 = {.data = upd, .dtype = KVC_DTYPE_F16, .ndim = 3, .shape = {T, NKV, D}};
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u16, slots, T), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "from f32 upd"));
}

enum { B = 3, NQ = 4, NKV = 2, D = 64, BS = 16, W = 5, NB = 1 + B * W };

/* Decode (one query per request) or prefill (causal) over paged K/V of the
 * dtype in `order`, written through kvc_write_slots from f32 rows; the CPU
 * operator on table t against the float64 reference. */
static double run_case(kvc_block_layout order, bool prefill, const kvc_simd_table *t) {
    const int64_t kv_lens[B] = {37, 5, 70}, sq[B] = {prefill ? 6 : 1, prefill ? 5 : 1, prefill ? 9 : 1};
    int64_t q_cu[B], tq = 0;
    for (int b = 0; b < B; b++) q_cu[b] = tq += sq[b];
    int32_t tbl[B * W];
    for (int i = 0; i < B * W; i++) tbl[i] = 1 + (i * 7) % (B * W); /* a permutation of blocks 1.. */
    int64_t bytes = 0;
    assert_true(kvci_dtype_bytes(toy_id, (int64_t)NB * BS * NKV * D, &bytes));
    uint8_t *kc = calloc(1, (size_t)bytes), *vc = calloc(1, (size_t)bytes);
    float *q = malloc(sizeof(float) * (size_t)(tq * NQ * D)), *cpu = malloc(sizeof(float) * (size_t)(tq * NQ * D));
    float *ref = malloc(sizeof(float) * (size_t)(tq * NQ * D));
    assert_true(kc && vc && q && cpu && ref);
    const int64_t shape_bsnd[4] = {NB, BS, NKV, D}, shape_bnsd[4] = {NB, NKV, BS, D};
    const int64_t *shape = order == KVC_BLOCK_BNBSND ? shape_bsnd : shape_bnsd;
    kvc_tensor k = {.data = kc, .dtype = toy_id, .ndim = 4}, v = {.data = vc, .dtype = toy_id, .ndim = 4};
    memcpy(k.shape, shape, sizeof shape_bsnd), memcpy(v.shape, shape, sizeof shape_bsnd);
    uint32_t s = 11;
    for (int b = 0; b < B; b++) { /* each request's keys and values, one write per request */
        float *x = malloc(sizeof(float) * (size_t)(kv_lens[b] * NKV * D)),
              *y = malloc(sizeof *y * (size_t)(kv_lens[b] * NKV * D));
        int64_t *slots = malloc(sizeof(int64_t) * (size_t)kv_lens[b]);
        assert_true(x && y && slots);
        for (int64_t i = 0; i < kv_lens[b] * NKV * D; i++) x[i] = 2.0f * unif(&s), y[i] = unif(&s) * (float)(1 + i % 3);
        for (int64_t j = 0; j < kv_lens[b]; j++) slots[j] = (int64_t)tbl[b * W + j / BS] * BS + j % BS;
        const kvc_tensor ux = {.data = x, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {kv_lens[b], NKV, D}};
        const kvc_tensor uy = {.data = y, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {kv_lens[b], NKV, D}};
        assert_int_equal(kvc_write_slots(&k, order, &ux, slots, kv_lens[b]), KVC_OK);
        assert_int_equal(kvc_write_slots(&v, order, &uy, slots, kv_lens[b]), KVC_OK);
        free(x), free(y), free(slots);
    }
    for (int64_t i = 0; i < tq * NQ * D; i++) q[i] = unif(&s);
    kvc_attention_params p = kvc_attention_default_params();
    p.layout = KVC_LAYOUT_TND;
    p.num_heads = NQ;
    p.num_kv_heads = NKV;
    p.scale = 1.0 / sqrt((double)D);
    p.sparse_mode = 3; /* causal: each query sees every earlier key */
    p.batch = B;
    p.q_lens = q_cu;
    p.kv_lens = kv_lens;
    p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.q = (kvc_tensor){.data = q, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {tq, NQ, D}};
    p.k = k;
    p.v = v;
    p.kv_storage = KVC_KV_BLOCKS;
    p.block_layout = order;
    p.block_table = (kvc_tensor){.data = tbl, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {B, W}};
    p.block_size = BS;
    p.out = (kvc_tensor){.data = cpu, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {tq, NQ, D}};
    kvci_simd_override(t);
    size_t ws_bytes = 0;
    assert_int_equal(kvc_attention_cpu_workspace_size(&p, omp_get_max_threads(), &ws_bytes), KVC_OK);
    void *ws = NULL;
    assert_int_equal(kvc_aligned_alloc(64, ws_bytes, &ws), KVC_OK);
    if (kvc_attention_cpu(&p, ws, ws_bytes) != KVC_OK) fail_msg("attention_cpu: %s", kvc_last_error());
    kvc_aligned_free(ws);
    kvci_simd_override(NULL);
    p.out.data = ref;
    assert_int_equal(kvc_attention_ref(&p), KVC_OK);
    double worst = 0.0;
    for (int64_t i = 0; i < tq * NQ * D; i++) {
        assert_true(isfinite(cpu[i]));
        worst = fmax(worst, fabs((double)cpu[i] - (double)ref[i]) / (1.0 + fabs((double)ref[i])));
    }
    /* refused: a head dim that is not whole blocks (the same caches viewed with D 48) */
    p.k.shape[3] = p.v.shape[3] = 48, p.q.shape[2] = p.out.shape[2] = 48;
    assert_int_equal(kvc_attention_check(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "blocks of 32 channels"));
    free(kc), free(vc), free(q), free(cpu), free(ref);
    return worst;
}

/* The operator's generic path against the reference: decode and prefill, token- and head-major blocks, every
 * SIMD table this CPU runs; 1e-5 relative-and-absolute, the bound of the other K/V dtypes. */
static void test_attention_matches_reference(void **state) {
    (void)state;
    const kvc_simd_table *tables[] = {&kvc_simd_portable, kvci_simd_avx2_table(), kvci_simd_avx512_table()};
    const kvc_block_layout orders[] = {KVC_BLOCK_BNBSND, KVC_BLOCK_BNNBSD};
    int runs = 0;
    for (size_t ti = 0; ti < sizeof tables / sizeof tables[0]; ti++) {
        if (tables[ti] == NULL || !kvci_simd_cpu_runs(tables[ti])) continue;
        for (int o = 0; o < 2; o++)
            for (int prefill = 0; prefill < 2; prefill++) {
                const double e = run_case(orders[o], prefill, tables[ti]);
                print_message("%s %s %s: worst %.3g\n", tables[ti]->name, o ? "BNNBSD" : "BNBSND",
                              prefill ? "prefill" : "decode", e);
                assert_true(e <= 1e-5);
                runs++;
            }
    }
    assert_true(runs >= 4);
}

/* One file: the dtype's name appears in no other source file. */
static void test_only_this_file_names_the_dtype(void **state) {
    (void)state;
    kvc_test_assert_only_file_naming(DTYPE_NAME, "extend_dtype.c");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_answers),
        cmocka_unit_test(test_register_refuses_inconsistent_fields),
        cmocka_unit_test(test_write_round_trip),
        cmocka_unit_test(test_attention_matches_reference),
        cmocka_unit_test(test_only_this_file_names_the_dtype),
    };
    return cmocka_run_group_tests(tests, register_dtype, NULL);
}
