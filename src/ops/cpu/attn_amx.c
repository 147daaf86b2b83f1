/* AMX bf16 tiles for the CPU attention kernel (attn_amx.h). Tiles: C
 * tmm0-3 (up to 16 rows x 16 f32), A tmm4-5 (one part of up to 16 rows x
 * 32 bf16), B tmm6-7 (16 pairs x 16 columns); each call loads the
 * configuration for its row counts and releases the tiles when done.
 *
 * Both products run on blocks of 2 x 2 C tiles (32 rows x 32 columns):
 * scores with C = 16 rows x 16 keys, A = the query parts of a block of 32
 * channels, B = the keys' channel pairs of that block (16 keys x 32
 * channels transposed as 16 x 16 dwords, once per call for every row);
 * value sums with C = 16 rows x 16 value channels (the accumulators, loaded
 * from and stored back to acc), A = the weight parts of 32 keys, B = those
 * keys' values with consecutive keys interleaved (pairs). Items of few rows per KV head score the transposed
 * product instead (kvci_amx_qk_keys: C = 16 keys x rows, A = 16 key rows read in place, B = a part of the rows'
 * channel pairs; tmm0-1 C, tmm2-3 A, tmm4-6 B). */
#include "ops/cpu/attn_amx.h"

#include <math.h>

#include "base/amx.h"
#include "base/internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TGT __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))
#define INL TGT __attribute__((always_inline)) static inline

/* C (tmm0-3) and A (tmm4-5) tiles of m rows, B (tmm6-7) of 16. */
INL void config_rows(int m) {
    kvc_amx_tile_config t = {.palette = 1};
    for (int i = 0; i < 8; i++) t.colsb[i] = 64, t.rows[i] = i >= 6 ? 16 : (uint8_t)m;
    _tile_loadconfig(&t);
}

/* Lanes of 32 bf16 (or 16 of them) whose exponent is all ones (inf, NaN). */
INL __mmask32 nonfinite32(__m512i x) {
    const __m512i e = _mm512_set1_epi16(0x7f80);
    return _mm512_cmpeq_epi16_mask(_mm512_and_si512(x, e), e);
}

static inline float bf16_f32(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } c = {(uint32_t)h << 16};
    return c.f;
}

TGT void kvci_amx_split_queries(const float *qs, int64_t qstride, int nr, int64_t D, uint16_t *qa, int64_t pstride,
                                int tg, uint8_t *qbad) {
    const int64_t Dp = kvci_round32(D);
    const __m512 inf = _mm512_set1_ps(INFINITY);
    const __m256i pair = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int r = 0; r < nr; r++) {
        int bad = 0;
        for (int64_t d = 0; d < Dp; d += 16) {
            const int64_t left = kvci_max64(0, kvci_min64(16, D - d));
            __m512 x = _mm512_maskz_loadu_ps((__mmask16)((1u << left) - 1u), qs + r * qstride + d);
            const __mmask16 nf = _mm512_cmp_ps_mask(_mm512_abs_ps(x), inf, _CMP_NLT_UQ);
            bad |= nf != 0;
            x = _mm512_maskz_mov_ps((__mmask16)~nf, x);
            for (int p = 0; p < KVC_AMX_PARTS; p++) {
                const __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
                if (tg) /* pairs (d % 32) / 2 .. + 7 of the block, 2 tg elements apart */
                    _mm256_i32scatter_epi32(qa + (r / tg) * KVC_AMX_PARTS * Dp * tg +
                                                ((d / 32) * KVC_AMX_PARTS + p) * 32 * tg + (d % 32) * tg + 2 * (r % tg),
                                            _mm256_mullo_epi32(pair, _mm256_set1_epi32(tg)), h, 4);
                else
                    _mm256_storeu_si256((__m256i *)(qa + p * pstride + r * Dp + d), h);
                x = _mm512_sub_ps(x, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
            }
        }
        qbad[r] = (uint8_t)bad;
    }
}

/* Where a block product reads and writes: C tile (i, j) at c + i * c_i + j * c_j (f32, rows c_row bytes apart);
 * part p of A's row tile i for block x at a + i * a_i + p * a_p + x * 32 (rows a_row bytes apart); B's column
 * tile j for block x at b + j * b_j + x * 512 * b_x (rows 64 bytes apart). */
typedef struct tile_walk {
    float *c;
    int64_t c_row, c_i, c_j;
    const uint16_t *a;
    int64_t a_row, a_i, a_p;
    const uint16_t *b;
    int64_t b_j, b_x;
} tile_walk;

