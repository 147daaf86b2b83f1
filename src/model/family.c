/* The family table and the facts every family answers the same way: which
 * family a config names, the kind of every layer, the heads and dims of
 * every layer's cache (family.h). A new family: one file, one line here. */
#include "model/family.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"

#define MAX_FAMILIES 32

static const kvc_family_desc *registry[MAX_FAMILIES] = {
    [KVC_FAMILY_DENSE] = &kvc_family_dense,
    [KVC_FAMILY_GPT_OSS] = &kvc_family_gpt_oss,
    [KVC_FAMILY_DEEPSEEK_V3] = &kvc_family_deepseek_v3,
    [KVC_FAMILY_GEMMA2] = &kvc_family_gemma2,
    [KVC_FAMILY_GEMMA3] = &kvc_family_gemma3,
    [KVC_FAMILY_QWEN3_NEXT] = &kvc_family_qwen3_next,
    [KVC_FAMILY_JAMBA] = &kvc_family_jamba,
    [KVC_FAMILY_MAMBA2_HYBRID] = &kvc_family_mamba2_hybrid,
    [KVC_FAMILY_GENERIC] = &kvc_family_generic,
    [KVC_FAMILY_LFM2] = &kvc_family_lfm2,
    [KVC_FAMILY_KIMI_LINEAR] = &kvc_family_kimi_linear,
    [KVC_FAMILY_MINIMAX] = &kvc_family_minimax,
    [KVC_FAMILY_LLAMA4] = &kvc_family_llama4,
    [KVC_FAMILY_DEEPSEEK_V4] = &kvc_family_deepseek_v4,
    [KVC_FAMILY_HY_V4] = &kvc_family_hy_v4,
    [KVC_FAMILY_GEMMA4] = &kvc_family_gemma4,
    [KVC_FAMILY_GEMMA3N] = &kvc_family_gemma3n,
    [KVC_FAMILY_RWKV] = &kvc_family_rwkv,
    [KVC_FAMILY_RECURRENT_GEMMA] = &kvc_family_recurrent_gemma,
};
static int n_registered = KVC_FAMILY_BUILTIN_COUNT;

const kvc_family_desc *kvci_family_get(kvc_model_family id) {
    return (unsigned)id < (unsigned)n_registered ? registry[id] : NULL;
}

const char *kvc_model_family_name(kvc_model_family f) {
    const kvc_family_desc *d = kvci_family_get(f);
    return d != NULL ? d->name : "?";
}

const kvc_family_desc *kvci_family_find(const char *model_type, const char *architecture,
                                        const kvc_family_alias **alias) {
    for (int pass = 0; pass < 2; pass++) {
        const char *want = pass == 0 ? model_type : architecture;
        for (int f = 0; want != NULL && f < n_registered; f++) {
            for (int32_t a = 0; a < registry[f]->n_aliases; a++) {
                const kvc_family_alias *e = &registry[f]->aliases[a];
                const char *have = pass == 0 ? e->model_type : e->architecture;
                if (have != NULL && strcmp(want, have) == 0) {
                    if (alias != NULL) *alias = e;
                    return registry[f];
                }
            }
        }
    }
    return NULL;
}

/* Why a decoder with cross-attention is not planned (types transformers lists as causal LMs). */
#define CROSS_ATTENTION                                                                                                \
    ": besides self-attention its layers attend over an encoder's output (cross-attention, whose keys and values "     \
    "per layer are sized by the source, not by the tokens generated); kvcache plans and runs decoder-only "            \
    "self-attention caches, and a plan of the self-attention cache alone would leave the cross-attention cache out"
#define ENCODER_DECODER(name) name " is an encoder-decoder whose ForCausalLM class is its decoder" CROSS_ATTENTION

typedef struct {
    const char *model_type, *why;
} type_reason;

/* The reason of model_type in table[0..n), or NULL. */
static const char *reason_of(const type_reason *table, size_t n, const char *model_type) {
    for (size_t i = 0; model_type != NULL && i < n; i++)
        if (strcmp(model_type, table[i].model_type) == 0) return table[i].why;
    return NULL;
}

/* Model types refused by name, with the reason, by the runtime and the planner alike: types transformers lists as
 * causal LMs that are not (single-stream, decoder-only) KV-cache decoders, and others kvcache does not model. */
