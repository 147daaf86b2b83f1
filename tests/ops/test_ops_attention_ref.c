/* The float64 reference attention: against the fixture's logical oracle for
 * every layout / storage / KV dtype / mode, the spec's direct checks
 * (VER 7.2) and every refused misuse (AO 6.1). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn_fixture.h"

static fx_cfg base_cfg(void) {
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = KVC_LAYOUT_TND;
    c.storage = KVC_KV_CONTIGUOUS;
    c.B = 1;
    c.Nq = c.Nkv = 1;
    c.D = c.Dv = 8;
    c.qdt = c.kvdt = c.odt = KVC_DTYPE_F32;
    c.bs = 4;
    c.mode = 3;
    c.pre = c.next = INT32_MAX;
    c.quant = -1;
    c.seed = 1;
    return c;
}

/* Runs the reference on the fixture and returns the worst error vs the logical oracle. */
static double ref_vs_oracle(fx *f, double rtol, double atol) {
    assert_int_equal(kvc_attention_ref(&f->p), KVC_OK);
    const int64_t n = f->c.B * f->sqmax * f->c.Nq;
    double *out = malloc(sizeof(double) * (size_t)(n * f->c.Dv + 1)), *lse = malloc(sizeof(double) * (size_t)(n + 1));
    fx_oracle(f, out, lse);
    double e = fx_check(f, out, lse, rtol, atol);
    free(out);
    free(lse);
    return e;
}

