/* Gemma (1)'s runtime keys (the dense family runs it: kvci_family_parse_gemma),
 * Gemma 2's and Gemma 3's (gemma3_text, and gemma3's text model): sliding and
 * full layers, Gemma 2 alternating (sliding first), Gemma 3
 * sliding_window_pattern - 1 sliding layers then one full; the softmax scale
 * follows query_pre_attn_scalar. Gemma 2 and 3 share norms applied as 1 + w
 * around both sub-layers, embeddings times sqrt(hidden_size), a GeGLU MLP
 * (gelu_pytorch_tanh) and tied embeddings by default; Gemma 2 soft-caps the
 * attention scores (attn_logit_softcapping, the operator's logit_softcap) and
 * the final logits (final_logit_softcapping) with one rope for every layer;
 * Gemma 3 has q/k norms and the sliding layers' own rope
 * (rope_local_base_freq, or the sliding_attention entry of a rope dict per
 * layer type), and refuses soft-capping by name. VaultGemma is Gemma 2 with
 * norms before the two sub-layers only. Bidirectional attention is refused
 * by name. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

static kvc_status gemma3_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    int64_t pattern = 6;
    bool have = false;
    KVC_TRY(kvci_json_int(cfg, "sliding_window_pattern", 1, KVC_HP_MAX_LAYERS, &pattern, &have));
    if (!have) KVC_TRY(kvci_json_int(cfg, "_sliding_window_pattern", 1, KVC_HP_MAX_LAYERS, &pattern, &have));
    if (!have) kvci_family_warn(ctx, "sliding_window_pattern absent: 6 (five sliding layers, then one full) assumed");
    return kvci_family_every_nth_full(ctx, pattern, kinds);
}

/* query_pre_attn_scalar^-1/2, the config classes' default 256 when it is absent (as the runtime's). */
static kvc_status gemma_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale) {
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    double v = 256.0;
    bool have = false;
    KVC_TRY(kvci_json_num(&ctx->hp->cfg, "query_pre_attn_scalar", positive, &v, &have));
    if (!have)
        kvci_family_warn(ctx,
                         "query_pre_attn_scalar absent: 256 (transformers' default) used for the scale, not "
                         "head_dim %lld",
                         (long long)head_dim);
    *scale = 1.0 / sqrt(v);
    return KVC_OK;
}

/* A key the runtime has no operator for: refused unless absent or null (or false, for a flag). */
static kvc_status refuse_set(const kvc_json_obj *c, const char *key, const char *why) {
    const cJSON *v = kvci_json_find(c, key);
    if (v == NULL || cJSON_IsNull(v) || cJSON_IsFalse(v)) return KVC_OK;
    return kvci_fail(KVC_EINVAL, "%s: %s is set; the runtime does not run %s", c->doc, key, why);
}

/* What every Gemma the runtime runs shares: the GeGLU activation named by `act_key` (gelu_pytorch_tanh when
 * absent; `gelu_alias`: "gelu" too, GemmaConfig's legacy spelling of it; `name` the family in the refusal), head_dim
 * (256 by default), bias on q, k, v and o with attention_bias, norms as 1 + w, tied embeddings by default, the
 * embeddings times sqrt(hidden_size) as an f32; bidirectional attention refused. */
