/* The widest Mamba table a step holds: 1 + next_n state blocks with next_n
 * at its limit KVC_MAX_NEXT_N (the step's scratch row, KVC_MAX_STATE_BLOCKS,
 * is derived from that limit). A decode step at that width builds and
 * carries 1 + KVC_MAX_NEXT_N distinct real block ids. */
#include "base/internal.h"
#include "step_fixture.h"

#define WIDEST (1 + KVC_MAX_NEXT_N)

static void test_widest_state_table(void **state) {
    (void)state;
    step_fixture f;
    const kvc_cache_entry e[2] = {fix_full("full", 16), fix_mamba("ssm", KVC_MAX_NEXT_N)};
    fixture_create(&f, e, I64S(200, 2 * WIDEST), 2, 2048, 1, WIDEST);
    fixture_allocate(&f, 5, 0, 6, 0);      /* prefill */
    fixture_allocate(&f, 5, 6, WIDEST, 0); /* decode width of every state block */
    const kvc_step_request row = {5, 6, WIDEST};
    kvc_step_metadata md;
    fixture_build(&f, &row, 1, false, &md);
    const kvc_step_key *k = fixture_key(&md, "ssm");
    assert_int_equal(k->width, WIDEST);
    for (int64_t i = 0; i < WIDEST; i++) {
        assert_true(k->block_table[i] > 0);
        if (i > 0) assert_int_not_equal(k->block_table[i], k->block_table[i - 1]);
    }
    fixture_destroy(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_widest_state_table)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
