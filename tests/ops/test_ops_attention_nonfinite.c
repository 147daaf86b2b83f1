/* NaN and Inf in the inputs of the fast CPU attention kernel (issue 23 #3;
 * docs/ops.md "NaN and Inf"). A table of cases (NaN / Inf in a visible key,
 * a masked key, the query, a value, a dequantisation scale, the sink) x KV
 * dtype (f32, f16, bf16, int8, fp8 e4m3 / e5m2, scaled and unscaled) x
 * paged layout (BNBSND, BNNDBS keys in lanes) x decode / prefill, each run
 * on every SIMD table this CPU runs and compared with the float64
 * reference element by element: NaN where it is NaN (in the canonical
 * quiet NaN's bits on every path), the same infinity where it is
 * infinite, finite values within tolerance; and the AVX-512 output
 * bitwise equal to the AVX2 one. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn_fixture.h"
#include "ops/cpu/simd.h"

#define NF_B0 0  /* the request whose inputs are poisoned (request 1 never is) */
#define NF_G0 0  /* its KV head */
#define NF_D0 3  /* key / query channel */
#define NF_D1 5  /* value channel */
#define NF_SQ 16 /* prefill query rows */

/* What the reference must show for a case (checked, so that no case passes vacuously). */
typedef enum nf_expect { NF_FINITE, NF_SOME_NAN, NF_SOME_INF } nf_expect;

/* Stores x as element idx of a K/V buffer of dtype dt; false when dt cannot hold it. */
static bool put_kv(void *buf, kvc_dtype dt, int64_t idx, float x) {
    if (dt == KVC_DTYPE_I8) return false;
    if (fx_fp8(dt)) {
        const bool e5 = dt == KVC_DTYPE_F8E5M2;
        if (isinf(x) && !e5) return false;
        uint8_t code;
        if (isnan(x))
            code = e5 ? 0x7e : 0x7f;
        else if (isinf(x))
            code = x > 0 ? 0x7c : 0xfc;
        else
            code = e5 ? kvc_f32_to_fp8_e5m2(x) : kvc_f32_to_fp8_e4m3(x);
        ((uint8_t *)buf)[idx] = code;
        return true;
    }
    fx_store(buf, dt, idx, x);
    return true;
}

/* The poisoned key of request NF_B0: 12 before its last (not in the last 8-key vector of its chunk);
 * prefill rows i >= 4 see it (causal), rows below do not. */
static int64_t key_at(const fx *f) { return f->c.skv[NF_B0] - 12; }

static void put_query(fx *f, int64_t i, int64_t n, int64_t d, float x) {
    ((float *)f->qbuf)[fx_qidx(f, false, NF_B0, i, n, d, f->c.D)] = x;
}

static bool put_key(fx *f, int64_t j, int64_t d, float x) {
    return put_kv(f->kbuf, f->c.kvdt, fx_kvidx(f, 0, NF_B0, j, NF_G0, d, f->c.D, kvc_dtype_size(f->c.kvdt)), x);
}

static bool put_value(fx *f, int64_t j, int64_t d, float x) {
    return put_kv(f->vbuf, f->c.kvdt, fx_kvidx(f, 1, NF_B0, j, NF_G0, d, f->c.Dv, kvc_dtype_size(f->c.kvdt)), x);
}

/* Makes query channel NF_D0 positive in every row of KV head NF_G0 (so that the key's sign decides the score's). */
static void positive_query_channel(fx *f) {
    const int64_t G = f->c.Nq / f->c.Nkv;
    for (int64_t i = 0; i < f->c.sq[NF_B0]; i++)
        for (int64_t n = NF_G0 * G; n < (NF_G0 + 1) * G; n++) {
            float *q = &((float *)f->qbuf)[fx_qidx(f, false, NF_B0, i, n, NF_D0, f->c.D)];
            *q = fabsf(*q) + 0.5f;
        }
}

/* A scale (or offset) element read for key j, head NF_G0, channel d of K (is_v false) or V. */
static bool put_scale(fx *f, bool is_v, int64_t j, int64_t d, float x) {
    if (!f->p.key_scale.data) return false;
    (is_v ? f->vs : f->ks)[fx_quant_i(f, is_v, NF_B0, j, NF_G0, d, is_v ? f->c.Dv : f->c.D)] = x;
    return true;
}

