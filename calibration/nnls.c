/* Weighted non-negative least squares by Lawson and Hanson's active-set
 * method (Solving Least Squares Problems, 1974, ch. 23).
 *
 * The coefficients split into a free set P, solved for without constraint,
 * and a zero set Z, held at 0.  The gradient g = A^T W (b - A x) says which
 * held coefficient would lower the objective if it could grow: the outer
 * loop frees the one with the largest g, solves the least-squares problem
 * on P, and if some free coefficient came out negative, the inner loop
 * walks from the current feasible x toward that solution only as far as
 * feasibility allows, holds at 0 the coefficients that hit it, and solves
 * again.  It stops when no held coefficient has g > 0: x >= 0, g_P = 0 and
 * g_Z <= 0 are the KKT conditions, and the problem is convex, so x is the
 * optimum.
 *
 * Rows are scaled by sqrt(w) and columns by their norms first.  Column
 * scaling leaves the solution unchanged (x_k >= 0 iff d_k x_k >= 0) but
 * puts every g_k on the scale of the residual, so one tolerance serves all
 * columns whatever their units, and it evens out the conditioning of the
 * inner solves.  Those use LAPACK's dgelsd (SVD, minimum norm, singular
 * values below max(m,n)·eps of the largest cut off), so a dependent or zero
 * column never breaks a solve.  In exact arithmetic a freed coefficient
 * always comes out positive; when round-off says otherwise the column is
 * numerically dependent on P, and it is refused until P changes, as in
 * Lawson and Hanson's own code. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calibration/nnls_internal.h"

/* A held coefficient is freed only if its g exceeds the round-off of a
 * residual of size ||sqrt(w) b|| summed over max(m,n) terms, times 10. */
#define LM_NNLS_DUAL_TOL 10.0

struct lm_nnls_ws {
  int m, n;
  int blas_prev; /* OpenBLAS's thread count before (lm_blas_begin) */
  double *as;    /* [m*n] sqrt(w) A, column-major, unit-norm columns */
  double *bw;    /* [m] sqrt(w) b */
  double *d;     /* [n] column norms of sqrt(w) A (1 for a zero column) */
  double *sub;   /* [m*n] the free columns, copied for dgelsd */
  double *rhs;   /* [max(m,n)] dgelsd's right-hand side, then solution */
  double *sv;    /* [min(m,n)] dgelsd's singular values */
  double *y;     /* [n] the iterate, in scaled units d_k x_k */
  double *s;     /* [n] the least-squares solution on P, scaled */
  double *g;     /* [n] gradient as^T (bw - as y) */
  double *r;     /* [m] residual bw - as y */
  int *fset;     /* [n] the indices in P */
  char *isfree;  /* [n] */
  char *refused; /* [n] refused as dependent since P last grew */
};

void lm_nnls_ws_free(lm_nnls_ws *ws) {
  if (!ws)
    return;
  lm_blas_end(ws->blas_prev);
  free(ws->as);
  free(ws->bw);
  free(ws->d);
  free(ws->sub);
  free(ws->rhs);
  free(ws->sv);
  free(ws->y);
  free(ws->s);
  free(ws->g);
  free(ws->r);
  free(ws->fset);
  free(ws->isfree);
  free(ws->refused);
  free(ws);
}

/* The fits are small (tens of terms, a few hundred rows): OpenBLAS's
 * threads would not pay, and its threads wait for each other by spinning
 * on sched_yield, which on a machine whose cores another process keeps busy
 * turned an 18 s quick calibration into 2 minutes.  So a fit runs OpenBLAS
 * on one thread and gives the program back its thread count afterwards (a
 * Python host's numpy shares the same OpenBLAS). */
int lm_blas_begin(void) {
  int prev = openblas_get_num_threads();
  openblas_set_num_threads(1);
  return prev;
}

void lm_blas_end(int prev) {
  if (prev > 1)
    openblas_set_num_threads(prev);
}

