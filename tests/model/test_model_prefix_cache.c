/* Outputs are unchanged by prefix caching: a hybrid model (GptOss: sliding
 * window 4 and full-attention layers, hence a SlidingWindow and a
 * FullAttention key) serves a request whose prompt shares a prefix with one
 * served before; with caching on it takes the cached blocks and prefills
 * only the rest. Its logits over the prefill and NT greedy decode steps are
 * compared bit for bit (memcmp) with the same request served by a manager
 * without caching. Storage poisoning is on: a read of a slot not written in
 * its block's current life would turn the logits into NaN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/kvcache.h"
#include "tiny_gpt_oss.h"

#define NT      6
#define V       128
#define MAX_LEN 64
#define BS      4

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK && st != KVC_CLAMPED) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

static void keep_tensor(void *user, const kvc_tensor *t) {
    (void)user, (void)t; /* the storage also records it in entry.tensor */
}

typedef struct server {
    kvc_model *model;
    kvc_model_cache_info *ci;
    kvc_cache_storage *storage;
    kvc_manager *mgr;
    kvc_step_buffers *buf;
    kvc_model_workspace *ws;
    kvc_layer_cache layers[4];
    kvc_model_caches caches;
} server;

static void server_init(server *s, kvc_model *m, bool caching) {
    memset(s, 0, sizeof *s);
    s->model = m;
    check(kvc_model_cache_info_build(m, false, KVC_DTYPE_F32, BS, &s->ci), "cache info");
    for (int l = 0; l < s->ci->n_layer_infos; l++)
        for (int e = 0; e < s->ci->layer_infos[l].n_caches; e++)
            s->ci->layer_infos[l].caches[e].tensor_setter = keep_tensor;
    kvc_plan_params pp = kvc_plan_default_params();
    pp.mode = KVC_PLAN_OFFLINE;
    pp.max_len = MAX_LEN;
    pp.max_concurrency = 4;
    kvc_block_plan plan;
    check(kvc_plan_blocks(&pp, s->ci, &plan), "plan");
    const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    check(kvc_cache_storage_allocate(s->ci, &plan, &sp, &s->storage), "storage");
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = MAX_LEN;
    mp.prefix_caching = caching;
    mp.poison_new_blocks = true;
    check(kvc_manager_create(s->ci, &plan, &mp, &s->mgr), "manager");
    check(kvc_step_buffers_create(s->mgr, 1, MAX_LEN, &s->buf), "step buffers");
    for (int l = 0; l < 4; l++) {
        s->layers[l].k = s->ci->layer_infos[l].caches[0].tensor;
        s->layers[l].v = s->ci->layer_infos[l].caches[1].tensor;
        snprintf(s->layers[l].key, sizeof s->layers[l].key, "%s",
                 kvc_cache_entry_group_key(&s->ci->layer_infos[l].caches[0]));
    }
    s->caches = (kvc_model_caches){.kind = KVC_MCACHE_PAGED, .block_size = BS, .n_layers = 4, .layers = s->layers};
    check(kvc_model_workspace_create(m, MAX_LEN, 1, MAX_LEN, &s->ws), "workspace");
}

static void server_release(server *s) {
    kvc_model_workspace_destroy(s->ws);
    kvc_step_buffers_destroy(s->buf);
    kvc_manager_destroy(s->mgr);
    kvc_cache_storage_destroy(s->storage);
    kvc_model_cache_info_destroy(s->ci);
}

/* One forward step of request id over positions [done, done + n). */
static void step(server *s, int64_t id, const int32_t *ids, int64_t done, int64_t n, bool prefill, float *logits) {
    kvc_step_request row = {.request_id = id, .computed_tokens = done, .num_new_tokens = n};
    kvc_step_metadata md;
    check(kvc_step_metadata_build(s->buf, &row, 1, prefill, &md), "metadata");
    kvc_forward_args a = {.token_ids = ids, .md = &md, .caches = &s->caches, .logits = logits};
    check(kvc_model_forward(s->model, s->ws, &a), "forward");
}

/* Serves a request: the cached prefix of its prompt (if any), a prefill of
 * the rest, NT greedy decode steps; logits[(NT + 1) * V] of every step.
 * Returns the hit length. */