/* C tiles (i, j), i < MT, j < NT (tmm 2 i + j), from acc (C loaded) or zero, plus the products of blocks [0, nb):
 * per block the B tiles (tmm6-7) once, then per part the A tiles (tmm4-5) and the MT x NT products, so that
 * consecutive products accumulate into different tiles. Per element: blocks in order, parts in order. */
INL void tiles(const int MT, const int NT, const tile_walk *w, bool acc, int64_t nb) {
    if (acc) {
        _tile_loadd(0, w->c, w->c_row);
        if (NT > 1) _tile_loadd(1, w->c + w->c_j, w->c_row);
        if (MT > 1) _tile_loadd(2, w->c + w->c_i, w->c_row);
        if (MT > 1 && NT > 1) _tile_loadd(3, w->c + w->c_i + w->c_j, w->c_row);
    } else {
        _tile_zero(0);
        if (NT > 1) _tile_zero(1);
        if (MT > 1) _tile_zero(2);
        if (MT > 1 && NT > 1) _tile_zero(3);
    }
    for (int64_t x = 0; x < nb; x++) {
        const uint16_t *b = w->b + x * 512 * w->b_x, *a = w->a + x * 32;
        _tile_loadd(6, b, 64);
        if (NT > 1) _tile_loadd(7, b + w->b_j, 64);
        for (int p = 0; p < KVC_AMX_PARTS; p++) {
            _tile_loadd(4, a + p * w->a_p, w->a_row);
            if (MT > 1) _tile_loadd(5, a + p * w->a_p + w->a_i, w->a_row);
            _tile_dpbf16ps(0, 4, 6);
            if (NT > 1) _tile_dpbf16ps(1, 4, 7);
            if (MT > 1) _tile_dpbf16ps(2, 5, 6);
            if (MT > 1 && NT > 1) _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, w->c, w->c_row);
    if (NT > 1) _tile_stored(1, w->c + w->c_j, w->c_row);
    if (MT > 1) _tile_stored(2, w->c + w->c_i, w->c_row);
    if (MT > 1 && NT > 1) _tile_stored(3, w->c + w->c_i + w->c_j, w->c_row);
}

typedef void (*tiles_fn)(const tile_walk *, bool, int64_t);
#define TILES(MT, NT)                                                                                                  \
    TGT static void tiles_##MT##x##NT(const tile_walk *w, bool acc, int64_t nb) { tiles(MT, NT, w, acc, nb); }
TILES(1, 1)
TILES(1, 2)
TILES(2, 1)
TILES(2, 2)
static const tiles_fn tiles_of[2][2] = {{tiles_1x1, tiles_1x2}, {tiles_2x1, tiles_2x2}};

/* Rows [0, nr) in pairs of 16-row tiles (a last tile of m < 16 rows under its own configuration) x columns
 * [0, ncol) tiles in pairs: w at row tile 0, column tile 0; rows of A advance by a_i per row tile, of C by c_i. */
INL void walk(tile_walk w, int nr, int64_t ncol, bool acc, int64_t nb) {
    int m = 0;
    for (int r0 = 0; r0 < nr; r0 += 32) {
        const int left = nr - r0, rows = left >= 16 ? 16 : left, mt = left > 16 ? 2 : 1;
        if (rows != m) config_rows(m = rows);
        tile_walk at = w;
        at.c += (r0 / 16) * w.c_i, at.a += (r0 / 16) * w.a_i;
        for (int64_t j = 0; j < ncol; j += 2) {
            tile_walk t = at;
            t.c += j * w.c_j, t.b += j * w.b_j;
            if (mt == 2 && left < 32) { /* a full tile, then one of left - 16 rows */
                tiles_of[0][ncol - j > 1](&t, acc, nb);
                config_rows(left - 16);
                t.c += w.c_i, t.a += w.a_i;
                tiles_of[0][ncol - j > 1](&t, acc, nb);
                config_rows(m = 16);
                continue;
            }
            tiles_of[mt - 1][ncol - j > 1](&t, acc, nb);
        }
    }
}

/* 16 x 16 dwords transposed in place: r[n] lane p becomes r[p] lane n. */
INL void transpose16(__m512i *r) {
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);     /* columns 0, 4, 8, 12 of rows i .. i+3 */
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]); /* 1, 5, 9, 13 */
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) { /* u[4 g + c]: columns c + 4 l (lanes l) of rows 4 g .. 4 g + 3 */
        const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        const __m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        r[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        r[c + 8] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
        r[c + 4] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        r[c + 12] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
    }
}

