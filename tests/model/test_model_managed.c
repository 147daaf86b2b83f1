/* Framework path: the forward consumes step metadata built by the request
 * manager (kvc_step_metadata_build) over caches the planner sized and
 * storage allocated from the model's own cache description. GptOss with
 * sliding and full layers: sliding layers read the SlidingWindow key (whose
 * blocks leave the window and are released), full layers the FullAttention
 * key. Greedy tokens and logits equal the runner's no-cache recomputation.
 * Each step plans its attention once per kind (sliding, full) for the two
 * layers of the kind. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvcache/kvcache.h"
#include "model/forward_internal.h"
#include "tiny_gpt_oss.h"

#define N_REQ 3
#define NT    8

static const int32_t IDS[] = {3,  17, 42, 9,  100, 5,  77, 63, 12, 1,   99, 31, 8,
                              45, 2,  60, 71, 33,  19, 88, 7,  14, 120, 4,  6,  50};
static const int64_t LENS[N_REQ] = {13, 3, 10};

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK && st != KVC_CLAMPED) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

static void keep_tensor(void *user, const kvc_tensor *t) {
    (void)user, (void)t; /* the storage also records it in entry.tensor */
}

/* A forward over md (a copy of the step's, one field changed by the caller) is refused naming `text`. */
static void expect_md_refused(const kvc_model *m, kvc_model_workspace *ws, const kvc_forward_args *a0,
                              const kvc_step_metadata *md, const char *text) {
    kvc_forward_args a = *a0;
    a.md = md;
    const kvc_status st = kvc_model_forward(m, ws, &a);
    if (st == KVC_OK) fail_msg("forward accepted metadata it should refuse with \"%s\"", text);
    if (!strstr(kvc_last_error(), text)) fail_msg("refusal \"%s\" does not name \"%s\"", kvc_last_error(), text);
}

/* Step metadata built by hand that disagrees with itself (docs/batch.md, "Caller-built metadata"): positions
 * out of order, kv_pos or cu_seq_lens_kv not those of seq_lens_kv, a slot outside the row's own blocks (here
 * the next row's), a table narrower than the row's keys, too many keys; contiguous caches: two step rows on
 * one cache row. The step then runs unchanged (the caller compares its logits). */
static void tamper_prefill(const kvc_model *m, kvc_model_workspace *ws, const kvc_forward_args *a,
                           const kvc_layer_cache *paged_layers) {
    const kvc_step_metadata *md = a->md;
    kvc_step_metadata bad = *md;
    int64_t pos[64];
    memcpy(pos, md->positions, (size_t)md->n_tokens * sizeof pos[0]);
    pos[3] = 4, pos[4] = 3; /* row 0: 0 1 2 4 3 5 .. 12, still ending at seq_lens_kv - 1 */
    bad.positions = pos;
    expect_md_refused(m, ws, a, &bad, "row 0: positions[3] = 4, but a row of 13 query tokens");
    kvc_layer_cache layers[4];
    const kvc_model_config *c = kvc_model_config_of(m);
    const int64_t w = c->num_kv_heads * c->head_dim;
    float *mem = calloc((size_t)(3 * 64 * w), sizeof(float));
    for (int l = 0; l < 4; l++) {
        layers[l] = paged_layers[l];
        layers[l].k = layers[l].v = (kvc_tensor){.data = mem, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {3, 64, w}};
    }
    const kvc_model_caches contiguous = {.kind = KVC_MCACHE_CONTIGUOUS, .n_layers = 4, .layers = layers};
    const int64_t rows[3] = {0, 2, 0};
    kvc_forward_args ac = *a;
    ac.caches = &contiguous, ac.cache_rows = rows;
    assert_int_equal(kvc_model_forward(m, ws, &ac), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "cache_rows[0] and cache_rows[2] are both cache row 0"));
    for (int l = 0; l < 4; l++) layers[l].k.shape[0] = layers[l].v.shape[0] = 2; /* 3 step rows, 2 cache rows */
    ac.cache_rows = NULL;
    assert_int_equal(kvc_model_forward(m, ws, &ac), KVC_ERANGE);
    assert_non_null(strstr(kvc_last_error(), "3 step rows on 2 cache rows"));
    for (int64_t i = 0; i < 3 * 64 * w; i++) /* refused before layer 0 wrote rows 0 and 1 */
        if (mem[i] != 0.0f) fail_msg("cache element %lld written by a refused step", (long long)i);
    free(mem);
}

