/* BitNet b1.58 as transformers runs it without a quantization_config (BitNetForCausalLM; model_type bitnet; run by
 * the dense family): Llama's layers with an RMSNorm of the attention output before o_proj (attn_sub_norm over
 * hidden_size) and of act(gate) * up before down_proj (ffn_sub_norm over intermediate_size), both at rms_norm_eps
 * (1e-5), the gated MLP's act by hidden_act (relu2), q/k/v/o biases by attention_bias (false), untied by default.
 * Its weights are then plain matrices, read as any checkpoint's. With a quantization_config (quant_method bitnet:
 * the hub's ternary weights packed four per uint8 with a weight_scale, BitLinear / AutoBitLinear quantizing each
 * token's activations to int8 by its absmax in the forward, or the weights ternarised online) the model is another
 * computation, refused by name. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

kvc_status kvci_family_parse_bitnet(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const struct {
        const char *name;
        kvc_mlp_act act;
    } ACTS[] = {{"relu2", KVC_MLP_RELU2},
                {"silu", KVC_MLP_SILU},
                {"swish", KVC_MLP_SILU},
                {"gelu", KVC_MLP_GELU},
                {"gelu_new", KVC_MLP_GELU_TANH},
                {"gelu_fast", KVC_MLP_GELU_TANH},
                {"gelu_pytorch_tanh", KVC_MLP_GELU_TANH}};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const cJSON *q = kvci_json_find(c, "quantization_config");
    if (q != NULL && !cJSON_IsNull(q))
        return kvci_fail(KVC_EINVAL,
                         "%s: bitnet with a quantization_config is not supported (its BitLinear / AutoBitLinear "
                         "layers: ternary weights, packed four per uint8 with a weight_scale or ternarised online, "
                         "times activations quantized per token to int8 by their absmax)",
                         c->doc);
    const char *act = "relu2";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    size_t i = 0;
    while (i < sizeof ACTS / sizeof ACTS[0] && strcmp(act, ACTS[i].name) != 0) i++;
    if (i == sizeof ACTS / sizeof ACTS[0])
        return kvci_fail(KVC_EINVAL,
                         "%s: hidden_act \"%s\" is not supported (bitnet: relu2, silu, gelu, gelu_new, gelu_fast, "
                         "gelu_pytorch_tanh)",
                         c->doc, act);
    cfg->mlp_act = ACTS[i].act;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    if (cfg->num_heads * cfg->head_dim != cfg->hidden_size) /* attn_sub_norm is RMSNorm(hidden_size) */
        return kvci_fail(KVC_EINVAL,
                         "%s: bitnet with num_attention_heads x head_dim %lld other than hidden_size %lld is not "
                         "supported (attn_sub_norm normalises hidden_size channels of the attention output)",
                         c->doc, (long long)(cfg->num_heads * cfg->head_dim), (long long)cfg->hidden_size);
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false, cfg->sub_norms = true;
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}
