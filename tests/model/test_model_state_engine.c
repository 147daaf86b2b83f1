/* LFM2's conv states and Bamba's Mamba2 conv and ssm states through the engine (docs/runtime.md, "State layers"): each
 * request's state in a block of the manager's state group (Mamba key, one block per request), its prompt chunked over
 * several steps beside other requests' decode rows, a budget that preempts requests (their states discarded with their
 * blocks and recomputed from position 0): greedy tokens equal the runner's mode 2 (itself equal to transformers, the
 * oracle test), and the pool's bytes and block counts cover the states. With prefix caching, requests that share
 * a prefix resume their states from cached snapshots (state_cache.c): the hits are exactly the snapshot positions
 * the chunks left, and every request's tokens equal it run alone without caching. Self-managed caches and the
 * P/D roles are refused by name. */
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
#include "kvcache/plan.h"
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

/* The oracle model of tests/data/oracle/<name>. */
static kvc_model *load_oracle(const char *name) {
    char dir[1024];
    kvc_test_oracle_dir(name, dir, sizeof dir);
    kvc_model *m = NULL;
    check(kvc_model_load(dir, &m), "load");
    return m;
}

/* An engine of ep over m (blocks of BLOCK tokens) and its adapter, closed by close_engine. */
static kvc_engine *open_engine(const kvc_model *m, const kvc_engine_params *ep, kvc_engine_adapter **a) {
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.cache.block_size = BLOCK;
    kvc_engine *e = NULL;
    check(kvc_engine_adapter_create(m, &ap, ep, a), "adapter");
    check(kvc_engine_create(kvc_engine_adapter_model(*a), ep, &e), "engine");
    return e;
}

static void close_engine(kvc_engine *e, kvc_engine_adapter *a) {
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
}

/* Runs the requests (nt new tokens each) to the end on the engine of ep; tokens [N_REQ, nt], its stats and
 * effective params. */
static void engine_run(const kvc_model *m, const kvc_engine_params *ep, int64_t nt, int32_t *out,
                       kvc_engine_stats *stats, kvc_engine_params *used) {
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = open_engine(m, ep, &a);
    *used = *kvc_engine_params_of(e);
    kvc_test_engine_generate(e, IDS, LENS, N_REQ, nt, 400, out);
    check(kvc_engine_get_stats(e, stats), "stats");
    close_engine(e, a);
}

/* The engine against the runner on oracle `name`, whose state layers take layer_bytes each per request, the
 * preempting run under `budget` bytes: ample blocks with prefix caching on, then a budget that preempts; the state
 * pool's blocks and bytes; the refusals. */
static void state_engine(const char *name, int64_t layer_bytes, int64_t budget) {
    kvc_model *m = load_oracle(name);
    int32_t want[N_REQ * LONG], got[N_REQ * LONG];
    runner_run(m, NEW, want);

    /* ample blocks, prefix caching on (no prompt shares a block): chunks and batches equal the runner */
    kvc_engine_params ep = engine_params(), used;
    ep.prefix_caching = true;
    kvc_engine_stats st;
    engine_run(m, &ep, NEW, got, &st, &used);
    if (memcmp(want, got, N_REQ * NEW * sizeof *got) != 0) fail_msg("%s engine: tokens differ from the runner's", name);
    assert_true(used.prefix_caching);
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

    /* refused by name: self-managed caches (the P/D roles are tests/dist/pd_loopback's) */
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.self_managed = true;
    kvc_engine_adapter *a = NULL;
    ep = engine_params();
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &ep, &a), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "has state layers (layer "));
    kvc_model_destroy(m);
}

/* Prefix caching: six prompts over one 14-token prefix (PRE), served in three waves so that each wave finds
 * what the earlier ones cached. Request 4 repeats request 1's prompt under cache salt "b"; request 5 repeats it
 * again under "b". */
