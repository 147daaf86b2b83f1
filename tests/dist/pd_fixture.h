/* The fixture of the P/D tests (tests/dist): four requests -- two sharing a
 * 16-token prefix under one salt, one under another salt, a one-token prompt --
 * engines over a random model whose forward records the logits every
 * generated token was sampled from, the prefill side (prefill all, send each,
 * release) and the decode side (receive one, step, ...), and the check that
 * the decode side's tokens and logits are bitwise one BOTH engine's. */
#ifndef KVC_TESTS_PD_FIXTURE_H
#define KVC_TESTS_PD_FIXTURE_H

#include <stdlib.h>

#include "dist/pd.h"
#include "kvc_test_util.h"

#define N_REQ  4
#define NT     6
#define MAXLEN 64

static const int32_t IDS[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31, 8, 45, 2, 60, 71, 33, 19, 88, 7, 14, 120};
/* request 1 repeats request 0's first 16 tokens (a decode-side prefix hit with block size 4 and 8), request 2
 * the same under another salt (no hit), request 3 a one-token prompt (nothing to transfer) */
static const int64_t LENS[N_REQ] = {19, 21, 20, 1};
static const int64_t STARTS[N_REQ] = {0, 0, 0, 9};
static const char *const SALTS[N_REQ] = {"tenant-a", "tenant-a", "tenant-b", NULL};

typedef struct recorder {
    const kvc_engine_model *inner;
    kvc_engine_model outer;
    int64_t vocab;
    float *logits; /* [N_REQ, NT, vocab]: the logits each generated token was sampled from */
} recorder;

static inline kvc_status recording_forward(void *self, const int32_t *ids, const kvc_engine_batch *batch,
                                           float *logits) {
    recorder *r = self;
    kvc_status st = r->inner->forward(r->inner->self, ids, batch, logits);
    for (int64_t b = 0; st == KVC_OK && b < batch->md->n_rows; b++) {
        const int64_t id = batch->request_ids[b], g = batch->md->kv_pos[b] - (LENS[id] - 1);
        if (g >= 0 && g < NT)
            memcpy(r->logits + (id * NT + g) * r->vocab, logits + b * r->vocab, (size_t)r->vocab * sizeof(float));
    }
    return st;
}

typedef struct instance {
    kvc_engine_adapter *a;
    recorder rec;
    kvc_engine *e;
} instance;

/* tight: pools for one request of 32 positions, so that a decode engine preempts */
static inline void instance_open(instance *in, const kvc_model *m, bool latent, kvc_engine_role role,
                                 int64_t block_size, bool tight) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = tight ? 32 : MAXLEN;
    p.max_num_seqs = N_REQ;
    p.plan_concurrency = tight ? 1 : 0;
    p.reserved_decode_tokens = 0;
    p.prefix_caching = true;
    p.prefix_salt = 7;
    p.role = role;
    p.check = true;
    const kvc_engine_adapter_params ap = {.latent = latent, .cache = {.block_size = block_size}};
    if (kvc_engine_adapter_create(m, &ap, &p, &in->a) != KVC_OK) fail_msg("adapter: %s", kvc_last_error());
    const int64_t V = kvc_model_config_of(m)->vocab_size;
    in->rec = (recorder){.inner = kvc_engine_adapter_model(in->a), .vocab = V};
    in->rec.logits = calloc((size_t)(N_REQ * NT * V), sizeof(float));
    in->rec.outer = *in->rec.inner;
    in->rec.outer.self = &in->rec;
    in->rec.outer.forward = recording_forward;
    if (kvc_engine_create(&in->rec.outer, &p, &in->e) != KVC_OK) fail_msg("engine: %s", kvc_last_error());
}

static inline void instance_close(instance *in) {
    kvc_engine_destroy(in->e);
    kvc_engine_adapter_destroy(in->a);
    free(in->rec.logits);
}

/* Request 1 forces token 5 (logit_bias +100) but holds it back for its first 2 tokens (min_tokens), with
 * penalties; request 2 samples with min_p: options P/D carries to the decode side (dropped, the outputs
 * differ from one instance's). */
static const kvc_logit_bias BIAS[2] = {{5, 100.0f}, {7, -3.5f}};
static const int32_t HELD[1] = {5};