lm_nnls_ws *lm_nnls_ws_new(int m, int n) {
  lm_nnls_ws *ws = calloc(1, sizeof *ws);
  if (!ws)
    return NULL;
  ws->blas_prev = lm_blas_begin();
  size_t mn = (size_t)m * (size_t)n, big = (size_t)(m > n ? m : n);
  size_t small = (size_t)(m < n ? m : n);
  ws->m = m;
  ws->n = n;
  /* Zeroed, so that nothing is ever read uninitialized. */
  ws->as = calloc(mn, sizeof(double));
  ws->bw = calloc((size_t)m, sizeof(double));
  ws->d = calloc((size_t)n, sizeof(double));
  ws->sub = calloc(mn, sizeof(double));
  ws->rhs = calloc(big, sizeof(double));
  ws->sv = calloc(small, sizeof(double));
  ws->y = calloc((size_t)n, sizeof(double));
  ws->s = calloc((size_t)n, sizeof(double));
  ws->g = calloc((size_t)n, sizeof(double));
  ws->r = calloc((size_t)m, sizeof(double));
  ws->fset = calloc((size_t)n, sizeof(int));
  ws->isfree = calloc((size_t)n, 1);
  ws->refused = calloc((size_t)n, 1);
  if (!ws->as || !ws->bw || !ws->d || !ws->sub || !ws->rhs || !ws->sv ||
      !ws->y || !ws->s || !ws->g || !ws->r || !ws->fset || !ws->isfree ||
      !ws->refused) {
    lm_nnls_ws_free(ws);
    return NULL;
  }
  return ws;
}

lm_status lm_nnls_check(const char *who, int m, int n, const double *A,
                        const double *b, const double *w, lm_error *err) {
  if (m < 1)
    return lm_error_set(err, LM_EINPUT, "%s: m = %d rows: need at least 1", who,
                        m);
  if (n < 1)
    return lm_error_set(err, LM_EINPUT,
                        "%s: n = %d coefficients: need at least 1", who, n);
  if ((size_t)m > SIZE_MAX / sizeof(double) / (size_t)n)
    return lm_error_set(err, LM_EINPUT, "%s: %d x %d is too large", who, m, n);
  if (!A || !b)
    return lm_error_set(err, LM_EINPUT, "%s: %s is NULL", who, !A ? "A" : "b");
  for (int i = 0; i < m; i++) {
    for (int k = 0; k < n; k++)
      if (!isfinite(A[(size_t)i * n + k]))
        return lm_error_set(err, LM_EINPUT,
                            "%s: A[%d,%d] = %g: counts must be finite", who, i,
                            k, A[(size_t)i * n + k]);
    if (!isfinite(b[i]))
      return lm_error_set(err, LM_EINPUT,
                          "%s: b[%d] = %g: times must be finite", who, i, b[i]);
    if (w && !(w[i] >= 0 && isfinite(w[i])))
      return lm_error_set(err, LM_EINPUT,
                          "%s: w[%d] = %g: weights must be finite and >= 0",
                          who, i, w[i]);
  }
  return LM_OK;
}

/* Scale rows by sqrt(w) and columns to unit norm, into ws. */
static lm_status lm_nnls_load(lm_nnls_ws *ws, const double *A, const double *b,
                              const double *w, lm_error *err) {
  int m = ws->m, n = ws->n;
  for (int i = 0; i < m; i++)
    ws->bw[i] = (w ? sqrt(w[i]) : 1.0) * b[i];
  for (int k = 0; k < n; k++) {
    double *col = ws->as + (size_t)k * m;
    for (int i = 0; i < m; i++)
      col[i] = (w ? sqrt(w[i]) : 1.0) * A[(size_t)i * n + k];
    double dk = cblas_dnrm2(m, col, 1);
    if (!isfinite(dk))
      return lm_error_set(err, LM_EINPUT,
                          "nnls: column %d of sqrt(w) A overflows", k);
    if (dk > 0)
      cblas_dscal(m, 1.0 / dk, col, 1);
    else
      dk = 1.0;
    ws->d[k] = dk;
  }
  if (!isfinite(cblas_dnrm2(m, ws->bw, 1)))
    return lm_error_set(err, LM_EINPUT, "nnls: sqrt(w) b overflows");
  return LM_OK;
}