#define N_PC    6
#define PC_LONG 20 /* under preemption */
static const int32_t PC_TAIL[] = {5, 60, 71, 33, 19, 88, 7, 2, 71, 33, 19, 71, 33, 19};
static const int64_t PC_PRE[N_PC] = {14, 14, 14, 10, 14, 14}; /* prefix tokens of each prompt */
static const int64_t PC_TAILS[N_PC] = {0, 2, 5, 6, 8, 11};    /* where its own tokens start in PC_TAIL */
static const int64_t PC_NTAIL[N_PC] = {2, 3, 1, 2, 3, 3};     /* and how many */
static const char *const PC_SALT[N_PC] = {NULL, NULL, NULL, NULL, "b", "b"};
static const int PC_WAVE[N_PC] = {0, 1, 1, 1, 1, 2};

static int64_t pc_prompt(int64_t i, int32_t *out) {
    memcpy(out, IDS, (size_t)PC_PRE[i] * sizeof *out);
    memcpy(out + PC_PRE[i], PC_TAIL + PC_TAILS[i], (size_t)PC_NTAIL[i] * sizeof *out);
    return PC_PRE[i] + PC_NTAIL[i];
}

static kvc_engine_params pc_params(int64_t step_tokens, bool caching) {
    kvc_engine_params ep = kvc_engine_default_params();
    ep.max_model_len = 40, ep.max_num_seqs = 4, ep.max_num_batched_tokens = step_tokens;
    ep.prefix_caching = caching, ep.check = true;
    return ep;
}

/* Serves the requests `which` (bit i: request i) wave by wave on one engine of ep, nt tokens each into out
 * [N_PC, nt]; hits[i] = request i's prefix hit; the engine's stats. */
static void pc_serve(const kvc_model *m, const kvc_engine_params *ep, unsigned which, int64_t nt, int32_t *out,
                     int64_t *hits, kvc_engine_stats *stats) {
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = open_engine(m, ep, &a);
    assert_int_equal(kvc_engine_params_of(e)->prefix_caching, ep->prefix_caching);
    for (int wave = 0; wave < 3; wave++) {
        int32_t prompts[N_PC][40];
        for (int64_t i = 0; i < N_PC; i++) {
            if (PC_WAVE[i] != wave || !(which >> i & 1)) continue;
            kvc_engine_request r = kvc_engine_request_default();
            r.id = i, r.prompt = prompts[i], r.n_prompt = pc_prompt(i, prompts[i]), r.max_new_tokens = nt;
            r.cache_salt = PC_SALT[i], r.cache_salt_len = PC_SALT[i] ? (int64_t)strlen(PC_SALT[i]) : 0;
            check(kvc_engine_add_request(e, &r), "add_request");
        }
        kvc_engine_step_result res = {.idle = false};
        for (int steps = 0; !res.idle; steps++) {
            if (steps > 400) fail_msg("wave %d does not finish", wave);
            check(kvc_engine_step(e, &res), "step");
        }
    }
    for (int64_t i = 0; i < N_PC; i++) {
        if (!(which >> i & 1)) continue;
        kvc_engine_request_info info;
        int64_t got = 0;
        check(kvc_engine_request_get(e, i, &info), "request_get");
        check(kvc_engine_request_output(e, i, out + i * nt, nt, &got), "output");
        assert_int_equal(got, nt);
        hits[i] = info.n_prefix_hit;
    }
    check(kvc_engine_get_stats(e, stats), "stats");
    for (int32_t k = 0; k < stats->n_keys; k++) /* every request gone: no block held, snapshots cached free */
        assert_int_equal(stats->blocks_in_use[k], 0);
    close_engine(e, a);
}

/* Each request alone, caching off, against all of them served together with caching on: with chunks of one
 * block (every prompt block boundary a snapshot), with whole-prompt chunks (a snapshot only at the last
 * boundary of each prompt: the attention blocks of PRE are cached, but no state at 12, so the hit is cut to 0)
 * and under preemption; storage poisoning on (a state read before it was written is NaN and refused). */
