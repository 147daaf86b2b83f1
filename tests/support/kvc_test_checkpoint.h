/* A Hugging Face model directory written from a model in memory, for tests that need a checkpoint
 * the oracle data lacks (a DeepSeek-V3 with routed-expert layers, a Qwen3-MoE in the fused form). */
#ifndef KVC_TEST_CHECKPOINT_H
#define KVC_TEST_CHECKPOINT_H

#include <stdbool.h>

#include "kvcache/model.h"

/* A fresh directory under $TMPDIR (or /tmp) holding tests/data/oracle/deepseek_v3's config.json with
 * first_k_dense_replace 1 (layers 1 and 2 route 8 experts, one shared) and model.safetensors of a
 * random f32 model of that config (seed); layer 1's experts as per-expert modules, layer 2's in the
 * fused form. Writes the path into dir[cap]; remove it with kvc_test_remove_checkpoint. */
void kvc_test_write_deepseek_moe(uint64_t seed, char *dir, size_t cap);
/* The same from tests/data/oracle/qwen3_moe's config.json as it is (layer 0 dense, layers 1 and 2
 * route 8 experts): layer 1's experts as per-expert modules, layer 2's fused (gate_up_proj / down_proj). */
void kvc_test_write_qwen3_moe(uint64_t seed, char *dir, size_t cap);
/* tests/data/oracle/gemma3's config.json and a random model of it, its "model." tensors under `prefix`
 * (a multimodal checkpoint's text model: "model.language_model.", "language_model.model."; NULL: as
 * they are). The norms are written as the model holds them (1 + w): compare loads with loads. */
void kvc_test_write_gemma3(uint64_t seed, const char *prefix, char *dir, size_t cap);
/* tests/data/oracle/axk1's config.json and a random model of it without the routers' e_score_correction_bias, as
 * A.X-K1's released checkpoints store it. */
void kvc_test_write_axk1_released(uint64_t seed, char *dir, size_t cap);
/* The falcon_h1 oracle's config with one Mamba2 group instead of 2 (each rank of 2 holds a replica of it), random. */
void kvc_test_write_falcon_h1_one_group(uint64_t seed, char *dir, size_t cap);
void kvc_test_remove_checkpoint(const char *dir);

#endif