static const type_reason REFUSED[] = {
    {"bart", ENCODER_DECODER("BART")},
    {"mbart", ENCODER_DECODER("mBART")},
    {"marian", ENCODER_DECODER("Marian")},
    {"pegasus", ENCODER_DECODER("Pegasus")},
    {"plbart", ENCODER_DECODER("PLBart")},
    {"blenderbot", ENCODER_DECODER("Blenderbot")},
    {"blenderbot-small", ENCODER_DECODER("Blenderbot-small")},
    {"bigbird_pegasus", ENCODER_DECODER("BigBird-Pegasus")},
    {"mvp", ENCODER_DECODER("MVP")},
    {"whisper", ENCODER_DECODER("Whisper (speech to text)")},
    {"trocr", "TrOCR is the text decoder of an image-to-text encoder-decoder" CROSS_ATTENTION},
    {"prophetnet", "ProphetNet is an encoder-decoder whose decoder also runs `ngram` streams that predict future "
                   "tokens" CROSS_ATTENTION},
    {"musicgen", "MusicGen's decoder emits `num_codebooks` parallel streams of audio codes per step" CROSS_ATTENTION},
    {"musicgen_melody", "MusicGen Melody nests a text encoder, an audio codec and a decoder (its config keeps each "
                        "under its own key) and its decoder emits `num_codebooks` parallel streams of audio codes per "
                        "step after the conditioning states it prepends; kvcache plans single-stream text decoders"},
    {"blt", "BLT (Byte Latent Transformer) runs a local byte encoder, a global transformer over entropy-sized patches "
            "and a local byte decoder, joined by cross-attention each way: three stacks whose caches have different "
            "lengths; kvcache plans one decoder stack"},
    {"xlm", "XLM is a cross-lingual masked language model: its attention sees the whole sequence unless `causal` is "
            "true (XLMConfig's false), and its sizes use its own keys (emb_dim, n_heads, n_layers); kvcache plans "
            "causal decoders"},
    {"gemma4_unified_assistant",
     "Gemma 4 Unified's assistant is a speculative drafter with no cache of its own: every layer "
     "(num_kv_shared_layers = num_hidden_layers) reads the keys and values of its target's last full-attention and "
     "last sliding-attention layers, and its input is the target's hidden states; the target's plan holds every "
     "cache it reads, and kvcache runs no drafter"},
    {"xlstm", "xLSTM is a recurrent model: each mLSTM block keeps a matrix memory, a normaliser and a max state "
              "instead of keys and values, states kvcache does not model"},
    {"xlnet", "XLNet is a permutation language model: two-stream attention over the whole sequence under a "
              "permutation mask, its memory (mems) of each layer's hidden states, not keys and values"},
    {"reformer", "Reformer attends through locality-sensitive hashing buckets and chunked local attention, over "
                 "reversible layers; its cache (past_buckets_states) keeps each layer's hidden states and bucket ids, "
                 "not keys and values, so no KV-cache plan describes it"},
    {"hrm_text", "HRM-Text is a looped (hierarchical recurrent) reasoning model: two weight-shared stacks run "
                 "H_cycles x (L_cycles + 1) times per token over two hidden streams (z_H, z_L), each run with a "
                 "cache of its own, and a prefix-LM mask over the prompt; neither the runtime's layer stack nor the "
                 "planner's cache layout is that"},
};

const char *kvci_family_refusal(const char *model_type) {
    return reason_of(REFUSED, sizeof REFUSED / sizeof REFUSED[0], model_type);
}

