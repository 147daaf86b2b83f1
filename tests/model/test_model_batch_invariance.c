/* Batch invariance to the last bit (DESIGN "Numerics and determinism"):
 * requests with fixed token sequences run alone (one prefill, then one
 * token per step, one thread) and then together under a random schedule:
 * random batch sizes and row orders, prefill in random chunks mixed with
 * decode rows, 1 or 2 threads per step, and preemptions that drop a
 * request's cache and recompute it from position 0. Every token's logits
 * must be memcmp-equal to its logits alone, for every family, for
 * contiguous, paged and MLA latent caches and for f32, f16, bf16, int8 and
 * fp8 caches. The count of random steps is fixed (no wall-clock budget). */
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

#include "kvc_test_util.h"
#include "kvcache/kvcache.h"
#include "model/gemm_bf16.h"
#include "model/gemm_quant.h"
#include "model/model_internal.h"

#define NREQ      5
#define SMAX      32 /* positions per request */
#define BS        4  /* block size of paged caches */
#define MAX_CHUNK 7

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

static uint64_t rs;
static int64_t rnd(int64_t n) /* uniform in [0, n) */
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (int64_t)(rs % (uint64_t)n);
}

typedef struct harness {
    const kvc_model *m;
    const kvc_model_config *c;
    kvc_model_workspace *ws;
    kvc_model_caches caches;
    void *mem;
    int64_t V;
    int32_t table[NREQ * (SMAX / BS)]; /* per step row: [rows, SMAX / BS] */
    int32_t state_table[NREQ];         /* per step row: its conv state block (LFM2), its request's */
    int64_t slots[NREQ * SMAX];
    int64_t cache_rows[NREQ];
    int32_t ids[NREQ * SMAX];
    int64_t positions[NREQ * SMAX], kv_pos[NREQ], lq[NREQ], lkv[NREQ], cq[NREQ], ckv[NREQ];
    kvc_step_metadata md;
    float *logits; /* [NREQ * SMAX, V] */
} harness;

static void caches_init(harness *h, kvc_model_cache_kind kind, bool latent, kvc_dtype dt) {
    const kvc_model_config *c = h->c;
    int64_t d[4];
    if (latent)
        d[0] = 1, d[1] = c->kv_lora_rank, d[2] = 1, d[3] = c->qk_rope_head_dim;
    else if (c->family == KVC_FAMILY_DEEPSEEK_V3)
        d[0] = d[2] = c->num_heads, d[1] = c->qk_nope_head_dim + c->qk_rope_head_dim, d[3] = c->v_head_dim;
    else
        d[0] = d[2] = c->num_kv_heads, d[1] = d[3] = c->head_dim;
    const int64_t ns = kvc_model_kv_quantised(dt) ? (latent ? 1 : 2) : 0; /* per-slot scale tensors */
    const int64_t L = c->num_layers;
    const size_t es = kvc_dtype_size(dt);
    size_t state = 0; /* the largest state layer's states, NREQ of each (LFM2, Mamba2) */
    kvci_state_shape ss[KVCI_MAX_LAYER_STATES];
    for (int64_t l = 0; l < c->num_layers; l++) {
        size_t n = 0;
        for (int32_t i = 0, k = kvci_layer_states(c, l, ss); i < k; i++)
            n += (size_t)(NREQ * kvci_layer_state_floats(&ss[i])) * 4;
        state = n > state ? n : state;
    }
    const int64_t di = c->index_topk > 0 ? c->index_head_dim : 0; /* DeepSeek sparse attention's f32 keys */
    const size_t per_layer =
        (size_t)(NREQ * SMAX * (d[0] * d[1] + d[2] * d[3])) * es + (size_t)(NREQ * SMAX * (ns + di)) * 4 + state;
    h->mem = calloc((size_t)L, per_layer);
    h->caches.layers = calloc((size_t)L, sizeof(kvc_layer_cache));
    assert_non_null(h->mem);
    assert_non_null(h->caches.layers);
    h->caches.kind = kind, h->caches.latent = latent, h->caches.block_size = kind == KVC_MCACHE_PAGED ? BS : 0;
    h->caches.n_layers = (int32_t)L;
    char *cur = h->mem;
    for (int64_t l = 0; l < L; l++) {
        kvc_layer_cache *lc = &h->caches.layers[l];
        kvc_tensor *t[2] = {&lc->k, &lc->v};
        for (int i = 0; i < 2; i++) {
            t[i]->data = cur, t[i]->dtype = dt;
            if (kind == KVC_MCACHE_PAGED) {
                t[i]->ndim = 4;
                t[i]->shape[0] = NREQ * SMAX / BS, t[i]->shape[1] = BS, t[i]->shape[2] = d[2 * i],
                t[i]->shape[3] = d[2 * i + 1];
            } else {
                t[i]->ndim = 3;
                t[i]->shape[0] = NREQ, t[i]->shape[1] = SMAX, t[i]->shape[2] = d[2 * i] * d[2 * i + 1];
            }
            cur += (size_t)(NREQ * SMAX * d[2 * i] * d[2 * i + 1]) * es;
        }
        kvc_tensor *sc[2] = {&lc->k_scales, &lc->v_scales};
        for (int64_t i = 0; i < ns; i++) { /* one f32 per slot: [NB, bs] or [rows, S_max] */
            *sc[i] = (kvc_tensor){.data = cur, .dtype = KVC_DTYPE_F32, .ndim = 2};
            sc[i]->shape[0] = t[0]->shape[0], sc[i]->shape[1] = t[0]->shape[1];
            cur += (size_t)(NREQ * SMAX) * 4;
        }
        if (di > 0) { /* shaped as the latent cache: [NB, bs, 1, Di] or [rows, S_max, Di] */
            lc->index_k = (kvc_tensor){.data = cur, .dtype = KVC_DTYPE_F32, .ndim = t[0]->ndim};
            lc->index_k.shape[0] = t[0]->shape[0], lc->index_k.shape[1] = t[0]->shape[1];
            lc->index_k.shape[2] = kind == KVC_MCACHE_PAGED ? 1 : di, lc->index_k.shape[3] = di;
            cur += (size_t)(NREQ * SMAX * di) * 4;
        }
        snprintf(lc->key, sizeof lc->key, "%s",
                 kvc_attn_type_name(c->layer_sliding[l] ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_FULL));
        char *st = cur; /* a state layer's states per request: [NREQ, shape], a row or a block of the state key each */
        for (int32_t i = 0, k = kvci_layer_states(c, l, ss); i < k; i++) {
            kvc_tensor *slot = kvci_layer_state_slot(lc, i);
            *slot = (kvc_tensor){.data = st, .dtype = KVC_DTYPE_F32, .ndim = 1 + ss[i].ndim, .shape = {NREQ}};
            for (int32_t j = 0; j < ss[i].ndim; j++) slot->shape[1 + j] = ss[i].shape[j];
            st += (size_t)(NREQ * kvci_layer_state_floats(&ss[i])) * 4;
            /* Falcon-H1's layers and Zamba2's hybrid ones keep their K/V under key, their states under state_key */
            char *key = c->mamba_parallel_attn || c->layer_shared_block[l] ? lc->state_key : lc->key;
            snprintf(key, KVC_NAME_MAX, "%s", kvc_attn_type_name(KVC_ATTN_MAMBA));
        }
        cur += state;
    }
}

