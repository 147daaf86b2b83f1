/* The shared-pool benchmark (bench_pools.c), also run by `kvcache bench engine`. */
#ifndef KVC_BENCH_POOLS_H
#define KVC_BENCH_POOLS_H

#include <stdbool.h>

#include "kvcache/kvcache.h"

/* Measures and prints (a table, or one JSON line) the hybrid model served
 * with a shared pool and with a pool per key in the same KV memory. */
kvc_status kvc_bench_pools_run(bool json);

/* The KV bytes an engine with params p allocates over m (built and destroyed;
 * the engine's own error when it cannot be built). */
kvc_status kvc_bench_engine_kv_bytes(const kvc_model *m, const kvc_engine_adapter_params *ap,
                                     const kvc_engine_params *p, int64_t *bytes);

#endif
