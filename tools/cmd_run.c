/* `kvcache run MODEL_DIR --prompt-ids 1,2,3 [...]`: loads a Hugging Face
 * model directory (config.json + *.safetensors), runs the prompts through the
 * standalone runner and prints the greedy continuations. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "base/internal.h"
#include "cmd_run.h"
#include "kvcache/plan.h"
#include "model/model_internal.h"
#include "kvcache/runner.h"
#include "model/model_internal.h"
#include "run_compare.h"
#include "run_engine.h"
#include "run_tp.h"
#include "run_pd.h"

#define RUN_MAX_PROMPTS 64
#define RUN_MAX_IDS     65536 /* prompt ids of all prompts together */
/* Logits --json keeps for its per-step summaries. */
#define RUN_MAX_LOGIT_BYTES (INT64_C(1) << 32)

static void run_usage(FILE *f) {
    fprintf(f,
            "usage: kvcache run MODEL_DIR --prompt-ids 1,2,3 [--prompt-ids ...] [--max-new-tokens N]\n"
            "                   [--mode 0|1|2|3] [--block-size N] [--kv-dtype DTYPE] [--kv-layout L]\n"
            "                   [--max-positions N] [--json] [--eos ID|none] [--weights DTYPE]\n"
            "                   [--activations f32|bf16]\n"
            "       kvcache run MODEL_DIR --prompt-ids ... [--stream] [--temperature T] [--top-k K] [--top-p P]\n"
            "                   [--seed S] [--eos ID|none] [--max-new-tokens N] [--mode 2|3] [--block-size N] ...\n"
            "       mpirun -np 1 kvcache run MODEL_DIR ARGS --role prefill : -np 1 kvcache run MODEL_DIR ARGS --role "
            "decode\n"
            "                   [--pd-timeout-ms N] [--pd-fault drop=K|exit=K|kill=K]\n"
            "       mpirun -np N kvcache run MODEL_DIR ARGS --tp N --role prefill : -np N kvcache run MODEL_DIR ARGS\n"
            "                   --tp N --role decode\n"
            "       kvcache run MODEL_DIR --compare-dtypes [--prompt-ids ... [--max-new-tokens N]] [--mode 1|2|3]\n"
            "                   [--block-size N] [--max-positions N] [--json] [--weights DTYPE]\n"
            "       kvcache run MODEL_DIR --compare-weights [--prompt-ids ... [--max-new-tokens N]] [--mode 1|2|3]\n"
            "                   [--block-size N] [--max-positions N] [--json]\n"
            "       kvcache run MODEL_DIR --weights q8_0|q4_0 --save-weights OUT_DIR\n"
            "       mpirun -np N kvcache run MODEL_DIR --tp N ...   (any of the above on N tensor-parallel ranks)\n"
            "\n"
            "Loads MODEL_DIR (config.json + *.safetensors; llama, qwen2, qwen3, qwen3_moe, qwen2_moe,\n"
            "mixtral, gpt_oss, deepseek_v3, gemma2, vaultgemma, gemma3_text, gemma3 (its text model),\n"
            "gemma4_text, gemma4 (its text model), gemma4_unified_text, gemma4_unified (its text model),\n"
            "gemma3n_text, gemma3n (its text model),\n"
            "phi3, olmo2, olmo3, granite, hyperclovax, smollm3, gemma, glm, glm4, cohere, cohere2, seed_oss, exaone4,\n"
            "exaone_moe, glm4_moe_lite,\n"
            "starcoder2, ministral, ministral3, mistral3 (its text model), helium, arcee, hunyuan_v1_dense,\n"
            "hunyuan_v1_moe,\n"
            "stablelm, olmo, ernie4_5, deepseek_v2, olmoe, flex_olmo, granitemoe, granitemoeshared, glm4_moe, dots1,\n"
            "solar_open, sarvam_moe, param2moe, minicpm5_moe, kolibri1,\n"
            "minimax_m2, exaone, internlm3, iquestcoder, cwm, jais2, apertus, persimmon, xglm, openai-gpt, ctrl,\n"
            "gpt_neox_japanese,\n"
            "llama4_text, llama4 (its text model), phi, gpt_neox, gpt2, opt, gpt_bigcode, falcon, gptj, nemotron,\n"
            "ernie4_5_moe, phimoe, dbrx, bloom, mpt, gpt_neo, codegen, biogpt, lfm2, lfm2_moe, lfm3, bamba,\n"
            "granitemoehybrid, nemotron_h, falcon_h1, mamba2, zamba2, zamba, mamba, falcon_mamba, jamba, rwkv,\n"
            "qwen3_next, qwen3_5_text, qwen3_5_moe_text, kimi_linear, recurrent_gemma,\n"
            "qwen3_5, qwen3_5_moe (their text models), olmo_hybrid,\n"
            "nanochat, youtu, minicpm3, granite_swa, granitemoe_swa, flint, hy_v3, cohere2_moe, afmoe,\n"
            "ergo, sarvam_mla, axk1, axk2, glm_moe_dsa (dense below index_topk), longcat_flash, mimo_v2_flash,\n"
            "laguna, mellum, beam, diffllama, cohere_compass_text, modernbert-decoder, bitnet,\n"
            "bert, roberta, xlm-roberta, camembert, data2vec-text, ernie, bert-generation, megatron-bert,\n"
            "xlm-roberta-xl, roberta-prelayernorm (with is_decoder true),\n"
            "qwen2_vl, qwen2_5_vl, qwen3_vl, llava, llava_next, emu3, aria, phi4_multimodal, apertus1p5, mllama\n"
            "(their text models: text-only prompts, images and audio are not run), emu3_text_model, aria_text,\n"
            "apertus1p5_text, mllama_text_model)\n"
            "and runs the prompts as one static batch through the standalone runner, greedy, to completion\n"
            "(or, with --stream or a sampling flag, through the engine a token at a time).\n"
            "\n"
            "  --prompt-ids LIST    comma-separated token ids of one prompt (repeat for a batch; at most\n"
            "                       %d prompts and %d ids in all)\n"
            "  --max-new-tokens N   tokens generated per prompt (default 8); the longest prompt plus N\n"
            "                       must fit in the model's max_position_embeddings\n"
            "  --max-positions N    allow sequences of up to N positions instead (at most %lld); the\n"
            "                       runner applies the same limits to --compare-dtypes and expected.json\n"
            "  --mode M             0 recompute without cache, 1 contiguous caches, 2 paged caches (default),\n"
            "                       3 MLA latent caches (paged; deepseek_v3 and deepseek_v2 only)\n"
            "  --block-size N       tokens per block in modes 2 and 3 (default 16, at most %d: paged attention's\n"
            "                       limit)\n"
            "  --kv-dtype D         KV cache dtype in modes 1-3: f32, f16, bf16, i8 (int8), fp8_e4m3 (fp8) or\n"
            "                       fp8_e5m2 (default: the checkpoint's, config.json's torch_dtype as `kvcache plan`\n"
            "                       reads it: bf16, f16 or f32); int8 / fp8 take a scale per token computed on write;\n"
            "                       the first line names the dtype and the bytes one token takes in every\n"
            "                       layer's cache (scales included)\n"
            "  --kv-layout L        mode 2 cache blocks: tokens (default: [blocks, block, heads, dim]) or lanes\n"
            "                       (keys in lanes: K [blocks, heads, dim, block], V [blocks, heads, block, dim];\n"
            "                       attention reads keys without horizontal sums, docs/ops.md)\n"
            "  --compare-dtypes     every KV dtype against f32 on the prompts (default: MODEL_DIR/expected.json's\n"
            "                       prompts and Hugging Face greedy ids, as in tests/data/oracle): tokens,\n"
            "                       largest logit error, KL divergence (docs/runtime.md)\n"
            "  --weights D          the dtype of the model's matrices: checkpoint (default: as stored, bf16\n"
            "                       or f16 packed where the file holds BF16 or F16, else f32), f32, bf16, q8_0\n"
            "                       or q4_0 (quantized at load: 8 or 4 bits with an f16 scale per 32 weights;\n"
            "                       the embedding and output head in q8_0, docs/runtime.md); f16 is kept from\n"
            "                       an F16 file, never asked for\n"
            "  --activations A      f32 (default): bf16 matrices take the activations split exactly into bf16\n"
            "                       parts (f32-level results); bf16: rounded once to bf16, one product per\n"
            "                       weight, as a PyTorch bf16 model (faster; its measured error: docs/runtime.md);\n"
            "                       refused for a model without bf16 matrices\n"
            "  --save-weights OUT   write the model, quantized by --weights, as the model directory OUT (created;\n"
            "                       it must not exist) and run nothing: loading OUT copies the packed weights\n"
            "                       and their scales as they are, no quantization pass (docs/runtime.md)\n"
            "  --compare-weights    every weight dtype (bf16, bf16 with --activations bf16 as \"bf16+act\", q8_0,\n"
            "                       q4_0) against f32 weights on the prompts, f32 caches (prompts as\n"
            "                       --compare-dtypes): the same table per weight dtype\n"
            "  --json               one JSON object: ids, per-step logit summaries (top id, top logit,\n"
            "                       gap to the second, log-sum-exp) and timings\n"
            "  --eos ID|none        end-of-sequence token id (default: config.json's eos_token_id, the first of\n"
            "                       a list): a prompt's output ends with it (the runner computes the lock-step\n"
            "                       batch to the end and prints up to it; the engine stops the prompt there)\n"
            "  --tp N               this process is one of N tensor-parallel ranks started by mpirun -np N\n"
            "                       (docs/distributed.md): each loads its shard of the weights and caches; rank 0\n"
            "                       prints what one process prints (the kv cache line counts one rank's caches)\n"
            "  --stream             print each token as its step ends, as \"PROMPT: ID\" lines\n"
            "  --temperature T, --top-k K, --top-p P, --seed S\n"
            "                       sample instead of greedy (temperature 0 = greedy, top-k 0 = all, top-p 1 =\n"
            "                       all; seeded: the same tokens whatever the batch)\n"
            "  --min-p P, --presence-penalty X, --frequency-penalty X, --repetition-penalty R, --min-tokens N\n"
            "                       vLLM's sampling options, in its order (docs/engine.md, \"Sampling\"); min-tokens\n"
            "                       holds --eos back for N tokens\n"
            "  --stream, the sampling flags and --eos run the prompts through the engine (paged caches of\n"
            "  --block-size tokens, modes 2 and 3; every prompt admitted at once) instead of the runner; the\n"
            "  text output then ends with a line per prompt on stderr saying why it stopped (eos, max_new).\n"
            "  --role prefill|decode prefill/decode disaggregation under mpirun, 2 ranks with the same MODEL_DIR and\n"
            "                       ARGS (docs/pd.md): the prefill rank computes each prompt and sends its KV\n"
            "                       blocks over MPI, the decode rank admits it with them and decodes, printing\n"
            "                       what `kvcache run MODEL_DIR ARGS` prints (through the engine, modes 2 and 3).\n"
            "                       A prompt whose transfer fails gets an empty line and a message on stderr\n"
            "                       (exit status 1); the others are served. With --tp N: N ranks per role, each\n"
            "                       role tensor-parallel on its own; prefill rank r sends its KV shard to decode\n"
            "                       rank r (the MLA latent: prefill rank 0 to every decode rank), and decode\n"
            "                       rank 0 prints what `mpirun -np N kvcache run MODEL_DIR ARGS --tp N` prints\n"
            "  --pd-timeout-ms N    --role: how long the decode rank waits for a transfer or for the next prompt's\n"
            "                       KV (default 60000); the prefill rank waits twice as long for the decode rank\n"
            "                       to take a message\n"
            "  --pd-fault F         --role prefill, faults for tests: drop=K sends prompt K's header but not its\n"
            "                       KV; exit=K stops after sending K prompts; kill=K dies by SIGKILL there\n"
            "\n"
            "A flag the run would ignore is refused, saying why: --kv-dtype in mode 0 or with a comparison,\n"
            "the engine's flags with --json, a comparison, --max-positions or modes 0 and 1,\n"
            "--block-size in modes 0 and 1, --kv-layout outside mode 2, a comparison in mode 0, both\n"
            "comparisons at once, --weights or --activations with --compare-weights, and --max-new-tokens with a "
            "comparison\n"
            "on expected.json's prompts (its num_new_tokens applies).\n",
            RUN_MAX_PROMPTS, RUN_MAX_IDS, (long long)KVC_RUNNER_MAX_POSITIONS, KVC_ATTN_MAX_BLOCK_SIZE);
}

