/* The GQA family (MF 2): Llama, Mistral, Qwen2, Qwen3, Phi-3, OLMo 2 / 3, Granite, SmolLM3, Gemma (1;
 * its keys are family_gemma.c's), GLM-4, Cohere, Cohere 2 and the softmax-routed MoE models Qwen3-MoE,
 * Qwen2-MoE, Mixtral, OLMoE, Granite MoE (and Shared) and GLM-4.5 (glm4_moe) run, and GLM (GLM-4 without its sandwich
 * norms), Seed-OSS, EXAONE 4.0 and K-EXAONE, StarCoder2 (LayerNorms with bias, a plain MLP), Ministral and Ministral 3
 * (Llama 4's query scaling). Which projections carry a bias (MF 6.5), Qwen3's q/k norms, Phi-3's defaults, OLMo's
 * norms, Granite's multipliers, SmolLM3's no-rope layers, GLM-4's sandwich norms and pairwise RoPE, Cohere's
 * LayerNorms, parallel blocks and logit scale, which layers route experts and the sliding layers of Mistral and Mixtral
 * (every layer), of Qwen3-MoE (every layer, with use_sliding_window), of Qwen2/Qwen3 with use_sliding_window (from
 * max_window_layers on) and of Qwen2-MoE with it (the even layers below max_window_layers). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

/* Granite MoE (GraniteMoeForCausalLM), Granite MoE Shared (GraniteMoeSharedForCausalLM) and Granite MoE SWA. */
static bool granite_moe(const char *mt) {
    return mt &&
           (strcmp(mt, "granitemoe") == 0 || strcmp(mt, "granitemoeshared") == 0 || strcmp(mt, "granitemoe_swa") == 0);
}

/* Granite and Granite SWA (dense). */
static bool granite_dense(const char *mt) {
    return mt && (strcmp(mt, "granite") == 0 || strcmp(mt, "granite_swa") == 0);
}

kvc_status kvci_family_expert_counts(const kvc_json_obj *c, const char *const e_keys[KVC_HP_ALIASES], int64_t def_e,
                                     const char *const k_keys[KVC_HP_ALIASES], int64_t def_k, kvc_model_config *cfg) {
    bool have = false;
    cfg->n_routed_experts = def_e, cfg->experts_per_tok = def_k;
    KVC_TRY(kvci_hparams_int(c, e_keys, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts, &have));
    KVC_TRY(kvci_hparams_int(c, k_keys, 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok, &have));
    if (cfg->experts_per_tok <= cfg->n_routed_experts) return KVC_OK;
    return kvci_fail(KVC_EINVAL, "%s: %s %lld must be in [1, %s = %lld]", c->doc, k_keys[0],
                     (long long)cfg->experts_per_tok, e_keys[0], (long long)cfg->n_routed_experts);
}

/* Qwen3-MoE and Qwen2-MoE (a sparse block on the layers not in mlp_only_layers with (l + 1) %
 * decoder_sparse_step == 0, experts of moe_intermediate_size; Qwen2-MoE adds a shared expert of
 * shared_expert_intermediate_size), Mixtral (every layer, experts of intermediate_size, always
 * renormalised), OLMoE and FlexOlmo (every layer, experts of intermediate_size, renormalised by norm_topk_prob; 64 of
 * top 8 and 7 of top 5 when absent) and Granite MoE
 * (every layer, experts of intermediate_size, its own router: kvci_ffn_granite_moe; Granite MoE Shared adds a shared
 * MLP of shared_intermediate_size): the expert count, k, the widths and the MoE layers; defaults as transformers
 * 5.25's. */
static kvc_status parse_moe(const kvc_hparams *hp, const char *mt, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const bool mixtral = strcmp(mt, "mixtral") == 0, qwen2 = strcmp(mt, "qwen2_moe") == 0;
    const bool flex = strcmp(mt, "flex_olmo") == 0, olmoe = strcmp(mt, "olmoe") == 0 || flex, granite = granite_moe(mt);
    /* the Qwen hub configs say num_experts; transformers 5 writes Qwen3-MoE's as num_local_experts (attribute_map) */
    static const char *const qwen_n[KVC_HP_ALIASES] = {"num_experts", "num_local_experts"};
    static const char *const mixtral_n[KVC_HP_ALIASES] = {"num_local_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    KVC_TRY(kvci_family_expert_counts(c, mixtral || granite ? mixtral_n : qwen_n,
                                      mixtral || granite ? 8
                                      : qwen2            ? 60
                                      : flex             ? 7
                                      : olmoe            ? 64
                                                         : 128,
                                      top_k,
                                      mixtral || granite ? 2
                                      : qwen2            ? 4
                                      : flex             ? 5
                                                         : 8,
                                      cfg));
    cfg->norm_topk_prob = true, cfg->moe_intermediate_size = cfg->intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    if (granite) /* its shared MLP: GraniteMoeSharedConfig's shared_intermediate_size, 0 (none) when absent */
        return kvci_family_opt_int(c, "shared_intermediate_size", 0, 0, KVC_HP_MAX_WIDTH,
                                   &cfg->shared_expert_intermediate_size);
    if (mixtral) return KVC_OK;
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", false, &cfg->norm_topk_prob));
    if (olmoe) return KVC_OK;
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", qwen2 ? 1408 : 768, 1, KVC_HP_MAX_WIDTH,
                                &cfg->moe_intermediate_size));
    if (qwen2)
        KVC_TRY(kvci_family_opt_int(c, "shared_expert_intermediate_size", 5632, 1, KVC_HP_MAX_WIDTH,
                                    &cfg->shared_expert_intermediate_size));
    return kvci_family_qwen_moe_layers(c, cfg);
}

kvc_status kvci_family_qwen_moe_layers(const kvc_json_obj *c, kvc_model_config *cfg) {
    int64_t step = 1;
    bool have = false;
    KVC_TRY(kvci_family_opt_int(c, "decoder_sparse_step", 1, 1, KVC_HP_MAX_LAYERS, &step));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = (l + 1) % step == 0;
    const cJSON *only = NULL;
    KVC_TRY(kvci_json_array(c, "mlp_only_layers", KVC_HP_MAX_LAYERS, &only, &have));
    for (int i = 0; have && only && i < cJSON_GetArraySize(only); i++) {
        char where[64];
        int64_t l = 0;
        snprintf(where, sizeof where, "mlp_only_layers[%d]", i);
        KVC_TRY(kvci_json_int_value(cJSON_GetArrayItem(only, i), where, 0, cfg->num_layers - 1, &l));
        cfg->layer_moe[l] = false;
    }
    return KVC_OK;
}

/* head_dim (the config's, else hidden_size / num_attention_heads) for a model type whose attention takes
 * hidden_size / num_attention_heads whatever the key says: another value is refused, `why` saying what uses it. */
static kvc_status head_dim_whole(const kvc_hparams *hp, kvc_model_config *cfg, const char *why) {
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    if (cfg->head_dim * cfg->num_heads == cfg->hidden_size) return KVC_OK;
    return kvci_fail(KVC_EINVAL, "%s: %s head_dim %lld is not hidden_size %lld / num_attention_heads %lld, %s",
                     hp->cfg.doc, cfg->model_type, (long long)cfg->head_dim, (long long)cfg->hidden_size,
                     (long long)cfg->num_heads, why);
}

/* Phi-3 (Phi-3-mini/medium, Phi-3.5-mini, Phi-4-mini) and Phi-4-multimodal's text path (phi4_multimodal, 8 KV heads
 * when absent: hparams.c): no bias anywhere whatever the config says (its modules are built without), rms_norm_eps
 * 1e-5 when absent (Phi3Config's); the fused qkv_proj / gate_up_proj are weights.c's. transformers reads a Phi-3 rope
 * of type yarn as longrope, which would need short and long factors that a yarn dict lacks: refused by name. */
