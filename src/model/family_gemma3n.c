/* Gemma 3n's text decoder (gemma3n_text, Gemma3nForCausalLM; gemma3n's text_config, Gemma3nForConditionalGeneration,
 * its vision and audio towers not read). Gemma3nTextConfig's defaults are the E4B model's: 35 layers, four sliding
 * (window 512, rope theta 1e4) then one full (theta 1e6), the last num_kv_shared_layers (15) reading the caches of
 * the last earlier layer of their kind, head_dim 256 at scale 1 with q/k/v norms (Gemma 4's attention,
 * attn_gemma4.c), per-layer inputs of 256 channels, four AltUp copies of the hidden state, LAuReL of rank 64, the
 * first 10 layers' gate activations sparse at 0.95, final logits soft-capped at 30 (gemma3n.c runs it). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"
#include "model/model_internal.h"

/* Gemma3nTextConfig's layer_types default: four sliding layers, then one full. */
static kvc_status gemma3n_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    return kvci_family_every_nth_full(ctx, 5, kinds);
}

kvc_status kvci_gemma3n_intermediate(const kvc_json_obj *c, int64_t n_layers, int64_t *out) {
    *out = 16384;
    const cJSON *v = kvci_json_find(c, "intermediate_size");
    if (v == NULL) return KVC_OK;
    if (!cJSON_IsArray(v)) return kvci_json_int(c, "intermediate_size", 1, KVC_HP_MAX_WIDTH, out, NULL);
    if (cJSON_GetArraySize(v) != n_layers)
        return kvci_fail(KVC_EINVAL,
                         "%s: intermediate_size holds %d widths; num_hidden_layers %lld needs one per layer", c->doc,
                         cJSON_GetArraySize(v), (long long)n_layers);
    int64_t i = 0;
    for (const cJSON *e = v->child; e != NULL; e = e->next, i++) {
        char where[48];
        int64_t w = 0;
        snprintf(where, sizeof where, "intermediate_size[%lld]", (long long)i);
        KVC_TRY(kvci_json_int_value(e, where, 1, KVC_HP_MAX_WIDTH, &w));
        if (i == 0) *out = w;
        if (w != *out)
            return kvci_fail(KVC_EINVAL,
                             "%s: intermediate_size[%lld] %lld differs from layer 0's %lld (the runtime runs one MLP "
                             "width)",
                             c->doc, (long long)i, (long long)w, (long long)*out);
    }
    return KVC_OK;
}

/* activation_sparsity_pattern: one target sparsity per layer in [0, 1) (0: dense); absent or null, 0.95 on the
 * first 10 layers of a model of more than 10, else none (Gemma3nTextConfig.__post_init__). */
static kvc_status sparsity(const kvc_json_obj *c, kvc_model_config *cfg) {
    const int64_t L = cfg->num_layers;
    for (int64_t l = 0; l < L; l++) cfg->layer_act_sparsity[l] = L > 10 && l < 10 ? 0.95f : 0.0f;
    const cJSON *v = kvci_json_find(c, "activation_sparsity_pattern");
    if (v == NULL || cJSON_IsNull(v)) return KVC_OK;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != L)
        return kvci_fail(KVC_EINVAL,
                         "%s: activation_sparsity_pattern must be a list of num_hidden_layers (%lld) numbers", c->doc,
                         (long long)L);
    int64_t l = 0;
    for (const cJSON *e = v->child; e != NULL; e = e->next, l++) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0.0 && e->valuedouble < 1.0))
            return kvci_fail(KVC_EINVAL, "%s: activation_sparsity_pattern[%lld] must be a number in [0, 1)", c->doc,
                             (long long)l);
        cfg->layer_act_sparsity[l] = (float)e->valuedouble; /* torch.tensor(p, float32) */
    }
    return KVC_OK;
}

/* AltUp and LAuReL: altup_num_inputs (4) copies, altup_active_idx (0) the one the layer runs on, altup_correct_scale
 * (true), laurel_rank (64). altup_coef_clip clamps the coefficients in training only: not read. */
