/* Cache-write ops (VER 7.1): contiguous scatter, slot scatter in
 * both paged orders and NZ, fused MLA RMSNorm+RoPE+write, int8 writes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/half_rows.h"
#include "kvcache/half.h"
#include "kvcache/ops.h"
#include "ops/elem.h"

static kvc_tensor tensor4(void *data, kvc_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d) {
    kvc_tensor t = {.data = data, .dtype = dt, .ndim = 4, .shape = {a, b, c, d}};
    return t;
}

static kvc_tensor tensor3(void *data, kvc_dtype dt, int64_t a, int64_t b, int64_t c) {
    kvc_tensor t = {.data = data, .dtype = dt, .ndim = 3, .shape = {a, b, c}};
    return t;
}

static void test_contiguous_scatter(void **state) {
    (void)state;
    enum { B = 2, S = 6, H = 3, L = 2 };
    float cache[B * S * H], upd[B * L * H];
    for (int i = 0; i < B * S * H; i++) cache[i] = -1.0f;
    for (int i = 0; i < B * L * H; i++) upd[i] = (float)i;
    kvc_tensor c = tensor3(cache, KVC_DTYPE_F32, B, S, H), u = tensor3(upd, KVC_DTYPE_F32, B, L, H);
    int64_t starts[B] = {0, 4};
    assert_int_equal(kvc_write_contiguous(&c, &u, starts, B), KVC_OK);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++)
            for (int h = 0; h < H; h++) {
                int t = s - (int)starts[b];
                float want = (t >= 0 && t < L) ? upd[(b * L + t) * H + h] : -1.0f;
                assert_true(cache[(b * S + s) * H + h] == want);
            }
    float before[B * S * H];
    memcpy(before, cache, sizeof cache);
    int64_t bad[B] = {0, 5}; /* 5 + 2 > 6 (R17) */
    assert_int_equal(kvc_write_contiguous(&c, &u, bad, B), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "S_max"));
    assert_memory_equal(before, cache, sizeof cache);
    int64_t neg[B] = {-1, 0};
    assert_int_equal(kvc_write_contiguous(&c, &u, neg, B), KVC_ERANGE);
    assert_int_equal(kvc_write_contiguous(&c, &u, starts, 1), KVC_EINVAL);
    /* a cache whose extents multiply past int64: refused before any (wrapped) offset is taken */
    kvc_tensor huge = tensor3(cache, KVC_DTYPE_F32, B, INT64_MAX / 2, H);
    int64_t far[B] = {(int64_t)1 << 61, 0};
    assert_int_equal(kvc_write_contiguous(&huge, &u, far, B), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "more elements than int64"));
    assert_memory_equal(before, cache, sizeof cache);
    /* a dtype outside the table (element size 0) or one stored in blocks: refused, where both wrote nothing and
     * returned KVC_OK */
    kvc_tensor c99 = c, u99 = u;
    c99.dtype = u99.dtype = (kvc_dtype)99;
    assert_int_equal(kvc_write_contiguous(&c99, &u99, starts, B), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "cache dtype ? (99)"));
}

/* Element index of (block p, offset o, head h, channel d) in a cache of `order` ([NB, BS, N, D],
 * [NB, N, BS, D] or keys in lanes [NB, N, D, BS]). */
static int64_t order_index(kvc_block_layout order, int64_t p, int64_t o, int64_t h, int64_t d, int64_t BS, int64_t N,
                           int64_t D) {
    if (order == KVC_BLOCK_BNNBSD) return ((p * N + h) * BS + o) * D + d;
    if (order == KVC_BLOCK_BNNDBS) return ((p * N + h) * D + d) * BS + o;
    return ((p * BS + o) * N + h) * D + d;
}

/* The plain allocation orders and keys in lanes: values land at the formula's addresses, others untouched, -1 skipped.
 */