/* One step: rows (request req[b], its tokens from first[b], n[b] of them), all logits. */
static void run_step(harness *h, const int32_t *seqs, int64_t nrows, const int64_t *req, const int64_t *first,
                     const int64_t *n) {
    kvc_step_rows rows = {.max_rows = NREQ,
                          .max_tokens = NREQ * SMAX,
                          .positions = h->positions,
                          .kv_pos = h->kv_pos,
                          .seq_lens_q = h->lq,
                          .seq_lens_kv = h->lkv,
                          .cu_seq_lens_q = h->cq,
                          .cu_seq_lens_kv = h->ckv};
    bool prefill = true;
    for (int64_t b = 0; b < nrows; b++) prefill = prefill && first[b] == 0;
    check(kvc_step_rows_begin(&rows, prefill), "rows_begin");
    int64_t t = 0;
    const int64_t bps = SMAX / BS;
    for (int64_t b = 0; b < nrows; b++) {
        const kvc_step_request r = {.request_id = req[b], .computed_tokens = first[b], .num_new_tokens = n[b]};
        check(kvc_step_rows_add(&rows, &r, 1), "rows_add");
        h->cache_rows[b] = req[b];
        h->state_table[b] = (int32_t)req[b];
        for (int64_t i = 0; i < bps; i++) h->table[b * bps + i] = (int32_t)(req[b] * bps + i);
        for (int64_t i = 0; i < n[b]; i++, t++) {
            const int64_t pos = first[b] + i;
            h->ids[t] = seqs[req[b] * SMAX + pos];
            h->slots[t] = (req[b] * bps + pos / BS) * BS + pos % BS;
        }
    }
    check(kvc_step_rows_to_metadata(&rows, &h->md), "to_metadata");
    if (h->caches.kind == KVC_MCACHE_PAGED)
        for (int i = 0; i < 2; i++) {
            kvc_step_key *k = &h->md.keys[h->md.n_keys++];
            k->attn_type = i ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_FULL;
            k->key = kvc_attn_type_name(k->attn_type);
            k->block_size = BS, k->width = bps, k->block_table = h->table, k->slot_mapping = h->slots;
        }
    if (h->caches.kind == KVC_MCACHE_PAGED && kvci_model_first_state(h->c) >= 0) /* the states: a block each */
        h->md.keys[h->md.n_keys++] = (kvc_step_key){.key = kvc_attn_type_name(KVC_ATTN_MAMBA),
                                                    .attn_type = KVC_ATTN_MAMBA,
                                                    .block_size = BS,
                                                    .width = 1,
                                                    .block_table = h->state_table};
    kvc_forward_args a = {.token_ids = h->ids,
                          .md = &h->md,
                          .caches = &h->caches,
                          .cache_rows = h->cache_rows,
                          .all_logits = true,
                          .logits = h->logits};
    static bool shared_state_tried; /* once: two rows on one state block (docs/batch.md), refused before any write */
    if (h->md.n_keys > 2 && nrows >= 2 && h->state_table[1] != KVC_NULL_BLOCK && !shared_state_tried) {
        const int32_t own = h->state_table[0];
        h->state_table[0] = h->state_table[1];
        assert_int_equal(kvc_model_forward(h->m, h->ws, &a), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), "two step rows have state block"));
        h->state_table[0] = own;
        shared_state_tried = true;
    }
    check(kvc_model_forward(h->m, h->ws, &a), "forward");
}

/* The dtype of the GEMM operands of the random models (bf16: packed, on the kernel forced). */
static kvc_wmat_dtype weights = KVC_WMAT_F32;

/* Rounds per family and a scheduled row's chance of being preempted first (1 in PREEMPT_ONE_IN): four rounds,
 * two under AddressSanitizer (its build runs the same code paths ten times slower) with preemptions more often,
 * so that the preemption assertion of run_family holds for every family's seeds in both builds. */
#ifdef KVC_TEST_ASAN
#define ROUNDS         2
#define PREEMPT_ONE_IN 8
#else
#define ROUNDS         4
#define PREEMPT_ONE_IN 25
#endif

/* One round: new random sequences and schedule; adds its preemptions and
 * mixed prefill/decode steps to the counters. */
