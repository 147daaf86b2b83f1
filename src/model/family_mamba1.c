/* The Mamba-1 family: MambaForCausalLM (MambaConfig) and FalconMambaForCausalLM (FalconMambaConfig), a
 * selective-scan mixer (mamba1.c) with its pre-norm and residual in every layer (config.c: layer_no_ffn), and Jamba
 * (JambaForCausalLM: Mamba-1 layers, an attention layer every attn_layer_period from attn_layer_offset, experts or a
 * dense MLP after each). Their
 * state caches per sequence and tensor-parallel rank: the last conv_kernel - 1 inputs of the I = expand x
 * hidden_size conv channels (as vLLM and the runtime keep them; transformers' cache holds one column more, never
 * read) and the [I, state_size] ssm state. Every size read is at most 2^16 (KVC_HP_MAX_DIM) and hidden_size at
 * most 2^20: no product here can overflow. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* MambaForCausalLM or FalconMambaForCausalLM (by model_type, else by architecture): no attention, every layer a
 * mixer, the keys without Jamba's mamba_ prefix. */
static bool plain_mamba(const kvc_hparams *hp) {
    const char *t = hp->model_type, *a = hp->architecture;
    if (t != NULL) return strcmp(t, "mamba") == 0 || strcmp(t, "falcon_mamba") == 0;
    return a != NULL && (strcmp(a, "MambaForCausalLM") == 0 || strcmp(a, "FalconMambaForCausalLM") == 0);
}

static kvc_status mamba1_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    if (plain_mamba(ctx->hp)) {
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_STATE;
        return KVC_OK;
    }
    if (kvci_is_zamba(ctx->hp)) return kvci_zamba_kinds(ctx, kinds); /* hybrid layers: the shared block too */
    int64_t period = 8, offset = 4;                                  /* JambaConfig's */
    KVC_TRY(kvci_family_opt_int(cfg, "attn_layer_period", 8, 1, KVC_HP_MAX_LAYERS, &period));
    KVC_TRY(kvci_family_opt_int(cfg, "attn_layer_offset", 4, 0, KVC_HP_MAX_LAYERS, &offset));
    if (offset >= period)
        return kvci_fail(KVC_EINVAL, "%s: attn_layer_offset %lld must be in [0, attn_layer_period %lld)", cfg->doc,
                         (long long)offset, (long long)period);
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = i % period == offset ? KVC_LK_FULL : KVC_LK_STATE;
    return KVC_OK;
}

/* Mamba's and FalconMamba's mixer width: intermediate_size as the file gives it, else expand (2) x hidden_size
 * (MambaConfig's __post_init__ sets the product, then the file's key, when there is one, overrides it). */
static kvc_status plain_inner(const kvc_json_obj *c, int64_t hidden_size, int64_t *inner) {
    int64_t expand = 2;
    bool have = false;
    KVC_TRY(kvci_family_opt_int(c, "expand", 2, 1, KVC_HP_MAX_DIM, &expand));
    *inner = expand * hidden_size; /* each below 2^20: no overflow */
    return kvci_json_int(c, "intermediate_size", 1, KVC_HP_MAX_WIDTH, inner, &have);
}

/* The state sizes with their config classes' defaults: Mamba's and FalconMamba's state_size (16), conv_kernel (4),
 * width (plain_inner); Jamba's mamba_d_state, mamba_d_conv, mamba_expand (16, 4, 2). */
static kvc_status mamba1_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    const kvc_json_obj *cfg = &hp->cfg;
    int64_t state = 16, conv = 4, expand = 2, inner = 0, inner_r = 0;
    if (hidden_size < 1)
        return kvci_fail(KVC_EINVAL, "%s: hidden_size is missing (Mamba layers are expand * hidden_size wide)",
                         cfg->doc);
    if (plain_mamba(hp)) {
        KVC_TRY(kvci_family_opt_int(cfg, "state_size", 16, 1, KVC_HP_MAX_DIM, &state));
        KVC_TRY(kvci_family_opt_int(cfg, "conv_kernel", 4, 2, KVC_HP_MAX_DIM, &conv));
        KVC_TRY(plain_inner(cfg, hidden_size, &inner));
    } else {
        KVC_TRY(kvci_family_opt_int(cfg, "mamba_d_state", 16, 1, KVC_HP_MAX_DIM, &state));
        KVC_TRY(kvci_family_opt_int(cfg, "mamba_d_conv", 4, 2, KVC_HP_MAX_DIM, &conv));
        KVC_TRY(kvci_family_opt_int(cfg, "mamba_expand", 2, 1, KVC_HP_MAX_DIM, &expand));
        inner = expand * hidden_size;
    }
    KVC_TRY(kvci_family_split_tp(hp, "the mixer's width", inner, tp, &inner_r));
    *s = (kvc_state_shapes){.n = 2,
                            .names = {"conv_state", "ssm_state"},
                            .n_shape = {2, 2},
                            .shape = {{inner_r, conv - 1}, {inner_r, state}}};
    return KVC_OK;
}

