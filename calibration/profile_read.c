/* A profile from JSON text: every field is read with its type and range
 * (lm_json), then handed to the same checked mutators the setters use, so
 * a file can hold nothing a program could not have built.  Fields the
 * format does not define are errors: a misspelt field would otherwise
 * be ignored in silence.  Messages name the field by its JSON path,
 * `p.json: $.terms[2].coef: expected a finite number >= 0, got -0.5`. */
#include "calibration/profile_internal.h"

#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A reader; strict unless the file is of a later minor version, whose
 * added fields this build does not know and skips (docs/profile.md). */
typedef struct Rd {
  lm_json_rd j;
  bool strict;
} Rd;

static lm_status fields(Rd *r, const cJSON *obj, const char *const known[]) {
  return r->strict ? lm_json_fields(&r->j, obj, known) : LM_OK;
}

/* A shared check named the field by its path in the profile; in a file,
 * that is a JSON path. */
static lm_status as_json(Rd *r, lm_status s) {
  if (s != LM_EINPUT || !r->j.err)
    return s;
  size_t n = strlen(r->j.file);
  char *m = r->j.err->msg;
  if (strncmp(m, r->j.file, n) == 0 && m[n] == ':' && m[n + 1] == ' ' &&
      m[n + 2] != '$') {
    lm_error inner = *r->j.err;
    lm_error_set(r->j.err, s, "%s: $.%s", r->j.file, inner.msg + n + 2);
  }
  return s;
}

static lm_status rd_number(Rd *r, const cJSON *obj, const char *key,
                           lm_profile_want w, double *out) {
  switch (w) {
  case LM_WANT_NONNEG:
    return lm_json_number(&r->j, obj, key, 0, 0, DBL_MAX, out);
  case LM_WANT_FINITE:
    return lm_json_number(&r->j, obj, key, 0, -DBL_MAX, DBL_MAX, out);
  case LM_WANT_CONDITION:
    *out = INFINITY; /* null */
    return lm_json_number(&r->j, obj, key, LM_JSON_NULL_OK, 1, DBL_MAX, out);
  }
  abort();
}

/* An array of exactly n numbers. */
static lm_status rd_numbers(Rd *r, const cJSON *a, int n, const char *per,
                            lm_profile_want w, double *out) {
  int got = cJSON_GetArraySize(a);
  if (got != n)
    return lm_json_error(&r->j, a, NULL,
                         "expected %d numbers (one per %s), got %d", n, per,
                         got);
  int i = 0;
  for (const cJSON *c = a->child; c; c = c->next, i++) {
    lm_status s = rd_number(r, c, NULL, w, &out[i]);
    if (s)
      return s;
  }
  return LM_OK;
}

static const char *const top_fields[] = {
    "schema",      "isa",   "mode",           "units",     "created",
    "fingerprint", "terms", "samples",        "residuals", "diagnostics",
    "bootstrap",   "noise", "noisy_families", NULL};
static const char *const fp_fields[] = {
    "hash",         "cpu_name",  "cpu_features",
    "llvm_version", "l1d_bytes", "l2_bytes",
    "l3_bytes",     "cores",     NULL};
static const char *const term_fields[] = {
    "name", "unit", "coef", "p5", "p50", "p95", "lo", "hi", "flagged", NULL};
static const char *const sample_fields[] = {
    "bench", "family", "features", "ns", "min", "spread", "reps", NULL};
static const char *const diag_fields[] = {"condition", "rank",  "rms_rel_err",
                                          "loo",       "extra", NULL};
static const char *const loo_fields[] = {"bench", "rel_err", NULL};
static const char *const noisy_fields[] = {"family", "reasons", "spread", NULL};

static bool schema_version(const char *s, long *major, long *minor) {
  static const char prefix[] = "lanemap.profile/";
  if (strncmp(s, prefix, sizeof prefix - 1) != 0)
    return false;
  s += sizeof prefix - 1;
  if (!isdigit((unsigned char)*s))
    return false;
  char *end;
  *major = strtol(s, &end, 10);
  *minor = 0;
  if (*end == '.') {
    if (!isdigit((unsigned char)end[1]))
      return false;
    *minor = strtol(end + 1, &end, 10);
  }
  return *end == 0;
}

static lm_status rd_schema(Rd *r, const cJSON *root,
                           lm_profile_load_info *info) {
  const char *expect = "a string \"lanemap.profile/<major>[.<minor>]\"";
  const cJSON *j = lm_json_get(root, "schema");
  long major, minor;
  if (!cJSON_IsString(j) || !schema_version(j->valuestring, &major, &minor))
    return lm_json_expected(&r->j, root, "schema", expect);
  if (info)
    snprintf(info->schema, sizeof info->schema, "%s", j->valuestring);
  if (major != LM_PROFILE_SCHEMA_MAJOR)
    return lm_json_error(&r->j, root, "schema",
                         "%.80s is not supported: this build reads %s (major "
                         "version %d)",
                         j->valuestring, LM_PROFILE_SCHEMA,
                         LM_PROFILE_SCHEMA_MAJOR);
  /* this build knows the fields of every minor version up to its own */
  r->strict = minor <= LM_PROFILE_SCHEMA_MINOR;
  return LM_OK;
}

