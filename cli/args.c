/* Flag values and repeats of the `kvcache` commands' parsers (args.h). */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool kvc_arg_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (!s) return false;
    const char *digits = s + (*s == '-');
    if (*digits < '0' || *digits > '9') return false;
    char *end = NULL;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool kvc_arg_real(const char *s, double *out) {
    if (!s) return false;
    const char *digits = s + (*s == '-');
    if (!((*digits >= '0' && *digits <= '9') || *digits == '.')) return false;
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) return false;
    char *end = NULL;
    errno = 0;
    const double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v)) return false;
    *out = v;
    return true;
}

bool kvc_arg_list_item(const char **p, int64_t lo, int64_t hi, int64_t *out, bool *more) {
    const char *s = *p;
    if (*s < '0' || *s > '9') return false;
    char *end = NULL;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (errno != 0 || v < lo || v > hi || (*end != '\0' && *end != ',')) return false;
    *out = v;
    *more = *end == ',';
    *p = *more ? end + 1 : end;
    return true;
}

bool kvc_arg_repeated(kvc_arg_seen *seen, const char *cmd, const char *flag) {
    for (int i = 0; i < seen->n; i++)
        if (strcmp(seen->flags[i], flag) == 0) {
            fprintf(stderr, "kvcache %s: %s given twice (give each option once)\n", cmd, flag);
            return true;
        }
    if (seen->n < KVC_ARG_MAX_FLAGS) seen->flags[seen->n++] = flag;
    return false;
}
