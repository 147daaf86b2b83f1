/* The instruction-set cap of every kernel choice (attention's SIMD table, the f32, bf16/f16 and
 * quantized GEMMs): KVC_SIMD=portable|avx2|avx512|amx in the environment, read once per process.
 * Each kernel list keeps only the kernels at or below the cap that the CPU runs, so a forced path
 * never executes an instruction the CPU lacks (docs/ops.md, docs/runtime.md). */
#ifndef KVC_BASE_ISA_H
#define KVC_BASE_ISA_H

#include <stdbool.h>

typedef enum kvc_isa {
    KVC_ISA_PORTABLE = 0,
    KVC_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
    KVC_ISA_AVX512 = 2, /* AVX-512 F/BW/VL besides AVX2 (and, per kernel, BF16 / VNNI) */
    KVC_ISA_AMX = 3     /* AMX tiles: no cap */
} kvc_isa;

/* The cap: KVC_SIMD's value, KVC_ISA_AMX when it is unset or names none of the four. */
kvc_isa kvci_isa_cap(void);

/* Whether the CPU (and the OS's saved vector state) has tier t's instructions, whatever the cap:
 * AVX2: AVX2, FMA and F16C (asked of CPUID: a VM may hide F16C); AVX-512: F, BW and VL besides the AVX2
 * tier; AMX: never, its kernels check their own grant. Portable: always. */
bool kvci_cpu_runs(kvc_isa t);

/* Whether kernels of tier t may run here: t at or below the cap, and kvci_cpu_runs(t). */
bool kvci_isa_runs(kvc_isa t);

/* Whether CPUID names the vendor "GenuineIntel" (false off x86), read once per process: tuning that differs
 * between vendors' cores (decode attention's far prefetch, kvci_simd_far_prefetch) asks here. */
bool kvci_cpu_is_intel(void);

#endif
