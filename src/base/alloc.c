/* The one place where the library and the kvcache command take host memory
 * (cJSON included: model/json_read.c routes it here), so that a test can
 * make the N-th allocation fail and a caller can tell out-of-memory from
 * other failures by the failure count. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_HUGEPAGE */
#include <stdatomic.h>
#include <string.h>

#include "base/internal.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

static atomic_uint_fast64_t n_calls;    /* allocations requested so far */
static atomic_uint_fast64_t n_failures; /* allocations that returned NULL */
static atomic_uint_fast64_t fail_at;    /* 0: none; else the call number that fails */

/* Counts one allocation; true when it is the one chosen to fail. */
static bool injected_failure(void) {
    uint_fast64_t call = atomic_fetch_add(&n_calls, 1) + 1;
    return call == atomic_load(&fail_at);
}

static void *counted(void *p) {
    if (p == NULL) atomic_fetch_add(&n_failures, 1);
    return p;
}

void *kvci_malloc(size_t size) { return counted(injected_failure() ? NULL : malloc(size == 0 ? 1 : size)); }

void *kvci_calloc(size_t count, size_t size) {
    return counted(injected_failure() ? NULL : calloc(count == 0 ? 1 : count, size == 0 ? 1 : size));
}

void *kvci_realloc(void *ptr, size_t size) {
    return counted(injected_failure() ? NULL : realloc(ptr, size == 0 ? 1 : size));
}

void kvci_free(void *ptr) { free(ptr); }

char *kvci_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = kvci_malloc(n);
    if (copy != NULL) memcpy(copy, s, n);
    return copy;
}

bool kvci_resize_bytes(void *array_ptr, size_t bytes) {
    void *old = NULL, *resized = NULL;
    memcpy(&old, array_ptr, sizeof old); /* the caller's T *, read as bytes (no aliasing through void **) */
    resized = kvci_realloc(old, bytes);
    if (resized != NULL) memcpy(array_ptr, &resized, sizeof resized);
    return resized != NULL;
}

int32_t *kvci_buckets_new(int64_t n, int64_t *mask) {
    int64_t count = 2;
    while (count < 2 * n) count *= 2;
    int32_t *buckets = kvci_malloc((size_t)count * sizeof *buckets);
    if (buckets == NULL) return NULL;
    for (int64_t b = 0; b < count; b++) buckets[b] = -1;
    *mask = count - 1;
    return buckets;
}

kvc_status kvc_aligned_alloc(size_t alignment, size_t size, void **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_aligned_alloc: out must not be NULL");
    *out = NULL;
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
        return kvci_fail(KVC_EINVAL, "alignment %zu must be a power of two >= %zu", alignment, sizeof(void *));
    if (size > SIZE_MAX - alignment) return kvci_fail(KVC_ENOMEM, "allocation of %zu bytes overflows", size);
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    if (rounded == 0) rounded = alignment;
    void *p = counted(injected_failure() ? NULL : aligned_alloc(alignment, rounded));
    if (p == NULL) return kvci_fail(KVC_ENOMEM, "cannot allocate %zu bytes aligned to %zu", rounded, alignment);
    *out = p;
    return KVC_OK;
}

void kvc_aligned_free(void *ptr) { free(ptr); }

static atomic_bool refuse_advice;       /* test hook: madvise is taken as refused */
static atomic_uint_fast64_t mapped_now; /* bytes of the kvci_pages_alloc mappings not freed yet */

size_t kvci_pages_round(size_t size) {
    if (size > SIZE_MAX - KVCI_HUGE_PAGE) return 0;
    size_t rounded = (size + KVCI_HUGE_PAGE - 1) / KVCI_HUGE_PAGE * KVCI_HUGE_PAGE;
    return rounded == 0 ? KVCI_HUGE_PAGE : rounded;
}

#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
/* An anonymous mapping of rounded + 2 MiB bytes, trimmed to the 2 MiB-aligned
 * rounded bytes inside it, so that the kernel can back it with whole huge
 * pages; then the advice. */
static void *map_pages(size_t rounded, kvci_page_advice advice, bool *advised) {
    size_t span = rounded + KVCI_HUGE_PAGE;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *p = (char *)(((uintptr_t)raw + KVCI_HUGE_PAGE - 1) & ~(uintptr_t)(KVCI_HUGE_PAGE - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    if (raw + span > p + rounded) munmap(p + rounded, (size_t)(raw + span - (p + rounded)));
    *advised = !atomic_load(&refuse_advice) &&
               madvise(p, rounded, advice == KVCI_PAGES_BASE ? MADV_NOHUGEPAGE : MADV_HUGEPAGE) == 0;
    const size_t fast = *advised && advice == KVCI_PAGES_PROBED ? kvci_pages_fault_while_fast(p, rounded) : rounded;
    if (fast < rounded) *advised = madvise(p + fast, rounded - fast, MADV_NOHUGEPAGE) != 0; /* the rest: 4 KiB */
    return p;
}

static void unmap_pages(void *p, size_t size) { munmap(p, kvci_pages_round(size)); }
#else
/* No madvise here: plain aligned memory, zero-filled like a mapping, nothing advised. */
static void *map_pages(size_t rounded, kvci_page_advice advice, bool *advised) {
    (void)advice;
    *advised = false;
    void *p = aligned_alloc(KVCI_HUGE_PAGE, rounded);
    if (p != NULL) memset(p, 0, rounded);
    return p;
}

static void unmap_pages(void *p, size_t size) {
    (void)size;
    free(p);
}
#endif

kvc_status kvci_pages_alloc(size_t size, kvci_page_advice advice, bool *advised, void **out) {
    *out = NULL;
    *advised = false;
    size_t rounded = kvci_pages_round(size);
    if (rounded == 0) return kvci_fail(KVC_ENOMEM, "allocation of %zu bytes overflows", size);
    void *p = counted(injected_failure() ? NULL : map_pages(rounded, advice, advised));
    if (p == NULL) return kvci_fail(KVC_ENOMEM, "cannot map %zu bytes on 2 MiB boundaries", rounded);
    atomic_fetch_add(&mapped_now, rounded);
    *out = p;
    return KVC_OK;
}

void kvci_pages_free(void *ptr, size_t size) {
    if (ptr == NULL) return;
    unmap_pages(ptr, size);
    atomic_fetch_sub(&mapped_now, kvci_pages_round(size));
}

uint64_t kvci_pages_mapped_bytes(void) { return atomic_load(&mapped_now); }

void kvci_pages_refuse_advice(bool refuse) { atomic_store(&refuse_advice, refuse); }

void kvci_alloc_fail_at(uint64_t n) {
    atomic_store(&n_calls, 0);
    atomic_store(&fail_at, n);
}

uint64_t kvci_alloc_calls(void) { return atomic_load(&n_calls); }

uint64_t kvci_alloc_failures(void) { return atomic_load(&n_failures); }
