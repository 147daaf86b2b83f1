/* Typed reading of JSON documents (cJSON trees): the one accessor set of the
 * config.json reader, the planner and the trace reader.
 *
 * A member is "absent" when it is missing or JSON null. Every getter either
 * fills *out and returns KVC_OK, or fails through kvci_fail with a message
 * that names the document, the member's path and the value it found
 * ("config.json: rope_parameters.factor -2 must be in (0, 1e+06]"). An
 * optional member that is absent leaves *out untouched (the caller stores
 * the default first) and sets *present to false; passing present == NULL
 * makes the member required. */
#ifndef KVC_MODEL_JSON_READ_H
#define KVC_MODEL_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/internal.h" /* kvci_utf8_valid */
#include "kvcache/base.h"

/* Returns the status of expr from the calling function unless it is KVC_OK. */
#define KVC_TRY(expr)                                                                                                  \
    do {                                                                                                               \
        kvc_status try_st_ = (expr);                                                                                   \
        if (try_st_ != KVC_OK) return try_st_;                                                                         \
    } while (0)

/* One object of a document and where it sits. Lookups try `obj` first, then
 * `fallback` (the root of a multimodal config behind its text_config). */
typedef struct kvc_json_obj {
    const cJSON *obj;
    const cJSON *fallback; /* NULL: none */
    const char *doc;       /* document name in messages ("config.json"); NULL: none */
    const char *path;      /* path of obj in the document ("rope_parameters"); "" at the top */
} kvc_json_obj;

/* A numeric range [lo, hi]; lo_open makes it (lo, hi]. */
typedef struct kvc_json_range {
    double lo, hi;
    bool lo_open;
} kvc_json_range;

/* Parses exactly one JSON value from text[0..len): invalid UTF-8, invalid
 * JSON and text after the value are KVC_EINVAL ("WHAT: invalid JSON at byte
 * N"; what "" leaves the prefix out), a failed allocation KVC_ENOMEM. Free
 * *out with cJSON_Delete. */
kvc_status kvci_json_parse(const char *text, size_t len, const char *what, cJSON **out);
/* cJSON's process-wide allocation hooks set to this library's kvci_malloc / kvci_free (as when it was
 * loaded): for a program that loaded another build of the library, whose loading pointed them at its
 * own, to take them back before that build is closed (`bench model --against`). */
void kvci_json_route_allocations(void);

/* Python's bare Infinity / -Infinity outside strings (json_inf.c): *out a copy of text[0..len) with each written
 * 1e999 and spaces (same length, every offset kept), NULL when the text has none (free it with kvci_free). */
kvc_status kvci_json_python_infinity(const char *text, size_t len, char **out);

/* Parses text[0..len) as one JSON object (whitespace may follow it; out of
 * memory told apart as in kvci_json_parse) and refuses any member name or
 * string value that is not valid UTF-8 and a member name given twice, naming
 * its path. *out is the tree (release with cJSON_Delete), NULL after a
 * failure. */
kvc_status kvci_json_parse_object(const char *text, size_t len, const char *doc, cJSON **out);

/* The member (NULL when absent). */
const cJSON *kvci_json_find(const kvc_json_obj *o, const char *key);
/* Whether key is not in the document at all; null counts as given (transformers tells a missing key, which takes
 * the config class's default, from an explicit null, which many classes read as "derive it"). */
bool kvci_json_missing(const kvc_json_obj *o, const char *key);

/* An integral number in [lo, hi]. Values outside int64 are refused before any
 * conversion. */
kvc_status kvci_json_int(const kvc_json_obj *o, const char *key, int64_t lo, int64_t hi, int64_t *out, bool *present);
/* The same for a value that is not an object member (an array item, a
 * member walked by the caller); `where` names it in messages. */
kvc_status kvci_json_int_value(const cJSON *v, const char *where, int64_t lo, int64_t hi, int64_t *out);
/* A finite number in the range. */
kvc_status kvci_json_num(const kvc_json_obj *o, const char *key, kvc_json_range r, double *out, bool *present);
kvc_status kvci_json_bool(const kvc_json_obj *o, const char *key, bool *out, bool *present);
/* A string of at most max_bytes bytes; *out points into the tree. */
kvc_status kvci_json_str(const kvc_json_obj *o, const char *key, size_t max_bytes, const char **out, bool *present);
/* An object member as a view for further reads (its path extends o's). The
 * caller's path buffer path[cap] holds the child's path. */
kvc_status kvci_json_child(const kvc_json_obj *o, const char *key, char *path, size_t cap, kvc_json_obj *out,
                           bool *present);
/* An array member with at most max_items items. */
kvc_status kvci_json_array(const kvc_json_obj *o, const char *key, int64_t max_items, const cJSON **out, bool *present);

/* "a string", "a number", ... for messages. */
const char *kvci_json_type_name(const cJSON *item);

#endif /* KVC_MODEL_JSON_READ_H */
