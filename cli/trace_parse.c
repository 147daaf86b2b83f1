/* JSON trace parsing and checking: the cache description, the block plan
 * source and the ops of a trace, and the manager built from them (see
 * trace_replay.h for the format). */
#include "trace_replay.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/json_nul.h"
#include "model/json_read.h"

/* ---- parsing helpers --------------------------------------------------------
 * Values are read with the typed accessors of the config reader
 * (model/json_read.h: the same checks and messages); every helper returns
 * false after writing "PATH.FIELD ...: what was expected" into the parser's
 * message buffer. JSON null counts as absent. */
typedef struct parser {
    char *err;
    size_t cap;
    int64_t max_tokens;   /* token ids an op may list (max_model_len) */
    int64_t trace_tokens; /* token ids the ops parsed so far list (at most KVC_TRACE_MAX_TOKENS) */
} parser;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static bool
perr(parser *p, const char *path, const char *field, const char *fmt, ...) {
    int n = 0;
    if (path[0] != '\0' && field != NULL)
        n = snprintf(p->err, p->cap, "%s.%s: ", path, field);
    else if (path[0] != '\0' || field != NULL)
        n = snprintf(p->err, p->cap, "%s: ", field != NULL ? field : path);
    if (n < 0 || (size_t)n >= p->cap) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->cap - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* The accessors' verdict: true on KVC_OK, else their message into p->err. */
static bool took(parser *p, kvc_status st) {
    if (st == KVC_OK) return true;
    snprintf(p->err, p->cap, "%s", kvc_last_error());
    return false;
}

static void path_index(char *dst, size_t cap, const char *base, const char *field, int index) {
    if (base[0] != '\0')
        snprintf(dst, cap, "%s.%s[%d]", base, field, index);
    else
        snprintf(dst, cap, "%s[%d]", field, index);
}

/* obj at path as an accessor view. */
static kvc_json_obj view(const cJSON *obj, const char *path) { return (kvc_json_obj){.obj = obj, .path = path}; }

static const cJSON *get(const cJSON *obj, const char *name) {
    const kvc_json_obj o = view(obj, "");
    return kvci_json_find(&o, name);
}

static bool name_in(const char *name, const char *const *names) {
    for (; *names != NULL; names++)
        if (strcmp(name, *names) == 0) return true;
    return false;
}

/* Whether a member of obj before c has c's name. */
static bool named_earlier(const cJSON *obj, const cJSON *c) {
    for (const cJSON *d = obj->child; d != c; d = d->next)
        if (strcmp(d->string, c->string) == 0) return true;
    return false;
}

/* Whether v is a string that fits a KVC_NAME_MAX buffer. */
static bool is_name(const cJSON *v) { return cJSON_IsString(v) && strlen(v->valuestring) < KVC_NAME_MAX; }

/* Refuses fields outside `allowed` and fields given twice. */
static bool check_fields(parser *p, const cJSON *obj, const char *path, const char *const *allowed) {
    for (const cJSON *c = obj->child; c != NULL; c = c->next) {
        if (!name_in(c->string, allowed)) return perr(p, path, NULL, "unknown field \"%.64s\"", c->string);
        if (named_earlier(obj, c)) return perr(p, path, NULL, "duplicate field \"%.64s\"", c->string);
    }
    return true;
}

static bool require_object(parser *p, const cJSON *v, const char *path) {
    return cJSON_IsObject(v) ? true : perr(p, path, NULL, "expected an object");
}

/* An integral JSON number within [min, INT64_MAX]; path.field names it. */
static bool as_int(parser *p, const cJSON *v, const char *path, const char *field, int64_t min, int64_t *out) {
    char where[320];
    if (field != NULL)
        snprintf(where, sizeof where, "%s%s%s", path, path[0] ? "." : "", field);
    else
        snprintf(where, sizeof where, "%s", path);
    return took(p, kvci_json_int_value(v, where, min, INT64_MAX, out));
}

static bool get_int(parser *p, const cJSON *obj, const char *path, const char *field, bool required, int64_t min,
                    int64_t dflt, int64_t *out) {
    const kvc_json_obj o = view(obj, path);
    bool present = false;
    *out = dflt;
    return took(p, kvci_json_int(&o, field, min, INT64_MAX, out, required ? NULL : &present));
}

/* A string of at most KVC_NAME_MAX-1 bytes copied into dst[KVC_NAME_MAX];
 * *present says whether the field was there. */
static bool get_name(parser *p, const cJSON *obj, const char *path, const char *field, bool required,
                     char dst[KVC_NAME_MAX], bool *present) {
    const kvc_json_obj o = view(obj, path);
    const char *s = NULL;
    *present = false;
    if (!took(p, kvci_json_str(&o, field, KVC_NAME_MAX - 1, &s, required ? NULL : present))) return false;
    if (s != NULL) {
        *present = true;
        memcpy(dst, s, strlen(s) + 1);
    }
    return true;
}

/* One of names[0..n) given by a string field; *out = its index (dflt when
 * the optional field is absent). */
static bool get_choice(parser *p, const cJSON *obj, const char *path, const char *field, bool required,
                       const char *const *names, int n, int dflt, int *out) {
    const kvc_json_obj o = view(obj, path);
    const char *s = NULL;
    bool present = false;
    *out = dflt;
    if (!took(p, kvci_json_str(&o, field, KVC_NAME_MAX - 1, &s, required ? NULL : &present))) return false;
    if (s == NULL) return true;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return true;
        }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i > 0 ? ", " : "", names[i]);
    }
    return perr(p, path, field, "expected one of %s", list);
}

