/* The Mamba2 hybrids' runtime keys (transformers 5): Bamba (BambaConfig: mamba_* keys, attn_layer_indices, RoPE
 * over half of each attention head, a SwiGLU MLP after every mixer) and Granite 4.0-H (GraniteMoeHybridConfig: the
 * same mamba_* keys, layer_types, Granite's multipliers, RoPE only with position_embedding_type "rope", routed
 * experts beside a shared MLP after every mixer), Nemotron-H's (with its experts), Mamba2's and the mixer's keys of
 * Falcon-H1 (its own: family_falcon_h1.c). The layer kinds and the planner's state shapes are family_hybrid.c's; the
 * mixer is mamba2.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* One bound of time_step_limit: a number, or an infinity as transformers 5 saves it ({"__float__": "Infinity"} or
 * "-Infinity"; transformers 4 wrote a bare Infinity, which the reader takes as a number). */
static bool limit_value(const cJSON *v, double *out) {
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return !isnan(*out);
    }
    const cJSON *f = cJSON_IsObject(v) && v->child && !v->child->next ? v->child : NULL;
    if (!f || strcmp(f->string, "__float__") != 0 || !cJSON_IsString(f)) return false;
    const bool neg = strcmp(f->valuestring, "-Infinity") == 0;
    *out = neg ? -INFINITY : INFINITY;
    return neg || strcmp(f->valuestring, "Infinity") == 0;
}

/* time_step_limit: [min, max] dt is clamped to, (0, inf) when absent; null (transformers' None) is refused, as
 * its scan cannot run without one. */
static kvc_status read_dt_limit(const kvc_json_obj *c, kvc_model_config *cfg) {
    cfg->mamba_dt_min = 0.0, cfg->mamba_dt_max = INFINITY;
    const cJSON *lim = kvci_json_find(c, "time_step_limit");
    if (lim == NULL && !kvci_json_missing(c, "time_step_limit"))
        return kvci_fail(KVC_EINVAL, "%s: time_step_limit null: transformers' scan needs [min, max]", c->doc);
    if (lim == NULL) return KVC_OK;
    const cJSON *a = cJSON_IsArray(lim) ? lim->child : NULL, *b = a ? a->next : NULL;
    double lo = 0.0, hi = 0.0;
    if (!a || !b || b->next || !limit_value(a, &lo) || !limit_value(b, &hi) || lo > hi)
        return kvci_fail(KVC_EINVAL, "%s: time_step_limit must be [min, max], two numbers with min <= max", c->doc);
    cfg->mamba_dt_min = lo, cfg->mamba_dt_max = hi;
    return KVC_OK;
}

static bool granite_hybrid(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "granitemoehybrid") == 0; }

/* Granite 4.0-H beyond the mixer's keys: Granite's multipliers; RoPE on every attention layer only when
 * position_embedding_type is "rope" (absent, null or "nope": no positions at all, as GraniteMoeHybridModel builds
 * no rotary embedding then); num_local_experts routed experts (8 when absent, top num_experts_per_tok, 2) of
 * intermediate_size on every layer, each beside the shared MLP of shared_intermediate_size (1024), or with
 * num_local_experts 0 the shared MLP alone (the dense MLP of that width); no biases but attention_bias's on q/k/v/o;
 * rms_norm_eps 1e-6 when absent. */
static kvc_status parse_granite_hybrid(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const char *pos = NULL;
    bool have = false, bias = false;
    KVC_TRY(kvci_family_parse_granite_scales(hp, cfg));
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_json_str(c, "position_embedding_type", KVC_HP_NAME_MAX, &pos, &have));
    if (have && pos != NULL && strcmp(pos, "rope") != 0 && strcmp(pos, "nope") != 0)
        return kvci_fail(KVC_EINVAL, "%s: position_embedding_type \"%s\" is not \"rope\" or \"nope\"", c->doc, pos);
    const bool rope = have && pos != NULL && strcmp(pos, "rope") == 0;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = !rope;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false;
    KVC_TRY(kvci_family_opt_int(c, "num_local_experts", 8, 0, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts));
    int64_t shared = 1024;
    KVC_TRY(kvci_family_opt_int(c, "shared_intermediate_size", 1024, 1, KVC_HP_MAX_WIDTH, &shared));
    if (cfg->n_routed_experts == 0) { /* the shared MLP alone: the dense MLP of its width (Granite 4.0-H-Micro) */
        cfg->intermediate_size = shared;
        return KVC_OK;
    }
    KVC_TRY(kvci_family_opt_int(c, "num_experts_per_tok", 2, 1, cfg->n_routed_experts, &cfg->experts_per_tok));
    cfg->shared_expert_intermediate_size = shared, cfg->moe_intermediate_size = cfg->intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    return KVC_OK;
}

