/* The text models of Qwen's vision-language checkpoints, run on text alone by the dense family (images are out of
 * scope: an image or video token in a prompt is an ordinary id). Qwen2-VL and Qwen2.5-VL
 * (Qwen2VLForConditionalGeneration, Qwen2_5_VLForConditionalGeneration) hold a Qwen2 text model whose multimodal
 * RoPE rotates sections of the frequencies by three position streams (time, height, width); transformers gives
 * text-only input the same position in all three, so the sections put back the plain frequencies and the rotation is
 * ordinary RoPE (tools/oracle/make_oracle.py checks it bit for bit against Qwen2ForCausalLM). Qwen3-VL
 * (Qwen3VLForConditionalGeneration, text_config qwen3_vl_text) holds a Qwen3 text model whose multimodal RoPE
 * interleaves the streams frequency by frequency; with three equal streams that too is ordinary RoPE (checked
 * against Qwen3ForCausalLM). */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_qwen2_vl(const char *mt) {
    static const char *const types[] = {"qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text"};
    for (size_t i = 0; mt != NULL && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(mt, types[i]) == 0) return true;
    return false;
}

bool kvci_family_is_qwen3_vl(const char *mt) {
    return mt != NULL && (strcmp(mt, "qwen3_vl") == 0 || strcmp(mt, "qwen3_vl_text") == 0);
}

/* mrope_section of the rope dict (transformers' default [16, 24, 24] when absent): non-negative sizes that must sum
 * to head_dim / 2, the frequencies they split (transformers' torch.split fails otherwise). */
static kvc_status check_mrope_section(const kvc_hparams *hp, int64_t head_dim) {
    int64_t sum = 16 + 24 + 24;
    kvc_json_obj dict = {0};
    char path[64];
    bool have = false;
    const cJSON *list = NULL;
    if (hp->rope_source != NULL && !hp->rope_per_layer_type) {
        KVC_TRY(kvci_json_child(&hp->cfg, hp->rope_source, path, sizeof path, &dict, &have));
        KVC_TRY(kvci_json_array(&dict, "mrope_section", 16, &list, &have));
    }
    if (have && list != NULL) {
        sum = 0;
        for (int i = 0; i < cJSON_GetArraySize(list); i++) {
            int64_t n = 0;
            char where[96];
            snprintf(where, sizeof where, "%s: %s.mrope_section[%d]", hp->cfg.doc, dict.path, i);
            KVC_TRY(kvci_json_int_value(cJSON_GetArrayItem(list, i), where, 0, KVC_HP_MAX_WIDTH, &n));
            sum += n;
        }
    }
    if (2 * sum != head_dim)
        return kvci_fail(KVC_EINVAL,
                         "%s: mrope_section sums to %lld (%s) but head_dim %lld has %lld frequencies (transformers "
                         "fails on it)",
                         hp->cfg.doc, (long long)sum, have ? "given" : "the default [16, 24, 24]", (long long)head_dim,
                         (long long)(head_dim / 2));
    return KVC_OK;
}

kvc_status kvci_family_need_text_config(const kvc_hparams *hp, const char *model_type) {
    if (hp->cfg.obj != hp->doc) return KVC_OK;
    return kvci_fail(KVC_EINVAL,
                     "%s: %s without text_config is not supported (transformers then builds its default text model, "
                     "not the top level's)",
                     hp->cfg.doc, model_type);
}

/* Qwen2-VL / Qwen2.5-VL's text model: Qwen2's (q/k/v biases, no o_proj or MLP bias, head_dim hidden_size /
 * num_attention_heads: a head_dim key is not read, hparams.c) with the whole head rotated; the head tied when
 * the top level's tie_word_embeddings (false when absent) or text_config's says so (the config class ORs them). */
kvc_status kvci_family_parse_qwen2_vl(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj root = {.obj = hp->doc, .doc = hp->cfg.doc, .path = ""};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(check_mrope_section(hp, cfg->head_dim));
    cfg->qkv_bias = true;
    cfg->o_bias = false;
    cfg->mlp_bias = false;
    bool outer = false;
    KVC_TRY(kvci_family_opt_bool(&root, "tie_word_embeddings", false, &outer));
    KVC_TRY(kvci_family_opt_bool(&hp->cfg, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    cfg->tie_word_embeddings |= outer;
    return KVC_OK;
}

/* Qwen3-VL's text model: Qwen3's (per-head q/k norms, head_dim 128, theta 500000 and 32 KV heads when absent: its
 * text config's; q/k/v/o biases by attention_bias, none on the MLP; no sliding window: the class has none, any
 * window key is ignored as transformers does) with the whole head rotated, whatever mrope_section says (the
 * interleaved sections of equal streams are the plain frequencies). Only transformers' nested layout: without
 * text_config Qwen3VLConfig builds its default text model whatever the top level says, so that is refused. The head
 * is tied by the top level's tie_word_embeddings alone (false when absent; text_config's is ignored). */
kvc_status kvci_family_parse_qwen3_vl(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj root = {.obj = hp->doc, .doc = hp->cfg.doc, .path = ""};
    KVC_TRY(kvci_family_need_text_config(hp, cfg->model_type));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    bool bias = false;
    KVC_TRY(kvci_family_opt_bool(&hp->cfg, "attention_bias", false, &bias));
    cfg->qkv_bias = bias;
    cfg->o_bias = bias;
    cfg->mlp_bias = false;
    cfg->qk_norm = true;
    return kvci_family_opt_bool(&root, "tie_word_embeddings", false, &cfg->tie_word_embeddings);
}
