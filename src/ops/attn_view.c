/* The addressing of each K/V-family tensor of an attention call (one
 * kvci_kv_view each, attn_problem.h): contiguous K/V by the query's layout
 * family, paged K/V stored densely in a block layout (the front end's
 * block_layout), or paged K/V placed by the caller's kvc_paged_kv
 * descriptor, whose every field is checked here. */
#include "base/internal.h"
#include "ops/attn_problem.h"
#include "ops/elem.h"

#define FAIL(st, ...) return kvci_fail((st), "attention: " __VA_ARGS__)

kvci_kv_view kvci_attn_view_contiguous(const kvc_attn_problem *pb, int64_t dim) {
    const int64_t Nkv = pb->Nkv, S = pb->Skv_dim;
    kvci_kv_view v = {.form = KVCI_KV_ROWS};
    switch (pb->p->layout) {
    case KVC_LAYOUT_TND: v.sblk = 0, v.stok = Nkv * dim, v.shead = dim; break;            /* [Tkv, Nkv, D] */
    case KVC_LAYOUT_NTD_TND: v.sblk = 0, v.stok = dim, v.shead = S * dim; break;          /* [Nkv, Tkv, D] */
    case KVC_LAYOUT_BNSD: v.sblk = Nkv * S * dim, v.stok = dim, v.shead = S * dim; break; /* [B, Nkv, S, D] */
    default: v.sblk = S * Nkv * dim, v.stok = Nkv * dim, v.shead = dim; break; /* [B, S, Nkv, D] or [B, S, Nkv*D] */
    }
    return v;
}

kvci_kv_view kvci_attn_view_dense(const kvc_attn_problem *pb, kvc_block_layout lay, int64_t dim, kvc_dtype dt) {
    const int64_t Nkv = pb->Nkv, bs = pb->bs;
    kvci_kv_view v = {.form = KVCI_KV_ROWS, .sblk = bs * Nkv * dim};
    switch (lay) {
    case KVC_BLOCK_BNNBSD: v.shead = bs * dim, v.stok = dim; break; /* [NB, Nkv, bs, D] */
    case KVC_BLOCK_NZ:                                              /* [NB, Nkv, D/c0, bs, c0] */
        v.form = KVCI_KV_NZ, v.c0 = 32 / (int64_t)kvc_dtype_size(dt);
        v.shead = dim * bs, v.stok = v.c0, v.schan = bs * v.c0;
        break;
    case KVC_BLOCK_BNNDBS: /* keys in lanes [NB, Nkv, D, bs] */
        v.form = KVCI_KV_LANES, v.c0 = 1;
        v.shead = dim * bs, v.stok = 1, v.schan = bs;
        break;
    default: v.shead = dim, v.stok = Nkv * dim; break; /* BNBSND [NB, bs, Nkv, D] */
    }
    return v;
}

/* stride > 0, named. */
static kvc_status positive(const char *name, const char *field, int64_t x) {
    if (x <= 0) FAIL(KVC_EINVAL, "%s.%s %lld must be > 0", name, field, (long long)x);
    return KVC_OK;
}

/* The elements of described tensor t: its shape bounds the extent, so each
 * extent is >= 0 and their product fits int64 (not kvc_tensor_numel's
 * unchecked product). */
static kvc_status extent_of(const kvc_tensor *t, const char *name, int64_t *n) {
    *n = 1;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0)
            FAIL(KVC_EINVAL, "%s: the tensor it places has extent %lld in dim %d (extents are >= 0)", name,
                 (long long)t->shape[i], (int)i);
        if (!kvci_mul64(*n, t->shape[i], n))
            FAIL(KVC_EINVAL, "%s: the tensor it places has more elements than int64 holds (beyond int64 at dim %d)",
                 name, (int)i);
    }
    return KVC_OK;
}

