/* Profile values and their checks: what each field of a profile must be,
 * in one place for the setters, the writer and the reader
 * (profile_internal.h).  A message starts with who asked (a setter or a
 * file) and names the field by its path in the profile. */
#include "calibration/profile_internal.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values and their checks --------------------------------------------- */

const char *lm_profile_want_text(lm_profile_want w) {
  switch (w) {
  case LM_WANT_NONNEG:
    return "a non-negative number";
  case LM_WANT_FINITE:
    return "a finite number";
  case LM_WANT_CONDITION:
    return "a number >= 1, or null";
  }
  abort();
}

bool lm_profile_want_ok(double v, lm_profile_want w) {
  switch (w) {
  case LM_WANT_NONNEG:
    return isfinite(v) && v >= 0;
  case LM_WANT_FINITE:
    return isfinite(v);
  case LM_WANT_CONDITION:
    return v >= 1; /* false for NaN */
  }
  abort();
}

const char *lm_profile_join(char *buf, const char *base, const char *field) {
  /* a path longer than LM_PROFILE_PATH_LEN is cut: it only ever names a field
   * in a message */
  if (snprintf(buf, LM_PROFILE_PATH_LEN, "%s%s%s", base, *base ? "." : "",
               field) >= LM_PROFILE_PATH_LEN)
    buf[LM_PROFILE_PATH_LEN - 1] = 0;
  return buf;
}

lm_status lm_profile_check_num(const char *pre, const char *path, double v,
                               lm_profile_want w, lm_error *err) {
  if (lm_profile_want_ok(v, w))
    return LM_OK;
  char got[LM_JSON_NUM_LEN];
  lm_json_fmt_double(v, got);
  return lm_error_set(err, LM_EINPUT, "%s: %s: expected %s, got %s", pre, path,
                      lm_profile_want_text(w), got);
}

lm_status lm_profile_check_text(const char *pre, const char *path,
                                const char *s, lm_error *err) {
  if (s && *s)
    return LM_OK;
  return lm_error_set(err, LM_EINPUT,
                      "%s: %s: expected a non-empty string, got %s", pre, path,
                      s ? "\"\"" : "NULL");
}

lm_status lm_profile_check_isa(const char *pre, const char *path,
                               const char *isa, lm_error *err) {
  lm_status s = lm_profile_check_text(pre, path, isa, err);
  if (s != LM_OK)
    return s;
  bool ok = strlen(isa) <= LM_PROFILE_ISA_MAX && isa[0] != '.';
  for (const char *c = isa; ok && *c; c++)
    ok = isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-';
  if (ok)
    return LM_OK;
  return lm_error_set(err, LM_EINPUT,
                      "%s: %s: expected an ISA name of at most %d letters, "
                      "digits, '.', '_' or '-', got \"%.80s\"",
                      pre, path, LM_PROFILE_ISA_MAX, isa);
}

bool lm_profile_mode_ok(lm_profile_mode m) {
  return m == LM_PROFILE_DEFAULT || m == LM_PROFILE_QUICK ||
         m == LM_PROFILE_FULL;
}

static const char *const mode_names[] = {"default", "quick", "full"};

const char *lm_profile_mode_name(lm_profile_mode m) {
  return lm_profile_mode_ok(m) ? mode_names[m] : "?";
}

bool lm_profile_mode_find(const char *text, lm_profile_mode *out) {
  for (int m = 0; m < 3; m++)
    if (strcmp(text, mode_names[m]) == 0) {
      *out = (lm_profile_mode)m;
      return true;
    }
  return false;
}

lm_status lm_profile_mode_parse(const char *text, lm_profile_mode *out,
                                lm_error *err) {
  if (text && lm_profile_mode_find(text, out))
    return LM_OK;
  return lm_error_set(err, LM_EINPUT,
                      "unknown profile mode \"%.80s\": expected default, quick "
                      "or full",
                      text ? text : "");
}

/* "YYYY-MM-DDTHH:MM:SSZ", a real date. */
static bool created_ok(const char *s) {
  static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
  if (strlen(s) != sizeof pat - 1)
    return false;
  for (size_t i = 0; pat[i]; i++)
    if (pat[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != pat[i])
      return false;
  int y, mo, d, h, mi, se;
  if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ", &y, &mo, &d, &h, &mi, &se) != 6)
    return false;
  static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
      (mo == 2 && d == 29 && !leap))
    return false;
  return h <= 23 && mi <= 59 && se <= 60; /* 60: a leap second */
}

lm_status lm_profile_check_created(const char *pre, const char *path,
                                   const char *s, lm_error *err) {
  if (s && created_ok(s))
    return LM_OK;
  return lm_error_set(err, LM_EINPUT,
                      "%s: %s: expected a UTC time \"YYYY-MM-DDTHH:MM:SSZ\", "
                      "got \"%.80s\"",
                      pre, path, s ? s : "");
}

/* A fingerprint field must be a NUL-terminated string inside its array. */
static lm_status check_fp_text(const char *pre, const char *field,
                               const char *s, size_t cap, bool nonempty,
                               lm_error *err) {
  size_t len = strnlen(s, cap);
  if (len < cap && (len > 0 || !nonempty))
    return LM_OK;
  return lm_error_set(err, LM_EINPUT,
                      "%s: fingerprint.%s: expected a %sstring of at most %zu "
                      "bytes",
                      pre, field, nonempty ? "non-empty " : "", cap - 1);
}

