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

/* `bench WHAT --against path`: path checked (kvc_shared_lib_check), then
 * opened with RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND (the library resolves
 * its own symbols first, so its functions call its own internals and not
 * this build's of the same names), and cJSON's process-wide allocation hooks,
 * which its loading pointed at its own allocator, taken back; its handle, or
 * NULL after a message on stderr naming the benchmark, the path and why. */
void *kvc_shared_lib_open(const char *path, const char *bench);

#endif