/* Appends the ids of "1,2,3" to ids[*n ..] and returns their count; -1 for
 * anything else (an empty item too: "1,,2", "1,2," and ",1" alike), -2 when
 * the ids of all prompts would pass RUN_MAX_IDS. */
static int64_t parse_ids(const char *s, int32_t *ids, int64_t *n) {
    if (!s) return -1;
    int64_t count = 0;
    for (bool more = true; more; count++) {
        int64_t v;
        if (!kvc_arg_list_item(&s, 0, INT32_MAX, &v, &more)) return -1; /* digits only: " -1" is no id */
        if (*n >= RUN_MAX_IDS) return -2;
        ids[(*n)++] = (int32_t)v;
    }
    return count;
}

/* Adds item to an array (key NULL) or an object; deletes it when that fails
 * (a container that could not be created, out of memory). */
static void add_item(cJSON *to, const char *key, cJSON *item) {
    if (!(key ? cJSON_AddItemToObject(to, key, item) : cJSON_AddItemToArray(to, item))) cJSON_Delete(item);
}

static void step_summary(cJSON *arr, const float *lg, int64_t V) {
    int64_t a = 0, b = -1;
    for (int64_t i = 1; i < V; i++) {
        if (lg[i] > lg[a])
            b = a, a = i;
        else if (b < 0 || lg[i] > lg[b])
            b = i;
    }
    double s = 0.0;
    for (int64_t i = 0; i < V; i++) s += exp((double)lg[i] - (double)lg[a]);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "top_id", (double)a);
    cJSON_AddNumberToObject(o, "top_logit", lg[a]);
    cJSON_AddNumberToObject(o, "top2_gap", b >= 0 ? (double)(lg[a] - lg[b]) : 0.0);
    cJSON_AddNumberToObject(o, "logsumexp", (double)lg[a] + log(s));
    add_item(arr, NULL, o);
}

