/* Where the CLI finds its bundled data (kernels/, heldout/): an installed
 * CLI, PREFIX/bin/lanemap, takes PREFIX/share/lanemap (cmake --install puts
 * the data there); a CLI in its build tree takes the source tree it was
 * built from. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"

static int exists(const char *path) { return access(path, R_OK) == 0; }

const char *cli_data_path(const char *rel) {
  static char buf[4][PATH_MAX + 64];
  static int next;
  char *out = buf[next++ % 4];
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
  if (slash) {
    *slash = '\0'; /* PREFIX/bin */
    snprintf(out, sizeof buf[0], "%.*s/../share/lanemap/%s", PATH_MAX, exe,
             rel);
    if (exists(out))
      return out;
  }
  /* else the source tree, also when it is gone: the error then names it */
  snprintf(out, sizeof buf[0], "%s/%s", LANEMAP_SOURCE_DIR, rel);
  return out;
}
