/* Private to solver/: what the methods (solve.c, exact.c, mip.c, greedy.c,
 * brute.c) share. */
#ifndef LANEMAP_SOLVER_SOLVE_IMPL_H
#define LANEMAP_SOLVER_SOLVE_IMPL_H

#include <time.h>

#include "lanemap/solver.h"

/* Seconds on the monotonic clock (time limits and deadlines). */
static inline double lm_solve_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* lm_solve_validate, then lm_solve_result_init: how every method starts. */
lm_status lm_solve_start(const lm_solve_problem *p, const lm_solve_opts *o,
                         lm_solve_result *r, lm_error *err);

/* Number of cost scenarios of p (at least 1). */
int lm_solve_nscen(const lm_solve_problem *p);

/* Cost of kernel k, bucket s, variant v in scenario j. */
static inline double lm_solve_cost(const lm_solve_kernel *K, int j, int s,
                                   int v) {
  return K->cost[((long)j * K->nbuckets + s) * K->nvariants + v];
}

/* v may run s: its cost is finite in every scenario. */
int lm_solve_allowed(const lm_solve_problem *p, int k, int s, int v);

/* The weighted cost matrix the single-objective methods minimise:
 * out[s*nv + v] = w[s] · c (scenario 0, or the scenario mean when robust),
 * INFINITY where v may not run s or is not active.  active is indexed by
 * the kernel's variants (NULL = all). */
void lm_solve_weighted(const lm_solve_problem *p, const lm_solve_opts *o, int k,
                       const unsigned char *active, double *out);

/* Thresholded dispatch of one kernel by dynamic program over buckets in
 * order: at most maxruns runs (0 = no limit), a run is one variant, the
 * weighted costs wc[s*nv + v] are minimised.  The program does not know
 * that two runs must not share a variant, so its value is a lower bound;
 * returns 1 if the plan in choice[] has one run per variant (it is then
 * optimal among threshold plans), 0 if it reuses one, -1 if no plan
 * exists.  *value gets the plan's cost. */
int lm_solve_threshold_dp(int nb, int nv, const double *wc, int maxruns,
                          int *choice, double *value);

/* The best thresholded dispatch of one kernel using only the variants in
 * set[0..n) (n <= 16), each for at most one contiguous run: dynamic
 * program over (variants used so far, variant of the current run).
 * Returns 1 with the plan in choice and its cost in *value, 0 if no such
 * plan exists, -1 out of memory. */
int lm_solve_threshold_set(int nb, int nv, const double *wc, const int *set,
                           int n, int *choice, double *value);

/* Dominance pruning (prune.c): active[vs[k] + v] says whether variant v of
 * kernel k stays; returns how many were dropped. */
int lm_solve_prune(const lm_solve_problem *p, const lm_solve_opts *o,
                   const int *vs, unsigned char *active);

/* ---- the MIP (mip.c) ---- */

enum { OBJ_PLAN, OBJ_COMPILE, OBJ_COUNT };

typedef struct Mip {
  const lm_solve_problem *p;
  const lm_solve_opts *o;
  const unsigned char *active; /* by global variant index */
  const int *bs, *vs;          /* result's bucket and variant starts */
  const long *xo;              /* offset of kernel k's s*nv+v cells */
  int k0, k1;                  /* kernels [k0, k1) */
  int obj;                     /* OBJ_* */
  int caps, budget;            /* include the cap rows, the budget row */
  const int *warm;             /* plan to offer (global choices) or NULL */
  double deadline;             /* lm_solve_now() at which to stop */
} Mip;

typedef struct MipOut {
  int ok;       /* an incumbent exists */
  int optimal;  /* proven */
  int tmlim;    /* stopped by the time limit */
  double value; /* GLPK's objective of the incumbent */
  double bound;
  long nodes;
} MipOut;

/* Solve the MIP m describes; on success write its plan into r (kernels
 * [k0, k1) only). */
lm_status lm_solve_mip(const Mip *m, lm_solve_result *r, MipOut *out,
                       lm_error *err);

/* Every bucket has an allowed variant; each cap admits a cover; the budget
 * admits the cheapest compile set (feasible.c).  LM_EINPUT names the first
 * that fails. */
lm_status lm_solve_feasible(const Mip *base, lm_solve_result *r, lm_error *err);

/* ---- exact methods (exact.c) ---- */

/* 1: kernel k's plan is in choice (optimal); 0: left to the MIP.  active
 * is indexed by the kernel's variants (NULL = all). */
int lm_solve_kernel_exact(const lm_solve_problem *p, const lm_solve_opts *o,
                          int k, const unsigned char *active, int *choice);
/* The global budget as a multiple-choice knapsack over each kernel's
 * Pareto front: 1, r->choice holds the optimum; 0, not applicable; -1, no
 * memory. */
int lm_solve_knapsack(const lm_solve_problem *p, const lm_solve_opts *o,
                      const unsigned char *active, lm_solve_result *r);

#endif
