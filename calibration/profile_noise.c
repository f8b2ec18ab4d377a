/* The noise verdict a profile records: whether the timing its samples come
 * from was fit to decide with (lanemap/noise.h), and which calibration
 * families were disturbed by what.
 *
 * A calibration on a loaded machine fits coefficients to whatever the
 * neighbours left of the CPU, and nothing in the numbers shows it: the
 * profile is saved, cached, and prices every later plan.  So the profile
 * carries the verdict with it, and the lookup refuses a noisy one unless
 * the caller accepts it (calibration/noise_gate.c).
 *
 * The verdict is kept as its JSON form reads back (lm_noise_to_json, then
 * lm_noise_from_json), so that a profile in memory equals the same profile
 * saved and loaded, as every other field does. */
#include "calibration/profile_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

lm_status lm_profile_noise_set(lm_profile *p, const lm_noise *n,
                               const char *pre, lm_error *err) {
  if (!n) {
    lm_profile_noise_free(p);
    p->has_noise = false;
    lm_noise_clear(&p->noise);
    return LM_OK;
  }
  cJSON *j = lm_noise_to_json(n);
  if (!j)
    return lm_profile_oom(pre, err);
  lm_noise back;
  lm_error inner = {0};
  lm_status s = lm_noise_from_json(j, &back, &inner);
  cJSON_Delete(j);
  if (s != LM_OK)
    return lm_error_set(err, s, "%s: noise: %s", pre, inner.msg);
  p->noise = back;
  p->has_noise = true;
  return LM_OK;
}

lm_status lm_profile_noisy_add(lm_profile *p, const lm_profile_noisy_family *f,
                               const char *pre, lm_error *err) {
  char path[LM_PROFILE_PATH_LEN], fp[LM_PROFILE_PATH_LEN];
  snprintf(path, sizeof path, "noisy_families[%d]", p->nnoisy);
  if (!p->has_noise)
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s: a noisy family needs the verdict it belongs "
                        "to (noise)",
                        pre, path);
  lm_status s;
  if ((s = lm_profile_check_text(pre, lm_profile_join(fp, path, "family"),
                                 f->family, err)) ||
      (s = lm_profile_check_num(pre, lm_profile_join(fp, path, "spread"),
                                f->spread, LM_WANT_NONNEG, err)))
    return s;
  if (f->reasons == 0 || (f->reasons & ~LM_NOISE_ALL))
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s.reasons: expected LM_NOISE_* bits, at least "
                        "one, got %#x",
                        pre, path, f->reasons);
  bool known = false;
  for (int i = 0; i < p->nsamples && !known; i++)
    known = strcmp(p->samples[i].family, f->family) == 0;
  if (!known)
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s.family: \"%.80s\" is the family of no sample",
                        pre, path, f->family);
  for (int i = 0; i < p->nnoisy; i++)
    if (strcmp(p->noisy[i].family, f->family) == 0)
      return lm_error_set(err, LM_EINPUT,
                          "%s: %s.family: \"%.80s\" is named already in "
                          "noisy_families[%d]",
                          pre, path, f->family, i);
  if (p->nnoisy == p->capnoisy) {
    int cap = p->capnoisy ? 2 * p->capnoisy : 8;
    void *v = realloc(p->noisy, (size_t)cap * sizeof *p->noisy);
    if (!v)
      return lm_profile_oom(pre, err);
    p->noisy = v;
    p->capnoisy = cap;
  }
  char *c = strdup(f->family);
  if (!c)
    return lm_profile_oom(pre, err);
  p->noisy[p->nnoisy++] = (lm_profile_noisy_family){c, f->reasons, f->spread};
  return LM_OK;
}

void lm_profile_noise_free(lm_profile *p) {
  for (int i = 0; i < p->nnoisy; i++)
    free((char *)p->noisy[i].family);
  free(p->noisy);
  p->noisy = NULL;
  p->nnoisy = p->capnoisy = 0;
}

static bool same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

bool lm_profile_noise_equal(const lm_profile *a, const lm_profile *b) {
  if (a->has_noise != b->has_noise || a->nnoisy != b->nnoisy)
    return false;
  for (int i = 0; i < a->nnoisy; i++)
    if (strcmp(a->noisy[i].family, b->noisy[i].family) != 0 ||
        a->noisy[i].reasons != b->noisy[i].reasons ||
        !same(a->noisy[i].spread, b->noisy[i].spread))
      return false;
  if (!a->has_noise)
    return true;
  const lm_noise *x = &a->noise, *y = &b->noise;
  return x->noisy == y->noisy && x->reasons == y->reasons &&
         same(x->spread, y->spread) && same(x->canary, y->canary) &&
         same(x->other_cpus, y->other_cpus) &&
         same(x->busiest_cpu, y->busiest_cpu) && same(x->steal, y->steal) &&
         same(x->load_start, y->load_start) && same(x->load_end, y->load_end) &&
         x->running_start == y->running_start &&
         x->running_end == y->running_end && x->wanted == y->wanted &&
         x->missed == y->missed && same(x->late_ns, y->late_ns) &&
         same(x->wall_s, y->wall_s) && x->ncpu == y->ncpu;
}