/* Model types planned only, with what the runtime lacks to run them. */
static const type_reason NOT_RUN[] = {
    {"kolibri1_1", "its indexed_attention layers attend to keys their indexer picks from pools of NVFP4-rounded block "
                   "summaries (index_pool_size, index_compression, index_topk, sink and local tokens), over keys and "
                   "values rounded to NVFP4, and read other layers' keys and values (kv_source_layers): none of it "
                   "is in the runtime yet (Kolibri 1 runs)"},
    {"bailing_hybrid", "its Kimi Delta Attention layers' lower-bounded forget gate (kda_lower_bound, kda_safe_gate), "
                       "its MLA layers' per-head sigmoid output gate (g_proj) and its experts' per-layer SwiGLU "
                       "clipping are not in the runtime yet (Kimi-Linear's KDA and MLA run)"},
    {"qwen4_exp_text", "its indexed_attention layers' QSA token indexer (compressed key blocks, top-k block "
                       "selection), its hyper-connection residual streams (hc_count) and its n-gram per-layer "
                       "embeddings (ple_layer_ids) have no operator in the runtime yet"},
    {"qwen4_exp", "its text model's (qwen4_exp_text) indexed_attention layers' QSA token indexer, hyper-connection "
                  "residual streams (hc_count) and n-gram per-layer embeddings have no operator in the runtime yet"},
    {"deepseek_v4", "its hyper-connection residual streams (hc_mult, Sinkhorn-mixed), its compressed attention "
                    "(the CSA / HCA window compressors, their pending states and compressed caches, the indexer over "
                    "compressed keys), the grouped output projection and the hash-routed experts have no operator in "
                    "the runtime yet (docs/deepseek-v4.md)"},
    {"doge", "its dynamic mask attention adds to every score a bias per key and KV head, exp(A * softplus(dt_proj(the "
             "key's values of every KV head))), and past keep_window_size keys keeps only each query's top "
             "keep_window_size keys by that bias (transformers recomputes it from the whole value cache each step); "
             "the attention kernels take no per-key bias or top-k mask, and the residual adds scale the residual by "
             "input_residual / post_attention_residual, with CDMoE's product-key experts when is_moe"},
    {"dory", "its recurrent section (n_recurrent_loops passes over weight-shared layers, one cache per loop) and its "
             "nGPT layers (unit-norm hidden states, interpolated residuals lambda_1 / lambda_2, sqk, s_gate, suv and "
             "logit_scale) are not in the runtime's layer stack yet"},
};

const char *kvci_family_not_run(const char *model_type) {
    return reason_of(NOT_RUN, sizeof NOT_RUN / sizeof NOT_RUN[0], model_type);
}

const char *kvci_family_refused_type(const kvc_hparams *hp) {
    if (kvci_family_refusal(hp->model_type) != NULL) return hp->model_type;
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(hp->doc, "model_type");
    return cJSON_IsString(top) && kvci_family_refusal(top->valuestring) != NULL ? top->valuestring : NULL;
}

bool kvci_family_type_runs(const char *model_type) {
    const kvc_family_alias *alias = NULL;
    return model_type != NULL && kvci_family_find(model_type, NULL, &alias) != NULL && alias->runs;
}

bool kvci_name_listed(const char *name, const char *const *list, size_t n) {
    for (size_t i = 0; name != NULL && i < n; i++)
        if (strcmp(name, list[i]) == 0) return true;
    return false;
}

kvc_status kvci_family_register(kvc_family_desc *d, kvc_model_family *out) {
    if (d == NULL || out == NULL || d->name == NULL || d->aliases == NULL || d->n_aliases < 1)
        return kvci_fail(KVC_EINVAL, "kvci_family_register: a family needs a name and at least one alias");
    if (n_registered == MAX_FAMILIES)
        return kvci_fail(KVC_ENOMEM, "kvci_family_register: %d families are registered already", MAX_FAMILIES);
    for (int32_t a = 0; a < d->n_aliases; a++) {
        const kvc_family_alias *e = &d->aliases[a];
        if (e->model_type == NULL || e->plan_name == NULL || (e->runs && d->parse == NULL))
            return kvci_fail(KVC_EINVAL,
                             "kvci_family_register: %s alias %d needs a model_type and a plan name (and "
                             "a parse hook when the runtime runs it)",
                             d->name, (int)a);
        if (kvci_family_find(e->model_type, e->architecture, NULL) != NULL)
            return kvci_fail(KVC_EINVAL, "kvci_family_register: model_type %s or architecture %s is taken already",
                             e->model_type, e->architecture != NULL ? e->architecture : "(none)");
    }
    d->id = (kvc_model_family)n_registered;
    registry[n_registered] = d;
    *out = (kvc_model_family)n_registered++;
    return KVC_OK;
}

bool kvci_family_runs(kvc_model_family id) {
    const kvc_family_desc *d = kvci_family_get(id);
    return d != NULL && d->parse != NULL;
}