static void run_round(const char *json, kvc_model_cache_kind kind, bool latent, kvc_dtype dt, uint64_t seed,
                      int64_t *preempts, int64_t *mixed) {
    kvc_model_config cfg;
    check(kvc_model_config_parse(json, "test config", &cfg), "config");
    kvc_model *m = NULL;
    check(kvci_model_create_random_as(&cfg, seed, weights, &m), "model");
    harness h = {.m = m, .c = kvc_model_config_of(m), .V = cfg.vocab_size};
    check(kvc_model_workspace_create(m, NREQ * SMAX, NREQ, SMAX, &h.ws), "workspace");
    caches_init(&h, kind, latent, dt);
    h.logits = malloc((size_t)(NREQ * SMAX * h.V) * sizeof(float));
    float *ref = malloc((size_t)(NREQ * SMAX * h.V) * sizeof(float)); /* [NREQ, SMAX, V] */
    assert_non_null(h.logits);
    assert_non_null(ref);
    rs = seed * 2654435761u + 1;
    int32_t seqs[NREQ * SMAX];
    int64_t len[NREQ], prompt[NREQ];
    for (int64_t r = 0; r < NREQ; r++) {
        len[r] = 8 + rnd(SMAX - 8 + 1), prompt[r] = 1 + rnd(len[r] - 1);
        for (int64_t i = 0; i < SMAX; i++) seqs[r * SMAX + i] = (int32_t)rnd(h.V);
    }
    /* alone: prompt in one step, then one token per step, one thread */
    omp_set_num_threads(1);
    for (int64_t r = 0; r < NREQ; r++)
        for (int64_t p = 0; p < len[r];) {
            const int64_t n = p == 0 ? prompt[r] : 1;
            run_step(&h, seqs, 1, &r, &p, &n);
            memcpy(ref + (r * SMAX + p) * h.V, h.logits, (size_t)(n * h.V) * sizeof(float));
            p += n;
        }
    /* together: random rows, chunks, threads and preemptions */
    int64_t done[NREQ] = {0}, n_steps = 0, n_preempt = 0, n_mixed = 0;
    for (;;) {
        int64_t live[NREQ], nl = 0;
        for (int64_t r = 0; r < NREQ; r++)
            if (done[r] < len[r]) live[nl++] = r;
        if (nl == 0) break;
        for (int64_t i = nl - 1; i > 0; i--) { /* random row order */
            const int64_t j = rnd(i + 1), x = live[i];
            live[i] = live[j], live[j] = x;
        }
        const int64_t nrows = 1 + rnd(nl);
        int64_t first[NREQ], n[NREQ];
        bool any_prefill = false, any_decode = false;
        for (int64_t b = 0; b < nrows; b++) {
            const int64_t r = live[b];
            if (done[r] > 0 && rnd(PREEMPT_ONE_IN) == 0)
                done[r] = 0, n_preempt++; /* preempted: recompute from position 0 */
            first[b] = done[r];
            const int64_t left = len[r] - done[r];
            n[b] = 1 + rnd(left < MAX_CHUNK ? left : MAX_CHUNK);
            any_prefill |= n[b] > 1, any_decode |= n[b] == 1 && done[r] > 0;
        }
        n_mixed += any_prefill && any_decode;
        omp_set_num_threads(1 + (int)rnd(2));
        run_step(&h, seqs, nrows, live, first, n);
        int64_t t = 0;
        for (int64_t b = 0; b < nrows; b++) {
            const int64_t r = live[b];
            for (int64_t i = 0; i < n[b]; i++, t++)
                if (memcmp(h.logits + t * h.V, ref + (r * SMAX + first[b] + i) * h.V, (size_t)h.V * sizeof(float)) != 0)
                    fail_msg("%s: step %lld, request %lld position %lld (row %lld of %lld, chunk %lld): logits differ "
                             "from the request alone",
                             cfg.model_type, (long long)n_steps, (long long)r, (long long)(first[b] + i), (long long)b,
                             (long long)nrows, (long long)n[b]);
            done[r] = first[b] + n[b];
        }
        n_steps++;
    }
    omp_set_num_threads(2);
    assert_true(n_steps >= NREQ);
    *preempts += n_preempt, *mixed += n_mixed;
    free(ref), free(h.logits), free(h.mem), free(h.caches.layers);
    kvc_model_workspace_destroy(h.ws);
    kvc_model_destroy(m);
}

static void run_family(const char *json, kvc_model_cache_kind kind, bool latent, kvc_dtype dt, uint64_t seed) {
    int64_t preempts = 0, mixed = 0;
    for (uint64_t r = 0; r < ROUNDS; r++) run_round(json, kind, latent, dt, seed * 100 + r, &preempts, &mixed);
    /* the schedules are fixed by the seeds: they must have exercised both */
    assert_true(preempts > 0);
    assert_true(mixed > 0);
}

#define QWEN3                                                                                                          \
    "{\"model_type\":\"qwen3\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                         \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":512}"
#define GPT_OSS                                                                                                        \
    "{\"model_type\":\"gpt_oss\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":32,"                       \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"sliding_window\":5,\"num_local_experts\":4,\"num_experts_per_tok\":2,\"rms_norm_eps\":1e-5,"                    \
    "\"layer_types\":[\"sliding_attention\",\"full_attention\"],\"rope_theta\":150000,"                                \
    "\"max_position_embeddings\":4096}"
#define DEEPSEEK                                                                                                       \
    "{\"model_type\":\"deepseek_v3\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                   \
    "\"moe_intermediate_size\":32,\"num_hidden_layers\":2,\"first_k_dense_replace\":1,"                                \
    "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"q_lora_rank\":32,\"kv_lora_rank\":24,"                      \
    "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":12,\"n_routed_experts\":8,"                         \
    "\"n_group\":2,\"topk_group\":1,\"num_experts_per_tok\":2,\"n_shared_experts\":1,"                                 \
    "\"routed_scaling_factor\":2.5,\"rope_theta\":10000,\"max_position_embeddings\":4096}"
