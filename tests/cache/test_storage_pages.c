/* Cache storage pages (docs/cache.md, "Storage"): tensors of at least
 * KVC_HUGE_PAGE_MIN_BYTES on 2 MiB-aligned mappings advised for huge pages
 * by default, the plain allocation when turned off, 4 KiB pages on request,
 * the fallback when the kernel refuses the advice, allocation failures at
 * every step, and poisoning on mapped tensors. */
#include <math.h>

#include "kvc_test_util.h"

#include "base/internal.h"
#include "kvcache/half.h"

#define MIB ((int64_t)1 << 20)

typedef struct storage_fixture {
    kvc_test_model model;
    kvc_block_plan plan;
    int setter_calls;
} storage_fixture;

static void count_setter(void *user, const kvc_tensor *t) {
    (void)t;
    ((storage_fixture *)user)->setter_calls++;
}

/* Layer 0: an f16 key cache of 513 blocks x 16 tokens x 2 heads x 64 dims =
 * 2 MiB + 4 KiB (a mapping of 4 MiB); layer 1: a 3-block Mamba state of 384 B. */
static void fixture_init(storage_fixture *f) {
    memset(f, 0, sizeof *f);
    kvc_cache_entry e[2] = {kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, 16, 0),
                            kvc_test_mamba_entry("state", 0)};
    e[0].dim[0] = 64;
    for (int i = 0; i < 2; i++) {
        e[i].tensor_setter = count_setter;
        e[i].setter_user = f;
    }
    kvc_test_model_init(&f->model, e, 2);
    for (int i = 0; i < 2; i++) f->model.entries[i].setter_user = f;
    assert_int_equal(kvc_block_plan_from_counts(&f->model.ci, (const char *[]){"FullAttention", "Mamba"},
                                                (const int64_t[]){513, 3}, 2, &f->plan),
                     KVC_OK);
}

static const int64_t big_bytes = 513 * 16 * 2 * 64 * 2;

static void test_default_is_huge(void **state) {
    (void)state;
    storage_fixture f;
    fixture_init(&f);
    const kvc_cache_storage_params p = kvc_cache_storage_default_params();
    assert_int_equal(p.pages, KVC_STORAGE_PAGES_HUGE);
    assert_int_equal(p.alignment, KVC_ALIGN_DEFAULT);
    kvc_cache_storage *s = NULL;
    assert_int_equal(kvc_cache_storage_allocate(&f.model.ci, &f.plan, &p, &s), KVC_OK);
    assert_int_equal(f.setter_calls, 2);
    void *k = f.model.entries[0].tensor.data;
    assert_int_equal((uintptr_t)k % KVC_ALIGN_2MIB, 0);
    assert_int_equal((uintptr_t)f.model.entries[1].tensor.data % KVC_ALIGN_DEFAULT, 0);
    assert_int_equal(kvc_cache_storage_bytes(s), big_bytes + 3 * 4 * 8 * 4);
    assert_true(kvc_test_zero_bytes(k, (size_t)big_bytes)); /* block 0 zero-filled, the rest zero as mapped */
    memset(k, 0x3c, (size_t)big_bytes);                     /* every byte writable */
    kvc_storage_page_info info;
    assert_int_equal(kvc_cache_storage_page_info(s, &info), KVC_OK);
    assert_int_equal(info.pages, KVC_STORAGE_PAGES_HUGE);
    assert_int_equal(info.mapped_bytes, 4 * MIB); /* only the large tensor, rounded up to 2 MiB pages */
#if defined(__linux__)
    assert_int_equal(info.advised_bytes, kvc_test_kernel_has_thp() ? 4 * MIB : 0);
    assert_true(info.huge_bytes >= 0 && info.huge_bytes % (2 * MIB) == 0);
#else
    assert_int_equal(info.advised_bytes, 0);
#endif
    kvc_cache_storage_destroy(s);
}

/* KVC_STORAGE_PAGES_SYSTEM: the plain allocation at the asked alignment, nothing mapped or advised. */
static void test_off_takes_plain_allocation(void **state) {
    (void)state;
    storage_fixture f;
    fixture_init(&f);
    kvc_cache_storage_params p = kvc_cache_storage_default_params();
    p.pages = KVC_STORAGE_PAGES_SYSTEM;
    p.alignment = KVC_ALIGN_2MIB;
    kvc_cache_storage *s = NULL;
    assert_int_equal(kvc_cache_storage_allocate(&f.model.ci, &f.plan, &p, &s), KVC_OK);
    assert_int_equal((uintptr_t)f.model.entries[0].tensor.data % KVC_ALIGN_2MIB, 0);
    assert_int_equal((uintptr_t)f.model.entries[1].tensor.data % KVC_ALIGN_2MIB, 0);
    kvc_storage_page_info info;
    assert_int_equal(kvc_cache_storage_page_info(s, &info), KVC_OK);
    assert_int_equal(info.pages, KVC_STORAGE_PAGES_SYSTEM);
    assert_int_equal(info.mapped_bytes, 0);
    assert_int_equal(info.advised_bytes, 0);
    kvc_cache_storage_destroy(s);
}

/* KVC_STORAGE_PAGES_BASE: mapped and advised against huge pages: none after writing it all. */
static void test_base_pages_hold_no_huge_page(void **state) {
    (void)state;
    storage_fixture f;
    fixture_init(&f);
    kvc_cache_storage_params p = kvc_cache_storage_default_params();
    p.pages = KVC_STORAGE_PAGES_BASE;
    kvc_cache_storage *s = NULL;
    assert_int_equal(kvc_cache_storage_allocate(&f.model.ci, &f.plan, &p, &s), KVC_OK);
    memset(f.model.entries[0].tensor.data, 1, (size_t)big_bytes);
    kvc_storage_page_info info;
    assert_int_equal(kvc_cache_storage_page_info(s, &info), KVC_OK);
    assert_int_equal(info.mapped_bytes, 4 * MIB);
#if defined(__linux__)
    if (kvc_test_kernel_has_thp()) {
        assert_int_equal(info.advised_bytes, 4 * MIB);
        assert_int_equal(info.huge_bytes, 0);
    }
#endif
    kvc_cache_storage_destroy(s);
}