static kvc_status parse_phi3(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    if (cfg->rope.type == KVC_ROPE_YARN)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s with rope type \"yarn\" (transformers runs it as longrope, which "
                         "needs short_factor and long_factor): not supported",
                         c->doc, cfg->model_type);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* OLMo 2 (allenai/OLMo-2-*, Olmo2ForCausalLM) and OLMo 3 (Olmo3ForCausalLM): post-norm blocks
 * (post_attention_layernorm and post_feedforward_layernorm on the sub-layer outputs, no input norm), q_norm /
 * k_norm over the whole q / k projection, attention_bias on q, k, v and o alike (OlmoAttention), no MLP bias,
 * rms_norm_eps 1e-5 when absent (their config classes'). OLMo 1's clip_qkv is not read: Olmo2Config removes it
 * and neither attention clips. OLMo 3 adds sliding layers (dense_kinds) with their own rope: a config
 * without one per layer type gives its rope (rope_scaling, rope_theta) to the full layers only, the sliding
 * ones taking the default rope at Olmo3Config's default_theta 500,000, whatever rope_theta says (transformers
 * 5.25's convert_rope_params_to_dict pops rope_theta for the full layers first). */
static kvc_status parse_olmo(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool bias = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false;
    cfg->qk_norm = cfg->qk_norm_whole = cfg->post_norms = true;
    if (strcmp(cfg->model_type, "olmo3") == 0 && !hp->rope_sliding_given)
        cfg->rope_sliding = kvci_family_default_rope(500000.0);
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* FlexOlmo (allenai/FlexOlmo-7x7B-1T, FlexOlmoForCausalLM): OLMo 2's layer (no input norm; the attention's and the
 * feed-forward's outputs RMS-normalised before their residual adds; q_norm / k_norm over the whole q / k projection
 * before RoPE, no clipping; attention_bias on q, k, v and o) with OLMoE's feed-forward on every layer: a softmax
 * router over num_experts (7) SwiGLU experts of intermediate_size, top num_experts_per_tok (5), renormalised when
 * norm_topk_prob (false); rms_norm_eps 1e-6 (FlexOlmoConfig's); no sliding window. */
static kvc_status parse_flex_olmo(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(parse_olmo(hp, cfg));
    KVC_TRY(kvci_family_opt_num(&hp->cfg, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    return parse_moe(hp, cfg->model_type, cfg);
}

/* MiniMax-M2 (MiniMaxAI/MiniMax-M2, M2.1; MiniMaxM2ForCausalLM): FlexOlmo's attention in Llama's pre-norm blocks
 * (OLMo 2's q_norm / k_norm over the whole q / k projection before RoPE, no biases) with RoPE half-split over the
 * first rotary_dim channels of each head (hparams.c), and on every layer Mixtral's experts (block_sparse_moe, w1 / w3
 * / w2, of intermediate_size) chosen by a sigmoid router with a correction bias (block_sparse_moe.
 * e_score_correction_bias), top num_experts_per_tok (8) of num_local_experts (256; num_experts), the chosen sigmoid
 * scores renormalised: DeepSeek-V3's router with one group and scale 1 (kvci_ffn_deepseek); MiniMaxM2Config's head_dim
 * 128, 8 KV heads, theta 5e6 and rms_norm_eps 1e-6 when absent, untied. Refused by name: a single expert (the
 * runtime's grouped router scores a group by its two best). */
static kvc_status parse_minimax_m2(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_local_experts", "num_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    cfg->qk_norm = cfg->qk_norm_whole = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 256, top_k, 8, cfg));
    if (cfg->n_routed_experts < 2)
        return kvci_fail(
            KVC_EINVAL,
            "%s: minimax_m2 with num_local_experts 1 is not supported (the runtime's grouped router scores "
            "a group by its two best experts)",
            c->doc);
    cfg->moe_intermediate_size = cfg->intermediate_size;
    cfg->n_group = cfg->topk_group = 1, cfg->norm_topk_prob = true, cfg->routed_scaling_factor = 1.0;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    return KVC_OK;
}

/* A flag under any of keys (the first given; keys[0] when none), false when absent. */
static kvc_status flag_of(const kvc_json_obj *c, const char *const keys[KVC_HP_ALIASES], bool *out) {
    const char *key = kvci_hparams_key(c, keys);
    return kvci_family_opt_bool(c, key != NULL ? key : keys[0], false, out);
}

/* InternLM3 (internlm/internlm3-8b-instruct; model_type internlm3, which transformers 5.25 runs as LlamaForCausalLM
 * with InternLM3Config): Llama under Llama's names, qkv_bias and bias its names for attention_bias (q/k/v/o) and
 * mlp_bias (both false), head_dim 128, 2 KV heads and rms_norm_eps 1e-5 when absent, untied. Refused by name: the two
 * biases apart (InternLM3Config refuses them). */
static kvc_status parse_internlm3(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const attn_keys[KVC_HP_ALIASES] = {"attention_bias", "qkv_bias"};
    static const char *const mlp_keys[KVC_HP_ALIASES] = {"mlp_bias", "bias"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool attn = false, mlp = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(flag_of(c, attn_keys, &attn));
    KVC_TRY(flag_of(c, mlp_keys, &mlp));
    if (attn != mlp)
        return kvci_fail(KVC_EINVAL,
                         "%s: internlm3 with qkv_bias (attention_bias) %s and bias (mlp_bias) %s is not supported "
                         "(InternLM3Config refuses them apart)",
                         c->doc, attn ? "true" : "false", mlp ? "true" : "false");
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = attn;
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* CWM (facebook/cwm; CwmForCausalLM): Llama's layer and names with no attention bias (CwmAttention's q/k/v/o have none;
 * attention_bias is not read), mlp_bias (false), head_dim 128, 8 KV heads, rms_norm_eps 1e-5 and theta 1e6 when absent,
 * untied; its layers from layer_types, else every fourth from layer 0 full and the others sliding over sliding_window
 * (8192; CwmConfig's, dense_kinds). Refused by name: a config without rope_parameters / rope_scaling (CwmConfig's
 * implicit llama3 rope is not assumed; transformers writes it out). */
static kvc_status parse_cwm(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    if (hp->rope_source == NULL)
        return kvci_fail(KVC_EINVAL,
                         "%s: cwm without rope_parameters (or rope_scaling) is not supported (give CwmConfig's llama3 "
                         "rope explicitly)",
                         c->doc);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qkv_bias = cfg->o_bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias));
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* The key of keys that config c gives as a list (NULL: none). */
static const char *list_key(const kvc_json_obj *c, const char *const keys[KVC_HP_ALIASES]) {
    const char *key = kvci_hparams_key(c, keys);
    return key != NULL && cJSON_IsArray(kvci_json_find(c, key)) ? key : NULL;
}

/* HunYuan dense (tencent/Hunyuan-0.5B to 7B; HunYuanDenseV1ForCausalLM) and MoE (Hunyuan-A13B;
 * HunYuanMoEV1ForCausalLM): Llama's layer with per-head q/k RMSNorms (query_layernorm, key_layernorm, always:
 * use_qk_norm is not read) applied after RoPE, not before it as Qwen3's; attention_bias on q, k, v and o (false), no
 * MLP bias, rms_norm_eps 1e-5 when absent, untied by default; its "dynamic" rope with an alpha is hparams.c's
 * ntk_alpha_rope. The MoE's every layer: a softmax router (mlp.gate.wg) over num_experts (1) SwiGLU experts of
 * intermediate_size, top moe_topk (1), always renormalised, plus shared_mlp, an ungated SwiGLU of intermediate_size.
 * Refused by name: head_dim absent or null (the config classes leave it None, with which their attention cannot be
 * built), num_experts or moe_topk given per layer (a list). */
static kvc_status parse_hunyuan(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool bias = false;
    if (kvci_json_find(c, "head_dim") == NULL)
        return kvci_fail(KVC_EINVAL,
                         "%s: hunyuan_v1_dense without head_dim is not supported (HunYuanDenseV1Config leaves it None, "
                         "with which transformers cannot build the attention)",
                         c->doc);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false;
    cfg->qk_norm = cfg->qk_norm_after_rope = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    if (strcmp(cfg->model_type, "hunyuan_v1_moe") != 0) return KVC_OK;
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_experts", "num_local_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"moe_topk", "num_experts_per_tok"};
    const char *per_layer = list_key(c, experts_n);
    if (per_layer == NULL) per_layer = list_key(c, top_k);
    if (per_layer != NULL)
        return kvci_fail(KVC_EINVAL, "%s: hunyuan_v1_moe with %s per layer (a list) is not supported", c->doc,
                         per_layer);
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 1, top_k, 1, cfg));
    cfg->norm_topk_prob = true;
    cfg->moe_intermediate_size = cfg->shared_expert_intermediate_size = cfg->intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    return KVC_OK;
}

/* Llama's attention_bias (q/k/v and o) and mlp_bias, each def when absent. */
static kvc_status llama_biases(const kvc_json_obj *c, bool def, kvc_model_config *cfg) {
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", def, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias;
    return kvci_family_opt_bool(c, "mlp_bias", def, &cfg->mlp_bias);
}

/* Llama's head_dim, its two bias keys (bias when absent) and the norms' eps under eps_key (1e-5 when absent). */
static kvc_status llama_common(const kvc_hparams *hp, bool bias, const char *eps_key, kvc_model_config *cfg) {
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(llama_biases(&hp->cfg, bias, cfg));
    return kvci_family_opt_num(&hp->cfg, eps_key, 1e-5, eps, &cfg->rms_norm_eps);
}

/* Granite (ibm-granite/granite-3.x, GraniteForCausalLM): Llama with four multipliers, each 1 when absent
 * (GraniteConfig's): embedding_multiplier scales the embeddings, residual_multiplier each sub-layer's output
 * before its residual add, attention_multiplier is the softmax scale itself (1, not head_dim^-1/2, when
 * absent) and the logits are divided by logits_scaling. */
kvc_status kvci_family_parse_granite_scales(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    double embed = 1.0;
    KVC_TRY(kvci_family_opt_num(c, "embedding_multiplier", 1.0, positive, &embed));
    cfg->embed_scale = (float)embed;
    KVC_TRY(kvci_family_opt_num(c, "residual_multiplier", 1.0, positive, &cfg->residual_multiplier));
    KVC_TRY(kvci_family_opt_num(c, "attention_multiplier", 1.0, positive, &cfg->attention_multiplier));
    return kvci_family_opt_num(c, "logits_scaling", 1.0, positive, &cfg->logits_scaling);
}

/* HyperCLOVA X SEED (naver-hyperclovax/HyperCLOVAX-SEED-*, HyperCLOVAXForCausalLM): Granite's layer and multipliers
 * (embedding_multiplier, residual_multiplier, 1 when absent) with attention_multiplier head_dim^-1/2 when absent and
 * the logits times logits_scaling (Granite divides; kept here as its reciprocal, a divisor), biases by attention_bias
 * and mlp_bias (false), rms_norm_eps 1e-6, untied; with use_post_norm (true when absent) Peri-LN: an RMSNorm on each
 * sub-layer's output before the residual multiplier (post_norm1 after the attention, post_norm2 after the MLP; Gemma
 * 2's sandwich norms, weights.c's names). */
static kvc_status parse_hyperclovax(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const cJSON *am = kvci_json_find(c, "attention_multiplier");
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(llama_biases(c, false, cfg));
    KVC_TRY(kvci_family_parse_granite_scales(hp, cfg));
    if (am == NULL || cJSON_IsNull(am)) cfg->attention_multiplier = 0.0; /* head_dim^-1/2 (kvc_model_attn_scale) */
    cfg->logits_scaling = 1.0 / cfg->logits_scaling;
    KVC_TRY(kvci_family_opt_bool(c, "use_post_norm", true, &cfg->sandwich_norms));
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps);
}

/* GLM-4 (THUDM/GLM-4-*-0414, Glm4ForCausalLM): Llama with sandwich norms (post_self_attn_layernorm on the
 * attention output, post_attention_layernorm on the MLP's input, post_mlp_layernorm on its output), the fused
 * gate_up_proj (weights.c), q/k/v biases when attention_bias (true when absent), none on o_proj or the MLP,
 * RoPE on adjacent pairs of the first head_dim * partial_rotary_factor channels (0.5 when absent), head_dim 128
 * and rms_norm_eps 1.5625e-7 when absent (Glm4Config's). GLM (THUDM/glm-4-9b-chat-hf, GlmForCausalLM) is the
 * same without the sandwich norms (GlmConfig's defaults are Glm4Config's). */
static kvc_status parse_glm(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool bias = true;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", true, &bias));
    cfg->qkv_bias = bias, cfg->o_bias = cfg->mlp_bias = false;
    cfg->sandwich_norms = strcmp(cfg->model_type, "glm4") == 0, cfg->rope_form = KVC_ROPE_PAIRS;
    return kvci_family_opt_num(c, "rms_norm_eps", 1.5625e-7, eps, &cfg->rms_norm_eps);
}

/* Seed-OSS (ByteDance-Seed/Seed-OSS-*, SeedOssForCausalLM): Llama whose q/k/v biases follow attention_bias
 * (true when absent) and o_proj's its own attention_out_bias (false when absent), the MLP's mlp_bias; head_dim
 * 128 when absent (SeedOssConfig's). Its dropouts are training-only. */
static kvc_status parse_seed_oss(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", true, &cfg->qkv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "attention_out_bias", false, &cfg->o_bias));
    return kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias);
}

/* Helium (kyutai/helium-1-*, HeliumForCausalLM): Llama with RoPE on adjacent pairs, q/k/v biases by
 * attention_bias and none on o_proj, MLP biases by mlp_bias (both false when absent), head_dim 128, theta 1e5 and
 * rms_norm_eps 1e-8 when absent (HeliumConfig's). */
static kvc_status parse_helium(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias));
    cfg->o_bias = false, cfg->rope_form = KVC_ROPE_PAIRS;
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-8, eps, &cfg->rms_norm_eps);
}

/* The one activation `name` of type's ungated MLP: hidden_act `name` or absent, else refused by name. */
static kvc_status only_act(const kvc_json_obj *c, const char *type, const char *name) {
    const char *act = name;
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, name) != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_act \"%s\" is not supported (%s: %s)", c->doc, act, type, name);
    return KVC_OK;
}

/* Arcee (arcee-ai/AFM-*, ArceeForCausalLM): Llama with an ungated MLP down_proj(relu2(up_proj(x))) (hidden_act
 * relu2 when absent, ArceeConfig's; another is refused by name), biases on q/k/v/o by attention_bias and on the
 * MLP by mlp_bias (both false when absent), rms_norm_eps 1e-5 when absent. */
static kvc_status parse_arcee(const kvc_hparams *hp, kvc_model_config *cfg) {
    KVC_TRY(only_act(&hp->cfg, "arcee", "relu2"));
    cfg->mlp_act = KVC_MLP_RELU2, cfg->mlp_plain = true;
    return llama_common(hp, false, "rms_norm_eps", cfg);
}

/* IQuest-Coder-V1 (IQuestLab/IQuest-Coder-V1-*; model_type iquestcoder, which transformers 5.25 runs as
 * LlamaForCausalLM with IQuestCoderConfig): Llama, biases on q/k/v/o by attention_bias and on the MLP by mlp_bias (both
 * false when absent), head_dim 128, 8 KV heads and rms_norm_eps 1e-5 when absent, untied. Refused by name, as
 * IQuestCoderConfig refuses them: clip_qkv set, use_sliding_window true. */
