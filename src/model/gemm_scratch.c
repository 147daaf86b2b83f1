/* kvci_gemm_scratch (gemm_scratch.h). */
#include <pthread.h>

#include "base/internal.h"
#include "model/gemm_scratch.h"

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static _Thread_local void *scratch;
static _Thread_local size_t scratch_bytes;

static void scratch_key_make(void) { (void)pthread_key_create(&scratch_key, kvc_aligned_free); }

kvc_status kvci_gemm_scratch(size_t bytes, void **out) {
    *out = NULL;
    if (bytes > scratch_bytes) {
        (void)pthread_once(&scratch_once, scratch_key_make);
        void *p = NULL;
        const kvc_status st = kvc_aligned_alloc(64, bytes, &p);
        if (st != KVC_OK) return st;
        kvc_aligned_free(scratch);
        scratch = p, scratch_bytes = bytes;
        (void)pthread_setspecific(scratch_key, p); /* freed when the thread exits */
    }
    *out = scratch;
    return KVC_OK;
}
