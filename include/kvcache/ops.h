/* kvcache ops layer: the operators that write new keys/values into a cache
 * and the fused inference attention operator that reads them back.
 * Behaviour: docs/ops.md (section numbers below, "AO").
 *
 * Two implementations of attention share one parameter struct and one
 * validator: kvc_attention_ref (float64, written for clarity, used by the
 * tests) and kvc_attention_cpu (tiled online softmax, OpenMP, SIMD chosen at
 * run time; bitwise identical output whatever the block size, paging, batch
 * composition or thread count).
 *
 * Thread safety: every function is reentrant; concurrent calls must not
 * write the same cache/output memory. Nothing here allocates except
 * kvc_attention_ref (scratch for one row) and the helpers that say so. */
#ifndef KVCACHE_OPS_H
#define KVCACHE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvcache/base.h"
#include "kvcache/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Cache writes (AO 2)                                                      */
/* ======================================================================== */

/* AO 2.1 legacy contiguous write: cache [B, S_max, H] (BSH, H = Nkv*D),
 * upd [B, L, H] of the same dtype; row b is written at positions
 * starts[b] .. starts[b] + L - 1. starts: [B]. Refused (KVC_ERANGE) when
 * starts[b] < 0 or starts[b] + L > S_max; nothing is written then. */
KVC_API kvc_status kvc_write_contiguous(kvc_tensor *cache, const kvc_tensor *upd, const int64_t *starts,
                                        int64_t n_starts);

/* AO 2.1 with quantisation: f32 upd [B, L, H] into an int8 or fp8 cache
 * [B, S_max, H], each element stored as kvc_write_slots_quant does; inv_scale
 * (and offset, int8 only) have n_quant entries: 1 (per tensor) or H (per
 * channel). Refusals as kvc_write_contiguous; nothing written then. */
KVC_API kvc_status kvc_write_contiguous_quant(kvc_tensor *cache, const kvc_tensor *upd, const int64_t *starts,
                                              int64_t n_starts, const float *inv_scale, const float *offset,
                                              int64_t n_quant);

/* Paged caches are written and read in a kvc_block_layout (layout.h):
 * KVC_BLOCK_BNBSND [NB, bs, Nkv, D], KVC_BLOCK_BNNBSD [NB, Nkv, bs, D],
 * KVC_BLOCK_NZ (logical [NB, bs, N, D] stored as [NB, N, D/c0, bs, c0], AO 2.4)
 * or KVC_BLOCK_BNNDBS [NB, Nkv, D, bs] (keys in lanes: the K cache of
 * attention's BNNDBS, whose V cache is BNNBSD). */

/* The skip marker of slot mappings (AO 2.2): this token is not written. */
#define KVC_SLOT_SKIP (-1)

/* AO 2.4: flat element index of (block p, offset o, head h, channel d) in an
 * NZ cache with bs rows per block, n_heads*head_dim channels and c0
 * channels per tile (c0 = 32 bytes / element size). -1 for a position
 * outside the geometry (p < 0, o outside [0, bs), h outside [0, n_heads),
 * d outside [0, head_dim)), a size below 1 or an index beyond int64. */
KVC_API int64_t kvc_nz_index(int64_t p, int64_t o, int64_t h, int64_t d, int64_t bs, int64_t n_heads, int64_t head_dim,
                             int64_t c0);

/* AO 2.2 slot scatter: upd [T, Nkv, D] into a paged cache of `order`
 * (4-D [NB, bs, Nkv, D] for BNBSND and NZ, [NB, Nkv, bs, D] for BNNBSD,
 * [NB, Nkv, D, bs] for BNNDBS),
 * slots: [T] (T = upd->shape[0]); slot -1 is skipped. upd dtype must equal
 * the cache dtype (f32 into int8/fp8 caches: kvc_write_slots_quant), except
 * for a cache dtype stored in blocks with their scales (docs/kv-dtypes.md,
 * "The dtype table"): f32 upd, BNBSND or BNNBSD, D whole blocks, each
 * (token, head) row quantised by the dtype's converter. Refused: slot
 * < -1 or >= NB*bs (KVC_ERANGE), shape or dtype mismatch (KVC_EINVAL), and
 * in debug builds a slot outside the null block (>= bs) given twice
 * (KVC_EINVAL; duplicates are legal only in block 0); the cache is
 * unchanged after a refusal (all slots are checked first). Slots are only
 * bounded: that each belongs to its token's own request is the caller's
 * (kvc_model_forward checks it against the step's tables, docs/batch.md). */