static void test_ref_matches_oracle_all_layouts(void **state) {
    (void)state;
    const kvc_attn_layout layouts[] = {KVC_LAYOUT_TND,  KVC_LAYOUT_TND_NTD, KVC_LAYOUT_NTD_TND,  KVC_LAYOUT_BSH,
                                       KVC_LAYOUT_BSND, KVC_LAYOUT_BNSD,    KVC_LAYOUT_BSND_NBSD};
    const kvc_block_layout blks[] = {KVC_BLOCK_BNBSND, KVC_BLOCK_BNBSND, KVC_BLOCK_BNNBSD, KVC_BLOCK_NZ,
                                     KVC_BLOCK_BNNDBS};
    const kvc_dtype kvdts[] = {KVC_DTYPE_F32, KVC_DTYPE_F16,    KVC_DTYPE_BF16,
                               KVC_DTYPE_I8,  KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    int runs = 0;
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
        for (size_t si = 0; si < sizeof blks / sizeof blks[0]; si++)
            for (size_t di = 0; di < sizeof kvdts / sizeof kvdts[0]; di++)
                for (int mode = 0; mode <= 4; mode++) {
                    fx_cfg c = base_cfg();
                    c.layout = layouts[li];
                    c.storage = si ? KVC_KV_BLOCKS : KVC_KV_CONTIGUOUS, c.blk = blks[si];
                    c.kvdt = kvdts[di];
                    if (fx_paged_as(&c, KVC_BLOCK_NZ) && c.kvdt == KVC_DTYPE_F32) continue;
                    if (c.layout == KVC_LAYOUT_TND_NTD && c.storage == KVC_KV_CONTIGUOUS) continue;
                    if ((fx_paged_as(&c, KVC_BLOCK_BNNBSD) || fx_paged_as(&c, KVC_BLOCK_BNNDBS)) &&
                        c.layout != KVC_LAYOUT_TND && c.layout != KVC_LAYOUT_BNSD && c.layout != KVC_LAYOUT_TND_NTD)
                        continue;
                    if (c.layout == KVC_LAYOUT_NTD_TND && c.storage != KVC_KV_CONTIGUOUS) continue;
                    c.B = 3;
                    c.sq[0] = 3, c.sq[1] = 1, c.sq[2] = 2;
                    c.skv[0] = 7, c.skv[1] = 16, c.skv[2] = 2;
                    if (c.storage == KVC_KV_CONTIGUOUS && fx_tlayout(c.layout))
                        c.skv[0] = 3, c.skv[1] = 1, c.skv[2] = 2; /* packed prefill */
                    c.Nq = 4, c.Nkv = 2;
                    c.D = fx_paged_as(&c, KVC_BLOCK_NZ) ? 32 : 12;
                    c.Dv = fx_paged_as(&c, KVC_BLOCK_NZ) ? 64 : 8;
                    c.bs = 16;
                    c.mode = mode;
                    c.explicit_mask = mode <= 1;
                    c.pre = mode == 4 ? 2 : mode == 0 ? 3 : INT32_MAX;
                    c.next = mode == 4 ? 0 : mode == 0 ? 1 : INT32_MAX;
                    c.sinks = (mode % 2) == 0;
                    c.lse = true;
                    c.permute_blocks = true;
                    c.extra_blocks = 2;
                    c.extra_width = 1;
                    c.quant = c.kvdt == KVC_DTYPE_I8 ? (int)(runs % 4 == 3 ? 10 : runs % 3) : -1;
                    if (fx_fp8(c.kvdt))
                        c.quant = runs % 5 == 4 ? 10 : runs % 5 - 1; /* none, tensor, token, head, channel */
                    c.offsets = c.kvdt == KVC_DTYPE_I8 && runs % 2;
                    c.seed = (uint32_t)runs + 1;
                    c.softcap = runs % 3 == 1 ? 0.25 : 0.0;     /* scores of about +-1/3: the cap bends them */
                    c.chunk = runs % 4 == 2 ? 2 + runs % 5 : 0; /* chunks of 2-6 keys: inside the prefills */
                    c.alibi = runs % 5 >= 3;                    /* ALiBi slopes: with and without cap and chunks */
                    c.alibi_bf16 = runs % 5 == 4;               /* Falcon's form */
                    fx f;
                    fx_build(&f, &c);
                    double e = ref_vs_oracle(&f, 1e-6, 1e-6);
                    if (e > 1.0)
                        fail_msg("layout %s storage %d kv %s mode %d: error %g", kvc_attn_layout_name(c.layout),
                                 (int)c.storage * 10 + (int)c.blk, kvc_dtype_name(c.kvdt), mode, e);
                    fx_free(&f);
                    runs++;
                }
    assert_true(runs > 200);
}

/* The float64 reference (cpu false) or the CPU kernel on p; a refusal fails the test. */
static void run_ref_or_cpu(kvc_attention_params *p, bool cpu) {
    if (cpu)
        fx_run_cpu(p);
    else
        assert_int_equal(kvc_attention_ref(p), KVC_OK);
}

/* Soft-capping by hand: scores [2, 0] (q 1, keys 2 and 0, scale 1), values [1], [3], cap 1: weights
 * e^tanh(2) and 1, so out = (e^t + 3) / (e^t + 1) with t = tanh 2; cap 0 gives (e^2 + 3) / (e^2 + 1). The
 * reference and the CPU kernel alike; the sink (0) is not capped. */
static void test_softcap_by_hand(void **state) {
    (void)state;
    fx_cfg c = base_cfg();
    c.sq[0] = 1, c.skv[0] = 2, c.D = c.Dv = 1, c.mode = 0, c.lse = true;
    for (int variant = 0; variant < 3; variant++) { /* cap 1; cap 0; cap 1 with a sink of 0 */
        c.softcap = variant == 1 ? 0.0 : 1.0;
        c.sinks = variant == 2;
        fx f;
        fx_build(&f, &c);
        ((float *)f.qbuf)[0] = 1.0f;
        ((float *)f.kbuf)[0] = 2.0f, ((float *)f.kbuf)[1] = 0.0f;
        ((float *)f.vbuf)[0] = 1.0f, ((float *)f.vbuf)[1] = 3.0f;
        if (c.sinks) ((float *)f.sbuf)[0] = 0.0f;
        const double s0 = variant == 1 ? 2.0 : tanh(2.0), w0 = exp(s0), sink = c.sinks ? 1.0 : 0.0;
        const double want = (w0 + 3.0) / (w0 + 1.0 + sink), want_lse = log(w0 + 1.0 + sink);
        for (int cpu = 0; cpu < 2; cpu++) {
            ((float *)f.obuf)[0] = NAN;
            run_ref_or_cpu(&f.p, cpu);
            assert_float_equal(((float *)f.obuf)[0], want, 1e-6);
            assert_float_equal(((float *)f.lsebuf)[0], want_lse, 1e-6);
        }
        fx_free(&f);
    }
}

/* ALiBi by hand: a decode row (Sq 1, Skv 3: position 2) with scores 0 (q 0), values 1, 2, 4 and slope 0.5:
 * biases -1, -0.5, 0, so out = (e^-1 + 2 e^-0.5 + 4) / (e^-1 + e^-0.5 + 1) and lse its log-denominator; slope
 * -0.5 mirrors the weights; the reference and the CPU kernel alike, and with a cap of 1 (the bias added after
 * the cap: zeros stay zeros, so the same numbers). */
static void test_alibi_by_hand(void **state) {
    (void)state;
    fx_cfg c = base_cfg();
    c.sq[0] = 1, c.skv[0] = 3, c.D = c.Dv = 1, c.mode = 3, c.lse = true, c.alibi = true;
    for (int variant = 0; variant < 3; variant++) { /* slope 0.5; slope -0.5; slope 0.5 with cap 1 */
        c.softcap = variant == 2 ? 1.0 : 0.0;
        fx f;
        fx_build(&f, &c);
        const double m = variant == 1 ? -0.5 : 0.5;
        f.slopes[0] = (float)m;
        ((float *)f.qbuf)[0] = 0.0f;
        for (int j = 0; j < 3; j++) ((float *)f.kbuf)[j] = 1.0f, ((float *)f.vbuf)[j] = (float)(1 << j);
        double num = 0.0, den = 0.0;
        for (int j = 0; j < 3; j++) num += exp(m * (j - 2)) * (1 << j), den += exp(m * (j - 2));
        for (int cpu = 0; cpu < 2; cpu++) {
            ((float *)f.obuf)[0] = NAN;
            run_ref_or_cpu(&f.p, cpu);
            assert_float_equal(((float *)f.obuf)[0], num / den, 1e-6);
            assert_float_equal(((float *)f.lsebuf)[0], log(den), 1e-6);
        }
        fx_free(&f);
    }
}

/* VER 7.2: scores [0, 0], sink 0, values [1], [3] -> 4/3, lse ln 3; no sink -> 2, lse ln 2. */
static void test_sink_four_thirds(void **state) {
    (void)state;
    fx_cfg c = base_cfg();
    c.sq[0] = 1, c.skv[0] = 2, c.D = c.Dv = 1, c.mode = 0, c.sinks = true, c.lse = true;
    for (int with_sink = 1; with_sink >= 0; with_sink--) {
        c.sinks = with_sink;
        fx f;
        fx_build(&f, &c);
        ((float *)f.qbuf)[0] = 0.0f;
        ((float *)f.vbuf)[0] = 1.0f, ((float *)f.vbuf)[1] = 3.0f;
        if (with_sink) ((float *)f.sbuf)[0] = 0.0f;
        assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
        assert_float_equal(((float *)f.obuf)[0], with_sink ? 4.0 / 3.0 : 2.0, 1e-6);
        assert_float_equal(((float *)f.lsebuf)[0], log(with_sink ? 3.0 : 2.0), 1e-6);
        fx_free(&f);
    }
}

static void test_yarn_scale(void **state) {
    (void)state;
    assert_float_equal(kvc_yarn_mscale(40.0, 1.0), 1.368888, 1e-6);
    assert_float_equal(kvc_yarn_softmax_scale(128, 64, 40.0, 1.0), 0.1352338, 1e-7);
    assert_float_equal(kvc_yarn_softmax_scale(128, 0, 1.0, 0.0), 0.0883883, 1e-7);
    assert_float_equal(kvc_yarn_mscale(1.0, 1.0), 1.0, 0);
    /* no head dim (negative, 0, or a sum past int64, which overflowed): NaN, not a scale */
    assert_true(isnan(kvc_yarn_softmax_scale(-4, -4, 2.0, 1.0)));
    assert_true(isnan(kvc_yarn_softmax_scale(0, 0, 2.0, 1.0)));
    assert_true(isnan(kvc_yarn_softmax_scale(INT64_MAX, INT64_MAX, 2.0, 1.0)));
    assert_true(isnan(kvc_rope_attention_factor(NULL))); /* was dereferenced */
}

/* AO 3.5 worked table, probed with one-hot values (V = identity, q = 0: uniform over the visible set). */
static void test_visibility_table(void **state) {
    (void)state;
    const int modes[4] = {2, 3, 4, 0};
    const char *want[4][3] = {
        {"100000", "110000", "111000"},
        {"111100", "111110", "111111"},
        {"011100", "001110", "000111"},
        {"111111", "111111", "111111"},
    };
    for (int mi = 0; mi < 4; mi++) {
        fx_cfg c = base_cfg();
        c.sq[0] = 3, c.skv[0] = 6, c.D = 1, c.Dv = 6, c.mode = modes[mi];
        c.layout = KVC_LAYOUT_BSND;
        c.pre = modes[mi] == 4 ? 2 : INT32_MAX;
        c.next = modes[mi] == 4 ? 0 : INT32_MAX;
        c.bidirectional = modes[mi] == 0;
        fx f;
        fx_build(&f, &c);
        for (int i = 0; i < 3; i++) ((float *)f.qbuf)[i] = 0.0f;
        for (int j = 0; j < 6; j++)
            for (int d = 0; d < 6; d++) ((float *)f.vbuf)[j * 6 + d] = j == d ? 1.0f : 0.0f;
        assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 6; j++) {
                const float o = ((float *)f.obuf)[i * 6 + j];
                if ((o > 0.0f) != (want[mi][i][j] == '1'))
                    fail_msg("mode %d row %d key %d: %g", modes[mi], i, j, (double)o);
            }
        fx_free(&f);
    }
}

