/* Hybrids of attention and state layers (planned only, LFM2 / LFM3 run too: family_lfm2.c; Qwen3-Next's Gated DeltaNet
 * hybrid: family_qwen3_next.c): LFM2 (short
 * convolutions, layer_types "conv"; Kimi-Linear: family_kimi_linear.c; MiniMax: family_minimax.c) and the
 * Mamba2 hybrids (Jamba's Mamba-1 layers: family_mamba1.c), whose layers come from layer_types (Granite 4),
 * attn_layer_indices (Bamba) or hybrid_override_pattern (Nemotron-H), or hold
 * both side by side (Falcon-H1); the
 * shapes of their state caches per tensor-parallel rank. Every size read is
 * at most 2^16 (KVC_HP_MAX_DIM) and hidden_size at most 2^20, so the state
 * widths stay below 2^37 and one state block below 2^53 bytes: no product
 * here can overflow. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

/* A list of attention layer indices (Bamba's attn_layer_indices, LFM2's full_attn_idxs): the others are state
 * layers. */
static kvc_status index_list_kinds(const kvc_family_ctx *ctx, const char *field, const cJSON *indices,
                                   kvc_layer_kind *kinds) {
    const char *doc = ctx->hp->cfg.doc;
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_STATE;
    int64_t n = 0;
    for (const cJSON *e = indices->child; e != NULL; e = e->next, n++) {
        char where[64];
        snprintf(where, sizeof where, "%s[%lld]", field, (long long)n);
        int64_t layer = 0;
        KVC_TRY(kvci_json_int_value(e, where, 0, ctx->n_layers - 1, &layer));
        if (kinds[layer] == KVC_LK_FULL)
            return kvci_fail(KVC_EINVAL, "%s: %s lists layer %lld twice", doc, field, (long long)layer);
        kinds[layer] = KVC_LK_FULL;
    }
    return KVC_OK;
}

static bool is_lfm3(const kvc_hparams *hp) { return hp->model_type != NULL && strcmp(hp->model_type, "lfm3") == 0; }

/* LFM2 without layer_types: full_attn_idxs lists the attention layers, the others are short convolutions. LFM3
 * (Lfm3Config's rule, no full_attn_idxs): layer i full when i % 4 == 2, sliding when i % 4 == 0 and i > 0, else a
 * convolution. */
static kvc_status lfm2_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const cJSON *indices = NULL;
    bool have = false;
    if (is_lfm3(ctx->hp)) {
        for (int64_t i = 0; i < ctx->n_layers; i++)
            kinds[i] = i % 4 == 2 ? KVC_LK_FULL : i % 4 == 0 && i > 0 ? KVC_LK_SLIDING : KVC_LK_STATE;
        return KVC_OK;
    }
    KVC_TRY(kvci_json_array(&ctx->hp->cfg, "full_attn_idxs", KVC_HP_MAX_LAYERS, &indices, &have));
    const char *type = ctx->hp->model_type;
    if (!have && type != NULL && strcmp(type, "lfm2") == 0) { /* Lfm2Config: absent or null, every layer attends */
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_FULL;
        return KVC_OK;
    }
    if (!have && type != NULL && strcmp(type, "lfm2_moe") == 0) /* Lfm2MoeConfig derives no list */
        return kvci_fail(KVC_EINVAL,
                         "%s: layer_types is missing: Lfm2MoeConfig has no default for it (transformers' own "
                         "Lfm2MoeForCausalLM cannot be built without it), and it tells conv from attention layers",
                         ctx->hp->cfg.doc);
    if (!have)
        return kvci_fail(
            KVC_EINVAL, "%s: layer_types and full_attn_idxs are missing (one of them tells conv from attention layers)",
            ctx->hp->cfg.doc);
    return index_list_kinds(ctx, "full_attn_idxs", indices, kinds);
}

/* LFM2's short-convolution layers keep the last conv_L_cache - 1 inputs of every channel (hidden_size of them,
 * split over the ranks): all the next token's convolution reads besides its own input, as vLLM keeps it and the
 * runtime stores it (transformers' cache holds one column more, never read). */
