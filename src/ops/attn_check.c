/* Validation of one attention call (AO 6.1, rules R1-R15 that apply to the
 * operator) and resolution of its extents into a kvc_attn_problem. Every
 * refusal names the field, its value and what is expected. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "ops/attn_problem.h"
#include "ops/elem.h"

#define FAIL(st, ...) return kvci_fail((st), "attention: " __VA_ARGS__)
#define TRY(expr)                                                                                                      \
    do {                                                                                                               \
        kvc_status try_st_ = (expr);                                                                                   \
        if (try_st_ != KVC_OK) return try_st_;                                                                         \
    } while (0)

static bool is_t_layout(kvc_attn_layout l) {
    return l == KVC_LAYOUT_TND || l == KVC_LAYOUT_TND_NTD || l == KVC_LAYOUT_NTD_TND;
}

static bool shape_is(const kvc_tensor *t, int nd, const int64_t *s) {
    if (t->ndim != nd) return false;
    for (int i = 0; i < nd; i++)
        if (t->shape[i] != s[i]) return false;
    return true;
}

static void shape_str(const kvc_tensor *t, char *buf, size_t n) {
    size_t w = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->ndim && w < n; i++)
        w += (size_t)snprintf(buf + w, n - w, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (w < n) snprintf(buf + w, n - w, "]");
}

static kvc_status expect_shape(const kvc_attn_problem *pb, const kvc_tensor *t, const char *name, int nd,
                               const int64_t *s) {
    if (shape_is(t, nd, s)) return KVC_OK;
    kvc_tensor want = {.ndim = nd};
    for (int i = 0; i < nd; i++) want.shape[i] = s[i];
    char got[128], exp[128];
    shape_str(t, got, sizeof got);
    shape_str(&want, exp, sizeof exp);
    FAIL(KVC_EINVAL, "%s has shape %s, expected %s for layout %s (R7)", name, got, exp,
         kvc_attn_layout_name(pb->p->layout));
}

/* ---- scalar parameters: R5, R6, mode, lengths --------------------------- */

static kvc_status check_scalars(const kvc_attention_params *p) {
    if (p->layout <= KVC_LAYOUT_UNSET || p->layout >= KVC_LAYOUT_COUNT)
        FAIL(KVC_EINVAL,
             "layout %d is not set or unknown: set input_layout (TND, TND_NTD, NTD_TND, BSH, BSND, BNSD, BSND_NBSD)",
             (int)p->layout);
    if (!(p->scale > 0.0) || !isfinite(p->scale))
        FAIL(KVC_EINVAL,
             "scale %g must be finite and > 0 (R5: there is no default; 1/sqrt(D) for plain attention, "
             "kvc_yarn_softmax_scale for YaRN/MLA)",
             p->scale);
    if (!(p->logit_softcap >= 0.0) || !isfinite(p->logit_softcap))
        FAIL(KVC_EINVAL, "logit_softcap %g must be finite and >= 0 (0: no soft-capping; else cap * tanh(s / cap))",
             p->logit_softcap);
    if (p->attention_chunk_size < 0 || p->attention_chunk_size > INT32_MAX)
        FAIL(KVC_EINVAL,
             "attention_chunk_size %lld must be in [0, 2^31) (0: no chunked local attention; else each query sees "
             "the keys of its own chunk of that many positions)",
             (long long)p->attention_chunk_size);
    if (p->num_heads <= 0)
        FAIL(KVC_EINVAL, "num_heads %d must be set (> 0): the query head count (v1 num_heads, v2 num_query_heads)",
             (int)p->num_heads);
    if (p->num_kv_heads <= 0)
        FAIL(KVC_EINVAL, "num_kv_heads %d must be set (> 0; 0 does not mean \"= num_heads\" here)",
             (int)p->num_kv_heads);
    if (p->num_heads % p->num_kv_heads != 0)
        FAIL(KVC_EINVAL, "num_heads %d is not divisible by num_kv_heads %d (R6: GQA needs Nq %% Nkv == 0)",
             (int)p->num_heads, (int)p->num_kv_heads);
    if (p->num_heads / p->num_kv_heads > 64)
        FAIL(KVC_EINVAL, "group size Nq/Nkv = %d exceeds 64 (R6)", (int)(p->num_heads / p->num_kv_heads));
    if (p->binding.num_kv_heads > 0 && p->binding.num_kv_heads != p->num_kv_heads)
        FAIL(KVC_EINVAL,
             "num_kv_heads %d differs from the bound cache group's num_head %d (R6: tensor-parallel change?)",
             (int)p->num_kv_heads, (int)p->binding.num_kv_heads);
    if (p->sparse_mode < 0 || p->sparse_mode > 4)
        FAIL(KVC_EINVAL,
             "sparse_mode %d must be set to 0..4 (0 dense/full mask, 1 all-mask, 2 left-up causal, 3 right-down "
             "causal, 4 band)",
             (int)p->sparse_mode);
    if (p->batch < 0) FAIL(KVC_EINVAL, "batch %lld must be >= 0 (the number of requests)", (long long)p->batch);
    if (p->batch > 0 && !p->kv_lens)
        FAIL(KVC_EINVAL, "kv_lens is NULL but batch is %lld: kv_lens [B] is required", (long long)p->batch);
    if (p->kv_len_form != KVC_KV_FORM_DIRECT && p->kv_len_form != KVC_KV_FORM_CUMULATIVE)
        FAIL(KVC_EINVAL, "kv_len_form is not set: say whether kv_lens are DIRECT (per request) or CUMULATIVE (R9)");
    if (is_t_layout(p->layout) && p->batch > 0 && !p->q_lens)
        FAIL(KVC_EINVAL, "layout %s needs cumulative q_lens [B]", kvc_attn_layout_name(p->layout));
    if (!p->q.data || !p->out.data) FAIL(KVC_EINVAL, "q and out tensors are required");
    if (!kvci_dtype_is_compute(p->q.dtype))
        FAIL(KVC_EINVAL, "q dtype %s unsupported (f32, f16, bf16)", kvc_dtype_name(p->q.dtype));
    if (!kvci_dtype_is_compute(p->out.dtype))
        FAIL(KVC_EINVAL, "out dtype %s unsupported (f32, f16, bf16)", kvc_dtype_name(p->out.dtype));
    return KVC_OK;
}

