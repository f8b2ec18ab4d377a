/* lanemap fit: the calibration fitter (DESIGN.md §9-§10).
 *
 * The cost model predicts a time as t = Σ_k θ_k n_k: a non-negative cost
 * θ_k (ns per counted event) for each feature count n_k.  Calibration runs
 * micro-benchmarks; each gives a row: its feature counts A[i,:], its
 * measured time b[i], and a weight w[i], typically 1/(spread_i b_i)^2 so
 * that a row counts by how precisely it was measured, relative to its size.
 *
 * lm_nnls solves the weighted non-negative least-squares problem
 *
 *   min_θ Σ_i w_i (A_i θ - b_i)^2   subject to θ >= 0
 *
 * by Lawson and Hanson's active-set method.  lm_fit adds Huber reweighting,
 * so that a few broken measurements cannot pull the coefficients, and the
 * diagnostics a profile records: condition number and numerical rank of the
 * design, residuals, leave-one-out (or leave-one-benchmark-out) errors,
 * bootstrap spreads of every coefficient, and a plausibility check against
 * caller-given ranges.  docs/fit.md explains how to read them.
 *
 * Matrices are dense and row-major: A[i*n + k] is count k of row i.  Every
 * array is borrowed; results own theirs. */
#ifndef LANEMAP_FIT_H
#define LANEMAP_FIT_H

#include <stdint.h>

#include "lanemap/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one NNLS solve did and proved. */
typedef struct lm_fit_info {
  int iterations; /* coefficients freed (Lawson-Hanson outer steps) */
  int rejected;   /* candidates refused as numerically dependent */
  int solves;     /* unconstrained least-squares solves (LAPACK dgelsd) */
  int nfree;      /* coefficients > 0 at the solution */
  int rank;       /* numerical rank of those free columns */
  double rnorm;   /* weighted residual norm sqrt(Σ w_i (A_i x - b_i)^2) */
  /* Largest g_k = a_k^T W (b - A x) over the coefficients held at 0 (the
   * descent the objective would gain by freeing k), with columns scaled to
   * unit norm and relative to ||sqrt(w) b||: <= 0 up to round-off at an
   * optimum (the KKT condition); 0 if every coefficient is free. */
  double dual;
} lm_fit_info;

/* Weighted NNLS: x = argmin Σ_i w_i (A_i x - b_i)^2 over x >= 0, for a
 * row-major m×n A, w NULL meaning all weights 1.  A, b, w must be finite
 * and w >= 0 (LM_EINPUT otherwise); zero columns, duplicate columns and
 * m < n are fine (the coefficient of a zero column is 0).  LM_EFAIL if
 * Lawson-Hanson's iteration cap (3n outer steps) is hit; x then holds the
 * last feasible iterate.  info may be NULL. */
lm_status lm_nnls(int m, int n, lm_keep const double *A,
                  lm_keep const double *b, lm_keep const double *w, double *x,
                  lm_fit_info *info, lm_error *err);

/* Options of lm_fit; lm_fit_defaults fills them. */
typedef struct lm_fit_opts {
  int nnls_max_iter; /* cap on NNLS outer steps per solve; 0 = 3n */
  /* Huber IRLS: residuals r_i = sqrt(w_i)(b_i - A_i θ) are divided by the
   * robust scale s = 1.4826·MAD(r); a row with |r_i| > k·s gets its weight
   * multiplied by k·s/|r_i|.  huber_max_iter = 0 is plain weighted NNLS. */
  double huber_k;     /* k, default 1.345 */
  int huber_max_iter; /* reweighting rounds at most, default 50 */
  /* Rounds stop when no coefficient, scaled by its column's norm, moves
   * by more than huber_tol of the largest one (default 1e-6). */
  double huber_tol;
  int loo;       /* 1: leave-one-out refits (default 1) */
  int bootstrap; /* B resamples, 0 = none (default 200) */
  uint64_t seed; /* bootstrap seed (default 1) */
  /* Optional, borrowed: [m] benchmark id of each row.  When given, LOO
   * leaves out a whole benchmark at a time, and the bootstrap resamples
   * benchmarks (all their rows together) instead of rows. */
  const int *group;
  /* Optional, borrowed: [m] rows that are not a sample of anything, kept
   * exactly once in every bootstrap resample (a stratum of their own):
   * prior rows, or the one benchmark that alone measures a coefficient,
   * whose absence would leave that coefficient to the prior or to 0 and
   * report a spread no measurement showed.  A group with a fixed row is
   * fixed as a whole; the other units are resampled among themselves. */
  const unsigned char *fixed;
  /* Optional, borrowed: [n] plausible range of each coefficient; NULL or a
   * NaN entry means no bound on that side. */
  const double *lo, *hi;
} lm_fit_opts;

