/* Test fixture for the attention operator: builds random problems of any
 * layout / storage / dtype from logical per-request data, placing it with
 * formulas written here from the spec tables (independently of the
 * library's index helpers), and a logical float64 oracle computed from the
 * logical data alone. Header-only; each test includes it once, after
 * cmocka.h. */
#ifndef KVC_TEST_ATTN_FIXTURE_H
#define KVC_TEST_ATTN_FIXTURE_H

#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache/half.h"
#include "kvcache/ops.h"

#define FX_MAXB 8

/* KVC_SMALL: 1 under AddressSanitizer (tests shrink their lengths). */
#if defined(__SANITIZE_ADDRESS__)
#define KVC_SMALL 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVC_SMALL 1
#endif
#endif
#ifndef KVC_SMALL
#define KVC_SMALL 0
#endif

typedef struct fx_cfg {
    kvc_attn_layout layout;
    kvc_kv_storage storage;
    kvc_block_layout blk; /* paged: the blocks' layout */
    int64_t B;
    int64_t sq[FX_MAXB], skv[FX_MAXB];
    int64_t sq_dim, skv_dim; /* B.. layouts: padded extents (0: the max) */
    int Nq, Nkv, D, Dv, Dr;  /* Dr 64 for MLA rope, else 0 */
    kvc_dtype qdt, kvdt, odt;
    int bs, extra_blocks, extra_width;
    int mode;
    int64_t pre, next;
    bool bidirectional, sinks, lse, explicit_mask;
    int quant; /* -1 none (fp8: unscaled); 0 per tensor; 10 per channel; 1 per token; 2 per head; 3 per slot (paged) */
    int value_quant; /* 0: as quant; else the values' granularity (the KIVI split: quant 10, value_quant 3 or 1) */
    bool offsets;
    bool rope_quant; /* MLA: k_rope in the int8/fp8 cache dtype, dequantised with its key's scale */
    uint32_t seed;
    bool permute_blocks;
    double softcap;  /* logit_softcap (0: none) */
    int64_t chunk;   /* attention_chunk_size (0: none) */
    bool alibi;      /* alibi_slopes: random slopes from the seed, apart from the other draws */
    bool alibi_bf16; /* with alibi: Falcon's form (alibi_bf16) */
} fx_cfg;

typedef struct fx {
    fx_cfg c;
    /* logical data (double) */
    double *q, *qr;     /* [B][Sqmax][Nq][D], [..][Dr] */
    double *k, *v, *kr; /* [B][Skvmax][Nkv][D or Dv], dequantised values; kr [..][Dr] */
    int64_t sqmax, skvmax;
    double *msk;   /* [B][Sqmax][Skvmax] explicit mask 0/1 */
    double *sink;  /* [Nq] */
    float *slopes; /* [Nq] ALiBi slopes (the tensor's data), NULL without */
    /* tensors */
    void *qbuf, *qrbuf, *kbuf, *vbuf, *krbuf, *obuf, *lsebuf, *mbuf, *sbuf, *tblbuf;
    float *ks, *vs, *ko, *vo; /* [max scale count] dequant scales / offsets of K and V */
    int64_t cuq[FX_MAXB], ckv[FX_MAXB], dkv[FX_MAXB], dq[FX_MAXB];
    int64_t out_n, lse_n, nblocks, width;
    kvc_attention_params p;
} fx;

/* kvc_attention_cpu on p with a workspace for the OpenMP maximum of threads; a refusal fails the test. */
static inline void fx_run_cpu(kvc_attention_params *p) {
    size_t bytes = 0;
    assert_int_equal(kvc_attention_cpu_workspace_size(p, omp_get_max_threads(), &bytes), KVC_OK);
    void *ws = NULL;
    assert_int_equal(kvc_aligned_alloc(64, bytes, &ws), KVC_OK);
    const kvc_status st = kvc_attention_cpu(p, ws, bytes);
    kvc_aligned_free(ws);
    if (st != KVC_OK) fail_msg("attention_cpu: %s", kvc_last_error());
}

static inline uint32_t fx_rng(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}
static inline double fx_unif(uint32_t *s) { return (double)(fx_rng(s) & 0xffffff) / 8388608.0 - 1.0; }

/* Paged K/V in block layout l. */
static inline bool fx_paged_as(const fx_cfg *c, kvc_block_layout l) {
    return c->storage == KVC_KV_BLOCKS && c->blk == l;
}

static inline bool fx_tlayout(kvc_attn_layout l) {
    return l == KVC_LAYOUT_TND || l == KVC_LAYOUT_TND_NTD || l == KVC_LAYOUT_NTD_TND;
}

