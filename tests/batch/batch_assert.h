/* Array assertions shared by the batch tests: exact element-wise equality
 * with the index of the first mismatch in the failure message. */
#ifndef KVC_TESTS_BATCH_ASSERT_H
#define KVC_TESTS_BATCH_ASSERT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/kvcache.h"

static inline void expect_i64_array(const int64_t *got, const int64_t *want, int64_t n, const char *what) {
    assert_non_null(got);
    for (int64_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("%s[%lld] = %lld, expected %lld", what, (long long)i, (long long)got[i], (long long)want[i]);
        }
    }
}

static inline void expect_i32_array(const int32_t *got, const int32_t *want, int64_t n, const char *what) {
    assert_non_null(got);
    for (int64_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("%s[%lld] = %d, expected %d", what, (long long)i, (int)got[i], (int)want[i]);
        }
    }
}

/* A failed call returned `want` and left a message naming `needle`. */
static inline void expect_failure(kvc_status got, kvc_status want, const char *needle) {
    if (got != want)
        fail_msg("status %s, expected %s (%s)", kvc_status_str(got), kvc_status_str(want), kvc_last_error());
    if (strstr(kvc_last_error(), needle) == NULL) {
        fail_msg("error message \"%s\" does not mention \"%s\"", kvc_last_error(), needle);
    }
}

#define I64S(...) ((const int64_t[]){__VA_ARGS__})
#define I32S(...) ((const int32_t[]){__VA_ARGS__})
#define N_OF(...) ((int64_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

#endif /* KVC_TESTS_BATCH_ASSERT_H */
