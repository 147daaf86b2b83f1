/* Model-based randomised test of prefix caching: seeded sequences of
 * admissions (with the hit the manager finds, a quarter of them with
 * external computed tokens after it), chunked prefill, decode,
 * frees in random order, preemption with recomputation, pool pressure and
 * clearing, over a hybrid model of FullAttention (bs 4), SlidingWindow
 * (bs 4, W 6) or ChunkedLocal (bs 4, chunk 6: chunk starts inside blocks)
 * and Mamba (snapshots every 8 tokens, next_n 1) keys. A shadow
 * model that knows only the rules of docs/prefix-caching.md (the free queue
 * as eviction order, holders per block, which contents are cached, each
 * type's hit rule, the hybrid's largest common length) predicts every
 * status, table, queue, reference count, copy source and hit, and after
 * every call: reference counts equal the tables holding each block, a block
 * is queued exactly when nobody holds it, and every indexed block's stored
 * tokens and hash match the chain of the content the shadow says it holds.
 * Each run goes once with a pool per key and once with one pool shared by
 * every key (one id space, one free queue: a key's cached block is evicted
 * when any key takes it). */
#include "kvc_test_util.h"

#include "cache/manager_internal.h"
#include "shadow_rng.h"

#define N_KEYS     3
#define MAX_REQ    8
#define MAX_LEN    48
#define MAX_BLOCKS 40
#define BS         4
#define WINDOW     6 /* W, or the chunk C of a ChunkedLocal run */
#define INTERVAL   8
#define NEXT_N     1
#define N_SALTS    3

static const int64_t own_pool_size[N_KEYS] = {40, 32, 24};
#define SHARED_POOL_SIZE MAX_BLOCKS
static bool one_pool; /* the run's keys share one pool */
static int64_t pool_size[N_KEYS];
static int n_keys = N_KEYS; /* the run's keys: the first n_keys of key_type */
/* key 1: SlidingWindow or ChunkedLocal, by run */
static kvc_attn_type key_type[N_KEYS] = {KVC_ATTN_FULL, KVC_ATTN_SLIDING_WINDOW, KVC_ATTN_MAMBA};
static const char *const salt_name[N_SALTS] = {NULL, "tenant-1", "tenant-2"};

typedef struct sh_table {
    bool present;
    int32_t ids[MAX_LEN];
    int64_t len, n_null, n_hashed;
    int32_t source;
} sh_table;

typedef struct sh_req {
    bool live;
    int64_t id;
    int32_t tokens[MAX_LEN];
    int64_t n_known;  /* tokens known (prompt, then generated) */
    int64_t computed; /* tokens computed and marked */
    int salt;
    sh_table t[N_KEYS];
} sh_req;

typedef struct sh_pool {
    int32_t queue[MAX_BLOCKS];
    int64_t n_queue;
    int32_t count[MAX_BLOCKS];
    int64_t front; /* where the next uncached block of the current give goes (docs: uncached first) */
} sh_pool;

typedef struct sh_key {
    sh_pool *pool; /* its own, or the one every key shares */
    bool indexed[MAX_BLOCKS];
    int salt[MAX_BLOCKS];
    int64_t clen[MAX_BLOCKS]; /* tokens of the cached prefix the block ends */
    int32_t ctokens[MAX_BLOCKS][MAX_LEN];
    int64_t n_entries;
} sh_key;

typedef struct shadow {
    sh_pool pools[N_KEYS];
    sh_key k[N_KEYS];
    sh_req r[MAX_REQ];
    int64_t evictions, queries, hits, hit_tokens;
    int64_t long_hits;       /* hits longer than the window: the sliding key found blocks that left a window */
    int64_t cross_evictions; /* blocks one key had cached, taken by another key */
} shadow;

static int64_t hash_tokens(int g) { return key_type[g] == KVC_ATTN_MAMBA ? INTERVAL : BS; }

/* Positions no later query of key g reads once `computed` are cached:
 * before the window (c - W + 1) or before the chunk of position c. */
