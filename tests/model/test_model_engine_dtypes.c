/* int8 and fp8 KV caches through the engine (the model adapter's
 * kvc_engine_adapter_params.cache.kv_dtype): the oracle models' greedy tokens under the engine, with
 * prompts chunked over several steps and requests batched, equal the
 * standalone runner's at the same dtype token for token (the forward is
 * batch-invariant and each token's scale depends on its own keys and values
 * only). Managed paged caches with their per-slot scale entries and
 * self-managed contiguous ones; DeepSeek in full form and with latent
 * caches. */
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
#define NEW   6
#define BLOCK 4

static const int32_t IDS[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31, 8, 45, 2, 60, 71, 33, 19, 88, 7};
static const int64_t LENS[N_REQ] = {11, 3, 7};

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

/* Greedy tokens [N_REQ, NEW] of the runner (mode, dtype, paged layout). */
static void runner_tokens(const kvc_model *m, kvc_runner_mode mode, bool mla_paged, kvc_dtype dt, kvc_block_layout lay,
                          int32_t *out) {
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = mode, p.mla_paged = mla_paged, p.max_new_tokens = NEW;
    p.cache = (kvc_cache_knobs){.block_size = BLOCK, .kv_dtype = dt, .kv_layout = lay};
    kvc_runner *r = NULL;
    check(kvc_runner_create(m, &p, N_REQ, 11, &r), "runner");
    check(kvc_runner_generate(r, IDS, LENS, N_REQ, out, NULL, NULL), "generate");
    kvc_runner_destroy(r);
}

/* Greedy tokens [N_REQ, NEW] of the engine over the model adapter. */
static void engine_tokens(const kvc_model *m, bool self_managed, bool latent, kvc_dtype dt, kvc_block_layout lay,
                          int32_t *out) {
    kvc_engine_params ep = kvc_engine_default_params();
    ep.max_model_len = 32, ep.max_num_seqs = 2, ep.max_num_batched_tokens = 5; /* prompts in chunks, decode mixed in */
    ep.check = true;
    const kvc_engine_adapter_params ap = {.self_managed = self_managed,
                                          .latent = latent,
                                          .cache = {.block_size = BLOCK, .kv_dtype = dt, .kv_layout = lay}};
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    check(kvc_engine_adapter_create(m, &ap, &ep, &a), "adapter");
    check(kvc_engine_create(kvc_engine_adapter_model(a), &ep, &e), "engine");
    kvc_test_engine_generate(e, IDS, LENS, N_REQ, NEW, 200, out);
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
}

static void compare(const char *family, kvc_dtype dt) {
    char dir[1024];
    kvc_test_oracle_dir(family, dir, sizeof dir);
    kvc_model *m = NULL;
    check(kvc_model_load(dir, &m), "load");
    const bool mla = kvc_model_config_of(m)->family == KVC_FAMILY_DEEPSEEK_V3;
    int32_t want[N_REQ * NEW], got[N_REQ * NEW];
    for (int latent = 0; latent <= (mla ? 1 : 0); latent++) {
        runner_tokens(m, latent ? KVC_RUNNER_MLA_LATENT : KVC_RUNNER_PAGED, true, dt, KVC_BLOCK_BNBSND, want);
        engine_tokens(m, false, latent, dt, KVC_BLOCK_BNBSND, got);
        if (memcmp(want, got, sizeof want) != 0)
            fail_msg("%s %s%s managed: engine tokens differ from the runner's", family, kvc_dtype_name(dt),
                     latent ? " latent" : "");
        if (!latent && kvc_model_config_of(m)->index_topk == 0) { /* keys in lanes (not with sparse attention):
                                                                   * the engine's managed caches and the runner's
                                                                   * mode 2 alike */
            runner_tokens(m, KVC_RUNNER_PAGED, true, dt, KVC_BLOCK_BNNDBS, want);
            engine_tokens(m, false, false, dt, KVC_BLOCK_BNNDBS, got);
            if (memcmp(want, got, sizeof want) != 0)
                fail_msg("%s %s managed, keys in lanes: engine tokens differ from the runner's", family,
                         kvc_dtype_name(dt));
        }
        runner_tokens(m, latent ? KVC_RUNNER_MLA_LATENT : KVC_RUNNER_CONTIGUOUS, false, dt, KVC_BLOCK_BNBSND, want);
        engine_tokens(m, true, latent, dt, KVC_BLOCK_BNBSND, got);
        if (memcmp(want, got, sizeof want) != 0)
            fail_msg("%s %s%s self-managed: engine tokens differ from the runner's", family, kvc_dtype_name(dt),
                     latent ? " latent" : "");
    }
    kvc_model_destroy(m);
}

