/* Prefill/decode disaggregation in one process over the loopback transport
 * (src/dist/pd.h): for every built-in family (random small models), a
 * PREFILL engine sends each request's KV to a DECODE engine, whose tokens
 * and logits are bitwise those of one BOTH engine on the same requests --
 * with prefix caching on, salts, a prefix hit on the decode side and
 * preemption there. A dropped payload ends its request with KVC_ETIMEDOUT,
 * frees its blocks on both sides and the decode engine serves the others;
 * a decode engine with another block size refuses the message, as it refuses
 * every header that does not add up. */
#include "pd_fixture.h"

/* One family: P/D against one instance, block sizes 4 and 8, then with preemption on the decode side. */
static void check_family(const pd_family *f) {
    kvc_model *m = random_model(f->json);
    const bool latent = f->latent;
    print_message("family %s\n", f->name);
    for (int64_t bs = 4; bs <= (f->state ? 4 : 8); bs *= 2) /* state families: block size 4 only, to save time */
        for (int tight = 0; tight < 2; tight++) {
            instance ref, dc;
            reference_open(&ref, m, latent, bs);
            kvci_transport tp, td;
            assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
            prefill_and_send(m, latent, bs, &tp, -1);
            instance_open(&dc, m, latent, KVC_ENGINE_ROLE_DECODE, bs, tight);
            assert_int_equal(receive_and_decode(&dc, &td), 0);
            expect_same_outputs(&dc, &ref, 0);
            kvc_engine_stats st;
            assert_int_equal(kvc_engine_get_stats(dc.e, &st), KVC_OK);
            assert_true(f->state || st.prefix_hit_tokens >= 16); /* request 1 found request 0's blocks */
            if (tight && has_kv_key(dc.e)) assert_true(st.preemptions > 0);
            expect_no_blocks(dc.e);
            kvci_transport_close(&tp);
            kvci_transport_close(&td);
            instance_close(&dc);
            instance_close(&ref);
        }
    kvc_model_destroy(m);
}

/* The setup of the one-family cases: a random Qwen3 model and one engine of it in role, block size bs. */
typedef struct qwen3_engine {
    kvc_model *m;
    instance in;
} qwen3_engine;

static void qwen3_open(qwen3_engine *q, kvc_engine_role role, int64_t bs) {
    q->m = random_model(PD_QWEN3);
    instance_open(&q->in, q->m, false, role, bs, false);
}

static void qwen3_close(qwen3_engine *q) {
    instance_close(&q->in);
    kvc_model_destroy(q->m);
}

static void test_families(void **state) {
    (void)state;
    for (int i = 0; i < PD_N_FAMILIES; i++) check_family(&PD_FAMILIES[i]);
}

/* A payload lost on the way: its request fails on the decode side within the deadline, both sides
 * free its blocks, and the other requests come out as from one instance. */
static void test_dropped_payload(void **state) {
    (void)state;
    qwen3_engine q;
    qwen3_open(&q, KVC_ENGINE_ROLE_DECODE, 4);
    instance ref;
    instance_open(&ref, q.m, false, KVC_ENGINE_ROLE_BOTH, 4, false);
    for (int64_t b = 0; b < N_REQ; b++) {
        const kvc_engine_request r = request(b);
        assert_int_equal(kvc_engine_add_request(ref.e, &r), KVC_OK);
    }
    step_until_idle(ref.e);
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, 1), KVC_OK);
    prefill_and_send(q.m, false, 4, &tp, -1); /* the transport drops message 1's payload */
    assert_int_equal(receive_and_decode(&q.in, &td), 1u << 1);
    kvc_engine_request_info info;
    assert_int_equal(kvc_engine_request_get(q.in.e, 1, &info), KVC_EINVAL); /* it never entered the engine */
    expect_same_outputs(&q.in, &ref, 1u << 1);
    expect_no_blocks(q.in.e);
    kvci_transport_close(&tp);
    kvci_transport_close(&td);
    instance_close(&ref);
    qwen3_close(&q);
}

