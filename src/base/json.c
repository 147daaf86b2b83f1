/* Strict JSON text for every reader of the library and the command: UTF-8
 * checked first (RFC 8259 requires it; cJSON copies any bytes it is given),
 * one value with nothing after it, and out-of-memory reported as such. */
#include <cjson/cJSON.h>
#include <string.h>

#include "base/internal.h"

/* Length of the well-formed UTF-8 sequence at s[0..n) (n > 0), or 0: no
 * overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

bool kvc_utf8_valid(const char *text, size_t len, size_t *bad_at) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_sequence(s + i, len - i);
        if (n == 0) {
            if (bad_at != NULL) *bad_at = i;
            return false;
        }
        i += n;
    }
    return true;
}

size_t kvc_utf8_char_len(const char *text, size_t n) {
    return n == 0 ? 0 : utf8_sequence((const unsigned char *)text, n);
}

kvc_status kvc_json_parse(const char *text, size_t len, const char *what, struct cJSON **out) {
    *out = NULL;
    const char *sep = what[0] != '\0' ? ": " : "";
    size_t at = 0;
    if (!kvc_utf8_valid(text, len, &at)) return kvc_fail(KVC_EINVAL, "%s%sinvalid UTF-8 at byte %zu", what, sep, at);
    uint64_t failures = kvc_alloc_failures();
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (root == NULL) {
        if (kvc_alloc_failures() != failures) return kvc_fail(KVC_ENOMEM, "%s%sout of memory parsing JSON", what, sep);
        at = end != NULL && end >= text ? (size_t)(end - text) : 0;
        return kvc_fail(KVC_EINVAL, "%s%sinvalid JSON at byte %zu", what, sep, at);
    }
    for (at = (size_t)(end - text); at < len; at++)
        if (text[at] == '\0' || strchr(" \t\r\n", text[at]) == NULL) {
            cJSON_Delete(root);
            return kvc_fail(KVC_EINVAL, "%s%sinvalid JSON at byte %zu: text after the JSON value", what, sep,
                            at);
        }
    *out = root;
    return KVC_OK;
}
