/* Dominance pruning: a variant no cheaper than another in every bucket
 * and scenario, allowed nowhere the other is not, and no cheaper to
 * compile can be replaced by it in any plan, so it is dropped before any
 * method runs. */
#include "solver/solve_impl.h"

/* u replaces v in any plan: allowed wherever v is, no costlier anywhere in
 * any scenario, no costlier to compile.  Equal variants: the lower index
 * stays. */
static int dominates(const lm_solve_problem *p, int k, int u, int v) {
  const lm_solve_kernel *K = &p->kernel[k];
  double cu = K->compile_cost ? K->compile_cost[u] : 0;
  double cv = K->compile_cost ? K->compile_cost[v] : 0;
  if (cu > cv)
    return 0;
  int strict = cu < cv;
  for (int j = 0; j < lm_solve_nscen(p); j++)
    for (int s = 0; s < K->nbuckets; s++) {
      double a = lm_solve_cost(K, j, s, u), b = lm_solve_cost(K, j, s, v);
      if (a > b)
        return 0;
      strict |= a < b;
    }
  return strict || u < v;
}

int lm_solve_prune(const lm_solve_problem *p, const lm_solve_opts *o,
                   const int *vs, unsigned char *active) {
  int n = 0;
  for (int k = 0; k < p->nkernels; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    for (int v = 0; v < K->nvariants; v++) {
      int any = 0;
      for (int s = 0; s < K->nbuckets && !any; s++)
        any = lm_solve_allowed(p, k, s, v);
      active[vs[k] + v] = (unsigned char)any;
    }
    /* Replacing a variant can break a run, so thresholded dispatch only
     * drops variants allowed nowhere. */
    if (o->prune && !o->threshold)
      for (int v = 0; v < K->nvariants; v++)
        for (int u = 0; u < K->nvariants && active[vs[k] + v]; u++)
          if (u != v && active[vs[k] + u] && dominates(p, k, u, v))
            active[vs[k] + v] = 0;
    for (int v = 0; v < K->nvariants; v++)
      n += !active[vs[k] + v];
  }
  return n;
}
