/* Zamba (ZambaForCausalLM, the Jamba family's Mamba-1 mixers) and Zamba2 (Zamba2ForCausalLM, the Mamba2 hybrids'
 * mixers): a mixer in every layer, and on the "hybrid" layers before it one shared transformer block (attention and
 * MLP, its weights shared by its use sites) over the concatenation of the hidden state and the embeddings. Each use
 * site keeps its own K/V (transformers' cache.update at the hybrid layer's index), beside the layer's mixer states:
 * a hybrid layer is KVC_LK_PARALLEL. This file: the layer kinds, Zamba2's state shapes and the softmax scale, shared
 * by the planner and the runtime, and both types' runtime keys. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

static bool type_is(const kvc_hparams *hp, const char *mt, const char *arch) {
    return (hp->model_type != NULL && strcmp(hp->model_type, mt) == 0) ||
           (hp->architecture != NULL && strcmp(hp->architecture, arch) == 0);
}

bool kvci_is_zamba2(const kvc_hparams *hp) { return type_is(hp, "zamba2", "Zamba2ForCausalLM"); }
bool kvci_is_zamba(const kvc_hparams *hp) { return type_is(hp, "zamba", "ZambaForCausalLM"); }

/* layers_block_type: "hybrid" (the shared block, then the mixer) or "linear_attention" / its legacy name "mamba"
 * (the mixer alone), one entry per layer. Another name is refused (transformers would build a mixer alone for it). */
static kvc_status block_list_kinds(const kvc_family_ctx *ctx, const cJSON *list, kvc_layer_kind *kinds) {
    static const kvc_block_name names[] = {
        {"hybrid", KVC_LK_PARALLEL}, {"linear_attention", KVC_LK_STATE}, {"mamba", KVC_LK_STATE}};
    return kvci_family_block_list(ctx, list, names, 3, "hybrid, linear_attention or mamba", kinds);
}

/* Without layers_block_type: Zamba2Config's fixed list of 54 layers (hybrid at 6, 12, ..., 42, 47, 51), which it
 * builds whatever num_hidden_layers says (another count is refused); ZambaConfig's: layers 0 and 1 mixers alone,
 * layer 2 hybrid, then layer 3 + i hybrid when i % attn_layer_period (6) == attn_layer_offset (4). */
kvc_status kvci_zamba_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const kvc_json_obj *c = &ctx->hp->cfg;
    const cJSON *list = NULL;
    bool have = false;
    KVC_TRY(kvci_json_array(c, "layers_block_type", KVC_HP_MAX_LAYERS, &list, &have));
    if (have) return block_list_kinds(ctx, list, kinds);
    if (kvci_is_zamba2(ctx->hp)) {
        static const int64_t hybrid[] = {6, 12, 18, 24, 30, 36, 42, 47, 51};
        if (ctx->n_layers != 54)
            return kvci_fail(KVC_EINVAL,
                             "%s: layers_block_type is missing: Zamba2Config's default list has 54 layers, but "
                             "num_hidden_layers is %lld",
                             c->doc, (long long)ctx->n_layers);
        for (int64_t i = 0; i < 54; i++) kinds[i] = KVC_LK_STATE;
        for (size_t i = 0; i < sizeof hybrid / sizeof hybrid[0]; i++) kinds[hybrid[i]] = KVC_LK_PARALLEL;
        return KVC_OK;
    }
    int64_t period = 6, offset = 4;
    KVC_TRY(kvci_family_opt_int(c, "attn_layer_period", 6, 1, KVC_HP_MAX_LAYERS, &period));
    KVC_TRY(kvci_family_opt_int(c, "attn_layer_offset", 4, 0, KVC_HP_MAX_LAYERS, &offset));
    if (ctx->n_layers < 3)
        return kvci_fail(KVC_EINVAL, "%s: num_hidden_layers %lld: ZambaConfig's default layers_block_type needs 3",
                         c->doc, (long long)ctx->n_layers);
    for (int64_t i = 0; i < ctx->n_layers; i++)
        kinds[i] = i == 2 || (i > 2 && (i - 3) % period == offset) ? KVC_LK_PARALLEL : KVC_LK_STATE;
    return KVC_OK;
}

