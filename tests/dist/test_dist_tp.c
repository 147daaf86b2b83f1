/* Tensor parallelism (docs/distributed.md), run by ctest as `mpiexec -n R` with R = 2 and 4 ranks:
 * every rank loads its shard of each oracle model (tests/data/oracle) and, for each family,
 * - meets the Hugging Face oracle: greedy ids equal, step logits within 1e-4 (kvc_test_oracle.h);
 * - is deterministic: two runs give bitwise the same logits, every rank holds rank 0's logits
 *   bitwise, and a prompt run alone gives the same logits as in the batch;
 * - allocates exactly the caches `kvcache plan --tp R --json` gives each rank (heads, dim, dtype
 *   of every layer's k/v or latent caches);
 * - holds in its caches the matching KV-head slice of a one-rank run of the whole model (the latent
 *   whole), within 1e-4, so a misaligned split fails, and its logits are those of the one-rank run;
 * the same (but the oracle) for a DeepSeek-V3 with routed experts, written at start, and for qwen3
 * with q8_0 / q4_0 weights (each rank quantizes its shard: deterministic, and its logits within a quarter
 * of the quantization's own error of a one-rank run with the same weights), and with bf16 weights and
 * activations rounded to bf16 (held the same way);
 * and a wait on a late peer ends at its deadline (src/dist/comm.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "dist/tp.h"
#include "kvc_test_checkpoint.h"
#include "kvc_test_oracle.h"
#include "kvc_test_util.h"
#include "kvcache/plan.h"
#include "model/model_internal.h"
#include "runner/runner_internal.h"

#define CACHE_TOL 1e-4

static kvc_comm g_comm;

/* One family in one runner mode, with weights as kvc_model_load_weights takes them (NULL: the checkpoint's)
 * and activations as kvc_model_set_activations takes them (NULL: f32). */
typedef struct tp_case {
    const char *sub;
    kvc_runner_mode mode;
    const char *weights;
    const char *activations;
    int refuse_tp;       /* the ranks whose load is refused (a size they do not divide), 0: none */
    const char *refusal; /* the message's words that name it */
} tp_case;

static const tp_case QWEN3 = {.sub = "qwen3", .mode = KVC_RUNNER_PAGED};
static const tp_case GPT_OSS = {.sub = "gpt_oss", .mode = KVC_RUNNER_PAGED};
static const tp_case DEEPSEEK_FULL = {.sub = "deepseek_v3", .mode = KVC_RUNNER_PAGED};
static const tp_case DEEPSEEK_LATENT = {.sub = "deepseek_v3", .mode = KVC_RUNNER_MLA_LATENT};
/* sliding and full layers with their own ropes; the sub-layers' outputs reduced before their norms */
static const tp_case GEMMA3 = {.sub = "gemma3", .mode = KVC_RUNNER_PAGED};
/* Gemma 2: each rank's heads soft-capped alike, the logits capped after the (whole) head */
static const tp_case GEMMA2 = {.sub = "gemma2", .mode = KVC_RUNNER_PAGED};
/* Phi-3: each rank's rows of the fused qkv_proj / gate_up_proj, partial rotary, longrope, tied embeddings */
static const tp_case PHI3 = {.sub = "phi3_longrope", .mode = KVC_RUNNER_PAGED};
/* Granite: the residual multiplier applied to the reduced sum, the logits divided after the (whole) head */
static const tp_case GRANITE = {.sub = "granite", .mode = KVC_RUNNER_PAGED};
/* GLM-4: each rank's rows of the fused gate_up_proj, q/k/v biases, the sandwich norms on the reduced sums */
static const tp_case GLM4 = {.sub = "glm4", .mode = KVC_RUNNER_PAGED};
/* Cohere: the parallel block's two reduced sums added in turn, o_proj's bias on rank 0, the logit scale */
static const tp_case COHERE = {.sub = "cohere", .mode = KVC_RUNNER_PAGED};
/* OLMo 2: q / k norms over all heads, their sums of squares added over the ranks (KV heads replicated on 4) */
static const tp_case OLMO2 = {.sub = "olmo2", .mode = KVC_RUNNER_PAGED};
/* Llama 4: chunked and NoPE layers, each rank's heads L2-normalised and scaled alike, the sigmoid-routed experts'
 * and the shared expert's intermediate columns split, the router whole on every rank */
static const tp_case LLAMA4 = {.sub = "llama4", .mode = KVC_RUNNER_PAGED};
/* State layers (shard_state.c): LFM2's conv channels, Bamba's Mamba2 heads and groups (2 groups: one per rank on 2,
 * each replicated on two ranks of 4, its gated norm's sums added over them), Qwen3-Next's key heads with their value
 * heads; each out_proj row-parallel */
static const tp_case LFM2 = {.sub = "lfm2", .mode = KVC_RUNNER_PAGED};
/* LFM3: LFM2's conv channels, each rank's heads with their rows of the gate per head, a sliding layer, the sandwich
 * norms on the reduced sums */
