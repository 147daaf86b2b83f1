/* Reading config.json into the facts the rules need: the family (its
 * descriptor, from model_type or the architecture), heads and dims, MLA
 * latent dims, max_position_embeddings, rope scaling and the kind of every
 * layer (the family's rule, model/family.c, as the runtime reads it). */
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

/* ---- identification ------------------------------------------------------ */

static kvc_status identify(const kvc_hparams *hp, kvc_model_plan *plan, const kvc_family_desc **fam) {
    const char *arch = hp->architecture, *model_type = hp->model_type;
    if (arch == NULL && model_type == NULL)
        return kvci_fail(KVC_EINVAL, "config.json: neither architectures nor model_type names the model");
    /* the reader bounds both names to KVC_HP_NAME_MAX bytes, which the plan's fields hold */
    kvci_plan_copy_text(plan->architecture, sizeof plan->architecture, arch != NULL ? arch : model_type);
    kvci_plan_copy_text(plan->model_type, sizeof plan->model_type, model_type);

    const char *refused = kvci_family_refused_type(hp);
    if (refused != NULL)
        return kvci_fail(KVC_EINVAL, "config.json: model_type \"%s\" is not planned: %s", refused,
                         kvci_family_refusal(refused));
    KVC_TRY(kvci_family_bert_decoder(hp)); /* BERT's bidirectional default, refused as the runtime refuses it */
    const kvc_family_alias *alias = NULL;
    *fam = kvci_family_find(model_type, arch, &alias);
    if (*fam == NULL && kvci_json_find(&hp->cfg, "kv_lora_rank") != NULL) {
        /* An unknown model with MLA's latent fields (GLM-4.7-Flash, LongCat, ...): its cache is the latent one,
         * whatever its experts do; planned as DeepSeek-V3's, said in a warning. */
        *fam = &kvc_family_deepseek_v3;
        kvci_plan_copy_text(plan->family, sizeof plan->family, model_type != NULL ? model_type : arch);
        kvci_plan_warn(plan,
                       "architecture %s (model_type %s) is not a known family but has kv_lora_rank: planned as "
                       "multi-head latent attention (DeepSeek-V3's latent caches: kv_lora_rank, qk_rope_head_dim, "
                       "qk_nope_head_dim, v_head_dim)",
                       plan->architecture, model_type != NULL ? model_type : "absent");
        return KVC_OK;
    }
    if (*fam == NULL) *fam = &kvc_family_generic;
    kvci_plan_copy_text(plan->family, sizeof plan->family, alias != NULL ? alias->plan_name : (*fam)->name);
    return KVC_OK;
}

/* ---- heads and dims -------------------------------------------------------- */

/* Appends name to the comma-separated list[cap], truncating. */
static void list_append(char *list, size_t cap, const char *name) {
    strncat(list, list[0] ? ", " : "", cap - strlen(list) - 1);
    strncat(list, name, cap - strlen(list) - 1);
}

/* DeepSeek sparse attention (V3.2, GLM-5): a lightning indexer keeps one key of
 * index_head_dim per token and layer, which picks the index_topk keys each
 * query attends to. Absent: none (f->index_head_dim 0), but GLM-5's and HY V4's
 * config classes give 128 and 2048. */
static kvc_status read_indexer(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    const bool glm5 = hp->model_type != NULL && strcmp(hp->model_type, "glm_moe_dsa") == 0;
    const bool v32 =
        hp->model_type != NULL && (strcmp(hp->model_type, "deepseek_v32") == 0 || strcmp(hp->model_type, "axk2") == 0);
    const bool class_default = glm5 || v32 || f->fam == &kvc_family_hy_v4;
    bool have = false;
    f->index_head_dim = class_default ? 128 : 0;
    KVC_TRY(kvci_json_int(&hp->cfg, "index_head_dim", 1, KVC_HP_MAX_DIM, &f->index_head_dim, &have));
    if (!have && !class_default) return KVC_OK;
    int64_t topk = class_default ? 2048 : 0;
    bool have_topk = false;
    KVC_TRY(kvci_json_int(&hp->cfg, "index_topk", 1, INT32_MAX, &topk, &have_topk));
    if (!have_topk && !class_default) return kvci_fail(KVC_EINVAL, "%s: index_topk is missing", hp->cfg.doc);
    if (glm5 || v32 || f->fam == &kvc_family_hy_v4) /* run by kvcache: its keys as the runtime keeps them */
        f->index_form = KVCI_INDEX_F32;
    if (f->index_form == KVCI_INDEX_F32)
        kvci_plan_warn(plan,
                       "DeepSeek sparse attention (index_topk %lld): its indexer keys are planned as kvcache's runtime "
                       "keeps them (indexer_k_cache f32); the operator parameters below are dense MLA's, another "
                       "attention",
                       (long long)topk);
    else
        kvci_plan_warn(plan,
                       "DeepSeek sparse attention (index_topk %lld): its indexer keys are planned (indexer_k_cache "
                       "fp8, one f32 scale per %d channels); the operator parameters below are dense MLA's, another "
                       "attention",
                       (long long)topk, KVC_PLAN_INDEXER_SCALE_GROUP);
    return KVC_OK;
}