/* Prints the --json document; false when memory ran out building it (a
 * document with parts missing is never printed). */
static bool print_json(const char *dir, const char *weights, const kvc_runner_params *p, const int32_t *ids,
                       const int64_t *lens, int64_t n, const int32_t *tok, const float *lg, int64_t V,
                       const kvc_runner_stats *st, int64_t kv_bytes_per_token) {
    const uint64_t failures = kvci_alloc_failures();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", dir);
    cJSON_AddStringToObject(root, "weights", weights);
    cJSON_AddNumberToObject(root, "mode", (double)p->mode);
    cJSON_AddNumberToObject(root, "block_size", (double)p->cache.block_size);
    cJSON_AddNumberToObject(root, "max_new_tokens", (double)p->max_new_tokens);
    cJSON_AddStringToObject(root, "kv_dtype", kvc_dtype_name(p->cache.kv_dtype));
    cJSON_AddStringToObject(root, "kv_layout", p->cache.kv_layout == KVC_BLOCK_BNNDBS ? "lanes" : "tokens");
    cJSON_AddNumberToObject(root, "kv_bytes_per_token", (double)kv_bytes_per_token);
    cJSON *prompts = cJSON_AddArrayToObject(root, "prompts");
    int64_t t = 0;
    const int64_t NT = p->max_new_tokens;
    for (int64_t b = 0; b < n; b++) {
        cJSON *o = cJSON_CreateObject();
        add_item(o, "prompt_ids", cJSON_CreateIntArray(ids + t, (int)lens[b]));
        add_item(o, "generated_ids", cJSON_CreateIntArray(tok + b * NT, (int)NT));
        cJSON *steps = cJSON_AddArrayToObject(o, "steps");
        for (int64_t i = 0; i < NT && steps; i++) step_summary(steps, lg + (i * n + b) * V, V);
        add_item(prompts, NULL, o);
        t += lens[b];
    }
    cJSON *tm = cJSON_AddObjectToObject(root, "timings_ms");
    cJSON_AddNumberToObject(tm, "prefill", st->prefill_ms);
    cJSON_AddNumberToObject(tm, "decode_total", st->decode_ms);
    cJSON_AddNumberToObject(tm, "decode_steps", (double)st->decode_steps);
    cJSON_AddNumberToObject(tm, "decode_per_step", st->decode_steps ? st->decode_ms / (double)st->decode_steps : 0.0);
    char *text = cJSON_PrintUnformatted(root);
    if (text && kvci_alloc_failures() == failures) puts(text);
    const bool ok = text && kvci_alloc_failures() == failures;
    kvci_free(text);
    cJSON_Delete(root);
    return ok;
}