KVC_API kvc_status kvc_write_slots(kvc_tensor *cache, kvc_block_layout order, const kvc_tensor *upd,
                                   const int64_t *slots, int64_t n_slots);

/* AO 2.5 quantised write: f32 upd [T, Nkv, D] into an int8 or fp8 paged
 * cache. int8: q = sat_int8(round_half_even(x * inv_scale + offset)); fp8:
 * q = fp8(x * inv_scale), the product rounded once to f32 and then to fp8
 * (ties to even, saturating at +-max, kvc_f32_to_fp8_e4m3/e5m2). inv_scale
 * is the reciprocal of the dequantisation scale; inv_scale (and offset) have
 * n_quant entries: 1 (per tensor), Nkv (per head) or Nkv*D (per channel).
 * offset may be NULL (0); fp8 caches take none. Each inv_scale finite and non-zero, each offset
 * finite (KVC_EINVAL naming the entry; nothing written). */
KVC_API kvc_status kvc_write_slots_quant(kvc_tensor *cache, kvc_block_layout order, const kvc_tensor *upd,
                                         const int64_t *slots, int64_t n_slots, const float *inv_scale,
                                         const float *offset, int64_t n_quant);

/* Symmetric scales for quantising x (f32 [T, Nkv, D], finite) into a cache
 * of cache_dtype (int8 or fp8): per group of channels (n_scale 1: the
 * tensor; Nkv: each head; Nkv*D: each channel), amax = max |x| over the
 * group and all T tokens, scale = amax / qmax and inv_scale = qmax / amax
 * (qmax 127 for int8, 448 e4m3, 57344 e5m2; an all-zero group, or one whose
 * amax is so small that qmax / amax overflows f32, gets 1 and 1).
 * For static calibrated scales (vLLM's k_scale / v_scale, KIVI's
 * per-channel keys): calibrate on representative tokens, write with
 * kvc_write_slots_quant(inv_scale), read with key/value_scale = scale in
 * mode 0 ([1] or [Nkv, D]) or mode 2 ([Nkv]). scale, inv_scale: [n_scale]. */
KVC_API kvc_status kvc_kv_quant_scales(const kvc_tensor *x, kvc_dtype cache_dtype, int64_t n_scale, float *scale,
                                       float *inv_scale);

/* Per-token quantisation on the fly (KIVI's per-token values): each token
 * of upd (f32 [T, Nkv, D], finite) gets scale = amax / qmax over its Nkv*D
 * values (as kvc_kv_quant_scales with T = 1, n_scale = 1), is written as
 * kvc_write_slots_quant does with inv = qmax / amax, and its scale goes to
 * slot_scale[slots[t]]. slot_scale: [NB*bs] (n_slot_scale = NB*bs), read by
 * attention as quant mode 3 (KVC_QUANT_PER_SLOT). Nothing is written when
 * a check fails (slots, shapes, dtype, a non-finite value). */
KVC_API kvc_status kvc_write_slots_token_quant(kvc_tensor *cache, kvc_block_layout order, const kvc_tensor *upd,
                                               const int64_t *slots, int64_t n_slots, float *slot_scale,
                                               int64_t n_slot_scale);

/* One int8 quantisation step as the writes do it (exposed for tests). */
KVC_API int8_t kvc_quantize_i8(float x, float inv_scale, float offset);

/* AO 2.3 fused MLA write: per token t, RMSNorm of kv[t, 0:Dc] with gamma and
 * eps into nope_cache, interleaved RoPE of kv[t, Dc:Dc+Dr] with cos/sin[t]
 * (output de-interleaved: even lanes first) into rope_cache, both at
 * slots[t] (-1 skips). Caches are [NB, bs, 1, Dc] / [NB, bs, 1, Dr] in
 * `order` (BNBSND = PA plain, NZ = PA_NZ). kv is f32 [T, Dc + Dr], gamma
 * f32 [Dc], cos/sin f32 [T, Dr]. The caches are f32/f16/bf16 (the rope
 * cache may differ from the nope cache), or both of one int8 / fp8 dtype,
 * quantised with ONE scale over the latent and the rope part together (as
 * vLLM's fp8 MLA cache, which stores them in one row), either
 *  - static: nope_inv_scale [1], the reciprocal of the dequantisation scale
 *    (stored as kvc_write_slots_quant does), or
 *  - per token, computed on write: slot_scale [n_slot_scale = NB*bs]; each
 *    token's scale = amax / qmax over its Dc + Dr normalised and rotated
 *    values (qmax as kvc_kv_quant_scales) goes to slot_scale[slots[t]]
 *    (attention quant mode 3 reads it for the latent and the rope part).
 * out_nope [T, Dc] / out_rope [T, Dr] (f32, may be NULL) receive c_norm
 * and r_rot (the "return_kv" outputs). Nothing is written when a check
 * fails (non-finite values included, with per-token scales). */