/* ---- the public face ----------------------------------------------------- */

lm_status lm_profile_set_noise(lm_profile *p, const lm_noise *n,
                               lm_error *err) {
  if (!n)
    return lm_profile_noise_set(p, NULL, __func__, err);
  lm_status s = lm_profile_noise_set(p, n, __func__, err);
  if (s == LM_OK)
    lm_profile_noise_free(p); /* the families belonged to the old verdict */
  return s;
}

const lm_noise *lm_profile_get_noise(const lm_profile *p) {
  return p->has_noise ? &p->noise : NULL;
}

lm_status lm_profile_add_noisy_family(lm_profile *p,
                                      const lm_profile_noisy_family *f,
                                      lm_error *err) {
  return lm_profile_noisy_add(p, f, __func__, err);
}

int lm_profile_nnoisy_families(const lm_profile *p) { return p->nnoisy; }

const lm_profile_noisy_family *lm_profile_noisy_family_at(const lm_profile *p,
                                                          int i) {
  return i >= 0 && i < p->nnoisy ? &p->noisy[i] : NULL;
}

bool lm_noise_families_noisy(const lm_noise *whole,
                             const lm_profile_noisy_family *fam, int nfam) {
  bool any = whole->noisy;
  for (int i = 0; i < nfam && !any; i++)
    any = (fam[i].reasons & LM_NOISE_INTERFERENCE) != 0;
  return any;
}

bool lm_profile_noisy(const lm_profile *p) {
  return p->has_noise &&
         lm_noise_families_noisy(&p->noise, p->noisy, p->nnoisy);
}

/* Append to buf[*at..n), keeping it terminated. */
static void put(char *buf, size_t n, size_t *at, const char *fmt, ...) {
  if (*at + 1 >= n)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *at, n - *at, fmt, ap);
  va_end(ap);
  if (w > 0)
    *at += (size_t)w < n - *at ? (size_t)w : n - *at - 1;
}

/* What lm_noise_describe says of the measures in `reasons` alone, without
 * its "noisy: " lead. */
static void put_measures(char *buf, size_t n, size_t *at, const lm_noise *v,
                         unsigned reasons, const lm_noise_limits *l) {
  lm_noise only = *v;
  only.reasons = reasons;
  only.noisy = 1;
  char t[512];
  lm_noise_describe(&only, l, t, sizeof t);
  const char *s = strncmp(t, "noisy: ", 7) == 0 ? t + 7 : t;
  put(buf, n, at, "%s", s);
}

const char *lm_profile_describe_noise(const lm_profile *p, char *buf,
                                      size_t n) {
  if (n == 0)
    return buf;
  buf[0] = 0;
  if (!p->has_noise) {
    snprintf(buf, n, "quiet (no verdict recorded)");
    return buf;
  }
  lm_noise_limits lim;
  lm_noise_limits_defaults(&lim);
  bool noisy = lm_profile_noisy(p);
  if (!noisy && p->nnoisy == 0)
    return lm_noise_describe(&p->noise, &lim, buf, n);
  size_t at = 0;
  put(buf, n, &at, noisy ? "noisy: " : "unstable: ");
  /* the pool's measures belong to the families that launch workers; they
   * are global only when no family claims them */
  unsigned claimed = 0;
  for (int i = 0; i < p->nnoisy; i++)
    claimed |= p->noisy[i].reasons & LM_NOISE_WORKERS;
  unsigned global = p->noise.reasons & ~claimed;
  const char *sep = "";
  if (p->noise.reasons && global) {
    put(buf, n, &at, "every family: ");
    put_measures(buf, n, &at, &p->noise, global, &lim);
    sep = "; ";
  }
  for (int i = 0; i < p->nnoisy; i++) {
    const lm_profile_noisy_family *f = &p->noisy[i];
    put(buf, n, &at, "%s%s: ", sep, f->family);
    sep = "; ";
    const char *comma = "";
    for (unsigned bit = 1; bit & LM_NOISE_ALL; bit <<= 1) {
      if (!(f->reasons & bit))
        continue;
      put(buf, n, &at, "%s", comma);
      comma = ", ";
      if (bit == LM_NOISE_SPREAD)
        put(buf, n, &at, "median spread %.1f%% > %.0f%%", 100 * f->spread,
            100 * lim.spread_max);
      else if (bit == LM_NOISE_WORKERS && (p->noise.reasons & bit))
        put_measures(buf, n, &at, &p->noise, bit, &lim);
      else
        put(buf, n, &at, "%s", lm_noise_reason_name(bit));
    }
  }
  return buf;
}
