/* The analyzer: config.json -> kvc_model_plan. Family rules decide the
 * attention type of every layer; the selection rules of attention-ops.md
 * decide mode, operator generation, layout and mask modes; the cache
 * description is handed to kvc_plan_blocks for every number it implies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

#define MAX_LAYERS 100000
#define BAND_ALIGN_BLOCK_MAX 512 /* attention-ops §3.13: paged block size limit */

typedef enum family {
    FAM_GQA,      /* Llama 2/3/3.1, Mistral, Mixtral, Qwen2/2.5, Qwen3 (dense, MoE), Phi-3, ... */
    FAM_GPT_OSS,  /* layer_types, sinks, YaRN */
    FAM_MLA,      /* DeepSeek-V2/V3/R1, Kimi-K2 */
    FAM_GEMMA2,   /* alternate sliding / full */
    FAM_GEMMA3,   /* sliding_window_pattern */
    FAM_QWEN3_NEXT, /* linear attention (Gated DeltaNet) + full attention */
    FAM_JAMBA,    /* Mamba + attention every attn_layer_period layers */
    FAM_MAMBA2_HYBRID, /* layer_types with "mamba" (Granite 4 style) */
    FAM_GENERIC
} family;

typedef struct family_entry {
    const char *model_type;
    const char *architecture;
    family fam;
    const char *name;
} family_entry;

static const family_entry FAMILIES[] = {
    {"llama", "LlamaForCausalLM", FAM_GQA, "llama"},
    {"mistral", "MistralForCausalLM", FAM_GQA, "mistral"},
    {"mixtral", "MixtralForCausalLM", FAM_GQA, "mixtral"},
    {"qwen2", "Qwen2ForCausalLM", FAM_GQA, "qwen2"},
    {"qwen2_moe", "Qwen2MoeForCausalLM", FAM_GQA, "qwen2_moe"},
    {"qwen3", "Qwen3ForCausalLM", FAM_GQA, "qwen3"},
    {"qwen3_moe", "Qwen3MoeForCausalLM", FAM_GQA, "qwen3_moe"},
    {"phi3", "Phi3ForCausalLM", FAM_GQA, "phi3"},
    {"gpt_oss", "GptOssForCausalLM", FAM_GPT_OSS, "gpt_oss"},
    {"deepseek_v2", "DeepseekV2ForCausalLM", FAM_MLA, "deepseek_v2"},
    {"deepseek_v3", "DeepseekV3ForCausalLM", FAM_MLA, "deepseek_v3"},
    {"kimi_k2", NULL, FAM_MLA, "kimi_k2"},
    {"gemma2", "Gemma2ForCausalLM", FAM_GEMMA2, "gemma2"},
    {"gemma3", "Gemma3ForConditionalGeneration", FAM_GEMMA3, "gemma3"},
    {"gemma3_text", "Gemma3ForCausalLM", FAM_GEMMA3, "gemma3"},
    {"qwen3_next", "Qwen3NextForCausalLM", FAM_QWEN3_NEXT, "qwen3_next"},
    {"jamba", "JambaForCausalLM", FAM_JAMBA, "jamba"},
    {"granitemoehybrid", "GraniteMoeHybridForCausalLM", FAM_MAMBA2_HYBRID, "granitemoehybrid"},
};

typedef enum layer_kind { LK_FULL = 0, LK_SLIDING = 1, LK_STATE = 2 } layer_kind;

/* Everything the rules need, read once. */
typedef struct model_facts {
    family fam;
    int64_t n_layers;
    int64_t n_heads, n_kv_heads, head_dim, hidden_size;
    bool have_max_pos;
    int64_t max_pos;
    int64_t window;       /* model-wide sliding_window (0 = none) */
    /* MLA */
    int64_t kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
    /* rope */
    double rope_factor, rope_attention_factor, mscale_all_dim;
    bool rope_scaled;
    layer_kind *kinds; /* [n_layers] */
} model_facts;

const char *kvc_kv_mode_name(kvc_kv_mode mode) {
    switch (mode) {
    case KVC_KV_PAGED: return "paged";
    case KVC_KV_LEGACY: return "legacy";
    }
    return "?";
}

kvc_plan_options kvc_plan_default_options(void) {
    return (kvc_plan_options){.tp = 1, .block_size = 128, .kv_dtype_set = false, .kv_dtype = KVC_DTYPE_BF16,
                              .max_model_len = 0, .max_concurrency = 1, .next_n = 0, .kv_memory_bytes = 0};
}

static kvc_status check_options(const kvc_plan_options *o) {
    if (o->tp < 1 || o->tp > 4096) return kvc_fail(KVC_EINVAL, "plan options: tp %lld must be in [1, 4096]", (long long)o->tp);
    if (o->block_size < 1 || o->block_size > (1 << 20))
        return kvc_fail(KVC_EINVAL, "plan options: block_size %lld must be in [1, 1048576]", (long long)o->block_size);
    if (o->kv_dtype_set && o->kv_dtype != KVC_DTYPE_F16 && o->kv_dtype != KVC_DTYPE_BF16 &&
        o->kv_dtype != KVC_DTYPE_F32 && o->kv_dtype != KVC_DTYPE_I8)
        return kvc_fail(KVC_EINVAL, "plan options: kv_dtype %s is not a KV cache dtype (f16, bf16, f32, i8)",
                        kvc_dtype_name(o->kv_dtype));
    if (o->max_model_len < 0)
        return kvc_fail(KVC_EINVAL, "plan options: max_model_len %lld must not be negative (0 = from the config)",
                        (long long)o->max_model_len);
    if (o->max_concurrency < 1)
        return kvc_fail(KVC_EINVAL, "plan options: max_concurrency %lld must be >= 1", (long long)o->max_concurrency);
    if (o->next_n < 0 || o->next_n > 64)
        return kvc_fail(KVC_EINVAL, "plan options: next_n %lld must be in [0, 64]", (long long)o->next_n);
    if (o->kv_memory_bytes < 0)
        return kvc_fail(KVC_EINVAL, "plan options: kv_memory_bytes %lld must not be negative (0 = offline sizing)",
                        (long long)o->kv_memory_bytes);
    return KVC_OK;
}

static void copy_text(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src != NULL ? src : ""); }

/* ---- identification ------------------------------------------------------ */

