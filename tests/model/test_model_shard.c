/* Tensor-parallel shards without MPI (docs/distributed.md, "Sharding rules"): rank r of 2 and of 4
 * of each oracle model holds exactly its part of every split weight, read straight from the
 * safetensors: q/k/v and gate/up rows (KV heads replicated when the ranks exceed them), o/down
 * columns, MLA's kv_b rows and its latent projections whole, the row-parallel biases on rank 0
 * only (also DeepSeek's routed and shared experts and Qwen3-MoE's routed experts, per-module and fused,
 * from random checkpoints; Qwen3-MoE, Qwen2-MoE and Mixtral's hub layouts from their oracle checkpoints;
 * Gemma 3, and its text model under a multimodal checkpoint's prefixes, read as the plain checkpoint;
 * Phi-3's fused q/k/v and gate/up, GLM-4's fused gate/up, Cohere and Cohere 2; Phi, GPT-NeoX, GPT-2, OPT);
 * the state layers' fused projections and convs by runs (LFM2's channels, Bamba's heads and groups, Qwen3-Next's and
 * Qwen3.5's key heads, FalconMamba's and Jamba's Mamba-1 channels); a size that does not divide is refused naming it;
 * with q8_0 / q4_0 weights each shard holds the whole model's quantized blocks of its part. (The collectives are
 * tests/dist/'s.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "kvc_test_checkpoint.h"
#include "kvc_test_util.h"
#include "model/model_internal.h"

/* Row i of part equals row row0 + i of whole, columns [col0, col0 + part's cols), for every matrix. */
static void check_part(const kvc_wmat *part, const kvc_wmat *whole, int64_t row0, int64_t col0, const char *what) {
    assert_int_equal(part->count, whole->count);
    float *a = malloc((size_t)part->cols * sizeof *a), *b = malloc((size_t)whole->cols * sizeof *b);
    assert_true(a && b);
    for (int64_t e = 0; e < part->count; e++) {
        const kvc_wmat p = kvci_wmat_at(part, e), w = kvci_wmat_at(whole, e);
        for (int64_t i = 0; i < p.rows; i++) {
            kvci_wmat_row(&p, i, a);
            kvci_wmat_row(&w, row0 + i, b);
            if (memcmp(a, b + col0, (size_t)p.cols * sizeof *a) != 0)
                fail_msg("%s: matrix %lld row %lld is not the whole model's row %lld from column %lld", what,
                         (long long)e, (long long)i, (long long)(row0 + i), (long long)col0);
        }
    }
    free(a);
    free(b);
}

static void check_vec(const float *part, const float *whole, int64_t n, bool zero, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (part[i] != (zero ? 0.0f : whole[i]))
            fail_msg("%s[%lld] is %g, want %g", what, (long long)i, (double)part[i], zero ? 0.0 : (double)whole[i]);
}

