/* The one reader of config.json (see hparams.h and docs/config.md). */
#include "model/hparams.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/ops.h"
#include "model/family.h"

/* Class defaults that differ between model types (transformers' config classes). */
typedef struct type_defaults {
    const char *model_type;
    int64_t head_dim; /* 0: hidden_size / num_attention_heads */
    double rope_theta;
    int64_t sliding_window; /* when the key is absent; 0: none */
    bool window_switch;     /* sliding_window applies only with use_sliding_window true */
    int64_t kv_heads; /* num_key_value_heads when the key is missing (null: as many as the query heads); 0: that */
    /* the attention always splits hidden_size over num_attention_heads (GPT-2, OPT, GPT-NeoX, GPT-J, GPT-BigCode,
     * Falcon, BLOOM, MPT, StableLM, Qwen2-VL): a head_dim key, which transformers never reads for them, is not read */
    bool head_dim_from_hidden;
    /* one KV head per head whatever num_key_value_heads says (GPT-2, OPT, GPT-NeoX, GPT-J, BLOOM, MPT:
     * transformers never reads it) */
    bool mha_only;
} type_defaults;

static const type_defaults DEFAULTS[] = {
    {"qwen2", 0, 10000.0, 0, true, 32, false, false},
    {"qwen2_moe", 0, 10000.0, 0, true, 16, false, false},
    {"qwen3", 128, 10000.0, 0, true, 32, false, false},
    {"qwen3_moe", 0, 10000.0, 0, true, 4, false, false},      /* Qwen3MoeConfig has no head_dim of its own */
    {"lara_mini", 128, 10000.0, 512, false, 4, false, false}, /* LaraMiniConfig's */
    {"beam", 128, 10000.0, 512, false, 8, false, false},      /* BeamConfig's */
    {"gpt_oss", 64, 150000.0, 128, false, 8, false, false},
    {"mistral", 0, 10000.0, 4096, false, 8, false, false},
    {"mixtral", 0, 1000000.0, 0, false, 8, false, false},
    {"gemma2", 256, 10000.0, 4096, false, 4, false, false},     /* Gemma2Config's: one rope for every layer */
    {"vaultgemma", 256, 10000.0, 4096, false, 4, false, false}, /* VaultGemmaConfig's, Gemma2Config's */
    /* Gemma 3: the full layers' theta; the sliding layers' is rope_local_base_freq (family_gemma.c) */
    {"gemma3_text", 256, 1000000.0, 4096, false, 4, false, false},
    {"gemma3", 256, 1000000.0, 4096, false, 4, false, false},
    /* Gemma 4: the sliding layers' head_dim (the full layers' is global_head_dim, family_gemma4.c) */
    {"gemma4_text", 256, 1000000.0, 512, false, 4, false, false},
    {"gemma4", 256, 1000000.0, 512, false, 4, false, false},
    {"gemma4_unified_text", 256, 1000000.0, 1024, false, 4, false, false}, /* Gemma4UnifiedTextConfig's */
    {"gemma4_unified", 256, 1000000.0, 1024, false, 4, false, false},
    {"gemma3n_text", 256, 1000000.0, 512, false, 2, false, false}, /* Gemma3nTextConfig's */
    {"gemma3n", 256, 1000000.0, 512, false, 2, false, false},
    {"olmo3", 0, 500000.0, 4096, false, 0, false, false},
    {"flex_olmo", 0, 500000.0, 0, false, 0, false, false}, /* FlexOlmoConfig's default_theta */
    {"hunyuan_v1_dense", 0, 10000.0, 0, false, 0, false, false},
    {"hunyuan_v1_moe", 0, 10000.0, 0, false, 0, false, false},
    /* RecurrentGemmaConfig's (the window: attention_window_size) */
    {"recurrent_gemma", 0, 10000.0, 2048, false, 0, false, false},
    {"minimax_m2", 128, 5000000.0, 0, false, 8, false, false},   /* MiniMaxM2Config's */
    {"minimax", 0, 1000000.0, 0, false, 8, false, false},        /* MiniMaxConfig's */
    {"exaone", 0, 500000.0, 0, false, 8, false, false},          /* ExaoneConfig's */
    {"internlm3", 128, 10000.0, 0, false, 2, false, false},      /* InternLM3Config's */
    {"apertus", 0, 12000000.0, 0, false, 0, false, false},       /* ApertusConfig's */
    {"cwm", 128, 1000000.0, 8192, false, 8, false, false},       /* CwmConfig's */
    {"solar_open", 128, 1000000.0, 0, false, 8, false, false},   /* SolarOpenConfig's */
    {"jais2", 0, 10000.0, 0, false, 0, false, false},            /* Jais2Config's (LlamaConfig's) */
    {"iquestcoder", 128, 10000.0, 0, false, 8, false, false},    /* IQuestCoderConfig's */
    {"hyperclovax", 0, 10000.0, 0, false, 0, false, false},      /* HyperCLOVAXConfig's (GraniteConfig's) */
    {"granite_swa", 0, 10000.0, 128, false, 4, false, false},    /* GraniteSWAConfig's */
    {"granitemoe_swa", 0, 10000.0, 128, false, 0, false, false}, /* GraniteMoeSWAConfig's */
    {"longcat_flash", 0, 10000000.0, 0, false, 0, false, false}, /* LongcatFlashConfig's default_theta */
    {"flint", 128, 10000.0, 513, false, 4, false, false},        /* FlintConfig's */
    {"hy_v3", 128, 11158840.0, 0, false, 8, false, false},       /* HYV3Config's */
    {"cohere2_moe", 128, 10000.0, 4096, false, 0, false, false}, /* Cohere2MoeConfig's */
    {"jetmoe", 128, 10000.0, 0, false, 16, false, false},        /* JetMoeConfig's (head_dim: kv_channels) */
    {"gemma", 256, 10000.0, 0, false, 16, false, false},
    {"smollm3", 0, 2000000.0, 0, true, 4, false, false},
    {"glm", 128, 10000.0, 0, false, 2, false, false},
    {"glm4", 128, 10000.0, 0, false, 2, false, false},
    {"cohere", 0, 500000.0, 0, false, 0, false, false},
    {"cohere2", 0, 10000.0, 4096, false, 0, false, false},
    {"seed_oss", 128, 10000.0, 0, false, 8, false, false},
    {"exaone4", 0, 10000.0, 4096, false, 32, false, false},
    {"exaone_moe", 0, 10000.0, 4096, false, 32, false, false}, /* ExaoneMoeConfig's, as Exaone4Config's */
    {"starcoder2", 0, 10000.0, 0, false, 2, false, false},
    {"ministral", 0, 10000.0, 4096, false, 8, false, false},
    {"ministral3", 128, 10000.0, 0, false, 8, false, false},
    {"helium", 128, 100000.0, 0, false, 20, false, false},
    {"ernie4_5", 128, 500000.0, 0, false, 2, false, false},
    {"stablelm", 0, 10000.0, 0, false, 32, true, false},
    {"glm4_moe", 0, 10000.0, 0, false, 8, false, false},
    {"sarvam_moe", 64, 8000000.0, 0, false, 4, false, false},    /* SarvamMoEConfig's */
    {"param2moe", 64, 500000.0, 0, false, 8, false, false},      /* Param2MoeConfig's */
    {"minicpm5_moe", 128, 5000000.0, 0, false, 2, false, false}, /* MiniCPM5MoeConfig's */
    {"kolibri1", 128, 10000.0, 513, false, 4, false, false},     /* Kolibri1Config's */
    {"kolibri1_1", 128, 10000.0, 513, false, 4, false, false},   /* Kolibri1_1Config's */
    {"gpt2", 0, 10000.0, 0, false, 0, true, true},
    {"opt", 0, 10000.0, 0, false, 0, true, true},
    {"gpt_neox", 0, 10000.0, 0, false, 0, true, true},
    {"persimmon", 0, 10000.0, 0, false, 0, true, true},
    {"gptj", 0, 10000.0, 0, false, 0, true, true},
    {"gpt_neo", 0, 10000.0, 256, false, 0, true, true}, /* its window: window_size */
    {"codegen", 0, 10000.0, 0, false, 0, true, true},
    {"biogpt", 0, 10000.0, 0, false, 0, true, true},
    {"xglm", 0, 10000.0, 0, false, 0, true, true},
    {"openai-gpt", 0, 10000.0, 0, false, 0, true, true},
    {"gpt_neox_japanese", 0, 10000.0, 0, false, 0, true, true},
    {"ctrl", 0, 10000.0, 0, false, 0, true, true},
    {"dots1", 0, 10000.0, 4096, false, 32, false, false},  /* its window: no use_sliding_window (hparams_window) */
    {"gpt_bigcode", 0, 10000.0, 0, false, 0, true, false}, /* its KV heads by multi_query */
    {"falcon", 0, 10000.0, 0, false, 0, true, false},      /* its KV heads by its flags */
    {"bloom", 0, 10000.0, 0, false, 0, true, true},
    {"mpt", 0, 10000.0, 0, false, 0, true, true},
    {"llama4_text", 128, 500000.0, 0, false, 8, false, false},
    {"llama4", 128, 500000.0, 0, false, 8, false, false},
    /* Qwen2VLTextConfig's and Qwen2_5_VLTextConfig's (the hub's flat configs: their outer types) */
    {"qwen2_5_vl_text", 0, 1000000.0, 4096, true, 8, true, false},
    {"qwen2_5_vl", 0, 1000000.0, 4096, true, 8, true, false},
    {"qwen2_vl_text", 0, 1000000.0, 4096, true, 8, true, false},
    {"qwen2_vl", 0, 1000000.0, 4096, true, 8, true, false},
    {"qwen3_vl_text", 128, 500000.0, 0, false, 32, false, false}, /* Qwen3VLTextConfig's */
    {"qwen3_vl", 128, 500000.0, 0, false, 32, false, false},
    {"phi4_multimodal", 0, 10000.0, 0, false, 8, false, false},   /* Phi4MultimodalConfig's (Phi3Config's but 8 KV) */
    {"emu3_text_model", 0, 1000000.0, 0, false, 8, false, false}, /* Emu3TextConfig's default_theta */
    {"emu3", 0, 1000000.0, 0, false, 8, false, false},
    {"apertus1p5_text", 0, 12000000.0, 0, false, 0, false, false}, /* Apertus1p5TextConfig's (ApertusConfig's) */
    {"apertus1p5", 0, 12000000.0, 0, false, 0, false, false},
    {"aria_text", 0, 10000.0, 0, false, 0, false, false}, /* AriaTextConfig's (LlamaConfig's) */
    {"aria", 0, 10000.0, 0, false, 0, false, false},
    {"mllama_text_model", 0, 500000.0, 0, false, 8, false, false}, /* MllamaTextConfig's default_theta */
    {"mllama", 0, 500000.0, 0, false, 8, false, false},
    {"ernie4_5_moe", 0, 500000.0, 0, false, 4, false, false}, /* Ernie4_5_MoeConfig has no head_dim of its own */
    {"phimoe", 0, 1000000.0, 0, false, 8, false, false},
    {"dbrx", 0, 10000.0, 0, false, 1, true, false}, /* DbrxAttentionConfig's kv_n_heads */
    {"lfm2", 0, 1000000.0, 0, false, 8, false, false},
    {"qwen3_next", 256, 10000.0, 0, false, 2, false, false},
    {"qwen3_5_text", 256, 10000.0, 0, false, 4, false, false},
    {"qwen3_5", 256, 10000.0, 0, false, 4, false, false}, /* its text config's when text_config names no type */
    {"qwen3_5_moe_text", 256, 10000.0, 0, false, 2, false, false},
    {"qwen3_5_moe", 256, 10000.0, 0, false, 2, false, false},
    {"qwen4_exp_text", 256, 10000.0, 0, false, 2, false, false}, /* Qwen4ExpTextConfig's (Qwen3.5-MoE's) */
    {"qwen4_exp", 256, 10000.0, 0, false, 2, false, false},
    {"dory", 256, 10000000.0, 1024, false, 4, false, false},          /* DoryConfig's (the full layers' theta) */
    {"lfm2_moe", 0, 1000000.0, 0, false, 8, false, false},            /* Lfm2MoeConfig's */
    {"deepseek_v4", 512, 10000.0, 128, false, 1, false, false},       /* DeepseekV4Config's */
    {"afmoe", 128, 10000.0, 1024, false, 0, false, false},            /* AfmoeConfig's */
    {"ergo", 0, 1000000.0, 512, false, 8, true, false},               /* ErgoConfig's */
    {"lfm3", 128, 1000000.0, 256, false, 4, false, false},            /* Lfm3Config's (its ropes: lfm3_ropes) */
    {"mimo_v2_flash", 192, 5000000.0, 129, false, 4, false, false},   /* MiMoV2FlashConfig's (ropes: mimo_ropes) */
    {"laguna", 128, 500000.0, 512, false, 8, false, false},           /* LagunaConfig's (ropes: laguna_ropes) */
    {"mellum", 128, 500000.0, 1024, false, 4, false, false},          /* MellumConfig's (ropes: laguna_ropes, whole) */
    {"cohere_compass_text", 0, 10000.0, 4096, false, 0, true, false}, /* CohereCompassTextConfig's */
    {"modernbert-decoder", 0, 160000.0, 0, false, 0, true, true},     /* its window: kvci_hparams_window */
    {"bitnet", 0, 500000.0, 0, false, 5, false, false},               /* BitNetConfig's */
    /* the BERT types (family_bert.c): learned positions, hidden / heads, one KV head per head */
    {"bert", 0, 10000.0, 0, false, 0, true, true},
    {"roberta", 0, 10000.0, 0, false, 0, true, true},
    {"xlm-roberta", 0, 10000.0, 0, false, 0, true, true},
    {"camembert", 0, 10000.0, 0, false, 0, true, true},
    {"data2vec-text", 0, 10000.0, 0, false, 0, true, true},
    {"ernie", 0, 10000.0, 0, false, 0, true, true},
    {"bert-generation", 0, 10000.0, 0, false, 0, true, true},
    {"megatron-bert", 0, 10000.0, 0, false, 0, true, true},
    {"xlm-roberta-xl", 0, 10000.0, 0, false, 0, true, true},
    {"roberta-prelayernorm", 0, 10000.0, 0, false, 0, true, true},
};

