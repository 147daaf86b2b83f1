/* The model runtime seen by the engine: a kvc_engine_model whose forward is
 * kvc_model_forward over caches the engine allocated. The cache builder
 * (model/cache_build.h) describes them for both paths: managed, its entries
 * with setters that record each layer's paged tensors; self-managed, one
 * legacy contiguous cache per entry of the same description. */
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "engine/engine_internal.h"
#include "kvcache/engine.h"
#include "model/cache_build.h"
#include "model/family.h"
#include "model/model_internal.h"

struct kvc_engine_adapter {
    const kvc_model *m;
    kvc_engine_model em;
    kvci_cache_set cache;            /* the entries (managed: handed to the engine) behind caches */
    kvc_model_caches caches;         /* what the forward reads, filled by the setters */
    kvc_engine_legacy_cache *legacy; /* self-managed: one per entry */
    kvc_model_workspace *ws;
    bool serving;         /* a live engine runs on em (kvci_engine_adapter_claim) */
    bool destroy_pending; /* destroyed while serving: freed when that engine lets go of it */
};

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
 * routed experts (DeepseekV3, Qwen3-MoE, Mixtral), sliding-window attention over a full window, LFM2's
 * short convolutions), of one
 * pair of a query token and a key position in the full-attention layers,
 * and of one row's output head and sampling pass: the step cost model of
 * the stall-free limit (kvc_engine_model.cost_*). */