void kvci_family_runtime_types(char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int f = 0; f < n_registered; f++)
        for (int32_t a = 0; a < registry[f]->n_aliases; a++)
            if (registry[f]->aliases[a].runs && used < cap)
                used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "",
                                         registry[f]->aliases[a].model_type);
}

void kvci_family_warn(const kvc_family_ctx *ctx, const char *fmt, ...) {
    if (ctx->warn == NULL) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctx->warn(ctx->user, msg);
}

/* ---- layer kinds ----------------------------------------------------------- */

/* layer_types, when given (*given), into kinds. */
kvc_status kvci_family_layer_types(const kvc_family_ctx *ctx, kvc_layer_kind *kinds, bool *given) {
    const kvc_json_obj *cfg = &ctx->hp->cfg;
    const cJSON *lt = NULL;
    KVC_TRY(kvci_json_array(cfg, "layer_types", KVC_HP_MAX_LAYERS, &lt, given));
    if (!*given) return KVC_OK;
    if (cJSON_GetArraySize(lt) != ctx->n_layers)
        return kvci_fail(KVC_EINVAL, "%s: layer_types has %d entries but num_hidden_layers is %lld", cfg->doc,
                         cJSON_GetArraySize(lt), (long long)ctx->n_layers);
    int64_t i = 0;
    for (const cJSON *e = lt->child; e != NULL; e = e->next, i++) {
        if (!cJSON_IsString(e))
            return kvci_fail(KVC_EINVAL, "%s: layer_types[%lld] must be a string", cfg->doc, (long long)i);
        const char *s = e->valuestring;
        /* indexed_attention: DeepSeek sparse attention (GLM-5), full attention over keys its indexer picks; its
         * legacy names (GLM-5.2's deepseek_sparse_attention) are remapped by transformers' PreTrainedConfig */
        if (strcmp(s, "full_attention") == 0 || strcmp(s, "attention") == 0 || strcmp(s, "indexed_attention") == 0 ||
            strcmp(s, "deepseek_sparse_attention") == 0 || strcmp(s, "qwen_sparse_attention") == 0 ||
            strcmp(s, "minimax_m3_sparse") == 0) /* MiniMax-M3's indexed layers (src/plan/sparse_index.c) */
            kinds[i] = KVC_LK_FULL;
        else if (strcmp(s, "sliding_attention") == 0)
            kinds[i] = KVC_LK_SLIDING;
        else if (strcmp(s, "chunked_attention") == 0)
            kinds[i] = KVC_LK_CHUNKED;
        else if (strcmp(s, "linear_attention") == 0 || strcmp(s, "mamba") == 0 || strcmp(s, "conv") == 0)
            kinds[i] = KVC_LK_STATE;
        else if (strcmp(s, "mlp") == 0) /* an MLP block listed as a layer of its own (Dory's saved form) */
            kinds[i] = KVC_LK_NONE;
        else
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_types[%lld] \"%.64s\" is not a known layer type (full_attention, "
                             "indexed_attention (deepseek_sparse_attention, qwen_sparse_attention, minimax_m3_sparse), "
                             "sliding_attention, "
                             "chunked_attention, linear_attention, mamba, conv, mlp)",
                             cfg->doc, (long long)i, s);
    }
    return KVC_OK;
}

kvc_status kvci_family_full_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = KVC_LK_FULL;
    return KVC_OK;
}

kvc_status kvci_family_flag_kinds(const kvc_family_ctx *ctx, const char *field, const cJSON *list,
                                  kvc_layer_kind if_zero, kvc_layer_kind if_one, kvc_layer_kind *kinds) {
    if (cJSON_GetArraySize(list) != ctx->n_layers)
        return kvci_fail(KVC_EINVAL, "%s: %s has %d entries but num_hidden_layers is %lld", ctx->hp->cfg.doc, field,
                         cJSON_GetArraySize(list), (long long)ctx->n_layers);
    int64_t i = 0;
    for (const cJSON *e = list->child; e != NULL; e = e->next, i++) {
        char where[96];
        snprintf(where, sizeof where, "%s[%lld]", field, (long long)i);
        int64_t flag = 0;
        KVC_TRY(kvci_json_int_value(e, where, 0, 1, &flag));
        kinds[i] = flag ? if_one : if_zero;
    }
    return KVC_OK;
}