static type_defaults defaults_of(const kvc_hparams *hp) {
    for (size_t i = 0; hp->model_type != NULL && i < sizeof DEFAULTS / sizeof DEFAULTS[0]; i++)
        if (strcmp(hp->model_type, DEFAULTS[i].model_type) == 0) return DEFAULTS[i];
    return (type_defaults){NULL, 0, 10000.0, 0, false, 0, false, false};
}

/* partial_rotary_factor when the config has none: GlmConfig's, Glm4Config's and Glm4MoeConfig's setdefault 0.5,
 * StableLmConfig's and Qwen3NextConfig's 0.25, PhiConfig's, NemotronConfig's, PersimmonConfig's and
 * RecurrentGemmaConfig's 0.5, GPTNeoXConfig's
 * 0.25 (its rotary_pct, read as the key), else 1 (the whole head). */
static double default_partial_rotary(const kvc_hparams *hp) {
    const char *mt = hp->model_type;
    if (mt != NULL && (strcmp(mt, "stablelm") == 0 || strcmp(mt, "gpt_neox") == 0 || strcmp(mt, "qwen3_next") == 0 ||
                       strncmp(mt, "qwen3_5", 7) == 0))
        return 0.25;
    if (mt != NULL && (strcmp(mt, "phi") == 0 || strcmp(mt, "nemotron") == 0 || strcmp(mt, "persimmon") == 0 ||
                       strcmp(mt, "recurrent_gemma") == 0))
        return 0.5;
    if (mt != NULL && strcmp(mt, "mimo_v2_flash") == 0) return 0.334; /* its rope's .get default */
    return mt != NULL && (strcmp(mt, "glm4") == 0 || strcmp(mt, "glm") == 0 || strcmp(mt, "glm4_moe") == 0) ? 0.5 : 1.0;
}

/* ---- document and identity ---------------------------------------------------- */

kvc_status kvci_hparams_open(const char *text, size_t len, const char *doc, kvc_hparams *hp) {
    if (hp == NULL) return kvci_fail(KVC_EINVAL, "config reader: hp must not be NULL");
    memset(hp, 0, sizeof *hp);
    if (doc == NULL) doc = "config.json";
    char *inf = NULL; /* transformers' configs may hold Python's Infinity */
    KVC_TRY(kvci_json_python_infinity(text, len, &inf));
    const kvc_status parsed = kvci_json_parse_object(inf != NULL ? inf : text, len, doc, &hp->doc);
    kvci_free(inf);
    KVC_TRY(parsed);
    const kvc_json_obj root = {.obj = hp->doc, .doc = doc, .path = ""};
    char path[32];
    bool have_text = false;
    KVC_TRY(kvci_json_child(&root, "text_config", path, sizeof path, &hp->cfg, &have_text));
    hp->cfg = have_text ? (kvc_json_obj){.obj = hp->cfg.obj, .fallback = hp->doc, .doc = doc, .path = ""} : root;

    const cJSON *archs = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(&root, "architectures", 64, &archs, &have));
    if (have) {
        const cJSON *first = cJSON_GetArrayItem(archs, 0);
        if (first == NULL || !cJSON_IsString(first))
            return kvci_fail(KVC_EINVAL, "%s: architectures must be a non-empty array of strings", doc);
        if (strlen(first->valuestring) > KVC_HP_NAME_MAX)
            return kvci_fail(KVC_EINVAL, "%s: architectures[0] is %zu bytes long, at most %d are kept", doc,
                             strlen(first->valuestring), KVC_HP_NAME_MAX);
        hp->architecture = first->valuestring;
    }
    return kvci_json_str(&hp->cfg, "model_type", KVC_HP_NAME_MAX, &hp->model_type, &have);
}

void kvci_hparams_close(kvc_hparams *hp) {
    if (hp == NULL) return;
    cJSON_Delete(hp->doc);
    hp->doc = NULL;
}

/* ---- sizes ----------------------------------------------------------------------- */

/* The names configs give each size (transformers' attribute maps: GPT-2 / GPT-BigCode n_layer, n_head,
 * n_embd, n_positions; BLOOM n_embed; MPT n_layers, n_heads, d_model, max_seq_len; Falcon num_kv_heads, n_head_kv;
 * ChatGLM num_layers, seq_length, kv_channels; XGLM num_layers, attention_heads, d_model), the standard name first. */
const char *const kvci_hp_layers_keys[KVC_HP_ALIASES] = {"num_hidden_layers", "n_layer", "num_layers", "n_layers"};
const char *const kvci_hp_heads_keys[KVC_HP_ALIASES] = {"num_attention_heads", "n_head", "num_heads", "n_heads",
                                                        "attention_heads"};
const char *const kvci_hp_hidden_keys[KVC_HP_ALIASES] = {"hidden_size", "n_embd", "d_model", "n_embed"};
static const char *const KV_HEADS_KEYS[KVC_HP_ALIASES] = {"num_key_value_heads", "num_kv_heads", "n_head_kv", NULL};
static const char *const MAX_POS_KEYS[KVC_HP_ALIASES] = {"max_position_embeddings", "n_positions", "seq_length",
                                                         "max_seq_len"};

