/* Cache-write operators: legacy contiguous scatter (AO 2.1), slot scatter
 * for both paged allocation orders and NZ (AO 2.2, 2.4), and the paged
 * geometry and slot checks shared with the quantising writes
 * (quant_write.c). Every index is checked before anything is written. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/ops.h"
#include "ops/elem.h"
#include "ops/write_internal.h"

kvc_status kvci_check_contiguous(const kvc_tensor *cache, const kvc_tensor *upd, const int64_t *starts,
                                 int64_t n_starts, const char *what) {
    if (!cache || !upd || !cache->data || !upd->data || (!starts && n_starts > 0))
        return kvci_fail(KVC_EINVAL, "%s: cache, upd and starts must not be NULL", what);
    if (cache->ndim != 3 || upd->ndim != 3)
        return kvci_fail(KVC_EINVAL, "%s: cache (ndim %d) and upd (ndim %d) must be 3-D [B, S, H]", what,
                         (int)cache->ndim, (int)upd->ndim);
    const int64_t B = cache->shape[0], S = cache->shape[1], H = cache->shape[2];
    const int64_t L = upd->shape[1];
    if (upd->shape[0] != B || upd->shape[2] != H || L < 0)
        return kvci_fail(KVC_EINVAL, "%s: upd [%lld, %lld, %lld] must be [B=%lld, L, H=%lld]", what,
                         (long long)upd->shape[0], (long long)L, (long long)upd->shape[2], (long long)B, (long long)H);
    if (kvc_tensor_numel(cache) < 0 || kvc_tensor_numel(upd) < 0)
        return kvci_fail(KVC_EINVAL, "%s: cache [%lld, %lld, %lld] or upd L %lld: more elements than int64 counts",
                         what, (long long)B, (long long)S, (long long)H, (long long)L);
    if (n_starts != B)
        return kvci_fail(KVC_EINVAL, "%s: %lld starts given, expected one per batch row (%lld)", what,
                         (long long)n_starts, (long long)B);
    for (int64_t b = 0; b < B; b++)
        if (starts[b] < 0 || starts[b] > S - L)
            return kvci_fail(KVC_ERANGE,
                             "%s: row %lld start %lld + %lld new tokens exceeds S_max %lld (must be in [0, S_max - L])",
                             what, (long long)b, (long long)starts[b], (long long)L, (long long)S);
    return KVC_OK;
}

kvc_status kvc_write_contiguous(kvc_tensor *cache, const kvc_tensor *upd, const int64_t *starts, int64_t n_starts) {
    kvc_status st = kvci_check_contiguous(cache, upd, starts, n_starts, "write_contiguous");
    if (st != KVC_OK) return st;
    if (cache->dtype != upd->dtype || kvc_dtype_size(cache->dtype) == 0)
        return kvci_fail(KVC_EINVAL,
                         "write_contiguous: upd dtype %s (%d) must equal the cache dtype %s (%d), a dtype of the "
                         "table with whole-byte elements (f32 into int8/fp8: kvc_write_contiguous_quant)",
                         kvc_dtype_name(upd->dtype), (int)upd->dtype, kvc_dtype_name(cache->dtype), (int)cache->dtype);
    const int64_t B = cache->shape[0], S = cache->shape[1], H = cache->shape[2], L = upd->shape[1];
    const size_t es = kvc_dtype_size(cache->dtype);
    for (int64_t b = 0; b < B; b++)
        memcpy((char *)cache->data + ((size_t)(b * S + starts[b]) * (size_t)H) * es,
               (const char *)upd->data + ((size_t)(b * L) * (size_t)H) * es, (size_t)(L * H) * es);
    return KVC_OK;
}

/* The NZ index of checked geometry (kvci_paged_geom_of): the writes' per-element path. */
static int64_t nz_at(int64_t p, int64_t o, int64_t h, int64_t d, int64_t bs, int64_t n_heads, int64_t head_dim,
                     int64_t c0) {
    const int64_t H = n_heads * head_dim, j = h * head_dim + d;
    return p * (bs * H) + (j / c0) * (bs * c0) + o * c0 + (j % c0);
}

int64_t kvc_nz_index(int64_t p, int64_t o, int64_t h, int64_t d, int64_t bs, int64_t n_heads, int64_t head_dim,
                     int64_t c0) {
    if (p < 0 || p == INT64_MAX || bs < 1 || o < 0 || o >= bs || n_heads < 1 || h < 0 || h >= n_heads || head_dim < 1 ||
        d < 0 || d >= head_dim || c0 < 1)
        return -1;
    /* the largest index of block p: (p + 1) * bs * H' - 1, H' = H rounded up to whole tiles of c0 */
    int64_t H = 0, tiles = 0, end = 0;
    if (!kvci_mul64(n_heads, head_dim, &H) || !kvci_add64(H, c0 - 1, &tiles) || !kvci_mul64(tiles / c0, c0, &tiles) ||
        !kvci_mul64(bs, tiles, &end) || !kvci_mul64(p + 1, end, &end))
        return -1;
    return nz_at(p, o, h, d, bs, n_heads, head_dim, c0);
}

