/* kvcache: the key-value cache of large-language-model inference.
 *
 * Layers (each header documents its objects and their thread safety):
 *   base.h   status codes, kvc_last_error(), dtypes, tensor views, allocation
 *   layout.h the block layouts of paged caches (below cache.h and ops.h)
 *   cache.h  block pool, cache descriptions, managers, planner, storage
 *   half.h   f16 / bf16 conversions
 *   batch.h  the metadata of one forward step (positions, lengths, tables, slots)
 *   ops.h    cache writes and the attention operator
 *   model.h  config.json, safetensors, the model families and their forward pass
 *   runner.h the standalone runner (modes 1-3 and a no-cache recomputation)
 *   engine.h the framework deployment: requests, the budget scheduler, sampling
 *   plan.h   a model's config.json -> its cache plan and memory budget
 *   version.h KVC_VERSION_* and kvc_version()
 *   export.h KVC_API, the mark of the functions a shared library exports
 *
 * Each layer's behaviour, with the worked examples that are its tests, is in
 * docs/<layer>.md; rule ids cited in the headers ("KM 8.1", "R9") in
 * docs/rules.md; installing and linking (libkvcache, libkvcache_core,
 * pkg-config, CMake) in docs/install.md.
 *
 * Usage sketch (one full-attention layer, 16-token blocks; compiled and run
 * as tests/base/test_usage_example.c):
 *
 *   kvc_cache_entry k = kvc_cache_entry_default();
 *   snprintf(k.name, sizeof k.name, "k_cache");
 *   k.num_head = 8; k.n_dims = 1; k.dim[0] = 128; k.block_size = 16;
 *   kvc_layer_cache_info layer = {.layer_idx = 0, .n_caches = 1, .caches = &k};
 *   kvc_model_cache_info ci = {.num_layers = 1, .n_layer_infos = 1, .layer_infos = &layer};
 *
 *   kvc_plan_params pp = kvc_plan_default_params();
 *   pp.mode = KVC_PLAN_OFFLINE; pp.max_len = 4096; pp.max_concurrency = 16;
 *   kvc_block_plan plan;
 *   if (kvc_plan_blocks(&pp, &ci, &plan) != KVC_OK) puts(kvc_last_error());
 *
 *   kvc_manager_params mp = kvc_manager_default_params();
 *   mp.max_model_len = 4096;
 *   kvc_manager *m = NULL;
 *   kvc_manager_create(&ci, &plan, &mp, &m);
 *   kvc_status st = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 7, .num_new_tokens = 100});
 *   // st == KVC_OK: positions 0..99 of request 7 are backed; KVC_NO_SPACE: wait.
 *   kvc_manager_free(m, 7);
 *   kvc_manager_destroy(m);
 */
#ifndef KVCACHE_KVCACHE_H
#define KVCACHE_KVCACHE_H

#include "kvcache/export.h"
#include "kvcache/version.h"
#include "kvcache/base.h"
#include "kvcache/half.h"
#include "kvcache/layout.h"
#include "kvcache/cache.h"
#include "kvcache/plan.h"
#include "kvcache/batch.h"
#include "kvcache/ops.h"
#include "kvcache/model.h"
#include "kvcache/runner.h"
#include "kvcache/engine.h"

#endif