/* R7 / R9: length arrays against each other and the storage form. */
static kvc_status check_lengths(const kvc_attention_params *p, kvc_attn_problem *pb) {
    const bool t = is_t_layout(p->layout);
    if (p->kv_storage != KVC_KV_CONTIGUOUS && p->kv_storage != KVC_KV_BLOCKS)
        FAIL(KVC_EINVAL, "kv_storage %d unknown (CONTIGUOUS or PAGED)", (int)p->kv_storage);
    pb->paged = p->kv_storage == KVC_KV_BLOCKS;
    const kvc_block_layout bl = p->block_layout;
    if (pb->paged && !p->paged_kv && bl != KVC_BLOCK_BNBSND && bl != KVC_BLOCK_BNNBSD && bl != KVC_BLOCK_NZ &&
        bl != KVC_BLOCK_BNNDBS)
        FAIL(KVC_EINVAL, "block_layout %d unknown (BNBSND, BNNBSD, NZ or BNNDBS)", (int)bl);
    if (!pb->paged && p->paged_kv)
        FAIL(KVC_EINVAL, "paged_kv is given but kv_storage is CONTIGUOUS: the descriptor places paged K/V only");
    pb->kv_packed = t && !pb->paged;
    pb->q_cum = t;
    if (p->layout == KVC_LAYOUT_TND_NTD && !pb->paged)
        FAIL(KVC_EINVAL, "layout TND_NTD reads K/V through a block table only: set kv_storage to a paged form");
    if (pb->kv_packed && p->kv_len_form != KVC_KV_FORM_CUMULATIVE)
        FAIL(KVC_EINVAL, "kv_lens are DIRECT but K/V are packed %s tensors: packed K/V need CUMULATIVE kv_lens (R9)",
             kvc_attn_layout_name(p->layout));
    if (!pb->kv_packed && p->kv_len_form != KVC_KV_FORM_DIRECT)
        FAIL(KVC_EINVAL,
             "kv_lens are CUMULATIVE but K/V are %s: paged or padded K/V need DIRECT per-request kv_lens (R9)",
             pb->paged ? "paged" : "padded per batch row");
    int64_t prev_q = 0, prev_kv = 0;
    pb->max_sq = 0;
    pb->max_skv = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        int64_t q0, sq, k0, skv;
        if (p->q_lens && p->q_lens[b] < (t ? prev_q : 0))
            FAIL(KVC_EINVAL, "q_lens[%lld] = %lld is %s (R7)", (long long)b, (long long)p->q_lens[b],
                 t ? "smaller than the previous cumulative entry" : "negative");
        if (p->kv_lens[b] < (pb->kv_packed ? prev_kv : 0))
            FAIL(KVC_EINVAL, "kv_lens[%lld] = %lld is %s (R7)", (long long)b, (long long)p->kv_lens[b],
                 pb->kv_packed ? "smaller than the previous cumulative entry" : "negative");
        if (p->q_lens) prev_q = p->q_lens[b];
        prev_kv = p->kv_lens[b];
        kvci_attn_q_range(pb, b, &q0, &sq);
        kvci_attn_kv_range(pb, b, &k0, &skv);
        pb->max_sq = kvci_max64(pb->max_sq, sq);
        pb->max_skv = kvci_max64(pb->max_skv, skv);
    }
    return KVC_OK;
}

/* ---- tensor shapes per layout (R7) ---------------------------------------- */

/* Expected shape of a query-family tensor (q, q_rope, out) with `dim` channels per head.
 * out_form: true for the output layout (second half of X_Y). */
static int query_shape(const kvc_attn_problem *pb, bool out_form, int64_t dim, int64_t *s) {
    const kvc_attention_params *p = pb->p;
    kvc_attn_layout l = p->layout;
    const int64_t Nq = pb->Nq, B = pb->B, S = pb->Sq_dim, T = pb->Tq;
    if (out_form) {
        if (l == KVC_LAYOUT_NTD_TND)
            l = KVC_LAYOUT_TND;
        else if (l == KVC_LAYOUT_TND_NTD)
            l = KVC_LAYOUT_NTD_TND;
        else if (l == KVC_LAYOUT_BSND_NBSD) {
            s[0] = Nq, s[1] = B, s[2] = S, s[3] = dim;
            return 4;
        }
    }
    switch (l) {
    case KVC_LAYOUT_TND:
    case KVC_LAYOUT_TND_NTD: s[0] = T, s[1] = Nq, s[2] = dim; return 3;
    case KVC_LAYOUT_NTD_TND: s[0] = Nq, s[1] = T, s[2] = dim; return 3;
    case KVC_LAYOUT_BSH: s[0] = B, s[1] = S, s[2] = Nq * dim; return 3;
    case KVC_LAYOUT_BNSD: s[0] = B, s[1] = Nq, s[2] = S, s[3] = dim; return 4;
    default: s[0] = B, s[1] = S, s[2] = Nq, s[3] = dim; return 4; /* BSND, BSND_NBSD */
    }
}

/* Per-head channel count of a query-family tensor from its last dim. */
static int64_t head_dim_of(const kvc_tensor *t, kvc_attn_layout l, int64_t heads) {
    if (t->ndim < 1) return 0;
    const int64_t last = t->shape[t->ndim - 1];
    if (l == KVC_LAYOUT_BSH) return heads > 0 && last % heads == 0 ? last / heads : 0;
    return last;
}

static kvc_status resolve_query(const kvc_attention_params *p, kvc_attn_problem *pb) {
    const bool t = pb->q_cum;
    const int want_nd = (p->layout == KVC_LAYOUT_BSH || t) ? 3 : 4;
    if (p->q.ndim != want_nd)
        FAIL(KVC_EINVAL, "q has %d dims, layout %s needs %d (R7)", (int)p->q.ndim, kvc_attn_layout_name(p->layout),
             want_nd);
    pb->D = head_dim_of(&p->q, p->layout, pb->Nq);
    if (pb->D <= 0)
        FAIL(KVC_EINVAL, "q's last dim %lld does not hold num_heads %lld heads (R7)",
             (long long)p->q.shape[p->q.ndim - 1], (long long)pb->Nq);
    if (t) {
        pb->Tq = p->layout == KVC_LAYOUT_NTD_TND ? p->q.shape[1] : p->q.shape[0];
        pb->Sq_dim = 0;
        const int64_t last = p->batch > 0 ? p->q_lens[p->batch - 1] : 0;
        if (last != pb->Tq)
            FAIL(KVC_EINVAL, "cumulative q_lens end at %lld but q holds Tq = %lld rows (R7: cu_q[B-1] must equal Tq)",
                 (long long)last, (long long)pb->Tq);
    } else {
        pb->Sq_dim = p->layout == KVC_LAYOUT_BNSD ? p->q.shape[2] : p->q.shape[1];
        pb->Tq = pb->B * pb->Sq_dim;
        if (pb->max_sq > pb->Sq_dim)
            FAIL(KVC_EINVAL, "a q_lens entry %lld exceeds q's sequence extent %lld (R7)", (long long)pb->max_sq,
                 (long long)pb->Sq_dim);
    }
    int64_t s[4];
    int nd = query_shape(pb, false, pb->D, s);
    TRY(expect_shape(pb, &p->q, "q", nd, s));
    return KVC_OK;
}

