/* Paths into the source tree from a test: LANEMAP_SOURCE_DIR from the
 * environment (ctest sets it), else the one compiled in.  Header-only. */
#ifndef LANEMAP_TESTS_SUPPORT_SOURCE_H
#define LANEMAP_TESTS_SUPPORT_SOURCE_H

#include <stdio.h>
#include <stdlib.h>

/* root/rel, in one of 4 rotating buffers. */
static const char *source_path(const char *rel) {
  static char buf[4][1024];
  static int next;
  const char *root = getenv("LANEMAP_SOURCE_DIR");
  char *b = buf[next++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", root ? root : LANEMAP_SOURCE_DIR, rel);
  return b;
}

#endif
