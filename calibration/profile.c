/* Calibration profile: one ISA target's fitted costs on one machine, and
 * the evidence behind them, kept together in one JSON file.
 *
 * A profile is only worth its checks.  It is read by the cost model, the
 * solver and the held-out harness long after the calibration that wrote
 * it, perhaps on another machine or by another build, and a wrong number in
 * it turns into a wrong plan without any error.  So the object keeps its
 * invariants from the first setter on (every value is checked when it is
 * set, terms are fixed once samples are aligned with them), the writer and
 * the reader share those checks, and the reader checks every field of the
 * file and names the one that is wrong by its JSON path.
 *
 * Doubles are written exactly.  cJSON 1.7.15 prints a number with 15
 * digits when that reads back *approximately* equal (within one ulp scaled
 * by the value), so 0.1 + 0.2 would come back as 0.3; every number is
 * therefore written as raw text, the shortest %.<N>g (N <= 17) that reads
 * back bit for bit. */
#define _GNU_SOURCE
#include "lanemap/profile.h"
#include "lanemap/costmodel.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The largest integer a JSON reader keeps exactly in a double. */
#define INT53_MAX (INT64_C(1) << 53)
/* Longest JSON path a message names ("samples[123456].features[1234]"). */
#define PATH_LEN 160
/* ISA names appear in cache file names. */
#define ISA_MAX 63

struct lm_profile {
  char *isa;
  lm_profile_mode mode;
  char *units;
  char created[24]; /* "YYYY-MM-DDTHH:MM:SSZ" */
  lm_fingerprint fp;
  lm_profile_term *terms; /* strings owned */
  int nterms, capterms;
  lm_profile_sample *samples; /* strings and features owned */
  double *residuals;          /* [capsamples] */
  int nsamples, capsamples;
  lm_profile_diagnostics diag;
  lm_profile_loo *loo; /* bench owned */
  int nloo, caploo;
  char *extra;  /* compact JSON object, numbers exact */
  double *boot; /* [nboot][nterms] */
  int nboot;
};

/* ---- values and their checks --------------------------------------------- */

typedef enum Want {
  WANT_NONNEG,    /* finite and >= 0 */
  WANT_FINITE,    /* finite */
  WANT_CONDITION, /* >= 1, INFINITY allowed (null in the file) */
} Want;

static const char *want_text(Want w) {
  switch (w) {
  case WANT_NONNEG:
    return "a non-negative number";
  case WANT_FINITE:
    return "a finite number";
  case WANT_CONDITION:
    return "a number >= 1, or null";
  }
  abort();
}

static bool want_ok(double v, Want w) {
  switch (w) {
  case WANT_NONNEG:
    return isfinite(v) && v >= 0;
  case WANT_FINITE:
    return isfinite(v);
  case WANT_CONDITION:
    return v >= 1; /* false for NaN */
  }
  abort();
}

/* The shortest text that reads back as exactly v, with '.' whatever the
 * locale. */
