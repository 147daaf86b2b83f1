/* The shared-pool benchmark (bench_pools.c), also run by `kvcache bench engine`. */
#ifndef KVC_BENCH_POOLS_H
#define KVC_BENCH_POOLS_H

#include <stdbool.h>

#include "kvcache/kvcache.h"

/* Measures and prints (a table, or one JSON line) the hybrid model served
 * with a shared pool and with a pool per key in the same KV memory. */
kvc_status kvc_bench_pools_run(bool json);

#endif