static kvc_status identify(const kvc_cfg *cfg, kvc_model_plan *plan, family *fam) {
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(cfg->root, "architectures");
    const char *arch = NULL;
    if (archs != NULL && !cJSON_IsNull(archs)) {
        if (!cJSON_IsArray(archs) || cJSON_GetArraySize(archs) < 1 || !cJSON_IsString(cJSON_GetArrayItem(archs, 0)))
            return kvc_fail(KVC_EINVAL, "config.json: architectures must be a non-empty array of strings");
        arch = cJSON_GetArrayItem(archs, 0)->valuestring;
    }
    const char *model_type = NULL;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg->text, "model_type");
    if (mt == NULL || cJSON_IsNull(mt)) mt = cJSON_GetObjectItemCaseSensitive(cfg->root, "model_type");
    if (mt != NULL && !cJSON_IsNull(mt)) {
        if (!cJSON_IsString(mt)) return kvc_fail(KVC_EINVAL, "config.json: model_type must be a string");
        model_type = mt->valuestring;
    }
    if (arch == NULL && model_type == NULL)
        return kvc_fail(KVC_EINVAL, "config.json: neither architectures nor model_type names the model");
    copy_text(plan->architecture, sizeof plan->architecture, arch != NULL ? arch : model_type);
    copy_text(plan->model_type, sizeof plan->model_type, model_type);

    const size_t n = sizeof FAMILIES / sizeof FAMILIES[0];
    for (size_t i = 0; i < n; i++) {
        if (model_type != NULL && strcmp(model_type, FAMILIES[i].model_type) == 0) {
            *fam = FAMILIES[i].fam;
            copy_text(plan->family, sizeof plan->family, FAMILIES[i].name);
            return KVC_OK;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (arch != NULL && FAMILIES[i].architecture != NULL && strcmp(arch, FAMILIES[i].architecture) == 0) {
            *fam = FAMILIES[i].fam;
            copy_text(plan->family, sizeof plan->family, FAMILIES[i].name);
            return KVC_OK;
        }
    }
    *fam = FAM_GENERIC;
    copy_text(plan->family, sizeof plan->family, "generic");
    return KVC_OK;
}

/* ---- heads and dims -------------------------------------------------------- */

static kvc_status read_heads(const kvc_cfg *cfg, kvc_model_plan *plan, model_facts *f) {
    if (f->fam == FAM_GENERIC) {
        /* Unknown architecture: refuse naming every generic field that is missing. */
        char missing[200] = "";
        const char *need[] = {"num_hidden_layers", "num_attention_heads"};
        for (size_t i = 0; i < 2; i++)
            if (!kvc_cfg_has(cfg, need[i])) {
                strncat(missing, missing[0] ? ", " : "", sizeof missing - strlen(missing) - 1);
                strncat(missing, need[i], sizeof missing - strlen(missing) - 1);
            }
        if (!kvc_cfg_has(cfg, "head_dim") && !kvc_cfg_has(cfg, "hidden_size")) {
            strncat(missing, missing[0] ? ", " : "", sizeof missing - strlen(missing) - 1);
            strncat(missing, "head_dim or hidden_size", sizeof missing - strlen(missing) - 1);
        }
        if (missing[0] != '\0')
            return kvc_fail(KVC_EINVAL,
                            "config.json: architecture %s is not a known family and lacks the generic fields "
                            "needed to plan it: %s",
                            plan->architecture, missing);
        kvc_plan_warn(plan,
                      "architecture %s (model_type %s) is not a known family: planned from the generic fields "
                      "(num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, sliding_window, "
                      "layer_types)",
                      plan->architecture, plan->model_type[0] ? plan->model_type : "absent");
    }
    kvc_status st = kvc_cfg_int(cfg, "num_hidden_layers", true, &f->n_layers, NULL);
    if (st != KVC_OK) return st;
    if (f->n_layers < 1 || f->n_layers > MAX_LAYERS)
        return kvc_fail(KVC_EINVAL, "config.json: num_hidden_layers %lld must be in [1, %d]", (long long)f->n_layers,
                        MAX_LAYERS);
    if ((st = kvc_cfg_int(cfg, "num_attention_heads", true, &f->n_heads, NULL)) != KVC_OK) return st;
    if (f->n_heads < 1) return kvc_fail(KVC_EINVAL, "config.json: num_attention_heads %lld must be positive", (long long)f->n_heads);
    bool have = false;
    if ((st = kvc_cfg_int(cfg, "num_key_value_heads", false, &f->n_kv_heads, &have)) != KVC_OK) return st;
    if (!have) {
        f->n_kv_heads = f->n_heads;
        if (f->fam == FAM_GENERIC)
            kvc_plan_warn(plan, "num_key_value_heads absent: %lld (one KV head per query head) assumed",
                          (long long)f->n_heads);
    }
    if (f->n_kv_heads < 1)
        return kvc_fail(KVC_EINVAL, "config.json: num_key_value_heads %lld must be positive", (long long)f->n_kv_heads);
    if (f->n_heads % f->n_kv_heads != 0)
        return kvc_fail(KVC_EINVAL, "config.json: num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
                        (long long)f->n_heads, (long long)f->n_kv_heads);
    if ((st = kvc_cfg_int(cfg, "hidden_size", false, &f->hidden_size, &have)) != KVC_OK) return st;
    if (!have) f->hidden_size = 0;
    if (f->hidden_size < 0) return kvc_fail(KVC_EINVAL, "config.json: hidden_size %lld must be positive", (long long)f->hidden_size);
    if ((st = kvc_cfg_int(cfg, "head_dim", false, &f->head_dim, &have)) != KVC_OK) return st;
    if (f->fam == FAM_MLA) return KVC_OK; /* MLA dims come from the latent fields */
    if (!have) {
        if (f->hidden_size == 0)
            return kvc_fail(KVC_EINVAL, "config.json: head_dim is missing and hidden_size is absent to derive it");
        if (f->hidden_size % f->n_heads != 0)
            return kvc_fail(KVC_EINVAL,
                            "config.json: head_dim is missing and hidden_size %lld is not a multiple of "
                            "num_attention_heads %lld",
                            (long long)f->hidden_size, (long long)f->n_heads);
        f->head_dim = f->hidden_size / f->n_heads;
    }
    if (f->head_dim < 1 || f->head_dim > 65536)
        return kvc_fail(KVC_EINVAL, "config.json: head_dim %lld must be in [1, 65536]", (long long)f->head_dim);
    return KVC_OK;
}

