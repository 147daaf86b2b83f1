/* Kimi-Linear (KimiLinearForCausalLM, KimiLinearConfig of transformers 5.25): Kimi Delta Attention layers (kda.c,
 * layer_types "linear_attention") beside DeepSeek-V3's MLA attention without RoPE ("full_attention"), each followed
 * by a dense SwiGLU MLP or DeepSeek-V3's sigmoid-routed experts with shared experts (mlp_layer_types). Defaults as
 * KimiLinearConfig's, its keys as it saves them (attribute_map: num_experts, num_experts_per_token,
 * num_shared_experts, num_expert_group, moe_renormalize) or by their DeepSeek names; a checkpoint's
 * linear_attn_config (num_heads, head_dim, short_conv_kernel_size, kda_layers / full_attn_layers counted from 1)
 * wins over the linear_* keys, as the class reads it. Sizes are bounded by KVC_HP_MAX_DIM (2^16): no product here
 * can overflow. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* The KDA sizes: linear_num_heads (32), linear_head_dim (128), linear_conv_kernel_dim (4), each replaced by
 * linear_attn_config's num_heads, head_dim, short_conv_kernel_size when that holds it. */
static kvc_status kda_sizes(const kvc_hparams *hp, int64_t *heads, int64_t *hdim, int64_t *kernel) {
    static const char *const top[3] = {"linear_num_heads", "linear_head_dim", "linear_conv_kernel_dim"};
    static const char *const sub[3] = {"num_heads", "head_dim", "short_conv_kernel_size"};
    int64_t *dst[3] = {heads, hdim, kernel};
    const int64_t def[3] = {32, 128, 4};
    char path[64];
    kvc_json_obj lin;
    bool have = false;
    KVC_TRY(kvci_json_child(&hp->cfg, "linear_attn_config", path, sizeof path, &lin, &have));
    for (int i = 0; i < 3; i++) {
        KVC_TRY(kvci_family_opt_int(&hp->cfg, top[i], def[i], i == 2 ? 2 : 1, KVC_HP_MAX_DIM, dst[i]));
        if (have) KVC_TRY(kvci_family_opt_int(&lin, sub[i], *dst[i], i == 2 ? 2 : 1, KVC_HP_MAX_DIM, dst[i]));
    }
    return KVC_OK;
}

static bool is_bailing(const kvc_hparams *hp) {
    return hp->model_type != NULL && strcmp(hp->model_type, "bailing_hybrid") == 0;
}

/* A size BailingHybridConfig copies from another key (saved: both equal): either present, else def; both present and
 * different refused by name (transformers takes `from`, a plan from `saved` would not match its model). */
static kvc_status copied_int(const kvc_json_obj *c, const char *saved, const char *from, int64_t lo, int64_t def,
                             int64_t *out) {
    int64_t a = def, b = def;
    bool have_a = false, have_b = false;
    KVC_TRY(kvci_json_int(c, saved, lo, KVC_HP_MAX_DIM, &a, &have_a));
    KVC_TRY(kvci_json_int(c, from, lo, KVC_HP_MAX_DIM, &b, &have_b));
    if (have_a && have_b && a != b)
        return kvci_fail(KVC_EINVAL, "%s: %s %lld differs from %s %lld (bailing_hybrid sets it from %s)", c->doc, saved,
                         (long long)a, from, (long long)b, from);
    *out = have_a ? a : b;
    return KVC_OK;
}

/* Ling / Ring hybrids (bailing_hybrid, planned only), BailingHybridConfig's sizes: linear_num_heads and
 * linear_conv_kernel_dim as saved or num_attention_heads and short_conv_kernel_size (4), which must agree when both
 * are given; linear_head_dim as saved, else head_dim (128), read before the class turns head_dim into
 * qk_rope_head_dim (its saved configs hold both). */
static kvc_status bailing_sizes(const kvc_hparams *hp, int64_t *heads, int64_t *hdim, int64_t *kernel) {
    static const char *const hdim_n[KVC_HP_ALIASES] = {"linear_head_dim", "head_dim"};
    bool have = false;
    *hdim = 128;
    KVC_TRY(copied_int(&hp->cfg, "linear_num_heads", "num_attention_heads", 1, hp->n_heads, heads));
    KVC_TRY(kvci_hparams_int(&hp->cfg, hdim_n, 1, KVC_HP_MAX_DIM, hdim, &have));
    return copied_int(&hp->cfg, "linear_conv_kernel_dim", "short_conv_kernel_size", 2, 4, kernel);
}

