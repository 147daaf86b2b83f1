/* Metamorphic relations of the attention operator (VER 7.3),
 * for the fast CPU kernel and the float64 reference:
 *   #5 MLA absorbed (q W_UK, value = latent, then W_UV) == the expanded
 *      multi-head computation (k = c_kv W_UK^T, v = c_kv W_UV per head);
 *   #7 LSE merge of two disjoint key shards == the unsplit result;
 *   #8 the last prefill row (and every row) == a decode step over the same cached prefix;
 *   #9 a speculative verify window with mode 3 == consecutive decode steps.
 * The CPU kernel computes each (row, key) pair the same way whatever the
 * rows around it, so #8 and #9 hold bitwise for it (memcmp). */
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

#define LONG_KV (KVC_SMALL ? 140 : 600) /* > one 512-key chunk outside sanitizer builds */

typedef enum { RUN_CPU, RUN_REF } run_kind;

static void run(kvc_attention_params *p, run_kind k) {
    kvc_status st;
    if (k == RUN_REF) {
        st = kvc_attention_ref(p);
    } else {
        size_t bytes = 0;
        assert_int_equal(kvc_attention_cpu_workspace_size(p, omp_get_max_threads(), &bytes), KVC_OK);
        void *ws = NULL;
        assert_int_equal(kvc_aligned_alloc(64, bytes, &ws), KVC_OK);
        st = kvc_attention_cpu(p, ws, bytes);
        kvc_aligned_free(ws);
    }
    if (st != KVC_OK) fail_msg("%s: %s", k == RUN_CPU ? "cpu" : "ref", kvc_last_error());
}

static kvc_tensor t3(void *data, kvc_dtype dt, int64_t a, int64_t b, int64_t c) {
    return (kvc_tensor){.data = data, .dtype = dt, .ndim = 3, .shape = {a, b, c}};
}

static double rel_err(double got, double want, double rtol, double atol) {
    const double e = fabs(got - want) / (atol + rtol * fabs(want));
    return e == e ? e : INFINITY;
}

/* ---- #5 MLA absorption ---------------------------------------------------- */

enum { MLA_H = 4, MLA_DC = 512, MLA_DN = 128, MLA_DR = 64, MLA_DV = 128, MLA_BS = 16 };

typedef struct mla_case {
    int64_t B, sq[2], skv[2];
    int mode;
} mla_case;

/* Absorbed vs expanded for one batch, on the CPU kernel (worst[RUN_CPU]) and the reference (worst[RUN_REF]) over
 * the same inputs; each worst error <= 1 passes. */
