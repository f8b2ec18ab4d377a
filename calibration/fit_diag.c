/* The calibration fit and its diagnostics: NNLS, Huber reweighting, and the
 * numbers that say whether to trust the coefficients.
 *
 * A calibration run has a few dozen to a few hundred rows, and a handful of
 * them are broken: a benchmark that met a frequency change, a neighbour, a
 * page fault storm.  Least squares lets one such row move every
 * coefficient, so the fit reweights by Huber's rule (iteratively
 * reweighted least squares): rows whose standardized residual exceeds k
 * robust standard deviations keep a weight falling as 1/|r|, which bounds
 * their pull while rows within k keep full weight.  The scale is the median
 * absolute residual times 1.4826, which a few broken rows cannot inflate.
 *
 * The diagnostics answer separate questions.  The condition number and
 * rank of the (weighted, column-scaled) design say whether the benchmarks
 * separate the terms at all.  Residuals say how well the model fits the
 * rows it saw; leave-one-out errors how well it predicts a row (or a whole
 * benchmark) it did not see.  The bootstrap spread of each coefficient says
 * how much it depends on which rows happened to be measured, and its B
 * coefficient vectors give the spread of any prediction (DESIGN.md §9,
 * uncertainty).  The plausibility check catches a coefficient that fits
 * but cannot be right, e.g. a gather cheaper than a load.  Every refit
 * (leave-one-out, bootstrap) runs the same procedure as the fit itself,
 * NNLS then Huber, warm-started from the full fit's coefficients. */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibration/nnls_internal.h"
#include "lanemap/timing.h"

/* Huber's k = 1.345 gives 95% of least squares' efficiency on normal
 * errors (Huber 1981; the usual default, as in R's MASS::rlm). */
#define LM_FIT_HUBER_K 1.345
/* 1/Φ^{-1}(3/4): turns the median absolute deviation of normal errors into
 * their standard deviation. */
#define LM_FIT_MAD_TO_SIGMA 1.4826
/* Reweighting rounds at most; Huber IRLS usually settles in 5-15. */
#define LM_FIT_HUBER_MAX_ITER 50
#define LM_FIT_HUBER_TOL 1e-6
/* 200 resamples: each 5% tail then holds 10 of them. */
#define LM_FIT_BOOTSTRAP 200
/* The robust scale never drops below this fraction of the RMS of
 * sqrt(w) b: a MAD of 0 (an exact fit on most rows) would otherwise divide
 * by zero, and residuals that small are round-off. */
#define LM_FIT_SCALE_FLOOR 1e-9
/* Bounds that only reject nonsense. */
#define LM_FIT_MAX_ROUNDS 100000
#define LM_FIT_MAX_BOOTSTRAP 1000000

void lm_fit_defaults(lm_fit_opts *o) {
  memset(o, 0, sizeof *o);
  o->nnls_max_iter = 0;
  o->huber_k = LM_FIT_HUBER_K;
  o->huber_max_iter = LM_FIT_HUBER_MAX_ITER;
  o->huber_tol = LM_FIT_HUBER_TOL;
  o->loo = 1;
  o->bootstrap = LM_FIT_BOOTSTRAP;
  o->seed = 1;
}

lm_status lm_fit_opts_check(const lm_fit_opts *o, int n, lm_error *err) {
  if (!o)
    return lm_error_set(err, LM_EINPUT, "fit: options are NULL");
  if (o->nnls_max_iter < 0)
    return lm_error_set(err, LM_EINPUT, "fit: nnls_max_iter = %d is < 0",
                        o->nnls_max_iter);
  if (!(o->huber_k > 0) || !isfinite(o->huber_k))
    return lm_error_set(err, LM_EINPUT,
                        "fit: huber_k = %g: must be finite and > 0",
                        o->huber_k);
  if (o->huber_max_iter < 0 || o->huber_max_iter > LM_FIT_MAX_ROUNDS)
    return lm_error_set(err, LM_EINPUT,
                        "fit: huber_max_iter = %d, need 0 to %d",
                        o->huber_max_iter, LM_FIT_MAX_ROUNDS);
  if (!(o->huber_tol >= 0) || !isfinite(o->huber_tol))
    return lm_error_set(err, LM_EINPUT,
                        "fit: huber_tol = %g: must be finite and >= 0",
                        o->huber_tol);
  if (o->loo != 0 && o->loo != 1)
    return lm_error_set(err, LM_EINPUT, "fit: loo = %d, need 0 or 1", o->loo);
  if (o->bootstrap < 0 || o->bootstrap > LM_FIT_MAX_BOOTSTRAP)
    return lm_error_set(err, LM_EINPUT, "fit: bootstrap = %d, need 0 to %d",
                        o->bootstrap, LM_FIT_MAX_BOOTSTRAP);
  for (int k = 0; k < n && o->lo && o->hi; k++)
    if (o->lo[k] > o->hi[k])
      return lm_error_set(err, LM_EINPUT, "fit: lo[%d] = %g > hi[%d] = %g", k,
                          o->lo[k], k, o->hi[k]);
  return LM_OK;
}