/* The caller's descriptor of paged tensor t (k, v or k_rope of pb->p) and
 * its field name; NULL without one. */
static const kvc_paged_tensor *desc_of(const kvc_attn_problem *pb, const kvc_tensor *t, const char **field) {
    const kvc_paged_kv *d = pb->p->paged_kv;
    if (!pb->paged || !d) return NULL;
    *field = t == &pb->p->k ? "paged_kv.k" : t == &pb->p->v ? "paged_kv.v" : "paged_kv.k_rope";
    return t == &pb->p->k ? &d->k : t == &pb->p->v ? &d->v : &d->k_rope;
}

/* The block layout of paged tensor t as the front end's block_layout
 * names it: BNNDBS stores K keys in lanes and V head-major (BNNBSD). */
static kvc_block_layout layout_of(const kvc_attn_problem *pb, const kvc_tensor *t) {
    const kvc_block_layout bl = pb->p->block_layout;
    return bl == KVC_BLOCK_BNNDBS && t != &pb->p->k ? KVC_BLOCK_BNNBSD : bl;
}

/* Shape of a K/V-family tensor with `dim` channels per head (contiguous, or paged in layout lay). */
static int kv_shape(const kvc_attn_problem *pb, kvc_block_layout lay, int64_t dim, const kvc_tensor *t, int64_t *s) {
    const kvc_attention_params *p = pb->p;
    const int64_t Nkv = pb->Nkv;
    const kvc_dtype dt = t->dtype;
    if (pb->paged && lay == KVC_BLOCK_BNNDBS) {
        s[0] = pb->NB, s[1] = Nkv, s[2] = dim, s[3] = pb->bs;
        return 4;
    }
    if (pb->paged && lay == KVC_BLOCK_BNNBSD) {
        s[0] = pb->NB, s[1] = Nkv, s[2] = pb->bs, s[3] = dim;
        return 4;
    }
    if (pb->paged && lay == KVC_BLOCK_NZ) {
        const int64_t c0 = 32 / (int64_t)kvc_dtype_size(dt);
        s[0] = pb->NB, s[1] = Nkv, s[2] = dim / c0, s[3] = pb->bs, s[4] = c0;
        return 5;
    }
    if (pb->paged && t->ndim == 4) { /* BNBSND [NB, bs, Nkv, D] */
        s[0] = pb->NB, s[1] = pb->bs, s[2] = Nkv, s[3] = dim;
        return 4;
    }
    if (pb->paged) { /* BNBSND viewed [NB, bs, Nkv*D] */
        s[0] = pb->NB, s[1] = pb->bs, s[2] = Nkv * dim;
        return 3;
    }
    switch (p->layout) {
    case KVC_LAYOUT_TND: s[0] = pb->Skv_dim, s[1] = Nkv, s[2] = dim; return 3;
    case KVC_LAYOUT_NTD_TND: s[0] = Nkv, s[1] = pb->Skv_dim, s[2] = dim; return 3;
    case KVC_LAYOUT_BSH: s[0] = pb->B, s[1] = pb->Skv_dim, s[2] = Nkv * dim; return 3;
    case KVC_LAYOUT_BNSD: s[0] = pb->B, s[1] = Nkv, s[2] = pb->Skv_dim, s[3] = dim; return 4;
    default: s[0] = pb->B, s[1] = pb->Skv_dim, s[2] = Nkv, s[3] = dim; return 4;
    }
}

/* A K/V tensor is given and has at least min_nd dims (3 by layout; 1
 * placed by a descriptor, whose shape only bounds the extent). */
static kvc_status kv_present(const kvc_tensor *t, const char *name, int min_nd) {
    if (!t->data) FAIL(KVC_EINVAL, "%s tensor is required (its data is NULL)", name);
    if (t->ndim < min_nd || t->ndim > KVC_MAX_DIMS)
        FAIL(KVC_EINVAL, "%s has %d dims: K/V tensors have %d to 5 dims per layout and storage (R7)", name,
             (int)t->ndim, min_nd);
    return KVC_OK;
}

/* Channels per head of a K/V tensor (a descriptor's head_dim, else from its shape). */
static kvc_status kv_dims(const kvc_attn_problem *pb, const kvc_tensor *t, const char *name, int64_t *dim) {
    const kvc_attention_params *p = pb->p;
    const char *field = NULL;
    const kvc_paged_tensor *d = desc_of(pb, t, &field);
    *dim = 0;
    TRY(kv_present(t, name, d ? 1 : 3));
    if (d) {
        if (d->head_dim <= 0) FAIL(KVC_EINVAL, "%s.head_dim %lld must be > 0", field, (long long)d->head_dim);
        *dim = d->head_dim;
        return KVC_OK;
    }
    const kvc_block_layout lay = layout_of(pb, t);
    if (!pb->paged)
        *dim = p->layout == KVC_LAYOUT_BSH ? (t->shape[2] % pb->Nkv == 0 ? t->shape[2] / pb->Nkv : 0)
                                           : t->shape[t->ndim - 1];
    else if (lay == KVC_BLOCK_NZ)
        *dim = t->ndim == 5 ? t->shape[2] * t->shape[4] : 0;
    else if (lay == KVC_BLOCK_BNNDBS)
        *dim = t->ndim == 4 ? t->shape[2] : 0;
    else if (lay == KVC_BLOCK_BNNBSD)
        *dim = t->ndim == 4 ? t->shape[3] : 0;
    else if (t->ndim == 4) /* BNBSND [NB, bs, Nkv, D] */
        *dim = t->shape[2] == pb->Nkv ? t->shape[3] : 0;
    else /* BNBSND viewed [NB, bs, Nkv*D] */
        *dim = t->shape[2] % pb->Nkv == 0 ? t->shape[2] / pb->Nkv : 0;
    if (*dim <= 0) FAIL(KVC_EINVAL, "%s's extents do not hold num_kv_heads %lld heads (R7)", name, (long long)pb->Nkv);
    return KVC_OK;
}