/* GLM-5: DeepSeek sparse attention choosing 3 keys per query (positions up to 31), layer 1 sharing layer 0's choice */
#define GLM_DSA                                                                                                        \
    "{\"model_type\":\"glm_moe_dsa\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                   \
    "\"moe_intermediate_size\":32,\"num_hidden_layers\":2,\"mlp_layer_types\":[\"dense\",\"sparse\"],"                 \
    "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"q_lora_rank\":32,\"kv_lora_rank\":24,"                      \
    "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":12,\"n_routed_experts\":8,"                         \
    "\"n_group\":2,\"topk_group\":1,\"num_experts_per_tok\":2,\"n_shared_experts\":1,\"index_topk\":3,"                \
    "\"index_head_dim\":16,\"index_n_heads\":4,\"indexer_types\":[\"full\",\"shared\"],"                               \
    "\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":10000},\"max_position_embeddings\":4096}"

/* the softmax-routed MoE families: a dense layer then 8 experts (qwen3_moe, not renormalised); a sliding
 * window, experts renormalised (mixtral); a dense then a MoE layer with a gated shared expert (qwen2_moe) */
#define QWEN3_MOE                                                                                                      \
    "{\"model_type\":\"qwen3_moe\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                     \
    "\"moe_intermediate_size\":32,\"num_hidden_layers\":2,\"mlp_only_layers\":[0],\"num_experts\":8,"                  \
    "\"num_experts_per_tok\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                   \
    "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":512}"
#define MIXTRAL                                                                                                        \
    "{\"model_type\":\"mixtral\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":32,"                       \
    "\"num_hidden_layers\":2,\"num_local_experts\":4,\"num_experts_per_tok\":2,\"num_attention_heads\":4,"             \
    "\"num_key_value_heads\":2,\"head_dim\":16,\"sliding_window\":5,\"rope_theta\":1000000,"                           \
    "\"rms_norm_eps\":1e-5,\"max_position_embeddings\":4096}"

#define QWEN2_MOE                                                                                                      \
    "{\"model_type\":\"qwen2_moe\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                     \
    "\"moe_intermediate_size\":32,\"shared_expert_intermediate_size\":48,\"num_hidden_layers\":2,"                     \
    "\"decoder_sparse_step\":2,\"num_experts\":8,\"num_experts_per_tok\":2,\"num_attention_heads\":4,"                 \
    "\"num_key_value_heads\":2,\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":512}"

/* Gemma 3: sliding_window_pattern 3 (two sliding layers, then a full one), a window of 5, the sliding
 * layers' rope at rope_local_base_freq and the full ones' linear rope (rope_scaling, as the hub's 4B
 * configs), query_pre_attn_scalar, GeGLU, the sandwich norms and the scaled tied embeddings */
#define GEMMA3                                                                                                         \
    "{\"model_type\":\"gemma3_text\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                   \
    "\"num_hidden_layers\":3,\"sliding_window_pattern\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2,"        \
    "\"head_dim\":16,\"query_pre_attn_scalar\":24,\"sliding_window\":5,\"rope_theta\":1000000,"                        \
    "\"rope_local_base_freq\":10000,\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":8},"                         \
    "\"rms_norm_eps\":1e-6,\"max_position_embeddings\":4096}"

/* Gemma 2: sliding (even) and full (odd) layers, a window of 5, one rope, query_pre_attn_scalar, the
 * sandwich norms, and both soft-caps low enough to bend what they cap (scores and logits of random weights) */
#define GEMMA2                                                                                                         \
    "{\"model_type\":\"gemma2\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"query_pre_attn_scalar\":24,\"sliding_window\":5,\"rope_theta\":10000,\"attn_logit_softcapping\":0.5,"           \
    "\"final_logit_softcapping\":2,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":4096}"
/* GLM-4: the sandwich norms, the fused gate_up_proj, q/k/v biases, half of each head rotated in pairs (GLM:
 * the same without the sandwich norms);
 * Cohere: LayerNorms, parallel blocks, per-head q/k LayerNorms, pairwise RoPE, the logit scale;
 * Cohere 2: its blocks with two sliding layers (window 5) and an unrotated full one */
#define GLM4                                                                                                           \
    "{\"model_type\":\"glm4\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                          \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"max_position_embeddings\":512}"
#define GLM                                                                                                            \
    "{\"model_type\":\"glm\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                           \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"max_position_embeddings\":512}"
/* Seed-OSS: biases on q/k/v, o (attention_out_bias) and the MLP */
#define SEED_OSS                                                                                                       \
    "{\"model_type\":\"seed_oss\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                      \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"attention_out_bias\":true,\"mlp_bias\":true,\"max_position_embeddings\":512}"
/* EXAONE 4.0: post-norms, q/k norms per head, two sliding layers (window 5) and an unrotated full one */
#define EXAONE4                                                                                                        \
    "{\"model_type\":\"exaone4\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                       \
    "\"num_hidden_layers\":3,\"sliding_window_pattern\":3,\"sliding_window\":5,\"num_attention_heads\":4,"             \
    "\"num_key_value_heads\":2,\"max_position_embeddings\":512}"
/* StarCoder2: LayerNorms with bias, the plain MLP, every bias, every layer sliding (window 5) */
#define STARCODER2                                                                                                     \
    "{\"model_type\":\"starcoder2\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                    \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"sliding_window\":5,"                \
    "\"max_position_embeddings\":512}"
/* Ministral: layer_types full, sliding (window 5) */
#define MINISTRAL                                                                                                      \
    "{\"model_type\":\"ministral\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                     \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,\"sliding_window\":"  \
    "5,"                                                                                                               \
    "\"layer_types\":[\"full_attention\",\"sliding_attention\"],\"max_position_embeddings\":512}"