/* Stores x in dtype dt at idx and returns the value actually stored. */
static inline double fx_store(void *buf, kvc_dtype dt, int64_t idx, double x) {
    switch (dt) {
    case KVC_DTYPE_F32: ((float *)buf)[idx] = (float)x; return (float)x;
    case KVC_DTYPE_F16:
        ((uint16_t *)buf)[idx] = kvc_f32_to_f16((float)x);
        return kvc_f16_to_f32(((uint16_t *)buf)[idx]);
    case KVC_DTYPE_BF16:
        ((uint16_t *)buf)[idx] = kvc_f32_to_bf16((float)x);
        return kvc_bf16_to_f32(((uint16_t *)buf)[idx]);
    default: return 0;
    }
}

static inline bool fx_fp8(kvc_dtype dt) { return dt == KVC_DTYPE_F8E4M3 || dt == KVC_DTYPE_F8E5M2; }

/* fp8 value of a code, written from the format definitions (not the library's decoder). */
static inline double fx_fp8_value(uint8_t x, kvc_dtype dt) {
    const bool e5 = dt == KVC_DTYPE_F8E5M2;
    const int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7, e = (x & 0x7f) >> mb, m = x & ((1 << mb) - 1);
    const double sign = x & 0x80 ? -1.0 : 1.0;
    if (e5 && e == 31) return m ? NAN : sign * INFINITY;
    if (!e5 && e == 15 && m == 7) return NAN;
    if (e == 0) return sign * ldexp((double)m, 1 - bias - mb);
    return sign * ldexp(1.0 + (double)m / (1 << mb), e - bias);
}

static inline double fx_load(const void *buf, kvc_dtype dt, int64_t idx) {
    switch (dt) {
    case KVC_DTYPE_F32: return ((const float *)buf)[idx];
    case KVC_DTYPE_F16: return kvc_f16_to_f32(((const uint16_t *)buf)[idx]);
    case KVC_DTYPE_BF16: return kvc_bf16_to_f32(((const uint16_t *)buf)[idx]);
    default: return 0;
    }
}

static inline void fx_fill_nan(void *buf, kvc_dtype dt, int64_t n) {
    if (dt == KVC_DTYPE_F32) {
        for (int64_t i = 0; i < n; i++) ((float *)buf)[i] = NAN;
    } else if (dt == KVC_DTYPE_I8 || fx_fp8(dt)) {
        memset(buf, 0x7f, (size_t)n); /* int8 127; fp8 NaN in both formats */
    } else {
        for (int64_t i = 0; i < n; i++) ((uint16_t *)buf)[i] = 0x7fc0u | (dt == KVC_DTYPE_F16 ? 0x7e00u : 0);
    }
}

/* Query-family element index from the spec's layout table; out_form selects the output layout. */
static inline int64_t fx_qidx(const fx *f, bool out_form, int64_t b, int64_t i, int64_t n, int64_t d, int64_t dim) {
    const fx_cfg *c = &f->c;
    kvc_attn_layout l = c->layout;
    if (out_form) l = l == KVC_LAYOUT_TND_NTD ? KVC_LAYOUT_NTD_TND : l == KVC_LAYOUT_NTD_TND ? KVC_LAYOUT_TND : l;
    const int64_t row = (b ? f->cuq[b - 1] : 0) + i, T = f->cuq[c->B - 1], S = c->sq_dim, Nq = c->Nq;
    switch (l) {
    case KVC_LAYOUT_TND:
    case KVC_LAYOUT_TND_NTD: return (row * Nq + n) * dim + d;
    case KVC_LAYOUT_NTD_TND: return (n * T + row) * dim + d;
    case KVC_LAYOUT_BSH: return (b * S + i) * Nq * dim + n * dim + d;
    case KVC_LAYOUT_BNSD: return ((b * Nq + n) * S + i) * dim + d;
    case KVC_LAYOUT_BSND_NBSD:
        if (out_form) return ((n * c->B + b) * S + i) * dim + d;
        return ((b * S + i) * Nq + n) * dim + d;
    default: return ((b * S + i) * Nq + n) * dim + d;
    }
}

/* Physical block of logical block e of request b (paged). */
static inline int64_t fx_block(const fx *f, int64_t b, int64_t e) {
    return ((const int32_t *)f->tblbuf)[b * f->width + e];
}

/* K/V-family element index of (b, j, g, d) with dim channels, element size
 * es, in the K cache (kv 0; key_rope too) or the V cache (kv 1). */
