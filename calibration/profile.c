/* Calibration profile: one ISA target's fitted costs on one machine, and
 * the evidence behind them, kept together in one JSON file.
 *
 * A profile is only worth its checks.  It is read by the cost model, the
 * solver and the held-out harness long after the calibration that wrote
 * it, perhaps on another machine or by another build, and a wrong number in
 * it turns into a wrong plan without any error.  So the object keeps its
 * invariants from the first setter on (every value is checked when it is
 * set, terms are fixed once samples are aligned with them), the writer and
 * the reader share those checks (profile_check.c), and the reader
 * (profile_read.c) checks every field of the file and names the one that
 * is wrong by its JSON path.  This file holds the object itself. */
#define _GNU_SOURCE
#include "calibration/profile_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static void now_iso8601(char buf[24]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, 24, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

lm_profile *lm_profile_new(const char *isa, lm_profile_mode mode,
                           lm_error *err) {
  if (lm_profile_check_isa("lm_profile_new", "isa", isa, err))
    return NULL;
  if (!lm_profile_mode_ok(mode)) {
    lm_error_set(err, LM_EINPUT, "lm_profile_new: mode: unknown mode %d",
                 (int)mode);
    return NULL;
  }
  lm_profile *p = calloc(1, sizeof *p);
  if (!p || !(p->isa = strdup(isa)) || !(p->units = strdup("ns")) ||
      !(p->extra = strdup("{}"))) {
    lm_profile_free(p);
    lm_profile_oom("lm_profile_new", err);
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
  lm_profile_noise_free(p);
  free(p);
}

static bool same_double(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
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
  return same_doubles(a->boot, b->boot, (size_t)a->nboot * nt) &&
         lm_profile_noise_equal(a, b);
}

const char *lm_profile_get_isa(const lm_profile *p) { return p->isa; }
lm_profile_mode lm_profile_get_mode(const lm_profile *p) { return p->mode; }
const char *lm_profile_get_units(const lm_profile *p) { return p->units; }
const char *lm_profile_get_created(const lm_profile *p) { return p->created; }
const lm_fingerprint *lm_profile_get_fingerprint(const lm_profile *p) {
  return &p->fp;
}

/* Replace *slot by a copy of s. */
lm_status lm_profile_replace_text(char **slot, const char *s, const char *pre,
                                  lm_error *err) {
  char *c = strdup(s);
  if (!c)
    return lm_profile_oom(pre, err);
  free(*slot);
  *slot = c;
  return LM_OK;
}

lm_status lm_profile_set_isa(lm_profile *p, const char *isa, lm_error *err) {
  lm_status s = lm_profile_check_isa(__func__, "isa", isa, err);
  return s ? s : lm_profile_replace_text(&p->isa, isa, __func__, err);
}

lm_status lm_profile_set_mode(lm_profile *p, lm_profile_mode mode,
                              lm_error *err) {
  if (!lm_profile_mode_ok(mode))
    return lm_error_set(err, LM_EINPUT, "%s: mode: unknown mode %d", __func__,
                        (int)mode);
  p->mode = mode;
  return LM_OK;
}

lm_status lm_profile_set_units(lm_profile *p, const char *units,
                               lm_error *err) {
  lm_status s = lm_profile_check_text(__func__, "units", units, err);
  return s ? s : lm_profile_replace_text(&p->units, units, __func__, err);
}

lm_status lm_profile_set_created(lm_profile *p, const char *iso8601,
                                 lm_error *err) {
  lm_status s = lm_profile_check_created(__func__, "created", iso8601, err);
  if (s == LM_OK)
    strcpy(p->created, iso8601);
  return s;
}

lm_status lm_profile_set_fingerprint(lm_profile *p, const lm_fingerprint *fp,
                                     lm_error *err) {
  lm_status s = lm_profile_check_fingerprint(__func__, fp, err);
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
    return lm_profile_oom(pre, err);
  }
  return LM_OK;
}

lm_status lm_profile_term_add(lm_profile *p, const lm_profile_term *t,
                              const char *pre, lm_error *err) {
  if (p->nsamples > 0 || p->nboot > 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: terms[%d]: terms are fixed once samples or "
                        "bootstrap vectors are aligned with them",
                        pre, p->nterms);
  lm_status s = lm_profile_check_term(p, p->nterms, t, pre, err);
  if (s)
    return s;
  if (!grow((void **)&p->terms, &p->capterms, p->nterms + 1, sizeof *p->terms))
    return lm_profile_oom(pre, err);
  s = term_copy(t, &p->terms[p->nterms], pre, err);
  if (s == LM_OK)
    p->nterms++;
  return s;
}

