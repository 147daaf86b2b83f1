/* Tensor-parallel replicas of an engine (kvc_engine_sync, engine.h): the lead's log of the calls that
 * change it, sent at each step and at the end, and a follower's loop that replays it and steps.
 *
 * A log goes out as a header {magic, kind, n} (the follower's only wait without a deadline) then, when
 * n > 0, n bytes of commands. A command is {op, 0, body bytes} then its body, padded to 8 bytes:
 *   HELLO   int64 values [HELLO_COUNT] (the lead's sizes; first command of the first log only)
 *   ADD     log_add, prompt int32 [n_prompt], min_tokens_ids int32 [n], logit_bias {int32, float} [n], salt
 *   MASK    int64 id, int64 n_words (0: drop the mask), words uint32 [n_words]
 *   RELEASE int64 id
 * A SCORE log (kvc_engine_sync_score) goes out at once and holds no commands: its n bytes are the ids of
 * the lead's scoring pass, int32 [n / 4].
 * In the lead's byte order and struct layout: every rank runs the same build. */
#include <string.h>

#include "engine/engine_internal.h"
#include "model/json_read.h" /* KVC_TRY */

#define LOG_MAGIC     0x4c43564bu /* "KVCL" */
#define LOG_MAX_BYTES ((int64_t)1 << 30)

enum { LOG_STEP = 1, LOG_END = 2, LOG_SCORE = 3 };
enum { OP_HELLO = 1, OP_ADD = 2, OP_MASK = 3, OP_RELEASE = 4 };

typedef struct log_header {
    uint32_t magic, kind;
    int64_t n; /* bytes of commands that follow */
} log_header;

typedef struct log_cmd {
    uint32_t op, zero;
    int64_t n; /* body bytes, a multiple of 8 */
} log_cmd;

typedef struct log_add { /* the fixed part of an ADD */
    int64_t id, n_prompt, max_new_tokens, salt_len, min_tokens;
    uint64_t seed;
    int32_t eos_id, priority, top_k, n_min_tokens_ids, n_logit_bias;
    float temperature, top_p, min_p, presence_penalty, frequency_penalty, repetition_penalty;
} log_add;

/* The sizes a follower must share with its lead (HELLO), by name. */
static const char *const HELLO_NAMES[] = {"vocab_size",
                                          "max_model_len",
                                          "max_num_seqs",
                                          "max_num_batched_tokens",
                                          "max_requests",
                                          "long_prefill_token_threshold",
                                          "step_cost_ratio",
                                          "min_chunk_tokens",
                                          "scheduler",
                                          "plan_concurrency",
                                          "reserved_decode_tokens",
                                          "seed",
                                          "prefix_caching",
                                          "prefix_salt",
                                          "managed (cache info)",
                                          "pools (manager keys)"};
#define HELLO_FIXED ((int)(sizeof HELLO_NAMES / sizeof *HELLO_NAMES))
#define HELLO_COUNT (HELLO_FIXED + KVC_MAX_MANAGERS) /* then the blocks of each pool */

static void hello_values(const kvc_engine *e, int64_t v[HELLO_COUNT]) {
    const kvc_engine_params *p = &e->p;
    int64_t ratio = 0;
    memcpy(&ratio, &p->step_cost_ratio, sizeof ratio);
    const int64_t fixed[HELLO_FIXED] = {e->model.vocab_size,
                                        p->max_model_len,
                                        p->max_num_seqs,
                                        p->max_num_batched_tokens,
                                        p->max_requests,
                                        p->long_prefill_token_threshold,
                                        ratio,
                                        p->min_chunk_tokens,
                                        p->scheduler,
                                        p->plan_concurrency,
                                        p->reserved_decode_tokens,
                                        (int64_t)p->seed,
                                        p->prefix_caching,
                                        (int64_t)p->prefix_salt,
                                        e->managed,
                                        e->n_keys};
    memcpy(v, fixed, sizeof fixed);
    for (int k = 0; k < KVC_MAX_MANAGERS; k++)
        v[HELLO_FIXED + k] = k < e->n_keys ? kvc_manager_num_blocks(e->mgr, k) : 0;
}

static int64_t pad8(int64_t n) { return (n + 7) & ~(int64_t)7; }

static bool lead(const kvc_engine *e) { return e->p.sync.bcast != NULL && !e->p.sync.follower; }

