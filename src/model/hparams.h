/* The one reader of a model's config.json (docs/config.md): the model's
 * identity, its sizes, its rotary embedding with transformers 5.x's
 * precedence between `rope_scaling` and `rope_parameters`, and the MLA
 * latent dims. The runtime (model/config.c) and the planner (plan/facts.c)
 * both read through it and add only the keys of their own concern, with the
 * same accessors (json_read.h).
 *
 * Every size is checked against the bounds below before anything uses it;
 * a refusal names the key and the value. */
#ifndef KVC_MODEL_HPARAMS_H
#define KVC_MODEL_HPARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/model.h"
#include "kvcache/ops.h"
#include "model/json_read.h"

/* Bounds of the sizes read from config.json (docs/config.md says why). */
#define KVC_HP_MAX_LAYERS    100000             /* num_hidden_layers */
#define KVC_HP_MAX_HEADS     65536              /* attention heads, KV heads, state heads */
#define KVC_HP_MAX_DIM       65536              /* head dims, latent ranks, state dims, conv widths */
#define KVC_HP_MAX_WIDTH     (INT64_C(1) << 20) /* hidden and intermediate sizes */
#define KVC_HP_MAX_VOCAB     (INT64_C(1) << 24) /* vocab_size */
#define KVC_HP_MAX_POSITIONS INT32_MAX          /* max_position_embeddings, windows, original lengths */
#define KVC_HP_MAX_EXPERTS   65536              /* expert counts and groups */
#define KVC_HP_MAX_FACTOR    1e6                /* rope factors, attention factors, mscales */
#define KVC_HP_MAX_STREAMS   64                 /* hyper-connection residual streams (hc_mult) */
#define KVC_HP_MAX_THETA     1e12               /* rope_theta */
#define KVC_HP_NAME_MAX      255                /* bytes of model_type, architectures[0] and rope type */
/* positions when a config has no length key: vLLM's assumption, the planner's and the runtime's */
#define KVC_HP_DEFAULT_MAX_POS 2048

/* A parsed config.json. Strings point into the owned tree. */
typedef struct kvc_hparams {
    cJSON *doc;               /* the parsed document (owned) */
    kvc_json_obj cfg;         /* text_config when present (root as fallback), else the root */
    const char *model_type;   /* NULL when absent */
    const char *architecture; /* architectures[0]; NULL when absent */
    /* kvci_hparams_read_sizes */
    int64_t n_layers;   /* [1, KVC_HP_MAX_LAYERS] */
    int64_t n_heads;    /* [1, KVC_HP_MAX_HEADS] */
    int64_t n_kv_heads; /* divides n_heads; n_heads when absent */
    bool have_kv_heads;
    int64_t hidden_size; /* 0 when absent */
    int64_t max_pos;     /* max_position_embeddings, [1, KVC_HP_MAX_POSITIONS] */
    bool have_max_pos;
    /* kvci_hparams_read_rope */
    kvc_rope_config rope;
    const char *rope_source;  /* "rope_scaling", "rope_parameters" or NULL (no dict) */
    bool rope_per_layer_type; /* the dict is nested per layer type; `rope` is its full_attention entry */
    const char *rope_entry;   /* nested: the entry `rope` was read from ("full_attention", DeepSeek-V4's "compress") */
    kvc_rope_config rope_sliding; /* nested: its sliding_attention entry (rope_sliding_given), else `rope` */
    bool rope_sliding_given;
    bool rope_none; /* OLMo Hybrid without a rope_theta (null) or with a dict per layer type: no rotary embedding */
} kvc_hparams;

/* The latent dims of an MLA (DeepSeek-style) model. */
typedef struct kvc_mla_dims {
    int64_t q_lora_rank; /* 0: the config gives null: plain q_proj; missing: 1536 (transformers') */
    int64_t kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
} kvc_mla_dims;

/* Parses text[0..len) (doc names it in messages), selects text_config, reads
 * model_type and architectures[0]. hp is zeroed first; close it also after a
 * failure. */
kvc_status kvci_hparams_open(const char *text, size_t len, const char *doc, kvc_hparams *hp);
void kvci_hparams_close(kvc_hparams *hp);

/* num_hidden_layers, num_attention_heads, num_key_value_heads, hidden_size,
 * max_position_embeddings, each under its standard name or the first present
 * of its other names (kvci_hp_*_keys; KV heads also from multi_query or
 * ChatGLM's multi_query_group_num). */
kvc_status kvci_hparams_read_sizes(kvc_hparams *hp);
#define KVC_HP_ALIASES 5 /* names per size, NULL-padded */
extern const char *const kvci_hp_layers_keys[KVC_HP_ALIASES];
extern const char *const kvci_hp_heads_keys[KVC_HP_ALIASES];
extern const char *const kvci_hp_hidden_keys[KVC_HP_ALIASES];
/* The first of keys that c holds; NULL when none. */
const char *kvci_hparams_key(const kvc_json_obj *c, const char *const keys[KVC_HP_ALIASES]);
/* The first present of keys, as kvci_json_int reads it (its name in messages); none present: *have false. */
kvc_status kvci_hparams_int(const kvc_json_obj *c, const char *const keys[KVC_HP_ALIASES], int64_t lo, int64_t hi,
                            int64_t *out, bool *have);
/* The attention head dim: head_dim (or ChatGLM's kv_channels) when given, else the model type's class
 * default (qwen3: 128, gpt_oss: 64), else hidden_size / num_attention_heads
 * (which must divide). */
kvc_status kvci_hparams_head_dim(const kvc_hparams *hp, int64_t *out);
/* The sliding window (0: none): sliding_window, or the class default (gpt_oss:
 * 128). Qwen2/Qwen3 configs, and any config holding use_sliding_window (Qwen2-VL),
 * apply it only when use_sliding_window is true (*qwen_rule then: windows from
 * max_window_layers on); otherwise transformers ignores the key and so does the
 * reader. */
kvc_status kvci_hparams_window(const kvc_hparams *hp, int64_t *window, bool *qwen_rule);
/* The rotary embedding (after read_sizes): the dict is a non-empty
 * `rope_scaling`, else `rope_parameters`; see docs/config.md. A dict nested
 * per layer type gives `rope` its full_attention entry and `rope_sliding` its
 * sliding_attention entry. */
kvc_status kvci_hparams_read_rope(kvc_hparams *hp);
/* The MLA latent dims; q_lora_rank must be null (none), missing (1536) or >= 1. */
kvc_status kvci_hparams_read_mla(const kvc_hparams *hp, kvc_mla_dims *out);

/* Softmax scale of MLA attention: (dn + dr)^-1/2, times mscale(factor,
 * mscale_all_dim)^2 when the rope is scaled and mscale_all_dim is set. */
double kvci_mla_softmax_scale(const kvc_rope_config *rope, int64_t qk_nope_head_dim, int64_t qk_rope_head_dim);

#endif /* KVC_MODEL_HPARAMS_H */