/* 16 keys as B tiles, one per block b of 32 channels: dst[b * 512 + p * 32 + 2 n + i] = channel 32 b + 2 p + i of
 * key n (non-finite channels and absent keys 0); returns the keys with a non-finite channel as bits. */
INL unsigned pack_keys(const uint16_t *const *k, int64_t D, uint16_t *dst, kvc_pf_run *pf) {
    unsigned bad = 0;
    for (int64_t ks = 0; ks < D; ks += 32) {
        const int64_t left = kvci_min64(32, D - ks);
        const __mmask32 m = left == 32 ? ~(__mmask32)0 : (((__mmask32)1 << left) - 1);
        __m512i r[16];
        for (int n = 0; n < 16; n++) {
            if (ks == 0) kvci_pf_row(pf);
            r[n] = k[n] ? _mm512_maskz_loadu_epi16(m, k[n] + ks) : _mm512_setzero_si512();
            const __mmask32 nf = nonfinite32(r[n]);
            if (nf) r[n] = _mm512_maskz_mov_epi16(~nf, r[n]), bad |= 1u << n;
        }
        transpose16(r);
        for (int p = 0; p < 16; p++) _mm512_storeu_si512(dst + ks * 16 + p * 32, r[p]);
    }
    return bad;
}

/* The terms the tiles left out (a non-finite query or key channel): each is +-inf or NaN. */
static void qk_nonfinite(const uint16_t *const *k, int nk, const unsigned long long *kbad, int64_t D, const float *qs,
                         int64_t qstride, const uint8_t *qbad, int nr, float *out, int64_t os) {
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nk; t++) {
            if (!k[t] || !(qbad[r] || (kbad[t / 64] >> (t % 64) & 1u))) continue;
            float extra = 0.0f;
            for (int64_t d = 0; d < D; d++) {
                const float q = qs[r * qstride + d], x = bf16_f32(k[t][d]);
                if (!isfinite(q) || !isfinite(x)) extra += q * x;
            }
            out[r * os + t] += extra;
        }
}

TGT void kvci_amx_qk(const uint16_t *const *k, int nk, int64_t D, const uint16_t *qa, int64_t pstride, const float *qs,
                     int64_t qstride, const uint8_t *qbad, int nr, float *out, int64_t os, uint16_t *kb,
                     kvc_pf_run *pf) {
    const int64_t Dp = kvci_round32(D);
    const int nkt = nk / 16;
    unsigned long long bad[KVC_AMX_KEYS / 64] = {0};
    for (int kt = 0; kt < nkt; kt++)
        bad[kt / 4] |= (unsigned long long)pack_keys(k + 16 * kt, D, kb + kt * 16 * Dp, pf) << (16 * (kt % 4));
    kvci_pf_rest(pf);
    const tile_walk w = {out, os * 4, 16 * os, 16, qa, Dp * 2, 16 * Dp, pstride, kb, 16 * Dp, 1};
    walk(w, nr, nkt, false, Dp / 32);
    _tile_release();
    int any = 0;
    for (int i = 0; i < KVC_AMX_KEYS / 64; i++) any |= bad[i] != 0;
    for (int r = 0; r < nr; r++) any |= qbad[r];
    if (any) qk_nonfinite(k, nk, bad, D, qs, qstride, qbad, nr, out, os);
}

/* Keys as A: C (tmm0-1) 16 keys x nr scores, A (tmm2-3) 16 keys x 32 channels, B (tmm4-6) the query parts of a
 * block (16 channel pairs x nr rows). */
INL void config_keys(int nr) {
    kvc_amx_tile_config t = {.palette = 1};
    for (int i = 0; i < 7; i++) t.rows[i] = 16, t.colsb[i] = (uint16_t)(i == 2 || i == 3 ? 64 : 4 * nr);
    _tile_loadconfig(&t);
}

/* Keys k[0..16) read in place as an A operand (returns the first row, *stride its byte stride) when all are
 * present, evenly spaced and D a multiple of 32; else NULL. */
static const uint16_t *keys_in_place(const uint16_t *const *k, int64_t D, int64_t *stride) {
    if (D % 32 || !k[0] || !k[1] || (uintptr_t)k[1] <= (uintptr_t)k[0]) return NULL;
    const uintptr_t s = (uintptr_t)k[1] - (uintptr_t)k[0];
    for (int n = 2; n < 16; n++)
        if (!k[n] || (uintptr_t)k[n] - (uintptr_t)k[n - 1] != s) return NULL;
    *stride = (int64_t)s;
    return k[0];
}

