/* Cohere Compass's text model (CohereCompassForCausalLM; model_type cohere_compass_text, the text_config of
 * CohereLabs' North vision models; run by the dense family through parse_cohere): Cohere 2's parallel blocks
 * (LayerNorms without bias, layer_norm_eps 1e-5; SwiGLU MLP) with RoPE rotating half-split heads (Qwen3's
 * apply_rotary_pos_emb), each layer kind its own rope_parameters entry and no RoPE where that entry is null; every
 * layer full when layer_types is absent, the sliding ones over sliding_window (4096); head_dim hidden_size /
 * num_attention_heads (a head_dim key is not read); the logits times logit_scale (1 when absent or null); tied by
 * default. On text the M-RoPE sections turn every axis by the token's position, the plain rope. transformers indexes
 * rope_parameters by layer type: without it ({} is the class default), flat, or without an entry for a kind the
 * model has, the model cannot be built, and the runtime refuses it by name; rope_theta / rope_type beside the
 * entries are dropped as transformers drops them (hparams.c). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_cohere_compass(const char *mt) { return mt != NULL && strcmp(mt, "cohere_compass_text") == 0; }

kvc_status kvci_family_cohere_compass_ropes(const kvc_hparams *hp, kvc_model_config *cfg) {
    const char *doc = hp->cfg.doc;
    if (hp->rope_source == NULL || !hp->rope_per_layer_type)
        return kvci_fail(KVC_EINVAL,
                         "%s: cohere_compass_text needs rope_parameters with an entry (a dict, or null: no RoPE) per "
                         "layer type (full_attention, sliding_attention): transformers indexes it by layer type",
                         doc);
    const cJSON *dict = kvci_json_find(&hp->cfg, hp->rope_source);
    kvc_layer_kind kinds[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, kinds));
    for (int64_t l = 0; l < cfg->num_layers; l++) {
        const char *type = kinds[l] == KVC_LK_SLIDING ? "sliding_attention" : "full_attention";
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(dict, type);
        if (e == NULL)
            return kvci_fail(KVC_EINVAL, "%s: %s has no \"%s\" entry (layer %lld is one)", doc, hp->rope_source, type,
                             (long long)l);
        cfg->layer_nope[l] = cJSON_IsNull(e);
    }
    return KVC_OK;
}