static int64_t sh_skipped(int g, int64_t computed) {
    if (key_type[g] == KVC_ATTN_SLIDING_WINDOW) return imax(0, computed - WINDOW + 1);
    if (key_type[g] == KVC_ATTN_CHUNKED_LOCAL) return computed / WINDOW * WINDOW;
    return 0;
}

/* ---- the shadow's pool ------------------------------------------------------ */
/* Starts one give of the manager (one pool call): the uncached blocks it
 * frees go to the head in the order given, the first given at the head. */
static void sh_give_start(sh_key *k) { k->pool->front = 0; }

/* A block nobody holds any more: to the tail if some key of its pool has it
 * indexed, else to the head (after the earlier uncached ones of this give). */
static void sh_give(shadow *s, sh_key *k, int32_t id) {
    sh_pool *p = k->pool;
    if (id == 0) return;
    assert_true(p->count[id] > 0);
    if (--p->count[id] > 0) return;
    bool cached = false;
    for (int g = 0; g < n_keys; g++) cached |= s->k[g].pool == p && s->k[g].indexed[id];
    if (cached) {
        p->queue[p->n_queue++] = id;
        return;
    }
    memmove(p->queue + p->front + 1, p->queue + p->front, (size_t)(p->n_queue - p->front) * sizeof *p->queue);
    p->queue[p->front++] = id;
    p->n_queue++;
}

/* One give of a single block. */
static void sh_give_one(shadow *s, sh_key *k, int32_t id) {
    sh_give_start(k);
    sh_give(s, k, id);
}

static void sh_ref(sh_key *k, int32_t id) {
    sh_pool *p = k->pool;
    if (p->count[id]++ > 0) return;
    int64_t i = 0;
    while (p->queue[i] != id) i++;
    memmove(p->queue + i, p->queue + i + 1, (size_t)(p->n_queue - i - 1) * sizeof *p->queue);
    p->n_queue--;
}

/* The head of k's pool, for new data: whichever key of the pool cached it loses it. */
static int32_t sh_take(shadow *s, sh_key *k) {
    sh_pool *p = k->pool;
    int32_t id = p->queue[0];
    memmove(p->queue, p->queue + 1, (size_t)(p->n_queue - 1) * sizeof *p->queue);
    p->n_queue--;
    p->count[id] = 1;
    for (int g = 0; g < n_keys; g++) {
        if (s->k[g].pool != p || !s->k[g].indexed[id]) continue;
        s->evictions++;
        s->cross_evictions += &s->k[g] != k;
        s->k[g].indexed[id] = false;
    }
    return id;
}

/* The cached block holding exactly this content, or -1. */
static int32_t sh_find(const sh_key *k, int salt, const int32_t *tokens, int64_t len) {
    for (int32_t id = 1; id < MAX_BLOCKS; id++)
        if (k->indexed[id] && k->salt[id] == salt && k->clen[id] == len &&
            memcmp(k->ctokens[id], tokens, (size_t)len * sizeof *tokens) == 0)
            return id;
    return -1;
}

static void sh_index(sh_key *k, int32_t id, int salt, const int32_t *tokens, int64_t len) {
    if (id == 0 || k->indexed[id] || sh_find(k, salt, tokens, len) >= 0) return;
    k->indexed[id] = true;
    k->salt[id] = salt;
    k->clen[id] = len;
    memcpy(k->ctokens[id], tokens, (size_t)len * sizeof *tokens);
}