const char *kvci_hparams_key(const kvc_json_obj *c, const char *const keys[KVC_HP_ALIASES]) {
    for (int i = 0; i < KVC_HP_ALIASES && keys[i] != NULL; i++)
        if (kvci_json_find(c, keys[i]) != NULL) return keys[i];
    return NULL;
}

kvc_status kvci_hparams_int(const kvc_json_obj *c, const char *const keys[KVC_HP_ALIASES], int64_t lo, int64_t hi,
                            int64_t *out, bool *have) {
    const char *key = kvci_hparams_key(c, keys);
    return kvci_json_int(c, key != NULL ? key : keys[0], lo, hi, out, have);
}

/* KV heads a config states without a count: multi_query (Falcon-7B, GPT-BigCode: one KV head, unless Falcon's
 * new_decoder_architecture reads num_kv_heads), ChatGLM's multi_query_group_num under multi_query_attention,
 * DBRX's attn_config.kv_n_heads. */
static kvc_status kv_heads_by_flag(const kvc_json_obj *c, kvc_hparams *hp) {
    bool mq = false, have_mq = false, mqa = false, have_mqa = false, new_arch = false, have_new = false;
    char path[64];
    kvc_json_obj attn;
    bool have_attn = false;
    KVC_TRY(kvci_json_child(c, "attn_config", path, sizeof path, &attn, &have_attn));
    if (have_attn) {
        KVC_TRY(kvci_json_int(&attn, "kv_n_heads", 1, KVC_HP_MAX_HEADS, &hp->n_kv_heads, &hp->have_kv_heads));
        if (hp->have_kv_heads) return KVC_OK;
    }
    KVC_TRY(kvci_json_bool(c, "multi_query", &mq, &have_mq));
    KVC_TRY(kvci_json_bool(c, "new_decoder_architecture", &new_arch, &have_new));
    if (have_mq && mq && !new_arch) {
        hp->n_kv_heads = 1, hp->have_kv_heads = true;
        return KVC_OK;
    }
    KVC_TRY(kvci_json_bool(c, "multi_query_attention", &mqa, &have_mqa));
    if (have_mqa && mqa) {
        KVC_TRY(kvci_json_int(c, "multi_query_group_num", 1, KVC_HP_MAX_HEADS, &hp->n_kv_heads, &hp->have_kv_heads));
        if (!hp->have_kv_heads)
            return kvci_fail(KVC_EINVAL, "%s: multi_query_attention is true but multi_query_group_num is missing",
                             c->doc);
    }
    return KVC_OK;
}

/* The types whose config class sets num_key_value_heads from flags, whatever that key says: GPT-BigCode's
 * multi_query (true when absent) one KV head, else as many as heads; Falcon's multi_query (true when absent) one
 * unless new_decoder_architecture (false when absent), else num_kv_heads (the heads when absent or null). */
static kvc_status kv_heads_by_class(const kvc_json_obj *c, kvc_hparams *hp) {
    const char *mt = hp->model_type;
    const bool falcon = mt != NULL && strcmp(mt, "falcon") == 0;
    if (!falcon && (mt == NULL || strcmp(mt, "gpt_bigcode") != 0)) return KVC_OK;
    bool mq = true, new_arch = false, have = false;
    KVC_TRY(kvci_json_bool(c, "multi_query", &mq, &have));
    if (!have) mq = true;
    if (falcon) KVC_TRY(kvci_json_bool(c, "new_decoder_architecture", &new_arch, &have));
    hp->n_kv_heads = hp->n_heads, hp->have_kv_heads = true;
    if (mq && !new_arch)
        hp->n_kv_heads = 1;
    else if (falcon)
        KVC_TRY(kvci_json_int(c, "num_kv_heads", 1, KVC_HP_MAX_HEADS, &hp->n_kv_heads, &have));
    return KVC_OK;
}

/* Nemotron-H as transformers 5 saves it: no num_hidden_layers, one layers_block_type entry per layer (or one
 * hybrid_override_pattern character, its hub configs' key). */
static kvc_status nemotron_h_layers(const kvc_json_obj *c, int64_t *n) {
    const cJSON *list = kvci_json_find(c, "layers_block_type");
    const cJSON *pattern = kvci_json_find(c, "hybrid_override_pattern");
    if (cJSON_IsArray(list))
        *n = cJSON_GetArraySize(list);
    else if (cJSON_IsString(pattern))
        *n = (int64_t)strlen(pattern->valuestring);
    else
        return kvci_fail(
            KVC_EINVAL,
            "%s: num_hidden_layers, layers_block_type and hybrid_override_pattern are missing (one of them "
            "counts the layers)",
            c->doc);
    if (*n < 1 || *n > KVC_HP_MAX_LAYERS)
        return kvci_fail(KVC_EINVAL, "%s: layers_block_type / hybrid_override_pattern lists %lld layers (1..%d)",
                         c->doc, (long long)*n, KVC_HP_MAX_LAYERS);
    return KVC_OK;
}

/* LongCat-Flash's attention layers: two in each of num_layers decoder layers (28 when absent; its config's
 * num_hidden_layers is that count doubled, and setting it sets num_layers to half of it). */
static kvc_status longcat_layers(const kvc_json_obj *c, int64_t *n) {
    int64_t layers = 28, hidden = 0;
    bool have = false;
    KVC_TRY(kvci_json_int(c, "num_layers", 1, KVC_HP_MAX_LAYERS / 2, &layers, &have));
    if (!have) KVC_TRY(kvci_json_int(c, "num_hidden_layers", 2, KVC_HP_MAX_LAYERS, &hidden, &have));
    *n = 2 * (hidden > 0 ? hidden / 2 : layers);
    return KVC_OK;
}

/* num_attention_heads (n_head) when config.json has none: the config class's default, transformers 5.25
 * (Gemma2Config's, VaultGemmaConfig's, Gemma3TextConfig's and BloomConfig's 8, NanoChatConfig's 6; a Llama
 * text_config's LlamaConfig 32); 0: the key is required. */
static int64_t heads_default(const char *type) {
    static const struct {
        const char *type;
        int64_t heads;
    } HEADS[] = {{"gemma2", 8}, {"vaultgemma", 8}, {"gemma3_text", 8}, {"gemma3", 8}, {"bloom", 8}, {"nanochat", 6}};
    for (size_t i = 0; i < sizeof HEADS / sizeof HEADS[0]; i++)
        if (strcmp(type, HEADS[i].type) == 0) return HEADS[i].heads;
    return 0;
}

