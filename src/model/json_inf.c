/* Python's json module writes float("inf") as the bare word Infinity (-Infinity), which is not JSON; transformers
 * saves configs that way (the Mamba2 hybrids' default time_step_limit is [0.0, Infinity]). The config reader takes
 * them as the numbers they stand for: outside strings each such word becomes 1e999 padded with spaces to the same
 * length (strtod gives infinity), so every byte offset of the text stays where it was. The readers of finite
 * numbers still refuse an infinite one by name. */
#include <stdbool.h>
#include <string.h>

#include "base/internal.h"
#include "model/json_read.h"

static bool word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

kvc_status kvci_json_python_infinity(const char *text, size_t len, char **out) {
    static const char word[] = "Infinity", repl[] = "1e999   ";
    const size_t n = sizeof word - 1;
    *out = NULL;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        const char c = (*out != NULL ? *out : text)[i];
        if (in_string) {
            if (c == '\\')
                i++; /* an escape: the next byte is never a closing quote */
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
            continue;
        }
        if (c != 'I' || len - i < n || memcmp(text + i, word, n) != 0 || (i > 0 && word_char(text[i - 1])) ||
            (i + n < len && word_char(text[i + n])))
            continue;
        if (*out == NULL) {
            *out = kvci_malloc(len);
            if (*out == NULL) return kvci_fail(KVC_ENOMEM, "config reader: out of memory copying %zu bytes", len);
            memcpy(*out, text, len);
        }
        memcpy(*out + i, repl, n);
        i += n - 1;
    }
    return KVC_OK;
}
