/* `kvcache bench model`: its arguments (parsed, refused with status 2 for a
 * bad list, a missing value or another benchmark), the costs its rooflines
 * divide (kvci_model_cost_of, counted by hand for the bf16 oracle qwen3),
 * kvci_model_load_as widening the matrices to f32, and short runs of the
 * benchmark on that model (with --profile: the prefill and the decode steps
 * timed apart, their sums within the measured times, the bits unchanged;
 * with --against, this build's own shared library timed in turn and another
 * library refused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#include "bench.h"
#include "kvcache/kvcache.h"
#include "model/gemm_bf16.h"
#include "model/gemm_quant.h"
#include "model/model_internal.h"
#include "model/step_profile.h"

static char dir[512];

static const kvc_bench_entry *bench;

static int parse(int argc, char **argv, kvc_bench_opts *opts) { return kvc_bench_parse(argc, argv, &bench, opts); }

static void test_args(void **state) {
    (void)state;
    kvc_bench_opts o;
    assert_int_equal(
        parse(8, (char *[]){"bench", "model", "DIR", "--batches", "1,8", "--long", "--weights", "f32"}, &o), -1);
    assert_string_equal(o.model_dir, "DIR");
    assert_string_equal(o.batches, "1,8");
    assert_true(o.long_prompts && strcmp(o.weights, "f32") == 0 && o.prompts == NULL);
    assert_int_equal(parse(4, (char *[]){"bench", "model", "DIR", "--weights"}, &o), 2);
    assert_int_equal(parse(5, (char *[]){"bench", "model", "DIR", "--weights", "q5_1"}, &o), 2);
    assert_int_equal(parse(5, (char *[]){"bench", "model", "DIR", "--weights", "q4_0"}, &o), -1);
    assert_int_equal(parse(4, (char *[]){"bench", "model", "DIR", "--prompts"}, &o), 2);
    assert_int_equal(parse(3, (char *[]){"bench", "gemm", "--long"}, &o), 2);
    assert_int_equal(parse(3, (char *[]){"bench", "gemm", "--profile"}, &o), 2);
    assert_int_equal(parse(4, (char *[]){"bench", "gemm", "--activations", "bf16"}, &o), 2);
    assert_int_equal(parse(5, (char *[]){"bench", "model", "DIR", "--activations", "f32,bf16"}, &o), -1);
    assert_string_equal(o.activations, "f32,bf16");
    assert_int_equal(parse(4, (char *[]){"bench", "model", "DIR", "--profile"}, &o), -1);
    assert_true(o.profile);
    assert_int_equal(parse(4, (char *[]){"bench", "model", "DIR", "OTHER"}, &o), 2);
    assert_int_equal(parse(5, (char *[]){"bench", "model", "DIR", "--against", "LIB"}, &o), -1);
    assert_string_equal(o.against, "LIB");
    assert_int_equal(parse(4, (char *[]){"bench", "gemm", "--against", "LIB"}, &o), 2);
    assert_int_equal(parse(5, (char *[]){"bench", "model", "DIR", "--pages", "4k"}, &o), 2);
    /* lists are checked before the model is read: the directory need not exist */
    const char *bad[] = {"0", "1,,8", "8,", "x", "1,2,3,4,5,6,7,8,9", "257"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(5, (char *[]){"bench", "model", "/nonexistent", "--batches", (char *)bad[i]}, &o), -1);
        assert_int_equal(bench->run(&o), 2);
    }
    assert_int_equal(parse(2, (char *[]){"bench", "model"}, &o), -1);
    assert_int_equal(bench->run(&o), 2); /* no MODEL_DIR */
}

