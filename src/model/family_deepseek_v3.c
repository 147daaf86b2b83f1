/* MLA models (MF 4.2 - 4.5): DeepSeek-V3, DeepSeek-V2, GLM-4.7-Flash (glm4_moe_lite: V3's layers, its MoE
 * layers named by mlp_layer_types), Youtu-LLM (youtu: V3's attention, every layer dense), MiniCPM3 (V2's attention,
 * every layer dense, Granite's scales), Sarvam-105B (sarvam_mla: V3's layers, its class's defaults and legacy key
 * names), A.X-K1 (axk1: V3's layers, a norm on the MoE output), A.X-K2 (axk2: V3.2's layers with gated norms and a
 * gated attention output, family_glm_dsa.c), GLM-5 (glm_moe_dsa) and DeepSeek-V3.2
 * (deepseek_v32: V3's layers with DeepSeek sparse attention, family_glm_dsa.c, attn_dsa.c) and LongCat-Flash
 * (longcat_flash: two MLA sub-layers per decoder layer, parse_longcat) run; Kimi-K2 is planned only. Every layer is
 * full attention over a latent cache (or, unabsorbed, nH heads of dn + dr keys and dv values); the first
 * first_k_dense_replace layers are dense, the rest a grouped-routing MoE (V3: sigmoid scores with a correction bias;
 * V2: softmax scores). */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

bool kvci_deepseek_v2(const kvc_model_config *cfg) {
    return cfg->family == KVC_FAMILY_DEEPSEEK_V3 && strcmp(cfg->model_type, "deepseek_v2") == 0;
}

static bool is_glm_lite(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "glm4_moe_lite") == 0; }
static bool is_youtu(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "youtu") == 0; }
static bool is_minicpm3(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "minicpm3") == 0; }
static bool is_sarvam(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "sarvam_mla") == 0; }
bool kvci_family_is_axk1(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "axk1") == 0; }
static bool is_axk2(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "axk2") == 0; }

/* V3's router defaults: DeepseekV3Config's, and Glm4MoeLiteConfig's (GLM-4.7-Flash). */
typedef struct {
    int64_t first_dense, width, experts, shared, per_tok, groups, topk_groups;
    double scale;
} v3_defaults;
static const v3_defaults V3 = {3, 2048, 256, 1, 8, 8, 4, 2.5};
static const v3_defaults GLM_LITE = {1, 1536, 64, 1, 4, 1, 1, 1.8};
static const v3_defaults SARVAM = {1, 2048, 128, 1, 8, 1, 1, 2.5};
static const v3_defaults AXK1 = {1, 2048, 192, 1, 8, 8, 4, 2.5};
static const v3_defaults GLM_DSA = {3, 2048, 256, 1, 8, 1, 1, 2.5};
static const v3_defaults AXK2 = {1, 512, 128, 1, 8, 1, 1, 2.5}; /* n_group None: one group of all experts */

/* An int key with its legacy spelling `alias` (SarvamMLAConfig's attribute_map, GlmMoeDsaConfig's num_experts: the
 * alias wins when both are given, as transformers applies it last), def when neither is given. */
static kvc_status opt_int_alias(const kvc_json_obj *c, const char *key, const char *alias, int64_t def, int64_t lo,
                                int64_t *out) {
    KVC_TRY(kvci_family_opt_int(c, key, def, lo, KVC_HP_MAX_EXPERTS, out));
    return alias != NULL ? kvci_family_opt_int(c, alias, *out, lo, KVC_HP_MAX_EXPERTS, out) : KVC_OK;
}

/* mlp_layer_types, "dense" or "sparse" per layer (GLM-4.7-Flash, K-EXAONE); absent: the layers from
 * cfg->first_k_dense_replace on are sparse. first_k_dense_replace becomes num_layers when no layer is sparse, else 0
 * (the router's keys checked: kvci_family_check_grouped_router). */