static bool nan_key(fx *f) { return put_key(f, key_at(f), NF_D0, NAN); }
static bool inf_key(fx *f) {
    positive_query_channel(f);
    return put_key(f, key_at(f), NF_D0, INFINITY);
}
static bool ninf_key(fx *f) {
    positive_query_channel(f);
    return put_key(f, key_at(f), NF_D0, -INFINITY);
}
/* every key of the head scores -inf for the rows of the head: empty rows */
static bool all_keys_ninf(fx *f) {
    positive_query_channel(f);
    for (int64_t j = 0; j < f->c.skv[NF_B0]; j++)
        if (!put_key(f, j, NF_D0, -INFINITY)) return false;
    return true;
}
/* A -inf key, or every key -inf, and a NaN value scale for the key: the rows of head NF_G0 of request NF_B0 do not
 * read it (the key is left out; the rows are empty, with a sink in decode); other rows that share the scale (per
 * channel: request 1's; per token: the other head's) are NaN in what it dequantises. */
static bool ninf_key_nan_value_scale(fx *f) { return ninf_key(f) && put_scale(f, true, key_at(f), NF_D1, NAN); }
static bool all_keys_ninf_nan_value_scale(fx *f) {
    return all_keys_ninf(f) && put_scale(f, true, key_at(f), NF_D1, NAN);
}
/* the key is masked for every row; its K and V rows (and per-token scales) are NaN */
static bool masked_nan_key(fx *f) {
    const int64_t j = key_at(f);
    for (int64_t i = 0; i < f->sqmax; i++) ((uint8_t *)f->mbuf)[(NF_B0 * f->sqmax + i) * f->skvmax + j] = 1;
    bool any = false;
    for (int64_t d = 0; d < f->c.D; d++) any |= put_key(f, j, d, NAN);
    for (int64_t d = 0; d < f->c.Dv; d++) any |= put_value(f, j, d, NAN);
    if (f->c.quant == 1) {
        f->ks[fx_quant_i(f, false, NF_B0, j, NF_G0, 0, f->c.D)] = NAN;
        f->vs[fx_quant_i(f, true, NF_B0, j, NF_G0, 0, f->c.Dv)] = NAN;
        any = true;
    }
    return any;
}
static bool nan_query(fx *f) {
    put_query(f, f->c.sq[NF_B0] - 1, 0, NF_D0, NAN);
    return true;
}
static bool inf_query(fx *f) {
    put_query(f, f->c.sq[NF_B0] - 1, 0, NF_D0, INFINITY);
    return true;
}
static bool nan_value(fx *f) { return put_value(f, key_at(f), NF_D1, NAN); }
static bool inf_value(fx *f) { return put_value(f, key_at(f), NF_D1, INFINITY); }
/* NaN in the value of a key whose weight underflows (score thousands below the row's maximum) */
static bool nan_value_far(fx *f) {
    if (fx_fp8(f->c.kvdt)) return false; /* fp8 cannot hold a key that far down */
    positive_query_channel(f);
    return put_key(f, key_at(f), NF_D0, -30000.0f) && put_value(f, key_at(f), NF_D1, NAN);
}
static bool nan_key_scale(fx *f) { return put_scale(f, false, key_at(f), NF_D0, NAN); }
static bool inf_key_scale(fx *f) { return put_scale(f, false, key_at(f), NF_D0, INFINITY); }
static bool nan_value_scale(fx *f) { return put_scale(f, true, key_at(f), NF_D1, NAN); }
static bool inf_value_scale(fx *f) { return put_scale(f, true, key_at(f), NF_D1, INFINITY); }
static bool sink_to(fx *f, float x) {
    if (!f->sbuf) return false;
    ((float *)f->sbuf)[0] = x;
    return true;
}
static bool nan_sink(fx *f) { return sink_to(f, NAN); }
static bool inf_sink(fx *f) { return sink_to(f, INFINITY); }
static bool ninf_sink(fx *f) { return sink_to(f, -INFINITY); }

typedef struct nf_case {
    const char *name;
    bool (*poison)(fx *f); /* false: not applicable to this dtype / quantisation */
    nf_expect expect;
    bool mask; /* explicit mask (mode 1) instead of causal */
} nf_case;