static inline int64_t fx_kvidx(const fx *f, int kv, int64_t b, int64_t j, int64_t g, int64_t d, int64_t dim,
                               size_t es) {
    const fx_cfg *c = &f->c;
    const int64_t Nkv = c->Nkv, bs = c->bs;
    if (c->storage != KVC_KV_CONTIGUOUS) {
        const int64_t p = fx_block(f, b, j / bs), o = j % bs;
        if (c->blk == KVC_BLOCK_BNNDBS && kv == 0) return ((p * Nkv + g) * dim + d) * bs + o;
        if (c->blk == KVC_BLOCK_BNNBSD || c->blk == KVC_BLOCK_BNNDBS) return ((p * Nkv + g) * bs + o) * dim + d;
        if (c->blk == KVC_BLOCK_NZ) {
            const int64_t c0 = 32 / (int64_t)es;
            return kvc_nz_index(p, o, g, d, bs, Nkv, dim, c0);
        }
        return ((p * bs + o) * Nkv + g) * dim + d;
    }
    const int64_t row = (b ? f->ckv[b - 1] : 0) + j, T = f->ckv[c->B - 1], S = c->skv_dim;
    switch (c->layout) {
    case KVC_LAYOUT_TND: return (row * Nkv + g) * dim + d;
    case KVC_LAYOUT_NTD_TND: return (g * T + row) * dim + d;
    case KVC_LAYOUT_BNSD: return ((b * Nkv + g) * S + j) * dim + d;
    default: return ((b * S + j) * Nkv + g) * dim + d;
    }
}

static inline void fx_set_shape(kvc_tensor *t, void *data, kvc_dtype dt, int nd, const int64_t *s) {
    t->data = data;
    t->dtype = dt;
    t->ndim = nd;
    for (int i = 0; i < nd; i++) t->shape[i] = s[i];
}

static inline int fx_qshape(const fx *f, bool out_form, int64_t dim, int64_t *s) {
    const fx_cfg *c = &f->c;
    kvc_attn_layout l = c->layout;
    if (out_form) l = l == KVC_LAYOUT_TND_NTD ? KVC_LAYOUT_NTD_TND : l == KVC_LAYOUT_NTD_TND ? KVC_LAYOUT_TND : l;
    const int64_t T = f->cuq[c->B - 1];
    switch (l) {
    case KVC_LAYOUT_TND:
    case KVC_LAYOUT_TND_NTD: s[0] = T, s[1] = c->Nq, s[2] = dim; return 3;
    case KVC_LAYOUT_NTD_TND: s[0] = c->Nq, s[1] = T, s[2] = dim; return 3;
    case KVC_LAYOUT_BSH: s[0] = c->B, s[1] = c->sq_dim, s[2] = c->Nq * dim; return 3;
    case KVC_LAYOUT_BNSD: s[0] = c->B, s[1] = c->Nq, s[2] = c->sq_dim, s[3] = dim; return 4;
    case KVC_LAYOUT_BSND_NBSD:
        if (out_form) {
            s[0] = c->Nq, s[1] = c->B, s[2] = c->sq_dim, s[3] = dim;
            return 4;
        }
        s[0] = c->B, s[1] = c->sq_dim, s[2] = c->Nq, s[3] = dim;
        return 4;
    default: s[0] = c->B, s[1] = c->sq_dim, s[2] = c->Nq, s[3] = dim; return 4;
    }
}

static inline int fx_kvshape(const fx *f, int kv, int64_t dim, size_t es, int64_t *s) {
    const fx_cfg *c = &f->c;
    if (c->storage == KVC_KV_BLOCKS) switch (c->blk) {
        case KVC_BLOCK_BNNDBS:
            if (kv == 0) {
                s[0] = f->nblocks, s[1] = c->Nkv, s[2] = dim, s[3] = c->bs;
                return 4;
            }
            s[0] = f->nblocks, s[1] = c->Nkv, s[2] = c->bs, s[3] = dim;
            return 4;
        case KVC_BLOCK_BNNBSD: s[0] = f->nblocks, s[1] = c->Nkv, s[2] = c->bs, s[3] = dim; return 4;
        case KVC_BLOCK_NZ: {
            int64_t c0 = 32 / (int64_t)es;
            s[0] = f->nblocks, s[1] = c->Nkv, s[2] = dim / c0, s[3] = c->bs, s[4] = c0;
            return 5;
        }
        default: s[0] = f->nblocks, s[1] = c->bs, s[2] = c->Nkv * dim; return 3;
        }
    const int64_t T = f->ckv[c->B - 1];
    switch (c->layout) {
    case KVC_LAYOUT_TND: s[0] = T, s[1] = c->Nkv, s[2] = dim; return 3;
    case KVC_LAYOUT_NTD_TND: s[0] = c->Nkv, s[1] = T, s[2] = dim; return 3;
    case KVC_LAYOUT_BSH: s[0] = c->B, s[1] = c->skv_dim, s[2] = c->Nkv * dim; return 3;
    case KVC_LAYOUT_BNSD: s[0] = c->B, s[1] = c->Nkv, s[2] = c->skv_dim, s[3] = dim; return 4;
    default: s[0] = c->B, s[1] = c->skv_dim, s[2] = c->Nkv, s[3] = dim; return 4;
    }
}

