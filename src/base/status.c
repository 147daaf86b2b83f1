/* Status names, the thread-local error message, logging and assertions. */
#include <stdarg.h>
#include <stdio.h>

#include "base/internal.h"

#define KVC_ERROR_CAP 512

static _Thread_local char last_error[KVC_ERROR_CAP];

static kvc_log_fn log_fn;
static void *log_user;

const char *kvc_status_str(kvc_status status) {
    switch (status) {
    case KVC_OK: return "KVC_OK";
    case KVC_CLAMPED: return "KVC_CLAMPED";
    case KVC_NO_SPACE: return "KVC_NO_SPACE";
    case KVC_EINVAL: return "KVC_EINVAL";
    case KVC_ERANGE: return "KVC_ERANGE";
    case KVC_EDOUBLEFREE: return "KVC_EDOUBLEFREE";
    case KVC_ENOMEM: return "KVC_ENOMEM";
    case KVC_EINTERNAL: return "KVC_EINTERNAL";
    }
    return "KVC_UNKNOWN_STATUS";
}

const char *kvc_last_error(void) { return last_error; }

kvc_status kvc_fail(kvc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void kvc_set_log_callback(kvc_log_fn fn, void *user) {
    log_fn = fn;
    log_user = user;
}

void kvc_log(kvc_log_level level, const char *fmt, ...) {
    if (log_fn == NULL) return;
    char message[KVC_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    log_fn(log_user, level, message);
}

#ifndef NDEBUG
void kvc_assert_fail(const char *cond, const char *file, int line) {
    fprintf(stderr, "kvcache internal invariant broken: %s (%s:%d)\n", cond, file, line);
    abort();
}
#endif