static lm_status rd_fingerprint(Rd *r, const cJSON *root, lm_fingerprint *fp) {
  const cJSON *j = NULL;
  const char *hash = NULL, *name = NULL, *features = NULL, *llvm = NULL;
  int64_t v[3] = {0}, cores = 0;
  lm_status s;
  if ((s = lm_json_object(&r->j, root, "fingerprint", 0, &j)) ||
      (s = fields(r, j, fp_fields)) ||
      (s = lm_json_string(&r->j, j, "hash", 0, sizeof fp->hash - 1, &hash)) ||
      (s = lm_json_string(&r->j, j, "cpu_name", 0, sizeof fp->cpu_name - 1,
                          &name)) ||
      (s = lm_json_string(&r->j, j, "cpu_features", LM_JSON_EMPTY_OK,
                          sizeof fp->cpu_features - 1, &features)) ||
      (s = lm_json_string(&r->j, j, "llvm_version", 0,
                          sizeof fp->llvm_version - 1, &llvm)) ||
      (s = lm_json_int(&r->j, j, "l1d_bytes", 0, 0, LM_PROFILE_INT53, &v[0])) ||
      (s = lm_json_int(&r->j, j, "l2_bytes", 0, 0, LM_PROFILE_INT53, &v[1])) ||
      (s = lm_json_int(&r->j, j, "l3_bytes", 0, 0, LM_PROFILE_INT53, &v[2])) ||
      (s = lm_json_int(&r->j, j, "cores", 0, 1, INT_MAX, &cores)))
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
  return as_json(r, lm_profile_check_fingerprint(r->j.file, fp, r->j.err));
}

static lm_status rd_terms(Rd *r, const cJSON *root, lm_profile *p) {
  const cJSON *a = NULL;
  lm_status s = lm_json_array(&r->j, root, "terms", 0, 0, INT_MAX, &a);
  for (const cJSON *c = a ? a->child : NULL; !s && c; c = c->next) {
    lm_profile_term t = {0};
    (void)((s = lm_json_object(&r->j, c, NULL, 0, &c)) ||
           (s = fields(r, c, term_fields)) ||
           (s = lm_json_string(&r->j, c, "name", 0, 0, &t.name)) ||
           (s = lm_json_string(&r->j, c, "unit", 0, 0, &t.unit)) ||
           (s = rd_number(r, c, "coef", LM_WANT_NONNEG, &t.coef)) ||
           (s = rd_number(r, c, "p5", LM_WANT_NONNEG, &t.p5)) ||
           (s = rd_number(r, c, "p50", LM_WANT_NONNEG, &t.p50)) ||
           (s = rd_number(r, c, "p95", LM_WANT_NONNEG, &t.p95)) ||
           (s = rd_number(r, c, "lo", LM_WANT_NONNEG, &t.lo)) ||
           (s = rd_number(r, c, "hi", LM_WANT_NONNEG, &t.hi)) ||
           (s = lm_json_bool(&r->j, c, "flagged", 0, &t.flagged)) ||
           (s = as_json(r, lm_profile_term_add(p, &t, r->j.file, r->j.err))));
  }
  return s;
}

