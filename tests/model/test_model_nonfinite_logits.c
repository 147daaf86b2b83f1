/* A model whose weights make NaN or Inf (issue 23 #3): the attention
 * passes them on (docs/ops.md "NaN and Inf") and the runner (every mode) and
 * the engine (managed and self-managed caches) refuse to pick a token from
 * logits that are not finite, with KVC_ERANGE and a message naming the
 * step, the request and the position, instead of running to finite logits. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/engine.h"
#include "kvcache/runner.h"
#include "model/model_internal.h"

static const char *const LLAMA_JSON =
    "{\"model_type\":\"llama\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
    "\"rope_theta\":10000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":512}";

static const int32_t IDS[] = {3, 17, 42, 9, 100, 5, 77, 63}; /* request 0: 5 tokens, request 1: 3 */
static const int64_t LENS[] = {5, 3};
#define POISON_TOKEN 64 /* token whose embedding holds a NaN */
#define NT           4

typedef enum poison { NAN_Q_PROJ, HUGE_K_PROJ, NAN_TOKEN } poison;

/* A random model with: a NaN in layer 0's q_proj; 3e38 throughout layer 0's k_proj; or a NaN in the embedding of
 * POISON_TOKEN. */
static kvc_model *broken_model(poison what) {
    kvc_model_config cfg;
    if (kvc_model_config_parse(LLAMA_JSON, "test config", &cfg) != KVC_OK) fail_msg("config: %s", kvc_last_error());
    kvc_model *m = NULL;
    if (kvc_model_create_random(&cfg, 7, &m) != KVC_OK) fail_msg("model: %s", kvc_last_error());
    const int64_t H = cfg.hidden_size;
    assert_int_equal(m->layers[0].wq.dtype, KVC_WMAT_F32); /* a random model's matrices are f32 views */
    float *wq = m->layers[0].wq.data, *wk = m->layers[0].wk.data, *embed = m->embed.data;
    if (what == NAN_Q_PROJ) wq[5] = NAN;
    if (what == HUGE_K_PROJ)
        for (int64_t i = 0; i < cfg.num_kv_heads * cfg.head_dim * H; i++) wk[i] = 3e38f;
    if (what == NAN_TOKEN) embed[POISON_TOKEN * H + 7] = NAN;
    return m;
}

static char failure[512]; /* the message of the last failing call of the helpers below */

static void expect_refusal(kvc_status st, const char *who, const char *where) {
    char want[160];
    snprintf(want, sizeof want, "%s: non-finite logits at %s", who, where);
    if (st != KVC_ERANGE || !strstr(failure, want))
        fail_msg("status %d, message \"%s\"; want KVC_ERANGE and \"%s\"", (int)st, failure, want);
}

/* generate (forced: tokens fed back, else greedy) in runner mode `mode`; returns its status. */
static kvc_status runner_generate(const kvc_model *m, kvc_runner_mode mode, const int32_t *forced) {
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = mode;
    p.max_new_tokens = NT;
    kvc_runner *r = NULL;
    if (kvc_runner_create(m, &p, 2, 5, &r) != KVC_OK) fail_msg("runner: %s", kvc_last_error());
    int32_t tokens[2 * NT];
    const kvc_status st = forced ? kvc_runner_generate_forced(r, IDS, LENS, 2, forced, tokens, NULL, NULL)
                                 : kvc_runner_generate(r, IDS, LENS, 2, tokens, NULL, NULL);
    if (st != KVC_OK) snprintf(failure, sizeof failure, "%s", kvc_last_error());
    kvc_runner_destroy(r);
    return st;
}

static const kvc_runner_mode MODES[3] = {KVC_RUNNER_RECOMPUTE, KVC_RUNNER_CONTIGUOUS, KVC_RUNNER_PAGED};

