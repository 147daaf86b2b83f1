/* Tenant isolation of the prefix cache (issue 23, "What must hold"): seeded
 * random multi-tenant traffic over two FullAttention keys (block sizes 4 and
 * 8) with small pools. Tenants share token sequences, so only their salts
 * keep them apart: several salts (two differ only after a NUL byte, one is a
 * prefix of them) and no salt. Requests are admitted with the hit the manager
 * finds, with tokens computed beyond the hit (first call without a prompt,
 * the salt on the request) or with no tokens known yet; they prefill in
 * chunks, decode, restate their salt now and then, are preempted (freed and
 * admitted again with what they computed) or finish; the prefix cache is
 * cleared now and then, and the pools are small enough to evict.
 *
 * The shadow records, for every block it predicts indexed, the salt and the
 * content (prefix of tokens) it was indexed under: a block a request
 * computes is indexed under that request's salt unless its key already holds
 * that salt and content; a block handed out for new data leaves the index.
 * After every call the manager's index must equal the shadow's, every block
 * a hit hands to a request must be indexed under the request's own salt and
 * prefix, and every hit must be as long as the cached blocks of the
 * request's salt allow (same-salt requests do hit). */
#include "kvc_test_util.h"

#include "cache/manager_internal.h"
#include "shadow_rng.h"

#define N_KEYS     2
#define MAX_REQ    8
#define MAX_LEN    40
#define N_SALTS    7
#define N_BASES    3
#define MAX_BLOCKS 40

static const int64_t block_size[N_KEYS] = {4, 8};
static const int64_t pool_size[N_KEYS] = {40, 20};

/* Salts as bytes; index 0 is no salt. */
static const struct {
    const char *bytes;
    int64_t len;
} salts[N_SALTS] = {{NULL, 0}, {"tenant-1", 8}, {"tenant-2", 8}, {"t\0a", 3}, {"t\0b", 3}, {"t", 1}, {"t\0", 2}};

typedef struct sh_req {
    bool live;
    int64_t id;
    int salt;
    int32_t tokens[MAX_LEN];
    int64_t n_known;  /* tokens known: prompt, then generated */
    int64_t computed; /* tokens computed and reported */
    int64_t n_hashed[N_KEYS];
} sh_req;

typedef struct sh_key {
    bool indexed[MAX_BLOCKS];
    int salt[MAX_BLOCKS];
    int64_t clen[MAX_BLOCKS]; /* tokens of the prefix the block ends */
    int32_t ctokens[MAX_BLOCKS][MAX_LEN];
} sh_key;

typedef struct shadow {
    sh_key k[N_KEYS];
    sh_req r[MAX_REQ];
    int64_t hits, cross_salt_content; /* hits taken; admissions whose tokens another salt had cached */
} shadow;

static int32_t bases[N_BASES][MAX_LEN];

/* The indexed block of key g holding this salt and content, or -1; any_salt
 * ignores the salt (what a manager without salts would find). */
static int32_t sh_find(const sh_key *k, int salt, bool any_salt, const int32_t *tokens, int64_t len) {
    for (int32_t id = 1; id < MAX_BLOCKS; id++)
        if (k->indexed[id] && (any_salt || k->salt[id] == salt) && k->clen[id] == len &&
            memcmp(k->ctokens[id], tokens, (size_t)len * sizeof *tokens) == 0)
            return id;
    return -1;
}

/* The longest hit of n tokens under a salt: a multiple of both block sizes,
 * at most n - 1, every block of every key cached. */
static int64_t sh_hit(const shadow *s, int salt, bool any_salt, const int32_t *tokens, int64_t n) {
    for (int64_t L = n - 1; L > 0; L--) {
        bool all = true;
        for (int g = 0; g < N_KEYS && all; g++) {
            all = L % block_size[g] == 0;
            for (int64_t i = 0; all && i < L / block_size[g]; i++)
                all = sh_find(&s->k[g], salt, any_salt, tokens, (i + 1) * block_size[g]) >= 0;
        }
        if (all) return L;
    }
    return 0;
}

/* The request's table of key g into ids[MAX_LEN]; returns its length. */
static int64_t table(const kvc_manager *m, int64_t rid, int g, int32_t *ids) {
    int64_t n = 0;
    assert_int_equal(kvc_manager_block_ids(m, rid, g, ids, MAX_LEN, &n), KVC_OK);
    return n;
}

/* Entries from..n of the request's table were handed out for new data: a
 * block holding cached content leaves the index. */
static void sh_fresh_blocks(shadow *s, const kvc_manager *m, const sh_req *r, int64_t from[N_KEYS]) {
    for (int g = 0; g < N_KEYS; g++) {
        int32_t ids[MAX_LEN];
        const int64_t n = table(m, r->id, g, ids);
        for (int64_t i = from[g]; i < n; i++) s->k[g].indexed[ids[i]] = false;
    }
}

/* The request reported its first r->computed tokens: its full blocks not yet
 * hashed are indexed under its salt unless the content is cached already. */
