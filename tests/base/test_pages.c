/* Large-buffer allocation on 2 MiB boundaries with page advice
 * (kvci_pages_alloc, src/base/alloc.c; the probe of KVCI_PAGES_PROBED,
 * src/base/pages_probe.c) and the huge-page count read from an smaps file
 * (src/base/pages_resident.c). */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "kvc_test_util.h"

#include "base/internal.h"

static void test_rounding(void **state) {
    (void)state;
    assert_int_equal(kvci_pages_round(0), KVCI_HUGE_PAGE);
    assert_int_equal(kvci_pages_round(1), KVCI_HUGE_PAGE);
    assert_int_equal(kvci_pages_round(KVCI_HUGE_PAGE), KVCI_HUGE_PAGE);
    assert_int_equal(kvci_pages_round(KVCI_HUGE_PAGE + 1), 2 * KVCI_HUGE_PAGE);
    assert_int_equal(kvci_pages_round(SIZE_MAX - 5), 0);
}

static void test_alignment_zero_fill_and_advice(void **state) {
    (void)state;
    const kvci_page_advice advice[2] = {KVCI_PAGES_HUGE, KVCI_PAGES_BASE};
    for (int a = 0; a < 2; a++) {
        const size_t size = KVCI_HUGE_PAGE + 4096;
        void *p = NULL;
        bool advised = !kvc_test_kernel_has_thp();
        assert_int_equal(kvci_pages_alloc(size, advice[a], &advised, &p), KVC_OK);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % KVCI_HUGE_PAGE, 0);
#if defined(__linux__)
        assert_true(advised == kvc_test_kernel_has_thp());
#endif
        assert_true(kvc_test_zero_bytes(p, kvci_pages_round(size))); /* the whole rounded mapping is usable */
        memset(p, 0x5a, kvci_pages_round(size));
        kvci_pages_free(p, size);
    }
    kvci_pages_free(NULL, 0);
}

static void test_refused_advice_falls_back(void **state) {
    (void)state;
    kvci_pages_refuse_advice(true);
    void *p = NULL;
    bool advised = true;
    assert_int_equal(kvci_pages_alloc(3 * KVCI_HUGE_PAGE, KVCI_PAGES_HUGE, &advised, &p), KVC_OK);
    kvci_pages_refuse_advice(false);
    assert_false(advised);
    assert_int_equal((uintptr_t)p % KVCI_HUGE_PAGE, 0);
    memset(p, 1, 3 * KVCI_HUGE_PAGE);
    kvci_pages_free(p, 3 * KVCI_HUGE_PAGE);
}

static void test_failure_injection(void **state) {
    (void)state;
    uint64_t failures = kvci_alloc_failures();
    kvci_alloc_fail_at(1);
    void *p = (void *)&p;
    bool advised = true;
    assert_int_equal(kvci_pages_alloc(KVCI_HUGE_PAGE, KVCI_PAGES_HUGE, &advised, &p), KVC_ENOMEM);
    assert_null(p);
    assert_false(advised);
    assert_int_equal(kvci_alloc_calls(), 1);
    assert_int_equal(kvci_alloc_failures(), failures + 1);
    assert_non_null(strstr(kvc_last_error(), "cannot map 2097152 bytes"));
    assert_int_equal(kvci_pages_alloc(SIZE_MAX - 5, KVCI_PAGES_HUGE, &advised, &p), KVC_ENOMEM);
    assert_non_null(strstr(kvc_last_error(), "overflows"));
    kvci_alloc_fail_at(0);
}

