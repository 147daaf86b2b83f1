/* The forward pass over a packed batch (MF 1.3 decoder skeleton, RM 3):
 * hidden states stay [T, H]; every layer reads the step's metadata and its
 * own cache; the workspace is sized once. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "base/internal.h"
#include "model/cache_build.h"
#include "model/family.h"
#include "model/forward_internal.h"
#include "model/step_profile.h"
#include "ops/write_internal.h"

static int64_t max3(int64_t a, int64_t b, int64_t c) { return kvci_max64(a, kvci_max64(b, c)); }

void kvc_model_workspace_destroy(kvc_model_workspace *ws) {
    if (!ws) return;
    float **f[] = {&ws->h,           &ws->xn,        &ws->q,    &ws->k,        &ws->v,       &ws->att,
                   &ws->proj,        &ws->ff_a,      &ws->ff_b, &ws->acc,      &ws->xg,      &ws->yg,
                   &ws->router,      &ws->route_tmp, &ws->selw, &ws->tokw,     &ws->mla_a,   &ws->mla_b,
                   &ws->q_rope,      &ws->cos,       &ws->sin,  &ws->rope_tmp, &ws->fused,   &ws->cos_sliding,
                   &ws->sin_sliding, &ws->qk_ss,     &ws->gate, &ws->gnorm,    &ws->gdn,     &ws->mamba,
                   &ws->lat,         &ws->shortcut,  &ws->ple,  &ws->ple_a,    &ws->kv_keep, &ws->zamba,
                   &ws->ix_q,        &ws->ix_k,      &ws->ix_w, &ws->dsa_sc,   &ws->altup,   &ws->altup_c,
                   &ws->laurel,      &ws->laurel_r,  &ws->hc,   &ws->hc_w};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) kvc_aligned_free(*f[i]);
    kvc_aligned_free(ws->sel);
    kvc_aligned_free(ws->dsa_pos);
    kvc_aligned_free(ws->dsa_bt);
    kvc_aligned_free(ws->dsa_n);
    kvc_aligned_free(ws->dsa_cu);
    kvc_aligned_free(ws->tok);
    kvc_aligned_free(ws->lens_a);
    kvc_aligned_free(ws->lens_b);
    kvc_aligned_free(ws->slots);
    kvc_aligned_free(ws->kc);
    kvc_aligned_free(ws->vc);
    kvc_aligned_free(ws->attn_ws);
    for (int k = 0; k < KVC_ATTN_KINDS; k++) kvc_aligned_free(ws->attn_plans[k].ws);
    kvci_free(ws);
}

static kvc_status alloc_f(float **p, int64_t n) {
    return kvc_aligned_alloc(64, (size_t)kvci_max64(n, 1) * 4, (void **)p);
}

kvc_status kvc_model_workspace_create(const kvc_model *m, int64_t max_tokens, int64_t max_rows, int64_t max_kv_len,
                                      kvc_model_workspace **out) {
    if (!m || !out) return kvci_fail(KVC_EINVAL, "model_workspace_create: model and out must not be NULL");
    *out = NULL;
    if (max_tokens < 1 || max_rows < 1 || max_rows > max_tokens || max_kv_len < 1 || max_tokens > (1 << 24) ||
        max_kv_len > INT32_MAX)
        return kvci_fail(KVC_EINVAL,
                         "model_workspace_create: max_tokens %lld, max_rows %lld, max_kv_len %lld must be >= 1 with "
                         "max_rows <= max_tokens <= 2^24 and max_kv_len < 2^31",
                         (long long)max_tokens, (long long)max_rows, (long long)max_kv_len);
    const kvc_model_config *c = &m->cfg;
    kvc_model_workspace *ws = kvci_calloc(1, sizeof *ws);
    if (!ws) return kvci_fail(KVC_ENOMEM, "model_workspace_create: out of memory");
    const kvc_cache_dims full = kvci_model_cache_dims(c, false); /* query/key and value head dims, KV heads */
    const int64_t dq = full.dim[0], dv = full.dim[1], nkv = full.heads[0];
    const int64_t Tm = max_tokens, H = c->hidden_size, nH = c->num_heads, rkv = c->kv_lora_rank;
    const int64_t dr = c->qk_rope_head_dim, dn = c->qk_nope_head_dim;
    ws->max_tokens = Tm, ws->max_rows = max_rows, ws->max_kv_len = max_kv_len;
    ws->rope_long = m->inv_freq_long != NULL && max_kv_len > c->rope.original_max_position;
    const kvci_attn_shape mx = kvci_layer_shape_max(c); /* the widest layer's (per-layer shapes) */
    ws->qw = kvci_max64(nH * dq, mx.q_width);
    ws->kw = kvci_max64(kvci_max64(nkv * dq, rkv), mx.k_width);
    ws->vw = kvci_max64(kvci_max64(nkv * dv, dr), mx.v_width);
    ws->ow = kvci_max64(nH * kvci_max64(dv, rkv), mx.o_width);
    const int64_t wide = c->family == KVC_FAMILY_GPT_OSS || c->mlp_double_shared ? 2 : 1; /* Gemma 4's shared MLPs */
    ws->ffw =
        max3(c->intermediate_size * wide, kvci_max64(c->moe_intermediate_size, c->shared_expert_intermediate_size), 1);
    const int64_t E = kvci_max64(kvci_max64(c->num_experts, c->n_routed_experts + c->zero_experts), 1);
    const int64_t K = kvci_max64(c->experts_per_tok, 1);
    kvc_status st = KVC_OK;
