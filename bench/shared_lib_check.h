/* A shared library checked before dlopen maps it (`bench attention
 * --against LIB`): the loader maps its segments straight from the file, so
 * a truncated library dies with SIGBUS on the first page past the end of
 * the file instead of failing with a message. */
#ifndef KVC_BENCH_SHARED_LIB_CHECK_H
#define KVC_BENCH_SHARED_LIB_CHECK_H

#include "kvcache/base.h"

/* KVC_OK when path is a readable regular file holding a 64-bit ELF shared
 * library of this machine whose program headers, section headers and every
 * segment with file bytes lie within the file; KVC_EINVAL otherwise, with
 * kvc_last_error() naming the path and what is wrong. */
kvc_status kvc_shared_lib_check(const char *path);

#endif