static const tp_case LFM3 = {.sub = "lfm3", .mode = KVC_RUNNER_PAGED};
static const tp_case BAMBA = {.sub = "bamba", .mode = KVC_RUNNER_PAGED};
static const tp_case QWEN3_NEXT = {.sub = "qwen3_next",
                                   .mode = KVC_RUNNER_PAGED,
                                   .refuse_tp = 4,
                                   .refusal = "tensor parallelism 4 does not divide linear_num_key_heads 2"};
/* Mamba-1 (Mamba, FalconMamba: its dt / B / C normed without weights, Jamba: with weights, beside attention and
 * experts): each rank its channels, x_proj's partial dt | B | C summed over the ranks, out_proj row-parallel */
static const tp_case MAMBA = {.sub = "mamba", .mode = KVC_RUNNER_PAGED};
static const tp_case FALCON_MAMBA = {.sub = "falcon_mamba", .mode = KVC_RUNNER_PAGED};
static const tp_case JAMBA = {.sub = "jamba", .mode = KVC_RUNNER_PAGED};
/* Falcon-H1: the Mamba2 mixer's heads and groups beside the attention's heads, the two partial outputs (each scaled
 * by its multiplier) summed into one reduce; its 6 mixer heads refused on 4 ranks. The gated variant (one group,
 * no norm) replicates its group on every rank. */
static const tp_case FALCON_H1 = {.sub = "falcon_h1",
                                  .mode = KVC_RUNNER_PAGED,
                                  .refuse_tp = 4,
                                  .refusal = "tensor parallelism 4 does not divide mamba_n_heads 6"};
static const tp_case FALCON_H1_GATED = {.sub = "falcon_h1_gated", .mode = KVC_RUNNER_PAGED};
/* Falcon-H1 normed before its gate with one group (a random checkpoint each rank writes, held to the one-rank run):
 * the group replicated on 2 ranks, its sum of squares of the ungated y added over them */
static const tp_case FALCON_H1_G1 = {.sub = "falcon_h1 one group",
                                     .mode = KVC_RUNNER_PAGED,
                                     .refuse_tp = 4,
                                     .refusal = "tensor parallelism 4 does not divide mamba_n_heads 6"};
/* Quantized shards, held to a one-rank run with the same weights (not to the f32 oracle). */
static const tp_case QWEN3_Q8_0 = {.sub = "qwen3", .mode = KVC_RUNNER_PAGED, .weights = "q8_0"};
static const tp_case QWEN3_Q4_0 = {.sub = "qwen3", .mode = KVC_RUNNER_PAGED, .weights = "q4_0"};
/* bf16 weights with activations rounded to bf16 (`--activations bf16`), held the same way. */
static const tp_case QWEN3_BF16ACT = {
    .sub = "qwen3", .mode = KVC_RUNNER_PAGED, .weights = "bf16", .activations = "bf16"};
/* DeepSeek-V3 with routed experts (the oracle's layers are all dense): a random checkpoint each rank
 * writes (kvc_test_checkpoint.h), held to the one-rank run instead of an oracle. */
static const tp_case DEEPSEEK_MOE = {.sub = "deepseek_moe", .mode = KVC_RUNNER_MLA_LATENT};
/* DeepSeek-V2: its oracle's MoE layers (softmax router, group_limited_greedy, shared experts) split over the ranks
 * against transformers, through the latent caches */
static const tp_case DEEPSEEK_V2 = {.sub = "deepseek_v2", .mode = KVC_RUNNER_MLA_LATENT};
static char g_moe_dir[512], g_h1_dir[512];

static void model_dir(const tp_case *c, char *dir, size_t cap) {
    if (c == &DEEPSEEK_MOE)
        snprintf(dir, cap, "%s", g_moe_dir);
    else if (c == &FALCON_H1_G1)
        snprintf(dir, cap, "%s", g_h1_dir);
    else
        kvc_test_oracle_dir(c->sub, dir, cap);
}

/* The prompts of a model without expected.json: two of 7 and 3 ids, 6 new tokens. */
static void own_prompts(kvc_test_oracle *o) {
    static const int32_t ids[] = {11, 402, 7, 93, 250, 3, 61, 5, 480, 77};
    memset(o, 0, sizeof *o);
    memcpy(o->ids, ids, sizeof ids);
    o->n = 2, o->lens[0] = 7, o->lens[1] = 3, o->N = 6;
}

/* The oracle of c with this rank's shard in place of the whole model. */
static void open_shard(const tp_case *c, kvc_test_oracle *o, kvc_tp *tp) {
    if (c == &DEEPSEEK_MOE || c == &FALCON_H1_G1) {
        own_prompts(o);
    } else {
        kvc_test_oracle_open(c->sub, o);
        kvc_model_destroy(o->m);
        o->m = NULL;
    }
    char dir[1024];
    model_dir(c, dir, sizeof dir);
    if (kvc_tp_load_model(tp, &g_comm, dir, c->weights, &o->m) != KVC_OK ||
        (c->activations && kvc_model_set_activations(o->m, c->activations) != KVC_OK))
        fail_msg("shard of %s: %s", dir, kvc_last_error());
    o->V = kvc_model_config_of(o->m)->vocab_size;
}