/* Writes text to a temporary file; its path into path[n]. */
static void temp_file(const char *text, char *path, size_t n) {
    snprintf(path, n, "/tmp/kvc_smaps_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Mappings overlapping a buffer count once each, whole; others not at all. */
static void test_smaps_sum(void **state) {
    (void)state;
    char path[64];
    temp_file("00400000-00600000 r-xp 00000000 08:01 123   /usr/bin/x\n"
              "Size:               2048 kB\n"
              "AnonHugePages:      2048 kB\n"
              "7f0000000000-7f0000800000 rw-p 00000000 00:00 0\n"
              "Size:               8192 kB\n"
              "AnonHugePages:      4096 kB\n"
              "ShmemPmdMapped:        0 kB\n"
              "7f0000800000-7f0000a00000 rw-p 00000000 00:00 0\n"
              "AnonHugePages:      2048 kB\n"
              "7f0001000000-7f0001400000 rw-p 00000000 00:00 0\n"
              "AnonHugePages:      4096 kB\n"
              "VmFlags: rd wr mr mw me ac hg\n",
              path, sizeof path);
    const void *ptrs[3] = {(const void *)(uintptr_t)0x7f0000100000, (const void *)(uintptr_t)0x7f00007ff000, NULL};
    const size_t sizes[3] = {0x100000, 0x2000, 0x1000};
    assert_int_equal(kvci_pages_huge_resident(path, ptrs, sizes, 3), (4096 + 2048) * 1024);
    assert_int_equal(kvci_pages_huge_resident(path, ptrs, sizes, 1), 4096 * 1024);
    const void *none[1] = {(const void *)(uintptr_t)0x7f0000a00000};
    assert_int_equal(kvci_pages_huge_resident(path, none, (const size_t[]){0x600000}, 1), 0); /* ends at the next one */
    unlink(path);
    temp_file("", path, sizeof path);
    assert_int_equal(kvci_pages_huge_resident(path, ptrs, sizes, 1), -1);
    unlink(path);
    assert_int_equal(kvci_pages_huge_resident("/nonexistent/smaps", ptrs, sizes, 1), -1);
}

/* The process's own smaps: a written BASE mapping holds no huge page. */
static void test_own_smaps(void **state) {
    (void)state;
#if defined(__linux__)
    void *p = NULL;
    bool advised = false;
    const size_t size = 2 * KVCI_HUGE_PAGE;
    assert_int_equal(kvci_pages_alloc(size, KVCI_PAGES_BASE, &advised, &p), KVC_OK);
    memset(p, 1, size);
    const void *ptrs[1] = {p};
    int64_t huge = kvci_pages_huge_resident(NULL, ptrs, &size, 1);
    assert_true(huge >= 0);
    if (advised) assert_int_equal(huge, 0);
    kvci_pages_free(p, size);
#else
    skip();
#endif
}

/* KVCI_PAGES_PROBED: the huge-page advice kept where every chunk of the first touch is fast
 * (threshold 0), the pages past the first chunk on 4 KiB pages where it is slow (INFINITY): none of
 * them huge once written; zero-filled either way. */
static void test_probed(void **state) {
    (void)state;
#if defined(__linux__)
    const size_t chunk = KVCI_PAGES_PROBE_PAGES * KVCI_HUGE_PAGE, size = chunk + 2 * KVCI_HUGE_PAGE;
    const double threshold[2] = {0.0, INFINITY};
    for (int i = 0; i < 2; i++) {
        void *p = NULL;
        bool advised = i == 1;
        kvci_pages_probe_threshold(threshold[i]);
        assert_int_equal(kvci_pages_alloc(size, KVCI_PAGES_PROBED, &advised, &p), KVC_OK);
        kvci_pages_probe_threshold(-1.0);
        assert_true(advised == (i == 0 && kvc_test_kernel_has_thp()));
        assert_true(kvc_test_zero_bytes(p, size));
        memset(p, 1, size);
        const void *rest[1] = {(char *)p + chunk};
        const size_t rest_size = size - chunk;
        if (i == 1 && kvc_test_kernel_has_thp())
            assert_int_equal(kvci_pages_huge_resident(NULL, rest, &rest_size, 1), 0);
        kvci_pages_free(p, size);
    }
#else
    skip();
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_alignment_zero_fill_and_advice),
        cmocka_unit_test(test_refused_advice_falls_back),
        cmocka_unit_test(test_failure_injection),
        cmocka_unit_test(test_smaps_sum),
        cmocka_unit_test(test_own_smaps),
        cmocka_unit_test(test_probed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
