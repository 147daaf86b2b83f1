/* libFuzzer target: bytes decoded into allocate/free sequences against a
 * small FullAttention + SlidingWindow + Mamba manager. After every op the
 * manager's invariants must hold, and each outcome is checked against the
 * rules (KM 5.2, INV-K1/K2 in docs/rules.md):
 *   - valid arguments never give a negative status;
 *   - KVC_OK/KVC_CLAMPED: every selected key addresses the demand, CLAMPED
 *     exactly when the demand passed max_model_len, unselected keys untouched;
 *   - KVC_NO_SPACE: no table grew, no pool lost free blocks (sliding-window
 *     releases may have returned some);
 *   - negative counts: KVC_EINVAL and nothing changed;
 *   - free: the request is gone; at the end every block is back.
 *
 * One op = 4 bytes: [kind:2 | request:3 | keys:3] [computed] [new] [extra]. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache/cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { N_KEYS = 3, N_REQUESTS = 8, MAX_MODEL_LEN = 64, TABLE_CAP = 64 };

static void die(const char *what, int64_t op) {
    fprintf(stderr, "fuzz_ops: op %lld: %s (last error: %s)\n", (long long)op, what, kvc_last_error());
    abort();
}

static kvc_manager *make_manager(void) {
    static kvc_cache_entry entries[N_KEYS];
    static kvc_layer_cache_info layers[N_KEYS];
    static const char *const keys[N_KEYS] = {"FullAttention", "SlidingWindow", "Mamba"};
    static const int64_t counts[N_KEYS] = {16, 12, 7};
    for (int i = 0; i < N_KEYS; i++) {
        kvc_cache_entry *e = &entries[i];
        *e = kvc_cache_entry_default();
        snprintf(e->name, sizeof e->name, "cache%d", i);
        e->attn_type = i; /* FullAttention, SlidingWindow, Mamba: also the manager order */
        e->dtype = KVC_DTYPE_F32;
        layers[i] = (kvc_layer_cache_info){.layer_idx = i, .n_caches = 1, .caches = e};
        if (i == KVC_ATTN_MAMBA) {
            e->is_state = true;
            e->block_size = 1;
            e->n_shape = 2;
            e->shape[0] = 4;
            e->shape[1] = 3;
            e->next_n = 1;
        } else {
            e->num_head = 1;
            e->n_dims = 1;
            e->dim[0] = 8;
            e->block_size = 4;
        }
    }
    entries[KVC_ATTN_SLIDING_WINDOW].sliding_window = 6;
    static kvc_model_cache_info ci = {.num_layers = N_KEYS, .n_layer_infos = N_KEYS, .layer_infos = layers};
    kvc_block_plan plan;
    if (kvc_block_plan_from_counts(&ci, keys, counts, N_KEYS, &plan) != KVC_OK) die("plan", -1);
    kvc_manager_params mp = kvc_manager_default_params();
    mp.max_model_len = MAX_MODEL_LEN;
    mp.engine_next_n = 1;
    kvc_manager *m = NULL;
    if (kvc_manager_create(&ci, &plan, &mp, &m) != KVC_OK) die("manager_create", -1);
    return m;
}

/* A request's tables and the pools' free counts. */
typedef struct snapshot {
    int32_t ids[N_KEYS][TABLE_CAP];
    int64_t len[N_KEYS];
    int64_t free[N_KEYS];
} snapshot;

static void take_snapshot(const kvc_manager *m, int64_t rid, snapshot *s, int64_t op) {
    for (int32_t k = 0; k < N_KEYS; k++) {
        if (kvc_manager_block_ids(m, rid, k, s->ids[k], TABLE_CAP, &s->len[k]) != KVC_OK || s->len[k] > TABLE_CAP)
            die("block_ids", op);
        s->free[k] = kvc_manager_num_free(m, k);
    }
}

static bool same_table(const snapshot *a, const snapshot *b, int32_t k) {
    return a->len[k] == b->len[k] && memcmp(a->ids[k], b->ids[k], (size_t)a->len[k] * sizeof(int32_t)) == 0;
}

