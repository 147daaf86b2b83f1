/* From a cache plan to a paged decode loop: everything a serving loop does
 * with the library, on a small two-layer model (4 query heads, 2 KV heads,
 * head dim 16, 4-token blocks, f32 caches).
 *
 *   1. describe each layer's caches and plan the block pools (kvc_plan_blocks:
 *      two requests of up to 16 tokens);
 *   2. allocate the planned cache tensors (kvc_cache_storage_allocate, no
 *      setter: each tensor is read from its entry);
 *   3. admit two prompts (7 and 5 tokens) through the manager
 *      (kvc_manager_allocate_slots) and build the step's metadata
 *      (kvc_step_metadata_build: block tables and slot mappings);
 *   4. per layer, write the step's keys and values at their slots
 *      (kvc_write_slots) and run paged attention (kvc_attention_cpu) for the
 *      prefill, then for three decode steps of one token per request;
 *   5. check every output against a float64 softmax(q k^T * scale) v over the
 *      request's keys kept unpaged, then free the requests.
 *
 * Uses only the core library (libkvcache_core). Exit status 0 when every
 * output matches. The Python version: python/examples/plan_to_paged_decode.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache/kvcache.h"

enum { LAYERS = 2, Q_HEADS = 4, KV_HEADS = 2, HEAD_DIM = 16, BLOCK = 4, MAX_LEN = 16, N_REQ = 2, DECODE_STEPS = 3 };
#define ROW (KV_HEADS * HEAD_DIM) /* floats of one token's keys (or values) in one layer */

static const int64_t prompt_len[N_REQ] = {7, 5};
static const int64_t request_id[N_REQ] = {11, 12};

/* Every key and value so far, unpaged, for the check: [layer][request][position][Nkv * D]. */
static float hist_k[LAYERS][N_REQ][MAX_LEN][ROW], hist_v[LAYERS][N_REQ][MAX_LEN][ROW];

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

/* Largest difference between out[Nq, D] of the query at position pos of request b and a float64
 * softmax over keys 0..pos of the unpaged history. */
static double direct_difference(int layer, int b, int64_t pos, const float *q, const float *out, double scale) {
    double worst = 0.0;
    for (int h = 0; h < Q_HEADS; h++) {
        const int g = h / (Q_HEADS / KV_HEADS); /* the kv head this query head shares */
        double score[MAX_LEN], top = -INFINITY, sum = 0.0;
        for (int64_t t = 0; t <= pos; t++) {
            double s = 0.0;
            for (int d = 0; d < HEAD_DIM; d++) s += (double)q[h * HEAD_DIM + d] * hist_k[layer][b][t][g * HEAD_DIM + d];
            score[t] = s * scale;
            top = fmax(top, score[t]);
        }
        for (int64_t t = 0; t <= pos; t++) sum += score[t] = exp(score[t] - top);
        for (int d = 0; d < HEAD_DIM; d++) {
            double o = 0.0;
            for (int64_t t = 0; t <= pos; t++) o += score[t] / sum * hist_v[layer][b][t][g * HEAD_DIM + d];
            worst = fmax(worst, fabs(o - out[h * HEAD_DIM + d]));
        }
    }
    return worst;
}

/* The row (request) of the step's token t: rows hold [cu_seq_lens_q[b-1], cu_seq_lens_q[b]). */
static int row_of(const kvc_step_metadata *md, int64_t t) {
    int b = 0;
    while (t >= md->cu_seq_lens_q[b]) b++;
    return b;
}

/* One step of one layer: new keys/values and queries for md's tokens, written at the step's slots,
 * attention over the paged caches, the result checked. Returns the largest difference, or -1. */
