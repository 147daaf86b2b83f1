/* The tensors of each family in one fixed order (MF 2, 3.5, 4.5), the arena
 * that holds them, and the two ways to fill it: safetensors or a seeded
 * pseudo-random generator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/model_internal.h"
#include "model/weights_internal.h"

#define TRY(expr)                              \
    do {                                       \
        kvc_status try_st_ = (expr);           \
        if (try_st_ != KVC_OK) return try_st_; \
    } while (0)

typedef struct visitor {
    kvc_weight_visit_fn fn;
    void *user;
    char prefix[96];
} visitor;

static kvc_status v1(visitor *v, const char *suffix, int64_t a, float **slot, kvc_winit init)
{
    char name[256];
    snprintf(name, sizeof name, "%s%s", v->prefix, suffix);
    const int64_t s[1] = {a};
    return v->fn(v->user, name, 1, s, slot, init);
}

static kvc_status v2(visitor *v, const char *suffix, int64_t a, int64_t b, float **slot, kvc_winit init)
{
    char name[256];
    snprintf(name, sizeof name, "%s%s", v->prefix, suffix);
    const int64_t s[2] = {a, b};
    return v->fn(v->user, name, 2, s, slot, init);
}

static kvc_status v3(visitor *v, const char *suffix, int64_t a, int64_t b, int64_t c, float **slot, kvc_winit init)
{
    char name[256];
    snprintf(name, sizeof name, "%s%s", v->prefix, suffix);
    const int64_t s[3] = {a, b, c};
    return v->fn(v->user, name, 3, s, slot, init);
}

static kvc_status visit_gqa_attn(visitor *v, const kvc_model_config *c, kvc_layer_weights *w)
{
    const int64_t H = c->hidden_size, nH = c->num_heads, nKV = c->num_kv_heads, D = c->head_dim;
    TRY(v2(v, "self_attn.q_proj.weight", nH * D, H, &w->wq, KVC_WINIT_WEIGHT));
    if (c->qkv_bias) TRY(v1(v, "self_attn.q_proj.bias", nH * D, &w->bq, KVC_WINIT_BIAS));
    TRY(v2(v, "self_attn.k_proj.weight", nKV * D, H, &w->wk, KVC_WINIT_WEIGHT));
    if (c->qkv_bias) TRY(v1(v, "self_attn.k_proj.bias", nKV * D, &w->bk, KVC_WINIT_BIAS));
    TRY(v2(v, "self_attn.v_proj.weight", nKV * D, H, &w->wv, KVC_WINIT_WEIGHT));
    if (c->qkv_bias) TRY(v1(v, "self_attn.v_proj.bias", nKV * D, &w->bv, KVC_WINIT_BIAS));
    TRY(v2(v, "self_attn.o_proj.weight", H, nH * D, &w->wo, KVC_WINIT_WEIGHT));
    if (c->o_bias) TRY(v1(v, "self_attn.o_proj.bias", H, &w->bo, KVC_WINIT_BIAS));
    if (c->qk_norm) {
        TRY(v1(v, "self_attn.q_norm.weight", D, &w->q_norm, KVC_WINIT_NORM));
        TRY(v1(v, "self_attn.k_norm.weight", D, &w->k_norm, KVC_WINIT_NORM));
    }
    if (c->family == KVC_FAMILY_GPT_OSS) TRY(v1(v, "self_attn.sinks", nH, &w->sinks, KVC_WINIT_SINK));
    return KVC_OK;
}

static kvc_status visit_mla_attn(visitor *v, const kvc_model_config *c, kvc_layer_weights *w)
{
    const int64_t H = c->hidden_size, nH = c->num_heads, dq = c->qk_nope_head_dim + c->qk_rope_head_dim;
    const int64_t rq = c->q_lora_rank, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim;
    const int64_t dn = c->qk_nope_head_dim, dv = c->v_head_dim;
    if (rq == 0) {
        TRY(v2(v, "self_attn.q_proj.weight", nH * dq, H, &w->wq, KVC_WINIT_WEIGHT));
    } else {
        TRY(v2(v, "self_attn.q_a_proj.weight", rq, H, &w->wqa, KVC_WINIT_WEIGHT));
        if (c->qkv_bias) TRY(v1(v, "self_attn.q_a_proj.bias", rq, &w->bqa, KVC_WINIT_BIAS));
        TRY(v1(v, "self_attn.q_a_layernorm.weight", rq, &w->qa_norm, KVC_WINIT_NORM));
        TRY(v2(v, "self_attn.q_b_proj.weight", nH * dq, rq, &w->wqb, KVC_WINIT_WEIGHT));
    }
    TRY(v2(v, "self_attn.kv_a_proj_with_mqa.weight", rkv + dr, H, &w->wkva, KVC_WINIT_WEIGHT));
    if (c->qkv_bias) TRY(v1(v, "self_attn.kv_a_proj_with_mqa.bias", rkv + dr, &w->bkva, KVC_WINIT_BIAS));
    TRY(v1(v, "self_attn.kv_a_layernorm.weight", rkv, &w->kva_norm, KVC_WINIT_NORM));
    TRY(v2(v, "self_attn.kv_b_proj.weight", nH * (dn + dv), rkv, &w->wkvb, KVC_WINIT_WEIGHT));
    TRY(v2(v, "self_attn.o_proj.weight", H, nH * dv, &w->wo, KVC_WINIT_WEIGHT));
    if (c->o_bias) TRY(v1(v, "self_attn.o_proj.bias", H, &w->bo, KVC_WINIT_BIAS));
    return KVC_OK;
}

static kvc_status visit_dense_mlp(visitor *v, const kvc_model_config *c, kvc_layer_weights *w, const char *sub,
                                  int64_t I, float **g, float **u, float **d)
{
    const int64_t H = c->hidden_size;
    char n[96];
    snprintf(n, sizeof n, "mlp.%sgate_proj.weight", sub);
    TRY(v2(v, n, I, H, g, KVC_WINIT_WEIGHT));
    if (c->mlp_bias && !*sub) TRY(v1(v, "mlp.gate_proj.bias", I, &w->b_gate, KVC_WINIT_BIAS));
    snprintf(n, sizeof n, "mlp.%sup_proj.weight", sub);
    TRY(v2(v, n, I, H, u, KVC_WINIT_WEIGHT));
    if (c->mlp_bias && !*sub) TRY(v1(v, "mlp.up_proj.bias", I, &w->b_up, KVC_WINIT_BIAS));
    snprintf(n, sizeof n, "mlp.%sdown_proj.weight", sub);
    TRY(v2(v, n, H, I, d, KVC_WINIT_WEIGHT));
    if (c->mlp_bias && !*sub) TRY(v1(v, "mlp.down_proj.bias", H, &w->b_down, KVC_WINIT_BIAS));
    return KVC_OK;
}

static kvc_status visit_layer(visitor *v, const kvc_model_config *c, int64_t l, kvc_layer_weights *w)
{
    const int64_t H = c->hidden_size;
    snprintf(v->prefix, sizeof v->prefix, "model.layers.%lld.", (long long)l);
    TRY(v1(v, "input_layernorm.weight", H, &w->in_norm, KVC_WINIT_NORM));
    TRY(v1(v, "post_attention_layernorm.weight", H, &w->post_norm, KVC_WINIT_NORM));
    if (c->family == KVC_FAMILY_DEEPSEEK_V3) TRY(visit_mla_attn(v, c, w));
    else TRY(visit_gqa_attn(v, c, w));
    if (c->family == KVC_FAMILY_GPT_OSS) {
        const int64_t E = c->num_experts, I = c->intermediate_size;
        w->moe = true;
        TRY(v2(v, "mlp.router.weight", E, H, &w->router_w, KVC_WINIT_WEIGHT));
        TRY(v1(v, "mlp.router.bias", E, &w->router_b, KVC_WINIT_BIAS));
        TRY(v3(v, "mlp.experts.gate_up_proj", E, H, 2 * I, &w->gu, KVC_WINIT_GATE_UP));
        TRY(v2(v, "mlp.experts.gate_up_proj_bias", E, 2 * I, &w->gu_b, KVC_WINIT_BIAS));
        TRY(v3(v, "mlp.experts.down_proj", E, I, H, &w->dn, KVC_WINIT_WEIGHT));
        TRY(v2(v, "mlp.experts.down_proj_bias", E, H, &w->dn_b, KVC_WINIT_BIAS));
    } else if (c->family == KVC_FAMILY_DEEPSEEK_V3 && l >= c->first_k_dense_replace) {
        const int64_t E = c->n_routed_experts, Im = c->moe_intermediate_size;
        w->moe = true;
        TRY(v2(v, "mlp.gate.weight", E, H, &w->gate_w, KVC_WINIT_WEIGHT));
        TRY(v1(v, "mlp.gate.e_score_correction_bias", E, &w->gate_corr, KVC_WINIT_BIAS));
        /* virtual names: the loader reads per-expert modules or the fused form (MF 4.5) */
        TRY(v3(v, KVC_DS_EXPERTS_GATE, E, Im, H, &w->ex_gate, KVC_WINIT_WEIGHT));
        TRY(v3(v, KVC_DS_EXPERTS_UP, E, Im, H, &w->ex_up, KVC_WINIT_WEIGHT));
        TRY(v3(v, KVC_DS_EXPERTS_DOWN, E, H, Im, &w->ex_down, KVC_WINIT_WEIGHT));
        if (c->n_shared_experts > 0)
            TRY(visit_dense_mlp(v, c, w, "shared_experts.", Im * c->n_shared_experts, &w->sh_gate, &w->sh_up,
                                &w->sh_down));
    } else {
        TRY(visit_dense_mlp(v, c, w, "", c->intermediate_size, &w->w_gate, &w->w_up, &w->w_down));
    }
    return KVC_OK;
}

