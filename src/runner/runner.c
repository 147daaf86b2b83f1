/* kvc_runner: creation of the caches of the three standalone modes (AO 5)
 * and of every per-step array, sized once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/cache_build.h"
#include "model/model_internal.h"
#include "runner/runner_internal.h"

kvc_runner_params kvc_runner_default_params(void) {
    kvc_runner_params p = {.mode = KVC_RUNNER_PAGED,
                           .mla_paged = true,
                           .max_new_tokens = 8,
                           .max_seq_len = 0,
                           .pages = KVC_STORAGE_PAGES_HUGE,
                           .cache = kvc_cache_knobs_default()};
    return p;
}

void kvc_runner_destroy(kvc_runner *r) {
    if (!r) return;
    kvc_model_workspace_destroy(r->ws);
    kvci_page_set_release(&r->cache_mem);
    kvci_cache_set_release(&r->cache);
    kvci_free(r->table);
    kvci_free(r->state_table);
    kvci_free(r->ids);
    kvci_free(r->positions);
    kvci_free(r->slots);
    kvci_free(r->kv_pos);
    kvci_free(r->lens_q);
    kvci_free(r->lens_kv);
    kvci_free(r->cu_q);
    kvci_free(r->cu_kv);
    kvci_free(r->seq_len);
    kvci_free(r->hist);
    kvci_free(r->logits);
    kvci_free(r->chosen);
    kvci_free(r->last);
    kvci_free(r);
}

int64_t kvc_runner_max_seq_len(const kvc_runner *r) { return r ? r->S : 0; }

int64_t kvc_runner_kv_bytes_per_token(const kvc_runner *r) {
    int64_t bytes = 0;
    if (!r || r->p.mode == KVC_RUNNER_RECOMPUTE || !kvci_cache_set_bytes(&r->cache, 1, &bytes)) return 0;
    return bytes;
}

kvc_status kvc_runner_page_info(const kvc_runner *r, kvc_storage_page_info *out) {
    if (!r || !out) return kvci_fail(KVC_EINVAL, "kvc_runner_page_info: %s must not be NULL", !r ? "runner" : "out");
    kvci_page_set_info(&r->cache_mem, out);
    out->pages = r->p.pages;
    return KVC_OK;
}

/* The knobs of p's mode (mode 0 keeps no cache: its kv_dtype is not read). */
static kvci_cache_knobs runner_knobs(const kvc_runner_params *p) {
    const bool latent = p->mode == KVC_RUNNER_MLA_LATENT;
    kvci_cache_knobs k = {
        .cache = p->cache, .paged = p->mode == KVC_RUNNER_PAGED || (latent && p->mla_paged), .latent = latent};
    if (p->mode == KVC_RUNNER_RECOMPUTE) k.cache.kv_dtype = KVC_DTYPE_F32;
    return k;
}

/* Bytes of one sequence's states: every state of every state layer (kvci_layer_states), f32. */
static int64_t state_bytes_per_row(const kvc_model_config *c) {
    int64_t n = 0;
    kvci_state_shape s[KVCI_MAX_LAYER_STATES];
    for (int64_t l = 0; l < c->num_layers; l++)
        for (int32_t i = 0, k = kvci_layer_states(c, l, s); i < k; i++) n += kvci_layer_state_floats(&s[i]) * 4;
    return n;
}

/* The state layers' states after the K/V caches in mem: each [batch, shape] (paged: a block per row, block b row
 * b's, as state_table says). */
static void carve_states(kvc_runner *r, char *mem) {
    const kvc_model_config *c = kvc_model_config_of(r->m);
    kvci_state_shape s[KVCI_MAX_LAYER_STATES];
    for (int64_t l = 0; l < c->num_layers; l++)
        for (int32_t i = 0, k = kvci_layer_states(c, l, s); i < k; i++) {
            kvc_tensor *t = kvci_layer_state_slot(&r->caches.layers[l], i);
            *t = (kvc_tensor){.data = mem, .dtype = KVC_DTYPE_F32, .ndim = 1 + s[i].ndim, .shape = {r->batch}};
            for (int32_t d = 0; d < s[i].ndim; d++) t->shape[1 + d] = s[i].shape[d];
            mem += r->batch * kvci_layer_state_floats(&s[i]) * 4;
        }
}

/* Every cache tensor in one zeroed buffer: paged total_blocks blocks, else batch rows of S positions; then the
 * states, a row each. */
