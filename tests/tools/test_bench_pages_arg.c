/* `kvcache bench attention --pages 4k|2m|both`: parsed into the options,
 * refused with status 2 for another value, a missing value or another
 * benchmark. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bench.h"

static int parse(int argc, char **argv, kvc_bench_opts *opts) {
    const kvc_bench_entry *bench = NULL;
    return kvc_bench_parse(argc, argv, &bench, opts);
}

static void test_pages_values(void **state) {
    (void)state;
    kvc_bench_opts o;
    assert_int_equal(parse(2, (char *[]){"bench", "attention"}, &o), -1);
    assert_int_equal(o.pages, KVC_BENCH_PAGES_2M); /* the library's default */
    const char *values[3] = {"4k", "2m", "both"};
    const kvc_bench_pages want[3] = {KVC_BENCH_PAGES_4K, KVC_BENCH_PAGES_2M, KVC_BENCH_PAGES_BOTH};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(parse(4, (char *[]){"bench", "attention", "--pages", (char *)values[i]}, &o), -1);
        assert_int_equal(o.pages, want[i]);
    }
}

static void test_pages_refusals(void **state) {
    (void)state;
    kvc_bench_opts o;
    assert_int_equal(parse(4, (char *[]){"bench", "attention", "--pages", "1g"}, &o), 2);
    assert_int_equal(parse(3, (char *[]){"bench", "attention", "--pages"}, &o), 2);
    assert_int_equal(parse(4, (char *[]){"bench", "engine", "--pages", "4k"}, &o), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pages_values), cmocka_unit_test(test_pages_refusals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