static void close_shard(kvc_test_oracle *o, kvc_tp *tp) {
    kvc_test_oracle_close(o);
    kvc_tp_release(tp);
}

static kvc_runner_params params(const tp_case *c, int64_t new_tokens) {
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = c->mode;
    p.cache.block_size = 16;
    p.mla_paged = true;
    p.max_new_tokens = new_tokens;
    return p;
}

/* Greedy run of m over prompts [first, first + n) of o: logits [N, n, V] into lg; the runner (its
 * caches) into *out. */
static void generate(const kvc_model *m, const kvc_test_oracle *o, const tp_case *c, int64_t first, int64_t n,
                     float *lg, kvc_runner **out) {
    const kvc_runner_params p = params(c, o->N);
    int64_t off = 0, maxl = 0;
    for (int64_t b = 0; b < first; b++) off += o->lens[b];
    for (int64_t b = first; b < first + n; b++) maxl = o->lens[b] > maxl ? o->lens[b] : maxl;
    int32_t *tok = calloc((size_t)(n * o->N), sizeof *tok);
    assert_non_null(tok);
    if (kvc_runner_create(m, &p, n, maxl, out) != KVC_OK ||
        kvc_runner_generate(*out, o->ids + off, o->lens + first, n, tok, lg, NULL) != KVC_OK)
        fail_msg("%s mode %d: %s", c->sub, (int)c->mode, kvc_last_error());
    free(tok);
}

static void check_oracle(const tp_case *c) {
    kvc_test_oracle o;
    kvc_tp tp;
    open_shard(c, &o, &tp);
    kvc_test_oracle_check_greedy(&o, c->mode, 16, true, c->sub);
    close_shard(&o, &tp);
}

static void check_deterministic(const tp_case *c) {
    kvc_test_oracle o;
    kvc_tp tp;
    open_shard(c, &o, &tp);
    const int64_t n = o.n, N = o.N, V = o.V, count = N * n * V;
    float *a = calloc((size_t)count, sizeof *a), *b = calloc((size_t)count, sizeof *b);
    float *alone = calloc((size_t)(N * V), sizeof *alone);
    assert_true(a && b && alone);
    kvc_runner *r = NULL;
    generate(o.m, &o, c, 0, n, a, &r);
    kvc_runner_destroy(r);
    generate(o.m, &o, c, 0, n, b, &r);
    kvc_runner_destroy(r);
    assert_memory_equal(a, b, (size_t)count * sizeof *a); /* run to run */
    MPI_Request req;
    assert_int_equal(MPI_Ibcast(b, (int)count, MPI_FLOAT, 0, g_comm.comm, &req), MPI_SUCCESS);
    assert_int_equal(kvc_comm_wait(&g_comm, &req, "rank 0's logits"), KVC_OK);
    assert_memory_equal(a, b, (size_t)count * sizeof *a); /* every rank holds rank 0's logits */
    const int64_t last = n - 1;                           /* the last prompt alone, then in the batch */
    generate(o.m, &o, c, last, 1, alone, &r);
    kvc_runner_destroy(r);
    for (int64_t i = 0; i < N; i++) assert_memory_equal(alone + i * V, a + (i * n + last) * V, (size_t)V * sizeof *a);
    free(a);
    free(b);
    free(alone);
    close_shard(&o, &tp);
}