/* Zamba2Config's mixer keys (its defaults when absent): n_mamba_heads (8) heads filling mamba_expand (2) x
 * hidden_size (inner), mamba_ngroups (1) dividing them, mamba_d_state (64), mamba_d_conv (4) taps; read alike by the
 * planner's state shapes and the runtime's config. */
typedef struct {
    int64_t heads, groups, state, conv, inner;
} zamba2_mixer;

static kvc_status read_mixer(const kvc_json_obj *c, int64_t hidden_size, zamba2_mixer *m) {
    int64_t expand = 2;
    KVC_TRY(kvci_family_opt_int(c, "n_mamba_heads", 8, 1, KVC_HP_MAX_DIM, &m->heads));
    KVC_TRY(kvci_family_opt_int(c, "mamba_ngroups", 1, 1, KVC_HP_MAX_DIM, &m->groups));
    KVC_TRY(kvci_family_opt_int(c, "mamba_d_state", 64, 1, KVC_HP_MAX_DIM, &m->state));
    KVC_TRY(kvci_family_opt_int(c, "mamba_d_conv", 4, 2, KVC_HP_MAX_DIM, &m->conv));
    KVC_TRY(kvci_family_opt_int(c, "mamba_expand", 2, 1, KVC_HP_MAX_DIM, &expand));
    if (hidden_size < 1)
        return kvci_fail(KVC_EINVAL, "%s: hidden_size is missing (the mixers are mamba_expand * hidden_size wide)",
                         c->doc);
    m->inner = expand * hidden_size;
    if (m->inner % m->heads != 0)
        return kvci_fail(KVC_EINVAL, "%s: n_mamba_heads %lld does not divide mamba_expand * hidden_size %lld", c->doc,
                         (long long)m->heads, (long long)m->inner);
    if (m->heads % m->groups != 0)
        return kvci_fail(KVC_EINVAL, "%s: mamba_ngroups %lld does not divide n_mamba_heads %lld", c->doc,
                         (long long)m->groups, (long long)m->heads);
    return KVC_OK;
}

/* Zamba2's mixer state per sequence: the conv state keeps the last mamba_d_conv - 1 inputs of its I + 2 G N
 * channels (as the runtime's mamba2.c), the ssm state [heads, head dim, d_state]. */
kvc_status kvci_zamba2_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    zamba2_mixer m;
    int64_t heads_r = 0, groups_r = 0;
    KVC_TRY(read_mixer(&hp->cfg, hidden_size, &m));
    const int64_t hdim = m.inner / m.heads;
    KVC_TRY(kvci_family_split_tp(hp, "n_mamba_heads", m.heads, tp, &heads_r));
    KVC_TRY(kvci_family_split_tp(hp, "mamba_ngroups", m.groups, tp, &groups_r));
    *s = (kvc_state_shapes){
        .n = 2,
        .names = {"conv_state", "ssm_state"},
        .n_shape = {2, 3},
        .shape = {{heads_r * hdim + 2 * groups_r * m.state, m.conv - 1, 0}, {heads_r, hdim, m.state}}};
    return KVC_OK;
}

/* The shared attention's softmax scale: (head_dim / 2)^-1/2 (its head_dim is attention_hidden_size / heads, twice
 * the hidden state's share); other types of the two families head_dim^-1/2. */
kvc_status kvci_zamba_softmax_scale(const kvc_family_ctx *ctx, int64_t head_dim, double *scale) {
    const bool zamba = kvci_is_zamba(ctx->hp) || kvci_is_zamba2(ctx->hp);
    *scale = 1.0 / sqrt(zamba ? (double)head_dim / 2.0 : (double)head_dim);
    return KVC_OK;
}

