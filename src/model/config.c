/* config.json into kvc_model_config (MF 2, 3.1, 4.1): the shared reader
 * (hparams.h) gives the identity, sizes and rope; the family's descriptor
 * (family.h) its own keys and the kind of every layer. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/model_internal.h"

static const kvc_json_range EPS_RANGE = {0.0, 1.0, false};

/* The runtime implements default, linear, llama3, yarn and longrope (dynamic NTK, whose frequencies change with
 * the longest sequence of a batch, would break batch invariance; longrope picks its short or long factors once per
 * workspace, docs/model.md), longrope only as the one rope of every layer. */
static kvc_status supported_rope(const kvc_hparams *hp, const kvc_rope_config *r, const char *which) {
    const kvc_rope_type t = r->type;
    static const char *const PROPORTIONAL[] = {"lfm3", "gemma4_text", "gemma4", "gemma4_unified_text",
                                               "gemma4_unified"}; /* the types whose code reads it */
    const bool proportional = kvci_name_listed(hp->model_type, PROPORTIONAL, 5);
    if (t == KVC_ROPE_DYNAMIC)
        return kvci_fail(
            KVC_EINVAL,
            "%s: %srope type \"dynamic\" is not supported by the runtime: past max_position_embeddings "
            "dynamic NTK raises its base with each forward pass's longest sequence, so the keys already "
            "cached would keep an older base and a request's keys would depend on its batch (docs/model.md)",
            hp->cfg.doc, which);
    if (t != KVC_ROPE_DEFAULT && t != KVC_ROPE_LINEAR && t != KVC_ROPE_LLAMA3 && t != KVC_ROPE_YARN &&
        (t != KVC_ROPE_LONGROPE || hp->rope_sliding_given) && (t != KVC_ROPE_PROPORTIONAL || !proportional))
        return kvci_fail(KVC_EINVAL,
                         "%s: %srope type \"%s\" is not supported by the runtime (default, linear, llama3, yarn; "
                         "longrope as the one rope of every layer; proportional in lfm3 and gemma4)",
                         hp->cfg.doc, which, kvc_rope_type_name(t));
    return KVC_OK;
}

/* The share of each head a rope turns: proportional's is the whole head (its factor zeroes frequencies instead). */
static double rotated_share(const kvc_rope_config *r) {
    return r->type == KVC_ROPE_PROPORTIONAL ? 1.0 : r->partial_rotary_factor;
}

/* The rope of the full layers and, when the config holds one per layer type, of the sliding ones (one
 * rotary width for both: the forward's cos/sin tables share it). */
static kvc_status take_rope(const kvc_hparams *hp, kvc_model_config *cfg) {
    KVC_TRY(supported_rope(hp, &hp->rope, hp->rope_per_layer_type ? "full_attention " : ""));
    KVC_TRY(supported_rope(hp, &hp->rope_sliding, hp->rope_sliding_given ? "sliding_attention " : ""));
    if (rotated_share(&hp->rope_sliding) != rotated_share(&hp->rope) &&
        !kvci_family_is_laguna(hp->model_type)) /* Laguna's kinds rotate their own widths (layer_rot_dim) */
        return kvci_fail(KVC_EINVAL,
                         "%s: partial_rotary_factor %g of the sliding layers differs from the full layers' %g (the "
                         "runtime rotates one width)",
                         hp->cfg.doc, hp->rope_sliding.partial_rotary_factor, hp->rope.partial_rotary_factor);
    cfg->rope = hp->rope;
    cfg->rope_sliding = hp->rope_sliding;
    return KVC_OK;
}

/* The rotary width (head_dim * partial_rotary_factor, truncated as transformers' int()) must be even and >= 2;
 * longrope needs rot / 2 short and long factors. */
