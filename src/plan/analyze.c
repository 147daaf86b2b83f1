/* The analyzer: config.json -> kvc_model_plan. Family rules decide the
 * attention type of every layer (facts.c); the selection rules of
 * the operator rules (docs/ops.md) decide mode, operator generation, layout and mask modes
 * (select.c); the cache description is handed to kvc_plan_blocks for every
 * number it implies (caches.c). This file runs the steps in order and holds
 * the public entry points. */
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "kvcache/model.h"
#include "model/model_internal.h"
#include "plan/plan_internal.h"

const char *kvc_kv_mode_name(kvc_kv_mode mode) {
    switch (mode) {
    case KVC_KV_PAGED: return "paged";
    case KVC_KV_LEGACY: return "legacy";
    }
    return "?";
}

kvc_plan_options kvc_plan_default_options(void) {
    return (kvc_plan_options){.tp = 1,
                              .block_size = 128,
                              .kv_dtype_set = false,
                              .kv_dtype = KVC_DTYPE_BF16,
                              .max_model_len = 0,
                              .max_concurrency = 1,
                              .next_n = 0,
                              .kv_memory_bytes = 0};
}

static kvc_status check_options(const kvc_plan_options *o) {
    if (o->tp < 1 || o->tp > 4096)
        return kvci_fail(KVC_EINVAL, "plan options: tp %lld must be in [1, 4096]", (long long)o->tp);
    if (o->block_size < 1 || o->block_size > (1 << 20))
        return kvci_fail(KVC_EINVAL, "plan options: block_size %lld must be in [1, 1048576]", (long long)o->block_size);
    if (o->kv_dtype_set && !kvc_model_kv_dtype_ok(o->kv_dtype)) /* the dtypes the runtime's caches store */
        return kvci_fail(KVC_EINVAL,
                         "plan options: kv_dtype %s is not a KV cache dtype (f32, f16, bf16, i8, fp8_e4m3, fp8_e5m2, "
                         "or a registered one: kvc_model_kv_dtype_ok)",
                         kvc_dtype_name(o->kv_dtype));
    if (o->max_model_len < 0 || o->max_model_len > INT32_MAX)
        return kvci_fail(KVC_EINVAL,
                         "plan options: max_model_len %lld must be in [0, %d] (0 = from the config): positions, "
                         "block tables and slot mappings hold 32-bit values",
                         (long long)o->max_model_len, INT32_MAX);
    if (o->max_concurrency < 1)
        return kvci_fail(KVC_EINVAL, "plan options: max_concurrency %lld must be >= 1", (long long)o->max_concurrency);
    if (o->next_n < 0 || o->next_n > 64)
        return kvci_fail(KVC_EINVAL, "plan options: next_n %lld must be in [0, 64]", (long long)o->next_n);
    if (o->kv_memory_bytes < 0)
        return kvci_fail(KVC_EINVAL, "plan options: kv_memory_bytes %lld must not be negative (0 = offline sizing)",
                         (long long)o->kv_memory_bytes);
    return KVC_OK;
}

/* ---- driver ---------------------------------------------------------------- */

/* max_model_len from the config unless the options give it or size by budget. */
static kvc_status resolve_max_model_len(kvc_model_plan *plan, const kvc_model_facts *f) {
    kvc_plan_options *o = &plan->options;
    if (o->max_model_len == 0 && o->kv_memory_bytes == 0) {
        o->max_model_len = f->have_max_pos ? f->max_pos : KVC_HP_DEFAULT_MAX_POS;
        if (!f->have_max_pos) /* vLLM's fallback, and the runtime's cap on positions */
            kvci_plan_warn(
                plan,
                "config.json has no length key (max_position_embeddings, n_positions, seq_length, max_seq_len): "
                "assuming %d positions, as vLLM and kvcache's runtime do; --max-model-len plans another",
                KVC_HP_DEFAULT_MAX_POS);
    } else if (o->max_model_len == 0) {
        o->max_model_len = f->have_max_pos ? f->max_pos : 0;
    }
    if (f->have_max_pos && o->max_model_len > f->max_pos)
        kvci_plan_warn(plan, "max_model_len %lld exceeds max_position_embeddings %lld", (long long)o->max_model_len,
                       (long long)f->max_pos);
    return KVC_OK;
}