static kvc_status parse_iquestcoder(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const cJSON *clip = kvci_json_find(c, "clip_qkv");
    bool window = false;
    KVC_TRY(kvci_family_opt_bool(c, "use_sliding_window", false, &window));
    if (window || (clip != NULL && !cJSON_IsNull(clip)))
        return kvci_fail(KVC_EINVAL, "%s: iquestcoder with %s is not supported (IQuestCoderConfig refuses it)", c->doc,
                         window ? "use_sliding_window true" : "clip_qkv");
    return llama_common(hp, false, "rms_norm_eps", cfg);
}

/* Jais 2 (inceptionai/Jais-2-8B-Chat, Jais2ForCausalLM): Llama's attention and names with LayerNorms with bias
 * (layer_norm_eps, 1e-5 when absent) in pre-norm blocks and as the final norm, an ungated MLP
 * down_proj(relu2(up_proj(x))) (Nemotron's; hidden_act relu2 when absent, another refused by name), biases on q/k/v/o
 * by attention_bias and on the MLP by mlp_bias (both true when absent), untied. */
static kvc_status parse_jais2(const kvc_hparams *hp, kvc_model_config *cfg) {
    KVC_TRY(only_act(&hp->cfg, "jais2", "relu2"));
    cfg->mlp_act = KVC_MLP_RELU2, cfg->mlp_plain = true, cfg->layer_norm = cfg->norm_bias = true;
    return llama_common(hp, true, "layer_norm_eps", cfg);
}

/* Apertus (swiss-ai/Apertus-*, ApertusForCausalLM): Llama with per-head RMS q/k norms before RoPE (Qwen3's), an
 * ungated MLP down_proj(xielu(up_proj(x))) whose xIELU holds learned scalars per layer (mlp.act_fn.alpha_p /
 * alpha_n / beta / eps; hidden_act xielu when absent, another is refused by name), biases on q/k/v/o by
 * attention_bias (false), none on the MLP, rms_norm_eps 1e-5 when absent. Its norms are attention_layernorm /
 * feedforward_layernorm (ckpt_names.c). ApertusConfig's rope when rope_parameters is absent (llama3, theta 1.2e7,
 * factor 8 over 8192) is not assumed: such a config is refused by name (the hub's configs all give it). */
static kvc_status parse_apertus(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(only_act(c, "apertus", "xielu"));
    if (hp->rope_source == NULL)
        return kvci_fail(KVC_EINVAL,
                         "%s: apertus without rope_parameters (or rope_scaling) is not supported (give ApertusConfig's "
                         "llama3 rope explicitly)",
                         c->doc);
    cfg->mlp_act = KVC_MLP_XIELU, cfg->mlp_plain = true, cfg->qk_norm = true;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false;
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* StableLM (stabilityai/stablelm-*, StableLmForCausalLM): LayerNorms with bias (layer_norm_eps, 1e-5 when
 * absent), RoPE on the first head_dim * partial_rotary_factor channels (0.25 when absent, hparams.c), q/k/v biases
 * by use_qkv_bias (false when absent) and none on o_proj or the MLP, a parallel block (attention and MLP both
 * reading input_layernorm's output) by use_parallel_residual (false); head_dim is always hidden_size /
 * num_attention_heads (its attention's: a head_dim key is not read, hparams.c). StableLM 2's
 * qk_layernorm: a LayerNorm without bias per query and per KV head (each its own module, norms.{h}), before RoPE,
 * as Cohere's per-head q/k norms. */
static kvc_status parse_stablelm(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_family_opt_bool(c, "qk_layernorm", false, &cfg->qk_norm));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: StableLmAttention reads no head_dim */
    KVC_TRY(kvci_family_opt_bool(c, "use_qkv_bias", false, &cfg->qkv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "use_parallel_residual", false, &cfg->parallel_block));
    cfg->o_bias = cfg->mlp_bias = false, cfg->layer_norm = cfg->norm_bias = true;
    return kvci_family_opt_num(c, "layer_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* OLMo (allenai/OLMo-*-hf, OlmoForCausalLM; OLMo 1): Llama whose LayerNorms have no weight or bias (eps 1e-5,
 * fixed in OlmoLayerNorm: no config key), biases on q/k/v/o by attention_bias (false when absent), none on the
 * MLP, and q, k, v clamped to +-clip_qkv right after their projections when set (null when absent: none). */
static kvc_status parse_olmo1(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range clip = {0.0, 3.4e38, true};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false;
    cfg->layer_norm = cfg->norm_weightless = true, cfg->rms_norm_eps = 1e-5;
    return kvci_family_opt_num(c, "clip_qkv", 0.0, clip, &cfg->clip_qkv);
}

/* ERNIE 4.5 dense (baidu/ERNIE-4.5-0.3B-PT, Ernie4_5ForCausalLM): Llama with RoPE on adjacent pairs over the whole
 * head, biases on q/k/v/o and the MLP by use_bias (false when absent), tied embeddings, head_dim 128, theta 5e5
 * and rms_norm_eps 1e-5 when absent (2 KV heads without the key: kvci_hparams_read_sizes). */
static kvc_status parse_ernie4_5(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool bias = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "use_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = bias, cfg->rope_form = KVC_ROPE_PAIRS;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* Cohere2's and EXAONE 4.0's layers without layer_types: sliding_window_pattern (4 when absent, their config
 * classes': three sliding layers, then one full). */
static kvc_status cohere2_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    bool found = false;
    KVC_TRY(kvci_family_pattern_kinds(ctx, &found, kinds));
    return found ? KVC_OK : kvci_family_every_nth_full(ctx, 4, kinds);
}

/* Cohere (Command-R, CohereForCausalLM) and Cohere 2 (Command R7B, Cohere2ForCausalLM): LayerNorms without
 * bias (layer_norm_eps, 1e-5 when absent), parallel blocks, RoPE on adjacent pairs, biases on q/k/v/o when
 * attention_bias (false when absent), the logits times logit_scale (0.0625 when absent), tied embeddings
 * by default; with use_qk_norm (Command R+), a LayerNorm of every q and k head before RoPE, each head with
 * its own weights. Cohere 2 rotates q and k on its sliding layers only (the full ones have no RoPE); its
 * attention reads a head_dim key (hidden_size / num_attention_heads without one). */
static kvc_status parse_cohere(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, positive = {0.0, KVC_HP_MAX_FACTOR, true};
    const bool compass = kvci_family_is_cohere_compass(cfg->model_type); /* Cohere 2's blocks (family_cohere_compass) */
    const bool cohere2 = strcmp(cfg->model_type, "cohere2") == 0;
    bool bias = false, qk_norm = false;
    if (!cohere2 && !compass) KVC_TRY(kvci_family_opt_bool(c, "use_qk_norm", false, &qk_norm)); /* Cohere 2: none */
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* Cohere2's attention reads a head_dim key too */
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false;
    cfg->layer_norm = cfg->parallel_block = true, cfg->qk_norm = qk_norm;
    cfg->rope_form = compass ? cfg->rope_form : KVC_ROPE_PAIRS; /* Compass: half-split heads */
    KVC_TRY(kvci_family_opt_num(c, "layer_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_opt_num(c, "logit_scale", compass ? 1.0 : 0.0625, positive, &cfg->logit_scale));
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    if (compass) return kvci_family_cohere_compass_ropes(hp, cfg);
    if (!cohere2) return KVC_OK;
    kvc_layer_kind k[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, k));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = k[l] == KVC_LK_FULL;
    return KVC_OK;
}

/* EXAONE 4.0 (LGAI-EXAONE/EXAONE-4.0-*, Exaone4ForCausalLM): OLMo 2's post-norm blocks
 * (post_attention_layernorm and post_feedforward_layernorm on the sub-layer outputs, no input norm) with
 * Qwen3's q/k norms (one [head_dim] weight for every head) before RoPE, no biases; rms_norm_eps 1e-5, window
 * 4096 and sliding_window_pattern 4 when absent (Exaone4Config's; layers as Cohere 2's, cohere2_kinds). With a
 * window its full layers leave q and k unrotated ("global NoPE"); without one every layer rotates. */
static kvc_status parse_exaone4(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    cfg->qk_norm = cfg->post_norms = true;
    kvc_layer_kind k[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(&kvc_family_dense, &ctx, k));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = ctx.window > 0 && k[l] == KVC_LK_FULL;
    return kvci_family_opt_num(&hp->cfg, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* Kolibri 1 (Aleph-Alpha/Kolibri-1, Kolibri1ForCausalLM): EXAONE 4.0's attention (per-head q/k norms before RoPE, no
 * biases; with a window its full layers unrotated, "global NoPE") in GLM-4's sandwich blocks (ckpt_names.c:
 * post_attn_norm, post_ffn_norm), and on every layer num_local_experts (num_experts; 384) SwiGLU experts of
 * moe_intermediate_size (512), top num_experts_per_tok (6) by logit + correction bias, weighted by the chosen logits'
 * sigmoids, renormalised when norm_topk_prob (false; kvci_ffn_kolibri), plus a shared MLP of
 * shared_expert_intermediate_size (512); no dense MLP (intermediate_size not read). Kolibri1Config's defaults: head_dim
 * 128, 4 KV heads, rms_norm_eps 1e-6, window 513 and every fifth layer full (hparams.c, dense_kinds). Refused by name:
 * sliding_window null (transformers' Kolibri1Model builds its sliding mask from it on every forward and fails). */
static kvc_status parse_kolibri1(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const n_keys[KVC_HP_ALIASES] = {"num_local_experts", "num_experts"};
    static const char *const k_keys[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    if (!kvci_json_missing(c, "sliding_window") && kvci_json_find(c, "sliding_window") == NULL) /* null */
        return kvci_fail(
            KVC_EINVAL, "%s: kolibri1 with sliding_window null is not supported (transformers' forward needs a window)",
            c->doc);
    KVC_TRY(parse_exaone4(hp, cfg));
    cfg->post_norms = false, cfg->sandwich_norms = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_expert_counts(c, n_keys, 384, k_keys, 6, cfg));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", false, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 512, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "shared_expert_intermediate_size", 512, 1, KVC_HP_MAX_WIDTH,
                                &cfg->shared_expert_intermediate_size));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    cfg->intermediate_size = cfg->moe_intermediate_size; /* no dense MLP */
    return KVC_OK;
}

/* StarCoder2 (bigcode/starcoder2-*, Starcoder2ForCausalLM): LayerNorms with bias (norm_epsilon, 1e-5 when
 * absent) in pre-norm blocks, a plain MLP c_fc -> gelu_pytorch_tanh -> c_proj, biases on q/k/v/o and the MLP
 * when use_bias (true when absent), tied embeddings by default, every layer sliding when sliding_window is set
 * (Starcoder2Config's None: none). Another hidden_act is refused by name. */
static kvc_status parse_starcoder2(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const char *act = "gelu_pytorch_tanh";
    bool have = false, bias = true;
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu_pytorch_tanh") != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_act \"%s\" is not supported (starcoder2: gelu_pytorch_tanh)", c->doc,
                         act);
    cfg->mlp_act = KVC_MLP_GELU_TANH;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "use_bias", true, &bias));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = bias;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps);
}

/* Ministral (MinistralForCausalLM): Mistral by layer_types (every layer sliding when absent and a window is set,
 * 4096 when absent; MinistralConfig's), no bias anywhere whatever the config says (its modules are built
 * without). */
static kvc_status parse_ministral(const kvc_hparams *hp, kvc_model_config *cfg) {
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    return KVC_OK;
}

