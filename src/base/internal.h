/* Internal helpers shared by every layer: error reporting, assertions,
 * integer arithmetic that is safe for the edge cases the layer docs call out. */
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
 * failing path reads `return kvci_fail(KVC_EINVAL, "...", ...);`. */
kvc_status kvci_fail(kvc_status status, const char *fmt, ...) KVC_PRINTF(2, 3);

/* Sends a message to the logging callback, if one is installed. */
void kvci_log(kvc_log_level level, const char *fmt, ...) KVC_PRINTF(2, 3);

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
static inline int64_t kvci_cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
static inline int64_t kvci_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t kvci_max64(int64_t a, int64_t b) { return a > b ? a : b; }
/* qsort's comparison of two int64_t. */
static inline int kvci_cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

#define KVC_STR_(x) #x
#define KVC_STR(x)  KVC_STR_(x)

/* Largest speculative depth accepted anywhere (keeps block arithmetic far
 * from int64 overflow). */
#define KVC_MAX_NEXT_N 1024

/* The first non-finite value of x [n], or -1 (src/base/dtype.c). */
int64_t kvci_first_nonfinite(const float *x, int64_t n);

/* a * b and a + b into *out; false (and *out unspecified) on int64 overflow. */
static inline bool kvci_mul64(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool kvci_add64(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }

/* Host memory of the library and the command (src/base/alloc.c): every
 * allocation goes through these, cJSON's included, so the failure count is
 * exact and a test can fail any one of them. Free with kvci_free. A size of 0
 * is taken as 1 (the result is never NULL on success). */
void *kvci_malloc(size_t size);
void *kvci_calloc(size_t count, size_t size);
void *kvci_realloc(void *ptr, size_t size);
char *kvci_strdup(const char *s);
void kvci_free(void *ptr);
/* Resizes the array p (an lvalue) to n elements, its contents kept up to
 * the smaller size; false, and p unchanged, when out of memory. */
#define KVCI_RESIZE(p, n) kvci_resize_bytes(&(p), (size_t)(n) * sizeof *(p))
bool kvci_resize_bytes(void *array_ptr /* T ** */, size_t bytes);
/* The buckets of an open-addressing table of up to n members: a power of
 * two >= 2n (at least 2) of -1 entries, *mask = their count - 1; NULL when
 * out of memory. */
int32_t *kvci_buckets_new(int64_t n, int64_t *mask);

/* Memory for large buffers (cache storage, benchmark buffers): size rounded
 * up to whole 2 MiB pages (kvci_pages_round), 2 MiB-aligned, zero-filled,
 * counted by the hook like every allocation. On Linux an anonymous mapping
 * with madvise MADV_HUGEPAGE (KVCI_PAGES_HUGE: transparent huge pages even
 * where the system setting is "madvise") or MADV_NOHUGEPAGE
 * (KVCI_PAGES_BASE: 4 KiB pages even where it is "always"); *advised says
 * whether the kernel accepted the advice (false where THP is compiled out,
 * and on other systems, which get aligned_alloc). The advice only permits
 * huge pages: the kernel backs a page with one on its first write when it
 * has a free 2 MiB frame. Free with kvci_pages_free and the same size. */
#define KVCI_HUGE_PAGE ((size_t)2 << 20)
/* KVCI_PAGES_PROBED (the model's weights, written once at load): huge-page
 * advice, then the mapping written (zeros) in chunks of KVCI_PAGES_PROBE_PAGES
 * pages, each timed, while they clear fast (kvci_pages_fault_while_fast);
 * after the first slow chunk the rest is advised MADV_NOHUGEPAGE (4 KiB
 * pages, faulted when first used) and *advised is false. */
#define KVCI_PAGES_PROBE_PAGES 4
typedef enum kvci_page_advice { KVCI_PAGES_HUGE, KVCI_PAGES_BASE, KVCI_PAGES_PROBED } kvci_page_advice;
kvc_status kvci_pages_alloc(size_t size, kvci_page_advice advice, bool *advised, void **out);
void kvci_pages_free(void *ptr, size_t size);
/* size rounded up to a multiple of 2 MiB (at least one page); 0 on overflow. */
size_t kvci_pages_round(size_t size);
/* Bytes of transparent huge pages backing the mappings that overlap the n
 * buffers ptrs[i][0..sizes[i]): the AnonHugePages fields of an smaps file
 * (NULL: /proc/self/smaps; a mapping the kernel merged with its neighbour
 * counts whole); -1 where the file cannot be read or lists no mapping.
 * Reading /proc/self/smaps walks the process's page tables: a query, not
 * for hot paths. */
int64_t kvci_pages_huge_resident(const char *smaps, const void *const *ptrs, const size_t *sizes, int64_t n);
/* Writes a zero to each huge page of p[0..bytes) (2 MiB-aligned, advised
 * huge, not written yet), KVCI_PAGES_PROBE_PAGES at a time, until a chunk
 * takes more than its bytes / the threshold (default 1 GB/s) of the thread's
 * CPU time; the bytes written up to the end of that chunk, else bytes
 * (src/base/pages_probe.c). */
size_t kvci_pages_fault_while_fast(void *p, size_t bytes);
/* Test hook: the probe's threshold in GB/s (0: every probe fast; INFINITY:
 * none; negative: the default). */
void kvci_pages_probe_threshold(double gbs);
/* Test hook: while on, kvci_pages_alloc skips madvise and reports the advice
 * refused, as a kernel without transparent huge pages does. */
void kvci_pages_refuse_advice(bool refuse);
/* Bytes of kvci_pages_alloc mappings not freed yet (whole 2 MiB pages), so
 * a test can see a mapping leak, which the leak sanitizer does not track. */
uint64_t kvci_pages_mapped_bytes(void);

/* Test hook: resets the call count and makes call number n from now fail
 * (once); 0 turns injection off. */
void kvci_alloc_fail_at(uint64_t n);
/* Allocation calls since the last kvci_alloc_fail_at, and failures (injected
 * or real) since the process started: a caller that sees the failure count
 * move across a call that failed knows the cause was memory. */
uint64_t kvci_alloc_calls(void);
uint64_t kvci_alloc_failures(void);

/* ---- input (read_file.c, utf8.c) ---------------------------------------- */

/* Largest input file any reader takes (config.json, traces, plan input):
 * 64 MiB, a hundred times the largest real config.json and room for about a
 * million trace ops. */
#define KVC_MAX_INPUT_BYTES ((size_t)64 << 20)

/* Opens path read-only if it is a regular file (never blocks on a FIFO;
 * symlink loops fail in open with ELOOP); *fd_out and its *size_out. */
kvc_status kvci_open_regular(const char *path, int *fd_out, size_t *size_out);
/* The whole of a regular file ("-": standard input, any kind) as a
 * NUL-terminated kvci_malloc'ed buffer of *len bytes; refuses more than
 * max_bytes. *out is NULL after a failure. */
kvc_status kvci_read_file(const char *path, size_t max_bytes, char **out, size_t *len);

/* Whether text[0..n) is well-formed UTF-8 (no overlong forms, no surrogates,
 * at most U+10FFFF). */
bool kvci_utf8_valid(const char *text, size_t n);
/* Length of the longest well-formed UTF-8 prefix of text[0..n). */
size_t kvci_utf8_valid_prefix(const char *text, size_t n);
/* Bytes of the well-formed UTF-8 character at text[0..n), 0 if there is none. */
size_t kvci_utf8_char_len(const char *text, size_t n);

#endif /* KVC_BASE_INTERNAL_H */