static void check_slot_scatter(kvc_block_layout order) {
    enum { NB = 3, BS = 4, N = 2, D = 3, T = 4 };
    float cache[NB * BS * N * D], upd[T * N * D];
    for (int i = 0; i < NB * BS * N * D; i++) cache[i] = 1000.0f + (float)i;
    for (int i = 0; i < T * N * D; i++) upd[i] = (float)i;
    kvc_tensor c = order == KVC_BLOCK_BNNBSD   ? tensor4(cache, KVC_DTYPE_F32, NB, N, BS, D)
                   : order == KVC_BLOCK_BNNDBS ? tensor4(cache, KVC_DTYPE_F32, NB, N, D, BS)
                                               : tensor4(cache, KVC_DTYPE_F32, NB, BS, N, D);
    kvc_tensor u = tensor3(upd, KVC_DTYPE_F32, T, N, D);
    int64_t slots[T] = {5, KVC_SLOT_SKIP, 11, 0};
    assert_int_equal(kvc_write_slots(&c, order, &u, slots, T), KVC_OK);
    int written[NB * BS * N * D] = {0};
    for (int t = 0; t < T; t++) {
        if (slots[t] < 0) continue;
        int64_t p = slots[t] / BS, o = slots[t] % BS;
        for (int h = 0; h < N; h++)
            for (int d = 0; d < D; d++) {
                int64_t a = order_index(order, p, o, h, d, BS, N, D);
                assert_true(cache[a] == upd[(t * N + h) * D + d]);
                written[a] = 1;
            }
    }
    for (int i = 0; i < NB * BS * N * D; i++)
        if (!written[i]) assert_true(cache[i] == 1000.0f + (float)i);
    float before[NB * BS * N * D];
    memcpy(before, cache, sizeof cache);
    int64_t oob[T] = {1, 2, NB * BS, 3};
    assert_int_equal(kvc_write_slots(&c, order, &u, oob, T), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "skip marker"));
    int64_t neg2[T] = {1, 2, -2, 3};
    assert_int_equal(kvc_write_slots(&c, order, &u, neg2, T), KVC_ERANGE);
    assert_int_equal(kvc_write_slots(&c, order, &u, slots, T - 1), KVC_EINVAL); /* len(slots) != T */
    kvc_tensor huge = c; /* NB * bs * N * D past int64: NB*bs (the slot bound) would wrap */
    huge.shape[0] = INT64_MAX / 4;
    int64_t far[T] = {(int64_t)1 << 61, 0, 1, 2};
    assert_int_equal(kvc_write_slots(&huge, order, &u, far, T), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "more elements than int64"));
    assert_memory_equal(before, cache, sizeof cache);
    uint16_t upd16[T * N * D] = {0};
    kvc_tensor u16 = tensor3(upd16, KVC_DTYPE_BF16, T, N, D);
    assert_int_equal(kvc_write_slots(&c, order, &u16, slots, T), KVC_EINVAL); /* dtype mismatch */
    /* a dtype outside the table on both sides, and a negative token count: refused (both returned KVC_OK) */
    kvc_tensor c99 = c, u99 = u;
    c99.dtype = u99.dtype = (kvc_dtype)99;
    assert_int_equal(kvc_write_slots(&c99, order, &u99, slots, T), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "cache dtype ? (99)"));
    kvc_tensor neg = u;
    neg.shape[0] = -3;
    assert_int_equal(kvc_write_slots(&c, order, &neg, slots, -3), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "upd must be [T >= 0"));
    assert_memory_equal(before, cache, sizeof cache);
}

static void test_slot_scatter_bnbsnd(void **state) {
    (void)state;
    check_slot_scatter(KVC_BLOCK_BNBSND);
}

/* AO 2.2: duplicates are legal only in the null block (slots < bs); debug
 * builds refuse a duplicate outside it (in any block, here block 2), leaving
 * the cache unchanged. */
static void test_slot_duplicates(void **state) {
    (void)state;
    enum { NB = 3, BS = 4, N = 1, D = 2, T = 5 };
    float cache[NB * BS * N * D], upd[T * N * D];
    for (int i = 0; i < NB * BS * N * D; i++) cache[i] = (float)i;
    for (int i = 0; i < T * N * D; i++) upd[i] = -1.0f - (float)i;
    kvc_tensor c = tensor4(cache, KVC_DTYPE_F32, NB, BS, N, D), u = tensor3(upd, KVC_DTYPE_F32, T, N, D);
    int64_t in_null[T] = {0, 5, 0, 3, 3}; /* 0 and 3 repeated: both in block 0 */
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u, in_null, T), KVC_OK);
    assert_true(cache[5 * D] == upd[1 * D]);
#ifndef NDEBUG
    float before[NB * BS * N * D];
    memcpy(before, cache, sizeof cache);
    int64_t dup[T] = {9, 1, KVC_SLOT_SKIP, 4, 9};
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u, dup, T), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "slot 9 is written twice"));
    int64_t dup_last_block[T] = {11, 2, 11, KVC_SLOT_SKIP, KVC_SLOT_SKIP};
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u, dup_last_block, T), KVC_EINVAL);
    int64_t skips[T] = {KVC_SLOT_SKIP, KVC_SLOT_SKIP, 8, KVC_SLOT_SKIP, 10}; /* repeated skip markers are fine */
    assert_memory_equal(before, cache, sizeof cache);
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u, skips, T), KVC_OK);
#endif
}
/* A prefill-sized bf16 write (64 tokens x 8 heads x 128 channels): every row lands at its slot, a
 * skipped token writes nothing, and a slot of the null block written twice holds the later token's
 * row. */
