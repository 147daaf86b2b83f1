/* The caches of the plan: state shapes of Mamba / linear-attention layers,
 * the cache entries of every layer per rank, the cache description
 * (kvc_model_cache_info) and the block planner's numbers for it. */
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

/* ---- state (Mamba / linear attention) shapes -------------------------------- */

static kvc_status split_tp(const char *field, int64_t v, int64_t tp, int64_t *out) {
    if (v % tp != 0)
        return kvci_fail(KVC_EINVAL, "config.json: %s %lld is not divisible by tp %lld", field, (long long)v,
                         (long long)tp);
    *out = v / tp;
    return KVC_OK;
}

/* First present of several alternative names, each in [1, KVC_HP_MAX_DIM]. */
static kvc_status int_alt(const kvc_json_obj *cfg, const char *const *names, int n, int64_t *out, bool *have) {
    for (int i = 0; i < n; i++) {
        kvc_status st = kvci_json_int(cfg, names[i], 1, KVC_HP_MAX_DIM, out, have);
        if (st != KVC_OK || *have) return st;
    }
    return KVC_OK;
}

/* Every size below is at most 2^16 (KVC_HP_MAX_DIM) and hidden_size at most
 * 2^20, so the state widths stay below 2^37 and one state block below 2^53
 * bytes: no product here can overflow. */
kvc_status kvci_plan_state_shapes(const kvc_hparams *hp, const kvc_model_facts *f, int64_t tp, kvc_state_shapes *s) {
    const kvc_json_obj *cfg = &hp->cfg;
    *s = (kvc_state_shapes){0};
    kvc_status st = KVC_OK;
    if (f->fam->id == KVC_FAMILY_QWEN3_NEXT) {
        int64_t nk = 0, nv = 0, dk = 0, dv = 0, k = 0, nk_r = 0, nv_r = 0;
        const char *names[] = {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                               "linear_value_head_dim", "linear_conv_kernel_dim"};
        int64_t *dst[] = {&nk, &nv, &dk, &dv, &k};
        for (int i = 0; i < 5; i++)
            if ((st = kvci_json_int(cfg, names[i], 1, KVC_HP_MAX_DIM, dst[i], NULL)) != KVC_OK) return st;
        if ((st = split_tp("linear_num_key_heads", nk, tp, &nk_r)) != KVC_OK) return st;
        if ((st = split_tp("linear_num_value_heads", nv, tp, &nv_r)) != KVC_OK) return st;
        *s = (kvc_state_shapes){.n = 2,
                                .names = {"conv_state", "recurrent_state"},
                                .n_shape = {2, 3},
                                .shape = {{2 * nk_r * dk + nv_r * dv, k}, {nv_r, dk, dv}}};
        return KVC_OK;
    }
    if (f->fam->id == KVC_FAMILY_JAMBA) {
        int64_t state = 0, conv = 0, expand = 0, inner_r = 0;
        if ((st = kvci_json_int(cfg, "mamba_d_state", 1, KVC_HP_MAX_DIM, &state, NULL)) != KVC_OK) return st;
        if ((st = kvci_json_int(cfg, "mamba_d_conv", 1, KVC_HP_MAX_DIM, &conv, NULL)) != KVC_OK) return st;
        if ((st = kvci_json_int(cfg, "mamba_expand", 1, KVC_HP_MAX_DIM, &expand, NULL)) != KVC_OK) return st;
        if (f->hidden_size < 1)
            return kvci_fail(KVC_EINVAL,
                             "config.json: hidden_size is missing (Mamba layers are mamba_expand * hidden_size wide)");
        if ((st = split_tp("mamba_expand * hidden_size", expand * f->hidden_size, tp, &inner_r)) != KVC_OK) return st;
        *s = (kvc_state_shapes){.n = 2,
                                .names = {"conv_state", "ssm_state"},
                                .n_shape = {2, 2},
                                .shape = {{inner_r, conv}, {inner_r, state}}};
        return KVC_OK;
    }
    /* Mamba2-style fields (Granite 4, Nemotron-H, ...). */
    static const char *const heads_n[] = {"mamba_n_heads", "mamba_num_heads"};
    static const char *const hdim_n[] = {"mamba_d_head", "mamba_head_dim"};
    static const char *const state_n[] = {"mamba_d_state", "ssm_state_size", "state_size"};
    static const char *const conv_n[] = {"mamba_d_conv", "conv_kernel"};
    static const char *const groups_n[] = {"mamba_n_groups", "n_groups"};
    int64_t heads = 0, hdim = 0, state = 0, conv = 0, groups = 1;
    bool h1 = false, h2 = false, h3 = false, h4 = false, h5 = false;
    if ((st = int_alt(cfg, heads_n, 2, &heads, &h1)) != KVC_OK) return st;
    if ((st = int_alt(cfg, hdim_n, 2, &hdim, &h2)) != KVC_OK) return st;
    if ((st = int_alt(cfg, state_n, 3, &state, &h3)) != KVC_OK) return st;
    if ((st = int_alt(cfg, conv_n, 2, &conv, &h4)) != KVC_OK) return st;
    if ((st = int_alt(cfg, groups_n, 2, &groups, &h5)) != KVC_OK) return st;
    if (!h1 || !h2 || !h3 || !h4)
        return kvci_fail(KVC_EINVAL, "config.json: the state layers need %s%s%s%s to size their state",
                         h1 ? "" : "mamba_n_heads ", h2 ? "" : "mamba_d_head ", h3 ? "" : "mamba_d_state ",
                         h4 ? "" : "mamba_d_conv");
    int64_t heads_r = 0, conv_r = 0;
    if ((st = split_tp("mamba_n_heads", heads, tp, &heads_r)) != KVC_OK) return st;
    if ((st = split_tp("mamba conv channels", heads * hdim + 2 * groups * state, tp, &conv_r)) != KVC_OK) return st;
    *s = (kvc_state_shapes){.n = 2,
                            .names = {"conv_state", "ssm_state"},
                            .n_shape = {2, 3},
                            .shape = {{conv_r, conv, 0}, {heads_r, hdim, state}}};
    return KVC_OK;
}