static inline int64_t fx_numel(const int64_t *s, int nd) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

static inline int fx_granularity(const fx_cfg *c, bool is_v) {
    return is_v && c->value_quant ? c->value_quant : c->quant;
}

/* Dequant scale/offset index of (b, j, g, d) of K (is_v false) or V for the configured granularity. */
static inline int64_t fx_quant_i(const fx *f, bool is_v, int64_t b, int64_t j, int64_t g, int64_t d, int64_t dim) {
    switch (fx_granularity(&f->c, is_v)) {
    case 10: return g * dim + d;
    case 1: return b * f->skvmax + j;
    case 2: return g;
    case 3: return fx_block(f, b, j / f->c.bs) * f->c.bs + j % f->c.bs;
    default: return 0;
    }
}

static inline void fx_free(fx *f) {
    void *bufs[] = {f->q,      f->qr,   f->k,    f->v,     f->kr,   f->msk,    f->sink, f->qbuf,
                    f->qrbuf,  f->kbuf, f->vbuf, f->krbuf, f->obuf, f->lsebuf, f->mbuf, f->sbuf,
                    f->tblbuf, f->ks,   f->vs,   f->ko,    f->vo,   f->slopes};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    memset(f, 0, sizeof *f);
}

static inline void fx_build(fx *f, const fx_cfg *cfg) {
    memset(f, 0, sizeof *f);
    f->c = *cfg;
    fx_cfg *c = &f->c;
    uint32_t rs = c->seed * 2654435761u + 12345u;
    if (!rs) rs = 1;
    for (int64_t b = 0; b < c->B; b++) {
        f->sqmax = c->sq[b] > f->sqmax ? c->sq[b] : f->sqmax;
        f->skvmax = c->skv[b] > f->skvmax ? c->skv[b] : f->skvmax;
        f->cuq[b] = (b ? f->cuq[b - 1] : 0) + c->sq[b];
        f->ckv[b] = (b ? f->ckv[b - 1] : 0) + c->skv[b];
        f->dkv[b] = c->skv[b];
        f->dq[b] = c->sq[b];
    }
    if (f->sqmax == 0) f->sqmax = 1;
    if (f->skvmax == 0) f->skvmax = 1;
    if (!c->sq_dim) c->sq_dim = f->sqmax;
    if (!c->skv_dim) c->skv_dim = f->skvmax;
    const int64_t B = c->B, Nq = c->Nq, Nkv = c->Nkv, D = c->D, Dv = c->Dv, Dr = c->Dr;
    const size_t kes = kvc_dtype_size(c->kvdt);
    const bool fp8 = fx_fp8(c->kvdt), quant = c->kvdt == KVC_DTYPE_I8 || (fp8 && c->quant >= 0);
    f->q = calloc((size_t)(B * f->sqmax * Nq * D), sizeof(double));
    f->qr = calloc((size_t)(B * f->sqmax * Nq * (Dr + 1)), sizeof(double));
    f->k = calloc((size_t)(B * f->skvmax * Nkv * D), sizeof(double));
    f->v = calloc((size_t)(B * f->skvmax * Nkv * Dv), sizeof(double));
    f->kr = calloc((size_t)(B * f->skvmax * Nkv * (Dr + 1)), sizeof(double));
    f->msk = calloc((size_t)(B * f->sqmax * f->skvmax), sizeof(double));
    f->sink = calloc((size_t)Nq, sizeof(double));
    /* paging: shuffled physical blocks, block 0 is the NaN-filled null block */
    if (c->storage != KVC_KV_CONTIGUOUS) {
        int64_t need = 0, wmax = 0;
        for (int64_t b = 0; b < B; b++) {
            int64_t nb = (c->skv[b] + c->bs - 1) / c->bs;
            need += nb;
            wmax = nb > wmax ? nb : wmax;
        }
        f->nblocks = need + 1 + c->extra_blocks;
        f->width = wmax + c->extra_width;
        if (f->width == 0) f->width = 1;
        f->tblbuf = calloc((size_t)(B * f->width), sizeof(int32_t));
        int32_t *perm = malloc(sizeof(int32_t) * (size_t)f->nblocks);
        for (int64_t i = 0; i < f->nblocks; i++) perm[i] = (int32_t)i;
        uint32_t ps = c->seed * 747796405u + 1u; /* own stream: data does not depend on paging */
        if (!ps) ps = 1;
        if (c->permute_blocks)
            for (int64_t i = f->nblocks - 1; i > 1; i--) {
                int64_t r = 1 + (int64_t)(fx_rng(&ps) % (uint32_t)i);
                int32_t t = perm[i];
                perm[i] = perm[r];
                perm[r] = t;
            }
        int64_t next = 1;
        for (int64_t b = 0; b < B; b++)
            for (int64_t e = 0; e < (c->skv[b] + c->bs - 1) / c->bs; e++)
                ((int32_t *)f->tblbuf)[b * f->width + e] = perm[next++];
        free(perm);
    }
    int64_t s[5];
    int nd;
    /* query (+ rope) */
    nd = fx_qshape(f, false, D, s);
    f->qbuf = malloc((size_t)fx_numel(s, nd) * kvc_dtype_size(c->qdt));
    fx_fill_nan(f->qbuf, c->qdt, fx_numel(s, nd));
    fx_set_shape(&f->p.q, f->qbuf, c->qdt, nd, s);
    if (Dr) {
        nd = fx_qshape(f, false, Dr, s);
        f->qrbuf = malloc((size_t)fx_numel(s, nd) * kvc_dtype_size(c->qdt));
        fx_fill_nan(f->qrbuf, c->qdt, fx_numel(s, nd));
        fx_set_shape(&f->p.q_rope, f->qrbuf, c->qdt, nd, s);
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < c->sq[b]; i++)
            for (int64_t n = 0; n < Nq; n++) {
                for (int64_t d = 0; d < D; d++)
                    f->q[((b * f->sqmax + i) * Nq + n) * D + d] =
                        fx_store(f->qbuf, c->qdt, fx_qidx(f, false, b, i, n, d, D), fx_unif(&rs));
                for (int64_t d = 0; d < Dr; d++)
                    f->qr[((b * f->sqmax + i) * Nq + n) * Dr + d] =
                        fx_store(f->qrbuf, c->qdt, fx_qidx(f, false, b, i, n, d, Dr), fx_unif(&rs));
            }
    /* quant scales */
    int64_t nq = 1;
    for (int kv = 0; kv < 2; kv++) {
        const int q = fx_granularity(c, kv);
        const int64_t n = q == 10  ? Nkv * (D > Dv ? D : Dv)
                          : q == 1 ? B * f->skvmax
                          : q == 2 ? Nkv
                          : q == 3 ? f->nblocks * c->bs
                                   : 1;
        nq = n > nq ? n : nq;
    }
    f->ks = calloc((size_t)nq, sizeof(float)), f->vs = calloc((size_t)nq, sizeof(float));
    f->ko = calloc((size_t)nq, sizeof(float)), f->vo = calloc((size_t)nq, sizeof(float));
    if (quant) {
        const double s0 = fp8 ? 0.1 : 0.004, s1 = fp8 ? 0.1 : 0.006; /* fp8 codes hold values up to ~4 here */
        for (int64_t i = 0; i < nq; i++) {
            f->ks[i] = (float)(s0 + s1 * (fx_unif(&rs) + 1.0));
            f->vs[i] = (float)(s0 + s1 * (fx_unif(&rs) + 1.0));
            f->ko[i] = c->offsets ? (float)round(8.0 * fx_unif(&rs)) : 0.0f;
            f->vo[i] = c->offsets ? (float)round(8.0 * fx_unif(&rs)) : 0.0f;
        }
    }
    /* K, V (+ rope) */
    const int64_t dims[2] = {D, Dv};
    void **bufs[2] = {&f->kbuf, &f->vbuf};
    kvc_tensor *ts[2] = {&f->p.k, &f->p.v};
    double *logical[2] = {f->k, f->v};
    for (int kv = 0; kv < 2; kv++) {
        const int64_t dim = dims[kv];
        nd = fx_kvshape(f, kv, dim, kes, s);
        const int64_t n = fx_numel(s, nd);
        *bufs[kv] = malloc((size_t)n * kes);
        fx_fill_nan(*bufs[kv], c->kvdt, n); /* null block, padding and unused blocks are NaN */
        fx_set_shape(ts[kv], *bufs[kv], c->kvdt, nd, s);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < c->skv[b]; j++)
                for (int64_t g = 0; g < Nkv; g++)
                    for (int64_t d = 0; d < dim; d++) {
                        const int64_t at = fx_kvidx(f, kv, b, j, g, d, dim, kes);
                        double x;
                        if (fp8) { /* a code of a value in [-4, 4] (subnormals included), its exact value, scaled */
                            const float v = (float)(4.0 * fx_unif(&rs) * (fx_rng(&rs) % 8u == 0 ? 1.0 / 512 : 1.0));
                            const uint8_t code =
                                c->kvdt == KVC_DTYPE_F8E4M3 ? kvc_f32_to_fp8_e4m3(v) : kvc_f32_to_fp8_e5m2(v);
                            ((uint8_t *)*bufs[kv])[at] = code;
                            const int64_t qi = fx_quant_i(f, kv, b, j, g, d, dim);
                            x = (quant ? (double)(kv ? f->vs[qi] : f->ks[qi]) : 1.0) * fx_fp8_value(code, c->kvdt);
                        } else if (quant) {
                            const int8_t raw = (int8_t)((int)(fx_rng(&rs) % 255u) - 127);
                            ((int8_t *)*bufs[kv])[at] = raw;
                            const int64_t qi = fx_quant_i(f, kv, b, j, g, d, dim);
                            const double sc = kv ? f->vs[qi] : f->ks[qi], of = kv ? f->vo[qi] : f->ko[qi];
                            x = (double)(float)sc * ((double)raw + (double)(float)of);
                        } else {
                            x = fx_store(*bufs[kv], c->kvdt, at, fx_unif(&rs));
                        }
                        logical[kv][((b * f->skvmax + j) * Nkv + g) * dim + d] = x;
                    }
    }
    if (Dr) {
        const kvc_dtype rdt = c->rope_quant ? c->kvdt : c->kvdt == KVC_DTYPE_I8 || fp8 ? c->qdt : c->kvdt;
        const size_t res = kvc_dtype_size(rdt);
        nd = fx_kvshape(f, 0, Dr, res, s);
        f->krbuf = malloc((size_t)fx_numel(s, nd) * res);
        fx_fill_nan(f->krbuf, rdt, fx_numel(s, nd));
        fx_set_shape(&f->p.k_rope, f->krbuf, rdt, nd, s);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < c->skv[b]; j++)
                for (int64_t g = 0; g < Nkv; g++)
                    for (int64_t d = 0; d < Dr; d++) {
                        const int64_t at = fx_kvidx(f, 0, b, j, g, d, Dr, res);
                        double x;
                        if (c->rope_quant) { /* stored like the keys, read with the key scale of (b, j, g) */
                            const double sc = quant ? (double)f->ks[fx_quant_i(f, false, b, j, g, 0, D)] : 1.0;
                            if (fp8) {
                                const float v = (float)(4.0 * fx_unif(&rs));
                                const uint8_t code =
                                    rdt == KVC_DTYPE_F8E4M3 ? kvc_f32_to_fp8_e4m3(v) : kvc_f32_to_fp8_e5m2(v);
                                ((uint8_t *)f->krbuf)[at] = code;
                                x = sc * fx_fp8_value(code, rdt);
                            } else {
                                const int8_t raw = (int8_t)((int)(fx_rng(&rs) % 255u) - 127);
                                ((int8_t *)f->krbuf)[at] = raw;
                                x = sc * (double)raw;
                            }
                        } else {
                            x = fx_store(f->krbuf, rdt, at, fx_unif(&rs));
                        }
                        f->kr[((b * f->skvmax + j) * Nkv + g) * Dr + d] = x;
                    }
    }
    /* output, lse */
    nd = fx_qshape(f, true, Dv, s);
    f->out_n = fx_numel(s, nd);
    f->obuf = malloc((size_t)f->out_n * kvc_dtype_size(c->odt));
    fx_fill_nan(f->obuf, c->odt, f->out_n);
    fx_set_shape(&f->p.out, f->obuf, c->odt, nd, s);
    if (c->lse) {
        if (fx_tlayout(c->layout)) {
            s[0] = f->cuq[B - 1], s[1] = Nq, s[2] = 1;
            nd = 3;
        } else {
            s[0] = B, s[1] = Nq, s[2] = c->sq_dim, s[3] = 1;
            nd = 4;
        }
        f->lse_n = fx_numel(s, nd);
        f->lsebuf = malloc((size_t)f->lse_n * sizeof(float));
        fx_fill_nan(f->lsebuf, KVC_DTYPE_F32, f->lse_n);
        fx_set_shape(&f->p.lse, f->lsebuf, KVC_DTYPE_F32, nd, s);
    }
    /* params */
    kvc_attention_params *p = &f->p;
    kvc_tensor keep_q = p->q, keep_qr = p->q_rope, keep_k = p->k, keep_v = p->v, keep_kr = p->k_rope, keep_o = p->out,
               keep_l = p->lse;
    *p = kvc_attention_default_params();
    p->q = keep_q, p->q_rope = keep_qr, p->k = keep_k, p->v = keep_v, p->k_rope = keep_kr, p->out = keep_o,
    p->lse = keep_l;
    p->layout = c->layout;
    p->num_heads = Nq;
    p->num_kv_heads = Nkv;
    p->scale = 1.0 / sqrt((double)(D + Dr));
    p->sparse_mode = c->mode;
    p->pre_tokens = c->pre;
    p->next_tokens = c->next;
    p->bidirectional = c->bidirectional;
    p->logit_softcap = c->softcap;
    p->attention_chunk_size = c->chunk;
    p->batch = B;
    const bool packed = fx_tlayout(c->layout) && c->storage == KVC_KV_CONTIGUOUS;
    p->q_lens = fx_tlayout(c->layout) ? f->cuq : f->dq;
    p->kv_lens = packed ? f->ckv : f->dkv;
    p->kv_len_form = packed ? KVC_KV_FORM_CUMULATIVE : KVC_KV_FORM_DIRECT;
    p->kv_storage = c->storage;
    p->block_layout = c->blk;
    if (c->storage != KVC_KV_CONTIGUOUS) {
        s[0] = B, s[1] = f->width;
        fx_set_shape(&p->block_table, f->tblbuf, KVC_DTYPE_I32, 2, s);
        p->block_size = c->bs;
    }
    if (c->sinks) {
        f->sbuf = malloc(sizeof(float) * (size_t)Nq);
        for (int64_t n = 0; n < Nq; n++) f->sink[n] = ((float *)f->sbuf)[n] = (float)(2.0 * fx_unif(&rs));
        s[0] = Nq;
        fx_set_shape(&p->sinks, f->sbuf, KVC_DTYPE_F32, 1, s);
    }
    if (c->alibi) { /* magnitudes 2^-4 .. 2^-11 (a bias of at most ~45 over 700 keys), one in four negative */
        uint32_t as = c->seed * 747796405u + 2891336453u;
        as = as ? as : 1u;
        f->slopes = malloc(sizeof(float) * (size_t)Nq);
        for (int64_t n = 0; n < Nq; n++) {
            const double mag = ldexp(0.75 + 0.25 * fx_unif(&as), -4 - (int)(fx_rng(&as) % 8));
            f->slopes[n] = (float)(fx_rng(&as) % 4 == 0 ? -mag : mag);
        }
        s[0] = Nq;
        fx_set_shape(&p->alibi_slopes, f->slopes, KVC_DTYPE_F32, 1, s);
        p->alibi_bf16 = c->alibi_bf16;
    }
    if (c->explicit_mask) {
        f->mbuf = calloc((size_t)(B * f->sqmax * f->skvmax), 1);
        for (int64_t e = 0; e < B * f->sqmax * f->skvmax; e++) {
            const uint8_t m = (uint8_t)(fx_rng(&rs) % 4u == 0);
            ((uint8_t *)f->mbuf)[e] = m;
            f->msk[e] = m;
        }
        s[0] = B, s[1] = f->sqmax, s[2] = f->skvmax;
        fx_set_shape(&p->mask, f->mbuf, KVC_DTYPE_BOOL, 3, s);
    }
    if (quant) {
        kvc_quant_mode modes[2];
        for (int kv = 0; kv < 2; kv++) {
            const int q = fx_granularity(c, kv);
            modes[kv] = q == 1   ? KVC_QUANT_PER_TOKEN
                        : q == 2 ? KVC_QUANT_PER_HEAD
                        : q == 3 ? KVC_QUANT_PER_SLOT
                                 : KVC_QUANT_PER_CHANNEL;
        }
        p->key_quant_mode = modes[0], p->value_quant_mode = modes[1];
        kvc_tensor *sc[4] = {&p->key_scale, &p->value_scale, &p->key_offset, &p->value_offset};
        float *src[4] = {f->ks, f->vs, f->ko, f->vo};
        for (int t = 0; t < (c->offsets ? 4 : 2); t++) {
            const int q = fx_granularity(c, t % 2);
            if (q == 10)
                s[0] = Nkv, s[1] = t % 2 ? Dv : D, nd = 2;
            else if (q == 1)
                s[0] = B, s[1] = f->skvmax, nd = 2;
            else if (q == 3)
                s[0] = f->nblocks, s[1] = c->bs, nd = 2;
            else
                s[0] = q == 2 ? Nkv : 1, nd = 1;
            fx_set_shape(sc[t], src[t], KVC_DTYPE_F32, nd, s);
        }
    }
}

