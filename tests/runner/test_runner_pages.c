/* Pages of the runner's cache memory (docs/runtime.md, "Cache pages"): one
 * buffer placed as params.pages says (huge pages by default, the plain
 * allocation, or 4 KiB pages), zero before the first step, reported by
 * kvc_runner_page_info; the same tokens and bitwise the same logits under
 * every policy and when the kernel refuses the advice; every allocation
 * failure of creation is ENOMEM with nothing left mapped. */
#include "runner_fixture.h"

#include "base/internal.h"
#include "kvc_test_util.h"
#include "runner/runner_internal.h"

#define MIB ((int64_t)1 << 20)

/* 2 layers x (2 + 2 heads x 16 dims) f32 = 512 B per token; 2 rows x 2048
 * positions = 2 MiB: at the threshold, so one 2 MiB mapping. */
static const char *CONFIG =
    "{\"model_type\":\"qwen3\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":96,"
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
    "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":4096}";
enum { ROWS = 2, S_MAX = 2048, NT = 5, V = 128 };
static const int32_t IDS[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31};
static const int64_t LENS[ROWS] = {5, 7};
static const kvc_storage_pages POLICIES[3] = {KVC_STORAGE_PAGES_HUGE, KVC_STORAGE_PAGES_SYSTEM, KVC_STORAGE_PAGES_BASE};

static kvc_runner_params pages_params(kvc_runner_mode mode, kvc_storage_pages pages) {
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = mode;
    p.max_new_tokens = NT;
    p.max_seq_len = S_MAX;
    p.pages = pages;
    return p;
}

typedef struct run_result {
    int32_t tokens[ROWS * NT];
    float logits[NT * ROWS * V];
} run_result;

/* One runner of mode and pages (the advice refused when asked): its page
 * info and memory checked, then a generate call into *out. */
static void run_pages(const kvc_model *m, kvc_runner_mode mode, kvc_storage_pages pages, bool refuse, run_result *out) {
    const kvc_runner_params p = pages_params(mode, pages);
    const uint64_t mapped_before = kvci_pages_mapped_bytes();
    kvc_runner *r = NULL;
    kvci_pages_refuse_advice(refuse);
    kvc_status st = kvc_runner_create(m, &p, ROWS, 7, &r);
    kvci_pages_refuse_advice(false);
    if (st != KVC_OK) fail_msg("runner: %s", kvc_last_error());
    const bool mapped = pages != KVC_STORAGE_PAGES_SYSTEM;
    assert_int_equal(kvci_pages_mapped_bytes() - mapped_before, mapped ? 2 * MIB : 0);
    kvc_storage_page_info info;
    assert_int_equal(kvc_runner_page_info(r, &info), KVC_OK);
    assert_int_equal(info.pages, pages);
    assert_int_equal(info.mapped_bytes, mapped ? 2 * MIB : 0);
#if defined(__linux__)
    assert_int_equal(info.advised_bytes, mapped && !refuse && kvc_test_kernel_has_thp() ? 2 * MIB : 0);
    assert_true(info.huge_bytes >= 0 && info.huge_bytes <= info.mapped_bytes);
#endif
    const void *k0 = r->caches.layers[0].k.data;
    assert_int_equal(k0, r->cache_mem.data[0]);
    assert_int_equal((uintptr_t)k0 % (mapped ? KVC_ALIGN_2MIB : KVC_ALIGN_DEFAULT), 0);
    assert_int_equal(r->cache_mem.sizes[0], 2 * MIB);
    assert_true(kvc_test_zero_bytes(k0, 2 * MIB));
    assert_int_equal(kvc_runner_generate(r, IDS, LENS, ROWS, out->tokens, out->logits, NULL), KVC_OK);
    kvc_runner_destroy(r);
    assert_int_equal(kvci_pages_mapped_bytes(), mapped_before);
}

static void test_default_is_huge(void **state) {
    (void)state;
    assert_int_equal(kvc_runner_default_params().pages, KVC_STORAGE_PAGES_HUGE);
}

