/* The amx-bf16 kernel of kvci_gemm_bf16's dot family (gemm_bf16.h): C in
 * 16 x 16 f32 tiles, up to 2 x 2 of them (tmm0-3), the bf16 parts of 16 rows
 * of A for one block of 32 k (tmm4-5, 1 KiB tiles of the split scratch) and
 * the packed weights' 1 KiB tiles of two column groups (tmm6-7). Each C tile
 * runs over the blocks of k in order and, within a block, over the parts in
 * order (TDPBF16PS adds the block's 16 pairs): the same sums for any M, N,
 * tiling or thread; padding rows and columns only add +0. Rows past M are
 * the scratch's zero rows and are not stored.
 *
 * Linux hands tile data (XFEATURE_XTILEDATA) to a process only on request:
 * the kernel is offered once arch_prctl(ARCH_REQ_XCOMP_PERM) has granted it,
 * and the CPU reports AMX-TILE, AMX-BF16 and AVX512_BF16. Each block loads
 * the tile configuration and releases the tiles when done. */
#define _GNU_SOURCE
#include "model/gemm_bf16.h"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "model/gemm_bf16_x86.h"

#define TGT __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bf16")))
#define INL TGT __attribute__((always_inline)) static inline

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Every tile 16 rows of 64 bytes: C 16 x 16 f32, A 16 rows x 32 bf16, B 16 pairs x 16 columns. */
static const tile_config config = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* MT x NT C tiles at rows i (scratch rows, multiples of 16) and group g. */
INL void tiles(const int MT, const int NT, const kvc_bf16_call *c, int64_t i, int64_t m1, int64_t g) {
    _tile_zero(0);
    if (NT == 2) _tile_zero(1);
    if (MT == 2) _tile_zero(2);
    if (MT == 2 && NT == 2) _tile_zero(3);
    const uint16_t *b = c->B + g * 16 * c->Kp;
    for (int64_t kb = 0; kb < c->Kp; kb += 32) {
        _tile_loadd(6, b + kb * 16, 64);
        if (NT == 2) _tile_loadd(7, b + 16 * c->Kp + kb * 16, 64);
        for (int p = 0; p < KVC_GEMM_BF16_PARTS; p++) {
            _tile_loadd(4, c->As + kvci_bf16_split_at(c, p, i, kb), 64);
            if (MT == 2) _tile_loadd(5, c->As + kvci_bf16_split_at(c, p, i + 16, kb), 64);
            _tile_dpbf16ps(0, 4, 6);
            if (NT == 2) _tile_dpbf16ps(1, 4, 7);
            if (MT == 2) _tile_dpbf16ps(2, 5, 6);
            if (MT == 2 && NT == 2) _tile_dpbf16ps(3, 5, 7);
        }
    }
    float out[4][16][16];
    _tile_stored(0, out[0], 64);
    if (NT == 2) _tile_stored(1, out[1], 64);
    if (MT == 2) _tile_stored(2, out[2], 64);
    if (MT == 2 && NT == 2) _tile_stored(3, out[3], 64);
    for (int t = 0; t < MT; t++)
        for (int64_t r = 0; r < 16 && i + 16 * t + r < m1; r++)
            for (int u = 0; u < NT; u++) bf16_store_group(c, i + 16 * t + r, g + u, _mm512_loadu_ps(out[2 * t + u][r]));
}

TGT static void tiles_1x1(const kvc_bf16_call *c, int64_t i, int64_t m1, int64_t g) { tiles(1, 1, c, i, m1, g); }
TGT static void tiles_1x2(const kvc_bf16_call *c, int64_t i, int64_t m1, int64_t g) { tiles(1, 2, c, i, m1, g); }
TGT static void tiles_2x1(const kvc_bf16_call *c, int64_t i, int64_t m1, int64_t g) { tiles(2, 1, c, i, m1, g); }
TGT static void tiles_2x2(const kvc_bf16_call *c, int64_t i, int64_t m1, int64_t g) { tiles(2, 2, c, i, m1, g); }

TGT static void block(const kvc_bf16_call *c, int64_t m0, int64_t m1, int64_t g0, int64_t g1) {
    _tile_loadconfig(&config);
    for (int64_t g = g0; g < g1; g += 2)
        for (int64_t i = m0; i < m1; i += 32) {
            const bool two_m = m1 - i > 16, two_n = g1 - g > 1;
            if (two_m && two_n)
                tiles_2x2(c, i, m1, g);
            else if (two_m)
                tiles_2x1(c, i, m1, g);
            else if (two_n)
                tiles_1x2(c, i, m1, g);
            else
                tiles_1x1(c, i, m1, g);
        }
    _tile_release();
}

static const kvc_gemm_bf16_kernel amx = {"amx-bf16", "dot", kvci_bf16_split_avx512, 16, block};

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

const kvc_gemm_bf16_kernel *kvci_gemm_bf16_amx_kernel(void) {
    (void)pthread_once(&asked, ask_permission);
    return granted ? &amx : NULL;
}
#else
const kvc_gemm_bf16_kernel *kvci_gemm_bf16_amx_kernel(void) { return NULL; }
#endif
