/* Prefill/decode disaggregation in one process over the loopback transport
 * (src/dist/pd.h): for every built-in family (random small models), a
 * PREFILL engine sends each request's KV to a DECODE engine, whose tokens
 * and logits are bitwise those of one BOTH engine on the same requests --
 * with prefix caching on, salts, a prefix hit on the decode side and
 * preemption there. A dropped payload ends its request with KVC_ETIMEDOUT,
 * frees its blocks on both sides and the decode engine serves the others;
 * a decode engine with another block size refuses the message, as it refuses
 * every header that does not add up. */
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

static kvc_status recording_forward(void *self, const int32_t *ids, const kvc_engine_batch *batch, float *logits) {
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
static void instance_open(instance *in, const kvc_model *m, bool latent, kvc_engine_role role, int64_t block_size,
                          bool tight) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = tight ? 32 : MAXLEN;
    p.max_num_seqs = N_REQ;
    p.plan_concurrency = tight ? 1 : 0;
    p.reserved_decode_tokens = 0;
    p.prefix_caching = true;
    p.prefix_salt = 7;
    p.role = role;
    p.check = true;
    const kvc_engine_adapter_params ap = {.latent = latent, .block_size = block_size};
    if (kvc_engine_adapter_create(m, &ap, &p, &in->a) != KVC_OK) fail_msg("adapter: %s", kvc_last_error());
    const int64_t V = kvc_model_config_of(m)->vocab_size;
    in->rec = (recorder){.inner = kvc_engine_adapter_model(in->a), .vocab = V};
    in->rec.logits = calloc((size_t)(N_REQ * NT * V), sizeof(float));
    in->rec.outer = *in->rec.inner;
    in->rec.outer.self = &in->rec;
    in->rec.outer.forward = recording_forward;
    if (kvc_engine_create(&in->rec.outer, &p, &in->e) != KVC_OK) fail_msg("engine: %s", kvc_last_error());
}

static void instance_close(instance *in) {
    kvc_engine_destroy(in->e);
    kvc_engine_adapter_destroy(in->a);
    free(in->rec.logits);
}

static kvc_engine_request request(int64_t b) {
    kvc_engine_request r = kvc_engine_request_default();
    r.id = b;
    r.prompt = IDS + STARTS[b];
    r.n_prompt = LENS[b];
    r.max_new_tokens = NT;
    r.cache_salt = SALTS[b];
    r.cache_salt_len = SALTS[b] ? (int64_t)strlen(SALTS[b]) : 0;
    return r;
}

static void step_until_idle(kvc_engine *e) {
    kvc_engine_step_result res = {.idle = false};
    for (int s = 0; !res.idle; s++) {
        if (kvc_engine_step(e, &res) != KVC_OK) fail_msg("step: %s", kvc_last_error());
        assert_true(s < 200);
    }
}

static void expect_no_blocks(const kvc_engine *e) {
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(e, &st), KVC_OK);
    for (int32_t k = 0; k < st.n_keys; k++) assert_int_equal(st.blocks_in_use[k], 0);
}

/* Prefills every request, sends each (request `drop`'s payload lost) and releases it. */
static void prefill_and_send(const kvc_model *m, bool latent, int64_t bs, const kvci_transport *t, int64_t drop) {
    instance pf;
    instance_open(&pf, m, latent, KVC_ENGINE_ROLE_PREFILL, bs, false);
    for (int64_t b = 0; b < N_REQ; b++) {
        const kvc_engine_request r = request(b);
        assert_int_equal(kvc_engine_add_request(pf.e, &r), KVC_OK);
    }
    step_until_idle(pf.e);
    kvci_pd_layout l;
    assert_int_equal(kvci_pd_layout_init(kvc_engine_manager(pf.e), &l), KVC_OK);
    for (int64_t b = 0; b < N_REQ; b++) {
        const kvc_engine_request r = request(b);
        kvc_engine_request_info info;
        assert_int_equal(kvc_engine_request_get(pf.e, b, &info), KVC_OK);
        assert_int_equal(info.finish, KVC_FINISH_PREFILLED);
        if (kvci_pd_send(pf.e, &l, t, 1, (uint64_t)b, &r, 1000, b == drop) != KVC_OK)
            fail_msg("send %lld: %s", (long long)b, kvc_last_error());
        assert_int_equal(kvc_engine_request_release(pf.e, b), KVC_OK);
    }
    expect_no_blocks(pf.e);
    kvci_pd_layout_free(&l);
    instance_close(&pf);
}

