/* The runtime keys of the classic decoder types the dense family runs (kvci_family_parse_classic): Phi (1, 1.5,
 * 2). Each is a dense model of LayerNorms with bias, an ungated GELU MLP with biases and RoPE on part of each
 * head; their checkpoints' own module names are ckpt_names.c's. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

/* hidden_act of a classic type: `def` when absent; GELU's tanh approximation (gelu_new, as transformers'
 * NewGELUActivation, or gelu_pytorch_tanh: the same function) is run, any other is refused by name. */
static kvc_status gelu_tanh_act(const kvc_json_obj *c, const char *type, const char *def, kvc_model_config *cfg) {
    const char *act = def;
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu_new") != 0 && strcmp(act, "gelu_pytorch_tanh") != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_act \"%s\" is not supported (%s: gelu_new, gelu_pytorch_tanh)", c->doc,
                         act, type);
    cfg->mlp_act = KVC_MLP_GELU_TANH;
    return KVC_OK;
}

/* Phi (microsoft/phi-1, phi-1_5, phi-2; PhiForCausalLM): one LayerNorm with bias (layer_norm_eps, 1e-5 when
 * absent) feeding the attention and the MLP side by side (a parallel block), q/k/v and dense (o_proj) with
 * biases, RoPE half-split on head_dim * partial_rotary_factor channels (0.5 when absent, PhiConfig's; hparams.c),
 * MLP fc2(gelu_new(fc1(x))) with biases, a final LayerNorm with bias and the head with a bias of its own; untied
 * by default. Refused by name: qk_layernorm (a LayerNorm with bias on each q and k head, which the runtime does
 * not run). */
static kvc_status parse_phi(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool qk_ln = false;
    KVC_TRY(kvci_family_opt_bool(c, "qk_layernorm", false, &qk_ln));
    if (qk_ln)
        return kvci_fail(KVC_EINVAL,
                         "%s: phi with qk_layernorm true is not supported (LayerNorms of the q and k heads)", c->doc);
    KVC_TRY(gelu_tanh_act(c, "phi", "gelu_new", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = cfg->head_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = cfg->parallel_block = true;
    return kvci_family_opt_num(c, "layer_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

kvc_status kvci_family_parse_classic(const kvc_hparams *hp, kvc_model_config *cfg) {
    const char *mt = cfg->model_type;
    if (strcmp(mt, "phi") == 0) return parse_phi(hp, cfg);
    return kvci_fail(KVC_EINVAL, "%s: model_type \"%s\" is not a classic type", hp->cfg.doc, mt);
}
