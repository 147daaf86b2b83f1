/* Qwen3-Next (Qwen3NextConfig, transformers 5) and Qwen3.5's text model (qwen3_5_text, Qwen3_5TextConfig: the same
 * layers with the Gated DeltaNet's projections apart, a dense MLP; its multimodal rope reduces to the plain one on
 * text positions; Qwen3.5-MoE's, qwen3_5_moe_text, with routed experts on every layer; both also as the text models of
 * their multimodal wrappers, qwen3_5 and qwen3_5_moe): Gated DeltaNet layers (gated_delta.c) beside gated
 * full-attention layers (every full_attention_interval-th, or layer_types), zero-centred (1 + w) RMSNorms, partial
 * rotary, and a softmax-routed MoE with a sigmoid-gated shared expert (Qwen2-MoE's) on the sparse layers. Its kinds and
 * state shapes are the planner's too. OLMo Hybrid (olmo_hybrid) runs on these layers (parse_olmo_hybrid). Defaults as
 * Qwen3NextConfig's. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

static bool is_olmo_hybrid(const kvc_hparams *hp) {
    return hp->model_type != NULL && strcmp(hp->model_type, "olmo_hybrid") == 0;
}

/* Without layer_types: every full_attention_interval-th layer full. OLMo Hybrid (OlmoHybridConfig's rule): layer i
 * full when i % 4 == 3, the last one when that gives none. Lara Mini (LaraMiniConfig's): linear, sliding, linear,
 * full, sliding, repeated. */
static kvc_status qwen3_next_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    int64_t interval = 4;
    bool have = false;
    if (is_olmo_hybrid(ctx->hp)) {
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = i % 4 == 3 ? KVC_LK_FULL : KVC_LK_STATE;
        if (ctx->n_layers < 4) kinds[ctx->n_layers - 1] = KVC_LK_FULL;
        return KVC_OK;
    }
    if (ctx->hp->model_type != NULL && strcmp(ctx->hp->model_type, "lara_mini") == 0) {
        static const kvc_layer_kind LARA[5] = {KVC_LK_STATE, KVC_LK_SLIDING, KVC_LK_STATE, KVC_LK_FULL, KVC_LK_SLIDING};
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = LARA[i % 5]; /* LaraMiniConfig's released pattern */
        return KVC_OK;
    }
    KVC_TRY(kvci_json_int(&ctx->hp->cfg, "full_attention_interval", 1, KVC_HP_MAX_LAYERS, &interval, &have));
    if (!have) kvci_family_warn(ctx, "layer_types and full_attention_interval absent: every 4th layer full assumed");
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = (i + 1) % interval == 0 ? KVC_LK_FULL : KVC_LK_STATE;
    return KVC_OK;
}

/* layer_types, or the default kinds; OLMo Hybrid's (OlmoHybridModel) only linear_attention and full_attention, as
 * its forward has masks of these two kinds alone (another fails there), at least one of each (OlmoHybridConfig's
 * validate_architecture). */
static kvc_status qwen3_next_layer_list(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given) {
    KVC_TRY(kvci_family_layer_types(ctx, kinds, given));
    if (!is_olmo_hybrid(ctx->hp)) return KVC_OK;
    const char *doc = ctx->hp->cfg.doc;
    const cJSON *lt = *given ? kvci_json_find(&ctx->hp->cfg, "layer_types")->child : NULL;
    for (int64_t i = 0; lt != NULL; lt = lt->next, i++) /* strings (kvci_family_layer_types) */
        if (strcmp(lt->valuestring, "linear_attention") != 0 && strcmp(lt->valuestring, "full_attention") != 0)
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_types[%lld] \"%s\" is not run by olmo_hybrid (linear_attention or "
                             "full_attention)",
                             doc, (long long)i, lt->valuestring);
    if (!*given) KVC_TRY(qwen3_next_kinds(ctx, kinds));
    *given = true;
    bool state = false, attn = false;
    for (int64_t i = 0; i < ctx->n_layers; i++) state |= kinds[i] == KVC_LK_STATE, attn |= kinds[i] == KVC_LK_FULL;
    if (!state || !attn)
        return kvci_fail(KVC_EINVAL,
                         "%s: layer_types: olmo_hybrid needs a linear_attention layer and a full_attention "
                         "layer at least (OlmoHybridConfig refuses it)",
                         doc);
    return KVC_OK;
}

