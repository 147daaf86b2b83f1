/* Reading config.json into the facts the rules need: the family (from
 * model_type or the architecture), heads and dims, MLA latent dims,
 * max_position_embeddings, rope scaling and the kind of every layer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

#define MAX_LAYERS 100000

typedef struct family_entry {
    const char *model_type;
    const char *architecture;
    kvc_plan_family fam;
    const char *name;
} family_entry;

static const family_entry FAMILIES[] = {
    {"llama", "LlamaForCausalLM", KVC_FAM_GQA, "llama"},
    {"mistral", "MistralForCausalLM", KVC_FAM_GQA, "mistral"},
    {"mixtral", "MixtralForCausalLM", KVC_FAM_GQA, "mixtral"},
    {"qwen2", "Qwen2ForCausalLM", KVC_FAM_GQA, "qwen2"},
    {"qwen2_moe", "Qwen2MoeForCausalLM", KVC_FAM_GQA, "qwen2_moe"},
    {"qwen3", "Qwen3ForCausalLM", KVC_FAM_GQA, "qwen3"},
    {"qwen3_moe", "Qwen3MoeForCausalLM", KVC_FAM_GQA, "qwen3_moe"},
    {"phi3", "Phi3ForCausalLM", KVC_FAM_GQA, "phi3"},
    {"gpt_oss", "GptOssForCausalLM", KVC_FAM_GPT_OSS, "gpt_oss"},
    {"deepseek_v2", "DeepseekV2ForCausalLM", KVC_FAM_MLA, "deepseek_v2"},
    {"deepseek_v3", "DeepseekV3ForCausalLM", KVC_FAM_MLA, "deepseek_v3"},
    {"kimi_k2", NULL, KVC_FAM_MLA, "kimi_k2"},
    {"gemma2", "Gemma2ForCausalLM", KVC_FAM_GEMMA2, "gemma2"},
    {"gemma3", "Gemma3ForConditionalGeneration", KVC_FAM_GEMMA3, "gemma3"},
    {"gemma3_text", "Gemma3ForCausalLM", KVC_FAM_GEMMA3, "gemma3"},
    {"qwen3_next", "Qwen3NextForCausalLM", KVC_FAM_QWEN3_NEXT, "qwen3_next"},
    {"jamba", "JambaForCausalLM", KVC_FAM_JAMBA, "jamba"},
    {"granitemoehybrid", "GraniteMoeHybridForCausalLM", KVC_FAM_MAMBA2_HYBRID, "granitemoehybrid"},
};

/* ---- identification ------------------------------------------------------ */

/* The family entry of model_type, else of the architecture; NULL when neither is known. */
static const family_entry *find_family(const char *model_type, const char *arch) {
    const size_t n = sizeof FAMILIES / sizeof FAMILIES[0];
    for (size_t i = 0; model_type != NULL && i < n; i++)
        if (strcmp(model_type, FAMILIES[i].model_type) == 0) return &FAMILIES[i];
    for (size_t i = 0; arch != NULL && i < n; i++)
        if (FAMILIES[i].architecture != NULL && strcmp(arch, FAMILIES[i].architecture) == 0) return &FAMILIES[i];
    return NULL;
}

static kvc_status identify(const kvc_cfg *cfg, kvc_model_plan *plan, kvc_plan_family *fam) {
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
    kvc_plan_copy_text(plan->architecture, sizeof plan->architecture, arch != NULL ? arch : model_type);
    kvc_plan_copy_text(plan->model_type, sizeof plan->model_type, model_type);

    const family_entry *e = find_family(model_type, arch);
    *fam = e != NULL ? e->fam : KVC_FAM_GENERIC;
    kvc_plan_copy_text(plan->family, sizeof plan->family, e != NULL ? e->name : "generic");
    return KVC_OK;
}

/* ---- heads and dims -------------------------------------------------------- */

/* Appends name to the comma-separated list[cap], truncating. */
static void list_append(char *list, size_t cap, const char *name) {
    strncat(list, list[0] ? ", " : "", cap - strlen(list) - 1);
    strncat(list, name, cap - strlen(list) - 1);
}