static void test_lfm2_prefix_cache(void **state) {
    (void)state;
    kvc_model *m = load_oracle("lfm2");
    int32_t want[N_PC * PC_LONG], got[N_PC * PC_LONG];
    int64_t hits[N_PC];
    kvc_engine_stats st;
    for (int64_t i = 0; i < N_PC; i++) {
        kvc_engine_params ep = pc_params(64, false);
        pc_serve(m, &ep, 1u << i, PC_LONG, want, hits, &st);
        assert_int_equal(st.prefix_hit_tokens, 0);
    }
    int32_t want_short[N_PC * NEW];
    for (int64_t i = 0; i < N_PC; i++) memcpy(want_short + i * NEW, want + i * PC_LONG, NEW * sizeof *want);

    /* chunks of at most 5 tokens, cut to 4: snapshots at 4, 8, 12 of PRE, 16 of request 4's prompt; one pool for
     * both keys, then a state pool of its own (the snapshots' block ids are those of the state tensors) */
    const int64_t small_hits[N_PC] = {0, 12, 12, 8, 0, 16};
    kvc_engine_params ep = pc_params(5, true);
    for (int shared = 1; shared >= 0; shared--) {
        ep.shared_pools = shared;
        pc_serve(m, &ep, 0x3f, NEW, got, hits, &st);
        assert_int_equal(st.n_keys, 2);
        if (memcmp(want_short, got, sizeof want_short) != 0) fail_msg("small chunks: tokens differ from each alone");
        for (int64_t i = 0; i < N_PC; i++)
            if (hits[i] != small_hits[i])
                fail_msg("small chunks: request %lld hit %lld (%lld expected)", (long long)i, (long long)hits[i],
                         (long long)small_hits[i]);
    }

    /* one chunk a prompt: request 0 (16 tokens) leaves a snapshot at 16 only, so the others find 3 attention
     * blocks of PRE and no state to resume: no hit; request 4's 17 tokens run as 16 + 1, and request 5 hits 16 */
    const int64_t whole_hits[N_PC] = {0, 0, 0, 0, 0, 16};
    ep = pc_params(64, true);
    pc_serve(m, &ep, 0x3f, NEW, got, hits, &st);
    if (memcmp(want_short, got, sizeof want_short) != 0) fail_msg("whole chunks: tokens differ from each alone");
    for (int64_t i = 0; i < N_PC; i++)
        if (hits[i] != whole_hits[i])
            fail_msg("whole chunks: request %lld hit %lld (%lld expected)", (long long)i, (long long)hits[i],
                     (long long)whole_hits[i]);

    /* a budget of 16 pages (one pool), 20 new tokens: requests are preempted and resume from their own or
     * others' snapshots */
    ep = pc_params(5, true);
    ep.plan = KVC_ENGINE_PLAN_BUDGET, ep.reserved_decode_tokens = 0;
    ep.kv_memory_bytes = 16 * 3 * 2 * 64 * 4;
    pc_serve(m, &ep, 0x3f, PC_LONG, got, hits, &st);
    assert_true(st.preemptions > 0);
    assert_true(st.prefix_hit_tokens > 0);
    if (memcmp(want, got, sizeof want) != 0) fail_msg("under preemption: tokens differ from each alone");
    kvc_model_destroy(m);
}

/* Qwen3-Next's Gated DeltaNet layers keep two states each (conv and recurrent) in the state key's block: the
 * engine's chunked prompts beside other requests' decode rows give the runner's tokens; self-managed caches are
 * refused naming the layers. */
static void test_qwen3_next_engine(void **state) {
    (void)state;
    kvc_model *m = load_oracle("qwen3_next");
    int32_t want[N_REQ * NEW], got[N_REQ * NEW];
    runner_run(m, NEW, want);
    kvc_engine_params ep = engine_params(), used;
    kvc_engine_stats st;
    engine_run(m, &ep, NEW, got, &st, &used);
    if (memcmp(want, got, sizeof want) != 0) fail_msg("qwen3_next engine: tokens differ from the runner's");
    assert_int_equal(st.n_keys, 2); /* FullAttention and the states' Mamba key */
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.self_managed = true;
    kvc_engine_adapter *a = NULL;
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &ep, &a), KVC_EINVAL);
    assert_non_null(
        strstr(kvc_last_error(), "has state layers (layer 0: short convolution, Mamba2 or Gated DeltaNet)"));
    kvc_model_destroy(m);
}

