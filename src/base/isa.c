/* kvci_isa_cap (isa.h): KVC_SIMD, read once; kvci_cpu_runs: the CPU's tiers; kvci_isa_runs: both; kvci_cpu_is_intel:
 * the CPUID vendor. */
#include "base/isa.h"

#include <stdlib.h>
#include <string.h>

static int _Atomic cap = -1; /* -1: not read yet (every thread reads the same value) */

kvc_isa kvci_isa_cap(void) {
    int c = cap;
    if (c < 0) {
        static const char *const names[] = {"portable", "avx2", "avx512", "amx"};
        const char *e = getenv("KVC_SIMD");
        c = KVC_ISA_AMX;
        for (int i = 0; e && i < 4; i++)
            if (strcmp(e, names[i]) == 0) c = i;
        cap = c;
    }
    return (kvc_isa)c;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static bool cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

bool kvci_cpu_is_intel(void) {
    static _Atomic int known; /* 0: not read yet, 1: other, 2: Intel (every thread reads the same) */
    int k = known;
    if (!k) {
        bool intel = false;
#if defined(__x86_64__) || defined(__i386__)
        unsigned a, b, c, d;
        intel = __get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;
#endif
        known = k = intel ? 2 : 1;
    }
    return k == 2;
}

static bool cpu_runs_uncached(kvc_isa t) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    switch (t) {
    case KVC_ISA_PORTABLE: return true;
    case KVC_ISA_AVX2: return avx2;
    case KVC_ISA_AVX512:
        return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
    default: return false;
    }
#else
    return t == KVC_ISA_PORTABLE;
#endif
}

static int _Atomic cpu[KVC_ISA_AMX + 1] = {-1, -1, -1, -1}; /* -1: not asked yet (per-row kernels ask often) */

bool kvci_cpu_runs(kvc_isa t) {
    if (t < KVC_ISA_PORTABLE || t > KVC_ISA_AMX) return false;
    int r = cpu[t];
    if (r < 0) cpu[t] = r = cpu_runs_uncached(t);
    return r != 0;
}

bool kvci_isa_runs(kvc_isa t) { return t <= kvci_isa_cap() && kvci_cpu_runs(t); }