kvc_status kvci_model_visit_weights(kvc_model *m, kvc_weight_visit_fn fn, void *user)
{
    const kvc_model_config *c = &m->cfg;
    visitor v = {.fn = fn, .user = user, .prefix = ""};
    TRY(v2(&v, "model.embed_tokens.weight", c->vocab_size, c->hidden_size, &m->embed, KVC_WINIT_WEIGHT));
    for (int64_t l = 0; l < c->num_layers; l++) TRY(visit_layer(&v, c, l, &m->layers[l]));
    v.prefix[0] = '\0';
    TRY(v1(&v, "model.norm.weight", c->hidden_size, &m->final_norm, KVC_WINIT_NORM));
    if (!c->tie_word_embeddings)
        TRY(v2(&v, "lm_head.weight", c->vocab_size, c->hidden_size, &m->lm_head, KVC_WINIT_WEIGHT));
    return KVC_OK;
}

/* ---- arena ---------------------------------------------------------------- */

static int64_t numel(int32_t ndim, const int64_t *s)
{
    int64_t n = 1;
    for (int32_t i = 0; i < ndim; i++) n *= s[i];
    return n;
}

/* Sums the arena's floats, each tensor rounded up to 16 floats (64-byte
 * aligned starts); refuses a tensor or a total beyond KVC_MODEL_MAX_WEIGHT_BYTES
 * before any product can overflow (every size is at most KVC_MODEL_MAX_DIM). */