static void test_degenerate_cases(void **state) {
    (void)state;
    /* Skv = 0 -> zeros, lse +inf; second request: mode 3 with Sq > Skv -> leading rows zero */
    fx_cfg c = base_cfg();
    c.storage = KVC_KV_BLOCKS;
    c.B = 2, c.sq[0] = 2, c.skv[0] = 0, c.sq[1] = 4, c.skv[1] = 2, c.lse = true, c.mode = 3, c.extra_width = 1;
    fx f;
    fx_build(&f, &c);
    assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
    const float *o = f.obuf, *l = f.lsebuf;
    for (int r = 0; r < 2; r++) { /* request 0: rows 0, 1 */
        for (int d = 0; d < c.Dv; d++) assert_true(o[r * c.Dv + d] == 0.0f);
        assert_true(isinf(l[r]) && l[r] > 0);
    }
    for (int r = 2; r < 4; r++) /* request 1 rows 0, 1: i + delta = i - 2 < 0 -> empty */
        for (int d = 0; d < c.Dv; d++) assert_true(o[r * c.Dv + d] == 0.0f);
    for (int r = 4; r < 6; r++) { /* rows 2, 3 see keys: finite although the null block is NaN */
        for (int d = 0; d < c.Dv; d++) assert_true(isfinite(o[r * c.Dv + d]));
        assert_true(isfinite(l[r]));
    }
    fx_free(&f);
    /* Tq = 0: nothing to do */
    fx_cfg z = base_cfg();
    z.sq[0] = 0, z.skv[0] = 0;
    fx_build(&f, &z);
    assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
    fx_free(&f);
}

/* Every refused misuse of AO 6.1 that applies to the operator: status + message fragment. */
typedef void (*mutate_fn)(fx *f);
typedef struct {
    const char *name;
    mutate_fn mutate;
    kvc_status want;
    const char *frag;
} misuse;

static int64_t g_tmp[8];
static uint8_t g_mask[64];
static float g_fmask[64];
static float g_scale[8];

