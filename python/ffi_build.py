"""Generates the C source of kvcache._ffi (cffi, API mode).

The declarations below are the part of the public headers (include/kvcache/*.h)
the Python package calls. Structs end with "...;" and enums with "...": the C
compiler fills in sizes, offsets and values from the real headers, so a field
the headers add never breaks the binding, and a field it renames fails the
build instead of reading the wrong bytes.

Usage (run by CMakeLists.txt): python ffi_build.py OUTPUT.c
"""
import sys

import cffi

CDEF = r"""
/* ---- base.h ---- */
typedef enum kvc_status {
    KVC_OK, KVC_CLAMPED, KVC_NO_SPACE, KVC_EINVAL, KVC_ERANGE, KVC_EDOUBLEFREE, KVC_ENOMEM, KVC_EINTERNAL, ...
} kvc_status;
const char *kvc_status_str(kvc_status status);
const char *kvc_last_error(void);

typedef enum kvc_dtype { KVC_DTYPE_COUNT, ... } kvc_dtype;
size_t kvc_dtype_size(kvc_dtype dtype);
const char *kvc_dtype_name(kvc_dtype dtype);
kvc_status kvc_dtype_parse(const char *name, kvc_dtype *out);

#define KVC_MAX_DIMS ...
typedef struct kvc_tensor {
    void *data;
    kvc_dtype dtype;
    int32_t ndim;
    int64_t shape[...];
    ...;
} kvc_tensor;

kvc_status kvc_aligned_alloc(size_t alignment, size_t size, void **out);
void kvc_aligned_free(void *ptr);

/* ---- cache.h ---- */
#define KVC_NAME_MAX ...
#define KVC_MAX_MANAGERS ...
typedef enum kvc_attn_type { KVC_ATTN_FULL, KVC_ATTN_SLIDING_WINDOW, KVC_ATTN_MAMBA, KVC_ATTN_CHUNKED_LOCAL, KVC_ATTN_TYPE_COUNT, ... } kvc_attn_type;
const char *kvc_attn_type_name(kvc_attn_type type);
kvc_status kvc_attn_type_parse(const char *name, kvc_attn_type *out);

typedef struct kvc_cache_entry {
    char name[...];
    int32_t attn_type;
    int64_t num_head;
    int32_t n_dims;
    int64_t dim[...];
    kvc_dtype dtype;
    bool needs_block;
    int64_t block_size;
    char manager_key[...];
    int64_t sliding_window;
    int64_t compress_ratio;
    int32_t layout;
    bool is_state;
    int32_t n_shape;
    int64_t shape[...];
    int64_t next_n;
    kvc_tensor tensor;
    int64_t attention_chunk_size;
    ...;
} kvc_cache_entry;
kvc_cache_entry kvc_cache_entry_default(void);

typedef struct kvc_layer_cache_info {
    int32_t layer_idx;
    int32_t n_caches;
    kvc_cache_entry *caches;
    ...;
} kvc_layer_cache_info;

typedef struct kvc_model_cache_info {
    int32_t num_layers;
    int32_t n_layer_infos;
    kvc_layer_cache_info *layer_infos;
    bool is_mla_backend;
    ...;
} kvc_model_cache_info;
const char *kvc_cache_entry_group_key(const kvc_cache_entry *e);
kvc_status kvc_validate_cache_info(const kvc_model_cache_info *ci, int64_t engine_next_n);

typedef struct kvc_group_plan {
    char key[...];
    kvc_attn_type attn_type;
    int64_t block_size;
    int64_t block_num;
    bool fixed;
    int64_t block_bytes;
    int32_t pool_id;
    ...;
} kvc_group_plan;
typedef struct kvc_block_plan {
    int32_t n_groups;
    kvc_group_plan groups[...];
    int64_t per_token_bytes;
    int64_t fixed_bytes;
    int64_t max_tokens;
    int64_t total_bytes;
    ...;
} kvc_block_plan;
kvc_status kvc_block_plan_from_counts(const kvc_model_cache_info *ci, const char *const *keys, const int64_t *counts,
                                      int32_t n, kvc_block_plan *out);
kvc_status kvc_block_plan_check_pools(kvc_block_plan *plan);

typedef struct kvc_cache_storage kvc_cache_storage;
typedef enum kvc_storage_pages { KVC_STORAGE_PAGES_HUGE, KVC_STORAGE_PAGES_SYSTEM, KVC_STORAGE_PAGES_BASE, ... } kvc_storage_pages;
typedef struct kvc_cache_storage_params {
    size_t alignment;
    kvc_storage_pages pages;
    ...;
} kvc_cache_storage_params;
kvc_cache_storage_params kvc_cache_storage_default_params(void);
kvc_status kvc_cache_storage_allocate(kvc_model_cache_info *ci, const kvc_block_plan *plan,
                                      const kvc_cache_storage_params *p, kvc_cache_storage **out);
int64_t kvc_cache_storage_bytes(const kvc_cache_storage *s);
void kvc_cache_storage_destroy(kvc_cache_storage *s);

typedef struct kvc_manager kvc_manager;
typedef struct kvc_manager_params {
    int64_t max_model_len;
    int64_t max_requests;
    int64_t engine_next_n;
    bool prefix_caching;
    uint64_t prefix_salt;
    int64_t state_snapshot_interval;
    int64_t kv_event_capacity;
    ...;
} kvc_manager_params;
kvc_manager_params kvc_manager_default_params(void);
kvc_status kvc_manager_create(const kvc_model_cache_info *ci, const kvc_block_plan *plan,
                              const kvc_manager_params *p, kvc_manager **out);
void kvc_manager_destroy(kvc_manager *m);
typedef struct kvc_prompt {
    const int32_t *tokens;
    int64_t n_tokens;
    const void *cache_salt;
    int64_t cache_salt_len;
    ...;
} kvc_prompt;
typedef struct kvc_prefix_hit kvc_prefix_hit;
typedef struct kvc_slot_request {
    int64_t request_id;
    int64_t computed_tokens;
    int64_t num_new_tokens;
    int64_t lookahead_tokens;
    int64_t reserved_tokens;
    uint64_t skip_keys;
    const kvc_prompt *prompt;
    const kvc_prefix_hit *hit;
    const void *cache_salt;
    int64_t cache_salt_len;
    int64_t num_external_computed_tokens;
    ...;
} kvc_slot_request;
kvc_status kvc_manager_allocate_slots(kvc_manager *m, const kvc_slot_request *req);
struct kvc_prefix_hit {
    int64_t n_tokens;
    int64_t n_entries[...];
    int64_t n_cached[...];
    uint64_t handle;
    ...;
};
kvc_status kvc_manager_find_prefix(kvc_manager *m, const kvc_prompt *prompt, kvc_prefix_hit *out);
typedef struct kvc_block_info {
    int32_t ref_count;
    bool free;
    bool cached;
    uint64_t hash_hi;
    uint64_t hash_lo;
    ...;
} kvc_block_info;
kvc_status kvc_manager_block_info(const kvc_manager *m, int32_t key_index, int32_t block_id, kvc_block_info *out);
typedef struct kvc_kv_event {
    int32_t type;
    int32_t key_index;
    int32_t block_id;
    int64_t n_tokens;
    uint64_t hash_hi;
    uint64_t hash_lo;
    uint64_t parent_hi;
    uint64_t parent_lo;
    ...;
} kvc_kv_event;
kvc_status kvc_manager_drain_kv_events(kvc_manager *m, kvc_kv_event *out, int64_t cap, int64_t *n_out, int64_t *n_lost);
kvc_status kvc_manager_cache_computed(kvc_manager *m, int64_t request_id, const int32_t *tokens, int64_t n_computed);
kvc_status kvc_manager_state_source(const kvc_manager *m, int64_t request_id, int32_t key_index, int32_t *out);
typedef struct kvc_prefix_stats {
    int64_t queries;
    int64_t hits;
    int64_t query_tokens;
    int64_t hit_tokens;
    int64_t evictions;
    int64_t cached_blocks;
    ...;
} kvc_prefix_stats;
kvc_status kvc_manager_prefix_stats(const kvc_manager *m, kvc_prefix_stats *out);
int64_t kvc_manager_num_cached_free(const kvc_manager *m, int32_t key_index);
kvc_status kvc_manager_clear_prefix_cache(kvc_manager *m);
kvc_status kvc_manager_free(kvc_manager *m, int64_t request_id);
int32_t kvc_manager_n_keys(const kvc_manager *m);
const char *kvc_manager_key(const kvc_manager *m, int32_t key_index);
kvc_status kvc_manager_key_index(const kvc_manager *m, const char *key, int32_t *out);
kvc_attn_type kvc_manager_key_type(const kvc_manager *m, int32_t key_index);
int64_t kvc_manager_max_model_len(const kvc_manager *m);
int64_t kvc_manager_block_size(const kvc_manager *m, int32_t key_index);
int64_t kvc_manager_num_blocks(const kvc_manager *m, int32_t key_index);
int64_t kvc_manager_num_free(const kvc_manager *m, int32_t key_index);
int32_t kvc_manager_pool_key(const kvc_manager *m, int32_t key_index);
int64_t kvc_manager_num_live_requests(const kvc_manager *m);
bool kvc_manager_has_request(const kvc_manager *m, int64_t request_id, int32_t key_index);
kvc_status kvc_manager_block_ids(const kvc_manager *m, int64_t request_id, int32_t key_index, int32_t *out,
                                 int64_t cap, int64_t *n_out);
kvc_status kvc_manager_free_queue(const kvc_manager *m, int32_t key_index, int32_t *out, int64_t cap,
                                  int64_t *n_out);
kvc_status kvc_manager_check_invariants(const kvc_manager *m);

/* ---- plan.h ---- */
typedef struct kvc_plan_options {
    int64_t tp;
    int64_t block_size;
    bool kv_dtype_set;
    kvc_dtype kv_dtype;
    int64_t max_model_len;
    int64_t max_concurrency;
    int64_t next_n;
    int64_t kv_memory_bytes;
    ...;
} kvc_plan_options;
kvc_plan_options kvc_plan_default_options(void);
typedef struct kvc_model_plan {
    kvc_plan_options options;
    kvc_model_cache_info cache_info;
    kvc_block_plan blocks;
    ...;
} kvc_model_plan;
kvc_status kvc_model_plan_create(const char *config_json, size_t len, const kvc_plan_options *opt,
                                 kvc_model_plan **out);
void kvc_model_plan_destroy(kvc_model_plan *plan);
kvc_status kvc_model_plan_to_json(const kvc_model_plan *plan, char **out);
void kvc_plan_json_free(char *json);

/* ---- batch.h ---- */
typedef struct kvc_step_request {
    int64_t request_id;
    int64_t computed_tokens;
    int64_t num_new_tokens;
    ...;
} kvc_step_request;
typedef struct kvc_step_key {
    const char *key;
    kvc_attn_type attn_type;
    int64_t block_size;
    int64_t width;
    int32_t *block_table;
    int64_t *slot_mapping;
    ...;
} kvc_step_key;
typedef struct kvc_step_metadata {
    bool is_prefill;
    int64_t n_rows;
    int64_t n_tokens;
    int64_t prompt_tokens;
    int64_t *positions;
    int64_t *kv_pos;
    int64_t *seq_lens_q;
    int64_t *seq_lens_kv;
    int64_t *cu_seq_lens_q;
    int64_t *cu_seq_lens_kv;
    int32_t n_keys;
    kvc_step_key keys[...];
    ...;
} kvc_step_metadata;
typedef struct kvc_step_buffers kvc_step_buffers;
kvc_status kvc_step_buffers_create(const kvc_manager *m, int64_t max_rows, int64_t max_tokens,
                                   kvc_step_buffers **out);
void kvc_step_buffers_destroy(kvc_step_buffers *buf);
kvc_status kvc_step_metadata_build(kvc_step_buffers *buf, const kvc_step_request *rows, int64_t n_rows,
                                   bool is_prefill, kvc_step_metadata *out);

typedef enum kvc_seq_layout {
    KVC_SEQ_LAYOUT_TND, KVC_SEQ_LAYOUT_NTD_TND, KVC_SEQ_LAYOUT_TND_NTD, KVC_SEQ_LAYOUT_BSH,
    KVC_SEQ_LAYOUT_BSND, KVC_SEQ_LAYOUT_BNSD, ...
} kvc_seq_layout;
typedef enum kvc_len_form { KVC_LEN_DIRECT, KVC_LEN_CUMULATIVE, ... } kvc_len_form;
kvc_status kvc_seq_layout_forms(kvc_seq_layout layout, bool kv_paged, kvc_len_form *q_form, kvc_len_form *kv_form);
kvc_status kvc_seq_lens_fill(kvc_seq_layout layout, bool kv_paged, const int64_t *q_lens, const int64_t *kv_lens,
                             int64_t n, int64_t *q_out, int64_t *kv_out);

/* ---- ops.h ---- */
kvc_status kvc_write_contiguous(kvc_tensor *cache, const kvc_tensor *upd, const int64_t *starts, int64_t n_starts);
typedef enum kvc_block_layout { KVC_BLOCK_BNBSND, KVC_BLOCK_BNNBSD, KVC_BLOCK_NZ, KVC_BLOCK_BNNDBS, ... } kvc_block_layout;
kvc_status kvc_write_slots(kvc_tensor *cache, kvc_block_layout order, const kvc_tensor *upd,
                           const int64_t *slots, int64_t n_slots);
kvc_status kvc_write_slots_quant(kvc_tensor *cache, kvc_block_layout order, const kvc_tensor *upd,
                                 const int64_t *slots, int64_t n_slots, const float *inv_scale,
                                 const float *offset, int64_t n_quant);

typedef enum kvc_attn_layout {
    KVC_LAYOUT_UNSET, KVC_LAYOUT_TND, KVC_LAYOUT_TND_NTD, KVC_LAYOUT_NTD_TND, KVC_LAYOUT_BSH,
    KVC_LAYOUT_BSND, KVC_LAYOUT_BNSD, KVC_LAYOUT_BSND_NBSD, ...
} kvc_attn_layout;
typedef enum kvc_kv_storage { KVC_KV_CONTIGUOUS, KVC_KV_BLOCKS, ... } kvc_kv_storage;
typedef enum kvc_attn_kv_form { KVC_KV_FORM_UNSET, KVC_KV_FORM_DIRECT, KVC_KV_FORM_CUMULATIVE, ... } kvc_attn_kv_form;
typedef enum kvc_quant_mode { KVC_QUANT_NONE, KVC_QUANT_PER_CHANNEL, KVC_QUANT_PER_TOKEN, KVC_QUANT_PER_HEAD, ... } kvc_quant_mode;

typedef struct kvc_paged_tensor {
    kvc_block_layout layout;
    int64_t head_dim;
    int64_t block_stride;
    int64_t head_stride;
    int64_t token_stride;
    int64_t channel_stride;
    ...;
} kvc_paged_tensor;
typedef struct kvc_paged_kv {
    int64_t num_blocks;
    kvc_paged_tensor k, v;
    kvc_paged_tensor k_rope;
    ...;
} kvc_paged_kv;

typedef struct kvc_attention_params {
    kvc_attn_layout layout;
    int32_t num_heads;
    int32_t num_kv_heads;
    double scale;
    int32_t sparse_mode;
    int64_t pre_tokens;
    int64_t next_tokens;
    bool bidirectional;
    int64_t batch;
    const int64_t *q_lens;
    const int64_t *kv_lens;
    kvc_attn_kv_form kv_len_form;
    kvc_tensor q;
    kvc_tensor k;
    kvc_tensor v;
    kvc_tensor q_rope;
    kvc_tensor k_rope;
    kvc_tensor mask;
    kvc_kv_storage kv_storage;
    kvc_block_layout block_layout;
    kvc_tensor block_table;
    int32_t block_size;
    kvc_tensor sinks;
    kvc_quant_mode key_quant_mode;
    kvc_quant_mode value_quant_mode;
    kvc_tensor key_scale, value_scale;
    kvc_tensor key_offset, value_offset;
    kvc_tensor out;
    kvc_tensor lse;
    const kvc_paged_kv *paged_kv;
    double logit_softcap;
    int64_t attention_chunk_size;
    kvc_tensor alibi_slopes;
    bool alibi_bf16;
    ...;
} kvc_attention_params;
kvc_attention_params kvc_attention_default_params(void);
kvc_status kvc_attention_check(const kvc_attention_params *p);
kvc_status kvc_attention_ref(const kvc_attention_params *p);
kvc_status kvc_attention_cpu_workspace_size(const kvc_attention_params *p, int max_threads, size_t *bytes);
kvc_status kvc_attention_cpu(const kvc_attention_params *p, void *workspace, size_t workspace_bytes);
const char *kvc_attention_cpu_isa(void);
int omp_get_max_threads(void);

/* ---- model.h / runner.h ---- */
typedef struct kvc_model kvc_model;
typedef struct kvc_model_config {
    int64_t vocab_size;
    int64_t max_position_embeddings;
    ...;
} kvc_model_config;
kvc_status kvc_model_load(const char *dir, kvc_model **out);
kvc_status kvc_model_load_weights(const char *dir, const char *weights, kvc_model **out);
kvc_status kvc_model_set_activations(kvc_model *m, const char *activations);
const char *kvc_model_activations(const kvc_model *m);
void kvc_model_destroy(kvc_model *m);
const kvc_model_config *kvc_model_config_of(const kvc_model *m);
typedef struct kvc_cache_knobs {
    int64_t block_size;
    kvc_dtype kv_dtype;
    kvc_block_layout kv_layout;
    ...;
} kvc_cache_knobs;

typedef enum kvc_runner_mode {
    KVC_RUNNER_RECOMPUTE, KVC_RUNNER_CONTIGUOUS, KVC_RUNNER_PAGED, KVC_RUNNER_MLA_LATENT, ...
} kvc_runner_mode;
typedef struct kvc_runner_params {
    kvc_runner_mode mode;
    bool mla_paged;
    int64_t max_new_tokens;
    int64_t max_seq_len;
    int64_t max_positions;
    kvc_cache_knobs cache;
    ...;
} kvc_runner_params;
kvc_runner_params kvc_runner_default_params(void);
typedef struct kvc_runner kvc_runner;
kvc_status kvc_runner_create(const kvc_model *m, const kvc_runner_params *p, int64_t batch, int64_t max_prompt_len,
                             kvc_runner **out);
void kvc_runner_destroy(kvc_runner *r);
typedef struct kvc_runner_stats {
    double prefill_ms;
    double decode_ms;
    int64_t decode_steps;
    ...;
} kvc_runner_stats;
kvc_status kvc_runner_generate(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n, int32_t *tokens,
                               float *logits, kvc_runner_stats *stats);
kvc_status kvc_runner_score_chunk(kvc_runner *r, const int32_t *ids, int64_t first, int64_t q, float *logits);

/* ---- engine.h ---- */
typedef struct kvc_logit_bias {
    int32_t token;
    float bias;
} kvc_logit_bias;
#define KVC_SAMPLING_MAX_LOGIT_BIAS ...
#define KVC_SAMPLING_MAX_STOP_IDS ...
typedef struct kvc_sampling_params {
    float temperature;
    int32_t top_k;
    float top_p;
    uint64_t seed;
    float min_p;
    float presence_penalty;
    float frequency_penalty;
    float repetition_penalty;
    int64_t min_tokens;
    const int32_t *min_tokens_ids;
    int32_t n_min_tokens_ids;
    int32_t n_logit_bias;
    const kvc_logit_bias *logit_bias;
    ...;
} kvc_sampling_params;
kvc_sampling_params kvc_sampling_default_params(void);
double kvc_sample_uniform(uint64_t seed, uint64_t k);
typedef struct kvc_sampler kvc_sampler;
kvc_status kvc_sampler_create(int64_t vocab_size, kvc_sampler **out);
void kvc_sampler_destroy(kvc_sampler *s);
kvc_status kvc_sampler_sample_tokens(kvc_sampler *s, const float *logits, const kvc_sampling_params *p,
                                     const int32_t *tokens, int64_t n_prompt, int64_t n_tokens, int32_t *token_out);
typedef struct kvc_engine_model kvc_engine_model;
typedef enum kvc_engine_plan { KVC_ENGINE_PLAN_OFFLINE, KVC_ENGINE_PLAN_BUDGET, ... } kvc_engine_plan;
typedef enum kvc_engine_scheduler { KVC_ENGINE_SCHED_BUDGET, KVC_ENGINE_SCHED_PREFILL_ALONE, ... } kvc_engine_scheduler;
typedef struct kvc_engine_params {
    int64_t max_model_len;
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    int64_t long_prefill_token_threshold;
    double step_cost_ratio;
    kvc_engine_scheduler scheduler;
    int64_t max_requests;
    kvc_engine_plan plan;
    int64_t kv_memory_bytes;
    int64_t reserved_decode_tokens;
    uint64_t seed;
    bool prefix_caching;
    bool check;
    ...;
} kvc_engine_params;
kvc_engine_params kvc_engine_default_params(void);
typedef struct kvc_engine kvc_engine;
kvc_status kvc_engine_create(const kvc_engine_model *model, const kvc_engine_params *p, kvc_engine **out);
const kvc_engine_params *kvc_engine_params_of(const kvc_engine *e);
void kvc_engine_destroy(kvc_engine *e);
typedef struct kvc_engine_request {
    int64_t id;
    const int32_t *prompt;
    int64_t n_prompt;
    int64_t max_new_tokens;
    int32_t eos_id;
    int32_t priority;
    const void *cache_salt;
    int64_t cache_salt_len;
    kvc_sampling_params sampling;
    ...;
} kvc_engine_request;
#define KVC_ENGINE_SALT_MAX ...
kvc_engine_request kvc_engine_request_default(void);
kvc_status kvc_engine_add_request(kvc_engine *e, const kvc_engine_request *r);
typedef enum kvc_engine_request_state { KVC_REQ_WAITING, KVC_REQ_RUNNING, KVC_REQ_FINISHED, ... } kvc_engine_request_state;
typedef enum kvc_engine_finish_reason {
    KVC_FINISH_NONE, KVC_FINISH_EOS, KVC_FINISH_MAX_NEW, KVC_FINISH_MAX_MODEL_LEN, KVC_FINISH_NO_ALLOWED_TOKEN, ...
} kvc_engine_finish_reason;
typedef struct kvc_engine_request_info {
    kvc_engine_request_state state;
    kvc_engine_finish_reason finish;
    int64_t n_prompt;
    int64_t n_generated;
    int64_t n_cached;
    int64_t n_preemptions;
    int64_t n_prefix_hit;
    ...;
} kvc_engine_request_info;
kvc_status kvc_engine_request_get(const kvc_engine *e, int64_t id, kvc_engine_request_info *out);
kvc_status kvc_engine_request_output(const kvc_engine *e, int64_t id, int32_t *out, int64_t cap, int64_t *n_out);
typedef struct kvc_engine_request_times {
    int64_t arrival_step, first_scheduled_step, first_token_step, finish_step;
    int64_t arrival_ns, first_scheduled_ns, first_token_ns, finish_ns;
} kvc_engine_request_times;
kvc_status kvc_engine_request_times_get(const kvc_engine *e, int64_t id, kvc_engine_request_times *out);
kvc_status kvc_engine_request_token_times(const kvc_engine *e, int64_t id, int64_t *steps, int64_t *ns, int64_t cap,
                                          int64_t *n_out);
kvc_status kvc_engine_request_release(kvc_engine *e, int64_t id);
kvc_status kvc_engine_set_allowed_tokens(kvc_engine *e, int64_t id, const uint32_t *bitmask, int64_t n_words);
typedef struct kvc_engine_step_result {
    int64_t n_rows;
    int64_t n_tokens;
    int64_t n_preempted;
    int64_t n_finished;
    bool idle;
    ...;
} kvc_engine_step_result;
kvc_status kvc_engine_step(kvc_engine *e, kvc_engine_step_result *res);
kvc_status kvc_engine_follow(kvc_engine *e);
kvc_status kvc_engine_sync_score(kvc_engine *e, const int32_t *ids, int64_t n);
kvc_status kvc_engine_follow_score(const kvc_engine *e, const int32_t **ids, int64_t *n);
typedef struct kvc_engine_stats {
    int64_t n_waiting, n_running, n_finished;
    int64_t steps;
    int64_t prefill_tokens, decode_tokens, generated_tokens;
    int64_t preemptions, finished_total;
    int32_t n_keys;
    int64_t num_blocks[...];
    int64_t blocks_in_use[...];
    int64_t kv_bytes;
    int64_t prefix_hit_tokens;
    int64_t prefix_query_tokens;
    ...;
} kvc_engine_stats;
kvc_status kvc_engine_get_stats(const kvc_engine *e, kvc_engine_stats *out);
typedef struct kvc_engine_adapter_params {
    bool self_managed;
    bool latent;
    kvc_cache_knobs cache;
    ...;
} kvc_engine_adapter_params;
kvc_engine_adapter_params kvc_engine_adapter_default_params(void);
typedef struct kvc_engine_adapter kvc_engine_adapter;
kvc_status kvc_engine_adapter_create(const kvc_model *m, const kvc_engine_adapter_params *p,
                                     const kvc_engine_params *engine_params, kvc_engine_adapter **out);
void kvc_engine_adapter_destroy(kvc_engine_adapter *a);
const kvc_engine_model *kvc_engine_adapter_model(const kvc_engine_adapter *a);

/* ---- the logits tap of this module (SOURCE below) ---- */
typedef struct kvc_py_logits_tap {
    float *logits;
    int64_t *request_ids;
    int64_t cap_rows;
    int64_t n_rows;
    ...;
} kvc_py_logits_tap;
void kvc_py_logits_tap_init(kvc_py_logits_tap *t, const kvc_engine_model *inner);
const kvc_engine_model *kvc_py_logits_tap_model(const kvc_py_logits_tap *t);

/* ---- tensor parallelism over MPI (SOURCE below; src/dist/replicas.h) ---- */
kvc_status kvc_py_tp_check(const char *dir, int64_t size);
kvc_status kvc_py_tp_start(int64_t size, int32_t *rank);
kvc_status kvc_py_tp_load(const char *dir, const char *weights, kvc_model **out);
void kvc_py_tp_set_sync(kvc_engine_params *p);
void kvc_py_tp_end(int rc);
"""