lm_status lm_profile_check_fingerprint(const char *pre,
                                       const lm_fingerprint *fp,
                                       lm_error *err) {
  lm_status s;
  if ((s = check_fp_text(pre, "cpu_name", fp->cpu_name, sizeof fp->cpu_name,
                         true, err)) ||
      (s = check_fp_text(pre, "cpu_features", fp->cpu_features,
                         sizeof fp->cpu_features, false, err)) ||
      (s = check_fp_text(pre, "llvm_version", fp->llvm_version,
                         sizeof fp->llvm_version, true, err)) ||
      (s = check_fp_text(pre, "hash", fp->hash, sizeof fp->hash, true, err)))
    return s;
  if (fp->cores < 1)
    return lm_error_set(err, LM_EINPUT,
                        "%s: fingerprint.cores: expected an integer >= 1, got "
                        "%d",
                        pre, fp->cores);
  lm_fingerprint re = *fp;
  lm_fingerprint_rehash(&re);
  if (strcmp(re.hash, fp->hash) != 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: fingerprint.hash: \"%s\" does not match the "
                        "fingerprint's fields, which hash to \"%s\"",
                        pre, fp->hash, re.hash);
  return LM_OK;
}

/* Term t as terms[at] of p (at == nterms for a new term). */
lm_status lm_profile_check_term(const lm_profile *p, int at,
                                const lm_profile_term *t, const char *pre,
                                lm_error *err) {
  char path[LM_PROFILE_PATH_LEN], f[LM_PROFILE_PATH_LEN];
  snprintf(path, sizeof path, "terms[%d]", at);
  lm_status s;
  if ((s = lm_profile_check_text(pre, lm_profile_join(f, path, "name"), t->name,
                                 err)) ||
      (s = lm_profile_check_text(pre, lm_profile_join(f, path, "unit"), t->unit,
                                 err)))
    return s;
  const char *names[6] = {"coef", "p5", "p50", "p95", "lo", "hi"};
  const double v[6] = {t->coef, t->p5, t->p50, t->p95, t->lo, t->hi};
  for (int i = 0; i < 6; i++)
    if ((s = lm_profile_check_num(pre, lm_profile_join(f, path, names[i]), v[i],
                                  LM_WANT_NONNEG, err)))
      return s;
  char a[LM_JSON_NUM_LEN], b[LM_JSON_NUM_LEN], c[LM_JSON_NUM_LEN];
  if (!(t->p5 <= t->p50 && t->p50 <= t->p95)) {
    lm_json_fmt_double(t->p5, a), lm_json_fmt_double(t->p50, b),
        lm_json_fmt_double(t->p95, c);
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s: expected p5 <= p50 <= p95, got %s, %s, %s",
                        pre, path, a, b, c);
  }
  if (!(t->lo <= t->hi)) {
    lm_json_fmt_double(t->lo, a), lm_json_fmt_double(t->hi, b);
    return lm_error_set(err, LM_EINPUT, "%s: %s: expected lo <= hi, got %s, %s",
                        pre, path, a, b);
  }
  for (int j = 0; j < p->nterms; j++)
    if (j != at && strcmp(p->terms[j].name, t->name) == 0)
      return lm_error_set(err, LM_EINPUT,
                          "%s: %s.name: \"%.80s\" is already the name of "
                          "terms[%d]",
                          pre, path, t->name, j);
  return LM_OK;
}

lm_status lm_profile_check_sample(const lm_profile *p,
                                  const lm_profile_sample *x, const char *pre,
                                  lm_error *err) {
  char path[LM_PROFILE_PATH_LEN], f[LM_PROFILE_PATH_LEN + 32];
  snprintf(path, sizeof path, "samples[%d]", p->nsamples);
  lm_status s;
  if ((s = lm_profile_check_text(pre, lm_profile_join(f, path, "bench"),
                                 x->bench, err)) ||
      (s = lm_profile_check_text(pre, lm_profile_join(f, path, "family"),
                                 x->family, err)))
    return s;
  if (p->nterms > 0 && !x->features)
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s.features: expected %d numbers (one per term), "
                        "got NULL",
                        pre, path, p->nterms);
  for (int k = 0; k < p->nterms; k++) {
    snprintf(f, sizeof f, "%s.features[%d]", path, k);
    if ((s = lm_profile_check_num(pre, f, x->features[k], LM_WANT_NONNEG, err)))
      return s;
  }
  if ((s = lm_profile_check_num(pre, lm_profile_join(f, path, "ns"), x->ns,
                                LM_WANT_NONNEG, err)) ||
      (s = lm_profile_check_num(pre, lm_profile_join(f, path, "min"), x->min,
                                LM_WANT_NONNEG, err)) ||
      (s = lm_profile_check_num(pre, lm_profile_join(f, path, "spread"),
                                x->spread, LM_WANT_NONNEG, err)))
    return s;
  if (x->reps < 1)
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s.reps: expected an integer >= 1, got %" PRId64,
                        pre, path, x->reps);
  return LM_OK;
}

lm_status lm_profile_check_diagnostics(const lm_profile *p,
                                       const lm_profile_diagnostics *d,
                                       const char *pre, lm_error *err) {
  lm_status s;
  if ((s = lm_profile_check_num(pre, "diagnostics.condition", d->condition,
                                LM_WANT_CONDITION, err)) ||
      (s = lm_profile_check_num(pre, "diagnostics.rms_rel_err", d->rms_rel_err,
                                LM_WANT_NONNEG, err)))
    return s;
  if (d->rank < 0 || d->rank > p->nterms)
    return lm_error_set(err, LM_EINPUT,
                        "%s: diagnostics.rank: expected an integer from 0 to "
                        "%d (the number of terms), got %d",
                        pre, p->nterms, d->rank);
  return LM_OK;
}

lm_status lm_profile_oom(const char *pre, lm_error *err) {
  return lm_error_set(err, LM_ESYS, "%s: out of memory", pre);
}