/* Checks K/V-family tensor t (its shape per layout, or its descriptor) and
 * fills its view. */
static kvc_status check_kv_tensor(const kvc_attn_problem *pb, const kvc_tensor *t, const char *name, int64_t dim,
                                  kvci_kv_view *v) {
    const char *field = NULL;
    const kvc_paged_tensor *d = desc_of(pb, t, &field);
    if (d) return kvci_attn_view_paged(pb, d, field, t, v);
    const kvc_block_layout lay = layout_of(pb, t);
    int64_t s[5];
    if (pb->paged && lay == KVC_BLOCK_NZ) {
        const size_t es = kvc_dtype_size(t->dtype);
        if (es != 1 && es != 2)
            FAIL(KVC_EINVAL, "%s dtype %s: NZ caches hold 16-bit or 8-bit (int8, fp8) elements", name,
                 kvc_dtype_name(t->dtype));
        if (dim % (32 / (int64_t)es) != 0 || pb->bs % 16 != 0)
            FAIL(KVC_EINVAL, "%s: NZ storage needs D %% c0 == 0 and block_size %% 16 == 0", name);
    }
    int nd = kv_shape(pb, lay, dim, t, s);
    TRY(expect_shape(pb, t, name, nd, s));
    *v = pb->paged ? kvci_attn_view_dense(pb, lay, dim, t->dtype) : kvci_attn_view_contiguous(pb, dim);
    return KVC_OK;
}

/* A dtype without a vector path (KVC_SIMD_GENERIC) takes no keys in lanes;
 * one stored in blocks (scales in the block) has every K/V row of one head
 * whole blocks, channels in order (no NZ tiles, no key_rope part). */
static kvc_status check_kv_blocks(const kvc_attention_params *p, const kvc_attn_problem *pb) {
    const kvc_dtype_traits *t = kvci_dtype_traits(p->k.dtype);
    if (t->simd == KVC_SIMD_GENERIC && pb->vk.form == KVCI_KV_LANES)
        FAIL(KVC_EINVAL, "K/V dtype %s has no vector path: keys in lanes (BNNDBS) need one", t->name);
    if (t->block == 1) return KVC_OK;
    if (pb->vk.form != KVCI_KV_ROWS || pb->vv.form != KVCI_KV_ROWS)
        FAIL(KVC_EINVAL, "K/V dtype %s is stored in blocks of %d channels: paged storage BNBSND or BNNBSD only",
             t->name, (int)t->block);
    if (p->k_rope.data) FAIL(KVC_EINVAL, "K/V dtype %s takes no key_rope (MLA caches are float, int8 or fp8)", t->name);
    if (pb->D % t->block != 0 || pb->Dv % t->block != 0)
        FAIL(KVC_EINVAL, "K/V dtype %s is stored in blocks of %d channels: D %lld and Dv %lld must be multiples",
             t->name, (int)t->block, (long long)pb->D, (long long)pb->Dv);
    return KVC_OK;
}

static kvc_status resolve_paging(const kvc_attention_params *p, kvc_attn_problem *pb) {
    if (!pb->paged) {
        if (p->block_table.data)
            FAIL(KVC_EINVAL, "a block_table is given but kv_storage is CONTIGUOUS: choose a paged kv_storage (R8)");
        const kvc_tensor *k = &p->k;
        TRY(kv_present(&p->k, "k", 3));
        switch (p->layout) {
        case KVC_LAYOUT_TND: pb->Skv_dim = k->shape[0]; break;
        case KVC_LAYOUT_NTD_TND: pb->Skv_dim = k->shape[1]; break;
        case KVC_LAYOUT_BNSD: pb->Skv_dim = k->shape[2]; break;
        default: pb->Skv_dim = k->shape[1]; break;
        }
        if (pb->kv_packed) {
            const int64_t last = p->batch > 0 ? p->kv_lens[p->batch - 1] : 0;
            if (last != pb->Skv_dim)
                FAIL(KVC_EINVAL, "cumulative kv_lens end at %lld but k holds Tkv = %lld rows (R7)", (long long)last,
                     (long long)pb->Skv_dim);
        } else if (pb->max_skv > pb->Skv_dim) {
            FAIL(KVC_EINVAL, "a kv_lens entry %lld exceeds k's sequence extent %lld (R7)", (long long)pb->max_skv,
                 (long long)pb->Skv_dim);
        }
        return KVC_OK;
    }
    if (p->block_size <= 0 || p->block_size > KVC_ATTN_MAX_BLOCK_SIZE)
        FAIL(KVC_EINVAL, "block_size %d must be in [1, %d] with paged K/V (R8)", (int)p->block_size,
             KVC_ATTN_MAX_BLOCK_SIZE);
    if (p->binding.block_size > 0 && p->binding.block_size != p->block_size)
        FAIL(KVC_EINVAL,
             "block_size %d differs from the bound manager key's block size %d: block table of another manager? (R15)",
             (int)p->block_size, (int)p->binding.block_size);
    const kvc_block_layout bl = p->block_layout;
    if (!p->paged_kv && (bl == KVC_BLOCK_BNNBSD || bl == KVC_BLOCK_BNNDBS) && p->layout != KVC_LAYOUT_BNSD &&
        p->layout != KVC_LAYOUT_TND && p->layout != KVC_LAYOUT_TND_NTD)
        FAIL(KVC_EINVAL, "%s paged storage goes with BNSD or TND queries, not %s",
             bl == KVC_BLOCK_BNNBSD ? "BnNBsD" : "BnNDBs", kvc_attn_layout_name(p->layout));
    const kvc_tensor *bt = &p->block_table;
    if (!bt->data) FAIL(KVC_EINVAL, "block_table is required (its data is NULL) with paged K/V (R8)");
    if (bt->ndim != 2 || bt->dtype != KVC_DTYPE_I32)
        FAIL(KVC_EINVAL, "block_table must be a 2-D int32 tensor [B, W] with paged K/V (R8), got ndim %d dtype %s",
             (int)bt->ndim, kvc_dtype_name(bt->dtype));
    if (bt->shape[0] < pb->B)
        FAIL(KVC_EINVAL, "block_table has %lld rows, fewer than the batch %lld (R8)", (long long)bt->shape[0],
             (long long)pb->B);
    int64_t tbl_bytes = 0; /* the rows read are addressed b * W + e: their byte offsets must not wrap */
    if (kvc_tensor_numel(bt) < 0 || !kvci_mul64(kvc_tensor_numel(bt), 4, &tbl_bytes))
        FAIL(KVC_EINVAL, "block_table [%lld, %lld] has more bytes than int64 counts (R8)", (long long)bt->shape[0],
             (long long)bt->shape[1]);
    pb->bs = p->block_size;
    pb->tbl_w = bt->shape[1];
    if (p->paged_kv) {
        pb->NB = p->paged_kv->num_blocks;
        if (pb->NB <= 0) FAIL(KVC_EINVAL, "paged_kv.num_blocks %lld must be > 0", (long long)pb->NB);
    } else {
        TRY(kv_present(&p->k, "k cache", 3));
        pb->NB = p->k.shape[0];
    }
    const int32_t *tbl = bt->data;
    for (int64_t b = 0; b < pb->B; b++) {
        int64_t k0, skv;
        kvci_attn_kv_range(pb, b, &k0, &skv);
        const int64_t need = kvci_cdiv(skv, pb->bs);
        if (need > pb->tbl_w)
            FAIL(KVC_ERANGE,
                 "request %lld: kv_len %lld needs %lld blocks of %lld but the block_table is only %lld wide (R8)",
                 (long long)b, (long long)skv, (long long)need, (long long)pb->bs, (long long)pb->tbl_w);
        for (int64_t e = 0; e < need; e++) {
            const int32_t id = tbl[b * pb->tbl_w + e];
            if (id < 0 || id >= pb->NB)
                FAIL(KVC_ERANGE, "request %lld: block_table[%lld][%lld] = %d is outside [0, NB = %lld) (R8)",
                     (long long)b, (long long)b, (long long)e, (int)id, (long long)pb->NB);
        }
    }
    return KVC_OK;
}

