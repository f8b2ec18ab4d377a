/* libFuzzer entry for the profile round trip; the claims live in
 * fuzz_checks.c so the corpus replay test checks the same ones. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *broken = lm_fuzz_check_profile(data, size);
  if (broken) {
    fprintf(stderr, "fuzz_profile: %s\n", broken);
    abort();
  }
  return 0;
}