static kvc_status read_mla(const kvc_cfg *cfg, model_facts *f) {
    kvc_status st;
    if ((st = kvc_cfg_int(cfg, "kv_lora_rank", true, &f->kv_lora_rank, NULL)) != KVC_OK) return st;
    if ((st = kvc_cfg_int(cfg, "qk_rope_head_dim", true, &f->qk_rope_head_dim, NULL)) != KVC_OK) return st;
    if ((st = kvc_cfg_int(cfg, "qk_nope_head_dim", true, &f->qk_nope_head_dim, NULL)) != KVC_OK) return st;
    bool have = false;
    if ((st = kvc_cfg_int(cfg, "v_head_dim", false, &f->v_head_dim, &have)) != KVC_OK) return st;
    if (!have) f->v_head_dim = f->qk_nope_head_dim;
    int64_t q_lora = 0;
    if ((st = kvc_cfg_int(cfg, "q_lora_rank", false, &q_lora, &have)) != KVC_OK) return st;
    if (have && q_lora < 1)
        return kvc_fail(KVC_EINVAL, "config.json: q_lora_rank %lld must be positive or null", (long long)q_lora);
    const struct { const char *name; int64_t v; } dims[] = {{"kv_lora_rank", f->kv_lora_rank},
                                                            {"qk_rope_head_dim", f->qk_rope_head_dim},
                                                            {"qk_nope_head_dim", f->qk_nope_head_dim},
                                                            {"v_head_dim", f->v_head_dim}};
    for (size_t i = 0; i < 4; i++)
        if (dims[i].v < 1 || dims[i].v > 65536)
            return kvc_fail(KVC_EINVAL, "config.json: %s %lld must be in [1, 65536]", dims[i].name, (long long)dims[i].v);
    if (f->qk_rope_head_dim % 2 != 0)
        return kvc_fail(KVC_EINVAL, "config.json: qk_rope_head_dim %lld must be even (rotary pairs)",
                        (long long)f->qk_rope_head_dim);
    /* HF MLA expands keys per query head: num_key_value_heads must equal num_attention_heads. */
    if (kvc_cfg_has(cfg, "num_key_value_heads") && f->n_kv_heads != f->n_heads)
        return kvc_fail(KVC_EINVAL,
                        "config.json: num_key_value_heads %lld contradicts num_attention_heads %lld (MLA expands "
                        "keys per query head, the two must be equal)",
                        (long long)f->n_kv_heads, (long long)f->n_heads);
    f->head_dim = f->qk_nope_head_dim + f->qk_rope_head_dim;
    return KVC_OK;
}

/* ---- rope ------------------------------------------------------------------ */

static double yarn_g(double s, double m) { return s <= 1.0 ? 1.0 : 0.1 * m * log(s) + 1.0; }

static kvc_status read_rope(const kvc_cfg *cfg, kvc_model_plan *plan, model_facts *f) {
    const cJSON *rope = kvc_cfg_item(cfg, "rope_scaling");
    const char *where = "rope_scaling.";
    if (rope == NULL) {
        rope = kvc_cfg_item(cfg, "rope_parameters");
        where = "rope_parameters.";
    }
    f->rope_factor = 1.0;
    f->rope_attention_factor = 1.0;
    f->mscale_all_dim = 0.0;
    copy_text(plan->rope_type, sizeof plan->rope_type, "default");
    if (rope == NULL) return KVC_OK;
    if (!cJSON_IsObject(rope)) return kvc_fail(KVC_EINVAL, "config.json: %.*s must be an object", (int)strlen(where) - 1, where);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rope, "rope_type");
    if (type == NULL || cJSON_IsNull(type)) type = cJSON_GetObjectItemCaseSensitive(rope, "type");
    if (type != NULL && !cJSON_IsNull(type) && !cJSON_IsString(type))
        return kvc_fail(KVC_EINVAL, "config.json: %srope_type must be a string", where);
    const char *t = (type != NULL && cJSON_IsString(type)) ? type->valuestring : "default";
    copy_text(plan->rope_type, sizeof plan->rope_type, t);
    if (strcmp(t, "default") == 0) return KVC_OK;
    f->rope_scaled = true;
    kvc_status st = kvc_obj_num(rope, where, "factor", true, &f->rope_factor, NULL);
    if (st != KVC_OK) return st;
    if (!(f->rope_factor > 0.0)) return kvc_fail(KVC_EINVAL, "config.json: %sfactor %g must be positive", where, f->rope_factor);
    if (strcmp(t, "llama3") == 0) {
        double lo = 0, hi = 0, l0 = 0;
        if ((st = kvc_obj_num(rope, where, "low_freq_factor", true, &lo, NULL)) != KVC_OK) return st;
        if ((st = kvc_obj_num(rope, where, "high_freq_factor", true, &hi, NULL)) != KVC_OK) return st;
        if ((st = kvc_obj_num(rope, where, "original_max_position_embeddings", true, &l0, NULL)) != KVC_OK) return st;
        if (!(hi > lo) || !(lo > 0.0) || !(l0 > 0.0))
            return kvc_fail(KVC_EINVAL,
                            "config.json: %shigh_freq_factor %g must exceed low_freq_factor %g > 0 and "
                            "original_max_position_embeddings %g must be positive",
                            where, hi, lo, l0);
    } else if (strcmp(t, "yarn") == 0) {
        double mscale = 0, explicit_af = 0;
        bool have_m = false, have_all = false, have_af = false;
        if ((st = kvc_obj_num(rope, where, "mscale", false, &mscale, &have_m)) != KVC_OK) return st;
        if ((st = kvc_obj_num(rope, where, "mscale_all_dim", false, &f->mscale_all_dim, &have_all)) != KVC_OK) return st;
        if ((st = kvc_obj_num(rope, where, "attention_factor", false, &explicit_af, &have_af)) != KVC_OK) return st;
        if (have_af)
            f->rope_attention_factor = explicit_af;
        else if (have_m && have_all && mscale != 0.0 && f->mscale_all_dim != 0.0)
            f->rope_attention_factor = yarn_g(f->rope_factor, mscale) / yarn_g(f->rope_factor, f->mscale_all_dim);
        else
            f->rope_attention_factor = yarn_g(f->rope_factor, 1.0);
    }
    return KVC_OK;
}

/* ---- layer types ----------------------------------------------------------- */

static kvc_status layer_types_list(const kvc_cfg *cfg, model_facts *f, bool *given) {
    const cJSON *lt = kvc_cfg_item(cfg, "layer_types");
    *given = false;
    if (lt == NULL) return KVC_OK;
    if (!cJSON_IsArray(lt)) return kvc_fail(KVC_EINVAL, "config.json: layer_types must be an array of strings");
    if (cJSON_GetArraySize(lt) != f->n_layers)
        return kvc_fail(KVC_EINVAL, "config.json: layer_types has %d entries but num_hidden_layers is %lld",
                        cJSON_GetArraySize(lt), (long long)f->n_layers);
    for (int64_t i = 0; i < f->n_layers; i++) {
        const cJSON *e = cJSON_GetArrayItem(lt, (int)i);
        if (!cJSON_IsString(e)) return kvc_fail(KVC_EINVAL, "config.json: layer_types[%lld] must be a string", (long long)i);
        const char *s = e->valuestring;
        if (strcmp(s, "full_attention") == 0 || strcmp(s, "attention") == 0)
            f->kinds[i] = LK_FULL;
        else if (strcmp(s, "sliding_attention") == 0)
            f->kinds[i] = LK_SLIDING;
        else if (strcmp(s, "linear_attention") == 0 || strcmp(s, "mamba") == 0)
            f->kinds[i] = LK_STATE;
        else
            return kvc_fail(KVC_EINVAL,
                            "config.json: layer_types[%lld] \"%s\" is not a known layer type (full_attention, "
                            "sliding_attention, linear_attention, mamba)",
                            (long long)i, s);
    }
    *given = true;
    return KVC_OK;
}

