/* Gemma 4's text decoder (gemma4_text, Gemma4ForCausalLM; gemma4's text_config, Gemma4ForConditionalGeneration,
 * its vision and audio towers not read). What the plan needs of it: five sliding layers then one full
 * (sliding_window_pattern 6), the last layer always full (as Gemma4TextConfig forces it), the full layers' own head
 * dim and KV heads (per_layer_config, or the legacy global_head_dim, 512 when absent, and
 * num_global_key_value_heads, read only with attention_k_eq_v), the softmax scale 1 (q and k are RMS-normalised per
 * head), and the last num_kv_shared_layers layers reading earlier layers' caches (plan/facts.c). Bidirectional
 * attention over every token ("all") is refused by name; "vision" leaves text tokens causal. The runtime runs it
 * (parse_gemma4, attn_gemma4.c, forward.c's per-layer inputs), the full layers in their own shape (per-layer
 * attention shapes, layer_shape.c). Gemma 4 Unified (gemma4_unified_text, gemma4_unified's text_config) is these
 * layers without per-layer inputs or experts; Gemma 3n (family_gemma3n.c) reuses the attention, per-layer inputs
 * and KV sharing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"
#include "model/model_internal.h"

/* Gemma4TextConfig's layer_types default: sliding_window_pattern 6 (five sliding layers, then one full). */
static kvc_status gemma4_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    return kvci_family_every_nth_full(ctx, 6, kinds);
}

kvc_status kvci_gemma4_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale) {
    (void)ctx, (void)head_dim;
    *scale = 1.0; /* Gemma4TextAttention's and Gemma3nTextAttention's scaling */
    return KVC_OK;
}

/* use_bidirectional_attention: null, or "vision" (image tokens see each other; text stays causal); "all" makes
 * every layer non-causal, which no cache plan here holds. */
static kvc_status gemma4_bidirectional(const kvc_family_ctx *ctx) {
    const char *mode = NULL;
    bool have = false;
    KVC_TRY(kvci_json_str(&ctx->hp->cfg, "use_bidirectional_attention", KVC_HP_NAME_MAX, &mode, &have));
    if (!have) return KVC_OK;
    if (strcmp(mode, "vision") == 0) {
        kvci_family_warn(ctx, "use_bidirectional_attention \"vision\": text tokens attend causally, as planned");
        return KVC_OK;
    }
    return kvci_fail(KVC_EINVAL,
                     "%s: use_bidirectional_attention \"%s\" is not supported (null, or \"vision\": causal text; "
                     "\"all\" makes the attention non-causal)",
                     ctx->hp->cfg.doc, mode);
}

/* The layer index a per_layer_config key names ("05": transformers zero-pads them), in [0, n). */
static kvc_status layer_index(const kvc_family_ctx *ctx, const char *key, int64_t *out) {
    char *end = NULL;
    const long long v = key[0] >= '0' && key[0] <= '9' ? strtoll(key, &end, 10) : -1;
    if (end == NULL || *end != '\0' || v < 0 || v >= ctx->n_layers)
        return kvci_fail(KVC_EINVAL, "%s: per_layer_config key \"%.32s\" is not a layer index in [0, %lld)",
                         ctx->hp->cfg.doc, key, (long long)ctx->n_layers);
    *out = v;
    return KVC_OK;
}

/* per_layer_config: per layer, head_dim and num_key_value_heads over the model's; an empty skip list; any other
 * key (one that could change the layer's cache: its window, its kind) refused by name. */