/* n_kv KV heads over tp ranks: split, or replicated when fewer (said in a warning). */
static kvc_status split_kv(kvc_model_plan *plan, int64_t n_kv, int64_t *per_rank) {
    const int64_t tp = plan->options.tp;
    *per_rank = kvci_max64(n_kv / tp, 1);
    if (n_kv >= tp && n_kv % tp != 0)
        return kvci_fail(KVC_EINVAL, "tp %lld does not divide num_key_value_heads %lld", (long long)tp,
                         (long long)n_kv);
    if (n_kv < tp) {
        if (tp % n_kv != 0)
            return kvci_fail(KVC_EINVAL,
                             "tp %lld is not a multiple of num_key_value_heads %lld (KV heads cannot be replicated "
                             "evenly)",
                             (long long)tp, (long long)n_kv);
        kvci_plan_warn(plan, "tp %lld exceeds num_key_value_heads %lld: each KV head replicated on %lld ranks",
                       (long long)tp, (long long)n_kv, (long long)(tp / n_kv));
    }
    return KVC_OK;
}

/* Tensor parallelism: query heads split evenly; KV heads split or replicated. A config without any heads key
 * (Mamba, FalconMamba: no attention layer) has none to split. */
static kvc_status split_heads(const kvc_hparams *hp, kvc_model_plan *plan, const kvc_model_facts *f,
                              int64_t *kv_per_rank) {
    const kvc_plan_options *o = &plan->options;
    if (kvci_hparams_key(&hp->cfg, kvci_hp_heads_keys) == NULL && f->fam != &kvc_family_generic) {
        *kv_per_rank = f->n_kv_heads;
        plan->num_attention_heads = f->n_heads, plan->num_key_value_heads = f->n_kv_heads;
        plan->q_heads_per_rank = f->n_heads;
        return KVC_OK;
    }
    if (f->n_heads % o->tp != 0)
        return kvci_fail(KVC_EINVAL, "tp %lld does not divide num_attention_heads %lld", (long long)o->tp,
                         (long long)f->n_heads);
    *kv_per_rank = kvci_max64(f->n_kv_heads / o->tp, 1);
    if (!f->fam->mla) KVC_TRY(split_kv(plan, f->n_kv_heads, kv_per_rank));
    plan->num_attention_heads = f->n_heads;
    plan->num_key_value_heads = f->n_kv_heads;
    plan->q_heads_per_rank = f->n_heads / o->tp;
    return KVC_OK;
}

/* The layers' own KV heads (f->layer_kv_heads, when the family gives them) per rank, in place; each count the
 * model's heads do not have checked (and warned about) once. */
static kvc_status split_layer_heads(kvc_model_plan *plan, kvc_model_facts *f) {
    int64_t own = 0, own_rank = 0; /* the last count checked, and its heads per rank */
    for (int64_t i = 0; f->layer_kv_heads != NULL && i < f->n_layers; i++) {
        const int64_t n = f->layer_kv_heads[i];
        if (n == f->n_kv_heads) {
            f->layer_kv_heads[i] = kvci_max64(n / plan->options.tp, 1);
            continue;
        }
        if (n != own) KVC_TRY(split_kv(plan, n, &own_rank));
        own = n, f->layer_kv_heads[i] = own_rank;
    }
    return KVC_OK;
}

/* Config features the plan does not cover, reported as warnings (chunk: an attention_chunk_size that no
 * layer is planned with, 0 if none). */
