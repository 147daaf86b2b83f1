/* Version of the kvcache headers, and of the library actually linked.
 *
 * The version is MAJOR.MINOR.PATCH; the shared library's SOVERSION is MAJOR.
 * Compare KVC_VERSION (the headers you compiled against) with kvc_version()
 * (the library loaded at run time) to detect a mismatched installation.
 *
 * Thread safety: pure functions, thread-safe. */
#ifndef KVCACHE_VERSION_H
#define KVCACHE_VERSION_H

#include <stdint.h>

#include "kvcache/export.h"

#define KVC_VERSION_MAJOR 0
#define KVC_VERSION_MINOR 1
#define KVC_VERSION_PATCH 0
/* One number that orders versions: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define KVC_VERSION (KVC_VERSION_MAJOR * 10000 + KVC_VERSION_MINOR * 100 + KVC_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The linked library's KVC_VERSION number (MAJOR * 10000 + MINOR * 100 + PATCH). */
KVC_API int32_t kvc_version(void);
/* The linked library's version as "MAJOR.MINOR.PATCH". Never NULL. */
KVC_API const char *kvc_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* KVCACHE_VERSION_H */
