/* Gemma 4's text decoder (gemma4_text, Gemma4ForCausalLM; gemma4's text_config, Gemma4ForConditionalGeneration,
 * its vision and audio towers not read), planned only: the runtime refuses both types by name. What the plan
 * needs of it: five sliding layers then one full (sliding_window_pattern 6), the last layer always full (as
 * Gemma4TextConfig forces it), the full layers' own head dim and KV heads (per_layer_config, or the legacy
 * global_head_dim, 512 when absent, and num_global_key_value_heads, read only with attention_k_eq_v), the softmax
 * scale 1 (q and k are RMS-normalised per head), and the last num_kv_shared_layers layers reading earlier layers'
 * caches (plan/facts.c). Bidirectional attention over every token ("all") is refused by name; "vision" leaves
 * text tokens causal. Gemma 3n (gemma3n_text, gemma3n's text_config), planned only too, shares its caches the same
 * way (num_kv_shared_layers 15 when absent) with one head dim, every 5th layer full and the same scale. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

/* Gemma4TextConfig's layer_types default: sliding_window_pattern 6 (five sliding layers, then one full). */
static kvc_status gemma4_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    return kvci_family_every_nth_full(ctx, 6, kinds);
}

/* Gemma3nTextConfig's: four sliding layers, then one full. */
static kvc_status gemma3n_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    return kvci_family_every_nth_full(ctx, 5, kinds);
}

static kvc_status gemma4_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale) {
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
    const bool wrapper = hp->model_type != NULL ? strcmp(hp->model_type, "gemma4") == 0
                                                : strcmp(hp->architecture, "Gemma4ForConditionalGeneration") == 0;
    if (wrapper && hp->cfg.obj == hp->doc)
        return kvci_fail(KVC_EINVAL,
                         "%s: gemma4 without text_config is not supported (transformers then builds its default text "
                         "model)",
                         hp->cfg.doc);
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

static const kvc_family_alias GEMMA4[] = {
    {"gemma4", "Gemma4ForConditionalGeneration", "gemma4", false},
    {"gemma4_text", "Gemma4ForCausalLM", "gemma4", false},
};

const kvc_family_desc kvc_family_gemma4 = {
    .id = KVC_FAMILY_GEMMA4,
    .name = "gemma4",
    .aliases = GEMMA4,
    .n_aliases = 2,
    .default_kinds = gemma4_kinds,
    .softmax_scale = gemma4_scale,
    .layer_dims = gemma4_layer_dims,
};

static const kvc_family_alias GEMMA3N[] = {
    {"gemma3n", "Gemma3nForConditionalGeneration", "gemma3n", false},
    {"gemma3n_text", "Gemma3nForCausalLM", "gemma3n", false},
};

const kvc_family_desc kvc_family_gemma3n = {
    .id = KVC_FAMILY_GEMMA3N,
    .name = "gemma3n",
    .aliases = GEMMA3N,
    .n_aliases = 2,
    .default_kinds = gemma3n_kinds,
    .softmax_scale = gemma4_scale,
    .kv_shared_layers = 15,
};