static kvc_status make_caches(kvc_runner *r) {
    const kvci_cache_knobs k = runner_knobs(&r->p);
    const int64_t L = kvc_model_config_of(r->m)->num_layers;
    kvc_status st = kvci_cache_set_build(r->m, &k, &r->caches, &r->cache);
    if (st != KVC_OK) return st;
    const int64_t n0 = k.paged ? r->lay.total_blocks : r->batch, n1 = k.paged ? r->lay.block_size : r->S;
    int64_t tokens = 0, bytes = 0, states = 0;
    if (!kvci_mul64(r->batch, r->S, &tokens) || !kvci_cache_set_bytes(&r->cache, tokens, &bytes) ||
        !kvci_mul64(r->batch, state_bytes_per_row(kvc_model_config_of(r->m)), &states) ||
        !kvci_add64(bytes, states, &bytes))
        return kvci_fail(KVC_EINVAL, "runner: caches of %lld rows x %lld positions x %lld layers overflow int64 bytes",
                         (long long)r->batch, (long long)r->S, (long long)L);
    void *mem = NULL;
    st = kvci_page_set_init(&r->cache_mem, "runner", r->p.pages, KVC_ALIGN_DEFAULT, 1);
    if (st == KVC_OK) st = kvci_page_set_alloc(&r->cache_mem, (size_t)bytes, true, &mem); /* caches start zeroed */
    if (st != KVC_OK)
        return kvci_fail(st, "runner: caches of %lld bytes (%lld rows x %lld positions x %lld layers): %s",
                         (long long)bytes, (long long)r->batch, (long long)r->S, (long long)L, kvc_last_error());
    /* Touched now, as peers clear their caches at creation: a mapping's pages are otherwise faulted in (and
     * zeroed by the kernel) by the first prefill's cache writes, which made it up to ~0.8 s slower here
     * (1.5 GB model, 8 x 64 tokens: 29 MB of bf16 K/V on 2 MiB pages). */
    memset(mem, 0, (size_t)bytes);
    kvci_cache_set_carve(&r->cache, mem, n0, n1);
    carve_states(r, (char *)mem + (bytes - states));
    return KVC_OK;
}

/* Prompt + new tokens against the positions allowed (kvc_runner_check). */
static kvc_status check_positions(const kvc_model_config *c, const kvc_runner_params *p, int64_t max_prompt) {
    if (p->max_positions < 0 || p->max_positions > KVC_RUNNER_MAX_POSITIONS)
        return kvci_fail(KVC_EINVAL,
                         "runner: max_positions %lld must be in [1, %lld] (0: the model's "
                         "max_position_embeddings)",
                         (long long)p->max_positions, (long long)KVC_RUNNER_MAX_POSITIONS);
    const int64_t limit = p->max_positions > 0 ? p->max_positions : c->max_position_embeddings;
    int64_t need = 0;
    const bool over = !kvci_add64(max_prompt, p->max_new_tokens, &need) || need > limit;
    if (over && p->max_positions > 0)
        return kvci_fail(KVC_EINVAL, "runner: a prompt of %lld ids + %lld new tokens passes max_positions %lld",
                         (long long)max_prompt, (long long)p->max_new_tokens, (long long)limit);
    if (over)
        return kvci_fail(KVC_EINVAL,
                         "runner: a prompt of %lld ids + %lld new tokens passes the model's "
                         "max_position_embeddings %lld (max_positions overrides it)",
                         (long long)max_prompt, (long long)p->max_new_tokens, (long long)limit);
    if (need > KVC_RUNNER_MAX_POSITIONS)
        return kvci_fail(KVC_EINVAL,
                         "runner: a prompt of %lld ids + %lld new tokens passes the runner's limit of "
                         "%lld positions",
                         (long long)max_prompt, (long long)p->max_new_tokens, (long long)KVC_RUNNER_MAX_POSITIONS);
    return KVC_OK;
}

kvc_status kvc_runner_check(const kvc_model *m, const kvc_runner_params *p, int64_t batch, int64_t max_prompt) {
    if (!m || !p) return kvci_fail(KVC_EINVAL, "runner_check: model and params must not be NULL");
    const kvc_model_config *c = kvc_model_config_of(m);
    if (p->mode < KVC_RUNNER_RECOMPUTE || p->mode > KVC_RUNNER_MLA_LATENT)
        return kvci_fail(KVC_EINVAL, "runner: mode %d unknown (0 recompute, 1 contiguous, 2 paged, 3 MLA latent)",
                         (int)p->mode);
    if (batch < 1 || max_prompt < 1 || p->max_new_tokens < 1 || p->max_seq_len < 0)
        return kvci_fail(
            KVC_EINVAL,
            "runner: batch %lld, max_prompt_len %lld, max_new_tokens %lld must be >= 1 (max_seq_len %lld >= 0)",
            (long long)batch, (long long)max_prompt, (long long)p->max_new_tokens, (long long)p->max_seq_len);
    /* bounds before create multiplies them: a step's tokens (batch rows) never pass the workspace's
     * 2^24, a row's positions never the runner's limit */
    if (batch > (INT64_C(1) << 24) || p->max_seq_len > KVC_RUNNER_MAX_POSITIONS)
        return kvci_fail(KVC_EINVAL, "runner: batch %lld must be at most 2^24 and max_seq_len %lld at most %lld",
                         (long long)batch, (long long)p->max_seq_len, (long long)KVC_RUNNER_MAX_POSITIONS);
    const kvci_cache_knobs k = runner_knobs(p);
    char where[32];
    snprintf(where, sizeof where, "in mode %d", (int)p->mode);
    kvc_status st = kvci_cache_knobs_check(m, &k, "runner", "cache.", where);
    if (st != KVC_OK) return st;
    st = check_positions(c, p, max_prompt);
    return st != KVC_OK ? st : kvci_page_policy_check("runner", p->pages, KVC_ALIGN_DEFAULT);
}

