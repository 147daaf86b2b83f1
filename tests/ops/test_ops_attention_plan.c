/* Attention as plan + run (ops/attn_plan.h): one plan over a step's
 * metadata, run over the tensors of several layers, gives each layer's
 * output bitwise as kvc_attention_cpu of that layer alone; a run refuses
 * (naming the tensor, writing nothing) a layer tensor unlike the plan's,
 * and a call fits a plan only with the plan's metadata and shapes. */
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn_fixture.h"
#include "kvcache/base.h"
#include "ops/attn_plan.h"

#define LAYERS 3

/* The output bytes of the fixture. */
static size_t out_bytes(const fx *f) { return (size_t)f->out_n * kvc_dtype_size(f->c.odt); }

/* A plan of p over a new workspace for `threads` threads (*ws: free with kvc_aligned_free, the plan with free). */
static kvci_attn_plan *plan_new(const kvc_attention_params *p, int threads, void **ws) {
    size_t bytes = 0;
    assert_int_equal(kvc_attention_cpu_workspace_size(p, threads, &bytes), KVC_OK);
    assert_int_equal(kvc_aligned_alloc(64, bytes, ws), KVC_OK);
    kvci_attn_plan *plan = malloc(sizeof *plan);
    const kvc_status st = kvci_attention_plan(plan, p, *ws, bytes);
    if (st != KVC_OK) fail_msg("plan: %s", kvc_last_error());
    return plan;
}

/* Plans over layer 0's call and runs layers 0, 1, 2, 0 (data from seeds 1, 2, 3, the same shapes and lengths);
 * each output equals kvc_attention_cpu of its layer alone bitwise. */
static void plan_runs_layers(const fx_cfg *base) {
    fx f[LAYERS];
    void *want[LAYERS];
    for (int l = 0; l < LAYERS; l++) {
        fx_cfg c = *base;
        c.seed = (uint32_t)(l + 1);
        fx_build(&f[l], &c);
        fx_run_cpu(&f[l].p);
        want[l] = malloc(out_bytes(&f[l]));
        memcpy(want[l], f[l].obuf, out_bytes(&f[l]));
        memset(f[l].obuf, 0x7f, out_bytes(&f[l]));
    }
    void *ws = NULL;
    kvci_attn_plan *plan = plan_new(&f[0].p, omp_get_max_threads(), &ws);
    const int order[] = {0, 1, 2, 0};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const int l = order[i];
        const kvci_attn_layer layer = kvci_attn_layer_of(&f[l].p);
        const kvc_status st = kvci_attention_run(plan, &layer);
        if (st != KVC_OK) fail_msg("run of layer %d: %s", l, kvc_last_error());
        if (memcmp(f[l].obuf, want[l], out_bytes(&f[l])) != 0)
            fail_msg("layer %d (run %zu) differs from kvc_attention_cpu of the layer alone", l, i);
        memset(f[l].obuf, 0x7f, out_bytes(&f[l]));
    }
    free(plan);
    kvc_aligned_free(ws);
    for (int l = 0; l < LAYERS; l++) {
        free(want[l]);
        fx_free(&f[l]);
    }
}

static fx_cfg decode_cfg(int64_t B, int64_t skv) {
    fx_cfg c = {0};
    c.layout = KVC_LAYOUT_TND;
    c.storage = KVC_KV_BLOCKS;
    c.blk = KVC_BLOCK_BNBSND;
    c.B = B;
    for (int64_t b = 0; b < B; b++) c.sq[b] = 1, c.skv[b] = skv + 7 * b;
    c.Nq = 8, c.Nkv = 2, c.D = c.Dv = 64;
    c.qdt = c.odt = KVC_DTYPE_F32;
    c.kvdt = KVC_DTYPE_BF16;
    c.bs = 16;
    c.mode = 3;
    c.pre = c.next = INT32_MAX;
    c.quant = -1;
    return c;
}

/* Batch-1 decode over a long context (split-K) and batch-8 decode (items), bf16 caches. */
static void test_decode_plan_runs_layers(void **state) {
    (void)state;
    fx_cfg one = decode_cfg(1, KVC_SMALL ? 700 : 2100);
    plan_runs_layers(&one);
    fx_cfg eight = decode_cfg(8, 40);
    plan_runs_layers(&eight);
}

/* Sliding window (mode 4) with sinks and lse, int8 caches with per-slot scales, keys in lanes, prefill. */
static void test_kinds_plan_runs_layers(void **state) {
    (void)state;
    fx_cfg w = decode_cfg(4, 90);
    w.mode = 4, w.pre = 31, w.next = 0, w.sinks = true, w.lse = true;
    plan_runs_layers(&w);
    fx_cfg q = decode_cfg(3, 70);
    q.kvdt = KVC_DTYPE_I8, q.quant = 3;
    plan_runs_layers(&q);
    fx_cfg lanes = decode_cfg(2, 50);
    lanes.blk = KVC_BLOCK_BNNDBS;
    plan_runs_layers(&lanes);
    fx_cfg pre = decode_cfg(2, 0);
    pre.sq[0] = pre.skv[0] = 45, pre.sq[1] = pre.skv[1] = 130;
    plan_runs_layers(&pre);
}