/* `kvcache plan --tp R --json` of c's config for this many ranks (f32 caches): its parsed JSON. */
static cJSON *plan_json(const tp_case *c) {
    char dir[1024], path[1100];
    model_dir(c, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *config = kvc_test_read_text(path), *json = NULL;
    kvc_plan_options opt = kvc_plan_default_options();
    opt.tp = g_comm.size;
    opt.kv_dtype_set = true, opt.kv_dtype = KVC_DTYPE_F32;
    opt.max_model_len = 64; /* Mamba's and FalconMamba's configs have no max_position_embeddings */
    kvc_model_plan *plan = NULL;
    if (kvc_model_plan_create(config, strlen(config), &opt, &plan) != KVC_OK ||
        kvc_model_plan_to_json(plan, &json) != KVC_OK)
        fail_msg("plan of %s: %s", dir, kvc_last_error());
    cJSON *doc = cJSON_Parse(json);
    assert_non_null(doc);
    kvc_plan_json_free(json);
    kvc_model_plan_destroy(plan);
    free(config);
    return doc;
}

/* Every layer's two caches of the runner against `kvcache plan --tp R --json`'s for this rank. */
static void check_plan_caches(const tp_case *c) {
    kvc_test_oracle o;
    kvc_tp tp;
    open_shard(c, &o, &tp);
    cJSON *doc = plan_json(c);
    kvc_runner *r = NULL;
    float *lg = calloc((size_t)(o.N * o.n * o.V), sizeof *lg);
    assert_non_null(lg);
    generate(o.m, &o, c, 0, o.n, lg, &r);
    const cJSON *layers = cJSON_GetObjectItem(doc, "layers");
    assert_int_equal(cJSON_GetArraySize(layers), r->caches.n_layers);
    for (int32_t l = 0; l < r->caches.n_layers; l++) {
        const cJSON *caches = cJSON_GetObjectItem(cJSON_GetArrayItem(layers, l), "caches");
        const kvc_tensor *t[2] = {&r->caches.layers[l].k, &r->caches.layers[l].v};
        assert_int_equal(cJSON_GetArraySize(caches), 2);
        for (int i = 0; i < 2; i++) { /* paged [NB, bs, heads, dim] */
            const cJSON *pc = cJSON_GetArrayItem(caches, i);
            if (cJSON_GetObjectItem(pc, "num_head")->valueint != t[i]->shape[2] ||
                cJSON_GetObjectItem(pc, "dim")->valueint != t[i]->shape[3] ||
                strcmp(cJSON_GetObjectItem(pc, "dtype")->valuestring, kvc_dtype_name(t[i]->dtype)) != 0)
                fail_msg("%s rank %d of %d layer %d %s: the plan says %d heads of %d (%s), the rank holds %lld of %lld "
                         "(%s)",
                         c->sub, g_comm.rank, g_comm.size, (int)l, cJSON_GetObjectItem(pc, "name")->valuestring,
                         cJSON_GetObjectItem(pc, "num_head")->valueint, cJSON_GetObjectItem(pc, "dim")->valueint,
                         cJSON_GetObjectItem(pc, "dtype")->valuestring, (long long)t[i]->shape[2],
                         (long long)t[i]->shape[3], kvc_dtype_name(t[i]->dtype));
        }
    }
    kvc_runner_destroy(r);
    free(lg);
    cJSON_Delete(doc);
    close_shard(&o, &tp);
}

/* part [NB, bs, h, D] against heads [h0, h0 + h) of whole [NB, bs, H, D]. */
static void compare_slice(const kvc_tensor *part, const kvc_tensor *whole, int64_t h0, const char *what) {
    const int64_t slots = part->shape[0] * part->shape[1], h = part->shape[2], H = whole->shape[2], D = part->shape[3];
    assert_int_equal(part->shape[0], whole->shape[0]);
    assert_int_equal(D, whole->shape[3]);
    assert_true(h0 + h <= H);
    const float *p = part->data, *w = whole->data;
    for (int64_t s = 0; s < slots; s++)
        for (int64_t j = 0; j < h * D; j++) {
            const float x = p[s * h * D + j], y = w[(s * H + h0) * D + j];
            if (!(fabsf(x - y) <= CACHE_TOL * (1.0f + fabsf(y))) && !(isnan(x) && isnan(y)))
                fail_msg("%s rank %d of %d: slot %lld, head %lld, lane %lld holds %.7g, the one-rank run's head %lld "
                         "%.7g",
                         what, g_comm.rank, g_comm.size, (long long)s, (long long)(j / D), (long long)(j % D),
                         (double)x, (long long)(h0 + j / D), (double)y);
        }
}

/* c's shard and a one-rank run of the whole model over the same prompts: the logits within the oracle's tolerance,
 * then `caches` compares the two runners' caches. */
typedef void (*caches_fn)(const tp_case *c, const kvc_model *whole, const kvc_runner *rp, const kvc_runner *rw);
static void against_whole(const tp_case *c, caches_fn caches) {
    kvc_test_oracle o;
    kvc_tp tp;
    open_shard(c, &o, &tp);
    kvc_model *whole = NULL;
    char dir[1024];
    model_dir(c, dir, sizeof dir);
    assert_int_equal(kvc_model_load(dir, &whole), KVC_OK);
    const int64_t count = o.N * o.n * o.V;
    float *lg = calloc((size_t)count, sizeof *lg), *lw = calloc((size_t)count, sizeof *lw);
    assert_true(lg && lw);
    kvc_runner *rp = NULL, *rw = NULL;
    generate(o.m, &o, c, 0, o.n, lg, &rp);
    generate(whole, &o, c, 0, o.n, lw, &rw);
    for (int64_t i = 0; i < count; i++) /* the logits of the whole model, within the oracle's tolerance */
        if (!(fabsf(lg[i] - lw[i]) <= KVC_TEST_ORACLE_REL_TOL * fabsf(lw[i]) + KVC_TEST_ORACLE_ABS_FLOOR))
            fail_msg("%s rank %d of %d: logit %lld is %.7g, the one-rank run's %.7g", c->sub, g_comm.rank, g_comm.size,
                     (long long)i, (double)lg[i], (double)lw[i]);
    caches(c, whole, rp, rw);
    kvc_runner_destroy(rp);
    kvc_runner_destroy(rw);
    kvc_model_destroy(whole);
    free(lg);
    free(lw);
    close_shard(&o, &tp);
}

static void kv_slices(const tp_case *c, const kvc_model *whole, const kvc_runner *rp, const kvc_runner *rw) {
    /* the latent is held whole by every rank; full-form heads from this rank's first KV head */
    const int64_t h0 = c->mode == KVC_RUNNER_MLA_LATENT
                           ? 0
                           : kvci_model_shard_kv_head0(kvc_model_config_of(whole), g_comm.rank, g_comm.size);
    for (int32_t l = 0; l < rp->caches.n_layers; l++) {
        char what[96];
        snprintf(what, sizeof what, "%s mode %d layer %d k", c->sub, (int)c->mode, (int)l);
        compare_slice(&rp->caches.layers[l].k, &rw->caches.layers[l].k, h0, what);
        what[strlen(what) - 1] = 'v';
        compare_slice(&rp->caches.layers[l].v, &rw->caches.layers[l].v, h0, what);
    }
}

static void check_cache_slices(const tp_case *c) { against_whole(c, kv_slices); }

/* The runs of a whole state row (its last dim, or a recurrent state's heads flattened) rank r of tp holds, written
 * here from the configs apart from the loader's rule: n runs of (start, len). */
typedef struct state_runs {
    int n;
    int64_t start[3], len[3];
} state_runs;

static state_runs runs_of(const kvc_model_config *f, int64_t l, int state, int64_t r, int64_t tp) {
    state_runs u = {0};
    if (f->layer_conv[l]) { /* conv_state [.., L - 1, H]: channels */
        const int64_t W = f->hidden_size / tp;
        return (state_runs){1, {r * W}, {W}};
    }
    if (f->layer_mamba[l]) {
        const int64_t P = f->mamba_head_dim, N = f->mamba_d_state, nh = f->mamba_heads / tp, G = f->mamba_groups;
        if (state == 1) return (state_runs){1, {r * nh * P * N}, {nh * P * N}}; /* ssm [.., nh, P, N]: heads */
        const int64_t I = f->mamba_heads * P, Gr = G >= tp ? G / tp : 1, g0 = r * G / tp; /* conv: x | B | C */
        return (state_runs){3, {r * nh * P, I + g0 * N, I + (G + g0) * N}, {nh * P, Gr * N, Gr * N}};
    }
    if (f->layer_mamba1[l]) { /* conv [.., L - 1, I] and ssm [.., I, N]: channels */
        const int64_t I = f->mamba_inner / tp, N = state == 1 ? f->mamba_d_state : 1;
        return (state_runs){1, {r * I * N}, {I * N}};
    }
    if (f->layer_gdn[l]) {
        const int64_t K = f->gdn_k_heads * f->gdn_k_dim / tp, nv = f->gdn_v_heads / tp, dv = f->gdn_v_dim;
        if (state == 1) return (state_runs){1, {r * nv * f->gdn_k_dim * dv}, {nv * f->gdn_k_dim * dv}};
        return (state_runs){3, {r * K, K * tp + r * K, 2 * K * tp + r * nv * dv}, {K, K, nv * dv}};
    }
    return u;
}

/* A rank's state tensor part against whole's (the same blocks, the one-rank run's), row by row: the rank's row of
 * sum(len) floats are the runs u of whole's row. */
static void compare_state(const kvc_tensor *part, const kvc_tensor *whole, int64_t per_row_whole, const state_runs *u,
                          const char *what) {
    int64_t pw = 0, np = 1, nw = 1;
    for (int i = 0; i < u->n; i++) pw += u->len[i];
    for (int32_t d = 0; d < part->ndim; d++) np *= part->shape[d];
    for (int32_t d = 0; d < whole->ndim; d++) nw *= whole->shape[d];
    assert_int_equal(np / pw, nw / per_row_whole); /* as many rows */
    const float *p = part->data, *w = whole->data;
    for (int64_t row = 0; row < np / pw; row++)
        for (int i = 0, at = 0; i < u->n; at += (int)u->len[i], i++)
            for (int64_t j = 0; j < u->len[i]; j++) {
                const float x = p[row * pw + at + j], y = w[row * per_row_whole + u->start[i] + j];
                if (!(fabsf(x - y) <= CACHE_TOL * (1.0f + fabsf(y))) && !(isnan(x) && isnan(y)))
                    fail_msg("%s rank %d of %d: row %lld, run %d entry %lld holds %.7g, the one-rank run's %.7g", what,
                             g_comm.rank, g_comm.size, (long long)row, i, (long long)j, (double)x, (double)y);
            }
}

/* Each state of every state layer of runner r holds the bytes per sequence `kvcache plan --tp R --json` gives this
 * rank (bytes_per_block of its state entries: one block a sequence). */
static void check_plan_states(const tp_case *c, const kvc_runner *r) {
    cJSON *doc = plan_json(c);
    const cJSON *layers = cJSON_GetObjectItem(doc, "layers");
    int seen = 0;
    for (int32_t l = 0; l < r->caches.n_layers; l++) {
        const cJSON *caches = NULL; /* the plan's Mamba layer l (Falcon-H1: after its attention layer of that index) */
        for (int i = 0; i < cJSON_GetArraySize(layers); i++) {
            const cJSON *pl = cJSON_GetArrayItem(layers, i);
            if (cJSON_GetObjectItem(pl, "layer")->valueint == l &&
                strcmp(cJSON_GetObjectItem(pl, "attn_type")->valuestring, "Mamba") == 0)
                caches = cJSON_GetObjectItem(pl, "caches");
        }
        const kvc_tensor *t[2] = {&r->caches.layers[l].state, &r->caches.layers[l].recurrent};
        for (int i = 0; i < 2 && t[i]->data; i++, seen++) {
            int64_t per = 4; /* f32 bytes of one block (a sequence) */
            for (int32_t d = 1; d < t[i]->ndim; d++) per *= t[i]->shape[d];
            const cJSON *pc = cJSON_GetArrayItem(caches, i);
            if (cJSON_GetObjectItem(pc, "bytes_per_block")->valuedouble != (double)per)
                fail_msg("%s rank %d of %d layer %d %s: the plan says %g bytes a sequence, the rank holds %lld", c->sub,
                         g_comm.rank, g_comm.size, (int)l, cJSON_GetObjectItem(pc, "name")->valuestring,
                         cJSON_GetObjectItem(pc, "bytes_per_block")->valuedouble, (long long)per);
        }
    }
    assert_true(seen > 0);
    cJSON_Delete(doc);
}

/* The logits of a one-rank run of the whole model within the oracle's tolerance, and each state layer's states
 * (conv and recurrent) the matching slice of that run's: a misaligned conv or head split fails; their sizes the
 * plan's for this rank. */
static void state_slices(const tp_case *c, const kvc_model *whole, const kvc_runner *rp, const kvc_runner *rw) {
    const kvc_model_config *f = kvc_model_config_of(whole);
    int checked = 0;
    for (int32_t l = 0; l < rp->caches.n_layers; l++)
        for (int s = 0; s < 2; s++) {
            const state_runs u = runs_of(f, l, s, g_comm.rank, g_comm.size);
            const kvc_tensor *tp_t = s ? &rp->caches.layers[l].recurrent : &rp->caches.layers[l].state;
            const kvc_tensor *w_t = s ? &rw->caches.layers[l].recurrent : &rw->caches.layers[l].state;
            if (u.n == 0 || !w_t->data) continue;
            int64_t per = 1; /* a whole row: the conv state's last dim, the recurrent state's per block */
            for (int32_t d = s ? 1 : w_t->ndim - 1; d < w_t->ndim; d++) per *= w_t->shape[d];
            char what[96];
            snprintf(what, sizeof what, "%s layer %d %s", c->sub, (int)l, s ? "recurrent state" : "conv state");
            compare_state(tp_t, w_t, per, &u, what);
            checked++;
        }
    assert_true(checked > 0);
    check_plan_states(c, rp);
}

static void check_state_slices(const tp_case *c) { against_whole(c, state_slices); }

static double max_abs_diff(const float *a, const float *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - (double)b[i]));
    return m;
}