static kvc_status warn_unplanned(const kvc_hparams *hp, kvc_model_plan *plan, const kvc_family_desc *fam,
                                 int64_t chunk) {
    int64_t mtp = 0;
    bool have_mtp = false;
    kvc_status st = kvci_json_int(&hp->cfg, "num_nextn_predict_layers", 0, KVC_HP_MAX_LAYERS, &mtp, &have_mtp);
    if (st == KVC_OK && have_mtp && mtp > 0)
        kvci_plan_warn(plan,
                       "%lld multi-token-prediction layer(s) not planned: merge the draft model's cache description "
                       "(kvc_model_cache_info_merge) when it drafts",
                       (long long)mtp);
    /* layers planned as causal self-attention that are not: another type's cross-attention (image keys, fixed per
     * request; Llama 3.2 Vision's own rule plans its cross_attention_layers) and MiniMax's lightning attention (a
     * linear-attention state) */
    static const char *const other_layers[2][2] = {
        {"cross_attention_layers", "cross-attention layers (keys of the image, fixed per request)"},
        {"attn_type_list", "attn_type_list (lightning linear-attention layers, whose state is not planned)"}};
    const int n_other = fam == &kvc_family_minimax ? 1 : 2; /* MiniMax's own rule plans attn_type_list */
    for (int i = kvci_family_is_mllama(hp->model_type) ? 1 : 0; st == KVC_OK && i < n_other; i++)
        if (kvci_json_find(&hp->cfg, other_layers[i][0]) != NULL)
            kvci_plan_warn(plan, "%s: planned as causal self-attention on every layer, an upper bound on memory",
                           other_layers[i][1]);
    if (st == KVC_OK && chunk > 0)
        kvci_plan_warn(plan,
                       "attention_chunk_size %lld (chunked local attention) without chunked layers (layer_types "
                       "\"chunked_attention\", or a Llama 4 config): every layer planned as full causal attention, "
                       "an upper bound on memory",
                       (long long)chunk);
    return st;
}

/* Layer kinds, state shapes, scale and mode; f->kinds is left for the caller to free. */
static kvc_status decide(kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f, int64_t kv_per_rank,
                         kvc_state_shapes *states) {
    kvc_status st = kvci_plan_layer_kinds(hp, plan, f);
    if (st == KVC_OK) st = split_layer_heads(plan, f);
    bool seen[KVC_LK_CHUNKED + 1] = {false}; /* by kind: full, sliding, state and chunked (set; the rest unused) */
    int64_t cacheless = 0;
    for (int64_t i = 0; st == KVC_OK && i < f->n_layers; i++) {
        const kvc_layer_kind k = f->kinds[i];
        seen[KVC_LK_FULL] |= k == KVC_LK_FULL || k == KVC_LK_PARALLEL;
        seen[KVC_LK_SLIDING] |= k == KVC_LK_SLIDING;
        seen[KVC_LK_STATE] |= k == KVC_LK_STATE || k == KVC_LK_PARALLEL;
        seen[KVC_LK_CHUNKED] |= k == KVC_LK_CHUNKED;
        cacheless += k == KVC_LK_NONE;
    }
    cacheless -= f->kv_shared_layers; /* warned about as such */
    if (st == KVC_OK && cacheless > 0)
        kvci_plan_warn(plan, "%lld of the %lld layers (%s) keep no cache and are not listed", (long long)cacheless,
                       (long long)f->n_layers,
                       kvci_family_is_mllama(hp->model_type)
                           ? "cross_attention_layers, skipped on text-only prompts; an image's keys there are not "
                             "planned"
                           : "MLP or experts only");
    if (st == KVC_OK && seen[KVC_LK_STATE]) {
        st = kvci_family_state_shapes(f->fam, hp, f->hidden_size, plan->options.tp, states);
        if (st == KVC_OK)
            kvci_plan_warn(
                plan, "state caches planned in the KV dtype %s; models keeping their state in f32 need --kv-dtype f32",
                kvc_dtype_name(plan->options.kv_dtype));
    }
    if (st == KVC_OK) st = kvci_plan_compute_scale(hp, plan, f);
    if (st != KVC_OK) return st;
    plan->head_dim = f->head_dim;
    bool compressed = false; /* DeepSeek-V4: compressed entries and pending states beside the windows */
    for (int64_t i = 0; f->v4 != NULL && i < f->n_layers; i++) compressed |= f->v4[i].ratio > 0;
    plan->hybrid =
        compressed ||
        (int)seen[KVC_LK_FULL] + (int)seen[KVC_LK_SLIDING] + (int)seen[KVC_LK_STATE] + (int)seen[KVC_LK_CHUNKED] > 1;
    kvci_plan_select_mode(plan, f, kv_per_rank, seen[KVC_LK_FULL] || seen[KVC_LK_SLIDING] || seen[KVC_LK_CHUNKED]);
    /* a chunk as long as max_position_embeddings turned its layers full already, with its own warning */
    const bool chunk_drops = !f->have_max_pos || f->chunk < f->max_pos;
    return warn_unplanned(hp, plan, f->fam, !seen[KVC_LK_CHUNKED] && chunk_drops ? f->chunk : 0);
}