/* A positive integer or a non-empty list of at most KVC_MAX_DIMS of them. */
static bool get_dims(parser *p, const cJSON *obj, const char *path, const char *field, bool allow_scalar,
                     int64_t dims[KVC_MAX_DIMS], int32_t *n) {
    const cJSON *v = get(obj, field);
    if (allow_scalar && cJSON_IsNumber(v)) {
        *n = 1;
        return as_int(p, v, path, field, 1, &dims[0]);
    }
    int size = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (size < 1 || size > KVC_MAX_DIMS)
        return perr(p, path, field, "expected %sa list of 1 to %d positive integers",
                    allow_scalar ? "a positive integer or " : "", KVC_MAX_DIMS);
    char item[256];
    int i = 0;
    for (const cJSON *c = v->child; c != NULL; c = c->next, i++) {
        path_index(item, sizeof item, path, field, i);
        if (!as_int(p, c, item, NULL, 1, &dims[i])) return false;
    }
    *n = (int32_t)size;
    return true;
}

/* ---- cache description ------------------------------------------------------ */
static const char *const ATTN_NAMES[] = {"FullAttention", "SlidingWindow", "Mamba", "ChunkedLocal"};
static const char *const LAYOUT_NAMES[] = {"BnBsND", "BnNBsD"};
static const char *const DTYPE_NAMES[] = {"f32", "f16", "bf16", "i8"};
static const kvc_dtype DTYPES[] = {KVC_DTYPE_F32, KVC_DTYPE_F16, KVC_DTYPE_BF16, KVC_DTYPE_I8};