static void check_layer(const kvc_model *s, const kvc_model *m, int64_t l, int64_t r) {
    const kvc_layer_weights *p = &s->layers[l], *w = &m->layers[l];
    const kvc_model_config *c = &s->cfg, *f = &m->cfg;
    const bool mla = f->family == KVC_FAMILY_DEEPSEEK_V3;
    const int64_t dq = mla ? f->qk_nope_head_dim + f->qk_rope_head_dim : f->head_dim;
    const int64_t dv = mla ? f->v_head_dim : f->head_dim, h0 = r * c->num_heads;
    const int64_t gq = f->attn_output_gate ? 2 : 1; /* MiniCPM5-MoE: each head's query, then its gate */
    check_part(p->wq.data ? &p->wq : &p->wqb, w->wq.data ? &w->wq : &w->wqb, h0 * gq * dq, 0, "q");
    if (p->bq) check_vec(p->bq, w->bq + h0 * gq * dq, c->num_heads * gq * dq, false, "q bias");
    check_part(&p->wo, &w->wo, 0, h0 * dv, "o_proj");
    if (p->bo) check_vec(p->bo, w->bo, f->hidden_size, r > 0, "o_proj bias");
    if (mla) {
        const int64_t kvb = f->qk_nope_head_dim + f->v_head_dim;
        check_vec(p->wkvb, w->wkvb + h0 * kvb * f->kv_lora_rank, c->num_heads * kvb * f->kv_lora_rank, false, "kv_b");
        check_part(&p->wkva, &w->wkva, 0, 0, "kv_a (whole)");
    } else {
        const int64_t kv0 = kvci_model_shard_kv_head0(f, r, s->tp.size), D = f->head_dim;
        check_part(&p->wk, &w->wk, kv0 * D, 0, "k_proj");
        check_part(&p->wv, &w->wv, kv0 * D, 0, "v_proj");
        if (p->q_norm_b) { /* Persimmon's one LayerNorm [D] with bias for every head: whole on every rank */
            check_vec(p->q_norm, w->q_norm, D, false, "q_norm (whole)");
            check_vec(p->q_norm_b, w->q_norm_b, D, false, "q_norm bias (whole)");
            check_vec(p->k_norm, w->k_norm, D, false, "k_norm (whole)");
            check_vec(p->k_norm_b, w->k_norm_b, D, false, "k_norm bias (whole)");
        } else if ((f->qk_norm && f->layer_norm) || f->qk_norm_whole) { /* Cohere's per head, OLMo 2's across them */
            check_vec(p->q_norm, w->q_norm + h0 * D, c->num_heads * D, false, "q_norm");
            check_vec(p->k_norm, w->k_norm + kv0 * D, c->num_kv_heads * D, false, "k_norm");
        }
    }
    if (p->sinks) check_vec(p->sinks, w->sinks + h0, c->num_heads, false, "sinks");
    const int64_t I = c->intermediate_size, Im = c->moe_intermediate_size;
    if (f->family == KVC_FAMILY_GPT_OSS) {
        check_part(&p->gu, &w->gu, r * 2 * I, 0, "gate_up (interleaved pairs)");
        check_part(&p->dn, &w->dn, 0, r * I, "experts down");
        check_vec(p->dn_b, w->dn_b, f->num_experts * f->hidden_size, r > 0, "experts down bias");
        check_part(&p->router_w, &w->router_w, 0, 0, "router (whole)");
    } else if (p->moe) {
        check_part(&p->ex_gate, &w->ex_gate, r * Im, 0, "experts gate");
        check_part(&p->ex_up, &w->ex_up, r * Im, 0, "experts up");
        check_part(&p->ex_down, &w->ex_down, 0, r * Im, "experts down");
        check_part(&p->sh_gate, &w->sh_gate, r * c->shared_expert_intermediate_size, 0, "shared gate");
        check_part(&p->sh_down, &w->sh_down, 0, r * c->shared_expert_intermediate_size, "shared down");
        check_part(&p->sh_scale, &w->sh_scale, 0, 0, "shared expert's sigmoid gate (whole)");
    } else {
        check_part(&p->w_gate, &w->w_gate, r * I, 0, "gate_proj");
        check_part(&p->w_up, &w->w_up, r * I, 0, "up_proj");
        check_part(&p->w_down, &w->w_down, 0, r * I, "down_proj");
    }
}

/* weights: the dtype of both the whole model and the shards (quantized: each shard quantizes its own
 * part, so a part starting at a multiple of 32 columns holds the whole model's blocks exactly). Ranks 2 and 4, those
 * that divide the heads (the codegen oracle's 6 heads, which straddle its 4 fused shards: 2 only). */
static void check_dir(const char *sub, const char *dir, kvc_wmat_dtype weights) {
    kvc_model *m = NULL;
    assert_int_equal(kvci_model_load_as(dir, weights, &m), KVC_OK);
    for (int64_t size = 2; size <= 4 && m->cfg.num_heads % size == 0; size *= 2)
        for (int64_t r = 0; r < size; r++) {
            const kvc_model_tp tp = {.rank = r, .size = size};
            kvc_model *s = NULL;
            if (kvci_model_load_tp(dir, &tp, weights, &s) != KVC_OK)
                fail_msg("%s rank %lld: %s", sub, (long long)r, kvc_last_error());
            assert_int_equal(s->cfg.num_heads * size, m->cfg.num_heads);
            for (int64_t l = 0; l < m->cfg.num_layers; l++) check_layer(s, m, l, r);
            if (m->alibi) /* each rank's query heads' slopes */
                check_vec(s->alibi, m->alibi + r * s->cfg.num_heads, s->cfg.num_heads, false, "alibi slopes");
            check_part(&s->lm_head, &m->lm_head, 0, 0, "lm_head (whole)");
            kvc_model_destroy(s);
        }
    kvc_model_destroy(m);
}

static void check_family(const char *sub, kvc_wmat_dtype weights) {
    char dir[1024];
    kvc_test_oracle_dir(sub, dir, sizeof dir);
    check_dir(sub, dir, weights);
}

static void test_qwen3(void **state) {
    (void)state;
    check_family("qwen3", KVC_WMAT_CHECKPOINT);
}

static void test_qwen3_bf16(void **state) {
    (void)state;
    check_family("qwen3/bf16", KVC_WMAT_CHECKPOINT);
}