static void mla_equivalence(const mla_case *mc, uint32_t seed, double worst[2]) {
    const int64_t H = MLA_H, Dc = MLA_DC, Dn = MLA_DN, Dr = MLA_DR, Dv = MLA_DV, bs = MLA_BS;
    int64_t cuq[2], cukv[2], dkv[2], T = 0, Tkv = 0, nblk = 0, width = 0;
    for (int64_t b = 0; b < mc->B; b++) {
        T += mc->sq[b], Tkv += mc->skv[b];
        cuq[b] = T, cukv[b] = Tkv, dkv[b] = mc->skv[b];
        const int64_t nb = (mc->skv[b] + bs - 1) / bs;
        nblk += nb;
        width = nb > width ? nb : width;
    }
    uint32_t rs = seed;
    float *qn = malloc(sizeof(float) * (size_t)(T * H * Dn)), *qp = malloc(sizeof(float) * (size_t)(T * H * Dr));
    float *ckv = malloc(sizeof(float) * (size_t)(Tkv * Dc)), *kr = malloc(sizeof(float) * (size_t)(Tkv * Dr));
    float *wuk = malloc(sizeof(float) * (size_t)(H * Dn * Dc)), *wuv = malloc(sizeof(float) * (size_t)(H * Dc * Dv));
    for (int64_t i = 0; i < T * H * Dn; i++) qn[i] = (float)fx_unif(&rs);
    for (int64_t i = 0; i < T * H * Dr; i++) qp[i] = (float)fx_unif(&rs);
    for (int64_t i = 0; i < Tkv * Dc; i++) ckv[i] = (float)fx_unif(&rs);
    for (int64_t i = 0; i < Tkv * Dr; i++) kr[i] = (float)fx_unif(&rs);
    for (int64_t i = 0; i < H * Dn * Dc; i++) wuk[i] = (float)(fx_unif(&rs) / 8.0);
    for (int64_t i = 0; i < H * Dc * Dv; i++) wuv[i] = (float)(fx_unif(&rs) / 8.0);
    const double scale = 1.0 / sqrt((double)(Dn + Dr)); /* from d_nope + d_rope, not 576 (AO 3.7) */

    /* absorbed: q_abs [T, H, Dc] = q_nope W_UK; latent and rope caches paged [NB, bs, Dc|Dr], key = value */
    float *qa = calloc((size_t)(T * H * Dc), sizeof(float));
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t c = 0; c < Dc; c++) {
                double s = 0;
                for (int64_t d = 0; d < Dn; d++) s += (double)qn[(t * H + h) * Dn + d] * wuk[(h * Dn + d) * Dc + c];
                qa[(t * H + h) * Dc + c] = (float)s;
            }
    const int64_t NB = nblk + 1; /* block 0: NaN-filled null block */
    float *lat = malloc(sizeof(float) * (size_t)(NB * bs * Dc)), *rope = malloc(sizeof(float) * (size_t)(NB * bs * Dr));
    for (int64_t i = 0; i < NB * bs * Dc; i++) lat[i] = NAN;
    for (int64_t i = 0; i < NB * bs * Dr; i++) rope[i] = NAN;
    int32_t *tbl = calloc((size_t)(mc->B * width), sizeof(int32_t));
    int64_t next = NB - 1; /* blocks handed out from the top: the table is not the identity */
    for (int64_t b = 0; b < mc->B; b++)
        for (int64_t j = 0; j < mc->skv[b]; j++) {
            if (j % bs == 0) tbl[b * width + j / bs] = (int32_t)next--;
            const int64_t slot = (int64_t)tbl[b * width + j / bs] * bs + j % bs, row = (b ? cukv[b - 1] : 0) + j;
            memcpy(lat + slot * Dc, ckv + row * Dc, sizeof(float) * (size_t)Dc);
            memcpy(rope + slot * Dr, kr + row * Dr, sizeof(float) * (size_t)Dr);
        }
    float *oa = malloc(sizeof(float) * (size_t)(H * T * Dc));
    kvc_attention_params p = kvc_attention_default_params();
    p.layout = KVC_LAYOUT_TND_NTD, p.num_heads = (int)H, p.num_kv_heads = 1, p.scale = scale, p.sparse_mode = mc->mode;
    p.batch = mc->B, p.q_lens = cuq, p.kv_lens = dkv, p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.q = t3(qa, KVC_DTYPE_F32, T, H, Dc), p.q_rope = t3(qp, KVC_DTYPE_F32, T, H, Dr);
    p.k = t3(lat, KVC_DTYPE_F32, NB, bs, Dc), p.v = p.k, p.k_rope = t3(rope, KVC_DTYPE_F32, NB, bs, Dr);
    p.kv_storage = KVC_KV_BLOCKS, p.block_size = bs;
    p.block_table = (kvc_tensor){.data = tbl, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {mc->B, width}};
    p.out = t3(oa, KVC_DTYPE_F32, H, T, Dc);

    /* expanded: per head k = c_kv W_UK^T [Tkv, H, Dn], v = c_kv W_UV [Tkv, H, Dv], rope broadcast; packed TND */
    float *ke = malloc(sizeof(float) * (size_t)(Tkv * H * Dn)), *ve = malloc(sizeof(float) * (size_t)(Tkv * H * Dv));
    float *re = malloc(sizeof(float) * (size_t)(Tkv * H * Dr)), *oe = malloc(sizeof(float) * (size_t)(T * H * Dv));
    for (int64_t j = 0; j < Tkv; j++)
        for (int64_t h = 0; h < H; h++) {
            for (int64_t d = 0; d < Dn; d++) {
                double s = 0;
                for (int64_t c = 0; c < Dc; c++) s += (double)ckv[j * Dc + c] * wuk[(h * Dn + d) * Dc + c];
                ke[(j * H + h) * Dn + d] = (float)s;
            }
            for (int64_t d = 0; d < Dv; d++) {
                double s = 0;
                for (int64_t c = 0; c < Dc; c++) s += (double)ckv[j * Dc + c] * wuv[(h * Dc + c) * Dv + d];
                ve[(j * H + h) * Dv + d] = (float)s;
            }
            memcpy(re + (j * H + h) * Dr, kr + j * Dr, sizeof(float) * (size_t)Dr);
        }
    kvc_attention_params e = kvc_attention_default_params();
    e.layout = KVC_LAYOUT_TND, e.num_heads = (int)H, e.num_kv_heads = (int)H, e.scale = scale, e.sparse_mode = mc->mode;
    e.batch = mc->B, e.q_lens = cuq, e.kv_lens = cukv, e.kv_len_form = KVC_KV_FORM_CUMULATIVE;
    e.q = t3(qn, KVC_DTYPE_F32, T, H, Dn), e.q_rope = t3(qp, KVC_DTYPE_F32, T, H, Dr);
    e.k = t3(ke, KVC_DTYPE_F32, Tkv, H, Dn), e.v = t3(ve, KVC_DTYPE_F32, Tkv, H, Dv);
    e.k_rope = t3(re, KVC_DTYPE_F32, Tkv, H, Dr), e.kv_storage = KVC_KV_CONTIGUOUS;
    e.out = t3(oe, KVC_DTYPE_F32, T, H, Dv);
    for (run_kind kind = RUN_CPU; kind <= RUN_REF; kind++) {
        run(&p, kind);
        run(&e, kind);
        /* o[t, h] = O[h, t] W_UV[h] must equal the expanded output */
        worst[kind] = 0;
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t d = 0; d < Dv; d++) {
                    double s = 0;
                    for (int64_t c = 0; c < Dc; c++) s += (double)oa[(h * T + t) * Dc + c] * wuv[(h * Dc + c) * Dv + d];
                    const double er = rel_err(oe[(t * H + h) * Dv + d], s, 1e-4, 1e-5);
                    worst[kind] = er > worst[kind] ? er : worst[kind];
                }
    }
    free(qn), free(qp), free(ckv), free(kr), free(wuk), free(wuv), free(qa), free(lat), free(rope), free(tbl);
    free(oa), free(ke), free(ve), free(re), free(oe);
}