typedef struct kvc_mla_write_params {
    const float *kv;      /* [T, Dc + Dr] */
    const float *gamma;   /* [Dc] */
    const float *cos;     /* [T, Dr] */
    const float *sin;     /* [T, Dr] */
    const int64_t *slots; /* [T] */
    int64_t n_tokens;     /* T */
    int64_t latent_dim;   /* Dc */
    int64_t rope_dim;     /* Dr, even */
    float eps;            /* from the model's norm layer (>= 0) */
    kvc_block_layout order;
    kvc_tensor *nope_cache;      /* [NB, bs, 1, Dc] */
    kvc_tensor *rope_cache;      /* [NB, bs, 1, Dr] */
    const float *nope_inv_scale; /* [1] static scale of int8/fp8 caches, else NULL */
    float *slot_scale;           /* [n_slot_scale] per-token scales of int8/fp8 caches, else NULL */
    int64_t n_slot_scale;        /* NB*bs with slot_scale */
    float *out_nope;             /* [T, Dc] or NULL */
    float *out_rope;             /* [T, Dr] or NULL */
} kvc_mla_write_params;

KVC_API kvc_status kvc_mla_write(const kvc_mla_write_params *p);

/* ======================================================================== */
/* RMSNorm and RoPE: the one implementation used by the fused MLA write and  */
/* by the model runtime (every norm and rotary embedding of the forward).    */
/* ======================================================================== */

/* RMSNorm: y = x / sqrt(mean(x^2) + eps) * gamma, the mean of squares
 * accumulated in double, each output rounded once to f32. x, gamma, y: [n];
 * y may alias x; gamma NULL: no weight (a weightless RMSNorm, gamma 1). */
KVC_API void kvc_rmsnorm_f32(const float *x, const float *gamma, int64_t n, float eps, float *y);
/* In place over n_rows rows of n channels, ld floats apart: x [n_rows, ld]. Large calls (more
 * than 16 rows and at least 2^18 elements) share whole rows among the OpenMP threads: the same
 * bits as on one thread. */
KVC_API void kvc_rmsnorm_rows_f32(float *x, int64_t n_rows, int64_t n, int64_t ld, const float *gamma, float eps);

typedef enum kvc_rope_type {
    KVC_ROPE_DEFAULT = 0,
    KVC_ROPE_LLAMA3,
    KVC_ROPE_YARN,
    KVC_ROPE_LINEAR,      /* position interpolation: the default frequencies divided by factor */
    KVC_ROPE_DYNAMIC,     /* read from configs (the planner reports it); kvc_rope_frequencies refuses it */
    KVC_ROPE_LONGROPE,    /* Phi-3's: per-frequency short / long factors (kvc_rope_frequencies_long) */
    KVC_ROPE_PROPORTIONAL /* LFM3's and Gemma 4's full layers: the whole head's default frequencies, the first
                           * floor(partial_rotary_factor x rot_dim / 2) kept and the rest 0 (those channels
                           * pass through), all divided by factor */
} kvc_rope_type;

/* The most longrope factors a plan holds (a rotary width of 256). */
#define KVC_ROPE_MAX_FACTORS 128

/* RoPE frequency plan (HF transformers' rope_type default / linear / llama3 / yarn),
 * as the config reader resolves config.json (docs/config.md). */
typedef struct kvc_rope_config {
    kvc_rope_type type;
    double theta;
    double factor;                 /* linear / llama3 / yarn, as written in the dict (also the YaRN ramp's f) */
    double low_freq_factor;        /* llama3 */
    double high_freq_factor;       /* llama3 */
    int64_t original_max_position; /* llama3 / yarn L0 */
    double beta_fast, beta_slow;   /* yarn (32 / 1 when falsy) */
    double mscale, mscale_all_dim; /* yarn (0 = absent) */
    double attention_factor;       /* yarn / longrope explicit A (0 = derive) */
    bool truncate;                 /* yarn (default true) */
    /* the share of each head's dims that rotate (the first head_dim * it, truncated; the rest pass
     * through): transformers' partial_rotary_factor; 0 (a hand-made plan) stands for 1 */
    double partial_rotary_factor;
    /* longrope: each inverse frequency divided by its factor, the short ones for positions up to L0,
     * the long ones beyond (kvc_rope_frequencies_long); n_* entries each, rot_dim / 2 when computed */
    int32_t n_short_factors, n_long_factors;
    float short_factor[KVC_ROPE_MAX_FACTORS], long_factor[KVC_ROPE_MAX_FACTORS];
} kvc_rope_config;