/* qwen3's o/down parts start at multiples of 64 columns: every quantized block is the whole model's. */
static void test_qwen3_quantized(void **state) {
    (void)state;
    check_family("qwen3", KVC_WMAT_Q8_0);
    check_family("qwen3", KVC_WMAT_Q4_0);
}

static void test_gpt_oss(void **state) {
    (void)state;
    check_family("gpt_oss", KVC_WMAT_CHECKPOINT);
}

static void test_deepseek_v3(void **state) {
    (void)state;
    check_family("deepseek_v3", KVC_WMAT_CHECKPOINT);
}

/* A random checkpoint's routed experts per module (layer 1) and fused (layer 2), read back as written. */
static void check_written_moe(const char *dir, uint64_t seed) {
    kvc_model_config cfg;
    kvc_model *written = NULL, *loaded = NULL; /* the loader reads back what the checkpoint holds */
    assert_int_equal(kvc_model_config_load(dir, &cfg), KVC_OK);
    assert_int_equal(kvc_model_create_random(&cfg, seed, &written), KVC_OK);
    assert_int_equal(kvc_model_load(dir, &loaded), KVC_OK);
    assert_true(loaded->layers[1].moe && loaded->layers[2].moe);
    for (int64_t l = 0; l < cfg.num_layers; l++) check_layer(loaded, written, l, 0);
    kvc_model_destroy(written);
    kvc_model_destroy(loaded);
    check_dir(cfg.model_type, dir, KVC_WMAT_CHECKPOINT);
    kvc_test_remove_checkpoint(dir);
}

/* one shared expert besides the routed ones */
static void test_deepseek_moe(void **state) {
    (void)state;
    char dir[512];
    kvc_test_write_deepseek_moe(7, dir, sizeof dir);
    check_written_moe(dir, 7);
}

static void test_qwen3_moe(void **state) {
    (void)state;
    check_family("qwen3_moe", KVC_WMAT_CHECKPOINT); /* the hub layout, a dense layer 0 */
    char dir[512];
    kvc_test_write_qwen3_moe(8, dir, sizeof dir);
    check_written_moe(dir, 8);
}

static void test_mixtral(void **state) {
    (void)state;
    check_family("mixtral", KVC_WMAT_CHECKPOINT); /* block_sparse_moe w1 / w3 / w2 */
}

static void test_qwen2_moe(void **state) {
    (void)state;
    check_family("qwen2_moe", KVC_WMAT_CHECKPOINT); /* a shared expert split as the routed ones, its gate whole */
}

/* Granite MoE Shared: each rank's gate and up rows of every expert read in place from input_linear [E, 2I, H], its
 * columns of output_linear, the shared MLP's rows of its input_linear [2Ish, H]; OLMoE: the whole-projection q/k
 * norms split with the heads, the experts as Qwen3-MoE's; GLM-4.5: the correction bias whole */
static void test_granitemoe_olmoe(void **state) {
    (void)state;
    check_family("granitemoeshared", KVC_WMAT_CHECKPOINT);
    check_family("granitemoe_swa", KVC_WMAT_CHECKPOINT); /* its sinks split with the heads */
    check_family("flint", KVC_WMAT_CHECKPOINT);
    check_family("hy_v3", KVC_WMAT_CHECKPOINT);
    check_family("cohere2_moe", KVC_WMAT_CHECKPOINT);
    check_family("olmoe", KVC_WMAT_CHECKPOINT);
    check_family("glm4_moe", KVC_WMAT_CHECKPOINT); /* DeepSeek-V3's router whole, experts and shared expert split */
}

/* Gemma 3 (its norms whole), and a multimodal checkpoint's text model under transformers' module prefix
 * (model.language_model.) and the hub's (language_model.model.): the very weights of the plain
 * checkpoint, whole and in every shard. */
static void test_gemma3(void **state) {
    (void)state;
    check_family("gemma3", KVC_WMAT_CHECKPOINT);
    static const char *const prefixes[] = {NULL, "model.language_model.", "language_model.model."};
    kvc_model *m[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        char dir[512];
        kvc_test_write_gemma3(9, prefixes[i], dir, sizeof dir);
        assert_int_equal(kvc_model_load(dir, &m[i]), KVC_OK);
        if (i > 0) {
            assert_int_equal(m[i]->arena_bytes, m[0]->arena_bytes);
            assert_memory_equal(m[i]->arena, m[0]->arena, (size_t)m[0]->arena_bytes);
            check_dir("gemma3", dir, KVC_WMAT_CHECKPOINT);
        }
        kvc_test_remove_checkpoint(dir);
    }
    for (int i = 0; i < 3; i++) kvc_model_destroy(m[i]);
}

