/* UTF-8 well-formedness, for JSON input (RFC 8259 requires UTF-8 and cJSON
 * copies any bytes it is given) and JSON output. */
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

size_t kvci_utf8_char_len(const char *text, size_t n) {
    return n == 0 ? 0 : utf8_sequence((const unsigned char *)text, n);
}

size_t kvci_utf8_valid_prefix(const char *text, size_t n) {
    size_t i = 0, len = 0;
    while (i < n && (len = kvci_utf8_char_len(text + i, n - i)) > 0) i += len;
    return i;
}

bool kvci_utf8_valid(const char *text, size_t n) { return kvci_utf8_valid_prefix(text, n) == n; }
