/* Typed reading of JSON members with messages naming the member and value
 * (see json_read.h). */
#include "model/json_read.h"
#include "model/json_nul.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

const char *kvci_json_type_name(const cJSON *item) {
    if (item == NULL || cJSON_IsNull(item)) return "null";
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsArray(item)) return "an array";
    if (cJSON_IsObject(item)) return "an object";
    return "an invalid value";
}

/* ---- document ---------------------------------------------------------------- */

/* cJSON allocates through the library's hook (kvci_malloc) from the moment the
 * library is loaded, so its allocations are counted and can be failed like
 * the rest (cJSON_InitHooks is process-wide; kvci_free is free, so cJSON_free
 * and memory cJSON handed out before stay correct). */
void kvci_json_route_allocations(void) {
    cJSON_Hooks hooks = {.malloc_fn = kvci_malloc, .free_fn = kvci_free};
    cJSON_InitHooks(&hooks);
}

__attribute__((constructor)) static void route_cjson_allocations(void) { kvci_json_route_allocations(); }

/* One JSON value from text[0..len) with nothing but whitespace after it;
 * a failed allocation is KVC_ENOMEM, not a syntax error. */
static kvc_status parse_value(const char *text, size_t len, const char *what, cJSON **out) {
    *out = NULL;
    const char *sep = what[0] != '\0' ? ": " : "";
    size_t at = 0;
    uint64_t failures = kvci_alloc_failures();
    const char *end = NULL;
    const char *nul = memchr(text, '\0', len); /* cJSON takes a raw NUL as whitespace or inside a string */
    if (nul != NULL)
        return kvci_fail(KVC_EINVAL, "%s%sinvalid JSON at byte %zu: a NUL byte", what, sep, (size_t)(nul - text));
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (root == NULL) {
        if (kvci_alloc_failures() != failures)
            return kvci_fail(KVC_ENOMEM, "%s%sout of memory parsing JSON", what, sep);
        at = end != NULL && end >= text ? (size_t)(end - text) : 0;
        return kvci_fail(KVC_EINVAL, "%s%sinvalid JSON at byte %zu", what, sep, at);
    }
    for (at = (size_t)(end - text); at < len; at++)
        if (text[at] == '\0' || strchr(" \t\r\n", text[at]) == NULL) {
            cJSON_Delete(root);
            return kvci_fail(KVC_EINVAL, "%s%sinvalid JSON at byte %zu: text after the JSON value", what, sep, at);
        }
    *out = root;
    return KVC_OK;
}

kvc_status kvci_json_parse(const char *text, size_t len, const char *what, cJSON **out) {
    *out = NULL;
    size_t at = kvci_utf8_valid_prefix(text, len);
    if (at != len) return kvci_fail(KVC_EINVAL, "%s%sinvalid UTF-8 at byte %zu", what, what[0] ? ": " : "", at);
    return parse_value(text, len, what, out);
}

/* ---- document ---------------------------------------------------------------- */

static const char *prefix_sep(const char *doc) { return doc != NULL ? ": " : ""; }
static const char *doc_name(const char *doc) { return doc != NULL ? doc : ""; }

#define MAX_MEMBERS (1 << 20) /* members of one object (an NVFP4 checkpoint lists every quantized layer: 22422) */