static bool parse_entry(parser *p, const cJSON *v, const char *path, kvc_cache_entry *e) {
    static const char *const fields[] = {"name",
                                         "attn_type",
                                         "num_head",
                                         "dim",
                                         "dtype",
                                         "block_size",
                                         "manager_key",
                                         "sliding_window",
                                         "compress_ratio",
                                         "needs_block",
                                         "cache_layout",
                                         "shape",
                                         "next_n",
                                         "attention_chunk_size",
                                         NULL};
    if (!require_object(p, v, path) || !check_fields(p, v, path, fields)) return false;
    *e = kvc_cache_entry_default();
    bool present = false;
    int attn = 0, dtype = 0, layout = 0;
    if (!get_name(p, v, path, "name", true, e->name, &present) ||
        !get_choice(p, v, path, "attn_type", true, ATTN_NAMES, 4, 0, &attn) ||
        !get_choice(p, v, path, "dtype", true, DTYPE_NAMES, 4, 0, &dtype) ||
        !get_choice(p, v, path, "cache_layout", false, LAYOUT_NAMES, 2, 0, &layout))
        return false;
    e->attn_type = attn;
    e->dtype = DTYPES[dtype];
    e->layout = layout;
    bool mamba = attn == KVC_ATTN_MAMBA;
    e->is_state = mamba;
    if (!get_int(p, v, path, "num_head", !mamba, 1, 0, &e->num_head)) return false;
    if ((!mamba || get(v, "dim") != NULL) && !get_dims(p, v, path, "dim", true, e->dim, &e->n_dims)) return false;
    if (!get_int(p, v, path, "block_size", !mamba, 1, 1, &e->block_size) ||
        !get_name(p, v, path, "manager_key", false, e->manager_key, &present) ||
        !get_int(p, v, path, "sliding_window", false, 1, 0, &e->sliding_window) ||
        !get_int(p, v, path, "attention_chunk_size", false, 1, 0, &e->attention_chunk_size) ||
        !get_int(p, v, path, "compress_ratio", false, 1, 1, &e->compress_ratio))
        return false;
    const kvc_json_obj entry = view(v, path);
    bool have = false;
    e->needs_block = true;
    if (!took(p, kvci_json_bool(&entry, "needs_block", &e->needs_block, &have))) return false;
    if (!mamba) {
        if (get(v, "shape") != NULL) return perr(p, path, "shape", "only allowed for Mamba entries");
        if (get(v, "next_n") != NULL) return perr(p, path, "next_n", "only allowed for Mamba entries");
        return true;
    }
    return get_dims(p, v, path, "shape", false, e->shape, &e->n_shape) &&
           get_int(p, v, path, "next_n", false, 0, 0, &e->next_n);
}

static void free_info(kvc_model_cache_info *ci) {
    for (int32_t l = 0; l < ci->n_layer_infos; l++) kvci_free(ci->layer_infos[l].caches);
    kvci_free(ci->layer_infos);
    memset(ci, 0, sizeof *ci);
}

static bool parse_layers(parser *p, const cJSON *root, kvc_model_cache_info *ci) {
    static const char *const fields[] = {"caches", NULL};
    const cJSON *layers = get(root, "layers");
    if (layers == NULL) return perr(p, "", "layers", "missing");
    if (!cJSON_IsArray(layers)) return perr(p, "", "layers", "expected a list");
    int n = cJSON_GetArraySize(layers);
    ci->layer_infos = kvci_calloc((size_t)n + 1, sizeof *ci->layer_infos);
    if (ci->layer_infos == NULL) return perr(p, "", "layers", "out of memory");
    char lpath[64], cpath[128];
    int l = 0;
    for (const cJSON *lv = layers->child; lv != NULL; lv = lv->next, l++) {
        path_index(lpath, sizeof lpath, "", "layers", l);
        if (!require_object(p, lv, lpath) || !check_fields(p, lv, lpath, fields)) return false;
        const cJSON *caches = get(lv, "caches");
        if (!cJSON_IsArray(caches)) return perr(p, lpath, "caches", caches == NULL ? "missing" : "expected a list");
        kvc_layer_cache_info *li = &ci->layer_infos[l];
        int nc = cJSON_GetArraySize(caches);
        li->layer_idx = l;
        li->caches = kvci_calloc((size_t)nc + 1, sizeof *li->caches);
        ci->n_layer_infos = l + 1;
        if (li->caches == NULL) return perr(p, lpath, "caches", "out of memory");
        int c = 0;
        for (const cJSON *cv = caches->child; cv != NULL; cv = cv->next, c++) {
            path_index(cpath, sizeof cpath, lpath, "caches", c);
            if (!parse_entry(p, cv, cpath, &li->caches[c])) return false;
            li->n_caches = c + 1;
        }
    }
    ci->num_layers = n;
    ci->n_layer_infos = n;
    return true;
}

