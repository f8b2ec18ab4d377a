/* Where a machine's profiles are kept: one file per (machine fingerprint,
 * ISA target, mode, cost model), in $LANEMAP_CACHE_DIR,
 * $XDG_CACHE_HOME/lanemap or ~/.cache/lanemap. */
#define _GNU_SOURCE
#include "calibration/profile_internal.h"
#include "lanemap/costmodel.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p, then make sure dir is a directory. */
static lm_status make_dirs(char *dir, lm_error *err) {
  for (char *s = dir + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = 0;
    int bad = mkdir(dir, 0777) != 0 && errno != EEXIST;
    int e = errno;
    *s = '/';
    if (bad)
      return lm_error_set(err, LM_ESYS,
                          "%s: cannot create the cache directory: %s", dir,
                          strerror(e));
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return lm_error_set(err, LM_ESYS,
                        "%s: cannot create the cache directory: %s", dir,
                        strerror(errno));
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return lm_error_set(err, LM_ESYS, "%s: the cache path is not a directory",
                        dir);
  return LM_OK;
}

/* The cache directory: $LANEMAP_CACHE_DIR, or $XDG_CACHE_HOME/lanemap (an
 * absolute XDG_CACHE_HOME only, as the XDG spec says), or
 * ~/.cache/lanemap. */
static lm_status cache_dir(char *dir, size_t n, lm_error *err) {
  const char *env = getenv("LANEMAP_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int w;
  if (env && *env)
    w = snprintf(dir, n, "%s", env);
  else if (xdg && xdg[0] == '/')
    w = snprintf(dir, n, "%s/lanemap", xdg);
  else {
    struct passwd pw, *res = NULL;
    char pbuf[4096];
    if ((!home || !*home) &&
        getpwuid_r(getuid(), &pw, pbuf, sizeof pbuf, &res) == 0 && res)
      home = res->pw_dir;
    if (!home || !*home)
      return lm_error_set(err, LM_ESYS,
                          "lm_profile_cache_path: no cache directory: set "
                          "LANEMAP_CACHE_DIR, XDG_CACHE_HOME or HOME");
    w = snprintf(dir, n, "%s/.cache/lanemap", home);
  }
  if (w < 0 || (size_t)w >= n)
    return lm_error_set(err, LM_EINPUT,
                        "lm_profile_cache_path: the cache directory's path "
                        "is longer than %zu bytes",
                        n - 1);
  for (size_t len = strlen(dir); len > 1 && dir[len - 1] == '/'; len--)
    dir[len - 1] = 0;
  return LM_OK;
}

lm_status lm_profile_cache_path(const char *isa, lm_profile_mode mode,
                                char *buf, size_t n, lm_error *err) {
  if (n > 0)
    buf[0] = 0;
  lm_status s = lm_profile_check_isa(__func__, "isa", isa, err);
  if (s)
    return s;
  if (!lm_profile_mode_ok(mode))
    return lm_error_set(err, LM_EINPUT, "%s: mode: unknown mode %d", __func__,
                        (int)mode);
  char dir[PATH_MAX];
  lm_fingerprint fp;
  if ((s = cache_dir(dir, sizeof dir, err)) || (s = make_dirs(dir, err)) ||
      (s = lm_fingerprint_host(&fp, err)))
    return s;
  int w = snprintf(buf, n, "%s/profile-%s-%s-%s-%s.json", dir, fp.hash, isa,
                   lm_profile_mode_name(mode), lm_model_id());
  if (w < 0 || (size_t)w >= n) {
    if (n > 0)
      buf[0] = 0;
    return lm_error_set(err, LM_EINPUT,
                        "%s: the path needs %d bytes, the buffer holds %zu",
                        __func__, w + 1, n);
  }
  return LM_OK;
}