/* Ministral 3 (Ministral3ForCausalLM, the text model of Mistral3ForConditionalGeneration's Ministral 3): Mistral
 * with head_dim 128 and rms_norm_eps 1e-5 when absent, no biases, every layer sliding when sliding_window is set
 * (none when absent), and Llama 4's query scaling by position: llama_4_scaling_beta and
 * original_max_position_embeddings of the rope dict. Refused by name: a config without a rope dict
 * (Ministral3Config's default YaRN is not reproduced), a dict without those two keys (transformers' attention
 * fails without them) and layer_types (transformers' Ministral 3 ignores them: its window is every layer's). */
static kvc_status parse_ministral3(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, beta = {0.0, KVC_HP_MAX_FACTOR, false};
    kvc_json_obj dict = {0};
    char path[64];
    bool have = false;
    if (kvci_json_find(c, "layer_types") != NULL)
        return kvci_fail(KVC_EINVAL,
                         "%s: ministral3 with layer_types is not supported (transformers ignores them: "
                         "sliding_window applies to every layer)",
                         c->doc);
    if (hp->rope_source == NULL || hp->rope_per_layer_type)
        return kvci_fail(KVC_EINVAL, "%s: ministral3 needs one rope dict (rope_parameters) with llama_4_scaling_beta",
                         c->doc);
    KVC_TRY(kvci_json_child(c, hp->rope_source, path, sizeof path, &dict, &have));
    KVC_TRY(kvci_json_num(&dict, "llama_4_scaling_beta", beta, &cfg->query_scale_beta, NULL));
    KVC_TRY(kvci_json_int(&dict, "original_max_position_embeddings", 1, KVC_HP_MAX_POSITIONS,
                          &cfg->query_scale_positions, NULL));
    KVC_TRY(parse_ministral(hp, cfg));
    return kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* SmolLM3's layers: if_nope for a layer with a 0 in no_rope_layers (1 means "uses rope", despite the name),
 * full for the others; without the list, the layers l with (l + 1) % no_rope_layer_interval == 0 have no rope
 * (SmolLM3Config's, interval 4 when absent). */
static kvc_status smollm3_kinds(const kvc_family_ctx *ctx, kvc_layer_kind if_nope, kvc_layer_kind *kinds) {
    const kvc_json_obj *c = &ctx->hp->cfg;
    const cJSON *list = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(c, "no_rope_layers", KVC_HP_MAX_LAYERS, &list, &have));
    if (have && list != NULL) return kvci_family_flag_kinds(ctx, "no_rope_layers", list, if_nope, KVC_LK_FULL, kinds);
    int64_t every = 4;
    KVC_TRY(kvci_family_opt_int(c, "no_rope_layer_interval", 4, 1, KVC_HP_MAX_LAYERS, &every));
    for (int64_t l = 0; l < ctx->n_layers; l++) kinds[l] = (l + 1) % every != 0 ? KVC_LK_FULL : if_nope;
    return KVC_OK;
}

/* SmolLM3 (HuggingFaceTB/SmolLM3-3B, SmolLM3ForCausalLM): Llama whose layers with a 0 in no_rope_layers
 * (1 means "uses rope", despite the name) leave q and k unrotated; tied embeddings and theta 2,000,000 by
 * default (SmolLM3Config's). */
static kvc_status parse_smollm3(const kvc_hparams *hp, kvc_model_config *cfg) {
    kvc_layer_kind k[KVC_MODEL_MAX_LAYERS]; /* KVC_LK_NONE marks the no-rope layers */
    const kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(smollm3_kinds(&ctx, KVC_LK_NONE, k));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = k[l] == KVC_LK_NONE;
    return kvci_family_opt_bool(&hp->cfg, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}

/* OLMoE (allenai/OLMoE-1B-7B-*, OlmoeForCausalLM): OLMo 2's q_norm / k_norm over the whole q / k projection in
 * Llama's pre-norm blocks, attention_bias on q, k, v and o alike (false when absent), q and k clamped to
 * +-clip_qkv after those norms and v after its projection when clip_qkv is set (null when absent: none), and on
 * every layer a softmax router over num_experts (64) SwiGLU experts of intermediate_size, top num_experts_per_tok
 * (8), renormalised when norm_topk_prob (false); rms_norm_eps 1e-5 (OlmoeConfig's). Its norms are sized from
 * hidden_size / num_attention_heads, so a head_dim that differs is refused; OlmoeConfig has no sliding window (the
 * eager and SDPA attentions ignore one: dense_kinds). */
static kvc_status parse_olmoe(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, clip = {0.0, 3.4e38, true};
    bool bias = false;
    KVC_TRY(head_dim_whole(hp, cfg, "which sizes its q/k norms"));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false;
    cfg->qk_norm = cfg->qk_norm_whole = true;
    KVC_TRY(kvci_family_opt_num(c, "clip_qkv", 0.0, clip, &cfg->clip_qkv));
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    return parse_moe(hp, cfg->model_type, cfg);
}

/* DeepSeek-V3's feed-forward on a grouped-query model (GLM-4.5, dots.llm1): dense MLPs on the first
 * first_k_dense_replace layers and on the others DeepSeek-V3's grouped sigmoid router (e_score_correction_bias;
 * kvci_ffn_deepseek) over n_routed_experts (num_local_experts) experts of moe_intermediate_size, top
 * num_experts_per_tok in topk_group (1) of n_group (1) groups, renormalised when norm_topk_prob, times
 * routed_scaling_factor (1), plus n_shared_experts shared experts as one MLP. d holds the class's defaults; a count
 * of 0 there is one the class leaves None, with which transformers cannot build the block: refused by name when absent
 * or null. */
typedef enum grouped_moe_names {
    GM_NAMES_GLM,    /* n_routed_experts (num_local_experts), n_shared_experts */
    GM_NAMES_EXAONE, /* K-EXAONE's: num_experts, num_shared_experts */
    GM_NAMES_SARVAM, /* Sarvam-MoE's and Param2-MoE's attribute maps: GLM-4.5's names and K-EXAONE's */
} grouped_moe_names;

typedef struct grouped_moe_defaults {
    int64_t first_dense, n_routed, n_shared, top_k, width; /* first_dense < 0: no dense layer, the key not read */
    bool norm_topk;
    double scale;            /* routed_scaling_factor when absent */
    grouped_moe_names names; /* the expert counts' keys */
    bool mlp_types;          /* mlp_layer_types, "dense" or "sparse" per layer, over first_k_dense_replace */
} grouped_moe_defaults;

static kvc_status moe_count(const kvc_json_obj *c, const char *const keys[KVC_HP_ALIASES], int64_t def, int64_t lo,
                            int64_t *out) {
    bool have = false;
    *out = def;
    KVC_TRY(kvci_hparams_int(c, keys, lo, KVC_HP_MAX_EXPERTS, out, &have));
    if (def == 0 && !have)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s is missing (its config class leaves it None, which transformers cannot run)", c->doc,
                         keys[0]);
    return KVC_OK;
}

static kvc_status parse_grouped_moe(const kvc_hparams *hp, const grouped_moe_defaults *d, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, true};
    static const char *const routed_keys[3][KVC_HP_ALIASES] = {
        {"n_routed_experts", "num_local_experts"},
        {"num_experts"},
        {"n_routed_experts", "num_local_experts", "num_experts"}};
    static const char *const shared_keys[3][KVC_HP_ALIASES] = {
        {"n_shared_experts"}, {"num_shared_experts"}, {"n_shared_experts", "num_shared_experts"}};
    const char *const *routed = routed_keys[d->names], *const *shared = shared_keys[d->names];
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    cfg->first_k_dense_replace = 0;
    if (d->first_dense >= 0)
        KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", d->first_dense, 0, KVC_HP_MAX_LAYERS,
                                    &cfg->first_k_dense_replace));
    KVC_TRY(
        kvci_family_opt_int(c, "moe_intermediate_size", d->width, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(moe_count(c, routed, d->n_routed, 1, &cfg->n_routed_experts));
    KVC_TRY(moe_count(c, shared, d->n_shared, 0, &cfg->n_shared_experts));
    KVC_TRY(moe_count(c, top_k, d->top_k, 1, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_int(c, "n_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->n_group));
    KVC_TRY(kvci_family_opt_int(c, "topk_group", 1, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", d->norm_topk, &cfg->norm_topk_prob));
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", d->scale, scale, &cfg->routed_scaling_factor));
    if (d->mlp_types)
        KVC_TRY(kvci_family_mlp_layer_types(c, cfg));
    else
        for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = l >= cfg->first_k_dense_replace;
    cfg->shared_expert_intermediate_size = cfg->n_shared_experts * cfg->moe_intermediate_size;
    return KVC_OK;
}

/* GLM-4.5 / 4.6 / Air (zai-org/GLM-4.5*, Glm4MoeForCausalLM): Llama with RoPE half-split over the first head_dim *
 * partial_rotary_factor channels (0.5 when absent, hparams.c), q/k/v biases by attention_bias and none on o_proj,
 * per-head q/k norms by use_qk_norm (both false when absent), and DeepSeek-V3's feed-forward (parse_grouped_moe) with
 * Glm4MoeConfig's defaults: the first 1 layer dense, 128 experts, top 8, 1 shared expert, renormalised;
 * rms_norm_eps 1e-5. Its MTP layers (num_nextn_predict_layers) are not read.
 * Sarvam-MoE (sarvamai/sarvam-30b; sarvam_moe) and Param2-MoE (bharatgenai/Param2-17B-A2.4B-*; param2moe) are config
 * classes transformers runs as Glm4MoeForCausalLM, with their attribute maps' names (num_experts, num_shared_experts,
 * use_qkv_bias) and their own defaults: whole heads rotated (partial_rotary_factor 1, hparams.c), use_qk_norm true,
 * rms_norm_eps 1e-6, top 6, times 2.5; Sarvam 128 experts of 1024 and 1 shared, Param2 64 of 2048, 2 shared and tied
 * embeddings. Their checkpoints' names are the original ones (ckpt_names.c). */
static kvc_status parse_glm4_moe(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const grouped_moe_defaults glm = {1, 128, 1, 8, 1408, true, 1.0, GM_NAMES_GLM, false};
    static const grouped_moe_defaults sarvam = {1, 128, 1, 6, 1024, true, 2.5, GM_NAMES_SARVAM, false};
    static const grouped_moe_defaults param2 = {1, 64, 2, 6, 2048, true, 2.5, GM_NAMES_SARVAM, false};
    static const char *const bias_keys[KVC_HP_ALIASES] = {"attention_bias", "use_qkv_bias"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const bool is_param2 = strcmp(cfg->model_type, "param2moe") == 0;
    const bool is_glm = strcmp(cfg->model_type, "glm4_moe") == 0;
    const char *bias = is_glm ? NULL : kvci_hparams_key(c, bias_keys);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, bias != NULL ? bias : "attention_bias", false, &cfg->qkv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "use_qk_norm", !is_glm, &cfg->qk_norm));
    cfg->o_bias = cfg->mlp_bias = false;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", is_glm ? 1e-5 : 1e-6, eps, &cfg->rms_norm_eps));
    if (is_param2) KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return parse_grouped_moe(hp, is_glm ? &glm : is_param2 ? &param2 : &sarvam, cfg);
}

/* MiniCPM5-MoE (openbmb/MiniCPM5-*; MiniCPM5MoeForCausalLM): Llama's attention whose q_gate_proj (saved as
 * self_attn.q_proj) holds each head's query and then its gate (Qwen3-Next's attn_output_gate: the output times
 * sigmoid(gate) before o_proj), biases
 * on q/k/v/o by attention_bias, whole heads rotated half-split (partial_rotary_factor not read), no q/k norms, and
 * DeepSeek-V3's feed-forward with MiniCPM5MoeConfig's defaults: mlp_layer_types, else the first first_k_dense_replace
 * (1) layers dense; 160 experts of 512, top 16, 1 shared, renormalised, times 3.66, 1 group; rms_norm_eps 1e-6;
 * head_dim 128, 2 KV heads and theta 5e6 when absent (hparams.c). Refused by name: use_gated_attention false (its
 * config class refuses it). */
static kvc_status parse_minicpm5_moe(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const grouped_moe_defaults minicpm5 = {1, 160, 1, 16, 512, true, 3.66, GM_NAMES_GLM, true};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool gated = true, bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "use_gated_attention", true, &gated));
    if (!gated)
        return kvci_fail(KVC_EINVAL,
                         "%s: minicpm5_moe with use_gated_attention false is not supported (its config "
                         "class refuses it: every layer's q_gate_proj holds a gate)",
                         c->doc);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false, cfg->qk_norm = false, cfg->attn_output_gate = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    return parse_grouped_moe(hp, &minicpm5, cfg);
}

/* Solar Open (upstage/Solar-Open-100B; SolarOpenForCausalLM): Llama's attention with q/k/v biases by attention_bias
 * and none on o_proj, whole heads rotated (partial_rotary_factor not read), and on every layer GLM-4.5's feed-forward
 * (parse_grouped_moe; SolarOpenConfig has no first_k_dense_replace, not read) with its defaults: 128 experts of 1280,
 * top 8, 1 shared expert, renormalised; head_dim 128, 8 KV heads, theta 1e6 and rms_norm_eps 1e-5 when absent, untied;
 * intermediate_size is not read (SolarOpenConfig has none: no dense MLP). */
static kvc_status parse_solar_open(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const grouped_moe_defaults solar = {-1, 128, 1, 8, 1280, true, 1.0, GM_NAMES_GLM, false};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    cfg->o_bias = cfg->mlp_bias = false;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(parse_grouped_moe(hp, &solar, cfg));
    cfg->intermediate_size = cfg->moe_intermediate_size; /* no dense MLP: intermediate_size is not read */
    return KVC_OK;
}

/* dots.llm1 (rednote-hilab/dots.llm1.base, .inst; Dots1ForCausalLM): Qwen3's attention (per-head q/k RMSNorms before
 * RoPE, biases on q/k/v/o by attention_bias) with DeepSeek-V3's feed-forward (parse_grouped_moe) and Dots1Config's
 * defaults: no dense layer first, norm_topk_prob false, n_routed_experts, n_shared_experts and num_experts_per_tok
 * required (None in the class); rms_norm_eps 1e-6; layers from max_window_layers (62) on slide over sliding_window
 * (4096) keys when it is set, use_sliding_window not read (dense_kinds). */
static kvc_status parse_dots1(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const grouped_moe_defaults dots = {0, 0, 0, 0, 1408, false, 1.0, GM_NAMES_GLM, false};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool bias = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = false, cfg->qk_norm = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-6, eps, &cfg->rms_norm_eps));
    return parse_grouped_moe(hp, &dots, cfg);
}

/* K-EXAONE (LGAI-EXAONE/K-EXAONE-*, ExaoneMoeForCausalLM): EXAONE 4.0's attention (q/k norms, its sliding layers
 * and global NoPE, parse_exaone4) in pre-norm blocks (input_layernorm, post_attention_layernorm: OLMoE's), with
 * DeepSeek-V3's feed-forward (parse_grouped_moe) under its names and ExaoneMoeConfig's defaults: mlp_layer_types, else
 * the first first_k_dense_replace (1) layers dense; num_experts 64 of 1024, top 8, num_shared_experts 1,
 * renormalised, times 2.5, 1 group; the router's correction bias beside the gate (ckpt_names.c). */
static kvc_status parse_exaone_moe(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const grouped_moe_defaults exaone = {1, 64, 1, 8, 1024, true, 2.5, GM_NAMES_EXAONE, true};
    KVC_TRY(parse_exaone4(hp, cfg));
    cfg->post_norms = false;
    return parse_grouped_moe(hp, &exaone, cfg);
}

/* ERNIE 4.5 MoE (baidu/ERNIE-4.5-21B-A3B, -300B-A47B; Ernie4_5_MoeForCausalLM): ERNIE 4.5 (parse_ernie4_5) whose
 * layers l with (l + 1) % moe_layer_interval == 0 in [moe_layer_start_index, moe_layer_end_index] (1, 1, -1: the last
 * layer) route moe_k (6; num_experts_per_tok) of moe_num_experts (64; num_experts) SwiGLU experts of
 * moe_intermediate_size (1536) by the softmax router with its correction bias (kvci_ffn_ernie_moe), weights over
 * max(their sum, moe_norm_min 1e-12), plus moe_num_shared_experts (2) shared experts as one MLP; the other layers the
 * dense MLP (Ernie4_5_MoeConfig's defaults). use_bias gives the shared experts and the head biases too (mlp_bias,
 * head_bias); the experts and the router have none. Its MTP layers (num_nextn_predict_layers) are not read
 * (transformers ignores them). */
static kvc_status parse_ernie4_5_moe(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range norm_min = {0.0, 1.0, false};
    static const char *const experts_n[KVC_HP_ALIASES] = {"moe_num_experts", "num_experts"};
    static const char *const k_n[KVC_HP_ALIASES] = {"moe_k", "num_experts_per_tok"};
    int64_t start = 1, end = -1, step = 1;
    KVC_TRY(parse_ernie4_5(hp, cfg));
    cfg->head_bias = cfg->mlp_bias; /* its lm_head takes use_bias too (ERNIE 4.5 dense's never) */
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 64, k_n, 6, cfg));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 1536, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "moe_num_shared_experts", 2, 0, KVC_HP_MAX_EXPERTS, &cfg->n_shared_experts));
    KVC_TRY(kvci_family_opt_int(c, "moe_layer_start_index", 1, 0, KVC_HP_MAX_LAYERS, &start));
    KVC_TRY(kvci_family_opt_int(c, "moe_layer_end_index", -1, -1, KVC_HP_MAX_LAYERS, &end));
    KVC_TRY(kvci_family_opt_int(c, "moe_layer_interval", 1, 1, KVC_HP_MAX_LAYERS, &step));
    KVC_TRY(kvci_family_opt_num(c, "moe_norm_min", 1e-12, norm_min, &cfg->moe_norm_min));
    end = end == -1 ? cfg->num_layers - 1 : end;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = (l + 1) % step == 0 && l >= start && l <= end;
    cfg->shared_expert_intermediate_size = cfg->n_shared_experts * cfg->moe_intermediate_size;
    return KVC_OK;
}