/* ---- block plan ------------------------------------------------------------- */
typedef struct plan_source {
    const cJSON *block_num; /* exactly one of block_num and plan */
    kvc_plan_params params;
} plan_source;

static bool parse_plan_source(parser *p, const cJSON *root, plan_source *src) {
    static const char *const fields[] = {
        "mode", "max_len", "kv_memory_bytes", "max_concurrency", "next_n", "max_prefill_tokens", NULL};
    static const char *const modes[] = {"offline", "online"};
    src->block_num = get(root, "block_num");
    const cJSON *plan = get(root, "plan");
    src->params = kvc_plan_default_params();
    if (src->block_num != NULL && plan != NULL) return perr(p, "", "plan", "not allowed together with block_num");
    if (src->block_num != NULL) {
        if (!require_object(p, src->block_num, "block_num")) return false;
        if (cJSON_GetArraySize(src->block_num) > KVC_MAX_MANAGERS)
            return perr(p, "", "block_num", "more than %d keys", KVC_MAX_MANAGERS);
        for (const cJSON *c = src->block_num->child; c != NULL; c = c->next) {
            char path[96];
            snprintf(path, sizeof path, "block_num.%.70s", c->string);
            int64_t n = 0;
            if (strlen(c->string) >= KVC_NAME_MAX)
                return perr(p, "block_num", NULL, "key \"%.64s...\" longer than %d bytes", c->string, KVC_NAME_MAX - 1);
            if (named_earlier(src->block_num, c)) return perr(p, path, NULL, "duplicate key");
            if (!as_int(p, c, path, NULL, 1, &n)) return false;
        }
        return true;
    }
    if (plan == NULL) return perr(p, "", "block_num", "missing (give block_num or plan)");
    if (!require_object(p, plan, "plan") || !check_fields(p, plan, "plan", fields)) return false;
    int mode = 0;
    kvc_plan_params *pp = &src->params;
    if (!get_choice(p, plan, "plan", "mode", true, modes, 2, 0, &mode)) return false;
    bool offline = mode == 0;
    const char *unused = offline ? "kv_memory_bytes" : "max_len";
    if (get(plan, unused) != NULL)
        return perr(p, "plan", unused, "not used by mode \"%s\"", offline ? "offline" : "online");
    pp->mode = offline ? KVC_PLAN_OFFLINE : KVC_PLAN_BUDGET;
    pp->free_bytes = -1;
    return (offline ? get_int(p, plan, "plan", "max_len", true, 1, 0, &pp->max_len)
                    : get_int(p, plan, "plan", "kv_memory_bytes", true, 1, 0, &pp->kv_memory_bytes)) &&
           get_int(p, plan, "plan", "max_concurrency", true, 1, 0, &pp->max_concurrency) &&
           get_int(p, plan, "plan", "next_n", false, 0, 0, &pp->next_n) &&
           get_int(p, plan, "plan", "max_prefill_tokens", false, 0, 0, &pp->max_prefill_tokens);
}

static bool make_plan(parser *p, const plan_source *src, const kvc_model_cache_info *ci, kvc_block_plan *plan) {
    if (src->block_num == NULL) {
        if (kvc_plan_blocks(&src->params, ci, plan) < 0) return perr(p, "", "plan", "%s", kvc_last_error());
        return true;
    }
    int n = cJSON_GetArraySize(src->block_num);
    const char **keys = kvci_calloc((size_t)n + 1, sizeof *keys);
    int64_t *counts = kvci_calloc((size_t)n + 1, sizeof *counts);
    bool ok = keys != NULL && counts != NULL;
    if (!ok) perr(p, "", "block_num", "out of memory");
    int i = 0;
    for (const cJSON *c = src->block_num->child; ok && c != NULL; c = c->next, i++) {
        keys[i] = c->string;
        counts[i] = (int64_t)c->valuedouble;
    }
    if (ok && kvc_block_plan_from_counts(ci, keys, counts, n, plan) < 0)
        ok = perr(p, "", "block_num", "%s", kvc_last_error());
    kvci_free(keys);
    kvci_free(counts);
    return ok;
}