static kvc_status read_window(const kvc_cfg *cfg, model_facts *f, bool *have) {
    kvc_status st = kvc_cfg_int(cfg, "sliding_window", false, &f->window, have);
    if (st != KVC_OK) return st;
    if (!*have) f->window = 0;
    if (*have && f->window < 1)
        return kvc_fail(KVC_EINVAL, "config.json: sliding_window %lld must be positive or null", (long long)f->window);
    return KVC_OK;
}

static kvc_status assign_layer_kinds(const kvc_cfg *cfg, kvc_model_plan *plan, model_facts *f) {
    bool given = false, have_window = false;
    kvc_status st = layer_types_list(cfg, f, &given);
    if (st == KVC_OK) st = read_window(cfg, f, &have_window);
    if (st != KVC_OK) return st;
    for (int64_t i = 0; i < f->n_layers && !given; i++) f->kinds[i] = LK_FULL;
    if (!given) {
        switch (f->fam) {
        case FAM_GEMMA2:
        case FAM_GPT_OSS:
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = i % 2 == 0 ? LK_SLIDING : LK_FULL;
            break;
        case FAM_GEMMA3: {
            int64_t pattern = 6;
            bool have = false;
            if ((st = kvc_cfg_int(cfg, "sliding_window_pattern", false, &pattern, &have)) != KVC_OK) return st;
            if (!have && (st = kvc_cfg_int(cfg, "_sliding_window_pattern", false, &pattern, &have)) != KVC_OK) return st;
            if (!have) kvc_plan_warn(plan, "sliding_window_pattern absent: 6 (five sliding layers, then one full) assumed");
            if (pattern < 1) return kvc_fail(KVC_EINVAL, "config.json: sliding_window_pattern %lld must be positive", (long long)pattern);
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = (i + 1) % pattern != 0 ? LK_SLIDING : LK_FULL;
            break;
        }
        case FAM_GQA: {
            /* Qwen2/Qwen3: windows only with use_sliding_window, from max_window_layers on. */
            bool use = false, have_use = false;
            if ((st = kvc_cfg_bool(cfg, "use_sliding_window", &use, &have_use)) != KVC_OK) return st;
            if (have_use) {
                if (!use) break;
                if (!have_window)
                    return kvc_fail(KVC_EINVAL, "config.json: use_sliding_window is true but sliding_window is missing");
                int64_t from = 28;
                bool have_from = false;
                if ((st = kvc_cfg_int(cfg, "max_window_layers", false, &from, &have_from)) != KVC_OK) return st;
                if (!have_from) kvc_plan_warn(plan, "max_window_layers absent: 28 assumed");
                if (from < 0) return kvc_fail(KVC_EINVAL, "config.json: max_window_layers %lld must not be negative", (long long)from);
                for (int64_t i = from; i < f->n_layers; i++) f->kinds[i] = LK_SLIDING;
                break;
            }
            for (int64_t i = 0; have_window && i < f->n_layers; i++) f->kinds[i] = LK_SLIDING; /* Mistral, Phi-3 */
            break;
        }
        case FAM_GENERIC:
            if (have_window) {
                for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = LK_SLIDING;
                kvc_plan_warn(plan, "sliding_window %lld without layer_types: every layer planned as a window layer",
                              (long long)f->window);
            }
            break;
        case FAM_JAMBA: {
            int64_t period = 0, offset = 0;
            if ((st = kvc_cfg_int(cfg, "attn_layer_period", true, &period, NULL)) != KVC_OK) return st;
            if ((st = kvc_cfg_int(cfg, "attn_layer_offset", true, &offset, NULL)) != KVC_OK) return st;
            if (period < 1 || offset < 0 || offset >= period)
                return kvc_fail(KVC_EINVAL, "config.json: attn_layer_offset %lld must be in [0, attn_layer_period %lld)",
                                (long long)offset, (long long)period);
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = i % period == offset ? LK_FULL : LK_STATE;
            break;
        }
        case FAM_QWEN3_NEXT: {
            int64_t interval = 4;
            bool have = false;
            if ((st = kvc_cfg_int(cfg, "full_attention_interval", false, &interval, &have)) != KVC_OK) return st;
            if (!have) kvc_plan_warn(plan, "layer_types and full_attention_interval absent: every 4th layer full assumed");
            if (interval < 1) return kvc_fail(KVC_EINVAL, "config.json: full_attention_interval %lld must be positive", (long long)interval);
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = (i + 1) % interval == 0 ? LK_FULL : LK_STATE;
            break;
        }
        case FAM_MAMBA2_HYBRID:
            return kvc_fail(KVC_EINVAL, "config.json: layer_types is missing (needed to tell mamba from attention layers)");
        case FAM_MLA:
            break;
        }
    }
    bool any_sliding = false;
    for (int64_t i = 0; i < f->n_layers; i++) any_sliding |= f->kinds[i] == LK_SLIDING;
    if (any_sliding && !have_window)
        return kvc_fail(KVC_EINVAL, "config.json: sliding_window is missing but the model has sliding-attention layers");
    if (any_sliding && f->fam == FAM_MLA)
        return kvc_fail(KVC_EINVAL, "config.json: layer_types asks for sliding layers, which MLA models do not have");
    if (any_sliding && f->have_max_pos && f->window >= f->max_pos) {
        kvc_plan_warn(plan,
                      "sliding_window %lld >= max_position_embeddings %lld never drops a key: window layers planned "
                      "as FullAttention",
                      (long long)f->window, (long long)f->max_pos);
        for (int64_t i = 0; i < f->n_layers; i++)
            if (f->kinds[i] == LK_SLIDING) f->kinds[i] = LK_FULL;
    }
    return KVC_OK;
}

/* ---- state (Mamba / linear attention) shapes -------------------------------- */

typedef struct state_shapes {
    int32_t n;
    const char *names[2];
    int32_t n_shape[2];
    int64_t shape[2][KVC_MAX_DIMS];
} state_shapes;

static kvc_status split_tp(const char *field, int64_t v, int64_t tp, int64_t *out) {
    if (v % tp != 0)
        return kvc_fail(KVC_EINVAL, "config.json: %s %lld is not divisible by tp %lld", field, (long long)v, (long long)tp);
    *out = v / tp;
    return KVC_OK;
}

/* First present of several alternative names. */
static kvc_status int_alt(const kvc_cfg *cfg, const char *const *names, int n, int64_t *out, bool *have) {
    for (int i = 0; i < n; i++) {
        kvc_status st = kvc_cfg_int(cfg, names[i], false, out, have);
        if (st != KVC_OK || *have) return st;
    }
    return KVC_OK;
}