/* Inverse frequencies inv_freq [rot_dim / 2] and the attention factor A
 * (YaRN's and longrope's cos/sin scale; 1 for default and llama3) of a RoPE plan, as HF
 * computes them: theta^(-2i/d) in f32, then divided by factor (linear), the llama3 band scaling, the
 * YaRN ramp between interpolation (1/(f theta^(2i/d))) and extrapolation, or longrope's short factors
 * (1 / (short_factor[i] theta^(2i/d)), f32: the frequencies of positions up to L0);
 * A = attention_factor if given, else mscale(f, mscale) / mscale(f,
 * mscale_all_dim) when both are non-zero, else mscale(f, 1) (mscale as
 * kvc_yarn_mscale); longrope's as kvc_rope_attention_factor. Refused (KVC_EINVAL, nothing written):
 * rot_dim odd or <= 0, theta <= 1, dynamic, or a linear/llama3/yarn/longrope plan whose factor, L0,
 * beta, low/high frequency factors or short/long factors (rot_dim / 2 of each, finite, > 0) are not
 * usable. */
KVC_API kvc_status kvc_rope_frequencies(const kvc_rope_config *r, int64_t rot_dim, float *inv_freq, float *attn_factor);
/* kvc_rope_frequencies of a longrope plan with its long factors (positions beyond L0); refused for any
 * other type. */
KVC_API kvc_status kvc_rope_frequencies_long(const kvc_rope_config *r, int64_t rot_dim, float *inv_freq,
                                             float *attn_factor);
/* The attention factor A of a plan, as kvc_rope_frequencies gives it (1 for
 * every type but yarn and longrope); longrope's is transformers' attention_factor, else
 * sqrt(1 + ln factor / ln L0) when factor > 1; NaN for NULL. */
KVC_API double kvc_rope_attention_factor(const kvc_rope_config *r);

/* cos/sin [rot_dim] of position pos: angle_i = (float)pos * inv_freq[i % h]
 * (h = rot_dim / 2, f32 product as HF), cos = cosf(angle) * A, sin =
 * sinf(angle) * A; both halves repeat the h angles (HF's cat(freqs, freqs)). */
KVC_API void kvc_rope_cos_sin(const float *inv_freq, int64_t rot_dim, float attn_factor, int64_t pos, float *cos,
                              float *sin);

/* Half-split RoPE (HF rotate_half): with x1 = x[0:h], x2 = x[h:n],
 * y = concat(x1, x2) * cos + concat(-x2, x1) * sin. x, cos, sin, y: [n];
 * y may alias x. */
KVC_API void kvc_rope_half_f32(const float *x, const float *cos, const float *sin, int64_t n, float *y);
/* Interleaved RoPE (DeepSeek's rope_interleave): x1 = r[0::2], x2 = r[1::2],
 * then as kvc_rope_half_f32, so the output is de-interleaved (even lanes
 * first). r, cos, sin, y: [n]; y must not alias r. */
KVC_API void kvc_rope_interleaved_f32(const float *r, const float *cos, const float *sin, int64_t n, float *y);
/* RoPE on adjacent pairs in place (GPT-J's; transformers' GLM-4 and Cohere rotate_half): pair i =
 * (x[2i], x[2i+1]) turns by angle i, y[2i] = x[2i] cos_i - x[2i+1] sin_i, y[2i+1] = x[2i+1] cos_i +
 * x[2i] sin_i, cos_i / sin_i = cos[i] / sin[i] (kvc_rope_cos_sin's first half); the output keeps the
 * pairs where they were. x, y: [n]; cos, sin: [n]; y may alias x. */
KVC_API void kvc_rope_pairs_f32(const float *x, const float *cos, const float *sin, int64_t n, float *y);

/* Which channels of a head a RoPE rotates together. */
typedef enum kvc_rope_form {
    KVC_ROPE_HALF = 0,        /* channel i with i + rot_dim / 2 (kvc_rope_half_f32) */
    KVC_ROPE_INTERLEAVED = 1, /* DeepSeek's: pairs, output de-interleaved (kvc_rope_interleaved_f32) */
    KVC_ROPE_PAIRS = 2        /* GLM-4 / Cohere: pairs, output in place (kvc_rope_pairs_f32) */
} kvc_rope_form;