static kvc_status lfm2_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    /* conv_L_cache when absent: Lfm3Config's 7, Lfm2Config's and Lfm2MoeConfig's 3 (the loader's, family_lfm2.c) */
    int64_t width = is_lfm3(hp) ? 7 : 3, hidden_r = 0;
    bool have = false;
    KVC_TRY(kvci_json_int(&hp->cfg, "conv_L_cache", 2, KVC_HP_MAX_DIM, &width, &have));
    if (hidden_size < 1)
        return kvci_fail(KVC_EINVAL, "%s: hidden_size is missing (the conv layers are hidden_size wide)", hp->cfg.doc);
    KVC_TRY(kvci_family_split_tp(hp, "hidden_size", hidden_size, tp, &hidden_r));
    *s = (kvc_state_shapes){.n = 1, .names = {"conv_state"}, .n_shape = {2}, .shape = {{hidden_r, width - 1}}};
    return KVC_OK;
}

/* Lfm2Attention has no window: a "sliding_attention" entry of layer_types is a full layer there; LFM3's has. */
static bool lfm2_reads_window(const kvc_hparams *hp) { return is_lfm3(hp); }

/* Nemotron-H: hybrid_override_pattern has one character per layer, M a Mamba2 layer, * attention, - an MLP
 * and E a mixture of experts (no cache). */
static kvc_status pattern_kinds(const kvc_family_ctx *ctx, const char *pattern, kvc_layer_kind *kinds) {
    const char *doc = ctx->hp->cfg.doc;
    const size_t n = strlen(pattern);
    if ((int64_t)n != ctx->n_layers)
        return kvci_fail(KVC_EINVAL, "%s: hybrid_override_pattern has %zu layers but num_hidden_layers is %lld", doc, n,
                         (long long)ctx->n_layers);
    for (size_t i = 0; i < n; i++) {
        switch (pattern[i]) {
        case 'M': kinds[i] = KVC_LK_STATE; break;
        case '*': kinds[i] = KVC_LK_FULL; break;
        case '-':
        case 'E': kinds[i] = KVC_LK_NONE; break;
        default:
            return kvci_fail(KVC_EINVAL,
                             "%s: hybrid_override_pattern[%zu] '%c' is not M (Mamba2), * (attention), - (MLP) or E "
                             "(experts)",
                             doc, i, pattern[i] >= 0x20 && pattern[i] < 0x7f ? pattern[i] : '?');
        }
    }
    return KVC_OK;
}

kvc_status kvci_family_block_list(const kvc_family_ctx *ctx, const cJSON *list, const kvc_block_name *names,
                                  int32_t n_names, const char *choices, kvc_layer_kind *kinds) {
    const char *doc = ctx->hp->cfg.doc;
    if (cJSON_GetArraySize(list) != ctx->n_layers)
        return kvci_fail(KVC_EINVAL, "%s: layers_block_type has %d entries but num_hidden_layers is %lld", doc,
                         cJSON_GetArraySize(list), (long long)ctx->n_layers);
    int64_t i = 0;
    for (const cJSON *e = list->child; e != NULL; e = e->next, i++) {
        if (!cJSON_IsString(e))
            return kvci_fail(KVC_EINVAL, "%s: layers_block_type[%lld] must be a string (%s), got %s", doc, (long long)i,
                             choices, kvci_json_type_name(e));
        const char *t = e->valuestring;
        int32_t k = 0;
        while (k < n_names && strcmp(t, names[k].name) != 0) k++;
        if (k == n_names)
            return kvci_fail(KVC_EINVAL, "%s: layers_block_type[%lld] \"%.64s\" is not %s", doc, (long long)i, t,
                             choices);
        kinds[i] = names[k].kind;
    }
    return KVC_OK;
}

/* Nemotron-H as transformers 5 saves it: layers_block_type, one entry per layer, linear_attention (Mamba2),
 * full_attention, mlp or moe (no cache); mamba and attention, the legacy names Nemotron-3 Ultra's config gives,
 * as transformers' PreTrainedConfig remaps them. */
static kvc_status block_type_kinds(const kvc_family_ctx *ctx, const cJSON *list, kvc_layer_kind *kinds) {
    static const kvc_block_name names[] = {{"linear_attention", KVC_LK_STATE},
                                           {"full_attention", KVC_LK_FULL},
                                           {"mlp", KVC_LK_NONE},
                                           {"moe", KVC_LK_NONE},
                                           {"mamba", KVC_LK_STATE},
                                           {"attention", KVC_LK_FULL}};
    return kvci_family_block_list(ctx, list, names, 6,
                                  "linear_attention (mamba), full_attention (attention), mlp or moe", kinds);
}