/* KVC_OK when e may log a call (what): always without replicas; a follower only in its replay. */
static kvc_status guard(const kvc_engine *e, const char *what) {
    if (e->p.sync.follower && !e->replaying)
        return kvci_fail(KVC_EINVAL,
                         "%s: this engine follows a lead (kvc_engine_sync.follower): its calls come from the lead's "
                         "log in kvc_engine_follow",
                         what);
    return KVC_OK;
}

/* Appends a command of `body` bytes (padded, zero-filled) to a lead's log; its body's address in *out. */
static kvc_status append(kvc_engine *e, uint32_t op, int64_t body, uint8_t **out) {
    const int64_t need = e->log_n + (int64_t)sizeof(log_cmd) + pad8(body);
    if (need > LOG_MAX_BYTES)
        return kvci_fail(KVC_ENOMEM,
                         "engine log: %lld bytes logged since the last step, more than %lld (step the lead)",
                         (long long)need, (long long)LOG_MAX_BYTES);
    if (need > e->log_cap) {
        const int64_t cap = kvci_max64(need, kvci_max64(2 * e->log_cap, 4096));
        uint8_t *grown = kvci_realloc(e->log, (size_t)cap);
        if (grown == NULL) return kvci_fail(KVC_ENOMEM, "engine log: out of memory for %lld bytes", (long long)cap);
        e->log = grown, e->log_cap = cap;
    }
    const log_cmd c = {.op = op, .n = pad8(body)};
    memcpy(e->log + e->log_n, &c, sizeof c);
    *out = e->log + e->log_n + sizeof c;
    memset(*out, 0, (size_t)c.n);
    e->log_n = need;
    return KVC_OK;
}

kvc_status kvci_engine_log_add(kvc_engine *e, const kvc_engine_request *r) {
    KVC_TRY(guard(e, "kvc_engine_add_request"));
    if (!lead(e)) return KVC_OK;
    const kvc_sampling_params *s = &r->sampling;
    const int64_t n_prompt = r->n_prompt * (int64_t)sizeof(int32_t);
    const int64_t n_stop = s->n_min_tokens_ids * (int64_t)sizeof(int32_t);
    const int64_t n_bias = s->n_logit_bias * (int64_t)sizeof(kvc_logit_bias);
    uint8_t *b = NULL;
    KVC_TRY(append(e, OP_ADD, (int64_t)sizeof(log_add) + n_prompt + n_stop + n_bias + r->cache_salt_len, &b));
    log_add a;
    memset(&a, 0, sizeof a); /* padding included: the bytes sent are defined */
    a.id = r->id, a.n_prompt = r->n_prompt, a.max_new_tokens = r->max_new_tokens, a.salt_len = r->cache_salt_len;
    a.min_tokens = s->min_tokens, a.seed = s->seed, a.eos_id = r->eos_id, a.priority = r->priority;
    a.top_k = s->top_k, a.n_min_tokens_ids = s->n_min_tokens_ids, a.n_logit_bias = s->n_logit_bias;
    a.temperature = s->temperature, a.top_p = s->top_p, a.min_p = s->min_p;
    a.presence_penalty = s->presence_penalty, a.frequency_penalty = s->frequency_penalty;
    a.repetition_penalty = s->repetition_penalty;
    memcpy(b, &a, sizeof a);
    b += sizeof a;
    memcpy(b, r->prompt, (size_t)n_prompt);
    if (n_stop > 0) memcpy(b + n_prompt, s->min_tokens_ids, (size_t)n_stop);
    if (n_bias > 0) memcpy(b + n_prompt + n_stop, s->logit_bias, (size_t)n_bias);
    if (r->cache_salt_len > 0) memcpy(b + n_prompt + n_stop + n_bias, r->cache_salt, (size_t)r->cache_salt_len);
    return KVC_OK;
}

kvc_status kvci_engine_log_mask(kvc_engine *e, int64_t id, const uint32_t *bitmask, int64_t n_words) {
    KVC_TRY(guard(e, "kvc_engine_set_allowed_tokens"));
    if (!lead(e)) return KVC_OK;
    const int64_t n = bitmask == NULL ? 0 : n_words;
    uint8_t *b = NULL;
    KVC_TRY(append(e, OP_MASK, 16 + n * (int64_t)sizeof(uint32_t), &b));
    memcpy(b, &id, 8);
    memcpy(b + 8, &n, 8);
    if (n > 0) memcpy(b + 16, bitmask, (size_t)n * sizeof(uint32_t));
    return KVC_OK;
}