static void check_allocation(const kvc_manager *m, kvc_status st, uint64_t mask, int64_t demand, const snapshot *before,
                             const snapshot *after, int64_t op) {
    if (st < 0) die("valid allocation refused", op);
    for (int32_t k = 0; k < N_KEYS; k++) {
        bool selected = (mask >> k) & 1;
        if (!selected && (!same_table(before, after, k) || before->free[k] != after->free[k]))
            die("an unselected key changed", op);
        if (st == KVC_NO_SPACE) {
            if (after->len[k] > before->len[k]) die("a table grew on KVC_NO_SPACE", op);
            if (after->free[k] < before->free[k]) die("a pool lost blocks on KVC_NO_SPACE", op);
            if (kvc_manager_key_type(m, k) != KVC_ATTN_SLIDING_WINDOW && !same_table(before, after, k))
                die("NO_SPACE changed a table", op);
            continue;
        }
        if (!selected) continue;
        int64_t need = demand < MAX_MODEL_LEN ? demand : MAX_MODEL_LEN;
        int64_t want = kvc_manager_key_type(m, k) == KVC_ATTN_MAMBA
                           ? 1
                           : (need + kvc_manager_block_size(m, k) - 1) / kvc_manager_block_size(m, k);
        if (after->len[k] < want) die("a successful allocation does not address the demand", op);
    }
    if (st == KVC_CLAMPED && demand <= MAX_MODEL_LEN) die("KVC_CLAMPED without clamping", op);
    if (st == KVC_OK && demand > MAX_MODEL_LEN) die("clamping not reported", op);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kvc_manager *m = make_manager();
    snapshot before, after;
    for (size_t i = 0; i + 4 <= size; i += 4) {
        int64_t op = (int64_t)(i / 4);
        int kind = data[i] & 3;
        int64_t rid = (data[i] >> 2) & 7;
        uint64_t mask = (uint64_t)(data[i] >> 5) == 7 ? KVC_ALL_KEYS : (uint64_t)(data[i] >> 5);
        int64_t computed = data[i + 1] % 80, fresh = data[i + 2] % 40;
        int64_t lookahead = data[i + 3] & 3, reserved = (data[i + 3] >> 2) & 15;
        take_snapshot(m, rid, &before, op);
        if (kind == 3) {
            if (kvc_manager_free(m, rid) != KVC_OK) die("free", op);
            take_snapshot(m, rid, &after, op);
            for (int32_t k = 0; k < N_KEYS; k++)
                if (after.len[k] != 0 || kvc_manager_has_request(m, rid, k)) die("request still there after free", op);
        } else if (kind == 2) {
            /* One of the counts made negative: refused, nothing changes. */
            int which = data[i + 3] % 3;
            kvc_status st = kvc_manager_allocate_slots(
                m, &(kvc_slot_request){.request_id = rid,
                                       .computed_tokens = which == 0 ? -1 - computed : computed,
                                       .num_new_tokens = which == 1 ? -1 - fresh : fresh,
                                       .lookahead_tokens = which == 2 ? -1 - lookahead : lookahead,
                                       .reserved_tokens = reserved,
                                       .skip_keys = ~mask});
            take_snapshot(m, rid, &after, op);
            if (st != KVC_EINVAL) die("negative count not refused with KVC_EINVAL", op);
            for (int32_t k = 0; k < N_KEYS; k++)
                if (!same_table(&before, &after, k) || before.free[k] != after.free[k])
                    die("a refused call changed the manager", op);
        } else {
            kvc_status st = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = rid,
                                                                              .computed_tokens = computed,
                                                                              .num_new_tokens = fresh,
                                                                              .lookahead_tokens = lookahead,
                                                                              .reserved_tokens = reserved,
                                                                              .skip_keys = ~mask});
            take_snapshot(m, rid, &after, op);
            check_allocation(m, st, mask, computed + fresh + lookahead, &before, &after, op);
        }
        if (kvc_manager_check_invariants(m) != KVC_OK) die("invariants", op);
    }
    for (int64_t rid = 0; rid < N_REQUESTS; rid++)
        if (kvc_manager_free(m, rid) != KVC_OK) die("final free", -1);
    for (int32_t k = 0; k < N_KEYS; k++)
        if (kvc_manager_num_free(m, k) != kvc_manager_num_blocks(m, k) - 1) die("blocks lost", -1);
    if (kvc_manager_num_live_requests(m) != 0) die("live requests after freeing all", -1);
    kvc_manager_destroy(m);
    return 0;
}