static void sh_cache_computed(shadow *s, kvc_manager *m, sh_req *r) {
    for (int g = 0; g < N_KEYS; g++) {
        int32_t ids[MAX_LEN];
        const int64_t n = table(m, r->id, g, ids);
        sh_key *k = &s->k[g];
        for (int64_t i = r->n_hashed[g]; i < imin(r->computed / block_size[g], n); i++) {
            int64_t len = (i + 1) * block_size[g];
            if (k->indexed[ids[i]] || sh_find(k, r->salt, false, r->tokens, len) >= 0) continue;
            k->indexed[ids[i]] = true;
            k->salt[ids[i]] = r->salt;
            k->clen[ids[i]] = len;
            memcpy(k->ctokens[ids[i]], r->tokens, (size_t)len * sizeof *r->tokens);
        }
        r->n_hashed[g] = imax(r->n_hashed[g], imin(r->computed / block_size[g], n));
    }
    assert_int_equal(kvc_manager_cache_computed(m, r->id, r->tokens, r->computed), KVC_OK);
}

static void compare(const kvc_manager *m, const shadow *s, long step) {
    if (kvc_manager_check_invariants(m) != KVC_OK) fail_msg("step %ld: %s", step, kvc_last_error());
    for (int g = 0; g < N_KEYS; g++)
        for (int32_t id = 1; id < pool_size[g]; id++)
            if ((m->managers[g].index.entry_of[id] != 0) != s->k[g].indexed[id])
                fail_msg("step %ld key %d block %d: indexed %d, shadow %d", step, g, id,
                         m->managers[g].index.entry_of[id] != 0, s->k[g].indexed[id]);
}

/* A hit of L tokens handed the request blocks of its own salt and prefix only. */
static void check_hit_blocks(const kvc_manager *m, const shadow *s, const sh_req *r, int64_t L, long step) {
    for (int g = 0; g < N_KEYS; g++) {
        int32_t ids[MAX_LEN];
        assert_true(table(m, r->id, g, ids) >= L / block_size[g]);
        for (int64_t i = 0; i < L / block_size[g]; i++) {
            const sh_key *k = &s->k[g];
            int32_t id = ids[i];
            if (!k->indexed[id] || k->salt[id] != r->salt || k->clen[id] != (i + 1) * block_size[g] ||
                memcmp(k->ctokens[id], r->tokens, (size_t)k->clen[id] * sizeof *r->tokens) != 0)
                fail_msg("step %ld: request %lld (salt %d) got block %d of key %d, indexed under salt %d", step,
                         (long long)r->id, r->salt, id, g, k->indexed[id] ? k->salt[id] : -1);
        }
    }
}

static const void *salt_bytes(const sh_req *r) { return salts[r->salt].bytes; }

/* One chunk of prefill (or a decode token) after r->computed. */
static int64_t next_chunk(sh_req *r) {
    if (r->computed == r->n_known) {
        r->tokens[r->n_known++] = (int32_t)rnd_in(0, 9); /* generated */
        return 1;
    }
    return rnd_in(1, r->n_known - r->computed);
}

/* Admits r: with the hit the manager finds, computing beyond it, or with no
 * tokens known yet. */
static void admit(kvc_manager *m, shadow *s, sh_req *r, long step) {
    const kvc_prompt prompt = {
        .tokens = r->tokens, .n_tokens = r->n_known, .cache_salt = salt_bytes(r), .cache_salt_len = salts[r->salt].len};
    kvc_prefix_hit hit;
    assert_int_equal(kvc_manager_find_prefix(m, &prompt, &hit), KVC_OK);
    int64_t expected = sh_hit(s, r->salt, false, r->tokens, r->n_known);
    if (hit.n_tokens != expected)
        fail_msg("step %ld: salt %d finds %lld tokens, its own cached blocks give %lld", step, r->salt,
                 (long long)hit.n_tokens, (long long)expected);
    s->cross_salt_content += sh_hit(s, r->salt, true, r->tokens, r->n_known) > expected;
    const int64_t mode = rnd_in(0, 9);
    const bool beyond = mode >= 6 && mode < 9 && hit.n_tokens < r->n_known - 1, unknown = mode == 9;
    kvc_slot_request req = {.request_id = r->id, .cache_salt = salt_bytes(r), .cache_salt_len = salts[r->salt].len};
    if (beyond) { /* tokens computed beyond the hit elsewhere: no prompt, the salt on the request */
        req.computed_tokens = rnd_in(hit.n_tokens + 1, r->n_known - 1);
    } else if (!unknown) { /* the hit with its prompt; the salt given once or twice */
        req.prompt = &prompt;
        req.computed_tokens = hit.n_tokens;
        if (rnd_in(0, 1) == 0) req.cache_salt = NULL, req.cache_salt_len = 0;
    }
    r->computed = req.computed_tokens;
    req.num_new_tokens = unknown ? 0 : rnd_in(1, r->n_known - r->computed);
    kvc_status st = kvc_manager_allocate_slots(m, &req);
    if (st == KVC_NO_SPACE) {
        for (int g = 0; g < N_KEYS; g++) assert_false(kvc_manager_has_request(m, r->id, g));
        return;
    }
    if (st != KVC_OK) fail_msg("step %ld: admission %s: %s", step, kvc_status_str(st), kvc_last_error());
    bool took_hit = req.prompt != NULL && hit.n_tokens > 0;
    if (took_hit) check_hit_blocks(m, s, r, hit.n_tokens, step);
    s->hits += took_hit;
    int64_t kept[N_KEYS];
    for (int g = 0; g < N_KEYS; g++) kept[g] = r->n_hashed[g] = took_hit ? hit.n_tokens / block_size[g] : 0;
    sh_fresh_blocks(s, m, r, kept);
    r->live = true;
    r->computed += req.num_new_tokens;
    sh_cache_computed(s, m, r);
}

