/* Test helpers (see kvc_test_util.h). */
#include "kvc_test_util.h"

#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"

kvc_cache_entry kvc_test_attention_entry(const char *name, kvc_attn_type type, int64_t block_size, int64_t window) {
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "%s", name);
    e.attn_type = type;
    e.num_head = 2;
    e.n_dims = 1;
    e.dim[0] = 8;
    e.dtype = KVC_DTYPE_F16;
    e.block_size = block_size;
    e.sliding_window = type == KVC_ATTN_SLIDING_WINDOW ? window : 0;
    e.attention_chunk_size = type == KVC_ATTN_CHUNKED_LOCAL ? window : 0;
    return e;
}

kvc_cache_entry kvc_test_mamba_entry(const char *name, int64_t next_n) {
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "%s", name);
    e.attn_type = KVC_ATTN_MAMBA;
    e.is_state = true;
    e.block_size = 1;
    e.n_shape = 2;
    e.shape[0] = 4;
    e.shape[1] = 8;
    e.dtype = KVC_DTYPE_F32;
    e.next_n = next_n;
    return e;
}

void kvc_test_model_init(kvc_test_model *m, const kvc_cache_entry *entries, int32_t n) {
    assert_true(n >= 1 && n <= KVC_TEST_MAX_LAYERS);
    for (int32_t i = 0; i < n; i++) {
        m->entries[i] = entries[i];
        m->layers[i] = (kvc_layer_cache_info){.layer_idx = i, .n_caches = 1, .caches = &m->entries[i]};
    }
    m->ci = (kvc_model_cache_info){.num_layers = n, .n_layer_infos = n, .layer_infos = m->layers};
}

kvc_manager *kvc_test_manager(kvc_test_model *m, const char *const *keys, const int64_t *counts, int32_t n_keys,
                              int64_t max_model_len) {
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = max_model_len;
    return kvc_test_manager_with(m, keys, counts, n_keys, &p);
}

kvc_manager *kvc_test_manager_with(kvc_test_model *m, const char *const *keys, const int64_t *counts, int32_t n_keys,
                                   const kvc_manager_params *p) {
    kvc_block_plan plan;
    assert_int_equal(kvc_block_plan_from_counts(&m->ci, keys, counts, n_keys, &plan), KVC_OK);
    kvc_manager *mgr = NULL;
    kvc_status st = kvc_manager_create(&m->ci, &plan, p, &mgr);
    if (st != KVC_OK) fail_msg("kvc_manager_create: %s", kvc_last_error());
    return mgr;
}

kvc_manager *kvc_test_manager_shared(kvc_test_model *m, const char *const *keys, int64_t num_blocks, int32_t n_keys,
                                     const kvc_manager_params *p) {
    int64_t counts[KVC_MAX_MANAGERS] = {0};
    for (int32_t g = 0; g < n_keys && g < KVC_MAX_MANAGERS; g++) counts[g] = num_blocks;
    kvc_block_plan plan;
    assert_int_equal(kvc_block_plan_from_counts(&m->ci, keys, counts, n_keys, &plan), KVC_OK);
    for (int32_t g = 0; g < n_keys; g++) plan.groups[g].pool_id = 1;
    kvc_manager *mgr = NULL;
    kvc_status st = kvc_manager_create(&m->ci, &plan, p, &mgr);
    if (st != KVC_OK) fail_msg("kvc_manager_create: %s", kvc_last_error());
    return mgr;
}

#ifdef KVC_TEST_ASAN
#include <sanitizer/allocator_interface.h>
size_t kvc_test_heap_bytes(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
size_t kvc_test_heap_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#endif

char *kvc_test_read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

void kvc_test_oracle_dir(const char *family, char *out, size_t cap) {
    const char *base = getenv("KVC_DATA_DIR");
    if (base == NULL) fail_msg("KVC_DATA_DIR is not set (CTest sets it to tests/data)");
    snprintf(out, cap, "%s/oracle/%s", base, family);
}

static void assert_ids(const char *what, const int32_t *got, int64_t n_got, const int32_t *expected, int64_t n) {
    char got_s[512] = "", exp_s[512] = "";
    size_t a = 0, b = 0;
    for (int64_t i = 0; i < n_got && a < sizeof got_s - 16; i++)
        a += (size_t)snprintf(got_s + a, sizeof got_s - a, "%d,", got[i]);
    for (int64_t i = 0; i < n && b < sizeof exp_s - 16; i++)
        b += (size_t)snprintf(exp_s + b, sizeof exp_s - b, "%d,", expected[i]);
    if (n_got != n || (n > 0 && memcmp(got, expected, (size_t)n * sizeof *got) != 0))
        fail_msg("%s: got [%s] expected [%s]", what, got_s, exp_s);
}

void kvc_test_assert_table(const kvc_manager *m, int64_t rid, int32_t key_index, const int32_t *expected, int64_t n) {
    int32_t got[256];
    int64_t n_got = -1;
    assert_int_equal(kvc_manager_block_ids(m, rid, key_index, got, 256, &n_got), KVC_OK);
    assert_true(n_got <= 256);
    assert_ids("block table", got, n_got, expected, n);
}

void kvc_test_assert_queue(const kvc_manager *m, int32_t key_index, const int32_t *expected, int64_t n) {
    int32_t got[256];
    int64_t n_got = -1;
    assert_int_equal(kvc_manager_free_queue(m, key_index, got, 256, &n_got), KVC_OK);
    assert_true(n_got <= 256);
    assert_ids("free queue", got, n_got, expected, n);
}

void kvc_test_compute_and_free(kvc_manager *m, int64_t rid, const int32_t *tokens, int64_t n) {
    kvc_prompt prompt = {.tokens = tokens, .n_tokens = n};
    assert_int_equal(
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid, .num_new_tokens = n, .prompt = &prompt}),
        KVC_OK);
    assert_int_equal(kvc_manager_cache_computed(m, rid, tokens, n), KVC_OK);
    assert_int_equal(kvc_manager_free(m, rid), KVC_OK);
}