/* ---- the rules -------------------------------------------------------------- */
/* Whether key g accepts a hit of L tokens; the table entries (or snapshot) in hit[]. */
static bool sh_accepts(const shadow *s, int g, int salt, const int32_t *tokens, int64_t L, int32_t *hit,
                       int64_t *n_hit) {
    const sh_key *k = &s->k[g];
    if (L % hash_tokens(g) != 0) return false;
    if (key_type[g] == KVC_ATTN_MAMBA) {
        hit[0] = sh_find(k, salt, tokens, L);
        *n_hit = 1;
        return hit[0] >= 0;
    }
    /* the entries before the first one the query at L reads are null; a hit ends on a cached block even
     * when the chunk starts at L (the shared windowed rule) */
    int64_t first = imin(sh_skipped(g, L) / BS, L / BS - 1);
    for (int64_t i = 0; i < L / BS; i++) {
        hit[i] = i < first ? 0 : sh_find(k, salt, tokens, (i + 1) * BS);
        if (hit[i] < 0) return false;
    }
    *n_hit = L / BS;
    return true;
}

static int64_t sh_hit(const shadow *s, int salt, const int32_t *tokens, int64_t n, int32_t hit[N_KEYS][MAX_LEN],
                      int64_t *n_hit) {
    for (int64_t L = imin(n - 1, MAX_LEN); L > 0; L--) {
        bool all = true;
        for (int g = 0; g < n_keys && all; g++) all = sh_accepts(s, g, salt, tokens, L, hit[g], &n_hit[g]);
        if (all) return L;
    }
    return 0;
}

static int64_t sh_needed(const shadow *s, int g, const sh_table *t, int64_t num_tokens) {
    if (key_type[g] == KVC_ATTN_MAMBA) {
        bool swap = t->len > 0 && s->k[g].indexed[t->ids[0]] && num_tokens > t->n_hashed * INTERVAL;
        return imax(0, (t->len == 0 ? 1 : 1 + NEXT_N) - t->len) + swap;
    }
    return imax(0, cdiv(num_tokens, BS) - t->len);
}

static void sh_grow(shadow *s, int g, sh_table *t, int64_t n, int64_t num_tokens) {
    sh_key *k = &s->k[g];
    if (key_type[g] == KVC_ATTN_MAMBA && t->len > 0 && k->indexed[t->ids[0]] && num_tokens > t->n_hashed * INTERVAL) {
        int32_t fresh = sh_take(s, k);
        if (t->source != 0) sh_give_one(s, k, t->source);
        t->source = t->ids[0];
        t->ids[0] = fresh;
        n--;
    }
    for (int64_t i = 0; i < n; i++) t->ids[t->len++] = sh_take(s, k);
}

/* An empty window or chunk table starts with nulls for the blocks that the
 * computed tokens skip; every other position asked for is backed. */
static void sh_skip_leading(int g, sh_table *t, int64_t computed) {
    if (t->len > 0) return;
    t->n_null = t->len = sh_skipped(g, computed) / BS;
    for (int64_t i = 0; i < t->len; i++) t->ids[i] = 0;
}

/* The first table entry a window or chunk key backs once `computed` tokens
 * are in the cache (0 for the other keys). */
static int64_t sh_window_start(int g, int64_t computed) { return sh_skipped(g, computed) / BS; }

static bool sh_takes_hit(int g, bool hit_on, int64_t external) {
    return hit_on && !(external > 0 && key_type[g] == KVC_ATTN_MAMBA);
}

static void sh_release_window(shadow *s, int g, sh_table *t, int64_t computed) {
    if (!t->present) return;
    int64_t kk = imin(sh_skipped(g, computed) / BS, t->len);
    sh_give_start(&s->k[g]);
    for (int64_t i = kk - 1; i >= t->n_null; i--) {
        sh_give(s, &s->k[g], t->ids[i]);
        t->ids[i] = 0;
    }
    t->n_null = imax(t->n_null, kk);
}

/* Predicts allocate_slots for request r (new when is_new): a hit of
 * `computed` tokens, `external` computed tokens after it (new requests),
 * num_new tokens to compute. A sliding key takes the hit's blocks from the
 * window at computed + external on; a state key takes no snapshot when
 * external tokens follow the hit. */