/* ---- ops -------------------------------------------------------------------- */
/* A run [first, count] of consecutive token ids, or one id. */
static bool token_item(parser *p, const cJSON *v, const char *path, int64_t *first, int64_t *count) {
    *count = 1;
    if (!cJSON_IsArray(v)) {
        if (!as_int(p, v, path, NULL, 0, first)) return false;
        return *first <= INT32_MAX || perr(p, path, NULL, "token id %" PRId64 " exceeds %d", *first, INT32_MAX);
    }
    if (cJSON_GetArraySize(v) != 2) return perr(p, path, NULL, "expected a token id or a run [first, count]");
    if (!as_int(p, v->child, path, "first", 0, first) || !as_int(p, v->child->next, path, "count", 1, count))
        return false;
    if (*first > INT32_MAX || *count > (int64_t)INT32_MAX - *first + 1)
        return perr(p, path, NULL, "run [%" PRId64 ", %" PRId64 "] goes past token id %d", *first, *count, INT32_MAX);
    return true;
}

/* "tokens": ids and runs, expanded into op->tokens (at most max_tokens). */
static bool parse_tokens(parser *p, const cJSON *v, const char *path, kvc_trace_op *op) {
    const cJSON *list = get(v, "tokens");
    if (list == NULL) return true;
    if (!cJSON_IsArray(list)) return perr(p, path, "tokens", "expected a list of token ids and runs [first, count]");
    char item[128];
    int64_t total = 0, first = 0, count = 0;
    int i = 0;
    for (const cJSON *c = list->child; c != NULL; c = c->next, i++) {
        path_index(item, sizeof item, path, "tokens", i);
        if (!token_item(p, c, item, &first, &count)) return false;
        if (count > p->max_tokens - total)
            return perr(p, path, "tokens", "more than max_model_len %" PRId64 " token ids", p->max_tokens);
        if (count > KVC_TRACE_MAX_TOKENS - p->trace_tokens - total)
            return perr(p, path, "tokens", "the ops list more than %" PRId64 " token ids in all, the limit of a replay",
                        KVC_TRACE_MAX_TOKENS);
        total += count;
    }
    int64_t end = op->computed_tokens + op->external_tokens + op->new_tokens;
    if (total < end)
        return perr(p, path, "tokens",
                    "%" PRId64
                    " token ids do not cover computed_tokens + external_computed_tokens + new_tokens = %" PRId64,
                    total, end);
    op->tokens = kvci_malloc((size_t)(total > 0 ? total : 1) * sizeof *op->tokens);
    if (op->tokens == NULL) return perr(p, path, "tokens", "out of memory for %" PRId64 " token ids", total);
    p->trace_tokens += total;
    for (const cJSON *c = list->child; c != NULL; c = c->next) {
        token_item(p, c, "", &first, &count);
        for (int64_t t = 0; t < count; t++) op->tokens[op->n_tokens++] = (int32_t)(first + t);
    }
    return true;
}

/* "request": an id every JSON number near it tells apart (see trace_replay.h). */
static bool get_request(parser *p, const cJSON *v, const char *path, int64_t *out) {
    const kvc_json_obj o = view(v, path);
    if (kvci_json_int(&o, "request", 0, KVC_TRACE_MAX_REQUEST_ID, out, NULL) == KVC_OK) return true;
    return perr(p, "", NULL, "%s (request ids are exact integers in [0, 2^53 - 1])", kvc_last_error());
}

