/* The fast CPU attention kernel: randomised comparison with the float64
 * reference over layouts x mask modes x KV dtypes x GQA ratios (both SIMD
 * tables), and bitwise determinism (memcmp) across block size, paging,
 * block permutation, batch composition and thread count. */
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

static void run_cpu(kvc_attention_params *p) {
    size_t bytes = 0;
    assert_int_equal(kvc_attention_cpu_workspace_size(p, omp_get_max_threads(), &bytes), KVC_OK);
    void *ws = NULL;
    assert_int_equal(kvc_aligned_alloc(64, bytes, &ws), KVC_OK);
    kvc_status st = kvc_attention_cpu(p, ws, bytes);
    if (st != KVC_OK) fail_msg("attention_cpu: %s", kvc_last_error());
    kvc_aligned_free(ws);
}

/* Runs the kernel on a fixture and returns a copy of its output bytes. */
static void *cpu_bytes(fx *f, size_t *n) {
    run_cpu(&f->p);
    *n = (size_t)f->out_n * kvc_dtype_size(f->c.odt);
    void *o = malloc(*n);
    memcpy(o, f->obuf, *n);
    return o;
}

/* The reference's output and lse of the fixture as oracle arrays in fx_check's form; free() both. */
static void ref_arrays(fx *f, double **out, double **lse) {
    assert_int_equal(kvc_attention_ref(&f->p), KVC_OK);
    const int64_t rows = f->c.B * f->sqmax * f->c.Nq;
    double *ro = calloc((size_t)(rows * f->c.Dv + 1), sizeof(double)), *rl = calloc((size_t)(rows + 1), sizeof(double));
    assert_true(ro && rl);
    for (int64_t b = 0; b < f->c.B; b++)
        for (int64_t i = 0; i < f->c.sq[b]; i++)
            for (int64_t n = 0; n < f->c.Nq; n++) {
                for (int64_t d = 0; d < f->c.Dv; d++)
                    ro[((b * f->sqmax + i) * f->c.Nq + n) * f->c.Dv + d] =
                        fx_load(f->obuf, f->c.odt, fx_qidx(f, true, b, i, n, d, f->c.Dv));
                if (f->lse_n) {
                    const int64_t li = fx_tlayout(f->c.layout) ? ((b ? f->cuq[b - 1] : 0) + i) * f->c.Nq + n
                                                               : (b * f->c.Nq + n) * f->c.sq_dim + i;
                    rl[(b * f->sqmax + i) * f->c.Nq + n] = ((float *)f->lsebuf)[li];
                }
            }
    *out = ro, *lse = rl;
}

/* Runs the kernel on `table` (NULL: the selected one) into the fixture's output and lse, NaN-filled first as
 * fx_build leaves them, and returns its worst error against the reference arrays. */
static double cpu_err(fx *f, const kvc_simd_table *table, const double *ro, const double *rl, double rtol,
                      double atol) {
    fx_fill_nan(f->obuf, f->c.odt, f->out_n);
    if (f->lse_n) fx_fill_nan(f->lsebuf, KVC_DTYPE_F32, f->lse_n);
    if (table) kvci_simd_override(table);
    run_cpu(&f->p);
    if (table) kvci_simd_override(NULL);
    return fx_check(f, ro, rl, rtol, atol);
}

/* The worst error of the kernel's output (and lse) against the reference's. */
static double cpu_vs_ref(fx *f, double rtol, double atol) {
    double *ro = NULL, *rl = NULL;
    ref_arrays(f, &ro, &rl);
    const double e = cpu_err(f, NULL, ro, rl, rtol, atol);
    free(ro), free(rl);
    return e;
}

static fx_cfg random_cfg(uint32_t *rs, kvc_attn_layout layout, int mode, kvc_dtype kvdt, int G) {
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = layout;
    const uint32_t pick = fx_rng(rs);
    c.storage = layout == KVC_LAYOUT_TND_NTD ? KVC_KV_BLOCKS : (pick % 3 == 0 ? KVC_KV_CONTIGUOUS : KVC_KV_BLOCKS);
    if (layout == KVC_LAYOUT_NTD_TND) c.storage = KVC_KV_CONTIGUOUS;
    if (c.storage != KVC_KV_CONTIGUOUS && (layout == KVC_LAYOUT_TND || layout == KVC_LAYOUT_BNSD) && pick % 5 == 1)
        c.storage = KVC_KV_BLOCKS, c.blk = KVC_BLOCK_BNNBSD;
    if (c.storage != KVC_KV_CONTIGUOUS && (layout == KVC_LAYOUT_TND || layout == KVC_LAYOUT_BNSD) && pick % 5 == 3)
        c.storage = KVC_KV_BLOCKS, c.blk = KVC_BLOCK_BNNDBS;
    if (c.storage != KVC_KV_CONTIGUOUS && kvdt != KVC_DTYPE_F32 && pick % 7 == 2) c.blk = KVC_BLOCK_NZ;
    c.B = 1 + (int64_t)(fx_rng(rs) % 3);
    const bool packed = fx_tlayout(layout) && c.storage == KVC_KV_CONTIGUOUS;
    const int64_t maxkv = KVC_SMALL ? 80 : 700;
    for (int64_t b = 0; b < c.B; b++) {
        c.sq[b] = fx_rng(rs) % 3 == 0 ? 1 : 1 + (int64_t)(fx_rng(rs) % 9);
        c.skv[b] = packed ? c.sq[b] : c.sq[b] + (int64_t)(fx_rng(rs) % (uint32_t)maxkv);
    }
    c.Nkv = 1 + (int)(fx_rng(rs) % 2);
    c.Nq = c.Nkv * G;
    c.D = fx_paged_as(&c, KVC_BLOCK_NZ) ? 32 : 8 * (1 + (int)(fx_rng(rs) % 4)) + (fx_rng(rs) % 2 ? 3 : 0);
    c.Dv = fx_paged_as(&c, KVC_BLOCK_NZ) ? 32 : c.D;
    c.qdt = fx_rng(rs) % 2 ? KVC_DTYPE_F32 : KVC_DTYPE_BF16;
    c.kvdt = kvdt;
    c.odt = KVC_DTYPE_F32;
    const int bss[3] = {16, 32, 128};
    c.bs = bss[fx_rng(rs) % 3];
    c.mode = mode;
    c.explicit_mask = mode <= 1 && (mode == 1 || fx_rng(rs) % 2);
    c.bidirectional = mode == 0 && !c.explicit_mask;
    c.pre = mode == 4 || mode == 0 ? 1 + (int64_t)(fx_rng(rs) % 40) : INT32_MAX; /* windows shorter than the sequence */
    c.next = mode == 4 ? 0 : mode == 0 ? (int64_t)(fx_rng(rs) % 3) : INT32_MAX;
    c.sinks = fx_rng(rs) % 3 == 0;
    c.lse = true;
    c.quant = kvdt == KVC_DTYPE_I8 ? (int)(fx_rng(rs) % 4 == 3 ? 10 : fx_rng(rs) % 3) : -1;
    if (fx_fp8(kvdt)) { /* unscaled, per tensor, per head, per channel, per token */
        const int fq[5] = {-1, 0, 2, 10, 1};
        c.quant = fq[fx_rng(rs) % 5];
    }
    const bool paged = c.storage != KVC_KV_CONTIGUOUS;
    if (c.quant >= 0 && paged && fx_rng(rs) % 4 == 0) c.quant = 3; /* per token by cache slot */
    if (c.quant == 10 && fx_rng(rs) % 2)
        c.value_quant = paged && fx_rng(rs) % 2 ? 3 : 1; /* KIVI: keys per channel, values per token */
    c.offsets = kvdt == KVC_DTYPE_I8 && fx_rng(rs) % 2;
    c.permute_blocks = true;
    c.extra_blocks = 1;
    c.extra_width = (int)(fx_rng(rs) % 2);
    c.seed = fx_rng(rs);
    c.softcap = c.seed % 3 == 0 ? 0.25 : 0.0; /* from the seed: the draws of the other fields stay as they were */
    /* chunked local attention, also from the seed: chunks of 1-12 keys (boundaries inside a prefill's queries)
     * or 13-412 (across blocks of 16-128 keys, rarely a multiple of them) */
    c.chunk = c.seed % 8 == 1 ? 1 + (int64_t)(c.seed / 8 % 12) : c.seed % 8 == 5 ? 13 + (int64_t)(c.seed / 8 % 400) : 0;
    c.alibi = c.seed / 24 % 3 == 1; /* ALiBi slopes in a third of the calls, across the cap's and chunks' draws */
    c.alibi_bf16 = c.alibi && c.seed / 72 % 2; /* half of them in Falcon's form */
    return c;
}