/* Logical oracle: out [B][Sqmax][Nq][Dv] and lse [B][Sqmax][Nq] from the logical data. */
static inline void fx_oracle(const fx *f, double *out, double *lse) {
    const fx_cfg *c = &f->c;
    const int64_t Nq = c->Nq, Nkv = c->Nkv, D = c->D, Dv = c->Dv, Dr = c->Dr, G = Nq / Nkv;
    const double scale = f->p.scale;
    double *s = malloc(sizeof(double) * (size_t)(f->skvmax + 1));
    for (int64_t b = 0; b < c->B; b++) {
        const int64_t sq = c->sq[b], skv = c->skv[b], dl = skv - sq;
        for (int64_t i = 0; i < sq; i++)
            for (int64_t n = 0; n < Nq; n++) {
                const int64_t g = n / G;
                double m = c->sinks ? f->sink[n] : -INFINITY;
                bool any = c->sinks;
                for (int64_t j = 0; j < skv; j++) {
                    bool vis;
                    switch (c->mode) {
                    case 0: vis = !c->explicit_mask || (j >= i - c->pre && j <= i + c->next); break;
                    case 1: vis = true; break;
                    case 2: vis = j <= i; break;
                    case 3: vis = j <= i + dl; break;
                    default: vis = j >= i + dl - c->pre && j <= i + dl + c->next; break;
                    }
                    if (c->chunk > 0) { /* the row's chunk by floor division, written apart from the library's */
                        const double pc = floor((double)(i + dl) / (double)c->chunk);
                        if (floor((double)j / (double)c->chunk) != pc) vis = false;
                    }
                    if (c->explicit_mask && f->msk[(b * f->sqmax + i) * f->skvmax + j] != 0) vis = false;
                    if (!vis) {
                        s[j] = NAN;
                        continue;
                    }
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++)
                        dot +=
                            f->q[((b * f->sqmax + i) * Nq + n) * D + d] * f->k[((b * f->skvmax + j) * Nkv + g) * D + d];
                    for (int64_t d = 0; d < Dr; d++)
                        dot += f->qr[((b * f->sqmax + i) * Nq + n) * Dr + d] *
                               f->kr[((b * f->skvmax + j) * Nkv + g) * Dr + d];
                    s[j] = c->softcap > 0.0 ? c->softcap * tanh(scale * dot / c->softcap) : scale * dot;
                    if (f->slopes && c->alibi_bf16) { /* Falcon's: bf16(m bf16(j)), j absolute, times the scale */
                        const float jb = kvc_bf16_to_f32(kvc_f32_to_bf16((float)j));
                        s[j] += (double)kvc_bf16_to_f32(kvc_f32_to_bf16(f->slopes[n] * jb)) * scale;
                    } else if (f->slopes) /* ALiBi after the cap */
                        s[j] += (double)f->slopes[n] * (double)(j - (i + dl));
                    m = s[j] > m ? s[j] : m;
                    any = true;
                }
                double *o = out + ((b * f->sqmax + i) * Nq + n) * Dv;
                for (int64_t d = 0; d < Dv; d++) o[d] = 0;
                if (!any) {
                    lse[(b * f->sqmax + i) * Nq + n] = INFINITY;
                    continue;
                }
                double den = c->sinks ? exp(f->sink[n] - m) : 0;
                for (int64_t j = 0; j < skv; j++) {
                    if (isnan(s[j])) continue;
                    const double w = exp(s[j] - m);
                    den += w;
                    for (int64_t d = 0; d < Dv; d++) o[d] += w * f->v[((b * f->skvmax + j) * Nkv + g) * Dv + d];
                }
                for (int64_t d = 0; d < Dv; d++) o[d] /= den;
                lse[(b * f->sqmax + i) * Nq + n] = m + log(den);
            }
    }
    free(s);
}

