/* Training the learned correction on measured cases, and judging it by
 * leave-one-kernel-out cross-validation (docs/learned.md).
 *
 * The training cases are evaluation records of the suite and of its
 * validation shapes: every variant the oracle timed is one row
 * (lm_learned_row of the analytic prediction under the given profile),
 * its target the log of its measured time over that prediction, less the
 * case's mean of those logs.  A pick compares the variants of one shape,
 * so only the residual's differences within a case decide it; the case's
 * common level is what the trees carry over to a new kernel least well
 * (learning it too cost cross-validated picks 10.7% against 5.1%,
 * docs/learned.md), so they are not asked for it.  The corrected time
 * ranks the variants of a shape; it does not correct the shape's level.  Each case
 * weighs 1 in all, shared by its rows, so a kernel with 400 variants does
 * not outweigh one with 80.  Contended variants and cases measured under
 * interference (their noise verdict) are left out: their times say more
 * about the neighbours than about the code.
 *
 * Cross-validation leaves one kernel (by name) out at a time: the trees
 * are trained on the other kernels' rows and pick a variant for each case
 * of the left-out kernel, among the variants the oracle timed, by the
 * corrected prediction; the analytic model picks by its own.  Both are
 * scored against the case's measured best.  That is the question the
 * held-out sets ask (an operator never seen), answered on training data
 * only, so the default between the two models is chosen here and never on
 * a held-out result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/calibrate.h"
#include "lanemap/heldout.h"
#include "lanemap/profile.h"

/* One row's case, kernel and what it is scored on. */
typedef struct Row {
  int c;            /* case index */
  int kern;         /* kernel index (by name) */
  double measured;  /* ns */
  double analytic;  /* ns */
} Row;

typedef struct Data {
  int n, cap;
  Row *row;
  double *x; /* [n][LM_LEARNED_NFEAT] */
  double *y, *w;
  int nkern;
  char **kname;
} Data;

static void data_free(Data *d) {
  free(d->row);
  free(d->x);
  free(d->y);
  free(d->w);
  for (int i = 0; i < d->nkern; i++)
    free(d->kname[i]);
  free(d->kname);
  memset(d, 0, sizeof *d);
}

static int grow(Data *d, int need) {
  if (need <= d->cap)
    return 1;
  int cap = d->cap ? d->cap * 2 : 1024;
  while (cap < need)
    cap *= 2;
  Row *r = realloc(d->row, sizeof *r * (size_t)cap);
  if (r)
    d->row = r;
  double *x = realloc(d->x, sizeof *x * (size_t)cap * LM_LEARNED_NFEAT);
  if (x)
    d->x = x;
  double *y = realloc(d->y, sizeof *y * (size_t)cap);
  if (y)
    d->y = y;
  double *w = realloc(d->w, sizeof *w * (size_t)cap);
  if (w)
    d->w = w;
  if (!r || !x || !y || !w)
    return 0;
  d->cap = cap;
  return 1;
}

static int kernel_index(Data *d, const char *name) {
  for (int i = 0; i < d->nkern; i++)
    if (strcmp(d->kname[i], name) == 0)
      return i;
  char **k = realloc(d->kname, sizeof *k * (size_t)(d->nkern + 1));
  if (!k)
    return -1;
  d->kname = k;
  if (!(k[d->nkern] = strdup(name)))
    return -1;
  return d->nkern++;
}

/* Append one row: variant v of kernel k at shape sh, priced p, measured
 * ns, of case ci and kernel kern; its target is log(measured / analytic)
 * until close_case centres it.  0 when out of memory. */
static int add_row(Data *d, const lm_kernel *k, const lm_variant *v,
                   const lm_shape *sh, const lm_prediction *p, double measured,
                   int ci, int kern) {
  if (!grow(d, d->n + 1))
    return 0;
  lm_learned_row(k, v, sh, p, d->x + (size_t)d->n * LM_LEARNED_NFEAT);
  d->y[d->n] = log(measured / p->ns);
  d->row[d->n] = (Row){ci, kern, measured, p->ns};
  d->n++;
  return 1;
}