/* Phi-3.5-MoE's longrope (PhimoeRotaryEmbedding): the short factors at every position (its forward recomputes the
 * frequencies from the config, without the sequence length) and cos/sin times short_mscale, or long_mscale once the
 * forward's longest position passes original_max_position_embeddings (both required numbers, in place of the derived
 * attention factor). The runtime takes one attention factor for every position: the two must be equal (the hub's
 * are), else refused by name; the long factors become the short ones. */
static kvc_status phimoe_longrope(const kvc_hparams *hp, kvc_rope_config *r) {
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    kvc_json_obj dict = {0};
    char path[64];
    double mscale[2] = {0.0, 0.0};
    bool have = false;
    KVC_TRY(kvci_json_child(&hp->cfg, hp->rope_source, path, sizeof path, &dict, &have));
    KVC_TRY(kvci_json_num(&dict, "short_mscale", positive, &mscale[0], NULL));
    KVC_TRY(kvci_json_num(&dict, "long_mscale", positive, &mscale[1], NULL));
    if (mscale[0] != mscale[1])
        return kvci_fail(KVC_EINVAL,
                         "%s: phimoe longrope with short_mscale %g and long_mscale %g (transformers switches by the "
                         "forward\'s longest position): not supported, only equal ones",
                         hp->cfg.doc, mscale[0], mscale[1]);
    r->attention_factor = mscale[0], r->n_long_factors = r->n_short_factors;
    memcpy(r->long_factor, r->short_factor, sizeof r->long_factor);
    return KVC_OK;
}

/* Phi-3.5-MoE (microsoft/Phi-3.5-MoE-instruct, PhimoeForCausalLM): Mixtral's blocks (block_sparse_moe on every layer:
 * num_local_experts (16) SwiGLU experts of intermediate_size; every layer sliding when sliding_window is set) with
 * LayerNorms with bias (rms_norm_eps, 1e-5), q/k/v/o biases by attention_bias and the head's by lm_head_bias (both
 * false when absent), untied by default, theta 1e6 and 8 KV heads when absent (PhimoeConfig's), longrope with equal
 * mscales (phimoe_longrope), and SparseMixer's
 * router (kvci_ffn_phimoe): two experts, whatever num_experts_per_tok says (transformers' sparsemixer ignores it),
 * masked by router_jitter_noise (0.01). Refused by name: a rope type other than default and longrope, fewer than 2
 * experts. */
static kvc_status parse_phimoe(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, jitter = {0.0, 1.0, false};
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_local_experts"};
    bool have = false;
    if (cfg->rope.type == KVC_ROPE_LONGROPE) KVC_TRY(phimoe_longrope(hp, &cfg->rope));
    if (cfg->rope.type != KVC_ROPE_DEFAULT && cfg->rope.type != KVC_ROPE_LONGROPE)
        return kvci_fail(KVC_EINVAL, "%s: phimoe with rope type \"%s\" (default or longrope): not supported", c->doc,
                         kvc_rope_type_name(cfg->rope.type));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &cfg->qkv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "lm_head_bias", false, &cfg->head_bias));
    cfg->o_bias = cfg->qkv_bias, cfg->mlp_bias = false, cfg->layer_norm = cfg->norm_bias = true;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_opt_num(c, "router_jitter_noise", 0.01, jitter, &cfg->router_jitter_noise));
    cfg->n_routed_experts = 16;
    KVC_TRY(kvci_hparams_int(c, experts_n, 2, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts, &have));
    cfg->experts_per_tok = 2, cfg->moe_intermediate_size = cfg->intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    return KVC_OK;
}

/* DBRX (databricks/dbrx-*, DbrxForCausalLM): LayerNorms without bias (eps 1e-5, nn.LayerNorm's: no config key), q/k/v
 * fused in Wqkv and clamped to +-attn_config.clip_qkv before RoPE (required: DbrxAttention clamps by it), no biases,
 * head_dim d_model / n_heads, untied (tie_word_embeddings true is refused, as transformers does); every layer routes
 * ffn_config.moe_top_k (1) of moe_num_experts (4) SwiGLU experts of ffn_hidden_size (3584, config.c) by the softmax
 * router (kvci_ffn_softmax_moe), the k weights divided by their moe_normalize_expert_weights-norm (1: their sum,
 * norm_topk_prob; null: none). Refused by name: another norm, ffn_act_fn other than silu, attn_config.kv_n_heads
 * contradicting num_key_value_heads, and attn_config.rope_theta other than the rope's theta (transformers 5.25 takes
 * the top-level rope_parameters / rope_theta, 10000 when absent, and ignores it). */