/* ---- masks (R1-R4) -------------------------------------------------------- */

static kvc_status check_template(const kvc_tensor *m) {
    const int64_t N = KVC_MASK_TEMPLATE_DIM;
    const int64_t s2[2] = {N, N}, s3[3] = {1, N, N}, s4[4] = {1, 1, N, N};
    if (!shape_is(m, 2, s2) && !shape_is(m, 3, s3) && !shape_is(m, 4, s4))
        FAIL(KVC_EINVAL, "sparse_mode 2-4 take no [Sq, Skv] mask: pass none (the operator builds the 2048x2048 "
                         "template) or exactly the template [2048, 2048] (R3)");
    const uint8_t *d = m->data;
    for (int64_t r = 0; r < N; r++)
        for (int64_t c = 0; c < N; c++)
            if ((d[r * N + c] != 0) != (c > r))
                FAIL(KVC_EINVAL,
                     "mask template entry [%lld][%lld] = %d differs from the canonical T[r][c] = (c > r) (R3)",
                     (long long)r, (long long)c, (int)d[r * N + c]);
    return KVC_OK;
}

static kvc_status resolve_mask(const kvc_attention_params *p, kvc_attn_problem *pb) {
    const kvc_tensor *m = &p->mask;
    const int mode = p->sparse_mode;
    pb->has_mask = false;
    if (m->data && m->dtype != KVC_DTYPE_BOOL && m->dtype != KVC_DTYPE_I8)
        FAIL(KVC_EINVAL, "mask dtype %s is not allowed: masks are bool or int8 with 1 = masked (R2)",
             kvc_dtype_name(m->dtype));
    if (mode >= 2) {
        if (m->data) TRY(check_template(m));
    } else if (m->data) {
        int64_t mb, rows, cols;
        if (m->ndim == 2) {
            const bool per_batch = pb->max_sq <= 1 && m->shape[0] == pb->B && pb->B > 1;
            mb = per_batch ? pb->B : 1, rows = per_batch ? 1 : m->shape[0], cols = m->shape[1];
        } else if (m->ndim == 3) {
            mb = m->shape[0], rows = m->shape[1], cols = m->shape[2];
        } else if (m->ndim == 4 && m->shape[1] == 1) {
            mb = m->shape[0], rows = m->shape[2], cols = m->shape[3];
        } else {
            FAIL(KVC_EINVAL, "mask has %d dims: expected [Sq, Skv], [B or 1, Sq, Skv] or [B or 1, 1, Sq, Skv] (R7)",
                 (int)m->ndim);
        }
        if ((mb != 1 && mb != pb->B) || rows < pb->max_sq || cols < pb->max_skv)
            FAIL(KVC_EINVAL,
                 "mask extents (batch %lld, rows %lld, cols %lld) do not cover batch %lld x Sq %lld x Skv %lld (R7)",
                 (long long)mb, (long long)rows, (long long)cols, (long long)pb->B, (long long)pb->max_sq,
                 (long long)pb->max_skv);
        const uint8_t *d = m->data;
        const int64_t n = mb * rows * cols;
        for (int64_t e = 0; e < n; e++)
            if (d[e] > 1)
                FAIL(KVC_EINVAL, "mask element %lld is %d: integer masks hold only 0 (visible) and 1 (masked) (R2)",
                     (long long)e, (int)d[e]);
        pb->has_mask = true;
        pb->mask_bstride = mb == 1 ? 0 : rows * cols;
        pb->mask_cols = cols;
    } else if (mode == 1) {
        FAIL(KVC_EINVAL, "sparse_mode 1 (all-mask) needs a full mask [Sq, Skv] (R3)");
    } else if (pb->max_sq > 1 && !p->bidirectional) {
        FAIL(KVC_EINVAL,
             "sparse_mode 0 without a mask and %lld query tokens attends bidirectionally: use sparse_mode 3 for causal "
             "prefill, or set bidirectional (R1)",
             (long long)pb->max_sq);
    }
    if (mode == 4 || (mode == 0 && pb->has_mask)) {
        const int64_t pre = kvci_attn_band_clamp(p->pre_tokens), next = kvci_attn_band_clamp(p->next_tokens);
        for (int64_t b = 0; b < pb->B; b++) {
            int64_t q0, sq, k0, skv;
            kvci_attn_q_range(pb, b, &q0, &sq);
            kvci_attn_kv_range(pb, b, &k0, &skv);
            if (sq == 0) continue;
            if (pre + next < 0 || (next < 0 && (pre < -next || -next >= skv)) ||
                (pre < 0 && (next < -pre || -pre >= sq)))
                FAIL(KVC_EINVAL,
                     "request %lld: band pre_tokens %lld, next_tokens %lld is empty or invalid for Sq %lld, Skv %lld "
                     "(R4: pre + next >= 0; next < 0 needs pre >= |next| and |next| < Skv; pre < 0 needs next >= |pre| "
                     "and |pre| < Sq)",
                     (long long)b, (long long)pre, (long long)next, (long long)sq, (long long)skv);
        }
    }
    return KVC_OK;
}