static kvc_status per_layer_config(const kvc_family_ctx *ctx, const cJSON *plc, int64_t *head_dim, int64_t *kv_heads) {
    const char *doc = ctx->hp->cfg.doc;
    if (!cJSON_IsObject(plc))
        return kvci_fail(KVC_EINVAL, "%s: per_layer_config must be an object, got %s", doc, kvci_json_type_name(plc));
    for (const cJSON *e = plc->child; e != NULL; e = e->next) {
        int64_t l = 0;
        KVC_TRY(layer_index(ctx, e->string, &l));
        if (!cJSON_IsObject(e))
            return kvci_fail(KVC_EINVAL, "%s: per_layer_config[\"%s\"] must be an object, got %s", doc, e->string,
                             kvci_json_type_name(e));
        for (const cJSON *k = e->child; k != NULL; k = k->next) {
            char where[96];
            snprintf(where, sizeof where, "per_layer_config[\"%.16s\"].%.32s", e->string, k->string);
            if (strcmp(k->string, "head_dim") == 0) {
                KVC_TRY(kvci_json_int_value(k, where, 1, KVC_HP_MAX_DIM, &head_dim[l]));
            } else if (strcmp(k->string, "num_key_value_heads") == 0) {
                KVC_TRY(kvci_json_int_value(k, where, 1, KVC_HP_MAX_HEADS, &kv_heads[l]));
            } else if (strcmp(k->string, "skip") != 0 || !cJSON_IsArray(k) || cJSON_GetArraySize(k) != 0) {
                return kvci_fail(KVC_EINVAL, "%s: %s is not supported (head_dim, num_key_value_heads)", doc, where);
            }
        }
    }
    return KVC_OK;
}

/* Gemma4TextConfig's per_layer_config when the file has none: the full layers' head_dim global_head_dim (512 when
 * absent), their KV heads num_global_key_value_heads when attention_k_eq_v is set and it is not null. */
static kvc_status global_layers(const kvc_family_ctx *ctx, const kvc_layer_kind *kinds, int64_t *head_dim,
                                int64_t *kv_heads) {
    const kvc_json_obj *c = &ctx->hp->cfg;
    int64_t gd = 512, gkv = 0;
    bool k_eq_v = false, have = false, have_gkv = false;
    KVC_TRY(kvci_json_int(c, "global_head_dim", 1, KVC_HP_MAX_DIM, &gd, &have));
    KVC_TRY(kvci_json_bool(c, "attention_k_eq_v", &k_eq_v, &have));
    KVC_TRY(kvci_json_int(c, "num_global_key_value_heads", 1, KVC_HP_MAX_HEADS, &gkv, &have_gkv));
    for (int64_t i = 0; i < ctx->n_layers; i++) {
        if (kinds[i] != KVC_LK_FULL) continue;
        head_dim[i] = gd;
        if (k_eq_v && have_gkv) kv_heads[i] = gkv;
    }
    return KVC_OK;
}

static kvc_status gemma4_layer_dims(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, int64_t *head_dim,
                                    int64_t *kv_heads, int64_t *v_head_dim) {
    (void)v_head_dim; /* values as wide as the keys */
    const kvc_hparams *hp = ctx->hp;
    static const char *const WRAPPERS[] = {"gemma4", "gemma4_unified"};
    static const char *const WRAPPER_ARCHS[] = {"Gemma4ForConditionalGeneration",
                                                "Gemma4UnifiedForConditionalGeneration"};
    const bool wrapper = hp->model_type != NULL ? kvci_name_listed(hp->model_type, WRAPPERS, 2)
                                                : kvci_name_listed(hp->architecture, WRAPPER_ARCHS, 2);
    if (wrapper && hp->cfg.obj == hp->doc)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s without text_config is not supported (transformers then builds its default text "
                         "model)",
                         hp->cfg.doc, hp->model_type != NULL ? hp->model_type : hp->architecture);
    KVC_TRY(gemma4_bidirectional(ctx));
    for (int64_t i = 0; i < ctx->n_layers; i++)
        if (kinds[i] != KVC_LK_FULL && kinds[i] != KVC_LK_SLIDING)
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_types[%lld] is neither full_attention nor sliding_attention, the two kinds "
                             "gemma4 has",
                             hp->cfg.doc, (long long)i);
    if (kinds[ctx->n_layers - 1] != KVC_LK_FULL) {
        kvci_family_warn(ctx, "the last layer (%lld) is sliding; planned full, as Gemma4TextConfig forces it",
                         (long long)ctx->n_layers - 1);
        kinds[ctx->n_layers - 1] = KVC_LK_FULL;
    }
    /* given, even as null or {}: transformers reads it alone (null: every layer the model's) */
    if (kvci_json_missing(&hp->cfg, "per_layer_config")) return global_layers(ctx, kinds, head_dim, kv_heads);
    const cJSON *plc = kvci_json_find(&hp->cfg, "per_layer_config");
    return plc != NULL ? per_layer_config(ctx, plc, head_dim, kv_heads) : KVC_OK;
}

