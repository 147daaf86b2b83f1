/* One descriptor per model family (docs/model.md, "Adding a model family"):
 * the names that identify it in config.json, which model types the runtime
 * runs, its runtime config keys, the kind of every layer and the heads and
 * dims of every layer's cache. The planner (src/plan) and the runtime
 * (model, runner, engine) both read these facts from here, so they cannot
 * disagree. Weight names and shapes per family are still in weights.c.
 *
 * The built-in families sit in the table of family.c, one file each
 * (family_*.c); another one (a test's) registers with kvci_family_register. */
#ifndef KVC_MODEL_FAMILY_H
#define KVC_MODEL_FAMILY_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/model.h"
#include "model/hparams.h"

/* What a layer keeps between steps. */
typedef enum kvc_layer_kind {
    KVC_LK_FULL = 0,     /* full attention: k/v (or the MLA latent) of every position */
    KVC_LK_SLIDING = 1,  /* attention over the last `window` positions */
    KVC_LK_STATE = 2,    /* Mamba / linear attention / short convolution: fixed-size state per sequence */
    KVC_LK_NONE = 3,     /* nothing: a layer of MLP or MoE only (Nemotron-H's "-" and "E"); planned without caches */
    KVC_LK_PARALLEL = 4, /* full attention and a Mamba2 state side by side in one layer (Falcon-H1) */
    KVC_LK_CHUNKED = 5   /* chunked local attention: the keys of the query's own chunk of `chunk` positions (Llama 4) */
} kvc_layer_kind;

/* What the kind rules read: the config, its layer count, sliding window and
 * attention chunk, and where warnings go (the planner's; NULL: dropped, as
 * the runtime does). */
typedef struct kvc_family_ctx {
    const kvc_hparams *hp;
    int64_t n_layers;
    int64_t window; /* sliding_window after kvci_hparams_window (0 = none) */
    bool qwen_rule; /* use_sliding_window: windows from max_window_layers on */
    int64_t chunk;  /* attention_chunk_size (0 = none) */
    void (*warn)(void *user, const char *msg);
    void *user;
} kvc_family_ctx;

