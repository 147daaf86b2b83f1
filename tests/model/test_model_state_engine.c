/* LFM2's conv states and Bamba's Mamba2 conv and ssm states through the engine (docs/runtime.md, "State layers"): each
 * request's state in a block of the manager's state group (Mamba key, one block per request), its prompt chunked over
 * several steps beside other requests' decode rows, a budget that preempts requests (their states discarded with their
 * blocks and recomputed from position 0): greedy tokens equal the runner's mode 2 (itself equal to transformers, the
 * oracle test), and the pool's bytes and block counts cover the states. Prefix caching is turned off for such a
 * model; self-managed caches and the P/D roles are refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvc_test_util.h"
#include "kvcache/engine.h"
#include "kvcache/runner.h"

#define N_REQ 3
#define NEW   6  /* new tokens per request */
#define LONG  20 /* under preemption: decode long enough to outgrow the pool */
#define BLOCK 4

static const int32_t IDS[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31, 8, 45, 2, 60, 71, 33, 19, 88, 7};
static const int64_t LENS[N_REQ] = {11, 3, 7};

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

static kvc_engine_params engine_params(void) {
    kvc_engine_params ep = kvc_engine_default_params();
    ep.max_model_len = 32, ep.max_num_seqs = N_REQ, ep.max_num_batched_tokens = 5; /* prompts in chunks */
    ep.check = true;
    return ep;
}

/* Greedy tokens [N_REQ, nt] of the runner's mode 2. */
static void runner_run(const kvc_model *m, int64_t nt, int32_t *out) {
    kvc_runner_params rp = kvc_runner_default_params();
    rp.max_new_tokens = nt, rp.cache.block_size = BLOCK;
    kvc_runner *r = NULL;
    check(kvc_runner_create(m, &rp, N_REQ, 11, &r), "runner");
    check(kvc_runner_generate(r, IDS, LENS, N_REQ, out, NULL, NULL), "generate");
    kvc_runner_destroy(r);
}

/* Runs the requests (nt new tokens each) to the end on the engine of ep; tokens [N_REQ, nt], its stats and
 * effective params. */
static void engine_run(const kvc_model *m, const kvc_engine_params *ep, int64_t nt, int32_t *out,
                       kvc_engine_stats *stats, kvc_engine_params *used) {
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.cache.block_size = BLOCK;
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    check(kvc_engine_adapter_create(m, &ap, ep, &a), "adapter");
    check(kvc_engine_create(kvc_engine_adapter_model(a), ep, &e), "engine");
    *used = *kvc_engine_params_of(e);
    kvc_test_engine_generate(e, IDS, LENS, N_REQ, nt, 400, out);
    check(kvc_engine_get_stats(e, stats), "stats");
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
}

/* The engine against the runner on oracle `name`, whose state layers take layer_bytes each per request, the
 * preempting run under `budget` bytes: ample blocks with
 * prefix caching asked for, then a budget that preempts; the state pool's blocks and bytes; the refusals. */
static void state_engine(const char *name, int64_t layer_bytes, int64_t budget) {
    char dir[1024];
    kvc_test_oracle_dir(name, dir, sizeof dir);
    kvc_model *m = NULL;
    check(kvc_model_load(dir, &m), "load");
    int32_t want[N_REQ * LONG], got[N_REQ * LONG];
    runner_run(m, NEW, want);

    /* ample blocks, prefix caching asked for: turned off, chunks and batches equal the runner */
    kvc_engine_params ep = engine_params(), used;
    ep.prefix_caching = true;
    kvc_engine_stats st;
    engine_run(m, &ep, NEW, got, &st, &used);
    if (memcmp(want, got, N_REQ * NEW * sizeof *got) != 0) fail_msg("%s engine: tokens differ from the runner's", name);
    assert_false(used.prefix_caching);
    assert_int_equal(st.prefix_hit_tokens, 0);
    assert_int_equal(st.n_keys, 2); /* FullAttention and the states' Mamba key */
    /* the pool holds the states: every key has a block per request and the null block at least, and the bytes
     * cover a layer's state block for each block of any key (the engine's shared pool gives the keys pages of
     * one size, a slot of a page shared by one layer of each key: kv_bytes = blocks x pages) */
    for (int32_t k = 0; k < st.n_keys; k++) {
        if (st.num_blocks[k] < N_REQ + 1 || st.kv_bytes < st.num_blocks[k] * layer_bytes)
            fail_msg("%s: key %d has %lld blocks, %lld bytes in all (a state block %lld)", name, (int)k,
                     (long long)st.num_blocks[k], (long long)st.kv_bytes, (long long)layer_bytes);
    }

    /* a budget that admits the three together (4 tokens an attention block, a state block each), no decode
     * reserve: they outgrow the pool while decoding 20 tokens, so requests are preempted, their states dropped with
     * their blocks and recomputed */
    runner_run(m, LONG, want);
    ep = engine_params();
    ep.plan = KVC_ENGINE_PLAN_BUDGET, ep.reserved_decode_tokens = 0; /* admitted together, grown apart */
    ep.kv_memory_bytes = budget;
    engine_run(m, &ep, LONG, got, &st, &used);
    assert_true(st.preemptions > 0);
    if (memcmp(want, got, sizeof want) != 0)
        fail_msg("%s engine under preemption: tokens differ from the runner's", name);

    /* refused by name: self-managed caches, the P/D roles */
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.self_managed = true;
    kvc_engine_adapter *a = NULL;
    ep = engine_params();
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &ep, &a), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "has state layers (layer "));
    ap.self_managed = false;
    check(kvc_engine_adapter_create(m, &ap, &ep, &a), "adapter");
    ep.role = KVC_ENGINE_ROLE_PREFILL;
    kvc_engine *e = NULL;
    assert_int_equal(kvc_engine_create(kvc_engine_adapter_model(a), &ep, &e), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "PREFILL role with state layers (cache conv_state)"));
    kvc_engine_adapter_destroy(a);
    kvc_model_destroy(m);
}

/* LFM2: 3 conv layers, each (3 - 1) inputs x 64 channels x 4 bytes a request */
static void test_lfm2_engine(void **state) {
    (void)state;
    state_engine("lfm2", 2 * 64 * 4, 10 * 3 * 2 * 64 * 4); /* 10 pages of a state block (one pool for both keys) */
}

/* Bamba: 3 Mamba2 layers, each (4 - 1) conv inputs x (128 + 2 x 2 x 16) channels and an ssm state of 8 heads x 16
 * x 16, f32 */
static void test_bamba_engine(void **state) {
    (void)state;
    /* the state pool's fixed 4 blocks (3 requests and the null block; the pages differ: no shared pool), then 12
     * attention blocks of 4 tokens x 2 x 2 heads x 16 x 4 bytes */
    const int64_t layer_bytes = (3 * 192 + 8 * 16 * 16) * 4;
    state_engine("bamba", layer_bytes, 4 * 3 * layer_bytes + 12 * 4 * 2 * 2 * 16 * 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lfm2_engine), cmocka_unit_test(test_bamba_engine)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