/* Rows first..d->n are one case: each weighs 1/n of it, and the case's
 * own level (the mean of their targets), which a pick cannot use, is
 * taken off.  Returns the rows. */
static int close_case(Data *d, int first) {
  int n = d->n - first;
  double mean = 0;
  for (int r = first; r < d->n; r++) {
    d->w[r] = 1.0 / n;
    mean += d->y[r] / n;
  }
  for (int r = first; r < d->n; r++)
    d->y[r] -= mean;
  return n;
}

/* Append the rows of case ci (none for ragged rows, a noisy case or a
 * case with nothing timed, which are counted in res). */
static lm_status case_rows(const lm_learn_opts *o, const lm_eval_case *c,
                           int ci, Data *d, lm_learn_result *res,
                           lm_error *err) {
  lm_kernel *k = NULL;
  lm_status st = lm_kernel_load(c->kernel, &k, err);
  if (st != LM_OK)
    return st;
  lm_shape sh;
  if ((st = lm_shape_bind(k, c->R, c->C, c->extra, &sh, err)) != LM_OK)
    goto done;
  if (k->rowlen_param >= 0) { /* priced from the data's row lengths */
    res->skipped_ragged++;
    goto done;
  }
  if (c->noise.noisy) { /* measured under interference: not a target */
    res->skipped_noisy++;
    goto done;
  }
  int kern = kernel_index(d, k->name), first = d->n;
  if (kern < 0) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  for (int i = 0; i < c->nvariants; i++) {
    const lm_eval_variant *ev = &c->v[i];
    if (!(ev->measured > 0) || !isfinite(ev->measured) || ev->contended ||
        ev->verified == 0)
      continue;
    lm_variant v;
    lm_prediction p;
    if ((st = lm_variant_parse(ev->variant, &v, err)) != LM_OK ||
        (st = lm_cost_predict(o->profile, k, &v, &sh, &p, err)) != LM_OK)
      goto done;
    if (!(p.ns > 0) || !isfinite(p.ns))
      continue;
    if (!add_row(d, k, &v, &sh, &p, ev->measured, ci, kern)) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto done;
    }
  }
  if (close_case(d, first) > 0)
    res->ncases++;
done:
  lm_kernel_free(k);
  return st;
}

/* The calibration samples as training cases.  A profile keeps every
 * benchmark's two sizes (N and 2N rows; the larger counts are 2N), and the
 * benchmark list is rebuilt from the profile's ISA, mode and fingerprint's
 * caches, as calibration built it.  Samples of one source at one shape
 * form a case; only a case with two or more variants says something about
 * a ranking (one row less its own mean is 0), so single ones are dropped.
 * Ragged benchmarks are priced from their data's row lengths and are left
 * out, as ragged suite cases are.  The analytic model was fitted on these
 * very samples, so their residuals are in-sample: small, and smaller than
 * a suite case's (docs/learned.md). */
#define CALIB_KERNEL (-2) /* trained on in every fold, never scored */

typedef struct CalRow {
  const lm_calib_bench *b;
  int64_t R;
  double ns;
} CalRow;

static int same_case(const CalRow *a, const CalRow *b) {
  return a->R == b->R && a->b->C == b->b->C &&
         strcmp(a->b->source, b->b->source) == 0;
}

/* The benchmark's N and 2N samples: the one with the smaller counts is N. */
static int bench_sizes(const lm_profile *p, const lm_calib_bench *b,
                       CalRow *out) {
  int nt = lm_profile_nterms(p), n = 0;
  double sum[2] = {0, 0};
  for (int i = 0; i < lm_profile_nsamples(p) && n < 2; i++) {
    const lm_profile_sample *s = lm_profile_sample_at(p, i);
    if (strcmp(s->bench, b->name) != 0 || !(s->min > 0))
      continue;
    for (int t = 0; t < nt; t++)
      sum[n] += s->features[t];
    out[n++] = (CalRow){b, b->R, s->min};
  }
  if (n == 2) {
    int big = sum[1] >= sum[0];
    out[big].R = 2 * b->R;
    out[!big].R = b->R;
  }
  return n == 2 ? 2 : 0;
}