/* ---- caches and the cache description --------------------------------------- */

static void add_cache(kvc_plan_layer *L, const char *name, int64_t heads, int64_t dim, kvc_dtype dtype,
                      int64_t block_size) {
    kvc_plan_cache *c = &L->caches[L->n_caches++];
    *c = (kvc_plan_cache){.num_head = heads, .dim = dim, .dtype = dtype};
    kvci_plan_copy_text(c->name, sizeof c->name, name);
    c->bytes_per_token = heads * dim * (int64_t)kvc_dtype_size(dtype);
    c->bytes_per_block = c->bytes_per_token * block_size;
}

static void add_state(kvc_plan_layer *L, const kvc_state_shapes *s, int32_t k, kvc_dtype dtype) {
    kvc_plan_cache *c = &L->caches[L->n_caches++];
    *c = (kvc_plan_cache){.is_state = true, .n_shape = s->n_shape[k], .dtype = dtype};
    kvci_plan_copy_text(c->name, sizeof c->name, s->names[k]);
    int64_t numel = 1;
    for (int32_t d = 0; d < s->n_shape[k]; d++) {
        c->shape[d] = s->shape[k][d];
        numel *= s->shape[k][d];
    }
    c->bytes_per_block = numel * (int64_t)kvc_dtype_size(dtype);
}

kvc_status kvci_plan_build_cache_info(kvc_model_plan *plan) {
    kvc_layer_cache_info *layers = kvci_calloc((size_t)plan->n_layers, sizeof *layers);
    int64_t n_entries = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) n_entries += plan->layers[i].n_caches;
    kvc_cache_entry *entries = kvci_calloc((size_t)n_entries, sizeof *entries);
    if (layers == NULL || entries == NULL) {
        kvci_free(layers);
        kvci_free(entries);
        return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld cache entries", (long long)n_entries);
    }
    /* Distinct windows need distinct managers (one window per SlidingWindow group). */
    bool multi_window = false;
    int64_t first_window = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) {
        int64_t w = plan->layers[i].sliding_window;
        if (w == 0) continue;
        if (first_window == 0) first_window = w;
        multi_window |= w != first_window;
    }
    int64_t next = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) {
        const kvc_plan_layer *L = &plan->layers[i];
        layers[i] = (kvc_layer_cache_info){.layer_idx = i, .n_caches = L->n_caches, .caches = &entries[next]};
        for (int32_t c = 0; c < L->n_caches; c++) {
            const kvc_plan_cache *pc = &L->caches[c];
            kvc_cache_entry *e = &entries[next++];
            *e = kvc_cache_entry_default();
            kvci_plan_copy_text(e->name, sizeof e->name, pc->name);
            e->attn_type = (int32_t)L->attn_type;
            e->dtype = pc->dtype;
            e->needs_block = true;
            if (pc->is_state) {
                e->is_state = true;
                e->block_size = 1;
                e->n_shape = pc->n_shape;
                for (int32_t d = 0; d < pc->n_shape; d++) e->shape[d] = pc->shape[d];
                e->next_n = plan->options.next_n;
                continue;
            }
            e->num_head = pc->num_head;
            e->n_dims = 1;
            e->dim[0] = pc->dim;
            e->block_size = plan->options.block_size;
            if (L->attn_type == KVC_ATTN_SLIDING_WINDOW) {
                e->sliding_window = L->sliding_window;
                if (multi_window)
                    snprintf(e->manager_key, sizeof e->manager_key, "SlidingWindow_%lld", (long long)L->sliding_window);
            }
        }
    }
    plan->cache_info = (kvc_model_cache_info){.num_layers = plan->n_layers,
                                              .n_layer_infos = plan->n_layers,
                                              .layer_infos = layers,
                                              .is_mla_backend = plan->mla};
    return KVC_OK;
}

