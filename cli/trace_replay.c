/* Trace replay: applying a loaded trace's ops to its manager and writing the
 * results as JSON Lines (see trace_replay.h; parsing is in trace_parse.c). */
#include "trace_replay.h"

#include "base/internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The op's token ids and salt as a prompt. */
static kvc_prompt op_prompt(const kvc_trace_op *op) {
    return (kvc_prompt){.tokens = op->tokens,
                        .n_tokens = op->n_tokens,
                        .cache_salt = op->cache_salt_len > 0 ? op->cache_salt : NULL,
                        .cache_salt_len = op->cache_salt_len};
}

/* An allocate op with token ids under prefix caching: a new request takes the
 * cached prefix of them when it covers the op's computed tokens (its
 * positions stay covered; of its external tokens, those the hit does not
 * cover follow it), and the op's tokens count as computed once it is
 * allocated. */
static kvc_status apply_with_tokens(kvc_trace *t, const kvc_trace_op *op, kvc_slot_request *req) {
    kvc_prompt prompt = op_prompt(op);
    bool known = false;
    for (int32_t k = 0; k < kvc_manager_n_keys(t->manager); k++)
        known |= kvc_manager_has_request(t->manager, op->request, k);
    kvc_prefix_hit hit = {.n_tokens = 0};
    if (!known) {
        kvc_status st = kvc_manager_find_prefix(t->manager, &prompt, &hit);
        if (st < 0) return st;
        int64_t external_end = req->computed_tokens + req->num_external_computed_tokens;
        int64_t end = external_end + req->num_new_tokens;
        if (hit.n_tokens >= req->computed_tokens) { /* else the op computed more: no hit, its salt on req */
            req->computed_tokens = hit.n_tokens;
            req->num_external_computed_tokens = external_end > hit.n_tokens ? external_end - hit.n_tokens : 0;
            req->num_new_tokens = kvci_max64(end - kvci_max64(external_end, hit.n_tokens), 0);
            req->prompt = &prompt;
            req->hit = &hit; /* taken as found, not looked up again */
        }
    }
    kvc_status st = kvc_manager_allocate_slots(t->manager, req);
    req->hit = NULL; /* &hit lives only here */
    if (st >= 0 && st != KVC_NO_SPACE) {
        if (req->prompt != NULL && req->computed_tokens > 0) t->last_hit = req->computed_tokens; /* taken */
        kvc_status cached =
            kvc_manager_cache_computed(t->manager, op->request, op->tokens,
                                       req->computed_tokens + req->num_external_computed_tokens + req->num_new_tokens);
        if (cached < 0) return cached;
    }
    return st;
}

/* Any other allocate op; external tokens come with the prompt they belong
 * to (prefix caching off: it only bounds them). */
static kvc_status allocate_plain(kvc_trace *t, const kvc_trace_op *op, kvc_slot_request *req) {
    kvc_prompt prompt = op_prompt(op);
    if (op->tokens != NULL && op->external_tokens > 0) req->prompt = &prompt;
    return kvc_manager_allocate_slots(t->manager, req);
}

static kvc_status apply_query(kvc_trace *t, const kvc_trace_op *op) {
    kvc_prompt prompt = op_prompt(op);
    kvc_prefix_hit hit;
    kvc_status st = kvc_manager_find_prefix(t->manager, &prompt, &hit);
    if (st == KVC_OK) t->last_hit = hit.n_tokens;
    return st;
}

kvc_status kvc_trace_apply(kvc_trace *t, size_t i, const char **message) {
    const kvc_trace_op *op = &t->ops[i];
    kvc_status st = KVC_OK;
    *message = NULL;
    t->last_hit = -1;
    if (op->refusal[0] != '\0') {
        *message = op->refusal;
        return KVC_EINVAL;
    }
    kvc_slot_request req = {.request_id = op->request,
                            .computed_tokens = op->computed_tokens,
                            .num_external_computed_tokens = op->external_tokens,
                            .num_new_tokens = op->new_tokens,
                            .lookahead_tokens = op->lookahead_tokens,
                            .reserved_tokens = op->reserved_tokens,
                            .skip_keys = ~op->key_mask,
                            .cache_salt = op->cache_salt_len > 0 ? op->cache_salt : NULL,
                            .cache_salt_len = op->cache_salt_len};
    if (op->kind == KVC_TRACE_FREE)
        st = kvc_manager_free(t->manager, op->request);
    else if (op->kind == KVC_TRACE_CLEAR)
        st = kvc_manager_clear_prefix_cache(t->manager);
    else if (op->kind == KVC_TRACE_QUERY)
        st = apply_query(t, op);
    else if (t->prefix_caching && op->tokens != NULL)
        st = apply_with_tokens(t, op, &req);
    else
        st = allocate_plain(t, op, &req);
    if (st < 0) *message = kvc_last_error();
    return st;
}

