/* The first touch of a KVCI_PAGES_PROBED mapping (kvci_pages_alloc), timed
 * chunk by chunk. A huge page's first write makes the kernel clear all 2 MiB
 * of it: on bare metal at several GB/s, but a virtual machine whose host
 * backs guest memory lazily (and takes freed 2 MiB blocks back: free page
 * reporting) pays a host fault per 4 KiB of it, and the 1.5 GB weights
 * arena of a Qwen3-0.6B took 15 s of kernel time to fault where 4 KiB pages
 * took 1.4 s (docs/runtime.md). Frames freed a moment ago (another process's)
 * are still backed and clear fast: hence chunks, timed until one is slow. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <time.h>

#include "base/internal.h"

#define PROBE_GBS_DEFAULT 1.0 /* bare metal clears at several GB/s, the slow VM at 0.05-0.3 */

static _Atomic double probe_gbs = PROBE_GBS_DEFAULT;

void kvci_pages_probe_threshold(double gbs) { atomic_store(&probe_gbs, gbs >= 0.0 ? gbs : PROBE_GBS_DEFAULT); }

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t kvci_pages_fault_while_fast(void *p, size_t bytes) {
    const size_t chunk = KVCI_PAGES_PROBE_PAGES * KVCI_HUGE_PAGE;
    const double gbs = atomic_load(&probe_gbs);
    for (size_t at = 0; at < bytes;) {
        const size_t n = bytes - at < chunk ? bytes - at : chunk;
        /* the thread's CPU time: the clearing runs on it, and time lost to other processes does not count */
        const double t0 = thread_cpu_s();
        for (size_t i = 0; i < n; i += KVCI_HUGE_PAGE) ((volatile char *)p)[at + i] = 0; /* zero-filled still */
        at += n;
        if (!((thread_cpu_s() - t0) * gbs <= (double)n * 1e-9)) return at; /* INFINITY: slow (NaN at 0 s) */
    }
    return bytes;
}
