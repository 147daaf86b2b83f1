/* Run-time choice of the SIMD table: the CPU's best path at or below the
 * cap KVC_SIMD names (base/isa.h; clamped to what the CPU runs, so that a
 * forced path never executes an instruction the CPU lacks). */
#include "base/amx.h"
#include "base/isa.h"
#include "ops/cpu/simd.h"

bool kvci_simd_cpu_runs(const kvc_simd_table *t) {
    if (!t) return false;
    if (t == &kvc_simd_portable) return true;
    if (t == kvci_simd_avx2_table()) return kvci_cpu_runs(KVC_ISA_AVX2);
    if (t == kvci_simd_avx512_table()) return kvci_cpu_runs(KVC_ISA_AVX512);
    return t == kvci_simd_amx_table() && kvci_cpu_runs(KVC_ISA_AVX512) && kvci_amx_bf16_granted();
}

/* The best table at or below rank (0 portable, 1 avx2, 2 avx512, 3 amx) that this CPU runs. */
static const kvc_simd_table *best_up_to(int rank) {
    if (rank >= 3 && kvci_simd_cpu_runs(kvci_simd_amx_table())) return kvci_simd_amx_table();
    if (rank >= 2 && kvci_simd_cpu_runs(kvci_simd_avx512_table())) return kvci_simd_avx512_table();
    if (rank >= 1 && kvci_simd_cpu_runs(kvci_simd_avx2_table())) return kvci_simd_avx2_table();
    return &kvc_simd_portable;
}

static const kvc_simd_table *from_environment(void) { return best_up_to((int)kvci_isa_cap()); }

static const kvc_simd_table *_Atomic forced;
static const kvc_simd_table *_Atomic chosen; /* from_environment(), once (every thread computes the same) */

void kvci_simd_override(const kvc_simd_table *t) { forced = t; }

const kvc_simd_table *kvci_simd_select(void) {
    const kvc_simd_table *f = forced;
    if (f) return f;
    const kvc_simd_table *c = chosen;
    if (!c) chosen = c = from_environment();
    return c;
}

bool kvci_simd_far_prefetch(void) { return !kvci_cpu_is_intel(); }