/* ---- replay ----------------------------------------------------------------- */
void kvc_trace_put_json_string(FILE *out, const char *s) {
    fputc('"', out);
    for (size_t len = strlen(s); len > 0;) {
        unsigned char c = (unsigned char)*s;
        size_t n = kvci_utf8_char_len(s, len);
        if (n == 0) {
            fputs("\\ufffd", out); /* a byte that is not UTF-8 (a message cut inside a character) */
            n = 1;
        } else if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
        } else if (c == '\n' || c == '\r' || c == '\t') {
            fputc('\\', out);
            fputc(c == '\n' ? 'n' : c == '\r' ? 'r' : 't', out);
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
        } else {
            fwrite(s, 1, n, out);
        }
        s += n;
        len -= n;
    }
    fputc('"', out);
}

static void put_error_line(FILE *out, const size_t *op_index, const char *message) {
    fputc('{', out);
    if (op_index != NULL) fprintf(out, "\"op\": %zu, ", *op_index);
    fputs("\"error\": ", out);
    kvc_trace_put_json_string(out, message);
    fputs("}\n", out);
}

kvc_status kvc_trace_fetch_tables(const kvc_manager *m, int64_t request, kvc_trace_tables *tb) {
    int32_t n_keys = kvc_manager_n_keys(m);
    tb->start[0] = 0;
    for (int32_t k = 0; k < n_keys; k++) {
        int64_t n = 0;
        for (;;) {
            if (tb->ids == NULL || tb->start[k] + n > tb->cap) {
                int64_t cap = 2 * (tb->start[k] + n) + 64;
                int32_t *grown = kvci_realloc(tb->ids, (size_t)cap * sizeof *grown);
                if (grown == NULL)
                    return kvci_fail(KVC_ENOMEM, "cannot allocate %" PRId64 " block ids for request %" PRId64, cap,
                                     request);
                tb->ids = grown;
                tb->cap = cap;
            }
            kvc_status st = kvc_manager_block_ids(m, request, k, tb->ids + tb->start[k], tb->cap - tb->start[k], &n);
            if (st < 0) return st;
            if (tb->start[k] + n <= tb->cap) break;
        }
        tb->start[k + 1] = tb->start[k] + n;
    }
    return KVC_OK;
}

void kvc_trace_tables_free(kvc_trace_tables *tb) {
    kvci_free(tb->ids);
    tb->ids = NULL;
    tb->cap = 0;
}

/* ", NAME: {KEY: value(k), ...}" over the manager's keys. */
static void put_key_counts(FILE *out, const kvc_manager *m, const char *name,
                           int64_t (*value)(const kvc_manager *, int32_t)) {
    fprintf(out, ", \"%s\": {", name);
    for (int32_t k = 0; k < kvc_manager_n_keys(m); k++) {
        fputs(k > 0 ? ", " : "", out);
        kvc_trace_put_json_string(out, kvc_manager_key(m, k));
        fprintf(out, ": %" PRId64, value(m, k));
    }
    fputc('}', out);
}

/* Whether the op names a request, whose tables its line shows. */
static bool has_request(const kvc_trace_op *op) { return op->kind == KVC_TRACE_ALLOCATE || op->kind == KVC_TRACE_FREE; }

/* {"op": I, "ok": B, ["clamped": true,] ["hit": L,] ["blocks": {...},] "free": {...}[, "cached_free": {...}]} */
static void put_op_line(FILE *out, const kvc_trace *t, size_t index, kvc_status st, const kvc_trace_tables *tb) {
    const kvc_manager *m = t->manager;
    int32_t n_keys = kvc_manager_n_keys(m);
    fprintf(out, "{\"op\": %zu, \"ok\": %s", index, st == KVC_NO_SPACE ? "false" : "true");
    if (st == KVC_CLAMPED) fputs(", \"clamped\": true", out);
    if (t->last_hit >= 0) fprintf(out, ", \"hit\": %" PRId64, t->last_hit);
    if (has_request(&t->ops[index])) {
        fputs(", \"blocks\": {", out);
        for (int32_t k = 0; k < n_keys; k++) {
            fputs(k > 0 ? ", " : "", out);
            kvc_trace_put_json_string(out, kvc_manager_key(m, k));
            fputs(": [", out);
            for (int64_t j = tb->start[k]; j < tb->start[k + 1]; j++)
                fprintf(out, "%s%" PRId32, j > tb->start[k] ? ", " : "", tb->ids[j]);
            fputc(']', out);
        }
        fputc('}', out);
    }
    put_key_counts(out, m, "free", kvc_manager_num_free);
    if (t->prefix_caching) put_key_counts(out, m, "cached_free", kvc_manager_num_cached_free);
    fputs("}\n", out);
}