static void m_scale0(fx *f) { f->p.scale = 0.0; }
static void m_scalenan(fx *f) { f->p.scale = NAN; }
static void m_softcap_neg(fx *f) { f->p.logit_softcap = -1.0; }
static void m_softcap_inf(fx *f) { f->p.logit_softcap = INFINITY; }
static void m_softcap_nan(fx *f) { f->p.logit_softcap = NAN; }
static void m_chunk_neg(fx *f) { f->p.attention_chunk_size = -1; }
static void m_chunk_big(fx *f) { f->p.attention_chunk_size = (int64_t)1 << 31; }
static void m_alibi_f16(fx *f) {
    f->p.alibi_slopes = (kvc_tensor){.data = g_scale, .dtype = KVC_DTYPE_F16, .ndim = 1, .shape = {2}};
}
static void m_alibi_shape(fx *f) {
    f->p.alibi_slopes = (kvc_tensor){.data = g_scale, .dtype = KVC_DTYPE_F32, .ndim = 1, .shape = {4}};
}
static void m_alibi_bf16_alone(fx *f) { f->p.alibi_bf16 = true; }
static void m_noheads(fx *f) { f->p.num_heads = 0; }
static void m_gqa(fx *f) { f->p.num_kv_heads = 3; }
static void m_bindheads(fx *f) { f->p.binding.num_kv_heads = 1; }
static void m_nolayout(fx *f) { f->p.layout = KVC_LAYOUT_UNSET; }
static void m_nomode(fx *f) { f->p.sparse_mode = -1; }
static void m_r1(fx *f) { f->p.sparse_mode = 0; }
static void m_floatmask(fx *f) {
    f->p.sparse_mode = 1;
    f->p.mask = (kvc_tensor){.data = g_fmask, .dtype = KVC_DTYPE_F32, .ndim = 2, .shape = {3, 9}};
}
static void m_maskvalue(fx *f) {
    memset(g_mask, 0, sizeof g_mask);
    g_mask[5] = 2;
    f->p.sparse_mode = 1;
    f->p.mask = (kvc_tensor){.data = g_mask, .dtype = KVC_DTYPE_BOOL, .ndim = 2, .shape = {3, 9}};
}
static void m_mask_mode3(fx *f) {
    f->p.mask = (kvc_tensor){.data = g_mask, .dtype = KVC_DTYPE_BOOL, .ndim = 2, .shape = {3, 9}};
}
static void m_mode1_nomask(fx *f) { f->p.sparse_mode = 1; }
static void m_band(fx *f) { f->p.sparse_mode = 4, f->p.pre_tokens = -5, f->p.next_tokens = 2; }
static void m_lenform(fx *f) { f->p.kv_len_form = KVC_KV_FORM_CUMULATIVE; }
static void m_lenunset(fx *f) { f->p.kv_len_form = KVC_KV_FORM_UNSET; }
static void m_cuq(fx *f) {
    g_tmp[0] = 2;
    f->p.q_lens = g_tmp;
}
static void m_negkv(fx *f) {
    g_tmp[0] = -1;
    f->p.kv_lens = g_tmp;
}
static void m_kvbeyond(fx *f) {
    g_tmp[0] = 40;
    f->p.kv_lens = g_tmp;
}
static void m_blockid(fx *f) { ((int32_t *)f->tblbuf)[1] = 1000; }
static void m_blocksize(fx *f) { f->p.block_size = 0; }
static void m_tabledt(fx *f) { f->p.block_table.dtype = KVC_DTYPE_I64; }
/* a width whose row offsets b * W wrap the address space (UBSan: pointer overflow reading row 1) */
static void m_tablewide(fx *f) { f->p.block_table.shape[1] = INT64_MAX / 2; }
static void m_bindbs(fx *f) { f->p.binding.block_size = 8; }
static void m_qshape(fx *f) { f->p.q.shape[1] = 3; }
static void m_outshape(fx *f) { f->p.out.shape[2] = 5; }
static void m_sinklen(fx *f) {
    f->p.sinks = (kvc_tensor){.data = g_scale, .dtype = KVC_DTYPE_F32, .ndim = 1, .shape = {3}};
}
static void m_onerope(fx *f) {
    f->p.q_rope = (kvc_tensor){.data = g_scale, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {3, 2, 64}};
}
static void m_sliding_mode(fx *f) { f->p.binding = (kvc_attn_binding){.type = KVC_BIND_SLIDING, .window = 4}; }
static void m_sliding_pre(fx *f) {
    f->p.binding = (kvc_attn_binding){.type = KVC_BIND_SLIDING, .window = 4};
    f->p.sparse_mode = 4, f->p.pre_tokens = 4, f->p.next_tokens = 0;
}
static void m_full_band(fx *f) {
    f->p.binding = (kvc_attn_binding){.type = KVC_BIND_FULL};
    f->p.sparse_mode = 4, f->p.pre_tokens = 3, f->p.next_tokens = 0;
}
static void m_onescale(fx *f) {
    f->p.key_scale = (kvc_tensor){.data = g_scale, .dtype = KVC_DTYPE_F32, .ndim = 1, .shape = {1}};
}
static void m_lseshape(fx *f) { f->p.lse.shape[0] = 2; }