static kvc_status sh_allocate(shadow *s, sh_req *r, int64_t computed, int64_t external, int64_t num_new, bool is_new) {
    int64_t total = computed + external;
    int64_t need_slot = imin(total + num_new, MAX_LEN);
    int32_t hit[N_KEYS][MAX_LEN];
    int64_t n_hit[N_KEYS] = {0};
    bool hit_on = is_new && computed > 0;
    if (hit_on) assert_int_equal(sh_hit(s, r->salt, r->tokens, r->n_known, hit, n_hit) >= computed, true);
    for (int g = 0; hit_on && g < n_keys; g++)
        assert_true(sh_accepts(s, g, r->salt, r->tokens, computed, hit[g], &n_hit[g]));
    int64_t need[N_KEYS], demand[N_KEYS] = {0}; /* demand by pool */
    for (int g = 0; g < n_keys; g++) {
        sh_table *t = &r->t[g];
        if (!is_new) sh_release_window(s, g, t, computed);
        sh_table view = is_new ? (sh_table){0} : *t;
        int64_t taken_free = 0, from = sh_window_start(g, total);
        if (sh_takes_hit(g, hit_on, external)) {
            for (int64_t i = from; i < n_hit[g]; i++)
                taken_free += hit[g][i] != 0 && s->k[g].pool->count[hit[g][i]] == 0;
            view.len = key_type[g] == KVC_ATTN_MAMBA ? 0 : imax(n_hit[g], from);
        }
        sh_skip_leading(g, &view, total);
        need[g] = sh_needed(s, g, &view, need_slot);
        demand[s->k[g].pool - s->pools] += need[g] + taken_free;
    }
    for (int g = 0; g < n_keys; g++)
        if (demand[g] > s->pools[g].n_queue) return KVC_NO_SPACE;
    if (is_new) {
        s->queries++;
        s->hits += hit_on;
        s->hit_tokens += hit_on ? computed : 0;
        s->long_hits += hit_on && computed > WINDOW;
    }
    for (int g = 0; g < n_keys; g++) {
        sh_table *t = &r->t[g];
        if (!t->present) {
            *t = (sh_table){.present = true};
            s->k[g].n_entries++;
        }
        int64_t from = sh_window_start(g, total);
        if (sh_takes_hit(g, hit_on, external)) {
            for (int64_t i = from; i < n_hit[g]; i++)
                if (hit[g][i] != 0) sh_ref(&s->k[g], hit[g][i]);
            t->n_hashed = computed / hash_tokens(g);
            if (key_type[g] == KVC_ATTN_MAMBA) {
                t->source = hit[g][0];
            } else {
                t->len = imax(n_hit[g], from);
                for (int64_t i = 0; i < t->len; i++) t->ids[i] = i >= from && i < n_hit[g] ? hit[g][i] : 0;
                t->n_null = from;
            }
        }
        sh_skip_leading(g, t, total);
    }
    for (int g = 0; g < n_keys; g++) sh_grow(s, g, &r->t[g], need[g], need_slot); /* every hit taken first */
    return KVC_OK;
}

static void sh_cache_computed(shadow *s, sh_req *r, int64_t n) {
    for (int g = 0; g < n_keys; g++) {
        sh_table *t = &r->t[g];
        sh_key *k = &s->k[g];
        if (key_type[g] == KVC_ATTN_MAMBA) {
            if (t->source != 0) sh_give_one(s, k, t->source);
            t->source = 0;
            int64_t before = t->n_hashed;
            t->n_hashed = n / INTERVAL;
            if (t->n_hashed > before && n % INTERVAL == 0 && t->len > 0) sh_index(k, t->ids[0], r->salt, r->tokens, n);
            continue;
        }
        int64_t n_full = imin(n / BS, t->len);
        for (; t->n_hashed < n_full; t->n_hashed++)
            sh_index(k, t->ids[t->n_hashed], r->salt, r->tokens, (t->n_hashed + 1) * BS);
    }
}

static void sh_free(shadow *s, sh_req *r) {
    for (int g = 0; g < n_keys; g++) {
        sh_table *t = &r->t[g];
        if (!t->present) continue;
        sh_give_start(&s->k[g]);
        for (int64_t i = t->len - 1; i >= t->n_null; i--) sh_give(s, &s->k[g], t->ids[i]);
        if (t->source != 0) sh_give_one(s, &s->k[g], t->source);
        *t = (sh_table){0};
        s->k[g].n_entries--;
    }
    r->live = false;
}