#define A(ptr, n)                                                                                                      \
    if (st == KVC_OK) st = alloc_f(&ws->ptr, (n))
    A(h, Tm * H);
    A(xn, Tm * H);
    A(q, Tm * ws->qw);
    A(k, Tm * ws->kw);
    A(v, Tm * ws->vw);
    A(att, Tm * ws->ow);
    A(proj, Tm * H);
    A(ff_a, Tm * ws->ffw);
    A(ff_b, Tm * ws->ffw);
    const int64_t conv_w = c->conv_kernel > 0 ? 3 * H : 0;      /* LFM2's in_proj rows B | C | x */
    const int64_t gq = c->attn_output_gate ? 2 : 1;             /* Qwen3-Next's q_proj: a query and a gate per head */
    const int64_t qg = c->mla_q_gate ? nH * (dn + dr + dv) : 0; /* A.X-K2's q_gate_proj: a query and a gate per head */
    bool mamba = false, mamba1 = false; /* Mamba2 / Mamba-1 mixers: their in_proj rows in fused, their scratch */
    for (int64_t l = 0; l < c->num_layers; l++) mamba |= c->layer_mamba[l], mamba1 |= c->layer_mamba1[l];
    const int64_t mamba_w = mamba ? kvci_mamba2_in_width(c) : mamba1 ? 2 * c->mamba_inner : 0;
    A(fused, Tm * max3(kvci_max64(gq * ws->qw + ws->kw + ws->vw, qg), 2 * wide * c->intermediate_size,
                       kvci_max64(conv_w, mamba_w)));
    A(ple, Tm * c->num_layers * c->ple_dim);
    A(ple_a, kvci_max64(Tm, c->num_layers) * c->ple_dim);
    A(kv_keep, c->kv_shared_layers > 0 ? 2 * Tm * (ws->kw + ws->vw) : 1);
    const bool g3n = c->family == KVC_FAMILY_GEMMA3N; /* AltUp's copies, LAuReL's rows */
    const int64_t au = c->altup_inputs;
    A(altup, g3n ? 2 * au * Tm * H : 1);
    A(altup_c, g3n ? Tm * (au * au + au) : 1);
    A(laurel, g3n ? Tm * H : 1);
    A(laurel_r, g3n ? Tm * c->laurel_rank : 1);
    A(hc, c->hc_mult > 0 ? Tm * c->hc_mult * H : 1);
    A(hc_w, c->hc_mult > 0 ? Tm * 2 * c->hc_mult : 1);
    A(gate, c->attn_output_gate || c->attn_gate_proj ? Tm * kvci_max64(ws->qw, ws->ow) /* HY V4's MLA: [T, nH, dv] */
            : c->mla_q_gate                          ? Tm * nH * dv                    /* A.X-K2's [T, nH, dv] */
            : c->attn_head_gate                      ? Tm * mx.nH
                                                     : 1); /* LFM3's [T, nH] */
    A(gnorm, Tm * kvci_max64(c->gated_norm_rank, 1));
    A(gdn, kvci_max64(kvci_gated_delta_floats(c, Tm),
                      kvci_max64(kvci_lightning_floats(c, Tm), kvci_rglru_floats(c, Tm)))); /* or theirs */
    A(mamba, mamba                          ? kvci_mamba2_scratch(c, Tm)
             : mamba1                       ? kvci_mamba1_scratch(c, Tm)
             : c->family == KVC_FAMILY_RWKV ? kvci_rwkv_scratch(c, Tm)
                                            : 1);
    /* Nemotron-H's experts may run wider than H; JetMoE's attention experts gather rows of nKV D */
    const int64_t mw = max3(H, c->moe_latent_size, c->attention_experts ? nkv * dq : 0);
    A(acc, Tm * kvci_max64(mw, kvci_model_embed_width(c))); /* also OPT-350m's embedding rows [T, E] */
    A(xg, Tm * mw);
    A(yg, Tm * mw);
    A(lat, Tm * c->moe_latent_size);
    A(shortcut, c->moe_shortcut ? Tm * H : 1); /* LongCat-Flash's MoE output held for the odd sub-layer */
    A(zamba, c->num_mem_blocks > 0 ? kvci_zamba_scratch(c, Tm) : 1);
    A(router, Tm * E);
    A(route_tmp, 2 * E);
    A(selw, Tm * K);
    A(tokw, Tm * K);
    A(mla_a, Tm * kvci_max64((c->mla_q_gate ? 3 : 1) * c->q_lora_rank, rkv + dr));
    A(mla_b, Tm * nH * kvci_max64(dn + dv, rkv));
    A(q_rope, Tm * nH * dr);
    A(cos, Tm * m->rot_dim);
    A(sin, Tm * m->rot_dim);
    A(cos_sliding, m->inv_freq_sliding ? Tm * m->rot_dim_sliding : 1);
    A(sin_sliding, m->inv_freq_sliding ? Tm * m->rot_dim_sliding : 1);
    A(rope_tmp, kvci_max64(m->rot_dim, m->rot_dim_sliding));
    A(qk_ss, 2 * Tm);
    const bool dsa = c->index_topk > 0; /* DeepSeek sparse attention's indexer and choice */
    ws->dsa_k = dsa ? kvci_min64(c->index_topk, max_kv_len) : 1;
    ws->dsa_threads = omp_get_max_threads();
    A(ix_q, dsa ? Tm * c->index_n_heads * c->index_head_dim : 1);
    A(ix_k, dsa ? Tm * c->index_head_dim : 1);
    A(ix_w, dsa ? Tm * c->index_n_heads : 1);
    A(dsa_sc, dsa ? (int64_t)ws->dsa_threads * 2 * max_kv_len : 1);
#undef A
    const int64_t nsel = dsa ? Tm * ws->dsa_k : 1;
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)nsel * 4, (void **)&ws->dsa_pos);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)nsel * 4, (void **)&ws->dsa_bt);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)Tm * 8, (void **)&ws->dsa_n);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)Tm * 8, (void **)&ws->dsa_cu);
    for (int64_t t = 0; st == KVC_OK && t < Tm; t++) ws->dsa_cu[t] = t + 1;
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)(Tm * K) * 4, (void **)&ws->sel);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)(Tm * K) * 4, (void **)&ws->tok);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)max_rows * 8, (void **)&ws->lens_a);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)max_rows * 8, (void **)&ws->lens_b);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)Tm * 8, (void **)&ws->slots);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)(Tm * ws->kw) * 4, &ws->kc);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)(Tm * ws->vw) * 4, &ws->vc);
    if (st != KVC_OK) {
        kvc_model_workspace_destroy(ws);
        return st;
    }
    *out = ws;
    return KVC_OK;
}