/* Layers of two states each (Bamba's, Nemotron-H's and Mamba2's conv + ssm, Qwen3-Next's Gated DeltaNet conv +
 * recurrent, Kimi-Linear's KDA conv + recurrent): a resumed request takes both from the snapshot (state_cache.c copies
 * every entry of the state key), so requests over the shared prefix in chunks of at most 5 tokens hit and give each
 * request's tokens alone without caching; own_pools: each key its own pool (else the engine's default). */
static void prefix_cache_pools(const char *name, bool hits_expected, bool own_pools) {
    kvc_model *m = load_oracle(name);
    int32_t want[N_PC * NEW], got[N_PC * NEW];
    int64_t hits[N_PC];
    kvc_engine_stats st;
    for (int64_t i = 0; i < N_PC; i++) {
        kvc_engine_params ep = pc_params(64, false);
        pc_serve(m, &ep, 1u << i, NEW, want, hits, &st);
    }
    kvc_engine_params ep = pc_params(5, true);
    ep.shared_pools = !own_pools;
    pc_serve(m, &ep, 0x3f, NEW, got, hits, &st);
    if (memcmp(want, got, sizeof want) != 0) fail_msg("%s: tokens with prefix hits differ from each alone", name);
    assert_true(!hits_expected || (hits[1] > 0 && hits[5] > 0));
    kvc_model_destroy(m);
}

static void two_state_prefix_cache(const char *name, bool hits_expected) {
    prefix_cache_pools(name, hits_expected, !kvc_engine_default_params().shared_pools);
}

