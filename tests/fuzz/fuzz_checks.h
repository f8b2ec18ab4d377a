/* The claims every fuzzer checks on one input, shared by the libFuzzer
 * entry points (tests/fuzz/fuzz_*.c) and the corpus replay test
 * (tests/test_fuzz_regress.c), so a corpus file means the same thing in
 * both.  A check returns NULL when every claim holds for the input, or a
 * static message naming the claim that broke.  An input the library
 * rejects with a diagnostic is not a failure: rejecting is its job. */
#ifndef LANEMAP_FUZZ_CHECKS_H
#define LANEMAP_FUZZ_CHECKS_H

#include <stddef.h>
#include <stdint.h>

/* Kernel source: a parsed kernel prints to text that re-parses to an equal
 * IR, and dumps without failing. */
const char *lm_fuzz_check_kernel(const uint8_t *data, size_t size);
/* Variant string: a parsed variant formats to a string that parses to a
 * variant with the same format; legality checks against the bundled
 * kernels return a status without crashing. */
const char *lm_fuzz_check_variant(const uint8_t *data, size_t size);
/* Profile JSON: a loaded profile saves to text that loads to an equal
 * profile. */
const char *lm_fuzz_check_profile(const uint8_t *data, size_t size);

#endif