static kvc_status read_heads(const kvc_cfg *cfg, kvc_model_plan *plan, kvc_model_facts *f) {
    if (f->fam == KVC_FAM_GENERIC) {
        /* Unknown architecture: refuse naming every generic field that is missing. */
        char missing[200] = "";
        const char *need[] = {"num_hidden_layers", "num_attention_heads"};
        for (size_t i = 0; i < 2; i++)
            if (!kvc_cfg_has(cfg, need[i])) list_append(missing, sizeof missing, need[i]);
        if (!kvc_cfg_has(cfg, "head_dim") && !kvc_cfg_has(cfg, "hidden_size"))
            list_append(missing, sizeof missing, "head_dim or hidden_size");
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
        if (f->fam == KVC_FAM_GENERIC)
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
    if (f->fam == KVC_FAM_MLA) return KVC_OK; /* MLA dims come from the latent fields */
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

static kvc_status read_mla(const kvc_cfg *cfg, kvc_model_facts *f) {
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

double kvc_plan_yarn_mscale(double s, double m) { return s <= 1.0 ? 1.0 : 0.1 * m * log(s) + 1.0; }

static kvc_status read_rope(const kvc_cfg *cfg, kvc_model_plan *plan, kvc_model_facts *f) {
    const cJSON *rope = kvc_cfg_item(cfg, "rope_scaling");
    const char *where = "rope_scaling.";
    if (rope == NULL) {
        rope = kvc_cfg_item(cfg, "rope_parameters");
        where = "rope_parameters.";
    }
    f->rope_factor = 1.0;
    f->rope_attention_factor = 1.0;
    f->mscale_all_dim = 0.0;
    kvc_plan_copy_text(plan->rope_type, sizeof plan->rope_type, "default");
    if (rope == NULL) return KVC_OK;
    if (!cJSON_IsObject(rope)) return kvc_fail(KVC_EINVAL, "config.json: %.*s must be an object", (int)strlen(where) - 1, where);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rope, "rope_type");
    if (type == NULL || cJSON_IsNull(type)) type = cJSON_GetObjectItemCaseSensitive(rope, "type");
    if (type != NULL && !cJSON_IsNull(type) && !cJSON_IsString(type))
        return kvc_fail(KVC_EINVAL, "config.json: %srope_type must be a string", where);
    const char *t = (type != NULL && cJSON_IsString(type)) ? type->valuestring : "default";
    kvc_plan_copy_text(plan->rope_type, sizeof plan->rope_type, t);
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
            f->rope_attention_factor =
                kvc_plan_yarn_mscale(f->rope_factor, mscale) / kvc_plan_yarn_mscale(f->rope_factor, f->mscale_all_dim);
        else
            f->rope_attention_factor = kvc_plan_yarn_mscale(f->rope_factor, 1.0);
    }
    return KVC_OK;
}

/* ---- layer types ----------------------------------------------------------- */

static kvc_status layer_types_list(const kvc_cfg *cfg, kvc_model_facts *f, bool *given) {
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
            f->kinds[i] = KVC_LK_FULL;
        else if (strcmp(s, "sliding_attention") == 0)
            f->kinds[i] = KVC_LK_SLIDING;
        else if (strcmp(s, "linear_attention") == 0 || strcmp(s, "mamba") == 0)
            f->kinds[i] = KVC_LK_STATE;
        else
            return kvc_fail(KVC_EINVAL,
                            "config.json: layer_types[%lld] \"%s\" is not a known layer type (full_attention, "
                            "sliding_attention, linear_attention, mamba)",
                            (long long)i, s);
    }
    *given = true;
    return KVC_OK;
}

static kvc_status read_window(const kvc_cfg *cfg, kvc_model_facts *f, bool *have) {
    kvc_status st = kvc_cfg_int(cfg, "sliding_window", false, &f->window, have);
    if (st != KVC_OK) return st;
    if (!*have) f->window = 0;
    if (*have && f->window < 1)
        return kvc_fail(KVC_EINVAL, "config.json: sliding_window %lld must be positive or null", (long long)f->window);
    return KVC_OK;
}