/* "cache_salt": a string of at most KVC_NAME_MAX - 1 bytes, NUL bytes
 * included (model/json_nul.h); absent: no salt. */
static bool get_salt(parser *p, const cJSON *v, const char *path, kvc_trace_op *op) {
    const cJSON *s = get(v, "cache_salt");
    op->cache_salt_len = 0;
    if (s == NULL) return true;
    if (!cJSON_IsString(s)) return perr(p, path, "cache_salt", "expected a string");
    size_t n = kvci_json_string_bytes(s);
    if (n >= KVC_NAME_MAX) return perr(p, path, "cache_salt", "longer than %d bytes", KVC_NAME_MAX - 1);
    memcpy(op->cache_salt, s->valuestring, n);
    op->cache_salt_len = (int64_t)n;
    return true;
}

/* {"op": "free" | "clear" | "query", ...}; false for another name. */
static bool parse_other_op(parser *p, const cJSON *v, const char *path, const char *name, kvc_trace_op *op,
                           bool *valid) {
    static const char *const free_fields[] = {"op", "request", NULL};
    static const char *const clear_fields[] = {"op", NULL};
    static const char *const query_fields[] = {"op", "tokens", "cache_salt", NULL};
    if (strcmp(name, "free") == 0) {
        op->kind = KVC_TRACE_FREE;
        *valid = check_fields(p, v, path, free_fields) && get_request(p, v, path, &op->request);
    } else if (strcmp(name, "clear") == 0) {
        op->kind = KVC_TRACE_CLEAR;
        *valid = check_fields(p, v, path, clear_fields);
    } else if (strcmp(name, "query") == 0) {
        op->kind = KVC_TRACE_QUERY;
        *valid = check_fields(p, v, path, query_fields) && get_salt(p, v, path, op) &&
                 (get(v, "tokens") != NULL || perr(p, path, "tokens", "missing (a query looks up token ids)")) &&
                 parse_tokens(p, v, path, op);
    } else {
        return false;
    }
    return true;
}

/* Whether the op's computed, external and new tokens are counts whose sum
 * is an int64 (else the manager refuses the op, tokens or not). */
static bool op_counts_valid(const kvc_trace_op *op) {
    return op->computed_tokens >= 0 && op->external_tokens >= 0 && op->new_tokens >= 0 &&
           op->computed_tokens <= INT64_MAX - op->new_tokens &&
           op->external_tokens <= INT64_MAX - op->new_tokens - op->computed_tokens;
}

static bool parse_op(parser *p, const cJSON *v, const char *path, kvc_trace_op *op) {
    static const char *const alloc_fields[] = {"op",
                                               "request",
                                               "computed_tokens",
                                               "external_computed_tokens",
                                               "new_tokens",
                                               "lookahead_tokens",
                                               "reserved_tokens",
                                               "keys",
                                               "tokens",
                                               "cache_salt",
                                               NULL};
    if (!require_object(p, v, path)) return false;
    const cJSON *name = get(v, "op");
    if (!cJSON_IsString(name)) return perr(p, path, "op", name == NULL ? "missing" : "expected a string");
    op->key_mask = KVC_ALL_KEYS;
    bool valid = false;
    if (parse_other_op(p, v, path, name->valuestring, op, &valid)) return valid;
    if (strcmp(name->valuestring, "allocate") != 0) {
        op->kind = KVC_TRACE_UNKNOWN;
        snprintf(op->refusal, sizeof op->refusal, "unknown op \"%.64s\" (expected allocate, free, query or clear)",
                 name->valuestring);
        return true;
    }
    op->kind = KVC_TRACE_ALLOCATE;
    if (!check_fields(p, v, path, alloc_fields) || !get_request(p, v, path, &op->request) ||
        !get_int(p, v, path, "new_tokens", true, INT64_MIN, 0, &op->new_tokens) ||
        !get_int(p, v, path, "computed_tokens", false, INT64_MIN, 0, &op->computed_tokens) ||
        !get_int(p, v, path, "external_computed_tokens", false, INT64_MIN, 0, &op->external_tokens) ||
        !get_int(p, v, path, "lookahead_tokens", false, INT64_MIN, 0, &op->lookahead_tokens) ||
        !get_int(p, v, path, "reserved_tokens", false, INT64_MIN, 0, &op->reserved_tokens) || !get_salt(p, v, path, op))
        return false;
    if (op_counts_valid(op) && !parse_tokens(p, v, path, op)) return false;
    const cJSON *keys = get(v, "keys");
    if (keys == NULL) return true;
    if (!cJSON_IsArray(keys)) return perr(p, path, "keys", "expected a list of manager keys");
    char item[128];
    int i = 0;
    for (const cJSON *k = keys->child; k != NULL; k = k->next, i++)
        if (!is_name(k)) {
            path_index(item, sizeof item, path, "keys", i);
            return perr(p, item, NULL, "expected a string of at most %d bytes", KVC_NAME_MAX - 1);
        }
    return true;
}