static double layer_step(int layer, kvc_tensor *k_cache, kvc_tensor *v_cache, const kvc_step_metadata *md,
                         uint32_t *seed) {
    static float k_new[N_REQ * MAX_LEN][ROW], v_new[N_REQ * MAX_LEN][ROW];
    static float q[N_REQ * MAX_LEN][Q_HEADS * HEAD_DIM], out[N_REQ * MAX_LEN][Q_HEADS * HEAD_DIM];
    const kvc_step_key *key = kvc_step_metadata_key(md, "FullAttention");
    for (int64_t t = 0; t < md->n_tokens; t++) {
        const int b = row_of(md, t);
        for (int c = 0; c < ROW; c++) {
            k_new[t][c] = hist_k[layer][b][md->positions[t]][c] = next_value(seed);
            v_new[t][c] = hist_v[layer][b][md->positions[t]][c] = next_value(seed);
        }
        for (int c = 0; c < Q_HEADS * HEAD_DIM; c++) q[t][c] = next_value(seed);
    }
    kvc_tensor ku = {.data = k_new, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {md->n_tokens, KV_HEADS, HEAD_DIM}};
    kvc_tensor vu = ku;
    vu.data = v_new;
    if (check(kvc_write_slots(k_cache, KVC_BLOCK_BNBSND, &ku, key->slot_mapping, md->n_tokens), "write keys") ||
        check(kvc_write_slots(v_cache, KVC_BLOCK_BNBSND, &vu, key->slot_mapping, md->n_tokens), "write values"))
        return -1.0;

    kvc_attention_params p = kvc_attention_default_params();
    p.layout = KVC_LAYOUT_TND; /* the step's tokens packed: q [T, Nq, D] */
    p.num_heads = Q_HEADS;
    p.num_kv_heads = KV_HEADS;
    p.scale = 1.0 / sqrt((double)HEAD_DIM);
    p.sparse_mode = 3; /* causal: a token sees every earlier key of its request and itself */
    p.batch = md->n_rows;
    p.q_lens = md->cu_seq_lens_q; /* cumulative, as the packed layout wants */
    p.kv_lens = md->seq_lens_kv;  /* direct: keys each request has after this step */
    p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.q = (kvc_tensor){.data = q, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {md->n_tokens, Q_HEADS, HEAD_DIM}};
    p.k = *k_cache;
    p.v = *v_cache;
    p.kv_storage = KVC_KV_BLOCKS;
    p.block_table =
        (kvc_tensor){.data = key->block_table, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {md->n_rows, key->width}};
    p.block_size = BLOCK;
    p.out = (kvc_tensor){.data = out, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {md->n_tokens, Q_HEADS, HEAD_DIM}};
    size_t ws_bytes = 0;
    void *ws = NULL;
    if (check(kvc_attention_cpu_workspace_size(&p, 1, &ws_bytes), "workspace size") ||
        check(kvc_aligned_alloc(64, ws_bytes, &ws), "workspace"))
        return -1.0;
    kvc_status st = kvc_attention_cpu(&p, ws, ws_bytes);
    kvc_aligned_free(ws);
    if (check(st, "attention")) return -1.0;

    double worst = 0.0;
    for (int64_t t = 0; t < md->n_tokens; t++) {
        worst = fmax(worst, direct_difference(layer, row_of(md, t), md->positions[t], q[t], out[t], p.scale));
    }
    return worst;
}