static void fmt_double(double v, char buf[40]) {
  if (isnan(v)) {
    strcpy(buf, "nan");
    return;
  }
  if (isinf(v)) {
    strcpy(buf, v > 0 ? "inf" : "-inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, 40, "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  char dp = localeconv()->decimal_point[0];
  if (dp != '.')
    for (char *s = buf; *s; s++)
      if (*s == dp)
        *s = '.';
}

static bool same_double(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

static const char *join(char *buf, const char *base, const char *field) {
  /* a path longer than PATH_LEN is cut: it only ever names a field in a
   * message */
  if (snprintf(buf, PATH_LEN, "%s%s%s", base, *base ? "." : "", field) >= PATH_LEN)
    buf[PATH_LEN - 1] = 0;
  return buf;
}

static lm_status check_num(const char *pre, const char *path, double v, Want w,
                           lm_error *err) {
  if (want_ok(v, w))
    return LM_OK;
  char got[40];
  fmt_double(v, got);
  return lm_error_set(err, LM_EINPUT, "%s: %s: expected %s, got %s", pre, path,
                      want_text(w), got);
}

static lm_status check_text(const char *pre, const char *path, const char *s,
                            lm_error *err) {
  if (s && *s)
    return LM_OK;
  return lm_error_set(err, LM_EINPUT,
                      "%s: %s: expected a non-empty string, got %s", pre, path,
                      s ? "\"\"" : "NULL");
}

static lm_status check_isa(const char *pre, const char *path, const char *isa,
                           lm_error *err) {
  lm_status s = check_text(pre, path, isa, err);
  if (s != LM_OK)
    return s;
  bool ok = strlen(isa) <= ISA_MAX && isa[0] != '.';
  for (const char *c = isa; ok && *c; c++)
    ok = isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-';
  if (ok)
    return LM_OK;
  return lm_error_set(err, LM_EINPUT,
                      "%s: %s: expected an ISA name of at most %d letters, "
                      "digits, '.', '_' or '-', got \"%.80s\"",
                      pre, path, ISA_MAX, isa);
}

static bool mode_ok(lm_profile_mode m) {
  return m == LM_PROFILE_DEFAULT || m == LM_PROFILE_QUICK ||
         m == LM_PROFILE_FULL;
}

static const char *const mode_names[] = {"default", "quick", "full"};

const char *lm_profile_mode_name(lm_profile_mode m) {
  return mode_ok(m) ? mode_names[m] : "?";
}

static bool mode_find(const char *text, lm_profile_mode *out) {
  for (int m = 0; m < 3; m++)
    if (strcmp(text, mode_names[m]) == 0) {
      *out = (lm_profile_mode)m;
      return true;
    }
  return false;
}

lm_status lm_profile_mode_parse(const char *text, lm_profile_mode *out,
                                lm_error *err) {
  if (text && mode_find(text, out))
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

static lm_status check_created(const char *pre, const char *path, const char *s,
                               lm_error *err) {
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

static lm_status check_fingerprint(const char *pre, const lm_fingerprint *fp,
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
static lm_status check_term(const lm_profile *p, int at,
                            const lm_profile_term *t, const char *pre,
                            lm_error *err) {
  char path[PATH_LEN], f[PATH_LEN];
  snprintf(path, sizeof path, "terms[%d]", at);
  lm_status s;
  if ((s = check_text(pre, join(f, path, "name"), t->name, err)) ||
      (s = check_text(pre, join(f, path, "unit"), t->unit, err)))
    return s;
  const char *names[6] = {"coef", "p5", "p50", "p95", "lo", "hi"};
  const double v[6] = {t->coef, t->p5, t->p50, t->p95, t->lo, t->hi};
  for (int i = 0; i < 6; i++)
    if ((s = check_num(pre, join(f, path, names[i]), v[i], WANT_NONNEG, err)))
      return s;
  char a[40], b[40], c[40];
  if (!(t->p5 <= t->p50 && t->p50 <= t->p95)) {
    fmt_double(t->p5, a), fmt_double(t->p50, b), fmt_double(t->p95, c);
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s: expected p5 <= p50 <= p95, got %s, %s, %s",
                        pre, path, a, b, c);
  }
  if (!(t->lo <= t->hi)) {
    fmt_double(t->lo, a), fmt_double(t->hi, b);
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

static lm_status check_sample(const lm_profile *p, const lm_profile_sample *x,
                              const char *pre, lm_error *err) {
  char path[PATH_LEN], f[PATH_LEN + 32];
  snprintf(path, sizeof path, "samples[%d]", p->nsamples);
  lm_status s;
  if ((s = check_text(pre, join(f, path, "bench"), x->bench, err)) ||
      (s = check_text(pre, join(f, path, "family"), x->family, err)))
    return s;
  if (p->nterms > 0 && !x->features)
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s.features: expected %d numbers (one per term), "
                        "got NULL",
                        pre, path, p->nterms);
  for (int k = 0; k < p->nterms; k++) {
    snprintf(f, sizeof f, "%s.features[%d]", path, k);
    if ((s = check_num(pre, f, x->features[k], WANT_NONNEG, err)))
      return s;
  }
  if ((s = check_num(pre, join(f, path, "ns"), x->ns, WANT_NONNEG, err)) ||
      (s = check_num(pre, join(f, path, "min"), x->min, WANT_NONNEG, err)) ||
      (s = check_num(pre, join(f, path, "spread"), x->spread, WANT_NONNEG,
                     err)))
    return s;
  if (x->reps < 1)
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s.reps: expected an integer >= 1, got %" PRId64,
                        pre, path, x->reps);
  return LM_OK;
}

static lm_status check_diagnostics(const lm_profile *p,
                                   const lm_profile_diagnostics *d,
                                   const char *pre, lm_error *err) {
  lm_status s;
  if ((s = check_num(pre, "diagnostics.condition", d->condition, WANT_CONDITION,
                     err)) ||
      (s = check_num(pre, "diagnostics.rms_rel_err", d->rms_rel_err,
                     WANT_NONNEG, err)))
    return s;
  if (d->rank < 0 || d->rank > p->nterms)
    return lm_error_set(err, LM_EINPUT,
                        "%s: diagnostics.rank: expected an integer from 0 to "
                        "%d (the number of terms), got %d",
                        pre, p->nterms, d->rank);
  return LM_OK;
}

/* ---- the object ---------------------------------------------------------- */

static bool grow(void **v, int *cap, int need, size_t elem) {
  if (need <= *cap)
    return true;
  int c = *cap ? *cap * 2 : 8;
  while (c < need)
    c *= 2;
  void *nv = realloc(*v, (size_t)c * elem);
  if (!nv)
    return false;
  *v = nv;
  *cap = c;
  return true;
}

static lm_status oom(const char *pre, lm_error *err) {
  return lm_error_set(err, LM_ESYS, "%s: out of memory", pre);
}

static void now_iso8601(char buf[24]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, 24, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

lm_profile *lm_profile_new(const char *isa, lm_profile_mode mode,
                           lm_error *err) {
  if (check_isa("lm_profile_new", "isa", isa, err))
    return NULL;
  if (!mode_ok(mode)) {
    lm_error_set(err, LM_EINPUT, "lm_profile_new: mode: unknown mode %d",
                 (int)mode);
    return NULL;
  }
  lm_profile *p = calloc(1, sizeof *p);
  if (!p || !(p->isa = strdup(isa)) || !(p->units = strdup("ns")) ||
      !(p->extra = strdup("{}"))) {
    lm_profile_free(p);
    oom("lm_profile_new", err);
    return NULL;
  }
  p->mode = mode;
  now_iso8601(p->created);
  p->diag.condition = INFINITY;
  return p;
}

static void term_clear(lm_profile_term *t) {
  free((char *)t->name);
  free((char *)t->unit);
}

void lm_profile_free(lm_profile *p) {
  if (!p)
    return;
  free(p->isa);
  free(p->units);
  for (int i = 0; i < p->nterms; i++)
    term_clear(&p->terms[i]);
  free(p->terms);
  for (int i = 0; i < p->nsamples; i++) {
    free((char *)p->samples[i].bench);
    free((char *)p->samples[i].family);
    free((double *)p->samples[i].features);
  }
  free(p->samples);
  free(p->residuals);
  for (int i = 0; i < p->nloo; i++)
    free((char *)p->loo[i].bench);
  free(p->loo);
  free(p->extra);
  free(p->boot);
  free(p);
}

static bool same_doubles(const double *a, const double *b, size_t n) {
  return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

static bool same_text(const char *a, const char *b) {
  return strcmp(a, b) == 0;
}

bool lm_profile_equal(const lm_profile *a, const lm_profile *b) {
  if (!same_text(a->isa, b->isa) || a->mode != b->mode ||
      !same_text(a->units, b->units) || !same_text(a->created, b->created) ||
      !lm_fingerprint_equal(&a->fp, &b->fp) || a->nterms != b->nterms ||
      a->nsamples != b->nsamples || a->nloo != b->nloo ||
      a->nboot != b->nboot || !same_text(a->extra, b->extra))
    return false;
  for (int i = 0; i < a->nterms; i++) {
    const lm_profile_term *s = &a->terms[i], *t = &b->terms[i];
    const double x[6] = {s->coef, s->p5, s->p50, s->p95, s->lo, s->hi};
    const double y[6] = {t->coef, t->p5, t->p50, t->p95, t->lo, t->hi};
    if (!same_text(s->name, t->name) || !same_text(s->unit, t->unit) ||
        s->flagged != t->flagged || !same_doubles(x, y, 6))
      return false;
  }
  size_t nt = (size_t)a->nterms;
  for (int i = 0; i < a->nsamples; i++) {
    const lm_profile_sample *s = &a->samples[i], *t = &b->samples[i];
    if (!same_text(s->bench, t->bench) || !same_text(s->family, t->family) ||
        !same_doubles(s->features, t->features, nt) ||
        !same_double(s->ns, t->ns) || !same_double(s->min, t->min) ||
        !same_double(s->spread, t->spread) || s->reps != t->reps)
      return false;
  }
  if (!same_doubles(a->residuals, b->residuals, (size_t)a->nsamples) ||
      !same_double(a->diag.condition, b->diag.condition) ||
      a->diag.rank != b->diag.rank ||
      !same_double(a->diag.rms_rel_err, b->diag.rms_rel_err))
    return false;
  for (int i = 0; i < a->nloo; i++)
    if (!same_text(a->loo[i].bench, b->loo[i].bench) ||
        !same_double(a->loo[i].rel_err, b->loo[i].rel_err))
      return false;
  return same_doubles(a->boot, b->boot, (size_t)a->nboot * nt);
}

const char *lm_profile_get_isa(const lm_profile *p) { return p->isa; }
lm_profile_mode lm_profile_get_mode(const lm_profile *p) { return p->mode; }
const char *lm_profile_get_units(const lm_profile *p) { return p->units; }
const char *lm_profile_get_created(const lm_profile *p) { return p->created; }
const lm_fingerprint *lm_profile_get_fingerprint(const lm_profile *p) {
  return &p->fp;
}

/* Replace *slot by a copy of s. */
static lm_status replace_text(char **slot, const char *s, const char *pre,
                              lm_error *err) {
  char *c = strdup(s);
  if (!c)
    return oom(pre, err);
  free(*slot);
  *slot = c;
  return LM_OK;
}

lm_status lm_profile_set_isa(lm_profile *p, const char *isa, lm_error *err) {
  lm_status s = check_isa(__func__, "isa", isa, err);
  return s ? s : replace_text(&p->isa, isa, __func__, err);
}

lm_status lm_profile_set_mode(lm_profile *p, lm_profile_mode mode,
                              lm_error *err) {
  if (!mode_ok(mode))
    return lm_error_set(err, LM_EINPUT, "%s: mode: unknown mode %d", __func__,
                        (int)mode);
  p->mode = mode;
  return LM_OK;
}

lm_status lm_profile_set_units(lm_profile *p, const char *units,
                               lm_error *err) {
  lm_status s = check_text(__func__, "units", units, err);
  return s ? s : replace_text(&p->units, units, __func__, err);
}

lm_status lm_profile_set_created(lm_profile *p, const char *iso8601,
                                 lm_error *err) {
  lm_status s = check_created(__func__, "created", iso8601, err);
  if (s == LM_OK)
    strcpy(p->created, iso8601);
  return s;
}

lm_status lm_profile_set_fingerprint(lm_profile *p, const lm_fingerprint *fp,
                                     lm_error *err) {
  lm_status s = check_fingerprint(__func__, fp, err);
  if (s == LM_OK)
    p->fp = *fp;
  return s;
}

/* A copy of t with its own strings. */
static lm_status term_copy(const lm_profile_term *t, lm_profile_term *out,
                           const char *pre, lm_error *err) {
  *out = *t;
  out->name = strdup(t->name);
  out->unit = strdup(t->unit);
  if (!out->name || !out->unit) {
    term_clear(out);
    return oom(pre, err);
  }
  return LM_OK;
}

static lm_status term_add(lm_profile *p, const lm_profile_term *t,
                          const char *pre, lm_error *err) {
  if (p->nsamples > 0 || p->nboot > 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: terms[%d]: terms are fixed once samples or "
                        "bootstrap vectors are aligned with them",
                        pre, p->nterms);
  lm_status s = check_term(p, p->nterms, t, pre, err);
  if (s)
    return s;
  if (!grow((void **)&p->terms, &p->capterms, p->nterms + 1, sizeof *p->terms))
    return oom(pre, err);
  s = term_copy(t, &p->terms[p->nterms], pre, err);
  if (s == LM_OK)
    p->nterms++;
  return s;
}

lm_status lm_profile_add_term(lm_profile *p, const lm_profile_term *t,
                              lm_error *err) {
  return term_add(p, t, __func__, err);
}

lm_status lm_profile_set_term(lm_profile *p, int i, const lm_profile_term *t,
                              lm_error *err) {
  if (i < 0 || i >= p->nterms)
    return lm_error_set(err, LM_EINPUT, "%s: terms[%d]: no such term (%d)",
                        __func__, i, p->nterms);
  lm_status s = check_term(p, i, t, __func__, err);
  lm_profile_term c;
  if (s || (s = term_copy(t, &c, __func__, err)))
    return s;
  term_clear(&p->terms[i]);
  p->terms[i] = c;
  return LM_OK;
}

int lm_profile_nterms(const lm_profile *p) { return p->nterms; }

const lm_profile_term *lm_profile_term_at(const lm_profile *p, int i) {
  return i >= 0 && i < p->nterms ? &p->terms[i] : NULL;
}

int lm_profile_term_index(const lm_profile *p, const char *name) {
  for (int i = 0; i < p->nterms; i++)
    if (strcmp(p->terms[i].name, name) == 0)
      return i;
  return -1;
}

static lm_status sample_add(lm_profile *p, const lm_profile_sample *x,
                            const char *pre, lm_error *err) {
  lm_status s = check_sample(p, x, pre, err);
  if (s)
    return s;
  int cap = p->capsamples;
  if (!grow((void **)&p->samples, &p->capsamples, p->nsamples + 1,
            sizeof *p->samples))
    return oom(pre, err);
  if (p->capsamples != cap) {
    double *r = realloc(p->residuals, (size_t)p->capsamples * sizeof *r);
    if (!r)
      return oom(pre, err);
    p->residuals = r;
  }
  lm_profile_sample *c = &p->samples[p->nsamples];
  *c = *x;
  c->bench = strdup(x->bench);
  c->family = strdup(x->family);
  double *f = malloc((size_t)(p->nterms ? p->nterms : 1) * sizeof *f);
  c->features = f;
  if (!c->bench || !c->family || !f) {
    free((char *)c->bench);
    free((char *)c->family);
    free(f);
    return oom(pre, err);
  }
  if (p->nterms > 0)
    memcpy(f, x->features, (size_t)p->nterms * sizeof *f);
  p->residuals[p->nsamples++] = 0;
  return LM_OK;
}

lm_status lm_profile_add_sample(lm_profile *p, const lm_profile_sample *s,
                                lm_error *err) {
  return sample_add(p, s, __func__, err);
}

int lm_profile_nsamples(const lm_profile *p) { return p->nsamples; }

const lm_profile_sample *lm_profile_sample_at(const lm_profile *p, int i) {
  return i >= 0 && i < p->nsamples ? &p->samples[i] : NULL;
}

static lm_status residuals_set(lm_profile *p, const double *r, int n,
                               const char *pre, lm_error *err) {
  if (n != p->nsamples)
    return lm_error_set(err, LM_EINPUT,
                        "%s: residuals: expected %d numbers (one per sample), "
                        "got %d",
                        pre, p->nsamples, n);
  for (int i = 0; i < n; i++) {
    char path[PATH_LEN];
    snprintf(path, sizeof path, "residuals[%d]", i);
    lm_status s = check_num(pre, path, r[i], WANT_FINITE, err);
    if (s)
      return s;
  }
  if (n > 0)
    memcpy(p->residuals, r, (size_t)n * sizeof *r);
  return LM_OK;
}

lm_status lm_profile_set_residuals(lm_profile *p, const double *r, int n,
                                   lm_error *err) {
  return residuals_set(p, r, n, __func__, err);
}

const double *lm_profile_get_residuals(const lm_profile *p) {
  return p->nsamples > 0 ? p->residuals : NULL;
}

lm_status lm_profile_set_diagnostics(lm_profile *p,
                                     const lm_profile_diagnostics *d,
                                     lm_error *err) {
  lm_status s = check_diagnostics(p, d, __func__, err);
  if (s == LM_OK)
    p->diag = *d;
  return s;
}

lm_profile_diagnostics lm_profile_get_diagnostics(const lm_profile *p) {
  return p->diag;
}

static lm_status loo_add(lm_profile *p, const char *bench, double rel_err,
                         const char *pre, lm_error *err) {
  char path[PATH_LEN], f[PATH_LEN];
  snprintf(path, sizeof path, "diagnostics.loo[%d]", p->nloo);
  lm_status s;
  if ((s = check_text(pre, join(f, path, "bench"), bench, err)) ||
      (s = check_num(pre, join(f, path, "rel_err"), rel_err, WANT_NONNEG, err)))
    return s;
  bool known = false;
  for (int i = 0; i < p->nsamples && !known; i++)
    known = strcmp(p->samples[i].bench, bench) == 0;
  if (!known)
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s.bench: \"%.80s\" is the bench of no sample",
                        pre, path, bench);
  for (int i = 0; i < p->nloo; i++)
    if (strcmp(p->loo[i].bench, bench) == 0)
      return lm_error_set(err, LM_EINPUT,
                          "%s: %s.bench: \"%.80s\" already has an error in "
                          "diagnostics.loo[%d]",
                          pre, path, bench, i);
  if (!grow((void **)&p->loo, &p->caploo, p->nloo + 1, sizeof *p->loo))
    return oom(pre, err);
  char *c = strdup(bench);
  if (!c)
    return oom(pre, err);
  p->loo[p->nloo++] = (lm_profile_loo){c, rel_err};
  return LM_OK;
}

lm_status lm_profile_add_loo(lm_profile *p, const char *bench, double rel_err,
                             lm_error *err) {
  return loo_add(p, bench, rel_err, __func__, err);
}

int lm_profile_nloo(const lm_profile *p) { return p->nloo; }

const lm_profile_loo *lm_profile_loo_at(const lm_profile *p, int i) {
  return i >= 0 && i < p->nloo ? &p->loo[i] : NULL;
}

/* Turn every number under j into a raw item holding its exact text, so
 * that cJSON prints it verbatim (see the top of this file). */
static lm_status exactify(cJSON *j, const char *pre, const char *path,
                          lm_error *err) {
  for (cJSON *c = j->child; c; c = c->next) {
    lm_status s = exactify(c, pre, path, err);
    if (s)
      return s;
  }
  if (!cJSON_IsNumber(j))
    return LM_OK;
  char text[40];
  fmt_double(j->valuedouble, text);
  if (!isfinite(j->valuedouble))
    return lm_error_set(err, LM_EINPUT,
                        "%s: %s: expected finite numbers only, got %s", pre,
                        path, text);
  char *raw = cJSON_malloc(strlen(text) + 1);
  if (!raw)
    return oom(pre, err);
  strcpy(raw, text);
  j->type = (j->type & ~0xFF) | cJSON_Raw;
  j->valuestring = raw;
  return LM_OK;
}

/* Store the object j (numbers made exact in place) as p's extra text. */
static lm_status extra_take(lm_profile *p, cJSON *j, const char *pre,
                            lm_error *err) {
  lm_status s = exactify(j, pre, "diagnostics.extra", err);
  if (s)
    return s;
  char *text = cJSON_PrintUnformatted(j);
  if (!text)
    return oom(pre, err);
  s = replace_text(&p->extra, text, pre, err);
  cJSON_free(text);
  return s;
}

lm_status lm_profile_set_extra(lm_profile *p, const char *json_object,
                               lm_error *err) {
  cJSON *j = json_object ? cJSON_ParseWithOpts(json_object, NULL, true) : NULL;
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return lm_error_set(err, LM_EINPUT,
                        "%s: diagnostics.extra: expected the text of a JSON "
                        "object",
                        __func__);
  }
  lm_status s = extra_take(p, j, __func__, err);
  cJSON_Delete(j);
  return s;
}

const char *lm_profile_get_extra(const lm_profile *p) { return p->extra; }

static lm_status bootstrap_set(lm_profile *p, const double *coefs, int b,
                               const char *pre, lm_error *err) {
  if (b < 0 || (b > 0 && !coefs))
    return lm_error_set(err, LM_EINPUT,
                        "%s: bootstrap: expected b >= 0 rows, got %d%s", pre, b,
                        b > 0 ? " and no values" : "");
  size_t nt = (size_t)p->nterms;
  for (int r = 0; r < b; r++)
    for (size_t k = 0; k < nt; k++) {
      char path[PATH_LEN];
      snprintf(path, sizeof path, "bootstrap[%d][%zu]", r, k);
      lm_status s = check_num(pre, path, coefs[r * nt + k], WANT_NONNEG, err);
      if (s)
        return s;
    }
  double *c = NULL;
  if (b > 0 && nt > 0) {
    c = malloc((size_t)b * nt * sizeof *c);
    if (!c)
      return oom(pre, err);
    memcpy(c, coefs, (size_t)b * nt * sizeof *c);
  }
  free(p->boot);
  p->boot = c;
  p->nboot = b;
  return LM_OK;
}

lm_status lm_profile_set_bootstrap(lm_profile *p, const double *coefs, int b,
                                   lm_error *err) {
  return bootstrap_set(p, coefs, b, __func__, err);
}

const double *lm_profile_get_bootstrap(const lm_profile *p, int *b) {
  *b = p->nboot;
  return p->nboot > 0 ? p->boot : NULL;
}

/* ---- writing ------------------------------------------------------------- */

/* Building a cJSON tree: any failed allocation sets oom, and the caller
 * checks once at the end. */
typedef struct Wr {
  bool oom;
} Wr;

static cJSON *wnum(double v) {
  char text[40];
  if (!isfinite(v))
    return cJSON_CreateNull(); /* only an infinite condition number */
  fmt_double(v, text);
  return cJSON_CreateRaw(text);
}

static cJSON *wint(int64_t v) {
  char text[24];
  snprintf(text, sizeof text, "%" PRId64, v);
  return cJSON_CreateRaw(text);
}

static cJSON *add(Wr *w, cJSON *obj, const char *key, cJSON *item) {
  if (!item || !obj || !cJSON_AddItemToObject(obj, key, item)) {
    w->oom = true;
    cJSON_Delete(item);
    return NULL;
  }
  return item;
}

static cJSON *push(Wr *w, cJSON *arr, cJSON *item) {
  if (!item || !arr || !cJSON_AddItemToArray(arr, item)) {
    w->oom = true;
    cJSON_Delete(item);
    return NULL;
  }
  return item;
}

static cJSON *wnums(Wr *w, const double *v, size_t n) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < n; i++)
    push(w, a, wnum(v[i]));
  return a;
}

static void write_fingerprint(Wr *w, cJSON *root, const lm_fingerprint *fp) {
  cJSON *o = add(w, root, "fingerprint", cJSON_CreateObject());
  add(w, o, "hash", cJSON_CreateString(fp->hash));
  add(w, o, "cpu_name", cJSON_CreateString(fp->cpu_name));
  add(w, o, "cpu_features", cJSON_CreateString(fp->cpu_features));
  add(w, o, "llvm_version", cJSON_CreateString(fp->llvm_version));
  add(w, o, "l1d_bytes", wint((int64_t)fp->l1d_bytes));
  add(w, o, "l2_bytes", wint((int64_t)fp->l2_bytes));
  add(w, o, "l3_bytes", wint((int64_t)fp->l3_bytes));
  add(w, o, "cores", wint(fp->cores));
}

static void write_terms(Wr *w, cJSON *root, const lm_profile *p) {
  cJSON *a = add(w, root, "terms", cJSON_CreateArray());
  for (int i = 0; i < p->nterms; i++) {
    const lm_profile_term *t = &p->terms[i];
    cJSON *o = push(w, a, cJSON_CreateObject());
    add(w, o, "name", cJSON_CreateString(t->name));
    add(w, o, "unit", cJSON_CreateString(t->unit));
    add(w, o, "coef", wnum(t->coef));
    add(w, o, "p5", wnum(t->p5));
    add(w, o, "p50", wnum(t->p50));
    add(w, o, "p95", wnum(t->p95));
    add(w, o, "lo", wnum(t->lo));
    add(w, o, "hi", wnum(t->hi));
    add(w, o, "flagged", cJSON_CreateBool(t->flagged));
  }
}

static void write_samples(Wr *w, cJSON *root, const lm_profile *p) {
  cJSON *a = add(w, root, "samples", cJSON_CreateArray());
  for (int i = 0; i < p->nsamples; i++) {
    const lm_profile_sample *s = &p->samples[i];
    cJSON *o = push(w, a, cJSON_CreateObject());
    add(w, o, "bench", cJSON_CreateString(s->bench));
    add(w, o, "family", cJSON_CreateString(s->family));
    add(w, o, "features", wnums(w, s->features, (size_t)p->nterms));
    add(w, o, "ns", wnum(s->ns));
    add(w, o, "min", wnum(s->min));
    add(w, o, "spread", wnum(s->spread));
    add(w, o, "reps", wint(s->reps));
  }
  add(w, root, "residuals", wnums(w, p->residuals, (size_t)p->nsamples));
}

static void write_diagnostics(Wr *w, cJSON *root, const lm_profile *p) {
  cJSON *o = add(w, root, "diagnostics", cJSON_CreateObject());
  add(w, o, "condition", wnum(p->diag.condition));
  add(w, o, "rank", wint(p->diag.rank));
  add(w, o, "rms_rel_err", wnum(p->diag.rms_rel_err));
  cJSON *a = add(w, o, "loo", cJSON_CreateArray());
  for (int i = 0; i < p->nloo; i++) {
    cJSON *l = push(w, a, cJSON_CreateObject());
    add(w, l, "bench", cJSON_CreateString(p->loo[i].bench));
    add(w, l, "rel_err", wnum(p->loo[i].rel_err));
  }
  /* the stored text is exact already; exactify again after parsing */
  cJSON *x = cJSON_Parse(p->extra);
  if (x && exactify(x, "", "", NULL) != LM_OK) {
    cJSON_Delete(x);
    x = NULL;
  }
  add(w, o, "extra", x);
}

static void write_bootstrap(Wr *w, cJSON *root, const lm_profile *p) {
  cJSON *a = add(w, root, "bootstrap", cJSON_CreateArray());
  size_t nt = (size_t)p->nterms;
  for (int r = 0; r < p->nboot; r++)
    push(w, a, wnums(w, p->boot ? p->boot + (size_t)r * nt : NULL, nt));
}

static lm_status to_text(const lm_profile *p, const char *pre, char **out,
                         lm_error *err) {
  *out = NULL;
  if (p->fp.cpu_name[0] == 0 && p->fp.hash[0] == 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: fingerprint: not set (lm_profile_set_fingerprint)",
                        pre);
  lm_status s = check_fingerprint(pre, &p->fp, err);
  if (s)
    return s;
  Wr w = {false};
  cJSON *root = cJSON_CreateObject();
  add(&w, root, "schema", cJSON_CreateString(LM_PROFILE_SCHEMA));
  add(&w, root, "isa", cJSON_CreateString(p->isa));
  add(&w, root, "mode", cJSON_CreateString(lm_profile_mode_name(p->mode)));
  add(&w, root, "units", cJSON_CreateString(p->units));
  add(&w, root, "created", cJSON_CreateString(p->created));
  write_fingerprint(&w, root, &p->fp);
  write_terms(&w, root, p);
  write_samples(&w, root, p);
  write_diagnostics(&w, root, p);
  write_bootstrap(&w, root, p);
  char *text = !w.oom && root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text)
    return oom(pre, err);
  size_t len = strlen(text);
  char *t = malloc(len + 2);
  if (!t) {
    cJSON_free(text);
    return oom(pre, err);
  }
  memcpy(t, text, len);
  t[len] = '\n';
  t[len + 1] = 0;
  cJSON_free(text);
  *out = t;
  return LM_OK;
}

lm_status lm_profile_to_json_text(const lm_profile *p, char **out,
                                  lm_error *err) {
  return to_text(p, __func__, out, err);
}

lm_status lm_profile_save(const lm_profile *p, const char *path,
                          lm_error *err) {
  char *text;
  lm_status s = to_text(p, path, &text, err);
  if (s)
    return s;
  s = lm_file_write_atomic(path, text, strlen(text), err);
  free(text);
  return s;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct Rd {
  const char *file;
  lm_error *err;
} Rd;

/* What a JSON value is, for "got ..." in messages. */
static void describe(const cJSON *j, char *buf, size_t n) {
  if (cJSON_IsNull(j))
    snprintf(buf, n, "null");
  else if (cJSON_IsTrue(j))
    snprintf(buf, n, "true");
  else if (cJSON_IsFalse(j))
    snprintf(buf, n, "false");
  else if (cJSON_IsNumber(j)) {
    char t[40];
    fmt_double(j->valuedouble, t);
    if (snprintf(buf, n, "%s%s", t,
                 isinf(j->valuedouble) ? " (out of the range of a double)" : "") >= (int)n)
      buf[n - 1] = 0; /* a message fragment: cutting it is harmless */
  } else if (cJSON_IsString(j)) {
    /* enough to recognise the value; control bytes would garble a
     * terminal */
    enum { SHOWN = 40 };
    const char *s = j->valuestring;
    size_t len = strlen(s), k = 0;
    char t[SHOWN + 1];
    for (; k < len && k < SHOWN; k++)
      t[k] = (unsigned char)s[k] < 0x20 ? '?' : s[k];
    t[k] = 0;
    snprintf(buf, n, "\"%s\"%s", t, len > SHOWN ? "..." : "");
  } else if (cJSON_IsArray(j))
    snprintf(buf, n, "an array");
  else if (cJSON_IsObject(j))
    snprintf(buf, n, "an object");
  else
    snprintf(buf, n, "an invalid value");
}

/* j is missing (NULL) or not what `expect` says. */
static lm_status rd_bad(Rd *r, const char *path, const char *expect,
                        const cJSON *j) {
  if (!j)
    return lm_error_set(r->err, LM_EINPUT, "%s: %s: missing field, expected %s",
                        r->file, path, expect);
  char got[64];
  describe(j, got, sizeof got);
  return lm_error_set(r->err, LM_EINPUT, "%s: %s: expected %s, got %s", r->file,
                      path, expect, got);
}

/* obj's member `key` (NULL if absent), with its path.  A key given twice
 * is an error: which one counts would be cJSON's choice, not the
 * author's. */
static lm_status rd_member(Rd *r, const cJSON *obj, const char *opath,
                           const char *key, char *path, const cJSON **out) {
  join(path, opath, key);
  *out = NULL;
  for (const cJSON *c = obj->child; c; c = c->next)
    if (c->string && strcmp(c->string, key) == 0) {
      if (*out)
        return lm_error_set(r->err, LM_EINPUT, "%s: %s: given twice", r->file,
                            path);
      *out = c;
    }
  return LM_OK;
}

static lm_status rd_typed(Rd *r, const cJSON *obj, const char *opath,
                          const char *key, int type, const char *expect,
                          const cJSON **out) {
  char path[PATH_LEN];
  lm_status s = rd_member(r, obj, opath, key, path, out);
  if (s)
    return s;
  if (!*out || ((*out)->type & 0xFF) != type)
    return rd_bad(r, path, expect, *out);
  return LM_OK;
}

static lm_status rd_object(Rd *r, const cJSON *obj, const char *opath,
                           const char *key, const cJSON **out) {
  return rd_typed(r, obj, opath, key, cJSON_Object, "an object", out);
}

static lm_status rd_array(Rd *r, const cJSON *obj, const char *opath,
                          const char *key, const cJSON **out) {
  return rd_typed(r, obj, opath, key, cJSON_Array, "an array", out);
}

/* A string of at most max bytes (0: any), non-empty unless allow_empty. */
static lm_status rd_string(Rd *r, const cJSON *obj, const char *opath,
                           const char *key, size_t max, bool allow_empty,
                           const char **out) {
  char path[PATH_LEN], expect[64];
  const cJSON *j;
  lm_status s = rd_member(r, obj, opath, key, path, &j);
  if (s)
    return s;
  int w = snprintf(expect, sizeof expect, "a %sstring",
                   allow_empty ? "" : "non-empty ");
  if (max)
    snprintf(expect + w, sizeof expect - (size_t)w, " of at most %zu bytes",
             max);
  if (!cJSON_IsString(j) || (!allow_empty && !j->valuestring[0]) ||
      (max && strlen(j->valuestring) > max))
    return rd_bad(r, path, expect, j);
  *out = j->valuestring;
  return LM_OK;
}

static lm_status rd_number_at(Rd *r, const cJSON *j, const char *path, Want w,
                              double *out) {
  if (w == WANT_CONDITION && cJSON_IsNull(j)) {
    *out = INFINITY;
    return LM_OK;
  }
  if (!cJSON_IsNumber(j) || !want_ok(j->valuedouble, w))
    return rd_bad(r, path, want_text(w), j);
  *out = j->valuedouble;
  return LM_OK;
}

static lm_status rd_number(Rd *r, const cJSON *obj, const char *opath,
                           const char *key, Want w, double *out) {
  char path[PATH_LEN];
  const cJSON *j;
  lm_status s = rd_member(r, obj, opath, key, path, &j);
  return s ? s : rd_number_at(r, j, path, w, out);
}

static lm_status rd_int(Rd *r, const cJSON *obj, const char *opath,
                        const char *key, int64_t lo, int64_t hi,
                        const char *why, int64_t *out) {
  char path[PATH_LEN], expect[96];
  const cJSON *j;
  lm_status s = rd_member(r, obj, opath, key, path, &j);
  if (s)
    return s;
  if (hi >= INT_MAX)
    snprintf(expect, sizeof expect, "an integer >= %" PRId64, lo);
  else
    snprintf(expect, sizeof expect,
             "an integer from %" PRId64 " to %" PRId64 "%s", lo, hi, why);
  double v = cJSON_IsNumber(j) ? j->valuedouble : NAN;
  if (!(v >= (double)lo && v <= (double)hi && v == floor(v)))
    return rd_bad(r, path, expect, j);
  *out = (int64_t)v;
  return LM_OK;
}

static lm_status rd_bool(Rd *r, const cJSON *obj, const char *opath,
                         const char *key, bool *out) {
  char path[PATH_LEN];
  const cJSON *j;
  lm_status s = rd_member(r, obj, opath, key, path, &j);
  if (s)
    return s;
  if (!cJSON_IsBool(j))
    return rd_bad(r, path, "true or false", j);
  *out = cJSON_IsTrue(j);
  return LM_OK;
}

/* An array of exactly n numbers. */
static lm_status rd_numbers(Rd *r, const cJSON *a, const char *path, int n,
                            const char *per, Want w, double *out) {
  int got = cJSON_GetArraySize(a);
  if (got != n)
    return lm_error_set(r->err, LM_EINPUT,
                        "%s: %s: expected %d numbers (one per %s), got %d",
                        r->file, path, n, per, got);
  int i = 0;
  for (const cJSON *c = a->child; c; c = c->next, i++) {
    char p[PATH_LEN];
    snprintf(p, sizeof p, "%s[%d]", path, i);
    lm_status s = rd_number_at(r, c, p, w, &out[i]);
    if (s)
      return s;
  }
  return LM_OK;
}

static bool schema_major(const char *s, long *major) {
  static const char prefix[] = "lanemap.profile/";
  if (strncmp(s, prefix, sizeof prefix - 1) != 0)
    return false;
  s += sizeof prefix - 1;
  if (!isdigit((unsigned char)*s))
    return false;
  char *end;
  *major = strtol(s, &end, 10);
  if (*end == '.') {
    if (!isdigit((unsigned char)end[1]))
      return false;
    strtol(end + 1, &end, 10);
  }
  return *end == 0;
}

static lm_status rd_schema(Rd *r, const cJSON *root,
                           lm_profile_load_info *info) {
  const char *expect = "a string \"lanemap.profile/<major>[.<minor>]\"";
  const cJSON *j;
  char path[PATH_LEN];
  lm_status s = rd_member(r, root, "", "schema", path, &j);
  if (s)
    return s;
  long major;
  if (!cJSON_IsString(j) || !schema_major(j->valuestring, &major))
    return rd_bad(r, path, expect, j);
  if (info)
    snprintf(info->schema, sizeof info->schema, "%s", j->valuestring);
  if (major != LM_PROFILE_SCHEMA_MAJOR)
    return lm_error_set(r->err, LM_EINPUT,
                        "%s: schema: %.80s is not supported: this build reads "
                        "%s (major version %d)",
                        r->file, j->valuestring, LM_PROFILE_SCHEMA,
                        LM_PROFILE_SCHEMA_MAJOR);
  return LM_OK;
}

static lm_status rd_fingerprint(Rd *r, const cJSON *root, lm_fingerprint *fp) {
  const char *o = "fingerprint";
  const cJSON *j;
  const char *hash = NULL, *name = NULL, *features = NULL, *llvm = NULL;
  int64_t v[3] = {0}, cores = 0;
  lm_status s;
  if ((s = rd_object(r, root, "", o, &j)) ||
      (s = rd_string(r, j, o, "hash", sizeof fp->hash - 1, false, &hash)) ||
      (s = rd_string(r, j, o, "cpu_name", sizeof fp->cpu_name - 1, false,
                     &name)) ||
      (s = rd_string(r, j, o, "cpu_features", sizeof fp->cpu_features - 1, true,
                     &features)) ||
      (s = rd_string(r, j, o, "llvm_version", sizeof fp->llvm_version - 1,
                     false, &llvm)) ||
      (s = rd_int(r, j, o, "l1d_bytes", 0, INT53_MAX, "", &v[0])) ||
      (s = rd_int(r, j, o, "l2_bytes", 0, INT53_MAX, "", &v[1])) ||
      (s = rd_int(r, j, o, "l3_bytes", 0, INT53_MAX, "", &v[2])) ||
      (s = rd_int(r, j, o, "cores", 1, INT_MAX, "", &cores)))
    return s;
  memset(fp, 0, sizeof *fp);
  strcpy(fp->hash, hash);
  strcpy(fp->cpu_name, name);
  strcpy(fp->cpu_features, features);
  strcpy(fp->llvm_version, llvm);
  fp->l1d_bytes = (uint64_t)v[0];
  fp->l2_bytes = (uint64_t)v[1];
  fp->l3_bytes = (uint64_t)v[2];
  fp->cores = (int)cores;
  return check_fingerprint(r->file, fp, r->err);
}

/* Each element of array a must be an object. */
static lm_status rd_element(Rd *r, const cJSON *c, const char *path) {
  return cJSON_IsObject(c) ? LM_OK : rd_bad(r, path, "an object", c);
}

static lm_status rd_terms(Rd *r, const cJSON *root, lm_profile *p) {
  const cJSON *a;
  lm_status s = rd_array(r, root, "", "terms", &a);
  int i = 0;
  for (const cJSON *c = a ? a->child : NULL; !s && c; c = c->next, i++) {
    char path[PATH_LEN];
    snprintf(path, sizeof path, "terms[%d]", i);
    lm_profile_term t = {0};
    (void)((s = rd_element(r, c, path)) ||
           (s = rd_string(r, c, path, "name", 0, false, &t.name)) ||
           (s = rd_string(r, c, path, "unit", 0, false, &t.unit)) ||
           (s = rd_number(r, c, path, "coef", WANT_NONNEG, &t.coef)) ||
           (s = rd_number(r, c, path, "p5", WANT_NONNEG, &t.p5)) ||
           (s = rd_number(r, c, path, "p50", WANT_NONNEG, &t.p50)) ||
           (s = rd_number(r, c, path, "p95", WANT_NONNEG, &t.p95)) ||
           (s = rd_number(r, c, path, "lo", WANT_NONNEG, &t.lo)) ||
           (s = rd_number(r, c, path, "hi", WANT_NONNEG, &t.hi)) ||
           (s = rd_bool(r, c, path, "flagged", &t.flagged)) ||
           (s = term_add(p, &t, r->file, r->err)));
  }
  return s;
}

static lm_status rd_samples(Rd *r, const cJSON *root, lm_profile *p) {
  const cJSON *a;
  lm_status s = rd_array(r, root, "", "samples", &a);
  if (s)
    return s;
  double *f = malloc((size_t)(p->nterms ? p->nterms : 1) * sizeof *f);
  if (!f)
    return oom(r->file, r->err);
  int i = 0;
  for (const cJSON *c = a->child; !s && c; c = c->next, i++) {
    char path[PATH_LEN], fpath[PATH_LEN];
    snprintf(path, sizeof path, "samples[%d]", i);
    lm_profile_sample x = {.features = f};
    const cJSON *fa;
    (void)((s = rd_element(r, c, path)) ||
           (s = rd_string(r, c, path, "bench", 0, false, &x.bench)) ||
           (s = rd_string(r, c, path, "family", 0, false, &x.family)) ||
           (s = rd_array(r, c, path, "features", &fa)) ||
           (s = rd_numbers(r, fa, join(fpath, path, "features"), p->nterms,
                           "term", WANT_NONNEG, f)) ||
           (s = rd_number(r, c, path, "ns", WANT_NONNEG, &x.ns)) ||
           (s = rd_number(r, c, path, "min", WANT_NONNEG, &x.min)) ||
           (s = rd_number(r, c, path, "spread", WANT_NONNEG, &x.spread)) ||
           (s = rd_int(r, c, path, "reps", 1, INT53_MAX, "", &x.reps)) ||
           (s = sample_add(p, &x, r->file, r->err)));
  }
  free(f);
  if (s)
    return s;
  s = rd_array(r, root, "", "residuals", &a);
  if (s)
    return s;
  double *res = malloc((size_t)(p->nsamples ? p->nsamples : 1) * sizeof *res);
  if (!res)
    return oom(r->file, r->err);
  (void)((s = rd_numbers(r, a, "residuals", p->nsamples, "sample", WANT_FINITE,
                         res)) ||
         (s = residuals_set(p, res, p->nsamples, r->file, r->err)));
  free(res);
  return s;
}

static lm_status rd_diagnostics(Rd *r, const cJSON *root, lm_profile *p) {
  const char *o = "diagnostics";
  const cJSON *d, *loo, *extra;
  lm_profile_diagnostics g;
  int64_t rank;
  lm_status s;
  if ((s = rd_object(r, root, "", o, &d)) ||
      (s = rd_number(r, d, o, "condition", WANT_CONDITION, &g.condition)) ||
      (s = rd_int(r, d, o, "rank", 0, p->nterms, " (the number of terms)",
                  &rank)) ||
      (s = rd_number(r, d, o, "rms_rel_err", WANT_NONNEG, &g.rms_rel_err)))
    return s;
  g.rank = (int)rank;
  if ((s = check_diagnostics(p, &g, r->file, r->err)))
    return s;
  p->diag = g;
  if ((s = rd_array(r, d, o, "loo", &loo)))
    return s;
  int i = 0;
  for (const cJSON *c = loo->child; !s && c; c = c->next, i++) {
    char path[PATH_LEN];
    snprintf(path, sizeof path, "diagnostics.loo[%d]", i);
    const char *bench;
    double e;
    (void)((s = rd_element(r, c, path)) ||
           (s = rd_string(r, c, path, "bench", 0, false, &bench)) ||
           (s = rd_number(r, c, path, "rel_err", WANT_NONNEG, &e)) ||
           (s = loo_add(p, bench, e, r->file, r->err)));
  }
  if (s || (s = rd_object(r, d, o, "extra", &extra)))
    return s;
  return extra_take(p, (cJSON *)extra, r->file, r->err);
}

static lm_status rd_bootstrap(Rd *r, const cJSON *root, lm_profile *p) {
  const cJSON *a;
  lm_status s = rd_array(r, root, "", "bootstrap", &a);
  if (s)
    return s;
  int b = cJSON_GetArraySize(a);
  size_t nt = (size_t)p->nterms;
  size_t nv = (size_t)b * nt;
  double *v = malloc((nv > 0 ? nv : 1) * sizeof *v);
  if (!v)
    return oom(r->file, r->err);
  int i = 0;
  for (const cJSON *c = a->child; !s && c; c = c->next, i++) {
    char path[PATH_LEN];
    snprintf(path, sizeof path, "bootstrap[%d]", i);
    if (!cJSON_IsArray(c))
      s = rd_bad(r, path, "an array of numbers (one per term)", c);
    else
      s = rd_numbers(r, c, path, p->nterms, "term", WANT_NONNEG,
                     v + (size_t)i * nt);
  }
  if (!s)
    s = bootstrap_set(p, v, b, r->file, r->err);
  free(v);
  return s;
}

static lm_status rd_profile(Rd *r, const cJSON *root, lm_profile **out,
                            lm_profile_load_info *info) {
  const char *isa = NULL, *mode = NULL, *units = NULL, *created = NULL;
  lm_profile_mode m = LM_PROFILE_DEFAULT;
  lm_status s;
  if ((s = rd_schema(r, root, info)) ||
      (s = rd_string(r, root, "", "isa", 0, false, &isa)) ||
      (s = check_isa(r->file, "isa", isa, r->err)) ||
      (s = rd_string(r, root, "", "mode", 0, false, &mode)))
    return s;
  if (!mode_find(mode, &m))
    return lm_error_set(r->err, LM_EINPUT,
                        "%s: mode: expected \"default\", \"quick\" or "
                        "\"full\", got \"%.80s\"",
                        r->file, mode);
  if ((s = rd_string(r, root, "", "units", 0, false, &units)) ||
      (s = rd_string(r, root, "", "created", 0, false, &created)) ||
      (s = check_created(r->file, "created", created, r->err)))
    return s;
  lm_profile *p = lm_profile_new(isa, m, r->err);
  if (!p)
    return r->err ? r->err->status : LM_ESYS;
  strcpy(p->created, created);
  (void)((s = replace_text(&p->units, units, r->file, r->err)) ||
         (s = rd_fingerprint(r, root, &p->fp)) || (s = rd_terms(r, root, p)) ||
         (s = rd_samples(r, root, p)) || (s = rd_diagnostics(r, root, p)) ||
         (s = rd_bootstrap(r, root, p)));
  if (s) {
    lm_profile_free(p);
    return s;
  }
  *out = p;
  return LM_OK;
}

/* Does the text end inside a string, an object or an array?  Then it was
 * cut off, whatever else is wrong with it, and that is the error to name
 * (cJSON points at the start of the value it could not finish, which is
 * far from the end for a file cut inside its last array). */
static bool ends_open(const char *t, size_t n) {
  long depth = 0;
  bool str = false, esc = false;
  for (size_t i = 0; i < n; i++) {
    char c = t[i];
    if (str) {
      if (esc)
        esc = false;
      else if (c == '\\')
        esc = true;
      else if (c == '"')
        str = false;
    } else if (c == '"')
      str = true;
    else if (c == '{' || c == '[')
      depth++;
    else if (c == '}' || c == ']')
      depth--;
  }
  return str || depth > 0;
}

static lm_status parse_json(const char *name, const char *text, size_t n,
                            cJSON **out, lm_error *err) {
  size_t last = n;
  while (last > 0 && isspace((unsigned char)text[last - 1]))
    last--;
  if (last == 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: empty file, expected a JSON profile object", name);
  const char *end = NULL;
  *out = cJSON_ParseWithLengthOpts(text, n, &end, false);
  size_t at = end && end >= text && end <= text + n ? (size_t)(end - text) : 0;
  const char *what = "invalid JSON";
  if (*out) {
    if (at >= last)
      return LM_OK;
    cJSON_Delete(*out);
    *out = NULL;
    what = "unexpected text after the JSON value";
    while (at < n && isspace((unsigned char)text[at]))
      at++;
  } else if (ends_open(text, n))
    return lm_error_set(err, LM_EINPUT,
                        "%s: truncated JSON: the text ends inside an object, "
                        "an array or a string",
                        name);
  int line = 1, col = 1;
  for (size_t i = 0; i < at; i++, col++)
    if (text[i] == '\n')
      line++, col = 0;
  return lm_error_set(err, LM_EINPUT, "%s:%d:%d: %s", name, line, col, what);
}

/* Compare p's fingerprint with this machine's and leave the verdict in
 * info. */
static void check_host(const char *name, const lm_profile *p,
                       lm_profile_load_info *info) {
  lm_fingerprint host;
  lm_error e = {0};
  if (lm_fingerprint_host(&host, &e) != LM_OK) {
    snprintf(info->warning, sizeof info->warning,
             "%.300s: cannot fingerprint this machine (%.1500s), so the "
             "profile's "
             "machine is not checked",
             name, e.msg);
    return;
  }
  info->fingerprint_checked = true;
  char diff[1400];
  info->fingerprint_diffs =
      lm_fingerprint_diff(&p->fp, &host, diff, sizeof diff);
  if (info->fingerprint_diffs > 0)
    snprintf(info->warning, sizeof info->warning,
             "%.300s: calibrated on another machine; fingerprint fields that "
             "differ (profile -> this machine): %s; predictions may have "
             "higher regret here: recalibrate on this machine",
             name, diff);
}

lm_status lm_profile_from_json_text(const char *name, const char *text,
                                    size_t n, lm_profile **out,
                                    lm_profile_load_info *info, lm_error *err) {
  *out = NULL;
  if (info)
    memset(info, 0, sizeof *info);
  cJSON *root;
  lm_status s = parse_json(name, text, n, &root, err);
  if (s)
    return s;
  Rd r = {name, err};
  if (!cJSON_IsObject(root)) {
    char got[64];
    describe(root, got, sizeof got);
    s = lm_error_set(err, LM_EINPUT,
                     "%s: expected a JSON object at the top level, got %s",
                     name, got);
  } else
    s = rd_profile(&r, root, out, info);
  cJSON_Delete(root);
  if (s == LM_OK && info)
    check_host(name, *out, info);
  return s;
}

lm_status lm_profile_load(const char *path, lm_profile **out,
                          lm_profile_load_info *info, lm_error *err) {
  *out = NULL;
  if (info)
    memset(info, 0, sizeof *info);
  char *text;
  size_t n;
  lm_status s = lm_file_read(path, &text, &n, err);
  if (s)
    return s;
  s = lm_profile_from_json_text(path, text, n, out, info, err);
  free(text);
  return s;
}

/* ---- cache --------------------------------------------------------------- */

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
  lm_status s = check_isa(__func__, "isa", isa, err);
  if (s)
    return s;
  if (!mode_ok(mode))
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