/* The olmo_hybrid oracle's checkpoint with its norms under transformers' own module names (input_layernorm,
 * post_attention_layernorm: a save of the state dict, which transformers loads as well) in a fresh directory dir[cap]:
 * its header rewritten, the data as it is. */
static void write_olmo_hybrid_module_names(char *dir, size_t cap) {
    char src[1024], path[1200];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/kvc_olmoh_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    kvc_test_oracle_dir("olmo_hybrid", src, sizeof src);
    snprintf(path, sizeof path, "%s/config.json", src);
    char *text = kvc_test_read_text(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    assert_true(f && fwrite(text, 1, strlen(text), f) == strlen(text) && fclose(f) == 0);
    free(text);
    snprintf(path, sizeof path, "%s/model.safetensors", src);
    f = fopen(path, "rb");
    assert_true(f && fseek(f, 0, SEEK_END) == 0);
    const long n = ftell(f);
    uint8_t *bytes = malloc((size_t)n);
    assert_true(bytes && fseek(f, 0, SEEK_SET) == 0 && fread(bytes, 1, (size_t)n, f) == (size_t)n && fclose(f) == 0);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)bytes[i] << (8 * i);
    cJSON *h = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)hl), *out = cJSON_CreateObject();
    assert_non_null(h);
    for (const cJSON *e = h->child; e; e = e->next) {
        char name[256];
        const char *at = strstr(e->string, "attention_layer_norm"), *ff = strstr(e->string, "feedforward_layer_norm");
        if (at || ff)
            snprintf(name, sizeof name, "%.*s%s%s", (int)((at ? at : ff) - e->string), e->string,
                     at ? "input_layernorm" : "post_attention_layernorm", (at ? at : ff) + (at ? 20 : 22));
        else
            snprintf(name, sizeof name, "%s", e->string);
        cJSON_AddItemToObject(out, name, cJSON_Duplicate(e, true));
    }
    char *header = cJSON_PrintUnformatted(out);
    const uint64_t len = strlen(header);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(len >> (8 * i));
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    f = fopen(path, "wb");
    assert_true(f && fwrite(le, 1, 8, f) == 8 && fwrite(header, 1, len, f) == len);
    assert_true(fwrite(bytes + 8 + hl, 1, (size_t)(n - 8 - (long)hl), f) == (size_t)(n - 8 - (long)hl) &&
                fclose(f) == 0);
    free(header), free(bytes);
    cJSON_Delete(h), cJSON_Delete(out);
}

/* OLMo Hybrid's norms under either name transformers reads (ckpt_names.c's LOAD_RULES): the very weights. */
static void test_olmo_hybrid_names(void **state) {
    (void)state;
    char dir[512], src[1024];
    write_olmo_hybrid_module_names(dir, sizeof dir);
    kvc_test_oracle_dir("olmo_hybrid", src, sizeof src);
    kvc_model *a = NULL, *b = NULL;
    assert_int_equal(kvc_model_load(src, &a), KVC_OK);
    assert_int_equal(kvc_model_load(dir, &b), KVC_OK);
    assert_int_equal(a->arena_bytes, b->arena_bytes);
    assert_memory_equal(a->arena, b->arena, (size_t)a->arena_bytes);
    kvc_model_destroy(a), kvc_model_destroy(b);
    kvc_test_remove_checkpoint(dir);
}

/* Rows of part, stacked, equal the whole's rows of each run (start[i], len[i]): the fused projections of the state
 * layers, each segment split by heads (written from the configs, apart from the loader's rule). */
typedef struct runs {
    int n;
    int64_t start[5], len[5];
} runs;

static void check_runs(const kvc_wmat *part, const kvc_wmat *whole, const runs *u, const char *what) {
    float *a = malloc((size_t)part->cols * sizeof *a), *b = malloc((size_t)whole->cols * sizeof *b);
    assert_true(a && b && part->cols == whole->cols);
    int64_t at = 0;
    for (int i = 0; i < u->n; i++)
        for (int64_t j = 0; j < u->len[i]; j++, at++) {
            kvci_wmat_row(part, at, a);
            kvci_wmat_row(whole, u->start[i] + j, b);
            if (memcmp(a, b, (size_t)part->cols * sizeof *a) != 0)
                fail_msg("%s: row %lld is not the whole model's row %lld", what, (long long)at,
                         (long long)(u->start[i] + j));
        }
    assert_int_equal(at, part->rows);
    free(a);
    free(b);
}

