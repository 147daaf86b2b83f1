/* The AMX path of the CPU attention kernel (bf16 K/V rows on TDPBF16PS
 * tiles, ops/cpu/attn_amx.h): against the float64 reference over head dims
 * (64, 128, 80 with a channel tail), GQA ratios 1-8, mask modes 2-4 and 0
 * (explicit mask), sinks, ragged query and key lengths across 512-key
 * chunks, f32 and bf16 queries, paged (block sizes 16-128, including 48,
 * whose key tiles cross blocks) and contiguous K/V; and its bitwise
 * invariances: each request alone gives its rows of the batch, one thread
 * gives the bytes of two, and a decode step gives the last prefill row
 * (also with infinite key channels among keys read in place).
 * Skipped where the CPU or the OS does not offer AMX. The float64 oracle is
 * the fixture's own (fx_oracle), with the bound of the other paths' tests. */
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

/* The AMX table forced, or a skip where this CPU cannot run it. */
static void force_amx(void) {
    if (!kvci_simd_cpu_runs(kvci_simd_amx_table())) skip();
    kvci_simd_override(kvci_simd_amx_table());
}

/* Worst error of the kernel's output and lse against the fixture's float64 oracle (<= 1 passes). */
static double amx_vs_oracle(fx *f) {
    fx_run_cpu(&f->p);
    const int64_t n = f->c.B * f->sqmax * f->c.Nq;
    double *out = malloc(sizeof(double) * (size_t)(n * f->c.Dv + 1)), *lse = malloc(sizeof(double) * (size_t)(n + 1));
    fx_oracle(f, out, lse);
    const double e = fx_check(f, out, lse, 1e-6, 1e-6);
    free(out), free(lse);
    return e;
}

static fx_cfg amx_cfg(uint32_t *rs, kvc_attn_layout layout, int mode, int D, int G) {
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = layout;
    const int bss[4] = {16, 48, 64, 128};
    c.storage = fx_rng(rs) % 3 == 0 ? KVC_KV_CONTIGUOUS : KVC_KV_BLOCKS;
    if (fx_tlayout(layout) && c.storage == KVC_KV_CONTIGUOUS) c.storage = KVC_KV_BLOCKS; /* packed K/V: sq == skv */
    c.blk = layout == KVC_LAYOUT_TND && fx_rng(rs) % 2 ? KVC_BLOCK_BNNBSD : KVC_BLOCK_BNBSND;
    c.bs = bss[fx_rng(rs) % 4];
    c.B = 1 + (int64_t)(fx_rng(rs) % 3);
    for (int64_t b = 0; b < c.B; b++) {
        c.sq[b] = fx_rng(rs) % 4 == 0 ? 1 : 1 + (int64_t)(fx_rng(rs) % (KVC_SMALL ? 20 : 70));
        c.skv[b] = c.sq[b] + (int64_t)(fx_rng(rs) % (KVC_SMALL ? 100 : 700));
    }
    c.Nkv = 1 + (int)(fx_rng(rs) % 2), c.Nq = c.Nkv * G, c.D = c.Dv = D;
    c.qdt = fx_rng(rs) % 2 ? KVC_DTYPE_F32 : KVC_DTYPE_BF16, c.kvdt = KVC_DTYPE_BF16, c.odt = KVC_DTYPE_F32;
    c.mode = mode, c.explicit_mask = mode <= 1;
    c.pre = mode == 4 ? 1 + (int64_t)(fx_rng(rs) % 300) : INT32_MAX;
    c.next = mode == 4 ? (int64_t)(fx_rng(rs) % 3) : INT32_MAX;
    c.sinks = fx_rng(rs) % 2, c.lse = true, c.quant = -1, c.permute_blocks = true, c.extra_blocks = 1;
    c.seed = fx_rng(rs);
    return c;
}