kvc_status kvci_engine_log_release(kvc_engine *e, int64_t id, int64_t *mark) {
    *mark = e->log_n;
    KVC_TRY(guard(e, "kvc_engine_request_release"));
    if (!lead(e)) return KVC_OK;
    uint8_t *b = NULL;
    KVC_TRY(append(e, OP_RELEASE, 8, &b));
    memcpy(b, &id, 8);
    return KVC_OK;
}

void kvci_engine_log_rewind(kvc_engine *e, int64_t mark) {
    if (lead(e)) e->log_n = mark;
}

/* Sends n bytes from buf as a log of `kind`. */
static kvc_status send_bytes(kvc_engine *e, uint32_t kind, void *buf, int64_t n) {
    const kvc_engine_sync *s = &e->p.sync;
    log_header h = {.magic = LOG_MAGIC, .kind = kind, .n = n};
    kvc_status st = s->bcast(s->user, &h, sizeof h, false);
    if (st == KVC_OK && h.n > 0) st = s->bcast(s->user, buf, h.n, false);
    if (st != KVC_OK) {
        e->log_lost = true;
        return kvci_fail(st, "engine log: sending the lead's log to its followers failed: %s", kvc_last_error());
    }
    return KVC_OK;
}

/* Sends the lead's log as a log of `kind`, then empties it. */
static kvc_status send(kvc_engine *e, uint32_t kind) {
    KVC_TRY(send_bytes(e, kind, e->log, e->log_n));
    e->log_n = 0;
    return KVC_OK;
}

kvc_status kvci_engine_log_step(kvc_engine *e) {
    KVC_TRY(guard(e, "kvc_engine_step"));
    if (!lead(e)) return KVC_OK;
    if (e->log_lost)
        return kvci_fail(KVC_EINTERNAL, "engine log: an earlier log did not reach the followers; they no longer "
                                        "match this engine (end the job)");
    return send(e, LOG_STEP);
}

