/* kvcache plan layer: from a model's Hugging Face config.json to its cache
 * plan — paged or legacy caches, the attention type, window, mask modes and
 * caches of every layer, the operator generation and layout, MLA absorption,
 * the softmax scale, the cache description it implies and the block
 * planner's numbers for it. Selection rules: docs/ops.md
 * (AO 3.5 mask modes, AO 3.7 softmax scale, AO 3.8 MLA absorption, AO 4 which layout
 * each model path calls, AO 5 standalone modes); sizing: KM 2 (cache descriptions) and
 * KM 6 (block planning, kvc_plan_blocks).
 *
 * Thread safety: a kvc_model_plan is immutable after creation and may be read
 * from several threads; creating plans from several threads is safe. */
#ifndef KVCACHE_PLAN_H
#define KVCACHE_PLAN_H

#include "kvcache/base.h"
#include "kvcache/cache.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVC_PLAN_TEXT_MAX     256 /* bytes of a reason, warning or name, NUL included */
#define KVC_PLAN_MAX_CACHES   4   /* caches of one layer */
#define KVC_PLAN_MAX_WARNINGS 24
#define KVC_PLAN_NO_MODE      (-1) /* sparse_mode of a layer without attention (Mamba) */
#define KVC_PLAN_NO_BAND      (-1) /* pre/next tokens of a layer without a band */

typedef enum kvc_kv_mode {
    KVC_KV_PAGED = 0, /* block-managed caches, block tables, slot mappings */
    KVC_KV_LEGACY = 1 /* contiguous [B, S_max, ...] caches written by kv_len */
} kvc_kv_mode;

/* "paged" / "legacy"; "?" for an unknown value. */
KVC_API const char *kvc_kv_mode_name(kvc_kv_mode mode);

/* What the caller decides; start from kvc_plan_default_options(). */
typedef struct kvc_plan_options {
    int64_t tp;              /* attention tensor-parallel ranks, >= 1 */
    int64_t block_size;      /* tokens per block, >= 1 */
    bool kv_dtype_set;       /* false: the config's torch_dtype (bf16 if absent) */
    kvc_dtype kv_dtype;      /* f32, f16, bf16, i8, fp8_e4m3 or fp8_e5m2 (kvc_model_kv_dtype_ok) */
    int64_t max_model_len;   /* 0: the config's max_position_embeddings; at most 2^31 - 1 (32-bit block tables) */
    int64_t max_concurrency; /* requests served at once, >= 1 */
    int64_t next_n;          /* speculative depth, >= 0 */
    int64_t kv_memory_bytes; /* > 0: size the caches from this budget; 0: offline (len x concurrency) */
} kvc_plan_options;

/* tp 1, block_size 128, dtype from the config, max_model_len from the config,
 * concurrency 1, next_n 0, offline sizing. */
KVC_API kvc_plan_options kvc_plan_default_options(void);

/* One cache tensor of one layer, on one rank. */
typedef struct kvc_plan_cache {
    char name[KVC_NAME_MAX]; /* "k_cache", "v_cache", "nope_cache", "rope_cache", "conv_state", ... */
    bool is_state;           /* Mamba state: shape instead of num_head x dim */
    int64_t num_head;        /* heads on this rank (max(kv_heads / tp, 1); MLA latent: 1) */
    int64_t dim;             /* per-head dim */
    int32_t n_shape;         /* state: shape[0..n_shape) of one state block */
    int64_t shape[KVC_MAX_DIMS];
    kvc_dtype dtype;
    int64_t bytes_per_token; /* num_head * the bytes of dim elements (the dtype table's); 0 for a state */
    int64_t bytes_per_block; /* state: bytes of one state block; else block_size * bytes_per_token */
} kvc_plan_cache;

typedef struct kvc_plan_layer {
    int32_t layer;
    kvc_attn_type attn_type;
    int64_t sliding_window; /* keys a query sees, itself included; 0 = not a window layer */
    int32_t sparse_prefill; /* mask mode (AO 3.5): 3 causal, 4 band, 0 none; KVC_PLAN_NO_MODE for Mamba;
                             * ChunkedLocal: per chunk (attention_chunk_size) */
    int32_t sparse_decode;
    int64_t pre_tokens;  /* band layers: sliding_window - 1; else KVC_PLAN_NO_BAND */
    int64_t next_tokens; /* band layers: 0; else KVC_PLAN_NO_BAND */
    int32_t n_caches;
    kvc_plan_cache caches[KVC_PLAN_MAX_CACHES];
    /* ChunkedLocal layers: C, the chunk a query attends within ([floor(p / C) * C, p]); 0 = not a
     * chunked layer. kvcache's operator takes it as attention_chunk_size with sparse_prefill / sparse_decode
     * (3); the vendor operator has no chunked mask: 3 applies to each request split into one virtual request
     * per chunk over the same block table (docs/plan.md). */
    int64_t attention_chunk_size;
    /* DeepSeek-V4's compressed caches: positions per stored entry (a block of block_size x compress_ratio
     * positions holds block_size entries); 0 = not a compressed entry. */
    int64_t compress_ratio;
} kvc_plan_layer;