void lm_fit_result_free(lm_fit_result *r) {
  if (!r)
    return;
  free(r->theta);
  free(r->huber);
  free(r->weight);
  free(r->resid);
  free(r->sv);
  free(r->loo);
  free(r->boot);
  free(r->p5);
  free(r->p50);
  free(r->p95);
  free(r->flag);
  memset(r, 0, sizeof *r);
}

/* ---- the robust fit ------------------------------------------------------ */

typedef struct lm_fit_pair {
  double v;
  int c;
} lm_fit_pair;

typedef struct lm_fit_ctx {
  const lm_fit_opts *o;
  int m, n;
  const double *A, *b, *w; /* w is never NULL here */
  lm_nnls_ws *ws;
  int *freq;         /* [m] multiplicity of each row in the current refit */
  double *ew;        /* [m] weights of one solve: w · freq · huber */
  double *h;         /* [m] Huber factors of the current refit */
  double *d;         /* [n] column norms of sqrt(w · freq) A */
  double *xn;        /* [n] the next iterate */
  lm_fit_pair *pair; /* [m] median scratch */
} lm_fit_ctx;

static int lm_fit_cmp_pair(const void *a, const void *b) {
  double x = ((const lm_fit_pair *)a)->v, y = ((const lm_fit_pair *)b)->v;
  return (x > y) - (x < y);
}

/* Median of the k values counted with multiplicity c (the average of the
 * two middle ones for an even total); sorts p.  NaN when nothing counts. */
static double lm_fit_wmedian(lm_fit_pair *p, int k) {
  long total = 0;
  for (int a = 0; a < k; a++)
    total += p[a].c;
  if (total == 0)
    return NAN;
  qsort(p, (size_t)k, sizeof *p, lm_fit_cmp_pair);
  long lo = (total - 1) / 2, hi = total / 2, seen = 0;
  double vlo = NAN;
  for (int a = 0; a < k; a++) {
    seen += p[a].c;
    if (isnan(vlo) && seen > lo)
      vlo = p[a].v;
    if (seen > hi)
      return 0.5 * (vlo + p[a].v);
  }
  return vlo;
}

static double lm_fit_predict_row(const lm_fit_ctx *c, int i, const double *x) {
  double t = 0;
  for (int k = 0; k < c->n; k++)
    t += c->A[(size_t)i * c->n + k] * x[k];
  return t;
}

/* The robust scale 1.4826·median|r_i| of the standardized residuals
 * r_i = sqrt(w_i)(b_i - A_i x) over the rows in the refit, with the floor.
 * The MAD is taken about 0, not the median: a fit centres its residuals,
 * and a bias it leaves belongs in the scale. */
static double lm_fit_scale(lm_fit_ctx *c, const double *x) {
  int k = 0;
  double size = 0;
  long count = 0;
  for (int i = 0; i < c->m; i++) {
    if (c->freq[i] == 0 || c->w[i] == 0)
      continue;
    double sw = sqrt(c->w[i]);
    c->pair[k].v = fabs(sw * (c->b[i] - lm_fit_predict_row(c, i, x)));
    c->pair[k].c = c->freq[i];
    k++;
    size += (double)c->freq[i] * c->w[i] * c->b[i] * c->b[i];
    count += c->freq[i];
  }
  if (count == 0)
    return 1.0; /* no rows: nothing to scale, any positive value will do */
  double s = LM_FIT_MAD_TO_SIGMA * lm_fit_wmedian(c->pair, k);
  double floor = LM_FIT_SCALE_FLOOR * sqrt(size / (double)count);
  if (!(floor > 0))
    floor = DBL_MIN;
  return s > floor ? s : floor;
}