static kvc_status state_shapes_read(const kvc_cfg *cfg, const model_facts *f, int64_t tp, state_shapes *s) {
    *s = (state_shapes){0};
    kvc_status st = KVC_OK;
    if (f->fam == FAM_QWEN3_NEXT) {
        int64_t nk = 0, nv = 0, dk = 0, dv = 0, k = 0, nk_r = 0, nv_r = 0;
        const char *names[] = {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                               "linear_value_head_dim", "linear_conv_kernel_dim"};
        int64_t *dst[] = {&nk, &nv, &dk, &dv, &k};
        for (int i = 0; i < 5; i++) {
            if ((st = kvc_cfg_int(cfg, names[i], true, dst[i], NULL)) != KVC_OK) return st;
            if (*dst[i] < 1) return kvc_fail(KVC_EINVAL, "config.json: %s %lld must be positive", names[i], (long long)*dst[i]);
        }
        if ((st = split_tp("linear_num_key_heads", nk, tp, &nk_r)) != KVC_OK) return st;
        if ((st = split_tp("linear_num_value_heads", nv, tp, &nv_r)) != KVC_OK) return st;
        *s = (state_shapes){.n = 2, .names = {"conv_state", "recurrent_state"}, .n_shape = {2, 3},
                            .shape = {{2 * nk_r * dk + nv_r * dv, k}, {nv_r, dk, dv}}};
        return KVC_OK;
    }
    if (f->fam == FAM_JAMBA) {
        int64_t state = 0, conv = 0, expand = 0, inner_r = 0;
        if ((st = kvc_cfg_int(cfg, "mamba_d_state", true, &state, NULL)) != KVC_OK) return st;
        if ((st = kvc_cfg_int(cfg, "mamba_d_conv", true, &conv, NULL)) != KVC_OK) return st;
        if ((st = kvc_cfg_int(cfg, "mamba_expand", true, &expand, NULL)) != KVC_OK) return st;
        if (state < 1 || conv < 1 || expand < 1 || f->hidden_size < 1)
            return kvc_fail(KVC_EINVAL, "config.json: mamba_d_state, mamba_d_conv, mamba_expand and hidden_size must be positive");
        if ((st = split_tp("mamba_expand * hidden_size", expand * f->hidden_size, tp, &inner_r)) != KVC_OK) return st;
        *s = (state_shapes){.n = 2, .names = {"conv_state", "ssm_state"}, .n_shape = {2, 2},
                            .shape = {{inner_r, conv}, {inner_r, state}}};
        return KVC_OK;
    }
    /* Mamba2-style fields (Granite 4, Nemotron-H, ...). */
    static const char *const heads_n[] = {"mamba_n_heads", "mamba_num_heads"};
    static const char *const hdim_n[] = {"mamba_d_head", "mamba_head_dim"};
    static const char *const state_n[] = {"mamba_d_state", "ssm_state_size", "state_size"};
    static const char *const conv_n[] = {"mamba_d_conv", "conv_kernel"};
    static const char *const groups_n[] = {"mamba_n_groups", "n_groups"};
    int64_t heads = 0, hdim = 0, state = 0, conv = 0, groups = 1;
    bool h1 = false, h2 = false, h3 = false, h4 = false, h5 = false;
    if ((st = int_alt(cfg, heads_n, 2, &heads, &h1)) != KVC_OK) return st;
    if ((st = int_alt(cfg, hdim_n, 2, &hdim, &h2)) != KVC_OK) return st;
    if ((st = int_alt(cfg, state_n, 3, &state, &h3)) != KVC_OK) return st;
    if ((st = int_alt(cfg, conv_n, 2, &conv, &h4)) != KVC_OK) return st;
    if ((st = int_alt(cfg, groups_n, 2, &groups, &h5)) != KVC_OK) return st;
    if (!h1 || !h2 || !h3 || !h4)
        return kvc_fail(KVC_EINVAL, "config.json: the state layers need %s%s%s%s to size their state",
                        h1 ? "" : "mamba_n_heads ", h2 ? "" : "mamba_d_head ", h3 ? "" : "mamba_d_state ",
                        h4 ? "" : "mamba_d_conv");
    if (heads < 1 || hdim < 1 || state < 1 || conv < 1 || groups < 1)
        return kvc_fail(KVC_EINVAL, "config.json: mamba heads, head dim, state, conv kernel and groups must be positive");
    int64_t heads_r = 0, conv_r = 0;
    if ((st = split_tp("mamba_n_heads", heads, tp, &heads_r)) != KVC_OK) return st;
    if ((st = split_tp("mamba conv channels", heads * hdim + 2 * groups * state, tp, &conv_r)) != KVC_OK) return st;
    *s = (state_shapes){.n = 2, .names = {"conv_state", "ssm_state"}, .n_shape = {2, 3},
                        .shape = {{conv_r, conv, 0}, {heads_r, hdim, state}}};
    return KVC_OK;
}

/* ---- selection ------------------------------------------------------------- */

static bool is_pow2_le(int64_t v, int64_t cap) { return v >= 1 && v <= cap && (v & (v - 1)) == 0; }