/* ---- comparison ------------------------------------------------------------- */
/* The chain hash of a cached content, recomputed from the public rules. */
static kvc_hash128 content_hash(kvc_prefix_index *ix, int salt, const int32_t *tokens, int64_t len,
                                kvc_hash128 *parent) {
    const char *name = salt_name[salt];
    kvc_hash128 h = kvci_prefix_seed(7, name, name != NULL ? (int64_t)strlen(name) : 0);
    for (int64_t i = 0; i < len / ix->block_tokens; i++) {
        *parent = h;
        h = kvci_prefix_block_hash(ix, h, tokens + i * ix->block_tokens);
    }
    return h;
}

/* ---- KV events -------------------------------------------------------------- */
/* What a consumer of the manager's KV events believes is cached: the
 * blocks stored and not removed or cleared since, with their hashes. */
typedef struct event_view {
    bool held[N_KEYS][MAX_BLOCKS];
    kvc_hash128 hash[N_KEYS][MAX_BLOCKS], parent[N_KEYS][MAX_BLOCKS];
    int64_t stored, removed, cleared;
} event_view;

static event_view events_seen;

/* Drains the manager's events into the view, checking each against it. */
static void drain_events(kvc_manager *m, long step) {
    kvc_kv_event ev[64];
    int64_t n = 0, lost = 0;
    do {
        assert_int_equal(kvc_manager_drain_kv_events(m, ev, 64, &n, &lost), KVC_OK);
        assert_int_equal(lost, 0);
        for (int64_t i = 0; i < n; i++) {
            event_view *v = &events_seen;
            if (ev[i].type == KVC_KV_EVENT_CLEARED) {
                memset(v->held, 0, sizeof v->held);
                v->cleared++;
                continue;
            }
            int g = ev[i].key_index, id = ev[i].block_id;
            kvc_hash128 h = {.low64 = ev[i].hash_lo, .high64 = ev[i].hash_hi};
            assert_true(g >= 0 && g < n_keys && id > 0 && id < pool_size[g]);
            assert_int_equal(ev[i].n_tokens, hash_tokens(g));
            if (ev[i].type == KVC_KV_EVENT_STORED) {
                if (v->held[g][id]) fail_msg("step %ld: key %d block %d stored twice", step, g, id);
                v->held[g][id] = true;
                v->hash[g][id] = h;
                v->parent[g][id] = (kvc_hash128){.low64 = ev[i].parent_lo, .high64 = ev[i].parent_hi};
                v->stored++;
            } else {
                assert_int_equal(ev[i].type, KVC_KV_EVENT_REMOVED);
                if (!v->held[g][id] || !kvci_hash128_equal(v->hash[g][id], h))
                    fail_msg("step %ld: key %d block %d removed but not stored under that hash", step, g, id);
                v->held[g][id] = false;
                v->removed++;
            }
        }
    } while (n == 64);
}