/* Receives the requests one at a time, stepping the decode engine between them (so a later request
 * can hit the blocks an earlier one cached). Returns the ids whose transfer failed, as a bit set. */
static unsigned receive_and_decode(instance *dc, const kvci_transport *t) {
    kvci_pd_receiver rx;
    assert_int_equal(kvci_pd_receiver_init(dc->e, N_REQ, &rx), KVC_OK);
    unsigned failed = 0;
    for (int64_t got = 0; got < N_REQ; got++) {
        kvci_pd_event ev;
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

static void expect_same_outputs(const instance *dc, const instance *ref, unsigned skip) {
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

static kvc_model *random_model(const char *json) {
    kvc_model_config cfg;
    if (kvc_model_config_parse(json, "test config", &cfg) != KVC_OK) fail_msg("config: %s", kvc_last_error());
    kvc_model *m = NULL;
    if (kvc_model_create_random(&cfg, 31, &m) != KVC_OK) fail_msg("model: %s", kvc_last_error());
    return m;
}

/* One family: P/D against one instance, block sizes 4 and 8, then with preemption on the decode side. */
static void check_family(const char *json, bool latent) {
    kvc_model *m = random_model(json);
    for (int64_t bs = 4; bs <= 8; bs *= 2)
        for (int tight = 0; tight < 2; tight++) {
            instance ref, dc;
            instance_open(&ref, m, latent, KVC_ENGINE_ROLE_BOTH, bs, false);
            for (int64_t b = 0; b < N_REQ; b++) {
                const kvc_engine_request r = request(b);
                assert_int_equal(kvc_engine_add_request(ref.e, &r), KVC_OK);
                step_until_idle(ref.e);
            }
            kvci_transport tp, td;
            assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
            prefill_and_send(m, latent, bs, &tp, -1);
            instance_open(&dc, m, latent, KVC_ENGINE_ROLE_DECODE, bs, tight);
            assert_int_equal(receive_and_decode(&dc, &td), 0);
            expect_same_outputs(&dc, &ref, 0);
            kvc_engine_stats st;
            assert_int_equal(kvc_engine_get_stats(dc.e, &st), KVC_OK);
            assert_true(st.prefix_hit_tokens >= 16); /* request 1 found request 0's blocks */
            if (tight) assert_true(st.preemptions > 0);
            expect_no_blocks(dc.e);
            kvci_transport_close(&tp);
            kvci_transport_close(&td);
            instance_close(&dc);
            instance_close(&ref);
        }
    kvc_model_destroy(m);
}

static void test_llama(void **state) {
    (void)state;
    check_family("{\"model_type\":\"llama\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"
                 "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                 "\"rope_theta\":10000,\"rms_norm_eps\":1e-5,\"max_position_embeddings\":256}",
                 false);
}

static void test_qwen2(void **state) {
    (void)state;
    check_family("{\"model_type\":\"qwen2\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"
                 "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":1,"
                 "\"rope_theta\":10000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":256}",
                 false);
}

static const char *const QWEN3 =
    "{\"model_type\":\"qwen3\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":8,"
    "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":256}";

static void test_qwen3(void **state) {
    (void)state;
    check_family(QWEN3, false);
}

/* sliding window 5: the decode side receives only the window's blocks of the sliding key */
static void test_gpt_oss(void **state) {
    (void)state;
    check_family("{\"model_type\":\"gpt_oss\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":16,"
                 "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":8,"
                 "\"sliding_window\":5,\"num_local_experts\":4,\"num_experts_per_tok\":2,\"rms_norm_eps\":1e-5,"
                 "\"layer_types\":[\"sliding_attention\",\"full_attention\"],\"max_position_embeddings\":256}",
                 false);
}

static const char *const DEEPSEEK =
    "{\"model_type\":\"deepseek_v3\",\"vocab_size\":128,\"hidden_size\":32,\"intermediate_size\":48,"
    "\"moe_intermediate_size\":16,\"num_hidden_layers\":2,\"first_k_dense_replace\":1,"
    "\"num_attention_heads\":2,\"num_key_value_heads\":2,\"q_lora_rank\":16,\"kv_lora_rank\":16,"
    "\"qk_nope_head_dim\":8,\"qk_rope_head_dim\":8,\"v_head_dim\":8,\"n_routed_experts\":4,"
    "\"n_group\":2,\"topk_group\":1,\"num_experts_per_tok\":2,\"n_shared_experts\":1,"
    "\"routed_scaling_factor\":2.5,\"max_position_embeddings\":256}";

static void test_deepseek_v3(void **state) {
    (void)state;
    check_family(DEEPSEEK, false);
    check_family(DEEPSEEK, true); /* the MLA latent caches */
}

/* A payload lost on the way: its request fails on the decode side within the deadline, both sides
 * free its blocks, and the other requests come out as from one instance. */
static void test_dropped_payload(void **state) {
    (void)state;
    kvc_model *m = random_model(QWEN3);
    instance ref, dc;
    instance_open(&ref, m, false, KVC_ENGINE_ROLE_BOTH, 4, false);
    for (int64_t b = 0; b < N_REQ; b++) {
        const kvc_engine_request r = request(b);
        assert_int_equal(kvc_engine_add_request(ref.e, &r), KVC_OK);
    }
    step_until_idle(ref.e);
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, 1), KVC_OK);
    prefill_and_send(m, false, 4, &tp, -1); /* the transport drops message 1's payload */
    instance_open(&dc, m, false, KVC_ENGINE_ROLE_DECODE, 4, false);
    assert_int_equal(receive_and_decode(&dc, &td), 1u << 1);
    kvc_engine_request_info info;
    assert_int_equal(kvc_engine_request_get(dc.e, 1, &info), KVC_EINVAL); /* it never entered the engine */
    expect_same_outputs(&dc, &ref, 1u << 1);
    expect_no_blocks(dc.e);
    kvci_transport_close(&tp);
    kvci_transport_close(&td);
    instance_close(&dc);
    instance_close(&ref);
    kvc_model_destroy(m);
}