/* The same for f32 rows of `width` floats (conv taps, biases). */
static void check_vec_runs(const float *part, const float *whole, int64_t width, const runs *u, const char *what) {
    int64_t at = 0;
    for (int i = 0; i < u->n; i++, at += u->len[i - 1])
        check_vec(part + at * width, whole + u->start[i] * width, u->len[i] * width, false, what);
}

/* A state layer l of rank r's shard s against the whole model m. */
static void check_state_layer(const kvc_model *s, const kvc_model *m, int64_t l, int64_t r) {
    const kvc_layer_weights *p = &s->layers[l], *w = &m->layers[l];
    const kvc_model_config *c = &s->cfg, *f = &m->cfg;
    const int64_t H = f->hidden_size;
    if (f->layer_conv[l]) { /* B | C | x, each the rank's channels */
        const int64_t W = H / s->tp.size, L = f->conv_kernel;
        const runs in = {3, {r * W, H + r * W, 2 * H + r * W}, {W, W, W}}, ch = {1, {r * W}, {W}};
        check_runs(&p->conv_in, &w->conv_in, &in, "conv in_proj");
        if (p->conv_in_b) check_vec_runs(p->conv_in_b, w->conv_in_b, 1, &in, "conv in_proj bias");
        check_vec_runs(p->conv_w, w->conv_w, L, &ch, "conv taps");
        if (p->conv_b) check_vec_runs(p->conv_b, w->conv_b, 1, &ch, "conv bias");
        check_part(&p->wo, &w->wo, 0, r * W, "conv out_proj");
        if (p->bo) check_vec(p->bo, w->bo, H, r > 0, "conv out_proj bias");
    } else if (f->layer_mamba[l]) { /* z | x | B | C | dt: heads, groups (replicated when fewer than the ranks) */
        const int64_t P = f->mamba_head_dim, N = f->mamba_d_state, nh = f->mamba_heads, G = f->mamba_groups;
        const int64_t h = c->mamba_heads, I = nh * P, Gr = c->mamba_groups, g0 = r * G / s->tp.size;
        const runs in = {5,
                         {r * h * P, I + r * h * P, 2 * I + g0 * N, 2 * I + (G + g0) * N, 2 * I + 2 * G * N + r * h},
                         {h * P, h * P, Gr * N, Gr * N, h}};
        const runs xbc = {3, {r * h * P, I + g0 * N, I + (G + g0) * N}, {h * P, Gr * N, Gr * N}};
        const runs heads = {1, {r * h}, {h}};
        check_runs(&p->conv_in, &w->conv_in, &in, "mamba in_proj");
        if (p->conv_in_b) check_vec_runs(p->conv_in_b, w->conv_in_b, 1, &in, "mamba in_proj bias");
        check_vec_runs(p->conv_w, w->conv_w, f->conv_kernel, &xbc, "mamba conv1d");
        if (p->conv_b) check_vec_runs(p->conv_b, w->conv_b, 1, &xbc, "mamba conv1d bias");
        check_vec_runs(p->ssm_dt_bias, w->ssm_dt_bias, 1, &heads, "dt_bias");
        check_vec_runs(p->ssm_a_log, w->ssm_a_log, 1, &heads, "A_log");
        check_vec_runs(p->ssm_d, w->ssm_d, 1, &heads, "D");
        check_vec_runs(p->ssm_norm, w->ssm_norm, P, &heads, "gated norm");
        check_part(&p->wo, &w->wo, 0, r * h * P, "mamba out_proj");
        if (p->bo) check_vec(p->bo, w->bo, H, r > 0, "mamba out_proj bias");
    } else if (f->layer_mamba1[l]) { /* Mamba-1: x | z, the conv, dt_proj, A_log, D by channels; x_proj by columns */
        const int64_t I = f->mamba_inner, Ir = c->mamba_inner, c0 = r * Ir;
        const runs in = {2, {c0, I + c0}, {Ir, Ir}}, ch = {1, {c0}, {Ir}};
        check_runs(&p->conv_in, &w->conv_in, &in, "mamba1 in_proj");
        if (p->conv_in_b) check_vec_runs(p->conv_in_b, w->conv_in_b, 1, &in, "mamba1 in_proj bias");
        check_vec_runs(p->conv_w, w->conv_w, f->conv_kernel, &ch, "mamba1 conv1d");
        if (p->conv_b) check_vec_runs(p->conv_b, w->conv_b, 1, &ch, "mamba1 conv1d bias");
        check_part(&p->ssm_x_proj, &w->ssm_x_proj, 0, c0, "x_proj");
        check_part(&p->ssm_dt_proj, &w->ssm_dt_proj, c0, 0, "dt_proj");
        check_vec_runs(p->ssm_dt_bias, w->ssm_dt_bias, 1, &ch, "dt_proj bias");
        check_vec_runs(p->ssm_a_log, w->ssm_a_log, f->mamba_d_state, &ch, "mamba1 A_log");
        check_vec_runs(p->ssm_d, w->ssm_d, 1, &ch, "mamba1 D");
        check_part(&p->wo, &w->wo, 0, c0, "mamba1 out_proj");
        if (p->bo) check_vec(p->bo, w->bo, H, r > 0, "mamba1 out_proj bias");
    } else if (f->layer_gdn[l]) { /* key heads with their value heads */
        const int64_t nk = c->gdn_k_heads, nv = c->gdn_v_heads, dk = f->gdn_k_dim, dv = f->gdn_v_dim;
        const int64_t K = f->gdn_k_heads * dk, k0 = r * nk * dk, v0 = r * nv * dv;
        const runs qkv = {3, {k0, K + k0, 2 * K + v0}, {nk * dk, nk * dk, nv * dv}}, vh = {1, {r * nv}, {nv}};
        if (f->gdn_split_proj) { /* Qwen3.5: q | k | v, z, b, a apart */
            const runs z = {1, {v0}, {nv * dv}};
            check_runs(&p->gdn_qkvz, &w->gdn_qkvz, &qkv, "in_proj_qkv");
            check_runs(&p->gdn_z, &w->gdn_z, &z, "in_proj_z");
            check_runs(&p->gdn_ba, &w->gdn_ba, &vh, "in_proj_b");
            check_runs(&p->gdn_a, &w->gdn_a, &vh, "in_proj_a");
        } else { /* grouped per key head: one range */
            check_part(&p->gdn_qkvz, &w->gdn_qkvz, r * nk * (2 * dk + 2 * (nv / nk) * dv), 0, "in_proj_qkvz");
            check_part(&p->gdn_ba, &w->gdn_ba, r * 2 * nv, 0, "in_proj_ba");
        }
        check_vec_runs(p->gdn_conv, w->gdn_conv, f->gdn_conv_kernel, &qkv, "gdn conv1d");
        check_vec_runs(p->gdn_dt_bias, w->gdn_dt_bias, 1, &vh, "gdn dt_bias");
        check_vec_runs(p->gdn_a_log, w->gdn_a_log, 1, &vh, "gdn A_log");
        check_vec(p->gdn_norm, w->gdn_norm, dv, false, "gdn norm (whole)");
        check_part(&p->wo, &w->wo, 0, v0, "gdn out_proj");
    }
}