/* One form in place on the first rot_dim channels of n_heads heads stride floats apart: x [n_heads,
 * stride]; tmp [rot_dim] (KVC_ROPE_INTERLEAVED only, NULL for the others). */
KVC_API void kvc_rope_heads_f32(float *x, int64_t n_heads, int64_t stride, const float *cos, const float *sin,
                                int64_t rot_dim, kvc_rope_form form, float *tmp);

/* ======================================================================== */
/* Fused inference attention (AO 3)                                        */
/* ======================================================================== */

/* AO 3.3: "X_Y" = query (and non-paged K/V) layout X, output layout Y. */
typedef enum kvc_attn_layout {
    KVC_LAYOUT_UNSET = 0,
    KVC_LAYOUT_TND,       /* q [Tq, Nq, D], k [Tkv, Nkv, D], out [Tq, Nq, Dv] */
    KVC_LAYOUT_TND_NTD,   /* q [Tq, Nq, D], paged K/V only, out [Nq, Tq, Dv] */
    KVC_LAYOUT_NTD_TND,   /* q [Nq, Tq, D], k [Nkv, Tkv, D], out [Tq, Nq, Dv] */
    KVC_LAYOUT_BSH,       /* q [B, Sq, Nq*D], k [B, Skv, Nkv*D], out [B, Sq, Nq*Dv] */
    KVC_LAYOUT_BSND,      /* q [B, Sq, Nq, D], k [B, Skv, Nkv, D], out [B, Sq, Nq, Dv] */
    KVC_LAYOUT_BNSD,      /* q [B, Nq, Sq, D], k [B, Nkv, Skv, D], out [B, Nq, Sq, Dv] */
    KVC_LAYOUT_BSND_NBSD, /* q, k as BSND, out [Nq, B, Sq, Dv] */
    KVC_LAYOUT_COUNT
} kvc_attn_layout;

KVC_API const char *kvc_attn_layout_name(kvc_attn_layout layout);

/* Where K/V live (AO 3.3). CONTIGUOUS: K/V tensors in the query's layout
 * family (packed for T.. layouts, padded per batch row otherwise). PAGED:
 * blocks in the params' block_layout, read through block_table and
 * block_size: KVC_BLOCK_BNBSND [NB, bs, Nkv*D] (or 4-D [NB, bs, Nkv, D]),
 * KVC_BLOCK_BNNBSD [NB, Nkv, bs, D], KVC_BLOCK_NZ [NB, Nkv, D/c0, bs, c0]
 * (16-bit or 8-bit elements), KVC_BLOCK_BNNDBS (K [NB, Nkv, D, bs], V
 * BNNBSD); or each of K, V, key_rope placed by the params' paged_kv. */
typedef enum kvc_kv_storage { KVC_KV_CONTIGUOUS = 0, KVC_KV_BLOCKS = 1 } kvc_kv_storage;

/* One paged tensor (K, V or key_rope) read in place (AO 3.3, "Paged K/V
 * descriptor"): channel d of head g of the token in slot o of block n sits
 * at element n * block_stride + g * head_stride + o * token_stride + c(d)
 * of the tensor's data, where the layout names the form of one head's
 * channels: BNBSND or BNNBSD rows, c(d) = d (channel_stride 1); BNNDBS keys
 * in lanes (K only, token_stride 1), c(d) = d * channel_stride; NZ tiles of c0 = 32 bytes /
 * element size channels, c(d) = (d / c0) * channel_stride + d % c0. Every
 * stride is > 0; every element addressed lies inside the tensor (its shape
 * then only bounds the extent: any rank, e.g. [elements], each extent >= 0
 * and their product within int64). */
typedef struct kvc_paged_tensor {
    kvc_block_layout layout;
    int64_t head_dim;       /* channels per head: K D (= q's), V Dv, key_rope Dr */
    int64_t block_stride;   /* elements from block n to block n + 1 */
    int64_t head_stride;    /* elements from head g to head g + 1 */
    int64_t token_stride;   /* elements from slot o to slot o + 1 of a block */
    int64_t channel_stride; /* rows: 1; BNNDBS: elements from channel d to d + 1; NZ: from tile to tile */
} kvc_paged_tensor;

/* Paged K and V (and the MLA key_rope) each in its own layout and strides,
 * e.g. K and V interleaved per block in one allocation ([NB, 2, bs, Nkv, D]:
 * k at the buffer, v at the buffer + bs * Nkv * D elements, both with
 * block_stride 2 * bs * Nkv * D), padded blocks, or K token-major with V
 * head-major. block_table entries index [0, num_blocks). */