kvc_status kvci_plan_qsa_indexer(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    const kvc_json_obj *c = &hp->cfg;
    static const char *const keys[] = {"indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
                                       "indexer_compress_ratio"};
    int64_t v[5] = {0};
    int n_set = 0;
    for (int i = 0; i < 5; i++) { /* null: none, as absent */
        bool have = false;
        if (!cJSON_IsNull(kvci_json_find(c, keys[i])))
            KVC_TRY(kvci_json_int(c, keys[i], 1, i == 3 ? INT32_MAX : KVC_HP_MAX_DIM, &v[i], &have));
        n_set += have;
    }
    const cJSON *ple = NULL; /* null: none, as absent */
    if (!cJSON_IsNull(kvci_json_find(c, "ple_layer_ids")))
        KVC_TRY(kvci_json_array(c, "ple_layer_ids", KVC_HP_MAX_LAYERS, &ple, &(bool){false}));
    if (ple != NULL && cJSON_GetArraySize(ple) > 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: ple_layer_ids lists %d layers: their per-layer embedding states (a dilated "
                         "convolution and the n-gram context) are not planned",
                         c->doc, cJSON_GetArraySize(ple));
    if (n_set == 0) return KVC_OK;
    for (int i = 0; i < 5; i++)
        if (v[i] == 0) return kvci_fail(KVC_EINVAL, "%s: the QSA indexer is set but %s is missing", c->doc, keys[i]);
    if (v[1] != 1) return kvci_fail(KVC_EINVAL, "%s: indexer_kv_heads %lld must be 1", c->doc, (long long)v[1]);
    if (v[3] % v[4] != 0)
        return kvci_fail(KVC_EINVAL, "%s: indexer_budget %lld is not divisible by indexer_compress_ratio %lld", c->doc,
                         (long long)v[3], (long long)v[4]);
    f->index_head_dim = v[2], f->index_form = KVCI_INDEX_KV_DTYPE;
    kvci_plan_warn(plan,
                   "QSA indexer (indexer_budget %lld in blocks of %lld): its raw keys are planned (indexer_k_cache, "
                   "one key of indexer_head_dim per token, in the KV dtype); the operator parameters below are dense "
                   "attention's",
                   (long long)v[3], (long long)v[4]);
    return KVC_OK;
}

static kvc_status read_heads(kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    const kvc_json_obj *cfg = &hp->cfg;
    if (f->fam == &kvc_family_generic) {
        /* Unknown architecture: refuse naming every generic field that is missing. */
        char missing[200] = "";
        if (kvci_hparams_key(cfg, kvci_hp_layers_keys) == NULL)
            list_append(missing, sizeof missing, "num_hidden_layers");
        if (kvci_hparams_key(cfg, kvci_hp_heads_keys) == NULL)
            list_append(missing, sizeof missing, "num_attention_heads");
        if (kvci_json_find(cfg, "head_dim") == NULL && kvci_json_find(cfg, "kv_channels") == NULL &&
            kvci_hparams_key(cfg, kvci_hp_hidden_keys) == NULL)
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
    const bool blocks = kvci_plan_has_block_configs(hp); /* Nemotron-NAS: heads per layer (block_configs.c) */
    if (blocks && !hp->have_kv_heads) KVC_TRY(kvci_plan_block_kv_heads(hp, f));
    if (!hp->have_kv_heads && !blocks && f->fam == &kvc_family_generic)
        kvci_plan_warn(plan, "num_key_value_heads absent: %lld (one KV head per query head) assumed",
                       (long long)f->n_heads);
    if (f->fam->mla) {
        /* MLA dims come from the latent fields */
        kvc_mla_dims d;
        if ((st = kvci_hparams_read_mla(hp, &d)) != KVC_OK) return st;
        f->kv_lora_rank = d.kv_lora_rank;
        f->qk_rope_head_dim = d.qk_rope_head_dim;
        f->qk_nope_head_dim = d.qk_nope_head_dim;
        f->v_head_dim = d.v_head_dim;
        f->head_dim = d.qk_nope_head_dim + d.qk_rope_head_dim;
        return read_indexer(hp, plan, f);
    }
    return kvci_hparams_head_dim(hp, &f->head_dim);
}

/* ---- rope ------------------------------------------------------------------ */

static kvc_status read_rope(kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    kvc_status st = kvci_hparams_read_rope(hp);
    if (st != KVC_OK) return st;
    f->rope = hp->rope;
    if (hp->rope_per_layer_type)
        kvci_plan_warn(plan, "%s holds one rope per layer type: the %s entry is reported (%s)",
                       hp->rope_source != NULL ? hp->rope_source : "the config class's default", hp->rope_entry,
                       kvc_rope_type_name(hp->rope.type));
    kvci_plan_copy_text(plan->rope_type, sizeof plan->rope_type, kvc_rope_type_name(hp->rope.type));
    return KVC_OK;
}

/* ---- layer kinds ------------------------------------------------------------ */

/* Layers that keep no cache of their own (Gemma 3n's num_kv_shared_layers: the
 * last N layers read the caches of the last earlier layer of their own kind). */
static kvc_status share_kv_layers(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    int64_t shared = f->fam->kv_shared_layers;
    bool have = false;
    KVC_TRY(kvci_json_int(&hp->cfg, "num_kv_shared_layers", 0, f->n_layers - 1, &shared, &have));
    if (shared >= f->n_layers)
        return kvci_fail(KVC_EINVAL,
                         "%s: num_kv_shared_layers is absent and %s's default %lld leaves none of the %lld layers "
                         "a cache of its own",
                         hp->cfg.doc, f->fam->name, (long long)shared, (long long)f->n_layers);
    if (shared == 0) return KVC_OK;
    const int64_t first = f->n_layers - shared;
    for (int64_t i = first; i < f->n_layers; i++) {
        if (f->kinds[i] != KVC_LK_FULL && f->kinds[i] != KVC_LK_SLIDING && f->kinds[i] != KVC_LK_CHUNKED)
            return kvci_fail(KVC_EINVAL,
                             "%s: num_kv_shared_layers %lld makes layer %lld share a cache, but it is not an attention "
                             "layer",
                             hp->cfg.doc, (long long)shared, (long long)i);
        int64_t j = first - 1;
        while (j >= 0 && f->kinds[j] != f->kinds[i]) j--;
        if (j < 0)
            return kvci_fail(KVC_EINVAL,
                             "%s: num_kv_shared_layers %lld: layer %lld has no earlier layer of its kind to share "
                             "the cache of",
                             hp->cfg.doc, (long long)shared, (long long)i);
        if (f->layer_head_dim != NULL &&
            (f->layer_head_dim[j] != f->layer_head_dim[i] || f->layer_kv_heads[j] != f->layer_kv_heads[i]))
            return kvci_fail(
                KVC_EINVAL,
                "%s: num_kv_shared_layers %lld: layer %lld (%lld KV heads of %lld) reads the cache of layer "
                "%lld (%lld of %lld), whose heads differ",
                hp->cfg.doc, (long long)shared, (long long)i, (long long)f->layer_kv_heads[i],
                (long long)f->layer_head_dim[i], (long long)j, (long long)f->layer_kv_heads[j],
                (long long)f->layer_head_dim[j]);
    }
    for (int64_t i = first; i < f->n_layers; i++) f->kinds[i] = KVC_LK_NONE;
    f->kv_shared_layers = shared;
    kvci_plan_warn(plan,
                   "num_kv_shared_layers %lld: layers %lld-%lld read the caches of the last earlier layer of their "
                   "kind and are planned without caches of their own (not listed below)",
                   (long long)shared, (long long)first, (long long)f->n_layers - 1);
    return KVC_OK;
}

/* The family's per-layer head dims and KV heads (whole model), said in a warning when they differ. */
static kvc_status layer_dims(const kvc_family_ctx *ctx, kvc_model_plan *plan, kvc_model_facts *f) {
    f->layer_head_dim = kvci_calloc((size_t)f->n_layers, sizeof *f->layer_head_dim);
    f->layer_kv_heads = kvci_calloc((size_t)f->n_layers, sizeof *f->layer_kv_heads);
    f->layer_v_head_dim = kvci_calloc((size_t)f->n_layers, sizeof *f->layer_v_head_dim);
    if (f->layer_head_dim == NULL || f->layer_kv_heads == NULL || f->layer_v_head_dim == NULL)
        return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    for (int64_t i = 0; i < f->n_layers; i++) f->layer_head_dim[i] = f->head_dim, f->layer_kv_heads[i] = f->n_kv_heads;
    KVC_TRY(f->fam->layer_dims(ctx, f->kinds, f->layer_head_dim, f->layer_kv_heads, f->layer_v_head_dim));
    int64_t other = 0;
    for (int64_t i = 0; i < f->n_layers; i++)
        other +=
            f->layer_head_dim[i] != f->head_dim || f->layer_kv_heads[i] != f->n_kv_heads || f->layer_v_head_dim[i] != 0;
    if (other > 0)
        kvci_plan_warn(plan,
                       "%lld of the %lld layers have their own head dim, KV heads or value head dim (their caches "
                       "below); head_dim and num_key_value_heads above are the other layers'",
                       (long long)other, (long long)f->n_layers);
    return KVC_OK;
}

void kvci_plan_free_layers(kvc_model_facts *f) {
    kvci_free(f->kinds);
    kvci_free(f->layer_head_dim);
    kvci_free(f->layer_kv_heads);
    kvci_free(f->layer_v_head_dim);
    f->kinds = NULL, f->layer_head_dim = f->layer_kv_heads = f->layer_v_head_dim = NULL;
}

kvc_status kvci_plan_layer_kinds(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    f->kinds = kvci_calloc((size_t)f->n_layers, sizeof *f->kinds);
    if (f->kinds == NULL)
        return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    kvc_family_ctx ctx = {.hp = hp, .n_layers = f->n_layers, .warn = kvci_plan_warn_text, .user = plan};
    KVC_TRY(kvci_family_layer_kinds(f->fam, &ctx, f->kinds));
    f->window = ctx.window;
    if (f->fam->layer_dims != NULL) KVC_TRY(layer_dims(&ctx, plan, f));
    if (kvci_plan_has_block_configs(hp)) KVC_TRY(kvci_plan_block_configs(hp, plan, f));
    KVC_TRY(share_kv_layers(hp, plan, f));
    f->chunk = ctx.chunk;
    if (f->fam == &kvc_family_deepseek_v4) KVC_TRY(kvci_plan_v4_read(hp, plan, f));
    const char *mt = hp->model_type != NULL ? hp->model_type : "";
    if (strcmp(mt, "dory") == 0) KVC_TRY(kvci_plan_dory_loops(hp, plan, f));
    if (strcmp(mt, "qwen4_exp_text") == 0 || strcmp(mt, "qwen4_exp") == 0) KVC_TRY(kvci_plan_qsa_indexer(hp, plan, f));
    if (strcmp(mt, "kolibri1_1") == 0) KVC_TRY(kvci_plan_kv_sources(hp, plan, f));
    if (kvci_plan_is_minimax_m3(mt)) KVC_TRY(kvci_plan_minimax_m3_index(hp, plan, f));
    const bool glm5 = strcmp(mt, "glm_moe_dsa") == 0;
    if (f->fam == &kvc_family_hy_v4 || glm5) { /* indexer keys on the layers that run their own indexer */
        f->index_layers = kvci_calloc((size_t)f->n_layers, sizeof *f->index_layers);
        if (f->index_layers == NULL)
            return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
        KVC_TRY(glm5 ? kvci_glm_dsa_indexed(&hp->cfg, f->n_layers, f->index_layers)
                     : kvci_hy_v4_indexed(hp, f->n_layers, f->index_layers));
        int64_t own = 0;
        for (int64_t i = 0; i < f->n_layers; i++) own += f->index_layers[i];
        kvci_plan_warn(plan,
                       "indexer_types: %lld of the %lld layers run their own indexer and keep its keys; the others "
                       "reuse the last one's top-k",
                       (long long)own, (long long)f->n_layers);
    }
    /* a window or chunk as long as the longest sequence never drops a key: such layers are full attention */
    const struct {
        kvc_layer_kind kind;
        int64_t span;
        const char *key, *layers;
    } spans[] = {{KVC_LK_SLIDING, f->window, "sliding_window", "window"},
                 {KVC_LK_CHUNKED, f->chunk, "attention_chunk_size", "chunked"}};
    for (size_t s = 0; s < sizeof spans / sizeof spans[0]; s++) {
        bool any = false;
        for (int64_t i = 0; i < f->n_layers; i++) any |= f->kinds[i] == spans[s].kind;
        if (!any || !f->have_max_pos || spans[s].span < f->max_pos) continue;
        kvci_plan_warn(plan,
                       "%s %lld >= max_position_embeddings %lld never drops a key: %s layers planned as FullAttention",
                       spans[s].key, (long long)spans[s].span, (long long)f->max_pos, spans[s].layers);
        for (int64_t i = 0; i < f->n_layers; i++)
            if (f->kinds[i] == spans[s].kind) f->kinds[i] = KVC_LK_FULL;
    }
    return KVC_OK;
}

kvc_status kvci_plan_read_facts(kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    kvc_status st = identify(hp, plan, &f->fam);
    if (st == KVC_OK) st = read_heads(hp, plan, f);
    if (st == KVC_OK) st = read_rope(hp, plan, f);
    return st;
}