/* A Gated DeltaNet layer keeps the last linear_conv_kernel_dim - 1 inputs of its conv channels (q, k and v side by
 * side: 2 x key heads x key dim + value heads x value dim), all the next token's convolution reads besides its own
 * input, as vLLM keeps it and the runtime stores it (transformers' cache holds one column more, never read), and a
 * key dim x value dim recurrent state per value head. Absent sizes take the defaults the runtime's parse takes. */
static kvc_status gdn_sizes(const kvc_hparams *hp, int64_t hidden_size, int64_t out[5]) {
    int64_t def[] = {16, 32, 128, 128, 4}; /* the config classes' (Qwen3-Next's and Qwen3.5's alike) */
    const char *names[] = {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                           "linear_value_head_dim", "linear_conv_kernel_dim"};
    for (int i = 0; i < 5; i++) {
        if (is_olmo_hybrid(hp) && i < 4) { /* OlmoHybridConfig's: heads, heads, int(0.75 H / nk), 2 dk */
            const int64_t heads = hp->n_heads > 0 ? hp->n_heads : 1;
            def[i] = i < 2 ? heads : i == 2 ? (int64_t)(0.75 * (double)hidden_size / (double)out[0]) : 2 * out[2];
            if (def[i] < 1) def[i] = 1; /* hidden_size absent: the key is then required in effect */
        }
        KVC_TRY(kvci_family_opt_int(&hp->cfg, names[i], def[i], i == 4 ? 2 : 1, KVC_HP_MAX_DIM, &out[i]));
    }
    return KVC_OK;
}

static kvc_status qwen3_next_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    int64_t z[5], nk_r = 0, nv_r = 0;
    KVC_TRY(gdn_sizes(hp, hidden_size, z));
    const int64_t nk = z[0], nv = z[1], dk = z[2], dv = z[3], k = z[4];
    KVC_TRY(kvci_family_split_tp(hp, "linear_num_key_heads", nk, tp, &nk_r));
    KVC_TRY(kvci_family_split_tp(hp, "linear_num_value_heads", nv, tp, &nv_r));
    *s = (kvc_state_shapes){.n = 2,
                            .names = {"conv_state", "recurrent_state"},
                            .n_shape = {2, 3},
                            .shape = {{2 * nk_r * dk + nv_r * dv, k - 1}, {nv_r, dk, dv}}};
    return KVC_OK;
}

/* Qwen3.5's types: the text models and their multimodal wrappers (read as their text model when text_config names
 * no model_type); the MoE ones (*_moe*) route every layer. */
static bool is_qwen3_5(const char *mt) { return strncmp(mt, "qwen3_5", 7) == 0; }
static bool is_qwen3_5_moe(const char *mt) { return strncmp(mt, "qwen3_5_moe", 11) == 0; }

/* The routed block: num_experts of moe_intermediate_size (512), num_experts_per_tok, the shared expert of
 * shared_expert_intermediate_size (512) behind its sigmoid gate. Qwen3-Next: 512 experts (0: every layer dense), 10
 * per token, norm_topk_prob (true), on the layers of decoder_sparse_step not in mlp_only_layers. Qwen3.5-MoE
 * (Qwen3_5MoeTextConfig): 256 experts (at least 1), 8 per token, always renormalised, on every layer (its class reads
 * none of the other three keys); the dense width is not read (no layer has the MLP) and set to the experts'. */