kvc_status kvci_plan_run_planner(kvc_model_plan *plan) {
    kvc_plan_params pp = kvc_plan_default_params();
    pp.max_concurrency = plan->options.max_concurrency;
    pp.next_n = plan->options.next_n;
    pp.shared_pools = true; /* as the engine serves them */
    if (plan->options.kv_memory_bytes > 0) {
        pp.mode = KVC_PLAN_BUDGET;
        pp.kv_memory_bytes = plan->options.kv_memory_bytes;
    } else {
        pp.mode = KVC_PLAN_OFFLINE;
        pp.max_len = plan->options.max_model_len;
        pp.free_bytes = -1;
    }
    plan->plan_params = pp;
    kvc_status st = kvc_plan_blocks(&pp, &plan->cache_info, &plan->blocks);
    if (st != KVC_OK) {
        char msg[KVC_PLAN_TEXT_MAX * 2];
        snprintf(msg, sizeof msg, "%s", kvc_last_error());
        return kvci_fail(st, "planning the caches of %s: %s", plan->architecture, msg);
    }
    return KVC_OK;
}

kvc_status kvci_plan_build_layers(kvc_model_plan *plan, const kvc_model_facts *f, const kvc_state_shapes *states,
                                  int64_t kv_per_rank) {
    const kvc_plan_options *o = &plan->options;
    plan->n_layers = (int32_t)f->n_layers;
    plan->layers = kvci_calloc((size_t)f->n_layers, sizeof *plan->layers);
    if (plan->layers == NULL)
        return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    kvc_dtype dt = o->kv_dtype;
    const kvc_family_dims fd = {.num_heads = plan->q_heads_per_rank,
                                .num_kv_heads = kv_per_rank,
                                .head_dim = f->head_dim,
                                .kv_lora_rank = f->kv_lora_rank,
                                .qk_nope_head_dim = f->qk_nope_head_dim,
                                .qk_rope_head_dim = f->qk_rope_head_dim,
                                .v_head_dim = f->v_head_dim};
    const kvc_cache_dims cd = kvci_family_cache_dims(f->fam, &fd, plan->mla); /* MLA plans latent caches */
    for (int32_t i = 0; i < plan->n_layers; i++) {
        kvc_plan_layer *L = &plan->layers[i];
        L->layer = i;
        switch (f->kinds[i]) {
        case KVC_LK_FULL: L->attn_type = KVC_ATTN_FULL; break;
        case KVC_LK_SLIDING:
            L->attn_type = KVC_ATTN_SLIDING_WINDOW;
            L->sliding_window = f->window;
            break;
        case KVC_LK_STATE: L->attn_type = KVC_ATTN_MAMBA; break;
        }
        kvci_plan_set_layer_masks(plan, L);
        if (L->attn_type == KVC_ATTN_MAMBA) {
            for (int32_t k = 0; k < states->n; k++) add_state(L, states, k, dt);
        } else {
            /* int8 latent keeps a bf16 rope cache (AO 3.8 full-quant variant). */
            const kvc_dtype v_dt = plan->mla && dt == KVC_DTYPE_I8 ? KVC_DTYPE_BF16 : dt;
            add_cache(L, plan->mla ? "nope_cache" : "k_cache", cd.heads[0], cd.dim[0], dt, o->block_size);
            add_cache(L, plan->mla ? "rope_cache" : "v_cache", cd.heads[1], cd.dim[1], v_dt, o->block_size);
        }
    }
    return KVC_OK;
}
