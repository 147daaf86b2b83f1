/* NUL bytes in the strings of a parsed JSON document (config.json,
 * safetensors headers, trace files).
 *
 * cJSON decodes the escape \u0000 into a NUL byte and goes on, so all of a
 * string's decoded bytes sit in its valuestring, but strlen() stops at the
 * first NUL: a name "k\u0000x" would read as "k", and the salts "a\u0000x"
 * and "a\u0000y" alike. The text the tree was parsed from says how many NULs
 * each string holds (its \u0000 escapes), and the tree holds its strings in
 * the text's order (an object member's name, then its value). */
#ifndef KVC_MODEL_JSON_NUL_H
#define KVC_MODEL_JSON_NUL_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Walks root beside text[0..len), the text it was parsed from: a member name
 * or string value holding a NUL byte is refused (false, "PATH: ..." in
 * err[cap]) unless it is the value of a member named bytes_member (NULL:
 * none may hold one). Such a
 * value keeps its length in bytes in its valueint (which cJSON leaves 0 for
 * strings) for kvci_json_string_bytes. */
bool kvci_json_check_nuls(const char *text, size_t len, cJSON *root, const char *bytes_member, char *err, size_t cap);

/* Bytes of a string value, NUL bytes included (after kvci_json_check_nuls). */
size_t kvci_json_string_bytes(const cJSON *v);

#endif