static void set_costs(kvc_engine_model *em, const kvc_model_config *c, bool latent) {
    const double H = (double)c->hidden_size, nH = (double)c->num_heads, V = (double)c->vocab_size;
    const kvc_cache_dims full = kvci_model_cache_dims(c, false);
    double dq = (double)full.dim[0], dv = (double)full.dim[1], proj = 0.0;
    if (kvci_family_get(c->family)->mla) {
        const double dn = (double)c->qk_nope_head_dim, dr = (double)c->qk_rope_head_dim, rkv = (double)c->kv_lora_rank;
        const double q =
            c->q_lora_rank > 0 ? H * (double)c->q_lora_rank + (double)c->q_lora_rank * nH * dq : H * nH * dq;
        proj = q + H * (rkv + dr) + rkv * nH * (dn + dv) + nH * dv * H;
        if (latent) dq = rkv + dr, dv = rkv; /* scores over the latent and rope parts, values over the latent */
    }
    const bool mla = kvci_family_get(c->family)->mla;
    double pair = nH * (dq + dv);
    double token = 0.0, context = 0.0;
    for (int64_t l = 0; l < c->num_layers; l++) {
        double mlp = (c->mlp_plain ? 2.0 : 3.0) * H * (double)c->intermediate_size; /* StarCoder2's: no gate */
        if (c->family == KVC_FAMILY_GPT_OSS)
            mlp = H * (double)c->num_experts + (double)c->experts_per_tok * 3.0 * H * (double)c->intermediate_size;
        else if (c->layer_moe[l]) { /* Nemotron-H's experts: ungated (mlp_plain), in moe_latent_size when set */
            const double g = c->mlp_plain ? 2.0 : 3.0, W = c->moe_latent_size > 0 ? (double)c->moe_latent_size : H;
            mlp = H * (double)c->n_routed_experts +
                  (double)c->experts_per_tok * g * W * (double)c->moe_intermediate_size +
                  g * H * (double)c->shared_expert_intermediate_size + 2.0 * H * (double)c->moe_latent_size;
        }
        if (c->layer_no_ffn[l]) mlp = 0.0; /* Nemotron-H: one block a layer */
        if (c->layer_no_mixer[l]) {
            token += mlp;
            continue;
        }
        if (c->layer_conv[l]) { /* LFM2's short convolution: in_proj 3 H^2, out_proj H^2, L taps; no context */
            token += 4.0 * H * H + H * (double)c->conv_kernel + mlp;
            continue;
        }
        if (c->layer_mamba[l]) { /* Mamba2: in_proj and out_proj, the conv taps, the scan's nh P N per token */
            const double I = (double)(c->mamba_heads * c->mamba_head_dim);
            const double C = I + 2.0 * (double)(c->mamba_groups * c->mamba_d_state);
            token += H * (I + C + (double)c->mamba_heads) + H * I + C * (double)c->conv_kernel +
                     3.0 * I * (double)c->mamba_d_state + mlp;
            if (!c->mamba_parallel_attn && !c->layer_shared_block[l]) continue;
            mlp = 0.0; /* Falcon-H1, Zamba2's hybrid layers: attention beside the mixer (its MLP counted above) */
        }
        if (c->layer_lightning[l]) { /* MiniMax's lightning attention: qkv, gate and out_proj, the state's 2 nH D^2 */
            const double W = nH * (double)c->head_dim; /* the heads' width */
            token += 5.0 * H * W + 2.0 * W * (double)c->head_dim + mlp;
            continue;
        }
        if (c->family == KVC_FAMILY_RWKV) { /* RWKV-4: key, value, receptance, output; channel mix 2 H I + H^2 */
            token += 5.0 * H * H + 2.0 * H * (double)c->intermediate_size;
            continue;
        }
        if (c->layer_rglru[l]) { /* RecurrentGemma's recurrent block: linear_x, _y, _out, the gates' 2 W bw, L taps */
            const double W = (double)c->lru_width;
            token += 3.0 * H * W + 2.0 * W * W / nH + W * (double)c->conv_kernel + mlp;
            continue;
        }
        if (c->layer_mamba1[l]) { /* Mamba-1: in_proj, x_proj, dt_proj, out_proj, the conv taps, the scan's I N */
            const double I = (double)c->mamba_inner, X = (double)(c->mamba_dt_rank + 2 * c->mamba_d_state);
            token += 3.0 * H * I + I * X + I * (double)c->mamba_dt_rank + I * (double)c->conv_kernel +
                     3.0 * I * (double)c->mamba_d_state + mlp;
            if (!c->layer_shared_block[l]) continue;
            mlp = 0.0; /* Zamba's hybrid layers: the shared block's attention too */
        }
        if (!mla) { /* the layer's own heads and dims (kvci_layer_shape); AFMoE's gate */
            const kvci_attn_shape sh = kvci_layer_shape(c, l);
            const double lq = (double)sh.q_width, lk = (double)sh.k_width, lv = (double)sh.v_width;
            proj = H * lq * (c->attn_gate_proj ? 2.0 : 1.0) + H * (double)sh.o_width + H * (lk + lv);
            pair = (double)sh.nH * (double)(sh.D + sh.Dv);
        }
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

/* Self-managed: one legacy cache per entry, unit = heads * dims, received by the entry's setter. */
static kvc_status wire_legacy(kvc_engine_adapter *a) {
    const kvc_model_cache_info *ci = a->cache.ci;
    int32_t n = 0;
    for (int32_t i = 0; i < ci->n_layer_infos; i++) n += ci->layer_infos[i].n_caches;
    a->legacy = kvci_calloc((size_t)n, sizeof *a->legacy);
    if (a->legacy == NULL) return kvci_fail(KVC_ENOMEM, "engine adapter: out of host memory for the legacy caches");
    n = 0;
    for (int32_t i = 0; i < ci->n_layer_infos; i++) {
        const kvc_layer_cache_info *li = &ci->layer_infos[i];
        for (int32_t e_i = 0; e_i < li->n_caches; e_i++) {
            const kvc_cache_entry *e = &li->caches[e_i];
            kvc_engine_legacy_cache *c = &a->legacy[n++];
            snprintf(c->name, sizeof c->name, "%s", e->name);
            c->layer_idx = li->layer_idx;
            c->dtype = e->dtype;
            c->n_dims = 1;
            c->unit[0] = e->num_head * kvc_cache_entry_dim_numel(e);
            c->tensor_setter = e->tensor_setter;
            c->setter_user = e->setter_user;
        }
    }
    a->em.legacy_caches = a->legacy;
    a->em.n_legacy_caches = n;
    return KVC_OK;
}

kvc_engine_adapter_params kvc_engine_adapter_default_params(void) {
    return (kvc_engine_adapter_params){.self_managed = false, .latent = false, .cache = kvc_cache_knobs_default()};
}

kvc_status kvc_engine_adapter_create(const kvc_model *m, const kvc_engine_adapter_params *p,
                                     const kvc_engine_params *ep, kvc_engine_adapter **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_adapter_create: out is NULL");
    *out = NULL;
    if (m == NULL || p == NULL || ep == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_engine_adapter_create: model, params and engine params must not be NULL");
    const int64_t step_tokens = kvc_engine_step_tokens(ep);
    if (step_tokens < 1) return KVC_EINVAL; /* the engine's own check has set the message */
    const kvci_cache_knobs k = {.cache = p->cache, .paged = !p->self_managed, .latent = p->latent};
    kvc_status st = kvci_cache_knobs_check(
        m, &k, "engine adapter", "cache.",
        p->self_managed ? "by self-managed caches" : (p->latent ? "by MLA latent caches" : "by managed caches"));
    if (st != KVC_OK) return st;
    const kvc_model_config *c = kvc_model_config_of(m);
    if (c->pos_learned && ep->max_model_len > c->max_position_embeddings) /* forward refuses those positions */
        return kvci_fail(KVC_EINVAL,
                         "engine adapter: max_model_len %lld is beyond the %lld learned positions of %s "
                         "(max_position_embeddings, n_positions)",
                         (long long)ep->max_model_len, (long long)c->max_position_embeddings, c->model_type);
    const int64_t first = kvci_model_first_state(c);
    if (first >= 0 && p->self_managed) /* docs/runtime.md, "State layers" */
        return kvci_fail(KVC_EINVAL,
                         "engine adapter: %s has state layers (layer %lld: short convolution, Mamba2 or Gated "
                         "DeltaNet) whose per-sequence states self-managed caches do not keep: use managed caches (a "
                         "block of the manager's state group per request)",
                         c->model_type, (long long)kvci_model_first_state(c));
    kvc_engine_adapter *a = kvci_calloc(1, sizeof *a);
    if (a == NULL) return kvci_fail(KVC_ENOMEM, "kvc_engine_adapter_create: out of host memory");
    a->m = m;
    st = kvci_cache_set_build(m, &k, &a->caches, &a->cache);
    if (st == KVC_OK) {
        a->em.self = a;
        a->em.vocab_size = c->vocab_size;
        a->em.forward = adapter_forward;
        set_costs(&a->em, c, p->latent);
        kvci_cache_set_wire_setters(&a->cache);
        if (p->self_managed) {
            st = wire_legacy(a);
        } else { /* each layer's block size is its key's, from the tensors the storage hands the setters: the
                  * engine may grow a key's (kvc_engine_params.shared_pools, kvc_cache_info_unify_pages) */
            a->em.cache_info = a->cache.ci;
            a->caches.block_size = 0;
        }
    }
    if (st == KVC_OK) st = kvc_model_workspace_create(m, step_tokens, ep->max_num_seqs, ep->max_model_len, &a->ws);
    if (st != KVC_OK) {
        kvc_engine_adapter_destroy(a);
        return st;
    }
    *out = a;
    return KVC_OK;
}

static void adapter_free(kvc_engine_adapter *a) {
    kvc_model_workspace_destroy(a->ws);
    kvci_cache_set_release(&a->cache);
    kvci_free(a->legacy);
    kvci_free(a);
}

/* Destroyed before the engine it serves (the documented order is the reverse): the engine still steps over its
 * caches and clears its cache description when destroyed, so the adapter goes with that engine instead. */
void kvc_engine_adapter_destroy(kvc_engine_adapter *a) {
    if (a == NULL) return;
    if (a->serving)
        a->destroy_pending = true;
    else
        adapter_free(a);
}

kvc_status kvci_engine_adapter_claim(const kvc_engine_model *model, bool *claimed) {
    *claimed = false;
    if (model->forward != adapter_forward) return KVC_OK;
    kvc_engine_adapter *a = model->self;
    if (a->serving) /* a second engine would run its rows over the first's caches and workspace */
        return kvci_fail(KVC_EINVAL,
                         "kvc_engine_create: this engine adapter (%s, %s caches) already serves a live "
                         "engine (one live engine per adapter; destroy that engine first)",
                         kvc_model_config_of(a->m)->model_type, a->legacy != NULL ? "self-managed" : "managed");
    a->serving = *claimed = true;
    return KVC_OK;
}

void kvci_engine_adapter_unclaim(const kvc_engine_model *model) {
    if (model->forward != adapter_forward) return;
    kvc_engine_adapter *a = model->self;
    a->serving = false;
    if (a->destroy_pending) adapter_free(a);
}

const kvc_engine_model *kvc_engine_adapter_model(const kvc_engine_adapter *a) { return a != NULL ? &a->em : NULL; }