/* ---- binding (R13, R14) --------------------------------------------------- */

static kvc_status check_binding(const kvc_attention_params *p) {
    const kvc_attn_binding *bd = &p->binding;
    if (bd->type == KVC_BIND_FULL && p->sparse_mode == 4)
        FAIL(KVC_EINVAL, "full-attention layer called with sparse_mode 4 (band): use mode 3 (R14)");
    if (bd->type == KVC_BIND_SLIDING) {
        if (bd->window <= 0)
            FAIL(KVC_EINVAL, "sliding-window binding needs window > 0, got %lld", (long long)bd->window);
        if (p->sparse_mode != 4)
            FAIL(KVC_EINVAL,
                 "sliding-window layer (window %lld) called with sparse_mode %d: it needs mode 4 with pre_tokens = "
                 "%lld, next_tokens = 0 (R13)",
                 (long long)bd->window, (int)p->sparse_mode, (long long)(bd->window - 1));
        if (p->pre_tokens > bd->window - 1)
            FAIL(KVC_EINVAL,
                 "pre_tokens %lld lets a query see keys outside the layer's window of %lld keys (released blocks would "
                 "be read): use pre_tokens = %lld (R13)",
                 (long long)p->pre_tokens, (long long)bd->window, (long long)(bd->window - 1));
        if (p->pre_tokens != bd->window - 1 || p->next_tokens != 0)
            FAIL(KVC_EINVAL,
                 "pre_tokens %lld / next_tokens %lld disagree with the layer's window of %lld keys: expected %lld / 0 "
                 "(R13)",
                 (long long)p->pre_tokens, (long long)p->next_tokens, (long long)bd->window,
                 (long long)(bd->window - 1));
    }
    return KVC_OK;
}

/* ---- MLA (R10) ------------------------------------------------------------ */

static kvc_status check_mla(const kvc_attention_params *p, kvc_attn_problem *pb) {
    const bool qr = p->q_rope.data != NULL, kr = p->k_rope.data != NULL;
    pb->Dr = 0;
    if (!qr && !kr) return KVC_OK;
    if (qr != kr)
        FAIL(KVC_EINVAL, "%s is given without %s: MLA needs both query_rope and key_rope (R10)",
             qr ? "query_rope" : "key_rope", qr ? "key_rope" : "query_rope");
    pb->Dr = head_dim_of(&p->q_rope, p->layout, pb->Nq);
    if (pb->Dr <= 0 || pb->Dr % 2 != 0)
        FAIL(KVC_EINVAL, "query_rope head dim %lld must be even and > 0 (R10)", (long long)pb->Dr);
    if (p->q_rope.dtype != p->q.dtype)
        FAIL(KVC_EINVAL, "query_rope dtype %s must equal the query dtype %s (R10)", kvc_dtype_name(p->q_rope.dtype),
             kvc_dtype_name(p->q.dtype));
    int64_t s[5];
    int nd = query_shape(pb, false, pb->Dr, s);
    TRY(expect_shape(pb, &p->q_rope, "query_rope", nd, s));
    int64_t kdim;
    TRY(kv_dims(pb, &p->k_rope, "key_rope", &kdim));
    if (kdim != pb->Dr)
        FAIL(KVC_EINVAL, "key_rope head dim %lld differs from the query_rope head dim %lld (R10)", (long long)kdim,
             (long long)pb->Dr);
    TRY(check_kv_tensor(pb, &p->k_rope, "key_rope", kdim, &pb->vr));
    /* The vendor operator's two MLA paths (rope 64 with D 512 absorbed or
     * 128 non-absorbed) keep its limits; any other dims are general MLA:
     * every layout, storage, mode, LSE and query length the kernel takes. */
    if (pb->Dr != 64 || (pb->D != 512 && pb->D != 128)) return KVC_OK;
    if (pb->D == 128) {
        if (pb->paged || (p->layout != KVC_LAYOUT_TND && p->layout != KVC_LAYOUT_NTD_TND))
            FAIL(KVC_EINVAL,
                 "MLA with head dim 128 (non-absorbed) takes packed TND or NTD_TND K/V without paging (R10)");
        return KVC_OK;
    }
    if (!pb->paged) FAIL(KVC_EINVAL, "MLA with head dim 512 (absorbed) needs paged K/V (R10)");
    if (pb->Nkv != 1)
        FAIL(KVC_EINVAL, "MLA with head dim 512 needs num_kv_heads 1 (one latent head), got %lld (R10)",
             (long long)pb->Nkv);
    if (pb->max_sq > 16)
        FAIL(KVC_EINVAL, "MLA with head dim 512 allows at most 16 query tokens per request, got %lld (R10)",
             (long long)pb->max_sq);
    if (p->lse.data) FAIL(KVC_EINVAL, "MLA with head dim 512 cannot return the softmax LSE (R10)");
    const int mode = p->sparse_mode;
    if (pb->max_sq <= 1 ? !((mode == 0 && !p->mask.data) || mode == 4) : !(mode == 3 || mode == 4))
        FAIL(KVC_EINVAL, "MLA with head dim 512 and %lld query tokens does not support sparse_mode %d%s: use %s (R10)",
             (long long)pb->max_sq, mode, p->mask.data ? " with a mask" : "",
             pb->max_sq <= 1 ? "mode 0 without mask, or mode 4" : "mode 3 or 4");
    if (pb->Dv != 512)
        FAIL(KVC_EINVAL,
             "MLA with head dim 512 reads values from the latent cache: value head dim %lld must be 512 (R10)",
             (long long)pb->Dv);
    return KVC_OK;
}