kvc_status kvc_runner_create(const kvc_model *m, const kvc_runner_params *p, int64_t batch, int64_t max_prompt_len,
                             kvc_runner **out) {
    if (!m || !p || !out) return kvci_fail(KVC_EINVAL, "runner_create: model, params and out must not be NULL");
    *out = NULL;
    kvc_status st = kvc_runner_check(m, p, batch, max_prompt_len);
    if (st != KVC_OK) return st;
    const bool paged = runner_knobs(p).paged;
    const int64_t need = max_prompt_len + p->max_new_tokens - 1;
    int64_t S = p->max_seq_len;
    if (S == 0) S = paged ? kvci_cdiv(need + 1, p->cache.block_size) * p->cache.block_size : need + 1;
    if (S < need)
        return kvci_fail(KVC_EINVAL, "runner: max_seq_len %lld is below max_prompt_len %lld + max_new_tokens %lld - 1",
                         (long long)S, (long long)max_prompt_len, (long long)p->max_new_tokens);
    kvc_runner *r = kvci_calloc(1, sizeof *r);
    if (!r) return kvci_fail(KVC_ENOMEM, "runner: out of memory");
    r->m = m;
    r->p = *p;
    r->batch = batch, r->max_prompt = max_prompt_len, r->S = S;
    const bool recompute = p->mode == KVC_RUNNER_RECOMPUTE;
    r->max_tokens = batch * (recompute ? S : max_prompt_len);
    if (paged) st = kvc_static_layout_init(batch, S, p->cache.block_size, &r->lay);
    const int64_t V = kvc_model_config_of(m)->vocab_size, bps = paged ? r->lay.blocks_per_seq : 1;
    if (st == KVC_OK) {
        r->table = kvci_calloc((size_t)(batch * bps), sizeof *r->table);
        r->state_table = kvci_calloc((size_t)batch, sizeof *r->state_table);
        r->ids = kvci_calloc((size_t)r->max_tokens, sizeof *r->ids);
        r->positions = kvci_calloc((size_t)r->max_tokens, sizeof *r->positions);
        r->slots = kvci_calloc((size_t)r->max_tokens, sizeof *r->slots);
        r->kv_pos = kvci_calloc((size_t)batch, sizeof(int64_t));
        r->lens_q = kvci_calloc((size_t)batch, sizeof(int64_t));
        r->lens_kv = kvci_calloc((size_t)batch, sizeof(int64_t));
        r->cu_q = kvci_calloc((size_t)batch, sizeof(int64_t));
        r->cu_kv = kvci_calloc((size_t)batch, sizeof(int64_t));
        r->seq_len = kvci_calloc((size_t)batch, sizeof(int64_t));
        r->hist = kvci_calloc((size_t)(batch * S), sizeof *r->hist);
        r->logits = kvci_calloc((size_t)(batch * V), sizeof *r->logits);
        r->chosen = kvci_calloc((size_t)batch, sizeof *r->chosen);
        r->last = kvci_calloc((size_t)batch, sizeof *r->last);
        if (!r->table || !r->state_table || !r->ids || !r->positions || !r->slots || !r->kv_pos || !r->lens_q ||
            !r->lens_kv || !r->cu_q || !r->cu_kv || !r->seq_len || !r->hist || !r->logits || !r->chosen || !r->last)
            st = kvci_fail(KVC_ENOMEM, "runner: out of memory");
    }
    if (st == KVC_OK && paged) st = kvc_static_table_fill(&r->lay, r->table, batch * bps);
    for (int64_t b = 0; st == KVC_OK && b < batch; b++) r->state_table[b] = (int32_t)b;
    if (st == KVC_OK && !recompute) st = make_caches(r);
    if (st == KVC_OK) st = kvc_model_workspace_create(m, r->max_tokens, batch, S, &r->ws);
    if (st != KVC_OK) {
        kvc_runner_destroy(r);
        return st;
    }
    *out = r;
    return KVC_OK;
}
