/* The runtime keys of the classic decoder types the dense family runs (kvci_family_parse_classic): Phi (1, 1.5,
 * 2), GPT-NeoX (Pythia, GPT-NeoX-20B), GPT-2, GPT-BigCode (StarCoder 1, SantaCoder), OPT, Falcon, GPT-J, Nemotron,
 * BLOOM, MPT, GPT-Neo, CodeGen, BioGPT, XGLM, GPT-1 (openai-gpt), CTRL and GPT-NeoX Japanese. Each is a dense model of
 * LayerNorms with bias, an ungated MLP with biases and RoPE on part of each head (GPT-2, GPT-BigCode, OPT, GPT-Neo,
 * BioGPT, GPT-1: learned positions instead; XGLM, CTRL: sinusoid tables; BLOOM, MPT, Falcon with alibi: ALiBi); their
 * checkpoints' own module names are ckpt_names.c's. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

/* The activation of a classic type's MLP, config key `key` (`def` when absent): gelu (GELU by erf), relu, relu2
 * (relu squared), or GELU's tanh approximation under transformers' names for it (gelu_new, gelu_fast,
 * gelu_pytorch_tanh: the same function); any other is refused by name. */
kvc_status kvci_family_gelu_act(const kvc_json_obj *c, const char *key, const char *type, const char *def,
                                kvc_model_config *cfg) {
    const char *act = def;
    bool have = false;
    KVC_TRY(kvci_json_str(c, key, KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu") == 0)
        cfg->mlp_act = KVC_MLP_GELU;
    else if (strcmp(act, "relu") == 0)
        cfg->mlp_act = KVC_MLP_RELU;
    else if (strcmp(act, "relu2") == 0)
        cfg->mlp_act = KVC_MLP_RELU2;
    else if (strcmp(act, "gelu_new") == 0 || strcmp(act, "gelu_fast") == 0 || strcmp(act, "gelu_pytorch_tanh") == 0)
        cfg->mlp_act = KVC_MLP_GELU_TANH;
    else
        return kvci_fail(
            KVC_EINVAL,
            "%s: %s \"%s\" is not supported (%s: gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu, relu2)", c->doc,
            key, act, type);
    return KVC_OK;
}

/* Phi (microsoft/phi-1, phi-1_5, phi-2; PhiForCausalLM): one LayerNorm with bias (layer_norm_eps, 1e-5 when
 * absent) feeding the attention and the MLP side by side (a parallel block), q/k/v and dense (o_proj) with
 * biases, RoPE half-split on head_dim * partial_rotary_factor channels (0.5 when absent, PhiConfig's; hparams.c),
 * MLP fc2(act(fc1(x))) with biases (hidden_act, gelu_new when absent), a final LayerNorm with bias and the head with a
 * bias of its own; untied by default. With qk_layernorm (false when absent) a LayerNorm with bias over each q and k
 * head before RoPE, one weight and bias [D] shared by the heads (self_attn.q_layernorm / k_layernorm: Persimmon's). */
static kvc_status parse_phi(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_family_opt_bool(c, "qk_layernorm", false, &cfg->qk_norm));
    KVC_TRY(kvci_family_gelu_act(c, "hidden_act", "phi", "gelu_new", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = cfg->head_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = cfg->parallel_block = true;
    return kvci_family_opt_num(c, "layer_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* Persimmon (adept/persimmon-8b-base, -chat; PersimmonForCausalLM): LayerNorms with bias (layer_norm_eps, 1e-5 when
 * absent), q/k/v fused per head in self_attn.query_key_value ([heads, 3, D], GPT-NeoX's layout; split at load) and
 * dense (o_proj), all with biases; with qk_layernorm (true when absent) a LayerNorm with bias over each q and k head
 * before RoPE, one weight and bias [D] shared by the heads (self_attn.q_layernorm / k_layernorm); RoPE half-split on
 * head_dim * partial_rotary_factor channels (0.5 when absent, hparams.c); the MLP dense_4h_to_h(act(dense_h_to_4h(x)))
 * with biases, act by hidden_act (relu2 when absent); a final LayerNorm with bias; the head without one, untied.
 * head_dim is always hidden_size / num_attention_heads, one KV head per head (hparams.c). */
static kvc_status parse_persimmon(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_family_gelu_act(c, "hidden_act", "persimmon", "relu2", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "qk_layernorm", true, &cfg->qk_norm));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    return kvci_family_opt_num(c, "layer_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* GPT-NeoX (EleutherAI/pythia-*, gpt-neox-20b; GPTNeoXForCausalLM): LayerNorms with bias (layer_norm_eps, 1e-5),
 * q/k/v fused per head in attention.query_key_value (split at load, weights.c) and dense (o_proj), their biases by
 * attention_bias (true when absent); RoPE half-split on head_dim * rotary_pct channels (0.25) at theta
 * rotary_emb_base (1e4) unless the rope dict says (hparams.c); the MLP dense_4h_to_h(act(dense_h_to_4h(x))) with
 * biases, act by hidden_act: gelu (erf, the default), or gelu_new / gelu_fast / gelu_pytorch_tanh (the tanh
 * form); with use_parallel_residual (true when absent) x + attn(ln1(x)) + mlp(ln2(x)), else the sequential
 * pre-norm block; the head embed_out, untied by default. */
static kvc_status parse_gpt_neox(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool bias = true;
    KVC_TRY(kvci_family_gelu_act(c, "hidden_act", "gpt_neox", "gelu", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", true, &bias));
    KVC_TRY(kvci_family_opt_bool(c, "use_parallel_residual", true, &cfg->parallel_block));
    cfg->parallel_mlp_norm = cfg->parallel_block;
    cfg->qkv_bias = cfg->o_bias = bias, cfg->mlp_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    return kvci_family_opt_num(c, "layer_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* GPT-NeoX Japanese (abeja/gpt-neox-japanese-2.7b; GPTNeoXJapaneseForCausalLM): GPT-NeoX's q/k/v fused per head in
 * attention.query_key_value (split at load, weights.c) and dense (o_proj) without biases, but the last layer's
 * attention.dense_bias [H] added to its output (that layer's o_proj bias, weights.c); RoPE half-split on head_dim *
 * partial_rotary_factor channels (rotary_pct, 1 when absent) at rope_theta (rotary_emb_base, 1e4) unless the rope
 * dict says (hparams.c); sequential pre-norm blocks of LayerNorms with bias (layer_norm_eps, 1e-5); the MLP
 * dense_4h_to_h(act(dense_h_to_4h(x))) without biases, hidden_size x intermediate_multiple_size (4) wide (config.c),
 * act by hidden_act (gelu; also kvci_family_gelu_act's others, silu and swish); the final LayerNorm; the head
 * embed_out, tied by default. */
static kvc_status parse_gpt_neox_japanese(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const char *act = "gelu";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0) /* ACT2FN's, beside kvci_family_gelu_act's */
        cfg->mlp_act = KVC_MLP_SILU;
    else
        KVC_TRY(kvci_family_gelu_act(c, "hidden_act", "gpt_neox_japanese", "gelu", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* GPT-2 (openai-community/gpt2*, GPT2LMHeadModel) and GPT-BigCode (bigcode/starcoder, santacoder;
 * GPTBigCodeForCausalLM): learned absolute positions (wpe, n_positions rows, 1024 when absent) added to the token
 * embeddings and no RoPE, layers with biases (GPT-2's Conv1D: weights stored [in, out]; GPT-BigCode's nn.Linear),
 * q/k/v fused in c_attn, LayerNorms with bias (layer_norm_epsilon, 1e-5), the MLP c_proj(act(c_fc(x))) of n_inner
 * (4 x n_embd when absent or null, config.c) by activation_function (gelu_new when absent; GPT-BigCode's
 * gelu_pytorch_tanh, the same function), tied by default. GPT-BigCode's multi_query (true when absent) gives one KV
 * head, else as many as heads (hparams.c; c_attn then holds [q, k, v] or [heads, 3, D], weights.c). GPT-2's
 * scale_attn_by_inverse_layer_idx divides layer l's softmax scale by l + 1 (attn_scale_inverse_layer); its
 * reorder_and_upcast_attn (scores in float32, scaled before the product) is taken: the runtime's scores are float32
 * already, equal to rounding. scale_attn_weights false (both classes): the softmax is not scaled by head_dim^-1/2
 * (attention_multiplier 1; GPT-2's layer division still applies). Refused by name: scale_attn_by_inverse_layer_idx
 * and reorder_and_upcast_attn true for GPT-BigCode (whose class has neither), and add_cross_attention. */
static kvc_status parse_gpt2(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const char *type = cfg->model_type;
    const bool bigcode = strcmp(type, "gpt_bigcode") == 0;
    static const struct {
        const char *key;
        bool refused; /* the value refused; the other is the default */
    } flags[] = {
        {"add_cross_attention", true}, {"scale_attn_by_inverse_layer_idx", true}, {"reorder_and_upcast_attn", true}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0] - (bigcode ? 0 : 2); i++) {
        bool v = !flags[i].refused;
        KVC_TRY(kvci_family_opt_bool(c, flags[i].key, v, &v));
        if (v == flags[i].refused)
            return kvci_fail(KVC_EINVAL, "%s: %s with %s %s is not supported", c->doc, type, flags[i].key,
                             v ? "true" : "false");
    }
    bool scaled = true;
    KVC_TRY(kvci_family_opt_bool(c, "scale_attn_weights", true, &scaled));
    if (!scaled) cfg->attention_multiplier = 1.0; /* the classes' scaling 1 */
    if (!bigcode) {
        bool upcast = false;
        KVC_TRY(kvci_family_opt_bool(c, "scale_attn_by_inverse_layer_idx", false, &cfg->attn_scale_inverse_layer));
        KVC_TRY(kvci_family_opt_bool(c, "reorder_and_upcast_attn", false, &upcast)); /* read: must be a bool */
    }
    KVC_TRY(kvci_family_gelu_act(c, "activation_function", type, bigcode ? "gelu_pytorch_tanh" : "gelu_new", cfg));
    KVC_TRY(
        kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads; BigCode's KV heads by multi_query: hparams.c */
    cfg->pos_learned = true;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps);
}

/* OPT (facebook/opt-*, OPTForCausalLM): learned absolute positions with OPT's offset of 2 (embed_positions holds
 * max_position_embeddings + 2 rows; row position + 2), no RoPE, LayerNorms (eps 1e-5, fixed: nn.LayerNorm's) with
 * weight and bias (layer_norm_elementwise_affine, true when absent; false: neither, OLMo's weightless norms),
 * q/k/v/out_proj and fc1/fc2 biases by enable_bias (true), the MLP fc2(act(fc1(x))) of ffn_dim (config.c) by
 * activation_function (relu when absent), tied by default. do_layer_norm_before (true): pre-norm blocks and a final
 * LayerNorm unless _remove_final_layer_norm (false); false (OPT-350m): post-norm blocks, the norm after each
 * residual add, and no final norm. word_embed_proj_dim (null or absent: hidden_size) other than hidden_size
 * (OPT-350m's 512 of 1024): embeddings and head of that width, project_in / project_out between it and hidden. */
static kvc_status parse_opt(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    bool pre_norm = true, remove_final = false, affine = true, bias = true;
    int64_t proj = cfg->hidden_size;
    KVC_TRY(kvci_family_opt_bool(c, "do_layer_norm_before", true, &pre_norm));
    KVC_TRY(kvci_family_opt_bool(c, "_remove_final_layer_norm", false, &remove_final));
    KVC_TRY(kvci_family_opt_int(c, "word_embed_proj_dim", cfg->hidden_size, 1, KVC_HP_MAX_WIDTH, &proj));
    KVC_TRY(kvci_family_gelu_act(c, "activation_function", "opt", "relu", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    KVC_TRY(kvci_family_opt_bool(c, "layer_norm_elementwise_affine", true, &affine));
    KVC_TRY(kvci_family_opt_bool(c, "enable_bias", true, &bias));
    cfg->pos_learned = true, cfg->pos_offset = 2;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = bias;
    cfg->layer_norm = cfg->mlp_plain = true, cfg->norm_bias = affine, cfg->norm_weightless = !affine;
    cfg->norm_after_add = !pre_norm, cfg->final_norm_none = !pre_norm || remove_final;
    cfg->embed_dim = proj != cfg->hidden_size ? proj : 0;
    cfg->rms_norm_eps = 1e-5;
    return kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}

/* GPT-1 (openai-community/openai-gpt; OpenAIGPTLMHeadModel): GPT-2's Conv1D layers under transformer. ([in, out] with
 * biases: q/k/v fused in attn.c_attn, attn.c_proj, mlp.c_fc / mlp.c_proj) and learned positions (positions_embed,
 * n_positions rows, 512 when absent) added to the token embeddings (tokens_embed), in post-norm blocks: ln_1 after
 * the attention's residual add, ln_2 after the MLP's (LayerNorms with bias, layer_norm_epsilon, 1e-5), no final
 * norm; the MLP 4 x n_embd wide (fixed, config.c) by afn: gelu (transformers' table maps it to gelu_new, the tanh
 * form; the default), relu, silu or swish (silu), any other refused by name (transformers has no other); tied by
 * default. */
static kvc_status parse_openai_gpt(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const char *act = "gelu";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "afn", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu") == 0)
        cfg->mlp_act = KVC_MLP_GELU_TANH;
    else if (strcmp(act, "relu") == 0)
        cfg->mlp_act = KVC_MLP_RELU;
    else if (strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0)
        cfg->mlp_act = KVC_MLP_SILU;
    else
        return kvci_fail(KVC_EINVAL, "%s: afn \"%s\" is not supported (openai-gpt: gelu, relu, silu, swish)", c->doc,
                         act);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    cfg->pos_learned = true;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    cfg->norm_after_add = cfg->final_norm_none = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps);
}

/* CTRL (Salesforce/ctrl; CTRLLMHeadModel): the token embeddings (w) times sqrt(n_embd) as an f32 plus the rows of
 * CTRL's sinusoid table (pos_sinusoid_ctrl; n_positions rows, 256 when absent, which the checkpoint does not hold),
 * pre-norm blocks of LayerNorms with bias at eps 1e-6 (fixed in its layers) and a final LayerNorm at
 * layer_norm_epsilon (1e-6 when absent), Wq / Wk / Wv / dense and the MLP ffn.2(relu(ffn.0(x))) of dff (8192 when
 * absent, config.c), all with biases; the head with a bias of its own, tied by default. */
static kvc_status parse_ctrl(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, true};
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    cfg->embed_scale = (float)sqrt((double)cfg->hidden_size);
    cfg->pos_learned = cfg->pos_sinusoidal = cfg->pos_sinusoid_ctrl = true, cfg->pos_zero_row = -1;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->mlp_act = KVC_MLP_RELU;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = cfg->head_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    cfg->rms_norm_eps = 1e-6;
    KVC_TRY(kvci_family_opt_num(c, "layer_norm_epsilon", 1e-6, eps, &cfg->final_norm_eps));
    return kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}

/* ALiBi instead of positions on every layer of cfg: BLOOM's slopes (bias_max 0) or MPT's, the bias before the
 * softmax scale (in_scale) or after. */
static void alibi_layers(kvc_model_config *cfg, bool in_scale, double bias_max) {
    cfg->alibi = true, cfg->alibi_in_scale = in_scale, cfg->alibi_bias_max = bias_max;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
}

/* Falcon (tiiuae/falcon-7b, 40b, 180b; FalconForCausalLM): q/k/v fused in self_attention.query_key_value grouped by KV
 * head (weights.c): multi_query (true when absent) one KV head, new_decoder_architecture (false) num_kv_heads of
 * them, neither as many as heads (hparams.c); RoPE half-split on the whole head (rope_theta, 1e4); LayerNorms with
 * bias (layer_norm_epsilon, 1e-5); parallel_attn (true): attention and MLP side by side on one LayerNorm, or, with
 * new_decoder_architecture and num_ln_in_parallel_attn 2 (its default there), each on its own (ln_attn, ln_mlp);
 * false: the sequential pre-norm block; q/k/v, dense and the MLP dense_4h_to_h(act(dense_h_to_4h(x))) of
 * ffn_hidden_size (4 x hidden when absent or null, config.c) with biases by bias (false), act by activation (gelu);
 * tied by default. With alibi (false when absent; Falcon-RW) no RoPE: BLOOM's slopes, the bias added before the
 * 1/sqrt(head_dim) scale as FalconAttention adds it (the operator's slopes times the scale). Refused by name the
 * combinations transformers cannot run: new_decoder_architecture with parallel_attn false, two parallel norms
 * without it, num_kv_heads other than the heads without multi_query or it. */
static kvc_status parse_falcon(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool alibi = false, new_arch = false, mq = true, parallel = true, bias = false, have_ln = false;
    int64_t n_ln = 0;
    KVC_TRY(kvci_family_opt_bool(c, "alibi", false, &alibi));
    KVC_TRY(kvci_family_opt_bool(c, "new_decoder_architecture", false, &new_arch));
    KVC_TRY(kvci_family_opt_bool(c, "multi_query", true, &mq));
    KVC_TRY(kvci_family_opt_bool(c, "parallel_attn", true, &parallel));
    KVC_TRY(kvci_family_opt_bool(c, "bias", false, &bias));
    KVC_TRY(kvci_json_int(c, "num_ln_in_parallel_attn", 1, 2, &n_ln, &have_ln));
    if (!have_ln) n_ln = new_arch ? 2 : 1;
    if ((new_arch && !parallel) || (!new_arch && parallel && n_ln == 2))
        return kvci_fail(KVC_EINVAL, "%s: falcon with %s is not supported (transformers cannot run it either)", c->doc,
                         new_arch ? "new_decoder_architecture true and parallel_attn false"
                                  : "num_ln_in_parallel_attn 2 without new_decoder_architecture");
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    if (cfg->head_dim * cfg->num_heads != cfg->hidden_size)
        return kvci_fail(KVC_EINVAL, "%s: falcon head_dim %lld must be hidden_size %lld / num_attention_heads %lld",
                         c->doc, (long long)cfg->head_dim, (long long)cfg->hidden_size, (long long)cfg->num_heads);
    if (!new_arch && !mq && cfg->num_kv_heads != cfg->num_heads)
        return kvci_fail(KVC_EINVAL,
                         "%s: falcon with multi_query false needs num_kv_heads %lld equal to num_attention_heads %lld "
                         "without new_decoder_architecture (its query_key_value holds 3 x hidden_size rows)",
                         c->doc, (long long)cfg->num_kv_heads, (long long)cfg->num_heads);
    KVC_TRY(kvci_family_gelu_act(c, "activation", "falcon", "gelu", cfg));
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = bias;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    cfg->parallel_block = parallel, cfg->parallel_mlp_norm = new_arch && n_ln == 2;
    if (alibi) alibi_layers(cfg, true, 0.0);
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps);
}

/* GPT-J (EleutherAI/gpt-j-6b; GPTJForCausalLM) and CodeGen (Salesforce/codegen-*, codegen2; CodeGenForCausalLM): one
 * LayerNorm with bias (layer_norm_epsilon, 1e-5) feeding the attention and the MLP side by side (a parallel block),
 * q/k/v and out_proj without biases, RoPE on adjacent pairs of the first rotary_dim channels of each head (64 when
 * absent) at theta 1e4 (hparams.c), the MLP fc_out(act(fc_in(x))) with biases of n_inner (4 x n_embd when absent or
 * null, config.c) by activation_function (gelu_new), the final LayerNorm ln_f and the head lm_head with a bias;
 * untied by default. CodeGen fuses q/k/v in attn.qkv_proj as its 4 model-parallel shards left them (weights.c), which
 * needs n_embd to be a multiple of 4. Refused by name: rotary_dim null (transformers rotates by a table of
 * hidden_size channels then, which fits no head but a lone one) or above head_dim. */
static kvc_status parse_gptj(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const char *type = cfg->model_type;
    int64_t rd = 64;
    bool have = true;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    if (!kvci_json_missing(c, "rotary_dim")) KVC_TRY(kvci_json_int(c, "rotary_dim", 1, KVC_HP_MAX_DIM, &rd, &have));
    if (!have || rd > cfg->head_dim)
        return kvci_fail(KVC_EINVAL, "%s: %s with rotary_dim %s is not supported (at most head_dim %lld)", c->doc, type,
                         have ? "above head_dim" : "null", (long long)cfg->head_dim);
    if (strcmp(type, "codegen") == 0 && cfg->hidden_size % 4 != 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: codegen with n_embd %lld is not supported (its qkv_proj splits into 4 model-parallel "
                         "shards: a multiple of 4)",
                         c->doc, (long long)cfg->hidden_size);
    KVC_TRY(kvci_family_gelu_act(c, "activation_function", type, "gelu_new", cfg));
    cfg->qkv_bias = cfg->o_bias = false, cfg->mlp_bias = cfg->head_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = cfg->parallel_block = true;
    cfg->rope_form = KVC_ROPE_PAIRS;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps);
}

/* Nemotron (nvidia/Nemotron-4-*, Minitron; NemotronForCausalLM): Llama's names and grouped-query attention with
 * LayerNorm1P norms (LayerNorms with bias whose weight is applied as 1 + w: gemma_norms, prepare.c; norm_eps, 1e-5),
 * RoPE half-split on head_dim * partial_rotary_factor channels (0.5 when absent, NemotronConfig's; hparams.c), the
 * ungated MLP down_proj(act(up_proj(x))) by hidden_act (relu2), biases by attention_bias (q/k/v/o) and mlp_bias
 * (false), untied by default. Refused by name: num_key_value_heads absent or null (NemotronConfig leaves it None,
 * which transformers cannot run). */
static kvc_status parse_nemotron(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool attn_bias = false, mlp_bias = false;
    if (!hp->have_kv_heads)
        return kvci_fail(KVC_EINVAL,
                         "%s: nemotron without num_key_value_heads is not supported (NemotronConfig leaves it None, "
                         "which transformers cannot run)",
                         c->doc);
    KVC_TRY(kvci_family_gelu_act(c, "hidden_act", "nemotron", "relu2", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "attention_bias", false, &attn_bias));
    KVC_TRY(kvci_family_opt_bool(c, "mlp_bias", false, &mlp_bias));
    cfg->qkv_bias = cfg->o_bias = attn_bias, cfg->mlp_bias = mlp_bias;
    cfg->layer_norm = cfg->norm_bias = cfg->gemma_norms = cfg->mlp_plain = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "norm_eps", 1e-5, eps, &cfg->rms_norm_eps);
}

/* BLOOM (bigscience/bloom*, BloomForCausalLM): the embeddings normalised by word_embeddings_layernorm, LayerNorms
 * with bias (layer_norm_epsilon, 1e-5), q/k/v fused per head in self_attention.query_key_value [heads, 3, D] with
 * biases, dense (o_proj) with bias, head_dim hidden_size / n_head, the MLP dense_4h_to_h(gelu_tanh(dense_h_to_4h(x)))
 * of 4 x hidden with biases (BloomGelu: GELU's tanh form), no positions but ALiBi (BLOOM's slopes, the bias after
 * the scale as BloomAttention's baddbmm adds it), tied by default. Refused by name:
 * apply_residual_connection_post_layernorm true (the residual taken after the norm). */
static kvc_status parse_bloom(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    bool post_ln = false;
    KVC_TRY(kvci_family_opt_bool(c, "apply_residual_connection_post_layernorm", false, &post_ln));
    if (post_ln)
        return kvci_fail(KVC_EINVAL,
                         "%s: bloom with apply_residual_connection_post_layernorm true is not supported (the residual "
                         "taken after the layer's norm)",
                         c->doc);
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    cfg->mlp_act = KVC_MLP_GELU_TANH;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = cfg->embed_norm = true;
    alibi_layers(cfg, false, 0.0);
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps);
}

/* MPT (mosaicml/mpt-7b, 30b; MptForCausalLM) as transformers 5.25 builds it: LayerNorms without bias
 * (layer_norm_epsilon, 1e-5), q/k/v one after the other in attn.Wqkv clamped to +-attn_config.clip_qkv (null or 0:
 * none), out_proj and the MLP ffn.down_proj(gelu(ffn.up_proj(x))) of 4 x d_model, no biases, head_dim d_model /
 * n_heads, the softmax scale attn_config.softmax_scale (null: head_dim^-1/2), no positions but ALiBi (MPT's slopes with
 * alibi_bias_max 8; the bias after the scale), tied by default. Refused by name what MptModel would
 * ignore, so that the checkpoint's own model differs from it: attn_config.alibi false (MptModel adds ALiBi
 * anyway and builds no learned positions), qk_ln true (no q/k LayerNorms built), attn_type other than
 * multihead_attention, prefix_lm or attn_uses_sequence_id true, no_bias false (no biases built), expansion_ratio
 * other than 4 (its MLP is 4 x d_model wide), attn_config.alibi_bias_max other than 8 (MptModel calls
 * build_mpt_alibi_tensor with its default 8) and a logit_scale (not applied). */
static kvc_status parse_mpt(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false}, pos = {0.0, 3.4e38, true}, clip = {0.0, 3.4e38, false};
    kvc_json_obj attn = {.doc = c->doc};
    char path[32];
    const char *attn_type = "multihead_attention";
    bool have = false, alibi = true, qk_ln = false, prefix = false, seq_id = false, no_bias = true;
    double bias_max = 8.0, scale = 0.0;
    int64_t ratio = 4;
    const cJSON *logit_scale = kvci_json_find(c, "logit_scale");
    KVC_TRY(kvci_json_child(c, "attn_config", path, sizeof path, &attn, &have));
    KVC_TRY(kvci_family_opt_bool(&attn, "alibi", true, &alibi));
    KVC_TRY(kvci_family_opt_bool(&attn, "qk_ln", false, &qk_ln));
    KVC_TRY(kvci_family_opt_bool(&attn, "prefix_lm", false, &prefix));
    KVC_TRY(kvci_family_opt_bool(&attn, "attn_uses_sequence_id", false, &seq_id));
    KVC_TRY(kvci_json_str(&attn, "attn_type", KVC_HP_NAME_MAX, &attn_type, &have));
    KVC_TRY(kvci_family_opt_bool(c, "no_bias", true, &no_bias));
    KVC_TRY(kvci_family_opt_int(c, "expansion_ratio", 4, 1, KVC_HP_MAX_WIDTH, &ratio));
    KVC_TRY(kvci_json_num(&attn, "alibi_bias_max", pos, &bias_max, &have));
    const char *why = !alibi                                          ? "attn_config.alibi false"
                      : qk_ln                                         ? "attn_config.qk_ln true"
                      : strcmp(attn_type, "multihead_attention") != 0 ? "an attn_config.attn_type other than "
                                                                        "multihead_attention"
                      : prefix                                        ? "attn_config.prefix_lm true"
                      : seq_id                                        ? "attn_config.attn_uses_sequence_id true"
                      : !no_bias                                      ? "no_bias false"
                      : ratio != 4                                    ? "expansion_ratio other than 4"
                      : bias_max != 8.0
                          ? "an attn_config.alibi_bias_max other than 8 (MptModel builds its ALiBi with 8)"
                      : logit_scale != NULL && !cJSON_IsNull(logit_scale) ? "a logit_scale"
                                                                          : NULL;
    if (why)
        return kvci_fail(KVC_EINVAL,
                         "%s: mpt with %s is not supported (transformers' MptForCausalLM ignores it and runs "
                         "another model than the checkpoint's)",
                         c->doc, why);
    KVC_TRY(kvci_json_num(&attn, "clip_qkv", clip, &cfg->clip_qkv, &have)); /* null or 0: none */
    KVC_TRY(kvci_json_num(&attn, "softmax_scale", pos, &scale, &have));     /* null: head_dim^-1/2 */
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));                     /* d_model / n_heads: hparams.c */
    cfg->attention_multiplier = scale;                                      /* 0: head_dim^-1/2 */
    cfg->mlp_act = KVC_MLP_GELU;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    cfg->layer_norm = cfg->mlp_plain = true;
    alibi_layers(cfg, false, bias_max);
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps);
}

/* GPT-Neo (EleutherAI/gpt-neo-125m, 1.3B, 2.7B; GPTNeoForCausalLM): GPT-2's learned absolute positions (wpe,
 * max_position_embeddings rows, 2048 when absent) and pre-norm blocks of LayerNorms with bias (layer_norm_epsilon,
 * 1e-5) as nn.Linear layers: q_proj / k_proj / v_proj without biases, out_proj with one, the MLP c_proj(act(c_fc(x)))
 * with biases of intermediate_size (4 x hidden_size when absent or null, config.c) by activation_function
 * (gelu_new), tied by default. Its attention does not scale q.k at all (a softmax scale of 1: attention_multiplier,
 * which no key sets) and runs global (full) layers and local ones over the last window_size keys (256) by
 * attention_layers (kvci_family_gpt_neo_kinds, hparams.c's window). */
static kvc_status parse_gpt_neo(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    KVC_TRY(kvci_family_gelu_act(c, "activation_function", "gpt_neo", "gelu_new", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    cfg->pos_learned = true, cfg->attention_multiplier = 1.0;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->qkv_bias = false, cfg->o_bias = cfg->mlp_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps);
}

/* BioGPT (microsoft/biogpt, BioGPT-Large; BioGptForCausalLM): OPT's learned positions offset by 2 (embed_positions
 * holds max_position_embeddings + 2 rows, 1024 when absent) added to the token embeddings times sqrt(hidden_size)
 * when scale_embedding (true when absent; as an f32), pre-norm blocks of nn.LayerNorm with weight and bias at their
 * default eps 1e-5 (layer_norm_eps is not read by its modules), q/k/v/out_proj with biases, the MLP fc2(act(fc1(x)))
 * with biases of intermediate_size (4096 when absent, config.c) by hidden_act (gelu), the final layer_norm and the
 * head output_projection, tied by default. */
static kvc_status parse_biogpt(const kvc_hparams *hp, kvc_model_config *cfg) {
    bool scale = true;
    KVC_TRY(kvci_family_gelu_act(&hp->cfg, "hidden_act", "biogpt", "gelu", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    KVC_TRY(kvci_family_opt_bool(&hp->cfg, "scale_embedding", true, &scale));
    cfg->embed_scale = scale ? (float)sqrt((double)cfg->hidden_size) : 0.0f;
    cfg->pos_learned = true, cfg->pos_offset = 2;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    cfg->rms_norm_eps = 1e-5;
    return kvci_family_opt_bool(&hp->cfg, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}

/* XGLM (facebook/xglm-564M to 7.5B; XGLMForCausalLM): BioGPT's blocks (pre-norm nn.LayerNorms with weight and bias at
 * eps 1e-5, q/k/v/out_proj with biases, fc2(act(fc1(x))) with biases of ffn_dim (4096 when absent, config.c), act by
 * activation_function (gelu), the final layer_norm, tied by default; embeddings times sqrt(d_model) when
 * scale_embedding, true when absent) with positions from transformers' sinusoid table, offset by 2 and computed row
 * by row as tokens are embedded (pos_sinusoidal; sinusoid.c), whose row pad_token_id (1 when absent; null: none) is
 * zeros. Refused by name:
 * d_model below 4 (the table divides by d_model / 2 - 1). */
static kvc_status parse_xglm(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    bool scale = true;
    KVC_TRY(kvci_family_gelu_act(c, "activation_function", "xglm", "gelu", cfg));
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    KVC_TRY(kvci_family_opt_bool(c, "scale_embedding", true, &scale));
    if (cfg->hidden_size < 4)
        return kvci_fail(KVC_EINVAL, "%s: xglm with d_model %lld is not supported (its sinusoid table needs >= 4)",
                         c->doc, (long long)cfg->hidden_size);
    /* an explicit null is no padding row (kvci_json_find reads null as absent: XGLMConfig's 1) */
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(c->obj, "pad_token_id");
    if (pad != NULL && cJSON_IsNull(pad))
        cfg->pos_zero_row = -1;
    else
        KVC_TRY(kvci_family_opt_int(c, "pad_token_id", 1, 0, KVC_HP_MAX_POSITIONS, &cfg->pos_zero_row));
    cfg->embed_scale = scale ? (float)sqrt((double)cfg->hidden_size) : 0.0f;
    cfg->pos_learned = cfg->pos_sinusoidal = true, cfg->pos_offset = 2;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    cfg->rms_norm_eps = 1e-5;
    return kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings);
}

/* Entry e of GPT-Neo's layer list (where[i] names it), "global" (full) or "local" (sliding), as layer *n of kinds
 * (kept while *n < n_layers; *n counts on, so that a list of another length is refused by its own count). */
static kvc_status gpt_neo_push(const kvc_family_ctx *ctx, const cJSON *e, const char *where, long long i,
                               kvc_layer_kind *kinds, int64_t *n) {
    const bool global = cJSON_IsString(e) && strcmp(e->valuestring, "global") == 0;
    if (!global && !(cJSON_IsString(e) && strcmp(e->valuestring, "local") == 0))
        return kvci_fail(KVC_EINVAL, "%s: %s[%lld] holds an entry other than \"global\" and \"local\" (gpt_neo)",
                         ctx->hp->cfg.doc, where, i);
    if (*n < ctx->n_layers) kinds[*n] = global ? KVC_LK_FULL : KVC_LK_SLIDING;
    ++*n;
    return KVC_OK;
}

kvc_status kvci_family_gpt_neo_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *c = &ctx->hp->cfg;
    const cJSON *list = NULL;
    bool layers = false, types = false;
    int64_t n = 0;
    /* the expanded list a saved config holds wins over attention_types, as in transformers */
    KVC_TRY(kvci_json_array(c, "attention_layers", KVC_HP_MAX_LAYERS, &list, &layers));
    if (!layers) KVC_TRY(kvci_json_array(c, "attention_types", KVC_HP_MAX_LAYERS, &list, &types));
    long long g = 0;
    for (const cJSON *e = layers ? list->child : NULL; e != NULL; e = e->next, g++)
        KVC_TRY(gpt_neo_push(ctx, e, "attention_layers", g, kinds, &n));
    for (const cJSON *grp = types ? list->child : NULL; grp != NULL; grp = grp->next, g++) {
        const cJSON *names = cJSON_GetArrayItem(grp, 0), *times = cJSON_GetArrayItem(grp, 1);
        if (!cJSON_IsArray(grp) || cJSON_GetArraySize(grp) != 2 || !cJSON_IsArray(names) || !cJSON_IsNumber(times) ||
            !(times->valuedouble >= 0.0 && times->valuedouble <= KVC_HP_MAX_LAYERS) ||
            times->valuedouble != (double)(int64_t)times->valuedouble)
            return kvci_fail(KVC_EINVAL, "%s: attention_types[%lld] must be [[\"global\" or \"local\", ...], count]",
                             c->doc, g);
        for (int64_t t = 0; t < (int64_t)times->valuedouble && n <= KVC_HP_MAX_LAYERS; t++)
            for (const cJSON *e = names->child; e != NULL; e = e->next)
                KVC_TRY(gpt_neo_push(ctx, e, "attention_types", g, kinds, &n));
    }
    if (!layers && !types) /* GPTNeoConfig's attention_types [[["global", "local"], 12]] */
        for (; n < 24; n++)
            if (n < ctx->n_layers) kinds[n] = n % 2 == 0 ? KVC_LK_FULL : KVC_LK_SLIDING;
    if (n != ctx->n_layers)
        return kvci_fail(KVC_EINVAL, "%s: gpt_neo's %s gives %s%lld layers but num_layers is %lld", c->doc,
                         layers ? "attention_layers" : "attention_types", n > KVC_HP_MAX_LAYERS ? "over " : "",
                         (long long)(n > KVC_HP_MAX_LAYERS ? KVC_HP_MAX_LAYERS : n), (long long)ctx->n_layers);
    return KVC_OK;
}

/* The classic types and their parsers. */
static const struct {
    const char *model_type;
    kvc_status (*parse)(const kvc_hparams *hp, kvc_model_config *cfg);
} CLASSIC[] = {{"phi", parse_phi},         {"gpt_neox", parse_gpt_neox},
               {"gpt2", parse_gpt2},       {"gpt_bigcode", parse_gpt2},
               {"opt", parse_opt},         {"falcon", parse_falcon},
               {"gptj", parse_gptj},       {"nemotron", parse_nemotron},
               {"bloom", parse_bloom},     {"mpt", parse_mpt},
               {"gpt_neo", parse_gpt_neo}, {"codegen", parse_gptj},
               {"biogpt", parse_biogpt},   {"persimmon", parse_persimmon},
               {"xglm", parse_xglm},       {"openai-gpt", parse_openai_gpt},
               {"ctrl", parse_ctrl},       {"gpt_neox_japanese", parse_gpt_neox_japanese}};

bool kvci_family_is_classic(const char *model_type) {
    for (size_t i = 0; i < sizeof CLASSIC / sizeof CLASSIC[0]; i++)
        if (strcmp(model_type, CLASSIC[i].model_type) == 0) return true;
    return false;
}

kvc_status kvci_family_parse_classic(const kvc_hparams *hp, kvc_model_config *cfg) {
    for (size_t i = 0; i < sizeof CLASSIC / sizeof CLASSIC[0]; i++)
        if (strcmp(cfg->model_type, CLASSIC[i].model_type) == 0) return CLASSIC[i].parse(hp, cfg);
    return kvci_fail(KVC_EINVAL, "%s: model_type \"%s\" is not a classic type", hp->cfg.doc, cfg->model_type);
}