typedef struct kvc_paged_kv {
    int64_t num_blocks;      /* NB */
    kvc_paged_tensor k, v;   /* v may address k's memory (MLA's latent cache) */
    kvc_paged_tensor k_rope; /* MLA only (read when k_rope is given) */
} kvc_paged_kv;

/* The largest block_size paged attention takes (R8, the paging checks); the runner and
 * `kvcache run --block-size` take the same bound. */
#define KVC_ATTN_MAX_BLOCK_SIZE 1024

/* AO 3.4 / R9: the form of kv_lens, stated by the caller (no default).
 * Cumulative goes with packed (T.. contiguous) K/V, direct with paged or
 * BSH-family K/V. (batch.h's kvc_len_form has no "unset" state, hence a
 * separate enum here.) */
typedef enum kvc_attn_kv_form { KVC_KV_FORM_UNSET = 0, KVC_KV_FORM_DIRECT, KVC_KV_FORM_CUMULATIVE } kvc_attn_kv_form;

/* AO 3.10 dequantisation granularity (modes 0-2), and mode 3: per token
 * stored by cache slot, as kvc_write_slots_token_quant writes it (paged
 * K/V only). Keys and values take the same mode, except keys per channel
 * (0) with values per token (1 or 3): the KIVI split. docs/kv-dtypes.md. */
typedef enum kvc_quant_mode {
    KVC_QUANT_NONE = -1,
    KVC_QUANT_PER_CHANNEL = 0, /* scale [1] (per tensor) or [Nkv, D] / [H] / [1, Nkv, D] / [1, Nkv, 1, D] */
    KVC_QUANT_PER_TOKEN = 1,   /* scale [B, S] or [1, B, S] (S >= every Skv_b, >= W*bs when paged) */
    KVC_QUANT_PER_HEAD = 2,    /* scale [Nkv] */
    KVC_QUANT_PER_SLOT = 3     /* scale [NB, bs] or [NB*bs]: key j of request b at slot tbl[b][j/bs]*bs + j%bs */
} kvc_quant_mode;

/* R13-R15: what the layer this call belongs to expects (optional): a sliding-window layer's
 * band, a full layer's non-band mode, its own key's block size and heads. */
typedef enum kvc_attn_bind_type { KVC_BIND_NONE = 0, KVC_BIND_FULL, KVC_BIND_SLIDING } kvc_attn_bind_type;

typedef struct kvc_attn_binding {
    kvc_attn_bind_type type; /* NONE: no binding checks */
    int64_t window;          /* SLIDING: W keys including the query (mode 4, pre = W - 1, next = 0) */
    int32_t num_kv_heads;    /* the cache group's num_head per rank (0: not checked) */
    int32_t block_size;      /* the manager key's block size (0: not checked) */
} kvc_attn_binding;

/* MLA (q_rope and k_rope given): scores are q.k + q_rope.k_rope. With the
 * vendor operator's dims (Dr 64 and D 512 absorbed, or D 128 expanded) its
 * limits apply (R10: absorbed needs paged K/V, Nkv 1, Dv 512, at most 16
 * query tokens per request, no LSE, decode modes 0/4 or prefill 3/4; expanded
 * takes packed TND/NTD_TND K/V). Any other dims (e.g. latent 32 + rope 16 of
 * small models) are general MLA: every layout, storage, mode, query length
 * and LSE; absorbed calls pass the latent cache as both k and v with Nkv 1.
 * k_rope is f32/f16/bf16, or the keys' own int8/fp8 dtype, then read with
 * its key's scale (one scale over latent + rope: per tensor, head, token or
 * slot, no offsets). With a float k_rope, quantised keys take scales per
 * tensor, channel or head only (docs/kv-dtypes.md).
 *
 * The one parameter struct of both operator generations (AO 3.2). Fields
 * marked "required" have no default: kvc_attention_default_params() leaves
 * them unset and the validator refuses a call that does not set them. */