/* The sampling flags: the field of kvc_sampling_params each sets and its type. */
typedef enum { SF_FLOAT, SF_I32, SF_I64, SF_U64 } sampling_kind;
typedef struct sampling_flag {
    const char *flag;
    size_t offset;
    sampling_kind kind;
} sampling_flag;
#define SF(flag, field, kind)                                                                                          \
    { flag, offsetof(kvc_sampling_params, field), kind }
static const sampling_flag SAMPLING_FLAGS[] = {
    SF("--temperature", temperature, SF_FLOAT),
    SF("--top-k", top_k, SF_I32),
    SF("--top-p", top_p, SF_FLOAT),
    SF("--seed", seed, SF_U64),
    SF("--min-p", min_p, SF_FLOAT),
    SF("--presence-penalty", presence_penalty, SF_FLOAT),
    SF("--frequency-penalty", frequency_penalty, SF_FLOAT),
    SF("--repetition-penalty", repetition_penalty, SF_FLOAT),
    SF("--min-tokens", min_tokens, SF_I64),
};
#undef SF

static const sampling_flag *sampling_flag_of(const char *a) {
    for (size_t i = 0; i < sizeof SAMPLING_FLAGS / sizeof SAMPLING_FLAGS[0]; i++)
        if (strcmp(a, SAMPLING_FLAGS[i].flag) == 0) return &SAMPLING_FLAGS[i];
    return NULL;
}

static bool is_sampling_flag(const char *a) { return sampling_flag_of(a) != NULL; }

/* One sampling flag's value into *sp, checked as the engine checks it (kvc_sampling_params_check):
 * 0, or 2 after a message. */
static int parse_sampling(const char *flag, const char *val, kvc_sampling_params *sp) {
    const sampling_flag *f = sampling_flag_of(flag);
    double x = NAN;
    int64_t v = 0;
    const bool is_int = f->kind != SF_FLOAT;
    bool ok = is_int ? kvc_arg_int(val, 0, f->kind == SF_I32 ? INT32_MAX : INT64_MAX, &v) : kvc_arg_real(val, &x);
    kvc_sampling_params next = *sp;
    char *field = (char *)&next + f->offset;
    switch (f->kind) {
    case SF_FLOAT: *(float *)field = (float)x; break;
    case SF_I32: *(int32_t *)field = (int32_t)v; break;
    case SF_I64: *(int64_t *)field = v; break;
    case SF_U64: *(uint64_t *)field = (uint64_t)v; break;
    }
    if (ok && kvc_sampling_params_check(&next) != KVC_OK) {
        fprintf(stderr, "kvcache run: %s %s: %s\n", flag, val, kvc_last_error());
        return 2;
    }
    if (!ok) {
        fprintf(stderr, "kvcache run: %s expects %s, got \"%s\"\n", flag,
                is_int ? "a non-negative integer" : "a number", val ? val : "");
        return 2;
    }
    *sp = next;
    return 0;
}

/* config.json's eos_token_id (the first one of a list); -1 when it has none. */
static int32_t config_eos_id(const char *dir) {
    char path[4096], *text = NULL;
    size_t len = 0;
    int32_t eos = -1;
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path ||
        kvci_read_file(path, KVC_MAX_INPUT_BYTES, &text, &len) != KVC_OK)
        return -1;
    cJSON *doc = cJSON_ParseWithLength(text, len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "eos_token_id");
    if (cJSON_IsArray(id)) id = cJSON_GetArrayItem(id, 0);
    if (cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble <= INT32_MAX &&
        id->valuedouble == (double)(int32_t)id->valuedouble)
        eos = (int32_t)id->valuedouble;
    cJSON_Delete(doc);
    kvci_free(text);
    return eos;
}

/* The checkpoint's KV dtype as `kvcache plan` reads it from DIR/config.json: torch_dtype (or
 * dtype) bfloat16, float16 or float32; bf16 when neither names one (the plan warns). KVC_OK, or
 * the planner's failure with its message (the model loaded from the same file, so only memory
 * running out is expected here). */
static kvc_status checkpoint_kv_dtype(const char *dir, int64_t max_len, kvc_dtype *out) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path)
        return kvci_fail(KVC_EINVAL, "the path of %s/config.json is longer than %zu bytes", dir, sizeof path - 1);
    char *text = NULL;
    size_t len = 0;
    kvc_status st = kvci_read_file(path, KVC_MAX_INPUT_BYTES, &text, &len);
    kvc_model_plan *plan = NULL;
    if (st == KVC_OK) {
        kvc_plan_options opt = kvc_plan_default_options();
        opt.max_model_len =
            max_len; /* the runtime's: the config's, or its default where the config has none (Mamba2) */
        st = kvc_model_plan_create(text, len, &opt, &plan);
    }
    if (st == KVC_OK) *out = plan->options.kv_dtype;
    kvc_model_plan_destroy(plan);
    kvci_free(text);
    return st;
}

/* The flags that only some runs take, and whether each was given. */
typedef struct run_flags_given {
    bool kv_dtype, kv_layout, block_size, max_new_tokens, max_positions, weights, activations, mode;
    bool stream, sampling, eos;      /* the engine's flags: --stream, the sampling flags, --eos */
    bool role, pd_timeout, pd_fault; /* P/D: --role, --pd-timeout-ms, --pd-fault */
} run_flags_given;

