/* JetMoE (jetmoe/jetmoe-8b, JetMoeForCausalLM; model_type jetmoe; run by the dense family): pre-norm blocks of a
 * mixture of attention heads (attention_experts: attn_moa.c) and a MoE MLP, both routed by Granite MoE's router (the
 * k largest logits, their softmax) over num_local_experts (8) experts, num_experts_per_tok (2) per token, each block
 * ending in a bias. JetMoeConfig's derived and fixed facts: num_attention_heads is num_key_value_heads (16) x
 * num_experts_per_tok whatever the key says (hparams.c), head_dim is kv_channels (128), the layer norms' eps is 1e-6
 * whatever rms_norm_eps says (JetMoeRMSNorm's default; rms_norm_eps, 1e-6 when absent, is the final norm's),
 * intermediate_size 5632, theta 1e4, tied by default; no biases on kv_proj or the experts' projections, no sliding
 * window. activation_function other than silu is refused by name. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

kvc_status kvci_family_parse_jetmoe(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    static const char *const n_keys[KVC_HP_ALIASES] = {"num_local_experts"};
    static const char *const k_keys[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const char *act = "silu";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "activation_function", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "silu") != 0)
        return kvci_fail(KVC_EINVAL, "%s: activation_function \"%s\" is not supported (jetmoe: silu)", c->doc, act);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_expert_counts(c, n_keys, 8, k_keys, 2, cfg));
    cfg->moe_intermediate_size = cfg->intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    cfg->attention_experts = true, cfg->norm_topk_prob = true;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    cfg->final_norm_eps = cfg->rms_norm_eps, cfg->rms_norm_eps = 1e-6;
    return kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}
