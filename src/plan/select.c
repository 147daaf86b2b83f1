/* The selection rules of docs/ops.md (AO 3-5): paged or legacy caches, MLA
 * absorption, operator generation and layout, mask modes per layer, the
 * softmax scale and the KV dtype. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "plan/plan_internal.h"

#define BAND_ALIGN_BLOCK_MAX 512 /* AO 3.13: paged block size limit */

/* ---- selection ------------------------------------------------------------- */

static bool is_pow2_le(int64_t v, int64_t cap) { return v >= 1 && v <= cap && (v & (v - 1)) == 0; }

void kvci_plan_select_mode(kvc_model_plan *plan, const kvc_model_facts *f, int64_t kv_per_rank, bool any_attention) {
    const kvc_plan_options *o = &plan->options;
    const kvc_dtype_traits *kt = kvci_dtype_traits(o->kv_dtype);
    const int64_t align = kt != NULL && kt->bits == 8 ? 32 : 16; /* AO 3.13 (operator limits): 32 for 8-bit KV */
    const char *dt = kvc_dtype_name(o->kv_dtype);
    plan->kv_mode = KVC_KV_PAGED;
    if (!any_attention) {
        kvci_plan_copy_text(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                            "state caches only: one fixed-size state block per request, managed by the Mamba manager");
    } else if (o->block_size > BAND_ALIGN_BLOCK_MAX || o->block_size % align != 0) {
        plan->kv_mode = KVC_KV_LEGACY;
        snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                 "block_size %lld is not a multiple of %lld (%s KV) in [%lld, %d], which the paged operator requires "
                 "(AO 3.13); contiguous per-request caches instead",
                 (long long)o->block_size, (long long)align, dt, (long long)align, BAND_ALIGN_BLOCK_MAX);
    } else if (plan->mla) {
        if (f->kv_lora_rank != 512 || f->qk_rope_head_dim != 64 || !is_pow2_le(plan->q_heads_per_rank, 128)) {
            plan->kv_mode = KVC_KV_LEGACY;
            snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                     "the paged latent path needs kv_lora_rank 512, qk_rope_head_dim 64 and a power-of-two query "
                     "head count <= 128 per rank (got %lld, %lld, %lld; AO 3.8): contiguous latent "
                     "caches, non-absorbed attention",
                     (long long)f->kv_lora_rank, (long long)f->qk_rope_head_dim, (long long)plan->q_heads_per_rank);
        } else {
            snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                     "latent caches (nope %lld + rope %lld, one head) paged with block_size %lld; paging is mandatory "
                     "for the absorbed MLA operator (AO 3.8)",
                     (long long)f->kv_lora_rank, (long long)f->qk_rope_head_dim, (long long)o->block_size);
        }
    } else if (f->head_dim % align != 0) {
        plan->kv_mode = KVC_KV_LEGACY;
        snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                 "head_dim %lld is not a multiple of %lld elements (%s KV), which the paged operator requires "
                 "(AO 3.13)",
                 (long long)f->head_dim, (long long)align, dt);
    } else if (kv_per_rank * f->head_dim > 65535) {
        plan->kv_mode = KVC_KV_LEGACY;
        snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                 "%lld KV heads x head_dim %lld per rank exceed the 65535 channels of paged BnBsH storage "
                 "(AO 3.13)",
                 (long long)kv_per_rank, (long long)f->head_dim);
    } else {
        snprintf(plan->kv_mode_reason, sizeof plan->kv_mode_reason,
                 "block_size %lld and head_dim %lld meet the paged operator's alignment (%lld elements for %s KV)",
                 (long long)o->block_size, (long long)f->head_dim, (long long)align, dt);
    }

    plan->mla_absorb = plan->mla && plan->kv_mode == KVC_KV_PAGED;
    /* Operator generation and layout: the reference call matrix (AO 4, AO 5). */
    static const struct {
        int32_t version;
        const char *layout, *reason;
    } ops[] = {
        {1, "NTD_TND", "non-absorbed MLA attention over packed per-head K/V (NTD_TND) is a v1 call (AO 4)"},
        {1, "BSH", "contiguous BSH caches with per-batch lengths run the v1 operator (AO 5 mode 1)"},
        {2, "TND_NTD",
         "absorbed MLA decode over the paged latent cache (TND_NTD, key = value = nope cache) is a v2 "
         "call; prefill runs the non-absorbed v1 NTD_TND path (AO 4)"},
        {2, "TND", "learnable attention sinks exist only in the v2 operator (AO 3.9)"},
        {2, "TND", "paged TND attention with per-request KV lengths is the v2 path (AO 4)"},
    };
    size_t pick;
    if (plan->kv_mode == KVC_KV_LEGACY)
        pick = plan->mla ? 0 : 1;
    else
        pick = plan->mla_absorb ? 2 : plan->sinks ? 3 : 4;
    plan->fa_version = ops[pick].version;
    kvci_plan_copy_text(plan->input_layout, sizeof plan->input_layout, ops[pick].layout);
    kvci_plan_copy_text(plan->fa_version_reason, sizeof plan->fa_version_reason, ops[pick].reason);
    if (plan->kv_mode == KVC_KV_LEGACY && plan->sinks)
        kvci_plan_warn(plan, "learnable sinks need the v2 operator, which the legacy contiguous path does not use");
}