/* r = bw - as y and g = as^T r. */
static void lm_nnls_gradient(lm_nnls_ws *ws) {
  int m = ws->m, n = ws->n;
  memcpy(ws->r, ws->bw, (size_t)m * sizeof(double));
  cblas_dgemv(CblasColMajor, CblasNoTrans, m, n, -1.0, ws->as, m, ws->y, 1, 1.0,
              ws->r, 1);
  cblas_dgemv(CblasColMajor, CblasTrans, m, n, 1.0, ws->as, m, ws->r, 1, 0.0,
              ws->g, 1);
}

/* s = the minimum-norm least-squares solution on the nf free columns
 * (0 elsewhere); *rank is their numerical rank. */
static lm_status lm_nnls_ls(lm_nnls_ws *ws, int nf, int *rank, lm_error *err) {
  int m = ws->m, n = ws->n;
  memset(ws->s, 0, (size_t)n * sizeof(double));
  *rank = 0;
  if (nf == 0)
    return LM_OK;
  for (int a = 0; a < nf; a++)
    memcpy(ws->sub + (size_t)a * m, ws->as + (size_t)ws->fset[a] * m,
           (size_t)m * sizeof(double));
  int ldb = m > nf ? m : nf;
  memcpy(ws->rhs, ws->bw, (size_t)m * sizeof(double));
  for (int i = m; i < ldb; i++)
    ws->rhs[i] = 0;
  double rcond = (double)(m > n ? m : n) * DBL_EPSILON;
  lapack_int rk = 0;
  lapack_int info = LAPACKE_dgelsd(LAPACK_COL_MAJOR, m, nf, 1, ws->sub, m,
                                   ws->rhs, ldb, ws->sv, rcond, &rk);
  if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR)
    return lm_error_set(err, LM_ESYS, "nnls: out of memory in dgelsd");
  if (info != 0)
    return lm_error_set(err, LM_EFAIL, "nnls: dgelsd failed (info %d)",
                        (int)info);
  for (int a = 0; a < nf; a++)
    ws->s[ws->fset[a]] = ws->rhs[a];
  *rank = (int)rk;
  return LM_OK;
}

/* The inner loop: from a feasible y (positive on P, except a just-freed
 * coefficient at 0 whose s is positive) and s solved on P, step toward s
 * until s itself is feasible; then y = s.  Each step holds at least one
 * more coefficient at 0, so it ends. */
static lm_status lm_nnls_inner(lm_nnls_ws *ws, int *nf, int *rank,
                               lm_fit_info *st, lm_error *err) {
  for (;;) {
    double alpha = 1.0;
    int q = -1;
    for (int a = 0; a < *nf; a++) {
      int j = ws->fset[a];
      if (ws->s[j] > 0)
        continue;
      double den = ws->y[j] - ws->s[j];
      double al = den > 0 ? ws->y[j] / den : 0.0;
      if (q < 0 || al < alpha) {
        alpha = al;
        q = j;
      }
    }
    if (q < 0)
      break;
    int keep = 0;
    for (int a = 0; a < *nf; a++) {
      int j = ws->fset[a];
      ws->y[j] += alpha * (ws->s[j] - ws->y[j]);
      if (j == q || ws->y[j] <= 0) {
        ws->y[j] = 0;
        ws->isfree[j] = 0;
      } else {
        ws->fset[keep++] = j;
      }
    }
    *nf = keep;
    lm_status rc = lm_nnls_ls(ws, *nf, rank, err);
    st->solves++;
    if (rc)
      return rc;
  }
  for (int a = 0; a < *nf; a++)
    ws->y[ws->fset[a]] = ws->s[ws->fset[a]];
  return LM_OK;
}