/* Reports a warning through ctx->warn (when set). */
void kvci_family_warn(const kvc_family_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The attention sizes a cache shape derives from (one tensor-parallel rank's heads). */
typedef struct kvc_family_dims {
    int64_t num_heads, num_kv_heads, head_dim;
    int64_t kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; /* MLA */
} kvc_family_dims;

/* Heads and per-head dim of a layer's k (index 0) and v (index 1) caches. */
typedef struct kvc_cache_dims {
    int64_t heads[2], dim[2];
} kvc_cache_dims;

/* Shapes of the state caches of a Mamba / linear-attention layer, per rank. */
typedef struct kvc_state_shapes {
    int32_t n;
    const char *names[2];
    int32_t n_shape[2];
    int64_t shape[2][KVC_MAX_DIMS];
} kvc_state_shapes;

struct kvc_fwd_step; /* one forward step's state (forward_internal.h) */

/* One config.json spelling of a family: model_type, architectures[0] (NULL:
 * none known), the name the plan reports, and whether the runtime runs it. */
typedef struct kvc_family_alias {
    const char *model_type;
    const char *architecture;
    const char *plan_name;
    bool runs;
} kvc_family_alias;

typedef struct kvc_family_desc {
    kvc_model_family id; /* set by the table (built-ins) or kvci_family_register */
    const char *name;    /* kvc_model_family_name */
    const kvc_family_alias *aliases;
    int32_t n_aliases;
    bool mla;            /* latent attention: heads and dims from the MLA fields (kvci_hparams_read_mla) */
    bool sinks;          /* per-head attention sinks */
    double rms_norm_eps; /* when config.json has none; 0: 1e-6 */
    double attn_softcap; /* attn_logit_softcapping when config.json has none (Gemma 2: transformers' 50); 0: none */
    /* The runtime's keys of the family beyond the shared reader's (head_dim
     * included) into cfg; NULL when the runtime runs no model type of it. */
    kvc_status (*parse)(const kvc_hparams *hp, kvc_model_config *cfg);
    /* The rules that tie the family's fields of cfg together (expert counts, routing groups), named
     * under doc; NULL: none. Every config the runtime takes passes them: after parse, and a
     * caller's own struct in kvc_model_create_random. */
    kvc_status (*check)(const kvc_model_config *cfg, const char *doc);
    /* The kind of each layer when config.json has no layer_types; NULL: every
     * layer full, or sliding when the config sets a window. */
    kvc_status (*default_kinds)(const kvc_family_ctx *ctx, kvc_layer_kind *kinds /* [n_layers] */);
    /* Heads and dims of the k/v caches (latent: the MLA latent form); NULL: GQA's
     * (num_kv_heads of head_dim, both). */
    kvc_cache_dims (*cache_dims)(const kvc_family_dims *d, bool latent);
    /* The softmax scale of a non-MLA family when config.json sets no
     * attention_multiplier; NULL: head_dim^-1/2 (the planner's; the runtime's
     * kvc_model_attn_scale covers the families it runs). */
    kvc_status (*softmax_scale)(const kvc_family_ctx *ctx, int64_t head_dim, double *scale);
    /* The forward pass's blocks of layer l, from the normalised hidden
     * states to ws->proj: attention (NULL: GQA, kvci_attn_gqa) and the
     * feed-forward (NULL: the dense SwiGLU MLP, kvci_fwd_dense_mlp). */
    kvc_status (*attention)(const struct kvc_fwd_step *s, int64_t l);
    kvc_status (*ffn)(const struct kvc_fwd_step *s, int64_t l);
    /* Shapes of the state caches of its state layers on one of tp ranks
     * (hidden_size 0 when absent); NULL: the Mamba2 fields (mamba_n_heads, ...). */
    kvc_status (*state_shapes)(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s);
    /* Whether the model type's attention applies config.json's sliding_window (false: the key is not read and a
     * "sliding_attention" layer is a full one, as transformers runs such a config); NULL: it does. */
    bool (*reads_window)(const kvc_hparams *hp);
    /* The family's own reading of its layer list in place of layer_types (DeepSeek-V4's attention types),
     * *given set when it fills kinds; NULL: layer_types. */
    kvc_status (*layer_list)(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given);
    /* The layers whose head dim, KV heads or value head dim differ from the model's (Gemma 4's full layers,
     * MiMo-V2-Flash's sliding ones), read after the kinds (which it may correct, as the config class does) into
     * head_dim[n_layers], kv_heads[n_layers] and v_head_dim[n_layers] (whole model, not per rank), which hold the
     * model's on entry (v_head_dim 0: the layer's head dim); NULL: every layer the model's. The planner's only (the
     * runtime's are kvc_model_config.layer_head_dim ...). */
    kvc_status (*layer_dims)(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, int64_t *head_dim, int64_t *kv_heads,
                             int64_t *v_head_dim);
    int64_t kv_shared_layers; /* num_kv_shared_layers when config.json has none (Gemma 3n: 15); planner only */
} kvc_family_desc;

/* The built-in families, one file each. */
extern const kvc_family_desc kvc_family_dense, kvc_family_gpt_oss, kvc_family_deepseek_v3, kvc_family_gemma2,
    kvc_family_gemma3, kvc_family_qwen3_next, kvc_family_jamba, kvc_family_mamba2_hybrid, kvc_family_generic,
    kvc_family_lfm2, kvc_family_kimi_linear, kvc_family_minimax, kvc_family_llama4, kvc_family_deepseek_v4,
    kvc_family_hy_v4, kvc_family_gemma4, kvc_family_gemma3n, kvc_family_rwkv, kvc_family_recurrent_gemma;

/* One DeepSeek-V4 layer (family_deepseek_v4.c): positions per compressed entry beside its window (0: the
 * window only) and whether it is compressed sparse attention (CSA: a Lightning Indexer and overlapping windows)
 * rather than heavily compressed attention (HCA). */
typedef struct kvc_v4_layer {
    int64_t ratio;
    bool indexed;
} kvc_v4_layer;
/* The n_layers layers of a DeepSeek-V4 config into out[n_layers] (DeepseekV4Config's reading: layer_types, else
 * compress_ratios, else its default schedule; compress_rates and the legacy rate keys); refused by key. */
kvc_status kvci_deepseek_v4_layers(const kvc_hparams *hp, int64_t n_layers, kvc_v4_layer *out);

/* Which of HY V4's n_layers layers run their own indexer (family_hy_v4.c): indexer_types "full" (true) or
 * "shared" (false, reusing the last full layer's top-k; no indexer keys), else HYV4Config's default (layer 0,
 * then every fourth from layer 1); refused by key, also when the first layer is shared. */
kvc_status kvci_hy_v4_indexed(const kvc_hparams *hp, int64_t n_layers, bool *out);

/* Adds a family (a test's): its id is set and returned; its names must not
 * be taken already. Not thread-safe: register before any parse. */
kvc_status kvci_family_register(kvc_family_desc *d, kvc_model_family *out);
/* The descriptor of id, or NULL. */
const kvc_family_desc *kvci_family_get(kvc_model_family id);
/* The family and alias of model_type, else of the architecture (either may be
 * NULL); NULL when neither is known. */
const kvc_family_desc *kvci_family_find(const char *model_type, const char *architecture,
                                        const kvc_family_alias **alias);
/* Whether the runtime runs model_type (an alias of it with `runs`): the rules that follow transformers' reading of
 * a key apply to these; types planned only, and unknown ones, keep the planner's generic reading. */
bool kvci_family_type_runs(const char *model_type);
/* Whether name (NULL: not) is one of list[0..n). */
bool kvci_name_listed(const char *name, const char *const *list, size_t n);
/* Whether the runtime runs family id (a registered family with a parse hook). */
bool kvci_family_runs(kvc_model_family id);
/* The model types the runtime runs, comma-separated, into buf[cap] (for messages). */
void kvci_family_runtime_types(char *buf, size_t cap);

/* The kind of every layer: layer_types when given, else the family's rule;
 * refuses sliding layers without a window, chunked layers without
 * attention_chunk_size and (MLA) any sliding or chunked layer. Reads the
 * window and the chunk first (ctx->window, ctx->qwen_rule, ctx->chunk are
 * set here). */
kvc_status kvci_family_layer_kinds(const kvc_family_desc *d, kvc_family_ctx *ctx, kvc_layer_kind *kinds);
/* The cache heads and dims of a layer of family d (latent: MLA latent caches). */
kvc_cache_dims kvci_family_cache_dims(const kvc_family_desc *d, const kvc_family_dims *dims, bool latent);
/* The cache heads and dims of a layer of a runtime config (its rank's heads). */
kvc_cache_dims kvci_model_cache_dims(const kvc_model_config *c, bool latent);
/* Layer l's (layer_shape.c): its own KV heads, q/k and v head dims (kvci_layer_shape), or the family's hook's. */
kvc_cache_dims kvci_model_layer_cache_dims(const kvc_model_config *c, int64_t l, bool latent);
/* The state shapes of family d's state layers for tp ranks (its hook, else the Mamba2 fields). */
kvc_status kvci_family_state_shapes(const kvc_family_desc *d, const kvc_hparams *hp, int64_t hidden_size, int64_t tp,
                                    kvc_state_shapes *s);
/* v / tp into *out, refused naming `field` when tp does not divide it. */
kvc_status kvci_family_split_tp(const kvc_hparams *hp, const char *field, int64_t v, int64_t tp, int64_t *out);

/* default_kinds rules shared by families: every layer full (a sliding_window
 * key ignored); every layer sliding when the config sets a window, else full
 * (the rule when default_kinds is NULL); even layers sliding, odd ones full. */
kvc_status kvci_family_full_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
kvc_status kvci_family_uniform_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
/* The kinds config.json's layer_types gives (*given: whether it has the key), as the families without a layer_list
 * read them. */
kvc_status kvci_family_layer_types(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given);
/* One 0/1 flag per layer in the array `field` (MiniMax's attn_type_list, Llama 4's no_rope_layers): kind
 * if_zero or if_one per layer; refused naming the field when its length is not the layer count or an entry is
 * not 0 or 1. */
kvc_status kvci_family_flag_kinds(const kvc_family_ctx *ctx, const char *field, const cJSON *list,
                                  kvc_layer_kind if_zero, kvc_layer_kind if_one, kvc_layer_kind *kinds);
kvc_status kvci_family_alternating_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
/* every - 1 sliding layers, then one full, repeated (Gemma 3's and Cohere2's sliding_window_pattern); every >= 1. */
kvc_status kvci_family_every_nth_full(const kvc_family_ctx *ctx, int64_t every, kvc_layer_kind *kinds);
/* With a window, sliding_window_pattern N (Cohere2's: every N-th layer full, as Gemma 3) or a string of L
 * (local, sliding) and G (global, full) repeated over the layers (Exaone 4) into kinds, *found set; without
 * a window or the key: nothing written, *found false. */
kvc_status kvci_family_pattern_kinds(const kvc_family_ctx *ctx, bool *found, kvc_layer_kind *kinds);
/* cache_dims of an MLA family: full form nH heads of dn + dr (k) and dv (v); latent one head of rkv and dr. */
kvc_cache_dims kvci_family_mla_cache_dims(const kvc_family_dims *d, bool latent);

/* DeepSeek-V3's routing sizes (family_deepseek_v3.c; GLM-4.5's too): experts_per_tok of n_routed_experts in topk_group
 * of n_group groups, a routed_scaling_factor in (0, KVC_HP_MAX_FACTOR]; refused naming them under doc. */
kvc_status kvci_family_check_grouped_router(const kvc_model_config *cfg, const char *doc);
/* layer_moe from mlp_layer_types (family_deepseek_v3.c; GLM-4.7-Flash, K-EXAONE): "dense" / "sparse" per layer,
 * checked by name; absent: sparse from cfg->first_k_dense_replace on. */
kvc_status kvci_family_mlp_layer_types(const kvc_json_obj *c, kvc_model_config *cfg);

/* AFMoE (family_afmoe.c; run by the dense family): its keys, its layers without layer_types (every
 * global_attn_every_n_layers-th full) and its routing rules (one group of experts). */
kvc_status kvci_family_parse_afmoe(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_afmoe_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
kvc_status kvci_afmoe_check(const kvc_model_config *cfg, const char *doc);

/* Gemma 4 (family_gemma4.c): the runtime's reading of its layers after the kinds (kinds corrected in place: the last
 * layer full) into cfg's per-layer attention shapes; refused by key where a KV-shared layer has no earlier layer of
 * its kind and shape. */
kvc_status kvci_gemma4_layers(kvc_family_ctx *ctx, kvc_layer_kind *kinds, kvc_model_config *cfg);
/* Gemma 4's pieces Gemma 3n reuses: each of the last `shared` layers with an earlier layer of its kind and shape
 * (head_dim, kv_heads [n_layers]); hidden_size_per_layer_input / vocab_size_per_layer_input into ple_dim /
 * ple_vocab; the config rules (kv_shared_layers' sources, the per-layer inputs' sizes); the softmax scale 1. */
kvc_status kvci_gemma4_shared_sources(const kvc_family_ctx *ctx, const kvc_layer_kind *kinds, int64_t shared,
                                      const int64_t *head_dim, const int64_t *kv_heads);
kvc_status kvci_gemma4_per_layer_keys(const kvc_json_obj *c, kvc_model_config *cfg);
kvc_status kvci_gemma4_check(const kvc_model_config *cfg, const char *doc);
kvc_status kvci_gemma4_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale);
/* Gemma 3n (family_gemma3n.c): intermediate_size, one width or one per layer, all equal (16384 when absent); the
 * KV-shared layers' sources, after the kinds. */
kvc_status kvci_gemma3n_intermediate(const kvc_json_obj *c, int64_t n_layers, int64_t *out);
kvc_status kvci_gemma3n_layers(const kvc_family_ctx *ctx, const kvc_layer_kind *kinds, const kvc_model_config *cfg);

/* Gemma (1) (GemmaForCausalLM, family_gemma.c; run by the dense family): GeGLU (hidden_act gelu_pytorch_tanh
 * or its legacy name gelu), norms as 1 + w, embeddings times sqrt(hidden_size), tied by default, head_dim 256
 * by default; bidirectional attention refused. */
kvc_status kvci_family_parse_gemma(const kvc_hparams *hp, kvc_model_config *cfg);

/* The classic decoder types (family_classic.c; run by the dense family): phi, gpt_neox, gpt2, gpt_bigcode, opt,
 * falcon, gptj, nemotron, gpt_neo, codegen, biogpt, persimmon, xglm, openai-gpt, ctrl,
 * gpt_neox_japanese. */
bool kvci_family_is_classic(const char *model_type);
kvc_status kvci_family_parse_classic(const kvc_hparams *hp, kvc_model_config *cfg);
/* The classic types' MLP activation, config key `key` (def when absent): gelu (erf), relu, relu2, or a tanh GELU
 * (gelu_new, gelu_fast, gelu_pytorch_tanh) into cfg->mlp_act; any other refused by name (type in the message). */
kvc_status kvci_family_gelu_act(const kvc_json_obj *c, const char *key, const char *type, const char *def,
                                kvc_model_config *cfg);
/* The BERT-style types run as decoders (family_bert.c; run by the dense family): bert, roberta, xlm-roberta,
 * camembert, data2vec-text, ernie, bert-generation, megatron-bert, xlm-roberta-xl, roberta-prelayernorm
 * (kvci_family_is_bert). kvci_family_bert_decoder refuses by name (runtime and
 * planner) is_decoder false (bidirectional attention) and add_cross_attention true for those and for the other
 * transformers types causal only with is_decoder (electra, rembert, roformer, ...; planned only); KVC_OK for any
 * other type. */
bool kvci_family_is_bert(const char *model_type);
/* The position table's rows of a BERT type's config class (max_position_embeddings when absent); 0: not one. */
int64_t kvci_family_bert_rows(const char *model_type);
kvc_status kvci_family_bert_decoder(const kvc_hparams *hp);
kvc_status kvci_family_parse_bert(const kvc_hparams *hp, kvc_model_config *cfg);
/* The RoBERTa types' position offset pad_token_id + 1 (0 for the others; pad_token_id null refused by name); with
 * max_pos (the shared reader's, runtime and planner): the positions the table of *max_pos rows leaves, into it. */
kvc_status kvci_family_bert_positions(const kvc_hparams *hp, int64_t *max_pos, int64_t *offset);
/* Granite SWA and Granite MoE SWA (family_granite_swa.c; run by the dense family after Granite's and Granite MoE
 * Shared's reading): attention sinks, their eps and tie defaults, layer_rope_theta onto layer_nope and the two ropes.
 */
bool kvci_family_is_granite_swa(const char *model_type);
kvc_status kvci_family_parse_granite_swa(const kvc_hparams *hp, kvc_model_config *cfg);
/* Cohere Compass's text model (family_cohere_compass.c; run by the dense family): whether model_type is
 * cohere_compass_text; its layers' NoPE from the null rope_parameters entries, refusing a dict transformers cannot
 * index by layer type. */
bool kvci_family_is_cohere_compass(const char *model_type);
kvc_status kvci_family_cohere_compass_ropes(const kvc_hparams *hp, kvc_model_config *cfg);
/* ModernBERT's decoder (family_modernbert.c; run by the dense family): whether model_type is modernbert-decoder, its
 * keys, and its layer kinds without layer_types. */
bool kvci_family_is_modernbert(const char *model_type);
kvc_status kvci_family_parse_modernbert(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_family_modernbert_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
/* BitNet without a quantization_config (family_bitnet.c; run by the dense family): its keys and refusals. */
kvc_status kvci_family_parse_bitnet(const kvc_hparams *hp, kvc_model_config *cfg);
/* DiffLlama (family_diffllama.c; run by the dense family): its keys and refusals. */
kvc_status kvci_family_parse_diffllama(const kvc_hparams *hp, kvc_model_config *cfg);
/* Mellum (family_mellum.c; run by the dense family): whether model_type is mellum, and its keys. */
bool kvci_family_is_mellum(const char *model_type);
kvc_status kvci_family_parse_mellum(const kvc_hparams *hp, kvc_model_config *cfg);
/* Laguna (family_laguna.c; run by the dense family): whether model_type is laguna, and its keys (per-layer query
 * heads and rotary widths included). */
bool kvci_family_is_laguna(const char *model_type);
kvc_status kvci_family_parse_laguna(const kvc_hparams *hp, kvc_model_config *cfg);
/* MiMo-V2-Flash (family_mimo.c; run by the dense family): whether model_type is mimo_v2_flash, its keys (the per-layer
 * attention shapes included), its layer kinds without layer_types, and the planner's per-layer dims. */
bool kvci_family_is_mimo(const char *model_type);
kvc_status kvci_family_parse_mimo(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_family_mimo_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
kvc_status kvci_family_mimo_layer_dims(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, int64_t *head_dim,
                                       int64_t *kv_heads, int64_t *v_head_dim);
/* Flint (family_flint.c; run by the dense family): its keys, and its layer kinds without layer_types. */
kvc_status kvci_family_parse_flint(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_family_flint_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
/* Ergo (family_ergo.c; run by the dense family): its keys, and its layer kinds without layer_types. */
kvc_status kvci_family_parse_ergo(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_family_ergo_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
/* Beam (family_beam.c; run by the dense family): its keys, and its layer kinds without layer_types. */
kvc_status kvci_family_parse_beam(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_family_beam_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
/* Cohere 2 MoE (family_cohere2_moe.c; run by the dense family): its keys, and its layer kinds without layer_types. */
kvc_status kvci_family_parse_cohere2_moe(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_family_cohere2_moe_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
/* Hy3 (family_hy_v3.c; run by the dense family): its keys (DeepSeek-V3's router with one group). */
kvc_status kvci_family_parse_hy_v3(const kvc_hparams *hp, kvc_model_config *cfg);
/* Why model_type is refused by name (the runtime and the planner say it), or NULL. */
const char *kvci_family_refusal(const char *model_type);
/* What the runtime lacks to run model_type, a type planned only (the runtime says it), or NULL. */
const char *kvci_family_not_run(const char *model_type);
/* The model_type refused by name among text_config's and the top level's (a wrapper whose text model is a known type:
 * Gemma 4 Unified's assistant), or NULL. */
const char *kvci_family_refused_type(const kvc_hparams *hp);
/* Whether the dense family's model type has per-head attention sinks (Granite SWA, Granite MoE SWA, Flint). */
bool kvci_family_attn_sinks(const char *model_type);
/* JetMoE (family_jetmoe.c; run by the dense family): attention experts and a MoE MLP, each with a bias. */
kvc_status kvci_family_parse_jetmoe(const kvc_hparams *hp, kvc_model_config *cfg);
/* NanoChat (family_nanochat.c; run by the dense family): weightless RMSNorms (the embeddings' too), q/k normalised
 * after RoPE turned the other way, a relu2 MLP, soft-capped logits. */
kvc_status kvci_family_parse_nanochat(const kvc_hparams *hp, kvc_model_config *cfg);
/* GPT-Neo's layers, which it reads instead of layer_types: attention_layers ("global" full, "local" sliding), else
 * attention_types ([[names, count], ...], each group's names repeated count times; GPTNeoConfig's
 * [[["global", "local"], 12]] when absent); refused by name when an entry is neither or the count is not
 * num_layers. */
kvc_status kvci_family_gpt_neo_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);

/* The text models of Qwen2-VL and Qwen2.5-VL (family_qwen_vl.c; run by the dense family): whether model type mt is
 * one of theirs (qwen2_vl, qwen2_5_vl and their _text types), and their keys over Qwen2's. */
bool kvci_family_is_qwen2_vl(const char *mt);
kvc_status kvci_family_parse_qwen2_vl(const kvc_hparams *hp, kvc_model_config *cfg);
/* Qwen3-VL's text model (family_qwen_vl.c): whether mt is qwen3_vl or qwen3_vl_text, and its keys over Qwen3's. */
bool kvci_family_is_qwen3_vl(const char *mt);
/* KVC_OK when hp's config nests its text model under text_config, else a refusal naming model_type (a wrapper whose
 * class then builds its default text model: Qwen3-VL's, Qwen3.5's; family_qwen_vl.c). */
kvc_status kvci_family_need_text_config(const kvc_hparams *hp, const char *model_type);
kvc_status kvci_family_parse_qwen3_vl(const kvc_hparams *hp, kvc_model_config *cfg);

/* LLaVA and LLaVA-NeXT's text models (family_llava.c; run by the dense family under text_config's type): whether
 * the outer model type is llava or llava_next, and its keys over the text model's (text_config llama, mistral or
 * qwen2, the head's tying). */
bool kvci_family_is_llava(const char *outer);
kvc_status kvci_family_parse_llava(const kvc_hparams *hp, const char *outer, kvc_model_config *cfg);

/* The text models of multimodal checkpoints the dense family runs on text alone (family_mmtext.c): whether mt is
 * Emu3's (emu3, emu3_text_model), and its keys over Llama's. */
bool kvci_family_is_emu3(const char *mt);
kvc_status kvci_family_parse_emu3(const kvc_hparams *hp, kvc_model_config *cfg);
/* Phi-3's layer: phi3, and Phi-4-multimodal's text path (phi4_multimodal: Phi-3 with its towers beside, no LoRA in
 * transformers' modules). */
bool kvci_family_is_phi3(const char *mt);
/* Apertus 1.5's (apertus1p5, apertus1p5_text): its keys over Apertus's (its pruned head: input_vocab_size). */
bool kvci_family_is_apertus1p5(const char *mt);
kvc_status kvci_family_parse_apertus1p5(const kvc_hparams *hp, kvc_model_config *cfg);
/* Aria's (aria, aria_text): Llama's attention, a MoE of top-k logits softmaxed plus shared experts on every layer. */
bool kvci_family_is_aria(const char *mt);
kvc_status kvci_family_parse_aria(const kvc_hparams *hp, kvc_model_config *cfg);

/* Llama 3.2 Vision's text model (family_mllama.c; run by the dense family on text alone): whether mt is mllama or
 * mllama_text_model, its layers (the cross-attention layers cache-less, skipped whole by the runtime) and its keys
 * over Llama's. */
bool kvci_family_is_mllama(const char *mt);
kvc_status kvci_family_mllama_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
kvc_status kvci_family_parse_mllama(const kvc_hparams *hp, kvc_model_config *cfg);

/* A soft-capping key of config c (attn_logit_softcapping, final_logit_softcapping) into *out: def when absent,
 * 0 (none) when null, else a number in (0, 10^6]; refused naming the key otherwise. */
kvc_status kvci_family_softcap(const kvc_json_obj *c, const char *key, double def, double *out);
/* Family d's attention soft-cap of config c (kvc_attention_params.logit_softcap): attn_logit_softcapping, by
 * kvci_family_softcap with d's default. The planner's and the runtime's. */
kvc_status kvci_family_attn_softcap(const kvc_family_desc *d, const kvc_json_obj *c, double *out);

/* The unscaled rope at theta (the sliding layers' own of Gemma 3 and OLMo 3 when the config gives none). */
kvc_rope_config kvci_family_default_rope(double theta);

/* LFM2 (family_lfm2.c): its keys over the shared reader's, and the operator of layer l, the short convolution
 * (kvci_conv_short) on a conv layer, else GQA attention. */
kvc_status kvci_family_parse_lfm2(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_lfm2_operator(const struct kvc_fwd_step *s, int64_t l);
/* LFM2-MoE's feed-forward of layer l (family_lfm2.c): the routed experts on its MoE layers, else the dense MLP. */
kvc_status kvci_lfm2_ffn(const struct kvc_fwd_step *s, int64_t l);

/* A routed block's expert count (e_keys, def_e when absent) and top-k (k_keys, def_k) into cfg (family_dense.c); a
 * top-k above the count is refused, naming both by their first keys. */
kvc_status kvci_family_expert_counts(const kvc_json_obj *c, const char *const e_keys[KVC_HP_ALIASES], int64_t def_e,
                                     const char *const k_keys[KVC_HP_ALIASES], int64_t def_k, kvc_model_config *cfg);

/* Qwen2-MoE's and Qwen3-Next's sparse layers (family_dense.c): layer_moe of the layers l with (l + 1) %
 * decoder_sparse_step (1 when absent) == 0 not listed in mlp_only_layers; refused naming the key. */
kvc_status kvci_family_qwen_moe_layers(const kvc_json_obj *c, kvc_model_config *cfg);

/* Granite's multipliers (family_dense.c; GraniteConfig's, also Granite MoE's and Granite 4.0-H's):
 * embedding_multiplier, residual_multiplier, attention_multiplier (the softmax scale itself, 1 when absent) and
 * logits_scaling, each a positive number, 1 when absent. */
kvc_status kvci_family_parse_granite_scales(const kvc_hparams *hp, kvc_model_config *cfg);

/* The Mamba2 hybrids (family_mamba2.c): their keys over the shared reader's, and the operator of layer l, the
 * Mamba2 mixer (kvci_mamba2_mixer) on a mamba layer (Falcon-H1: with GQA attention beside it), else GQA attention. */
kvc_status kvci_family_parse_mamba2(const kvc_hparams *hp, kvc_model_config *cfg);
/* The Mamba2 mixer's dims of a Mamba2 type (mamba2, nemotron_h, bamba, granitemoehybrid, falcon_h1) as its
 * transformers class reads them, each absent key at the class's default (Mamba2Config: num_heads 128, head_dim 64,
 * state_size 128, conv_kernel 4, n_groups 8; NemotronHConfig: mamba_num_heads 128, mamba_head_dim 64, ssm_state_size
 * 128, conv_kernel 4, n_groups 8; the others: mamba_n_heads 128, mamba_d_state 256, mamba_d_conv 4, mamba_n_groups 1,
 * mamba_d_head the mixer's width over the heads), checked against each other. The loader and the cache plan's state
 * shapes (family_hybrid.c) both read them here. */
typedef struct kvc_mamba2_dims {
    int64_t heads, head_dim, state, conv, groups;
} kvc_mamba2_dims;
kvc_status kvci_mamba2_dims(const kvc_json_obj *c, const char *type, int64_t hidden, kvc_mamba2_dims *d);
/* The string key of c, the one value `want` model `type` runs (and `want` when absent); others refused by name. */
kvc_status kvci_mamba2_only_value(const kvc_json_obj *c, const char *type, const char *key, const char *want);
/* Falcon-H1 (family_falcon_h1.c): its keys beyond the mixer's; its layer (mixer and attention) into ws->proj; its MLP.
 */
kvc_status kvci_falcon_h1_parse(const kvc_json_obj *c, kvc_model_config *cfg);
kvc_status kvci_falcon_h1_layer(const struct kvc_fwd_step *s, int64_t l);
kvc_status kvci_falcon_h1_mlp(const struct kvc_fwd_step *s, int64_t l);
kvc_status kvci_mamba2_operator(const struct kvc_fwd_step *s, int64_t l);
/* Their feed-forward (Granite 4.0-H's routed experts with the shared MLP on its MoE layers, Nemotron-H's experts,
 * Falcon-H1's MLP, else the dense MLP) and
 * the planner's softmax scale without attention_multiplier (Granite 4.0-H's 1, else head_dim^-1/2). */
kvc_status kvci_mamba2_ffn(const struct kvc_fwd_step *s, int64_t l);
kvc_status kvci_mamba2_softmax_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale);

/* layers_block_type (family_hybrid.c; Nemotron-H's, Zamba's): one entry per layer, each one of names[0..n_names)
 * and of that kind; refused naming the entry and the choices, or the count when it is not the layer count. */
typedef struct kvc_block_name {
    const char *name;
    kvc_layer_kind kind;
} kvc_block_name;
kvc_status kvci_family_block_list(const kvc_family_ctx *ctx, const cJSON *list, const kvc_block_name *names,
                                  int32_t n_names, const char *choices, kvc_layer_kind *kinds);

/* Zamba and Zamba2 (family_zamba.c; run by the Jamba and Mamba2 hybrid families): whether hp's model type (or
 * architecture) is theirs; their layer kinds (hybrid layers KVC_LK_PARALLEL: the shared block's K/V beside the
 * mixer's states); Zamba2's mixer states; the shared attention's softmax scale, (head_dim / 2)^-1/2 (head_dim^-1/2
 * for the families' other types). */
bool kvci_is_zamba(const kvc_hparams *hp);
bool kvci_is_zamba2(const kvc_hparams *hp);
kvc_status kvci_zamba_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds);
kvc_status kvci_zamba2_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s);
kvc_status kvci_zamba_softmax_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale);
/* Zamba2's and Zamba's runtime keys (the mixer, the shared block, Zamba2's adapters) into cfg. */
kvc_status kvci_zamba2_parse(const kvc_hparams *hp, kvc_model_config *cfg);
kvc_status kvci_zamba_parse(const kvc_hparams *hp, kvc_model_config *cfg);
/* Zamba's and Zamba2's layer l (zamba.c): on a hybrid layer the shared block of its use site and the linear before
 * the mixer, then the mixer (Mamba-1 or Mamba2), into ws->proj; layer 0 keeps the step's embeddings for them. */
kvc_status kvci_zamba_layer(const struct kvc_fwd_step *s, int64_t l);
/* JambaConfig's and ZambaConfig's mixer keys (family_mamba1.c; their defaults when absent): mamba_expand (2) x
 * hidden_size channels (mamba_inner), mamba_d_state (16), mamba_d_conv (4), mamba_conv_bias (true), mamba_proj_bias
 * (false), mamba_dt_rank ("auto": ceil(hidden_size / 16)). */
kvc_status kvci_mamba1_prefixed_keys(const kvc_json_obj *c, kvc_model_config *cfg);

/* Whether cfg is DeepSeek-V2's (family_deepseek_v3.c): the softmax router, no e_score_correction_bias. */
bool kvci_deepseek_v2(const kvc_model_config *cfg);
/* Whether cfg is A.X-K1's (axk1, family_deepseek_v3.c): V3's layers with post_mlp_layernorm on the MoE layers' output
 * and the routers' correction bias zero when the checkpoint has none. */
bool kvci_family_is_axk1(const kvc_model_config *cfg);
/* GLM-5 (glm_moe_dsa, family_glm_dsa.c): whether cfg is its, and its DeepSeek sparse attention keys (index_topk into
 * cfg; index_head_dim, index_n_heads, indexer_types / index_topk_pattern checked by name). */
bool kvci_family_is_glm_dsa(const kvc_model_config *cfg);
/* Which of GLM-5's n_layers layers run their own indexer (full[l]; the others reuse the previous full layer's top-k
 * and keep no indexer keys): indexer_types ("full" / "shared"), else index_topk_pattern (F / S), else
 * GlmMoeDsaConfig's schedule from index_topk_freq (1) and index_skip_topk_offset (2); refused by key: a wrong
 * length, another value, layer 0 shared. The runtime's and the planner's rule. */
kvc_status kvci_glm_dsa_indexed(const kvc_json_obj *c, int64_t n_layers, bool *full);
kvc_status kvci_family_parse_glm_dsa(const kvc_json_obj *c, kvc_model_config *cfg);
/* The DeepSeek sparse attention indexer's sizes (family_glm_dsa.c; the config classes' defaults: index_topk 2048,
 * index_head_dim 128, heads_default heads), index_head_dim at least qk_rope_head_dim (read before). */
kvc_status kvci_family_indexer_sizes(const kvc_json_obj *c, kvc_model_config *cfg, int64_t heads_default);
/* DeepSeek-V3.2 (deepseek_v32): its indexer's keys (DeepseekV32Config's index_n_heads 64, half-split RoPE, every
 * layer full) and max_position_embeddings 163840 when absent. */
kvc_status kvci_family_parse_v32_dsa(const kvc_json_obj *c, kvc_model_config *cfg);
/* A.X-K2 (axk2): V3.2's indexer keys under AXK2Config's defaults, its q gate and gated norms (gated_norm_rank),
 * n_group and topk_group together or not at all. */
kvc_status kvci_family_parse_axk2(const kvc_json_obj *c, kvc_model_config *cfg);

/* Optional config members with a default (kept when absent), for parse hooks. */
kvc_status kvci_family_opt_int(const kvc_json_obj *c, const char *key, int64_t def, int64_t lo, int64_t hi,
                               int64_t *out);
kvc_status kvci_family_opt_num(const kvc_json_obj *c, const char *key, double def, kvc_json_range r, double *out);
kvc_status kvci_family_opt_bool(const kvc_json_obj *c, const char *key, bool def, bool *out);
/* The MLA sizes (kvci_hparams_read_mla) into cfg, head_dim the rope width, attention_bias (false when absent) on the
 * q / kv LoRA inputs and o_proj, RoPE on interleaved pairs (Kimi-Linear's and HY V4's attention). */
kvc_status kvci_family_mla_attention(const kvc_hparams *hp, kvc_model_config *cfg);

#endif /* KVC_MODEL_FAMILY_H */
