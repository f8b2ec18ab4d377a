/* Feasibility before any plan is sought, so an infeasible instance is
 * reported by the constraint that binds: per kernel a MIP of the fewest
 * variants that cover its buckets (against its cap) and of the cheapest
 * compile set (summed against the global budget). */
#include <math.h>

#include "solver/solve_impl.h"

lm_status lm_solve_feasible(const Mip *base, lm_solve_result *r,
                            lm_error *err) {
  const lm_solve_problem *p = base->p;
  double cheapest = 0;
  for (int k = 0; k < p->nkernels; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    const unsigned char *act = base->active + base->vs[k];
    int full = 0, everywhere = 1;
    double ccfull = INFINITY;
    for (int s = 0; s < K->nbuckets; s++) {
      int any = 0;
      for (int v = 0; v < K->nvariants; v++)
        any |= act[v] && lm_solve_allowed(p, k, s, v);
      if (!any)
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d bucket %d has no allowed "
                            "variant (every cost is INFINITY)",
                            k, s);
    }
    for (int v = 0; v < K->nvariants; v++) {
      if (!act[v])
        continue;
      int all = 1;
      for (int s = 0; s < K->nbuckets && all; s++)
        all = lm_solve_allowed(p, k, s, v);
      if (all) {
        full = 1;
        ccfull = fmin(ccfull, K->compile_cost ? K->compile_cost[v] : 0);
      } else
        everywhere = 0;
    }
    Mip m = *base;
    m.k0 = k;
    m.k1 = k + 1;
    m.warm = NULL;
    m.budget = 0;
    MipOut out;
    lm_status st;
    if (K->cap > 0 && !full) {
      m.obj = OBJ_COUNT;
      m.caps = 0;
      if ((st = lm_solve_mip(&m, r, &out, err)))
        return st;
      r->mip_solves++;
      if (out.ok && out.optimal && out.value > K->cap + 0.5)
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d needs at least %.0f variants "
                            "to cover its buckets but its cap is %d",
                            k, out.value, K->cap);
      if (!out.ok && !out.tmlim)
        return lm_error_set(err, LM_EINPUT, "solver: kernel %d has no %s plan",
                            k, base->o->threshold ? "threshold" : "feasible");
    }
    if (p->budget >= 0) {
      if (everywhere)
        cheapest += ccfull;
      else {
        m.obj = OBJ_COMPILE;
        m.caps = 1;
        if ((st = lm_solve_mip(&m, r, &out, err)))
          return st;
        r->mip_solves++;
        if (!out.ok && !out.tmlim)
          return lm_error_set(err, LM_EINPUT,
                              "solver: kernel %d has no plan within its cap "
                              "%d",
                              k, K->cap);
        cheapest += out.ok ? out.bound : 0;
      }
    }
  }
  if (p->budget >= 0 && cheapest > p->budget * (1 + 1e-9) + 1e-12)
    return lm_error_set(err, LM_EINPUT,
                        "solver: global budget %g ms is below the cheapest "
                        "compile set %g ms",
                        p->budget, cheapest);
  return LM_OK;
}
