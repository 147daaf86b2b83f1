/* Tensor-parallel shards of a model (docs/distributed.md, "Sharding rules"): what each rank's
 * config holds and which part of every checkpoint tensor it reads (kvc_wsplit, set by weights.c). */
#include "base/internal.h"
#include "model/model_internal.h"

kvc_status kvci_shard_divide(const char *field, int64_t v, int64_t tp, int64_t *out) {
    if (v % tp != 0)
        return kvci_fail(KVC_EINVAL, "model: tensor parallelism %lld does not divide %s %lld", (long long)tp, field,
                         (long long)v);
    *out = v / tp;
    return KVC_OK;
}

kvc_status kvci_model_shard_config(const kvc_model_config *full, int64_t tp, kvc_model_config *out) {
    if (tp < 1 || tp > 4096)
        return kvci_fail(KVC_EINVAL, "model: tensor parallelism %lld outside [1, 4096]", (long long)tp);
    if (tp > 1 && full->attention_experts) /* the experts' query heads are the token's, not a rank's */
        return kvci_fail(KVC_EINVAL, "model: tensor parallelism %lld is not supported for %s (attention experts)",
                         (long long)tp, full->model_type);
    if (tp > 1 && full->sub_norms) /* BitNet's sub-norms span the whole attention output and MLP width */
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld is not supported for %s (attn_sub_norm and ffn_sub_norm "
                         "normalise rows split across the ranks)",
                         (long long)tp, full->model_type);
    if (tp > 1 && full->diff_attn) /* a rank's heads would pair with another rank's */
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld is not supported for %s (differential attention pairs "
                         "query head i with head i + num_heads / 2)",
                         (long long)tp, full->model_type);
    if (tp > 1 && (full->family == KVC_FAMILY_GEMMA4 || full->family == KVC_FAMILY_GEMMA3N))
        return kvci_fail(KVC_EINVAL, /* Gemma 4's MoE half, per-layer inputs and Gemma 3n's AltUp use whole rows */
                         "model: tensor parallelism %lld is not supported for %s (the experts' and the MLP's outputs "
                         "are normed before their sum, per-layer inputs gate whole rows, AltUp routes whole rows)",
                         (long long)tp, full->model_type);
    if (tp > 1 && !kvci_layer_shapes_uniform(full)) /* each layer's heads would split by their own rule */
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld is not supported for %s (per-layer attention shapes: "
                         "layer_heads, layer_kv_heads)",
                         (long long)tp, full->model_type);
    kvc_model_config c = *full;
    KVC_TRY(kvci_shard_state_config(full, tp, &c));
    bool attention = false, mlp = false; /* Mamba2ForCausalLM has neither: its placeholder sizes are not split */
    for (int64_t l = 0; l < full->num_layers; l++) {
        attention |= !full->layer_no_mixer[l] && !kvci_model_layer_is_state(full, l);
        mlp |= !full->layer_no_ffn[l];
    }
    if (!attention && !mlp) {
        *out = c;
        return KVC_OK;
    }
    KVC_TRY(kvci_shard_divide("num_attention_heads", full->num_heads, tp, &c.num_heads));
    KVC_TRY(kvci_shard_divide("intermediate_size", full->intermediate_size, tp, &c.intermediate_size));
    KVC_TRY(kvci_shard_divide("moe_intermediate_size", full->moe_intermediate_size, tp, &c.moe_intermediate_size));
    KVC_TRY(kvci_shard_divide("shared_expert_intermediate_size", full->shared_expert_intermediate_size, tp,
                              &c.shared_expert_intermediate_size));
    const int64_t nkv = full->num_kv_heads;
    if (nkv >= tp)
        KVC_TRY(kvci_shard_divide("num_key_value_heads", nkv, tp, &c.num_kv_heads));
    else if (tp % nkv != 0)
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld is not a multiple of num_key_value_heads %lld (KV heads "
                         "cannot be replicated evenly)",
                         (long long)tp, (long long)nkv);
    else
        c.num_kv_heads = 1; /* each KV head replicated on tp / nkv ranks */
    *out = c;
    return KVC_OK;
}

int64_t kvci_model_shard_kv_head0(const kvc_model_config *full, int64_t r, int64_t tp) {
    return r * full->num_kv_heads / tp;
}
