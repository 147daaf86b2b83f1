/* The `kvcache` command agrees with itself (issue 27 #3): `plan` takes every
 * KV dtype the runtime stores and a model directory as `run` does, `demo`
 * has --json, and `kvcache --help` lists every benchmark of the table that
 * dispatches them; `plan` speaks plainly before it speaks the operator's
 * language (#4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "bench.h"
#include "commands.h"
#include "kvc_test_util.h"

#define RUN(...)                                                                                                       \
    kvc_test_run_command((char *const[]){__VA_ARGS__, NULL}, (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)), 0)

static void test_plan_takes_every_kv_dtype_the_runtime_stores(void **state) {
    (void)state;
    char dir[512];
    kvc_test_oracle_dir("qwen3", dir, sizeof dir);
    int stored = 0;
    for (int d = 0; d < KVC_DTYPE_COUNT; d++) {
        char name[32], want[64];
        snprintf(name, sizeof name, "%s", kvc_dtype_name((kvc_dtype)d));
        kvc_test_command_result r = RUN("plan", dir, "--kv-dtype", name);
        if (kvc_model_kv_dtype_ok((kvc_dtype)d)) {
            snprintf(want, sizeof want, "kv dtype %s,", name);
            if (r.rc != 0 || strstr(r.out, want) == NULL) fail_msg("plan --kv-dtype %s: rc %d\n%s", name, r.rc, r.out);
            stored++;
        } else if (r.rc != 2 || strstr(r.out, "--kv-dtype expects") == NULL) {
            fail_msg("plan --kv-dtype %s (not a KV dtype): rc %d\n%s", name, r.rc, r.out);
        }
        free(r.out);
    }
    assert_int_equal(stored, 6); /* f32, f16, bf16, i8, fp8_e4m3, fp8_e5m2 */
    kvc_test_command_result alias = RUN("plan", dir, "--kv-dtype", "fp8");
    assert_int_equal(alias.rc, 0);
    assert_non_null(strstr(alias.out, "kv dtype fp8_e4m3,"));
    /* 1-byte KV needs 32-element alignment (AO 3.13): block size 16 falls back to contiguous caches */
    kvc_test_command_result small = RUN("plan", dir, "--kv-dtype", "fp8", "--block-size", "16", "--json");
    assert_int_equal(small.rc, 0);
    assert_non_null(strstr(small.out, "\"kv_mode\":\t\"legacy\""));
    free(alias.out);
    free(small.out);
}

static void test_plan_reads_a_model_directory(void **state) {
    (void)state;
    char dir[512], config[600];
    kvc_test_oracle_dir("qwen3", dir, sizeof dir);
    snprintf(config, sizeof config, "%s/config.json", dir);
    kvc_test_command_result by_dir = RUN("plan", dir, "--json"), by_file = RUN("plan", config, "--json");
    assert_int_equal(by_dir.rc, 0);
    assert_int_equal(by_file.rc, 0);
    assert_string_equal(by_dir.out, by_file.out);
    free(by_dir.out);
    free(by_file.out);
    /* a directory without config.json names the file it looked for */
    char empty[] = "/tmp/kvc_plan_dir_XXXXXX";
    assert_non_null(mkdtemp(empty));
    kvc_test_command_result none = RUN("plan", empty);
    char want[64];
    snprintf(want, sizeof want, "%s/config.json", empty);
    assert_int_equal(none.rc, 2);
    if (strstr(none.out, want) == NULL) fail_msg("no mention of %s in:\n%s", want, none.out);
    free(none.out);
    rmdir(empty);
}

/* `plan` prints plain words first and the seed operator's parameters after, under their own heading. */
static void test_plan_text_speaks_plainly_first(void **state) {
    (void)state;
    char config[600];
    const char *data = getenv("KVC_DATA_DIR");
    assert_non_null(data);
    snprintf(config, sizeof config, "%s/configs/gpt-oss-20b.json", data);
    kvc_test_command_result r = RUN("plan", config, "--block-size", "16");
    assert_int_equal(r.rc, 0);
    const char *porting = strstr(r.out, "\noperator parameters (for porting");
    if (porting == NULL) fail_msg("no operator section:\n%s", r.out);
    const char *plain[] = {"caches       paged: blocks of 16 tokens", "sliding window of 128 keys on 12 layers",
                           "  0-22/2    sliding window of 128, sinks", "  1-23/2    causal, sinks"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        const char *at = strstr(r.out, plain[i]);
        if (at == NULL || at > porting) fail_msg("\"%s\" not before the operator section:\n%s", plain[i], r.out);
    }
    const char *jargon[] = {"sparse_mode", "pre/next", "fa_version", "kv_mode", "TND"};
    for (size_t i = 0; i < sizeof jargon / sizeof jargon[0]; i++) {
        const char *at = strstr(r.out, jargon[i]);
        if (at == NULL || at < porting) fail_msg("\"%s\" not (only) in the operator section:\n%s", jargon[i], r.out);
    }
    free(r.out);
}

