/* The caches of the plan: the cache entries of every layer per rank (state
 * shapes from the family, model/family.h), the cache description
 * (kvc_model_cache_info) and the block planner's numbers for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "plan/plan_internal.h"

/* ---- caches and the cache description --------------------------------------- */

void kvci_plan_add_cache(kvc_plan_layer *L, const char *name, int64_t heads, int64_t dim, kvc_dtype dtype,
                         int64_t block_size) {
    kvc_plan_cache *c = &L->caches[L->n_caches++];
    *c = (kvc_plan_cache){.num_head = heads, .dim = dim, .dtype = dtype};
    kvci_plan_copy_text(c->name, sizeof c->name, name);
    int64_t row = 0; /* a dim that is not whole blocks of the dtype: 0 here, refused by name by the planner */
    kvci_dtype_bytes(dtype, dim, &row);
    c->bytes_per_token = heads * row;
    c->bytes_per_block = c->bytes_per_token * block_size;
}

void kvci_plan_add_state(kvc_plan_layer *L, const kvc_state_shapes *s, int32_t k, kvc_dtype dtype) {
    kvc_plan_cache *c = &L->caches[L->n_caches++];
    *c = (kvc_plan_cache){.is_state = true, .n_shape = s->n_shape[k], .dtype = dtype};
    kvci_plan_copy_text(c->name, sizeof c->name, s->names[k]);
    int64_t numel = 1;
    for (int32_t d = 0; d < s->n_shape[k]; d++) {
        c->shape[d] = s->shape[k][d];
        numel *= s->shape[k][d];
    }
    kvci_dtype_bytes(dtype, numel, &c->bytes_per_block); /* not whole blocks: 0, refused by the planner */
}

/* Whether layer i's caches are position caches (not a state) whose pages all have `page` bytes (0: take the
 * first one's). */
static bool uniform_position_layer(const kvc_plan_layer *L, int64_t *page) {
    for (int32_t c = 0; c < L->n_caches; c++) {
        if (L->caches[c].is_state) return false;
        if (*page == 0) *page = L->caches[c].bytes_per_block;
        if (L->caches[c].bytes_per_block != *page) return false;
    }
    return L->n_caches > 0;
}

/* Equal layer groups (vLLM's rule for one pool of uniform pages): when the position caches of a hybrid model
 * have one page size (once unified: Gemma 4's full layers, whose heads are wider, take fewer tokens a page), the pool's
 * block id is a page for every layer of its widest key, and a key with fewer layers would leave the rest of each id it
 * holds unused. So every key is cut into groups of about as many layers as the smallest key has (as many as the largest
 * when that is within 25 % of it, fewer cuts then), layer j of a key into group j mod n_groups, each group a manager
 * key of its own "<key>.g<i>" with its own block table. The groups' layers differ by at most one, and the keys stay
 * within KVC_MAX_MANAGERS. */
