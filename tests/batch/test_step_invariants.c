/* INV-R1..R6 (VER 5) on randomised steps over a real
 * hybrid manager (full, sliding window, compressed full, Mamba, chunked
 * local with a chunk of 10 over blocks of 4), driven the
 * way the engine drives it (KM 5.4): FIFO prefill admission, decode rows
 * padded to a fixed batch, speculative acceptance, finish and free. Every
 * expectation is recomputed from the manager's tables and the simulated
 * request state, not from the builder's own arrays. */
#include <stdlib.h>

#include "step_fixture.h"

#define MAX_MODEL_LEN        64
#define MAX_LIVE             6 /* decode rows are padded to this many */
#define MAX_ROWS             8
#define MAX_TOKENS           128
#define MAX_PREFILL_PER_STEP 3
#define FULL_BLOCKS          30

typedef struct sim_request {
    int64_t id;
    int64_t computed_len; /* index of the last cached token (RM 2) */
    bool live;
} sim_request;

typedef struct sim {
    step_fixture f;
    int64_t next_n;
    uint64_t rng;
    int64_t next_id;
    sim_request live[MAX_LIVE];
    int64_t owner[FULL_BLOCKS * 4]; /* full-key slot -> request that wrote it, -1 = none */
    /* what the run exercised (asserted non-zero at the end) */
    int64_t n_prefill, n_decode, n_padded_rows, n_no_space, n_window_nulls, n_spec_accepts, n_finished;
} sim;

static uint64_t rnd(sim *s, uint64_t n) {
    s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (s->rng >> 33) % n;
}

static void sim_free(sim *s, sim_request *r) {
    assert_int_equal(kvc_manager_free(s->f.m, r->id), KVC_OK);
    for (int64_t i = 0; i < FULL_BLOCKS * 4; i++) {
        if (s->owner[i] == r->id) s->owner[i] = -1;
    }
    r->live = false;
    s->n_finished++;
}

/* INV-R1 for key k, and the manager's own table of every real row. */
static void check_tables(sim *s, const kvc_step_metadata *md, const kvc_step_request *rows, int32_t k) {
    const kvc_step_key *key = &md->keys[k];
    bool mamba = kvc_manager_key_type(s->f.m, k) == KVC_ATTN_MAMBA;
    int64_t bs = kvc_manager_block_size(s->f.m, k);
    int64_t width = mamba ? (md->is_prefill ? 1 : 1 + s->next_n) : (MAX_MODEL_LEN + bs - 1) / bs;
    assert_int_equal(key->width, width);
    assert_string_equal(key->key, kvc_manager_key(s->f.m, k));
    for (int64_t b = 0; b < md->n_rows; b++) {
        const int32_t *row = key->block_table + b * width;
        int32_t ids[MAX_MODEL_LEN];
        int64_t n = 0;
        if (rows[b].request_id >= 0) {
            assert_int_equal(kvc_manager_block_ids(s->f.m, rows[b].request_id, k, ids, MAX_MODEL_LEN, &n), KVC_OK);
        }
        if (mamba && rows[b].request_id >= 0) assert_true(n >= width);
        if (!mamba) assert_true(n <= width);
        for (int64_t i = 0; i < width; i++) {
            int32_t want = i < n ? ids[i] : KVC_NULL_BLOCK;
            if (row[i] != want)
                fail_msg("key %s row %lld [%lld] = %d, expected %d", key->key, (long long)b, (long long)i, (int)row[i],
                         (int)want);
            if (!mamba && i < n && ids[i] == KVC_NULL_BLOCK) s->n_window_nulls++;
        }
    }
}