static lm_status rd_samples(Rd *r, const cJSON *root, lm_profile *p) {
  const cJSON *a = NULL;
  lm_status s = lm_json_array(&r->j, root, "samples", 0, 0, INT_MAX, &a);
  if (s)
    return s;
  double *f = malloc((size_t)(p->nterms ? p->nterms : 1) * sizeof *f);
  if (!f)
    return lm_profile_oom(r->j.file, r->j.err);
  for (const cJSON *c = a->child; !s && c; c = c->next) {
    lm_profile_sample x = {.features = f};
    const cJSON *fa = NULL;
    int64_t reps = 0;
    (void)((s = lm_json_object(&r->j, c, NULL, 0, &c)) ||
           (s = fields(r, c, sample_fields)) ||
           (s = lm_json_string(&r->j, c, "bench", 0, 0, &x.bench)) ||
           (s = lm_json_string(&r->j, c, "family", 0, 0, &x.family)) ||
           (s = lm_json_array(&r->j, c, "features", 0, 0, INT_MAX, &fa)) ||
           (s = rd_numbers(r, fa, p->nterms, "term", LM_WANT_NONNEG, f)) ||
           (s = rd_number(r, c, "ns", LM_WANT_NONNEG, &x.ns)) ||
           (s = rd_number(r, c, "min", LM_WANT_NONNEG, &x.min)) ||
           (s = rd_number(r, c, "spread", LM_WANT_NONNEG, &x.spread)) ||
           (s = lm_json_int(&r->j, c, "reps", 0, 1, LM_PROFILE_INT53, &reps)) ||
           (x.reps = reps, 0) ||
           (s = as_json(r, lm_profile_sample_add(p, &x, r->j.file, r->j.err))));
  }
  free(f);
  if (s || (s = lm_json_array(&r->j, root, "residuals", 0, 0, INT_MAX, &a)))
    return s;
  double *res = malloc((size_t)(p->nsamples ? p->nsamples : 1) * sizeof *res);
  if (!res)
    return lm_profile_oom(r->j.file, r->j.err);
  (void)((s = rd_numbers(r, a, p->nsamples, "sample", LM_WANT_FINITE, res)) ||
         (s = as_json(r, lm_profile_residuals_set(p, res, p->nsamples,
                                                  r->j.file, r->j.err))));
  free(res);
  return s;
}

static lm_status rd_diagnostics(Rd *r, const cJSON *root, lm_profile *p) {
  const cJSON *d = NULL, *loo = NULL, *extra = NULL;
  lm_profile_diagnostics g;
  int64_t rank = 0;
  lm_status s;
  if ((s = lm_json_object(&r->j, root, "diagnostics", 0, &d)) ||
      (s = fields(r, d, diag_fields)) ||
      (s = rd_number(r, d, "condition", LM_WANT_CONDITION, &g.condition)))
    return s;
  const cJSON *jr = lm_json_get(d, "rank");
  if (cJSON_IsNumber(jr) && jr->valuedouble == floor(jr->valuedouble) &&
      (jr->valuedouble < 0 || jr->valuedouble > p->nterms))
    return lm_json_error(&r->j, d, "rank",
                         "expected an integer from 0 to %d (the number of "
                         "terms), got %.0f",
                         p->nterms, jr->valuedouble);
  if ((s = lm_json_int(&r->j, d, "rank", 0, 0, p->nterms, &rank)) ||
      (s = rd_number(r, d, "rms_rel_err", LM_WANT_NONNEG, &g.rms_rel_err)))
    return s;
  g.rank = (int)rank;
  if ((s = as_json(r,
                   lm_profile_check_diagnostics(p, &g, r->j.file, r->j.err))))
    return s;
  p->diag = g;
  if ((s = lm_json_array(&r->j, d, "loo", 0, 0, INT_MAX, &loo)))
    return s;
  for (const cJSON *c = loo->child; !s && c; c = c->next) {
    const char *bench = NULL;
    double e = 0;
    (void)((s = lm_json_object(&r->j, c, NULL, 0, &c)) ||
           (s = fields(r, c, loo_fields)) ||
           (s = lm_json_string(&r->j, c, "bench", 0, 0, &bench)) ||
           (s = rd_number(r, c, "rel_err", LM_WANT_NONNEG, &e)) ||
           (s = as_json(r,
                        lm_profile_loo_add(p, bench, e, r->j.file, r->j.err))));
  }
  if (s || (s = lm_json_object(&r->j, d, "extra", 0, &extra)))
    return s;
  return as_json(r,
                 lm_profile_extra_take(p, (cJSON *)extra, r->j.file, r->j.err));
}

static lm_status rd_bootstrap(Rd *r, const cJSON *root, lm_profile *p) {
  const cJSON *a = NULL;
  lm_status s = lm_json_array(&r->j, root, "bootstrap", 0, 0, INT_MAX, &a);
  if (s)
    return s;
  int b = cJSON_GetArraySize(a);
  size_t nt = (size_t)p->nterms;
  size_t nv = (size_t)b * nt;
  double *v = malloc((nv > 0 ? nv : 1) * sizeof *v);
  if (!v)
    return lm_profile_oom(r->j.file, r->j.err);
  int i = 0;
  for (const cJSON *c = a->child; !s && c; c = c->next, i++) {
    if (!cJSON_IsArray(c))
      s = lm_json_expected(&r->j, c, NULL,
                           "an array of numbers (one per term)");
    else
      s = rd_numbers(r, c, p->nterms, "term", LM_WANT_NONNEG,
                     v + (size_t)i * nt);
  }
  if (!s)
    s = as_json(r, lm_profile_bootstrap_set(p, v, b, r->j.file, r->j.err));
  free(v);
  return s;
}