static void test_demo_json_is_one_object_with_every_model(void **state) {
    (void)state;
    /* one request per model: 4 took 11 s of the sanitizer build's CPU (the first request's prompt is 12
     * tokens, the second's 208), and the object's shape is the same */
    kvc_test_command_result r = RUN("demo", "--json", "--requests", "1");
    cJSON *doc = cJSON_Parse(r.out);
    if (doc == NULL) fail_msg("demo --json printed no JSON:\n%s", r.out);
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(doc, "models");
    assert_int_equal(cJSON_GetArraySize(models), 3);
    const cJSON *m;
    cJSON_ArrayForEach(m, models) {
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(m, "requests")->valueint, 1);
        assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(m, "peak_blocks")));
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "ttft_ms_p50_p90_p99")), 3);
    }
    const cJSON *pass = cJSON_GetObjectItemCaseSensitive(doc, "pass");
    assert_true(cJSON_IsBool(pass));
    assert_int_equal(r.rc, cJSON_IsTrue(pass) ? 0 : 1);
    cJSON_Delete(doc);
    free(r.out);
    /* --json before --trace reaches the trace demo (JSON Lines) */
    kvc_test_command_result t = RUN("demo", "--json", "--trace");
    assert_int_equal(t.rc, 0);
    assert_true(t.out[0] == '{');
    free(t.out);
}

/* `run` takes its KV dtype from the checkpoint unless --kv-dtype says otherwise (issue 27 #2), and
 * says what it loads. */