static void test_slot_scatter_large(void **state) {
    (void)state;
    enum { NB = 20, BS = 4, N = 8, D = 128, T = 64 };
    static uint16_t cache[NB * BS * N * D], upd[T * N * D];
    for (int i = 0; i < NB * BS * N * D; i++) cache[i] = 0xffff;
    for (int i = 0; i < T * N * D; i++) upd[i] = (uint16_t)(i * 7 + 1);
    int64_t slots[T];
    for (int t = 0; t < T; t++) slots[t] = t < 4 ? t % 2 : t == 9 ? KVC_SLOT_SKIP : BS + t; /* 0, 1, 0, 1 */
    kvc_tensor c = tensor4(cache, KVC_DTYPE_BF16, NB, BS, N, D), u = tensor3(upd, KVC_DTYPE_BF16, T, N, D);
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u, slots, T), KVC_OK);
    for (int t = 2; t < T; t++) /* tokens 0 and 1 overwritten by 2 and 3 */
        if (slots[t] != KVC_SLOT_SKIP)
            assert_memory_equal(cache + slots[t] * N * D, upd + t * N * D, N * D * sizeof(uint16_t));
    assert_true(cache[(BS + 9) * N * D] == 0xffff);
}

/* The row converters give the scalar API's bits: edge cases (signed zeros, subnormals, the largest
 * finite values, ties, infinities, quiet and signalling NaNs with payloads) and random bit patterns. */
static void test_half_rows_match_scalar(void **state) {
    (void)state;
    enum { N = 4099 };
    static float x[N];
    static uint16_t y[N];
    static const uint32_t edge[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu,
                                    0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                    0x7f800001u, 0xff8fffffu, 0x3f808000u, 0x3f818000u, 0x477ff000u,
                                    0x477fefffu, 0x33000000u, 0x38800000u, 0x387fffffu, 0x7f7f8000u};
    uint32_t r = 12345u;
    for (int i = 0; i < N; i++) {
        uint32_t b = edge[i % (int)(sizeof edge / sizeof edge[0])];
        if (i >= 64) b = r = r * 1664525u + 1013904223u;
        memcpy(x + i, &b, sizeof b);
    }
    for (int i = 0; i < 2; i++) {
        const int n = i ? N : 37; /* a vector tail, then none of it */
        if (i)
            kvci_f32_to_f16_n(x, n, y);
        else
            kvci_f32_to_bf16_n(x, n, y);
        for (int j = 0; j < n; j++) assert_int_equal(y[j], i ? kvc_f32_to_f16(x[j]) : kvc_f32_to_bf16(x[j]));
    }
    kvci_f32_to_bf16_n(x, N, y);
    for (int j = 0; j < N; j++) assert_int_equal(y[j], kvc_f32_to_bf16(x[j]));
    /* rows of 0-17 elements (all tail, or one 8-lane vector and a tail) at unaligned starts: the row's
     * elements converted, nothing written around it */
    for (int kind = 0; kind < 2; kind++)
        for (int n = 0; n <= 17; n++)
            for (int o = 1; o < 4; o++) {
                for (int j = 0; j < 24; j++) y[j] = 0xabcdu;
                if (kind)
                    kvci_f32_to_f16_n(x + o, n, y + o);
                else
                    kvci_f32_to_bf16_n(x + o, n, y + o);
                for (int j = 0; j < 24; j++)
                    assert_int_equal(y[j], j < o || j >= o + n ? 0xabcdu
                                           : kind              ? kvc_f32_to_f16(x[j])
                                                               : kvc_f32_to_bf16(x[j]));
            }
}

static void test_slot_scatter_bnnbsd(void **state) {
    (void)state;
    check_slot_scatter(KVC_BLOCK_BNNBSD);
}
static void test_slot_scatter_bnndbs(void **state) {
    (void)state;
    check_slot_scatter(KVC_BLOCK_BNNDBS);
}

