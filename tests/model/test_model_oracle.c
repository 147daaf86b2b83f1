/* Oracle: Hugging Face transformers reference data (tests/data/oracle/, see its README). Each model directory is
 * loaded from safetensors; the prompt logits of every position (one no-cache forward) and the greedy continuations
 * (runner modes 0, 1, 2 and, for MLA, 3 over both cache forms; under ASan one of modes 0-2 per directory, see
 * greedy_mode_checked) must match: ids exactly, logits to 1e-4 relative with a 2e-5 absolute floor (logits here
 * reach about 10; the floor is 1e-4 relative at 0.2). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "kvc_test_checkpoint.h"
#include "kvc_test_oracle.h"
#include "kvc_test_util.h"
#include "kvcache/plan.h"
#include "kvcache/runner.h"
#include "model/gemm_bf16.h"
#include "model/model_internal.h"

/* One no-cache forward over prompt b with the logits of every position. */
static void check_prompt_logits(const kvc_test_oracle *o, int64_t b, const int32_t *ids, const char *sub) {
    const int64_t T = o->lens[b];
    float *lg = malloc((size_t)(T * o->V) * sizeof(float));
    assert_non_null(lg);
    kvc_test_prompt_logits(o->m, ids, T, lg);
    const cJSON *ref = cJSON_GetObjectItem(o->prompts[b], "prompt_logits");
    assert_int_equal(cJSON_GetArraySize(ref), T);
    char what[128];
    snprintf(what, sizeof what, "%s prompt %lld prompt_logits", sub, (long long)b);
    for (int64_t i = 0; i < T; i++)
        kvc_test_oracle_compare_row(lg + i * o->V, cJSON_GetArrayItem(ref, (int)i), o->V, what, i);
    free(lg);
}

/* Whether run_dir's dirs_run-th directory checks greedy mode i of {recompute, contiguous, paged}: every
 * mode in the Release build; under AddressSanitizer one mode per directory in turn, so that every
 * family's code and every mode still run instrumented within the sanitizer suite's time (the
 * Release run checks the numbers of every pair). */
static bool greedy_mode_checked(int i, int64_t dirs_run) {
#ifdef KVC_TEST_ASAN
    return dirs_run % 3 == i;
#else
    (void)i;
    (void)dirs_run;
    return true;
#endif
}

static void run_dir(const char *sub) {
    static int64_t dirs_run;
    kvc_test_oracle o;
    kvc_test_oracle_open(sub, &o);
    int64_t t = 0;
    for (int64_t b = 0; b < o.n; b++) {
        check_prompt_logits(&o, b, o.ids + t, sub);
        t += o.lens[b];
    }
    const kvc_runner_mode modes[] = {KVC_RUNNER_RECOMPUTE, KVC_RUNNER_CONTIGUOUS, KVC_RUNNER_PAGED};
    for (int i = 0; i < 3; i++)
        if (greedy_mode_checked(i, dirs_run))
            kvc_test_oracle_check_greedy(&o, modes[i], modes[i] == KVC_RUNNER_PAGED ? 16 : 0, false, sub);
    dirs_run++;
    const kvc_model_family fam = kvc_model_config_of(o.m)->family;
    if (fam == KVC_FAMILY_DEEPSEEK_V3 || fam == KVC_FAMILY_HY_V4) {
        kvc_test_oracle_check_greedy(&o, KVC_RUNNER_MLA_LATENT, 0, false, sub);
        kvc_test_oracle_check_greedy(&o, KVC_RUNNER_MLA_LATENT, 16, true, sub);
    }
    kvc_test_oracle_close(&o);
}

/* Reduced-precision caches against f32 (kvc_runner_compare_dtype), greedy
 * over the oracle prompts in mode 2 (and mode 3 for MLA), int8 / fp8 with
 * their scales per token computed on write. The bounds:
 * - f32 against itself: no difference at all (the comparison adds nothing);
 * - any dtype: a step whose f32 top-2 gap exceeds twice its largest logit
 *   error cannot change its argmax (each logit moved by at most the error),
 *   so no flip there; and without such near ties the free-running greedy
 *   tokens equal f32's and the oracle's (the runs stay teacher-forced);
 * - KL(f32 || dtype) <= err^2 / 2 at every step: with q_i = p_i e^{d_i} / Z
 *   and |d_i| <= err, KL = log E_p[e^d] - E_p[d] <= (2 err)^2 / 8 by
 *   Hoeffding's lemma;
 * - the largest logit error <= 64 u, u the storage's relative rounding:
 *   2^-11 (f16), 2^-8 (bf16), 2^-4 (fp8 e4m3), 2^-3 (fp8 e5m2) of the
 *   element, and for int8 half a step, 1/254 of the token's largest
 *   magnitude (its scale is amax / 127). The error is linear in the storage
 *   rounding times a gain of the model; the measured gains are 7-38 on qwen3
 *   and DeepSeek for every dtype and 15-29 on gpt_oss for f16 / bf16, so 64
 *   leaves a margin of at least 1.7. gpt_oss with 8-bit caches is not held
 *   to it: its measured gains are 57 (e5m2), 63 (e4m3) and 914 (int8), the
 *   error jumps rather than scales: a router's top-2 choice flips (a whole
 *   expert's output), as docs/runtime.md shows. */
static void check_dtypes(const char *sub) {
    kvc_test_oracle o;
    kvc_test_oracle_open(sub, &o);
    int32_t *ref = malloc((size_t)(o.n * o.N) * sizeof *ref);
    assert_non_null(ref);
    for (int64_t b = 0; b < o.n; b++)
        for (int64_t i = 0; i < o.N; i++)
            ref[b * o.N + i] = cJSON_GetArrayItem(cJSON_GetObjectItem(o.prompts[b], "greedy_ids"), (int)i)->valueint;
    const bool mla = kvc_model_config_of(o.m)->family == KVC_FAMILY_DEEPSEEK_V3;
    const kvc_dtype dts[] = {KVC_DTYPE_F32, KVC_DTYPE_F16,    KVC_DTYPE_BF16,
                             KVC_DTYPE_I8,  KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    for (int mode = 2; mode <= (mla ? 3 : 2); mode++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            kvc_runner_params p = kvc_runner_default_params();
            p.mode = (kvc_runner_mode)mode;
            p.max_new_tokens = o.N;
            kvc_dtype_compare c;
            if (kvc_runner_compare_dtype(o.m, &p, o.ids, o.lens, o.n, dts[d], ref, &c) != KVC_OK)
                fail_msg("%s %s: %s", sub, kvc_dtype_name(dts[d]), kvc_last_error());
            const char *dn = kvc_dtype_name(dts[d]);
            if (dts[d] == KVC_DTYPE_F32) {
                assert_true(c.max_logit_err == 0.0 && c.kl_max == 0.0);
                assert_int_equal(c.same_as_f32, c.tokens);
            }
            if (c.flips_beyond_error != 0)
                fail_msg("%s mode %d %s: %lld argmax flips where the top-2 gap exceeded twice the error", sub, mode, dn,
                         (long long)c.flips_beyond_error);
            if (c.near_ties == 0 && (c.same_as_f32 != c.tokens || c.same_as_ref != c.tokens))
                fail_msg("%s mode %d %s: no near ties, yet greedy tokens differ (f32 %lld, HF %lld of %lld)", sub, mode,
                         dn, (long long)c.same_as_f32, (long long)c.same_as_ref, (long long)c.tokens);
            if (c.kl_max > 0.5 * c.max_logit_err * c.max_logit_err * (1.0 + 1e-6) + 1e-12)
                fail_msg("%s mode %d %s: KL %g above err^2/2 = %g", sub, mode, dn, c.kl_max,
                         0.5 * c.max_logit_err * c.max_logit_err);
            const double u = dts[d] == KVC_DTYPE_F16      ? ldexp(1.0, -11)
                             : dts[d] == KVC_DTYPE_BF16   ? ldexp(1.0, -8)
                             : dts[d] == KVC_DTYPE_I8     ? 1.0 / 254.0
                             : dts[d] == KVC_DTYPE_F8E4M3 ? ldexp(1.0, -4)
                                                          : ldexp(1.0, -3);
            const bool eight_bit = kvc_model_kv_quantised(dts[d]);
            const bool gpt_oss = kvc_model_config_of(o.m)->family == KVC_FAMILY_GPT_OSS;
            if (dts[d] != KVC_DTYPE_F32 && !(eight_bit && gpt_oss) && c.max_logit_err > 64.0 * u)
                fail_msg("%s mode %d %s: largest logit error %g above 64 u = %g", sub, mode, dn, c.max_logit_err,
                         64.0 * u);
        }
    free(ref);
    kvc_test_oracle_close(&o);
}

static void test_dtypes_qwen3(void **state) {
    (void)state;
    check_dtypes("qwen3");
}
static void test_dtypes_gpt_oss(void **state) {
    (void)state;
    check_dtypes("gpt_oss");
}
static void test_dtypes_deepseek_v3(void **state) {
    (void)state;
    check_dtypes("deepseek_v3");
}

static void test_qwen3(void **state) {
    (void)state;
    run_dir("qwen3");
}
#ifdef KVC_TEST_ASAN
/* The first prompt's logits of `sub` (no greedy run). */
static void run_first_prompt(const char *sub) {
    kvc_test_oracle o;
    kvc_test_oracle_open(sub, &o);
    check_prompt_logits(&o, 0, o.ids, sub);
    kvc_test_oracle_close(&o);
}
#endif

/* The checkpoint `sub` keeps its matrices in `dtype` (packed) and meets the oracle on every GEMM kernel of
 * this CPU that takes that dtype (bf16: all; f16: the fma family). Under AddressSanitizer the portable kernel
 * (one element at a time through a widening call: half of the sanitizer run's time here) checks the first
 * prompt's logits only, its one loop for every shape; the Release build checks every prompt and mode. */
static void run_kept(const char *sub, kvc_wmat_dtype dtype) {
    char dir[1024];
    kvc_test_oracle_dir(sub, dir, sizeof dir);
    kvc_model *m = NULL;
    if (kvc_model_load(dir, &m) != KVC_OK) fail_msg("load %s: %s", dir, kvc_last_error());
    assert_int_equal(m->layers[0].wq.dtype, dtype);
    assert_int_equal(m->lm_head.dtype, dtype);
    kvc_model_destroy(m);
    const kvc_gemm_bf16_kernel *all[KVC_GEMM_BF16_MAX_KERNELS];
    const int n = kvci_gemm_bf16_kernels(all);
    for (int k = 0; k < n; k++) {
        if (dtype == KVC_WMAT_F16 && !all[k]->block_f16) continue;
        if (kvci_gemm_bf16_force(all[k]->name) != KVC_OK) fail_msg("%s", kvc_last_error());
#ifdef KVC_TEST_ASAN
        if (strcmp(all[k]->name, "portable") == 0) {
            run_first_prompt(sub);
            continue;
        }
#endif
        run_dir(sub);
    }
    assert_int_equal(kvci_gemm_bf16_force(NULL), KVC_OK);
}
static void test_qwen3_bf16(void **state) {
    (void)state;
    run_kept("qwen3/bf16", KVC_WMAT_BF16);
}
static void test_qwen3_f16(void **state) {
    (void)state;
    run_kept("qwen3/f16", KVC_WMAT_F16);
    char dir[1024];
    kvc_test_oracle_dir("qwen3/f16", dir, sizeof dir);
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_load_weights(dir, "f16", &m), KVC_EINVAL); /* never rounded to by name */
    assert_non_null(strstr(kvc_last_error(), "kept from an f16 checkpoint"));
    kvc_test_oracle_dir("qwen3/bf16", dir, sizeof dir); /* nor by the internal loader */
    assert_int_equal(kvci_model_load_as(dir, KVC_WMAT_F16, &m), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "never rounded to"));
}
static void test_gpt_oss(void **state) {
    (void)state;
    run_dir("gpt_oss");
}
static void test_deepseek_v3(void **state) {
    (void)state;
    run_dir("deepseek_v3");
}
/* GLM-4.7-Flash: DeepSeek-V3's MLA (modes 0-3) with GLM-4.5's grouped sigmoid router on the layers mlp_layer_types
 * calls sparse (0 and 2; layer 1 dense) */