static kvc_status parse_dbrx(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range clip = {0.0, 3.4e38, true}, pos = {0.0, KVC_HP_MAX_FACTOR, true};
    kvc_json_obj attn = {.doc = c->doc}, ffn = {.doc = c->doc}, act = {.doc = c->doc};
    char attn_path[32], ffn_path[32], act_path[48];
    const char *act_name = "silu";
    double theta = 0.0, p = 1.0;
    int64_t kv = 0;
    bool have_theta = false, have_kv = false, have = false;
    KVC_TRY(head_dim_whole(hp, cfg, "which DBRX\'s attention always uses"));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false, cfg->layer_norm = true, cfg->rms_norm_eps = 1e-5;
    if (cfg->tie_word_embeddings)
        return kvci_fail(KVC_EINVAL, "%s: dbrx with tie_word_embeddings true: not supported (transformers refuses it)",
                         c->doc);
    KVC_TRY(kvci_json_child(c, "attn_config", attn_path, sizeof attn_path, &attn, &have));
    KVC_TRY(kvci_json_num(&attn, "clip_qkv", clip, &cfg->clip_qkv, &have));
    if (!have) /* DbrxAttention clamps by it whatever it is: torch.clamp refuses a null bound */
        return kvci_fail(KVC_EINVAL,
                         "%s: dbrx without attn_config.clip_qkv: not supported (transformers 5.25 fails "
                         "clamping by a null bound)",
                         c->doc);
    KVC_TRY(kvci_json_int(&attn, "kv_n_heads", 1, KVC_HP_MAX_HEADS, &kv, &have_kv));
    if (have_kv && kv != cfg->num_kv_heads)
        return kvci_fail(KVC_EINVAL, "%s: dbrx attn_config.kv_n_heads %lld contradicts num_key_value_heads %lld",
                         c->doc, (long long)kv, (long long)cfg->num_kv_heads);
    KVC_TRY(kvci_json_num(&attn, "rope_theta", pos, &theta, &have_theta));
    if (have_theta && theta != cfg->rope.theta)
        return kvci_fail(KVC_EINVAL,
                         "%s: dbrx attn_config.rope_theta %g is not the rope's theta %g (transformers 5.25 takes "
                         "rope_parameters / rope_theta, 10000 when absent, and ignores attn_config.rope_theta): "
                         "state rope_theta",
                         c->doc, theta, cfg->rope.theta);
    KVC_TRY(kvci_json_child(c, "ffn_config", ffn_path, sizeof ffn_path, &ffn, &have));
    KVC_TRY(kvci_json_child(&ffn, "ffn_act_fn", act_path, sizeof act_path, &act, &have));
    KVC_TRY(kvci_json_str(&act, "name", KVC_HP_NAME_MAX, &act_name, &have));
    if (strcmp(act_name, "silu") != 0)
        return kvci_fail(KVC_EINVAL, "%s: dbrx ffn_config.ffn_act_fn name \"%s\" is not supported (silu)", c->doc,
                         act_name);
    KVC_TRY(kvci_family_opt_int(&ffn, "moe_num_experts", 4, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts));
    KVC_TRY(kvci_family_opt_int(&ffn, "moe_top_k", 1, 1, cfg->n_routed_experts, &cfg->experts_per_tok));
    const bool given = !kvci_json_missing(&ffn, "moe_normalize_expert_weights");
    KVC_TRY(kvci_json_num(&ffn, "moe_normalize_expert_weights", pos, &p, &have));
    cfg->norm_topk_prob = !given || have; /* null: the weights as they are */
    if (p != 1.0)
        return kvci_fail(KVC_EINVAL,
                         "%s: dbrx ffn_config.moe_normalize_expert_weights %g is not supported (1: the weights over "
                         "their sum, or null)",
                         c->doc, p);
    cfg->moe_intermediate_size = cfg->intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    return KVC_OK;
}

static kvc_status parse_dense_type(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const char *mt = cfg->model_type;
    if (kvci_family_is_phi3(mt)) return parse_phi3(hp, cfg);
    if (strcmp(mt, "olmo2") == 0 || strcmp(mt, "olmo3") == 0) return parse_olmo(hp, cfg);
    if (strcmp(mt, "flex_olmo") == 0) return parse_flex_olmo(hp, cfg);
    if (strcmp(mt, "hunyuan_v1_dense") == 0 || strcmp(mt, "hunyuan_v1_moe") == 0) return parse_hunyuan(hp, cfg);
    if (strcmp(mt, "gemma") == 0) return kvci_family_parse_gemma(hp, cfg);
    if (strcmp(mt, "glm4") == 0 || strcmp(mt, "glm") == 0) return parse_glm(hp, cfg);
    if (strcmp(mt, "cohere") == 0 || strcmp(mt, "cohere2") == 0 || kvci_family_is_cohere_compass(mt))
        return parse_cohere(hp, cfg);
    if (strcmp(mt, "seed_oss") == 0) return parse_seed_oss(hp, cfg);
    if (strcmp(mt, "exaone4") == 0) return parse_exaone4(hp, cfg);
    if (strcmp(mt, "exaone_moe") == 0) return parse_exaone_moe(hp, cfg);
    if (strcmp(mt, "starcoder2") == 0) return parse_starcoder2(hp, cfg);
    if (strcmp(mt, "ministral") == 0) return parse_ministral(hp, cfg);
    if (strcmp(mt, "ministral3") == 0) return parse_ministral3(hp, cfg);
    if (strcmp(mt, "helium") == 0) return parse_helium(hp, cfg);
    if (strcmp(mt, "arcee") == 0) return parse_arcee(hp, cfg);
    if (strcmp(mt, "apertus") == 0) return parse_apertus(hp, cfg);
    if (kvci_family_is_apertus1p5(mt)) {
        KVC_TRY(parse_apertus(hp, cfg));
        return kvci_family_parse_apertus1p5(hp, cfg);
    }
    if (strcmp(mt, "stablelm") == 0) return parse_stablelm(hp, cfg);
    if (strcmp(mt, "olmo") == 0) return parse_olmo1(hp, cfg);
    if (strcmp(mt, "ernie4_5") == 0) return parse_ernie4_5(hp, cfg);
    if (strcmp(mt, "ernie4_5_moe") == 0) return parse_ernie4_5_moe(hp, cfg);
    if (strcmp(mt, "phimoe") == 0) return parse_phimoe(hp, cfg);
    if (strcmp(mt, "dbrx") == 0) return parse_dbrx(hp, cfg);
    if (strcmp(mt, "olmoe") == 0) return parse_olmoe(hp, cfg);
    if (strcmp(mt, "glm4_moe") == 0 || strcmp(mt, "sarvam_moe") == 0 || strcmp(mt, "param2moe") == 0)
        return parse_glm4_moe(hp, cfg);
    if (strcmp(mt, "minicpm5_moe") == 0) return parse_minicpm5_moe(hp, cfg);
    if (strcmp(mt, "kolibri1") == 0) return parse_kolibri1(hp, cfg);
    if (strcmp(mt, "dots1") == 0) return parse_dots1(hp, cfg);
    if (strcmp(mt, "minimax_m2") == 0) return parse_minimax_m2(hp, cfg);
    if (strcmp(mt, "internlm3") == 0) return parse_internlm3(hp, cfg);
    if (strcmp(mt, "cwm") == 0) return parse_cwm(hp, cfg);
    if (strcmp(mt, "solar_open") == 0) return parse_solar_open(hp, cfg);
    if (strcmp(mt, "jais2") == 0) return parse_jais2(hp, cfg);
    if (strcmp(mt, "iquestcoder") == 0) return parse_iquestcoder(hp, cfg);
    if (strcmp(mt, "hyperclovax") == 0) return parse_hyperclovax(hp, cfg);
    if (strcmp(mt, "flint") == 0) return kvci_family_parse_flint(hp, cfg);
    if (strcmp(mt, "hy_v3") == 0) return kvci_family_parse_hy_v3(hp, cfg);
    if (strcmp(mt, "cohere2_moe") == 0) return kvci_family_parse_cohere2_moe(hp, cfg);
    if (strcmp(mt, "ergo") == 0) return kvci_family_parse_ergo(hp, cfg);
    if (strcmp(mt, "beam") == 0) return kvci_family_parse_beam(hp, cfg);
    if (strcmp(mt, "afmoe") == 0) return kvci_family_parse_afmoe(hp, cfg);
    if (kvci_family_is_mimo(mt)) return kvci_family_parse_mimo(hp, cfg);
    if (kvci_family_is_laguna(mt)) return kvci_family_parse_laguna(hp, cfg);
    if (kvci_family_is_mellum(mt)) return kvci_family_parse_mellum(hp, cfg);
    if (kvci_family_is_classic(mt)) return kvci_family_parse_classic(hp, cfg);
    if (kvci_family_is_bert(mt)) return kvci_family_parse_bert(hp, cfg);
    if (strcmp(mt, "nanochat") == 0) return kvci_family_parse_nanochat(hp, cfg);
    if (strcmp(mt, "diffllama") == 0) return kvci_family_parse_diffllama(hp, cfg);
    if (strcmp(mt, "bitnet") == 0) return kvci_family_parse_bitnet(hp, cfg);
    if (kvci_family_is_modernbert(mt)) return kvci_family_parse_modernbert(hp, cfg);
    if (strcmp(mt, "jetmoe") == 0) return kvci_family_parse_jetmoe(hp, cfg);
    if (kvci_family_is_qwen2_vl(mt)) return kvci_family_parse_qwen2_vl(hp, cfg);
    if (kvci_family_is_qwen3_vl(mt)) return kvci_family_parse_qwen3_vl(hp, cfg);
    if (kvci_family_is_emu3(mt)) return kvci_family_parse_emu3(hp, cfg);
    if (kvci_family_is_aria(mt)) return kvci_family_parse_aria(hp, cfg);
    if (kvci_family_is_mllama(mt)) return kvci_family_parse_mllama(hp, cfg);
    const bool qwen3_moe = strcmp(mt, "qwen3_moe") == 0, qwen2_moe = strcmp(mt, "qwen2_moe") == 0;
    const bool qwen3 = strcmp(mt, "qwen3") == 0 || qwen3_moe, qwen2 = strcmp(mt, "qwen2") == 0;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    /* attention_bias / mlp_bias where their transformers attention and MLP read them (Llama, Granite, SmolLM3 both;
     * Qwen3 and the MoEs attention_bias); Mistral's, Mixtral's and Qwen2's never do */
    const bool no_bias_keys = strcmp(mt, "mistral") == 0 || strcmp(mt, "mixtral") == 0 || qwen2 || qwen2_moe;
    const bool exaone = strcmp(mt, "exaone") == 0; /* ExaoneConfig: LlamaForCausalLM's reading of its keys */
    const bool reads_mlp_bias = strcmp(mt, "llama") == 0 || granite_dense(mt) || strcmp(mt, "smollm3") == 0 || exaone;
    bool attn_bias = false, mlp_bias = false;
    if (!no_bias_keys) KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &attn_bias));
    if (reads_mlp_bias) KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &mlp_bias));
    if (qwen2_moe) KVC_TRY(kvci_family_opt_bool(c, "qkv_bias", true, &attn_bias)); /* its key, o_proj never */
    cfg->qkv_bias = qwen2 ? true : attn_bias;
    cfg->o_bias = (qwen2 || qwen2_moe) ? false : attn_bias;
    cfg->mlp_bias = mlp_bias;
    cfg->qk_norm = qwen3;
    if (granite_dense(mt) || granite_moe(mt)) {
        if (granite_moe(mt)) cfg->mlp_bias = false; /* no dense MLP */
        KVC_TRY(kvci_family_parse_granite_scales(hp, cfg));
        if (granite_moe(mt)) KVC_TRY(parse_moe(hp, mt, cfg));
        return kvci_family_is_granite_swa(mt) ? kvci_family_parse_granite_swa(hp, cfg) : KVC_OK;
    }
    if (strcmp(mt, "smollm3") == 0) return parse_smollm3(hp, cfg);
    if (exaone) { /* rms_norm_eps, also layer_norm_epsilon (its attribute map), 1e-5 when absent */
        static const char *const eps_keys[KVC_HP_ALIASES] = {"rms_norm_eps", "layer_norm_epsilon"};
        const char *key = kvci_hparams_key(c, eps_keys);
        const kvc_json_range eps = {0.0, 1.0, false};
        return kvci_family_opt_num(c, key != NULL ? key : eps_keys[0], 1e-5, eps, &cfg->rms_norm_eps);
    }
    const bool moe = qwen3_moe || qwen2_moe || strcmp(mt, "mixtral") == 0;
    return moe ? parse_moe(hp, mt, cfg) : KVC_OK;
}

