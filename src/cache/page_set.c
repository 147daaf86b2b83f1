/* Buffers of KV cache memory placed by a page policy (page_set.h). */
#include <string.h>

#include "cache/page_set.h"

kvc_status kvci_page_policy_check(const char *who, kvc_storage_pages pages, size_t alignment) {
    if (pages != KVC_STORAGE_PAGES_HUGE && pages != KVC_STORAGE_PAGES_SYSTEM && pages != KVC_STORAGE_PAGES_BASE)
        return kvci_fail(KVC_EINVAL, "%s: pages %d must be KVC_STORAGE_PAGES_HUGE, _SYSTEM or _BASE", who, (int)pages);
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
        return kvci_fail(KVC_EINVAL, "%s: alignment %zu must be a power of two >= %zu", who, alignment, sizeof(void *));
    if (pages != KVC_STORAGE_PAGES_SYSTEM && alignment > KVCI_HUGE_PAGE)
        return kvci_fail(KVC_EINVAL,
                         "%s: alignment %zu exceeds the 2 MiB (%zu) a huge-page mapping guarantees; "
                         "larger alignments need pages KVC_STORAGE_PAGES_SYSTEM",
                         who, alignment, KVCI_HUGE_PAGE);
    return KVC_OK;
}

kvc_status kvci_page_set_init(kvci_page_set *s, const char *who, kvc_storage_pages pages, size_t alignment,
                              int64_t cap) {
    memset(s, 0, sizeof *s);
    kvc_status st = kvci_page_policy_check(who, pages, alignment);
    if (st != KVC_OK) return st;
    if (cap < 1 || (uint64_t)cap > SIZE_MAX / sizeof(void *))
        return kvci_fail(KVC_EINVAL, "%s: room for %lld buffers is out of range", who, (long long)cap);
    s->data = kvci_calloc((size_t)cap, sizeof *s->data);
    s->sizes = kvci_calloc((size_t)cap, sizeof *s->sizes);
    s->mapped = kvci_calloc((size_t)cap, sizeof *s->mapped);
    if (s->data == NULL || s->sizes == NULL || s->mapped == NULL) {
        kvci_page_set_release(s);
        return kvci_fail(KVC_ENOMEM, "%s: cannot allocate the record of %lld buffers", who, (long long)cap);
    }
    s->pages = pages;
    s->alignment = alignment;
    s->cap = cap;
    return KVC_OK;
}

kvc_status kvci_page_set_alloc(kvci_page_set *s, size_t size, bool zero, void **out) {
    *out = NULL;
    if (s->n >= s->cap)
        return kvci_fail(KVC_EINTERNAL, "page set: all %lld buffers already allocated", (long long)s->cap);
    const bool mapped = s->pages != KVC_STORAGE_PAGES_SYSTEM && size >= (size_t)KVC_HUGE_PAGE_MIN_BYTES;
    bool advised = false;
    kvc_status st = mapped
                        ? kvci_pages_alloc(size, s->pages == KVC_STORAGE_PAGES_HUGE ? KVCI_PAGES_HUGE : KVCI_PAGES_BASE,
                                           &advised, out)
                        : kvc_aligned_alloc(s->alignment, size, out);
    if (st != KVC_OK) return st;
    if (zero && !mapped) memset(*out, 0, size);
    const int64_t i = s->n++;
    s->data[i] = *out;
    s->sizes[i] = size;
    s->mapped[i] = mapped;
    if (mapped) s->mapped_bytes += (int64_t)kvci_pages_round(size);
    if (advised) s->advised_bytes += (int64_t)kvci_pages_round(size);
    return KVC_OK;
}

void kvci_page_set_info(const kvci_page_set *s, kvc_storage_page_info *out) {
    *out =
        (kvc_storage_page_info){.pages = s->pages, .mapped_bytes = s->mapped_bytes, .advised_bytes = s->advised_bytes};
    out->huge_bytes = kvci_pages_huge_resident(NULL, (const void *const *)s->data, s->sizes, s->n);
}

void kvci_page_set_release(kvci_page_set *s) {
    for (int64_t i = 0; i < s->n; i++) {
        if (s->mapped[i])
            kvci_pages_free(s->data[i], s->sizes[i]);
        else
            kvc_aligned_free(s->data[i]);
    }
    kvci_free(s->data);
    kvci_free(s->sizes);
    kvci_free(s->mapped);
    memset(s, 0, sizeof *s);
}
