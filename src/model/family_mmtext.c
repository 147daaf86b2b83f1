/* The text models of multimodal checkpoints that the dense family runs on text alone (images, audio and their
 * towers are out of scope: an image token in a prompt is an ordinary id, and transformers 5.25 given no pixel values
 * computes the same). Emu3 (Emu3ForConditionalGeneration; text_config emu3_text_model, also run alone as
 * Emu3ForCausalLM): Llama's layer whose dropouts are training-only; its tensors under model.text_model. (load.c). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_emu3(const char *mt) {
    return mt != NULL && (strcmp(mt, "emu3") == 0 || strcmp(mt, "emu3_text_model") == 0);
}

/* Whether the config's top level names model type `outer` (a multimodal wrapper around text_config). */
static bool outer_is(const kvc_hparams *hp, const char *outer) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(hp->doc, "model_type");
    return cJSON_IsString(mt) && strcmp(mt->valuestring, outer) == 0;
}

/* The head's tying: the wrapper's own tie_word_embeddings (def when absent) when the text model is nested, whatever
 * text_config says (transformers ties by the outer model's config), else the text config's. */
static kvc_status tie_by_outer(const kvc_hparams *hp, bool def, kvc_model_config *cfg) {
    const kvc_json_obj root = {.obj = hp->doc, .doc = hp->cfg.doc, .path = ""};
    return kvci_family_opt_bool(hp->cfg.obj != hp->doc ? &root : &hp->cfg, "tie_word_embeddings", def,
                                &cfg->tie_word_embeddings);
}

/* Emu3's text model (Emu3TextConfig): Llama's attention and MLP, q/k/v/o biases by attention_bias and the MLP's by
 * mlp_bias (both false when absent: class attributes a config key overrides), rms_norm_eps 1e-5, theta 1e6 and 8 KV
 * heads when absent (hparams.c), untied by default (Emu3Config's and Emu3TextConfig's false). An emu3 config without
 * text_config is refused by name (Emu3Config then builds its default text model). */
kvc_status kvci_family_parse_emu3(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_range eps = {0.0, 1.0, false};
    if (outer_is(hp, "emu3")) KVC_TRY(kvci_family_need_text_config(hp, "emu3"));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(&hp->cfg, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias;
    KVC_TRY(kvci_family_opt_bool(&hp->cfg, "mlp_bias", false, &cfg->mlp_bias));
    KVC_TRY(kvci_family_opt_num(&hp->cfg, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    return tie_by_outer(hp, false, cfg);
}

bool kvci_family_is_aria(const char *mt) {
    return mt != NULL && (strcmp(mt, "aria") == 0 || strcmp(mt, "aria_text") == 0);
}

/* Aria's text model (AriaTextConfig; AriaTextForCausalLM alone): Llama's attention (q/k/v/o biases by attention_bias,
 * head_dim hidden_size / num_attention_heads when absent, as many KV heads as heads when absent) and on every layer
 * a MoE: the k (moe_topk, 2) largest router logits of moe_num_experts (8) SwiGLU experts of intermediate_size, their
 * softmax as weights (Granite MoE's router), plus moe_num_shared_experts (2) shared experts as one SwiGLU MLP of
 * intermediate_size x that count (its biases by mlp_bias, false); rms_norm_eps 1e-6, untied by default (AriaConfig's
 * false; the outer key ties when nested). An aria config without text_config is refused by name. */
kvc_status kvci_family_parse_aria(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const n_keys[KVC_HP_ALIASES] = {"moe_num_experts"};
    static const char *const k_keys[KVC_HP_ALIASES] = {"moe_topk"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    int64_t shared = 2;
    if (outer_is(hp, "aria")) KVC_TRY(kvci_family_need_text_config(hp, "aria"));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias;
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias));
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_expert_counts(c, n_keys, 8, k_keys, 2, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_num_shared_experts", 2, 1, KVC_HP_MAX_EXPERTS, &shared));
    cfg->moe_intermediate_size = cfg->intermediate_size;
    cfg->n_shared_experts = shared;
    cfg->shared_expert_intermediate_size = shared * cfg->intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    return tie_by_outer(hp, false, cfg);
}

bool kvci_family_is_phi3(const char *mt) {
    return mt != NULL && (strcmp(mt, "phi3") == 0 || strcmp(mt, "phi4_multimodal") == 0);
}

bool kvci_family_is_apertus1p5(const char *mt) {
    return mt != NULL && (strcmp(mt, "apertus1p5") == 0 || strcmp(mt, "apertus1p5_text") == 0);
}

/* Apertus 1.5's text model (Apertus1p5TextConfig; Apertus1p5TextForCausalLM alone), over Apertus's keys: its
 * extended vocabulary (vocab_size ids embedded) and a head pruned to the first output_vocab_size of them (null or
 * vocab_size: unpruned), the logits' width: vocab_size becomes that and input_vocab_size the embedding's rows. A tied
 * head is the whole embedding (transformers ties it whatever output_vocab_size says), the wrapper's
 * tie_word_embeddings (false) alone when nested. Refused by name: output_vocab_size outside [1, vocab_size] (its
 * config class refuses it), the wrapper without text_config. */
kvc_status kvci_family_parse_apertus1p5(const kvc_hparams *hp, kvc_model_config *cfg) {
    int64_t out = cfg->vocab_size;
    if (outer_is(hp, "apertus1p5")) KVC_TRY(kvci_family_need_text_config(hp, "apertus1p5"));
    KVC_TRY(tie_by_outer(hp, false, cfg));
    KVC_TRY(kvci_family_opt_int(&hp->cfg, "output_vocab_size", cfg->vocab_size, 1, cfg->vocab_size, &out));
    if (out == cfg->vocab_size || cfg->tie_word_embeddings) return KVC_OK;
    cfg->input_vocab_size = cfg->vocab_size;
    cfg->vocab_size = out;
    return KVC_OK;
}