SOURCE = r"""
#include <omp.h>
#include <string.h>
#include "kvcache/kvcache.h"

/* The engine's model with a tap on its forward: the vtable the engine gets is
 * the inner one (the model adapter's) whose forward, after the inner forward,
 * copies each row's last-token logits and the row's request id into the
 * buffers Python lent (logits [cap_rows, vocab], request_ids [cap_rows]) when
 * it lent them (logits != NULL): the log-probabilities of the sampled tokens
 * come from there. Runs inside kvc_engine_step, without the GIL. */
typedef struct kvc_py_logits_tap {
    kvc_engine_model model;
    const kvc_engine_model *inner;
    float *logits;
    int64_t *request_ids;
    int64_t cap_rows;
    int64_t n_rows; /* rows the last step copied (0: none) */
} kvc_py_logits_tap;

static kvc_status kvc_py_tap_forward(void *self, const int32_t *ids, const kvc_engine_batch *batch, float *logits) {
    kvc_py_logits_tap *t = self;
    kvc_status st = t->inner->forward(t->inner->self, ids, batch, logits);
    const int64_t n = batch->md->n_rows;
    t->n_rows = 0;
    if (st != KVC_OK || t->logits == NULL || n > t->cap_rows) return st;
    memcpy(t->logits, logits, (size_t)n * (size_t)t->model.vocab_size * sizeof *logits);
    memcpy(t->request_ids, batch->request_ids, (size_t)n * sizeof *batch->request_ids);
    t->n_rows = n;
    return st;
}

static void kvc_py_logits_tap_init(kvc_py_logits_tap *t, const kvc_engine_model *inner) {
    memset(t, 0, sizeof *t);
    t->model = *inner;
    t->model.self = t;
    t->model.forward = kvc_py_tap_forward;
    t->inner = inner;
}

static const kvc_engine_model *kvc_py_logits_tap_model(const kvc_py_logits_tap *t) { return &t->model; }

/* Tensor parallelism (Engine(tensor_parallel_size=N) under mpirun): this process's session of
 * src/dist/replicas.c, compiled in when the extension was built with MPI (KVC_HAVE_MPI). */
#include "base/internal.h"
#include "model/model_internal.h" /* kvci_model_shard_config */

static kvc_status kvc_py_tp_no_mpi(void) {
    return kvci_fail(KVC_EINVAL, "tensor parallelism: this kvcache package was built without MPI (install Open MPI, "
                                 "libopenmpi-dev, and reinstall the package)");
}

/* Whether the model in dir splits over size ranks (shard.c's rules), before any rank starts MPI. */
static kvc_status kvc_py_tp_check(const char *dir, int64_t size) {
#ifndef KVC_HAVE_MPI
    if (size > 1) return kvc_py_tp_no_mpi();
#endif
    kvc_model_config full, shard;
    kvc_status st = kvc_model_config_load(dir, &full);
    return st == KVC_OK ? kvci_model_shard_config(&full, size, &shard) : st;
}

#ifdef KVC_HAVE_MPI
#include "dist/replicas.h"
static kvc_status kvc_py_tp_start(int64_t size, int32_t *rank) { return kvc_replicas_start(size, rank); }
static kvc_status kvc_py_tp_load(const char *dir, const char *weights, kvc_model **out) {
    return kvc_replicas_load(dir, weights, out);
}
static void kvc_py_tp_set_sync(kvc_engine_params *p) { p->sync = kvc_replicas_sync(); }
static void kvc_py_tp_end(int rc) { kvc_replicas_end(rc); }
#else
static kvc_status kvc_py_tp_start(int64_t size, int32_t *rank) {
    (void)size, (void)rank;
    return kvc_py_tp_no_mpi();
}
static kvc_status kvc_py_tp_load(const char *dir, const char *weights, kvc_model **out) {
    (void)dir, (void)weights, (void)out;
    return kvc_py_tp_no_mpi();
}
static void kvc_py_tp_set_sync(kvc_engine_params *p) { (void)p; }
static void kvc_py_tp_end(int rc) { (void)rc; }
#endif
"""


def builder():
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source("kvcache._ffi", SOURCE)
    return ffi


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python ffi_build.py OUTPUT.c")
    builder().emit_c_code(sys.argv[1])