kvc_status kvci_hparams_read_sizes(kvc_hparams *hp) {
    const kvc_json_obj *c = &hp->cfg;
    const bool longcat = hp->model_type != NULL && strcmp(hp->model_type, "longcat_flash") == 0;
    /* a Llama text_config takes LlamaConfig's sizes, as transformers builds it (llava-1.5's gives none of them: 32
     * layers, 32 heads, hidden 4096); a top-level config still names each size */
    const bool llama_text = hp->cfg.fallback != NULL && hp->model_type != NULL && strcmp(hp->model_type, "llama") == 0;
    bool have_layers = longcat;
    if (longcat)
        KVC_TRY(longcat_layers(c, &hp->n_layers));
    else
        KVC_TRY(kvci_hparams_int(c, kvci_hp_layers_keys, 1, KVC_HP_MAX_LAYERS, &hp->n_layers, &have_layers));
    if (!have_layers && hp->model_type != NULL && strcmp(hp->model_type, "nemotron_h") == 0)
        KVC_TRY(nemotron_h_layers(c, &hp->n_layers));
    else if (!have_layers && llama_text)
        hp->n_layers = 32;
    else if (!have_layers)
        KVC_TRY(kvci_hparams_int(c, kvci_hp_layers_keys, 1, KVC_HP_MAX_LAYERS, &hp->n_layers, NULL));
    const char *type = hp->model_type != NULL ? hp->model_type : "";
    const bool mamba1 = strcmp(type, "mamba") == 0 || strcmp(type, "falcon_mamba") == 0 ||
                        strcmp(type, "rwkv") == 0; /* RWKV: no attention either */
    const bool mamba2 = strcmp(type, "mamba2") == 0, jetmoe = strcmp(type, "jetmoe") == 0;
    /* Gemma3TextConfig's 131072 positions: gemma-3-27b-it's text_config gives no length */
    const bool gemma3 = strcmp(type, "gemma3_text") == 0 || strcmp(type, "gemma3") == 0;
    const int64_t class_heads = llama_text ? 32 : heads_default(type); /* gemma-3-4b-it's text_config: none */
    bool have_heads = false; /* optional for Mamba2, Mamba (no attention), JetMoE (derived), a class default */
    hp->n_heads = mamba1 ? 1 : class_heads > 0 ? class_heads : 128; /* Mamba2Config's num_heads: its mixer's */
    KVC_TRY(kvci_hparams_int(c, kvci_hp_heads_keys, 1, KVC_HP_MAX_HEADS, &hp->n_heads,
                             mamba1 || mamba2 || jetmoe || class_heads > 0 ? &have_heads : NULL));
    hp->n_kv_heads = hp->n_heads;
    if (defaults_of(hp).mha_only) { /* its keys unread, as transformers' attention never reads them */
        hp->have_kv_heads = true;
    } else {
        KVC_TRY(kv_heads_by_class(c, hp));
        if (!hp->have_kv_heads)
            KVC_TRY(kvci_hparams_int(c, KV_HEADS_KEYS, 1, KVC_HP_MAX_HEADS, &hp->n_kv_heads, &hp->have_kv_heads));
        if (!hp->have_kv_heads) KVC_TRY(kv_heads_by_flag(c, hp));
    }
    const int64_t class_kv =
        hp->have_kv_heads || !kvci_json_missing(c, KV_HEADS_KEYS[0]) ? 0 : defaults_of(hp).kv_heads;
    if (class_kv > 0) hp->n_kv_heads = class_kv, hp->have_kv_heads = true;
    if (jetmoe) { /* JetMoeConfig: num_attention_heads = num_key_value_heads x num_experts_per_tok, whatever it says */
        int64_t k = 2;
        KVC_TRY(kvci_json_int(c, "num_experts_per_tok", 1, KVC_HP_MAX_EXPERTS, &k, &have_heads));
        hp->n_heads = hp->n_kv_heads * k;
    }
    if (hp->n_heads % hp->n_kv_heads != 0)
        return kvci_fail(KVC_EINVAL, "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld%s%s%s",
                         c->doc, (long long)hp->n_heads, (long long)hp->n_kv_heads,
                         class_kv > 0 ? " (the key is missing: the default of " : "",
                         class_kv > 0 ? hp->model_type : "", class_kv > 0 ? "'s config in transformers)" : "");
    bool have = false;
    hp->hidden_size = 0;
    KVC_TRY(kvci_hparams_int(c, kvci_hp_hidden_keys, 1, KVC_HP_MAX_WIDTH, &hp->hidden_size, &have));
    if (!have && llama_text) hp->hidden_size = 4096;
    KVC_TRY(kvci_hparams_int(c, MAX_POS_KEYS, 1, KVC_HP_MAX_POSITIONS, &hp->max_pos, &hp->have_max_pos));
    if (!hp->have_max_pos && hp->model_type != NULL && strcmp(hp->model_type, "rwkv") == 0) /* its attribute_map */
        KVC_TRY(kvci_json_int(c, "context_length", 1, KVC_HP_MAX_POSITIONS, &hp->max_pos, &hp->have_max_pos));
    if (!hp->have_max_pos && hp->model_type != NULL && strcmp(hp->model_type, "kimi_linear") == 0)
        /* KimiLinearConfig saves max_position_embeddings as model_max_length (its attribute_map) */
        KVC_TRY(kvci_json_int(c, "model_max_length", 1, KVC_HP_MAX_POSITIONS, &hp->max_pos, &hp->have_max_pos));
    /* the position tables' class defaults, their row count: learned (GPT2Config's n_positions, OPTConfig's,
     * GPTNeoConfig's, BioGptConfig's, OpenAIGPTConfig's 512, XGLMConfig's and CTRLConfig's 256 computed ones) or
     * CodeGen's sinusoid table (CodeGenConfig's n_positions), which no position may pass; BLOOM (ALiBi, BloomConfig has
     * no such key): 2048, its training length, as vLLM assumes for a config without one */
    static const char *const TABLE_2048[] = {"opt", "gpt_neo", "codegen", "bloom", "xglm"};
    const char *mt = hp->model_type;
    static const char *const TABLE_1024[] = {"gpt2", "gpt_bigcode", "biogpt"};
    if (!hp->have_max_pos && kvci_name_listed(mt, TABLE_1024, sizeof TABLE_1024 / sizeof TABLE_1024[0]))
        hp->max_pos = 1024, hp->have_max_pos = true;
    if (!hp->have_max_pos && kvci_name_listed(mt, TABLE_2048, sizeof TABLE_2048 / sizeof TABLE_2048[0]))
        hp->max_pos = 2048, hp->have_max_pos = true;
    if (!hp->have_max_pos && kvci_family_is_bert(mt)) /* their tables' rows */
        hp->max_pos = kvci_family_bert_rows(mt), hp->have_max_pos = true;
    int64_t offset = 0; /* RoBERTa's positions from pad_token_id + 1 on: fewer than its table's rows */
    if (kvci_family_is_bert(mt)) KVC_TRY(kvci_family_bert_positions(hp, &hp->max_pos, &offset));
    if (!hp->have_max_pos && jetmoe) hp->max_pos = 4096, hp->have_max_pos = true; /* JetMoeConfig's */
    if (!hp->have_max_pos && gemma3) hp->max_pos = 131072, hp->have_max_pos = true;
    if (!hp->have_max_pos && mt != NULL && strcmp(mt, "zamba") == 0) /* ZambaConfig's */
        hp->max_pos = 4096, hp->have_max_pos = true;
    if (!hp->have_max_pos && mt != NULL && strcmp(mt, "openai-gpt") == 0) /* OpenAIGPTConfig's n_positions */
        hp->max_pos = 512, hp->have_max_pos = true;
    if (!hp->have_max_pos && mt != NULL && strcmp(mt, "ctrl") == 0) /* CTRLConfig's n_positions: its table's rows */
        hp->max_pos = 256, hp->have_max_pos = true;
    return KVC_OK;
}

kvc_status kvci_hparams_head_dim(const kvc_hparams *hp, int64_t *out) {
    const kvc_json_obj *c = &hp->cfg;
    const type_defaults d = defaults_of(hp);
    bool have = false;
    const bool zamba = hp->model_type != NULL && strcmp(hp->model_type, "zamba") == 0;
    if (zamba || (hp->model_type != NULL && strcmp(hp->model_type, "zamba2") == 0)) {
        /* the shared attention's heads split attention_hidden_size = 2 hidden_size: Zamba2Config always derives it,
         * ZambaConfig reads attention_head_dim (head_dim is its alias) first */
        if (zamba) KVC_TRY(kvci_json_int(c, "attention_head_dim", 1, KVC_HP_MAX_DIM, out, &have));
        if (zamba && !have) KVC_TRY(kvci_json_int(c, "head_dim", 1, KVC_HP_MAX_DIM, out, &have));
        if (have) return KVC_OK;
        if (hp->hidden_size == 0 || 2 * hp->hidden_size < hp->n_heads)
            return kvci_fail(KVC_EINVAL,
                             "%s: hidden_size is missing or below num_attention_heads / 2 (head_dim is 2 "
                             "hidden_size / num_attention_heads)",
                             c->doc);
        *out = 2 * hp->hidden_size / hp->n_heads;
        return KVC_OK;
    }
    /* a null head_dim is hidden_size / num_attention_heads where the class derives it so and keeps its own default
     * (128) for an absent key only (transformers 5.25: AFMoE, ERNIE 4.5, Seed-OSS, InternLM3, IQuest-Coder,
     * MiniCPM5-MoE; the other classes with a default refuse null) */
    static const char *const NULL_DERIVES[] = {"afmoe",     "ernie4_5",    "seed_oss",
                                               "internlm3", "iquestcoder", "minicpm5_moe"};
    const bool null_derives =
        kvci_name_listed(hp->model_type, NULL_DERIVES, sizeof NULL_DERIVES / sizeof NULL_DERIVES[0]) &&
        !kvci_json_missing(c, "head_dim") && kvci_json_find(c, "head_dim") == NULL;
    if (!d.head_dim_from_hidden && !null_derives) {
        KVC_TRY(kvci_json_int(c, "head_dim", 1, KVC_HP_MAX_DIM, out, &have));
        if (!have) KVC_TRY(kvci_json_int(c, "kv_channels", 1, KVC_HP_MAX_DIM, out, &have)); /* ChatGLM */
        if (have) return KVC_OK;
    }
    if (d.head_dim > 0 && !null_derives) {
        *out = d.head_dim;
        return KVC_OK;
    }
    const char *how = null_derives ? "null" : "missing";
    if (hp->hidden_size == 0)
        return kvci_fail(KVC_EINVAL, "%s: head_dim is %s and hidden_size is absent to derive it", c->doc, how);
    /* Glm4MoeAttention: hidden_size // num_attention_heads, rounded down (its default 4096 / 96: 42) */
    const bool floors = hp->model_type != NULL && strcmp(hp->model_type, "glm4_moe") == 0;
    if (hp->hidden_size % hp->n_heads != 0 && !floors)
        return kvci_fail(KVC_EINVAL,
                         "%s: head_dim is %s and hidden_size %lld is not a multiple of num_attention_heads %lld",
                         c->doc, how, (long long)hp->hidden_size, (long long)hp->n_heads);
    *out = hp->hidden_size / hp->n_heads;
    return KVC_OK;
}

kvc_status kvci_hparams_window(const kvc_hparams *hp, int64_t *window, bool *qwen_rule) {
    const type_defaults d = defaults_of(hp);
    bool have = false;
    *window = 0;
    *qwen_rule = false;
    /* GPT-Neo's local layers slide over window_size keys (GPTNeoConfig's 256 when absent), no other key read;
     * dots.llm1 reads sliding_window alone, never use_sliding_window */
    const bool neo = hp->model_type != NULL && strcmp(hp->model_type, "gpt_neo") == 0;
    const bool no_switch = neo || (hp->model_type != NULL && strcmp(hp->model_type, "dots1") == 0);
    const char *key = neo ? "window_size" : "sliding_window";
    /* Ergo's released configs name it local_attention_window (ErgoConfig's attribute_map) */
    if (hp->model_type != NULL && strcmp(hp->model_type, "ergo") == 0 &&
        cJSON_GetObjectItemCaseSensitive(hp->cfg.obj, key) == NULL)
        key = "local_attention_window";
    /* RecurrentGemma's is attention_window_size (RecurrentGemmaConfig's attribute_map) */
    if (hp->model_type != NULL && strcmp(hp->model_type, "recurrent_gemma") == 0 &&
        cJSON_GetObjectItemCaseSensitive(hp->cfg.obj, key) == NULL)
        key = "attention_window_size";
    /* only the types whose transformers config reads use_sliding_window (Qwen, SmolLM3): Mistral, Mixtral, Phi-3,
     * StarCoder2 ... slide whatever a leftover use_sliding_window says */
    if (!no_switch && d.window_switch) {
        bool use = false;
        KVC_TRY(kvci_json_bool(&hp->cfg, "use_sliding_window", &use, &have));
        if (!use) return KVC_OK; /* transformers ignores sliding_window then */
        *qwen_rule = true;
    }
    /* the class default applies when the key is absent; an explicit null is no window (Mistral v0.2 on) */
    *window = cJSON_GetObjectItemCaseSensitive(hp->cfg.obj, key) != NULL ? 0 : d.sliding_window;
    KVC_TRY(kvci_json_int(&hp->cfg, key, 1, KVC_HP_MAX_POSITIONS, window, &have));
    if (kvci_family_is_modernbert(hp->model_type)) { /* ModernBertDecoderConfig: local_attention // 2 (128 // 2) */
        *window = 128;
        KVC_TRY(kvci_json_int(&hp->cfg, "local_attention", 2, KVC_HP_MAX_POSITIONS, window, &have));
        if (!have && cJSON_GetObjectItemCaseSensitive(hp->cfg.obj, "local_attention") != NULL) *window = 0; /* null */
        *window /= 2;
    }
    if (hp->model_type != NULL && strcmp(hp->model_type, "mimo_v2_flash") == 0) { /* SGLang's count: + the query */
        int64_t size = 0;
        KVC_TRY(kvci_json_int(&hp->cfg, "sliding_window_size", 0, KVC_HP_MAX_POSITIONS - 1, &size, &have));
        if (have) *window = size + 1;
    }
    if (*qwen_rule && *window == 0)
        return kvci_fail(KVC_EINVAL, "%s: use_sliding_window is true but sliding_window is missing", hp->cfg.doc);
    return KVC_OK;
}

