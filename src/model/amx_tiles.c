/* The AMX tile-data permission (amx_tiles.h), asked once per process. */
#define _GNU_SOURCE
#include "model/amx_tiles.h"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

static bool granted;
static pthread_once_t asked = PTHREAD_ONCE_INIT;

static void ask_permission(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24))) return; /* AMX-TILE */
    granted = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool kvci_amx_tiles_granted(void) {
    (void)pthread_once(&asked, ask_permission);
    return granted;
}
#else
bool kvci_amx_tiles_granted(void) { return false; }
#endif
