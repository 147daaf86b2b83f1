/* MLA models (MF 4.2 - 4.5): DeepSeek-V3 runs; DeepSeek-V2, V3.2 and Kimi-K2 are planned
 * only. Every layer is full attention over a latent cache (or, unabsorbed,
 * nH heads of dn + dr keys and dv values); the first first_k_dense_replace
 * layers are dense, the rest a grouped-routing MoE. */
#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

static kvc_status parse_deepseek(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, true};
    kvc_mla_dims d;
    KVC_TRY(kvci_hparams_read_mla(hp, &d));
    cfg->q_lora_rank = d.q_lora_rank;
    cfg->kv_lora_rank = d.kv_lora_rank;
    cfg->qk_nope_head_dim = d.qk_nope_head_dim;
    cfg->qk_rope_head_dim = d.qk_rope_head_dim;
    cfg->v_head_dim = d.v_head_dim;
    bool interleave = true;
    KVC_TRY(kvci_family_opt_bool(c, "rope_interleave", true, &interleave));
    cfg->rope_form = interleave ? KVC_ROPE_INTERLEAVED : KVC_ROPE_HALF;
    bool attn_bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &attn_bias));
    cfg->qkv_bias = cfg->o_bias = attn_bias;
    cfg->head_dim = cfg->qk_rope_head_dim;
    KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", 3, 0, KVC_HP_MAX_LAYERS, &cfg->first_k_dense_replace));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 2048, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "n_routed_experts", 256, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts));
    KVC_TRY(kvci_family_opt_int(c, "n_shared_experts", 1, 0, KVC_HP_MAX_EXPERTS, &cfg->n_shared_experts));
    KVC_TRY(kvci_family_opt_int(c, "num_experts_per_tok", 8, 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_int(c, "n_group", 8, 1, KVC_HP_MAX_EXPERTS, &cfg->n_group));
    KVC_TRY(kvci_family_opt_int(c, "topk_group", 4, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", 2.5, scale, &cfg->routed_scaling_factor));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = l >= cfg->first_k_dense_replace;
    cfg->shared_expert_intermediate_size = cfg->n_shared_experts * cfg->moe_intermediate_size;
    return KVC_OK;
}

/* MoE layers route each token to experts_per_tok of n_routed_experts in topk_group of n_group groups
 * (MF 4.5), with a finite scale on the routed weights. */
kvc_status kvci_family_check_grouped_router(const kvc_model_config *cfg, const char *doc) {
    if (!(cfg->routed_scaling_factor > 0.0 && cfg->routed_scaling_factor <= KVC_HP_MAX_FACTOR))
        return kvci_fail(KVC_EINVAL, "%s: routed_scaling_factor %g outside (0, %g]", doc, cfg->routed_scaling_factor,
                         KVC_HP_MAX_FACTOR);
    if (cfg->first_k_dense_replace >= cfg->num_layers) return KVC_OK;
    const int64_t E = cfg->n_routed_experts, g = cfg->n_group, tg = cfg->topk_group, k = cfg->experts_per_tok;
    if (E < 1 || g < 1 || tg < 1 || k < 1 || E % g != 0 || E / g < 2 || tg > g || k > tg * (E / g))
        return kvci_fail(KVC_EINVAL,
                         "%s: MoE routing sizes are inconsistent (n_routed_experts %lld, n_group %lld, topk_group "
                         "%lld, num_experts_per_tok %lld): need E %% n_group == 0, E/n_group >= 2, topk_group <= "
                         "n_group, k <= topk_group * E/n_group, all >= 1",
                         doc, (long long)E, (long long)g, (long long)tg, (long long)k);
    return KVC_OK;
}

/* The first first_k_dense_replace layers: the dense MLP; the rest: routed and shared experts. */
static kvc_status deepseek_ffn(const kvc_fwd_step *s, int64_t l) {
    return s->m->layers[l].moe ? kvci_ffn_deepseek(s, l) : kvci_fwd_dense_mlp(s, l);
}

static const kvc_family_alias ALIASES[] = {
    {"deepseek_v2", "DeepseekV2ForCausalLM", "deepseek_v2", false},
    {"deepseek_v3", "DeepseekV3ForCausalLM", "deepseek_v3", true},
    {"deepseek_v32", "DeepseekV32ForCausalLM", "deepseek_v32", false},
    {"kimi_k2", NULL, "kimi_k2", false},
};

const kvc_family_desc kvc_family_deepseek_v3 = {
    .id = KVC_FAMILY_DEEPSEEK_V3,
    .name = "deepseek_v3",
    .aliases = ALIASES,
    .n_aliases = sizeof ALIASES / sizeof ALIASES[0],
    .mla = true,
    .parse = parse_deepseek,
    .check = kvci_family_check_grouped_router,
    .default_kinds = kvci_family_full_kinds,
    .cache_dims = kvci_family_mla_cache_dims,
    .attention = kvci_attn_mla,
    .ffn = deepseek_ffn,
};