/* 16 keys as an A operand: dst[n * Dp + d] = channel d of key n (non-finite channels, channels past D and absent
 * keys 0); returns the keys with a non-finite channel as bits. */
INL unsigned copy_keys(const uint16_t *const *k, int64_t D, uint16_t *dst) {
    const int64_t Dp = kvci_round32(D);
    unsigned bad = 0;
    for (int n = 0; n < 16; n++)
        for (int64_t ks = 0; ks < Dp; ks += 32) {
            const int64_t left = kvci_min64(32, D - ks);
            const __mmask32 m = left == 32 ? ~(__mmask32)0 : (((__mmask32)1 << left) - 1);
            __m512i r = k[n] ? _mm512_maskz_loadu_epi16(m, k[n] + ks) : _mm512_setzero_si512();
            const __mmask32 nf = nonfinite32(r);
            if (nf) r = _mm512_maskz_mov_epi16(~nf, r), bad |= 1u << n;
            _mm512_storeu_si512(dst + n * Dp + ks, r);
        }
    return bad;
}

/* Scores of nt <= 2 key tiles (A rows a[j], byte stride as[j]) into tmm j over blocks [0, nb): per block the A
 * tiles, then per part its B tile (qt: part p of block x at (x KVC_AMX_PARTS + p) 32 nr) and the products, the
 * two tiles alternating. Per element: blocks in order, parts in order, as kvci_amx_qk. */
INL void key_tiles(int nt, const uint16_t *const *a, const int64_t *as, const uint16_t *qt, int nr, int64_t nb,
                   kvc_pf_run *pf) {
    const int64_t per = (16 * nt + nb - 1) / nb; /* pf's rows per block: 16 per key tile, spread among the products */
    _Static_assert(KVC_AMX_PARTS == 3, "one B tile per part");
    _tile_zero(0);
    if (nt > 1) _tile_zero(1);
    for (int64_t x = 0; x < nb; x++) {
        const uint16_t *b = qt + x * KVC_AMX_PARTS * 32 * nr;
        for (int64_t i = 0; i < per; i++) kvci_pf_row(pf);
        _tile_loadd(2, a[0] + 32 * x, as[0]);
        if (nt > 1) _tile_loadd(3, a[1] + 32 * x, as[1]);
        _tile_loadd(4, b, 4 * nr);
        _tile_loadd(5, b + 32 * nr, 4 * nr);
        _tile_loadd(6, b + 64 * nr, 4 * nr);
        _tile_dpbf16ps(0, 2, 4);
        if (nt > 1) _tile_dpbf16ps(1, 3, 4);
        _tile_dpbf16ps(0, 2, 5);
        if (nt > 1) _tile_dpbf16ps(1, 3, 5);
        _tile_dpbf16ps(0, 2, 6);
        if (nt > 1) _tile_dpbf16ps(1, 3, 6);
    }
}

/* C tiles 0 .. nt - 1 (keys 16 j .. 16 j + 15 x nr rows) transposed into out[r * os + 16 j + i]; returns the
 * tiles with a non-finite score as bits. */
INL unsigned store_key_scores(int nt, int nr, float *out, int64_t os) {
    float ct[2][256];
    _tile_stored(0, ct[0], 64);
    if (nt > 1) _tile_stored(1, ct[1], 64);
    const __m512i col = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(16));
    const __m512 inf = _mm512_set1_ps(INFINITY);
    unsigned nonfinite = 0;
    for (int j = 0; j < nt; j++)
        for (int r = 0; r < nr; r++) {
            const __m512 x = _mm512_i32gather_ps(_mm512_add_epi32(col, _mm512_set1_epi32(r)), ct[j], 4);
            if (_mm512_cmp_ps_mask(_mm512_abs_ps(x), inf, _CMP_NLT_UQ)) nonfinite |= 1u << j;
            _mm512_storeu_ps(out + r * os + 16 * j, x);
        }
    return nonfinite;
}

