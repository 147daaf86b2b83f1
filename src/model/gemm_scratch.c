/* kvci_gemm_scratch (gemm_scratch.h). */
#include <pthread.h>

#include "base/internal.h"
#include "model/gemm_scratch.h"

static pthread_key_t scratch_keys[KVC_GEMM_SCRATCH_SLOTS];
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static _Thread_local void *scratch[KVC_GEMM_SCRATCH_SLOTS];
static _Thread_local size_t scratch_bytes[KVC_GEMM_SCRATCH_SLOTS];

static void scratch_keys_make(void) {
    for (int s = 0; s < KVC_GEMM_SCRATCH_SLOTS; s++) (void)pthread_key_create(&scratch_keys[s], kvc_aligned_free);
}

kvc_status kvci_gemm_scratch_slot(int slot, size_t bytes, void **out) {
    *out = NULL;
    if (bytes > scratch_bytes[slot]) {
        (void)pthread_once(&scratch_once, scratch_keys_make);
        void *p = NULL;
        const kvc_status st = kvc_aligned_alloc(64, bytes, &p);
        if (st != KVC_OK) return st;
        kvc_aligned_free(scratch[slot]);
        scratch[slot] = p, scratch_bytes[slot] = bytes;
        (void)pthread_setspecific(scratch_keys[slot], p); /* freed when the thread exits */
    }
    *out = scratch[slot];
    return KVC_OK;
}

kvc_status kvci_gemm_scratch(size_t bytes, void **out) { return kvci_gemm_scratch_slot(0, bytes, out); }
