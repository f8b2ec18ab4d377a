/* The gate a profile passes before it prices anything: a calibration
 * whose timing was disturbed (its noise verdict, lanemap/noise.h) fits
 * what the neighbours left of the machine, and once cached it would price
 * every later plan without a sign of it.  So a noisy calibration is not
 * cached and a noisy profile is not used, unless the caller accepts it:
 * --accept-noisy on the command line, or LANEMAP_ACCEPT_NOISY=1 for tests
 * and CI, where measuring processes run side by side on purpose.
 *
 * Nothing measured is thrown away: a refused calibration is written beside
 * the file it was meant for, as NAME.noisy.json, for the user to inspect
 * or to pass with --profile and --accept-noisy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/calibrate.h"

int lm_profile_accept_noisy(int accept) {
  const char *env = getenv("LANEMAP_ACCEPT_NOISY");
  return accept || (env && strcmp(env, "1") == 0);
}

lm_status lm_profile_noisy_path(const char *path, char *buf, size_t n,
                                lm_error *err) {
  static const char ext[] = ".json";
  size_t len = strlen(path), e = sizeof ext - 1;
  if (len >= e && strcmp(path + len - e, ext) == 0)
    len -= e;
  int w = snprintf(buf, n, "%.*s.noisy.json", (int)len, path);
  if (w < 0 || (size_t)w >= n) {
    if (n > 0)
      buf[0] = 0;
    return lm_error_set(err, LM_EINPUT,
                        "%.64s...: the path of the noisy profile needs %d "
                        "bytes, the buffer holds %zu",
                        path, w + 1, n);
  }
  return LM_OK;
}

lm_status lm_profile_check_noisy(const lm_profile *p, const char *path,
                                 int accept, lm_error *err) {
  if (!lm_profile_noisy(p) || lm_profile_accept_noisy(accept))
    return LM_OK;
  char why[1200];
  lm_profile_describe_noise(p, why, sizeof why);
  return lm_error_set(
      err, LM_EFAIL,
      "%.400s: the calibration behind this profile was %s; "
      "its coefficients may be wrong: recalibrate on a quiet "
      "machine, or pass --accept-noisy (LANEMAP_ACCEPT_NOISY=1) "
      "to use it anyway",
      path, why);
}

lm_status lm_profile_save_calibrated(const lm_profile *p, const char *path,
                                     int cache, int accept, char *wrote,
                                     size_t n, lm_error *err) {
  if (n > 0)
    wrote[0] = 0;
  if (!lm_profile_noisy(p) || lm_profile_accept_noisy(accept)) {
    lm_status s = lm_profile_save(p, path, err);
    if (s == LM_OK)
      snprintf(wrote, n, "%s", path);
    return s;
  }
  char side[1024];
  lm_status s = lm_profile_noisy_path(path, side, sizeof side, err);
  if (s == LM_OK)
    s = lm_profile_save(p, side, err);
  if (s != LM_OK)
    return s;
  snprintf(wrote, n, "%s", side);
  char why[1200];
  lm_profile_describe_noise(p, why, sizeof why);
  return lm_error_set(err, LM_EFAIL,
                      "the calibration was %s; the profile was not %s %.300s; "
                      "it was written to %.300s for inspection: rerun on a "
                      "quiet machine, or pass --accept-noisy",
                      why, cache ? "cached as" : "written to", path, side);
}