/* Zamba's and Zamba2's hidden_act for the shared MLP: gelu (GELU by erf, the default), silu, or a tanh GELU. */
static kvc_status read_shared_act(const kvc_json_obj *c, kvc_model_config *cfg) {
    const char *act = "gelu";
    bool have = false;
    KVC_TRY(kvci_json_str(c, "hidden_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "gelu") == 0)
        cfg->shared_act = KVC_MLP_GELU;
    else if (strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0)
        cfg->shared_act = KVC_MLP_SILU;
    else if (strcmp(act, "gelu_pytorch_tanh") == 0 || strcmp(act, "gelu_new") == 0 || strcmp(act, "gelu_fast") == 0)
        cfg->shared_act = KVC_MLP_GELU_TANH;
    else
        return kvci_fail(KVC_EINVAL, "%s: hidden_act \"%s\" is not supported (%s: gelu, silu or a tanh GELU)", c->doc,
                         act, cfg->model_type);
    return KVC_OK;
}

/* Zamba2Config's keys (its defaults when absent): the mixer's n_mamba_heads (8) heads filling mamba_expand (2) x
 * hidden_size, mamba_ngroups (1), mamba_d_state (64), mamba_d_conv (4), use_conv_bias (true), dt clamped below by
 * time_step_min (0.001; no upper bound), its gated norm's eps 1e-5 whatever rms_norm_eps says; the shared block's
 * head_dim 2 hidden_size / num_attention_heads and softmax scale (head_dim / 2)^-1/2 (query_pre_attn_scalar),
 * intermediate_size (4 hidden_size), hidden_act, num_mem_blocks (1), use_shared_attention_adapter (false),
 * adapter_rank (128), use_mem_rope (false: no positions), use_long_context (max_position_embeddings 16384, the rope
 * unchanged, as transformers 5.25); tied by default. add_bias_linear true is refused (no checkpoint has it). The MLP
 * adapters are always there (transformers 5.25 reads no use_shared_mlp_adapter). */
kvc_status kvci_zamba2_parse(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range positive = {0.0, 1e6, true};
    bool bias = false, rope = false, long_ctx = false;
    zamba2_mixer m;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    KVC_TRY(read_mixer(c, cfg->hidden_size, &m));
    cfg->mamba_heads = m.heads, cfg->mamba_groups = m.groups, cfg->mamba_d_state = m.state, cfg->conv_kernel = m.conv;
    KVC_TRY(kvci_family_opt_bool(c, "use_conv_bias", true, &cfg->mamba_conv_bias));
    KVC_TRY(kvci_family_opt_bool(c, "add_bias_linear", false, &bias));
    if (bias) return kvci_fail(KVC_EINVAL, "%s: add_bias_linear true is not supported (zamba2: false)", c->doc);
    cfg->mamba_head_dim = m.inner / m.heads;
    KVC_TRY(kvci_family_opt_num(c, "time_step_min", 0.001, positive, &cfg->mamba_dt_min));
    cfg->mamba_dt_max = INFINITY, cfg->mamba_norm_eps = 1e-5;
    const cJSON *is = kvci_json_find(c, "intermediate_size"); /* null: 4 hidden_size, as absent */
    cfg->intermediate_size = 4 * cfg->hidden_size;
    if (is != NULL && !cJSON_IsNull(is))
        KVC_TRY(kvci_json_int_value(is, "intermediate_size", 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    KVC_TRY(read_shared_act(c, cfg));
    KVC_TRY(kvci_family_opt_int(c, "num_mem_blocks", 1, 1, KVC_MODEL_MAX_LAYERS, &cfg->num_mem_blocks));
    KVC_TRY(kvci_family_opt_int(c, "adapter_rank", 128, 1, KVC_HP_MAX_DIM, &cfg->adapter_rank));
    KVC_TRY(kvci_family_opt_bool(c, "use_shared_attention_adapter", false, &cfg->shared_attn_adapter));
    const int64_t A = 2 * cfg->hidden_size; /* attention_hidden_size: the adapters' output width */
    if (cfg->shared_attn_adapter && (cfg->num_heads * cfg->head_dim != A || cfg->num_kv_heads * cfg->head_dim != A))
        return kvci_fail(KVC_EINVAL,
                         "%s: use_shared_attention_adapter needs num_attention_heads and num_key_value_heads x "
                         "head_dim %lld to be 2 hidden_size %lld (the adapters' width)",
                         c->doc, (long long)cfg->head_dim, (long long)A);
    KVC_TRY(kvci_family_opt_bool(c, "use_mem_rope", false, &rope));
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = !rope;
    cfg->rope.partial_rotary_factor = 1.0; /* Zamba2RotaryEmbedding rotates the whole head */
    KVC_TRY(kvci_family_opt_bool(c, "use_long_context", false, &long_ctx));
    if (long_ctx) cfg->max_position_embeddings = 16384;
    cfg->query_pre_attn_scalar = (double)cfg->head_dim / 2.0;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = cfg->mamba_proj_bias = false;
    return KVC_OK;
}

/* ZambaConfig's keys (its defaults when absent): the Mamba-1 mixer's mamba_expand (2) x hidden_size channels in
 * n_mamba_heads (2) heads, mamba_d_state (16), mamba_d_conv (4), mamba_dt_rank ("auto"), mamba_conv_bias (true),
 * mamba_proj_bias (false), hidden_mamba_act silu (the only one run); the shared block: attention_hidden_size 2
 * hidden_size (null or absent; the block reads [h | embeddings]), attention_head_dim (hparams), softmax scale
 * (head_dim / 2)^-1/2, no positions, intermediate_size (14848), hidden_act (gelu); rms_norm_eps (1e-5), tied
 * (true); max_position_embeddings 4096 when absent (hparams.c). One block serves every hybrid layer (loaded once when
 * tied: transformers 5.25 ties the sites only then), no adapters. use_mamba_kernels, use_associative_scan and the
 * time_step_* keys choose kernels or initial weights only. */
kvc_status kvci_zamba_parse(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    int64_t att = 0;
    bool have = false;
    const char *act = "silu";
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim));
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    KVC_TRY(kvci_family_opt_num(c, "rms_norm_eps", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_json_int(c, "attention_hidden_size", 1, KVC_HP_MAX_WIDTH, &att, &have));
    if (have && att != 2 * cfg->hidden_size)
        return kvci_fail(KVC_EINVAL,
                         "%s: attention_hidden_size %lld is not supported (zamba: 2 hidden_size = %lld, the width of "
                         "[h | embeddings])",
                         c->doc, (long long)att, (long long)(2 * cfg->hidden_size));
    KVC_TRY(kvci_json_str(c, "hidden_mamba_act", KVC_HP_NAME_MAX, &act, &have));
    if (strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0)
        return kvci_fail(KVC_EINVAL, "%s: hidden_mamba_act \"%s\" is not supported (zamba: silu)", c->doc, act);
    KVC_TRY(kvci_mamba1_prefixed_keys(c, cfg));
    KVC_TRY(kvci_family_opt_int(c, "n_mamba_heads", 2, 1, KVC_HP_MAX_DIM, &cfg->mamba_heads));
    if (cfg->mamba_inner % cfg->mamba_heads != 0)
        return kvci_fail(KVC_EINVAL, "%s: n_mamba_heads %lld does not divide mamba_expand * hidden_size %lld", c->doc,
                         (long long)cfg->mamba_heads, (long long)cfg->mamba_inner);
    KVC_TRY(kvci_family_opt_int(c, "intermediate_size", 14848, 1, KVC_HP_MAX_WIDTH, &cfg->intermediate_size));
    KVC_TRY(read_shared_act(c, cfg));
    cfg->num_mem_blocks = 1;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->query_pre_attn_scalar = (double)cfg->head_dim / 2.0;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = false;
    return KVC_OK;
}

int64_t kvci_zamba_site(const kvc_model_config *c, int64_t l, int64_t *first) {
    int64_t site = 0;
    for (int64_t i = 0; i < l; i++) site += c->layer_shared_block[i];
    const int64_t block = site % c->num_mem_blocks;
    *first = l;
    if (!c->tie_word_embeddings) return site; /* transformers 5.25 ties the blocks only with the embeddings */
    for (int64_t i = 0, n = 0; i < c->num_layers; i++) {
        if (!c->layer_shared_block[i]) continue;
        if (n++ == block) {
            *first = i;
            break;
        }
    }
    return site;
}
