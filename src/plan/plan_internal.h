/* Internal pieces of the plan layer shared by its source files. */
#ifndef KVC_PLAN_INTERNAL_H
#define KVC_PLAN_INTERNAL_H

#include "kvcache/plan.h"
#include "model/family.h"

/* Appends a warning to the plan (the last slot says when more were dropped). */
void kvci_plan_warn(kvc_model_plan *plan, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- the analyzer's pieces (facts.c, select.c, caches.c, analyze.c) -------- */

/* Everything the rules need, read once. */
/* Channels per f32 scale of the DeepSeek sparse-attention indexer's fp8 keys (vLLM's quant block). */
#define KVC_PLAN_INDEXER_SCALE_GROUP 128

/* How a layer's indexer keys are kept: vLLM's fp8 with a scale per group (HY V4, planned only), as the keys are in
 * the KV dtype (Qwen4-Exp's QSA, as transformers keeps them), or f32 as kvcache's runtime keeps them (GLM-5,
 * DeepSeek-V3.2). */
typedef enum { KVCI_INDEX_FP8, KVCI_INDEX_KV_DTYPE, KVCI_INDEX_F32 } kvci_index_form;

typedef struct kvc_model_facts {
    const kvc_family_desc *fam; /* the family's descriptor (model/family.h) */
    int64_t n_layers;
    int64_t n_heads, n_kv_heads, head_dim, hidden_size;
    bool have_max_pos;
    int64_t max_pos;
    int64_t window; /* model-wide sliding_window (0 = none) */
    int64_t chunk;  /* model-wide attention_chunk_size of the chunked layers (0 = none) */
    /* MLA */
    int64_t kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
    int64_t index_head_dim;   /* DeepSeek sparse attention's indexer key (0 = none) */
    kvc_rope_config rope;     /* as the config reader resolved it */
    kvc_layer_kind *kinds;    /* [n_layers] */
    int64_t kv_shared_layers; /* KVC_LK_NONE: they read an earlier layer's caches (Gemma 3n's last ones, Kolibri 1.1's
                               * kv_source_layers readers) */
    kvc_v4_layer *v4;         /* [n_layers] DeepSeek-V4's compressed parts (NULL: another family) */
    int64_t v4_index_dim;     /* DeepSeek-V4's indexer head dim (index_head_dim) */
    bool *index_layers;       /* [n_layers] the layers keeping indexer keys (HY V4's, GLM-5's "full" ones); NULL: all */
    /* per layer (the family's layer_dims; NULL: every layer n_kv_heads of head_dim): head dim, KV heads per rank,
     * value head dim (0: the layer's head dim) */
    int64_t *layer_head_dim, *layer_kv_heads, *layer_v_head_dim; /* [n_layers] */
    kvci_index_form index_form;                                  /* how the indexer keys are kept */
    int64_t loop_lo, loop_hi; /* Dory's recurrent section: layers [loop_lo, loop_hi) of kinds ... */
    int64_t loop_copies;      /* ... keep this many caches each (n_recurrent_loops with per_loop; 0 or 1: one) */
} kvc_model_facts;

/* kvci_plan_warn of a finished message, as a family rule's warn callback (kvc_family_ctx). */
void kvci_plan_warn_text(void *plan, const char *msg);

/* Copies src (NULL = "") into dst[cap], truncating. */
void kvci_plan_copy_text(char *dst, size_t cap, const char *src);

/* facts.c: family, architecture, heads and dims, MLA latent dims, max_position_embeddings, rope. */
kvc_status kvci_plan_read_facts(kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f);
/* facts.c: allocates f->kinds and, for a family with layer_dims, f->layer_head_dim and f->layer_kv_heads (the caller
 * frees them, also after a failure: kvci_plan_free_layers) and fills them from the family rules. */
kvc_status kvci_plan_layer_kinds(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f);
void kvci_plan_free_layers(kvc_model_facts *f);
/* loops.c: Dory's recurrent section (n_input_layers, n_recurrent_layers, n_output_layers, n_recurrent_loops,
 * recurrent_kv_cache_mode) into f->loop_lo, loop_hi and loop_copies, after the kinds; refused by name. */
kvc_status kvci_plan_dory_loops(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f);
/* facts.c: Qwen4-Exp's QSA indexer (indexer_n_heads, indexer_kv_heads, indexer_head_dim, indexer_budget,
 * indexer_compress_ratio: none or all) into f->index_head_dim and index_form; its PLE layers refused by name. */
kvc_status kvci_plan_qsa_indexer(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f);
/* kv_sources.c: Kolibri 1.1's kv_source_layers (or its class's default): the layers reading another layer's keys and
 * values keep no cache (f->kinds none); refused by name where the class refuses. */
kvc_status kvci_plan_kv_sources(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f);

/* block_configs.c: whether hp is a Nemotron-NAS config with block_configs; its first attention layer's KV heads
 * into f->n_kv_heads (read_facts, when num_key_value_heads is absent); then, after the kinds, the layers without
 * attention made KVC_LK_NONE and each layer's KV heads into f->layer_kv_heads (with layer_head_dim and
 * layer_v_head_dim: freed by kvci_plan_free_layers). Refused by name. */
bool kvci_plan_has_block_configs(const kvc_hparams *hp);
kvc_status kvci_plan_block_kv_heads(const kvc_hparams *hp, kvc_model_facts *f);
kvc_status kvci_plan_block_configs(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f);

/* sparse_index.c: whether model_type is MiniMax-M3's; its indexed layers into f->index_layers (allocated; the caller
 * frees it, also after a failure) and their key width into f->index_head_dim (KV dtype). Refused by name. */
bool kvci_plan_is_minimax_m3(const char *model_type);
kvc_status kvci_plan_minimax_m3_index(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f);

/* select.c: the KV dtype from torch_dtype (or dtype) unless the options set it. */
kvc_status kvci_plan_resolve_dtype(const kvc_hparams *hp, kvc_model_plan *plan);
/* select.c: the softmax scale. */
kvc_status kvci_plan_compute_scale(const kvc_hparams *hp, kvc_model_plan *plan, const kvc_model_facts *f);
/* select.c: paged or legacy caches, MLA absorption, operator generation and layout. */
void kvci_plan_select_mode(kvc_model_plan *plan, const kvc_model_facts *f, int64_t kv_per_rank, bool any_attention);
/* select.c: the mask modes and band of one layer (needs the mode chosen). */
void kvci_plan_set_layer_masks(const kvc_model_plan *plan, kvc_plan_layer *L);

/* caches.c: one cache of heads x dim (bytes for block_size positions) or one state (states' k-th) appended to
 * L's caches. */
void kvci_plan_add_cache(kvc_plan_layer *L, const char *name, int64_t heads, int64_t dim, kvc_dtype dtype,
                         int64_t block_size);
void kvci_plan_add_state(kvc_plan_layer *L, const kvc_state_shapes *s, int32_t k, kvc_dtype dtype);

/* compressed.c: DeepSeek-V4's layers (f->v4, f->v4_index_dim; the caller frees f->v4, also after a failure),
 * read when f's family is DeepSeek-V4. */
kvc_status kvci_plan_v4_read(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f);
/* compressed.c: the plan entries of DeepSeek-V4's layer i (its window, its compressed caches, its compressors'
 * pending states), written from L on when L is not NULL; returns how many. */
int32_t kvci_plan_v4_layer(kvc_model_plan *plan, const kvc_model_facts *f, int32_t i, kvc_plan_layer *L);

/* caches.c: plan->layers with attention type, masks and caches per rank. */
kvc_status kvci_plan_build_layers(kvc_model_plan *plan, const kvc_model_facts *f, const kvc_state_shapes *states,
                                  int64_t kv_per_rank);
/* caches.c: plan->cache_info (the cache description) from plan->layers. */
kvc_status kvci_plan_build_cache_info(kvc_model_plan *plan);
/* caches.c: the keys of plan->cache_info cut into equal layer groups where its pages are uniform (after
 * kvci_plan_unify_pages, as vLLM groups after unifying page sizes). */
void kvci_plan_split_keys(kvc_model_plan *plan);
/* caches.c: plan->plan_params and plan->blocks from kvc_plan_blocks. */
kvc_status kvci_plan_run_planner(kvc_model_plan *plan);

/* pools.c: the cache description's block sizes unified (kvc_cache_info_unify_pages,
 * bounded by max_model_len), the layers' bytes per block following them. */
kvc_status kvci_plan_unify_pages(kvc_model_plan *plan);
/* pools.c: plan->state_padding from the planned blocks (empty unless a state key
 * keeps a pool of its own beside an attention key). */
void kvci_plan_measure_state_padding(kvc_model_plan *plan);

#endif /* KVC_PLAN_INTERNAL_H */