static void select_mode(kvc_model_plan *plan, const model_facts *f, int64_t kv_per_rank, bool any_attention) {
    const kvc_plan_options *o = &plan->options;
    int64_t align = o->kv_dtype == KVC_DTYPE_I8 ? 32 : 16; /* attention-ops §3.13 */
    const char *dt = kvc_dtype_name(o->kv_dtype);
    plan->kv_mode = KVC_KV_PAGED;
    if (!any_attention) {
        copy_text(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                  "state caches only: one fixed-size state block per request, managed by the Mamba manager");
    } else if (o->block_size > BAND_ALIGN_BLOCK_MAX || o->block_size % align != 0) {
        plan->kv_mode = KVC_KV_LEGACY;
        snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                 "block_size %lld is not a multiple of %lld (%s KV) in [%lld, %d], which the paged operator requires "
                 "(attention-ops §3.13); contiguous per-request caches instead",
                 (long long)o->block_size, (long long)align, dt, (long long)align, BAND_ALIGN_BLOCK_MAX);
    } else if (plan->mla) {
        if (f->kv_lora_rank != 512 || f->qk_rope_head_dim != 64 || !is_pow2_le(plan->q_heads_per_rank, 128)) {
            plan->kv_mode = KVC_KV_LEGACY;
            snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                     "the paged latent path needs kv_lora_rank 512, qk_rope_head_dim 64 and a power-of-two query "
                     "head count <= 128 per rank (got %lld, %lld, %lld; attention-ops §3.8): contiguous latent "
                     "caches, non-absorbed attention",
                     (long long)f->kv_lora_rank, (long long)f->qk_rope_head_dim, (long long)plan->q_heads_per_rank);
        } else {
            snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                     "latent caches (nope %lld + rope %lld, one head) paged with block_size %lld; paging is mandatory "
                     "for the absorbed MLA operator (attention-ops §3.8)",
                     (long long)f->kv_lora_rank, (long long)f->qk_rope_head_dim, (long long)o->block_size);
        }
    } else if (f->head_dim % align != 0) {
        plan->kv_mode = KVC_KV_LEGACY;
        snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                 "head_dim %lld is not a multiple of %lld elements (%s KV), which the paged operator requires "
                 "(attention-ops §3.13)",
                 (long long)f->head_dim, (long long)align, dt);
    } else if (kv_per_rank * f->head_dim > 65535) {
        plan->kv_mode = KVC_KV_LEGACY;
        snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                 "%lld KV heads x head_dim %lld per rank exceed the 65535 channels of paged BnBsH storage "
                 "(attention-ops §3.13)",
                 (long long)kv_per_rank, (long long)f->head_dim);
    } else {
        snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                 "block_size %lld and head_dim %lld meet the paged operator's alignment (%lld elements for %s KV)",
                 (long long)o->block_size, (long long)f->head_dim, (long long)align, dt);
    }

    plan->mla_absorb = plan->mla && plan->kv_mode == KVC_KV_PAGED;
    /* Operator generation and layout: the reference call matrix (attention-ops §4, §5). */
    static const struct { int32_t version; const char *layout, *reason; } ops[] = {
        {1, "NTD_TND", "non-absorbed MLA attention over packed per-head K/V (NTD_TND) is a v1 call (attention-ops §4)"},
        {1, "BSH", "contiguous BSH caches with per-batch lengths run the v1 operator (attention-ops §5 mode 1)"},
        {2, "TND_NTD", "absorbed MLA decode over the paged latent cache (TND_NTD, key = value = nope cache) is a v2 "
                       "call; prefill runs the non-absorbed v1 NTD_TND path (attention-ops §4)"},
        {2, "TND", "learnable attention sinks exist only in the v2 operator (attention-ops §3.9)"},
        {2, "TND", "paged TND attention with per-request KV lengths is the v2 path (attention-ops §4)"},
    };
    size_t pick;
    if (plan->kv_mode == KVC_KV_LEGACY)
        pick = plan->mla ? 0 : 1;
    else
        pick = plan->mla_absorb ? 2 : plan->sinks ? 3 : 4;
    plan->fa_version = ops[pick].version;
    copy_text(plan->input_layout, sizeof plan->input_layout, ops[pick].layout);
    copy_text(plan->fa_version_reason, sizeof plan->fa_version_reason, ops[pick].reason);
    if (plan->kv_mode == KVC_KV_LEGACY && plan->sinks)
        kvc_plan_warn(plan, "learnable sinks need the v2 operator, which the legacy contiguous path does not use");
}

static void set_layer_masks(const kvc_model_plan *plan, kvc_plan_layer *L) {
    L->pre_tokens = KVC_PLAN_NO_BAND;
    L->next_tokens = KVC_PLAN_NO_BAND;
    if (L->attn_type == KVC_ATTN_MAMBA) {
        L->sparse_prefill = KVC_PLAN_NO_MODE;
        L->sparse_decode = KVC_PLAN_NO_MODE;
        return;
    }
    if (L->attn_type == KVC_ATTN_SLIDING_WINDOW) {
        /* Band with right-down origin; W keys including the query: pre = W - 1 (attention-ops §3.5). */
        L->sparse_prefill = 4;
        L->sparse_decode = 4;
        L->pre_tokens = L->sliding_window - 1;
        L->next_tokens = 0;
        return;
    }
    L->sparse_prefill = 3;
    if (plan->kv_mode == KVC_KV_LEGACY)
        L->sparse_decode = 0; /* one query row per request, dense decode (attention-ops §5 mode 1) */
    else if (plan->mla_absorb)
        L->sparse_decode = plan->options.next_n == 0 ? 0 : 3; /* q_len 1 -> 0, verify -> 3 (§3.8) */
    else
        L->sparse_decode = 3;
}

/* ---- scale ----------------------------------------------------------------- */

static kvc_status compute_scale(const kvc_cfg *cfg, kvc_model_plan *plan, const model_facts *f) {
    bool have = false;
    double v = 0.0;
    kvc_status st;
    if (f->fam == FAM_MLA) {
        plan->scale = 1.0 / sqrt((double)f->head_dim);
        if (f->rope_scaled && f->mscale_all_dim != 0.0) {
            double g = yarn_g(f->rope_factor, f->mscale_all_dim);
            plan->scale *= g * g;
        }
        return KVC_OK;
    }
    if ((st = kvc_cfg_num(cfg, "attention_multiplier", false, &v, &have)) != KVC_OK) return st;
    if (have) {
        if (!(v > 0.0)) return kvc_fail(KVC_EINVAL, "config.json: attention_multiplier %g must be positive", v);
        plan->scale = v;
        return KVC_OK;
    }
    if (f->fam == FAM_GEMMA2 || f->fam == FAM_GEMMA3) {
        if ((st = kvc_cfg_num(cfg, "query_pre_attn_scalar", false, &v, &have)) != KVC_OK) return st;
        if (!have) {
            v = (double)f->head_dim;
            kvc_plan_warn(plan, "query_pre_attn_scalar absent: head_dim %lld used for the scale", (long long)f->head_dim);
        }
        if (!(v > 0.0)) return kvc_fail(KVC_EINVAL, "config.json: query_pre_attn_scalar %g must be positive", v);
        plan->scale = 1.0 / sqrt(v);
        return KVC_OK;
    }
    plan->scale = 1.0 / sqrt((double)f->head_dim);
    return KVC_OK;
}

/* ---- dtype ----------------------------------------------------------------- */

static kvc_status resolve_dtype(const kvc_cfg *cfg, kvc_model_plan *plan) {
    if (plan->options.kv_dtype_set) return KVC_OK;
    const char *name = NULL;
    kvc_status st = kvc_cfg_str(cfg, "torch_dtype", &name);
    if (st == KVC_OK && name == NULL) st = kvc_cfg_str(cfg, "dtype", &name);
    if (st != KVC_OK) return st;
    if (name == NULL) {
        plan->options.kv_dtype = KVC_DTYPE_BF16;
        kvc_plan_warn(plan, "torch_dtype absent: bf16 KV caches assumed");
    } else if (strcmp(name, "bfloat16") == 0) {
        plan->options.kv_dtype = KVC_DTYPE_BF16;
    } else if (strcmp(name, "float16") == 0) {
        plan->options.kv_dtype = KVC_DTYPE_F16;
    } else if (strcmp(name, "float32") == 0) {
        plan->options.kv_dtype = KVC_DTYPE_F32;
    } else {
        plan->options.kv_dtype = KVC_DTYPE_BF16;
        kvc_plan_warn(plan, "torch_dtype \"%s\" is not a KV dtype: bf16 KV caches assumed", name);
    }
    return KVC_OK;
}

/* ---- caches and the cache description --------------------------------------- */