static void test_nz_index_examples(void **state) {
    (void)state;
    assert_int_equal(kvc_nz_index(3, 5, 0, 37, 128, 1, 512, 16), 200789);
    assert_int_equal(kvc_nz_index(3, 5, 0, 37, 128, 1, 512, 32), 200869);
    /* plain order of the same element */
    assert_int_equal((3 * 128 + 5) * 512 + 37, 199205);
    /* outside the geometry, or sizes whose index leaves int64: -1 (c0 0 divided by zero before) */
    assert_int_equal(kvc_nz_index(3, 5, 0, 37, 128, 1, 512, 0), -1);
    assert_int_equal(kvc_nz_index(3, 5, 0, 37, 0, 1, 512, 16), -1);
    assert_int_equal(kvc_nz_index(-1, 5, 0, 37, 128, 1, 512, 16), -1);
    assert_int_equal(kvc_nz_index(3, 128, 0, 37, 128, 1, 512, 16), -1);
    assert_int_equal(kvc_nz_index(3, 5, 1, 37, 128, 1, 512, 16), -1);
    assert_int_equal(kvc_nz_index(3, 5, 0, 512, 128, 1, 512, 16), -1);
    assert_int_equal(kvc_nz_index(3, 5, 0, -1, 128, 1, 512, 16), -1);
    assert_int_equal(kvc_nz_index(INT64_MAX / 2, 5, 0, 37, 128, 1, 512, 16), -1);
    assert_int_equal(kvc_nz_index(INT64_MAX, 0, 0, 0, 16, 1, 16, 16), -1); /* p + 1 overflowed (UBSan) */
    assert_int_equal(kvc_nz_index(0, 0, 0, 0, 1, INT64_MAX, 2, 16), -1);
    /* the last element of a block whose channels end in a partial tile (H 40, c0 16: 3 tiles) */
    assert_int_equal(kvc_nz_index(0, 1, 0, 39, 2, 1, 40, 16), 2 * 2 * 16 + 1 * 16 + 7);
}

static void test_nz_write_roundtrip(void **state) {
    (void)state;
    enum { NB = 4, BS = 128, D = 512 };
    uint16_t *cache = calloc((size_t)NB * BS * D, sizeof *cache);
    float upd[D];
    uint16_t upd16[D];
    for (int d = 0; d < D; d++) {
        upd16[d] = kvc_f32_to_bf16((float)(d + 1));
        upd[d] = kvc_bf16_to_f32(upd16[d]);
    }
    kvc_tensor c = tensor4(cache, KVC_DTYPE_BF16, NB, BS, 1, D), u = tensor3(upd16, KVC_DTYPE_BF16, 1, 1, D);
    int64_t slot = 3 * BS + 5;
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_NZ, &u, &slot, 1), KVC_OK);
    assert_true(kvc_bf16_to_f32(cache[200789]) == upd[37]);
    /* read back through the 5-D view [NB, 1, D/16, bs, 16] */
    int plain_same = 1;
    for (int d = 0; d < D; d++) {
        size_t a5 = ((((size_t)3 * 1 + 0) * (D / 16) + (size_t)d / 16) * BS + 5) * 16 + (size_t)d % 16;
        assert_true(kvc_bf16_to_f32(cache[a5]) == upd[d]);
        if (kvc_bf16_to_f32(cache[(size_t)slot * D + (size_t)d]) != upd[d]) plain_same = 0;
    }
    assert_false(plain_same); /* a plain-order read of an NZ cache sees other data */
    float f32cache[16];
    kvc_tensor cf = tensor4(f32cache, KVC_DTYPE_F32, 1, 16, 1, 1);
    assert_int_equal(kvc_write_slots(&cf, KVC_BLOCK_NZ, &u, &slot, 1), KVC_EINVAL); /* f32 NZ unsupported */
    free(cache);
}

/* Quantising contiguous write: fp8 per channel and int8 per tensor with
 * offset, each element as the slot writes store it; bad scales and ranges
 * refused with the cache unchanged. */
static void test_contiguous_quant(void **state) {
    (void)state;
    enum { B = 2, S = 5, H = 4, L = 2 };
    uint8_t cache[B * S * H];
    float upd[B * L * H], inv[H] = {1.0f, 2.0f, 0.5f, 100.0f};
    for (int i = 0; i < B * L * H; i++) upd[i] = (float)(i - 7) * 0.9f;
    int64_t starts[B] = {3, 0};
    memset(cache, 0x11, sizeof cache);
    kvc_tensor c = tensor3(cache, KVC_DTYPE_F8E5M2, B, S, H), u = tensor3(upd, KVC_DTYPE_F32, B, L, H);
    assert_int_equal(kvc_write_contiguous_quant(&c, &u, starts, B, inv, NULL, H), KVC_OK);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++)
            for (int h = 0; h < H; h++) {
                const int l = s - (int)starts[b];
                const uint8_t want = l >= 0 && l < L ? kvc_f32_to_fp8_e5m2(upd[(b * L + l) * H + h] * inv[h]) : 0x11;
                assert_int_equal(cache[(b * S + s) * H + h], want);
            }
    float off = 3.0f;
    c.dtype = KVC_DTYPE_I8;
    assert_int_equal(kvc_write_contiguous_quant(&c, &u, starts, B, inv, &off, 1), KVC_OK);
    assert_int_equal((int8_t)cache[(0 * S + 3) * H + 0], kvc_quantize_i8(upd[0], inv[0], off));
    uint8_t before[sizeof cache];
    memcpy(before, cache, sizeof cache);
    float bad = INFINITY;
    assert_int_equal(kvc_write_contiguous_quant(&c, &u, starts, B, &bad, NULL, 1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "inv_scale[0]"));
    starts[0] = 4;
    assert_int_equal(kvc_write_contiguous_quant(&c, &u, starts, B, inv, NULL, 1), KVC_ERANGE);
    starts[0] = 3, c.dtype = KVC_DTYPE_F8E4M3;
    assert_int_equal(kvc_write_contiguous_quant(&c, &u, starts, B, inv, &off, 1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "no offset"));
    assert_memory_equal(before, cache, sizeof cache);
}