static void tamper_decode(const kvc_model *m, kvc_model_workspace *ws, const kvc_forward_args *a) {
    const kvc_step_metadata *md = a->md;
    kvc_step_metadata bad = *md;
    int64_t kv_pos[N_REQ], cu_kv[N_REQ], slots[N_REQ];
    memcpy(kv_pos, md->kv_pos, sizeof kv_pos);
    kv_pos[1]++;
    bad.kv_pos = kv_pos;
    expect_md_refused(m, ws, a, &bad, "row 1: kv_pos 4, but seq_lens_kv 4 needs kv_pos 3");
    bad = *md;
    memcpy(cu_kv, md->cu_seq_lens_kv, sizeof cu_kv);
    cu_kv[2]--;
    bad.cu_seq_lens_kv = cu_kv;
    expect_md_refused(m, ws, a, &bad, "row 2: cu_seq_lens_kv");
    bad = *md;
    const int32_t k = (int32_t)(kvc_step_metadata_key(md, "FullAttention") - md->keys);
    memcpy(slots, md->keys[k].slot_mapping, sizeof slots);
    slots[0] = slots[1]; /* row 0 writing into row 1's block */
    bad.keys[k].slot_mapping = slots;
    expect_md_refused(m, ws, a, &bad, "key FullAttention row 0: slot_mapping[0]");
    bad = *md;
    int32_t table[N_REQ * 16];
    assert_true(md->keys[k].width <= 16);
    memcpy(table, md->keys[k].block_table, (size_t)(N_REQ * md->keys[k].width) * sizeof table[0]);
    table[0] = 1 << 20; /* a block no cache has, read by row 0's attention: refused before layer 0 writes */
    bad.keys[k].block_table = table;
    expect_md_refused(m, ws, a, &bad, "key FullAttention row 0: block_table entry 0 = 1048576 is outside [0, ");
    bad = *md;
    bad.keys[k].width = 1; /* row 0 sees 14 keys: 4 blocks of 4 */
    expect_md_refused(m, ws, a, &bad, "key FullAttention row 0: seq_lens_kv 14 needs 4 blocks of 4");
    bad = *md;
    bad.n_keys = KVC_MAX_MANAGERS + 1;
    expect_md_refused(m, ws, a, &bad, "md n_keys 17 outside [0, 16]");
}

