/* RecurrentGemma (Griffin; RecurrentGemmaForCausalLM, RecurrentGemmaConfig of transformers 5.25; model_type
 * recurrent_gemma): residual blocks whose temporal block is, by block_types repeated over the layers ("recurrent",
 * "recurrent", "attention" when absent), a recurrent block (rglru.c: a state layer) or local attention (a sliding
 * layer of attention_window_size keys, 2048 when absent; MQA when num_key_value_heads says so; RoPE half-split on the
 * first head_dim * partial_rotary_factor channels, 0.5 when absent; q/k/v biases by attention_bias, o_proj always
 * biased). Around it Gemma's pieces: norms as 1 + w (temporal_pre_norm, channel_pre_norm, final_norm), a GeGLU MLP
 * of intermediate_size / 2 with biases (mlp_block), the embeddings times sqrt(hidden_size) rounded to bf16 (the
 * model's normalizer buffer), the logits soft-capped by logits_soft_cap (30 when absent), tied embeddings by default.
 * head_dim is the file's, else hidden_size / num_attention_heads (the config class sets that, then the file's key
 * wins). Refused by name: another activation, rope type or block type, layer_types (the class has no setter for it), an
 * lru_width the heads do not divide. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/half.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* block_types repeated over the layers: recurrent a state layer, attention a sliding one (the config's
 * layers_block_type); an empty list or another name refused by name. */
static kvc_status rg_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    static const char *const DEF[3] = {"recurrent", "recurrent", "attention"};
    const cJSON *list = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(&ctx->hp->cfg, "block_types", KVC_HP_MAX_LAYERS, &list, &have));
    const int n = have ? cJSON_GetArraySize(list) : 3;
    if (n == 0) return kvci_fail(KVC_EINVAL, "%s: block_types is empty", ctx->hp->cfg.doc);
    for (int64_t i = 0; i < ctx->n_layers; i++) {
        const cJSON *e = have ? cJSON_GetArrayItem(list, (int)(i % n)) : NULL;
        if (have && !cJSON_IsString(e))
            return kvci_fail(KVC_EINVAL, "%s: block_types[%lld] is not a string", ctx->hp->cfg.doc, (long long)(i % n));
        const char *t = have ? e->valuestring : DEF[i % 3];
        if (strcmp(t, "recurrent") != 0 && strcmp(t, "attention") != 0)
            return kvci_fail(KVC_EINVAL, "%s: block_types[%lld] \"%.64s\" is not recurrent or attention",
                             ctx->hp->cfg.doc, (long long)(i % n), t);
        kinds[i] = strcmp(t, "recurrent") == 0 ? KVC_LK_STATE : KVC_LK_SLIDING;
    }
    return KVC_OK;
}

/* The layers come from block_types alone: RecurrentGemmaConfig maps layer_types onto a property it cannot set. */
static kvc_status rg_layer_list(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given) {
    if (!kvci_json_missing(&ctx->hp->cfg, "layer_types"))
        return kvci_fail(KVC_EINVAL,
                         "%s: layer_types is not a recurrent_gemma key (RecurrentGemmaConfig derives it from "
                         "block_types)",
                         ctx->hp->cfg.doc);
    *given = true;
    return rg_kinds(ctx, kinds);
}

/* lru_width (hidden_size when absent or null) and conv1d_width (4), read alike by the planner and the runtime. */
static kvc_status rg_widths(const kvc_hparams *hp, int64_t hidden_size, int64_t *lru, int64_t *conv) {
    *lru = hidden_size;
    bool have = false;
    KVC_TRY(kvci_json_int(&hp->cfg, "lru_width", 1, KVC_HP_MAX_WIDTH, lru, &have));
    return kvci_family_opt_int(&hp->cfg, "conv1d_width", 4, 1, KVC_HP_MAX_DIM, conv);
}