static void test_mla_absorbed_equals_expanded(void **state) {
    (void)state;
    const mla_case decode = {2, {1, 1}, {37, LONG_KV}, 0}; /* q_len 1: mode 0, no mask */
    const mla_case verify = {2, {3, 5}, {20, 131}, 3};     /* speculative verify: mode 3 */
    double e[2][2];
    mla_equivalence(&decode, 7, e[0]);
    mla_equivalence(&verify, 8, e[1]);
    for (int c = 0; c < 2; c++)
        for (int k = RUN_CPU; k <= RUN_REF; k++)
            if (e[c][k] > 1.0)
                fail_msg("%s %s: absorbed vs expanded error %g", k == RUN_REF ? "ref" : "cpu", c ? "verify" : "decode",
                         e[c][k]);
}

/* ---- fixtures for #7, #8, #9: packed queries, paged bf16 K/V ------------- */

static fx_cfg paged_cfg(int64_t B, const int64_t *sq, const int64_t *skv, int mode, uint32_t seed) {
    fx_cfg c;
    memset(&c, 0, sizeof c);
    c.layout = KVC_LAYOUT_TND, c.storage = KVC_KV_BLOCKS, c.B = B;
    for (int64_t b = 0; b < B; b++) c.sq[b] = sq[b], c.skv[b] = skv[b];
    c.Nq = 8, c.Nkv = 2, c.D = c.Dv = 64;
    c.qdt = KVC_DTYPE_F32, c.kvdt = KVC_DTYPE_BF16, c.odt = KVC_DTYPE_F32;
    c.bs = 16, c.mode = mode, c.pre = c.next = INT32_MAX, c.bidirectional = mode == 0;
    c.lse = true, c.quant = -1, c.seed = seed, c.permute_blocks = true, c.extra_blocks = 2;
    return c;
}

/* A decode call (one query row per request) on the fixture's cache: query
 * rows rows[b] of the fixture, kv_lens[b] visible keys, mode 0. */
typedef struct dec {
    float q[FX_MAXB * 8 * 64], out[FX_MAXB * 8 * 64], lse[FX_MAXB * 8];
    int64_t cuq[FX_MAXB], kvl[FX_MAXB];
    kvc_attention_params p;
} dec;

static void dec_build(dec *d, const fx *f, const int64_t *rows, const int64_t *kv_lens) {
    const int64_t B = f->c.B, Nq = f->c.Nq, D = f->c.D;
    d->p = f->p;
    for (int64_t b = 0; b < B; b++) {
        memcpy(d->q + b * Nq * D, (const float *)f->qbuf + rows[b] * Nq * D, sizeof(float) * (size_t)(Nq * D));
        d->cuq[b] = b + 1, d->kvl[b] = kv_lens[b];
    }
    memset(d->out, 0xff, sizeof d->out), memset(d->lse, 0xff, sizeof d->lse); /* poisoned */
    d->p.q = t3(d->q, KVC_DTYPE_F32, B, Nq, D), d->p.out = t3(d->out, KVC_DTYPE_F32, B, Nq, f->c.Dv);
    d->p.lse = t3(d->lse, KVC_DTYPE_F32, B, Nq, 1);
    d->p.q_lens = d->cuq, d->p.kv_lens = d->kvl, d->p.sparse_mode = 0, d->p.bidirectional = false;
}