kvc_status kvci_mamba2_only_value(const kvc_json_obj *c, const char *type, const char *key, const char *want) {
    const char *v = NULL;
    bool have = false;
    KVC_TRY(kvci_json_str(c, key, KVC_HP_NAME_MAX, &v, &have));
    if (have && (v == NULL || strcmp(v, want) != 0))
        return kvci_fail(KVC_EINVAL, "%s: %s \"%s\" is not supported (%s: %s)", c->doc, key, v ? v : "null", type,
                         want);
    return KVC_OK;
}

static bool falcon_h1(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "falcon_h1") == 0; }

/* mamba_d_head: a head width, or "auto" (the default): the mixer's width over its heads. */
static kvc_status read_head_dim(const kvc_json_obj *c, int64_t inner, kvc_mamba2_dims *d) {
    const cJSON *v = kvci_json_find(c, "mamba_d_head");
    if (v == NULL || (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0)) {
        d->head_dim = inner / d->heads;
        return KVC_OK;
    }
    return kvci_json_int_value(v, "mamba_d_head", 1, KVC_HP_MAX_DIM, &d->head_dim);
}

/* The mixer's width: Falcon-H1's mamba_d_ssm (1024 when absent; null: as the others), else mamba_expand *
 * hidden_size. */
static kvc_status mixer_width(const kvc_json_obj *c, bool falcon, int64_t hidden, int64_t expand, int64_t *inner) {
    *inner = expand * hidden; /* each below 2^20: no overflow */
    if (!falcon) return KVC_OK;
    const cJSON *d = kvci_json_find(c, "mamba_d_ssm");
    if (kvci_json_missing(c, "mamba_d_ssm")) *inner = 1024;
    return d != NULL && !cJSON_IsNull(d) ? kvci_json_int_value(d, "mamba_d_ssm", 1, KVC_HP_MAX_WIDTH, inner) : KVC_OK;
}

/* Mamba2ForCausalLM's keys (no mamba_ prefix), Mamba2Config's defaults. */
static kvc_status plain_dims(const kvc_json_obj *c, int64_t hidden, kvc_mamba2_dims *d) {
    int64_t expand = 2;
    KVC_TRY(kvci_family_opt_int(c, "num_heads", 128, 1, KVC_HP_MAX_DIM, &d->heads));
    KVC_TRY(kvci_family_opt_int(c, "head_dim", 64, 1, KVC_HP_MAX_DIM, &d->head_dim));
    KVC_TRY(kvci_family_opt_int(c, "expand", 2, 1, KVC_HP_MAX_DIM, &expand));
    KVC_TRY(kvci_family_opt_int(c, "n_groups", 8, 1, KVC_HP_MAX_DIM, &d->groups));
    KVC_TRY(kvci_family_opt_int(c, "state_size", 128, 1, KVC_HP_MAX_DIM, &d->state));
    KVC_TRY(kvci_family_opt_int(c, "conv_kernel", 4, 2, KVC_HP_MAX_DIM, &d->conv));
    if (d->heads * d->head_dim != expand * hidden) /* each below 2^20: no overflow */
        return kvci_fail(KVC_EINVAL, "%s: num_heads %lld x head_dim %lld is not expand * hidden_size %lld", c->doc,
                         (long long)d->heads, (long long)d->head_dim, (long long)(expand * hidden));
    if (d->heads % d->groups != 0)
        return kvci_fail(KVC_EINVAL, "%s: n_groups %lld does not divide num_heads %lld", c->doc, (long long)d->groups,
                         (long long)d->heads);
    return KVC_OK;
}