static kvc_status check_rotary(const kvc_hparams *hp, const kvc_model_config *cfg) {
    const int64_t rot = kvci_model_rot_dim(cfg);
    const kvc_rope_config *r = &cfg->rope;
    if (rot < 2 || rot % 2 != 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: the rotary width %lld (head_dim %lld x partial_rotary_factor %g) must be even and >= 2",
                         hp->cfg.doc, (long long)rot, (long long)cfg->head_dim, r->partial_rotary_factor);
    if (r->type == KVC_ROPE_LONGROPE && (r->n_short_factors != rot / 2 || r->n_long_factors != rot / 2))
        return kvci_fail(KVC_EINVAL,
                         "%s: %s.short_factor and long_factor hold %d and %d entries; the rotary width %lld needs %lld "
                         "each",
                         hp->cfg.doc, hp->rope_source, (int)r->n_short_factors, (int)r->n_long_factors, (long long)rot,
                         (long long)(rot / 2));
    return KVC_OK;
}

int64_t kvci_model_kv_source(const kvc_model_config *c, int64_t l) {
    const int64_t first = c->num_layers - c->kv_shared_layers;
    if (l < first) return l;
    int64_t j = first - 1;
    while (j >= 0 && c->layer_sliding[j] != c->layer_sliding[l]) j--;
    return j >= 0 ? j : l; /* config checks leave none without a source */
}

int64_t kvci_model_embed_width(const kvc_model_config *c) { return c->embed_dim > 0 ? c->embed_dim : c->hidden_size; }

int64_t kvci_model_input_vocab(const kvc_model_config *c) {
    return c->input_vocab_size > 0 ? c->input_vocab_size : c->vocab_size;
}

int64_t kvci_model_rot_dim(const kvc_model_config *c) { return kvci_model_rot_dim_of(c, c->head_dim); }

int64_t kvci_model_rot_dim_of(const kvc_model_config *c, int64_t head_dim) {
    if (c->family == KVC_FAMILY_DEEPSEEK_V3 || c->family == KVC_FAMILY_HY_V4) return c->qk_rope_head_dim;
    return kvci_rope_share_width(&c->rope, head_dim);
}

int64_t kvci_rope_share_width(const kvc_rope_config *r, int64_t head_dim) {
    const double f = rotated_share(r);
    return f > 0.0 && f < 1.0 ? (int64_t)((double)head_dim * f) : head_dim;
}

/* The gated families' activation, hidden_act (silu when absent; transformers' "swish" is the same function). A
 * dense model without routed experts takes the tanh GELUs too (gelu_pytorch_tanh, gelu_new, gelu_fast: one
 * function), as transformers' ACT2FN puts any of them in the gated MLP: Gemma's GeGLU. Any other, and a GELU
 * with routed experts (their kernels are SwiGLU's), is refused by name rather than run as SiLU. Families with
 * an activation of their own set mlp_act in their parse hook. */