static void test_refused_misuse(void **state) {
    (void)state;
    const misuse cases[] = {
        {"R5 scale 0", m_scale0, KVC_EINVAL, "scale"},
        {"R5 scale NaN", m_scalenan, KVC_EINVAL, "finite"},
        {"logit_softcap < 0", m_softcap_neg, KVC_EINVAL, "logit_softcap -1"},
        {"logit_softcap inf", m_softcap_inf, KVC_EINVAL, "logit_softcap inf"},
        {"logit_softcap NaN", m_softcap_nan, KVC_EINVAL, "logit_softcap"},
        {"attention_chunk_size < 0", m_chunk_neg, KVC_EINVAL, "attention_chunk_size -1"},
        {"attention_chunk_size 2^31", m_chunk_big, KVC_EINVAL, "attention_chunk_size 2147483648"},
        {"alibi_slopes f16", m_alibi_f16, KVC_EINVAL, "alibi_slopes dtype f16 must be f32"},
        {"alibi_slopes [4] for 2 heads", m_alibi_shape, KVC_EINVAL, "alibi_slopes must be [Nq = 2]"},
        {"alibi_bf16 without slopes", m_alibi_bf16_alone, KVC_EINVAL, "alibi_bf16 needs alibi_slopes"},
        {"num_heads unset", m_noheads, KVC_EINVAL, "num_heads"},
        {"R6 Nq % Nkv", m_gqa, KVC_EINVAL, "divisible"},
        {"R6 binding heads", m_bindheads, KVC_EINVAL, "num_head"},
        {"layout unset", m_nolayout, KVC_EINVAL, "layout"},
        {"mode unset", m_nomode, KVC_EINVAL, "sparse_mode"},
        {"R1 garbled prefill", m_r1, KVC_EINVAL, "R1"},
        {"R2 float mask", m_floatmask, KVC_EINVAL, "R2"},
        {"R2 mask values", m_maskvalue, KVC_EINVAL, "0 (visible) and 1"},
        {"R3 mask with mode 3", m_mask_mode3, KVC_EINVAL, "R3"},
        {"R3 mode 1 without mask", m_mode1_nomask, KVC_EINVAL, "R3"},
        {"R4 band", m_band, KVC_EINVAL, "R4"},
        {"R9 cumulative with paged", m_lenform, KVC_EINVAL, "R9"},
        {"R9 unset", m_lenunset, KVC_EINVAL, "kv_len_form"},
        {"R7 cu_q end", m_cuq, KVC_EINVAL, "cu_q[B-1]"},
        {"R7 negative kv len", m_negkv, KVC_EINVAL, "negative"},
        {"R8 kv len beyond table", m_kvbeyond, KVC_ERANGE, "wide"},
        {"R8 block id", m_blockid, KVC_ERANGE, "outside [0, NB"},
        {"R8 block size", m_blocksize, KVC_EINVAL, "block_size"},
        {"R8 table dtype", m_tabledt, KVC_EINVAL, "int32"},
        {"R8 table bytes past int64", m_tablewide, KVC_EINVAL, "more bytes than int64 counts"},
        {"R15 other manager", m_bindbs, KVC_EINVAL, "R15"},
        {"R7 q shape", m_qshape, KVC_EINVAL, "q has shape"},
        {"R7 out shape", m_outshape, KVC_EINVAL, "out has shape"},
        {"R11 sink length", m_sinklen, KVC_EINVAL, "R11"},
        {"R10 one rope", m_onerope, KVC_EINVAL, "R10"},
        {"R13 sliding non-band", m_sliding_mode, KVC_EINVAL, "R13"},
        {"R13 window overreach", m_sliding_pre, KVC_EINVAL, "outside the layer's window"},
        {"R14 full with band", m_full_band, KVC_EINVAL, "R14"},
        {"R12 one-sided scale", m_onescale, KVC_EINVAL, "R12"},
        {"R7 lse shape", m_lseshape, KVC_EINVAL, "lse"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fx_cfg c = base_cfg();
        c.storage = KVC_KV_BLOCKS;
        c.sq[0] = 3, c.skv[0] = 9, c.Nq = 2, c.Nkv = 2, c.lse = true, c.extra_width = 1;
        fx f;
        fx_build(&f, &c);
        assert_int_equal(kvc_attention_ref(&f.p), KVC_OK); /* the unmutated call is accepted */
        cases[i].mutate(&f);
        const size_t ob = (size_t)f.out_n * sizeof(float);
        unsigned char *before = malloc(ob);
        memcpy(before, f.obuf, ob);
        kvc_status st = kvc_attention_ref(&f.p);
        if (st != cases[i].want || !strstr(kvc_last_error(), cases[i].frag))
            fail_msg("%s: status %s, message '%s'", cases[i].name, kvc_status_str(st), kvc_last_error());
        assert_memory_equal(before, f.obuf, ob); /* nothing written on refusal */
        free(before);
        fx_free(&f);
    }
}

/* Keys in lanes (BNNDBS): a K cache in the head-major shape and a key_rope
 * are refused by name, by both implementations, nothing written. */
static void test_lanes_refusals(void **state) {
    (void)state;
    fx_cfg c = base_cfg();
    c.storage = KVC_KV_BLOCKS, c.blk = KVC_BLOCK_BNNDBS;
    c.sq[0] = 2, c.skv[0] = 9, c.Nq = 2, c.Nkv = 2, c.D = c.Dv = 8, c.bs = 4;
    fx f;
    fx_build(&f, &c);
    assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
    assert_int_equal(kvc_attention_check(&f.p), KVC_OK);
    const size_t ob = (size_t)f.out_n * sizeof(float);
    unsigned char *before = malloc(ob);
    memcpy(before, f.obuf, ob);
    kvc_attention_params p = f.p;
    p.k.shape[2] = c.bs, p.k.shape[3] = c.D; /* [NB, Nkv, bs, D]: the V order, not keys in lanes */
    assert_int_equal(kvc_attention_ref(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "k head dim 4 differs"));
    p = f.p;
    float rope[64] = {0};
    p.q_rope = (kvc_tensor){.data = rope, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {2, 2, 4}};
    p.k_rope = (kvc_tensor){.data = rope, .dtype = KVC_DTYPE_F32, .ndim = 4, .shape = {f.p.k.shape[0], 2, 4, 4}};
    assert_int_equal(kvc_attention_check(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "BnNDBs"));
    assert_memory_equal(before, f.obuf, ob);
    free(before);
    fx_free(&f);
}

/* The paged K/V descriptor (kvc_paged_kv): the fixture's BNBSND cache
 * described densely is accepted and gives the front end's bits; every
 * field that cannot be used is refused by name, nothing written. */
static kvc_paged_tensor dense_bnbsnd(const fx_cfg *c, int64_t dim) {
    return (kvc_paged_tensor){.layout = KVC_BLOCK_BNBSND,
                              .head_dim = dim,
                              .block_stride = (int64_t)c->bs * c->Nkv * dim,
                              .head_stride = dim,
                              .token_stride = (int64_t)c->Nkv * dim,
                              .channel_stride = 1};
}

/* The reference through p (f's call described otherwise) gives the bits of f's own call. */
static void expect_same_bits(fx *f, const kvc_attention_params *p, const char *what) {
    const size_t ob = (size_t)f->out_n * sizeof(float);
    assert_int_equal(kvc_attention_ref(&f->p), KVC_OK);
    unsigned char *want = malloc(ob);
    memcpy(want, f->obuf, ob);
    memset(f->obuf, 0, ob);
    if (kvc_attention_ref(p) != KVC_OK) fail_msg("%s refused: %s", what, kvc_last_error());
    assert_memory_equal(want, f->obuf, ob);
    free(want);
}

/* p refused by the reference and the check alike with status want and a
 * message holding frag, f's output untouched. */
static void expect_refused(const kvc_attention_params *p, fx *f, const char *name, kvc_status want, const char *frag) {
    const size_t ob = (size_t)f->out_n * sizeof(float);
    unsigned char *before = malloc(ob);
    memcpy(before, f->obuf, ob);
    for (int impl = 0; impl < 2; impl++) {
        const kvc_status st = impl ? kvc_attention_check(p) : kvc_attention_ref(p);
        if (st != want || !strstr(kvc_last_error(), frag))
            fail_msg("%s: status %s, message '%s'", name, kvc_status_str(st), kvc_last_error());
    }
    assert_memory_equal(before, f->obuf, ob);
    free(before);
}

static void test_paged_kv_refusals(void **state) {
    (void)state;
    fx_cfg c = base_cfg();
    c.storage = KVC_KV_BLOCKS;
    c.sq[0] = 2, c.skv[0] = 9, c.Nq = 2, c.Nkv = 2, c.D = c.Dv = 8, c.bs = 4;
    fx f;
    fx_build(&f, &c);
    const kvc_paged_kv good = {.num_blocks = f.nblocks, .k = dense_bnbsnd(&c, c.D), .v = dense_bnbsnd(&c, c.Dv)};
    kvc_paged_kv d = good;
    kvc_attention_params p = f.p;
    p.paged_kv = &d;
    p.block_layout = KVC_BLOCK_NZ;                               /* not read with a descriptor */
    p.k.ndim = 1, p.k.shape[0] = f.nblocks * c.bs * c.Nkv * c.D; /* the shape only bounds the extent */
    expect_same_bits(&f, &p, "dense descriptor");
    const int64_t big = INT64_MAX / 2;
    const struct {
        const char *name;
        int64_t *field; /* in d, set to value; NULL: the mutation below */
        int64_t value;
        kvc_status st;
        const char *frag;
    } cases[] = {
        {"num_blocks", &d.num_blocks, 0, KVC_EINVAL, "paged_kv.num_blocks 0 must be > 0"},
        {"num_blocks below the table", &d.num_blocks, 1, KVC_ERANGE, "outside [0, NB = 1)"},
        {"k.head_dim", &d.k.head_dim, 0, KVC_EINVAL, "paged_kv.k.head_dim 0 must be > 0"},
        {"k.head_dim vs q", &d.k.head_dim, 4, KVC_EINVAL, "k head dim 4 differs"},
        {"v.head_dim", &d.v.head_dim, -2, KVC_EINVAL, "paged_kv.v.head_dim -2 must be > 0"},
        {"k.block_stride", &d.k.block_stride, 0, KVC_EINVAL, "paged_kv.k.block_stride 0 must be > 0"},
        {"v.head_stride", &d.v.head_stride, -8, KVC_EINVAL, "paged_kv.v.head_stride -8 must be > 0"},
        {"k.token_stride", &d.k.token_stride, 0, KVC_EINVAL, "paged_kv.k.token_stride 0 must be > 0"},
        {"v.channel_stride", &d.v.channel_stride, 0, KVC_EINVAL, "paged_kv.v.channel_stride 0 must be > 0"},
        {"rows channel_stride", &d.v.channel_stride, 2, KVC_EINVAL, "paged_kv.v.channel_stride 2: a BNBSND"},
        {"k.layout", (int64_t *)NULL, 7, KVC_EINVAL, "paged_kv.k.layout 7 unknown"},
        {"v in lanes", (int64_t *)NULL, KVC_BLOCK_BNNDBS, KVC_EINVAL, "paged_kv.v.layout BNNDBS: keys in lanes"},
        {"NZ of f32", (int64_t *)NULL, KVC_BLOCK_NZ, KVC_EINVAL, "paged_kv.k.layout NZ: tiles hold"},
        {"k beyond the tensor", &d.k.block_stride, 1000, KVC_ERANGE, "paged_kv.k: num_blocks"},
        {"v beyond the tensor", &d.v.token_stride, 17, KVC_ERANGE, "outside the tensor's"},
        {"int64 overflow", &d.v.block_stride, big, KVC_ERANGE, "beyond int64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d = good;
        if (cases[i].field)
            *cases[i].field = cases[i].value;
        else if (cases[i].value == KVC_BLOCK_BNNDBS)
            d.v.layout = KVC_BLOCK_BNNDBS;
        else
            d.k.layout = (kvc_block_layout)cases[i].value;
        expect_refused(&p, &f, cases[i].name, cases[i].st, cases[i].frag);
    }
    d = good;
    /* keys in lanes are adjacent within a block (the lanes kernels read a block's keys as consecutive
     * elements): another token_stride is refused, not read as 1 by the kernel and as given by the reference */
    d.k.layout = KVC_BLOCK_BNNDBS, d.k.token_stride = 2;
    expect_refused(&p, &f, "lanes token_stride", KVC_EINVAL,
                   "paged_kv.k.token_stride 2: keys in lanes (BNNDBS) are adjacent in a block (1)");
    d = good;
    /* hostile block ids: negative, and INT32_MAX below a num_blocks that admits it (its block lies outside k) */
    int32_t *tbl = p.block_table.data;
    const int32_t id0 = tbl[0];
    tbl[0] = -1;
    expect_refused(&p, &f, "negative block id", KVC_ERANGE, "block_table[0][0] = -1 is outside [0, NB = 4)");
    tbl[0] = INT32_MAX, d.num_blocks = (int64_t)INT32_MAX + 1;
    expect_refused(&p, &f, "block id INT32_MAX", KVC_ERANGE, "paged_kv.k: num_blocks 2147483648 x block_stride 64");
    tbl[0] = id0, d = good;
    /* The described tensor's shape bounds the extent: a negative extent, or
     * one whose element count passes int64 (wrapping to a small positive
     * count), is refused by name, not multiplied out. */
    const struct {
        int32_t ndim;
        int64_t s0, s1;
        const char *frag;
    } shapes[] = {
        {2, -2, -(f.nblocks * c.bs * c.Nkv * c.D), "paged_kv.k: the tensor it places has extent -2 in dim 0"},
        {2, ((int64_t)1 << 62) + 1, 4, "beyond int64"},
    };
    const kvc_tensor k0 = p.k;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        p.k.ndim = shapes[i].ndim, p.k.shape[0] = shapes[i].s0, p.k.shape[1] = shapes[i].s1;
        expect_refused(&p, &f, "shape", KVC_EINVAL, shapes[i].frag);
    }
    p.k = k0;
    p.kv_storage = KVC_KV_CONTIGUOUS, p.kv_len_form = KVC_KV_FORM_DIRECT;
    assert_int_equal(kvc_attention_check(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "paged_kv is given but kv_storage is CONTIGUOUS"));
    fx_free(&f);
}

/* The descriptor's key_rope part (MLA, Dr 8 beside D 16): the fixture's
 * BNBSND key_rope described densely gives the front end's bits; each of its
 * fields that cannot be used is refused by name (paged_kv.k_rope), nothing
 * written. */
static void test_paged_kv_rope_refusals(void **state) {
    (void)state;
    fx_cfg c = base_cfg();
    c.storage = KVC_KV_BLOCKS;
    c.sq[0] = 2, c.skv[0] = 9, c.Nq = 2, c.Nkv = 1, c.D = c.Dv = 16, c.Dr = 8, c.bs = 4;
    fx f;
    fx_build(&f, &c);
    const kvc_paged_kv good = {.num_blocks = f.nblocks,
                               .k = dense_bnbsnd(&c, c.D),
                               .v = dense_bnbsnd(&c, c.Dv),
                               .k_rope = dense_bnbsnd(&c, c.Dr)};
    kvc_paged_kv d = good;
    kvc_attention_params p = f.p;
    p.paged_kv = &d;
    p.k_rope.ndim = 1, p.k_rope.shape[0] = f.nblocks * c.bs * c.Nkv * c.Dr;
    expect_same_bits(&f, &p, "dense key_rope descriptor");
    const struct {
        const char *name;
        int64_t *field; /* in d.k_rope, set to value; NULL: d.k_rope.layout = value */
        int64_t value;
        kvc_status st;
        const char *frag;
    } cases[] = {
        {"head_dim", &d.k_rope.head_dim, 0, KVC_EINVAL, "paged_kv.k_rope.head_dim 0 must be > 0"},
        {"head_dim vs q_rope", &d.k_rope.head_dim, 4, KVC_EINVAL, "key_rope head dim 4 differs"},
        {"block_stride", &d.k_rope.block_stride, -1, KVC_EINVAL, "paged_kv.k_rope.block_stride -1 must be > 0"},
        {"head_stride", &d.k_rope.head_stride, 0, KVC_EINVAL, "paged_kv.k_rope.head_stride 0 must be > 0"},
        {"token_stride", &d.k_rope.token_stride, 0, KVC_EINVAL, "paged_kv.k_rope.token_stride 0 must be > 0"},
        {"channel_stride", &d.k_rope.channel_stride, 3, KVC_EINVAL, "paged_kv.k_rope.channel_stride 3: a BNBSND"},
        {"layout", (int64_t *)NULL, -1, KVC_EINVAL, "paged_kv.k_rope.layout -1 unknown"},
        {"in lanes", (int64_t *)NULL, KVC_BLOCK_BNNDBS, KVC_EINVAL, "paged_kv.k_rope.layout BNNDBS: keys in lanes"},
        {"NZ of f32", (int64_t *)NULL, KVC_BLOCK_NZ, KVC_EINVAL, "paged_kv.k_rope.layout NZ: tiles hold"},
        {"beyond the tensor", &d.k_rope.token_stride, 9, KVC_ERANGE, "paged_kv.k_rope: num_blocks"},
        {"int64 overflow", &d.k_rope.block_stride, INT64_MAX / 3, KVC_ERANGE, "beyond int64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d = good;
        if (cases[i].field)
            *cases[i].field = cases[i].value;
        else
            d.k_rope.layout = (kvc_block_layout)cases[i].value;
        expect_refused(&p, &f, cases[i].name, cases[i].st, cases[i].frag);
    }
    fx_free(&f);
}

/* Issue 12 section 5 regressions: a band of INT64_MAX both ways is "no
 * limit" (it was refused as an empty band after a signed overflow); the
 * 4-D [NB, bs, Nkv, D] form of KVC_BLOCK_BNBSND caches is accepted and gives the
 * bytes of the 3-D form; messages name the actual fault. */
static void test_issue12_defects(void **state) {
    (void)state;
    fx_cfg c = base_cfg();
    c.storage = KVC_KV_BLOCKS, c.B = 2, c.sq[0] = 3, c.skv[0] = 9, c.sq[1] = 1, c.skv[1] = 5, c.Nq = 4, c.Nkv = 2;
    c.lse = true;
    fx f;
    fx_build(&f, &c);
    /* band INT64_MAX / INT64_MAX with modes 4 and 0 + mask: the same as no band */
    assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
    const size_t ob = (size_t)f.out_n * sizeof(float);
    float *causal = malloc(ob);
    memcpy(causal, f.obuf, ob);
    f.p.sparse_mode = 4, f.p.pre_tokens = INT64_MAX, f.p.next_tokens = 0;
    assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
    assert_memory_equal(causal, f.obuf, ob); /* band [-inf, 0] from the diagonal = causal (mode 3) */
    f.p.next_tokens = INT64_MAX;
    if (kvc_attention_check(&f.p) != KVC_OK) fail_msg("INT64_MAX band refused: %s", kvc_last_error());
    f.p.pre_tokens = INT64_MIN, f.p.next_tokens = INT64_MAX; /* |pre| >= Sq */
    assert_int_equal(kvc_attention_check(&f.p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "R4"));
    f.p.pre_tokens = INT64_MIN, f.p.next_tokens = INT64_MIN;
    assert_int_equal(kvc_attention_check(&f.p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "R4"));
    f.p.sparse_mode = 3, f.p.pre_tokens = f.p.next_tokens = INT32_MAX;
    /* 4-D KVC_BLOCK_BNBSND: [NB, bs, Nkv, D] reads as [NB, bs, Nkv*D] */
    kvc_attention_params p4 = f.p;
    p4.k.ndim = p4.v.ndim = 4;
    p4.k.shape[2] = p4.v.shape[2] = c.Nkv, p4.k.shape[3] = c.D, p4.v.shape[3] = c.Dv;
    memset(f.obuf, 0, ob);
    if (kvc_attention_ref(&p4) != KVC_OK) fail_msg("4-D BNBSND refused: %s", kvc_last_error());
    assert_memory_equal(causal, f.obuf, ob);
    p4.k.shape[2] = 1, p4.k.shape[3] = c.Nkv * c.D; /* a head count that is not Nkv */
    assert_int_equal(kvc_attention_check(&p4), KVC_EINVAL);
    /* messages */
    kvc_attention_params m = f.p;
    m.block_table.data = NULL;
    assert_int_equal(kvc_attention_check(&m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "block_table is required"));
    assert_null(strstr(kvc_last_error(), "ndim"));
    m = f.p;
    m.k.ndim = 2;
    assert_int_equal(kvc_attention_check(&m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "has 2 dims"));
    assert_null(strstr(kvc_last_error(), "required"));
    m = f.p;
    m.batch = -1;
    assert_int_equal(kvc_attention_check(&m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "batch -1 must be >= 0"));
    assert_null(strstr(kvc_last_error(), "kv_lens"));
    m = f.p;
    m.kv_lens = NULL;
    assert_int_equal(kvc_attention_check(&m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "kv_lens is NULL"));
    free(causal);
    fx_free(&f);
}

static void test_mla_rules(void **state) {
    (void)state;
    fx_cfg c = base_cfg();
    c.layout = KVC_LAYOUT_TND_NTD, c.storage = KVC_KV_BLOCKS, c.blk = KVC_BLOCK_NZ, c.kvdt = KVC_DTYPE_BF16,
    c.qdt = KVC_DTYPE_BF16;
    c.B = 2, c.sq[0] = 1, c.sq[1] = 1, c.skv[0] = 20, c.skv[1] = 33, c.Nq = 4, c.Nkv = 1, c.D = c.Dv = 512, c.Dr = 64;
    c.bs = 16, c.mode = 0;
    fx f;
    fx_build(&f, &c);
    assert_int_equal(kvc_attention_ref(&f.p), KVC_OK);
    f.p.sparse_mode = 3; /* absorbed decode with mode 3 and Sq = 1 is outside the rule table */
    assert_int_equal(kvc_attention_ref(&f.p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "R10"));
    f.p.sparse_mode = 0;
    f.p.lse = (kvc_tensor){.data = f.obuf, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {2, 4, 1}};
    assert_int_equal(kvc_attention_ref(&f.p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "LSE"));
    fx_free(&f);
}

static void test_named_parameters(void **state) {
    (void)state;
    kvc_attention_params p = kvc_attention_default_params();
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V2, "softmax_scale", 0.125), KVC_OK);
    assert_true(p.scale == 0.125);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "scale", 0.25), KVC_OK);
    assert_true(p.scale == 0.25);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V2, "scale", 0.5), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "softmax_scale"));
    assert_true(p.scale == 0.25);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "softmax_scale", 0.5), KVC_EINVAL);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "num_query_heads", 8), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "num_heads"));
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V2, "num_query_heads", 8), KVC_OK);
    assert_int_equal(p.num_heads, 8);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "learnable_sink", 1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "v2 only"));
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V2, "return_softmax_lse", 1), KVC_OK);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "return_softmax_lse", 1), KVC_EINVAL);
    /* integer parameters take whole numbers of their type only (NaN and 1e300 were cast: undefined
     * behaviour; 2.5 and 3e9 were truncated or clamped without a word); p stays as it was */
    const double bad[] = {NAN, INFINITY, 2.5, 1e300, 3e9, -3e9};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "num_heads", bad[i]), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), "parameter 'num_heads'"));
        assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "block_size", bad[i]), KVC_EINVAL);
    }
    assert_int_equal(p.num_heads, 8);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "pre_tokens", 1e300), KVC_EINVAL);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "next_tokens", NAN), KVC_EINVAL);
    assert_int_equal(kvc_attention_params_set(&p, KVC_API_V1, "pre_tokens", 3e9), KVC_OK); /* int64 field */
    assert_true(p.pre_tokens == INT64_C(3000000000));
    /* defaults leave the required fields unset */
    kvc_attention_params d = kvc_attention_default_params();
    assert_true(d.scale == 0.0 && d.sparse_mode == -1 && d.layout == KVC_LAYOUT_UNSET && d.num_heads == 0);
    assert_true(d.pre_tokens == INT32_MAX && d.next_tokens == INT32_MAX);
}