/* A decode engine whose blocks differ (block size 8 against 4) refuses the message, naming the key. */
static void test_layout_mismatch(void **state) {
    (void)state;
    qwen3_engine q;
    qwen3_open(&q, KVC_ENGINE_ROLE_DECODE, 8);
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
    prefill_and_send(q.m, false, 4, &tp, -1);
    kvci_pd_receiver rx;
    assert_int_equal(kvci_pd_receiver_init(q.in.e, q.in.rec.inner->cache_info, N_REQ, &rx), KVC_OK);
    kvci_pd_event ev;
    assert_int_equal(kvci_pd_receive(&rx, q.in.e, &td, 50, &ev), KVC_OK);
    assert_int_equal(ev.kind, KVC_PD_FAILED);
    assert_int_equal(ev.status, KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "another KV dtype, block size or model"));
    kvci_pd_receiver_free(&rx);
    kvci_transport_close(&tp);
    kvci_transport_close(&td);
    qwen3_close(&q);
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
    qwen3_engine q;
    qwen3_open(&q, KVC_ENGINE_ROLE_DECODE, 4);
    instance *dc = &q.in;
    kvci_pd_receiver rx;
    assert_int_equal(kvci_pd_receiver_init(dc->e, dc->rec.inner->cache_info, 1, &rx), KVC_OK);
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
    assert_int_equal(kvci_pd_send_failure(&tp, 1, 0, 5, KVC_ENOMEM, "pools too small", 50), KVC_OK);
    kvci_pd_event ev;
    assert_int_equal(kvci_pd_receive(&rx, dc->e, &td, 50, &ev), KVC_OK);
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
    good.n_tensors = rx.layout.n_buffers;
    good.block_bytes[0] = rx.layout.block_bytes[0];
    good.n_blocks[0] = 2;
    good.payload_bytes = kvci_pd_blocks_offset(&rx.layout, 9) + 2 * good.block_bytes[0];
    kvci_pd_header h = good;
    h.magic = 1;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "magic 0x00000001");
    h = good;
    h.n_external = 9;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "n_external 9 (0 .. n_prompt - 1)");
    h = good;
    h.n_prompt = MAXLEN + 1;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "n_prompt 65 (1 .. 64)");
    h = good;
    h.n_keys = 2;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "2 manager keys and 4 cache tensors, this engine 1 and 4");
    h = good;
    h.n_tensors = 3;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "1 manager keys and 3 cache tensors, this engine 1 and 4");
    h = good;
    h.first_block[0] = 1;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "blocks [1, +2)");
    h = good;
    h.payload_bytes += 4;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "payload bytes, its blocks make");
    h = good;
    h.n_logit_bias = KVC_SAMPLING_MAX_LOGIT_BIAS + 1;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "logit_bias entries");
    h = good;
    h.n_min_tokens_ids = -1;
    expect_refused(dc, &rx, &h, KVC_EINVAL, "min_tokens ids");
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(dc->e, &st), KVC_OK);
    assert_int_equal(st.n_waiting + st.n_running + st.n_finished, 0);
    kvci_pd_receiver_free(&rx);
    qwen3_close(&q);
}

/* A state model's message whose tensor records differ from the decode engine's (a Bamba: per layer the K/V of
 * the attention layer, the conv and ssm states of the mixers) is refused after its payload came, naming the
 * tensor, before the request enters the engine: another dtype, bytes per block, kind, layer or cache name. The
 * prefill side refuses to send a request it prefilled over its whole prompt (its state is one token too late). */
