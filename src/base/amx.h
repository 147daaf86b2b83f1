/* The Linux permission to use AMX tile data, shared by every AMX kernel
 * (the bf16 GEMM, the attention tiles). */
#ifndef KVC_BASE_AMX_H
#define KVC_BASE_AMX_H

#include <stdbool.h>
#include <stdint.h>

/* The 64-byte operand of LDTILECFG (palette 1: rows and bytes per row of tmm0-7). */
typedef struct kvc_amx_tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} kvc_amx_tile_config;

/* True when the CPU reports AMX-TILE, AMX-BF16, AVX512_BF16 and AVX-512 F
 * and the kernel granted this process tile data (XFEATURE_XTILEDATA, asked
 * once per process with arch_prctl(ARCH_REQ_XCOMP_PERM)); false elsewhere. */
bool kvci_amx_bf16_granted(void);

#endif
