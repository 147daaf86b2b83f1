/* NUL bytes in the strings of a parsed JSON document (see json_nul.h). */
#include "model/json_nul.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A cursor over the text's string literals. */
typedef struct literals {
    const char *text;
    size_t len, at;
} literals;

/* The \u0000 escapes of the next string literal; the cursor moves past it. */
static int64_t next_literal_nuls(literals *s) {
    while (s->at < s->len && s->text[s->at] != '"') s->at++;
    int64_t nuls = 0;
    for (s->at++; s->at < s->len && s->text[s->at] != '"'; s->at++) {
        if (s->text[s->at] != '\\') continue;
        s->at++; /* the escaped character: a quote or backslash there ends nothing */
        if (s->at + 4 < s->len && s->text[s->at] == 'u' && memcmp(s->text + s->at + 1, "0000", 4) == 0) nuls++;
    }
    s->at++; /* past the closing quote */
    return nuls;
}

/* Length of the decoded string s that holds `nuls` NUL bytes. */
static size_t bytes_with_nuls(const char *s, int64_t nuls) {
    size_t n = strlen(s);
    for (; nuls > 0; nuls--) n += 1 + strlen(s + n + 1);
    return n;
}

static bool refuse(char *err, size_t cap, const char *path, const char *what) {
    snprintf(err, cap, "%s: %s holds a NUL byte (\\u0000)", path[0] != '\0' ? path : "(top level)", what);
    return false;
}

/* path[path_cap] holds item's path. */
static bool walk(literals *s, cJSON *item, const char *bytes_member, char *path, size_t path_cap, char *err,
                 size_t cap) {
    const size_t at = strlen(path);
    const bool object = cJSON_IsObject(item);
    int index = 0;
    for (cJSON *c = item->child; c != NULL; c = c->next, index++) {
        if (object && next_literal_nuls(s) > 0) return refuse(err, cap, path, "a member name");
        if (object)
            snprintf(path + at, path_cap - at, "%s%.64s", at > 0 ? "." : "", c->string);
        else
            snprintf(path + at, path_cap - at, "[%d]", index);
        if (cJSON_IsString(c)) {
            int64_t nuls = next_literal_nuls(s);
            if (nuls > 0 && !(object && bytes_member != NULL && strcmp(c->string, bytes_member) == 0))
                return refuse(err, cap, path, "the string");
            if (nuls > 0) c->valueint = (int)bytes_with_nuls(c->valuestring, nuls);
        } else if (!walk(s, c, bytes_member, path, path_cap, err, cap)) {
            return false;
        }
        path[at] = '\0';
    }
    return true;
}

bool kvci_json_check_nuls(const char *text, size_t len, cJSON *root, const char *bytes_member, char *err, size_t cap) {
    literals s = {.text = text, .len = len, .at = 0};
    char path[512] = "";
    if (cJSON_IsString(root)) return next_literal_nuls(&s) == 0 || refuse(err, cap, "", "the string");
    return walk(&s, root, bytes_member, path, sizeof path, err, cap);
}

size_t kvci_json_string_bytes(const cJSON *v) { return v->valueint > 0 ? (size_t)v->valueint : strlen(v->valuestring); }