lm_status lm_profile_add_term(lm_profile *p, const lm_profile_term *t,
                              lm_error *err) {
  return lm_profile_term_add(p, t, __func__, err);
}

lm_status lm_profile_set_term(lm_profile *p, int i, const lm_profile_term *t,
                              lm_error *err) {
  if (i < 0 || i >= p->nterms)
    return lm_error_set(err, LM_EINPUT, "%s: terms[%d]: no such term (%d)",
                        __func__, i, p->nterms);
  lm_status s = lm_profile_check_term(p, i, t, __func__, err);
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

lm_status lm_profile_sample_add(lm_profile *p, const lm_profile_sample *x,
                                const char *pre, lm_error *err) {
  lm_status s = lm_profile_check_sample(p, x, pre, err);
  if (s)
    return s;
  int cap = p->capsamples;
  if (!grow((void **)&p->samples, &p->capsamples, p->nsamples + 1,
            sizeof *p->samples))
    return lm_profile_oom(pre, err);
  if (p->capsamples != cap) {
    double *r = realloc(p->residuals, (size_t)p->capsamples * sizeof *r);
    if (!r)
      return lm_profile_oom(pre, err);
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
    return lm_profile_oom(pre, err);
  }
  if (p->nterms > 0)
    memcpy(f, x->features, (size_t)p->nterms * sizeof *f);
  p->residuals[p->nsamples++] = 0;
  return LM_OK;
}

lm_status lm_profile_add_sample(lm_profile *p, const lm_profile_sample *s,
                                lm_error *err) {
  return lm_profile_sample_add(p, s, __func__, err);
}

int lm_profile_nsamples(const lm_profile *p) { return p->nsamples; }

const lm_profile_sample *lm_profile_sample_at(const lm_profile *p, int i) {
  return i >= 0 && i < p->nsamples ? &p->samples[i] : NULL;
}

lm_status lm_profile_residuals_set(lm_profile *p, const double *r, int n,
                                   const char *pre, lm_error *err) {
  if (n != p->nsamples)
    return lm_error_set(err, LM_EINPUT,
                        "%s: residuals: expected %d numbers (one per sample), "
                        "got %d",
                        pre, p->nsamples, n);
  for (int i = 0; i < n; i++) {
    char path[LM_PROFILE_PATH_LEN];
    snprintf(path, sizeof path, "residuals[%d]", i);
    lm_status s = lm_profile_check_num(pre, path, r[i], LM_WANT_FINITE, err);
    if (s)
      return s;
  }
  if (n > 0)
    memcpy(p->residuals, r, (size_t)n * sizeof *r);
  return LM_OK;
}

lm_status lm_profile_set_residuals(lm_profile *p, const double *r, int n,
                                   lm_error *err) {
  return lm_profile_residuals_set(p, r, n, __func__, err);
}

const double *lm_profile_get_residuals(const lm_profile *p) {
  return p->nsamples > 0 ? p->residuals : NULL;
}

lm_status lm_profile_set_diagnostics(lm_profile *p,
                                     const lm_profile_diagnostics *d,
                                     lm_error *err) {
  lm_status s = lm_profile_check_diagnostics(p, d, __func__, err);
  if (s == LM_OK)
    p->diag = *d;
  return s;
}

lm_profile_diagnostics lm_profile_get_diagnostics(const lm_profile *p) {
  return p->diag;
}

lm_status lm_profile_loo_add(lm_profile *p, const char *bench, double rel_err,
                             const char *pre, lm_error *err) {
  char path[LM_PROFILE_PATH_LEN], f[LM_PROFILE_PATH_LEN];
  snprintf(path, sizeof path, "diagnostics.loo[%d]", p->nloo);
  lm_status s;
  if ((s = lm_profile_check_text(pre, lm_profile_join(f, path, "bench"), bench,
                                 err)) ||
      (s = lm_profile_check_num(pre, lm_profile_join(f, path, "rel_err"),
                                rel_err, LM_WANT_NONNEG, err)))
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
    return lm_profile_oom(pre, err);
  char *c = strdup(bench);
  if (!c)
    return lm_profile_oom(pre, err);
  p->loo[p->nloo++] = (lm_profile_loo){c, rel_err};
  return LM_OK;
}

lm_status lm_profile_add_loo(lm_profile *p, const char *bench, double rel_err,
                             lm_error *err) {
  return lm_profile_loo_add(p, bench, rel_err, __func__, err);
}

int lm_profile_nloo(const lm_profile *p) { return p->nloo; }

const lm_profile_loo *lm_profile_loo_at(const lm_profile *p, int i) {
  return i >= 0 && i < p->nloo ? &p->loo[i] : NULL;
}

/* Store the object j (numbers made exact in place) as p's extra text. */
/* The first number under j that is not finite, or NULL. */
static const cJSON *nonfinite(const cJSON *j) {
  if (cJSON_IsNumber(j) && !isfinite(j->valuedouble))
    return j;
  for (const cJSON *c = j->child; c; c = c->next) {
    const cJSON *b = nonfinite(c);
    if (b)
      return b;
  }
  return NULL;
}

lm_status lm_profile_extra_take(lm_profile *p, cJSON *j, const char *pre,
                                lm_error *err) {
  const cJSON *bad = nonfinite(j);
  if (bad) {
    char text[LM_JSON_NUM_LEN];
    lm_json_fmt_double(bad->valuedouble, text);
    return lm_error_set(err, LM_EINPUT,
                        "%s: diagnostics.extra: expected finite numbers only, "
                        "got %s",
                        pre, text);
  }
  lm_status s = lm_json_exact(j, err);
  if (s)
    return s;
  char *text = cJSON_PrintUnformatted(j);
  if (!text)
    return lm_profile_oom(pre, err);
  s = lm_profile_replace_text(&p->extra, text, pre, err);
  cJSON_free(text);
  return s;
}

lm_status lm_profile_set_extra(lm_profile *p, const char *json_object,
                               lm_error *err) {
  cJSON *j = NULL;
  lm_error e = {0};
  if (json_object && lm_json_parse("diagnostics.extra", json_object,
                                   strlen(json_object), &j, &e) != LM_OK)
    return lm_error_set(err, LM_EINPUT, "%s: %s", __func__, e.msg);
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return lm_error_set(err, LM_EINPUT,
                        "%s: diagnostics.extra: expected the text of a JSON "
                        "object",
                        __func__);
  }
  lm_status s = lm_profile_extra_take(p, j, __func__, err);
  cJSON_Delete(j);
  return s;
}