lm_status lm_nnls_solve(lm_nnls_ws *ws, const double *A, const double *b,
                        const double *w, const double *warm, int max_iter,
                        double *x, lm_fit_info *info, lm_error *err) {
  int m = ws->m, n = ws->n;
  lm_fit_info st = {0};
  lm_status rc = lm_nnls_load(ws, A, b, w, err);
  if (rc)
    return rc;
  if (max_iter <= 0)
    max_iter = LM_NNLS_ITER_PER_COL * n;
  double bnorm = cblas_dnrm2(m, ws->bw, 1);
  double tol = LM_NNLS_DUAL_TOL * (double)(m > n ? m : n) * DBL_EPSILON * bnorm;

  int nf = 0, rank = 0;
  memset(ws->isfree, 0, (size_t)n);
  memset(ws->refused, 0, (size_t)n);
  for (int j = 0; j < n; j++) {
    ws->y[j] = 0;
    if (warm && warm[j] > 0 && isfinite(warm[j])) {
      ws->y[j] = warm[j] * ws->d[j];
      ws->isfree[j] = 1;
      ws->fset[nf++] = j;
    }
  }
  if (nf > 0) {
    rc = lm_nnls_ls(ws, nf, &rank, err);
    st.solves++;
    if (!rc)
      rc = lm_nnls_inner(ws, &nf, &rank, &st, err);
    if (rc)
      goto done;
  }

  for (;;) {
    lm_nnls_gradient(ws);
    int t = -1;
    double gmax = tol;
    for (int j = 0; j < n; j++)
      if (!ws->isfree[j] && !ws->refused[j] && ws->g[j] > gmax) {
        gmax = ws->g[j];
        t = j;
      }
    if (t < 0)
      break;
    if (st.iterations >= max_iter) {
      rc = lm_error_set(err, LM_EFAIL,
                        "nnls: no optimum after %d outer steps (the cap); "
                        "largest gradient %g of tolerance %g",
                        st.iterations, gmax, tol);
      goto done;
    }
    st.iterations++;
    ws->isfree[t] = 1;
    ws->fset[nf++] = t;
    int trial_rank = 0;
    rc = lm_nnls_ls(ws, nf, &trial_rank, err);
    st.solves++;
    if (rc)
      goto done;
    if (!(ws->s[t] > 0)) {
      /* Dependent on P up to round-off: the solve cannot use it. */
      ws->isfree[t] = 0;
      nf--;
      ws->refused[t] = 1;
      st.rejected++;
      st.iterations--;
      continue;
    }
    memset(ws->refused, 0, (size_t)n);
    rank = trial_rank;
    rc = lm_nnls_inner(ws, &nf, &rank, &st, err);
    if (rc)
      goto done;
  }

done:
  lm_nnls_gradient(ws);
  st.nfree = 0;
  st.dual = 0;
  int any_held = 0;
  for (int j = 0; j < n; j++) {
    x[j] = ws->y[j] > 0 ? ws->y[j] / ws->d[j] : 0.0;
    if (ws->y[j] > 0)
      st.nfree++;
    if (!ws->isfree[j]) {
      double gj = bnorm > 0 ? ws->g[j] / bnorm : 0.0;
      if (!any_held || gj > st.dual)
        st.dual = gj;
      any_held = 1;
    }
  }
  st.rank = nf > 0 ? rank : 0;
  st.rnorm = cblas_dnrm2(m, ws->r, 1);
  if (info)
    *info = st;
  return rc;
}

lm_status lm_nnls(int m, int n, const double *A, const double *b,
                  const double *w, double *x, lm_fit_info *info,
                  lm_error *err) {
  if (info)
    memset(info, 0, sizeof *info);
  lm_status rc = lm_nnls_check("nnls", m, n, A, b, w, err);
  if (rc)
    return rc;
  if (!x)
    return lm_error_set(err, LM_EINPUT, "nnls: x is NULL");
  lm_nnls_ws *ws = lm_nnls_ws_new(m, n);
  if (!ws)
    return lm_error_set(err, LM_ESYS, "nnls: out of memory");
  rc = lm_nnls_solve(ws, A, b, w, NULL, 0, x, info, err);
  lm_nnls_ws_free(ws);
  return rc;
}