/* NNLS then Huber IRLS over the rows counted by c->freq, from warm (NULL =
 * cold).  Leaves the Huber factors in c->h. */
static lm_status lm_fit_robust(lm_fit_ctx *c, const double *warm, double *x,
                               int *iters, int *converged, double *scale,
                               lm_fit_info *info, lm_error *err) {
  const lm_fit_opts *o = c->o;
  int m = c->m, n = c->n;
  for (int i = 0; i < m; i++) {
    c->h[i] = 1.0;
    c->ew[i] = c->w[i] * c->freq[i];
  }
  for (int k = 0; k < n; k++) {
    double s = 0;
    for (int i = 0; i < m; i++) {
      double a = c->A[(size_t)i * n + k];
      s += c->ew[i] * a * a;
    }
    c->d[k] = sqrt(s);
  }
  lm_status rc = lm_nnls_solve(c->ws, c->A, c->b, c->ew, warm, o->nnls_max_iter,
                               x, info, err);
  if (rc)
    return rc;
  *iters = 0;
  *converged = o->huber_max_iter == 0;
  *scale = lm_fit_scale(c, x);
  for (int it = 0; it < o->huber_max_iter; it++) {
    double s = lm_fit_scale(c, x), ks = o->huber_k * s;
    for (int i = 0; i < m; i++) {
      double r = fabs(sqrt(c->w[i]) * (c->b[i] - lm_fit_predict_row(c, i, x)));
      c->h[i] = r <= ks ? 1.0 : ks / r;
      c->ew[i] = c->w[i] * c->freq[i] * c->h[i];
    }
    rc = lm_nnls_solve(c->ws, c->A, c->b, c->ew, x, o->nnls_max_iter, c->xn,
                       info, err);
    if (rc)
      return rc;
    double change = 0, size = 0;
    for (int k = 0; k < n; k++) {
      change = fmax(change, c->d[k] * fabs(c->xn[k] - x[k]));
      size = fmax(size, c->d[k] * fabs(c->xn[k]));
    }
    memcpy(x, c->xn, (size_t)n * sizeof *x);
    *iters = it + 1;
    *scale = s;
    if (change <= o->huber_tol * size) {
      *converged = 1;
      break;
    }
  }
  return LM_OK;
}

/* ---- diagnostics -----------------------------------------------------------
 */

/* Singular values of sqrt(weight) A restricted to the k columns cols[]
 * (unit-norm columns, zero columns left zero), with the condition number
 * and the numerical rank.  sv has min(m,k) entries. */
static lm_status lm_fit_design_svd(const lm_fit_ctx *c, const double *weight,
                                   const int *cols, int k, double *sv,
                                   double *cond, int *rank, lm_error *err) {
  int m = c->m, n = c->n;
  *cond = 1.0;
  *rank = 0;
  if (k == 0)
    return LM_OK;
  int mn = m < k ? m : k;
  double *a = malloc((size_t)m * (size_t)k * sizeof *a);
  double *superb = malloc((size_t)mn * sizeof *superb);
  lm_status rc = LM_OK;
  if (!a || !superb) {
    rc = lm_error_set(err, LM_ESYS, "fit: out of memory");
    goto error;
  }
  for (int a_ = 0; a_ < k; a_++) {
    double *col = a + (size_t)a_ * m, norm = 0;
    for (int i = 0; i < m; i++) {
      col[i] = sqrt(weight[i]) * c->A[(size_t)i * n + cols[a_]];
      norm = hypot(norm, col[i]);
    }
    for (int i = 0; i < m && norm > 0; i++)
      col[i] /= norm;
  }
  int blas = lm_blas_begin();
  lapack_int info = LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, k, a, m, sv,
                                   NULL, 1, NULL, 1, superb);
  lm_blas_end(blas);
  if (info != 0) {
    rc = lm_error_set(err, info < 0 ? LM_ESYS : LM_EFAIL,
                      "fit: dgesvd of the design failed (info %d)", (int)info);
    goto error;
  }
  double tol = (double)(m > k ? m : k) * DBL_EPSILON * sv[0];
  for (int i = 0; i < mn; i++)
    if (sv[i] > tol)
      (*rank)++;
  *cond = (m < k || !(sv[mn - 1] > 0)) ? INFINITY : sv[0] / sv[mn - 1];
error:
  free(a);
  free(superb);
  return rc;
}