/* Absorbed MLA over a paged latent cache (value = latent, rope cache). */
static void test_mla_plan_runs_layers(void **state) {
    (void)state;
    fx_cfg c = decode_cfg(2, 80);
    c.Nkv = 1, c.D = c.Dv = 512, c.Dr = 64, c.mode = 0;
    plan_runs_layers(&c);
}

/* A layer tensor of another shape, dtype or presence is refused naming it, and the output is not written. */
static void test_run_refuses_other_tensors(void **state) {
    (void)state;
    fx_cfg c = decode_cfg(2, 40);
    c.sinks = true;
    fx f;
    fx_build(&f, &c);
    void *ws = NULL;
    kvci_attn_plan *plan = plan_new(&f.p, 1, &ws);
    memset(f.obuf, 0x7f, out_bytes(&f));
    kvci_attn_layer bad = kvci_attn_layer_of(&f.p);
    bad.k.shape[0] -= 1; /* fewer blocks than the block table was checked against */
    assert_int_equal(kvci_attention_run(plan, &bad), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "layer tensor k has extent"));
    bad = kvci_attn_layer_of(&f.p);
    bad.sinks.data = NULL;
    assert_int_equal(kvci_attention_run(plan, &bad), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "layer tensor sinks is absent"));
    bad = kvci_attn_layer_of(&f.p);
    bad.v.dtype = KVC_DTYPE_F16;
    assert_int_equal(kvci_attention_run(plan, &bad), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "layer tensor v is given f16"));
    for (size_t i = 0; i < out_bytes(&f); i++) assert_int_equal(((uint8_t *)f.obuf)[i], 0x7f);
    free(plan);
    kvc_aligned_free(ws);
    fx_free(&f);
}

/* A call fits a plan with the plan's metadata pointers and scalars and tensors of its shapes only. */
static void test_fits(void **state) {
    (void)state;
    fx_cfg c = decode_cfg(2, 40);
    fx a, b;
    fx_build(&a, &c);
    c.seed = 9;
    fx_build(&b, &c);
    void *ws = NULL;
    kvci_attn_plan *plan = plan_new(&a.p, 1, &ws);
    assert_true(kvci_attention_plan_fits(plan, &a.p));
    assert_false(kvci_attention_plan_fits(plan, &b.p)); /* other length arrays and block table */
    kvc_attention_params p = a.p;                       /* a's metadata, b's layer tensors */
    p.q = b.p.q, p.k = b.p.k, p.v = b.p.v, p.out = b.p.out;
    assert_true(kvci_attention_plan_fits(plan, &p));
    p.scale *= 2.0;
    assert_false(kvci_attention_plan_fits(plan, &p));
    p = a.p;
    p.logit_softcap = 50.0; /* another soft-cap: another call */
    assert_false(kvci_attention_plan_fits(plan, &p));
    p = a.p;
    p.attention_chunk_size = 8; /* chunked local attention: another call */
    assert_false(kvci_attention_plan_fits(plan, &p));
    p = a.p;
    p.q.shape[1] = 4, p.q.shape[2] *= 2; /* the same bytes, another head split */
    assert_false(kvci_attention_plan_fits(plan, &p));
    p = a.p;
    p.kv_lens = b.p.kv_lens;
    assert_false(kvci_attention_plan_fits(plan, &p));
    p = a.p;
    const kvc_paged_kv other = {0};
    p.paged_kv = &other; /* another paged K/V descriptor (by pointer) */
    assert_false(kvci_attention_plan_fits(plan, &p));
    free(plan);
    kvc_aligned_free(ws);
    fx_free(&a);
    fx_free(&b);
}

/* Planning refuses what kvc_attention_check refuses, with its message. */
static void test_plan_validates(void **state) {
    (void)state;
    fx_cfg c = decode_cfg(2, 40);
    fx f;
    fx_build(&f, &c);
    void *ws = NULL;
    kvci_attn_plan *plan = plan_new(&f.p, 1, &ws);
    ((int32_t *)f.tblbuf)[1] = (int32_t)f.nblocks; /* a block id past the cache */
    assert_int_equal(kvc_attention_check(&f.p), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "block_table[0][1]"));
    assert_int_equal(kvci_attention_plan(plan, &f.p, ws, 1 << 20), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "block_table[0][1]"));
    ((int32_t *)f.tblbuf)[1] = 0;
    assert_int_equal(kvci_attention_plan(plan, &f.p, ws, 64), KVC_EINVAL); /* workspace too small */
    assert_non_null(strstr(kvc_last_error(), "attention plan: workspace"));
    free(plan);
    kvc_aligned_free(ws);
    fx_free(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_plan_runs_layers),
        cmocka_unit_test(test_kinds_plan_runs_layers),
        cmocka_unit_test(test_mla_plan_runs_layers),
        cmocka_unit_test(test_run_refuses_other_tensors),
        cmocka_unit_test(test_fits),
        cmocka_unit_test(test_plan_validates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
