/* The plan as one JSON document (`kvcache plan --json`). */
#include <stdlib.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

static bool add_num(cJSON *obj, const char *name, double v) { return cJSON_AddNumberToObject(obj, name, v) != NULL; }

static bool add_int_or_null(cJSON *obj, const char *name, int64_t v, bool present) {
    return present ? add_num(obj, name, (double)v) : cJSON_AddNullToObject(obj, name) != NULL;
}

static cJSON *cache_json(const kvc_plan_cache *c) {
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    bool ok = cJSON_AddStringToObject(o, "name", c->name) != NULL;
    if (c->is_state) {
        ok = ok && cJSON_AddNullToObject(o, "num_head") != NULL && cJSON_AddNullToObject(o, "dim") != NULL;
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        ok = ok && shape != NULL;
        for (int32_t d = 0; ok && d < c->n_shape; d++)
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)c->shape[d]));
    } else {
        ok = ok && add_num(o, "num_head", (double)c->num_head) && add_num(o, "dim", (double)c->dim);
    }
    ok = ok && cJSON_AddStringToObject(o, "dtype", kvc_dtype_name(c->dtype)) != NULL;
    ok = ok && add_int_or_null(o, "bytes_per_token", c->bytes_per_token, !c->is_state);
    ok = ok && add_num(o, "bytes_per_block", (double)c->bytes_per_block);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *layer_json(const kvc_plan_layer *L) {
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    bool band = L->pre_tokens != KVC_PLAN_NO_BAND;
    bool ok = add_num(o, "layer", L->layer) &&
              cJSON_AddStringToObject(o, "attn_type", kvc_attn_type_name(L->attn_type)) != NULL &&
              add_int_or_null(o, "sliding_window", L->sliding_window, L->sliding_window > 0) &&
              add_int_or_null(o, "attention_chunk_size", L->attention_chunk_size, L->attention_chunk_size > 0) &&
              add_int_or_null(o, "compress_ratio", L->compress_ratio, L->compress_ratio > 0);
    if (ok && L->sparse_prefill == KVC_PLAN_NO_MODE) {
        ok = cJSON_AddNullToObject(o, "sparse_mode") != NULL;
    } else if (ok) {
        cJSON *sm = cJSON_AddObjectToObject(o, "sparse_mode");
        ok = sm != NULL && add_num(sm, "prefill", L->sparse_prefill) && add_num(sm, "decode", L->sparse_decode);
    }
    ok = ok && add_int_or_null(o, "pre_tokens", L->pre_tokens, band) &&
         add_int_or_null(o, "next_tokens", L->next_tokens, band);
    cJSON *caches = ok ? cJSON_AddArrayToObject(o, "caches") : NULL;
    ok = ok && caches != NULL;
    for (int32_t c = 0; ok && c < L->n_caches; c++) {
        cJSON *item = cache_json(&L->caches[c]);
        ok = item != NULL && cJSON_AddItemToArray(caches, item);
        if (!ok) cJSON_Delete(item);
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static bool add_header(cJSON *o, const kvc_model_plan *p) {
    bool legacy = p->kv_mode == KVC_KV_LEGACY;
    cJSON *rope = NULL, *heads = NULL;
    bool ok = cJSON_AddStringToObject(o, "architecture", p->architecture) != NULL &&
              cJSON_AddStringToObject(o, "model_type", p->model_type) != NULL &&
              cJSON_AddStringToObject(o, "family", p->family) != NULL && add_num(o, "tp", (double)p->options.tp) &&
              add_num(o, "block_size", (double)p->options.block_size) &&
              cJSON_AddStringToObject(o, "kv_dtype", kvc_dtype_name(p->options.kv_dtype)) != NULL &&
              cJSON_AddStringToObject(o, "kv_mode", kvc_kv_mode_name(p->kv_mode)) != NULL &&
              cJSON_AddStringToObject(o, "kv_mode_reason", p->kv_mode_reason) != NULL &&
              (legacy ? cJSON_AddStringToObject(o, "reason", p->kv_mode_reason) != NULL
                      : cJSON_AddNullToObject(o, "reason") != NULL) &&
              add_num(o, "fa_version", p->fa_version) &&
              cJSON_AddStringToObject(o, "fa_version_reason", p->fa_version_reason) != NULL &&
              cJSON_AddStringToObject(o, "input_layout", p->input_layout) != NULL &&
              cJSON_AddBoolToObject(o, "mla", p->mla) != NULL &&
              cJSON_AddBoolToObject(o, "mla_absorb", p->mla_absorb) != NULL &&
              cJSON_AddBoolToObject(o, "hybrid", p->hybrid) != NULL &&
              cJSON_AddBoolToObject(o, "sinks", p->sinks) != NULL && add_num(o, "scale", p->scale) &&
              add_num(o, "logit_softcap", p->logit_softcap);
    ok = ok && (rope = cJSON_AddObjectToObject(o, "rope")) != NULL &&
         cJSON_AddStringToObject(rope, "type", p->rope_type) != NULL && add_num(rope, "factor", p->rope_factor) &&
         add_num(rope, "attention_factor", p->rope_attention_factor);
    ok = ok && (heads = cJSON_AddObjectToObject(o, "heads")) != NULL &&
         add_num(heads, "num_attention_heads", (double)p->num_attention_heads) &&
         add_num(heads, "num_key_value_heads", (double)p->num_key_value_heads) &&
         add_num(heads, "q_heads_per_rank", (double)p->q_heads_per_rank) &&
         add_num(heads, "head_dim", (double)p->head_dim);
    return ok;
}

/* null, or what one pool with the attention would cost the state key. */
static bool add_state_padding(cJSON *o, const kvc_plan_state_padding *pad) {
    if (pad->state_key[0] == '\0') return cJSON_AddNullToObject(o, "state_padding") != NULL;
    cJSON *sp = cJSON_AddObjectToObject(o, "state_padding");
    return sp != NULL && cJSON_AddStringToObject(sp, "state_key", pad->state_key) != NULL &&
           cJSON_AddStringToObject(sp, "paged_key", pad->paged_key) != NULL &&
           add_num(sp, "page_bytes", (double)pad->page_bytes) && add_num(sp, "block_size", (double)pad->block_size) &&
           add_num(sp, "state_bytes", (double)pad->state_bytes) &&
           add_num(sp, "padded_bytes", (double)pad->padded_bytes);
}

static bool add_numbers(cJSON *o, const kvc_model_plan *p) {
    const kvc_block_plan *b = &p->blocks;
    bool budget = p->plan_params.mode == KVC_PLAN_BUDGET;
    cJSON *sizing = cJSON_AddObjectToObject(o, "sizing");
    bool ok = sizing != NULL && cJSON_AddStringToObject(sizing, "mode", budget ? "budget" : "offline") != NULL &&
              add_int_or_null(sizing, "kv_memory_bytes", p->options.kv_memory_bytes, budget) &&
              add_num(sizing, "max_model_len", (double)p->options.max_model_len) &&
              add_num(sizing, "max_concurrency", (double)p->options.max_concurrency) &&
              add_num(sizing, "next_n", (double)p->options.next_n);
    ok = ok && add_num(o, "bytes_per_token", (double)b->per_token_bytes) &&
         add_num(o, "fixed_bytes", (double)b->fixed_bytes);
    cJSON *bn = ok ? cJSON_AddObjectToObject(o, "block_num") : NULL;
    cJSON *groups = ok ? cJSON_AddArrayToObject(o, "managers") : NULL;
    ok = ok && bn != NULL && groups != NULL;
    for (int32_t g = 0; ok && g < b->n_groups; g++) {
        const kvc_group_plan *gp = &b->groups[g];
        ok = add_num(bn, gp->key, (double)gp->block_num);
        cJSON *item = ok ? cJSON_CreateObject() : NULL;
        ok = item != NULL && cJSON_AddItemToArray(groups, item);
        if (!ok) {
            cJSON_Delete(item);
            break;
        }
        ok = cJSON_AddStringToObject(item, "key", gp->key) != NULL &&
             cJSON_AddStringToObject(item, "attn_type", kvc_attn_type_name(gp->attn_type)) != NULL &&
             add_num(item, "block_size", (double)gp->block_size) && add_num(item, "block_num", (double)gp->block_num) &&
             cJSON_AddBoolToObject(item, "fixed", gp->fixed) != NULL &&
             add_num(item, "block_bytes", (double)gp->block_bytes) &&
             add_num(item, "page_bytes", (double)gp->page_bytes) && add_num(item, "pool_id", (double)gp->pool_id);
    }
    ok = ok && add_num(o, "max_tokens", (double)b->max_tokens) && add_num(o, "total_bytes", (double)b->total_bytes);
    return ok && add_state_padding(o, &p->state_padding);
}

kvc_status kvc_model_plan_to_json(const kvc_model_plan *plan, char **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_model_plan_to_json: out must not be NULL");
    *out = NULL;
    if (plan == NULL) return kvci_fail(KVC_EINVAL, "kvc_model_plan_to_json: plan must not be NULL");
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL && add_header(o, plan);
    cJSON *layers = ok ? cJSON_AddArrayToObject(o, "layers") : NULL;
    ok = ok && layers != NULL;
    for (int32_t i = 0; ok && i < plan->n_layers; i++) {
        cJSON *item = layer_json(&plan->layers[i]);
        ok = item != NULL && cJSON_AddItemToArray(layers, item);
        if (!ok) cJSON_Delete(item);
    }
    ok = ok && add_numbers(o, plan);
    cJSON *warnings = ok ? cJSON_AddArrayToObject(o, "warnings") : NULL;
    ok = ok && warnings != NULL;
    for (int32_t w = 0; ok && w < plan->n_warnings; w++)
        ok = cJSON_AddItemToArray(warnings, cJSON_CreateString(plan->warnings[w]));
    char *text = ok ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (text == NULL) return kvci_fail(KVC_ENOMEM, "kvc_model_plan_to_json: out of host memory");
    *out = text;
    return KVC_OK;
}

void kvc_plan_json_free(char *json) { cJSON_free(json); }