/* The state layers of the oracles: every rank of 2 and 4 (those that divide the key heads) holds its runs (OLMo
 * Hybrid's read across the parts its checkpoint cuts them into). */
static void test_state_layers(void **state) {
    (void)state;
    const char *subs[] = {"lfm2",         "lfm3",         "bamba", "qwen3_next",
                          "qwen3_5_text", "falcon_mamba", "jamba", "olmo_hybrid"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        char dir[1024];
        kvc_test_oracle_dir(subs[i], dir, sizeof dir);
        kvc_model *m = NULL;
        assert_int_equal(kvc_model_load(dir, &m), KVC_OK);
        for (int64_t size = 2; size <= 4; size *= 2)
            for (int64_t r = 0; r < size; r++) {
                const kvc_model_tp tp = {.rank = r, .size = size};
                kvc_model *s = NULL;
                if (kvci_model_load_tp(dir, &tp, KVC_WMAT_CHECKPOINT, &s) != KVC_OK) {
                    assert_true(size == 4 && m->cfg.gdn_k_heads == 2); /* 2 key heads: refused on 4 */
                    assert_non_null(strstr(kvc_last_error(), "linear_num_key_heads 2"));
                    continue;
                }
                for (int64_t l = 0; l < m->cfg.num_layers; l++) check_state_layer(s, m, l, r);
                kvc_model_destroy(s);
            }
        kvc_model_destroy(m);
    }
}

