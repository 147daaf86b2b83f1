/* Per-layer attention shapes (kvc_model_config.layer_heads, layer_kv_heads, layer_head_dim, layer_v_head_dim,
 * layer_rot_dim): what each layer's attention runs with, the rules that tie them together, and the widest layer
 * the scratch buffers are sized for. A layer whose entries are 0 is the model's, so a uniform model reads
 * exactly the fields it always did. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "model/family.h"
#include "model/model_internal.h"

static int64_t or_model(int64_t v, int64_t model) { return v > 0 ? v : model; }

kvci_attn_shape kvci_layer_shape(const kvc_model_config *c, int64_t l) {
    const int64_t D = or_model(c->layer_head_dim[l], c->head_dim), nH = or_model(c->layer_heads[l], c->num_heads);
    const int64_t nKV = or_model(c->layer_kv_heads[l], c->num_kv_heads), Dv = or_model(c->layer_v_head_dim[l], D);
    const int64_t rot = c->layer_rot_dim[l] > 0 ? c->layer_rot_dim[l] : kvci_model_rot_dim_of(c, D);
    return (kvci_attn_shape){.nH = nH,
                             .nKV = nKV,
                             .D = D,
                             .Dv = Dv,
                             .rot = rot,
                             .q_width = nH * D,
                             .k_width = nKV * D,
                             .v_width = nKV * Dv,
                             .o_width = nH * Dv};
}

kvc_cache_dims kvci_model_layer_cache_dims(const kvc_model_config *c, int64_t l, bool latent) {
    if (kvci_family_get(c->family)->cache_dims != NULL || c->diff_attn) /* MLA's, DiffLlama's */
        return kvci_model_cache_dims(c, latent);
    const kvci_attn_shape s = kvci_layer_shape(c, l);
    return (kvc_cache_dims){.heads = {s.nKV, s.nKV}, .dim = {s.D, s.Dv}};
}

bool kvci_layer_shapes_uniform(const kvc_model_config *c) {
    for (int64_t l = 0; l < c->num_layers && l < KVC_MODEL_MAX_LAYERS; l++)
        if (c->layer_heads[l] || c->layer_kv_heads[l] || c->layer_head_dim[l] || c->layer_v_head_dim[l] ||
            c->layer_rot_dim[l])
            return false;
    return true;
}

kvci_attn_shape kvci_layer_shape_max(const kvc_model_config *c) {
    kvci_attn_shape mx = kvci_layer_shape(c, 0);
    for (int64_t l = 1; l < c->num_layers; l++) {
        const kvci_attn_shape s = kvci_layer_shape(c, l);
        mx.nH = kvci_max64(mx.nH, s.nH), mx.nKV = kvci_max64(mx.nKV, s.nKV);
        mx.D = kvci_max64(mx.D, s.D), mx.Dv = kvci_max64(mx.Dv, s.Dv), mx.rot = kvci_max64(mx.rot, s.rot);
        mx.q_width = kvci_max64(mx.q_width, s.q_width), mx.k_width = kvci_max64(mx.k_width, s.k_width);
        mx.v_width = kvci_max64(mx.v_width, s.v_width), mx.o_width = kvci_max64(mx.o_width, s.o_width);
    }
    return mx;
}

double kvci_layer_attn_scale(const kvc_model_config *c, int64_t l) {
    const int64_t D = or_model(c->layer_head_dim[l], c->head_dim);
    if (c->attention_multiplier > 0.0 || c->query_pre_attn_scalar > 0.0 || D == c->head_dim)
        return kvc_model_attn_scale(c);
    return 1.0 / sqrt((double)D);
}

int64_t kvci_kind_rot_dim(const kvc_model_config *c, bool sliding) {
    for (int64_t l = 0; l < c->num_layers; l++)
        if (c->layer_sliding[l] == sliding && !kvci_model_layer_is_state(c, l) && !c->layer_no_mixer[l])
            return kvci_layer_shape(c, l).rot;
    return kvci_layer_shape(c, 0).rot;
}

/* The features whose weights or kernels assume one shape for every layer (or q/k and v of one width). */
static const char *uniform_only(const kvc_model_config *c, bool v_differs) {
    if (kvci_family_get(c->family)->mla) return "an MLA family";
    if (c->attention_experts) return "attention_experts";
    if (c->alibi) return "alibi";
    if (c->qk_norm_whole) return "qk_norm_whole";
    if (c->qk_norm && c->layer_norm) return "per-head LayerNorm q/k norms";
    if (c->mamba_parallel_attn) return "mamba_parallel_attn";
    if (v_differs && (c->attn_output_gate || c->attn_gate_proj || c->attn_head_gate))
        return "an attention output gate (with v_head_dim != head_dim)";
    return NULL;
}

kvc_status kvci_layer_shapes_check(const kvc_model_config *c, const char *doc) {
    if (kvci_layer_shapes_uniform(c)) return KVC_OK;
    bool v_differs = false;
    int64_t rot_kind[2] = {0, 0};
    for (int64_t l = 0; l < c->num_layers; l++) {
        const int64_t v[5] = {c->layer_heads[l], c->layer_kv_heads[l], c->layer_head_dim[l], c->layer_v_head_dim[l],
                              c->layer_rot_dim[l]};
        static const char *const names[5] = {"layer_heads", "layer_kv_heads", "layer_head_dim", "layer_v_head_dim",
                                             "layer_rot_dim"};
        for (int i = 0; i < 5; i++)
            if (v[i] < 0 || v[i] > KVC_HP_MAX_DIM)
                return kvci_fail(KVC_EINVAL, "%s: %s[%lld] %lld outside [0, %d] (0: the model's)", doc, names[i],
                                 (long long)l, (long long)v[i], KVC_HP_MAX_DIM);
        const kvci_attn_shape s = kvci_layer_shape(c, l);
        if (s.nH % s.nKV != 0)
            return kvci_fail(KVC_EINVAL,
                             "%s: layer %lld: its %lld query heads (layer_heads) must be a multiple of its "
                             "%lld KV heads (layer_kv_heads)",
                             doc, (long long)l, (long long)s.nH, (long long)s.nKV);
        if (s.D % 2 != 0 || s.rot < 2 || s.rot % 2 != 0 || s.rot > s.D)
            return kvci_fail(KVC_EINVAL,
                             "%s: layer %lld: layer_head_dim %lld must be even and its rotary width %lld "
                             "(layer_rot_dim) even in [2, head dim]",
                             doc, (long long)l, (long long)s.D, (long long)s.rot);
        v_differs |= s.Dv != s.D;
        if (kvci_model_layer_is_state(c, l) || c->layer_no_mixer[l]) continue;
        const int k = c->layer_sliding[l] ? 1 : 0;
        if (rot_kind[k] == 0) rot_kind[k] = s.rot;
        if (rot_kind[k] != s.rot)
            return kvci_fail(
                KVC_EINVAL,
                "%s: layer %lld: rotary width %lld differs from %lld of the other %s layers (layer_rot_dim: "
                "one per layer kind)",
                doc, (long long)l, (long long)s.rot, (long long)rot_kind[k], k ? "sliding" : "full");
    }
    const char *why = uniform_only(c, v_differs);
    if (why != NULL)
        return kvci_fail(KVC_EINVAL,
                         "%s: per-layer attention shapes (layer_heads, layer_kv_heads, layer_head_dim, "
                         "layer_v_head_dim, layer_rot_dim) are not supported with %s",
                         doc, why);
    return KVC_OK;
}
