/* The short version of `kvcache bench soak`: 160,000 requests through the
 * manager and 16,000 through the engine all end, every block comes back, and
 * the heap in use is the same at every checkpoint (nothing accumulates per
 * request; mallinfo2 reads 0 under ASan, where LeakSanitizer checks instead). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "soak.h"

static void expect_flat(const kvc_soak_figures *f, int64_t n) {
    assert_int_equal(f->requests, n);
    for (int i = 0; i < KVC_SOAK_CHECKPOINTS; i++) {
        assert_int_equal(f->done_at[i], n >> (KVC_SOAK_CHECKPOINTS - 1 - i));
        assert_int_equal(f->heap_bytes[i], f->heap_bytes[0]);
    }
}

static void test_manager_soak(void **state) {
    (void)state;
    kvc_soak_figures f;
    assert_int_equal(kvc_soak_manager(160000, &f), KVC_OK);
    expect_flat(&f, 160000);
    assert_true(f.refused > 0); /* the pools ran out now and then */
}

static void test_engine_soak(void **state) {
    (void)state;
    kvc_soak_figures f;
    assert_int_equal(kvc_soak_engine(16000, &f), KVC_OK);
    expect_flat(&f, 16000);
    assert_true(f.preemptions > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_manager_soak), cmocka_unit_test(test_engine_soak)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