static kvc_status altup_laurel(const kvc_json_obj *c, kvc_model_config *cfg) {
    KVC_TRY(kvci_family_opt_int(c, "altup_num_inputs", 4, 1, KVC_GEMMA3N_MAX_ALTUP, &cfg->altup_inputs));
    KVC_TRY(kvci_family_opt_int(c, "altup_active_idx", 0, 0, cfg->altup_inputs - 1, &cfg->altup_active));
    KVC_TRY(kvci_family_opt_bool(c, "altup_correct_scale", true, &cfg->altup_correct_scale));
    return kvci_family_opt_int(c, "laurel_rank", 64, 1, KVC_HP_MAX_WIDTH, &cfg->laurel_rank);
}

/* num_kv_shared_layers: 15 when absent, below num_hidden_layers (Gemma3nTextConfig.kv_sharing_modes needs a layer
 * of each kind before the shared ones); the planner's words (plan/facts.c). */
static kvc_status kv_shared(const kvc_json_obj *c, kvc_model_config *cfg) {
    bool have = false;
    cfg->kv_shared_layers = 15;
    KVC_TRY(kvci_json_int(c, "num_kv_shared_layers", 0, cfg->num_layers - 1, &cfg->kv_shared_layers, &have));
    if (cfg->kv_shared_layers < cfg->num_layers) return KVC_OK;
    return kvci_fail(KVC_EINVAL,
                     "%s: num_kv_shared_layers is absent and gemma3n's default 15 leaves none of the %lld layers a "
                     "cache of its own",
                     c->doc, (long long)cfg->num_layers);
}

static kvc_status parse_gemma3n(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    if (hp->cfg.obj == hp->doc && strcmp(hp->model_type, "gemma3n") == 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: gemma3n without text_config is not supported (transformers then builds its default text "
                         "model)",
                         c->doc);
    const char *act = "gelu_pytorch_tanh";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_activation", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu_pytorch_tanh") != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_activation \"%s\" is not supported (gemma3n: gelu_pytorch_tanh)",
                         c->doc, act);
    cfg->mlp_act = KVC_MLP_GELU_TANH;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    bool bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    KVC_TRY(kvci_family_softcap(c, "final_logit_softcapping", 30.0, &cfg->final_logit_softcapping));
    KVC_TRY(kv_shared(c, cfg));
    KVC_TRY(kvci_gemma4_per_layer_keys(c, cfg));
    KVC_TRY(altup_laurel(c, cfg));
    KVC_TRY(sparsity(c, cfg));
    if (!hp->rope_sliding_given) { /* without a dict per layer type: rope_local_base_freq (1e4) on sliding layers */
        const kvc_json_range theta = {1.0, KVC_HP_MAX_THETA, true};
        double base = 10000.0;
        KVC_TRY(kvci_family_opt_num(c, "rope_local_base_freq", 10000.0, theta, &base));
        cfg->rope_sliding = kvci_family_default_rope(base);
    }
    cfg->embed_scale = (float)sqrt((double)cfg->hidden_size);
    cfg->sandwich_norms = cfg->qk_norm = cfg->v_norm = true;
    cfg->attention_multiplier = 1.0; /* Gemma3nTextAttention's scaling */
    return KVC_OK;
}

kvc_status kvci_gemma3n_layers(const kvc_family_ctx *ctx, const kvc_layer_kind *kinds, const kvc_model_config *cfg) {
    int64_t head_dim[KVC_MODEL_MAX_LAYERS], kv_heads[KVC_MODEL_MAX_LAYERS];
    for (int64_t i = 0; i < cfg->num_layers; i++) head_dim[i] = cfg->head_dim, kv_heads[i] = cfg->num_kv_heads;
    return kvci_gemma4_shared_sources(ctx, kinds, cfg->kv_shared_layers, head_dim, kv_heads);
}

static const kvc_family_alias GEMMA3N[] = {
    {"gemma3n", "Gemma3nForConditionalGeneration", "gemma3n", true},
    {"gemma3n_text", "Gemma3nForCausalLM", "gemma3n", true},
};

const kvc_family_desc kvc_family_gemma3n = {
    .id = KVC_FAMILY_GEMMA3N,
    .name = "gemma3n",
    .aliases = GEMMA3N,
    .n_aliases = 2,
    .parse = parse_gemma3n,
    .check = kvci_gemma4_check,
    .default_kinds = gemma3n_kinds,
    .attention = kvci_attn_gemma4,
    .softmax_scale = kvci_gemma4_scale,
    .kv_shared_layers = 15,
};
