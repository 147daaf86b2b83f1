/* The model runtime seen by the engine: a kvc_engine_model whose forward is
 * kvc_model_forward over caches the engine allocated. Managed path: the
 * model's cache description with setters that record each layer's paged k/v
 * tensors; self-managed path: legacy contiguous k/v caches per layer with
 * shapes taken from the same description. */
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "kvcache/engine.h"
#include "model/family.h"

struct kvc_engine_adapter {
    const kvc_model *m;
    kvc_engine_model em;
    kvc_model_cache_info *ci;        /* managed: handed to the engine; self-managed: shapes only */
    kvc_engine_legacy_cache *legacy; /* self-managed: [2 * n_layers] k, v of each layer */
    kvc_layer_cache *layers;         /* [n_layers] tensors recorded by the setters */
    kvc_model_caches caches;
    kvc_model_workspace *ws;
};

/* user: the kvc_tensor slot of one layer's k or v */
static void record_tensor(void *user, const kvc_tensor *t) { *(kvc_tensor *)user = *t; }

static kvc_status adapter_forward(void *self, const int32_t *ids, const kvc_engine_batch *batch, float *logits) {
    kvc_engine_adapter *a = self;
    kvc_forward_args fa = {.token_ids = ids,
                           .md = batch->md,
                           .caches = &a->caches,
                           .cache_rows = batch->cache_rows,
                           .all_logits = false,
                           .logits = logits};
    return kvc_model_forward(a->m, a->ws, &fa);
}

/* Multiply-adds of the dense layers of one token (projections and MLP or
 * routed experts, sliding-window attention over a full window), of one
 * pair of a query token and a key position in the full-attention layers,
 * and of one row's output head and sampling pass: the step cost model of
 * the stall-free limit (kvc_engine_model.cost_*). */
static void set_costs(kvc_engine_model *em, const kvc_model_config *c, bool latent) {
    const double H = (double)c->hidden_size, nH = (double)c->num_heads, V = (double)c->vocab_size;
    const kvc_cache_dims full = kvci_model_cache_dims(c, false);
    double dq = (double)full.dim[0], dv = (double)full.dim[1], proj;
    if (kvci_family_get(c->family)->mla) {
        const double dn = (double)c->qk_nope_head_dim, dr = (double)c->qk_rope_head_dim, rkv = (double)c->kv_lora_rank;
        const double q =
            c->q_lora_rank > 0 ? H * (double)c->q_lora_rank + (double)c->q_lora_rank * nH * dq : H * nH * dq;
        proj = q + H * (rkv + dr) + rkv * nH * (dn + dv) + nH * dv * H;
        if (latent) dq = rkv + dr, dv = rkv; /* scores over the latent and rope parts, values over the latent */
    } else {
        proj = H * nH * dq * 2.0 + 2.0 * H * (double)c->num_kv_heads * dq;
    }
    const double pair = nH * (dq + dv);
    double token = 0.0, context = 0.0;
    for (int64_t l = 0; l < c->num_layers; l++) {
        double mlp = 3.0 * H * (double)c->intermediate_size;
        if (c->family == KVC_FAMILY_GPT_OSS)
            mlp = H * (double)c->num_experts + (double)c->experts_per_tok * 3.0 * H * (double)c->intermediate_size;
        else if (c->family == KVC_FAMILY_DEEPSEEK_V3 && l >= c->first_k_dense_replace)
            mlp = H * (double)c->n_routed_experts +
                  (double)(c->experts_per_tok + c->n_shared_experts) * 3.0 * H * (double)c->moe_intermediate_size;
        token += proj + mlp;
        if (c->layer_sliding[l])
            token += pair * (double)c->sliding_window;
        else
            context += pair;
    }
    em->cost_token = token;
    em->cost_context = context;
    em->cost_row = H * V + V;
}

/* The tensor slot entry c of a layer's cache info fills: k, v, then (int8 / fp8) the per-slot scales. */
static kvc_tensor *entry_tensor(kvc_layer_cache *lc, int32_t c) {
    kvc_tensor *slots[4] = {&lc->k, &lc->v, &lc->k_scales, &lc->v_scales};
    return slots[c];
}

/* Keys in lanes: every layer's k entry (the first) in BNNDBS, its v entry (the second) head-major. */
static void set_lanes_layout(kvc_model_cache_info *ci) {
    for (int32_t i = 0; i < ci->n_layer_infos; i++) {
        ci->layer_infos[i].caches[0].layout = KVC_BLOCK_BNNDBS;
        ci->layer_infos[i].caches[1].layout = KVC_BLOCK_BNNBSD;
    }
}

/* Managed: setters into layers[l].k / .v (/ scales), keys from the entries' groups. */
static void wire_managed(kvc_engine_adapter *a) {
    for (int32_t i = 0; i < a->ci->n_layer_infos; i++) {
        kvc_layer_cache_info *li = &a->ci->layer_infos[i];
        kvc_layer_cache *lc = &a->layers[li->layer_idx];
        for (int32_t c = 0; c < li->n_caches; c++) {
            li->caches[c].tensor_setter = record_tensor;
            li->caches[c].setter_user = entry_tensor(lc, c);
        }
        snprintf(lc->key, sizeof lc->key, "%s", kvc_cache_entry_group_key(&li->caches[0]));
    }
    a->em.cache_info = a->ci;
}