static void compare(kvc_manager *m, shadow *s, long step) {
    drain_events(m, step);
    if (kvc_manager_check_invariants(m) != KVC_OK) fail_msg("step %ld: %s", step, kvc_last_error());
    for (int g = 0; g < n_keys; g++) {
        sh_key *k = &s->k[g];
        kvc_test_assert_queue(m, g, k->pool->queue, k->pool->n_queue);
        const kvc_single_manager *sm = &m->managers[g];
        assert_true(one_pool == (sm->pool == m->managers[0].pool) || g == 0);
        int64_t cached_free = 0;
        for (int32_t id = 1; id < pool_size[g]; id++) cached_free += k->indexed[id] && k->pool->count[id] == 0;
        assert_int_equal(kvc_manager_num_cached_free(m, g), cached_free);
        for (int32_t id = 1; id < pool_size[g]; id++) {
            if (kvc_block_pool_ref_count(sm->pool, id) != k->pool->count[id])
                fail_msg("step %ld key %d block %d: %d holders, shadow %d", step, g, id,
                         kvc_block_pool_ref_count(sm->pool, id), k->pool->count[id]);
            if (kvci_prefix_index_has(&sm->index, id) != k->indexed[id])
                fail_msg("step %ld key %d block %d: indexed %d, shadow %d", step, g, id,
                         kvci_prefix_index_has(&sm->index, id), k->indexed[id]);
            if (events_seen.held[g][id] != k->indexed[id])
                fail_msg("step %ld key %d block %d: the events say cached %d, shadow %d", step, g, id,
                         events_seen.held[g][id], k->indexed[id]);
            if (!k->indexed[id]) continue;
            kvc_prefix_index *ix = (kvc_prefix_index *)&sm->index;
            int64_t e = ix->entry_of[id] - 1;
            kvc_hash128 parent;
            kvc_hash128 h = content_hash(ix, k->salt[id], k->ctokens[id], k->clen[id], &parent);
            assert_true(kvci_hash128_equal(h, events_seen.hash[g][id]));
            assert_true(kvci_hash128_equal(parent, events_seen.parent[g][id]));
            assert_true(kvci_hash128_equal(h, ix->keys[e].hash));
            assert_true(kvci_hash128_equal(parent, ix->keys[e].parent));
            assert_memory_equal(kvci_prefix_index_tokens(ix, e), k->ctokens[id] + k->clen[id] - ix->block_tokens,
                                (size_t)ix->block_tokens * sizeof(int32_t));
        }
        for (int i = 0; i < MAX_REQ; i++) {
            const sh_req *r = &s->r[i];
            if (!r->live) continue;
            kvc_test_assert_table(m, r->id, g, r->t[g].ids, r->t[g].len);
            int32_t source = -1;
            assert_int_equal(kvc_manager_state_source(m, r->id, g, &source), KVC_OK);
            assert_int_equal(source, r->t[g].source);
        }
    }
    kvc_prefix_stats st;
    assert_int_equal(kvc_manager_prefix_stats(m, &st), KVC_OK);
    assert_int_equal(st.evictions, s->evictions);
    assert_int_equal(st.queries, s->queries);
    assert_int_equal(st.hits, s->hits);
    assert_int_equal(st.hit_tokens, s->hit_tokens);
}

/* ---- the driver ------------------------------------------------------------- */
static int32_t bases[3][MAX_LEN];

static void new_tokens(sh_req *r, int64_t n) {
    int b = (int)rnd_in(0, 2);
    int64_t shared = rnd_in(0, 1) == 0 ? n - rnd_in(0, 3) : rnd_in(0, n);
    for (int64_t i = 0; i < n; i++) r->tokens[i] = i < shared ? bases[b][i] : (int32_t)rnd_in(0, 9);
    r->n_known = n;
}

/* A prefill chunk after `computed` of n_known tokens, ending at a snapshot
 * position half of the time when one is left. */
static int64_t chunk_after(int64_t computed, int64_t n_known) {
    int64_t aligned = (computed / INTERVAL + 1) * INTERVAL;
    if (aligned <= n_known && rnd_in(0, 1) == 0) return aligned - computed;
    return rnd_in(1, n_known - computed);
}