int main(void) {
    /* 1. the caches of each layer (keys and values, one manager key: FullAttention) and the plan */
    kvc_cache_entry entries[LAYERS][2];
    kvc_layer_cache_info layers[LAYERS];
    for (int l = 0; l < LAYERS; l++) {
        for (int c = 0; c < 2; c++) {
            kvc_cache_entry e = kvc_cache_entry_default();
            snprintf(e.name, sizeof e.name, "%s", c == 0 ? "k_cache" : "v_cache");
            e.num_head = KV_HEADS;
            e.n_dims = 1;
            e.dim[0] = HEAD_DIM;
            e.dtype = KVC_DTYPE_F32;
            e.block_size = BLOCK;
            entries[l][c] = e;
        }
        layers[l] = (kvc_layer_cache_info){.layer_idx = l, .n_caches = 2, .caches = entries[l]};
    }
    kvc_model_cache_info ci = {.num_layers = LAYERS, .n_layer_infos = LAYERS, .layer_infos = layers};
    kvc_plan_params pp = kvc_plan_default_params();
    pp.mode = KVC_PLAN_OFFLINE;
    pp.max_len = MAX_LEN;
    pp.max_concurrency = N_REQ;
    kvc_block_plan plan;
    if (check(kvc_plan_blocks(&pp, &ci, &plan), "plan")) return 1;

    /* 2. the cache tensors the plan asks for: [blocks, block_size, kv heads, head dim] each */
    kvc_cache_storage *storage = NULL;
    const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    if (check(kvc_cache_storage_allocate(&ci, &plan, &sp, &storage), "storage")) return 1;
    printf("plan: %lld blocks of %d tokens per cache, %d layers x (K, V): %lld bytes\n",
           (long long)entries[0][0].tensor.shape[0], BLOCK, LAYERS, (long long)kvc_cache_storage_bytes(storage));

    /* 3. the manager and the step's metadata buffers */
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = MAX_LEN;
    kvc_manager *m = NULL;
    kvc_step_buffers *buf = NULL;
    int failed = check(kvc_manager_create(&ci, &plan, &mp, &m), "manager") ||
                 check(kvc_step_buffers_create(m, N_REQ, N_REQ * MAX_LEN, &buf), "step buffers");
    kvc_step_request rows[N_REQ];
    for (int b = 0; b < N_REQ; b++)
        rows[b] =
            (kvc_step_request){.request_id = request_id[b], .computed_tokens = 0, .num_new_tokens = prompt_len[b]};

    /* 4-5. the prefill, then three decode steps */
    uint32_t seed = 7;
    double worst = 0.0;
    for (int step = 0; step <= DECODE_STEPS && !failed; step++) {
        for (int b = 0; b < N_REQ && !failed; b++) {
            kvc_slot_request req = {.request_id = rows[b].request_id,
                                    .computed_tokens = rows[b].computed_tokens,
                                    .num_new_tokens = rows[b].num_new_tokens};
            failed = check(kvc_manager_allocate_slots(m, &req), "allocate_slots");
        }
        kvc_step_metadata md;
        failed = failed || check(kvc_step_metadata_build(buf, rows, N_REQ, step == 0, &md), "step metadata");
        for (int l = 0; l < LAYERS && !failed; l++) {
            double d = layer_step(l, &entries[l][0].tensor, &entries[l][1].tensor, &md, &seed);
            failed = !(d >= 0.0);
            worst = fmax(worst, d);
        }
        if (!failed) {
            const kvc_step_key *key = kvc_step_metadata_key(&md, "FullAttention");
            printf("%-8s %lld tokens; request %lld: %lld keys in blocks", step == 0 ? "prefill" : "decode",
                   (long long)md.n_tokens, (long long)request_id[0], (long long)md.seq_lens_kv[0]);
            for (int64_t j = 0; j * BLOCK < md.seq_lens_kv[0]; j++) printf(" %d", key->block_table[j]);
            printf("; request %lld: %lld keys in blocks", (long long)request_id[1], (long long)md.seq_lens_kv[1]);
            for (int64_t j = 0; j * BLOCK < md.seq_lens_kv[1]; j++) printf(" %d", key->block_table[key->width + j]);
            printf("\n");
        }
        for (int b = 0; b < N_REQ; b++) { /* the next step decodes one token per request */
            rows[b].computed_tokens += rows[b].num_new_tokens;
            rows[b].num_new_tokens = 1;
        }
    }
    for (int b = 0; b < N_REQ && m != NULL; b++) failed = check(kvc_manager_free(m, request_id[b]), "free") || failed;
    kvc_step_buffers_destroy(buf);
    kvc_manager_destroy(m);
    kvc_cache_storage_destroy(storage);
    if (failed) return 1;
    printf("paged attention (%s), %d layers, prefill + %d decode steps: largest difference from float64 %.2e\n",
           kvc_attention_cpu_isa(), LAYERS, DECODE_STEPS, worst);
    if (!(worst <= 1e-5)) {
        fprintf(stderr, "paged attention differs from the direct computation by %g\n", worst);
        return 1;
    }
    return 0;
}