/* unit[i] = the LOO/bootstrap unit of row i: the row itself, or the rank
 * of its group id among the distinct ids.  Returns the number of units. */
typedef struct lm_fit_gpair {
  int g, i;
} lm_fit_gpair;

static int lm_fit_cmp_gpair(const void *a, const void *b) {
  const lm_fit_gpair *x = a, *y = b;
  if (x->g != y->g)
    return (x->g > y->g) - (x->g < y->g);
  return (x->i > y->i) - (x->i < y->i);
}

static int lm_fit_units(int m, const int *group, int *unit,
                        lm_fit_gpair *scratch) {
  if (!group) {
    for (int i = 0; i < m; i++)
      unit[i] = i;
    return m;
  }
  for (int i = 0; i < m; i++)
    scratch[i] = (lm_fit_gpair){group[i], i};
  qsort(scratch, (size_t)m, sizeof *scratch, lm_fit_cmp_gpair);
  int u = -1;
  for (int a = 0; a < m; a++) {
    if (a == 0 || scratch[a].g != scratch[a - 1].g)
      u++;
    unit[scratch[a].i] = u;
  }
  return u + 1;
}

/* splitmix64 (Steele, Lea and Flood 2014): a full-period 64-bit sequence,
 * plenty for drawing resamples, and the same on every platform. */
static uint64_t lm_fit_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Uniform in [0, n) by multiply-shift on the top 32 bits (Lemire); n <
 * 2^31 keeps the product in 64 bits, and the bias of at most n / 2^32 is
 * far below anything a bootstrap could see. */
static int lm_fit_rand_below(uint64_t *state, int n) {
  return (int)(((lm_fit_rand(state) >> 32) * (uint64_t)n) >> 32);
}

/* ---- lm_fit -----------------------------------------------------------------
 */

static lm_status lm_fit_check(const lm_fit_opts *o, int m, int n,
                              const double *A, const double *b, const double *w,
                              lm_error *err) {
  lm_status rc = lm_fit_opts_check(o, n, err);
  if (!rc)
    rc = lm_nnls_check("fit", m, n, A, b, w, err);
  if (rc)
    return rc;
  int any = 0;
  for (int i = 0; i < m; i++) {
    if (!(b[i] > 0))
      return lm_error_set(err, LM_EINPUT,
                          "fit: b[%d] = %g: times must be > 0 (residuals are "
                          "relative)",
                          i, b[i]);
    any |= !w || w[i] > 0;
  }
  if (!any)
    return lm_error_set(err, LM_EINPUT, "fit: every weight is 0");
  return LM_OK;
}

/* Residuals, RMS and max over the rows with w > 0. */
static void lm_fit_residuals(const lm_fit_ctx *c, lm_fit_result *out) {
  double ss = 0;
  int cnt = 0;
  for (int i = 0; i < c->m; i++) {
    out->resid[i] = (lm_fit_predict_row(c, i, out->theta) - c->b[i]) / c->b[i];
    if (c->w[i] > 0) {
      ss += out->resid[i] * out->resid[i];
      out->maxabs = fmax(out->maxabs, fabs(out->resid[i]));
      cnt++;
    }
  }
  out->rms = sqrt(ss / cnt);
}

static lm_status lm_fit_loo(lm_fit_ctx *c, const int *unit, int nunits,
                            lm_fit_result *out, lm_error *err) {
  int m = c->m;
  double *x = malloc((size_t)c->n * sizeof *x);
  if (!x)
    return lm_error_set(err, LM_ESYS, "fit: out of memory");
  lm_status rc = LM_OK;
  for (int u = 0; u < nunits; u++) {
    for (int i = 0; i < m; i++)
      c->freq[i] = unit[i] != u;
    int iters, conv;
    double scale;
    lm_error e = {0};
    rc = lm_fit_robust(c, out->theta, x, &iters, &conv, &scale, NULL, &e);
    if (rc) {
      int i0 = 0;
      while (unit[i0] != u)
        i0++;
      if (c->o->group)
        lm_error_set(err, rc, "fit: leave-one-out refit without group %d: %s",
                     c->o->group[i0], e.msg);
      else
        lm_error_set(err, rc, "fit: leave-one-out refit without row %d: %s", i0,
                     e.msg);
      break;
    }
    for (int i = 0; i < m; i++)
      if (unit[i] == u)
        out->loo[i] = (lm_fit_predict_row(c, i, x) - c->b[i]) / c->b[i];
  }
  free(x);
  if (rc)
    return rc;
  double ss = 0;
  int cnt = 0;
  out->loo_worst = -1;
  for (int i = 0; i < m; i++) {
    if (!(c->w[i] > 0))
      continue;
    ss += out->loo[i] * out->loo[i];
    cnt++;
    if (out->loo_worst < 0 || fabs(out->loo[i]) > out->loo_max) {
      out->loo_max = fabs(out->loo[i]);
      out->loo_worst = i;
    }
  }
  out->loo_rms = sqrt(ss / cnt);
  out->loo_units = nunits;
  return LM_OK;
}