static void test_cost(void **state) {
    (void)state;
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_load(dir, &m), KVC_OK);
    kvc_model_cost c;
    assert_int_equal(kvci_model_cost_of(m, &c), KVC_OK);
    /* qwen3 oracle: H 128, I 256, 4 q / 2 kv heads of 64, 2 layers, vocabulary 512, tied */
    const int64_t H = 128, I = 256, q = 256, kv = 128, L = 2, V = 512;
    assert_int_equal(c.macs_per_token, L * (q * H + 2 * kv * H + H * q + 3 * I * H));
    assert_int_equal(c.lm_head_macs, V * H);
    assert_int_equal(c.attn_macs_per_key, L * 4 * (64 + 64));
    const int64_t mat =
        2 * (kvci_bf16_packed_elems(q, H) + 2 * kvci_bf16_packed_elems(kv, H) + kvci_bf16_packed_elems(H, q) +
             2 * kvci_bf16_packed_elems(I, H) + kvci_bf16_packed_elems(H, I)); /* each a 64-byte multiple already */
    const int64_t vec = 4 * (L * (2 * H + 2 * 64) + H);
    assert_int_equal(c.dense_read_bytes, L * mat + 2 * kvci_bf16_packed_elems(V, H) + vec); /* tied: the embedding */
    assert_int_equal(c.expert_bytes, 0);
    assert_string_equal(c.mlp.dtype, "bf16");
    assert_string_equal(c.lm_head.kernel, kvci_gemm_bf16_active()->name);
    assert_int_equal(kvc_model_set_activations(m, "bf16"), KVC_OK); /* the rounded GEMM's kernel */
    assert_int_equal(kvci_model_cost_of(m, &c), KVC_OK);
    assert_string_equal(c.lm_head.kernel, kvci_gemm_bf16_rounded_active()->name);
    assert_string_equal(c.mlp.kernel, kvci_gemm_bf16_rounded_active()->name);
    kvc_model_destroy(m);
    assert_int_equal(kvci_model_load_as(dir, KVC_WMAT_F32, &m), KVC_OK);
    assert_int_equal(kvci_model_cost_of(m, &c), KVC_OK);
    assert_string_equal(c.attn_proj.dtype, "f32");
    assert_string_equal(c.lm_head.dtype, "f32");
    assert_int_equal(c.dense_read_bytes, L * (q * H + 2 * kv * H + H * q + 3 * I * H) * 4 + V * H * 4 + vec);
    kvc_model_destroy(m);
    /* q4_0: the layers' matrices in Q4_0, the (tied) embedding and head in Q8_0 */
    assert_int_equal(kvci_model_load_as(dir, KVC_WMAT_Q4_0, &m), KVC_OK);
    assert_int_equal(kvci_model_cost_of(m, &c), KVC_OK);
    assert_string_equal(c.attn_proj.dtype, "q4_0");
    assert_string_equal(c.mlp.dtype, "q4_0");
    assert_string_equal(c.lm_head.dtype, "q8_0");
    assert_string_equal(c.lm_head.kernel, kvci_wq_active(KVC_WQ_Q8_0)->name);
    const int64_t qmat = kvci_wq_packed_bytes(KVC_WQ_Q4_0, q, H) + 2 * kvci_wq_packed_bytes(KVC_WQ_Q4_0, kv, H) +
                         kvci_wq_packed_bytes(KVC_WQ_Q4_0, H, q) + 2 * kvci_wq_packed_bytes(KVC_WQ_Q4_0, I, H) +
                         kvci_wq_packed_bytes(KVC_WQ_Q4_0, H, I);
    assert_int_equal(c.dense_read_bytes, L * qmat + kvci_wq_packed_bytes(KVC_WQ_Q8_0, V, H) + vec);
    kvc_model_destroy(m);
    assert_int_equal(kvci_model_load_as(dir, KVC_WMAT_COUNT, &m), KVC_EINVAL);
    assert_null(m);
}

/* The ratio `key` of every line of text holding it: count of them, each finite and positive. */
static int ratios(const char *text, const char *key) {
    int n = 0;
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key), n++) {
        const double v = strtod(p + strlen(key), NULL);
        assert_true(isfinite(v) && v > 0.0);
    }
    return n;
}

