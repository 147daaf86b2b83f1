/* The two OpenMP thread queries the kernels use. A file compiled without
 * OpenMP (the core library, libkvcache_core, which links no OpenMP runtime)
 * gets their single-thread answers and its `#pragma omp` loops run on the
 * calling thread; results are the same either way. */
#ifndef KVC_BASE_THREADS_H
#define KVC_BASE_THREADS_H

#ifdef _OPENMP
#include <omp.h>
static inline int kvci_max_threads(void) { return omp_get_max_threads(); }
static inline int kvci_thread_num(void) { return omp_get_thread_num(); }
#else
static inline int kvci_max_threads(void) { return 1; }
static inline int kvci_thread_num(void) { return 0; }
#endif

#endif /* KVC_BASE_THREADS_H */