/* Refuses a flag the run would ignore, saying why: 0 when every flag given
 * is used, else 2 with the message printed. `cmp`: the comparison asked
 * ("--compare-dtypes", "--compare-weights") or NULL; `both`: the two at once. */
static int check_flag_use(const run_flags_given *g, int64_t mode, const char *cmp, bool both, bool json,
                          int64_t n_prompts) {
    const char *why = NULL;
    const bool compare = cmp != NULL, weights_cmp = compare && strcmp(cmp, "--compare-weights") == 0;
    char buf[200];
    if (both)
        why = "--compare-dtypes and --compare-weights are two tables: ask for one at a time";
    else if (compare && mode == KVC_RUNNER_RECOMPUTE)
        why = weights_cmp ? "--compare-weights runs through KV caches and mode 0 has none; use --mode 1, 2 or 3"
                          : "--compare-dtypes compares KV caches and mode 0 has none; use --mode 1, 2 or 3";
    else if (compare && g->kv_dtype)
        why = weights_cmp ? "--kv-dtype is not taken with --compare-weights, which runs on f32 caches"
                          : "--kv-dtype is not taken with --compare-dtypes, which runs every KV dtype against f32";
    else if (weights_cmp && g->weights)
        why = "--weights is not taken with --compare-weights, which loads every weight dtype against f32";
    else if (weights_cmp && g->activations)
        why = "--activations is not taken with --compare-weights, which loads every weight dtype against f32";
    else if (compare && g->max_new_tokens && n_prompts == 0)
        why = buf, snprintf(buf, sizeof buf,
                            "--max-new-tokens with %s needs --prompt-ids: expected.json's prompts run for its "
                            "num_new_tokens, the length of its reference ids",
                            cmp);
    else if (mode == KVC_RUNNER_RECOMPUTE && g->kv_dtype)
        why = "--kv-dtype sets the KV cache dtype and mode 0 recomputes without a cache";
    else if (g->block_size && (mode == KVC_RUNNER_RECOMPUTE || mode == KVC_RUNNER_CONTIGUOUS))
        why = "--block-size applies to the paged modes 2 and 3; modes 0 and 1 have no blocks";
    else if (g->kv_layout && mode != KVC_RUNNER_PAGED)
        why = "--kv-layout applies to mode 2 (paged caches) only; modes 0 and 1 have no blocks, and mode 3 keeps "
              "its latent blocks in token order";
    if (!why && (g->pd_timeout || g->pd_fault) && !g->role)
        why = "--pd-timeout-ms and --pd-fault apply to a P/D run (--role) only";
    const bool engine = g->stream || g->sampling || g->eos || g->role;
    if (!why && engine && (compare || json))
        why = "--stream, the sampling flags (--temperature ...), --eos and --role run the prompts through the engine, "
              "which has no --json, --compare-dtypes or --compare-weights (those report the runner's lock-step run)";
    else if (!why && engine && (mode == KVC_RUNNER_RECOMPUTE || mode == KVC_RUNNER_CONTIGUOUS))
        why = "--stream, the sampling flags (--temperature ...), --eos and --role run through the engine's paged "
              "caches: use --mode 2 or 3";
    else if (!why && engine && g->max_positions)
        why = "--max-positions is the runner's limit; the engine sizes its caches for the longest prompt plus "
              "--max-new-tokens";
    if (!why) return 0;
    fprintf(stderr, "kvcache run: %s\n", why);
    return 2;
}

/* One of the P/D flags (--role, --pd-timeout-ms, --pd-fault) into *pd: 0, or 2 after a message. */
static int parse_pd_flag(const char *flag, const char *val, kvc_run_pd_opts *pd, run_flags_given *g) {
    int64_t v = 0;
    if (strcmp(flag, "--role") == 0) {
        g->role = val && (strcmp(val, "prefill") == 0 || strcmp(val, "decode") == 0);
        if (g->role) pd->role = val[0] == 'p' ? KVC_ENGINE_ROLE_PREFILL : KVC_ENGINE_ROLE_DECODE;
        if (g->role) return 0;
        fprintf(stderr, "kvcache run: --role expects prefill or decode, got \"%s\"\n", val ? val : "");
        return 2;
    }
    if (strcmp(flag, "--pd-timeout-ms") == 0) {
        if (kvc_arg_int(val, 1, 86400000, &pd->timeout_ms)) return g->pd_timeout = true, 0;
        fprintf(stderr, "kvcache run: --pd-timeout-ms expects an integer in [1, 86400000], got \"%s\"\n",
                val ? val : "");
        return 2;
    }
    const bool drop = val && strncmp(val, "drop=", 5) == 0, stop = val && strncmp(val, "exit=", 5) == 0,
               kill = val && strncmp(val, "kill=", 5) == 0;
    if ((drop || stop || kill) && kvc_arg_int(val + 5, 0, RUN_MAX_PROMPTS, &v)) {
        *(drop ? &pd->drop_payload : &pd->exit_after) = v;
        pd->kill = kill;
        return g->pd_fault = true, 0;
    }
    fprintf(stderr, "kvcache run: --pd-fault expects drop=K, exit=K or kill=K with K in [0, %d], got \"%s\"\n",
            RUN_MAX_PROMPTS, val ? val : "");
    return 2;
}

/* The line after the K/V bytes for a model with state layers (LFM2's short convolutions, Mamba2 mixers): their f32
 * states per sequence, every state of every such layer (docs/runtime.md, "State layers"), with a newline before it
 * into line [cap]; nothing (an empty string) for other models. */