/* Turns an allocate op's "keys" into its key mask, once the manager exists. */
static void resolve_keys(const kvc_manager *m, const cJSON *v, kvc_trace_op *op) {
    const cJSON *keys = get(v, "keys");
    if (op->kind != KVC_TRACE_ALLOCATE || keys == NULL) return;
    op->key_mask = 0;
    for (const cJSON *k = keys->child; k != NULL; k = k->next) {
        int32_t idx = 0;
        if (kvc_manager_key_index(m, k->valuestring, &idx) < 0) {
            snprintf(op->refusal, sizeof op->refusal, "unknown manager key \"%s\"", k->valuestring);
            return;
        }
        op->key_mask |= UINT64_C(1) << idx;
    }
}

static bool parse_ops(parser *p, const cJSON *root, kvc_trace *t) {
    const cJSON *ops = get(root, "ops");
    if (ops == NULL) return perr(p, "", "ops", "missing");
    if (!cJSON_IsArray(ops)) return perr(p, "", "ops", "expected a list");
    size_t n = (size_t)cJSON_GetArraySize(ops);
    t->ops = kvci_calloc(n + 1, sizeof *t->ops);
    if (t->ops == NULL) return perr(p, "", "ops", "out of memory");
    char path[64];
    for (const cJSON *v = ops->child; v != NULL; v = v->next) {
        path_index(path, sizeof path, "", "ops", (int)t->n_ops);
        if (!parse_op(p, v, path, &t->ops[t->n_ops])) return false;
        t->n_ops++;
    }
    return true;
}

/* ---- loading ---------------------------------------------------------------- */
static bool check_limits(parser *p, const kvc_trace_options *opts, int64_t max_model_len, const kvc_block_plan *plan) {
    if (opts == NULL) return true;
    if (opts->max_model_len > 0 && max_model_len > opts->max_model_len)
        return perr(p, "", "max_model_len", "%" PRId64 " exceeds this replay's limit of %" PRId64, max_model_len,
                    opts->max_model_len);
    int64_t total = 0;
    for (int32_t g = 0; g < plan->n_groups && opts->max_blocks > 0; g++) {
        if (!kvci_add64(total, plan->groups[g].block_num, &total) || total > opts->max_blocks)
            return perr(p, "", NULL,
                        "pool %s: the pools hold more than %" PRId64
                        " blocks in all, this replay's limit (--max-blocks raises it)",
                        plan->groups[g].key, opts->max_blocks);
    }
    return true;
}