typedef struct kvc_attention_params {
    kvc_attn_layout layout; /* required; v1/v2 input_layout */
    int32_t num_heads;      /* required Nq; v1 num_heads, v2 num_query_heads */
    int32_t num_kv_heads;   /* required Nkv; num_key_value_heads (0 is NOT "= Nq") */
    double scale;           /* required, finite > 0; v1 scale/scaleValue, v2 softmax_scale */
    int32_t sparse_mode;    /* required 0..4 (default -1 = unset) */
    int64_t pre_tokens;     /* default 2147483647 */
    int64_t next_tokens;    /* default 2147483647 */
    bool bidirectional;     /* R1: allow mode 0 without mask and Sq > 1 */

    int64_t batch;                /* B: entries of q_lens and kv_lens */
    const int64_t *q_lens;        /* [B]; cumulative for TND/TND_NTD/NTD_TND, direct otherwise */
    const int64_t *kv_lens;       /* [B]; in kv_len_form */
    kvc_attn_kv_form kv_len_form; /* required */

    kvc_tensor q;      /* f32/f16/bf16, shape per layout (D = last dim / heads) */
    kvc_tensor k;      /* per layout, or per block_layout when paged */
    kvc_tensor v;      /* same as k with Dv; may alias k (MLA) */
    kvc_tensor q_rope; /* MLA [.., Nq, Dr] like q, Dr even (data NULL: absent) */
    kvc_tensor k_rope; /* MLA like k with Dr channels per head (data NULL: absent) */
    kvc_tensor mask;   /* modes 0/1 (bool or int8, 0/1); modes 2-4: absent or the 2048^2 template */

    kvc_kv_storage kv_storage;
    kvc_block_layout block_layout; /* when paged (default KVC_BLOCK_BNBSND); BNNDBS: K in lanes, V BNNBSD */
    kvc_tensor block_table;        /* int32 [B' >= B, W] when paged; each entry a request reads is bounded by NB,
                                    * but which blocks a row names is the caller's (vLLM's contract too) */
    int32_t block_size;            /* bs when paged */

    kvc_tensor sinks; /* optional [Nq] f32/f16/bf16 (v2 learnable_sink) */

    /* Quantised K/V (docs/kv-dtypes.md): x = scale * (q + offset) with q the
     * int8 integer or the exact fp8 value. int8 needs scales; fp8 scales are
     * optional (absent: x = q) and fp8 takes no offsets. */
    kvc_quant_mode key_quant_mode; /* with scales: required */
    kvc_quant_mode value_quant_mode;
    kvc_tensor key_scale, value_scale;   /* f32; both or neither */
    kvc_tensor key_offset, value_offset; /* f32; both or neither (int8 only) */

    kvc_tensor out; /* f32/f16/bf16, shape per layout */
    kvc_tensor lse; /* optional f32 [B, Nq, Sq, 1] or [Tq, Nq, 1] (T.. layouts) */

    kvc_attn_binding binding;

    /* Optional when paged (default NULL: block_layout over the tensors' shapes): K, V and key_rope addressed
     * by this descriptor, block_layout not read. Last, so that the fields before it keep their offsets. */
    const kvc_paged_kv *paged_kv;

    /* Soft-capping of the scores (Gemma 2's attn_logit_softcapping): each scaled score s becomes
     * cap * tanh(s / cap) before the mask and the softmax (a score of -inf stays -inf: left out as before);
     * 0 = none (the default), else finite and > 0. Sinks are not capped. Added after paged_kv: the fields
     * before it keep their offsets. */
    double logit_softcap;

    /* Chunked local attention (Llama 4's RoPE layers, attention_chunk_size): with C > 0 a query row i of a
     * request of Sq queries over Skv keys sits at absolute position p = i + Skv - Sq and sees, on top of the
     * mode's rule, only the keys of its own chunk, [floor(p / C) * C, floor(p / C) * C + C): for causal modes a
     * query sees j with floor(j / C) == floor(p / C) and j <= p. 0 = none (the default), else in [1, 2^31).
     * Keys before the chunk are never read (a chunked-local cache may have released their blocks). Added
     * after logit_softcap: the fields before it keep their offsets. */
    int64_t attention_chunk_size;

    /* ALiBi (BLOOM, MPT, Falcon with alibi): optional f32 [Nq], one slope m_n per query head. Query head n's
     * score of key j, for a row at absolute position p = i + Skv - Sq (as above), gains m_n * (j - p) after
     * the scale and the soft-cap (a score of -inf stays -inf), the bias computed in f32 from the distance
     * (exact below 2^24); the distance, not j alone, keeps the bias small where the weights are (the softmax
     * is the same, lse includes the bias). Models that add the bias before the scale (Falcon) pass m_n * scale.
     * data NULL: none (the default). Added after attention_chunk_size: the fields before it keep their
     * offsets. */
    kvc_tensor alibi_slopes;

    /* With alibi_slopes, transformers' Falcon form instead of the distance: head n's score of key j (its
     * absolute position) gains bf16(m_n * bf16(j)) * scale, the position rounded to bf16, the product taken in
     * f32 and rounded to bf16 (nearest even), then times the softmax scale: the bias added before the scale at
     * bf16 precision, as FalconModel's build_alibi_tensor computes it (slopes.bfloat16() * int64 positions).
     * false: the distance form above. Added after alibi_slopes. */
    bool alibi_bf16;
} kvc_attention_params;

