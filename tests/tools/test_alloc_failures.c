/* Allocation-failure walk (issue 13): every allocation of the library, the
 * command and cJSON goes through kvci_malloc & co., and kvci_alloc_fail_at(N)
 * makes the N-th one fail. Each scenario runs a `kvcache` command in process
 * once unhurt, then with allocation N failing for N = 1, 2, ... (every one
 * up to DENSE, then in even steps so that a scenario stays within POINTS
 * runs). With allocation N failed the command either ends with a non-zero
 * status and a message that says memory ran out, and nothing that claims
 * success, or it succeeds with exactly the unhurt output. The ASan build
 * checks that nothing leaks on the way (LeakSanitizer at exit). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/internal.h"
#include "commands.h"
#include "kvc_test_util.h"

#ifdef KVC_TEST_ASAN
#define DENSE  200
#define POINTS 600
#else
#define DENSE  4000
#define POINTS 8000
#endif

/* Words a failed run must not print, whatever the command (a trace's op
 * lines before the failure are progress, not a verdict). */
static bool claims_success(const char *out) {
    return strstr(out, "PASS") != NULL || strstr(out, "invariants held") != NULL;
}

static bool says_out_of_memory(const char *out) {
    return strstr(out, "out of memory") != NULL || strstr(out, "out of host memory") != NULL ||
           strstr(out, "cannot allocate") != NULL;
}

static void walk(const char *line) {
    char args[1024], *argv[16], *save = NULL;
    int argc = 0;
    const char *data = getenv("KVC_DATA_DIR"), *examples = getenv("KVC_EXAMPLES_DIR");
    assert_non_null(data);
    assert_non_null(examples);
    size_t n = 0;
    for (const char *s = line; *s != '\0' && n + 1 < sizeof args;) {
        const char *rep = strncmp(s, "{data}", 6) == 0 ? data : strncmp(s, "{examples}", 10) == 0 ? examples : NULL;
        if (rep != NULL) {
            n += (size_t)snprintf(args + n, sizeof args - n, "%s", rep);
            s += s[1] == 'd' ? 6 : 10;
        } else {
            args[n++] = *s++;
        }
    }
    args[n] = '\0';
    for (char *a = strtok_r(args, " ", &save); a != NULL && argc < 15; a = strtok_r(NULL, " ", &save)) argv[argc++] = a;
    argv[argc] = NULL;

    kvc_test_command_result clean = kvc_test_run_command(argv, argc, 0);
    if (clean.rc != 0) fail_msg("\"%s\" fails without injection: %s", line, clean.out);
    uint64_t total = clean.calls;
    assert_true(total > 0);
    uint64_t step = total > DENSE ? (total - DENSE + (POINTS - DENSE) - 1) / (POINTS - DENSE) : 1;
    if (step < 1) step = 1;
    int runs = 0;
    for (uint64_t at = 1; at <= total; at += at < DENSE ? 1 : step, runs++) {
        kvc_test_command_result r = kvc_test_run_command(argv, argc, at);
        if (r.calls < at)
            fail_msg("\"%s\": allocation %llu was not reached on a second run (%llu calls)", line,
                     (unsigned long long)at, (unsigned long long)r.calls);
        if (r.rc == 0) {
            if (strcmp(r.out, clean.out) != 0)
                fail_msg("\"%s\" with allocation %llu failed: exit 0 but the output differs:\n%s", line,
                         (unsigned long long)at, r.out);
        } else if (!says_out_of_memory(r.out) || claims_success(r.out)) {
            fail_msg("\"%s\" with allocation %llu failed: exit %d, output:\n%s", line, (unsigned long long)at, r.rc,
                     r.out);
        }
        free(r.out);
    }
    print_message("%s: %llu allocations, %d failed one at a time\n", line, (unsigned long long)total, runs);
    free(clean.out);
}

static void test_trace(void **state) {
    (void)state;
    walk("trace {examples}/hybrid_pressure.json --usage --check");
}

static void test_demo_trace(void **state) {
    (void)state;
    walk("demo --trace");
}

static void test_plan(void **state) {
    (void)state;
    walk("plan {data}/configs/Qwen3-8B.json");
    walk("plan {data}/configs/DeepSeek-R1.json --json");
}

static void test_run(void **state) {
    (void)state;
    walk("run {data}/oracle/qwen3 --prompt-ids 1,2,3 --prompt-ids 4 --max-new-tokens 2");
    walk("run {data}/oracle/gpt_oss --prompt-ids 1,2,3 --max-new-tokens 2");
    walk("run {data}/oracle/deepseek_v3 --prompt-ids 1,2,3 --max-new-tokens 2 --mode 3");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_demo_trace),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