/* ---- validation -------------------------------------------------------------- */

/* Both from the dtype table. Scales per token beside the data are the built-in int8 / fp8 writers'
 * (kvc_write_slots_token_quant); every other K/V dtype is written from f32 by its from_f32 through
 * kvc_write_slots, scales in its blocks if it has any, and its caches count their bytes through the table. */
bool kvc_model_kv_quantised(kvc_dtype dt) {
    return kvc_model_kv_dtype_ok(dt) && kvci_cache_scale_entries(dt, false) > 0;
}

bool kvc_model_kv_dtype_ok(kvc_dtype dt) {
    const kvc_dtype_traits *t = kvci_dtype_traits(dt);
    if (t == NULL || !t->kv) return false;
    /* a registered dtype (no vector path) is written by kvc_write_slots from f32 only when stored in blocks */
    const bool written = t->from_f32 != NULL && (t->simd != KVC_SIMD_GENERIC || t->block > 1);
    return t->scales == KVC_SCALES_PER_TOKEN ||
           ((t->scales == KVC_SCALES_NONE || t->scales == KVC_SCALES_IN_BLOCK) && written);
}

/* int8 / fp8: f32 scale tensors with one element per cache slot (NB*bs or rows*S_max). */
static kvc_status check_scales(const kvc_model_caches *cs, int64_t l) {
    const kvc_layer_cache *lc = &cs->layers[l];
    const int64_t want = kvci_cache_slot_count(cs, lc);
    const kvc_tensor *t[2] = {&lc->k_scales, &lc->v_scales};
    for (int i = 0; i < (cs->latent ? 1 : 2); i++) {
        int64_t n = 1;
        for (int32_t d = 0; d < t[i]->ndim; d++) n *= t[i]->shape[d];
        if (!t[i]->data || t[i]->dtype != KVC_DTYPE_F32 || t[i]->ndim < 1 || t[i]->ndim > 4 || n != want)
            return kvci_fail(KVC_EINVAL,
                             "forward: layer %lld %s caches need f32 %s with one scale per cache slot "
                             "(%lld)",
                             (long long)l, kvc_dtype_name(lc->k.dtype), i ? "v_scales" : "k_scales", (long long)want);
    }
    return KVC_OK;
}

/* A state layer's states (kvci_layer_states): f32 [rows or NB, shape], the same rows or blocks each; paged, the key
 * of its state blocks. */
static kvc_status check_state_cache(const kvc_model_config *c, const kvc_model_caches *cs, int64_t l) {
    kvci_state_shape s[KVCI_MAX_LAYER_STATES];
    const int32_t n = kvci_layer_states(c, l, s);
    kvc_layer_cache *lc = &cs->layers[l];
    const char *key = lc->state_key[0] ? lc->state_key : lc->key;
    for (int32_t i = 0; i < n; i++) {
        const kvc_tensor *t = kvci_layer_state_slot(lc, i);
        bool ok = t->data && t->dtype == KVC_DTYPE_F32 && t->ndim == 1 + s[i].ndim && t->shape[0] >= 1 &&
                  t->shape[0] == lc->state.shape[0];
        for (int32_t d = 0; ok && d < s[i].ndim; d++) ok = t->shape[1 + d] == s[i].shape[d];
        if (!ok)
            return kvci_fail(KVC_EINVAL,
                             "forward: layer %lld needs its %s as f32 [%s, %lld, %lld%s] (%s: as many as the first "
                             "state's)",
                             (long long)l, s[i].name, cs->kind == KVC_MCACHE_PAGED ? "NB" : "rows",
                             (long long)s[i].shape[0], (long long)s[i].shape[1], s[i].ndim == 3 ? ", ..." : "",
                             cs->kind == KVC_MCACHE_PAGED ? "NB" : "rows");
    }
    if (cs->kind == KVC_MCACHE_PAGED && (key[0] == '\0' || memchr(key, '\0', KVC_NAME_MAX) == NULL))
        return kvci_fail(KVC_EINVAL, "forward: layer %lld (state) paged state names no manager key", (long long)l);
    return KVC_OK;
}

/* DeepSeek sparse attention: a layer with an indexer of its own needs its f32 index_k over the slots of its k. */
static kvc_status check_index_keys(const kvc_model_config *c, const kvc_model_caches *cs, int64_t l) {
    const kvc_layer_cache *lc = &cs->layers[l];
    const kvc_tensor *x = &lc->index_k;
    if (!kvci_layer_index_keys(c, l)) return KVC_OK;
    const bool paged = cs->kind == KVC_MCACHE_PAGED;
    const bool ok = x->data && x->dtype == KVC_DTYPE_F32 && x->ndim == (paged ? 4 : 3) &&
                    x->shape[0] == lc->k.shape[0] && x->shape[1] == lc->k.shape[1] &&
                    (paged ? x->shape[2] == 1 && x->shape[3] == c->index_head_dim : x->shape[2] == c->index_head_dim);
    if (!ok)
        return kvci_fail(KVC_EINVAL,
                         "forward: layer %lld needs its DeepSeek sparse attention keys index_k as f32 %s with "
                         "index_head_dim %lld",
                         (long long)l,
                         paged ? "[NB, bs, 1, index_head_dim] (k's NB and bs)"
                               : "[rows, S_max, index_head_dim] (k's rows and S_max)",
                         (long long)c->index_head_dim);
    return KVC_OK;
}