/* The runtime's layers of a Gemma 4 config (config.c, after the kinds): the last layer full, as the planner's
 * layer_dims; the layers whose head dim or KV heads differ from the model's (the full layers' global_head_dim,
 * num_global_key_value_heads, per_layer_config) their own shape (kvc_model_config.layer_head_dim, layer_kv_heads);
 * each KV-shared layer with an earlier layer of its kind, of its shape, to read (Gemma4TextConfig.kv_sharing_modes
 * refuses the config otherwise). */
kvc_status kvci_gemma4_layers(kvc_family_ctx *ctx, kvc_layer_kind *kinds, kvc_model_config *cfg) {
    const int64_t L = cfg->num_layers;
    int64_t head_dim[KVC_MODEL_MAX_LAYERS], kv_heads[KVC_MODEL_MAX_LAYERS], v_dim[KVC_MODEL_MAX_LAYERS] = {0};
    for (int64_t i = 0; i < L; i++) head_dim[i] = cfg->head_dim, kv_heads[i] = cfg->num_kv_heads;
    KVC_TRY(gemma4_layer_dims(ctx, kinds, head_dim, kv_heads, v_dim));
    for (int64_t i = 0; i < L; i++) {
        cfg->layer_head_dim[i] = head_dim[i] != cfg->head_dim ? head_dim[i] : 0;
        cfg->layer_kv_heads[i] = kv_heads[i] != cfg->num_kv_heads ? kv_heads[i] : 0;
    }
    return kvci_gemma4_shared_sources(ctx, kinds, cfg->kv_shared_layers, head_dim, kv_heads);
}

kvc_status kvci_gemma4_shared_sources(const kvc_family_ctx *ctx, const kvc_layer_kind *kinds, int64_t shared,
                                      const int64_t *head_dim, const int64_t *kv_heads) {
    const char *doc = ctx->hp->cfg.doc;
    const int64_t first = ctx->n_layers - shared;
    for (int64_t i = first; i < ctx->n_layers; i++) {
        int64_t j = first - 1;
        while (j >= 0 && kinds[j] != kinds[i]) j--;
        if (j < 0)
            return kvci_fail(KVC_EINVAL,
                             "%s: num_kv_shared_layers %lld: layer %lld has no earlier layer of its kind to share the "
                             "cache of",
                             doc, (long long)shared, (long long)i);
        if (head_dim[j] != head_dim[i] || kv_heads[j] != kv_heads[i])
            return kvci_fail(KVC_EINVAL,
                             "%s: num_kv_shared_layers %lld: layer %lld (%lld KV heads of %lld) reads the cache of "
                             "layer %lld (%lld of %lld), whose heads differ",
                             doc, (long long)shared, (long long)i, (long long)kv_heads[i], (long long)head_dim[i],
                             (long long)j, (long long)kv_heads[j], (long long)head_dim[j]);
    }
    return KVC_OK;
}

/* num_kv_shared_layers (0 when absent): in [0, num_hidden_layers), as the planner reads it; the sources' checks are
 * kvci_gemma4_check's, once the kinds are known. */
static kvc_status kv_shared(const kvc_json_obj *c, kvc_model_config *cfg) {
    bool have = false;
    return kvci_json_int(c, "num_kv_shared_layers", 0, cfg->num_layers - 1, &cfg->kv_shared_layers, &have);
}