kvc_status kvc_plan_layer_kinds(const kvc_cfg *cfg, kvc_model_plan *plan, kvc_model_facts *f) {
    f->kinds = kvc_calloc((size_t)f->n_layers, sizeof *f->kinds);
    if (f->kinds == NULL) return kvc_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    bool given = false, have_window = false;
    kvc_status st = layer_types_list(cfg, f, &given);
    if (st == KVC_OK) st = read_window(cfg, f, &have_window);
    if (st != KVC_OK) return st;
    for (int64_t i = 0; i < f->n_layers && !given; i++) f->kinds[i] = KVC_LK_FULL;
    if (!given) {
        switch (f->fam) {
        case KVC_FAM_GEMMA2:
        case KVC_FAM_GPT_OSS:
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = i % 2 == 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
            break;
        case KVC_FAM_GEMMA3: {
            int64_t pattern = 6;
            bool have = false;
            if ((st = kvc_cfg_int(cfg, "sliding_window_pattern", false, &pattern, &have)) != KVC_OK) return st;
            if (!have && (st = kvc_cfg_int(cfg, "_sliding_window_pattern", false, &pattern, &have)) != KVC_OK) return st;
            if (!have) kvc_plan_warn(plan, "sliding_window_pattern absent: 6 (five sliding layers, then one full) assumed");
            if (pattern < 1) return kvc_fail(KVC_EINVAL, "config.json: sliding_window_pattern %lld must be positive", (long long)pattern);
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = (i + 1) % pattern != 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
            break;
        }
        case KVC_FAM_GQA: {
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
                for (int64_t i = from; i < f->n_layers; i++) f->kinds[i] = KVC_LK_SLIDING;
                break;
            }
            for (int64_t i = 0; have_window && i < f->n_layers; i++) f->kinds[i] = KVC_LK_SLIDING; /* Mistral, Phi-3 */
            break;
        }
        case KVC_FAM_GENERIC:
            if (have_window) {
                for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = KVC_LK_SLIDING;
                kvc_plan_warn(plan, "sliding_window %lld without layer_types: every layer planned as a window layer",
                              (long long)f->window);
            }
            break;
        case KVC_FAM_JAMBA: {
            int64_t period = 0, offset = 0;
            if ((st = kvc_cfg_int(cfg, "attn_layer_period", true, &period, NULL)) != KVC_OK) return st;
            if ((st = kvc_cfg_int(cfg, "attn_layer_offset", true, &offset, NULL)) != KVC_OK) return st;
            if (period < 1 || offset < 0 || offset >= period)
                return kvc_fail(KVC_EINVAL, "config.json: attn_layer_offset %lld must be in [0, attn_layer_period %lld)",
                                (long long)offset, (long long)period);
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = i % period == offset ? KVC_LK_FULL : KVC_LK_STATE;
            break;
        }
        case KVC_FAM_QWEN3_NEXT: {
            int64_t interval = 4;
            bool have = false;
            if ((st = kvc_cfg_int(cfg, "full_attention_interval", false, &interval, &have)) != KVC_OK) return st;
            if (!have) kvc_plan_warn(plan, "layer_types and full_attention_interval absent: every 4th layer full assumed");
            if (interval < 1) return kvc_fail(KVC_EINVAL, "config.json: full_attention_interval %lld must be positive", (long long)interval);
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = (i + 1) % interval == 0 ? KVC_LK_FULL : KVC_LK_STATE;
            break;
        }
        case KVC_FAM_MAMBA2_HYBRID:
            return kvc_fail(KVC_EINVAL, "config.json: layer_types is missing (needed to tell mamba from attention layers)");
        case KVC_FAM_MLA:
            break;
        }
    }
    bool any_sliding = false;
    for (int64_t i = 0; i < f->n_layers; i++) any_sliding |= f->kinds[i] == KVC_LK_SLIDING;
    if (any_sliding && !have_window)
        return kvc_fail(KVC_EINVAL, "config.json: sliding_window is missing but the model has sliding-attention layers");
    if (any_sliding && f->fam == KVC_FAM_MLA)
        return kvc_fail(KVC_EINVAL, "config.json: layer_types asks for sliding layers, which MLA models do not have");
    if (any_sliding && f->have_max_pos && f->window >= f->max_pos) {
        kvc_plan_warn(plan,
                      "sliding_window %lld >= max_position_embeddings %lld never drops a key: window layers planned "
                      "as FullAttention",
                      (long long)f->window, (long long)f->max_pos);
        for (int64_t i = 0; i < f->n_layers; i++)
            if (f->kinds[i] == KVC_LK_SLIDING) f->kinds[i] = KVC_LK_FULL;
    }
    return KVC_OK;
}

kvc_status kvc_plan_read_facts(const kvc_cfg *cfg, kvc_model_plan *plan, kvc_model_facts *f) {
    kvc_status st = identify(cfg, plan, &f->fam);
    if (st == KVC_OK) st = read_heads(cfg, plan, f);
    if (st == KVC_OK && f->fam == KVC_FAM_MLA) st = read_mla(cfg, f);
    if (st == KVC_OK) st = kvc_cfg_int(cfg, "max_position_embeddings", false, &f->max_pos, &f->have_max_pos);
    if (st != KVC_OK) return st;
    if (f->have_max_pos && f->max_pos < 1)
        return kvc_fail(KVC_EINVAL, "config.json: max_position_embeddings %lld must be positive", (long long)f->max_pos);
    return read_rope(cfg, plan, f);
}
