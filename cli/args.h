/* The flag values and repeats of the `kvcache` commands' parsers: one reading of an integer, and
 * one refusal of a flag given twice (which value was meant?). */
#ifndef KVC_CLI_ARGS_H
#define KVC_CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* s as an integer in [lo, hi]: an optional '-' then decimal digits and nothing else (no space, '+',
 * hex or fraction, which strtoll would take or stop at); false for anything else, NULL included. */
bool kvc_arg_int(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* s as a finite number written in decimal: an optional '-', then digits or '.' first, a fraction and an
 * exponent as strtod reads them, and nothing else (no space, '+', hex "0x10", "inf" or "nan", which strtod
 * would take); false for anything else, NULL included. */
bool kvc_arg_real(const char *s, double *out);

/* One item of a comma-separated list of decimal digits ("1,8,32") at *p, in [lo, hi]: *p moves past it and
 * its comma, *more says whether another item follows; false for anything else (a sign, a space, an empty
 * item: "1,,2", "1," and ",1" alike). */
bool kvc_arg_list_item(const char **p, int64_t lo, int64_t hi, int64_t *out, bool *more);

#define KVC_ARG_MAX_FLAGS 32

/* The value flags a parser has taken so far. */
typedef struct kvc_arg_seen {
    const char *flags[KVC_ARG_MAX_FLAGS];
    int n;
} kvc_arg_seen;

/* Records `flag` (a string that outlives seen: argv's or a literal); true after "kvcache CMD: FLAG
 * given twice" on stderr when it was recorded before. */
bool kvc_arg_repeated(kvc_arg_seen *seen, const char *cmd, const char *flag);

#endif