/* key (time_step_rank, Jamba's and Zamba's mamba_dt_rank): a rank, or "auto" (the default): ceil(hidden_size / 16). */
static kvc_status read_dt_rank(const kvc_json_obj *c, const char *key, kvc_model_config *cfg) {
    const cJSON *v = kvci_json_find(c, key);
    if (v == NULL || (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0)) {
        cfg->mamba_dt_rank = (cfg->hidden_size + 15) / 16;
        return KVC_OK;
    }
    return kvci_json_int_value(v, key, 1, KVC_HP_MAX_DIM, &cfg->mamba_dt_rank);
}

kvc_status kvci_mamba1_prefixed_keys(const kvc_json_obj *c, kvc_model_config *cfg) {
    int64_t expand = 2;
    KVC_TRY(kvci_family_opt_int(c, "mamba_expand", 2, 1, KVC_HP_MAX_DIM, &expand));
    KVC_TRY(kvci_family_opt_int(c, "mamba_d_state", 16, 1, KVC_HP_MAX_DIM, &cfg->mamba_d_state));
    KVC_TRY(kvci_family_opt_int(c, "mamba_d_conv", 4, 2, KVC_HP_MAX_DIM, &cfg->conv_kernel));
    KVC_TRY(kvci_family_opt_bool(c, "mamba_conv_bias", true, &cfg->mamba_conv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "mamba_proj_bias", false, &cfg->mamba_proj_bias));
    KVC_TRY(read_dt_rank(c, "mamba_dt_rank", cfg));
    cfg->mamba_inner = expand * cfg->hidden_size; /* each below 2^20: no overflow */
    return KVC_OK;
}

/* Jamba (JambaConfig): the mixer's keys mamba_d_state (16), mamba_d_conv (4), mamba_expand (2), mamba_dt_rank
 * ("auto"), mamba_conv_bias (true), mamba_proj_bias (false), its dt / B / C norms with weights and rms_norm_eps
 * (1e-6, every norm's); attention without positions or biases (head_dim: hidden_size / heads); num_experts (16) of
 * intermediate_size on every expert_layer_period-th layer (2) from expert_layer_offset (1) when num_experts > 1,
 * routed by the top num_experts_per_tok (2) of a softmax, the weights not renormalised; the dense SwiGLU MLP
 * elsewhere; untied (tie_word_embeddings false). use_mamba_kernels, use_mambapy and use_associative_scan choose
 * kernels or training paths only. */
static kvc_status parse_jamba(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_experts", "num_local_experts"};
    const kvc_json_range eps = {0.0, 1.0, false};
    int64_t experts = 16, period = 2, offset = 1;
    bool have = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_mamba1_prefixed_keys(c, cfg));
    cfg->mamba_bcdt_norm = true, cfg->mamba_bcdt_eps = cfg->rms_norm_eps;
    KVC_TRY(kvci_hparams_int(c, experts_n, 1, KVC_HP_MAX_EXPERTS, &experts, &have));
    KVC_TRY(kvci_family_opt_int(c, "num_experts_per_tok", 2, 1, experts, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_int(c, "expert_layer_period", 2, 1, KVC_HP_MAX_LAYERS, &period));
    KVC_TRY(kvci_family_opt_int(c, "expert_layer_offset", 1, 0, KVC_HP_MAX_LAYERS, &offset));
    cfg->qkv_bias = cfg->o_bias = false;
    for (int64_t l = 0; l < cfg->num_layers; l++) {
        cfg->layer_nope[l] = true;
        cfg->layer_moe[l] = experts > 1 && l % period == offset;
    }
    if (experts > 1) cfg->n_routed_experts = experts, cfg->moe_intermediate_size = cfg->intermediate_size;
    cfg->norm_topk_prob = false;
    return KVC_OK;
}

/* MambaForCausalLM / FalconMambaForCausalLM: intermediate_size channels, expand (2) x hidden_size when the key is
 * absent (plain_inner: transformers keeps the file's intermediate_size over the product), state_size (16), conv_kernel
 * (4), time_step_rank ("auto"), use_conv_bias (true), use_bias on in_proj / out_proj (false), hidden_act silu (the
 * mixer's activation; config.c refuses any other), layer_norm_epsilon (1e-5), tie_word_embeddings (true); FalconMamba's
 * weightless norms of dt, B and C after x_proj with mixer_rms_eps (1e-6). residual_in_fp32 changes nothing here (the
 * runtime's residual is f32); use_mambapy, use_associative_scan and the time_step_* init keys only choose training
 * paths and initial weights. No attention: its dims are the smallest the checks take (1 head of 2). */
