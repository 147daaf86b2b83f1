/* A Hugging Face model directory written from a model in memory, for tests that need a checkpoint
 * the oracle data lacks (a DeepSeek-V3 with routed-expert layers). */
#ifndef KVC_TEST_CHECKPOINT_H
#define KVC_TEST_CHECKPOINT_H

#include <stdbool.h>

#include "kvcache/model.h"

/* A fresh directory under $TMPDIR (or /tmp) holding tests/data/oracle/deepseek_v3's config.json with
 * first_k_dense_replace 1 (layers 1 and 2 route 8 experts, one shared) and model.safetensors of a
 * random f32 model of that config (seed); layer 1's experts as per-expert modules, layer 2's in the
 * fused form. Writes the path into dir[cap]; remove it with kvc_test_remove_checkpoint. */
void kvc_test_write_deepseek_moe(uint64_t seed, char *dir, size_t cap);
void kvc_test_remove_checkpoint(const char *dir);

#endif
