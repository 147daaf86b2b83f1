/* One line per benchmark of `kvcache bench`. */
#include <stddef.h>

#include "bench.h"

int kvc_bench_attention(const kvc_bench_opts *opts); /* bench_attention.c */
int kvc_bench_manager(const kvc_bench_opts *opts);   /* bench_manager.c */
int kvc_bench_engine(const kvc_bench_opts *opts);    /* bench_engine.c */
int kvc_bench_gemm(const kvc_bench_opts *opts);      /* bench_gemm.c */
int kvc_bench_model(const kvc_bench_opts *opts);     /* bench_model.c */
int kvc_bench_prefix(const kvc_bench_opts *opts);    /* bench_prefix.c */
int kvc_bench_soak(const kvc_bench_opts *opts);      /* bench_soak.c */
int kvc_bench_pools(const kvc_bench_opts *opts);     /* bench_pools.c */
#ifdef KVC_HAVE_MPI                                 /* the benchmarks of several processes, listed in builds with MPI */
int kvc_bench_transfer(const kvc_bench_opts *opts); /* bench_transfer.c */
int kvc_bench_pd(const kvc_bench_opts *opts);       /* bench_pd.c */
#endif

const kvc_bench_entry kvc_benches[] = {
    {"attention", "attention kernel vs its roofline (read bandwidth, instruction peaks) and a naive baseline",
     kvc_bench_attention},
    {"manager", "block pool take/give and a 256-request decode step", kvc_bench_manager},
    {"engine", "budget vs prefill-alone scheduler vs static batching: throughput, TTFT/TPOT, KV blocks",
     kvc_bench_engine},
    {"gemm", "batch-invariant GEMM vs OpenBLAS sgemm on model shapes; bf16 and quantized kernels", kvc_bench_gemm},
    {"model", "a model directory: prefill tokens/s and decode ms per step vs their rooflines, memory, paths",
     kvc_bench_model},
    {"prefix", "prefix caching on vs off: shared-prefix and chat workloads, cost of a hit per block vs XXH3",
     kvc_bench_prefix},
    {"soak", "1M requests through the manager, 100k through the engine: memory at checkpoints", kvc_bench_soak},
    {"pools", "hybrid model at equal KV memory: one shared pool vs a pool per key (sequences, tokens/s)",
     kvc_bench_pools},
#ifdef KVC_HAVE_MPI
    {"transfer", "P/D KV transfer of one request vs memcpy and raw MPI_Send/Recv of the same bytes (mpirun -np 2)",
     kvc_bench_transfer},
    {"pd", "prefill/decode disaggregation vs one instance: TTFT/TPOT percentiles, long-prompt mix (mpirun -np 2)",
     kvc_bench_pd},
#endif
    {NULL, NULL, NULL},
};