/* ---- rope -------------------------------------------------------------------------- */

static const char *const ROPE_NAMES[] = {"default", "llama3", "yarn", "linear", "dynamic", "longrope", "proportional"};

const char *kvc_rope_type_name(kvc_rope_type t) {
    return (t >= 0 && (size_t)t < sizeof ROPE_NAMES / sizeof ROPE_NAMES[0]) ? ROPE_NAMES[t] : "?";
}

static const kvc_json_range POSITIVE_FACTOR = {0.0, KVC_HP_MAX_FACTOR, true};
static const kvc_json_range MSCALE_RANGE = {0.0, KVC_HP_MAX_FACTOR, false};

/* The dict: a non-empty rope_scaling wins (transformers 5.x reads
 * `rope_scaling or rope_parameters`); absent, null and {} fall through. */
/* Whether the dict holds one rope dict per layer type (transformers 5.x's nested form: every key a layer type, every
 * value an object, or null for a type without RoPE: Ergo's full layers). Every key a layer type with another value is
 * refused by name: transformers reads it nested and fails, and read flat it would leave every layer at the defaults. */
static kvc_status per_layer_type(const kvc_hparams *hp, const kvc_json_obj *dict, bool *nested) {
    /* DeepSeek-V4's keys are its rope labels: "main" (window-only layers), "compress" (the compressed ones) */
    static const char *const types[] = {
        "full_attention", "sliding_attention", "chunked_attention", "linear_attention", "mamba", "attention",
        "main",           "compress"};
    bool any = false;
    *nested = false;
    /* CohereCompassTextConfig drops a rope_theta / rope_type beside entries named by layer type (the hub's configs) */
    const bool dangling = kvci_family_is_cohere_compass(hp->model_type) &&
                          (kvci_json_find(dict, "full_attention") || kvci_json_find(dict, "sliding_attention"));
    for (const cJSON *c = dict->obj->child; c != NULL; c = c->next) {
        if (dangling && (strcmp(c->string, "rope_theta") == 0 || strcmp(c->string, "rope_type") == 0)) continue;
        bool known = false;
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) known |= strcmp(c->string, types[i]) == 0;
        if (!known) return KVC_OK;
        any |= cJSON_IsObject(c);
    }
    for (const cJSON *c = dict->obj->child; c != NULL; c = c->next)
        if (!cJSON_IsObject(c) && !cJSON_IsNull(c) &&
            !(dangling && (strcmp(c->string, "rope_theta") == 0 || strcmp(c->string, "rope_type") == 0)))
            return kvci_fail(KVC_EINVAL, "%s: %s.%s must be an object or null (a rope dict per layer type), got %s",
                             dict->doc, dict->path, c->string, kvci_json_type_name(c));
    *nested = any;
    return KVC_OK;
}

/* The dict into *dict (and, nested per layer type, its sliding_attention entry into *sliding with
 * *have_sliding); hp->rope_source NULL when there is none. */
static kvc_status rope_dict(kvc_hparams *hp, char *path, size_t cap, kvc_json_obj *dict, char *spath,
                            kvc_json_obj *sliding, bool *have_sliding) {
    bool have = false;
    hp->rope_source = NULL;
    *have_sliding = false;
    /* Cohere2MoeConfig declares rope_scaling as a field of its own and never folds it into rope_parameters: its
     * model reads rope_parameters alone (transformers 5.25), so a rope_scaling there changes nothing */
    const bool scaling_unread = hp->model_type != NULL && strcmp(hp->model_type, "cohere2_moe") == 0;
    if (!scaling_unread) KVC_TRY(kvci_json_child(&hp->cfg, "rope_scaling", path, cap, dict, &have));
    if (have && dict->obj->child != NULL) {
        hp->rope_source = "rope_scaling";
    } else {
        KVC_TRY(kvci_json_child(&hp->cfg, "rope_parameters", path, cap, dict, &have));
        if (have) hp->rope_source = "rope_parameters";
    }
    bool nested = false;
    if (hp->rope_source != NULL) KVC_TRY(per_layer_type(hp, dict, &nested));
    if (!nested) return KVC_OK;
    /* nested: the full-attention layers' dict stands for the model (the first one without them) */
    const cJSON *first = dict->obj->child;
    while (!cJSON_IsObject(first)) first = first->next; /* per_layer_type: one is */
    const char *name = first->string;
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(dict->obj, "compress"))) name = "compress";
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(dict->obj, "full_attention"))) name = "full_attention";
    hp->rope_entry = name;
    hp->rope_per_layer_type = true;
    char outer_path[64];
    snprintf(outer_path, sizeof outer_path, "%s", path);
    const kvc_json_obj parent = {.obj = dict->obj, .doc = dict->doc, .path = outer_path};
    KVC_TRY(kvci_json_child(&parent, "sliding_attention", spath, cap, sliding, have_sliding));
    return kvci_json_child(&parent, name, path, cap, dict, &have);
}

static kvc_status rope_type_of(const kvc_hparams *hp, const kvc_json_obj *dict, kvc_rope_type *out) {
    const char *name = "default";
    bool have = false;
    KVC_TRY(kvci_json_str(dict, "rope_type", KVC_HP_NAME_MAX, &name, &have));
    if (!have) KVC_TRY(kvci_json_str(dict, "type", KVC_HP_NAME_MAX, &name, &have));
    /* Qwen2-VL's multimodal rope: the default frequencies over 3-D positions (transformers renames it default);
     * for text alone the three position parts are the token's position */
    if (strcmp(name, "mrope") == 0) name = "default";
    if (strcmp(name, "su") == 0) name = "longrope"; /* the first Phi-3 128k configs' name (transformers renames it) */
    /* Sarvam's remote-code name for YaRN in rope_scaling, which SarvamMLAConfig alone renames */
    if (strcmp(name, "deepseek_yarn") == 0 && hp->model_type != NULL && strcmp(hp->model_type, "sarvam_mla") == 0 &&
        hp->rope_source != NULL && strcmp(hp->rope_source, "rope_scaling") == 0)
        name = "yarn";
    for (size_t i = 0; i < sizeof ROPE_NAMES / sizeof ROPE_NAMES[0]; i++)
        if (strcmp(name, ROPE_NAMES[i]) == 0) {
            *out = (kvc_rope_type)i;
            return KVC_OK;
        }
    return kvci_fail(KVC_EINVAL,
                     "%s: %s.rope_type \"%s\" is not a known rope type (default, linear, dynamic, yarn, longrope, "
                     "llama3, proportional)",
                     dict->doc, dict->path, name);
}

/* L0 of llama3 / yarn / longrope: the top-level key wins (Phi-3 keeps it
 * there), else the dict's, else max_position_embeddings. */
static kvc_status original_max_position(const kvc_hparams *hp, const kvc_json_obj *dict, int64_t *out) {
    bool have = false;
    KVC_TRY(kvci_json_int(&hp->cfg, "original_max_position_embeddings", 1, KVC_HP_MAX_POSITIONS, out, &have));
    if (!have) KVC_TRY(kvci_json_int(dict, "original_max_position_embeddings", 1, KVC_HP_MAX_POSITIONS, out, &have));
    if (have) return KVC_OK;
    if (!hp->have_max_pos)
        return kvci_fail(KVC_EINVAL, "%s: %s needs original_max_position_embeddings (or max_position_embeddings)",
                         dict->doc, dict->path);
    *out = hp->max_pos;
    return KVC_OK;
}

static kvc_status read_yarn(const kvc_json_obj *dict, kvc_rope_config *r) {
    bool have = false;
    double beta_fast = 0.0, beta_slow = 0.0;
    const kvc_json_range beta = {-KVC_HP_MAX_FACTOR, KVC_HP_MAX_FACTOR, false};
    KVC_TRY(kvci_json_num(dict, "beta_fast", beta, &beta_fast, &have));
    KVC_TRY(kvci_json_num(dict, "beta_slow", beta, &beta_slow, &have));
    r->beta_fast = beta_fast != 0.0 ? beta_fast : 32.0; /* transformers: `or 32` */
    r->beta_slow = beta_slow != 0.0 ? beta_slow : 1.0;
    if (!(r->beta_fast > 0.0 && r->beta_slow > 0.0))
        return kvci_fail(KVC_EINVAL, "%s: %s.beta_fast %g and beta_slow %g must be positive", dict->doc, dict->path,
                         r->beta_fast, r->beta_slow);
    KVC_TRY(kvci_json_bool(dict, "truncate", &r->truncate, &have));
    /* 0 (absent): kvc_rope_attention_factor derives A from factor and the mscales */
    return kvci_json_num(dict, "attention_factor", POSITIVE_FACTOR, &r->attention_factor, &have);
}