static void test_refusals(void **state) {
    (void)state;
    char dir[1024];
    kvc_test_oracle_dir("qwen3", dir, sizeof dir);
    kvc_model *s = NULL;
    const kvc_model_tp three = {.rank = 0, .size = 3}, past = {.rank = 2, .size = 2};
    assert_int_equal(kvci_model_load_tp(dir, &three, KVC_WMAT_CHECKPOINT, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "tensor parallelism 3 does not divide num_attention_heads 4"));
    assert_null(s);
    assert_int_equal(kvci_model_load_tp(dir, &past, KVC_WMAT_CHECKPOINT, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "rank 2 outside [0, 2)"));
    const kvc_model_tp eight = {.rank = 0, .size = 8}; /* 2 KV heads: replicated on 4 ranks, but 4 query heads */
    assert_int_equal(kvci_model_load_tp(dir, &eight, KVC_WMAT_CHECKPOINT, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "num_attention_heads 4"));
    const kvc_model_tp two = {.rank = 0, .size = 2}; /* Gemma 4 (gemma4_moe: one attention shape per kind) */
    kvc_test_oracle_dir("gemma4_moe", dir, sizeof dir);
    assert_int_equal(kvci_model_load_tp(dir, &two, KVC_WMAT_CHECKPOINT, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "tensor parallelism 2 is not supported for gemma4_text"));
    assert_null(s);
    kvc_test_oracle_dir("kimi_linear", dir, sizeof dir); /* transformers replicates its attention: no rule here */
    assert_int_equal(kvci_model_load_tp(dir, &two, KVC_WMAT_CHECKPOINT, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "Kimi Delta Attention layers have no shard rule"));
    assert_null(s);
    kvc_test_oracle_dir("minimax", dir, sizeof dir); /* its lightning norm spans every head */
    assert_int_equal(kvci_model_load_tp(dir, &two, KVC_WMAT_CHECKPOINT, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "lightning attention layers have no shard rule"));
    assert_null(s);
    kvc_test_oracle_dir("rwkv", dir, sizeof dir); /* the token shifts read whole LayerNorm outputs */
    assert_int_equal(kvci_model_load_tp(dir, &two, KVC_WMAT_CHECKPOINT, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "RWKV time and channel mixing have no shard rule"));
    assert_null(s);
    kvc_test_oracle_dir("recurrent_gemma", dir, sizeof dir); /* its RG-LRU gates mix a block's channels */
    assert_int_equal(kvci_model_load_tp(dir, &two, KVC_WMAT_CHECKPOINT, &s), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "RG-LRU recurrent blocks have no shard rule"));
    assert_null(s);
}

/* OLMo 2: its q / k norms span every head, their weights split with the heads as q and k (KV heads
 * replicated on 4 ranks). */
static void test_olmo2(void **state) {
    (void)state;
    check_family("olmo2", KVC_WMAT_CHECKPOINT);
}

/* Phi-3's fused qkv_proj and gate_up_proj: each rank reads its q, k, v and gate, up rows in place (KV heads
 * replicated on 4 ranks); with and without partial rotary and longrope */
static void test_phi3(void **state) {
    (void)state;
    check_family("phi3", KVC_WMAT_CHECKPOINT);
    check_family("phi3_longrope", KVC_WMAT_CHECKPOINT);
}

/* GLM-4's fused gate_up_proj (gate, up rows read in place per rank), its q/k/v biases and sandwich norms;
 * Cohere's LayerNorms, o_proj bias (rank 0's) and q / k norms per head (split with the heads), Cohere 2's
 * sliding layers */
static void test_glm4_cohere(void **state) {
    (void)state;
    check_family("glm4", KVC_WMAT_CHECKPOINT);
    check_family("cohere", KVC_WMAT_CHECKPOINT);
    check_family("cohere2", KVC_WMAT_CHECKPOINT);
}

/* GLM: GLM-4's fused gate_up_proj and q/k/v biases in pre-norm blocks; Seed-OSS: q/k/v and MLP biases;
 * EXAONE 4.0: post-norms after the sums, per-head q/k norms, sliding and unrotated full layers; StarCoder2: the
 * plain MLP's c_fc split by rows with its bias, c_proj by columns (bias on rank 0), the norms' biases whole;
 * Ministral: sliding and full layers by layer_types; Ministral 3: YaRN and the query scale (per query head, so
 * any split of the heads) */
static void test_glm_seed_oss(void **state) {
    (void)state;
    check_family("glm", KVC_WMAT_CHECKPOINT);
    check_family("seed_oss", KVC_WMAT_CHECKPOINT);
    check_family("exaone4", KVC_WMAT_CHECKPOINT);
    check_family("starcoder2", KVC_WMAT_CHECKPOINT);
    check_family("ministral", KVC_WMAT_CHECKPOINT);
    check_family("ministral3", KVC_WMAT_CHECKPOINT);
}