/* Ministral 3: YaRN and the query scale by position (beta 0.5 per 4 positions), every layer sliding (window 5) */
#define MINISTRAL3                                                                                                     \
    "{\"model_type\":\"ministral3\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                    \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,\"sliding_window\":"  \
    "5,"                                                                                                               \
    "\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":10000,\"factor\":4,\"original_max_position_"           \
    "embeddings\":4,"                                                                                                  \
    "\"llama_4_scaling_beta\":0.5},\"max_position_embeddings\":512}"
#define COHERE                                                                                                         \
    "{\"model_type\":\"cohere\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"use_qk_norm\":true,"                \
    "\"attention_bias\":true,\"max_position_embeddings\":512}"
#define COHERE2                                                                                                        \
    "{\"model_type\":\"cohere2\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                       \
    "\"num_hidden_layers\":3,\"sliding_window_pattern\":3,\"sliding_window\":5,\"num_attention_heads\":4,"             \
    "\"num_key_value_heads\":2,\"max_position_embeddings\":512}"
/* Llama 4: chunked local attention of 5 positions on the RoPE layers (0 and 2), a NoPE layer (1) with the query
 * scale from position 3 on (floor_scale 4), L2 q/k norms, the sigmoid top-2 MoE on layers 1 and 2 (3 experts
 * and the shared one), the dense MLP on layer 0 */
#define LLAMA4                                                                                                         \
    "{\"model_type\":\"llama4_text\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":32,"                   \
    "\"intermediate_size_mlp\":96,\"num_hidden_layers\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2,"        \
    "\"head_dim\":16,\"attention_chunk_size\":5,\"no_rope_layers\":[1,0,1],\"moe_layers\":[1,2],"                      \
    "\"num_local_experts\":3,\"num_experts_per_tok\":2,\"floor_scale\":4,\"attn_scale\":0.5,"                          \
    "\"max_position_embeddings\":512}"

/* LFM2: short convolutions (kernel 3, biases) on layers 0 and 2 around a GQA layer with q/k norms: chunked
 * prefill continues from the stored conv state, a preempted request restarts it from zeros, and rows never share
 * one */
#define LFM2                                                                                                           \
    "{\"model_type\":\"lfm2\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                          \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"conv_L_cache\":3,"                  \
    "\"conv_bias\":true,\"layer_types\":[\"conv\",\"full_attention\",\"conv\"],\"max_position_embeddings\":512}"

/* LFM3: short convolutions (kernel 4) on layers 0 and 2, a full layer (proportional rope) and a sliding one (window 5)
 * with the gate per head, sandwich norms: the conv states and the window's keys under chunked prefill and batching */
#define LFM3                                                                                                           \
    "{\"model_type\":\"lfm3\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                          \
    "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,\"conv_L_cache\":4,"  \
    "\"sliding_window\":5,\"layer_types\":[\"conv\",\"full_attention\",\"conv\",\"sliding_attention\"],"               \
    "\"max_position_embeddings\":512}"

/* Qwen3-Next: Gated DeltaNet (2 key heads, 4 value heads, kernel 4) on layers 0 and 2 around a gated GQA layer, the
 * MoE with a shared expert: chunked prefill continues from the stored conv and recurrent states, a preempted request
 * restarts them from zeros, and rows never share one */
#define QWEN3_NEXT                                                                                                     \
    "{\"model_type\":\"qwen3_next\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                    \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"linear_num_key_heads\":2,\"linear_num_value_heads\":4,\"linear_key_head_dim\":16,"                              \
    "\"linear_value_head_dim\":12,\"num_experts\":4,\"num_experts_per_tok\":2,\"moe_intermediate_size\":32,"           \
    "\"shared_expert_intermediate_size\":32,"                                                                          \
    "\"layer_types\":[\"linear_attention\",\"full_attention\",\"linear_attention\"],\"max_position_embeddings\":512}"

/* Bamba: Mamba2 mixers (4 heads of 32, 2 groups of state 8, kernel 3 with biases) on layers 0 and 2 around a GQA
 * layer: chunked prefill continues from the stored conv and ssm states, a preempted request restarts them from
 * zeros, and rows never share one */
#define BAMBA                                                                                                          \
    "{\"model_type\":\"bamba\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                         \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"attn_layer_indices\":[1],"          \
    "\"mamba_n_heads\":4,\"mamba_n_groups\":2,\"mamba_d_state\":8,\"mamba_d_conv\":3,\"mamba_proj_bias\":true,"        \
    "\"max_position_embeddings\":512}"

/* Nemotron-H with experts: a Mamba2 mixer, attention, then 8 ungated relu2 experts (top 2 of the best of 2 groups)
 * in a latent width of 48 beside the shared MLP: a token's experts, gathered with other rows', give what it gets
 * alone */
#define NEMOTRON_H_MOE                                                                                                 \
    "{\"model_type\":\"nemotron_h\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                    \
    "\"hybrid_override_pattern\":\"M*E\",\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"         \
    "\"mamba_num_heads\":4,\"mamba_head_dim\":32,\"n_groups\":2,\"ssm_state_size\":8,\"conv_kernel\":3,"               \
    "\"n_routed_experts\":8,\"moe_intermediate_size\":32,\"moe_shared_expert_intermediate_size\":32,"                  \
    "\"n_group\":2,\"moe_latent_size\":48,\"max_position_embeddings\":512}"

/* Falcon-H1: in both layers a Mamba2 mixer (mamba_d_ssm 64: 4 heads of 16) beside GQA attention, the K/V under one
 * manager key and the states under another: preempted and resumed rows restart both, batched rows share neither */
#define FALCON_H1                                                                                                      \
    "{\"model_type\":\"falcon_h1\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":96,"                     \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"mamba_d_ssm\":64,\"mamba_n_heads\":4,\"mamba_n_groups\":2,\"mamba_d_state\":8,\"mamba_d_conv\":3,"              \
    "\"mamba_rms_norm\":true,\"key_multiplier\":0.5,\"max_position_embeddings\":512}"