/* bench->run(o) with its stdout in out[cap] (NUL-terminated); its status. */
static int run_captured(const kvc_bench_opts *o, char *out, size_t cap) {
    char path[] = "/tmp/kvc_bench_model_XXXXXX";
    const int fd = mkstemp(path), saved = dup(STDOUT_FILENO);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stdout);
    dup2(fd, STDOUT_FILENO);
    const int rc = bench->run(o);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    const ssize_t got = pread(fd, out, cap - 1, 0);
    out[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

static void test_run(void **state) {
    (void)state;
    kvc_bench_opts o;
    assert_int_equal(parse(8, (char *[]){"bench", "model", dir, "--batches", "1,2", "--prompts", "5", "--json"}, &o),
                     -1);
    /* --against: refused before any load when the file is no library or lacks an entry point (the core
     * library has no model); this build's own library (Release builds: a sanitizer runtime refuses
     * RTLD_DEEPBIND) timed in turn, every ratio finite, the tokens the same */
    o.against = dir; /* a directory */
    assert_int_equal(bench->run(&o), 2);
    const char *lib = getenv("KVC_TEST_LIB"), *core = getenv("KVC_TEST_CORE_LIB");
    o.against = core;
    if (core) assert_int_equal(bench->run(&o), 2);
    double s[KVC_SP_PARTS];
    if (lib) { /* each full run measures 1 GiB read passes: the sanitizer build (no lib) runs only the one below */
        o.against = lib;
        static char out[1 << 16];
        assert_int_equal(run_captured(&o, out, sizeof out), 0);
        assert_int_equal(ratios(out, "\"prefill_ratio\":"), 2); /* batches 1 and 2 */
        assert_int_equal(ratios(out, "\"decode_ratio\":"), 2);
        assert_null(strstr(out, "\"tokens\":\"differ\""));
        assert_int_equal(kvci_step_profile_read(KVC_SK_DECODE, s), 0); /* off: no step timed */
        assert_int_equal(kvci_step_profile_read(KVC_SK_PREFILL, s), 0);
    }
    o.against = NULL;
    /* --activations lists are checked after the load, before any run */
    const char *bad_act[] = {"f16", "bf16,bf16", "f32,bf16,f32", ",", ""};
    for (size_t i = 0; i < sizeof bad_act / sizeof bad_act[0]; i++) {
        o.activations = bad_act[i];
        assert_int_equal(bench->run(&o), 2);
    }
    o.activations = NULL;
    /* q8_0 weights (f32 widening: test_cost), profiled. One row: 3 generate calls of 1 prefill + 16 decode
     * steps. */
    o.weights = "q8_0", o.profile = true, o.batches = "2";
    assert_int_equal(bench->run(&o), 0);
    for (int k = 0; k < KVC_SK_KINDS; k++) {
        assert_int_equal(kvci_step_profile_read((kvc_step_kind)k, s), k == KVC_SK_DECODE ? 3 * 16 : 3);
        for (int p = 0; p < KVC_SP_PARTS; p++) assert_true(s[p] >= 0.0);
        assert_true(s[KVC_SP_QKV] > 0.0 && s[KVC_SP_KV_WRITE] > 0.0 && s[KVC_SP_ATTN] > 0.0 && s[KVC_SP_DOWN] > 0.0 &&
                    s[KVC_SP_HEAD] > 0.0);
    }
    assert_string_equal(kvci_step_part_name(KVC_SP_GATE_UP), "gate_up");
}

/* One profiled generate call on the oracle: each kind of step's parts non-negative and their sum
 * within that kind's measured time (the probes run inside the runner's timing of the step); an
 * unprofiled call gives the same logits, bit for bit, and adds nothing to the tables. */
static void test_profile_within(void **state) {
    (void)state;
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_load(dir, &m), KVC_OK);
    kvc_runner_params rp = kvc_runner_default_params();
    enum { B = 2, P = 7, NT = 4, V = 512 }; /* the oracle's vocabulary: test_cost */
    rp.max_new_tokens = NT;
    kvc_runner *r = NULL;
    assert_int_equal(kvc_runner_create(m, &rp, B, P, &r), KVC_OK);
    const int32_t ids[P + 5] = {1, 17, 300, 4, 99, 511, 2, 8, 250, 33, 7, 128};
    const int64_t lens[B] = {P, 5};
    int32_t tokens[2][B * NT];
    static float logits[2][NT * B * V];
    kvc_runner_stats st;
    kvci_step_profile_reset();
    kvci_step_profile_enable(true);
    assert_int_equal(kvc_runner_generate(r, ids, lens, B, tokens[0], logits[0], &st), KVC_OK);
    kvci_step_profile_enable(false);
    const double measured_ms[KVC_SK_KINDS] = {[KVC_SK_DECODE] = st.decode_ms, [KVC_SK_PREFILL] = st.prefill_ms};
    const int64_t steps[KVC_SK_KINDS] = {[KVC_SK_DECODE] = NT - 1, [KVC_SK_PREFILL] = 1};
    double s[KVC_SK_KINDS][KVC_SP_PARTS];
    for (int k = 0; k < KVC_SK_KINDS; k++) {
        assert_int_equal(kvci_step_profile_read((kvc_step_kind)k, s[k]), steps[k]);
        double sum = 0.0;
        for (int p = 0; p < KVC_SP_PARTS; p++) assert_true(s[k][p] >= 0.0), sum += s[k][p];
        assert_true(sum > 0.0 && sum * 1e3 <= measured_ms[k] + 1e-6);
    }
    assert_int_equal(kvc_runner_generate(r, ids, lens, B, tokens[1], logits[1], &st), KVC_OK);
    assert_memory_equal(tokens[0], tokens[1], sizeof tokens[0]);
    assert_memory_equal(logits[0], logits[1], sizeof logits[0]);
    double again[KVC_SP_PARTS];
    for (int k = 0; k < KVC_SK_KINDS; k++) {
        assert_int_equal(kvci_step_profile_read((kvc_step_kind)k, again), steps[k]);
        assert_memory_equal(again, s[k], sizeof again);
    }
    kvc_runner_destroy(r);
    kvc_model_destroy(m);
}

int main(void) {
    const char *data = getenv("KVC_DATA_DIR");
    snprintf(dir, sizeof dir, "%s/oracle/qwen3/bf16", data ? data : "tests/data");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_args), cmocka_unit_test(test_cost),
                                       cmocka_unit_test(test_run), cmocka_unit_test(test_profile_within)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
