/* RWKV-4 (RwkvForCausalLM, RwkvConfig of transformers 5.25; model_type rwkv): every layer is a state layer, its
 * time mixing (rwkv.c: token shift, the WKV recurrence over hidden_size channels) in place of attention and
 * its channel mixing (token shift, squared ReLU, a receptance gate) in place of the MLP, each after its LayerNorm
 * (ln1, ln2, with biases, eps layer_norm_epsilon); layer 0 normalises the embeddings first (pre_ln: embed_norm). The
 * final ln_out is an nn.LayerNorm of its own default eps 1e-5, whatever layer_norm_epsilon says. Per sequence and layer
 * the state is the last normed input of each mixer (shift_state [2, H]) and the WKV numerator, denominator and running
 * maximum (wkv_state [3, H]): no keys or values. Tensor parallelism is refused (shard_state.c). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/forward_internal.h"

static kvc_status rwkv_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_STATE;
    return KVC_OK;
}

/* RwkvConfig has no layer list: a layer_types key is not read (RwkvModel runs every block alike). */
static kvc_status rwkv_layer_list(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given) {
    (void)ctx, (void)kinds;
    *given = false;
    return KVC_OK;
}

/* attention_hidden_size: absent or null, hidden_size (RwkvConfig.__post_init__); any other width is refused by
 * name, as transformers' state (hidden_size channels per layer) cannot hold it: its generate() fails. */
static kvc_status check_attn_size(const kvc_json_obj *c, int64_t hidden_size) {
    const cJSON *v = kvci_json_find(c, "attention_hidden_size");
    int64_t A = hidden_size;
    bool have = false;
    if (v != NULL && !cJSON_IsNull(v))
        KVC_TRY(kvci_json_int(c, "attention_hidden_size", 1, KVC_HP_MAX_WIDTH, &A, &have));
    if (A != hidden_size)
        return kvci_fail(KVC_EINVAL,
                         "%s: rwkv with attention_hidden_size %lld != hidden_size %lld is not supported (transformers' "
                         "RWKV state holds hidden_size channels per layer; its cached generation fails)",
                         c->doc, (long long)A, (long long)hidden_size);
    return KVC_OK;
}

/* Per sequence: the two token-shift inputs [2, H] and the WKV state [3, H] of the layer (whole: no rank splits). */
static kvc_status rwkv_states(const kvc_hparams *hp, int64_t hidden_size, int64_t tp, kvc_state_shapes *s) {
    if (tp > 1)
        return kvci_fail(KVC_EINVAL,
                         "%s: tensor parallelism %lld over rwkv: its WKV and token-shift states have no shard rule",
                         hp->cfg.doc, (long long)tp);
    if (hidden_size < 1) return kvci_fail(KVC_EINVAL, "%s: hidden_size is missing", hp->cfg.doc);
    KVC_TRY(check_attn_size(&hp->cfg, hidden_size));
    *s = (kvc_state_shapes){.n = 2,
                            .names = {"shift_state", "wkv_state"},
                            .n_shape = {2, 2},
                            .shape = {{2, hidden_size}, {3, hidden_size}}};
    return KVC_OK;
}

/* RwkvConfig's keys: attention_hidden_size (hidden_size only), intermediate_size (4 hidden_size; config.c),
 * layer_norm_epsilon (1e-5), rescale_every (6; 0 or below: none), tie_word_embeddings (false; the shared reader).
 * context_length bounds transformers' CUDA kernel only (its CPU recurrence and the runtime's take any length); no
 * attention keys. */
static kvc_status parse_rwkv(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    int64_t rescale = 6;
    KVC_TRY(check_attn_size(c, cfg->hidden_size));
    KVC_TRY(kvci_family_opt_num(c, "layer_norm_epsilon", 1e-5, eps, &cfg->rms_norm_eps));
    KVC_TRY(kvci_family_opt_int(c, "rescale_every", 6, INT32_MIN, INT32_MAX, &rescale));
    cfg->rwkv_rescale_every = rescale > 0 ? rescale : 0;
    cfg->layer_norm = cfg->norm_bias = cfg->embed_norm = true;
    cfg->final_norm_eps = 1e-5;
    cfg->num_heads = cfg->num_kv_heads = 1, cfg->head_dim = 2; /* no attention: the smallest the checks take */
    return KVC_OK;
}

/* A caller's own struct (kvc_model_create_random) too. */
static kvc_status check_rwkv(const kvc_model_config *c, const char *doc) {
    if (c->rwkv_rescale_every < 0 || !c->layer_norm || !c->norm_bias || !c->embed_norm)
        return kvci_fail(KVC_EINVAL,
                         "%s: rwkv needs rwkv_rescale_every >= 0 and LayerNorms with biases (layer_norm, norm_bias, "
                         "embed_norm)",
                         doc);
    return KVC_OK;
}

static const kvc_family_alias RWKV[] = {{"rwkv", "RwkvForCausalLM", "rwkv", true}};

const kvc_family_desc kvc_family_rwkv = {
    .id = KVC_FAMILY_RWKV,
    .name = "rwkv",
    .aliases = RWKV,
    .n_aliases = 1,
    .rms_norm_eps = 1e-5,
    .parse = parse_rwkv,
    .check = check_rwkv,
    .default_kinds = rwkv_kinds,
    .layer_list = rwkv_layer_list,
    .attention = kvci_rwkv_time_mix,
    .ffn = kvci_rwkv_channel_mix,
    .state_shapes = rwkv_states,
};
