/* Pages of the engine's caches (docs/engine.md, "Cache pages"): the
 * self-managed caches and the managed storage follow params.pages (huge
 * pages by default, the plain allocation, or 4 KiB pages), report where they
 * landed through kvc_engine_page_info, give the same tokens under every
 * policy, refuse an alignment a mapping cannot give, and fail every
 * allocation cleanly: ENOMEM, no engine, no mapping left behind. */
#include "engine_fixture.h"

#include "base/internal.h"

#define MIB ((int64_t)1 << 20)

/* 4 rows x 32768 positions x TOY_D f32 = 2 MiB per legacy cache: at the
 * threshold, so each goes on one 2 MiB mapping. */
enum { SM_LEN = 32768, SM_ROWS = 4, N_REQ = 10 };

static const kvc_storage_pages POLICIES[3] = {KVC_STORAGE_PAGES_HUGE, KVC_STORAGE_PAGES_SYSTEM, KVC_STORAGE_PAGES_BASE};

static kvc_engine_params pages_params(kvc_storage_pages pages) {
    kvc_engine_params p = fix_params(SM_LEN, SM_ROWS);
    p.max_requests = N_REQ;
    p.pages = pages;
    return p;
}

/* The expected page info of the two self-managed caches under `pages`. */
static void expect_legacy_info(const kvc_engine *e, kvc_storage_pages pages, bool refused) {
    kvc_storage_page_info info;
    assert_int_equal(kvc_engine_page_info(e, &info), KVC_OK);
    const int64_t mapped = pages == KVC_STORAGE_PAGES_SYSTEM ? 0 : 4 * MIB;
    assert_int_equal(info.pages, pages);
    assert_int_equal(info.mapped_bytes, mapped);
#if defined(__linux__)
    assert_int_equal(info.advised_bytes, kvc_test_kernel_has_thp() && !refused ? mapped : 0);
    assert_true(info.huge_bytes >= 0 && info.huge_bytes % (2 * MIB) == 0 && info.huge_bytes <= mapped);
#else
    (void)refused;
    assert_int_equal(info.advised_bytes, 0);
#endif
}

/* Runs N_REQ random requests (more than the rows: rows are reused) under
 * `pages`; their tokens into out [N_REQ, 16], each checked against the
 * dense reference. */
static void run_self_managed(kvc_storage_pages pages, bool refuse_advice, int32_t *out) {
    toy_model m;
    toy_init_self_managed(&m, FIX_VOCAB);
    kvc_engine_model em = toy_engine_model(&m, true);
    kvc_engine_params p = pages_params(pages);
    const uint64_t mapped_before = kvci_pages_mapped_bytes();
    kvci_pages_refuse_advice(refuse_advice);
    kvc_engine *e = fix_engine(&em, &p);
    kvci_pages_refuse_advice(false);
    const bool mapped = pages != KVC_STORAGE_PAGES_SYSTEM;
    assert_int_equal(kvci_pages_mapped_bytes() - mapped_before, mapped ? 4 * MIB : 0);
    for (int kv = 0; kv < 2; kv++) {
        assert_int_equal((uintptr_t)m.legacy_data[kv] % (mapped ? KVC_ALIGN_2MIB : KVC_ALIGN_DEFAULT), 0);
        assert_true(kvc_test_zero_bytes(m.legacy_data[kv], 2 * MIB));
    }
    expect_legacy_info(e, pages, refuse_advice);
    fix_run_random(e, &m, N_REQ, 11, out);
    expect_legacy_info(e, pages, refuse_advice); /* written now: huge pages may have come */
    kvc_engine_destroy(e);
    assert_int_equal(kvci_pages_mapped_bytes(), mapped_before);
}

static void test_default_is_huge(void **state) {
    (void)state;
    assert_int_equal(kvc_engine_default_params().pages, KVC_STORAGE_PAGES_HUGE);
}

/* Every policy, and huge pages on a kernel that refuses the advice: the same tokens. */
static void test_self_managed_policies(void **state) {
    (void)state;
    int32_t ref[N_REQ * 16], got[N_REQ * 16];
    run_self_managed(KVC_STORAGE_PAGES_HUGE, false, ref);
    for (int i = 1; i < 3; i++) {
        run_self_managed(POLICIES[i], false, got);
        assert_memory_equal(got, ref, sizeof ref);
    }
    run_self_managed(KVC_STORAGE_PAGES_HUGE, true, got);
    assert_memory_equal(got, ref, sizeof ref);
}

/* The managed storage takes the engine's policy too (one layer, 4 x 32768
 * positions of TOY_D f32 = 2 MiB per tensor, plus the null block). */