static int64_t serve(server *s, int64_t id, const int32_t *prompt, int64_t n, float *logits) {
    int32_t tokens[MAX_LEN];
    memcpy(tokens, prompt, (size_t)n * sizeof *tokens);
    kvc_prompt p = {.tokens = tokens, .n_tokens = n};
    kvc_prefix_hit hit;
    check(kvc_manager_find_prefix(s->mgr, &p, &hit), "find prefix");
    int64_t done = hit.n_tokens;
    check(kvc_manager_allocate_slots(
              s->mgr,
              &(kvc_slot_request){.request_id = id, .computed_tokens = done, .num_new_tokens = n - done, .prompt = &p}),
          "admit");
    step(s, id, tokens + done, done, n - done, true, logits);
    check(kvc_manager_cache_computed(s->mgr, id, tokens, n), "cache computed");
    for (int64_t i = 0; i < NT; i++) {
        const float *row = logits + i * V;
        int32_t best = 0;
        for (int32_t v = 1; v < V; v++)
            if (row[v] > row[best]) best = v;
        int64_t pos = n + i;
        tokens[pos] = best;
        check(kvc_manager_allocate_slots(
                  s->mgr, &(kvc_slot_request){.request_id = id, .computed_tokens = pos, .num_new_tokens = 1}),
              "decode");
        step(s, id, tokens + pos, pos, 1, false, logits + (i + 1) * V);
        check(kvc_manager_cache_computed(s->mgr, id, tokens, pos + 1), "cache computed");
    }
    check(kvc_manager_free(s->mgr, id), "free");
    return hit.n_tokens;
}

static void test_hybrid_logits_equal_with_and_without_caching(void **state) {
    (void)state;
    kvc_model_config cfg;
    check(kvc_model_config_parse(KVC_TEST_TINY_GPT_OSS_JSON, "cfg", &cfg), "config");
    kvc_model *m = NULL;
    check(kvc_model_create_random(&cfg, 11, &m), "model");
    static const int32_t first[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31, 8, 45, 2, 60, 71, 33, 19, 88, 7, 14};
    static const int32_t second[] = {3,  17, 42, 9,  100, 5,  77, 63, 12, 1,  99, 31, 8,
                                     45, 2,  60, 71, 33,  19, 88, 50, 51, 52, 53, 54};
    const int64_t n_first = sizeof first / sizeof first[0], n_second = sizeof second / sizeof second[0];
    static float cached[(NT + 1) * V], fresh[(NT + 1) * V], scratch[(NT + 1) * V];

    server on, off;
    server_init(&on, m, true);
    assert_int_equal(serve(&on, 1, first, n_first, scratch), 0);
    int64_t hit = serve(&on, 2, second, n_second, cached);
    assert_int_equal(hit, 20); /* the shared 20 tokens: 5 full blocks, the window's last block */
    /* A preempted-and-recomputed request hits its own earlier blocks too. */
    assert_int_equal(serve(&on, 3, second, n_second, scratch), 24);
    assert_memory_equal(scratch, cached, sizeof cached);
    server_release(&on);

    server_init(&off, m, false);
    assert_int_equal(serve(&off, 2, second, n_second, fresh), 0);
    server_release(&off);
    for (int64_t i = 0; i < (NT + 1) * V; i++)
        if (cached[i] != cached[i]) fail_msg("logit %lld is NaN: a poisoned slot was read", (long long)i);
    assert_memory_equal(cached, fresh, sizeof cached);
    kvc_model_destroy(m);
}

/* Issue 24: a prompt sharing only the first 12 tokens of a 22-token prompt
 * prefilled in one chunk hits them: the sliding-window layers' blocks
 * behind that prefill's window were computed, cached and released, not
 * skipped; its logits equal a run without caching, bit for bit. */
static void test_hybrid_hit_behind_the_window(void **state) {
    (void)state;
    kvc_model_config cfg;
    check(kvc_model_config_parse(KVC_TEST_TINY_GPT_OSS_JSON, "cfg", &cfg), "config");
    kvc_model *m = NULL;
    check(kvc_model_create_random(&cfg, 13, &m), "model");
    static const int32_t first[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31, 8, 45, 2, 60, 71, 33, 19, 88, 7, 14};
    static const int32_t early[] = {3, 17, 42, 9, 100, 5, 77, 63, 12, 1, 99, 31, 90, 91, 92, 93, 94, 95};
    const int64_t n_first = sizeof first / sizeof first[0], n_early = sizeof early / sizeof early[0];
    static float cached[(NT + 1) * V], fresh[(NT + 1) * V], scratch[(NT + 1) * V];
    server on, off;
    server_init(&on, m, true);
    assert_int_equal(serve(&on, 1, first, n_first, scratch), 0);
    assert_int_equal(serve(&on, 2, early, n_early, cached), 12);
    server_release(&on);
    server_init(&off, m, false);
    assert_int_equal(serve(&off, 2, early, n_early, fresh), 0);
    server_release(&off);
    for (int64_t i = 0; i < (NT + 1) * V; i++)
        if (cached[i] != cached[i]) fail_msg("logit %lld is NaN: a poisoned slot was read", (long long)i);
    assert_memory_equal(cached, fresh, sizeof cached);
    kvc_model_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_hybrid_logits_equal_with_and_without_caching),
                                       cmocka_unit_test(test_hybrid_hit_behind_the_window)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