static kvc_status parse_mamba1(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    if (strcmp(cfg->model_type, "jamba") == 0) return parse_jamba(hp, cfg);
    if (strcmp(cfg->model_type, "zamba") == 0) return kvci_zamba_parse(hp, cfg);
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    KVC_TRY(plain_inner(c, cfg->hidden_size, &cfg->mamba_inner));
    KVC_TRY(kvci_family_opt_int(c, "state_size", 16, 1, KVC_HP_MAX_DIM, &cfg->mamba_d_state));
    KVC_TRY(kvci_family_opt_int(c, "conv_kernel", 4, 2, KVC_HP_MAX_DIM, &cfg->conv_kernel));
    KVC_TRY(kvci_family_opt_bool(c, "use_conv_bias", true, &cfg->mamba_conv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "use_bias", false, &cfg->mamba_proj_bias));
    KVC_TRY(kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(read_dt_rank(c, "time_step_rank", cfg));
    cfg->mamba_bcdt_norm = strcmp(cfg->model_type, "falcon_mamba") == 0;
    if (cfg->mamba_bcdt_norm) KVC_TRY(kvci_family_opt_num(c, "mixer_rms_eps", 1e-6, eps, &cfg->mamba_bcdt_eps));
    cfg->num_heads = cfg->num_kv_heads = 1, cfg->head_dim = 2;
    return KVC_OK;
}

/* A caller's own struct (kvc_model_create_random) too: the mixer's sizes within the reader's bounds. */
static kvc_status check_mamba1(const kvc_model_config *c, const char *doc) {
    bool any = false;
    for (int64_t l = 0; l < c->num_layers; l++) any |= c->layer_mamba1[l];
    if (!any) return KVC_OK;
    if (c->mamba_inner < 1 || c->mamba_inner > ((int64_t)KVC_HP_MAX_DIM << 20) || c->mamba_dt_rank < 1 ||
        c->mamba_dt_rank > KVC_HP_MAX_DIM || c->mamba_d_state < 1 || c->mamba_d_state > KVC_HP_MAX_DIM ||
        c->conv_kernel < 2 || c->conv_kernel > KVC_HP_MAX_DIM ||
        !(c->mamba_bcdt_eps >= 0.0 && c->mamba_bcdt_eps <= 1.0))
        return kvci_fail(KVC_EINVAL,
                         "%s: mamba_inner %lld, mamba_dt_rank %lld, mamba_d_state %lld, conv_kernel %lld or "
                         "mamba_bcdt_eps %g outside the reader's bounds",
                         doc, (long long)c->mamba_inner, (long long)c->mamba_dt_rank, (long long)c->mamba_d_state,
                         (long long)c->conv_kernel, c->mamba_bcdt_eps);
    /* Zamba's heads: whole channels each, and only with its shared block (which has no tensor-parallel rule) */
    if (c->mamba_heads < 0 || (c->mamba_heads > 0 && (c->mamba_inner % c->mamba_heads != 0 || c->num_mem_blocks != 1)))
        return kvci_fail(KVC_EINVAL,
                         "%s: mamba_heads %lld on Mamba-1 layers must be 0, or divide mamba_inner %lld with "
                         "num_mem_blocks 1 (zamba's)",
                         doc, (long long)c->mamba_heads, (long long)c->mamba_inner);
    return KVC_OK;
}

static kvc_status mamba1_operator(const kvc_fwd_step *s, int64_t l) {
    if (s->m->cfg.num_mem_blocks > 0) return kvci_zamba_layer(s, l); /* Zamba: hybrid layers' shared block too */
    return s->m->cfg.layer_mamba1[l] ? kvci_mamba1_mixer(s, l) : kvci_attn_gqa(s, l);
}

/* Jamba's feed-forward: its experts (softmax top-k, not renormalised) or the dense SwiGLU MLP. */
static kvc_status mamba1_ffn(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_moe[l] ? kvci_ffn_softmax_moe(s, l) : kvci_fwd_dense_mlp(s, l);
}

static const kvc_family_alias MAMBA1[] = {{"mamba", "MambaForCausalLM", "mamba", true},
                                          {"falcon_mamba", "FalconMambaForCausalLM", "falcon_mamba", true},
                                          {"jamba", "JambaForCausalLM", "jamba", true},
                                          {"zamba", "ZambaForCausalLM", "zamba", true}};

const kvc_family_desc kvc_family_jamba = {
    .id = KVC_FAMILY_JAMBA,
    .name = "jamba",
    .aliases = MAMBA1,
    .n_aliases = 4,
    .rms_norm_eps = 1e-6,
    .parse = parse_mamba1,
    .check = check_mamba1,
    .default_kinds = mamba1_kinds,
    .softmax_scale = kvci_zamba_softmax_scale,
    .attention = mamba1_operator,
    .ffn = mamba1_ffn,
    .state_shapes = mamba1_states,
};