/* NemotronHConfig's keys (either name of groups and of the conv width) and defaults; expand is not read. */
static kvc_status nemotron_dims(const kvc_json_obj *c, kvc_mamba2_dims *d) {
    static const char *const groups_n[KVC_HP_ALIASES] = {"n_groups", "mamba_n_groups"};
    static const char *const conv_n[KVC_HP_ALIASES] = {"conv_kernel", "mamba_d_conv"};
    bool have = false;
    KVC_TRY(kvci_family_opt_int(c, "mamba_num_heads", 128, 1, KVC_HP_MAX_DIM, &d->heads));
    KVC_TRY(kvci_family_opt_int(c, "mamba_head_dim", 64, 1, KVC_HP_MAX_DIM, &d->head_dim));
    d->groups = 8, d->conv = 4;
    KVC_TRY(kvci_hparams_int(c, groups_n, 1, KVC_HP_MAX_DIM, &d->groups, &have));
    KVC_TRY(kvci_hparams_int(c, conv_n, 2, KVC_HP_MAX_DIM, &d->conv, &have));
    KVC_TRY(kvci_family_opt_int(c, "ssm_state_size", 128, 1, KVC_HP_MAX_DIM, &d->state));
    if (d->heads % d->groups != 0)
        return kvci_fail(KVC_EINVAL, "%s: n_groups %lld does not divide mamba_num_heads %lld", c->doc,
                         (long long)d->groups, (long long)d->heads);
    return KVC_OK;
}

kvc_status kvci_mamba2_dims(const kvc_json_obj *c, const char *type, int64_t hidden, kvc_mamba2_dims *d) {
    *d = (kvc_mamba2_dims){0};
    if (strcmp(type, "mamba2") == 0) return plain_dims(c, hidden, d);
    if (strcmp(type, "nemotron_h") == 0) return nemotron_dims(c, d);
    const bool falcon = strcmp(type, "falcon_h1") == 0;
    int64_t expand = 2, inner = 0;
    KVC_TRY(kvci_family_opt_int(c, "mamba_n_heads", 128, 1, KVC_HP_MAX_DIM, &d->heads));
    KVC_TRY(kvci_family_opt_int(c, "mamba_n_groups", 1, 1, KVC_HP_MAX_DIM, &d->groups));
    KVC_TRY(kvci_family_opt_int(c, "mamba_d_state", 256, 1, KVC_HP_MAX_DIM, &d->state));
    KVC_TRY(kvci_family_opt_int(c, "mamba_d_conv", 4, 2, KVC_HP_MAX_DIM, &d->conv));
    KVC_TRY(kvci_family_opt_int(c, "mamba_expand", 2, 1, KVC_HP_MAX_DIM, &expand));
    KVC_TRY(mixer_width(c, falcon, hidden, expand, &inner));
    const char *width = falcon ? "mamba_d_ssm" : "mamba_expand * hidden_size";
    if (inner % d->heads != 0)
        return kvci_fail(KVC_EINVAL, "%s: mamba_n_heads %lld does not divide %s %lld", c->doc, (long long)d->heads,
                         width, (long long)inner);
    KVC_TRY(read_head_dim(c, inner, d));
    if (d->head_dim * d->heads != inner)
        return kvci_fail(KVC_EINVAL, "%s: mamba_d_head %lld x mamba_n_heads %lld is not %s %lld", c->doc,
                         (long long)d->head_dim, (long long)d->heads, width, (long long)inner);
    if (d->heads % d->groups != 0)
        return kvci_fail(KVC_EINVAL, "%s: mamba_n_groups %lld does not divide mamba_n_heads %lld", c->doc,
                         (long long)d->groups, (long long)d->heads);
    return KVC_OK;
}

/* The mixer's dims into cfg. */
static kvc_status read_dims(const kvc_json_obj *c, kvc_model_config *cfg) {
    kvc_mamba2_dims d;
    KVC_TRY(kvci_mamba2_dims(c, cfg->model_type, cfg->hidden_size, &d));
    cfg->mamba_heads = d.heads, cfg->mamba_head_dim = d.head_dim, cfg->mamba_groups = d.groups;
    cfg->mamba_d_state = d.state, cfg->conv_kernel = d.conv;
    return KVC_OK;
}

/* Marks Nemotron-H's expert layers ("moe" in layers_block_type, else "E" in hybrid_override_pattern; the layer
 * kinds, family_hybrid.c, check both against num_hidden_layers) in layer_moe; *any: whether there is one. */