/* A decode engine whose blocks differ (block size 8 against 4) refuses the message, naming the key. */
static void test_layout_mismatch(void **state) {
    (void)state;
    kvc_model *m = random_model(QWEN3);
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
    prefill_and_send(m, false, 4, &tp, -1);
    instance dc;
    instance_open(&dc, m, false, KVC_ENGINE_ROLE_DECODE, 8, false);
    kvci_pd_receiver rx;
    assert_int_equal(kvci_pd_receiver_init(dc.e, N_REQ, &rx), KVC_OK);
    kvci_pd_event ev;
    assert_int_equal(kvci_pd_receive(&rx, dc.e, &td, 50, &ev), KVC_OK);
    assert_int_equal(ev.kind, KVC_PD_FAILED);
    assert_int_equal(ev.status, KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "another KV dtype, block size or model"));
    kvci_pd_receiver_free(&rx);
    kvci_transport_close(&tp);
    kvci_transport_close(&td);
    instance_close(&dc);
    kvc_model_destroy(m);
}

/* Sends h as a message and expects the decode side to fail request h->request_id with status
 * `want`, its message containing `text`. */
static void expect_refused(instance *dc, kvci_pd_receiver *rx, const kvci_pd_header *h, kvc_status want,
                           const char *text) {
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
    assert_int_equal(tp.ops->send(tp.self, 1, h->seq, h, sizeof *h, NULL, 0, 50), KVC_OK);
    kvci_pd_event ev;
    assert_int_equal(kvci_pd_receive(rx, dc->e, &td, 50, &ev), KVC_OK);
    assert_int_equal(ev.kind, KVC_PD_FAILED);
    assert_int_equal(ev.request_id, h->request_id);
    assert_int_equal(ev.status, want);
    if (strstr(kvc_last_error(), text) == NULL) fail_msg("message \"%s\" lacks \"%s\"", kvc_last_error(), text);
    kvci_transport_close(&tp);
    kvci_transport_close(&td);
}

/* Headers the decode side refuses before it takes any payload, each naming what is wrong: the prefill
 * side's own failure, another magic, counts out of range, another block range, a payload size that
 * does not add up. Nothing enters the engine. */