/* Compares output row `row` of the fixture with row b of a decode call: bitwise (CPU) or within tolerance. */
static void compare_rows(const fx *f, int64_t row, const dec *d, int64_t b, run_kind kind, const char *what) {
    const int64_t Nq = f->c.Nq, Dv = f->c.Dv;
    const float *fo = (const float *)f->obuf + row * Nq * Dv, *fl = (const float *)f->lsebuf + row * Nq;
    const float *o = d->out + b * Nq * Dv, *l = d->lse + b * Nq;
    if (kind == RUN_CPU) {
        if (memcmp(fo, o, sizeof(float) * (size_t)(Nq * Dv)) || memcmp(fl, l, sizeof(float) * (size_t)Nq))
            fail_msg("%s (cpu): row %lld differs bitwise", what, (long long)row);
        return;
    }
    for (int64_t i = 0; i < Nq * Dv; i++)
        if (rel_err(o[i], fo[i], 1e-5, 1e-6) > 1.0)
            fail_msg("%s (ref): row %lld: %g vs %g", what, (long long)row, o[i], fo[i]);
    for (int64_t n = 0; n < Nq; n++)
        if (rel_err(l[n], fl[n], 1e-5, 1e-6) > 1.0) fail_msg("%s (ref): lse row %lld", what, (long long)row);
}

/* ---- #7 LSE merge ---------------------------------------------------------- */

static void lse_merge_case(run_kind kind) {
    const int64_t sq[3] = {1, 4, 1}, skv[3] = {90, LONG_KV + 100, 33};
    fx_cfg c = paged_cfg(3, sq, skv, 0, 21); /* mode 0, bidirectional: every row sees every key */
    fx f;
    fx_build(&f, &c);
    run(&f.p, kind);
    const int64_t T = f.cuq[2], Nq = c.Nq, Dv = c.Dv, W = f.width;
    const int64_t split[3] = {2, KVC_SMALL ? 7 : 17, 1}; /* shard A: the first split[b] blocks; shard B the rest */
    int32_t *ta = calloc((size_t)(3 * W), sizeof(int32_t)), *tb = calloc((size_t)(3 * W), sizeof(int32_t));
    int64_t la[3], lb[3];
    for (int64_t b = 0; b < 3; b++) {
        const int64_t nb = (skv[b] + c.bs - 1) / c.bs;
        for (int64_t e = 0; e < nb; e++) {
            if (e < split[b])
                ta[b * W + e] = ((int32_t *)f.tblbuf)[b * W + e];
            else
                tb[b * W + e - split[b]] = ((int32_t *)f.tblbuf)[b * W + e];
        }
        la[b] = split[b] * c.bs, lb[b] = skv[b] - la[b];
        assert_true(lb[b] > 0);
    }
    float *oa = malloc(sizeof(float) * (size_t)(T * Nq * Dv)), *ob = malloc(sizeof(float) * (size_t)(T * Nq * Dv));
    float *lsa = malloc(sizeof(float) * (size_t)(T * Nq)), *lsb = malloc(sizeof(float) * (size_t)(T * Nq));
    kvc_attention_params pa = f.p, pb = f.p;
    pa.block_table.data = ta, pa.kv_lens = la, pa.out.data = oa, pa.lse.data = lsa;
    pb.block_table.data = tb, pb.kv_lens = lb, pb.out.data = ob, pb.lse.data = lsb;
    run(&pa, kind);
    run(&pb, kind);
    for (int64_t r = 0; r < T * Nq; r++) { /* AO 3.11: lse = ln sum exp(lse_r), O = sum exp(lse_r - lse) O_r */
        const double l1 = lsa[r], l2 = lsb[r], m = l1 > l2 ? l1 : l2;
        const double l = m + log(exp(l1 - m) + exp(l2 - m));
        if (rel_err(((float *)f.lsebuf)[r], l, 1e-5, 1e-6) > 1.0) fail_msg("lse merge: lse of row %lld", (long long)r);
        for (int64_t d = 0; d < Dv; d++) {
            const double o = exp(l1 - l) * oa[r * Dv + d] + exp(l2 - l) * ob[r * Dv + d];
            if (rel_err(((float *)f.obuf)[r * Dv + d], o, 1e-5, 1e-6) > 1.0)
                fail_msg("lse merge (%s): row %lld ch %lld: %g vs merged %g", kind == RUN_CPU ? "cpu" : "ref",
                         (long long)r, (long long)d, ((float *)f.obuf)[r * Dv + d], o);
        }
    }
    free(ta), free(tb), free(oa), free(ob), free(lsa), free(lsb);
    fx_free(&f);
}

