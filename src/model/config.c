/* config.json of the three families (MF 2, 3.1, 4.1) into kvc_model_config:
 * the shared reader (hparams.h) gives the identity, sizes, rope and MLA
 * dims; this file adds the keys only the runtime uses, with the same
 * accessors and bounds. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/hparams.h"
#include "model/model_internal.h"

static const kvc_json_range EPS_RANGE = {0.0, 1.0, false};
static const kvc_json_range SCALE_RANGE = {0.0, KVC_HP_MAX_FACTOR, true};

/* Optional members with a default (stored first, kept when absent). */
static kvc_status opt_int(const kvc_json_obj *c, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out) {
    bool have = false;
    *out = def;
    return kvci_json_int(c, key, lo, hi, out, &have);
}

static kvc_status opt_num(const kvc_json_obj *c, const char *key, double def, kvc_json_range r, double *out) {
    bool have = false;
    *out = def;
    return kvci_json_num(c, key, r, out, &have);
}

static kvc_status opt_bool(const kvc_json_obj *c, const char *key, bool def, bool *out) {
    bool have = false;
    *out = def;
    return kvci_json_bool(c, key, out, &have);
}

const char *kvc_model_family_name(kvc_model_family f) {
    switch (f) {
    case KVC_FAMILY_DENSE: return "dense";
    case KVC_FAMILY_GPT_OSS: return "gpt_oss";
    case KVC_FAMILY_DEEPSEEK_V3: return "deepseek_v3";
    }
    return "?";
}

/* The runtime implements default, llama3 and yarn rope. */
static kvc_status take_rope(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_rope_type t = hp->rope.type;
    if (hp->rope_per_layer_type)
        return kvci_fail(KVC_EINVAL, "%s: %s holds one rope per layer type, which the runtime does not support",
                         hp->cfg.doc, hp->rope_source);
    if (t != KVC_ROPE_DEFAULT && t != KVC_ROPE_LLAMA3 && t != KVC_ROPE_YARN)
        return kvci_fail(KVC_EINVAL, "%s: rope type \"%s\" is not supported by the runtime (default, llama3, yarn)",
                         hp->cfg.doc, kvc_rope_type_name(t));
    cfg->rope = hp->rope;
    return KVC_OK;
}

/* layer_types list, or the family's rule when absent. */
static kvc_status parse_layer_types(const kvc_json_obj *c, kvc_model_config *cfg, bool sliding_default_rule) {
    const cJSON *lt = NULL;
    bool have = false;
    const int64_t L = cfg->num_layers;
    KVC_TRY(kvci_json_array(c, "layer_types", L, &lt, &have));
    if (!have) {
        for (int64_t i = 0; i < L; i++) cfg->layer_sliding[i] = sliding_default_rule;
        return KVC_OK;
    }
    if (cJSON_GetArraySize(lt) != L)
        return kvci_fail(KVC_EINVAL, "%s: layer_types must be a list of num_hidden_layers = %lld entries, got %d",
                         c->doc, (long long)L, cJSON_GetArraySize(lt));
    int64_t i = 0;
    for (const cJSON *e = lt->child; e != NULL; e = e->next, i++) {
        const char *s = cJSON_IsString(e) ? e->valuestring : "";
        if (strcmp(s, "sliding_attention") == 0)
            cfg->layer_sliding[i] = true;
        else if (strcmp(s, "full_attention") == 0)
            cfg->layer_sliding[i] = false;
        else
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_types[%lld] = \"%.64s\" (expected sliding_attention or full_attention)", c->doc,
                             (long long)i, s);
    }
    return KVC_OK;
}

static kvc_status parse_dense(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const char *mt = cfg->model_type;
    const bool qwen3 = strcmp(mt, "qwen3") == 0, qwen2 = strcmp(mt, "qwen2") == 0;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    bool attn_bias = false, mlp_bias = false;
    KVC_TRY(opt_bool(c, "attention_bias", false, &attn_bias));
    KVC_TRY(opt_bool(c, "mlp_bias", false, &mlp_bias));
    cfg->qkv_bias = qwen2 ? true : attn_bias;
    cfg->o_bias = qwen2 ? false : attn_bias;
    cfg->mlp_bias = (qwen2 || qwen3) ? false : mlp_bias;
    cfg->qk_norm = qwen3;
    bool qwen_rule = false;
    KVC_TRY(kvci_hparams_window(hp, &cfg->sliding_window, &qwen_rule));
    if (qwen_rule) {
        int64_t mwl = 28;
        KVC_TRY(opt_int(c, "max_window_layers", 28, 0, KVC_HP_MAX_LAYERS, &mwl));
        KVC_TRY(parse_layer_types(c, cfg, false));
        if (kvci_json_find(c, "layer_types") == NULL)
            for (int64_t i = 0; i < cfg->num_layers; i++) cfg->layer_sliding[i] = i >= mwl;
    } else {
        KVC_TRY(parse_layer_types(c, cfg, cfg->sliding_window > 0 && !qwen2 && !qwen3));
    }
    return KVC_OK;
}