/* "prefix_caching": {"salt"?, "state_snapshot_interval"?} turns caching on. */
static bool parse_prefix_caching(parser *p, const cJSON *root, kvc_manager_params *mp) {
    static const char *const fields[] = {"salt", "state_snapshot_interval", NULL};
    const cJSON *pc = get(root, "prefix_caching");
    if (pc == NULL) return true;
    int64_t salt = 0;
    if (!require_object(p, pc, "prefix_caching") || !check_fields(p, pc, "prefix_caching", fields) ||
        !get_int(p, pc, "prefix_caching", "salt", false, 0, 0, &salt) ||
        !get_int(p, pc, "prefix_caching", "state_snapshot_interval", false, 0, 0, &mp->state_snapshot_interval))
        return false;
    mp->prefix_caching = true;
    mp->prefix_salt = (uint64_t)salt;
    return true;
}

static bool load_root(parser *p, const cJSON *root, const kvc_trace_options *opts, kvc_trace *t) {
    static const char *const fields[] = {"max_model_len", "layers", "block_num", "plan", "ops", "prefix_caching", NULL};
    plan_source src;
    kvc_block_plan plan;
    kvc_manager_params mp = kvc_manager_default_params();
    if (!require_object(p, root, "") || !check_fields(p, root, "", fields) ||
        !get_int(p, root, "", "max_model_len", true, 1, 0, &mp.max_model_len) || !parse_layers(p, root, &t->info) ||
        !parse_plan_source(p, root, &src) || !parse_prefix_caching(p, root, &mp))
        return false;
    p->max_tokens = mp.max_model_len;
    t->prefix_caching = mp.prefix_caching;
    if (!parse_ops(p, root, t)) return false;
    mp.engine_next_n = src.block_num == NULL ? src.params.next_n : -1;
    if (kvc_validate_cache_info(&t->info, mp.engine_next_n) < 0) return perr(p, "", "layers", "%s", kvc_last_error());
    if (!make_plan(p, &src, &t->info, &plan) || !check_limits(p, opts, mp.max_model_len, &plan)) return false;
    if (kvc_manager_create(&t->info, &plan, &mp, &t->manager) < 0) return perr(p, "", NULL, "%s", kvc_last_error());
    size_t i = 0;
    for (const cJSON *v = get(root, "ops")->child; v != NULL; v = v->next, i++) resolve_keys(t->manager, v, &t->ops[i]);
    return true;
}

int kvc_trace_load(const char *json, size_t len, const kvc_trace_options *opts, kvc_trace **out, char *err,
                   size_t err_cap) {
    parser p = {err, err_cap, 0, 0};
    *out = NULL;
    if (err_cap > 0) err[0] = '\0';
    cJSON *root = NULL;
    kvc_status st = kvci_json_parse(json, len, "", &root);
    if (st != KVC_OK) {
        snprintf(err, err_cap, "%s", kvc_last_error());
        return st == KVC_ENOMEM ? KVC_TRACE_EXIT_FAILED : KVC_TRACE_EXIT_INVALID;
    }
    if (!kvci_json_check_nuls(json, len, root, "cache_salt", err, err_cap)) {
        cJSON_Delete(root);
        return KVC_TRACE_EXIT_INVALID;
    }
    uint64_t failures = kvci_alloc_failures();
    kvc_trace *t = kvci_calloc(1, sizeof *t);
    bool ok = t != NULL && load_root(&p, root, opts, t);
    cJSON_Delete(root);
    if (!ok) {
        kvc_trace_destroy(t);
        if (kvci_alloc_failures() == failures) return KVC_TRACE_EXIT_INVALID;
        if (err_cap > 0 && err[0] == '\0') /* keep the message of the step that ran out (the library's own) */
            snprintf(err, err_cap, "out of memory loading the trace");
        return KVC_TRACE_EXIT_FAILED;
    }
    *out = t;
    return KVC_TRACE_EXIT_OK;
}

void kvc_trace_destroy(kvc_trace *t) {
    if (t == NULL) return;
    kvc_manager_destroy(t->manager);
    free_info(&t->info);
    for (size_t i = 0; t->ops != NULL && i < t->n_ops; i++) kvci_free(t->ops[i].tokens);
    kvci_free(t->ops);
    kvci_free(t);
}