const char *lm_profile_get_extra(const lm_profile *p) { return p->extra; }

lm_status lm_profile_bootstrap_set(lm_profile *p, const double *coefs, int b,
                                   const char *pre, lm_error *err) {
  if (b < 0 || (b > 0 && !coefs))
    return lm_error_set(err, LM_EINPUT,
                        "%s: bootstrap: expected b >= 0 rows, got %d%s", pre, b,
                        b > 0 ? " and no values" : "");
  size_t nt = (size_t)p->nterms;
  for (int r = 0; r < b; r++)
    for (size_t k = 0; k < nt; k++) {
      char path[LM_PROFILE_PATH_LEN];
      snprintf(path, sizeof path, "bootstrap[%d][%zu]", r, k);
      lm_status s = lm_profile_check_num(pre, path, coefs[r * nt + k],
                                         LM_WANT_NONNEG, err);
      if (s)
        return s;
    }
  double *c = NULL;
  if (b > 0 && nt > 0) {
    c = malloc((size_t)b * nt * sizeof *c);
    if (!c)
      return lm_profile_oom(pre, err);
    memcpy(c, coefs, (size_t)b * nt * sizeof *c);
  }
  free(p->boot);
  p->boot = c;
  p->nboot = b;
  return LM_OK;
}

lm_status lm_profile_set_bootstrap(lm_profile *p, const double *coefs, int b,
                                   lm_error *err) {
  return lm_profile_bootstrap_set(p, coefs, b, __func__, err);
}

const double *lm_profile_get_bootstrap(const lm_profile *p, int *b) {
  *b = p->nboot;
  return p->nboot > 0 ? p->boot : NULL;
}