static kvc_status parse_gpt_oss(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    bool attn_bias = false;
    KVC_TRY(opt_bool(c, "attention_bias", true, &attn_bias));
    cfg->qkv_bias = cfg->o_bias = attn_bias;
    bool qwen_rule = false;
    KVC_TRY(kvci_hparams_window(hp, &cfg->sliding_window, &qwen_rule));
    KVC_TRY(opt_int(c, "num_local_experts", 128, 1, KVC_HP_MAX_EXPERTS, &cfg->num_experts));
    KVC_TRY(opt_int(c, "num_experts_per_tok", 4, 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok));
    KVC_TRY(opt_num(c, "swiglu_limit", 7.0, SCALE_RANGE, &cfg->swiglu_limit));
    KVC_TRY(opt_num(c, "swiglu_alpha", 1.702, SCALE_RANGE, &cfg->swiglu_alpha));
    KVC_TRY(parse_layer_types(c, cfg, false));
    if (kvci_json_find(c, "layer_types") == NULL)
        for (int64_t i = 0; i < cfg->num_layers; i++) cfg->layer_sliding[i] = (i % 2) == 0;
    if (cfg->experts_per_tok > cfg->num_experts)
        return kvci_fail(KVC_EINVAL, "%s: num_experts_per_tok %lld must be in [1, num_local_experts = %lld]", c->doc,
                         (long long)cfg->experts_per_tok, (long long)cfg->num_experts);
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
    KVC_TRY(opt_bool(c, "rope_interleave", true, &cfg->rope_interleave));
    bool attn_bias = false;
    KVC_TRY(opt_bool(c, "attention_bias", false, &attn_bias));
    cfg->qkv_bias = cfg->o_bias = attn_bias;
    cfg->head_dim = cfg->qk_rope_head_dim;
    KVC_TRY(opt_int(c, "first_k_dense_replace", 3, 0, KVC_HP_MAX_LAYERS, &cfg->first_k_dense_replace));
    KVC_TRY(opt_int(c, "moe_intermediate_size", 2048, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(opt_int(c, "n_routed_experts", 256, 1, KVC_HP_MAX_EXPERTS, &cfg->n_routed_experts));
    KVC_TRY(opt_int(c, "n_shared_experts", 1, 0, KVC_HP_MAX_EXPERTS, &cfg->n_shared_experts));
    KVC_TRY(opt_int(c, "num_experts_per_tok", 8, 1, KVC_HP_MAX_EXPERTS, &cfg->experts_per_tok));
    KVC_TRY(opt_int(c, "n_group", 8, 1, KVC_HP_MAX_EXPERTS, &cfg->n_group));
    KVC_TRY(opt_int(c, "topk_group", 4, 1, KVC_HP_MAX_EXPERTS, &cfg->topk_group));
    KVC_TRY(opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
    KVC_TRY(opt_num(c, "routed_scaling_factor", 2.5, SCALE_RANGE, &cfg->routed_scaling_factor));
    KVC_TRY(parse_layer_types(c, cfg, false));
    if (cfg->first_k_dense_replace < cfg->num_layers) {
        const int64_t E = cfg->n_routed_experts, g = cfg->n_group;
        if (E % g != 0 || E / g < 2 || cfg->topk_group > g || cfg->experts_per_tok > cfg->topk_group * (E / g))
            return kvci_fail(KVC_EINVAL,
                             "%s: MoE routing sizes are inconsistent (n_routed_experts %lld, n_group %lld, topk_group "
                             "%lld, num_experts_per_tok %lld): need E %% n_group == 0, E/n_group >= 2, topk_group <= "
                             "n_group, k <= topk_group * E/n_group",
                             c->doc, (long long)E, (long long)g, (long long)cfg->topk_group,
                             (long long)cfg->experts_per_tok);
    }
    return KVC_OK;
}

static kvc_status parse_family(const kvc_hparams *hp, kvc_model_config *cfg) {
    const char *doc = hp->cfg.doc, *t = hp->model_type;
    if (t == NULL) return kvci_fail(KVC_EINVAL, "%s: required key \"model_type\" is missing", doc);
    if (strlen(t) >= sizeof cfg->model_type)
        return kvci_fail(KVC_EINVAL, "%s: model_type \"%.40s...\" is %zu bytes long, the runtime keeps at most %zu",
                         doc, t, strlen(t), sizeof cfg->model_type - 1);
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", t);
    if (strcmp(t, "llama") == 0 || strcmp(t, "mistral") == 0 || strcmp(t, "qwen2") == 0 || strcmp(t, "qwen3") == 0)
        cfg->family = KVC_FAMILY_DENSE;
    else if (strcmp(t, "gpt_oss") == 0)
        cfg->family = KVC_FAMILY_GPT_OSS;
    else if (strcmp(t, "deepseek_v3") == 0)
        cfg->family = KVC_FAMILY_DEEPSEEK_V3;
    else
        return kvci_fail(KVC_EINVAL,
                         "%s: model_type \"%s\" is not supported (llama, mistral, qwen2, qwen3, gpt_oss, deepseek_v3)",
                         doc, t);
    return KVC_OK;
}

/* Sizes of the shared reader plus the runtime's required ones. */
static kvc_status parse_sizes(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    if (hp->n_layers > KVC_MODEL_MAX_LAYERS)
        return kvci_fail(KVC_EINVAL,
                         "%s: num_hidden_layers %lld exceeds the runtime's %d layers (KVC_MODEL_MAX_LAYERS)", c->doc,
                         (long long)hp->n_layers, KVC_MODEL_MAX_LAYERS);
    cfg->num_layers = hp->n_layers;
    cfg->num_heads = hp->n_heads;
    cfg->num_kv_heads = hp->n_kv_heads;
    if (hp->hidden_size == 0) return kvci_fail(KVC_EINVAL, "%s: hidden_size is missing", c->doc);
    cfg->hidden_size = hp->hidden_size;
    KVC_TRY(kvci_json_int(c, "vocab_size", 1, KVC_HP_MAX_VOCAB, &cfg->vocab_size, NULL));
    KVC_TRY(kvci_json_int(c, "intermediate_size", 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size, NULL));
    cfg->max_position_embeddings = hp->have_max_pos ? hp->max_pos : 2048;
    KVC_TRY(opt_num(c, "rms_norm_eps", cfg->family == KVC_FAMILY_GPT_OSS ? 1e-5 : 1e-6, EPS_RANGE, &cfg->rms_norm_eps));
    return opt_bool(c, "tie_word_embeddings", false, &cfg->tie_word_embeddings);
}

static kvc_status parse_root(kvc_hparams *hp, kvc_model_config *cfg) {
    KVC_TRY(parse_family(hp, cfg));
    KVC_TRY(kvci_hparams_read_sizes(hp));
    KVC_TRY(parse_sizes(hp, cfg));
    KVC_TRY(kvci_hparams_read_rope(hp));
    KVC_TRY(take_rope(hp, cfg));
    switch (cfg->family) {
    case KVC_FAMILY_DENSE: KVC_TRY(parse_dense(hp, cfg)); break;
    case KVC_FAMILY_GPT_OSS: KVC_TRY(parse_gpt_oss(hp, cfg)); break;
    case KVC_FAMILY_DEEPSEEK_V3: KVC_TRY(parse_deepseek(hp, cfg)); break;
    }
    const char *doc = hp->cfg.doc;
    if (cfg->head_dim < 2 || cfg->head_dim % 2 != 0)
        return kvci_fail(KVC_EINVAL, "%s: head_dim %lld must be even and >= 2 (rotary width)", doc,
                         (long long)cfg->head_dim);
    bool any_sliding = false;
    for (int64_t i = 0; i < cfg->num_layers; i++) any_sliding |= cfg->layer_sliding[i];
    if (any_sliding && cfg->sliding_window < 1)
        return kvci_fail(KVC_EINVAL, "%s: sliding layers need sliding_window >= 1, got %lld", doc,
                         (long long)cfg->sliding_window);
    if (!any_sliding) cfg->sliding_window = 0;
    return KVC_OK;
}

kvc_status kvc_model_config_parse(const char *json_text, const char *name, kvc_model_config *out) {
    if (!json_text || !out) return kvci_fail(KVC_EINVAL, "model_config_parse: json_text and out must not be NULL");
    kvc_hparams hp;
    kvc_status st = kvci_hparams_open(json_text, strlen(json_text), name != NULL ? name : "config.json", &hp);
    kvc_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (st == KVC_OK) st = parse_root(&hp, &cfg);
    kvci_hparams_close(&hp);
    if (st == KVC_OK) *out = cfg;
    return st;
}

kvc_status kvc_model_config_load(const char *dir, kvc_model_config *out) {
    if (!dir || !out) return kvci_fail(KVC_EINVAL, "model_config_load: dir and out must not be NULL");
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path)
        return kvci_fail(KVC_EINVAL, "model_config_load: path too long");
    char *buf = NULL;
    size_t n = 0;
    kvc_status rd = kvci_read_file(path, KVC_MAX_INPUT_BYTES, &buf, &n);
    if (rd != KVC_OK) return rd;
    kvc_status st = kvc_model_config_parse(buf, path, out);
    kvci_free(buf);
    return st;
}

double kvc_model_attn_scale(const kvc_model_config *c) {
    if (c->family != KVC_FAMILY_DEEPSEEK_V3) return 1.0 / sqrt((double)c->head_dim);
    return kvci_mla_softmax_scale(&c->rope, c->qk_nope_head_dim, c->qk_rope_head_dim);
}
