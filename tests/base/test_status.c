/* Error messages and the logging callback (regressions of issue 12 §5):
 * - a message that quotes kvc_last_error() keeps the quoted text intact;
 * - the callback and its user pointer are seen as a pair by every thread. */
#include <pthread.h>
#include <stdatomic.h>

#include "base/internal.h"
#include "kvc_test_util.h"

static void test_fail_can_quote_the_previous_message(void **state) {
    (void)state;
    assert_int_equal(kvci_fail(KVC_ERANGE, "num_blocks %d must be in [1, %d]", 0, INT32_MAX), KVC_ERANGE);
    assert_int_equal(kvci_fail(KVC_EINVAL, "manager %s: %s", "FullAttention", kvc_last_error()), KVC_EINVAL);
    assert_string_equal(kvc_last_error(), "manager FullAttention: num_blocks 0 must be in [1, 2147483647]");
}

static void test_fail_truncates_a_long_quote(void **state) {
    (void)state;
    char inner[600];
    memset(inner, 'x', sizeof inner - 1);
    inner[sizeof inner - 1] = '\0';
    kvci_fail(KVC_EINVAL, "%s", inner);
    kvci_fail(KVC_EINVAL, "outer: %s", kvc_last_error());
    const char *msg = kvc_last_error();
    assert_memory_equal(msg, "outer: xxxx", 11);
    for (size_t i = 7; msg[i] != '\0'; i++) assert_int_equal(msg[i], 'x');
}

/* A pool that cannot be created, reported through the manager that wanted it
 * (the path that printed "manager FullAttention: manager FullAttention: ..."). */
static void test_manager_message_quotes_the_pool_message(void **state) {
    (void)state;
    kvc_test_model tm;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 4, 0);
    kvc_test_model_init(&tm, &e, 1);
    kvc_block_plan plan;
    kvc_plan_params pp = kvc_plan_default_params();
    pp.mode = KVC_PLAN_OFFLINE;
    pp.max_len = 64;
    pp.max_concurrency = 1;
    assert_int_equal(kvc_plan_blocks(&pp, &tm.ci, &plan), KVC_OK);
    plan.groups[0].block_num = (int64_t)INT32_MAX + 1;
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = 64;
    kvc_manager *m = (kvc_manager *)&plan;
    assert_true(kvc_manager_create(&tm.ci, &plan, &mp, &m) < 0);
    assert_null(m);
    assert_string_equal(kvc_last_error(), "manager FullAttention: num_blocks 2147483648 must be in [1, 2147483647]");
}

/* Two callbacks, each with its own user pointer; a writer flips between the
 * pairs while loggers check that every call receives its own callback's
 * pointer. */
typedef struct {
    atomic_long calls;
    atomic_long mismatches;
} log_tally;

static log_tally tally_a, tally_b;

static void log_a(void *user, kvc_log_level level, const char *message) {
    (void)level;
    (void)message;
    atomic_fetch_add(&tally_a.calls, 1);
    if (user != &tally_a) atomic_fetch_add(&tally_a.mismatches, 1);
}

static void log_b(void *user, kvc_log_level level, const char *message) {
    (void)level;
    (void)message;
    atomic_fetch_add(&tally_b.calls, 1);
    if (user != &tally_b) atomic_fetch_add(&tally_b.mismatches, 1);
}

#define LOG_ROUNDS 20000

static void *flip_callbacks(void *arg) {
    (void)arg;
    for (int i = 0; i < LOG_ROUNDS; i++) {
        kvc_set_log_callback(log_a, &tally_a);
        kvc_set_log_callback(log_b, &tally_b);
    }
    return NULL;
}

static void *log_messages(void *arg) {
    (void)arg;
    for (int i = 0; i < LOG_ROUNDS; i++) kvci_log(KVC_LOG_INFO, "message %d", i);
    return NULL;
}

static void test_log_callback_pair_is_never_torn(void **state) {
    (void)state;
    kvc_set_log_callback(log_a, &tally_a);
    pthread_t writer, readers[3];
    assert_int_equal(pthread_create(&writer, NULL, flip_callbacks, NULL), 0);
    for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&readers[i], NULL, log_messages, NULL), 0);
    pthread_join(writer, NULL);
    for (int i = 0; i < 3; i++) pthread_join(readers[i], NULL);
    kvc_set_log_callback(NULL, NULL);
    assert_int_equal(atomic_load(&tally_a.calls) + atomic_load(&tally_b.calls), 3 * LOG_ROUNDS);
    assert_int_equal(atomic_load(&tally_a.mismatches), 0);
    assert_int_equal(atomic_load(&tally_b.mismatches), 0);
    kvci_log(KVC_LOG_INFO, "after the callback was removed");
    assert_int_equal(atomic_load(&tally_a.calls) + atomic_load(&tally_b.calls), 3 * LOG_ROUNDS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fail_can_quote_the_previous_message),
        cmocka_unit_test(test_fail_truncates_a_long_quote),
        cmocka_unit_test(test_manager_message_quotes_the_pool_message),
        cmocka_unit_test(test_log_callback_pair_is_never_torn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