static kvc_status check_layer_cache(const kvc_model *m, const kvc_model_caches *cs, int64_t l) {
    const kvc_model_config *c = &m->cfg;
    const kvc_layer_cache *lc = &cs->layers[l];
    if (c->layer_no_mixer[l] || kvci_model_kv_source(c, l) != l) return KVC_OK; /* an MLP alone, KV shared: none */
    if (kvci_model_layer_is_state(c, l)) {
        KVC_TRY(check_state_cache(c, cs, l));
        if (!c->mamba_parallel_attn && !c->layer_shared_block[l]) return KVC_OK; /* Falcon-H1, Zamba2: K/V too */
    }
    const kvc_cache_dims cd = kvci_model_layer_cache_dims(c, l, cs->latent);
    const kvc_tensor *t[2] = {&lc->k, &lc->v};
    const int64_t *heads = cd.heads, *dims = cd.dim;
    const kvc_dtype dt = lc->k.dtype;
    if (cs->layout != KVC_BLOCK_BNBSND &&
        (cs->layout != KVC_BLOCK_BNNDBS || cs->kind != KVC_MCACHE_PAGED || cs->latent))
        return kvci_fail(KVC_EINVAL,
                         "forward: cache layout %d: paged full-form caches take BNBSND or BNNDBS, latent and "
                         "contiguous caches BNBSND",
                         (int)cs->layout);
    if (!kvc_model_kv_dtype_ok(dt) || lc->v.dtype != dt)
        return kvci_fail(KVC_EINVAL,
                         "forward: layer %lld caches are %s / %s; both must be one KV cache dtype "
                         "(kvc_model_kv_dtype_ok)",
                         (long long)l, kvc_dtype_name(lc->k.dtype), kvc_dtype_name(lc->v.dtype));
    const int64_t bs = cs->kind == KVC_MCACHE_PAGED ? kvci_layer_block_size(cs, lc) : 0;
    if (cs->kind == KVC_MCACHE_PAGED && (bs < 1 || bs > KVC_ATTN_MAX_BLOCK_SIZE))
        return kvci_fail(KVC_EINVAL, "forward: layer %lld block size %lld must be in [1, %d]%s", (long long)l,
                         (long long)bs, KVC_ATTN_MAX_BLOCK_SIZE,
                         cs->block_size ? "" : " (caches block_size 0: read from the layer's k tensor)");
    for (int i = 0; i < 2; i++) {
        const kvc_tensor *x = t[i];
        bool ok = x->data != NULL;
        if (cs->kind == KVC_MCACHE_PAGED &&
            cs->layout == KVC_BLOCK_BNNDBS) /* k [NB, Nkv, D, bs], v [NB, Nkv, bs, Dv] */
            ok = ok && x->ndim == 4 && x->shape[1] == heads[i] && x->shape[i ? 3 : 2] == dims[i] &&
                 x->shape[i ? 2 : 3] == bs && x->shape[0] == t[0]->shape[0];
        else if (cs->kind == KVC_MCACHE_PAGED)
            ok = ok && x->ndim == 4 && x->shape[2] == heads[i] && x->shape[3] == dims[i] && x->shape[1] == bs &&
                 x->shape[0] == t[0]->shape[0];
        else
            ok = ok && x->ndim == 3 && x->shape[2] == heads[i] * dims[i] && x->shape[0] == t[0]->shape[0] &&
                 x->shape[1] == t[0]->shape[1];
        if (!ok)
            return kvci_fail(KVC_EINVAL,
                             "forward: layer %lld %s cache must be %s with %lld heads of %lld (block size %lld)",
                             (long long)l, i ? "v" : "k",
                             cs->kind != KVC_MCACHE_PAGED     ? "[rows, S_max, heads*dim]"
                             : cs->layout == KVC_BLOCK_BNBSND ? "[NB, bs, heads, dim]"
                             : i                              ? "[NB, heads, bs, dim]"
                                                              : "[NB, heads, dim, bs]",
                             (long long)heads[i], (long long)dims[i], (long long)bs);
    }
    if (cs->kind == KVC_MCACHE_PAGED && (lc->key[0] == '\0' || memchr(lc->key, '\0', sizeof lc->key) == NULL))
        return kvci_fail(KVC_EINVAL,
                         "forward: layer %lld paged cache names no manager key (or one without its NUL "
                         "within %d bytes)",
                         (long long)l, KVC_NAME_MAX);
    KVC_TRY(check_index_keys(c, cs, l));
    return kvc_model_kv_quantised(dt) ? check_scales(cs, l) : KVC_OK;
}