/* msg without its "who: " and the words between "not taken " and the next ':' (the owner's "where"). */
static void knob_words(const char *msg, const char *who, char *out, size_t cap) {
    const size_t n = strlen(who);
    if (strncmp(msg, who, n) != 0 || strncmp(msg + n, ": ", 2) != 0) fail_msg("\"%s\" is not %s's", msg, who);
    snprintf(out, cap, "%s", msg + n + 2);
    char *where = strstr(out, "not taken ");
    if (where == NULL) return;
    where += strlen("not taken ");
    const char *colon = strchr(where, ':');
    memmove(where, colon, strlen(colon) + 1);
}

/* The knobs are checked in one place (the cache builder): the runner's check (mode `mode`) and the engine
 * adapter (self-managed or latent as given) refuse `knobs` alike, naming the field as the caller wrote it
 * (`field`, e.g. "cache.kv_layout"), in the same words after their own names (the adapter's naming its caches
 * `where`, if not NULL); nothing created. */
static void expect_same_refusal(const kvc_model *m, kvc_cache_knobs knobs, kvc_runner_mode mode, bool self_managed,
                                const char *field, const char *where) {
    kvc_runner_params rp = kvc_runner_default_params();
    rp.mode = mode;
    rp.cache = knobs;
    assert_int_equal(kvc_runner_check(m, &rp, 1, 8), KVC_EINVAL);
    char runner[512], adapter[512];
    knob_words(kvc_last_error(), "runner", runner, sizeof runner);
    kvc_engine_params ep = kvc_engine_default_params();
    ep.max_model_len = 32;
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.self_managed = self_managed, ap.latent = mode == KVC_RUNNER_MLA_LATENT, ap.cache = knobs;
    kvc_engine_adapter *a = (kvc_engine_adapter *)&ep;
    assert_int_equal(kvc_engine_adapter_create(m, &ap, &ep, &a), KVC_EINVAL);
    assert_null(a);
    if (where != NULL && strstr(kvc_last_error(), where) == NULL) fail_msg("\"%s\" lacks %s", kvc_last_error(), where);
    knob_words(kvc_last_error(), "engine adapter", adapter, sizeof adapter);
    if (strncmp(runner, field, strlen(field)) != 0) fail_msg("runner: \"%s\" does not name %s", runner, field);
    if (strcmp(runner, adapter) != 0) fail_msg("runner \"%s\", engine adapter \"%s\"", runner, adapter);
}

/* An unknown kv_layout, a kv_dtype that is not a KV cache dtype, a block size past paged attention's limit,
 * keys in lanes with contiguous (self-managed) or latent caches: refused by runner and adapter alike. */