static kvc_status parse_moe(const kvc_json_obj *c, bool q35, kvc_model_config *cfg) {
    KVC_TRY(kvci_family_opt_int(c, "num_experts", q35 ? 256 : 512, q35 ? 1 : 0, KVC_HP_MAX_EXPERTS,
                                &cfg->n_routed_experts));
    if (cfg->n_routed_experts == 0) return KVC_OK; /* layer_moe stays false */
    KVC_TRY(
        kvci_family_opt_int(c, "num_experts_per_tok", q35 ? 8 : 10, 1, cfg->n_routed_experts, &cfg->experts_per_tok));
    KVC_TRY(kvci_family_opt_int(c, "moe_intermediate_size", 512, 1, KVC_HP_MAX_WIDTH, &cfg->moe_intermediate_size));
    KVC_TRY(kvci_family_opt_int(c, "shared_expert_intermediate_size", 512, 1, KVC_HP_MAX_WIDTH,
                                &cfg->shared_expert_intermediate_size));
    if (!q35) {
        KVC_TRY(kvci_family_opt_bool(c, "norm_topk_prob", true, &cfg->norm_topk_prob));
        return kvci_family_qwen_moe_layers(c, cfg);
    }
    cfg->norm_topk_prob = true;
    cfg->intermediate_size = cfg->moe_intermediate_size;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    return KVC_OK;
}

/* A Qwen3.5 wrapper (Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration): its text model under
 * text_config (without it transformers builds its default text model: refused), the head tied by the top level's
 * tie_word_embeddings alone (false when absent; text_config's is ignored, as the wrapper's class does). */
static kvc_status parse_wrapper(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj root = {.obj = hp->doc, .doc = hp->cfg.doc, .path = ""};
    KVC_TRY(kvci_family_need_text_config(hp, cfg->model_type));
    return kvci_family_opt_bool(&root, "tie_word_embeddings", false, &cfg->tie_word_embeddings);
}

/* OLMo Hybrid (OlmoHybridConfig): OLMo 3's attention layers (post-norms, q_norm / k_norm over the whole projection,
 * no output gate, attention_bias on q, k, v and o, never sliding; no RoPE at all when rope_theta is null: rope_none)
 * and pre-norm Gated DeltaNet layers with Qwen3.5's projections (q, k and v apart in its checkpoints: weights.c),
 * beta times 2 under linear_allow_neg_eigval (true), the gated norm's eps 1e-5 (OlmoHybridGatedDeltaNet's, whatever
 * rms_norm_eps says); plain RMSNorms (w), a dense MLP. Sizes default as OlmoHybridConfig's. */
static kvc_status parse_olmo_hybrid(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    bool bias = false;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias;
    cfg->qk_norm = cfg->qk_norm_whole = cfg->post_norms = cfg->gdn_pre_norms = true;
    cfg->gdn_split_proj = true;
    cfg->gdn_norm_eps = 1e-5;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = hp->rope_none;
    KVC_TRY(kvci_family_opt_bool(c, "linear_allow_neg_eigval", true, &cfg->gdn_neg_eigval));
    int64_t z[5];
    KVC_TRY(gdn_sizes(hp, cfg->hidden_size, z));
    cfg->gdn_k_heads = z[0], cfg->gdn_v_heads = z[1], cfg->gdn_k_dim = z[2], cfg->gdn_v_dim = z[3];
    cfg->gdn_conv_kernel = z[4];
    return KVC_OK;
}

