/* Oracle helpers shared by the oracle tests (tests/data/oracle/, see its README): expected.json's
 * prompts, its logits compared at 1e-4 relative with a 2e-5 absolute floor (logits here reach about
 * 10; the floor is 1e-4 relative at 0.2), greedy runs of the runner against its ids and logits. */
#ifndef KVC_TEST_ORACLE_H
#define KVC_TEST_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kvcache/runner.h"

#define KVC_TEST_ORACLE_REL_TOL     1e-4
#define KVC_TEST_ORACLE_ABS_FLOOR   2e-5
#define KVC_TEST_ORACLE_MAX_PROMPTS 4

/* An oracle directory: its model (loaded by kvc_test_oracle_open; a test may swap in another
 * model of the same checkpoint, e.g. a tensor-parallel shard) and expected.json's prompts. */
typedef struct kvc_test_oracle {
    kvc_model *m;
    cJSON *exp;
    int64_t n, N, V; /* prompts, new tokens, vocabulary */
    int32_t ids[1024];
    int64_t lens[KVC_TEST_ORACLE_MAX_PROMPTS];
    const cJSON *prompts[KVC_TEST_ORACLE_MAX_PROMPTS];
} kvc_test_oracle;

/* The absolute floor in use: KVC_TEST_ORACLE_ABS_FLOOR, unless a test sets another for one directory whose float32
 * reference is itself further from the exact result (qwen3_next; test_model_oracle.c says why) and restores it. */
extern double kvc_test_oracle_abs_floor;
/* Compares float row `got` [V] with the JSON array `ref` (fails the test past the tolerance);
 * returns the largest relative error. */
double kvc_test_oracle_compare_row(const float *got, const cJSON *ref, int64_t V, const char *what, int64_t i);
/* Loads tests/data/oracle/<sub> and its expected.json. */
void kvc_test_oracle_open(const char *sub, kvc_test_oracle *o);
void kvc_test_oracle_close(kvc_test_oracle *o);
/* The runner in `mode` (block size bs) over every prompt at once: greedy ids equal expected.json's,
 * step logits within the tolerance. */
void kvc_test_oracle_check_greedy(const kvc_test_oracle *o, kvc_runner_mode mode, int64_t bs, bool mla_paged,
                                  const char *sub);

#endif