static void test_managed_storage_follows(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        toy_model m;
        toy_init_managed(&m, FIX_VOCAB, 1, 16, 0);
        kvc_engine_model em = toy_engine_model(&m, false);
        kvc_engine_params p = pages_params(POLICIES[i]);
        p.check = false; /* the step checks are not what this test is about, and scan every block */
        kvc_engine *e = fix_engine(&em, &p);
        kvc_storage_page_info info;
        assert_int_equal(kvc_engine_page_info(e, &info), KVC_OK);
        assert_int_equal(info.pages, POLICIES[i]);
        if (POLICIES[i] == KVC_STORAGE_PAGES_SYSTEM) {
            assert_int_equal(info.mapped_bytes, 0);
        } else {
            assert_true(info.mapped_bytes >= 4 * MIB);
            for (int kv = 0; kv < 2; kv++) assert_int_equal((uintptr_t)m.cache[0][kv] % KVC_ALIGN_2MIB, 0);
        }
        int32_t prompt[5] = {1, 2, 3, 4, 5};
        kvc_engine_request r = fix_request_over(1, prompt, 5, 4);
        fix_add(e, &r);
        fix_run(e, 100);
        fix_expect_reference(e, &m, &r);
        kvc_engine_destroy(e);
    }
}

static void test_refusals(void **state) {
    (void)state;
    toy_model m;
    toy_init_self_managed(&m, FIX_VOCAB);
    kvc_engine_model em = toy_engine_model(&m, true);
    kvc_engine_params p = pages_params((kvc_storage_pages)7);
    kvc_engine *e = (kvc_engine *)&m;
    assert_int_equal(kvc_engine_create(&em, &p, &e), KVC_EINVAL);
    assert_null(e);
    assert_non_null(strstr(kvc_last_error(), "pages 7"));
    assert_int_equal(kvc_engine_step_tokens(&p), 0);
    /* 4 MiB alignment: more than a mapping gives, so refused with huge or base pages ... */
    const kvc_storage_pages mapped[2] = {KVC_STORAGE_PAGES_HUGE, KVC_STORAGE_PAGES_BASE};
    for (int i = 0; i < 2; i++) {
        p = pages_params(mapped[i]);
        p.alignment = 4 * (size_t)MIB;
        assert_int_equal(kvc_engine_create(&em, &p, &e), KVC_EINVAL);
        assert_null(e);
        assert_non_null(strstr(kvc_last_error(), "alignment 4194304 exceeds the 2 MiB"));
    }
    /* ... and honoured by the plain allocation */
    p = pages_params(KVC_STORAGE_PAGES_SYSTEM);
    p.alignment = 4 * (size_t)MIB;
    e = fix_engine(&em, &p);
    for (int kv = 0; kv < 2; kv++) assert_int_equal((uintptr_t)m.legacy_data[kv] % (4 * (size_t)MIB), 0);
    kvc_storage_page_info info;
    assert_int_equal(kvc_engine_page_info(e, NULL), KVC_EINVAL);
    assert_int_equal(kvc_engine_page_info(NULL, &info), KVC_EINVAL);
    kvc_engine_destroy(e);
}

/* Failing each allocation of a self-managed engine's creation in turn:
 * ENOMEM, no engine, every mapping unmapped (the sanitizer build checks the
 * heap); the two cache mappings' failures name their cache. */
static void test_every_allocation_failure(void **state) {
    (void)state;
    toy_model m;
    toy_init_self_managed(&m, FIX_VOCAB);
    kvc_engine_model em = toy_engine_model(&m, true);
    kvc_engine_params p = pages_params(KVC_STORAGE_PAGES_HUGE);
    kvc_engine *e = NULL;
    kvci_alloc_fail_at(0);
    assert_int_equal(kvc_engine_create(&em, &p, &e), KVC_OK);
    const uint64_t calls = kvci_alloc_calls();
    kvc_engine_destroy(e);
    const uint64_t mapped_before = kvci_pages_mapped_bytes();
    int named = 0;
    for (uint64_t n = 1; n <= calls; n++) {
        e = (kvc_engine *)&m;
        kvci_alloc_fail_at(n);
        kvc_status st = kvc_engine_create(&em, &p, &e);
        kvci_alloc_fail_at(0);
        assert_int_equal(st, KVC_ENOMEM);
        assert_null(e);
        assert_int_equal(kvci_pages_mapped_bytes(), mapped_before);
        const char *msg = kvc_last_error();
        if (strstr(msg, "cannot map 2097152 bytes") != NULL) {
            assert_non_null(strstr(msg, named == 0 ? "legacy cache 0 (k_cache" : "legacy cache 1 (v_cache"));
            named++;
        }
    }
    assert_int_equal(named, 2);
    kvci_alloc_fail_at(calls + 1); /* one past the last: nothing fails */
    assert_int_equal(kvc_engine_create(&em, &p, &e), KVC_OK);
    kvci_alloc_fail_at(0);
    kvc_engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_huge),          cmocka_unit_test(test_self_managed_policies),
        cmocka_unit_test(test_managed_storage_follows),  cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_every_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
