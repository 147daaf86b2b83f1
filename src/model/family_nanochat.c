/* NanoChat (karpathy/nanochat-*, NanoChatForCausalLM; model_type nanochat; run by the dense family): Llama's
 * attention and layout with every norm a weightless RMSNorm (rms_norm_eps, 1e-6 when absent): the embeddings
 * normalised before the first layer (by the model's final norm module, embed_norm), the pre-norm blocks and the
 * final norm, q and k normalised per head after RoPE (qk_l2_norm: Llama 4's weightless per-head norm); RoPE turned
 * the other way (rope_reversed: its rotate_half is [x2, -x1]); q/k/v/o biases by attention_bias (false); the ungated
 * MLP fc2(relu2(fc1(x))) without biases (hidden_act relu2 when absent, another refused by name); the logits
 * soft-capped by final_logit_softcapping (15 when absent, null: none); untied by default. NanoChatConfig has no
 * sliding window: a window key is not read (dense_reads_window). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

kvc_status kvci_family_parse_nanochat(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const char *act = "relu2";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "relu2") != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_act \"%s\" is not supported (nanochat: relu2)", c->doc, act);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false;
    cfg->mlp_act = KVC_MLP_RELU2, cfg->mlp_plain = true;
    cfg->norm_weightless = cfg->embed_norm = cfg->qk_l2_norm = cfg->rope_reversed = true;
    KVC_TRY(kvci_family_softcap(c, "final_logit_softcapping", 15.0, &cfg->final_logit_softcapping));
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps);
}