static int cmp_slot(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* INV-R2 and INV-R3 for key k. */
static void check_slots(sim *s, const kvc_step_metadata *md, const kvc_step_request *rows, int32_t k) {
    const kvc_step_key *key = &md->keys[k];
    kvc_attn_type type = kvc_manager_key_type(s->f.m, k);
    if (type == KVC_ATTN_MAMBA || kvc_manager_compress_ratio(s->f.m, k) != 1) {
        assert_null(key->slot_mapping);
        return;
    }
    assert_non_null(key->slot_mapping);
    int64_t bs = kvc_manager_block_size(s->f.m, k);
    int64_t limit = kvc_manager_num_blocks(s->f.m, k) * bs;
    int64_t real_slots[MAX_TOKENS];
    int64_t n_real = 0, t = 0;
    for (int64_t b = 0; b < md->n_rows; b++) {
        int32_t ids[MAX_MODEL_LEN];
        int64_t n = 0;
        if (rows[b].request_id >= 0) {
            assert_int_equal(kvc_manager_block_ids(s->f.m, rows[b].request_id, k, ids, MAX_MODEL_LEN, &n), KVC_OK);
        }
        for (int64_t i = 0; i < rows[b].num_new_tokens; i++, t++) {
            int64_t p = md->positions[t];
            int64_t want = (p / bs < n ? ids[p / bs] : 0) * bs + p % bs;
            assert_int_equal(key->slot_mapping[t], want);
            assert_true(key->slot_mapping[t] >= 0 && key->slot_mapping[t] < limit);
            if (rows[b].request_id < 0) continue;
            if (type == KVC_ATTN_FULL) {
                assert_true(key->slot_mapping[t] >= bs); /* never the null block */
                int64_t *owner = &s->owner[key->slot_mapping[t]];
                if (*owner != -1 && *owner != rows[b].request_id) {
                    fail_msg("slot %lld written by request %lld is owned by live request %lld",
                             (long long)key->slot_mapping[t], (long long)rows[b].request_id, (long long)*owner);
                }
                *owner = rows[b].request_id;
            }
            if (key->slot_mapping[t] >= bs) real_slots[n_real++] = key->slot_mapping[t];
        }
    }
    assert_int_equal(t, md->n_tokens);
    qsort(real_slots, (size_t)n_real, sizeof(int64_t), cmp_slot);
    for (int64_t i = 1; i < n_real; i++) {
        if (real_slots[i] == real_slots[i - 1])
            fail_msg("key %s: slot %lld used twice in one step", key->key, (long long)real_slots[i]);
    }
}

/* INV-R4, R5, R6 and the row-level fields, against the simulated state:
 * first[b] = the first position the engine expects row b to process. */
static void check_rows(const sim *s, const kvc_step_metadata *md, const kvc_step_request *rows, int64_t n_rows,
                       const int64_t *first) {
    assert_int_equal(md->n_rows, n_rows);
    int64_t t = 0, cu_q = 0, cu_kv = 0, prompt = 0;
    for (int64_t b = 0; b < n_rows; b++) {
        int64_t q = rows[b].num_new_tokens;
        bool real = rows[b].request_id >= 0;
        assert_int_equal(md->seq_lens_q[b], q);
        cu_q += q;
        cu_kv += md->seq_lens_kv[b];
        assert_int_equal(md->cu_seq_lens_q[b], cu_q);
        assert_int_equal(md->cu_seq_lens_kv[b], cu_kv);
        assert_int_equal(md->cu_seq_lens_q[b] - (b ? md->cu_seq_lens_q[b - 1] : 0), md->seq_lens_q[b]);
        if (real) {
            assert_int_equal(md->seq_lens_kv[b], md->kv_pos[b] + 1);
            for (int64_t i = 0; i < q; i++) assert_int_equal(md->positions[t + i], first[b] + i);
            assert_int_equal(md->kv_pos[b], first[b] + q - 1);
            if (md->is_prefill) {
                assert_int_equal(first[b], 0); /* INV-R6: prefill restarts at 0 */
                assert_int_equal(md->seq_lens_kv[b], q);
                prompt += q;
            } else {
                /* INV-R5 / RM 2: kv_len = computed_len + next_n + 1 */
                assert_int_equal(q, 1 + s->next_n);
                assert_int_equal(md->kv_pos[b], first[b] + s->next_n);
            }
        } else {
            for (int64_t i = 0; i < q; i++) assert_int_equal(md->positions[t + i], 0);
            assert_int_equal(md->kv_pos[b], 0);
            assert_int_equal(md->seq_lens_kv[b], md->is_prefill ? q : 1); /* INV-R5 padded decode rows */
        }
        t += q;
    }
    assert_int_equal(md->n_tokens, t);
    assert_int_equal(md->prompt_tokens, md->is_prefill ? prompt : 0);
    if (md->is_prefill) {
        for (int64_t b = 0; b < n_rows; b++) assert_int_equal(md->cu_seq_lens_q[b], md->cu_seq_lens_kv[b]);
    }
}

static void check_step(sim *s, const kvc_step_request *rows, int64_t n_rows, bool is_prefill, const int64_t *first) {
    kvc_step_metadata md;
    fixture_build(&s->f, rows, n_rows, is_prefill, &md);
    assert_int_equal(md.is_prefill, is_prefill);
    check_rows(s, &md, rows, n_rows, first);
    assert_int_equal(md.n_keys, kvc_manager_n_keys(s->f.m));
    for (int32_t k = 0; k < md.n_keys; k++) {
        check_tables(s, &md, rows, k);
        check_slots(s, &md, rows, k);
    }
    assert_int_equal(kvc_manager_check_invariants(s->f.m), KVC_OK);
}

static void step_prefill(sim *s) {
    kvc_step_request rows[MAX_PREFILL_PER_STEP + 1];
    int64_t first[MAX_PREFILL_PER_STEP + 1] = {0};
    sim_request *admitted[MAX_PREFILL_PER_STEP];
    int64_t n = 0;
    for (int i = 0; i < MAX_LIVE && n < MAX_PREFILL_PER_STEP; i++) {
        if (s->live[i].live) continue;
        int64_t id = s->next_id;
        int64_t len = 1 + (int64_t)rnd(s, 40);
        kvc_status st =
            kvc_manager_allocate_slots(s->f.m, &(kvc_slot_request){.request_id = id, .num_new_tokens = len});
        if (st == KVC_NO_SPACE) {
            s->n_no_space++;
            break; /* strict FIFO: the queue head waits */
        }
        assert_int_equal(st, KVC_OK);
        s->next_id += 1 + (int64_t)rnd(s, 5);
        s->live[i] = (sim_request){.id = id, .computed_len = 0, .live = true};
        admitted[n] = &s->live[i];
        rows[n++] = (kvc_step_request){id, 0, len};
    }
    if (n == 0) return;
    /* randomise the batch order so row order != slot order */
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rnd(s, (uint64_t)i + 1);
        kvc_step_request tr = rows[i];
        rows[i] = rows[j];
        rows[j] = tr;
        sim_request *ta = admitted[i];
        admitted[i] = admitted[j];
        admitted[j] = ta;
    }
    int64_t n_rows = n;
    if (rnd(s, 4) == 0) { /* trailing dummy row: its token is not a prompt token */
        rows[n_rows++] = (kvc_step_request){-1, 0, 1 + (int64_t)rnd(s, 3)};
        s->n_padded_rows++;
    }
    check_step(s, rows, n_rows, true, first);
    for (int64_t i = 0; i < n; i++) admitted[i]->computed_len = rows[i].num_new_tokens - 1;
    s->n_prefill++;
}

