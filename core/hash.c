/* Content hashes: FNV-1a over bytes (kernels, fingerprints, records). */

#include "lanemap/core.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t lm_fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

lm_status lm_file_hash(const char *path, char buf[17], lm_error *err) {
  char *text = NULL;
  size_t n = 0;
  lm_status s = lm_file_read(path, &text, &n, err);
  if (s != LM_OK)
    return s;
  snprintf(buf, 17, "%016" PRIx64, lm_fnv1a(LM_FNV1A_INIT, text, n));
  free(text);
  return LM_OK;
}
