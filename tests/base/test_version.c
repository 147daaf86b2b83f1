/* The version the library reports is the one its headers declare. */
#include <stdio.h>

#include "kvc_test_util.h"

static void test_version_number_matches_macros(void **state) {
    (void)state;
    assert_int_equal(kvc_version(), KVC_VERSION);
    assert_int_equal(KVC_VERSION, KVC_VERSION_MAJOR * 10000 + KVC_VERSION_MINOR * 100 + KVC_VERSION_PATCH);
}

static void test_version_string_matches_macros(void **state) {
    (void)state;
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", KVC_VERSION_MAJOR, KVC_VERSION_MINOR, KVC_VERSION_PATCH);
    assert_string_equal(kvc_version_string(), expect);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_number_matches_macros),
        cmocka_unit_test(test_version_string_matches_macros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