static void test_gpt_oss_through_managers(void **state) {
    (void)state;
    kvc_model_config cfg;
    check(kvc_model_config_parse(KVC_TEST_TINY_GPT_OSS_JSON, "cfg", &cfg), "config");
    kvc_model *m = NULL;
    check(kvc_model_create_random(&cfg, 7, &m), "model");
    const int64_t V = cfg.vocab_size, bs = 4, max_len = 64;

    /* reference: runner without cache */
    kvc_runner_params rp = kvc_runner_default_params();
    rp.mode = KVC_RUNNER_RECOMPUTE;
    rp.max_new_tokens = NT;
    kvc_runner *r = NULL;
    check(kvc_runner_create(m, &rp, N_REQ, 13, &r), "runner");
    int32_t ref_tok[N_REQ * NT];
    float *ref_lg = calloc((size_t)(NT * N_REQ * V), sizeof(float));
    check(kvc_runner_generate(r, IDS, LENS, N_REQ, ref_tok, ref_lg, NULL), "reference");
    kvc_runner_destroy(r);

    kvc_model_cache_info *ci = NULL;
    check(kvc_model_cache_info_build(m, false, KVC_DTYPE_F32, bs, &ci), "cache info");
    check(kvc_validate_cache_info(ci, -1), "validate");
    for (int l = 0; l < ci->n_layer_infos; l++)
        for (int e = 0; e < ci->layer_infos[l].n_caches; e++) ci->layer_infos[l].caches[e].tensor_setter = keep_tensor;
    kvc_plan_params pp = kvc_plan_default_params();
    pp.mode = KVC_PLAN_OFFLINE;
    pp.max_len = max_len;
    pp.max_concurrency = N_REQ;
    kvc_block_plan planned, plan;
    check(kvc_plan_blocks(&pp, ci, &planned), "plan");
    /* A prefill backs every block of its prompt until the next allocation
     * releases those behind the window: the sliding pool gets room for the
     * first step's three whole prompts on top of its per-request window, as
     * the engine adds one step's chunks (docs/scheduler.md). */
    const char *keys[KVC_MAX_MANAGERS];
    int64_t counts[KVC_MAX_MANAGERS];
    for (int32_t g = 0; g < planned.n_groups; g++) {
        keys[g] = planned.groups[g].key;
        counts[g] = planned.groups[g].block_num + (planned.groups[g].fixed ? (13 + 3 + 10) / bs + N_REQ : 0);
    }
    check(kvc_block_plan_from_counts(ci, keys, counts, planned.n_groups, &plan), "plan with prefill room");
    kvc_cache_storage *storage = NULL;
    const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    check(kvc_cache_storage_allocate(ci, &plan, &sp, &storage), "storage");
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = max_len;
    kvc_manager *mgr = NULL;
    check(kvc_manager_create(ci, &plan, &mp, &mgr), "manager");
    assert_int_equal(kvc_manager_n_keys(mgr), 2);
    kvc_step_buffers *buf = NULL;
    check(kvc_step_buffers_create(mgr, N_REQ, 64, &buf), "step buffers");

    kvc_layer_cache layers[4];
    for (int l = 0; l < 4; l++) {
        layers[l].k = ci->layer_infos[l].caches[0].tensor;
        layers[l].v = ci->layer_infos[l].caches[1].tensor;
        snprintf(layers[l].key, sizeof layers[l].key, "%s", kvc_cache_entry_group_key(&ci->layer_infos[l].caches[0]));
    }
    assert_string_equal(layers[0].key, "SlidingWindow");
    assert_string_equal(layers[1].key, "FullAttention");
    kvc_model_caches caches = {.kind = KVC_MCACHE_PAGED, .block_size = bs, .n_layers = 4, .layers = layers};
    kvc_model_workspace *ws = NULL;
    /* keys beyond int32 positions (the manager's max_model_len bound): refused, where a DeepSeek sparse attention
     * model's scratch size overflowed */
    assert_int_equal(kvc_model_workspace_create(m, 64, N_REQ, (int64_t)1 << 31, &ws), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "max_kv_len < 2^31"));
    check(kvc_model_workspace_create(m, 64, N_REQ, max_len, &ws), "workspace");

    float lg[N_REQ * 128];
    int32_t ids[64], tok[N_REQ * NT];
    int64_t cached[N_REQ];
    kvc_step_request rows[N_REQ];
    for (int64_t i = 0; i < NT; i++) {
        int64_t t = 0, off = 0;
        for (int64_t b = 0; b < N_REQ; b++) {
            const bool prefill = i == 0;
            const int64_t n_new = prefill ? LENS[b] : 1;
            check(kvc_manager_allocate_slots(mgr, &(kvc_slot_request){.request_id = b,
                                                                      .computed_tokens = prefill ? 0 : cached[b],
                                                                      .num_new_tokens = n_new}),
                  "allocate");
            rows[b] = (kvc_step_request){
                .request_id = b, .computed_tokens = prefill ? 0 : cached[b], .num_new_tokens = n_new};
            if (prefill)
                memcpy(ids + t, IDS + off, (size_t)n_new * sizeof(int32_t));
            else
                ids[t] = tok[b * NT + i - 1];
            t += n_new;
            off += LENS[b];
        }
        kvc_step_metadata md;
        check(kvc_step_metadata_build(buf, rows, N_REQ, i == 0, &md), "metadata");
        kvc_forward_args a = {.token_ids = ids, .md = &md, .caches = &caches, .logits = lg};
        if (i == 0) { /* a layer key without its NUL (read past by the key lookup and the message): refused */
            memset(layers[2].key, 'x', sizeof layers[2].key);
            assert_int_equal(kvc_model_forward(m, ws, &a), KVC_EINVAL);
            assert_non_null(strstr(kvc_last_error(), "layer 2 paged cache names no manager key"));
            snprintf(layers[2].key, sizeof layers[2].key, "SlidingWindow");
            caches.layers = NULL; /* named as such, not as a count that matches the model's */
            assert_int_equal(kvc_model_forward(m, ws, &a), KVC_EINVAL);
            assert_non_null(strstr(kvc_last_error(), "caches hold 4 layers (layers is NULL), the model has 4"));
            caches.layers = layers;
        }
        if (i == 0) tamper_prefill(m, ws, &a, layers);
        if (i == 1) tamper_decode(m, ws, &a);
        const uint64_t plans[2] = {ws->attn_plans[0].plans, ws->attn_plans[1].plans};
        check(kvc_model_forward(m, ws, &a), "forward");
        assert_int_equal(ws->attn_plans[0].plans, plans[0] + 1); /* full layers 1, 3 */
        assert_int_equal(ws->attn_plans[1].plans, plans[1] + 1); /* sliding layers 0, 2 */
        for (int64_t b = 0; b < N_REQ; b++) {
            const float *row = lg + b * V;
            int32_t best = 0;
            for (int32_t v = 1; v < V; v++)
                if (row[v] > row[best]) best = v;
            tok[b * NT + i] = best;
            cached[b] = (i == 0 ? 0 : cached[b]) + rows[b].num_new_tokens;
            for (int64_t v = 0; v < V; v++) {
                const double want = ref_lg[(i * N_REQ + b) * V + v];
                if (fabs(row[v] - want) > 1e-5 * fmax(1.0, fabs(want)))
                    fail_msg("step %lld row %lld logit %lld: %g vs recomputation %g", (long long)i, (long long)b,
                             (long long)v, (double)row[v], want);
            }
            if (best != ref_tok[b * NT + i])
                fail_msg("step %lld row %lld: token %d vs %d", (long long)i, (long long)b, best, ref_tok[b * NT + i]);
        }
    }
    /* the sliding manager released blocks that left the window */
    int32_t sw = -1;
    check(kvc_manager_key_index(mgr, "SlidingWindow", &sw), "key");
    int32_t table[32];
    int64_t n_blocks = 0;
    check(kvc_manager_block_ids(mgr, 0, sw, table, 32, &n_blocks), "block ids");
    assert_true(n_blocks > 2 && table[0] == KVC_NULL_BLOCK);

    kvc_model_workspace_destroy(ws);
    kvc_step_buffers_destroy(buf);
    kvc_manager_destroy(mgr);
    kvc_cache_storage_destroy(storage);
    kvc_model_cache_info_destroy(ci);
    kvc_model_destroy(m);
    free(ref_lg);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gpt_oss_through_managers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