static void test_rmsnorm_rope_vectors(void **state) {
    (void)state;
    float x[2] = {3, 4}, g[2] = {1, 1}, y[2];
    kvc_rmsnorm_f32(x, g, 2, 0.0f, y);
    assert_float_equal(y[0], 0.848528f, 1e-6);
    assert_float_equal(y[1], 1.131371f, 1e-6);
    float r[4] = {1, 2, 3, 4}, one[4] = {1, 1, 1, 1}, zero[4] = {0, 0, 0, 0}, o[4];
    kvc_rope_interleaved_f32(r, one, zero, 4, o);
    float w1[4] = {1, 3, 2, 4};
    for (int i = 0; i < 4; i++) assert_true(o[i] == w1[i]);
    kvc_rope_interleaved_f32(r, zero, one, 4, o);
    float w2[4] = {-2, -4, 1, 3};
    for (int i = 0; i < 4; i++) assert_true(o[i] == w2[i]);
}

/* A stored element of an int8 / fp8 cache against the value it quantises (y * inv). */
static void check_quant_elem(const void *cache, kvc_dtype dt, int64_t a, float y, float inv) {
    if (dt == KVC_DTYPE_F8E4M3) {
        assert_int_equal(((const uint8_t *)cache)[a], kvc_f32_to_fp8_e4m3(y * inv));
    } else {
        const int8_t q = ((const int8_t *)cache)[a];
        assert_true(fabs(q / inv - y) <= 0.5 / inv + 1e-6 || q == 127 || q == -128);
    }
}

/* Full 512 + 64 case against a scalar double-precision reference, plain and
 * NZ; int8 / fp8 with one static scale or per-token scales over latent + rope. */