/* FalconMamba: Mamba-1 mixers (128 channels, state 8, kernel 3, projection biases, dt / B / C normed) in both
 * layers: as Bamba's, the conv and ssm states carried over chunks, restarted on preemption, never shared */
#define FALCON_MAMBA                                                                                                   \
    "{\"model_type\":\"falcon_mamba\",\"vocab_size\":96,\"hidden_size\":64,\"num_hidden_layers\":2,"                   \
    "\"state_size\":8,\"conv_kernel\":3,\"use_bias\":true,\"max_position_embeddings\":512}"

/* Zamba2: Mamba2 mixers (4 heads of 32, state 8, kernel 3) in all three layers, layers 1 and 2 hybrid (the shared
 * block over [h | embeddings] with q/k/v adapters and RoPE, its K/V per use site): the states as Bamba's, each
 * site's K/V as attention's */
#define ZAMBA2                                                                                                         \
    "{\"model_type\":\"zamba2\",\"vocab_size\":96,\"hidden_size\":64,\"num_hidden_layers\":3,"                         \
    "\"num_attention_heads\":4,\"layers_block_type\":[\"mamba\",\"hybrid\",\"hybrid\"],\"n_mamba_heads\":4,"           \
    "\"mamba_d_state\":8,\"mamba_d_conv\":3,\"intermediate_size\":32,\"adapter_rank\":4,"                              \
    "\"use_shared_attention_adapter\":true,\"use_mem_rope\":true,\"max_position_embeddings\":512}"

/* Jamba: Mamba-1 mixers (weighted dt / B / C norms) on layers 0 and 2 around a GQA layer without positions, 4
 * softmax-routed experts on layer 1 */
#define JAMBA                                                                                                          \
    "{\"model_type\":\"jamba\",\"vocab_size\":96,\"hidden_size\":64,\"intermediate_size\":32,"                         \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"attn_layer_period\":3,"             \
    "\"attn_layer_offset\":1,\"num_experts\":4,\"mamba_d_state\":8,\"mamba_d_conv\":3,\"max_position_embeddings\":"    \
    "512}"

/* Wider than one k chunk of the AMX kernel (128) in every GEMM, so that steps of up to 35 tokens run
 * the M <= 16 path, the 16-row tiles and the k-blocked accumulation against the requests alone. */
#define QWEN3_WIDE                                                                                                     \
    "{\"model_type\":\"qwen3\",\"vocab_size\":96,\"hidden_size\":160,\"intermediate_size\":288,"                       \
    "\"num_hidden_layers\":1,\"num_attention_heads\":5,\"num_key_value_heads\":1,\"head_dim\":32,"                     \
    "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":512}"

#define F32    KVC_DTYPE_F32
#define PAGED  KVC_MCACHE_PAGED
#define CONTIG KVC_MCACHE_CONTIGUOUS
static void test_dense_paged(void **s) { (void)s, run_family(QWEN3, PAGED, false, F32, 1); }
static void test_dense_contiguous(void **s) { (void)s, run_family(QWEN3, CONTIG, false, F32, 2); }
static void test_gpt_oss_paged(void **s) { (void)s, run_family(GPT_OSS, PAGED, false, F32, 3); }
static void test_gpt_oss_contiguous(void **s) { (void)s, run_family(GPT_OSS, CONTIG, false, F32, 4); }
static void test_deepseek_paged(void **s) { (void)s, run_family(DEEPSEEK, PAGED, false, F32, 5); }
static void test_deepseek_latent_paged(void **s) { (void)s, run_family(DEEPSEEK, PAGED, true, F32, 6); }
static void test_deepseek_latent_contiguous(void **s) { (void)s, run_family(DEEPSEEK, CONTIG, true, F32, 7); }
/* reduced-precision caches: fresh prefill attends over the converted keys (f16/bf16), or int8 / fp8 are
 * written first and read back (scales per token), so a prompt at once equals one in chunks */
static void test_dense_bf16_paged(void **s) { (void)s, run_family(QWEN3, PAGED, false, KVC_DTYPE_BF16, 8); }
static void test_gpt_oss_int8_paged(void **s) { (void)s, run_family(GPT_OSS, PAGED, false, KVC_DTYPE_I8, 9); }
static void test_gpt_oss_f16_contiguous(void **s) { (void)s, run_family(GPT_OSS, CONTIG, false, KVC_DTYPE_F16, 10); }
static void test_deepseek_int8_contiguous(void **s) { (void)s, run_family(DEEPSEEK, CONTIG, false, KVC_DTYPE_I8, 11); }
static void test_deepseek_latent_bf16_paged(void **s) {
    (void)s, run_family(DEEPSEEK, PAGED, true, KVC_DTYPE_BF16, 12);
}
static void test_dense_fp8_contiguous(void **s) { (void)s, run_family(QWEN3, CONTIG, false, KVC_DTYPE_F8E4M3, 13); }
static void test_gpt_oss_fp8_e5m2_paged(void **s) { (void)s, run_family(GPT_OSS, PAGED, false, KVC_DTYPE_F8E5M2, 14); }
/* int8 / fp8 latent caches: one scale per token over latent + rope, computed on write */
static void test_deepseek_latent_int8_contiguous(void **s) {
    (void)s, run_family(DEEPSEEK, CONTIG, true, KVC_DTYPE_I8, 15);
}
static void test_deepseek_latent_fp8_paged(void **s) {
    (void)s, run_family(DEEPSEEK, PAGED, true, KVC_DTYPE_F8E4M3, 16);
}

/* bf16 weights: every family on every bf16 GEMM kernel of this CPU (each its own bits). Under AddressSanitizer
 * not the portable kernel: one element at a time (no tiles for the batch's rows to change), its widening an
 * uninlined call that made it most of the sanitizer run's time here; test_model_oracle runs it instrumented and
 * the Release build checks its batch invariance. */
