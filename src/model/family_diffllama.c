/* DiffLlama (DiffLlamaForCausalLM; model_type diffllama; run by the dense family): Llama's layers with differential
 * attention (diff_attn, attn_diff.c): lambda_q1 / k1 / q2 / k2 [head_dim] per layer, the pair heads' weightless
 * RMSNorm over 2 head_dim (rms_norm_eps, 1e-5 when absent). q/k/v/o biases by attention_bias (false), a SwiGLU MLP
 * without biases, untied by default. DiffLlamaAttention refuses attention_dropout above 0 and an odd
 * num_key_value_heads, and so does the runtime (by name); lambda_std_dev only initialises. */
#include "base/internal.h"
#include "model/family.h"

kvc_status kvci_family_parse_diffllama(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, rate = {0.0, 1.0, false};
    double dropout = 0.0;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false, cfg->diff_attn = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_opt_num(c, "attention_dropout", 0.0, rate, &dropout));
    if (dropout > 0.0)
        return kvci_fail(KVC_EINVAL,
                         "%s: diffllama with attention_dropout %g is not supported (DiffLlamaAttention refuses it: "
                         "its two softmaxes have no shared dropout)",
                         c->doc, dropout);
    if (cfg->num_kv_heads % 2 != 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: diffllama with num_key_value_heads %lld is not supported (DiffLlamaAttention splits the "
                         "value heads into two halves: it must be even)",
                         c->doc, (long long)cfg->num_kv_heads);
    return KVC_OK;
}