int64_t kvci_paged_index(const kvc_paged_geom *g, int64_t slot, int64_t h, int64_t d) {
    const int64_t p = slot / g->bs, o = slot % g->bs;
    switch (g->order) {
    case KVC_BLOCK_BNNBSD: return ((p * g->n_heads + h) * g->bs + o) * g->head_dim + d;
    case KVC_BLOCK_NZ: return nz_at(p, o, h, d, g->bs, g->n_heads, g->head_dim, g->c0);
    case KVC_BLOCK_BNNDBS: return ((p * g->n_heads + h) * g->head_dim + d) * g->bs + o;
    case KVC_BLOCK_BNBSND:
    default: return (slot * g->n_heads + h) * g->head_dim + d;
    }
}

kvc_status kvci_paged_geom_of(const kvc_tensor *cache, kvc_block_layout order, const char *what, kvc_paged_geom *g) {
    if (!cache || !cache->data) return kvci_fail(KVC_EINVAL, "%s: cache must not be NULL", what);
    if (cache->ndim != 4)
        return kvci_fail(KVC_EINVAL,
                         "%s: cache has ndim %d, expected 4 ([NB, bs, Nkv, D], [NB, Nkv, bs, D] or [NB, Nkv, D, bs])",
                         what, (int)cache->ndim);
    g->order = order;
    g->n_blocks = cache->shape[0];
    if (order == KVC_BLOCK_BNNBSD) {
        g->n_heads = cache->shape[1];
        g->bs = cache->shape[2];
    } else if (order == KVC_BLOCK_BNNDBS) {
        g->n_heads = cache->shape[1];
        g->bs = cache->shape[3];
    } else if (order == KVC_BLOCK_BNBSND || order == KVC_BLOCK_NZ) {
        g->bs = cache->shape[1];
        g->n_heads = cache->shape[2];
    } else {
        return kvci_fail(KVC_EINVAL, "%s: unknown block layout %d", what, (int)order);
    }
    g->head_dim = cache->shape[order == KVC_BLOCK_BNNDBS ? 2 : 3];
    g->c0 = 0;
    if (g->bs <= 0 || g->n_heads <= 0 || g->head_dim <= 0 || g->n_blocks < 0)
        return kvci_fail(KVC_EINVAL, "%s: cache extents must be positive", what);
    if (kvc_tensor_numel(cache) < 0) /* NB*bs (the slot bound) and every index below it fit int64 */
        return kvci_fail(KVC_EINVAL, "%s: cache [%lld, %lld, %lld, %lld] has more elements than int64 counts", what,
                         (long long)cache->shape[0], (long long)cache->shape[1], (long long)cache->shape[2],
                         (long long)cache->shape[3]);
    if (order == KVC_BLOCK_NZ) {
        size_t es = kvc_dtype_size(cache->dtype);
        if (es != 1 && es != 2)
            return kvci_fail(KVC_EINVAL, "%s: NZ caches hold 16-bit or 8-bit elements, not %s", what,
                             kvc_dtype_name(cache->dtype));
        g->c0 = 32 / (int64_t)es;
        if (g->head_dim % g->c0 != 0 || g->bs % 16 != 0)
            return kvci_fail(KVC_EINVAL, "%s: NZ cache needs D %% c0 == 0 and bs %% 16 == 0 (D %lld, c0 %lld, bs %lld)",
                             what, (long long)g->head_dim, (long long)g->c0, (long long)g->bs);
    }
    return KVC_OK;
}

#ifndef NDEBUG
/* Debug builds: a slot outside block 0 written twice in one call (AO 2.2:
 * duplicates are legal only for the null block). Sorts a copy, so it stays
 * out of release builds (no allocation on the write path). */
static kvc_status check_duplicates(const int64_t *slots, int64_t n_slots, int64_t bs, const char *what) {
    int64_t *c = kvci_malloc(sizeof(int64_t) * (size_t)(n_slots + 1));
    if (!c) return KVC_OK; /* the check is best effort */
    int64_t n = 0;
    for (int64_t t = 0; t < n_slots; t++)
        if (slots[t] >= bs) c[n++] = slots[t];
    qsort(c, (size_t)n, sizeof *c, kvci_cmp_i64);
    for (int64_t i = 1; i < n; i++)
        if (c[i] == c[i - 1]) {
            const int64_t dup = c[i];
            kvci_free(c);
            return kvci_fail(KVC_EINVAL,
                             "%s: slot %lld is written twice in one call (duplicates are allowed only in the null "
                             "block, slots < bs = %lld)",
                             what, (long long)dup, (long long)bs);
        }
    kvci_free(c);
    return KVC_OK;
}
#endif