static lm_status lm_fit_bootstrap(lm_fit_ctx *c, const int *unit, int nunits,
                                  lm_fit_result *out, lm_error *err) {
  int m = c->m, n = c->n, B = c->o->bootstrap;
  int *count = calloc((size_t)nunits, sizeof *count);
  int *pool = malloc((size_t)nunits * sizeof *pool);
  unsigned char *isfixed = calloc((size_t)nunits, 1);
  double *col = malloc((size_t)B * sizeof *col);
  lm_status rc = LM_OK;
  if (!count || !pool || !isfixed || !col) {
    rc = lm_error_set(err, LM_ESYS, "fit: out of memory");
    goto error;
  }
  /* fixed units (a fixed row in them) count once in every resample; the
   * others are drawn, as many as there are, from among themselves */
  for (int i = 0; c->o->fixed && i < m; i++)
    isfixed[unit[i]] |= c->o->fixed[i] != 0;
  int npool = 0;
  for (int u = 0; u < nunits; u++)
    if (!isfixed[u])
      pool[npool++] = u;
  uint64_t state = c->o->seed;
  for (int r = 0; r < B; r++) {
    for (int u = 0; u < nunits; u++)
      count[u] = isfixed[u];
    for (int a = 0; a < npool; a++)
      count[pool[lm_fit_rand_below(&state, npool)]]++;
    for (int i = 0; i < m; i++)
      c->freq[i] = count[unit[i]];
    int iters, conv;
    double scale;
    lm_error e = {0};
    rc = lm_fit_robust(c, out->theta, out->boot + (size_t)r * n, &iters, &conv,
                       &scale, NULL, &e);
    if (rc) {
      lm_error_set(err, rc, "fit: bootstrap resample %d: %s", r, e.msg);
      goto error;
    }
  }
  for (int k = 0; k < n; k++) {
    for (int r = 0; r < B; r++)
      col[r] = out->boot[(size_t)r * n + k];
    /* type-7 quantiles, as the timing harness computes its own */
    lm_timing_sort(col, B);
    out->p5[k] = lm_timing_quantile_sorted(col, B, 0.05);
    out->p50[k] = lm_timing_quantile_sorted(col, B, 0.50);
    out->p95[k] = lm_timing_quantile_sorted(col, B, 0.95);
  }
  out->nboot = B;
error:
  free(count);
  free(pool);
  free(isfixed);
  free(col);
  return rc;
}

static void lm_fit_plausibility(const lm_fit_opts *o, lm_fit_result *out) {
  for (int k = 0; k < out->n; k++) {
    double t = out->theta[k];
    out->flag[k] = LM_FIT_PLAUSIBLE;
    if (o->lo && !isnan(o->lo[k]) && t < o->lo[k])
      out->flag[k] = LM_FIT_BELOW;
    else if (o->hi && !isnan(o->hi[k]) && t > o->hi[k])
      out->flag[k] = LM_FIT_ABOVE;
    out->nflagged += out->flag[k] != LM_FIT_PLAUSIBLE;
  }
}

