/* libFuzzer target: arbitrary bytes as a model's config.json for the one
 * config reader, as the runtime (kvc_model_config_parse) and the planner
 * (kvc_model_plan_create) consume it. Any input must either be read or be
 * refused with a status and a message. When both layers accept a config of a
 * family the runtime implements with attention layers, they must agree on the
 * softmax scale (one rope precedence, one mscale): a disagreement is a
 * finding, as are a crash, a sanitizer report, or an accepted config outside
 * the documented bounds. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache/model.h"
#include "kvcache/plan.h"
#include "kvcache/runner.h"
#include "model/model_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What an accepted runtime config promises (docs/config.md). */
static void check_accepted(const kvc_model_config *c) {
    if (c->num_layers < 1 || c->num_layers > KVC_MODEL_MAX_LAYERS || c->num_heads < 1 || c->num_kv_heads < 1 ||
        c->num_heads % c->num_kv_heads != 0 || c->head_dim < 2 || c->head_dim % 2 != 0 || c->vocab_size < 1 ||
        c->hidden_size < 1 || c->max_position_embeddings < 1 || c->rope.theta <= 1.0 || !(c->rope.factor > 0.0) ||
        strlen(c->model_type) >= sizeof c->model_type)
        abort();
    const double scale = kvc_model_attn_scale(c);
    if (!(scale > 0.0) || !isfinite(scale)) abort();
    /* the fields kvc_model_create_random checks in a caller's struct (weights.c, check_extras) */
    const double scales[] = {c->embed_scale, c->residual_multiplier, c->attention_multiplier, c->logits_scaling,
                             c->alibi_bias_max};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
        if (!(scales[i] >= 0.0 && scales[i] <= 1e6)) abort();
    if (!c->alibi && (c->alibi_in_scale || c->alibi_bias_max > 0.0)) abort();
    for (int64_t l = 0; l < c->num_layers; l++)
        if (c->layer_conv[l] && (c->family != KVC_FAMILY_LFM2 || c->conv_kernel < 2 || c->conv_kernel > 65536)) abort();
}

/* Weights of at most 16 Mi floats (a seed's tiny model, not a mutated vocabulary of 2^24): the sizing pass
 * refuses the rest before the arena is touched. */
static kvc_status small_weights(void *user, const kvc_wtensor *t) {
    int64_t *left = user, n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i] > 0 && t->shape[i] <= (1 << 24) ? t->shape[i] : 1 << 24;
    *left -= n;
    return *left >= 0 && n <= (1 << 24) ? KVC_OK : KVC_EINVAL;
}

/* A small accepted config runs too: random weights, three prompt tokens and two generated ones through paged
 * caches (runner mode 2). A status is fine (a refusal must say why); a crash or a sanitizer report is not. */
static void run_small(const kvc_model_config *c) {
    int64_t left = 1 << 24;
    kvc_model *m = NULL;
    if (kvci_model_alloc(c, NULL, small_weights, &left, &m) != KVC_OK) return;
    kvc_model_destroy(m), m = NULL;
    if (kvc_model_create_random(c, 1, &m) != KVC_OK) {
        if (m != NULL || kvc_last_error()[0] == '\0') abort();
        return;
    }
    kvc_runner_params rp = kvc_runner_default_params();
    rp.max_new_tokens = 2;
    kvc_runner *r = NULL;
    const int32_t ids[3] = {0, 1 % (int32_t)c->vocab_size, 2 % (int32_t)c->vocab_size};
    const int64_t lens[1] = {3};
    int32_t out[2];
    if (kvc_runner_create(m, &rp, 1, 3, &r) == KVC_OK &&
        kvc_runner_generate(r, ids, lens, 1, out, NULL, NULL) != KVC_OK && kvc_last_error()[0] == '\0')
        abort();
    kvc_runner_destroy(r);
    kvc_model_destroy(m);
}

/* Whether the plan has a layer with attention caches: an attention-free model (Mamba's, RWKV's) has no softmax
 * scale to agree on (the runtime's placeholder head_dim and the planner's hidden_size / heads differ). */
static bool has_attention(const kvc_model_plan *p) {
    for (int32_t l = 0; l < p->n_layers; l++)
        if (p->layers[l].n_caches > 0 && p->layers[l].attn_type != KVC_ATTN_MAMBA) return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text == NULL) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    kvc_model_config cfg;
    const kvc_status model_st = kvc_model_config_parse(text, "config.json", &cfg);
    if (model_st == KVC_OK) {
        check_accepted(&cfg);
        run_small(&cfg);
    } else if (kvc_last_error()[0] == '\0')
        abort(); /* a refusal says why */

    kvc_plan_options opt = kvc_plan_default_options();
    opt.max_model_len = 4096;
    kvc_model_plan *plan = NULL;
    const size_t len = strlen(text); /* what the runtime read (up to a NUL byte) */
    const kvc_status plan_st = len > 0 ? kvc_model_plan_create(text, len, &opt, &plan) : KVC_EINVAL;
    if (plan_st != KVC_OK && plan != NULL) abort();
    /* Granite's attention_multiplier sets the plan's scale; the runtime families have none. */
    if (model_st == KVC_OK && plan_st == KVC_OK && strstr(text, "attention_multiplier") == NULL &&
        has_attention(plan)) {
        const double a = kvc_model_attn_scale(&cfg), b = plan->scale;
        if (fabs(a - b) > 1e-12 * fabs(a)) abort();
    }
    kvc_model_plan_destroy(plan);
    free(text);
    return 0;
}
