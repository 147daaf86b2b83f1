/* The allocation hook (src/base/alloc.c): counts, the one-shot injected
 * failure, and the rule that makes the walk in test_alloc_failures complete:
 * no file of the library or the command allocates past the hook. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/internal.h"
#include "kvc_test_util.h"

static void test_fail_at(void **state) {
    (void)state;
    uint64_t failures = kvci_alloc_failures();
    kvci_alloc_fail_at(2);
    void *a = kvci_malloc(8), *b = kvci_calloc(2, 8), *c = kvci_realloc(NULL, 8);
    void *d = NULL;
    assert_int_equal(kvc_aligned_alloc(64, 64, &d), KVC_OK);
    assert_non_null(a);
    assert_null(b); /* the second call only */
    assert_non_null(c);
    assert_non_null(d);
    assert_int_equal(kvci_alloc_calls(), 4);
    assert_int_equal(kvci_alloc_failures(), failures + 1);
    kvci_alloc_fail_at(1);
    void *e = NULL;
    assert_int_equal(kvc_aligned_alloc(64, 64, &e), KVC_ENOMEM);
    assert_null(e);
    kvci_alloc_fail_at(1);
    assert_null(kvci_strdup("x"));
    kvci_alloc_fail_at(0);
    char *s = kvci_strdup("abc");
    assert_string_equal(s, "abc");
    kvci_free(s);
    kvci_free(a), kvci_free(c), kvc_aligned_free(d);
}

/* Name of a raw allocation call in line (not preceded by an identifier
 * character or a member access), or NULL. */
static const char *raw_call(const char *line) {
    static const char *const names[] = {"malloc(", "calloc(",        "realloc(",        "strdup(",
                                        "free(",   "aligned_alloc(", "posix_memalign(", NULL};
    for (int i = 0; names[i] != NULL; i++)
        for (const char *p = strstr(line, names[i]); p != NULL; p = strstr(p + 1, names[i])) {
            char before = p > line ? p[-1] : ' ';
            bool ident = (before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') ||
                         (before >= '0' && before <= '9') || before == '_' || before == '.' || before == '>';
            if (!ident) return names[i];
        }
    return NULL;
}

static int scan_dir(const char *dir, int depth) {
    int found = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t n = strlen(e->d_name);
        if (depth < 3 && strchr(e->d_name, '.') == NULL) {
            found += scan_dir(path, depth + 1);
            continue;
        }
        if (n < 2 || (strcmp(e->d_name + n - 2, ".c") != 0 && strcmp(e->d_name + n - 2, ".h") != 0)) continue;
        if (strcmp(e->d_name, "alloc.c") == 0) continue; /* the hook itself */
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        char line[4096];
        for (int no = 1; fgets(line, sizeof line, f) != NULL; no++) {
            const char *call = raw_call(line);
            if (call != NULL) {
                print_error("%s:%d: %s outside the allocation hook (use kvc_%s)\n", path, no, call, call);
                found++;
            }
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

static void test_no_raw_allocation(void **state) {
    (void)state;
    const char *data = getenv("KVC_DATA_DIR");
    assert_non_null(data);
    char dir[1024];
    int found = 0;
    static const char *const folders[] = {"src", "tools", "cli"};
    for (size_t i = 0; i < sizeof folders / sizeof *folders; i++) {
        snprintf(dir, sizeof dir, "%s/../../%s", data, folders[i]);
        found += scan_dir(dir, 0);
    }
    assert_int_equal(found, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fail_at), cmocka_unit_test(test_no_raw_allocation)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
