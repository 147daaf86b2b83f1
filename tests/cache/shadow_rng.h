/* Helpers of the model-based random tests of the cache layer: a seeded
 * xorshift generator (one stream per test file) and integer helpers. */
#ifndef KVC_TESTS_CACHE_SHADOW_RNG_H
#define KVC_TESTS_CACHE_SHADOW_RNG_H

#include <stdint.h>

static uint64_t rng_state;

static inline uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
/* Uniform in [lo, hi]. */
static inline int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static inline int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

#endif