static int name_order(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Refuses an object with a member name given twice (JSON leaves the meaning
 * open: transformers keeps the last, cJSON finds the first): the names sorted, neighbours compared. */
static kvc_status check_unique(const cJSON *obj, const char *doc, const char *path) {
    int n = 0;
    for (const cJSON *c = obj->child; c != NULL; c = c->next)
        if (++n > MAX_MEMBERS)
            return kvci_fail(KVC_EINVAL, "%s%s%s: more than %d members", doc_name(doc), prefix_sep(doc),
                             path[0] ? path : "(top level)", MAX_MEMBERS);
    if (n < 2) return KVC_OK;
    const char **names = kvci_malloc((size_t)n * sizeof *names);
    if (names == NULL)
        return kvci_fail(KVC_ENOMEM, "%s%sout of host memory for %d member names", doc_name(doc), prefix_sep(doc), n);
    n = 0;
    for (const cJSON *c = obj->child; c != NULL; c = c->next) names[n++] = c->string;
    qsort(names, (size_t)n, sizeof *names, name_order);
    const char *twice = NULL;
    for (int i = 1; i < n && twice == NULL; i++)
        if (strcmp(names[i - 1], names[i]) == 0) twice = names[i];
    kvc_status st = KVC_OK;
    if (twice != NULL)
        st = kvci_fail(KVC_EINVAL, "%s%s%s%s%.64s: the key is given twice", doc_name(doc), prefix_sep(doc), path,
                       path[0] ? "." : "", twice);
    kvci_free(names);
    return st;
}

/* Checks every member name and string below item (UTF-8, names given once);
 * path[cap] holds item's path. */
static kvc_status check_strings(const cJSON *item, const char *doc, char *path, size_t cap) {
    const size_t at = strlen(path);
    if (cJSON_IsString(item) && !kvci_utf8_valid(item->valuestring, strlen(item->valuestring)))
        return kvci_fail(KVC_EINVAL, "%s%s%s: the string is not valid UTF-8", doc_name(doc), prefix_sep(doc),
                         at > 0 ? path : "(top level)");
    if (cJSON_IsObject(item)) {
        kvc_status st = check_unique(item, doc, path);
        if (st != KVC_OK) return st;
    }
    int index = 0;
    for (const cJSON *c = item->child; c != NULL; c = c->next, index++) {
        if (cJSON_IsObject(item)) {
            if (!kvci_utf8_valid(c->string, strlen(c->string)))
                return kvci_fail(KVC_EINVAL, "%s%s%s: a member name is not valid UTF-8", doc_name(doc), prefix_sep(doc),
                                 at > 0 ? path : "(top level)");
            snprintf(path + at, cap - at, "%s%s", at > 0 ? "." : "", c->string);
        } else {
            snprintf(path + at, cap - at, "[%d]", index);
        }
        kvc_status st = check_strings(c, doc, path, cap);
        path[at] = '\0';
        if (st != KVC_OK) return st;
    }
    return KVC_OK;
}

kvc_status kvci_json_parse_object(const char *text, size_t len, const char *doc, cJSON **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "json parse: out must not be NULL");
    *out = NULL;
    if (text == NULL) return kvci_fail(KVC_EINVAL, "json parse: text must not be NULL");
    cJSON *root = NULL;
    kvc_status st = parse_value(text, len, doc_name(doc), &root);
    if (st != KVC_OK) return st;
    if (st == KVC_OK && !cJSON_IsObject(root))
        st = kvci_fail(KVC_EINVAL, "%s%sthe top level must be an object, got %s", doc_name(doc), prefix_sep(doc),
                       kvci_json_type_name(root));
    char path[512] = "", nul[600];
    if (st == KVC_OK) st = check_strings(root, doc, path, sizeof path);
    if (st == KVC_OK && !kvci_json_check_nuls(text, len, root, NULL, nul, sizeof nul))
        st = kvci_fail(KVC_EINVAL, "%s%s%s", doc_name(doc), prefix_sep(doc), nul);
    if (st != KVC_OK) {
        cJSON_Delete(root);
        return st;
    }
    *out = root;
    return KVC_OK;
}

/* ---- members ------------------------------------------------------------------- */

static const cJSON *member(const cJSON *obj, const char *key) {
    if (obj == NULL) return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return (v != NULL && !cJSON_IsNull(v)) ? v : NULL;
}

const cJSON *kvci_json_find(const kvc_json_obj *o, const char *key) {
    const cJSON *v = member(o->obj, key);
    return v != NULL ? v : member(o->fallback, key);
}

bool kvci_json_missing(const kvc_json_obj *o, const char *key) {
    return (o->obj == NULL || cJSON_GetObjectItemCaseSensitive(o->obj, key) == NULL) &&
           (o->fallback == NULL || cJSON_GetObjectItemCaseSensitive(o->fallback, key) == NULL);
}

/* "doc: path.key" into buf. */
static const char *where(const kvc_json_obj *o, const char *key, char *buf, size_t cap) {
    const bool nested = o->path != NULL && o->path[0] != '\0';
    snprintf(buf, cap, "%s%s%s%s%s", doc_name(o->doc), prefix_sep(o->doc), nested ? o->path : "", nested ? "." : "",
             key);
    return buf;
}

/* Absent member: fine when optional, an error when required. */
static kvc_status absent(const kvc_json_obj *o, const char *key, bool *present) {
    if (present != NULL) {
        *present = false;
        return KVC_OK;
    }
    char w[320];
    return kvci_fail(KVC_EINVAL, "%s is missing", where(o, key, w, sizeof w));
}

/* A number as written in messages: integral values in full, others in %.15g. */
static const char *number_text(double d, char *buf, size_t cap) {
    if (fabs(d) < 1e18 && d == floor(d))
        snprintf(buf, cap, "%.0f", d);
    else
        snprintf(buf, cap, "%.15g", d);
    return buf;
}