static kvc_status analyze(kvc_hparams *hp, kvc_model_plan *plan) {
    kvc_model_facts f = {0};
    int64_t kv_per_rank = 0;
    kvc_status st = kvci_plan_read_facts(hp, plan, &f);
    if (st == KVC_OK) st = kvci_plan_resolve_dtype(hp, plan);
    if (st == KVC_OK) st = resolve_max_model_len(plan, &f);
    if (st == KVC_OK) st = split_heads(hp, plan, &f, &kv_per_rank);
    if (st == KVC_OK) st = kvci_family_attn_softcap(f.fam, &hp->cfg, &plan->logit_softcap);
    if (st != KVC_OK) return st;
    plan->mla = f.fam->mla;
    plan->sinks = f.fam->sinks || kvci_family_attn_sinks(hp->model_type);
    plan->rope_factor = f.rope.factor;
    plan->rope_attention_factor = kvc_rope_attention_factor(&f.rope);

    kvc_state_shapes states = {0};
    st = decide(hp, plan, &f, kv_per_rank, &states);
    if (st == KVC_OK) st = kvci_plan_build_layers(plan, &f, &states, kv_per_rank);
    kvci_plan_free_layers(&f);
    kvci_free(f.v4);
    kvci_free(f.index_layers);
    if (st == KVC_OK) st = kvci_plan_build_cache_info(plan);
    if (st == KVC_OK) st = kvci_plan_unify_pages(plan);
    if (st == KVC_OK) kvci_plan_split_keys(plan);
    if (st == KVC_OK) st = kvci_plan_run_planner(plan);
    if (st == KVC_OK) kvci_plan_measure_state_padding(plan);
    return st;
}

/* A plan for tp > 1 ranks of a model the runtime runs but cannot split that way (OLMo 2's q / k norms over all
 * heads together): the cache plan stands (another runtime may split it), and the warning says the runtime's
 * refusal. A config the runtime does not run is planned without it. */
static void warn_runtime_split(const char *config_json, size_t len, kvc_model_plan *plan) {
    kvc_model_config full, rank;
    if (plan->options.tp <= 1 || kvci_model_config_parse_n(config_json, len, "config.json", &full) != KVC_OK) return;
    if (kvci_model_shard_config(&full, plan->options.tp, &rank) != KVC_OK)
        kvci_plan_warn(plan, "kvcache's runtime refuses this tensor parallelism (%s)", kvc_last_error());
}

kvc_status kvc_model_plan_create(const char *config_json, size_t len, const kvc_plan_options *opt,
                                 kvc_model_plan **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_model_plan_create: out must not be NULL");
    *out = NULL;
    if (config_json == NULL || len == 0) return kvci_fail(KVC_EINVAL, "kvc_model_plan_create: config text is empty");
    if (opt == NULL) return kvci_fail(KVC_EINVAL, "kvc_model_plan_create: options must not be NULL");
    kvc_status st = check_options(opt);
    if (st != KVC_OK) return st;
    kvc_hparams hp;
    st = kvci_hparams_open(config_json, len, "config.json", &hp);
    if (st != KVC_OK) {
        kvci_hparams_close(&hp);
        return st;
    }
    kvc_model_plan *plan = kvci_calloc(1, sizeof *plan);
    if (plan == NULL) {
        kvci_hparams_close(&hp);
        return kvci_fail(KVC_ENOMEM, "kvc_model_plan_create: out of host memory");
    }
    plan->options = *opt;
    st = analyze(&hp, plan);
    kvci_hparams_close(&hp);
    if (st != KVC_OK) {
        kvc_model_plan_destroy(plan);
        return st;
    }
    warn_runtime_split(config_json, len, plan);
    *out = plan;
    return KVC_OK;
}

void kvc_model_plan_destroy(kvc_model_plan *plan) {
    if (plan == NULL) return;
    if (plan->cache_info.layer_infos != NULL) {
        kvci_free(plan->cache_info.layer_infos[0].caches); /* one array holds every layer's entries */
        kvci_free(plan->cache_info.layer_infos);
    }
    kvci_free(plan->layers);
    kvci_free(plan);
}