static void test_amx_vs_oracle(void **state) {
    (void)state;
    force_amx();
    const kvc_attn_layout layouts[3] = {KVC_LAYOUT_TND, KVC_LAYOUT_BSND, KVC_LAYOUT_BNSD};
    const int dims[3] = {64, 128, 80}, gs[4] = {1, 2, 4, 8}, modes[4] = {0, 2, 3, 4};
    uint32_t rs = 0xa3c5u;
    for (int li = 0; li < 3; li++)
        for (int di = 0; di < 3; di++)
            for (int gi = 0; gi < 4; gi++)
                for (int mi = 0; mi < 4; mi++) {
                    fx_cfg c = amx_cfg(&rs, layouts[li], modes[mi], dims[di], gs[gi]);
                    fx f;
                    fx_build(&f, &c);
                    const double e = amx_vs_oracle(&f);
                    if (e > 1.0)
                        fail_msg("layout %s mode %d D %d G %d B %lld bs %d storage %d: error %g",
                                 kvc_attn_layout_name(c.layout), c.mode, c.D, gs[gi], (long long)c.B, c.bs,
                                 (int)c.storage * 10 + (int)c.blk, e);
                    fx_free(&f);
                }
    kvci_simd_override(NULL);
}

/* Output bytes of one run. */
static float *output_copy(fx *f) {
    fx_run_cpu(&f->p);
    float *o = malloc(sizeof(float) * (size_t)f->out_n);
    memcpy(o, f->obuf, sizeof(float) * (size_t)f->out_n);
    return o;
}

/* Prefill of three ragged requests over several chunks: each request alone, and one thread, give the batch's bytes. */
static void test_amx_batch_invariance(void **state) {
    (void)state;
    force_amx();
    for (int G = 1; G <= 8; G *= 2) {
        fx_cfg c;
        memset(&c, 0, sizeof c);
        c.layout = KVC_LAYOUT_TND, c.storage = KVC_KV_BLOCKS, c.blk = KVC_BLOCK_BNBSND, c.bs = 48, c.B = 3;
        c.Nkv = 2, c.Nq = 2 * G, c.D = c.Dv = 128, c.qdt = KVC_DTYPE_F32, c.kvdt = KVC_DTYPE_BF16;
        c.odt = KVC_DTYPE_F32, c.mode = 3, c.pre = c.next = INT32_MAX, c.sinks = true, c.quant = -1;
        c.permute_blocks = true, c.seed = 91u + (uint32_t)G;
        c.sq[0] = KVC_SMALL ? 37 : 150, c.skv[0] = KVC_SMALL ? 90 : 1100;
        c.sq[1] = 1, c.skv[1] = KVC_SMALL ? 60 : 700;
        c.sq[2] = 19, c.skv[2] = 19;
        fx f;
        fx_build(&f, &c);
        float *all = output_copy(&f);
        omp_set_num_threads(1);
        float *one = output_copy(&f);
        omp_set_num_threads(2);
        assert_memory_equal(one, all, sizeof(float) * (size_t)f.out_n);
        for (int64_t b = 0; b < c.B; b++) {
            kvc_attention_params p1 = f.p;
            const int64_t r0 = b ? f.cuq[b - 1] : 0, rows = f.cuq[b] - r0, n = rows * c.Nq * c.Dv;
            int64_t cu1 = rows;
            p1.batch = 1, p1.q_lens = &cu1, p1.kv_lens = &f.dkv[b];
            p1.q.data = (float *)f.qbuf + r0 * c.Nq * c.D, p1.q.shape[0] = rows;
            p1.out.data = (float *)f.obuf + r0 * c.Nq * c.Dv, p1.out.shape[0] = rows;
            p1.lse.data = NULL;
            p1.block_table.data = (int32_t *)f.tblbuf + b * f.width, p1.block_table.shape[0] = 1;
            memset(f.obuf, 0xff, sizeof(float) * (size_t)f.out_n);
            fx_run_cpu(&p1);
            if (memcmp((float *)f.obuf + r0 * c.Nq * c.Dv, all + r0 * c.Nq * c.Dv, sizeof(float) * (size_t)n))
                fail_msg("G %d: request %lld alone differs from the batch", G, (long long)b);
        }
        free(all), free(one);
        fx_free(&f);
    }
    kvci_simd_override(NULL);
}