static kvc_status read_act(const kvc_hparams *hp, kvc_model_config *cfg) {
    const char *act = "silu";
    bool have = false, experts = false;
    static const char *const exaone_keys[KVC_HP_ALIASES] = {"hidden_act",
                                                            "activation_function"}; /* its attribute map */
    const char *key = strcmp(cfg->model_type, "exaone") == 0 ? kvci_hparams_key(&hp->cfg, exaone_keys) : NULL;
    if (cfg->mlp_act != KVC_MLP_SILU || cfg->num_mem_blocks > 0) return KVC_OK; /* Zamba2: its parse reads it */
    KVC_TRY(kvci_json_str(&hp->cfg, key != NULL ? key : "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0) return KVC_OK;
    for (int64_t l = 0; l < cfg->num_layers; l++) experts |= cfg->layer_moe[l];
    const bool tanh_gelu =
        strcmp(act, "gelu_pytorch_tanh") == 0 || strcmp(act, "gelu_new") == 0 || strcmp(act, "gelu_fast") == 0;
    const bool gelu_ok = !experts && cfg->family == KVC_FAMILY_DENSE && !cfg->mlp_plain; /* Mamba's: silu only */
    if (tanh_gelu && gelu_ok) {
        cfg->mlp_act = KVC_MLP_GELU_TANH;
        return KVC_OK;
    }
    return kvci_fail(KVC_EINVAL, "%s: %s \"%s\" is not supported (%s: silu or swish%s)", hp->cfg.doc,
                     key != NULL ? key : "hidden_act", act, cfg->model_type,
                     gelu_ok ? ", gelu_pytorch_tanh, gelu_new or gelu_fast" : "");
}

/* The family of model_type, which the runtime must run. */
static kvc_status parse_family(const kvc_hparams *hp, kvc_model_config *cfg, const kvc_family_desc **fam) {
    const char *doc = hp->cfg.doc, *t = hp->model_type;
    if (t == NULL) return kvci_fail(KVC_EINVAL, "%s: required key \"model_type\" is missing", doc);
    if (strlen(t) >= sizeof cfg->model_type)
        return kvci_fail(KVC_EINVAL, "%s: model_type \"%.40s...\" is %zu bytes long, the runtime keeps at most %zu",
                         doc, t, strlen(t), sizeof cfg->model_type - 1);
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", t);
    const char *refused = kvci_family_refused_type(hp);
    if (refused != NULL)
        return kvci_fail(KVC_EINVAL, "%s: model_type \"%s\" is not supported: %s", doc, refused,
                         kvci_family_refusal(refused));
    KVC_TRY(kvci_family_bert_decoder(hp)); /* BERT's bidirectional default, refused as the planner refuses it */
    const kvc_family_alias *alias = NULL;
    *fam = kvci_family_find(t, NULL, &alias);
    if ((*fam == NULL || !alias->runs) && kvci_family_not_run(t) != NULL) /* doge: planned by the generic family */
        return kvci_fail(KVC_EINVAL, "%s: model_type \"%s\" is planned only, not run: %s", doc, t,
                         kvci_family_not_run(t));
    if (*fam == NULL || !alias->runs) {
        char runs[256];
        kvci_family_runtime_types(runs, sizeof runs);
        return kvci_fail(KVC_EINVAL, "%s: model_type \"%s\" is not supported (%s)", doc, t, runs);
    }
    cfg->family = (*fam)->id;
    return KVC_OK;
}

/* Gemma 4 (Unified too), Gemma 3n, MiMo-V2-Flash, Laguna and Mellum read each layer's rope as
 * rope_parameters[layer_type] (their classes keep the dict as given): a flat dict ({} too), or one per layer type
 * without an entry for a kind the model has, is refused by name (transformers fails on it; read here, those layers
 * would take another rope). */
static kvc_status rope_entries(const kvc_hparams *hp, const kvc_layer_kind *kinds, int64_t n) {
    static const char *const TYPES[] = {"gemma4_text",    "gemma4",       "gemma4_unified_text",
                                        "gemma4_unified", "gemma3n_text", "gemma3n",
                                        "mimo_v2_flash",  "laguna",       "mellum"};
    if (hp->rope_source == NULL || !kvci_name_listed(hp->model_type, TYPES, 9)) return KVC_OK;
    if (!hp->rope_per_layer_type)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s must hold one dict per layer type (full_attention, sliding_attention) for %s",
                         hp->cfg.doc, hp->rope_source, hp->model_type);
    const cJSON *dict = kvci_json_find(&hp->cfg, hp->rope_source);
    for (int64_t i = 0; i < n; i++) {
        const char *type = kinds[i] == KVC_LK_SLIDING ? "sliding_attention" : "full_attention";
        if (cJSON_GetObjectItemCaseSensitive(dict, type) == NULL)
            return kvci_fail(KVC_EINVAL, "%s: %s has no \"%s\" entry (layer %lld is one)", hp->cfg.doc, hp->rope_source,
                             type, (long long)i);
    }
    return KVC_OK;
}

/* The kind of every layer (family.c); the runtime runs attention layers, chunked ones for Llama 4 only, and of
 * the state layers LFM2's short convolutions, the Mamba2 hybrids' mixers, Qwen3-Next's Gated DeltaNet, Kimi-Linear's
 * Kimi Delta Attention, MiniMax's lightning attention, RWKV's layers and RecurrentGemma's recurrent blocks only;
 * Mllama's cache-less layers (its cross-attention layers, text-only) are skipped whole: no mixer, no MLP. */
static kvc_status parse_layer_kinds(const kvc_hparams *hp, const kvc_family_desc *fam, kvc_model_config *cfg) {
    kvc_layer_kind kinds[KVC_MODEL_MAX_LAYERS];
    kvc_family_ctx ctx = {.hp = hp, .n_layers = cfg->num_layers};
    KVC_TRY(kvci_family_layer_kinds(fam, &ctx, kinds));
    if (cfg->family == KVC_FAMILY_GEMMA4) KVC_TRY(kvci_gemma4_layers(&ctx, kinds, cfg));
    if (cfg->family == KVC_FAMILY_GEMMA3N) KVC_TRY(kvci_gemma3n_layers(&ctx, kinds, cfg));
    KVC_TRY(rope_entries(hp, kinds, cfg->num_layers));
    bool any_sliding = false, any_chunked = false;
    /* a mixer, attention or MLP per layer (Nemotron-H), a mixer alone (Mamba2, Mamba, FalconMamba) */
    const bool zamba = strcmp(cfg->model_type, "zamba2") == 0 || /* hybrid layers: the shared block, the mixer */
                       strcmp(cfg->model_type, "zamba") == 0;
    const bool one_block = strcmp(cfg->model_type, "nemotron_h") == 0 || strcmp(cfg->model_type, "mamba2") == 0 ||
                           zamba || (cfg->family == KVC_FAMILY_JAMBA && strcmp(cfg->model_type, "jamba") != 0);
    const bool mllama = kvci_family_is_mllama(cfg->model_type); /* its cache-less layers are skipped whole */
    for (int64_t i = 0; i < cfg->num_layers; i++) {
        const bool skip = mllama && kinds[i] == KVC_LK_NONE;
        cfg->layer_no_mixer[i] = (one_block && kinds[i] == KVC_LK_NONE) || skip; /* an MLP or, "E", experts alone */
        cfg->layer_no_ffn[i] = (one_block && kinds[i] != KVC_LK_NONE) || skip;
        const bool conv = kinds[i] == KVC_LK_STATE && cfg->family == KVC_FAMILY_LFM2;
        const bool gdn =
            kinds[i] == KVC_LK_STATE && (cfg->family == KVC_FAMILY_QWEN3_NEXT || cfg->family == KVC_FAMILY_KIMI_LINEAR);
        const bool both = kinds[i] == KVC_LK_PARALLEL && (cfg->mamba_parallel_attn || zamba); /* Falcon-H1, Zambas */
        const bool mamba = (kinds[i] == KVC_LK_STATE || both) && cfg->family == KVC_FAMILY_MAMBA2_HYBRID;
        const bool mamba1 = (kinds[i] == KVC_LK_STATE || both) && cfg->family == KVC_FAMILY_JAMBA;
        const bool lightning = kinds[i] == KVC_LK_STATE && cfg->family == KVC_FAMILY_MINIMAX;
        const bool rwkv = kinds[i] == KVC_LK_STATE && cfg->family == KVC_FAMILY_RWKV; /* state_layers.c */
        const bool rglru = kinds[i] == KVC_LK_STATE && cfg->family == KVC_FAMILY_RECURRENT_GEMMA;
        if ((kinds[i] == KVC_LK_STATE && !conv && !gdn && !mamba && !mamba1 && !lightning && !rwkv && !rglru) ||
            (kinds[i] == KVC_LK_NONE && !one_block && !skip) || (kinds[i] == KVC_LK_PARALLEL && !mamba && !mamba1))
            return kvci_fail(KVC_EINVAL, "%s: layer %lld is a %s layer, which the runtime does not run", hp->cfg.doc,
                             (long long)i,
                             kinds[i] == KVC_LK_NONE ? "cache-less (MLP/MoE)" : "state (linear_attention or mamba)");
        if (kinds[i] == KVC_LK_CHUNKED && cfg->family != KVC_FAMILY_LLAMA4) /* another family's modeling: full */
            return kvci_fail(KVC_EINVAL,
                             "%s: layer %lld is a chunked-attention layer, which the runtime does not run for %s "
                             "(Llama 4's only)",
                             hp->cfg.doc, (long long)i, cfg->model_type);
        cfg->layer_conv[i] = conv;
        cfg->layer_gdn[i] = gdn;
        cfg->layer_mamba[i] = mamba;
        cfg->layer_mamba1[i] = mamba1;
        cfg->layer_lightning[i] = lightning;
        cfg->layer_rglru[i] = rglru;
        cfg->layer_shared_block[i] = both && zamba;
        cfg->layer_sliding[i] = kinds[i] == KVC_LK_SLIDING;
        cfg->layer_chunked[i] = kinds[i] == KVC_LK_CHUNKED;
        any_sliding |= cfg->layer_sliding[i];
        any_chunked |= cfg->layer_chunked[i];
    }
    bool cached = false;
    for (int64_t i = 0; i < cfg->num_layers; i++) cached |= !cfg->layer_no_mixer[i];
    if (!cached)
        return kvci_fail(KVC_EINVAL, "%s: every layer %s (the runtime needs a mixer or attention layer)", hp->cfg.doc,
                         mllama ? "is listed in cross_attention_layers, skipped on text"
                                : "of layers_block_type / hybrid_override_pattern is an MLP");
    cfg->sliding_window = any_sliding ? ctx.window : 0;
    cfg->attention_chunk_size = any_chunked ? ctx.chunk : 0;
    return KVC_OK;
}

/* The MLP width's key and its config class's default (taken when the key is absent) for the types whose class has
 * one: CTRLConfig's dff, OPTConfig's and XGLMConfig's ffn_dim, the others' intermediate_size. */
typedef struct mlp_width {
    const char *type, *key;
    int64_t def;
} mlp_width;

static const mlp_width *mlp_width_default(const char *model_type) {
    static const mlp_width WIDTHS[] = {{"ctrl", "dff", 8192},
                                       {"opt", "ffn_dim", 3072},
                                       {"xglm", "ffn_dim", 4096},
                                       {"afmoe", "intermediate_size", 6144},
                                       {"mellum", "intermediate_size", 7168},
                                       {"laguna", "intermediate_size", 8192},
                                       {"beam", "intermediate_size", 20480},
                                       {"axk2", "intermediate_size", 5120},
                                       {"mimo_v2_flash", "intermediate_size", 16384},
                                       {"biogpt", "intermediate_size", 4096},
                                       {"recurrent_gemma", "intermediate_size", 3 * 2560},
                                       {"hy_v4", "intermediate_size", 6912},
                                       {"mllama_text_model", "intermediate_size", 14336},
                                       {"mllama", "intermediate_size", 14336}};
    for (size_t i = 0; i < sizeof WIDTHS / sizeof WIDTHS[0]; i++)
        if (strcmp(model_type, WIDTHS[i].type) == 0) return &WIDTHS[i];
    return NULL;
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
    const bool falcon = strcmp(cfg->model_type, "falcon") == 0;
    const bool neo = strcmp(cfg->model_type, "gpt_neo") == 0;
    const mlp_width *width = NULL;
    if (strcmp(cfg->model_type, "gpt2") == 0 || strcmp(cfg->model_type, "gpt_bigcode") == 0 ||
        strcmp(cfg->model_type, "gptj") == 0 || strcmp(cfg->model_type, "codegen") == 0 || falcon || neo) {
        /* GPT2Config's, GPTBigCodeConfig's, GPTJConfig's and CodeGenConfig's n_inner, FalconConfig's ffn_hidden_size,
         * GPTNeoConfig's intermediate_size: 4 x hidden when absent or null */
        bool have = false;
        cfg->intermediate_size = 4 * cfg->hidden_size;
        KVC_TRY(kvci_json_int(c,
                              falcon ? "ffn_hidden_size"
                              : neo  ? "intermediate_size"
                                     : "n_inner",
                              1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size, &have));
    } else if (cfg->family == KVC_FAMILY_RWKV) { /* RwkvConfig's intermediate_size: 4 x hidden when absent or null */
        const cJSON *v = kvci_json_find(c, "intermediate_size");
        cfg->intermediate_size = 4 * cfg->hidden_size;
        if (v != NULL && !cJSON_IsNull(v))
            KVC_TRY(kvci_json_int(c, "intermediate_size", 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size, NULL));
    } else if (cfg->family == KVC_FAMILY_GEMMA3N) { /* one width, or one per layer (all equal) */
        KVC_TRY(kvci_gemma3n_intermediate(c, cfg->num_layers, &cfg->intermediate_size));
    } else if (strcmp(cfg->model_type, "bloom") == 0 || strcmp(cfg->model_type, "mpt") == 0 ||
               strcmp(cfg->model_type, "openai-gpt") == 0) {
        cfg->intermediate_size = 4 * cfg->hidden_size; /* BloomMLP's, MptMLP's and GPT-1's MLP's fixed width */
    } else if (strcmp(cfg->model_type, "gpt_neox_japanese") == 0) { /* hidden x intermediate_multiple_size (4) */
        int64_t mult = 4;
        KVC_TRY(kvci_family_opt_int(c, "intermediate_multiple_size", 4, 1, KVC_HP_MAX_WIDTH, &mult));
        if (mult > KVC_HP_MAX_WIDTH / cfg->hidden_size)
            return kvci_fail(KVC_EINVAL, "%s: hidden_size x intermediate_multiple_size %lld exceeds %lld", c->doc,
                             (long long)mult, (long long)KVC_HP_MAX_WIDTH);
        cfg->intermediate_size = cfg->hidden_size * mult;
    } else if ((width = mlp_width_default(cfg->model_type)) != NULL) { /* a class default of its own */
        KVC_TRY(kvci_family_opt_int(c, width->key, width->def, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    } else if (strcmp(cfg->model_type, "ergo") == 0) { /* first_dense_intermediate_size: parse_ergo */
        cfg->intermediate_size = 1;
    } else if (cfg->family == KVC_FAMILY_KIMI_LINEAR) { /* KimiLinearConfig's 9216 when absent */
        KVC_TRY(kvci_family_opt_int(c, "intermediate_size", 9216, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    } else if (strcmp(cfg->model_type, "dbrx") == 0) { /* DbrxFFNConfig's ffn_hidden_size, 3584 when absent */
        char path[32];
        kvc_json_obj ffn = {.doc = c->doc};
        bool have = false;
        KVC_TRY(kvci_json_child(c, "ffn_config", path, sizeof path, &ffn, &have));
        KVC_TRY(kvci_family_opt_int(&ffn, "ffn_hidden_size", 3584, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    } else if (cfg->family == KVC_FAMILY_QWEN3_NEXT && strncmp(cfg->model_type, "qwen3_5_moe", 11) == 0) {
        cfg->intermediate_size = 1; /* no dense MLP, no key: the hook sets the experts' width */
    } else if (cfg->family == KVC_FAMILY_QWEN3_NEXT || strcmp(cfg->model_type, "jetmoe") == 0) {
        /* Qwen3NextConfig's and JetMoeConfig's 5632, Qwen3_5TextConfig's 12288 */
        const int64_t def = strncmp(cfg->model_type, "qwen3_5", 7) == 0 ? 12288 : 5632;
        KVC_TRY(kvci_family_opt_int(c, "intermediate_size", def, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    } else if (cfg->family == KVC_FAMILY_LFM2) { /* Lfm2Config's 12288, Lfm2MoeConfig's 7168, Lfm3Config's 7680 when
                                                  * absent (block_ff_dim: the hook) */
        const int64_t def = strcmp(cfg->model_type, "lfm2_moe") == 0 ? 7168
                            : strcmp(cfg->model_type, "lfm3") == 0   ? 7680
                                                                     : 12288;
        KVC_TRY(kvci_family_opt_int(c, "intermediate_size", def, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    } else if (strcmp(cfg->model_type, "solar_open") == 0 || strcmp(cfg->model_type, "kolibri1") == 0 ||
               strcmp(cfg->model_type, "longcat_flash") == 0 || /* its hook reads ffn_hidden_size */
               strcmp(cfg->model_type, "mamba2") == 0 || strcmp(cfg->model_type, "zamba2") == 0 ||
               (cfg->family == KVC_FAMILY_JAMBA && strcmp(cfg->model_type, "jamba") != 0)) {
        /* no dense MLP, no key: Solar Open's and Kolibri 1's hooks set the experts' width; Mamba2 and Mamba have mixers
         * alone; Zamba2's and Zamba's hooks read their shared MLP's */
        cfg->intermediate_size = 1;
    } else {
        KVC_TRY(kvci_json_int(c, "intermediate_size", 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size, NULL));
    }
    cfg->max_position_embeddings = hp->have_max_pos ? hp->max_pos : KVC_HP_DEFAULT_MAX_POS;
    cfg->max_positions_assumed = !hp->have_max_pos;
    const double eps = kvci_family_get(cfg->family)->rms_norm_eps;
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", eps > 0.0 ? eps : 1e-6, EPS_RANGE, &cfg->rms_norm_eps));
    return kvci_family_opt_bool(c, "tie_word_embeddings", false, &cfg->tie_word_embeddings);
}

static kvc_status parse_root(kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_family_desc *fam = NULL;
    KVC_TRY(parse_family(hp, cfg, &fam));
    KVC_TRY(kvci_hparams_read_sizes(hp));
    KVC_TRY(parse_sizes(hp, cfg));
    KVC_TRY(kvci_hparams_read_rope(hp));
    KVC_TRY(take_rope(hp, cfg));
    KVC_TRY(fam->parse(hp, cfg));
    if (fam->check) KVC_TRY(fam->check(cfg, hp->cfg.doc));
    KVC_TRY(read_act(hp, cfg));
    KVC_TRY(parse_layer_kinds(hp, fam, cfg));
    if (cfg->head_dim < 2 || cfg->head_dim % 2 != 0) { /* ChatGLM's and JetMoE's head width is kv_channels */
        const cJSON *hd = kvci_json_find(&hp->cfg, "head_dim");
        const bool kv_ch = (!hd || cJSON_IsNull(hd)) && kvci_json_find(&hp->cfg, "kv_channels");
        return kvci_fail(KVC_EINVAL, "%s: %s %lld must be even and >= 2 (rotary width)", hp->cfg.doc,
                         kv_ch ? "kv_channels" : "head_dim", (long long)cfg->head_dim);
    }
    return check_rotary(hp, cfg);
}

kvc_status kvc_model_config_parse(const char *json_text, const char *name, kvc_model_config *out) {
    if (!json_text || !out) return kvci_fail(KVC_EINVAL, "model_config_parse: json_text and out must not be NULL");
    return kvci_model_config_parse_n(json_text, strlen(json_text), name, out);
}

kvc_status kvci_model_config_parse_n(const char *json_text, size_t len, const char *name, kvc_model_config *out) {
    kvc_hparams hp;
    kvc_status st = kvci_hparams_open(json_text, len, name != NULL ? name : "config.json", &hp);
    kvc_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (st == KVC_OK) st = parse_root(&hp, &cfg);
    kvci_hparams_close(&hp);
    if (st == KVC_OK) *out = cfg;
    return st;
}

kvc_status kvc_model_config_load(const char *dir, kvc_model_config *out) {
    if (!dir || !out) return kvci_fail(KVC_EINVAL, "model_config_load: dir and out must not be NULL");
    if (!dir[0]) /* "" + "/config.json" is the root directory's file */
        return kvci_fail(KVC_EINVAL, "model_config_load: the model directory is an empty path");
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
    if (c == NULL) return NAN;
    if (c->attention_multiplier > 0.0) return c->attention_multiplier;
    if (c->query_pre_attn_scalar > 0.0) return 1.0 / sqrt(c->query_pre_attn_scalar);
    if (c->family != KVC_FAMILY_DEEPSEEK_V3 && c->family != KVC_FAMILY_HY_V4)
        return c->head_dim >= 1 ? 1.0 / sqrt((double)c->head_dim) : NAN;
    return kvci_mla_softmax_scale(&c->rope, c->qk_nope_head_dim, c->qk_rope_head_dim);
}
