/* Private to solver/: helpers shared by ilp.c, greedy.c and brute.c. */
#ifndef LANEMAP_SOLVER_SOLVE_IMPL_H
#define LANEMAP_SOLVER_SOLVE_IMPL_H

#include "lanemap/solver.h"

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

#endif