KVC_API kvc_attention_params kvc_attention_default_params(void);

/* Which operator generation a named parameter comes from (AO 3.2). */
typedef enum kvc_attn_api { KVC_API_V1 = 1, KVC_API_V2 = 2 } kvc_attn_api;

/* Sets a scalar parameter by its framework name under one generation
 * ("scale" (v1) / "softmax_scale" (v2), "num_heads" / "num_query_heads",
 * "num_key_value_heads", "sparse_mode", "pre_tokens", "next_tokens",
 * "block_size", "softmax_lse_flag" / "return_softmax_lse" (returns
 * KVC_OK and nothing else: LSE is requested by giving p->lse)). A name of
 * the other generation is refused (KVC_EINVAL) with a message naming the
 * right one: the vendor binding silently ignores it (scale becomes 1.0).
 * An integer parameter's value must be a whole number within its field's
 * type (int32, pre/next_tokens int64): KVC_EINVAL naming it otherwise, with
 * *p unchanged. */
KVC_API kvc_status kvc_attention_params_set(kvc_attention_params *p, kvc_attn_api api, const char *name, double value);

/* AO 3.7: mscale(f, m) = 0.1 m ln f + 1 for f > 1, else 1; and the softmax
 * scale (d_nope + d_rope)^-1/2 * mscale(f, mscale_all_dim)^2 (plain
 * 1/sqrt(d_nope + d_rope) when mscale_all_dim == 0); NaN when a dim is
 * negative or their sum is not in [1, INT64_MAX]. */
KVC_API double kvc_yarn_mscale(double factor, double mscale);
KVC_API double kvc_yarn_softmax_scale(int64_t d_nope, int64_t d_rope, double factor, double mscale_all_dim);

/* AO 3.5 (mask modes): fills tmpl [2048 * 2048] with T[r][c] = (c > r). */
#define KVC_MASK_TEMPLATE_DIM 2048
KVC_API void kvc_mask_template_fill(uint8_t *tmpl);

/* Validates every rule of AO 6.1 (the misuses refused with a message, R1-R20) that applies to
 * attention; KVC_OK or the refusal both implementations would return. */
KVC_API kvc_status kvc_attention_check(const kvc_attention_params *p);

/* float64 reference (AO 3.1: attention semantics, a softmax over the visible keys only).
 * Allocates O(Skv + D) scratch per call. */
KVC_API kvc_status kvc_attention_ref(const kvc_attention_params *p);

/* Fast CPU kernel. workspace: at least kvc_attention_cpu_workspace_size()
 * bytes, 64-byte aligned (kvc_aligned_alloc), reusable across calls with
 * the same or smaller shapes; sized for `max_threads` OpenMP threads (the
 * call uses at most that many). */
KVC_API kvc_status kvc_attention_cpu_workspace_size(const kvc_attention_params *p, int max_threads, size_t *bytes);
KVC_API kvc_status kvc_attention_cpu(const kvc_attention_params *p, void *workspace, size_t workspace_bytes);
/* The number of threads kvc_attention_cpu(p, workspace, workspace_bytes)
 * runs on: the OpenMP maximum, fewer when the workspace was sized for
 * fewer threads (kvc_attention_cpu_workspace_size's max_threads), 1 for
 * problems too small to share, no more than the call has pieces of work
 * (its items, or with split keys its chunks of 512 keys: a decode call of
 * one request over one chunk runs on 1). Same refusals as the call for p
 * and the workspace; *threads is 0 on failure. Results never depend on it. */
KVC_API kvc_status kvc_attention_cpu_threads(const kvc_attention_params *p, const void *workspace,
                                             size_t workspace_bytes, int *threads);

/* Name of the SIMD path kvc_attention_cpu picked on this CPU ("amx-bf16+avx512": bf16 K/V on AMX
 * tiles, "avx512-f-bw-vl", "avx2-fma-f16c", "portable"); the environment variable
 * KVC_SIMD=portable|avx2|avx512|amx forces a path (never one the CPU cannot run). */
KVC_API const char *kvc_attention_cpu_isa(void);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_OPS_H */
