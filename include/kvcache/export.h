/* KVC_API marks the functions of the public API. The library is compiled with
 * -fvisibility=hidden, so a shared libkvcache exports exactly the functions
 * declared with KVC_API in include/kvcache/ and keeps its internal helpers
 * private. Nothing to define when using the library. */
#ifndef KVCACHE_EXPORT_H
#define KVCACHE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define KVC_API __attribute__((visibility("default")))
#else
#define KVC_API
#endif

#endif /* KVCACHE_EXPORT_H */