static void put_prefix_stats_line(FILE *out, const kvc_manager *m) {
    kvc_prefix_stats st;
    if (kvc_manager_prefix_stats(m, &st) < 0) return;
    fprintf(out,
            "{\"prefix\": {\"queries\": %" PRId64 ", \"hits\": %" PRId64 ", \"query_tokens\": %" PRId64
            ", \"hit_tokens\": %" PRId64 ", \"evictions\": %" PRId64 ", \"cached_blocks\": %" PRId64 "}}\n",
            st.queries, st.hits, st.query_tokens, st.hit_tokens, st.evictions, st.cached_blocks);
}

static void put_block_num_line(FILE *out, const kvc_manager *m) {
    fputs("{\"block_num\": {", out);
    for (int32_t k = 0; k < kvc_manager_n_keys(m); k++) {
        fputs(k > 0 ? ", " : "", out);
        kvc_trace_put_json_string(out, kvc_manager_key(m, k));
        fprintf(out, ": %" PRId64, kvc_manager_num_blocks(m, k));
    }
    fputs("}}\n", out);
}

/* Runs ops[i] and prints its line; false (with an error line) when the
 * replay cannot go on: memory ran out, or an invariant broke. */
static bool replay_op(kvc_trace *t, size_t i, FILE *out, const kvc_trace_options *opts, kvc_trace_tables *tb) {
    char line[512];
    const char *message = NULL;
    kvc_status st = kvc_trace_apply(t, i, &message);
    kvc_status fetched =
        st >= 0 && has_request(&t->ops[i]) ? kvc_trace_fetch_tables(t->manager, t->ops[i].request, tb) : KVC_OK;
    if (st == KVC_ENOMEM || fetched < 0) {
        snprintf(line, sizeof line, "op %zu: %s (%s): %s", i,
                 st == KVC_ENOMEM || fetched == KVC_ENOMEM ? "out of memory" : "replay failed",
                 st < 0 ? "the op was refused" : "the op was applied", kvc_last_error());
        put_error_line(out, NULL, line);
        return false;
    }
    if (st < 0)
        put_error_line(out, &i, message);
    else
        put_op_line(out, t, i, st, tb);
    if (opts->print_usage) {
        char usage[KVC_MAX_MANAGERS * (KVC_NAME_MAX + 48) + 8];
        fputs("{\"usage\": ", out);
        kvc_trace_put_json_string(out, kvc_manager_format_usage(t->manager, usage, sizeof usage) < 0 ? kvc_last_error()
                                                                                                     : usage);
        fputs("}\n", out);
        if (t->prefix_caching) put_prefix_stats_line(out, t->manager);
    }
    kvc_status checked = opts->check_invariants ? kvc_manager_check_invariants(t->manager) : KVC_OK;
    if (checked < 0) {
        snprintf(line, sizeof line, "op %zu: %s: %s", i,
                 checked == KVC_ENOMEM ? "out of memory checking the invariants" : "manager invariant broken",
                 kvc_last_error());
        put_error_line(out, NULL, line);
        return false;
    }
    return true;
}

int kvc_trace_replay(const char *json, size_t len, FILE *out, const kvc_trace_options *opts) {
    static const kvc_trace_options no_options = {0};
    if (opts == NULL) opts = &no_options;
    char err[512];
    kvc_trace *t = NULL;
    int rc = kvc_trace_load(json, len, opts, &t, err, sizeof err);
    if (rc != KVC_TRACE_EXIT_OK) {
        put_error_line(out, NULL, err);
        return rc;
    }
    put_block_num_line(out, t->manager);
    kvc_trace_tables tb = {0};
    for (size_t i = 0; i < t->n_ops && rc == KVC_TRACE_EXIT_OK && !ferror(out); i++)
        if (!replay_op(t, i, out, opts, &tb)) rc = KVC_TRACE_EXIT_FAILED;
    kvc_trace_tables_free(&tb);
    kvc_trace_destroy(t);
    return rc == KVC_TRACE_EXIT_OK && ferror(out) ? KVC_TRACE_EXIT_FAILED : rc;
}
