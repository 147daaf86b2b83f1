/* The buffers of one owner of KV cache memory (the cache storage, the
 * engine's self-managed caches, the runner's caches), placed as a
 * kvc_storage_pages policy says (docs/cache.md, "Storage"): a buffer of at
 * least KVC_HUGE_PAGE_MIN_BYTES goes under HUGE or BASE on a 2 MiB-aligned
 * mapping (kvci_pages_alloc) with that advice; a smaller one, or any under
 * SYSTEM, on kvc_aligned_alloc at the owner's alignment. The set remembers
 * which is which, so that it frees each the right way and can say where its
 * pages landed. */
#ifndef KVC_CACHE_PAGE_SET_H
#define KVC_CACHE_PAGE_SET_H

#include "base/internal.h"
#include "kvcache/cache.h"

typedef struct kvci_page_set {
    kvc_storage_pages pages;
    size_t alignment;      /* of the plain allocations; a mapping is 2 MiB-aligned */
    int64_t n, cap;        /* buffers held, room for */
    void **data;           /* [cap], the first n held */
    size_t *sizes;         /* [cap] bytes asked for each */
    bool *mapped;          /* [cap] on a kvci_pages_alloc mapping (else kvc_aligned_alloc) */
    int64_t mapped_bytes;  /* sum of kvci_pages_round(sizes[i]) over the mapped buffers */
    int64_t advised_bytes; /* of those, the ones whose advice the kernel accepted */
} kvci_page_set;

/* KVC_EINVAL, the message starting with `who`, unless pages is one of the
 * three policies and alignment a power of two >= sizeof(void *) that every
 * buffer can honour: at most 2 MiB (a mapping's alignment) under HUGE and
 * BASE. */
kvc_status kvci_page_policy_check(const char *who, kvc_storage_pages pages, size_t alignment);

/* An empty set with room for cap >= 1 buffers (policy checked as above).
 * On failure *s holds nothing and kvci_page_set_release is still safe. */
kvc_status kvci_page_set_init(kvci_page_set *s, const char *who, kvc_storage_pages pages, size_t alignment,
                              int64_t cap);

/* One more buffer of size bytes into *out (NULL after a failure, the set
 * unchanged). zero: the whole buffer reads zero (a mapping does already;
 * the plain allocation is cleared); else only a mapping is. KVC_ENOMEM when
 * the memory is not there, KVC_EINTERNAL when the set is full. */
kvc_status kvci_page_set_alloc(kvci_page_set *s, size_t size, bool zero, void **out);

/* Where the set's pages are: its policy, mapped and advised bytes, and the
 * bytes on huge pages now (reads /proc/self/smaps: a query, not for hot
 * paths). */
void kvci_page_set_info(const kvci_page_set *s, kvc_storage_page_info *out);

/* Frees every buffer and the set's arrays; leaves *s empty. */
void kvci_page_set_release(kvci_page_set *s);

#endif /* KVC_CACHE_PAGE_SET_H */