kvc_status kvci_family_mlp_layer_types(const kvc_json_obj *c, kvc_model_config *cfg) {
    const cJSON *types = NULL;
    bool have = false, any = false;
    KVC_TRY(kvci_json_array(c, "mlp_layer_types", KVC_HP_MAX_LAYERS, &types, &have));
    if (have && types != NULL && cJSON_GetArraySize(types) != cfg->num_layers)
        return kvci_fail(KVC_EINVAL, "%s: mlp_layer_types has %d entries for %lld layers", c->doc,
                         cJSON_GetArraySize(types), (long long)cfg->num_layers);
    for (int64_t l = 0; l < cfg->num_layers; l++) {
        const cJSON *t = have && types != NULL ? cJSON_GetArrayItem(types, (int)l) : NULL;
        if (t != NULL &&
            (!cJSON_IsString(t) || (strcmp(t->valuestring, "dense") != 0 && strcmp(t->valuestring, "sparse") != 0)))
            return kvci_fail(KVC_EINVAL, "%s: mlp_layer_types[%lld] must be \"dense\" or \"sparse\"", c->doc,
                             (long long)l);
        cfg->layer_moe[l] = t != NULL ? strcmp(t->valuestring, "sparse") == 0 : l >= cfg->first_k_dense_replace;
        any |= cfg->layer_moe[l];
    }
    cfg->first_k_dense_replace = any ? 0 : cfg->num_layers;
    return KVC_OK;
}

/* A.X-K1's MoE layers: mlp_layer_types, else layer l sparse when l >= first_k_dense_replace (1) and l %
 * moe_layer_freq (1) == 0, AXK1Config's legacy keys (read only without mlp_layer_types). */
static kvc_status axk1_layers(const kvc_json_obj *c, kvc_model_config *cfg) {
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(c->obj, "mlp_layer_types");
    if (types != NULL && !cJSON_IsNull(types)) return kvci_family_mlp_layer_types(c, cfg);
    int64_t first = 1, freq = 1;
    KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", 1, 0, KVC_HP_MAX_LAYERS, &first));
    KVC_TRY(kvci_family_opt_int(c, "moe_layer_freq", 1, 1, KVC_HP_MAX_LAYERS, &freq));
    bool any = false;
    for (int64_t l = 0; l < cfg->num_layers; l++) any |= cfg->layer_moe[l] = l >= first && l % freq == 0;
    cfg->first_k_dense_replace = any ? 0 : cfg->num_layers;
    return KVC_OK;
}

/* V3's MoE keys: RoPE by rope_interleave, the sigmoid router's groups; the dense layers V3's first
 * first_k_dense_replace, GLM-4.7-Flash's by mlp_layer_types. */