void kvci_plan_set_layer_masks(const kvc_model_plan *plan, kvc_plan_layer *L) {
    L->pre_tokens = KVC_PLAN_NO_BAND;
    L->next_tokens = KVC_PLAN_NO_BAND;
    if (L->attn_type == KVC_ATTN_MAMBA) {
        L->sparse_prefill = KVC_PLAN_NO_MODE;
        L->sparse_decode = KVC_PLAN_NO_MODE;
        return;
    }
    if (L->attn_type == KVC_ATTN_SLIDING_WINDOW) {
        /* Band with right-down origin; W keys including the query: pre = W - 1 (AO 3.5). */
        L->sparse_prefill = 4;
        L->sparse_decode = 4;
        L->pre_tokens = L->sliding_window - 1;
        L->next_tokens = 0;
        return;
    }
    L->sparse_prefill = 3;
    if (L->attn_type == KVC_ATTN_CHUNKED_LOCAL) {
        /* causal with attention_chunk_size (kvcache's operator), or over each per-chunk virtual request (the
         * vendor operator's, which has no chunked mask: docs/plan.md) */
        L->sparse_decode = 3;
        return;
    }
    if (plan->kv_mode == KVC_KV_LEGACY)
        L->sparse_decode = 0; /* one query row per request, dense decode (AO 5 mode 1) */
    else if (plan->mla_absorb)
        L->sparse_decode = plan->options.next_n == 0 ? 0 : 3; /* q_len 1 -> 0, verify -> 3 (AO 3.8) */
    else
        L->sparse_decode = 3;
}

/* ---- scale ----------------------------------------------------------------- */

kvc_status kvci_plan_compute_scale(const kvc_hparams *hp, kvc_model_plan *plan, const kvc_model_facts *f) {
    const kvc_json_obj *cfg = &hp->cfg;
    const kvc_json_range positive = {0.0, KVC_HP_MAX_FACTOR, true};
    bool have = false;
    double v = 0.0;
    kvc_status st;
    if (f->fam->mla) {
        plan->scale = kvci_mla_softmax_scale(&f->rope, f->qk_nope_head_dim, f->qk_rope_head_dim);
        return KVC_OK;
    }
    if ((st = kvci_json_num(cfg, "attention_multiplier", positive, &v, &have)) != KVC_OK) return st;
    if (have) {
        plan->scale = v;
        return KVC_OK;
    }
    if (f->fam->softmax_scale != NULL) {
        const kvc_family_ctx ctx = {.hp = hp, .n_layers = f->n_layers, .warn = kvci_plan_warn_text, .user = plan};
        return f->fam->softmax_scale(&ctx, f->head_dim, &plan->scale);
    }
    plan->scale = 1.0 / sqrt((double)f->head_dim);
    return KVC_OK;
}

/* ---- dtype ----------------------------------------------------------------- */

/* A quantization_config that asks for an FP8 KV cache (compressed-tensors' kv_cache_scheme, ModelOpt's
 * kv_cache_quant_algo), which the dtype read from torch_dtype does not follow: said in a warning. */
static kvc_status warn_fp8_cache(const kvc_hparams *hp, kvc_model_plan *plan) {
    char path[64];
    kvc_json_obj q = {0};
    bool have = false;
    KVC_TRY(kvci_json_child(&hp->cfg, "quantization_config", path, sizeof path, &q, &have));
    static const char *const keys[] = {"kv_cache_scheme", "kv_cache_quant_algo"};
    for (size_t k = 0; have && k < sizeof keys / sizeof keys[0]; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(q.obj, keys[k]);
        if (v != NULL && !cJSON_IsNull(v)) {
            kvci_plan_warn(plan,
                           "quantization_config.%s sets a quantized KV cache: planned in %s from the config's dtype; "
                           "--kv-dtype fp8_e4m3 plans the FP8 cache the checkpoint was calibrated for",
                           keys[k], kvc_dtype_name(plan->options.kv_dtype));
            break;
        }
    }
    return KVC_OK;
}

kvc_status kvci_plan_resolve_dtype(const kvc_hparams *hp, kvc_model_plan *plan) {
    if (plan->options.kv_dtype_set) return KVC_OK;
    const char *name = NULL;
    bool have = false;
    kvc_status st = kvci_json_str(&hp->cfg, "torch_dtype", KVC_HP_NAME_MAX, &name, &have);
    if (st == KVC_OK && !have) st = kvci_json_str(&hp->cfg, "dtype", KVC_HP_NAME_MAX, &name, &have);
    if (st != KVC_OK) return st;
    if (!have) {
        plan->options.kv_dtype = KVC_DTYPE_BF16;
        kvci_plan_warn(plan, "torch_dtype absent: bf16 KV caches assumed");
    } else if (strcmp(name, "bfloat16") == 0) {
        plan->options.kv_dtype = KVC_DTYPE_BF16;
    } else if (strcmp(name, "float16") == 0) {
        plan->options.kv_dtype = KVC_DTYPE_F16;
    } else if (strcmp(name, "float32") == 0) {
        plan->options.kv_dtype = KVC_DTYPE_F32;
    } else {
        plan->options.kv_dtype = KVC_DTYPE_BF16;
        kvci_plan_warn(plan, "torch_dtype \"%s\" is not a KV dtype: bf16 KV caches assumed", name);
    }
    return warn_fp8_cache(hp, plan);
}