kvc_status kvci_attn_view_paged(const kvc_attn_problem *pb, const kvc_paged_tensor *d, const char *name,
                                const kvc_tensor *t, kvci_kv_view *v) {
    const kvc_dtype_traits *tr = kvci_dtype_traits(t->dtype);
    const int64_t dim = d->head_dim, es = (int64_t)kvc_dtype_size(t->dtype);
    kvc_status st;
    if ((st = positive(name, "block_stride", d->block_stride)) != KVC_OK ||
        (st = positive(name, "head_stride", d->head_stride)) != KVC_OK ||
        (st = positive(name, "token_stride", d->token_stride)) != KVC_OK ||
        (st = positive(name, "channel_stride", d->channel_stride)) != KVC_OK)
        return st;
    *v = (kvci_kv_view){.sblk = d->block_stride, .shead = d->head_stride, .stok = d->token_stride};
    switch (d->layout) {
    case KVC_BLOCK_BNBSND:
    case KVC_BLOCK_BNNBSD:
        if (d->channel_stride != 1)
            FAIL(KVC_EINVAL, "%s.channel_stride %lld: a %s head's channels are adjacent (1)", name,
                 (long long)d->channel_stride, d->layout == KVC_BLOCK_BNBSND ? "BNBSND" : "BNNBSD");
        v->form = KVCI_KV_ROWS;
        break;
    case KVC_BLOCK_BNNDBS:
        if (t != &pb->p->k)
            FAIL(KVC_EINVAL, "%s.layout BNNDBS: keys in lanes is a form of K only (%s takes BNBSND, BNNBSD or NZ)",
                 name, name);
        if (d->token_stride != 1) /* the lanes kernels read a block's keys as consecutive elements */
            FAIL(KVC_EINVAL, "%s.token_stride %lld: keys in lanes (BNNDBS) are adjacent in a block (1)", name,
                 (long long)d->token_stride);
        v->form = KVCI_KV_LANES, v->c0 = 1, v->schan = d->channel_stride;
        break;
    case KVC_BLOCK_NZ:
        if (es != 1 && es != 2)
            FAIL(KVC_EINVAL, "%s.layout NZ: tiles hold 16-bit or 8-bit (int8, fp8) elements, not %s", name,
                 kvc_dtype_name(t->dtype));
        v->form = KVCI_KV_NZ, v->c0 = 32 / es, v->schan = d->channel_stride;
        if (dim % v->c0 != 0)
            FAIL(KVC_EINVAL, "%s.layout NZ: head_dim %lld is not a multiple of the tile width %lld", name,
                 (long long)dim, (long long)v->c0);
        break;
    default: FAIL(KVC_EINVAL, "%s.layout %d unknown (BNBSND, BNNBSD, NZ or BNNDBS)", name, (int)d->layout);
    }
    if (tr != NULL && tr->block > 1 &&
        (d->block_stride % tr->block || d->head_stride % tr->block ||
         d->token_stride % tr->block)) /* the form: check_kv_blocks */
        FAIL(KVC_EINVAL,
             "%s: block_stride %lld, head_stride %lld and token_stride %lld must be multiples of the %s dtype's block "
             "of %d elements",
             name, (long long)d->block_stride, (long long)d->head_stride, (long long)d->token_stride, tr->name,
             (int)tr->block);
    /* the last element addressed: block NB - 1, head Nkv - 1, slot bs - 1, channel dim - 1 */
    int64_t a, b, c, e, last;
    const bool ok = kvci_mul64(pb->NB - 1, v->sblk, &a) && kvci_mul64(pb->Nkv - 1, v->shead, &b) &&
                    kvci_mul64(pb->bs - 1, v->stok, &c) &&
                    kvci_mul64((dim - 1) / (v->c0 ? v->c0 : 1), v->c0 ? v->schan : 1, &e) && kvci_add64(a, b, &last) &&
                    kvci_add64(last, c, &last) && kvci_add64(last, e, &last) &&
                    kvci_add64(last, v->c0 ? (dim - 1) % v->c0 : 0, &last);
    int64_t n;
    if ((st = extent_of(t, name, &n)) != KVC_OK) return st;
    if (!ok || last >= n)
        FAIL(KVC_ERANGE,
             "%s: num_blocks %lld x block_stride %lld, %lld heads x head_stride %lld, block_size %lld x token_stride "
             "%lld and head_dim %lld reach element %s%lld, outside the tensor's %lld elements",
             name, (long long)pb->NB, (long long)v->sblk, (long long)pb->Nkv, (long long)v->shead, (long long)pb->bs,
             (long long)v->stok, (long long)dim, ok ? "" : "beyond int64: ", (long long)(ok ? last : INT64_MAX),
             (long long)n);
    return KVC_OK;
}