bool kvc_test_zero_bytes(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0) return false;
    return true;
}

bool kvc_test_kernel_has_thp(void) { return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0; }

void kvc_test_prompt_logits(const kvc_model *m, const int32_t *ids, int64_t T, float *lg) {
    kvc_test_prompt_logits_kv(m, ids, T, T, lg);
}

void kvc_test_prompt_logits_kv(const kvc_model *m, const int32_t *ids, int64_t T, int64_t max_kv_len, float *lg) {
    const kvc_status st = kvc_test_prompt_forward(m, ids, T, max_kv_len, lg);
    if (st != KVC_OK) fail_msg("prompt logits: %s (%s)", kvc_status_str(st), kvc_last_error());
}

kvc_status kvc_test_prompt_forward(const kvc_model *m, const int32_t *ids, int64_t T, int64_t max_kv_len, float *lg) {
    int64_t *pos = malloc((size_t)T * sizeof *pos), lq[1] = {T}, cu[1] = {T}, kvp[1] = {T - 1};
    assert_non_null(pos);
    for (int64_t i = 0; i < T; i++) pos[i] = i;
    kvc_step_metadata md = {.is_prefill = true,
                            .n_rows = 1,
                            .n_tokens = T,
                            .prompt_tokens = T,
                            .positions = pos,
                            .kv_pos = kvp,
                            .seq_lens_q = lq,
                            .seq_lens_kv = lq,
                            .cu_seq_lens_q = cu,
                            .cu_seq_lens_kv = cu};
    kvc_model_workspace *ws = NULL;
    kvc_status st = kvc_model_workspace_create(m, T, 1, max_kv_len, &ws);
    kvc_forward_args a = {.token_ids = ids, .md = &md, .all_logits = true, .logits = lg};
    if (st == KVC_OK) st = kvc_model_forward(m, ws, &a);
    kvc_model_workspace_destroy(ws);
    free(pos);
    return st;
}

/* Counts the files under dir (recursively) whose text holds needle, except `self`. */
static int files_naming(const char *dir, const char *needle, const char *self) {
    DIR *d = opendir(dir);
    if (d == NULL) fail_msg("cannot open %s", dir);
    int hits = 0;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) {
            hits += files_naming(path, needle, self);
            continue;
        }
        if (strcmp(e->d_name, self) == 0 || sb.st_size > (1 << 22)) continue;
        char *text = NULL;
        size_t n = 0;
        if (kvci_read_file(path, 1 << 22, &text, &n) != KVC_OK) continue;
        if (strstr(text, needle) != NULL) {
            print_message("%s names %s\n", path, needle);
            hits++;
        }
        kvci_free(text);
    }
    closedir(d);
    return hits;
}

void kvc_test_assert_only_file_naming(const char *needle, const char *self) {
    const char *data = getenv("KVC_DATA_DIR"); /* <source>/tests/data */
    if (data == NULL) fail_msg("KVC_DATA_DIR is not set (ctest sets it)");
    const char *const dirs[] = {"src", "include", "tests", "tools", "cli", "bench", "python"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/../../%s", data, dirs[i]);
        assert_int_equal(files_naming(path, needle, self), 0);
    }
}

static void engine_ok(kvc_status st, const char *what) {
    if (st != KVC_OK) fail_msg("engine %s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

void kvc_test_engine_generate(kvc_engine *e, const int32_t *ids, const int64_t *lens, int64_t n, int64_t nt,
                              int max_steps, int32_t *out) {
    int64_t off = 0;
    for (int64_t i = 0; i < n; off += lens[i++]) {
        kvc_engine_request r = kvc_engine_request_default();
        r.id = i, r.prompt = ids + off, r.n_prompt = lens[i], r.max_new_tokens = nt;
        engine_ok(kvc_engine_add_request(e, &r), "add_request");
    }
    for (int64_t finished = 0, steps = 0; finished < n; steps++) {
        if (steps >= max_steps) fail_msg("engine: %lld requests not finished after %d steps", (long long)n, max_steps);
        kvc_engine_step_result res;
        engine_ok(kvc_engine_step(e, &res), "step");
        finished = 0;
        for (int64_t i = 0; i < n; i++) {
            kvc_engine_request_info info;
            engine_ok(kvc_engine_request_get(e, i, &info), "request_get");
            finished += info.state == KVC_REQ_FINISHED;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t got = 0;
        engine_ok(kvc_engine_request_output(e, i, out + i * nt, nt, &got), "output");
        if (got != nt)
            fail_msg("engine: request %lld has %lld tokens, %lld expected", (long long)i, (long long)got,
                     (long long)nt);
    }
}