/* Append one calibration case (rows[0..n), one source and shape). */
static lm_status calib_case(const lm_learn_opts *o, const CalRow *rows, int n,
                            int ci, Data *d, lm_learn_result *res,
                            lm_error *err) {
  lm_kernel *k = NULL;
  lm_status st = lm_kernel_parse("calibration", rows[0].b->source,
                                 strlen(rows[0].b->source), &k, err);
  if (st != LM_OK)
    return st;
  lm_shape sh;
  int first = d->n;
  if ((st = lm_shape_bind(k, rows[0].R, rows[0].b->C, NULL, &sh, err)))
    goto done;
  for (int i = 0; i < n; i++) {
    lm_variant v;
    lm_prediction p;
    lm_error e = {0};
    if (lm_variant_parse(rows[i].b->variant, &v, &e) != LM_OK ||
        lm_variant_check(k, &v, &e) != LM_OK ||
        lm_cost_predict(o->profile, k, &v, &sh, &p, &e) != LM_OK ||
        !(p.ns > 0) || !isfinite(p.ns))
      continue; /* a benchmark this target does not run */
    if (!add_row(d, k, &v, &sh, &p, rows[i].ns, ci, CALIB_KERNEL)) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto done;
    }
  }
  if (d->n - first < 2) { /* nothing to rank */
    d->n = first;
    goto done;
  }
  res->calib_rows += close_case(d, first);
  res->calib_cases++;
  res->ncases++;
done:
  lm_kernel_free(k);
  return st;
}

static lm_status calib_cases(const lm_learn_opts *o, int c0, Data *d,
                             lm_learn_result *res, lm_error *err) {
  const lm_profile *p = o->profile;
  lm_isa isa;
  lm_status st = lm_isa_parse(lm_profile_get_isa(p), &isa, err);
  if (st != LM_OK)
    return st;
  lm_caches cc;
  lm_caches_from_fingerprint(lm_profile_get_fingerprint(p), &cc);
  lm_calib_bench *b = NULL;
  int nb = lm_calib_benches(isa, lm_profile_get_mode(p) == LM_PROFILE_QUICK,
                            &cc, &b);
  CalRow *rows = malloc(sizeof *rows * (size_t)(2 * (nb > 0 ? nb : 1)));
  unsigned char *used = calloc((size_t)(2 * (nb > 0 ? nb : 1)), 1);
  CalRow *set = malloc(sizeof *set * (size_t)(2 * (nb > 0 ? nb : 1)));
  if (nb < 0 || !rows || !used || !set) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  int n = 0;
  for (int i = 0; i < nb; i++)
    if (!b[i].mixed && !(b[i].density > 0))
      n += bench_sizes(p, &b[i], rows + n);
  int ci = c0;
  for (int i = 0; i < n && st == LM_OK; i++) {
    if (used[i])
      continue;
    int m = 0;
    for (int j = i; j < n; j++)
      if (!used[j] && same_case(&rows[i], &rows[j]))
        used[j] = 1, set[m++] = rows[j];
    if (m >= 2)
      st = calib_case(o, set, m, ci++, d, res, err);
  }
done:
  free(rows);
  free(used);
  free(set);
  lm_calib_benches_free(b, nb);
  return st;
}

/* Geomean regret and the RMS of log errors over the cases of rows idx[n]
 * (grouped by case) when each case picks the argmin of pred[j] (pred[j]
 * prices row idx[j]; the first on ties).  The log errors are taken within
 * a case, its mean removed: the error a ranking of its variants sees. */
