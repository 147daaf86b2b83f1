/* kvci_isa_cap (isa.h): KVC_SIMD, read once. */
#include "base/isa.h"

#include <stdlib.h>
#include <string.h>

static int _Atomic cap = -1; /* -1: not read yet (every thread reads the same value) */

kvc_isa kvci_isa_cap(void) {
    int c = cap;
    if (c < 0) {
        static const char *const names[] = {"portable", "avx2", "avx512", "amx"};
        const char *e = getenv("KVC_SIMD");
        c = KVC_ISA_AMX;
        for (int i = 0; e && i < 4; i++)
            if (strcmp(e, names[i]) == 0) c = i;
        cap = c;
    }
    return (kvc_isa)c;
}
