/* Reading config.json into the facts the rules need: the family (from
 * model_type or the architecture), heads and dims, MLA latent dims,
 * max_position_embeddings, rope scaling and the kind of every layer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

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

static kvc_status identify(const kvc_hparams *hp, kvc_model_plan *plan, kvc_plan_family *fam) {
    const char *arch = hp->architecture, *model_type = hp->model_type;
    if (arch == NULL && model_type == NULL)
        return kvci_fail(KVC_EINVAL, "config.json: neither architectures nor model_type names the model");
    /* the reader bounds both names to KVC_HP_NAME_MAX bytes, which the plan's fields hold */
    kvci_plan_copy_text(plan->architecture, sizeof plan->architecture, arch != NULL ? arch : model_type);
    kvci_plan_copy_text(plan->model_type, sizeof plan->model_type, model_type);

    const family_entry *e = find_family(model_type, arch);
    *fam = e != NULL ? e->fam : KVC_FAM_GENERIC;
    kvci_plan_copy_text(plan->family, sizeof plan->family, e != NULL ? e->name : "generic");
    return KVC_OK;
}

/* ---- heads and dims -------------------------------------------------------- */

/* Appends name to the comma-separated list[cap], truncating. */
static void list_append(char *list, size_t cap, const char *name) {
    strncat(list, list[0] ? ", " : "", cap - strlen(list) - 1);
    strncat(list, name, cap - strlen(list) - 1);
}

static kvc_status read_heads(kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    const kvc_json_obj *cfg = &hp->cfg;
    if (f->fam == KVC_FAM_GENERIC) {
        /* Unknown architecture: refuse naming every generic field that is missing. */
        char missing[200] = "";
        const char *need[] = {"num_hidden_layers", "num_attention_heads"};
        for (size_t i = 0; i < 2; i++)
            if (kvci_json_find(cfg, need[i]) == NULL) list_append(missing, sizeof missing, need[i]);
        if (kvci_json_find(cfg, "head_dim") == NULL && kvci_json_find(cfg, "hidden_size") == NULL)
            list_append(missing, sizeof missing, "head_dim or hidden_size");
        if (missing[0] != '\0')
            return kvci_fail(KVC_EINVAL,
                             "config.json: architecture %s is not a known family and lacks the generic fields "
                             "needed to plan it: %s",
                             plan->architecture, missing);
        kvci_plan_warn(plan,
                       "architecture %s (model_type %s) is not a known family: planned from the generic fields "
                       "(num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, sliding_window, "
                       "layer_types)",
                       plan->architecture, plan->model_type[0] ? plan->model_type : "absent");
    }
    kvc_status st = kvci_hparams_read_sizes(hp);
    if (st != KVC_OK) return st;
    f->n_layers = hp->n_layers;
    f->n_heads = hp->n_heads;
    f->n_kv_heads = hp->n_kv_heads;
    f->hidden_size = hp->hidden_size;
    f->have_max_pos = hp->have_max_pos;
    f->max_pos = hp->max_pos;
    if (!hp->have_kv_heads && f->fam == KVC_FAM_GENERIC)
        kvci_plan_warn(plan, "num_key_value_heads absent: %lld (one KV head per query head) assumed",
                       (long long)f->n_heads);
    if (f->fam == KVC_FAM_MLA) {
        /* MLA dims come from the latent fields */
        kvc_mla_dims d;
        if ((st = kvci_hparams_read_mla(hp, &d)) != KVC_OK) return st;
        f->kv_lora_rank = d.kv_lora_rank;
        f->qk_rope_head_dim = d.qk_rope_head_dim;
        f->qk_nope_head_dim = d.qk_nope_head_dim;
        f->v_head_dim = d.v_head_dim;
        f->head_dim = d.qk_nope_head_dim + d.qk_rope_head_dim;
        return KVC_OK;
    }
    return kvci_hparams_head_dim(hp, &f->head_dim);
}

/* ---- rope ------------------------------------------------------------------ */

static kvc_status read_rope(kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    kvc_status st = kvci_hparams_read_rope(hp);
    if (st != KVC_OK) return st;
    f->rope = hp->rope;
    if (hp->rope_per_layer_type)
        kvci_plan_warn(plan, "%s holds one rope per layer type: the full-attention entry is reported (%s)",
                       hp->rope_source, kvc_rope_type_name(hp->rope.type));
    kvci_plan_copy_text(plan->rope_type, sizeof plan->rope_type, kvc_rope_type_name(hp->rope.type));
    return KVC_OK;
}

/* ---- layer types ----------------------------------------------------------- */

static kvc_status layer_types_list(const kvc_json_obj *cfg, kvc_model_facts *f, bool *given) {
    const cJSON *lt = NULL;
    kvc_status st = kvci_json_array(cfg, "layer_types", KVC_HP_MAX_LAYERS, &lt, given);
    if (st != KVC_OK || !*given) return st;
    *given = false;
    if (cJSON_GetArraySize(lt) != f->n_layers)
        return kvci_fail(KVC_EINVAL, "config.json: layer_types has %d entries but num_hidden_layers is %lld",
                         cJSON_GetArraySize(lt), (long long)f->n_layers);
    int64_t i = 0;
    for (const cJSON *e = lt->child; e != NULL; e = e->next, i++) {
        if (!cJSON_IsString(e))
            return kvci_fail(KVC_EINVAL, "config.json: layer_types[%lld] must be a string", (long long)i);
        const char *s = e->valuestring;
        if (strcmp(s, "full_attention") == 0 || strcmp(s, "attention") == 0)
            f->kinds[i] = KVC_LK_FULL;
        else if (strcmp(s, "sliding_attention") == 0)
            f->kinds[i] = KVC_LK_SLIDING;
        else if (strcmp(s, "linear_attention") == 0 || strcmp(s, "mamba") == 0)
            f->kinds[i] = KVC_LK_STATE;
        else
            return kvci_fail(KVC_EINVAL,
                             "config.json: layer_types[%lld] \"%s\" is not a known layer type (full_attention, "
                             "sliding_attention, linear_attention, mamba)",
                             (long long)i, s);
    }
    *given = true;
    return KVC_OK;
}