lm_status lm_fit(const lm_fit_opts *o, int m, int n, const double *A,
                 const double *b, const double *w, lm_fit_result *out,
                 lm_error *err) {
  lm_fit_opts defaults;
  if (!o) {
    lm_fit_defaults(&defaults);
    o = &defaults;
  }
  if (!out)
    return lm_error_set(err, LM_EINPUT, "fit: result is NULL");
  memset(out, 0, sizeof *out);
  lm_status rc = lm_fit_check(o, m, n, A, b, w, err);
  if (rc)
    return rc;

  lm_fit_ctx c = {.o = o, .m = m, .n = n, .A = A, .b = b};
  double *ones = NULL;
  int *unit = NULL, *cols = NULL;
  lm_fit_gpair *gscratch = NULL;
  int mn = m < n ? m : n, B = o->bootstrap;
  if (!w) {
    ones = malloc((size_t)m * sizeof *ones);
    for (int i = 0; ones && i < m; i++)
      ones[i] = 1.0;
    w = ones;
  }
  c.w = w;
  c.ws = lm_nnls_ws_new(m, n);
  c.freq = malloc((size_t)m * sizeof *c.freq);
  c.ew = malloc((size_t)m * sizeof *c.ew);
  c.h = malloc((size_t)m * sizeof *c.h);
  c.d = malloc((size_t)n * sizeof *c.d);
  c.xn = malloc((size_t)n * sizeof *c.xn);
  c.pair = malloc((size_t)m * sizeof *c.pair);
  unit = malloc((size_t)m * sizeof *unit);
  cols = calloc((size_t)n, sizeof *cols);
  gscratch = malloc((size_t)m * sizeof *gscratch);
  out->m = m;
  out->n = n;
  out->theta = calloc((size_t)n, sizeof *out->theta);
  out->huber = calloc((size_t)m, sizeof *out->huber);
  out->weight = calloc((size_t)m, sizeof *out->weight);
  out->resid = calloc((size_t)m, sizeof *out->resid);
  out->sv = calloc((size_t)mn, sizeof *out->sv);
  out->flag = calloc((size_t)n, sizeof *out->flag);
  if (o->loo)
    out->loo = calloc((size_t)m, sizeof *out->loo);
  if (B > 0) {
    out->boot = calloc((size_t)B * (size_t)n, sizeof *out->boot);
    out->p5 = calloc((size_t)n, sizeof *out->p5);
    out->p50 = calloc((size_t)n, sizeof *out->p50);
    out->p95 = calloc((size_t)n, sizeof *out->p95);
  }
  if (!w || !c.ws || !c.freq || !c.ew || !c.h || !c.d || !c.xn || !c.pair ||
      !unit || !cols || !gscratch || !out->theta || !out->huber ||
      !out->weight || !out->resid || !out->sv || !out->flag ||
      (o->loo && !out->loo) ||
      (B > 0 && (!out->boot || !out->p5 || !out->p50 || !out->p95))) {
    rc = lm_error_set(err, LM_ESYS, "fit: out of memory");
    goto error;
  }

  for (int i = 0; i < m; i++)
    c.freq[i] = 1;
  rc = lm_fit_robust(&c, NULL, out->theta, &out->huber_iters,
                     &out->huber_converged, &out->scale, &out->nnls, err);
  if (rc)
    goto error;
  for (int i = 0; i < m; i++) {
    out->huber[i] = c.h[i];
    out->weight[i] = w[i] * c.h[i];
  }
  lm_fit_residuals(&c, out);

  for (int k = 0; k < n; k++)
    cols[k] = k;
  rc = lm_fit_design_svd(&c, out->weight, cols, n, out->sv, &out->cond,
                         &out->rank, err);
  if (rc)
    goto error;
  int nfree = 0;
  for (int k = 0; k < n; k++)
    if (out->theta[k] > 0)
      cols[nfree++] = k;
  double *sv_free = malloc((size_t)(nfree > 0 ? nfree : 1) * sizeof *sv_free);
  if (!sv_free) {
    rc = lm_error_set(err, LM_ESYS, "fit: out of memory");
    goto error;
  }
  rc = lm_fit_design_svd(&c, out->weight, cols, nfree, sv_free, &out->cond_free,
                         &out->rank_free, err);
  free(sv_free);
  if (rc)
    goto error;

  int nunits = lm_fit_units(m, o->group, unit, gscratch);
  if (o->loo && (rc = lm_fit_loo(&c, unit, nunits, out, err)))
    goto error;
  if (B > 0 && (rc = lm_fit_bootstrap(&c, unit, nunits, out, err)))
    goto error;
  lm_fit_plausibility(o, out);

error:
  lm_nnls_ws_free(c.ws);
  free(ones);
  free(c.freq);
  free(c.ew);
  free(c.h);
  free(c.d);
  free(c.xn);
  free(c.pair);
  free(unit);
  free(cols);
  free(gscratch);
  if (rc)
    lm_fit_result_free(out);
  return rc;
}