/* Admits r (new) with the hit the manager finds; one prefill chunk. */
static void admit(kvc_manager *m, shadow *s, sh_req *r, long step) {
    const char *salt = salt_name[r->salt];
    kvc_prompt prompt = {.tokens = r->tokens,
                         .n_tokens = r->n_known,
                         .cache_salt = salt,
                         .cache_salt_len = salt != NULL ? (int64_t)strlen(salt) : 0};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    int32_t sh_ids[N_KEYS][MAX_LEN];
    int64_t sh_n[N_KEYS];
    int64_t expected = sh_hit(s, r->salt, r->tokens, r->n_known, sh_ids, sh_n);
    if (hit.n_tokens != expected)
        fail_msg("step %ld: hit %lld tokens, shadow %lld", step, (long long)hit.n_tokens, (long long)expected);
    for (int g = 0; g < n_keys && expected > 0; g++) assert_int_equal(hit.n_entries[g], sh_n[g]);
    /* A quarter of the admissions: a KV connector brings tokens after the hit. */
    int64_t external = rnd_in(0, 3) == 0 ? rnd_in(0, r->n_known - 1 - hit.n_tokens) : 0;
    int64_t chunk = chunk_after(hit.n_tokens + external, r->n_known);
    kvc_status want = sh_allocate(s, r, hit.n_tokens, external, chunk, true);
    kvc_status got = kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = r->id,
                                                                       .computed_tokens = hit.n_tokens,
                                                                       .num_external_computed_tokens = external,
                                                                       .num_new_tokens = chunk,
                                                                       .prompt = &prompt});
    if (got != want)
        fail_msg("step %ld: admission %s, shadow %s (%s)", step, kvc_status_str(got), kvc_status_str(want),
                 kvc_last_error());
    if (got != KVC_OK) return;
    r->live = true;
    r->computed = hit.n_tokens + external + chunk;
    assert_int_equal(kvc_manager_cache_computed(m, r->id, r->tokens, r->computed), KVC_OK);
    sh_cache_computed(s, r, r->computed);
}

static void step_request(kvc_manager *m, shadow *s, sh_req *r, long step) {
    int64_t n = r->computed < r->n_known ? chunk_after(r->computed, r->n_known) : 1;
    if (r->computed == r->n_known) r->tokens[r->n_known++] = (int32_t)rnd_in(0, 9); /* generated */
    kvc_status want = sh_allocate(s, r, r->computed, 0, n, false);
    kvc_status got = kvc_manager_allocate_slots(
        m, &(kvc_slot_request){.request_id = r->id, .computed_tokens = r->computed, .num_new_tokens = n});
    if (got != want) fail_msg("step %ld: step %s, shadow %s", step, kvc_status_str(got), kvc_status_str(want));
    if (got != KVC_OK) return;
    r->computed += n;
    assert_int_equal(kvc_manager_cache_computed(m, r->id, r->tokens, r->computed), KVC_OK);
    sh_cache_computed(s, r, r->computed);
}