/* What one pool for a state key and an attention key would cost (issue 24
 * #2). A pool's block is one page per entry slot, so a state key can share
 * the attention's pool only with every state page padded up to the pool's
 * page: the largest state page, rounded up to whole tokens of the attention
 * key, whose block size grows to fill it. The plan keeps the state key in a
 * pool of its own (docs/cache.md, "Uniform pages"); these figures say why. */
typedef struct kvc_plan_state_padding {
    char state_key[KVC_NAME_MAX]; /* "" when the plan has no state key beside an attention key */
    char paged_key[KVC_NAME_MAX]; /* the attention key it would share with */
    int64_t page_bytes;           /* the shared pool's page */
    int64_t block_size;           /* the attention key's block size at that page */
    int64_t state_bytes;          /* one state block (a sequence's state): every state entry's page */
    int64_t padded_bytes;         /* the same block in the shared pool: state entries x page_bytes */
} kvc_plan_state_padding;

typedef struct kvc_model_plan {
    char architecture[KVC_PLAN_TEXT_MAX]; /* architectures[0] (or model_type when absent) */
    char model_type[KVC_PLAN_TEXT_MAX];
    char family[32];          /* "llama", "qwen3", "gpt_oss", "deepseek_mla", "generic", ... */
    kvc_plan_options options; /* as resolved (dtype, max_model_len filled in) */

    kvc_kv_mode kv_mode;
    char kv_mode_reason[KVC_PLAN_TEXT_MAX];
    int32_t fa_version; /* 1 or 2 */
    char fa_version_reason[KVC_PLAN_TEXT_MAX];
    char input_layout[16]; /* "TND", "TND_NTD", "BSH", "NTD_TND" */
    bool mla;              /* latent caches (DeepSeek-style) */
    bool mla_absorb;
    bool hybrid; /* more than one attention type among the layers */
    bool sinks;  /* learnable attention sinks */

    int64_t num_attention_heads; /* whole model */
    int64_t num_key_value_heads; /* whole model */
    int64_t q_heads_per_rank;
    int64_t head_dim;             /* query/key head dim (MLA: nope + rope) */
    double scale;                 /* softmax scale incl. YaRN mscale^2 where asked */
    char rope_type[32];           /* "default", "llama3", "yarn", "linear", ... */
    double rope_factor;           /* 1 when unscaled */
    double rope_attention_factor; /* YaRN factor on cos/sin (not in scale); 1 otherwise */

    int32_t n_layers;
    kvc_plan_layer *layers; /* [n_layers] */

    kvc_model_cache_info cache_info;      /* the description the plan implies (owned), its block sizes
                                           * unified (kvc_cache_info_unify_pages, up to max_model_len
                                           * capped at KVC_ATTN_MAX_BLOCK_SIZE, as the engine) */
    kvc_plan_params plan_params;          /* what kvc_plan_blocks was called with */
    kvc_block_plan blocks;                /* its answer */
    kvc_plan_state_padding state_padding; /* a state key beside attention: what sharing would cost */

    int32_t n_warnings;
    char warnings[KVC_PLAN_MAX_WARNINGS][KVC_PLAN_TEXT_MAX];

    /* The operator's logit_softcap (attn_logit_softcapping: Gemma 2's 50 when absent; 0: none). Last, so that
     * the fields before it keep their offsets. */
    double logit_softcap;
} kvc_model_plan;

/* Analyses config.json text (len bytes, need not be NUL-terminated) and plans
 * its caches. Malformed JSON, missing or contradictory fields, an unknown
 * architecture without the generic fields, or options the model cannot take
 * are KVC_EINVAL naming the field; a budget too small for the fixed caches is
 * the planner's error. *out is NULL after a failure. */
KVC_API kvc_status kvc_model_plan_create(const char *config_json, size_t len, const kvc_plan_options *opt,
                                         kvc_model_plan **out);
KVC_API void kvc_model_plan_destroy(kvc_model_plan *plan);

/* The plan as one JSON object (the `kvcache plan --json` document), a
 * NUL-terminated string the caller releases with kvc_plan_json_free. */
KVC_API kvc_status kvc_model_plan_to_json(const kvc_model_plan *plan, char **out);
KVC_API void kvc_plan_json_free(char *json);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_PLAN_H */
