/* Absorbed MLA attention over latent caches (MF 4.4): one KV "head" of the
 * normalised latent c [rkv] and the rotated k_pe [dr] per token, shared by
 * every query head; score = (q_lat . c + q_pe . k_pe) * scale, value = c.
 * Keys are visited in token order with the same arithmetic whatever the
 * cache form, block size or paging, so the output is bitwise reproducible. */
#include <math.h>
#include <omp.h>

#include "base/internal.h"
#include "model/forward_internal.h"
#include "model/mla_internal.h"

/* Row-major offset (in tokens) of key j of step row r in the latent caches. */
static inline int64_t key_slot(const kvc_latent_call *c, int64_t r, int64_t j)
{
    if (!c->block_table) return c->cache_row[r] * c->seq_cap + j;
    const int32_t blk = c->block_table[r * c->table_width + j / c->block_size];
    return (int64_t)blk * c->block_size + j % c->block_size;
}

kvc_status kvc_mla_latent_check(const kvc_latent_call *c)
{
    const kvc_step_metadata *md = c->md;
    for (int64_t r = 0; r < md->n_rows; r++) {
        const int64_t nk = md->seq_lens_kv[r];
        if (nk > c->max_kv)
            return kvc_fail(KVC_ERANGE, "forward: row %lld sees %lld keys, more than the workspace's max_kv_len %lld",
                            (long long)r, (long long)nk, (long long)c->max_kv);
        if (!c->block_table) {
            if (c->cache_row[r] < 0 || c->cache_row[r] >= c->n_cache_rows || nk > c->seq_cap)
                return kvc_fail(KVC_ERANGE, "forward: row %lld (cache row %lld, %lld keys) outside the latent cache [%lld, %lld]",
                                (long long)r, (long long)c->cache_row[r], (long long)nk, (long long)c->n_cache_rows,
                                (long long)c->seq_cap);
            continue;
        }
        const int64_t nb = kvc_cdiv(nk, c->block_size);
        if (nb > c->table_width)
            return kvc_fail(KVC_ERANGE, "forward: row %lld needs %lld blocks, its table holds %lld", (long long)r,
                            (long long)nb, (long long)c->table_width);
        for (int64_t b = 0; b < nb; b++) {
            const int32_t id = c->block_table[r * c->table_width + b];
            if (id < 0 || id >= c->n_blocks)
                return kvc_fail(KVC_ERANGE, "forward: row %lld block %lld has id %d outside [0, %lld)", (long long)r,
                                (long long)b, (int)id, (long long)c->n_blocks);
        }
    }
    return KVC_OK;
}

void kvc_mla_latent_attend(const kvc_latent_call *c, float *scores /* [threads, max_kv] */)
{
    const kvc_step_metadata *md = c->md;
    const int64_t T = md->n_tokens, nH = c->n_heads, R = c->rkv, Dr = c->dr;
#pragma omp parallel for schedule(static) if (T * nH * c->max_kv > 65536)
    for (int64_t th = 0; th < T * nH; th++) {
        const int64_t t = th / nH, h = th % nH;
        int64_t r = 0;
        while (md->cu_seq_lens_q[r] <= t) r++;
        const int64_t nk = md->positions[t] + 1 < md->seq_lens_kv[r] ? md->positions[t] + 1 : md->seq_lens_kv[r];
        const float *ql = c->q_lat + (t * nH + h) * R; /* [R] */
        const float *qp = c->q_pe + t * c->q_pe_stride + h * c->q_pe_head_stride; /* [Dr] */
        float *sc = scores + (int64_t)omp_get_thread_num() * c->max_kv; /* [nk] */
        float mx = -INFINITY;
        for (int64_t j = 0; j < nk; j++) {
            const int64_t slot = key_slot(c, r, j);
            const float *cj = c->latent + slot * R, *pj = c->rope + slot * Dr;
            float a = 0.0f, b = 0.0f;
            for (int64_t d = 0; d < R; d++) a += ql[d] * cj[d];
            for (int64_t d = 0; d < Dr; d++) b += qp[d] * pj[d];
            sc[j] = (a + b) * c->scale;
            if (sc[j] > mx) mx = sc[j];
        }
        float *o = c->out + (t * nH + h) * R; /* [R] */
        for (int64_t d = 0; d < R; d++) o[d] = 0.0f;
        float den = 0.0f;
        for (int64_t j = 0; j < nk; j++) {
            const float e = expf(sc[j] - mx);
            den += e;
            const float *cj = c->latent + key_slot(c, r, j) * R;
            for (int64_t d = 0; d < R; d++) o[d] += e * cj[d];
        }
        const float inv = nk > 0 ? 1.0f / den : 0.0f;
        for (int64_t d = 0; d < R; d++) o[d] *= inv;
    }
}