/* The reasons of a noisy family: names of LM_NOISE_* bits, at least one. */
static lm_status rd_reasons(Rd *r, const cJSON *obj, unsigned *out) {
  const char *expect = "one of \"spread\", \"canary\", \"busy\", "
                       "\"steal\", \"workers\", \"discord\"";
  const cJSON *a = NULL;
  lm_status s = lm_json_array(&r->j, obj, "reasons", 0, 1, INT_MAX, &a);
  *out = 0;
  for (const cJSON *c = a ? a->child : NULL; !s && c; c = c->next) {
    unsigned bit =
        cJSON_IsString(c) ? lm_noise_reason_bit(c->valuestring) : 0;
    if (!bit)
      return lm_json_expected(&r->j, c, NULL, expect);
    *out |= bit;
  }
  return s;
}

/* The noise verdict (lanemap.profile/1.1), optional: a file without it
 * loads with no verdict recorded. */
static lm_status rd_noise(Rd *r, const cJSON *root, lm_profile *p) {
  const cJSON *j = NULL, *a = NULL;
  lm_status s = lm_json_object(&r->j, root, "noise", LM_JSON_OPTIONAL, &j);
  if (s)
    return s;
  if (!j) {
    if (lm_json_get(root, "noisy_families"))
      return lm_json_error(&r->j, root, "noisy_families",
                           "given without \"noise\", the verdict it belongs "
                           "to");
    return LM_OK;
  }
  lm_noise n;
  lm_error inner = {0};
  if (lm_noise_from_json(j, &n, &inner) != LM_OK)
    return lm_json_error(&r->j, root, "noise", "%s", inner.msg);
  if ((s = as_json(r, lm_profile_noise_set(p, &n, r->j.file, r->j.err))) ||
      (s = lm_json_array(&r->j, root, "noisy_families", LM_JSON_OPTIONAL, 0,
                         INT_MAX, &a)))
    return s;
  for (const cJSON *c = a ? a->child : NULL; !s && c; c = c->next) {
    lm_profile_noisy_family f = {0};
    (void)((s = lm_json_object(&r->j, c, NULL, 0, &c)) ||
           (s = fields(r, c, noisy_fields)) ||
           (s = lm_json_string(&r->j, c, "family", 0, 0, &f.family)) ||
           (s = rd_reasons(r, c, &f.reasons)) ||
           (s = rd_number(r, c, "spread", LM_WANT_NONNEG, &f.spread)) ||
           (s = as_json(r, lm_profile_noisy_add(p, &f, r->j.file, r->j.err))));
  }
  return s;
}

static lm_status rd_profile(Rd *r, const cJSON *root, lm_profile **out,
                            lm_profile_load_info *info) {
  const char *isa = NULL, *mode = NULL, *units = NULL, *created = NULL;
  lm_profile_mode m = LM_PROFILE_DEFAULT;
  lm_status s;
  if ((s = rd_schema(r, root, info)) || (s = fields(r, root, top_fields)) ||
      (s = lm_json_string(&r->j, root, "isa", 0, 0, &isa)) ||
      (s = as_json(r, lm_profile_check_isa(r->j.file, "isa", isa, r->j.err))) ||
      (s = lm_json_string(&r->j, root, "mode", 0, 0, &mode)))
    return s;
  if (!lm_profile_mode_find(mode, &m))
    return lm_json_expected(&r->j, root, "mode",
                            "\"default\", \"quick\" or \"full\"");
  if ((s = lm_json_string(&r->j, root, "units", 0, 0, &units)) ||
      (s = lm_json_string(&r->j, root, "created", 0, 0, &created)) ||
      (s = as_json(r, lm_profile_check_created(r->j.file, "created", created,
                                               r->j.err))))
    return s;
  lm_profile *p = lm_profile_new(isa, m, r->j.err);
  if (!p)
    return r->j.err ? r->j.err->status : LM_ESYS;
  strcpy(p->created, created);
  (void)((s = lm_profile_replace_text(&p->units, units, r->j.file, r->j.err)) ||
         (s = rd_fingerprint(r, root, &p->fp)) || (s = rd_terms(r, root, p)) ||
         (s = rd_samples(r, root, p)) || (s = rd_diagnostics(r, root, p)) ||
         (s = rd_bootstrap(r, root, p)) || (s = rd_noise(r, root, p)));
  if (s) {
    lm_profile_free(p);
    return s;
  }
  *out = p;
  return LM_OK;
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
  lm_status s = lm_json_parse(name, text, n, &root, err);
  if (s)
    return s;
  Rd r = {{name, root, err}, true};
  if (!cJSON_IsObject(root))
    s = lm_json_expected(&r.j, root, NULL, "a profile object");
  else
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
  lm_status s = lm_json_read_file(path, &text, &n, err);
  if (s)
    return s;
  s = lm_profile_from_json_text(path, text, n, out, info, err);
  free(text);
  return s;
}
