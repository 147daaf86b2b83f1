/* The machine's ceilings measured during a benchmark (machine_limits.c). */
#ifndef KVC_BENCH_MACHINE_LIMITS_H
#define KVC_BENCH_MACHINE_LIMITS_H

/* Allocates and fills the 1 GiB read buffer; 0 on success. */
int kvc_limits_init(void);
void kvc_limits_free(void);
/* One read pass over the buffer with all threads, in GB/s (1e9); it also
 * evicts whatever the caches held. */
double kvc_limits_read_pass(void);
/* One FMA-peak pass (about 0.1 s) with all threads, in GFLOP/s. */
double kvc_limits_peak_pass(void);

#endif