static void test_glm4_moe_lite(void **state) {
    (void)state;
    run_dir("glm4_moe_lite");
}

/* Sarvam-105B-like (sarvam_mla, run by DeepseekV3ForCausalLM): a plain q_proj, YaRN's mscale, layer 0 dense, one
 * routing group; also mode 3 over both cache forms (run_dir) */
static void test_sarvam_mla(void **state) {
    (void)state;
    run_dir("sarvam_mla");
}
/* GLM-5-like (glm_moe_dsa): DeepSeek-V3's layers with DeepSeek sparse attention, index_topk 6 below most positions of
 * the data (prompts of 5, 23 and 40 ids, 8 new tokens), layer 1 sharing layer 0's choice; modes 0-3 (run_dir) */
static void test_glm_moe_dsa(void **state) {
    (void)state;
    run_dir("glm_moe_dsa");
}
/* HY V4-like (hy_v4): GLM-5's sparse attention (index_topk 6, the indexer rotating its last channels, layer 2 sharing
 * layer 1's choice) with sinks and a sigmoid output gate per head, 2 hyper-connection streams, layer 0 dense, clamped
 * routed experts (swiglu_limit 0.8); modes 0-3 (run_dir) */
static void test_hy_v4(void **state) {
    (void)state;
    run_dir("hy_v4");
}
/* DeepSeek-V3.2-like (deepseek_v32): DeepSeek-V3's layers with DeepSeek sparse attention on every layer (index_topk
 * 6, the indexer's RoPE on half-split lanes), modes 0-3 (run_dir) */
static void test_deepseek_v32(void **state) {
    (void)state;
    run_dir("deepseek_v32");
}
/* A.X-K2-like (axk2): V3.2's layers with q_gate_proj's queries and output gates, gated norms (rank 4) before
 * attention and before the MoE layers' experts, a router over all experts (n_group null), modes 0-3 (run_dir) */
static void test_axk2(void **state) {
    (void)state;
    run_dir("axk2");
}
/* LongCat-Flash-like: 2 decoder layers of two MLA sub-layers (q and latent scaled), each sub-layer's MLP, the shortcut
 * MoE (softmax router with correction bias over 6 experts and 2 zero experts) added after the odd sub-layer; also mode
 * 3 over both cache forms (run_dir) */
static void test_longcat_flash(void **state) {
    (void)state;
    run_dir("longcat_flash");
}
/* A.X-K1-like: DeepSeek-V3's layers (sparse, dense, sparse by mlp_layer_types) with post_mlp_layernorm on the MoE
 * layers' output; also mode 3 over both cache forms (run_dir) */
static void test_axk1(void **state) {
    (void)state;
    run_dir("axk1");
    char dir[1024]; /* the released form: no correction bias, loaded as zeros */
    kvc_test_write_axk1_released(3, dir, sizeof dir);
    kvc_model *m = NULL;
    if (kvc_model_load(dir, &m) != KVC_OK) fail_msg("axk1 without e_score_correction_bias: %s", kvc_last_error());
    for (int64_t l = 0; l < kvc_model_config_of(m)->num_layers; l++)
        for (int64_t e = 0; m->layers[l].moe && e < kvc_model_config_of(m)->n_routed_experts; e++)
            assert_true(m->layers[l].gate_corr[e] == 0.0f);
    kvc_model_destroy(m);
    kvc_test_remove_checkpoint(dir);
}
/* K-EXAONE: EXAONE 4.0's attention (sliding layers 0-2 with RoPE, layer 3 full NoPE) in pre-norm blocks, DeepSeek-V3's
 * grouped sigmoid router on the layers mlp_layer_types calls sparse (1 and 3), its correction bias beside the gate */
static void test_exaone_moe(void **state) {
    (void)state;
    run_dir("exaone_moe");
}
/* the softmax-routed MoE families: Qwen3-MoE (a dense layer, no renormalisation), Mixtral (sliding
 * window, renormalised top-2) and Qwen2-MoE */
static void test_qwen3_moe(void **state) {
    (void)state;
    run_dir("qwen3_moe");
}
static void test_mixtral(void **state) {
    (void)state;
    run_dir("mixtral");
}
/* q/k/v biases, dense and MoE layers alternating, a shared expert scaled by its sigmoid gate, sliding layers */
static void test_qwen2_moe(void **state) {
    (void)state;
    run_dir("qwen2_moe");
}

/* Gemma 3: sliding and full layers with their own ropes (linear on the full layers), a window shorter
 * than two prompts, norms applied as 1 + w around both sub-layers, q/k norms, GeGLU, embeddings
 * scaled by sqrt(hidden_size), query_pre_attn_scalar's softmax scale */
static void test_gemma3(void **state) {
    (void)state;
    run_dir("gemma3");
}

/* Gemma 2: sliding (even) and full (odd) layers with one rope, a window shorter than two prompts, the attention
 * scores soft-capped at 5 (the operator's logit_softcap) and the logits at 3, norms as 1 + w around both
 * sub-layers, no q/k norms, GeGLU, embeddings scaled by sqrt(hidden_size), query_pre_attn_scalar's scale */
static void test_gemma2(void **state) {
    (void)state;
    run_dir("gemma2");
}

/* A checkpoint sub/variant holding the oracle sub's weights in another layout (multimodal: the text model under
 * language_model.model., the vision tower's and projector's tensors left unread; Qwen-VL's flat: the hub's earlier
 * config and names), its text model of model_type text_type: the same logits as sub's, bit for bit (transformers
 * gives both the same logits too: make_oracle.py checks it). */
static void check_variant(const char *sub, const char *variant, const char *text_type) {
    kvc_test_oracle o;
    kvc_test_oracle_open(sub, &o);
    char dir[1024], mm_sub[64];
    snprintf(mm_sub, sizeof mm_sub, "%s/%s", sub, variant);
    kvc_test_oracle_dir(mm_sub, dir, sizeof dir);
    kvc_model *mm = NULL;
    if (kvc_model_load(dir, &mm) != KVC_OK) fail_msg("load %s: %s", dir, kvc_last_error());
    assert_string_equal(kvc_model_config_of(mm)->model_type, text_type);
    int64_t t = 0;
    for (int64_t b = 0; b < o.n; b++) {
        const size_t n = (size_t)(o.lens[b] * o.V);
        float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
        assert_non_null(want), assert_non_null(got);
        kvc_test_prompt_logits(o.m, o.ids + t, o.lens[b], want);
        kvc_test_prompt_logits(mm, o.ids + t, o.lens[b], got);
        assert_memory_equal(got, want, n * sizeof(float));
        free(want), free(got);
        t += o.lens[b];
    }
    kvc_model_destroy(mm);
    kvc_test_oracle_close(&o);
}

static void check_multimodal(const char *sub, const char *text_type) { check_variant(sub, "multimodal", text_type); }

/* Gemma 4, E2B-like: sliding / full layers with their own ropes (the full layers' proportional) and head dims (8,
 * 16), the last two KV-shared (each attending over an earlier layer's keys and values, no k/v projections or caches
 * of its own) with MLPs twice as wide, per-layer inputs, q/k/v norms, layer scalars, tied embeddings */
static void test_gemma4(void **state) {
    (void)state;
    run_dir("gemma4");
}

/* `kvcache plan` and the runtime's cache description of oracle sub (layers sliding, full, then two KV-shared) agree:
 * the same layers keep caches (the KV-shared ones none, not listed by the plan), each with the same kind, window,
 * heads and dims (the sliding layer's head dim 8, the full layer's full_dim). */
