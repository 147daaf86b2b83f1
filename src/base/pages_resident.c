/* How much of a set of buffers the kernel backs with transparent huge
 * pages: the AnonHugePages lines of /proc/self/smaps (Linux). */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"

/* Whether [lo, hi) overlaps one of the n buffers. */
static bool overlaps(uintptr_t lo, uintptr_t hi, const void *const *ptrs, const size_t *sizes, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uintptr_t a = (uintptr_t)ptrs[i], b = a + sizes[i];
        if (ptrs[i] != NULL && sizes[i] > 0 && a < hi && lo < b) return true;
    }
    return false;
}

int64_t kvci_pages_huge_resident(const char *smaps, const void *const *ptrs, const size_t *sizes, int64_t n) {
    FILE *f = fopen(smaps != NULL ? smaps : "/proc/self/smaps", "r");
    if (f == NULL) return -1;
    char line[512];
    bool in_range = false, seen_header = false;
    int64_t kib = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo = 0, hi = 0;
        long long value = 0;
        char dash = 0;
        /* A mapping's header starts with its range; its fields ("Name:  N kB") follow. */
        if (sscanf(line, "%lx%c%lx", &lo, &dash, &hi) == 3 && dash == '-') {
            seen_header = true;
            in_range = overlaps((uintptr_t)lo, (uintptr_t)hi, ptrs, sizes, n);
        } else if (in_range && strncmp(line, "AnonHugePages:", 14) == 0 && sscanf(line + 14, "%lld", &value) == 1 &&
                   value > 0) {
            kib += value;
        }
    }
    fclose(f);
    return seen_header ? kib * 1024 : -1;
}