TGT void kvci_amx_qk_keys(const uint16_t *const *k, int nk, int64_t D, const uint16_t *qt, const float *qs,
                          int64_t qstride, const uint8_t *qbad, int nr, float *out, int64_t os, uint16_t *kb,
                          kvc_pf_run *pf) {
    const int64_t Dp = kvci_round32(D), nb = Dp / 32;
    const int nkt = nk / 16;
    unsigned long long bad[KVC_AMX_KEYS / 64] = {0};
    config_keys(nr);
    for (int kt = 0; kt < nkt; kt += 2) {
        const int nt = nkt - kt > 1 ? 2 : 1;
        const uint16_t *a[2];
        int64_t as[2];
        for (int j = 0; j < nt; j++) {
            const uint16_t *const *kj = k + 16 * (kt + j);
            a[j] = keys_in_place(kj, D, &as[j]);
            if (!a[j]) {
                a[j] = kb + j * 16 * Dp, as[j] = Dp * 2;
                bad[(kt + j) / 4] |= (unsigned long long)copy_keys(kj, D, kb + j * 16 * Dp) << (16 * ((kt + j) % 4));
            }
        }
        key_tiles(nt, a, as, qt, nr, nb, pf);
        const unsigned redo = store_key_scores(nt, nr, out + 16 * kt, os);
        for (int j = 0; j < nt; j++) { /* read in place with a non-finite score: again without non-finite channels */
            if (!(redo >> j & 1u) || a[j] == kb + j * 16 * Dp) continue;
            bad[(kt + j) / 4] |= (unsigned long long)copy_keys(k + 16 * (kt + j), D, kb) << (16 * ((kt + j) % 4));
            const uint16_t *c[1] = {kb};
            const int64_t cs[1] = {Dp * 2};
            key_tiles(1, c, cs, qt, nr, nb, pf);
            store_key_scores(1, nr, out + 16 * (kt + j), os);
        }
    }
    kvci_pf_rest(pf);
    _tile_release();
    int any = 0;
    for (int i = 0; i < KVC_AMX_KEYS / 64; i++) any |= bad[i] != 0;
    for (int r = 0; r < nr; r++) any |= qbad[r];
    if (any) qk_nonfinite(k, nk, bad, D, qs, qstride, qbad, nr, out, os);
}

/* Keys 2p, 2p + 1 of every step as B tiles: dst[((st * ng + g) * 16 + p) * 32 + 2 n + i] = channel 16 g + n of
 * key 32 st + 2 p + i (absent keys 0), interleaved 32 channels at a time. exact: non-finite channels 0 and
 * bad[t / 64] bit t % 64 set for a key t with one, returns false; else they go in as they are, and the return
 * says whether there was one (the caller then packs again, exact). */
INL bool pack_values(const uint16_t *const *v, int nk, int64_t Dv, uint16_t *dst, unsigned long long *bad,
                     kvc_pf_run *pf, bool exact) {
    static const uint16_t pairs[2][32] = {{0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                           8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47},
                                          {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                           24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63}};
    const __m512i lo = _mm512_loadu_si512(pairs[0]), hi = _mm512_loadu_si512(pairs[1]);
    const __m512i e = _mm512_set1_epi16(0x7f80);
    __m512i least = _mm512_set1_epi16(-1); /* a lane 0: a channel whose exponent is all ones */
    const int64_t ng = Dv / 16;
    for (int t = 0; t < nk; t += 2) {
        kvci_pf_row(pf), kvci_pf_row(pf);
        for (int64_t c = 0; c < Dv; c += 32) {
            const __mmask32 m = Dv - c >= 32 ? ~(__mmask32)0 : 0xffffu;
            __m512i h[2];
            for (int i = 0; i < 2; i++) {
                h[i] = v[t + i] ? _mm512_maskz_loadu_epi16(m, v[t + i] + c) : _mm512_setzero_si512();
                if (!exact) {
                    least = _mm512_min_epu16(least, _mm512_andnot_si512(h[i], e));
                    continue;
                }
                const __mmask32 nf = nonfinite32(h[i]);
                if (nf) h[i] = _mm512_maskz_mov_epi16(~nf, h[i]), bad[(t + i) / 64] |= 1ull << ((t + i) % 64);
            }
            uint16_t *at = dst + (((t / 32) * ng + c / 16) * 16 + (t % 32) / 2) * 32;
            _mm512_storeu_si512(at, _mm512_permutex2var_epi16(h[0], lo, h[1]));
            if (Dv - c > 16) _mm512_storeu_si512(at + 512, _mm512_permutex2var_epi16(h[0], hi, h[1]));
        }
    }
    return !exact && _mm512_cmpeq_epi16_mask(least, _mm512_setzero_si512()) != 0;
}