kvc_status kvc_engine_sync_score(kvc_engine *e, const int32_t *ids, int64_t n) {
    if (e == NULL || ids == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_sync_score: NULL argument");
    if (n < 1 || n > e->p.max_model_len)
        return kvci_fail(KVC_EINVAL, "kvc_engine_sync_score: n %lld outside [1, %lld] (max_model_len)", (long long)n,
                         (long long)e->p.max_model_len);
    KVC_TRY(guard(e, "kvc_engine_sync_score"));
    if (!lead(e)) return KVC_OK;
    if (e->log_lost)
        return kvci_fail(KVC_EINTERNAL, "engine log: an earlier log did not reach the followers; they no longer "
                                        "match this engine (end the job)");
    return send_bytes(e, LOG_SCORE, (void *)ids, n * (int64_t)sizeof(int32_t));
}

kvc_status kvc_engine_follow_score(const kvc_engine *e, const int32_t **ids, int64_t *n) {
    if (e == NULL || ids == NULL || n == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_follow_score: NULL argument");
    *n = e->p.sync.follower ? e->score_n : 0;
    *ids = *n > 0 ? (const int32_t *)e->log : NULL;
    return KVC_OK;
}

kvc_status kvci_engine_log_create(kvc_engine *e) {
    const kvc_engine_sync *s = &e->p.sync;
    if (s->bcast == NULL)
        return s->follower ? kvci_fail(KVC_EINVAL, "engine: sync.follower needs sync.bcast (the lead's broadcast)")
                           : KVC_OK;
    if (e->p.role != KVC_ENGINE_ROLE_BOTH)
        return kvci_fail(KVC_EINVAL, "engine: sync (tensor-parallel replicas) needs the BOTH role");
    if (s->follower) return KVC_OK;
    uint8_t *b = NULL;
    KVC_TRY(append(e, OP_HELLO, HELLO_COUNT * (int64_t)sizeof(int64_t), &b));
    int64_t v[HELLO_COUNT];
    hello_values(e, v);
    memcpy(b, v, sizeof v);
    return KVC_OK;
}

void kvci_engine_log_destroy(kvc_engine *e) {
    if (lead(e) && e->log != NULL && !e->log_lost) (void)send(e, LOG_END); /* the followers return */
    kvci_free(e->log);
    e->log = NULL, e->log_n = e->log_cap = 0;
}

/* ---- the follower ---- */

static kvc_status check_hello(const kvc_engine *e, const uint8_t *b, int64_t n) {
    if (n != HELLO_COUNT * (int64_t)sizeof(int64_t))
        return kvci_fail(KVC_EINVAL, "engine log: the lead's sizes are %lld bytes, %lld expected (another build?)",
                         (long long)n, (long long)(HELLO_COUNT * sizeof(int64_t)));
    int64_t mine[HELLO_COUNT], theirs[HELLO_COUNT];
    hello_values(e, mine);
    memcpy(theirs, b, sizeof theirs);
    for (int i = 0; i < HELLO_COUNT; i++)
        if (mine[i] != theirs[i]) {
            if (i < HELLO_FIXED)
                return kvci_fail(KVC_EINVAL,
                                 "engine log: this follower's %s is %lld, the lead's %lld (every rank "
                                 "needs the same model and engine params)",
                                 HELLO_NAMES[i], (long long)mine[i], (long long)theirs[i]);
            return kvci_fail(KVC_EINVAL, "engine log: this follower's pool %d has %lld blocks, the lead's %lld",
                             i - HELLO_FIXED, (long long)mine[i], (long long)theirs[i]);
        }
    return KVC_OK;
}

static kvc_status replay_add(kvc_engine *e, const uint8_t *b, int64_t n) {
    log_add a;
    if (n < (int64_t)sizeof a)
        return kvci_fail(KVC_EINVAL, "engine log: an add of %lld bytes is truncated", (long long)n);
    memcpy(&a, b, sizeof a);
    if (a.n_prompt < 1 || a.n_prompt > e->p.max_model_len || a.n_min_tokens_ids < 0 ||
        a.n_min_tokens_ids > KVC_SAMPLING_MAX_STOP_IDS || a.n_logit_bias < 0 ||
        a.n_logit_bias > KVC_SAMPLING_MAX_LOGIT_BIAS || a.salt_len < 0 || a.salt_len > KVC_ENGINE_SALT_MAX)
        return kvci_fail(KVC_EINVAL, "engine log: request %lld's add has counts out of range", (long long)a.id);
    const int64_t n_prompt = a.n_prompt * 4, n_stop = a.n_min_tokens_ids * 4, n_bias = a.n_logit_bias * 8;
    if (n != pad8((int64_t)sizeof a + n_prompt + n_stop + n_bias + a.salt_len))
        return kvci_fail(KVC_EINVAL, "engine log: request %lld's add is %lld bytes, unlike its counts", (long long)a.id,
                         (long long)n);
    const uint8_t *p = b + sizeof a; /* 8-byte aligned: the log's commands are */
    kvc_engine_request r = kvc_engine_request_default();
    r.id = a.id, r.prompt = (const int32_t *)p, r.n_prompt = a.n_prompt, r.max_new_tokens = a.max_new_tokens;
    r.eos_id = a.eos_id, r.priority = a.priority;
    r.cache_salt = a.salt_len > 0 ? p + n_prompt + n_stop + n_bias : NULL, r.cache_salt_len = a.salt_len;
    kvc_sampling_params *s = &r.sampling;
    s->temperature = a.temperature, s->top_k = a.top_k, s->top_p = a.top_p, s->seed = a.seed, s->min_p = a.min_p;
    s->presence_penalty = a.presence_penalty, s->frequency_penalty = a.frequency_penalty;
    s->repetition_penalty = a.repetition_penalty, s->min_tokens = a.min_tokens;
    s->n_min_tokens_ids = a.n_min_tokens_ids,
    s->min_tokens_ids = a.n_min_tokens_ids ? (const int32_t *)(p + n_prompt) : NULL;
    s->n_logit_bias = a.n_logit_bias;
    s->logit_bias = a.n_logit_bias ? (const kvc_logit_bias *)(p + n_prompt + n_stop) : NULL;
    return kvc_engine_add_request(e, &r);
}

static kvc_status replay_mask(kvc_engine *e, const uint8_t *b, int64_t n) {
    int64_t id = 0, n_words = 0;
    if (n >= 16) memcpy(&id, b, 8), memcpy(&n_words, b + 8, 8);
    if (n < 16 || n_words < 0 || n_words > e->mask_words || n != pad8(16 + 4 * n_words))
        return kvci_fail(KVC_EINVAL, "engine log: a mask of %lld bytes is malformed", (long long)n);
    return kvc_engine_set_allowed_tokens(e, id, n_words ? (const uint32_t *)(b + 16) : NULL, n_words);
}

/* Replays the n bytes of commands in e->log; the first log must open with the lead's sizes. */
static kvc_status replay(kvc_engine *e, int64_t n, bool first) {
    static const char *const OPS[] = {"", "hello", "add", "mask", "release"};
    for (int64_t at = 0; at < n;) {
        log_cmd c;
        if (n - at < (int64_t)sizeof c)
            return kvci_fail(KVC_EINVAL, "engine log: a command at byte %lld is truncated", (long long)at);
        memcpy(&c, e->log + at, sizeof c);
        at += sizeof c;
        if (c.op < OP_HELLO || c.op > OP_RELEASE || c.zero != 0 || c.n < 0 || c.n % 8 != 0 || c.n > n - at)
            return kvci_fail(KVC_EINVAL, "engine log: command %u at byte %lld (%lld bytes) is unknown or truncated",
                             c.op, (long long)(at - (int64_t)sizeof c), (long long)c.n);
        if ((c.op == OP_HELLO) != (first && at == (int64_t)sizeof c))
            return kvci_fail(KVC_EINVAL, "engine log: the lead's sizes must open its first log, and only it");
        const uint8_t *b = e->log + at;
        int64_t id = -1;
        kvc_status st = KVC_OK;
        switch (c.op) {
        case OP_HELLO: st = check_hello(e, b, c.n); break;
        case OP_ADD: st = replay_add(e, b, c.n); break;
        case OP_MASK: st = replay_mask(e, b, c.n); break;
        default:
            if (c.n != 8)
                return kvci_fail(KVC_EINVAL, "engine log: a release of %lld bytes is malformed", (long long)c.n);
            memcpy(&id, b, 8);
            st = kvc_engine_request_release(e, id);
        }
        if (st < 0) return kvci_fail(st, "engine log: replaying the lead's %s: %s", OPS[c.op], kvc_last_error());
        at += c.n;
    }
    if (first && n == 0) return kvci_fail(KVC_EINVAL, "engine log: the lead's first log is empty (its sizes missing)");
    return KVC_OK;
}

/* Receives one log into e->log; *kind its kind, *n its bytes. */
static kvc_status receive(kvc_engine *e, uint32_t *kind, int64_t *n) {
    const kvc_engine_sync *s = &e->p.sync;
    log_header h;
    KVC_TRY(s->bcast(s->user, &h, sizeof h, true));
    if (h.magic != LOG_MAGIC || h.kind < LOG_STEP || h.kind > LOG_SCORE || h.n < 0 || h.n > LOG_MAX_BYTES ||
        (h.kind == LOG_SCORE && (h.n % 4 != 0 || h.n < 4 || h.n > 4 * e->p.max_model_len)))
        return kvci_fail(KVC_EINVAL, "engine log: a header with magic 0x%08x, kind %u, %lld bytes is not the lead's",
                         h.magic, h.kind, (long long)h.n);
    if (h.n > e->log_cap) {
        uint8_t *grown = kvci_realloc(e->log, (size_t)h.n);
        if (grown == NULL) return kvci_fail(KVC_ENOMEM, "engine log: out of memory for %lld bytes", (long long)h.n);
        e->log = grown, e->log_cap = h.n;
    }
    if (h.n > 0) KVC_TRY(s->bcast(s->user, e->log, h.n, false));
    *kind = h.kind, *n = h.n;
    return KVC_OK;
}

static kvc_status follow(kvc_engine *e) {
    for (;;) {
        uint32_t kind = 0;
        int64_t n = 0;
        KVC_TRY(receive(e, &kind, &n));
        if (kind == LOG_SCORE) {
            e->score_n = n / 4; /* the caller runs the lead's pass (kvc_engine_follow_score) */
            return KVC_OK;
        }
        KVC_TRY(replay(e, n, !e->log_begun));
        e->log_begun = true;
        if (kind == LOG_END) return KVC_OK;
        kvc_engine_step_result res;
        const kvc_status st = kvc_engine_step(e, &res);
        if (st < 0) return kvci_fail(st, "engine log: the follower's step failed: %s", kvc_last_error());
    }
}

kvc_status kvc_engine_follow(kvc_engine *e) {
    if (e == NULL || e->p.sync.bcast == NULL || !e->p.sync.follower)
        return kvci_fail(KVC_EINVAL, "kvc_engine_follow: an engine made with sync.bcast and sync.follower is needed");
    if (e->replaying) return kvci_fail(KVC_EINVAL, "kvc_engine_follow: the engine is following already");
    e->replaying = true;
    e->score_n = 0;
    const kvc_status st = follow(e);
    e->replaying = false;
    return st;
}