/* ---- quantised K/V (R12) -------------------------------------------------- */

static kvc_status quant_kind(kvc_attn_problem *pb, kvc_quant_mode mode, const kvc_tensor *t, int64_t dim,
                             const char *name, kvc_qidx *out) {
    if (t->dtype != KVC_DTYPE_F32) FAIL(KVC_EINVAL, "%s dtype %s must be f32", name, kvc_dtype_name(t->dtype));
    const int64_t n = kvc_tensor_numel(t), Nkv = pb->Nkv, H = Nkv * dim;
    if (n < 0) FAIL(KVC_EINVAL, "%s has a negative extent or more elements than int64 holds", name);
    switch (mode) {
    case KVC_QUANT_PER_CHANNEL:
        if (n == 1) {
            *out = KVC_QIDX_TENSOR;
            return KVC_OK;
        }
        if (n == H) { /* [Nkv, D], [Nkv, 1, D], [1, Nkv, D], [1, Nkv, 1, D], [H], [1, H] */
            *out = KVC_QIDX_CHANNEL;
            return KVC_OK;
        }
        FAIL(KVC_EINVAL,
             "%s has %lld elements: quant mode 0 takes [1] (per tensor) or Nkv*D = %lld per-channel scales (R12)", name,
             (long long)n, (long long)H);
    case KVC_QUANT_PER_HEAD:
        if (t->ndim == 1 && n == Nkv) {
            *out = KVC_QIDX_HEAD;
            return KVC_OK;
        }
        FAIL(KVC_EINVAL, "%s: quant mode 2 takes [Nkv = %lld] scales (R12)", name, (long long)Nkv);
    case KVC_QUANT_PER_TOKEN: {
        const int nd = t->ndim;
        if ((nd == 2 || (nd == 3 && t->shape[0] == 1)) && t->shape[nd - 2] == pb->B) {
            const int64_t S = t->shape[nd - 1];
            const int64_t need = pb->paged ? pb->tbl_w * pb->bs : pb->max_skv;
            if (S < need && S < pb->max_skv)
                FAIL(KVC_EINVAL, "%s: per-token scales [B, %lld] do not cover %lld keys (R12)", name, (long long)S,
                     (long long)need);
            if (pb->q_tok_s && pb->q_tok_s != S)
                FAIL(KVC_EINVAL, "key and value per-token scales differ in extent (R12)");
            *out = KVC_QIDX_TOKEN;
            pb->q_tok_s = S;
            return KVC_OK;
        }
        FAIL(KVC_EINVAL, "%s: quant mode 1 takes [B = %lld, S] or [1, B, S] per-token scales (R12)", name,
             (long long)pb->B);
    }
    case KVC_QUANT_PER_SLOT:
        if (!pb->paged)
            FAIL(KVC_EINVAL, "%s: quant mode 3 (per cache slot) needs paged K/V; contiguous K/V take mode 1 (R12)",
                 name);
        if (n == pb->NB * pb->bs && (t->ndim == 1 || (t->ndim == 2 && t->shape[0] == pb->NB))) {
            *out = KVC_QIDX_SLOT;
            return KVC_OK;
        }
        FAIL(KVC_EINVAL, "%s: quant mode 3 takes one scale per cache slot, [NB = %lld, bs = %lld] or [NB*bs] (R12)",
             name, (long long)pb->NB, (long long)pb->bs);
    default:
        FAIL(KVC_EINVAL,
             "%s: quant mode %d unsupported (0 per channel/tensor, 1 per token, 2 per head, 3 per slot) (R12)", name,
             (int)mode);
    }
}

static kvc_status check_quant(const kvc_attention_params *p, kvc_attn_problem *pb) {
    const bool ks = p->key_scale.data != NULL, vs = p->value_scale.data != NULL;
    const bool ko = p->key_offset.data != NULL, vo = p->value_offset.data != NULL;
    const kvc_dtype_traits *kt = kvci_dtype_traits(p->k.dtype); /* v has k's dtype */
    const bool quant = kvci_dtype_scales_beside(p->k.dtype);
    pb->kv_quant = false;
    pb->kq = pb->vq = KVC_QIDX_NONE;
    pb->q_tok_s = 0;
    if (ks != vs)
        FAIL(KVC_EINVAL, "only the %s dequant scale is given: key and value scales come together (R12)",
             ks ? "key" : "value");
    if (ko != vo)
        FAIL(KVC_EINVAL, "only the %s dequant offset is given: key and value offsets come together (R12)",
             ko ? "key" : "value");
    if (!quant) {
        if (ks || ko)
            FAIL(KVC_EINVAL, "dequant scales/offsets are given but K/V are %s, not int8 or fp8 (R12)",
                 kvc_dtype_name(p->k.dtype));
        return KVC_OK;
    }
    if (!kt->offsets && ko)
        FAIL(KVC_EINVAL, "%s K/V take dequant scales only, no offsets (x = scale * fp8 value) (R12)",
             kvc_dtype_name(p->k.dtype));
    if (!kt->scale_required && !ks) return KVC_OK; /* unscaled fp8: the values as stored */
    if (!ks) FAIL(KVC_EINVAL, "int8 K/V need key_scale and value_scale (dequant x = scale * (q + offset)) (R12)");
    pb->kv_quant = true;
    if (ko && !vs) FAIL(KVC_EINVAL, "offsets without scales (R12)");
    const kvc_quant_mode km = p->key_quant_mode, vm = p->value_quant_mode;
    if (km != vm && !(km == KVC_QUANT_PER_CHANNEL && (vm == KVC_QUANT_PER_TOKEN || vm == KVC_QUANT_PER_SLOT)))
        FAIL(KVC_EINVAL,
             "key_quant_mode %d and value_quant_mode %d differ: they must be equal, except key 0 with value 1 or 3 "
             "(R12)",
             (int)km, (int)vm);
    TRY(quant_kind(pb, km, &p->key_scale, pb->D, "key_scale", &pb->kq));
    TRY(quant_kind(pb, vm, &p->value_scale, pb->Dv, "value_scale", &pb->vq));
    if (ko) {
        kvc_qidx a, b;
        TRY(quant_kind(pb, km, &p->key_offset, pb->D, "key_offset", &a));
        TRY(quant_kind(pb, vm, &p->value_offset, pb->Dv, "value_offset", &b));
        if (a != pb->kq || b != pb->vq) FAIL(KVC_EINVAL, "offsets must have the shapes of their scales (R12)");
    }
    pb->k_has_off = pb->v_has_off = ko;
    if (pb->Dr == 64 && pb->D == 512 && pb->kq != KVC_QIDX_TENSOR)
        FAIL(KVC_EINVAL, "MLA quantised latent cache takes one per-tensor scale (R10)");
    if (pb->Dr && kvci_qidx_per_key(pb->kq) && !pb->rope_quant)
        FAIL(KVC_EINVAL, "MLA with quantised keys and a float key_rope takes key scales per tensor, channel or head: a "
                         "per-token key scale would also scale the rope part (R10)");
    if (pb->rope_quant && (pb->kq == KVC_QIDX_CHANNEL || ko))
        FAIL(KVC_EINVAL,
             "an int8/fp8 key_rope shares the keys' scale: key scales per tensor, head or token, no offsets (R10)");
    return KVC_OK;
}