static void step_request(kvc_manager *m, shadow *s, sh_req *r, long step) {
    int64_t chunk = next_chunk(r);
    int64_t before[N_KEYS];
    for (int g = 0; g < N_KEYS; g++) {
        int32_t ids[MAX_LEN];
        before[g] = table(m, r->id, g, ids);
    }
    bool restate = rnd_in(0, 3) == 0;
    kvc_status st =
        kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = r->id,
                                                          .computed_tokens = r->computed,
                                                          .num_new_tokens = chunk,
                                                          .cache_salt = restate ? salt_bytes(r) : NULL,
                                                          .cache_salt_len = restate ? salts[r->salt].len : 0});
    if (st == KVC_NO_SPACE) return;
    if (st != KVC_OK) fail_msg("step %ld: step %s: %s", step, kvc_status_str(st), kvc_last_error());
    sh_fresh_blocks(s, m, r, before);
    r->computed += chunk;
    sh_cache_computed(s, m, r);
}

/* A new request of a random tenant over one of the shared sequences. */
static void new_request(sh_req *r) {
    const int b = (int)rnd_in(0, N_BASES - 1);
    const int64_t n = rnd_in(2, MAX_LEN - 8), shared = rnd_in(0, 1) == 0 ? n : rnd_in(0, n);
    for (int64_t i = 0; i < n; i++) r->tokens[i] = i < shared ? bases[b][i] : (int32_t)rnd_in(0, 9);
    r->n_known = n;
    r->salt = (int)rnd_in(0, N_SALTS - 1);
}

static void run(uint64_t seed, long steps) {
    rng_state = seed;
    for (int b = 0; b < N_BASES; b++)
        for (int i = 0; i < MAX_LEN; i++) bases[b][i] = (int32_t)rnd_in(0, 9);
    kvc_test_model model;
    kvc_cache_entry e[N_KEYS] = {kvc_test_attention_entry("k", KVC_ATTN_FULL, block_size[0], 0),
                                 kvc_test_attention_entry("k8", KVC_ATTN_FULL, block_size[1], 0)};
    snprintf(e[0].manager_key, sizeof e[0].manager_key, "A");
    snprintf(e[1].manager_key, sizeof e[1].manager_key, "B");
    kvc_test_model_init(&model, e, N_KEYS);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = MAX_LEN;
    p.max_requests = MAX_REQ;
    p.prefix_caching = true;
    p.prefix_salt = 3;
    kvc_manager *m = kvc_test_manager_with(&model, (const char *[]){"A", "B"}, pool_size, N_KEYS, &p);
    static shadow s;
    memset(&s, 0, sizeof s);
    int64_t next_id = 0;
    for (long step = 0; step < steps; step++) {
        sh_req *r = &s.r[rnd_in(0, MAX_REQ - 1)];
        int64_t op = rnd_in(0, 99);
        if (!r->live) {
            if (r->n_known < 2 || rnd_in(0, 2) > 0) new_request(r); /* else a preempted one comes back */
            r->id = next_id++;
            admit(m, &s, r, step);
        } else if (op < 15 || r->n_known >= MAX_LEN - 1) {
            assert_int_equal(kvc_manager_free(m, r->id), KVC_OK); /* preempted, or finished below */
            r->live = false;
            if (op < 5) r->n_known = 0;
        } else if (op == 99) {
            assert_int_equal(kvc_manager_clear_prefix_cache(m), KVC_OK);
            for (int g = 0; g < N_KEYS; g++) memset(s.k[g].indexed, 0, sizeof s.k[g].indexed);
        } else {
            step_request(m, &s, r, step);
        }
        compare(m, &s, step);
    }
    /* the traffic exercised both properties */
    assert_true(s.hits > 0);
    assert_true(s.cross_salt_content > 0);
    kvc_manager_destroy(m);
}

static void test_tenants_never_share_blocks(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 8; seed++) run(seed * 0x9e3779b97f4a7c15ULL, 5000);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tenants_never_share_blocks)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