static kvc_status check_args(const kvc_model *m, const kvc_model_workspace *ws, const kvc_forward_args *a,
                             bool *fresh) {
    const kvc_model_config *c = &m->cfg;
    const kvc_step_metadata *md = a->md;
    if (!md || !a->token_ids || !a->logits)
        return kvci_fail(KVC_EINVAL, "forward: md, token_ids and logits must not be NULL");
    const int64_t T = md->n_tokens, R = md->n_rows;
    if (T < 1 || T > ws->max_tokens || R < 1 || R > ws->max_rows)
        return kvci_fail(KVC_EINVAL,
                         "forward: step has %lld tokens in %lld rows; the workspace takes 1..%lld tokens, 1..%lld rows",
                         (long long)T, (long long)R, (long long)ws->max_tokens, (long long)ws->max_rows);
    if (!md->positions || !md->seq_lens_q || !md->seq_lens_kv || !md->cu_seq_lens_q || md->cu_seq_lens_q[R - 1] != T)
        return kvci_fail(KVC_EINVAL,
                         "forward: md needs positions, seq_lens_q/kv and cu_seq_lens_q ending at n_tokens %lld",
                         (long long)T);
    for (int64_t t = 0; t < T; t++) {
        if (a->token_ids[t] < 0 || a->token_ids[t] >= kvci_model_input_vocab(c))
            return kvci_fail(KVC_ERANGE, "forward: token_ids[%lld] = %d outside the vocabulary [0, %lld)", (long long)t,
                             (int)a->token_ids[t], (long long)kvci_model_input_vocab(c));
        if (md->positions[t] < 0 || md->positions[t] >= ws->max_kv_len)
            return kvci_fail(KVC_ERANGE, "forward: positions[%lld] = %lld outside [0, max_kv_len %lld)", (long long)t,
                             (long long)md->positions[t], (long long)ws->max_kv_len);
        if (c->pos_learned && md->positions[t] >= c->max_position_embeddings)
            return kvci_fail(KVC_ERANGE,
                             "forward: positions[%lld] = %lld is beyond the model's %lld learned positions "
                             "(max_position_embeddings, n_positions)",
                             (long long)t, (long long)md->positions[t], (long long)c->max_position_embeddings);
    }
    KVC_TRY(kvci_fwd_check_rows(md, ws->max_kv_len, fresh));
    if (!a->caches) {
        if (!*fresh)
            return kvci_fail(KVC_EINVAL,
                             "forward: without caches every row must hold its whole sequence (keys == query tokens)");
        return KVC_OK;
    }
    const kvc_model_caches *cs = a->caches;
    if (cs->n_layers != c->num_layers || !cs->layers)
        return kvci_fail(KVC_EINVAL, "forward: caches hold %d layers%s, the model has %lld", (int)cs->n_layers,
                         cs->layers ? "" : " (layers is NULL)", (long long)c->num_layers);
    if (cs->kind != KVC_MCACHE_CONTIGUOUS && cs->kind != KVC_MCACHE_PAGED)
        return kvci_fail(KVC_EINVAL, "forward: cache kind %d unknown (1 contiguous, 2 paged)", (int)cs->kind);
    if (cs->latent && !kvci_family_get(c->family)->mla)
        return kvci_fail(KVC_EINVAL, "forward: latent caches need an MLA model (deepseek_v3, deepseek_v2), not %s",
                         c->model_type);
    for (int64_t l = 0; l < c->num_layers; l++) {
        kvc_status st = check_layer_cache(m, cs, l);
        if (st != KVC_OK) return st;
    }
    if (cs->kind == KVC_MCACHE_PAGED) KVC_TRY(kvci_fwd_check_keys(md, cs, ws->lens_b));
    /* the first cached layer's rows: its k's, or a state layer's first state's (Nemotron-H has a cached layer) */
    int64_t l0 = 0;
    while (c->layer_no_mixer[l0] && l0 + 1 < c->num_layers) l0++;
    const int64_t rows = kvci_model_layer_is_state(c, l0) ? cs->layers[l0].state.shape[0] : cs->layers[l0].k.shape[0];
    if (cs->kind == KVC_MCACHE_CONTIGUOUS && a->cache_rows)
        return kvci_fwd_check_cache_rows(a->cache_rows, R, rows, ws->lens_b);
    if (cs->kind == KVC_MCACHE_CONTIGUOUS && R > rows) /* refused here, before a layer writes the rows below it */
        return kvci_fail(KVC_ERANGE,
                         "forward: %lld step rows on %lld cache rows (cache_rows NULL: row r on cache row r)",
                         (long long)R, (long long)rows);
    return KVC_OK;
}

/* ---- the pass ------------------------------------------------------------------ */

void kvci_fwd_norm_rope_token(const kvc_fwd_step *s, int64_t t, float *row, int64_t n_heads, int64_t stride,
                              const float *norm, const float *bias, bool rotate) {
    const kvc_model_config *c = &s->m->cfg;
    const int64_t rot = s->rot, D = s->D;
    if (norm && c->qk_norm_whole) /* OLMo 2: one norm over the heads side by side (stride == D) */
        kvci_rmsnorm_rows(row, 1, n_heads * D, n_heads * D, norm, (float)c->rms_norm_eps);
    else if (norm && c->layer_norm && bias) /* Persimmon: one LayerNorm with bias [D] for every head */
        kvci_layernorm_rows_threads(row, n_heads, D, stride, norm, bias, (float)c->rms_norm_eps, row);
    else if (norm && c->layer_norm) /* Cohere: a LayerNorm per head, each head its own weights [n_heads, D] */
        kvci_layernorm_rows_to(row, n_heads, D, stride, norm, D, (float)c->rms_norm_eps, row);
    else if (norm)
        kvci_rmsnorm_rows(row, n_heads, D, stride, norm, (float)c->rms_norm_eps);
    if (rotate) kvc_rope_heads_f32(row, n_heads, stride, s->cos + t * rot, s->sin + t * rot, rot, c->rope_form, NULL);
}

/* Elements from which the half-split or pairwise RoPE shares the tokens among the OpenMP threads (a prefill's
 * 512 tokens x 16 heads x 128); a decode step's rows stay on the calling thread. Each token is
 * computed whole by one thread, so the threads never change a bit. */
#define ROPE_PARALLEL_ELEMS (1 << 16)

void kvci_fwd_rope(const kvc_fwd_step *s, float *x, int64_t n_heads, int64_t stride, int64_t row_stride) {
    const int64_t rot = s->rot, T = s->T;
    if (s->m->cfg.rope_form != KVC_ROPE_INTERLEAVED) {
#pragma omp parallel for schedule(static) if (T > 16 && T * n_heads * stride >= ROPE_PARALLEL_ELEMS)
        for (int64_t t = 0; t < T; t++)
            kvci_fwd_norm_rope_token(s, t, x + t * row_stride, n_heads, stride, NULL, NULL, true);
        return;
    }
    for (int64_t t = 0; t < T; t++)
        kvc_rope_heads_f32(x + t * row_stride, n_heads, stride, s->cos + t * rot, s->sin + t * rot, rot,
                           KVC_ROPE_INTERLEAVED, s->ws->rope_tmp);
}

/* y[T, H] = x[T, H] normalised by norm (y may be x): a LayerNorm (Cohere's without bias, StarCoder2's with
 * bias; NULL: none), else RMSNorm. */
static void norm_rows_eps(const kvc_model *m, const float *x, int64_t T, const float *norm, const float *bias,
                          double eps_d, float *y) {
    const int64_t H = m->cfg.hidden_size;
    const float eps = (float)eps_d;
    if (m->cfg.layer_norm)
        kvci_layernorm_rows_threads(x, T, H, H, norm, bias, eps, y);
    else
        kvci_rmsnorm_rows_threads(x, T, H, H, norm, eps, y);
}