static inline kvc_engine_request request(int64_t b) {
    kvc_engine_request r = kvc_engine_request_default();
    r.id = b;
    r.prompt = IDS + STARTS[b];
    r.n_prompt = LENS[b];
    r.max_new_tokens = NT;
    r.cache_salt = SALTS[b];
    r.cache_salt_len = SALTS[b] ? (int64_t)strlen(SALTS[b]) : 0;
    if (b == 1) {
        r.sampling.logit_bias = BIAS, r.sampling.n_logit_bias = 2;
        r.sampling.min_tokens = 2, r.sampling.min_tokens_ids = HELD, r.sampling.n_min_tokens_ids = 1;
        r.sampling.repetition_penalty = 1.3f, r.sampling.frequency_penalty = 0.5f, r.sampling.presence_penalty = 0.25f;
    } else if (b == 2) {
        r.sampling.temperature = 0.9f, r.sampling.min_p = 0.2f, r.sampling.seed = 11;
    }
    return r;
}

static inline void step_until_idle(kvc_engine *e) {
    kvc_engine_step_result res = {.idle = false};
    for (int s = 0; !res.idle; s++) {
        if (kvc_engine_step(e, &res) != KVC_OK) fail_msg("step: %s", kvc_last_error());
        assert_true(s < 200);
    }
}

/* Whether e's manager has a K/V key (one of state keys alone never grows, so never preempts). */
static inline bool has_kv_key(const kvc_engine *e) {
    const kvc_manager *m = kvc_engine_manager(e);
    for (int32_t k = 0; k < kvc_manager_n_keys(m); k++)
        if (!kvc_manager_key_is_state(m, k)) return true;
    return false;
}

static inline void expect_no_blocks(const kvc_engine *e) {
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    for (int32_t k = 0; k < st.n_keys; k++) assert_int_equal(st.blocks_in_use[k], 0);
}

/* Prefills every request, sends each (request `drop`'s payload lost) and releases it. */
static inline void prefill_and_send(const kvc_model *m, bool latent, int64_t bs, const kvci_transport *t,
                                    int64_t drop) {
    instance pf;
    instance_open(&pf, m, latent, KVC_ENGINE_ROLE_PREFILL, bs, false);
    kvci_pd_layout l;
    assert_int_equal(kvci_pd_layout_init(kvc_engine_manager(pf.e), pf.rec.inner->cache_info, &l), KVC_OK);
    for (int64_t b = 0; b < N_REQ; b++) { /* with state layers the last prompt token is the decode side's alone */
        kvc_engine_request r = request(b);
        r.n_prompt = kvci_pd_prefill_len(&l, r.n_prompt);
        assert_int_equal(kvc_engine_add_request(pf.e, &r), KVC_OK);
    }
    step_until_idle(pf.e);
    for (int64_t b = 0; b < N_REQ; b++) {
        const kvc_engine_request r = request(b);
        kvc_engine_request_info info;
        assert_int_equal(kvc_engine_request_get(pf.e, b, &info), KVC_OK);
        assert_int_equal(info.finish, KVC_FINISH_PREFILLED);
        if (kvci_pd_send(pf.e, &l, t, 1, (uint64_t)b, &r, 30000, b == drop) != KVC_OK)
            fail_msg("send %lld: %s", (long long)b, kvc_last_error());
        assert_int_equal(kvc_engine_request_release(pf.e, b), KVC_OK);
    }
    expect_no_blocks(pf.e);
    kvci_pd_layout_free(&l);
    instance_close(&pf);
}

/* Receives the requests one at a time, stepping the decode engine between them (so a later request
 * can hit the blocks an earlier one cached). Returns the ids whose transfer failed, as a bit set. */