static void test_run_kv_dtype_defaults_to_the_checkpoints(void **state) {
    (void)state;
    const struct {
        const char *sub, *want;
        char *flag;
    } cases[] = {{"", "kv cache f32:", NULL},
                 {"/bf16", "kv cache bf16:", NULL},
                 {"/f16", "kv cache f16:", NULL},
                 {"/bf16", "kv cache f32:", "f32"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char base[512], dir[600];
        kvc_test_oracle_dir("qwen3", base, sizeof base);
        snprintf(dir, sizeof dir, "%s%s", base, cases[i].sub);
        kvc_test_command_result r = cases[i].flag ? RUN("run", dir, "--prompt-ids", "1,2,3", "--max-new-tokens", "2",
                                                        "--kv-dtype", cases[i].flag)
                                                  : RUN("run", dir, "--prompt-ids", "1,2,3", "--max-new-tokens", "2");
        if (r.rc != 0 || strstr(r.out, cases[i].want) == NULL || strstr(r.out, "kvcache run: loading ") == NULL ||
            strstr(r.out, "kvcache run: loaded qwen3 (2 layers") == NULL)
            fail_msg("run %s --kv-dtype %s: rc %d, wanted \"%s\" and the loading lines in:\n%s", dir,
                     cases[i].flag ? cases[i].flag : "(default)", r.rc, cases[i].want, r.out);
        free(r.out);
    }
}

/* The comma-separated ids of output line `which` that starts with a digit (runner and engine print
 * them so), or of every "B: ID" line of prompt `which` (--stream), into ids; their count. */
static int output_ids(const char *out, int which, bool stream, int *ids, int cap) {
    int n = 0, line = 0;
    for (const char *at = out; *at != '\0' && n < cap; at = strchr(at, '\n') ? strchr(at, '\n') + 1 : "") {
        int b = 0, id = 0, used = 0;
        if (stream) {
            if (sscanf(at, "%d: %d%n", &b, &id, &used) == 2 && b == which) ids[n++] = id;
        } else if (*at >= '0' && *at <= '9' && line++ == which) {
            for (const char *c = at; n < cap && sscanf(c, "%d%n", &id, &used) == 1; c += used + (c[used] == ',')) {
                ids[n++] = id;
                if (c[used] != ',') break;
            }
        }
    }
    return n;
}

/* --stream, the sampling flags and --eos run through the engine: greedy, it gives the runner's ids
 * as they come; --eos stops a prompt; a seed fixes the samples; a config's eos_token_id ends the
 * runner's output (issue 27 #2). */
static void test_run_streams_samples_and_stops(void **state) {
    (void)state;
    char dir[512];
    kvc_test_oracle_dir("qwen3", dir, sizeof dir);
    int want[2][6], got[6];
    kvc_test_command_result runner =
        RUN("run", dir, "--prompt-ids", "1,2,3", "--prompt-ids", "5,6", "--max-new-tokens", "6");
    kvc_test_command_result stream =
        RUN("run", dir, "--prompt-ids", "1,2,3", "--prompt-ids", "5,6", "--max-new-tokens", "6", "--stream");
    assert_int_equal(runner.rc, 0);
    assert_int_equal(stream.rc, 0);
    for (int b = 0; b < 2; b++) {
        assert_int_equal(output_ids(runner.out, b, false, want[b], 6), 6);
        assert_int_equal(output_ids(stream.out, b, true, got, 6), 6);
        assert_memory_equal(got, want[b], sizeof got);
    }
    assert_non_null(strstr(stream.out, "prompt 1: 6 tokens, stopped by max_new_tokens"));
    int first_new = 1; /* the first id of prompt 0 that differs from its first: the eos below */
    while (first_new < 5 && want[0][first_new] == want[0][0]) first_new++;
    char eos[16];
    snprintf(eos, sizeof eos, "%d", want[0][first_new]);
    kvc_test_command_result stop = RUN("run", dir, "--prompt-ids", "1,2,3", "--max-new-tokens", "6", "--eos", eos);
    assert_int_equal(stop.rc, 0);
    assert_int_equal(output_ids(stop.out, 0, false, got, 6), first_new + 1); /* up to the eos, included */
    assert_non_null(strstr(stop.out, "stopped by eos"));
    kvc_test_command_result s1 = RUN("run", dir, "--prompt-ids", "39,287,494", "--temperature", "1.5", "--seed", "9");
    kvc_test_command_result s2 = RUN("run", dir, "--prompt-ids", "39,287,494", "--temperature", "1.5", "--seed", "9");
    assert_int_equal(s1.rc, 0);
    assert_string_equal(s1.out, s2.out);
    kvc_test_command_result bad = RUN("run", dir, "--prompt-ids", "1", "--top-p", "0");
    assert_int_equal(bad.rc, 2);
    assert_non_null(strstr(bad.out, "--top-p 0: "));
    /* vLLM's options: a repetition penalty moves a greedy run off the runner's ids, min-tokens holds --eos back */
    kvc_test_command_result pen =
        RUN("run", dir, "--prompt-ids", "1,2,3", "--max-new-tokens", "6", "--repetition-penalty", "2");
    assert_int_equal(pen.rc, 0);
    assert_int_equal(output_ids(pen.out, 0, false, got, 6), 6);
    assert_memory_not_equal(got, want[0], sizeof got);
    kvc_test_command_result held =
        RUN("run", dir, "--prompt-ids", "1,2,3", "--max-new-tokens", "6", "--eos", eos, "--min-tokens", "6");
    assert_int_equal(held.rc, 0);
    assert_int_equal(output_ids(held.out, 0, false, got, 6), 6);
    kvc_test_command_result worse = RUN("run", dir, "--prompt-ids", "1", "--presence-penalty", "3");
    assert_int_equal(worse.rc, 2);
    assert_non_null(strstr(worse.out, "presence_penalty"));
    kvc_test_command_result *added[] = {&pen, &held, &worse};
    for (size_t i = 0; i < sizeof added / sizeof added[0]; i++) free(added[i]->out);
    kvc_test_command_result json = RUN("run", dir, "--prompt-ids", "1", "--stream", "--json");
    assert_int_equal(json.rc, 2);
    assert_non_null(strstr(json.out, "no --json"));
    kvc_test_command_result *all[] = {&runner, &stream, &stop, &s1, &s2, &bad, &json};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->out);

    /* the model's eos_token_id (config.json) ends the runner's output too */
    char tmp[] = "/tmp/kvc_run_eos_XXXXXX", path[600], target[600];
    assert_non_null(mkdtemp(tmp));
    snprintf(target, sizeof target, "%s/model.safetensors", dir);
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    assert_int_equal(symlink(target, path), 0);
    char *config = kvc_test_read_text((snprintf(target, sizeof target, "%s/config.json", dir), target));
    char *null_eos = strstr(config, "\"eos_token_id\": null");
    assert_non_null(null_eos);
    snprintf(path, sizeof path, "%s/config.json", tmp);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%.*s\"eos_token_id\": [%d, 7]%s", (int)(null_eos - config), config, want[0][first_new],
            null_eos + strlen("\"eos_token_id\": null"));
    fclose(f);
    kvc_test_command_result model_eos = RUN("run", tmp, "--prompt-ids", "1,2,3", "--max-new-tokens", "6");
    assert_int_equal(model_eos.rc, 0);
    assert_int_equal(output_ids(model_eos.out, 0, false, got, 6), first_new + 1);
    free(model_eos.out);
    free(config);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    unlink(path);
    rmdir(tmp);
}

static void test_help_lists_every_benchmark(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    kvc_commands_usage(f);
    fclose(f);
    int n = 0;
    for (const kvc_bench_entry *b = kvc_benches; b->name != NULL; b++, n++) {
        char line[256];
        snprintf(line, sizeof line, "\n  %-10s %s\n", b->name, b->summary);
        if (strstr(text, line) == NULL) fail_msg("kvcache --help lacks the benchmark %s:\n%s", b->name, text);
    }
    assert_true(n >= 6);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_takes_every_kv_dtype_the_runtime_stores),
        cmocka_unit_test(test_plan_reads_a_model_directory),
        cmocka_unit_test(test_plan_text_speaks_plainly_first),
        cmocka_unit_test(test_demo_json_is_one_object_with_every_model),
        cmocka_unit_test(test_run_kv_dtype_defaults_to_the_checkpoints),
        cmocka_unit_test(test_run_streams_samples_and_stops),
        cmocka_unit_test(test_help_lists_every_benchmark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