/* Contiguous and paged caches: every policy gives the tokens and logits of huge pages, bit for bit. */
static void test_policies_same_results(void **state) {
    (void)state;
    kvc_model *m = fixture_model(CONFIG, 77);
    const kvc_runner_mode modes[2] = {KVC_RUNNER_CONTIGUOUS, KVC_RUNNER_PAGED};
    run_result *ref = malloc(sizeof *ref), *got = malloc(sizeof *got);
    assert_non_null(ref);
    assert_non_null(got);
    for (int md = 0; md < 2; md++) {
        run_pages(m, modes[md], KVC_STORAGE_PAGES_HUGE, false, ref);
        for (int i = 1; i < 3; i++) {
            run_pages(m, modes[md], POLICIES[i], false, got);
            assert_memory_equal(got, ref, sizeof *ref);
        }
        run_pages(m, modes[md], KVC_STORAGE_PAGES_HUGE, true, got);
        assert_memory_equal(got, ref, sizeof *ref);
    }
    free(ref);
    free(got);
    kvc_model_destroy(m);
}

static void test_refusals_and_mode0(void **state) {
    (void)state;
    kvc_model *m = fixture_model(CONFIG, 77);
    kvc_runner_params p = pages_params(KVC_RUNNER_PAGED, (kvc_storage_pages)9);
    kvc_runner *r = (kvc_runner *)&p;
    assert_int_equal(kvc_runner_create(m, &p, ROWS, 7, &r), KVC_EINVAL);
    assert_null(r);
    assert_non_null(strstr(kvc_last_error(), "runner: pages 9"));
    /* keys in lanes are a mode 2 layout */
    p = pages_params(KVC_RUNNER_CONTIGUOUS, KVC_STORAGE_PAGES_HUGE);
    p.cache.kv_layout = KVC_BLOCK_BNNDBS;
    assert_int_equal(kvc_runner_create(m, &p, ROWS, 7, &r), KVC_EINVAL);
    assert_null(r);
    assert_non_null(strstr(kvc_last_error(), "kv_layout KVC_BLOCK_BNNDBS (keys in lanes) is not taken in mode 1"));
    p.mode = KVC_RUNNER_PAGED, p.cache.kv_layout = KVC_BLOCK_NZ;
    assert_int_equal(kvc_runner_create(m, &p, ROWS, 7, &r), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "kv_layout KVC_BLOCK_NZ (tiles) is not taken in mode 2"));
    /* mode 0 holds no cache memory */
    p = pages_params(KVC_RUNNER_RECOMPUTE, KVC_STORAGE_PAGES_BASE);
    assert_int_equal(kvc_runner_create(m, &p, ROWS, 7, &r), KVC_OK);
    kvc_storage_page_info info;
    assert_int_equal(kvc_runner_page_info(r, &info), KVC_OK);
    assert_int_equal(info.pages, KVC_STORAGE_PAGES_BASE);
    assert_int_equal(info.mapped_bytes, 0);
    assert_int_equal(info.advised_bytes, 0);
    assert_int_equal(kvc_runner_page_info(r, NULL), KVC_EINVAL);
    assert_int_equal(kvc_runner_page_info(NULL, &info), KVC_EINVAL);
    kvc_runner_destroy(r);
    kvc_model_destroy(m);
}

/* Failing each allocation of creation in turn: ENOMEM, no runner, nothing
 * left mapped (the sanitizer build checks the heap); the cache mapping's
 * failure names the runner's caches. */
static void test_every_allocation_failure(void **state) {
    (void)state;
    kvc_model *m = fixture_model(CONFIG, 77);
    const kvc_runner_params p = pages_params(KVC_RUNNER_PAGED, KVC_STORAGE_PAGES_HUGE);
    kvc_runner *r = NULL;
    kvci_alloc_fail_at(0);
    assert_int_equal(kvc_runner_create(m, &p, ROWS, 7, &r), KVC_OK);
    const uint64_t calls = kvci_alloc_calls();
    kvc_runner_destroy(r);
    const uint64_t mapped_before = kvci_pages_mapped_bytes();
    int named = 0;
    for (uint64_t n = 1; n <= calls; n++) {
        r = (kvc_runner *)&r;
        kvci_alloc_fail_at(n);
        kvc_status st = kvc_runner_create(m, &p, ROWS, 7, &r);
        kvci_alloc_fail_at(0);
        assert_int_equal(st, KVC_ENOMEM);
        assert_null(r);
        assert_int_equal(kvci_pages_mapped_bytes(), mapped_before);
        if (strstr(kvc_last_error(), "cannot map 2097152 bytes") != NULL) {
            assert_non_null(strstr(kvc_last_error(), "runner: caches of 2097152 bytes (2 rows x 2048 positions"));
            named++;
        }
    }
    assert_int_equal(named, 1);
    kvc_model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_huge),
        cmocka_unit_test(test_policies_same_results),
        cmocka_unit_test(test_refusals_and_mode0),
        cmocka_unit_test(test_every_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