static void mark_experts(const kvc_json_obj *c, kvc_model_config *cfg, bool *any) {
    const cJSON *list = kvci_json_find(c, "layers_block_type"), *pat = kvci_json_find(c, "hybrid_override_pattern");
    const char *p = cJSON_IsString(pat) && !cJSON_IsArray(list) ? pat->valuestring : "";
    const cJSON *e = cJSON_IsArray(list) ? list->child : NULL;
    *any = false;
    for (int64_t l = 0; l < cfg->num_layers; l++) {
        const bool moe = e ? cJSON_IsString(e) && strcmp(e->valuestring, "moe") == 0 : p[0] == 'E';
        cfg->layer_moe[l] = moe, *any |= moe;
        if (e) e = e->next;
        if (*p) p++;
    }
}

/* Nemotron-H's experts (NemotronHMoE): n_routed_experts (8, or num_local_experts) ungated relu2 experts of
 * moe_intermediate_size (7688), num_experts_per_tok (2) of them by DeepseekV3's grouped sigmoid router (n_group 1,
 * topk_group 1, norm_topk_prob true, routed_scaling_factor 1.0, e_score_correction_bias), beside the shared relu2
 * MLP of moe_shared_expert_intermediate_size (7688); moe_latent_size (null: none) the experts' width between the
 * latent projections. n_shared_experts and moe_shared_expert_overlap are not read by transformers' block. */
static kvc_status parse_nemotron_experts(const kvc_json_obj *c, kvc_model_config *cfg) {
    static const char *const experts_n[KVC_HP_ALIASES] = {"n_routed_experts", "num_local_experts"};
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, true};
    bool any = false, have = false;
    mark_experts(c, cfg, &any);
    cfg->first_k_dense_replace = any ? 0 : cfg->num_layers;
    if (!any) return KVC_OK;
    cfg->n_routed_experts = 8;
    KVC_TRY(kvci_hparams_int(c, experts_n, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts, &have));
    KVC_TRY(kvci_family_opt_int(c, "num_experts_per_tok", 2, 1, cfg->n_routed_experts, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 7688, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "moe_shared_expert_intermediate_size", 7688, 1, KVC_HP_MAX_WIDTH,
                                &cfg->shared_expert_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "n_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->n_group));
    KVC_TRY(kvci_family_opt_int(c, "topk_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", 1.0, scale, &cfg->routed_scaling_factor));
    const cJSON *lat = kvci_json_find(c, "moe_latent_size");
    if (lat != NULL && !cJSON_IsNull(lat))
        KVC_TRY(kvci_json_int_value(lat, "moe_latent_size", 1, KVC_HP_MAX_DIM, &cfg->moe_latent_size));
    return kvci_family_check_grouped_router(cfg, c->doc);
}

/* Nemotron-H (NemotronHConfig): one block per layer (config.c: layer_no_mixer / layer_no_ffn); the mixer of
 * mamba_num_heads (128) heads of mamba_head_dim (64), whatever expand says, n_groups (8, or mamba_n_groups),
 * ssm_state_size (128), conv_kernel (4, or mamba_d_conv), use_conv_bias (true), use_bias on in_proj / out_proj
 * (false), its gated norm in n_groups groups; attention without positions and without biases (attention_bias is
 * not read by its attention); the MLP up_proj, relu2, down_proj (mlp_bias); every norm layer_norm_epsilon (1e-5);
 * its own lm_head even under tie_word_embeddings true (transformers 5.25 ties nothing for this class).
 * residual_in_fp32 changes nothing here (the runtime's residual is f32). */
static kvc_status parse_nemotron_h(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(parse_nemotron_experts(c, cfg));
    KVC_TRY(kvci_mamba2_only_value(c, cfg->model_type, "mamba_hidden_act", "silu"));
    KVC_TRY(kvci_mamba2_only_value(c, cfg->model_type, "mlp_hidden_act", "relu2"));
    KVC_TRY(kvci_family_opt_int(c, "head_dim", 128, 1, KVC_HP_MAX_DIM, &cfg->head_dim)); /* not hidden / heads */
    cfg->tie_word_embeddings = false; /* NemotronHForCausalLM ties nothing, whatever tie_word_embeddings says */
    KVC_TRY(read_dims(c, cfg));
    KVC_TRY(kvci_family_opt_bool(c, "use_conv_bias", true, &cfg->mamba_conv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "use_bias", false, &cfg->mamba_proj_bias));
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias));
    KVC_TRY(kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps));
    cfg->mlp_plain = true, cfg->mlp_act = KVC_MLP_RELU2;
    cfg->qkv_bias = cfg->o_bias = false;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    return read_dt_limit(c, cfg);
}

