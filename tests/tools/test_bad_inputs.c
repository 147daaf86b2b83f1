/* The bad-input corpus of tests/data/bad (cases.tsv): every case runs a
 * `kvcache` command in a child process and must end with the listed exit
 * status and message, without claiming success. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "commands.h"
#include "kvc_test_util.h"

#define MAX_ARGS     32
#define CASE_SECONDS 20

/* dst = src with {bad}, {oracle} and {tmp} replaced. */
static void expand(const char *src, const char *bad, const char *oracle, const char *tmp, char *dst, size_t cap) {
    size_t n = 0;
    while (*src != '\0' && n + 1 < cap) {
        const char *rep = NULL;
        size_t skip = 0;
        if (strncmp(src, "{bad}", 5) == 0) rep = bad, skip = 5;
        if (strncmp(src, "{oracle}", 8) == 0) rep = oracle, skip = 8;
        if (strncmp(src, "{tmp}", 5) == 0) rep = tmp, skip = 5;
        if (rep != NULL) {
            n += (size_t)snprintf(dst + n, cap - n, "%s", rep);
            src += skip;
        } else {
            dst[n++] = *src++;
        }
    }
    dst[n < cap ? n : cap - 1] = '\0';
}

/* Runs `kvcache argv...` in a child with stdout/stderr in out_path (stdout
 * to /dev/full when full_stdout); returns its exit status, or -signal. */
static int run_child(int argc, char **argv, const char *out_path, bool full_stdout) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(CASE_SECONDS);
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int out = full_stdout ? open("/dev/full", O_WRONLY) : fd;
        if (fd < 0 || out < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(99);
        for (const kvc_command *c = kvc_commands; c->name != NULL; c++)
            if (strcmp(c->name, argv[0]) == 0) {
                int rc = c->run(argc, argv);
                fflush(stdout);
                _exit(rc);
            }
        _exit(98);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) assert_int_equal(errno, EINTR);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

static void test_corpus(void **state) {
    (void)state;
    const char *data = getenv("KVC_DATA_DIR");
    assert_non_null(data);
    char bad[1024], oracle[1024], tmp[] = "/tmp/kvc_bad_XXXXXX", path[1200], out_path[1200];
    snprintf(bad, sizeof bad, "%s/bad", data);
    snprintf(oracle, sizeof oracle, "%s/oracle", data);
    assert_non_null(mkdtemp(tmp));
    snprintf(path, sizeof path, "%s/fifo", tmp);
    assert_int_equal(mkfifo(path, 0600), 0);
    /* a model directory whose weights file is a FIFO nobody writes to */
    snprintf(path, sizeof path, "%s/fifo_model", tmp);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/fifo_model/model.safetensors", tmp);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(path, sizeof path, "%s/fifo_model/config.json", tmp);
    snprintf(out_path, sizeof out_path, "%s/run_ok/config.json", bad);
    assert_int_equal(symlink(out_path, path), 0);
    snprintf(out_path, sizeof out_path, "%s/out.txt", tmp);
    snprintf(path, sizeof path, "%s/cases.tsv", bad);
    char *cases = kvc_test_read_text(path);
    int n_cases = 0;
    for (char *line = strtok(cases, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 != NULL ? strchr(tab1 + 1, '\t') : NULL;
        assert_non_null(tab2);
        *tab1 = *tab2 = '\0';
        int want_rc = atoi(line);
        const char *want_text = tab1 + 1;
        char args[4096], *argv[MAX_ARGS + 1], *save = NULL;
        expand(tab2 + 1, bad, oracle, tmp, args, sizeof args);
        int argc = 0;
        bool full = false;
        for (char *a = strtok_r(args, " ", &save); a != NULL; a = strtok_r(NULL, " ", &save)) {
            if (strcmp(a, ">/dev/full") == 0)
                full = true;
            else if (argc < MAX_ARGS)
                argv[argc++] = strcmp(a, "{empty}") == 0 ? "" : a;
        }
        argv[argc] = NULL;
        int rc = run_child(argc, argv, out_path, full);
        char *got = kvc_test_read_text(out_path);
        if (rc != want_rc || strstr(got, want_text) == NULL || strstr(got, "PASS") != NULL ||
            strstr(got, "\"ok\": true") != NULL)
            fail_msg("case \"%s\": exit %d (want %d), output:\n%s\nwanted text: %s", tab2 + 1, rc, want_rc, got,
                     want_text);
        free(got);
        n_cases++;
    }
    free(cases);
    assert_true(n_cases > 10);
    snprintf(path, sizeof path, "rm -rf %s", tmp);
    assert_int_equal(system(path), 0);
}

/* The id cap names ids, the prompt cap prompts (both refused before the
 * model is read). */
static void test_prompt_caps(void **state) {
    (void)state;
    char tmp[] = "/tmp/kvc_caps_XXXXXX", out_path[64];
    assert_non_null(mkdtemp(tmp));
    snprintf(out_path, sizeof out_path, "%s/out.txt", tmp);
    size_t cap = 65537 * 2 + 1;
    char *ids = malloc(cap), arg0[] = "run", dir[] = "no_model", flag[] = "--prompt-ids";
    assert_non_null(ids);
    for (size_t i = 0; i < 65537; i++) memcpy(ids + 2 * i, "1,", 2);
    ids[cap - 2] = '\0';
    char *argv[] = {arg0, dir, flag, ids, NULL};
    assert_int_equal(run_child(4, argv, out_path, false), 2);
    char *got = kvc_test_read_text(out_path);
    assert_non_null(strstr(got, "at most 65536 prompt ids in all prompts together"));
    free(got);
    char one[] = "1", *many[2 + 2 * 65 + 1] = {arg0, dir};
    for (int i = 0; i < 65; i++) many[2 + 2 * i] = flag, many[3 + 2 * i] = one;
    assert_int_equal(run_child(2 + 2 * 65, many, out_path, false), 2);
    got = kvc_test_read_text(out_path);
    assert_non_null(strstr(got, "at most 64 prompts (--prompt-ids)"));
    free(got);
    free(ids);
    unlink(out_path);
    rmdir(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_corpus), cmocka_unit_test(test_prompt_caps)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