/* BailingHybridConfig's rule without layer_types: the last layer of every layer_group_size (6 when absent) is an
 * MLA layer, the others Kimi Delta Attention. */
static kvc_status bailing_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    int64_t group = 6;
    KVC_TRY(kvci_json_int(&ctx->hp->cfg, "layer_group_size", 1, KVC_HP_MAX_LAYERS, &group, &(bool){false}));
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = (i + 1) % group == 0 ? KVC_LK_FULL : KVC_LK_STATE;
    return KVC_OK;
}

/* One of linear_attn_config's lists (counted from 1) marking its layers `kind`; a layer listed twice is refused. */
static kvc_status mark_list(const kvc_family_ctx *ctx, const kvc_json_obj *lin, const char *path, const char *key,
                            kvc_layer_kind kind, bool *seen, kvc_layer_kind *kinds) {
    const cJSON *list = NULL;
    KVC_TRY(kvci_json_array(lin, key, KVC_HP_MAX_LAYERS, &list, NULL));
    int64_t n = 0;
    for (const cJSON *e = list->child; e != NULL; e = e->next, n++) {
        char where[96];
        snprintf(where, sizeof where, "%s.%s[%lld]", path, key, (long long)n);
        int64_t layer = 0;
        KVC_TRY(kvci_json_int_value(e, where, 1, ctx->n_layers, &layer));
        if (seen[layer - 1])
            return kvci_fail(KVC_EINVAL, "%s: %s lists layer %lld twice (kda_layers and full_attn_layers together)",
                             ctx->hp->cfg.doc, where, (long long)layer);
        seen[layer - 1] = true;
        kinds[layer - 1] = kind;
    }
    return KVC_OK;
}

/* Without layer_types: linear_attn_config's kda_layers and full_attn_layers when it holds both (every layer in one of
 * them), else KimiLinearConfig's rule: layer i full when i > 0 and i % 4 == 0, else KDA. */
static kvc_status kimi_linear_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    if (is_bailing(ctx->hp)) return bailing_kinds(ctx, kinds);
    char path[64];
    kvc_json_obj lin;
    bool have = false;
    KVC_TRY(kvci_json_child(&ctx->hp->cfg, "linear_attn_config", path, sizeof path, &lin, &have));
    if (!have || kvci_json_missing(&lin, "kda_layers") || kvci_json_missing(&lin, "full_attn_layers")) {
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = i > 0 && i % 4 == 0 ? KVC_LK_FULL : KVC_LK_STATE;
        return KVC_OK;
    }
    bool seen[KVC_MODEL_MAX_LAYERS] = {false};
    KVC_TRY(mark_list(ctx, &lin, path, "full_attn_layers", KVC_LK_FULL, seen, kinds));
    KVC_TRY(mark_list(ctx, &lin, path, "kda_layers", KVC_LK_STATE, seen, kinds));
    for (int64_t i = 0; i < ctx->n_layers; i++)
        if (!seen[i])
            return kvci_fail(KVC_EINVAL, "%s: layer %lld is in neither %s.kda_layers nor %s.full_attn_layers",
                             ctx->hp->cfg.doc, (long long)(i + 1), path, path);
    return KVC_OK;
}

/* A KDA layer keeps the last short_conv_kernel_size - 1 inputs of its q, k and v convolutions (3 x num_heads x
 * head_dim channels), all the next token's convolutions read besides its own input, as the runtime stores them
 * (transformers' cache holds one column more, never read), and a head_dim x head_dim recurrent state per head. */
static kvc_status kimi_linear_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    (void)hidden_size;
    int64_t heads = 0, hdim = 0, kernel = 0, heads_r = 0;
    KVC_TRY(is_bailing(hp) ? bailing_sizes(hp, &heads, &hdim, &kernel) : kda_sizes(hp, &heads, &hdim, &kernel));
    KVC_TRY(kvci_family_split_tp(hp, "linear_num_heads", heads, tp, &heads_r));
    *s = (kvc_state_shapes){.n = 2,
                            .names = {"conv_state", "recurrent_state"},
                            .n_shape = {2, 3},
                            .shape = {{3 * heads_r * hdim, kernel - 1}, {heads_r, hdim, hdim}}};
    return KVC_OK;
}