/* "an integer in [lo, hi]", "an integer >= lo" or "an integer". */
static const char *int_range_text(int64_t lo, int64_t hi, char *buf, size_t cap) {
    if (lo == INT64_MIN && hi == INT64_MAX)
        snprintf(buf, cap, "an integer");
    else if (hi == INT64_MAX)
        snprintf(buf, cap, "an integer >= %lld", (long long)lo);
    else
        snprintf(buf, cap, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
    return buf;
}

kvc_status kvci_json_int_value(const cJSON *v, const char *where, int64_t lo, int64_t hi, int64_t *out) {
    char range[80], num[40];
    if (!cJSON_IsNumber(v))
        return kvci_fail(KVC_EINVAL, "%s must be %s, got %s", where, int_range_text(lo, hi, range, sizeof range),
                         kvci_json_type_name(v));
    const double d = v->valuedouble;
    /* -2^63 and 2^63 are exact doubles: the int64 range is [-2^63, 2^63). */
    if (!(d >= -0x1p63 && d < 0x1p63) || d != floor(d) || (int64_t)d < lo || (int64_t)d > hi)
        return kvci_fail(KVC_EINVAL, "%s %s must be %s", where, number_text(d, num, sizeof num),
                         int_range_text(lo, hi, range, sizeof range));
    *out = (int64_t)d;
    return KVC_OK;
}

kvc_status kvci_json_int(const kvc_json_obj *o, const char *key, int64_t lo, int64_t hi, int64_t *out, bool *present) {
    const cJSON *v = kvci_json_find(o, key);
    if (v == NULL) return absent(o, key, present);
    char w[320];
    KVC_TRY(kvci_json_int_value(v, where(o, key, w, sizeof w), lo, hi, out));
    if (present != NULL) *present = true;
    return KVC_OK;
}

kvc_status kvci_json_num(const kvc_json_obj *o, const char *key, kvc_json_range r, double *out, bool *present) {
    const cJSON *v = kvci_json_find(o, key);
    if (v == NULL) return absent(o, key, present);
    char w[320];
    const char open = r.lo_open ? '(' : '[';
    if (!cJSON_IsNumber(v))
        return kvci_fail(KVC_EINVAL, "%s must be a number in %c%g, %g], got %s", where(o, key, w, sizeof w), open, r.lo,
                         r.hi, kvci_json_type_name(v));
    const double d = v->valuedouble;
    char num[40];
    if (!isfinite(d) || d > r.hi || (r.lo_open ? !(d > r.lo) : !(d >= r.lo)))
        return kvci_fail(KVC_EINVAL, "%s %s must be a number in %c%g, %g]", where(o, key, w, sizeof w),
                         number_text(d, num, sizeof num), open, r.lo, r.hi);
    *out = d;
    if (present != NULL) *present = true;
    return KVC_OK;
}

kvc_status kvci_json_bool(const kvc_json_obj *o, const char *key, bool *out, bool *present) {
    const cJSON *v = kvci_json_find(o, key);
    if (v == NULL) return absent(o, key, present);
    char w[320];
    if (!cJSON_IsBool(v))
        return kvci_fail(KVC_EINVAL, "%s must be true or false, got %s", where(o, key, w, sizeof w),
                         kvci_json_type_name(v));
    *out = cJSON_IsTrue(v);
    if (present != NULL) *present = true;
    return KVC_OK;
}

kvc_status kvci_json_str(const kvc_json_obj *o, const char *key, size_t max_bytes, const char **out, bool *present) {
    const cJSON *v = kvci_json_find(o, key);
    if (v == NULL) return absent(o, key, present);
    char w[320];
    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return kvci_fail(KVC_EINVAL, "%s must be a string, got %s", where(o, key, w, sizeof w), kvci_json_type_name(v));
    const size_t n = strlen(v->valuestring);
    if (!kvci_utf8_valid(v->valuestring, n))
        return kvci_fail(KVC_EINVAL, "%s is not valid UTF-8", where(o, key, w, sizeof w));
    if (n > max_bytes)
        return kvci_fail(KVC_EINVAL, "%s is %zu bytes long, at most %zu are accepted", where(o, key, w, sizeof w), n,
                         max_bytes);
    *out = v->valuestring;
    if (present != NULL) *present = true;
    return KVC_OK;
}

kvc_status kvci_json_child(const kvc_json_obj *o, const char *key, char *path, size_t cap, kvc_json_obj *out,
                           bool *present) {
    const cJSON *v = kvci_json_find(o, key);
    if (v == NULL) return absent(o, key, present);
    char w[320];
    if (!cJSON_IsObject(v))
        return kvci_fail(KVC_EINVAL, "%s must be an object, got %s", where(o, key, w, sizeof w),
                         kvci_json_type_name(v));
    const bool nested = o->path != NULL && o->path[0] != '\0';
    snprintf(path, cap, "%s%s%s", nested ? o->path : "", nested ? "." : "", key);
    *out = (kvc_json_obj){.obj = v, .fallback = NULL, .doc = o->doc, .path = path};
    if (present != NULL) *present = true;
    return KVC_OK;
}

kvc_status kvci_json_array(const kvc_json_obj *o, const char *key, int64_t max_items, const cJSON **out,
                           bool *present) {
    const cJSON *v = kvci_json_find(o, key);
    if (v == NULL) return absent(o, key, present);
    char w[320];
    if (!cJSON_IsArray(v))
        return kvci_fail(KVC_EINVAL, "%s must be an array, got %s", where(o, key, w, sizeof w), kvci_json_type_name(v));
    const int n = cJSON_GetArraySize(v);
    if (n > max_items)
        return kvci_fail(KVC_EINVAL, "%s has %d items, at most %lld are accepted", where(o, key, w, sizeof w), n,
                         (long long)max_items);
    *out = v;
    if (present != NULL) *present = true;
    return KVC_OK;
}