/* A recurrent block keeps the last conv1d_width - 1 inputs of its conv and the RG-LRU's state, lru_width each. */
static kvc_status rg_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    int64_t lru = 0, conv = 0, lru_r = 0;
    KVC_TRY(rg_widths(hp, hidden_size, &lru, &conv));
    KVC_TRY(kvci_family_split_tp(hp, "lru_width", lru, tp, &lru_r));
    *s = (kvc_state_shapes){
        .n = 2, .names = {"conv_state", "recurrent_state"}, .n_shape = {2, 1}, .shape = {{conv - 1, lru_r}, {lru_r}}};
    return KVC_OK;
}

static kvc_status parse_recurrent_gemma(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const char *act = "gelu_pytorch_tanh";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_activation", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu_pytorch_tanh") != 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: hidden_activation \"%s\" is not supported (recurrent_gemma: gelu_pytorch_tanh)", c->doc,
                         act);
    if (cfg->rope.type != KVC_ROPE_DEFAULT)
        return kvci_fail(KVC_EINVAL, "%s: rope type %s is not supported (RecurrentGemma's rotary embedding is default)",
                         c->doc, kvc_rope_type_name(cfg->rope.type));
    if (cfg->intermediate_size < 2)
        return kvci_fail(KVC_EINVAL, "%s: intermediate_size %lld leaves no MLP (its halves are the gate and up width)",
                         c->doc, (long long)cfg->intermediate_size);
    cfg->intermediate_size /= 2;
    KVC_TRY(rg_widths(hp, cfg->hidden_size, &cfg->lru_width, &cfg->conv_kernel));
    if (cfg->lru_width % cfg->num_heads != 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: lru_width %lld is not a multiple of num_attention_heads %lld (the RG-LRU's gate "
                         "blocks)",
                         c->doc, (long long)cfg->lru_width, (long long)cfg->num_heads);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* head_dim, else hidden_size / num_attention_heads */
    cfg->mlp_act = KVC_MLP_GELU_TANH;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->mlp_bias = true;
    cfg->gemma_norms = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    cfg->embed_scale = kvc_bf16_to_f32(kvc_f32_to_bf16((float)sqrt((double)cfg->hidden_size)));
    return kvci_family_softcap(c, "logits_soft_cap", 30.0, &cfg->final_logit_softcapping);
}

/* What the recurrent blocks' shapes rest on, for a config of any origin (kvc_model_create_random's too): lru_width a
 * positive multiple of num_heads (the gates' blocks), a conv of at least one tap. */
static kvc_status rg_check(const kvc_model_config *cfg, const char *doc) {
    if (cfg->num_heads < 1 || cfg->lru_width < 1 || cfg->lru_width % cfg->num_heads != 0)
        return kvci_fail(KVC_EINVAL, "%s: lru_width %lld must be a positive multiple of num_heads %lld", doc,
                         (long long)cfg->lru_width, (long long)cfg->num_heads);
    if (cfg->conv_kernel < 1 || cfg->conv_kernel > KVC_HP_MAX_DIM)
        return kvci_fail(KVC_EINVAL, "%s: conv_kernel %lld is outside [1, %lld]", doc, (long long)cfg->conv_kernel,
                         (long long)KVC_HP_MAX_DIM);
    return KVC_OK;
}

/* The recurrent block on its layers, else local attention. */
static kvc_status rg_operator(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_rglru[l] ? kvci_rglru(s, l) : kvci_attn_gqa(s, l);
}

static const kvc_family_alias RECURRENT_GEMMA[] = {
    {"recurrent_gemma", "RecurrentGemmaForCausalLM", "recurrent_gemma", true}};

const kvc_family_desc kvc_family_recurrent_gemma = {
    .id = KVC_FAMILY_RECURRENT_GEMMA,
    .name = "recurrent_gemma",
    .aliases = RECURRENT_GEMMA,
    .n_aliases = 1,
    .parse = parse_recurrent_gemma,
    .check = rg_check,
    .default_kinds = rg_kinds,
    .layer_list = rg_layer_list,
    .attention = rg_operator,
    .state_shapes = rg_states,
};