static void check_mla_write(kvc_block_layout order, kvc_dtype nope_dt, bool per_token) {
    enum { T = 3, DC = 512, DR = 64, NB = 2, BS = 16 };
    float *kv = malloc(sizeof(float) * T * (DC + DR)), gamma[DC], cs[T * DR], sn[T * DR];
    srand(7);
    for (int i = 0; i < T * (DC + DR); i++) kv[i] = (float)((double)rand() / RAND_MAX * 2.0 - 1.0);
    for (int i = 0; i < DC; i++) gamma[i] = 0.5f + (float)i / DC;
    for (int i = 0; i < T * DR; i++) {
        cs[i] = cosf(0.01f * (float)i);
        sn[i] = sinf(0.01f * (float)i);
    }
    const bool quant = nope_dt == KVC_DTYPE_I8 || nope_dt == KVC_DTYPE_F8E4M3;
    const kvc_dtype rope_dt = quant ? nope_dt : KVC_DTYPE_BF16; /* one quantised row: latent and rope together */
    const size_t es = kvc_dtype_size(nope_dt), rs = kvc_dtype_size(rope_dt);
    void *nope = calloc((size_t)NB * BS * DC, es);
    void *rope = calloc((size_t)NB * BS * DR, rs);
    kvc_tensor cn = tensor4(nope, nope_dt, NB, BS, 1, DC), cr = tensor4(rope, rope_dt, NB, BS, 1, DR);
    int64_t slots[T] = {17, KVC_SLOT_SKIP, 2};
    float inv_scale = 40.0f, out_nope[T * DC], out_rope[T * DR], slot_scale[NB * BS];
    for (int i = 0; i < NB * BS; i++) slot_scale[i] = -1.0f;
    kvc_mla_write_params p = {.kv = kv,
                              .gamma = gamma,
                              .cos = cs,
                              .sin = sn,
                              .slots = slots,
                              .n_tokens = T,
                              .latent_dim = DC,
                              .rope_dim = DR,
                              .eps = 1e-6f,
                              .order = order,
                              .nope_cache = &cn,
                              .rope_cache = &cr,
                              .nope_inv_scale = quant && !per_token ? &inv_scale : NULL,
                              .slot_scale = per_token ? slot_scale : NULL,
                              .n_slot_scale = per_token ? NB * BS : 0,
                              .out_nope = out_nope,
                              .out_rope = out_rope};
    assert_int_equal(kvc_mla_write(&p), KVC_OK);
    const int64_t c0n = 32 / (int64_t)es, c0r = 32 / (int64_t)rs;
    const float qmax = nope_dt == KVC_DTYPE_I8 ? 127.0f : 448.0f;
    for (int t = 0; t < T; t++) {
        const float *row = kv + t * (DC + DR);
        float inv_t = inv_scale;
        if (per_token && slots[t] >= 0) { /* the token's scale: amax over latent and rope outputs / qmax */
            float amax = 0.0f;
            for (int i = 0; i < DC; i++) amax = fmaxf(amax, fabsf(out_nope[t * DC + i]));
            for (int i = 0; i < DR; i++) amax = fmaxf(amax, fabsf(out_rope[t * DR + i]));
            assert_true(slot_scale[slots[t]] == amax / qmax);
            inv_t = qmax / amax;
        }
        double ss = 0;
        for (int i = 0; i < DC; i++) ss += (double)row[i] * row[i];
        double inv = 1.0 / sqrt(ss / DC + 1e-6);
        for (int i = 0; i < DC; i++) {
            double want = row[i] * inv * gamma[i];
            assert_float_equal(out_nope[t * DC + i], want, 1e-5);
            if (slots[t] < 0) continue;
            int64_t p0 = slots[t] / BS, o = slots[t] % BS;
            int64_t a = order == KVC_BLOCK_NZ ? kvc_nz_index(p0, o, 0, i, BS, 1, DC, c0n) : slots[t] * DC + i;
            if (quant)
                check_quant_elem(nope, nope_dt, a, out_nope[t * DC + i], inv_t);
            else
                assert_float_equal(kvc_bf16_to_f32(((uint16_t *)nope)[a]), want, fabs(want) * 0.008 + 1e-6);
        }
        for (int i = 0; i < DR; i++) {
            int k = i % (DR / 2);
            double x1 = row[DC + 2 * k], x2 = row[DC + 2 * k + 1];
            double want =
                i < DR / 2 ? x1 * cs[t * DR + i] - x2 * sn[t * DR + i] : x2 * cs[t * DR + i] + x1 * sn[t * DR + i];
            assert_float_equal(out_rope[t * DR + i], want, 1e-6);
            if (slots[t] < 0) continue;
            int64_t p0 = slots[t] / BS, o = slots[t] % BS;
            int64_t a = order == KVC_BLOCK_NZ ? kvc_nz_index(p0, o, 0, i, BS, 1, DR, c0r) : slots[t] * DR + i;
            if (quant)
                check_quant_elem(rope, rope_dt, a, out_rope[t * DR + i], inv_t);
            else
                assert_float_equal(kvc_bf16_to_f32(((uint16_t *)rope)[a]), want, fabs(want) * 0.008 + 1e-6);
        }
    }
    if (per_token) assert_true(slot_scale[0] == -1.0f); /* slots not written keep their scale */
    /* misuse: a quantised cache without a scale or with both kinds, a float cache with one; bad slot */
    p.nope_inv_scale = quant && !per_token ? NULL : &inv_scale;
    assert_int_equal(kvc_mla_write(&p), KVC_EINVAL);
    p.nope_inv_scale = quant && !per_token ? &inv_scale : NULL;
    if (quant) { /* a float rope cache beside a quantised latent: one scale could not cover both */
        kvc_tensor fr = tensor4(rope, KVC_DTYPE_BF16, NB, BS, 1, DR);
        p.rope_cache = &fr;
        assert_int_equal(kvc_mla_write(&p), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), "rope cache"));
        p.rope_cache = &cr;
    }
    if (per_token) {
        p.n_slot_scale = NB * BS - 1;
        assert_int_equal(kvc_mla_write(&p), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), "slot_scale"));
        p.n_slot_scale = NB * BS;
        kv[5] = NAN;
        assert_int_equal(kvc_mla_write(&p), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), "token 0, channel 5"));
        kv[5] = 0.0f;
    }
    slots[0] = NB * BS;
    assert_int_equal(kvc_mla_write(&p), KVC_ERANGE);
    free(kv);
    free(nope);
    free(rope);
}

static void test_mla_write_plain(void **state) {
    (void)state;
    check_mla_write(KVC_BLOCK_BNBSND, KVC_DTYPE_BF16, false);
}
static void test_mla_write_nz(void **state) {
    (void)state;
    check_mla_write(KVC_BLOCK_NZ, KVC_DTYPE_BF16, false);
}
static void test_mla_write_fp8(void **state) {
    (void)state;
    check_mla_write(KVC_BLOCK_BNBSND, KVC_DTYPE_F8E4M3, false);
}
static void test_mla_write_nz_int8(void **state) {
    (void)state;
    check_mla_write(KVC_BLOCK_NZ, KVC_DTYPE_I8, false);
}
static void test_mla_write_token_int8(void **state) {
    (void)state;
    check_mla_write(KVC_BLOCK_BNBSND, KVC_DTYPE_I8, true);
}
static void test_mla_write_token_fp8_nz(void **state) {
    (void)state;
    check_mla_write(KVC_BLOCK_NZ, KVC_DTYPE_F8E4M3, true);
}