static void test_knob_refusals(void **state) {
    (void)state;
    char dir[1024];
    kvc_test_oracle_dir("deepseek_v3", dir, sizeof dir);
    kvc_model *m = NULL;
    check(kvc_model_load(dir, &m), "load");
    const kvc_cache_knobs ok = kvc_cache_knobs_default();
    assert_int_equal(ok.block_size, 16);
    assert_int_equal(ok.kv_dtype, KVC_DTYPE_F32);
    assert_int_equal(ok.kv_layout, KVC_BLOCK_BNBSND);
    kvc_cache_knobs k = ok;
    k.kv_layout = KVC_BLOCK_NZ;
    expect_same_refusal(m, k, KVC_RUNNER_PAGED, false, "cache.kv_layout KVC_BLOCK_NZ (tiles) is not taken", NULL);
    k = ok, k.kv_dtype = KVC_DTYPE_I32; /* not a KV cache element type */
    expect_same_refusal(m, k, KVC_RUNNER_PAGED, false, "cache.kv_dtype i32", NULL);
    k = ok, k.block_size = KVC_ATTN_MAX_BLOCK_SIZE + 1; /* paged attention takes at most 1024 */
    expect_same_refusal(m, k, KVC_RUNNER_PAGED, false, "cache.block_size 1025 must be in [1, 1024]", NULL);
    k = ok, k.kv_layout = KVC_BLOCK_BNNDBS;
    expect_same_refusal(m, k, KVC_RUNNER_CONTIGUOUS, true, "cache.kv_layout KVC_BLOCK_BNNDBS (keys in lanes)",
                        "by self-managed caches");
    expect_same_refusal(m, k, KVC_RUNNER_MLA_LATENT, false, "cache.kv_layout KVC_BLOCK_BNNDBS (keys in lanes)",
                        "by MLA latent caches");
    /* hostile values: an enum out of range, a dtype id outside the table either way, block sizes 0, -1 and
     * past int32, a zero-initialised struct (block_size 0 in paged modes) */
    k = ok, k.kv_layout = (kvc_block_layout)99;
    expect_same_refusal(m, k, KVC_RUNNER_PAGED, false, "cache.kv_layout of an unknown kind is not taken", NULL);
    k = ok, k.kv_dtype = (kvc_dtype)-1;
    expect_same_refusal(m, k, KVC_RUNNER_PAGED, false, "cache.kv_dtype ? (-1) is not a KV cache dtype", NULL);
    k = ok, k.kv_dtype = (kvc_dtype)1000;
    expect_same_refusal(m, k, KVC_RUNNER_CONTIGUOUS, true, "cache.kv_dtype ? (1000) is not a KV cache dtype", NULL);
    k = ok, k.block_size = 0;
    expect_same_refusal(m, k, KVC_RUNNER_PAGED, false, "cache.block_size 0 must be in [1, 1024]", NULL);
    k = ok, k.block_size = -1;
    expect_same_refusal(m, k, KVC_RUNNER_MLA_LATENT, false, "cache.block_size -1 must be in [1, 1024]", NULL);
    k = ok, k.block_size = (int64_t)INT32_MAX + 17;
    expect_same_refusal(m, k, KVC_RUNNER_PAGED, false, "cache.block_size 2147483664 must be", NULL);
    memset(&k, 0, sizeof k);
    expect_same_refusal(m, k, KVC_RUNNER_PAGED, false, "cache.block_size 0 must be in [1, 1024]", NULL);
    kvc_model_destroy(m);
}

static void test_qwen3_int8(void **state) { (void)state, compare("qwen3", KVC_DTYPE_I8); }
static void test_gpt_oss_fp8(void **state) { (void)state, compare("gpt_oss", KVC_DTYPE_F8E4M3); }
static void test_deepseek_int8(void **state) { (void)state, compare("deepseek_v3", KVC_DTYPE_I8); }
static void test_deepseek_fp8_e5m2(void **state) { (void)state, compare("deepseek_v3", KVC_DTYPE_F8E5M2); }
/* DeepSeek sparse attention: the managed storage's f32 indexer keys beside fp8 latent / full-form caches */
static void test_glm_moe_dsa_fp8(void **state) { (void)state, compare("glm_moe_dsa", KVC_DTYPE_F8E4M3); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_knob_refusals),     cmocka_unit_test(test_qwen3_int8),
        cmocka_unit_test(test_gpt_oss_fp8),       cmocka_unit_test(test_deepseek_int8),
        cmocka_unit_test(test_deepseek_fp8_e5m2), cmocka_unit_test(test_glm_moe_dsa_fp8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