/* Mamba2ForCausalLM (Mamba2Config): a mixer in every layer, its pre-norm `norm` and residual (config.c:
 * layer_no_ffn); num_heads (128) heads of head_dim (64) filling expand (2) x hidden_size, n_groups (8), state_size
 * (128), conv_kernel (4), use_conv_bias (true), use_bias on in_proj / out_proj (false), hidden_act silu,
 * layer_norm_epsilon (1e-5), tie_word_embeddings (false; honoured: the class ties lm_head to the embeddings).
 * residual_in_fp32 changes nothing here. No attention: its dims are the smallest the checks take (1 head of 2). */
static kvc_status parse_plain_mamba2(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_mamba2_only_value(c, cfg->model_type, "hidden_act", "silu"));
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    KVC_TRY(read_dims(c, cfg));
    KVC_TRY(kvci_family_opt_bool(c, "use_conv_bias", true, &cfg->mamba_conv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "use_bias", false, &cfg->mamba_proj_bias));
    KVC_TRY(kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps));
    cfg->num_heads = cfg->num_kv_heads = 1, cfg->head_dim = 2;
    return read_dt_limit(c, cfg);
}

kvc_status kvci_family_parse_mamba2(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    if (strcmp(cfg->model_type, "nemotron_h") == 0) return parse_nemotron_h(hp, cfg);
    if (strcmp(cfg->model_type, "mamba2") == 0) return parse_plain_mamba2(hp, cfg);
    if (strcmp(cfg->model_type, "zamba2") == 0) return kvci_zamba2_parse(hp, cfg);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* the attention layers': head_dim or hidden / heads */
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    KVC_TRY(read_dims(c, cfg));
    KVC_TRY(kvci_family_opt_bool(c, "mamba_conv_bias", true, &cfg->mamba_conv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "mamba_proj_bias", false, &cfg->mamba_proj_bias));
    KVC_TRY(read_dt_limit(c, cfg));
    if (granite_hybrid(cfg)) return parse_granite_hybrid(hp, cfg);
    if (falcon_h1(cfg)) return kvci_falcon_h1_parse(c, cfg);
    cfg->rope.partial_rotary_factor = 0.5; /* BambaConfig sets it whatever the file says */
    /* BambaAttention's q/k/v/o take attention_bias, BambaMLP's gate/up/down mlp_bias (both false) */
    bool bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias;
    return kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias);
}

kvc_status kvci_mamba2_ffn(const kvc_fwd_step *s, int64_t l) {
    if (s->m->cfg.mamba_parallel_attn) return kvci_falcon_h1_mlp(s, l);
    if (!s->m->cfg.layer_moe[l]) return kvci_fwd_dense_mlp(s, l);
    return granite_hybrid(&s->m->cfg) ? kvci_ffn_granite_moe(s, l) : kvci_ffn_deepseek(s, l, false);
}

kvc_status kvci_mamba2_softmax_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale) {
    if (kvci_is_zamba2(ctx->hp)) return kvci_zamba_softmax_scale(ctx, head_dim, scale);
    const char *mt = ctx->hp->model_type;
    *scale = mt && strcmp(mt, "granitemoehybrid") == 0 ? 1.0 : 1.0 / sqrt((double)head_dim);
    return KVC_OK;
}

kvc_status kvci_mamba2_operator(const kvc_fwd_step *s, int64_t l) {
    if (s->m->cfg.num_mem_blocks > 0) return kvci_zamba_layer(s, l); /* Zamba2: hybrid layers' shared block too */
    if (s->m->cfg.layer_mamba[l] && s->m->cfg.mamba_parallel_attn) return kvci_falcon_h1_layer(s, l);
    return s->m->cfg.layer_mamba[l] ? kvci_mamba2_mixer(s, l) : kvci_attn_gqa(s, l);
}
