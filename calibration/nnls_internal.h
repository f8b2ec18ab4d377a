/* What nnls.c shares with fit_diag.c: a reusable NNLS workspace, so that
 * the hundreds of refits behind leave-one-out and the bootstrap allocate
 * once, and a warm start from a previous solution. */
#ifndef LANEMAP_CALIBRATION_NNLS_INTERNAL_H
#define LANEMAP_CALIBRATION_NNLS_INTERNAL_H

#include "lanemap/fit.h"

/* Lawson and Hanson's ITMAX: at most 3n outer steps per solve. */
#define LM_NNLS_ITER_PER_COL 3

typedef struct lm_nnls_ws lm_nnls_ws;

/* A workspace for m×n problems; NULL when out of memory. */
lm_give lm_nnls_ws *lm_nnls_ws_new(int m, int n);
void lm_nnls_ws_free(lm_take lm_nnls_ws *ws);

/* Weighted NNLS of the workspace's size on checked data (w NULL = 1).
 * warm (NULL = none) is a previous solution: its positive entries start
 * free, which usually leaves one or two solves to do.  max_iter caps the
 * outer steps (<= 0: 3n).  info may be NULL. */
lm_status lm_nnls_solve(lm_nnls_ws *ws, const double *A, const double *b,
                        const double *w, const double *warm, int max_iter,
                        double *x, lm_fit_info *info, lm_error *err);

/* LM_EINPUT unless m, n >= 1, A and b are set and finite and w (if given)
 * is finite and >= 0.  who prefixes the message. */
lm_status lm_nnls_check(const char *who, int m, int n, const double *A,
                        const double *b, const double *w, lm_error *err);

/* OpenBLAS on one thread during a fit (nnls.c says why): lm_blas_begin
 * returns the program's thread count, lm_blas_end restores it.  A
 * workspace (lm_nnls_ws_new .. _free) holds one such scope. */
int lm_blas_begin(void);
void lm_blas_end(int prev);

#endif