static void test_bad_headers(void **state) {
    (void)state;
    kvc_model *m = random_model(QWEN3);
    instance dc;
    instance_open(&dc, m, false, KVC_ENGINE_ROLE_DECODE, 4, false);
    kvci_pd_receiver rx;
    assert_int_equal(kvci_pd_receiver_init(dc.e, 1, &rx), KVC_OK);
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
    assert_int_equal(kvci_pd_send_failure(&tp, 1, 0, 5, KVC_ENOMEM, "pools too small", 50), KVC_OK);
    kvci_pd_event ev;
    assert_int_equal(kvci_pd_receive(&rx, dc.e, &td, 50, &ev), KVC_OK);
    assert_int_equal(ev.kind, KVC_PD_FAILED);
    assert_int_equal(ev.status, KVC_ENOMEM);
    assert_non_null(strstr(kvc_last_error(), "request 5 failed on the prefill side: pools too small"));
    kvci_transport_close(&tp);
    kvci_transport_close(&td);
    /* a good header of a 9-token prompt: 8 external tokens, 2 blocks of the one key */
    kvci_pd_header good;
    memset(&good, 0, sizeof good);
    good.magic = KVC_PD_MAGIC;
    good.version = KVC_PD_VERSION;
    good.request_id = 3;
    good.n_prompt = 9;
    good.n_external = 8;
    good.max_new_tokens = 2;
    good.top_p = 1.0f;
    good.n_keys = 1;
    good.block_bytes[0] = rx.layout.block_bytes[0];
    good.n_blocks[0] = 2;
    good.payload_bytes = 9 * 4 + 2 * good.block_bytes[0];
    kvci_pd_header h = good;
    h.magic = 1;
    expect_refused(&dc, &rx, &h, KVC_EINVAL, "magic 0x00000001");
    h = good;
    h.n_external = 9;
    expect_refused(&dc, &rx, &h, KVC_EINVAL, "n_external 9 (0 .. n_prompt - 1)");
    h = good;
    h.n_prompt = MAXLEN + 1;
    expect_refused(&dc, &rx, &h, KVC_EINVAL, "n_prompt 65 (1 .. 64)");
    h = good;
    h.n_keys = 2;
    expect_refused(&dc, &rx, &h, KVC_EINVAL, "2 manager keys, this engine 1");
    h = good;
    h.first_block[0] = 1;
    expect_refused(&dc, &rx, &h, KVC_EINVAL, "blocks [1, +2)");
    h = good;
    h.payload_bytes += 4;
    expect_refused(&dc, &rx, &h, KVC_EINVAL, "payload bytes, its blocks make");
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(dc.e, &st), KVC_OK);
    assert_int_equal(st.n_waiting + st.n_running + st.n_finished, 0);
    kvci_pd_receiver_free(&rx);
    instance_close(&dc);
    kvc_model_destroy(m);
}

/* The roles' refusals: external tokens outside the DECODE role or without a loader; a role on a
 * self-managed model. */
static void test_role_refusals(void **state) {
    (void)state;
    kvc_model *m = random_model(QWEN3);
    instance both;
    instance_open(&both, m, false, KVC_ENGINE_ROLE_BOTH, 4, false);
    kvc_engine_request r = request(0);
    r.n_external_tokens = 4;
    assert_int_equal(kvc_engine_add_request(both.e, &r), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "needs the DECODE role"));
    instance_close(&both);
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = MAXLEN;
    p.role = KVC_ENGINE_ROLE_PREFILL;
    const kvc_engine_adapter_params ap = {.self_managed = true};
    kvc_engine_adapter *a = NULL;
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &p, &a), KVC_OK);
    kvc_engine *e = NULL;
    assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &p, &e), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "needs a managed model"));
    p.role = (kvc_engine_role)3;
    assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &p, &e), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "role 3 is unknown"));
    kvc_engine_adapter_destroy(a);
    kvc_model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama),           cmocka_unit_test(test_qwen2),
        cmocka_unit_test(test_qwen3),           cmocka_unit_test(test_gpt_oss),
        cmocka_unit_test(test_deepseek_v3),     cmocka_unit_test(test_dropped_payload),
        cmocka_unit_test(test_layout_mismatch), cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_role_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
