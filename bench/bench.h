/* `kvcache bench WHAT [--json] [--against LIB]`: benchmarks, never tests.
 * Every figure is printed next to a baseline measured in the same run. */
#ifndef KVC_BENCH_H
#define KVC_BENCH_H

#include <stdbool.h>

#include "kvcache/base.h"

/* Pages of the attention benchmark's read buffers and caches (--pages). */
typedef enum kvc_bench_pages { KVC_BENCH_PAGES_2M = 0, KVC_BENCH_PAGES_4K, KVC_BENCH_PAGES_BOTH } kvc_bench_pages;

typedef struct kvc_bench_opts {
    bool json;               /* one JSON object per line instead of a table */
    const char *against;     /* attention and model: another build's libkvcache.so, timed in alternation; NULL: none */
    const char *plot;        /* engine only: FILE.png of the TTFT/TPOT distributions (cli/plot_data.h); NULL: none */
    const char *only;        /* attention: run the rows whose label contains this text; gemm: the tables whose
                              * name contains it (bench_gemm.c); NULL: all */
    kvc_bench_pages pages;   /* attention only: 2 MiB pages (default, as the library's cache storage), 4 KiB, or both */
    const char *model_dir;   /* model only: the model directory (the argument after `model`) */
    const char *batches;     /* model only: --batches LIST (default 1,8,32); NULL: default */
    const char *prompts;     /* model only: --prompts LIST (default 64,512); NULL: default */
    bool long_prompts;       /* model only: --long adds prompts of 2,048 tokens to the default list */
    const char *weights;     /* model only: --weights checkpoint|f32|bf16|q8_0|q4_0, the GEMM matrices' dtype
                              * at load (kvci_wmat_dtype_parse); NULL: checkpoint */
    const char *activations; /* model only: --activations f32|bf16|f32,bf16 (kvc_model_set_activations; both:
                              * every row runs each in turn); NULL: f32 */
    bool profile;            /* model only: --profile, prefill and decode time by kind of work (step_profile.h) */
} kvc_bench_opts;

typedef int (*kvc_bench_fn)(const kvc_bench_opts *opts);

typedef struct kvc_bench_entry {
    const char *name;
    const char *summary;
    kvc_bench_fn run;
} kvc_bench_entry;

/* bench/bench_table.c; terminated by a NULL name. */
extern const kvc_bench_entry kvc_benches[];

/* Monotonic wall clock in seconds. */
double kvc_bench_now(void);

/* CPU time of the process (all its threads) in seconds: unlike the wall
 * clock, it does not advance while the process waits for a core that other
 * processes hold, so an A/B of two memory-bound variants on a loaded machine
 * can compare it (with one thread it is the time the call ran). */
double kvc_bench_cpu_now(void);

/* Median of v[0..n) (sorts v). */
double kvc_bench_median(double *v, int n);

#ifdef KVC_HAVE_MPI
/* bench/bench_transfer.c: the two ranks of `mpirun -np 2 kvcache bench WHAT`, MPI started into *comm and
 * its transport opened into *tr; refused, naming WHAT, when the job has another number of ranks.
 * Whatever it returns, the caller closes *tr (zeroed first) and finalizes *comm. */
struct kvc_comm;
struct kvci_transport;
kvc_status kvc_bench_mpi_pair_open(const char *what, struct kvc_comm *comm, struct kvci_transport *tr);
#endif

/* Parses `bench` arguments: -1 with *bench and *opts set when a benchmark
 * should run, otherwise the exit status (0 after --help, 2 on bad usage, with
 * the message printed). The fuzz target calls it without running anything. */
int kvc_bench_parse(int argc, char **argv, const kvc_bench_entry **bench, kvc_bench_opts *opts);
int kvc_cmd_bench(int argc, char **argv);

#endif