static kvc_status count_fn(void *user, const char *name, int32_t ndim, const int64_t *shape, float **slot,
                           kvc_winit init)
{
    (void)slot, (void)init;
    int64_t *total = user, n = 1;
    for (int32_t i = 0; i < ndim; i++)
        if (!kvci_mul64(n, shape[i], &n) || n > KVC_MODEL_MAX_WEIGHT_BYTES / 4)
            return kvci_fail(KVC_EINVAL, "model: tensor \"%s\" needs more than the %lld-byte weight limit", name,
                            (long long)KVC_MODEL_MAX_WEIGHT_BYTES);
    *total += (n + 15) & ~(int64_t)15;
    if (*total > KVC_MODEL_MAX_WEIGHT_BYTES / 4)
        return kvci_fail(KVC_EINVAL, "model: the weights up to tensor \"%s\" need more than the %lld-byte weight limit",
                        name, (long long)KVC_MODEL_MAX_WEIGHT_BYTES);
    return KVC_OK;
}

static kvc_status assign_fn(void *user, const char *name, int32_t ndim, const int64_t *shape, float **slot,
                            kvc_winit init)
{
    (void)name, (void)init;
    float **cur = user;
    *slot = *cur;
    *cur += (numel(ndim, shape) + 15) & ~(int64_t)15;
    return KVC_OK;
}