static void test_runner_refuses(void **state) {
    (void)state;
    kvc_model *clean = broken_model(NAN_TOKEN); /* no prompt feeds POISON_TOKEN: finite */
    for (int mi = 0; mi < 3; mi++) assert_int_equal(runner_generate(clean, MODES[mi], NULL), KVC_OK);
    for (poison w = NAN_Q_PROJ; w <= HUGE_K_PROJ; w++) {
        kvc_model *m = broken_model(w);
        for (int mi = 0; mi < 3; mi++)
            expect_refusal(runner_generate(m, MODES[mi], NULL), "runner", "step 0 for request 0 (position 4)");
        kvc_model_destroy(m);
    }
    /* request 1 is fed POISON_TOKEN at step 2 (position 3 + 1): the first non-finite logits are its own */
    int32_t forced[2 * NT] = {1, 2, 3, 4, 5, POISON_TOKEN, 6, 7};
    for (int mi = 0; mi < 3; mi++)
        expect_refusal(runner_generate(clean, MODES[mi], forced), "runner", "step 2 for request 1 (position 4)");
    kvc_model_destroy(clean);
}

/* Runs the prompts (request 1's with `last1` as its last token) through an engine until a step fails or every request
 * finishes; returns the failing step's status (KVC_OK: none failed). */
static kvc_status engine_run(const kvc_model *m, bool self_managed, int32_t last1) {
    kvc_engine_params p = kvc_engine_default_params();
    p.max_model_len = 32;
    p.max_num_seqs = 2;
    p.max_num_batched_tokens = 32;
    p.reserved_decode_tokens = 0;
    p.check = true;
    kvc_engine_adapter_params ap = {.self_managed = self_managed, .cache = {.block_size = self_managed ? 0 : 4}};
    kvc_engine_adapter *a = NULL;
    if (kvc_engine_adapter_create(m, &ap, &p, &a) != KVC_OK) fail_msg("adapter: %s", kvc_last_error());
    kvc_engine *e = NULL;
    if (kvc_engine_create(kvc_engine_adapter_model(a), &p, &e) != KVC_OK) fail_msg("engine: %s", kvc_last_error());
    int32_t prompt1[3] = {IDS[5], IDS[6], last1};
    for (int64_t b = 0; b < 2; b++) {
        kvc_engine_request r = kvc_engine_request_default();
        r.id = b;
        r.prompt = b ? prompt1 : IDS;
        r.n_prompt = LENS[b];
        r.max_new_tokens = NT;
        if (kvc_engine_add_request(e, &r) != KVC_OK) fail_msg("add request %lld: %s", (long long)b, kvc_last_error());
    }
    kvc_engine_step_result res = {0};
    kvc_status st = KVC_OK;
    for (int s = 0; st == KVC_OK && !res.idle; s++) {
        assert_true(s <= NT + 1);
        st = kvc_engine_step(e, &res);
    }
    if (st != KVC_OK) {
        snprintf(failure, sizeof failure, "%s", kvc_last_error());
        assert_int_equal(kvc_engine_check(e), KVC_OK); /* the refused step left no half-done state */
    }
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
    return st;
}

static void test_engine_refuses(void **state) {
    (void)state;
    kvc_model *clean = broken_model(NAN_TOKEN);
    for (int sm = 0; sm < 2; sm++) {
        assert_int_equal(engine_run(clean, sm, IDS[7]), KVC_OK);
        expect_refusal(engine_run(clean, sm, POISON_TOKEN), "engine", "step 0 for request 1 (position 2)");
    }
    for (poison w = NAN_Q_PROJ; w <= HUGE_K_PROJ; w++) {
        kvc_model *m = broken_model(w);
        for (int sm = 0; sm < 2; sm++)
            expect_refusal(engine_run(m, sm, IDS[7]), "engine", "step 0 for request 0 (position 4)");
        kvc_model_destroy(m);
    }
    kvc_model_destroy(clean);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runner_refuses),
        cmocka_unit_test(test_engine_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