static void states_line(const kvc_model_config *c, char *line, size_t cap) {
    int64_t layers = 0, bytes = 0;
    kvci_state_shape s[KVCI_MAX_LAYER_STATES];
    for (int64_t l = 0; l < c->num_layers; l++) {
        const int32_t n = kvci_layer_states(c, l, s);
        layers += n > 0;
        for (int32_t i = 0; i < n; i++) bytes += kvci_layer_state_floats(&s[i]) * 4;
    }
    line[0] = '\0';
    if (layers > 0)
        snprintf(line, cap, "\nstates f32: %lld bytes per sequence (%lld state layers)", (long long)bytes,
                 (long long)layers);
}

/* The first line `kvcache run` prints on the runner's path: the KV bytes per token of the runner
 * those prompts would make (and the states line after it). Left as it is when the runner refuses them. */
static void runner_first_line(const kvc_model *m, const kvc_runner_params *p, const int64_t *lens, int64_t n,
                              char *line, size_t cap) {
    int64_t maxl = 0;
    for (int64_t b = 0; b < n; b++) maxl = lens[b] > maxl ? lens[b] : maxl;
    kvc_runner *r = NULL;
    char states[128];
    states_line(kvc_model_config_of(m), states, sizeof states);
    if (kvc_runner_check(m, p, n, maxl) == KVC_OK && kvc_runner_create(m, p, n, maxl, &r) == KVC_OK)
        snprintf(line, cap, "kv cache %s: %lld bytes per token (all layers)%s", kvc_dtype_name(p->cache.kv_dtype),
                 (long long)kvc_runner_kv_bytes_per_token(r), states);
    kvc_runner_destroy(r);
}

/* --save-weights: loads dir with `weights` (q8_0 or q4_0) and writes it to out; `other`: a flag
 * that runs prompts was given too. Returns the exit code. */
static int save_weights(const char *dir, const char *out, kvc_wmat_dtype weights, const run_flags_given *g,
                        bool other) {
    if (other || g->kv_dtype || g->kv_layout || g->block_size || g->max_new_tokens || g->max_positions || g->mode ||
        g->stream || g->sampling || g->eos || g->activations) {
        fprintf(stderr, "kvcache run: --save-weights writes the quantized copy and runs nothing: it takes only "
                        "--weights q8_0 or q4_0\n");
        return 2;
    }
    if (weights != KVC_WMAT_Q8_0 && weights != KVC_WMAT_Q4_0) {
        fprintf(stderr, "kvcache run: --save-weights needs --weights q8_0 or q4_0 (got %s)\n",
                kvci_wmat_dtype_name(weights));
        return 2;
    }
    kvc_model *m = NULL;
    kvc_status st = kvci_model_load_as(dir, weights, &m);
    if (st == KVC_OK) st = kvci_model_save(m, dir, out);
    kvc_model_destroy(m);
    if (st != KVC_OK) {
        fprintf(stderr, "kvcache run: --save-weights: %s\n", kvc_last_error());
        return st == KVC_ENOMEM ? 1 : 2;
    }
    printf("saved %s with %s weights to %s\n", dir, kvci_wmat_dtype_name(weights), out);
    return 0;
}

static int run(int argc, char **argv);

int kvc_cmd_run(int argc, char **argv) { return kvc_run_tp_finish(run(argc, argv)); }

