/* Status names, the thread-local error message, logging and assertions. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"

#define KVC_ERROR_CAP 512

static _Thread_local char last_error[KVC_ERROR_CAP];

/* The callback and its user pointer change together: readers and the writer
 * take a spin lock held only for two pointer copies (never while the callback
 * runs, so a callback may log or replace itself). */
static atomic_flag log_lock = ATOMIC_FLAG_INIT;
static kvc_log_fn log_fn;
static void *log_user;

static void log_lock_take(void) {
    while (atomic_flag_test_and_set_explicit(&log_lock, memory_order_acquire)) {}
}

static void log_lock_drop(void) { atomic_flag_clear_explicit(&log_lock, memory_order_release); }

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
    case KVC_ETIMEDOUT: return "KVC_ETIMEDOUT";
    }
    return "KVC_UNKNOWN_STATUS";
}

const char *kvc_last_error(void) { return last_error; }

/* Callers may pass kvc_last_error() itself as an argument (to prefix the
 * message of a failed inner call), so the text is formatted into a scratch
 * buffer first and copied over the thread's message afterwards. */
kvc_status kvci_fail(kvc_status status, const char *fmt, ...) {
    char message[KVC_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(last_error, message, sizeof last_error);
    return status;
}

void kvc_set_log_callback(kvc_log_fn fn, void *user) {
    log_lock_take();
    log_fn = fn;
    log_user = user;
    log_lock_drop();
}

void kvci_log(kvc_log_level level, const char *fmt, ...) {
    log_lock_take();
    const kvc_log_fn fn = log_fn;
    void *const user = log_user;
    log_lock_drop();
    if (fn == NULL) return;
    char message[KVC_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fn(user, level, message);
}

#ifndef NDEBUG
void kvc_assert_fail(const char *cond, const char *file, int line) {
    fprintf(stderr, "kvcache internal invariant broken: %s (%s:%d)\n", cond, file, line);
    abort();
}
#endif