static void score(const Data *d, const int *idx, int n, const double *pred,
                  double *geo, double *rms, int *ncases) {
  double lsum = 0, esum = 0;
  int cases = 0;
  for (int a = 0, b; a < n; a = b) {
    int c = d->row[idx[a]].c, arg = a;
    double best = INFINITY, mean = 0;
    for (b = a; b < n && d->row[idx[b]].c == c; b++) {
      const Row *r = &d->row[idx[b]];
      best = fmin(best, r->measured);
      if (pred[b] < pred[arg])
        arg = b;
      mean += log(pred[b] / r->measured);
    }
    mean /= b - a;
    for (int j = a; j < b; j++) {
      double e = log(pred[j] / d->row[idx[j]].measured) - mean;
      esum += e * e;
    }
    lsum += log(d->row[idx[arg]].measured / best);
    cases++;
  }
  *geo = cases ? exp(lsum / cases) - 1 : NAN;
  *rms = n ? sqrt(esum / n) : NAN;
  *ncases = cases;
}

/* Train on the rows whose kernel is not `out` (-1: all of them). */
static lm_status train(const lm_learn_opts *o, const Data *d, int out,
                       lm_learned **model, lm_error *err) {
  int m = 0;
  for (int r = 0; r < d->n; r++)
    m += d->row[r].kern != out;
  if (m == 0)
    return lm_error_set(err, LM_EINPUT, "learn: no training rows");
  double *x = malloc(sizeof *x * (size_t)m * LM_LEARNED_NFEAT);
  double *y = malloc(sizeof *y * (size_t)m), *w = malloc(sizeof *w * (size_t)m);
  lm_status st = LM_OK;
  if (!x || !y || !w) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  for (int r = 0, j = 0; r < d->n; r++) {
    if (d->row[r].kern == out)
      continue;
    memcpy(x + (size_t)j * LM_LEARNED_NFEAT, d->x + (size_t)r * LM_LEARNED_NFEAT,
           sizeof *x * LM_LEARNED_NFEAT);
    y[j] = d->y[r];
    w[j] = d->w[r];
    j++;
  }
  st = lm_learned_train(&o->model, x, m, LM_LEARNED_NFEAT, y, w,
                        lm_learned_row_names(), model, err);
done:
  free(x);
  free(y);
  free(w);
  return st;
}

/* The rows of kernel kern, grouped by case (rows are appended case by
 * case, so their order already groups them). */
static int rows_of(const Data *d, int kern, int *idx) {
  int n = 0;
  for (int r = 0; r < d->n; r++)
    if (d->row[r].kern == kern)
      idx[n++] = r;
  return n;
}

static lm_status fold(const lm_learn_opts *o, const Data *d, int kern,
                      lm_learn_fold *f, double *pa, double *pl, lm_error *err) {
  int *idx = malloc(sizeof *idx * (size_t)(d->n ? d->n : 1));
  lm_learned *m = NULL;
  lm_status st = idx ? LM_OK : lm_error_set(err, LM_ESYS, "out of memory");
  int n = 0;
  if (st == LM_OK)
    n = rows_of(d, kern, idx);
  if (st == LM_OK)
    st = train(o, d, kern, &m, err);
  double *delta = NULL;
  if (st == LM_OK && !(delta = malloc(sizeof *delta * (size_t)(n ? n : 1))))
    st = lm_error_set(err, LM_ESYS, "out of memory");
  double *x = NULL;
  if (st == LM_OK && !(x = malloc(sizeof *x * (size_t)(n ? n : 1) * LM_LEARNED_NFEAT)))
    st = lm_error_set(err, LM_ESYS, "out of memory");
  for (int j = 0; st == LM_OK && j < n; j++)
    memcpy(x + (size_t)j * LM_LEARNED_NFEAT, d->x + (size_t)idx[j] * LM_LEARNED_NFEAT,
           sizeof *x * LM_LEARNED_NFEAT);
  if (st == LM_OK)
    st = lm_learned_predict(m, x, n, delta, err);
  if (st == LM_OK) {
    for (int j = 0; j < n; j++) {
      pa[j] = d->row[idx[j]].analytic;
      pl[j] = lm_learned_apply(pa[j], delta[j]);
    }
    f->kernel = strdup(d->kname[kern]);
    f->rows = n;
    score(d, idx, n, pa, &f->geo_analytic, &f->rms_analytic, &f->cases);
    score(d, idx, n, pl, &f->geo_learned, &f->rms_learned, &f->cases);
    if (!f->kernel)
      st = lm_error_set(err, LM_ESYS, "out of memory");
  }
  free(x);
  free(delta);
  free(idx);
  lm_learned_free(m);
  return st;
}

