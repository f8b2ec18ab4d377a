/* A seeded generator for the tests' synthetic data: splitmix64 (Steele,
 * Lea and Flood, 2014), the same numbers on every machine and libc. */
#ifndef LANEMAP_TESTS_SUPPORT_RNG_H
#define LANEMAP_TESTS_SUPPORT_RNG_H

#include <math.h>
#include <stdint.h>

#define RNG_HELPER static __attribute__((unused))

RNG_HELPER uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

RNG_HELPER double rng_unif(uint64_t *s) { /* in (0, 1) */
  return ((double)(rng_next(s) >> 11) + 0.5) * 0x1p-53;
}

RNG_HELPER int rng_int(uint64_t *s, int lo, int hi) { /* in [lo, hi] */
  return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

RNG_HELPER double rng_normal(uint64_t *s) { /* Box-Muller */
  double u = rng_unif(s), v = rng_unif(s);
  return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

#endif