static void add_cache(kvc_plan_layer *L, const char *name, int64_t heads, int64_t dim, kvc_dtype dtype,
                      int64_t block_size) {
    kvc_plan_cache *c = &L->caches[L->n_caches++];
    *c = (kvc_plan_cache){.num_head = heads, .dim = dim, .dtype = dtype};
    copy_text(c->name, sizeof c->name, name);
    c->bytes_per_token = heads * dim * (int64_t)kvc_dtype_size(dtype);
    c->bytes_per_block = c->bytes_per_token * block_size;
}

static void add_state(kvc_plan_layer *L, const state_shapes *s, int32_t k, kvc_dtype dtype) {
    kvc_plan_cache *c = &L->caches[L->n_caches++];
    *c = (kvc_plan_cache){.is_state = true, .n_shape = s->n_shape[k], .dtype = dtype};
    copy_text(c->name, sizeof c->name, s->names[k]);
    int64_t numel = 1;
    for (int32_t d = 0; d < s->n_shape[k]; d++) {
        c->shape[d] = s->shape[k][d];
        numel *= s->shape[k][d];
    }
    c->bytes_per_block = numel * (int64_t)kvc_dtype_size(dtype);
}

static kvc_status build_cache_info(kvc_model_plan *plan) {
    kvc_layer_cache_info *layers = calloc((size_t)plan->n_layers, sizeof *layers);
    int64_t n_entries = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) n_entries += plan->layers[i].n_caches;
    kvc_cache_entry *entries = calloc((size_t)n_entries, sizeof *entries);
    if (layers == NULL || entries == NULL) {
        free(layers);
        free(entries);
        return kvc_fail(KVC_ENOMEM, "plan: out of host memory for %lld cache entries", (long long)n_entries);
    }
    /* Distinct windows need distinct managers (one window per SlidingWindow group). */
    bool multi_window = false;
    int64_t first_window = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) {
        int64_t w = plan->layers[i].sliding_window;
        if (w == 0) continue;
        if (first_window == 0) first_window = w;
        multi_window |= w != first_window;
    }
    int64_t next = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) {
        const kvc_plan_layer *L = &plan->layers[i];
        layers[i] = (kvc_layer_cache_info){.layer_idx = i, .n_caches = L->n_caches, .caches = &entries[next]};
        for (int32_t c = 0; c < L->n_caches; c++) {
            const kvc_plan_cache *pc = &L->caches[c];
            kvc_cache_entry *e = &entries[next++];
            *e = kvc_cache_entry_default();
            copy_text(e->name, sizeof e->name, pc->name);
            e->attn_type = (int32_t)L->attn_type;
            e->dtype = pc->dtype;
            e->needs_block = true;
            if (pc->is_state) {
                e->is_state = true;
                e->block_size = 1;
                e->n_shape = pc->n_shape;
                for (int32_t d = 0; d < pc->n_shape; d++) e->shape[d] = pc->shape[d];
                e->next_n = plan->options.next_n;
                continue;
            }
            e->num_head = pc->num_head;
            e->n_dims = 1;
            e->dim[0] = pc->dim;
            e->block_size = plan->options.block_size;
            if (L->attn_type == KVC_ATTN_SLIDING_WINDOW) {
                e->sliding_window = L->sliding_window;
                if (multi_window) snprintf(e->manager_key, sizeof e->manager_key, "SlidingWindow_%lld", (long long)L->sliding_window);
            }
        }
    }
    plan->cache_info = (kvc_model_cache_info){.num_layers = plan->n_layers, .n_layer_infos = plan->n_layers,
                                              .layer_infos = layers, .is_mla_backend = plan->mla};
    return KVC_OK;
}

static kvc_status run_planner(kvc_model_plan *plan) {
    kvc_plan_params pp = kvc_plan_default_params();
    pp.max_concurrency = plan->options.max_concurrency;
    pp.next_n = plan->options.next_n;
    if (plan->options.kv_memory_bytes > 0) {
        pp.mode = KVC_PLAN_BUDGET;
        pp.kv_memory_bytes = plan->options.kv_memory_bytes;
    } else {
        pp.mode = KVC_PLAN_OFFLINE;
        pp.max_len = plan->options.max_model_len;
        pp.free_bytes = -1;
    }
    plan->plan_params = pp;
    kvc_status st = kvc_plan_blocks(&pp, &plan->cache_info, &plan->blocks);
    if (st != KVC_OK) {
        char msg[KVC_PLAN_TEXT_MAX * 2];
        snprintf(msg, sizeof msg, "%s", kvc_last_error());
        return kvc_fail(st, "planning the caches of %s: %s", plan->architecture, msg);
    }
    return KVC_OK;
}

/* ---- driver ---------------------------------------------------------------- */