static void test_state_records(void **state) {
    (void)state;
    kvc_model *m = random_model(PD_BAMBA);
    instance dc;
    instance_open(&dc, m, false, KVC_ENGINE_ROLE_DECODE, 4, false);
    kvci_pd_receiver rx;
    assert_int_equal(kvci_pd_receiver_init(dc.e, dc.rec.inner->cache_info, 1, &rx), KVC_OK);
    const kvci_pd_layout *l = &rx.layout;
    assert_true(l->has_state);
    assert_int_equal(l->n_buffers, 6); /* conv_state, ssm_state, k, v, conv_state, ssm_state */
    int64_t ssm = -1;
    for (int64_t i = 0; i < l->n_buffers && ssm < 0; i++)
        if (l->tensors[i].is_state && strcmp(l->tensors[i].name, "ssm_state") == 0) ssm = i;
    assert_true(ssm >= 0);
    const kvc_manager *mg = kvc_engine_manager(dc.e);
    kvci_pd_header h;
    memset(&h, 0, sizeof h);
    h.magic = KVC_PD_MAGIC, h.version = KVC_PD_VERSION, h.request_id = 2, h.n_prompt = 9, h.n_external = 8;
    h.max_new_tokens = 2, h.top_p = 1.0f, h.n_keys = l->n_keys, h.n_tensors = l->n_buffers;
    h.payload_bytes = kvci_pd_blocks_offset(l, 9);
    for (int32_t k = 0; k < l->n_keys; k++) {
        kvci_pd_block_range(mg, k, 8, &h.first_block[k], &h.n_blocks[k]);
        h.block_bytes[k] = l->block_bytes[k];
        h.payload_bytes += h.n_blocks[k] * h.block_bytes[k];
        if (kvc_manager_key_is_state(mg, k)) assert_int_equal(h.n_blocks[k], 1); /* the request's state block */
    }
    char *payload = calloc((size_t)h.payload_bytes, 1);
    kvci_pd_tensor *rec = calloc((size_t)l->n_buffers, sizeof *rec); /* copied in after the ids (unaligned) */
    static const char *const what[5] = {"f16, 2048 bytes", "K/V, manager", "1024 bytes per block", "layer 7",
                                        "cache conv_state (state"};
    for (int c = 0; c < 5; c++) {
        memcpy(rec, l->tensors, (size_t)l->n_buffers * sizeof *rec);
        kvci_pd_tensor *t = &rec[ssm];
        if (c == 0) t->dtype = KVC_DTYPE_F16;
        if (c == 1) t->is_state = 0;
        if (c == 2) t->bytes_per_block = 1024;
        if (c == 3) t->layer_idx = 7;
        if (c == 4) snprintf(t->name, sizeof t->name, "conv_state");
        memcpy(payload + 9 * sizeof(int32_t), rec, (size_t)l->n_buffers * sizeof *rec);
        kvci_transport tp, td;
        assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
        assert_int_equal(tp.ops->send(tp.self, 1, 0, &h, sizeof h, payload, h.payload_bytes, 50), KVC_OK);
        kvci_pd_event ev;
        assert_int_equal(kvci_pd_receive(&rx, dc.e, &td, 50, &ev), KVC_OK);
        assert_int_equal(ev.kind, KVC_PD_FAILED);
        assert_int_equal(ev.status, KVC_EINVAL);
        if (strstr(kvc_last_error(), what[c]) == NULL || strstr(kvc_last_error(), "cache ssm_state (state") == NULL)
            fail_msg("case %d: \"%s\"", c, kvc_last_error());
        kvci_transport_close(&tp);
        kvci_transport_close(&td);
    }
    kvc_engine_stats st;
    assert_int_equal(kvc_engine_get_stats(dc.e, &st), KVC_OK);
    assert_int_equal(st.n_waiting + st.n_running + st.n_finished, 0);
    /* the prefill side: a request prefilled over its whole prompt holds the state one token too late */
    instance pf;
    instance_open(&pf, m, false, KVC_ENGINE_ROLE_PREFILL, 4, false);
    kvci_pd_layout pl;
    assert_int_equal(kvci_pd_layout_init(kvc_engine_manager(pf.e), pf.rec.inner->cache_info, &pl), KVC_OK);
    const kvc_engine_request r0 = request(0);
    assert_int_equal(kvc_engine_add_request(pf.e, &r0), KVC_OK);
    step_until_idle(pf.e);
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
    assert_int_equal(kvci_pd_send(pf.e, &pl, &tp, 1, 0, &r0, 50, false), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "prefilled over 19 prompt tokens, its prompt has 19"));
    assert_int_equal(kvc_engine_request_release(pf.e, 0), KVC_OK);
    kvci_transport_close(&tp);
    kvci_transport_close(&td);
    kvci_pd_layout_free(&pl);
    instance_close(&pf);
    free(payload);
    free(rec);
    kvci_pd_receiver_free(&rx);
    instance_close(&dc);
    kvc_model_destroy(m);
}

/* Request 1's options reach the decode side: its tokens are 5 from the third on (logit_bias +100, min_tokens
 * 2 holding 5 back) and never 5 before. */
static void test_sampling_carried(void **state) {
    (void)state;
    kvc_model *m = random_model(PD_QWEN3);
    kvci_transport tp, td;
    assert_int_equal(kvci_transport_loopback_open(&tp, &td, -1), KVC_OK);
    prefill_and_send(m, false, 4, &tp, -1);
    instance dc;
    instance_open(&dc, m, false, KVC_ENGINE_ROLE_DECODE, 4, false);
    assert_int_equal(receive_and_decode(&dc, &td), 0);
    int32_t out[NT];
    int64_t n = 0;
    assert_int_equal(kvc_engine_request_output(dc.e, 1, out, NT, &n), KVC_OK);
    assert_int_equal(n, NT);
    for (int64_t i = 0; i < NT; i++) assert_true(i < 2 ? out[i] != 5 : out[i] == 5);
    kvci_transport_close(&tp);
    kvci_transport_close(&td);
    instance_close(&dc);
    kvc_model_destroy(m);
}

/* The roles' refusals: external tokens outside the DECODE role or without a loader; a role on a
 * self-managed model. */
static void test_role_refusals(void **state) {
    (void)state;
    qwen3_engine q;
    qwen3_open(&q, KVC_ENGINE_ROLE_BOTH, 4);
    kvc_engine_request r = request(0);
    r.n_external_tokens = 4;
    assert_int_equal(kvc_engine_add_request(q.in.e, &r), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "needs the DECODE role"));
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = MAXLEN;
    p.role = KVC_ENGINE_ROLE_PREFILL;
    const kvc_engine_adapter_params ap = {.self_managed = true};
    kvc_engine_adapter *a = NULL;
    assert_int_equal(kvc_engine_adapter_create(q.m, &ap, &p, &a), KVC_OK);
    kvc_engine *e = NULL;
    assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &p, &e), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "needs a managed model"));
    p.role = (kvc_engine_role)3;
    assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &p, &e), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "role 3 is unknown"));
    kvc_engine_adapter_destroy(a);
    qwen3_close(&q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families),        cmocka_unit_test(test_dropped_payload),
        cmocka_unit_test(test_layout_mismatch), cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_role_refusals),   cmocka_unit_test(test_sampling_carried),
        cmocka_unit_test(test_state_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