/* Per-layer inputs: hidden_size_per_layer_input (256 when absent; 0 or null: none) and vocab_size_per_layer_input
 * (262,144 when absent), whose table must hold every token id for Gemma 4 (transformers' lookup fails beyond it);
 * Gemma 3n's ids beyond it read row 0 (Gemma3nTextModel.get_per_layer_inputs: its E2B / E4B models' 262,144 rows
 * below vocab_size 262,400). */
kvc_status kvci_gemma4_per_layer_keys(const kvc_json_obj *c, kvc_model_config *cfg) {
    cfg->ple_dim = 256, cfg->ple_vocab = 262144;
    const cJSON *p = kvci_json_find(c, "hidden_size_per_layer_input");
    if (!kvci_json_missing(c, "hidden_size_per_layer_input") && (p == NULL || cJSON_IsNull(p)))
        cfg->ple_dim = 0;
    else
        KVC_TRY(kvci_family_opt_int(c, "hidden_size_per_layer_input", 256, 0, KVC_HP_MAX_WIDTH, &cfg->ple_dim));
    if (cfg->ple_dim == 0) return KVC_OK;
    KVC_TRY(kvci_family_opt_int(c, "vocab_size_per_layer_input", 262144, 1, KVC_HP_MAX_VOCAB, &cfg->ple_vocab));
    if (cfg->ple_vocab < cfg->vocab_size && cfg->family != KVC_FAMILY_GEMMA3N)
        return kvci_fail(KVC_EINVAL,
                         "%s: vocab_size_per_layer_input %lld is below vocab_size %lld (a token beyond it has no "
                         "per-layer input)",
                         c->doc, (long long)cfg->ple_vocab, (long long)cfg->vocab_size);
    return KVC_OK;
}

/* enable_moe_block: every layer's experts beside its MLP, num_experts of moe_intermediate_size, top_k_experts of
 * them per token (each required then, as Gemma4TextExperts reads them). */
static kvc_status moe_block(const kvc_json_obj *c, kvc_model_config *cfg) {
    bool on = false;
    KVC_TRY(kvci_family_opt_bool(c, "enable_moe_block", false, &on));
    if (!on) return KVC_OK;
    KVC_TRY(kvci_json_int(c, "num_experts", 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts, NULL));
    KVC_TRY(kvci_json_int(c, "top_k_experts", 1, cfg->n_routed_experts, &cfg->experts_per_tok, NULL));
    KVC_TRY(kvci_json_int(c, "moe_intermediate_size", 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size, NULL));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    return KVC_OK;
}

/* Gemma4TextConfig's keys: hidden_activation gelu_pytorch_tanh, norms applied as w (not 1 + w), sandwich norms, q/k
 * norms, v norm, the scale 1, embeddings times sqrt(hidden_size), tied by default, final_logit_softcapping (none when
 * absent); the MoE block beside the MLP. */