/* Parts of the weights of m <= 32 rows over nk keys into pa[p * 32 * nk + r * nk + t]; absent keys weigh 0. */
INL void split_weights(const uint16_t *const *v, int nk, const float *w, int64_t ws, int m, uint16_t *pa) {
    for (int t = 0; t < nk; t += 16) {
        __mmask16 present = 0;
        for (int i = 0; i < 16; i++) present |= (__mmask16)((v[t + i] != NULL) << i);
        for (int r = 0; r < m; r++) {
            __m512 x = _mm512_maskz_loadu_ps(present, w + r * ws + t);
            for (int p = 0; p < KVC_AMX_PARTS; p++) {
                const __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
                _mm256_storeu_si256((__m256i *)(pa + (p * 32 + r) * nk + t), h);
                x = _mm512_sub_ps(x, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
            }
        }
    }
}

TGT void kvci_amx_pv(const uint16_t *const *v, int nk, int64_t Dv, const float *w, int64_t ws, int nr, float *acc,
                     int64_t as, uint16_t *vb, uint16_t *pa, kvc_pf_run *pf) {
    const int64_t ng = Dv / 16;
    unsigned long long bad[KVC_AMX_KEYS / 64] = {0};
    if (pack_values(v, nk, Dv, vb, bad, pf, false)) pack_values(v, nk, Dv, vb, bad, pf, true);
    kvci_pf_rest(pf);
    for (int r0 = 0; r0 < nr; r0 += 32) /* 32 rows x KVC_AMX_PV_KEYS keys at a time: their parts stay in L1 */
        for (int k0 = 0; k0 < nk; k0 += KVC_AMX_PV_KEYS) {
            const int rows = nr - r0 < 32 ? nr - r0 : 32, kn = nk - k0 < KVC_AMX_PV_KEYS ? nk - k0 : KVC_AMX_PV_KEYS;
            split_weights(v + k0, kn, w + r0 * ws + k0, ws, rows, pa);
            const tile_walk tw = {acc + r0 * as,           as * 4, 16 * as, 16, pa, kn * 2, 16 * kn, 32 * kn,
                                  vb + k0 / 32 * ng * 512, 512,    ng};
            walk(tw, rows, ng, true, kn / 32);
        }
    _tile_release();
    for (int t = 0; t < nk; t++) { /* the terms the tiles left out: each +-inf or NaN */
        if (!(bad[t / 64] >> (t % 64) & 1u)) continue;
        for (int r = 0; r < nr; r++) {
            const float wt = w[r * ws + t];
            if (wt == 0.0f) continue;
            for (int64_t d = 0; d < Dv; d++) {
                const float x = bf16_f32(v[t][d]);
                if (!isfinite(x)) acc[r * as + d] += wt * x;
            }
        }
    }
}
#else
void kvci_amx_split_queries(const float *qs, int64_t qstride, int nr, int64_t D, uint16_t *qa, int64_t pstride, int tg,
                            uint8_t *qbad) {
    (void)qs, (void)qstride, (void)nr, (void)D, (void)qa, (void)pstride, (void)tg, (void)qbad;
}
void kvci_amx_qk_keys(const uint16_t *const *k, int nk, int64_t D, const uint16_t *qt, const float *qs, int64_t qstride,
                      const uint8_t *qbad, int nr, float *out, int64_t os, uint16_t *kb, kvc_pf_run *pf) {
    (void)k, (void)nk, (void)D, (void)qt, (void)qs, (void)qstride, (void)qbad, (void)nr, (void)out, (void)os, (void)kb,
        (void)pf;
}
void kvci_amx_qk(const uint16_t *const *k, int nk, int64_t D, const uint16_t *qa, int64_t pstride, const float *qs,
                 int64_t qstride, const uint8_t *qbad, int nr, float *out, int64_t os, uint16_t *kb, kvc_pf_run *pf) {
    (void)pf, (void)k, (void)nk, (void)D, (void)qa, (void)pstride, (void)qs, (void)qstride, (void)qbad, (void)nr,
        (void)out;
    (void)os, (void)kb;
}
void kvci_amx_pv(const uint16_t *const *v, int nk, int64_t Dv, const float *w, int64_t ws, int nr, float *acc,
                 int64_t as, uint16_t *vb, uint16_t *pa, kvc_pf_run *pf) {
    (void)pf, (void)v, (void)nk, (void)Dv, (void)w, (void)ws, (void)nr, (void)acc, (void)as, (void)vb, (void)pa;
}
#endif