/* The classic types: Phi's q/k/v/dense and fc1/fc2 under their names, the head's bias whole; GPT-NeoX's
 * query_key_value read per head block by block (parallel and sequential blocks); GPT-2's Conv1D weights [in, out]
 * split along their stored columns (rows of the operand) and its c_attn's q/k/v columns per rank, the learned
 * positions whole; OPT's names under model.decoder.; GPT-BigCode's c_attn rows per rank, its one KV head replicated
 * (multi_query) or per head as GPT-NeoX's; Falcon's query_key_value grouped by KV head, a rank's query heads
 * possibly part of one group (with alibi: each rank's heads' slopes); GPT-J's head bias whole; Nemotron's LayerNorm1P
 * weights and biases whole. */
static void test_classic(void **state) {
    (void)state;
    check_family("phi", KVC_WMAT_CHECKPOINT);
    check_family("phi_qk", KVC_WMAT_CHECKPOINT);
    check_family("persimmon", KVC_WMAT_CHECKPOINT);
    check_family("cwm", KVC_WMAT_CHECKPOINT);
    check_family("jais2", KVC_WMAT_CHECKPOINT);
    check_family("iquestcoder", KVC_WMAT_CHECKPOINT);
    check_family("hyperclovax", KVC_WMAT_CHECKPOINT);
    check_family("xglm", KVC_WMAT_CHECKPOINT);
    check_family("openai_gpt", KVC_WMAT_CHECKPOINT);
    check_family("ctrl", KVC_WMAT_CHECKPOINT);
    check_family("gpt_neox_japanese", KVC_WMAT_CHECKPOINT);
    check_family("gpt_neox", KVC_WMAT_CHECKPOINT);
    check_family("gpt_neox_seq", KVC_WMAT_CHECKPOINT);
    check_family("gpt2", KVC_WMAT_CHECKPOINT);
    check_family("opt", KVC_WMAT_CHECKPOINT);
    check_family("gpt_bigcode", KVC_WMAT_CHECKPOINT);
    check_family("gpt_bigcode_mha", KVC_WMAT_CHECKPOINT);
    check_family("falcon", KVC_WMAT_CHECKPOINT);
    check_family("falcon_new", KVC_WMAT_CHECKPOINT);
    check_family("falcon_alibi", KVC_WMAT_CHECKPOINT);
    check_family("gptj", KVC_WMAT_CHECKPOINT);
    check_family("nemotron", KVC_WMAT_CHECKPOINT);
    check_family("gpt_neo", KVC_WMAT_CHECKPOINT);
    check_family("codegen", KVC_WMAT_CHECKPOINT);
    check_family("vaultgemma", KVC_WMAT_CHECKPOINT);
    check_family("flex_olmo", KVC_WMAT_CHECKPOINT);
    check_family("hunyuan_v1_dense", KVC_WMAT_CHECKPOINT);
    check_family("biogpt", KVC_WMAT_CHECKPOINT);
    check_family("dots1", KVC_WMAT_CHECKPOINT);
    check_family("solar_open", KVC_WMAT_CHECKPOINT);
    check_family("sarvam_moe", KVC_WMAT_CHECKPOINT); /* q, k, v rows of the fused query_key_value split apart */
    check_family("param2moe", KVC_WMAT_CHECKPOINT);
    check_family("minicpm5_moe", KVC_WMAT_CHECKPOINT); /* each head's query and gate (and biases) with the head */
    check_family("kolibri1", KVC_WMAT_CHECKPOINT);     /* its router's correction bias whole */
    check_family("hunyuan_v1_moe", KVC_WMAT_CHECKPOINT);
    check_family("minimax_m2", KVC_WMAT_CHECKPOINT);
    check_family("afmoe", KVC_WMAT_CHECKPOINT); /* its gate_proj split by heads as q_proj */
    check_family("ergo", KVC_WMAT_CHECKPOINT);  /* its [in, out] shared MLP and [E, in, out] experts split */
    check_family("exaone", KVC_WMAT_CHECKPOINT);
    check_family("internlm3", KVC_WMAT_CHECKPOINT);
    check_family("apertus", KVC_WMAT_CHECKPOINT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_qwen3_bf16),
        cmocka_unit_test(test_qwen3_quantized),
        cmocka_unit_test(test_gpt_oss),
        cmocka_unit_test(test_deepseek_v3),
        cmocka_unit_test(test_deepseek_moe),
        cmocka_unit_test(test_qwen3_moe),
        cmocka_unit_test(test_mixtral),
        cmocka_unit_test(test_qwen2_moe),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_olmo_hybrid_names),
        cmocka_unit_test(test_phi3),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_state_layers),
        cmocka_unit_test(test_olmo2),
        cmocka_unit_test(test_glm4_cohere),
        cmocka_unit_test(test_glm_seed_oss),
        cmocka_unit_test(test_granitemoe_olmoe),
        cmocka_unit_test(test_classic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