kvc_status kvci_plan_layer_kinds(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    const kvc_json_obj *cfg = &hp->cfg;
    f->kinds = kvci_calloc((size_t)f->n_layers, sizeof *f->kinds);
    if (f->kinds == NULL)
        return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    bool given = false, qwen_rule = false;
    kvc_status st = layer_types_list(cfg, f, &given);
    if (st == KVC_OK) st = kvci_hparams_window(hp, &f->window, &qwen_rule);
    if (st != KVC_OK) return st;
    const bool have_window = f->window > 0;
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
            if ((st = kvci_json_int(cfg, "sliding_window_pattern", 1, KVC_HP_MAX_LAYERS, &pattern, &have)) != KVC_OK)
                return st;
            if (!have &&
                (st = kvci_json_int(cfg, "_sliding_window_pattern", 1, KVC_HP_MAX_LAYERS, &pattern, &have)) != KVC_OK)
                return st;
            if (!have)
                kvci_plan_warn(plan, "sliding_window_pattern absent: 6 (five sliding layers, then one full) assumed");
            for (int64_t i = 0; i < f->n_layers; i++)
                f->kinds[i] = (i + 1) % pattern != 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
            break;
        }
        case KVC_FAM_GQA: {
            /* Qwen2/Qwen3: windows only with use_sliding_window, from max_window_layers on. */
            if (qwen_rule) {
                int64_t from = 28;
                bool have_from = false;
                if ((st = kvci_json_int(cfg, "max_window_layers", 0, KVC_HP_MAX_LAYERS, &from, &have_from)) != KVC_OK)
                    return st;
                if (!have_from) kvci_plan_warn(plan, "max_window_layers absent: 28 assumed");
                for (int64_t i = from; i < f->n_layers; i++) f->kinds[i] = KVC_LK_SLIDING;
                break;
            }
            for (int64_t i = 0; have_window && i < f->n_layers; i++) f->kinds[i] = KVC_LK_SLIDING; /* Mistral, Phi-3 */
            break;
        }
        case KVC_FAM_GENERIC:
            if (have_window) {
                for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = KVC_LK_SLIDING;
                kvci_plan_warn(plan, "sliding_window %lld without layer_types: every layer planned as a window layer",
                               (long long)f->window);
            }
            break;
        case KVC_FAM_JAMBA: {
            int64_t period = 0, offset = 0;
            if ((st = kvci_json_int(cfg, "attn_layer_period", 1, KVC_HP_MAX_LAYERS, &period, NULL)) != KVC_OK)
                return st;
            if ((st = kvci_json_int(cfg, "attn_layer_offset", 0, KVC_HP_MAX_LAYERS, &offset, NULL)) != KVC_OK)
                return st;
            if (offset >= period)
                return kvci_fail(KVC_EINVAL,
                                 "config.json: attn_layer_offset %lld must be in [0, attn_layer_period %lld)",
                                 (long long)offset, (long long)period);
            for (int64_t i = 0; i < f->n_layers; i++) f->kinds[i] = i % period == offset ? KVC_LK_FULL : KVC_LK_STATE;
            break;
        }
        case KVC_FAM_QWEN3_NEXT: {
            int64_t interval = 4;
            bool have = false;
            if ((st = kvci_json_int(cfg, "full_attention_interval", 1, KVC_HP_MAX_LAYERS, &interval, &have)) != KVC_OK)
                return st;
            if (!have)
                kvci_plan_warn(plan, "layer_types and full_attention_interval absent: every 4th layer full assumed");
            for (int64_t i = 0; i < f->n_layers; i++)
                f->kinds[i] = (i + 1) % interval == 0 ? KVC_LK_FULL : KVC_LK_STATE;
            break;
        }
        case KVC_FAM_MAMBA2_HYBRID:
            return kvci_fail(KVC_EINVAL,
                             "config.json: layer_types is missing (needed to tell mamba from attention layers)");
        case KVC_FAM_MLA: break;
        }
    }
    bool any_sliding = false;
    for (int64_t i = 0; i < f->n_layers; i++) any_sliding |= f->kinds[i] == KVC_LK_SLIDING;
    if (any_sliding && !have_window)
        return kvci_fail(KVC_EINVAL,
                         "config.json: sliding_window is missing but the model has sliding-attention layers");
    if (any_sliding && f->fam == KVC_FAM_MLA)
        return kvci_fail(KVC_EINVAL, "config.json: layer_types asks for sliding layers, which MLA models do not have");
    if (any_sliding && f->have_max_pos && f->window >= f->max_pos) {
        kvci_plan_warn(plan,
                       "sliding_window %lld >= max_position_embeddings %lld never drops a key: window layers planned "
                       "as FullAttention",
                       (long long)f->window, (long long)f->max_pos);
        for (int64_t i = 0; i < f->n_layers; i++)
            if (f->kinds[i] == KVC_LK_SLIDING) f->kinds[i] = KVC_LK_FULL;
    }
    return KVC_OK;
}

kvc_status kvci_plan_read_facts(kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    kvc_status st = identify(hp, plan, &f->fam);
    if (st == KVC_OK) st = read_heads(hp, plan, f);
    if (st == KVC_OK) st = read_rope(hp, plan, f);
    return st;
}