static void run_bf16_weights(const char *json, kvc_model_cache_kind kind, bool latent, uint64_t seed) {
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int n = kvci_gemm_bf16_kernels(all);
    weights = KVC_WMAT_BF16;
    for (int k = 0; k < n; k++) {
#ifdef KVC_TEST_ASAN
        if (strcmp(all[k]->name, "portable") == 0) continue;
#endif
        check(kvci_gemm_bf16_force(all[k]->name), all[k]->name);
        run_family(json, kind, latent, F32, seed);
    }
    check(kvci_gemm_bf16_force(NULL), "force");
    weights = KVC_WMAT_F32;
}
static void test_dense_bf16_weights(void **s) { (void)s, run_bf16_weights(QWEN3, PAGED, false, 17); }
static void test_gpt_oss_bf16_weights(void **s) { (void)s, run_bf16_weights(GPT_OSS, CONTIG, false, 18); }
static void test_deepseek_bf16_weights(void **s) { (void)s, run_bf16_weights(DEEPSEEK, PAGED, true, 19); }
static void test_wide_bf16_weights(void **s) { (void)s, run_bf16_weights(QWEN3_WIDE, CONTIG, false, 20); }

/* q8_0 / q4_0 weights (issue 30): every family on every quantized GEMM kernel of this CPU (all bitwise equal). */
static void run_quant_weights(const char *json, kvc_model_cache_kind kind, bool latent, uint64_t seed,
                              kvc_wmat_dtype wd) {
    const kvc_wq_kernel *all[KVC_WQ_MAX_KERNELS];
    const int n = kvci_wq_kernels(wd == KVC_WMAT_Q8_0 ? KVC_WQ_Q8_0 : KVC_WQ_Q4_0, all);
    weights = wd;
    for (int k = 0; k < n; k++) {
        check(kvci_wq_force(all[k]->name), all[k]->name);
        run_family(json, kind, latent, F32, seed);
    }
    check(kvci_wq_force(NULL), "force");
    weights = KVC_WMAT_F32;
}
static void test_dense_q8_0_weights(void **s) { (void)s, run_quant_weights(QWEN3, PAGED, false, 21, KVC_WMAT_Q8_0); }
static void test_gpt_oss_q4_0_weights(void **s) {
    (void)s, run_quant_weights(GPT_OSS, CONTIG, false, 22, KVC_WMAT_Q4_0);
}
static void test_deepseek_q8_0_weights(void **s) {
    (void)s, run_quant_weights(DEEPSEEK, PAGED, true, 23, KVC_WMAT_Q8_0);
}

static void test_qwen3_moe_paged(void **s) { (void)s, run_family(QWEN3_MOE, PAGED, false, F32, 24); }
static void test_mixtral_contiguous(void **s) { (void)s, run_family(MIXTRAL, CONTIG, false, F32, 25); }
static void test_qwen3_moe_q8_0_weights(void **s) {
    (void)s, run_quant_weights(QWEN3_MOE, CONTIG, false, 26, KVC_WMAT_Q8_0);
}
static void test_mixtral_bf16_weights(void **s) { (void)s, run_bf16_weights(MIXTRAL, PAGED, false, 27); }
static void test_qwen2_moe_paged(void **s) { (void)s, run_family(QWEN2_MOE, PAGED, false, F32, 28); }

static void test_gemma3_paged(void **s) { (void)s, run_family(GEMMA3, PAGED, false, F32, 29); }
static void test_lfm2_paged(void **s) { (void)s, run_family(LFM2, PAGED, false, F32, 71); }
static void test_lfm2_contiguous(void **s) { (void)s, run_family(LFM2, CONTIG, false, F32, 72); }
static void test_lfm3_paged(void **s) { (void)s, run_family(LFM3, PAGED, false, F32, 77); }
static void test_qwen3_next_paged(void **s) { (void)s, run_family(QWEN3_NEXT, PAGED, false, F32, 73); }
static void test_qwen3_next_contiguous(void **s) { (void)s, run_family(QWEN3_NEXT, CONTIG, false, F32, 74); }
static void test_bamba_paged(void **s) { (void)s, run_family(BAMBA, PAGED, false, F32, 73); }
static void test_nemotron_h_moe_paged(void **s) { (void)s, run_family(NEMOTRON_H_MOE, PAGED, false, F32, 75); }
static void test_falcon_h1_paged(void **s) { (void)s, run_family(FALCON_H1, PAGED, false, F32, 76); }
static void test_falcon_mamba_paged(void **s) { (void)s, run_family(FALCON_MAMBA, PAGED, false, F32, 75); }
static void test_jamba_paged(void **s) { (void)s, run_family(JAMBA, PAGED, false, F32, 76); }
static void test_zamba2_paged(void **s) { (void)s, run_family(ZAMBA2, PAGED, false, F32, 76); }
static void test_gemma3_contiguous_int8(void **s) { (void)s, run_family(GEMMA3, CONTIG, false, KVC_DTYPE_I8, 30); }
static void test_gemma2_paged(void **s) { (void)s, run_family(GEMMA2, PAGED, false, F32, 32); }
static void test_gemma2_contiguous_bf16(void **s) { (void)s, run_family(GEMMA2, CONTIG, false, KVC_DTYPE_BF16, 33); }
static void test_gemma3_q8_0_weights(void **s) { (void)s, run_quant_weights(GEMMA3, PAGED, false, 31, KVC_WMAT_Q8_0); }
static void test_glm4_paged(void **s) { (void)s, run_family(GLM4, PAGED, false, F32, 32); }
static void test_glm_contiguous(void **s) { (void)s, run_family(GLM, CONTIG, false, F32, 35); }
static void test_glm_dsa_latent_paged(void **s) { (void)s, run_family(GLM_DSA, PAGED, true, F32, 86); }
static void test_seed_oss_paged(void **s) { (void)s, run_family(SEED_OSS, PAGED, false, F32, 36); }
static void test_exaone4_contiguous(void **s) { (void)s, run_family(EXAONE4, CONTIG, false, F32, 37); }
static void test_starcoder2_paged(void **s) { (void)s, run_family(STARCODER2, PAGED, false, F32, 38); }
static void test_ministral_contiguous(void **s) { (void)s, run_family(MINISTRAL, CONTIG, false, F32, 39); }
static void test_ministral3_paged(void **s) { (void)s, run_family(MINISTRAL3, PAGED, false, F32, 40); }
static void test_cohere_contiguous(void **s) { (void)s, run_family(COHERE, CONTIG, false, F32, 33); }
static void test_cohere2_paged_bf16(void **s) { (void)s, run_family(COHERE2, PAGED, false, KVC_DTYPE_BF16, 34); }
static void test_llama4_paged(void **s) { (void)s, run_family(LLAMA4, PAGED, false, F32, 41); }
static void test_llama4_contiguous_bf16(void **s) { (void)s, run_family(LLAMA4, CONTIG, false, KVC_DTYPE_BF16, 42); }

