/* kvci_isa_cap (isa.h): KVC_SIMD, read once; kvci_isa_runs: the cap and the CPU. */
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

static bool runs_uncached(kvc_isa t) {
    if (t > kvci_isa_cap()) return false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    switch (t) {
    case KVC_ISA_PORTABLE: return true;
    case KVC_ISA_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case KVC_ISA_AVX512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    default: return false;
    }
#else
    return t == KVC_ISA_PORTABLE;
#endif
}

static int _Atomic runs[KVC_ISA_AMX + 1] = {-1, -1, -1, -1}; /* -1: not asked yet (per-row kernels ask often) */

bool kvci_isa_runs(kvc_isa t) {
    if (t < KVC_ISA_PORTABLE || t > KVC_ISA_AMX) return false;
    int r = runs[t];
    if (r < 0) runs[t] = r = runs_uncached(t);
    return r != 0;
}