static void run(uint64_t seed, long steps, int n_run_keys, bool shared_pool, kvc_attn_type local) {
    rng_state = seed;
    n_keys = n_run_keys;
    key_type[1] = local;
    one_pool = shared_pool;
    for (int g = 0; g < N_KEYS; g++) pool_size[g] = one_pool ? SHARED_POOL_SIZE : own_pool_size[g];
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < MAX_LEN; i++) bases[b][i] = (int32_t)rnd_in(0, 9);
    kvc_test_model model;
    kvc_cache_entry e[N_KEYS] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, BS, 0),
                                 kvc_test_attention_entry("w", local, BS, WINDOW), kvc_test_mamba_entry("ssm", NEXT_N)};
    kvc_test_model_init(&model, e, n_keys);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = MAX_LEN;
    p.max_requests = MAX_REQ;
    p.prefix_caching = true;
    p.prefix_salt = 7;
    p.state_snapshot_interval = INTERVAL;
    p.kv_event_capacity = 4096;
    memset(&events_seen, 0, sizeof events_seen);
    const char *key_names[N_KEYS] = {"FullAttention", kvc_attn_type_name(local), "Mamba"};
    kvc_manager *m = one_pool ? kvc_test_manager_shared(&model, key_names, SHARED_POOL_SIZE, n_keys, &p)
                              : kvc_test_manager_with(&model, key_names, pool_size, n_keys, &p);
    static shadow s;
    memset(&s, 0, sizeof s);
    for (int g = 0; g < n_keys; g++) {
        s.k[g].pool = &s.pools[one_pool ? 0 : g];
        if (one_pool && g > 0) continue;
        for (int32_t id = 1; id < pool_size[g]; id++) s.pools[g].queue[s.pools[g].n_queue++] = id;
    }
    int64_t next_id = 0;
    for (long step = 0; step < steps; step++) {
        sh_req *r = &s.r[rnd_in(0, MAX_REQ - 1)];
        int64_t op = rnd_in(0, 99);
        if (!r->live) {
            /* a new request, or one preempted earlier recomputing what it had */
            bool resume = r->n_known >= 2 && rnd_in(0, 2) == 0;
            if (!resume) {
                new_tokens(r, rnd_in(2, MAX_LEN - 8));
                r->salt = (int)rnd_in(0, 9) < 7 ? 0 : (int)rnd_in(1, N_SALTS - 1);
            }
            r->id = next_id++;
            r->computed = 0;
            admit(m, &s, r, step);
        } else if (op < 20 || r->n_known >= MAX_LEN - 1) {
            assert_int_equal(kvc_manager_free(m, r->id), KVC_OK);
            sh_free(&s, r);
            if (op < 8) r->n_known = 0; /* finished, not preempted */
        } else if (op == 99) {
            assert_int_equal(kvc_manager_clear_prefix_cache(m), KVC_OK);
            for (int g = 0; g < n_keys; g++) memset(s.k[g].indexed, 0, sizeof s.k[g].indexed);
        } else {
            step_request(m, &s, r, step);
        }
        compare(m, &s, step);
    }
    /* Releasing everything returns every block; clearing empties the index. */
    for (int i = 0; i < MAX_REQ; i++)
        if (s.r[i].live) {
            assert_int_equal(kvc_manager_free(m, s.r[i].id), KVC_OK);
            sh_free(&s, &s.r[i]);
        }
    compare(m, &s, steps);
    for (int g = 0; g < n_keys; g++) assert_int_equal(kvc_manager_num_free(m, g), pool_size[g] - 1);
    if (one_pool) assert_true(s.cross_evictions > 0); /* keys took blocks another key had cached */
    assert_int_equal(kvc_manager_clear_prefix_cache(m), KVC_OK);
    kvc_prefix_stats st;
    assert_int_equal(kvc_manager_prefix_stats(m, &st), KVC_OK);
    assert_int_equal(st.cached_blocks, 0);
    assert_true(s.hits > 0 && s.evictions > 0 && s.long_hits > 0);
    drain_events(m, steps);
    assert_true(events_seen.stored > 0 && events_seen.removed > 0 && events_seen.cleared > 0);
    assert_int_equal(events_seen.removed, s.evictions); /* every eviction, and nothing else, removes */
    kvc_manager_destroy(m);
}

/* Half the seeds of each test put a chunked-local key in the window's place. */
static kvc_attn_type local_of(uint64_t seed) { return seed % 2 ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_CHUNKED_LOCAL; }

static void test_prefix_cache_against_shadow(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) run(seed * 0x9e3779b97f4a7c15ULL, 1500, N_KEYS, false, local_of(seed));
}

/* Full + sliding (or chunked) + state keys drawing from one shared pool under pressure. */
static void test_shared_pool_against_shadow(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) run(seed * 0x94d049bb133111ebULL, 1500, N_KEYS, true, local_of(seed));
}

/* Full + sliding window (or chunked local) alone (gpt-oss, Llama 4 style):
 * hits are not held to the state key's snapshot positions, so the window's
 * or chunk's rule decides them. */
static void test_hybrid_full_sliding_against_shadow(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) run(seed * 0xbf58476d1ce4e5b9ULL, 1500, 2, false, local_of(seed));
    for (uint64_t seed = 1; seed <= 6; seed++) run(seed * 0xbf58476d1ce4e5b9ULL, 1500, 2, true, local_of(seed + 1));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_prefix_cache_against_shadow),
                                       cmocka_unit_test(test_shared_pool_against_shadow),
                                       cmocka_unit_test(test_hybrid_full_sliding_against_shadow)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
