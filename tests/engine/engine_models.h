/* Helpers of the engine tests over the model runtime: an engine over a
 * kvc_model through kvc_engine_adapter, with a forward wrapper that records
 * the logits of every request's every step, and the runner run of the same
 * static batch. */
#ifndef KVC_TESTS_ENGINE_MODELS_H
#define KVC_TESTS_ENGINE_MODELS_H

#include <stdlib.h>

#include "kvc_test_util.h"

#define EM_MAX_REQ 8

/* A small gpt-oss config (sliding + full layers, 8 experts) the engine tests build random models of. */
static const char *const GPT_OSS_JSON =
    "{\"model_type\":\"gpt_oss\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":32,"
    "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
    "\"sliding_window\":4,\"num_local_experts\":8,\"num_experts_per_tok\":2,\"rms_norm_eps\":1e-5,"
    "\"layer_types\":[\"sliding_attention\",\"full_attention\",\"sliding_attention\",\"full_attention\"],"
    "\"max_position_embeddings\":4096}";

/* The adapter's model with a recording forward. */
typedef struct em_recorder {
    const kvc_engine_model *inner;
    kvc_engine_model outer;
    int64_t vocab, nt; /* logits kept for steps 0..nt-1 of each request */
    float *logits;     /* [EM_MAX_REQ, nt, vocab], request id r at r * nt * vocab */
    int64_t steps[EM_MAX_REQ];
} em_recorder;

static inline kvc_status em_forward(void *self, const int32_t *ids, const kvc_engine_batch *batch, float *logits) {
    em_recorder *r = self;
    kvc_status st = r->inner->forward(r->inner->self, ids, batch, logits);
    if (st != KVC_OK) return st;
    for (int64_t b = 0; b < batch->md->n_rows; b++) {
        const int64_t id = batch->request_ids[b];
        if (id < 0 || id >= EM_MAX_REQ || r->steps[id] >= r->nt) continue;
        memcpy(r->logits + (id * r->nt + r->steps[id]) * r->vocab, logits + b * r->vocab,
               (size_t)r->vocab * sizeof(float));
        r->steps[id]++;
    }
    return KVC_OK;
}

static inline kvc_model *em_random_model(const char *json, uint64_t seed) {
    kvc_model_config cfg;
    if (kvc_model_config_parse(json, "test config", &cfg) != KVC_OK) fail_msg("config: %s", kvc_last_error());
    kvc_model *m = NULL;
    if (kvc_model_create_random(&cfg, seed, &m) != KVC_OK) fail_msg("model: %s", kvc_last_error());
    return m;
}

/* Engine params for a static batch of n prompts run together: every prompt
 * in one prefill, then lock-step decodes (no reservation, pools for all). */
static inline kvc_engine_params em_params(int64_t max_model_len, int64_t n, int64_t prompt_tokens) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = max_model_len;
    p.max_num_seqs = n;
    p.max_num_batched_tokens = prompt_tokens > max_model_len ? prompt_tokens : max_model_len;
    p.reserved_decode_tokens = 0;
    return p;
}

/* Runs prompts (packed ids, lens[n]) as requests 0..n-1 with nt greedy
 * tokens each. tokens [n, nt]; logits [n, nt, V]. */
static inline void em_engine_run(const kvc_model *m, const kvc_engine_adapter_params *ap, int64_t max_model_len,
                                 const int32_t *ids, const int64_t *lens, int64_t n, int64_t nt, int32_t *tokens,
                                 float *logits) {
    assert_true(n <= EM_MAX_REQ);
    int64_t total = 0;
    for (int64_t b = 0; b < n; b++) total += lens[b];
    kvc_engine_params p = em_params(max_model_len, n, total);
    kvc_engine_adapter *a = NULL;
    if (kvc_engine_adapter_create(m, ap, &p, &a) != KVC_OK) fail_msg("adapter: %s", kvc_last_error());
    em_recorder rec = {
        .inner = kvc_engine_adapter_model(a), .vocab = kvc_model_config_of(m)->vocab_size, .nt = nt, .logits = logits};
    rec.outer = *rec.inner;
    rec.outer.self = &rec;
    rec.outer.forward = em_forward;
    kvc_engine *e = NULL;
    if (kvc_engine_create(&rec.outer, &p, &e) != KVC_OK) fail_msg("engine: %s", kvc_last_error());
    const kvc_manager *mgr = kvc_engine_manager(e); /* managed: every key draws from one shared pool */
    for (int32_t k = 0; mgr != NULL && k < kvc_manager_n_keys(mgr); k++)
        assert_int_equal(kvc_manager_pool_key(mgr, k), 0);
    for (int64_t b = 0, t = 0; b < n; t += lens[b], b++) {
        kvc_engine_request r = kvc_engine_request_default();
        r.id = b;
        r.prompt = ids + t;
        r.n_prompt = lens[b];
        r.max_new_tokens = nt;
        if (kvc_engine_add_request(e, &r) != KVC_OK) fail_msg("add request %lld: %s", (long long)b, kvc_last_error());
    }
    kvc_engine_step_result res = {0};
    for (int64_t s = 0; !res.idle; s++) {
        if (kvc_engine_step(e, &res) != KVC_OK) fail_msg("step: %s", kvc_last_error());
        assert_true(s <= nt + 1);
        if (!res.idle) assert_int_equal(res.n_rows, n); /* the runner's static batch, row for row */
    }
    for (int64_t b = 0; b < n; b++) {
        int64_t got = 0;
        assert_int_equal(kvc_engine_request_output(e, b, tokens + b * nt, nt, &got), KVC_OK);
        assert_int_equal(got, nt);
        assert_int_equal(rec.steps[b], nt);
    }
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    for (int32_t k = 0; k < st.n_keys; k++) assert_int_equal(st.blocks_in_use[k], 0);
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
}

/* The runner on the same batch: tokens [n, nt], logits [nt, n, V]. */
static inline void em_runner_run(const kvc_model *m, kvc_runner_mode mode, bool mla_paged, const int32_t *ids,
                                 const int64_t *lens, int64_t n, int64_t nt, int32_t *tokens, float *logits) {
    int64_t maxl = 0;
    for (int64_t b = 0; b < n; b++) maxl = lens[b] > maxl ? lens[b] : maxl;
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = mode;
    p.mla_paged = mla_paged;
    p.max_new_tokens = nt;
    kvc_runner *r = NULL;
    if (kvc_runner_create(m, &p, n, maxl, &r) != KVC_OK) fail_msg("runner: %s", kvc_last_error());
    if (kvc_runner_generate(r, ids, lens, n, tokens, logits, NULL) != KVC_OK) fail_msg("runner: %s", kvc_last_error());
    kvc_runner_destroy(r);
}

#endif