/* A kernel that refuses the advice: the storage still works, on 2 MiB
 * boundaries, and says that nothing was advised. */
static void test_refused_advice(void **state) {
    (void)state;
    storage_fixture f;
    fixture_init(&f);
    const kvc_cache_storage_params p = kvc_cache_storage_default_params();
    kvc_cache_storage *s = NULL;
    kvci_pages_refuse_advice(true);
    kvc_status st = kvc_cache_storage_allocate(&f.model.ci, &f.plan, &p, &s);
    kvci_pages_refuse_advice(false);
    assert_int_equal(st, KVC_OK);
    assert_int_equal((uintptr_t)f.model.entries[0].tensor.data % KVC_ALIGN_2MIB, 0);
    kvc_storage_page_info info;
    assert_int_equal(kvc_cache_storage_page_info(s, &info), KVC_OK);
    assert_int_equal(info.mapped_bytes, 4 * MIB);
    assert_int_equal(info.advised_bytes, 0);
    assert_int_equal(kvc_cache_storage_page_info(NULL, &info), KVC_EINVAL);
    assert_int_equal(kvc_cache_storage_page_info(s, NULL), KVC_EINVAL);
    kvc_cache_storage_destroy(s);
}

/* Failing each allocation in turn (record, sizes, flags, the mapped
 * tensor, the plain one): ENOMEM, no storage, no tensor handed out. */
static void test_every_allocation_failure(void **state) {
    (void)state;
    const kvc_storage_pages modes[2] = {KVC_STORAGE_PAGES_HUGE, KVC_STORAGE_PAGES_SYSTEM};
    for (int m = 0; m < 2; m++) {
        storage_fixture f;
        fixture_init(&f);
        kvc_cache_storage_params p = kvc_cache_storage_default_params();
        p.pages = modes[m];
        kvc_cache_storage *ok = NULL;
        kvci_alloc_fail_at(0); /* counts the calls of a successful allocation */
        assert_int_equal(kvc_cache_storage_allocate(&f.model.ci, &f.plan, &p, &ok), KVC_OK);
        const uint64_t calls = kvci_alloc_calls();
        kvc_cache_storage_destroy(ok);
        assert_true(calls >= 5); /* the record, its two arrays, the two tensors */
        f.setter_calls = 0;
        f.model.entries[0].tensor = f.model.entries[1].tensor = (kvc_tensor){0};
        uint64_t n = 1;
        for (;; n++) {
            kvc_cache_storage *s = (kvc_cache_storage *)&f;
            kvci_alloc_fail_at(n);
            kvc_status st = kvc_cache_storage_allocate(&f.model.ci, &f.plan, &p, &s);
            kvci_alloc_fail_at(0);
            if (st == KVC_OK) {
                kvc_cache_storage_destroy(s);
                break;
            }
            assert_int_equal(st, KVC_ENOMEM);
            assert_null(s);
            assert_int_equal(f.setter_calls, 0);
            assert_null(f.model.entries[0].tensor.data);
            assert_null(f.model.entries[1].tensor.data);
        }
        assert_int_equal(n, calls + 1); /* each allocation failed once, then all succeeded */
        assert_int_equal(f.setter_calls, 2);
    }
}

/* KVC_POISON_BLOCKS on a mapped tensor: taken blocks read NaN, the null block and untaken ones zero. */
static void test_poison_on_mapped_tensor(void **state) {
    (void)state;
    storage_fixture f;
    fixture_init(&f);
    kvc_test_model model; /* the key cache alone */
    kvc_test_model_init(&model, f.model.entries, 1);
    kvc_block_plan plan;
    assert_int_equal(
        kvc_block_plan_from_counts(&model.ci, (const char *[]){"FullAttention"}, (const int64_t[]){513}, 1, &plan),
        KVC_OK);
    const kvc_cache_storage_params p = kvc_cache_storage_default_params();
    kvc_cache_storage *s = NULL;
    assert_int_equal(kvc_cache_storage_allocate(&model.ci, &plan, &p, &s), KVC_OK);
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = 64;
    mp.poison_new_blocks = true;
    kvc_manager *m = NULL;
    assert_int_equal(kvc_manager_create(&model.ci, &plan, &mp, &m), KVC_OK);
    assert_int_equal(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 20}), KVC_OK);
    kvc_test_assert_table(m, 1, 0, KVC_IDS(1, 2));
    const uint16_t *k = model.entries[0].tensor.data;
    assert_int_equal((uintptr_t)k % KVC_ALIGN_2MIB, 0);
    const int64_t per_block = 16 * 2 * 64;
    for (int64_t i = 0; i < per_block; i++) {
        assert_int_equal(k[i], 0);
        assert_true(isnan(kvc_f16_to_f32(k[1 * per_block + i])) && isnan(kvc_f16_to_f32(k[2 * per_block + i])));
        assert_int_equal(k[3 * per_block + i], 0);
        assert_int_equal(k[512 * per_block + i], 0);
    }
    kvc_manager_destroy(m);
    kvc_cache_storage_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_huge),
        cmocka_unit_test(test_off_takes_plain_allocation),
        cmocka_unit_test(test_base_pages_hold_no_huge_page),
        cmocka_unit_test(test_refused_advice),
        cmocka_unit_test(test_every_allocation_failure),
        cmocka_unit_test(test_poison_on_mapped_tensor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
