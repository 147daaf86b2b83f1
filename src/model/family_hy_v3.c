/* Hy3 (tencent/Hy3-preview; model_type hy_v3, HYV3ForCausalLM; run by the dense family): Llama's pre-norm blocks
 * with Apertus's attention (per-head q/k RMSNorms before RoPE), q/k/v/o biases by attention_bias and the MLPs' by
 * mlp_bias (false); layers by mlp_layer_types (layer 0 "dense", the others "sparse" when absent): the dense SwiGLU MLP
 * of intermediate_size, or num_experts (192; num_local_experts) SwiGLU experts of moe_intermediate_size (1536) chosen
 * by DeepSeek-V3's sigmoid router with one group (the top num_experts_per_tok, 8, of the sigmoid scores plus the
 * correction bias, weighted by their renormalised scores times router_scaling_factor, 2.826) plus a shared SwiGLU
 * MLP of num_shared_experts (1) x moe_intermediate_size (none shared: intermediate_size, as HYV3MLP's `or` reads
 * it). HYV3Config's head_dim 128, 8 KV heads, theta 11158840, rms_norm_eps 1e-5 when absent, untied. Checkpoint
 * names (ckpt_names.c): mlp.router.gate, mlp.expert_bias, mlp.shared_mlp. Refused by name: a single expert (the
 * grouped router scores a group by its two best). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

kvc_status kvci_family_parse_hy_v3(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts[KVC_HP_ALIASES] = {"num_experts", "num_local_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, scale = {0.0, KVC_HP_MAX_FACTOR, true};
    bool bias = false;
    int64_t shared = 1;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->qk_norm = true;
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias));
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_expert_counts(c, experts, 192, top_k, 8, cfg));
    if (cfg->n_routed_experts < 2)
        return kvci_fail(KVC_EINVAL,
                         "%s: hy_v3 with num_experts 1 is not supported (the runtime's grouped router scores a group "
                         "by its two best experts)",
                         c->doc);
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 1536, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "num_shared_experts", 1, 0, KVC_HP_MAX_EXPERTS, &shared));
    cfg->shared_expert_intermediate_size = shared > 0 ? shared * cfg->moe_intermediate_size : cfg->intermediate_size;
    KVC_TRY(kvci_family_opt_num(c, "router_scaling_factor", 2.826, scale, &cfg->routed_scaling_factor));
    cfg->n_group = cfg->topk_group = 1, cfg->norm_topk_prob = true, cfg->first_k_dense_replace = 1;
    return kvci_family_mlp_layer_types(c, cfg);
}