void kvc_model_destroy(kvc_model *m)
{
    if (!m) return;
    kvc_aligned_free(m->arena);
    kvc_aligned_free(m->derived);
    kvci_free(m->inv_freq);
    kvci_free(m);
}

/* Every size of a config is bounded before anything is multiplied with it:
 * required ones in [1, KVC_MODEL_MAX_DIM], optional ones in [0, it]. */
static kvc_status check_sizes(const kvc_model_config *c)
{
    const bool mla = c->family == KVC_FAMILY_DEEPSEEK_V3, moe = c->family == KVC_FAMILY_GPT_OSS;
    const struct {
        const char *name;
        int64_t value, min;
    } sizes[] = {
        {"vocab_size", c->vocab_size, 1},
        {"hidden_size", c->hidden_size, 1},
        {"intermediate_size", c->intermediate_size, 1},
        {"num_attention_heads", c->num_heads, 1},
        {"num_key_value_heads", c->num_kv_heads, 1},
        {"head_dim", c->head_dim, 2},
        {"num_local_experts", c->num_experts, moe},
        {"num_experts_per_tok", c->experts_per_tok, moe},
        {"q_lora_rank", c->q_lora_rank, 0},
        {"kv_lora_rank", c->kv_lora_rank, mla},
        {"qk_nope_head_dim", c->qk_nope_head_dim, mla},
        {"qk_rope_head_dim", c->qk_rope_head_dim, 0},
        {"v_head_dim", c->v_head_dim, mla},
        {"moe_intermediate_size", c->moe_intermediate_size, 0},
        {"n_routed_experts", c->n_routed_experts, 0},
        {"n_shared_experts", c->n_shared_experts, 0},
        {"first_k_dense_replace", c->first_k_dense_replace, 0},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value < sizes[i].min || sizes[i].value > KVC_MODEL_MAX_DIM)
            return kvci_fail(KVC_EINVAL, "model: %s %lld outside [%lld, %lld]", sizes[i].name, (long long)sizes[i].value,
                            (long long)sizes[i].min, (long long)KVC_MODEL_MAX_DIM);
    return KVC_OK;
}

