/* Tensor-parallel shards of the state layers (docs/distributed.md, "State layers"): what a rank's config holds of
 * LFM2's short convolutions, the Mamba-1 and Mamba2 mixers (Falcon-H1's beside its attention too) and Qwen3-Next's
 * Gated DeltaNet, and which runs of their fused projections it reads. A rank holds whole channels, heads and groups
 * only, so each one's recurrence and conv run on one rank as on one process; the out_proj is row-parallel and reduced
 * with the attention's o_proj. */
#include "base/internal.h"
#include "model/model_internal.h"

kvc_status kvci_shard_state_config(const kvc_model_config *full, int64_t tp, kvc_model_config *c) {
    if (tp == 1) return KVC_OK;
    if (full->num_mem_blocks > 0) /* Zamba, Zamba2: the shared block reads the whole [h | embeddings] */
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld over %s: its state layers (mixers with the shared "
                         "transformer block on the hybrid layers) have no shard rule",
                         (long long)tp, full->model_type);
    if (full->gdn_kda) /* transformers replicates Kimi-Linear's attention; no shard rule here either */
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld over %s: its Kimi Delta Attention layers have no shard rule",
                         (long long)tp, full->model_type);
    if (full->family == KVC_FAMILY_RWKV) /* the WKV channels could split, the token shifts' LayerNorm inputs not */
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld over %s: its RWKV time and channel mixing have no shard rule",
                         (long long)tp, full->model_type);
    for (int64_t l = 0; l < full->num_layers; l++)
        if (full->layer_lightning[l]) /* its norm spans every head of the row */
            return kvci_fail(KVC_EINVAL,
                             "model: tensor parallelism %lld over %s: its lightning attention layers have no shard "
                             "rule",
                             (long long)tp, full->model_type);
    if (full->family == KVC_FAMILY_RECURRENT_GEMMA) /* its RG-LRU gates mix each block's channels; no rule here */
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld over %s: its RG-LRU recurrent blocks have no shard rule",
                         (long long)tp, full->model_type);
    bool conv = false, mamba = false, gdn = false, mamba1 = false;
    for (int64_t l = 0; l < full->num_layers; l++) {
        conv |= full->layer_conv[l], mamba |= full->layer_mamba[l], gdn |= full->layer_gdn[l];
        mamba1 |= full->layer_mamba1[l];
        if (kvci_model_layer_is_state(full, l) && !full->layer_conv[l] && !full->layer_mamba[l] &&
            !full->layer_gdn[l] && !full->layer_mamba1[l])
            return kvci_fail(KVC_EINVAL,
                             "model: tensor parallelism %lld over %s: layer %lld's state layer has no "
                             "shard rule (short convolution, Mamba-1, Mamba2 and Gated DeltaNet have)",
                             (long long)tp, full->model_type, (long long)l);
    }
    if (mamba1)
        KVC_TRY(kvci_shard_divide("mamba_inner (the Mamba-1 channels)", full->mamba_inner, tp, &c->mamba_inner));
    if (conv)
        KVC_TRY(kvci_shard_divide("hidden_size (the conv layers' channels)", full->hidden_size, tp, &c->conv_channels));
    if (gdn) {
        KVC_TRY(kvci_shard_divide("linear_num_key_heads", full->gdn_k_heads, tp, &c->gdn_k_heads));
        KVC_TRY(kvci_shard_divide("linear_num_value_heads", full->gdn_v_heads, tp, &c->gdn_v_heads));
    }
    if (!mamba) return KVC_OK;
    KVC_TRY(kvci_shard_divide("mamba_n_heads", full->mamba_heads, tp, &c->mamba_heads));
    const int64_t G = full->mamba_groups;
    if (G % tp == 0) {
        c->mamba_groups = G / tp;
    } else if (tp % G == 0 && tp <= full->hidden_size) { /* each group on tp / G ranks: its norm spans them */
        c->mamba_groups = 1;
    } else {
        return kvci_fail(KVC_EINVAL,
                         "model: tensor parallelism %lld neither divides mamba_n_groups %lld nor is a multiple of it "
                         "(within hidden_size %lld)",
                         (long long)tp, (long long)G, (long long)full->hidden_size);
    }
    return KVC_OK;
}

int64_t kvci_shard_mamba_group0(const kvc_model *m) { return m->tp.rank * m->full.mamba_groups / m->tp.size; }

/* Segment i of a fused dim 0: full[i] entries, the rank's len[i] of them from first[i]. */
static kvc_wsplit runs(int32_t n, const int64_t *full, const int64_t *first, const int64_t *len) {
    kvc_wsplit sp = {.dim = 0, .runs = n};
    for (int32_t i = 0; i < n; i++) {
        sp.run_start[i] = sp.full + first[i], sp.run_len[i] = len[i];
        sp.full += full[i];
    }
    return sp;
}

kvc_wsplit kvci_shard_state_runs(const kvc_model *m, kvci_state_runs what) {
    const kvc_model_config *c = &m->cfg, *f = &m->full;
    const int64_t r = m->tp.rank;
    if (m->tp.size <= 1) return (kvc_wsplit){.dim = -1};
    if (what == KVCI_RUNS_LFM2_IN) { /* B | C | x [3 H]: each its channels */
        const int64_t W = c->conv_channels, H = f->hidden_size;
        const int64_t full[3] = {H, H, H}, first[3] = {r * W, r * W, r * W}, len[3] = {W, W, W};
        return runs(3, full, first, len);
    }
    if (what == KVCI_RUNS_MAMBA1_IN) { /* x | z [I] each: the rank's channels */
        const int64_t I = c->mamba_inner, If = f->mamba_inner;
        const int64_t full[2] = {If, If}, first[2] = {r * I, r * I}, len[2] = {I, I};
        return runs(2, full, first, len);
    }
    if (what == KVCI_RUNS_GDN_QKV) { /* q | k [nk dk] each, v [nv dv]: the rank's key heads and their value heads */
        const int64_t K = c->gdn_k_heads * c->gdn_k_dim, V = c->gdn_v_heads * c->gdn_v_dim;
        const int64_t Kf = f->gdn_k_heads * f->gdn_k_dim, Vf = f->gdn_v_heads * f->gdn_v_dim;
        const int64_t full[3] = {Kf, Kf, Vf}, first[3] = {r * K, r * K, r * V}, len[3] = {K, K, V};
        return runs(3, full, first, len);
    }
    /* Mamba2: [z] | x | B | C [| dt]: the rank's heads' channels, its groups' B and C (a group replicated: the one
     * its heads read) */
    const int64_t I = c->mamba_heads * c->mamba_head_dim, If = f->mamba_heads * f->mamba_head_dim;
    const int64_t GN = c->mamba_groups * c->mamba_d_state, GNf = f->mamba_groups * f->mamba_d_state;
    const int64_t g0 = kvci_shard_mamba_group0(m) * c->mamba_d_state;
    const int64_t full[5] = {If, If, GNf, GNf, f->mamba_heads}, first[5] = {r * I, r * I, g0, g0, r * c->mamba_heads};
    const int64_t len[5] = {I, I, GN, GN, c->mamba_heads};
    if (what == KVCI_RUNS_MAMBA_CONV) return runs(3, full + 1, first + 1, len + 1);
    return runs(5, full, first, len);
}