static kvc_status parse_v3_moe(const kvc_json_obj *c, kvc_model_config *cfg) {
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, true};
    const v3_defaults *d = is_glm_lite(cfg)              ? &GLM_LITE
                           : is_sarvam(cfg)              ? &SARVAM
                           : kvci_family_is_axk1(cfg)    ? &AXK1
                           : is_axk2(cfg)                ? &AXK2
                           : kvci_family_is_glm_dsa(cfg) ? &GLM_DSA
                                                         : &V3;
    const bool sarvam = is_sarvam(cfg);
    bool interleave = true;
    if (cfg->index_topk == 0) /* GLM-5's and DeepSeek-V3.2's attention always turns interleaved pairs */
        KVC_TRY(kvci_family_opt_bool(c, "rope_interleave", true, &interleave));
    cfg->rope_form = interleave ? KVC_ROPE_INTERLEAVED : KVC_ROPE_HALF;
    if (kvci_family_is_axk1(cfg) || is_axk2(cfg)) { /* AXK2Config derives its layers as AXK1Config */
        KVC_TRY(axk1_layers(c, cfg));
    } else if (cfg->index_topk > 0) { /* mlp_layer_types, else the first first_k_dense_replace (3) dense */
        KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", d->first_dense, 0, KVC_HP_MAX_LAYERS,
                                    &cfg->first_k_dense_replace));
        KVC_TRY(kvci_family_mlp_layer_types(c, cfg));
    } else if (is_glm_lite(cfg)) { /* its mlp_layer_types, layer 0 dense when absent; first_k_dense_replace not read */
        cfg->first_k_dense_replace = d->first_dense;
        KVC_TRY(kvci_family_mlp_layer_types(c, cfg));
    } else {
        KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", d->first_dense, 0, KVC_HP_MAX_LAYERS,
                                    &cfg->first_k_dense_replace));
        for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = l >= cfg->first_k_dense_replace;
    }
    KVC_TRY(
        kvci_family_opt_int(c, "moe_intermediate_size", d->width, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    /* GLM-5's and V3.2's BC name; A.X-K2's attribute_map */
    const char *experts_alias = is_axk2(cfg)                    ? "num_local_experts"
                                : sarvam || cfg->index_topk > 0 ? "num_experts"
                                                                : NULL;
    KVC_TRY(opt_int_alias(c, "n_routed_experts", experts_alias, d->experts, 1, &cfg->n_routed_experts));
    KVC_TRY(opt_int_alias(c, "n_shared_experts", sarvam ? "num_shared_experts" : NULL, d->shared, 0,
                          &cfg->n_shared_experts));
    KVC_TRY(kvci_family_opt_int(c, "num_experts_per_tok", d->per_tok, 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_int(c, "n_group", d->groups, 1, KVC_HP_MAX_EXPERTS, &cfg->n_group));
    KVC_TRY(kvci_family_opt_int(c, "topk_group", d->topk_groups, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    return kvci_family_opt_num(c, "routed_scaling_factor", d->scale, scale, &cfg->routed_scaling_factor);
}

/* V2's MoE keys (DeepseekV2Config's defaults: no dense layers, 64 experts of 1407, 2 shared, scaling 1). RoPE turns
 * adjacent pairs (its complex form). topk_method greedy is the one group of all experts; group_limited_greedy needs
 * n_group and topk_group, and num_experts_per_tok has no default (transformers fails without them). Not read,
 * as transformers 5.25's DeepseekV2 reads none of them: scoring_func (always softmax), norm_topk_prob (never
 * renormalised), moe_layer_freq (experts on every layer from first_k_dense_replace on). Refused by name: other
 * topk_methods, mlp_bias (the experts' biases). */
static kvc_status parse_v2_moe(const kvc_json_obj *c, kvc_model_config *cfg) {
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, true};
    const char *method = "greedy";
    bool have_k = false, have_s = false, bias = false;
    cfg->rope_form = KVC_ROPE_INTERLEAVED;
    KVC_TRY(kvci_family_opt_int(c, "first_k_dense_replace", 0, 0, KVC_HP_MAX_LAYERS, &cfg->first_k_dense_replace));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 1407, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "n_routed_experts", 64, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts));
    KVC_TRY(kvci_family_opt_int(c, "n_shared_experts", 2, 0, KVC_HP_MAX_EXPERTS, &cfg->n_shared_experts));
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", 1.0, scale, &cfg->routed_scaling_factor));
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &bias));
    if (bias) return kvci_fail(KVC_EINVAL, "%s: deepseek_v2 mlp_bias true is not supported", c->doc);
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = l >= cfg->first_k_dense_replace;
    if (cfg->first_k_dense_replace >= cfg->num_layers) return KVC_OK; /* no router: its keys unused */
    cfg->norm_topk_prob = false;
    KVC_TRY(kvci_json_int(c, "num_experts_per_tok", 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok, &have_k));
    if (!have_k)
        return kvci_fail(KVC_EINVAL, "%s: deepseek_v2 with MoE layers needs num_experts_per_tok (no default)", c->doc);
    KVC_TRY(kvci_json_str(c, "topk_method", KVC_HP_NAME_MAX, &method, &have_s));
    if (strcmp(method, "greedy") == 0) {
        cfg->n_group = cfg->topk_group = 1;
        return KVC_OK;
    }
    if (strcmp(method, "group_limited_greedy") != 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: deepseek_v2 topk_method \"%s\" is not supported (greedy, group_limited_greedy)", c->doc,
                         method);
    bool have_g = false, have_tg = false;
    KVC_TRY(kvci_json_int(c, "n_group", 1, KVC_HP_MAX_EXPERTS, &cfg->n_group, &have_g));
    KVC_TRY(kvci_json_int(c, "topk_group", 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group, &have_tg));
    if (!have_g || !have_tg)
        return kvci_fail(KVC_EINVAL,
                         "%s: deepseek_v2 topk_method group_limited_greedy needs n_group and topk_group (no default)",
                         c->doc);
    return KVC_OK;
}

/* Youtu-LLM (tencent/Youtu-LLM-2B, YoutuForCausalLM): DeepSeek-V3's MLA attention in Llama's layers, every one with
 * the dense SwiGLU MLP of intermediate_size (YoutuConfig has no MoE keys: none is read); RoPE by rope_interleave
 * (true when absent), tied by default. */
static kvc_status parse_youtu(const kvc_json_obj *c, kvc_model_config *cfg) {
    bool interleave = true;
    KVC_TRY(kvci_family_opt_bool(c, "rope_interleave", true, &interleave));
    cfg->rope_form = interleave ? KVC_ROPE_INTERLEAVED : KVC_ROPE_HALF;
    cfg->first_k_dense_replace = cfg->num_layers, cfg->routed_scaling_factor = 1.0; /* no router */
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = false;
    return kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}