static int run(int argc, char **argv) {
    kvc_runner_params p = kvc_runner_default_params();
    const char *dir = NULL;
    bool json = false, compare = false, compare_weights = false;
    const char *save_dir = NULL;
    kvc_wmat_dtype weights = KVC_WMAT_CHECKPOINT;
    const char *activations = NULL;
    static int32_t ids[RUN_MAX_IDS];
    int64_t lens[RUN_MAX_PROMPTS], n = 0, n_ids = 0, mode = 2, tp = 0;
    run_flags_given given = {0};
    kvc_arg_seen seen = {0};
    kvc_run_engine_opts eng = {.sampling = kvc_sampling_default_params(), .eos_id = -1};
    kvc_run_pd_opts pd = {.timeout_ms = 60000, .drop_payload = -1, .exit_after = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            run_usage(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
            continue;
        } else if (strcmp(a, "--compare-dtypes") == 0) {
            compare = true;
            continue;
        } else if (strcmp(a, "--compare-weights") == 0) {
            compare_weights = true;
            continue;
        } else if (strcmp(a, "--save-weights") == 0) {
            if (!val || !*val) {
                fprintf(stderr, "kvcache run: --save-weights expects the directory to write\n");
                return 2;
            }
            save_dir = val;
        } else if (strcmp(a, "--weights") == 0) {
            if (kvci_wmat_dtype_parse(val, &weights) != KVC_OK) {
                fprintf(stderr, "kvcache run: --weights expects checkpoint, f32, bf16, q8_0 or q4_0, got \"%s\"\n",
                        val ? val : "");
                return 2;
            }
            given.weights = true;
        } else if (strcmp(a, "--activations") == 0) {
            activations = val ? val : ""; /* checked by kvc_model_set_activations after the load */
            given.activations = true;
        } else if (strcmp(a, "--kv-dtype") == 0) {
            if (!val || kvc_dtype_parse(val, &p.cache.kv_dtype) != KVC_OK || !kvc_model_kv_dtype_ok(p.cache.kv_dtype)) {
                fprintf(stderr,
                        "kvcache run: --kv-dtype expects f32, f16, bf16, i8 (int8), fp8_e4m3 (fp8) or fp8_e5m2, got "
                        "\"%s\"\n",
                        val ? val : "");
                return 2;
            }
            given.kv_dtype = true;
        } else if (strcmp(a, "--kv-layout") == 0) {
            if (val && strcmp(val, "tokens") == 0)
                p.cache.kv_layout = KVC_BLOCK_BNBSND;
            else if (val && strcmp(val, "lanes") == 0)
                p.cache.kv_layout = KVC_BLOCK_BNNDBS;
            else {
                fprintf(stderr, "kvcache run: --kv-layout expects tokens or lanes, got \"%s\"\n", val ? val : "");
                return 2;
            }
            given.kv_layout = true;
        } else if (strcmp(a, "--prompt-ids") == 0) {
            int64_t got = n < RUN_MAX_PROMPTS ? parse_ids(val, ids, &n_ids) : 0;
            if (got <= 0) {
                if (n == RUN_MAX_PROMPTS)
                    fprintf(stderr, "kvcache run: at most %d prompts (--prompt-ids)\n", RUN_MAX_PROMPTS);
                else if (got == -2)
                    fprintf(stderr, "kvcache run: at most %d prompt ids in all prompts together\n", RUN_MAX_IDS);
                else
                    fprintf(stderr, "kvcache run: --prompt-ids expects comma-separated ids in [0, %d], got \"%s\"\n",
                            INT32_MAX, val ? val : "");
                return 2;
            }
            lens[n++] = got;
        } else if (strcmp(a, "--max-new-tokens") == 0 || strcmp(a, "--block-size") == 0 || strcmp(a, "--mode") == 0 ||
                   strcmp(a, "--max-positions") == 0 || strcmp(a, "--tp") == 0) {
            int64_t v, hi = KVC_RUNNER_MAX_POSITIONS;
            const bool is_mode = strcmp(a, "--mode") == 0, is_block = strcmp(a, "--block-size") == 0;
            if (is_mode) hi = 3;
            if (is_block) hi = KVC_ATTN_MAX_BLOCK_SIZE;
            if (strcmp(a, "--tp") == 0) hi = 4096;
            if (!kvc_arg_int(val, is_mode ? 0 : 1, hi, &v)) {
                fprintf(stderr, "kvcache run: %s expects an integer in [%d, %lld], got \"%s\"\n", a, is_mode ? 0 : 1,
                        (long long)hi, val ? val : "");
                return 2;
            }
            if (is_mode)
                mode = v, given.mode = true;
            else if (strcmp(a, "--tp") == 0)
                tp = v;
            else if (is_block)
                p.cache.block_size = v, given.block_size = true;
            else if (strcmp(a, "--max-positions") == 0)
                p.max_positions = v, given.max_positions = true;
            else
                p.max_new_tokens = v, given.max_new_tokens = true;
        } else if (strcmp(a, "--stream") == 0) {
            eng.stream = given.stream = true;
            continue;
        } else if (is_sampling_flag(a)) {
            if (parse_sampling(a, val, &eng.sampling) != 0) return 2;
            given.sampling = true;
        } else if (strcmp(a, "--role") == 0 || strcmp(a, "--pd-timeout-ms") == 0 || strcmp(a, "--pd-fault") == 0) {
            if (parse_pd_flag(a, val, &pd, &given) != 0) return 2;
        } else if (strcmp(a, "--eos") == 0) {
            int64_t v = -1;
            if (!val || (strcmp(val, "none") != 0 && !kvc_arg_int(val, 0, INT32_MAX, &v))) {
                fprintf(stderr, "kvcache run: --eos expects a token id in [0, %d] or none, got \"%s\"\n", INT32_MAX,
                        val ? val : "");
                return 2;
            }
            eng.eos_id = (int32_t)v;
            given.eos = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "kvcache run: unknown option %s\n", a);
            run_usage(stderr);
            return 2;
        } else if (!dir) {
            dir = a;
            continue;
        } else {
            fprintf(stderr, "kvcache run: unexpected argument %s\n", a);
            return 2;
        }
        if (strcmp(a, "--prompt-ids") != 0 && kvc_arg_repeated(&seen, "run", a)) return 2; /* prompts repeat */
        i++;
    }
    if (tp > 0 && (save_dir || compare_weights)) {
        fprintf(stderr, "kvcache run: --tp does not take %s (it runs in one process)\n",
                save_dir ? "--save-weights" : "--compare-weights");
        return 2;
    }
    if (dir && save_dir)
        return save_weights(dir, save_dir, weights, &given, n > 0 || compare || compare_weights || json);
    if (!dir || (n == 0 && !compare && !compare_weights)) {
        run_usage(stderr);
        return 2;
    }
    const char *cmp = compare_weights ? "--compare-weights" : compare ? "--compare-dtypes" : NULL;
    if (check_flag_use(&given, mode, cmp, compare && compare_weights, json, n) != 0) return 2;
    if (given.pd_fault && pd.role != KVC_ENGINE_ROLE_PREFILL) {
        fprintf(stderr, "kvcache run: --pd-fault injects faults on the prefill rank; use it with --role prefill\n");
        return 2;
    }
    p.mode = (kvc_runner_mode)mode;
    if (compare_weights) return kvc_run_compare_weights(dir, p, ids, lens, n, json);
    kvc_model *m = NULL;
    if (tp == 0)
        fprintf(stderr, "kvcache run: loading %s (weights %s, activations %s) ...\n", dir,
                kvci_wmat_dtype_name(weights), activations ? activations : "f32");
    kvc_status loaded = kvc_run_dist_start(tp, given.role ? pd.role : KVC_ENGINE_ROLE_BOTH);
    if (loaded == KVC_OK) loaded = kvc_run_load_model(dir, tp, kvci_wmat_dtype_name(weights), &m);
    if (loaded == KVC_OK && activations && (loaded = kvc_model_set_activations(m, activations)) != KVC_OK)
        kvc_model_destroy(m);
    if (loaded != KVC_OK) {
        fprintf(stderr, "kvcache run: %s\n", kvc_last_error());
        return loaded == KVC_ENOMEM ? 1 : 2;
    }
    const kvc_model_config *mc = kvc_model_config_of(m);
    if (kvc_run_tp_root())
        fprintf(stderr, "kvcache run: loaded %s (%lld layers, vocab %lld)\n", mc->model_type, (long long)mc->num_layers,
                (long long)mc->vocab_size);
    if (kvc_run_tp_root() && mc->max_positions_assumed)
        fprintf(stderr,
                "kvcache run: warning: config.json has no length key (max_position_embeddings, n_positions, "
                "seq_length, max_seq_len): assuming %lld positions, as vLLM does\n",
                (long long)mc->max_position_embeddings);
    if (kvc_run_check_ids(ids, lens, n, given.eos ? eng.eos_id : -1, kvci_model_input_vocab(mc), mc->vocab_size) != 0) {
        kvc_model_destroy(m);
        return 2;
    }
    if (!given.kv_dtype && !compare && mode != KVC_RUNNER_RECOMPUTE) {
        kvc_status st = checkpoint_kv_dtype(dir, mc->max_position_embeddings, &p.cache.kv_dtype);
        if (st != KVC_OK) {
            fprintf(stderr, "kvcache run: the checkpoint's KV dtype: %s\n", kvc_last_error());
            kvc_model_destroy(m);
            return st == KVC_ENOMEM ? 1 : 2;
        }
    }
    if (compare) {
        const int crc = kvc_run_compare_dtypes(m, dir, p, ids, lens, n, json);
        kvc_model_destroy(m);
        return crc;
    }
    if (!given.eos) eng.eos_id = config_eos_id(dir); /* the model's end-of-sequence id, -1 if none */
    if (given.stream || given.sampling || given.eos || given.role) {
        eng.max_new_tokens = p.max_new_tokens;
        eng.adapter = (kvc_engine_adapter_params){.latent = mode == KVC_RUNNER_MLA_LATENT, .cache = p.cache};
        char first[384];
        snprintf(first, sizeof first, "kv cache %s, through the engine (paged blocks of %lld tokens)",
                 kvc_dtype_name(p.cache.kv_dtype), (long long)p.cache.block_size);
        if (given.role && !(given.stream || given.sampling || given.eos)) /* `kvcache run ARGS` takes the runner */
            runner_first_line(m, &p, lens, n, first, sizeof first);
        if (!given.role) printf("%s\n", first);
        pd.first_line = first;
        const int erc = given.role ? kvc_run_pd(m, &eng, &pd, ids, lens, n) : kvc_run_engine(m, &eng, ids, lens, n);
        kvc_model_destroy(m);
        return erc;
    }
    int64_t maxl = 0;
    for (int64_t b = 0; b < n; b++) maxl = lens[b] > maxl ? lens[b] : maxl;
    const int64_t V = kvc_model_config_of(m)->vocab_size, NT = p.max_new_tokens;
    /* the runner's checks (positions included) before any buffer is sized */
    if (kvc_runner_check(m, &p, n, maxl) != KVC_OK) {
        fprintf(stderr, "kvcache run: %s\n", kvc_last_error());
        kvc_model_destroy(m);
        return 2;
    }
    /* n <= 64, NT <= 2^20 and V <= 2^24 (model check): these products fit in int64. */
    if (json && NT * n * V * (int64_t)sizeof(float) > RUN_MAX_LOGIT_BYTES) {
        fprintf(stderr, "kvcache run: --json would keep %lld bytes of logits, more than %lld; lower --max-new-tokens\n",
                (long long)(NT * n * V * (int64_t)sizeof(float)), (long long)RUN_MAX_LOGIT_BYTES);
        kvc_model_destroy(m);
        return 2;
    }
    kvc_runner *r = NULL;
    int32_t *tok = kvci_calloc((size_t)(n * NT), sizeof *tok);
    float *lg = json ? kvci_calloc((size_t)(NT * n * V), sizeof *lg) : NULL;
    kvc_runner_stats st = {0};
    int rc = 0;
    if (!tok || (json && !lg)) {
        fprintf(stderr, "kvcache run: out of memory\n");
        rc = 1;
    } else if (kvc_runner_create(m, &p, n, maxl, &r) != KVC_OK ||
               kvc_runner_generate(r, ids, lens, n, tok, lg, &st) != KVC_OK) {
        fprintf(stderr, "kvcache run: %s\n", kvc_last_error());
        rc = 1;
    } else if (json && !print_json(dir, kvci_wmat_dtype_name(weights), &p, ids, lens, n, tok, lg, V, &st,
                                   kvc_runner_kv_bytes_per_token(r))) {
        fprintf(stderr, "kvcache run: out of memory building the JSON output\n");
        rc = 1;
    } else if (!json) {
        if (p.mode != KVC_RUNNER_RECOMPUTE) {
            char states[128];
            states_line(kvc_model_config_of(m), states, sizeof states);
            printf("kv cache %s: %lld bytes per token (all layers)%s\n", kvc_dtype_name(p.cache.kv_dtype),
                   (long long)kvc_runner_kv_bytes_per_token(r), states);
        }
        for (int64_t b = 0; b < n; b++) { /* up to and including the model's end-of-sequence id */
            for (int64_t i = 0; i < NT && (i == 0 || tok[b * NT + i - 1] != eng.eos_id); i++)
                printf(i ? ",%d" : "%d", tok[b * NT + i]);
            printf("\n");
        }
    }
    kvc_runner_destroy(r);
    kvc_model_destroy(m);
    kvci_free(tok);
    kvci_free(lg);
    return rc;
}