/* Every random problem is built and run on the reference once, then checked on each of the n tables. Under
 * AddressSanitizer (KVC_SMALL) two of the four GQA ratios of each layout, mode and KV dtype, in turn: each ratio
 * still meets every layout, every mode and every KV dtype (the draws stay the Release build's, which checks all). */
static void randomized(const kvc_simd_table *const *tables, int n) {
    const kvc_attn_layout layouts[] = {KVC_LAYOUT_TND,  KVC_LAYOUT_TND_NTD, KVC_LAYOUT_NTD_TND,  KVC_LAYOUT_BSH,
                                       KVC_LAYOUT_BSND, KVC_LAYOUT_BNSD,    KVC_LAYOUT_BSND_NBSD};
    const kvc_dtype kvdts[] = {KVC_DTYPE_F32, KVC_DTYPE_F16,    KVC_DTYPE_BF16,
                               KVC_DTYPE_I8,  KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    enum { NDT = sizeof kvdts / sizeof kvdts[0] };
    const int gs[] = {1, 2, 4, 8}; /* 8: decode rows beyond one 4-row kernel group */
    uint32_t rs = 0x1234567u;
    int runs = 0;
    for (size_t li = 0; li < 7; li++)
        for (int mode = 0; mode <= 4; mode++)
            for (size_t di = 0; di < NDT; di++)
                for (size_t gi = 0; gi < 4; gi++) {
                    fx_cfg c = random_cfg(&rs, layouts[li], mode, kvdts[di], gs[gi]);
                    if (KVC_SMALL && (li + (size_t)mode + di + gi) % 2) continue;
                    fx f;
                    fx_build(&f, &c);
                    double *ro = NULL, *rl = NULL;
                    ref_arrays(&f, &ro, &rl);
                    for (int t = 0; t < n; t++) {
                        const double e = cpu_err(&f, tables[t], ro, rl, 1e-5, 1e-5);
                        if (e > 1.0)
                            fail_msg("%s: layout %s storage %d mode %d kv %s G %d B %lld bs %d D %d quant %d/%d: "
                                     "error %g",
                                     tables[t]->name, kvc_attn_layout_name(c.layout), (int)c.storage * 10 + (int)c.blk,
                                     mode, kvc_dtype_name(c.kvdt), gs[gi], (long long)c.B, c.bs, c.D, c.quant,
                                     c.value_quant, e);
                    }
                    free(ro), free(rl);
                    fx_free(&f);
                    runs++;
                }
    assert_int_equal(runs, 7 * 5 * NDT * 4 / (KVC_SMALL ? 2 : 1));
}

/* The random problems on the CPU's best table and the portable one (one reference run for both); skipped where
 * the build runs this file again with KVC_SIMD=portable (KVC_TEST_SKIP_RANDOMIZED, set by tests/CMake on that
 * run: its problems are the ones checked here on the portable table). */
static void test_cpu_vs_ref(void **state) {
    (void)state;
    if (getenv("KVC_TEST_SKIP_RANDOMIZED")) skip();
    const kvc_simd_table *tables[2] = {kvci_simd_select(), &kvc_simd_portable};
    randomized(tables, tables[0] == &kvc_simd_portable ? 1 : 2);
}

/* Query tiles of many rows (the randomised test's requests hold at most 9): a key tile skips the rows of
 * an item that see none of its keys, found by bisection over the rows' key intervals, so every mask mode
 * is run with requests longer than one item (G 3 and 5: items of 85 and 51 rows, not multiples of 8),
 * fewer keys than queries where the storage allows it (rows that see nothing), a window with a negative
 * next_tokens, and three requests of different lengths in one batch. */
static void test_long_query_tiles(void **state) {
    (void)state;
    const kvc_attn_layout layouts[] = {KVC_LAYOUT_TND, KVC_LAYOUT_BNSD};
    uint32_t rs = 0x7a11u;
    for (size_t li = 0; li < 2; li++)
        for (int mode = 0; mode <= 4; mode++)
            for (int G = 3; G <= 5; G += 2) {
                fx_cfg c = random_cfg(&rs, layouts[li], mode, KVC_DTYPE_BF16, G);
                const bool packed = c.layout == KVC_LAYOUT_TND && c.storage == KVC_KV_CONTIGUOUS;
                const int64_t sq[3] = {KVC_SMALL ? 90 : 260, 1, KVC_SMALL ? 40 : 131};
                const int64_t skv[3] = {sq[0] / 2 + 7 * (int64_t)(mode == 4), 50, sq[2] + 37};
                c.B = 3, c.Nkv = 1, c.Nq = G;
                for (int64_t b = 0; b < 3; b++) c.sq[b] = sq[b], c.skv[b] = packed ? sq[b] : skv[b];
                if (mode == 4) c.pre = 20 + (int64_t)(fx_rng(&rs) % 40), c.next = G == 3 ? -3 : 2;
                fx f;
                fx_build(&f, &c);
                const double e = cpu_vs_ref(&f, 1e-5, 1e-5);
                if (e > 1.0)
                    fail_msg("layout %s storage %d mode %d G %d pre %lld next %lld: error %g",
                             kvc_attn_layout_name(c.layout), (int)c.storage * 10 + (int)c.blk, mode, G,
                             (long long)c.pre, (long long)c.next, e);
                fx_free(&f);
            }
}

/* The AVX-512 table gives every (row, key) pair the AVX2 table's per-lane
 * arithmetic: outputs and lse are bitwise equal over random problems
 * (layouts x mask modes x KV dtypes x GQA ratios x head dims 8-35, direct
 * and tile kernels, 8-channel tails). Skipped where the CPU lacks either. */
static void test_avx512_equals_avx2(void **state) {
    (void)state;
    const kvc_simd_table *t2 = kvci_simd_avx2_table(), *t5 = kvci_simd_avx512_table();
    if (!kvci_simd_cpu_runs(t2) || !kvci_simd_cpu_runs(t5)) skip();
    const kvc_attn_layout layouts[] = {KVC_LAYOUT_TND, KVC_LAYOUT_BSND, KVC_LAYOUT_BNSD};
    const kvc_dtype kvdts[] = {KVC_DTYPE_F32, KVC_DTYPE_F16,    KVC_DTYPE_BF16,
                               KVC_DTYPE_I8,  KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    const int gs[] = {1, 2, 4, 8};
    uint32_t rs = 0x51d5eedu;
    int runs = 0;
    for (size_t li = 0; li < 3; li++)
        for (int mode = 1; mode <= 4; mode++)
            for (size_t di = 0; di < 6; di++)
                for (size_t gi = 0; gi < 4; gi++) {
                    fx_cfg c = random_cfg(&rs, layouts[li], mode, kvdts[di], gs[gi]);
                    fx f;
                    fx_build(&f, &c);
                    size_t n2 = 0, n5 = 0;
                    const size_t ob = (size_t)f.out_n * kvc_dtype_size(c.odt);
                    memset(f.obuf, 0xff, ob); /* padding rows of BSND / BNSD stay unwritten: equal in both runs */
                    kvci_simd_override(t2);
                    void *o2 = cpu_bytes(&f, &n2), *l2 = malloc((size_t)(f.lse_n + 1) * sizeof(float));
                    memcpy(l2, f.lsebuf, (size_t)f.lse_n * sizeof(float));
                    memset(f.obuf, 0xff, ob);
                    kvci_simd_override(t5);
                    void *o5 = cpu_bytes(&f, &n5);
                    assert_int_equal(n2, n5);
                    const bool same =
                        memcmp(o2, o5, n2) == 0 && memcmp(l2, f.lsebuf, (size_t)f.lse_n * sizeof(float)) == 0;
                    kvci_simd_override(NULL);
                    if (!same)
                        fail_msg("layout %s mode %d kv %s G %d D %d bs %d: avx512 differs from avx2",
                                 kvc_attn_layout_name(c.layout), mode, kvc_dtype_name(c.kvdt), gs[gi], c.D, c.bs);
                    free(o2), free(o5), free(l2);
                    fx_free(&f);
                    runs++;
                }
    kvci_simd_override(NULL);
    assert_int_equal(runs, 3 * 4 * 6 * 4);
}

/* Every fp8 code (both formats, NaN and subnormals included) converts to the
 * bits of the scalar decoding kvc_fp8_*_to_f32 in every table this CPU runs
 * (the x86 tables convert in registers through f16). */
static void test_fp8_rows_exact(void **state) {
    (void)state;
    const kvc_simd_table *tables[3] = {&kvc_simd_portable, kvci_simd_avx2_table(), kvci_simd_avx512_table()};
    uint8_t row[256];
    for (int i = 0; i < 256; i++) row[i] = (uint8_t)i;
    const kvc_chan_map plain = {0, 62, -1};
    for (int ti = 0; ti < 3; ti++) {
        if (!kvci_simd_cpu_runs(tables[ti])) continue;
        for (int f = 0; f < 2; f++) {
            float got[256];
            tables[ti]->cvt[kvci_simd_slot(f ? KVC_DTYPE_F8E5M2 : KVC_DTYPE_F8E4M3)](row, plain, 256, got);
            for (int i = 0; i < 256; i++) {
                const float want = f ? kvc_fp8_e5m2_to_f32((uint8_t)i) : kvc_fp8_e4m3_to_f32((uint8_t)i);
                if (memcmp(&got[i], &want, sizeof want) != 0)
                    fail_msg("%s %s code 0x%02x: %g, want %g", tables[ti]->name, f ? "e5m2" : "e4m3", i, got[i], want);
            }
        }
    }
}

/* The direct kernels' fp8 conversions: one visible key with zero K and the
 * 256 codes as its value row gives weight 1, so the output row is the
 * value row's decoding plus the accumulator's initial +0 (so -0 gives +0),
 * bit for bit, on every path this CPU runs (NaN codes as the kernel's one
 * output NaN, docs/ops.md "NaN and Inf"). */
static void test_fp8_direct_values_exact(void **state) {
    (void)state;
    const kvc_simd_table *tables[3] = {&kvc_simd_portable, kvci_simd_avx2_table(), kvci_simd_avx512_table()};
    enum { D = 256, BS = 16 };
    static uint8_t k[BS * D], v[BS * D];
    static float q[D], out[D];
    for (int i = 0; i < D; i++) v[i] = (uint8_t)i, q[i] = 0.25f;
    int32_t tbl[1] = {0};
    int64_t cuq[1] = {1}, kvl[1] = {1};
    for (int f = 0; f < 2; f++) {
        const kvc_dtype dt = f ? KVC_DTYPE_F8E5M2 : KVC_DTYPE_F8E4M3;
        kvc_attention_params p = kvc_attention_default_params();
        p.layout = KVC_LAYOUT_TND, p.num_heads = 1, p.num_kv_heads = 1, p.scale = 1.0 / 16.0, p.sparse_mode = 3;
        p.batch = 1, p.q_lens = cuq, p.kv_lens = kvl, p.kv_len_form = KVC_KV_FORM_DIRECT;
        p.q = (kvc_tensor){.data = q, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {1, 1, D}};
        p.out = p.q, p.out.data = out;
        p.k = (kvc_tensor){.data = k, .dtype = dt, .ndim = 3, .shape = {1, BS, D}};
        p.v = p.k, p.v.data = v;
        p.kv_storage = KVC_KV_BLOCKS, p.block_size = BS;
        p.block_table = (kvc_tensor){.data = tbl, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {1, 1}};
        for (int ti = 0; ti < 3; ti++) {
            if (!kvci_simd_cpu_runs(tables[ti])) continue;
            kvci_simd_override(tables[ti]);
            run_cpu(&p);
            kvci_simd_override(NULL);
            for (int i = 0; i < D; i++) {
                const float x = 0.0f + (f ? kvc_fp8_e5m2_to_f32((uint8_t)i) : kvc_fp8_e4m3_to_f32((uint8_t)i));
                const float want = isnan(x) ? NAN : x;
                if (memcmp(&out[i], &want, sizeof want) != 0)
                    fail_msg("%s %s code 0x%02x: %g, want %g", tables[ti]->name, kvc_dtype_name(dt), i, out[i], want);
            }
        }
    }
}

/* The want of a direct kernel's one-key sum: fma(w, x, +0) of the code's decoding x (NaN codes keep their
 * sign and give the quiet NaN: the kernels' FMAs and sums pass a lone NaN through). */
static float code_value(int slot, uint8_t c) {
    return slot == kvci_simd_slot(KVC_DTYPE_I8)       ? (float)(int8_t)c
           : slot == kvci_simd_slot(KVC_DTYPE_F8E4M3) ? kvc_fp8_e4m3_to_f32(c)
                                                      : kvc_fp8_e5m2_to_f32(c);
}

/* The 256 codes of a slot's dtype into codes[0..nc) (nc >= 288): the finite ones, then the NaN ones,
 * each run padded with +0 to a multiple of 16, then +0. */
static void order_codes(int slot, uint8_t *codes, int nc) {
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int c = 0; c < 256; c++)
            if ((isnan(code_value(slot, (uint8_t)c)) != 0) == (pass == 1)) codes[n++] = (uint8_t)c;
        while (n % 16) codes[n++] = 0;
    }
    while (n < nc) codes[n++] = 0;
}