kvc_status kvci_family_uniform_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = ctx->window > 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
    return KVC_OK;
}

kvc_status kvci_family_every_nth_full(const kvc_family_ctx *ctx, int64_t every, kvc_layer_kind *kinds) {
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = (i + 1) % every != 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
    return KVC_OK;
}

kvc_status kvci_family_alternating_kinds(const kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    for (int64_t i = 0; i < ctx->n_layers; i++) kinds[i] = i % 2 == 0 ? KVC_LK_SLIDING : KVC_LK_FULL;
    return KVC_OK;
}

kvc_status kvci_family_layer_kinds(const kvc_family_desc *d, kvc_family_ctx *ctx, kvc_layer_kind *kinds) {
    const char *doc = ctx->hp->cfg.doc;
    bool given = false;
    const char *mt = ctx->hp->model_type;
    if (mt != NULL && strcmp(mt, "gpt_neo") == 0) { /* its own list; layer_types is not read */
        KVC_TRY(kvci_family_gpt_neo_kinds(ctx, kinds));
        given = true;
    } else if (d->layer_list != NULL) {
        KVC_TRY(d->layer_list(ctx, kinds, &given));
    } else {
        KVC_TRY(kvci_family_layer_types(ctx, kinds, &given));
    }
    KVC_TRY(kvci_hparams_window(ctx->hp, &ctx->window, &ctx->qwen_rule));
    if (d->reads_window != NULL && !d->reads_window(ctx->hp)) {
        if (ctx->window > 0)
            kvci_family_warn(ctx,
                             "sliding_window %lld not read: %s's attention has no window (transformers ignores it)",
                             (long long)ctx->window, ctx->hp->model_type);
        ctx->window = 0;
        for (int64_t i = 0; given && i < ctx->n_layers; i++)
            if (kinds[i] == KVC_LK_SLIDING) kinds[i] = KVC_LK_FULL;
    }
    bool have_chunk = false; /* a null chunk is transformers' "no chunking" */
    ctx->chunk = 0;
    if (!cJSON_IsNull(kvci_json_find(&ctx->hp->cfg, "attention_chunk_size")))
        KVC_TRY(kvci_json_int(&ctx->hp->cfg, "attention_chunk_size", 1, INT32_MAX, &ctx->chunk, &have_chunk));
    if (!given)
        KVC_TRY(d->default_kinds != NULL ? d->default_kinds(ctx, kinds) : kvci_family_uniform_kinds(ctx, kinds));
    bool any_sliding = false, any_chunked = false;
    for (int64_t i = 0; i < ctx->n_layers; i++) {
        any_sliding |= kinds[i] == KVC_LK_SLIDING;
        any_chunked |= kinds[i] == KVC_LK_CHUNKED;
    }
    if (any_sliding && ctx->window < 1)
        return kvci_fail(KVC_EINVAL, "%s: sliding_window is missing but the model has sliding-attention layers", doc);
    if (any_chunked && ctx->chunk < 1)
        return kvci_fail(KVC_EINVAL, "%s: attention_chunk_size is missing but the model has chunked-attention layers",
                         doc);
    if ((any_sliding || any_chunked) && d->mla)
        return kvci_fail(KVC_EINVAL, "%s: layer_types asks for %s layers, which MLA models do not have", doc,
                         any_sliding ? "sliding" : "chunked");
    return KVC_OK;
}

/* ---- cache heads and dims -------------------------------------------------- */

kvc_cache_dims kvci_family_mla_cache_dims(const kvc_family_dims *d, bool latent) {
    if (latent) return (kvc_cache_dims){.heads = {1, 1}, .dim = {d->kv_lora_rank, d->qk_rope_head_dim}};
    return (kvc_cache_dims){.heads = {d->num_heads, d->num_heads},
                            .dim = {d->qk_nope_head_dim + d->qk_rope_head_dim, d->v_head_dim}};
}

kvc_cache_dims kvci_family_cache_dims(const kvc_family_desc *d, const kvc_family_dims *dims, bool latent) {
    if (d->cache_dims != NULL) return d->cache_dims(dims, latent);
    return (kvc_cache_dims){.heads = {dims->num_kv_heads, dims->num_kv_heads}, .dim = {dims->head_dim, dims->head_dim}};
}