static inline unsigned receive_and_decode(instance *dc, const kvci_transport *t) {
    kvci_pd_receiver rx;
    assert_int_equal(kvci_pd_receiver_init(dc->e, dc->rec.inner->cache_info, N_REQ, &rx), KVC_OK);
    unsigned failed = 0;
    for (int64_t got = 0; got < N_REQ; got++) {
        kvci_pd_event ev = {.kind = KVC_PD_NONE};
        const int64_t deadline =
            kvc_engine_now_ns() + (int64_t)30 * 1000000000; /* MPI: the message may be on its way */
        while (ev.kind == KVC_PD_NONE && kvc_engine_now_ns() < deadline)
            assert_int_equal(kvci_pd_receive(&rx, dc->e, t, 50, &ev), KVC_OK);
        assert_int_not_equal(ev.kind, KVC_PD_NONE);
        assert_int_equal(ev.request_id, got);
        if (ev.kind == KVC_PD_FAILED) {
            assert_int_equal(ev.status, KVC_ETIMEDOUT);
            assert_non_null(strstr(kvc_last_error(), "did not arrive within 50 ms"));
            failed |= 1u << got;
        }
        kvc_engine_step_result res;
        for (int s = 0; s < 3; s++) assert_int_equal(kvc_engine_step(dc->e, &res), KVC_OK);
    }
    step_until_idle(dc->e);
    kvci_pd_receiver_free(&rx);
    return failed;
}

static inline void expect_same_outputs(const instance *dc, const instance *ref, unsigned skip) {
    const int64_t V = ref->rec.vocab;
    for (int64_t b = 0; b < N_REQ; b++) {
        if (skip & (1u << b)) continue;
        int32_t got[NT], want[NT];
        int64_t n_got = 0, n_want = 0;
        assert_int_equal(kvc_engine_request_output(dc->e, b, got, NT, &n_got), KVC_OK);
        assert_int_equal(kvc_engine_request_output(ref->e, b, want, NT, &n_want), KVC_OK);
        assert_int_equal(n_got, NT);
        assert_int_equal(n_want, NT);
        assert_memory_equal(got, want, sizeof got);
        if (memcmp(dc->rec.logits + b * NT * V, ref->rec.logits + b * NT * V, (size_t)(NT * V) * sizeof(float)) != 0)
            fail_msg("request %lld: the decode instance's logits are not bitwise the single instance's", (long long)b);
    }
}

static inline kvc_model *random_model(const char *json) {
    kvc_model_config cfg;
    if (kvc_model_config_parse(json, "test config", &cfg) != KVC_OK) fail_msg("config: %s", kvc_last_error());
    kvc_model *m = NULL;
    if (kvc_model_create_random(&cfg, 31, &m) != KVC_OK) fail_msg("model: %s", kvc_last_error());
    return m;
}

/* One BOTH engine over the same requests, each run to the end before the next (its prefix hits as
 * the decode side's). */
static inline void reference_open(instance *ref, const kvc_model *m, bool latent, int64_t bs) {
    instance_open(ref, m, latent, KVC_ENGINE_ROLE_BOTH, bs, false);
    for (int64_t b = 0; b < N_REQ; b++) {
        const kvc_engine_request r = request(b);
        assert_int_equal(kvc_engine_add_request(ref->e, &r), KVC_OK);
        step_until_idle(ref->e);
    }
}

/* Random small configs of every built-in family (gpt_oss: sliding window 5 beside full attention;
 * deepseek_v3 twice: full-form and MLA latent caches) and of each kind of state layer (state: the decode side
 * finds no state snapshot of another request's prefix, as it computed only each prompt's last token). */
typedef struct pd_family {
    const char *name, *json;
    bool latent, state;
} pd_family;

#define PD_LLAMA                                                                                                       \
    "{\"model_type\":\"llama\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"                                     \
    "\"rope_theta\":10000,\"rms_norm_eps\":1e-5,\"max_position_embeddings\":256}"
#define PD_QWEN2                                                                                                       \
    "{\"model_type\":\"qwen2\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":1,"                                     \
    "\"rope_theta\":10000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":256}"
#define PD_QWEN3                                                                                                       \
    "{\"model_type\":\"qwen3\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"                        \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":8,"                      \
    "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":256}"
#define PD_GPT_OSS                                                                                                     \
    "{\"model_type\":\"gpt_oss\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":16,"                      \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":8,"                      \
    "\"sliding_window\":5,\"num_local_experts\":4,\"num_experts_per_tok\":2,\"rms_norm_eps\":1e-5,"                    \
    "\"layer_types\":[\"sliding_attention\",\"full_attention\"],\"max_position_embeddings\":256}"