static void norm_rows(const kvc_model *m, const float *x, int64_t T, const float *norm, const float *bias, float *y) {
    norm_rows_eps(m, x, T, norm, bias, m->cfg.rms_norm_eps, y);
}

/* Ergo's residual gate: h[T, H] = sigmoid(g) d + sqrt(1 + sigmoid(g)) exp(-softplus(g) / 2) h per hidden dimension
 * (g [H]; f32 as transformers, softplus linear above 20 as torch's). */
static void gated_add(float *h, const float *d, int64_t T, int64_t H, const float *g) {
    for (int64_t j = 0; j < H; j++) {
        const float b = 1.0f / (1.0f + expf(-g[j]));
        const float sp = g[j] > 20.0f ? g[j] : log1pf(expf(g[j]));
        const float r = sqrtf(1.0f + b) * expf(-0.5f * sp);
        for (int64_t t = 0; t < T; t++) h[t * H + j] = b * d[t * H + j] + r * h[t * H + j];
    }
}

/* h[T, H] += d[T, H], d first summed over the tensor-parallel ranks (d holds this rank's partial sum
 * of a row-parallel layer; kvc_model_tp), then normalised by norm (the sandwich norms of Gemma and GLM-4;
 * NULL: none) or times Granite's residual_multiplier (rounded to its own f32 before the add, as
 * transformers); with Ergo's gate [H] (NULL: none) mixed into h by it instead of added; with Beam's
 * depth_scaled_residual d / sqrt(i) + h sqrt((i - 1) / i), i the add's index in the model (2 (l + 1), + 1 after the
 * MLP), each product rounded to f32 as transformers; MiniMax's (residual_normed)
 * h = alpha h + beta d, by the factors of index `factor` (residual_alpha / residual_beta). */
static kvc_status add_rows(const kvc_model *m, float *h, float *d, int64_t T, const float *norm, const float *gate,
                           int64_t i_add, int factor) {
    const int64_t H = m->cfg.hidden_size, n = T * H;
    if (m->tp.reduce) KVC_TRY(m->tp.reduce(m->tp.user, d, n));
    if (m->cfg.residual_normed) {
        const float a = (float)m->cfg.residual_alpha[factor], b = (float)m->cfg.residual_beta[factor];
        for (int64_t i = 0; i < n; i++) h[i] = h[i] * a + d[i] * b;
        return KVC_OK;
    }
    if (norm) norm_rows(m, d, T, norm, NULL, d);
    if (m->cfg.residual_multiplier > 0.0) {
        const float r = (float)m->cfg.residual_multiplier;
        for (int64_t i = 0; i < n; i++) d[i] *= r;
    }
    if (gate) {
        gated_add(h, d, T, H, gate);
        return KVC_OK;
    }
    if (m->cfg.depth_scaled_residual) {
        const float a = (float)(1.0 / sqrt((double)i_add)), b = (float)sqrt((double)(i_add - 1) / (double)i_add);
        for (int64_t i = 0; i < n; i++) h[i] = d[i] * a + h[i] * b;
        return KVC_OK;
    }
    for (int64_t i = 0; i < n; i++) h[i] += d[i];
    return KVC_OK;
}

/* xn[T, H] = h normalised by norm (and its bias, NULL: none), or h itself when norm is NULL (OLMo 2's and
 * OPT-350m's sub-layers read the residual stream unnormalised) unless the norms have no weights (OLMo's); MiniMax's
 * residual (residual_normed) is that normed input: h = xn too. */
static void sublayer_input(const kvc_model *m, kvc_model_workspace *ws, int64_t T, const float *norm,
                           const float *bias) {
    const int64_t H = m->cfg.hidden_size;
    if (norm || (m->cfg.norm_weightless && !m->cfg.norm_after_add))
        norm_rows(m, ws->h, T, norm, bias, ws->xn);
    else
        memcpy(ws->xn, ws->h, (size_t)(T * H) * sizeof(float));
    if (m->cfg.residual_normed) memcpy(ws->h, ws->xn, (size_t)(T * H) * sizeof(float));
}

kvc_status kvci_fwd_dense_mlp(const kvc_fwd_step *s, int64_t l) {
    const kvc_layer_weights *w = &s->m->layers[l];
    kvc_model_workspace *ws = s->ws;
    if (s->m->cfg.mlp_plain) /* StarCoder2: down(act(up(x))), no gate */
        return kvci_plain_mlp(s->m->cfg.mlp_act, (const float *const *)w->xielu, ws->xn, s->T, &w->w_up, w->b_up,
                              &w->w_down, w->b_down, ws->ff_a, ws->proj);
    if (w->ffn_sub_norm) { /* BitNet: an RMSNorm of act(gate) * up [T, I] before down_proj */
        const kvc_wmat *gu[2] = {&w->w_gate, &w->w_up};
        const float *b[2] = {w->b_gate, w->b_up};
        float *y[2] = {ws->ff_a, ws->ff_b};
        const int64_t T = s->T, I = w->w_gate.rows;
        KVC_TRY(kvci_linear_shared(ws->xn, T, 2, gu, b, y));
        kvci_glu(s->m->cfg.mlp_act, ws->ff_a, ws->ff_b, T, I, I, ws->ff_a, I);
        kvci_rmsnorm_rows(ws->ff_a, T, I, I, w->ffn_sub_norm, (float)s->m->cfg.rms_norm_eps);
        return kvci_linear(ws->ff_a, T, &w->w_down, w->b_down, ws->proj);
    }
    if (w->w_gu.data) { /* fused: rows [T, gate I | up I] */
        const int64_t T = s->T, I = w->w_gate.rows;
        double t0 = kvci_sp_begin();
        KVC_TRY(kvci_linear(ws->xn, T, &w->w_gu, NULL, ws->fused));
        kvci_sp_end(KVC_SP_GATE_UP, t0), t0 = kvci_sp_begin();
        kvci_glu(s->m->cfg.mlp_act, ws->fused, ws->fused + I, T, I, 2 * I, ws->ff_a, I);
        kvci_sp_end(KVC_SP_SWIGLU, t0), t0 = kvci_sp_begin();
        const kvc_status st = kvci_linear(ws->ff_a, T, &w->w_down, w->b_down, ws->proj);
        kvci_sp_end(KVC_SP_DOWN, t0);
        return st;
    }
    return kvci_swiglu_mlp(s->m->cfg.mlp_act, ws->xn, s->T, &w->w_gate, w->b_gate, &w->w_up, w->b_up, &w->w_down,
                           w->b_down, ws->ff_a, ws->ff_b, ws->proj);
}