static kvc_status parse_qwen3_next(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    if (strcmp(cfg->model_type, "olmo_hybrid") == 0) return parse_olmo_hybrid(hp, cfg);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qk_norm = cfg->gemma_norms = cfg->attn_output_gate = true;
    bool bias = false;
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias;
    KVC_TRY(kvci_family_opt_int(c, "linear_num_key_heads", 16, 1, KVC_HP_MAX_DIM, &cfg->gdn_k_heads));
    KVC_TRY(kvci_family_opt_int(c, "linear_num_value_heads", 32, 1, KVC_HP_MAX_DIM, &cfg->gdn_v_heads));
    KVC_TRY(kvci_family_opt_int(c, "linear_key_head_dim", 128, 1, KVC_HP_MAX_DIM, &cfg->gdn_k_dim));
    KVC_TRY(kvci_family_opt_int(c, "linear_value_head_dim", 128, 1, KVC_HP_MAX_DIM, &cfg->gdn_v_dim));
    KVC_TRY(kvci_family_opt_int(c, "linear_conv_kernel_dim", 4, 2, KVC_HP_MAX_DIM, &cfg->gdn_conv_kernel));
    cfg->gdn_split_proj = is_qwen3_5(cfg->model_type);
    const bool wrapped = hp->cfg.obj != hp->doc || strcmp(cfg->model_type, "qwen3_5") == 0 ||
                         strcmp(cfg->model_type, "qwen3_5_moe") == 0;
    if (wrapped) KVC_TRY(parse_wrapper(hp, cfg));
    if (!cfg->gdn_split_proj) return parse_moe(c, false, cfg);
    return is_qwen3_5_moe(cfg->model_type) ? parse_moe(c, true, cfg) : KVC_OK; /* Qwen3.5's dense MLP */
}

/* The value heads share the key heads in equal groups (transformers' repeat_interleave). */
static kvc_status check_qwen3_next(const kvc_model_config *cfg, const char *doc) {
    if (cfg->gdn_v_heads % cfg->gdn_k_heads == 0) return KVC_OK;
    return kvci_fail(KVC_EINVAL, "%s: linear_num_value_heads %lld is not a multiple of linear_num_key_heads %lld", doc,
                     (long long)cfg->gdn_v_heads, (long long)cfg->gdn_k_heads);
}

/* Gated DeltaNet on its layers, else the gated GQA attention. */
static kvc_status qwen3_next_operator(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_gdn[l] ? kvci_gated_delta(s, l) : kvci_attn_gqa(s, l);
}

/* The routed experts (with the gated shared expert) on the sparse layers, else the dense MLP. */
static kvc_status qwen3_next_ffn(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_moe[l] ? kvci_ffn_softmax_moe(s, l) : kvci_fwd_dense_mlp(s, l);
}

static const kvc_family_alias QWEN3_NEXT[] = {
    {"qwen3_next", "Qwen3NextForCausalLM", "qwen3_next", true},
    {"qwen3_5_text", "Qwen3_5ForCausalLM", "qwen3_5_text", true},
    {"qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", true},
    {"qwen3_5", "Qwen3_5ForConditionalGeneration", "qwen3_5_text", true},
    {"qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe_text", true},
    {"olmo_hybrid", "OlmoHybridForCausalLM", "olmo_hybrid", true},
    /* planned only: indexed_attention layers (QSA indexer), hyper-connections, n-gram embeddings (family.c) */
    {"qwen4_exp_text", "Qwen4ExpForCausalLM", "qwen4_exp_text", false},
    {"qwen4_exp", "Qwen4ExpForConditionalGeneration", "qwen4_exp_text", false},
    /* planned only: Qwen3-Next's Gated DeltaNet state and its own attention (q/k norms, sliding layers) */
    {"lara_mini", "LaraMiniForCausalLM", "lara_mini", false}};

const kvc_family_desc kvc_family_qwen3_next = {
    .id = KVC_FAMILY_QWEN3_NEXT,
    .name = "qwen3_next",
    .aliases = QWEN3_NEXT,
    .n_aliases = 9,
    .parse = parse_qwen3_next,
    .check = check_qwen3_next,
    .default_kinds = qwen3_next_kinds,
    .attention = qwen3_next_operator,
    .ffn = qwen3_next_ffn,
    .state_shapes = qwen3_next_states,
    .layer_list = qwen3_next_layer_list,
};