/* Self-managed: one legacy cache per entry, unit = heads * dims. */
static kvc_status wire_legacy(kvc_engine_adapter *a) {
    int32_t n = 0;
    for (int32_t i = 0; i < a->ci->n_layer_infos; i++) n += a->ci->layer_infos[i].n_caches;
    a->legacy = kvci_calloc((size_t)n, sizeof *a->legacy);
    if (a->legacy == NULL) return kvci_fail(KVC_ENOMEM, "engine adapter: out of host memory for the legacy caches");
    n = 0;
    for (int32_t i = 0; i < a->ci->n_layer_infos; i++) {
        const kvc_layer_cache_info *li = &a->ci->layer_infos[i];
        kvc_layer_cache *lc = &a->layers[li->layer_idx];
        for (int32_t e_i = 0; e_i < li->n_caches; e_i++) {
            const kvc_cache_entry *e = &li->caches[e_i];
            kvc_engine_legacy_cache *c = &a->legacy[n++];
            snprintf(c->name, sizeof c->name, "%s", e->name);
            c->layer_idx = li->layer_idx;
            c->dtype = e->dtype;
            c->n_dims = 1;
            c->unit[0] = e->num_head * kvc_cache_entry_dim_numel(e);
            c->tensor_setter = record_tensor;
            c->setter_user = entry_tensor(lc, e_i);
        }
    }
    a->em.legacy_caches = a->legacy;
    a->em.n_legacy_caches = n;
    return KVC_OK;
}

kvc_status kvc_engine_adapter_create(const kvc_model *m, const kvc_engine_adapter_params *p,
                                     const kvc_engine_params *ep, kvc_engine_adapter **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_adapter_create: out is NULL");
    *out = NULL;
    if (m == NULL || p == NULL || ep == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_engine_adapter_create: model, params and engine params must not be NULL");
    const int64_t step_tokens = kvc_engine_step_tokens(ep);
    if (step_tokens < 1) return KVC_EINVAL; /* the engine's own check has set the message */
    if (!kvc_model_kv_dtype_ok(ep->kv_dtype))
        return kvci_fail(KVC_EINVAL,
                         "engine adapter: kv_dtype %s (%d) is not a KV cache dtype (f32, f16, bf16, i8, "
                         "fp8_e4m3, fp8_e5m2)",
                         kvc_dtype_name(ep->kv_dtype), (int)ep->kv_dtype);
    if (ep->kv_layout != KVC_BLOCK_BNBSND && ep->kv_layout != KVC_BLOCK_BNNDBS)
        return kvci_fail(KVC_EINVAL, "engine adapter: kv_layout %d is not BNBSND or BNNDBS (keys in lanes)",
                         (int)ep->kv_layout);
    const kvc_model_config *c = kvc_model_config_of(m);
    kvc_engine_adapter *a = kvci_calloc(1, sizeof *a);
    if (a == NULL) return kvci_fail(KVC_ENOMEM, "kvc_engine_adapter_create: out of host memory");
    a->m = m;
    a->layers = kvci_calloc((size_t)c->num_layers, sizeof *a->layers);
    kvc_status st = a->layers != NULL ? KVC_OK : kvci_fail(KVC_ENOMEM, "engine adapter: out of host memory");
    const bool lanes = ep->kv_layout == KVC_BLOCK_BNNDBS;
    if (st == KVC_OK && lanes && (p->self_managed || p->latent))
        st = kvci_fail(KVC_EINVAL,
                       "engine adapter: kv_layout BNNDBS (keys in lanes) takes managed full-form caches, "
                       "not %s",
                       p->self_managed ? "self-managed ones" : "MLA latent ones");
    /* the self-managed path reads only shapes, so any block size will do */
    if (st == KVC_OK)
        st = kvc_model_cache_info_build(m, p->latent, ep->kv_dtype, p->self_managed ? 1 : p->block_size, &a->ci);
    if (st == KVC_OK && lanes) set_lanes_layout(a->ci);
    if (st == KVC_OK) {
        a->em.self = a;
        a->em.vocab_size = c->vocab_size;
        a->em.forward = adapter_forward;
        set_costs(&a->em, c, p->latent);
        a->caches = (kvc_model_caches){.kind = p->self_managed ? KVC_MCACHE_CONTIGUOUS : KVC_MCACHE_PAGED,
                                       .latent = p->latent,
                                       .block_size = p->self_managed ? 0 : p->block_size,
                                       .layout = ep->kv_layout,
                                       .n_layers = (int32_t)c->num_layers,
                                       .layers = a->layers};
        if (p->self_managed)
            st = wire_legacy(a);
        else
            wire_managed(a);
    }
    if (st == KVC_OK) st = kvc_model_workspace_create(m, step_tokens, ep->max_num_seqs, ep->max_model_len, &a->ws);
    if (st != KVC_OK) {
        kvc_engine_adapter_destroy(a);
        return st;
    }
    *out = a;
    return KVC_OK;
}

void kvc_engine_adapter_destroy(kvc_engine_adapter *a) {
    if (a == NULL) return;
    kvc_model_workspace_destroy(a->ws);
    kvc_model_cache_info_destroy(a->ci);
    kvci_free(a->legacy);
    kvci_free(a->layers);
    kvci_free(a);
}

const kvc_engine_model *kvc_engine_adapter_model(const kvc_engine_adapter *a) { return a != NULL ? &a->em : NULL; }