/* A longrope factor list `key` (absent: *n 0; the runtime's kvc_rope_frequencies wants rot_dim / 2 entries): at
 * most KVC_ROPE_MAX_FACTORS finite positive numbers. */
static kvc_status read_factors(const kvc_json_obj *dict, const char *key, float *out, int32_t *n) {
    const cJSON *list = NULL;
    bool have = false;
    *n = 0;
    KVC_TRY(kvci_json_array(dict, key, KVC_ROPE_MAX_FACTORS, &list, &have));
    for (int i = 0; have && i < cJSON_GetArraySize(list); i++) {
        const cJSON *v = cJSON_GetArrayItem(list, i);
        if (!cJSON_IsNumber(v))
            return kvci_fail(KVC_EINVAL, "%s: %s.%s[%d] must be a number, got %s", dict->doc, dict->path, key, i,
                             kvci_json_type_name(v));
        if (!(v->valuedouble > 0.0) || !(v->valuedouble <= KVC_HP_MAX_FACTOR))
            return kvci_fail(KVC_EINVAL, "%s: %s.%s[%d] %g outside (0, %g]", dict->doc, dict->path, key, i,
                             v->valuedouble, KVC_HP_MAX_FACTOR);
        out[i] = (float)v->valuedouble; /* transformers: torch.tensor(factors, dtype=float32) */
        *n = i + 1;
    }
    return KVC_OK;
}

/* longrope (Phi-3.5, Phi-4-mini): without a factor in the dict transformers takes max_position_embeddings over
 * the original length (a top-level original_max_position_embeddings first: Phi-3 keeps it there); an explicit
 * attention_factor wins over the one derived from the factor (kvc_rope_attention_factor); the short and long
 * factor lists. */
static kvc_status read_longrope(const kvc_hparams *hp, const kvc_json_obj *dict, kvc_rope_config *r) {
    bool have = false;
    if (kvci_json_find(dict, "factor") == NULL && hp->have_max_pos)
        r->factor = (double)hp->max_pos / (double)r->original_max_position;
    KVC_TRY(kvci_json_num(dict, "attention_factor", POSITIVE_FACTOR, &r->attention_factor, &have));
    KVC_TRY(read_factors(dict, "short_factor", r->short_factor, &r->n_short_factors));
    return read_factors(dict, "long_factor", r->long_factor, &r->n_long_factors);
}

/* Whether a model type kvcache runs rotates only part of each head by partial_rotary_factor (its transformers
 * attention reads the factor: GLM, GLM-4, GLM-4.5 (and Sarvam-MoE, Param2-MoE), Phi, Phi-3, StableLM, GPT-NeoX,
 * Nemotron, MiniMax-M2, Persimmon, Qwen3-Next, GPT-NeoX Japanese, RecurrentGemma); the others rotate whole heads
 * whatever the config says. Types planned only, and unknown ones, keep the factor. */
static bool rotates_part(const kvc_hparams *hp) {
    static const char *const PARTIAL_TYPES[] = {"glm",
                                                "glm4",
                                                "glm4_moe",
                                                "phi",
                                                "phi3",
                                                "stablelm",
                                                "gpt_neox",
                                                "nemotron",
                                                "minimax_m2",
                                                "persimmon",
                                                "qwen3_next",
                                                "qwen3_5_text",
                                                "qwen3_5",
                                                "qwen3_5_moe_text",
                                                "qwen3_5_moe",
                                                "sarvam_moe",
                                                "param2moe",
                                                "mimo_v2_flash",
                                                "laguna",
                                                "gpt_neox_japanese",
                                                "phi4_multimodal",
                                                "recurrent_gemma"};
    return !kvci_family_type_runs(hp->model_type) ||
           kvci_name_listed(hp->model_type, PARTIAL_TYPES, sizeof PARTIAL_TYPES / sizeof PARTIAL_TYPES[0]);
}

/* A partial_rotary_factor of a type that rotates whole heads: transformers' default rope ignores it (so does
 * kvcache); its scaled ropes would size their frequencies by it for a whole-head rotation, which no model has
 * (types with learned positions read no rope at all: GPT-2, OPT, GPT-BigCode, GPT-Neo, BioGPT). */
static kvc_status whole_head_rope(const kvc_hparams *hp, kvc_rope_config *r) {
    static const char *const NO_ROPE_TYPES[] = {"gpt2",   "opt",  "gpt_bigcode", "gpt_neo",
                                                "biogpt", "xglm", "openai-gpt",  "ctrl"}; /* tables */
    if (r->partial_rotary_factor == 1.0 || rotates_part(hp)) return KVC_OK;
    if (hp->model_type != NULL && strcmp(hp->model_type, "glm4_moe_lite") == 0) /* its rope reads the factor */
        return kvci_fail(
            KVC_EINVAL,
            "%s: partial_rotary_factor %g: glm4_moe_lite rotates all of qk_rope_head_dim, and transformers "
            "would size its frequencies for part of it (its forward fails)",
            hp->cfg.doc, r->partial_rotary_factor);
    if (hp->model_type != NULL && strcmp(hp->model_type, "mellum") == 0) /* so does Mellum's */
        return kvci_fail(KVC_EINVAL,
                         "%s: partial_rotary_factor %g: mellum rotates whole heads, and transformers would size its "
                         "frequencies for part of each (its forward fails)",
                         hp->cfg.doc, r->partial_rotary_factor);
    const bool no_rope =
        kvci_name_listed(hp->model_type, NO_ROPE_TYPES, sizeof NO_ROPE_TYPES / sizeof NO_ROPE_TYPES[0]) ||
        kvci_family_is_bert(hp->model_type);
    if (r->type != KVC_ROPE_DEFAULT && !no_rope)
        return kvci_fail(KVC_EINVAL,
                         "%s: partial_rotary_factor %g with rope type %s: %s rotates whole heads, and transformers "
                         "would size the scaled rope's frequencies for part of each",
                         hp->cfg.doc, r->partial_rotary_factor, kvc_rope_type_name(r->type), hp->model_type);
    r->partial_rotary_factor = 1.0;
    return KVC_OK;
}

/* GPT-J's and CodeGen's rope, which no rope key sets: theta 1e4 (its sinusoid table's) on the first rotary_dim channels
 * of each head (64 when absent; null: the whole head), a factor whose truncated product with head_dim is rotary_dim. */
static kvc_status gptj_rope(const kvc_hparams *hp, kvc_rope_config *r) {
    int64_t hd = 0, rd = 64;
    bool have = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &hd));
    if (!kvci_json_missing(&hp->cfg, "rotary_dim")) {
        KVC_TRY(kvci_json_int(&hp->cfg, "rotary_dim", 1, KVC_HP_MAX_DIM, &rd, &have));
        if (!have) rd = hd;
    }
    r->theta = 10000.0, r->partial_rotary_factor = rd >= hd ? 1.0 : (double)rd / (double)hd;
    if ((int64_t)((double)hd * r->partial_rotary_factor) < rd)
        r->partial_rotary_factor = nextafter(r->partial_rotary_factor, 1.0);
    return KVC_OK;
}

/* HunYuan's (dense and MoE) "dynamic" rope with an alpha (transformers 5.25's ntk_alpha: fixed frequencies, not the
 * dynamic NTK rope that follows the sequence length): the default rope at theta * alpha^(head_dim / (head_dim - 2)), in
 * double as Python computes it; without an alpha (or 0) the type stays dynamic, which the runtime refuses. */
static kvc_status ntk_alpha_rope(const kvc_hparams *hp, const kvc_json_obj *dict, kvc_rope_config *r) {
    const kvc_json_range nonneg = {0.0, KVC_HP_MAX_FACTOR, false};
    double alpha = 0.0;
    int64_t hd = 0;
    bool have = false;
    KVC_TRY(kvci_json_num(dict, "alpha", nonneg, &alpha, &have));
    if (!have || alpha == 0.0) return KVC_OK;
    KVC_TRY(kvci_hparams_head_dim(hp, &hd));
    if (hd <= 2)
        return kvci_fail(KVC_EINVAL, "%s: %s.alpha needs head_dim above 2 (got %lld)", dict->doc, dict->path,
                         (long long)hd);
    r->theta *= pow(alpha, (double)hd / (double)(hd - 2));
    if (!(r->theta <= KVC_HP_MAX_THETA))
        return kvci_fail(KVC_EINVAL, "%s: %s.alpha %g gives rope theta %g, above %g", dict->doc, dict->path, alpha,
                         r->theta, KVC_HP_MAX_THETA);
    r->type = KVC_ROPE_DEFAULT;
    return KVC_OK;
}

/* MiniMax-M2's released checkpoints state the rotary width as rotary_dim: partial_rotary_factor rotary_dim / head_dim
 * when the top level has no partial_rotary_factor (MiniMaxM2Config's setdefault; a rope dict's still wins). */
static kvc_status minimax_rotary_dim(const kvc_hparams *hp, kvc_rope_config *r) {
    int64_t hd = 0, rd = 0;
    bool have = false;
    KVC_TRY(kvci_json_int(&hp->cfg, "rotary_dim", 1, KVC_HP_MAX_DIM, &rd, &have));
    if (!have) return KVC_OK;
    KVC_TRY(kvci_hparams_head_dim(hp, &hd));
    if (rd > hd)
        return kvci_fail(KVC_EINVAL, "%s: rotary_dim %lld above head_dim %lld", hp->cfg.doc, (long long)rd,
                         (long long)hd);
    r->partial_rotary_factor = (double)rd / (double)hd;
    return KVC_OK;
}