/* The text model of Mistral3ForConditionalGeneration (Mistral 3, Ministral 3; model_type mistral3, text_config
 * mistral or ministral3) ties its head by the top level's tie_word_embeddings (Mistral3Config's, true when absent),
 * not text_config's: transformers ties what the outer config says. LLaVA's and LLaVA-NeXT's text models take the
 * outer config's keys from kvci_family_parse_llava. */
static kvc_status parse_dense(const kvc_hparams *hp, kvc_model_config *cfg) {
    KVC_TRY(parse_dense_type(hp, cfg));
    const kvc_json_obj root = {.obj = hp->doc, .doc = hp->cfg.doc, .path = ""};
    const char *outer = NULL;
    bool have = false;
    KVC_TRY(kvci_json_str(&root, "model_type", KVC_HP_NAME_MAX, &outer, &have));
    if (have && kvci_family_is_llava(outer)) return kvci_family_parse_llava(hp, outer, cfg);
    if (!have || outer == NULL || strcmp(outer, "mistral3") != 0 || hp->cfg.obj == hp->doc) return KVC_OK;
    return kvci_family_opt_bool(&root, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}

/* The routed experts on the MoE layers (Granite MoE's router, ERNIE 4.5 MoE's, Phi-3.5-MoE's, DeepSeek-V3's grouped one
 * where n_group is set: GLM-4.5, else the softmax router), else the dense MLP. */
static kvc_status dense_ffn(const kvc_fwd_step *s, int64_t l) {
    const kvc_model_config *c = &s->m->cfg;
    if (!c->layer_moe[l]) return kvci_fwd_dense_mlp(s, l);
    if (c->attention_experts) return kvci_ffn_jetmoe(s, l);
    if (granite_moe(c->model_type)) return kvci_ffn_granite_moe(s, l);
    if (strcmp(c->model_type, "flint") == 0 || c->moe_route_sigmoid) return kvci_ffn_sigmoid_moe(s, l);
    if (strcmp(c->model_type, "cohere2_moe") == 0 || kvci_family_is_aria(c->model_type))
        return kvci_ffn_granite_moe(s, l); /* softmax of the top k */
    if (strcmp(c->model_type, "ernie4_5_moe") == 0) return kvci_ffn_ernie_moe(s, l);
    if (strcmp(c->model_type, "phimoe") == 0) return kvci_ffn_phimoe(s, l);
    if (strcmp(c->model_type, "kolibri1") == 0) return kvci_ffn_kolibri(s, l);
    return c->n_group > 0 ? kvci_ffn_deepseek(s, l, false) : kvci_ffn_softmax_moe(s, l);
}

/* JetMoE's attention experts, else GQA. */
static kvc_status dense_attention(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.attention_experts ? kvci_attn_moa(s, l) : kvci_attn_gqa(s, l);
}

/* GLM-4.5's routing sizes: DeepSeek-V3's rules; AFMoE's its own (one group); DiffLlama's KV heads in two halves. */
static kvc_status dense_check(const kvc_model_config *cfg, const char *doc) {
    if (cfg->diff_attn && (cfg->num_kv_heads % 2 != 0 || cfg->num_heads % cfg->num_kv_heads != 0))
        return kvci_fail(KVC_EINVAL, "%s: diff_attn needs an even num_kv_heads (%lld) dividing num_heads (%lld)", doc,
                         (long long)cfg->num_kv_heads, (long long)cfg->num_heads);
    if (strcmp(cfg->model_type, "afmoe") == 0 || strcmp(cfg->model_type, "ergo") == 0)
        return kvci_afmoe_check(cfg, doc);
    return cfg->n_group > 0 ? kvci_family_check_grouped_router(cfg, doc) : KVC_OK;
}

/* OLMo 3 without layer_types: every fourth layer full, the others sliding;
 * Cohere2 and EXAONE 4.0 without it: sliding_window_pattern, 4 when absent;
 * SmolLM3 without it: with use_sliding_window, its no-rope layers slide;
 * Qwen2/Qwen3 with use_sliding_window: windows from max_window_layers on;
 * Qwen2-MoE with it: the even layers below max_window_layers (its config
 * class's layer_types); otherwise every layer slides when the config sets a
 * window (Mistral, Phi-3, Mixtral, and Qwen3-MoE, whose window only
 * use_sliding_window enables; the types without a window never see one: dense_reads_window). */
static kvc_status dense_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    int64_t from = 0;
    const char *mt = ctx->hp->model_type;
    /* Olmo3Config's and DoryConfig's layer_types: three sliding layers, then one full */
    if (mt && (strcmp(mt, "olmo3") == 0 || strcmp(mt, "dory") == 0)) return kvci_family_every_nth_full(ctx, 4, kinds);
    if (mt && strcmp(mt, "afmoe") == 0) return kvci_afmoe_kinds(ctx, kinds); /* by global_attn_every_n_layers */
    if (kvci_family_is_mimo(mt)) return kvci_family_mimo_kinds(ctx, kinds);
    if (kvci_family_is_laguna(mt) || kvci_family_is_mellum(mt) || kvci_family_is_cohere_compass(mt))
        /* their config classes': every layer full */
        return kvci_family_full_kinds(ctx, kinds);
    if (mt && strcmp(mt, "dots1") == 0) { /* Dots1Config's: the layers from max_window_layers (62) on slide */
        bool have = false;
        from = 62;
        KVC_TRY(kvci_json_int(&ctx->hp->cfg, "max_window_layers", 0, KVC_HP_MAX_LAYERS, &from, &have));
        for (int64_t i = 0; i < ctx->n_layers; i++)
            kinds[i] = ctx->window > 0 && i >= from ? KVC_LK_SLIDING : KVC_LK_FULL;
        return KVC_OK;
    }
    if (mt && (strcmp(mt, "cohere2") == 0 || strcmp(mt, "exaone4") == 0 || strcmp(mt, "exaone_moe") == 0))
        return cohere2_kinds(ctx, kinds);
    if (mt && strcmp(mt, "flint") == 0) return kvci_family_flint_kinds(ctx, kinds);
    if (kvci_family_is_modernbert(mt)) return kvci_family_modernbert_kinds(ctx, kinds);
    /* Kolibri1Config's and Kolibri1_1Config's layer_types: four sliding layers, then one full (1.1: indexed) */
    if (mt && (strcmp(mt, "kolibri1") == 0 || strcmp(mt, "kolibri1_1") == 0))
        return kvci_family_every_nth_full(ctx, 5, kinds);
    if (mt && strcmp(mt, "cohere2_moe") == 0) return kvci_family_cohere2_moe_kinds(ctx, kinds);
    if (mt && strcmp(mt, "ergo") == 0) return kvci_family_ergo_kinds(ctx, kinds);
    if (mt && strcmp(mt, "beam") == 0) return kvci_family_beam_kinds(ctx, kinds);
    if (mt && (strcmp(mt, "cwm") == 0 || kvci_family_is_granite_swa(mt))) {
        /* CwmConfig's and GraniteSWAConfig's layer_types: every fourth from layer 0 full, the others slide */
        for (int64_t i = 0; i < ctx->n_layers; i++)
            kinds[i] = i % 4 != 0 && ctx->window > 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
        return KVC_OK;
    }
    if (kvci_family_is_mllama(mt)) return kvci_family_mllama_kinds(ctx, kinds);
    if (mt && strcmp(mt, "smollm3") == 0) /* SmolLM3Config's: with use_sliding_window, its no-rope layers slide */
        return smollm3_kinds(ctx, ctx->qwen_rule && ctx->window > 0 ? KVC_LK_SLIDING : KVC_LK_FULL, kinds);
    const bool qwen2_moe = mt && strcmp(mt, "qwen2_moe") == 0;
    if (ctx->qwen_rule && !(mt && strcmp(mt, "qwen3_moe") == 0)) {
        bool have = false;
        const bool vl = kvci_family_is_qwen2_vl(mt); /* Qwen2VLTextConfig's and Qwen2_5_VLTextConfig's default: 80 */
        from = vl ? 80 : 28;
        KVC_TRY(kvci_json_int(&ctx->hp->cfg, "max_window_layers", 0, KVC_HP_MAX_LAYERS, &from, &have));
        if (!have && !vl) kvci_family_warn(ctx, "max_window_layers absent: 28 assumed");
    }
    for (int64_t i = 0; i < ctx->n_layers; i++) {
        const bool slides = qwen2_moe ? i % 2 == 0 && i < from : i >= from;
        kinds[i] = ctx->window > 0 && slides ? KVC_LK_SLIDING : KVC_LK_FULL;
    }
    return KVC_OK;
}

/* The dense types whose attention in transformers 5.25 applies sliding_window (Qwen's only with use_sliding_window);
 * the others (Llama, Gemma, GLM, Cohere, OLMo 1/2, Phi, GPT-2, ...) have no window there: a config written from a
 * shared template, or a fine-tune's leftover key, runs as transformers runs it. Types planned only keep the key. */
static bool dense_reads_window(const kvc_hparams *hp) {
    static const char *const WINDOW_TYPES[] = {"mistral",
                                               "mixtral",
                                               "ministral",
                                               "ministral3",
                                               "mistral3",
                                               "qwen2",
                                               "qwen2_moe",
                                               "qwen3",
                                               "qwen3_moe",
                                               "phi3",
                                               "olmo3",
                                               "smollm3",
                                               "cohere2",
                                               "exaone4",
                                               "starcoder2",
                                               "qwen2_vl",
                                               "qwen2_5_vl",
                                               "qwen2_vl_text",
                                               "qwen2_5_vl_text",
                                               "phimoe",
                                               "gpt_neo",
                                               "dots1",
                                               "cwm",
                                               "exaone_moe",
                                               "granite_swa",
                                               "granitemoe_swa",
                                               "flint",
                                               "cohere2_moe",
                                               "afmoe",
                                               "kolibri1",
                                               "ergo",
                                               "mimo_v2_flash",
                                               "laguna",
                                               "mellum",
                                               "beam",
                                               "phi4_multimodal",
                                               "cohere_compass_text",
                                               "modernbert-decoder"};
    return !kvci_family_type_runs(hp->model_type) ||
           kvci_name_listed(hp->model_type, WINDOW_TYPES, sizeof WINDOW_TYPES / sizeof WINDOW_TYPES[0]);
}