/* Decode equals the last prefill row with infinite key channels among keys read in place (D 64, blocks of 16,
 * GQA 4: the decode's scores take the keys as the A operand, the prefill's pack them). The last row's query
 * channel against each is +-(1 + 2^-20) (parts 1, 2^-20, 0), so the score is -inf (the key weighs 0, the row stays
 * finite) when the tile that came out non-finite is scored again without the channel and its term added in f32,
 * and NaN when the tile's own sum of the parts' products (one of them 0 x inf) stands. */
static void test_amx_decode_nonfinite_keys(void **state) {
    (void)state;
    force_amx();
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = KVC_LAYOUT_TND, c.storage = KVC_KV_BLOCKS, c.blk = KVC_BLOCK_BNBSND, c.bs = 16, c.B = 1;
    c.Nkv = 2, c.Nq = 8, c.D = c.Dv = 64, c.qdt = KVC_DTYPE_F32, c.kvdt = KVC_DTYPE_BF16, c.odt = KVC_DTYPE_F32;
    c.mode = 3, c.pre = c.next = INT32_MAX, c.quant = -1, c.permute_blocks = true, c.seed = 29u;
    c.sq[0] = 40, c.skv[0] = 300;
    fx f;
    fx_build(&f, &c);
    const int64_t last = c.sq[0] - 1, n = c.Nq * c.Dv;
    const struct {
        int64_t j, g, d;
        uint16_t bits; /* bf16 -inf, +inf */
        float q;
    } poison[2] = {{37, 0, 5, 0xff80, 1.0f + 0x1p-20f}, {130, 1, 62, 0x7f80, -1.0f - 0x1p-20f}};
    for (int i = 0; i < 2; i++) {
        ((uint16_t *)f.kbuf)[fx_kvidx(&f, 0, 0, poison[i].j, poison[i].g, poison[i].d, c.D, 2)] = poison[i].bits;
        for (int64_t h = 0; h < 4; h++)
            ((float *)f.qbuf)[fx_qidx(&f, false, 0, last, poison[i].g * 4 + h, poison[i].d, c.D)] = poison[i].q;
    }
    float *all = output_copy(&f);
    for (int64_t e = 0; e < n; e++) assert_true(isfinite(all[last * n + e]));
    kvc_attention_params p1 = f.p;
    int64_t cu1 = 1;
    p1.q_lens = &cu1, p1.q.data = (float *)f.qbuf + last * c.Nq * c.D, p1.q.shape[0] = 1;
    p1.out.data = f.obuf, p1.out.shape[0] = 1, p1.lse.data = NULL;
    memset(f.obuf, 0xff, sizeof(float) * (size_t)n);
    fx_run_cpu(&p1);
    assert_memory_equal(f.obuf, all + last * n, sizeof(float) * (size_t)n);
    free(all);
    fx_free(&f);
}

/* The AMX path's bits differ from the AVX-512 path's (its own arithmetic), both within the reference's bound:
 * the AMX run is not the AVX-512 one under another name. */
static void test_amx_is_its_own_path(void **state) {
    (void)state;
    force_amx();
    uint32_t rs = 0x77u;
    fx_cfg c = amx_cfg(&rs, KVC_LAYOUT_TND, 3, 128, 4);
    fx f;
    fx_build(&f, &c);
    float *amx = output_copy(&f);
    kvci_simd_override(kvci_simd_avx512_table());
    float *avx = output_copy(&f);
    kvci_simd_override(NULL);
    assert_true(memcmp(amx, avx, sizeof(float) * (size_t)f.out_n) != 0);
    free(amx), free(avx);
    fx_free(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amx_vs_oracle),
        cmocka_unit_test(test_amx_batch_invariance),
        cmocka_unit_test(test_amx_is_its_own_path),
        cmocka_unit_test(test_amx_decode_nonfinite_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
