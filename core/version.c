/* The library's version at run time.
 *
 * lm_version() (core/error.c) gives the string; this file gives the number
 * and the compatibility rule a program applies when the library it was
 * compiled against (the LANEMAP_VERSION_* macros of its headers) may differ
 * from the one it loads: the same major version keeps the API and the ABI,
 * and before 1.0 every minor release may break both, so 0.x needs the same
 * minor.  A library at least as new as the headers is required, since a
 * newer header may declare calls an older library lacks. */
#include "lanemap/core.h"

unsigned lm_version_number(void) { return LANEMAP_VERSION_NUMBER; }

int lm_version_compatible(unsigned compiled) {
  unsigned have = LANEMAP_VERSION_NUMBER;
  unsigned cmaj = compiled / 10000, cmin = compiled / 100 % 100;
  unsigned hmaj = have / 10000, hmin = have / 100 % 100;
  if (cmaj != hmaj)
    return 0;
  if (hmaj == 0 && cmin != hmin)
    return 0;
  return have >= compiled;
}
