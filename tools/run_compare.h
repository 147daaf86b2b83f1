/* `kvcache run MODEL_DIR --compare-dtypes`: every KV cache dtype against f32
 * on the same prompts (kvc_runner_compare_dtype), printed as a table; and
 * `--compare-weights`: every weight dtype against f32 weights. */
#ifndef KVC_TOOLS_RUN_COMPARE_H
#define KVC_TOOLS_RUN_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/runner.h"

/* Prompts ids/lens[n] (n 0: the prompts, greedy_ids and num_new_tokens of
 * DIR/expected.json, the Hugging Face oracle format of tests/data/oracle,
 * whose greedy ids become the reference column; every id an integer of the
 * vocabulary). p: mode (1-3), block size, max_new_tokens, max_positions,
 * checked by kvc_runner_check before the table starts. Returns the process
 * exit code. */
int kvc_run_compare_dtypes(const kvc_model *m, const char *dir, kvc_runner_params p, const int32_t *ids,
                           const int64_t *lens, int64_t n, bool json);

/* The same prompts (and params, kv_dtype ignored: f32 caches) through DIR loaded with its GEMM
 * matrices in f32 (the reference), bf16, bf16 with activations rounded to bf16 (the row
 * "bf16+act", kvc_model_set_activations), q8_0 and q4_0 (kvci_model_load_as), one at a time
 * beside the reference: one row per weight dtype. Returns the process exit code. */
int kvc_run_compare_weights(const char *dir, kvc_runner_params p, const int32_t *ids, const int64_t *lens, int64_t n,
                            bool json);

/* The token ids of --prompt-ids (ids/lens[n]) against a loaded model's embedded ids [0, V_in) and --eos (-1: none)
 * against its logits' [0, V) (V_in above V: a pruned head, kvc_model_config.input_vocab_size): 0, or 2 after a
 * message naming the flag (the parser knew neither; the forward's message named token_ids and the run failed with
 * status 1). */
int kvc_run_check_ids(const int32_t *ids, const int64_t *lens, int64_t n, int32_t eos, int64_t V_in, int64_t V);

#endif