/* One rope dict (dict NULL: none) over the defaults and the top-level rope_theta into *r. */
static kvc_status read_rope_entry(const kvc_hparams *hp, const kvc_json_obj *dict, kvc_rope_config *r) {
    *r = (kvc_rope_config){.type = KVC_ROPE_DEFAULT,
                           .factor = 1.0,
                           .beta_fast = 32.0,
                           .beta_slow = 1.0,
                           .attention_factor = 0.0,
                           .truncate = true};
    const kvc_json_range theta_range = {1.0, KVC_HP_MAX_THETA, true}, share = {0.0, 1.0, true};
    bool have = false;
    r->theta = defaults_of(hp).rope_theta;
    /* the dict's, else the top-level key (transformers' setdefault), else the class's */
    r->partial_rotary_factor = default_partial_rotary(hp);
    KVC_TRY(kvci_json_num(&hp->cfg, "rope_theta", theta_range, &r->theta, &have));
    KVC_TRY(kvci_json_num(&hp->cfg, "partial_rotary_factor", share, &r->partial_rotary_factor, &have));
    if (hp->model_type != NULL && strcmp(hp->model_type, "minimax_m2") == 0 && !have) /* its checkpoints' rotary_dim */
        KVC_TRY(minimax_rotary_dim(hp, r));
    if (hp->model_type != NULL && (strcmp(hp->model_type, "gpt_neox") == 0 ||
                                   strcmp(hp->model_type, "gpt_neox_japanese") == 0)) { /* their classes' names */
        KVC_TRY(kvci_json_num(&hp->cfg, "rotary_emb_base", theta_range, &r->theta, &have));
        KVC_TRY(kvci_json_num(&hp->cfg, "rotary_pct", share, &r->partial_rotary_factor, &have));
    }
    if (hp->model_type != NULL && (strcmp(hp->model_type, "gptj") == 0 || strcmp(hp->model_type, "codegen") == 0))
        return gptj_rope(hp, r);
    if (dict == NULL) return whole_head_rope(hp, r);
    KVC_TRY(kvci_json_num(dict, "rope_theta", theta_range, &r->theta, &have));
    KVC_TRY(kvci_json_num(dict, "partial_rotary_factor", share, &r->partial_rotary_factor, &have));
    KVC_TRY(rope_type_of(hp, dict, &r->type));
    if (r->type == KVC_ROPE_DYNAMIC && hp->model_type != NULL && strncmp(hp->model_type, "hunyuan_v1_", 11) == 0)
        KVC_TRY(ntk_alpha_rope(hp, dict, r));
    if (r->type == KVC_ROPE_PROPORTIONAL) /* the share picks the head's turning angles (kvc_rope_frequencies) */
        return kvci_json_num(dict, "factor", POSITIVE_FACTOR, &r->factor, &have);
    KVC_TRY(whole_head_rope(hp, r));
    if (r->type == KVC_ROPE_DEFAULT) return KVC_OK;
    /* factor is required by every scaled type but longrope and proportional, where it is optional */
    const bool factor_optional = r->type == KVC_ROPE_LONGROPE || r->type == KVC_ROPE_PROPORTIONAL;
    KVC_TRY(kvci_json_num(dict, "factor", POSITIVE_FACTOR, &r->factor, factor_optional ? &have : NULL));
    KVC_TRY(kvci_json_num(dict, "mscale", MSCALE_RANGE, &r->mscale, &have));
    KVC_TRY(kvci_json_num(dict, "mscale_all_dim", MSCALE_RANGE, &r->mscale_all_dim, &have));
    if (r->type == KVC_ROPE_LLAMA3 || r->type == KVC_ROPE_YARN || r->type == KVC_ROPE_LONGROPE)
        KVC_TRY(original_max_position(hp, dict, &r->original_max_position));
    if (r->type == KVC_ROPE_LLAMA3) {
        KVC_TRY(kvci_json_num(dict, "low_freq_factor", POSITIVE_FACTOR, &r->low_freq_factor, NULL));
        KVC_TRY(kvci_json_num(dict, "high_freq_factor", POSITIVE_FACTOR, &r->high_freq_factor, NULL));
        /* equal factors (Llama 4 Scout's 1 and 1) leave no blended band: transformers only warns */
        if (!(r->high_freq_factor >= r->low_freq_factor))
            return kvci_fail(KVC_EINVAL, "%s: %s.high_freq_factor %g must not be below low_freq_factor %g", dict->doc,
                             dict->path, r->high_freq_factor, r->low_freq_factor);
    }
    if (r->type == KVC_ROPE_YARN) KVC_TRY(read_yarn(dict, r));
    if (r->type == KVC_ROPE_LONGROPE) KVC_TRY(read_longrope(hp, dict, r));
    return KVC_OK;
}

/* Gemma 4 without a rope dict: Gemma4TextConfig's own per layer type, proportional at theta 1e6 on a quarter of
 * each full layer's head, the default rope at theta 1e4 on the sliding ones. */
static bool gemma4_default_rope(kvc_hparams *hp) {
    static const char *const TYPES[] = {"gemma4_text", "gemma4", "gemma4_unified_text", "gemma4_unified"};
    if (hp->rope_source != NULL || !kvci_name_listed(hp->model_type, TYPES, 4)) return false;
    const kvc_rope_config base = {.factor = 1.0, .beta_fast = 32.0, .beta_slow = 1.0, .truncate = true};
    hp->rope = base, hp->rope_sliding = base;
    hp->rope.type = KVC_ROPE_PROPORTIONAL, hp->rope.theta = 1e6, hp->rope.partial_rotary_factor = 0.25;
    hp->rope_sliding.type = KVC_ROPE_DEFAULT, hp->rope_sliding.theta = 1e4,
    hp->rope_sliding.partial_rotary_factor = 1.0;
    hp->rope_per_layer_type = hp->rope_sliding_given = true;
    hp->rope_entry = "full_attention";
    return true;
}

/* Lfm3Config's ropes when config.json has none: the full layers' proportional (theta 1e6, half the angles), the
 * sliding layers' default (theta 1e4). */
static void lfm3_ropes(kvc_hparams *hp) {
    const kvc_rope_config base = {.factor = 1.0, .beta_fast = 32.0, .beta_slow = 1.0, .truncate = true};
    hp->rope = base, hp->rope_sliding = base;
    hp->rope.type = KVC_ROPE_PROPORTIONAL, hp->rope.theta = 1000000.0, hp->rope.partial_rotary_factor = 0.5;
    hp->rope_sliding.type = KVC_ROPE_DEFAULT, hp->rope_sliding.theta = 10000.0;
    hp->rope_sliding.partial_rotary_factor = 1.0;
    hp->rope_sliding_given = true;
}

/* OlmoHybridModel builds no rotary embedding when its rope dict's rope_theta is None: the dict's null, else (the dict
 * without one) the top level's null; a dict per layer type has none at its top. */
static bool olmo_hybrid_nope(const kvc_hparams *hp, const kvc_json_obj *dict) {
    if (hp->model_type == NULL || strcmp(hp->model_type, "olmo_hybrid") != 0) return false;
    if (hp->rope_per_layer_type) return true;
    const cJSON *in_dict = dict != NULL ? cJSON_GetObjectItemCaseSensitive(dict->obj, "rope_theta") : NULL;
    const cJSON *theta = in_dict != NULL ? in_dict : cJSON_GetObjectItemCaseSensitive(hp->cfg.obj, "rope_theta");
    return theta != NULL && cJSON_IsNull(theta);
}

/* MiMoV2FlashConfig's ropes when config.json has none (its top-level rope_theta not read): the default rope at theta
 * 5e6 on the full layers and 1e4 on the sliding ones, both over 0.334 of each head. */
static void mimo_ropes(kvc_hparams *hp) {
    const kvc_rope_config base = {
        .factor = 1.0, .beta_fast = 32.0, .beta_slow = 1.0, .truncate = true, .partial_rotary_factor = 0.334};
    hp->rope = base, hp->rope_sliding = base;
    hp->rope.theta = 5000000.0, hp->rope_sliding.theta = 10000.0;
    hp->rope_per_layer_type = hp->rope_sliding_given = true;
    hp->rope_entry = "full_attention";
}

/* LagunaConfig's ropes when config.json has none: theta 5e5 over half of each full layer's head, 1e4 over all of
 * each sliding one's. */
static void laguna_ropes(kvc_hparams *hp) {
    const kvc_rope_config base = {
        .factor = 1.0, .beta_fast = 32.0, .beta_slow = 1.0, .truncate = true, .partial_rotary_factor = 1.0};
    hp->rope = base, hp->rope_sliding = base;
    hp->rope.theta = 500000.0, hp->rope.partial_rotary_factor = 0.5, hp->rope_sliding.theta = 10000.0;
    hp->rope_per_layer_type = hp->rope_sliding_given = true;
    hp->rope_entry = "full_attention";
}

/* ModernBertDecoderConfig's ropes: without rope_parameters the default rope at global_rope_theta (160000) on the full
 * layers and local_rope_theta (10000) on the sliding ones; with it, one dict per layer type, both present (a flat one,
 * or one without an entry, is refused: the class fills the missing one in a way this reader does not follow). */
