/* The one input reader (src/base/read_file.c): regular files only, one size
 * limit for files and standard input alike, messages that name the fault
 * (issue 13 #3, #11, #14). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/internal.h"

static void expect_refused(const char *path, size_t max, const char *text) {
    char *buf = (char *)path;
    size_t len = 1;
    kvc_status st = kvci_read_file(path, max, &buf, &len);
    assert_int_equal(st, KVC_EINVAL);
    assert_null(buf);
    assert_int_equal(len, 0);
    if (strstr(kvc_last_error(), text) == NULL) fail_msg("\"%s\" should say \"%s\"", kvc_last_error(), text);
}

static void test_files(void **state) {
    (void)state;
    char dir[] = "/tmp/kvc_read_XXXXXX", path[64], fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/f", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("0123456789", f);
    fclose(f);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(kvci_read_file(path, 10, &buf, &len), KVC_OK);
    assert_int_equal(len, 10);
    assert_string_equal(buf, "0123456789");
    kvci_free(buf);
    expect_refused(path, 9, "10 bytes, larger than the input limit of 9 bytes");
    expect_refused("/dev/zero", 100, "is a character device; only regular files are read");
    expect_refused(dir, 100, "is a directory");
    snprintf(fifo, sizeof fifo, "%s/p", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    expect_refused(fifo, 100, "is a FIFO"); /* at once: nobody writes to it */
    expect_refused("/nonexistent/x", 100, "cannot open (No such file or directory)");
    unlink(fifo);
    unlink(path);
    rmdir(dir);
}

/* Standard input may be a pipe; it is read to its end under the same limit. */
static void test_stdin(void **state) {
    (void)state;
    int saved = dup(STDIN_FILENO), fds[2];
    assert_true(saved >= 0);
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "{\"a\": 1}", 8), 8);
    close(fds[1]);
    dup2(fds[0], STDIN_FILENO);
    close(fds[0]);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(kvci_read_file("-", 100, &buf, &len), KVC_OK);
    assert_string_equal(buf, "{\"a\": 1}");
    kvci_free(buf);

    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "0123456789", 10), 10);
    close(fds[1]);
    dup2(fds[0], STDIN_FILENO);
    close(fds[0]);
    expect_refused("-", 9, "stdin: larger than the input limit of 9 bytes");
    dup2(saved, STDIN_FILENO);
    close(saved);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_files), cmocka_unit_test(test_stdin)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