kvc_status kvc_model_forward(const kvc_model *m, kvc_model_workspace *ws, const kvc_forward_args *a) {
    if (!m || !ws || !a) return kvci_fail(KVC_EINVAL, "forward: model, workspace and args must not be NULL");
    bool fresh = false;
    kvc_status st = check_args(m, ws, a, &fresh);
    if (st != KVC_OK) return st;
    const kvc_model_config *c = &m->cfg;
    const kvc_step_metadata *md = a->md;
    const int64_t T = md->n_tokens, H = c->hidden_size;
    for (int64_t r = 0; r < md->n_rows; r++) ws->lens_a[r] = r; /* identity cache rows */
    ws->step++;                                                 /* the step's attention plans are made anew */
    kvc_fwd_step s = {.m = m, .ws = ws, .a = a, .md = md, .T = T, .fresh = fresh};
    kvci_step_profile_step(md->is_prefill, T, md->n_rows);
    double t0 = kvci_sp_begin();
    const int64_t rot = m->rot_dim, rot_s = m->rot_dim_sliding;
    const float *inv_freq = ws->rope_long ? m->inv_freq_long : m->inv_freq;
    const int64_t E = kvci_model_embed_width(c);
    float *emb = c->embed_dim > 0 ? ws->acc : ws->h; /* [T, E]: OPT-350m's rows before project_in */
    for (int64_t t = 0; t < T; t++) {
        float *row = emb + t * E;
        kvci_wmat_row(&m->embed, a->token_ids[t], row);
        if (c->embed_scale != 0.0f)
            for (int64_t i = 0; i < E; i++) row[i] *= c->embed_scale;
    }
    if (c->embed_dim > 0 && (st = kvci_linear(emb, T, &m->project_in, NULL, ws->h)) != KVC_OK) return st;
    for (int64_t t = 0; t < T; t++) {
        float *row = ws->h + t * H;
        if (m->type_embed) /* BERT: token type 0's row, before the position's (transformers' order) */
            for (int64_t i = 0; i < H; i++) row[i] += m->type_embed[i];
        if (m->pos_embed) { /* GPT-2: the learned position's row (check_args bounds the position) */
            const float *p = m->pos_embed + (md->positions[t] + c->pos_offset) * H;
            for (int64_t i = 0; i < H; i++) row[i] += p[i];
        } else if (m->pos_freq && c->pos_sinusoid_ctrl) { /* CTRL: its sinusoid's row */
            kvci_model_sinusoid_add_ctrl(m->pos_freq, H, md->positions[t], row);
        } else if (m->pos_freq) { /* XGLM: the sinusoid's row, the padding row's zeros */
            const int64_t p = md->positions[t] + c->pos_offset;
            kvci_model_sinusoid_add(m->pos_freq, H, p, p == c->pos_zero_row, row);
        }
        if (m->task_embed) /* ERNIE: task type 0's row, after the position's */
            for (int64_t i = 0; i < H; i++) row[i] += m->task_embed[i];
        kvc_rope_cos_sin(inv_freq, rot, m->rope_attn_factor, md->positions[t], ws->cos + t * rot, ws->sin + t * rot);
        if (m->inv_freq_sliding)
            kvc_rope_cos_sin(m->inv_freq_sliding, rot_s, m->rope_attn_factor_sliding, md->positions[t],
                             ws->cos_sliding + t * rot_s, ws->sin_sliding + t * rot_s);
    }
    if (c->embed_norm) norm_rows(m, ws->h, T, m->embed_norm, m->embed_norm_b, ws->h); /* BLOOM, NanoChat */
    if (c->ple_dim > 0 && (st = kvci_gemma4_per_layer_inputs(m, ws, a->token_ids, T)) != KVC_OK) return st;
    if (c->family == KVC_FAMILY_GEMMA3N && (st = kvci_gemma3n_streams(&s)) != KVC_OK) return st;
    if (c->hc_mult > 0) kvci_hc_begin(&s); /* HY V4's residual streams */
    kvci_sp_end(KVC_SP_EMBED, t0);
    const kvc_family_desc *fam = kvci_family_get(c->family);
    for (int64_t l = 0; l < c->num_layers; l++) {
        const kvc_layer_weights *w = &m->layers[l];
        const bool own_rope = c->layer_sliding[l] && m->inv_freq_sliding; /* the sliding layers' rope */
        s.cos = own_rope ? ws->cos_sliding : ws->cos, s.sin = own_rope ? ws->sin_sliding : ws->sin;
        s.rot = own_rope ? rot_s : rot, s.D = kvci_layer_shape(c, l).D;
        if (c->family == KVC_FAMILY_GEMMA3N) { /* AltUp's copies around the layer */
            if ((st = kvci_gemma3n_layer(&s, l)) != KVC_OK) return st;
            continue;
        }
        /* each sub-layer's input norm and output norm (NULL: none): pre-norm, Gemma's sandwich, OLMo 2's post */
        const bool post = kvci_layer_post_norms(c, l);
        const bool raw_in = post || c->norm_after_add; /* the sub-layers read h as it is */
        const float *attn_in = raw_in ? NULL : w->in_norm;
        const float *attn_out = post || c->sandwich_norms ? w->post_norm : NULL;
        const float *ffn_in = raw_in ? NULL : c->sandwich_norms ? w->pre_ff_norm : w->post_norm;
        if (!c->layer_no_mixer[l]) { /* Nemotron-H: a layer may hold its MLP alone, or its mixer alone */
            t0 = kvci_sp_begin();
            if (c->hc_mult > 0) kvci_hc_pre(&s, l, 0); /* ws->h: the streams' weighted sum */
            sublayer_input(m, ws, T, attn_in, attn_in ? w->in_norm_b : NULL);
            if (w->gn_in[0].data && (st = kvci_gated_norm(&s, w->gn_in)) != KVC_OK) return st; /* A.X-K2 */
            kvci_sp_end(KVC_SP_NORM, t0);
            st = fam->attention != NULL ? fam->attention(&s, l) : kvci_attn_gqa(&s, l);
            t0 = kvci_sp_begin();
            if (c->parallel_mlp_norm) /* GPT-NeoX: the MLP's own norm of the block's input, before attention adds */
                sublayer_input(m, ws, T, w->post_norm, w->post_norm_b);
            if (st == KVC_OK)
                st = c->hc_mult > 0
                         ? kvci_hc_add(&s)
                         : add_rows(m, ws->h, ws->proj, T, attn_out, w->attn_gate, 2 * (l + 1), c->layer_lightning[l]);
            if (c->norm_after_add) norm_rows(m, ws->h, T, w->in_norm, w->in_norm_b, ws->h); /* OPT-350m's */
            kvci_sp_end(KVC_SP_RESIDUAL, t0);
            if (st != KVC_OK) return st;
        }
        if (c->layer_no_ffn[l]) continue;
        t0 = kvci_sp_begin();
        if (c->hc_mult > 0) kvci_hc_pre(&s, l, 1);
        if (!c->parallel_block) /* Cohere's MLP reads the attention's xn, GPT-NeoX's its own (above) */
            sublayer_input(m, ws, T, ffn_in, ffn_in == w->post_norm ? w->post_norm_b : NULL);
        if (w->gn_post[0].data && (st = kvci_gated_norm(&s, w->gn_post)) != KVC_OK) return st; /* A.X-K2 */
        kvci_sp_end(KVC_SP_NORM, t0);
        st = fam->ffn != NULL ? fam->ffn(&s, l) : kvci_fwd_dense_mlp(&s, l);
        t0 = kvci_sp_begin();
        if (st == KVC_OK)
            st = c->hc_mult > 0 ? kvci_hc_add(&s)
                                : add_rows(m, ws->h, ws->proj, T, w->post_ff_norm, w->ffn_gate, 2 * (l + 1) + 1, 2);
        if (c->norm_after_add) norm_rows(m, ws->h, T, w->post_norm, w->post_norm_b, ws->h);
        kvci_sp_end(KVC_SP_RESIDUAL, t0);
        if (st == KVC_OK && c->family == KVC_FAMILY_GEMMA4) st = kvci_gemma4_layer_tail(&s, l);
        if (st != KVC_OK) return st;
        if (c->rwkv_rescale_every > 0 && (l + 1) % c->rwkv_rescale_every == 0) /* RWKV's inference rescaling */
            for (int64_t i = 0; i < T * H; i++) ws->h[i] *= 0.5f;
    }
    if (c->family == KVC_FAMILY_GEMMA3N && (st = kvci_gemma3n_merge(&s)) != KVC_OK) return st;
    t0 = kvci_sp_begin();
    if (c->hc_mult > 0) kvci_hc_head(&s); /* the streams into ws->h */
    int64_t n = T;
    if (a->all_logits) {
        memcpy(ws->xn, ws->h, (size_t)(T * H) * 4);
    } else {
        n = md->n_rows;
        for (int64_t r = 0; r < n; r++) memcpy(ws->xn + r * H, ws->h + (md->cu_seq_lens_q[r] - 1) * H, (size_t)H * 4);
    }
    const double final_eps = c->final_norm_eps > 0.0 ? c->final_norm_eps : c->rms_norm_eps; /* JetMoE's own */
    if (!c->final_norm_none) norm_rows_eps(m, ws->xn, n, m->final_norm, m->final_norm_b, final_eps, ws->xn);
    if (c->head_transform && (st = kvci_linear(ws->xn, n, &m->head_dense, m->head_dense_b, ws->acc)) == KVC_OK) {
        kvci_act_rows(c->head_act, ws->acc, n, H); /* BERT's head: LayerNorm(act(dense x)) [n, H] */
        norm_rows(m, ws->acc, n, m->head_norm, m->head_norm_b, ws->xn);
    }
    const float *head_in = ws->xn; /* [n, E] */
    if (st == KVC_OK && c->embed_dim > 0 && (st = kvci_linear(ws->xn, n, &m->project_out, NULL, ws->acc)) == KVC_OK)
        head_in = ws->acc;
    if (st == KVC_OK) st = kvci_linear(head_in, n, &m->lm_head, m->lm_head_b, a->logits);
    if (st == KVC_OK && c->logits_scaling > 0.0) { /* Granite: divided, not times 1 / s (transformers' bits) */
        const float scaling = (float)c->logits_scaling;
        for (int64_t i = 0; i < n * c->vocab_size; i++) a->logits[i] /= scaling;
    }
    if (st == KVC_OK && c->final_logit_softcapping > 0.0) { /* Gemma 2: divided, tanh, times (transformers' order) */
        const float cap = (float)c->final_logit_softcapping;
        for (int64_t i = 0; i < n * c->vocab_size; i++) a->logits[i] = tanhf(a->logits[i] / cap) * cap;
    }
    if (st == KVC_OK && c->logit_scale > 0.0) { /* Cohere: times logit_scale */
        const float scale = (float)c->logit_scale;
        for (int64_t i = 0; i < n * c->vocab_size; i++) a->logits[i] *= scale;
    }
    kvci_sp_end(KVC_SP_HEAD, t0);
    return st;
}
