/* The Mamba2 hybrids' runtime keys (transformers 5): Bamba (BambaConfig: mamba_* keys, attn_layer_indices, RoPE
 * over half of each attention head, a SwiGLU MLP after every mixer). The layer kinds and the planner's state
 * shapes are family_hybrid.c's; the mixer is mamba2.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* time_step_limit: [min, max] dt is clamped to, (0, inf) when absent; null (transformers' None) is refused, as
 * its scan cannot run without one. */
static kvc_status read_dt_limit(const kvc_json_obj *c, kvc_model_config *cfg) {
    cfg->mamba_dt_min = 0.0, cfg->mamba_dt_max = INFINITY;
    const cJSON *lim = kvci_json_find(c, "time_step_limit");
    if (lim == NULL && !kvci_json_missing(c, "time_step_limit"))
        return kvci_fail(KVC_EINVAL, "%s: time_step_limit null: transformers' scan needs [min, max]", c->doc);
    if (lim == NULL) return KVC_OK;
    const cJSON *a = cJSON_IsArray(lim) ? lim->child : NULL, *b = a ? a->next : NULL;
    if (!a || !b || b->next || !cJSON_IsNumber(a) || !cJSON_IsNumber(b) || isnan(a->valuedouble) ||
        isnan(b->valuedouble) || a->valuedouble > b->valuedouble)
        return kvci_fail(KVC_EINVAL, "%s: time_step_limit must be [min, max], two numbers with min <= max", c->doc);
    cfg->mamba_dt_min = a->valuedouble, cfg->mamba_dt_max = b->valuedouble;
    return KVC_OK;
}

/* mamba_d_head: a head width, or "auto" (the default): mamba_expand * hidden_size / mamba_n_heads. */
static kvc_status read_head_dim(const kvc_json_obj *c, int64_t inner, kvc_model_config *cfg) {
    const cJSON *v = kvci_json_find(c, "mamba_d_head");
    if (v == NULL || (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0)) {
        cfg->mamba_head_dim = inner / cfg->mamba_heads;
        return KVC_OK;
    }
    return kvci_json_int_value(v, "mamba_d_head", 1, KVC_HP_MAX_DIM, &cfg->mamba_head_dim);
}

kvc_status kvci_family_parse_mamba2(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    int64_t expand = 2;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* the attention layers': head_dim or hidden / heads */
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    KVC_TRY(kvci_family_opt_int(c, "mamba_n_heads", 128, 1, KVC_HP_MAX_DIM, &cfg->mamba_heads));
    KVC_TRY(kvci_family_opt_int(c, "mamba_n_groups", 1, 1, KVC_HP_MAX_DIM, &cfg->mamba_groups));
    KVC_TRY(kvci_family_opt_int(c, "mamba_d_state", 256, 1, KVC_HP_MAX_DIM, &cfg->mamba_d_state));
    KVC_TRY(kvci_family_opt_int(c, "mamba_d_conv", 4, 2, KVC_HP_MAX_DIM, &cfg->conv_kernel));
    KVC_TRY(kvci_family_opt_int(c, "mamba_expand", 2, 1, KVC_HP_MAX_DIM, &expand));
    KVC_TRY(kvci_family_opt_bool(c, "mamba_conv_bias", true, &cfg->mamba_conv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "mamba_proj_bias", false, &cfg->mamba_proj_bias));
    const int64_t inner = expand * cfg->hidden_size; /* each below 2^20: no overflow */
    if (inner % cfg->mamba_heads != 0)
        return kvci_fail(KVC_EINVAL, "%s: mamba_n_heads %lld does not divide mamba_expand * hidden_size %lld", c->doc,
                         (long long)cfg->mamba_heads, (long long)inner);
    KVC_TRY(read_head_dim(c, inner, cfg));
    if (cfg->mamba_head_dim * cfg->mamba_heads != inner)
        return kvci_fail(KVC_EINVAL,
                         "%s: mamba_d_head %lld x mamba_n_heads %lld is not mamba_expand * hidden_size %lld", c->doc,
                         (long long)cfg->mamba_head_dim, (long long)cfg->mamba_heads, (long long)inner);
    if (cfg->mamba_heads % cfg->mamba_groups != 0)
        return kvci_fail(KVC_EINVAL, "%s: mamba_n_groups %lld does not divide mamba_n_heads %lld", c->doc,
                         (long long)cfg->mamba_groups, (long long)cfg->mamba_heads);
    KVC_TRY(read_dt_limit(c, cfg));
    cfg->rope.partial_rotary_factor = 0.5; /* BambaConfig sets it whatever the file says */
    return KVC_OK;
}

kvc_status kvci_mamba2_operator(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_mamba[l] ? kvci_mamba2_mixer(s, l) : kvci_attn_gqa(s, l);
}