/* ---- outputs, sinks, ALiBi slopes ------------------------------------------------------- */

static kvc_status check_outputs(const kvc_attention_params *p, kvc_attn_problem *pb) {
    int64_t s[5];
    int nd = query_shape(pb, true, pb->Dv, s);
    TRY(expect_shape(pb, &p->out, "out", nd, s));
    if (p->lse.data) {
        if (p->lse.dtype != KVC_DTYPE_F32) FAIL(KVC_EINVAL, "lse dtype %s must be f32", kvc_dtype_name(p->lse.dtype));
        const int64_t lt[3] = {pb->Tq, pb->Nq, 1}, lb[4] = {pb->B, pb->Nq, pb->Sq_dim, 1};
        if (pb->q_cum)
            TRY(expect_shape(pb, &p->lse, "lse", 3, lt));
        else
            TRY(expect_shape(pb, &p->lse, "lse", 4, lb));
    }
    if (p->sinks.data) {
        if (!kvci_dtype_is_compute(p->sinks.dtype))
            FAIL(KVC_EINVAL, "sinks dtype %s must be f32/f16/bf16 (R11)", kvc_dtype_name(p->sinks.dtype));
        if (p->sinks.ndim != 1 || p->sinks.shape[0] != pb->Nq)
            FAIL(KVC_EINVAL, "sinks must be [Nq = %lld], one logit per query head (R11)", (long long)pb->Nq);
    }
    if (p->alibi_slopes.data) {
        if (p->alibi_slopes.dtype != KVC_DTYPE_F32)
            FAIL(KVC_EINVAL, "alibi_slopes dtype %s must be f32", kvc_dtype_name(p->alibi_slopes.dtype));
        if (p->alibi_slopes.ndim != 1 || p->alibi_slopes.shape[0] != pb->Nq)
            FAIL(KVC_EINVAL, "alibi_slopes must be [Nq = %lld], one ALiBi slope per query head", (long long)pb->Nq);
    } else if (p->alibi_bf16) {
        FAIL(KVC_EINVAL, "alibi_bf16 needs alibi_slopes (the form of their bias)");
    }
    return KVC_OK;
}

kvc_status kvci_attn_resolve(const kvc_attention_params *p, kvc_attn_problem *pb) {
    if (!p || !pb) return kvci_fail(KVC_EINVAL, "attention: params must not be NULL");
    memset(pb, 0, sizeof *pb);
    pb->p = p;
    TRY(check_scalars(p));
    pb->B = p->batch;
    pb->Nq = p->num_heads;
    pb->Nkv = p->num_kv_heads;
    pb->G = pb->Nq / pb->Nkv;
    TRY(check_lengths(p, pb));
    TRY(resolve_query(p, pb));
    TRY(resolve_paging(p, pb));
    int64_t kd, vd;
    TRY(kv_dims(pb, &p->k, "k", &kd));
    TRY(kv_dims(pb, &p->v, "v", &vd));
    if (kd != pb->D)
        FAIL(KVC_EINVAL, "k head dim %lld differs from the query head dim %lld (R7)", (long long)kd, (long long)pb->D);
    pb->Dv = vd;
    TRY(check_kv_tensor(pb, &p->k, "k", kd, &pb->vk));
    TRY(check_kv_tensor(pb, &p->v, "v", vd, &pb->vv));
    if (p->k.dtype != p->v.dtype)
        FAIL(KVC_EINVAL, "k dtype %s differs from v dtype %s", kvc_dtype_name(p->k.dtype), kvc_dtype_name(p->v.dtype));
    if (!kvci_dtype_is_kv(p->k.dtype))
        FAIL(KVC_EINVAL, "K/V dtype %s unsupported (f32, f16, bf16, int8, fp8_e4m3, fp8_e5m2)",
             kvc_dtype_name(p->k.dtype));
    TRY(check_kv_blocks(p, pb));
    if (pb->paged && !p->paged_kv && p->block_layout == KVC_BLOCK_BNNDBS && p->k_rope.data)
        FAIL(KVC_EINVAL, "BnNDBs (keys in lanes) storage takes no key_rope: MLA caches are BNBSND or NZ");
    TRY(check_mla(p, pb));
    if (pb->Dr && p->k_rope.dtype != p->q.dtype && p->k_rope.dtype != p->k.dtype)
        FAIL(KVC_EINVAL, "key_rope dtype %s must be a float dtype of the query or cache (R10)",
             kvc_dtype_name(p->k_rope.dtype));
    pb->rope_quant = pb->Dr && kvci_dtype_scales_beside(p->k_rope.dtype);
    if (pb->Dr && !kvci_dtype_is_compute(p->k_rope.dtype) && !(pb->rope_quant && p->k_rope.dtype == p->k.dtype))
        FAIL(KVC_EINVAL, "key_rope dtype %s must be f32/f16/bf16, or the int8/fp8 dtype of the keys (R10)",
             kvc_dtype_name(p->k_rope.dtype));
    TRY(resolve_mask(p, pb));
    TRY(check_binding(p));
    TRY(check_quant(p, pb));
    TRY(check_outputs(p, pb));
    return KVC_OK;
}

kvc_status kvc_attention_check(const kvc_attention_params *p) {
    kvc_attn_problem pb;
    return kvci_attn_resolve(p, &pb);
}
