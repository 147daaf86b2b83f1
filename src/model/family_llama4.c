/* Llama 4 (Scout, Maverick): llama4_text (Llama4ForCausalLM) and the text model of llama4
 * (Llama4ForConditionalGeneration, text_config; the vision tower left unread). Chunked local attention with
 * RoPE on most layers, full causal attention without RoPE (NoPE) on the rest: no_rope_layers[i] is 1 for a
 * RoPE (chunked) layer and 0 for a NoPE (full) one; an absent or empty list is transformers' default, every
 * no_rope_layer_interval-th layer (4) NoPE. The chunk is attention_chunk_size; null: every layer full. */

#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* if_rope for a layer with a 1 in no_rope_layers, if_nope for a 0; without the list (or an empty one), the
 * layers l with (l + 1) % no_rope_layer_interval == 0 (4 when absent) are the NoPE ones. */
static kvc_status rope_kinds(const kvc_family_ctx *ctx, kvc_layer_kind if_rope, kvc_layer_kind if_nope,
                             kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    const cJSON *list = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(cfg, "no_rope_layers", KVC_HP_MAX_LAYERS, &list, &have));
    if (have && list != NULL && list->child != NULL)
        return kvci_family_flag_kinds(ctx, "no_rope_layers", list, if_nope, if_rope, kinds);
    int64_t interval = 4;
    KVC_TRY(kvci_json_int(cfg, "no_rope_layer_interval", 1, KVC_HP_MAX_LAYERS, &interval, &have));
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = (i + 1) % interval != 0 ? if_rope : if_nope;
    return KVC_OK;
}

static kvc_status llama4_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    if (ctx->chunk == 0)
        kvci_family_warn(ctx, "attention_chunk_size absent or null: every layer planned as full attention");
    return rope_kinds(ctx, ctx->chunk > 0 ? KVC_LK_CHUNKED : KVC_LK_FULL, KVC_LK_FULL, kinds);
}

/* The MoE layers: moe_layers when given (each in [0, layers)), else every interleave_moe_layer_step-th layer
 * from step - 1 (1 when absent: every layer). */
static kvc_status moe_layers(const kvc_json_obj *c, kvc_model_config *cfg) {
    const cJSON *list = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(c, "moe_layers", KVC_HP_MAX_LAYERS, &list, &have));
    if (have && list != NULL) {
        int i = 0;
        for (const cJSON *e = list->child; e != NULL; e = e->next, i++) {
            char where[64];
            int64_t l = 0;
            snprintf(where, sizeof where, "%s: moe_layers[%d]", c->doc, i);
            KVC_TRY(kvci_json_int_value(e, where, 0, cfg->num_layers - 1, &l));
            cfg->layer_moe[l] = true;
        }
        return KVC_OK;
    }
    int64_t step = 1;
    KVC_TRY(kvci_family_opt_int(c, "interleave_moe_layer_step", 1, 1, KVC_HP_MAX_LAYERS, &step));
    for (int64_t l = step - 1; l < cfg->num_layers; l += step) cfg->layer_moe[l] = true;
    return KVC_OK;
}

/* layer_types, when given, of full_attention and chunked_attention layers only (transformers' Llama 4 builds
 * no other mask). */
static kvc_status check_layer_types(const kvc_json_obj *c) {
    const cJSON *types = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(c, "layer_types", KVC_HP_MAX_LAYERS, &types, &have));
    int i = 0;
    for (const cJSON *e = have && types ? types->child : NULL; e != NULL; e = e->next, i++) {
        const bool str = cJSON_IsString(e);
        if (!str || (strcmp(e->valuestring, "full_attention") != 0 && strcmp(e->valuestring, "chunked_attention") != 0))
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_types[%d] %s%s%s is not a Llama 4 layer (full_attention, chunked_attention: "
                             "transformers builds no other mask)",
                             c->doc, i, str ? "\"" : "", str ? e->valuestring : "(not a string)", str ? "\"" : "");
    }
    return KVC_OK;
}

