/* The absorbed MLA attention over latent caches (mla_latent.c). */
#ifndef KVC_MODEL_MLA_INTERNAL_H
#define KVC_MODEL_MLA_INTERNAL_H

#include "kvcache/batch.h"

typedef struct kvc_latent_call {
    const kvc_step_metadata *md;
    int64_t n_heads, rkv, dr;
    double scale;
    const float *q_lat;        /* [T, nH, rkv] absorbed queries */
    const float *q_pe;         /* rotated query rope lanes, row t head h at t*q_pe_stride + h*q_pe_head_stride */
    int64_t q_pe_stride, q_pe_head_stride;
    const float *latent;       /* [slots, rkv] normalised latent cache */
    const float *rope;         /* [slots, dr] rotated k_pe cache */
    /* paged: block table [n_rows, table_width] over n_blocks blocks of block_size */
    const int32_t *block_table;
    int64_t table_width, block_size, n_blocks;
    /* contiguous: row of each step row, rows of seq_cap positions */
    const int64_t *cache_row;  /* [n_rows] */
    int64_t n_cache_rows, seq_cap;
    int64_t max_kv;            /* scores per thread */
    float *out;                /* [T, nH, rkv] */
} kvc_latent_call;

/* Bounds of every key the call will read (KVC_ERANGE with the row named). */
kvc_status kvc_mla_latent_check(const kvc_latent_call *c);
void kvc_mla_latent_attend(const kvc_latent_call *c, float *scores /* [threads, max_kv] */);

#endif
