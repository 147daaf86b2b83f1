/* What every AMX kernel shares: the tile configuration that _tile_loadconfig reads
 * (palette 1) and the tile-data permission Linux grants a process only on request. */
#ifndef KVC_MODEL_AMX_TILES_H
#define KVC_MODEL_AMX_TILES_H

#include <stdbool.h>
#include <stdint.h>

/* The 64-byte operand of LDTILECFG: tile t has rows[t] rows of colsb[t] bytes. */
typedef struct kvci_amx_tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} kvci_amx_tile_config;

/* True once arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) has granted this process
 * the tile data and the CPU reports AMX-TILE (asked once per process; false off Linux x86-64).
 * The caller checks the CPU's other features (AMX-BF16, AMX-INT8, AVX-512) itself. */
bool kvci_amx_tiles_granted(void);

#endif