void lm_learn_defaults(lm_learn_opts *o) {
  memset(o, 0, sizeof *o);
  lm_learned_defaults(&o->model);
  o->calib = 0; /* chosen by cross-validation (docs/learned.md) */
}

lm_status lm_learn(const lm_learn_opts *o, const lm_eval_case *cases, int n,
                   lm_learn_result *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  if (!o || !o->profile)
    return lm_error_set(err, LM_EINPUT, "learn: a profile is required");
  Data d = {0};
  lm_status st = LM_OK;
  for (int i = 0; i < n && st == LM_OK; i++)
    st = case_rows(o, &cases[i], i, &d, out, err);
  if (st == LM_OK && o->calib)
    st = calib_cases(o, n, &d, out, err);
  out->rows = d.n;
  if (st == LM_OK && d.nkern < 2)
    st = lm_error_set(err, LM_EINPUT,
                      "learn: the cases hold %d kernel(s) with timed variants; "
                      "leave-one-kernel-out needs at least 2",
                      d.nkern);
  double *pa = NULL, *pl = NULL;
  if (st == LM_OK) {
    pa = malloc(sizeof *pa * (size_t)d.n);
    pl = malloc(sizeof *pl * (size_t)d.n);
    out->folds = calloc((size_t)d.nkern, sizeof *out->folds);
    if (!pa || !pl || !out->folds)
      st = lm_error_set(err, LM_ESYS, "out of memory");
  }
  /* every fold's picks, pooled over the cases: the CV figures */
  double la = 0, ll = 0, ea = 0, el = 0;
  int ncv = 0, nrows = 0;
  for (int k = 0; st == LM_OK && k < d.nkern; k++) {
    lm_learn_fold *f = &out->folds[k];
    st = fold(o, &d, k, f, pa, pl, err);
    out->nfolds = k + 1;
    if (st != LM_OK)
      break;
    la += f->cases * log1p(f->geo_analytic);
    ll += f->cases * log1p(f->geo_learned);
    ea += f->rows * f->rms_analytic * f->rms_analytic;
    el += f->rows * f->rms_learned * f->rms_learned;
    ncv += f->cases;
    nrows += f->rows;
  }
  if (st == LM_OK) {
    out->cv_geo_analytic = exp(la / ncv) - 1;
    out->cv_geo_learned = exp(ll / ncv) - 1;
    out->cv_rms_analytic = sqrt(ea / nrows);
    out->cv_rms_learned = sqrt(el / nrows);
    out->learned_better = out->cv_geo_learned < out->cv_geo_analytic;
    st = train(o, &d, -1, &out->model, err);
  }
  free(pa);
  free(pl);
  data_free(&d);
  if (st != LM_OK)
    lm_learn_result_free(out);
  return st;
}

void lm_learn_result_free(lm_learn_result *r) {
  if (!r)
    return;
  for (int i = 0; i < r->nfolds; i++)
    free(r->folds[i].kernel);
  free(r->folds);
  lm_learned_free(r->model);
  memset(r, 0, sizeof *r);
}