/* Every int8 and fp8 code through the direct kernels (qk_direct, pv_direct) of every x86 table this CPU
 * runs, bit for bit: the codes ordered so that the NaN codes have calls of their own, the others reach the
 * kernels' NaN-free forms (AVX-512: checked once per call; e4m3 values / 256 with the weights x 256) and
 * the NaN ones the fixing forms. qk: key t holds code t at channel t % D, zeros elsewhere, the query all
 * ones (1, 3 and 8 rows); pv: one value row of the codes, weight 1 (2^125 in a second row: a scaled weight
 * would overflow, so the unscaled kernel serves both rows), accumulators from +0. */
static void test_direct_codes_exact(void **state) {
    (void)state;
    enum { D = 40, NC = 256 + 32 };
    const kvc_simd_table *tables[2] = {kvci_simd_avx2_table(), kvci_simd_avx512_table()};
    const kvc_dtype dts[3] = {KVC_DTYPE_I8, KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    static uint8_t keys[NC][D], vrow[NC];
    static float q[8 * D], out[8 * NC], w[2 * KVC_VTILE], acc[2 * NC];
    for (int i = 0; i < 8 * D; i++) q[i] = 1.0f;
    for (int di = 0; di < 3; di++) {
        const int slot = kvci_simd_slot(dts[di]);
        uint8_t codes[NC];
        order_codes(slot, codes, NC);
        memset(keys, 0, sizeof keys);
        for (int t = 0; t < NC; t++) keys[t][t % D] = codes[t], vrow[t] = codes[t];
        for (int ti = 0; ti < 2; ti++) {
            const kvc_simd_table *tb = tables[ti];
            if (!tb || !kvci_simd_cpu_runs(tb)) continue;
            const kvc_pf_run none = {NULL, NULL, 0, false};
            const int rows[6] = {1, 3, 5, 6, 7, 8};
            for (int ri = 0; ri < 6; ri++)
                for (int t0 = 0; t0 < NC; t0 += KVC_QK_KEYS) {
                    const void *kp[KVC_QK_KEYS];
                    for (int t = 0; t < KVC_QK_KEYS; t++) kp[t] = keys[t0 + t];
                    tb->qk_direct[slot](kp, q, D, rows[ri], D, out + t0, NC, none);
                    for (int r = 0; r < rows[ri]; r++)
                        for (int t = t0; t < t0 + KVC_QK_KEYS; t++) {
                            const float want = 0.0f + code_value(slot, codes[t]);
                            if (memcmp(&out[r * NC + t], &want, sizeof want) != 0)
                                fail_msg("%s qk %s rows %d code 0x%02x: %g, want %g", tb->name, kvc_dtype_name(dts[di]),
                                         rows[ri], codes[t], out[r * NC + t], want);
                        }
                }
            for (int big = 0; big < 2; big++) {
                w[0] = 1.0f, w[KVC_VTILE] = 0x1p125f;
                memset(acc, 0, sizeof acc);
                for (int d0 = 0; d0 < NC; d0 += 16) { /* 16 channels a call: the NaN codes in calls of their own */
                    const void *vp[1] = {vrow + d0};
                    tb->pv_direct[slot](vp, 1, w, KVC_VTILE, big ? 2 : 1, 16, acc + d0, NC, none);
                }
                for (int r = 0; r <= big; r++)
                    for (int d = 0; d < NC; d++) {
                        const float x = code_value(slot, codes[d]),
                                    want = isnan(x) ? x : fmaf(w[r * KVC_VTILE], x, 0.0f);
                        if (memcmp(&acc[r * NC + d], &want, sizeof want) != 0)
                            fail_msg("%s pv %s row %d/%d code 0x%02x: %g, want %g", tb->name, kvc_dtype_name(dts[di]),
                                     r, big + 1, codes[d], acc[r * NC + d], want);
                    }
            }
        }
    }
}

/* bf16 value rows through pv_direct of both x86 tables: the AVX-512 table reads whole 32-channel groups as
 * even and odd channels (no shuffle), the rest 16 or 8 at a time; each accumulator element must still be
 * the chain acc = fma(w[t], v[t], acc) over the keys in order, zero weights skipped, bit for bit with the
 * AVX2 table and with that chain in scalar fmaf (a NaN result only as a NaN). Head dims 8-264 (whole
 * groups, a group and 8 or 16 channels, passes of several vectors), 1-8 rows, 1-32 keys, some weights 0,
 * value rows with NaN, infinite and subnormal elements. */
static void test_bf16_values_tables_equal(void **state) {
    (void)state;
    enum { DMAX = 264, NR = 8 };
    const kvc_simd_table *t2 = kvci_simd_avx2_table(), *t5 = kvci_simd_avx512_table();
    if (!kvci_simd_cpu_runs(t2) || !kvci_simd_cpu_runs(t5)) skip();
    const int slot = kvci_simd_slot(KVC_DTYPE_BF16), dims[] = {32, 64, 128, 256, 40, 48, 96, 136, 264, 8, 24};
    const int rows[] = {1, 2, 3, 4, 8}, keys[] = {1, 7, 32};
    static uint16_t v[KVC_VTILE][DMAX];
    static float w[NR * KVC_VTILE], a0[NR * DMAX], a2[NR * DMAX], a5[NR * DMAX];
    const uint16_t odd[4] = {0x7fc1, 0xff80, 0x0001, 0x8000};
    uint32_t rs = 0xb16e0u;
    const kvc_pf_run none = {NULL, NULL, 0, false};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
            for (size_t ki = 0; ki < sizeof keys / sizeof keys[0]; ki++) {
                const int D = dims[di], nr = rows[ri], nk = keys[ki];
                for (int t = 0; t < nk; t++)
                    for (int d = 0; d < D; d++) {
                        rs = rs * 1664525u + 1013904223u;
                        v[t][d] = (rs >> 24) == 0 ? odd[(rs >> 8) & 3] : (uint16_t)(0x3c00u + ((rs >> 8) & 0x7ff));
                        if ((rs >> 20) & 1) v[t][d] ^= 0x8000u;
                    }
                for (int i = 0; i < nr * KVC_VTILE; i++) {
                    rs = rs * 1664525u + 1013904223u;
                    w[i] = (ri + ki) % 2 && (rs >> 28) == 0 ? 0.0f : (float)(rs >> 8) * 0x1p-24f;
                }
                for (int i = 0; i < nr * DMAX; i++) {
                    rs = rs * 1664525u + 1013904223u;
                    a0[i] = a2[i] = a5[i] = (float)(int32_t)rs * 0x1p-31f;
                }
                const void *vp[KVC_VTILE];
                for (int t = 0; t < nk; t++) vp[t] = v[t];
                t2->pv_direct[slot](vp, nk, w, KVC_VTILE, nr, D, a2, DMAX, none);
                t5->pv_direct[slot](vp, nk, w, KVC_VTILE, nr, D, a5, DMAX, none);
                if (memcmp(a2, a5, sizeof a2) != 0)
                    fail_msg("D %d rows %d keys %d: avx512 differs from avx2", D, nr, nk);
                for (int r = 0; r < nr; r++)
                    for (int d = 0; d < D; d++) {
                        float want = a0[r * DMAX + d];
                        for (int t = 0; t < nk; t++)
                            if (w[r * KVC_VTILE + t] != 0.0f)
                                want = fmaf(w[r * KVC_VTILE + t], kvc_bf16_to_f32(v[t][d]), want);
                        const float got = a5[r * DMAX + d];
                        if (isnan(want) ? !isnan(got) : memcmp(&got, &want, sizeof want) != 0)
                            fail_msg("D %d rows %d keys %d: row %d channel %d %g, want %g", D, nr, nk, r, d, got, want);
                    }
            }
}

/* Every int8 and fp8 code through the keys-in-lanes qk (qk_lanes) of every table this CPU runs, bit for
 * bit: blocks of 16 keys (the NaN codes in blocks of their own, so the others reach the x86 tables'
 * NaN-free forms), of 29 (NaN codes among the single keys past 16 + 8) and of 61; key t holds its code at
 * channel t % D, zeros elsewhere, the query all ones (1 and 5 rows). */
static void test_lanes_codes_exact(void **state) {
    (void)state;
    enum { D = 40, NC = 256 + 32, CS = 64 };
    const kvc_simd_table *tables[3] = {&kvc_simd_portable, kvci_simd_avx2_table(), kvci_simd_avx512_table()};
    const kvc_dtype dts[3] = {KVC_DTYPE_I8, KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    static uint8_t blk[D * CS];
    static float q[5 * D], out[5 * NC];
    for (int i = 0; i < 5 * D; i++) q[i] = 1.0f;
    const kvc_pf_run none = {NULL, NULL, 0, false};
    const int blocks[3] = {16, 29, 61};
    for (int di = 0; di < 3; di++) {
        const int slot = kvci_simd_slot(dts[di]);
        uint8_t codes[NC];
        order_codes(slot, codes, NC);
        for (int ti = 0; ti < 3; ti++) {
            const kvc_simd_table *tb = tables[ti];
            if (!tb || !kvci_simd_cpu_runs(tb)) continue;
            for (int bi = 0; bi < 3; bi++)
                for (int nr = 1, nb = blocks[bi]; nr <= 5; nr += 4)
                    for (int t0 = 0; t0 < NC; t0 += nb) {
                        const int nk = NC - t0 < nb ? NC - t0 : nb;
                        memset(blk, 0, sizeof blk);
                        for (int t = 0; t < nk; t++) blk[((t0 + t) % D) * CS + t] = codes[t0 + t];
                        tb->qk_lanes[slot](blk, CS, nk, q, D, nr, D, out + t0, NC, none);
                        for (int r = 0; r < nr; r++)
                            for (int t = t0; t < t0 + nk; t++) {
                                const float want = 0.0f + code_value(slot, codes[t]);
                                if (memcmp(&out[r * NC + t], &want, sizeof want) != 0)
                                    fail_msg("%s lanes %s block %d rows %d code 0x%02x: %g, want %g", tb->name,
                                             kvc_dtype_name(dts[di]), nb, nr, codes[t], out[r * NC + t], want);
                            }
                    }
        }
    }
}

/* KVC_SIMD picks the path (tests/CMake runs this file again with KVC_SIMD=portable). */
static void test_simd_environment(void **state) {
    (void)state;
    const char *e = getenv("KVC_SIMD");
    if (e && strcmp(e, "portable") == 0)
        assert_ptr_equal(kvci_simd_select(), &kvc_simd_portable);
    else
        assert_true(kvci_simd_cpu_runs(kvci_simd_select()));
    assert_string_equal(kvc_attention_cpu_isa(), kvci_simd_select()->name);
}

/* 16-bit outputs: within the output dtype's rounding of the reference. */
static void test_cpu_half_outputs(void **state) {
    (void)state;
    uint32_t rs = 99;
    for (int k = 0; k < 6; k++) {
        fx_cfg c = random_cfg(&rs, KVC_LAYOUT_TND, 3, k % 2 ? KVC_DTYPE_BF16 : KVC_DTYPE_F16, 2);
        c.odt = k % 2 ? KVC_DTYPE_BF16 : KVC_DTYPE_F16;
        fx f;
        fx_build(&f, &c);
        const double e = cpu_vs_ref(&f, k % 2 ? 1.0 / 128 : 1.0 / 1024, 1e-3);
        if (e > 1.0) fail_msg("out %s: error %g", kvc_dtype_name(c.odt), e);
        fx_free(&f);
    }
}

static void test_bitwise_determinism(void **state) {
    (void)state;
    const int64_t L = KVC_SMALL ? 700 : 2500; /* several split-K chunks */
    const kvc_dtype dts[5] = {KVC_DTYPE_F32, KVC_DTYPE_BF16, KVC_DTYPE_I8, KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    /* plain rows (token- and head-major give the same bits), then keys in lanes (their own arithmetic) */
    const kvc_block_layout sts[2][4] = {{KVC_BLOCK_BNBSND, KVC_BLOCK_BNBSND, KVC_BLOCK_BNNBSD, KVC_BLOCK_BNBSND},
                                        {KVC_BLOCK_BNNDBS, KVC_BLOCK_BNNDBS, KVC_BLOCK_BNNDBS, KVC_BLOCK_BNNDBS}};
    for (int lanes = 0; lanes < 2; lanes++)
        for (int di = 0; di < 5; di++) {
            fx_cfg c;
            memset(&c, 0, sizeof c);
            c.layout = KVC_LAYOUT_TND, c.B = 3, c.Nq = 8, c.Nkv = 2, c.D = c.Dv = 64;
            c.qdt = KVC_DTYPE_F32, c.kvdt = dts[di], c.odt = KVC_DTYPE_F32, c.mode = 3, c.pre = c.next = INT32_MAX;
            c.quant = dts[di] == KVC_DTYPE_I8 || dts[di] == KVC_DTYPE_F8E5M2 ? 0 : -1, c.seed = 5, c.sinks = true;
            c.softcap = di % 2 ? 0.25 : 0.0;       /* soft-capped scores: the same bits in every variant too */
            c.chunk = di >= 3 ? 300 + 37 * di : 0; /* chunked local attention (chunks across split-K's): too */
            c.alibi = di != 1,
            c.alibi_bf16 = di == 3; /* ALiBi slopes (both forms, with and without the cap and chunks): too */
            c.sq[0] = 1, c.skv[0] = L, c.sq[1] = 5, c.skv[1] = L / 3 + 7, c.sq[2] = 1, c.skv[2] = 1;
            const kvc_block_layout *st = sts[lanes];
            const int bss[4] = {16, 128, 64, 48};
            size_t n0 = 0, n = 0;
            void *ref = NULL;
            for (int v = 0; v < 4; v++) {
                c.storage = KVC_KV_BLOCKS, c.blk = st[v], c.bs = bss[v], c.permute_blocks = v % 2, c.extra_width = v;
                fx f;
                fx_build(&f, &c);
                void *o = cpu_bytes(&f, &n);
                if (!ref) {
                    ref = o, n0 = n;
                    /* thread count 1 vs default: same bytes */
                    omp_set_num_threads(1);
                    void *o1 = cpu_bytes(&f, &n);
                    omp_set_num_threads(2);
                    void *o2 = cpu_bytes(&f, &n);
                    assert_memory_equal(o1, ref, n0);
                    assert_memory_equal(o2, ref, n0);
                    free(o1), free(o2);
                    /* batch composition: each request alone gives its rows of the batch run */
                    for (int64_t b = 0; b < c.B; b++) {
                        kvc_attention_params p1 = f.p;
                        const int64_t r0 = b ? f.cuq[b - 1] : 0, rows = f.cuq[b] - r0;
                        int64_t cu1 = rows;
                        p1.batch = 1, p1.q_lens = &cu1, p1.kv_lens = &f.dkv[b];
                        p1.q.data = (float *)f.qbuf + r0 * c.Nq * c.D, p1.q.shape[0] = rows;
                        p1.out.data = (float *)f.obuf + r0 * c.Nq * c.Dv, p1.out.shape[0] = rows;
                        p1.block_table.data = (int32_t *)f.tblbuf + b * f.width, p1.block_table.shape[0] = 1;
                        memset(f.obuf, 0xff, n0);
                        run_cpu(&p1);
                        assert_memory_equal((float *)f.obuf + r0 * c.Nq * c.Dv, (float *)ref + r0 * c.Nq * c.Dv,
                                            (size_t)(rows * c.Nq * c.Dv) * sizeof(float));
                    }
                } else {
                    assert_int_equal(n, n0);
                    if (memcmp(o, ref, n0) != 0)
                        fail_msg("kv %s variant %d (bs %d, layout %d) differs bitwise", kvc_dtype_name(c.kvdt), v, c.bs,
                                 (int)c.blk);
                    free(o);
                }
                fx_free(&f);
            }
            /* contiguous (packed TND) storage of the same data as a prefill with equal lengths */
            free(ref);
        }
}

/* Paged vs contiguous: packed TND prefill vs the same tokens read through a block table. */
static void test_paged_equals_contiguous(void **state) {
    (void)state;
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = KVC_LAYOUT_TND, c.B = 2, c.Nq = 4, c.Nkv = 2, c.D = c.Dv = 40;
    c.qdt = KVC_DTYPE_F32, c.kvdt = KVC_DTYPE_F16, c.odt = KVC_DTYPE_F32, c.mode = 3, c.pre = c.next = INT32_MAX;
    c.quant = -1, c.seed = 11, c.sq[0] = 37, c.skv[0] = 37, c.sq[1] = 600, c.skv[1] = 600, c.bs = 32;
    size_t n1, n2;
    c.storage = KVC_KV_CONTIGUOUS;
    fx f;
    fx_build(&f, &c);
    void *a = cpu_bytes(&f, &n1);
    fx_free(&f);
    c.storage = KVC_KV_BLOCKS, c.permute_blocks = true;
    fx_build(&f, &c);
    void *b = cpu_bytes(&f, &n2);
    fx_free(&f);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a), free(b);
}

/* Paged K/V described by kvc_paged_kv in layout pairs the front end cannot
 * name, K and V of each block side by side in one allocation with padding
 * (NaN) between rows and blocks: kind 0 K token-major rows (BNBSND) with V
 * head-major (BNNBSD) under BSND queries (the front end takes head-major
 * blocks with BNSD or TND queries only), kind 1 K in lanes with a channel
 * stride wider than the block with V token-major, kind 2 MLA (D 32 +
 * rope 16) as kind 0 with key_rope in NZ tiles of its own buffer, tiles
 * padded apart. The same data repacked so gives the bits of
 * the front end's plain layout (kind 0 BNBSND, kind 1 BNNDBS: K read the same
 * way, V rows) on every SIMD table this CPU runs, and the reference through
 * the descriptor matches the oracle and its own plain bits. */
typedef struct desc_case {
    kvc_paged_kv d;
    void *buf, *rbuf;
    kvc_tensor k, v, k_rope;
} desc_case;

/* kind 2: f's BNBSND key_rope [NB, bs, Nkv, Dr] into NZ tiles of 32 bytes, tiles bs * c0 + 8 elements apart. */
static void desc_rope(const fx *f, desc_case *dc) {
    const fx_cfg *c = &f->c;
    const kvc_dtype dt = f->p.k_rope.dtype;
    const int64_t bs = c->bs, Nkv = c->Nkv, Dr = c->Dr, es = (int64_t)kvc_dtype_size(dt), c0 = 32 / es;
    const int64_t tile = bs * c0 + 8, head = Dr / c0 * tile, blk = Nkv * head, n = f->nblocks * blk;
    dc->d.k_rope = (kvc_paged_tensor){KVC_BLOCK_NZ, Dr, blk, head, c0, tile};
    dc->rbuf = malloc((size_t)(n * es));
    fx_fill_nan(dc->rbuf, dt, n);
    for (int64_t p = 0; p < f->nblocks; p++)
        for (int64_t o = 0; o < bs; o++)
            for (int64_t g = 0; g < Nkv; g++)
                for (int64_t d = 0; d < Dr; d++)
                    memcpy((char *)dc->rbuf + es * (p * blk + g * head + o * c0 + d / c0 * tile + d % c0),
                           (const char *)f->krbuf + es * (((p * bs + o) * Nkv + g) * Dr + d), (size_t)es);
    dc->k_rope = (kvc_tensor){.data = dc->rbuf, .dtype = dt, .ndim = 1, .shape = {n}};
}

static void desc_build(const fx *f, int kind, desc_case *dc) {
    const fx_cfg *c = &f->c;
    const int64_t bs = c->bs, Nkv = c->Nkv, D = c->D, Dv = c->Dv, NB = f->nblocks;
    const size_t es = kvc_dtype_size(c->kvdt);
    const int64_t lane_w = bs + 4, kpart = kind == 1 ? Nkv * D * lane_w : bs * (Nkv * D + 8), vpart = bs * Nkv * Dv;
    const int64_t blk = kpart + vpart + 16, n = NB * blk;
    dc->d.num_blocks = NB;
    if (kind == 1) {
        dc->d.k = (kvc_paged_tensor){KVC_BLOCK_BNNDBS, D, blk, D * lane_w, 1, lane_w};
        dc->d.v = (kvc_paged_tensor){KVC_BLOCK_BNBSND, Dv, blk, Dv, Nkv * Dv, 1};
    } else {
        dc->d.k = (kvc_paged_tensor){KVC_BLOCK_BNBSND, D, blk, D, Nkv * D + 8, 1};
        dc->d.v = (kvc_paged_tensor){KVC_BLOCK_BNNBSD, Dv, blk, bs * Dv, Dv, 1};
    }
    dc->buf = malloc((size_t)n * es);
    fx_fill_nan(dc->buf, c->kvdt, n);
    char *kb = dc->buf, *vb = (char *)dc->buf + es * (size_t)kpart;
    for (int64_t p = 0; p < NB; p++)
        for (int64_t o = 0; o < bs; o++)
            for (int64_t g = 0; g < Nkv; g++) {
                for (int64_t d = 0; d < D; d++) { /* plain K: BNBSND, or keys in lanes */
                    const int64_t from =
                        kind == 1 ? ((p * Nkv + g) * D + d) * bs + o : ((p * bs + o) * Nkv + g) * D + d;
                    const kvc_paged_tensor *t = &dc->d.k;
                    const int64_t to = p * blk + g * t->head_stride + o * t->token_stride + d * t->channel_stride;
                    memcpy(kb + es * (size_t)to, (const char *)f->kbuf + es * (size_t)from, es);
                }
                for (int64_t d = 0; d < Dv; d++) { /* plain V: BNBSND, or head-major */
                    const int64_t from =
                        kind == 1 ? ((p * Nkv + g) * bs + o) * Dv + d : ((p * bs + o) * Nkv + g) * Dv + d;
                    const kvc_paged_tensor *t = &dc->d.v;
                    const int64_t to = p * blk + g * t->head_stride + o * t->token_stride + d;
                    memcpy(vb + es * (size_t)to, (const char *)f->vbuf + es * (size_t)from, es);
                }
            }
    dc->k = (kvc_tensor){.data = kb, .dtype = c->kvdt, .ndim = 1, .shape = {n}};
    dc->v = (kvc_tensor){.data = vb, .dtype = c->kvdt, .ndim = 1, .shape = {n - kpart}};
    dc->rbuf = NULL;
    if (kind == 2) desc_rope(f, dc);
}

/* Output and lse bytes of one run (cpu or ref) of f->p into a new buffer. */
static void *run_bytes(fx *f, bool ref, size_t *n) {
    const size_t ob = (size_t)f->out_n * kvc_dtype_size(f->c.odt), lb = (size_t)f->lse_n * sizeof(float);
    memset(f->obuf, 0xff, ob);
    if (ref)
        assert_int_equal(kvc_attention_ref(&f->p), KVC_OK);
    else
        run_cpu(&f->p);
    unsigned char *o = malloc(ob + lb);
    memcpy(o, f->obuf, ob);
    memcpy(o + ob, f->lsebuf, lb);
    *n = ob + lb;
    return o;
}

static void test_paged_kv_descriptor(void **state) {
    (void)state;
    const kvc_simd_table *tables[] = {&kvc_simd_portable, kvci_simd_avx2_table(), kvci_simd_avx512_table()};
    const kvc_dtype dts[] = {KVC_DTYPE_F32, KVC_DTYPE_F16, KVC_DTYPE_BF16, KVC_DTYPE_I8, KVC_DTYPE_F8E4M3};
    int runs = 0;
    for (int kind = 0; kind < 3; kind++)
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
            if (kind == 2 && dts[di] == KVC_DTYPE_F32) continue; /* NZ tiles: 16-bit or 8-bit elements */
            const int G = (int)(di + (size_t)kind) % 2 ? 4 : 1;  /* decode rows direct (4) and one row per head */
            fx_cfg c;
            memset(&c, 0, sizeof c);
            c.layout = kind ? KVC_LAYOUT_TND : KVC_LAYOUT_BSND, c.storage = KVC_KV_BLOCKS,
            c.blk = kind == 1 ? KVC_BLOCK_BNNDBS : KVC_BLOCK_BNBSND;
            c.B = 2, c.sq[0] = 1, c.skv[0] = 45, c.sq[1] = 6, c.skv[1] = KVC_SMALL ? 90 : kind == 2 ? 200 : 530;
            c.Nkv = 2, c.Nq = 2 * G, c.D = c.Dv = kind == 2 ? 32 : 48, c.Dr = kind == 2 ? 16 : 0, c.bs = 16;
            c.qdt = KVC_DTYPE_BF16, c.kvdt = dts[di], c.odt = KVC_DTYPE_F32;
            c.mode = 3, c.pre = c.next = INT32_MAX, c.sinks = true, c.lse = true;
            c.quant = dts[di] == KVC_DTYPE_I8 ? (kind ? 0 : 3) : dts[di] == KVC_DTYPE_F8E4M3 ? 2 : -1;
            c.permute_blocks = true, c.extra_blocks = 1, c.seed = 77u + (uint32_t)(kind * 10 + (int)di) * 3u;
            fx f;
            fx_build(&f, &c);
            desc_case dc;
            desc_build(&f, kind, &dc);
            const kvc_attention_params plain = f.p;
            kvc_attention_params described = f.p;
            described.k = dc.k, described.v = dc.v, described.paged_kv = &dc.d;
            if (kind == 2) described.k_rope = dc.k_rope;
            for (size_t ti = 0; ti < sizeof tables / sizeof tables[0]; ti++) {
                if (!kvci_simd_cpu_runs(tables[ti])) continue;
                kvci_simd_override(tables[ti]);
                size_t na, nb;
                f.p = plain;
                void *a = run_bytes(&f, false, &na);
                f.p = described;
                void *b = run_bytes(&f, false, &nb);
                kvci_simd_override(NULL);
                if (na != nb || memcmp(a, b, na) != 0)
                    fail_msg("%s kind %d kv %s G %d: the descriptor's bits differ from the plain layout's",
                             tables[ti]->name, kind, kvc_dtype_name(c.kvdt), G);
                free(a), free(b);
                runs++;
            }
            size_t na, nb;
            f.p = plain;
            void *a = run_bytes(&f, true, &na);
            f.p = described;
            void *b = run_bytes(&f, true, &nb);
            assert_int_equal(na, nb);
            assert_memory_equal(a, b, na);
            const double e = cpu_vs_ref(&f, 1e-5, 1e-5);
            if (e > 1.0) fail_msg("kind %d kv %s G %d: error %g vs the oracle", kind, kvc_dtype_name(c.kvdt), G, e);
            free(a), free(b), free(dc.buf), free(dc.rbuf);
            f.p = plain;
            fx_free(&f);
        }
    assert_true(runs >= 2 * 5 + 4); /* the portable table at least */
}

/* Keys masked for every query row of their request may hold NaN in K and V
 * (slots never written, or recycled): no result may read them. Scores of
 * such keys become -inf and their weights 0, and pv skips zero weights,
 * in decode (direct rows, 4 query heads per KV head) and prefill (tile
 * rows), with both SIMD tables. */
static void test_masked_keys_hold_nan(void **state) {
    (void)state;
    const kvc_simd_table *tables[2] = {kvci_simd_select(), &kvc_simd_portable};
    for (int ti = 0; ti < 2; ti++)
        for (int64_t sq = 1; sq <= 9; sq += 8) {
            kvci_simd_override(tables[ti]);
            fx_cfg c;
            memset(&c, 0, sizeof c);
            c.layout = KVC_LAYOUT_TND, c.storage = KVC_KV_BLOCKS, c.B = 2, c.Nq = 8, c.Nkv = 2, c.D = c.Dv = 64;
            c.qdt = KVC_DTYPE_F32, c.kvdt = KVC_DTYPE_F16, c.odt = KVC_DTYPE_F32, c.mode = 1, c.explicit_mask = true;
            c.pre = c.next = INT32_MAX, c.quant = -1, c.bs = 16, c.seed = 5 + (uint32_t)sq, c.lse = true;
            for (int64_t b = 0; b < c.B; b++) c.sq[b] = sq, c.skv[b] = sq + 100 + 7 * b;
            fx f;
            fx_build(&f, &c);
            int64_t poisoned = 0;
            for (int64_t b = 0; b < c.B; b++)
                for (int64_t j = 2; j < c.skv[b]; j += 5) {
                    for (int64_t i = 0; i < f.sqmax; i++) {
                        const int64_t e = (b * f.sqmax + i) * f.skvmax + j;
                        ((uint8_t *)f.mbuf)[e] = 1;
                        f.msk[e] = 1;
                    }
                    for (int64_t g = 0; g < c.Nkv; g++)
                        for (int64_t d = 0; d < c.D; d++) {
                            ((uint16_t *)f.kbuf)[fx_kvidx(&f, 0, b, j, g, d, c.D, 2)] = 0x7e00u; /* f16 NaN */
                            ((uint16_t *)f.vbuf)[fx_kvidx(&f, 1, b, j, g, d, c.Dv, 2)] = 0x7e00u;
                        }
                    poisoned++;
                }
            assert_true(poisoned > 40);
            const double e = cpu_vs_ref(&f, 1e-5, 1e-5);
            if (!(e <= 1.0))
                fail_msg("%s, %lld query rows: error %g with NaN in masked keys", tables[ti]->name, (long long)sq, e);
            fx_free(&f);
        }
    kvci_simd_override(NULL);
}

/* Chunked local attention (attention_chunk_size 37, not a multiple of the blocks' 16 keys): the keys before
 * the chunk of a request's first query never weigh in (a chunked-local cache has released their blocks), so
 * NaN there leaves the output equal to the logical oracle's; a decode row (position 299, chunk from 296), a
 * prefill whose 9 queries (181-189) cross the boundary at 185, and one whose 40 queries span two boundaries. */
static void test_chunked_keys_before_unused(void **state) {
    (void)state;
    const kvc_simd_table *tables[2] = {kvci_simd_select(), &kvc_simd_portable};
    for (int ti = 0; ti < 2; ti++) {
        kvci_simd_override(tables[ti]);
        fx_cfg c;
        memset(&c, 0, sizeof c);
        c.layout = KVC_LAYOUT_TND, c.storage = KVC_KV_BLOCKS, c.B = 3, c.Nq = 8, c.Nkv = 2, c.D = c.Dv = 64;
        c.qdt = KVC_DTYPE_F32, c.kvdt = KVC_DTYPE_F16, c.odt = KVC_DTYPE_F32, c.mode = 3, c.chunk = 37;
        c.pre = c.next = INT32_MAX, c.quant = -1, c.bs = 16, c.seed = 11, c.lse = true, c.permute_blocks = true;
        c.sq[0] = 1, c.skv[0] = 300, c.sq[1] = 9, c.skv[1] = 190, c.sq[2] = 40, c.skv[2] = 100;
        fx f;
        fx_build(&f, &c);
        int64_t poisoned = 0;
        for (int64_t b = 0; b < c.B; b++)
            for (int64_t j = 0; j < (c.skv[b] - c.sq[b]) / c.chunk * c.chunk; j++, poisoned++)
                for (int64_t g = 0; g < c.Nkv; g++)
                    for (int64_t d = 0; d < c.D; d++) {
                        ((uint16_t *)f.kbuf)[fx_kvidx(&f, 0, b, j, g, d, c.D, 2)] = 0x7e00u; /* f16 NaN */
                        ((uint16_t *)f.vbuf)[fx_kvidx(&f, 1, b, j, g, d, c.Dv, 2)] = 0x7e00u;
                    }
        assert_int_equal(poisoned, 296 + 148 + 37);
        double *ro = malloc(sizeof(double) * (size_t)(c.B * f.sqmax * c.Nq * c.Dv));
        double *rl = malloc(sizeof(double) * (size_t)(c.B * f.sqmax * c.Nq));
        fx_oracle(&f, ro, rl); /* the logical data, not poisoned */
        fx_run_cpu(&f.p);
        const double e = fx_check(&f, ro, rl, 1e-5, 1e-5);
        if (!(e <= 1.0)) fail_msg("%s: error %g with NaN before the chunks", tables[ti]->name, e);
        assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
        const double er = fx_check(&f, ro, rl, 1e-6, 1e-6);
        if (!(er <= 1.0)) fail_msg("reference: error %g with NaN before the chunks", er);
        free(ro), free(rl);
        fx_free(&f);
    }
    kvci_simd_override(NULL);
}

/* Absorbed MLA (f's latent cache is key and value): the output of f, and
 * of the same tokens rebuilt in blocks of 64 (f is rebuilt so), are the
 * same bytes. */
static void absorbed_same_at_bs64(fx *f, fx_cfg c) {
    size_t n1, n2;
    void *a = cpu_bytes(f, &n1);
    fx_free(f);
    c.bs = 64;
    fx_build(f, &c);
    f->p.v = f->p.k;
    void *b = cpu_bytes(f, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a), free(b);
}

/* MLA at the dims of the small DeepSeek-V3 oracle model (4 heads, latent
 * kv_lora_rank 32, rope 16, nope 32, value 24): absorbed (one latent head
 * read as key and value through a block table, prefill and decode rows,
 * causal or band, LSE) and non-absorbed (packed TND, per-head keys of
 * nope + rope) against the float64 reference, every float cache dtype; and
 * the absorbed output bitwise equal across block sizes. */
static void test_mla_oracle_dims(void **state) {
    (void)state;
    const kvc_dtype dts[] = {KVC_DTYPE_F32, KVC_DTYPE_F16, KVC_DTYPE_BF16, KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    uint32_t rs = 77;
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (int absorbed = 0; absorbed < 2; absorbed++)
            for (int mode = 3; mode <= 4; mode++) {
                fx_cfg c;
                memset(&c, 0, sizeof c);
                c.layout = KVC_LAYOUT_TND, c.B = 3, c.Dr = 16, c.qdt = KVC_DTYPE_F32, c.kvdt = dts[di];
                c.odt = KVC_DTYPE_F32, c.mode = mode, c.pre = mode == 4 ? 9 : INT32_MAX,
                c.next = mode == 4 ? 0 : INT32_MAX;
                c.quant = fx_fp8(dts[di]) && absorbed ? 0 : -1, c.lse = true, c.seed = fx_rng(&rs),
                c.permute_blocks = true;
                if (absorbed) {
                    c.storage = KVC_KV_BLOCKS, c.Nq = 4, c.Nkv = 1, c.D = c.Dv = 32, c.bs = 16;
                    for (int64_t b = 0; b < c.B; b++) c.sq[b] = b == 1 ? 1 : 20 + 3 * b, c.skv[b] = c.sq[b] + 30 * b;
                } else {
                    c.storage = KVC_KV_CONTIGUOUS, c.Nq = c.Nkv = 4, c.D = 32, c.Dv = 24;
                    for (int64_t b = 0; b < c.B; b++) c.sq[b] = c.skv[b] = 5 + 11 * b;
                }
                fx f;
                fx_build(&f, &c);
                if (absorbed) f.p.v = f.p.k; /* the latent cache is the value too */
                const double e = cpu_vs_ref(&f, 1e-5, 1e-5);
                if (e > 1.0)
                    fail_msg("MLA %s kv %s mode %d: error %g", absorbed ? "absorbed" : "expanded",
                             kvc_dtype_name(c.kvdt), mode, e);
                if (absorbed) absorbed_same_at_bs64(&f, c);
                fx_free(&f);
            }
}

/* MLA over int8 / fp8 latent caches whose rope part is stored in the same
 * dtype and read with the key's scale (one scale over latent + rope, as
 * vLLM's fp8 MLA cache): per tensor, and per token by cache slot (the
 * runtime's scales computed on write), absorbed (latent = key = value) and
 * general, against the float64 reference; with scales that do not depend
 * on the slot, bitwise equal across block sizes. */
static void test_mla_quant_rope(void **state) {
    (void)state;
    const kvc_dtype dts[] = {KVC_DTYPE_I8, KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    const int quants[] = {0, 3, 2};
    uint32_t rs = 91;
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (size_t qi = 0; qi < sizeof quants / sizeof quants[0]; qi++)
            for (int mode = 3; mode <= 4; mode++) {
                fx_cfg c;
                memset(&c, 0, sizeof c);
                c.layout = KVC_LAYOUT_TND, c.B = 3, c.Dr = 16, c.qdt = KVC_DTYPE_F32, c.kvdt = dts[di];
                c.odt = KVC_DTYPE_F32, c.mode = mode, c.pre = mode == 4 ? 9 : INT32_MAX,
                c.next = mode == 4 ? 0 : INT32_MAX;
                c.quant = quants[qi], c.rope_quant = true, c.lse = true, c.seed = fx_rng(&rs), c.permute_blocks = true;
                c.storage = KVC_KV_BLOCKS, c.Nq = 4, c.Nkv = 1, c.D = c.Dv = 32, c.bs = 16;
                for (int64_t b = 0; b < c.B; b++) c.sq[b] = b == 1 ? 1 : 20 + 3 * b, c.skv[b] = c.sq[b] + 30 * b;
                fx f;
                fx_build(&f, &c);
                f.p.v = f.p.k;                                     /* the latent cache is the value too */
                if (c.quant == 3) f.p.value_scale = f.p.key_scale; /* and its scale */
                const double e = cpu_vs_ref(&f, 1e-5, 1e-5);
                if (e > 1.0)
                    fail_msg("MLA quantised rope kv %s quant %d mode %d: error %g", kvc_dtype_name(c.kvdt), c.quant,
                             mode, e);
                kvc_attention_params bad = f.p; /* a rope part in another 8-bit dtype than the keys: refused */
                bad.k_rope.dtype = dts[di] == KVC_DTYPE_I8 ? KVC_DTYPE_F8E4M3 : KVC_DTYPE_I8;
                assert_int_equal(kvc_attention_check(&bad), KVC_EINVAL);
                assert_non_null(strstr(kvc_last_error(), "key_rope dtype"));
                if (c.quant == 3) { /* the fixture draws slot scales in slot order: other blocks, other data */
                    fx_free(&f);
                    continue;
                }
                absorbed_same_at_bs64(&f, c);
                fx_free(&f);
            }
}

/* General MLA refusals: an odd rope dim, rope dims that differ, per-token key scales. */
static void test_mla_general_refusals(void **state) {
    (void)state;
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = KVC_LAYOUT_TND, c.storage = KVC_KV_BLOCKS, c.B = 1, c.Nq = 4, c.Nkv = 1, c.D = c.Dv = 32;
    c.Dr = 16, c.qdt = c.kvdt = c.odt = KVC_DTYPE_F32, c.mode = 3, c.pre = c.next = INT32_MAX, c.quant = -1;
    c.bs = 16, c.seed = 4, c.sq[0] = 3, c.skv[0] = 9;
    fx f;
    fx_build(&f, &c);
    kvc_attention_params p = f.p;
    p.q_rope.shape[2] = 15;
    assert_int_equal(kvc_attention_check(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "must be even"));
    p = f.p;
    p.k_rope.shape[2] = 8;
    assert_int_equal(kvc_attention_check(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "differs from the query_rope head dim"));
    assert_int_equal(kvc_attention_check(&f.p), KVC_OK);
    fx_free(&f);
}

/* Per-token int8 dequantisation: keys masked for a row may carry NaN or
 * infinite key/value scales and offsets (slots never written): the row must
 * not read them (selection, not multiplication by zero). Keys hidden by the
 * explicit mask for every row, and keys before a decode row's band. */
static void test_masked_keys_nan_token_scales(void **state) {
    (void)state;
    const kvc_simd_table *tables[2] = {kvci_simd_select(), &kvc_simd_portable};
    for (int ti = 0; ti < 2; ti++)
        for (int mode = 1; mode <= 4; mode += 3) {
            kvci_simd_override(tables[ti]);
            fx_cfg c;
            memset(&c, 0, sizeof c);
            c.layout = KVC_LAYOUT_TND, c.storage = KVC_KV_BLOCKS, c.B = 2, c.Nq = 4, c.Nkv = 2, c.D = c.Dv = 16;
            c.qdt = KVC_DTYPE_F32, c.kvdt = KVC_DTYPE_I8, c.odt = KVC_DTYPE_F32, c.mode = mode;
            c.explicit_mask = mode == 1, c.pre = mode == 4 ? 20 : INT32_MAX, c.next = mode == 4 ? 0 : INT32_MAX;
            c.quant = 1, c.offsets = true, c.bs = 16, c.seed = 21 + (uint32_t)mode, c.lse = true;
            for (int64_t b = 0; b < c.B; b++) c.sq[b] = mode == 4 ? 1 : 3, c.skv[b] = 90 + 7 * b;
            fx f;
            fx_build(&f, &c);
            int64_t poisoned = 0;
            for (int64_t b = 0; b < c.B; b++)
                for (int64_t j = 0; j < c.skv[b]; j++) {
                    const bool hide = mode == 1 ? j % 5 == 2 : j < c.skv[b] - 21; /* mode 4: before the band */
                    if (!hide) continue;
                    if (mode == 1)
                        for (int64_t i = 0; i < f.sqmax; i++) ((uint8_t *)f.mbuf)[(b * f.sqmax + i) * f.skvmax + j] = 1;
                    const int64_t qi = b * f.skvmax + j;
                    f.ks[qi] = NAN, f.vs[qi] = j % 2 ? NAN : INFINITY, f.ko[qi] = INFINITY, f.vo[qi] = NAN;
                    poisoned++;
                }
            assert_true(poisoned > 30);
            run_cpu(&f.p);
            for (int64_t e = 0; e < f.out_n; e++)
                if (!isfinite(((float *)f.obuf)[e]))
                    fail_msg("%s mode %d: output %lld is %g", tables[ti]->name, mode, (long long)e,
                             ((float *)f.obuf)[e]);
            const double err = cpu_vs_ref(&f, 1e-5, 1e-5);
            if (!(err <= 1.0)) fail_msg("%s mode %d: error %g against the reference", tables[ti]->name, mode, err);
            fx_free(&f);
        }
    kvci_simd_override(NULL);
}

static void test_workspace_refusal(void **state) {
    (void)state;
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = KVC_LAYOUT_TND, c.B = 1, c.Nq = c.Nkv = 1, c.D = c.Dv = 8, c.qdt = c.kvdt = c.odt = KVC_DTYPE_F32;
    c.mode = 3, c.pre = c.next = INT32_MAX, c.quant = -1, c.seed = 3, c.sq[0] = 4, c.skv[0] = 4;
    fx f;
    fx_build(&f, &c);
    char small[64];
    assert_int_equal(kvc_attention_cpu(&f.p, small, sizeof small), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "workspace"));
    f.p.scale = 0;
    size_t bytes;
    assert_int_equal(kvc_attention_cpu_workspace_size(&f.p, 1, &bytes), KVC_EINVAL);
    fx_free(&f);
    assert_non_null(kvc_attention_cpu_isa());
}

/* A workspace sized for fewer threads runs the call on fewer threads, and
 * kvc_attention_cpu_threads says how many; the results are the same bytes. */
static void test_threads_query(void **state) {
    (void)state;
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = KVC_LAYOUT_TND, c.B = 1, c.Nq = 4, c.Nkv = 1, c.D = c.Dv = 64, c.qdt = c.kvdt = c.odt = KVC_DTYPE_F32;
    c.mode = 3, c.pre = c.next = INT32_MAX, c.quant = -1, c.seed = 9, c.sq[0] = 1,
    c.skv[0] = 4096; /* 2 M multiply-adds */
    c.storage = KVC_KV_BLOCKS, c.blk = KVC_BLOCK_BNBSND, c.bs = 128;
    fx f;
    fx_build(&f, &c);
    const int maxt = omp_get_max_threads();
    size_t b1 = 0, bn = 0;
    assert_int_equal(kvc_attention_cpu_workspace_size(&f.p, 1, &b1), KVC_OK);
    assert_int_equal(kvc_attention_cpu_workspace_size(&f.p, maxt, &bn), KVC_OK);
    void *ws = NULL;
    assert_int_equal(kvc_aligned_alloc(64, bn, &ws), KVC_OK);
    int t = -1;
    assert_int_equal(kvc_attention_cpu_threads(&f.p, ws, b1, &t), KVC_OK);
    assert_int_equal(t, 1);
    assert_int_equal(kvc_attention_cpu_threads(&f.p, ws, bn, &t), KVC_OK);
    assert_int_equal(t, maxt);
    const size_t ob = (size_t)f.out_n * sizeof(float);
    assert_int_equal(kvc_attention_cpu(&f.p, ws, b1), KVC_OK);
    void *o1 = malloc(ob);
    memcpy(o1, f.obuf, ob);
    assert_int_equal(kvc_attention_cpu(&f.p, ws, bn), KVC_OK);
    assert_memory_equal(o1, f.obuf, ob);
    /* refusals: too small, misaligned, NULL out-pointer */
    assert_int_equal(kvc_attention_cpu_threads(&f.p, ws, 64, &t), KVC_EINVAL);
    assert_int_equal(t, 0);
    assert_non_null(strstr(kvc_last_error(), "workspace"));
    assert_int_equal(kvc_attention_cpu_threads(&f.p, (char *)ws + 8, bn - 8, &t), KVC_EINVAL);
    assert_int_equal(kvc_attention_cpu_threads(&f.p, ws, bn, NULL), KVC_EINVAL);
    free(o1);
    kvc_aligned_free(ws);
    fx_free(&f);
    /* above the million multiply-adds that share a call: one request over one chunk of keys (300: one piece of
     * work) or over pieces of 512 and 48 keys (560: a second thread would take 0.09 of it) runs on one thread,
     * over 512 and 288 keys (800) on two, whatever the workspace holds */
    const int64_t skv[3] = {300, 560, 800}, want[3] = {1, 1, maxt < 2 ? maxt : 2};
    for (int i = 0; i < 3; i++) {
        c.Nq = 32, c.skv[0] = skv[i];
        fx_build(&f, &c);
        assert_int_equal(kvc_attention_cpu_workspace_size(&f.p, maxt, &bn), KVC_OK);
        assert_int_equal(kvc_aligned_alloc(64, bn, &ws), KVC_OK);
        assert_int_equal(kvc_attention_cpu_threads(&f.p, ws, bn, &t), KVC_OK);
        assert_int_equal(t, want[i]);
        kvc_aligned_free(ws);
        fx_free(&f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_vs_ref),
        cmocka_unit_test(test_cpu_half_outputs),
        cmocka_unit_test(test_bitwise_determinism),
        cmocka_unit_test(test_paged_equals_contiguous),
        cmocka_unit_test(test_paged_kv_descriptor),
        cmocka_unit_test(test_workspace_refusal),
        cmocka_unit_test(test_masked_keys_hold_nan),
        cmocka_unit_test(test_chunked_keys_before_unused),
        cmocka_unit_test(test_mla_oracle_dims),
        cmocka_unit_test(test_mla_general_refusals),
        cmocka_unit_test(test_mla_quant_rope),
        cmocka_unit_test(test_masked_keys_nan_token_scales),
        cmocka_unit_test(test_avx512_equals_avx2),
        cmocka_unit_test(test_simd_environment),
        cmocka_unit_test(test_threads_query),
        cmocka_unit_test(test_fp8_rows_exact),
        cmocka_unit_test(test_fp8_direct_values_exact),
        cmocka_unit_test(test_direct_codes_exact),
        cmocka_unit_test(test_lanes_codes_exact),
        cmocka_unit_test(test_long_query_tiles),
        cmocka_unit_test(test_bf16_values_tables_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
