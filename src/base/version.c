/* The library's version, as compiled from include/kvcache/version.h. */
#include "kvcache/version.h"

#include "base/internal.h"

int32_t kvc_version(void) { return KVC_VERSION; }

const char *kvc_version_string(void) {
    return KVC_STR(KVC_VERSION_MAJOR) "." KVC_STR(KVC_VERSION_MINOR) "." KVC_STR(KVC_VERSION_PATCH);
}