/* An int under its saved name, else its other name, else def. */
static kvc_status opt_int2(const kvc_json_obj *c, const char *key, const char *other, int64_t def, int64_t lo,
                           int64_t *out) {
    return kvci_family_opt_int(c, kvci_json_missing(c, key) ? other : key, def, lo, KVC_HP_MAX_EXPERTS, out);
}

/* The MoE: mlp_layer_types, else the layers from first_k_dense_replace (1) on sparse; the router's keys. */
static kvc_status parse_moe(const kvc_json_obj *c, kvc_model_config *cfg) {
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, true};
    bool renorm = true;
    KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", 1, 0, KVC_HP_MAX_LAYERS, &cfg->first_k_dense_replace));
    KVC_TRY(kvci_family_mlp_layer_types(c, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 1024, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(opt_int2(c, "num_experts", "num_local_experts", 256, 1, &cfg->n_routed_experts));
    KVC_TRY(opt_int2(c, "num_experts_per_token", "num_experts_per_tok", 8, 1, &cfg->experts_per_tok));
    KVC_TRY(opt_int2(c, "num_shared_experts", "n_shared_experts", 1, 0, &cfg->n_shared_experts));
    KVC_TRY(opt_int2(c, "num_expert_group", "n_group", 1, 1, &cfg->n_group));
    KVC_TRY(kvci_family_opt_int(c, "topk_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(kvci_family_opt_bool(c, kvci_json_missing(c, "moe_renormalize") ? "norm_topk_prob" : "moe_renormalize",
                                 true, &renorm));
    cfg->norm_topk_prob = renorm;
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", 2.446, scale, &cfg->routed_scaling_factor));
    cfg->shared_expert_intermediate_size = cfg->n_shared_experts * cfg->moe_intermediate_size;
    return KVC_OK;
}

static kvc_status parse_kimi_linear(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    KVC_TRY(kvci_family_mla_attention(hp, cfg)); /* its RoPE: no rotation at all, the frequencies zeroed (weights.c) */
    cfg->attention_multiplier = 1.0 / sqrt((double)(cfg->qk_nope_head_dim + cfg->qk_rope_head_dim)); /* no mscale */
    /* hidden_act, also the KDA convolutions' activation, is silu or refused by name (config.c's read_act) */
    int64_t heads = 0, hdim = 0, kernel = 0;
    KVC_TRY(kda_sizes(hp, &heads, &hdim, &kernel));
    cfg->gdn_kda = true;
    cfg->gdn_k_heads = cfg->gdn_v_heads = heads;
    cfg->gdn_k_dim = cfg->gdn_v_dim = hdim;
    cfg->gdn_conv_kernel = kernel;
    return parse_moe(c, cfg);
}

/* Kimi Delta Attention on its layers, else MLA. */
static kvc_status kimi_linear_operator(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_gdn[l] ? kvci_kda(s, l) : kvci_attn_mla(s, l);
}

/* The sparse layers: DeepSeek-V3's routed and shared experts; the rest the dense MLP. */
static kvc_status kimi_linear_ffn(const kvc_fwd_step *s, int64_t l) {
    return s->m->layers[l].moe ? kvci_ffn_deepseek(s, l, false) : kvci_fwd_dense_mlp(s, l);
}

static const kvc_family_alias KIMI_LINEAR[] = {{"kimi_linear", "KimiLinearForCausalLM", "kimi_linear", true},
                                               {"bailing_hybrid", "BailingHybridForCausalLM", "bailing_hybrid", false}};

const kvc_family_desc kvc_family_kimi_linear = {
    .id = KVC_FAMILY_KIMI_LINEAR,
    .name = "kimi_linear",
    .aliases = KIMI_LINEAR,
    .n_aliases = 2,
    .mla = true,
    .rms_norm_eps = 1e-5,
    .parse = parse_kimi_linear,
    .check = kvci_family_check_grouped_router,
    .default_kinds = kimi_linear_kinds,
    .cache_dims = kvci_family_mla_cache_dims,
    .attention = kimi_linear_operator,
    .ffn = kimi_linear_ffn,
    .state_shapes = kimi_linear_states,
};
