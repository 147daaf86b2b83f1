/* Internal helpers shared by every layer: error reporting, assertions,
 * integer arithmetic that is safe for the edge cases the spec calls out. */
#ifndef KVC_BASE_INTERNAL_H
#define KVC_BASE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kvcache/base.h"

#if defined(__GNUC__)
#define KVC_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define KVC_PRINTF(fmt_idx, arg_idx)
#endif

/* Records the thread's error message and returns `status` unchanged, so a
 * failing path reads `return kvc_fail(KVC_EINVAL, "...", ...);`. */
kvc_status kvc_fail(kvc_status status, const char *fmt, ...) KVC_PRINTF(2, 3);

/* Sends a message to the logging callback, if one is installed. */
void kvc_log(kvc_log_level level, const char *fmt, ...) KVC_PRINTF(2, 3);

/* Broken internal invariants abort in debug and sanitizer builds; in release
 * builds they are compiled out. */
#ifdef NDEBUG
#define KVC_ASSERT(cond) ((void)0)
#else
void kvc_assert_fail(const char *cond, const char *file, int line);
#define KVC_ASSERT(cond) ((cond) ? (void)0 : kvc_assert_fail(#cond, __FILE__, __LINE__))
#endif

/* cdiv(a, b) = ceil(a / b) for a >= 0, b > 0, without overflow (never
 * (a - 1) / b + 1: that is wrong for a == 0 under C's truncating division). */
static inline int64_t kvc_cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
static inline int64_t kvc_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t kvc_max64(int64_t a, int64_t b) { return a > b ? a : b; }

#define KVC_STR_(x) #x
#define KVC_STR(x) KVC_STR_(x)

/* Largest speculative depth accepted anywhere (keeps block arithmetic far
 * from int64 overflow). */
#define KVC_MAX_NEXT_N 1024

/* a * b and a + b into *out; false (and *out unspecified) on int64 overflow. */
static inline bool kvc_mul64(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool kvc_add64(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }

#endif /* KVC_BASE_INTERNAL_H */