/* Mamba2ForCausalLM (model_type mamba2): no attention, its mixer's keys without the mamba_ prefix. */
static bool plain_mamba2(const kvc_hparams *hp) {
    return (hp->model_type != NULL && strcmp(hp->model_type, "mamba2") == 0) ||
           (hp->architecture != NULL && strcmp(hp->architecture, "Mamba2ForCausalLM") == 0);
}

/* Mamba2 hybrids without layer_types: Falcon-H1 (attention and Mamba2 in every layer), Bamba's
 * attn_layer_indices or Nemotron-H's hybrid_override_pattern. */
static kvc_status mamba2_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    const char *type = ctx->hp->model_type, *arch = ctx->hp->architecture;
    if ((type != NULL && strcmp(type, "falcon_h1") == 0) ||
        (arch != NULL && strcmp(arch, "FalconH1ForCausalLM") == 0)) {
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_PARALLEL;
        return KVC_OK;
    }
    if (kvci_is_zamba2(ctx->hp)) return kvci_zamba_kinds(ctx, kinds); /* hybrid layers: the shared block too */
    /* Mamba2ForCausalLM: a mixer in every layer; GraniteMoeHybridConfig without layer_types: every layer
     * linear_attention (a mixer), whatever else the file says */
    if (plain_mamba2(ctx->hp) || (type != NULL && strcmp(type, "granitemoehybrid") == 0) ||
        (arch != NULL && strcmp(arch, "GraniteMoeHybridForCausalLM") == 0)) {
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_STATE;
        return KVC_OK;
    }
    const cJSON *indices = NULL;
    const char *pattern = NULL;
    bool have_indices = false, have_pattern = false;
    KVC_TRY(kvci_json_array(cfg, "attn_layer_indices", KVC_HP_MAX_LAYERS, &indices, &have_indices));
    if (have_indices) return index_list_kinds(ctx, "attn_layer_indices", indices, kinds);
    if ((type != NULL && strcmp(type, "bamba") == 0) || (arch != NULL && strcmp(arch, "BambaForCausalLM") == 0)) {
        /* BambaConfig: attention on the attn_layer_indices layers alone; absent or null, none */
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_STATE;
        return KVC_OK;
    }
    const cJSON *blocks = NULL;
    bool have_blocks = false;
    KVC_TRY(kvci_json_array(cfg, "layers_block_type", KVC_HP_MAX_LAYERS, &blocks, &have_blocks));
    if (have_blocks) return block_type_kinds(ctx, blocks, kinds);
    KVC_TRY(kvci_json_str(cfg, "hybrid_override_pattern", KVC_HP_MAX_LAYERS, &pattern, &have_pattern));
    if (have_pattern) return pattern_kinds(ctx, pattern, kinds);
    return kvci_fail(KVC_EINVAL,
                     "%s: layer_types, attn_layer_indices, layers_block_type and hybrid_override_pattern are missing "
                     "(one of them tells Mamba from attention layers)",
                     cfg->doc);
}

/* Mamba2-style fields (Granite 4, Nemotron-H, ...): also the state shapes of
 * a family without its own rule whose layer_types lists state layers. The conv state keeps the last
 * mamba_d_conv - 1 inputs of every conv channel, as vLLM and the runtime (mamba2.c) keep it (transformers' cache
 * holds one column more, never read). */