static kvc_status parse_gemma4(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    KVC_TRY(gemma4_bidirectional(&(kvc_family_ctx){.hp = hp, .n_layers = cfg->num_layers}));
    const char *act = "gelu_pytorch_tanh";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_activation", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu_pytorch_tanh") != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_activation \"%s\" is not supported (gemma4: gelu_pytorch_tanh)",
                         c->doc, act);
    cfg->mlp_act = KVC_MLP_GELU_TANH;
    /* Gemma 4 Unified (gemma4_unified_text, gemma4_unified's text model): Gemma 4's layers without per-layer inputs
     * or experts (its config class has neither key) */
    const bool unified = hp->model_type != NULL && strncmp(hp->model_type, "gemma4_unified", 14) == 0;
    if (!unified) KVC_TRY(moe_block(c, cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    bool bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    KVC_TRY(kvci_family_opt_bool(c, "attention_k_eq_v", false, &cfg->attn_k_eq_v));
    KVC_TRY(kvci_family_opt_bool(c, "use_double_wide_mlp", false, &cfg->mlp_double_shared));
    KVC_TRY(kvci_family_softcap(c, "final_logit_softcapping", 0.0, &cfg->final_logit_softcapping));
    KVC_TRY(kv_shared(c, cfg));
    if (!unified) KVC_TRY(kvci_gemma4_per_layer_keys(c, cfg));
    cfg->embed_scale = (float)sqrt((double)cfg->hidden_size);
    cfg->sandwich_norms = cfg->qk_norm = cfg->v_norm = cfg->layer_scalar = true;
    cfg->attention_multiplier = 1.0; /* Gemma4TextAttention's scaling */
    return KVC_OK;
}

/* The rules of a Gemma 4 config (a caller's own struct too): kv_shared_layers in [0, num_layers), each shared
 * layer with an earlier one of its kind (layer_sliding) to read; per-layer inputs of at most KVC_HP_MAX_WIDTH
 * channels over a table of at least vocab_size rows (Gemma 3n's: at least one). */
kvc_status kvci_gemma4_check(const kvc_model_config *cfg, const char *doc) {
    const int64_t min_rows = cfg->family == KVC_FAMILY_GEMMA3N ? 1 : cfg->vocab_size;
    const int64_t L = cfg->num_layers, first = L - cfg->kv_shared_layers;
    if (cfg->kv_shared_layers < 0 || cfg->kv_shared_layers >= L)
        return kvci_fail(KVC_EINVAL, "%s: num_kv_shared_layers %lld outside [0, %lld)", doc,
                         (long long)cfg->kv_shared_layers, (long long)L);
    for (int64_t i = first; i < L; i++) {
        const int64_t src = kvci_model_kv_source(cfg, i);
        const kvci_attn_shape a = kvci_layer_shape(cfg, i), b = kvci_layer_shape(cfg, src);
        if (src == i || a.nKV != b.nKV || a.D != b.D || a.Dv != b.Dv)
            return kvci_fail(KVC_EINVAL,
                             "%s: num_kv_shared_layers %lld: layer %lld has no earlier layer of its kind and shape to "
                             "share the cache of",
                             doc, (long long)cfg->kv_shared_layers, (long long)i);
    }
    if (cfg->ple_dim < 0 || cfg->ple_dim > KVC_HP_MAX_WIDTH ||
        (cfg->ple_dim > 0 && (cfg->ple_vocab < min_rows || cfg->ple_vocab > KVC_HP_MAX_VOCAB)))
        return kvci_fail(KVC_EINVAL,
                         "%s: hidden_size_per_layer_input %lld outside [0, %lld] or vocab_size_per_layer_input %lld "
                         "outside [%lld, %lld]",
                         doc, (long long)cfg->ple_dim, (long long)KVC_HP_MAX_WIDTH, (long long)cfg->ple_vocab,
                         (long long)min_rows, (long long)KVC_HP_MAX_VOCAB);
    return KVC_OK;
}

static const kvc_family_alias GEMMA4[] = {
    {"gemma4", "Gemma4ForConditionalGeneration", "gemma4", true},
    {"gemma4_text", "Gemma4ForCausalLM", "gemma4", true},
    {"gemma4_unified", "Gemma4UnifiedForConditionalGeneration", "gemma4", true},
    {"gemma4_unified_text", "Gemma4UnifiedForCausalLM", "gemma4", true},
};

const kvc_family_desc kvc_family_gemma4 = {
    .id = KVC_FAMILY_GEMMA4,
    .name = "gemma4",
    .aliases = GEMMA4,
    .n_aliases = 4,
    .parse = parse_gemma4,
    .check = kvci_gemma4_check,
    .default_kinds = gemma4_kinds,
    .attention = kvci_attn_gemma4,
    .ffn = kvci_gemma4_ffn,
    .softmax_scale = kvci_gemma4_scale,
    .layer_dims = gemma4_layer_dims,
};
