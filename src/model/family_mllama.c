/* Llama 3.2 Vision's text model (MllamaTextConfig, model_type mllama_text_model: MllamaForCausalLM alone, or the
 * text_config of MllamaForConditionalGeneration, model_type mllama) run by the dense family on text-only prompts, as
 * transformers 5.25 runs it without pixel values: MllamaTextModel.forward passes over every layer listed in
 * cross_attention_layers when it has no cross_attention_states and nothing cached from an image (its loop's
 * `continue`), so those layers, their gates and full_text_row_masked_out_mask never touch the stream. They run here
 * as layers skipped whole (layer_no_mixer and layer_no_ffn both set: config.c), keep no cache and are never read
 * from the checkpoint; the vision tower and the projector beside them are not read either. Every other layer is
 * Llama's. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_mllama(const char *mt) {
    return mt != NULL && (strcmp(mt, "mllama") == 0 || strcmp(mt, "mllama_text_model") == 0);
}

/* Its layers (the planner's and the runtime's): those listed in cross_attention_layers (the class default [3, 8, ...,
 * 38] when absent or null) attend to an image's states instead of the sequence and, text-only, are skipped (no
 * cache: with an image their keys and values are per image, not per token); every other layer is full attention
 * under its own index. A listed layer past the last is refused by name (transformers would never skip it). */
kvc_status kvci_family_mllama_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    static const int64_t def[] = {3, 8, 13, 18, 23, 28, 33, 38};
    const cJSON *list = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(&ctx->hp->cfg, "cross_attention_layers", KVC_HP_MAX_LAYERS, &list, &have));
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_FULL;
    const int n = have ? cJSON_GetArraySize(list) : (int)(sizeof def / sizeof def[0]);
    for (int i = 0; i < n; i++) {
        int64_t l = def[i];
        if (have)
            KVC_TRY(
                kvci_json_int_value(cJSON_GetArrayItem(list, i), "cross_attention_layers[]", 0, KVC_HP_MAX_LAYERS, &l));
        if (l >= ctx->n_layers)
            return kvci_fail(KVC_EINVAL, "%s: cross_attention_layers lists layer %lld of %lld", ctx->hp->cfg.doc,
                             (long long)l, (long long)ctx->n_layers);
        kinds[l] = KVC_LK_NONE;
    }
    return KVC_OK;
}

/* Its keys over Llama's reading: head_dim is hidden_size / num_attention_heads (MllamaTextSelfAttention's; a head_dim
 * key is refused unless equal, as transformers' rotary embedding would take it and fail on the shapes); no biases
 * (attention_bias and mlp_bias are not read); rms_norm_eps 1e-5 when absent; theta 5e5 and 8 KV heads when absent
 * (hparams.c), intermediate_size 14336 (config.c); the embedding's vocab_size + 8 rows (input_vocab_size: ids up to
 * vocab_size + 7, the image token among them, are embedded, the head gives vocab_size logits); never tied (neither
 * class ties lm_head, whatever tie_word_embeddings says). The wrapper without text_config is refused by name. */
kvc_status kvci_family_parse_mllama(const kvc_hparams *hp, kvc_model_config *cfg) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(hp->doc, "model_type");
    const kvc_json_range eps = {0.0, 1.0, false};
    if (cJSON_IsString(mt) && strcmp(mt->valuestring, "mllama") == 0)
        KVC_TRY(kvci_family_need_text_config(hp, "mllama"));
    int64_t hd = cfg->hidden_size / cfg->num_heads;
    bool have = false;
    if (cfg->hidden_size % cfg->num_heads != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_size %lld is not a multiple of num_attention_heads %lld", hp->cfg.doc,
                         (long long)cfg->hidden_size, (long long)cfg->num_heads);
    KVC_TRY(kvci_json_int(&hp->cfg, "head_dim", 1, KVC_HP_MAX_DIM, &hd, &have));
    if (hd != cfg->hidden_size / cfg->num_heads)
        return kvci_fail(KVC_EINVAL, "%s: head_dim %lld must be hidden_size / num_attention_heads (%lld) for %s",
                         hp->cfg.doc, (long long)hd, (long long)(cfg->hidden_size / cfg->num_heads), cfg->model_type);
    cfg->head_dim = hd;
    KVC_TRY(kvci_family_opt_num(&hp->cfg, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    cfg->tie_word_embeddings = false;
    cfg->input_vocab_size = cfg->vocab_size + 8;
    return KVC_OK;
}