static void step_decode(sim *s) {
    kvc_step_request rows[MAX_LIVE];
    int64_t first[MAX_LIVE];
    sim_request *in_batch[MAX_LIVE];
    int64_t n = 0, q_len = 1 + s->next_n;
    for (int i = 0; i < MAX_LIVE; i++) {
        sim_request *r = &s->live[i];
        if (!r->live) continue;
        if (r->computed_len + 2 * s->next_n + 2 > MAX_MODEL_LEN || rnd(s, 10) == 0) {
            sim_free(s, r);
            continue;
        }
        kvc_status st = kvc_manager_allocate_slots(
            s->f.m, &(kvc_slot_request){.request_id = r->id,
                                        .computed_tokens = r->computed_len + 1,
                                        .num_new_tokens = q_len,
                                        .lookahead_tokens = s->next_n > 1 ? s->next_n - 1 : 0});
        if (st == KVC_NO_SPACE) {
            s->n_no_space++;
            continue; /* left out of this step */
        }
        assert_int_equal(st, KVC_OK);
        first[n] = r->computed_len + 1;
        in_batch[n] = r;
        rows[n++] = (kvc_step_request){r->id, r->computed_len + 1, q_len};
    }
    if (n == 0) return;
    int64_t n_rows = n;
    while (n_rows < MAX_LIVE) {
        first[n_rows] = 0;
        rows[n_rows++] = (kvc_step_request){-1, (int64_t)rnd(s, 9), q_len};
        s->n_padded_rows++;
    }
    check_step(s, rows, n_rows, false, first);
    for (int64_t i = 0; i < n; i++) {
        int64_t accepted = (int64_t)rnd(s, (uint64_t)s->next_n + 1);
        s->n_spec_accepts += accepted;
        in_batch[i]->computed_len += 1 + accepted;
    }
    s->n_decode++;
}

