/* Mellum (JetBrains/Mellum-*, MellumForCausalLM; model_type mellum; run by the dense family): Qwen3-MoE's attention
 * (per-head q/k RMSNorms before RoPE, q/k/v/o biases by attention_bias, false) of head_dim (128) over
 * num_key_value_heads (4) KV heads, whole heads rotated half-split, each layer kind its own rope (rope_parameters per
 * layer type; without them MellumConfig's theta 5e5 full, 1e4 sliding); layers by layer_types, else every layer
 * full, the sliding ones over sliding_window (1024) keys. Feed-forward: mlp_layer_types (every layer sparse when
 * absent), the dense MLP of intermediate_size (7168); the sparse layers Qwen3-MoE's softmax router over num_experts
 * (64) experts of moe_intermediate_size (896), top num_experts_per_tok (8), renormalised by norm_topk_prob (true), no
 * shared expert. rms_norm_eps 1e-6, untied; its MTP layer (mtp.*) is not read. A partial_rotary_factor below 1 is
 * refused by name (hparams.c: its rope would size the frequencies for part of a head its attention rotates whole). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_mellum(const char *mt) { return mt != NULL && strcmp(mt, "mellum") == 0; }

kvc_status kvci_family_parse_mellum(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_experts", "num_local_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false, cfg->qk_norm = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 64, top_k, 8, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 896, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    cfg->n_shared_experts = cfg->shared_expert_intermediate_size = 0;
    cfg->first_k_dense_replace = 0; /* mlp_layer_types' default: every layer sparse */
    return kvci_family_mlp_layer_types(c, cfg);
}