kvc_cache_dims kvci_model_cache_dims(const kvc_model_config *c, bool latent) {
    if (c->diff_attn) /* DiffLlama: KV heads j and j + nKV / 2 side by side (attn_diff.c) */
        return (kvc_cache_dims){.heads = {c->num_kv_heads / 2, c->num_kv_heads / 2},
                                .dim = {2 * c->head_dim, 2 * c->head_dim}};
    const kvc_family_dims d = {.num_heads = c->num_heads,
                               .num_kv_heads = c->num_kv_heads,
                               .head_dim = c->head_dim,
                               .kv_lora_rank = c->kv_lora_rank,
                               .qk_nope_head_dim = c->qk_nope_head_dim,
                               .qk_rope_head_dim = c->qk_rope_head_dim,
                               .v_head_dim = c->v_head_dim};
    return kvci_family_cache_dims(kvci_family_get(c->family), &d, latent);
}

/* ---- state shapes ------------------------------------------------------------ */

kvc_status kvci_family_split_tp(const kvc_hparams *hp, const char *field, int64_t v, int64_t tp, int64_t *out) {
    if (v % tp != 0)
        return kvci_fail(KVC_EINVAL, "%s: %s %lld is not divisible by tp %lld", hp->cfg.doc, field, (long long)v,
                         (long long)tp);
    *out = v / tp;
    return KVC_OK;
}

kvc_status kvci_family_state_shapes(const kvc_family_desc *d, const kvc_hparams *hp, int64_t hidden_size, int64_t tp,
                                    kvc_state_shapes *s) {
    *s = (kvc_state_shapes){0};
    if (d->state_shapes != NULL) return d->state_shapes(hp, hidden_size, tp, s);
    const kvc_status st = kvc_family_mamba2_hybrid.state_shapes(hp, hidden_size, tp, s);
    if (st == KVC_OK) return st;
    char why[512]; /* the layer list put state layers in a type without its own: say so beside Mamba2's refusal */
    snprintf(why, sizeof why, "%s", kvc_last_error());
    return kvci_fail(st,
                     "%s (its layer list names state layers, which %s has no rule of its own for: read as Mamba2's)",
                     why, hp->model_type != NULL ? hp->model_type : "this model type");
}

kvc_rope_config kvci_family_default_rope(double theta) {
    return (kvc_rope_config){
        .type = KVC_ROPE_DEFAULT, .theta = theta, .factor = 1.0, .beta_fast = 32.0, .beta_slow = 1.0, .truncate = true};
}

/* ---- optional config members ------------------------------------------------ */

kvc_status kvci_family_opt_int(const kvc_json_obj *c, const char *key, int64_t def, int64_t lo, int64_t hi,
                               int64_t *out) {
    bool have = false;
    *out = def;
    return kvci_json_int(c, key, lo, hi, out, &have);
}

kvc_status kvci_family_opt_num(const kvc_json_obj *c, const char *key, double def, kvc_json_range r, double *out) {
    bool have = false;
    *out = def;
    return kvci_json_num(c, key, r, out, &have);
}

kvc_status kvci_family_opt_bool(const kvc_json_obj *c, const char *key, bool def, bool *out) {
    bool have = false;
    *out = def;
    return kvci_json_bool(c, key, out, &have);
}

kvc_status kvci_family_mla_attention(const kvc_hparams *hp, kvc_model_config *cfg) {
    kvc_mla_dims d;
    KVC_TRY(kvci_hparams_read_mla(hp, &d));
    cfg->q_lora_rank = d.q_lora_rank, cfg->kv_lora_rank = d.kv_lora_rank;
    cfg->qk_nope_head_dim = d.qk_nope_head_dim, cfg->qk_rope_head_dim = d.qk_rope_head_dim;
    cfg->v_head_dim = d.v_head_dim, cfg->head_dim = d.qk_rope_head_dim;
    bool bias = false;
    KVC_TRY(kvci_family_opt_bool(&hp->cfg, "attention_bias", false, &bias));
    cfg->qkv_bias = cfg->o_bias = bias;
    cfg->rope_form = KVC_ROPE_INTERLEAVED;
    return KVC_OK;
}