static void test_quantized_write(void **state) {
    (void)state;
    /* round half to even, saturation */
    assert_int_equal(kvc_quantize_i8(2.5f, 1.0f, 0.0f), 2);
    assert_int_equal(kvc_quantize_i8(3.5f, 1.0f, 0.0f), 4);
    assert_int_equal(kvc_quantize_i8(-2.5f, 1.0f, 0.0f), -2);
    assert_int_equal(kvc_quantize_i8(1000.0f, 1.0f, 0.0f), 127);
    assert_int_equal(kvc_quantize_i8(-1000.0f, 1.0f, 0.0f), -128);
    assert_int_equal(kvc_quantize_i8(1.0f, 10.0f, 0.5f), 10); /* 10.5 -> 10 */
    enum { NB = 2, BS = 4, N = 2, D = 4, T = 3 };
    int8_t cache[NB * BS * N * D] = {0};
    float upd[T * N * D];
    for (int i = 0; i < T * N * D; i++) upd[i] = (float)(i - 12) * 0.37f;
    float inv[N * D], off[N * D];
    for (int i = 0; i < N * D; i++) {
        inv[i] = 10.0f + (float)i;
        off[i] = (float)(i % 3) - 1.0f;
    }
    kvc_tensor c = tensor4(cache, KVC_DTYPE_I8, NB, BS, N, D), u = tensor3(upd, KVC_DTYPE_F32, T, N, D);
    int64_t slots[T] = {1, 6, KVC_SLOT_SKIP};
    assert_int_equal(kvc_write_slots_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, inv, off, N * D), KVC_OK);
    for (int t = 0; t < 2; t++)
        for (int ch = 0; ch < N * D; ch++) {
            int8_t q = cache[slots[t] * N * D + ch];
            /* dequantise with scale = 1/inv, read offset = -off: x ~ scale * (q - off) */
            double x = (1.0 / inv[ch]) * (q - off[ch]);
            assert_true(fabs(x - upd[t * N * D + ch]) <= 0.5 / inv[ch] + 1e-6);
        }
    assert_int_equal(kvc_write_slots_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, inv, off, 3), KVC_EINVAL);
    int8_t before[sizeof cache];
    memcpy(before, cache, sizeof cache);
    off[5] = INFINITY; /* wrote 127 for every value, NaN 0: refused, nothing written */
    assert_int_equal(kvc_write_slots_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, inv, off, N * D), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "offset[5] = inf must be finite"));
    off[5] = NAN;
    assert_int_equal(kvc_write_slots_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, inv, off, N * D), KVC_EINVAL);
    assert_memory_equal(before, cache, sizeof cache);
}

/* fp8 slot writes: every element is the saturating round-to-nearest-even
 * fp8 code of x * inv_scale, with one scale per tensor, per head or per
 * channel, in both paged orders and NZ; offsets and other scale counts are
 * refused with the cache unchanged. */