static const nf_case cases[] = {
    {"NaN key", nan_key, NF_SOME_NAN, false},
    {"NaN in a masked key", masked_nan_key, NF_FINITE, true},
    {"+Inf key", inf_key, NF_SOME_NAN, false},
    {"-Inf key", ninf_key, NF_FINITE, false},
    {"every key -Inf", all_keys_ninf, NF_FINITE, false},
    {"-Inf key, NaN value scale", ninf_key_nan_value_scale, NF_SOME_NAN, false},
    {"every key -Inf, NaN value scale", all_keys_ninf_nan_value_scale, NF_SOME_NAN, false},
    {"NaN query", nan_query, NF_SOME_NAN, false},
    {"+Inf query", inf_query, NF_SOME_NAN, false},
    {"NaN value", nan_value, NF_SOME_NAN, false},
    {"+Inf value", inf_value, NF_SOME_INF, false},
    {"NaN value behind an underflowing weight", nan_value_far, NF_SOME_NAN, false},
    {"NaN key scale", nan_key_scale, NF_SOME_NAN, false},
    {"+Inf key scale", inf_key_scale, NF_SOME_NAN, false},
    {"NaN value scale", nan_value_scale, NF_SOME_NAN, false},
    {"+Inf value scale", inf_value_scale, NF_SOME_NAN, false},
    {"NaN sink", nan_sink, NF_SOME_NAN, false},
    {"+Inf sink", inf_sink, NF_SOME_NAN, false},
    {"-Inf sink", ninf_sink, NF_FINITE, false},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static bool canonical_nan(float x) {
    const float q = NAN;
    return memcmp(&x, &q, sizeof x) == 0;
}

/* got against want: NaN only as the canonical NaN, infinities equal, finite values within 1e-5 (relative and absolute).
 */
static bool agrees(float got, float want) {
    if (isnan(want)) return canonical_nan(got);
    if (isinf(want)) return got == want;
    return isfinite(got) && fabs((double)got - (double)want) <= 1e-5 * (1.0 + fabs((double)want));
}

/* Output and lse of one run (TND: no padding, every element written). */
typedef struct nf_result {
    float *out, *lse;
} nf_result;

static nf_result result_of(const fx *f) {
    nf_result r = {malloc(sizeof(float) * (size_t)f->out_n), malloc(sizeof(float) * (size_t)f->lse_n)};
    memcpy(r.out, f->obuf, sizeof(float) * (size_t)f->out_n);
    memcpy(r.lse, f->lsebuf, sizeof(float) * (size_t)f->lse_n);
    return r;
}

static void result_free(nf_result *r) { free(r->out), free(r->lse); }

static fx_cfg case_cfg(kvc_dtype kvdt, int quant, kvc_block_layout blk, bool prefill, const nf_case *cs) {
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = KVC_LAYOUT_TND, c.storage = KVC_KV_BLOCKS, c.blk = blk, c.B = 2, c.Nkv = 2, c.Nq = 8;
    c.D = c.Dv = 16, c.qdt = KVC_DTYPE_F32, c.kvdt = kvdt, c.odt = KVC_DTYPE_F32;
    c.mode = cs->mask ? 1 : 3, c.explicit_mask = cs->mask, c.pre = c.next = INT32_MAX;
    c.quant = quant, c.offsets = kvdt == KVC_DTYPE_I8, c.bs = 16, c.lse = true, c.permute_blocks = true;
    c.sinks = !prefill; /* decode rows with a sink, prefill rows without: both empty-row forms */
    c.seed = 77u + (uint32_t)kvdt * 7u + (uint32_t)(quant + 1) * 131u + (uint32_t)prefill;
    const int64_t sq = prefill ? NF_SQ : 1;
    c.sq[0] = c.sq[1] = sq;
    c.skv[0] = KVC_SMALL ? 70 : prefill ? 100 : 600; /* decode: beyond one 512-key chunk, records merged (split-K) */
    c.skv[1] = 37;
    return c;
}

/* One case on every table: returns the number of runs compared. */
static int check_case(const nf_case *cs, kvc_dtype kvdt, int quant, kvc_block_layout blk, bool prefill) {
    fx_cfg c = case_cfg(kvdt, quant, blk, prefill, cs);
    fx f;
    fx_build(&f, &c);
    if (!cs->poison(&f)) {
        fx_free(&f);
        return 0;
    }
    char what[200];
    snprintf(what, sizeof what, "%s, kv %s quant %d, %s, %s", cs->name, kvc_dtype_name(kvdt), quant,
             blk == KVC_BLOCK_BNNDBS ? "BNNDBS" : "BNBSND", prefill ? "prefill" : "decode");
    assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
    nf_result want = result_of(&f);
    int64_t nans = 0, infs = 0;
    for (int64_t e = 0; e < f.out_n; e++) nans += isnan(want.out[e]), infs += isinf(want.out[e]);
    if (cs->expect == NF_FINITE && nans + infs)
        fail_msg("%s: the reference has %lld non-finite outputs", what, (long long)(nans + infs));
    if (cs->expect == NF_SOME_NAN && !nans) fail_msg("%s: the reference has no NaN output", what);
    if (cs->expect == NF_SOME_INF && !infs) fail_msg("%s: the reference has no infinite output", what);
    const kvc_simd_table *tables[4] = {&kvc_simd_portable, kvci_simd_avx2_table(), kvci_simd_avx512_table(),
                                       kvci_simd_amx_table()};
    nf_result got[4] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    int runs = 0;
    for (int t = 0; t < 4; t++) {
        if (!kvci_simd_cpu_runs(tables[t])) continue;
        kvci_simd_override(tables[t]);
        memset(f.obuf, 0, sizeof(float) * (size_t)f.out_n);
        memset(f.lsebuf, 0, sizeof(float) * (size_t)f.lse_n);
        fx_run_cpu(&f.p);
        kvci_simd_override(NULL);
        got[t] = result_of(&f);
        for (int64_t e = 0; e < f.out_n; e++)
            if (!agrees(got[t].out[e], want.out[e]))
                fail_msg("%s, %s: output %lld (row %lld, channel %lld) is %g (0x%08x), the reference %g", what,
                         tables[t]->name, (long long)e, (long long)(e / c.Dv), (long long)(e % c.Dv), got[t].out[e],
                         *(const uint32_t *)&got[t].out[e], want.out[e]);
        for (int64_t e = 0; e < f.lse_n; e++)
            if (!agrees(got[t].lse[e], want.lse[e]))
                fail_msg("%s, %s: lse %lld is %g, the reference %g", what, tables[t]->name, (long long)e, got[t].lse[e],
                         want.lse[e]);
        runs++;
    }
    if (got[1].out && got[2].out &&
        (memcmp(got[1].out, got[2].out, sizeof(float) * (size_t)f.out_n) ||
         memcmp(got[1].lse, got[2].lse, sizeof(float) * (size_t)f.lse_n)))
        fail_msg("%s: avx512 differs from avx2", what);
    for (int t = 0; t < 4; t++) result_free(&got[t]);
    result_free(&want);
    fx_free(&f);
    return runs;
}

/* KV dtype and quantisation granularity pairs (fx_cfg.quant): float caches unscaled, int8 per token and per
 * channel (zero points on), fp8 unscaled, per token and per channel. */
static const struct {
    kvc_dtype dt;
    int quant;
} kv_forms[] = {
    {KVC_DTYPE_F32, -1},    {KVC_DTYPE_F16, -1},    {KVC_DTYPE_BF16, -1},   {KVC_DTYPE_I8, 1},
    {KVC_DTYPE_I8, 10},     {KVC_DTYPE_F8E4M3, -1}, {KVC_DTYPE_F8E4M3, 1},  {KVC_DTYPE_F8E4M3, 10},
    {KVC_DTYPE_F8E5M2, -1}, {KVC_DTYPE_F8E5M2, 1},  {KVC_DTYPE_F8E5M2, 10},
};

static void test_nonfinite_table(void **state) {
    (void)state;
    const kvc_block_layout blks[2] = {KVC_BLOCK_BNBSND, KVC_BLOCK_BNNDBS};
    int runs = 0, applied[N_CASES] = {0}, turn = 0;
    for (int ci = 0; ci < N_CASES; ci++)
        for (size_t k = 0; k < sizeof kv_forms / sizeof kv_forms[0]; k++)
            for (int bi = 0; bi < 2; bi++)
                for (int prefill = 0; prefill < 2; prefill++, turn++) {
                    if (KVC_SMALL && turn % 4 != (ci + (int)k) % 4) continue; /* ASan: one of the four, in turn */
                    const int n = check_case(&cases[ci], kv_forms[k].dt, kv_forms[k].quant, blks[bi], prefill);
                    runs += n;
                    applied[ci] += n > 0;
                }
    for (int ci = 0; ci < N_CASES; ci++)
        if (!applied[ci]) fail_msg("case %s never applied", cases[ci].name);
    assert_true(runs > (KVC_SMALL ? 75 : 300));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nonfinite_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