/* Quantized shards against a one-rank run with the same weights: the partial sums meet in another
 * order, which can move an activation across an int8 rounding boundary (one step of amax/127 in one
 * element; with rounded activations, one bf16 step), so the logits are not held to 1e-4 but to a
 * quarter of the quantization's own error (the one-rank quantized run against f32 weights and
 * activations), on the prompts' logits (step 0: later steps of the f32 run may have chosen other
 * tokens). */
static void check_quantized(const tp_case *c) {
    kvc_test_oracle o;
    kvc_tp tp;
    open_shard(c, &o, &tp);
    char dir[1024];
    model_dir(c, dir, sizeof dir);
    kvc_model *whole = NULL, *f32 = NULL;
    assert_int_equal(kvc_model_load_weights(dir, c->weights, &whole), KVC_OK);
    if (c->activations) assert_int_equal(kvc_model_set_activations(whole, c->activations), KVC_OK);
    assert_int_equal(kvc_model_load_weights(dir, "f32", &f32), KVC_OK);
    const int64_t count = o.N * o.n * o.V;
    float *lg = calloc((size_t)count, sizeof *lg), *lw = calloc((size_t)count, sizeof *lw);
    float *lf = calloc((size_t)count, sizeof *lf);
    assert_true(lg && lw && lf);
    kvc_runner *r[3] = {NULL, NULL, NULL};
    generate(o.m, &o, c, 0, o.n, lg, &r[0]);
    generate(whole, &o, c, 0, o.n, lw, &r[1]);
    generate(f32, &o, c, 0, o.n, lf, &r[2]);
    const int64_t step0 = o.n * o.V; /* [N, n, V] */
    const double tp_err = max_abs_diff(lg, lw, step0), quant_err = max_abs_diff(lw, lf, step0);
    if (!(tp_err <= 0.25 * quant_err))
        fail_msg(
            "%s %s rank %d of %d: logits %.3g from the one-rank run's, more than a quarter of its own error against "
            "f32 %.3g",
            c->sub, c->activations ? "bf16 activations" : c->weights, g_comm.rank, g_comm.size, tp_err, quant_err);
    for (int i = 0; i < 3; i++) kvc_runner_destroy(r[i]);
    kvc_model_destroy(whole);
    kvc_model_destroy(f32);
    free(lg);
    free(lw);
    free(lf);
    close_shard(&o, &tp);
}

