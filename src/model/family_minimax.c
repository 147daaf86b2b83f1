/* MiniMax-Text-01 / M1 (MiniMaxForCausalLM, MiniMaxConfig of transformers 5.25; model_type minimax): lightning
 * attention layers (lightning.c, layer_types "linear_attention") beside softmax attention layers ("full_attention",
 * GQA with RoPE over whole heads), each followed by Mixtral's experts (block_sparse_moe, softmax router, top
 * num_experts_per_tok of num_local_experts, renormalised, of intermediate_size). Each sub-layer's residual is its
 * normed input, scaled by the config's factors: h = alpha norm(h) + beta f(norm(h)) (forward.c, residual_normed).
 * Without layer_types MiniMaxConfig alternates: layer i full when i is even, else lightning. The remote-code configs
 * (model_type minimax_text_01, minimax_m1) mark the layers by attn_type_list instead (1 softmax, 0 lightning); they are
 * planned only. Refused by name: a sliding_window (MiniMaxAttention would slide every full layer). */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

static bool is_hf_minimax(const kvc_hparams *hp) {
    return (hp->model_type != NULL && strcmp(hp->model_type, "minimax") == 0) ||
           (hp->architecture != NULL && strcmp(hp->architecture, "MiniMaxForCausalLM") == 0);
}

/* Without layer_types: MiniMaxConfig's alternation; the remote-code configs' attn_type_list (one 0/1 per layer). */
static kvc_status minimax_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    if (is_hf_minimax(ctx->hp)) {
        for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = i % 2 == 0 ? KVC_LK_FULL : KVC_LK_STATE;
        return KVC_OK;
    }
    const cJSON *list = NULL;
    KVC_TRY(kvci_json_array(&ctx->hp->cfg, "attn_type_list", KVC_HP_MAX_LAYERS, &list, NULL));
    return kvci_family_flag_kinds(ctx, "attn_type_list", list, KVC_LK_STATE, KVC_LK_FULL, kinds);
}

/* layer_types as MiniMaxModel reads it: full_attention or linear_attention, the two kinds its masks have. */
static kvc_status minimax_layer_list(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given) {
    KVC_TRY(kvci_family_layer_types(ctx, kinds, given));
    const cJSON *list = *given ? kvci_json_find(&ctx->hp->cfg, "layer_types") : NULL;
    int64_t i = 0;
    for (const cJSON *e = list != NULL ? list->child : NULL; e != NULL; e = e->next, i++)
        if (strcmp(e->valuestring, "full_attention") != 0 && strcmp(e->valuestring, "linear_attention") != 0)
            return kvci_fail(KVC_EINVAL, "%s: layer_types[%lld] \"%.64s\" is not full_attention or linear_attention",
                             ctx->hp->cfg.doc, (long long)i, e->valuestring);
    return KVC_OK;
}

/* A lightning attention layer keeps one head_dim x head_dim key-value state per head (the runtime's too). */
static kvc_status minimax_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    (void)hidden_size;
    int64_t hdim = 0, heads_r = 0;
    KVC_TRY(kvci_hparams_head_dim(hp, &hdim));
    KVC_TRY(kvci_family_split_tp(hp, "num_attention_heads", hp->n_heads, tp, &heads_r));
    *s = (kvc_state_shapes){.n = 1, .names = {"kv_state"}, .n_shape = {3}, .shape = {{heads_r, hdim, hdim}}};
    return KVC_OK;
}

/* The runtime's keys: the experts (8 of top 2 when absent), the six residual factors (1 when absent), block_size
 * (read for its range only: the blocks of transformers' prefill change no result), no sliding window. */
static kvc_status parse_minimax(const kvc_hparams *hp, kvc_model_config *cfg) {
    static const char *const experts_n[KVC_HP_ALIASES] = {"num_local_experts", "num_experts"};
    static const char *const top_k[KVC_HP_ALIASES] = {"num_experts_per_tok"};
    static const char *const alpha_n[3] = {"full_attn_alpha_factor", "linear_attn_alpha_factor", "mlp_alpha_factor"};
    static const char *const beta_n[3] = {"full_attn_beta_factor", "linear_attn_beta_factor", "mlp_beta_factor"};
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range factor = {-KVC_HP_MAX_FACTOR, KVC_HP_MAX_FACTOR, false};
    int64_t window = 0, block = 0;
    bool qwen_rule = false;
    KVC_TRY(kvci_hparams_window(hp, &window, &qwen_rule));
    if (window > 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: minimax with sliding_window %lld is not supported (MiniMaxAttention slides every "
                         "full_attention layer; the runtime runs them full)",
                         c->doc, (long long)window);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* head_dim, else hidden_size / num_attention_heads */
    KVC_TRY(kvci_family_opt_int(c, "block_size", 256, 1, KVC_HP_MAX_DIM, &block));
    KVC_TRY(kvci_family_expert_counts(c, experts_n, 8, top_k, 2, cfg));
    cfg->moe_intermediate_size = cfg->intermediate_size;
    cfg->norm_topk_prob = true;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_moe[l] = true;
    cfg->residual_normed = true;
    for (int i = 0; i < 3; i++) {
        KVC_TRY(kvci_family_opt_num(c, alpha_n[i], 1.0, factor, &cfg->residual_alpha[i]));
        KVC_TRY(kvci_family_opt_num(c, beta_n[i], 1.0, factor, &cfg->residual_beta[i]));
    }
    return KVC_OK;
}

/* Lightning attention on its layers, else GQA. */
static kvc_status minimax_operator(const kvc_fwd_step *s, int64_t l) {
    return s->m->cfg.layer_lightning[l] ? kvci_lightning(s, l) : kvci_attn_gqa(s, l);
}

static const kvc_family_alias MINIMAX[] = {{"minimax", "MiniMaxForCausalLM", "minimax", true},
                                           {"minimax_text_01", "MiniMaxText01ForCausalLM", "minimax_text_01", false},
                                           {"minimax_m1", "MiniMaxM1ForCausalLM", "minimax_m1", false}};

const kvc_family_desc kvc_family_minimax = {
    .id = KVC_FAMILY_MINIMAX,
    .name = "minimax",
    .aliases = MINIMAX,
    .n_aliases = 3,
    .rms_norm_eps = 1e-5,
    .parse = parse_minimax,
    .default_kinds = minimax_kinds,
    .layer_list = minimax_layer_list,
    .attention = minimax_operator,
    .ffn = kvci_ffn_softmax_moe,
    .state_shapes = minimax_states,
};