static void test_two_state_prefix_cache(void **state) {
    (void)state;
    two_state_prefix_cache("bamba", true);
    two_state_prefix_cache("qwen3_next", true);
    two_state_prefix_cache("kimi_linear", true); /* KDA's conv and recurrent states beside MLA caches */
    /* one state a lightning layer (kv_state) beside GQA caches; pools of their own, since in one pool the pages grow
     * to the 4 KiB state (32 tokens of keys), longer than the shared prefix: no hit to test */
    prefix_cache_pools("minimax", true, true);
    two_state_prefix_cache("recurrent_gemma", true); /* conv + RG-LRU states beside a sliding window of 8 */
    two_state_prefix_cache("nemotron_h", true);
    two_state_prefix_cache("nemotron_h_moe", true);
    two_state_prefix_cache("falcon_h1", true); /* K/V and states in every layer */
    two_state_prefix_cache("jamba", true);     /* Mamba-1 states beside attention */
    two_state_prefix_cache("lfm3", true);      /* conv states beside full and sliding attention */
    /* states alone: the engine snapshots them every 16 tokens, past the shared 14 (no hit; tokens still equal) */
    two_state_prefix_cache("mamba2", false);
    two_state_prefix_cache("mamba", false); /* Mamba-1's states alone, as Mamba2's */
    two_state_prefix_cache("rwkv", false);  /* RWKV's shift and WKV states alone, as Mamba's */
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

/* Nemotron-H: 3 Mamba2 layers as Bamba's (its MLP layers keep nothing), one attention layer */
static void test_nemotron_h_engine(void **state) {
    (void)state;
    const int64_t layer_bytes = (3 * 192 + 8 * 16 * 16) * 4;
    state_engine("nemotron_h", layer_bytes, 4 * 3 * layer_bytes + 12 * 4 * 2 * 2 * 16 * 4);
}

/* The planner and the runtime agree on an oracle: the same cached layers (`cached` of them: the plan leaves out the
 * layers that keep nothing, the runtime's cache description gives them no entry) and the same state bytes per
 * sequence (the plan's state entries, the runtime's), `state_bytes`. */
static void plan_agrees(const char *name, int32_t cached, int64_t state_bytes) {
    char dir[1024], path[1100];
    kvc_test_oracle_dir(name, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *json = kvc_test_read_text(path);
    kvc_model_plan *p = NULL;
    kvc_plan_options o = kvc_plan_default_options();
    o.max_model_len = 64; /* Mamba2's config has no max_position_embeddings */
    check(kvc_model_plan_create(json, strlen(json), &o, &p), "plan");
    free(json);
    kvc_model *m = load_oracle(name);
    kvc_model_cache_info *ci = NULL;
    check(kvc_model_cache_info_build(m, false, KVC_DTYPE_F32, 4, &ci), "cache info");
    int64_t plan_bytes = 0, run_bytes = 0;
    int32_t run_layers = 0;
    for (int32_t l = 0; l < p->n_layers; l++)
        for (int32_t c = 0; c < p->layers[l].n_caches; c++)
            if (p->layers[l].caches[c].is_state) plan_bytes += p->layers[l].caches[c].bytes_per_block;
    for (int32_t l = 0; l < ci->n_layer_infos; l++) {
        run_layers += ci->layer_infos[l].n_caches > 0;
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            const kvc_cache_entry *e = &ci->layer_infos[l].caches[c];
            int64_t n = 4;
            for (int32_t d = 0; e->is_state && d < e->n_shape; d++) n *= e->shape[d];
            run_bytes += e->is_state ? n : 0;
        }
    }
    assert_int_equal(p->n_layers, cached);
    assert_int_equal(run_layers, cached);
    assert_int_equal(plan_bytes, state_bytes);
    assert_int_equal(run_bytes, plan_bytes);
    kvc_model_cache_info_destroy(ci);
    kvc_model_destroy(m);
    kvc_model_plan_destroy(p);
}

/* Nemotron-H: layers 0, 2, 4, 5 cached (its MLP layers 1, 3 keep nothing), three of them Mamba2 as Bamba's; Mamba2:
 * four mixers of the same shapes; Nemotron-H with experts: one mixer, one attention layer; Falcon-H1: three layers
 * each of attention and a mixer (mamba_d_ssm 96 + 2 x 2 x 16 conv channels, 6 heads of 16 x 16) */
static void test_plan_agrees(void **state) {
    (void)state;
    const int64_t layer_bytes = (3 * 192 + 8 * 16 * 16) * 4;
    plan_agrees("nemotron_h", 4, 3 * layer_bytes);
    plan_agrees("mamba2", 4, 4 * layer_bytes);
    plan_agrees("nemotron_h_moe", 2, layer_bytes);                /* "ME*E": the expert layers 1, 3 keep nothing */
    plan_agrees("falcon_h1", 6, 3 * (3 * 160 + 6 * 16 * 16) * 4); /* each layer twice: attention, then its states */
    plan_agrees("mamba", 3, 3 * ((4 - 1) * 96 + 96 * 8) * 4);     /* 3 Mamba-1 mixers: conv [3, 96], ssm [96, 8] */
    plan_agrees("falcon_mamba", 3, 3 * ((3 - 1) * 64 + 64 * 16) * 4);
    plan_agrees("jamba", 4, 3 * ((4 - 1) * 128 + 128 * 8) * 4);    /* 3 mixers beside the attention layer */
    plan_agrees("zamba2", 5, 3 * ((3 - 1) * 96 + 4 * 16 * 8) * 4); /* 3 mixers, 2 sites' K/V beside theirs */
    plan_agrees("rwkv", 3, 3 * (2 * 32 + 3 * 32) * 4);             /* shift [2, 32], WKV [3, 32] per layer */
    plan_agrees("zamba", 5, 3 * ((3 - 1) * 64 + 64 * 8) * 4);      /* Mamba-1 states: conv [2, 64], ssm [64, 8] */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lfm2_engine),       cmocka_unit_test(test_bamba_engine),
        cmocka_unit_test(test_nemotron_h_engine), cmocka_unit_test(test_plan_agrees),
        cmocka_unit_test(test_lfm2_prefix_cache), cmocka_unit_test(test_two_state_prefix_cache),
        cmocka_unit_test(test_qwen3_next_engine)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
