/* Granite SWA (granite_swa, GraniteSWAForCausalLM) and Granite MoE SWA (granitemoe_swa,
 * GraniteMoeSWAForCausalLM): Granite's and Granite MoE Shared's layers with per-head attention sinks
 * (self_attn.sinks [nH], the GPT-OSS extra softmax logit), sliding layers (every fourth from layer 0 full when
 * layer_types is absent, window 128) and a RoPE base per layer, layer_rope_theta (0: that layer unrotated). The
 * dense family runs them; this file holds what differs from Granite. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_granite_swa(const char *mt) {
    return mt != NULL && (strcmp(mt, "granite_swa") == 0 || strcmp(mt, "granitemoe_swa") == 0);
}

/* layer_rope_theta [num_layers] onto the runtime's two ropes: 0 marks the layer unrotated (layer_nope); the
 * other entries of the full layers must agree (rope.theta) and so must the sliding layers' (rope_sliding, the
 * full layers' rope at that base), as one rope table serves each kind. Absent or null: every layer at
 * rope_parameters' theta. */
static kvc_status layer_thetas(const kvc_hparams *hp, const kvc_layer_kind *kinds, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const cJSON *list = NULL;
    bool have = false;
    if (cJSON_IsNull(kvci_json_find(c, "layer_rope_theta"))) return KVC_OK;
    KVC_TRY(kvci_json_array(c, "layer_rope_theta", KVC_HP_MAX_LAYERS, &list, &have));
    if (!have) return KVC_OK;
    if (cJSON_GetArraySize(list) != cfg->num_layers)
        return kvci_fail(KVC_EINVAL, "%s: layer_rope_theta has %d entries but num_hidden_layers is %lld", c->doc,
                         cJSON_GetArraySize(list), (long long)cfg->num_layers);
    double theta[2] = {0.0, 0.0}; /* [full, sliding]; 0: no rotated layer of that kind yet */
    int64_t l = 0;
    for (const cJSON *e = list->child; e != NULL; e = e->next, l++) {
        const double t = cJSON_IsNumber(e) ? e->valuedouble : -1.0;
        if (!(t >= 0.0 && t <= KVC_HP_MAX_THETA))
            return kvci_fail(KVC_EINVAL, "%s: layer_rope_theta[%lld] must be a number in [0, %g] (0: no RoPE)", c->doc,
                             (long long)l, KVC_HP_MAX_THETA);
        cfg->layer_nope[l] = t == 0.0;
        const int k = kinds[l] == KVC_LK_SLIDING;
        if (t == 0.0) continue;
        if (theta[k] != 0.0 && theta[k] != t)
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_rope_theta[%lld] %g differs from %g of another %s layer (the runtime keeps one "
                             "RoPE base per layer kind)",
                             c->doc, (long long)l, t, theta[k], k ? "sliding" : "full");
        theta[k] = t;
    }
    if (theta[0] != 0.0) cfg->rope.theta = theta[0];
    cfg->rope_sliding = cfg->rope;
    if (theta[1] != 0.0) cfg->rope_sliding.theta = theta[1];
    return KVC_OK;
}

/* After the dense family's Granite reading (biases, multipliers, experts): the sinks, rms_norm_eps (1e-5 for
 * GraniteSWAConfig, 1e-6 for GraniteMoeSWAConfig when absent), tie_word_embeddings (true, false) and the layers'
 * ropes. */
kvc_status kvci_family_parse_granite_swa(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const bool moe = strcmp(cfg->model_type, "granitemoe_swa") == 0;
    const kvc_json_range eps = {0.0, 1.0, false};
    cfg->attn_sinks = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", moe ? 1e-6 : 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", !moe, &cfg->tie_word_embeddings));
    kvc_layer_kind kinds[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, kinds));
    return layer_thetas(hp, kinds, cfg);
}