kvc_status kvci_model_alloc(const kvc_model_config *cfg, kvc_weight_visit_fn check, void *check_user, kvc_model **out)
{
    *out = NULL;
    if (cfg->num_layers < 1 || cfg->num_layers > KVC_MODEL_MAX_LAYERS)
        return kvci_fail(KVC_EINVAL, "model: num_layers %lld outside [1, %d]", (long long)cfg->num_layers,
                        KVC_MODEL_MAX_LAYERS);
    TRY(check_sizes(cfg));
    if (cfg->num_heads % cfg->num_kv_heads != 0 || cfg->head_dim % 2)
        return kvci_fail(KVC_EINVAL, "model: num_heads %lld must be a multiple of num_kv_heads %lld, head_dim %lld even",
                        (long long)cfg->num_heads, (long long)cfg->num_kv_heads, (long long)cfg->head_dim);
    if (cfg->family == KVC_FAMILY_DEEPSEEK_V3 &&
        (cfg->qk_rope_head_dim != cfg->head_dim || cfg->num_kv_heads != cfg->num_heads))
        return kvci_fail(KVC_EINVAL, "model: deepseek_v3 needs head_dim == qk_rope_head_dim and num_kv_heads == num_heads");
    if (cfg->family == KVC_FAMILY_GPT_OSS && cfg->experts_per_tok > cfg->num_experts)
        return kvci_fail(KVC_EINVAL, "model: gpt_oss needs num_experts_per_tok %lld <= num_experts %lld",
                        (long long)cfg->experts_per_tok, (long long)cfg->num_experts);
    kvc_model *m = kvci_calloc(1, sizeof *m);
    if (!m) return kvci_fail(KVC_ENOMEM, "model: out of memory");
    m->cfg = *cfg;
    m->rot_dim = cfg->family == KVC_FAMILY_DEEPSEEK_V3 ? cfg->qk_rope_head_dim : cfg->head_dim;
    m->inv_freq = kvci_calloc((size_t)(m->rot_dim / 2 + 1), sizeof(float));
    int64_t n = 0;
    kvc_status st = m->inv_freq ? kvci_model_visit_weights(m, count_fn, &n) : kvci_fail(KVC_ENOMEM, "model: out of memory");
    if (st == KVC_OK && check) st = kvci_model_visit_weights(m, check, check_user);
    if (st == KVC_OK) st = kvc_aligned_alloc(64, (size_t)n * sizeof(float), (void **)&m->arena);
    if (st == KVC_OK) {
        m->arena_floats = n;
        float *cur = m->arena;
        st = kvci_model_visit_weights(m, assign_fn, &cur);
        if (cfg->tie_word_embeddings) m->lm_head = m->embed;
    }
    if (st == KVC_OK) st = kvc_rope_frequencies(&m->cfg.rope, m->rot_dim, m->inv_freq, &m->rope_attn_factor);
    if (st != KVC_OK) {
        kvc_model_destroy(m);
        return st;
    }
    *out = m;
    return KVC_OK;
}

const kvc_model_config *kvc_model_config_of(const kvc_model *m) { return m ? &m->cfg : NULL; }

/* ---- random initialisation ------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double gauss(uint64_t *s)
{
    const double u1 = ((double)(splitmix(s) >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (double)(splitmix(s) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static kvc_status random_fn(void *user, const char *name, int32_t ndim, const int64_t *shape, float **slot,
                            kvc_winit init)
{
    uint64_t s = *(const uint64_t *)user;
    for (const char *p = name; *p; p++) s = (s ^ (uint64_t)(unsigned char)*p) * 0x100000001B3ull; /* FNV per name */
    const int64_t n = numel(ndim, shape);
    /* fan-in: the last dim of an [out, in] Linear; the middle dim of [E, in, out] expert tensors */
    const int64_t fan_in = (ndim == 3 && strstr(name, "gate_up_proj")) ? shape[1] : shape[ndim - 1];
    double mean = 0.0, std;
    switch (init) {
    case KVC_WINIT_NORM: mean = 1.0, std = 0.1; break;
    case KVC_WINIT_BIAS: std = 0.05; break;
    case KVC_WINIT_SINK: std = 1.0; break;
    case KVC_WINIT_GATE_UP: std = 0.6; break;
    default: std = strcmp(name, "model.embed_tokens.weight") == 0 ? 1.0 : 1.0 / sqrt((double)fan_in); break;
    }
    float *d = *slot;
    for (int64_t i = 0; i < n; i++) d[i] = (float)(mean + std * gauss(&s));
    return KVC_OK;
}

kvc_status kvc_model_create_random(const kvc_model_config *cfg, uint64_t seed, kvc_model **out)
{
    if (!cfg || !out) return kvci_fail(KVC_EINVAL, "model_create_random: cfg and out must not be NULL");
    *out = NULL;
    kvc_model *m = NULL;
    TRY(kvci_model_alloc(cfg, NULL, NULL, &m));
    kvc_status st = kvci_model_visit_weights(m, random_fn, &seed);
    if (st == KVC_OK) st = kvci_model_prepare(m);
    if (st != KVC_OK) {
        kvc_model_destroy(m);
        return st;
    }
    *out = m;
    return KVC_OK;
}