static const kvc_family_alias ALIASES[] = {
    {"llama", "LlamaForCausalLM", "llama", true},
    {"mistral", "MistralForCausalLM", "mistral", true},
    {"mixtral", "MixtralForCausalLM", "mixtral", true},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", true},
    {"qwen2_moe", "Qwen2MoeForCausalLM", "qwen2_moe", true},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", true},
    {"qwen3_moe", "Qwen3MoeForCausalLM", "qwen3_moe", true},
    {"phi3", "Phi3ForCausalLM", "phi3", true},
    {"phi4_multimodal", "Phi4MultimodalForCausalLM", "phi3", true},
    {"olmo2", "Olmo2ForCausalLM", "olmo2", true},
    {"olmo3", "Olmo3ForCausalLM", "olmo3", true},
    {"granite", "GraniteForCausalLM", "granite", true},
    {"smollm3", "SmolLM3ForCausalLM", "smollm3", true},
    {"gemma", "GemmaForCausalLM", "gemma", true},
    {"glm", "GlmForCausalLM", "glm", true},
    {"glm4", "Glm4ForCausalLM", "glm4", true},
    {"cohere", "CohereForCausalLM", "cohere", true},
    {"cohere2", "Cohere2ForCausalLM", "cohere2", true},
    {"cohere_compass_text", "CohereCompassForCausalLM", "cohere_compass_text", true},
    {"seed_oss", "SeedOssForCausalLM", "seed_oss", true},
    {"exaone4", "Exaone4ForCausalLM", "exaone4", true},
    {"exaone_moe", "ExaoneMoeForCausalLM", "exaone_moe", true},
    {"starcoder2", "Starcoder2ForCausalLM", "starcoder2", true},
    {"ministral", "MinistralForCausalLM", "ministral", true},
    {"ministral3", "Ministral3ForCausalLM", "ministral3", true},
    {"helium", "HeliumForCausalLM", "helium", true},
    {"arcee", "ArceeForCausalLM", "arcee", true},
    {"apertus", "ApertusForCausalLM", "apertus", true},
    {"stablelm", "StableLmForCausalLM", "stablelm", true},
    {"olmo", "OlmoForCausalLM", "olmo", true},
    {"ernie4_5", "Ernie4_5ForCausalLM", "ernie4_5", true},
    {"olmoe", "OlmoeForCausalLM", "olmoe", true},
    {"granitemoe", "GraniteMoeForCausalLM", "granitemoe", true},
    {"granitemoeshared", "GraniteMoeSharedForCausalLM", "granitemoeshared", true},
    {"granite_swa", "GraniteSWAForCausalLM", "granite_swa", true},
    {"granitemoe_swa", "GraniteMoeSWAForCausalLM", "granitemoe_swa", true},
    {"glm4_moe", "Glm4MoeForCausalLM", "glm4_moe", true},
    {"sarvam_moe", NULL, "sarvam_moe", true}, /* transformers runs it as Glm4MoeForCausalLM */
    {"param2moe", NULL, "param2moe", true},
    {"minicpm5_moe", "MiniCPM5MoeForCausalLM", "minicpm5_moe", true},
    {"kolibri1", "Kolibri1ForCausalLM", "kolibri1", true},
    {"beam", "BeamForCausalLM", "beam", true},
    /* planned only: its sparse layers' indexer and NVFP4 rounding, layers reading others' K/V (family.c) */
    {"kolibri1_1", "Kolibri1_1ForCausalLM", "kolibri1_1", false},
    {"phi", "PhiForCausalLM", "phi", true},
    {"persimmon", "PersimmonForCausalLM", "persimmon", true},
    {"gpt_neox", "GPTNeoXForCausalLM", "gpt_neox", true},
    {"gpt2", "GPT2LMHeadModel", "gpt2", true},
    {"opt", "OPTForCausalLM", "opt", true},
    {"qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration", "qwen2", true},
    {"qwen2_5_vl_text", NULL, "qwen2", true},
    {"qwen2_vl", "Qwen2VLForConditionalGeneration", "qwen2", true},
    {"qwen2_vl_text", NULL, "qwen2", true},
    {"qwen3_vl", "Qwen3VLForConditionalGeneration", "qwen3", true},
    {"qwen3_vl_text", NULL, "qwen3", true},
    {"llava", "LlavaForConditionalGeneration", "llama", true},
    {"llava_next", "LlavaNextForConditionalGeneration", "llama", true},
    {"emu3", "Emu3ForConditionalGeneration", "emu3", true},
    {"emu3_text_model", "Emu3ForCausalLM", "emu3", true},
    {"apertus1p5", "Apertus1p5ForConditionalGeneration", "apertus", true},
    {"apertus1p5_text", "Apertus1p5TextForCausalLM", "apertus", true},
    {"aria", "AriaForConditionalGeneration", "aria", true},
    {"mllama", "MllamaForConditionalGeneration", "mllama_text_model", true},
    {"mllama_text_model", "MllamaForCausalLM", "mllama_text_model", true},
    {"aria_text", "AriaTextForCausalLM", "aria", true},
    {"gpt_bigcode", "GPTBigCodeForCausalLM", "gpt_bigcode", true},
    {"falcon", "FalconForCausalLM", "falcon", true},
    {"gptj", "GPTJForCausalLM", "gptj", true},
    {"nemotron", "NemotronForCausalLM", "nemotron", true},
    {"ernie4_5_moe", "Ernie4_5_MoeForCausalLM", "ernie4_5_moe", true},
    {"phimoe", "PhimoeForCausalLM", "phimoe", true},
    {"dbrx", "DbrxForCausalLM", "dbrx", true},
    {"bloom", "BloomForCausalLM", "bloom", true},
    {"mpt", "MptForCausalLM", "mpt", true},
    {"gpt_neo", "GPTNeoForCausalLM", "gpt_neo", true},
    {"codegen", "CodeGenForCausalLM", "codegen", true},
    {"flex_olmo", "FlexOlmoForCausalLM", "flex_olmo", true},
    {"hunyuan_v1_dense", "HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense", true},
    {"hunyuan_v1_moe", "HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe", true},
    {"biogpt", "BioGptForCausalLM", "biogpt", true},
    {"xglm", "XGLMForCausalLM", "xglm", true},
    {"openai-gpt", "OpenAIGPTLMHeadModel", "openai-gpt", true},
    {"ctrl", "CTRLLMHeadModel", "ctrl", true},
    {"gpt_neox_japanese", "GPTNeoXJapaneseForCausalLM", "gpt_neox_japanese", true},
    {"dots1", "Dots1ForCausalLM", "dots1", true},
    {"minimax_m2", "MiniMaxM2ForCausalLM", "minimax_m2", true},
    {"exaone", "ExaoneForCausalLM", "exaone", true},
    {"internlm3", "InternLM3ForCausalLM", "internlm3", true},
    {"cwm", "CwmForCausalLM", "cwm", true},
    {"solar_open", "SolarOpenForCausalLM", "solar_open", true},
    {"jais2", "Jais2ForCausalLM", "jais2", true},
    {"iquestcoder", "IQuestCoderForCausalLM", "iquestcoder", true},
    {"hyperclovax", "HyperCLOVAXForCausalLM", "hyperclovax", true},
    {"nanochat", "NanoChatForCausalLM", "nanochat", true},
    {"diffllama", "DiffLlamaForCausalLM", "diffllama", true},
    {"bitnet", "BitNetForCausalLM", "bitnet", true},
    {"modernbert-decoder", "ModernBertDecoderForCausalLM", "modernbert-decoder", true},
    {"flint", "FlintForCausalLM", "flint", true},
    {"hy_v3", "HYV3ForCausalLM", "hy_v3", true},
    {"cohere2_moe", "Cohere2MoeForCausalLM", "cohere2_moe", true},
    {"afmoe", "AfmoeForCausalLM", "afmoe", true},
    {"ergo", "ErgoForCausalLM", "ergo", true},
    {"jetmoe", "JetMoeForCausalLM", "jetmoe", true},
    {"dory", "DoryForCausalLM", "dory", false}, /* planned only: recurrent loops, nGPT layers (family.c) */
    {"mimo_v2_flash", "MiMoV2FlashForCausalLM", "mimo_v2_flash", true},
    {"laguna", "LagunaForCausalLM", "laguna", true},
    {"mellum", "MellumForCausalLM", "mellum", true},
    /* BERT-style encoders as decoders (is_decoder true; family_bert.c) */
    {"bert", "BertLMHeadModel", "bert", true},
    {"roberta", "RobertaForCausalLM", "roberta", true},
    {"xlm-roberta", "XLMRobertaForCausalLM", "xlm-roberta", true},
    {"camembert", "CamembertForCausalLM", "camembert", true},
    {"data2vec-text", "Data2VecTextForCausalLM", "data2vec-text", true},
    {"ernie", "ErnieForCausalLM", "ernie", true},
    {"bert-generation", "BertGenerationDecoder", "bert-generation", true},
    {"megatron-bert", "MegatronBertForCausalLM", "megatron-bert", true},
    {"xlm-roberta-xl", "XLMRobertaXLForCausalLM", "xlm-roberta-xl", true},
    {"roberta-prelayernorm", "RobertaPreLayerNormForCausalLM", "roberta-prelayernorm", true},
};

bool kvci_family_attn_sinks(const char *mt) {
    return kvci_family_is_granite_swa(mt) || (mt != NULL && strcmp(mt, "flint") == 0) || kvci_family_is_mimo(mt);
}

/* The planner's scale without attention_multiplier: Granite's and Granite MoE's default 1 (their config classes'),
 * GPT-Neo's 1 (its attention does not scale q.k), GPT-2's and GPT-BigCode's 1 with scale_attn_weights false, MPT's
 * attn_config.softmax_scale when given (parse_mpt's), else head_dim^-1/2. */
static kvc_status dense_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale) {
    const char *mt = ctx->hp->model_type;
    const bool unscaled = granite_dense(mt) || granite_moe(mt) || (mt && strcmp(mt, "gpt_neo") == 0);
    *scale = unscaled ? 1.0 : 1.0 / sqrt((double)head_dim);
    if (mt && (strcmp(mt, "gpt2") == 0 || strcmp(mt, "gpt_bigcode") == 0)) {
        bool scaled = true;
        KVC_TRY(kvci_family_opt_bool(&ctx->hp->cfg, "scale_attn_weights", true, &scaled));
        if (!scaled) *scale = 1.0;
    }
    if (mt && strcmp(mt, "mpt") == 0) {
        const kvc_json_range pos = {0.0, 3.4e38, true};
        kvc_json_obj attn = {.doc = ctx->hp->cfg.doc};
        char path[32];
        bool have = false;
        KVC_TRY(kvci_json_child(&ctx->hp->cfg, "attn_config", path, sizeof path, &attn, &have));
        KVC_TRY(kvci_json_num(&attn, "softmax_scale", pos, scale, &have));
    }
    return KVC_OK;
}

/* The per-layer dims of the types whose layers differ (MiMo-V2-Flash's); DiffLlama's caches (attn_diff.c: KV heads j
 * and j + nKV / 2 side by side, nKV / 2 heads of 2 head_dim); the others keep the model's. */
static kvc_status dense_layer_dims(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, int64_t *head_dim,
                                   int64_t *kv_heads, int64_t *v_head_dim) {
    if (kvci_family_is_mimo(ctx->hp->model_type))
        return kvci_family_mimo_layer_dims(ctx, kinds, head_dim, kv_heads, v_head_dim);
    if (ctx->hp->model_type == NULL || strcmp(ctx->hp->model_type, "diffllama") != 0) return KVC_OK;
    for (int64_t l = 0; l < ctx->n_layers; l++) head_dim[l] *= 2, kv_heads[l] /= 2; /* v_head_dim 0: head_dim's */
    return KVC_OK;
}

const kvc_family_desc kvc_family_dense = {
    .id = KVC_FAMILY_DENSE,
    .name = "dense",
    .aliases = ALIASES,
    .n_aliases = sizeof ALIASES / sizeof ALIASES[0],
    .parse = parse_dense,
    .check = dense_check,
    .default_kinds = dense_kinds,
    .softmax_scale = dense_scale,
    .attention = dense_attention,
    .ffn = dense_ffn,
    .reads_window = dense_reads_window,
    .layer_dims = dense_layer_dims,
};