void kvci_plan_split_keys(kvc_model_plan *plan) {
    kvc_layer_cache_info *layers = plan->cache_info.layer_infos;
    const char *names[KVC_MAX_MANAGERS];
    int64_t count[KVC_MAX_MANAGERS], page = 0;
    int32_t n_keys = 0, others = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) {
        if (!uniform_position_layer(&plan->layers[i], &page)) {
            if (plan->layers[i].n_caches > 0 && plan->layers[i].caches[0].is_state) others = 1;
            if (!plan->layers[i].caches[0].is_state) return; /* pages differ: no pool to share */
            continue;
        }
        const char *key = kvc_cache_entry_group_key(&layers[i].caches[0]);
        int32_t k = 0;
        while (k < n_keys && strcmp(names[k], key) != 0) k++;
        if (k == n_keys) {
            if (n_keys == KVC_MAX_MANAGERS) return;
            names[n_keys] = key, count[n_keys++] = 0;
        }
        count[k]++;
    }
    if (n_keys < 2) return;
    int64_t lo = count[0], hi = count[0];
    for (int32_t k = 1; k < n_keys; k++) lo = kvci_min64(lo, count[k]), hi = kvci_max64(hi, count[k]);
    if (lo == hi) return;
    int64_t size = 4 * hi < 5 * lo ? hi : lo, n_groups = 0;
    for (;; size++) {
        n_groups = others;
        for (int32_t k = 0; k < n_keys; k++) n_groups += kvci_cdiv(count[k], size);
        if (n_groups <= KVC_MAX_MANAGERS) break;
    }
    char base[KVC_MAX_MANAGERS][KVC_NAME_MAX];
    int64_t seen[KVC_MAX_MANAGERS] = {0};
    for (int32_t k = 0; k < n_keys; k++) snprintf(base[k], sizeof base[k], "%s", names[k]); /* names move below */
    for (int32_t i = 0; i < plan->n_layers; i++) {
        if (plan->layers[i].caches[0].is_state) continue;
        int32_t k = 0;
        while (strcmp(base[k], kvc_cache_entry_group_key(&layers[i].caches[0])) != 0) k++;
        const int64_t groups = kvci_cdiv(count[k], size);
        if (groups == 1) continue;
        const int64_t g = seen[k]++ % groups;
        for (int32_t c = 0; c < layers[i].n_caches; c++)
            snprintf(layers[i].caches[c].manager_key, sizeof layers[i].caches[c].manager_key, "%.*s.g%lld",
                     KVC_NAME_MAX - 24, base[k], (long long)g);
    }
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
    /* Distinct windows (chunks) need distinct managers (one window per SlidingWindow group, one chunk per
     * ChunkedLocal group). */
    bool multi_window = false, multi_chunk = false;
    int64_t first_window = 0, first_chunk = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) {
        const int64_t w = plan->layers[i].sliding_window, c = plan->layers[i].attention_chunk_size;
        if (first_window == 0) first_window = w;
        if (first_chunk == 0) first_chunk = c;
        multi_window |= w != 0 && w != first_window;
        multi_chunk |= c != 0 && c != first_chunk;
    }
    int64_t next = 0;
    for (int32_t i = 0; i < plan->n_layers; i++) {
        const kvc_plan_layer *L = &plan->layers[i];
        layers[i] = (kvc_layer_cache_info){.layer_idx = L->layer, .n_caches = L->n_caches, .caches = &entries[next]};
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
            if (L->compress_ratio > 0) { /* a block of block_size compressed entries (DeepSeek-V4) */
                e->compress_ratio = L->compress_ratio;
                e->block_size *= L->compress_ratio;
                snprintf(e->manager_key, sizeof e->manager_key, "Compressed_%lld", (long long)L->compress_ratio);
            } else if (L->attn_type == KVC_ATTN_SLIDING_WINDOW) {
                e->sliding_window = L->sliding_window;
                if (multi_window)
                    snprintf(e->manager_key, sizeof e->manager_key, "SlidingWindow_%lld", (long long)L->sliding_window);
            } else if (L->attn_type == KVC_ATTN_CHUNKED_LOCAL) {
                e->attention_chunk_size = L->attention_chunk_size;
                if (multi_chunk)
                    snprintf(e->manager_key, sizeof e->manager_key, "ChunkedLocal_%lld",
                             (long long)L->attention_chunk_size);
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

/* One entry of plan->layers: model layer `layer` with attention type `type` (span: its window or chunk), its
 * masks and caches. */
static void plan_entry(kvc_model_plan *plan, kvc_plan_layer *L, int32_t layer, kvc_attn_type type, int64_t span,
                       const kvc_state_shapes *states, const kvc_cache_dims *cd, int64_t index_head_dim,
                       kvci_index_form index_form) {
    const kvc_plan_options *o = &plan->options;
    const kvc_dtype dt = o->kv_dtype;
    L->layer = layer;
    L->attn_type = type;
    L->sliding_window = type == KVC_ATTN_SLIDING_WINDOW ? span : 0;
    L->attention_chunk_size = type == KVC_ATTN_CHUNKED_LOCAL ? span : 0;
    kvci_plan_set_layer_masks(plan, L);
    if (type == KVC_ATTN_MAMBA) {
        for (int32_t k = 0; k < states->n; k++) kvci_plan_add_state(L, states, k, dt);
    } else {
        /* int8 latent keeps a bf16 rope cache (AO 3.8 full-quant variant). */
        const kvc_dtype v_dt = plan->mla && dt == KVC_DTYPE_I8 ? KVC_DTYPE_BF16 : dt;
        kvci_plan_add_cache(L, plan->mla ? "nope_cache" : "k_cache", cd->heads[0], cd->dim[0], dt, o->block_size);
        kvci_plan_add_cache(L, plan->mla ? "rope_cache" : "v_cache", cd->heads[1], cd->dim[1], v_dt, o->block_size);
        if (index_head_dim > 0 && index_form == KVCI_INDEX_KV_DTYPE) { /* QSA's raw keys, as transformers keeps them */
            kvci_plan_add_cache(L, "indexer_k_cache", 1, index_head_dim, dt, o->block_size);
        } else if (index_head_dim > 0 && index_form == KVCI_INDEX_F32) { /* as kvcache's runtime keeps them */
            kvci_plan_add_cache(L, "indexer_k_cache", 1, index_head_dim, KVC_DTYPE_F32, o->block_size);
        } else if (index_head_dim > 0) { /* DeepSeek sparse attention's indexer keys, in vLLM's fp8 form */
            kvci_plan_add_cache(L, "indexer_k_cache", 1, index_head_dim, KVC_DTYPE_F8E4M3, o->block_size);
            kvci_plan_add_cache(L, "indexer_k_scale", 1, kvci_cdiv(index_head_dim, KVC_PLAN_INDEXER_SCALE_GROUP),
                                KVC_DTYPE_F32, o->block_size);
        }
    }
}

/* The caches layer i keeps: one, or one per loop in Dory's recurrent section (at most 1024). */
static int64_t loop_copies(const kvc_model_facts *f, int64_t i) {
    return f->loop_copies > 1 && i >= f->loop_lo && i < f->loop_hi ? f->loop_copies : 1;
}

kvc_status kvci_plan_build_layers(kvc_model_plan *plan, const kvc_model_facts *f, const kvc_state_shapes *states,
                                  int64_t kv_per_rank) {
    const kvc_plan_options *o = &plan->options;
    const kvc_dtype dt = o->kv_dtype;
    const kvc_dtype_traits *t = kvci_dtype_traits(dt);
    if (plan->mla && t != NULL && t->block > 1) /* as the runtime's cache builder: latent caches have a rope part */
        return kvci_fail(KVC_EINVAL,
                         "plan options: kv_dtype %s is stored in blocks of %d channels: MLA latent caches cannot "
                         "hold it",
                         t->name, (int)t->block);
    /* entries: none for a cache-less layer (MLP or experts only), two for a parallel one (attention, then state),
     * up to three for DeepSeek-V4's (window, compressed entries, pending state: compressed.c) */
    int32_t n = 0;
    for (int64_t i = 0; i < f->n_layers; i++)
        n += (f->v4 != NULL                    ? kvci_plan_v4_layer(plan, f, (int32_t)i, NULL)
              : f->kinds[i] == KVC_LK_NONE     ? 0
              : f->kinds[i] == KVC_LK_PARALLEL ? 2
                                               : 1) *
             (int32_t)loop_copies(f, i);
    if (n == 0) return kvci_fail(KVC_EINVAL, "plan: none of the %lld layers keeps a cache", (long long)f->n_layers);
    plan->n_layers = n;
    plan->layers = kvci_calloc((size_t)n, sizeof *plan->layers);
    if (plan->layers == NULL) return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %d layers", n);
    const kvc_family_dims fd = {.num_heads = plan->q_heads_per_rank,
                                .num_kv_heads = kv_per_rank,
                                .head_dim = f->head_dim,
                                .kv_lora_rank = f->kv_lora_rank,
                                .qk_nope_head_dim = f->qk_nope_head_dim,
                                .qk_rope_head_dim = f->qk_rope_head_dim,
                                .v_head_dim = f->v_head_dim};
    kvc_cache_dims cd = kvci_family_cache_dims(f->fam, &fd, plan->mla); /* MLA plans latent caches */
    kvc_plan_layer *L = plan->layers;
    for (int32_t i = 0; i < (int32_t)f->n_layers; i++) {
        const int64_t index_dim = f->index_layers == NULL || f->index_layers[i] ? f->index_head_dim : 0;
        if (f->v4 != NULL) {
            L += kvci_plan_v4_layer(plan, f, i, L);
            continue;
        }
        if (f->layer_head_dim != NULL) { /* a layer's own heads (Gemma 4's full layers) */
            kvc_family_dims ld = fd;
            ld.num_kv_heads = f->layer_kv_heads[i], ld.head_dim = f->layer_head_dim[i];
            cd = kvci_family_cache_dims(f->fam, &ld, plan->mla);
            if (!plan->mla && f->layer_v_head_dim[i] > 0) cd.dim[1] = f->layer_v_head_dim[i]; /* MiMo's values */
        }
        const kvci_index_form form = f->index_form;
        for (int64_t copy = 0; copy < loop_copies(f, i); copy++) {
            switch (f->kinds[i]) {
            case KVC_LK_FULL: plan_entry(plan, L++, i, KVC_ATTN_FULL, 0, states, &cd, index_dim, form); break;
            case KVC_LK_SLIDING:
                plan_entry(plan, L++, i, KVC_ATTN_SLIDING_WINDOW, f->window, states, &cd, index_dim, form);
                break;
            case KVC_LK_CHUNKED:
                plan_entry(plan, L++, i, KVC_ATTN_CHUNKED_LOCAL, f->chunk, states, &cd, index_dim, form);
                break;
            case KVC_LK_STATE: plan_entry(plan, L++, i, KVC_ATTN_MAMBA, 0, states, &cd, index_dim, form); break;
            case KVC_LK_PARALLEL:
                plan_entry(plan, L++, i, KVC_ATTN_FULL, 0, states, &cd, index_dim, form);
                plan_entry(plan, L++, i, KVC_ATTN_MAMBA, 0, states, &cd, index_dim, form);
                break;
            case KVC_LK_NONE: break;
            }
        }
    }
    return KVC_OK;
}