/* MiniCPM3 (openbmb/MiniCPM3-4B, MiniCPM3ForCausalLM): DeepSeek-V2's MLA modules with RoPE on the half-split rope
 * slice (its apply_rotary_pos_emb), Llama's layers each with the dense SwiGLU MLP (mlp_bias, false), the embeddings
 * times scale_emb (12), each sub-layer's output times scale_depth / sqrt(num_hidden_layers) (scale_depth 1.4; null:
 * sqrt(layers)) before its residual add, the final hidden state divided by hidden_size / dim_model_base (256; null:
 * hidden_size; the runtime divides the logits instead: the same up to rounding); tied, rms_norm_eps 1e-5 by
 * default. MLA sizes by MiniCPM3Config's defaults (hparams.c). */
static kvc_status parse_minicpm3(const kvc_json_obj *c, kvc_model_config *cfg) {
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    /* missing: the class's value; null: the derived one */
    const double depth0 = kvci_json_missing(c, "scale_depth") ? 1.4 : sqrt((double)cfg->num_layers);
    const double base0 = kvci_json_missing(c, "dim_model_base") ? 256.0 : (double)cfg->hidden_size;
    double emb = 12.0, depth = depth0, base = base0;
    KVC_TRY(kvci_family_opt_num(c, "scale_emb", 12.0, positive, &emb));
    KVC_TRY(kvci_family_opt_num(c, "scale_depth", depth0, positive, &depth));
    KVC_TRY(kvci_family_opt_num(c, "dim_model_base", base0, positive, &base));
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &cfg->mlp_bias));
    cfg->rope_form = KVC_ROPE_HALF;
    cfg->embed_scale = (float)emb;
    cfg->residual_multiplier = depth / sqrt((double)cfg->num_layers);
    cfg->logits_scaling = (double)cfg->hidden_size / base;
    cfg->first_k_dense_replace = cfg->num_layers, cfg->routed_scaling_factor = 1.0; /* no router */
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = false;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    return kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}

static bool is_longcat(const kvc_model_config *cfg) { return strcmp(cfg->model_type, "longcat_flash") == 0; }

/* LongCat-Flash (meituan-longcat/LongCat-Flash-Chat, LongcatFlashForCausalLM): num_layers (hparams.c) counts the
 * attention sub-layers, two per decoder layer, each with a dense MLP of ffn_hidden_size (12288); the even one's MLP
 * input also feeds the decoder layer's MoE, added after the odd one's MLP (kvci_ffn_longcat). The router: softmax over
 * n_routed_experts (512) of expert_ffn_hidden_size (2048) plus zero_expert_num (256; null: none) zero experts, moe_topk
 * (12) by the scores plus the correction bias, times routed_scaling_factor (6). Queries times sqrt(hidden_size /
 * q_lora_rank), the normalised latent times sqrt(hidden_size / kv_lora_rank); RoPE on interleaved pairs always.
 * Refused by name: q_lora_rank null (its scale divides by it), qk_head_dim other than qk_nope + qk_rope, head_dim
 * (its RoPE's width, 64) other than qk_rope_head_dim, router_bias true. */