/* Llama4TextConfig's keys (its defaults when absent): head_dim 128, theta 5e5 (hparams.c), RoPE on adjacent
 * pairs (the complex-number form), q/k/v/o biases by attention_bias, the L2 q/k norms of the RoPE layers by
 * use_qk_norm (true), the NoPE layers' query scale by attn_temperature_tuning (true: attn_scale 0.1,
 * floor_scale 8192), num_local_experts 16 routed experts of intermediate_size with a shared one of the same
 * size, num_experts_per_tok 1, the dense layers' MLP of intermediate_size_mlp (16384). Refused by name: an
 * absent attention_chunk_size (transformers' 8192, which the planner does not assume: give it, or null for
 * none) and layer_types other than full_attention / chunked_attention. (A missing num_key_value_heads is
 * Llama4TextConfig's 8: kvci_hparams_read_sizes.) */
static kvc_status parse_llama4(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, false};
    if (kvci_json_missing(c, "attention_chunk_size")) /* null: no chunks */
        return kvci_fail(KVC_EINVAL,
                         "%s: attention_chunk_size is absent (Llama4TextConfig's default 8192, which the planner "
                         "does not assume): give it, or null for full attention on every layer",
                         c->doc);
    KVC_TRY(check_layer_types(c));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false, cfg->rope_form = KVC_ROPE_PAIRS;
    KVC_TRY(kvci_family_opt_bool(c, "use_qk_norm", true, &cfg->qk_l2_norm));
    bool tuning = true;
    KVC_TRY(kvci_family_opt_bool(c, "attn_temperature_tuning", true, &tuning));
    KVC_TRY(kvci_family_opt_num(c, "attn_scale", 0.1, scale, &cfg->query_scale_beta));
    KVC_TRY(kvci_family_opt_int(c, "floor_scale", 8192, 1, KVC_HP_MAX_POSITIONS, &cfg->query_scale_positions));
    if (!tuning) cfg->query_scale_beta = 0.0;
    cfg->query_scale_nope = true;
    kvc_layer_kind k[KVC_MODEL_MAX_LAYERS]; /* KVC_LK_NONE marks the NoPE layers */
    const kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(rope_kinds(&ctx, KVC_LK_FULL, KVC_LK_NONE, k));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = k[l] == KVC_LK_NONE;
    /* experts and the shared one of intermediate_size, the dense layers' MLP of intermediate_size_mlp */
    cfg->moe_intermediate_size = cfg->shared_expert_intermediate_size = cfg->intermediate_size;
    KVC_TRY(kvci_family_opt_int(c, "intermediate_size_mlp", 16384, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "num_local_experts", 16, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts));
    KVC_TRY(kvci_family_opt_int(c, "num_experts_per_tok", 1, 1, cfg->n_routed_experts, &cfg->experts_per_tok));
    cfg->moe_sigmoid_input = true;
    return moe_layers(c, cfg);
}

/* The routed experts (sigmoid scores scaling their inputs) and the shared expert on the MoE layers, else the
 * dense MLP. */
static kvc_status llama4_ffn(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_moe[l] ? kvci_ffn_sigmoid_moe(s, l) : kvci_fwd_dense_mlp(s, l);
}

static const kvc_family_alias LLAMA4[] = {
    {"llama4", "Llama4ForConditionalGeneration", "llama4", true},
    {"llama4_text", "Llama4ForCausalLM", "llama4", true},
};

const kvc_family_desc kvc_family_llama4 = {
    .id = KVC_FAMILY_LLAMA4,
    .name = "llama4",
    .aliases = LLAMA4,
    .n_aliases = 2,
    .rms_norm_eps = 1e-5,
    .parse = parse_llama4,
    .default_kinds = llama4_kinds,
    .ffn = llama4_ffn,
};