#define FAMILY_TESTS(name, c)                                                                                          \
    static void test_oracle_##name(void **state) {                                                                     \
        (void)state;                                                                                                   \
        check_oracle(&c);                                                                                              \
    }                                                                                                                  \
    static void test_deterministic_##name(void **state) {                                                              \
        (void)state;                                                                                                   \
        check_deterministic(&c);                                                                                       \
    }                                                                                                                  \
    static void test_cache_slices_##name(void **state) {                                                               \
        (void)state;                                                                                                   \
        check_cache_slices(&c);                                                                                        \
    }
FAMILY_TESTS(qwen3, QWEN3)
FAMILY_TESTS(gpt_oss, GPT_OSS)
FAMILY_TESTS(deepseek_full, DEEPSEEK_FULL)
FAMILY_TESTS(deepseek_latent, DEEPSEEK_LATENT)
FAMILY_TESTS(gemma3, GEMMA3)
FAMILY_TESTS(gemma2, GEMMA2)
FAMILY_TESTS(phi3, PHI3)
FAMILY_TESTS(granite, GRANITE)
FAMILY_TESTS(glm4, GLM4)
FAMILY_TESTS(cohere, COHERE)

/* Whether c's load on this many ranks is refused (it must be, naming the size): then its checks are skipped. */
static bool refused(const tp_case *c) {
    if (c->refuse_tp != g_comm.size) return false;
    char dir[1024];
    model_dir(c, dir, sizeof dir);
    kvc_tp tp;
    kvc_model *m = NULL;
    assert_int_equal(kvc_tp_load_model(&tp, &g_comm, dir, NULL, &m), KVC_EINVAL);
    assert_null(m);
    if (!strstr(kvc_last_error(), c->refusal)) fail_msg("%s on %d ranks: %s", c->sub, g_comm.size, kvc_last_error());
    kvc_tp_release(&tp);
    return true;
}