static void test_lse_merge(void **state) {
    (void)state;
    lse_merge_case(RUN_CPU);
    lse_merge_case(RUN_REF);
}

/* ---- #8 and #9: causal rows vs single-token decode steps ------------------ */

/* Runs a mode-3 batch, then n decode steps: at step s request b decodes
 * one of its last min(n, sq[b]) rows over exactly the keys that row sees,
 * and the decode row must equal the batch row. ref_rows > 0: the
 * reference's batch keeps at most that many rows of each request and at
 * most that many cached keys before them (its float64 rows are the cost;
 * the relation does not depend on the lengths, the kernel's split-K chunks
 * and tiles do). */
static void causal_rows_vs_decode(const int64_t *sq_all, const int64_t *skv_all, int64_t n, int64_t ref_rows,
                                  uint32_t seed, const char *what) {
    for (int k = 0; k < 4; k++) { /* cpu and reference, bf16 and per-head scaled fp8 e4m3 caches */
        const run_kind kind = k % 2 ? RUN_REF : RUN_CPU;
        int64_t sq[2], skv[2];
        for (int64_t b = 0; b < 2; b++) {
            const bool cap = kind == RUN_REF && ref_rows > 0;
            const int64_t cached = skv_all[b] - sq_all[b];
            sq[b] = cap && sq_all[b] > ref_rows ? ref_rows : sq_all[b];
            skv[b] = sq[b] + (cap && cached > ref_rows ? ref_rows : cached);
        }
        fx f;
        fx_cfg c = paged_cfg(2, sq, skv, 3, seed);
        if (k >= 2) c.kvdt = KVC_DTYPE_F8E4M3, c.quant = 2;
        fx_build(&f, &c);
        run(&f.p, kind);
        for (int64_t st = 0; st < n; st++) {
            int64_t rows[2], kvl[2];
            for (int64_t b = 0; b < 2; b++) {
                const int64_t last = sq[b] < n ? sq[b] : n, loc = sq[b] - last + (st < last ? st : last - 1);
                rows[b] = (b ? f.cuq[b - 1] : 0) + loc;
                kvl[b] = skv[b] - sq[b] + loc + 1;
            }
            dec d;
            dec_build(&d, &f, rows, kvl);
            run(&d.p, kind);
            for (int64_t b = 0; b < 2; b++) compare_rows(&f, rows[b], &d, b, kind, what);
        }
        fx_free(&f);
    }
}

/* #8: cache written first, then a causal prefill (AO 2.6): its last row is a decode step. */
static void test_decode_equals_last_prefill_row(void **state) {
    (void)state;
    const int64_t sq[2] = {37, LONG_KV}, skv[2] = {37, LONG_KV};
    causal_rows_vs_decode(sq, skv, 1, 64, 33, "decode vs prefill"); /* the kernel over LONG_KV, the reference 64 */
}

/* #8 for every row: each row of a causal prefill (the kernel computes a
 * query tile's rows against a key tile only where they see it, so rows of
 * one tile are scored in runs of differing length) is the decode step at
 * its position; a fresh prefill, and one after 300 cached keys. */
static void test_every_prefill_row_is_a_decode_step(void **state) {
    (void)state;
    const int64_t sq[2] = {70, 45}, skv[2] = {70, 345};
    /* under ASan the first 24 rows (still across query tiles and their runs of differing length) and the
     * reference's batch cut to 24 rows and 24 cached keys: its float64 rows made the whole table the sanitizer
     * suite's slowest item */
    causal_rows_vs_decode(sq, skv, KVC_SMALL ? 24 : 70, KVC_SMALL ? 24 : 0, 55, "every prefill row vs decode");
}

/* #9: verify windows of 4 and 3 tokens (mode 3) are consecutive decode steps. */
static void test_verify_equals_decode_steps(void **state) {
    (void)state;
    const int64_t sq[2] = {4, 3}, skv[2] = {LONG_KV - 70, 19};
    causal_rows_vs_decode(sq, skv, 4, 0, 44, "verify vs decode steps");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mla_absorbed_equals_expanded),
        cmocka_unit_test(test_lse_merge),
        cmocka_unit_test(test_decode_equals_last_prefill_row),
        cmocka_unit_test(test_every_prefill_row_is_a_decode_step),
        cmocka_unit_test(test_verify_equals_decode_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
