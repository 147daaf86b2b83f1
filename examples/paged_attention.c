/* A paged attention call: two decode requests whose keys and values live in
 * scattered blocks of one paged cache.
 *
 *   1. allocate a block-major cache [blocks, block_size, kv_heads * head_dim]
 *      for keys and one for values;
 *   2. give each request its blocks (a block table row per request) and write
 *      its keys/values with kvc_write_slots (slot = block * block_size + offset);
 *   3. run kvc_attention_cpu for one new query token per request;
 *   4. check the output against a direct float64 softmax(q k^T * scale) v.
 *
 * Uses only the core library (libkvcache_core). Exit status 0 when the
 * kernel's output matches the direct computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache/kvcache.h"

enum { N_BLOCKS = 9, BLOCK_SIZE = 4, KV_HEADS = 2, Q_HEADS = 4, HEAD_DIM = 8, N_REQ = 2, TABLE_W = 3 };
#define ROW (KV_HEADS * HEAD_DIM) /* floats per token in the cache */

static const int64_t kv_len[N_REQ] = {7, 10};
/* block 0 is the null block: never used for data, fills the unused tail */
static const int32_t block_table[N_REQ][TABLE_W] = {{3, 5, 0}, {1, 7, 2}};

static float next_value(uint32_t *seed) /* deterministic values in [-1, 1) */
{
    *seed = *seed * 1664525u + 1013904223u;
    return (float)(*seed >> 8) / 8388608.0f - 1.0f;
}

static int check(kvc_status st, const char *what) {
    if (st >= 0) return 0;
    fprintf(stderr, "%s: %s: %s\n", what, kvc_status_str(st), kvc_last_error());
    return 1;
}

int main(void) {
    static float k_cache[N_BLOCKS * BLOCK_SIZE * ROW], v_cache[N_BLOCKS * BLOCK_SIZE * ROW];
    static float keys[N_REQ][10][ROW], values[N_REQ][10][ROW]; /* [req][token][Nkv * D] */
    static float q[N_REQ][Q_HEADS][HEAD_DIM], out[N_REQ][Q_HEADS][HEAD_DIM];
    uint32_t seed = 42;

    /* 1-2. fill each request's tokens and scatter them into its blocks */
    kvc_tensor kc = {.data = k_cache, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {N_BLOCKS, BLOCK_SIZE, ROW}};
    kvc_tensor vc = kc;
    vc.data = v_cache;
    for (int b = 0; b < N_REQ; b++) {
        int64_t slots[10];
        for (int64_t t = 0; t < kv_len[b]; t++) {
            for (int c = 0; c < ROW; c++) keys[b][t][c] = next_value(&seed), values[b][t][c] = next_value(&seed);
            slots[t] = (int64_t)block_table[b][t / BLOCK_SIZE] * BLOCK_SIZE + t % BLOCK_SIZE;
        }
        kvc_tensor kc4 = {
            .data = k_cache, .dtype = KVC_DTYPE_F32, .ndim = 4, .shape = {N_BLOCKS, BLOCK_SIZE, KV_HEADS, HEAD_DIM}};
        kvc_tensor vc4 = kc4;
        vc4.data = v_cache;
        kvc_tensor ku = {.data = keys[b], .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {kv_len[b], KV_HEADS, HEAD_DIM}};
        kvc_tensor vu = ku;
        vu.data = values[b];
        if (check(kvc_write_slots(&kc4, KVC_BLOCK_BNBSND, &ku, slots, kv_len[b]), "write keys") ||
            check(kvc_write_slots(&vc4, KVC_BLOCK_BNBSND, &vu, slots, kv_len[b]), "write values"))
            return 1;
    }
    for (int b = 0; b < N_REQ; b++)
        for (int h = 0; h < Q_HEADS; h++)
            for (int d = 0; d < HEAD_DIM; d++) q[b][h][d] = next_value(&seed);

    /* 3. one query token per request (packed TND layout, cumulative q_lens) */
    const int64_t q_cu[N_REQ] = {1, 2};
    kvc_attention_params p = kvc_attention_default_params();
    p.layout = KVC_LAYOUT_TND;
    p.num_heads = Q_HEADS;
    p.num_kv_heads = KV_HEADS;
    p.scale = 1.0 / sqrt((double)HEAD_DIM);
    p.sparse_mode = 3; /* causal: the new token sees every earlier key */
    p.batch = N_REQ;
    p.q_lens = q_cu;
    p.kv_lens = kv_len;
    p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.q = (kvc_tensor){.data = q, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {N_REQ, Q_HEADS, HEAD_DIM}};
    p.k = kc;
    p.v = vc;
    p.kv_storage = KVC_KV_BLOCKS;
    p.block_table =
        (kvc_tensor){.data = (void *)block_table, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {N_REQ, TABLE_W}};
    p.block_size = BLOCK_SIZE;
    p.out = (kvc_tensor){.data = out, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {N_REQ, Q_HEADS, HEAD_DIM}};

    size_t ws_bytes = 0;
    void *ws = NULL;
    if (check(kvc_attention_cpu_workspace_size(&p, 1, &ws_bytes), "workspace size") ||
        check(kvc_aligned_alloc(64, ws_bytes, &ws), "workspace"))
        return 1;
    kvc_status st = kvc_attention_cpu(&p, ws, ws_bytes);
    kvc_aligned_free(ws);
    if (check(st, "attention")) return 1;

    /* 4. the same attention computed directly from the unpaged tokens */
    double worst = 0.0;
    for (int b = 0; b < N_REQ; b++)
        for (int h = 0; h < Q_HEADS; h++) {
            const int g = h / (Q_HEADS / KV_HEADS); /* the kv head this query head shares */
            double score[10], top = -INFINITY, sum = 0.0;
            for (int64_t t = 0; t < kv_len[b]; t++) {
                double s = 0.0;
                for (int d = 0; d < HEAD_DIM; d++) s += (double)q[b][h][d] * keys[b][t][g * HEAD_DIM + d];
                score[t] = s * p.scale;
                top = fmax(top, score[t]);
            }
            for (int64_t t = 0; t < kv_len[b]; t++) sum += score[t] = exp(score[t] - top);
            for (int d = 0; d < HEAD_DIM; d++) {
                double o = 0.0;
                for (int64_t t = 0; t < kv_len[b]; t++) o += score[t] / sum * values[b][t][g * HEAD_DIM + d];
                worst = fmax(worst, fabs(o - out[b][h][d]));
            }
        }
    printf("paged attention (%s): %d requests, kv lens %lld and %lld over blocks {3,5} and {1,7,2}; "
           "largest difference from float64: %.2e\n",
           kvc_attention_cpu_isa(), N_REQ, (long long)kv_len[0], (long long)kv_len[1], worst);
    if (!(worst <= 1e-5)) {
        fprintf(stderr, "paged attention differs from the direct computation by %g\n", worst);
        return 1;
    }
    return 0;
}
