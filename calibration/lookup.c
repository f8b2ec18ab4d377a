/* Finding the profile that prices an ISA target: the file the caller names,
 * else this machine's cached calibration for the target, else what the
 * caller asked for when the cache has none (an error, the uncalibrated
 * defaults, or a calibration run that fills the cache).  Every command that
 * prices variants goes through here, so they agree on what "the profile"
 * is.  Nothing prints: a fingerprint mismatch comes back as a warning in
 * lm_profile_found for the caller to show.  A profile whose noise verdict
 * is noisy passes only when the caller accepts it (noise_gate.c), and a
 * noisy calibration is kept beside the cache, not in it. */
#include <string.h>
#include <unistd.h>

#include "lanemap/calibrate.h"
#include "lanemap/timing.h"

void lm_profile_lookup_defaults(lm_profile_lookup_opts *o) {
  memset(o, 0, sizeof *o);
  o->isa = LM_ISA_HOST;
  o->mode = LM_PROFILE_DEFAULT; /* any cached mode, quick first */
  o->missing = LM_PROFILE_MISSING_ERROR;
  lm_calib_defaults(&o->calib);
}

const char *lm_profile_source_name(lm_profile_source s) {
  switch (s) {
  case LM_PROFILE_SOURCE_FILE:
    return "given";
  case LM_PROFILE_SOURCE_CACHE:
    return "cached";
  case LM_PROFILE_SOURCE_CALIBRATED:
    return "calibrated";
  case LM_PROFILE_SOURCE_DEFAULTS:
    return "defaults";
  }
  return "?";
}

/* The path of the first cached profile of o->isa among the modes o allows
 * (quick before full) into buf, and *found 1; *found 0 if there is none. */
static lm_status cached(const lm_profile_lookup_opts *o, char *buf, size_t n,
                        int *found, lm_error *err) {
  *found = 0;
  for (int m = LM_PROFILE_QUICK; m <= LM_PROFILE_FULL && !*found; m++) {
    if (o->mode != LM_PROFILE_DEFAULT && m != (int)o->mode)
      continue;
    lm_status st = lm_profile_cache_path(lm_isa_name(o->isa),
                                         (lm_profile_mode)m, buf, n, err);
    if (st != LM_OK)
      return st;
    *found = access(buf, R_OK) == 0;
  }
  return LM_OK;
}

static lm_status load(const lm_profile_lookup_opts *o, lm_profile **out,
                      lm_profile_found *f, lm_error *err) {
  lm_status st = lm_profile_load(f->path, out, &f->info, err);
  if (st != LM_OK)
    return st;
  if (o->require_isa &&
      strcmp(lm_profile_get_isa(*out), lm_isa_name(o->isa)) != 0)
    st = lm_error_set(err, LM_EINPUT,
                      "%s: a profile of ISA target %s, not %s (calibrate with "
                      "--isa %s)",
                      f->path, lm_profile_get_isa(*out), lm_isa_name(o->isa),
                      lm_isa_name(o->isa));
  else
    st = lm_profile_check_noisy(*out, f->path, o->accept_noisy, err);
  f->noisy = lm_profile_noisy(*out);
  if (st == LM_OK)
    return st;
  lm_profile_free(*out);
  *out = NULL;
  return st;
}

lm_status lm_profile_lookup(const lm_profile_lookup_opts *o, lm_profile **out,
                            lm_profile_found *f, lm_error *err) {
  *out = NULL;
  memset(f, 0, sizeof *f);
  if (o->use_defaults) {
    f->source = LM_PROFILE_SOURCE_DEFAULTS;
    return lm_profile_default(o->isa, out, err);
  }
  if (o->path) {
    f->source = LM_PROFILE_SOURCE_FILE;
    if (strlen(o->path) >= sizeof f->path)
      return lm_error_set(err, LM_EINPUT, "%.64s...: profile path too long",
                          o->path);
    strcpy(f->path, o->path);
    return load(o, out, f, err);
  }
  int found = 0;
  lm_status st = cached(o, f->path, sizeof f->path, &found, err);
  if (st != LM_OK)
    return st;
  if (found) {
    f->source = LM_PROFILE_SOURCE_CACHE;
    return load(o, out, f, err);
  }
  switch (o->missing) {
  case LM_PROFILE_MISSING_DEFAULTS:
    f->path[0] = 0;
    f->source = LM_PROFILE_SOURCE_DEFAULTS;
    return lm_profile_default(o->isa, out, err);
  case LM_PROFILE_MISSING_CALIBRATE: {
    lm_calib_opts co = o->calib;
    co.isa = o->isa;
    co.quick = o->mode != LM_PROFILE_FULL;
    /* the cache entry of the mode calibrated, locked from the look to the
     * write: a second process that wants it waits, then loads what the
     * first one calibrated instead of measuring beside it */
    int lock = -1;
    st = lm_profile_cache_path(lm_isa_name(o->isa),
                               co.quick ? LM_PROFILE_QUICK : LM_PROFILE_FULL,
                               f->path, sizeof f->path, err);
    if (st == LM_OK)
      st = lm_file_lock(f->path, &lock, err);
    if (st == LM_OK && access(f->path, R_OK) == 0) {
      f->source = LM_PROFILE_SOURCE_CACHE;
      st = load(o, out, f, err);
      lm_file_unlock(lock);
      return st;
    }
    double t0 = lm_now_ns();
    if (st == LM_OK)
      st = lm_calibrate(&co, out, err);
    f->calibrate_s = (lm_now_ns() - t0) / 1e9;
    f->source = LM_PROFILE_SOURCE_CALIBRATED;
    if (st == LM_OK) {
      char wrote[sizeof f->path];
      f->noisy = lm_profile_noisy(*out);
      st = lm_profile_save_calibrated(*out, f->path, 1, o->accept_noisy, wrote,
                                      sizeof wrote, err);
      if (wrote[0])
        strcpy(f->path, wrote);
    }
    lm_file_unlock(lock);
    if (st != LM_OK) {
      lm_profile_free(*out);
      *out = NULL;
    }
    return st;
  }
  case LM_PROFILE_MISSING_ERROR:
    break;
  }
  if (!lm_isa_runnable(o->isa))
    return lm_error_set(err, LM_EINPUT,
                        "no cached profile for %s, and this machine cannot "
                        "calibrate it: pass --default-profile (the named "
                        "defaults) or --profile P (one calibrated on that "
                        "machine)",
                        lm_isa_name(o->isa));
  return lm_error_set(err, LM_EINPUT,
                      "no cached profile for %s: run `lanemap calibrate --isa "
                      "%s`, or pass --profile P or --default-profile",
                      lm_isa_name(o->isa), lm_isa_name(o->isa));
}
