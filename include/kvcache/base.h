/* kvcache base layer: status codes, error messages, dtypes, tensor views,
 * aligned host allocation and the logging callback.
 *
 * Thread safety: every function here is thread-safe; kvc_last_error() is
 * thread-local (each thread sees the message of its own last failed call). */
#ifndef KVCACHE_BASE_H
#define KVCACHE_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvcache/export.h"
#include "kvcache/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Non-negative codes are successes (KVC_NO_SPACE is the ordinary "not
 * admitted" answer); negative codes are programming/configuration errors and
 * always come with a message in kvc_last_error(). */
typedef enum kvc_status {
    KVC_OK = 0,
    KVC_CLAMPED = 1,      /* success, but the demand was clamped to max_model_len */
    KVC_NO_SPACE = 2,     /* not enough free blocks: nothing was allocated */
    KVC_EINVAL = -1,      /* invalid argument or configuration */
    KVC_ERANGE = -2,      /* index, id or value out of range (e.g. logits that are not finite) */
    KVC_EDOUBLEFREE = -3, /* a block that is already free was freed again */
    KVC_ENOMEM = -4,      /* host memory exhausted, or a budget too small */
    KVC_EINTERNAL = -5,   /* broken internal invariant */
    KVC_ETIMEDOUT = -6    /* a wait passed its deadline (a KV transfer or a peer that did not answer) */
} kvc_status;

/* Name of a status code ("KVC_NO_SPACE"). Never NULL. */
KVC_API const char *kvc_status_str(kvc_status status);

/* Message of the calling thread's last failed call ("" if none). The text
 * names the argument, its value and what was expected. */
KVC_API const char *kvc_last_error(void);

/* Element types of tensors and caches. */
typedef enum kvc_dtype {
    KVC_DTYPE_F32 = 0,
    KVC_DTYPE_F16,
    KVC_DTYPE_BF16,
    KVC_DTYPE_I8,
    KVC_DTYPE_I32,
    KVC_DTYPE_I64,
    KVC_DTYPE_BOOL,
    KVC_DTYPE_F8E4M3, /* fp8 "fn" e4m3: bias 7, max 448, no infinities (docs/kv-dtypes.md) */
    KVC_DTYPE_F8E5M2, /* fp8 e5m2: bias 15, max 57344, IEEE-style inf/NaN */
    KVC_DTYPE_COUNT
} kvc_dtype;

/* Bytes per element; 0 for an unknown dtype or one stored in blocks of
 * several elements with their scale (docs/kv-dtypes.md, "The dtype table"). */
KVC_API size_t kvc_dtype_size(kvc_dtype dtype);
/* Short name ("f32", "bf16", ...); "?" for an unknown dtype. */
KVC_API const char *kvc_dtype_name(kvc_dtype dtype);
/* Parses a short name ("fp8" is accepted for fp8_e4m3, as vLLM's
 * --kv-cache-dtype fp8); KVC_EINVAL (with a message) for an unknown one. */
KVC_API kvc_status kvc_dtype_parse(const char *name, kvc_dtype *out);

#define KVC_MAX_DIMS 8

/* Non-owning view of a dense row-major tensor. */
typedef struct kvc_tensor {
    void *data;
    kvc_dtype dtype;
    int32_t ndim;
    int64_t shape[KVC_MAX_DIMS];
} kvc_tensor;

/* Number of elements of a view (product of its shape; 1 for ndim 0; 0 for
 * NULL or an ndim outside [0, KVC_MAX_DIMS]; -1 for a negative extent or a
 * product beyond int64). */
KVC_API int64_t kvc_tensor_numel(const kvc_tensor *t);

/* Host allocation aligned to `alignment` (a power of two >= sizeof(void*)),
 * size rounded up to a multiple of it. Free with kvc_aligned_free. */
KVC_API kvc_status kvc_aligned_alloc(size_t alignment, size_t size, void **out);
KVC_API void kvc_aligned_free(void *ptr);

typedef enum kvc_log_level { KVC_LOG_DEBUG = 0, KVC_LOG_INFO, KVC_LOG_WARN, KVC_LOG_ERROR } kvc_log_level;
typedef void (*kvc_log_fn)(void *user, kvc_log_level level, const char *message);

/* Installs the process-wide logging callback (NULL: the library stays silent,
 * which is the default). The library never prints by itself. Safe to call
 * while other threads log: each message goes to one installed (fn, user)
 * pair, never to a mix of two; a message already being delivered when the
 * pair changes still goes to the previous one. The callback may run on any
 * thread that calls into the library, and may itself call this function. */
KVC_API void kvc_set_log_callback(kvc_log_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_BASE_H */
