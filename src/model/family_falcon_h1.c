/* Falcon-H1 (FalconH1ForCausalLM, transformers' modeling_falcon_h1.py): its keys beyond the Mamba2 mixer's
 * (family_mamba2.c reads those), its layer (the mixer and GQA attention side by side on one normed input) and its
 * SwiGLU MLP, each with its muP multipliers. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* A list of n muP multipliers under key (each finite in (0, KVC_HP_MAX_FACTOR]), all 1 when absent or null. */
static kvc_status read_multipliers(const kvc_json_obj *c, const char *key, int n, double *out) {
    const cJSON *list = NULL;
    bool have = false;
    for (int i = 0; i < n; i++) out[i] = 1.0;
    KVC_TRY(kvci_json_array(c, key, 16, &list, &have));
    if (!have || list == NULL) return KVC_OK;
    if (cJSON_GetArraySize(list) != n)
        return kvci_fail(KVC_EINVAL, "%s: %s has %d entries, not %d", c->doc, key, cJSON_GetArraySize(list), n);
    int i = 0;
    for (const cJSON *e = list->child; e != NULL; e = e->next, i++) {
        out[i] = cJSON_IsNumber(e) ? e->valuedouble : 0.0;
        if (!(out[i] > 0.0 && out[i] <= KVC_HP_MAX_FACTOR))
            return kvci_fail(KVC_EINVAL, "%s: %s[%d] must be a number in (0, %g]", c->doc, key, i, KVC_HP_MAX_FACTOR);
    }
    return KVC_OK;
}

/* Falcon-H1 (FalconH1Config) beyond the mixer's keys: its muP multipliers (each 1 when absent; in (0, 1e6]):
 * embedding_multiplier, lm_head_multiplier, ssm_in_multiplier, ssm_out_multiplier, ssm_multipliers (5: z, x, B, C,
 * dt), attention_in_multiplier, attention_out_multiplier, key_multiplier, mlp_multipliers (2: gate, down);
 * mamba_rms_norm (false: y silu(z) unnormed) and mamba_norm_before_gate (true); projectors_bias (false: out_proj's
 * bias); attention_bias (false) on q/k/v/o; mlp_bias (false); hidden_act silu (the mixer's and the MLP's); full
 * RoPE. mamba_chunk_size changes nothing here (the runtime runs the recurrence). */
kvc_status kvci_falcon_h1_parse(const kvc_json_obj *c, kvc_model_config *cfg) {
    const kvc_json_range mult = {0.0, KVC_HP_MAX_FACTOR, true};
    double embed = 1.0, head = 1.0, mlp[2];
    bool bias = false;
    KVC_TRY(kvci_mamba2_only_value(c, cfg->model_type, "hidden_act", "silu"));
    KVC_TRY(kvci_family_opt_num(c, "embedding_multiplier", 1.0, mult, &embed));
    KVC_TRY(kvci_family_opt_num(c, "lm_head_multiplier", 1.0, mult, &head));
    cfg->embed_scale = (float)embed, cfg->logit_scale = head; /* as Granite's embeddings, Cohere's logits */
    KVC_TRY(kvci_family_opt_num(c, "ssm_in_multiplier", 1.0, mult, &cfg->ssm_in_multiplier));
    KVC_TRY(kvci_family_opt_num(c, "ssm_out_multiplier", 1.0, mult, &cfg->ssm_out_multiplier));
    KVC_TRY(kvci_family_opt_num(c, "attention_in_multiplier", 1.0, mult, &cfg->attention_in_multiplier));
    KVC_TRY(kvci_family_opt_num(c, "attention_out_multiplier", 1.0, mult, &cfg->attention_out_multiplier));
    KVC_TRY(kvci_family_opt_num(c, "key_multiplier", 1.0, mult, &cfg->key_multiplier));
    KVC_TRY(read_multipliers(c, "ssm_multipliers", 5, cfg->ssm_multipliers));
    KVC_TRY(read_multipliers(c, "mlp_multipliers", 2, mlp));
    cfg->mlp_gate_multiplier = mlp[0], cfg->mlp_down_multiplier = mlp[1];
    KVC_TRY(kvci_family_opt_bool(c, "mamba_rms_norm", false, &cfg->mamba_rms_norm));
    KVC_TRY(kvci_family_opt_bool(c, "mamba_norm_before_gate", true, &cfg->mamba_norm_before_gate));
    KVC_TRY(kvci_family_opt_bool(c, "projectors_bias", false, &cfg->mamba_out_bias));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias;
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias));
    cfg->mamba_parallel_attn = true;
    return KVC_OK;
}

/* Falcon-H1's SwiGLU MLP (FalconH1MLP): down(up x * silu(gate x * mlp_gate_multiplier)) * mlp_down_multiplier. */
kvc_status kvci_falcon_h1_mlp(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    const int64_t T = s->T, I = w->w_gate.rows, H = c->hidden_size;
    const bool fused = w->w_gu.data != NULL; /* rows [T, gate I | up I] in ws->fused */
    float *g = fused ? ws->fused : ws->ff_a, *u = fused ? ws->fused + I : ws->ff_b;
    const int64_t ld = fused ? 2 * I : I;
    if (fused) {
        KVC_TRY(kvci_linear(ws->xn, T, &w->w_gu, NULL, ws->fused));
    } else {
        const kvc_wmat *mats[2] = {&w->w_gate, &w->w_up};
        const float *bias[2] = {w->b_gate, w->b_up};
        float *out[2] = {ws->ff_a, ws->ff_b};
        KVC_TRY(kvci_linear_shared(ws->xn, T, 2, mats, bias, out));
    }
    const float gm = (float)c->mlp_gate_multiplier, dm = (float)c->mlp_down_multiplier;
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < I; i++) g[t * ld + i] *= gm;
    kvci_glu(c->mlp_act, g, u, T, I, ld, ws->ff_a, I);
    KVC_TRY(kvci_linear(ws->ff_a, T, &w->w_down, w->b_down, ws->proj));
    for (int64_t i = 0; i < T * H; i++) ws->proj[i] *= dm;
    return KVC_OK;
}

/* Falcon-H1's layer (FalconH1DecoderLayer): the mixer on xn * ssm_in_multiplier, times ssm_out_multiplier, plus
 * attention on xn * attention_in_multiplier (its keys times key_multiplier: attn_gqa.c), times
 * attention_out_multiplier, into ws->proj. ws->xg keeps xn and ws->acc the mixer's share (the experts' buffers,
 * free until the MLP). */
kvc_status kvci_falcon_h1_layer(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    kvc_model_workspace *ws = s->ws;
    const int64_t n = s->T * c->hidden_size;
    const float si = (float)c->ssm_in_multiplier, so = (float)c->ssm_out_multiplier;
    const float ai = (float)c->attention_in_multiplier, ao = (float)c->attention_out_multiplier;
    memcpy(ws->xg, ws->xn, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) ws->xn[i] = ws->xg[i] * si;
    KVC_TRY(kvci_mamba2_mixer(s, l));
    for (int64_t i = 0; i < n; i++) ws->acc[i] = ws->proj[i] * so;
    for (int64_t i = 0; i < n; i++) ws->xn[i] = ws->xg[i] * ai;
    KVC_TRY(kvci_attn_gqa(s, l));
    for (int64_t i = 0; i < n; i++) ws->proj[i] = ws->acc[i] + ws->proj[i] * ao;
    return KVC_OK;
}