static kvc_status parse_longcat(const kvc_json_obj *c, kvc_model_config *cfg) {
    const kvc_json_range scale = {0.0, KVC_HP_MAX_FACTOR, true};
    bool bias = false, have = false;
    if (cfg->q_lora_rank == 0)
        return kvci_fail(KVC_EINVAL, "%s: longcat_flash q_lora_rank null is not supported (its q scale divides by it)",
                         c->doc);
    int64_t qk = cfg->qk_nope_head_dim + cfg->qk_rope_head_dim;
    KVC_TRY(kvci_json_int(c, "qk_head_dim", 1, KVC_HP_MAX_WIDTH, &qk, &have));
    if (qk != cfg->qk_nope_head_dim + cfg->qk_rope_head_dim)
        return kvci_fail(KVC_EINVAL, "%s: longcat_flash qk_head_dim %lld must be qk_nope_head_dim + qk_rope_head_dim",
                         c->doc, (long long)qk);
    int64_t rope = 64; /* its rotary embedding's width: head_dim (64), which must be qk_rope_head_dim */
    KVC_TRY(kvci_family_opt_int(c, "head_dim", 64, 1, KVC_HP_MAX_WIDTH, &rope));
    if (rope != cfg->qk_rope_head_dim)
        return kvci_fail(KVC_EINVAL, "%s: longcat_flash head_dim %lld must be qk_rope_head_dim %lld (its RoPE width)",
                         c->doc, (long long)rope, (long long)cfg->qk_rope_head_dim);
    KVC_TRY(kvci_family_opt_bool(c, "router_bias", false, &bias));
    if (bias) return kvci_fail(KVC_EINVAL, "%s: longcat_flash router_bias true is not supported", c->doc);
    if (kvci_json_missing(c, "rms_norm_eps")) cfg->rms_norm_eps = 1e-5; /* LongcatFlashConfig's */
    cfg->rope_form = KVC_ROPE_INTERLEAVED;
    KVC_TRY(kvci_family_opt_int(c, "ffn_hidden_size", 12288, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "expert_ffn_hidden_size", 2048, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "n_routed_experts", 512, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts));
    const cJSON *zero = cJSON_GetObjectItemCaseSensitive(c->obj, "zero_expert_num"); /* null: none (`or 0`) */
    cfg->zero_experts = 0;
    if (zero == NULL || !cJSON_IsNull(zero))
        KVC_TRY(kvci_family_opt_int(c, "zero_expert_num", 256, 0, KVC_HP_MAX_EXPERTS, &cfg->zero_experts));
    KVC_TRY(kvci_family_opt_int(c, "moe_topk", 12, 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_num(c, "routed_scaling_factor", 6.0, scale, &cfg->routed_scaling_factor));
    cfg->n_shared_experts = 0, cfg->n_group = cfg->topk_group = 1, cfg->norm_topk_prob = false;
    cfg->first_k_dense_replace = 0, cfg->moe_shortcut = true;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = l % 2 == 0;
    cfg->mla_q_scale = sqrt((double)cfg->hidden_size / (double)cfg->q_lora_rank);
    cfg->mla_kv_scale = sqrt((double)cfg->hidden_size / (double)cfg->kv_lora_rank);
    return KVC_OK;
}

static kvc_status parse_deepseek(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    kvc_mla_dims d;
    KVC_TRY(kvci_hparams_read_mla(hp, &d));
    cfg->q_lora_rank = d.q_lora_rank;
    cfg->kv_lora_rank = d.kv_lora_rank;
    cfg->qk_nope_head_dim = d.qk_nope_head_dim;
    cfg->qk_rope_head_dim = d.qk_rope_head_dim;
    cfg->v_head_dim = d.v_head_dim;
    bool attn_bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &attn_bias));
    cfg->qkv_bias = cfg->o_bias = attn_bias;
    cfg->head_dim = cfg->qk_rope_head_dim;
    if (is_glm_lite(cfg)) { /* Glm4MoeLiteConfig's q_lora_rank 768 and rms_norm_eps 1e-5 when absent */
        if (kvci_json_missing(c, "q_lora_rank")) cfg->q_lora_rank = 768;
        if (kvci_json_missing(c, "rms_norm_eps")) cfg->rms_norm_eps = 1e-5;
    }
    /* AXK1Attention (GLM-5's and DeepSeek-V3.2's too) builds q_a_proj of q_lora_rank */
    const bool v32 = strcmp(cfg->model_type, "deepseek_v32") == 0;
    if ((kvci_family_is_axk1(cfg) || kvci_family_is_glm_dsa(cfg) || v32 || is_axk2(cfg)) && cfg->q_lora_rank == 0)
        return kvci_fail(KVC_EINVAL, "%s: %s q_lora_rank null is not supported (its attention always has a q LoRA)",
                         c->doc, cfg->model_type);
    if (kvci_family_is_glm_dsa(cfg)) {
        if (kvci_json_missing(c, "rms_norm_eps")) cfg->rms_norm_eps = 1e-5; /* GlmMoeDsaConfig's */
        KVC_TRY(kvci_family_parse_glm_dsa(c, cfg));
    }
    if (v32) KVC_TRY(kvci_family_parse_v32_dsa(c, cfg));
    if (is_axk2(cfg)) KVC_TRY(kvci_family_parse_axk2(c, cfg));
    KVC_TRY(kvci_deepseek_v2(cfg) ? parse_v2_moe(c, cfg)
            : is_longcat(cfg)     ? parse_longcat(c, cfg)
            : is_youtu(cfg)       ? parse_youtu(c, cfg)
            : is_minicpm3(cfg)    ? parse_minicpm3(c, cfg)
                                  : parse_v3_moe(c, cfg));
    cfg->shared_expert_intermediate_size = cfg->n_shared_experts * cfg->moe_intermediate_size;
    return KVC_OK;
}