static kvc_status modernbert_ropes(kvc_hparams *hp, const kvc_json_obj *dict, const kvc_json_obj *sliding,
                                   bool have_sliding) {
    const kvc_json_range theta = {0.0, 1e12, true};
    if (hp->rope_source != NULL) {
        if (!hp->rope_per_layer_type || !have_sliding || strcmp(hp->rope_entry, "full_attention") != 0)
            return kvci_fail(KVC_EINVAL,
                             "%s: modernbert-decoder with %s not holding a full_attention and a sliding_attention "
                             "dict is not supported",
                             hp->cfg.doc, hp->rope_source);
        KVC_TRY(read_rope_entry(hp, dict, &hp->rope));
        hp->rope_sliding_given = true;
        return read_rope_entry(hp, sliding, &hp->rope_sliding);
    }
    const kvc_rope_config base = {
        .factor = 1.0, .beta_fast = 32.0, .beta_slow = 1.0, .truncate = true, .partial_rotary_factor = 1.0};
    hp->rope = base, hp->rope_sliding = base;
    hp->rope.theta = 160000.0, hp->rope_sliding.theta = 10000.0;
    bool have = false;
    KVC_TRY(kvci_json_num(&hp->cfg, "global_rope_theta", theta, &hp->rope.theta, &have));
    KVC_TRY(kvci_json_num(&hp->cfg, "local_rope_theta", theta, &hp->rope_sliding.theta, &have));
    hp->rope_per_layer_type = hp->rope_sliding_given = true;
    hp->rope_entry = "full_attention";
    return KVC_OK;
}

kvc_status kvci_hparams_read_rope(kvc_hparams *hp) {
    kvc_json_obj dict = {0}, sliding = {0};
    char dict_path[64], sliding_path[64];
    bool have_sliding = false;
    KVC_TRY(rope_dict(hp, dict_path, sizeof dict_path, &dict, sliding_path, &sliding, &have_sliding));
    hp->rope_none = olmo_hybrid_nope(hp, hp->rope_source != NULL ? &dict : NULL);
    if (hp->rope_none) { /* the rest of the dict unread, as transformers leaves it */
        KVC_TRY(read_rope_entry(hp, NULL, &hp->rope));
        hp->rope_sliding = hp->rope;
        return KVC_OK;
    }
    if (gemma4_default_rope(hp)) return KVC_OK;
    if (hp->rope_source == NULL && hp->model_type != NULL && strcmp(hp->model_type, "lfm3") == 0) {
        lfm3_ropes(hp);
        return KVC_OK;
    }
    if (hp->rope_source == NULL && hp->model_type != NULL && strcmp(hp->model_type, "laguna") == 0) {
        laguna_ropes(hp);
        return KVC_OK;
    }
    if (hp->rope_source == NULL && hp->model_type != NULL && strcmp(hp->model_type, "mellum") == 0) {
        laguna_ropes(hp); /* MellumConfig's: Laguna's thetas, whole heads */
        hp->rope.partial_rotary_factor = 1.0;
        return KVC_OK;
    }
    if (kvci_family_is_modernbert(hp->model_type)) return modernbert_ropes(hp, &dict, &sliding, have_sliding);
    if (hp->rope_source == NULL && hp->model_type != NULL && strcmp(hp->model_type, "mimo_v2_flash") == 0) {
        mimo_ropes(hp);
        return KVC_OK;
    }
    KVC_TRY(read_rope_entry(hp, hp->rope_source != NULL ? &dict : NULL, &hp->rope));
    if (hp->rope_source == NULL && hp->model_type != NULL && strcmp(hp->model_type, "gpt_oss") == 0) {
        /* GptOssConfig's rope_parameters when neither dict is given (or both are null): YaRN of factor 32 over 4096
         * positions, betas 32 and 1, not truncated, at the file's rope_theta (else 150000) */
        hp->rope.type = KVC_ROPE_YARN, hp->rope.factor = 32.0, hp->rope.original_max_position = 4096;
        hp->rope.beta_fast = 32.0, hp->rope.beta_slow = 1.0, hp->rope.truncate = false;
    }
    /* DeepSeek-V4's compressed layers take YaRN without its attention factor (DeepseekV4Config sets 1 when unset) */
    if (hp->model_type != NULL && strcmp(hp->model_type, "deepseek_v4") == 0 && hp->rope.type == KVC_ROPE_YARN &&
        hp->rope.attention_factor == 0.0)
        hp->rope.attention_factor = 1.0;
    hp->rope_sliding_given = have_sliding;
    if (!have_sliding) {
        hp->rope_sliding = hp->rope;
        return KVC_OK;
    }
    return read_rope_entry(hp, &sliding, &hp->rope_sliding);
}

/* ---- MLA ------------------------------------------------------------------------------ */

/* The MLA sizes of the config classes that give them defaults (the others require them): kv_lora_rank,
 * qk_rope_head_dim, qk_nope_head_dim, v_head_dim (0: hidden_size / heads, MiniCPM3's), and q_lora_rank when the key
 * is missing (0: none, a plain q_proj). DeepSeek-V2 / V3 have no entry: their sizes are required, q LoRA 1536. */
typedef struct {
    const char *type;
    int64_t kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim, q_lora_rank;
} mla_defaults;
static const mla_defaults MLA_DEFAULTS[] = {
    {"minicpm3", 256, 32, 64, 0, 768},          /* MiniCPM3Config */
    {"sarvam_mla", 512, 64, 128, 128, 0},       /* SarvamMLAConfig: q_lora_rank None */
    {"axk1", 512, 64, 128, 128, 1536},          /* AXK1Config */
    {"glm_moe_dsa", 512, 64, 192, 256, 2048},   /* GlmMoeDsaConfig */
    {"deepseek_v32", 512, 64, 128, 128, 1536},  /* DeepseekV32Config */
    {"axk2", 128, 32, 64, 64, 384},             /* AXK2Config */
    {"longcat_flash", 512, 64, 128, 128, 1536}, /* LongcatFlashConfig */
    {"bailing_hybrid", 512, 64, 128, 128, 0},   /* BailingHybridConfig: q_lora_rank None */
    {"kimi_linear", 512, 64, 128, 128, 0},      /* KimiLinearConfig: q_lora_rank None */
    {"hy_v4", 512, 64, 192, 256, 1536},         /* HYV4Config */
};

static const mla_defaults *mla_defaults_of(const char *model_type) {
    for (size_t i = 0; model_type != NULL && i < sizeof MLA_DEFAULTS / sizeof MLA_DEFAULTS[0]; i++)
        if (strcmp(model_type, MLA_DEFAULTS[i].type) == 0) return &MLA_DEFAULTS[i];
    return NULL;
}

kvc_status kvci_hparams_read_mla(const kvc_hparams *hp, kvc_mla_dims *out) {
    const kvc_json_obj *c = &hp->cfg;
    kvc_mla_dims d = {0};
    bool have = false;
    /* transformers' MLA expands keys per query head */
    const bool hy_v4 = hp->model_type != NULL && strcmp(hp->model_type, "hy_v4") == 0; /* HYV4Config overrides it */
    if (hp->have_kv_heads && hp->n_kv_heads != hp->n_heads && !hy_v4)
        return kvci_fail(KVC_EINVAL,
                         "%s: num_key_value_heads %lld contradicts num_attention_heads %lld (MLA expands keys per "
                         "query head, the two must be equal)",
                         c->doc, (long long)hp->n_kv_heads, (long long)hp->n_heads);
    const mla_defaults *def = mla_defaults_of(hp->model_type);
    bool *opt = def != NULL ? &have : NULL;
    if (def != NULL) {
        d = (kvc_mla_dims){.kv_lora_rank = def->kv_lora_rank,
                           .qk_rope_head_dim = def->qk_rope_head_dim,
                           .qk_nope_head_dim = def->qk_nope_head_dim,
                           .v_head_dim = def->v_head_dim};
        if (d.v_head_dim == 0) { /* hidden_size / heads, also when null */
            if (hp->hidden_size < 1 || hp->hidden_size % hp->n_heads != 0)
                return kvci_fail(KVC_EINVAL, "%s: %s needs hidden_size divisible by num_attention_heads", c->doc,
                                 def->type);
            d.v_head_dim = hp->hidden_size / hp->n_heads;
        }
    }
    KVC_TRY(kvci_json_int(c, "kv_lora_rank", 1, KVC_HP_MAX_DIM, &d.kv_lora_rank, opt));
    KVC_TRY(kvci_json_int(c, "qk_rope_head_dim", 2, KVC_HP_MAX_DIM, &d.qk_rope_head_dim, opt));
    KVC_TRY(kvci_json_int(c, "qk_nope_head_dim", 1, KVC_HP_MAX_DIM, &d.qk_nope_head_dim, opt));
    KVC_TRY(kvci_json_int(c, "v_head_dim", 1, KVC_HP_MAX_DIM, &d.v_head_dim, opt));
    /* missing: the class's (DeepseekV2Config's and DeepseekV3Config's 1536); null: none, a plain q_proj (the
     * reader's getters take null for absent, so the key's presence is looked up first) */
    d.q_lora_rank = kvci_json_missing(c, "q_lora_rank") ? (def != NULL ? def->q_lora_rank : 1536) : 0;
    KVC_TRY(kvci_json_int(c, "q_lora_rank", 0, KVC_HP_MAX_DIM, &d.q_lora_rank, &have));
    if (have && d.q_lora_rank == 0) /* transformers would build a zero-width query projection */
        return kvci_fail(KVC_EINVAL, "%s: q_lora_rank 0 must be null (a plain q_proj) or in [1, %d]", c->doc,
                         KVC_HP_MAX_DIM);
    if (d.qk_rope_head_dim % 2 != 0)
        return kvci_fail(KVC_EINVAL, "%s: qk_rope_head_dim %lld must be even (rotary pairs)", c->doc,
                         (long long)d.qk_rope_head_dim);
    *out = d;
    return KVC_OK;
}

double kvci_mla_softmax_scale(const kvc_rope_config *rope, int64_t qk_nope_head_dim, int64_t qk_rope_head_dim) {
    const double mscale_all_dim = rope->type != KVC_ROPE_DEFAULT ? rope->mscale_all_dim : 0.0;
    return kvc_yarn_softmax_scale(qk_nope_head_dim, qk_rope_head_dim, rope->factor, mscale_all_dim);
}
