/* The one place where the library and the kvcache command take host memory
 * (cJSON included: model/json_read.c routes it here), so that a test can
 * make the N-th allocation fail and a caller can tell out-of-memory from
 * other failures by the failure count. */
#include <stdatomic.h>
#include <string.h>

#include "base/internal.h"

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

void kvci_alloc_fail_at(uint64_t n) {
    atomic_store(&n_calls, 0);
    atomic_store(&fail_at, n);
}

uint64_t kvci_alloc_calls(void) { return atomic_load(&n_calls); }

uint64_t kvci_alloc_failures(void) { return atomic_load(&n_failures); }