static kvc_status mamba2_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    if (kvci_is_zamba2(hp)) return kvci_zamba2_states(hp, hidden_size, tp, s);
    const kvc_json_obj *cfg = &hp->cfg;
    static const char *const heads_n[KVC_HP_ALIASES] = {"mamba_n_heads", "mamba_num_heads"};
    static const char *const hdim_n[KVC_HP_ALIASES] = {"mamba_d_head", "mamba_head_dim"};
    static const char *const state_n[KVC_HP_ALIASES] = {"mamba_d_state", "ssm_state_size", "state_size"};
    static const char *const conv_n[KVC_HP_ALIASES] = {"mamba_d_conv", "conv_kernel"};
    static const char *const groups_n[KVC_HP_ALIASES] = {"mamba_n_groups", "n_groups"};
    const kvc_family_alias *alias = NULL;
    int64_t heads = 0, hdim = 0, state = 0, conv = 0, groups = 1;
    if (kvci_family_find(hp->model_type, hp->architecture, &alias) == &kvc_family_mamba2_hybrid &&
        strcmp(alias->model_type, "zamba2") != 0) { /* a type the loader reads: its class defaults */
        kvc_mamba2_dims d;
        KVC_TRY(kvci_mamba2_dims(cfg, alias->model_type, hidden_size, &d));
        heads = d.heads, hdim = d.head_dim, state = d.state, conv = d.conv, groups = d.groups;
    } else { /* another type's state layers: every size stated */
        bool h1 = false, h2 = false, h3 = false, h4 = false, h5 = false;
        KVC_TRY(kvci_hparams_int(cfg, heads_n, 1, KVC_HP_MAX_DIM, &heads, &h1));
        KVC_TRY(kvci_hparams_int(cfg, hdim_n, 1, KVC_HP_MAX_DIM, &hdim, &h2));
        KVC_TRY(kvci_hparams_int(cfg, state_n, 1, KVC_HP_MAX_DIM, &state, &h3));
        KVC_TRY(kvci_hparams_int(cfg, conv_n, 2, KVC_HP_MAX_DIM, &conv, &h4));
        KVC_TRY(kvci_hparams_int(cfg, groups_n, 1, KVC_HP_MAX_DIM, &groups, &h5));
        if (!h1 || !h2 || !h3 || !h4)
            return kvci_fail(KVC_EINVAL, "%s: the state layers need %s%s%s%s to size their state", cfg->doc,
                             h1 ? "" : "mamba_n_heads ", h2 ? "" : "mamba_d_head ", h3 ? "" : "mamba_d_state ",
                             h4 ? "" : "mamba_d_conv");
    }
    int64_t heads_r = 0, groups_r = 1; /* a rank's groups: split, or one replicated when tp is a multiple of them */
    KVC_TRY(kvci_family_split_tp(hp, "mamba_n_heads", heads, tp, &heads_r));
    if (groups % tp == 0 || tp % groups != 0)
        KVC_TRY(kvci_family_split_tp(hp, "mamba_n_groups", groups, tp, &groups_r));
    const int64_t conv_r = heads_r * hdim + 2 * groups_r * state; /* the runtime's (shard_state.c) */
    *s = (kvc_state_shapes){.n = 2,
                            .names = {"conv_state", "ssm_state"},
                            .n_shape = {2, 3},
                            .shape = {{conv_r, conv - 1, 0}, {heads_r, hdim, state}}};
    return KVC_OK;
}

static const kvc_family_alias LFM2[] = {{"lfm2", "Lfm2ForCausalLM", "lfm2", true},
                                        {"lfm2_moe", "Lfm2MoeForCausalLM", "lfm2_moe", true},
                                        {"lfm3", "Lfm3ForCausalLM", "lfm3", true}};
static const kvc_family_alias MAMBA2[] = {{"granitemoehybrid", "GraniteMoeHybridForCausalLM", "granitemoehybrid", true},
                                          {"bamba", "BambaForCausalLM", "bamba", true},
                                          {"nemotron_h", "NemotronHForCausalLM", "nemotron_h", true},
                                          {"falcon_h1", "FalconH1ForCausalLM", "falcon_h1", true},
                                          {"mamba2", "Mamba2ForCausalLM", "mamba2", true},
                                          {"zamba2", "Zamba2ForCausalLM", "zamba2", true}};

const kvc_family_desc kvc_family_lfm2 = {
    .id = KVC_FAMILY_LFM2,
    .name = "lfm2",
    .aliases = LFM2,
    .n_aliases = 3,
    .rms_norm_eps = 1e-5,
    .parse = kvci_family_parse_lfm2,
    .default_kinds = lfm2_kinds,
    .attention = kvci_lfm2_operator,
    .ffn = kvci_lfm2_ffn,
    .state_shapes = lfm2_states,
    .reads_window = lfm2_reads_window,
};

const kvc_family_desc kvc_family_mamba2_hybrid = {
    .id = KVC_FAMILY_MAMBA2_HYBRID,
    .name = "mamba2_hybrid",
    .aliases = MAMBA2,
    .n_aliases = 6,
    .rms_norm_eps = 1e-5,
    .parse = kvci_family_parse_mamba2,
    .default_kinds = mamba2_kinds,
    .softmax_scale = kvci_mamba2_softmax_scale,
    .attention = kvci_mamba2_operator,
    .ffn = kvci_mamba2_ffn,
    .state_shapes = mamba2_states,
};