#define PD_DEEPSEEK                                                                                                    \
    "{\"model_type\":\"deepseek_v3\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"                  \
    "\"moe_intermediate_size\":16,\"num_hidden_layers\":2,\"first_k_dense_replace\":1,"                                \
    "\"num_attention_heads\":2,\"num_key_value_heads\":2,\"q_lora_rank\":16,\"kv_lora_rank\":16,"                      \
    "\"qk_nope_head_dim\":8,\"qk_rope_head_dim\":8,\"v_head_dim\":8,\"n_routed_experts\":4,"                           \
    "\"n_group\":2,\"topk_group\":1,\"num_experts_per_tok\":2,\"n_shared_experts\":1,"                                 \
    "\"routed_scaling_factor\":2.5,\"max_position_embeddings\":256}"

/* LFM2's short convolutions around attention */
#define PD_LFM2                                                                                                        \
    "{\"model_type\":\"lfm2\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"                         \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"conv_L_cache\":3,"                  \
    "\"conv_bias\":true,\"layer_types\":[\"conv\",\"full_attention\",\"conv\"],\"max_position_embeddings\":256}"
/* Bamba: Mamba2 mixers (conv and ssm states) around attention */
#define PD_BAMBA                                                                                                       \
    "{\"model_type\":\"bamba\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"                        \
    "\"num_hidden_layers\":3,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"attn_layer_indices\":[1],"          \
    "\"mamba_n_heads\":4,\"mamba_d_head\":16,\"mamba_n_groups\":2,\"mamba_d_state\":8,\"mamba_d_conv\":3,"             \
    "\"max_position_embeddings\":256}"
/* Qwen3-Next: Gated DeltaNet (conv and recurrent states) around gated attention */
#define PD_QWEN3_NEXT                                                                                                  \
    "{\"model_type\":\"qwen3_next\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"                   \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":8,"                      \
    "\"linear_num_key_heads\":2,\"linear_num_value_heads\":4,\"linear_key_head_dim\":8,"                               \
    "\"linear_value_head_dim\":8,\"num_experts\":4,\"num_experts_per_tok\":2,\"moe_intermediate_size\":16,"            \
    "\"shared_expert_intermediate_size\":16,\"layer_types\":[\"linear_attention\",\"full_attention\"],"                \
    "\"max_position_embeddings\":256}"
/* Falcon-H1: a Mamba2 mixer beside attention in every layer (K/V and states of one layer under two keys) */
#define PD_FALCON_H1                                                                                                   \
    "{\"model_type\":\"falcon_h1\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"                    \
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":8,"                      \
    "\"mamba_d_ssm\":32,\"mamba_n_heads\":4,\"mamba_n_groups\":2,\"mamba_d_state\":8,\"mamba_d_conv\":3,"              \
    "\"mamba_rms_norm\":true,\"max_position_embeddings\":256}"
/* FalconMamba: Mamba-1 mixers only (no K/V at all) */
#define PD_FALCON_MAMBA                                                                                                \
    "{\"model_type\":\"falcon_mamba\",\"vocab_size\":128,\"hidden_size\":32,\"num_hidden_layers\":2,"                  \
    "\"state_size\":8,\"conv_kernel\":3,\"use_bias\":true,\"max_position_embeddings\":256}"

/* RWKV-4: time and channel mixing only (a shift and a WKV state per layer, no K/V) */
#define PD_RWKV                                                                                                        \
    "{\"model_type\":\"rwkv\",\"vocab_size\":128,\"hidden_size\":32,\"num_hidden_layers\":2,"                          \
    "\"rescale_every\":1,\"context_length\":256}"

#define PD_N_FAMILIES 12
static const pd_family PD_FAMILIES[PD_N_FAMILIES] = {
    {"llama", PD_LLAMA, false, false},
    {"qwen2", PD_QWEN2, false, false},
    {"qwen3", PD_QWEN3, false, false},
    {"gpt_oss", PD_GPT_OSS, false, false},
    {"deepseek_v3", PD_DEEPSEEK, false, false},
    {"deepseek_v3 latent", PD_DEEPSEEK, true, false},
    {"lfm2", PD_LFM2, false, true},
    {"bamba", PD_BAMBA, false, true},
    {"qwen3_next", PD_QWEN3_NEXT, false, true},
    {"falcon_h1", PD_FALCON_H1, false, true},
    {"falcon_mamba", PD_FALCON_MAMBA, false, true},
    {"rwkv", PD_RWKV, false, true},
};

#endif