/* SwiGLU of a prefill large enough to take the threads (64 x 3,072): every row bitwise equal to
 * the row alone on the calling thread. */
static void test_swiglu_threads(void **s) {
    (void)s;
    enum { T = 64, I = 3072 };
    float *g = malloc(sizeof(float) * T * I), *u = malloc(sizeof(float) * T * I);
    float *all = malloc(sizeof(float) * T * I), *row = malloc(sizeof(float) * I);
    assert_non_null(g), assert_non_null(u), assert_non_null(all), assert_non_null(row);
    for (int i = 0; i < T * I; i++) g[i] = (float)sin(0.37 * i) * 6.0f, u[i] = (float)cos(0.11 * i);
    omp_set_num_threads(2);
    for (int act = KVC_MLP_SILU; act <= KVC_MLP_GELU_TANH; act++) {
        kvci_glu((kvc_mlp_act)act, g, u, T, I, I, all, I);
        for (int t = 0; t < T; t++) {
            kvci_glu((kvc_mlp_act)act, g + t * I, u + t * I, 1, I, I, row, I);
            if (memcmp(row, all + t * I, sizeof(float) * I) != 0) fail_msg("act %d row %d differs alone", act, t);
        }
    }
    free(g), free(u), free(all), free(row);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_swiglu_threads),
        cmocka_unit_test(test_dense_paged),
        cmocka_unit_test(test_dense_contiguous),
        cmocka_unit_test(test_gpt_oss_paged),
        cmocka_unit_test(test_gpt_oss_contiguous),
        cmocka_unit_test(test_deepseek_paged),
        cmocka_unit_test(test_deepseek_latent_paged),
        cmocka_unit_test(test_deepseek_latent_contiguous),
        cmocka_unit_test(test_dense_bf16_paged),
        cmocka_unit_test(test_gpt_oss_int8_paged),
        cmocka_unit_test(test_gpt_oss_f16_contiguous),
        cmocka_unit_test(test_deepseek_int8_contiguous),
        cmocka_unit_test(test_deepseek_latent_bf16_paged),
        cmocka_unit_test(test_dense_fp8_contiguous),
        cmocka_unit_test(test_gpt_oss_fp8_e5m2_paged),
        cmocka_unit_test(test_deepseek_latent_int8_contiguous),
        cmocka_unit_test(test_deepseek_latent_fp8_paged),
        cmocka_unit_test(test_dense_bf16_weights),
        cmocka_unit_test(test_gpt_oss_bf16_weights),
        cmocka_unit_test(test_deepseek_bf16_weights),
        cmocka_unit_test(test_wide_bf16_weights),
        cmocka_unit_test(test_dense_q8_0_weights),
        cmocka_unit_test(test_gpt_oss_q4_0_weights),
        cmocka_unit_test(test_deepseek_q8_0_weights),
        cmocka_unit_test(test_qwen3_moe_paged),
        cmocka_unit_test(test_mixtral_contiguous),
        cmocka_unit_test(test_qwen3_moe_q8_0_weights),
        cmocka_unit_test(test_mixtral_bf16_weights),
        cmocka_unit_test(test_qwen2_moe_paged),
        cmocka_unit_test(test_gemma3_paged),
        cmocka_unit_test(test_lfm2_paged),
        cmocka_unit_test(test_lfm2_contiguous),
        cmocka_unit_test(test_lfm3_paged),
        cmocka_unit_test(test_qwen3_next_paged),
        cmocka_unit_test(test_qwen3_next_contiguous),
        cmocka_unit_test(test_bamba_paged),
        cmocka_unit_test(test_nemotron_h_moe_paged),
        cmocka_unit_test(test_falcon_h1_paged),
        cmocka_unit_test(test_falcon_mamba_paged),
        cmocka_unit_test(test_zamba2_paged),
        cmocka_unit_test(test_jamba_paged),
        cmocka_unit_test(test_gemma2_paged),
        cmocka_unit_test(test_gemma2_contiguous_bf16),
        cmocka_unit_test(test_llama4_paged),
        cmocka_unit_test(test_llama4_contiguous_bf16),
        cmocka_unit_test(test_gemma3_contiguous_int8),
        cmocka_unit_test(test_gemma3_q8_0_weights),
        cmocka_unit_test(test_glm4_paged),
        cmocka_unit_test(test_cohere_contiguous),
        cmocka_unit_test(test_cohere2_paged_bf16),
        cmocka_unit_test(test_glm_contiguous),
        cmocka_unit_test(test_glm_dsa_latent_paged),
        cmocka_unit_test(test_seed_oss_paged),
        cmocka_unit_test(test_exaone4_contiguous),
        cmocka_unit_test(test_starcoder2_paged),
        cmocka_unit_test(test_ministral_contiguous),
        cmocka_unit_test(test_ministral3_paged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