static void check_plan_agrees(const char *sub, int64_t full_dim) {
    kvc_test_oracle o;
    kvc_test_oracle_open(sub, &o);
    char dir[1024], path[1100];
    kvc_test_oracle_dir(sub, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = kvc_test_read_text(path);
    kvc_plan_options po = kvc_plan_default_options();
    kvc_model_plan *p = NULL;
    if (kvc_model_plan_create(text, strlen(text), &po, &p) != KVC_OK) fail_msg("plan: %s", kvc_last_error());
    kvc_model_cache_info *ci = NULL;
    assert_int_equal(kvc_model_cache_info_build(o.m, false, KVC_DTYPE_F32, 16, &ci), KVC_OK);
    int32_t listed = 0;
    for (int32_t i = 0; i < ci->n_layer_infos; i++) {
        const kvc_layer_cache_info *li = &ci->layer_infos[i];
        const kvc_plan_layer *pl = NULL;
        for (int32_t j = 0; j < p->n_layers; j++)
            if (p->layers[j].layer == li->layer_idx) pl = &p->layers[j];
        if (li->n_caches == 0) { /* layers 2 and 3 read layers 0 and 1 */
            assert_true(li->layer_idx >= 2 && pl == NULL);
            continue;
        }
        listed++;
        assert_non_null(pl);
        assert_int_equal(pl->n_caches, li->n_caches);
        assert_int_equal(pl->attn_type, li->caches[0].attn_type);
        assert_int_equal(pl->sliding_window, li->caches[0].sliding_window);
        for (int32_t k = 0; k < li->n_caches; k++)
            assert_true(pl->caches[k].num_head == li->caches[k].num_head && pl->caches[k].dim == li->caches[k].dim[0] &&
                        pl->caches[k].bytes_per_token == li->caches[k].num_head * li->caches[k].dim[0] * 4);
        assert_int_equal(li->caches[0].dim[0], li->layer_idx == 1 ? full_dim : 8); /* the full layer's own */
    }
    assert_int_equal(listed, p->n_layers);
    assert_int_equal(listed, 2);
    kvc_model_cache_info_destroy(ci);
    kvc_model_plan_destroy(p);
    free(text);
    kvc_test_oracle_close(&o);
}

static void test_gemma4_plan_agrees(void **state) {
    (void)state;
    check_plan_agrees("gemma4", 16);
}

/* Gemma 3n, E2B-like: Gemma 4's attention (sliding / full, each with its rope, the last two layers KV-shared) and
 * per-layer inputs (a table of 448 rows below the vocabulary's 512, as E2B / E4B) inside four AltUp copies of the
 * hidden state, LAuReL beside the attention, the gate activations of a sliding and a shared full layer sparse, final
 * logits soft-capped, tied embeddings. The sparse cut keeps activations a few percent above their cutoff (their
 * difference loses digits): transformers' own logits are up to 1.5e-5 from its float64 ones, the runtime's up to
 * 1.9e-5 (on the other side), so the absolute floor is 5e-5 here (the relative 1e-4 stays). */
static void test_gemma3n(void **state) {
    (void)state;
    kvc_test_oracle_abs_floor = 5e-5;
    run_dir("gemma3n");
    kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;
    check_plan_agrees("gemma3n", 8);
}

/* Gemma 4 Unified, 12B-like: Gemma 4's layers without per-layer inputs or experts (sliding / full of their own head
 * dims, the last two KV-shared, layer scalars), final logits soft-capped, untied head */
static void test_gemma4_unified(void **state) {
    (void)state;
    run_dir("gemma4_unified");
    check_plan_agrees("gemma4_unified", 16);
}

/* Gemma4UnifiedForConditionalGeneration's checkpoint holding the gemma4_unified weights */
static void test_gemma4_unified_multimodal(void **state) {
    (void)state;
    check_multimodal("gemma4_unified", "gemma4_unified_text");
}

/* Gemma3nForConditionalGeneration's checkpoint layout holding the gemma3n weights (logits equal bit for bit) */
static void test_gemma3n_multimodal(void **state) {
    (void)state;
    check_multimodal("gemma3n", "gemma3n_text");
}

/* Gemma4ForConditionalGeneration's checkpoint holding the gemma4 weights */
static void test_gemma4_multimodal(void **state) {
    (void)state;
    check_multimodal("gemma4", "gemma4_text");
}

/* Gemma 4, 31B-like: no per-layer inputs or KV sharing, the full layer's values from k_proj (attention_k_eq_v) in
 * its own shape (one KV head of 32 against two of 16), final logits soft-capped, untied head */
static void test_gemma4_dense(void **state) {
    (void)state;
    run_dir("gemma4_dense");
}

/* Gemma 4, 26B-A4B-like: every layer's routed GeGLU experts beside its MLP (enable_moe_block), routed from the
 * residual stream with per-expert scales, each half normed before the sum */
static void test_gemma4_moe(void **state) {
    (void)state;
    run_dir("gemma4_moe");
}

/* Gemma3ForConditionalGeneration's checkpoint holding the gemma3 weights */
static void test_gemma3_multimodal(void **state) {
    (void)state;
    check_multimodal("gemma3", "gemma3_text");
}

/* Phi-3-mini-like: the fused qkv_proj / gate_up_proj split at load, GQA, a window of 8 on every layer, untied */
static void test_phi3(void **state) {
    (void)state;
    run_dir("phi3");
}

/* Phi-4-mini-like: partial_rotary_factor 0.75, longrope (its short factors: every position here is below
 * original_max_position_embeddings 64, for transformers and for the runtime's workspaces alike) with its
 * attention factor, tied embeddings, GQA. A workspace of 65 positions (beyond 64) rotates every token with
 * the long factors, whatever its positions: the first prompt's logits then are transformers' with the long
 * factors (long_factor_prompt_logits), and a workspace of 64 positions keeps the short ones. */
static void test_phi3_longrope(void **state) {
    (void)state;
    run_dir("phi3_longrope");
    kvc_test_oracle o;
    kvc_test_oracle_open("phi3_longrope", &o);
    const int64_t T = o.lens[0];
    float *lg = malloc((size_t)(T * o.V) * sizeof(float));
    assert_non_null(lg);
    const char *keys[2] = {"prompt_logits", "long_factor_prompt_logits"};
    for (int i = 0; i < 2; i++) {
        kvc_test_prompt_logits_kv(o.m, o.ids, T, 64 + i, lg);
        const cJSON *ref = cJSON_GetObjectItem(o.prompts[0], keys[i]);
        assert_int_equal(cJSON_GetArraySize(ref), T);
        for (int64_t t = 0; t < T; t++)
            kvc_test_oracle_compare_row(lg + t * o.V, cJSON_GetArrayItem(ref, (int)t), o.V, keys[i], t);
    }
    free(lg);
    kvc_test_oracle_close(&o);
}

/* OLMo 2-like: post-norm blocks (no input norm, the attention and MLP outputs normalised before their residual
 * add), q_norm / k_norm over the whole q / k projection before RoPE, GQA, untied */
static void test_olmo2(void **state) {
    (void)state;
    run_dir("olmo2");
}

/* OLMo 3-like: OLMo 2's blocks, three sliding layers (window 8) then a full one, yarn on the full layer and the
 * default rope at another theta on the sliding ones */
static void test_olmo3(void **state) {
    (void)state;
    run_dir("olmo3");
}

/* Granite 3-like: embedding_multiplier 6, residual_multiplier 0.22, attention_multiplier 0.1 as the softmax
 * scale, logits divided by 3; GQA, tied */
static void test_granite(void **state) {
    (void)state;
    run_dir("granite");
}

/* SmolLM3-like: layer 1 of 4 leaves q and k unrotated (no_rope_layers [1, 0, 1, 1]), theta 2e6, GQA, tied */
static void test_smollm3(void **state) {
    (void)state;
    run_dir("smollm3");
}

/* Gemma (1)-like: norms as 1 + w, embeddings times sqrt(48), GeGLU, head_dim^-1/2, GQA, tied */
static void test_gemma(void **state) {
    (void)state;
    run_dir("gemma");
}

/* GLM-4-like: sandwich norms (post_self_attn / post_attention / post_mlp), fused gate_up_proj, q/k/v biases,
 * the first 8 of 16 channels of each head rotated in adjacent pairs, GQA, untied */
static void test_glm4(void **state) {
    (void)state;
    run_dir("glm4");
}

/* GLM-4-9B-chat-hf-like: GLM-4's attention and fused gate_up_proj in plain pre-norm blocks */
static void test_glm(void **state) {
    (void)state;
    run_dir("glm");
}

/* Seed-OSS-like: q/k/v biases without an o_proj bias (attention_out_bias), MLP biases, GQA, untied */
static void test_seed_oss(void **state) {
    (void)state;
    run_dir("seed_oss");
}

/* EXAONE 4.0-like: post-norm blocks, q/k norms per head, three sliding layers (window 8, rotated) then a full
 * one without RoPE, GQA, untied */
static void test_exaone4(void **state) {
    (void)state;
    run_dir("exaone4");
}

/* StarCoder2-like: LayerNorms with bias, a plain gelu_tanh MLP (c_fc, c_proj) with biases, q/k/v/o biases,
 * every layer sliding (window 8), GQA, tied */
static void test_starcoder2(void **state) {
    (void)state;
    run_dir("starcoder2");
}

/* Ministral-like: layer_types sliding, full, sliding, full (window 8), GQA, untied, no biases */
static void test_ministral(void **state) {
    (void)state;
    run_dir("ministral");
}

/* Ministral 3's text model-like: YaRN (factor 16 over 16 positions), Llama 4's query scale by position (beta
 * 0.1 per 16 positions), GQA, untied, no window */
static void test_ministral3(void **state) {
    (void)state;
    run_dir("ministral3");
}

/* Mistral3ForConditionalGeneration's checkpoint (Ministral 3's hub class, untied at its top level) holding the
 * ministral3 weights */
/* Llama 4's text model: chunked local attention of 8 positions on layers 0, 1 and 3 (RoPE on adjacent pairs with
 * llama3 scaling, L2 q/k norms after it), layer 2 NoPE and full with temperature-tuned queries (floor_scale 8), a
 * sigmoid top-1 MoE scaling the expert's input plus a shared expert on layers 1 and 3, a dense MLP on 0 and 2;
 * also paged in blocks of 4 (chunks of two blocks: the blocks before a query's chunk released) and of 3 (a
 * chunk straddling blocks) */
static void test_llama4(void **state) {
    (void)state;
    run_dir("llama4");
    kvc_test_oracle o;
    kvc_test_oracle_open("llama4", &o);
    kvc_test_oracle_check_greedy(&o, KVC_RUNNER_PAGED, 4, false, "llama4");
    kvc_test_oracle_check_greedy(&o, KVC_RUNNER_PAGED, 3, false, "llama4");
    kvc_test_oracle_close(&o);
}

static void test_llama4_multimodal(void **state) {
    (void)state;
    check_multimodal("llama4", "llama4_text");
}

static void test_ministral3_multimodal(void **state) {
    (void)state;
    check_multimodal("ministral3", "ministral3");
}

/* Helium-like: RoPE on adjacent pairs, q/k/v biases without an o_proj bias, MLP biases, eps 1e-8, GQA, untied */
static void test_helium(void **state) {
    (void)state;
    run_dir("helium");
}

/* Arcee (AFM)-like: an ungated MLP down(relu2(up(x))), q/k/v/o and MLP biases, GQA, untied */
static void test_arcee(void **state) {
    (void)state;
    run_dir("arcee");
}

/* Apertus-like: per-head RMS q/k norms, an ungated MLP down(xielu(up(x))) with other xIELU scalars in every layer
 * (alpha_p, alpha_n, beta and eps all randomised), q/k/v/o biases, GQA, llama3 rope, untied */
static void test_apertus(void **state) {
    (void)state;
    run_dir("apertus");
}

/* StableLM 2-like: LayerNorms with bias, RoPE on a quarter of each head, q/k/v biases, GQA, untied; and with
 * parallel blocks, RoPE on half of each head, no biases, tied */
static void test_stablelm(void **state) {
    (void)state;
    run_dir("stablelm");
    run_dir("stablelm_parallel");
    run_dir("stablelm2_qk"); /* StableLM 2 12B: per-head q/k LayerNorm modules */
}

/* OLMo 1-like: LayerNorms without weight or bias, q/k/v clamped to +-2 (clip_qkv), q/k/v/o biases, GQA, untied */
static void test_olmo(void **state) {
    (void)state;
    run_dir("olmo");
}

/* ERNIE 4.5-like: RoPE on adjacent pairs, q/k/v/o and MLP biases, GQA, tied */
static void test_ernie4_5(void **state) {
    (void)state;
    run_dir("ernie4_5");
}

/* OLMoE-like: OLMo 2's whole-projection q/k norms in pre-norm blocks, q/k clamped to +-1.5 after them and v after
 * its projection (clip_qkv), q/k/v/o biases, GQA, 2 layers of 8 softmax-routed experts, top-2 not renormalised */
static void test_olmoe(void **state) {
    (void)state;
    run_dir("olmoe");
}

/* Granite 3.0 MoE-like: Granite's four multipliers, q/k/v/o biases, GQA, tied, 2 layers of 8 experts stored fused
 * (input_linear / output_linear), top-2 softmax over the two largest logits; and Granite MoE Shared-like: other
 * multipliers, untied, 6 experts, top-3, a shared MLP of width 32 */
static void test_granitemoe(void **state) {
    (void)state;
    run_dir("granitemoe");
    run_dir("granitemoeshared");
}

/* GLM-4.5-like: RoPE half-split over half of each head (head_dim 24), q/k/v biases, per-head q/k norms, GQA, layer 0
 * dense, layers 1-2 DeepSeek-V3's grouped sigmoid router (random correction bias) over 8 experts in 2 groups, top-2,
 * renormalised, times 2.5, plus a shared expert */
static void test_glm4_moe(void **state) {
    (void)state;
    run_dir("glm4_moe");
}

/* Sarvam-MoE and Param2-MoE, run by transformers as GLM-4.5 and saved under their original names (word_embeddings,
 * attention.query_key_value [q | k | v], attention.dense, query/key_layernorm, mlp.gate.expert_bias): whole heads
 * rotated, per-head q/k norms; Sarvam's q/k/v biases, layer 0 dense, 8 experts in 2 groups, top-2, x 2.5, one shared
 * expert; Param2's layers 0-1 dense, top-3 not renormalised, two shared experts, tied */
static void test_sarvam_param2(void **state) {
    (void)state;
    run_dir("sarvam_moe");
    run_dir("param2moe");
}

/* MiniCPM5-MoE-like: q_proj holds each head's query and gate (output x sigmoid(gate)), q/k/v/o biases, whole heads
 * rotated; mlp_layer_types sparse, dense, sparse; the grouped sigmoid router over 8 experts in 2 groups, top-2, x 3.66,
 * a shared expert */
static void test_minicpm5_moe(void **state) {
    (void)state;
    run_dir("minicpm5_moe");
}

/* Kolibri-1-like: EXAONE 4.0's attention (q/k norms; layers sliding over 8 keys, full unrotated, sliding) in GLM-4's
 * sandwich blocks; on every layer the top-2 of logit + random correction bias over 8 experts, weighted by the logits'
 * sigmoids, not renormalised, plus a shared MLP */
static void test_kolibri1(void **state) {
    (void)state;
    run_dir("kolibri1");
}

/* ERNIE-4.5-21B-A3B-like: pairwise RoPE, GQA, tied, 4 layers: 0 and 3 dense (moe_layer_end_index 2), 1-2 the softmax
 * router choosing by probability plus a random correction bias over 8 experts, top-3, weights over max(sum,
 * moe_norm_min), plus a shared expert */
static void test_ernie4_5_moe(void **state) {
    (void)state;
    run_dir("ernie4_5_moe");
}

/* Phi-3.5-MoE-like: LayerNorms with bias, q/k/v/o biases, the head's bias, GQA, untied, 3 layers of 8 experts stored
 * as Mixtral's (block_sparse_moe), SparseMixer's two experts with router_jitter_noise 0.3 */
static void test_phimoe(void **state) {
    (void)state;
    run_dir("phimoe");
}

/* DBRX-like: LayerNorms without bias, q/k/v fused in Wqkv and clamped to +-1.5, GQA, untied, 3 layers of 8 experts
 * stored flat (w1 / v1 / w2 [E * I, H], w2 transposed), top-2 softmax, the weights over their sum */
static void test_dbrx(void **state) {
    (void)state;
    run_dir("dbrx");
}

/* NanoChat-like: weightless RMSNorms (the embeddings' too), q/k normalised after RoPE turned the other way, relu2
 * MLP fc1 / fc2, GQA, logits soft-capped at 15, untied */
static void test_nanochat(void **state) {
    (void)state;
    run_dir("nanochat");
}

/* JetMoE-like: a mixture of attention heads (2 of 4 query/output experts per token over 2 shared KV heads of 24) and a
 * MoE MLP (2 of 4), each with its bias, Granite MoE's router, the final norm's eps 1e-5 (the layers' 1e-6), tied */
static void test_jetmoe(void **state) {
    (void)state;
    run_dir("jetmoe");
}

/* Youtu-LLM-like: DeepSeek-V3's MLA (q LoRA, interleaved RoPE) with every layer's dense SwiGLU MLP, tied; also mode 3
 * over both cache forms (run_dir) */
static void test_youtu(void **state) {
    (void)state;
    run_dir("youtu");
}

/* MiniCPM3-like: DeepSeek-V2's MLA with half-split RoPE, dense SwiGLU layers, embeddings x scale_emb, sub-layer outputs
 * x scale_depth / sqrt(layers), the last hidden state / (hidden / dim_model_base), untied; also mode 3 (run_dir) */
static void test_minicpm3(void **state) {
    (void)state;
    run_dir("minicpm3");
}

/* AFMoE-like (Trinity): per-head q/k norms, the output gated by sigmoid(gate_proj x), sandwich norms, layers [sliding,
 * full, sliding] over 8 keys with RoPE on the sliding ones only, a dense first layer, then 8 experts chosen by sigmoid
 * scores plus expert_bias, top-2 renormalised times route_scale 2.5, one shared expert, mup_enabled, untied */
static void test_afmoe(void **state) {
    (void)state;
    run_dir("afmoe");
}

/* MiMo-V2-Flash-like: per-layer attention shapes (1 KV head on the full layers 0 and 3, 2 with sinks on the sliding
 * layers 1-2 over 8 keys), q/k head dim 24 and values of 16 times attention_value_scale 0.707, each kind its own
 * rope over 8 channels, q/k/v biases, a dense first layer, then DeepSeek-V3's grouped sigmoid router over 8 experts
 * (2 groups, top-2, times 2.5) without shared experts, untied */
static void test_mimo_v2_flash(void **state) {
    (void)state;
    run_dir("mimo_v2_flash");
}

/* Laguna-like: per-layer query heads [4, 2, 6] over 2 KV heads of 16, per-head q/k norms, the output times
 * softplus(g_proj x) per head, layers [full, sliding, full] over 8 keys, RoPE over half of the full layers' heads and
 * all of the sliding one's, a dense first layer, then 8 experts by sigmoid scores plus a correction bias, top-2
 * renormalised, times 2.5, plus a shared expert, untied */
static void test_laguna(void **state) {
    (void)state;
    run_dir("laguna");
}

/* Mellum-like: Qwen3-MoE's attention (per-head q/k norms, GQA 4/2 of 16), layers [sliding, full, sliding] over 8 keys,
 * each kind its own rope (theta 5e5 / 1e4), the softmax router over 8 experts (top-2 renormalised) on layers 0 and
 * 2, a dense MLP on layer 1, untied */
static void test_mellum(void **state) {
    (void)state;
    run_dir("mellum");
}

/* DiffLlama-like: differential attention over 8 heads of 16 and 4 KV heads (the value halves and the head pairs
 * cross the key groups), q/k/v/o biases, 3 layers (each its own lambda_init), untied */
static void test_diffllama(void **state) {
    (void)state;
    run_dir("diffllama");
}

/* Cohere Compass text-like: Cohere 2's parallel blocks, layers [sliding, full, sliding] over 8 keys, RoPE half-split
 * at theta 5e4 on the sliding layers and none on the full one (its rope entry null), logit_scale 0.5, tied */
static void test_cohere_compass_text(void **state) {
    (void)state;
    run_dir("cohere_compass_text");
}

/* ModernBERT decoder-like: LayerNormed embeddings, layer 0's attention unnormed, layers [full, sliding, sliding,
 * full] over 8 keys with ropes 160000 / 10000, GeGLU (erf), LayerNorms with biases, the head LN(gelu(dense x)) with
 * the decoder's bias, tied */
static void test_modernbert_decoder(void **state) {
    (void)state;
    run_dir("modernbert_decoder");
}

/* BitNet-like without a quantization_config: Llama's layers with RMSNorms of the attention output and of
 * relu2(gate) * up before their projections, GQA 4/2, untied */
static void test_bitnet(void **state) {
    (void)state;
    run_dir("bitnet");
}

/* Phi-2-like: one LayerNorm with bias feeding attention and MLP side by side, RoPE on half of each head, q/k/v/dense
 * and fc1/fc2 biases, gelu_new, the head with a bias, GQA, untied */
static void test_phi(void **state) {
    (void)state;
    run_dir("phi");
}

/* Phi with qk_layernorm: Phi's blocks with Persimmon's q/k LayerNorms with bias shared by the heads, GQA, 2 layers */
static void test_phi_qk(void **state) {
    (void)state;
    run_dir("phi_qk");
}

/* HyperCLOVA-X-SEED-like: Granite's multipliers (logits times logits_scaling 3) with Peri-LN (post_norm1 / post_norm2
 * on each sub-layer's output before the residual multiplier), GQA */
static void test_hyperclovax(void **state) {
    (void)state;
    run_dir("hyperclovax");
}

/* IQuest-Coder-like: LlamaForCausalLM with IQuestCoderConfig, q/k/v/o and MLP biases, head_dim 24, GQA */
static void test_iquestcoder(void **state) {
    (void)state;
    run_dir("iquestcoder");
}

/* Jais-2-like: Llama's attention with LayerNorms with bias, an ungated relu2 MLP, every bias but the head's, GQA */
static void test_jais2(void **state) {
    (void)state;
    run_dir("jais2");
}

/* CWM-like: Llama without attention biases, layers full, sliding x 3 (window 8), full, llama3 rope */
static void test_cwm(void **state) {
    (void)state;
    run_dir("cwm");
}

/* Granite SWA-like: Granite's multipliers with per-head sinks, layer 0 full and 1-3 sliding (window 8), layer 1
 * unrotated and 2-3 at a RoPE base of their own (layer_rope_theta); Granite MoE SWA-like: Granite MoE Shared's
 * experts and shared MLP with sinks, its full layer unrotated, its sliding ones at another base */
static void test_granite_swa(void **state) {
    (void)state;
    run_dir("granite_swa");
    run_dir("granitemoe_swa");
}

/* Flint-like: Qwen3-MoE's attention with sinks (checkpoint name softmax_offset), layers 0, 1 and 3 full and
 * unrotated, 2 sliding (window 8) and rotated, the dense MLP on layers 0-1, then 6 experts top-3 by sigmoid,
 * renormalised, plus an ungated shared expert */
static void test_flint(void **state) {
    (void)state;
    run_dir("flint");
}

/* Hy3-like: per-head q/k norms, GQA, layer 0 dense, 1-2 six experts top-3 by the sigmoid router with its correction
 * bias, renormalised, times 2.826, plus a shared expert (checkpoint names mlp.router.gate, mlp.expert_bias,
 * mlp.shared_mlp) */
static void test_hy_v3(void **state) {
    (void)state;
    run_dir("hy_v3");
}

/* Cohere 2 MoE-like: parallel LayerNorm blocks, RoPE on pairs, biases, layer 0 dense (its own width), full and rotated
 * (force_rope), then sliding, full unrotated, sliding (window 8); 6 experts top-2 by the softmax of the top logits,
 * a shared expert averaged with them; and with RMSNorms, sigmoid scores renormalised, two shared experts summed */
static void test_cohere2_moe(void **state) {
    (void)state;
    run_dir("cohere2_moe");
    run_dir("cohere2_moe_sigmoid");
}

/* Ergo-like: fused qkv in its framework's names, q/k norms, RoPE pairs on the sliding layers, the full one NoPE with
 * its logits times global_attention_scale; sandwich norms with per-dimension residual gates; layer 0 a dense relu2
 * MLP, then 8 relu2 experts (stored [E, in, out]) each RMS-normed, DeepSeek-V3's one-group router, a normed shared
 * MLP (stored [in, out]) */
/* Beam-like: Qwen3-MoE's attention with a gate per channel plus a bias per head, sliding layers with RoPE and full
 * ones without (their queries scaled by position), sandwich norms, depth-scaled residual adds, DeepSeek-V3's grouped
 * router without shared experts, soft-capped logits */
static void test_beam(void **state) {
    (void)state;
    run_dir("beam");
}
static void test_ergo(void **state) {
    (void)state;
    run_dir("ergo");
}

/* Persimmon-like: LayerNorms with bias, q/k/v fused per head, q/k LayerNorms with bias shared by the heads, RoPE on
 * half of each head, relu2 MLP, every bias but the head's, untied */
static void test_persimmon(void **state) {
    (void)state;
    run_dir("persimmon");
}

/* BERT-like (BertLMHeadModel, is_decoder true): word + token type 0 + learned position rows LayerNormed, post-norm
 * layers with biases, gelu, the head's dense + gelu + LayerNorm, the tied decoder with its own bias */
static void test_bert(void **state) {
    (void)state;
    run_dir("bert");
}

/* RoBERTa-like: BERT's model with positions from pad_token_id + 1 (row 2 on), one token type, gelu_new in the MLP
 * and GELU by erf in the head's transform, eps 1e-5, untied head */
static void test_roberta(void **state) {
    (void)state;
    run_dir("roberta");
}

/* ERNIE-like with use_task_id: BERT's model plus task type 0's row after the positions', relu in the MLP and the
 * head's transform */
static void test_ernie(void **state) {
    (void)state;
    run_dir("ernie");
}

/* Megatron-BERT-like: BERT's embeddings without their LayerNorm, pre-norm layers and a final LayerNorm, gelu_new in
 * the MLP and the head's transform, tied */
static void test_megatron_bert(void **state) {
    (void)state;
    run_dir("megatron_bert");
}

/* RoBERTa-PreLayerNorm-like: RoBERTa's LayerNormed embeddings and positions, pre-norm layers and the base model's
 * final LayerNorm, relu in the MLP, GELU by erf in the head's transform, tied */
static void test_roberta_prelayernorm(void **state) {
    (void)state;
    run_dir("roberta_prelayernorm");
}

/* XGLM-like: BioGPT's pre-norm blocks with biases and gelu, scaled tied embeddings, positions from the sinusoid table
 * computed per token (offset 2; pad_token_id 5 zeroes position 3's row) */
static void test_xglm(void **state) {
    (void)state;
    run_dir("xglm");
}

/* GPT-1-like: GPT-2's Conv1D layers and learned positions in post-norm blocks (ln_1 after the attention's residual
 * add, ln_2 after the MLP's), no final norm, gelu (tanh form), tied */
static void test_openai_gpt(void **state) {
    (void)state;
    run_dir("openai_gpt");
}

/* CTRL-like: scaled tied embeddings plus CTRL's sinusoid table computed per token, pre-norm LayerNorms at 1e-6 and a
 * final one at 1e-4, q/k/v/o and a relu MLP with biases, the head's own bias */
static void test_ctrl(void **state) {
    (void)state;
    run_dir("ctrl");
}

/* GPT-NeoX Japanese-like: q/k/v fused per head without biases, the last layer's dense_bias alone, RoPE on half of
 * each head, sequential pre-norm LayerNorms with bias, a bias-free gelu MLP 2 x hidden wide, tied embed_out */
static void test_gpt_neox_japanese(void **state) {
    (void)state;
    run_dir("gpt_neox_japanese");
}

/* Pythia-like: parallel residual with two LayerNorms with bias, q/k/v fused per head, RoPE on a quarter of each
 * head, q/k/v/dense and MLP biases, exact GELU, untied; and GPT-NeoX-20B-like sequential blocks, no attention
 * biases, RoPE on half of each head, gelu_fast, tied */
static void test_gpt_neox(void **state) {
    (void)state;
    run_dir("gpt_neox");
    run_dir("gpt_neox_seq");
}

/* GPT-2-like: learned positions (n_positions 64) and no RoPE, Conv1D weights [in, out], q/k/v fused in c_attn,
 * LayerNorms with bias, every bias, gelu_new, tied */
static void test_gpt2(void **state) {
    (void)state;
    run_dir("gpt2");
}

/* GPT-2 as stanford-crfm's checkpoints: scale_attn_by_inverse_layer_idx (layer l's scale / (l + 1)) and
 * reorder_and_upcast_attn (float32 scores, as the runtime's) */
static void test_gpt2_layer_scale(void **state) {
    (void)state;
    run_dir("gpt2_layer_scale");
}

/* GPT-2 with scale_attn_weights false: the softmax unscaled */
static void test_gpt2_unscaled(void **state) {
    (void)state;
    run_dir("gpt2_unscaled");
}

/* OPT-125m-like: learned positions with OPT's offset of 2 (n 64, 66 rows) and no RoPE, pre-norm LayerNorms with
 * bias, every bias, relu, tied; OPT-350m-like (opt_350m): post-norm blocks without a final norm, embeddings and
 * head 32 wide with project_in / project_out to hidden 64 */
static void test_opt(void **state) {
    (void)state;
    run_dir("opt");
    run_dir("opt_350m");
}

/* StarCoder 1 / SantaCoder-like: GPT-2's learned positions (n 64) and no RoPE, nn.Linear layers with biases,
 * multi_query (one KV head: c_attn [q | k | v] rows), gelu_pytorch_tanh, tied */
static void test_gpt_bigcode(void **state) {
    (void)state;
    run_dir("gpt_bigcode");
}

/* GPT-BigCode without multi_query: 4 KV heads, c_attn per head [heads, 3, D]; gelu (erf), n_inner null, untied */
static void test_gpt_bigcode_mha(void **state) {
    (void)state;
    run_dir("gpt_bigcode_mha");
}

/* Falcon-7B-like: multi_query (one KV head, query_key_value [q | k | v]), parallel block on one LayerNorm, no
 * biases, RoPE on the whole head, gelu (erf), tied */
static void test_falcon(void **state) {
    (void)state;
    run_dir("falcon");
}

/* Falcon-40B-like: new_decoder_architecture, 2 KV heads of 4 (query_key_value grouped [2, 4, 16]), ln_attn and
 * ln_mlp, biases, rope_theta 5e4, gelu_new, untied */
static void test_falcon_new(void **state) {
    (void)state;
    run_dir("falcon_new");
}

/* Falcon-RW-like: alibi (no RoPE; the bias before the 1/sqrt(8) scale), query_key_value per head [4, 3, 8], the
 * sequential block, biases, gelu, tied */
static void test_falcon_alibi(void **state) {
    (void)state;
    run_dir("falcon_alibi");
}

/* BLOOM-like: embeddings LayerNorm, q/k/v per head [6, 3, 8] with biases, ALiBi over 6 heads (not a power of two:
 * the interleaved slopes), BloomGelu MLP with biases, LayerNorms with bias, tied */
static void test_bloom(void **state) {
    (void)state;
    run_dir("bloom");
}

/* MPT-7B-like: LayerNorms without bias, Wqkv [q | k | v] clamped to +-1.5, ALiBi over 5 heads (MPT's slopes of 8
 * heads, even ones first), exact GELU MLP, no biases, tied */
static void test_mpt(void **state) {
    (void)state;
    run_dir("mpt");
}

/* GPT-J-6B-like: parallel block on one LayerNorm, no q/k/v/out_proj biases, RoPE on adjacent pairs of the first 8 of
 * 16 channels, fc_in / fc_out with biases, gelu_new, untied with the head's bias */
static void test_gptj(void **state) {
    (void)state;
    run_dir("gptj");
}

/* Nemotron-4 / Minitron-like: LayerNorm1P (1 + w, with bias), 2 KV heads of 4, RoPE on half of each head, relu2
 * ungated MLP, no biases, untied */
static void test_nemotron(void **state) {
    (void)state;
    run_dir("nemotron");
}

/* LFM2-like, the first hybrid run: short convolutions (kernel 3, biases) on layers 0, 2, 3 beside GQA attention
 * with per-head q/k RMSNorm on layer 1, the auto-adjusted SwiGLU width (120), embedding_norm, tied; the conv
 * states in every mode's caches (mode 0: none; 1: a row each; 2: a block each of the state key) */
static void test_lfm2(void **state) {
    (void)state;
    run_dir("lfm2");
}

/* LFM3-like: LFM2's convolutions (kernel 7) on layers 0, 2 beside Qwen3's attention with a sigmoid gate per head, full
 * on layer 1 under the proportional rope (half the angles turn, theta 1e6) and sliding (window 6) on layer 3 under
 * the default rope (theta 1e4); sandwich norms on both sub-layers' outputs; the conv states in every mode's caches */
static void test_lfm3(void **state) {
    (void)state;
    run_dir("lfm3");
}

/* LFM2-8B-A1B-like: LFM2's conv layers (0, 2, 3) and attention layer (1); layer 0's feed-forward the dense SwiGLU,
 * the others 8 SwiGLU experts of 32 chosen top-2 by sigmoid score + expert_bias, renormalised (sum + 1e-6), x 1.5 */
static void test_lfm2_moe(void **state) {
    (void)state;
    run_dir("lfm2_moe");
}

/* Bamba-like, the first Mamba2 hybrid: Mamba2 mixers (8 heads of 16, 2 groups of state 16, conv kernel 4, all
 * biases, time_step_limit [0, 2]) on layers 0, 2, 3 beside GQA attention with RoPE on half of each head on layer 1;
 * transformers' prefill runs its chunked SSD scan (chunks of 8), the runtime the recurrence; the conv and ssm states
 * in every mode's caches (mode 0: none; 1: a row each; 2: a block each of the state key) */
static void test_bamba(void **state) {
    (void)state;
    run_dir("bamba");
}

/* Nemotron-H-like: 6 layers of one block each by hybrid_override_pattern "M-*-MM": Mamba2 mixers (8 heads of 16, 2
 * groups of state 16, kernel 4, in/out_proj biases) on 0, 4, 5, GQA attention without positions on 2, relu2 MLPs
 * alone on 1 and 3 (no cache); hub names under backbone. */
static void test_nemotron_h(void **state) {
    (void)state;
    run_dir("nemotron_h");
}

/* Nemotron 3 Nano-like experts: hybrid_override_pattern "ME*E", a Mamba2 mixer, attention and two expert layers
 * (8 ungated relu2 experts of 32, top-2 of the best of 2 groups by sigmoid score + e_score_correction_bias,
 * renormalised, x 2.5, in moe_latent_size 48 between biased latent projections, beside a shared relu2 MLP of 40) */
static void test_nemotron_h_moe(void **state) {
    (void)state;
    run_dir("nemotron_h_moe");
}

/* Falcon-H1-like: 3 layers, each a Mamba2 mixer (mamba_d_ssm 96: 6 heads of 16, 2 groups of state 16, kernel 4, the
 * gated norm normed before its gate, in_proj and out_proj biases) beside GQA attention with RoPE on the same normed
 * input, then a SwiGLU MLP; every muP multiplier away from 1; each layer's K/V and states in every mode's caches */
static void test_falcon_h1(void **state) {
    (void)state;
    run_dir("falcon_h1");
}

/* Falcon-H1 under its config class's defaults for the mixer's output (mamba_rms_norm false: y silu(z) without the
 * norm although mamba_norm_before_gate is true), tied, 2 layers of 4 mixer heads in 1 group */
static void test_falcon_h1_gated(void **state) {
    (void)state;
    run_dir("falcon_h1_gated");
}

/* Mamba2 (Mamba2ForCausalLM): 4 layers, each one mixer alone (8 heads of 16, 2 groups of state 16, kernel 4,
 * in/out_proj biases) with its pre-norm and residual; no attention, no MLP. Four mixers in a row are as sensitive in
 * float32 as qwen3_next: transformers' own logits are up to 4.6e-5 from its float64 ones (its cached decode 1.7e-5
 * from its uncached run), so the same absolute floor 5e-5 (the relative 1e-4 stays). */
static void test_mamba2(void **state) {
    (void)state;
    kvc_test_oracle_abs_floor = 5e-5;
    run_dir("mamba2");
    kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;
}

/* Zamba2-like: 3 layers, each a Mamba2 mixer (4 heads of 16, 2 groups of state 8, kernel 3), layers 1-2 hybrid: the
 * shared block over [h | embeddings] (RoPE, q/k/v adapters, the GELU MLP with its adapter), the site's linear, then
 * the mixer; one block loaded once for both use sites, each site its own adapters and K/V; tied */
static void test_zamba2(void **state) {
    (void)state;
    kvc_test_oracle_abs_floor = 1e-4; /* transformers' recurrent decode is 6.4e-5 off its chunked prefill here */
    run_dir("zamba2");
    kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;
}

/* Zamba: 3 layers, each a multi-head Mamba-1 mixer (2 heads of 32 channels, each its own x_proj / dt_proj; state
 * 8, kernel 3, dt rank 2, in/out_proj biases; in_proj's x and z rows alternating), layers 1-2 hybrid: the one shared
 * block over [h | embeddings] (GQA 4 / 2 heads of 16, no positions, scale (16 / 2)^-1/2, the GELU MLP), the site's
 * linear, then the mixer; the block loaded once for both sites, each site its own K/V; tied */
static void test_zamba(void **state) {
    (void)state;
    kvc_test_oracle_abs_floor = 1e-4; /* transformers' float32 prefill is itself 2.8e-5 off its float64 here */
    run_dir("zamba");
    kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;
}

/* Mamba (Mamba-1): 3 layers, each one selective-scan mixer alone (96 channels, state 8, kernel 4 with its bias,
 * time_step_rank auto = 3, in/out_proj biases) with its pre-norm and residual; the head tied. The conv and ssm states
 * in every mode's caches. */
static void test_mamba(void **state) {
    (void)state;
    run_dir("mamba");
}

/* FalconMamba: Mamba's mixer plus the weightless RMS norms of dt, B and C (eps 1e-6); 3 layers of 64 channels,
 * state 16, kernel 3 without bias, time_step_rank 4, untied head. */
static void test_falcon_mamba(void **state) {
    (void)state;
    run_dir("falcon_mamba");
}

/* Jamba: 4 layers, Mamba-1 mixers with weighted dt / B / C norms (128 channels, state 8, kernel 4, dt rank 4,
 * in/out_proj biases) on 0, 1, 3, GQA attention without positions on 2; 4 softmax-routed experts (top-2, not
 * renormalised) on 1 and 3, the dense MLP on 0 and 2; untied. */
static void test_jamba(void **state) {
    (void)state;
    run_dir("jamba");
}

/* Granite 4.0-H-like: Mamba2 mixers (8 heads of 16, 2 groups of state 16, kernel 4, time_step_limit [0, 2.5]) on
 * layers 0, 2, 3 by layer_types beside GQA attention with RoPE on layer 1; Granite's multipliers; on every layer 4
 * routed experts (top-2) beside the shared MLP; the states as Bamba's */
static void test_granitemoehybrid(void **state) {
    (void)state;
    run_dir("granitemoehybrid");
}

/* GPT-Neo-125M-like: learned positions, pre-norm LayerNorms, no q/k/v biases, out_proj with one, q.k unscaled,
 * layers global, local, local (attention_types in two groups) sliding over window_size 8, c_fc / c_proj with biases,
 * gelu_new, tied */
static void test_gpt_neo(void **state) {
    (void)state;
    run_dir("gpt_neo");
}

/* CodeGen-350M-like: GPT-J's layer with q/k/v fused in qkv_proj as 4 model-parallel shards [4, q | v | k, 12], 6
 * heads of 8 straddling the shards, RoPE on adjacent pairs of the first 4 channels, untied with the head's bias */
static void test_codegen(void **state) {
    (void)state;
    run_dir("codegen");
}

/* VaultGemma-1B-like: Gemma 2's layer with plain pre-norm blocks (input_layernorm, pre_feedforward_layernorm as
 * 1 + w, no post norms), layers sliding (even, window 8) and full (odd), query_pre_attn_scalar 32, soft-caps 5 and 3,
 * GeGLU, tied embeddings scaled by sqrt(hidden_size) */
static void test_vaultgemma(void **state) {
    (void)state;
    run_dir("vaultgemma");
}

/* FlexOlmo-like: OLMo 2's layer (post norms, whole q/k norms) with OLMoE's softmax router on every layer, 7 experts
 * of 24, top-2 not renormalised, q/k/v/o biases, GQA 4/2, untied */
static void test_flex_olmo(void **state) {
    (void)state;
    run_dir("flex_olmo");
}

/* Hunyuan-7B-like: Llama's layer with per-head q/k RMSNorms after RoPE, the "dynamic" rope with alpha 1000 (theta
 * 1e4 x 1000^(16/14)), GQA 4/2, untied */
static void test_hunyuan_v1_dense(void **state) {
    (void)state;
    run_dir("hunyuan_v1_dense");
}

/* BioGPT-like: OPT's learned positions offset by 2, token embeddings times sqrt(48), pre-norm LayerNorms at eps 1e-5,
 * q/k/v/out_proj and fc1 / fc2 with biases, gelu, tied output_projection */
static void test_biogpt(void **state) {
    (void)state;
    run_dir("biogpt");
}

/* Solar-Open-like: Llama's attention with q/k/v biases and none on o_proj, GLM-4.5's grouped sigmoid router (8
 * experts in 2 groups, top-2 renormalised, x 2.5, a shared expert) on every layer */
static void test_solar_open(void **state) {
    (void)state;
    run_dir("solar_open");
}

/* dots.llm1-like: Qwen3's attention (per-head q/k norms, q/k/v/o biases) with DeepSeek-V3's grouped sigmoid router (8
 * experts in 2 groups, top-2 not renormalised, x 2.5, a shared expert) after one dense layer; layer 2 slides over 8
 * keys (max_window_layers 2) */
static void test_dots1(void **state) {
    (void)state;
    run_dir("dots1");
}

/* Hunyuan-A13B-like: HunYuan dense's attention (q/k norms after RoPE, alpha 1000) with a softmax router (mlp.gate.wg)
 * over 8 experts of 24, top-2 renormalised, plus the ungated shared_mlp */
static void test_hunyuan_v1_moe(void **state) {
    (void)state;
    run_dir("hunyuan_v1_moe");
}

/* MiniMax-M2-like: whole-row q/k norms, RoPE on the first rotary_dim 8 of 16 channels, Mixtral's block_sparse_moe of
 * 8 experts chosen by sigmoid scores plus a correction bias, top-2 renormalised */
static void test_minimax_m2(void **state) {
    (void)state;
    run_dir("minimax_m2");
}

/* EXAONE-3.5-like: Llama's layer under EXAONE's hub names (transformer.h.N.attn.attention.*, mlp.c_fc_0 / c_fc_1 /
 * c_proj), GQA 4/2, theta 5e5, untied */
static void test_exaone(void **state) {
    (void)state;
    run_dir("exaone");
}

/* InternLM3-like: Llama with biases on q/k/v/o and the MLP (qkv_bias and bias), head_dim 16, GQA 4/2, untied */
static void test_internlm3(void **state) {
    (void)state;
    run_dir("internlm3");
}

/* Qwen3-Next-like: Gated DeltaNet on layers 0-2 (2 key heads, 4 value heads, conv kernel 4) beside gated GQA
 * attention with (1 + w) q/k norms and partial rotary (0.25) on layer 3, the softmax MoE with a gated shared expert on
 * layers 0, 2, 3 and the dense MLP on layer 1 (mlp_only_layers); the conv and recurrent states in every mode's caches.
 * transformers' prefill ran its chunked form of the recurrence, the runtime its sequential one. This toy is
 * ill-conditioned in float32: transformers' own logits are up to 2.8e-5 from its float64 result (its sequential form
 * up to 2.2e-5, and 1.5e-5 from its chunked one), so the absolute floor is 5e-5 here (the relative 1e-4 stays). */
static void test_qwen3_next(void **state) {
    (void)state;
    kvc_test_oracle_abs_floor = 5e-5;
    run_dir("qwen3_next");
    kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;
}

/* OLMo Hybrid as transformers saves it: pre-norm Gated DeltaNet layers 0 and 2 (Qwen3.5's with q, k, v apart, beta x 2,
 * the gated norm's eps 1e-5; the conv cut in equal thirds across q | k | v, the norms under their checkpoint names)
 * beside an OLMo 3 post-norm attention layer. Within the default floor. */
static void test_olmo_hybrid(void **state) {
    (void)state;
    run_dir("olmo_hybrid");
}

/* Kimi-Linear-like: Kimi Delta Attention on layers 0, 1, 3 (3 heads of 8, its decay per key channel, conv kernel 3)
 * beside NoPE MLA on layer 2 (q_lora_rank null), the dense MLP on layer 0 and DeepSeek-V3's grouped sigmoid router
 * with a shared expert on the others (tensors as save_pretrained writes them: block_sparse_moe, experts.E.w1/w2/w3,
 * q/k/v_conv1d); the conv and recurrent states in every mode's caches. transformers' prefill ran its chunked form,
 * the runtime its sequential one: transformers' own two forms are 3.8e-5 apart on it (its cached generate against its
 * prefill logits), so qwen3_next's absolute floor 5e-5 (the relative 1e-4 stays). */
static void test_kimi_linear(void **state) {
    (void)state;
    kvc_test_oracle_abs_floor = 5e-5;
    run_dir("kimi_linear");
    kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;
}

/* MiniMax: lightning attention on layers 0, 2 and 3 (the decay of the first, a middle and the last layer), softmax
 * attention on layer 1, Mixtral's experts on every layer, six different residual factors over the normed inputs;
 * block_size 8, so transformers' chunked prefill crosses blocks where the runtime runs the recurrence. */
static void test_minimax(void **state) {
    (void)state;
    run_dir("minimax");
}

/* RWKV-4: 3 layers of time mixing (the WKV recurrence, token shifts) and channel mixing, the embeddings' pre_ln,
 * rescale_every 2 (layer 1's outputs halved, the stream after it too) and layer_norm_epsilon 1e-3 beside ln_out's
 * own 1e-5. */
static void test_rwkv(void **state) {
    (void)state;
    run_dir("rwkv");
}

/* RecurrentGemma: recurrent blocks on layers 0 and 2 (block_types of two repeated: conv width 3, lru_width 32 below
 * hidden 48, four gate blocks), local MQA on layer 1 over a window of 8 (shorter than the 23- and 40-token prompts),
 * half of each head rotated, q/k/v biases; logits soft-capped at 6, the embeddings times bf16(sqrt(48)), untied. */
static void test_recurrent_gemma(void **state) {
    (void)state;
    run_dir("recurrent_gemma");
}

/* Qwen3.5's text model: qwen3_next's layers with the Gated DeltaNet's projections apart (in_proj_qkv, _z, _b, _a),
 * three value heads per key head, conv kernel 3, gated attention on layer 1, a dense MLP, tied. As sensitive as
 * qwen3_next's in float32 (transformers' logits up to 4.2e-5 from its float64 ones, its two forms 2.8e-5 apart):
 * the same floor. */
static void test_qwen3_5_text(void **state) {
    (void)state;
    kvc_test_oracle_abs_floor = 5e-5;
    run_dir("qwen3_5_text");
    kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;
}

/* Qwen3.5-MoE through its multimodal wrapper (Qwen3_5MoeForConditionalGeneration, text_config qwen3_5_moe_text,
 * tensors under model.language_model., a vision tower left unread): qwen3_5_text's layers with the routed block on
 * every layer (6 experts, 2 per token, the gated shared expert); text_config says tied, the outer config untied (the
 * head is untied). qwen3_next's floor. */
static void test_qwen3_5_moe(void **state) {
    (void)state;
    kvc_test_oracle_abs_floor = 5e-5;
    run_dir("qwen3_5_moe");
    kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;
}

/* Cohere (Command-R)-like: LayerNorm without bias, parallel blocks, RoPE on adjacent pairs, logits times 0.3,
 * q/k/v/o biases, GQA, tied */
static void test_cohere(void **state) {
    (void)state;
    run_dir("cohere");
}

/* Cohere 2 (Command R7B)-like: Cohere's blocks, three sliding layers (window 8, rotated) then a full one
 * without RoPE, logits times 0.3, GQA, tied */
static void test_cohere2(void **state) {
    (void)state;
    run_dir("cohere2");
}

/* DeepSeek-V2-like: MLA with a q LoRA, RoPE on adjacent pairs, YaRN (mscale 0.707), layer 0 dense, then MoE of
 * 8 experts: softmax router, group_limited_greedy (2 of 4 groups), 3 per token, times 4, 2 shared experts; also
 * its latent caches (run_dir) */
static void test_deepseek_v2(void **state) {
    (void)state;
    run_dir("deepseek_v2");
}

/* DeepSeek-V2-Lite-like: a plain q_proj (q_lora_rank null), greedy top-2 of 8 experts unscaled, attention biases,
 * tied */
static void test_deepseek_v2_lite(void **state) {
    (void)state;
    run_dir("deepseek_v2_lite");
}

/* Qwen2.5-VL's text model, the oracle the multimodal class itself (a one-block vision tower beside it) run on text:
 * Qwen2's q/k/v biases, GQA, multimodal rope (mrope_section [2, 3, 3]) whose equal position streams make it plain
 * RoPE, untied, its tensors under the hub's names (model.layers...); flat/ the hub's earlier config (top-level text
 * keys, rope_scaling type mrope) with transformers 5's names (model.language_model.layers...) */
static void test_qwen2_5_vl(void **state) {
    (void)state;
    run_dir("qwen2_5_vl");
    check_variant("qwen2_5_vl", "flat", "qwen2_5_vl");
}

/* Qwen2-VL's: MHA, mrope_section [4, 6, 6] at the class's theta 1e6, the head tied by text_config alone (the outer
 * config's false); flat/ as Qwen2.5-VL's */
static void test_qwen2_vl(void **state) {
    (void)state;
    run_dir("qwen2_vl");
    check_variant("qwen2_vl", "flat", "qwen2_vl");
}

/* Qwen3-VL's text model, the oracle the multimodal class run on text: Qwen3's per-head q/k norms, head_dim 32 over
 * hidden_size / heads 16, GQA, q/k/v/o biases, interleaved multimodal rope (plain RoPE on equal streams), untied */
static void test_qwen3_vl(void **state) {
    (void)state;
    run_dir("qwen3_vl");
}

/* LLaVA's text model, the oracle the multimodal class run on text (a CLIP vision tower and the projector beside it,
 * unread): a Llama text_config, GQA, untied */
static void test_llava(void **state) {
    (void)state;
    run_dir("llava");
}

/* LLaVA-NeXT's: a Mistral text_config with a window of 8 on every layer, one KV head, head_dim 16, untied */
static void test_llava_next(void **state) {
    (void)state;
    run_dir("llava_next");
}

/* Emu3's text model, the oracle the multimodal class run on text (a VQ-VAE beside it, unread; its tensors under
 * model.text_model.): Llama's layer with q/k/v/o biases, GQA, theta 1e6, untied (text_config's tie ignored) */
static void test_emu3(void **state) {
    (void)state;
    run_dir("emu3");
}

/* Aria's text model, the multimodal class run on text: Llama's attention, on every layer 4 experts (stored
 * transposed and fused) of which the top 2 logits, softmaxed, weigh the outputs, plus 2 shared experts as one MLP
 * with biases; untied */
static void test_aria(void **state) {
    (void)state;
    run_dir("aria");
}

/* Llama 3.2 Vision's text model, the multimodal class run on text (a vision tower and projector beside it, unread;
 * its tensors under language_model.): Llama's layers with layer 2 a cross-attention layer, skipped whole without an
 * image; the embedding's 8 rows past the vocabulary in the prompts; llama3 rope; untied (tie_word_embeddings true
 * is not honoured by transformers) */
static void test_mllama(void **state) {
    (void)state;
    run_dir("mllama");
}

/* Phi-4-multimodal's text path (Phi4MultimodalForCausalLM; image and audio embedders beside it, unread): Phi-3's
 * fused projections, RoPE on 12 of 16 channels, a window of 16 on every layer, GQA, untied */
static void test_phi4_multimodal(void **state) {
    (void)state;
    run_dir("phi4_multimodal");
}

/* Apertus 1.5's text model (Apertus1p5TextForCausalLM): Apertus's layer with its head pruned to the first 448 of 512
 * ids (output_vocab_size); the prompts' ids above it are embedded, never produced; untied */
static void test_apertus1p5_text(void **state) {
    (void)state;
    run_dir("apertus1p5_text");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_qwen3_bf16),
        cmocka_unit_test(test_qwen3_f16),
        cmocka_unit_test(test_gpt_oss),
        cmocka_unit_test(test_deepseek_v3),
        cmocka_unit_test(test_glm4_moe_lite),
        cmocka_unit_test(test_sarvam_mla),
        cmocka_unit_test(test_axk1),
        cmocka_unit_test(test_glm_moe_dsa),
        cmocka_unit_test(test_deepseek_v32),
        cmocka_unit_test(test_hy_v4),
        cmocka_unit_test(test_axk2),
        cmocka_unit_test(test_longcat_flash),
        cmocka_unit_test(test_exaone_moe),
        cmocka_unit_test(test_dtypes_qwen3),
        cmocka_unit_test(test_dtypes_gpt_oss),
        cmocka_unit_test(test_dtypes_deepseek_v3),
        cmocka_unit_test(test_qwen3_moe),
        cmocka_unit_test(test_mixtral),
        cmocka_unit_test(test_qwen2_moe),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_gemma2),
        cmocka_unit_test(test_gemma3_multimodal),
        cmocka_unit_test(test_gemma4),
        cmocka_unit_test(test_gemma4_multimodal),
        cmocka_unit_test(test_gemma4_plan_agrees),
        cmocka_unit_test(test_gemma4_dense),
        cmocka_unit_test(test_gemma4_moe),
        cmocka_unit_test(test_gemma3n),
        cmocka_unit_test(test_gemma3n_multimodal),
        cmocka_unit_test(test_gemma4_unified),
        cmocka_unit_test(test_gemma4_unified_multimodal),
        cmocka_unit_test(test_phi3),
        cmocka_unit_test(test_phi3_longrope),
        cmocka_unit_test(test_olmo2),
        cmocka_unit_test(test_olmo3),
        cmocka_unit_test(test_granite),
        cmocka_unit_test(test_smollm3),
        cmocka_unit_test(test_gemma),
        cmocka_unit_test(test_glm4),
        cmocka_unit_test(test_cohere),
        cmocka_unit_test(test_cohere2),
        cmocka_unit_test(test_glm),
        cmocka_unit_test(test_seed_oss),
        cmocka_unit_test(test_exaone4),
        cmocka_unit_test(test_starcoder2),
        cmocka_unit_test(test_ministral),
        cmocka_unit_test(test_ministral3),
        cmocka_unit_test(test_ministral3_multimodal),
        cmocka_unit_test(test_helium),
        cmocka_unit_test(test_arcee),
        cmocka_unit_test(test_apertus),
        cmocka_unit_test(test_stablelm),
        cmocka_unit_test(test_olmo),
        cmocka_unit_test(test_ernie4_5),
        cmocka_unit_test(test_deepseek_v2),
        cmocka_unit_test(test_deepseek_v2_lite),
        cmocka_unit_test(test_olmoe),
        cmocka_unit_test(test_granitemoe),
        cmocka_unit_test(test_jetmoe),
        cmocka_unit_test(test_glm4_moe),
        cmocka_unit_test(test_sarvam_param2),
        cmocka_unit_test(test_minicpm5_moe),
        cmocka_unit_test(test_kolibri1),
        cmocka_unit_test(test_llama4),
        cmocka_unit_test(test_llama4_multimodal),
        cmocka_unit_test(test_phi),
        cmocka_unit_test(test_phi_qk),
        cmocka_unit_test(test_persimmon),
        cmocka_unit_test(test_cwm),
        cmocka_unit_test(test_granite_swa),
        cmocka_unit_test(test_flint),
        cmocka_unit_test(test_hy_v3),
        cmocka_unit_test(test_cohere2_moe),
        cmocka_unit_test(test_jais2),
        cmocka_unit_test(test_iquestcoder),
        cmocka_unit_test(test_hyperclovax),
        cmocka_unit_test(test_xglm),
        cmocka_unit_test(test_bert),
        cmocka_unit_test(test_roberta),
        cmocka_unit_test(test_ernie),
        cmocka_unit_test(test_megatron_bert),
        cmocka_unit_test(test_roberta_prelayernorm),
        cmocka_unit_test(test_openai_gpt),
        cmocka_unit_test(test_ctrl),
        cmocka_unit_test(test_gpt_neox_japanese),
        cmocka_unit_test(test_gpt_neox),
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_gpt2_layer_scale),
        cmocka_unit_test(test_gpt2_unscaled),
        cmocka_unit_test(test_opt),
        cmocka_unit_test(test_qwen2_5_vl),
        cmocka_unit_test(test_qwen2_vl),
        cmocka_unit_test(test_qwen3_vl),
        cmocka_unit_test(test_emu3),
        cmocka_unit_test(test_aria),
        cmocka_unit_test(test_mllama),
        cmocka_unit_test(test_phi4_multimodal),
        cmocka_unit_test(test_apertus1p5_text),
        cmocka_unit_test(test_llava),
        cmocka_unit_test(test_llava_next),
        cmocka_unit_test(test_gpt_bigcode),
        cmocka_unit_test(test_gpt_bigcode_mha),
        cmocka_unit_test(test_falcon),
        cmocka_unit_test(test_falcon_new),
        cmocka_unit_test(test_falcon_alibi),
        cmocka_unit_test(test_bloom),
        cmocka_unit_test(test_mpt),
        cmocka_unit_test(test_gptj),
        cmocka_unit_test(test_gpt_neo),
        cmocka_unit_test(test_codegen),
        cmocka_unit_test(test_vaultgemma),
        cmocka_unit_test(test_flex_olmo),
        cmocka_unit_test(test_hunyuan_v1_dense),
        cmocka_unit_test(test_biogpt),
        cmocka_unit_test(test_dots1),
        cmocka_unit_test(test_solar_open),
        cmocka_unit_test(test_hunyuan_v1_moe),
        cmocka_unit_test(test_minimax_m2),
        cmocka_unit_test(test_exaone),
        cmocka_unit_test(test_internlm3),
        cmocka_unit_test(test_nemotron),
        cmocka_unit_test(test_lfm2),
        cmocka_unit_test(test_lfm3),
        cmocka_unit_test(test_qwen3_next),
        cmocka_unit_test(test_kimi_linear),
        cmocka_unit_test(test_minimax),
        cmocka_unit_test(test_rwkv),
        cmocka_unit_test(test_recurrent_gemma),
        cmocka_unit_test(test_qwen3_5_text),
        cmocka_unit_test(test_olmo_hybrid),
        cmocka_unit_test(test_qwen3_5_moe),
        cmocka_unit_test(test_lfm2_moe),
        cmocka_unit_test(test_bamba),
        cmocka_unit_test(test_nemotron_h),
        cmocka_unit_test(test_nemotron_h_moe),
        cmocka_unit_test(test_falcon_h1),
        cmocka_unit_test(test_falcon_h1_gated),
        cmocka_unit_test(test_mamba2),
        cmocka_unit_test(test_zamba2),
        cmocka_unit_test(test_zamba),
        cmocka_unit_test(test_mamba),
        cmocka_unit_test(test_falcon_mamba),
        cmocka_unit_test(test_jamba),
        cmocka_unit_test(test_granitemoehybrid),
        cmocka_unit_test(test_ernie4_5_moe),
        cmocka_unit_test(test_phimoe),
        cmocka_unit_test(test_dbrx),
        cmocka_unit_test(test_nanochat),
        cmocka_unit_test(test_diffllama),
        cmocka_unit_test(test_cohere_compass_text),
        cmocka_unit_test(test_modernbert_decoder),
        cmocka_unit_test(test_bitnet),
        cmocka_unit_test(test_youtu),
        cmocka_unit_test(test_minicpm3),
        cmocka_unit_test(test_afmoe),
        cmocka_unit_test(test_ergo),
        cmocka_unit_test(test_beam),
        cmocka_unit_test(test_mimo_v2_flash),
        cmocka_unit_test(test_laguna),
        cmocka_unit_test(test_mellum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