kvc_status kvci_check_slots(const int64_t *slots, int64_t n_slots, int64_t n_tokens, int64_t capacity, int64_t bs,
                            const char *what) {
    if (n_slots != n_tokens)
        return kvci_fail(KVC_EINVAL, "%s: %lld slots for %lld tokens (need one slot per token)", what,
                         (long long)n_slots, (long long)n_tokens);
    if (n_slots > 0 && !slots) return kvci_fail(KVC_EINVAL, "%s: slots must not be NULL", what);
    for (int64_t t = 0; t < n_slots; t++)
        if (slots[t] != KVC_SLOT_SKIP && (slots[t] < 0 || slots[t] >= capacity))
            return kvci_fail(KVC_ERANGE,
                             "%s: slot %lld of token %lld is outside [0, NB*bs = %lld) and is not the skip marker -1",
                             what, (long long)slots[t], (long long)t, (long long)capacity);
#ifndef NDEBUG
    return check_duplicates(slots, n_slots, bs, what);
#else
    (void)bs;
    return KVC_OK;
#endif
}

kvc_status kvci_check_upd(const kvc_tensor *upd, const kvc_paged_geom *g, const char *what) {
    if (!upd || !upd->data || upd->ndim != 3 || upd->shape[0] < 0 || upd->shape[1] != g->n_heads ||
        upd->shape[2] != g->head_dim)
        return kvci_fail(KVC_EINVAL, "%s: upd must be [T >= 0, Nkv = %lld, D = %lld]", what, (long long)g->n_heads,
                         (long long)g->head_dim);
    return KVC_OK;
}

/* f32 rows into a cache of a dtype stored in blocks (scales in the block):
 * each (token, head) row of D channels, whole blocks, through the dtype's
 * from_f32 (g, upd checked). */
static kvc_status write_blocks(kvc_tensor *cache, const kvc_paged_geom *g, const kvc_tensor *upd, const int64_t *slots,
                               int64_t n_slots, const kvc_dtype_traits *t) {
    if (upd->dtype != KVC_DTYPE_F32 || t->from_f32 == NULL)
        return kvci_fail(KVC_EINVAL, "write_slots: a %s cache is written from f32 upd (got %s)%s", t->name,
                         kvc_dtype_name(upd->dtype), t->from_f32 ? "" : ", and its dtype has no from_f32");
    if (g->order != KVC_BLOCK_BNBSND && g->order != KVC_BLOCK_BNNBSD)
        return kvci_fail(KVC_EINVAL, "write_slots: a %s cache (blocks of %d channels) is BNBSND or BNNBSD, not %d",
                         t->name, (int)t->block, (int)g->order);
    if (g->head_dim % t->block != 0)
        return kvci_fail(KVC_EINVAL, "write_slots: a %s cache needs D %% %d == 0 (D %lld)", t->name, (int)t->block,
                         (long long)g->head_dim);
    kvc_status st = kvci_check_slots(slots, n_slots, upd->shape[0], g->n_blocks * g->bs, g->bs, "write_slots");
    if (st != KVC_OK) return st;
    const float *x = upd->data;
    for (int64_t tk = 0; tk < n_slots; tk++) {
        if (slots[tk] == KVC_SLOT_SKIP) continue;
        for (int64_t h = 0; h < g->n_heads; h++)
            t->from_f32(x + (tk * g->n_heads + h) * g->head_dim, g->head_dim, cache->data,
                        kvci_paged_index(g, slots[tk], h, 0));
    }
    return KVC_OK;
}

kvc_status kvc_write_slots(kvc_tensor *cache, kvc_block_layout order, const kvc_tensor *upd, const int64_t *slots,
                           int64_t n_slots) {
    kvc_paged_geom g;
    kvc_status st = kvci_paged_geom_of(cache, order, "write_slots", &g);
    if (st != KVC_OK) return st;
    if ((st = kvci_check_upd(upd, &g, "write_slots")) != KVC_OK) return st;
    if (kvci_dtype_is_blocked(cache->dtype))
        return write_blocks(cache, &g, upd, slots, n_slots, kvci_dtype_traits(cache->dtype));
    if (upd->dtype != cache->dtype || kvc_dtype_size(cache->dtype) == 0)
        return kvci_fail(KVC_EINVAL,
                         "write_slots: upd dtype %s (%d) must equal the cache dtype %s (%d), a dtype of the table "
                         "(int8 caches: use kvc_write_slots_quant)",
                         kvc_dtype_name(upd->dtype), (int)upd->dtype, kvc_dtype_name(cache->dtype), (int)cache->dtype);
    if ((st = kvci_check_slots(slots, n_slots, upd->shape[0], g.n_blocks * g.bs, g.bs, "write_slots")) != KVC_OK)
        return st;
    const size_t es = kvc_dtype_size(cache->dtype);
    const int64_t D = g.head_dim;
    /* contiguous runs per (token, head): the whole D for plain orders, c0 for NZ, 1 for BNNDBS */
    const int64_t run = order == KVC_BLOCK_NZ ? g.c0 : order == KVC_BLOCK_BNNDBS ? 1 : D;
    for (int64_t t = 0; t < n_slots; t++) {
        if (slots[t] == KVC_SLOT_SKIP) continue;
        for (int64_t h = 0; h < g.n_heads; h++)
            for (int64_t d = 0; d < D; d += run)
                memcpy((char *)cache->data + (size_t)kvci_paged_index(&g, slots[t], h, d) * es,
                       (const char *)upd->data + (size_t)((t * g.n_heads + h) * D + d) * es, (size_t)run * es);
    }
    return KVC_OK;
}