static void run(int64_t next_n, uint64_t seed, int64_t steps) {
    sim *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->next_n = next_n;
    s->rng = seed;
    s->next_id = 1 + (int64_t)(seed % 97);
    for (int64_t i = 0; i < FULL_BLOCKS * 4; i++) s->owner[i] = -1;
    const kvc_cache_entry e[5] = {
        fix_full("full", 4), fix_window("swa", 8, 12), fix_compressed("cmp", 8, 2), fix_mamba("ssm", next_n),
        fix_keyed(kvc_test_attention_entry("k_cache", KVC_ATTN_CHUNKED_LOCAL, 4, 10), "chunk")};
    fixture_create(&s->f, e, I64S(FULL_BLOCKS, 24, 40, 2 * MAX_LIVE * (1 + next_n) + 1, 40), 5, MAX_MODEL_LEN, MAX_ROWS,
                   MAX_TOKENS);
    for (int64_t i = 0; i < steps; i++) {
        bool any_live = false, any_free = false;
        for (int j = 0; j < MAX_LIVE; j++) {
            any_live |= s->live[j].live;
            any_free |= !s->live[j].live;
        }
        if (!any_live || (any_free && rnd(s, 3) == 0)) {
            step_prefill(s);
        } else {
            step_decode(s);
        }
    }
    for (int j = 0; j < MAX_LIVE; j++) {
        if (s->live[j].live) sim_free(s, &s->live[j]);
    }
    assert_int_equal(kvc_manager_num_live_requests(s->f.m), 0);
    /* the run must have exercised every branch it claims to check */
    assert_true(s->n_prefill > 50 && s->n_decode > 50);
    assert_true(s->n_padded_rows > 0);
    assert_true(s->n_no_space > 0);
    assert_true(s->n_window_nulls > 0);
    assert_true(s->n_finished > 20);
    if (next_n > 0) assert_true(s->n_spec_accepts > 0);
    fixture_destroy(&s->f);
    free(s);
}

static void test_random_steps_no_speculation(void **state) {
    (void)state;
    run(0, 12345, 3000);
    run(0, 987654321, 3000);
}

static void test_random_steps_next_n_1(void **state) {
    (void)state;
    run(1, 4242, 3000);
    run(1, 77, 3000);
}

static void test_random_steps_next_n_2(void **state) {
    (void)state;
    run(2, 31337, 3000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_steps_no_speculation),
        cmocka_unit_test(test_random_steps_next_n_1),
        cmocka_unit_test(test_random_steps_next_n_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
