/* Content hashes: FNV-1a over bytes (kernels, fingerprints, records). */

#include "lanemap/core.h"

uint64_t lm_fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}