static void test_mask_template(void **state) {
    (void)state;
    uint8_t *t = malloc((size_t)KVC_MASK_TEMPLATE_DIM * KVC_MASK_TEMPLATE_DIM);
    kvc_mask_template_fill(t);
    assert_int_equal(t[0], 0);
    assert_int_equal(t[1], 1);
    assert_int_equal(t[KVC_MASK_TEMPLATE_DIM], 0);
    fx_cfg c = base_cfg();
    c.sq[0] = 3, c.skv[0] = 5;
    fx f;
    fx_build(&f, &c);
    f.p.mask = (kvc_tensor){.data = t, .dtype = KVC_DTYPE_BOOL, .ndim = 2, .shape = {2048, 2048}};
    assert_int_equal(kvc_attention_ref(&f.p), KVC_OK); /* the canonical template is accepted */
    t[5] = 0;                                          /* altered template (R3) */
    assert_int_equal(kvc_attention_ref(&f.p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "canonical"));
    fx_free(&f);
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_matches_oracle_all_layouts),
        cmocka_unit_test(test_sink_four_thirds),
        cmocka_unit_test(test_softcap_by_hand),
        cmocka_unit_test(test_alibi_by_hand),
        cmocka_unit_test(test_yarn_scale),
        cmocka_unit_test(test_visibility_table),
        cmocka_unit_test(test_degenerate_cases),
        cmocka_unit_test(test_refused_misuse),
        cmocka_unit_test(test_lanes_refusals),
        cmocka_unit_test(test_paged_kv_refusals),
        cmocka_unit_test(test_paged_kv_rope_refusals),
        cmocka_unit_test(test_mla_rules),
        cmocka_unit_test(test_issue12_defects),
        cmocka_unit_test(test_named_parameters),
        cmocka_unit_test(test_mask_template),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