/* The oracle and the one-rank run's states; the determinism checks on Bamba only (its gated norm's extra all-reduce
 * on 4 ranks: the others add no collective to the ones checked above), to keep the suite's time. */
#define STATE_TESTS(name, c)                                                                                           \
    static void test_oracle_##name(void **state) {                                                                     \
        (void)state;                                                                                                   \
        if (!refused(&c)) check_oracle(&c);                                                                            \
    }                                                                                                                  \
    static void test_state_slices_##name(void **state) {                                                               \
        (void)state;                                                                                                   \
        if (!refused(&c)) check_state_slices(&c);                                                                      \
    }
STATE_TESTS(lfm2, LFM2)
STATE_TESTS(lfm3, LFM3)
STATE_TESTS(bamba, BAMBA)
STATE_TESTS(qwen3_next, QWEN3_NEXT)
STATE_TESTS(mamba, MAMBA)
STATE_TESTS(falcon_mamba, FALCON_MAMBA)
STATE_TESTS(jamba, JAMBA)
STATE_TESTS(falcon_h1, FALCON_H1)
STATE_TESTS(falcon_h1_gated, FALCON_H1_GATED)
static void test_state_slices_falcon_h1_g1(void **state) {
    (void)state;
    if (!refused(&FALCON_H1_G1)) check_state_slices(&FALCON_H1_G1);
}
static void test_deterministic_bamba(void **state) {
    (void)state;
    check_deterministic(&BAMBA);
}

static void test_oracle_olmo2(void **state) {
    (void)state;
    check_oracle(&OLMO2);
}

static void test_oracle_deepseek_v2(void **state) {
    (void)state;
    check_oracle(&DEEPSEEK_V2);
}

static void test_oracle_llama4(void **state) {
    (void)state;
    check_oracle(&LLAMA4);
}

static void test_deterministic_qwen3_q8_0(void **state) {
    (void)state;
    check_deterministic(&QWEN3_Q8_0);
}
static void test_quantized_qwen3_q8_0(void **state) {
    (void)state;
    check_quantized(&QWEN3_Q8_0);
}
static void test_quantized_qwen3_q4_0(void **state) {
    (void)state;
    check_quantized(&QWEN3_Q4_0);
}

static void test_deterministic_qwen3_bf16act(void **state) {
    (void)state;
    check_deterministic(&QWEN3_BF16ACT);
}
static void test_rounded_qwen3_bf16act(void **state) {
    (void)state;
    check_quantized(&QWEN3_BF16ACT);
}

static void test_deterministic_deepseek_moe(void **state) {
    (void)state;
    check_deterministic(&DEEPSEEK_MOE);
}
static void test_cache_slices_deepseek_moe(void **state) {
    (void)state;
    check_cache_slices(&DEEPSEEK_MOE);
}

/* The plan describes the full-form caches of GQA models and MLA's latent (not MLA's full form). */
static void test_plan_caches_qwen3(void **state) {
    (void)state;
    check_plan_caches(&QWEN3);
}
static void test_plan_caches_gpt_oss(void **state) {
    (void)state;
    check_plan_caches(&GPT_OSS);
}
static void test_plan_caches_gemma3(void **state) {
    (void)state;
    check_plan_caches(&GEMMA3);
}
static void test_plan_caches_deepseek_latent(void **state) {
    (void)state;
    check_plan_caches(&DEEPSEEK_LATENT);
}