/* Largest error of the fixture's output (and lse) against oracle data, as
 * max |got - want| / (atol + rtol |want|) (<= 1 passes). */
static inline double fx_check(const fx *f, const double *out, const double *lse, double rtol, double atol) {
    const fx_cfg *c = &f->c;
    double worst = 0;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t i = 0; i < c->sq[b]; i++)
            for (int64_t n = 0; n < c->Nq; n++) {
                for (int64_t d = 0; d < c->Dv; d++) {
                    const double want = out[((b * f->sqmax + i) * c->Nq + n) * c->Dv + d];
                    const double got = fx_load(f->obuf, c->odt, fx_qidx(f, true, b, i, n, d, c->Dv));
                    const double e = fabs(got - want) / (atol + rtol * fabs(want));
                    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
                }
                if (c->lse) {
                    const double want = lse[(b * f->sqmax + i) * c->Nq + n];
                    const int64_t li = fx_tlayout(c->layout) ? ((b ? f->cuq[b - 1] : 0) + i) * c->Nq + n
                                                             : (b * c->Nq + n) * c->sq_dim + i;
                    const double got = ((const float *)f->lsebuf)[li];
                    if (isinf(want)) {
                        if (!(isinf(got) && got > 0)) worst = INFINITY;
                        continue;
                    }
                    const double e = fabs(got - want) / (atol + rtol * fabs(want));
                    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
                }
            }
    return worst;
}

#endif