/* nnls_max_iter 0, huber_k 1.345, huber_max_iter 50, huber_tol 1e-6,
 * loo 1, bootstrap 200, seed 1, group/fixed/lo/hi NULL. */
void lm_fit_defaults(lm_fit_opts *o);
/* LM_EINPUT with a message naming the bad field, else LM_OK; n is the
 * number of coefficients (to check lo <= hi). */
lm_status lm_fit_opts_check(const lm_fit_opts *o, int n, lm_error *err);

/* Per-coefficient plausibility verdicts. */
enum {
  LM_FIT_PLAUSIBLE = 0,
  LM_FIT_BELOW = -1, /* θ_k < lo[k] */
  LM_FIT_ABOVE = 1,  /* θ_k > hi[k] */
};

typedef struct lm_fit_result {
  int m, n;

  /* The fit. */
  double *theta;       /* [n] coefficients, >= 0 */
  double *huber;       /* [m] final Huber factor in (0, 1]; 1 = full weight */
  double *weight;      /* [m] final weight: w_i · huber_i */
  double scale;        /* robust scale s of the final round */
  int huber_iters;     /* reweighting rounds run */
  int huber_converged; /* 1 if the coefficients settled within the cap */
  lm_fit_info nnls;    /* the final NNLS solve */

  /* Residuals, relative: (A_i θ - b_i) / b_i. */
  double *resid; /* [m] */
  double rms;    /* RMS of resid over rows with w_i > 0 */
  double maxabs; /* max |resid| over those rows */

  /* The design sqrt(weight) A with unit-norm columns (zero columns stay
   * zero), as the final solve saw it. */
  double *sv;       /* [min(m,n)] its singular values, descending */
  double cond;      /* 2-norm condition σ_1/σ_n; inf if σ_n = 0 or m < n */
  int rank;         /* singular values above max(m,n)·eps·σ_1 */
  double cond_free; /* the same over the columns with θ_k > 0 (1 if none) */
  int rank_free;

  /* Leave-one-out (one row, or one benchmark when opts.group is given). */
  int loo_units;  /* units left out in turn (0 if opts.loo = 0) */
  double *loo;    /* [m] relative error of predicting row i without its unit */
  double loo_rms; /* RMS of loo over rows with w_i > 0 */
  double loo_max; /* max |loo| over those rows */
  int loo_worst;  /* row of loo_max (-1 if none) */

  /* Bootstrap: B refits on resampled rows (or benchmarks). */
  int nboot;
  double *boot;           /* [nboot*n]: boot[r*n + k] = θ_k of resample r */
  double *p5, *p50, *p95; /* [n] quantiles of boot (linear interpolation) */

  /* Plausibility against opts.lo / opts.hi. */
  int *flag;    /* [n] LM_FIT_PLAUSIBLE, LM_FIT_BELOW or LM_FIT_ABOVE */
  int nflagged; /* coefficients out of range */
} lm_fit_result;

/* Robust fit with diagnostics, options o (NULL = defaults), of the m rows
 * (A, b, w; w NULL = all 1).  Times b must be > 0 (residuals are relative)
 * and some weight > 0.  Fills *out, which the caller frees with
 * lm_fit_result_free (also after an error, when it is left empty).
 * LM_EINPUT for bad data or options, LM_EFAIL if an NNLS solve hits its
 * iteration cap or LAPACK fails, LM_ESYS when out of memory. */
lm_status lm_fit(const lm_fit_opts *o, int m, int n, lm_keep const double *A,
                 lm_keep const double *b, lm_keep const double *w,
                 lm_fit_result *out, lm_error *err);

/* Frees what *r owns and empties it; safe on an empty result. */
void lm_fit_result_free(lm_fit_result *r);

#ifdef __cplusplus
}
#endif
#endif