static void test_fp8_write(void **state) {
    (void)state;
    enum { NB = 2, BS = 16, N = 2, D = 32, T = 3, H = N * D };
    static uint8_t cache[NB * BS * H];
    float upd[T * H], inv[H];
    for (int i = 0; i < T * H; i++) upd[i] = (float)sin(0.7 * i) * (i % 11 == 0 ? 900.0f : 3.0f); /* some saturate */
    for (int i = 0; i < H; i++) inv[i] = 0.5f + 0.25f * (float)i;
    const kvc_dtype dts[2] = {KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    const kvc_block_layout orders[3] = {KVC_BLOCK_BNBSND, KVC_BLOCK_BNNBSD, KVC_BLOCK_NZ};
    const int64_t counts[3] = {1, N, H};
    int64_t slots[T] = {17, KVC_SLOT_SKIP, 2};
    for (int di = 0; di < 2; di++)
        for (int oi = 0; oi < 3; oi++)
            for (int ci = 0; ci < 3; ci++) {
                memset(cache, 0xaa, sizeof cache);
                kvc_tensor c = orders[oi] == KVC_BLOCK_BNNBSD ? tensor4(cache, dts[di], NB, N, BS, D)
                                                              : tensor4(cache, dts[di], NB, BS, N, D);
                kvc_tensor u = tensor3(upd, KVC_DTYPE_F32, T, N, D);
                assert_int_equal(kvc_write_slots_quant(&c, orders[oi], &u, slots, T, inv, NULL, counts[ci]), KVC_OK);
                for (int t = 0; t < T; t++) {
                    if (slots[t] < 0) continue;
                    const int64_t p = slots[t] / BS, o = slots[t] % BS;
                    for (int h = 0; h < N; h++)
                        for (int d = 0; d < D; d++) {
                            const int ch = h * D + d, qi = counts[ci] == 1 ? 0 : counts[ci] == N ? h : ch;
                            const float y = upd[t * H + ch] * inv[qi];
                            const uint8_t want =
                                dts[di] == KVC_DTYPE_F8E4M3 ? kvc_f32_to_fp8_e4m3(y) : kvc_f32_to_fp8_e5m2(y);
                            int64_t a = orders[oi] == KVC_BLOCK_NZ       ? kvc_nz_index(p, o, h, d, BS, N, D, 32)
                                        : orders[oi] == KVC_BLOCK_BNNBSD ? ((p * N + h) * BS + o) * D + d
                                                                         : (slots[t] * N + h) * D + d;
                            assert_int_equal(cache[a], want);
                        }
                }
                int written = 0;
                for (size_t i = 0; i < sizeof cache; i++) written += cache[i] != 0xaa;
                assert_true(written <= 2 * H); /* nothing outside the two written tokens */
            }
    uint8_t before[sizeof cache];
    memcpy(before, cache, sizeof cache);
    kvc_tensor c = tensor4(cache, KVC_DTYPE_F8E4M3, NB, BS, N, D), u = tensor3(upd, KVC_DTYPE_F32, T, N, D);
    float off[H] = {0};
    assert_int_equal(kvc_write_slots_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, inv, off, H), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "no offset"));
    assert_int_equal(kvc_write_slots_quant(&c, KVC_BLOCK_BNBSND, &u, slots, T, inv, NULL, 3), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "per head"));
    assert_memory_equal(before, cache, sizeof cache);
}

/* The scalar element access of the ops layer (ops/elem.h, inline for the built-in dtypes) and the
 * dtype table's converters give the same bits, both ways, for every built-in dtype that has them:
 * every 8- and 16-bit pattern, and f32 patterns of all kinds. */
static void test_elem_matches_dtype_table(void **state) {
    (void)state;
    enum { N = 1 << 16 };
    static uint8_t raw[4 * N], back[4 * N];
    for (int i = 0; i < N; i++) {
        const uint16_t h = (uint16_t)i;
        memcpy(raw + 2 * i, &h, 2);
        const uint32_t w = (uint32_t)i * 2654435761u;
        memcpy(raw + 2 * N + 2 * (i & ~1), &w, i % 2 ? 0 : 4);
    }
    for (int d = 0; d < KVC_DTYPE_COUNT; d++) {
        const kvc_dtype dt = (kvc_dtype)d;
        const kvc_dtype_traits *t = kvci_dtype_traits(dt);
        assert_non_null(t);
        if (t->to_f32 == NULL) continue;
        const int64_t n = 4 * N / t->block_bytes;
        for (int64_t i = 0; i < n; i++) {
            float a = kvci_elem_load(raw, dt, i), b;
            t->to_f32(raw, i, 1, &b);
            assert_true(memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b)));
            if (t->from_f32 == NULL || isnan(a)) continue;
            kvci_elem_store(back, dt, 0, a);
            t->from_f32(&a, 1, back, 1);
            assert_memory_equal(back, back + t->block_bytes, (size_t)t->block_bytes);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contiguous_scatter),     cmocka_unit_test(test_elem_matches_dtype_table),
        cmocka_unit_test(test_slot_scatter_bnbsnd),    cmocka_unit_test(test_slot_scatter_bnnbsd),
        cmocka_unit_test(test_slot_scatter_bnndbs),    cmocka_unit_test(test_nz_index_examples),
        cmocka_unit_test(test_nz_write_roundtrip),     cmocka_unit_test(test_rmsnorm_rope_vectors),
        cmocka_unit_test(test_mla_write_plain),        cmocka_unit_test(test_mla_write_nz),
        cmocka_unit_test(test_mla_write_nz_int8),      cmocka_unit_test(test_mla_write_token_int8),
        cmocka_unit_test(test_mla_write_token_fp8_nz), cmocka_unit_test(test_quantized_write),
        cmocka_unit_test(test_slot_duplicates),        cmocka_unit_test(test_fp8_write),
        cmocka_unit_test(test_mla_write_fp8),          cmocka_unit_test(test_contiguous_quant),
        cmocka_unit_test(test_slot_scatter_large),     cmocka_unit_test(test_half_rows_match_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
