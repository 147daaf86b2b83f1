/* kvci_amx_bf16_granted (amx.h): CPUID, then the tile-data permission, asked once. */
#define _GNU_SOURCE
#include "base/amx.h"

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
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24);
    const bool avx512_bf16 = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
    if (!amx_bf16 || !amx_tile || !avx512_bf16 || !__builtin_cpu_supports("avx512f")) return;
    granted = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool kvci_amx_bf16_granted(void) {
    (void)pthread_once(&asked, ask_permission);
    return granted;
}
#else
bool kvci_amx_bf16_granted(void) { return false; }
#endif