/* A wait whose peer is late ends at the communicator's deadline with a message naming it, and the
 * request can still be completed afterwards (nothing left pending). Rank 0 joins the barrier only
 * after the others' deadline has passed. */
static void test_wait_times_out(void **state) {
    (void)state;
    kvc_comm late = g_comm;
    assert_int_equal(MPI_Comm_dup(g_comm.comm, &late.comm), MPI_SUCCESS);
    late.timeout_s = 0.2;
    MPI_Request req;
    if (g_comm.rank == 0) {
        const struct timespec pause = {.tv_sec = 0, .tv_nsec = 600 * 1000 * 1000};
        nanosleep(&pause, NULL);
        assert_int_equal(MPI_Ibarrier(late.comm, &req), MPI_SUCCESS);
        assert_int_equal(kvc_comm_wait(&g_comm, &req, "the late barrier"), KVC_OK);
    } else {
        assert_int_equal(MPI_Ibarrier(late.comm, &req), MPI_SUCCESS);
        assert_int_equal(kvc_comm_wait(&late, &req, "the late barrier"), KVC_EINTERNAL);
        assert_non_null(strstr(kvc_last_error(), "waited more than 0.2 s for the late barrier"));
        assert_int_equal(kvc_comm_wait(&g_comm, &req, "the late barrier"), KVC_OK);
    }
    MPI_Comm_free(&late.comm);
}

static int write_moe_checkpoint(void **state) {
    (void)state;
    kvc_test_write_deepseek_moe(20261205, g_moe_dir, sizeof g_moe_dir); /* the same bytes on every rank */
    kvc_test_write_falcon_h1_one_group(20261207, g_h1_dir, sizeof g_h1_dir);
    return 0;
}

static int remove_moe_checkpoint(void **state) {
    (void)state;
    kvc_test_remove_checkpoint(g_moe_dir);
    kvc_test_remove_checkpoint(g_h1_dir);
    return 0;
}

int main(int argc, char **argv) {
    if (kvc_comm_init(&argc, &argv, &g_comm) != KVC_OK) {
        fprintf(stderr, "test_dist_tp: %s\n", kvc_last_error());
        return 1;
    }
#define T(name)                                                                                                        \
    cmocka_unit_test(test_oracle_##name), cmocka_unit_test(test_deterministic_##name),                                 \
        cmocka_unit_test(test_cache_slices_##name)
    const struct CMUnitTest tests[] = {
        T(qwen3),
        T(gpt_oss),
        T(deepseek_full),
        T(deepseek_latent),
        T(gemma3),
        T(gemma2),
        T(phi3),
        T(granite),
        T(glm4),
        T(cohere),
#define S(name) cmocka_unit_test(test_oracle_##name), cmocka_unit_test(test_state_slices_##name)
        S(lfm2),
        S(lfm3),
        S(bamba),
        S(qwen3_next),
        S(mamba),
        S(falcon_mamba),
        S(jamba),
        S(falcon_h1),
        S(falcon_h1_gated),
        cmocka_unit_test(test_state_slices_falcon_h1_g1),
#undef S
        cmocka_unit_test(test_deterministic_bamba),
        cmocka_unit_test(test_oracle_olmo2),
        cmocka_unit_test(test_oracle_llama4),
        cmocka_unit_test(test_deterministic_qwen3_q8_0),
        cmocka_unit_test(test_quantized_qwen3_q8_0),
        cmocka_unit_test(test_quantized_qwen3_q4_0),
        cmocka_unit_test(test_deterministic_qwen3_bf16act),
        cmocka_unit_test(test_rounded_qwen3_bf16act),
        cmocka_unit_test(test_deterministic_deepseek_moe),
        cmocka_unit_test(test_cache_slices_deepseek_moe),
        cmocka_unit_test(test_plan_caches_qwen3),
        cmocka_unit_test(test_plan_caches_gpt_oss),
        cmocka_unit_test(test_plan_caches_deepseek_latent),
        cmocka_unit_test(test_plan_caches_gemma3),
        cmocka_unit_test(test_wait_times_out),
        cmocka_unit_test(test_oracle_deepseek_v2),
    };
#undef T
    const int failed = cmocka_run_group_tests(tests, write_moe_checkpoint, remove_moe_checkpoint);
    if (failed) kvc_comm_abort(&g_comm, 1); /* a peer may wait in a collective this rank left */
    kvc_comm_finalize(&g_comm);
    /* MPI cannot start twice in one process: a second start is refused by name, not an MPI abort (found by
     * fuzz_args, which runs `kvcache run --tp 2` twice in one process) */
    kvc_comm again;
    if (kvc_comm_init(&argc, &argv, &again) != KVC_EINVAL || !strstr(kvc_last_error(), "already finalized")) {
        fprintf(stderr, "test_dist_tp: a second kvc_comm_init after finalize was not refused: %s\n", kvc_last_error());
        return 1;
    }
    return 0;
}
