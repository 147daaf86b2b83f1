/* ModernBERT's decoder (ModernBertDecoderForCausalLM; model_type modernbert-decoder; run by the dense family): the
 * token embeddings through a LayerNorm (embed_norm), pre-norm layers whose first attention reads those rows as they
 * are (attn_norm_first_none: its attn_norm is an Identity), q/k/v/Wo of hidden_size / num_attention_heads per head,
 * one KV head per head, biases by attention_bias (false); the GeGLU MLP Wo(act(x Wi[:I]) * x Wi[I:]) (Wi fused as
 * gate | up, biases refused), act by hidden_activation (gelu, by erf); every LayerNorm at norm_eps (1e-5) with a
 * bias by norm_bias (false); a final LayerNorm, then the head LN(act(dense x)) (head_transform, the dense's bias by
 * classifier_bias, false; act classifier_activation, gelu) and the decoder with its bias (decoder_bias, true), tied
 * to the embeddings by default. Layers: layer_types, else full where layer % global_attn_every_n_layers (3) == 0,
 * the others sliding over local_attention / 2 keys (hparams.c; 64); RoPE half-split at the full layers' theta and
 * the sliding layers' own (160000 / 10000 without rope_parameters: global_rope_theta, local_rope_theta). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_modernbert(const char *mt) { return mt != NULL && strcmp(mt, "modernbert-decoder") == 0; }

kvc_status kvci_family_modernbert_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    int64_t every = 3;
    KVC_TRY(kvci_family_opt_int(&ctx->hp->cfg, "global_attn_every_n_layers", 3, 1, KVC_HP_MAX_LAYERS, &every));
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = i % every != 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
    return KVC_OK;
}

/* The head's act (classifier_activation): an activation the head transform takes, else refused by name. */
static kvc_status head_act(const kvc_json_obj *c, kvc_model_config *cfg) {
    static const struct {
        const char *name;
        kvc_mlp_act act;
    } ACTS[] = {{"gelu", KVC_MLP_GELU},           {"gelu_new", KVC_MLP_GELU_TANH},
                {"gelu_fast", KVC_MLP_GELU_TANH}, {"gelu_pytorch_tanh", KVC_MLP_GELU_TANH},
                {"relu", KVC_MLP_RELU},           {"silu", KVC_MLP_SILU},
                {"swish", KVC_MLP_SILU}};
    const char *name = "gelu";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "classifier_activation", KVC_HP_NAME_MAX, &name, &have));
    for (size_t i = 0; i < sizeof ACTS / sizeof ACTS[0]; i++)
        if (strcmp(name, ACTS[i].name) == 0) {
            cfg->head_act = ACTS[i].act;
            return KVC_OK;
        }
    return kvci_fail(
        KVC_EINVAL,
        "%s: classifier_activation \"%s\" is not supported (modernbert-decoder: gelu, gelu_new, gelu_fast, "
        "gelu_pytorch_tanh, relu, silu)",
        c->doc, name);
}

kvc_status kvci_family_parse_modernbert(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool attn_bias = false, mlp_bias = false, classifier_bias = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &attn_bias));
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &mlp_bias));
    if (mlp_bias)
        return kvci_fail(KVC_EINVAL, "%s: modernbert-decoder with mlp_bias true is not supported (Wi's bias)", c->doc);
    KVC_TRY(kvci_family_opt_bool(c, "classifier_bias", false, &classifier_bias));
    KVC_TRY(kvci_family_opt_bool(c, "decoder_bias", true, &cfg->head_bias));
    KVC_TRY(kvci_family_opt_bool(c, "norm_bias", false, &cfg->norm_bias));
    KVC_TRY(kvci_family_gelu_act(c, "hidden_activation", "modernbert-decoder", "gelu", cfg));
    KVC_TRY(head_act(c, cfg));
    cfg->qkv_bias = cfg->o_bias = attn_bias, cfg->mlp_bias = false, cfg->head_dense_unbiased = !classifier_bias;
    cfg->layer_norm = cfg->embed_norm = cfg->head_transform = cfg->attn_norm_first_none = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}