/* MoE layers route each token to experts_per_tok of n_routed_experts in topk_group of n_group groups
 * (MF 4.5), with a finite scale on the routed weights. */
kvc_status kvci_family_check_grouped_router(const kvc_model_config *cfg, const char *doc) {
    if (!(cfg->routed_scaling_factor > 0.0 && cfg->routed_scaling_factor <= KVC_HP_MAX_FACTOR))
        return kvci_fail(KVC_EINVAL, "%s: routed_scaling_factor %g outside (0, %g]", doc, cfg->routed_scaling_factor,
                         KVC_HP_MAX_FACTOR);
    if (cfg->first_k_dense_replace >= cfg->num_layers) return KVC_OK;
    if (cfg->moe_shortcut && cfg->experts_per_tok > cfg->n_routed_experts + cfg->zero_experts) /* one group */
        return kvci_fail(KVC_EINVAL, "%s: moe_topk %lld above n_routed_experts + zero_expert_num %lld", doc,
                         (long long)cfg->experts_per_tok, (long long)(cfg->n_routed_experts + cfg->zero_experts));
    if (cfg->moe_shortcut) return KVC_OK;
    const int64_t E = cfg->n_routed_experts, g = cfg->n_group, tg = cfg->topk_group, k = cfg->experts_per_tok;
    const int64_t per = kvci_deepseek_v2(cfg) ? 1 : 2; /* experts a group's score reads: V2 its largest, V3 its top 2 */
    if (E < 1 || g < 1 || tg < 1 || k < 1 || E % g != 0 || E / g < per || tg > g || k > tg * (E / g))
        return kvci_fail(KVC_EINVAL,
                         "%s: MoE routing sizes are inconsistent (n_routed_experts %lld, n_group %lld, topk_group "
                         "%lld, num_experts_per_tok %lld): need E %% n_group == 0, E/n_group >= %lld, topk_group <= "
                         "n_group, k <= topk_group * E/n_group, all >= 1",
                         doc, (long long)E, (long long)g, (long long)tg, (long long)k, (long long)per);
    return KVC_OK;
}

/* The dense layers (layer_moe false): the dense MLP; the rest: routed and shared experts. */
static kvc_status deepseek_ffn(const kvc_fwd_step *s, int64_t l) {
    if (s->m->cfg.moe_shortcut) return kvci_ffn_longcat(s, l);
    return s->m->layers[l].moe ? kvci_ffn_deepseek(s, l, kvci_deepseek_v2(&s->m->cfg)) : kvci_fwd_dense_mlp(s, l);
}

static const kvc_family_alias ALIASES[] = {
    {"deepseek_v2", "DeepseekV2ForCausalLM", "deepseek_v2", true},
    {"deepseek_v3", "DeepseekV3ForCausalLM", "deepseek_v3", true},
    {"glm4_moe_lite", "Glm4MoeLiteForCausalLM", "glm4_moe_lite", true},
    {"deepseek_v32", "DeepseekV32ForCausalLM", "deepseek_v32", true},
    {"kimi_k2", NULL, "kimi_k2", false},
    {"sarvam_mla", "SarvamMLAForCausalLM", "sarvam_mla", true},
    {"axk1", "AXK1ForCausalLM", "axk1", true},
    {"axk2", "AXK2ForCausalLM", "axk2", true},
    {"glm_moe_dsa", "GlmMoeDsaForCausalLM", "glm_moe_dsa", true},
    /* LongCat-Flash: two MLA attention layers per decoder layer (hparams.c counts them) */
    {"longcat_flash", "LongcatFlashForCausalLM", "longcat_flash", true},
    {"youtu", "YoutuForCausalLM", "youtu", true},
    {"minicpm3", "MiniCPM3ForCausalLM", "minicpm3", true},
};

const kvc_family_desc kvc_family_deepseek_v3 = {
    .id = KVC_FAMILY_DEEPSEEK_V3,
    .name = "deepseek_v3",
    .aliases = ALIASES,
    .n_aliases = sizeof ALIASES / sizeof ALIASES[0],
    .mla = true,
    .parse = parse_deepseek,
    .check = kvci_family_check_grouped_router,
    .default_kinds = kvci_family_full_kinds,
    .cache_dims = kvci_family_mla_cache_dims,
    .attention = kvci_attn_mla,
    .ffn = deepseek_ffn,
};
