/* Whether this machine backs an advised mapping with huge pages quickly
 * enough on first touch (kvci_pages_alloc's KVCI_PAGES_PROBED). A huge
 * page's first write makes the kernel clear all 2 MiB of it: on bare metal
 * a few GB/s, but a virtual machine whose host backs guest memory lazily
 * (and takes freed 2 MiB blocks back: free page reporting) pays a host
 * fault per 4 KiB of it, and a 1.5 GB weights arena took 15 s of kernel time
 * to fault where 4 KiB pages took 1.4 s (docs/runtime.md). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <time.h>

#include "base/internal.h"

#define PROBE_GBS_DEFAULT 1.0 /* bare metal clears at several GB/s, the slow VMs at 0.05-0.3 */

static _Atomic double probe_gbs = PROBE_GBS_DEFAULT;

void kvci_pages_probe_threshold(double gbs) { atomic_store(&probe_gbs, gbs >= 0.0 ? gbs : PROBE_GBS_DEFAULT); }

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool kvci_pages_probe_fast(void *p, size_t bytes) {
    /* the thread's CPU time: the clearing runs on it, and time lost to other processes does not count */
    const double t0 = thread_cpu_s();
    for (size_t at = 0; at < bytes; at += KVCI_HUGE_PAGE) ((volatile char *)p)[at] = 0; /* zero-filled still */
    const double s = thread_cpu_s() - t0;
    return s * atomic_load(&probe_gbs) <= (double)bytes * 1e-9; /* a threshold of INFINITY: never (NaN at s 0) */
}