static kvc_status analyze(const kvc_cfg *cfg, kvc_model_plan *plan) {
    model_facts f = {0};
    kvc_status st = identify(cfg, plan, &f.fam);
    if (st == KVC_OK) st = read_heads(cfg, plan, &f);
    if (st == KVC_OK && f.fam == FAM_MLA) st = read_mla(cfg, &f);
    if (st == KVC_OK) st = kvc_cfg_int(cfg, "max_position_embeddings", false, &f.max_pos, &f.have_max_pos);
    if (st != KVC_OK) return st;
    if (f.have_max_pos && f.max_pos < 1)
        return kvc_fail(KVC_EINVAL, "config.json: max_position_embeddings %lld must be positive", (long long)f.max_pos);
    if ((st = read_rope(cfg, plan, &f)) != KVC_OK) return st;
    if ((st = resolve_dtype(cfg, plan)) != KVC_OK) return st;

    kvc_plan_options *o = &plan->options;
    if (o->max_model_len == 0 && o->kv_memory_bytes == 0) {
        if (!f.have_max_pos)
            return kvc_fail(KVC_EINVAL,
                            "config.json: max_position_embeddings is missing; pass --max-model-len or --kv-memory");
        o->max_model_len = f.max_pos;
    } else if (o->max_model_len == 0) {
        o->max_model_len = f.have_max_pos ? f.max_pos : 0;
    }
    if (f.have_max_pos && o->max_model_len > f.max_pos)
        kvc_plan_warn(plan, "max_model_len %lld exceeds max_position_embeddings %lld", (long long)o->max_model_len,
                      (long long)f.max_pos);

    /* Tensor parallelism: query heads split evenly; KV heads split or replicated. */
    if (f.n_heads % o->tp != 0)
        return kvc_fail(KVC_EINVAL, "tp %lld does not divide num_attention_heads %lld", (long long)o->tp, (long long)f.n_heads);
    int64_t kv_per_rank = kvc_max64(f.n_kv_heads / o->tp, 1);
    if (f.fam != FAM_MLA) {
        if (f.n_kv_heads >= o->tp && f.n_kv_heads % o->tp != 0)
            return kvc_fail(KVC_EINVAL, "tp %lld does not divide num_key_value_heads %lld", (long long)o->tp,
                            (long long)f.n_kv_heads);
        if (f.n_kv_heads < o->tp) {
            if (o->tp % f.n_kv_heads != 0)
                return kvc_fail(KVC_EINVAL, "tp %lld is not a multiple of num_key_value_heads %lld (KV heads cannot be replicated evenly)",
                                (long long)o->tp, (long long)f.n_kv_heads);
            kvc_plan_warn(plan, "tp %lld exceeds num_key_value_heads %lld: each KV head replicated on %lld ranks",
                          (long long)o->tp, (long long)f.n_kv_heads, (long long)(o->tp / f.n_kv_heads));
        }
    }
    plan->num_attention_heads = f.n_heads;
    plan->num_key_value_heads = f.n_kv_heads;
    plan->q_heads_per_rank = f.n_heads / o->tp;
    plan->mla = f.fam == FAM_MLA;
    plan->sinks = f.fam == FAM_GPT_OSS;
    plan->rope_factor = f.rope_factor;
    plan->rope_attention_factor = f.rope_attention_factor;

    f.kinds = calloc((size_t)f.n_layers, sizeof *f.kinds);
    if (f.kinds == NULL) return kvc_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f.n_layers);
    st = assign_layer_kinds(cfg, plan, &f);
    state_shapes states = {0};
    bool any_state = false, any_attention = false, seen[3] = {false, false, false};
    for (int64_t i = 0; st == KVC_OK && i < f.n_layers; i++) {
        any_state |= f.kinds[i] == LK_STATE;
        any_attention |= f.kinds[i] != LK_STATE;
        seen[f.kinds[i]] = true;
    }
    if (st == KVC_OK && any_state) {
        st = state_shapes_read(cfg, &f, o->tp, &states);
        if (st == KVC_OK)
            kvc_plan_warn(plan, "state caches planned in the KV dtype %s; models keeping their state in f32 need --kv-dtype f32",
                          kvc_dtype_name(o->kv_dtype));
    }
    if (st == KVC_OK) st = compute_scale(cfg, plan, &f);
    if (st != KVC_OK) {
        free(f.kinds);
        return st;
    }
    plan->head_dim = f.head_dim;
    plan->hybrid = (int)seen[0] + (int)seen[1] + (int)seen[2] > 1;
    select_mode(plan, &f, kv_per_rank, any_attention);

    double softcap = 0.0;
    bool have_softcap = false;
    st = kvc_cfg_num(cfg, "attn_logit_softcapping", false, &softcap, &have_softcap);
    if (st == KVC_OK && have_softcap && softcap != 0.0)
        kvc_plan_warn(plan, "attn_logit_softcapping %g: the fused attention operator has no logit soft-capping", softcap);
    int64_t mtp = 0;
    bool have_mtp = false;
    if (st == KVC_OK) st = kvc_cfg_int(cfg, "num_nextn_predict_layers", false, &mtp, &have_mtp);
    if (st == KVC_OK && have_mtp && mtp > 0)
        kvc_plan_warn(plan,
                      "%lld multi-token-prediction layer(s) not planned: merge the draft model's cache description "
                      "(kvc_model_cache_info_merge) when it drafts",
                      (long long)mtp);
    if (st != KVC_OK) {
        free(f.kinds);
        return st;
    }

    plan->n_layers = (int32_t)f.n_layers;
    plan->layers = calloc((size_t)f.n_layers, sizeof *plan->layers);
    if (plan->layers == NULL) {
        free(f.kinds);
        return kvc_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f.n_layers);
    }
    kvc_dtype dt = o->kv_dtype;
    for (int32_t i = 0; i < plan->n_layers; i++) {
        kvc_plan_layer *L = &plan->layers[i];
        L->layer = i;
        switch (f.kinds[i]) {
        case LK_FULL: L->attn_type = KVC_ATTN_FULL; break;
        case LK_SLIDING:
            L->attn_type = KVC_ATTN_SLIDING_WINDOW;
            L->sliding_window = f.window;
            break;
        case LK_STATE: L->attn_type = KVC_ATTN_MAMBA; break;
        }
        set_layer_masks(plan, L);
        if (L->attn_type == KVC_ATTN_MAMBA) {
            for (int32_t k = 0; k < states.n; k++) add_state(L, &states, k, dt);
        } else if (plan->mla) {
            /* int8 latent keeps a bf16 rope cache (attention-ops §3.8 full-quant variant). */
            add_cache(L, "nope_cache", 1, f.kv_lora_rank, dt, o->block_size);
            add_cache(L, "rope_cache", 1, f.qk_rope_head_dim, dt == KVC_DTYPE_I8 ? KVC_DTYPE_BF16 : dt, o->block_size);
        } else {
            add_cache(L, "k_cache", kv_per_rank, f.head_dim, dt, o->block_size);
            add_cache(L, "v_cache", kv_per_rank, f.head_dim, dt, o->block_size);
        }
    }
    free(f.kinds);
    st = build_cache_info(plan);
    if (st == KVC_OK) st = run_planner(plan);
    return st;
}

kvc_status kvc_model_plan_create(const char *config_json, size_t len, const kvc_plan_options *opt,
                                 kvc_model_plan **out) {
    if (out == NULL) return kvc_fail(KVC_EINVAL, "kvc_model_plan_create: out must not be NULL");
    *out = NULL;
    if (config_json == NULL || len == 0) return kvc_fail(KVC_EINVAL, "kvc_model_plan_create: config text is empty");
    if (opt == NULL) return kvc_fail(KVC_EINVAL, "kvc_model_plan_create: options must not be NULL");
    kvc_status st = check_options(opt);
    if (st != KVC_OK) return st;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(config_json, len, &end, false);
    if (root == NULL) {
        size_t at = end != NULL && end >= config_json ? (size_t)(end - config_json) : 0;
        return kvc_fail(KVC_EINVAL, "config.json: malformed JSON near byte %zu", at);
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return kvc_fail(KVC_EINVAL, "config.json: the top level must be an object");
    }
    kvc_cfg cfg = {.root = root, .text = root};
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    if (text != NULL && !cJSON_IsNull(text)) {
        if (!cJSON_IsObject(text)) {
            cJSON_Delete(root);
            return kvc_fail(KVC_EINVAL, "config.json: text_config must be an object");
        }
        cfg.text = text;
    }
    kvc_model_plan *plan = calloc(1, sizeof *plan);
    if (plan == NULL) {
        cJSON_Delete(root);
        return kvc_fail(KVC_ENOMEM, "kvc_model_plan_create: out of host memory");
    }
    plan->options = *opt;
    st = analyze(&cfg, plan);
    cJSON_Delete(root);
    if (st != KVC_OK) {
        kvc_model_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return KVC_OK;
}

void kvc_model_plan_destroy(kvc_model_plan *plan) {
    if (plan == NULL) return;
    if (plan->cache_info.layer_infos != NULL) {
        free(plan->cache_info.layer_infos[0].caches); /* one array holds every layer's entries */
        free(plan->cache_info.layer_infos);
    }
    free(plan->layers);
    free(plan);
}
