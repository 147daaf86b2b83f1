/* The machine's ceilings measured during a benchmark (machine_limits.c). */
#ifndef KVC_BENCH_MACHINE_LIMITS_H
#define KVC_BENCH_MACHINE_LIMITS_H

#include <stddef.h>

#include <stdbool.h>
#include <stdint.h>

/* The pages of a read buffer (and of the caches a benchmark compares with
 * it): 4 KiB pages (madvise MADV_NOHUGEPAGE) or 2 MiB transparent huge
 * pages (MADV_HUGEPAGE), both 2 MiB-aligned mappings from kvci_pages_alloc. */
typedef enum kvc_limits_pages { KVC_LIMITS_4K, KVC_LIMITS_2M, KVC_LIMITS_PAGE_KINDS } kvc_limits_pages;

/* Allocates and fills a 1 GiB read buffer (KVC_BENCH_READ_MIB MiB where set,
 * 16 .. 16384) on each page kind asked for (want[kind]); 0 on success, else
 * 1 after a message on stderr. */
int kvc_limits_init(const bool want[KVC_LIMITS_PAGE_KINDS]);
/* The read buffers' size in MiB (after kvc_limits_init). */
size_t kvc_limits_read_mib(void);
void kvc_limits_free(void);
/* One read pass over the buffer on `pages` with all threads, in GB/s (1e9);
 * it also evicts whatever the caches held. */
double kvc_limits_read_pass(kvc_limits_pages pages);
/* "4k" or "2m". */
const char *kvc_limits_pages_name(kvc_limits_pages pages);
/* Bytes of the buffer on `pages` that sit on huge pages now (-1: unknown). */
int64_t kvc_limits_huge_bytes(kvc_limits_pages pages);
/* The system's transparent huge page setting (the bracketed word of
 * /sys/kernel/mm/transparent_hugepage/enabled: always, madvise or never),
 * "unknown" where it cannot be read; into buf[n]. */
void kvc_limits_thp_setting(char *buf, size_t n);
/* The arithmetic instructions whose peak a benchmark may divide by. */
typedef enum kvc_peak_kind {
    KVC_PEAK_FMA_SCALAR,
    KVC_PEAK_FMA_YMM, /* AVX2 + FMA */
    KVC_PEAK_FMA_ZMM, /* AVX-512 F */
    KVC_PEAK_DPBF16,  /* AVX-512 BF16 vdpbf16ps on zmm */
    KVC_PEAK_DPBUSD,  /* AVX-512 VNNI vpdpbusd on zmm (integer operations) */
    KVC_PEAK_TDPBF16, /* AMX TDPBF16PS on 16 x 16 f32 tiles (where the OS grants tile data) */
    KVC_PEAK_TDPBSSD, /* AMX TDPBSSD on 16 x 16 int32 tiles, K = 32 bytes (the quantized GEMM's block) */
    KVC_PEAK_KINDS
} kvc_peak_kind;

/* The CPU's SIMD flags a kernel path may use, space-separated, into buf[n]. */
void kvc_limits_cpu_flags(char *buf, size_t n);
const char *kvc_limits_peak_name(kvc_peak_kind k);
/* Whether this CPU has the instruction. */
int kvc_limits_has_peak(kvc_peak_kind k);
/* The FMA a SIMD path named "avx512...", "avx2..." or otherwise computes with (zmm, ymm, scalar). */
kvc_peak_kind kvc_limits_fma_of_path(const char *isa);
/* One peak pass of instruction k (about 0.05-0.2 s) with all threads, in
 * G operations/s (a multiply-add counts 2); 0 when the CPU lacks it. */
double kvc_limits_peak_pass(kvc_peak_kind k);

#endif