static kvc_status parse_gemma_common(const kvc_hparams *hp, kvc_model_config *cfg, const char *act_key,
                                     const char *name, bool gelu_alias) {
    const kvc_json_obj *c = &hp->cfg;
    KVC_TRY(refuse_set(c, "use_bidirectional_attention", "bidirectional attention"));
    const char *act = "gelu_pytorch_tanh";
    bool have = false;
    KVC_TRY(kvci_json_str(c, act_key, KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu_pytorch_tanh") != 0 && !(gelu_alias && strcmp(act, "gelu") == 0))
        return kvci_fail(KVC_EINVAL, "%s: %s \"%s\" is not supported (%s: gelu_pytorch_tanh%s)", c->doc, act_key, act,
                         name, gelu_alias ? ", or gelu, its legacy name" : "");
    cfg->mlp_act = KVC_MLP_GELU_TANH;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    bool bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias;
    cfg->gemma_norms = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    cfg->embed_scale = (float)sqrt((double)cfg->hidden_size);
    return KVC_OK;
}

/* Whether key is given as JSON null (the reader's getters take null for absent; here null means none). */
static bool given_null(const kvc_json_obj *c, const char *key) {
    return !kvci_json_missing(c, key) && kvci_json_find(c, key) == NULL;
}

kvc_status kvci_family_softcap(const kvc_json_obj *c, const char *key, double def, double *out) {
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    bool have = false;
    *out = given_null(c, key) ? 0.0 : def;
    return kvci_json_num(c, key, positive, out, &have);
}

kvc_status kvci_family_attn_softcap(const kvc_family_desc *d, const kvc_json_obj *c, double *out) {
    return kvci_family_softcap(c, "attn_logit_softcapping", d->attn_softcap, out);
}

kvc_status kvci_family_parse_gemma(const kvc_hparams *hp, kvc_model_config *cfg) {
    return parse_gemma_common(hp, cfg, "hidden_act", "gemma", true);
}

/* What Gemma 2 and 3 add to Gemma (1): the sandwich norms and the softmax scale query_pre_attn_scalar^-1/2. */
static kvc_status parse_gemma_sandwich(const kvc_hparams *hp, kvc_model_config *cfg, const char *name) {
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    KVC_TRY(parse_gemma_common(hp, cfg, "hidden_activation", name, false));
    cfg->sandwich_norms = true;
    return kvci_family_opt_num(&hp->cfg, "query_pre_attn_scalar", 256.0, positive, &cfg->query_pre_attn_scalar);
}

/* Gemma 2: the soft-caps, absent keys taking Gemma2Config's defaults (attention 50, final 30), null none; one
 * rope for every layer (rope_sliding left unset: the full layers' rope). VaultGemma (google/vaultgemma-1b,
 * VaultGemmaForCausalLM) is Gemma 2 with plain pre-norm blocks: input_layernorm before the attention,
 * pre_feedforward_layernorm before the MLP, no norm of either output (VaultGemmaConfig's defaults are Gemma2Config's);
 * refused by name as VaultGemmaConfig refuses it: hidden_size not a multiple of num_attention_heads. */
static kvc_status parse_gemma2(const kvc_hparams *hp, kvc_model_config *cfg) {
    const bool vault = strcmp(cfg->model_type, "vaultgemma") == 0;
    if (vault && cfg->hidden_size % cfg->num_heads != 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: vaultgemma with hidden_size %lld not a multiple of num_attention_heads %lld is not "
                         "supported (VaultGemmaConfig refuses it)",
                         hp->cfg.doc, (long long)cfg->hidden_size, (long long)cfg->num_heads);
    KVC_TRY(parse_gemma_sandwich(hp, cfg, cfg->model_type));
    cfg->sandwich_norms = !vault;
    KVC_TRY(kvci_family_attn_softcap(&kvc_family_gemma2, &hp->cfg, &cfg->attn_logit_softcapping));
    return kvci_family_softcap(&hp->cfg, "final_logit_softcapping", 30.0, &cfg->final_logit_softcapping);
}

static kvc_status parse_gemma3(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range theta = {1.0, KVC_HP_MAX_THETA, true};
    /* Gemma3Attention in transformers 5.25 never passes its attn_logit_softcapping on: refused, not guessed */
    KVC_TRY(refuse_set(c, "attn_logit_softcapping", "soft-capped attention logits in gemma3 (gemma2 does)"));
    KVC_TRY(parse_gemma_sandwich(hp, cfg, "gemma3"));
    /* final_logit_softcapping (None when absent) as Gemma 2's; Gemma3ForConditionalGeneration never caps its logits
     * (only Gemma3ForCausalLM does), so the wrapper's text config keeps refusing it */
    if (hp->cfg.obj != hp->doc)
        KVC_TRY(refuse_set(c, "final_logit_softcapping", "soft-capped final logits in gemma3's multimodal wrapper"));
    else
        KVC_TRY(kvci_family_softcap(c, "final_logit_softcapping", 0.0, &cfg->final_logit_softcapping));
    cfg->qk_norm = true;
    if (!hp->rope_sliding_given) { /* transformers: default rope at rope_local_base_freq (10,000) */
        double base = 10000.0;
        KVC_TRY(kvci_family_opt_num(c, "rope_local_base_freq", 10000.0, theta, &base));
        cfg->rope_sliding = kvci_family_default_rope(base);
    }
    return KVC_OK;
}

static const kvc_family_alias GEMMA2[] = {{"gemma2", "Gemma2ForCausalLM", "gemma2", true},
                                          {"vaultgemma", "VaultGemmaForCausalLM", "vaultgemma", true}};
static const kvc_family_alias GEMMA3[] = {
    {"gemma3", "Gemma3ForConditionalGeneration", "gemma3", true},
    {"gemma3_text", "Gemma3ForCausalLM", "gemma3", true},
};

const kvc_family_desc kvc_family_gemma2 = {
    .id = KVC_FAMILY_GEMMA2,
    .name = "gemma2",
    .aliases = GEMMA2,
    .n_aliases = 2,
    .attn_softcap = 50.0,
    .parse = parse_gemma2,
    .default_kinds = kvci_family_alternating_kinds,
    .softmax_scale = gemma_scale,
};

const kvc_family_desc kvc_family_gemma3 = {
    .id = KVC_FAMILY_GEMMA3,
    .name = "gemma3",
    .aliases = GEMMA3,
    .n_aliases = 2,
    .parse = parse_gemma3,
    .default_kinds = gemma3_kinds,
    .softmax_scale = gemma_scale,
};
