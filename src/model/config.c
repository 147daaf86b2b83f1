/* config.json of the three families (MF 2, 3.1, 4.1) into kvc_model_config. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/internal.h"
#include "model/model_internal.h"

typedef struct jctx {
    const cJSON *root;
    const char *name; /* file name for messages */
} jctx;

/* NULL when the key is absent or JSON null. */
static const cJSON *jget(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

static kvc_status jint(const jctx *c, const cJSON *obj, const char *key, bool required, int64_t def, int64_t *out)
{
    const cJSON *v = jget(obj, key);
    if (!v) {
        if (required) return kvc_fail(KVC_EINVAL, "%s: required key \"%s\" is missing", c->name, key);
        *out = def;
        return KVC_OK;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 9.0e15)
        return kvc_fail(KVC_EINVAL, "%s: key \"%s\" must be an integer", c->name, key);
    *out = (int64_t)v->valuedouble;
    return KVC_OK;
}

static kvc_status jnum(const jctx *c, const cJSON *obj, const char *key, double def, double *out)
{
    const cJSON *v = jget(obj, key);
    if (!v) {
        *out = def;
        return KVC_OK;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return kvc_fail(KVC_EINVAL, "%s: key \"%s\" must be a finite number", c->name, key);
    *out = v->valuedouble;
    return KVC_OK;
}

static kvc_status jbool(const jctx *c, const cJSON *obj, const char *key, bool def, bool *out)
{
    const cJSON *v = jget(obj, key);
    if (!v) {
        *out = def;
        return KVC_OK;
    }
    if (!cJSON_IsBool(v)) return kvc_fail(KVC_EINVAL, "%s: key \"%s\" must be true or false", c->name, key);
    *out = cJSON_IsTrue(v);
    return KVC_OK;
}

#define TRY(expr)                              \
    do {                                       \
        kvc_status try_st_ = (expr);           \
        if (try_st_ != KVC_OK) return try_st_; \
    } while (0)

const char *kvc_model_family_name(kvc_model_family f)
{
    switch (f) {
    case KVC_FAMILY_DENSE: return "dense";
    case KVC_FAMILY_GPT_OSS: return "gpt_oss";
    case KVC_FAMILY_DEEPSEEK_V3: return "deepseek_v3";
    }
    return "?";
}

/* MF 1.4 config reading: v5 rope_parameters or v4 rope_theta + rope_scaling. */
static kvc_status parse_rope(const jctx *c, double theta_default, kvc_model_config *cfg)
{
    kvc_rope_config *r = &cfg->rope;
    const cJSON *params = jget(c->root, "rope_parameters");
    const bool v4 = params == NULL;
    if (v4) params = jget(c->root, "rope_scaling");
    if (params && !cJSON_IsObject(params))
        return kvc_fail(KVC_EINVAL, "%s: \"%s\" must be an object", c->name, v4 ? "rope_scaling" : "rope_parameters");
    double top_theta = theta_default;
    TRY(jnum(c, c->root, "rope_theta", theta_default, &top_theta));
    r->theta = top_theta;
    r->type = KVC_ROPE_DEFAULT;
    r->factor = r->ramp_factor = 1.0;
    r->truncate = true;
    r->beta_fast = 32.0;
    r->beta_slow = 1.0;
    if (!params) return KVC_OK;
    TRY(jnum(c, params, "rope_theta", top_theta, &r->theta));
    const cJSON *t = jget(params, "rope_type");
    if (!t) t = jget(params, "type");
    const char *type = (t && cJSON_IsString(t)) ? t->valuestring : "default";
    if (strcmp(type, "default") == 0) {
        r->type = KVC_ROPE_DEFAULT;
    } else if (strcmp(type, "llama3") == 0) {
        r->type = KVC_ROPE_LLAMA3;
    } else if (strcmp(type, "yarn") == 0) {
        r->type = KVC_ROPE_YARN;
    } else {
        return kvc_fail(KVC_EINVAL, "%s: rope type \"%s\" is not supported (default, llama3, yarn)", c->name, type);
    }
    if (r->type == KVC_ROPE_DEFAULT) return KVC_OK;
    TRY(jnum(c, params, "factor", 1.0, &r->factor));
    r->ramp_factor = r->factor;
    double l0 = 0.0;
    TRY(jnum(c, params, "original_max_position_embeddings", 0.0, &l0));
    r->original_max_position = (int64_t)l0;
    if (r->type == KVC_ROPE_LLAMA3) {
        TRY(jnum(c, params, "low_freq_factor", 1.0, &r->low_freq_factor));
        TRY(jnum(c, params, "high_freq_factor", 4.0, &r->high_freq_factor));
        if (r->original_max_position <= 0 || r->factor <= 0 || r->high_freq_factor <= r->low_freq_factor)
            return kvc_fail(KVC_EINVAL, "%s: llama3 rope needs original_max_position_embeddings > 0, factor > 0, high_freq_factor > low_freq_factor",
                            c->name);
        return KVC_OK;
    }
    TRY(jnum(c, params, "beta_fast", 32.0, &r->beta_fast));
    TRY(jnum(c, params, "beta_slow", 1.0, &r->beta_slow));
    if (r->beta_fast == 0.0) r->beta_fast = 32.0;
    if (r->beta_slow == 0.0) r->beta_slow = 1.0;
    TRY(jnum(c, params, "mscale", 0.0, &r->mscale));
    TRY(jnum(c, params, "mscale_all_dim", 0.0, &r->mscale_all_dim));
    TRY(jnum(c, params, "attention_factor", 0.0, &r->attention_factor));
    TRY(jbool(c, params, "truncate", true, &r->truncate));
    if (r->original_max_position <= 0)
        return kvc_fail(KVC_EINVAL, "%s: yarn rope needs original_max_position_embeddings", c->name);
    if (v4) r->ramp_factor = (double)cfg->max_position_embeddings / (double)r->original_max_position;
    if (r->factor <= 0 || r->ramp_factor <= 0) return kvc_fail(KVC_EINVAL, "%s: yarn factor must be > 0", c->name);
    return KVC_OK;
}

/* layer_types list, or the family's rule when absent. */
static kvc_status parse_layer_types(const jctx *c, kvc_model_config *cfg, bool sliding_default_rule)
{
    const cJSON *lt = jget(c->root, "layer_types");
    const int64_t L = cfg->num_layers;
    if (lt) {
        if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != L)
            return kvc_fail(KVC_EINVAL, "%s: layer_types must be a list of num_hidden_layers = %lld entries", c->name,
                            (long long)L);
        for (int64_t i = 0; i < L; i++) {
            const cJSON *e = cJSON_GetArrayItem(lt, (int)i);
            const char *s = cJSON_IsString(e) ? e->valuestring : "";
            if (strcmp(s, "sliding_attention") == 0) cfg->layer_sliding[i] = true;
            else if (strcmp(s, "full_attention") == 0) cfg->layer_sliding[i] = false;
            else
                return kvc_fail(KVC_EINVAL, "%s: layer_types[%lld] = \"%s\" (expected sliding_attention or full_attention)",
                                c->name, (long long)i, s);
        }
    } else {
        for (int64_t i = 0; i < L; i++) cfg->layer_sliding[i] = sliding_default_rule;
    }
    return KVC_OK;
}

static kvc_status parse_dense(const jctx *c, kvc_model_config *cfg)
{
    const char *mt = cfg->model_type;
    const bool qwen3 = strcmp(mt, "qwen3") == 0, qwen2 = strcmp(mt, "qwen2") == 0;
    TRY(jint(c, c->root, "head_dim", false, qwen3 ? 128 : (cfg->num_heads ? cfg->hidden_size / cfg->num_heads : 0),
             &cfg->head_dim));
    bool attn_bias = false, mlp_bias = false;
    TRY(jbool(c, c->root, "attention_bias", false, &attn_bias));
    TRY(jbool(c, c->root, "mlp_bias", false, &mlp_bias));
    cfg->qkv_bias = qwen2 ? true : attn_bias;
    cfg->o_bias = qwen2 ? false : attn_bias;
    cfg->mlp_bias = (qwen2 || qwen3) ? false : mlp_bias;
    cfg->qk_norm = qwen3;
    TRY(parse_rope(c, 10000.0, cfg));
    if (qwen2 || qwen3) {
        bool use_sw = false;
        int64_t mwl = 28;
        TRY(jbool(c, c->root, "use_sliding_window", false, &use_sw));
        TRY(jint(c, c->root, "max_window_layers", false, 28, &mwl));
        TRY(jint(c, c->root, "sliding_window", false, 0, &cfg->sliding_window));
        if (!use_sw) cfg->sliding_window = 0;
        TRY(parse_layer_types(c, cfg, false));
        if (use_sw && !jget(c->root, "layer_types"))
            for (int64_t i = 0; i < cfg->num_layers; i++) cfg->layer_sliding[i] = i >= mwl;
    } else {
        TRY(jint(c, c->root, "sliding_window", false, 0, &cfg->sliding_window));
        TRY(parse_layer_types(c, cfg, cfg->sliding_window > 0));
    }
    return KVC_OK;
}

static kvc_status parse_gpt_oss(const jctx *c, kvc_model_config *cfg)
{
    TRY(jint(c, c->root, "head_dim", false, 64, &cfg->head_dim));
    bool attn_bias = false;
    TRY(jbool(c, c->root, "attention_bias", true, &attn_bias));
    cfg->qkv_bias = cfg->o_bias = attn_bias;
    TRY(parse_rope(c, 150000.0, cfg));
    TRY(jint(c, c->root, "sliding_window", false, 128, &cfg->sliding_window));
    TRY(jint(c, c->root, "num_local_experts", false, 128, &cfg->num_experts));
    TRY(jint(c, c->root, "num_experts_per_tok", false, 4, &cfg->experts_per_tok));
    TRY(jnum(c, c->root, "swiglu_limit", 7.0, &cfg->swiglu_limit));
    TRY(jnum(c, c->root, "swiglu_alpha", 1.702, &cfg->swiglu_alpha));
    const cJSON *lt = jget(c->root, "layer_types");
    TRY(parse_layer_types(c, cfg, false));
    if (!lt)
        for (int64_t i = 0; i < cfg->num_layers; i++) cfg->layer_sliding[i] = (i % 2) == 0;
    if (cfg->num_experts < 1 || cfg->experts_per_tok < 1 || cfg->experts_per_tok > cfg->num_experts)
        return kvc_fail(KVC_EINVAL, "%s: num_experts_per_tok %lld must be in [1, num_local_experts = %lld]", c->name,
                        (long long)cfg->experts_per_tok, (long long)cfg->num_experts);
    return KVC_OK;
}

static kvc_status parse_deepseek(const jctx *c, kvc_model_config *cfg)
{
    TRY(jint(c, c->root, "q_lora_rank", false, 0, &cfg->q_lora_rank));
    TRY(jint(c, c->root, "kv_lora_rank", true, 0, &cfg->kv_lora_rank));
    TRY(jint(c, c->root, "qk_nope_head_dim", true, 0, &cfg->qk_nope_head_dim));
    TRY(jint(c, c->root, "qk_rope_head_dim", true, 0, &cfg->qk_rope_head_dim));
    TRY(jint(c, c->root, "v_head_dim", true, 0, &cfg->v_head_dim));
    TRY(jbool(c, c->root, "rope_interleave", true, &cfg->rope_interleave));
    bool attn_bias = false;
    TRY(jbool(c, c->root, "attention_bias", false, &attn_bias));
    cfg->qkv_bias = cfg->o_bias = attn_bias;
    cfg->head_dim = cfg->qk_rope_head_dim;
    TRY(jint(c, c->root, "first_k_dense_replace", false, 3, &cfg->first_k_dense_replace));
    TRY(jint(c, c->root, "moe_intermediate_size", false, 2048, &cfg->moe_intermediate_size));
    TRY(jint(c, c->root, "n_routed_experts", false, 256, &cfg->n_routed_experts));
    TRY(jint(c, c->root, "n_shared_experts", false, 1, &cfg->n_shared_experts));
    TRY(jint(c, c->root, "num_experts_per_tok", false, 8, &cfg->experts_per_tok));
    TRY(jint(c, c->root, "n_group", false, 8, &cfg->n_group));
    TRY(jint(c, c->root, "topk_group", false, 4, &cfg->topk_group));
    TRY(jbool(c, c->root, "norm_topk_prob", true, &cfg->norm_topk_prob));
    TRY(jnum(c, c->root, "routed_scaling_factor", 2.5, &cfg->routed_scaling_factor));
    TRY(parse_rope(c, 10000.0, cfg));
    TRY(parse_layer_types(c, cfg, false));
    if (cfg->kv_lora_rank < 1 || cfg->qk_nope_head_dim < 1 || cfg->qk_rope_head_dim < 2 || cfg->v_head_dim < 1 ||
        cfg->q_lora_rank < 0)
        return kvc_fail(KVC_EINVAL, "%s: MLA sizes must be positive (kv_lora_rank %lld, qk_nope_head_dim %lld, qk_rope_head_dim %lld, v_head_dim %lld)",
                        c->name, (long long)cfg->kv_lora_rank, (long long)cfg->qk_nope_head_dim,
                        (long long)cfg->qk_rope_head_dim, (long long)cfg->v_head_dim);
    if (cfg->num_kv_heads != cfg->num_heads)
        return kvc_fail(KVC_EINVAL, "%s: num_key_value_heads %lld must equal num_attention_heads %lld for deepseek_v3",
                        c->name, (long long)cfg->num_kv_heads, (long long)cfg->num_heads);
    if (cfg->first_k_dense_replace < cfg->num_layers) {
        const int64_t E = cfg->n_routed_experts, g = cfg->n_group;
        if (E < 1 || g < 1 || E % g != 0 || E / g < 2 || cfg->topk_group < 1 || cfg->topk_group > g ||
            cfg->experts_per_tok < 1 || cfg->experts_per_tok > cfg->topk_group * (E / g) ||
            cfg->moe_intermediate_size < 1 || cfg->n_shared_experts < 0)
            return kvc_fail(KVC_EINVAL, "%s: MoE routing sizes are inconsistent (n_routed_experts %lld, n_group %lld, topk_group %lld, num_experts_per_tok %lld): need E %% n_group == 0, E/n_group >= 2, topk_group <= n_group, k <= topk_group * E/n_group",
                            c->name, (long long)E, (long long)g, (long long)cfg->topk_group,
                            (long long)cfg->experts_per_tok);
    }
    return KVC_OK;
}

static kvc_status parse_root(const jctx *c, kvc_model_config *cfg)
{
    const cJSON *mt = jget(c->root, "model_type");
    if (!mt || !cJSON_IsString(mt)) return kvc_fail(KVC_EINVAL, "%s: required key \"model_type\" is missing", c->name);
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", mt->valuestring);
    const char *t = mt->valuestring;
    if (strcmp(t, "llama") == 0 || strcmp(t, "mistral") == 0 || strcmp(t, "qwen2") == 0 || strcmp(t, "qwen3") == 0)
        cfg->family = KVC_FAMILY_DENSE;
    else if (strcmp(t, "gpt_oss") == 0)
        cfg->family = KVC_FAMILY_GPT_OSS;
    else if (strcmp(t, "deepseek_v3") == 0)
        cfg->family = KVC_FAMILY_DEEPSEEK_V3;
    else
        return kvc_fail(KVC_EINVAL, "%s: model_type \"%s\" is not supported (llama, mistral, qwen2, qwen3, gpt_oss, deepseek_v3)",
                        c->name, t);
    TRY(jint(c, c->root, "vocab_size", true, 0, &cfg->vocab_size));
    TRY(jint(c, c->root, "hidden_size", true, 0, &cfg->hidden_size));
    TRY(jint(c, c->root, "intermediate_size", true, 0, &cfg->intermediate_size));
    TRY(jint(c, c->root, "num_hidden_layers", true, 0, &cfg->num_layers));
    TRY(jint(c, c->root, "num_attention_heads", true, 0, &cfg->num_heads));
    TRY(jint(c, c->root, "num_key_value_heads", false, cfg->num_heads, &cfg->num_kv_heads));
    TRY(jint(c, c->root, "max_position_embeddings", false, 2048, &cfg->max_position_embeddings));
    TRY(jnum(c, c->root, "rms_norm_eps", cfg->family == KVC_FAMILY_GPT_OSS ? 1e-5 : 1e-6, &cfg->rms_norm_eps));
    TRY(jbool(c, c->root, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    if (cfg->vocab_size < 1 || cfg->hidden_size < 1 || cfg->intermediate_size < 1 || cfg->num_heads < 1 ||
        cfg->num_kv_heads < 1)
        return kvc_fail(KVC_EINVAL, "%s: vocab_size, hidden_size, intermediate_size, num_attention_heads and num_key_value_heads must be positive",
                        c->name);
    if (cfg->num_layers < 1 || cfg->num_layers > KVC_MODEL_MAX_LAYERS)
        return kvc_fail(KVC_EINVAL, "%s: num_hidden_layers %lld must be in [1, %d]", c->name, (long long)cfg->num_layers,
                        KVC_MODEL_MAX_LAYERS);
    if (cfg->num_heads % cfg->num_kv_heads != 0)
        return kvc_fail(KVC_EINVAL, "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld", c->name,
                        (long long)cfg->num_heads, (long long)cfg->num_kv_heads);
    switch (cfg->family) {
    case KVC_FAMILY_DENSE: TRY(parse_dense(c, cfg)); break;
    case KVC_FAMILY_GPT_OSS: TRY(parse_gpt_oss(c, cfg)); break;
    case KVC_FAMILY_DEEPSEEK_V3: TRY(parse_deepseek(c, cfg)); break;
    }
    if (cfg->head_dim < 2 || cfg->head_dim % 2 != 0)
        return kvc_fail(KVC_EINVAL, "%s: head_dim %lld must be even and >= 2 (rotary width)", c->name,
                        (long long)cfg->head_dim);
    if (!(cfg->rms_norm_eps >= 0)) return kvc_fail(KVC_EINVAL, "%s: rms_norm_eps must be >= 0", c->name);
    if (!(cfg->rope.theta > 1.0)) return kvc_fail(KVC_EINVAL, "%s: rope_theta %g must be > 1", c->name, cfg->rope.theta);
    bool any_sliding = false;
    for (int64_t i = 0; i < cfg->num_layers; i++) any_sliding |= cfg->layer_sliding[i];
    if (any_sliding && cfg->sliding_window < 1)
        return kvc_fail(KVC_EINVAL, "%s: sliding layers need sliding_window >= 1, got %lld", c->name,
                        (long long)cfg->sliding_window);
    if (!any_sliding) cfg->sliding_window = 0;
    return KVC_OK;
}

kvc_status kvc_model_config_parse(const char *json_text, const char *name, kvc_model_config *out)
{
    if (!json_text || !out) return kvc_fail(KVC_EINVAL, "model_config_parse: json_text and out must not be NULL");
    if (!name) name = "config.json";
    cJSON *root = cJSON_Parse(json_text);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return kvc_fail(KVC_EINVAL, "%s: not a JSON object", name);
    }
    kvc_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    jctx c = {.root = root, .name = name};
    kvc_status st = parse_root(&c, &cfg);
    cJSON_Delete(root);
    if (st == KVC_OK) *out = cfg;
    return st;
}

kvc_status kvc_model_config_load(const char *dir, kvc_model_config *out)
{
    if (!dir || !out) return kvc_fail(KVC_EINVAL, "model_config_load: dir and out must not be NULL");
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path)
        return kvc_fail(KVC_EINVAL, "model_config_load: path too long");
    char *buf = NULL;
    size_t n = 0;
    kvc_status rd = kvc_read_file(path, KVC_MAX_INPUT_BYTES, &buf, &n);
    if (rd != KVC_OK) return rd;
    kvc_status st = kvc_model_config_parse(buf, path, out);
    kvc_free(buf);
    return st;
}

double kvc_model_attn_scale(const kvc_model_config *c)
{
    if (c->family != KVC_FAMILY_DEEPSEEK_V3) return 1.0 / sqrt((double)c->head_dim);
    const double dq = (double)(c->qk_nope_head_dim + c->qk_rope_head_dim);
    double s = 1.0 / sqrt(dq);
    if (c->rope.type != KVC_ROPE_DEFAULT && c->rope.mscale_all_dim != 0.0) {
        const double f = c->rope.factor;
        const double g = f <= 1.0 ? 1.0 : 0.1 * c->rope.mscale_all_dim * log(f) + 1.0;
        s *= g * g;
    }
    return s;
}
